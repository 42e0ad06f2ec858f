/* SPDX-License-Identifier: MIT */
/*
 * epoll.c - EPOLL_CTL on the emulated ring, as the kernel's io_uring/epoll.c.
 *
 * Must never: take the epoll fd from the registered table (the kernel's
 * EPOLL_CTL takes no fixed file), or pass an event it did not copy.
 */
#include <errno.h>
#include <sys/epoll.h>
#include "opdef.h"

int32_t op_epoll_ctl(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	/* the event is copied first (the kernel's prep), then the epoll fd */
	struct epoll_event ev;
	int eop = (int)s->len;
	if (eop != EPOLL_CTL_DEL && ucopy(&ev, (void *)(uintptr_t)s->addr, sizeof(ev)) < 0)
		return -EFAULT;
	/* a plain fd even with IOSQE_FIXED_FILE: the kernel's EPOLL_CTL takes no file */
	if ((e = exec_file(q->r, s->fd, 0, &q->fe)))
		return e;
	return ret_errno(epoll_ctl(q->fe.fd, eop, (int)s->off, &ev));
}
