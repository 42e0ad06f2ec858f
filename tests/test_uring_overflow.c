/* SPDX-License-Identifier: MIT */
/* Description: the drop-in never loses a completion (IORING_FEAT_NODROP), in all three modes:
 * 100 NOPs and 100 reads submitted into a ring whose CQ holds 8, without reaping, all arrive,
 * each once and in submission order; IORING_SQ_CQ_OVERFLOW is raised while CQEs wait outside
 * the CQ and cleared once they are all reaped; cq.overflow (dropped CQEs) stays 0. Emulated, a
 * CQE that finds the CQ full when no memory is left for the overflow list (calloc fails in the
 * thread that posts it) is the one CQE lost: it is counted in cq.overflow (docs/DROPIN.md), the
 * overflow flag stays clear, the CQEs before it arrive and the ring goes on. The smallest ring
 * (one SQE, IORING_SETUP_CQSIZE of one CQE) works: three NOPs not reaped arrive in order. (The kernel's
 * overflow list is allocated in the kernel: its mode has no such step.) */
#include "test_uring.h"
#include <dlfcn.h>
#include <fcntl.h>

/* calloc fails with ENOMEM in a thread that sets fail_calloc (the drop-in allocates an
 * overflowed CQE with calloc); elsewhere it is the next library's (libc's, or ASan's). */
static __thread int fail_calloc, in_dlsym;
static void *(*real_calloc)(size_t, size_t);

void *calloc(size_t n, size_t size)
{
	if (fail_calloc || in_dlsym) {
		errno = ENOMEM;
		return NULL;
	}
	if (!real_calloc) {
		in_dlsym = 1;
		*(void **)&real_calloc = dlsym(RTLD_NEXT, "calloc");
		in_dlsym = 0;
		if (!real_calloc) {
			errno = ENOMEM;
			return NULL;
		}
	}
	return real_calloc(n, size);
}

/* The CQ (8) full of NOPs, then a ninth NOP while calloc fails: lost and counted. */
static void drop_counted(struct io_uring *ring)
{
	for (unsigned i = 0; i < 8; i++) {
		struct io_uring_sqe *s = tu_sqe(ring);
		io_uring_prep_nop(s);
		s->user_data = 300 + i;
		if (i % 4 == 3)
			CHECK_EQ(io_uring_submit(ring), 4);
	}
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_nop(s);
	s->user_data = 308;
	fail_calloc = 1;
	int r = io_uring_submit(ring);
	fail_calloc = 0;
	CHECK_EQ(r, 1);
	CHECK_EQ(*ring->cq.koverflow, 1);
	CHECK(!io_uring_cq_has_overflow(ring));
	struct io_uring_cqe c[8], *cqe;
	tu_reap(ring, c, 8);
	for (unsigned i = 0; i < 8; i++)
		CHECK_EQ(c[i].user_data, 300 + i);
	CHECK_EQ(io_uring_peek_cqe(ring, &cqe), -EAGAIN);
	s = tu_sqe(ring);
	io_uring_prep_nop(s);
	s->user_data = 309;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_reap(ring, c, 1);
	CHECK_EQ(c[0].user_data, 309);
	CHECK_EQ(*ring->cq.koverflow, 1);
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = 8;
	CHECK_EQ(io_uring_queue_init_params(4, &ring, &p), 0);
	tu_uring_check_mode(&ring);
	CHECK(p.features & IORING_FEAT_NODROP);
	CHECK_EQ(ring.cq.ring_entries, 8);
	int fd = open("/proc/self/exe", O_RDONLY);
	CHECK(fd >= 0);
	char buf[16];
	unsigned n = 0;
	while (n < 200) {
		for (int i = 0; i < 4; i++, n++) {
			struct io_uring_sqe *s = io_uring_get_sqe(&ring);
			CHECK(s);
			if (n < 100)
				io_uring_prep_nop(s);
			else
				io_uring_prep_read(s, fd, buf, 4, 0);
			s->user_data = n;
		}
		int r = io_uring_submit(&ring);
		CHECK_EQ(r, 4);
	}
	CHECK(io_uring_cq_has_overflow(&ring));
	CHECK_EQ(*ring.cq.koverflow, 0);
	unsigned got = 0;
	while (got < 200) {
		struct io_uring_cqe *cqe;
		int r = io_uring_wait_cqe(&ring, &cqe);
		if (r < 0)
			FAIL("wait_cqe after %u: %s", got, strerror(-r));
		CHECK_EQ(cqe->user_data, got);
		CHECK_EQ(cqe->res, got < 100 ? 0 : 4);
		io_uring_cqe_seen(&ring, cqe);
		got++;
	}
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_peek_cqe(&ring, &cqe), -EAGAIN);
	CHECK(!io_uring_cq_has_overflow(&ring));
	CHECK_EQ(*ring.cq.koverflow, 0);
	if (tu_mode != TU_KERNEL)
		drop_counted(&ring);
	close(fd);
	io_uring_queue_exit(&ring);

	/* the smallest ring: one SQE, a CQ of one; three NOPs, each submitted alone and not
	 * reaped, all arrive in order (two through the overflow list) */
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = 1;
	CHECK_EQ(io_uring_queue_init_params(1, &ring, &p), 0);
	CHECK_EQ(ring.cq.ring_entries, 1);
	for (unsigned i = 0; i < 3; i++) {
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		CHECK(s);
		io_uring_prep_nop(s);
		s->user_data = 0x5eed0000u + i;
		CHECK_EQ(io_uring_submit(&ring), 1);
	}
	for (unsigned i = 0; i < 3; i++) {
		CHECK_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
		CHECK_EQ(cqe->user_data, 0x5eed0000u + i);
		CHECK_EQ(cqe->res, 0);
		io_uring_cqe_seen(&ring, cqe);
	}
	CHECK_EQ(*ring.cq.koverflow, 0);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
