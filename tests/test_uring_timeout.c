/* SPDX-License-Identifier: MIT */
/* Description: time in the drop-in, in all three modes: io_uring_wait_cqe_timeout returns -ETIME
 * when nothing completes (also with a stale errno of EINTR, and without IORING_FEAT_EXT_ARG,
 * through a TIMEOUT SQE of the library's) and sleeps meanwhile (300 ms of waiting cost under 0.1 s
 * of CPU), TIMEOUT expires with -ETIME, a TIMEOUT with a count completes with 0 once that many
 * other requests completed, TIMEOUT_REMOVE cancels a timeout (-ECANCELED) and answers -ENOENT for
 * an unknown one, with IORING_TIMEOUT_UPDATE moves a timeout's deadline (a 10 s one updated to
 * 50 ms fires before another 10 s one armed before it), LINK_TIMEOUT cancels a pipe read that never completes (read -ECANCELED, timeout
 * -ETIME, not before its time) and is itself cancelled when the read wins, at once or after the
 * read waited (a linked timeout armed on a waiting request fires at its deadline, not when it is
 * armed), a LINK_TIMEOUT linked to nothing fails its preparation (-EINVAL: the submission stops
 * there), and ASYNC_CANCEL cancels a pending read (-ECANCELED, cancel 0) or answers -ENOENT.
 * As the kernel's: a TIMEOUT_REMOVE with a flag but the update ones is -EINVAL, a TIMEOUT that
 * expires ends an io_uring_enter waiting for more CQEs, and a timed wait for 2 CQEs that finds 1
 * when its time is up answers 0 (the CQ is not empty), not -ETIME.
 * Serial: bounds a waiting thread's own CPU time (tests/run.sh runs it alone).
 */
#include "test_uring.h"
#include <sys/resource.h>
#include <time.h>

