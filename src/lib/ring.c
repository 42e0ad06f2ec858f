/* SPDX-License-Identifier: MIT */
/*
 * ring.c - libur_fs's ring API on a ring that ring_setup.c set up: translate
 * SQEs (ordinary buffers through the staging area, pointers into region
 * offsets), submit with the SQPOLL wakeup rule, collect/wait for CQEs (spin
 * briefly, then sleep on the CQ doorbell or notice the server's death on the
 * liveness socket), and register buffers.
 *
 * Must never: print, leave errno as the error channel, block forever when the
 * server is gone, make a syscall per I/O in steady state, or allocate per I/O.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

#define YIELD_AFTER_NS 5000u
#define MIN_SPIN_NS 2000u
#define YIELD_EVERY_NS 20000u
#define WAIT_BEHIND_X 4u      /* spin up to 4x wait_spin while the server is behind */

/* ---------------------------------------------------------------------------
 * Staging arena: allocations in FIFO order, frees in any order; space is
 * reclaimed when the oldest allocations are freed, and the arena rewinds to
 * its start whenever it becomes empty (so a steady load stays cache-hot).
 * ------------------------------------------------------------------------- */
static int st_alloc(struct urfs__priv *P, uint64_t len, uint64_t *off, uint32_t *rec)
{
	if (len == 0) {
		*off = P->st_base;
		*rec = NONE;
		return 0;
	}
	/* Whole pages get page-aligned space: with an O_DIRECT image the server
	 * can then read into it straight from the disk. */
	uint64_t align = (len & 4095) == 0 ? 4096 : 64;
	len = align_up(len, 64);
	if (len > P->st_size)
		return -ENOBUFS;
	if (P->rtail - P->rhead > P->rmask)
		return -EAGAIN;
	uint64_t pos = align_up(P->st_head, align);
	uint64_t o = pos % P->st_size;
	if (o + len > P->st_size) {
		pos += P->st_size - o;
		o = 0;
	}
	if (pos + len - P->st_tail > P->st_size)
		return -EAGAIN;
	uint32_t r = P->rtail++ & P->rmask;
	P->recs[r].end = pos + len;
	P->recs[r].freed = 0;
	P->st_head = pos + len;
	*off = P->st_base + o;
	*rec = r;
	return 0;
}

static void st_free(struct urfs__priv *P, uint32_t rec)
{
	if (rec == NONE)
		return;
	P->recs[rec].freed = 1;
	while (P->rhead != P->rtail && P->recs[P->rhead & P->rmask].freed) {
		P->st_tail = P->recs[P->rhead & P->rmask].end;
		P->rhead++;
	}
	if (P->rhead == P->rtail)
		P->st_head = P->st_tail = 0;
}

/* ---------------------------------------------------------------------------
 * Submission: translate caller SQEs into region terms.
 * ------------------------------------------------------------------------- */
static int in_data(struct urfs_ring *ring, const void *ptr, uint64_t len, uint64_t *off)
{
	struct urfs__priv *P = ring->priv;
	uintptr_t a = (uintptr_t)ptr, lo = (uintptr_t)ring->region + P->data_off;
	if (a < lo || len > P->data_size || a - lo > P->data_size - len)
		return 0;
	*off = a - (uintptr_t)ring->region;
	return 1;
}

static void make_fail(struct ur_sqe *sqe, int err)
{
	sqe->opcode = UR_OP_FAIL;
	sqe->len = (uint32_t)err;
	sqe->addr = sqe->addr2 = 0;
	sqe->fd = -1;
	sqe->op_flags = 0;
}

