/* SPDX-License-Identifier: MIT */
/* Description: a process that leaves a ring shared across fork (io_uring_queue_exit) and lives on
 * no longer counts as one of the ring's users, in all three modes: once the child has used the
 * ring and closed it, the parent registers files again (emulated, a table change is refused only
 * while another process uses the ring: docs/DROPIN.md, Sharing across fork), a cancel that finds
 * nothing is -ENOENT, and the ring goes on (a NOP). The child sits in a barrier meanwhile, alive:
 * its slot must have been freed when it left, not when it dies. Once a second child, forked from
 * the shared ring, has used it and exited, the parent alone registers files again and closes the
 * ring (io_uring_queue_exit returns: a fork of a ring shared already takes no second slot for the
 * parent, which no listener would serve). And a child that closes an IORING_SETUP_SQPOLL ring it
 * inherited returns from io_uring_queue_exit (the poller thread is the parent's: the child has
 * none to stop) within 10 s, and the parent's ring goes on.
 */
#include "test_uring.h"
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>

struct shm {
	struct io_uring ring;
	pthread_barrier_t b;
};

static struct shm *sh;

static void nop(uint64_t ud)
{
	struct io_uring_sqe *sqe = tu_sqe(&sh->ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = ud;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	struct io_uring_cqe c = tu_wait_at(&sh->ring, 20, __LINE__);
	CHECK_EQ(c.user_data, ud);
	CHECK_EQ(c.res, 0);
}

/* pid's exit status 0 within 10 s (a child hung in io_uring_queue_exit fails here). */
static void child_ends(pid_t pid)
{
	int st = 0;
	for (int i = 0; waitpid(pid, &st, WNOHANG) == 0; i++) {
		if (i == 10000) {
			kill(pid, SIGKILL);
			FAIL("the child did not end within 10 s");
		}
		usleep(1000);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void sqpoll_child_exit(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_SQPOLL;
	CHECK_EQ(io_uring_queue_init_params(4, &sh->ring, &p), 0);
	nop(5);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		io_uring_queue_exit(&sh->ring);
		exit(0);
	}
	child_ends(pid);
	nop(6);
	io_uring_queue_exit(&sh->ring);
}

static void body(void)
{
	alarm(30);                                /* a hang (in io_uring_queue_exit) fails the mode */
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	tu_pbarrier_init(&sh->b, 2);
	CHECK_EQ(io_uring_queue_init(8, &sh->ring, 0), 0);
	tu_uring_check_mode(&sh->ring);
	nop(1);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		nop(2);                           /* the child uses the ring */
		io_uring_queue_exit(&sh->ring);   /* and leaves it */
		tu_pbarrier(&sh->b);              /* B1: left */
		tu_pbarrier(&sh->b);              /* B2: alive all along */
		exit(0);
	}
	tu_pbarrier(&sh->b);                      /* B1 */
	int fd = open("/dev/null", O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(io_uring_register_files(&sh->ring, &fd, 1), 0);
	CHECK_EQ(io_uring_unregister_files(&sh->ring), 0);
	struct io_uring_sqe *sqe = tu_sqe(&sh->ring);
	io_uring_prep_cancel64(sqe, 777, 0);
	sqe->user_data = 3;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	struct io_uring_cqe c = tu_wait_at(&sh->ring, 20, __LINE__);
	CHECK_EQ(c.user_data, 3);
	CHECK_EQ(c.res, -ENOENT);
	nop(4);
	tu_pbarrier(&sh->b);                      /* B2 */
	tu_child_ok(pid);
	/* a second fork of the ring, shared already: that child uses it and exits; the parent,
	 * alone again, registers files */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		nop(7);
		exit(0);
	}
	child_ends(pid);
	CHECK_EQ(io_uring_register_files(&sh->ring, &fd, 1), 0);
	CHECK_EQ(io_uring_unregister_files(&sh->ring), 0);
	tu_none(&sh->ring);
	close(fd);
	io_uring_queue_exit(&sh->ring);
	sqpoll_child_exit();
}

int main(void)
{
	return tu_uring_main(body);
}
