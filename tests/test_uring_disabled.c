/* SPDX-License-Identifier: MIT */
/* Description: a ring set up with IORING_SETUP_R_DISABLED, in all three modes: io_uring_enter
 * is -EBADFD until IORING_REGISTER_ENABLE_RINGS (the SQE queued before stays in the SQ and is
 * submitted by the first enter after it: nothing lost); a second ENABLE_RINGS is -EBADFD;
 * a MSG_RING to a disabled ring, data or a file, is -EBADFD and posts nothing there. */
#include "test_uring.h"
#include <fcntl.h>

static void msg_to(struct io_uring *src, int target_fd, int send_fd, int32_t want)
{
	struct io_uring_sqe *s = io_uring_get_sqe(src);
	if (send_fd) {                                  /* registered slot 0 to target slot 0 */
		io_uring_prep_msg_ring(s, target_fd, 0, 77, 0);
		s->addr = IORING_MSG_SEND_FD;
		s->addr3 = 0;
		s->file_index = 1;
	} else {
		io_uring_prep_msg_ring(s, target_fd, 9, 77, 0);
	}
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(src), 1);
	struct io_uring_cqe cqe;
	tu_reap(src, &cqe, 1);
	CHECK_EQ(cqe.user_data, 3);
	CHECK_EQ(cqe.res, want);
}

/* io_uring_enable_rings is in liburing.h but not in Debian's liburing.so.2 (2.3): the raw call */
static int enable_rings(struct io_uring *ring)
{
	return io_uring_register(ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
}

static void body(void)
{
	struct io_uring ring, src;
	CHECK_EQ(io_uring_queue_init(8, &ring, IORING_SETUP_R_DISABLED), 0);
	tu_uring_check_mode(&ring);
	CHECK_EQ(io_uring_queue_init(8, &src, 0), 0);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ(io_uring_register_files(&src, &fd, 1), 0);

	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), -EBADFD);
	CHECK_EQ(io_uring_submit(&ring), -EBADFD);      /* still disabled; the NOP still queued */

	msg_to(&src, ring.ring_fd, 0, -EBADFD);
	msg_to(&src, ring.ring_fd, 1, -EBADFD);

	CHECK_EQ(enable_rings(&ring), 0);
	CHECK_EQ(enable_rings(&ring), -EBADFD);
	CHECK_EQ(io_uring_submit(&ring), 1);             /* the NOP queued while disabled */
	struct io_uring_cqe cqe;
	tu_reap(&ring, &cqe, 1);
	CHECK_EQ(cqe.user_data, 1);
	CHECK_EQ(cqe.res, 0);
	tu_none(&ring);                                   /* the refused messages posted nothing */

	msg_to(&src, ring.ring_fd, 0, 0);                 /* enabled: a message arrives */
	tu_reap(&ring, &cqe, 1);
	CHECK_EQ(cqe.user_data, 77);
	CHECK_EQ(cqe.res, 9);
	io_uring_queue_exit(&src);
	io_uring_queue_exit(&ring);
	close(fd);
}

int main(void)
{
	return tu_uring_main(body);
}
