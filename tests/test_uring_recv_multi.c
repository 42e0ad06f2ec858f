/* SPDX-License-Identifier: MIT */
/* Description: multishot RECV and RECVMSG (IORING_RECV_MULTISHOT with IOSQE_BUFFER_SELECT) behave
 * as the kernel's, in all three modes: one CQE per chunk received, with IORING_CQE_F_MORE and
 * IORING_CQE_F_BUFFER naming the provided buffer that holds it (classic provided buffers and a
 * buffer ring); ASYNC_CANCEL ends it with a final -ECANCELED CQE without F_MORE and leaves the
 * unused buffers in the group; no buffer left ends it with -ENOBUFS, end of file with res 0 and no
 * buffer, both without F_MORE; a chunk received with the CQ full is the final CQE (overflowed,
 * with its buffer, no F_MORE); RECVMSG lays out its buffer as liburing's io_uring_recvmsg_*
 * helpers read it (sender's address, payload length, payload); multishot without
 * BUFFER_SELECT is -EINVAL; a peek right after the write that feeds it finds the chunk (the
 * drop-in runs woken multishots when the CQ is looked at, as the kernel's task work has run),
 * with the reactor held off meanwhile (tu_solo_begin) so that the peek itself must find it.
 * Serial: holds the emulation's threads off with SCHED_FIFO on one CPU (tu_solo_begin) (tests/run.sh runs it alone).
 */
#include "test_uring.h"
#include "parts.h"
#include <sys/mman.h>

#define BLEN 64

static char bufs[8][BLEN];

/* Buffers first..first+n-1 of bufs[] into group 1 (bid = index). */
static void provide(struct io_uring *ring, int first, int n)
{
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_provide_buffers(s, bufs[first], BLEN, n, 1, first);
	s->user_data = 99;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, 99);
	CHECK_EQ(c.res, 0);
}

static void arm(struct io_uring *ring, int fd, uint64_t ud)
{
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 1;
	s->user_data = ud;
	CHECK_EQ(io_uring_submit(ring), 1);
}

/* The next CQE is ud with F_MORE as more says; res returned, buffer id in *bid (-1: none). */
static int next(struct io_uring *ring, uint64_t ud, int more, int *bid)
{
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(!!(c.flags & IORING_CQE_F_MORE), more);
	*bid = (c.flags & IORING_CQE_F_BUFFER) ? (int)(c.flags >> IORING_CQE_BUFFER_SHIFT) : -1;
	return c.res;
}

/* The next CQE is a chunk "want" in buffer id bid, F_MORE as more says. */
static void chunk(struct io_uring *ring, uint64_t ud, const char *want, int bid, int more)
{
	int b;
	CHECK_EQ(next(ring, ud, more, &b), (int)strlen(want));
	CHECK_EQ(b, bid);
	CHECK(!memcmp(bufs[bid], want, strlen(want)));
}

static void cancel(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_cancel64(s, ud, 0);
	s->user_data = 100;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe d[2];
	tu_reap(ring, d, 2);
	CHECK_EQ(tu_find(d, 2, 100)->res, 0);
	CHECK_EQ(tu_find(d, 2, ud)->res, -ECANCELED);
	CHECK(!(tu_find(d, 2, ud)->flags & (IORING_CQE_F_MORE | IORING_CQE_F_BUFFER)));
}

