/* SPDX-License-Identifier: MIT */
/*
 * run.c - the job loop of bench: prepares the file (outside the timing),
 * sets the engine up, runs warm-up and timed repeats, keeps up to qd I/Os in
 * flight, times each I/O from queue to reap, checks every read's stamps,
 * drains what is in flight at a deadline, and reads the whole-system counters
 * around each timed run.
 * Must never allocate, print or sleep inside the timed region (but for the
 * pacing of interval mode, which sleeps between one I/O and the next), and never
 * report a run in which an I/O failed, came back short or carried wrong data:
 * such a job is FAILED, loudly, with the offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

volatile int bench_interrupted;

const struct bench_engine_ops *const bench_engines[] = {
	&bench_eng_sfs,
	&bench_eng_ur,
	&bench_eng_psync,
	&bench_eng_io_uring,
	&bench_eng_dropin,
	&bench_eng_libaio,
	&bench_eng_posixaio,
	&bench_eng_null,
	NULL,
};

const struct bench_engine_ops *bench_engine_find(const char *name)
{
	static const struct { const char *alias, *name; } aliases[] = {
		{ "pread", "psync" }, { "sync", "psync" }, { "host", "psync" },
		{ "uring", "io_uring" }, { "aio", "libaio" }, { "simplefs", "sfs" },
	};
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(name, aliases[i].alias))
			name = aliases[i].name;
	for (size_t i = 0; bench_engines[i]; i++)
		if (!strcmp(bench_engines[i]->name, name))
			return bench_engines[i];
	return NULL;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int bench_set_reason(struct bench_td *td, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(td->reason, sizeof(td->reason), fmt, ap);
	va_end(ap);
	return err < 0 ? err : -err;
}

int bench_open_host(struct bench_td *td)
{
	int flags = O_RDWR | O_CLOEXEC | (td->job->direct ? O_DIRECT : 0);
	int fd = open(td->path, flags);
	if (fd >= 0)
		return fd;
	int e = errno;
	if (td->job->direct && e == EINVAL)
		return bench_set_reason(td, -e, "O_DIRECT not supported by the file system of %s",
					td->path);
	return bench_set_reason(td, -e, "open %s: %s", td->path, strerror(e));
}

void bench_image_path(const struct bench_job *job, char *buf, size_t n)
{
	const char *env = getenv("SFS_IMAGE");
	if (job->image[0])
		snprintf(buf, n, "%s", job->image);
	else if (env && *env)
		snprintf(buf, n, "%s", env);
	else if (!strcmp(job->dir, "."))
		snprintf(buf, n, "disk.sfs");
	else if (snprintf(buf, n, "%s/disk.sfs", job->dir) < 0)
		buf[0] = 0;
}

void bench_job_defaults(struct bench_job *job)
{
	memset(job, 0, sizeof(*job));
	job->ops = &bench_eng_psync;
	snprintf(job->label, sizeof(job->label), "psync");
	job->eo.idle_us = -1;
	job->bs = 4096;
	job->qd = 1;
	job->size = 32ull << 20;
	job->rw = BENCH_RW_READ;
	job->mix_read = 70;
	job->repeat = 1;
	job->seed = 0x5eed;
	job->verify = 1;
	job->syscount = BENCH_SC_PASS;
	snprintf(job->dir, sizeof(job->dir), ".");
}

/* "engine[:opt[,opt=val]...]" */
int bench_parse_engine(const char *spec, struct bench_job *job, char *err, size_t n)
{
	char buf[128], *opts;
	snprintf(buf, sizeof(buf), "%s", spec);
	opts = strchr(buf, ':');
	if (opts)
		*opts++ = 0;
	const struct bench_engine_ops *ops = bench_engine_find(buf);
	if (!ops) {
		snprintf(err, n, "unknown engine '%s'", buf);
		return -EINVAL;
	}
	job->ops = ops;
	memset(&job->eo, 0, sizeof(job->eo));
	job->eo.idle_us = -1;
	char label[64];
	snprintf(label, sizeof(label), "%s", ops->name);
	for (char *o = opts ? strtok(opts, ",") : NULL; o; o = strtok(NULL, ",")) {
		if (!strcmp(o, "sqpoll"))
			job->eo.sqpoll = 1;
		else if (!strcmp(o, "regfiles") || !strcmp(o, "fixedfiles"))
			job->eo.regfiles = 1;
		else if (!strcmp(o, "fixedbufs") || !strcmp(o, "regbufs"))
			job->eo.fixedbufs = 1;
		else if (!strncmp(o, "idle=", 5))
			job->eo.idle_us = atoi(o + 5);
		else {
			snprintf(err, n, "unknown option '%s' for engine %s "
				 "(sqpoll, regfiles, fixedbufs, idle=US)", o, ops->name);
			return -EINVAL;
		}
		size_t l = strlen(label);
		snprintf(label + l, sizeof(label) - l, "%c%s", l == strlen(ops->name) ? ':' : ',', o);
	}
	snprintf(job->label, sizeof(job->label), "%s", label);
	return 0;
}

