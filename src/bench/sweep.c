/* SPDX-License-Identifier: MIT */
/*
 * sweep.c - `bench sweep`: the three tables of the asynchronous-I/O benchmark
 * bench descends from, for every engine, buffered and O_DIRECT:
 *   T1  syscalls and context switches of one sequential pass over a 512 MiB
 *       file at qd 64 with 32 KiB blocks, reads and writes;
 *   T2  random 4 KiB IOPS at qd 64 and 128, reads and writes (time-bound);
 *   T3  sequential MiB/s for 32M and 512M files across (qd, bs) = (64, 32K),
 *       (128, 32K), (512, 32K), (64, 1M), (512, 1M), reads and writes
 *       (time-bound).
 * Each cell is the median of its repeats with min..max, flagged when the
 * spread exceeds 25%. Each file is laid out once per size and reused by every
 * engine and cell; the page cache is warmed once before each run of buffered
 * cells; a write cell's data is synced (untimed) before the next cell.
 * The machine's conditions (cond.c) are measured before and during the run.
 * Must never write a result from a busy machine unless forced (and then marks
 * it noisy), never print progress on stdout (only on stderr, when it is a
 * terminal or --progress asks), and never show a figure it did not measure.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static const char *const prog = "bench";

static const char *const part_name[BENCH_NPARTS] = { "T1", "T2", "T3" };

void bench_sweep_defaults(struct bench_sweep_cfg *c, int quick)
{
	static const char *const engines[] = {
		"sfs", "ur", "psync", "io_uring", "libaio", "posixaio", "dropin",
	};
	static const struct { unsigned qd; uint32_t bs; } pts[] = {
		{ 64, 32768 }, { 128, 32768 }, { 512, 32768 }, { 64, 1u << 20 }, { 512, 1u << 20 },
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	memset(c, 0, sizeof(*c));
	bench_job_defaults(&c->base);
	c->quick = quick;
	for (size_t i = 0; i < sizeof(engines) / sizeof(engines[0]); i++)
		snprintf(c->engines[c->nengines++], sizeof(c->engines[0]), "%s", engines[i]);
	c->direct[0] = 0;
	c->direct[1] = 1;
	c->ndirect = 2;
	if (quick) {
		/* every table and engine, one small file, two (qd, bs) pairs, one run */
		c->sizes[c->nsizes++] = 8ull << 20;
		c->qd[0] = 64, c->bs[0] = 32768;
		c->qd[1] = 64, c->bs[1] = 1u << 20;
		c->npts = 2;
		c->base.repeat = 1;
		c->base.warmup_s = 0;
		c->cell_time = 0.02;
		c->iops_time = 0.02;
		c->idle_window = 0.2;
	} else {
		c->sizes[c->nsizes++] = 32ull << 20;
		c->sizes[c->nsizes++] = 512ull << 20;
		for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
			c->qd[c->npts] = pts[i].qd;
			c->bs[c->npts++] = pts[i].bs;
		}
		c->base.repeat = 3;
		c->base.warmup_s = 0.1;
		c->cell_time = 0.4;
		c->iops_time = 1.0;
		c->idle_window = 1.0;
	}
	c->big = c->sizes[c->nsizes - 1];
	c->busy_load = 0.5 * (double)(ncpu > 0 ? ncpu : 1);
	c->busy_cpu = 10.0;
}

/* ---------------------------------------------------------------- the plan */

static int add_cell(struct bench_sweep *sw, size_t *cap, int part, unsigned eng, uint64_t size,
		    int direct, int rw, int random, unsigned qd, uint32_t bs, double time_s,
		    char *err, size_t n)
{
	if (sw->ncells == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct bench_cell *c = realloc(sw->cells, nc * sizeof(*c));
		if (!c) {
			snprintf(err, n, "out of memory");
			return -ENOMEM;
		}
		sw->cells = c;
		*cap = nc;
	}
	struct bench_cell *c = &sw->cells[sw->ncells];
	memset(c, 0, sizeof(*c));
	c->part = part;
	c->eng = eng;
	c->job = sw->cfg.base;
	if (bench_parse_engine(sw->cfg.engines[eng], &c->job, err, n) < 0)
		return -EINVAL;
	c->job.size = size;
	c->job.direct = direct;
	c->job.rw = rw;
	c->job.random = random;
	c->job.qd = qd;
	c->job.bs = bs;
	c->job.time_s = time_s;
	c->job.bytes = 0;
	c->job.batch = 0;
	/* Only T1's figures are counts. While the syscall counter (a tracepoint)
	 * is on, every system call on the machine takes the kernel's traced
	 * path (+19% for a cached pread, measured): T2 and T3 time without it. */
	c->job.syscount = part == BENCH_PART_T1 && sw->cfg.base.syscount ? BENCH_SC_TIMED : BENCH_SC_OFF;
	sw->ncells++;
	return 0;
}

