/* SPDX-License-Identifier: MIT */
/* Description: a ring created by a thread that then exits keeps its server.
 * The server follows the process that started it (PR_SET_PDEATHSIG), but the
 * kernel sends that signal when the spawning *thread* exits too: the server
 * must then see that its parent process is still there and go on serving
 * (the ring must not die with a worker thread of a thread pool). The main
 * thread then runs NOPs through the ring, with the server asleep between
 * them, and shuts it down cleanly. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ur_fs.h"

#include "testutil.h"

static struct urfs_ring ring;

static void *make_ring(void *arg)
{
	(void)arg;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.flags = URFS_SETUP_NOIMAGE | URFS_SETUP_IDLE;
	p.idle_us = 0;                        /* the server sleeps between NOPs */
	int e = urfs_queue_init_params(8, &ring, &p);
	if (e < 0)
		FAIL("init: %s (%s)", strerror(-e), p.errmsg);
	return NULL;
}

int main(void)
{
	pthread_t th;
	CHECK(pthread_create(&th, NULL, make_ring, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);   /* the spawning thread is gone */
	usleep(100000);                       /* the signal has landed by now */
	for (int i = 0; i < 20; i++) {
		struct urfs_sqe *sqe = urfs_get_sqe(&ring);
		CHECK(sqe);
		urfs_prep_nop(sqe);
		urfs_sqe_set_data64(sqe, (uint64_t)i);
		CHECK_EQ(urfs_submit(&ring), 1);
		struct urfs_cqe *cqe;
		int r = urfs_wait_cqe(&ring, &cqe);
		if (r < 0)
			FAIL("NOP %d after the spawning thread exited: %s", i, strerror(-r));
		CHECK_EQ(cqe->res, 0);
		CHECK_EQ(urfs_cqe_get_data64(cqe), (uint64_t)i);
		urfs_cqe_seen(&ring, cqe);
		usleep(2000);
	}
	urfs_queue_exit(&ring);
	return 0;
}
