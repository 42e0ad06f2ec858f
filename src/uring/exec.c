/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the emulated ring's core, as the kernel's io_uring/io_uring.c: the
 * requests (their allocation, the live list and the user_data hash), where
 * each prepared request runs (op_exec: the row of opdef.c says inline, on a
 * worker (wq.c) or by its own issue function: the reactor (reactor.c) when it
 * waits for readiness or time, kernel AIO (kaio.c) for O_DIRECT files), and
 * completion: the CQE, then the next request of the link chain, or the rest
 * of the chain cancelled with -ECANCELED when the request failed; the drain
 * queue released when nothing runs. Submission is submit.c; each family of
 * operations has its own file, named as the kernel names it (DROPIN.md).
 *
 * Must never: post two CQEs for one request or none, run a request whose
 * preparation failed, or run an opcode that the probe does not report (the
 * table in opdef.c is the single source of both).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "opdef.h"

/* Set while the submitting thread runs requests inline (REGISTER_EVENTFD_ASYNC).
 * initial-exec: read per request, it must not cost a __tls_get_addr call. */
__thread int exec_in_submit __attribute__((tls_model("initial-exec")));

struct ureq *exec_req_get_locked(struct emu_ring *r)
{
	struct ureq *q = r->freelist;
	if (q) {
		r->freelist = q->qnext;
	} else {
		if (reactor_reserve_locked(r) < 0 || !(q = malloc(sizeof(*q))))
			return NULL;
	}
	memset(q, 0, offsetof(struct ureq, iov_in));
	q->r = r;
	q->fd = -1;
	q->qnext = NULL;
	q->p1 = q->p2 = NULL;
	q->umsg = NULL;
	q->next = r->live;
	q->prev = NULL;
	if (r->live)
		r->live->prev = q;
	r->live = q;
	return q;
}

void exec_ud_hash_add(struct ureq *q)
{
	struct ureq **h = exec_ud_chain(q->r, q->sqe.user_data);
	q->hprev = NULL;
	q->hnext = *h;
	if (*h)
		(*h)->hprev = q;
	*h = q;
	q->hashed = 1;
}

static void ud_hash_del(struct ureq *q)
{
	if (!q->hashed)
		return;
	if (q->hprev)
		q->hprev->hnext = q->hnext;
	else
		*exec_ud_chain(q->r, q->sqe.user_data) = q->hnext;
	if (q->hnext)
		q->hnext->hprev = q->hprev;
	q->hnext = q->hprev = NULL;
	q->hashed = 0;
}

/* q's user_data becomes ud (a poll update). Ring lock held. */
void exec_ud_rehash(struct ureq *q, uint64_t ud)
{
	ud_hash_del(q);
	q->sqe.user_data = ud;
	exec_ud_hash_add(q);
}

void exec_live_del(struct ureq *q)
{
	struct emu_ring *r = q->r;
	ud_hash_del(q);
	if (q->prev)
		q->prev->next = q->next;
	else if (r->live == q)
		r->live = q->next;
	if (q->next)
		q->next->prev = q->prev;
	q->next = q->prev = NULL;
}

/* Free what a request copied at submission: its iovec array and path or
 * address arguments. */
void exec_args_free(struct ureq *q)
{
	if (q->iov && q->iov != q->iov_in)
		free(q->iov);
	if (q->p1 || q->p2) {
		free(q->p1);
		free(q->p2);
	}
	q->iov = NULL;
	q->p1 = q->p2 = NULL;
}

void exec_put_locked(struct emu_ring *r, struct ureq *q)
{
	reactor_forget_locked(q);
	exec_live_del(q);
	exec_args_free(q);
	q->state = RS_FREE;
	q->qnext = r->freelist;
	r->freelist = q;
}

int32_t op_nop(struct ureq *q, int ctx, struct ureq **run)
{
	(void)q, (void)ctx, (void)run;
	return 0;
}

int exec_punt(struct ureq *q)
{
	if (wq_queue(q) == 0)
		return Q_QUEUED;
	/* no worker thread at all: cancelled, as the kernel's; a transfer that
	 * had begun reports what it did */
	return q->done ? (int32_t)q->done : -ECANCELED;
}

int exec_wait_ready(struct ureq *q, short events)
{
	struct emu_ring *r = q->r;
	pthread_mutex_lock(&r->lock);
	if (q->cancel_run) {
		q->cancel_run = 0;
		pthread_mutex_unlock(&r->lock);
		return -ECANCELED;
	}
	/* a request that waits holds no buffer of a buffer ring, as the kernel's:
	 * it takes one when it runs again (one a transfer has begun in stays; a
	 * classic group's stays too, as in the kernel) */
	if (q->has_buf && q->buf_ring != BUF_LIST && !q->done) {
		exec_buf_recycle_locked(q);
		q->cflags = 0;
		if (q->iov == q->iov_in)
			q->iov = NULL;
	}
	int e = reactor_arm_locked(q, events);
	pthread_mutex_unlock(&r->lock);
	return e < 0 ? e : Q_QUEUED;
}

