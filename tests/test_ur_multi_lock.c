/* SPDX-License-Identifier: MIT */
/* Description: byte-range locks kept by the server between clients
 * (UR_OP_LOCK / UR_OP_UNLOCK, docs/ABI.md "Locks"), with rings of this
 * process as clients A, B, C of one server and a forked client D. Try-locks:
 * exclusive vs shared, shared vs shared, adjacent ranges, a last byte, two
 * handles of one ring contend, other files do not, relocking converts (an
 * upgrade against another's shared lock is -EAGAIN), unlocking the middle of
 * a range splits it, len 0 reaches any offset. Waiting locks: no CQE while
 * held elsewhere, other clients (and the waiter's own ring) are served
 * meanwhile, the CQE comes when the holder unlocks; a two-client cycle is
 * -EDEADLK; closing the waiting handle completes its wait with -EBADF; 64
 * waits fill B's CQ room and B's next SQEs wait in the SQ until B reaps, no
 * completion lost. D holds a range and is killed (SIGKILL): A's waiting lock
 * is granted. Hostile requests (garbage handles, another ring's handle,
 * unknown flags, ranges past INT64_MAX, nonzero unused fields, a waiting
 * lock in a link, exclusive on a read-only handle, 5000 disjoint records:
 * -ENOLCK past UR_CLIENT_MAX_LOCKS, while 5000 adjacent ones merge; one
 * waiting lock more than UR_CLIENT_MAX_LOCKWAITS: -ENOLCK) get
 * their errors and change nobody's locks. The server exits after the last
 * client, the image fsck-clean. */
#include "test_ur_locks.h"

#define IMG "lk.sfs"

static int32_t lk(struct urfs_ring *r, int fd, uint64_t pos, uint64_t len, unsigned fl)
{
	return lk_now(r, UR_OP_LOCK, fd, pos, len, fl);
}

static int32_t unlk(struct urfs_ring *r, int fd, uint64_t pos, uint64_t len)
{
	return lk_res(r, lk_submit(r, UR_OP_UNLOCK, fd, pos, len, 0), 5000);
}

/* A raw SQE as given (the library does not translate LOCK/UNLOCK). */
static int32_t raw(struct urfs_ring *r, const struct urfs_sqe *q)
{
	struct urfs_sqe *sqe = mp_sqe(r);
	uint64_t ud = lk_ud++;
	*sqe = *q;
	sqe->user_data = ud;
	if (urfs_submit(r) != 1)
		FAIL("submit");
	return lk_res(r, ud, 5000);
}

#define EX 0u
#define SH URFS_LOCK_SHARED
#define W  URFS_LOCK_WAIT

