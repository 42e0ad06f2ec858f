#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/liburing-tests.sh - proof 1 of the liburing drop-in (issue 9): runs
# liburing 2.3's own tests and examples, built unchanged from Debian's source
# package against Debian's installed liburing.h and linked with -luring, so that
# LD_LIBRARY_PATH alone chooses which liburing.so.2 they load, under four setups:
#   a  Debian's liburing, the kernel's io_uring allowed
#   b  Debian's liburing under noring (io_uring_setup/enter/register fail: EPERM)
#   c  the drop-in (LD_LIBRARY_PATH) under noring: the ring is emulated
#   d  the drop-in with the kernel allowed: pass-through
# and two more through the system-call front (issue 30), under noring, with
# LD_PRELOAD=DROPIN/liburing.so.2:DROPIN/liburfs_syscalls.so (urfs-uring --syscalls):
#   e  the same programs as c: their raw io_uring system calls trap to the
#      emulated ring too
#   f  the same sources linked with Debian's liburing.a instead of -luring (in
#      BUILD/bin-static): every io_uring system call of liburing traps
# Nothing of liburing is kept in the project: the source is fetched with
# `apt-get source liburing` (deb-src lines are added to apt's sources if missing)
# into the build folder, and the build is cached there.
#
#   scripts/liburing-tests.sh [options] [TEST...]
#   -B DIR    build folder (default $O/liburing-tests; O defaults to .)
#   -L DIR    the drop-in's folder, holding liburing.so.2 (default $O/uring)
#   -N PATH   the noring launcher (default $O/noring)
#   -s SETUPS the setups to run, letters of abcdef (default abcd)
#   -t SECS   time limit per test (default 60, liburing's own)
#   -j JOBS   programs run at once within a setup (default 2 where there are 2
#             CPUs or more, else 1; LIBURING_TEST_JOBS sets the default). Each
#             runs in its own scratch folder; the setups still run one after
#             the other
#   -m FILE   write the table of every test as markdown (needs all four setups run)
#   -M FILE   the same from the results of earlier runs, running nothing
#   -c FILE   check mode: FILE lists tests that must pass in every setup run (one
#             name a line, # comments); one failing fails the check (exit 1), one
#             passing that is not listed is reported; the counts are printed.
#             Unlisted tests run with the limit of -T (default 10 s), and in a
#             later setup only if they passed the earlier ones. A listed test
#             that fails beside the others runs once more, alone, and that
#             result counts; each such test is named
#   -F        with -c: in setups e and f, check only the tests tagged !front
#   -k        fetch and build only (the static build too with -s ...f)
# TEST...: test names (e.g. nop read-write examples/io_uring-cp); default every
# test built (with -c, only the listed tests among them are checked).
#
# Results: BUILD/results/SETUP.tsv (test, result, seconds, last line of output),
# the full output of each run in BUILD/logs/SETUP/TEST.log (check mode: under
# BUILD/check/).
# Exit: 0 done (check passed), 1 a check failed (or the front's probe failed in e
# or f with both its libraries there), 77 cannot run here (no source
# package, no compiler, no noring or drop-in for the setups asked): the reason is
# the last line printed. Must never: count a test as passing that did not exit 0,
# run setup c or d without checking that the tests really load the drop-in, e
# or f without checking that a raw io_uring_setup goes through the front (and
# counting a program whose front was off as passing), or run b, c, e or f
# without the filter.
set -u
O=${O:-.}
BUILD=$O/liburing-tests
DROPIN=$O/uring
NORING=$O/noring
SETUPS=abcd
TLIMIT=60
TNEW=10
MD=""
CHECK=""
BUILD_ONLY=0
FRONT_ONLY=0
JOBS=${LIBURING_TEST_JOBS:-$( [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && echo 2 || echo 1)}
while getopts B:L:N:s:t:T:m:M:c:j:kFh opt; do
	case $opt in
	B) BUILD=$OPTARG ;;
	L) DROPIN=$OPTARG ;;
	N) NORING=$OPTARG ;;
	s) SETUPS=$OPTARG ;;
	t) TLIMIT=$OPTARG ;;
	j) JOBS=$OPTARG ;;
	T) TNEW=$OPTARG ;;
	m) MD=$OPTARG ;;
	M) MD=$OPTARG; SETUPS=none ;;
	c) CHECK=$OPTARG ;;
	k) BUILD_ONLY=1 ;;
	F) FRONT_ONLY=1 ;;
	*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $SETUPS in none) ;; *[!abcdef]*|"") echo "liburing-tests: -s $SETUPS: letters of abcdef"; exit 2 ;; esac
