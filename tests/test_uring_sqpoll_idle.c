/* SPDX-License-Identifier: MIT */
/* Description: sq_thread_idle's meaning for an IORING_SETUP_SQPOLL ring, in all three modes: within
 * its idle time after the last SQE the poller keeps polling, IORING_SQ_NEED_WAKEUP stays clear and
 * an SQE published without io_uring_enter (io_uring_submit enters only when the flag is set) is
 * taken; once idle for sq_thread_idle ms (100 here) it sets NEED_WAKEUP, never sooner, and an
 * io_uring_submit then wakes it (docs/DROPIN.md: SQPOLL thread). The same on a ring shared across
 * fork(): once set, NEED_WAKEUP stays set while nothing comes (20 looks over 200 ms) and the
 * process uses under 50 ms of CPU meanwhile (the poller sleeps; emulated, it looks at the SQ every
 * 10 ms). */
#include "test_uring.h"
#include <sys/resource.h>
#include <time.h>

static uint64_t ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* CPU time of the whole process (every thread, the poller too), in seconds. */
static double process_cpu(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec / 1e6 +
	       (double)u.ru_stime.tv_sec + (double)u.ru_stime.tv_usec / 1e6;
}

static void sqpoll_ring(struct io_uring *ring, unsigned idle_ms)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SQPOLL;
	p.sq_thread_idle = idle_ms;
	CHECK_EQ(io_uring_queue_init_params(4, ring, &p), 0);
	tu_uring_check_mode(ring);
}

static int need_wakeup(struct io_uring *ring)
{
	return (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_NEED_WAKEUP) != 0;
}

/* A NOP (user_data ud) submitted and its CQE reaped, within 5 s. */
static void nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_nop(s);
	s->user_data = ud;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(c.res, 0);
}

static void body(void)
{
	struct io_uring ring;
	/* within the idle time (2 s): polling, no NEED_WAKEUP, a published SQE is taken */
	sqpoll_ring(&ring, 2000);
	nop(&ring, 1);
	usleep(20000);
	CHECK(!need_wakeup(&ring));
	nop(&ring, 2);                       /* io_uring_submit does not enter: the poller takes it */
	CHECK(!need_wakeup(&ring));
	io_uring_queue_exit(&ring);

	/* idle for 100 ms: NEED_WAKEUP, not before; a submit wakes the poller */
	sqpoll_ring(&ring, 100);
	uint64_t t0 = ms_now();
	nop(&ring, 3);
	for (int i = 0; !need_wakeup(&ring); i++) {
		if (i == 5000)
			FAIL("no NEED_WAKEUP within 5 s of idling");
		usleep(1000);
	}
	CHECK(ms_now() - t0 >= 95);
	nop(&ring, 4);
	io_uring_queue_exit(&ring);

	/* the same on a ring shared across fork() (the child has left): once idle the poller
	 * sleeps, NEED_WAKEUP stays set (looked at 20 times over 200 ms), a submit wakes it */
	sqpoll_ring(&ring, 100);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		exit(0);
	tu_child_ok(pid);
	nop(&ring, 5);
	for (int i = 0; !need_wakeup(&ring); i++) {
		if (i == 5000)
			FAIL("no NEED_WAKEUP within 5 s of idling (shared ring)");
		usleep(1000);
	}
	double cpu0 = process_cpu();
	for (int i = 0; i < 20; i++) {
		if (!need_wakeup(&ring))
			FAIL("NEED_WAKEUP cleared while idle, %d ms after it was set (shared ring)", i * 10);
		usleep(10000);
	}
	double cpu = process_cpu() - cpu0;
	if (cpu >= 0.05)
		FAIL("the process used %.3f s of CPU in 200 ms idle (a poller that polls on)", cpu);
	nop(&ring, 6);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
