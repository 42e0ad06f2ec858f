/* SPDX-License-Identifier: MIT */
/*
 * bench.h - the harness of bench: jobs, results, statistics, stamps,
 * offset patterns, system-wide counters and reports.
 *
 * Every global symbol here starts with bench_ because the tests link all bench
 * objects but main.c. Nothing in the harness may allocate, print or take a
 * syscall per I/O inside the timed region (besides what the engine needs), and
 * nothing may report a figure it did not measure: what cannot be measured is
 * reported as n/a with its reason.
 */
#ifndef BENCH_H
#define BENCH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "engine.h"

#define BENCH_MAX_REPEAT 32
#define BENCH_MAX_CLIENTS 64

enum bench_rw { BENCH_RW_READ, BENCH_RW_WRITE, BENCH_RW_MIX, BENCH_RW_NOP };

/* Engine options, given as "engine:opt,opt=val" */
struct bench_eng_opts {
	unsigned sqpoll;      /* io_uring: IORING_SETUP_SQPOLL */
	unsigned regfiles;    /* io_uring: registered file */
	unsigned fixedbufs;   /* io_uring: registered buffers; ur: buffers in the region */
	int idle_us;          /* ur: server idle time before it sleeps, -1: default */
};

struct bench_job {
	const struct bench_engine_ops *ops;
	struct bench_eng_opts eo;
	char label[64];       /* engine name plus options, as shown */
	uint32_t bs;
	unsigned qd;
	uint64_t size;        /* file size */
	int random;           /* 0 sequential, 1 random permutation */
	int rw;               /* enum bench_rw */
	unsigned mix_read;    /* percent of reads with BENCH_RW_MIX */
	int direct;           /* O_DIRECT on host file / SimpleFS image */
	double time_s;        /* > 0: time based */
	uint64_t bytes;       /* bytes per run when not time based (0: one pass) */
	double warmup_s;      /* untimed run first, 0: none */
	unsigned repeat;      /* timed runs, >= 1 */
	uint64_t seed;
	int verify;           /* check the stamp of every read (default 1) */
	int syscount;         /* count system calls (enum bench_syscount; default PASS) */
	int batch;            /* reap all in flight before refilling: qd I/Os per submit */
	uint64_t interval_ns; /* > 0: one I/O every interval_ns, each reaped first (pacing) */
	unsigned clients;     /* processes running the job at once (clients.c), 0/1: this one */
	char dir[PATH_MAX];   /* where the host file lives */
	char image[PATH_MAX]; /* SimpleFS image */
};

/* How a job counts system calls. The counter (the raw_syscalls tracepoint)
 * makes every system call on the machine dearer while it is open, so by
 * default it is open only for an untimed pass of its own before the timed runs. */
enum bench_syscount {
	BENCH_SC_OFF = 0,     /* not counted (--no-syscount) */
	BENCH_SC_PASS = 1,    /* a counted pass, untimed; the timed runs go without it */
	BENCH_SC_TIMED = 2,   /* counted during the timed runs (the sweep's T1: its figures are counts) */
};
#define BENCH_SC_PASS_IOS 16384u       /* the pass: at most this many I/Os ... */
#define BENCH_SC_PASS_NS 250000000ull  /* ... or this long when the job is time based */

/* ---- latency histogram: log-linear, ~0.8% resolution, no allocation to add */
#define BENCH_HIST_EXACT 128u
#define BENCH_HIST_SUB   64u
#define BENCH_HIST_BUCKETS (BENCH_HIST_EXACT + 57u * BENCH_HIST_SUB)
struct bench_hist {
	uint64_t n, sum, min, max;
	uint64_t b[BENCH_HIST_BUCKETS];
};
void     bench_hist_reset(struct bench_hist *h);
unsigned bench_hist_index(uint64_t v);
uint64_t bench_hist_value(unsigned idx);       /* middle of the bucket */
static inline void bench_hist_add(struct bench_hist *h, uint64_t v)
{
	h->n++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->b[bench_hist_index(v)]++;
}
void     bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src);
double   bench_hist_mean(const struct bench_hist *h);
uint64_t bench_hist_percentile(const struct bench_hist *h, double p);

