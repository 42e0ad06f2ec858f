/* SPDX-License-Identifier: MIT */
/*
 * eng_psync.c - pread/pwrite on a host file: the synchronous baseline
 * (fio's psync). Every I/O completes inside queue(); queue depth is 1 in
 * effect whatever the job says. Must never do more than one syscall per I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"

struct psync { int fd; };

static int psync_setup(struct bench_td *td)
{
	struct psync *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd = bench_open_host(td);
	if (p->fd < 0) {
		int e = p->fd;
		free(p);
		return e;
	}
	td->eng = p;
	return 0;
}

static int psync_queue(struct bench_td *td, struct bench_io *io)
{
	struct psync *p = td->eng;
	ssize_t n = io->op == BENCH_OP_WRITE ? pwrite(p->fd, io->buf, io->len, (off_t)io->off)
					     : pread(p->fd, io->buf, io->len, (off_t)io->off);
	io->res = n < 0 ? -errno : n;
	return BENCH_Q_COMPLETED;
}

static void psync_cleanup(struct bench_td *td)
{
	struct psync *p = td->eng;
	if (!p)
		return;
	close(p->fd);
	free(p);
	td->eng = NULL;
}

const struct bench_engine_ops bench_eng_psync = {
	.name = "psync",
	.desc = "pread/pwrite on a host file (synchronous)",
	.flags = BENCH_ENG_SYNC,
	.setup = psync_setup,
	.queue = psync_queue,
	.cleanup = psync_cleanup,
};