/* Sizes ascending; the T3 cells of each size, and on the largest file T1 and
 * T2 as well: each file is laid out once. Buffered cells before O_DIRECT ones
 * within each part, reads before writes, engines innermost. */
int bench_sweep_plan(struct bench_sweep *sw, char *err, size_t n)
{
	const struct bench_sweep_cfg *c = &sw->cfg;
	size_t cap = 0;
	sw->cells = NULL;
	sw->ncells = 0;
	if (!c->nengines || !c->nsizes || !c->ndirect || !c->npts) {
		snprintf(err, n, "an empty grid");
		return -EINVAL;
	}
	static const int rws[2] = { BENCH_RW_READ, BENCH_RW_WRITE };
#define ADD(...) do { if (add_cell(sw, &cap, __VA_ARGS__, err, n) < 0) return -EINVAL; } while (0)
	for (unsigned s = 0; s < c->nsizes; s++) {
		uint64_t size = c->sizes[s];
		int big = size == c->big;
		if (big)
			for (unsigned d = 0; d < c->ndirect; d++)
				for (int w = 0; w < 2; w++)
					for (unsigned e = 0; e < c->nengines; e++)
						ADD(BENCH_PART_T1, e, size, c->direct[d], rws[w], 0, 64,
						    32768, 0.0);
		for (unsigned d = 0; d < c->ndirect; d++)
			for (int w = 0; w < 2; w++)
				for (unsigned p = 0; p < c->npts; p++)
					for (unsigned e = 0; e < c->nengines; e++)
						ADD(BENCH_PART_T3, e, size, c->direct[d], rws[w], 0,
						    c->qd[p], c->bs[p], c->cell_time);
		if (big)
			for (unsigned d = 0; d < c->ndirect; d++)
				for (int w = 0; w < 2; w++)
					for (unsigned q = 64; q <= 128; q *= 2)
						for (unsigned e = 0; e < c->nengines; e++)
							ADD(BENCH_PART_T2, e, size, c->direct[d], rws[w], 1,
							    q, 4096, c->iops_time);
	}
#undef ADD
	return 0;
}

void bench_sweep_free(struct bench_sweep *sw)
{
	free(sw->cells);
	sw->cells = NULL;
	sw->ncells = 0;
}

/* A rough model, for the estimate only: an engine moves 2000 MiB/s buffered
 * and 400 MiB/s with O_DIRECT; a time-bound run also drains what is in flight
 * at its deadline; a buffered write cell syncs its file at 800 MiB/s; each
 * job costs 0.08 s of setup (a server, a mount, buffers). */
static double cell_estimate(const struct bench_cell *c)
{
	const struct bench_job *j = &c->job;
	double mibs = j->direct ? 400.0 : 2000.0;
	double drain = (double)j->qd * j->bs / 1048576.0 / mibs;
	double run = j->time_s > 0 ? j->time_s + drain : (double)j->size / 1048576.0 / mibs;
	double warm = j->warmup_s > 0 ? j->warmup_s + drain : 0;
	double sync = j->rw == BENCH_RW_WRITE && !j->direct ? (double)j->size / 1048576.0 / 800.0 : 0;
	return 0.08 + warm + (double)(j->repeat ? j->repeat : 1) * run + sync;
}

double bench_sweep_estimate(const struct bench_sweep *sw, size_t from, double *part_s)
{
	double t = 0;
	if (part_s)
		for (int p = 0; p < BENCH_NPARTS; p++)
			part_s[p] = 0;
	for (size_t i = from; i < sw->ncells; i++) {
		double e = cell_estimate(&sw->cells[i]);
		t += e;
		if (part_s)
			part_s[sw->cells[i].part] += e;
	}
	return t;
}

/* ---------------------------------------------------------------- tables */

