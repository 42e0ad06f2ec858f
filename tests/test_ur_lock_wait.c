/* SPDX-License-Identifier: MIT */
/* Description: how a waiting byte-range lock ends (see
 * docs/ABI.md "Locks"), through raw LOCK / UNLOCK / ASYNC_CANCEL SQEs on
 * rings of this process, clients A, B, C of one server. Deadlock: a
 * three-way case (A, B, C hold [0,1), [1,2), [2,3); B waits on C, then on A;
 * A's wait on B is -EDEADLK, and after C and then A unlock, both of B's
 * waits are granted: nobody waits for ever; and again with B's two waits
 * queued in the other order), a cycle through a blocker that
 * is not the first one that conflicts, and a cycle of 20 handles. Timeout
 * (SQE addr2, ns): -ETIMEDOUT no sooner than asked and while the server is
 * asleep, the earlier of two deadlines first, nothing left queued (a later
 * unlock grants it nothing, a later lock gets the range), a grant before the
 * deadline leaves no late CQE, UINT64_MAX does not wrap, a silent connection
 * on the server's socket is let go after 1 s while the server sleeps until a
 * far deadline (not kept until it), a timeout without
 * WAIT or on UNLOCK is -EINVAL. Cancel: the wait's CQE is -ECANCELED and the
 * cancel's 0, nothing left queued (nor a timeout later); an unknown
 * user_data, a granted one and another ring's wait are -ENOENT (that wait
 * goes on), and a ring's cancel ends its own wait, not another ring's with
 * the same user_data in the server; nonzero fields -EINVAL. Closing a handle
 * (the server's handle 0) leaves the lock and the wait of the ring's other
 * handle of the file as they were. The server exits after the last client,
 * the image fsck-clean. */
#include "test_ur_multi.h"

#define IMG "lkw.sfs"
#define NONE INT32_MIN
#define MS 1000000ull

static uint64_t ud_next = 1;

/* CQEs reaped while waiting for another one, kept for their turn. */
static struct { uint64_t ud; int32_t res; } kept[256];
static unsigned nkept;

static uint64_t submit_q(struct urfs_ring *r, const struct urfs_sqe *q)
{
	struct urfs_sqe *sqe = mp_sqe(r);
	uint64_t ud = ud_next++;
	*sqe = *q;
	sqe->user_data = ud;
	if (urfs_submit(r) != 1)
		FAIL("submit");
	return ud;
}

/* A raw LOCK (timeout_ns in addr2), UNLOCK or ASYNC_CANCEL; its user_data. */
static uint64_t lock_q(struct urfs_ring *r, int fd, uint64_t pos, uint64_t len, unsigned fl,
		       uint64_t timeout_ns)
{
	struct urfs_sqe q = { .opcode = UR_OP_LOCK, .fd = fd, .off = pos, .addr = len,
			      .op_flags = fl, .addr2 = timeout_ns };
	return submit_q(r, &q);
}

static uint64_t unlock_q(struct urfs_ring *r, int fd, uint64_t pos, uint64_t len)
{
	struct urfs_sqe q = { .opcode = UR_OP_UNLOCK, .fd = fd, .off = pos, .addr = len };
	return submit_q(r, &q);
}

static uint64_t cancel_q(struct urfs_ring *r, uint64_t target)
{
	struct urfs_sqe q = { .opcode = UR_OP_ASYNC_CANCEL, .fd = -1, .addr = target };
	return submit_q(r, &q);
}

/* The res of ud's CQE on r within ms, or NONE; others are kept. */
static int32_t res_of(struct urfs_ring *r, uint64_t ud, int ms)
{
	uint64_t end = mp_now_ms() + (uint64_t)ms;
	for (;;) {
		for (unsigned i = 0; i < nkept; i++)
			if (kept[i].ud == ud) {
				int32_t res = kept[i].res;
				kept[i] = kept[--nkept];
				return res;
			}
		struct urfs_cqe *cqe;
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		int e = urfs_wait_cqe_timeout(r, &cqe, &ts);
		if (e == 0) {
			if (nkept == sizeof(kept) / sizeof(kept[0]))
				FAIL("too many CQEs");
			kept[nkept].ud = cqe->user_data;
			kept[nkept++].res = cqe->res;
			urfs_cqe_seen(r, cqe);
			continue;
		}
		if (e != -ETIME)
			FAIL("wait: %s", strerror(-e));
		if (mp_now_ms() >= end)
			return NONE;
	}
}

