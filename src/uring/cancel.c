/* SPDX-License-Identifier: MIT */
/*
 * cancel.c - ASYNC_CANCEL, io_uring_register_sync_cancel and a process's
 * leaving of a shared ring, as the kernel's io_uring/cancel.c: a request is
 * found by user_data (the hash), fd or any, where it is (state), and ended
 * with -ECANCELED, its chain with it; one that runs now answers -EALREADY.
 *
 * Must never: find a request of the same submission that is not issued yet
 * (the kernel issues a submission's SQEs in order: -ENOENT), cancel a request
 * in a link chain apart from its chain, or post a CQE for a request twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "opdef.h"

/* Cancel q (found by a cancel or a firing LINK_TIMEOUT). Ring lock held.
 * 0: cancelled (its CQE posted), -EALREADY: running, -ENOENT: not cancellable. */
int exec_cancel_locked(struct emu_ring *r, struct ureq *q, int32_t res, struct ureq **run)
{
	switch (q->state) {
	case RS_WQ:
		rq_del(&r->wq_head, &r->wq_tail, q);
		break;
	case RS_DEFER: {
		rq_del(&r->defer_head, &r->defer_tail, q);
		r->inflight += q->chain_n;    /* completion counts them out again */
		/* Its chain never started: all of it is cancelled, hard links too (what is
		 * linked after it must not start ahead of the drain it waited behind). */
		for (struct ureq *m = q; m;) {
			struct ureq *n = m->link;
			m->link = NULL;
			exec_cancel_one_locked(r, m, m == q ? res : m->prep_err ? m->prep_err : -ECANCELED, 0);
			m = n;
		}
		/* the drain stays active though the queue may be empty now: what is
		 * submitted later still waits for what runs (queue_chain_locked) */
		if (r->inflight == 0 && r->defer_head)
			exec_release_deferred_locked(r, run);
		return 0;
	}
	case RS_POLL:
	case RS_TIMEOUT:
		break;
	case RS_RUN:
		if (q->mshot && q->sqe.opcode != IORING_OP_POLL_ADD) {
			/* a multishot accepting or receiving now ends when it next looks */
			q->ms_end = res;
			return 0;
		}
		/* a one-shot that goes back to wait for readiness ends there
		 * (exec_wait_ready), or the cancel would be lost: a blocking
		 * listener's accept that lost its connection to another thread, a
		 * stream read retried (a LINK_TIMEOUT's cancel too) */
		q->cancel_run = 1;
		return -EALREADY;
	case RS_AIO:
		return -EALREADY;
	default:
		return -ENOENT;
	}
	if (q->sqe.opcode == IORING_OP_LINK_TIMEOUT && q->lt_target) {
		q->lt_target->lt = NULL;
		q->lt_target = NULL;
	}
	exec_buf_recycle_locked(q);
	q->cflags = 0;
	exec_complete_locked(q, res, run);
	return 0;
}

static int cancel_match(struct ureq *x, struct ureq *self, unsigned fl, uint64_t ud, int fd)
{
	if (x == self || x->state == RS_CHAIN || x->state == RS_LT_IDLE || x->state == RS_FREE)
		return 0;
	/* queued to run in this submission, not issued yet: the kernel issues a
	 * submission's SQEs in order, so a cancel never finds a later one */
	if (x->state == RS_RUN && !__atomic_load_n(&x->started, __ATOMIC_RELAXED))
		return 0;
	if (fl & IORING_ASYNC_CANCEL_ANY)
		return 1;
	if (fl & IORING_ASYNC_CANCEL_FD) {
		int fixed = !!(x->sqe.flags & IOSQE_FIXED_FILE);
		return x->sqe.fd == fd && fixed == !!(fl & IORING_ASYNC_CANCEL_FD_FIXED);
	}
	return x->sqe.user_data == ud;
}

/* The requests a cancel looks at: all (ANY, FD), or those of one user_data. */
static struct ureq *cand_first(struct emu_ring *r, unsigned fl, uint64_t ud)
{
	return (fl & (IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_FD)) ? r->live : *exec_ud_chain(r, ud);
}

static struct ureq *cand_next(struct ureq *x, unsigned fl)
{
	return (fl & (IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_FD)) ? x->next : x->hnext;
}