static const struct bench_cell *find(const struct bench_sweep *sw, int part, uint64_t size,
				     int direct, int rw, unsigned qd, uint32_t bs, unsigned eng)
{
	for (size_t i = 0; i < sw->ncells; i++) {
		const struct bench_cell *c = &sw->cells[i];
		if (c->part == part && c->job.size == size && c->job.direct == direct &&
		    c->job.rw == rw && c->job.qd == qd && c->job.bs == bs && c->eng == eng)
			return c->done ? c : NULL;
	}
	return NULL;
}

enum { M_MIBS, M_IOPS, M_SYSCALLS, M_CTXSW };

/* MiB/s as a plain number; IOPS and counts in k and M above 10000. */
static void fmt_num(char *buf, size_t n, double v, int metric)
{
	if (metric != M_MIBS && v >= 1e6)
		snprintf(buf, n, "%.2fM", v / 1e6);
	else if (metric != M_MIBS && v >= 1e4)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else if (v >= 100 || metric == M_SYSCALLS || metric == M_CTXSW)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.1f", v);
}

/* "median (min..max)", " !" when the spread exceeds 25%; skip/FAIL/n/a. */
static void fmt_cell(char *buf, size_t n, const struct bench_cell *c, int metric)
{
	if (!c) {
		snprintf(buf, n, "-");
		return;
	}
	const struct bench_result *r = &c->res;
	if (r->status != BENCH_OK) {
		snprintf(buf, n, "%s", r->status == BENCH_SKIPPED ? "skip" : "FAIL");
		return;
	}
	double v[BENCH_MAX_REPEAT];
	for (unsigned k = 0; k < r->nruns; k++) {
		const struct bench_run *run = &r->runs[k];
		v[k] = metric == M_MIBS ? run->mibs : metric == M_IOPS ? run->iops :
		       metric == M_SYSCALLS ? (double)run->syscalls : (double)run->ctxsw;
		if (v[k] < 0) {
			snprintf(buf, n, "n/a");
			return;
		}
	}
	struct bench_spread s;
	bench_spread(v, r->nruns, &s);
	char a[16], b[16], m[16];
	fmt_num(m, sizeof(m), s.med, metric);
	if (r->nruns < 2) {
		snprintf(buf, n, "%s", m);
		return;
	}
	fmt_num(a, sizeof(a), s.min, metric);
	fmt_num(b, sizeof(b), s.max, metric);
	snprintf(buf, n, "%s (%s..%s)%s", m, a, b, s.flagged ? " !" : "");
}

static const char *mode_name(int direct)
{
	return direct ? "O_DIRECT" : "buffered";
}

static int part_planned(const struct bench_sweep *sw, int part)
{
	for (size_t i = 0; i < sw->ncells; i++)
		if (sw->cells[i].part == part)
			return 1;
	return 0;
}

static void table_t1(FILE *f, const struct bench_sweep *sw)
{
	const struct bench_sweep_cfg *c = &sw->cfg;
	char sz[16], cell[4][64];
	bench_fmt_size(sz, sizeof(sz), c->big);
	fprintf(f, "## T1: syscalls and context switches, one sequential pass over the %s file, "
		"qd 64, 32K blocks\n\n", sz);
	fprintf(f, "Counts per pass (%llu I/Os) for the whole system: bench, its threads and the "
		"ur engine's server.\n\n", (unsigned long long)(c->big / 32768));
	fprintf(f, "| engine | mode | read: syscalls | read: ctx switches | write: syscalls | "
		"write: ctx switches |\n|---|---|---:|---:|---:|---:|\n");
	for (unsigned d = 0; d < c->ndirect; d++)
		for (unsigned e = 0; e < c->nengines; e++) {
			for (int w = 0; w < 2; w++) {
				const struct bench_cell *x = find(sw, BENCH_PART_T1, c->big, c->direct[d],
								  w ? BENCH_RW_WRITE : BENCH_RW_READ,
								  64, 32768, e);
				fmt_cell(cell[2 * w], sizeof(cell[0]), x, M_SYSCALLS);
				fmt_cell(cell[2 * w + 1], sizeof(cell[0]), x, M_CTXSW);
			}
			fprintf(f, "| %s | %s | %s | %s | %s | %s |\n", c->engines[e],
				mode_name(c->direct[d]), cell[0], cell[1], cell[2], cell[3]);
		}
	fprintf(f, "\n");
}

