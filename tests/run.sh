#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/run.sh - runs every test program under $O/obj/t, each in a fresh
# temporary directory, with a time limit. A test exits 0 (pass), 77 (skip) or
# anything else (fail). A passing test may have parts it could not run (no
# io_uring, no O_DIRECT here): it prints one line "SKIP-PART: need: part: why"
# for each (tests/parts.h), and each counts as a skip, shown under the test.
# Ends with the five slowest tests ("slowest: test_a 40s, ...") and the line
# "N passed, N failed, N skipped" (skips count tests and parts), and exits
# non-zero if any test failed.
#
#   sh tests/run.sh [NAME...]      (NAME: test_foo, to run a subset)
# Environment: O (build directory, default .), TEST_JOBS (tests at a time, 2 where
# there are 2 CPUs, else 1; see below), TEST_TIMEOUT (seconds, 300; a
# test whose source says "Time limit: N s" gets N when that is more),
# TEST_WRAP (a command to run each test under, e.g. "valgrind -q --error-exitcode=1"),
# TEST_UR_SERVER (the server the library starts, e.g. scripts/valgrind-server.sh),
# TEST_PARTS_LOG (a file that gets "test: PART: ..." and "test: SKIP-PART: ..."
# for every part reported, e.g. for CI to count the io_uring parts).
# With VG_SERVER set (the servers run under scripts/valgrind-server.sh), each
# test's servers log to $VG_LOGDIR/TEST/ (VG_LOGDIR: a temporary directory if
# unset) and a test whose servers logged any valgrind error fails.
# When a test ends (pass, fail or time limit) nothing it started may outlive it:
# reap (below) kills what is left, found by the URTEST_RUN=DIR the test runs
# with (inherited through fork, exec, setsid and daemonizing) or by a working
# directory or open file in its temporary directory or its log (found though a
# process dropped the variable); those are given REAP_GRACE seconds (5; 30 with
# VG_SERVER, whose servers write their reports as they exit) to leave by
# themselves, then SIGTERM, then SIGKILL.
# A test writes only in its own temporary directory: where the source tree is a
# git checkout (and the temporary directories are outside it), a file that
# appears in the tree during the run, untracked and not ignored (git ls-files
# -o --exclude-standard, compared with the list at the start), fails the test
# that ended next (exit 97; the tests running beside it are named too) with a
# line "left in the source tree: FILE"; the file is left.
O=${O:-.}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$O" && pwd)
TIMEOUT=${TEST_TIMEOUT:-300}
export UR_SERVER="${TEST_UR_SERVER:-$BIN/simplefs_server}"
export UR_BIN="$BIN"
export UR_SRCDIR="$TOP"
unset SFS_IMAGE

if [ -n "$VG_SERVER" ]; then
	VG_BASE=${VG_LOGDIR:-$(mktemp -d "${TMPDIR:-/tmp}/urvg.XXXXXX")}
	echo "server valgrind logs: $VG_BASE/TEST/server.PID.log"
fi

