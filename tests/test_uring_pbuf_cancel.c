/* SPDX-License-Identifier: MIT */
/* Description: a provided buffer is never handed to two requests at once when requests that wait
 * for data are cancelled, in all three modes, with a buffer ring (io_uring_register_buf_ring) and
 * a classic group (PROVIDE_BUFFERS). READ and RECV with IOSQE_BUFFER_SELECT wait on empty pipes
 * and sockets; some are cancelled (ASYNC_CANCEL by user_data, by fd, io_uring_register_sync_cancel;
 * some waited with IOSQE_ASYNC); more are submitted; then the data comes. Every buffer a CQE names
 * is named by no other CQE (the test gives none back), the data is in the buffer its CQE names,
 * and a waiting request holds no buffer: fed one at a time, requests take the group's buffers in
 * the order they run, as the kernel's ring does (its mode checks the same answers). Must never
 * accept two CQEs naming one buffer, or data found in a buffer other than the one named.
 */
#include "test_uring.h"
#include <fcntl.h>
#include <sys/stat.h>

#define NB 16
#define BLEN 32
#define BGID_RING 7
#define BGID_LIST 8

static char bufs[NB][BLEN], bufs2[NB][BLEN];
static char (*cur)[BLEN] = bufs;  /* the group's buffers: bid i is cur[i] */
static int held[NB];              /* bid named by a CQE (the test gives none back) */

/* cur = b, emptied, none of its buffers named yet */
static void reset_bufs(char (*b)[BLEN])
{
	cur = b;
	memset(b, 0, sizeof bufs);
	memset(held, 0, sizeof held);
}

/* A READ (recv 0) or RECV (recv 1) into a buffer of group bgid, on fd, as ud. */
static void rd(struct io_uring *ring, int recv, int fd, int bgid, uint64_t ud, unsigned sqe_flags)
{
	struct io_uring_sqe *s = tu_sqe(ring);
	if (recv)
		io_uring_prep_recv(s, fd, NULL, BLEN, 0);
	else
		io_uring_prep_read(s, fd, NULL, BLEN, 0);
	s->flags |= IOSQE_BUFFER_SELECT | sqe_flags;
	s->buf_group = (uint16_t)bgid;
	s->user_data = ud;
	CHECK_EQ(io_uring_submit(ring), 1);
}

/* A CQE's buffer: -1 if none, else its bid, which no CQE has named before. */
static int take_bid(const struct io_uring_cqe *c)
{
	if (!(c->flags & IORING_CQE_F_BUFFER))
		return -1;
	int bid = (int)(c->flags >> IORING_CQE_BUFFER_SHIFT);
	CHECK(bid >= 0 && bid < NB);
	if (held[bid])
		FAIL("ud %llu names buffer %d, named before", (unsigned long long)c->user_data, bid);
	held[bid] = 1;
	return bid;
}

/* c completes a read of msg: its buffer holds msg. */
static int got(const struct io_uring_cqe *c, const char *msg)
{
	CHECK_EQ(c->res, (int)strlen(msg));
	int bid = take_bid(c);
	CHECK(bid >= 0);
	if (memcmp(cur[bid], msg, strlen(msg)))
		FAIL("ud %llu: \"%s\" is not in buffer %d (\"%.*s\")", (unsigned long long)c->user_data, msg,
		     bid, BLEN, cur[bid]);
	return bid;
}

/* Write msg to wfd; the next CQE is ud's, msg in buffer want (-1: any). */
static void feed(struct io_uring *ring, int wfd, const char *msg, uint64_t ud, int want)
{
	struct io_uring_cqe c;
	CHECK_EQ(write(wfd, msg, strlen(msg)), (ssize_t)strlen(msg));
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	int bid = got(&c, msg);
	if (want >= 0)
		CHECK_EQ(bid, want);
}

/* The cancelled request's CQE: -ECANCELED (a buffer it names is counted as given out). */
static void cancelled(const struct io_uring_cqe *c)
{
	CHECK_EQ(c->res, -ECANCELED);
	take_bid(c);
}

