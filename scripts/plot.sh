#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/plot.sh - plots from bench's JSON (bench ... --json FILE) with jq and
# gnuplot, as SVG and PNG, one line per engine (and buffering mode):
#   iops_vs_qd      4 KiB random read IOPS against queue depth
#   mibs_vs_bs      sequential read MiB/s against block size (the most common
#                   qd in the file)
#   syscalls_per_io syscalls per I/O against queue depth (4 KiB random read)
#   ctxsw_per_io    context switches per I/O against queue depth (same jobs)
#   (each of these for buffered I/O, and with the suffix _direct for O_DIRECT)
#   latency         p50 / p99 / p99.9 completion latency of 4 KiB random
#                   reads at qd 64 (or the most common qd), per engine
# A plot whose jobs are not in the file is skipped with a message. Where the
# jobs of a line cover several file sizes (bench sweep's 32M and 512M), each
# size is a line of its own; where two jobs give the same point (the sweep's
# one-pass T1 job and its time-bound T3 job), the later one in the file is kept.
# It never changes the JSON and writes only into OUTDIR.
#
#   sh scripts/plot.sh [-o OUTDIR] [-p PREFIX] results.json...
#   (several files are merged; OUTDIR: plots; PREFIX starts every plot's file name)
set -eu
out=plots
prefix=
while [ $# -gt 0 ]; do
	case $1 in
	-o) out=${2:?-o needs a directory}; shift 2 ;;
	-p) prefix=${2?-p needs a prefix}; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: plot.sh [-o OUTDIR] [-p PREFIX] results.json..." >&2; exit 2; }
