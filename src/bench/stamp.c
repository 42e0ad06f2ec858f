/* SPDX-License-Identifier: MIT */
/*
 * stamp.c - block stamps and offset patterns.
 *
 * Every 512-byte sector of a benchmark file carries, in its first 16 bytes,
 * its own file offset and the seed, and in its last 8 bytes a hash of both.
 * The fill and every write put them there; every read checks them, so a read
 * that returns another block, zeros, or a stale buffer fails the run. The
 * stamp depends on offset and seed only, so overlapping writes and reads in
 * flight at once can never make a correct run fail.
 * Must never allocate in fill/check (they run inside the timed region).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define STAMP_MAGIC 0x424e43485354414dull   /* "MATSHCNB" */

uint64_t bench_rand64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t stamp_hash(uint64_t off, uint64_t seed)
{
	uint64_t s = off * 0x9e3779b97f4a7c15ull ^ seed;
	return bench_rand64(&s);
}

void bench_stamp_fill(void *buf, size_t len, uint64_t off, uint64_t seed)
{
	unsigned char *p = buf;
	for (size_t i = 0; i + BENCH_SECTOR <= len; i += BENCH_SECTOR) {
		uint64_t w[2] = { off + i, seed ^ STAMP_MAGIC };
		uint64_t h = stamp_hash(off + i, seed);
		memcpy(p + i, w, sizeof(w));
		memcpy(p + i + BENCH_SECTOR - 8, &h, 8);
	}
}

int bench_stamp_check(const void *buf, size_t len, uint64_t off, uint64_t seed,
		      uint64_t *bad)
{
	const unsigned char *p = buf;
	for (size_t i = 0; i + BENCH_SECTOR <= len; i += BENCH_SECTOR) {
		uint64_t w[2], h;
		memcpy(w, p + i, sizeof(w));
		memcpy(&h, p + i + BENCH_SECTOR - 8, 8);
		if (w[0] != off + i || w[1] != (seed ^ STAMP_MAGIC) ||
		    h != stamp_hash(off + i, seed)) {
			if (bad)
				*bad = off + i;
			return -EILSEQ;
		}
	}
	return 0;
}

void bench_stamp_body(void *buf, size_t len)
{
	unsigned char *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(0xa5 ^ (i * 7));
}

int bench_pattern_init(struct bench_pattern *p, uint64_t size, uint32_t bs, int random,
		       uint64_t seed)
{
	memset(p, 0, sizeof(*p));
	if (bs == 0 || size < bs)
		return -EINVAL;
	p->nblocks = size / bs;
	if (p->nblocks > UINT32_MAX)
		return -EFBIG;
	p->bs = bs;
	p->random = random;
	p->rng = seed ^ 0x6d6978ull;
	if (!random)
		return 0;
	p->perm = malloc(p->nblocks * sizeof(*p->perm));
	if (!p->perm)
		return -ENOMEM;
	for (uint64_t i = 0; i < p->nblocks; i++)
		p->perm[i] = (uint32_t)i;
	uint64_t st = seed;
	for (uint64_t i = p->nblocks - 1; i > 0; i--) {        /* Fisher-Yates */
		uint64_t j = bench_rand64(&st) % (i + 1);
		uint32_t t = p->perm[i];
		p->perm[i] = p->perm[j];
		p->perm[j] = t;
	}
	return 0;
}

void bench_pattern_free(struct bench_pattern *p)
{
	free(p->perm);
	p->perm = NULL;
}
