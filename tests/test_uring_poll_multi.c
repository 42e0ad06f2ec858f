/* SPDX-License-Identifier: MIT */
/* Description: multishot POLL_ADD (IORING_POLL_ADD_MULTI) behaves as the kernel's: one CQE with
 * IORING_CQE_F_MORE per wake-up of the file (a write to a pipe), not one per look while it stays
 * readable; an fd already readable at arming has its CQE when the submit returns; two multishot
 * polls of one file both fire; POLL_REMOVE with an update changes the events or user_data and the
 * poll stays multishot; removal and ASYNC_CANCEL end it with a final -ECANCELED CQE without
 * F_MORE; a wake-up that finds the CQ full ends it with a final CQE (overflowed, no F_MORE) and
 * nothing is left armed; MULTI with CQE_SKIP_SUCCESS is -EINVAL. */
#include "test_uring.h"
#include <poll.h>

static struct io_uring_sqe *sqe_get(struct io_uring *ring)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s);
	return s;
}

static void arm(struct io_uring *ring, int fd, uint64_t ud)
{
	struct io_uring_sqe *s = sqe_get(ring);
	io_uring_prep_poll_multishot(s, fd, POLLIN);
	s->user_data = ud;
}

/* The next CQE is {ud, res} with F_MORE as more says. */
static void next(struct io_uring *ring, uint64_t ud, int res, int more)
{
	struct io_uring_cqe c;
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(c.res, res);
	CHECK_EQ(!!(c.flags & IORING_CQE_F_MORE), more);
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	char b[8];

	/* 1. one CQE per write, none while the byte stays unread */
	arm(&ring, p[0], 1);
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_none(&ring);
	CHECK_EQ(write(p[1], "a", 1), 1);
	next(&ring, 1, POLLIN, 1);
	tu_none(&ring);
	CHECK_EQ(write(p[1], "b", 1), 1);
	next(&ring, 1, POLLIN, 1);
	tu_none(&ring);

	/* 2. update: new user_data, still multishot */
	struct io_uring_sqe *s = sqe_get(&ring);
	io_uring_prep_poll_update(s, 1, 2, POLLIN, IORING_POLL_UPDATE_USER_DATA | IORING_POLL_UPDATE_EVENTS);
	s->user_data = 100;
	CHECK_EQ(io_uring_submit(&ring), 1);
	/* the re-arm sees the two unread bytes: a CQE now, under the new user_data */
	struct io_uring_cqe c[2];
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 100)->res, 0);
	CHECK_EQ(tu_find(c, 2, 2)->res, POLLIN);
	CHECK(tu_find(c, 2, 2)->flags & IORING_CQE_F_MORE);
	CHECK_EQ(read(p[0], b, sizeof b), 2);
	CHECK_EQ(write(p[1], "c", 1), 1);
	next(&ring, 2, POLLIN, 1);

	/* 3. a second multishot poll of the same pipe: both fire */
	arm(&ring, p[0], 3);
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_peek_cqe(&ring, &cqe), 0);   /* readable at arming: posted by the submit */
	CHECK_EQ(cqe->user_data, 3);
	CHECK(cqe->flags & IORING_CQE_F_MORE);
	io_uring_cqe_seen(&ring, cqe);
	CHECK_EQ(read(p[0], b, sizeof b), 1);
	tu_none(&ring);
	CHECK_EQ(write(p[1], "d", 1), 1);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 2)->res, POLLIN);
	CHECK_EQ(tu_find(c, 2, 3)->res, POLLIN);
	CHECK_EQ(read(p[0], b, sizeof b), 1);

	/* 4. POLL_REMOVE ends 2, ASYNC_CANCEL ends 3: final CQEs without F_MORE */
	s = sqe_get(&ring);
	io_uring_prep_poll_remove(s, 2);
	s->user_data = 101;
	s = sqe_get(&ring);
	io_uring_prep_cancel64(s, 3, 0);
	s->user_data = 102;
	CHECK_EQ(io_uring_submit(&ring), 2);
	struct io_uring_cqe d[4];
	tu_reap(&ring, d, 4);
	CHECK_EQ(tu_find(d, 4, 101)->res, 0);
	CHECK_EQ(tu_find(d, 4, 102)->res, 0);
	CHECK_EQ(tu_find(d, 4, 2)->res, -ECANCELED);
	CHECK_EQ(tu_find(d, 4, 3)->res, -ECANCELED);
	CHECK(!(tu_find(d, 4, 2)->flags & IORING_CQE_F_MORE));
	CHECK(!(tu_find(d, 4, 3)->flags & IORING_CQE_F_MORE));
	CHECK_EQ(write(p[1], "e", 1), 1);
	tu_none(&ring);
	CHECK_EQ(read(p[0], b, sizeof b), 1);

	/* 5. MULTI with CQE_SKIP_SUCCESS */
	s = sqe_get(&ring);
	io_uring_prep_poll_multishot(s, p[0], POLLIN);
	s->flags |= IOSQE_CQE_SKIP_SUCCESS;
	s->user_data = 4;
	CHECK_EQ(io_uring_submit(&ring), 1);
	next(&ring, 4, -EINVAL, 0);
	io_uring_queue_exit(&ring);

	/* 6. a wake-up with the CQ full (2 NOPs in a 2-entry CQ) ends the poll: its final CQE
	 * overflows, without F_MORE, and nothing stays armed */
	struct io_uring_params par;
	memset(&par, 0, sizeof par);
	par.flags = IORING_SETUP_CQSIZE;
	par.cq_entries = 2;
	CHECK_EQ(io_uring_queue_init_params(2, &ring, &par), 0);
	arm(&ring, p[0], 5);
	CHECK_EQ(io_uring_submit(&ring), 1);
	for (int i = 0; i < 2; i++) {
		s = sqe_get(&ring);
		io_uring_prep_nop(s);
		s->user_data = 6;
	}
	CHECK_EQ(io_uring_submit(&ring), 2);
	CHECK_EQ(write(p[1], "f", 1), 1);
	/* the wake-up is handled when the overflow flag shows (at once on a kernel ring) */
	for (int i = 0; !(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW); i++) {
		if (i == 5000)
			FAIL("the poll's CQE did not overflow in 5 s");
		usleep(1000);
	}
	next(&ring, 6, 0, 0);
	next(&ring, 6, 0, 0);
	next(&ring, 5, POLLIN, 0);
	s = sqe_get(&ring);
	io_uring_prep_poll_remove(s, 5);
	s->user_data = 7;
	CHECK_EQ(io_uring_submit(&ring), 1);
	next(&ring, 7, -ENOENT, 0);
	CHECK_EQ(write(p[1], "g", 1), 1);
	tu_none(&ring);

	io_uring_queue_exit(&ring);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	return tu_uring_main(body);
}