/* 0: translated (or turned into a FAIL); -EAGAIN: no staging room now. */
static int translate(struct urfs_ring *ring, struct ur_sqe *sqe)
{
	struct urfs__priv *P = ring->priv;
	uint32_t idx = P->free_head;
	if (idx == NONE)
		return -EAGAIN;
	struct urfs_pend *p = &P->pend[idx];
	uint64_t off, o2;
	uint32_t rec = NONE;
	int r = 0;
	void *uaddr = (void *)(uintptr_t)sqe->addr;

	p->dst = NULL;
	p->stage = 0;
	p->len = 0;
	p->op = sqe->opcode;
	switch (sqe->opcode) {
	case UR_OP_READ:
	case UR_OP_WRITE:
		if (in_data(ring, uaddr, sqe->len, &off)) {
			sqe->addr = off;
			break;
		}
		if (!uaddr && sqe->len) {
			make_fail(sqe, EFAULT);
			break;
		}
		r = st_alloc(P, sqe->len, &off, &rec);
		if (r == -EAGAIN)
			return r;
		if (r < 0) {
			make_fail(sqe, -r);
			break;
		}
		if (sqe->opcode == UR_OP_WRITE) {
			memcpy(ring->region + off, uaddr, sqe->len);
		} else {
			p->dst = uaddr;
			p->len = sqe->len;
			p->stage = off;
		}
		sqe->addr = off;
		break;
	case UR_OP_READ_FIXED:
	case UR_OP_WRITE_FIXED:
		if (in_data(ring, uaddr, sqe->len, &off))
			sqe->addr = off;
		else
			make_fail(sqe, EFAULT);
		break;
	case UR_OP_READV:
	case UR_OP_WRITEV: {
		const struct iovec *iov = uaddr;
		uint32_t n = sqe->len;
		if (n == 0 || n > UR_IOV_MAX) {
			make_fail(sqe, EINVAL);
			break;
		}
		if (!iov) {
			make_fail(sqe, EFAULT);
			break;
		}
		uint64_t need = (uint64_t)n * sizeof(struct ur_iovec);
		for (uint32_t i = 0; i < n; i++)
			if (!in_data(ring, iov[i].iov_base, iov[i].iov_len, &o2))
				need += iov[i].iov_len;
		r = st_alloc(P, need, &off, &rec);
		if (r == -EAGAIN)
			return r;
		if (r < 0) {
			make_fail(sqe, -r);
			break;
		}
		struct ur_iovec *uv = (struct ur_iovec *)(ring->region + off);
		uint64_t data = off + (uint64_t)n * sizeof(struct ur_iovec);
		p->stage = data;
		for (uint32_t i = 0; i < n; i++) {
			if (in_data(ring, iov[i].iov_base, iov[i].iov_len, &o2)) {
				uv[i].off = o2;
			} else {
				uv[i].off = data;
				if (sqe->opcode == UR_OP_WRITEV && iov[i].iov_len)
					memcpy(ring->region + data, iov[i].iov_base, iov[i].iov_len);
				data += iov[i].iov_len;
			}
			uv[i].len = iov[i].iov_len;
		}
		if (sqe->opcode == UR_OP_READV) {
			p->dst = (void *)iov;
			p->len = n;
		}
		sqe->addr = off;
		break;
	}
	case UR_OP_OPENAT:
	case UR_OP_UNLINK:
	case UR_OP_STATX: {
		const char *name = uaddr;
		int byname = sqe->opcode != UR_OP_STATX || sqe->fd == -1;
		size_t nl = 0;
		if (byname) {
			if (!name) {
				make_fail(sqe, EFAULT);
				break;
			}
			nl = strnlen(name, UR_NAME_MAX + 1);
			sqe->len = (uint32_t)nl;
		}
		uint64_t need = align_up(nl, 16) + (sqe->opcode == UR_OP_STATX ? sizeof(struct ur_statx) : 0);
		r = st_alloc(P, need, &off, &rec);
		if (r == -EAGAIN)
			return r;
		if (r < 0) {
			make_fail(sqe, -r);
			break;
		}
		if (byname) {
			memcpy(ring->region + off, name, nl);
			sqe->addr = off;
		}
		if (sqe->opcode == UR_OP_STATX) {
			if (!sqe->addr2) {
				st_free(P, rec);
				rec = NONE;
				make_fail(sqe, EFAULT);
				break;
			}
			p->dst = (void *)(uintptr_t)sqe->addr2;
			p->stage = off + align_up(nl, 16);
			sqe->addr2 = p->stage;
		}
		break;
	}
	case UR_OP_REGISTER_BUFFERS: {
		const struct iovec *iov = uaddr;
		uint32_t n = sqe->len;
		if (n == 0)
			break;
		r = st_alloc(P, (uint64_t)n * sizeof(struct ur_iovec), &off, &rec);
		if (r == -EAGAIN)
			return r;
		if (r < 0) {
			make_fail(sqe, -r);
			break;
		}
		struct ur_iovec *uv = (struct ur_iovec *)(ring->region + off);
		for (uint32_t i = 0; i < n; i++) {
			uv[i].off = (uint64_t)((uintptr_t)iov[i].iov_base - (uintptr_t)ring->region);
			uv[i].len = iov[i].iov_len;
		}
		sqe->addr = off;
		break;
	}
	case UR_OP_ASYNC_CANCEL: {
		/* The server knows a request by its slot's tag: the caller's
		 * user_data becomes the tag of its waiting LOCK, else 0, which
		 * no slot has (the server answers -ENOENT). */
		uint32_t i = 0;
		while (i < P->npend && !(P->pend[i].busy && P->pend[i].op == UR_OP_LOCK &&
					 P->pend[i].user_data == sqe->addr))
			i++;
		sqe->addr = i < P->npend ? ((uint64_t)URFS_TAG_HI << 32) | i : 0;
		break;
	}
	default:
		break;
	}
	P->free_head = p->next;
	p->rec = rec;
	p->busy = 1;
	p->user_data = sqe->user_data;
	sqe->user_data = ((uint64_t)URFS_TAG_HI << 32) | idx;
	P->inflight++;
	return 0;
}