static void table_t2(FILE *f, const struct bench_sweep *sw)
{
	const struct bench_sweep_cfg *c = &sw->cfg;
	char sz[16], cell[4][64];
	bench_fmt_size(sz, sizeof(sz), c->big);
	fprintf(f, "## T2: random 4K IOPS, the %s file, %gs per run\n\n", sz, c->iops_time);
	fprintf(f, "| engine | mode | qd 64 read | qd 64 write | qd 128 read | qd 128 write |\n"
		"|---|---|---:|---:|---:|---:|\n");
	for (unsigned d = 0; d < c->ndirect; d++)
		for (unsigned e = 0; e < c->nengines; e++) {
			for (int k = 0; k < 4; k++)
				fmt_cell(cell[k], sizeof(cell[0]),
					 find(sw, BENCH_PART_T2, c->big, c->direct[d],
					      k % 2 ? BENCH_RW_WRITE : BENCH_RW_READ, k < 2 ? 64 : 128,
					      4096, e), M_IOPS);
			fprintf(f, "| %s | %s | %s | %s | %s | %s |\n", c->engines[e],
				mode_name(c->direct[d]), cell[0], cell[1], cell[2], cell[3]);
		}
	fprintf(f, "\n");
}

static void table_t3(FILE *f, const struct bench_sweep *sw)
{
	const struct bench_sweep_cfg *c = &sw->cfg;
	char sz[16], bs[16], cell[64];
	fprintf(f, "## T3: sequential throughput (MiB/s), %gs per run\n\n", c->cell_time);
	for (unsigned s = 0; s < c->nsizes; s++)
		for (int w = 0; w < 2; w++)
			for (unsigned d = 0; d < c->ndirect; d++) {
				bench_fmt_size(sz, sizeof(sz), c->sizes[s]);
				fprintf(f, "### %s file, %s, %s\n\n| qd | bs |", sz, w ? "write" : "read",
					mode_name(c->direct[d]));
				for (unsigned e = 0; e < c->nengines; e++)
					fprintf(f, " %s |", c->engines[e]);
				fprintf(f, "\n|---:|---:|");
				for (unsigned e = 0; e < c->nengines; e++)
					fprintf(f, "---:|");
				fprintf(f, "\n");
				for (unsigned p = 0; p < c->npts; p++) {
					bench_fmt_size(bs, sizeof(bs), c->bs[p]);
					fprintf(f, "| %u | %s |", c->qd[p], bs);
					for (unsigned e = 0; e < c->nengines; e++) {
						fmt_cell(cell, sizeof(cell),
							 find(sw, BENCH_PART_T3, c->sizes[s], c->direct[d],
							      w ? BENCH_RW_WRITE : BENCH_RW_READ, c->qd[p],
							      c->bs[p], e), M_MIBS);
						fprintf(f, " %s |", cell);
					}
					fprintf(f, "\n");
				}
				fprintf(f, "\n");
			}
}

