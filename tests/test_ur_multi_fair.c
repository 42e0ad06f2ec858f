/* SPDX-License-Identifier: MIT */
/* Description: one busy client cannot starve another: two rings of
 * this process on one server, a hog with 16384 one-byte reads of byte 0 of a
 * file queued at once, and a light one whose single write of that byte is
 * queued beside them. Both are published while the server is stopped
 * (SIGSTOP, and its state seen as 'T' in /proc), so when it runs again both
 * rings hold work, whatever the scheduler does with this process. The
 * server serves each ring at most UR_TURN_BUDGET (64) SQEs per turn, and
 * looks at a ring idle for over UR_HOT_NS (1 ms) every UR_COLD_EVERY (8)
 * turns (ABI.md, "Fairness"), so the write runs after at most 8 turns of the
 * hog's reads (512; one turn, 64, while the light ring is still hot, which a
 * loaded machine does not keep: queueing the hog's SQEs can take over 1 ms),
 * never after all of them: the reads that still saw the old byte are
 * counted (the server's own order). A server without the budget drains the hog's SQ first: 16384
 * whenever the hog's turn comes first, which it does unless the stop fell
 * between the two turns. Ten rounds; every one must be fair and at least
 * one must show the hog's turn coming first. No time is measured.
 * Serial: compares the turns of rings served by one server (tests/run.sh runs it alone).
 */
#include "test_ur_multi.h"

#define IMG "fair.sfs"
#define HOG 16384u
#define ROUNDS 10
#define UR_TURN_BUDGET_SEEN 64u   /* the server's UR_TURN_BUDGET (private to it) */
#define UR_COLD_EVERY_SEEN 8u     /* the server's UR_COLD_EVERY */

int main(void)
{
	alarm(120);
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	/* Both rings keep the server spinning (idle_us 100 ms) between rounds,
	 * so it resumes in its loop over the rings, not in a wake-up. */
	struct urfs_ring hog, light;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	p.flags = URFS_SETUP_RAW | URFS_SETUP_IDLE;   /* RAW: buffers are region offsets */
	p.idle_us = 100000;
	if ((e = urfs_queue_init_params(HOG, &hog, &p)) < 0)
		FAIL("hog: %s (%s)", strerror(-e), p.errmsg);
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	p.flags = URFS_SETUP_IDLE;
	p.idle_us = 100000;
	if ((e = urfs_queue_init_params(8, &light, &p)) < 0)
		FAIL("light: %s (%s)", strerror(-e), p.errmsg);
	CHECK_EQ(light.server_pid, hog.server_pid);
	int fl = mp_open(&light, "f", URFS_O_CREAT);
	CHECK(fl >= 0);
	/* the hog opens the same file (RAW: the name lives in its region) */
	uint64_t data_off = ((struct ur_region_hdr *)hog.region)->data_off;
	memcpy(hog.region + data_off, "f", 1);
	struct urfs_sqe *sqe = urfs_get_sqe(&hog);
	urfs_prep_openat(sqe, "f", 0);
	sqe->addr = data_off;                    /* RAW: the name's region offset */
	int fh = mp_wait1(&hog);
	CHECK(fh >= 0);
	uint64_t buf = data_off + 4096;          /* hog read i lands at buf + i */
	int hog_first = 0;
	for (int round = 0; round < ROUNDS; round++) {
		CHECK_EQ(mp_pwrite(&light, fl, "x", 1, 0), 1);
		for (unsigned i = 0; i < HOG; i++) {
			sqe = urfs_get_sqe(&hog);
			if (!sqe)
				FAIL("hog SQ full at %u", i);
			urfs_prep_read(sqe, fh, (void *)(uintptr_t)(buf + i), 1, 0);
		}
		urfs_prep_write(mp_sqe(&light), fl, "L", 1, 0);
		STOP_PROCESS(hog.server_pid);
		if (urfs_submit(&hog) != (int)HOG || urfs_submit(&light) != 1)
			FAIL("submit");
		if (kill(hog.server_pid, SIGCONT) < 0)
			FAIL("SIGCONT: %s", strerror(errno));
		struct urfs_cqe *cqe;
		if ((e = urfs_wait_cqe(&light, &cqe)) < 0 || cqe->res != 1)
			FAIL("light write: %d %d", e, e < 0 ? 0 : cqe->res);
		urfs_cqe_seen(&light, cqe);
		for (unsigned i = 0; i < HOG; i++) {
			if ((e = urfs_wait_cqe(&hog, &cqe)) < 0 || cqe->res != 1)
				FAIL("hog read %u: %d", i, e < 0 ? e : cqe->res);
			urfs_cqe_seen(&hog, cqe);
		}
		/* The server executes each ring's SQEs in order: the hog's reads
		 * that still saw "x" ran before the light write. */
		unsigned before = 0;
		while (before < HOG && hog.region[buf + before] == 'x')
			before++;
		for (unsigned i = before; i < HOG; i++)
			if (hog.region[buf + i] != 'L')
				FAIL("hog read %u saw '%c' after an 'L'", i, hog.region[buf + i]);
		printf("round %d: %u of the hog's %u reads ran before the light write\n", round, before, HOG);
		if (before > UR_COLD_EVERY_SEEN * UR_TURN_BUDGET_SEEN)
			FAIL("round %d: the light write waited for %u of the hog's reads, more than %u turns (%u)",
			     round, before, UR_COLD_EVERY_SEEN, UR_COLD_EVERY_SEEN * UR_TURN_BUDGET_SEEN);
		hog_first += before > 0;
	}
	if (!hog_first)
		FAIL("the light ring's turn came first in all %d rounds: the budget was never tested", ROUNDS);
	urfs_queue_exit(&light);
	urfs_queue_exit(&hog);
	return 0;
}
