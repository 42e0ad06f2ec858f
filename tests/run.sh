#!/bin/sh
# tests/run.sh - runs every test program under $O/obj/t, each in a fresh
# temporary directory, with a time limit. A test exits 0 (pass), 77 (skip) or
# anything else (fail). Ends with the line "N passed, N failed, N skipped" and
# exits non-zero if any test failed.
#
#   sh tests/run.sh [NAME...]      (NAME: test_foo, to run a subset)
# Environment: O (build directory, default .), TEST_TIMEOUT (seconds, 300),
# TEST_WRAP (a command to run each test under, e.g. "valgrind -q --error-exitcode=1"),
# TEST_UR_SERVER (the server the library starts, e.g. scripts/valgrind-server.sh).
O=${O:-.}
TOP=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "$O" && pwd)
TIMEOUT=${TEST_TIMEOUT:-300}
export UR_SERVER="${TEST_UR_SERVER:-$BIN/simplefs_server}"
export UR_BIN="$BIN"
export UR_SRCDIR="$TOP"
unset SFS_IMAGE

pass=0; fail=0; skip=0; failed=""
if [ $# -gt 0 ]; then
	list=""; for n in "$@"; do list="$list $BIN/obj/t/$n"; done
else
	list=$(ls "$BIN"/obj/t/test_* 2>/dev/null | sort)
fi
for t in $list; do
	name=$(basename "$t")
	if [ ! -x "$t" ]; then   # a test asked for by name that is not built is a failure
		echo "FAIL $name: $t is not built"; fail=$((fail + 1)); failed="$failed $name"; continue
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/urtest.$name.XXXXXX")
	start=$(date +%s)
	(cd "$dir" && timeout -k 10 "$TIMEOUT" $TEST_WRAP "$t") > "$dir.log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0)  echo "PASS $name (${secs}s)"; pass=$((pass + 1)) ;;
	77) echo "SKIP $name: $(tail -n 1 "$dir.log")"; skip=$((skip + 1)) ;;
	*)  echo "FAIL $name (exit $rc, ${secs}s)"; sed 's/^/    /' "$dir.log" | tail -n 40
	    fail=$((fail + 1)); failed="$failed $name" ;;
	esac
	[ $rc -eq 0 ] && grep '^SUMMARY: ' "$dir.log" | sed 's/^/    /'   # what a passing test counted
	rm -rf "$dir" "$dir.log"
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ $((pass + skip)) -gt 0 ]
