/* SPDX-License-Identifier: MIT */
/* Description: the reactor's waits (one-shot POLL_ADD, timers) keep the kernel's semantics with
 * its incremental poll set, in all three modes: two POLL_ADDs of one socket waiting for different
 * events fire apart (POLLIN when the peer writes; the other, POLLOUT with the send buffer full,
 * stays armed and fires once the peer drains it); 3000 POLL_ADDs of one pipe are all removed by
 * POLL_REMOVE (each 0, each poll -ECANCELED) and a later write posts nothing; a poll of an fd
 * number that the program closed and got back for another pipe fires for the new pipe only, never
 * for the old file's events (the poll armed before the close: the kernel's fires for its file,
 * the emulated one waits until removed, DROPIN.md); TIMEOUTs expire in deadline order whatever
 * their submission order; TIMEOUTs with a completion count fire by count whatever their
 * submission order, those with the same count in submission order. */
#include "test_uring.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#define NPOLL 3000

static struct io_uring_sqe *sqe_get(struct io_uring *ring)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s);
	return s;
}

static void poll_add(struct io_uring *ring, int fd, unsigned ev, uint64_t ud)
{
	struct io_uring_sqe *s = sqe_get(ring);
	io_uring_prep_poll_add(s, fd, ev);
	s->user_data = ud;
}

static void expect(struct io_uring *ring, uint64_t ud, int res)
{
	struct io_uring_cqe c;
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(c.res, res);
}

