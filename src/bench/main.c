/* SPDX-License-Identifier: MIT */
/*
 * main.c - bench's command line: the default run (the original three
 * scenarios plus every other library), `bench run` (any knob a list: a
 * sweep), `bench sweep` (its options; the grid is sweep.c's) and the JSON/CSV
 * output.
 * The only file with main(); tests link every other bench object.
 * Must never present a skipped or failed job as a figure, and must exit
 * non-zero when any job failed (wrong data, I/O error).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "db.h"

#define MAXL 16
#define STR_(x) #x
#define STR(x) STR_(x)             /* a macro's value as a string */

static const char *prog = "bench";

struct cli {
	char *engines[MAXL];   unsigned nengines;
	uint64_t bs[MAXL];     unsigned nbs;
	uint64_t qd[MAXL];     unsigned nqd;
	uint64_t size[MAXL];   unsigned nsize;
	int random[2];         unsigned npattern;
	int rw[4];             unsigned nrw;
	int direct[2];         unsigned ndirect;
	uint64_t interval[MAXL]; unsigned ninterval;
	uint64_t clients[MAXL];  unsigned nclients;
	struct bench_job base;
	const char *json, *csv, *md;
	int quick, quiet, warmup_set, repeat_set, force, progress, busy_load_set, busy_cpu_set;
	double iops_time, busy_load, busy_cpu;
	char cmdline[1024];
};

static struct bench_result *results;
static size_t nresults, capresults;

static void on_sigint(int sig)
{
	(void)sig;
	bench_interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: bench [default] [options]     the default run (about 40 seconds)\n"
"       bench run --engine LIST [options]   one job per combination of the lists\n"
"       bench sweep [--quick] [options]      the original benchmark's tables (about 12 min)\n"
"       bench db [--help]                    database page patterns (8 KiB pages, O_DIRECT, channels)\n"
"\n"
"Lists are comma separated; every combination runs.\n"
"  --engine LIST     sfs, ur, psync, io_uring, dropin, libaio, posixaio, null;\n"
"                    (dropin: the liburing drop-in uring/liburing.so.2, emulated ring)\n"
"                    options after a colon: io_uring:sqpoll,regfiles,fixedbufs  ur:fixedbufs,idle=US\n"
"  --bs LIST         block sizes (4k, 32k, 1m; default 4k)\n"
"  --qd LIST         queue depths (default 1)\n"
"  --size LIST       file sizes (default 32m)\n"
"  --pattern LIST    seq, rand (random: a seeded permutation covering the whole file)\n"
"  --rw LIST         read, write, mix, nop (nop: io_uring, dropin, ur and null only)\n"
"  --mix-read PCT    reads in a mix (default 70)\n"
"  --direct [0,1]    O_DIRECT on host files and the SimpleFS image (alone: 1)\n"
"  --time S          time-based runs of S seconds (in-flight I/Os drained and counted;\n"
"                    sweep: each T3 run, default 0.4)\n"
"  --bytes N         bytes per run (default: one pass over the file)\n"
"  --warmup S        untimed warm-up of S seconds first (default run 0.1, sweep 0.1,\n"
"                    sweep --quick 0, run 0)\n"
"  --repeat N        timed runs per job; medians and min..max are reported (default 3)\n"
"  --seed N          stamp and permutation seed\n"
"  --no-verify       do not check read stamps (not recommended)\n"
"  --no-syscount     do not count system calls. By default they are counted in an untimed\n"
"                    pass before the timed runs (at most 16384 I/Os or 0.25 s), because the\n"
"                    counter (the raw_syscalls tracepoint) makes every system call dearer\n"
"  --batch           submit qd I/Os, reap them all, then the next qd (default: refill as\n"
"                    completions arrive)\n"
"  --interval LIST   (run) one I/O every interval (2ms, 500us, 1s; a unit is required),\n"
"                    each reaped before the next: the idle cost; reports the server's CPU\n"
"                    as a percentage of one CPU (ur engine)\n"
"  --clients LIST    (run) N processes run the job at once, each its own engine instance\n"
"                    on the same file or image: aggregate IOPS, each client's p99 and\n"
"                    max/min p99 (fairness); 1..64, not with sfs (in-process)\n"
"  --dir DIR         where the host file 'benchfile' is (default .)\n"
"  --image PATH      SimpleFS image (default $SFS_IMAGE, else DIR/disk.sfs; created if missing)\n"
"  --json FILE       every figure and the setup as JSON\n"
"  --csv FILE        one line per job\n"
"  --progress        progress lines on stderr even when it is not a terminal\n"
"Sweep: T1 syscalls and context switches of one sequential pass over the 512M file at\n"
"qd 64 x 32K; T2 random 4K IOPS at qd 64 and 128; T3 sequential MiB/s for 32M and 512M\n"
"at (qd, bs) 64x32K 128x32K 512x32K 64x1M 512x1M; reads and writes; each cell the\n"
"median of --repeat runs (at least 3) with min..max, '!' above 25%% spread.\n"
"  --md FILE         the tables as Markdown (default: stdout)\n"
"  --iops-time S     each T2 run (default 1)\n"
"  --busy-load X     refuse when the 1-minute load average is X or more before the\n"
"                    run (default 0.5 x CPUs)\n"
"  --busy-cpu PCT    ... or other processes use PCT%% of the CPUs or more, in a 1 s\n"
"                    idle sample before or during the run (default 10)\n"
"  --force           write the result from a busy machine anyway, marked noisy\n"
"  --quick           a short subset: an 8M file, 2 (qd, bs) pairs, 1 run, 0.02 s runs\n"
"                    (exit status 3: refused, the machine was busy)\n"
"  -h, --help\n");
}

