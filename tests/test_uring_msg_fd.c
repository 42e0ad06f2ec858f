/* SPDX-License-Identifier: MIT */
/* Description: IORING_OP_MSG_RING with IORING_MSG_SEND_FD passes a registered file from one
 * ring's table to another's, as the kernel (6.0+) does: the target slot (file_index, 1-based, or
 * IORING_FILE_INDEX_ALLOC: the sender's CQE names the slot) reads the same file, independently of
 * the sender's slot (closed after the pass), and the target gets a CQE {off, 0 or the slot}
 * unless IORING_MSG_RING_CQE_SKIP. Errors: a non-zero len -EINVAL, an empty source slot -EBADF,
 * the sender's own ring -EINVAL, a target slot out of range -EINVAL, a target without a file
 * table -ENXIO, unknown flags -EINVAL. A registered file held in descriptor 0 (stdin closed, a
 * low RLIMIT_NOFILE) is passed as well. */
#include "test_uring.h"
#include <fcntl.h>
#include <sys/resource.h>

static struct io_uring_sqe *sqe_get(struct io_uring *ring)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s);
	return s;
}

/* One request on ring, its CQE's res. */
static int run1(struct io_uring *ring, struct io_uring_sqe *s)
{
	struct io_uring_cqe c;
	s->user_data = 7;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.user_data, 7);
	return c.res;
}

/* MSG_RING SEND_FD from src's slot to dst's file_index on the ring fd `to`. */
static int send_fd(struct io_uring *src, int to, unsigned slot, unsigned file_index, unsigned flags,
		   unsigned len)
{
	struct io_uring_sqe *s = sqe_get(src);
	io_uring_prep_msg_ring(s, to, len, 0x89, 0);
	s->addr = IORING_MSG_SEND_FD;
	s->addr3 = slot;
	s->file_index = file_index;
	s->msg_ring_flags = flags;
	return run1(src, s);
}

/* Read 6 bytes through dst's registered slot and check them. */
static void check_read(struct io_uring *dst, unsigned slot)
{
	char buf[8] = "";
	struct io_uring_sqe *s = sqe_get(dst);
	io_uring_prep_read(s, (int)slot, buf, 6, 0);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(run1(dst, s), 6);
	CHECK(memcmp(buf, "passed", 6) == 0);
}

static void body(void)
{
	struct io_uring a, b, plain;
	CHECK_EQ(io_uring_queue_init(8, &a, 0), 0);
	CHECK_EQ(io_uring_queue_init(8, &b, 0), 0);
	CHECK_EQ(io_uring_queue_init(8, &plain, 0), 0);
	tu_uring_check_mode(&a);
	char path[] = "uring_msg_fd.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(pwrite(fd, "passed", 6, 0), 6);
	CHECK_EQ(io_uring_register_files_sparse(&a, 4), 0);
	CHECK_EQ(io_uring_register_files_sparse(&b, 4), 0);
	CHECK_EQ(io_uring_register_files_update(&a, 0, &fd, 1), 1);
	close(fd);                                 /* only the registered slot holds it now */

	/* 1. slot 0 of a -> slot 1 (file_index 2) of b: both CQEs, b reads the file */
	CHECK_EQ(send_fd(&a, b.ring_fd, 0, 2, 0, 0), 0);
	struct io_uring_cqe c;
	tu_reap(&b, &c, 1);
	CHECK_EQ(c.user_data, 0x89);
	CHECK_EQ(c.res, 0);
	check_read(&b, 1);

	/* 2. a closes its slot: b's copy still reads, a's does not */
	struct io_uring_sqe *s = sqe_get(&a);
	io_uring_prep_close_direct(s, 0);
	CHECK_EQ(run1(&a, s), 0);
	check_read(&b, 1);
	s = sqe_get(&a);
	char tmp[8];
	io_uring_prep_read(s, 0, tmp, 6, 0);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(run1(&a, s), -EBADF);

	/* 3. an empty source slot, the sender's own ring, a slot out of range, bad flags */
	CHECK_EQ(send_fd(&a, b.ring_fd, 0, 1, 0, 0), -EBADF);
	CHECK_EQ(send_fd(&a, b.ring_fd, 0, 1, 0, 17), -EINVAL);
	int again = open("/proc/self/exe", O_RDONLY);
	CHECK(again >= 0);
	CHECK_EQ(io_uring_register_files_update(&a, 1, &again, 1), 1);
	close(again);
	CHECK_EQ(send_fd(&a, a.ring_fd, 1, 1, 0, 0), -EINVAL);
	CHECK_EQ(send_fd(&a, b.ring_fd, 1, 5, 0, 0), -EINVAL);
	CHECK_EQ(send_fd(&a, b.ring_fd, 1, 1, 0x80, 0), -EINVAL);
	CHECK_EQ(send_fd(&a, plain.ring_fd, 1, 1, 0, 0), -ENXIO);

	/* 4. IORING_FILE_INDEX_ALLOC: the sender learns the slot; CQE_SKIP: b gets no CQE */
	CHECK_EQ(io_uring_unregister_files(&a), 0);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(write(p[1], "passed", 6), 6);
	CHECK_EQ(io_uring_register_files(&a, &p[0], 1), 0);
	int slot = send_fd(&a, b.ring_fd, 0, IORING_FILE_INDEX_ALLOC, IORING_MSG_RING_CQE_SKIP, 0);
	CHECK(slot >= 0 && slot < 4 && slot != 1);
	struct io_uring_cqe *cp;
	struct __kernel_timespec ts = { 0, 50000000 };
	CHECK_EQ(io_uring_wait_cqe_timeout(&b, &cp, &ts), -ETIME);
	char buf[8] = "";
	s = sqe_get(&b);
	io_uring_prep_read(s, slot, buf, 6, 0);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(run1(&b, s), 6);
	CHECK(memcmp(buf, "passed", 6) == 0);

	/* 5. a registered file whose descriptor is 0 (stdin closed, RLIMIT_NOFILE below the
	 * emulation's high range keeps its dup low) is passed like any other */
	CHECK_EQ(io_uring_unregister_files(&a), 0);
	int q[2];
	CHECK_EQ(pipe(q), 0);
	CHECK_EQ(write(q[1], "passed", 6), 6);
	struct rlimit rl0, rl;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl0), 0);
	rl = rl0;
	if (rl.rlim_cur > 256)
		rl.rlim_cur = 256;
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
	close(0);
	CHECK_EQ(io_uring_register_files(&a, &q[0], 1), 0);
	CHECK_EQ(send_fd(&a, b.ring_fd, 0, 3, 0, 0), 0);
	tu_reap(&b, &c, 1);
	CHECK_EQ(c.res, 0);
	check_read(&b, 2);
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl0), 0);
	close(q[0]);
	close(q[1]);

	close(p[0]);
	close(p[1]);
	io_uring_queue_exit(&plain);
	io_uring_queue_exit(&b);
	io_uring_queue_exit(&a);
}

int main(void)
{
	return tu_uring_main(body);
}
