#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/test-deb.sh - the Debian packages' life cycle, as root: installs the
# packages `make deb` built (apt-get install ./x.deb; urfs-uring first on its
# own, as it needs none of the others), uses them the way
# `make run` does but only through what was installed (sfs mkfs; a program
# built against libur-fs-dev with pkg-config writes a file through the ring and
# reads it back; a SQLite program built against the packaged VFS writes a
# database into an image and reads it back, and the sqlite3 shell loads the
# packaged extension and reads it too; cat_ur; sfs ls and fsck; a short urfs-bench run, also under
# noring; a liburing program built against Debian's liburing-dev, run as
# `noring urfs-uring program`: it loads the packaged drop-in and its ring
# works; the man pages), then purges them and checks that every file they
# installed is gone.
#   sh scripts/test-deb.sh [DIR]     DIR: where the .debs are (default $O/deb, else ./deb)
# Must never: pass when a step ran the source tree's programs or library
# instead of the installed ones (the steps run with a clean environment, from
# an empty directory), when the drop-in could stand in for Debian's liburing2
# (a shlibs entry, an ldconfig trigger, a path the loader searches), or when
# a packaged file is left after the purge.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-${O:-.}/deb}
PKGS="libur-fs1 urfs-server libur-fs-dev urfs-tools urfs-uring"
fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }
say() { echo "test-deb: $*"; }