/* ---------------------------------------------------------------- host file */

static int check_sample(int fd, uint64_t size, uint64_t seed)
{
	static char buf[4096] __attribute__((aligned(4096)));
	uint64_t offs[3] = { 0, (size / 2) & ~4095ull, (size - 4096) & ~4095ull };
	for (int i = 0; i < 3; i++) {
		if (pread(fd, buf, 4096, (off_t)offs[i]) != 4096 ||
		    bench_stamp_check(buf, 4096, offs[i], seed, NULL))
			return 0;
	}
	return 1;
}

int bench_prepare_hostfile(const char *path, uint64_t size, uint64_t seed, char *why, size_t n)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(why, n, "create %s: %s", path, strerror(errno));
		return -errno;
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == size && size >= 4096 &&
	    check_sample(fd, size, seed)) {
		close(fd);
		return 0;
	}
	const size_t chunk = 1u << 20;
	char *buf = aligned_alloc(4096, chunk);
	int ret = 0;
	if (!buf) {
		close(fd);
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	bench_stamp_body(buf, chunk);
	if (ftruncate(fd, (off_t)size) < 0) {
		ret = -errno;
		snprintf(why, n, "truncate %s: %s", path, strerror(errno));
	}
	for (uint64_t off = 0; !ret && off < size; off += chunk) {
		size_t len = size - off < chunk ? (size_t)(size - off) : chunk;
		bench_stamp_fill(buf, len, off, seed);
		ssize_t w = pwrite(fd, buf, len, (off_t)off);
		if (w != (ssize_t)len) {
			ret = w < 0 ? -errno : -EIO;
			snprintf(why, n, "fill %s: %s", path, strerror(-ret));
		}
	}
	free(buf);
	close(fd);
	return ret;
}

/* ---------------------------------------------------------------- the loop */

struct run_state {
	struct bench_td *td;
	const struct bench_job *job;
	struct bench_pattern pat;
	struct bench_hist *hist;
	uint16_t *freel;
	unsigned nfree, inflight;
	uint64_t ios, bytes, reads, writes, drained;
	int failed;
	char *why;
	size_t whylen;
};

static const char *op_name(int op)
{
	return op == BENCH_OP_WRITE ? "write" : op == BENCH_OP_NOP ? "nop" : "read";
}

static void complete(struct run_state *rs, struct bench_io *io, uint64_t now)
{
	const struct bench_job *job = rs->job;
	rs->freel[rs->nfree++] = io->idx;
	if (rs->failed)
		return;
	if (io->res < 0) {
		snprintf(rs->why, rs->whylen, "%s of %u bytes at offset %llu failed: %s",
			 op_name(io->op), io->len, (unsigned long long)io->off,
			 strerror((int)-io->res));
		rs->failed = 1;
		return;
	}
	if (io->op != BENCH_OP_NOP && (uint64_t)io->res != io->len) {
		snprintf(rs->why, rs->whylen, "short %s: %lld of %u bytes at offset %llu",
			 op_name(io->op), (long long)io->res, io->len, (unsigned long long)io->off);
		rs->failed = 1;
		return;
	}
	if (io->op == BENCH_OP_READ && job->verify && !(rs->td->ops->flags & BENCH_ENG_NODATA)) {
		uint64_t bad;
		if (bench_stamp_check(io->buf, io->len, io->off, job->seed, &bad)) {
			snprintf(rs->why, rs->whylen,
				 "WRONG DATA: read of %u bytes at offset %llu: the sector at "
				 "offset %llu does not carry its stamp", io->len,
				 (unsigned long long)io->off, (unsigned long long)bad);
			rs->failed = 1;
			return;
		}
	}
	if (rs->hist)
		bench_hist_add(rs->hist, now - io->t_start);
	rs->ios++;
	if (io->op != BENCH_OP_NOP)
		rs->bytes += io->len;
	if (io->op == BENCH_OP_WRITE)
		rs->writes++;
	else if (io->op == BENCH_OP_READ)
		rs->reads++;
}

