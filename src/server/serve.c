/* SPDX-License-Identifier: MIT */
/*
 * serve.c - simplefs_server's ring loop: take SQEs, validate, dispatch to the
 * backend, post CQEs; serve every client's ring in turn with a budget per
 * turn (one busy client cannot starve the others); spin while any ring is
 * busy, sleep on all the SQ doorbells when all are idle (io_uring's SQPOLL
 * rule, per ring), wake a sleeping client through its CQ doorbell, hand the
 * CPU to a client that waits on the server's own CPU (spin.c's hand-over).
 *
 * Must never trust the region: each SQE is copied to a local before it is
 * looked at, every offset/length/index is checked against the geometry
 * validated at start-up, head/tail the server owns are private copies, and a
 * client that corrupts its counters gets its ring shut down (state BROKEN),
 * not a crash, an out-of-region access or a spinning server. Never posts
 * more CQEs than the CQ has room for.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "server.h"

volatile sig_atomic_t ur_server_stop;
volatile sig_atomic_t ur_server_parent_gone;

#define UR_YIELD_AFTER_NS 5000u

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ur_server_attach(struct ur_server *s, uint8_t *base, uint64_t size, char *err, size_t errlen)
{
	struct ur_region_hdr g;
	const char *why = "region too small";
	if (size >= sizeof(g)) {
		memcpy(&g, base, sizeof(g));     /* checked and used from this private copy only */
		why = ur_region_check(&g, size);
	}
	if (why) {
		snprintf(err, errlen, "%s", why);
		return -EINVAL;
	}
	s->base = base;
	s->size = size;
	s->geo = g;
	s->hdr = (struct ur_region_hdr *)base;
	s->sq = (struct ur_ring_ctl *)(base + g.sq_ctl_off);
	s->cq = (struct ur_ring_ctl *)(base + g.cq_ctl_off);
	s->sqes = (struct ur_sqe *)(base + g.sqes_off);
	s->cqes = (struct ur_cqe *)(base + g.cqes_off);
	s->sq_mask = g.sq_entries - 1;
	s->cq_mask = g.cq_entries - 1;
	s->sq_head = ur_load_acquire(&s->sq->head);
	s->cq_tail = ur_load_acquire(&s->cq->tail);
	s->cq_published = s->cq_tail;
	/* Clamped: a client must not keep the server spinning for long after
	 * it is gone (the server sees its client leave only when it sleeps). */
	s->idle_ns = (uint64_t)(g.idle_us < UR_MAX_IDLE_US ? g.idle_us : UR_MAX_IDLE_US) * 1000u;
	ur_spin_init(&s->spin);
	return 0;
}

/* ---- file handles ------------------------------------------------------ */

#define FD_OPEN   0x1u
#define FD_RDONLY 0x2u                     /* opened read-only: no exclusive lock */

static int fd_ok(struct ur_server *s, int32_t fd)
{
	return fd >= 0 && fd < s->fdcap && s->fdopen[fd];
}

static int fd_mark(struct ur_server *s, int fd, int rdonly)
{
	if (fd >= s->fdcap) {
		int ncap = s->fdcap ? s->fdcap : 64;
		while (ncap <= fd)
			ncap *= 2;
		uint8_t *n = realloc(s->fdopen, (size_t)ncap);
		if (!n)
			return -ENOMEM;
		memset(n + s->fdcap, 0, (size_t)(ncap - s->fdcap));
		s->fdopen = n;
		s->fdcap = ncap;
	}
	s->fdopen[fd] = (uint8_t)(FD_OPEN | (rdonly ? FD_RDONLY : 0));
	s->nfiles++;
	return 0;
}

void ur_server_close_files(struct ur_server *s)
{
	ur_locks_release(s, -1);
	for (int fd = 0; fd < s->fdcap; fd++)
		if (s->fdopen[fd]) {
			s->be->close(s->bst, fd);
			s->fdopen[fd] = 0;
		}
	s->nfiles = 0;
	free(s->fdopen);
	s->fdopen = NULL;
	s->fdcap = 0;
}

/* ---- validation helpers ------------------------------------------------ */

