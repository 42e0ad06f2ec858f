/* SPDX-License-Identifier: MIT */
/*
 * test_ur_locks.h - byte-range lock helpers for the tests of the server's
 * lock table through raw LOCK / UNLOCK SQEs (docs/ABI.md "Locks"): a LOCK
 * or UNLOCK submitted with a user_data, the CQE of one user_data (others
 * that come first are kept for their turn, or fail the test with
 * lk_strict), a synchronous LOCK / UNLOCK,
 * and filling a handle with disjoint records until the server says
 * -ENOLCK. Header only, on top of test_ur_multi.h; every helper fails the
 * test (exit 1) on any surprise.
 */
#ifndef TEST_UR_LOCKS_H
#define TEST_UR_LOCKS_H

#include "test_ur_multi.h"

#define LK_NONE INT32_MIN               /* lk_res: no CQE came in time */
#define LK_EX 0u
#define LK_SH UR_LOCK_SHARED
#define LK_W  UR_LOCK_WAIT

static uint64_t lk_ud = 1;
static int lk_strict;                   /* 1: a CQE of another user_data fails */

/* CQEs reaped while waiting for another one, kept for their turn. */
static struct { const struct urfs_ring *r; uint64_t ud; int32_t res; } lk_kept[1024];
static unsigned lk_nkept;

/* Submit a LOCK (op UR_OP_LOCK, flags fl) or UNLOCK of [pos, pos+len) on
 * handle fd of r with user_data ud. */
static inline void lk_submit_ud(struct urfs_ring *r, int op, int fd, uint64_t pos, uint64_t len,
				unsigned fl, uint64_t ud)
{
	struct urfs_sqe *sqe = mp_sqe(r);
	if (op == UR_OP_LOCK)
		urfs_prep_lock(sqe, fd, pos, len, fl);
	else
		urfs_prep_unlock(sqe, fd, pos, len);
	urfs_sqe_set_data64(sqe, ud);
	if (urfs_submit(r) != 1)
		FAIL("submit");
}

/* The same with the next user_data: it. */
static inline uint64_t lk_submit(struct urfs_ring *r, int op, int fd, uint64_t pos, uint64_t len,
				 unsigned fl)
{
	uint64_t ud = lk_ud++;
	lk_submit_ud(r, op, fd, pos, len, fl, ud);
	return ud;
}

/* The res of r's CQE for ud within ms, or LK_NONE. */
static inline int32_t lk_res(struct urfs_ring *r, uint64_t ud, int ms)
{
	for (unsigned i = 0; i < lk_nkept; i++)
		if (lk_kept[i].r == r && lk_kept[i].ud == ud) {
			int32_t res = lk_kept[i].res;
			lk_kept[i] = lk_kept[--lk_nkept];
			return res;
		}
	uint64_t end = mp_now_ms() + (uint64_t)ms;
	for (;;) {
		struct urfs_cqe *cqe;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		int e = urfs_wait_cqe_timeout(r, &cqe, &ts);
		if (e == 0) {
			uint64_t got = cqe->user_data;
			int32_t res = cqe->res;
			urfs_cqe_seen(r, cqe);
			if (got == ud)
				return res;
			if (lk_strict)
				FAIL("CQE %llu (res %d) while waiting for %llu", (unsigned long long)got,
				     res, (unsigned long long)ud);
			if (lk_nkept == sizeof(lk_kept) / sizeof(lk_kept[0]))
				FAIL("too many CQEs kept");
			lk_kept[lk_nkept].r = r;
			lk_kept[lk_nkept].ud = got;
			lk_kept[lk_nkept++].res = res;
			continue;
		}
		if (e != -ETIME)
			FAIL("wait: %s", strerror(-e));
		if (mp_now_ms() >= end)
			return LK_NONE;
	}
}

/* A LOCK or UNLOCK that completes at once: its res. */
static inline int32_t lk_now(struct urfs_ring *r, int op, int fd, uint64_t pos, uint64_t len,
			     unsigned fl)
{
	int32_t res = lk_res(r, lk_submit(r, op, fd, pos, len, fl), 5000);
	if (res == LK_NONE)
		FAIL("%s %llu+%llu: no CQE", op == UR_OP_LOCK ? "LOCK" : "UNLOCK",
		     (unsigned long long)pos, (unsigned long long)len);
	return res;
}

/* Exclusive records [base + 2i, base + 2i + 1) on fd until -ENOLCK (at
 * most max): how many were taken. Any other error fails. */
static inline unsigned lk_fill(struct urfs_ring *r, int fd, uint64_t base, unsigned max)
{
	unsigned n;
	for (n = 0; n < max; n++) {
		int32_t e = lk_now(r, UR_OP_LOCK, fd, base + 2 * (uint64_t)n, 1, LK_EX);
		if (e == -ENOLCK)
			break;
		if (e)
			FAIL("record %u at %llu: %d", n, (unsigned long long)base, e);
	}
	return n;
}

/* A ring of 256 entries (its CQ has room for every wait a ring may queue). */
static inline void lk_ring(struct urfs_ring *r, const char *img)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = img;
	int e = urfs_queue_init_params(256, r, &p);
	if (e < 0)
		FAIL("ring on %s: %s (%s)", img, strerror(-e), p.errmsg);
}

/* Wait (at most 5 s) until the server has taken every SQE submitted on r. */
static inline void lk_sq_taken(struct urfs_ring *r)
{
	uint64_t end = mp_now_ms() + 5000;
	while (ur_load_acquire(r->sq.khead) != r->sq.sqe_tail) {
		if (mp_now_ms() > end)
			FAIL("the server does not take the SQEs");
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* Queue n waiting exclusive LOCKs of [pos, pos+1) on fd (blocked by someone):
 * the server has taken them all when this returns, none has completed. */
static inline void lk_queue(struct urfs_ring *r, int fd, uint64_t pos, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct urfs_sqe *sqe = mp_sqe(r);
		urfs_prep_lock(sqe, fd, pos, 1, LK_W);
		urfs_sqe_set_data64(sqe, lk_ud++);
		if (urfs_submit(r) != 1)
			FAIL("submit");
	}
	lk_sq_taken(r);
	struct urfs_cqe *cqe;
	if (urfs_peek_cqe(r, &cqe) == 0)
		FAIL("a queued LOCK completed: user_data %llu, res %d",
		     (unsigned long long)cqe->user_data, cqe->res);
}

#endif