command -v jq >/dev/null || { echo "plot.sh: jq is needed (apt-get install jq)" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot is needed (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json=$tmp/all.json
jq -s '{setup: .[0].setup, jobs: (map(.jobs) | add)}' "$@" > "$json"

# ok jobs as TSV: line-name x y, for a jq filter selecting jobs and x/y expressions
# (the file size in the name when the selection has several; one point per x;
# jobs without the figure, e.g. syscalls not counted, give no point)
series() { # $1 select, $2 x, $3 y, $4 file
	nsz=$(jq "[.jobs[] | select(.status == \"ok\") | select($1) | .size] | unique | length" "$json")
	jq -r --argjson multi "$([ "$nsz" -gt 1 ] && echo true || echo false)" \
	       ".jobs | reverse | .[] | select(.status == \"ok\") | select($1)
	       | [(.label + (if .direct == 1 then \" O_DIRECT\" else \"\" end)
	                  + (if \$multi then \" \" + (.size / 1048576 | floor | tostring) + \"M\" else \"\" end)),
	          ($2), ($3)] | @tsv" \
	       "$json" | sort -s -t '	' -k1,1 -k2,2n | awk -F '\t' 'NF >= 3 && $3 != "" && !seen[$1 FS $2]++' > "$4"
}

# most common qd among 4k random reads / sequential reads
common_qd() {
	jq -r ".jobs[] | select(.status == \"ok\") | select($1) | .qd" "$json" |
		sort -n | uniq -c | sort -k1,1nr -k2,2n | awk 'NR==1{print $2}'
}

plot_lines() { # $1 data, $2 name, $3 title, $4 xlabel, $5 ylabel, $6 logx(0/1), $7 logy
	data=$1
	if [ ! -s "$data" ]; then
		echo "plot.sh: $2: no matching jobs, skipped"
		return
	fi
	names=$(cut -f1 "$data" | uniq)
	# one data block per line name
	: > "$tmp/$2.dat"
	echo "$names" | while IFS= read -r n; do
		awk -F '\t' -v n="$n" '$1 == n { print $2, $3 }' "$data" >> "$tmp/$2.dat"
		printf '\n\n' >> "$tmp/$2.dat"
	done
	cmd=$(echo "$names" | awk -v f="$tmp/$2.dat" '{ printf "%s\"%s\" index %d using 1:2 with linespoints title \"%s\"", (NR>1?", ":""), f, NR-1, $0 }')
	for term in svg png; do
		{
			if [ $term = svg ]; then echo "set terminal svg size 900,560 dynamic noenhanced font 'sans,11'";
			else echo "set terminal pngcairo size 900,560 noenhanced font 'sans,10'"; fi
			echo "set output '$out/$prefix$2.$term'"
			echo "set title '$3'"
			echo "set xlabel '$4'"
			echo "set ylabel '$5'"
			echo "set grid"
			echo "set key outside right"
			[ "$6" = 1 ] && echo "set logscale x 2"
			[ "$7" = 1 ] && echo "set logscale y"
			echo "plot $cmd"
		} > "$tmp/plot.gp"
		gnuplot "$tmp/plot.gp"
	done
	echo "plot.sh: $out/$prefix$2.svg $out/$prefix$2.png"
}

rr='.rw == "read" and .pattern == "random" and .bs == 4096'
sq='.rw == "read" and .pattern == "sequential"'
for d in 0 1; do
	sfx=""; mode="buffered"
	[ $d = 1 ] && sfx="_direct" && mode="O_DIRECT"
	series "$rr and .direct == $d" '.qd' '.median.iops' "$tmp/a$d"
	plot_lines "$tmp/a$d" iops_vs_qd$sfx "4 KiB random read IOPS against queue depth, $mode" "queue depth" "IOPS (log)" 1 1
	series "$rr and .direct == $d" '.qd' '.median.syscalls_per_io // empty' "$tmp/b$d"
	plot_lines "$tmp/b$d" syscalls_per_io$sfx "Syscalls per I/O (whole system), 4 KiB random read, $mode" "queue depth" "syscalls / I/O" 1 0
	series "$rr and .direct == $d" '.qd' '.median.ctxsw_per_io // empty' "$tmp/c$d"
	plot_lines "$tmp/c$d" ctxsw_per_io$sfx "Context switches per I/O (whole system), 4 KiB random read, $mode" "queue depth" "context switches / I/O" 1 0
	q=$(common_qd "$sq and .direct == $d")
	if [ -n "$q" ]; then
		series "$sq and .direct == $d and .qd == $q" '.bs / 1024' '.median.mibs' "$tmp/d$d"
		plot_lines "$tmp/d$d" mibs_vs_bs$sfx "Sequential read throughput against block size (qd $q), $mode" "block size (KiB)" "MiB/s (log)" 1 1
	else
		echo "plot.sh: mibs_vs_bs$sfx: no sequential reads, skipped"
	fi
done

q=$(common_qd "$rr")
if [ -n "$q" ]; then
	jq -r ".jobs[] | select(.status == \"ok\") | select($rr and .qd == $q)
	       | [(.label + (if .direct == 1 then \"/direct\" else \"\" end)),
	          .latency_all_runs_us.p50, .latency_all_runs_us.p99, .latency_all_runs_us[\"p99.9\"]] | @tsv" \
	       "$json" > "$tmp/lat.dat"
fi
if [ -n "$q" ] && [ -s "$tmp/lat.dat" ]; then
	for term in svg png; do
		{
			if [ $term = svg ]; then echo "set terminal svg size 1000,560 dynamic noenhanced font 'sans,11'";
			else echo "set terminal pngcairo size 1000,560 noenhanced font 'sans,10'"; fi
			echo "set output '$out/${prefix}latency.$term'"
			echo "set title 'Completion latency percentiles, 4 KiB random read, qd $q'"
			echo "set style data histograms"
			echo "set style histogram clustered gap 1"
			echo "set style fill solid 0.8 border -1"
			echo "set logscale y"
			echo "set ylabel 'microseconds (log)'"
			echo "set xtics rotate by -30"
			echo "set grid ytics"
			echo "set datafile separator '\t'"
			echo "plot '$tmp/lat.dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99', '' using 4 title 'p99.9'"
		} > "$tmp/lat.gp"
		gnuplot "$tmp/lat.gp"
	done
	echo "plot.sh: $out/${prefix}latency.svg $out/${prefix}latency.png"
else
	echo "plot.sh: latency: no 4 KiB random reads in $json, skipped"
fi