struct ureq *exec_find_locked(struct emu_ring *r, struct ureq *self, uint64_t ud, unsigned op, int state)
{
	for (struct ureq *x = *exec_ud_chain(r, ud); x; x = x->hnext)
		if (x != self && x->sqe.user_data == ud && x->sqe.opcode == op && x->state == state)
			return x;
	return NULL;
}

static int32_t op_exec(struct ureq *q, int ctx, struct ureq **run)
{
	const struct op_def *d = &op_defs[q->sqe.opcode];
	/* the reactor too (a link after a poll, a drain released): it must not block */
	if (ctx != CTX_WORKER && d->where == W_WORKER)
		return exec_punt(q);
	if (ctx == CTX_INLINE && (q->sqe.flags & IOSQE_ASYNC) && d->where == W_INLINE && !d->async_own)
		return exec_punt(q);
	return d->issue(q, ctx, run);
}

static int short_transfer(struct ureq *q, int32_t res)
{
	unsigned op = q->sqe.opcode;
	if (res < 0)
		return 0;
	if (op_defs[op].rw) {
		uint64_t want = 0;
		if (op == IORING_OP_READV || op == IORING_OP_WRITEV) {
			if (q->iov && !q->done) {
				for (int i = 0; i < q->niov; i++)
					want += q->iov[i].iov_len;
			} else if (q->has_buf) {
				want = q->blen;
			} else {
				unsigned n = q->sqe.len;
				struct iovec v;
				for (unsigned i = 0; i < n && i < UIO_MAXIOV; i++) {
					if (ucopy(&v, (struct iovec *)(uintptr_t)q->sqe.addr + i, sizeof(v)) < 0)
						return 1;
					want += v.iov_len;
				}
			}
		} else {
			want = q->has_buf ? q->blen : q->sqe.len;
		}
		return (uint64_t)res < want;
	}
	if ((op == IORING_OP_SEND || op == IORING_OP_RECV || op == IORING_OP_SEND_ZC) &&
	    (q->sqe.msg_flags & MSG_WAITALL))
		return (uint32_t)res < q->sqe.len;
	return 0;
}

static void push_run(struct ureq **run, struct ureq *q)
{
	q->qnext = *run;
	*run = q;
}

/* q's final CQE. A SEND_ZC's (past its notification's allocation) has F_MORE
 * and its notification follows at once: the data was copied, the buffer is
 * free; with IORING_SEND_ZC_REPORT_USAGE the notification says so. */
static void post_cqe(struct emu_ring *r, struct ureq *q, int32_t res, uint32_t cflags, int async)
{
	if (!q->zc_notif) {
		emu_post(r, q->sqe.user_data, res, cflags, async);
		return;
	}
	emu_post(r, q->sqe.user_data, res, cflags | IORING_CQE_F_MORE, async);
	uint32_t usage = (q->sqe.ioprio & IORING_SEND_ZC_REPORT_USAGE) ? IORING_NOTIF_USAGE_ZC_COPIED : 0;
	emu_post(r, q->sqe.user_data, (int32_t)usage, IORING_CQE_F_NOTIF, async);
	r->ncompleted++;
}

/* Complete one request that never ran: -ECANCELED (or its own prep error). */
void exec_cancel_one_locked(struct emu_ring *r, struct ureq *m, int32_t res, int quiet)
{
	if (m->lt) {
		struct ureq *lt = m->lt;
		m->lt = NULL;
		if (!quiet && !(lt->sqe.flags & IOSQE_CQE_SKIP_SUCCESS))
			emu_post(r, lt->sqe.user_data, -ECANCELED, 0, 1);
		r->inflight--;
		exec_put_locked(r, lt);
	}
	if (!quiet)
		post_cqe(r, m, res, 0, 1);
	r->ncompleted++;
	r->inflight--;
	exec_put_locked(r, m);
}

void exec_release_deferred_locked(struct emu_ring *r, struct ureq **run)
{
	while (r->defer_head && r->inflight == 0) {
		int first = 1;
		while (r->defer_head) {
			struct ureq *h = r->defer_head;
			if ((h->sqe.flags & IOSQE_IO_DRAIN) && !first)
				break;
			rq_pop(&r->defer_head, &r->defer_tail);
			r->inflight += h->chain_n;
			h->state = RS_RUN;
			push_run(run, h);
			if (h->sqe.flags & IOSQE_IO_DRAIN)
				break;
			first = 0;
		}
		break;
	}
}

/* One request fewer in flight: a drain waiting for zero may go. */
void exec_inflight_dec_locked(struct emu_ring *r, struct ureq **run)
{
	r->inflight--;
	if (r->inflight == 0 && r->defer_head)
		exec_release_deferred_locked(r, run);
}

