/* SPDX-License-Identifier: MIT */
/* Description: bench's random pattern is a seeded permutation that covers
 * every block of the file exactly once per pass, is the same for the same
 * seed and different for another, and the sequential pattern is in order;
 * a random run reads exactly one pass of blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/bench/bench.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static void cover(uint64_t size, uint32_t bs, uint64_t seed)
{
	struct bench_pattern p, q;
	uint64_t n = size / bs;
	unsigned char *seen = calloc(n, 1);
	unsigned in_order = 0, same = 0;

	if (!seen || bench_pattern_init(&p, size, bs, 1, seed) || bench_pattern_init(&q, size, bs, 1, seed + 1))
		FAIL("init");
	if (p.nblocks != n)
		FAIL("nblocks %llu, expected %llu", (unsigned long long)p.nblocks, (unsigned long long)n);
	for (int pass = 0; pass < 2; pass++) {
		memset(seen, 0, n);
		for (uint64_t i = 0; i < n; i++) {
			uint64_t off = bench_pattern_next(&p);
			uint64_t o2 = bench_pattern_next(&q);
			if (off % bs || off + bs > size)
				FAIL("offset %llu out of range or unaligned", (unsigned long long)off);
			if (seen[off / bs]++)
				FAIL("block %llu twice in one pass", (unsigned long long)(off / bs));
			in_order += off == i * bs;
			same += off == o2;
		}
	}
	for (uint64_t i = 0; i < n; i++)
		if (seen[i] != 1)
			FAIL("block %llu never visited", (unsigned long long)i);
	if (n >= 64 && in_order > n / 8)
		FAIL("random pattern is mostly sequential (%u in place)", in_order);
	if (n >= 64 && same > n / 8)
		FAIL("two seeds give the same order (%u equal)", same);
	/* same seed, same order */
	struct bench_pattern r;
	bench_pattern_free(&p);
	bench_pattern_init(&r, size, bs, 1, seed);
	bench_pattern_init(&p, size, bs, 1, seed);
	for (uint64_t i = 0; i < n; i++)
		if (bench_pattern_next(&p) != bench_pattern_next(&r))
			FAIL("same seed, different order");
	bench_pattern_free(&p);
	bench_pattern_free(&q);
	bench_pattern_free(&r);
	free(seen);
}

int main(void)
{
	cover(32ull << 20, 4096, 1);
	cover(32ull << 20, 32768, 7);
	cover(512ull << 20, 1u << 20, 99);
	cover(3 * 4096 + 100, 4096, 5);    /* a partial tail block is never read */
	struct bench_pattern s;
	bench_pattern_init(&s, 1 << 20, 4096, 0, 1);
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t i = 0; i < 256; i++)
			if (bench_pattern_next(&s) != i * 4096)
				FAIL("sequential pattern out of order");

	/* a random run over a real file reads each block once: 4 MiB / 4 KiB */
	struct bench_job job;
	static struct bench_result res;
	bench_job_defaults(&job);
	job.ops = &bench_eng_psync;
	job.size = 4ull << 20;
	job.random = 1;
	job.repeat = 1;
	if (bench_run_job(&job, &res) < 0 || res.status != BENCH_OK)
		FAIL("run: %s", res.reason);
	if (res.med.ios != 1024 || res.med.bytes != 4ull << 20)
		FAIL("random run did %llu I/Os, %llu bytes", (unsigned long long)res.med.ios,
		     (unsigned long long)res.med.bytes);
	printf("PASS\n");
	return 0;
}
