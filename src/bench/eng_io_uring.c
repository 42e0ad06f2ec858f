/* SPDX-License-Identifier: MIT */
/*
 * eng_io_uring.c - the kernel's io_uring through liburing, with the options
 * sqpoll (IORING_SETUP_SQPOLL), regfiles (a registered file) and fixedbufs
 * (registered buffers, READ_FIXED/WRITE_FIXED). Where the kernel refuses
 * io_uring (seccomp, io_uring_disabled) setup fails and the engine is skipped.
 * The same code drives the liburing drop-in in emulation ("dropin" engine):
 * liburing's out-of-line functions are called through struct uring_lib, which
 * for the drop-in points into uring/liburing.so.2 loaded with dlopen (bench
 * itself links Debian's liburing); liburing.h's inline helpers work on both.
 * Must never block in queue(); getevents may wait.
 */
#include <dlfcn.h>
#include <errno.h>
#include <liburing.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench.h"

/* liburing's out-of-line entry points the engine uses */
struct uring_lib {
	int (*queue_init_params)(unsigned, struct io_uring *, struct io_uring_params *);
	void (*queue_exit)(struct io_uring *);
	int (*register_files)(struct io_uring *, const int *, unsigned);
	int (*register_buffers)(struct io_uring *, const struct iovec *, unsigned);
	int (*submit)(struct io_uring *);
	int (*get_cqe)(struct io_uring *, struct io_uring_cqe **, unsigned, unsigned, sigset_t *);
	int emulate;                       /* set URING_EMULATE=1 around queue_init */
};

static const struct uring_lib kernel_lib = {
	io_uring_queue_init_params, io_uring_queue_exit, io_uring_register_files,
	io_uring_register_buffers, io_uring_submit, __io_uring_get_cqe, 0,
};

struct uring {
	const struct uring_lib *lib;
	struct io_uring ring;
	int fd;
	int ring_ok;
	struct bench_io **ev;
	unsigned nev;
};

static void uring_cleanup(struct bench_td *td)
{
	struct uring *u = td->eng;
	if (!u)
		return;
	if (u->ring_ok)
		u->lib->queue_exit(&u->ring);
	if (u->fd >= 0)
		close(u->fd);
	free(u->ev);
	free(u);
	td->eng = NULL;
}

static int setup_with(struct bench_td *td, const struct uring_lib *lib)
{
	const struct bench_job *job = td->job;
	struct uring *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	td->eng = u;
	u->lib = lib;
	u->fd = -1;
	u->ev = calloc(td->nios, sizeof(*u->ev));
	if (!u->ev)
		goto nomem;
	if (job->rw != BENCH_RW_NOP) {
		u->fd = bench_open_host(td);
		if (u->fd < 0) {
			int e = u->fd;
			uring_cleanup(td);
			return e;
		}
	}
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	if (job->eo.sqpoll) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000;     /* ms */
	}
	unsigned entries = td->nios < 2 ? 2 : td->nios;
	const char *old = getenv("URING_EMULATE");
	if (lib->emulate)
		setenv("URING_EMULATE", "1", 1);
	int e = lib->queue_init_params(entries, &u->ring, &p);
	if (lib->emulate && old)
		setenv("URING_EMULATE", old, 1);
	else if (lib->emulate)
		unsetenv("URING_EMULATE");
	if (e < 0) {
		uring_cleanup(td);
		return bench_set_reason(td, e, "io_uring_queue_init%s: %s%s",
					job->eo.sqpoll ? " (SQPOLL)" : "", strerror(-e),
					e == -EPERM || e == -ENOSYS ?
					" (io_uring blocked: seccomp or kernel.io_uring_disabled)" : "");
	}
	u->ring_ok = 1;
	if (job->eo.regfiles && u->fd >= 0) {
		e = lib->register_files(&u->ring, &u->fd, 1);
		if (e < 0) {
			uring_cleanup(td);
			return bench_set_reason(td, e, "io_uring_register_files: %s", strerror(-e));
		}
	}
	return 0;
nomem:
	uring_cleanup(td);
	return -ENOMEM;
}