static void kick(struct urfs_ring *ring)
{
	if (ur_fetch_and(ring->sq.kflags, ~UR_SQ_NEED_WAKEUP) & UR_SQ_NEED_WAKEUP) {
		uint64_t one = 1;
		ring->priv->rang = 1;
		if (write(ring->sq_fd, &one, sizeof(one)) < 0) {
			/* EAGAIN: counter saturated, the server is being woken anyway */
		}
		/* Already in the slow path: notice a dead server here. */
		struct pollfd pf = { .fd = ring->live_fd, .events = POLLIN };
		if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLHUP | POLLERR | POLLIN)))
			ring->dead = 1;
	}
}

UR_EXPORT uint32_t __urfs_cq_collect(struct urfs_ring *ring);

UR_EXPORT int urfs_submit(struct urfs_ring *ring)
{
	struct urfs_sq *sq = &ring->sq;
	if (ring->dead)
		return -EPIPE;
	uint32_t start = sq->sqe_head;
	if (!(ring->flags & URFS_SETUP_RAW)) {
		int collected = 0;
		while (sq->sqe_head != sq->sqe_tail) {
			if (translate(ring, &sq->sqes[sq->sqe_head & sq->ring_mask]) < 0) {
				if (collected)
					break;
				__urfs_cq_collect(ring);
				collected = 1;
				continue;
			}
			sq->sqe_head++;
		}
	} else {
		ring->priv->inflight += sq->sqe_tail - sq->sqe_head;
		sq->sqe_head = sq->sqe_tail;
	}
	uint32_t n = sq->sqe_head - start;
	/* SQEs held back for want of staging space go out from the wait calls
	 * as space frees up, so a waiter never waits on its own queue. */
	ring->priv->held = sq->sqe_head != sq->sqe_tail;
	if (!n)
		return 0;
	ur_store_release(sq->ktail, sq->sqe_head);
	ur_smp_mb();
	if (ur_load_relaxed(sq->kflags) & UR_SQ_NEED_WAKEUP) {
		kick(ring);
		if (ring->dead)
			return -EPIPE;
	}
	return (int)n;
}

/* ---------------------------------------------------------------------------
 * Completion
 * ------------------------------------------------------------------------- */