static int data_ok(struct ur_server *s, uint64_t off, uint64_t len)
{
	return ur_inside(off, len, s->geo.data_off, s->geo.data_size);
}

/* Copy a name from the region into out (UR_NAME_MAX + 1). */
static int get_name(struct ur_server *s, uint64_t addr, uint32_t len, char *out)
{
	if (len == 0)
		return -EINVAL;
	if (len > UR_NAME_MAX)
		return -ENAMETOOLONG;
	if (!data_ok(s, addr, len))
		return -EFAULT;
	memcpy(out, s->base + addr, len);
	out[len] = '\0';
	if (memchr(out, '\0', len) || memchr(out, '/', len))
		return -EINVAL;
	return 0;
}

static int off_ok(uint64_t off)
{
	return off == UR_OFF_POS || off <= (uint64_t)INT64_MAX;
}

/* Load and check an iovec array; returns the total length or -errno. */
static int64_t get_iov(struct ur_server *s, uint64_t addr, uint32_t n)
{
	if (n == 0 || n > UR_IOV_MAX)
		return -EINVAL;
	if (!data_ok(s, addr, (uint64_t)n * sizeof(struct ur_iovec)))
		return -EFAULT;
	memcpy(s->iov, s->base + addr, (size_t)n * sizeof(struct ur_iovec));
	uint64_t total = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!data_ok(s, s->iov[i].off, s->iov[i].len))
			return -EFAULT;
		total += s->iov[i].len;
		if (total > INT32_MAX)
			return -EINVAL;
	}
	return (int64_t)total;
}

static int32_t do_rw(struct ur_server *s, int wr, int32_t fd, uint64_t addr, uint64_t len, uint64_t off)
{
	ssize_t r = wr ? s->be->write(s->bst, fd, s->base + addr, len, off)
		       : s->be->read(s->bst, fd, s->base + addr, len, off);
	if (r > (ssize_t)len)           /* a backend bug must not become a lie */
		r = -EIO;
	return (int32_t)r;
}

static int32_t do_rwv(struct ur_server *s, int wr, int32_t fd, uint32_t n, uint64_t off)
{
	int64_t done = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t l = s->iov[i].len;
		if (!l)
			continue;
		int32_t r = do_rw(s, wr, fd, s->iov[i].off, l, off);
		if (r < 0)
			return done ? (int32_t)done : r;
		done += r;
		if (off != UR_OFF_POS)
			off += (uint64_t)r;
		if ((uint64_t)r < l)
			break;
	}
	return (int32_t)done;
}

static int32_t do_register(struct ur_server *s, const struct ur_sqe *q)
{
	uint32_t n = q->len;
	if (n == 0) {
		s->nbufs = 0;
		return 0;
	}
	if (n > UR_MAX_BUFS)
		return -EINVAL;
	if (s->nbufs)
		return -EBUSY;
	if (!data_ok(s, q->addr, (uint64_t)n * sizeof(struct ur_iovec)))
		return -EFAULT;
	struct ur_iovec *tmp = s->bufs;
	memcpy(tmp, s->base + q->addr, (size_t)n * sizeof(*tmp));
	for (uint32_t i = 0; i < n; i++)
		if (!ur_inside(tmp[i].off, tmp[i].len, s->geo.bufs_off, s->geo.bufs_size) || !tmp[i].len)
			return -EFAULT;
	s->nbufs = n;
	return 0;
}

static void publish_cq(struct ur_server *s);

