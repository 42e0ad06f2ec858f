/* SPDX-License-Identifier: MIT */
/* Description: multishot ACCEPT (IORING_ACCEPT_MULTISHOT) behaves as the kernel's, in all three
 * modes: on a blocking listener the submit does not block and each connection posts a CQE with
 * IORING_CQE_F_MORE holding the accepted fd; ASYNC_CANCEL by user_data and by fd end it with a
 * final -ECANCELED CQE without F_MORE, after which a connection posts nothing; into the
 * registered table (file_index IORING_FILE_INDEX_ALLOC) each connection gets the lowest free
 * slot (res = the slot, usable as a fixed file) and a full table ends it with -ENFILE; a given
 * index with multishot is -EINVAL; a one-shot ACCEPT into a given slot still works; ACCEPT,
 * one-shot or multishot, on a socket that does not listen fails with -EINVAL at once; a
 * connection accepted with the CQ full ends the multishot with its fd in the final CQE
 * (overflowed, no F_MORE). */
#include "test_uring.h"

/* The next CQE (within 5 s) is user_data ud with F_MORE as more says; its res. */
static int next(struct io_uring *ring, uint64_t ud, int more)
{
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(!!(c.flags & IORING_CQE_F_MORE), more);
	return c.res;
}

/* fd is the server end of client c's connection. */
static void same_conn(int fd, int c)
{
	struct sockaddr_in p, m;
	socklen_t pl = sizeof p, ml = sizeof m;
	CHECK_EQ(getpeername(fd, (struct sockaddr *)&p, &pl), 0);
	CHECK_EQ(getsockname(c, (struct sockaddr *)&m, &ml), 0);
	CHECK_EQ(p.sin_port, m.sin_port);
}

/* What client c writes arrives through registered file slot. */
static void slot_reads(struct io_uring *ring, int slot, int c)
{
	char b[4] = { 0 };
	CHECK_EQ(write(c, "xy", 2), 2);
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_recv(s, slot, b, sizeof b, MSG_WAITALL);
	s->len = 2;
	s->flags |= IOSQE_FIXED_FILE;
	s->user_data = 50;
	CHECK_EQ(io_uring_submit(ring), 1);
	CHECK_EQ(next(ring, 50, 0), 2);
	CHECK(!memcmp(b, "xy", 2));
}

