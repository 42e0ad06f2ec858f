/* SPDX-License-Identifier: MIT */
/* Description: IOSQE_IO_DRAIN also holds back what is submitted after the drained request, in
 * all three modes: a drained POLL_ADD that starts at once (nothing before it) and waits, then a
 * NOP and a READ of a file in the same submission and a NOP in a later one: none of them
 * completes before the poll (the kernel's ring holds back what is submitted after a drain while
 * anything runs, the drained request included). And only for the drained request: after a READ,
 * a drained NOP, a POLL_ADD of an empty pipe and a NOP in one submission, the last NOP completes
 * while the poll waits, as with the kernel's ring: a drain holds back what comes after it until
 * the drained request and everything before it have completed, and no longer (the first case's
 * drained request has nothing before it to wait for, the second's waits for the READ). */
#include "test_uring.h"
#include <fcntl.h>
#include <poll.h>

static char buf[64];

/* a ring (the mode's), an empty pipe and this program's file open to read */
struct fx {
	struct io_uring ring;
	int p[2], fd;
};

static void fx_open(struct fx *f)
{
	CHECK_EQ(io_uring_queue_init(8, &f->ring, 0), 0);
	tu_uring_check_mode(&f->ring);
	CHECK_EQ(pipe(f->p), 0);
	f->fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(f->fd >= 0);
}

static void fx_close(struct fx *f)
{
	close(f->fd);
	close(f->p[0]);
	close(f->p[1]);
	io_uring_queue_exit(&f->ring);
}

/* READ, NOP with IOSQE_IO_DRAIN, POLL_ADD of an empty pipe, NOP: all but the poll complete */
static void after_drained_only(void)
{
	struct fx f;
	fx_open(&f);
	struct io_uring_sqe *s[4];
	for (int i = 0; i < 4; i++)
		s[i] = tu_sqe(&f.ring);
	io_uring_prep_read(s[0], f.fd, buf, sizeof buf, 0);
	io_uring_prep_nop(s[1]);
	s[1]->flags |= IOSQE_IO_DRAIN;
	io_uring_prep_poll_add(s[2], f.p[0], POLLIN);
	io_uring_prep_nop(s[3]);
	for (int i = 0; i < 4; i++)
		s[i]->user_data = (uint64_t)i + 1;
	CHECK_EQ(io_uring_submit(&f.ring), 4);
	struct io_uring_cqe got[4];
	for (int i = 0; i < 3; i++) {
		struct io_uring_cqe *c;
		struct __kernel_timespec ts = { 5, 0 };
		if (io_uring_wait_cqe_timeout(&f.ring, &c, &ts))
			FAIL("%d CQEs, not 3 in 5 s: the NOP after the drained NOP and the POLL_ADD waits for the poll", i);
		got[i] = *c;
		io_uring_cqe_seen(&f.ring, c);
	}
	CHECK_EQ(tu_find(got, 3, 1)->res, (int)sizeof buf);
	CHECK_EQ(tu_find(got, 3, 2)->res, 0);
	CHECK_EQ(tu_find(got, 3, 4)->res, 0);
	tu_none(&f.ring);                  /* the poll still waits */
	CHECK_EQ(write(f.p[1], "x", 1), 1);
	tu_next(&f.ring, &got[3]);
	CHECK_EQ(got[3].user_data, 3);
	CHECK(got[3].res & POLLIN);
	fx_close(&f);
}

/* a drained POLL_ADD, a NOP and a READ, then a NOP: none before the poll */
static void behind_drained_poll(void)
{
	struct fx f;
	fx_open(&f);
	struct io_uring_sqe *s = tu_sqe(&f.ring);
	io_uring_prep_poll_add(s, f.p[0], POLLIN);
	s->flags |= IOSQE_IO_DRAIN;
	s->user_data = 1;
	s = tu_sqe(&f.ring);
	io_uring_prep_nop(s);
	s->user_data = 2;
	s = tu_sqe(&f.ring);
	io_uring_prep_read(s, f.fd, buf, sizeof buf, 0);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&f.ring), 3);
	s = tu_sqe(&f.ring);
	io_uring_prep_nop(s);
	s->user_data = 4;
	CHECK_EQ(io_uring_submit(&f.ring), 1);
	/* nothing may complete while the poll waits */
	struct io_uring_cqe *c;
	struct __kernel_timespec ts = { 0, 100000000 };
	int r = io_uring_wait_cqe_timeout(&f.ring, &c, &ts);
	if (r == 0)
		FAIL("user_data %llu (res %d) completed while the drained poll waits",
		     (unsigned long long)c->user_data, c->res);
	CHECK_EQ(r, -ETIME);
	CHECK_EQ(write(f.p[1], "x", 1), 1);
	struct io_uring_cqe got[4];
	tu_reap(&f.ring, got, 4);
	CHECK_EQ(got[0].user_data, 1);
	CHECK(got[0].res & POLLIN);
	for (int i = 1; i < 4; i++)
		CHECK(got[i].res >= 0);
	fx_close(&f);
}

static void body(void)
{
	behind_drained_poll();
	after_drained_only();
}

int main(void)
{
	return tu_uring_main(body);
}
