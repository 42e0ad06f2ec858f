/* SPDX-License-Identifier: MIT */
/* Description: a cancel that finds a one-shot ACCEPT while a thread of the drop-in is trying it
 * (between its poll and its accept4) is not lost: the cancel answers -EALREADY (emulated; the
 * kernel finds the request waiting on its poll: 0) and the ACCEPT ends -ECANCELED instead of
 * waiting on and taking the connection. Emulated and under noring; the kernel's ring has no such
 * window (the connection completes its accept before the cancel: checked as that).
 *
 * The window is made certain, not waited for: this program defines poll(), which the drop-in's
 * calls reach before libc's. On a thread other than the main one, the first poll of the
 * listener after `hold` is set says "nothing" and holds that thread until the main thread has
 * submitted its cancel. A connection is waiting meanwhile, so an accept that went back to wait
 * would take it at once (its CQE would carry an fd).
 *
 * Part 2, the same hold: a multishot ACCEPT on a second ring that finds the listener busy (the
 * first ring's one-shot held between its poll and its accept4) is armed again. Its epoll entry is
 * edge-triggered, and the connection's one edge is spent on the busy try; when the held one-shot
 * is cancelled, only the re-arm makes the multishot take the connection (without it: no CQE,
 * the connection left waiting). The kernel's ring: the one-shot takes the connection, the
 * multishot waits. */
#include "test_uring.h"
#include <poll.h>
#include <sys/syscall.h>
#include <time.h>

static int target = -1;                 /* the listener whose poll is held */
static int hold, held, release_it;      /* __atomic: main sets hold; the thread sets held */

/* glibc declares poll's fds write-only (access attribute); this one reads them, as the kernel does */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (n == 1 && fds[0].fd == target && syscall(SYS_gettid) != getpid() &&
	    __atomic_exchange_n(&hold, 0, __ATOMIC_SEQ_CST)) {
		fds[0].revents = 0;
		__atomic_store_n(&held, 1, __ATOMIC_SEQ_CST);
		for (int i = 0; i < 5000 && !__atomic_load_n(&release_it, __ATOMIC_SEQ_CST); i++)
			usleep(1000);
		return 0;                   /* "nothing waits" */
	}
	struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000L };
	return (int)syscall(SYS_ppoll, fds, n, timeout < 0 ? NULL : &ts, NULL, (size_t)8);
}

/* the same for a caller built with _FORTIFY_SOURCE, should its poll become the checked one */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	return poll(fds, n, timeout);
}

/* Wait (emulated) until the drop-in's thread is held in the listener's poll. */
static void wait_held(void)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!__atomic_load_n(&held, __ATOMIC_SEQ_CST)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > 5)
			FAIL("the drop-in's thread never polled the listener after the connection");
		usleep(1000);
	}
}

/* A blocking listener (returned) with a one-shot ACCEPT (user_data 1) on ring r and a connection
 * (*conn) waiting, the drop-in's thread held in its poll, the listener marked busy (emulated). */
static int hold_oneshot(struct io_uring *r, int emulated, int *conn)
{
	struct sockaddr_in addr;
	int l = tu_listener(0, &addr);
	target = l;
	__atomic_store_n(&held, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&release_it, 0, __ATOMIC_SEQ_CST);
	struct io_uring_sqe *s = tu_sqe(r);
	io_uring_prep_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(r), 1);
	tu_none(r);                               /* it waits: nothing to accept */
	__atomic_store_n(&hold, 1, __ATOMIC_SEQ_CST);
	*conn = tu_connect(&addr);                /* wakes the reactor, whose poll is held */
	if (emulated)
		wait_held();
	return l;
}

/* Cancel the held one-shot (user_data 2), let its thread go and check both CQEs. Emulated: the
 * cancel -EALREADY, the ACCEPT -ECANCELED. The kernel's ring has no such window: the connection
 * completes the accept (task work on the way back from connect), the cancel finds nothing. */
