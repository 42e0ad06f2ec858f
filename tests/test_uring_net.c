/* SPDX-License-Identifier: MIT */
/* Description: waiting for events in the drop-in, in all three modes: POLL_ADD on an empty socket
 * completes with POLLIN only after data arrives (and POLL_REMOVE cancels another), a RECV queued
 * before the data and a SEND complete with the bytes, ACCEPT and CONNECT meet on a localhost TCP
 * listener, a registered eventfd is signalled on completions, poll(ring_fd) says readable once a
 * CQE is pending (the ring fd's documented behaviour), and a RECV into a provided buffer
 * (IOSQE_BUFFER_SELECT) reports the buffer id in the CQE flags (a RECVMSG too: the data goes to the
 * buffer, not to the base of the caller's iovec); a ring fd closed by hand and its
 * number reused is a plain fd again (CLOSE works on it; emulated, queue_exit leaves it open); a
 * dup() of a ring fd works as the ring after the original is closed (also with stdin closed when
 * it is first used), and after io_uring_queue_exit
 * neither number is taken for the ring (a file put there is no ring); SENDMSG and RECVMSG use the
 * caller's msghdr and all of its iovecs (msg_iovlen, six too), a RECVMSG that waits for its data from the
 * copy taken at submission (the caller's header and iovecs may change after io_uring_submit:
 * IORING_FEAT_SUBMIT_STABLE), and a RECVMSG with MSG_WAITALL that got part of its bytes goes on
 * into the rest of its iovecs, taking no more than they hold (a RECV so too, into the rest of its
 * buffer).
 */
#include "test_uring.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <sys/socket.h>

/* fd moved to a number at or above 100 (closing the old one) */
static int fd_away(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	CHECK(h >= 100);
	close(fd);
	return h;
}

/* A receive prepared in s, from provided-buffer group 7 (ids 100..103): it gets
 * want bytes and names its buffer in the CQE; the buffer's id. */
static unsigned pool_recv(struct io_uring *ring, struct io_uring_sqe *s, int want)
{
	struct io_uring_cqe c;
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 7;
	s->user_data = 21;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.res, want);
	CHECK(c.flags & IORING_CQE_F_BUFFER);
	unsigned bid = c.flags >> IORING_CQE_BUFFER_SHIFT;
	CHECK(bid >= 100 && bid < 104);
	return bid;
}

/* SENDMSG of three pieces; a RECVMSG into two, queued before the data, whose header and
 * iovecs the caller scribbles over once submitted. */
