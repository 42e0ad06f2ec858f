/* SPDX-License-Identifier: MIT */
/*
 * wq.c - the emulated ring's worker threads (io-wq's model): requests that
 * may block (a read the page cache cannot serve now, fsync, openat, ...) are
 * queued here; a bounded number of threads (wq_max, IORING_REGISTER_IOWQ_
 * MAX_WORKERS) take them in order. Threads are started on demand, reused, and
 * exit after WQ_IDLE_SEC without work, so an idle ring has no thread awake.
 *
 * Hashed work, as io-wq's: the writes of one regular file (opdef's hash_reg,
 * the file's inode bucket fent.whash) run on one worker at a time, in the
 * order they were queued; that worker takes up to WQ_BATCH of them at once and
 * runs them together (rw_hashed_run: one io_submit where batches pay), so a
 * program's queue of writes to one file costs one thread and few system calls,
 * not a crowd of threads contending for the file's lock. Other work runs
 * beside it on other workers.
 *
 * Must never: start more than wq_max threads, run a request that was
 * cancelled while queued (cancellation unlinks it under the ring lock), run
 * one in the caller's thread (it may block there; with no worker at all it is
 * cancelled), or touch the ring after dropping its reference.
 */
#include <errno.h>
#include <time.h>
#include "opdef.h"

#define WQ_IDLE_SEC 5
#define WQ_START_TRIES 4

static int bucket_busy(const struct emu_ring *r, unsigned h)
{
	return h && (r->wq_hash_busy >> (h - 1)) & 1;
}

static void unlink_after(struct emu_ring *r, struct ureq *prev, struct ureq *q)
{
	if (prev)
		prev->qnext = q->qnext;
	else
		__atomic_store_n(&r->wq_head, q->qnext, __ATOMIC_RELAXED);
	if (r->wq_tail == q)
		r->wq_tail = prev;
	q->qnext = NULL;
}

/* What a worker runs next, unlinked and RS_RUN: the first queued request that is
 * not hashed or whose bucket no worker runs, with (hashed) the next ones of its
 * bucket in queue order, up to WQ_BATCH in v[]; the bucket is then busy. 0: none. */
static int take_locked(struct emu_ring *r, struct ureq **v)
{
	struct ureq *prev = NULL, *q = r->wq_head;
	while (q && bucket_busy(r, q->wq_hash)) {
		prev = q;
		q = q->qnext;
	}
	if (!q)
		return 0;
	unsigned h = q->wq_hash;
	int n = 0;
	for (;;) {
		struct ureq *next = q->qnext;
		unlink_after(r, prev, q);
		q->state = RS_RUN;
		v[n++] = q;
		if (!h || n == WQ_BATCH)
			break;
		for (q = next; q && q->wq_hash != h; q = q->qnext)
			prev = q;
		if (!q)
			break;
	}
	if (h)
		r->wq_hash_busy |= 1ull << (h - 1);
	return n;
}

static void *worker(void *arg);

/* Work is queued: wake an idle worker, or start one if the bound allows. 1 when
 * there is no worker at all and none could be started. */
static int kick_locked(struct emu_ring *r)
{
	if (r->wq_idle) {
		pthread_cond_signal(&r->wq_cond);
		return 0;
	}
	if (r->wq_threads >= emu_wq_max_locked(r))
		return 0;
	pthread_t t;
	int e, tries = 0;
	/* EAGAIN (a thread limit): tried again, WQ_START_TRIES in all; the
	 * kernel retries it too, in the background */
	while ((e = emu_thread_start(r, &t, 1, 1, -1, worker)) == EAGAIN && ++tries < WQ_START_TRIES)
		;
	if (e == 0)
		r->wq_threads++;
	return e != 0 && !r->wq_threads;
}

static void *worker(void *arg)
{
	emu_thread_running();
	struct emu_ring *r = arg;
	struct ureq *v[WQ_BATCH];
	pthread_mutex_lock(&r->lock);
	for (;;) {
		int n = 0;
		while (!r->dying && !(n = take_locked(r, v))) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += WQ_IDLE_SEC;
			r->wq_idle++;
			int e = pthread_cond_timedwait(&r->wq_cond, &r->lock, &ts);
			r->wq_idle--;
			if (e == ETIMEDOUT && !r->wq_head)
				goto out;
		}
		if (r->dying)
			break;
		unsigned h = v[0]->wq_hash;
		pthread_mutex_unlock(&r->lock);
		if (!h) {
			exec_run(v[0], CTX_WORKER);
			pthread_mutex_lock(&r->lock);
			continue;
		}
		struct ureq *held = NULL;
		rw_hashed_run(v, n, &held);
		pthread_mutex_lock(&r->lock);
		/* the bucket goes before what the writes' completions made ready runs here
		 * (a link's next may block: io-wq lets the hash go first too); what the
		 * bucket kept back goes to another worker when this one takes other work */
		r->wq_hash_busy &= ~(1ull << (h - 1));
		struct ureq *first = r->wq_head, *more = first;
		while (first && bucket_busy(r, first->wq_hash))
			first = first->qnext;
		while (more && more->wq_hash != h)
			more = more->qnext;
		if (!r->dying && more && (held || first != more))
			kick_locked(r);
		if (held) {
			pthread_mutex_unlock(&r->lock);
			exec_issue_list(held, CTX_WORKER);
			pthread_mutex_lock(&r->lock);
		}
	}
out:
	r->wq_threads--;
	pthread_mutex_unlock(&r->lock);
	kaio_thread_fini();        /* io_destroy waits (an RCU grace period): not under the lock */
	emu_put(r);
	return NULL;
}

/* Queue q for a worker; start one if none is idle and the bound allows.
 * -ECANCELED, q not queued, when no worker thread can be started and none
 * exists: the kernel's io-wq cancels the work it cannot give a first worker
 * (io_acct_cancel_pending_work), rather than block the submitter with it. */
int wq_queue(struct ureq *q)
{
	struct emu_ring *r = q->r;
	int none = 0;
	q->wq_hash = op_defs[q->sqe.opcode].hash_reg && q->fe.kind == FK_REG && !q->fe.direct ? q->fe.whash : 0;
	pthread_mutex_lock(&r->lock);
	q->state = RS_WQ;
	rq_push(&r->wq_head, &r->wq_tail, q);
	/* a busy bucket's worker takes it after the ones it runs */
	if (!bucket_busy(r, q->wq_hash))
		none = kick_locked(r);
	if (none) {
		rq_del(&r->wq_head, &r->wq_tail, q);
		q->state = RS_RUN;
	}
	pthread_mutex_unlock(&r->lock);
	return none ? -ECANCELED : 0;
}

/* Ring teardown: queued requests are dropped, idle workers leave. Busy ones
 * finish their request (its CQE is not posted) and leave holding the last refs. */
void wq_stop(struct emu_ring *r)
{
	pthread_mutex_lock(&r->lock);
	struct ureq *q;
	while ((q = rq_pop(&r->wq_head, &r->wq_tail)))
		exec_put_locked(r, q);
	pthread_cond_broadcast(&r->wq_cond);
	pthread_mutex_unlock(&r->lock);
}
