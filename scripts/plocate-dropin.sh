#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/plocate-dropin.sh - proof 2 of the liburing drop-in (issue 9): Debian's
# plocate, an unchanged binary that links liburing.so.2, run with the kernel's
# io_uring blocked (noring) and the drop-in in LD_LIBRARY_PATH, prints the same
# results as without the filter, and its reads go through the (emulated) ring
# instead of its own pread fallback.
#
#   scripts/plocate-dropin.sh [-L DIR] [-N PATH] [-W DIR] [-f FILES] [-b ROUNDS]
#   -L DIR    the drop-in's folder, holding liburing.so.2 (default $O/uring)
#   -N PATH   the noring launcher (default $O/noring)
#   -W DIR    work folder for the tree and the index (default: a new one under
#             ${TMPDIR:-/tmp}, removed at the end)
#   -f FILES  files in the generated tree (default 20000)
#   -b ROUNDS also time ROUNDS rounds of every query with the pread fallback and
#             with the drop-in (and with the kernel's io_uring where it works) and
#             print the figures: a measurement, never part of the check
#
# The check (exit 1 on any failure, 77 with the reason when it cannot run here):
#  1. every query's output under noring + drop-in equals its output without the
#     filter (Debian's liburing, the kernel's io_uring if it works here), and the
#     output under noring with Debian's liburing (the fallback) equals it too;
#  2. plocate loads the drop-in (strace: the liburing.so.2 it opens) and takes
#     its io_uring path (plocate -D prints "not using io_uring" only on fallback);
#  3. under strace -f: with the fallback, plocate's own thread reads the index
#     with one pread64 per read; with the drop-in it issues only the few pread64
#     it also issues with the kernel's io_uring (its header, ld.so's): the other
#     reads are io_uring requests served by the drop-in's executor (inline
#     preadv2 or a worker's; the counts are printed).
# plocate is setgid: glibc ignores LD_LIBRARY_PATH in a setgid program, but
# noring sets no_new_privs, under which the setgid bit is not applied, so the
# drop-in loads. Must never: compare outputs that are both empty because
# plocate failed (every run's exit status is checked, and queries that match
# must print something), or pass without having run the drop-in.
set -u
O=${O:-.}
DROPIN=$O/uring
NORING=$O/noring
WORK=""
NFILES=20000
ROUNDS=0
while getopts L:N:W:f:b:h opt; do
	case $opt in
	L) DROPIN=$OPTARG ;;
	N) NORING=$OPTARG ;;
	W) WORK=$OPTARG ;;
	f) NFILES=$OPTARG ;;
	b) ROUNDS=$OPTARG ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
	esac
done

skip() { echo "plocate-dropin: SKIP: $*"; exit 77; }
fail() { echo "plocate-dropin: FAIL: $*"; exit 1; }

PLOCATE=$(command -v plocate) || skip "plocate is not installed (scripts/install-deps.sh installs it)"
UPDATEDB=$(command -v updatedb.plocate || ls /usr/sbin/updatedb.plocate 2>/dev/null) ||
	skip "updatedb.plocate is not installed (package plocate)"
command -v strace >/dev/null || skip "strace is not installed (scripts/install-deps.sh installs it)"
[ -x "$NORING" ] || skip "no noring launcher at $NORING (make builds it)"
[ -f "$DROPIN/liburing.so.2" ] || skip "no drop-in at $DROPIN/liburing.so.2 (make builds it)"
DROPIN=$(cd "$DROPIN" && pwd)
. "$(dirname "$0")/dropin-env.sh"
DENV=$(dropin_env "$DROPIN")   # the ASan runtime, for a sanitizer build
NORING=$(cd "$(dirname "$NORING")" && pwd)/$(basename "$NORING")
ldd "$PLOCATE" | grep -q 'liburing\.so\.2' || skip "$PLOCATE does not link liburing.so.2"

