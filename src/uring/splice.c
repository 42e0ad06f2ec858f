/* SPDX-License-Identifier: MIT */
/*
 * splice.c - SPLICE and TEE on the emulated ring, as the kernel's
 * io_uring/splice.c, on a worker (they may block).
 *
 * Must never: use a file index or fd without checking it (-EBADF).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "opdef.h"

int32_t op_splice(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct io_uring_sqe *s = &q->sqe;
	struct emu_ring *r = q->r;
	int e = req_file(q);
	if (e)
		return e;
	unsigned sf = s->splice_flags;
	if (sf & ~(SPLICE_F_FD_IN_FIXED | SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT))
		return -EINVAL;
	struct fent in;
	if ((e = exec_file(r, s->splice_fd_in, (sf & SPLICE_F_FD_IN_FIXED) ? 1 : 0, &in)) < 0)
		return e;
	sf &= ~SPLICE_F_FD_IN_FIXED;
	/* 0 bytes: splice(2) and tee(2) look at no file, the kernel's ring has both */
	if (!s->len && (fcntl(in.fd, F_GETFD) < 0 || fcntl(q->fd, F_GETFD) < 0))
		return -EBADF;
	if (s->opcode == IORING_OP_TEE) {
		if (s->splice_off_in || s->off)
			return -EINVAL;
		return ret_errno(tee(in.fd, q->fd, s->len, sf));
	}
	loff_t oin = (loff_t)s->splice_off_in, oout = (loff_t)s->off;
	ssize_t n = splice(in.fd, oin == -1 ? NULL : &oin, q->fd, oout == -1 ? NULL : &oout, s->len, sf);
	if (n >= 0 || errno != ESPIPE)
		return ret_errno(n);
	/* splice(2) refuses an offset on a pipe before it looks at the files' modes;
	 * the kernel's ring looks at the modes first (-EBADF) */
	return exec_fd_mode_refuses(in.fd, 0) || exec_fd_mode_refuses(q->fd, 1) ? -EBADF : -ESPIPE;
}
