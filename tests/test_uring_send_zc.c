/* SPDX-License-Identifier: MIT */
/* Description: SEND_ZC and SENDMSG_ZC behave as the kernel's, in all three modes (emulated: the
 * data is copied, as a SEND's): the first CQE holds the bytes sent with IORING_CQE_F_MORE, then
 * a notification CQE with the same user_data, IORING_CQE_F_NOTIF and no F_MORE (with
 * IORING_SEND_ZC_REPORT_USAGE its res says IORING_NOTIF_USAGE_ZC_COPIED where data was copied);
 * from a registered buffer (IORING_RECVSEND_FIXED_BUF) it sends that memory, and an address
 * outside it is -EFAULT, still followed by the notification; the destination of a SEND_ZC on an
 * unconnected UDP socket is read at submission; CQE_SKIP_SUCCESS is -EINVAL with one CQE; the
 * emulated ring's probe reports both opcodes; on a unix socket both are -EOPNOTSUPP, as the
 * kernel zero-copies only TCP and UDP; a ring torn down while a SEND_ZC with an address
 * waits for room leaves nothing behind. */
#include "test_uring.h"

#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

/* The request ud's two CQEs: res with F_MORE, then the notification (its res returned). */
static int32_t two(struct io_uring *ring, uint64_t ud, int res)
{
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(c.res, res);
	CHECK_EQ(c.flags & (IORING_CQE_F_MORE | IORING_CQE_F_NOTIF), IORING_CQE_F_MORE);
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(c.flags & (IORING_CQE_F_MORE | IORING_CQE_F_NOTIF), IORING_CQE_F_NOTIF);
	return c.res;
}