/* ASYNC_CANCEL of ud (fd < 0) or of every request on fd: n requests cancelled. */
static void cancel_op(struct io_uring *ring, uint64_t ud, int fd, int n)
{
	struct io_uring_sqe *s = tu_sqe(ring);
	if (fd >= 0)
		io_uring_prep_cancel_fd(s, fd, IORING_ASYNC_CANCEL_ALL);
	else
		io_uring_prep_cancel64(s, ud, 0);
	s->user_data = 1000;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe d[4];
	tu_reap(ring, d, (unsigned)n + 1);
	for (int i = 0; i <= n; i++) {
		if (d[i].user_data == 1000)
			CHECK_EQ(d[i].res, fd >= 0 ? n : 0);
		else
			cancelled(&d[i]);
	}
}

/* io_uring_register_sync_cancel of ud, then its CQE. */
static void cancel_sync(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.addr = ud;
	reg.timeout.tv_sec = -1;
	reg.timeout.tv_nsec = -1;
	CHECK_EQ(io_uring_register_sync_cancel(ring, &reg), 0);
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	cancelled(&c);
}

static void pipes(int (*p)[2], int n)
{
	for (int i = 0; i < n; i++)
		CHECK_EQ(pipe2(p[i], O_CLOEXEC), 0);
}

static void socks(int (*sv)[2], int n)
{
	for (int i = 0; i < n; i++)
		CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv[i]), 0);
}