/* ---- plain statistics on small arrays (stats.c) */
double bench_median(const double *v, size_t n);
double bench_percentile(const double *v, size_t n, double p);  /* linear interp. */
void   bench_minmax(const double *v, size_t n, double *min, double *max);
void   bench_iqr(const double *v, size_t n, double *q1, double *q3);
/* A table cell: median of the repeats, min..max, and a flag when the spread
 * (max - min) / median exceeds BENCH_SPREAD_MAX (25%). */
#define BENCH_SPREAD_MAX 0.25
struct bench_spread {
	double med, min, max, rel;
	int flagged;
	unsigned n;
};
void   bench_spread(const double *v, size_t n, struct bench_spread *s);

/* ---- stamps (stamp.c): every 512-byte sector carries its file offset and the
 * seed in its first 16 bytes and a hash of both in its last 8. */
#define BENCH_SECTOR 512u
void bench_stamp_fill(void *buf, size_t len, uint64_t off, uint64_t seed);
/* 0, or -EILSEQ with *bad set to the file offset of the first bad sector. */
int  bench_stamp_check(const void *buf, size_t len, uint64_t off, uint64_t seed,
		       uint64_t *bad);
void bench_stamp_body(void *buf, size_t len);   /* fill once: non-zero bytes */

/* ---- offsets (pattern.c) */
struct bench_pattern {
	uint64_t nblocks;
	uint64_t pos;
	uint32_t bs;
	int random;
	uint32_t *perm;       /* random: a permutation of [0, nblocks) */
	uint64_t rng;         /* for the read/write mix */
};
int  bench_pattern_init(struct bench_pattern *p, uint64_t size, uint32_t bs, int random,
			uint64_t seed);
static inline uint64_t bench_pattern_next(struct bench_pattern *p)
{
	uint64_t i = p->pos++;
	if (p->pos == p->nblocks)
		p->pos = 0;
	return (uint64_t)(p->random ? p->perm[i] : i) * p->bs;
}
void bench_pattern_free(struct bench_pattern *p);
uint64_t bench_rand64(uint64_t *state);          /* splitmix64 */

/* ---- whole-system counters (syscount.c) */
enum { BENCH_CNT_SYSCALLS, BENCH_CNT_CTXSW, BENCH_CNT_TASKCLOCK, BENCH_CNT_N };
struct bench_counters {
	int fd[BENCH_CNT_N];
	char why[BENCH_CNT_N][120];   /* reason when fd[i] < 0 */
};
/* Open inherited counters on this process (and every child forked later). */
void bench_counters_open(struct bench_counters *c);
/* Current values, -1 where unavailable. */
void bench_counters_read(const struct bench_counters *c, int64_t v[BENCH_CNT_N]);
void bench_counters_close(struct bench_counters *c);
/* raw_syscalls:sys_enter tracepoint id, or -errno with why filled. */
int  bench_syscall_tp_id(char *why, size_t n);
/* CPU seconds (user, sys) of a live process from /proc/pid/stat. */
int  bench_proc_cpu(pid_t pid, double *user, double *sys);

/* ---- the machine's conditions (cond.c): load average and the CPU time used
 * by everything but bench, from /proc/stat minus bench's own rusage. */
struct bench_cpu_sample {
	double t;            /* s, CLOCK_MONOTONIC */
	double busy;         /* s, all CPUs: user + nice + system (irq, iowait excluded) */
	double steal;        /* s, all CPUs */
	double self;         /* s, bench and its reaped children (getrusage) */
};
int    bench_cpu_sample(struct bench_cpu_sample *s);     /* 0 or -errno */
/* Percent of the machine's CPU time (ncpu x elapsed) used by others between
 * two samples (busy minus bench's own, at least 0); steal likewise. */
double bench_other_cpu(const struct bench_cpu_sample *a, const struct bench_cpu_sample *b,
		       long ncpu, double *steal_pct);
double bench_load1(void);                                /* 1-minute load average, -1 */
#define BENCH_MAX_PARTS 8
struct bench_cond {
	long ncpu;
	double busy_load;        /* busy when the 1-minute load average is this or more */
	double busy_cpu;         /* ... or others use this percent of the CPUs or more */
	double idle_window;      /* s, the idle sample before the run */
	double load_before, load_max, load_after;
	double other_before;     /* percent of the CPUs, in the idle sample */
	double other_during;     /* percent, over the whole run so far */
	double steal_during;     /* percent */
	int measured_during;     /* other_during is set */
	int busy, forced;        /* busy: the rule above was met; forced: --force */
	char why[320];           /* what made it busy */
	struct { char name[32]; double secs; } parts[BENCH_MAX_PARTS];
	unsigned nparts;
	double est_secs, total_secs;
};
/* Apply the rule to the figures in c: sets c->busy and c->why; returns busy. */
int    bench_cond_judge(struct bench_cond *c);

