#!/bin/sh
# scripts/mutate.sh - mutation testing: plants each mutant of tests/mutants/*.mut (one
# deliberate bug that breaks one promise of the docs) in a scratch copy of the tree, rebuilds
# it incrementally, runs the tests the mutant names, and demands that they fail (the mutant
# is "killed"). Ends with "mutants: N killed (N weak), N survived" (and the broken and pending
# counts) and exits non-zero if any mutant survived or no longer applies.
#
#   sh scripts/mutate.sh [NAME...]      (NAME: a mutant's file name without .mut)
#   sh scripts/mutate.sh --changed      only the mutants that changed since they were all last
#                                       killed (below); every other mutant is still checked to apply
# The full set takes most of an hour on a 2-CPU machine. When every mutant of a full or --changed
# run is killed and the tree is a clean checkout, the run says so and, with MUTATE_RECORD=1, writes
# the commit into tests/mutants/KILLED-AT (commit that file). --changed then runs a mutant only when
# its .mut, its file:, or one of its tests (tests/NAME.c, or a file under tests/ or scripts/ that the
# test names, such as testutil.h or a script it runs, followed through the headers) differs from that
# commit, committed or not. CI runs --changed under MUTATE_BUDGET.
# Environment: MUTATE_ALL=1 runs the whole suite per mutant instead of the named tests;
# MUTATE_BUDGET (seconds, default none): no mutant is started after it is spent, and those left
# unrun are listed and fail the run (a run that cannot fit must be made in full and recorded);
# MUTATE_LIST=1 prints the names of the mutants the run would run and runs none;
# MUTATE_TIMEOUT (seconds per test, default 120); MUTATE_KEEP=1 keeps the scratch tree;
# MUTATE_TRIES (default 3): a mutant whose tests pass is run again, up to this many runs in all,
# since some bugs show only when threads meet in a certain order; one that is killed only on a
# later run is a WEAK kill, printed as such and listed at the end, so its test gets hardened
# (tests/test_uring.h's tu_solo_begin holds the emulation's other threads off, for one).
# The tests run through tests/run.sh, which ends whatever a test left running (a mutant's
# hung children, its servers) when the test ends, so none outlives the run.
#
# A mutant file (tests/mutants/NAME.mut; one file each, so branches add them without
# conflicts) holds header lines, then the original text and its replacement:
#
#   file: src/server/serve.c            the file to mutate
#   promise: one line: the promise this bug breaks (where the docs make it)
#   tests: test_ur_ops test_ur_hostile  tests expected to kill it (each must exist)
#   pending: why                        optional: the killing test is not here yet; the
#                                       original text is still checked, the mutant not run
#   timeout: 15                         optional: seconds per test for this mutant (one
#                                       that kills by making a test hang)
#   @@ original
#   ...lines that must occur exactly once in the file...
#   @@ mutant
#   ...the lines that replace them (may be none)...
#
# Must never touch the tree it is run from: it works on a copy (git's tracked and untracked,
# not ignored, files) in a temporary directory. A mutant whose original text occurs zero or
# several times, whose file or tests do not exist, or which does not build, is "broken" and
# fails the run: when code moves, its mutants move with it.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
TIMEOUT=${MUTATE_TIMEOUT:-120}
TRIES=${MUTATE_TRIES:-3}
case $TRIES in ''|*[!0-9]*|0) echo "mutate: MUTATE_TRIES must be a number of runs, 1 or more"; exit 1 ;; esac
start=$(date +%s)