static void msg_iovecs(struct io_uring *ring)
{
	struct io_uring_cqe c[2];
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	char r0[2] = "", r1[10] = "";
	struct iovec riov[2] = { { r0, sizeof r0 }, { r1, sizeof r1 } };
	struct msghdr rm = { .msg_iov = riov, .msg_iovlen = 2 };
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_recvmsg(s, sv[0], &rm, 0);
	s->user_data = 60;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_none(ring);                          /* it waits */
	memset(riov, 0, sizeof riov);
	memset(&rm, 0, sizeof rm);

	char a[] = "ab", b[] = "cde", f[] = "f";
	struct iovec siov[3] = { { a, 2 }, { b, 3 }, { f, 1 } };
	struct msghdr sm = { .msg_iov = siov, .msg_iovlen = 3 };
	s = tu_sqe(ring);
	io_uring_prep_sendmsg(s, sv[1], &sm, 0);
	s->user_data = 61;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_reap(ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 61)->res, 6);
	CHECK_EQ(tu_find(c, 2, 60)->res, 6);
	CHECK(memcmp(r0, "ab", 2) == 0);
	CHECK(memcmp(r1, "cdef", 4) == 0);

	/* RECVMSG with MSG_WAITALL into 4 + 4 bytes: 5 arrive, then 6; it takes 8 in order and
	 * leaves the last 3 in the socket; then the same with RECV into 8 bytes */
	char w[8], rest[8];
	struct iovec wiov[2] = { { w, 4 }, { w + 4, 4 } };
	struct msghdr wm = { .msg_iov = wiov, .msg_iovlen = 2 };
	for (int m = 0; m < 2; m++) {
		memset(w, 0, sizeof w);
		s = tu_sqe(ring);
		if (m == 0)
			io_uring_prep_recvmsg(s, sv[0], &wm, MSG_WAITALL);
		else
			io_uring_prep_recv(s, sv[0], w, sizeof w, MSG_WAITALL);
		s->user_data = 62 + (uint64_t)m;
		CHECK_EQ(io_uring_submit(ring), 1);
		CHECK_EQ(write(sv[1], "abcde", 5), 5);
		tu_none(ring);                  /* 5 of 8: it waits for the rest */
		CHECK_EQ(write(sv[1], "fghXYZ", 6), 6);
		c[0] = tu_wait_at(ring, 10, __LINE__);
		CHECK_EQ(c[0].user_data, 62 + m);
		CHECK_EQ(c[0].res, 8);
		CHECK(memcmp(w, "abcdefgh", 8) == 0);
		CHECK_EQ(read(sv[0], rest, sizeof rest), 3);
		CHECK(memcmp(rest, "XYZ", 3) == 0);
	}

	/* a RECVMSG into six iovecs (more than the emulation keeps inline), queued before the
	 * data, its iovecs scribbled over once submitted: 20 bytes, in order */
	char six[20];
	struct iovec siv[6];
	for (int i = 0; i < 6; i++)
		siv[i] = (struct iovec){ six + 3 * i, i < 5 ? 3 : 5 };
	struct msghdr sixm = { .msg_iov = siv, .msg_iovlen = 6 };
	memset(six, 0, sizeof six);
	s = tu_sqe(ring);
	io_uring_prep_recvmsg(s, sv[0], &sixm, MSG_WAITALL);
	s->user_data = 64;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_none(ring);
	memset(siv, 0, sizeof siv);
	CHECK_EQ(write(sv[1], "abcdefghijklmnopqrst", 20), 20);
	c[0] = tu_wait_at(ring, 10, __LINE__);
	CHECK_EQ(c[0].user_data, 64);
	CHECK_EQ(c[0].res, 20);
	CHECK(memcmp(six, "abcdefghijklmnopqrst", 20) == 0);
	close(sv[0]);
	close(sv[1]);
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_cqe c[8], *cqe;
	struct io_uring_sqe *s;
	struct __kernel_timespec t50 = { 0, 50000000 };
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int efd = eventfd(0, EFD_NONBLOCK);
	CHECK(efd >= 0);
	CHECK_EQ(io_uring_register_eventfd(&ring, efd), 0);

	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_poll_add(s, sv[0], POLLIN);
	s->user_data = 1;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_poll_add(s, sv[0], POLLPRI);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 2);
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t50), -ETIME);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_poll_remove(s, 2);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 2)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 2, 3)->res, 0);
	CHECK_EQ(write(sv[1], "x", 1), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].user_data, 1);
	CHECK(c[0].res & POLLIN);
	char b;
	CHECK_EQ(read(sv[0], &b, 1), 1);

	/* RECV before the data, then SEND */
	char rbuf[32] = "";
	s = io_uring_get_sqe(&ring);
	io_uring_prep_recv(s, sv[0], rbuf, sizeof rbuf, 0);
	s->user_data = 10;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(io_uring_wait_cqe_timeout(&ring, &cqe, &t50), -ETIME);
	uint64_t ev;
	while (read(efd, &ev, sizeof ev) > 0)
		;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_send(s, sv[1], "hello ring", 10, 0);
	s->user_data = 11;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 10)->res, 10);
	CHECK_EQ(tu_find(c, 2, 11)->res, 10);
	CHECK(memcmp(rbuf, "hello ring", 10) == 0);
	CHECK(read(efd, &ev, sizeof ev) == sizeof ev && ev >= 1);     /* the registered eventfd */

	/* poll(ring_fd): readable while a CQE waits */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_nop(s);
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct pollfd pf = { ring.ring_fd, POLLIN, 0 };
	CHECK_EQ(poll(&pf, 1, 2000), 1);
	tu_reap(&ring, c, 1);

	/* provided buffers: RECV picks one, the CQE names it */
	static char pool[4][16];
	s = io_uring_get_sqe(&ring);
	io_uring_prep_provide_buffers(s, pool, 16, 4, 7, 100);
	s->user_data = 20;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(write(sv[1], "provided", 8), 8);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_recv(s, sv[0], NULL, 16, 0);
	unsigned bid = pool_recv(&ring, s, 8);
	CHECK(memcmp(pool[bid - 100], "provided", 8) == 0);
	/* a RECVMSG so too: the data goes to the provided buffer, never to the base of the
	 * caller's one iovec (only its length counts) */
	static char decoy[16];
	struct iovec div = { decoy, sizeof decoy };
	struct msghdr dm = { .msg_iov = &div, .msg_iovlen = 1 };
	CHECK_EQ(write(sv[1], "by msghdr", 9), 9);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_recvmsg(s, sv[0], &dm, 0);
	unsigned bid2 = pool_recv(&ring, s, 9);
	CHECK(bid2 != bid);
	CHECK(memcmp(pool[bid2 - 100], "by msghdr", 9) == 0);
	CHECK(decoy[0] == 0);

	/* ACCEPT and CONNECT on localhost */
	int lfd = socket(AF_INET, SOCK_STREAM, 0), cfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(lfd >= 0 && cfd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof a;
	CHECK_EQ(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	CHECK_EQ(listen(lfd, 4), 0);
	CHECK_EQ(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_accept(s, lfd, NULL, NULL, 0);
	s->user_data = 30;
	CHECK_EQ(io_uring_submit(&ring), 1);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_connect(s, cfd, (struct sockaddr *)&a, sizeof a);
	s->user_data = 31;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 2);
	int afd = tu_find(c, 2, 30)->res;
	CHECK(afd >= 0);
	CHECK_EQ(tu_find(c, 2, 31)->res, 0);
	CHECK_EQ(write(cfd, "tcp", 3), 3);
	CHECK_EQ(read(afd, rbuf, 3), 3);
	CHECK(memcmp(rbuf, "tcp", 3) == 0);

	close(afd);
	close(cfd);
	close(lfd);
	close(sv[0]);
	close(sv[1]);
	/* a ring fd closed by hand and its number reused: a plain fd again for CLOSE */
	struct io_uring r2;
	CHECK_EQ(io_uring_queue_init(4, &r2, 0), 0);
	int num = r2.ring_fd, pp[2];
	close(num);
	CHECK_EQ(pipe(pp), 0);
	CHECK_EQ(dup2(pp[0], num), num);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_close(s, num);
	s->user_data = 40;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, 0);
	CHECK(fcntl(num, F_GETFD) < 0);
	if (tu_mode != TU_KERNEL) {
		/* and io_uring_queue_exit leaves a reused number alone */
		CHECK_EQ(dup2(pp[1], num), num);
		io_uring_queue_exit(&r2);
		CHECK(fcntl(num, F_GETFD) >= 0);
		close(num);
	} else {
		io_uring_queue_exit(&r2);
	}
	close(pp[0]);
	close(pp[1]);

	/* a dup() of the ring fd is the ring, also once the original is closed, and with stdin
	 * closed when the dup is first used (fd 0 is the lowest free number then) */
	struct io_uring r3;
	CHECK_EQ(io_uring_queue_init(4, &r3, 0), 0);
	int in = dup(0);
	CHECK(in >= 0);
	int d = dup(r3.ring_fd), orig = r3.ring_fd;
	CHECK(d >= 0);
	close(r3.ring_fd);
	close(0);
	r3.ring_fd = r3.enter_ring_fd = d;
	s = io_uring_get_sqe(&r3);
	io_uring_prep_nop(s);
	s->user_data = 50;
	CHECK_EQ(io_uring_submit(&r3), 1);
	tu_reap(&r3, c, 1);
	CHECK_EQ(c[0].user_data, 50);
	CHECK_EQ(dup2(in, 0), 0);
	close(in);
	io_uring_queue_exit(&r3);
	CHECK(fcntl(d, F_GETFD) < 0);          /* queue_exit closed the dup */
	/* and neither number names the ring any more: a file put at either is no ring */
	int nul = open("/dev/null", O_RDONLY);
	CHECK(nul >= 0);
	nul = fd_away(nul);                /* not at orig, d or the next ring's number */
	CHECK_EQ(dup2(nul, d), d);
	CHECK_EQ(dup2(nul, orig), orig);
	CHECK(io_uring_enter((unsigned)d, 0, 0, IORING_ENTER_GETEVENTS, NULL) < 0);
	CHECK(io_uring_enter((unsigned)orig, 0, 0, IORING_ENTER_GETEVENTS, NULL) < 0);
	close(d);
	close(orig);
	/* the same for a ring that never had a second number */
	struct io_uring r4;
	CHECK_EQ(io_uring_queue_init(4, &r4, 0), 0);
	int n4 = r4.ring_fd;
	io_uring_queue_exit(&r4);
	int dr = dup2(nul, n4);
	if (dr != n4)
		FAIL("dup2(nul, %d) = %d: %s", n4, dr, strerror(errno));
	CHECK(io_uring_enter((unsigned)n4, 0, 0, IORING_ENTER_GETEVENTS, NULL) < 0);
	close(n4);
	close(nul);

	msg_iovecs(&ring);
	CHECK_EQ(io_uring_unregister_eventfd(&ring), 0);
	close(efd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
