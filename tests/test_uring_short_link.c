/* SPDX-License-Identifier: MIT */
/* Description: a short read in an IOSQE_IO_LINK chain fails the link like an error does, as
 * the kernel's io_uring: the read's own CQE carries its byte count and the rest of the chain
 * completes with -ECANCELED. Pinned for READ at end of file, READV (the sum of several iovecs),
 * READ_FIXED, a pipe read that first waits and then gets fewer bytes than asked (completed off
 * the submit path), and a read that asked to skip its success CQE (a short one is posted). A
 * full read does not cancel, and IOSQE_IO_HARDLINK keeps the chain going after a short read. */
#include "test_uring.h"
#include <fcntl.h>
#include <sys/uio.h>

static struct io_uring_sqe *sqe_get(struct io_uring *ring)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s);
	return s;
}

/* Queue the link's second member: a NOP with user_data ud. */
static void nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *s = sqe_get(ring);
	io_uring_prep_nop(s);
	s->user_data = ud;
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_cqe c[8];
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	char path[] = "uring_short_link.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(pwrite(fd, "0123456789", 10, 0), 10);
	static char buf[64];
	struct iovec fixed = { buf, sizeof buf };
	CHECK_EQ(io_uring_register_buffers(&ring, &fixed, 1), 0);

	/* 1. READ at end of file: 4 of 8 bytes, the linked NOP is cancelled */
	struct io_uring_sqe *s = sqe_get(&ring);
	io_uring_prep_read(s, fd, buf, 8, 6);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 1;
	nop(&ring, 2);
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 1)->res, 4);
	CHECK_EQ(tu_find(c, 2, 2)->res, -ECANCELED);
	CHECK(memcmp(buf, "6789", 4) == 0);

	/* 2. the same read in full (4 of 4) lets the NOP run */
	s = sqe_get(&ring);
	io_uring_prep_read(s, fd, buf, 4, 6);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 3;
	nop(&ring, 4);
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 3)->res, 4);
	CHECK_EQ(tu_find(c, 2, 4)->res, 0);

	/* 3. READV of 3 + 5 + 6 bytes from offset 0: 10 < 14 is short */
	struct iovec v[3] = { { buf, 3 }, { buf + 3, 5 }, { buf + 8, 6 } };
	s = sqe_get(&ring);
	io_uring_prep_readv(s, fd, v, 3, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 5;
	nop(&ring, 6);
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 5)->res, 10);
	CHECK_EQ(tu_find(c, 2, 6)->res, -ECANCELED);

	/* 4. READ_FIXED of 16 bytes from a 10-byte file */
	s = sqe_get(&ring);
	io_uring_prep_read_fixed(s, fd, buf, 16, 0, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 7;
	nop(&ring, 8);
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 7)->res, 10);
	CHECK_EQ(tu_find(c, 2, 8)->res, -ECANCELED);

	/* 5. a hard link does not cancel after a short read */
	s = sqe_get(&ring);
	io_uring_prep_read(s, fd, buf, 8, 6);
	s->flags |= IOSQE_IO_HARDLINK;
	s->user_data = 9;
	nop(&ring, 10);
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 9)->res, 4);
	CHECK_EQ(tu_find(c, 2, 10)->res, 0);

	/* 6. a pipe read that waits, then gets 5 of 32 bytes: short, off the submit path */
	int p[2];
	CHECK_EQ(pipe(p), 0);
	s = sqe_get(&ring);
	io_uring_prep_read(s, p[0], buf, 32, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 11;
	nop(&ring, 12);
	CHECK_EQ(io_uring_submit(&ring), 2);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { 0, 50000000 };
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &ts), -ETIME);  /* the read waits */
	CHECK_EQ(write(p[1], "short", 5), 5);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 11)->res, 5);
	CHECK_EQ(tu_find(c, 2, 12)->res, -ECANCELED);

	/* 7. a short read that asked to skip its success CQE is posted (a failure), and cancels;
	 * a full one is silent and does not */
	s = sqe_get(&ring);
	io_uring_prep_read(s, fd, buf, 4, 0);
	s->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	s->user_data = 13;
	nop(&ring, 14);
	s = sqe_get(&ring);
	io_uring_prep_read(s, fd, buf, 8, 6);
	s->flags |= IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
	s->user_data = 15;
	nop(&ring, 16);
	CHECK_EQ(io_uring_submit(&ring), 4);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 14)->res, 0);
	CHECK_EQ(tu_find(c, 2, 15)->res, 4);
	/* the kernel silences the cancellations that follow a failed skip-success request */
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &ts), -ETIME);

	close(p[0]);
	close(p[1]);
	close(fd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
