/*
 * kaio.c - O_DIRECT reads and writes of the emulated ring through the
 * kernel's native AIO, so that a queue depth of 64 is 64 I/Os at the device
 * (a worker per I/O would be a thread per I/O). One AIO context per ring,
 * made on first use; iocbs of one submission batch go in one io_submit;
 * completions are reaped from the AIO ring mapped in user space, by a waiter
 * in io_uring_enter or by the reactor (which sleeps on the AIO eventfd).
 *
 * Must never: have more iocbs in flight than the context holds (the request
 * then goes to a worker), complete a request twice, or leave I/O in flight
 * when the ring is torn down (io_destroy waits for it).
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
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
	r->aio_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->aio_efd < 0) {
		int e = -errno;
		kaio_io_destroy(r->aio_ctx);
		return e;
	}
	r->aio_max = nr;
	return 0;
}

/* Hand the collected iocbs to the kernel (ring lock held). */
static void flush_locked(struct emu_ring *r, struct ureq **run)
{
	int done = 0;
	while (done < r->aio_npend) {
		long n = kaio_io_submit(r->aio_ctx, r->aio_npend - done, r->aio_pend + done);
		if (n > 0) {
			done += (int)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		int e = n < 0 ? -errno : -EIO;
		for (int i = done; i < r->aio_npend; i++) {
			struct ureq *q = (struct ureq *)(uintptr_t)r->aio_pend[i]->aio_data;
			r->aio_inflight--;
			q->state = RS_RUN;
			exec_complete_locked(q, e, run);
		}
		break;
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
	cb->aio_flags = IOCB_FLAG_RESFD;
	cb->aio_resfd = (uint32_t)r->aio_efd;
	if (q->niov == 1 && q->iov) {
		cb->aio_lio_opcode = wr ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		cb->aio_buf = (uint64_t)(uintptr_t)q->iov[0].iov_base;
		cb->aio_nbytes = q->iov[0].iov_len;
	} else {
		cb->aio_lio_opcode = wr ? IOCB_CMD_PWRITEV : IOCB_CMD_PREADV;
		cb->aio_buf = (uint64_t)(uintptr_t)q->iov;
		cb->aio_nbytes = (uint64_t)q->niov;
	}
	q->state = RS_AIO;
	r->aio_inflight++;
	r->aio_pend[r->aio_npend++] = cb;
	atomic_fetch_add_explicit(&r->st_aio, 1, memory_order_relaxed);
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
	int got = kaio_ring_pop(r->aio_ctx, ev, 64);
	if (got < 0) {
		struct timespec zero = { 0, 0 };
		long n = kaio_io_getevents(r->aio_ctx, 0, 64, ev, &zero);
		got = n > 0 ? (int)n : 0;
	}
	for (int i = 0; i < got; i++) {
		struct ureq *q = (struct ureq *)(uintptr_t)ev[i].data;
		r->aio_inflight--;
		q->state = RS_RUN;
		int64_t res = ev[i].res;
		exec_complete_locked(q, res < INT32_MIN ? -EIO : (int32_t)res, run);
	}
	return got;
}

void kaio_fini(struct emu_ring *r)
{
	if (r->aio_state != 1)
		return;
	kaio_io_destroy(r->aio_ctx);          /* waits for what is in flight */
	close(r->aio_efd);
	r->aio_state = -1;
}
