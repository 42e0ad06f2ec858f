/* SPDX-License-Identifier: MIT */
/*
 * eng_ur.c - the project's engine: libur_fs's liburing-shaped ring API on a
 * SimpleFS image served by simplefs_server (a child process, so its CPU,
 * syscalls and context switches are counted with ours). Options: fixedbufs
 * (buffers registered in the shared region: zero copy on the client),
 * idle=US (the server's spin time before it sleeps); --direct opens the
 * image O_DIRECT in the server. The benchmark file is prepared through the
 * ring itself, outside the timing.
 * Must never block in queue(); must never leave a server running after
 * cleanup or prepare.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ur_fs.h"

struct urb {
	struct urfs_ring ring;
	int ring_ok;
	int fd;
	struct bench_io **ev;
};

/* Why a ring did not start, for a message that names the image already: the
 * library's errmsg without the image it may begin with, else the errno's text. */
static const char *start_why(const struct urfs_params *p, const char *image, int e)
{
	size_t n = strlen(image);

	if (!p->errmsg[0])
		return strerror(-e);
	return !strncmp(p->errmsg, image, n) && !strncmp(p->errmsg + n, ": ", 2) ? p->errmsg + n + 2 : p->errmsg;
}

static void fill_params(struct bench_td *td, struct urfs_params *p, unsigned flags)
{
	const struct bench_job *job = td->job;
	memset(p, 0, sizeof(*p));
	p->image = td->image;
	p->flags = flags;
	if (job->direct)
		p->flags |= URFS_SETUP_DIRECT;
	if (job->eo.idle_us >= 0) {
		p->flags |= URFS_SETUP_IDLE;
		p->idle_us = (unsigned)job->eo.idle_us;
	}
	size_t need = (size_t)(td->nios ? td->nios : 1) * job->bs;
	if (need < (1u << 20))
		need = 1u << 20;
	if (need < (4u << 20))
		need = 4u << 20;
	p->staging_size = need + (1u << 20);
	p->buf_area_size = job->eo.fixedbufs ? need : 4096;
}

/* One request, synchronously; returns cqe->res. */
static int sync_op(struct urfs_ring *ring)
{
	struct urfs_cqe *cqe;
	int r = urfs_submit_and_wait(ring, 1);
	if (r < 0)
		return r;
	r = urfs_wait_cqe(ring, &cqe);
	if (r < 0)
		return r;
	r = cqe->res;
	urfs_cqe_seen(ring, cqe);
	return r;
}

static int ur_open_file(struct urfs_ring *ring, const char *name, unsigned flags)
{
	struct urfs_sqe *sqe = urfs_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	urfs_prep_openat(sqe, name, flags);
	return sync_op(ring);
}

static int ur_close_file(struct urfs_ring *ring, int fd)
{
	struct urfs_sqe *sqe = urfs_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	urfs_prep_close(sqe, fd);
	return sync_op(ring);
}

static int ur_rw(struct urfs_ring *ring, int write, int fd, void *buf, unsigned len, uint64_t off)
{
	struct urfs_sqe *sqe = urfs_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	if (write)
		urfs_prep_write(sqe, fd, buf, len, off);
	else
		urfs_prep_read(sqe, fd, buf, len, off);
	return sync_op(ring);
}