void bench_sweep_markdown(FILE *f, const struct bench_sweep *sw)
{
	const struct bench_sweep_cfg *c = &sw->cfg;
	const struct bench_cond *k = &sw->cond;
	fprintf(f, "# bench sweep%s\n\n", c->quick ? " --quick (a short subset, not the grid)" : "");
	if (k->busy && k->forced)
		fprintf(f, "**Noisy**: the machine was busy and the result was forced with --force "
			"(%s). Do not publish these figures.\n\n", k->why);
	size_t ran = 0;
	for (size_t i = 0; i < sw->ncells; i++)
		ran += sw->cells[i].done;
	if (ran < sw->ncells)
		fprintf(f, "**Incomplete**: %zu of %zu cells ran (interrupted); a cell shown as - did "
			"not run.\n\n", ran, sw->ncells);
	fprintf(f, "%s\n", sw->setup);
	fprintf(f, "command: `%s`\n\n", c->cmdline);
	fprintf(f, "Conditions: before the run load average %.2f and other processes %.1f%% of "
		"the %ld CPUs (a %.1f s idle sample)", k->load_before, k->other_before, k->ncpu,
		k->idle_window);
	if (k->measured_during)
		fprintf(f, "; during it other processes %.1f%% of the CPUs (the machine's busy time "
			"minus bench's own; steal %.1f%%), load average at most %.2f (bench's own "
			"threads count in it), %.2f at the end", k->other_during, k->steal_during,
			k->load_max, k->load_after);
	fprintf(f, ". The machine counts as busy at a load average of %.2f or more before the "
		"run, or when other processes use %.1f%% of the CPUs or more.\n\n", k->busy_load,
		k->busy_cpu);
	fprintf(f, "Each cell: the median of %u run%s (min..max); a trailing `!` marks a spread "
		"(max - min) / median above %.0f%%. sfs and psync are synchronous (queue depth 1 "
		"whatever the row says); libaio without O_DIRECT completes each I/O inside "
		"io_submit; dropin is the liburing drop-in on its emulated ring.\n\n",
		c->base.repeat, c->base.repeat == 1 ? "" : "s", BENCH_SPREAD_MAX * 100);
	if (part_planned(sw, BENCH_PART_T1))
		table_t1(f, sw);
	if (part_planned(sw, BENCH_PART_T2))
		table_t2(f, sw);
	if (part_planned(sw, BENCH_PART_T3))
		table_t3(f, sw);

	fprintf(f, "## Times\n\n| part | seconds |\n|---|---:|\n");
	for (unsigned i = 0; i < k->nparts; i++)
		fprintf(f, "| %s | %.0f |\n", k->parts[i].name, k->parts[i].secs);
	fprintf(f, "| total | %.0f (estimated %.0f) |\n\n", k->total_secs, k->est_secs);
	fprintf(f, "Skipped or failed:\n");
	int any = 0;
	for (size_t i = 0; i < sw->ncells; i++) {
		const struct bench_cell *x = &sw->cells[i];
		if (!x->done || x->res.status == BENCH_OK)
			continue;
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = sw->cells[j].done && sw->cells[j].res.status == x->res.status &&
			       sw->cells[j].eng == x->eng && !strcmp(sw->cells[j].res.reason, x->res.reason);
		if (!seen) {
			fprintf(f, "- %s: %s: %s\n", c->engines[x->eng],
				x->res.status == BENCH_SKIPPED ? "skipped" : "FAILED", x->res.reason);
			any = 1;
		}
	}
	if (!any)
		fprintf(f, "- none\n");
}

/* ---------------------------------------------------------------- running */

static int needs_image(const struct bench_sweep_cfg *c)
{
	for (unsigned e = 0; e < c->nengines; e++) {
		struct bench_job j;
		char err[200];
		bench_job_defaults(&j);
		if (bench_parse_engine(c->engines[e], &j, err, sizeof(err)) == 0 &&
		    (j.ops->flags & BENCH_ENG_IMAGE))
			return 1;
	}
	return 0;
}

/* Lay out the host file and (for sfs, ur) the file in the image, for size. */
static int layout(const struct bench_sweep_cfg *c, uint64_t size, const char *host,
		  const char *image, char *why, size_t n)
{
	int e = bench_prepare_hostfile(host, size, c->base.seed, why, n);
	if (e < 0 || !needs_image(c))
		return e;
	static struct bench_td td;
	static struct bench_job job;
	memset(&td, 0, sizeof(td));
	job = c->base;
	job.size = size;
	td.job = &job;
	snprintf(td.image, sizeof(td.image), "%s", image);
	snprintf(td.fname, sizeof(td.fname), "benchfile");
	e = bench_sfs_prepare(&td);
	if (e < 0)
		snprintf(why, n, "%s", td.reason);
	return e;
}

/* Read a file once through the page cache (the buffered cells measure a warm cache). */
static void warm(const char *path)
{
	static char buf[1 << 20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* Write a file's dirty pages back, outside any timing, so that one cell's
 * writes are not flushed inside the next cell. */
static void sync_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		fdatasync(fd);
		close(fd);
	}
}

