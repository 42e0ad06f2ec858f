/* Description: the drop-in never loses a completion (IORING_FEAT_NODROP), in all three modes:
 * 100 NOPs and 100 reads submitted into a ring whose CQ holds 8, without reaping, all arrive,
 * each once and in submission order; IORING_SQ_CQ_OVERFLOW is raised while CQEs wait outside
 * the CQ and cleared once they are all reaped; cq.overflow (dropped CQEs) stays 0. */
#include "test_uring.h"
#include <fcntl.h>

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
	close(fd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