/* Make td->fname exist in the image with the job's size and stamps. */
static int urb_prepare(struct bench_td *td)
{
	const struct bench_job *job = td->job;
	struct urfs_ring ring;
	struct urfs_params p;
	struct urfs_statx stx;
	const size_t chunk = 1u << 20;
	char *buf = NULL;
	int fd = -1, e;

	if (job->rw == BENCH_RW_NOP)
		return 0;
	/* A read-only look first: a read-only server writes nothing and needs no
	 * sync when it unmounts. */
	buf = aligned_alloc(4096, chunk);
	if (!buf)
		return -ENOMEM;
	fill_params(td, &p, URFS_SETUP_RDONLY);
	p.flags &= ~URFS_SETUP_DIRECT;
	p.staging_size = 4u << 20;
	if (urfs_queue_init_params(8, &ring, &p) == 0) {
		int good = 0;
		fd = ur_open_file(&ring, td->fname, URFS_O_RDONLY);
		struct urfs_sqe *sq = fd >= 0 ? urfs_get_sqe(&ring) : NULL;
		if (sq) {
			urfs_prep_statx(sq, fd, NULL, &stx);
			good = sync_op(&ring) == 0 && stx.size == job->size && job->size >= 4096;
		}
		uint64_t offs[3] = { 0, (job->size / 2) & ~4095ull, (job->size - 4096) & ~4095ull };
		for (int i = 0; i < 3 && good; i++)
			good = ur_rw(&ring, 0, fd, buf, 4096, offs[i]) == 4096 &&
			       bench_stamp_check(buf, 4096, offs[i], job->seed, NULL) == 0;
		if (fd >= 0)
			ur_close_file(&ring, fd);
		fd = -1;
		urfs_queue_exit(&ring);
		if (good) {
			free(buf);
			return 0;
		}
	}
	fill_params(td, &p, URFS_SETUP_CREATE);
	p.flags &= ~URFS_SETUP_DIRECT;
	p.staging_size = 4u << 20;
	e = urfs_queue_init_params(8, &ring, &p);
	if (e < 0) {
		free(buf);
		return bench_set_reason(td, e, "ur: start server on %s: %s", td->image,
					start_why(&p, td->image, e));
	}
	fd = ur_open_file(&ring, td->fname, URFS_O_CREAT);
	if (fd < 0) {
		e = bench_set_reason(td, fd, "ur: open %s in %s: %s", td->fname, td->image,
				     strerror(-fd));
		goto out;
	}
	struct urfs_sqe *sqe = urfs_get_sqe(&ring);
	if (!sqe) {
		e = -EBUSY;
		goto out;
	}
	urfs_prep_statx(sqe, fd, NULL, &stx);
	e = sync_op(&ring);
	if (e < 0) {
		bench_set_reason(td, e, "ur: statx %s: %s", td->fname, strerror(-e));
		goto out;
	}
	if (stx.size == job->size && job->size >= 4096) {
		uint64_t offs[3] = { 0, (job->size / 2) & ~4095ull, (job->size - 4096) & ~4095ull };
		int ok = 1;
		for (int i = 0; i < 3 && ok; i++)
			ok = ur_rw(&ring, 0, fd, buf, 4096, offs[i]) == 4096 &&
			     bench_stamp_check(buf, 4096, offs[i], job->seed, NULL) == 0;
		if (ok) {
			e = 0;
			goto out;
		}
	}
	sqe = urfs_get_sqe(&ring);
	if (!sqe) {
		e = -EBUSY;
		goto out;
	}
	urfs_prep_ftruncate(sqe, fd, 0);
	e = sync_op(&ring);
	if (e < 0) {
		bench_set_reason(td, e, "ur: truncate %s: %s", td->fname, strerror(-e));
		goto out;
	}
	bench_stamp_body(buf, chunk);
	for (uint64_t off = 0; off < job->size; off += chunk) {
		size_t len = job->size - off < chunk ? (size_t)(job->size - off) : chunk;
		bench_stamp_fill(buf, len, off, job->seed);
		int w = ur_rw(&ring, 1, fd, buf, (unsigned)len, off);
		if (w != (int)len) {
			e = w < 0 ? w : -EIO;
			bench_set_reason(td, e, "ur: fill %s in %s: %s%s", td->fname, td->image,
					 strerror(-e), e == -ENOSPC ? " (image too small: use --image)" : "");
			goto out;
		}
	}
	e = 0;
out:
	if (fd >= 0)
		ur_close_file(&ring, fd);
	urfs_queue_exit(&ring);
	free(buf);
	return e;
}

static void urb_cleanup(struct bench_td *td)
{
	struct urb *u = td->eng;
	if (!u)
		return;
	if (u->ring_ok) {
		if (u->fd >= 0)
			ur_close_file(&u->ring, u->fd);
		urfs_queue_exit(&u->ring);
	}
	free(u->ev);
	free(u);
	td->eng = NULL;
	td->helper_pid = 0;
}

