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
 * would take it at once: without the fix that is what happened (its CQE carried an fd). */
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

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int emulated = tu_ring_is_emulated(ring.ring_fd);
	struct sockaddr_in addr;
	int l = tu_listener(0, &addr);
	target = l;
	__atomic_store_n(&held, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&release_it, 0, __ATOMIC_SEQ_CST);

	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_none(&ring);                           /* it waits: nothing to accept */
	__atomic_store_n(&hold, 1, __ATOMIC_SEQ_CST);
	int c = tu_connect(&addr);                /* wakes the reactor, whose poll is held */
	if (emulated) {
		struct timespec t0, now;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (!__atomic_load_n(&held, __ATOMIC_SEQ_CST)) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec > 5)
				FAIL("the drop-in's thread never polled the listener after the connection");
			usleep(1000);
		}
	}
	s = tu_sqe(&ring);
	io_uring_prep_cancel64(s, 1, 0);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 1);
	__atomic_store_n(&release_it, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&hold, 0, __ATOMIC_SEQ_CST);
	struct io_uring_cqe cq[2];
	cq[0] = tu_wait_at(&ring, 5, __LINE__);
	cq[1] = tu_wait_at(&ring, 5, __LINE__);
	const struct io_uring_cqe *acc = tu_find(cq, 2, 1), *can = tu_find(cq, 2, 2);
	if (emulated) {
		if (acc->res >= 0)
			FAIL("the cancelled ACCEPT went on waiting and took the connection (fd %d)", acc->res);
		if (acc->res != -ECANCELED)
			FAIL("the cancelled ACCEPT: %d, not -ECANCELED", acc->res);
		if (can->res != -EALREADY)
			FAIL("the cancel: %d, not -EALREADY", can->res);
	} else {
		/* the kernel's ring has no such window: the connection completes the accept
		 * (task work on the way back from connect), the cancel finds nothing */
		if (acc->res < 0 || can->res != -ENOENT)
			FAIL("kernel: accept %d, cancel %d (not an fd and -ENOENT)", acc->res, can->res);
		close(acc->res);
		printf("kernel: the connection completed the accept before the cancel (no window to hold)\n");
	}
	tu_none(&ring);
	target = -1;
	close(c);
	close(l);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