static void sample_wait(double secs)
{
	struct timespec ts = { (time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !bench_interrupted)
		;
}

static void add_part(struct bench_cond *k, const char *name, double secs)
{
	if (k->nparts < BENCH_MAX_PARTS) {
		snprintf(k->parts[k->nparts].name, sizeof(k->parts[0].name), "%s", name);
		k->parts[k->nparts++].secs = secs;
	}
}

static void refuse(const struct bench_cond *k)
{
	fprintf(stderr, "%s: sweep: the machine is busy: %s.\n"
		"%s: sweep: no result written; rerun on a quiet machine, or with --force to write "
		"one marked noisy (thresholds: --busy-load, --busy-cpu)\n", prog, k->why, prog);
}

static int write_files(struct bench_sweep *sw)
{
	const struct bench_sweep_cfg *c = &sw->cfg;
	int ret = 0;
	if (c->md) {
		FILE *f = fopen(c->md, "w");
		if (f) {
			bench_sweep_markdown(f, sw);
			if (ferror(f))
				errno = EIO;
		}
		if (!f || ferror(f) || fclose(f) != 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, c->md, strerror(errno));
			ret = 1;
		} else {
			printf("Markdown written to %s\n", c->md);
		}
	} else {
		bench_sweep_markdown(stdout, sw);
	}
	if (!c->json && !c->csv)
		return ret;
	struct bench_result *rs = malloc((sw->ncells ? sw->ncells : 1) * sizeof(*rs));
	size_t n = 0;
	if (!rs) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	for (size_t i = 0; i < sw->ncells; i++)
		if (sw->cells[i].done)
			rs[n++] = sw->cells[i].res;
	int e;
	if (c->json) {
		if ((e = bench_write_json_cond(c->json, rs, n, c->base.dir, c->cmdline, &sw->cond)) < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, c->json, strerror(-e));
			ret = 1;
		} else {
			printf("JSON written to %s\n", c->json);
		}
	}
	if (c->csv) {
		if ((e = bench_write_csv(c->csv, rs, n)) < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, c->csv, strerror(-e));
			ret = 1;
		} else {
			printf("CSV written to %s\n", c->csv);
		}
	}
	free(rs);
	return ret;
}

