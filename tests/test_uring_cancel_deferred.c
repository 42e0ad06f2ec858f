/* SPDX-License-Identifier: MIT */
/* Description: cancelling a request held back by IOSQE_IO_DRAIN does not let what is hard-linked
 * after it start ahead of the drain, in all three modes: a drained READ waits on a pipe (on a
 * worker or the reactor), a POLL_ADD hard-linked to a NOP waits behind it;
 * IORING_REGISTER_SYNC_CANCEL of the poll (the emulation can cancel a deferred request, the kernel
 * cannot); the NOP is then either cancelled too or runs after the drained READ completed, never
 * before. */
#include "test_uring.h"
#include <poll.h>

/* ud 0: anything; else that request */
static void cancel(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.addr = ud;
	reg.flags = ud ? 0 : IORING_ASYNC_CANCEL_ANY;
	reg.fd = -1;
	reg.timeout.tv_nsec = 10000000;
	io_uring_register_sync_cancel(ring, &reg);   /* -EALREADY/-ENOENT are fine here */
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int a[2], b[2];
	CHECK_EQ(pipe(a), 0);
	CHECK_EQ(pipe(b), 0);
	static char buf[8];
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, a[0], buf, 1, 0);
	s->flags |= IOSQE_ASYNC | IOSQE_IO_DRAIN;
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), 1);
	usleep(50000);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_poll_add(s, b[0], POLLIN);
	s->flags |= IOSQE_IO_HARDLINK;
	s->user_data = 2;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 2);
	cancel(&ring, 2);
	CHECK_EQ(write(a[1], "x", 1), 1);
	usleep(50000);
	cancel(&ring, 0);
	struct io_uring_cqe c[3];
	for (int i = 0; i < 3; i++) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { 2, 0 };
		int r = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (r)
			FAIL("CQE %d of 3: %s", i + 1, strerror(-r));
		c[i] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	int at1 = -1, at3 = -1;
	for (int i = 0; i < 3; i++) {
		if (c[i].user_data == 1)
			at1 = i;
		if (c[i].user_data == 3)
			at3 = i;
	}
	CHECK(at1 >= 0 && at3 >= 0);
	if (c[at3].res != -ECANCELED && at3 < at1)
		FAIL("the NOP linked behind the drain ran (res %d) before the drained READ completed", c[at3].res);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