static void recvmsg_udp(struct io_uring *ring)
{
	int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(rx >= 0 && tx >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, ta;
	socklen_t al = sizeof a;
	CHECK_EQ(bind(rx, (struct sockaddr *)&a, sizeof a), 0);
	CHECK_EQ(getsockname(rx, (struct sockaddr *)&a, &al), 0);
	CHECK_EQ(bind(tx, (struct sockaddr *)&(struct sockaddr_in){ .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, sizeof a), 0);
	al = sizeof ta;
	CHECK_EQ(getsockname(tx, (struct sockaddr *)&ta, &al), 0);
	provide(ring, 6, 2);
	struct msghdr mh;
	memset(&mh, 0, sizeof mh);
	mh.msg_namelen = sizeof(struct sockaddr_in);
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_recvmsg_multishot(s, rx, &mh, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 1;
	s->user_data = 20;
	CHECK_EQ(io_uring_submit(ring), 1);
	const char *dg[2] = { "hello", "hi" };
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(sendto(tx, dg[i], strlen(dg[i]), 0, (struct sockaddr *)&a, sizeof a), (ssize_t)strlen(dg[i]));
		int bid, res = next(ring, 20, 1, &bid);
		CHECK_EQ(bid, 5 + i);   /* 5: left over by the end of file of 4 */
		struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(bufs[bid], res, &mh);
		CHECK(o);
		CHECK_EQ(res, (int)(sizeof(*o) + sizeof(struct sockaddr_in) + strlen(dg[i])));
		CHECK_EQ(o->namelen, sizeof(struct sockaddr_in));
		struct sockaddr_in *from = io_uring_recvmsg_name(o);
		CHECK_EQ(from->sin_port, ta.sin_port);
		CHECK_EQ(o->payloadlen, strlen(dg[i]));
		CHECK_EQ(io_uring_recvmsg_payload_length(o, res, &mh), strlen(dg[i]));
		CHECK(!memcmp(io_uring_recvmsg_payload(o, &mh), dg[i], strlen(dg[i])));
	}
	cancel(ring, 20);
	close(rx);
	close(tx);
}

static void body(void)
{
	struct io_uring ring;
	int sv[2], bid;
	char b[8];
	CHECK_EQ(io_uring_queue_init(16, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);

	/* 1. one CQE per chunk, each in the next buffer, F_MORE and F_BUFFER */
	provide(&ring, 0, 4);
	arm(&ring, sv[0], 1);
	tu_none(&ring);
	CHECK_EQ(write(sv[1], "abc", 3), 3);
	chunk(&ring, 1, "abc", 0, 1);
	/* a look at the CQ right after the write finds its chunk: the kernel's task work
	 * runs on the way back from the write, the drop-in's peek runs woken multishots. The
	 * reactor is held off meanwhile (tu_solo_begin), so the peek must do it: a reactor
	 * quick enough to post the chunk first would hide a peek that does not */
	int solo = tu_mode == TU_KERNEL ? 1 : tu_solo_begin();   /* 1: no thread to hold off */
	if (solo < 0)
		tu_part_skip("SCHED_FIFO", "peek after write with the reactor held off", strerror(-solo));
	CHECK_EQ(write(sv[1], "de", 2), 2);
	struct io_uring_cqe *cqe;
	int peeked = io_uring_peek_cqe(&ring, &cqe);
	if (solo == 0)
		tu_sched_end();
	CHECK_EQ(peeked, 0);
	CHECK_EQ(cqe->res, 2);
	CHECK_EQ(cqe->flags >> IORING_CQE_BUFFER_SHIFT, 1);
	CHECK(cqe->flags & IORING_CQE_F_MORE);
	CHECK(!memcmp(bufs[1], "de", 2));
	io_uring_cqe_seen(&ring, cqe);
	tu_none(&ring);

	/* 2. cancel: final -ECANCELED, nothing after, buffers 2 and 3 stay in the group */
	cancel(&ring, 1);
	CHECK_EQ(write(sv[1], "f", 1), 1);
	tu_none(&ring);

	/* 3. armed again: the waiting byte, the next, then no buffer left: -ENOBUFS ends it */
	arm(&ring, sv[0], 2);
	chunk(&ring, 2, "f", 2, 1);
	CHECK_EQ(write(sv[1], "g", 1), 1);
	chunk(&ring, 2, "g", 3, 1);
	CHECK_EQ(write(sv[1], "h", 1), 1);
	CHECK_EQ(next(&ring, 2, 0, &bid), -ENOBUFS);
	CHECK_EQ(bid, -1);
	CHECK_EQ(recv(sv[0], b, sizeof b, MSG_DONTWAIT), 1);

	/* 4. end of file: the data, then res 0 without F_MORE and without a buffer */
	provide(&ring, 4, 2);
	arm(&ring, sv[0], 3);
	CHECK_EQ(write(sv[1], "ij", 2), 2);
	chunk(&ring, 3, "ij", 4, 1);
	CHECK_EQ(shutdown(sv[1], SHUT_WR), 0);
	CHECK_EQ(next(&ring, 3, 0, &bid), 0);
	CHECK_EQ(bid, -1);
	close(sv[0]);
	close(sv[1]);

	/* 5. without BUFFER_SELECT: -EINVAL */
	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_recv_multishot(s, 0, NULL, 0, 0);
	s->user_data = 4;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(next(&ring, 4, 0, &bid), -EINVAL);

	/* 6. RECVMSG: the io_uring_recvmsg_out layout */
	recvmsg_udp(&ring);
	io_uring_queue_exit(&ring);

	/* 7. a buffer ring; a chunk with the CQ full is the final CQE, with its buffer */
	tu_small_cq_ring(&ring);
	struct io_uring_buf_ring *br = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(br != MAP_FAILED);
	struct io_uring_buf_reg reg = { .ring_addr = (uintptr_t)br, .ring_entries = 4, .bgid = 1 };
	CHECK_EQ(io_uring_register_buf_ring(&ring, &reg, 0), 0);
	io_uring_buf_ring_init(br);
	for (int i = 0; i < 4; i++)
		io_uring_buf_ring_add(br, bufs[i], BLEN, (unsigned short)i, io_uring_buf_ring_mask(4), i);
	io_uring_buf_ring_advance(br, 4);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	arm(&ring, sv[0], 5);
	CHECK_EQ(write(sv[1], "kl", 2), 2);
	chunk(&ring, 5, "kl", 0, 1);
	tu_fill_cq(&ring, 2, 9);
	CHECK_EQ(write(sv[1], "mno", 3), 3);
	tu_wait_overflow(&ring);
	CHECK_EQ(next(&ring, 9, 0, &bid), 0);
	CHECK_EQ(next(&ring, 9, 0, &bid), 0);
	chunk(&ring, 5, "mno", 1, 0);
	CHECK_EQ(write(sv[1], "p", 1), 1);
	tu_none(&ring);
	close(sv[0]);
	close(sv[1]);
	io_uring_queue_exit(&ring);
	munmap(br, 4096);
}

int main(void)
{
	return tu_uring_main(body);
}
