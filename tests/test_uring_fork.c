/* SPDX-License-Identifier: MIT */
/* Description: the liburing drop-in reads a request's argument memory from the process that
 * submits it: a fork()ed child's TIMEOUT takes the child's timespec, not the parent's at the
 * same address (the library asks its pid once and again after fork); fork() returns after
 * rings were closed out of the order they were set up in and another one set up. */
#include "test_uring.h"

static struct __kernel_timespec ts;

static int32_t timeout_res(void)
{
	struct io_uring ring;
	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(sqe, &ts, 0, 0);
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
	int32_t res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	io_uring_queue_exit(&ring);
	return res;
}

static void body(void)
{
	ts = (struct __kernel_timespec){ 0, 1000000 };
	CHECK_EQ(timeout_res(), -ETIME);              /* the parent has copied from itself */
	ts.tv_sec = -1;                               /* invalid here, in the parent */
	CHECK_EQ(timeout_res(), -EINVAL);
	/* rings closed out of the order they were set up in (the middle one, then the first),
	 * then one more set up: fork(), which goes through every open ring, returns (a broken
	 * list of rings would loop or lock a ring twice: SIGALRM ends the test then) */
	struct io_uring rg[4];
	for (int i = 0; i < 3; i++)
		CHECK_EQ(io_uring_queue_init(4, &rg[i], 0), 0);
	io_uring_queue_exit(&rg[1]);
	io_uring_queue_exit(&rg[0]);
	CHECK_EQ(io_uring_queue_init(4, &rg[3], 0), 0);
	alarm(30);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		ts.tv_sec = 0;                        /* valid in the child only */
		CHECK_EQ(timeout_res(), -ETIME);
		exit(0);
	}
	tu_child_ok(pid);
	alarm(0);
	io_uring_queue_exit(&rg[2]);
	io_uring_queue_exit(&rg[3]);
}

int main(void)
{
	return tu_uring_main(body);
}