int bench_sweep_main(const struct bench_sweep_cfg *cfg)
{
	static struct bench_sweep sw;
	struct bench_cond *k = &sw.cond;
	char err[320];
	memset(&sw, 0, sizeof(sw));
	sw.cfg = *cfg;
	if (!cfg->quick && cfg->base.repeat < 3) {
		fprintf(stderr, "%s: sweep: each cell is the median of at least 3 runs (--repeat 3 or "
			"more, or --quick)\n", prog);
		return 2;
	}
	if (bench_sweep_plan(&sw, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: sweep: %s\n", prog, err);
		return 2;
	}
	int progress = bench_progress_wanted(cfg->progress);
	int tty = isatty(STDERR_FILENO);
	char host[PATH_MAX + 16], image[PATH_MAX];
	snprintf(host, sizeof(host), "%s/benchfile", cfg->base.dir);
	bench_image_path(&cfg->base, image, sizeof(image));

	/* the setup and the conditions before anything runs */
	char *mem = NULL;
	size_t memlen = 0;
	FILE *ms = open_memstream(&mem, &memlen);
	if (ms) {
		bench_setup_info(ms, cfg->base.dir);
		fclose(ms);
		snprintf(sw.setup, sizeof(sw.setup), "%s", mem ? mem : "");
		free(mem);
	}
	k->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	k->busy_load = cfg->busy_load;
	k->busy_cpu = cfg->busy_cpu;
	k->idle_window = cfg->idle_window;
	k->forced = cfg->force;
	k->load_before = bench_load1();
	struct bench_cpu_sample s0, s1, start;
	if (bench_cpu_sample(&s0) < 0)
		k->other_before = -1;
	else {
		sample_wait(cfg->idle_window);
		k->other_before = bench_cpu_sample(&s1) < 0 ? -1 : bench_other_cpu(&s0, &s1, k->ncpu, NULL);
	}
	k->load_max = k->load_before;
	double part_est[BENCH_NPARTS];
	k->est_secs = bench_sweep_estimate(&sw, 0, part_est);
	fputs(sw.setup, stdout);
	printf("bench sweep%s: %zu cells (%u engines, %s); load average %.2f, other processes "
	       "%.1f%% of the CPUs\n", cfg->quick ? " --quick" : "", sw.ncells, cfg->nengines,
	       cfg->ndirect == 2 ? "buffered and O_DIRECT" : mode_name(cfg->direct[0]),
	       k->load_before, k->other_before);
	printf("estimate: about %.0f s (T1 %.0f s, T2 %.0f s, T3 %.0f s, plus laying out the "
	       "files)\n", k->est_secs, part_est[BENCH_PART_T1], part_est[BENCH_PART_T2],
	       part_est[BENCH_PART_T3]);
	fflush(stdout);
	if (bench_cond_judge(k) && !cfg->force) {
		refuse(k);
		bench_sweep_free(&sw);
		return 3;
	}

	/* the cells */
	double part_s[BENCH_NPARTS] = { 0 }, layout_s = 0, done_est = 0, done_act = 0;
	uint64_t laid = 0;
	int failed = 0, refused = 0, prev_buffered = 0;
	int prev_part = -1;
	bench_cpu_sample(&start);
	uint64_t t_start = bench_now_ns();
	for (size_t i = 0; i < sw.ncells && !bench_interrupted; i++) {
		struct bench_cell *c = &sw.cells[i];
		uint64_t t0 = bench_now_ns();
		if (c->job.size != laid) {
			char why[256] = "";
			if (layout(cfg, c->job.size, host, image, why, sizeof(why)) < 0) {
				fprintf(stderr, "%s: sweep: laying out the files: %s\n", prog, why);
				failed = 1;
				break;
			}
			laid = c->job.size;
			prev_buffered = 0;
		}
		int buffered = !c->job.direct;
		if (buffered && (!prev_buffered || c->part != prev_part)) {
			warm(host);
			if (needs_image(cfg))
				warm(image);
		}
		prev_buffered = buffered;
		prev_part = c->part;
		uint64_t t1 = bench_now_ns();
		layout_s += (double)(t1 - t0) / 1e9;
		if (bench_run_job(&c->job, &c->res) < 0)
			failed = 1;
		c->done = 1;
		if (c->res.status == BENCH_FAILED)
			bench_report_text(stderr, &c->res);
		if (c->job.rw == BENCH_RW_WRITE && buffered) {
			sync_file(host);
			if (needs_image(cfg))
				sync_file(image);
		}
		double secs = (double)(bench_now_ns() - t1) / 1e9;
		part_s[c->part] += secs;
		done_act += secs;
		done_est += cell_estimate(c);

		/* conditions during the run */
		struct bench_cpu_sample now;
		double l = bench_load1();
		if (l > k->load_max)
			k->load_max = l;
		double elapsed = (double)(bench_now_ns() - t_start) / 1e9;
		if (bench_cpu_sample(&now) == 0) {
			k->other_during = bench_other_cpu(&start, &now, k->ncpu, &k->steal_during);
			k->measured_during = 1;
		}
		if (!cfg->force && (elapsed >= 30 || i + 1 == sw.ncells) && bench_cond_judge(k)) {
			refused = 1;
			break;
		}
		if (progress) {
			double left = bench_sweep_estimate(&sw, i + 1, NULL);
			if (done_est > 0 && i >= 4)
				left *= done_act / done_est;
			fprintf(stderr, "%s[%zu/%zu] %.0fs elapsed, about %.0fs left   %s",
				tty ? "\r" : "", i + 1, sw.ncells, elapsed, left, tty ? "" : "\n");
		}
	}
	if (progress && tty)
		fprintf(stderr, "\n");
	k->load_after = bench_load1();
	k->total_secs = (double)(bench_now_ns() - t_start) / 1e9;
	add_part(k, "layout and cache warm-up", layout_s);
	for (int p = 0; p < BENCH_NPARTS; p++)
		add_part(k, part_name[p], part_s[p]);
	if (refused) {
		refuse(k);
		bench_sweep_free(&sw);
		return 3;
	}
	bench_cond_judge(k);
	printf("times: layout and cache warm-up %.0f s, T1 %.0f s, T2 %.0f s, T3 %.0f s; total "
	       "%.0f s (estimated %.0f s)\n", layout_s, part_s[BENCH_PART_T1],
	       part_s[BENCH_PART_T2], part_s[BENCH_PART_T3], k->total_secs, k->est_secs);
	printf("conditions during the run: other processes %.1f%% of the CPUs, steal %.1f%%, "
	       "load average at most %.2f%s%s\n", k->other_during, k->steal_during, k->load_max,
	       k->busy ? "; busy, forced: marked noisy: " : "", k->busy ? k->why : "");
	fflush(stdout);
	if (bench_interrupted)
		fprintf(stderr, "%s: sweep: interrupted: the tables hold the cells done\n", prog);
	int ret = write_files(&sw);
	bench_sweep_free(&sw);
	return ret || failed ? 1 : 0;
}
