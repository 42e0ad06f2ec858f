/* SPDX-License-Identifier: MIT */
/* Description: the system-call front (issue 30) cancels, at exec, the requests a process
 * submitted to a ring shared across fork, as the kernel does (io_uring_task_cancel): a child
 * submits a TIMEOUT of 10 s linked to a NOP on its parent's ring and execs (execl, whose glibc
 * code calls execve past any wrapper, and execv); the parent then finds both CQEs, -ECANCELED,
 * well before the 10 s (liburing's test/timeout.c, test_timeout_link_cancel, waited for ever).
 * A vfork()ed child that execs shares its parent's memory: the parent's own request stays.
 * Run under the front by tu_front_main (test_uring_front.h). Must never: pass when the front
 * did not start (tu_front_main checks the maps).
 */
#include "test_uring.h"
#include "test_uring_front.h"
#include <time.h>

static uint64_t ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* A child submits TIMEOUT(10 s) -> NOP on a new ring and execs /bin/true (with execl or
 * execv); the parent must see both CQEs -ECANCELED within 5 s. (A ring of its own each time:
 * liburing keeps the SQ's tail it has handed out in the process's own memory, so a second
 * child of the same parent would start from the parent's stale copy, as with the kernel's.) */
static void exec_cancels(int use_execl)
{
	struct io_uring r, *ring = &r;
	CHECK_EQ(io_uring_queue_init(8, ring, 0), 0);
	CHECK_EQ(tu_ring_is_emulated(ring->ring_fd), 1);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct __kernel_timespec t10s = { 10, 0 };
		struct io_uring_sqe *s = io_uring_get_sqe(ring);
		io_uring_prep_timeout(s, &t10s, 0, 0);
		s->flags |= IOSQE_IO_LINK;
		s->user_data = 1;
		s = io_uring_get_sqe(ring);
		io_uring_prep_nop(s);
		s->user_data = 2;
		if (io_uring_submit(ring) != 2)
			_exit(3);
		if (use_execl) {
			execl("/bin/true", "true", (char *)NULL);
		} else {
			char *argv[] = { "true", NULL };
			execv("/bin/true", argv);
		}
		_exit(4);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_EQ(st, 0);                 /* the child exec'd /bin/true, which exits 0 */
	uint64_t t0 = ms_now();
	for (int i = 0; i < 2; i++) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec t5s = { 5, 0 };
		CHECK_EQ(io_uring_wait_cqe_timeout(ring, &cqe, &t5s), 0);
		CHECK_EQ(cqe->res, -ECANCELED);
		io_uring_cqe_seen(ring, cqe);
	}
	CHECK(ms_now() - t0 < 5000);
	io_uring_queue_exit(ring);
}

static int front_body(void)
{
	struct io_uring ring;
	exec_cancels(1);
	exec_cancels(0);
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);

	/* a vfork()ed child's exec leaves the parent's TIMEOUT (50 ms) alone: it fires (the ring
	 * is shared across fork first, and the parent submits on it after) */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	struct __kernel_timespec t50 = { 0, 50000000 };
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(s, &t50, 0, 0);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 1);
	pid = vfork();
	if (pid == 0) {
		char *argv[] = { "true", NULL };
		execv("/bin/true", argv);
		_exit(4);
	}
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec t5s = { 5, 0 };
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t5s), 0);
	CHECK_EQ(cqe->user_data, 3);
	CHECK_EQ(cqe->res, -ETIME);
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return 0;
}

int main(int argc, char **argv)
{
	return tu_front_main(argc, argv, front_body);
}