static void cancel_held(struct io_uring *r, int emulated)
{
	struct io_uring_sqe *s = tu_sqe(r);
	io_uring_prep_cancel64(s, 1, 0);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(r), 1);
	__atomic_store_n(&release_it, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&hold, 0, __ATOMIC_SEQ_CST);
	struct io_uring_cqe cq[2];
	cq[0] = tu_wait_at(r, 5, __LINE__);
	cq[1] = tu_wait_at(r, 5, __LINE__);
	const struct io_uring_cqe *acc = tu_find(cq, 2, 1), *can = tu_find(cq, 2, 2);
	if (emulated) {
		if (acc->res >= 0)
			FAIL("the cancelled ACCEPT went on waiting and took the connection (fd %d)", acc->res);
		if (acc->res != -ECANCELED)
			FAIL("the cancelled ACCEPT: %d, not -ECANCELED", acc->res);
		if (can->res != -EALREADY)
			FAIL("the cancel: %d, not -EALREADY", can->res);
	} else {
		if (acc->res < 0 || can->res != -ENOENT)
			FAIL("kernel: accept %d, cancel %d (not an fd and -ENOENT)", acc->res, can->res);
		close(acc->res);
	}
	tu_none(r);
}

static void cancel_trying(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int emulated = tu_ring_is_emulated(ring.ring_fd), c;
	int l = hold_oneshot(&ring, emulated, &c);
	cancel_held(&ring, emulated);
	if (!emulated)
		printf("kernel: the connection completed the accept before the cancel (no window to hold)\n");
	target = -1;
	close(c);
	close(l);
	io_uring_queue_exit(&ring);
}

static void busy_multishot(void)
{
	struct io_uring a, b;
	CHECK_EQ(io_uring_queue_init(8, &a, 0), 0);
	CHECK_EQ(io_uring_queue_init(8, &b, 0), 0);
	tu_uring_check_mode(&a);
	int emulated = tu_ring_is_emulated(a.ring_fd), c;
	int l = hold_oneshot(&a, emulated, &c);   /* ring a's thread held, the listener busy */
	struct io_uring_sqe *s = tu_sqe(&b);
	io_uring_prep_multishot_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&b), 1);
	usleep(20000);                            /* ring b meets the busy listener meanwhile */
	cancel_held(&a, emulated);
	if (emulated) {                           /* the multishot, armed again, takes the connection */
		struct io_uring_cqe m = tu_wait_at(&b, 5, __LINE__);
		if (m.user_data != 3 || m.res < 0 || !(m.flags & IORING_CQE_F_MORE))
			FAIL("the multishot: user_data %llu res %d flags %#x (not a connection, more to come)",
			     (unsigned long long)m.user_data, m.res, m.flags);
		close(m.res);
	}
	tu_none(&b);                              /* one connection, one accept */
	s = tu_sqe(&b);
	io_uring_prep_cancel64(s, 3, 0);
	s->user_data = 4;
	CHECK_EQ(io_uring_submit(&b), 1);
	struct io_uring_cqe cq[2];
	cq[0] = tu_wait_at(&b, 5, __LINE__);
	cq[1] = tu_wait_at(&b, 5, __LINE__);
	const struct io_uring_cqe *ms = tu_find(cq, 2, 3), *mc = tu_find(cq, 2, 4);
	if (ms->res != -ECANCELED || (ms->flags & IORING_CQE_F_MORE) || mc->res != 0)
		FAIL("cancelling the multishot: its CQE %d flags %#x, the cancel %d", ms->res, ms->flags,
		     mc->res);
	target = -1;
	close(c);
	close(l);
	io_uring_queue_exit(&a);
	io_uring_queue_exit(&b);
}

static void body(void)
{
	cancel_trying();
	busy_multishot();
}

int main(void)
{
	return tu_uring_main(body);
}