/* LOCK / UNLOCK: checked here, kept by locks.c (docs/ABI.md, "Locks"). */
static int32_t do_lock(struct ur_server *s, const struct ur_sqe *q)
{
	int lock = q->opcode == UR_OP_LOCK;
	struct ur_statx st;
	if (!fd_ok(s, q->fd))
		return -EBADF;
	if (q->len || q->buf_index || (q->op_flags & ~(lock ? UR_LOCK_VALID : 0u)))
		return -EINVAL;
	if (q->addr2 && !(lock && (q->op_flags & UR_LOCK_WAIT)))
		return -EINVAL;         /* a timeout is a waiting LOCK's only */
	if (q->off > (uint64_t)INT64_MAX || q->addr > (uint64_t)INT64_MAX - q->off)
		return -EINVAL;
	/* A waiting lock completes later: nothing may hang on it in a chain. */
	if (lock && (q->op_flags & UR_LOCK_WAIT) && (q->flags & UR_SQE_IO_LINK))
		return -EINVAL;
	if (lock && !(q->op_flags & UR_LOCK_SHARED) && (s->fdopen[q->fd] & FD_RDONLY))
		return -EBADF;
	int r = s->be->fstat(s->bst, q->fd, &st);
	if (r < 0)
		return r;
	return lock ? ur_lock_request(s, q, st.ino, now_ns()) : ur_unlock_request(s, q, st.ino);
}

/* Image I/O in flight or queued, of any ring of the server? Another client's
 * in-flight overwrite must not meet a truncate or a sync write of this one. */
static int image_busy(struct ur_server *s)
{
	if (!s->host)
		return s->aio_inflight || s->npend;
	for (struct ur_server *r = s->host->rings; r; r = r->next)
		if (r->aio_inflight || r->npend)
			return 1;
	return 0;
}

void ur_image_quiesce(struct ur_server *s)
{
	if (!s->host) {
		ur_aio_drain(s);
		return;
	}
	for (struct ur_server *r = s->host->rings; r; r = r->next)
		if (r->aio_inflight || r->npend) {
			ur_aio_drain(r);
			if (r != s)
				publish_cq(r);   /* s publishes at the end of its batch */
		}
}

/*
 * READ/WRITE(_FIXED) on the O_DIRECT image path when they qualify (aio.c);
 * UR_AIO_NOT_ASYNC otherwise. A write that takes the synchronous path waits
 * for the image I/O in flight first (it may allocate, extend or overlap it).
 */
static int32_t rw_async(struct ur_server *s, const struct ur_sqe *q, int wr)
{
	int32_t r = UR_AIO_NOT_ASYNC;
	if (s->aio_on && !q->flags && q->off != UR_OFF_POS)
		r = ur_aio_rw(s, q, s->base + q->addr, wr);
	if (r == UR_AIO_NOT_ASYNC && wr && image_busy(s))
		ur_image_quiesce(s);
	return r;
}

/*
 * Execute one SQE (already copied to q). *expect is set to the result a
 * success must have for a link chain to continue (-1: any res >= 0).
 */