BUDGET=${MUTATE_BUDGET:-0}
case $BUDGET in ''|*[!0-9]*) echo "mutate: MUTATE_BUDGET must be a number of seconds"; exit 1 ;; esac
REC=$TOP/tests/mutants/KILLED-AT
CHANGED=0; complete=1   # complete: the run covers every mutant (full, or --changed), so it may be recorded
[ "${1:-}" = --changed ] && { CHANGED=1; shift; }
if [ $# -gt 0 ]; then
	list=""; for n in "$@"; do list="$list $TOP/tests/mutants/$n.mut"; done; complete=0
else
	list=$(ls "$TOP"/tests/mutants/*.mut 2>/dev/null | sort)
fi
[ -n "$list" ] || { echo "mutate: no mutants in tests/mutants"; exit 1; }
is_git() { git -C "$TOP" rev-parse --verify -q HEAD >/dev/null 2>&1; }

# --changed: the files that differ from the recorded commit (committed, staged, in the work tree,
# or new; a license line or a C comment alone is no difference), then the files under tests/ and scripts/ that
# name a changed one, until nothing is added
touched=""
if [ "$CHANGED" = 1 ]; then
	base=$(sed -n '1s/^\([0-9a-f]\{40\}\)$/\1/p' "$REC" 2>/dev/null)
	{ [ -n "$base" ] && is_git && git -C "$TOP" cat-file -e "$base^{commit}" 2>/dev/null; } || {
		echo "mutate: --changed needs tests/mutants/KILLED-AT to hold a commit of this history"
		echo "mutate: (found: '$(head -c 80 "$REC" 2>/dev/null)'): run the full set (sh scripts/mutate.sh)"; exit 1; }
	# (a change that only adds or removes license lines, SPDX-License-Identifier, changes
	# no behaviour: such a file is not counted as changed)
	touched=$( { git -C "$TOP" diff --numstat -I 'SPDX-License-Identifier: MIT' "$base" -- | cut -f 3-
		     git -C "$TOP" ls-files -o --exclude-standard; } |
		grep -v '^tests/mutants/KILLED-AT$' | sort -u)
	# (nor does a change to a C file's comments alone: gcc strips them, -fpreprocessed runs no
	# directive, and the two texts are compared; a file new or gone since counts as changed)
	bare() { gcc -fpreprocessed -dD -E -P -x c - 2>/dev/null; }
	touched=$(for f in $touched; do
		case $f in *.c|*.h)
			if [ -e "$TOP/$f" ] && git -C "$TOP" cat-file -e "$base:$f" 2>/dev/null &&
			   [ "$(git -C "$TOP" show "$base:$f" | bare | cksum)" = "$(bare < "$TOP/$f" | cksum)" ]; then
				continue
			fi ;;
		esac
		echo "$f"
	done)
	# what a test is made of beyond its .c: the headers it includes (tests/X.h), the scripts it
	# runs (scripts/X.sh) and the libraries it preloads (tests/lib/X.c -> libX.so)
	uses() {
		case $1 in
		tests/mutants/*) ;;
		tests/*.h) b=$(basename "$1"); grep -lE "#include \"([.][.]/)*(tests/)?$b\"" tests/*.h tests/*.c tests/lib/*.c fuzz/*.c ;;
		scripts/*.sh) grep -lF "$1" tests/*.h tests/*.c scripts/*.sh ;;
		tests/lib/*.c) grep -lF "lib$(basename "$1" .c).so" tests/*.h tests/*.c scripts/*.sh ;;
		esac 2>/dev/null
	}
	new=$touched
	while [ -n "$new" ]; do
		new=$(cd "$TOP" && for f in $new; do uses "$f"; done | sort -u | grep -vxF "$(printf '%s\n' $touched)" || true)
		touched=$(printf '%s\n' $touched $new | sort -u)
	done
	echo "mutate: --changed since $base: $(echo $touched | wc -w) file(s) differ or name one that does"
fi
# selected MUTFILE: run it (not --changed, or its .mut, file: or a test of it was touched)
selected() {
	[ "$CHANGED" = 1 ] || return 0
	for f in "tests/mutants/$(basename "$1")" "$(field "$1" file)" $(for t in $(field "$1" tests); do echo "tests/$t.c"; done); do
		printf '%s\n' $touched | grep -qxF "$f" && return 0
	done
	return 1
}

# field FILE NAME: a header line's value
field() { sed -n "/^@@ /q; s/^$2: *//p" "$1" | head -n 1; }
# MUTATE_LIST=1: the names of the mutants this run would run (--changed: the changed ones), and stop
if [ "${MUTATE_LIST:-0}" = 1 ]; then
	for m in $list; do selected "$m" && basename "$m" .mut; done
	exit 0
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/mutate.XXXXXX")
[ "${MUTATE_KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT
(cd "$TOP" && git ls-files -co --exclude-standard -z | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf -) | tar -C "$W" -xf - || { echo "mutate: cannot copy the tree"; exit 1; }
echo "mutate: building a scratch copy in $W"
if ! make -C "$W" -s -j2 all >"$W/build.log" 2>&1; then
	tail -n 30 "$W/build.log"; echo "mutate: the unmutated tree does not build"; exit 1
fi

# apply.pl FILE MUTFILE apply|revert: swaps the original and mutant blocks; exit 3 when the
# text to replace does not occur exactly once (its count on stderr).
cat > "$W/apply.pl" <<'PERL'
my ($file, $mut, $dir) = @ARGV;
open(my $m, '<', $mut) or die "$mut: $!\n";
my ($sec, %blk) = ('', original => '', mutant => '');
while (<$m>) {
	if (/^@@ (original|mutant)\s*$/) { $sec = $1; next; }
	$blk{$sec} .= $_ if $sec;
}
close $m;
my ($from, $to) = $dir eq 'apply' ? ($blk{original}, $blk{mutant}) : ($blk{mutant}, $blk{original});
die "$mut: empty original block\n" if $blk{original} eq '';
open(my $f, '<', $file) or die "$file: $!\n";
my $text = do { local $/; <$f> };
close $f;
my ($n, $pos) = (0, -1);
if ($dir eq 'apply') {
	for (my $i = index($text, $from); $i >= 0; $i = index($text, $from, $i + 1)) { $n++; $pos = $i; }
	if ($n != 1) { print STDERR "$n\n"; exit 3; }
} else {   # the mutant text may be empty or common: put the original back where it was taken
	$pos = $ENV{MUT_POS};
	die "$file: the mutant is not where it was put\n" if substr($text, $pos, length($from)) ne $from;
}
substr($text, $pos, length($from)) = $to;
open($f, '>', $file) or die "$file: $!\n";
print $f $text;
close $f;
print "$pos\n";
PERL

# the parts a passing run of the tests skipped (a skipped part may be what would kill the mutant)
parts_skipped() { grep -h 'SKIP-PART' "$W/pass.log" | sort -u | sed 's/^ */    in a passing run: /'; }

killed=0; survived=0; broken=0; pending=0; bad=""; weak=0; weaklist=""; checked=0; unrun=""
for m in $list; do
	name=$(basename "$m" .mut)
	if [ ! -f "$m" ]; then echo "BROKEN $name: $m does not exist"; broken=$((broken + 1)); bad="$bad $name"; continue; fi
	file=$(field "$m" file); promise=$(field "$m" promise); tests=$(field "$m" tests); pend=$(field "$m" pending)
	tmo=$(field "$m" timeout); tmo=${tmo:-$TIMEOUT}
	why=""
	[ -n "$file" ] && [ -f "$W/$file" ] || why="no such file: '$file'"
	[ -n "$promise" ] || why="${why:-no promise: line}"
	[ -n "$tests" ] || why="${why:-no tests: line}"
	for t in $tests; do
		[ -f "$W/tests/$t.c" ] && [ -x "$W/obj/t/$t" ] || why="${why:-named test $t does not exist}"
	done
	if [ -z "$why" ]; then
		pos=$(perl "$W/apply.pl" "$W/$file" "$m" apply 2>"$W/apply.err")
		rc=$?
		[ $rc -eq 3 ] && why="original text occurs $(cat "$W/apply.err") times in $file (must be once)"
		[ $rc -ne 0 ] && [ $rc -ne 3 ] && why="cannot apply: $(cat "$W/apply.err")"
	fi
	if [ -n "$why" ]; then
		echo "BROKEN $name: $why"; broken=$((broken + 1)); bad="$bad $name"; continue
	fi
	if [ -n "$pend" ]; then   # checked that it still applies; not run
		MUT_POS=$pos perl "$W/apply.pl" "$W/$file" "$m" revert >/dev/null
		echo "PENDING $name: $pend"; pending=$((pending + 1)); continue
	fi
	if ! selected "$m"; then   # --changed: unchanged since it was killed; it applies, that is enough
		MUT_POS=$pos perl "$W/apply.pl" "$W/$file" "$m" revert >/dev/null
		checked=$((checked + 1)); continue
	fi
	if [ "$BUDGET" -gt 0 ] && [ $(( $(date +%s) - start )) -ge "$BUDGET" ]; then
		MUT_POS=$pos perl "$W/apply.pl" "$W/$file" "$m" revert >/dev/null
		unrun="$unrun $name"; continue
	fi
	t0=$(date +%s)
	# the programs every test needs (the Java parts too) and the named tests: not all of them (a library's
	# change would relink every test)
	targets=all
	[ "${MUTATE_ALL:-0}" = 1 ] || targets="runtime java $(for t in $tests; do printf 'obj/t/%s ' "$t"; done)"
	if ! make -C "$W" -s -j2 $targets >"$W/build.log" 2>&1; then
		echo "BROKEN $name: the mutant does not build"; tail -n 10 "$W/build.log" | sed 's/^/    /'
		broken=$((broken + 1)); bad="$bad $name"
	else
		[ "${MUTATE_ALL:-0}" = 1 ] && run="" || run=$tests
		try=1; passed=0
		while (cd "$W" && O="$W" TEST_TIMEOUT=$tmo sh tests/run.sh $run) >"$W/test.log" 2>&1; do
			passed=$try; cp "$W/test.log" "$W/pass.log"
			[ "$try" -ge "$TRIES" ] && break; try=$((try + 1))
		done
		if [ "$passed" -eq "$try" ]; then
			echo "SURVIVED $name ($(( $(date +%s) - t0 ))s, $try run(s)): $promise"
			echo "    tests run: ${run:-all}; mutant of $file:"; sed -n '/^@@ mutant/,$p' "$m" | sed 's/^/    /'
			parts_skipped
			survived=$((survived + 1)); bad="$bad $name"
		else
			by=$(sed -n 's/^FAIL \([^ ]*\).*/ \1/p' "$W/test.log" | tr -d '\n')
			if [ "$passed" -gt 0 ]; then   # a kill that depends on timing: shown, counted, listed
				echo "killed $name ($(( $(date +%s) - t0 ))s) by:$by, WEAK: on run $try, the tests passed $passed time(s) with the bug planted"
				weak=$((weak + 1)); weaklist="$weaklist $name"; parts_skipped
			else
				echo "killed $name ($(( $(date +%s) - t0 ))s) by:$by"
			fi
			killed=$((killed + 1))
		fi
	fi
	MUT_POS=$pos perl "$W/apply.pl" "$W/$file" "$m" revert >/dev/null || { echo "mutate: cannot revert $name"; exit 1; }
done
[ -n "$bad" ] && echo "not killed:$bad"
[ -n "$weaklist" ] && echo "weak kills (the tests passed at least once with the bug planted; harden them):$weaklist"
if [ -n "$unrun" ]; then
	echo "not run within MUTATE_BUDGET=${BUDGET}s:$unrun"
	echo "mutate: too many changed mutants for the budget: run the full set (sh scripts/mutate.sh, most of an hour),"
	echo "mutate: or --changed without a budget, with MUTATE_RECORD=1 on a clean checkout, and commit tests/mutants/KILLED-AT"
fi
[ "$CHANGED" = 1 ] && unrun_n=$(echo $unrun | wc -w) && echo "mutate: --changed: $((killed + survived + broken + unrun_n)) changed mutant(s), $checked unchanged checked to apply"
echo "mutants: $killed killed ($weak weak), $survived survived, $broken broken, $pending pending ($(( $(date +%s) - start ))s)"
ok=0; [ "$survived" -eq 0 ] && [ "$broken" -eq 0 ] && [ -z "$unrun" ] && ok=1
if [ "$ok" = 1 ] && [ "$complete" = 1 ] && [ "${MUTATE_ALL:-0}" != 1 ] && is_git && [ -z "$(git -C "$TOP" status --porcelain)" ]; then
	head=$(git -C "$TOP" rev-parse HEAD)
	if [ "${MUTATE_RECORD:-0}" = 1 ]; then
		echo "$head" > "$REC"; echo "mutate: every mutant is killed at $head: recorded in tests/mutants/KILLED-AT (commit it)"
	else
		echo "mutate: every mutant is killed at $head (MUTATE_RECORD=1 writes it into tests/mutants/KILLED-AT)"
	fi
fi
[ "$ok" = 1 ]
