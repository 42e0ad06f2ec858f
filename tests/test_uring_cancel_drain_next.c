/* SPDX-License-Identifier: MIT */
/* Description: cancelling what waits behind a running IOSQE_IO_DRAIN request (the next chain,
 * held back until nothing runs, and what queued behind it) does not lift the drain for what is
 * submitted later, in all three modes: a drained READ waits on a pipe; NOP 2
 * (and NOP 3 behind it) are submitted and held back; IORING_REGISTER_SYNC_CANCEL cancels each
 * (the emulation can cancel a deferred request, the kernel cannot); one more NOP is submitted
 * after that, before the READ's data is written. No NOP may succeed before the READ completed:
 * the drain holds for everything submitted behind it until then, whatever was cancelled
 * (fuzz/corpus-uring/found-drain-cancel-next is the fuzzer's input for the same case). */
#include "test_uring.h"

static void cancel(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.addr = ud;
	reg.fd = -1;
	reg.timeout.tv_nsec = 10000000;
	io_uring_register_sync_cancel(ring, &reg);   /* -ENOENT on the kernel's ring: fine */
}

static void nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	io_uring_prep_nop(s);
	s->user_data = ud;
}

/* n NOPs (2..n+1) held back behind the drained READ, each cancelled, then NOP n+2 */
static void one(int n)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	static char buf[8];
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, p[0], buf, 1, 0);
	s->flags |= IOSQE_IO_DRAIN;
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), 1);
	for (int i = 0; i < n; i++)
		nop(&ring, 2 + i);
	CHECK_EQ(io_uring_submit(&ring), n);
	for (int i = 0; i < n; i++)
		cancel(&ring, 2 + i);
	nop(&ring, 2 + n);
	CHECK_EQ(io_uring_submit(&ring), 1);
	usleep(20000);                     /* a NOP that is not held back has completed by now */
	CHECK_EQ(write(p[1], "x", 1), 1);
	struct io_uring_cqe c[4];
	for (int i = 0; i < n + 2; i++) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { 2, 0 };
		int r = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (r)
			FAIL("CQE %d of %d: %s", i + 1, n + 2, strerror(-r));
		c[i] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	int at1 = -1;
	for (int i = 0; i < n + 2; i++)
		if (c[i].user_data == 1)
			at1 = i;
	CHECK(at1 >= 0);
	CHECK_EQ(c[at1].res, 1);
	for (int i = 0; i < at1; i++)
		if (c[i].res >= 0)
			FAIL("NOP %llu (res %d) completed before the drained READ it was submitted after "
			     "(%d NOPs held back behind it cancelled)", (unsigned long long)c[i].user_data, c[i].res, n);
	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&ring);
}

static void body(void)
{
	one(1);
	one(2);
}

int main(void)
{
	return tu_uring_main(body);
}
