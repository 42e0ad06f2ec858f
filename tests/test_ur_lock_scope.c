/* SPDX-License-Identifier: MIT */
/* Description: what a lock change looks at (docs/ABI.md
 * "Locks", Cost), through raw LOCK / UNLOCK SQEs on a real server started
 * with --stats, whose count of queued waits looked at by grant passes is
 * read when it exits. 50 LOCKs wait on file B; 200 LOCK + UNLOCK pairs on
 * file A and 200 LOCKs of new ranges on file B (nothing freed) must look at
 * none of them. Three LOCKs queued on file C are granted one by one in
 * arrival order as each holder unlocks. A ring holding records on A, B and C
 * (between other owners' records) and a wait on C leaves: all its ranges
 * are free at once and its wait is gone (its records on B freed: one pass
 * over B's 50 waits). Then B's holder unlocks and the 50 waits are granted.
 * In all, grant passes looked at B's 50 waits twice and at the 3 + 2 + 1 of
 * C's passes, and no more (never every queued wait of the server on
 * each UNLOCK). The image fsck-clean at the end. */
#include "test_ur_locks.h"
#include "test_ur_stats.h"

#define IMG "lks.sfs"
#define STATS "server-stats.txt"
#define NW 50u
#define CHURN 200u

static int open_f(struct urfs_ring *r, const char *name)
{
	int fd = mp_open(r, name, URFS_O_CREAT);
	if (fd < 0)
		FAIL("open %s: %d", name, fd);
	return fd;
}

int main(void)
{
	alarm(120);
	if (!tu_stats_setup(IMG))
		return 77;
	int saved = tu_stderr_to(STATS);
	struct urfs_ring a, d;
	lk_ring(&a, IMG);                    /* the server's stderr: STATS */
	tu_stderr_back(saved);
	pid_t spid = a.server_pid;

	int ha = open_f(&a, "A"), hb0 = open_f(&a, "B"), hb1 = open_f(&a, "B"), hb2 = open_f(&a, "B");
	int hc[4];
	for (unsigned i = 0; i < 4; i++)
		hc[i] = open_f(&a, "C");

	/* NW waits on B; churn on A and new records on B look at none of them */
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hb0, 0, 1, LK_EX), 0);
	lk_queue(&a, hb1, 0, NW);
	uint64_t first_b = lk_ud - NW;
	for (unsigned i = 0; i < CHURN; i++) {
		CHECK_EQ(lk_now(&a, UR_OP_LOCK, ha, 0, 10, LK_EX), 0);
		CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, ha, 0, 10, 0), 0);
		CHECK_EQ(lk_now(&a, UR_OP_LOCK, hb2, 100 + 2 * (uint64_t)i, 1, LK_SH), 0);
	}

	/* FIFO per file: C's waits granted one by one in arrival order */
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hc[0], 0, 1, LK_EX), 0);
	uint64_t w[4];
	for (unsigned i = 1; i < 4; i++)
		w[i] = lk_submit(&a, UR_OP_LOCK, hc[i], 0, 1, LK_W);
	CHECK_EQ(lk_res(&a, w[1], 100), LK_NONE);
	for (unsigned i = 1; i < 4; i++) {
		CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, hc[i - 1], 0, 1, 0), 0);
		CHECK_EQ(lk_res(&a, w[i], 5000), 0);
		if (i + 1 < 4)
			CHECK_EQ(lk_res(&a, w[i + 1], 50), LK_NONE);
	}
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, hc[3], 0, 1, 0), 0);
	printf("file C: three waits granted in arrival order\n");

	/* a ring that leaves: its records on A, B, C and its wait on C go */
	lk_ring(&d, IMG);
	int da = open_f(&d, "A"), db = open_f(&d, "B"), dc = open_f(&d, "C");
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, ha, 1000, 1, LK_EX), 0);
	for (unsigned i = 0; i < 10; i++) {
		CHECK_EQ(lk_now(&d, UR_OP_LOCK, da, 2000 + 4 * (uint64_t)i, 2, LK_EX), 0);
		CHECK_EQ(lk_now(&a, UR_OP_LOCK, ha, 2002 + 4 * (uint64_t)i, 1, LK_EX), 0);
		CHECK_EQ(lk_now(&d, UR_OP_LOCK, db, 2000 + 4 * (uint64_t)i, 2, LK_EX), 0);
		CHECK_EQ(lk_now(&d, UR_OP_LOCK, dc, 2000 + 4 * (uint64_t)i, 2, LK_EX), 0);
	}
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hc[0], 5000, 1, LK_EX), 0);
	uint64_t dw = lk_submit(&d, UR_OP_LOCK, dc, 5000, 1, LK_W);
	CHECK_EQ(lk_res(&d, dw, 50), LK_NONE);
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hc[1], 2000, 1, LK_EX), -EAGAIN);
	urfs_queue_exit(&d);
	for (unsigned i = 0; i < 10; i++) {
		CHECK_EQ(lk_now(&a, UR_OP_LOCK, ha, 2000 + 4 * (uint64_t)i, 2, LK_EX), 0);
		CHECK_EQ(lk_now(&a, UR_OP_LOCK, hb2, 2000 + 4 * (uint64_t)i, 2, LK_EX), 0);
		CHECK_EQ(lk_now(&a, UR_OP_LOCK, hc[1], 2000 + 4 * (uint64_t)i, 2, LK_EX), 0);
	}
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, hc[0], 0, 0, 0), 0);
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hc[2], 2000, 0, LK_EX), -EAGAIN);   /* hc[1]'s */
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, hc[1], 0, 0, 0), 0);
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hc[2], 2000, 0, LK_EX), 0);         /* d's wait is gone */
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, hc[2], 0, 0, 0), 0);
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hb1, 2000, 1, LK_EX), -EAGAIN);     /* hb2's */
	printf("a ring that left: its records on three files and its wait are gone\n");

	/* B's holder unlocks: the NW waits (one handle's) are granted */
	CHECK_EQ(lk_now(&a, UR_OP_UNLOCK, hb0, 0, 1, 0), 0);
	for (unsigned i = 0; i < NW; i++)
		CHECK_EQ(lk_res(&a, first_b + i, 5000), 0);
	CHECK_EQ(lk_now(&a, UR_OP_LOCK, hb0, 0, 1, LK_SH), -EAGAIN);
	urfs_queue_exit(&a);                 /* the last client: the server prints and exits */
	mp_server_gone(spid, IMG, 10000);

	char *s = tu_slurp(STATS);
	CHECK(s);
	long long looked = tu_count_before(s, " lock waits looked at by grants");
	if (looked < 0)
		FAIL("no grant count in the server's stats: %s", s);
	printf("grant passes looked at %lld queued waits (B's %u twice, C's 3 + 2 + 1)\n", looked, NW);
	if (looked != 2 * NW + 6)
		FAIL("grant passes looked at %lld waits: %u expected", looked, 2 * NW + 6);
	free(s);
	FSCK_CLEAN(IMG);
	unlink(IMG);
	printf("ok\n");
	return 0;
}
