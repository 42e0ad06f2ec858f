/* SPDX-License-Identifier: MIT */
/*
 * aio.c - the server's O_DIRECT image path: with the image opened O_DIRECT,
 * aligned reads, and aligned in-place overwrites of allocated blocks inside a
 * file's size, are mapped to image extents by the backend and issued with the
 * kernel's native AIO (raw io_setup/io_submit, one io_submit per batch), so
 * many image I/Os are in flight at once; completions are reaped from the AIO
 * ring in user space (no syscall) or with io_getevents when waiting.
 *
 * Must never: post a CQE before every extent of its request is done, let the
 * CQ overflow (requests in flight count against its room), keep I/O in
 * flight across an operation that could change a file's mapping or needs
 * the writes done (the caller drains first), write anything but blocks the
 * file already owns inside its size (no metadata change), or be used for an
 * unaligned I/O or one at the file position (those take the synchronous
 * path).
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "server.h"
#include "../common/kaio.h"

#define ALIGN 4096u
#define MAX_EXT 16

int ur_aio_init(struct ur_server *s)
{
	int direct = 0;
	if (!s->be->map || !s->be->image_fd)
		return -EOPNOTSUPP;
	int fd = s->be->image_fd(s->bst, &direct);
	if (fd < 0 || !direct)
		return -EOPNOTSUPP;
	s->aio_ctx = 0;
	if (kaio_io_setup(UR_AIO_MAX, &s->aio_ctx) < 0)
		return -errno;
	s->aio_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->aio_efd < 0) {
		int e = -errno;
		kaio_io_destroy(s->aio_ctx);
		return e;
	}
	s->img_fd = fd;
	s->n_iocb_free = 0;
	for (uint32_t i = 0; i < UR_AIO_MAX; i++) {
		s->iocb_free[s->n_iocb_free++] = i;
		s->areq_free[i] = UR_AIO_MAX - 1 - i;
	}
	s->n_areq_free = UR_AIO_MAX;
	s->npend = 0;
	s->aio_inflight = 0;
	s->aio_on = 1;
	return 0;
}

void ur_aio_fini(struct ur_server *s)
{
	if (!s->aio_on)
		return;
	ur_aio_drain(s);
	kaio_io_destroy(s->aio_ctx);
	close(s->aio_efd);
	s->aio_on = 0;
}

static int aligned(uint64_t v)
{
	return (v & (ALIGN - 1)) == 0;
}

/*
 * Try to issue a read or an in-place overwrite asynchronously. Returns
 * UR_AIO_QUEUED, a final result (an error, 0 at EOF, or the length when a
 * read was all holes), UR_AIO_BUSY (no AIO slot free now: leave the SQE in
 * the SQ and retry after a completion), or UR_AIO_NOT_ASYNC (take the
 * synchronous path). A write qualifies only when the backend maps the whole
 * range to allocated blocks inside the file's size: then no metadata but the
 * mtime changes (the backend records it), and the journal is not involved.
 */