/* ---- results */
enum { BENCH_OK, BENCH_SKIPPED, BENCH_FAILED };
struct bench_run {
	double secs;
	uint64_t ios, bytes, reads, writes, drained;
	double mibs, iops;
	double lat_mean, lat_p50, lat_p99, lat_p999;   /* µs */
	double cpu_user, cpu_sys;                      /* s, whole system */
	double task_clock;                             /* s, perf task-clock, -1 n/a */
	int64_t ctxsw, syscalls;                       /* -1: n/a */
	double server_cpu;                             /* s, the engine's server process(es), -1 n/a */
};
struct bench_result {
	struct bench_job job;
	int status;
	char reason[320];
	char note[160];           /* e.g. "libaio is synchronous without O_DIRECT" */
	unsigned nruns;
	struct bench_run runs[BENCH_MAX_REPEAT];
	struct bench_run med;     /* median of each figure over the runs */
	double mibs_min, mibs_max, iops_min, iops_max;
	double lat_mean, lat_p50, lat_p99, lat_p999, lat_min, lat_max;  /* µs, all runs */
	char cnt_why[BENCH_CNT_N][120];
	double fill_secs;         /* outside the timed region, for the record */
	int server_pid;           /* the engine's server process, 0: none */
	/* clients > 1 (clients.c): each client's p99 and IOPS (all its runs) */
	unsigned nclients;
	unsigned nservers;        /* distinct server processes among them (0: none) */
	double client_p99[BENCH_MAX_CLIENTS], client_iops[BENCH_MAX_CLIENTS];
	/* The job's syscalls per I/O: sc_calls over sc_ios (-1: not counted), from
	 * the counted pass (sc_pass 1) or the median timed run (BENCH_SC_TIMED). */
	int64_t sc_calls;
	uint64_t sc_ios;
	int sc_pass;
};

/* run.c */
void bench_job_defaults(struct bench_job *job);
int  bench_parse_engine(const char *spec, struct bench_job *job, char *err, size_t n);
/* Run one job (all repeats). Returns 0 when the result is OK or SKIPPED, -1
 * when it FAILED (I/O error, short I/O, stamp mismatch: r->reason says). */
int  bench_run_job(const struct bench_job *job, struct bench_result *r);
/* The same with hooks for a caller that runs several at once (clients.c). */
struct bench_hooks {
	int prepared;                       /* the file is ready: skip step 1 */
	/* Called once: after setup, before the warm-up (ok 1), or when the job
	 * ends before that (ok 0). May block (a start barrier). */
	void (*ready)(void *arg, int ok);
	void *arg;
	struct bench_hist *hist;            /* gets the latency histogram of all runs */
};
int  bench_run_job_ex(const struct bench_job *job, struct bench_result *r,
		      const struct bench_hooks *hk);
/* Step 1 of a job alone: its file made to exist, sized and stamped. 0 or -errno + why. */
int  bench_prepare_job(const struct bench_job *job, char *why, size_t n);
/* Medians and spreads of r->runs[0..nruns); latency of all runs from all. */
void bench_fill_result(struct bench_result *r, const struct bench_hist *all);
/* clients.c: job->clients processes (fork) run the job at once, each with its
 * own engine instance on the same file or image; r gets the aggregate (sums
 * of IOPS, bytes, CPU, counters; latency of all clients) and each client's
 * p99. 0 or -1 as bench_run_job. */
int  bench_run_clients(const struct bench_job *job, struct bench_result *r);
/* Why job cannot run with n clients (a fixed reason), or NULL. */
const char *bench_clients_refused(const struct bench_job *job, unsigned n);
/* Make sure the host file exists with the right size and stamps. */
int  bench_prepare_hostfile(const char *path, uint64_t size, uint64_t seed, char *why,
			    size_t n);
