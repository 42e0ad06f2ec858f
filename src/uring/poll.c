/* SPDX-License-Identifier: MIT */
/*
 * poll.c - POLL_ADD and POLL_REMOVE on the emulated ring, as the kernel's
 * io_uring/poll.c: ready now (inline), else a one-shot wait in the reactor
 * or a multishot entry of its epoll set.
 *
 * Must never: wait on the submitting thread, or report events that were not
 * asked for (but POLLERR, POLLHUP, POLLNVAL and POLLRDHUP, as the kernel).
 */
#include <errno.h>
#include <poll.h>
#include <unistd.h>
#include "opdef.h"

int poll_add_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->len & ~IORING_POLL_ADD_MULTI)
		return -EINVAL;                /* IORING_POLL_ADD_LEVEL: not emulated */
	if ((s->len & IORING_POLL_ADD_MULTI) && (s->flags & IOSQE_CQE_SKIP_SUCCESS))
		return -EINVAL;
	return 0;
}

int32_t exec_poll_now(int fd, short ev)
{
	struct pollfd p = { fd, ev, 0 };
	int n = poll(&p, 1, 0);
	if (n < 0)
		return -errno;
	return p.revents & (ev | POLLERR | POLLHUP | POLLNVAL);
}

int32_t op_poll_add(struct ureq *q, int ctx, struct ureq **run)
{
	(void)run;
	struct emu_ring *r = q->r;
	int e = req_file(q);
	if (e)
		return e;
	/* POLLRDHUP is always asked and reported, as the kernel's ring has it (with
	 * POLLERR, POLLHUP and POLLNVAL, which poll() reports unasked) */
	short ev = (short)((q->sqe.poll32_events & 0xffff) | POLLRDHUP);
	if (q->sqe.len & IORING_POLL_ADD_MULTI) {
		/* one CQE (IORING_CQE_F_MORE) per wake-up until cancelled; what is
		 * pending now is posted before the submit returns, as the kernel
		 * (one harvest for the whole submission: exec_submit) */
		pthread_mutex_lock(&r->lock);
		q->pevents = ev;
		e = reactor_mshot_arm_locked(q);
		r->ms_harvest = 1;
		pthread_mutex_unlock(&r->lock);
		if (e == -EPERM) {
			/* a regular file: ready, and never woken; none of its events ready:
			 * -EINVAL, as a one-shot poll (reactor_arm_locked) */
			int32_t m = exec_poll_now(q->fd, ev);
			return m > 0 ? m : -EINVAL;
		}
		return e ? e : Q_QUEUED;
	}
	if (ctx == CTX_INLINE) {
		int32_t m = exec_poll_now(q->fd, ev);
		if (m > 0 && (m & POLLNVAL))
			return -EBADF;            /* closed since the ring cached it */
		if (m)
			return m;
	}
	return exec_wait_ready(q, ev);
}

int32_t op_poll_remove(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	unsigned fl = s->len;
	if (fl & ~(IORING_POLL_UPDATE_EVENTS | IORING_POLL_UPDATE_USER_DATA | IORING_POLL_ADD_MULTI))
		return -EINVAL;
	if (fl == IORING_POLL_ADD_MULTI)
		return -EINVAL;                   /* meaningless without an update */
	int32_t res = 0;
	pthread_mutex_lock(&r->lock);
	struct ureq *t = exec_find_locked(r, q, s->addr, IORING_OP_POLL_ADD, RS_POLL);
	if (!t) {
		res = -ENOENT;
	} else if (fl & (IORING_POLL_UPDATE_EVENTS | IORING_POLL_UPDATE_USER_DATA)) {
		/* the events and user_data change; one-shot or multishot stays as armed */
		if (fl & IORING_POLL_UPDATE_EVENTS)
			t->pevents = (short)((s->poll32_events & 0xffff) | POLLRDHUP);
		if (fl & IORING_POLL_UPDATE_USER_DATA)
			exec_ud_rehash(t, s->off);
		if (t->mshot) {
			if (reactor_mshot_rearm_locked(t) < 0)
				exec_complete_locked(t, -ECANCELED, run);   /* as the kernel's failed re-arm */
			r->ms_harvest = 1;
		} else {
			reactor_rearm_locked(t);
		}
	} else {
		exec_complete_locked(t, -ECANCELED, run);
	}
	pthread_mutex_unlock(&r->lock);
	return res;
}