void exec_complete_locked(struct ureq *q, int32_t res, struct ureq **run)
{
	struct emu_ring *r = q->r;
	if (q->lt) {
		struct ureq *lt = q->lt;
		q->lt = NULL;
		lt->lt_target = NULL;
		/* disarmed because its request finished: a "success" it may skip */
		if (!(lt->sqe.flags & IOSQE_CQE_SKIP_SUCCESS))
			emu_post(r, lt->sqe.user_data, -ECANCELED, 0, 1);
		r->inflight--;
		exec_put_locked(r, lt);
	}
	/* Short counts as failed only for what follows in a chain or a skipped
	 * success CQE: not looked at otherwise (it may read the iovec array). */
	int failed = res < 0 || ((q->link || (q->sqe.flags & IOSQE_CQE_SKIP_SUCCESS)) && short_transfer(q, res));
	if (res == -ETIME && q->sqe.opcode == IORING_OP_TIMEOUT && (q->sqe.timeout_flags & IORING_TIMEOUT_ETIME_SUCCESS))
		failed = 0;
	uint32_t cflags = q->cflags;
	if (q->has_buf && res == -ECANCELED) {
		exec_buf_recycle_locked(q);
		cflags = 0;
	} else if (!q->has_buf) {
		cflags &= ~(IORING_CQE_F_BUFFER | 0xffff0000u);
	}
	if (!(q->sqe.flags & IOSQE_CQE_SKIP_SUCCESS) || failed)
		post_cqe(r, q, res, cflags, !exec_in_submit);
	if (q->sqe.opcode != IORING_OP_TIMEOUT) {
		r->ncompleted++;
		if (r->counted)
			timeouts_count_locked(r, run);
	}
	struct ureq *next = q->link;
	q->link = NULL;
	if (next) {
		if (failed && !(q->sqe.flags & IOSQE_IO_HARDLINK)) {
			/* A failed request that asked to skip its success CQE also
			 * silences the cancellations of the rest of its chain (as the kernel). */
			int quiet = !!(q->sqe.flags & IOSQE_CQE_SKIP_SUCCESS);
			while (next) {
				struct ureq *n2 = next->link;
				exec_cancel_one_locked(r, next, next->prep_err ? next->prep_err : -ECANCELED, quiet);
				next = n2;
			}
		} else {
			next->state = RS_RUN;
			push_run(run, next);
		}
	}
	r->inflight--;
	exec_put_locked(r, q);
	if (r->inflight == 0 && r->defer_head)
		exec_release_deferred_locked(r, run);
}

void exec_complete(struct ureq *q, int32_t res)
{
	struct ureq *run = NULL;
	pthread_mutex_lock(&q->r->lock);
	exec_complete_locked(q, res, &run);
	pthread_mutex_unlock(&q->r->lock);
	exec_issue_list(run, CTX_WORKER);
}

/* A chain whose member failed preparation: nothing runs, each gets its error or -ECANCELED. */
static void fail_chain_locked(struct emu_ring *r, struct ureq *h)
{
	while (h) {
		struct ureq *n = h->link;
		exec_cancel_one_locked(r, h, h->prep_err ? h->prep_err : -ECANCELED, 0);
		h = n;
	}
}

/* Arm q's LINK_TIMEOUT once q waits somewhere (as the kernel: after the first
 * issue), so a short timeout cannot fire while q is still being issued. q may
 * have completed meanwhile (its completion disposed of lt): check under the lock. */
static void arm_lt(struct ureq *q, struct ureq *lt)
{
	struct emu_ring *r = q->r;
	uint64_t dl;
	if (kts_to_deadline(&lt->ts, lt->sqe.timeout_flags, &dl) < 0)
		dl = now_ns();
	pthread_mutex_lock(&r->lock);
	if (lt->state == RS_LT_IDLE && lt->lt_target == q && q->lt == lt) {
		lt->deadline = dl;
		lt->state = RS_TIMEOUT;
		timer_add_locked(lt);
		reactor_start_locked(r);
		reactor_kick(r);
	}
	pthread_mutex_unlock(&r->lock);
}

/* Run one request that is ready (state RS_RUN). Returns its result when it
 * finished here and is still to be completed (by the caller, batched), else
 * Q_QUEUED; *run gets what became ready meanwhile. */