uint64_t bench_now_ns(void);
/* The SimpleFS image a job uses: --image, else $SFS_IMAGE, else DIR/disk.sfs. */
void bench_image_path(const struct bench_job *job, char *buf, size_t n);
extern volatile int bench_interrupted;

/* eng_sfs.c: make td->fname exist in td->image, sized and stamped (sfs, ur). */
int  bench_sfs_prepare(struct bench_td *td);

/* report.c */
const char *bench_rw_name(int rw);
void bench_fmt_size(char *buf, size_t n, uint64_t v);
int  bench_parse_size(const char *s, uint64_t *out);
int  bench_parse_interval(const char *s, uint64_t *ns);   /* "2ms", "500us", "1s" */
void bench_fmt_interval(char *buf, size_t n, uint64_t ns);
void bench_report_text(FILE *f, const struct bench_result *r);
double bench_fairness(const struct bench_result *r);   /* max/min client p99, 0: n/a */
void bench_setup_info(FILE *f, const char *dir);        /* kernel, CPU, fs, commit */
int  bench_write_json(const char *path, const struct bench_result *r, size_t n,
		      const char *dir, const char *cmdline);
/* The same with the conditions of a sweep in the setup (cond may be NULL). */
int  bench_write_json_cond(const char *path, const struct bench_result *r, size_t n,
			   const char *dir, const char *cmdline, const struct bench_cond *cond);
/* Progress lines on stderr: only when it is a terminal, or when asked. */
int  bench_progress_wanted(int asked);
int  bench_write_csv(const char *path, const struct bench_result *r, size_t n);

/* ---- bench sweep (sweep.c): the original benchmark's three tables, every
 * engine, buffered and O_DIRECT. */
#define BENCH_SWEEP_MAXENG 16
#define BENCH_SWEEP_MAXPTS 8
enum { BENCH_PART_T1, BENCH_PART_T2, BENCH_PART_T3, BENCH_NPARTS };
struct bench_sweep_cfg {
	struct bench_job base;       /* dir, image, seed, verify, repeat, warmup_s */
	char engines[BENCH_SWEEP_MAXENG][64];
	unsigned nengines;
	int direct[2];
	unsigned ndirect;
	uint64_t sizes[4];           /* T3 file sizes, ascending */
	unsigned nsizes;
	uint64_t big;                /* the T1 and T2 file: the largest size */
	unsigned qd[BENCH_SWEEP_MAXPTS];
	uint32_t bs[BENCH_SWEEP_MAXPTS];
	unsigned npts;               /* T3's (qd, bs) pairs */
	double cell_time;            /* s per T3 run */
	double iops_time;            /* s per T2 run */
	double idle_window;          /* s of the idle sample before the run */
	double busy_load, busy_cpu;  /* the busy rule's thresholds (struct bench_cond) */
	int quick, force, progress;
	const char *md, *json, *csv;
	char cmdline[1024];
};
struct bench_cell {
	int part;                    /* BENCH_PART_* */
	unsigned eng;                /* index in cfg.engines */
	struct bench_job job;
	int done;                    /* res is set */
	struct bench_result res;
};
struct bench_sweep {
	struct bench_sweep_cfg cfg;
	struct bench_cell *cells;
	size_t ncells;
	struct bench_cond cond;
	char setup[1200];            /* bench_setup_info's lines */
};
/* The full grid's defaults, or --quick's short subset. */
void bench_sweep_defaults(struct bench_sweep_cfg *c, int quick);
/* Fill sw->cells from sw->cfg (nothing run): 0, or -EINVAL with err set. */
int  bench_sweep_plan(struct bench_sweep *sw, char *err, size_t n);
/* Estimated seconds for cells [from, ncells), per part in part_s (may be NULL). */
double bench_sweep_estimate(const struct bench_sweep *sw, size_t from, double *part_s);
/* The tables of the cells done, with the setup and the conditions. */
void bench_sweep_markdown(FILE *f, const struct bench_sweep *sw);
void bench_sweep_free(struct bench_sweep *sw);
/* The whole command: returns the exit status (0, 1 a job failed or an output
 * could not be written, 2 bad options, 3 refused: the machine was busy). */
int  bench_sweep_main(const struct bench_sweep_cfg *cfg);

#endif /* BENCH_H */
