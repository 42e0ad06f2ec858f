/* SPDX-License-Identifier: MIT */
/*
 * kaio.c - O_DIRECT reads and writes of the emulated ring through the
 * kernel's native AIO, so that a queue depth of 64 is 64 I/Os at the device
 * (a worker per I/O would be a thread per I/O). Buffered I/O does not come
 * here: for it io_submit runs the read synchronously inside the call; a cached
 * read is one inline preadv2(RWF_NOWAIT) instead (rw.c). One AIO context per ring,
 * made on first use; iocbs of one submission batch go in one io_submit;
 * completions are reaped from the AIO ring mapped in user space by the next
 * io_uring_enter(GETEVENTS). The kernel signals each completion on the ring
 * fd itself (IOCB_FLAG_RESFD), so a waiter in io_uring_enter or in poll(ring_fd)
 * wakes without a hop through a thread; while AIO is in flight the SQ flags
 * carry IORING_SQ_TASKRUN, so liburing's peek helpers enter to reap.
 *
 * The fast path's cached reads (submit.c) come here in batches too, where a
 * system call costs more than an iocb's own work (kaio_batch_pays): one
 * io_submit of RWF_NOWAIT reads on a second context, which Linux completes
 * inside the call (a cached read) or answers -EAGAIN (not cached: the request
 * path then gives it to a worker), reaped from its ring in user space.
 *
 * Must never: have more iocbs in flight than the context holds (the request
 * then goes to a worker), complete a request twice, leave I/O in flight
 * when the ring is torn down (io_destroy waits for it), or return from a
 * batch of cached reads before each one the kernel took has its result.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "uring_int.h"
#include "../common/kaio.h"

static int kaio_init_locked(struct emu_ring *r)
{
	unsigned nr = 2 * r->cq_entries;
	if (nr > 1024)
		nr = 1024;
	if (nr < 64)
		nr = 64;
	r->aio_ctx = 0;
	if (kaio_io_setup(nr, &r->aio_ctx) < 0)
		return -errno;
	r->aio_max = nr;
	return 0;
}

/* Hand the collected iocbs to the kernel (ring lock held). */
static void flush_locked(struct emu_ring *r, struct ureq **run)
{
	int e, done = kaio_submit_all(r->aio_ctx, r->aio_npend, r->aio_pend, &e);
	for (int i = done; i < r->aio_npend; i++) {      /* refused: complete with the error */
		struct ureq *q = (struct ureq *)(uintptr_t)r->aio_pend[i]->aio_data;
		if (!--r->aio_inflight)
			__atomic_fetch_and(r->sq_flags, ~IORING_SQ_TASKRUN, __ATOMIC_SEQ_CST);
		q->state = RS_RUN;
		exec_complete_locked(q, e, run);
	}
	r->aio_npend = 0;
}

/* Queue q's read or write; Q_QUEUED, or -EAGAIN: take another path. */
int kaio_submit(struct ureq *q, int wr, int ctx)
{
	struct emu_ring *r = q->r;
	struct ureq *run = NULL;
	pthread_mutex_lock(&r->lock);
	if (r->aio_state == 0)
		r->aio_state = kaio_init_locked(r) == 0 ? 1 : -1;
	if (r->aio_state < 0 || r->aio_inflight >= r->aio_max) {
		pthread_mutex_unlock(&r->lock);
		return -EAGAIN;
	}
	struct iocb *cb = &q->cb;
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = (uint64_t)(uintptr_t)q;
	cb->aio_fildes = (uint32_t)q->fd;
	cb->aio_rw_flags = (int)q->sqe.rw_flags;
	cb->aio_offset = (int64_t)q->sqe.off;
	/* The ring fd: poll(ring_fd) wakes, a waiter wakes. */
	cb->aio_flags = IOCB_FLAG_RESFD;
	cb->aio_resfd = (uint32_t)r->ifd;
	if (q->niov == 1 && q->iov) {
		cb->aio_lio_opcode = wr ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		cb->aio_buf = (uint64_t)(uintptr_t)q->iov[0].iov_base;
		cb->aio_nbytes = q->iov[0].iov_len;
	} else {
		/* no copy: the program's READV/WRITEV array, which io_submit reads
		 * before this submission returns (inline only: op_rw) */
		cb->aio_lio_opcode = wr ? IOCB_CMD_PWRITEV : IOCB_CMD_PREADV;
		cb->aio_buf = q->iov ? (uint64_t)(uintptr_t)q->iov : q->sqe.addr;
		cb->aio_nbytes = q->iov ? (uint64_t)q->niov : q->sqe.len;
	}
	q->state = RS_AIO;
	if (!r->aio_inflight++)
		__atomic_fetch_or(r->sq_flags, IORING_SQ_TASKRUN, __ATOMIC_SEQ_CST);
	r->aio_pend[r->aio_npend++] = cb;
	/* Batch within one submission; anything else goes to the kernel now. */
	if (ctx != CTX_INLINE || r->aio_npend == (int)(sizeof(r->aio_pend) / sizeof(r->aio_pend[0])))
		flush_locked(r, &run);
	pthread_mutex_unlock(&r->lock);
	exec_issue_list(run, ctx);
	return Q_QUEUED;
}

void kaio_flush(struct emu_ring *r)
{
	if (!r->aio_npend)
		return;
	struct ureq *run = NULL;
	pthread_mutex_lock(&r->lock);
	flush_locked(r, &run);
	pthread_mutex_unlock(&r->lock);
	exec_issue_list(run, CTX_INLINE);
}

