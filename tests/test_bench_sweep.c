/* SPDX-License-Identifier: MIT */
/* Description: `bench sweep` writes the original benchmark's three tables for
 * every engine and honours its conditions rule:
 * - the tables of a planned grid filled with planted results: every table
 *   (T1 syscalls/context switches, T2 IOPS, T3 MiB/s per file size, read and
 *   write, buffered and O_DIRECT) and every engine is there, and exactly the
 *   planted cell whose spread (max - min) / median exceeds 25% is flagged;
 * - the busy rule: load average at or above the threshold, others' CPU share
 *   at or above it (before or during the run), an unreadable figure is busy;
 * - the program: the quick sweep on a machine called quiet (thresholds out of
 *   reach) writes every table and engine to --md, JSON with the conditions,
 *   nothing marked noisy; with --busy-load 0 it refuses before running a cell
 *   (exit 3, no file);
 *   with --busy-load 0 --force it writes the result marked noisy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/bench/bench.h"
#include "testutil.h"

/* Every table heading and, in each table, a row or column for every engine. */
static void every_table(const char *md, const struct bench_sweep_cfg *c, const char *what)
{
	const char *heads[] = { "## T1: syscalls and context switches", "## T2: random 4K IOPS",
				"## T3: sequential throughput (MiB/s)" };
	for (int i = 0; i < 3; i++)
		if (!strstr(md, heads[i]))
			FAIL("%s: no '%s'", what, heads[i]);
	char want[128], sz[16];
	for (unsigned s = 0; s < c->nsizes; s++)
		for (int w = 0; w < 2; w++)
			for (int d = 0; d < 2; d++) {
				bench_fmt_size(sz, sizeof(sz), c->sizes[s]);
				snprintf(want, sizeof(want), "### %s file, %s, %s", sz,
					 w ? "write" : "read", d ? "O_DIRECT" : "buffered");
				if (tu_count(md, want) != 1)
					FAIL("%s: T3 table '%s' %d times", what, want, tu_count(md, want));
			}
	for (unsigned e = 0; e < c->nengines; e++)
		for (int d = 0; d < 2; d++) {
			/* T1 and T2 have a row per engine and mode */
			snprintf(want, sizeof(want), "| %s | %s |", c->engines[e], d ? "O_DIRECT" : "buffered");
			if (tu_count(md, want) != 2)
				FAIL("%s: '%s' in %d rows, not 2 (T1, T2)", what, want, tu_count(md, want));
		}
	/* T3's header row names every engine in order */
	char hdr[512] = "| qd | bs |";
	for (unsigned e = 0; e < c->nengines; e++) {
		size_t l = strlen(hdr);
		snprintf(hdr + l, sizeof(hdr) - l, " %s |", c->engines[e]);
	}
	if (tu_count(md, hdr) != (int)(4 * c->nsizes))
		FAIL("%s: T3 header '%s' %d times", what, hdr, tu_count(md, hdr));
}

static void plant(struct bench_cell *c, double a, double b, double x)
{
	double v[3] = { a, b, x };
	c->done = 1;
	memset(&c->res, 0, sizeof(c->res));
	c->res.job = c->job;
	c->res.status = BENCH_OK;
	c->res.nruns = 3;
	for (int k = 0; k < 3; k++) {
		c->res.runs[k].mibs = v[k];
		c->res.runs[k].iops = v[k] * 1000;
		c->res.runs[k].syscalls = (int64_t)v[k];
		c->res.runs[k].ctxsw = (int64_t)v[k];
		c->res.runs[k].ios = 100;
	}
}

