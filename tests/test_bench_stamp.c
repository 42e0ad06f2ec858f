/* SPDX-License-Identifier: MIT */
/* Description: bench's stamp check catches a corrupted block: a single bad
 * byte in a stamp, a block from another offset, a zeroed block and a wrong
 * seed are all rejected, and a benchmark run over a host file with one
 * corrupted sector FAILS with that sector's offset (psync and io_uring).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/bench/bench.h"
#include "parts.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static void unit(void)
{
	static unsigned char buf[8192] __attribute__((aligned(4096)));
	uint64_t bad = 0, seed = 42, off = 1ull << 20;

	bench_stamp_body(buf, sizeof(buf));
	bench_stamp_fill(buf, sizeof(buf), off, seed);
	if (bench_stamp_check(buf, sizeof(buf), off, seed, &bad))
		FAIL("a freshly stamped buffer does not pass");
	if (bench_stamp_check(buf, sizeof(buf), off + 4096, seed, &bad) != -EILSEQ || bad != off + 4096)
		FAIL("a block checked at another offset passes (bad=%llu)", (unsigned long long)bad);
	if (bench_stamp_check(buf, sizeof(buf), off, seed + 1, &bad) != -EILSEQ)
		FAIL("a wrong seed passes");
	/* one flipped byte in each stamped position of sector 5 */
	size_t pos[] = { 5 * 512 + 0, 5 * 512 + 7, 5 * 512 + 8, 5 * 512 + 15, 5 * 512 + 504,
			 5 * 512 + 511 };
	for (size_t i = 0; i < sizeof(pos) / sizeof(pos[0]); i++) {
		buf[pos[i]] ^= 0x10;
		if (bench_stamp_check(buf, sizeof(buf), off, seed, &bad) != -EILSEQ ||
		    bad != off + 5 * 512)
			FAIL("a flipped byte at %zu is not caught at the right sector", pos[i]);
		buf[pos[i]] ^= 0x10;
	}
	if (bench_stamp_check(buf, sizeof(buf), off, seed, &bad))
		FAIL("restored buffer fails");
	memset(buf + 4096, 0, 4096);
	if (bench_stamp_check(buf, sizeof(buf), off, seed, &bad) != -EILSEQ || bad != off + 4096)
		FAIL("a zeroed block passes");
}

static void run(const char *engine, unsigned qd, int random, uint64_t corrupt_at)
{
	struct bench_job job;
	static struct bench_result r;
	char err[200];

	bench_job_defaults(&job);
	if (bench_parse_engine(engine, &job, err, sizeof(err)) < 0)
		FAIL("%s", err);
	job.size = 4ull << 20;
	job.qd = qd;
	job.random = random;
	job.rw = BENCH_RW_READ;
	job.repeat = 1;
	/* an io_uring part runs where the host has io_uring (probed directly), and must */
	char why[160];
	if (!strcmp(engine, "io_uring")) {
		if (!tu_have_io_uring(why, sizeof(why))) {
			tu_part_skip("io_uring", "stamp check on io_uring", why);
			return;
		}
		tu_part_ran("io_uring", "stamp check on io_uring");
	}
	/* a clean file reads fine */
	if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK)
		FAIL("%s: clean run: status %d: %s", engine, r.status, r.reason);
	if (r.med.ios != 1024)
		FAIL("%s: %llu I/Os, expected 1024", engine, (unsigned long long)r.med.ios);
	/* corrupt one byte of one sector (not one the prepare step samples) */
	int fd = open("benchfile", O_RDWR);
	unsigned char c;
	if (fd < 0 || pread(fd, &c, 1, (off_t)corrupt_at) != 1)
		FAIL("cannot read benchfile");
	c ^= 0x01;
	if (pwrite(fd, &c, 1, (off_t)corrupt_at) != 1)
		FAIL("cannot corrupt benchfile");
	if (bench_run_job(&job, &r) != -1 || r.status != BENCH_FAILED)
		FAIL("%s: a corrupted block was not caught (status %d)", engine, r.status);
	char want[64];
	snprintf(want, sizeof(want), "offset %llu", (unsigned long long)(corrupt_at & ~511ull));
	if (!strstr(r.reason, "WRONG DATA") || !strstr(r.reason, want))
		FAIL("%s: reason does not name the sector: %s", engine, r.reason);
	printf("%s qd=%u: caught: %s\n", engine, qd, r.reason);
	/* repair it for the next engine */
	c ^= 0x01;
	if (pwrite(fd, &c, 1, (off_t)corrupt_at) != 1)
		FAIL("cannot repair benchfile");
	close(fd);
}

int main(void)
{
	unit();
	run("psync", 1, 0, 777 * 4096 + 3 * 512 + 9);
	run("io_uring", 16, 1, 123 * 4096 + 7 * 512 + 510);
	run("libaio", 8, 1, 1000 * 4096 + 2);
	printf("PASS\n");
	return 0;
}
