#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/java-bench.sh - the Java page table (java/bench/PageBench.java,
# docs/JAVA.md "Benchmark"): 8 KiB pages with O_DIRECT on the JDK's
# FileChannel (with and without DSYNC) and on UrfsFileChannel, sync and batch,
# side by side in one run. Works in a scratch directory it makes under DIR
# (default: the current directory; it must allow O_DIRECT, which tmpfs does
# not) and removes after.
#   sh scripts/java-bench.sh [DIR]
# Environment: O (the build, default .), REPS (runs per row, median; 5),
# ENGINES (default "psync io_uring ur"; drop io_uring where it is blocked).
# Must never leave its files behind or print a row whose I/O failed.
set -e
O=${O:-.}
BIN=$(cd "$O" && pwd)
[ -e "$BIN/javalib/urfs-bench.jar" ] || { echo "java-bench: $BIN/javalib/urfs-bench.jar is not built (make, with javac)" >&2; exit 2; }
work=$(mktemp -d "${1:-.}/java-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$BIN/sfs" mkfs --size 256M "$work/img.sfs" >/dev/null
cd "$work"
java -Djava.library.path="$BIN/javalib" -cp "$BIN/javalib/urfs.jar:$BIN/javalib/urfs-bench.jar" \
	PageBench "$work" "$work/img.sfs" "${REPS:-5}" ${ENGINES:-psync io_uring ur}