/* Complete what the AIO ring holds (ring lock held); returns how many. */
int kaio_reap_locked(struct emu_ring *r, struct ureq **run)
{
	if (r->aio_state != 1 || !r->aio_inflight)
		return 0;
	struct io_event ev[64];
	int total = 0, got;
	do {
		got = kaio_ring_pop(r->aio_ctx, ev, 64);
		if (got < 0) {
			struct timespec zero = { 0, 0 };
			long n = kaio_io_getevents(r->aio_ctx, 0, 64, ev, &zero);
			got = n > 0 ? (int)n : 0;
		}
		for (int i = 0; i < got; i++) {
			struct ureq *q = (struct ureq *)(uintptr_t)ev[i].data;
			if (!--r->aio_inflight)
				__atomic_fetch_and(r->sq_flags, ~IORING_SQ_TASKRUN, __ATOMIC_SEQ_CST);
			q->state = RS_RUN;
			int64_t res = ev[i].res;
			exec_complete_locked(q, res < INT32_MIN ? -EIO : (int32_t)res, run);
		}
		total += got;
	} while (got == 64);
	return total;
}

void kaio_fini(struct emu_ring *r)
{
	if (r->fb_state == 1)
		kaio_io_destroy(r->fb_ctx);   /* nothing in flight: batches wait for theirs */
	r->fb_state = -1;
	if (r->aio_state != 1)
		return;
	kaio_io_destroy(r->aio_ctx);          /* waits for what is in flight */
	r->aio_state = -1;
}

/* ---- batches of cached reads (the fast path) ---- */

/* A null system call at or above this many ns: a batch of two cached reads in
 * one io_submit costs less than two preadv2. On a 2-CPU Firecracker guest
 * whose null system call takes 1.1-1.3 us, an iocb's own work came to about
 * 0.2 us beside a preadv2 of 2.3 us (4 KiB reads of a cached file in batches of
 * 2, 8 and 64: 1.3x, 2.1x and 2.8x as fast as a preadv2 each); a batch of k
 * pays when a call costs more than k / (k - 1) iocbs. */
#define BATCH_SYSCALL_NS 450

/*
 * Whether batches pay here: URING_EMU_BATCH=1 or 0 says, else the cost of a
 * null system call, measured once per process (the least of 5 rounds of 16
 * getppid, about 0.1 ms where a call costs 1.2 us), decides: measured, not
 * guessed from the machine's name.
 */
int kaio_batch_pays(void)
{
	static int pays = -1;
	int p = __atomic_load_n(&pays, __ATOMIC_RELAXED);
	if (p >= 0)
		return p;
	const char *e = getenv("URING_EMU_BATCH");
	if (e && (e[0] == '0' || e[0] == '1') && !e[1]) {
		p = e[0] == '1';
	} else {
		uint64_t best = UINT64_MAX;
		for (int round = 0; round < 5; round++) {
			uint64_t t0 = now_ns();
			for (int i = 0; i < 16; i++)
				syscall(SYS_getppid);
			uint64_t t = now_ns() - t0;
			if (t < best)
				best = t;
		}
		p = best / 16 >= BATCH_SYSCALL_NS;
	}
	__atomic_store_n(&pays, p, __ATOMIC_RELAXED);
	return p;
}

/*
 * Run the k reads or writes cbp[0..k) (aio_data: their index) in one io_submit
 * on the context *ctx (*state 0: made now, 1: made, -1: AIO cannot be had
 * here); its user keeps it to itself (the fast path's: the submitter's, under
 * the ring's sq_lock; a worker's: that thread's). res[i] is each one's result.
 * Returns how many the kernel took, the first ones (the rest did not run), 0
 * when it took none or AIO cannot be had. An I/O the kernel queued instead of
 * completing (no Linux file system does for a buffered RWF_NOWAIT read; an
 * O_DIRECT write does) is waited for.
 */
int kaio_batch(aio_context_t *ctx, int *state, struct iocb **cbp, int k, int32_t *res)
{
	if (*state == 0) {
		*ctx = 0;
		*state = kaio_io_setup(64, ctx) == 0 ? 1 : -1;
	}
	if (*state < 0)
		return 0;
	int e, took = kaio_submit_all(*ctx, k, cbp, &e);
	struct io_event ev[64];
	for (int got = 0; got < took;) {
		int n = kaio_ring_pop(*ctx, ev, took - got);
		if (n <= 0) {
			long w = kaio_io_getevents(*ctx, 1, took - got, ev, NULL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				/* cannot happen: the context is ours and holds them; their
				 * buffers must not be touched again, so it is fatal */
				abort();
			}
			n = (int)w;
		}
		for (int i = 0; i < n; i++) {
			int64_t v = ev[i].res;
			res[ev[i].data] = v < INT32_MIN ? -EIO : (int32_t)v;
		}
		got += n;
	}
	return took;
}

/* A worker's context for its batches of hashed writes (rw_hashed_run). */
static __thread aio_context_t wk_ctx;
static __thread int wk_state;

int kaio_worker_batch(struct iocb **cbp, int k, int32_t *res)
{
	if (wk_state == 0) {
		/* room for one batch: contexts count against the system's aio-max-nr */
		wk_ctx = 0;
		wk_state = kaio_io_setup(WQ_BATCH, &wk_ctx) == 0 ? 1 : -1;
	}
	return kaio_batch(&wk_ctx, &wk_state, cbp, k, res);
}

/* A worker leaves: its context goes (nothing is in flight on it between batches). */
void kaio_thread_fini(void)
{
	if (wk_state > 0)
		kaio_io_destroy(wk_ctx);
	wk_state = 0;
}
