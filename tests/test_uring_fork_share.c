/* SPDX-License-Identifier: MIT */
/* Description: a ring survives fork() as a kernel ring does: parent and child see the same SQ
 * and CQ, either submits and either reaps; each process's requests run with its own fds and
 * memory (a file only the child opened, a buffer only the child reads); a request a process
 * submitted runs although that process then only waits outside the library (a pipe read of the
 * child completes while it sleeps in a barrier); CQEs posted by both processes at once are all
 * there (the shared CQ lock: NOPs from their workers, and, emulated, 6000 TIMEOUTs each with one deadline,
 * posted by both reactors in one burst, each process's threads SCHED_FIFO on a CPU of its own
 * meanwhile, so that load beside the test cannot keep the bursts apart); registering files while the other process uses the ring is
 * refused (-EOPNOTSUPP: the tables are per process; the kernel's is shared); the ring goes on
 * in the parent after the child exits.
 * Serial: runs SCHED_FIFO, one CPU per process (tu_rt_begin) (tests/run.sh runs it alone).
 */
#include "test_uring.h"
#include "parts.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>

#define NOPS 10000                /* each process's NOPs in the concurrent phase */
#define NTO 6000                  /* and its TIMEOUTs, all with one deadline (emulated) */

struct shm {
	struct io_uring ring;      /* one struct io_uring: both processes' get_sqe agree */
	pthread_mutex_t m;         /* one submitter at a time (the program's job, as with the kernel) */
	pthread_barrier_t b;
	char child_path[64];
	struct __kernel_timespec dl;  /* the TIMEOUTs' common deadline (CLOCK_MONOTONIC, ABS) */
	int cpu[2];                   /* two CPUs this test may use (-1: fewer) */
};

static struct shm *sh;

static void lock(void) { CHECK_EQ(pthread_mutex_lock(&sh->m), 0); }
static void unlock(void) { CHECK_EQ(pthread_mutex_unlock(&sh->m), 0); }
static void barrier(void)
{
	tu_pbarrier(&sh->b);
}


#define next() tu_wait_at(&sh->ring, 20, __LINE__)

/* Emulated, phase 4: each process's threads SCHED_FIFO on a CPU of its own (which: 0 parent, 1
 * child, of sh->cpu), so both post their bursts at the same moment whatever else loads the
 * machine: two processes' CQEs meet in the shared CQ, as the lock's promise needs. 0 when set. */
static int rt_begin(int which)
{
	if (tu_mode == TU_KERNEL || sh->cpu[1] < 0)
		return -1;
	int e = tu_rt_begin(sh->cpu[which]);
	if (e < 0)
		tu_part_skip("SCHED_FIFO", which ? "the child's burst at the parent's moment" :
			     "the parent's burst at the child's moment", strerror(-e));
	return e;
}

static void submit_nops(uint64_t tag, unsigned n)
{
	for (unsigned i = 0; i < n;) {
		lock();
		unsigned k = 0;
		for (; k < 8 && i + k < n; k++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&sh->ring);
			if (!sqe)
				break;
			io_uring_prep_nop(sqe);
			sqe->user_data = tag;
			sqe->flags |= IOSQE_ASYNC;   /* posted by workers: both processes at once */
		}
		int r = io_uring_submit(&sh->ring);
		unlock();
		CHECK_EQ(r, (int)k);
		i += k;
	}
}

/* The TIMEOUT burst is the emulation's (its reactors post in one burst): the kernel (6.x)
 * here let thousands of such TIMEOUTs never fire in 3 runs of 40 under load. */
static unsigned nto(void)
{
	return tu_mode == TU_KERNEL ? 0 : NTO;
}

/* n TIMEOUTs at sh->dl: both processes' reactors post them in one burst */
static void submit_timeouts(uint64_t tag, unsigned n)
{
	for (unsigned i = 0; i < n;) {
		lock();
		unsigned k = 0;
		for (; k < 32 && i + k < n; k++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&sh->ring);
			if (!sqe)
				break;
			io_uring_prep_timeout(sqe, &sh->dl, 0, IORING_TIMEOUT_ABS);
			sqe->user_data = tag;
		}
		int r = io_uring_submit(&sh->ring);
		unlock();
		CHECK_EQ(r, (int)k);
		i += k;
	}
}