case $JOBS in ''|0*|*[!0-9]*) echo "liburing-tests: -j $JOBS: a number of programs, 1 or more"; exit 2 ;; esac

skip() { echo "liburing-tests: SKIP: $*"; exit 77; }

mkdir -p "$BUILD" || skip "cannot create $BUILD"
BUILD=$(cd "$BUILD" && pwd)
# The tests run in scratch folders: every path becomes absolute.
abs() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
DROPIN=$(abs "$DROPIN"); NORING=$(abs "$NORING"); [ -n "$CHECK" ] && CHECK=$(abs "$CHECK")
[ -n "$MD" ] && MD=$(abs "$MD")
BIN=$BUILD/bin
SBIN=$BUILD/bin-static
LIBURING_A=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/liburing.a

# --- fetch: apt-get source liburing (Debian 12: 2.3) -------------------------
. "$(dirname "$0")/deb-src.sh"
fetch() {
	SRC=$(ls -d "$BUILD"/src/liburing-*/ 2>/dev/null | head -n 1)
	[ -n "$SRC" ] && [ -f "$SRC/test/helpers.c" ] && return 0
	deb_source liburing "$BUILD/src" || skip "$DEB_SRC_WHY"
	SRC=$(ls -d "$BUILD"/src/liburing-*/ 2>/dev/null | head -n 1)
	[ -n "$SRC" ] && [ -f "$SRC/test/helpers.c" ] || skip "apt-get source liburing gave no test/helpers.c"
}