static void complete(struct urfs_ring *ring, struct ur_cqe *cqe, struct urfs_pend *p)
{
	struct urfs__priv *P = ring->priv;
	int32_t res = cqe->res;
	switch (p->op) {
	case UR_OP_READ:
		if (p->dst && res > 0)
			memcpy(p->dst, ring->region + p->stage, (uint32_t)res < p->len ? (uint32_t)res : p->len);
		break;
	case UR_OP_READV:
		if (p->dst && res > 0) {
			const struct iovec *iov = p->dst;
			uint64_t left = (uint64_t)res, data = p->stage, o2;
			for (uint32_t i = 0; i < p->len; i++) {
				uint64_t take = iov[i].iov_len < left ? iov[i].iov_len : left;
				if (!in_data(ring, iov[i].iov_base, iov[i].iov_len, &o2)) {
					if (take)
						memcpy(iov[i].iov_base, ring->region + data, take);
					data += iov[i].iov_len;
				}
				left -= take;
			}
		}
		break;
	case UR_OP_STATX:
		if (p->dst && res >= 0)
			memcpy(p->dst, ring->region + p->stage, sizeof(struct ur_statx));
		break;
	default:
		break;
	}
	st_free(P, p->rec);
	cqe->user_data = p->user_data;
	p->busy = 0;
	p->next = P->free_head;
	P->free_head = (uint32_t)(p - P->pend);
	P->inflight--;
}

UR_EXPORT uint32_t __urfs_cq_collect(struct urfs_ring *ring)
{
	struct urfs_cq *cq = &ring->cq;
	struct urfs__priv *P = ring->priv;
	uint32_t tail = ur_load_acquire(cq->ktail);
	if (tail - cq->head > cq->ring_entries)   /* a broken server: take no more than fits */
		tail = cq->head + cq->ring_entries;
	if (ring->flags & URFS_SETUP_RAW) {
		P->inflight -= tail - cq->ready;
		cq->ready = tail;
		return tail;
	}
	while (cq->ready != tail) {
		struct ur_cqe *cqe = &cq->cqes[cq->ready & cq->ring_mask];
		uint64_t ud = cqe->user_data;
		uint32_t idx = (uint32_t)ud;
		if ((uint32_t)(ud >> 32) == URFS_TAG_HI && idx < P->npend && P->pend[idx].busy)
			complete(ring, cqe, &P->pend[idx]);
		cq->ready++;
	}
	return tail;
}

UR_EXPORT unsigned urfs_cq_ready(struct urfs_ring *ring)
{
	return __urfs_cq_collect(ring) - ring->cq.head;
}

/* Wake the server if it sleeps while SQEs wait (e.g. it slept on a full CQ). */
static void kick_if_needed(struct urfs_ring *ring)
{
	if (ur_load_acquire(ring->sq.ktail) != ur_load_acquire(ring->sq.khead) &&
	    (ur_load_relaxed(ring->sq.kflags) & UR_SQ_NEED_WAKEUP))
		kick(ring);
}

static int check_live(struct urfs_ring *ring, short revents)
{
	if (revents & (POLLHUP | POLLERR | POLLNVAL | POLLIN))
		ring->dead = 1;
	return ring->dead;
}

static int wait_ready_spin_sleep(struct urfs_ring *ring, unsigned nr, uint64_t deadline);

/* The server has been awake since this ring's SQEs went out (no doorbell
 * rung: a woken server's wake-up is the scheduler's time) and has not yet
 * taken them: it is busy on other rings (one turn each, round-robin) and comes
 * here next, so the wait is the server's CPU time, not a disk's. */
static int server_behind(struct urfs_ring *ring)
{
	return !ring->priv->rang &&
	       ur_load_acquire(ring->sq.ktail) != ur_load_acquire(ring->sq.khead) &&
	       !(ur_load_relaxed(ring->sq.kflags) & UR_SQ_NEED_WAKEUP);
}

/* Wait until nr CQEs are ready; deadline 0: none. 0, -ETIME or -EPIPE.
 * The CQ's owner_cpu hint says where the client spins only while it does. */
static int wait_ready(struct urfs_ring *ring, unsigned nr, uint64_t deadline)
{
	int r = wait_ready_spin_sleep(ring, nr, deadline);
	ring->priv->rang = 0;
	if (ur_load_relaxed(ring->cq.kcpu))
		ur_store_relaxed(ring->cq.kcpu, 0);
	return r;
}

