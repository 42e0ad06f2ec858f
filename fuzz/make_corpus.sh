#!/bin/sh
# fuzz/make_corpus.sh - regenerates the seed corpus in fuzz/corpus with the sfs
# tool: small valid 1 MiB images (the size the fuzz harness zero-fills every
# input to), each cut after its last used block, since the rest is zeros.
# Seeds named valid-* must stay valid: tests/test_sfs_fuzz_corpus.c demands
# they mount, check clean and take the harness's operations.
#
#   sh fuzz/make_corpus.sh [path/to/sfs]      (default ./sfs; run `make` first)
# Must never write outside fuzz/corpus and its own temporary directory.
set -e
SFS=$(cd "$(dirname "${1:-./sfs}")" && pwd)/$(basename "${1:-./sfs}")
OUT=$(cd "$(dirname "$0")" && pwd)/corpus
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"

# Cut an image after its last used block: metadata + allocated data blocks
# (a fresh image allocates from the start of the data area).
cut() {
	used=$("$SFS" stat "$1" | awk '/^total blocks:/ {t=$3} /^free blocks:/ {f=$3} END {print t-f}')
	truncate -s $((used * 4096)) "$1"
	mv "$1" "$OUT/$2"
}

new() { "$SFS" mkfs --size 1M --files 64 "$1" >/dev/null; }

printf 'hello, SimpleFS\n' > small.txt
head -c 10000 /dev/zero | tr '\0' 'Z' > ten-k.bin
printf '' > empty
printf 'x' > "$(printf '%063d' 0)"

new a.sfs
cut a.sfs valid-empty

new b.sfs
"$SFS" put b.sfs small.txt
"$SFS" put b.sfs ten-k.bin
"$SFS" put b.sfs empty
"$SFS" put b.sfs "$(printf '%063d' 0)"
cut b.sfs valid-files

new c.sfs
for i in 1 2 3 4 5 6; do "$SFS" put c.sfs small.txt "f$i"; done
"$SFS" put c.sfs ten-k.bin big
"$SFS" rm c.sfs f2 f4 f5
"$SFS" put c.sfs ten-k.bin f7
cut c.sfs valid-deleted
ls -l "$OUT"