static int32_t execute(struct ur_server *s, const struct ur_sqe *q, int64_t *expect)
{
	char name[UR_NAME_MAX + 1];
	struct ur_statx st;
	int32_t r;
	int64_t t;

	*expect = -1;
	if (q->flags & ~UR_SQE_VALID)
		return -EINVAL;
	if (q->reserved[0] || q->reserved[1])
		return -EINVAL;
	switch (q->opcode) {
	case UR_OP_NOP:
		return 0;
	case UR_OP_FAIL:
		return q->len > 0 && q->len < 4096 ? -(int32_t)q->len : -EINVAL;
	case UR_OP_OPENAT:
		if (q->op_flags & ~UR_O_VALID)
			return -EINVAL;
		if ((r = get_name(s, q->addr, q->len, name)) < 0)
			return r;
		if (s->nfiles >= UR_CLIENT_MAX_FILES)
			return -EMFILE;          /* this client's limit (ABI.md) */
		if (s->rdonly && (q->op_flags & (UR_O_CREAT | UR_O_TRUNC)))
			return -EROFS;           /* a read-only client of a read-write mount */
		r = s->be->open(s->bst, name, q->op_flags | (s->rdonly ? UR_O_RDONLY : 0));
		if (r >= 0 && fd_mark(s, r, s->rdonly || (q->op_flags & UR_O_RDONLY)) < 0) {
			s->be->close(s->bst, r);
			return -ENOMEM;
		}
		return r;
	case UR_OP_CLOSE:
		if (!fd_ok(s, q->fd))
			return -EBADF;
		ur_locks_release(s, q->fd);
		s->fdopen[q->fd] = 0;
		s->nfiles--;
		return s->be->close(s->bst, q->fd);
	case UR_OP_READ:
	case UR_OP_WRITE:
	case UR_OP_READ_FIXED:
	case UR_OP_WRITE_FIXED: {
		int fixed = q->opcode == UR_OP_READ_FIXED || q->opcode == UR_OP_WRITE_FIXED;
		int wr = q->opcode == UR_OP_WRITE || q->opcode == UR_OP_WRITE_FIXED;
		if (!fd_ok(s, q->fd))
			return -EBADF;
		if (q->len > INT32_MAX || !off_ok(q->off))
			return -EINVAL;
		if (fixed ? q->buf_index >= s->nbufs ||
			    !ur_inside(q->addr, q->len, s->bufs[q->buf_index].off, s->bufs[q->buf_index].len)
			  : !data_ok(s, q->addr, q->len))
			return -EFAULT;
		*expect = q->len;
		if ((r = rw_async(s, q, wr)) != UR_AIO_NOT_ASYNC)
			return r;
		return do_rw(s, wr, q->fd, q->addr, q->len, q->off);
	}
	case UR_OP_READV:
	case UR_OP_WRITEV:
		if (!fd_ok(s, q->fd))
			return -EBADF;
		if (!off_ok(q->off))
			return -EINVAL;
		if ((t = get_iov(s, q->addr, q->len)) < 0)
			return (int32_t)t;
		*expect = t;
		return do_rwv(s, q->opcode == UR_OP_WRITEV, q->fd, q->len, q->off);
	case UR_OP_FSYNC:
		if (!fd_ok(s, q->fd))
			return -EBADF;
		return s->be->fsync(s->bst, q->fd);
	case UR_OP_FTRUNCATE:
		if (!fd_ok(s, q->fd))
			return -EBADF;
		if (q->off > (uint64_t)INT64_MAX)
			return -EINVAL;
		return s->be->ftruncate(s->bst, q->fd, q->off);
	case UR_OP_UNLINK:
		if ((r = get_name(s, q->addr, q->len, name)) < 0)
			return r;
		if (s->rdonly)
			return -EROFS;
		return s->be->unlink(s->bst, name);
	case UR_OP_STATX:
		if (!data_ok(s, q->addr2, sizeof(st)))
			return -EFAULT;
		memset(&st, 0, sizeof(st));
		if (q->fd == -1) {
			if ((r = get_name(s, q->addr, q->len, name)) < 0)
				return r;
			r = s->be->stat(s->bst, name, &st);
		} else {
			if (!fd_ok(s, q->fd))
				return -EBADF;
			r = s->be->fstat(s->bst, q->fd, &st);
		}
		if (r >= 0)
			memcpy(s->base + q->addr2, &st, sizeof(st));
		return r;
	case UR_OP_REGISTER_BUFFERS:
		return do_register(s, q);
	case UR_OP_LOCK:
	case UR_OP_UNLOCK:
		return do_lock(s, q);
	case UR_OP_ASYNC_CANCEL:
		if (q->fd != -1 || q->off || q->len || q->buf_index || q->op_flags || q->addr2)
			return -EINVAL;
		return ur_lock_cancel(s, q->addr);
	default:
		return -EINVAL;
	}
}

/* ---- the ring ---------------------------------------------------------- */

void ur_server_post(struct ur_server *s, uint64_t user_data, int32_t res)
{
	struct ur_cqe *c = &s->cqes[s->cq_tail & s->cq_mask];
	c->user_data = user_data;
	c->res = res;
	c->flags = 0;
	s->cq_tail++;
	publish_cq(s);
	s->cold_skip = 0;      /* looked at next turn (its client may wait on our CPU) */
}

void ur_server_set_state(struct ur_server *s, uint32_t st)
{
	ur_store_release(&s->hdr->server_state, st);
}

static void publish_cq(struct ur_server *s)
{
	if (s->cq_published == s->cq_tail)
		return;
	ur_store_release(&s->cq->tail, s->cq_tail);
	s->cq_published = s->cq_tail;
	ur_smp_mb();
	if (ur_load_relaxed(&s->cq->flags) & UR_CQ_NEED_WAKEUP) {
		if (ur_fetch_and(&s->cq->flags, ~UR_CQ_NEED_WAKEUP) & UR_CQ_NEED_WAKEUP) {
			s->n_wake_client++;
			/* Fails only on a saturated counter: the client wakes anyway. */
			(void)ur_doorbell_ring(s->efd_cq);
		}
	}
}

