/* SPDX-License-Identifier: MIT */
/* Description: the lock table's bounds beyond one ring (see
 * docs/ABI.md "Locks", Limits): one process may attach many rings, so
 * records and queued LOCKs are bounded per client process
 * (UR_PROC_MAX_LOCKS, UR_PROC_MAX_LOCKWAITS) and per server
 * (UR_SERVER_MAX_LOCKS, UR_SERVER_MAX_LOCKWAITS) as well as per ring, all
 * with -ENOLCK. Through raw LOCK SQEs: three rings of this process fill
 * their records, the third stops at the process's bound (below its ring's),
 * and takes more once another ring of the process lets go; three forked
 * clients fill theirs to their process's bound and this process then stops
 * at the server's; when one of them is killed, its share comes back. The
 * same for queued LOCKs: two rings of a process stop at the process's bound,
 * two forked clients and this process at the server's, and a killed
 * client's waits give their room back. The server exits after the last
 * client, the image fsck-clean. */
#include "test_ur_locks.h"

#define IMG "lkb.sfs"
#define RING_RECS (UR_CLIENT_MAX_LOCKS - 1)      /* a LOCK needs room for two more */
#define PROC_RECS (UR_PROC_MAX_LOCKS - 1)
#define SERVER_RECS (UR_SERVER_MAX_LOCKS - 1)

/* A forked client: each child's pipe to us (its counts) and from us (go). */
struct child {
	pid_t pid;
	int up, down;
};

/* Fork a client that runs fn (in its own rings), writes its unsigned result
 * up the pipe, then waits for a byte (or the pipe's end) and exits. */
static struct child spawn(unsigned (*fn)(unsigned), unsigned arg)
{
	int up[2], down[2];
	if (pipe(up) < 0 || pipe(down) < 0)
		FAIL("pipe: %s", strerror(errno));
	struct child c;
	if ((c.pid = fork()) < 0)
		FAIL("fork: %s", strerror(errno));
	if (c.pid == 0) {
		close(up[0]);
		close(down[1]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		unsigned n = fn(arg);
		if (write(up[1], &n, sizeof(n)) != (ssize_t)sizeof(n))
			_exit(1);
		char b;
		(void)!read(down[0], &b, 1);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	c.up = up[0];
	c.down = down[1];
	return c;
}

static unsigned result(struct child *c)
{
	unsigned n;
	if (read(c->up, &n, sizeof(n)) != (ssize_t)sizeof(n))
		FAIL("client %d gave no result", (int)c->pid);
	return n;
}

static void kill_child(struct child *c)
{
	int st;
	kill(c->pid, SIGKILL);
	if (waitpid(c->pid, &st, 0) < 0)
		FAIL("waitpid: %s", strerror(errno));
	close(c->up);
	close(c->down);
}

/* A client process: three rings fill records on file "f" (each its own
 * span at base k): how many it holds in all. */
static unsigned fill_proc(unsigned k)
{
	static struct urfs_ring r[3];
	unsigned n = 0;
	for (unsigned i = 0; i < 3; i++) {
		lk_ring(&r[i], IMG);
		int fd = mp_open(&r[i], "f", URFS_O_CREAT);
		if (fd < 0)
			FAIL("open: %d", fd);
		n += lk_fill(&r[i], fd, ((uint64_t)k << 24) + ((uint64_t)i << 20), UR_CLIENT_MAX_LOCKS);
	}
	return n;
}

/* A client process: two rings queue LOCKs on "w" [0,1) (held by the
 * parent) until -ENOLCK: how many it queued (its waits stay). */
static unsigned wait_proc(unsigned k)
{
	static struct urfs_ring r[2];
	unsigned n = 0;
	(void)k;
	for (unsigned i = 0; i < 2; i++) {
		lk_ring(&r[i], IMG);
		int fd = mp_open(&r[i], "w", URFS_O_CREAT);
		if (fd < 0)
			FAIL("open: %d", fd);
		unsigned want = i ? UR_PROC_MAX_LOCKWAITS - UR_CLIENT_MAX_LOCKWAITS : UR_CLIENT_MAX_LOCKWAITS;
		lk_queue(&r[i], fd, 0, want);
		n += want;
	}
	if (lk_now(&r[1], UR_OP_LOCK, mp_open(&r[1], "w", URFS_O_CREAT), 0, 1, LK_W) != -ENOLCK)
		FAIL("a process queued more than UR_PROC_MAX_LOCKWAITS");
	return n;
}

static void records(void)
{
	struct urfs_ring a, b, c;
	lk_ring(&a, IMG);
	lk_ring(&b, IMG);
	lk_ring(&c, IMG);
	int fa = mp_open(&a, "f", URFS_O_CREAT), fb = mp_open(&b, "f", URFS_O_CREAT), fc = mp_open(&c, "f", URFS_O_CREAT);
	CHECK(fa >= 0 && fb >= 0 && fc >= 0);
	/* one process, three rings: the third stops at the process's bound */
	CHECK_EQ(lk_fill(&a, fa, 0, UR_CLIENT_MAX_LOCKS), RING_RECS);
	CHECK_EQ(lk_fill(&b, fb, 1u << 20, UR_CLIENT_MAX_LOCKS), RING_RECS);
	unsigned nc = lk_fill(&c, fc, 2u << 20, UR_CLIENT_MAX_LOCKS);
	CHECK_EQ(nc, PROC_RECS - 2 * RING_RECS);
	CHECK(nc < RING_RECS);
	/* a refused LOCK changed nothing: the range is free for another */
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, fa, 0, 2, 0), 0);
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, fa, (2u << 20) + 2 * (uint64_t)nc, 1, LK_EX), 0);
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, fa, (2u << 20) + 2 * (uint64_t)nc, 1, 0), 0);
	/* another ring of the process lets go: the third takes up to its ring's bound */
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, fa, 0, 0, 0), 0);
	CHECK_EQ(lk_fill(&c, fc, (2u << 20) + 2 * (uint64_t)nc, UR_CLIENT_MAX_LOCKS), RING_RECS - nc);
	CHECK_EQ(lk_now(&b, UR_OP_UNLOCK, fb, 0, 0, 0), 0);
	CHECK_EQ(lk_now(&c, UR_OP_UNLOCK, fc, 0, 0, 0), 0);
	printf("records: a process's rings stop at %u (its third ring at %u)\n", PROC_RECS, nc);

	/* three client processes at their bound: this one stops at the server's */
	struct child ch[3];
	for (unsigned k = 0; k < 3; k++) {
		ch[k] = spawn(fill_proc, k + 1);
		CHECK_EQ(result(&ch[k]), PROC_RECS);
	}
	unsigned na = lk_fill(&a, fa, 0, UR_CLIENT_MAX_LOCKS);
	CHECK_EQ(na, SERVER_RECS - 3 * PROC_RECS);
	CHECK(na < RING_RECS);
	/* a killed client's records go: room again, up to the ring's bound */
	kill_child(&ch[0]);
	unsigned more = 0;
	for (uint64_t end = mp_now_ms() + 5000; na + more < RING_RECS && mp_now_ms() < end;)
		more += lk_fill(&a, fa, 2 * (uint64_t)(na + more), UR_CLIENT_MAX_LOCKS);
	CHECK_EQ(na + more, RING_RECS);
	printf("records: the server stops at %u (this process at %u), a killed client's come back\n",
	       SERVER_RECS, na);
	kill_child(&ch[1]);
	kill_child(&ch[2]);
	urfs_queue_exit(&c);
	urfs_queue_exit(&b);
	urfs_queue_exit(&a);
}

