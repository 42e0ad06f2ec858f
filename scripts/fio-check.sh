#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/fio-check.sh - cross-checks bench's host engines against fio on the
# same file and workload: 4 KiB random reads of a 32 MiB file, time based,
# psync at qd 1 and io_uring / libaio / posixaio at qd 64 (fio submits up to
# 64 at once and reaps from 1, as bench does), buffered and O_DIRECT. The
# null engines (no I/O) show each tool's own cost per I/O. The page cache is
# not invalidated (fio --invalidate=0): bench measures a warm file. fio and
# bench alternate, REPEAT times each; the medians and their ratio are printed.
# Writes only DIR/benchfile.
#
#   sh scripts/fio-check.sh [BENCH] [DIR] [SECONDS] [REPEAT]
set -eu
bench=${1:-./bench}
dir=${2:-.}
secs=${3:-2}
rep=${4:-3}
command -v fio >/dev/null || { echo "fio-check.sh: fio is needed (apt-get install fio)" >&2; exit 1; }
command -v jq >/dev/null || { echo "fio-check.sh: jq is needed" >&2; exit 1; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# bench lays out and stamps the file first (fio only reads it)
"$bench" run --engine psync --size 32m --repeat 1 --dir "$dir" >/dev/null
echo "fio $(fio --version), ${secs}s runs, median of $rep, 4 KiB random read, 32 MiB file in $dir"
printf '| %-9s | %-3s | %-8s | %10s | %10s | %11s |\n' engine qd mode "fio IOPS" "bench IOPS" "bench / fio"
printf '|-----------|-----|----------|------------|------------|-------------|\n'
for direct in 0 1; do
	for e in null psync io_uring libaio posixaio; do
		[ $e = null ] && [ $direct = 1 ] && continue
		qd=64
		if [ $e = psync ] || [ $e = null ]; then qd=1; fi
		: > /tmp/fio-check.$$.f; : > /tmp/fio-check.$$.b
		i=0
		while [ $i -lt "$rep" ]; do
			fio --name=check --filename="$dir/benchfile" --size=32m --rw=randread --bs=4k \
				--ioengine=$e --iodepth=$qd --iodepth_batch_submit=$qd \
				--iodepth_batch_complete_min=1 --iodepth_batch_complete_max=$qd \
				--direct=$direct --time_based --runtime="$secs" --randrepeat=0 --norandommap \
				--invalidate=0 --output-format=json | jq '.jobs[0].read.iops' >> /tmp/fio-check.$$.f
			"$bench" run --engine $e --qd $qd --pattern rand --rw read --size 32m \
				--direct $direct --time "$secs" --repeat 1 --dir "$dir" --csv /dev/stdout 2>/dev/null |
				awk -F, '$1 == "'$e'" { print $16 }' >> /tmp/fio-check.$$.b
			i=$((i + 1))
		done
		f=$(median < /tmp/fio-check.$$.f); b=$(median < /tmp/fio-check.$$.b)
		mode=buffered; [ $direct = 1 ] && mode=O_DIRECT
		printf '| %-9s | %3s | %-8s | %10.0f | %10.0f | %10.2fx |\n' $e $qd $mode "$f" "$b" \
			"$(echo "$b $f" | awk '{ print ($2 > 0) ? $1 / $2 : 0 }')"
	done
done
rm -f /tmp/fio-check.$$.f /tmp/fio-check.$$.b
