/* SPDX-License-Identifier: MIT */
/* Description: two rings wait to ACCEPT on one blocking listener and one connection comes:
 * one ring gets it, the other goes on waiting and can be cancelled (-ECANCELED, or -EINTR had
 * the accept started), and both rings exit, in all three modes, 40 rounds. Emulated, both
 * rings' reactors wake for the one connection; the listener is marked busy from one reactor's
 * poll to its accept4, so the other does not block in accept4 for good (where its cancel would
 * never complete and io_uring_queue_exit would hang joining that reactor). The drop-in's
 * readiness check of the listener is slowed
 * (this program's poll) so that both reactors meet in that window every round. First, a cancel
 * submitted before an ACCEPT in one submit finds nothing and leaves it waiting.
 * Serial: makes two reactors meet in a 2 ms window (tests/run.sh runs it alone).
 */
#include "test_uring.h"
#include <poll.h>
#include <time.h>

#define ROUNDS 40

/* The listener whose readiness checks are slowed (-1: none). */
static int slow_fd = -1;

/* This program's own poll, which the drop-in's reaches first: a zero-timeout check that finds
 * the raced listener readable returns 2 ms late, so that the other ring's reactor, woken by the
 * same connection, gets to its own check before this one's accept4. Without that window a fast
 * machine never has the race (the busy mark's mutant survived CI there); the kernel's ring
 * does not call it. */
int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "poll");
	int r = real(fds, n, timeout);
	if (r > 0 && n == 1 && timeout == 0 && (fds[0].revents & POLLIN) &&
	    fds[0].fd == __atomic_load_n(&slow_fd, __ATOMIC_RELAXED))
		usleep(2000);
	return r;
}

/* The next CQE of either ring within 5 s: *which gets 0 (a) or 1 (b). */
static struct io_uring_cqe next_either(struct io_uring *a, struct io_uring *b, int *which)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct io_uring *rings[2] = { a, b };
		for (int i = 0; i < 2; i++) {
			struct io_uring_cqe *cqe;
			if (io_uring_peek_cqe(rings[i], &cqe) == 0) {
				struct io_uring_cqe c = *cqe;
				io_uring_cqe_seen(rings[i], cqe);
				*which = i;
				return c;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000000000L + (now.tv_nsec - t0.tv_nsec) >= 5000000000L)
			FAIL("no accept completed within 5 s of the connection");
		usleep(100);
	}
}

/* A cancel (by fd, then by user_data) submitted with an ACCEPT after it, in one submit, finds
 * nothing (-ENOENT: the kernel issues a submission's SQEs in order) and the accept waits on,
 * then takes the connection that comes. */
static void cancel_before(struct io_uring *ring, int l, const struct sockaddr_in *addr)
{
	for (int by_fd = 1; by_fd >= 0; by_fd--) {
		struct io_uring_sqe *s = tu_sqe(ring);
		if (by_fd) {
			io_uring_prep_cancel_fd(s, l, 0);
		} else {
			io_uring_prep_cancel64(s, 7, 0);
		}
		s->user_data = 2;
		s = tu_sqe(ring);
		io_uring_prep_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
		s->user_data = 7;
		CHECK_EQ(io_uring_submit(ring), 2);
		struct io_uring_cqe c = tu_wait_at(ring, 5, __LINE__);
		CHECK_EQ(c.user_data, 2);
		if (c.res != -ENOENT)
			FAIL("cancel by %s before the ACCEPT in one submit: %d, not -ENOENT", by_fd ? "fd" : "user_data", c.res);
		tu_none(ring);                    /* the accept waits */
		int cl = tu_connect(addr);
		c = tu_wait_at(ring, 5, __LINE__);
		CHECK_EQ(c.user_data, 7);
		if (c.res < 0)
			FAIL("the ACCEPT after a cancel by %s: %s", by_fd ? "fd" : "user_data", strerror(-c.res));
		close(c.res);
		close(cl);
	}
}

static void body(void)
{
	struct io_uring ra, rb;
	CHECK_EQ(io_uring_queue_init(8, &ra, 0), 0);
	CHECK_EQ(io_uring_queue_init(8, &rb, 0), 0);
	tu_uring_check_mode(&ra);
	struct sockaddr_in addr;
	int l = tu_listener(0, &addr);
	cancel_before(&ra, l, &addr);
	__atomic_store_n(&slow_fd, l, __ATOMIC_RELAXED);
	for (int round = 0; round < ROUNDS; round++) {
		struct io_uring *rings[2] = { &ra, &rb };
		for (int i = 0; i < 2; i++) {
			struct io_uring_sqe *s = tu_sqe(rings[i]);
			io_uring_prep_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
			s->user_data = 1;
			CHECK_EQ(io_uring_submit(rings[i]), 1);
		}
		int c = tu_connect(&addr);
		int w;
		struct io_uring_cqe won = next_either(&ra, &rb, &w);
		CHECK_EQ(won.user_data, 1);
		if (won.res < 0)
			FAIL("round %d: accept: %s", round, strerror(-won.res));
		close(won.res);
		struct io_uring *lost = rings[1 - w];
		struct io_uring_sqe *s = tu_sqe(lost);
		io_uring_prep_cancel64(s, 1, 0);
		s->user_data = 2;
		CHECK_EQ(io_uring_submit(lost), 1);
		for (int k = 0; k < 2; k++) {
			struct io_uring_cqe e = tu_wait_at(lost, 5, __LINE__);
			if (e.user_data == 1 && e.res != -ECANCELED && e.res != -EINTR)
				FAIL("round %d: the other ring's accept: %d, not cancelled", round, e.res);
			if (e.user_data == 2 && e.res != 0 && e.res != -EALREADY)
				FAIL("round %d: the cancel: %d", round, e.res);
		}
		close(c);
	}
	__atomic_store_n(&slow_fd, -1, __ATOMIC_RELAXED);
	tu_none(&ra);                             /* nothing more came */
	tu_none(&rb);
	close(l);
	io_uring_queue_exit(&ra);
	io_uring_queue_exit(&rb);
}

int main(void)
{
	return tu_uring_main(body);
}
