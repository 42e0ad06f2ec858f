#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/plot-db.sh - plots of `bench db --csv FILE`: pages per ms against the
# batch size for page writes and random page reads (loops and channel
# batches; one-at-a-time runs left out), as OUTDIR/db_write.svg and
# OUTDIR/db_read.svg. Needs gnuplot. Never changes the CSV.
#   sh scripts/plot-db.sh db.csv docs/results
set -e
csv=$1; out=${2:-.}
[ -r "$csv" ] || { echo "usage: plot-db.sh CSV [OUTDIR]" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plot-db.sh: gnuplot not found" >&2; exit 1; }
mkdir -p "$out"
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
for sec in write read; do
	awk -F, -v s=$sec -v d="$d" 'NR > 1 && $1 == s && $3 !~ /one at a time/ {
		f = $3; gsub(/[^A-Za-z0-9_]/, "_", f)
		print $2, $5 > (d "/" s "_" f ".dat")
		if (!(f in seen)) { seen[f] = 1; print f "\t" $3 > (d "/" s ".names") } }' "$csv"
	[ -s "$d/$sec.names" ] || continue
	plots=""
	while IFS="$(printf '\t')" read -r f name; do
		plots="$plots${plots:+, }'$d/${sec}_$f.dat' using 1:2 with linespoints title '$name'"
	done < "$d/$sec.names"
	title="8 KiB random page writes, O_DIRECT"
	[ $sec = read ] && title="8 KiB random page reads, O_DIRECT"
	gnuplot <<GP
set terminal svg size 900,520 dynamic font "sans,11"
set termoption noenhanced
set output "$out/db_$sec.svg"
set title "$title (bench db, medians)"
set logscale x 2
set xlabel "pages per batch"
set ylabel "pages per ms"
set key outside right top
set grid
plot $plots
GP
	echo "$out/db_$sec.svg"
done