static void try_locks(struct urfs_ring *a, struct urfs_ring *b, struct urfs_ring *c,
		      int fa, int fa2, int fb, int fc, int gb)
{
	CHECK_EQ(lk(a, fa, 0, 100, EX), 0);
	CHECK_EQ(lk(b, fb, 50, 10, SH), -EAGAIN);
	CHECK_EQ(lk(b, fb, 99, 1, EX), -EAGAIN);
	CHECK_EQ(lk(b, fb, 100, 50, EX), 0);                 /* adjacent */
	CHECK_EQ(lk(a, fa, 120, 1, SH), -EAGAIN);
	CHECK_EQ(lk(a, fa2, 0, 1, SH), -EAGAIN);             /* A's other handle contends */
	CHECK_EQ(lk(b, gb, 0, 0, EX), 0);                    /* another file: free */
	CHECK_EQ(unlk(a, fa, 0, 100), 0);
	CHECK_EQ(lk(b, fb, 0, 10, EX), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);
	CHECK_EQ(unlk(b, gb, 0, 0), 0);

	/* shared + shared; an upgrade against another's shared lock */
	CHECK_EQ(lk(a, fa, 0, 100, SH), 0);
	CHECK_EQ(lk(b, fb, 10, 100, SH), 0);
	CHECK_EQ(lk(c, fc, 50, 1, SH), 0);
	CHECK_EQ(lk(b, fb, 10, 10, EX), -EAGAIN);
	CHECK_EQ(lk(b, fb, 150, 10, EX), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);
	CHECK_EQ(unlk(c, fc, 0, 0), 0);
	CHECK_EQ(lk(a, fa, 0, 100, EX), 0);                  /* converts */
	CHECK_EQ(lk(b, fb, 0, 1, SH), -EAGAIN);
	CHECK_EQ(lk(a, fa, 0, 100, SH), 0);                  /* and back */
	CHECK_EQ(lk(b, fb, 0, 1, SH), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);

	/* unlocking the middle of a range */
	CHECK_EQ(lk(a, fa, 0, 300, EX), 0);
	CHECK_EQ(unlk(a, fa, 100, 100), 0);
	CHECK_EQ(lk(b, fb, 120, 10, EX), 0);
	CHECK_EQ(lk(b, fb, 50, 10, EX), -EAGAIN);
	CHECK_EQ(lk(b, fb, 250, 10, EX), -EAGAIN);
	CHECK_EQ(lk(b, fb, 299, 10, EX), -EAGAIN);
	CHECK_EQ(lk(b, fb, 300, 10, EX), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);

	/* len 0: to the end and beyond */
	CHECK_EQ(lk(a, fa, 1000, 0, EX), 0);
	CHECK_EQ(lk(b, fb, (uint64_t)INT64_MAX - 1, 1, SH), -EAGAIN);
	CHECK_EQ(lk(b, fb, 0, 1000, EX), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);
	printf("try-locks: ok\n");
}

static void waiting(struct urfs_ring *a, struct urfs_ring *b, struct urfs_ring *c,
		    int fa, int fb, int fc)
{
	/* B waits for A's range; B and C are served meanwhile */
	CHECK_EQ(lk(a, fa, 0, 10, EX), 0);
	uint64_t ud = lk_ud++;
	lk_submit_ud(b, UR_OP_LOCK, fb, 5, 10, W, ud);
	urfs_prep_nop(mp_sqe(c));
	CHECK_EQ(mp_wait1(c), 0);
	urfs_prep_nop(mp_sqe(b));
	CHECK_EQ(mp_wait1(b), 0);                            /* B's own ring goes on */
	CHECK_EQ(lk(c, fc, 0, 1, SH), -EAGAIN);              /* A's still */
	CHECK_EQ(lk(c, fc, 12, 1, SH), 0);                   /* B's is not granted ... */
	CHECK_EQ(unlk(c, fc, 0, 0), 0);
	CHECK_EQ(lk_res(b, ud, 100), INT32_MIN);            /* ... and has no CQE */
	CHECK_EQ(unlk(a, fa, 0, 10), 0);
	CHECK_EQ(lk_res(b, ud, 5000), 0);
	CHECK_EQ(lk(a, fa, 12, 1, SH), -EAGAIN);             /* B holds 5..15 now */
	CHECK_EQ(lk(a, fa, 15, 1, EX), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);

	/* a cycle: A waits for B, then B for A */
	CHECK_EQ(lk(a, fa, 0, 10, EX), 0);
	CHECK_EQ(lk(b, fb, 20, 10, EX), 0);
	ud = lk_ud++;
	lk_submit_ud(a, UR_OP_LOCK, fa, 20, 10, W, ud);
	CHECK_EQ(lk_res(a, ud, 50), INT32_MIN);
	CHECK_EQ(lk(b, fb, 0, 10, EX | W), -EDEADLK);
	CHECK_EQ(unlk(b, fb, 20, 10), 0);
	CHECK_EQ(lk_res(a, ud, 5000), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);
	printf("waiting locks: ok\n");
}

/* Until the server has taken every SQE of r (5 s at most). */
/* 64 waits fill B's CQ room (64 CQEs): B's 32 NOPs wait in the SQ; when A
 * unlocks, all 96 complete, none lost. */
