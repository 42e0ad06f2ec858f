#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/plot-data.sh - the measurements behind docs/BENCHMARKS.md, in one
# command: the default run, a queue-depth series and a block-size series for
# every engine (buffered and O_DIRECT), each saved as JSON, then the plots.
# About 4 minutes on a 2-core machine. Writes only into OUTDIR (and the
# benchmark files in DIR).
#
#   sh scripts/plot-data.sh [BENCH] [OUTDIR] [DIR]
set -eu
bench=${1:-./bench}
out=${2:-bench-results}
dir=${3:-.}
here=$(cd "$(dirname "$0")" && pwd)
engines=sfs,ur,ur:fixedbufs,psync,io_uring,libaio,posixaio
mkdir -p "$out"
echo "== default run -> $out/default.txt, $out/default.json"
"$bench" --dir "$dir" --json "$out/default.json" --csv "$out/default.csv" | tee "$out/default.txt"
echo "== 4 KiB random reads against queue depth -> $out/qd.json"
"$bench" run --engine $engines --qd 1,4,16,64,128 --bs 4k --pattern rand --rw read \
	--direct 0,1 --time 0.5 --warmup 0.1 --repeat 3 --dir "$dir" \
	--json "$out/qd.json" --csv "$out/qd.csv" > "$out/qd.txt"
echo "== sequential reads against block size, qd 64 -> $out/bs.json"
"$bench" run --engine $engines --qd 64 --bs 4k,16k,64k,256k,1m --pattern seq --rw read \
	--direct 0,1 --warmup 0.1 --repeat 3 --dir "$dir" \
	--json "$out/bs.json" --csv "$out/bs.csv" > "$out/bs.txt"
sh "$here/plot.sh" -o "$out" "$out/qd.json" "$out/bs.json"