#define DONE(r, ud) res_of(r, ud, 5000)
#define EX 0u
#define SH URFS_LOCK_SHARED
#define W  URFS_LOCK_WAIT

static void no_cqes_left(void)
{
	if (nkept)
		FAIL("%u CQEs nobody asked for (the first: %llu, res %d)", nkept,
		     (unsigned long long)kept[0].ud, kept[0].res);
}

static void deadlocks(struct urfs_ring *a, struct urfs_ring *b, struct urfs_ring *c,
		      int fa, int fb, int fc)
{
	/* the three-way case */
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 1, EX, 0)), 0);
	CHECK_EQ(DONE(b, lock_q(b, fb, 1, 1, EX, 0)), 0);
	CHECK_EQ(DONE(c, lock_q(c, fc, 2, 1, EX, 0)), 0);
	uint64_t bc = lock_q(b, fb, 2, 1, EX | W, 0);
	uint64_t ba = lock_q(b, fb, 0, 1, EX | W, 0);
	CHECK_EQ(res_of(b, bc, 50), NONE);
	CHECK_EQ(res_of(b, ba, 1), NONE);
	CHECK_EQ(DONE(a, lock_q(a, fa, 1, 1, EX | W, 0)), -EDEADLK);
	CHECK_EQ(DONE(c, unlock_q(c, fc, 0, 0)), 0);
	CHECK_EQ(DONE(b, bc), 0);
	CHECK_EQ(res_of(b, ba, 50), NONE);
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(DONE(b, ba), 0);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);

	/* the same with B's waits queued the other way round (on A, then on C):
	 * the cycle runs through B's older wait, whichever order the server
	 * keeps a handle's waits in */
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 1, EX, 0)), 0);
	CHECK_EQ(DONE(b, lock_q(b, fb, 1, 1, EX, 0)), 0);
	CHECK_EQ(DONE(c, lock_q(c, fc, 2, 1, EX, 0)), 0);
	ba = lock_q(b, fb, 0, 1, EX | W, 0);
	bc = lock_q(b, fb, 2, 1, EX | W, 0);
	CHECK_EQ(res_of(b, ba, 50), NONE);
	CHECK_EQ(res_of(b, bc, 1), NONE);
	CHECK_EQ(DONE(a, lock_q(a, fa, 1, 1, EX | W, 0)), -EDEADLK);
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(DONE(b, ba), 0);
	CHECK_EQ(res_of(b, bc, 50), NONE);
	CHECK_EQ(DONE(c, unlock_q(c, fc, 0, 0)), 0);
	CHECK_EQ(DONE(b, bc), 0);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);

	/* the cycle runs through a blocker that is not the first that conflicts:
	 * B and C share [1,2) (B's record is met first), C waits on A */
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 1, EX, 0)), 0);
	CHECK_EQ(DONE(c, lock_q(c, fc, 1, 1, SH, 0)), 0);
	CHECK_EQ(DONE(b, lock_q(b, fb, 1, 1, SH, 0)), 0);
	uint64_t ca = lock_q(c, fc, 0, 1, SH | W, 0);
	CHECK_EQ(res_of(c, ca, 50), NONE);
	CHECK_EQ(DONE(a, lock_q(a, fa, 1, 1, EX | W, 0)), -EDEADLK);
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(DONE(c, ca), 0);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);
	CHECK_EQ(DONE(c, unlock_q(c, fc, 0, 0)), 0);

	/* a cycle of 20 handles of A: h[i] holds [i,i+1) and waits on h[i-1];
	 * h[0]'s wait on h[19] closes it */
	enum { N = 20 };
	int h[N];
	uint64_t wud[N];
	for (int i = 0; i < N; i++) {
		h[i] = mp_open(a, "f", 0);
		CHECK(h[i] >= 0);
		CHECK_EQ(DONE(a, lock_q(a, h[i], (uint64_t)i, 1, EX, 0)), 0);
	}
	for (int i = 1; i < N; i++)
		wud[i] = lock_q(a, h[i], (uint64_t)i - 1, 1, EX | W, 0);
	CHECK_EQ(DONE(a, lock_q(a, h[0], N - 1, 1, EX | W, 0)), -EDEADLK);
	for (int i = 1; i < N; i++)
		CHECK_EQ(res_of(a, wud[i], 0), NONE);
	/* unwound in order: each release grants the next wait */
	for (int i = 0; i < N; i++) {
		if (i)
			CHECK_EQ(DONE(a, wud[i]), 0);
		CHECK_EQ(DONE(a, unlock_q(a, h[i], 0, 0)), 0);
	}
	for (int i = 0; i < N; i++)
		CHECK_EQ(mp_fd_op(a, 0, h[i]), 0);
	no_cqes_left();
	printf("deadlocks: ok\n");
}