if [ -z "$WORK" ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/plocate-dropin.XXXXXX") || fail "mktemp"
	trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$WORK" || fail "mkdir $WORK"
cd "$WORK" || fail "cd $WORK"

# --- a tree of NFILES empty files with varied, deterministic names -----------
rm -rf tree && mkdir tree || fail "mkdir tree"
awk -v n="$NFILES" 'BEGIN {
	split("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike " \
	      "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu", w, " ")
	split("txt c h md log conf png tar.gz", e, " ")
	x = 12345
	for (i = 0; i < n; i++) {
		x = (x * 1103515245 + 12345) % 2147483648; y = int(x / 65536)
		a = w[1 + y % 26]; b = w[1 + int(y / 26) % 26]; c = e[1 + int(y / 676) % 8]
		printf "tree/d%03d/%s/%s_%s_%d.%s\n", i % 97, b, a, b, i, c
	}
}' > names.txt
sed 's|/[^/]*$||' names.txt | sort -u | xargs mkdir -p || fail "mkdir of the tree"
xargs touch < names.txt || fail "touch of the tree"
# Debian's /etc/updatedb.conf prunes /tmp and tmpfs: prune nothing here.
"$UPDATEDB" -U "$WORK/tree" -o "$WORK/index.db" --prunepaths "" --prunefs "" --prunenames "" -l no \
	> updatedb.log 2>&1 || fail "updatedb: $(tail -n 1 updatedb.log)"

# Each query: plocate's arguments (after -d index.db); "!" marks one that must match nothing.
QUERIES=(
	"alpha"
	"bravo_kilo"
	"-i ZULU_ALPHA"
	"-c .tar.gz"
	"-b _1234."
	"-l 50 echo"
	"delta .md"
	"-r alpha_[a-z]*_[0-9]*7\.c$"
	"--regex ^$WORK/tree/d05./(mike|lima)/"
	"-0 xray_yankee"
	"! no_such_name_anywhere"
)

# run_all TAG PREFIX... : runs every query as "PREFIX plocate -d index.db ARGS",
# stdout to TAG.N.out; the exit status must be 0 (1 for "!" queries, plocate's
# "nothing found").
run_all() {
	local tag=$1 i=0 q args want
	shift
	for q in "${QUERIES[@]}"; do
		want=0; args=$q
		case $q in "! "*) want=1; args=${q#! } ;; esac
		# shellcheck disable=SC2086
		"$@" "$PLOCATE" -d "$WORK/index.db" $args > "$tag.$i.out" 2> "$tag.$i.err"
		local rc=$?
		[ "$rc" = "$want" ] || fail "$tag: plocate $args: exit $rc, not $want: $(tail -n 1 "$tag.$i.err")"
		[ "$want" = 1 ] || [ -s "$tag.$i.out" ] || fail "$tag: plocate $args printed nothing"
		i=$((i + 1))
	done
}

run_all ref env
run_all fallback "$NORING"
run_all dropin env LD_LIBRARY_PATH="$DROPIN" $DENV "$NORING"
for i in "${!QUERIES[@]}"; do
	cmp -s ref.$i.out fallback.$i.out || fail "plocate ${QUERIES[$i]}: the fallback (noring, Debian's liburing) prints other results than without the filter"
	cmp -s ref.$i.out dropin.$i.out ||
		fail "plocate ${QUERIES[$i]}: the drop-in under noring prints other results than without the filter: $(diff ref.$i.out dropin.$i.out | head -n 5 | tr '\n' ' ')"
done
echo "plocate-dropin: ${#QUERIES[@]} queries on an index of $NFILES files: the same output without the filter, with the fallback and with the drop-in under noring"

