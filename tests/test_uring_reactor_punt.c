/* SPDX-License-Identifier: MIT */
/* Description: an opcode that may block (SPLICE here; the worker-only ones of docs/DROPIN.md) goes
 * to a worker when the reactor starts it too, not only when it is submitted: a POLL_ADD on a pipe
 * linked to a SPLICE from an empty pipe; once the poll fires, the SPLICE waits for data, and
 * a TIMEOUT of 10 ms submitted after that still completes (-ETIME) at once; the SPLICE completes
 * when its pipe gets a byte. In all three modes. (A reactor that ran it itself would block in
 * splice(2): no timer would fire and no readiness be seen until the byte came.) */
#include "test_uring.h"
#include <poll.h>

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int p[2], a[2], b[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(pipe(a), 0);
	CHECK_EQ(pipe(b), 0);
	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_poll_add(s, p[0], POLLIN);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 1;
	s = tu_sqe(&ring);
	io_uring_prep_splice(s, a[0], -1, b[1], -1, 1, 0);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_none(&ring);
	CHECK_EQ(write(p[1], "x", 1), 1);         /* the poll fires, the SPLICE starts */
	struct io_uring_cqe c = tu_wait_at(&ring, 5, __LINE__);
	CHECK_EQ(c.user_data, 1);
	CHECK(c.res & POLLIN);
	usleep(20000);                            /* the SPLICE waits for a byte meanwhile */
	struct __kernel_timespec ts = { 0, 10000000 };
	s = tu_sqe(&ring);
	io_uring_prep_timeout(s, &ts, 0, 0);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 1);
	c = tu_wait_at(&ring, 5, __LINE__);
	if (c.user_data != 3 || c.res != -ETIME)
		FAIL("the TIMEOUT behind a waiting SPLICE: user_data %llu res %d (not 3, -ETIME)",
		     (unsigned long long)c.user_data, c.res);
	CHECK_EQ(write(a[1], "y", 1), 1);
	c = tu_wait_at(&ring, 5, __LINE__);
	CHECK_EQ(c.user_data, 2);
	CHECK_EQ(c.res, 1);
	tu_none(&ring);
	for (int i = 0; i < 2; i++) {
		close(p[i]);
		close(a[i]);
		close(b[i]);
	}
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
