/* SPDX-License-Identifier: MIT */
/* Description: a process that exits with requests in flight on a ring shared across fork()
 * has them cancelled (emulated): the child's pipe read (linked to a NOP), a blocking openat of
 * a FIFO on a worker thread and a poll each get -ECANCELED, and the pipe keeps its data (the
 * kernel, 6.x, ends them only when their event comes: checked as the reference it is); its TIMEOUT is
 * handed over and fires in the parent at its deadline (-ETIME, not before); a TIMEOUT counting one
 * completion, linked to a NOP, ends (by the count, or cancelled) and the NOP is cancelled, the
 * child exiting normally (emulated, the NOP comes free while the child leaves); the ring goes on
 * in the parent, nothing hangs, and after io_uring_queue_exit the parent has the threads,
 * fds and shared mappings it had before it set the ring up. */
#include "test_uring.h"
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	CHECK(d != NULL);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - (strcmp(path, "/proc/self/fd") == 0);   /* the DIR's own fd */
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The shared ("rw-s") mappings of this process: the ring's, and the page its state across
 * fork() lives in (emulated), are among them while the ring is set up. */
static int shared_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	char line[512], perm[8];
	int n = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%*x-%*x %7s", perm) == 1 && strcmp(perm, "rw-s") == 0)
			n++;
	fclose(f);
	return n;
}

static void body(void)
{
	int fds0 = count_dir("/proc/self/fd"), threads0 = count_dir("/proc/self/task");
	char dir[] = "/tmp/tu_fork_exitXXXXXX", fifo[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	CHECK_EQ(mkfifo(fifo, 0600), 0);
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	fds0 += 2;
	/* one struct io_uring for both (its SQ tail is the submitter's copy otherwise) */
	struct io_uring *rp = mmap(NULL, sizeof(*rp), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(rp != MAP_FAILED);
	int maps0 = shared_maps();
#define ring (*rp)
	int r = io_uring_queue_init(16, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&ring);
	char buf[8];
	uint64_t t0 = mono_ms();
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* a TIMEOUT counting one completion, linked to a NOP: submitted first, so that
		 * the child's leaving reaches it after the poll's cancel completed it (by count)
		 * and released the NOP */
		static struct __kernel_timespec t10s = { 10, 0 };
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_timeout(sqe, &t10s, 1, 0);
		sqe->user_data = 7;
		sqe->flags |= IOSQE_IO_LINK;
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 8;
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, pfd[0], buf, 4, 0);
		sqe->user_data = 1;
		sqe->flags |= IOSQE_IO_LINK;
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 2;
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_openat(sqe, AT_FDCWD, fifo, O_RDONLY, 0);
		sqe->user_data = 3;
		sqe->flags |= IOSQE_ASYNC;      /* on a worker: it blocks there */
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_poll_add(sqe, pfd[0], POLLIN);
		sqe->user_data = 4;
		static struct __kernel_timespec ts = { 0, 600000000 };
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_timeout(sqe, &ts, 0, 0);
		sqe->user_data = 5;
		CHECK_EQ(io_uring_submit(&ring), 7);
		usleep(100000);                 /* the openat waits for a writer on its worker */
		exit(0);
	}
	tu_child_ok(pid);
	int seen[9] = { 0 };
	int emu = tu_mode != TU_KERNEL, res1 = 0;
	for (int i = 0; i < 7; i++) {
		if (!emu && i == 2) {
			/* the kernel (6.x) cancels at exit only what uses a ring file; the read and the
			 * poll stay armed and end when their event comes (-ECANCELED, as the task is
			 * gone); the emulation, without the child's fds and memory, cancels them at once */
			CHECK_EQ(write(pfd[1], "abcd", 4), 4);
		}
		struct io_uring_cqe c = tu_wait_at(&ring, 20, __LINE__);
		CHECK(c.user_data >= 1 && c.user_data <= 8 && c.user_data != 6);
		seen[c.user_data]++;
		switch (c.user_data) {
		case 1:
			res1 = c.res;
			CHECK(c.res == -ECANCELED || (!emu && c.res == 4));
			break;
		case 2:
			CHECK(c.res == -ECANCELED || (!emu && c.res == 0));
			break;
		case 3:
			/* the kernel's io-wq lets the open finish here (into the exited
			 * child's table); the emulation cancels the worker's request */
			if (emu)
				CHECK_EQ(c.res, -ECANCELED);
			break;
		case 4:
			CHECK(c.res == -ECANCELED || (!emu && c.res > 0 && (c.res & POLLIN)));
			break;
		case 5:
			CHECK_EQ(c.res, -ETIME);
			CHECK(mono_ms() - t0 >= 590);  /* at its deadline, not when the child left */
			break;
		case 7:
			CHECK(c.res == 0 || c.res == -ECANCELED);
			break;
		case 8:
			/* the kernel (6.18) fails a request released after its task exited with
			 * -EFAULT (io_req_task_submit) */
			CHECK(c.res == -ECANCELED || (!emu && (c.res == 0 || c.res == -EFAULT)));
			break;
		}
	}
	for (int i = 1; i <= 8; i++)
		CHECK_EQ(seen[i], i != 6);
	if (emu)
		CHECK_EQ(write(pfd[1], "abcd", 4), 4);
	if (res1 == -ECANCELED) {
		/* the pipe is untouched: nobody reads it any more */
		struct pollfd pf = { pfd[0], POLLIN, 0 };
		CHECK_EQ(poll(&pf, 1, 10000), 1);
		CHECK_EQ(read(pfd[0], buf, 4), 4);
	}
	/* the ring goes on in the parent */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, pfd[0], buf, 3, 0);
	sqe->user_data = 6;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(write(pfd[1], "xyz", 3), 3);
	struct io_uring_cqe c = tu_wait_at(&ring, 20, __LINE__);
	CHECK_EQ(c.user_data, 6);
	CHECK_EQ(c.res, 3);
	CHECK(memcmp(buf, "xyz", 3) == 0);
	tu_none(&ring);
	io_uring_queue_exit(&ring);
	/* nothing left behind: the listener, reactor and workers end, their fds close */
	int fds = 0, threads = 0;
	for (int i = 0; i < 1000; i++) {
		fds = count_dir("/proc/self/fd");
		threads = count_dir("/proc/self/task");
		if (fds == fds0 && threads == threads0)
			break;
		usleep(20000);
	}
	CHECK_EQ(fds, fds0);
	CHECK_EQ(threads, threads0);
	CHECK_EQ(shared_maps(), maps0);
	close(pfd[0]);
	close(pfd[1]);
	unlink(fifo);
	rmdir(dir);
	munmap(rp, sizeof(*rp));
#undef ring
}

int main(void)
{
	return tu_uring_main(body);
}
