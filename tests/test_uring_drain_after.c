/* Description: IOSQE_IO_DRAIN also holds back what is submitted after the drained request, in
 * all three modes: a drained POLL_ADD that starts at once (nothing before it) and waits, then a
 * NOP and a READ of a file in the same submission and a NOP in a later one: none of them
 * completes before the poll (the kernel's ring runs the request after a drain as drained too).
 * Found by fuzz/fuzz_uring: the emulation ran them at once when the drained request had not had
 * to wait for anything itself. */
#include "test_uring.h"
#include <fcntl.h>
#include <poll.h>

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	static char buf[64];
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_poll_add(s, p[0], POLLIN);
	s->flags |= IOSQE_IO_DRAIN;
	s->user_data = 1;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 2;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, fd, buf, sizeof buf, 0);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 3);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 4;
	CHECK_EQ(io_uring_submit(&ring), 1);
	/* nothing may complete while the poll waits */
	struct io_uring_cqe *c;
	struct __kernel_timespec ts = { 0, 100000000 };
	int r = io_uring_wait_cqe_timeout(&ring, &c, &ts);
	if (r == 0)
		FAIL("user_data %llu (res %d) completed while the drained poll waits",
		     (unsigned long long)c->user_data, c->res);
	CHECK_EQ(r, -ETIME);
	CHECK_EQ(write(p[1], "x", 1), 1);
	struct io_uring_cqe got[4];
	tu_reap(&ring, got, 4);
	CHECK_EQ(got[0].user_data, 1);
	CHECK(got[0].res & POLLIN);
	for (int i = 1; i < 4; i++)
		CHECK(got[i].res >= 0);
	close(fd);
	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
