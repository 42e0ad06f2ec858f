/* SPDX-License-Identifier: MIT */
/*
 * statx.c - STATX on the emulated ring, as the kernel's io_uring/statx.c: the
 * path is copied at submission, the system call runs on a worker.
 *
 * Must never: write the statx buffer itself (the system call does, or says
 * -EFAULT).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "opdef.h"

int statx_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return exec_upath((void *)(uintptr_t)s->addr, &q->p1, !!(s->statx_flags & AT_EMPTY_PATH));
}

int32_t op_statx(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	/* the system call: libc declares the buffer non-null, the application may pass NULL */
	return ret_errno(syscall(SYS_statx, s->fd, q->p1, (int)s->statx_flags, s->len,
				 (struct statx *)(uintptr_t)s->addr2));
}
