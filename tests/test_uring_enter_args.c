/* SPDX-License-Identifier: MIT */
/* Description: io_uring_enter's signal-mask argument and a timed wait, as the kernel's ring
 * answers them, in all three modes: a sigmask whose size is not the kernel's sigset
 * (_NSIG / 8 bytes), given directly or inside IORING_ENTER_EXT_ARG's io_uring_getevents_arg,
 * fails a wait that would sleep with -EINVAL (a wait for none, or for CQEs that are there,
 * answers 0); SQEs the same enter submits are submitted first (the enter answers their
 * count), and so is an EXT_ARG struct of the wrong size or unreadable (its -EINVAL or -EFAULT
 * only when nothing was submitted); a timeout already up still reads the mask first; the
 * right size is taken;
 * io_uring_submit_and_wait_timeout of a request that never completes submits it, waits once for
 * its timeout and answers -ETIME (it does not wait a second time after the enter that submitted
 * returned); with SQPOLL, io_uring_enter with SQ_WAKEUP | SQ_WAIT on an SQ full of SQEs the
 * sleeping poller has not taken returns only when it has room again (emulated, at once in the
 * ring's head; the kernel's publishes its head a moment after). */
#include "test_uring.h"
#include "parts.h"
#include <signal.h>
#include <poll.h>
#include <time.h>

#define SIGSZ (_NSIG / 8)

static void on_alarm(int sig)
{
	(void)sig;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The SQEs got from tu_sqe made visible to the ring, as liburing's submit does, without entering. */
static void flush_sq(struct io_uring *ring)
{
	io_uring_smp_store_release(ring->sq.ktail, ring->sq.sqe_tail);
	ring->sq.sqe_head = ring->sq.sqe_tail;
}

static int enter_mask(struct io_uring *ring, unsigned submit, unsigned wait, sigset_t *mask, size_t sz, int ext)
{
	unsigned flags = IORING_ENTER_GETEVENTS;
	if (!ext)
		return io_uring_enter2((unsigned)ring->ring_fd, submit, wait, flags, mask, sz);
	struct io_uring_getevents_arg ga = { (uint64_t)(uintptr_t)mask, (uint32_t)sz, 0, 0 };
	return io_uring_enter2((unsigned)ring->ring_fd, submit, wait, flags | IORING_ENTER_EXT_ARG,
			       (sigset_t *)&ga, sizeof(ga));
}

/* A sigmask of the wrong size is the error of a wait that sleeps: -EINVAL when fewer CQEs than
 * min_complete are ready; none is asked for or enough are there: 0; after SQEs were submitted
 * the enter answers their count (the kernel submits before it looks at the wait's arguments). */
static void sigmask_size(struct io_uring *ring)
{
	sigset_t mask;
	sigemptyset(&mask);
	struct io_uring_cqe c;
	uint64_t ud = 1;
	/* a wait that took the wrong size would sleep: SIGALRM ends it (-EINTR), a failure */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);
	alarm(10);
	for (int ext = 0; ext < 2; ext++) {
		for (size_t sz = 0; sz <= 2 * SIGSZ; sz++) {
			if (sz == SIGSZ)
				continue;
			CHECK_EQ(enter_mask(ring, 0, 0, &mask, sz, ext), 0);
			CHECK_EQ(enter_mask(ring, 0, 1, &mask, sz, ext), -EINVAL);
		}
		struct io_uring_sqe *s = tu_sqe(ring);
		io_uring_prep_nop(s);
		s->user_data = ud;
		flush_sq(ring);
		CHECK_EQ(enter_mask(ring, 1, 1, &mask, 4, ext), 1);
		tu_next(ring, &c);
		CHECK_EQ(c.user_data, ud++);
		CHECK_EQ(c.res, 0);
		s = tu_sqe(ring);
		io_uring_prep_nop(s);
		s->user_data = ud;
		flush_sq(ring);
		CHECK_EQ(enter_mask(ring, 1, 1, &mask, SIGSZ, ext), 1);
		CHECK_EQ(io_uring_cq_ready(ring), 1u);
		tu_next(ring, &c);
		CHECK_EQ(c.user_data, ud++);
	}
	CHECK_EQ(io_uring_cq_ready(ring), 0u);
	alarm(0);

	/* EXT_ARG's struct itself is read after the SQEs are submitted, too */
	struct io_uring_getevents_arg ga = { 0, 0, 0, 0 };
	unsigned fd = (unsigned)ring->ring_fd, ge = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
	CHECK_EQ(io_uring_enter2(fd, 0, 1, ge, (sigset_t *)&ga, sizeof(ga) + 8), -EINVAL);
	CHECK_EQ(io_uring_enter2(fd, 0, 1, ge, (sigset_t *)8, sizeof(ga)), -EFAULT);
	for (int bad = 0; bad < 2; bad++) {
		struct io_uring_sqe *s = tu_sqe(ring);
		io_uring_prep_nop(s);
		s->user_data = ud;
		flush_sq(ring);
		CHECK_EQ(io_uring_enter2(fd, 1, 1, ge, bad ? (sigset_t *)8 : (sigset_t *)&ga,
					 bad ? sizeof(ga) : sizeof(ga) + 8), 1);
		tu_next(ring, &c);
		CHECK_EQ(c.user_data, ud++);
	}
	/* a timeout already up: the mask is read first (-EINVAL), a right one gives -ETIME */
	struct __kernel_timespec ts = { 0, 0 };
	ga = (struct io_uring_getevents_arg){ (uint64_t)(uintptr_t)&mask, 4, 0, (uint64_t)(uintptr_t)&ts };
	CHECK_EQ(io_uring_enter2(fd, 0, 1, ge, (sigset_t *)&ga, sizeof(ga)), -EINVAL);
	ga.sigmask_sz = SIGSZ;
	CHECK_EQ(io_uring_enter2(fd, 0, 1, ge, (sigset_t *)&ga, sizeof(ga)), -ETIME);
}