static void tables(void)
{
	static struct bench_sweep sw;
	char err[200];
	bench_sweep_defaults(&sw.cfg, 0);              /* the full grid's plan */
	sw.cfg.base.repeat = 3;
	CHECK(sw.cfg.nengines == 7 && sw.cfg.nsizes == 2 && sw.cfg.npts == 5);
	if (bench_sweep_plan(&sw, err, sizeof(err)) < 0)
		FAIL("plan: %s", err);
	/* T1: 7 engines x 2 modes x read/write; T2 x qd 64/128; T3 x 2 sizes x 5 pairs */
	CHECK_EQ(sw.ncells, 28 + 56 + 280);
	/* the full grid fits in 20 minutes by the estimate (its model is in sweep.c) */
	double parts[BENCH_NPARTS];
	double est = bench_sweep_estimate(&sw, 0, parts);
	if (est > 1200 || parts[BENCH_PART_T1] <= 0 || parts[BENCH_PART_T2] <= 0 ||
	    parts[BENCH_PART_T3] <= 0)
		FAIL("estimate %.0f s (T1 %.0f, T2 %.0f, T3 %.0f)", est, parts[0], parts[1], parts[2]);
	size_t flagged = 0, edge = 0;
	for (size_t i = 0; i < sw.ncells; i++) {
		struct bench_cell *c = &sw.cells[i];
		/* T3, 512M, write, O_DIRECT, qd 128 x 32K, libaio (engine 4): 40% */
		if (c->part == BENCH_PART_T3 && c->job.size == 512ull << 20 && c->job.direct &&
		    c->job.rw == BENCH_RW_WRITE && c->job.qd == 128 && c->eng == 4) {
			plant(c, 1000, 700, 1100);
			flagged = i;
		} else if (c->part == BENCH_PART_T3 && c->job.size == 32ull << 20 && !c->job.direct &&
			   c->job.rw == BENCH_RW_READ && c->job.qd == 64 && c->job.bs == 32768 &&
			   c->eng == 1) {
			plant(c, 1000, 950, 1200);          /* exactly 25%: not flagged */
			edge = i;
		} else {
			plant(c, 1000, 990, 1010);
		}
	}
	CHECK(flagged && edge);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bench_sweep_markdown(f, &sw);
	fclose(f);
	every_table(buf, &sw.cfg, "planted tables");
	if (tu_count(buf, " !") != 1 || !strstr(buf, "1000 (700..1100) !"))
		FAIL("%d flagged cells, want exactly the planted one", tu_count(buf, " !"));
	/* ... in the right table, row and column: qd 128, 32K, fifth engine (libaio) */
	const char *t = strstr(buf, "### 512M file, write, O_DIRECT");
	CHECK(t);
	const char *row = strstr(t, "\n| 128 | 32K |");
	CHECK(row);
	const char *bang = strstr(buf, " !");
	if (bang < row || memchr(row + 1, '\n', (size_t)(bang - row - 1)))
		FAIL("the flag is not on the qd 128 / 32K row of the 512M O_DIRECT write table");
	int bars = 0;
	for (const char *p = row + 1; p < bang; p++)
		bars += *p == '|';
	if (bars != 7)   /* | 128 | 32K | sfs | ur | psync | io_uring | libaio */
		FAIL("the flag is in column %d, not libaio's", bars - 2);
	if (!strstr(buf, "1000 (950..1200) |"))
		FAIL("the 25%% cell is not shown unflagged");
	if (strstr(buf, "Noisy"))
		FAIL("marked noisy without being forced");
	free(buf);

	/* a forced busy run is marked noisy in its header */
	sw.cond.busy = sw.cond.forced = 1;
	snprintf(sw.cond.why, sizeof(sw.cond.why), "planted");
	f = open_memstream(&buf, &len);
	bench_sweep_markdown(f, &sw);
	fclose(f);
	if (!strstr(buf, "**Noisy**") || strstr(buf, "**Noisy**") > strstr(buf, "## T1"))
		FAIL("a forced busy result is not marked noisy in its header");
	free(buf);
	bench_sweep_free(&sw);
	printf("tables: every table and engine, the planted 40%% spread flagged, 25%% not\n");
}

static void rule(void)
{
	struct bench_cond c;
	memset(&c, 0, sizeof(c));
	c.ncpu = 2;
	c.busy_load = 1.0;
	c.busy_cpu = 10;
	c.load_before = 0.99;
	c.other_before = 9.9;
	if (bench_cond_judge(&c))
		FAIL("quiet machine called busy: %s", c.why);
	c.load_before = 1.0;
	if (!bench_cond_judge(&c) || !strstr(c.why, "load average 1.00"))
		FAIL("load at the threshold not busy (%s)", c.why);
	c.load_before = 0.2;
	c.other_before = 10;
	if (!bench_cond_judge(&c) || !strstr(c.why, "idle sample"))
		FAIL("others at the threshold before the run not busy");
	c.other_before = 1;
	c.measured_during = 1;
	c.other_during = 12;
	if (!bench_cond_judge(&c) || !strstr(c.why, "during the run"))
		FAIL("others during the run not busy");
	c.other_during = 3;
	if (bench_cond_judge(&c))
		FAIL("quiet during the run called busy: %s", c.why);
	c.load_before = -1;
	if (!bench_cond_judge(&c))
		FAIL("an unreadable load average called quiet");
	c.load_before = 0;
	c.busy_load = 0;                 /* --busy-load 0: always busy */
	if (!bench_cond_judge(&c))
		FAIL("--busy-load 0 not busy");
	printf("rule: load and others' CPU at their thresholds are busy\n");
}