static void nonblock(int fd)
{
	CHECK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

/* 1. one socket, two waits for different events */
static void two_events(struct io_uring *ring)
{
	int sv[2];
	char buf[4096];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	nonblock(sv[0]);
	nonblock(sv[1]);
	memset(buf, 'x', sizeof buf);
	while (write(sv[0], buf, sizeof buf) > 0)
		;
	CHECK_EQ(errno, EAGAIN);
	poll_add(ring, sv[0], POLLOUT, 10);
	poll_add(ring, sv[0], POLLIN, 11);
	CHECK_EQ(io_uring_submit(ring), 2);
	tu_none(ring);
	CHECK_EQ(write(sv[1], "y", 1), 1);
	expect(ring, 11, POLLIN);
	tu_none(ring);                              /* the POLLOUT wait is still armed */
	while (read(sv[1], buf, sizeof buf) > 0)
		;
	expect(ring, 10, POLLOUT);
	close(sv[0]);
	close(sv[1]);
}

/* 2. many waits on one pipe, all removed */
static void many_removed(struct io_uring *ring, int p[2])
{
	for (unsigned i = 0; i < NPOLL; i++)
		poll_add(ring, p[0], POLLIN, 1000 + i);
	CHECK_EQ(io_uring_submit(ring), NPOLL);
	for (unsigned i = 0; i < NPOLL; i++) {
		struct io_uring_sqe *s = sqe_get(ring);
		io_uring_prep_poll_remove(s, 1000 + i);
		s->user_data = 10000 + i;
	}
	CHECK_EQ(io_uring_submit(ring), NPOLL);
	static unsigned char seen[2 * NPOLL];
	memset(seen, 0, sizeof seen);
	for (unsigned i = 0; i < 2 * NPOLL; i++) {
		struct io_uring_cqe c;
		tu_next(ring, &c);
		if (c.user_data >= 10000 && c.user_data < 10000 + NPOLL) {
			CHECK_EQ(c.res, 0);
			seen[c.user_data - 10000]++;
		} else {
			CHECK(c.user_data >= 1000 && c.user_data < 1000 + NPOLL);
			CHECK_EQ(c.res, -ECANCELED);
			seen[NPOLL + c.user_data - 1000]++;
		}
	}
	for (unsigned i = 0; i < 2 * NPOLL; i++)
		CHECK_EQ(seen[i], 1);
	CHECK_EQ(write(p[1], "z", 1), 1);
	tu_none(ring);                              /* nothing left armed */
	poll_add(ring, p[0], POLLIN, 12);
	CHECK_EQ(io_uring_submit(ring), 1);
	expect(ring, 12, POLLIN);
	char b;
	CHECK_EQ(read(p[0], &b, 1), 1);
}

/* 3. a closed fd number, back as another pipe */
static void number_reused(struct io_uring *ring)
{
	int a[2], b[2];
	CHECK_EQ(pipe(a), 0);
	int n = a[0];
	poll_add(ring, n, POLLIN, 20);
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_none(ring);
	int keep = dup(n);                          /* the old file stays open */
	CHECK(keep >= 0);
	CHECK_EQ(close(n), 0);
	CHECK_EQ(pipe(b), 0);
	CHECK_EQ(b[0], n);
	poll_add(ring, n, POLLIN, 21);
	CHECK_EQ(io_uring_submit(ring), 1);
	CHECK_EQ(write(a[1], "a", 1), 1);           /* the old file: not the new poll's */
	if (tu_mode == TU_KERNEL)
		expect(ring, 20, POLLIN);
	tu_none(ring);
	CHECK_EQ(write(b[1], "b", 1), 1);
	expect(ring, 21, POLLIN);
	tu_none(ring);
	struct io_uring_sqe *s = sqe_get(ring);
	io_uring_prep_poll_remove(s, 20);
	s->user_data = 22;
	CHECK_EQ(io_uring_submit(ring), 1);
	if (tu_mode == TU_KERNEL) {
		expect(ring, 22, -ENOENT);
	} else {
		struct io_uring_cqe c[2];
		tu_reap(ring, c, 2);
		CHECK_EQ(tu_find(c, 2, 22)->res, 0);
		CHECK_EQ(tu_find(c, 2, 20)->res, -ECANCELED);
	}
	close(keep);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

static void timeout_add(struct io_uring *ring, struct __kernel_timespec *ts, unsigned count, uint64_t ud)
{
	struct io_uring_sqe *s = sqe_get(ring);
	io_uring_prep_timeout(s, ts, count, 0);
	s->user_data = ud;
}

static void nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *s = sqe_get(ring);
	io_uring_prep_nop(s);
	s->user_data = ud;
	CHECK_EQ(io_uring_submit(ring), 1);
	expect(ring, ud, 0);
}

/* 4. timers: by deadline; counted ones by count, ties in submission order */
static void timers(struct io_uring *ring)
{
	static const unsigned ms[] = { 250, 50, 200, 100, 150 };
	struct __kernel_timespec ts[5];
	for (unsigned i = 0; i < 5; i++) {
		ts[i] = (struct __kernel_timespec){ 0, ms[i] * 1000000ll };
		timeout_add(ring, &ts[i], 0, 30 + i);
	}
	CHECK_EQ(io_uring_submit(ring), 5);
	static const uint64_t order[] = { 31, 33, 34, 32, 30 };
	for (unsigned i = 0; i < 5; i++)
		expect(ring, order[i], -ETIME);

	struct __kernel_timespec long_ts = { 10, 0 };
	timeout_add(ring, &long_ts, 3, 40);
	timeout_add(ring, &long_ts, 1, 41);
	timeout_add(ring, &long_ts, 1, 42);
	CHECK_EQ(io_uring_submit(ring), 3);
	tu_none(ring);
	nop(ring, 43);
	expect(ring, 41, 0);
	expect(ring, 42, 0);
	tu_none(ring);
	nop(ring, 44);
	tu_none(ring);
	nop(ring, 45);
	expect(ring, 40, 0);
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_params par;
	memset(&par, 0, sizeof par);
	par.flags = IORING_SETUP_CQSIZE;
	par.cq_entries = 2 * NPOLL + 64;
	CHECK_EQ(io_uring_queue_init_params(4096, &ring, &par), 0);
	tu_uring_check_mode(&ring);
	int p[2];
	CHECK_EQ(pipe(p), 0);

	two_events(&ring);
	many_removed(&ring, p);
	number_reused(&ring);
	timers(&ring);

	io_uring_queue_exit(&ring);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	return tu_uring_main(body);
}
