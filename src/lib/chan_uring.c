/* SPDX-License-Identifier: MIT */
/*
 * chan_uring.c - the channel engine over the kernel's io_uring (liburing), on
 * a host file: one ring per channel, fixed buffers registered with the
 * kernel (one iovec per buffer, so an op inside buffer i goes as
 * READ_FIXED/WRITE_FIXED with index i).
 * Must never: leave SQEs prepared but unsubmitted after a call returns, or
 * keep more ops in flight than the ring holds.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "chan_int.h"

static int iu_open(struct urch *ch, const char *path, const struct urch_opts *o)
{
	struct io_uring *ring = calloc(1, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = o->ring_entries * 2;
	int r = io_uring_queue_init_params(o->ring_entries, ring, &p);
	if (r < 0) {
		free(ring);
		return r;               /* -ENOSYS / -EPERM: io_uring absent or blocked */
	}
	if (p.sq_entries < ch->cap)
		ch->cap = p.sq_entries;
	r = urch_host_open(ch, path);
	if (r < 0) {
		io_uring_queue_exit(ring);
		free(ring);
		return r;
	}
	ch->priv = ring;
	return 0;
}

static void iu_close(struct urch *ch)
{
	struct io_uring *ring = ch->priv;
	if (ring) {
		io_uring_queue_exit(ring);
		free(ring);
	}
	ch->priv = NULL;
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
}

static void iu_prep_sqe(struct urch *ch, struct io_uring_sqe *sqe, int write, void *buf,
			size_t len, uint64_t pos)
{
	int fi = urch_fixed_index(ch, buf, len);
	ch->stats.ops++;
	ch->stats.fixed_ops += fi >= 0;
	if (fi >= 0 && write)
		io_uring_prep_write_fixed(sqe, ch->fd, buf, (unsigned)len, pos, fi);
	else if (fi >= 0)
		io_uring_prep_read_fixed(sqe, ch->fd, buf, (unsigned)len, pos, fi);
	else if (write)
		io_uring_prep_write(sqe, ch->fd, buf, (unsigned)len, pos);
	else
		io_uring_prep_read(sqe, ch->fd, buf, (unsigned)len, pos);
}

static int64_t iu_rw1(struct urch *ch, int write, void *buf, size_t len, uint64_t pos)
{
	struct io_uring *ring = ch->priv;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	iu_prep_sqe(ch, sqe, write, buf, len, pos);
	io_uring_sqe_set_data64(sqe, 0);
	int r;
	do
		r = io_uring_submit_and_wait(ring, 1);
	while (r == -EINTR);
	if (r < 0)
		return r;
	do
		r = io_uring_wait_cqe(ring, &cqe);
	while (r == -EINTR);
	if (r < 0)
		return r;
	int64_t res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static int iu_prep(struct urch *ch, int write, void *buf, size_t len, uint64_t pos, uint64_t id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ch->priv);
	if (!sqe)
		return -EBUSY;
	iu_prep_sqe(ch, sqe, write, buf, len, pos);
	io_uring_sqe_set_data64(sqe, id);
	return 0;
}

static int iu_prep_force(struct urch *ch, int metadata, uint64_t id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ch->priv);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_fsync(sqe, ch->fd, metadata ? 0 : IORING_FSYNC_DATASYNC);
	io_uring_sqe_set_flags(sqe, IOSQE_IO_DRAIN);
	io_uring_sqe_set_data64(sqe, id);
	return 0;
}

static int iu_submit_wait(struct urch *ch)
{
	return io_uring_submit_and_wait(ch->priv, 1);
}

static unsigned iu_reap(struct urch *ch, urch_cb cb, void *arg)
{
	struct io_uring *ring = ch->priv;
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(ring, head, cqe) {
		cb(arg, cqe->user_data, cqe->res);
		n++;
	}
	io_uring_cq_advance(ring, n);
	return n;
}

static void iu_nothing(struct urch *ch)
{
	(void)ch;
}

static int iu_reg(struct urch *ch, size_t len, unsigned nr, void **bufs)
{
	char *p;
	struct iovec *iov = calloc(nr, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	int r = urch_alloc_buf(ch, len * nr, (void **)&p);
	if (r < 0) {
		free(iov);
		return r;
	}
	for (unsigned i = 0; i < nr; i++) {
		iov[i].iov_base = p + (size_t)i * len;
		iov[i].iov_len = len;
	}
	r = io_uring_register_buffers(ch->priv, iov, nr);
	free(iov);
	if (r < 0) {
		free(p);
		return r;
	}
	urch_reg_set(ch, p, len, nr, bufs);
	return 0;
}

static int iu_unreg(struct urch *ch)
{
	int r = io_uring_unregister_buffers(ch->priv);
	free(ch->reg_base);
	urch_reg_clear(ch);
	return r < 0 ? r : 0;
}

const struct urch_eng urch_eng_io_uring = {
	.name = "io_uring",
	.open = iu_open,
	.close = iu_close,
	.rw1 = iu_rw1,
	.prep = iu_prep,
	.prep_force = iu_prep_force,
	.submit_wait = iu_submit_wait,
	.reap = iu_reap,
	.enter = iu_nothing,
	.leave = iu_nothing,
	.reg = iu_reg,
	.unreg = iu_unreg,
	.size = urch_host_size,
	.truncate = urch_host_truncate,
	.force = urch_host_force,
	.lock = urch_host_lock,
	.unlock = urch_host_unlock,
};