# --- build: every test and example, unchanged, against /usr/include/liburing.h -----
# No -I into the source tree: liburing.h and liburing/io_uring.h come from
# liburing-dev; config-host.h (liburing's configure) says what libc offers.
# A test that does not compile or link against Debian's exports is listed in
# BUILD/unbuilt.txt with its first error, and is not run.
build() {
	[ -f /usr/include/liburing.h ] || skip "no /usr/include/liburing.h (package liburing-dev)"
	command -v gcc >/dev/null || skip "no gcc"
	if [ ! -f "$SRC/config-host.h" ]; then
		(cd "$SRC" && ./configure) >"$BUILD/configure.log" 2>&1 ||
			skip "liburing's configure failed: $(tail -n 1 "$BUILD/configure.log")"
	fi
	mkdir -p "$BIN/examples" "$BUILD/buildlog/examples"
	local cpp="-D_GNU_SOURCE -D__SANE_USERSPACE_TYPES__ -include $SRC/config-host.h -DLIBURING_BUILD_TEST"
	local cflags="-g -O2 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare"
	if [ ! -f "$BIN/helpers.o" ]; then
		gcc $cpp $cflags -c -o "$BIN/helpers.o" "$SRC/test/helpers.c" 2>"$BUILD/buildlog/helpers.log" ||
			skip "liburing's test/helpers.c does not compile: $(head -n 1 "$BUILD/buildlog/helpers.log")"
	fi
	# One line per program: "name source compiler extra-objects".
	{
		for s in "$SRC"/test/*.c "$SRC"/test/*.cc; do
			n=$(basename "$s"); n=${n%.c}; n=${n%.cc}
			[ "$n" = helpers ] && continue
			case $s in *.cc) cc=g++ ;; *) cc=gcc ;; esac
			echo "$n.t $s $cc $BIN/helpers.o"
		done
		for s in "$SRC"/examples/*.c; do
			n=$(basename "$s" .c)
			echo "examples/$n $s gcc -"
		done
	} > "$BUILD/programs.txt"
	export cpp cflags BUILD
	link_all "$BIN" buildlog -luring unbuilt.txt
	case $SETUPS in
	*f*) [ -f "$LIBURING_A" ] || skip "setup f: no $LIBURING_A (package liburing-dev)"
	     mkdir -p "$SBIN/examples" "$BUILD/buildlog-static/examples"
	     link_all "$SBIN" buildlog-static "$LIBURING_A" unbuilt-static.txt ;;
	esac
	probe_build
}

# link_all OUT LOGS LIB UNBUILT: every program of programs.txt into OUT, linked
# with LIB (-luring, or the path of liburing.a); the failures in BUILD/UNBUILT.
link_all() {
	# shellcheck disable=SC2016
	awk '{ print $1, $2, $3, $4 }' "$BUILD/programs.txt" | OUT=$1 LOGS=$BUILD/$2 LIB=$3 xargs -P 2 -L 1 sh -c '
		out=$OUT/$0; log=$LOGS/$0.log
		[ -x "$out" ] || [ -f "$log.failed" ] && exit 0
		extra=$3; [ "$extra" = - ] && extra=
		if $2 $cpp $cflags -o "$out" "$1" $extra $LIB -lpthread >"$log" 2>&1; then
			rm -f "$log"
		else
			touch "$log.failed"
		fi'
	: > "$BUILD/$4"
	for f in "$BUILD/$2"/*.log.failed "$BUILD/$2"/examples/*.log.failed; do
		[ -e "$f" ] || continue
		n=${f#"$BUILD/$2"/}; n=${n%.log.failed}
		echo "$n $(grep -m 1 -E 'error|undefined reference' "${f%.failed}" | sed 's/^.*: \(error\|undefined\)/\1/')" >> "$BUILD/$4"
	done
}

# BUILD/front-probe: makes io_uring_setup and the mmap of its SQ ring as raw
# system calls and looks for liburfs_syscalls.so in its own maps; prints
# "front ok" only when both worked. Under noring that proves the front served
# them (the kernel's answer there is EPERM).
probe_build() {
	[ -x "$BUILD/front-probe" ] && return 0
	cat > "$BUILD/front-probe.c" <<'PROBE'
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	struct io_uring_params p;
	char line[4096];
	int fd, found = 0;
	memset(&p, 0, sizeof(p));
	fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (fd < 0) {
		perror("front-probe: io_uring_setup");
		return 1;
	}
	void *m = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
	if (m == MAP_FAILED) {
		perror("front-probe: mmap of IORING_OFF_SQ_RING");
		return 1;
	}
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, "liburfs_syscalls.so") != NULL;
	if (!found) {
		fprintf(stderr, "front-probe: liburfs_syscalls.so is not in /proc/self/maps\n");
		return 1;
	}
	printf("front ok (ring fd %d)\n", fd);
	return 0;
}
PROBE
	gcc -O2 -o "$BUILD/front-probe" "$BUILD/front-probe.c" 2>"$BUILD/front-probe.log" ||
		skip "the front's probe does not compile: $(head -n 1 "$BUILD/front-probe.log")"
}

# --- run ---------------------------------------------------------------------
setup_name() {
	case $1 in
	a) echo "Debian liburing, kernel io_uring" ;;
	b) echo "Debian liburing, io_uring blocked (noring)" ;;
	c) echo "drop-in, io_uring blocked (emulated)" ;;
	d) echo "drop-in, kernel io_uring (pass-through)" ;;
	e) echo "drop-in and system-call front, io_uring blocked (emulated)" ;;
	f) echo "liburing.a (static) and system-call front, io_uring blocked (emulated)" ;;
	esac
}

# The command prefix of a setup (LD_LIBRARY_PATH is set by the caller).
prefix() {
	case $1 in a|d) echo "" ;; b|c|e|f) echo "$NORING" ;; esac
}

libpath() {
	case $1 in a|b) echo "" ;; c|d|e|f) echo "$DROPIN" ;; esac
}

# The folder of a setup's programs.
binof() {
	case $1 in f) echo "$SBIN" ;; *) echo "$BIN" ;; esac
}

# setup_env SETUP: the environment assignments besides LD_LIBRARY_PATH (for
# env): dropin_env's, and for e and f both libraries of the front in LD_PRELOAD
# (after the ASan runtime of a sanitizer build, which must come first).
setup_env() {
	local lp rt rest
	lp=$(libpath "$1")
	[ -n "$lp" ] || return 0
	case $1 in
	e|f) rt=$(dropin_env "$lp" | tr ' ' '\n' | sed -n 's/^LD_PRELOAD=//p')
	     rest=$(dropin_env "$lp" | tr ' ' '\n' | grep -v '^LD_PRELOAD=' | tr '\n' ' ')
	     echo "LD_PRELOAD=${rt:+$rt:}$DROPIN/liburing.so.2:$DROPIN/liburfs_syscalls.so $rest" ;;
	*) dropin_env "$lp" ;;
	esac
}

# Checks that a setup is what it says before any test runs in it.
check_setup() {
	local s=$1 probe=$BIN/nop.t got
	[ -x "$probe" ] || skip "nop.t is not built: cannot check setup $s"
	got=$(LD_LIBRARY_PATH=$(libpath "$s") ldd "$probe" | awk '/liburing\.so\.2/ { print $3 }')
	case $s in
	a|b) [ -n "$got" ] && [ "$(readlink -f "$got")" != "$(readlink -f "$DROPIN/liburing.so.2" 2>/dev/null)" ] ||
	         skip "setup $s: tests load '$got', not Debian's liburing.so.2" ;;
	c|d|e) [ -f "$DROPIN/liburing.so.2" ] || skip "setup $s: no drop-in at $DROPIN/liburing.so.2 (build it: make)"
	     [ "$(readlink -f "$got")" = "$(readlink -f "$DROPIN/liburing.so.2")" ] ||
	         skip "setup $s: tests load '$got', not the drop-in $DROPIN/liburing.so.2" ;;
	f)   [ -x "$SBIN/nop.t" ] || skip "setup f: the static nop.t is not built"
	     got=$(LD_LIBRARY_PATH=$DROPIN ldd "$SBIN/nop.t" | awk '/liburing\.so/ { print $3 }')
	     [ -z "$got" ] || skip "setup f: $SBIN/nop.t loads '$got': not linked with liburing.a" ;;
	esac
	case $s in
	b|c|e|f) [ -x "$NORING" ] || skip "setup $s: no noring launcher at $NORING (build it: make)" ;;
	esac
	case $s in
	e|f) [ -f "$DROPIN/liburfs_syscalls.so" ] ||
	         skip "setup $s: no system-call front at $DROPIN/liburfs_syscalls.so (build it: make)"
	     # a raw io_uring_setup and mmap, under noring, through the front: the
	     # kernel answers EPERM there, so "front ok" is the front's work
	     got=$(env LD_LIBRARY_PATH="$DROPIN" $(setup_env "$s") "$NORING" "$BUILD/front-probe" 2>&1)
	     # (both libraries are there: a front that does not serve is a failure, not a skip)
	     case $got in "front ok"*) ;; *) echo "FAIL: setup $s: a raw io_uring_setup does not go through the front: $got"; exit 1 ;; esac ;;
	esac
	return 0
}

. "$(dirname "$0")/dropin-env.sh"

# run_one SETUP NAME: runs BIN/NAME(.t) in a scratch folder, appends its line to
# results/SETUP.tsv and echoes the result.
run_one() {
	local s=$1 n=$2 bin exe pre lp env rc res start secs dir last log
	bin=$(binof "$s"); exe=$bin/$2.t
	[ -x "$exe" ] || exe=$bin/$2
	pre=$(prefix "$s"); lp=$(libpath "$s"); env=$(setup_env "$s")
	log=$LOGS/$s/$n.log
	dir=$(mktemp -d "${TMPDIR:-/tmp}/lut.$(basename "$n").XXXXXX") || { echo "FAIL(mktemp)"; return; }
	# liburing's runner runs tests in the folder that holds them: timeout.c execs ./exec-target.t.
	ln -s "$bin/exec-target.t" "$dir/exec-target.t"
	start=$(date +%s)
	case $n in
	examples/*) example "$n" "$exe" "$pre" "$lp" "$env" "$dir" >"$log" 2>&1 ;;
	*) (cd "$dir" && env LD_LIBRARY_PATH="$lp" $env timeout -s INT -k 10 "$TLIMIT" $pre "$exe") >"$log" 2>&1 </dev/null ;;
	esac
	rc=$?
	secs=$(( $(date +%s) - start ))
	rm -rf "$dir"
	case $rc in
	0) res=PASS ;;
	77) res=SKIP ;;
	124|137) res=TIMEOUT ;;
	13[0-9]|14[0-9]|15[0-9]) res="CRASH(sig $((rc - 128)))" ;;
	*) res="FAIL($rc)" ;;
	esac
	# e, f: a program (or a child of it) whose front did not start did not
	# run on the front, whatever its status
	case $s in e|f) grep -q "the system-call front is off" "$log" && res="FAIL(front off)" ;; esac
	last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | tr '\t|' '  ' | cut -c 1-160)
	printf '%s\t%s\t%s\t%s\n' "$n" "$res" "$secs" "$last" >> "$RES/$s.tsv"
	echo "$res"
}

# The examples read or copy a file; what they give back is checked.
example() {
	local n=${1#examples/} exe=$2 pre=$3 lp=$4 env=$5 dir=$6 out
	cd "$dir" || return 1
	case $n in
	io_uring-test)
		# Reads the first 4 blocks of 4 KiB (QD 4) with O_DIRECT, prints the count.
		head -c 16384 /dev/urandom > in || return 1
		out=$(env LD_LIBRARY_PATH="$lp" $env timeout -s INT -k 10 "$TLIMIT" $pre "$exe" in) || return $?
		echo "$out"
		[ "$out" = "Submitted=4, completed=4, bytes=16384" ] ||
			{ echo "io_uring-test: did not read the 16384-byte file"; return 1; } ;;
	*)
		# Copy a file of 3 MiB and an odd tail byte for byte.
		head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom > in || return 1
		env LD_LIBRARY_PATH="$lp" $env timeout -s INT -k 10 "$TLIMIT" $pre "$exe" in out || return $?
		cmp in out || { echo "$n: the copy differs from the original"; return 1; }
		echo "$n: the copy of $(stat -c %s in) bytes is identical (cmp)" ;;
	esac
}

fetch
build
[ "$BUILD_ONLY" = 1 ] && { echo "liburing-tests: built $(ls "$BIN"/*.t | wc -l) tests and $(ls "$BIN"/examples | wc -l) examples in $BIN ($(wc -l < "$BUILD/unbuilt.txt") do not build: $BUILD/unbuilt.txt)"; exit 0; }

if [ $# -gt 0 ]; then
	TESTS="$*"
else
	# liburing's tests (exec-target.t too: liburing's runner runs it), then the
	# examples that check what they do: the others are a server and benchmarks.
	TESTS="$(cd "$BIN" && ls -- *.t | sed 's/\.t$//' | sort) examples/io_uring-test examples/io_uring-cp examples/link-cp"
fi

# Where results go: a check run keeps them apart from the full runs the table is made of.
RES=$BUILD/results; LOGS=$BUILD/logs
[ -n "$CHECK" ] && { RES=$BUILD/check/results; LOGS=$BUILD/check/logs; }

# result SETUP NAME -> PASS/SKIP/FAIL(..) or "-" when not run; lastline: its last line
result() { awk -F '\t' -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print "-" }' "$RES/$1.tsv" 2>/dev/null || echo -; }
lastline() { awk -F '\t' -v n="$2" '$1 == n { print $4 }' "$RES/$1.tsv" 2>/dev/null; }

expected=""
if [ -n "$CHECK" ]; then
	[ -f "$CHECK" ] || { echo "liburing-tests: no list $CHECK"; exit 1; }
	expected=$(sed 's/#.*//' "$CHECK" | awk 'NF { print $1 }' | sort -u)
	# tagged TAG: the names whose tags (the words after the name, before #) hold !TAG,
	# each with its reason (the comment), one a line: "NAME why"
	tagged() { awk -v t="!$1" '{ c = $0; sub(/^[^#]*#[[:space:]]*/, "", c); if (c == $0) c = ""
		sub(/#.*/, ""); for (i = 2; i <= NF; i++) if ($i == t) { print $1, c; break } }' "$CHECK"; }
	# "NAME !asan # why": not checked against a sanitizer build of the drop-in, where
	# the ASan runtime preloaded into the test changes what the test itself does.
	# Each is a counted part skip (SKIP-PART), with the reason.
	if [ -n "$(dropin_env "$DROPIN")" ]; then
		tagged asan | while read -r n why; do
			echo "SKIP-PART: asan: $n: $why"
		done
		notasan=$(tagged asan | awk '{ print $1 }')
		expected=$(echo "$expected" | grep -vxF "$notasan")
		TESTS=$(echo "$TESTS" | tr ' ' '\n' | grep -vxF "$notasan")
	fi
	# "NAME !raw # why": a program that makes io_uring system calls itself (syzkaller
	# reproducers and some tests, through liburing's own syscall.h): they reach the
	# emulated ring only through the system-call front, so the check runs and requires
	# it in setups e and f only (in c it cannot pass, in d it checks the kernel alone);
	# when neither runs it is a counted part skip, with the reason. A full run runs it
	# everywhere.
	raw=$(tagged raw | awk '{ print $1 }')
	case $SETUPS in
	*[ef]*) ;;
	*) tagged raw | while read -r n why; do
		echo "SKIP-PART: raw: $n: $why (checked in setups e and f only)"
	   done ;;
	esac
	# "NAME !front # why", with -F: in setups e and f the check runs only the tests
	# tagged so (the paths of the front that setup c does not take), not every test
	# again: make test's choice (docs/TESTING-DROPIN.md).
	front=$(tagged front | awk '{ print $1 }')
	# "NAME !notfront # why": passes in c and d but not through the front (why: a
	# kernel feature the emulation lacks, which the front's timing exposes): not
	# checked in e and f; a counted part skip there, with the reason.
	notfront=$(tagged notfront | awk '{ print $1 }')
	case $SETUPS in *[ef]*) tagged notfront | while read -r n why; do
		echo "SKIP-PART: front: $n: $why (not checked in setups e and f)"
	done ;; esac
	[ "$FRONT_ONLY" = 1 ] && case $SETUPS in *[ef]*)
		echo "liburing-tests: -F: setups e and f check the $(echo "$front" | grep -c .) tests tagged !front only"
		# a !raw test that is not !front is then checked nowhere: said, counted
		tagged raw | while read -r n why; do
			echo "$front" | grep -qx -- "$n" || echo "SKIP-PART: raw: $n: $why (not tagged !front: not checked with -F)"
		done ;; esac
	# Tests named on the command line: only those of the list are checked.
	[ $# -gt 0 ] && expected=$(echo "$expected" | grep -Fx "$(echo "$TESTS" | tr ' ' '\n')")
fi
listed() { echo "$expected" | grep -qx -- "$1"; }
# checked SETUP NAME: true when the check looks at NAME in SETUP (a !raw test: e
# and f only; a !notfront test: not e or f; with -F, in e and f a !front test only)
checked() {
	case $1 in
	e|f) { [ -z "${notfront:-}" ] || ! echo "$notfront" | grep -qx -- "$2"; } &&
	     { [ "$FRONT_ONLY" = 0 ] || echo "$front" | grep -qx -- "$2"; } ;;
	*) [ -z "${raw:-}" ] || ! echo "$raw" | grep -qx -- "$2" ;;
	esac
}

