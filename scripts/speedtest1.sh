#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/speedtest1.sh - SQLite's own benchmark, speedtest1, on the default
# unix VFS (a host file) and on the urfs VFS (a file inside a SimpleFS image,
# src/sqlite/), in rollback (DELETE) and WAL mode, synchronous=FULL; the same
# --size and test set for all; each --verify hash must be equal; per-test and
# total times (medians over the runs) side by side, with the ratios.
# docs/BENCHMARKS.md and docs/SQLITE.md say what the figures mean.
#
#   sh scripts/speedtest1.sh [--size N] [--runs N] [--testset T]
#
# speedtest1.c comes from Debian's sqlite3 source package (`apt-get source`,
# deb-src lines are added when missing) into $SPEEDTEST_DIR (default
# build-speedtest/, ignored by git); nothing of it is committed. It is built
# against Debian's libsqlite3 with a main() of ours that registers the VFS
# and sets synchronous=FULL on every connection (sqlite3_auto_extension).
# Environment: O (the build directory, default .), SPEEDTEST_DIR.
# Must never: write outside $SPEEDTEST_DIR (but apt's source list), or report
# a figure from a run whose hash differs.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-.}
SIZE=100
RUNS=3
TESTSET=main
while [ $# -gt 0 ]; do
	case "$1" in
	--size) SIZE=$2; shift 2 ;;
	--runs) RUNS=$2; shift 2 ;;
	--testset) TESTSET=$2; shift 2 ;;
	*) echo "usage: sh scripts/speedtest1.sh [--size N] [--runs N] [--testset T]" >&2; exit 2 ;;
	esac
done
DIR=${SPEEDTEST_DIR:-$TOP/build-speedtest}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

make -C "$TOP" -s -j2 O="$O" all >/dev/null
BIN=$(cd "$TOP" && cd "$O" && pwd)
for f in "$BIN/obj/liburfs_sqlite.a" "$BIN/libur_fs.so.1" "$BIN/simplefs_server" "$BIN/sfs"; do
	[ -e "$f" ] || { echo "speedtest1.sh: $f is not built" >&2; exit 1; }
done

# 1. speedtest1.c from Debian's source package of the installed libsqlite3.
SRC=$(ls -d "$DIR"/sqlite3-*/ 2>/dev/null | head -n 1 || true)
if [ -z "$SRC" ] || [ ! -f "$SRC/test/speedtest1.c" ]; then
	command -v dpkg-source >/dev/null || $SUDO apt-get install -y -qq dpkg-dev
	if ! grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo "speedtest1.sh: adding deb-src lines (/etc/apt/sources.list.d/urfs-deb-src.sources)"
		if [ -f /etc/apt/sources.list.d/debian.sources ]; then
			sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
				$SUDO tee /etc/apt/sources.list.d/urfs-deb-src.sources >/dev/null
		else
			sed -n 's/^deb /deb-src /p' /etc/apt/sources.list |
				$SUDO tee /etc/apt/sources.list.d/urfs-deb-src.list >/dev/null
		fi
		$SUDO apt-get update -qq
	fi
	ver=$(dpkg-query -W -f='${Version}' libsqlite3-0 2>/dev/null || true)
	(cd "$DIR" && { apt-get source -qq "sqlite3=$ver" 2>/dev/null || apt-get source -qq sqlite3; })
	SRC=$(ls -d "$DIR"/sqlite3-*/ | head -n 1)
fi
SRC=${SRC%/}

# 2. Build it against Debian's libsqlite3, with the VFS registered.
cat > "$DIR/speedtest1_urfs.c" <<'EOF'
/* Written by scripts/speedtest1.sh: registers the urfs VFS, makes every
 * connection synchronous=FULL, then runs speedtest1's own main(). */
#include <sqlite3.h>
#include <stdio.h>
int urfs_sqlite_register(int make_default);
int speedtest1_main(int argc, char **argv);
static int full_sync(sqlite3 *db, char **err, const void *api)
{
	(void)api;
	return sqlite3_exec(db, "PRAGMA synchronous=FULL", NULL, NULL, err);
}
int main(int argc, char **argv)
{
	if (urfs_sqlite_register(0) != SQLITE_OK ||
	    sqlite3_auto_extension((void (*)(void))full_sync) != SQLITE_OK) {
		fprintf(stderr, "speedtest1: cannot register the urfs VFS\n");
		return 1;
	}
	return speedtest1_main(argc, argv);
}
EOF
CC=${CC:-cc}
$CC -O2 -w -Dmain=speedtest1_main -c "$SRC/test/speedtest1.c" -o "$DIR/speedtest1.o"
$CC -O2 -Wall -Werror -c "$DIR/speedtest1_urfs.c" -o "$DIR/speedtest1_urfs.o"
$CC -o "$DIR/speedtest1" "$DIR/speedtest1_urfs.o" "$DIR/speedtest1.o" "$BIN/obj/liburfs_sqlite.a" \
	-L"$BIN" -l:libur_fs.so.1 -Wl,-rpath,"$BIN" -lsqlite3 -lpthread -lm