# --- the path the reads take ---------------------------------------------------
# one_run TAG PREFIX... : a query with -D under strace -f; prints the trace's file.
Q="-D bravo_kilo"
trace() {
	local tag=$1
	shift
	# shellcheck disable=SC2086
	strace -f -qq -o "$tag.strace" -e trace=execve,openat,pread64,preadv,preadv2,read,io_uring_setup,io_submit \
		"$@" "$PLOCATE" -d "$WORK/index.db" $Q > "$tag.trace.out" 2> "$tag.trace.err" ||
		fail "$tag: strace plocate $Q: $(tail -n 1 "$tag.trace.err")"
	cmp -s "$tag.trace.out" ref.1.out || fail "$tag: plocate $Q under strace prints other results"
}
# counts TAG -> "main_pread64 other_pread64 main_preadv other_preadv main_io_submit
# other_io_submit" for plocate's process (preadv counts preadv and preadv2)
counts() {
	awk -v plocate="$PLOCATE" '
		$2 ~ "^execve\\(\"" plocate "\"" && $0 ~ /= 0$/ { main = $1 }
		main == "" { next }
		$0 ~ /index\.db/ && $2 ~ /^openat/ { next }
		{ sc = $2; sub(/\(.*/, "", sc) }
		sc == "pread64" { if ($1 == main) mp++; else op++ }
		sc == "preadv2" || sc == "preadv" { if ($1 == main) mv++; else ov++ }
		sc == "io_submit" { if ($1 == main) ms++; else os++ }
		END { printf "%d %d %d %d %d %d\n", mp, op, mv, ov, ms, os }' "$1.strace"
}
trace kernel env
trace fallback "$NORING"
trace dropin env LD_LIBRARY_PATH="$DROPIN" $DENV "$NORING"
grep -q "not using io_uring" fallback.trace.err ||
	fail "the fallback run does not say 'not using io_uring' (plocate -D): is noring blocking io_uring?"
grep -q "not using io_uring" dropin.trace.err &&
	fail "with the drop-in plocate says: $(grep 'io_uring' dropin.trace.err | head -n 1)"
grep -q "openat(.*\"$DROPIN/liburing.so.2\", .* = [0-9]" dropin.strace ||
	fail "plocate did not load $DROPIN/liburing.so.2: $(grep 'liburing.so.2' dropin.strace | grep -v ENOENT | head -n 1)"
read -r kmp kop kmv kov kms kos <<< "$(counts kernel)"
read -r fmp fop fmv fov fms fos <<< "$(counts fallback)"
read -r dmp dop dmv dov dms dos <<< "$(counts dropin)"
echo "plocate-dropin: plocate $Q, system calls of plocate's own thread / of other threads:"
grep -q 'io_uring_setup(.* = [0-9]' kernel.strace && kring=1 || kring=0
[ "$kring" = 1 ] &&
echo "  kernel   (no filter, Debian's liburing):  pread64 $kmp / $kop, preadv/preadv2 $kmv / $kov, io_submit $kms / $kos"
echo "  fallback (noring, Debian's liburing):  pread64 $fmp / $fop, preadv/preadv2 $fmv / $fov, io_submit $fms / $fos"
echo "  drop-in  (noring, emulated ring):      pread64 $dmp / $dop, preadv/preadv2 $dmv / $dov, io_submit $dms / $dos"
[ "$fmp" -gt 0 ] || fail "the fallback run shows no pread64 in plocate's thread: the count cannot tell the paths apart"
[ "$dmp" -lt "$fmp" ] ||
	fail "with the drop-in plocate's own thread issues $dmp pread64, as many as its fallback ($fmp): its reads do not go through the ring"
# plocate preads a few things itself (its header; ld.so the libraries' headers) on every path:
# with the kernel's ring the count of those is known, and the drop-in must not add one.
if [ "$kring" = 1 ]; then
	[ "$dmp" -eq "$kmp" ] ||
		fail "with the drop-in plocate's own thread issues $dmp pread64, with the kernel's io_uring $kmp: $((dmp - kmp)) of its reads fell back to pread"
fi
echo "plocate-dropin: $((fmp - dmp)) reads that the fallback does with pread64 went through the drop-in's ring"

# --- speed: measured and printed, never asserted ---------------------------------
if [ "$ROUNDS" -gt 0 ]; then
	timeit() {   # timeit PREFIX... -> seconds for ROUNDS rounds of every query
		local t0 t1 r q args
		t0=$(date +%s.%N)
		for r in $(seq "$ROUNDS"); do
			for q in "${QUERIES[@]}"; do
				args=${q#! }
				# shellcheck disable=SC2086
				"$@" "$PLOCATE" -d "$WORK/index.db" $args > /dev/null 2>&1
			done
		done
		t1=$(date +%s.%N)
		echo "$t0 $t1" | awk '{ printf "%.3f", $2 - $1 }'
	}
	n=$((ROUNDS * ${#QUERIES[@]}))
	# Interleaved twice, so that a burst of load on a shared machine hits both. The
	# fallback goes through env too: the same three execs (env, noring, plocate) as
	# the drop-in, whose env alone cost each run about 1.5 ms here (a third of a query).
	f1=$(timeit env "$NORING"); d1=$(timeit env LD_LIBRARY_PATH="$DROPIN" $DENV "$NORING")
	d2=$(timeit env LD_LIBRARY_PATH="$DROPIN" $DENV "$NORING"); f2=$(timeit env "$NORING")
	k1=$(timeit env); k2=$(timeit env)
	echo "plocate-dropin: $n plocate runs each ($ROUNDS rounds of ${#QUERIES[@]} queries, $NFILES files), seconds:"
	echo "$f1 $f2 $d1 $d2 $k1 $k2" | awk '{ f = $1 + $2; d = $3 + $4; k = $5 + $6
		printf "  fallback (pread)       %.3f\n  drop-in (emulated)     %.3f   %.2fx the fallback'\''s speed\n", f, d, f / d
		printf "  kernel io_uring        %.3f   (Debian'\''s liburing, no filter; pread if io_uring is blocked here)\n", k }'
fi
exit 0
