/* Description: one busy client cannot starve another (issue 10): two rings of
 * this process on one server, a hog with 16384 one-byte reads queued at once
 * and a light one with a single read submitted right after. The server
 * serves each ring at most UR_TURN_BUDGET (64) SQEs per turn, so the light
 * read completes while the hog's are still pending: the hog's SQ head, read
 * as soon as the (spinning) light client sees its CQE, is below 16384 - 64.
 * Ten rounds, at least three such (how soon a process sees its CQE on a
 * loaded machine varies: measured here 64 to ~14000, most below 8000; a
 * server without the budget drains the hog's SQ first: 16384 in every
 * round). No time is measured. */
#include "test_ur_multi.h"

#define IMG "fair.sfs"
#define HOG 16384u
#define ROUNDS 10
#define UR_TURN_BUDGET_SEEN 64u   /* the server's UR_TURN_BUDGET (private to it) */

int main(void)
{
	alarm(120);
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct urfs_ring hog, light;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	p.flags = URFS_SETUP_RAW;           /* no staging: buffers are region offsets */
	if ((e = urfs_queue_init_params(HOG, &hog, &p)) < 0)
		FAIL("hog: %s (%s)", strerror(-e), p.errmsg);
	/* The light client spins while it waits: it sees its CQE when it is
	 * posted, not when a sleeping process is scheduled again. */
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	p.wait_spin_us = 10u * 1000 * 1000;
	if ((e = urfs_queue_init_params(8, &light, &p)) < 0)
		FAIL("light: %s (%s)", strerror(-e), p.errmsg);
	CHECK_EQ(light.server_pid, hog.server_pid);
	int fl = mp_open(&light, "f", URFS_O_CREAT);
	CHECK(fl >= 0);
	CHECK_EQ(mp_pwrite(&light, fl, "x", 1, 0), 1);
	/* the hog opens the same file (RAW: the name lives in its region) */
	uint8_t *data = hog.region + ((struct ur_region_hdr *)hog.region)->data_off;
	memcpy(data, "f", 1);
	struct urfs_sqe *sqe = urfs_get_sqe(&hog);
	urfs_prep_openat(sqe, (const char *)(uintptr_t)((struct ur_region_hdr *)hog.region)->data_off, 0);
	sqe->len = 1;
	int fh = mp_wait1(&hog);
	CHECK(fh >= 0);
	uint64_t buf = ((struct ur_region_hdr *)hog.region)->data_off + 4096;
	int fair = 0;
	char c;
	for (int round = 0; round < ROUNDS; round++) {
		uint32_t head0 = *hog.sq.khead;
		for (unsigned i = 0; i < HOG; i++) {
			sqe = urfs_get_sqe(&hog);
			if (!sqe)
				FAIL("hog SQ full at %u", i);
			urfs_prep_read(sqe, fh, (void *)(uintptr_t)buf, 1, 0);
		}
		urfs_prep_read(mp_sqe(&light), fl, &c, 1, 0);
		if (urfs_submit(&hog) != (int)HOG || urfs_submit(&light) != 1)
			FAIL("submit");
		struct urfs_cqe *cqe;
		if ((e = urfs_wait_cqe(&light, &cqe)) < 0 || cqe->res != 1)
			FAIL("light read: %d %d", e, e < 0 ? 0 : cqe->res);
		uint32_t done = __atomic_load_n(hog.sq.khead, __ATOMIC_ACQUIRE) - head0;
		urfs_cqe_seen(&light, cqe);
		fair += done < HOG - UR_TURN_BUDGET_SEEN;
		printf("round %d: %u of the hog's %u reads taken when the light read completed\n",
		       round, done, HOG);
		for (unsigned i = 0; i < HOG; i++) {
			if ((e = urfs_wait_cqe(&hog, &cqe)) < 0 || cqe->res != 1)
				FAIL("hog read %u: %d", i, e < 0 ? e : cqe->res);
			urfs_cqe_seen(&hog, cqe);
		}
	}
	if (fair < 3)
		FAIL("the light ring waited for the hog in %d of %d rounds", ROUNDS - fair, ROUNDS);
	urfs_queue_exit(&light);
	urfs_queue_exit(&hog);
	return 0;
}