static void cq_room(struct urfs_ring *a, struct urfs_ring *b, int fa, int fb)
{
	CHECK_EQ(lk(a, fa, 0, 0, EX), 0);
	unsigned cqn = b->cq.ring_entries;
	CHECK_EQ(cqn, 64);
	for (unsigned i = 0; i < cqn; i++) {
		struct urfs_sqe *sqe = mp_sqe(b);
		urfs_prep_lock(sqe, fb, i, 1, SH | W);
		urfs_sqe_set_data64(sqe, 1u << 20 | i);
		if (i % 16 == 15) {
			if (urfs_submit(b) != 16)
				FAIL("submit waits");
			lk_sq_taken(b);
		}
	}
	for (unsigned i = 0; i < 32; i++) {
		struct urfs_sqe *sqe = mp_sqe(b);
		urfs_prep_nop(sqe);
		urfs_sqe_set_data64(sqe, 2u << 20 | i);
	}
	CHECK_EQ(urfs_submit(b), 32);
	struct urfs_cqe *cqe;
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	CHECK_EQ(urfs_wait_cqe_timeout(b, &cqe, &ts), -ETIME);   /* nothing: all room owed */
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	uint8_t seen[96] = { 0 };
	uint64_t end = mp_now_ms() + 5000;
	for (unsigned got = 0; got < 96;) {
		int e = urfs_wait_cqe_timeout(b, &cqe, &ts);
		if (e == -ETIME && mp_now_ms() < end)
			continue;
		if (e < 0)
			FAIL("only %u of 96 CQEs: %s", got, strerror(-e));
		uint64_t u = cqe->user_data;
		unsigned k = (u >> 20) == 1 ? (unsigned)(u & 0xfffff) : (u >> 20) == 2 ? 64 + (unsigned)(u & 0xfffff) : 999;
		if (k >= 96 || seen[k] || cqe->res != 0)
			FAIL("CQE %#llx res %d", (unsigned long long)u, cqe->res);
		seen[k] = 1;
		got++;
		urfs_cqe_seen(b, cqe);
	}
	CHECK_EQ(lk(a, fa, 0, 1, EX), -EAGAIN);              /* B holds 0..64 shared */
	CHECK_EQ(lk(a, fa, 64, 1, EX), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);
	printf("CQ room: ok\n");
}