static void body(void)
{
	alarm(30);                 /* an accept that blocks the program is a failure, not a hang */
	struct io_uring ring;
	struct io_uring_sqe *s;
	struct sockaddr_in a;
	int c[4];
	CHECK_EQ(io_uring_queue_init(16, &ring, 0), 0);
	tu_uring_check_mode(&ring);

	/* 1. a blocking listener: the submit returns, one CQE with F_MORE per connection */
	int l = tu_listener(0, &a);
	s = tu_sqe(&ring);
	io_uring_prep_multishot_accept(s, l, NULL, NULL, 0);
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_none(&ring);
	for (int i = 0; i < 3; i++) {
		c[i] = tu_connect(&a);
		int fd = next(&ring, 1, 1);
		CHECK(fd >= 0);
		same_conn(fd, c[i]);
		close(fd);
		close(c[i]);
	}

	/* 2. ASYNC_CANCEL by user_data ends it; a connection after it posts nothing */
	s = tu_sqe(&ring);
	io_uring_prep_cancel64(s, 1, 0);
	s->user_data = 100;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe d[2];
	tu_reap(&ring, d, 2);
	CHECK_EQ(tu_find(d, 2, 100)->res, 0);
	CHECK_EQ(tu_find(d, 2, 1)->res, -ECANCELED);
	CHECK(!(tu_find(d, 2, 1)->flags & IORING_CQE_F_MORE));
	c[0] = tu_connect(&a);
	tu_none(&ring);

	/* 3. armed again it takes the waiting connection at once; a cancel by fd ends it */
	s = tu_sqe(&ring);
	io_uring_prep_multishot_accept(s, l, NULL, NULL, 0);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 1);
	int fd = next(&ring, 2, 1);
	same_conn(fd, c[0]);
	close(fd);
	close(c[0]);
	s = tu_sqe(&ring);
	io_uring_prep_cancel_fd(s, l, 0);
	s->user_data = 101;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, d, 2);
	CHECK_EQ(tu_find(d, 2, 101)->res, 0);
	CHECK_EQ(tu_find(d, 2, 2)->res, -ECANCELED);
	CHECK(!(tu_find(d, 2, 2)->flags & IORING_CQE_F_MORE));
	close(l);

	/* 4. into the registered table: slots 0 and 1 in turn, then -ENFILE ends it */
	CHECK_EQ(io_uring_register_files_sparse(&ring, 2), 0);
	l = tu_listener(1, &a);
	s = tu_sqe(&ring);
	io_uring_prep_multishot_accept_direct(s, l, NULL, NULL, 0);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 1);
	for (int i = 0; i < 2; i++) {
		c[i] = tu_connect(&a);
		CHECK_EQ(next(&ring, 3, 1), i);
	}
	c[2] = tu_connect(&a);
	CHECK_EQ(next(&ring, 3, 0), -ENFILE);
	slot_reads(&ring, 1, c[1]);
	slot_reads(&ring, 0, c[0]);
	for (int i = 0; i < 3; i++)
		close(c[i]);

	/* 5. multishot into a given slot: -EINVAL */
	s = tu_sqe(&ring);
	io_uring_prep_multishot_accept_direct(s, l, NULL, NULL, 0);
	s->file_index = 1;
	s->user_data = 4;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(next(&ring, 4, 0), -EINVAL);

	/* 6. a one-shot ACCEPT into a given slot (1: the second) */
	CHECK_EQ(io_uring_unregister_files(&ring), 0);
	CHECK_EQ(io_uring_register_files_sparse(&ring, 2), 0);
	s = tu_sqe(&ring);
	io_uring_prep_accept_direct(s, l, NULL, NULL, 0, 1);
	s->user_data = 5;
	CHECK_EQ(io_uring_submit(&ring), 1);
	c[0] = tu_connect(&a);
	CHECK_EQ(next(&ring, 5, 0), 0);
	slot_reads(&ring, 1, c[0]);
	close(c[0]);
	close(l);

	/* 7. a blocking socket that does not listen (connected, nothing to read: poll
	 * says nothing either) and one never connected: -EINVAL at once, one-shot and multishot */
	int ns[3];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ns), 0);
	ns[2] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(ns[2] >= 0);
	for (int k = 0; k < 3; k += 2) {
		s = tu_sqe(&ring);
		io_uring_prep_accept(s, ns[k], NULL, NULL, 0);
		s->user_data = 6;
		CHECK_EQ(io_uring_submit(&ring), 1);
		CHECK_EQ(next(&ring, 6, 0), -EINVAL);
		s = tu_sqe(&ring);
		io_uring_prep_multishot_accept(s, ns[k], NULL, NULL, 0);
		s->user_data = 7;
		CHECK_EQ(io_uring_submit(&ring), 1);
		CHECK_EQ(next(&ring, 7, 0), -EINVAL);
	}
	for (int k = 0; k < 3; k++)
		close(ns[k]);
	io_uring_queue_exit(&ring);

	/* 8. a connection accepted with the CQ full: its fd is the final CQE, overflowed */
	tu_small_cq_ring(&ring);
	l = tu_listener(1, &a);
	s = tu_sqe(&ring);
	io_uring_prep_multishot_accept(s, l, NULL, NULL, 0);
	s->user_data = 8;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_fill_cq(&ring, 2, 9);
	c[0] = tu_connect(&a);
	tu_wait_overflow(&ring);
	CHECK_EQ(next(&ring, 9, 0), 0);
	CHECK_EQ(next(&ring, 9, 0), 0);
	fd = next(&ring, 8, 0);
	CHECK(fd >= 0);
	same_conn(fd, c[0]);
	close(fd);
	c[1] = tu_connect(&a);
	tu_none(&ring);
	close(c[0]);
	close(c[1]);
	close(l);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
