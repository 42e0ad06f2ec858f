/* SPDX-License-Identifier: MIT */
/* Description: the server's hand-over rule (src/server/spin.c, docs/ABI.md
 * "Wakeups"): the server gives up its CPU to a client that has waited
 * UR_HANDOVER_NS on that very CPU for CQEs it has not reaped, once per batch
 * of CQEs. In-process, on the rule itself: not before the wait is long
 * enough, then once, not again for the same CQEs, again for a new batch;
 * never for a client on another CPU, asleep (hint 0), with nothing to reap,
 * or when the server's CPU is unknown; a wait broken by a reap starts over;
 * a client that never reaps while CQEs keep coming gets at most one
 * hand-over per UR_HANDOVER_NS. Then real servers, started with --stats
 * (the count of hand-overs): a client pinned to another CPU than its server
 * gets none in a second of NOPs (its round trip stays the spinning one); a
 * client pinned to the server's CPU, while a second client on another CPU
 * keeps 16 NOPs in flight so the server never idles, gets some. No time is
 * asserted. Needs two CPUs for the second part (skipped otherwise).
 * Serial: pins threads to CPUs (PIN_CPU) and needs both CPUs (tests/run.sh runs it alone).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "test_ur_stats.h"
#include "ur_fs.h"
#include "sfs.h"
#include "../src/server/server.h"

#define H UR_HANDOVER_NS
#define IMG "handover.sfs"
#define STATS "server-stats.txt"
#define BUSY_QD 16u
#define RUN_NS 1000000000ull

static void rule(void)
{
	struct ur_handover ho;
	uint64_t t = 1000;

	/* a client waiting on CPU 3 (hint 4), the server on CPU 3 */
	memset(&ho, 0, sizeof(ho));
	CHECK_EQ(ur_handover(&ho, 4, 4, 0, 1, t), 0);               /* the wait starts */
	CHECK_EQ(ur_handover(&ho, 4, 4, 0, 1, t + H - 1), 0);
	CHECK_EQ(ur_handover(&ho, 4, 4, 0, 1, t + H), 1);           /* long enough: hand over */
	CHECK_EQ(ur_handover(&ho, 4, 4, 0, 1, t + 10 * H), 0);      /* not again for these */
	CHECK_EQ(ur_handover(&ho, 4, 4, 0, 1, t + 100 * H), 0);
	t += 200 * H;
	CHECK_EQ(ur_handover(&ho, 4, 4, 1, 2, t), 0);               /* a new batch: a new wait */
	CHECK_EQ(ur_handover(&ho, 4, 4, 1, 2, t + H / 2), 0);
	CHECK_EQ(ur_handover(&ho, 4, 4, 1, 2, t + H), 1);

	/* a reap breaks the wait: the clock starts over */
	t += 10 * H;
	CHECK_EQ(ur_handover(&ho, 4, 4, 2, 3, t), 0);
	CHECK_EQ(ur_handover(&ho, 4, 4, 3, 3, t + H / 2), 0);        /* reaped */
	CHECK_EQ(ur_handover(&ho, 4, 4, 3, 4, t + H / 2 + 1), 0);    /* new CQE, new wait */
	CHECK_EQ(ur_handover(&ho, 4, 4, 3, 4, t + H), 0);            /* H since the first: too soon */
	CHECK_EQ(ur_handover(&ho, 4, 4, 3, 4, t + H / 2 + 1 + H), 1);

	/* never: another CPU, asleep, nothing to reap, the server's CPU unknown */
	for (uint64_t k = 0; k < 100; k++) {
		uint64_t now = t + 1000 * H + k * H;
		memset(&ho, 0, sizeof(ho));
		CHECK_EQ(ur_handover(&ho, 4, 5, 0, 1, now), 0);
		CHECK_EQ(ur_handover(&ho, 4, 5, 0, 1, now + 2 * H), 0);
		CHECK_EQ(ur_handover(&ho, 4, 0, 0, 1, now + 2 * H), 0);
		CHECK_EQ(ur_handover(&ho, 4, 0, 0, 1, now + 4 * H), 0);
		CHECK_EQ(ur_handover(&ho, 4, 4, 1, 1, now + 4 * H), 0);
		CHECK_EQ(ur_handover(&ho, 4, 4, 1, 1, now + 6 * H), 0);
		CHECK_EQ(ur_handover(&ho, 0, 0, 0, 1, now + 6 * H), 0);
		CHECK_EQ(ur_handover(&ho, 0, 0, 0, 1, now + 8 * H), 0);
	}

	/* a client that never reaps while CQEs keep coming (one every 100 ns,
	 * asked every 100 ns for 10 ms): at most one hand-over per H */
	memset(&ho, 0, sizeof(ho));
	unsigned n = 0;
	uint64_t t0 = 5000000000ull;
	for (uint32_t i = 1; i <= 100000; i++)
		n += ur_handover(&ho, 2, 2, 0, i, t0 + 100ull * i);
	printf("a client that never reaps, 10 ms of CQEs: %u hand-overs (at most %llu)\n", n,
	       10000000ull / H);
	CHECK(n >= 1 && n <= 10000000ull / H);

	/* random sequences: a hand-over only to a waiting client on our CPU,
	 * never twice for the same CQ tail */
	uint64_t seed = 7;
	uint32_t last = UINT32_MAX, head = 0, pub = 0;
	memset(&ho, 0, sizeof(ho));
	t = t0 + 100000000ull;
	for (unsigned k = 0; k < 200000; k++) {
		uint64_t g = tu_xorshift64(&seed);
		t += (g & 0xffff);
		if ((g >> 16) % 4 == 0)
			pub += 1 + (uint32_t)((g >> 20) % 3);
		if ((g >> 24) % 8 == 0)
			head = pub;
		uint32_t my = 1 + (uint32_t)((g >> 32) % 2), cl = (uint32_t)((g >> 40) % 3);
		if (ur_handover(&ho, my, cl, head, pub, t)) {
			CHECK(cl == my && head != pub);
			CHECK(pub != last);
			last = pub;
		}
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ring_open(struct urfs_ring *r)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	p.flags = URFS_SETUP_IDLE;
	p.idle_us = 100000;          /* the server spins between requests: never asleep */
	int e = urfs_queue_init_params(64, r, &p);
	if (e < 0)
		FAIL("ring: %s (%s)", strerror(-e), p.errmsg);
}