/* Work the server could do now: SQEs pending and room in the CQ. Detects a
 * corrupted ring. Returns the number of SQEs it may take (0: none). */
static uint32_t available(struct ur_server *s)
{
	uint32_t tail = ur_load_acquire(&s->sq->tail);
	uint32_t pending = tail - s->sq_head;
	if (!pending)
		return 0;     /* an idle ring: one read of its shared memory per turn */
	uint32_t cq_head = ur_load_acquire(&s->cq->head);
	uint32_t used = s->cq_tail - cq_head;
	if (pending > s->geo.sq_entries || used > s->geo.cq_entries) {
		s->broken = 1;
		return 0;
	}
	/* CQEs owed by reads in flight on the image and by queued lock
	 * waits are spoken for. */
	uint32_t room = s->geo.cq_entries - used;
	uint32_t owed = s->aio_inflight + s->nlockwait;
	room = room > owed ? room - owed : 0;
	return pending < room ? pending : room;
}

/* One batch of at most budget SQEs: take what can be taken, publish SQ head
 * and CQ tail. Stops
 * early, leaving the SQE in the SQ, when it needs an AIO slot and none is
 * free (back-pressure: it is retried after a completion, never served
 * synchronously behind a full AIO queue). */
static uint32_t serve_batch(struct ur_server *s, uint32_t budget)
{
	s->aio_full = 0;
	uint32_t n = available(s);
	if (!n)
		return 0;
	if (n > budget)
		n = budget;
	uint32_t i;
	for (i = 0; i < n; i++) {
		struct ur_sqe q;
		memcpy(&q, &s->sqes[s->sq_head & s->sq_mask], sizeof(q));
		s->sq_head++;
		int64_t expect;
		int32_t res;
		if (image_busy(s)) {
			/* Only plain reads and writes may run beside image I/O in
			 * flight (a write that cannot go async drains in execute);
			 * anything else (a metadata change, fsync, a link, a drain)
			 * waits until it is done. */
			int plain = (q.opcode == UR_OP_READ || q.opcode == UR_OP_READ_FIXED ||
				     q.opcode == UR_OP_WRITE || q.opcode == UR_OP_WRITE_FIXED ||
				     q.opcode == UR_OP_LOCK || q.opcode == UR_OP_UNLOCK ||
				     q.opcode == UR_OP_ASYNC_CANCEL) &&
				    !q.flags && !s->chain_failed;
			if (!plain)
				ur_image_quiesce(s);
		}
		if (s->chain_failed) {
			res = -ECANCELED;
			expect = -1;
		} else {
			res = execute(s, &q, &expect);
			if (res == UR_AIO_QUEUED)
				continue;       /* its CQE comes from aio.c (or locks.c) */
			if (res == UR_AIO_BUSY) {
				s->sq_head--;   /* not taken: it stays in the SQ */
				s->aio_full = 1;
				s->n_busy++;
				break;
			}
		}
		if (q.flags & UR_SQE_IO_LINK)
			s->chain_failed |= res < 0 || (expect >= 0 && res != expect);
		else
			s->chain_failed = 0;
		struct ur_cqe *c = &s->cqes[s->cq_tail & s->cq_mask];
		c->user_data = q.user_data;
		c->res = res;
		c->flags = 0;
		s->cq_tail++;
		if ((i & 3) == 3) {
			ur_store_release(&s->sq->head, s->sq_head);
			publish_cq(s);
		}
	}
	s->n_sqe += i;
	/* The SQEs are copied: their slots go back before io_submit, which may
	 * take a while, so that a waiting client sees them taken (ABI.md, the
	 * client's wait while the server is behind). */
	ur_store_release(&s->sq->head, s->sq_head);
	if (s->npend && (s->aio_full || ur_aio_flush_due(s, now_ns())))
		ur_aio_flush(s);
	publish_cq(s);
	return i;
}

