/* SPDX-License-Identifier: MIT */
/* Description: every bench engine (sfs, ur, ur:fixedbufs, psync, io_uring
 * with and without fixedbufs/regfiles, the liburing drop-in emulated (dropin,
 * also with fixedbufs/regfiles), libaio, posixaio) writes and reads a
 * small file with the right number of I/Os and bytes and no stamp error;
 * NOP jobs (ur, io_uring, dropin, null) count operations and no bytes, an engine
 * without NOP is skipped; a mixed job honours its read share; a time-based job stops near its
 * deadline and drains what is in flight; a block corrupted inside the
 * SimpleFS image is caught by both the sfs and the ur engine.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/bench/bench.h"
#include "parts.h"
#include "sfs.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static struct bench_result r;

static int run(const char *engine, int rw, int random, unsigned qd, uint32_t bs)
{
	struct bench_job job;
	char err[200];
	bench_job_defaults(&job);
	if (bench_parse_engine(engine, &job, err, sizeof(err)) < 0)
		FAIL("%s", err);
	job.size = 2u << 20;
	job.rw = rw;
	job.random = random;
	job.qd = qd;
	job.bs = bs;
	job.repeat = 1;
	return bench_run_job(&job, &r);
}

/* An io_uring job is a part: skipped where the host has no io_uring (probed directly), and
 * then it must not run; elsewhere it must. 1: run it. */
static int runnable(const char *engine, const char *label)
{
	char why[160];

	if (strncmp(engine, "io_uring", 8))
		return 1;
	if (!tu_have_io_uring(why, sizeof(why))) {
		tu_part_skip("io_uring", label, why);
		return 0;
	}
	tu_part_ran("io_uring", label);
	return 1;
}

static void expect_ok(const char *engine, int rw, int random, unsigned qd, uint32_t bs)
{
	char label[128];

	snprintf(label, sizeof(label), "%s %s %s qd=%u bs=%u", engine, bench_rw_name(rw),
		 random ? "rand" : "seq", qd, bs);
	if (!runnable(engine, label))
		return;
	if (run(engine, rw, random, qd, bs) < 0 || r.status != BENCH_OK) {
		FAIL("%s %s qd=%u bs=%u: status %d: %s", engine, bench_rw_name(rw), qd, bs, r.status,
		     r.reason);
	}
	uint64_t n = (2u << 20) / bs;
	if (r.med.ios != n || r.med.bytes != 2u << 20)
		FAIL("%s %s: %llu I/Os, %llu bytes; expected %llu, 2 MiB", engine, bench_rw_name(rw),
		     (unsigned long long)r.med.ios, (unsigned long long)r.med.bytes,
		     (unsigned long long)n);
	if (r.lat_p50 <= 0 || r.lat_p99 < r.lat_p50 || r.lat_p999 < r.lat_p99 || r.med.mibs <= 0)
		FAIL("%s: implausible figures p50 %f p99 %f", engine, r.lat_p50, r.lat_p99);
	printf("%-28s %-5s %s qd=%-3u bs=%-6u %9.0f IOPS\n", engine, bench_rw_name(rw),
	       random ? "rand" : "seq ", qd, bs, r.med.iops);
}

int main(void)
{
	static const char *const engines[] = {
		"sfs", "ur", "ur:fixedbufs", "psync", "io_uring", "io_uring:fixedbufs,regfiles",
		"dropin", "dropin:fixedbufs,regfiles", "libaio", "posixaio",
	};
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++) {
		expect_ok(engines[i], BENCH_RW_WRITE, 0, 16, 4096);
		expect_ok(engines[i], BENCH_RW_READ, 1, 16, 4096);
		expect_ok(engines[i], BENCH_RW_WRITE, 1, 4, 65536);
		expect_ok(engines[i], BENCH_RW_READ, 0, 4, 65536);
	}

	/* NOP: the transport alone, batched; no bytes move */
	static const char *const nops[] = { "ur", "null", "dropin", "io_uring" };
	for (int i = 0; i < 4; i++) {
		struct bench_job nj;
		char err[200];
		bench_job_defaults(&nj);
		if (bench_parse_engine(nops[i], &nj, err, sizeof(err)) < 0)
			FAIL("%s", err);
		nj.rw = BENCH_RW_NOP;
		nj.qd = 32;
		nj.batch = 1;
		nj.bytes = 4096ull * 3200;     /* 3200 NOPs */
		nj.repeat = 1;
		if (!runnable(nops[i], "io_uring nop"))
			continue;
		if (bench_run_job(&nj, &r) < 0 || r.status != BENCH_OK || r.med.ios != 3200 ||
		    r.med.bytes != 0)
			FAIL("%s nop: status %d, %llu ops, %llu bytes: %s", nops[i], r.status,
			     (unsigned long long)r.med.ios, (unsigned long long)r.med.bytes, r.reason);
		printf("%s nop qd 32: %.0f/s\n", nops[i], r.med.iops);
	}
	if (run("libaio", BENCH_RW_NOP, 0, 8, 4096) < 0 || r.status != BENCH_SKIPPED)
		FAIL("libaio nop is not skipped");

	/* mix: about 70% reads */
	expect_ok("psync", BENCH_RW_MIX, 1, 1, 4096);
	double share = (double)r.med.reads / (double)r.med.ios;
	if (r.med.reads + r.med.writes != r.med.ios || fabs(share - 0.70) > 0.05)
		FAIL("mix: %llu reads, %llu writes", (unsigned long long)r.med.reads,
		     (unsigned long long)r.med.writes);

	/* time based: stops at the deadline, drains, counts */
	struct bench_job job;
	bench_job_defaults(&job);
	job.ops = &bench_eng_posixaio;
	job.size = 2u << 20;
	job.qd = 16;
	job.random = 1;
	job.time_s = 0.2;
	if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK)
		FAIL("time based: %s", r.reason);
	if (r.med.secs < 0.2 || r.med.secs > 0.5 || r.med.drained > 16 || r.med.ios < 256)
		FAIL("time based: %.3fs, %llu I/Os, %llu drained", r.med.secs,
		     (unsigned long long)r.med.ios, (unsigned long long)r.med.drained);
	printf("time based: %.3fs, %llu I/Os, %llu drained at the deadline\n", r.med.secs,
	       (unsigned long long)r.med.ios, (unsigned long long)r.med.drained);

	/* corrupt one sector of benchfile inside the image */
	struct sfs *fs;
	char err[256];
	if (sfs_mount("disk.sfs", 0, &fs, err, sizeof(err)) < 0)
		FAIL("mount: %s", err);
	int fd = sfs_file_open(fs, "benchfile", 0);
	char junk[512];
	memset(junk, 0x5a, sizeof(junk));
	if (fd < 0 || sfs_file_pwrite(fs, fd, junk, sizeof(junk), 300 * 512) != 512)
		FAIL("corrupt");
	if (sfs_file_close(fs, fd) < 0 || sfs_unmount(fs) < 0)
		FAIL("corrupt: close or unmount failed");
	const char *both[] = { "sfs", "ur", "ur:fixedbufs" };
	for (int i = 0; i < 3; i++) {
		if (run(both[i], BENCH_RW_READ, 1, 8, 4096) != -1 || r.status != BENCH_FAILED ||
		    !strstr(r.reason, "WRONG DATA") || !strstr(r.reason, "offset 153600"))
			FAIL("%s: corrupted image block not caught: %d %s", both[i], r.status, r.reason);
		printf("%s: caught: %s\n", both[i], r.reason);
	}
	printf("PASS\n");
	return 0;
}