static void timeouts(struct urfs_ring *a, struct urfs_ring *b, struct urfs_ring *c,
		     int fa, int fb, int fc)
{
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 10, EX, 0)), 0);
	/* times out no sooner than asked; the server sleeps meanwhile */
	uint64_t t0 = mp_now_ms();
	uint64_t w1 = lock_q(b, fb, 0, 10, EX | W, 200 * MS);
	CHECK_EQ(res_of(b, w1, 150), NONE);
	CHECK_EQ(res_of(b, w1, 2000), -ETIMEDOUT);
	uint64_t took = mp_now_ms() - t0;
	if (took < 200)
		FAIL("timed out after %llu ms of 200", (unsigned long long)took);
	/* nothing left queued: A's unlock grants B nothing, C gets the range */
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(res_of(b, w1, 50), NONE);
	CHECK_EQ(DONE(c, lock_q(c, fc, 0, 10, EX, 0)), 0);
	CHECK_EQ(DONE(c, unlock_q(c, fc, 0, 0)), 0);

	/* two deadlines, the later one queued first */
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 10, EX, 0)), 0);
	t0 = mp_now_ms();
	uint64_t late = lock_q(b, fb, 0, 1, EX | W, 400 * MS);
	uint64_t early = lock_q(c, fc, 5, 1, SH | W, 100 * MS);
	CHECK_EQ(DONE(c, early), -ETIMEDOUT);
	took = mp_now_ms() - t0;
	if (took < 100 || took >= 400)
		FAIL("the 100 ms wait timed out after %llu ms", (unsigned long long)took);
	CHECK_EQ(res_of(b, late, 0), NONE);
	CHECK_EQ(DONE(b, late), -ETIMEDOUT);
	if (mp_now_ms() - t0 < 400)
		FAIL("the 400 ms wait timed out early");

	/* granted before its deadline: no late CQE */
	uint64_t g = lock_q(b, fb, 0, 1, EX | W, 150 * MS);
	CHECK_EQ(res_of(b, g, 20), NONE);
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(DONE(b, g), 0);
	CHECK_EQ(res_of(b, g, 400), NONE);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);

	/* asleep until a far deadline, the server still lets go of a silent
	 * connection on its socket after UR_PEND_NS (1 s; ABI.md "Attaching"):
	 * it wakes for it, not only at the lock wait's timeout */
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 10, EX, 0)), 0);
	uint64_t far = lock_q(b, fb, 0, 1, EX | W, 60000 * MS);
	CHECK_EQ(res_of(b, far, 50), NONE);
	int silent = mp_connect(IMG);
	if (silent < 0)
		FAIL("connect: %s", strerror(-silent));
	struct pollfd sp = { .fd = silent, .events = POLLIN };
	if (poll(&sp, 1, 10000) != 1)
		FAIL("a silent connection kept 10 s while the server sleeps until a lock timeout");
	close(silent);
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(DONE(b, far), 0);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);

	/* the largest timeout does not wrap to "now" */
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 10, EX, 0)), 0);
	uint64_t big = lock_q(b, fb, 0, 1, EX | W, UINT64_MAX);
	CHECK_EQ(res_of(b, big, 100), NONE);
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(DONE(b, big), 0);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);

	/* a timeout means nothing without WAIT, and nothing to UNLOCK */
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 10, EX, 1)), -EINVAL);
	struct urfs_sqe q = { .opcode = UR_OP_UNLOCK, .fd = fa, .addr2 = 1 };
	CHECK_EQ(DONE(a, submit_q(a, &q)), -EINVAL);
	/* the library's helper fills the same fields */
	struct urfs_sqe h;
	urfs_prep_lock_timeout(&h, fa, 3, 4, SH, 5);
	CHECK(h.opcode == UR_OP_LOCK && h.fd == fa && h.off == 3 && h.addr == 4 &&
	      h.op_flags == (SH | W) && h.addr2 == 5);
	no_cqes_left();
	printf("timeouts: ok\n");
}

