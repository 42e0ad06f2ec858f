/* SPDX-License-Identifier: MIT */
/* Description: CQEs that overflowed in one process reach another that reaps, as the kernel's one
 * overflow list per ring does (IORING_FEAT_NODROP across fork): the child fills the 8-entry CQ
 * with 8 inline NOPs, its next 8 go to its overflow list, and it sleeps outside the library (in a
 * barrier) while the parent reaps all 16 in order; then the overflow flag is clear. Emulated, only
 * the child's listener can move those 8 in, at the parent's request: nothing else of the child
 * runs. */
#include "test_uring.h"
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#define CQ 8

struct shm {
	struct io_uring ring;
	pthread_barrier_t b;
};

static struct shm *sh;

static void submit_nops(uint64_t first)
{
	for (unsigned i = 0; i < CQ; i++) {
		struct io_uring_sqe *sqe = tu_sqe(&sh->ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = first + i;
	}
	CHECK_EQ(io_uring_submit(&sh->ring), CQ);
}

static void body(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	tu_pbarrier_init(&sh->b, 2);
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = CQ;
	int r = io_uring_queue_init_params(CQ, &sh->ring, &p);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&sh->ring);
	CHECK(p.features & IORING_FEAT_NODROP);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		submit_nops(1);                   /* the CQ is full */
		submit_nops(1 + CQ);              /* these overflow, in this process */
		CHECK(IO_URING_READ_ONCE(*sh->ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW);
		tu_pbarrier(&sh->b);              /* B1: submitted */
		tu_pbarrier(&sh->b);              /* B2: the parent reaped all, meanwhile */
		exit(0);
	}
	tu_pbarrier(&sh->b);                      /* B1 */
	for (uint64_t ud = 1; ud <= 2 * CQ; ud++) {
		struct io_uring_cqe c = tu_wait_at(&sh->ring, 20, __LINE__);
		CHECK_EQ(c.user_data, ud);
		CHECK_EQ(c.res, 0);
	}
	CHECK(!(IO_URING_READ_ONCE(*sh->ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW));
	tu_pbarrier(&sh->b);                      /* B2 */
	tu_child_ok(pid);
	tu_none(&sh->ring);
	io_uring_queue_exit(&sh->ring);
}

int main(void)
{
	return tu_uring_main(body);
}
