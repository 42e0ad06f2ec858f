#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/qemu-img-bench.sh - Debian's qemu-img (`qemu-img bench -i io_uring`), an
# unchanged program that links liburing.so.2, through the kernel's io_uring and
# through the drop-in with io_uring blocked (noring), side by side in one run:
# the two patterns of issue 29 (QEMU's own, one request per io_uring_enter):
#   write   buffered 4 KiB writes:  qemu-img bench -f raw -i io_uring -w -c 20000 -d 64 -s 4096 FILE
#   direct  O_DIRECT 4 KiB reads:   qemu-img bench -f raw -t none -i io_uring -c 10000 -d 64 -s 4096 FILE
# Each round runs every engine once, in turn (alternating, so drift hits all
# alike); the table gives each engine's median seconds and its ratio to the
# kernel's ring (the kernel's time / the engine's: above 1 is faster). A
# measurement, never a test: nothing here asserts a speed.
#
#   scripts/qemu-img-bench.sh [-L DIR] [-B DIR] [-N PATH] [-r ROUNDS] [-W DIR] [write|direct]...
#   -L DIR    the drop-in's folder, holding liburing.so.2 (default $O/uring)
#   -B DIR    a second drop-in folder to compare (another build), as "dropin-B"
#   -N PATH   the noring launcher (default $O/noring)
#   -r ROUNDS rounds (default 5)
#   -W DIR    folder for the 256 MiB test file (default: a new one under
#             ${TMPDIR:-/tmp}, removed at the end); O_DIRECT needs a file
#             system that takes it (not tmpfs)
# Exit 77 with the reason when qemu-img, the kernel's io_uring or O_DIRECT is
# missing here.
set -u
O=${O:-.}
LIB=$O/uring; LIBB=""; NORING=$O/noring; ROUNDS=5; WORK=""
usage() { sed -n '14,23p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while getopts L:B:N:r:W:h o; do
	case $o in
	L) LIB=$OPTARG ;; B) LIBB=$OPTARG ;; N) NORING=$OPTARG ;; r) ROUNDS=$OPTARG ;;
	W) WORK=$OPTARG ;; *) usage ;;
	esac
done
shift $((OPTIND - 1))
PATTERNS=${*:-write direct}
case $ROUNDS in ''|0*|*[!0-9]*) echo "qemu-img-bench: -r $ROUNDS: a number of rounds, 1 or more"; exit 2 ;; esac
for p in $PATTERNS; do
	case $p in write|direct) ;; *) echo "qemu-img-bench: $p: a pattern is write or direct"; exit 2 ;; esac
done
command -v qemu-img >/dev/null || { echo "qemu-img-bench: no qemu-img (Debian's qemu-utils)"; exit 77; }
for d in "$LIB" ${LIBB:+"$LIBB"}; do
	[ -f "$d/liburing.so.2" ] || { echo "qemu-img-bench: no $d/liburing.so.2 (make uring)"; exit 2; }
done
[ -x "$NORING" ] || { echo "qemu-img-bench: no $NORING (make)"; exit 2; }
LIB=$(cd "$LIB" && pwd); [ -n "$LIBB" ] && LIBB=$(cd "$LIBB" && pwd)

made=""
if [ -z "$WORK" ]; then
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/qemu-img-bench.XXXXXX") || exit 1
	made=$WORK
fi
trap '[ -n "$made" ] && rm -rf "$made"' EXIT
FILE=$WORK/disk.raw
qemu-img create -q -f raw "$FILE" 256M || exit 1
dd if=/dev/zero of="$FILE" bs=1M count=256 conv=notrunc status=none || exit 1   # allocated, cached

# Does the kernel's ring work here, and O_DIRECT on this file system?
if ! qemu-img bench -f raw -i io_uring -c 10 -d 1 -s 4096 "$FILE" >/dev/null 2>&1; then
	echo "qemu-img-bench: qemu-img's io_uring does not work without the filter here (the kernel's ring is the baseline)"
	exit 77
fi
direct_ok=1
qemu-img bench -f raw -t none -i io_uring -c 10 -d 1 -s 4096 "$FILE" >/dev/null 2>&1 || direct_ok=0

ENGINES="kernel dropin${LIBB:+ dropin-B}"
cmd_of() {   # cmd_of PATTERN: qemu-img's arguments
	case $1 in
	write) echo "bench -f raw -i io_uring -w -c 20000 -d 64 -s 4096 $FILE" ;;
	direct) echo "bench -f raw -t none -i io_uring -c 10000 -d 64 -s 4096 $FILE" ;;
	esac
}
# run ENGINE PATTERN: seconds, as qemu-img reports them ("Run completed in X seconds.")
run() {
	local out
	case $1 in
	kernel) out=$(qemu-img $(cmd_of "$2") 2>&1) ;;
	dropin) out=$(LD_LIBRARY_PATH=$LIB "$NORING" qemu-img $(cmd_of "$2") 2>&1) ;;
	dropin-B) out=$(LD_LIBRARY_PATH=$LIBB "$NORING" qemu-img $(cmd_of "$2") 2>&1) ;;
	esac
	echo "$out" | sed -n 's/^Run completed in \([0-9.]*\) seconds\.$/\1/p'
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

RES=$(mktemp) || exit 1
trap 'rm -f "$RES"; [ -n "$made" ] && rm -rf "$made"' EXIT
echo "qemu-img bench, $ROUNDS rounds, engines in turn: kernel = the kernel's io_uring (Debian's liburing);"
echo "dropin = $LIB/liburing.so.2 under $NORING (io_uring blocked)${LIBB:+; dropin-B = $LIBB/liburing.so.2 likewise}"
echo "host: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
for p in $PATTERNS; do
	if [ "$p" = direct ] && [ "$direct_ok" = 0 ]; then
		echo "$p: skipped: O_DIRECT does not work on $WORK's file system"
		continue
	fi
	for r in $(seq "$ROUNDS"); do
		for e in $ENGINES; do
			t=$(run "$e" "$p")
			[ -n "$t" ] || { echo "qemu-img-bench: $e $p: qemu-img failed"; run_err=1; continue; }
			printf '%s\t%s\t%s\n' "$p" "$e" "$t" >> "$RES"
			printf '  round %d %-7s %-8s %ss\n' "$r" "$p" "$e" "$t"
		done
	done
done
echo
printf '| %-7s | %-8s | %-14s | %-22s |\n' pattern engine "median (s)" "x the kernel's ring"
printf '|---------|----------|----------------|------------------------|\n'
for p in $PATTERNS; do
	k=$(awk -F '\t' -v p="$p" '$1 == p && $2 == "kernel" { print $3 }' "$RES" | median)
	[ -n "$k" ] || continue
	for e in $ENGINES; do
		m=$(awk -F '\t' -v p="$p" -v e="$e" '$1 == p && $2 == e { print $3 }' "$RES" | median)
		[ -n "$m" ] || continue
		printf '| %-7s | %-8s | %-14s | %-22s |\n' "$p" "$e" "$m" "$(awk -v k="$k" -v m="$m" 'BEGIN { printf "%.2fx", k / m }')"
	done
done
exit ${run_err:-0}