static void cancels(struct urfs_ring *a, struct urfs_ring *b, struct urfs_ring *c,
		    int fa, int fb, int fc)
{
	CHECK_EQ(DONE(a, lock_q(a, fa, 0, 10, EX, 0)), 0);
	/* a queued wait (with a timeout, which must not fire later either) */
	uint64_t w = lock_q(b, fb, 0, 10, EX | W, 300 * MS);
	CHECK_EQ(res_of(b, w, 30), NONE);
	uint64_t k = cancel_q(b, w);
	CHECK_EQ(DONE(b, w), -ECANCELED);
	CHECK_EQ(DONE(b, k), 0);
	CHECK_EQ(DONE(a, unlock_q(a, fa, 0, 0)), 0);
	CHECK_EQ(DONE(c, lock_q(c, fc, 0, 10, EX, 0)), 0);     /* B got nothing */
	CHECK_EQ(res_of(b, w, 400), NONE);                     /* nor a timeout */
	CHECK_EQ(DONE(b, cancel_q(b, w)), -ENOENT);            /* gone */
	CHECK_EQ(DONE(b, cancel_q(b, 987654321)), -ENOENT);

	/* another ring cannot cancel B's wait; a granted one is not cancellable */
	w = lock_q(b, fb, 0, 1, SH | W, 0);
	CHECK_EQ(res_of(b, w, 30), NONE);
	CHECK_EQ(DONE(a, cancel_q(a, w)), -ENOENT);
	CHECK_EQ(DONE(c, unlock_q(c, fc, 0, 0)), 0);
	CHECK_EQ(DONE(b, w), 0);
	CHECK_EQ(DONE(b, cancel_q(b, w)), -ENOENT);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);

	/* each ring cancels only its own: fresh rings D and E (each has done
	 * one OPENAT, so each puts its wait in its library's slot 0 and the
	 * server sees one user_data for both), E's queued first: D's cancel
	 * ends D's */
	struct urfs_ring d, e;
	mp_ring(&d, IMG, 0);
	mp_ring(&e, IMG, 0);
	int fd = mp_open(&d, "f", 0), fe = mp_open(&e, "f", 0);
	CHECK(fd >= 0 && fe >= 0);
	CHECK_EQ(DONE(c, lock_q(c, fc, 0, 10, EX, 0)), 0);
	uint64_t we = lock_q(&e, fe, 0, 1, EX | W, 0);
	CHECK_EQ(res_of(&e, we, 30), NONE);                    /* queued first */
	uint64_t wd = lock_q(&d, fd, 1, 1, EX | W, 0);
	CHECK_EQ(res_of(&d, wd, 30), NONE);
	k = cancel_q(&d, wd);
	CHECK_EQ(DONE(&d, wd), -ECANCELED);
	CHECK_EQ(DONE(&d, k), 0);
	CHECK_EQ(res_of(&e, we, 50), NONE);
	CHECK_EQ(DONE(c, unlock_q(c, fc, 0, 0)), 0);
	CHECK_EQ(DONE(&e, we), 0);
	urfs_queue_exit(&e);
	urfs_queue_exit(&d);

	/* malformed cancels */
	struct urfs_sqe q0 = { .opcode = UR_OP_ASYNC_CANCEL, .fd = -1, .addr = 1 }, q;
	q = q0; q.fd = 0;        CHECK_EQ(DONE(b, submit_q(b, &q)), -EINVAL);
	q = q0; q.op_flags = 1;  CHECK_EQ(DONE(b, submit_q(b, &q)), -EINVAL);
	q = q0; q.off = 1;       CHECK_EQ(DONE(b, submit_q(b, &q)), -EINVAL);
	q = q0; q.len = 1;       CHECK_EQ(DONE(b, submit_q(b, &q)), -EINVAL);
	q = q0; q.addr2 = 1;     CHECK_EQ(DONE(b, submit_q(b, &q)), -EINVAL);
	q = q0; q.buf_index = 1; CHECK_EQ(DONE(b, submit_q(b, &q)), -EINVAL);
	struct urfs_sqe h;
	urfs_prep_cancel64(&h, 42, 0);
	CHECK(h.opcode == UR_OP_ASYNC_CANCEL && h.fd == -1 && h.addr == 42 && !h.op_flags);
	no_cqes_left();
	printf("cancels: ok\n");
}

