/* SPDX-License-Identifier: MIT */
/* Description: idle rings cost the server's loop little and are still
 * served (docs/ABI.md "Many clients", Fairness). A real
 * server started with --stats serves a busy client (a process of its own,
 * NOP round trips for the whole test, so the server never sleeps) and
 * NIDLE rings of this process that stay idle. Each idle ring, idle for
 * longer than UR_HOT_NS, then gets a NOP while the server is awake, so no
 * doorbell is rung: it completes within 10 s (a ring that is never looked
 * at again would not), three rounds over every ring. At the end the server's
 * counters say how many rings its turns looked at: at most the busy ring,
 * the idle ring just used, and the idle rings' share of UR_COLD_EVERY,
 * plus one, per turn (looking at every ring every turn is NIDLE + 1), and
 * that the NIDLE rings after the first attached, none refused.
 * Counts only, no time is asserted.
 */
#include "test_ur_multi.h"
#include "test_ur_stats.h"
#include "../src/server/server.h"

#define IMG "idle.sfs"
#define STATS "server-stats.txt"
#define NIDLE 24u
#define ROUNDS 3u

static void ring_open(struct urfs_ring *r)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	int e = urfs_queue_init_params(8, r, &p);
	if (e < 0)
		FAIL("ring: %s (%s)", strerror(-e), p.errmsg);
}

static int32_t nop(struct urfs_ring *r)
{
	urfs_prep_nop(mp_sqe(r));
	return mp_wait1(r);
}

/* A NOP on an idle ring, its completion awaited for at most 10 s. */
static int32_t idle_nop(struct urfs_ring *r)
{
	struct urfs_cqe *cqe;
	struct timespec ts = { 10, 0 };
	urfs_prep_nop(mp_sqe(r));
	int e = urfs_submit(r);
	if (e != 1)
		FAIL("submit: %d", e);
	if ((e = urfs_wait_cqe_timeout(r, &cqe, &ts)) < 0)
		FAIL("an idle ring's NOP: %s (never looked at?)", strerror(-e));
	int32_t res = cqe->res;
	urfs_cqe_seen(r, cqe);
	return res;
}

/* The busy client: NOP round trips until its stop pipe is closed. */
static void busy_client(int ready_w, int stop_r)
{
	struct urfs_ring r;
	ring_open(&r);
	if (write(ready_w, "r", 1) != 1)
		FAIL("gate");
	struct pollfd pf = { .fd = stop_r, .events = POLLIN };
	for (unsigned long n = 0;; n++) {
		if (nop(&r) != 0)
			FAIL("busy NOP");
		if (!(n & 255) && poll(&pf, 1, 0) > 0)
			break;
	}
	urfs_queue_exit(&r);
	_exit(0);
}

static void idle_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(void)
{
	alarm(120);
	if (!tu_stats_setup(IMG))
		return 77;
	int saved = tu_stderr_to(STATS);
	static struct urfs_ring idle[NIDLE];
	ring_open(&idle[0]);                 /* starts the server: its stderr is STATS */
	tu_stderr_back(saved);
	pid_t spid = idle[0].server_pid;
	for (unsigned i = 1; i < NIDLE; i++)
		ring_open(&idle[i]);

	int rp[2], sp[2];
	char c;
	if (pipe(rp) < 0 || pipe(sp) < 0)
		FAIL("pipe: %s", strerror(errno));
	pid_t busy = fork();
	if (busy < 0)
		FAIL("fork: %s", strerror(errno));
	if (busy == 0) {
		close(rp[0]);
		close(sp[1]);
		busy_client(rp[1], sp[0]);
	}
	close(rp[1]);
	close(sp[0]);
	if (read(rp[0], &c, 1) != 1)
		FAIL("the busy client did not start");

	unsigned served = 0;
	for (unsigned round = 0; round < ROUNDS; round++)
		for (unsigned i = 0; i < NIDLE; i++) {
			idle_ns(4ull * UR_HOT_NS);      /* every idle ring is cold now */
			CHECK_EQ(idle_nop(&idle[i]), 0);
			served++;
		}
	printf("%u NOPs on %u idle rings served beside a busy client\n", served, NIDLE);
	idle_ns(200000000u);                    /* a while of the busy client alone */

	close(sp[1]);                           /* stop the busy client */
	int st;
	if (waitpid(busy, &st, 0) != busy || !WIFEXITED(st) || WEXITSTATUS(st))
		FAIL("the busy client failed (status %d)", st);
	for (unsigned i = 0; i < NIDLE; i++)
		urfs_queue_exit(&idle[i]);      /* the last client: the server prints and exits */
	mp_server_gone(spid, IMG, 10000);

	char *s = tu_slurp(STATS);
	CHECK(s);
	long long turns = tu_count_before(s, " loop turns"),
		  looks = tu_count_before(s, " rings looked at");
	if (turns <= 0 || looks <= 0)
		FAIL("no turn counts in the server's --stats: %s", s);
	double per = (double)looks / (double)turns,
	       most = 3.0 + (double)NIDLE / UR_COLD_EVERY;
	printf("server: %lld turns, %lld rings looked at: %.2f a turn (at most %.2f; %u rings)\n",
	       turns, looks, per, most, NIDLE + 1);
	CHECK(per <= most);
	/* every ring after the first (NIDLE - 1 idle ones, the busy client's)
	 * attached through the server's socket, none refused */
	CHECK_EQ(tu_count_before(s, " clients attached"), NIDLE);
	CHECK_EQ(tu_count_before(s, " refused"), 0);
	free(s);
	printf("PASS\n");
	return 0;
}