/* Interval mode: wait for the next tick (one I/O per interval, none
 * queued ahead); a late tick is not caught up with a burst. 1: the next tick
 * falls past the deadline, or the run was interrupted: issue no more. */
static int pace(uint64_t *next, uint64_t interval, uint64_t deadline)
{
	uint64_t now = bench_now_ns();
	if (*next > now) {
		if (*next >= deadline)
			return 1;
		struct timespec ts = { .tv_sec = (time_t)(*next / 1000000000u),
				       .tv_nsec = (long)(*next % 1000000000u) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			if (bench_interrupted)
				return 1;
		now = *next;
	}
	*next = (now > *next ? now : *next) + interval;
	return 0;
}

/* One run: total I/Os (when not time based) or until deadline_ns. */
static int run_loop(struct run_state *rs, uint64_t total, uint64_t duration_ns)
{
	struct bench_td *td = rs->td;
	const struct bench_engine_ops *ops = td->ops;
	const struct bench_job *job = rs->job;
	struct bench_io *retry = NULL;
	uint64_t issued = 0, now = bench_now_ns(), tick = 0;
	uint64_t deadline = duration_ns ? now + duration_ns : UINT64_MAX;
	int stop = 0;

	rs->ios = rs->bytes = rs->reads = rs->writes = rs->drained = 0;
	rs->pat.pos = 0;
	for (;;) {
		unsigned queued = 0;
		while (!stop && !rs->failed && (retry || rs->nfree)) {
			if (!duration_ns && issued >= total) {
				stop = 1;
				break;
			}
			if (job->interval_ns && !retry) {
				if (rs->inflight || queued)
					break;          /* one at a time: reap it first */
				if (pace(&tick, job->interval_ns, deadline)) {
					stop = 1;
					break;
				}
			}
			struct bench_io *io = retry;
			if (!io) {
				io = &td->ios[rs->freel[--rs->nfree]];
				io->off = bench_pattern_next(&rs->pat);
				io->len = job->bs;
				if (job->rw == BENCH_RW_NOP)
					io->op = BENCH_OP_NOP;
				else if (job->rw == BENCH_RW_MIX)
					io->op = bench_rand64(&rs->pat.rng) % 100 < job->mix_read ?
						 BENCH_OP_READ : BENCH_OP_WRITE;
				else
					io->op = job->rw == BENCH_RW_WRITE ? BENCH_OP_WRITE
									   : BENCH_OP_READ;
				if (io->op == BENCH_OP_WRITE && !(ops->flags & BENCH_ENG_NODATA))
					bench_stamp_fill(io->buf, io->len, io->off, job->seed);
			}
			retry = NULL;
			io->res = 0;
			io->t_start = bench_now_ns();
			int r = ops->queue(td, io);
			if (r == BENCH_Q_BUSY) {
				retry = io;
				break;
			}
			if (r < 0) {
				snprintf(rs->why, rs->whylen, "queue %s at offset %llu: %s",
					 op_name(io->op), (unsigned long long)io->off, strerror(-r));
				rs->failed = 1;
				rs->freel[rs->nfree++] = io->idx;
				break;
			}
			issued++;
			if (r == BENCH_Q_COMPLETED) {
				now = bench_now_ns();
				complete(rs, io, now);
				if (now >= deadline || bench_interrupted)
					stop = 1;
			} else {
				rs->inflight++;
				queued++;
			}
		}
		if (queued && ops->commit) {
			int r = ops->commit(td);
			if (r < 0 && !rs->failed) {
				snprintf(rs->why, rs->whylen, "submit: %s", strerror(-r));
				rs->failed = 1;
				/* what was queued but not submitted can never complete */
				return -1;
			}
		}
		if (!rs->inflight) {
			if (stop || rs->failed)
				break;
			continue;
		}
		int n = ops->getevents(td, job->batch ? rs->inflight : 1, rs->inflight);
		if (n < 0) {
			snprintf(rs->why, rs->whylen, "reap: %s", strerror(-n));
			rs->failed = 1;
			return -1;
		}
		now = bench_now_ns();
		for (int i = 0; i < n; i++)
			complete(rs, ops->event(td, (unsigned)i), now);
		rs->inflight -= (unsigned)n;
		if (!stop && (now >= deadline || bench_interrupted)) {
			stop = 1;
			rs->drained = rs->inflight;    /* in flight at the deadline */
		}
	}
	if (retry)
		rs->freel[rs->nfree++] = retry->idx;
	return rs->failed ? -1 : 0;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

void bench_fill_result(struct bench_result *r, const struct bench_hist *all)
{
	r->lat_mean = bench_hist_mean(all) / 1e3;
	r->lat_p50 = (double)bench_hist_percentile(all, 50) / 1e3;
	r->lat_p99 = (double)bench_hist_percentile(all, 99) / 1e3;
	r->lat_p999 = (double)bench_hist_percentile(all, 99.9) / 1e3;
	r->lat_min = (double)all->min / 1e3;
	r->lat_max = (double)all->max / 1e3;
	double v[BENCH_MAX_REPEAT] = { 0 };
	unsigned n = r->nruns;
#define MED(field) do { \
		for (unsigned i = 0; i < n; i++) v[i] = (double)r->runs[i].field; \
		r->med.field = bench_median(v, n); } while (0)
	MED(secs); MED(mibs); MED(iops); MED(lat_mean); MED(lat_p50); MED(lat_p99);
	MED(lat_p999); MED(cpu_user); MED(cpu_sys); MED(task_clock); MED(server_cpu);
#undef MED
#define MEDU(field) do { \
		for (unsigned i = 0; i < n; i++) v[i] = (double)r->runs[i].field; \
		r->med.field = (uint64_t)(bench_median(v, n) + 0.5); } while (0)
#define MEDC(field) do { \
		int na = 0; \
		for (unsigned i = 0; i < n; i++) { v[i] = (double)r->runs[i].field; na |= v[i] < 0; } \
		r->med.field = na ? -1 : (int64_t)(bench_median(v, n) + 0.5); } while (0)
	MEDU(ios); MEDU(bytes); MEDU(reads); MEDU(writes); MEDU(drained);
	MEDC(ctxsw); MEDC(syscalls);