static void waits(void)
{
	struct urfs_ring a, b, c, d;
	lk_ring(&a, IMG);
	int fa = mp_open(&a, "w", URFS_O_CREAT);
	CHECK(fa >= 0);
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, fa, 0, 1, LK_EX), 0);   /* everyone waits on it */
	/* one process: the second ring stops at the process's bound */
	lk_ring(&b, IMG);
	lk_ring(&c, IMG);
	int fb = mp_open(&b, "w", URFS_O_CREAT), fc = mp_open(&c, "w", URFS_O_CREAT);
	CHECK(fb >= 0 && fc >= 0);
	lk_queue(&b, fb, 0, UR_CLIENT_MAX_LOCKWAITS - 1);
	lk_queue(&c, fc, 0, UR_PROC_MAX_LOCKWAITS - (UR_CLIENT_MAX_LOCKWAITS - 1));
	CHECK_EQ(lk_now(&c, UR_OP_LOCK, fc, 0, 1, LK_W), -ENOLCK);
	CHECK_EQ(lk_now(&b, UR_OP_LOCK, fb, 0, 1, LK_W), -ENOLCK);   /* its ring has room */
	urfs_queue_exit(&c);                 /* its waits go: room again */
	lk_queue(&b, fb, 0, 1);
	urfs_queue_exit(&b);
	printf("waits: a process's rings stop at %u\n", UR_PROC_MAX_LOCKWAITS);

	/* two client processes at their bound: this one stops at the server's */
	struct child ch[2];
	for (unsigned k = 0; k < 2; k++) {
		ch[k] = spawn(wait_proc, k);
		CHECK_EQ(result(&ch[k]), UR_PROC_MAX_LOCKWAITS);
	}
	unsigned left = UR_SERVER_MAX_LOCKWAITS - 2 * UR_PROC_MAX_LOCKWAITS;
	CHECK(left < UR_PROC_MAX_LOCKWAITS && left <= 2 * UR_CLIENT_MAX_LOCKWAITS);
	lk_ring(&c, IMG);
	lk_ring(&d, IMG);
	fc = mp_open(&c, "w", URFS_O_CREAT);
	int fd = mp_open(&d, "w", URFS_O_CREAT);
	CHECK(fc >= 0 && fd >= 0);
	lk_queue(&c, fc, 0, left / 2);
	lk_queue(&d, fd, 0, left - left / 2);
	CHECK_EQ(lk_now(&d, UR_OP_LOCK, fd, 0, 1, LK_W), -ENOLCK);
	CHECK_EQ(lk_now(&c, UR_OP_LOCK, fc, 0, 1, LK_W), -ENOLCK);
	/* a killed client's waits go: room again */
	kill_child(&ch[0]);
	int32_t e = -ENOLCK;
	for (uint64_t end = mp_now_ms() + 5000; e == -ENOLCK && mp_now_ms() < end;)
		e = lk_res(&d, lk_submit(&d, UR_OP_LOCK, fd, 0, 1, LK_W), 100);
	CHECK_EQ(e, LK_NONE);                /* queued */
	printf("waits: the server stops at %u, a killed client's come back\n", UR_SERVER_MAX_LOCKWAITS);
	kill_child(&ch[1]);
	urfs_queue_exit(&d);
	urfs_queue_exit(&c);
	urfs_queue_exit(&a);
}

int main(void)
{
	alarm(240);
	int e = sfs_format(IMG, 16ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct urfs_ring keep;               /* the server lives through both parts */
	lk_ring(&keep, IMG);
	pid_t spid = keep.server_pid;
	records();
	waits();
	urfs_queue_exit(&keep);
	mp_server_gone(spid, IMG, 10000);
	FSCK_CLEAN(IMG);
	unlink(IMG);
	printf("ok\n");
	return 0;
}
