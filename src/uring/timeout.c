/* SPDX-License-Identifier: MIT */
/*
 * timeout.c - TIMEOUT, LINK_TIMEOUT and TIMEOUT_REMOVE on the emulated ring,
 * as the kernel's io_uring/timeout.c: deadlines in the reactor's heap,
 * completion counts on r->counted; a TIMEOUT handed over by a process that
 * left a ring shared across fork (xproc.c) is adopted here.
 *
 * Must never: read the timespec from the application after submission (it
 * is copied), or fire a timeout twice.
 */
#include <errno.h>
#include "opdef.h"

int timeout_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->len != 1 || s->buf_index || s->splice_fd_in || s->ioprio)
		return -EINVAL;
	if (s->timeout_flags & ~(IORING_TIMEOUT_ABS | IORING_TIMEOUT_BOOTTIME | IORING_TIMEOUT_REALTIME |
				 IORING_TIMEOUT_ETIME_SUCCESS))
		return -EINVAL;
	if ((s->timeout_flags & IORING_TIMEOUT_BOOTTIME) && (s->timeout_flags & IORING_TIMEOUT_REALTIME))
		return -EINVAL;
	if (s->opcode == IORING_OP_LINK_TIMEOUT && s->off)
		return -EINVAL;
	if (ucopy(&q->ts, (void *)(uintptr_t)s->addr, sizeof(q->ts)) < 0)
		return -EFAULT;
	if (q->ts.tv_sec < 0 || q->ts.tv_nsec < 0 || q->ts.tv_nsec >= 1000000000)
		return -EINVAL;
	return 0;
}

int timeout_remove_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->buf_index || s->len || s->splice_fd_in || s->ioprio || (s->flags & IOSQE_FIXED_FILE))
		return -EINVAL;
	unsigned fl = s->timeout_flags, upd = IORING_TIMEOUT_UPDATE | IORING_LINK_TIMEOUT_UPDATE;
	if (!(fl & upd))
		return fl ? -EINVAL : 0;     /* a removal takes no flags, as the kernel's */
	if (fl & ~(upd | IORING_TIMEOUT_ABS))
		return -EINVAL;
	if (fl & IORING_TIMEOUT_UPDATE) {
		if (ucopy(&q->ts, (void *)(uintptr_t)s->off, sizeof(q->ts)) < 0)
			return -EFAULT;
		if (q->ts.tv_sec < 0 || q->ts.tv_nsec < 0 || q->ts.tv_nsec >= 1000000000)
			return -EINVAL;
	}
	return 0;
}

int32_t op_timeout(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	uint64_t dl;
	int e = kts_to_deadline(&q->ts, q->sqe.timeout_flags, &dl);
	if (e)
		return e;
	pthread_mutex_lock(&r->lock);
	q->deadline = dl;
	q->target = 0;
	if (q->sqe.off)
		q->target = r->ncompleted + q->sqe.off;
	q->state = RS_TIMEOUT;
	timer_add_locked(q);
	reactor_start_locked(r);
	reactor_kick(r);
	pthread_mutex_unlock(&r->lock);
	return Q_QUEUED;
}

int32_t op_timeout_remove(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	unsigned fl = s->timeout_flags;
	int lt = !!(fl & IORING_LINK_TIMEOUT_UPDATE);
	unsigned op = lt ? IORING_OP_LINK_TIMEOUT : IORING_OP_TIMEOUT;
	int32_t res;
	pthread_mutex_lock(&r->lock);
	struct ureq *t = exec_find_locked(r, q, s->addr, op, RS_TIMEOUT);
	if (!t) {
		res = -ENOENT;
	} else if (fl & (IORING_TIMEOUT_UPDATE | IORING_LINK_TIMEOUT_UPDATE)) {
		uint64_t dl;
		res = kts_to_deadline(&q->ts, fl & ~(IORING_TIMEOUT_UPDATE | IORING_LINK_TIMEOUT_UPDATE), &dl);
		if (!res) {
			t->deadline = dl;
			timer_update_locked(t);
			reactor_kick(r);
		}
	} else {
		exec_complete_locked(t, -ECANCELED, run);
		res = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return res;
}

int32_t op_link_timeout(struct ureq *q, int ctx, struct ureq **run)
{
	(void)q, (void)ctx, (void)run;
	return -EINVAL;                   /* not after a linked request */
}

/* A TIMEOUT handed over by a process that left the ring: armed here with the
 * same user_data and deadline (CLOCK_MONOTONIC is the machine's), and left
 * completions to wait for (0: none). */
int exec_adopt_timeout(struct emu_ring *r, uint64_t ud, uint64_t deadline, unsigned tflags, uint64_t left)
{
	pthread_mutex_lock(&r->lock);
	struct ureq *q = r->dying ? NULL : exec_req_get_locked(r);
	if (!q) {
		pthread_mutex_unlock(&r->lock);
		return -ENOMEM;
	}
	q->sqe.opcode = IORING_OP_TIMEOUT;
	q->sqe.user_data = ud;
	q->sqe.timeout_flags = tflags;
	q->sqe.off = left;
	exec_ud_hash_add(q);
	q->chain_n = 1;
	r->inflight++;
	q->deadline = deadline;
	q->target = left ? r->ncompleted + left : 0;
	q->state = RS_TIMEOUT;
	timer_add_locked(q);
	int e = reactor_start_locked(r);
	if (e < 0)
		exec_complete_locked(q, e, &(struct ureq *){ NULL });
	else
		reactor_kick(r);
	pthread_mutex_unlock(&r->lock);
	return e < 0 ? e : 0;
}