# The programs that take longest (10 to 45 s each on a 2-CPU machine, against 1 s
# for most) start first, so that the parallel lanes end together; the tables
# keep the order of TESTS.
SLOW="pollfree poll-mshot-update a4c0b3decb33 cq-overflow poll-many multicqes_drain 35fa71a030ca 232c93d07b74"
RUN_ORDER="$(for n in $SLOW; do case " $(echo $TESTS) " in *" $n "*) echo "$n" ;; esac; done)
$(echo "$TESTS" | tr ' ' '\n' | grep -vxF "$(echo "$SLOW" | tr ' ' '\n')")"

mkdir -p "$RES"
done_setups=""; retried=""
[ "$SETUPS" = none ] && SETUPS=""
for s in $(echo "$SETUPS" | fold -w 1); do
	check_setup "$s"
	mkdir -p "$LOGS/$s/examples"
	: > "$RES/$s.tsv"
	echo "== setup $s: $(setup_name "$s") ($(echo "$TESTS" | wc -w) programs, ${TLIMIT}s each, $JOBS at a time)"
	for n in $RUN_ORDER; do
		lim=$TLIMIT; quiet=0
		[ -n "$CHECK" ] && ! checked "$s" "$n" && continue
		if [ -n "$CHECK" ] && ! listed "$n"; then
			# Unlisted, in check mode: looked at only to report a new pass, with
			# the short limit, and in a later setup only if it passed the earlier.
			ok=1
			for p in $done_setups; do [ "$(result "$p" "$n")" = PASS ] || ok=0; done
			[ "$ok" = 1 ] || continue
			lim=$TNEW; quiet=1
		fi
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
		# Each program in the background: its line goes to SETUP.tsv (one
		# append), a listed one that does not pass is printed.
		( r=$(TLIMIT=$lim run_one "$s" "$n")
		  [ "$quiet" = 0 ] && [ "$r" != PASS ] && printf '  %-28s %s\n' "$n" "$r" ) &
	done
	wait
	# Check mode: a listed program that failed, timed out or crashed beside the
	# others runs once more, alone. A program whose checks are bound to time
	# (timeout-new measures its own wait: more than 1.5x and it fails) can lose
	# on a loaded machine; a real failure fails twice. The second result is the
	# one that counts, and every program run again is named with both results.
	if [ -n "$CHECK" ]; then
		for n in $(awk -F '\t' '$2 != "PASS" && $2 != "SKIP" { print $1 }' "$RES/$s.tsv"); do
			listed "$n" || continue
			first=$(result "$s" "$n")
			awk -F '\t' -v n="$n" '$1 != n' "$RES/$s.tsv" > "$RES/$s.tsv.retry" && mv "$RES/$s.tsv.retry" "$RES/$s.tsv"
			r=$(run_one "$s" "$n")
			printf '  %-28s %s beside the others, %s when run again alone\n' "$n" "$first" "$r"
			retried="$retried $s:$n"
		done
	fi
	# The table keeps the order of TESTS, whatever order the programs ended in.
	echo "$TESTS" | tr ' ' '\n' | awk -F '\t' 'NR == FNR { if (NF) o[$1] = NR; next } { print o[$1] "\t" $0 }' - "$RES/$s.tsv" |
		sort -n -k 1,1 | cut -f 2- > "$RES/$s.tsv.sorted" && mv "$RES/$s.tsv.sorted" "$RES/$s.tsv"
	done_setups="$done_setups $s"
	echo "   $(awk -F '\t' '$2 == "PASS"' "$RES/$s.tsv" | wc -l) passed," \
	     "$(awk -F '\t' '$2 == "SKIP"' "$RES/$s.tsv" | wc -l) skipped," \
	     "$(awk -F '\t' '$2 != "PASS" && $2 != "SKIP"' "$RES/$s.tsv" | wc -l) failed (of those run)"
