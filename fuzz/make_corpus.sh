#!/bin/sh
# SPDX-License-Identifier: MIT
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

# a fragmented chain: small files interleaved, every other one removed, then a
# big file laid across the gaps
head -c 4096 /dev/zero | tr '\0' 'a' > four-k.bin
head -c 70000 /dev/zero | tr '\0' 'F' > frag.bin
new d.sfs
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do "$SFS" put d.sfs four-k.bin "s$i"; done
"$SFS" rm d.sfs s2 s4 s6 s8 s10 s12
"$SFS" put d.sfs frag.bin fragmented
cut d.sfs valid-fragmented

# a nearly full directory (60 of 64 slots), sizes 0 .. 3 blocks, odd names
new e.sfs
i=0
while [ $i -lt 60 ]; do
	head -c $(( (i * 997) % 13000 )) /dev/zero | tr '\0' "$(printf '\\%03o' $((65 + i % 26)))" > sz.bin
	"$SFS" put e.sfs sz.bin "n.$i name-$i"
	i=$((i + 1))
done
"$SFS" put e.sfs small.txt "$(printf 'caf\303\251 \342\202\254')"
"$SFS" put e.sfs small.txt x
cut e.sfs valid-many-files

# other geometries: a 16-slot directory, and the most slots 1 MiB allows
"$SFS" mkfs --size 1M --files 16 f.sfs >/dev/null
"$SFS" put f.sfs ten-k.bin
"$SFS" put f.sfs small.txt
cut f.sfs valid-16-slots
"$SFS" mkfs --size 1M --files 1984 g.sfs >/dev/null
"$SFS" put g.sfs small.txt
"$SFS" put g.sfs ten-k.bin
cut g.sfs valid-1984-slots

# nearly full data area
head -c 800000 /dev/zero | tr '\0' 'B' > big.bin
new h.sfs
"$SFS" put h.sfs big.bin
"$SFS" put h.sfs ten-k.bin
cut h.sfs valid-nearly-full
ls -l "$OUT"