int32_t ur_aio_rw(struct ur_server *s, const struct ur_sqe *q, uint8_t *buf, int wr)
{
	struct ur_extent ext[MAX_EXT];
	uint64_t len = q->len;
	if (!aligned((uintptr_t)buf) || !aligned(q->off) || !aligned(len) || !len)
		return UR_AIO_NOT_ASYNC;
	if (wr && !s->be->map_write)
		return UR_AIO_NOT_ASYNC;
	if (!s->n_areq_free)
		return UR_AIO_BUSY;
	int n = wr ? s->be->map_write(s->bst, q->fd, q->off, len, ext, MAX_EXT)
		   : s->be->map(s->bst, q->fd, q->off, len, ext, MAX_EXT);
	if (n < 0)
		return n;
	if (wr && n == 0)
		return UR_AIO_NOT_ASYNC;            /* extends, holes, append, ... */
	uint64_t total = 0;
	int ios = 0;
	for (int i = 0; i < n; i++) {
		total += ext[i].len;
		if (ext[i].img_off) {
			if (!aligned(ext[i].img_off) || !aligned(ext[i].len))
				return UR_AIO_NOT_ASYNC;   /* e.g. the tail of a file */
			ios++;
		} else if (wr) {
			return UR_AIO_NOT_ASYNC;           /* never write into a hole */
		}
	}
	if (wr && total != len)
		return UR_AIO_NOT_ASYNC;
	if (n == MAX_EXT && total < len)
		return UR_AIO_NOT_ASYNC;           /* too fragmented: sync path */
	if ((uint32_t)ios > s->n_iocb_free)
		return UR_AIO_BUSY;
	if (!wr)
		for (int i = 0; i < n; i++)
			if (!ext[i].img_off)
				memset(buf + (ext[i].file_off - q->off), 0, ext[i].len);
	if (!ios)
		return (int32_t)total;
	uint32_t ri = s->areq_free[--s->n_areq_free];
	struct ur_aio_req *r = &s->areq[ri];
	r->user_data = q->user_data;
	r->res = (int32_t)total;
	r->pending = (uint16_t)ios;
	for (int i = 0; i < n; i++) {
		if (!ext[i].img_off)
			continue;
		uint32_t ci = s->iocb_free[--s->n_iocb_free];
		struct iocb *cb = &s->iocbs[ci];
		memset(cb, 0, sizeof(*cb));
		cb->aio_data = (uint64_t)ri << 32 | ci;
		cb->aio_lio_opcode = wr ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
		cb->aio_fildes = (uint32_t)s->img_fd;
		cb->aio_buf = (uint64_t)(uintptr_t)(buf + (ext[i].file_off - q->off));
		cb->aio_nbytes = ext[i].len;
		cb->aio_offset = (int64_t)ext[i].img_off;
		cb->aio_flags = IOCB_FLAG_RESFD;
		cb->aio_resfd = (uint32_t)s->aio_efd;
		s->pend[s->npend++] = cb;
	}
	if (!s->npend_req++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s->pend_since = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	s->aio_inflight++;
	if (wr)
		s->n_aio_w++;
	else
		s->n_aio++;
	return UR_AIO_QUEUED;
}

static void post(struct ur_server *s, uint64_t ud, int32_t res)
{
	struct ur_cqe *c = &s->cqes[s->cq_tail & s->cq_mask];
	c->user_data = ud;
	c->res = res;
	c->flags = 0;
	s->cq_tail++;
}

static void event_done(struct ur_server *s, uint64_t data, int64_t res)
{
	uint32_t ri = (uint32_t)(data >> 32), ci = (uint32_t)data;
	if (ri >= UR_AIO_MAX || ci >= UR_AIO_MAX)
		return;
	struct ur_aio_req *r = &s->areq[ri];
	struct iocb *cb = &s->iocbs[ci];
	if (res < 0)
		r->res = (int32_t)res;
	else if ((uint64_t)res != cb->aio_nbytes && r->res >= 0)
		r->res = -EIO;
	s->iocb_free[s->n_iocb_free++] = ci;
	if (--r->pending == 0) {
		post(s, r->user_data, r->res);
		s->areq_free[s->n_areq_free++] = ri;
		s->aio_inflight--;
	}
}

/* Hand queued iocbs to the kernel (one syscall for the batch). */
void ur_aio_flush(struct ur_server *s)
{
	int e, done = kaio_submit_all(s->aio_ctx, s->npend, s->pend, &e);
	for (int i = done; i < s->npend; i++)       /* refused: fail what was not taken */
		event_done(s, s->pend[i]->aio_data, e);
	s->npend = 0;
	s->npend_req = 0;
	s->hdr->server_aio_reads = s->n_aio;     /* informational, for tests and tools */
}

/*
 * Reads queued by the client one or two at a time would cost an io_submit
 * each. While the device still has plenty in flight, a few microseconds of
 * collecting cost no throughput and save most of those syscalls.
 */
#define FLUSH_BATCH 16
#define FLUSH_LOW 16           /* submitted reads below this: feed the device now */
#define FLUSH_WINDOW_NS 20000u

int ur_aio_flush_due(struct ur_server *s, uint64_t now)
{
	if (!s->npend)
		return 0;
	uint32_t submitted = s->aio_inflight - (uint32_t)s->npend_req;
	return s->npend >= FLUSH_BATCH || submitted < FLUSH_LOW || now - s->pend_since >= FLUSH_WINDOW_NS;
}

/* Reap completions; wait (blocking) for at least one if wait and none is
 * ready. Returns the number of events handled. CQEs are written, not
 * published: the caller publishes. */
unsigned ur_aio_reap(struct ur_server *s, int wait)
{
	if (!s->aio_inflight)
		return 0;
	struct io_event ev[32];
	unsigned got = 0;
	int n;
	while ((n = kaio_ring_pop(s->aio_ctx, ev, 32)) > 0) {
		for (int i = 0; i < n; i++)
			event_done(s, ev[i].data, ev[i].res);
		got += (unsigned)n;
	}
	if (!got && wait) {
		long r = kaio_io_getevents(s->aio_ctx, 1, 32, ev, NULL);
		for (long i = 0; i < r; i++)
			event_done(s, ev[i].data, ev[i].res);
		got += r > 0 ? (unsigned)r : 0;
	}
	return got;
}

/* Everything in flight done and posted. */
void ur_aio_drain(struct ur_server *s)
{
	if (s->npend)
		ur_aio_flush(s);
	while (s->aio_inflight)
		ur_aio_reap(s, 1);
}
