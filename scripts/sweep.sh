#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/sweep.sh - docs/results/sweep.md in one command: `bench sweep` (the
# original benchmark's three tables for every engine, buffered and O_DIRECT,
# about 15 minutes on 2 CPUs) as Markdown, JSON and CSV, then its plots
# (sweep_*.svg and .png, scripts/plot.sh). bench refuses (exit 3) on a busy
# machine; the script then stops and writes nothing. Writes only into OUTDIR
# (and the benchmark files benchfile and disk.sfs in bench's --dir, default .).
#
#   sh scripts/sweep.sh [OUTDIR] [bench sweep options...]    (OUTDIR: docs/results)
#   BENCH=path/to/bench sh scripts/sweep.sh ...              (default ./bench)
set -eu
bench=${BENCH:-./bench}
out=docs/results
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then out=$1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
"$bench" sweep --md "$out/sweep.md" --json "$out/sweep.json" --csv "$out/sweep.csv" "$@"
sh "$here/plot.sh" -o "$out" -p sweep_ "$out/sweep.json"
