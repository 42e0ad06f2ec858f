/* SPDX-License-Identifier: MIT */
/* Description: ring transport with NOPs (no image): single NOP round trip,
 * user_data echo, ring wrap-around (many times the ring size), SQ full
 * (get_sqe returns NULL), CQ full with many more requests in flight than CQ
 * entries (nothing lost, nothing duplicated), for-each/advance and peek_batch,
 * wait with timeout on an empty ring (-ETIME, not before the time asked nor
 * long after), a full CQ never overrun (SQEs wait in the SQ), the entry limits
 * (32768, default CQ 2x capped), and the server sleeping and waking; without
 * an image every file operation fails (-ENODEV by name, -EBADF on a handle),
 * and such a ring gets a server of its own beside disk.sfs's running one (a
 * ring of urfs_queue_init's defaults, which answers a NOP). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sfs.h"
#include "ur_fs.h"

#include "testutil.h"

static struct urfs_ring ring;

static void init(unsigned sq, unsigned cq, unsigned idle_us)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.flags = URFS_SETUP_NOIMAGE | URFS_SETUP_IDLE;
	p.idle_us = idle_us;
	p.cq_entries = cq;
	int r = urfs_queue_init_params(sq, &ring, &p);
	if (r < 0)
		FAIL("queue_init: %s (%s)", strerror(-r), p.errmsg);
	if (p.server_pid <= 0)
		FAIL("no server pid");
}

int main(void)
{
	struct urfs_cqe *cqe;
	struct urfs_sqe *sqe;
	int r;

	/* 1. one NOP */
	init(8, 16, 100);
	sqe = urfs_get_sqe(&ring);
	if (!sqe) FAIL("get_sqe NULL on empty ring");
	urfs_prep_nop(sqe);
	urfs_sqe_set_data64(sqe, 0xdeadbeefcafe1234ull);
	if ((r = urfs_submit(&ring)) != 1) FAIL("submit: %d", r);
	if ((r = urfs_wait_cqe(&ring, &cqe)) < 0) FAIL("wait: %s", strerror(-r));
	if (cqe->user_data != 0xdeadbeefcafe1234ull || cqe->res != 0)
		FAIL("cqe ud=%llx res=%d", (unsigned long long)cqe->user_data, cqe->res);
	urfs_cqe_seen(&ring, cqe);

	/* 2. SQ full: 8 entries, 9th get_sqe is NULL until submitted and consumed */
	for (int i = 0; i < 8; i++) {
		sqe = urfs_get_sqe(&ring);
		if (!sqe) FAIL("get_sqe %d NULL", i);
		urfs_prep_nop(sqe);
		urfs_sqe_set_data64(sqe, 100 + i);
	}
	if (urfs_get_sqe(&ring)) FAIL("get_sqe must be NULL when the SQ is full");
	if (urfs_sq_space_left(&ring) != 0) FAIL("space left %u", urfs_sq_space_left(&ring));
	if ((r = urfs_submit_and_wait(&ring, 8)) != 8) FAIL("submit_and_wait: %d", r);
	unsigned seen = 0;
	uint32_t head;
	urfs_for_each_cqe(&ring, head, cqe) {
		if (cqe->user_data != 100 + seen || cqe->res != 0)
			FAIL("for_each: cqe %u ud=%llu", seen, (unsigned long long)cqe->user_data);
		seen++;
	}
	if (seen != 8) FAIL("for_each saw %u", seen);
	urfs_cq_advance(&ring, seen);

	/* 3. wait with timeout on an empty ring: -ETIME, not before the time asked
	 * (150 ms) and not long after it (a loose bound: this machine is shared) */
	struct timespec ts = { 0, 150 * 1000 * 1000 }, t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = urfs_wait_cqe_timeout(&ring, &cqe, &ts);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r != -ETIME) FAIL("timeout wait: %d", r);
	double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (ms < 149.0 || ms > 850.0)
		FAIL("a 150 ms timeout returned after %.1f ms", ms);
	if (urfs_peek_cqe(&ring, &cqe) != -EAGAIN) FAIL("peek on empty");
	urfs_queue_exit(&ring);

	/* 4. CQ full: SQ 4, CQ 8; keep up to 4 unreaped + 4 queued, 100000 NOPs,
	 * server sleeping immediately (idle 0) so the wakeup paths run too. */
	init(4, 8, 0);
	uint64_t next = 0, expect = 0;
	const uint64_t total = 100000;
	while (expect < total) {
		while (next < total && (sqe = urfs_get_sqe(&ring))) {
			urfs_prep_nop(sqe);
			urfs_sqe_set_data64(sqe, next++);
		}
		if ((r = urfs_submit(&ring)) < 0) FAIL("submit: %s", strerror(-r));
		/* leave the CQ full for a while: only reap when it holds 8 */
		if (urfs_cq_ready(&ring) < 8 && next < total)
			if (urfs_sq_space_left(&ring) > 0)
				continue;
		struct urfs_cqe *batch[16];
		if ((r = urfs_wait_cqe(&ring, &cqe)) < 0) FAIL("wait: %s", strerror(-r));
		unsigned n = urfs_peek_batch_cqe(&ring, batch, 16);
		if (n == 0 || n > 8) FAIL("peek_batch %u", n);
		for (unsigned i = 0; i < n; i++) {
			if (batch[i]->user_data != expect || batch[i]->res != 0)
				FAIL("lost or reordered: got %llu want %llu",
				     (unsigned long long)batch[i]->user_data, (unsigned long long)expect);
			expect++;
		}
		urfs_cq_advance(&ring, n);
	}
	if (urfs_peek_cqe(&ring, &cqe) != -EAGAIN) FAIL("extra completion");
	urfs_queue_exit(&ring);

	/* 4b. the CQ is never overrun (ABI.md): SQ 4, CQ 8, nothing reaped; 8 NOPs fill
	 * the CQ, 4 more wait in the SQ while the server sees them; then exactly 8
	 * CQEs are there, in order, and the other 4 follow once there is room */
	init(4, 8, 1000);
	for (unsigned k = 0; k < 12; k++) {
		while (!(sqe = urfs_get_sqe(&ring))) {
			if ((r = urfs_submit(&ring)) < 0) FAIL("submit: %s", strerror(-r));
			sched_yield();
		}
		urfs_prep_nop(sqe);
		urfs_sqe_set_data64(sqe, k);
		if ((r = urfs_submit(&ring)) < 0) FAIL("submit: %s", strerror(-r));
	}
	{
		struct timespec pause = { 0, 50 * 1000 * 1000 };
		for (int i = 0; i < 100 && urfs_cq_ready(&ring) < 8; i++)
			nanosleep(&pause, NULL);
		nanosleep(&pause, NULL);      /* time to overrun it, if the server would */
	}
	if (urfs_cq_ready(&ring) != 8) FAIL("full CQ of 8 holds %u CQEs", urfs_cq_ready(&ring));
	for (uint64_t k = 0; k < 12; k++) {
		if ((r = urfs_wait_cqe(&ring, &cqe)) < 0) FAIL("wait: %s", strerror(-r));
		if (cqe->user_data != k) FAIL("CQE %llu is %llu", (unsigned long long)k,
					       (unsigned long long)cqe->user_data);
		urfs_cqe_seen(&ring, cqe);
	}
	if (urfs_peek_cqe(&ring, &cqe) != -EAGAIN) FAIL("a CQE too many");
	urfs_queue_exit(&ring);

	/* 5. wrap-around with batches, server polling */
	init(32, 64, 1000);
	expect = 0;
	for (int round = 0; round < 3000; round++) {
		unsigned n = 1 + (unsigned)(round % 32);
		for (unsigned i = 0; i < n; i++) {
			sqe = urfs_get_sqe(&ring);
			if (!sqe) FAIL("get_sqe NULL round %d", round);
			urfs_prep_nop(sqe);
			urfs_sqe_set_data64(sqe, expect + i);
		}
		if ((r = urfs_submit_and_wait(&ring, n)) != (int)n) FAIL("submit_and_wait %d", r);
		for (unsigned i = 0; i < n; i++) {
			if ((r = urfs_peek_cqe(&ring, &cqe)) < 0) FAIL("peek %u", i);
			if (cqe->user_data != expect) FAIL("order");
			urfs_cqe_seen(&ring, cqe);
			expect++;
		}
	}
	if (*ring.sq.khead < 3 * 32) FAIL("no wrap");
	urfs_queue_exit(&ring);

	/* 6. the limits (ABI.md): SQ and CQ entries up to 32768; the default CQ is
	 * twice the SQ, capped there; a CQ smaller than the SQ, or more, is -EINVAL */
	init(32768, 0, 100);
	if (ring.sq.ring_entries != 32768 || ring.cq.ring_entries != 32768)
		FAIL("32768 entries: SQ %u, CQ %u", ring.sq.ring_entries, ring.cq.ring_entries);
	sqe = urfs_get_sqe(&ring);
	urfs_prep_nop(sqe);
	urfs_sqe_set_data64(sqe, 5);
	if (urfs_submit_and_wait(&ring, 1) != 1 || urfs_peek_cqe(&ring, &cqe) < 0 || cqe->user_data != 5)
		FAIL("NOP on a 32768-entry ring");
	urfs_cqe_seen(&ring, cqe);
	urfs_queue_exit(&ring);
	init(16384, 0, 100);
	if (ring.cq.ring_entries != 32768) FAIL("16384 entries: CQ %u", ring.cq.ring_entries);
	urfs_queue_exit(&ring);
	{
		struct urfs_params p;
		static const unsigned bad[][2] = { { 32769, 0 }, { 0, 0 }, { 1024, 65536 }, { 1024, 512 } };
		for (int i = 0; i < 4; i++) {
			memset(&p, 0, sizeof(p));
			p.flags = URFS_SETUP_NOIMAGE;
			p.cq_entries = bad[i][1];
			if ((r = urfs_queue_init_params(bad[i][0], &ring, &p)) != -EINVAL)
				FAIL("SQ %u CQ %u: %d, expected -EINVAL", bad[i][0], bad[i][1], r);
		}
	}

	/* 7. no image (backend_none.c): every file operation fails, by name
	 * -ENODEV, on a handle -EBADF (no handle was ever opened); none
	 * reports success. Also while the default image (disk.sfs here) exists
	 * and has a server: a ring without an image never attaches to it. */
	unsetenv("SFS_IMAGE");
	if ((r = sfs_format("disk.sfs", 16ull << 20, 0)) < 0)
		FAIL("format disk.sfs: %s", strerror(-r));
	struct urfs_ring img;
	memset(&img, 0, sizeof(img));
	if ((r = urfs_queue_init(8, &img, 0)) < 0)
		FAIL("ring on disk.sfs: %s", strerror(-r));
	/* urfs_queue_init (default parameters) gives a working ring on disk.sfs */
	if (img.server_pid <= 0 || !(sqe = urfs_get_sqe(&img)))
		FAIL("urfs_queue_init gave no ring (server pid %d)", (int)img.server_pid);
	urfs_prep_nop(sqe);
	if (urfs_submit_and_wait(&img, 1) != 1 || urfs_peek_cqe(&img, &cqe) < 0 || cqe->res != 0)
		FAIL("a NOP on the ring of urfs_queue_init");
	urfs_cqe_seen(&img, cqe);
	init(8, 0, 100);
	if (ring.server_pid == img.server_pid)
		FAIL("a ring without an image attached to disk.sfs's server %d", (int)img.server_pid);
	struct urfs_statx stx;
	for (int op = 0; op < 5; op++) {
		sqe = urfs_get_sqe(&ring);
		switch (op) {
		case 0: urfs_prep_openat(sqe, "f", URFS_O_CREAT); break;
		case 1: urfs_prep_unlink(sqe, "f"); break;
		case 2: urfs_prep_statx(sqe, -1, "f", &stx); break;
		case 3: urfs_prep_statx(sqe, 0, NULL, &stx); break;
		default: urfs_prep_close(sqe, 0); break;
		}
		if (urfs_submit_and_wait(&ring, 1) != 1 || urfs_peek_cqe(&ring, &cqe) < 0)
			FAIL("file op %d without an image", op);
		if (cqe->res != (op < 3 ? -ENODEV : -EBADF))
			FAIL("file op %d without an image: %d, want %d", op, cqe->res, op < 3 ? -ENODEV : -EBADF);
		urfs_cqe_seen(&ring, cqe);
	}
	urfs_queue_exit(&ring);
	urfs_queue_exit(&img);
	printf("ok\n");
	return 0;
}