/* Closing a handle ends its own locks and waits, not those of the ring's
 * other handles: a closes fa (the server's first handle, 0) while its second
 * handle of the file holds one range and waits for another. */
static void close_one_handle(struct urfs_ring *a, struct urfs_ring *b, struct urfs_ring *c,
			     int fa, int fb, int fc)
{
	int fa2 = mp_open(a, "f", 0);
	if (fa2 < 0)
		FAIL("open a second handle: %d", fa2);
	printf("a's handles: %d and %d\n", fa, fa2);
	CHECK_EQ(DONE(a, lock_q(a, fa2, 200, 1, EX, 0)), 0);
	CHECK_EQ(DONE(c, lock_q(c, fc, 300, 1, EX, 0)), 0);
	uint64_t w = lock_q(a, fa2, 300, 1, EX | W, 0);
	CHECK_EQ(res_of(a, w, 50), NONE);
	struct urfs_sqe q = { .opcode = UR_OP_CLOSE, .fd = fa };
	CHECK_EQ(DONE(a, submit_q(a, &q)), 0);
	CHECK_EQ(res_of(a, w, 50), NONE);                              /* still waiting */
	CHECK_EQ(DONE(b, lock_q(b, fb, 200, 1, SH, 0)), -EAGAIN);      /* still held */
	CHECK_EQ(DONE(c, unlock_q(c, fc, 300, 1)), 0);
	CHECK_EQ(DONE(a, w), 0);
	CHECK_EQ(DONE(a, unlock_q(a, fa2, 0, 0)), 0);
	CHECK_EQ(DONE(b, lock_q(b, fb, 200, 101, EX, 0)), 0);
	CHECK_EQ(DONE(b, unlock_q(b, fb, 0, 0)), 0);
	no_cqes_left();
}

int main(void)
{
	alarm(120);
	setvbuf(stdout, NULL, _IONBF, 0);
	struct urfs_ring a, b, c;
	pid_t spid = mp_three_rings(IMG, 16, &a, &b, &c);
	int fa = mp_open(&a, "f", URFS_O_CREAT);
	int fb = mp_open(&b, "f", 0);
	int fc = mp_open(&c, "f", 0);
	if (fa < 0 || fb < 0 || fc < 0)
		FAIL("opens: %d %d %d", fa, fb, fc);

	deadlocks(&a, &b, &c, fa, fb, fc);
	timeouts(&a, &b, &c, fa, fb, fc);
	cancels(&a, &b, &c, fa, fb, fc);
	close_one_handle(&a, &b, &c, fa, fb, fc);

	urfs_queue_exit(&c);
	urfs_queue_exit(&b);
	urfs_queue_exit(&a);
	mp_server_gone(spid, IMG, 10000);
	FSCK_CLEAN(IMG);
	unlink(IMG);
	printf("ok\n");
	return 0;
}
