/* SPDX-License-Identifier: MIT */
/* Description: OPENAT of a FIFO never blocks the submitter: the inline try opens with
 * O_NONBLOCK as the kernel's does (O_RDONLY: an fd at once, left blocking as asked, fd 0 too
 * when stdin is closed; O_WRONLY
 * without a reader: -ENXIO, the kernel's answer), and IOSQE_ASYNC's open waits on a worker
 * until a writer comes; with one worker (IORING_REGISTER_IOWQ_MAX_WORKERS), a second such open
 * waits in the queue, where ASYNC_CANCEL finds it (-ECANCELED) while the first goes on; emulated,
 * a LINK_TIMEOUT that fires while such an open runs on its worker completes with -EALREADY (the
 * open cannot be cancelled there) and the open goes on. */
#include "test_uring.h"
#include <fcntl.h>
#include <sys/stat.h>

static void body(void)
{
	struct io_uring ring;
	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&ring);
	char dir[] = "/tmp/tu_open_fifoXXXXXX", fifo[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	CHECK_EQ(mkfifo(fifo, 0600), 0);
	struct io_uring_cqe c;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, fifo, O_RDONLY, 0);
	CHECK_EQ(io_uring_submit(&ring), 1);          /* returns: nothing waits for a writer */
	tu_next(&ring, &c);
	CHECK(c.res >= 0);
	CHECK_EQ(fcntl(c.res, F_GETFL) & O_NONBLOCK, 0);
	close(c.res);
	/* the same with stdin closed: the open's fd is 0, a success like any other (whatever
	 * errno the submitting thread held before) */
	int in = dup(0);
	CHECK(in >= 0);
	close(0);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, fifo, O_RDONLY, 0);
	errno = EINTR;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_next(&ring, &c);
	CHECK_EQ(c.res, 0);
	CHECK_EQ(fcntl(0, F_GETFL) & O_NONBLOCK, 0);
	CHECK_EQ(dup2(in, 0), 0);
	close(in);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_openat(sqe, AT_FDCWD, fifo, O_WRONLY, 0);
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_next(&ring, &c);
	CHECK_EQ(c.res, -ENXIO);
	/* with one worker, two such opens: the first waits for a writer on the worker, the
	 * second in the worker's queue, where a cancel finds it (0; the open -ECANCELED) */
	unsigned one_worker[2] = { 1, 1 };
	CHECK_EQ(io_uring_register_iowq_max_workers(&ring, one_worker), 0);
	for (int i = 0; i < 2; i++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_openat(sqe, AT_FDCWD, fifo, O_RDONLY, 0);
		sqe->flags |= IOSQE_ASYNC;
		sqe->user_data = 1 + (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_none(&ring);                               /* they wait */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_cancel64(sqe, 2, 0);
	sqe->user_data = 3;
	CHECK_EQ(io_uring_submit(&ring), 1);
	for (int i = 0; i < 2; i++) {             /* the open's and the cancel's, either order */
		c = tu_wait_at(&ring, 10, __LINE__);
		CHECK_EQ(c.user_data, 2 + (uint64_t)(c.user_data == 3));
		CHECK_EQ(c.res, c.user_data == 3 ? 0 : -ECANCELED);
	}
	int w = open(fifo, O_WRONLY);
	CHECK(w >= 0);
	tu_next(&ring, &c);
	CHECK_EQ(c.user_data, 1);
	CHECK(c.res >= 0);
	close(c.res);
	close(w);
	tu_none(&ring);

	/* emulated: the same open linked to a 50 ms LINK_TIMEOUT; when it fires the open runs on
	 * the worker, where it cannot be cancelled: the timeout's CQE says -EALREADY (not -ETIME),
	 * and the open goes on until a writer comes. (Linux 6.18 posts neither CQE within 10 s:
	 * the kernel's step is left out.) */
	if (tu_mode != TU_KERNEL) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_openat(sqe, AT_FDCWD, fifo, O_RDONLY, 0);
		sqe->flags |= IOSQE_ASYNC | IOSQE_IO_LINK;
		sqe->user_data = 4;
		static struct __kernel_timespec t50 = { 0, 50000000 };
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_link_timeout(sqe, &t50, 0);
		sqe->user_data = 5;
		CHECK_EQ(io_uring_submit(&ring), 2);
		c = tu_wait_at(&ring, 10, __LINE__);
		CHECK_EQ(c.user_data, 5);
		CHECK_EQ(c.res, -EALREADY);
		w = open(fifo, O_WRONLY | O_NONBLOCK);
		CHECK(w >= 0);
		c = tu_wait_at(&ring, 10, __LINE__);
		CHECK_EQ(c.user_data, 4);
		CHECK(c.res >= 0);
		close(c.res);
		close(w);
	}
	io_uring_queue_exit(&ring);
	unlink(fifo);
	rmdir(dir);
}

int main(void)
{
	return tu_uring_main(body);
}
