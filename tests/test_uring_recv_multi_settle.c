/* SPDX-License-Identifier: MIT */
/* Description: what a look at the CQ finds after the write that feeds a multishot RECV, when
 * the emulation's reactor thread has started the receive itself, in all three modes: the
 * kernel's ring runs a woken multishot to the end in the task work of the writer's own system
 * call, so a io_uring_peek_batch_cqe after the write finds every chunk (K of them, one per
 * provided buffer, in the stream's order), however long the program waited before it looked
 * (0 to 2 ms: the reactor wakes meanwhile and is in the middle of its run); the drop-in waits
 * for a run another thread has started before the look returns. */
#include "test_uring.h"
#include <sys/socket.h>
#include <sched.h>
#include <time.h>

#define K 256           /* chunks per write, one per provided buffer */
#define B 32            /* bytes per buffer */
#define ROUNDS 64

static uint8_t bufs[K + 1][B];

static uint8_t at(uint64_t i)
{
	return (uint8_t)(i * 7 + i / 251);
}

/* PROVIDE_BUFFERS of the ids in bid[0..n-1], one buffer each, group 1. */
static void provide(struct io_uring *ring, const int *bid, int n)
{
	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *s = tu_sqe(ring);
		io_uring_prep_provide_buffers(s, bufs[bid[i]], B, 1, 1, bid[i]);
		s->user_data = 99;
	}
	CHECK_EQ(io_uring_submit(ring), n);
	for (int i = 0; i < n; i++) {
		struct io_uring_cqe c;
		tu_next(ring, &c);
		CHECK_EQ(c.user_data, 99);
		CHECK_EQ(c.res, 0);
	}
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = 4 * K;
	CHECK_EQ(io_uring_queue_init_params(K + 1, &ring, &p), 0);
	tu_uring_check_mode(&ring);
	int sv[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	int bid[K + 1];
	for (int i = 0; i <= K; i++)
		bid[i] = i;
	provide(&ring, bid, K + 1);     /* one spare: a try after the last chunk finds EAGAIN */
	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_recv_multishot(s, sv[0], NULL, 0, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 1;
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), 1);

	static uint8_t out[K * B];
	uint64_t sent = 0, seen = 0;
	for (int round = 0; round < ROUNDS; round++) {
		for (int i = 0; i < K * B; i++)
			out[i] = at(sent + (uint64_t)i);
		CHECK_EQ(write(sv[1], out, sizeof(out)), (ssize_t)sizeof(out));
		sent += sizeof(out);
		struct timespec d = { 0, (round % 8) * 125000L };
		if (round % 2 == 0) {
			/* look as soon as the reactor has posted a chunk (io_uring_cq_ready reads
			 * the CQ tail, no call into the library): in the middle of its run */
			for (int spins = 0; !io_uring_cq_ready(&ring) && spins < 5000000; spins++)
				sched_yield();
		} else {
			nanosleep(&d, NULL);
		}
		struct io_uring_cqe *cqes[K + 8];
		unsigned n = io_uring_peek_batch_cqe(&ring, cqes, K + 8);
		if (n != K)
			FAIL("round %d (looked after %s): %u CQEs, the kernel's ring has all %d",
			     round, round % 2 ? "a sleep" : "the first chunk", n, K);
		for (unsigned i = 0; i < n; i++) {
			struct io_uring_cqe *c = cqes[i];
			CHECK_EQ(c->user_data, 1);
			CHECK_EQ(c->res, B);
			CHECK(c->flags & IORING_CQE_F_MORE);
			CHECK(c->flags & IORING_CQE_F_BUFFER);
			int b = (int)(c->flags >> IORING_CQE_BUFFER_SHIFT);
			CHECK(b >= 0 && b <= K);
			for (int j = 0; j < B; j++)
				if (bufs[b][j] != at(seen + (uint64_t)j))
					FAIL("round %d: byte %llu of the stream wrong", round,
					     (unsigned long long)(seen + (uint64_t)j));
			seen += B;
			bid[i] = b;
		}
		io_uring_cq_advance(&ring, n);
		provide(&ring, bid, K);
	}
	CHECK_EQ(seen, sent);
	close(sv[1]);
	close(sv[0]);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