static int urb_setup(struct bench_td *td)
{
	const struct bench_job *job = td->job;
	struct urfs_params p;
	struct urb *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	td->eng = u;
	u->fd = -1;
	u->ev = calloc(td->nios, sizeof(*u->ev));
	if (!u->ev) {
		urb_cleanup(td);
		return -ENOMEM;
	}
	/* NOP needs no image; a read job mounts read-only (nothing to sync at exit) */
	fill_params(td, &p, job->rw == BENCH_RW_NOP ? URFS_SETUP_NOIMAGE :
			    job->rw == BENCH_RW_READ ? URFS_SETUP_RDONLY : 0);
	int e = urfs_queue_init_params(td->nios < 2 ? 2 : td->nios, &u->ring, &p);
	if (e < 0) {
		urb_cleanup(td);
		return bench_set_reason(td, e, "ur: start server on %s%s: %s", td->image,
					job->direct ? " (O_DIRECT)" : "",
					start_why(&p, td->image, e));
	}
	u->ring_ok = 1;
	td->helper_pid = p.server_pid;
	if (job->rw != BENCH_RW_NOP) {
		u->fd = ur_open_file(&u->ring, td->fname,
				     job->rw == BENCH_RW_READ ? URFS_O_RDONLY : 0);
		if (u->fd < 0) {
			e = u->fd;
			urb_cleanup(td);
			return bench_set_reason(td, e, "ur: open %s in %s: %s", td->fname, td->image,
						strerror(-e));
		}
	}
	if (job->eo.fixedbufs) {
		struct iovec *iov = calloc(td->nios, sizeof(*iov));
		if (!iov) {
			urb_cleanup(td);
			return -ENOMEM;
		}
		for (unsigned i = 0; i < td->nios; i++)
			iov[i].iov_len = job->bs;
		e = urfs_register_buffers(&u->ring, iov, td->nios);
		if (e < 0) {
			free(iov);
			urb_cleanup(td);
			return bench_set_reason(td, e, "ur: register %u buffers of %u bytes: %s",
						td->nios, job->bs, strerror(-e));
		}
		for (unsigned i = 0; i < td->nios; i++)
			td->ios[i].buf = iov[i].iov_base;
		free(iov);
	}
	return 0;
}

static int urb_queue(struct bench_td *td, struct bench_io *io)
{
	struct urb *u = td->eng;
	struct urfs_sqe *sqe = urfs_get_sqe(&u->ring);
	if (!sqe)
		return BENCH_Q_BUSY;
	if (io->op == BENCH_OP_NOP)
		urfs_prep_nop(sqe);
	else if (td->job->eo.fixedbufs && io->op == BENCH_OP_WRITE)
		urfs_prep_write_fixed(sqe, u->fd, io->buf, io->len, io->off, io->idx);
	else if (td->job->eo.fixedbufs)
		urfs_prep_read_fixed(sqe, u->fd, io->buf, io->len, io->off, io->idx);
	else if (io->op == BENCH_OP_WRITE)
		urfs_prep_write(sqe, u->fd, io->buf, io->len, io->off);
	else
		urfs_prep_read(sqe, u->fd, io->buf, io->len, io->off);
	urfs_sqe_set_data(sqe, io);
	return BENCH_Q_QUEUED;
}

static int urb_commit(struct bench_td *td)
{
	struct urb *u = td->eng;
	while (urfs_sq_ready(&u->ring)) {
		int r = urfs_submit(&u->ring);
		if (r < 0)
			return r;
		if (r == 0)
			break;    /* no staging room: what is left goes with the next submit */
	}
	return 0;
}

static int urb_getevents(struct bench_td *td, unsigned min, unsigned max)
{
	struct urb *u = td->eng;
	unsigned n = 0;
	while (n < min) {
		struct urfs_cqe *cqe;
		if (urfs_sq_ready(&u->ring)) {
			int s = urfs_submit(&u->ring);
			if (s < 0)
				return s;
		}
		int r = urfs_wait_cqe_nr(&u->ring, &cqe, min - n);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r < 0)
			return r;
		uint32_t head;
		unsigned seen = 0;
		urfs_for_each_cqe(&u->ring, head, cqe) {
			if (n == max)
				break;
			struct bench_io *io = urfs_cqe_get_data(cqe);
			io->res = cqe->res;
			u->ev[n++] = io;
			seen++;
		}
		urfs_cq_advance(&u->ring, seen);
	}
	return (int)n;
}

static struct bench_io *urb_event(struct bench_td *td, unsigned i)
{
	struct urb *u = td->eng;
	return u->ev[i];
}

const struct bench_engine_ops bench_eng_ur = {
	.name = "ur",
	.desc = "the ur engine: user-space rings to simplefs_server on SimpleFS "
		"(options: fixedbufs, idle=US)",
	.flags = BENCH_ENG_IMAGE | BENCH_ENG_NOP,
	.prepare = urb_prepare,
	.setup = urb_setup,
	.queue = urb_queue,
	.commit = urb_commit,
	.getevents = urb_getevents,
	.event = urb_event,
	.cleanup = urb_cleanup,
};
