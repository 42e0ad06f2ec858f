/* SPDX-License-Identifier: MIT */
/* Description: IORING_OP_ACCEPT with a bad addrlen pointer (sqe->addr2) answers -EFAULT in
 * all three modes, as the kernel does, and never crashes the program: the drop-in makes the
 * accept4 system call itself, since a libc wrapper may read *addrlen first (ASan's does: the
 * test runs in the sanitizer suite too). */
#include "test_uring.h"
#include <sys/socket.h>
#include <sys/un.h>

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "urfs-accept-efault-%d", getpid());
	socklen_t al = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(l >= 0 && c >= 0);
	CHECK_EQ(bind(l, (struct sockaddr *)&a, al), 0);
	CHECK_EQ(listen(l, 4), 0);
	CHECK_EQ(connect(c, (struct sockaddr *)&a, al), 0);
	static struct sockaddr_un peer;
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_accept(s, l, (struct sockaddr *)&peer, (socklen_t *)0x10, 0);
	s->user_data = 7;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe cqe;
	tu_reap(&ring, &cqe, 1);
	CHECK_EQ(cqe.user_data, 7);
	CHECK_EQ(cqe.res, -EFAULT);
	close(c);
	close(l);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