uint32_t ur_server_poll(struct ur_server *s)
{
	if (s->broken)
		return 0;
	if (s->aio_inflight && ur_aio_reap(s, 0))
		publish_cq(s);
	if (ur_locks_deadline(s))
		ur_locks_expire(s, now_ns());
	return serve_batch(s, UINT32_MAX);
}

/* Returns 1 if the client is gone (EOF/hangup on the liveness socket). */
static int client_gone(short revents, int live)
{
	if (revents & (POLLHUP | POLLERR | POLLNVAL))
		return 1;
	if (revents & POLLIN) {
		char b[16];
		ssize_t r = recv(live, b, sizeof(b), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return 1;
	}
	return 0;
}

/* ---- many rings (docs/ABI.md, "Many clients") -------------------------- */

/*
 * How long the server spins after ring s last had work before it may sleep:
 * the idle spin rule (spin.c, learned from the ring's gaps; up to the cap
 * while image I/O is in flight), in this one place per ring. The first call
 * of an idle period starts its clock. The server sleeps only when no ring is
 * within its window.
 */
static uint64_t ring_idle_spin_ns(struct ur_server *s, uint64_t now)
{
	if (!s->idle_ns)
		return 0;
	if (!s->idle_since) {
		s->idle_since = now;
		ur_spin_idle(&s->spin, now);
	}
	return s->aio_inflight ? s->idle_ns : ur_spin_budget_ns(&s->spin, s->idle_ns);
}

/* Hand the CPU to ring s's client now (spin.c's rule)? The cheap checks
 * first; *my_cpu is looked up once per loop (0: not yet). */
static int handover_due(struct ur_server *s, uint32_t *my_cpu, uint64_t now)
{
	/* Nothing published since the last hand-over first: it is this
	 * process's memory, so an idle ring costs no read of its shared page. */
	uint32_t client = s->cq_published == s->handover.tail ? 0 : ur_load_relaxed(&s->cq->owner_cpu);
	if (!client) {
		s->handover.since = 0;   /* done, or no waiter (asleep: the doorbell wakes it) */
		return 0;
	}
	if (!*my_cpu)
		*my_cpu = (uint32_t)sched_getcpu() + 1;
	if (client != *my_cpu) {
		s->handover.since = 0;   /* the client has a CPU of its own: it spins */
		return 0;
	}
	return ur_handover(&s->handover, *my_cpu, client, ur_load_acquire(&s->cq->head),
			   s->cq_published, now);
}

/* Is ring s looked at this turn? Every turn while it has image I/O in
 * flight (the eventfd that says a read is done may have been drained by
 * host_poll: nothing else would wake a server that sleeps on it) or is hot
 * (work found, or its doorbell or AIO eventfd, within UR_HOT_NS), else every
 * UR_COLD_EVERY turns: 62 idle rings then cost a turn 8 looks, not 62
 * (docs/ABI.md, Fairness). Only this process's memory is read here. */
static int ring_due(struct ur_server *s, uint64_t now)
{
	if (now - s->busy_at < UR_HOT_NS || s->aio_inflight)
		return 1;
	if (s->cold_skip) {
		s->cold_skip--;
		return 0;
	}
	s->cold_skip = UR_COLD_EVERY - 1;
	return 1;
}

/* One turn of ring s: its AIO completions, then at most UR_TURN_BUDGET SQEs.
 * Did it do any work? A ring found corrupted is shut down here. A ring with
 * work, or image I/O in flight, is hot from now. */
static int ring_turn(struct ur_server *s, uint64_t now)
{
	if (s->gone || s->broken > 1)
		return 0;
	uint32_t reaped = 0;
	if (s->aio_inflight) {
		if (s->npend && ur_aio_flush_due(s, now_ns()))
			ur_aio_flush(s);
		if ((reaped = ur_aio_reap(s, 0)))
			publish_cq(s);
	}
	uint32_t n = s->broken ? 0 : serve_batch(s, UR_TURN_BUDGET);
	if (n && s->spin.idle_at)
		ur_spin_arrival(&s->spin, now_ns());
	if (s->broken) {
		/* Serve no more; wait for the client to go away. */
		ur_aio_drain(s);
		publish_cq(s);
		ur_server_set_state(s, UR_STATE_BROKEN);
		s->broken = 2;
		return 0;
	}
	if (n || reaped || s->aio_inflight)
		s->busy_at = now;
	if (n || reaped) {
		s->idle_since = 0;
		return 1;
	}
	return 0;
}

enum { PF_SQ, PF_LIVE, PF_AIO, PF_LISTEN, PF_PENDING };
#define UR_MAX_PFD (UR_MAX_CLIENTS * 3 + 1 + UR_PEND_MAX)

/* Look at the sockets and doorbells of every ring and the listening socket,
 * waiting up to timeout_ms (0: just look); rings whose client left are
 * dropped, new clients attach. */
static void host_poll(struct ur_host *h, int timeout_ms)
{
	struct pollfd p[UR_MAX_PFD];
	struct ur_server *who[UR_MAX_PFD];
	uint8_t kind[UR_MAX_PFD];
	int n = 0;
#define ADD(f, k, s) do { p[n].fd = (f); p[n].events = POLLIN; p[n].revents = 0; \
			  kind[n] = (k); who[n] = (s); n++; } while (0)
	for (struct ur_server *s = h->rings; s; s = s->next) {
		if (!s->broken)
			ADD(s->efd_sq, PF_SQ, s);
		ADD(s->live, PF_LIVE, s);
		if (s->aio_on && !s->broken)
			ADD(s->aio_efd, PF_AIO, s);
	}
	if (h->listen_fd >= 0)
		ADD(h->listen_fd, PF_LISTEN, NULL);
	for (int i = 0; i < UR_PEND_MAX; i++)
		if (h->pend_fd[i] >= 0)
			ADD(h->pend_fd[i], PF_PENDING, NULL);
#undef ADD
	if (h->npend_fd && (timeout_ms < 0 || timeout_ms > UR_PEND_MS))
		timeout_ms = UR_PEND_MS;     /* a silent connection is not kept for ever */
	int r = poll(p, (nfds_t)n, timeout_ms);
	for (int i = 0; r > 0 && i < n; i++) {
		if (!p[i].revents)
			continue;
		struct ur_server *s = who[i];
		uint64_t v;
		switch (kind[i]) {
		case PF_SQ:
			(void)ur_doorbell_drain(s->efd_sq);   /* never blocks; -EAGAIN: empty */
			s->busy_at = now_ns();
			break;
		case PF_LIVE:
			if (client_gone(p[i].revents, s->live))
				s->gone = 1;
			break;
		case PF_AIO:
			if (read(s->aio_efd, &v, sizeof(v)) < 0) {
				/* EAGAIN: our own non-blocking eventfd, drained already */
			}
			s->busy_at = now_ns();   /* its completions are reaped next turn */
			break;
		case PF_LISTEN:
			ur_host_accept(h);
			break;
		case PF_PENDING:
			ur_host_pending(h, p[i].fd);
			break;
		}
	}
	ur_host_expire(h, now_ns());
	for (struct ur_server *s = h->rings, *next; s; s = next) {
		if (ur_server_parent_gone && s->first)
			s->gone = 1;    /* its process is gone, whoever holds its socket */
		next = s->next;
		if (s->gone)
			ur_host_drop(h, s);
	}
}

