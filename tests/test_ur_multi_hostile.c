/* SPDX-License-Identifier: MIT */
/* Description: hostile clients on one server never stop it serving the
 * well-behaved ones. The test holds a ring (it starts the server); three attached
 * client processes attack: one submits 3000 SQEs of random bytes (each must
 * get exactly one CQE), one fills its SQ and CQ and never reaps, one corrupts
 * its SQ tail and CQ head (its ring must become BROKEN); and the test itself
 * sends the server bad attach requests on its socket: a silent connection,
 * a bad magic, no descriptors, five descriptors, a region not sealed against
 * shrinking, /dev/null doorbells, a header that fails the region check. Each
 * is refused with a reason. Then late attaches: PEND_MAX connections that
 * have not sent their attach message yet take every waiting slot; one more is
 * refused at once (-EAGAIN, "busy attaching others"), never left unanswered;
 * a waiting one that then sends a sound request is attached. Two rounds, in
 * the two halves of the monotonic clock's 2^31 ns cycle (a slot table read
 * past its end meets the timestamps beside it, whichever way their bits
 * fall). Then rings up to the server's 64: the 65th is refused with -EUSERS
 * (not served as if attached), and the place of one that left is taken
 * again. Refused attaches leave the server none of their descriptors.
 * Meanwhile two well-behaved client processes run
 * the verified workload of test_ur_multi.h and must finish; then everyone
 * leaves, the server exits 0, and the files are byte for byte right and the
 * image fsck-clean. */
#include <dirent.h>
#include "test_ur_multi.h"

#define IMG "h.sfs"
#define STEPS 300u
#define PEND_MAX 8      /* ABI.md: at most 8 connections wait for their attach message */

static void wait_byte(int fd)
{
	char b;
	if (read(fd, &b, 1) != 1)
		FAIL("pipe");
}

