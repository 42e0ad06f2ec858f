/* SPDX-License-Identifier: MIT */
/* test_uring.h: shared by tests/test_uring_*.c, the drop-in's tests. They are liburing
 * programs (Debian's <liburing.h>) linked to the drop-in (uring/liburing.so.2, by rpath:
 * tu_uring_check_lib() proves it is ours). tu_uring_main() runs the test's body once per mode,
 * each in a child process:
 *   TU_KERNEL   the kernel's io_uring (pass-through; skipped where the kernel blocks it)
 *   TU_ENV      URING_EMULATE=1: emulated although the kernel would work
 *   TU_NORING   io_uring_setup/enter/register blocked by seccomp (EPERM): emulated
 * and the body asserts which one it got with tu_uring_check_mode() (an emulated ring's fd is
 * an eventfd, a kernel ring's an io_uring: /proc/self/fd says which; docs/DROPIN.md).
 * Header only. Must never: let a mode pass without the ring being the kind that mode promises. */
#ifndef TEST_URING_H
#define TEST_URING_H

#include <liburing.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "../src/common/noring.h"

#ifndef FAIL
#define FAIL(...) do { fprintf(stderr, "FAIL %s:%d [%s]: ", __FILE__, __LINE__, tu_mode_name); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#endif
#define CHECK(c) do { if (!(c)) FAIL("%s", #c); } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) FAIL("%s = %lld, expected %s = %lld", #a, _a, #b, _b); } while (0)

enum { TU_KERNEL, TU_ENV, TU_NORING, TU_NMODES };
static const char *tu_mode_name = "main";
static int tu_mode = -1;

/* 1 if fd is an emulated ring (an eventfd), 0 if a kernel ring, -1 neither. */
static inline int tu_ring_is_emulated(int fd)
{
	char path[64], link[128];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, sizeof link - 1);
	if (n < 0)
		return -1;
	link[n] = 0;
	if (strstr(link, "[eventfd]"))
		return 1;
	if (strstr(link, "[io_uring]"))
		return 0;
	return -1;
}

static inline void tu_uring_check_mode(const struct io_uring *ring)
{
	int e = tu_ring_is_emulated(ring->ring_fd);
	CHECK_EQ(e, tu_mode != TU_KERNEL);
}

/* The io_uring_setup this program calls must come from the drop-in, not the system's liburing. */
static inline void tu_uring_check_lib(void)
{
	Dl_info info;
	if (!dladdr((void *)io_uring_setup, &info) || !info.dli_fname)
		FAIL("dladdr(io_uring_setup) failed");
	if (!strstr(info.dli_fname, "/uring/liburing.so.2"))
		FAIL("io_uring_setup comes from %s, not the drop-in", info.dli_fname);
}

static inline int tu_kernel_has_uring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	long fd = syscall(__NR_io_uring_setup, 2, &p);
	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
}

static inline int tu_uring_main(void (*body)(void))
{
	static const char *names[] = { "kernel", "URING_EMULATE=1", "noring" };
	int ran = 0;
	tu_uring_check_lib();
	for (int m = 0; m < TU_NMODES; m++) {
		if (m == TU_KERNEL && !tu_kernel_has_uring()) {
			printf("mode kernel: skipped (the kernel's io_uring is not available here)\n");
			continue;
		}
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			tu_mode = m;
			tu_mode_name = names[m];
			if (m == TU_ENV)
				setenv("URING_EMULATE", "1", 1);
			else
				unsetenv("URING_EMULATE");
			if (m == TU_NORING && noring_block(EPERM) < 0)
				FAIL("cannot install the seccomp filter");
			body();
			exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) < 0)
			return 1;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "mode %s failed (status 0x%x)\n", names[m], st);
			return 1;
		}
		printf("mode %s: ok\n", names[m]);
		ran++;
	}
	return ran ? 0 : 77;
}

/* Scheduling helpers for steps whose outcome must not depend on how the machine's other load
 * or the emulation's threads happen to be scheduled. -errno when the system refuses (nothing
 * changed then: the step still runs, without the guarantee, and the test counts a SKIP-PART). */
static cpu_set_t tu_sched_mask;            /* this process's CPUs before the step */

/* Every thread of this process: pinned to set (pin) or given policy at priority prio. */
static inline int tu_all_threads(const cpu_set_t *pin, int policy, int prio)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	struct sched_param sp = { .sched_priority = prio };
	int err = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		pid_t tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		if ((pin ? sched_setaffinity(tid, sizeof *pin, pin) : sched_setscheduler(tid, policy, &sp)) < 0 &&
		    errno != ESRCH && !err)
			err = -errno;
	}
	closedir(d);
	return err;
}

static inline int tu_sched_begin(int cpu, int all_fifo)
{
	cpu_set_t one;
	struct sched_param sp = { .sched_priority = 1 };
	int e;
	if (sched_getaffinity(0, sizeof tu_sched_mask, &tu_sched_mask) < 0)
		return -errno;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (all_fifo)
		e = tu_all_threads(NULL, SCHED_FIFO, 1);
	else
		e = -pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (!e)
		e = tu_all_threads(&one, 0, 0);
	if (e) {
		tu_all_threads(NULL, SCHED_OTHER, 0);
		tu_all_threads(&tu_sched_mask, 0, 0);
	}
	return e;
}

/* Hold off every other thread of this process (an emulated ring's reactor, its workers) while
 * the calling thread runs: all of them pinned to this thread's CPU, this one SCHED_FIFO, so none
 * runs until this thread blocks or calls tu_sched_end. A step that must not depend on the
 * reactor winning a race (a look at the CQ right after the write that wakes a multishot) runs
 * in between, and a bug that a quick reactor would hide fails every time. */