static int32_t run_one(struct ureq *q, int ctx, struct ureq **run)
{
	struct emu_ring *r = q->r;
	if (r->dying) {
		pthread_mutex_lock(&r->lock);
		exec_put_locked(r, q);
		pthread_mutex_unlock(&r->lock);
		return Q_QUEUED;
	}
	if (q->chain_fail) {
		pthread_mutex_lock(&r->lock);
		fail_chain_locked(r, q);
		if (r->inflight == 0 && r->defer_head)
			exec_release_deferred_locked(r, run);
		pthread_mutex_unlock(&r->lock);
		return Q_QUEUED;
	}
	if (q->prep_err)
		return q->prep_err;
	struct ureq *lt = q->lt && q->lt->state == RS_LT_IDLE ? q->lt : NULL;
	__atomic_store_n(&q->started, 1, __ATOMIC_RELAXED);    /* a cancel may find it now */
	int32_t res = op_exec(q, ctx, run);
	if (res == Q_QUEUED && lt)
		arm_lt(q, lt);
	return res;
}

void exec_run(struct ureq *q, int ctx)
{
	q->qnext = NULL;
	exec_issue_list(q, ctx);
}

/* Put the requests of more in front of *list. */
static void list_prepend(struct ureq **list, struct ureq *more)
{
	while (more) {
		struct ureq *m = more;
		more = m->qnext;
		m->qnext = *list;
		*list = m;
	}
}

#define DONE_BATCH 16

/*
 * Run a list of ready requests. Those that finish here are completed in
 * batches, one ring lock for up to DONE_BATCH CQEs (as the kernel flushes a
 * submission's completions together); what a completion makes ready (the
 * next of a link chain, a drained request) runs after the batch, or, held
 * non-NULL, goes to *held for the caller to run (a worker with a bucket of
 * hashed work runs it only after it let the bucket go: wq.c).
 */
static void issue_list(struct ureq *list, int ctx, struct ureq **held)
{
	struct emu_ring *r = list ? list->r : NULL;
	struct ureq *done[DONE_BATCH];
	int32_t res[DONE_BATCH];
	int nd = 0;
	while (list || nd) {
		if (nd == DONE_BATCH || (!list && nd)) {
			struct ureq *run = NULL;
			pthread_mutex_lock(&r->lock);
			for (int i = 0; i < nd; i++)
				exec_complete_locked(done[i], res[i], &run);
			pthread_mutex_unlock(&r->lock);
			nd = 0;
			list_prepend(held ? held : &list, run);
			continue;
		}
		struct ureq *q = list, *more = NULL;
		list = q->qnext;
		q->qnext = NULL;
		int32_t e = run_one(q, ctx, &more);
		if (e != Q_QUEUED) {
			done[nd] = q;
			res[nd++] = e;
		}
		list_prepend(held ? held : &list, more);
	}
	/* Inline O_DIRECT I/O is batched into one io_submit (kaio_submit): a batch issued
	 * outside a submission (a sync cancel, a waiter reaping AIO, a flush) goes now,
	 * or it would wait for the next submission */
	if (r && ctx == CTX_INLINE)
		kaio_flush(r);
}

void exec_issue_list(struct ureq *list, int ctx)
{
	issue_list(list, ctx, NULL);
}

/* A worker runs q; what its completion makes ready goes to *held (issue_list). */
void exec_run_held(struct ureq *q, struct ureq **held)
{
	q->qnext = NULL;
	issue_list(q, CTX_WORKER, held);
}

/*
 * fork()'s child (its only thread, the locks taken before the fork): the
 * requests in flight are the parent's, which runs and completes them; the
 * threads, the reactor's epoll sets and the AIO context are not the child's.
 * The child's copies of the requests go to its free list (their copied
 * arguments freed), the rest is forgotten; the child starts its own executor
 * when it first submits.
 */
void exec_child_reset(struct emu_ring *r)
{
	atomic_store(&r->refs, 1);
	while (r->live) {
		struct ureq *q = r->live;
		r->live = q->next;
		exec_args_free(q);
		if (q->mshot && q->ms_dup)
			close(q->ms_fd);             /* the child's copy of the dup */
		q->state = RS_FREE;
		q->qnext = r->freelist;
		r->freelist = q;
	}
	while (r->ovf_head) {
		struct ovf *o = r->ovf_head;
		r->ovf_head = o->next;
		free(o);
	}
	memset(r->udh, 0, sizeof(*r->udh) << r->udh_bits);
	r->inflight = 0;
	r->defer_head = r->defer_tail = NULL;
	r->drain_active = r->drain_next = 0;
	r->ovf_head = r->ovf_tail = NULL;         /* the parent's to flush */
	r->novf = 0;
	r->wq_head = r->wq_tail = NULL;
	r->wq_threads = r->wq_idle = 0;
	r->wq_hash_busy = 0;
	r->aio_state = 0;                         /* io_setup() contexts are not inherited */
	r->aio_ctx = 0;
	r->aio_inflight = 0;
	r->aio_npend = 0;
	r->fb_state = 0;
	r->fb_ctx = 0;
	r->sqp_on = r->sqp_sleeping = 0;          /* the SQ poller stays the parent's */
	reactor_child_reset(r);
}