#undef MEDU
#undef MEDC
	for (unsigned i = 0; i < n; i++)
		v[i] = r->runs[i].mibs;
	bench_minmax(v, n, &r->mibs_min, &r->mibs_max);
	for (unsigned i = 0; i < n; i++)
		v[i] = r->runs[i].iops;
	bench_minmax(v, n, &r->iops_min, &r->iops_max);
}

int bench_run_job(const struct bench_job *job, struct bench_result *r)
{
	return bench_run_job_ex(job, r, NULL);
}

/* The file of a job, made to exist with its size and stamps (outside timing). */
static int prepare_file(struct bench_td *td)
{
	if (td->ops->prepare)
		return td->ops->prepare(td);
	if (td->ops->flags & BENCH_ENG_NODATA)
		return 0;
	return bench_prepare_hostfile(td->path, td->job->size, td->job->seed, td->reason,
				      sizeof(td->reason));
}

/* The paths of td (host file, image, file name) from its job; -1: too long. */
static int td_paths(struct bench_td *td, const struct bench_job *job)
{
	if (strlen(job->dir) > sizeof(td->path) - 32 || strlen(job->image) > sizeof(td->image) - 32)
		return -1;
	snprintf(td->path, sizeof(td->path), "%s/benchfile", job->dir);
	snprintf(td->fname, sizeof(td->fname), "benchfile");
	bench_image_path(job, td->image, sizeof(td->image));
	return 0;
}

int bench_prepare_job(const struct bench_job *job, char *why, size_t n)
{
	struct bench_td *td = calloc(1, sizeof(*td));
	if (!td) {
		snprintf(why, n, "out of memory");
		return -ENOMEM;
	}
	td->job = job;
	td->ops = job->ops;
	int e = -ENAMETOOLONG;
	if (td_paths(td, job) < 0)
		snprintf(why, n, "directory or image path too long");
	else if ((e = prepare_file(td)) < 0)
		snprintf(why, n, "%s", td->reason);
	free(td);
	return e;
}

