/* SPDX-License-Identifier: MIT */
/*
 * msg_ring.c - MSG_RING on the emulated ring, as the kernel's
 * io_uring/msg_ring.c: a CQE posted into another emulated ring, or a file of
 * this ring's table installed into the other's.
 *
 * Must never: post into a ring that is going away (-EBADFD), or into a
 * kernel ring (it is not ours: -EBADFD).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "opdef.h"

/* IORING_MSG_SEND_FD: the registered file at index addr3 of q's ring goes to
 * the target ring's table at file_index (as a dup of our dup: the two tables
 * close theirs independently), then the target gets a CQE {off, the install's
 * result: 0 or the allocated slot} unless IORING_MSG_RING_CQE_SKIP. len must be
 * 0 (as the kernel). Never holds two ring locks at once. */
static int32_t msg_send_fd(struct ureq *q, struct emu_ring *t)
{
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	if (s->len || t == r)
		return -EINVAL;
	if (t->disabled)
		return -EBADFD;
	struct fent src = { .fd = -1 };
	int fd = -EBADF;
	pthread_mutex_lock(&r->lock);
	if (s->addr3 < r->nfiles && r->files[s->addr3].fd >= 0) {
		src = r->files[s->addr3];
		fd = emu_fd_high(fcntl(src.fd, F_DUPFD_CLOEXEC, 0));
		if (fd < 0)
			fd = -errno;
	}
	pthread_mutex_unlock(&r->lock);
	if (fd < 0)
		return fd;
	int res = exec_install_file(t, s->file_index, fd, &src);
	if (res < 0 || (s->msg_ring_flags & IORING_MSG_RING_CQE_SKIP))
		return res;
	pthread_mutex_lock(&t->lock);
	emu_post(t, s->off, res, 0, 1);
	pthread_mutex_unlock(&t->lock);
	return res;
}

int32_t op_msg_ring(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct io_uring_sqe *s = &q->sqe;
	if (s->addr != IORING_MSG_DATA && s->addr != IORING_MSG_SEND_FD)
		return -EINVAL;
	if (s->buf_index || (s->msg_ring_flags & ~IORING_MSG_RING_CQE_SKIP))
		return -EINVAL;
	if (s->addr == IORING_MSG_DATA && (s->msg_ring_flags || s->addr3 || s->file_index))
		return -EINVAL;
	int e = req_file(q);
	if (e)
		return e;
	struct emu_ring *t = emu_find_checked(q->fd);
	if (!t)
		return -EBADFD;
	if (s->addr == IORING_MSG_SEND_FD)
		return msg_send_fd(q, t);
	pthread_mutex_lock(&t->lock);
	if (t->dying || t->disabled)                 /* not enabled yet: as the kernel */
		e = -EBADFD;
	else
		emu_post(t, s->off, (int32_t)s->len, 0, 1);
	pthread_mutex_unlock(&t->lock);
	return e;
}