static int uring_post_buffers(struct bench_td *td)
{
	struct uring *u = td->eng;
	if (!td->job->eo.fixedbufs)
		return 0;
	struct iovec *iov = calloc(td->nios, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	for (unsigned i = 0; i < td->nios; i++) {
		iov[i].iov_base = td->ios[i].buf;
		iov[i].iov_len = td->job->bs;
	}
	int e = u->lib->register_buffers(&u->ring, iov, td->nios);
	free(iov);
	if (e < 0)
		return bench_set_reason(td, e, "io_uring_register_buffers: %s%s", strerror(-e),
					e == -ENOMEM ? " (RLIMIT_MEMLOCK?)" : "");
	return 0;
}

static int uring_queue(struct bench_td *td, struct bench_io *io)
{
	struct uring *u = td->eng;
	const struct bench_eng_opts *eo = &td->job->eo;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (!sqe)
		return BENCH_Q_BUSY;
	int fd = eo->regfiles ? 0 : u->fd;
	if (io->op == BENCH_OP_NOP)
		io_uring_prep_nop(sqe);
	else if (eo->fixedbufs && io->op == BENCH_OP_WRITE)
		io_uring_prep_write_fixed(sqe, fd, io->buf, io->len, io->off, io->idx);
	else if (eo->fixedbufs)
		io_uring_prep_read_fixed(sqe, fd, io->buf, io->len, io->off, io->idx);
	else if (io->op == BENCH_OP_WRITE)
		io_uring_prep_write(sqe, fd, io->buf, io->len, io->off);
	else
		io_uring_prep_read(sqe, fd, io->buf, io->len, io->off);
	if (eo->regfiles && io->op != BENCH_OP_NOP)
		sqe->flags |= IOSQE_FIXED_FILE;
	io_uring_sqe_set_data(sqe, io);
	return BENCH_Q_QUEUED;
}

static int uring_commit(struct bench_td *td)
{
	struct uring *u = td->eng;
	int r = u->lib->submit(&u->ring);
	return r < 0 ? r : 0;
}

static int uring_getevents(struct bench_td *td, unsigned min, unsigned max)
{
	struct uring *u = td->eng;
	unsigned n = 0;
	while (n < min) {
		struct io_uring_cqe *cqe;
		int r = u->lib->get_cqe(&u->ring, &cqe, 0, min - n, NULL);   /* io_uring_wait_cqe_nr */
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r < 0)
			return r;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&u->ring, head, cqe) {
			if (n == max)
				break;
			struct bench_io *io = io_uring_cqe_get_data(cqe);
			io->res = cqe->res;
			u->ev[n++] = io;
			seen++;
		}
		io_uring_cq_advance(&u->ring, seen);
	}
	u->nev = n;
	return (int)n;
}

static struct bench_io *uring_event(struct bench_td *td, unsigned i)
{
	struct uring *u = td->eng;
	return u->ev[i];
}

static int uring_setup(struct bench_td *td)
{
	return setup_with(td, &kernel_lib);
}

/* The drop-in: $BENCH_URING_LIB, else uring/liburing.so.2 beside the program
 * (bench) or two levels up (the test programs in obj/t/). */
static struct uring_lib dropin_lib;

static int dropin_load(struct bench_td *td)
{
	if (dropin_lib.queue_init_params)
		return 0;
	char exe[PATH_MAX], path[PATH_MAX + 32];
	const char *env = getenv("BENCH_URING_LIB");
	void *h = NULL;
	if (env) {
		h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
	} else {
		ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (l > 0) {
			exe[l] = 0;
			char *slash = strrchr(exe, '/');
			if (slash)
				*slash = 0;
			static const char *const rel[] = { "/uring/liburing.so.2", "/../../uring/liburing.so.2" };
			for (int i = 0; i < 2 && !h; i++) {
				snprintf(path, sizeof(path), "%s%s", exe, rel[i]);
				h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			}
		}
	}
	if (!h)
		return bench_set_reason(td, -ENOENT, "the drop-in uring/liburing.so.2 was not found (%s)",
					env ? env : "set BENCH_URING_LIB");
	struct uring_lib l = {
		(int (*)(unsigned, struct io_uring *, struct io_uring_params *))dlsym(h, "io_uring_queue_init_params"),
		(void (*)(struct io_uring *))dlsym(h, "io_uring_queue_exit"),
		(int (*)(struct io_uring *, const int *, unsigned))dlsym(h, "io_uring_register_files"),
		(int (*)(struct io_uring *, const struct iovec *, unsigned))dlsym(h, "io_uring_register_buffers"),
		(int (*)(struct io_uring *))dlsym(h, "io_uring_submit"),
		(int (*)(struct io_uring *, struct io_uring_cqe **, unsigned, unsigned, sigset_t *))
			dlsym(h, "__io_uring_get_cqe"),
		1,
	};
	if (!l.queue_init_params || !l.queue_exit || !l.register_files || !l.register_buffers || !l.submit ||
	    !l.get_cqe)
		return bench_set_reason(td, -ENOENT, "the drop-in lacks liburing's functions");
	dropin_lib = l;
	return 0;
}

static int dropin_setup(struct bench_td *td)
{
	int e = dropin_load(td);
	return e < 0 ? e : setup_with(td, &dropin_lib);
}

/* Both engines run the same code; only the library (and so setup) differs. */
#define URING_ENGINE_OPS \
	.flags = BENCH_ENG_NOP, \
	.post_buffers = uring_post_buffers, \
	.queue = uring_queue, \
	.commit = uring_commit, \
	.getevents = uring_getevents, \
	.event = uring_event, \
	.cleanup = uring_cleanup

const struct bench_engine_ops bench_eng_dropin = {
	.name = "dropin",
	.desc = "this project's liburing drop-in, emulated ring (URING_EMULATE=1; options as io_uring)",
	.setup = dropin_setup,
	URING_ENGINE_OPS,
};

const struct bench_engine_ops bench_eng_io_uring = {
	.name = "io_uring",
	.desc = "the kernel's io_uring via liburing (options: sqpoll, regfiles, fixedbufs)",
	.setup = uring_setup,
	URING_ENGINE_OPS,
};