static uint64_t ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static double thread_cpu(void)
{
	struct rusage u;
	getrusage(RUSAGE_THREAD, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

/* A read of fd linked to a LINK_TIMEOUT of ts: user_data ud and ud + 1; submitted. */
static void read_linked(struct io_uring *ring, int fd, char *buf, unsigned len,
			struct __kernel_timespec *ts, uint64_t ud)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	io_uring_prep_read(s, fd, buf, len, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = ud;
	s = io_uring_get_sqe(ring);
	io_uring_prep_link_timeout(s, ts, 0);
	s->user_data = ud + 1;
	CHECK_EQ(io_uring_submit(ring), 2);
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_cqe c[8], *cqe;
	struct io_uring_sqe *s;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);

	struct __kernel_timespec t50 = { 0, 50000000 }, t10s = { 10, 0 };
	uint64_t t0 = ms_now();
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t50), -ETIME);
	CHECK(ms_now() - t0 >= 45);

	/* a timed-out wait is -ETIME whatever errno held before (EINTR from an earlier call of
	 * the program's); a NOP's CQE, reaped, left the ring's wake-up pending */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 40;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	errno = EINTR;
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t50), -ETIME);

	/* as for a kernel without IORING_FEAT_EXT_ARG (before 5.11): the library ends the wait with
	 * a TIMEOUT SQE of its own, whose CQE the program never sees */
	unsigned feat = ring.features;
	ring.features &= ~IORING_FEAT_EXT_ARG;
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t50), -ETIME);
	CHECK_EQ(io_uring_peek_cqe(&ring, &cqe), -EAGAIN);
	ring.features = feat;

	/* TIMEOUT expiring */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(s, &t50, 0, 0);
	s->user_data = 1;
	t0 = ms_now();
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, -ETIME);
	CHECK(ms_now() - t0 >= 45);

	/* TIMEOUT with count 2: two NOPs complete it */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(s, &t10s, 2, 0);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 1);
	for (int i = 0; i < 2; i++) {
		s = io_uring_get_sqe(&ring);
		io_uring_prep_nop(s);
		s->user_data = 3 + (uint64_t)i;
	}
	t0 = ms_now();
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 3);
	CHECK_EQ(tu_find(c, 3, 2)->res, 0);
	CHECK(ms_now() - t0 < 5000);

	/* TIMEOUT_REMOVE with IORING_TIMEOUT_UPDATE: of two 10 s timeouts, the later one armed is
	 * moved to 50 ms and fires then (-ETIME), before the other (13: removed below); an update
	 * of an unknown one is -ENOENT */
	for (int i = 0; i < 2; i++) {
		s = io_uring_get_sqe(&ring);
		io_uring_prep_timeout(s, &t10s, 0, 0);
		s->user_data = 13 + (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), 2);
	for (int i = 0; i < 2; i++) {
		s = io_uring_get_sqe(&ring);
		io_uring_prep_timeout_update(s, &t50, i ? 12345 : 14, 0);   /* 14; one unknown */
		s->user_data = 15 + (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), 2);
	struct __kernel_timespec t3s = { 3, 0 };
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t3s), 0);
		c[i] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	CHECK_EQ(tu_find(c, 3, 15)->res, 0);
	CHECK_EQ(tu_find(c, 3, 16)->res, -ENOENT);
	CHECK_EQ(tu_find(c, 3, 14)->res, -ETIME);

	/* TIMEOUT_REMOVE */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(s, &t10s, 0, 0);
	s->user_data = 10;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout_remove(s, 10, 0);
	s->user_data = 11;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout_remove(s, 12345, 0);
	s->user_data = 12;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout_remove(s, 13, 0);
	s->user_data = 17;
	CHECK_EQ(io_uring_submit(&ring), 4);
	tu_reap(&ring, c, 5);
	CHECK_EQ(tu_find(c, 5, 10)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 5, 11)->res, 0);
	CHECK_EQ(tu_find(c, 5, 12)->res, -ENOENT);
	CHECK_EQ(tu_find(c, 5, 13)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 5, 17)->res, 0);

	/* a waiter sleeps (CQEs were posted and reaped before): 300 ms of waiting
	 * cost this thread (almost) no CPU */
	struct __kernel_timespec t300 = { 0, 300000000 };
	double c0 = thread_cpu();
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t300), -ETIME);
	CHECK(thread_cpu() - c0 < 0.1);

	/* LINK_TIMEOUT fires: the pipe read is cancelled */
	int p[2];
	char buf[8];
	CHECK_EQ(pipe(p), 0);
	t0 = ms_now();
	read_linked(&ring, p[0], buf, sizeof buf, &t50, 20);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 20)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 2, 21)->res, -ETIME);
	CHECK(ms_now() - t0 >= 45);

	/* LINK_TIMEOUT of 10 s on a read that waits: nothing for 300 ms, then the data wins */
	read_linked(&ring, p[0], buf, sizeof buf, &t10s, 24);
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t300), -ETIME);
	CHECK_EQ(write(p[1], "wait", 4), 4);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 24)->res, 4);
	CHECK_EQ(tu_find(c, 2, 25)->res, -ECANCELED);
	CHECK(memcmp(buf, "wait", 4) == 0);

	/* a LINK_TIMEOUT with no linked request before it guards nothing: it fails its preparation
	 * (-EINVAL), so the submission stops there (no IORING_SETUP_SUBMIT_ALL): the NOP after it
	 * stays in the SQ for the next submit */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_link_timeout(s, &t50, 0);
	s->user_data = 26;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 27;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_next(&ring, &c[0]);
	CHECK_EQ(c[0].user_data, 26);
	CHECK_EQ(c[0].res, -EINVAL);
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_next(&ring, &c[0]);
	CHECK_EQ(c[0].user_data, 27);

	/* LINK_TIMEOUT loses: data is there, the timeout is cancelled */
	CHECK_EQ(write(p[1], "abc", 3), 3);
	read_linked(&ring, p[0], buf, sizeof buf, &t10s, 22);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 22)->res, 3);
	CHECK_EQ(tu_find(c, 2, 23)->res, -ECANCELED);

	/* ASYNC_CANCEL of a pending read; of nothing */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, p[0], buf, sizeof buf, 0);
	s->user_data = 30;
	CHECK_EQ(io_uring_submit(&ring), 1);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_cancel64(s, 30, 0);
	s->user_data = 31;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_cancel64(s, 777, 0);
	s->user_data = 32;
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 3);
	CHECK_EQ(tu_find(c, 3, 30)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 3, 31)->res, 0);
	CHECK_EQ(tu_find(c, 3, 32)->res, -ENOENT);

	/* a TIMEOUT_REMOVE takes no flags but the update ones: IORING_TIMEOUT_ABS alone is -EINVAL */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout_remove(s, 777, IORING_TIMEOUT_ABS);
	s->user_data = 33;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_next(&ring, &c[0]);
	CHECK_EQ(c[0].res, -EINVAL);

	/* a TIMEOUT that expires ends an io_uring_enter waiting for more CQEs than there will be
	 * (the kernel's cq_timeouts); the alarm ends the test if the wait does not end */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(s, &t50, 0, 0);
	s->user_data = 34;
	CHECK_EQ(io_uring_submit(&ring), 1);
	alarm(10);
	CHECK_EQ(io_uring_enter(ring.ring_fd, 0, 4, IORING_ENTER_GETEVENTS, NULL), 0);
	alarm(0);
	tu_next(&ring, &c[0]);
	CHECK_EQ(c[0].user_data, 34);
	CHECK_EQ(c[0].res, -ETIME);

	/* a timed wait for 2 CQEs that finds 1 when its time is up answers 0, not -ETIME (the CQ
	 * is not empty), as the kernel's */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 35;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_getevents_arg ga = { .ts = (uint64_t)(uintptr_t)&t50 };
	CHECK_EQ(io_uring_enter2(ring.ring_fd, 0, 2, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
				 (sigset_t *)&ga, sizeof(ga)), 0);
	tu_next(&ring, &c[0]);
	CHECK_EQ(c[0].user_data, 35);

	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
