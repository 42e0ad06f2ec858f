/* SPDX-License-Identifier: MIT */
/* Description: a hostile SQE stream never crashes the drop-in, in all three modes: 2000 SQEs with
 * random opcodes (0..255), flags, lengths, offsets and buffer indexes, fds from {bad, -1, a file,
 * a pipe, a socket, the ring itself} and pointers from {NULL, low garbage, a kernel address, an
 * unmapped page, a scratch buffer}; every SQE taken is answered by a CQE or is still pending and
 * cancellable; bad pointers come back as -EFAULT (checked on READV, TIMEOUT, OPENAT), bad fds as
 * -EBADF, unknown opcodes as -EINVAL; the probe lists the Linux 5.10 opcodes and every opcode it
 * leaves out fails with -EINVAL, io_uring_get_probe says the same, and a probe buffer that is not zeroed is refused; and the ring still does I/O correctly afterwards. */
#include "test_uring.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void single(struct io_uring *ring, void (*prep)(struct io_uring_sqe *, void *), void *arg, int want)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s);
	prep(s, arg);
	s->user_data = 0xabc;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe c;
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.user_data, 0xabc);
	CHECK_EQ(c.res, want);
}

static void p_readv(struct io_uring_sqe *s, void *bad) { io_uring_prep_readv(s, *(int *)bad, (void *)0x10, 2, 0); }
static void p_read_bad(struct io_uring_sqe *s, void *a) { io_uring_prep_read(s, *(int *)a, (void *)0x10, 16, 0); }
static void p_timeout(struct io_uring_sqe *s, void *a) { (void)a; io_uring_prep_timeout(s, (void *)0x10, 0, 0); }
static void p_open(struct io_uring_sqe *s, void *a) { (void)a; io_uring_prep_openat(s, AT_FDCWD, (void *)0x10, O_RDONLY, 0); }
static void p_badfd(struct io_uring_sqe *s, void *a) { (void)a; io_uring_prep_read(s, 4242, (void *)0x10, 16, 0); }
static void p_badop(struct io_uring_sqe *s, void *a) { (void)a; io_uring_prep_nop(s); s->opcode = 200; }
static void p_badflag(struct io_uring_sqe *s, void *a) { (void)a; io_uring_prep_nop(s); s->flags = 0x80; }

