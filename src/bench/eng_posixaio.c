/* SPDX-License-Identifier: MIT */
/*
 * eng_posixaio.c - glibc POSIX AIO (aio_read/aio_write/aio_suspend), which
 * glibc runs on a pool of user threads; their CPU and syscalls count too.
 * Must never allocate in queue/getevents.
 */
#include <aio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

struct paio {
	int fd;
	struct aiocb *cbs;               /* one per io unit */
	const struct aiocb **list;       /* in flight, NULL where free */
	struct bench_io **ev;
	unsigned nev;
};

static void paio_cleanup(struct bench_td *td)
{
	struct paio *a = td->eng;
	if (!a)
		return;
	if (a->fd >= 0)
		close(a->fd);
	free(a->cbs);
	free(a->list);
	free(a->ev);
	free(a);
	td->eng = NULL;
}

static int paio_setup(struct bench_td *td)
{
	struct paio *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	td->eng = a;
	a->fd = -1;
	a->cbs = calloc(td->nios, sizeof(*a->cbs));
	a->list = calloc(td->nios, sizeof(*a->list));
	a->ev = calloc(td->nios, sizeof(*a->ev));
	if (!a->cbs || !a->list || !a->ev) {
		paio_cleanup(td);
		return -ENOMEM;
	}
	a->fd = bench_open_host(td);
	if (a->fd < 0) {
		int e = a->fd;
		paio_cleanup(td);
		return e;
	}
	return 0;
}

static int paio_queue(struct bench_td *td, struct bench_io *io)
{
	struct paio *a = td->eng;
	struct aiocb *cb = &a->cbs[io->idx];
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = a->fd;
	cb->aio_buf = io->buf;
	cb->aio_nbytes = io->len;
	cb->aio_offset = (off_t)io->off;
	cb->aio_sigevent.sigev_notify = SIGEV_NONE;
	int r = io->op == BENCH_OP_WRITE ? aio_write(cb) : aio_read(cb);
	if (r < 0)
		return errno == EAGAIN ? BENCH_Q_BUSY : -errno;
	a->list[io->idx] = cb;
	return BENCH_Q_QUEUED;
}

/* As fio does: reap what is done, else wait in aio_suspend on a few of the
 * I/Os still in flight (glibc registers a waiter per listed request, so a
 * short list is much cheaper than all of them). */
#define SUSPEND_ENTRIES 8

static int paio_getevents(struct bench_td *td, unsigned min, unsigned max)
{
	struct paio *a = td->eng;
	const struct aiocb *wait[SUSPEND_ENTRIES];
	unsigned n = 0;
	for (;;) {
		int nwait = 0;
		for (unsigned i = 0; i < td->nios && n < max; i++) {
			const struct aiocb *cb = a->list[i];
			if (!cb)
				continue;
			int e = aio_error(cb);
			if (e == EINPROGRESS) {
				if (nwait < SUSPEND_ENTRIES)
					wait[nwait++] = cb;
				continue;
			}
			struct bench_io *io = &td->ios[i];
			ssize_t res = aio_return((struct aiocb *)cb);
			io->res = e ? -e : res;
			a->list[i] = NULL;
			a->ev[n++] = io;
		}
		if (n >= min || nwait == 0)
			break;
		if (aio_suspend(wait, nwait, NULL) < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
	}
	a->nev = n;
	return (int)n;
}

static struct bench_io *paio_event(struct bench_td *td, unsigned i)
{
	struct paio *a = td->eng;
	return a->ev[i];
}

const struct bench_engine_ops bench_eng_posixaio = {
	.name = "posixaio",
	.desc = "glibc POSIX AIO (aio_read/aio_write on glibc's thread pool)",
	.setup = paio_setup,
	.queue = paio_queue,
	.getevents = paio_getevents,
	.event = paio_event,
	.cleanup = paio_cleanup,
};
