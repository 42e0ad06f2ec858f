/* SPDX-License-Identifier: MIT */
/* Description: an IORING_SETUP_SQPOLL ring's O_DIRECT reads complete for a program that only
 * looks at the CQ ring's tail and never calls io_uring_enter, in all three modes, as fio's
 * io_uring engine with --sqthread_poll waits: 8 aligned 4 KiB reads published through
 * io_uring_submit (which enters only when the poller asked for a wake-up) are all in the CQ
 * within 5 s of polling its tail in memory, each with pread's bytes. Emulated, O_DIRECT I/O
 * goes to kernel AIO, and the SQPOLL poller must post those completions itself (the kernel's
 * SQPOLL thread runs the ring's task work); it used to sleep with them in flight, and fio spun
 * for ever (scripts/fio-syscalls.sh found it). A file system that refuses O_DIRECT here is a
 * counted SKIP-PART.
 */
#include "test_uring.h"
#include "parts.h"
#include <fcntl.h>
#include <time.h>

#define BS 4096
#define NR 8

static void body(void)
{
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SQPOLL;
	p.sq_thread_idle = 50;
	CHECK_EQ(io_uring_queue_init_params(NR, &ring, &p), 0);
	tu_uring_check_mode(&ring);

	char path[64];
	snprintf(path, sizeof path, "sqpoll_aio.%d", (int)getpid());
	int wfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(wfd >= 0);
	uint8_t *data = malloc(NR * BS), *buf;
	CHECK(data);
	for (int i = 0; i < NR * BS; i++)
		data[i] = (uint8_t)(i * 131 + i / BS);
	CHECK_EQ(write(wfd, data, NR * BS), NR * BS);
	CHECK_EQ(fsync(wfd), 0);
	close(wfd);
	int fd = open(path, O_RDONLY | O_DIRECT);
	unlink(path);
	CHECK(fd >= 0);
	CHECK_EQ(posix_memalign((void **)&buf, BS, NR * BS), 0);
	memset(buf, 0, NR * BS);

	/* a poller idle past its 50 ms: the submit wakes it (and enters only for that) */
	usleep(100000);
	for (int i = 0; i < NR; i++) {
		struct io_uring_sqe *s = tu_sqe(&ring);
		io_uring_prep_read(s, fd, buf + (size_t)i * BS, BS, (uint64_t)(NR - 1 - i) * BS);
		s->user_data = (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), NR);

	/* fio's wait: the CQ tail in memory, no io_uring_enter, no liburing peek (which enters
	 * when IORING_SQ_TASKRUN is set) */
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned head = *ring.cq.khead, got = 0;
	while (got < NR) {
		unsigned tail = __atomic_load_n(ring.cq.ktail, __ATOMIC_ACQUIRE);
		for (; head != tail; head++, got++) {
			struct io_uring_cqe *c = &ring.cq.cqes[head & *ring.cq.kring_mask];
			CHECK(c->user_data < NR);
			CHECK_EQ(c->res, BS);
			int i = (int)c->user_data;
			CHECK(memcmp(buf + (size_t)i * BS, data + (size_t)(NR - 1 - i) * BS, BS) == 0);
		}
		__atomic_store_n(ring.cq.khead, head, __ATOMIC_RELEASE);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (got < NR && t.tv_sec - t0.tv_sec > 5)
			FAIL("%u of %d O_DIRECT reads completed after 5 s of polling the CQ (no enter)", got, NR);
		sched_yield();
	}
	free(buf);
	free(data);
	close(fd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	char why[256];
	if (!tu_have_odirect(".", why, sizeof why)) {
		tu_part_skip("O_DIRECT", "SQPOLL ring's O_DIRECT reads, CQ polled without enter", why);
		return 0;
	}
	tu_part_ran("O_DIRECT", "SQPOLL ring's O_DIRECT reads, CQ polled without enter");
	return tu_uring_main(body);
}