/* A POLL_ADD on an empty pipe, submitted by the timed wait itself: -ETIME after one timeout.
 * A second wait would take a second timeout: 1 s each, so the bound (1.9 s) is not a speed. */
static void one_timed_wait(struct io_uring *ring)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_poll_add(s, p[0], POLLIN);
	s->user_data = 3;
	struct __kernel_timespec ts = { 1, 0 };
	struct io_uring_cqe *cqe = NULL;
	double t0 = now_s();
	CHECK_EQ(io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL), -ETIME);
	double took = now_s() - t0;
	CHECK(took >= 0.99);
	if (took >= 1.9)
		FAIL("the timed wait took %.2f s for a timeout of 1 s: it waited twice", took);
	CHECK_EQ(io_uring_sq_ready(ring), 0u);
	CHECK_EQ(write(p[1], "x", 1), 1);
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, 3);
	CHECK(c.res & POLLIN);
	close(p[0]);
	close(p[1]);
}

/* SQPOLL: an SQ full of SQEs the poller has not taken (it sleeps); io_uring_enter with
 * SQ_WAKEUP | SQ_WAIT returns when the SQ has room again, never while it is full. */
static void sq_wait(void)
{
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQPOLL;
	p.sq_thread_idle = 10;
	int e = io_uring_queue_init_params(8, &ring, &p);
	if (e == -EPERM && tu_mode == TU_KERNEL) {
		tu_part_skip("SQPOLL", "SQ_WAIT on a full SQ", "io_uring_setup(SQPOLL): EPERM");
		return;
	}
	CHECK_EQ(e, 0);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 400 && !(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_NEED_WAKEUP); i++)
			usleep(5000);
		CHECK(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_NEED_WAKEUP);
		unsigned n = io_uring_sq_space_left(&ring);
		CHECK(n > 0);
		for (unsigned i = 0; i < n; i++) {
			struct io_uring_sqe *s = tu_sqe(&ring);
			io_uring_prep_nop(s);
			s->user_data = 10 + i;
		}
		flush_sq(&ring);
		CHECK_EQ(io_uring_sq_space_left(&ring), 0u);
		CHECK_EQ(io_uring_enter2((unsigned)ring.ring_fd, 0, 0, IORING_ENTER_SQ_WAKEUP | IORING_ENTER_SQ_WAIT,
					 NULL, 0), 0);
		/* the kernel's SQ_WAIT looks at the head its poller has taken, which it publishes
		 * to the ring's head a moment later: there, room must show within a second; the
		 * drop-in's poller publishes the head it waits on, so there it shows at once */
		for (int i = 0; tu_mode == TU_KERNEL && i < 1000 && !io_uring_sq_space_left(&ring); i++)
			usleep(1000);
		if (io_uring_sq_space_left(&ring) == 0)
			FAIL("round %d: SQ_WAIT returned with the SQ still full", round);
		for (unsigned i = 0; i < n; i++) {
			struct io_uring_cqe c;
			tu_next(&ring, &c);
			CHECK(c.user_data >= 10 && c.user_data < 10 + n);
		}
	}
	io_uring_queue_exit(&ring);
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	sigmask_size(&ring);
	one_timed_wait(&ring);
	io_uring_queue_exit(&ring);
	sq_wait();
}

int main(void)
{
	return tu_uring_main(body);
}