static void hook_ready(const struct bench_hooks *hk, int *called, int ok)
{
	if (hk && hk->ready && !*called)
		hk->ready(hk->arg, ok);
	*called = 1;
}

/* Close the syscall counter. Closing it (not disabling it) is what ends its
 * cost: the tracepoint stays armed for every task while the event exists, and
 * the copies the engine's server inherited go with it. */
static void drop_syscount(struct bench_counters *cnt)
{
	if (cnt->fd[BENCH_CNT_SYSCALLS] >= 0)
		close(cnt->fd[BENCH_CNT_SYSCALLS]);
	cnt->fd[BENCH_CNT_SYSCALLS] = -1;
}

/* BENCH_SC_PASS: the job's syscalls per I/O from an untimed pass of its own
 * (at most BENCH_SC_PASS_IOS I/Os, or BENCH_SC_PASS_NS of a time-based job);
 * the caller then closes the counter, so that the timed runs are not slowed by it. The
 * counter was opened before the engine's setup, so a server the engine
 * started counts too. 0, or -1 when the pass failed. */
static int counted_pass(struct run_state *rs, const struct bench_counters *cnt, struct bench_result *r,
			uint64_t total, uint64_t dur)
{
	int64_t c0[BENCH_CNT_N], c1[BENCH_CNT_N];
	bench_counters_read(cnt, c0);
	int lr = run_loop(rs, total < BENCH_SC_PASS_IOS ? total : BENCH_SC_PASS_IOS,
			  dur ? (dur < BENCH_SC_PASS_NS ? dur : BENCH_SC_PASS_NS) : 0);
	bench_counters_read(cnt, c1);
	if (lr < 0)
		return -1;
	if (c0[BENCH_CNT_SYSCALLS] >= 0 && c1[BENCH_CNT_SYSCALLS] >= 0 && rs->ios) {
		r->sc_calls = c1[BENCH_CNT_SYSCALLS] - c0[BENCH_CNT_SYSCALLS];
		r->sc_ios = rs->ios;
		r->sc_pass = 1;
	}
	return 0;
}

