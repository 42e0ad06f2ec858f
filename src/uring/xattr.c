/* SPDX-License-Identifier: MIT */
/*
 * xattr.c - FSETXATTR, FGETXATTR, SETXATTR, GETXATTR on the emulated ring, as
 * the kernel's io_uring/xattr.c: names and paths copied at submission, the
 * system calls on a worker.
 *
 * Must never: touch the value buffer itself (the system calls check it).
 */
#include <errno.h>
#include <sys/xattr.h>
#include "opdef.h"

/* SETXATTR, GETXATTR: the name, then the path */
int xattr_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	int e = exec_ustrdup((void *)(uintptr_t)q->sqe.addr, &q->p1);
	return e ? e : exec_ustrdup((void *)(uintptr_t)q->sqe.addr3, &q->p2);
}

int fxattr_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	return exec_ustrdup((void *)(uintptr_t)q->sqe.addr, &q->p1);
}

int32_t op_fsetxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(fsetxattr(q->fd, q->p1, (void *)(uintptr_t)s->addr2, s->len, (int)s->xattr_flags));
}

int32_t op_fgetxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(fgetxattr(q->fd, q->p1, (void *)(uintptr_t)s->addr2, s->len));
}

int32_t op_setxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(setxattr(q->p2, q->p1, (void *)(uintptr_t)s->addr2, s->len, (int)s->xattr_flags));
}

int32_t op_getxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(getxattr(q->p2, q->p1, (void *)(uintptr_t)s->addr2, s->len));
}