static int wait_ready_spin_sleep(struct urfs_ring *ring, unsigned nr, uint64_t deadline)
{
	struct urfs_cq *cq = &ring->cq;
	struct urfs__priv *P = ring->priv;
	if (__urfs_cq_collect(ring) - cq->head >= nr)
		return 0;
	if (ring->dead)
		return -EPIPE;
	kick_if_needed(ring);
	/* Spin first, adaptively: waits that end while spinning let the next
	 * spin be longer (up to wait_spin); waits that end asleep (slow I/O,
	 * O_DIRECT) shorten it, so long waits cost no CPU and few syscalls. */
	uint64_t t0 = now_ns(), spin_end = t0 + P->spin_cur, last_yield = t0;
	uint32_t mycpu = (uint32_t)sched_getcpu() + 1;
	ur_store_relaxed(cq->kcpu, mycpu);
	for (unsigned i = 1;; i++) {
		ur_cpu_relax();
		if (__urfs_cq_collect(ring) - cq->head >= nr) {
			uint64_t grow = P->spin_cur + P->spin_cur / 2 + 1000;
			P->spin_cur = grow < P->wait_spin_ns ? grow : P->wait_spin_ns;
			return 0;
		}
		if (!(i & 31)) {
			uint64_t t = now_ns();
			if (P->held && urfs_submit(ring) < 0)
				return -EPIPE;
			if (deadline && t >= deadline)
				break;
			if (t >= spin_end && !(t - t0 < P->wait_spin_ns * WAIT_BEHIND_X &&
					       server_behind(ring)))
				break;
			/* The server runs on this very CPU: spinning only delays it. */
			if (ur_load_relaxed(ring->sq.kcpu) == mycpu) {
				sched_yield();
				mycpu = (uint32_t)sched_getcpu() + 1;
				ur_store_relaxed(cq->kcpu, mycpu);
				last_yield = t;
				continue;
			}
			/* More runnable threads than CPUs: the server may need ours. */
			if (t - t0 > YIELD_AFTER_NS && (last_yield == t0 || t - last_yield > YIELD_EVERY_NS)) {
				sched_yield();
				last_yield = t;
			}
		}
	}
	uint64_t floor = P->wait_spin_ns < MIN_SPIN_NS ? P->wait_spin_ns : MIN_SPIN_NS;
	P->spin_cur = P->spin_cur / 2 > floor ? P->spin_cur / 2 : floor;
	for (;;) {
		ur_fetch_or(cq->kflags, UR_CQ_NEED_WAKEUP);
		ur_smp_mb();
		if (__urfs_cq_collect(ring) - cq->head >= nr) {
			ur_fetch_and(cq->kflags, ~UR_CQ_NEED_WAKEUP);
			return 0;
		}
		if (P->held && urfs_submit(ring) < 0)
			return -EPIPE;
		kick_if_needed(ring);
		struct pollfd pf[2] = {
			{ .fd = ring->cq_fd, .events = POLLIN },
			{ .fd = ring->live_fd, .events = POLLIN },
		};
		struct timespec ts, *tsp = NULL;
		if (deadline) {
			uint64_t t = now_ns();
			uint64_t left = t < deadline ? deadline - t : 0;
			ts.tv_sec = (time_t)(left / 1000000000u);
			ts.tv_nsec = (long)(left % 1000000000u);
			tsp = &ts;
		}
		ur_store_relaxed(cq->kcpu, 0);      /* asleep: nobody to yield to */
		int r = ppoll(pf, 2, tsp, NULL);
		ur_fetch_and(cq->kflags, ~UR_CQ_NEED_WAKEUP);
		ur_store_relaxed(cq->kcpu, (uint32_t)sched_getcpu() + 1);
		if (r > 0 && (pf[0].revents & POLLIN)) {
			uint64_t v;
			if (read(ring->cq_fd, &v, sizeof(v)) < 0) {
				/* EAGAIN: consumed already */
			}
		}
		if (__urfs_cq_collect(ring) - cq->head >= nr)
			return 0;
		if (r > 0 && check_live(ring, pf[1].revents))
			return -EPIPE;
		if (deadline && now_ns() >= deadline)
			return -ETIME;
	}
}

static int head_cqe(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr)
{
	*cqe_ptr = &ring->cq.cqes[ring->cq.head & ring->cq.ring_mask];
	return 0;
}

UR_EXPORT int urfs_wait_cqe_nr(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr, unsigned wait_nr)
{
	*cqe_ptr = NULL;
	int r = wait_ready(ring, wait_nr ? wait_nr : 1, 0);
	if (r < 0)
		return r;
	return head_cqe(ring, cqe_ptr);
}

