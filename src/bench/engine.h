/* SPDX-License-Identifier: MIT */
/*
 * engine.h - the I/O engine interface of bench, modelled on fio's ioengines:
 * one table of function pointers per engine, one source file per engine
 * (eng_psync.c, eng_io_uring.c, ...), filled with designated initializers.
 *
 * The harness (run.c) owns the workload: offsets, buffers, stamps, timing.
 * An engine only moves bytes. It must never allocate, print or sleep in
 * queue/commit/getevents/event (the timed region), and never exit(): errors
 * travel in io->res (per I/O) or as a negative errno from setup, with a
 * reason in td->reason (then the engine is reported "skipped: <reason>").
 */
#ifndef BENCH_ENGINE_H
#define BENCH_ENGINE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct bench_job;

enum bench_op { BENCH_OP_READ = 0, BENCH_OP_WRITE = 1, BENCH_OP_NOP = 2 };

/* One I/O unit. The harness owns the array (td->ios, td->nios entries). */
struct bench_io {
	uint64_t off;        /* byte offset in the file */
	void *buf;           /* td->job->bs bytes, 4 KiB aligned */
	uint32_t len;
	uint16_t op;         /* enum bench_op */
	uint16_t idx;        /* index in td->ios, also the fixed-buffer index */
	int64_t res;         /* set by the engine: bytes moved or -errno */
	uint64_t t_start;    /* ns, CLOCK_MONOTONIC, set by the harness at queue */
	void *eng_data;      /* engine's per-I/O state (iocb, aiocb, ...) */
};

/* Per-job state shared by the harness and the engine. */
struct bench_td {
	const struct bench_job *job;
	const struct bench_engine_ops *ops;
	void *eng;                /* engine private state */
	char path[PATH_MAX];      /* host file (host engines) */
	char image[PATH_MAX];     /* SimpleFS image (sfs, ur) */
	char fname[64];           /* file name inside the image */
	struct bench_io *ios;
	unsigned nios;            /* == queue depth */
	pid_t helper_pid;         /* a server process whose CPU counts too, or 0 */
	char reason[256];         /* why setup failed (skip), or what broke */
};

/* queue() answers */
enum { BENCH_Q_COMPLETED = 0, BENCH_Q_QUEUED = 1, BENCH_Q_BUSY = 2 };

/* flags */
#define BENCH_ENG_SYNC      0x1u  /* every I/O completes inside queue() */
#define BENCH_ENG_IMAGE     0x2u  /* works on a file inside a SimpleFS image */
#define BENCH_ENG_NODATA    0x4u  /* moves no data (null): stamps not checked */
#define BENCH_ENG_NOP       0x8u  /* supports BENCH_OP_NOP */

struct bench_engine_ops {
	const char *name;
	const char *desc;
	unsigned flags;
	/* Before setup, outside any timing: make td->job's file exist, sized and
	 * stamped (image engines; host engines use the harness's host file). */
	int (*prepare)(struct bench_td *td);
	/* Open the file, create rings, set ios[i].buf if the engine owns the
	 * buffers (registered memory); the harness fills the others. */
	int (*setup)(struct bench_td *td);
	/* Optional second step after the harness has set every ios[i].buf
	 * (io_uring registers fixed buffers here). */
	int (*post_buffers)(struct bench_td *td);
	/* Queue one I/O: COMPLETED (io->res set), QUEUED, BUSY, or -errno. */
	int (*queue)(struct bench_td *td, struct bench_io *io);
	/* Submit what queue() gathered. 0 or -errno. */
	int (*commit)(struct bench_td *td);
	/* Wait for at least min (<= max) completions; returns how many or -errno. */
	int (*getevents)(struct bench_td *td, unsigned min, unsigned max);
	/* The i-th completion of the last getevents, with io->res set. */
	struct bench_io *(*event)(struct bench_td *td, unsigned i);
	void (*cleanup)(struct bench_td *td);
};

extern const struct bench_engine_ops bench_eng_null;
extern const struct bench_engine_ops bench_eng_psync;
extern const struct bench_engine_ops bench_eng_io_uring;
extern const struct bench_engine_ops bench_eng_dropin;
extern const struct bench_engine_ops bench_eng_libaio;
extern const struct bench_engine_ops bench_eng_posixaio;
extern const struct bench_engine_ops bench_eng_sfs;
extern const struct bench_engine_ops bench_eng_ur;

/* All engines this build has, NULL-terminated (run.c). */
extern const struct bench_engine_ops *const bench_engines[];
const struct bench_engine_ops *bench_engine_find(const char *name);

/* Helpers for engines (run.c) */
int bench_set_reason(struct bench_td *td, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Open td->path read-write, O_DIRECT if the job asks: fd or -errno (reason set). */
int bench_open_host(struct bench_td *td);

#endif /* BENCH_ENGINE_H */
