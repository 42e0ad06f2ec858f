/* SPDX-License-Identifier: MIT */
/* Description: links, drain and CQE skipping behave as the kernel's io_uring, in all three modes:
 * a failing request in an IOSQE_IO_LINK chain cancels the rest with -ECANCELED, a short read
 * counts as a failure, IOSQE_IO_HARDLINK keeps going after a failure, links run in order (a
 * write then a read of what it wrote), IOSQE_IO_DRAIN waits for everything before it (a drained
 * NOP completes after a pending pipe read that a later write finishes), IOSQE_CQE_SKIP_SUCCESS
 * posts nothing for successes but posts failures, and a chain whose member fails preparation
 * (bad opcode) gives that error and -ECANCELED for the others; once a ring has seen
 * IOSQE_CQE_SKIP_SUCCESS, IOSQE_IO_DRAIN is -EOPNOTSUPP on it; a READV and a SENDMSG linked
 * behind a wait, and a READV a drain holds back, take their iovec arrays and msghdr at submission
 * (the program clears them once the submit returned: FEAT_SUBMIT_STABLE). */
#include "test_uring.h"
#include <fcntl.h>

static struct io_uring_sqe *sqe_get(struct io_uring *ring)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s);
	return s;
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_cqe c[16];
	CHECK_EQ(io_uring_queue_init(16, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	char path[] = "uring_links.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	char buf[64] = "", in[64];

	/* 1. write -> read of the same bytes -> nop: in order, all succeed */
	struct io_uring_sqe *s = sqe_get(&ring);
	io_uring_prep_write(s, fd, "linked-data", 11, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 1;
	s = sqe_get(&ring);
	io_uring_prep_read(s, fd, buf, 11, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 2;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 3);
	tu_reap(&ring, c, 3);
	CHECK_EQ(c[0].user_data, 1);
	CHECK_EQ(c[0].res, 11);
	CHECK_EQ(c[1].user_data, 2);
	CHECK_EQ(c[1].res, 11);
	CHECK_EQ(c[2].user_data, 3);
	CHECK(memcmp(buf, "linked-data", 11) == 0);

	/* 2. a failing link (bad fd) cancels the rest; a short read is a failure too */
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 10;
	s = sqe_get(&ring);
	io_uring_prep_read(s, 9999, buf, 4, 0);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 11;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 12;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->user_data = 13;
	s = sqe_get(&ring);
	io_uring_prep_read(s, fd, in, 64, 0);           /* 11 bytes: short */
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 14;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->user_data = 15;
	CHECK_EQ(io_uring_submit(&ring), 6);
	tu_reap(&ring, c, 6);
	CHECK_EQ(tu_find(c, 6, 10)->res, 0);
	CHECK_EQ(tu_find(c, 6, 11)->res, -EBADF);
	CHECK_EQ(tu_find(c, 6, 12)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 6, 13)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 6, 14)->res, 11);
	CHECK_EQ(tu_find(c, 6, 15)->res, -ECANCELED);

	/* 3. a hard link keeps going after the failure */
	s = sqe_get(&ring);
	io_uring_prep_read(s, 9999, buf, 4, 0);
	s->flags |= IOSQE_IO_HARDLINK;
	s->user_data = 20;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->user_data = 21;
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 20)->res, -EBADF);
	CHECK_EQ(tu_find(c, 2, 21)->res, 0);

	/* 4. drain: the NOP waits for the pending pipe read, the NOP after it waits too */
	int p[2];
	CHECK_EQ(pipe(p), 0);
	s = sqe_get(&ring);
	io_uring_prep_read(s, p[0], in, 5, 0);
	s->user_data = 30;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->flags |= IOSQE_IO_DRAIN;
	s->user_data = 31;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->user_data = 32;
	CHECK_EQ(io_uring_submit(&ring), 3);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { 0, 100000000 };
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &ts), -ETIME);    /* all held back */
	CHECK_EQ(write(p[1], "drain", 5), 5);
	tu_reap(&ring, c, 3);
	CHECK_EQ(c[0].user_data, 30);
	CHECK_EQ(c[0].res, 5);
	CHECK_EQ(tu_find(c, 3, 31)->res, 0);
	CHECK_EQ(tu_find(c, 3, 32)->res, 0);

	/* 5. CQE_SKIP_SUCCESS: successes are silent, a failure is posted */
	for (int i = 0; i < 4; i++) {
		s = sqe_get(&ring);
		io_uring_prep_nop(s);
		s->flags |= IOSQE_CQE_SKIP_SUCCESS;
		s->user_data = 40 + (uint64_t)i;
	}
	s = sqe_get(&ring);
	io_uring_prep_read(s, 9999, buf, 1, 0);
	s->flags |= IOSQE_CQE_SKIP_SUCCESS;
	s->user_data = 45;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->user_data = 46;
	CHECK_EQ(io_uring_submit(&ring), 6);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 45)->res, -EBADF);
	CHECK_EQ(tu_find(c, 2, 46)->res, 0);
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &ts), -ETIME);

	/* 6. a member that fails preparation (opcode 250) fails the whole chain */
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 50;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->opcode = 250;
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 51;
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->user_data = 52;
	CHECK_EQ(io_uring_submit(&ring), 3);
	tu_reap(&ring, c, 3);
	CHECK_EQ(tu_find(c, 3, 50)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 3, 51)->res, -EINVAL);
	CHECK_EQ(tu_find(c, 3, 52)->res, -ECANCELED);

	/* 7. from the first IOSQE_CQE_SKIP_SUCCESS on (5.), the ring refuses IOSQE_IO_DRAIN */
	s = sqe_get(&ring);
	io_uring_prep_nop(s);
	s->flags |= IOSQE_IO_DRAIN;
	s->user_data = 55;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].user_data, 55);
	CHECK_EQ(c[0].res, -EOPNOTSUPP);
	io_uring_queue_exit(&ring);
	CHECK_EQ(io_uring_queue_init(16, &ring, 0), 0);

	/* 8. what runs after the submission took the program's memory at submission
	 * (FEAT_SUBMIT_STABLE): a READV and a SENDMSG linked behind a pipe read, and a
	 * READV held back by a drain, with their iovec arrays and msghdr cleared by
	 * the program once the submit returned */
	{
		int sv[2];
		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		CHECK_EQ(pwrite(fd, "stable data of the file", 23, 0), 23);
		char pb[1], got[32] = "", out1[16] = "", out2[16] = "";
		struct iovec *v = calloc(3, sizeof(*v));
		struct msghdr *m = calloc(1, sizeof(*m));
		CHECK(v && m);
		v[0] = (struct iovec){ out1, 6 };
		v[1] = (struct iovec){ "hello", 5 };
		v[2] = (struct iovec){ out2, 4 };
		m->msg_iov = &v[1];
		m->msg_iovlen = 1;
		s = sqe_get(&ring);
		io_uring_prep_read(s, p[0], pb, 1, 0);
		s->flags |= IOSQE_IO_LINK;
		s->user_data = 60;
		s = sqe_get(&ring);
		io_uring_prep_readv(s, fd, &v[0], 1, 0);
		s->flags |= IOSQE_IO_LINK;
		s->user_data = 61;
		s = sqe_get(&ring);
		io_uring_prep_sendmsg(s, sv[0], m, 0);
		s->user_data = 62;
		s = sqe_get(&ring);
		io_uring_prep_readv(s, fd, &v[2], 1, 7);
		s->flags |= IOSQE_IO_DRAIN;
		s->user_data = 63;
		CHECK_EQ(io_uring_submit(&ring), 4);
		memset(v, 0, 3 * sizeof(*v));
		memset(m, 0, sizeof(*m));
		CHECK_EQ(write(p[1], "x", 1), 1);
		tu_reap(&ring, c, 4);
		CHECK_EQ(tu_find(c, 4, 60)->res, 1);
		CHECK_EQ(tu_find(c, 4, 61)->res, 6);
		CHECK_EQ(tu_find(c, 4, 62)->res, 5);
		CHECK_EQ(tu_find(c, 4, 63)->res, 4);
		CHECK(memcmp(out1, "stable", 6) == 0 && memcmp(out2, "data", 4) == 0);
		CHECK_EQ(recv(sv[1], got, sizeof(got), MSG_DONTWAIT), 5);
		CHECK(memcmp(got, "hello", 5) == 0);
		free(v);
		free(m);
		close(sv[0]);
		close(sv[1]);
	}

	close(p[0]);
	close(p[1]);
	close(fd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