static int run(const char *bin, const char *args, const char *out, const char *err)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "'%s/bench' sweep --quick %s > %s 2> %s", bin, args, out, err);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

int main(void)
{
	tables();
	rule();

	const char *bin = getenv("UR_BIN");
	if (!bin) {
		printf("SKIP-PART: UR_BIN: the bench program: not run from tests/run.sh\n");
		printf("PASS\n");
		return 0;
	}
	struct bench_sweep_cfg q;
	bench_sweep_defaults(&q, 1);
	/* quiet by rule: thresholds out of reach */
	int rc = run(bin, "--busy-load 1000 --busy-cpu 1000 --md q.md --json q.json", "out", "err");
	char *md = tu_slurp("q.md"), *js = tu_slurp("q.json"), *out = tu_slurp("out"), *er = tu_slurp("err");
	if (rc != 0 || !md || !js)
		FAIL("quick sweep: exit %d, md %p json %p\n%s\n%s", rc, (void *)md, (void *)js,
		     out ? out : "", er ? er : "");
	every_table(md, &q, "quick sweep");
	if (strstr(md, "Noisy") || !strstr(js, "\"noisy\": false") || !strstr(js, "\"conditions\": {"))
		FAIL("a quiet quick sweep is marked noisy or lacks its conditions");
	if (strstr(md, "| FAIL") || strstr(md, "FAIL |"))
		FAIL("a cell failed:\n%s", md);
	/* the syscall counter (a tracepoint that slows every system call) only
	 * for T1, whose figures are counts; T1's counts are there */
	if (!strstr(js, "\"syscalls\": \"not counted (off for this job"))
		FAIL("T2/T3 cells ran with the syscall counter on");
	if (!strstr(js, "\"counters_na\": {\"syscalls\": \"\""))
		FAIL("no cell counted syscalls (T1)");
	if (!strstr(out, "estimate: about") || !strstr(out, "times: layout"))
		FAIL("no estimate or times on stdout:\n%s", out);
	if (strstr(out, "elapsed, about"))
		FAIL("progress on stdout");
	printf("quick sweep: every table and engine\n");
	free(md);
	free(js);
	free(out);
	free(er);

	/* busy by rule: refused before anything runs (no file laid out in a fresh
	 * directory), nothing written */
	if (mkdir("fresh", 0755) < 0)
		FAIL("mkdir fresh");
	rc = run(bin, "--busy-load 0 --dir fresh --md r.md --json r.json", "out", "err");
	er = tu_slurp("err");
	struct stat st;
	if (rc != 3 || stat("r.md", &st) == 0 || stat("r.json", &st) == 0 ||
	    !strstr(er, "the machine is busy") || !strstr(er, "--force"))
		FAIL("--busy-load 0: exit %d, files %s, stderr:\n%s", rc,
		     stat("r.md", &st) == 0 ? "written" : "absent", er);
	if (stat("fresh/benchfile", &st) == 0 || stat("fresh/disk.sfs", &st) == 0)
		FAIL("--busy-load 0: cells ran before the refusal");
	free(er);
	/* ... forced: written, marked noisy (psync alone, buffered: short) */
	rc = run(bin, "--busy-load 0 --force --engine psync --direct 0 --md n.md --json n.json",
		 "out", "err");
	md = tu_slurp("n.md");
	js = tu_slurp("n.json");
	if (rc != 0 || !md || !strstr(md, "**Noisy**") || !js || !strstr(js, "\"noisy\": true"))
		FAIL("--force on a busy machine: exit %d, not marked noisy", rc);
	printf("busy: refused without --force, noisy with it\n");
	free(md);
	free(js);
	printf("PASS\n");
	return 0;
}