done

# The table of every test and the counts of issue 9, as markdown.
markdown() {
	local R=$RES
	echo "# liburing 2.3's tests and examples against the drop-in"
	echo
	echo "Generated by \`scripts/liburing-tests.sh -m\` on $(date -u +%Y-%m-%d), kernel $(uname -r),"
	echo "Debian liburing $(dpkg-query -W -f='${Version}' liburing2 2>/dev/null), project commit" \
	     "$(git -C "$(dirname "$0")" log -1 --format=%h 2>/dev/null), ${TLIMIT} s per test."
	echo "Setups: **a** $(setup_name a); **b** $(setup_name b); **c** $(setup_name c); **d** $(setup_name d)."
	echo
	awk -F '\t' -v unbuilt="$(wc -l < "$BUILD/unbuilt.txt")" '
		FILENAME ~ /a.tsv$/ { a[$1] = $2; order[++n] = $1; next }
		FILENAME ~ /b.tsv$/ { b[$1] = $2; next }
		FILENAME ~ /c.tsv$/ { c[$1] = $2; next }
		FILENAME ~ /d.tsv$/ { d[$1] = $2; next }
		END {
			for (i = 1; i <= n; i++) {
				t = order[i]
				if (t ~ /^examples\//) { ex++; if (c[t] == "PASS") exc++; if (d[t] == "PASS") exd++; continue }
				tests++
				if (a[t] == "PASS") { pa++; if (b[t] == "PASS") pab++; else { ring++; if (c[t] == "PASS") rc++; if (d[t] == "PASS") rd++; if (c[t] == "PASS" && d[t] == "PASS") rcd++ } }
				if (c[t] == "PASS") pc++
				if (d[t] == "PASS") pd++
				if (c[t] ~ /TIMEOUT|CRASH/) hc = hc " " t (a[t] ~ /TIMEOUT|CRASH/ ? " (also in a)" : "")
				if (d[t] ~ /TIMEOUT|CRASH/) hd = hd " " t (a[t] ~ /TIMEOUT|CRASH/ ? " (also in a)" : "")
			}
			printf "| count | tests |\n| --- | --- |\n"
			printf "| built against Debian liburing2'\''s exports | %d (%d more do not link: below) |\n", tests, unbuilt
			printf "| pass in a (kernel io_uring) | %d |\n", pa
			printf "| ... that also pass in b, with io_uring blocked (they skip their work) | %d |\n", pab
			printf "| ... so really exercise a ring | **%d** |\n", ring
			printf "| of those, pass in c (emulated) | **%d** |\n", rc
			printf "| of those, pass in d (pass-through) | %d |\n", rd
			printf "| of those, pass in c and d | %d |\n", rcd
			printf "| pass in c, all tests | %d |\n", pc
			printf "| pass in d, all tests | %d |\n", pd
			printf "| examples (copy/read checked with cmp) passing in c / d | %d / %d of %d |\n", exc, exd, ex
			printf "| hang (timeout) or crash in c | %s |\n", hc == "" ? "none" : hc
			printf "| hang (timeout) or crash in d | %s |\n", hd == "" ? "none" : hd
		}' "$R/a.tsv" "$R/b.tsv" "$R/c.tsv" "$R/d.tsv"
	echo
	echo "Every program: PASS (exit 0), SKIP (exit 77), FAIL(exit status), TIMEOUT, CRASH(signal)."
	echo "The note is the last line the program printed: in c when it does not pass there, else in d, else in a."
	echo
	echo "| test | a | b | c | d | note |"
	echo "| --- | --- | --- | --- | --- | --- |"
	awk -F '\t' '
		FILENAME ~ /a.tsv$/ { a[$1] = $2; la[$1] = $4; order[++n] = $1; next }
		FILENAME ~ /b.tsv$/ { b[$1] = $2; next }
		FILENAME ~ /c.tsv$/ { c[$1] = $2; lc[$1] = $4; next }
		FILENAME ~ /d.tsv$/ { d[$1] = $2; ld[$1] = $4; next }
		END {
			for (i = 1; i <= n; i++) {
				t = order[i]
				note = c[t] != "PASS" ? lc[t] : d[t] != "PASS" ? ld[t] : a[t] != "PASS" ? la[t] : ""
				gsub(/\|/, "\\|", note)
				printf "| %s | %s | %s | %s | %s | %s |\n", t, a[t], b[t], c[t], d[t], note
			}
		}' "$R/a.tsv" "$R/b.tsv" "$R/c.tsv" "$R/d.tsv"
	echo
	echo "Not built (they call functions Debian's liburing2 does not export):"
	echo
	sed 's/^\([^ ]*\)\.t \(.*\)$/- \1: \2/' "$BUILD/unbuilt.txt"
}

rc=0
if [ -n "$CHECK" ]; then
	nexp=$(echo "$expected" | grep -c .)
	bad=""; new=""; okall=0
	for n in $expected; do
		ok=1
		nsetups=0
		for s in $(echo "$SETUPS" | fold -w 1); do
			checked "$s" "$n" || continue
			nsetups=$((nsetups + 1))
			r=$(result "$s" "$n")
			if [ "$r" != PASS ]; then
				ok=0; bad="$bad $n"
				echo "FAIL: $n is listed in $(basename "$CHECK") but gives $r in setup $s ($(setup_name "$s")): $(lastline "$s" "$n")"
			fi
		done
		[ "$nsetups" = 0 ] && { nexp=$((nexp - 1)); continue; }
		[ "$ok" = 1 ] && okall=$((okall + 1))
	done
	for n in $TESTS; do
		listed "$n" && continue
		all=1
		for s in $(echo "$SETUPS" | fold -w 1); do [ "$(result "$s" "$n")" = PASS ] || all=0; done
		[ "$all" = 1 ] && new="$new $n"
	done
	[ -n "$new" ] && echo "NEW: passing in setups $SETUPS but not listed in $(basename "$CHECK") (add them):$new"
	echo "SUMMARY: liburing 2.3 tests: $okall of $nexp listed pass in setups $SETUPS$( [ -n "$new" ] && echo ", $(echo $new | wc -w) more pass unlisted:$new")"
	[ -n "$retried" ] && echo "SUMMARY: run again alone after a failure beside the others (setup:test):$retried"
	[ -n "$bad" ] && rc=1
fi

if [ -n "$MD" ]; then
	for s in a b c d; do [ -f "$RES/$s.tsv" ] || { echo "liburing-tests: -m needs all four setups run"; exit 1; }; done
	markdown > "$MD" || exit 1
	echo "liburing-tests: wrote $MD"
fi
exit $rc