static void child(int pfd[2], int shared_fd)
{
	char buf[32];
	prctl(PR_SET_PDEATHSIG, SIGKILL);                /* the parent failed: no child left behind */
	/* 1: read a file only this process has open, into memory only it looks at */
	int cfd = open(sh->child_path, O_RDONLY);
	CHECK(cfd >= 0);
	barrier();                                        /* B1: the parent's fd is open */
	memset(buf, 0, sizeof buf);
	lock();
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_read(sqe, cfd, buf, 11, 0);
	sqe->user_data = 201;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	unlock();
	barrier();                                        /* B2: the parent reaps it */
	barrier();                                        /* B3: reaped */
	CHECK(memcmp(buf, "child-file\n", 11) == 0);
	/* 2: the parent's request (its own fd): this process reaps its CQE */
	barrier();                                        /* B4: submitted by the parent */
	struct io_uring_cqe c = next();
	CHECK_EQ(c.user_data, 101);
	CHECK_EQ(c.res, 12);
	/* 3: a read of an empty pipe, then this process sleeps outside the library
	 * while the parent writes the pipe and reaps the read's CQE */
	memset(buf, 0, sizeof buf);
	lock();
	sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_read(sqe, pfd[0], buf, 5, 0);
	sqe->user_data = 202;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	unlock();
	barrier();                                        /* B5: submitted */
	barrier();                                        /* B6: the parent reaped 202 */
	CHECK(memcmp(buf, "pipe!", 5) == 0);
	/* registered files: the kernel shares one table per ring; the emulation keeps a copy
	 * per process and refuses a change while another process uses the ring */
	int one = cfd;
	int rr = io_uring_register_files(&sh->ring, &one, 1);
	if (tu_mode == TU_KERNEL) {
		CHECK_EQ(rr, 0);
		CHECK_EQ(io_uring_unregister_files(&sh->ring), 0);
	} else {
		CHECK_EQ(rr, -EOPNOTSUPP);
	}
	/* 4: NOPs from both processes at once; the parent reaps all */
	int rt = rt_begin(1);
	barrier();                                        /* B7 */
	submit_timeouts(4, nto());
	submit_nops(2, NOPS);
	/* 5: a write to the fd both share, then leave */
	lock();
	sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_write(sqe, shared_fd, "child\n", 6, 0);
	sqe->user_data = 203;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	unlock();
	barrier();                                        /* B8: the parent reaped all */
	if (rt == 0)
		tu_sched_end();
	exit(0);
}