UR_EXPORT int urfs_wait_cqe(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr)
{
	return urfs_wait_cqe_nr(ring, cqe_ptr, 1);
}

UR_EXPORT int urfs_wait_cqe_timeout(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr, struct timespec *ts)
{
	*cqe_ptr = NULL;
	uint64_t deadline = 0;
	if (ts) {
		deadline = now_ns() + (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
		if (!deadline)
			deadline = 1;
	}
	int r = wait_ready(ring, 1, deadline);
	if (r < 0)
		return r;
	return head_cqe(ring, cqe_ptr);
}

UR_EXPORT int urfs_peek_cqe(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr)
{
	if (__urfs_cq_collect(ring) != ring->cq.head)
		return head_cqe(ring, cqe_ptr);
	*cqe_ptr = NULL;
	kick_if_needed(ring);
	return ring->dead ? -EPIPE : -EAGAIN;
}

UR_EXPORT unsigned urfs_peek_batch_cqe(struct urfs_ring *ring, struct urfs_cqe **cqes, unsigned count)
{
	uint32_t ready = __urfs_cq_collect(ring) - ring->cq.head;
	unsigned n = ready < count ? ready : count;
	for (unsigned i = 0; i < n; i++)
		cqes[i] = &ring->cq.cqes[(ring->cq.head + i) & ring->cq.ring_mask];
	if (!n)
		kick_if_needed(ring);
	return n;
}

UR_EXPORT int urfs_submit_and_wait(struct urfs_ring *ring, unsigned wait_nr)
{
	int n = urfs_submit(ring);
	if (n < 0 || !wait_nr)
		return n;
	int r = wait_ready(ring, wait_nr, 0);
	return r < 0 ? r : n;
}

/* ---------------------------------------------------------------------------
 * Registered buffers
 * ------------------------------------------------------------------------- */
static int sync_op(struct urfs_ring *ring, uint8_t op, const void *addr, uint32_t len)
{
	struct urfs_sqe *sqe = urfs_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	urfs_prep_rw(op, sqe, -1, addr, len, 0);
	int r = urfs_submit(ring);
	if (r < 0)
		return r;
	struct urfs_cqe *cqe;
	r = urfs_wait_cqe(ring, &cqe);
	if (r < 0)
		return r;
	r = cqe->res;
	urfs_cqe_seen(ring, cqe);
	return r;
}

static int quiet(struct urfs_ring *ring)
{
	return ring->priv->inflight == 0 && ring->sq.sqe_head == ring->sq.sqe_tail &&
	       __urfs_cq_collect(ring) == ring->cq.head;
}

UR_EXPORT int urfs_register_buffers(struct urfs_ring *ring, struct iovec *iovecs, unsigned nr)
{
	struct urfs__priv *P = ring->priv;
	if (nr == 0 || nr > UR_MAX_BUFS)
		return -EINVAL;
	if (P->nbufs || !quiet(ring))
		return -EBUSY;
	if (ring->flags & URFS_SETUP_RAW)
		return -EINVAL;
	uint64_t off = P->bufs_off;
	for (unsigned i = 0; i < nr; i++) {
		uint64_t l = align_up(iovecs[i].iov_len, 4096);
		if (!iovecs[i].iov_len || l > P->bufs_off + P->bufs_size - off)
			return -ENOMEM;
		off += l;
	}
	off = P->bufs_off;
	for (unsigned i = 0; i < nr; i++) {
		iovecs[i].iov_base = ring->region + off;
		off += align_up(iovecs[i].iov_len, 4096);
	}
	int r = sync_op(ring, UR_OP_REGISTER_BUFFERS, iovecs, nr);
	if (r < 0)
		return r;
	P->nbufs = nr;
	return 0;
}

UR_EXPORT int urfs_unregister_buffers(struct urfs_ring *ring)
{
	struct urfs__priv *P = ring->priv;
	if (!P->nbufs)
		return -ENXIO;
	if (!quiet(ring))
		return -EBUSY;
	int r = sync_op(ring, UR_OP_REGISTER_BUFFERS, NULL, 0);
	if (r < 0)
		return r;
	P->nbufs = 0;
	return 0;
}