static int parse_list_u64(const char *arg, uint64_t *out, unsigned *n, int sizes)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", arg);
	*n = 0;
	for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
		if (*n == MAXL)
			return -E2BIG;
		uint64_t v;
		if (sizes) {
			if (bench_parse_size(t, &v) < 0 || v == 0)
				return -EINVAL;
		} else {
			char *end;
			v = strtoull(t, &end, 10);
			if (*end || v == 0 || v > 65535)
				return -EINVAL;
		}
		out[(*n)++] = v;
	}
	return *n ? 0 : -EINVAL;
}

static void add_result(const struct bench_result *r)
{
	if (nresults == capresults) {
		capresults = capresults ? capresults * 2 : 64;
		results = realloc(results, capresults * sizeof(*results));
		if (!results) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(2);
		}
	}
	results[nresults++] = *r;
}

static int failures;

/* Run one job, keep and return its result (static storage, valid until next). */
static const struct bench_result *run_one(const struct bench_job *job, int print)
{
	static struct bench_result r;
	if (!job->ops) {
		memset(&r, 0, sizeof(r));
		r.job = *job;
		r.status = BENCH_SKIPPED;
		snprintf(r.reason, sizeof(r.reason), "engine '%s' is not in this build", job->label);
	} else if ((job->clients > 1 ? bench_run_clients(job, &r) : bench_run_job(job, &r)) < 0) {
		failures++;
	}
	add_result(&r);
	if (print || r.status == BENCH_FAILED)
		bench_report_text(r.status == BENCH_FAILED ? stderr : stdout, &r);
	fflush(stdout);
	return &r;
}

static int write_outputs(const struct cli *c)
{
	int ret = 0;
	if (c->json) {
		int e = bench_write_json(c->json, results, nresults, c->base.dir, c->cmdline);
		if (e < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, c->json, strerror(-e));
			ret = 1;
		} else {
			printf("JSON written to %s\n", c->json);
		}
	}
	if (c->csv) {
		int e = bench_write_csv(c->csv, results, nresults);
		if (e < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, c->csv, strerror(-e));
			ret = 1;
		} else {
			printf("CSV written to %s\n", c->csv);
		}
	}
	return ret;
}

