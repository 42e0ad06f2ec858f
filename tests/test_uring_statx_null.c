/* SPDX-License-Identifier: MIT */
/* Description: IORING_OP_STATX with a NULL statx buffer (sqe->addr2) answers -EFAULT in all three
 * modes, as the kernel does; the drop-in makes the statx system call itself, since libc declares
 * that argument non-null (passing NULL to it is undefined behaviour, which UBSan reports: the
 * sanitizer suite runs this test too). */
#include "test_uring.h"
#include <fcntl.h>

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_statx(s, AT_FDCWD, "/", 0, STATX_BASIC_STATS, NULL);
	s->user_data = 5;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe cqe;
	tu_reap(&ring, &cqe, 1);
	CHECK_EQ(cqe.user_data, 5);
	CHECK_EQ(cqe.res, -EFAULT);
	/* and a real buffer still works */
	static struct statx st;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_statx(s, AT_FDCWD, "/", 0, STATX_BASIC_STATS, &st);
	s->user_data = 6;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, &cqe, 1);
	CHECK_EQ(cqe.res, 0);
	CHECK(S_ISDIR(st.stx_mode));
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