static inline int tu_solo_begin(void)
{
	int cpu = sched_getcpu();
	return cpu < 0 ? -errno : tu_sched_begin(cpu, 0);
}

/* Every thread of this process on CPU cpu and SCHED_FIFO (threads started meanwhile inherit
 * both), until tu_sched_end: CPU-bound load beside the test cannot delay them, so two
 * processes so set on two CPUs run what they post in one burst at the same moment. */
static inline int tu_rt_begin(int cpu)
{
	return tu_sched_begin(cpu, 1);
}

/* Back to SCHED_OTHER, every thread, on the CPUs the caller had before (a thread pinned
 * elsewhere before, an SQ_AFF poller, is not put back: use these where none is). */
static inline void tu_sched_end(void)
{
	CHECK_EQ(tu_all_threads(NULL, SCHED_OTHER, 0), 0);
	CHECK_EQ(tu_all_threads(&tu_sched_mask, 0, 0), 0);
}

/* Submit what is queued and reap exactly n CQEs into out (order of arrival). */
static inline void tu_reap(struct io_uring *ring, struct io_uring_cqe *out, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		int r = io_uring_wait_cqe(ring, &cqe);
		if (r < 0)
			FAIL("wait_cqe %u/%u: %s", i, n, strerror(-r));
		out[i] = *cqe;
		io_uring_cqe_seen(ring, cqe);
	}
}

/* No CQE within 50 ms. */
static inline void tu_none(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { 0, 50000000 };
	int r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (r == 0)
		FAIL("unexpected CQE user_data %llu res %d flags %x", (unsigned long long)cqe->user_data,
		     cqe->res, cqe->flags);
	CHECK_EQ(r, -ETIME);
}

/* The next CQE into out, within 5 s (a wait that never ends is a failure, not a hang). */
static inline void tu_next(struct io_uring *ring, struct io_uring_cqe *out)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { 5, 0 };
	int r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (r < 0)
		FAIL("no CQE within 5 s: %s", strerror(-r));
	*out = *cqe;
	io_uring_cqe_seen(ring, cqe);
}

/* The next CQE within secs seconds, for waits on another process (fork tests): a loaded
 * machine is slow, a lost CQE fails at line instead of hanging. */
static inline struct io_uring_cqe tu_wait_at(struct io_uring *ring, int secs, int line)
{
	struct io_uring_cqe *cqe, c;
	struct __kernel_timespec ts = { secs, 0 };
	int r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (r < 0)
		FAIL("no CQE within %d s (wait at line %d): %s", secs, line, strerror(-r));
	c = *cqe;
	io_uring_cqe_seen(ring, cqe);
	return c;
}

/* The forked child pid ended with exit status 0. */
static inline void tu_child_ok(pid_t pid)
{
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A process-shared barrier of n, in memory the caller maps MAP_SHARED; and its wait. */
static inline void tu_pbarrier_init(pthread_barrier_t *b, unsigned n)
{
	pthread_barrierattr_t ba;
	pthread_barrierattr_init(&ba);
	pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
	CHECK_EQ(pthread_barrier_init(b, &ba, n), 0);
}

static inline void tu_pbarrier(pthread_barrier_t *b)
{
	int e = pthread_barrier_wait(b);
	CHECK(e == 0 || e == PTHREAD_BARRIER_SERIAL_THREAD);
}

/* The CQE with user_data ud among n. */
static inline const struct io_uring_cqe *tu_find(const struct io_uring_cqe *c, unsigned n, uint64_t ud)
{
	for (unsigned i = 0; i < n; i++)
		if (c[i].user_data == ud)
			return &c[i];
	FAIL("no CQE with user_data %llu", (unsigned long long)ud);
	return NULL;
}

/* A TCP listener on 127.0.0.1, an ephemeral port (its address into *a), O_NONBLOCK as asked. */
static inline int tu_listener(int nonblock, struct sockaddr_in *a)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	CHECK(l >= 0);
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof *a;
	CHECK_EQ(bind(l, (struct sockaddr *)a, sizeof *a), 0);
	CHECK_EQ(getsockname(l, (struct sockaddr *)a, &al), 0);
	CHECK_EQ(listen(l, 16), 0);
	return l;
}

/* A client connected to a (the connection waits in the listener's backlog). */
static inline int tu_connect(const struct sockaddr_in *a)
{
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(c >= 0);
	CHECK_EQ(connect(c, (const struct sockaddr *)a, sizeof *a), 0);
	return c;
}

/* The next SQE (there must be one). */
static inline struct io_uring_sqe *tu_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s);
	return s;
}

/* A ring of 2 SQEs and a 2-entry CQ (IORING_SETUP_CQSIZE): two CQEs fill it. */
static inline void tu_small_cq_ring(struct io_uring *ring)
{
	struct io_uring_params par;
	memset(&par, 0, sizeof par);
	par.flags = IORING_SETUP_CQSIZE;
	par.cq_entries = 2;
	CHECK_EQ(io_uring_queue_init_params(2, ring, &par), 0);
}

/* Submit n NOPs (user_data ud): they fill a CQ of n entries. */
static inline void tu_fill_cq(struct io_uring *ring, unsigned n, uint64_t ud)
{
	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *s = io_uring_get_sqe(ring);
		CHECK(s);
		io_uring_prep_nop(s);
		s->user_data = ud;
	}
	CHECK_EQ(io_uring_submit(ring), n);
}

/* Wait (5 s at most) until the overflow flag shows: a CQE went to the overflow list. */
static inline void tu_wait_overflow(struct io_uring *ring)
{
	for (int i = 0; !(IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_CQ_OVERFLOW); i++) {
		if (i == 5000)
			FAIL("no CQE overflowed in 5 s");
		usleep(1000);
	}
}

#endif
