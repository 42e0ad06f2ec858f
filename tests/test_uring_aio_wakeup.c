/* SPDX-License-Identifier: MIT */
/* Description: a kernel AIO completion of an emulated ring is never lost to an
 * io_uring_enter that clears the ring fd. The pattern is MariaDB's: one thread sleeps in
 * io_uring_wait_cqe, others call io_uring_submit; an enter that finds the CQ empty and clears
 * the ring's eventfd must not take with it the signal the kernel wrote for an O_DIRECT read
 * that just completed into the AIO ring (nobody would reap it: the waiter would sleep). Here,
 * in one thread: a NOP's CQE is consumed with the inline helpers (the eventfd stays
 * signalled), an O_DIRECT read completes in the kernel, then io_uring_enter(0, 0, 0): the
 * ring fd must still poll readable and the read's CQE arrive with pread's bytes. In all three
 * modes (the kernel's ring does this by itself); skips its work where O_DIRECT is refused. */
#include "test_uring.h"
#include <fcntl.h>
#include <poll.h>

#define BS 4096

/* Consume CQEs with the inline helpers (no enter while one is there) until the one with
 * user_data ud; returns 1 if the read's CQE (user_data 2) came among them. */
static int consume_until(struct io_uring *ring, uint64_t ud)
{
	int read_done = 0;
	for (;;) {
		struct io_uring_cqe *cqe = NULL;
		for (int i = 0; i < 2000 && io_uring_peek_cqe(ring, &cqe) != 0; i++)
			usleep(1000);
		CHECK(cqe != NULL);
		uint64_t got = cqe->user_data;
		if (got == 2) {
			CHECK_EQ(cqe->res, BS);
			read_done = 1;
		} else {
			CHECK_EQ(got, ud);
		}
		io_uring_cqe_seen(ring, cqe);
		if (got == ud)
			return read_done;
	}
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	char path[] = "uring_aio_wakeup.XXXXXX";
	int wfd = mkstemp(path);
	CHECK(wfd >= 0);
	uint8_t data[BS];
	for (int i = 0; i < BS; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	CHECK_EQ(write(wfd, data, BS), BS);
	CHECK_EQ(fsync(wfd), 0);
	int fd = open(path, O_RDONLY | O_DIRECT);
	unlink(path);
	close(wfd);
	if (fd < 0) {
		printf("O_DIRECT refused here (%s): nothing to check\n", strerror(errno));
		io_uring_queue_exit(&ring);
		return;
	}
	uint8_t *buf;
	CHECK_EQ(posix_memalign((void **)&buf, BS, BS), 0);
	memset(buf, 0, BS);

	int emulated_checked = 0;
	for (int round = 0; round < 8; round++) {
		/* The read goes to kernel AIO and completes within the 50 ms of the timeout,
		 * whose CQE a ring thread posts (signalling the ring fd); it is consumed
		 * with the inline helpers, so the ring fd stays signalled, CQ empty. */
		struct __kernel_timespec ts = { 0, 50 * 1000 * 1000 };
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_read(s, fd, buf, BS, 0);
		s->user_data = 2;
		s = io_uring_get_sqe(&ring);
		io_uring_prep_timeout(s, &ts, 0, 0);
		s->user_data = 3;
		CHECK_EQ(io_uring_submit(&ring), 2);
		usleep(100000);
		if (consume_until(&ring, 3)) {
			CHECK(memcmp(buf, data, BS) == 0);
			continue;                   /* the read's CQE came already */
		}
		emulated_checked++;
		/* Another thread's submit of nothing: must not swallow the read's wake-up. */
		int e = io_uring_enter(ring.ring_fd, 0, 0, 0, NULL);
		CHECK(e >= 0);
		struct pollfd p = { ring.ring_fd, POLLIN, 0 };
		int pr = poll(&p, 1, 2000);
		if (pr != 1)
			FAIL("round %d: the ring fd does not poll readable 2 s after the O_DIRECT read "
			     "completed (poll %d): its completion was lost", round, pr);
		struct io_uring_cqe *cqe;
		CHECK_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
		CHECK_EQ(cqe->user_data, 2);
		CHECK_EQ(cqe->res, BS);
		io_uring_cqe_seen(&ring, cqe);
		CHECK(memcmp(buf, data, BS) == 0);
	}
	printf("%d of 8 rounds had the read's completion wait past the enter\n", emulated_checked);
	if (tu_mode != TU_KERNEL)
		CHECK(emulated_checked > 0);
	free(buf);
	close(fd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
