/* SPDX-License-Identifier: MIT */
/* Description: an O_DIRECT read started by a synchronous cancel completes, in all three modes: a
 * POLL_ADD hard-linked to an O_DIRECT READ is cancelled with IORING_REGISTER_SYNC_CANCEL, the read
 * then starts and its CQE arrives without any further submission. (The emulation batches inline
 * O_DIRECT I/O into one io_submit per submission; a read issued outside a submission must not
 * wait in the batch for the next one.) Skips where O_DIRECT is refused. */
#include "test_uring.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int fd = open("aio_after_cancel.dat", O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, 65536), 0);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	void *buf;
	CHECK_EQ(posix_memalign(&buf, 4096, 4096), 0);
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_poll_add(s, p[0], POLLIN);
	s->flags |= IOSQE_IO_HARDLINK;
	s->user_data = 1;
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, fd, buf, 4096, 4096);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 2);
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.addr = 1;
	reg.fd = -1;
	reg.timeout.tv_sec = -1;
	reg.timeout.tv_nsec = -1;
	CHECK_EQ(io_uring_register_sync_cancel(&ring, &reg), 0);
	struct io_uring_cqe c[2];
	for (int i = 0; i < 2; i++) {
		struct io_uring_cqe *cqe;
		struct __kernel_timespec ts = { 2, 0 };
		int r = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
		if (r)
			FAIL("CQE %d of 2: %s (the read after the cancelled poll never completed)", i + 1, strerror(-r));
		c[i] = *cqe;
		io_uring_cqe_seen(&ring, cqe);
	}
	CHECK_EQ(tu_find(c, 2, 1)->res, -ECANCELED);
	CHECK_EQ(tu_find(c, 2, 2)->res, 4096);
	free(buf);
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink("aio_after_cancel.dat");
	io_uring_queue_exit(&ring);
}

int main(void)
{
	int fd = open("aio_after_cancel.dat", O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0) {
		printf("O_DIRECT refused here: %s\n", strerror(errno));
		return 77;
	}
	close(fd);
	return tu_uring_main(body);
}