static void body(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sh != MAP_FAILED);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	CHECK_EQ(pthread_mutex_init(&sh->m, &ma), 0);
	tu_pbarrier_init(&sh->b, 2);
	cpu_set_t may;
	CHECK_EQ(sched_getaffinity(0, sizeof may, &may), 0);
	sh->cpu[0] = sh->cpu[1] = -1;
	for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &may))
			sh->cpu[k++] = c;
	if (tu_mode != TU_KERNEL && sh->cpu[1] < 0)
		tu_part_skip("2 CPUs", "both processes' bursts at one moment", "this process may run on one CPU only");
	struct io_uring_params p = { 0 };
	p.flags = IORING_SETUP_CQSIZE;
	/* emulated: the bursts fit, the NOPs overflow the CQ in both processes (their overflow
	 * lists are flushed at a reaper's request); the kernel's reference run gets a CQ that
	 * holds all (its overflow is not what this test is about) */
	p.cq_entries = tu_mode == TU_KERNEL ? 65536 : 16384;
	int r = io_uring_queue_init_params(64, &sh->ring, &p);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&sh->ring);

	char dir[] = "/tmp/tu_fork_shareXXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char ppath[64], spath[64];
	snprintf(ppath, sizeof ppath, "%s/parent", dir);
	snprintf(spath, sizeof spath, "%s/shared", dir);
	snprintf(sh->child_path, sizeof sh->child_path, "%s/child", dir);
	int f = open(sh->child_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(f >= 0 && write(f, "child-file\n", 11) == 11);
	close(f);
	f = open(ppath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(f >= 0 && write(f, "parent-file\n", 12) == 12);
	close(f);
	int shared_fd = open(spath, O_RDWR | O_CREAT | O_APPEND, 0600);
	CHECK(shared_fd >= 0);
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);

	/* before the fork: a request of the parent, reaped by the parent after it */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_write(sqe, shared_fd, "before\n", 7, 0);
	sqe->user_data = 100;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);

	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child(pfd, shared_fd);
	struct io_uring_cqe c = next();
	CHECK_EQ(c.user_data, 100);
	CHECK_EQ(c.res, 7);
	/* opened after the fork: the child has no such fd (or another file under the number) */
	int pfile = open(ppath, O_RDONLY);
	CHECK(pfile >= 0);
	barrier();                                        /* B1 */
	barrier();                                        /* B2: the child submitted 201 */
	c = next();
	CHECK_EQ(c.user_data, 201);
	CHECK_EQ(c.res, 11);
	barrier();                                        /* B3 */
	char pbuf[16] = { 0 };
	lock();
	sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_read(sqe, pfile, pbuf, 12, 0);
	sqe->user_data = 101;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	unlock();
	barrier();                                        /* B4: the child reaps 101 */
	barrier();                                        /* B5: the child's pipe read is in flight */
	usleep(20000);
	CHECK_EQ(write(pfd[1], "pipe!", 5), 5);
	c = next();                                       /* the child's request, run while it sleeps */
	CHECK_EQ(c.user_data, 202);
	CHECK_EQ(c.res, 5);
	CHECK(memcmp(pbuf, "parent-file\n", 12) == 0);   /* 101 read into the parent's memory */
	barrier();                                        /* B6 */
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	sh->dl.tv_sec = now.tv_sec + 1;                   /* both have armed all by then */
	sh->dl.tv_nsec = now.tv_nsec;
	int rt = rt_begin(0);
	barrier();                                        /* B7 */
	submit_timeouts(3, nto());
	submit_nops(1, NOPS);
	unsigned got[5] = { 0 }, w203 = 0;
	for (unsigned i = 0; i < 2 * NOPS + 2 * nto() + 1; i++) {
		struct io_uring_cqe *cp;
		struct __kernel_timespec wts = { 20, 0 };
		int wr = io_uring_wait_cqe_timeout(&sh->ring, &cp, &wts);
		if (wr < 0)
			FAIL("after %u CQEs (NOPs %u + %u, TIMEOUTs %u + %u, write %u), none in 20 s: %s", i,
			     got[1], got[2], got[3], got[4], w203, strerror(-wr));
		c = *cp;
		io_uring_cqe_seen(&sh->ring, cp);
		if (c.user_data == 203) {
			CHECK_EQ(c.res, 6);
			w203++;
			continue;
		}
		CHECK(c.user_data >= 1 && c.user_data <= 4);
		CHECK_EQ(c.res, c.user_data >= 3 ? -ETIME : 0);
		got[c.user_data]++;
	}
	CHECK_EQ(got[1], NOPS);
	CHECK_EQ(got[2], NOPS);
	CHECK_EQ(got[3], nto());
	CHECK_EQ(got[4], nto());
	CHECK_EQ(w203, 1);
	if (rt == 0)
		tu_sched_end();
	barrier();                                        /* B8 */
	tu_child_ok(pid);
	/* the ring goes on in the parent */
	sqe = io_uring_get_sqe(&sh->ring);
	io_uring_prep_write(sqe, shared_fd, "after\n", 6, 0);
	sqe->user_data = 102;
	CHECK_EQ(io_uring_submit(&sh->ring), 1);
	c = next();
	CHECK_EQ(c.user_data, 102);
	CHECK_EQ(c.res, 6);
	tu_none(&sh->ring);
	char all[64] = { 0 };
	CHECK_EQ(pread(shared_fd, all, sizeof all - 1, 0), 19);
	CHECK(strcmp(all, "before\nchild\nafter\n") == 0 || (fprintf(stderr, "%s", all), 0));
	io_uring_queue_exit(&sh->ring);
	close(shared_fd);
	close(pfile);
	unlink(ppath);
	unlink(spath);
	unlink(sh->child_path);
	rmdir(dir);
}

int main(void)
{
	return tu_uring_main(body);
}
