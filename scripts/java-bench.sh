#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/java-bench.sh - the Java benchmarks (java/bench/, docs/JAVA.md
# "Benchmark"), each side by side in one run:
#   sh scripts/java-bench.sh pages [DIR]   8 KiB pages with O_DIRECT: the JDK's
#       FileChannel (with and without DSYNC) against UrfsFileChannel, sync and
#       batch (PageBench; ENGINES, default "psync io_uring ur")
#   sh scripts/java-bench.sh h2 [DIR]      H2 on a TPC-B-like workload: H2's own
#       file store against jdbc:h2:urfs: (io_uring, psync), then both again with
#       io_uring blocked (noring) and the drop-in emulating it (H2Bench;
#       SECONDS_PER: seconds per store and round, 20; THREADS, 4; ROUNDS, 3)
# Works in a scratch directory it makes under DIR (default: the current
# directory; pages needs O_DIRECT there, which tmpfs lacks) and removes after.
# Environment: O (the build, default .), REPS (pages: runs per row, median; 5).
# Must never leave its files behind or print a row whose I/O failed.
set -e
O=${O:-.}
BIN=$(cd "$O" && pwd)
what=${1:-pages}
[ -e "$BIN/javalib/urfs-bench.jar" ] || { echo "java-bench: $BIN/javalib/urfs-bench.jar is not built (make, with javac and H2)" >&2; exit 2; }
work=$(mktemp -d "${2:-.}/java-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
JAVA="java -Djava.library.path=$BIN/javalib -cp $BIN/javalib/urfs.jar:$BIN/javalib/urfs-h2.jar:$BIN/javalib/urfs-bench.jar:/usr/share/java/h2.jar"
cd "$work"
case $what in
pages)
	"$BIN/sfs" mkfs --size 256M "$work/img.sfs" >/dev/null
	$JAVA PageBench "$work" "$work/img.sfs" "${REPS:-5}" ${ENGINES:-psync io_uring ur} ;;
h2)
	mkdir kernel dropin
	echo "kernel's io_uring allowed:"
	$JAVA H2Bench "$work/kernel" "${SECONDS_PER:-20}" "${THREADS:-4}" "${ROUNDS:-3}" default urfs:io_uring urfs:psync
	echo "io_uring blocked (noring), the drop-in's ring:"
	"$BIN/noring" "$BIN/urfs-uring" $JAVA H2Bench "$work/dropin" "${SECONDS_PER:-20}" "${THREADS:-4}" "${ROUNDS:-3}" default urfs:io_uring ;;
*)
	echo "usage: sh scripts/java-bench.sh [pages|h2] [DIR]" >&2; exit 2 ;;
esac