# procs DIR: the processes of the test run in DIR (see above), one pid a line
procs() {
	{ grep -lzxF "URTEST_RUN=$1" /proc/[0-9]*/environ
	  find /proc/[0-9]*/cwd /proc/[0-9]*/fd -maxdepth 1 \( -lname "$1" -o -lname "$1/*" \
		-o -lname "$1 (deleted)" -o -lname "$1.log" -o -lname "$1.log (deleted)" \) -print
	} 2>/dev/null | sed -n 's#^/proc/\([0-9]*\)/.*#\1#p' | sort -u
}
# reap DIR: waits REAP_GRACE seconds for the processes of the test run in DIR
# to leave, then ends them; prints what it had to end
reap() {
	i=0; sig=""
	while p=$(procs "$1"); [ -n "$p" ]; do
		i=$((i + 1))
		if [ -z "$sig" ] && [ $i -ge $((REAP_GRACE * 5)) ]; then
			echo "    left behind by $name, ended: $(ps -o pid=,args= -p "$(echo $p | tr ' ' ,)" | tr -s ' \n' ' ' | sed 's/^ //')"
			sig=TERM
		elif [ "$sig" = TERM ] && [ $i -ge $((REAP_GRACE * 5 + 10)) ]; then
			sig=KILL
		elif [ $i -gt $((REAP_GRACE * 5 + 100)) ]; then
			echo "    cannot end what $name left: $p"; return
		fi
		[ -n "$sig" ] && kill -s $sig $p 2>/dev/null
		sleep 0.2
	done
}
[ -n "$VG_SERVER" ] && REAP_GRACE=${REAP_GRACE:-30}
REAP_GRACE=${REAP_GRACE:-5}
# Tests run TEST_JOBS at a time (default: 2 where there are 2 CPUs or more, else 1).
# A test whose source has a line " * Serial: why" runs alone (it pins threads to
# CPUs, measures its own CPU time or needs two threads to meet in a window); a
# whole run starts with those (see the order below).
# Each test's report is printed whole when it ends.
JOBS=${TEST_JOBS:-$( [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && echo 2 || echo 1)}
case $JOBS in ''|*[!0-9]*|0) echo "run.sh: TEST_JOBS must be a count of 1 or more"; exit 2 ;; esac
running=""   # "DIR:PID" of each test running; ended with the run when it is interrupted
# untracked: the tree's files that git neither tracks nor ignores, sorted
untracked() { git -C "$TOP" ls-files -o --exclude-standard 2>/dev/null | sort; }
strays=""   # a file with that list at the start (and what was found since), when the tree is checked
if [ -e "$TOP/.git" ] && command -v git >/dev/null 2>&1; then
	case "$(cd "${TMPDIR:-/tmp}" && pwd -P)/" in
	"$(cd "$TOP" && pwd -P)/"*) ;;   # the tests' own directories would be in the tree
	*) strays=$(mktemp "${TMPDIR:-/tmp}/urtest.strays.XXXXXX"); untracked > "$strays" ;;
	esac
fi
cleanup() {
	for r in $running; do kill "${r#*:}" 2>/dev/null; done
	for r in $running; do reap "${r%:*}"; rm -rf "${r%:*}" "${r%:*}".*; done
	[ -z "$strays" ] || rm -f "$strays"
}
trap 'cleanup; exit 129' HUP
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup >/dev/null 2>&1; exit 141' PIPE

# one T NAME DIR: runs test T in DIR; writes its report to DIR.out, then its result to
# DIR.res ("pass PARTS_SKIPPED", "skip" or "fail") and its seconds to DIR.secs
one() {
	t=$1; name=$2; dir=$3
	start=$(date +%s)
	if [ -n "$VG_SERVER" ]; then
		export VG_LOGDIR="$VG_BASE/$name"
		mkdir -p "$VG_LOGDIR"
	fi
	limit=$(sed -n 's/.*Time limit: \([0-9][0-9]*\) s.*/\1/p' "$TOP/tests/$name.c" 2>/dev/null | head -n 1)
	[ -n "$limit" ] && [ "$limit" -gt "$TIMEOUT" ] || limit=$TIMEOUT
	(cd "$dir" && export URTEST_RUN="$dir" && timeout -k 10 "$limit" $TEST_WRAP "$t") > "$dir.log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	left=$(reap "$dir")
	if [ -n "$VG_SERVER" ]; then   # a server's valgrind errors fail its test
		for f in "$VG_LOGDIR"/server.*.log; do
			[ -s "$f" ] || continue
			echo "valgrind found errors in simplefs_server ($f):" >> "$dir.log"
			cat "$f" >> "$dir.log"
			[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] && rc=98
		done
	fi
	if [ -n "$TEST_PARTS_LOG" ]; then
		grep -E '^(SKIP-)?PART: ' "$dir.log" | sed "s/^/$name: /" >> "$TEST_PARTS_LOG"
	fi
	{
	case $rc in
	0)  parts=$(grep -c '^SKIP-PART: ' "$dir.log")
	    if [ "$parts" -gt 0 ]; then
		echo "PASS $name (${secs}s), $parts part(s) skipped:"
		grep '^SKIP-PART: ' "$dir.log" | sed 's/^/    /'
	    else
		echo "PASS $name (${secs}s)"
	    fi
	    res="pass $parts" ;;
	77) echo "SKIP $name: $(tail -n 1 "$dir.log")"; res=skip ;;
	*)  echo "FAIL $name (exit $rc, ${secs}s)"; sed 's/^/    /' "$dir.log" | tail -n 40
	    res=fail ;;
	esac
	[ $rc -eq 0 ] && grep '^SUMMARY: ' "$dir.log" | sed 's/^/    /'   # what a passing test counted
	[ -n "$left" ] && echo "$left"
	} > "$dir.out"
	echo "$secs" > "$dir.secs"
	echo "$res" > "$dir.res"
}

