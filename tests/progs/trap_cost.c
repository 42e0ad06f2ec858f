/* SPDX-License-Identifier: MIT */
/* trap_cost - what one trapped io_uring_enter costs under the system-call front
 * (scripts/fio-syscalls.sh --bench runs it as `noring urfs-uring --syscalls
 * trap_cost`). It makes a ring with the raw io_uring_setup system call and maps
 * its three regions itself (IORING_OFF_SQ_RING, CQ_RING, SQES), as fio's engine
 * does, and checks them with one NOP through the mapped rings; then it times N
 * io_uring_enter(fd, 0, 0, 0) calls (nothing to submit) made as fio makes them,
 * an inline `mov $426,%eax; syscall` (under the front a seccomp trap and a
 * SIGSYS each with URING_SYSCALLS_PATCH=0; else the site is patched into a call
 * at its first trap), N through libc's syscall() (served by the preload's
 * wrapper), and N calls of the io_uring_enter() function of the liburing.so.2
 * in the process (the drop-in's function front), 5 rounds each, and prints the
 * medians per call:
 *   inline io_uring_enter: N ns
 *   syscall() io_uring_enter: N ns
 *   function io_uring_enter: N ns
 *   inline - function: N ns
 * Without a liburing.so.2 loaded, the function line says so. Where the kernel's
 * io_uring works and nothing is emulated, the first line is the kernel's call.
 *
 *   trap_cost [N]        (N calls a round, default 100000)
 *
 * Must never: print a figure for calls that failed (each call's result is
 * checked), or time a ring whose mapped regions did not carry a NOP's completion.
 * Exit status 0, or 1 after "trap_cost: what: strerror".
 */
#include <dlfcn.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 5

static int fail(const char *what, int err)
{
	fprintf(stderr, "trap_cost: %s: %s\n", what, strerror(err));
	return 1;
}

/* io_uring_enter as fio's engine makes it on x86-64: the instruction inline,
 * `mov $426,%eax; syscall` (one site: the front traps it, and unless
 * URING_SYSCALLS_PATCH=0 turns the site into a call at its first trap);
 * elsewhere libc's syscall(). -errno on failure. */
static long sys_enter(int fd, unsigned sub, unsigned min, unsigned flags)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = flags;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = 0;
	__asm__ volatile(".p2align 3\n"
			 "mov $426, %%eax\n"
			 "syscall\n"
			 : "=a"(r)
			 : "D"((long)fd), "S"((long)sub), "d"((long)min), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
#else
	long r = syscall(__NR_io_uring_enter, fd, sub, min, flags, NULL, 0L);
	return r < 0 ? -errno : r;
#endif
}

/* the same through libc's syscall() (the front's preload serves it with no trap) */
static int libc_enter(unsigned fd, unsigned a, unsigned b, unsigned c, void *d)
{
	long r = syscall(__NR_io_uring_enter, fd, a, b, c, d, 0L);
	return r < 0 ? -errno : (int)r;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

typedef int enter_fn(unsigned, unsigned, unsigned, unsigned, void *);

/* getppid as an enter_fn: a plain system call, for scale */
static int plain_call(unsigned fd, unsigned a, unsigned b, unsigned c, void *d)
{
	(void)fd, (void)a, (void)b, (void)c, (void)d;
	return syscall(SYS_getppid) < 0 ? -errno : 0;
}

/* ns per call of n enters (nothing to submit), through the system call or fn. */
static double per_call(int fd, long n, enter_fn *fn, int *err)
{
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		long r = fn ? fn((unsigned)fd, 0, 0, 0, NULL) : sys_enter(fd, 0, 0, 0);
		if (r < 0) {
			*err = (int)-r;
			return -1;
		}
	}
	return (now_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(int fd, long n, enter_fn *fn, int *err)
{
	double v[ROUNDS];
	for (int i = 0; i < ROUNDS; i++)
		if ((v[i] = per_call(fd, n, fn, err)) < 0)
			return -1;
	qsort(v, ROUNDS, sizeof v[0], cmp);
	return v[ROUNDS / 2];
}

/* One NOP through the rings this program mapped itself: 0 when its CQE came back. */
static int nop_through(int fd, const struct io_uring_params *p, char *sq, char *cq,
		       struct io_uring_sqe *sqes)
{
	_Atomic unsigned *sq_tail = (_Atomic unsigned *)(sq + p->sq_off.tail);
	unsigned *sq_array = (unsigned *)(sq + p->sq_off.array);
	unsigned mask = *(unsigned *)(sq + p->sq_off.ring_mask);
	_Atomic unsigned *cq_head = (_Atomic unsigned *)(cq + p->cq_off.head);
	_Atomic unsigned *cq_tail = (_Atomic unsigned *)(cq + p->cq_off.tail);
	struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p->cq_off.cqes);
	unsigned cmask = *(unsigned *)(cq + p->cq_off.ring_mask);

	unsigned t = *sq_tail;
	memset(&sqes[t & mask], 0, sizeof sqes[0]);
	sqes[t & mask].opcode = IORING_OP_NOP;
	sqes[t & mask].user_data = 0x7261707;
	sq_array[t & mask] = t & mask;
	*sq_tail = t + 1;
	long r = sys_enter(fd, 1, 1, IORING_ENTER_GETEVENTS);
	if (r != 1)
		return r < 0 ? (int)-r : EIO;
	unsigned h = *cq_head;
	if (*cq_tail == h || cqes[h & cmask].user_data != 0x7261707 || cqes[h & cmask].res != 0)
		return EIO;
	*cq_head = h + 1;
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	struct io_uring_params p;
	int err = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: trap_cost [N]\n");
		return 2;
	}
	memset(&p, 0, sizeof p);
	int fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (fd < 0)
		return fail("io_uring_setup", errno);
	size_t sq_sz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_sz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		return fail("mmap IORING_OFF_SQ_RING", errno);
	char *cq = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
	if (cq == MAP_FAILED)
		return fail("mmap IORING_OFF_CQ_RING", errno);
	struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (sqes == MAP_FAILED)
		return fail("mmap IORING_OFF_SQES", errno);
	if ((err = nop_through(fd, &p, sq, cq, sqes)))
		return fail("a NOP through the mapped rings", err);

	double trapped = median_of(fd, n, NULL, &err);
	if (trapped < 0)
		return fail("io_uring_enter (system call)", err);
	printf("inline io_uring_enter: %.0f ns\n", trapped);
	double viasys = median_of(fd, n, libc_enter, &err);
	if (viasys < 0)
		return fail("io_uring_enter (libc's syscall())", err);
	printf("syscall() io_uring_enter: %.0f ns\n", viasys);
	enter_fn *fn = (enter_fn *)dlsym(RTLD_DEFAULT, "io_uring_enter");
	if (!fn) {
		printf("function io_uring_enter: no liburing.so.2 in the process\n");
		return 0;
	}
	double direct = median_of(fd, n, fn, &err);
	if (direct < 0)
		return fail("io_uring_enter (the function)", err);
	printf("function io_uring_enter: %.0f ns\n", direct);
	printf("inline - function: %.0f ns\n", trapped - direct);
	double plain = median_of(fd, n, plain_call, &err);
	if (plain < 0)
		return fail("getppid", err);
	printf("plain system call (getppid): %.0f ns\n", plain);
	return 0;
}
