#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/callgrind-dropin.sh - instructions the drop-in's own code
# (uring/liburing.so.2 only, libc and bench excluded) spends per cached 4 KiB
# random read on the emulated ring, at queue depth 1 and 64, counted by
# callgrind: the hot-path cost, comparable before and after a change of
# src/uring/ on any host (an instruction count, not a time).
#
# Each depth runs bench's dropin engine twice on one 8 MiB file, for 512 and
# for 1536 reads (--bytes), and prints the difference of the two counts
# divided by 1024: set-up, file creation and teardown cancel out. Run from a
# build directory (O=., the default: ./bench and ./uring/liburing.so.2).
# Prints "qd N: M instructions per read" lines.
#
# Must never: report a time, or a count that includes anything outside
# liburing.so.2.
set -eu
O=${O:-.}
BENCH=$(cd "$O" && pwd)/bench
[ -x "$BENCH" ] || { echo "callgrind-dropin.sh: no $BENCH (make all first)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "callgrind-dropin.sh: valgrind is not installed" >&2; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# count QD READS: the drop-in's instructions for one run
count() {
	rm -f "$D"/cg.*
	valgrind --tool=callgrind --callgrind-out-file="$D/cg.%p" "$BENCH" run --engine dropin \
		--qd "$1" --pattern rand --bs 4k --size 8m --bytes "$(($2 * 4096))" --repeat 1 --warmup 0 \
		--no-syscount --dir "$D" >"$D/log" 2>&1 || { cat "$D/log" >&2; exit 1; }
	grep -q " $2 I/Os" "$D/log" || { echo "callgrind-dropin.sh: not $2 reads:" >&2; cat "$D/log" >&2; exit 1; }
	for f in "$D"/cg.*; do
		callgrind_annotate --threshold=100 "$f" 2>/dev/null
	done | awk '/\[.*\/liburing\.so\.2\]$/ { gsub(",", "", $1); n += $1 } END { printf "%d\n", n }'
}

for qd in 1 64; do
	a=$(count "$qd" 512)
	b=$(count "$qd" 1536)
	echo "qd $qd: $(( (b - a) / 1024 )) instructions per read"
done
