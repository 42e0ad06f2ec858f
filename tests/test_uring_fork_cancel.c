/* SPDX-License-Identifier: MIT */
/* Description: ASYNC_CANCEL (and IORING_REGISTER_SYNC_CANCEL) across fork() on a shared ring:
 * the child cancels a read the parent submitted and the parent a poll the child submitted (it
 * sleeps outside the library meanwhile); the cancelled read takes nothing from its pipe; ALL
 * counts the other process's requests; a cancel that matches nowhere is -ENOENT, at once. */
#include "test_uring.h"
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>

struct shm {
	struct io_uring ring;
	pthread_barrier_t b;
};

static struct shm *sh;

static void barrier(void)
{
	tu_pbarrier(&sh->b);
}

#define next() tu_wait_at(&sh->ring, 20, __LINE__)

static void prep_cancel(uint64_t ud, int flags, uint64_t my_ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_cancel64(sqe, ud, flags);
	sqe->user_data = my_ud;
}

/* Two CQEs, by user_data: the cancelled request's and the cancel's. */
static void two(uint64_t target, uint64_t cancel, int32_t want_cancel_res)
{
	int seen_t = 0, seen_c = 0;
	for (int i = 0; i < 2; i++) {
		struct io_uring_cqe c = next();
		if (c.user_data == target) {
			/* the kernel interrupts a read that already waits: -EINTR */
			if (c.res != -ECANCELED && c.res != -EINTR)
				FAIL("cancelled request: res %d", c.res);
			seen_t++;
		} else if (c.user_data == cancel) {
			CHECK_EQ(c.res, want_cancel_res);
			seen_c++;
		} else {
			FAIL("unexpected CQE %llu res %d", (unsigned long long)c.user_data, c.res);
		}
	}
	CHECK(seen_t == 1 && seen_c == 1);
}

static void body(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	tu_pbarrier_init(&sh->b, 2);
	int r = io_uring_queue_init(16, &sh->ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&sh->ring);
	int p1[2], p2[2];
	CHECK_EQ(pipe(p1), 0);
	CHECK_EQ(pipe(p2), 0);
	char buf[16];

	/* 1: the parent's read of an empty pipe, cancelled by the child */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_read(sqe, p1[0], buf, 8, 0);
	sqe->user_data = 1;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prep_cancel(1, 0, 2);
		CHECK_EQ(io_uring_submit(&sh->ring), 1);
		two(1, 2, 0);
		/* 2: two polls of this process, cancelled by the parent while it sleeps */
		for (int i = 0; i < 2; i++) {
			sqe = io_uring_get_sqe(&sh->ring);
			io_uring_prep_poll_add(sqe, p2[0], POLLIN);
			sqe->user_data = 10;
		}
		sqe = io_uring_get_sqe(&sh->ring);
		io_uring_prep_poll_add(sqe, p2[0], POLLIN);
		sqe->user_data = 20;
		CHECK_EQ(io_uring_submit(&sh->ring), 3);
		barrier();                      /* C1: armed */
		barrier();                      /* C2: the parent cancelled them */
		exit(0);
	}
	barrier();                              /* C1 */
	/* the read took nothing: a byte written now is read by read() */
	CHECK_EQ(write(p1[1], "x", 1), 1);
	usleep(200000);                         /* a read still armed somewhere would take it */
	struct pollfd pf = { p1[0], POLLIN, 0 };
	CHECK_EQ(poll(&pf, 1, 0), 1);
	CHECK_EQ(read(p1[0], buf, 1), 1);
	/* ALL: both polls of user_data 10 of the child */
	prep_cancel(10, IORING_ASYNC_CANCEL_ALL, 11);
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	int n10 = 0, got11 = 0;
	for (int i = 0; i < 3; i++) {
		struct io_uring_cqe c = next();
		if (c.user_data == 10) {
			CHECK_EQ(c.res, -ECANCELED);
			n10++;
		} else if (c.user_data == 11) {
			CHECK_EQ(c.res, 2);
			got11++;
		} else {
			FAIL("unexpected CQE %llu res %d", (unsigned long long)c.user_data, c.res);
		}
	}
	CHECK(n10 == 2 && got11 == 1);
	/* sync cancel of the child's 20: it returns when done, its CQE follows */
	struct io_uring_sync_cancel_reg reg = { .addr = 20, .fd = -1 };
	reg.timeout.tv_sec = -1;
	reg.timeout.tv_nsec = -1;
	CHECK_EQ(io_uring_register_sync_cancel(&sh->ring, &reg), 0);
	struct io_uring_cqe c = next();
	CHECK_EQ(c.user_data, 20);
	CHECK_EQ(c.res, -ECANCELED);
	/* nowhere: -ENOENT */
	prep_cancel(12345, 0, 30);
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	c = next();
	CHECK_EQ(c.user_data, 30);
	CHECK_EQ(c.res, -ENOENT);
	barrier();                              /* C2 */
	tu_child_ok(pid);
	tu_none(&sh->ring);
	io_uring_queue_exit(&sh->ring);
}

int main(void)
{
	return tu_uring_main(body);
}