export UR_SERVER="$BIN/simplefs_server"
unset SFS_IMAGE

# 3. The runs: the four setups in turn, RUNS times, each on a fresh file/image.
RES="$DIR/results"
rm -rf "$RES" "$DIR/run"
mkdir -p "$RES" "$DIR/run"
echo "speedtest1 $(sed -n 's/^Version: //p' "$SRC/debian/changelog" 2>/dev/null | head -n 1)" \
     "--size $SIZE --testset $TESTSET --verify, $RUNS runs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$RUNS"); do
	for mode in delete wal; do
		for vfs in unix urfs; do
			out="$RES/$vfs-$mode-$r.txt"
			rm -f "$DIR/run/"*
			if [ $vfs = unix ]; then
				(cd "$DIR/run" && timeout 3600 "$DIR/speedtest1" --size "$SIZE" --testset "$TESTSET" \
					--verify --journal $mode st.db) > "$out" 2>&1
			else
				"$BIN/sfs" mkfs --size 8G --files 64 "$DIR/run/st.sfs" >/dev/null
				(cd "$DIR/run" && SFS_IMAGE=st.sfs timeout 3600 "$DIR/speedtest1" --size "$SIZE" \
					--testset "$TESTSET" --verify --journal $mode --vfs urfs st.db) > "$out" 2>&1
				"$BIN/sfs" fsck "$DIR/run/st.sfs" >/dev/null ||
					{ echo "speedtest1.sh: fsck of the image after $vfs-$mode-$r failed" >&2; exit 1; }
			fi || { tail -n 5 "$out" >&2; echo "speedtest1.sh: $vfs-$mode-$r failed" >&2; exit 1; }
			printf '  run %s %-12s %s\n' "$r" "$vfs-$mode" "$(grep TOTAL "$out" | awk '{print $NF}')"
		done
	done
done
rm -f "$DIR/run/"*
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# 4. Same hash everywhere (rollback and WAL build the same database).
hashes=$(grep -h '^Verification Hash' "$RES"/*.txt | sort -u)
if [ "$(printf '%s\n' "$hashes" | wc -l)" -ne 1 ] || [ -z "$hashes" ]; then
	echo "speedtest1.sh: the --verify hashes differ:" >&2
	grep -H '^Verification Hash' "$RES"/*.txt >&2
	exit 1
fi
echo "every run: $hashes"

# 5. Medians per test, side by side.
for f in "$RES"/*.txt; do
	b=$(basename "$f" .txt)
	sed -n 's/^ *\([0-9][0-9]*\) - \(.*[^.]\)\.\.*  *\([0-9.]*\)s$/\1|\2|\3/p; s/^ *TOTAL\.*  *\([0-9.]*\)s$/9999|TOTAL|\1/p' "$f" |
		sed "s/^/${b%-*}|/"
done | awk -F'|' '
	{ k = $2 "|" $3; v[$1 "|" k, ++n[$1 "|" k]] = $4; if (!(k in seen)) { seen[k] = 1; order[++nk] = k } }
	function med(key,   m, i, j, t, a) {
		m = n[key]; if (!m) return -1
		for (i = 1; i <= m; i++) a[i] = v[key, i]
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	function ratio(a, b) { return a > 0 ? sprintf("%.2fx", b / a) : "-" }
	END {
		print "| test | unix rollback | urfs rollback | ratio | unix WAL | urfs WAL | ratio |"
		print "|---|---:|---:|---:|---:|---:|---:|"
		for (i = 1; i <= nk; i++) {
			k = order[i]; split(k, p, "|")
			ud = med("unix-delete|" k); rd = med("urfs-delete|" k)
			uw = med("unix-wal|" k); rw = med("urfs-wal|" k)
			name = p[1] == 9999 ? "**total**" : p[1] " " p[2]
			printf "| %s | %.3f | %.3f | %s | %.3f | %.3f | %s |\n", name, ud, rd, ratio(ud, rd), uw, rw, ratio(uw, rw)
		}
	}' | tee "$RES/summary.md"
echo "(seconds, medians of $RUNS runs; ratio = urfs / unix, below 1 is faster; raw output in $RES)"