int bench_run_job_ex(const struct bench_job *job, struct bench_result *r,
		     const struct bench_hooks *hk)
{
	int ready_called = 0;
	struct bench_td *td = calloc(1, sizeof(*td));
	struct bench_hist *h = malloc(sizeof(*h)), *all = malloc(sizeof(*all));
	struct run_state rs;
	struct bench_counters cnt;
	const struct bench_engine_ops *ops = job->ops;
	int ret = 0, setup_done = 0;
	char *bufmem = NULL;

	memset(r, 0, sizeof(*r));
	memset(&rs, 0, sizeof(rs));
	r->job = *job;
	r->sc_calls = -1;
	bench_counters_open(&cnt);
	if (job->syscount == BENCH_SC_OFF) {
		/* the tracepoint's probe runs on every system call of the timed runs */
		drop_syscount(&cnt);
		snprintf(cnt.why[BENCH_CNT_SYSCALLS], sizeof(cnt.why[0]), "not counted (off for this job: --no-syscount, or a sweep's T2/T3 cell)");
	}
	memcpy(r->cnt_why, cnt.why, sizeof(r->cnt_why));
	if (!td || !h || !all) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason), "out of memory");
		ret = -1;
		goto out;
	}
	td->job = &r->job;
	td->ops = ops;
	if (td_paths(td, job) < 0) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason), "directory or image path too long");
		ret = -1;
		goto out;
	}
	if (job->rw == BENCH_RW_NOP && !(ops->flags & BENCH_ENG_NOP)) {
		r->status = BENCH_SKIPPED;
		snprintf(r->reason, sizeof(r->reason), "%s has no NOP operation", ops->name);
		goto out;
	}
	if (job->bs == 0 || job->size < job->bs || (job->direct && job->bs % 4096)) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason),
			 "bad job: bs must be > 0, <= size%s", job->direct ? " and 4 KiB aligned" : "");
		ret = -1;
		goto out;
	}
	if ((ops->flags & BENCH_ENG_SYNC) && job->qd > 1)
		snprintf(r->note, sizeof(r->note),
			 "synchronous engine: queue depth is 1 in effect (qd=%u asked)", job->qd);
	if (job->interval_ns && job->qd > 1)
		snprintf(r->note, sizeof(r->note),
			 "interval mode: one I/O in flight at a time (qd=%u asked)", job->qd);
	if (ops == &bench_eng_libaio && !job->direct)
		snprintf(r->note, sizeof(r->note),
			 "libaio without O_DIRECT: io_submit completes each I/O synchronously");

	/* 1. the file, outside any timing */
	uint64_t t = bench_now_ns();
	int e = hk && hk->prepared ? 0 : prepare_file(td);
	r->fill_secs = (double)(bench_now_ns() - t) / 1e9;
	if (e < 0) {
		r->status = BENCH_SKIPPED;
		snprintf(r->reason, sizeof(r->reason), "%s", td->reason);
		goto out;
	}

	/* 2. the engine */
	td->nios = (ops->flags & BENCH_ENG_SYNC) ? 1 : (job->qd ? job->qd : 1);
	td->ios = calloc(td->nios, sizeof(*td->ios));
	rs.freel = calloc(td->nios, sizeof(*rs.freel));
	if (!td->ios || !rs.freel) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason), "out of memory");
		ret = -1;
		goto out;
	}
	for (unsigned i = 0; i < td->nios; i++)
		td->ios[i].idx = (uint16_t)i;
	e = ops->setup(td);
	if (e < 0) {
		r->status = BENCH_SKIPPED;
		snprintf(r->reason, sizeof(r->reason), "%s",
			 td->reason[0] ? td->reason : strerror(-e));
		goto out;
	}
	setup_done = 1;
	r->server_pid = td->helper_pid;
	size_t need = 0;
	for (unsigned i = 0; i < td->nios; i++)
		if (!td->ios[i].buf)
			need += job->bs;
	if (need) {
		bufmem = aligned_alloc(4096, (need + 4095) & ~(size_t)4095);
		if (!bufmem) {
			r->status = BENCH_FAILED;
			snprintf(r->reason, sizeof(r->reason), "out of memory for %zu bytes of buffers",
				 need);
			ret = -1;
			goto out;
		}
		size_t o = 0;
		for (unsigned i = 0; i < td->nios; i++)
			if (!td->ios[i].buf) {
				td->ios[i].buf = bufmem + o;
				o += job->bs;
			}
	}
	for (unsigned i = 0; i < td->nios; i++)
		bench_stamp_body(td->ios[i].buf, job->bs);
	if (ops->post_buffers && (e = ops->post_buffers(td)) < 0) {
		r->status = BENCH_SKIPPED;
		snprintf(r->reason, sizeof(r->reason), "%s",
			 td->reason[0] ? td->reason : strerror(-e));
		goto out;
	}
	if (bench_pattern_init(&rs.pat, job->size, job->bs, job->random, job->seed) < 0) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason), "cannot build the offset pattern");
		ret = -1;
		goto out;
	}
	rs.td = td;
	rs.job = &r->job;
	rs.why = r->reason;
	rs.whylen = sizeof(r->reason);
	for (unsigned i = 0; i < td->nios; i++)
		rs.freel[rs.nfree++] = (uint16_t)(td->nios - 1 - i);

	uint64_t per_pass = job->size / job->bs;
	uint64_t total = job->bytes ? (job->bytes + job->bs - 1) / job->bs : per_pass;
	uint64_t dur = job->time_s > 0 ? (uint64_t)(job->time_s * 1e9) : 0;

	/* 3. the counted pass (BENCH_SC_PASS), not timed */
	rs.hist = NULL;
	if (job->syscount == BENCH_SC_PASS && cnt.fd[BENCH_CNT_SYSCALLS] >= 0 &&
	    counted_pass(&rs, &cnt, r, total, dur) < 0) {
		r->status = BENCH_FAILED;
		ret = -1;
		goto out;
	}
	if (job->syscount != BENCH_SC_TIMED)
		drop_syscount(&cnt);        /* the timed runs go without it */
	hook_ready(hk, &ready_called, 1);

	/* 4. warm-up, not recorded */
	if (job->warmup_s > 0) {
		rs.hist = NULL;
		if (run_loop(&rs, UINT64_MAX, (uint64_t)(job->warmup_s * 1e9)) < 0) {
			r->status = BENCH_FAILED;
			ret = -1;
			goto out;
		}
	}

	/* 5. timed runs */
	bench_hist_reset(all);
	unsigned reps = job->repeat ? job->repeat : 1;
	if (reps > BENCH_MAX_REPEAT)
		reps = BENCH_MAX_REPEAT;
	for (unsigned k = 0; k < reps && !bench_interrupted; k++) {
		struct bench_run *run = &r->runs[k];
		struct rusage ru0, ru1, rc0, rc1;
		double hu0 = 0, hs0 = 0, hu1 = 0, hs1 = 0;
		int64_t c0[BENCH_CNT_N], c1[BENCH_CNT_N];
		int have_helper = 0;

		bench_hist_reset(h);
		rs.hist = h;
		if (td->helper_pid > 0)
			have_helper = bench_proc_cpu(td->helper_pid, &hu0, &hs0) == 0;
		getrusage(RUSAGE_SELF, &ru0);
		getrusage(RUSAGE_CHILDREN, &rc0);
		bench_counters_read(&cnt, c0);
		uint64_t t0 = bench_now_ns();
		int lr = run_loop(&rs, total, dur);
		uint64_t t1 = bench_now_ns();
		bench_counters_read(&cnt, c1);
		getrusage(RUSAGE_SELF, &ru1);
		getrusage(RUSAGE_CHILDREN, &rc1);
		if (have_helper && bench_proc_cpu(td->helper_pid, &hu1, &hs1) < 0)
			hu1 = hu0, hs1 = hs0;
		if (lr < 0) {
			r->status = BENCH_FAILED;
			ret = -1;
			goto out;
		}
		run->secs = (double)(t1 - t0) / 1e9;
		run->ios = rs.ios;
		run->bytes = rs.bytes;
		run->reads = rs.reads;
		run->writes = rs.writes;
		run->drained = rs.drained;
		run->mibs = (double)rs.bytes / 1048576.0 / run->secs;
		run->iops = (double)rs.ios / run->secs;
		run->lat_mean = bench_hist_mean(h) / 1e3;
		run->lat_p50 = (double)bench_hist_percentile(h, 50) / 1e3;
		run->lat_p99 = (double)bench_hist_percentile(h, 99) / 1e3;
		run->lat_p999 = (double)bench_hist_percentile(h, 99.9) / 1e3;
		run->cpu_user = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime) +
				tv_s(rc1.ru_utime) - tv_s(rc0.ru_utime) + (hu1 - hu0);
		run->cpu_sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime) +
			       tv_s(rc1.ru_stime) - tv_s(rc0.ru_stime) + (hs1 - hs0);
		run->syscalls = c0[BENCH_CNT_SYSCALLS] < 0 ? -1 :
				c1[BENCH_CNT_SYSCALLS] - c0[BENCH_CNT_SYSCALLS];
		if (c0[BENCH_CNT_CTXSW] >= 0) {
			run->ctxsw = c1[BENCH_CNT_CTXSW] - c0[BENCH_CNT_CTXSW];
		} else {
			run->ctxsw = (ru1.ru_nvcsw + ru1.ru_nivcsw) - (ru0.ru_nvcsw + ru0.ru_nivcsw);
			if (td->helper_pid > 0)
				snprintf(r->cnt_why[BENCH_CNT_CTXSW], sizeof(r->cnt_why[0]),
					 "bench process only (rusage): %.80s", cnt.why[BENCH_CNT_CTXSW]);
		}
		run->server_cpu = have_helper ? (hu1 - hu0) + (hs1 - hs0) : -1;
		run->task_clock = c0[BENCH_CNT_TASKCLOCK] < 0 ? -1 :
			(double)(c1[BENCH_CNT_TASKCLOCK] - c0[BENCH_CNT_TASKCLOCK]) / 1e9;
		bench_hist_merge(all, h);
		r->nruns++;
	}
	if (r->nruns == 0) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason), "interrupted");
		ret = -1;
		goto out;
	}
	bench_fill_result(r, all);
	if (job->syscount == BENCH_SC_TIMED) {
		r->sc_calls = r->med.syscalls;
		r->sc_ios = r->med.ios;
	}
	r->status = BENCH_OK;
	if (hk && hk->hist)
		*hk->hist = *all;
out:
	hook_ready(hk, &ready_called, 0);
	if (setup_done && ops->cleanup)
		ops->cleanup(td);
	bench_counters_close(&cnt);
	bench_pattern_free(&rs.pat);
	free(bufmem);
	free(rs.freel);
	if (td)
		free(td->ios);
	free(td);
	free(h);
	free(all);
	return ret;
}