/* Attacker k: does its harm, says so on ready, waits for quit, leaves. */
static void attacker(int k, int ready, int quit)
{
	struct urfs_ring r;
	mp_ring(&r, IMG, URFS_SETUP_RAW);
	uint64_t seed = 0x1234567ull + (uint64_t)k;
	if (k == 0) {                             /* random bytes as SQEs */
		unsigned sent = 0, got = 0;
		while (sent < 3000) {
			unsigned b = 0;
			struct urfs_sqe *sqe;
			while (b < 16 && (sqe = urfs_get_sqe(&r))) {
				uint64_t w[8];
				for (int j = 0; j < 8; j++)
					w[j] = mp_rand(&seed);
				memcpy(sqe, w, sizeof(w));
				b++;
			}
			int e = urfs_submit_and_wait(&r, b);
			if (e < 0)
				FAIL("garbage submit: %s", strerror(-e));
			sent += b;
			struct urfs_cqe *cqe;
			while (got < sent && urfs_wait_cqe(&r, &cqe) == 0) {
				urfs_cqe_seen(&r, cqe);
				got++;
			}
		}
		if (got != sent)
			FAIL("garbage: %u CQEs for %u SQEs", got, sent);
		printf("attacker 0: %u random SQEs, %u CQEs\n", sent, got);
	} else if (k == 1) {                      /* fill SQ and CQ, never reap */
		for (int round = 0; round < 4; round++) {
			struct urfs_sqe *sqe;
			while ((sqe = urfs_get_sqe(&r)))
				urfs_prep_nop(sqe);
			if (urfs_submit(&r) < 0)
				FAIL("nop submit");
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		if (urfs_cq_ready(&r) != r.cq.ring_entries)
			FAIL("CQ not full: %u of %u", urfs_cq_ready(&r), r.cq.ring_entries);
	} else {                                  /* corrupt the counters */
		struct ur_region_hdr *h = (struct ur_region_hdr *)r.region;
		*r.sq.ktail += 0x40000000u;
		*r.cq.khead -= 0x1000u;
		uint64_t one = 1, end = mp_now_ms() + 5000;
		if (write(r.sq_fd, &one, sizeof(one)) < 0)
			FAIL("doorbell");
		while (__atomic_load_n(&h->server_state, __ATOMIC_ACQUIRE) != UR_STATE_BROKEN) {
			if (mp_now_ms() > end)
				FAIL("corrupted ring not BROKEN: state %u", h->server_state);
			struct timespec ts = { 0, 2 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	if (write(ready, "r", 1) != 1)
		FAIL("ready");
	wait_byte(quit);
	urfs_queue_exit(&r);
	exit(0);
}

/* Bit 31 of CLOCK_MONOTONIC in ns, the server's clock (now_ns) too. */
static int clock_half(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return (int)((ns >> 31) & 1);
}

static void late_attaches(void)
{
	int half = -1;
	for (int round = 0; round < 2; round++) {
		/* The next round in the other half of the cycle, and after the
		 * server has let go of this round's connections (closed, or
		 * UR_PEND_NS = 1 s after their accept at the latest). */
		if (round) {
			struct timespec ts = { 1, 200 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			while (clock_half() == half) {
				struct timespec t2 = { 0, 10 * 1000 * 1000 };
				nanosleep(&t2, NULL);
			}
		}
		half = clock_half();
		int c[PEND_MAX];
		for (int i = 0; i < PEND_MAX; i++)
			if ((c[i] = mp_connect(IMG)) < 0)
				FAIL("connect %d: %s", i, strerror(-c[i]));
		char why[256] = "";
		int extra = mp_connect(IMG);
		if (extra < 0)
			FAIL("connect: %s", strerror(-extra));
		int err = mp_attach_answer(extra, why, sizeof(why));
		if (err != -EAGAIN || !strstr(why, "busy attaching"))
			FAIL("round %d: attach with every waiting slot taken: answered %d '%s', want -EAGAIN "
			     "(busy attaching others)", round, err, why);
		close(extra);
		/* A waiting connection whose message comes late is served. */
		int k = round * 3;
		mp_attach_send(c[k], 7);
		why[0] = '\0';
		if ((err = mp_attach_answer(c[k], why, sizeof(why))) != 0)
			FAIL("round %d: late sound attach: answered %d '%s', want 0", round, err, why);
		for (int i = 0; i < PEND_MAX; i++)
			close(c[i]);
		printf("late attaches, round %d (clock half %d): one more refused (%s), a late one served\n",
		       round, half, strerror(EAGAIN));
	}
}

/* The server serves UR_MAX_CLIENTS (64) rings: with the holder and the three
 * attackers attached, this process takes the rest; the next is refused with
 * -EUSERS and the reason (urfs_queue_init(3)), never served as if attached;
 * once one leaves, its place is free again. */
static void too_many(void)
{
	static struct urfs_ring r[UR_MAX_CLIENTS];
	struct urfs_params p;
	unsigned n = 0;
	int e;
	for (;;) {
		memset(&p, 0, sizeof(p));
		p.image = IMG;
		if ((e = urfs_queue_init_params(4, &r[n], &p)) < 0)
			break;
		if (++n == UR_MAX_CLIENTS)
			FAIL("%u more rings attached beside 4: the server serves at most %u", n, UR_MAX_CLIENTS);
	}
	if (e != -EUSERS || !strstr(p.errmsg, "too many clients"))
		FAIL("ring %u: %s (%s), want %s (too many clients)", n + 4, strerror(-e), p.errmsg,
		     strerror(EUSERS));
	if (n + 4 != UR_MAX_CLIENTS)
		FAIL("refused after %u rings, want %u", n + 4, UR_MAX_CLIENTS);
	urfs_queue_exit(&r[--n]);
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	if ((e = urfs_queue_init_params(4, &r[n], &p)) < 0)
		FAIL("a ring in the place of one that left: %s (%s)", strerror(-e), p.errmsg);
	for (unsigned i = 0; i <= n; i++)
		urfs_queue_exit(&r[i]);
	printf("%u rings served, the next refused: %s\n", UR_MAX_CLIENTS, strerror(EUSERS));
}

/* Descriptors open in process pid. */
static int fds_of(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		FAIL("%s: %s", path, strerror(errno));
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A refused attach leaves the server no descriptor of it: neither the
 * connection nor those it passed (refused before ur_host_add, with 3 or 5
 * of them, or inside it). Its answer comes before it closes them: within
 * 2 s the server is back to as many descriptors as before. */
static void refusals_keep_nothing(pid_t spid)
{
	int n0 = fds_of(spid);
	static const int kinds[] = { 1, 3, 4, 5 };   /* mp_attach_send's */
	for (int i = 0; i < 4; i++) {
		char why[256] = "";
		int err = mp_attach_raw(IMG, kinds[i], why, sizeof(why));
		if (err >= 0)
			FAIL("bad attach %d: answered %d '%s', want a refusal", kinds[i], err, why);
	}
	int n = fds_of(spid);
	for (int t = 0; t < 200 && n != n0; t++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		n = fds_of(spid);
	}
	if (n != n0)
		FAIL("the server holds %d descriptors after 4 refused attaches, %d before", n, n0);
	printf("4 refused attaches: the server kept none of their descriptors (%d)\n", n);
}

int main(void)
{
	alarm(120);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		FAIL("subreaper");
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct urfs_ring holder;
	mp_ring(&holder, IMG, 0);
	pid_t spid = holder.server_pid;

	int ready[2], quit[2], rep[2], runp[2];
	if (pipe(ready) < 0 || pipe(quit) < 0 || pipe(rep) < 0 || pipe(runp) < 0)
		FAIL("pipe");
	fflush(stdout);
	pid_t att[3], good[2];
	for (int k = 0; k < 3; k++)
		if ((att[k] = fork()) == 0)
			attacker(k, ready[1], quit[0]);
	for (int k = 0; k < 3; k++)
		wait_byte(ready[0]);
	for (unsigned i = 0; i < 2; i++)
		if ((good[i] = fork()) == 0)
			mp_child(IMG, 2, i, STEPS, rep[1], -1, runp[0]);
	for (int i = 0; i < 2; i++) {
		int32_t p;
		if (read(rep[0], &p, sizeof(p)) != sizeof(p) || p != spid)
			FAIL("a good client is not on the holder's server %d", (int)spid);
	}
	if (write(runp[1], "gg", 2) != 2)
		FAIL("run");

	/* Bad attach requests while the good ones work. */
	char why[256];
	static const char *const kinds[] = { "silent", "bad magic", "no descriptors", "five descriptors",
					     "unsealed region", "/dev/null doorbells", "bad header" };
	for (int kind = 0; kind < 7; kind++) {
		why[0] = '\0';
		int err = mp_attach_raw(IMG, kind, why, sizeof(why));
		if (err >= 0)
			FAIL("attach with %s: answered %d '%s', want a refusal", kinds[kind], err, why);
		printf("attach with %s: refused, %s (%s)\n", kinds[kind], strerror(-err), why);
	}

	for (int i = 0; i < 2; i++) {
		int st;
		if (waitpid(good[i], &st, 0) != good[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("good client %d failed beside the attackers (status %#x)", i, st);
	}
	late_attaches();
	too_many();
	refusals_keep_nothing(spid);
	if (kill(spid, 0) < 0)
		FAIL("the server died");
	if (write(quit[1], "qqq", 3) != 3)
		FAIL("quit");
	for (int k = 0; k < 3; k++) {
		int st;
		if (waitpid(att[k], &st, 0) != att[k] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("attacker %d: status %#x", k, st);
	}
	urfs_queue_exit(&holder);
	if (kill(spid, 0) == 0 || errno != ESRCH)
		FAIL("server %d still there after the last client", (int)spid);
	int c = mp_connect(IMG);
	if (c != -ECONNREFUSED)
		FAIL("something still listens at the image's attach name (%d)", c);
	mp_verify(IMG, 2, STEPS, -1);
	printf("two clients verified beside three attackers and seven bad attaches\n");
	return 0;
}