static int make_job(const struct cli *c, const char *engine, struct bench_job *j)
{
	char err[200];
	*j = c->base;
	/* the default run and the sweep name engines that may not be built yet */
	if (!strcmp(engine, "sfs") && !bench_engine_find("sfs")) {
		j->ops = NULL;
		snprintf(j->label, sizeof(j->label), "%s", engine);
		return 0;
	}
	if (bench_parse_engine(engine, j, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- bench run */

static int cmd_run(struct cli *c)
{
	unsigned total = c->nengines * c->nbs * c->nqd * c->nsize * c->npattern * c->nrw * c->ndirect *
			 c->ninterval * c->nclients;
	unsigned k = 0;
	bench_setup_info(stdout, c->base.dir);
	for (unsigned n = 0; n < c->nclients; n++)
	for (unsigned iv = 0; iv < c->ninterval; iv++)
	for (unsigned a = 0; a < c->nsize; a++)
	for (unsigned d = 0; d < c->ndirect; d++)
	for (unsigned p = 0; p < c->npattern; p++)
	for (unsigned w = 0; w < c->nrw; w++)
	for (unsigned b = 0; b < c->nbs; b++)
	for (unsigned q = 0; q < c->nqd; q++)
	for (unsigned e = 0; e < c->nengines && !bench_interrupted; e++) {
		struct bench_job j;
		if (make_job(c, c->engines[e], &j) < 0)
			return 2;
		j.size = c->size[a];
		j.direct = c->direct[d];
		j.random = c->random[p];
		j.rw = c->rw[w];
		j.bs = (uint32_t)c->bs[b];
		j.qd = (unsigned)c->qd[q];
		j.interval_ns = c->interval[iv];
		j.clients = (unsigned)c->clients[n];
		if (total > 1 && bench_progress_wanted(c->progress))
			fprintf(stderr, "[%u/%u] %s\n", ++k, total, j.label);
		run_one(&j, 1);
	}
	return write_outputs(c) || failures ? 1 : 0;
}

/* ---------------------------------------------------------------- default */

struct drow {
	const char *tag;         /* [SYNC] ... */
	const char *engine;
	unsigned qd;
	const struct bench_result *res[4];
};

static const char *const wl_name[4] = {
	"sequential write", "sequential read", "random write", "random read",
};

static double us_per_op(const struct bench_result *r)
{
	return r && r->status == BENCH_OK && r->med.ios ? r->med.secs * 1e6 / (double)r->med.ios : 0;
}

static double cpu_us_io(const struct bench_result *r)
{
	const struct bench_run *m = &r->med;
	double cpu = m->task_clock >= 0 ? m->task_clock : m->cpu_user + m->cpu_sys;
	return m->ios ? cpu * 1e6 / (double)m->ios : 0;
}

static void print_scenario(const char *tag, const struct bench_result *r, int w)
{
	printf("%s %s:\n", tag, wl_name[w]);
	if (r->status != BENCH_OK) {
		printf(" %s: %s\n", r->status == BENCH_SKIPPED ? "skipped" : "FAILED", r->reason);
		return;
	}
	char sc[64] = "n/a";
	if (r->sc_calls >= 0)
		snprintf(sc, sizeof(sc), "%.3f", (double)r->sc_calls / (double)r->sc_ios);
	printf(" Throughput: %.2f MiB/s, Latency: %.2f µs/op\n", r->med.mibs, us_per_op(r));
	printf("   (%s qd=%u: completion latency p50 %.2f / p99 %.2f / p99.9 %.2f µs, "
	       "syscalls/IO %s, CPU %.2f µs/IO)\n", r->job.label, r->job.qd, r->lat_p50,
	       r->lat_p99, r->lat_p999, sc, cpu_us_io(r));
	if (r->note[0])
		printf("   note: %s\n", r->note);
}

static const char *fmt_ratio(char *buf, size_t n, double a, double b)
{
	if (a > 0 && b > 0)
		snprintf(buf, n, "%.2fx", a / b);
	else
		snprintf(buf, n, "n/a");
	return buf;
}

static const char *fmt_sc(char *buf, size_t n, const struct bench_result *r)
{
	if (!r || r->status != BENCH_OK)
		snprintf(buf, n, "%s", r && r->status == BENCH_SKIPPED ? "skipped" : "failed");
	else if (r->sc_calls < 0)
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%.3f", (double)r->sc_calls / (double)r->sc_ios);
	return buf;
}

/* Context switches per I/O of a completed run. */
static const char *fmt_cs(char *buf, size_t n, const struct bench_result *r)
{
	if (r->med.ctxsw < 0)
		snprintf(buf, n, "n/a");
	else
		snprintf(buf, n, "%.3f", (double)r->med.ctxsw / (double)r->med.ios);
	return buf;
}

/* The default run keeps about 50 results for its tables: a fixed pool. */
static struct bench_result *keep(const struct bench_result *r)
{
	static struct bench_result pool[96];
	static unsigned used;
	if (used == sizeof(pool) / sizeof(pool[0])) {
		fprintf(stderr, "%s: too many results to keep\n", prog);
		exit(2);
	}
	pool[used] = *r;
	return &pool[used++];
}

static int cmd_default(struct cli *c)
{
	static struct drow rows[] = {
		{ "[SYNC]", "sfs", 1, { 0 } },
		{ "[HOST-SYNC]", "psync", 1, { 0 } },
		{ "[ASYNC]", "ur", 64, { 0 } },
		{ "[ASYNC-REGBUF]", "ur:fixedbufs", 64, { 0 } },
		{ "[IO_URING]", "io_uring", 64, { 0 } },
		{ "[LIBAIO]", "libaio", 64, { 0 } },
		{ "[POSIXAIO]", "posixaio", 64, { 0 } },
	};
	const unsigned nrows = sizeof(rows) / sizeof(rows[0]);
	char b1[32], b2[32], b3[32];

	printf("bench: default run: 32 MiB file, 4 KiB blocks, sequential and random, write then "
	       "read; %gs warm-up, then the median of %u runs of one pass each.\n",
	       c->base.warmup_s, c->base.repeat);
	char img[PATH_MAX];
	bench_image_path(&c->base, img, sizeof(img));
	printf("host file: %s/benchfile; SimpleFS image: %s (file benchfile in it; created if "
	       "missing; --image or $SFS_IMAGE name another)\n", c->base.dir, img);
	printf("SYNC = SimpleFS called directly, HOST-SYNC (HOST in ratios) = pread/pwrite, "
	       "ASYNC = the ur engine on "
	       "SimpleFS (qd 64); then the kernel's io_uring, libaio, POSIX AIO at qd 64.\n");
	bench_setup_info(stdout, c->base.dir);
	printf("\n");
	for (unsigned i = 0; i < nrows && !bench_interrupted; i++) {
		for (int w = 0; w < 4 && !bench_interrupted; w++) {
			struct bench_job j;
			if (make_job(c, rows[i].engine, &j) < 0)
				return 2;
			j.size = 32ull << 20;
			j.bs = 4096;
			j.qd = rows[i].qd;
			j.random = w >= 2;
			j.rw = (w % 2) ? BENCH_RW_READ : BENCH_RW_WRITE;
			j.direct = 0;
			rows[i].res[w] = keep(run_one(&j, 0));
			print_scenario(rows[i].tag, rows[i].res[w], w);
		}
		printf("\n");
	}

	printf("Performance summary (4 KiB, 32 MiB, buffered; µs/op = elapsed / ops, "
	       "clat = completion latency)\n");
	printf("| %-15s | %-16s | %-3s | %10s | %10s | %8s | %9s | %11s |\n", "Scenario", "Workload",
	       "QD", "MiB/s", "IOPS", "µs/op", "clat p99", "syscalls/IO");
	printf("|-----------------|------------------|-----|------------|------------|----------|"
	       "-----------|-------------|\n");
	for (unsigned i = 0; i < nrows; i++)
		for (int w = 0; w < 4; w++) {
			const struct bench_result *r = rows[i].res[w];
			if (!r)
				continue;
			if (r->status != BENCH_OK) {
				printf("| %-15s | %-16s | %3u | %10s | %10s | %8s | %9s | %11s |\n",
				       rows[i].tag, wl_name[w], r->job.qd,
				       r->status == BENCH_SKIPPED ? "skipped" : "FAILED", "", "", "", "");
				continue;
			}
			printf("| %-15s | %-16s | %3u | %10.2f | %10.0f | %8.2f | %9.2f | %11s |\n",
			       rows[i].tag, wl_name[w], r->job.qd, r->med.mibs, r->med.iops,
			       us_per_op(r), r->lat_p99, fmt_sc(b1, sizeof(b1), r));
		}
	printf("\nSpeedup (ASYNC over SYNC: throughput ratio, and µs/op of SYNC over ASYNC; "
	       "also over HOST)\n");
	printf("| %-16s | %-14s | %-14s | %-14s | %-14s |\n", "Workload", "thr ASYNC/SYNC",
	       "lat SYNC/ASYNC", "thr ASYNC/HOST", "thr REGBUF/HOST");
	printf("|------------------|----------------|----------------|----------------|"
	       "-----------------|\n");
	for (int w = 0; w < 4; w++) {
		const struct bench_result *s = rows[0].res[w], *h = rows[1].res[w],
					  *a = rows[2].res[w], *rb = rows[3].res[w];
		char b4[32];
		printf("| %-16s | %-14s | %-14s | %-14s | %-15s |\n", wl_name[w],
		       fmt_ratio(b1, sizeof(b1), a && a->status == BENCH_OK ? a->med.mibs : 0,
				 s && s->status == BENCH_OK ? s->med.mibs : 0),
		       fmt_ratio(b2, sizeof(b2), us_per_op(s), us_per_op(a)),
		       fmt_ratio(b3, sizeof(b3), a && a->status == BENCH_OK ? a->med.mibs : 0,
				 h && h->status == BENCH_OK ? h->med.mibs : 0),
		       fmt_ratio(b4, sizeof(b4), rb && rb->status == BENCH_OK ? rb->med.mibs : 0,
				 h && h->status == BENCH_OK ? h->med.mibs : 0));
	}

	/* The figures issue 3 asks for: 4 KiB random reads at qd 64, buffered
	 * and O_DIRECT, every engine, with syscalls per I/O. */
	static const char *const qd64[] = {
		"ur", "ur:fixedbufs", "psync", "io_uring", "sfs", "libaio", "posixaio",
	};
	const unsigned nq = sizeof(qd64) / sizeof(qd64[0]);
	const struct bench_result *q[2][sizeof(qd64) / sizeof(qd64[0])] = { { 0 } };
	printf("\n4 KiB random reads, qd 64 (sync engines: qd 1), 32 MiB file; buffered runs are 0.5 s each\n");
	printf("| %-14s | %-8s | %10s | %10s | %9s | %11s | %9s | %9s |\n", "Engine", "direct",
	       "IOPS", "MiB/s", "clat p99", "syscalls/IO", "ctxsw/IO", "CPU µs/IO");
	printf("|----------------|----------|------------|------------|-----------|-------------|"
	       "-----------|-----------|\n");
	for (int d = 0; d < 2; d++)
		for (unsigned i = 0; i < nq && !bench_interrupted; i++) {
			struct bench_job j;
			if (make_job(c, qd64[i], &j) < 0)
				return 2;
			j.size = 32ull << 20;
			j.bs = 4096;
			j.qd = 64;
			j.random = 1;
			j.rw = BENCH_RW_READ;
			j.direct = d;
			/* One buffered pass is 8192 I/Os, a few ms at a million IOPS: too
			 * short to compare engines on a shared machine. Time-base those. */
			if (!d && j.time_s <= 0)
				j.time_s = 0.5;
			const struct bench_result *r = q[d][i] = keep(run_one(&j, 0));
			if (r->status != BENCH_OK) {
				printf("| %-14s | %-8s | %s: %s\n", qd64[i], d ? "O_DIRECT" : "buffered",
				       r->status == BENCH_SKIPPED ? "skipped" : "FAILED", r->reason);
				continue;
			}
			printf("| %-14s | %-8s | %10.0f | %10.2f | %9.2f | %11s | %9s | %9.2f |\n",
			       qd64[i], d ? "O_DIRECT" : "buffered", r->med.iops, r->med.mibs,
			       r->lat_p99, fmt_sc(b1, sizeof(b1), r), fmt_cs(b2, sizeof(b2), r),
			       cpu_us_io(r));
			fflush(stdout);
		}
	printf("\nRatios, 4 KiB random read IOPS at qd 64\n");
	printf("| %-8s | %-16s | %-16s | %-20s | %-20s | %-16s |\n", "mode", "ur / psync",
	       "ur / io_uring", "ur:fixedbufs / psync", "ur:fixedbufs / io_uring", "ur / sfs");
	printf("|----------|------------------|------------------|----------------------|"
	       "-------------------------|------------------|\n");
	for (int d = 0; d < 2; d++) {
		double iops[sizeof(qd64) / sizeof(qd64[0])];
		for (unsigned i = 0; i < nq; i++)
			iops[i] = q[d][i] && q[d][i]->status == BENCH_OK ? q[d][i]->med.iops : 0;
		char b4[32], b5[32];
		printf("| %-8s | %-16s | %-16s | %-20s | %-23s | %-16s |\n", d ? "O_DIRECT" : "buffered",
		       fmt_ratio(b1, sizeof(b1), iops[0], iops[2]),
		       fmt_ratio(b2, sizeof(b2), iops[0], iops[3]),
		       fmt_ratio(b3, sizeof(b3), iops[1], iops[2]),
		       fmt_ratio(b4, sizeof(b4), iops[1], iops[3]),
		       fmt_ratio(b5, sizeof(b5), iops[0], iops[4]));
	}

	/* SimpleFS against the host file (issue 2): 4 KiB random read and
	 * sequential write from above, plus 1 MiB sequential reads (4 passes). */
	const struct bench_result *big[2] = { 0 };
	static const char *const bige[2] = { "sfs", "psync" };
	for (int i = 0; i < 2 && !bench_interrupted; i++) {
		struct bench_job j;
		if (make_job(c, bige[i], &j) < 0)
			return 2;
		j.size = 32ull << 20;
		j.bs = 1u << 20;
		j.qd = 1;
		j.bytes = 4 * j.size;
		j.rw = BENCH_RW_READ;
		big[i] = keep(run_one(&j, 0));
	}
	printf("\nSimpleFS called directly against pread/pwrite on a host file (warm, 32 MiB)\n");
	printf("| %-29s | %12s | %12s | %9s |\n", "Workload", "sfs", "psync", "sfs/psync");
	printf("|-------------------------------|--------------|--------------|-----------|\n");
	{
		const struct bench_result *sv[3] = { rows[0].res[3], rows[0].res[0], big[0] };
		const struct bench_result *hv[3] = { rows[1].res[3], rows[1].res[0], big[1] };
		static const char *const wn[3] = {
			"4 KiB random read (IOPS)", "4 KiB sequential write (IOPS)",
			"1 MiB sequential read (MiB/s)",
		};
		for (int i = 0; i < 3; i++) {
			int ok = sv[i] && hv[i] && sv[i]->status == BENCH_OK && hv[i]->status == BENCH_OK;
			double a = ok ? (i == 2 ? sv[i]->med.mibs : sv[i]->med.iops) : 0;
			double b = ok ? (i == 2 ? hv[i]->med.mibs : hv[i]->med.iops) : 0;
			printf("| %-29s | %12.0f | %12.0f | %9s |\n", wn[i], a, b,
			       fmt_ratio(b1, sizeof(b1), a, b));
		}
	}

	/* The transport alone: NOPs, batched 32 per submit, and one at a time. */
	static const struct { const char *engine; unsigned qd; } nops[] = {
		{ "io_uring", 32 }, { "ur", 32 }, { "io_uring", 1 }, { "ur", 1 },
	};
	const struct bench_result *nr[4] = { 0 };
	double nop_time = c->base.time_s > 0 ? c->base.time_s : 0.5;
	printf("\nNOP transport, no data: batched (32 per submit, all reaped before the next "
	       "batch) and round trip (qd 1), %gs each\n", nop_time);
	printf("| %-8s | %3s | %12s | %10s | %11s | %11s | %9s |\n", "Engine", "QD", "NOPs/s",
	       "clat p50", "syscalls/IO", "ctxsw/IO", "CPU µs/IO");
	printf("|----------|-----|--------------|------------|-------------|-------------|"
	       "-----------|\n");
	for (unsigned i = 0; i < 4 && !bench_interrupted; i++) {
		struct bench_job j;
		if (make_job(c, nops[i].engine, &j) < 0)
			return 2;
		j.rw = BENCH_RW_NOP;
		j.qd = nops[i].qd;
		j.batch = 1;
		j.time_s = nop_time;
		const struct bench_result *r = nr[i] = keep(run_one(&j, 0));
		if (r->status != BENCH_OK) {
			printf("| %-8s | %3u | %s: %s\n", nops[i].engine, nops[i].qd,
			       r->status == BENCH_SKIPPED ? "skipped" : "FAILED", r->reason);
			continue;
		}
		printf("| %-8s | %3u | %12.0f | %10.2f | %11s | %11s | %9.2f |\n", nops[i].engine,
		       nops[i].qd, r->med.iops, r->lat_p50, fmt_sc(b1, sizeof(b1), r),
		       fmt_cs(b2, sizeof(b2), r), cpu_us_io(r));
		fflush(stdout);
	}
	if (nr[0] && nr[1] && nr[2] && nr[3])
		printf("ur / io_uring: batched NOP rate %s; qd-1 round trip time, mean (elapsed/ops) "
		       "%s, p50 %s\n",
		       fmt_ratio(b1, sizeof(b1), nr[1]->status == BENCH_OK ? nr[1]->med.iops : 0,
				 nr[0]->status == BENCH_OK ? nr[0]->med.iops : 0),
		       fmt_ratio(b2, sizeof(b2), us_per_op(nr[3]), us_per_op(nr[2])),
		       fmt_ratio(b3, sizeof(b3), nr[3]->status == BENCH_OK ? nr[3]->lat_p50 : 0,
				 nr[2]->status == BENCH_OK ? nr[2]->lat_p50 : 0));

	printf("\nAll figures: the whole system (bench and any server process it started), "
	       "medians of %u runs; the host is shared, so compare ratios, not absolutes.\n",
	       c->base.repeat);
	if (failures)
		printf("%d job(s) FAILED (see above): these figures are not valid.\n", failures);
	return write_outputs(c) || failures ? 1 : 0;
}

/* ---------------------------------------------------------------- sweep */

/* The grid is sweep.c's; the options given here replace its defaults. */
static int cmd_sweep(struct cli *c)
{
	static struct bench_sweep_cfg cfg;
	bench_sweep_defaults(&cfg, c->quick);
	uint64_t seed = c->base.seed;
	int verify = c->base.verify;
	snprintf(cfg.base.dir, sizeof(cfg.base.dir), "%s", c->base.dir);
	snprintf(cfg.base.image, sizeof(cfg.base.image), "%s", c->base.image);
	cfg.base.seed = seed;
	cfg.base.verify = verify;
	cfg.base.syscount = c->base.syscount;
	if (c->repeat_set)
		cfg.base.repeat = c->base.repeat;
	if (c->warmup_set)
		cfg.base.warmup_s = c->base.warmup_s;
	if (c->nengines) {
		cfg.nengines = 0;
		for (unsigned i = 0; i < c->nengines && i < BENCH_SWEEP_MAXENG; i++)
			snprintf(cfg.engines[cfg.nengines++], sizeof(cfg.engines[0]), "%s", c->engines[i]);
	}
	if (c->nsize) {
		cfg.nsizes = 0;
		for (unsigned i = 0; i < c->nsize && i < 4; i++) {   /* ascending, no repeats */
			unsigned k = cfg.nsizes;
			while (k && cfg.sizes[k - 1] > c->size[i]) {
				cfg.sizes[k] = cfg.sizes[k - 1];
				k--;
			}
			if (k && cfg.sizes[k - 1] == c->size[i]) {
				memmove(&cfg.sizes[k], &cfg.sizes[k + 1], (cfg.nsizes - k) * sizeof(cfg.sizes[0]));
				continue;
			}
			cfg.sizes[k] = c->size[i];
			cfg.nsizes++;
		}
		cfg.big = cfg.sizes[cfg.nsizes - 1];
	}
	if (c->ndirect) {
		cfg.ndirect = c->ndirect;
		memcpy(cfg.direct, c->direct, sizeof(cfg.direct));
	}
	if (c->base.time_s > 0)
		cfg.cell_time = c->base.time_s;
	if (c->iops_time > 0)
		cfg.iops_time = c->iops_time;
	if (c->busy_load_set)
		cfg.busy_load = c->busy_load;
	if (c->busy_cpu_set)
		cfg.busy_cpu = c->busy_cpu;
	cfg.force = c->force;
	cfg.progress = c->progress;
	cfg.md = c->md;
	cfg.json = c->json;
	cfg.csv = c->csv;
	snprintf(cfg.cmdline, sizeof(cfg.cmdline), "%s", c->cmdline);
	return bench_sweep_main(&cfg);
}

/* ---------------------------------------------------------------- options */

int main(int argc, char **argv)
{
	static struct cli c;
	enum { O_ENGINE = 256, O_BS, O_QD, O_SIZE, O_PATTERN, O_RW, O_MIX, O_DIRECT, O_TIME,
	       O_BYTES, O_WARMUP, O_REPEAT, O_SEED, O_NOVERIFY, O_NOSYSCOUNT, O_DIR, O_IMAGE, O_JSON, O_CSV,
	       O_QUICK, O_BATCH, O_INTERVAL, O_CLIENTS, O_MD, O_FORCE, O_PROGRESS, O_BUSY_LOAD,
	       O_BUSY_CPU, O_IOPS_TIME };
	static const struct option lo[] = {
		{ "engine", required_argument, 0, O_ENGINE },
		{ "bs", required_argument, 0, O_BS },
		{ "qd", required_argument, 0, O_QD },
		{ "iodepth", required_argument, 0, O_QD },
		{ "size", required_argument, 0, O_SIZE },
		{ "pattern", required_argument, 0, O_PATTERN },
		{ "rw", required_argument, 0, O_RW },
		{ "mix-read", required_argument, 0, O_MIX },
		{ "direct", optional_argument, 0, O_DIRECT },
		{ "time", required_argument, 0, O_TIME },
		{ "bytes", required_argument, 0, O_BYTES },
		{ "warmup", required_argument, 0, O_WARMUP },
		{ "repeat", required_argument, 0, O_REPEAT },
		{ "seed", required_argument, 0, O_SEED },
		{ "no-verify", no_argument, 0, O_NOVERIFY },
		{ "no-syscount", no_argument, 0, O_NOSYSCOUNT },
		{ "dir", required_argument, 0, O_DIR },
		{ "image", required_argument, 0, O_IMAGE },
		{ "json", required_argument, 0, O_JSON },
		{ "csv", required_argument, 0, O_CSV },
		{ "quick", no_argument, 0, O_QUICK },
		{ "batch", no_argument, 0, O_BATCH },
		{ "interval", required_argument, 0, O_INTERVAL },
		{ "clients", required_argument, 0, O_CLIENTS },
		{ "md", required_argument, 0, O_MD },
		{ "force", no_argument, 0, O_FORCE },
		{ "progress", no_argument, 0, O_PROGRESS },
		{ "busy-load", required_argument, 0, O_BUSY_LOAD },
		{ "busy-cpu", required_argument, 0, O_BUSY_CPU },
		{ "iops-time", required_argument, 0, O_IOPS_TIME },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *cmd = "default";
	char buf[256];

	bench_job_defaults(&c.base);
	c.base.repeat = 3;
	if (argc > 0 && argv[0][0]) {
		/* installed as urfs-bench: its messages say so */
		const char *slash = strrchr(argv[0], '/');
		prog = slash ? slash + 1 : argv[0];
	}
	size_t off = 0;
	for (int i = 0; i < argc && off < sizeof(c.cmdline) - 1; i++)
		off += (size_t)snprintf(c.cmdline + off, sizeof(c.cmdline) - off, "%s%s",
					i ? " " : "", argv[i]);
	if (argc > 1 && argv[1][0] != '-') {
		cmd = argv[1];
		argv++;
		argc--;
	}
	if (!strcmp(cmd, "db"))         /* database page patterns: options of its own */
		return bench_db_main(argc, argv);
	int opt;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		int bad = 0;
		switch (opt) {
		case O_ENGINE:
			snprintf(buf, sizeof(buf), "%s", optarg);
			c.nengines = 0;
			for (char *s = buf, *t; (t = strsep(&s, ",")); ) {
				/* "io_uring:sqpoll,fixedbufs": options after ':' until the next engine name */
				if (c.nengines && !strchr(t, ':') && !bench_engine_find(t)) {
					char *prev = c.engines[c.nengines - 1];
					char *n = malloc(strlen(prev) + strlen(t) + 2);
					if (!n)
						return 2;
					sprintf(n, "%s,%s", prev, t);
					c.engines[c.nengines - 1] = n;
					continue;
				}
				if (c.nengines == MAXL) {
					bad = 1;
					break;
				}
				c.engines[c.nengines++] = strdup(t);
			}
			break;
		case O_BS:
			bad = parse_list_u64(optarg, c.bs, &c.nbs, 1) < 0;
			break;
		case O_QD:
			bad = parse_list_u64(optarg, c.qd, &c.nqd, 0) < 0;
			break;
		case O_SIZE:
			bad = parse_list_u64(optarg, c.size, &c.nsize, 1) < 0;
			break;
		case O_PATTERN:
			snprintf(buf, sizeof(buf), "%s", optarg);
			c.npattern = 0;
			for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
				if (c.npattern == 2)
					bad = 1;
				else if (!strcmp(t, "seq") || !strcmp(t, "sequential"))
					c.random[c.npattern++] = 0;
				else if (!strcmp(t, "rand") || !strcmp(t, "random"))
					c.random[c.npattern++] = 1;
				else
					bad = 1;
			}
			break;
		case O_RW:
			snprintf(buf, sizeof(buf), "%s", optarg);
			c.nrw = 0;
			for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
				if (c.nrw == 4)
					bad = 1;
				else if (!strcmp(t, "read"))
					c.rw[c.nrw++] = BENCH_RW_READ;
				else if (!strcmp(t, "write"))
					c.rw[c.nrw++] = BENCH_RW_WRITE;
				else if (!strcmp(t, "mix") || !strcmp(t, "rw"))
					c.rw[c.nrw++] = BENCH_RW_MIX;
				else if (!strcmp(t, "nop"))
					c.rw[c.nrw++] = BENCH_RW_NOP;
				else
					bad = 1;
			}
			break;
		case O_MIX:
			c.base.mix_read = (unsigned)atoi(optarg);
			bad = c.base.mix_read > 100;
			break;
		case O_DIRECT:
			c.ndirect = 0;
			if (!optarg && optind < argc && (!strcmp(argv[optind], "0") ||
			    !strcmp(argv[optind], "1") || !strcmp(argv[optind], "0,1") ||
			    !strcmp(argv[optind], "1,0")))
				optarg = argv[optind++];
			if (!optarg) {
				c.direct[c.ndirect++] = 1;
				break;
			}
			snprintf(buf, sizeof(buf), "%s", optarg);
			for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
				if (c.ndirect == 2 || (strcmp(t, "0") && strcmp(t, "1")))
					bad = 1;
				else
					c.direct[c.ndirect++] = atoi(t);
			}
			break;
		case O_TIME:
			c.base.time_s = atof(optarg);
			bad = c.base.time_s <= 0;
			break;
		case O_BYTES:
			bad = bench_parse_size(optarg, &c.base.bytes) < 0;
			break;
		case O_WARMUP:
			c.base.warmup_s = atof(optarg);
			c.warmup_set = 1;
			bad = c.base.warmup_s < 0;
			break;
		case O_REPEAT:
			c.base.repeat = (unsigned)atoi(optarg);
			c.repeat_set = 1;
			bad = c.base.repeat < 1 || c.base.repeat > BENCH_MAX_REPEAT;
			break;
		case O_SEED:
			c.base.seed = strtoull(optarg, NULL, 0);
			break;
		case O_NOVERIFY:
			c.base.verify = 0;
			break;
		case O_NOSYSCOUNT:
			c.base.syscount = 0;
			break;
		case O_DIR:
			snprintf(c.base.dir, sizeof(c.base.dir), "%s", optarg);
			break;
		case O_IMAGE:
			snprintf(c.base.image, sizeof(c.base.image), "%s", optarg);
			break;
		case O_JSON:
			c.json = optarg;
			break;
		case O_CSV:
			c.csv = optarg;
			break;
		case O_QUICK:
			c.quick = 1;
			break;
		case O_BATCH:
			c.base.batch = 1;
			break;
		case O_INTERVAL:
			snprintf(buf, sizeof(buf), "%s", optarg);
			c.ninterval = 0;
			for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ","))
				bad = c.ninterval == MAXL ||
				      bench_parse_interval(t, &c.interval[c.ninterval++]) < 0;
			bad |= !c.ninterval;
			break;
		case O_CLIENTS:
			bad = parse_list_u64(optarg, c.clients, &c.nclients, 0) < 0;
			for (unsigned i = 0; i < c.nclients && !bad; i++)
				bad = c.clients[i] > BENCH_MAX_CLIENTS;
			break;
		case O_MD:
			c.md = optarg;
			break;
		case O_FORCE:
			c.force = 1;
			break;
		case O_PROGRESS:
			c.progress = 1;
			break;
		case O_BUSY_LOAD:
			c.busy_load = atof(optarg);
			c.busy_load_set = 1;
			bad = c.busy_load < 0;
			break;
		case O_BUSY_CPU:
			c.busy_cpu = atof(optarg);
			c.busy_cpu_set = 1;
			bad = c.busy_cpu < 0;
			break;
		case O_IOPS_TIME:
			c.iops_time = atof(optarg);
			bad = c.iops_time <= 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			const char *name = "?";
			for (const struct option *o = lo; o->name; o++)
				if (o->val == opt) {
					name = o->name;
					break;
				}
			const char *valid = "";
			switch (opt) {   /* what the option takes */
			case O_ENGINE:   valid = "up to 16 engine names, comma-separated (bench --help lists them)"; break;
			case O_BS:
			case O_SIZE:     valid = "up to 16 sizes, comma-separated, 1 or more, with an optional K, M, G or T suffix"; break;
			case O_QD:       valid = "up to 16 queue depths, comma-separated, 1 .. 65535"; break;
			case O_PATTERN:  valid = "seq, rand, or both: seq,rand"; break;
			case O_RW:       valid = "up to 4 of read, write, mix, nop, comma-separated"; break;
			case O_MIX:      valid = "a percentage of reads, 0 .. 100"; break;
			case O_DIRECT:   valid = "0, 1 or 0,1"; break;
			case O_TIME:
			case O_IOPS_TIME: valid = "seconds, more than 0 (2 or 0.5)"; break;
			case O_BYTES:    valid = "a size with an optional K, M, G or T suffix"; break;
			case O_WARMUP:   valid = "seconds, 0 or more"; break;
			case O_REPEAT:   valid = "a count, 1 .. " STR(BENCH_MAX_REPEAT); break;
			case O_INTERVAL: valid = "up to 16 times with a unit (ns, us, ms or s), comma-separated, 1ns .. 3600s: 100us,2ms"; break;
			case O_CLIENTS:  valid = "up to 16 client counts, comma-separated, 1 .. " STR(BENCH_MAX_CLIENTS); break;
			case O_BUSY_LOAD: valid = "a load average, 0 or more"; break;
			case O_BUSY_CPU: valid = "a percentage, 0 or more"; break;
			}
			fprintf(stderr, "%s: bad value for --%s: '%s'%s%s%s\n", prog, name,
				optarg ? optarg : "", *valid ? " (" : "", valid, *valid ? ")" : "");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[optind]);
		usage(stderr);
		return 2;
	}
	if ((c.ninterval || c.nclients) && strcmp(cmd, "run")) {
		fprintf(stderr, "%s: --interval and --clients are options of 'bench run'\n", prog);
		return 2;
	}
	for (unsigned i = 0; i < c.nengines; i++) {
		struct bench_job j;
		if (make_job(&c, c.engines[i], &j) < 0)
			return 2;
		for (unsigned n = 0; n < c.nclients && j.ops; n++) {
			const char *no = bench_clients_refused(&j, (unsigned)c.clients[n]);
			if (no) {
				fprintf(stderr, "%s: --clients %llu with engine %s: %s\n", prog,
					(unsigned long long)c.clients[n], j.label, no);
				return 2;
			}
		}
	}
	if (!c.ninterval)
		c.interval[c.ninterval++] = 0;
	if (!c.nclients)
		c.clients[c.nclients++] = 1;
	if (!c.nbs)
		c.bs[c.nbs++] = 4096;
	if (!c.nqd)
		c.qd[c.nqd++] = 1;
	if (!c.npattern)
		c.random[c.npattern++] = 0;
	if (!c.nrw)
		c.rw[c.nrw++] = BENCH_RW_READ;
	signal(SIGINT, on_sigint);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(cmd, "default")) {
		if (!c.warmup_set)
			c.base.warmup_s = 0.1;
		return cmd_default(&c);
	} else if (!strcmp(cmd, "run")) {
		if (!c.nengines) {
			fprintf(stderr, "%s: run: --engine is required\n", prog);
			return 2;
		}
		if (!c.nsize)
			c.size[c.nsize++] = 32ull << 20;
		if (!c.ndirect)
			c.direct[c.ndirect++] = 0;
		return cmd_run(&c);
	} else if (!strcmp(cmd, "sweep")) {
		return cmd_sweep(&c);
	}
	fprintf(stderr, "%s: unknown command '%s'\n", prog, cmd);
	usage(stderr);
	return 2;
}