static void close_all(int (*p)[2], int n)
{
	for (int i = 0; i < n; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
}

/* Group bgid on ring: a buffer ring (returned, to free) or a classic group of NB buffers,
 * bid i = b[i], none named yet. */
static struct io_uring_buf_ring *group(struct io_uring *ring, int bgid, char (*b)[BLEN])
{
	reset_bufs(b);
	if (bgid == BGID_LIST) {
		struct io_uring_sqe *s = tu_sqe(ring);
		io_uring_prep_provide_buffers(s, b, BLEN, NB, BGID_LIST, 0);
		s->user_data = 99;
		CHECK_EQ(io_uring_submit(ring), 1);
		struct io_uring_cqe c;
		tu_next(ring, &c);
		CHECK_EQ(c.res, 0);
		return NULL;
	}
	struct io_uring_buf_ring *br;
	CHECK_EQ(posix_memalign((void **)&br, 4096, NB * sizeof(struct io_uring_buf)), 0);
	struct io_uring_buf_reg reg = { .ring_addr = (uintptr_t)br, .ring_entries = NB, .bgid = BGID_RING };
	CHECK_EQ(io_uring_register_buf_ring(ring, &reg, 0), 0);
	io_uring_buf_ring_init(br);
	for (int i = 0; i < NB; i++)
		io_uring_buf_ring_add(br, b[i], BLEN, (unsigned short)i, io_uring_buf_ring_mask(NB), i);
	io_uring_buf_ring_advance(br, NB);
	return br;
}

/* The sequence that found the bug: two reads wait, the first is cancelled, a third is
 * submitted, then fed one at a time. A buffer ring's waiting requests hold no buffer: they
 * take its first two, in that order. A classic group's hold theirs (the kernel's cancelled
 * request names its buffer, the drop-in's puts it back on the list): the second takes the
 * second buffer, the third one not named before. */
static void first_two(struct io_uring *ring, int bgid)
{
	int list = bgid == BGID_LIST;
	int p[2][2];
	pipes(p, 2);
	rd(ring, 0, p[0][0], bgid, 1, 0);
	rd(ring, 0, p[1][0], bgid, 2, 0);
	tu_none(ring);
	cancel_op(ring, 1, -1, 1);
	rd(ring, 0, p[0][0], bgid, 3, 0);
	tu_none(ring);
	feed(ring, p[1][1], "two", 2, list ? 1 : 0);
	feed(ring, p[0][1], "three!", 3, list ? -1 : 1);
	close_all(p, 2);
}

/* Many waiting on pipes and sockets, cancels of several kinds, more submitted, then all
 * the data at once: distinct buffers, each holding its own request's data. */
static void many(struct io_uring *ring, int bgid)
{
	int p[3][2], sv[3][2];
	pipes(p, 3);
	socks(sv, 3);
	rd(ring, 0, p[0][0], bgid, 10, 0);
	rd(ring, 1, sv[0][0], bgid, 11, 0);
	rd(ring, 1, sv[1][0], bgid, 12, 0);
	rd(ring, 0, p[1][0], bgid, 13, 0);
	rd(ring, 1, sv[2][0], bgid, 14, 0);
	rd(ring, 0, p[2][0], bgid, 15, 0);
	tu_none(ring);
	cancel_op(ring, 0, sv[0][0], 1);          /* 11, by fd */
	cancel_sync(ring, 13);
	cancel_op(ring, 10, -1, 1);
	rd(ring, 0, p[1][0], bgid, 16, 0);
	rd(ring, 1, sv[0][0], bgid, 17, 0);
	tu_none(ring);
	static const struct { int sock, i; uint64_t ud; const char *msg; } w[] = {
		{ 1, 1, 12, "twelve" }, { 1, 2, 14, "fourteen!" }, { 0, 2, 15, "fifteen" },
		{ 0, 1, 16, "sixteen.." }, { 1, 0, 17, "seventeen" },
	};
	const int n = (int)(sizeof w / sizeof w[0]);
	for (int i = 0; i < n; i++) {
		int fd = w[i].sock ? sv[w[i].i][1] : p[w[i].i][1];
		CHECK_EQ(write(fd, w[i].msg, strlen(w[i].msg)), (ssize_t)strlen(w[i].msg));
	}
	struct io_uring_cqe c[5];
	tu_reap(ring, c, (unsigned)n);
	for (int i = 0; i < n; i++)
		got(tu_find(c, (unsigned)n, w[i].ud), w[i].msg);
	tu_none(ring);
	close_all(p, 3);
	close_all(sv, 3);
}

/* Requests that waited after IOSQE_ASYNC, one cancelled: the other's data in a buffer no
 * CQE named before (the kernel's io-wq may keep a buffer across its wait: no exact bid). */
static void async_waits(struct io_uring *ring, int bgid)
{
	int p[1][2], sv[1][2];
	pipes(p, 1);
	socks(sv, 1);
	rd(ring, 0, p[0][0], bgid, 20, IOSQE_ASYNC);
	rd(ring, 1, sv[0][0], bgid, 21, IOSQE_ASYNC);
	rd(ring, 1, sv[0][0], bgid, 22, 0);
	tu_none(ring);
	cancel_op(ring, 20, -1, 1);
	cancel_op(ring, 22, -1, 1);
	rd(ring, 0, p[0][0], bgid, 23, 0);
	feed(ring, sv[0][1], "twenty-one", 21, -1);
	feed(ring, p[0][1], "twenty-three", 23, -1);
	close_all(p, 1);
	close_all(sv, 1);
}

/* A request queued for a worker (IOSQE_ASYNC on a regular file, the one worker held by an
 * OPENAT of a FIFO without a writer) is cancelled after a later request took a buffer and
 * completed: the next request's buffer is not the completed one's (the drop-in's queued
 * request held a buffer, given back out of order; the kernel's takes it when it runs). With
 * a buffer ring, that ring is also unregistered and another of the same bgid registered
 * while the request waits in the queue: its buffer does not go back to the new ring. */
/* br: the buffer ring to replace (NULL: none) */
static void queued(struct io_uring *ring, int bgid, struct io_uring_buf_ring **br)
{
	int p[1][2];
	pipes(p, 1);
	int f = open("pbuf-file", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(f >= 0);
	CHECK_EQ(write(f, "file data", 9), 9);
	unlink("pbuf-fifo");
	CHECK_EQ(mkfifo("pbuf-fifo", 0600), 0);
	unsigned one_worker[2] = { 1, 1 };
	CHECK_EQ(io_uring_register_iowq_max_workers(ring, one_worker), 0);
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_openat(s, AT_FDCWD, "pbuf-fifo", O_RDONLY | O_CLOEXEC, 0);
	s->flags |= IOSQE_ASYNC;
	s->user_data = 30;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_none(ring);                            /* the open holds the worker */
	rd(ring, 0, f, bgid, 31, IOSQE_ASYNC);    /* queued behind it (the drop-in's) */
	if (br) {
		/* its buffer ring is replaced meanwhile by another of the same bgid: the
		 * queued request's buffer, given back, goes to neither */
		CHECK_EQ(io_uring_unregister_buf_ring(ring, bgid), 0);
		free(*br);
		*br = group(ring, bgid, bufs2);
	}
	CHECK_EQ(write(p[0][1], "x", 1), 1);
	rd(ring, 0, p[0][0], bgid, 32, 0);
	/* the drop-in's 31 waits for the worker and its cancel finds it there; the kernel's
	 * may have run (its OPENAT is not in the way): then it read the file, cancelled or not */
	struct io_uring_sqe *cs = tu_sqe(ring);
	io_uring_prep_cancel64(cs, 31, 0);
	cs->user_data = 1000;
	int n31 = 0, n32 = 0, ncan = 0, sent = 0;
	struct io_uring_cqe c;
	while (!n31 || !n32 || !ncan) {
		if (n32 && !sent++)
			CHECK_EQ(io_uring_submit(ring), 1);
		tu_next(ring, &c);
		if (c.user_data == 32) {
			got(&c, "x");
			n32++;
		} else if (c.user_data == 31) {
			if (c.res != -ECANCELED && tu_mode != TU_KERNEL)
				FAIL("group %d: 31 ended %d, not cancelled in the worker queue", bgid, c.res);
			if (c.res == -ECANCELED) {
				cancelled(&c);
			} else if (c.res != -ENOBUFS) {   /* the kernel's, run between the rings */
				/* the kernel's: read into the first ring, or the second */
				CHECK_EQ(c.res, 9);
				CHECK(c.flags & IORING_CQE_F_BUFFER);
				int bid = (int)(c.flags >> IORING_CQE_BUFFER_SHIFT);
				CHECK(bid < NB);
				CHECK(!memcmp(bufs[bid], "file data", 9) || !memcmp(bufs2[bid], "file data", 9));
				if (!memcmp(cur[bid], "file data", 9))
					take_bid(&c);
			}
			n31++;
		} else {
			CHECK_EQ(c.user_data, 1000);
			CHECK(c.res == 0 || tu_mode == TU_KERNEL);
			ncan++;
		}
	}
	CHECK_EQ(write(p[0][1], "thirty-three", 12), 12);
	rd(ring, 0, p[0][0], bgid, 33, 0);
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, 33);
	got(&c, "thirty-three");
	int w = open("pbuf-fifo", O_WRONLY | O_CLOEXEC);   /* once the open holds the reader end */
	CHECK(w >= 0);
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, 30);
	CHECK(c.res >= 0);
	close(c.res);
	close(w);
	close(f);
	unlink("pbuf-fifo");
	unlink("pbuf-file");
	close_all(p, 1);
}

static void body(void)
{
	for (int bgid = BGID_RING; bgid <= BGID_LIST; bgid++) {
		struct io_uring ring;
		CHECK_EQ(io_uring_queue_init(16, &ring, 0), 0);
		tu_uring_check_mode(&ring);
		struct io_uring_buf_ring *br = group(&ring, bgid, bufs);
		first_two(&ring, bgid);
		many(&ring, bgid);
		async_waits(&ring, bgid);
		io_uring_queue_exit(&ring);
		free(br);
		/* a new ring each: no worker thread yet; a buffer ring is also replaced */
		for (int rereg = 0; rereg <= (bgid == BGID_RING); rereg++) {
			CHECK_EQ(io_uring_queue_init(16, &ring, 0), 0);
			br = group(&ring, bgid, bufs);
			queued(&ring, bgid, rereg ? &br : NULL);
			io_uring_queue_exit(&ring);
			free(br);
		}
	}
}

int main(void)
{
	return tu_uring_main(body);
}