static int32_t cancel_locked(struct emu_ring *r, struct ureq *self, unsigned fl, uint64_t ud, int fd,
			     struct ureq **run)
{
	int all = !!(fl & (IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_ANY));
	int found = 0, canceled = 0;
	for (int again = 1; again;) {
		again = 0;
		for (struct ureq *x = cand_first(r, fl, ud); x; x = cand_next(x, fl)) {
			if (!cancel_match(x, self, fl, ud, fd) || x->canceled)
				continue;
			found++;
			x->canceled = 1;
			int e = exec_cancel_locked(r, x, -ECANCELED, run);
			if (e == 0) {
				canceled++;
				again = 1;            /* the live list changed */
				break;
			}
			if (!all)
				break;
		}
		if (!all && found)
			break;
	}
	for (struct ureq *x = cand_first(r, fl, ud); x; x = cand_next(x, fl))
		if (x->state == RS_RUN || x->state == RS_AIO)
			x->canceled = 0;
	if (all)
		return canceled;        /* how many, 0 for none (the kernel's count) */
	if (!found)
		return -ENOENT;
	return canceled ? 0 : -EALREADY;
}

/*
 * A ring shared across fork(): what this process did not find (or, for ALL
 * and ANY, in addition) is looked for among the requests of the other
 * processes, each of which runs and cancels its own (xproc.c). res is the
 * answer here; the first process that knows the request answers otherwise.
 */
static int32_t cancel_elsewhere(struct emu_ring *r, unsigned fl, uint64_t ud, int fd, int32_t res)
{
	if (__builtin_expect(!r->xs, 1))
		return res;
	int all = !!(fl & (IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_ANY));
	if (!all && res != -ENOENT)
		return res;
	int32_t there = xproc_cancel(r, fl, ud, fd, all);
	if (!all)
		return there;
	if (there == -ENOENT)
		return res;
	return res == -ENOENT ? there : res + there;
}

/* Another process asks (xproc.c's listener): cancel what matches here. */
int32_t exec_cancel_here(struct emu_ring *r, unsigned fl, uint64_t ud, int fd)
{
	struct ureq *run = NULL;
	pthread_mutex_lock(&r->lock);
	int32_t res = r->dying ? -ENOENT : cancel_locked(r, NULL, fl, ud, fd, &run);
	pthread_mutex_unlock(&r->lock);
	exec_issue_list(run, CTX_WORKER);
	return res;
}

/* A cancel by fd names an open fd, or a registered file with FD_FIXED: else -EBADF
 * (the kernel looks the file up before it searches). */
static int cancel_fd_ok(struct emu_ring *r, unsigned fl, int fd)
{
	struct fent fe;
	if (!(fl & IORING_ASYNC_CANCEL_FD))
		return 0;
	if (fl & IORING_ASYNC_CANCEL_FD_FIXED)
		return exec_file(r, fd, 1, &fe);
	return fcntl(fd, F_GETFD) < 0 ? -EBADF : 0;
}

int32_t op_cancel(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx;
	struct io_uring_sqe *s = &q->sqe;
	unsigned fl = s->cancel_flags;
	int e;
	if (fl & ~(IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY |
		   IORING_ASYNC_CANCEL_FD_FIXED))
		return -EINVAL;
	if ((fl & IORING_ASYNC_CANCEL_FD) && (fl & IORING_ASYNC_CANCEL_ANY))
		return -EINVAL;
	/* FD_FIXED without FD means nothing; IOSQE_FIXED_FILE with FD means FD_FIXED */
	if ((fl & IORING_ASYNC_CANCEL_FD) && (s->flags & IOSQE_FIXED_FILE))
		fl |= IORING_ASYNC_CANCEL_FD_FIXED;
	if ((e = cancel_fd_ok(q->r, fl, s->fd)) < 0)
		return e;
	pthread_mutex_lock(&q->r->lock);
	int32_t res = cancel_locked(q->r, q, fl, s->addr, s->fd, run);
	pthread_mutex_unlock(&q->r->lock);
	return cancel_elsewhere(q->r, fl, s->addr, s->fd, res);
}