/* How long the server may sleep: until the first lock wait's timeout
 * (rounded up to whole ms), else for ever (-1). */
static int sleep_ms(struct ur_server *any)
{
	uint64_t dl = ur_locks_deadline(any), now;
	if (!dl)
		return -1;
	now = now_ns();
	if (dl <= now)
		return 0;
	uint64_t ms = (dl - now + 999999u) / 1000000u;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int ur_host_run(struct ur_host *h)
{
	uint64_t last_check = now_ns();
	unsigned spins = 0;

	while (!ur_server_stop && h->rings) {
		int busy = 0, hand = 0;
		uint32_t my_cpu = 0;
		uint64_t now = now_ns();
		h->n_turn++;
		for (struct ur_server *s = h->rings; s; s = s->next) {
			if (!ring_due(s, now))
				continue;
			h->n_look++;
			busy |= ring_turn(s, now);
			if (!s->broken && handover_due(s, &my_cpu, now)) {
				s->n_handover++;
				hand = 1;
			}
		}
		if (hand)
			sched_yield();   /* a client waits on this CPU for its CQEs */
		ur_locks_expire(h->rings, now);      /* lock waits whose timeout passed */
		if (now - last_check >= UR_CHECK_NS) {
			/* Busy or spinning, the server still sees clients come and go. */
			last_check = now;
			host_poll(h, 0);
			continue;
		}
		if (busy) {
			spins = 0;
			continue;
		}
		/* A ring waits for an AIO slot: wait for a completion (the disk's
		 * time, not the client's). */
		struct ur_server *full = NULL;
		for (struct ur_server *s = h->rings; s && !full; s = s->next)
			if (s->aio_full && !s->broken)
				full = s;
		if (full) {
			full->aio_full = 0;
			if (full->aio_inflight && ur_aio_reap(full, 1))
				publish_cq(full);
			full->idle_since = 0;
			continue;
		}
		/* Idle: spin while any ring is within its idle window. */
		if (++spins & 63) {
			ur_cpu_relax();
			continue;
		}
		uint32_t mycpu = (uint32_t)sched_getcpu() + 1;
		int spin = 0, yield = 0, aio = 0;
		uint64_t idle_max = 0;
		for (struct ur_server *s = h->rings; s; s = s->next) {
			if (s->broken)
				continue;
			aio |= s->aio_inflight != 0;
			uint64_t win = ring_idle_spin_ns(s, now);
			if (!win)
				continue;
			uint64_t idle = now - s->idle_since;
			if (idle >= win)
				continue;
			spin = 1;
			idle_max = idle > idle_max ? idle : idle_max;
			if (ur_load_relaxed(&s->sq->owner_cpu) != mycpu)
				ur_store_relaxed(&s->sq->owner_cpu, mycpu);
			/* Its client runs on this very CPU: spinning only delays it. */
			if (ur_load_relaxed(&s->cq->owner_cpu) == mycpu)
				yield = 1;
		}
		if (spin) {
			/* On a machine with more runnable threads than CPUs a client
			 * may be waiting for this very CPU: offer it now and then
			 * (measured: 5x the IOPS under load). Not while image reads
			 * are in flight: then the wait is the disk's. */
			if (yield || (!(spins & 255) && idle_max > UR_YIELD_AFTER_NS && !aio))
				sched_yield();
			continue;
		}
		int flushed = 0;
		for (struct ur_server *s = h->rings; s; s = s->next)
			if (s->npend && !s->broken) {
				ur_aio_flush(s);    /* never sleep on unsubmitted reads */
				flushed = 1;
			}
		if (flushed)
			continue;
		/* Sleep: NEED_WAKEUP on every ring, fence, re-check every ring. */
		for (struct ur_server *s = h->rings; s; s = s->next)
			if (!s->broken)
				ur_fetch_or(&s->sq->flags, UR_SQ_NEED_WAKEUP);
		ur_smp_mb();
		int work = 0;
		for (struct ur_server *s = h->rings; s && !work; s = s->next)
			if (!s->broken && (available(s) || s->broken))
				work = 1;
		if (!work) {
			int gone = 0;
			for (struct ur_server *s = h->rings; s; s = s->next) {
				s->n_sleep++;
				ur_store_relaxed(&s->sq->owner_cpu, 0);   /* asleep: nobody to yield to */
				gone |= s->gone;
			}
			/* A ring known gone (its hello could not be sent) is dropped
			 * now: its socket may never wake the sleep. */
			host_poll(h, gone ? 0 : sleep_ms(h->rings));
			last_check = now_ns();
		}
		for (struct ur_server *s = h->rings; s; s = s->next) {
			if (!s->broken)
				ur_fetch_and(&s->sq->flags, ~UR_SQ_NEED_WAKEUP);
			s->idle_since = 0;
		}
		spins = 0;
	}
	return 0;
}