/* n bytes arrive on fd and equal want. */
static void arrives(int fd, const char *want, size_t n)
{
	char b[256];
	CHECK(n <= sizeof b);
	CHECK_EQ(recv(fd, b, n, MSG_WAITALL), (ssize_t)n);
	CHECK(!memcmp(b, want, n));
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_sqe *s;
	struct sockaddr_in a;
	CHECK_EQ(io_uring_queue_init(16, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int l = tu_listener(0, &a), tx = tu_connect(&a), rx = accept(l, NULL, NULL);
	CHECK(rx >= 0);
	close(l);

	/* 1. SEND_ZC: bytes with F_MORE, then the notification */
	s = tu_sqe(&ring);
	io_uring_prep_send_zc(s, tx, "zero-copy", 9, 0, 0);
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(two(&ring, 1, 9), 0);
	tu_none(&ring);
	arrives(rx, "zero-copy", 9);

	/* 2. REPORT_USAGE: the notification says the data was copied (loopback copies too) */
	s = tu_sqe(&ring);
	io_uring_prep_send_zc(s, tx, "usage", 5, 0, IORING_SEND_ZC_REPORT_USAGE);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ((uint32_t)two(&ring, 2, 5), IORING_NOTIF_USAGE_ZC_COPIED);
	arrives(rx, "usage", 5);

	/* 3. SENDMSG_ZC with two iovecs */
	struct iovec v[2] = { { "send", 4 }, { "msg", 3 } };
	struct msghdr mh = { .msg_iov = v, .msg_iovlen = 2 };
	s = tu_sqe(&ring);
	io_uring_prep_sendmsg_zc(s, tx, &mh, 0);
	s->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(two(&ring, 3, 7), 0);
	arrives(rx, "sendmsg", 7);

	/* 4. a registered buffer; outside it -EFAULT, the notification still follows */
	static char reg[64] = "registered";
	struct iovec rv = { reg, sizeof reg };
	CHECK_EQ(io_uring_register_buffers(&ring, &rv, 1), 0);
	s = tu_sqe(&ring);
	io_uring_prep_send_zc_fixed(s, tx, reg, 10, 0, 0, 0);
	s->user_data = 4;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(two(&ring, 4, 10), 0);
	arrives(rx, "registered", 10);
	s = tu_sqe(&ring);
	io_uring_prep_send_zc_fixed(s, tx, reg + 60, 10, 0, 0, 0);
	s->user_data = 5;
	CHECK_EQ(io_uring_submit(&ring), 1);
	two(&ring, 5, -EFAULT);

	/* 5. CQE_SKIP_SUCCESS: -EINVAL, one CQE */
	s = tu_sqe(&ring);
	io_uring_prep_send_zc(s, tx, "x", 1, 0, 0);
	s->flags |= IOSQE_CQE_SKIP_SUCCESS;
	s->user_data = 6;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe c;
	tu_next(&ring, &c);
	CHECK_EQ(c.user_data, 6);
	CHECK_EQ(c.res, -EINVAL);
	CHECK_EQ(c.flags & (IORING_CQE_F_MORE | IORING_CQE_F_NOTIF), 0);
	tu_none(&ring);
	close(tx);
	close(rx);

	/* 6. an unconnected UDP socket: the destination is read at submission (the send
	 * waits behind a 50 ms timeout; the address is gone by then) */
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ur = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(u >= 0 && ur >= 0);
	struct sockaddr_in ua = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof ua;
	CHECK_EQ(bind(ur, (struct sockaddr *)&ua, sizeof ua), 0);
	CHECK_EQ(getsockname(ur, (struct sockaddr *)&ua, &al), 0);
	struct sockaddr_in *dst = malloc(sizeof *dst);
	CHECK(dst);
	*dst = ua;
	struct __kernel_timespec ts = { 0, 50000000 };
	s = tu_sqe(&ring);
	io_uring_prep_timeout(s, &ts, 0, IORING_TIMEOUT_ETIME_SUCCESS);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 7;
	s = tu_sqe(&ring);
	io_uring_prep_send_zc(s, u, "dgram", 5, 0, 0);
	io_uring_prep_send_set_addr(s, (struct sockaddr *)dst, sizeof *dst);
	s->user_data = 8;
	CHECK_EQ(io_uring_submit(&ring), 2);
	memset(dst, 0, sizeof *dst);
	free(dst);
	tu_next(&ring, &c);
	CHECK_EQ(c.user_data, 7);
	CHECK_EQ(c.res, -ETIME);
	CHECK_EQ(two(&ring, 8, 5), 0);
	arrives(ur, "dgram", 5);
	close(u);
	close(ur);

	/* 6b. the kernel zero-copies only TCP and UDP: on a unix socket both are -EOPNOTSUPP,
	 * then the notification; nothing is sent */
	int us[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, us), 0);
	s = tu_sqe(&ring);
	io_uring_prep_send_zc(s, us[0], "unix", 4, 0, 0);
	s->user_data = 10;
	CHECK_EQ(io_uring_submit(&ring), 1);
	two(&ring, 10, -EOPNOTSUPP);
	struct iovec uv = { (void *)"unix", 4 };
	struct msghdr um = { .msg_iov = &uv, .msg_iovlen = 1 };
	s = tu_sqe(&ring);
	io_uring_prep_sendmsg_zc(s, us[0], &um, 0);
	s->user_data = 11;
	CHECK_EQ(io_uring_submit(&ring), 1);
	two(&ring, 11, -EOPNOTSUPP);
	char ub[8];
	CHECK_EQ(recv(us[1], ub, sizeof ub, MSG_DONTWAIT), -1);
	CHECK_EQ(errno, EAGAIN);
	close(us[0]);
	close(us[1]);

	/* 7. the probe reports them */
	struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
	CHECK(p);
	CHECK(io_uring_opcode_supported(p, IORING_OP_SEND_ZC));
	CHECK(io_uring_opcode_supported(p, IORING_OP_SENDMSG_ZC));
	io_uring_free_probe(p);
	io_uring_queue_exit(&ring);

	/* 8. a ring torn down while a SEND_ZC with an address waits for room (a TCP peer
	 * that reads nothing: the send buffer is full): the address copied at submission
	 * is freed with it (the sanitizer build's leak check at exit says if not) */
	CHECK_EQ(io_uring_queue_init(4, &ring, 0), 0);
	struct sockaddr_in la;
	int zl = tu_listener(0, &la), tc = tu_connect(&la), tp = accept(zl, NULL, NULL);
	CHECK(tp >= 0);
	static char blk[65536];
	while (send(tc, blk, sizeof blk, MSG_DONTWAIT) > 0)
		;
	CHECK_EQ(errno, EAGAIN);
	s = tu_sqe(&ring);
	io_uring_prep_send_zc(s, tc, blk, sizeof blk, 0, 0);
	io_uring_prep_send_set_addr(s, (struct sockaddr *)&la, sizeof la);
	s->user_data = 9;
	CHECK_EQ(io_uring_submit(&ring), 1);
	usleep(50000);
	struct io_uring_cqe *cp;
	CHECK_EQ(io_uring_peek_cqe(&ring, &cp), -EAGAIN);   /* it waits */
	io_uring_queue_exit(&ring);
	close(tc);
	close(tp);
	close(zl);
}

int main(void)
{
	return tu_uring_main(body);
}