/* Reap what is there (at least min); NOPs complete with 0. */
static unsigned reap(struct urfs_ring *r, unsigned min)
{
	struct urfs_cqe *cqe;
	int e = urfs_wait_cqe_nr(r, &cqe, min);
	if (e < 0)
		FAIL("wait: %s", strerror(-e));
	unsigned n = 0;
	uint32_t head;
	urfs_for_each_cqe(r, head, cqe) {
		if (cqe->res != 0)
			FAIL("NOP res %d", cqe->res);
		n++;
	}
	urfs_cq_advance(r, n);
	return n;
}

/* The busy client: BUSY_QD NOPs in flight for a second. */
static void busy_client(int cpu, int ready_w)
{
	PIN_CPU(cpu);
	struct urfs_ring r;
	ring_open(&r);
	if (write(ready_w, "r", 1) != 1)
		FAIL("gate");
	uint64_t end = now_ns() + RUN_NS;
	unsigned inflight = 0;
	while (now_ns() < end) {
		while (inflight < BUSY_QD) {
			urfs_prep_nop(urfs_get_sqe(&r));
			inflight++;
		}
		if (urfs_submit(&r) < 0)
			FAIL("submit");
		inflight -= reap(&r, 1);
	}
	while (inflight)
		inflight -= reap(&r, inflight);
	urfs_queue_exit(&r);
	_exit(0);
}

/* One server (--stats, its stderr to STATS) and this client for a second of
 * one NOP at a time: on the server's CPU with a busy client beside (same),
 * or on another CPU than the server (!same). Returns its hand-overs. */
static unsigned long long phase(const int cpus[2], int same)
{
	int saved = tu_stderr_to(STATS);
	PIN_CPU(same ? cpus[0] : cpus[1]);       /* the server inherits this */
	struct urfs_ring me;
	ring_open(&me);
	tu_stderr_back(saved);
	if (!same)
		PIN_CPU(cpus[0]);                    /* the client elsewhere */
	pid_t pid = -1;
	if (same) {
		int rp[2];
		if (pipe(rp) < 0)
			FAIL("pipe: %s", strerror(errno));
		if ((pid = fork()) < 0)
			FAIL("fork: %s", strerror(errno));
		if (pid == 0) {
			close(rp[0]);
			busy_client(cpus[1], rp[1]);
		}
		close(rp[1]);
		char c;
		if (read(rp[0], &c, 1) != 1)
			FAIL("the busy client did not start");
		close(rp[0]);
	}
	uint64_t n = 0, end = now_ns() + RUN_NS;
	while (now_ns() < end) {
		urfs_prep_nop(urfs_get_sqe(&me));
		if (urfs_submit(&me) < 0)
			FAIL("submit");
		n += reap(&me, 1);
	}
	int st;
	if (pid > 0 && (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)))
		FAIL("the busy client failed");
	urfs_queue_exit(&me);                /* the last client: the server prints and exits */
	char *s = tu_slurp(STATS);
	CHECK(s);
	long long ho = tu_count_before(s, " hand-overs");
	if (ho < 0)
		FAIL("no hand-over count in the server's stats: %s", s);
	printf("%s: %llu NOPs, %llu hand-overs; the server said: %s", same ?
	       "client on the server's CPU, a busy client elsewhere" : "client and server on two CPUs",
	       (unsigned long long)n, (unsigned long long)ho, s);
	free(s);
	return ho;
}

int main(void)
{
	alarm(120);
	rule();

	int cpus[2], two = tu_two_cpus(cpus);
	if (!two) {
		printf("SKIP: the real servers need two CPUs\n");
		return 77;
	}
	if (!tu_wrap_server("stats-server.sh", "", "--stats ")) {
		printf("SKIP: the real servers need UR_SERVER (run under tests/run.sh)\n");
		return 77;
	}
	int e = sfs_format(IMG, 16ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));

	CHECK_EQ(phase(cpus, 0), 0);
	CHECK(phase(cpus, 1) > 0);
	unlink(IMG);
	return 0;
}