static void hostile(struct urfs_ring *a, struct urfs_ring *b, struct urfs_ring *c,
		    int fa, int fb, int fro)
{
	CHECK_EQ(lk(a, fa, 0, 10, EX), 0);                  /* must survive all this */
	CHECK_EQ(lk(b, fb, 100, 10, SH), 0);
	struct urfs_sqe q0, q;
	memset(&q0, 0, sizeof(q0));
	urfs_prep_lock(&q0, fb, 0, 10, 0);
	q = q0; q.fd = -1;                      CHECK_EQ(raw(b, &q), -EBADF);
	q = q0; q.fd = 9999;                    CHECK_EQ(raw(b, &q), -EBADF);
	q = q0; q.fd = fa;                      CHECK_EQ(raw(c, &q), -EBADF);   /* A's handle */
	q = q0; q.op_flags = 0x80;              CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.off = (uint64_t)INT64_MAX + 1; CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.off = 10; q.addr = (uint64_t)INT64_MAX - 9; CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.addr = UINT64_MAX;            CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.len = 1;                      CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.addr2 = 1;                    CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.buf_index = 1;                CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.reserved[1] = 1;              CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.op_flags = W; q.flags = URFS_IOSQE_IO_LINK; CHECK_EQ(raw(b, &q), -EINVAL);
	urfs_prep_nop(&q);                      CHECK_EQ(raw(b, &q), -ECANCELED);  /* its chain */
	q = q0; q.opcode = UR_OP_UNLOCK; q.op_flags = SH; CHECK_EQ(raw(b, &q), -EINVAL);
	q = q0; q.opcode = UR_OP_UNLOCK; q.fd = fa; CHECK_EQ(raw(b, &q), -EBADF);
	CHECK_EQ(lk(c, fro, 500, 1, EX), -EBADF);           /* read-only handle */
	CHECK_EQ(lk(c, fro, 500, 1, SH), 0);
	CHECK_EQ(unlk(c, fro, 0, 0), 0);
	/* bounded records: disjoint ones stop at the limit, adjacent ones merge */
	int32_t e = 0;
	unsigned n;
	CHECK_EQ(lk(b, fb, 900, 50, EX), 0);                 /* one record to split later */
	for (n = 0; n < 5000 && (e = lk(b, fb, 1000 + 2 * (uint64_t)n, 1, EX)) == 0; n++)
		;
	CHECK_EQ(e, -ENOLCK);
	if (n + 1 < UR_CLIENT_MAX_LOCKS - 4 || n >= UR_CLIENT_MAX_LOCKS)
		FAIL("ENOLCK after %u records", n);
	CHECK_EQ(lk(a, fa, 1000, 1, SH), -EAGAIN);
	/* at the limit: splits stop at UR_CLIENT_MAX_LOCKS, releasing never does */
	for (n = 0; n < 8 && (e = unlk(b, fb, 910 + 2 * (uint64_t)n, 1)) == 0; n++)
		;
	CHECK_EQ(e, -ENOLCK);
	CHECK(n >= 1);
	CHECK_EQ(lk(a, fa, 910 + 2 * (uint64_t)n, 1, SH), -EAGAIN);   /* the failed split changed nothing */
	CHECK_EQ(lk(a, fa, 910, 1, SH), 0);
	CHECK_EQ(unlk(a, fa, 910, 1), 0);
	CHECK_EQ(unlk(b, fb, 1000, 0), 0);
	CHECK_EQ(unlk(b, fb, 900, 50), 0);
	for (n = 0; n < 5000; n++)
		if ((e = lk(b, fb, 1000 + (uint64_t)n, 1, EX)) != 0)
			FAIL("adjacent record %u: %d", n, e);
	CHECK_EQ(lk(a, fa, 1000 + 4999, 1, SH), -EAGAIN);
	CHECK_EQ(lk(a, fa, 1000 + 5000, 1, SH), 0);
	CHECK_EQ(unlk(b, fb, 1000, 0), 0);
	CHECK_EQ(unlk(a, fa, 1000, 0), 0);
	/* bounded waits: a ring with room for more queues UR_CLIENT_MAX_LOCKWAITS */
	struct urfs_ring er;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	CHECK_EQ(urfs_queue_init_params(512, &er, &p), 0);
	int fe = mp_open(&er, "f", 0);
	CHECK(fe >= 0);
	for (unsigned i = 0; i < UR_CLIENT_MAX_LOCKWAITS; i++) {
		struct urfs_sqe *sqe = mp_sqe(&er);
		urfs_prep_lock(sqe, fe, 0, 1, W);
		urfs_sqe_set_data64(sqe, 7u << 20 | i);
	}
	CHECK_EQ(urfs_submit(&er), UR_CLIENT_MAX_LOCKWAITS);
	lk_sq_taken(&er);
	CHECK_EQ(lk(&er, fe, 0, 1, W), -ENOLCK);
	urfs_queue_exit(&er);                /* its waits go without CQEs */
	CHECK_EQ(lk(b, fb, 0, 1, SH), -EAGAIN);                /* A's 0..10 still */
	/* nobody's locks changed */
	CHECK_EQ(lk(c, fro, 5, 1, SH), -EAGAIN);
	CHECK_EQ(lk(c, fro, 105, 1, SH), 0);
	CHECK_EQ(lk(a, fa, 105, 1, EX), -EAGAIN);
	CHECK_EQ(unlk(c, fro, 0, 0), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	CHECK_EQ(unlk(b, fb, 0, 0), 0);
	printf("hostile requests: ok\n");
}

/* A closed handle's wait completes with -EBADF; its locks go. */
static void close_waiting(struct urfs_ring *a, struct urfs_ring *b, int fa)
{
	int fb2 = mp_open(b, "f", 0);
	CHECK(fb2 >= 0);
	CHECK_EQ(lk(b, fb2, 50, 10, EX), 0);
	CHECK_EQ(lk(a, fa, 0, 10, EX), 0);
	uint64_t ud = lk_ud++;
	lk_submit_ud(b, UR_OP_LOCK, fb2, 0, 10, W, ud);
	CHECK_EQ(lk_res(b, ud, 50), INT32_MIN);
	struct urfs_sqe *sqe = mp_sqe(b);
	urfs_prep_close(sqe, fb2);
	urfs_sqe_set_data64(sqe, ud + 1);
	CHECK_EQ(urfs_submit(b), 1);
	CHECK_EQ(lk_res(b, ud, 5000), -EBADF);
	CHECK_EQ(lk_res(b, ud + 1, 5000), 0);
	lk_ud++;
	CHECK_EQ(lk(a, fa, 50, 10, EX), 0);                  /* fb2's lock went with it */
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	printf("close of a waiting handle: ok\n");
}

/* D (a forked client) holds 5000..5010 and is killed: A's wait is granted. */
static void killed_holder(struct urfs_ring *a, int fa)
{
	int p[2];
	CHECK(pipe(p) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct urfs_ring d;
		mp_ring(&d, IMG, 0);
		int fd = mp_open(&d, "f", 0);
		char x = lk(&d, fd, 5000, 10, EX) == 0 ? 'l' : 'e';
		if (write(p[1], &x, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	char x = 0;
	CHECK(read(p[0], &x, 1) == 1 && x == 'l');
	CHECK_EQ(lk(a, fa, 5009, 1, SH), -EAGAIN);
	uint64_t ud = lk_ud++;
	lk_submit_ud(a, UR_OP_LOCK, fa, 4000, 2000, W, ud);
	CHECK_EQ(lk_res(a, ud, 100), INT32_MIN);
	kill(pid, SIGKILL);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK_EQ(lk_res(a, ud, 5000), 0);
	CHECK_EQ(unlk(a, fa, 0, 0), 0);
	close(p[0]);
	close(p[1]);
	printf("killed holder: ok\n");
}

int main(void)
{
	alarm(120);
	setvbuf(stdout, NULL, _IONBF, 0);
	lk_strict = 1;
	struct urfs_ring a, b, c;
	pid_t spid = mp_three_rings(IMG, 64, &a, &b, &c);
	int fa = mp_open(&a, "f", URFS_O_CREAT);
	int fa2 = mp_open(&a, "f", 0);
	int fb = mp_open(&b, "f", 0);
	int fc = mp_open(&c, "f", 0);
	int gb = mp_open(&b, "g", URFS_O_CREAT);
	int fro = mp_open(&c, "f", URFS_O_RDONLY);
	if (fa < 0 || fa2 < 0 || fb < 0 || fc < 0 || gb < 0 || fro < 0)
		FAIL("opens: %d %d %d %d %d %d", fa, fa2, fb, fc, gb, fro);

	try_locks(&a, &b, &c, fa, fa2, fb, fc, gb);
	waiting(&a, &b, &c, fa, fb, fc);
	cq_room(&a, &b, fa, fb);
	hostile(&a, &b, &c, fa, fb, fro);
	close_waiting(&a, &b, fa);
	killed_holder(&a, fa);

	/* B leaves holding a lock: A gets it */
	CHECK_EQ(lk(&b, fb, 0, 0, EX), 0);
	CHECK_EQ(lk(&a, fa, 7, 1, SH), -EAGAIN);
	urfs_queue_exit(&b);
	CHECK_EQ(lk(&a, fa, 7, 1, SH), 0);
	urfs_queue_exit(&c);
	urfs_queue_exit(&a);
	mp_server_gone(spid, IMG, 10000);
	FSCK_CLEAN(IMG);
	unlink(IMG);
	printf("ok\n");
	return 0;
}