[ "$(id -u)" -eq 0 ] || fail "must run as root (it installs packages)"
DEBS=""
for p in $PKGS; do
	f=$(ls "$DIR"/${p}_*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || fail "no ${p}_*.deb in $DIR (run make deb first)"
	DEBS="$DEBS $(cd "$(dirname "$f")" && pwd)/$(basename "$f")"
done

export DEBIAN_FRONTEND=noninteractive
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in $PKGS; do
	if installed "$p"; then say "$p is installed from an earlier run: purging it first"; apt-get purge -y -qq $PKGS >/dev/null; break; fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/test-deb.XXXXXX")
cleanup() {
	rc=$?
	for p in $PKGS; do if installed "$p"; then apt-get purge -y -qq $PKGS >/dev/null 2>&1 || true; break; fi; done
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT INT TERM

# What the packages will install, and which of those paths exist already
# (shared directories such as /usr/bin): those must stay, the rest must go.
for f in $DEBS; do dpkg-deb -c "$f"; done | awk '{ p = $6; sub(/^\./, "", p); sub(/\/$/, "", p); if (p != "") print p }' |
	sort -u > "$WORK/paths"
: > "$WORK/preexisting"
while IFS= read -r p; do if [ -e "$p" ] || [ -L "$p" ]; then echo "$p" >> "$WORK/preexisting"; fi; done < "$WORK/paths"

# Maintainer scripts could leave files no package lists: compare the file
# system before and after (new paths that look like ours fail the test).
snapshot() { find /etc /usr /opt /var/lib -xdev 2>/dev/null | grep -v '^/var/lib/\(dpkg\|apt\|ucf\|systemd\)\(/\|$\)' | sort; }
snapshot > "$WORK/before"

# Use: only installed programs, from an empty directory, with a clean environment.
run() { (cd "$WORK/use" && env -i PATH=/usr/bin:/bin HOME="$WORK" TMPDIR="$WORK" LANG=C "$@"); }
mkdir "$WORK/use"

# urfs-uring stands alone: `apt install ./urfs-uring_*.deb`, then `urfs-uring program`.
say "a liburing program built against liburing-dev (tests/progs/uring_which.c)"
dpkg-query -W -f='${Status}' liburing-dev 2>/dev/null | grep -q "install ok installed" ||
	fail "liburing-dev is not installed (a Build-Depends of urfs: apt-get install liburing-dev)"
run sh -c 'cc -std=gnu11 -Wall -Werror -o uring_which "$1" -luring' sh "$TOP/tests/progs/uring_which.c" ||
	fail "cannot build tests/progs/uring_which.c against liburing-dev"
UDEB=$(echo "$DEBS" | tr ' ' '\n' | grep '/urfs-uring_')
say "urfs-uring alone: install, urfs-uring --emulate ./uring_which, purge"
apt-get install -y -qq --no-install-recommends "$UDEB" > "$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; fail "apt-get install $UDEB"; }
for p in $PKGS; do
	[ "$p" = urfs-uring ] && continue
	if installed "$p"; then fail "installing urfs-uring alone installed $p too"; fi
done
out=$(run timeout 60 urfs-uring --emulate ./uring_which f 2>&1) || fail "urfs-uring alone: $out"
echo "$out" | grep -q '^liburing: /usr/lib/.*/urfs/liburing\.so\.2$' && echo "$out" | grep -qx 'ring: emulated' &&
	echo "$out" | grep -qx 'io: ok' || fail "urfs-uring alone: $out"
apt-get purge -y -qq urfs-uring > "$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; fail "apt-get purge urfs-uring"; }

say "installing:$DEBS"
apt-get install -y -qq --no-install-recommends $DEBS > "$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; fail "apt-get install"; }
for p in $PKGS; do installed "$p" || fail "$p is not installed"; done
# dpkg -L lists what each package owns; all of it must be there.
for p in $PKGS; do dpkg -L "$p"; done | grep -vx "/\." | sort -u > "$WORK/owned"
while IFS= read -r p; do
	if [ ! -e "$p" ] && [ ! -L "$p" ]; then fail "$p is listed by dpkg -L but missing"; fi
done < "$WORK/owned"
say "$(wc -l < "$WORK/owned") paths owned by the packages, all present"

# The library's file is named after its soname, and the server is where the library looks.
LIB=$(dpkg -L libur-fs1 | grep '/libur_fs\.so\.1\.[0-9.]*$' | head -n 1)
[ -n "$LIB" ] || fail "libur-fs1 ships no libur_fs.so.1.x.y"
objdump -p "$LIB" | grep -q 'SONAME *libur_fs\.so\.1$' || fail "$LIB does not carry the soname libur_fs.so.1"
[ -x /usr/libexec/urfs/simplefs_server ] || fail "no /usr/libexec/urfs/simplefs_server"
# Programs find the library in the system's path, not through an RPATH/RUNPATH.
for f in $(grep '^/usr/bin/\|^/usr/libexec/' "$WORK/owned"); do
	[ -f "$f" ] || continue
	if readelf -d "$f" 2>/dev/null | grep -q 'RPATH\|RUNPATH'; then fail "$f carries an RPATH/RUNPATH"; fi
done

say "sfs mkfs"
run sfs mkfs --size 64M disk.sfs
[ "$(run sh -c 'command -v sfs')" = /usr/bin/sfs ] || fail "sfs is not the installed one"
say "a program built against libur-fs-dev (pkg-config libur_fs): write through the ring, read back"
run sh -c 'cc -std=gnu11 -Wall -Werror -o writer "$1" $(pkg-config --cflags --libs libur_fs)' sh "$TOP/tools/test_ur_write_v2.c"
used=$(run sh -c 'ldd ./writer' | awk '$1 == "libur_fs.so.1" { print $3 }')
[ -n "$used" ] && [ "$(readlink -f "$used")" = "$(readlink -f "$LIB")" ] ||
	fail "writer does not use the installed library (it uses: ${used:-none})"
out=$(run timeout 60 ./writer) || fail "writer: $out"
[ "$out" = "Write completed: user_data=2, res=27" ] || fail "writer printed: $out"
say "the SQLite VFS: a program built against the installed files (tests/progs/sqlite_urfs.c), then the shell's .load"
dpkg-query -W -f='${Status}' libsqlite3-dev 2>/dev/null | grep -q "install ok installed" ||
	fail "libsqlite3-dev is not installed (a Build-Depends of urfs: apt-get install libsqlite3-dev)"
run sh -c 'cc -std=gnu11 -Wall -Werror -o sqlite_urfs "$1" -lurfs_sqlite -lur_fs -lsqlite3' sh "$TOP/tests/progs/sqlite_urfs.c" ||
	fail "cannot build tests/progs/sqlite_urfs.c against the installed VFS"
run sfs mkfs --size 64M db.sfs > /dev/null
out=$(run timeout 60 ./sqlite_urfs db.sfs app.db 2>&1) || fail "sqlite_urfs: $out"
[ "$out" = "rows: 3, sum: 321
ok" ] || fail "sqlite_urfs printed: $out"
run sfs ls db.sfs | grep -qx 'app.db' || fail "app.db is not in the image: $(run sfs ls db.sfs)"
EXT=$(dpkg -L libur-fs1 | grep '/sqlite3/liburfs_sqlite\.so$' || true)
[ -n "$EXT" ] || fail "libur-fs1 ships no sqlite3/liburfs_sqlite.so"
if command -v sqlite3 > /dev/null; then
	out=$(run sh -c 'printf ".load %s\n.open file:app.db?vfs=urfs&image=db.sfs\nSELECT sum(x) FROM t;\n" "$1" | timeout 60 sqlite3 -batch' sh "${EXT%.so}" 2>&1) ||
		fail "sqlite3 .load ${EXT%.so}: $out"
	[ "$out" = 321 ] || fail "sqlite3 with the installed extension printed: $out"
else
	say "SKIP-PART: no sqlite3 shell: the extension's .load is not tried"
fi
say "cat_ur test_write.txt"
out=$(run timeout 60 cat_ur test_write.txt) || fail "cat_ur"
[ "$out" = "Hello from async ur_write!" ] || fail "cat_ur printed: $out"
say "sfs ls -l, sfs fsck"
run sfs ls -l disk.sfs | grep -q ' test_write.txt$' || fail "sfs ls does not list test_write.txt"
run sfs fsck disk.sfs > /dev/null || fail "sfs fsck reports errors"
say "urfs-bench (short), and again under noring"
run timeout 120 urfs-bench run --engine ur,psync --size 4m --repeat 1 > "$WORK/bench.log" 2>&1 ||
	{ cat "$WORK/bench.log"; fail "urfs-bench"; }
grep -q '^ur: ' "$WORK/bench.log" || fail "urfs-bench did not run the ur engine"
run timeout 120 noring urfs-bench run --engine ur --size 4m --repeat 1 > "$WORK/bench.log" 2>&1 ||
	{ cat "$WORK/bench.log"; fail "noring urfs-bench"; }
grep -q '^ur: ' "$WORK/bench.log" || fail "urfs-bench under noring did not run the ur engine"

say "the liburing drop-in: private, never in the loader's path, no shlibs, no trigger"
DROPIN=$(dpkg -L urfs-uring | grep '/liburing\.so\.2$' || true)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
[ "$DROPIN" = "/usr/lib/$MA/urfs/liburing.so.2" ] || fail "urfs-uring ships the drop-in as '${DROPIN:-nothing}', not /usr/lib/$MA/urfs/liburing.so.2"
[ "$(stat -c %a "$DROPIN")" = 644 ] || fail "$DROPIN has mode $(stat -c %a "$DROPIN"), not 644"
objdump -p "$DROPIN" | grep -q 'SONAME *liburing\.so\.2$' || fail "$DROPIN does not carry the soname liburing.so.2"
if ldconfig -p | grep -q "/urfs/"; then fail "the loader's cache knows the drop-in: $(ldconfig -p | grep /urfs/)"; fi
for f in shlibs triggers symbols; do
	[ ! -e "/var/lib/dpkg/info/urfs-uring.$f" ] || fail "urfs-uring has a $f control file: $(cat "/var/lib/dpkg/info/urfs-uring.$f")"
done
[ "$(run sh -c 'command -v urfs-uring')" = /usr/bin/urfs-uring ] || fail "urfs-uring is not the installed one"
say "the liburing program alone, and as noring urfs-uring program"
out=$(run timeout 60 ./uring_which f 2>&1) || true
case $out in *"liburing: $DROPIN"*) fail "without the launcher the program loaded the drop-in: $out" ;; esac
echo "$out" | grep -q '^liburing: /' || fail "uring_which alone reports no liburing: $out"
out=$(run timeout 60 noring ./uring_which f 2>&1) && fail "with io_uring blocked the program worked without the drop-in: $out"
out=$(run timeout 60 noring urfs-uring ./uring_which f 2>&1) || fail "noring urfs-uring ./uring_which: $out"
[ "$(echo "$out" | grep '^liburing: ')" = "liburing: $DROPIN" ] || fail "under urfs-uring it did not load (only) $DROPIN: $out"
echo "$out" | grep -qx 'ring: emulated' || fail "under noring the ring is not the emulated one: $out"
echo "$out" | grep -qx 'io: ok' || fail "the I/O through the emulated ring failed: $out"
say "noring urfs-uring ./uring_which: $(echo "$out" | tr '\n' ' ')"
out=$(run timeout 60 urfs-uring --emulate ./uring_which f 2>&1) || fail "urfs-uring --emulate ./uring_which: $out"
echo "$out" | grep -qx 'ring: emulated' || fail "urfs-uring --emulate: the ring is not the emulated one: $out"
say "man pages"
for page in "1 sfs" "1 cat_ur" "1 urfs-bench" "1 noring" "1 urfs-uring" "7 urfs-uring" "8 simplefs_server" "7 urfs" \
	"3 urfs_queue_init" "3 urfs_prep_write" "3 ur_init" "3 urch_open" "3 sfs_mount" "3 mksfs" \
	"3 urfs_sqlite" "3 urfs_sqlite_register"; do
	# shellcheck disable=SC2086
	path=$(run man -w $page) || fail "man -w $page: not found"
	case $path in /usr/share/man/*) ;; *) fail "man -w $page found $path" ;; esac
	# shellcheck disable=SC2086
	run env MANWIDTH=80 man $page 2>&1 | grep -q . || fail "man $page renders nothing"
done

say "purging"
apt-get purge -y -qq $PKGS > "$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; fail "apt-get purge"; }
for p in $PKGS; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed\|config-files"; then fail "$p is still known to dpkg"; fi
done
left=0
cat "$WORK/paths" "$WORK/owned" | sort -u | while IFS= read -r p; do
	grep -qxF "$p" "$WORK/preexisting" && continue
	if [ -e "$p" ] || [ -L "$p" ]; then echo "left behind: $p"; fi
done > "$WORK/left"
left=$(wc -l < "$WORK/left")
[ "$left" -eq 0 ] || { cat "$WORK/left"; fail "$left paths left after purge"; }
snapshot > "$WORK/after"
comm -13 "$WORK/before" "$WORK/after" > "$WORK/new"
if grep -i 'urfs\|ur_fs\|ur-fs\|simplefs\|sfs\|cat_ur\|noring' "$WORK/new" > "$WORK/ours"; then
	cat "$WORK/ours"; fail "$(wc -l < "$WORK/ours") new paths of ours after purge"
fi
[ -s "$WORK/new" ] && say "note: new paths since install, not ours (other work on this machine?): $(head -n 5 "$WORK/new" | tr '\n' ' ')"
say "OK: installed, used, purged; nothing left behind"