static void body(void)
{
	struct io_uring ring;
	/* SUBMIT_ALL: an SQE that fails does not stop the rest of the batch */
	CHECK_EQ(io_uring_queue_init(64, &ring, IORING_SETUP_SUBMIT_ALL), 0);
	tu_uring_check_mode(&ring);
	char path[] = "uring_hostile.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(write(fd, "0123456789abcdef", 16), 16);
	int p[2], sv[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	void *hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(hole != MAP_FAILED);
	static char scratch[65536];

	/* the precise answers first */
	single(&ring, p_readv, &fd, -EFAULT);
	single(&ring, p_read_bad, &fd, -EFAULT);
	single(&ring, p_timeout, NULL, -EFAULT);
	single(&ring, p_open, NULL, -EFAULT);
	single(&ring, p_badfd, NULL, -EBADF);
	single(&ring, p_badop, NULL, -EINVAL);
	single(&ring, p_badflag, NULL, -EINVAL);

	/* the probe is the contract: the Linux 5.10 set is there, and every opcode
	 * it calls unsupported fails with -EINVAL (emulated: URING_CMD) */
	struct io_uring_probe *pr = io_uring_get_probe_ring(&ring);
	CHECK(pr);
	for (int op = IORING_OP_NOP; op <= IORING_OP_LINKAT; op++)
		if (!io_uring_opcode_supported(pr, op))
			FAIL("opcode %d of the 5.10 set is not in the probe", op);
	int unsupported = 0;
	for (int op = 0; op < IORING_OP_LAST; op++) {
		if (io_uring_opcode_supported(pr, op))
			continue;
		struct io_uring_sqe *s1 = io_uring_get_sqe(&ring);
		io_uring_prep_nop(s1);
		s1->opcode = (uint8_t)op;
		s1->user_data = 0x5000 + (uint64_t)op;
		CHECK_EQ(io_uring_submit(&ring), 1);
		struct io_uring_cqe c1;
		tu_reap(&ring, &c1, 1);
		CHECK_EQ(c1.user_data, 0x5000 + (uint64_t)op);
		CHECK_EQ(c1.res, -EINVAL);
		unsupported++;
	}
	if (tu_mode != TU_KERNEL) {
		/* exactly DROPIN.md's table: all but URING_CMD (zero-copy sends are copies) */
		CHECK(!io_uring_opcode_supported(pr, IORING_OP_URING_CMD));
		CHECK(io_uring_opcode_supported(pr, IORING_OP_SEND_ZC));
		CHECK(io_uring_opcode_supported(pr, IORING_OP_SENDMSG_ZC));
		CHECK_EQ(unsupported, 1);
		CHECK_EQ(pr->last_op, IORING_OP_LAST - 1);
	}
	/* io_uring_get_probe (a ring of its own) says the same */
	struct io_uring_probe *pr2 = io_uring_get_probe();
	CHECK(pr2);
	CHECK_EQ(pr2->last_op, pr->last_op);
	for (int op = 0; op < IORING_OP_LAST; op++)
		CHECK_EQ(io_uring_opcode_supported(pr2, op), io_uring_opcode_supported(pr, op));
	io_uring_free_probe(pr2);
	io_uring_free_probe(pr);

	/* the probe's buffer must come zeroed (the kernel's rule): one stray byte
	 * in the header or in the last op asked for is -EINVAL */
	size_t psz = sizeof(struct io_uring_probe) + 8 * sizeof(struct io_uring_probe_op);
	struct io_uring_probe *dirty = calloc(1, psz);
	CHECK(dirty);
	CHECK_EQ(io_uring_register_probe(&ring, dirty, 8), 0);
	CHECK(dirty->ops_len > 0);
	for (int k = 0; k < 2; k++) {
		memset(dirty, 0, psz);
		((unsigned char *)dirty)[k ? psz - 1 : 0] = 1;
		CHECK_EQ(io_uring_register_probe(&ring, dirty, 8), -EINVAL);
	}
	free(dirty);

	/* then noise */
	uint64_t x = 0x1234567887654321ull;
	const int fds[] = { 4242, -1, fd, p[0], p[1], sv[0], ring.ring_fd };
	const uint64_t ptrs[] = { 0, 0x10, 0xffff800000000000ull, (uint64_t)(uintptr_t)hole,
				  (uint64_t)(uintptr_t)scratch };
	unsigned sent = 0, got = 0;
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 40; i++) {
			struct io_uring_sqe *s = io_uring_get_sqe(&ring);
			if (!s)
				break;
			uint64_t r = rnd(&x);
			memset(s, 0, sizeof *s);
			s->opcode = (uint8_t)r;
			/* keep the test's own world intact: no closing, no unlinking, no madvise */
			if (s->opcode == IORING_OP_CLOSE || s->opcode == IORING_OP_UNLINKAT ||
			    s->opcode == IORING_OP_RENAMEAT || s->opcode == IORING_OP_MADVISE ||
			    s->opcode == IORING_OP_SHUTDOWN || s->opcode == IORING_OP_FILES_UPDATE ||
			    s->opcode == IORING_OP_MSG_RING || s->opcode == IORING_OP_EPOLL_CTL)
				s->opcode = IORING_OP_NOP;
			s->flags = (uint8_t)(rnd(&x) & (IOSQE_ASYNC | IOSQE_BUFFER_SELECT | IOSQE_FIXED_FILE |
							  IOSQE_CQE_SKIP_SUCCESS | 0x80));
			s->fd = fds[rnd(&x) % 7];
			s->addr = ptrs[rnd(&x) % 5];
			s->off = rnd(&x) % 3 == 0 ? (uint64_t)-1 : rnd(&x) % 100000;
			s->len = (uint32_t)(rnd(&x) % 3 == 0 ? rnd(&x) : rnd(&x) % 64);
			s->rw_flags = (uint32_t)(rnd(&x) % 4 == 0 ? rnd(&x) : 0);
			s->buf_index = (uint16_t)(rnd(&x) % 4);
			s->user_data = 1 + sent;
			if (s->flags & IOSQE_CQE_SKIP_SUCCESS)
				s->flags &= (uint8_t)~IOSQE_CQE_SKIP_SUCCESS;
			sent++;
		}
		int r = io_uring_submit(&ring);
		CHECK(r >= 0);
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { 0, 2000000 };
		while (io_uring_wait_cqe_timeout(&ring, &cqe, &ts) == 0) {
			CHECK(cqe->user_data >= 1 && cqe->user_data <= sent);
			io_uring_cqe_seen(&ring, cqe);
			got++;
		}
	}
	/* the kernel stops a submit at an SQE it rejects: hand it the rest */
	for (int i = 0; i < 2000 && io_uring_sq_ready(&ring); i++) {
		CHECK(io_uring_submit(&ring) >= 0);
		struct io_uring_cqe *cqe;
		while (io_uring_peek_cqe(&ring, &cqe) == 0) {
			io_uring_cqe_seen(&ring, cqe);
			got++;
		}
	}
	CHECK_EQ(io_uring_sq_ready(&ring), 0);
	/* what still waits (polls, reads on the empty pipe, timeouts) is cancelled */
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
	s->user_data = 0;
	CHECK_EQ(io_uring_submit(&ring), 1);
	printf("%u hostile SQEs, %u CQEs before the final cancel\n", sent, got);
	CHECK(got > 0);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { 0, 200000000 };
	while (io_uring_wait_cqe_timeout(&ring, &cqe, &ts) == 0)
		io_uring_cqe_seen(&ring, cqe);

	/* still a working ring */
	char buf[16];
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, fd, buf, 16, 0);
	s->user_data = 99;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe c;
	do
		tu_reap(&ring, &c, 1);
	while (c.user_data != 99);
	CHECK_EQ(c.res, 16);
	CHECK(memcmp(buf, "0123456789abcdef", 16) == 0);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