# name DIR: the test a directory was made for
name() { basename "$1" | sed 's/^urtest\.\(.*\)\.[^.]*$/\1/'; }
# collect DIR: prints an ended test's report and counts its result; a file that
# appeared in the source tree since the last look fails it
collect() {
	d=$1; n=$(name "$d")
	read -r res parts < "$d.res"
	new=""
	if [ -n "$strays" ]; then
		new=$(untracked | comm -13 "$strays" -)
		[ -z "$new" ] || untracked > "$strays"   # each file is named once
	fi
	if [ -n "$new" ] && [ "$res" != fail ]; then
		echo "FAIL $n (exit 97, $(cat "$d.secs")s)"; res=fail
	else
		cat "$d.out"
	fi
	if [ -n "$new" ]; then
		echo "$new" | sed 's/^/    left in the source tree: /'
		beside=$(for r in $running; do [ "${r%:*}" = "$d" ] || name "${r%:*}"; done | tr '\n' ' ')
		[ -z "$beside" ] || echo "    (tests running beside it: ${beside% })"
	fi
	case $res in
	pass) pass=$((pass + 1)); skip=$((skip + parts)) ;;
	skip) skip=$((skip + 1)) ;;
	*)    fail=$((fail + 1)); failed="$failed $n" ;;
	esac
	times="$times$(cat "$d.secs") $n
"
	rm -rf "$d" "$d.log" "$d.out" "$d.res" "$d.secs"
}
# reaped: collects every test that has ended; running keeps the others
reaped() {
	still=""
	for r in $running; do
		if [ -e "${r%:*}.res" ]; then wait "${r#*:}" 2>/dev/null; collect "${r%:*}"; else still="$still $r"; fi
	done
	running=$still
}
# wait_below N: waits until fewer than N tests run
wait_below() {
	while reaped; [ "$(echo $running | wc -w)" -ge "$1" ]; do sleep 0.1; done
}

pass=0; fail=0; skip=0; failed=""; times=""   # times: "SECONDS NAME" of each test run
if [ $# -gt 0 ]; then
	list=""; for n in "$@"; do list="$list $BIN/obj/t/$n"; done
else
	# The order of a whole run: the Serial tests first, one at a time, on a machine
	# nothing else of the run loads yet; then the tests whose source gives them a
	# time limit over the default, longest first, so that the longest is never
	# the one left running alone at the end; then the others by name.
	list=$(for t in "$BIN"/obj/t/test_*; do
		[ -e "$t" ] || continue
		src=$TOP/tests/$(basename "$t").c
		if grep -q '^ \* Serial: ' "$src" 2>/dev/null; then key=0
		else key=$(sed -n 's/.*Time limit: \([0-9][0-9]*\) s.*/\1/p' "$src" 2>/dev/null | head -n 1)
		     [ -n "$key" ] && [ "$key" -gt "$TIMEOUT" ] && key=$((1000000 - key)) || key=1000000
		fi
		echo "$key $(basename "$t") $t"
	done | sort -k 1,1n -k 2,2 | cut -d ' ' -f 3-)
fi
for t in $list; do
	name=$(basename "$t")
	if [ ! -x "$t" ]; then   # a test asked for by name that is not built is a failure
		echo "FAIL $name: $t is not built"; fail=$((fail + 1)); failed="$failed $name"; continue
	fi
	serial=0
	grep -q '^ \* Serial: ' "$TOP/tests/$name.c" 2>/dev/null && serial=1
	if [ "$serial" = 1 ]; then wait_below 1; else wait_below "$JOBS"; fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/urtest.$name.XXXXXX")
	one "$t" "$name" "$dir" &
	running="$running $dir:$!"
	[ "$serial" = 1 ] && wait_below 1
done
wait_below 1
[ -z "$strays" ] || rm -f "$strays"
[ -n "$failed" ] && echo "failed:$failed"
[ -n "$times" ] && echo "slowest: $(printf '%s' "$times" | sort -rn | head -n 5 | sed 's/^\([0-9]*\) \(.*\)/\2 \1s/' | tr '\n' ',' | sed 's/,$//;s/,/, /g')"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ $((pass + skip)) -gt 0 ]