int exec_sync_cancel(struct emu_ring *r, const struct io_uring_sync_cancel_reg *reg)
{
	for (int i = 0; i < 4; i++)
		if (reg->pad[i])
			return -EINVAL;
	unsigned fl = reg->flags;
	if (fl & ~(IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY |
		   IORING_ASYNC_CANCEL_FD_FIXED))
		return -EINVAL;
	int e = cancel_fd_ok(r, fl, reg->fd);
	if (e < 0)
		return e;
	struct ureq *run = NULL;
	pthread_mutex_lock(&r->lock);
	int32_t res = cancel_locked(r, NULL, fl, reg->addr, reg->fd, &run);
	pthread_mutex_unlock(&r->lock);
	exec_issue_list(run, CTX_INLINE);
	/* the kernel's answer: an ALL or ANY's count, as ASYNC_CANCEL's */
	return cancel_elsewhere(r, fl, reg->addr, reg->fd, res);
}

/* Post -ECANCELED for x, its armed-or-not LINK_TIMEOUT and what is linked
 * after it, leaving the requests where they are (a thread of this process
 * still runs x; r->dying, set next, keeps its CQE out). */
static void leave_post_running_locked(struct emu_ring *r, struct ureq *x)
{
	emu_post(r, x->sqe.user_data, -ECANCELED, 0, 1);
	if (x->lt && x->lt->state == RS_LT_IDLE)
		emu_post(r, x->lt->sqe.user_data, -ECANCELED, 0, 1);
	for (struct ureq *m = x->link; m; m = m->link) {
		emu_post(r, m->sqe.user_data, -ECANCELED, 0, 1);
		if (m->lt)
			emu_post(r, m->lt->sqe.user_data, -ECANCELED, 0, 1);
	}
}

/*
 * This process leaves a shared ring (it exits, closes the ring or execs): as
 * the kernel cancels a task's requests when it exits, each of its requests
 * gets -ECANCELED (chains and LINK_TIMEOUTs as a cancel would have them),
 * except, with handover (exit, close), a TIMEOUT that is not part of a chain,
 * which is handed over to a process that stays and fires there (or, if none
 * can take it, is cancelled too); an exec cancels those too, as the kernel's
 * (io_uring_task_cancel). Ring lock held; the ring is dying after it: nothing
 * of this process posts again.
 */
void exec_leave_locked(struct emu_ring *r, int handover)
{
	struct ureq *run = NULL;
	for (int again = handover; again;) {
		again = 0;
		for (struct ureq *x = r->live; x; x = x->next) {
			if (x->state != RS_TIMEOUT || x->sqe.opcode != IORING_OP_TIMEOUT || x->link)
				continue;
			uint64_t left = x->target ? (x->target > r->ncompleted ? x->target - r->ncompleted : 1) : 0;
			if (xproc_handover_timeout(r, x, left) == 0) {
				r->inflight--;           /* it goes on elsewhere: no CQE here */
				exec_put_locked(r, x);
				again = 1;
				break;
			}
		}
	}
	for (struct ureq *x = r->live; x; x = x->next)
		if ((x->state == RS_RUN || x->state == RS_AIO) && !x->canceled) {
			x->canceled = 1;
			leave_post_running_locked(r, x);
		}
	for (int again = 1; again;) {
		again = 0;
		for (struct ureq *x = r->live; x; x = x->next) {
			if (x->state != RS_WQ && x->state != RS_DEFER && x->state != RS_POLL &&
			    x->state != RS_TIMEOUT)
				continue;
			x->canceled = 1;
			if (exec_cancel_locked(r, x, -ECANCELED, &run) == 0) {
				again = 1;
				break;
			}
		}
	}
	/* released by the cancels (a drain queue emptied): never started, cancelled */
	while (run) {
		struct ureq *q = run;
		run = q->qnext;
		q->qnext = NULL;
		if (q->state == RS_RUN && !q->canceled) {
			q->canceled = 1;
			leave_post_running_locked(r, q);
		}
	}
	/* what overflowed here goes into the CQ while it has room; the rest is lost
	 * with this process (counted in cq.overflow) */
	emu_flush_overflow_locked(r);
	if (r->novf) {
		xproc_ovf_count(r, -(int)r->novf);
		__atomic_fetch_add(r->cq_overflow, r->novf, __ATOMIC_RELAXED);
	}
	r->dying = 1;
}
