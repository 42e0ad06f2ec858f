/* SPDX-License-Identifier: MIT */
/*
 * wq.c - the emulated ring's worker threads (io-wq's model): requests that
 * may block (a read the page cache cannot serve now, fsync, openat, ...) are
 * queued here; a bounded number of threads (wq_max, IORING_REGISTER_IOWQ_
 * MAX_WORKERS) take them in order. Threads are started on demand, reused, and
 * exit after WQ_IDLE_SEC without work, so an idle ring has no thread awake.
 *
 * Must never: start more than wq_max threads, run a request that was
 * cancelled while queued (cancellation unlinks it under the ring lock), run
 * one in the caller's thread (it may block there; with no worker at all it is
 * cancelled), or touch the ring after dropping its reference.
 */
#include <errno.h>
#include <time.h>
#include "uring_int.h"

#define WQ_IDLE_SEC 5
#define WQ_START_TRIES 4

static void *worker(void *arg)
{
	emu_thread_running();
	struct emu_ring *r = arg;
	pthread_mutex_lock(&r->lock);
	for (;;) {
		while (!r->wq_head && !r->dying) {
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
		struct ureq *q = rq_pop(&r->wq_head, &r->wq_tail);
		q->state = RS_RUN;
		pthread_mutex_unlock(&r->lock);
		exec_run(q, CTX_WORKER);
		pthread_mutex_lock(&r->lock);
	}
out:
	r->wq_threads--;
	pthread_mutex_unlock(&r->lock);
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
	pthread_mutex_lock(&r->lock);
	q->state = RS_WQ;
	rq_push(&r->wq_head, &r->wq_tail, q);
	if (r->wq_idle) {
		pthread_cond_signal(&r->wq_cond);
	} else if (r->wq_threads < emu_wq_max_locked(r)) {
		pthread_t t;
		int e, tries = 0;
		/* EAGAIN (a thread limit): tried again, WQ_START_TRIES in all; the
		 * kernel retries it too, in the background */
		while ((e = emu_thread_start(r, &t, 1, 1, -1, worker)) == EAGAIN && ++tries < WQ_START_TRIES)
			;
		if (e == 0)
			r->wq_threads++;
		else
			none = !r->wq_threads;
	}
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
