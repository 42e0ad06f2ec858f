/* SPDX-License-Identifier: MIT */
/*
 * eng_libaio.c - Linux native AIO (io_setup/io_submit/io_getevents via
 * libaio). Only asynchronous with O_DIRECT: on a buffered file io_submit does
 * the copy itself and returns when it is done (the report says so).
 * Must never allocate in queue/commit/getevents.
 */
#include <errno.h>
#include <libaio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

struct laio {
	io_context_t ctx;
	int fd;
	int ctx_ok;
	struct iocb *iocbs;        /* one per io unit */
	struct iocb **pending;     /* queued, not yet submitted */
	unsigned npending;
	struct io_event *events;
	unsigned nev;
};

static void laio_cleanup(struct bench_td *td)
{
	struct laio *a = td->eng;
	if (!a)
		return;
	if (a->ctx_ok)
		io_destroy(a->ctx);
	if (a->fd >= 0)
		close(a->fd);
	free(a->iocbs);
	free(a->pending);
	free(a->events);
	free(a);
	td->eng = NULL;
}

static int laio_setup(struct bench_td *td)
{
	struct laio *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	td->eng = a;
	a->fd = -1;
	a->iocbs = calloc(td->nios, sizeof(*a->iocbs));
	a->pending = calloc(td->nios, sizeof(*a->pending));
	a->events = calloc(td->nios, sizeof(*a->events));
	if (!a->iocbs || !a->pending || !a->events) {
		laio_cleanup(td);
		return -ENOMEM;
	}
	a->fd = bench_open_host(td);
	if (a->fd < 0) {
		int e = a->fd;
		laio_cleanup(td);
		return e;
	}
	int e = io_setup((int)td->nios, &a->ctx);
	if (e < 0) {
		laio_cleanup(td);
		return bench_set_reason(td, e, "io_setup(%u): %s%s", td->nios, strerror(-e),
					e == -EAGAIN ? " (fs.aio-max-nr reached)" : "");
	}
	a->ctx_ok = 1;
	return 0;
}

static int laio_queue(struct bench_td *td, struct bench_io *io)
{
	struct laio *a = td->eng;
	struct iocb *cb = &a->iocbs[io->idx];
	if (io->op == BENCH_OP_WRITE)
		io_prep_pwrite(cb, a->fd, io->buf, io->len, (long long)io->off);
	else
		io_prep_pread(cb, a->fd, io->buf, io->len, (long long)io->off);
	cb->data = io;
	a->pending[a->npending++] = cb;
	return BENCH_Q_QUEUED;
}

static int laio_commit(struct bench_td *td)
{
	struct laio *a = td->eng;
	unsigned done = 0;
	while (done < a->npending) {
		int r = io_submit(a->ctx, (long)(a->npending - done), a->pending + done);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r < 0)
			return r;
		done += (unsigned)r;
	}
	a->npending = 0;
	return 0;
}

static int laio_getevents(struct bench_td *td, unsigned min, unsigned max)
{
	struct laio *a = td->eng;
	for (;;) {
		int r = io_getevents(a->ctx, (long)min, (long)max, a->events, NULL);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		for (int i = 0; i < r; i++) {
			struct bench_io *io = a->events[i].data;
			long res = (long)a->events[i].res;
			io->res = res;
		}
		a->nev = (unsigned)r;
		return r;
	}
}

static struct bench_io *laio_event(struct bench_td *td, unsigned i)
{
	struct laio *a = td->eng;
	return a->events[i].data;
}

const struct bench_engine_ops bench_eng_libaio = {
	.name = "libaio",
	.desc = "Linux native AIO (asynchronous only with O_DIRECT)",
	.setup = laio_setup,
	.queue = laio_queue,
	.commit = laio_commit,
	.getevents = laio_getevents,
	.event = laio_event,
	.cleanup = laio_cleanup,
};
