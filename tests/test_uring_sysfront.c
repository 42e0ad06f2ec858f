/* SPDX-License-Identifier: MIT */
/* Description: the system-call front (urfs-uring --syscalls): a program that makes the
 * io_uring system calls itself and maps the ring itself (no liburing function) runs on the
 * emulated ring, with the preload (LD_PRELOAD of uring/liburing.so.2 and
 * uring/liburfs_syscalls.so), where io_uring is blocked (noring) and where URING_EMULATE=1
 * forces it; with the kernel's io_uring working and emulation not forced, nothing traps (no
 * seccomp filter) and the same steps run on the kernel's ring, which answers each as asserted.
 * Steps: setup (the ring fd in 384..511), mmap of the SQ ring, CQ ring and SQEs, a NOP and a
 * READ, registered files, errno kept, the kernel's errors (a closed fd, a file that is no ring,
 * a bad pointer, a bad mmap offset or length), a wait ended by a timeout (-ETIME) and by a
 * signal (-EINTR); the hazards: every signal blocked with pthread_sigmask (SIGSYS stays
 * deliverable), the program's own SIGSYS handler (read back, called for raise(), never for a
 * trap), a thread started after the filter, one started before it, one on a 16 KiB
 * sigaltstack, fork, an execve with an empty environment (the child keeps the preload and
 * uses a ring), close of the ring (then -EBADF), mmap and close of the program's own file at a
 * number in the range; the range full (a virtual ring number: mapped, entered, registered,
 * closed; POLLNVAL and EBADF for the rest; 64, then -EMFILE; an anonymous mmap naming such a
 * number maps zero pages); a raw rt_sigprocmask that blocks SIGSYS ends the process at its next
 * trap (the documented limit). */
#include "test_uring.h"
#include "parts.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>

static int emulated;           /* the mode expects the front (NORING, ENV) */
static int want_virtual;       /* ring_open: the front's range is full (full_range) */
#define VFD_LO 0x7fffffc0      /* the front's virtual numbers: no descriptor can have them */
static const char *self_exe;

static int sys_setup(unsigned n, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, n, p);
}

static int sys_enter(int fd, unsigned sub, unsigned min, unsigned fl, const void *arg, size_t sz)
{
	return (int)syscall(__NR_io_uring_enter, fd, sub, min, fl, arg, sz);
}

static int sys_register(int fd, unsigned op, const void *arg, unsigned nr)
{
	return (int)syscall(__NR_io_uring_register, fd, op, arg, nr);
}

struct rawring {
	int fd;
	struct io_uring_params p;
	char *sq, *cq;
	struct io_uring_sqe *sqes;
	size_t sq_sz, cq_sz, sqes_sz;
};

static void ring_open(struct rawring *r, unsigned entries)
{
	memset(r, 0, sizeof *r);
	r->fd = sys_setup(entries, &r->p);
	if (r->fd < 0)
		FAIL("io_uring_setup: %s", strerror(errno));
	if (want_virtual) {
		CHECK(r->fd >= VFD_LO);
	} else {
		CHECK_EQ(tu_ring_is_emulated(r->fd), emulated);
		if (emulated)
			CHECK(r->fd >= 384 && r->fd < 512);
	}
	r->sq_sz = r->p.sq_off.array + r->p.sq_entries * sizeof(unsigned);
	r->cq_sz = r->p.cq_off.cqes + r->p.cq_entries * sizeof(struct io_uring_cqe);
	r->sqes_sz = r->p.sq_entries * sizeof(struct io_uring_sqe);
	r->sq = mmap(NULL, r->sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->cq = mmap(NULL, r->cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, r->sqes_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	CHECK(r->sq != MAP_FAILED && r->cq != MAP_FAILED && r->sqes != MAP_FAILED);
	CHECK_EQ(*(unsigned *)(r->sq + r->p.sq_off.ring_entries), r->p.sq_entries);
	CHECK_EQ(*(unsigned *)(r->cq + r->p.cq_off.ring_entries), r->p.cq_entries);
}

static void ring_unmap(struct rawring *r)
{
	CHECK_EQ(munmap(r->sq, r->sq_sz), 0);
	CHECK_EQ(munmap(r->cq, r->cq_sz), 0);
	CHECK_EQ(munmap(r->sqes, r->sqes_sz), 0);
}

/* Queues one SQE (filled by the caller through the returned pointer). */
static struct io_uring_sqe *ring_sqe(struct rawring *r)
{
	unsigned *tail = (unsigned *)(r->sq + r->p.sq_off.tail);
	unsigned mask = *(unsigned *)(r->sq + r->p.sq_off.ring_mask);
	unsigned t = *tail, i = t & mask;
	struct io_uring_sqe *s = &r->sqes[i];
	memset(s, 0, sizeof *s);
	((unsigned *)(r->sq + r->p.sq_off.array))[i] = i;
	__atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
	return s;
}

/* The next CQE (waits with io_uring_enter when none is there): its res; its user_data in *ud. */
static int ring_reap(struct rawring *r, uint64_t *ud)
{
	unsigned *head = (unsigned *)(r->cq + r->p.cq_off.head);
	unsigned *tail = (unsigned *)(r->cq + r->p.cq_off.tail);
	unsigned mask = *(unsigned *)(r->cq + r->p.cq_off.ring_mask);
	while (__atomic_load_n(tail, __ATOMIC_ACQUIRE) == *head)
		if (sys_enter(r->fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, _NSIG / 8) < 0 && errno != EINTR)
			FAIL("io_uring_enter (wait): %s", strerror(errno));
	struct io_uring_cqe *c = (struct io_uring_cqe *)(r->cq + r->p.cq_off.cqes) + (*head & mask);
	int res = c->res;
	if (ud)
		*ud = c->user_data;
	__atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);
	return res;
}

static void ring_nop(struct rawring *r, uint64_t ud)
{
	struct io_uring_sqe *s = ring_sqe(r);
	s->opcode = IORING_OP_NOP;
	s->user_data = ud;
	CHECK_EQ(sys_enter(r->fd, 1, 0, 0, NULL, _NSIG / 8), 1);
	uint64_t got = 0;
	CHECK_EQ(ring_reap(r, &got), 0);
	CHECK_EQ(got, ud);
}

/* A READ of 4 KiB at off from fd (flags: IOSQE_FIXED_FILE with fd a table index). */
static void ring_read_check(struct rawring *r, int fd, unsigned flags, const char *want)
{
	static char buf[4096];
	memset(buf, 0, sizeof buf);
	struct io_uring_sqe *s = ring_sqe(r);
	s->opcode = IORING_OP_READ;
	s->fd = fd;
	s->flags = (uint8_t)flags;
	s->addr = (uintptr_t)buf;
	s->len = sizeof buf;
	s->off = 4096;
	s->user_data = 7;
	CHECK_EQ(sys_enter(r->fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, _NSIG / 8), 1);
	CHECK_EQ(ring_reap(r, NULL), 4096);
	CHECK(memcmp(buf, want, 4096) == 0);
}

#if defined(__x86_64__)
/* io_uring_enter(fd, to_submit, 0, 0, NULL, 8) as fio makes it: `mov $426,%eax; syscall`
 * inline, at an 8-byte boundary, with xmm0-15 loaded from in[] before and stored to out[]
 * after, and the argument registers read back. *site: where the mov is. */
static long inline_enter(int fd, unsigned sub, const uint64_t in[32], uint64_t out[32],
			 long regs[6], unsigned char **site)
{
	long ret;
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = 8;
	long di = fd, si = sub, dx = 0;
	unsigned char *at;
	__asm__ volatile(
		"movdqu 0(%[in]), %%xmm0\n movdqu 16(%[in]), %%xmm1\n movdqu 32(%[in]), %%xmm2\n"
		"movdqu 48(%[in]), %%xmm3\n movdqu 64(%[in]), %%xmm4\n movdqu 80(%[in]), %%xmm5\n"
		"movdqu 96(%[in]), %%xmm6\n movdqu 112(%[in]), %%xmm7\n movdqu 128(%[in]), %%xmm8\n"
		"movdqu 144(%[in]), %%xmm9\n movdqu 160(%[in]), %%xmm10\n movdqu 176(%[in]), %%xmm11\n"
		"movdqu 192(%[in]), %%xmm12\n movdqu 208(%[in]), %%xmm13\n movdqu 224(%[in]), %%xmm14\n"
		"movdqu 240(%[in]), %%xmm15\n"
		"lea 1f(%%rip), %[at]\n"
		".p2align 3\n"
		"1: mov $426, %%eax\n"
		"syscall\n"
		"movdqu %%xmm0, 0(%[out])\n movdqu %%xmm1, 16(%[out])\n movdqu %%xmm2, 32(%[out])\n"
		"movdqu %%xmm3, 48(%[out])\n movdqu %%xmm4, 64(%[out])\n movdqu %%xmm5, 80(%[out])\n"
		"movdqu %%xmm6, 96(%[out])\n movdqu %%xmm7, 112(%[out])\n movdqu %%xmm8, 128(%[out])\n"
		"movdqu %%xmm9, 144(%[out])\n movdqu %%xmm10, 160(%[out])\n movdqu %%xmm11, 176(%[out])\n"
		"movdqu %%xmm12, 192(%[out])\n movdqu %%xmm13, 208(%[out])\n movdqu %%xmm14, 224(%[out])\n"
		"movdqu %%xmm15, 240(%[out])\n"
		: "=a"(ret), "+D"(di), "+S"(si), "+d"(dx), "+r"(r10), "+r"(r8), "+r"(r9), [at] "=&r"(at)
		: [in] "r"(in), [out] "r"(out)
		: "rcx", "r11", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
	regs[0] = di, regs[1] = si, regs[2] = dx, regs[3] = r10, regs[4] = r8, regs[5] = r9;
	*site = at;
	return ret;
}

/* An inline site such as fio's: it works as the system call (result, registers, vector
 * state, errno); emulated, after its first trap it is a jump (patched) and still so. */
static void inline_site(struct rawring *r)
{
	uint64_t in[32], out[32];
	for (int i = 0; i < 32; i++)
		in[i] = 0x0123456789abcdefull * (uint64_t)(i + 1);
	for (int round = 0; round < 3; round++) {
		struct io_uring_sqe *s = ring_sqe(r);
		s->opcode = IORING_OP_NOP;
		s->user_data = 500 + (uint64_t)round;
		long regs[6];
		unsigned char *site;
		memset(out, 0, sizeof out);
		errno = EDOM;
		CHECK_EQ(inline_enter(r->fd, 1, in, out, regs, &site), 1);
		CHECK_EQ(errno, EDOM);
		CHECK(memcmp(in, out, sizeof in) == 0);
		CHECK_EQ(regs[0], r->fd);
		CHECK_EQ(regs[1], 1);
		CHECK_EQ(regs[2] | regs[3] | regs[4], 0);
		CHECK_EQ(regs[5], 8);
		uint64_t ud = 0;
		CHECK_EQ(ring_reap(r, &ud), 0);
		CHECK_EQ(ud, 500 + (uint64_t)round);
		if (emulated && !getenv("URING_SYSCALLS_PATCH"))
			CHECK_EQ(site[0], 0xe9);           /* patched at its first trap */
		else
			CHECK_EQ(site[0], 0xb8);
	}
}
#endif

#if defined(__x86_64__)
/* A thread with an alternate signal stack of 16 KiB (the handler runs there, SA_ONSTACK):
 * trapped setup, register and enter (inline sites of their own) work. */
static void *altstack_ring(void *arg)
{
	(void)arg;
	stack_t ss = { .ss_sp = malloc(16384), .ss_size = 16384 };
	CHECK(ss.ss_sp);
	memset(ss.ss_sp, 0xa5, ss.ss_size);
	CHECK_EQ(sigaltstack(&ss, NULL), 0);
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	long fd, ret;
	__asm__ volatile("syscall" : "=a"(fd) : "a"((long)__NR_io_uring_setup), "D"(4l), "S"(&p)
			 : "rcx", "r11", "memory");
	CHECK(fd >= 0);
	int files[1] = { -1 };
	register long r10 __asm__("r10") = 1;
	__asm__ volatile("syscall" : "=a"(ret) : "a"((long)__NR_io_uring_register), "D"(fd),
			 "S"((long)IORING_REGISTER_FILES), "d"(files), "r"(r10) : "rcx", "r11", "memory");
	CHECK_EQ(ret, 0);
	register long r10b __asm__("r10") = IORING_ENTER_GETEVENTS;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = 8;
	__asm__ volatile("syscall" : "=a"(ret) : "a"((long)__NR_io_uring_enter), "D"(fd), "S"(0l), "d"(0l),
			 "r"(r10b), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	CHECK_EQ(ret, 0);
	CHECK_EQ(close((int)fd), 0);
	if (emulated) {      /* the handler ran there (SA_ONSTACK): its top was written */
		const unsigned char *top = (const unsigned char *)ss.ss_sp + ss.ss_size - 1024;
		int used = 0;
		for (int i = 0; i < 1024; i++)
			used |= top[i] != 0xa5;
		CHECK(used);
	}
	ss.ss_flags = SS_DISABLE;
	void *mem = ss.ss_sp;
	CHECK_EQ(sigaltstack(&ss, NULL), 0);
	free(mem);
	return NULL;
}
#endif

static volatile sig_atomic_t prog_sigsys, alarms;
static void on_prog_sigsys(int sig) { (void)sig; prog_sigsys++; }
static void on_alarm(int sig) { (void)sig; alarms++; }

static void *thread_ring(void *arg)
{
	(void)arg;
	struct rawring r;
	ring_open(&r, 4);
	ring_nop(&r, 99);
	ring_unmap(&r);
	CHECK_EQ(close(r.fd), 0);
	return NULL;
}

/* The front's filter is in this process: /proc/self/status says Seccomp 2 (filter mode). */
static int seccomp_mode(void)
{
	char line[256];
	int v = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "Seccomp:", 8))
			v = atoi(line + 8);
	if (f)
		fclose(f);
	return v;
}

static int early_ring(void)
{
	thread_ring(NULL);
	return 0;
}

/* The program holds every number of the front's range (liburing's poll-many and
 * poll-mshot-update, linked with liburing.a, open 10,000 pipes before their ring): a raw setup
 * still makes a ring, named by a virtual number; its mmap, enter, register and close are served,
 * anything else on it is -EBADF (poll: POLLNVAL); 64 of them, then -EMFILE. An anonymous mmap
 * passing such a number, or one of the range, as its (ignored) fd maps. */
static void full_range(void)
{
	int held[128], nheld = 0;
	int base = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(base >= 0);
	for (int n = 384; n < 512; n++)
		if (fcntl(n, F_GETFD) < 0) {
			CHECK_EQ(dup2(base, n), n);
			held[nheld++] = n;
		}
	struct rawring v;
	want_virtual = 1;
	ring_open(&v, 4);
	want_virtual = 0;
	ring_nop(&v, 47);
	struct io_uring_probe *probe = calloc(1, sizeof(*probe) + 256 * sizeof(struct io_uring_probe_op));
	CHECK(probe != NULL);
	CHECK_EQ(sys_register(v.fd, IORING_REGISTER_PROBE, probe, 256), 0);
	CHECK(probe->ops_len > IORING_OP_NOP);
	free(probe);
	struct pollfd pf = { .fd = v.fd, .events = POLLIN };
	CHECK_EQ(poll(&pf, 1, 0), 1);
	CHECK_EQ(pf.revents, POLLNVAL);
	CHECK_EQ(fcntl(v.fd, F_GETFD), -1);
	CHECK_EQ(errno, EBADF);
	int anon_fds[] = { v.fd, 384, VFD_LO + 63 };
	for (int i = 0; i < 3; i++) {
		char *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, anon_fds[i], 0);
		CHECK(a != MAP_FAILED);
		for (int k = 0; k < 4096; k++)
			CHECK_EQ(a[k], 0);                 /* new zero pages, not the ring's */
		a[0] = 1;
		CHECK_EQ(munmap(a, 4096), 0);
	}
	int more[64], nmore = 0;
	struct io_uring_params p;
	for (;;) {
		memset(&p, 0, sizeof p);
		int fd = sys_setup(2, &p);
		if (fd < 0)
			break;
		CHECK(fd >= VFD_LO && nmore < 63);
		more[nmore++] = fd;
	}
	CHECK_EQ(errno, EMFILE);
	CHECK_EQ(nmore, 63);
	CHECK_EQ(close(more[5]), 0);
	memset(&p, 0, sizeof p);
	CHECK_EQ(sys_setup(2, &p), more[5]);
	for (int i = 0; i < nmore; i++)
		CHECK_EQ(close(more[i]), 0);
	ring_nop(&v, 48);
	ring_unmap(&v);
	CHECK_EQ(close(v.fd), 0);
	CHECK_EQ(sys_enter(v.fd, 0, 0, 0, NULL, 0), -1);
	CHECK_EQ(errno, EBADF);
	CHECK_EQ(close(v.fd), -1);
	CHECK_EQ(errno, EBADF);
	for (int i = 0; i < nheld; i++)
		CHECK_EQ(close(held[i]), 0);
	close(base);
}

static void body(void)
{
	if (!emulated)
		CHECK_EQ(seccomp_mode(), 0);       /* the kernel's ring works: nothing installed */
	else
		CHECK_EQ(seccomp_mode(), 2);

	char page[4096], other[4096];
	for (int i = 0; i < 4096; i++) {
		page[i] = (char)(i * 7 + 1);
		other[i] = (char)(i * 13 + 5);
	}
	int file = open("data", O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(file >= 0);
	CHECK_EQ(pwrite(file, other, 4096, 0), 4096);
	CHECK_EQ(pwrite(file, page, 4096, 4096), 4096);

	struct rawring r;
	ring_open(&r, 8);
	CHECK(r.p.features & IORING_FEAT_SINGLE_MMAP);
	errno = EDOM;
	ring_nop(&r, 42);
	CHECK_EQ(errno, EDOM);                     /* a served call leaves errno alone */
	ring_read_check(&r, file, 0, page);
#if defined(__x86_64__)
	inline_site(&r);
#endif

	/* registered files */
	CHECK_EQ(sys_register(r.fd, IORING_REGISTER_FILES, &file, 1), 0);
	ring_read_check(&r, 0, IOSQE_FIXED_FILE, page);
	CHECK_EQ(sys_register(r.fd, IORING_UNREGISTER_FILES, NULL, 0), 0);

	/* the kernel's errors */
	CHECK_EQ(sys_enter(450, 0, 0, 0, NULL, 0), -1);
	CHECK_EQ(errno, EBADF);
	CHECK_EQ(sys_enter(file, 0, 0, 0, NULL, 0), -1);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(sys_register(file, IORING_REGISTER_FILES, &file, 1), -1);
	CHECK_EQ(errno, EOPNOTSUPP);
	CHECK_EQ(sys_setup(4, (struct io_uring_params *)8), -1);
	CHECK_EQ(errno, EFAULT);
	CHECK_EQ(sys_register(r.fd, IORING_REGISTER_FILES, (void *)8, 1), -1);
	CHECK_EQ(errno, EFAULT);
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, r.fd, 0x40000000) == MAP_FAILED);
	CHECK(errno == EINVAL || errno == ENOMEM);    /* the kernel 6.18: ENOMEM, before: EINVAL */
	CHECK(mmap(NULL, 0, PROT_READ, MAP_SHARED, r.fd, IORING_OFF_SQES) == MAP_FAILED);
	CHECK_EQ(errno, EINVAL);
	if (emulated) {      /* longer than the SQEs: 6.18 maps it (past them unbacked), before EINVAL */
		CHECK(mmap(NULL, 1 << 24, PROT_READ, MAP_SHARED, r.fd, IORING_OFF_SQES) == MAP_FAILED);
		CHECK_EQ(errno, EINVAL);
	}

	/* a wait ended by its timeout, then by a signal */
	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 20 * 1000 * 1000 };
	struct io_uring_getevents_arg ga = { .ts = (uintptr_t)&ts };
	uint64_t t0 = (uint64_t)time(NULL);
	CHECK_EQ(sys_enter(r.fd, 0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ga, sizeof ga), -1);
	CHECK_EQ(errno, ETIME);
	CHECK((uint64_t)time(NULL) - t0 < 5);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;               /* no SA_RESTART: the wait ends with EINTR */
	CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);
	struct itimerval it = { .it_value = { .tv_usec = 30000 } };
	CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
	CHECK_EQ(sys_enter(r.fd, 0, 1, IORING_ENTER_GETEVENTS, NULL, _NSIG / 8), -1);
	CHECK_EQ(errno, EINTR);
	CHECK_EQ(alarms, 1);

	/* every signal blocked: SIGSYS stays deliverable, the ring works */
	sigset_t all, now;
	sigfillset(&all);
	CHECK_EQ(pthread_sigmask(SIG_BLOCK, &all, NULL), 0);
	ring_nop(&r, 43);
	CHECK_EQ(sigprocmask(SIG_SETMASK, &all, NULL), 0);
	ring_nop(&r, 44);
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, thread_ring, NULL), 0);   /* starts with all blocked */
	CHECK_EQ(pthread_join(th, NULL), 0);
#if defined(__x86_64__)
	CHECK_EQ(pthread_create(&th, NULL, altstack_ring, NULL), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
#endif
	/* a thread started before the filter (tests/lib/early_thread.c's constructor) has it */
	int (*early_run)(int (*)(void)) = (int (*)(int (*)(void)))dlsym(RTLD_DEFAULT, "early_thread_run");
	int (*early_start)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "early_thread_filters_at_start");
	int (*early_now)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "early_thread_filters_now");
	CHECK(early_run && early_start && early_now);
	CHECK(early_start() >= 0);               /* it predates the front's filter, */
	CHECK_EQ(early_now() > early_start(), emulated);    /* which reached it (TSYNC) */
	CHECK_EQ(early_run(early_ring), 0);
	CHECK_EQ(pthread_sigmask(SIG_SETMASK, NULL, &now), 0);
	CHECK_EQ(sigismember(&now, SIGSYS), !emulated);
	sigemptyset(&all);
	CHECK_EQ(pthread_sigmask(SIG_SETMASK, &all, NULL), 0);

	/* the program's own SIGSYS handler: its, read back, called for raise(), not for a trap */
	struct sigaction mine, back;
	memset(&mine, 0, sizeof mine);
	mine.sa_handler = on_prog_sigsys;
	CHECK_EQ(sigaction(SIGSYS, &mine, NULL), 0);
	CHECK_EQ(sigaction(SIGSYS, NULL, &back), 0);
	CHECK(back.sa_handler == on_prog_sigsys);
	CHECK_EQ(raise(SIGSYS), 0);
	CHECK_EQ(prog_sigsys, 1);
	ring_nop(&r, 45);
	CHECK_EQ(prog_sigsys, 1);
	CHECK(signal(SIGSYS, SIG_IGN) == on_prog_sigsys);
	CHECK_EQ(raise(SIGSYS), 0);
	CHECK_EQ(prog_sigsys, 1);
	ring_nop(&r, 46);

	/* fork: the child makes a ring of its own */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		thread_ring(NULL);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* execve with an empty environment: the child still has the front */
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char *argv[] = { (char *)self_exe, (char *)"exec-child", emulated ? (char *)"1" : (char *)"0", NULL };
		/* an environment without LD_PRELOAD (an ASan build's child keeps ASAN_OPTIONS) */
		static char asan[1100];
		const char *ao = getenv("ASAN_OPTIONS");
		snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s", ao ? ao : "");
		char *envp[] = { ao ? asan : NULL, NULL };
		execve(self_exe, argv, envp);
		_exit(127);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("the exec'd child: status 0x%x", st);

	/* the program's own file at a number in the range: mapped and closed as any file */
	CHECK_EQ(dup2(file, 400), 400);
	char *m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, 400, 0);
	CHECK(m != MAP_FAILED);
	CHECK(memcmp(m + 4096, page, 4096) == 0);
	CHECK_EQ(munmap(m, 8192), 0);
	CHECK_EQ(close(400), 0);
	CHECK_EQ(close(400), -1);
	CHECK_EQ(errno, EBADF);

	if (emulated)
		full_range();

	/* close of the ring: the fd is gone, the mappings stay readable */
	CHECK_EQ(close(r.fd), 0);
	CHECK_EQ(sys_enter(r.fd, 0, 0, 0, NULL, 0), -1);
	CHECK_EQ(errno, EBADF);
	CHECK_EQ(*(unsigned *)(r.sq + r.p.sq_off.ring_entries), r.p.sq_entries);
	ring_unmap(&r);
	close(file);

	/* the limit: a raw rt_sigprocmask blocking SIGSYS, then a trap, ends the process */
#if defined(__x86_64__)
	if (emulated) {
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			uint64_t sys = 1ull << (SIGSYS - 1);
			syscall(SYS_rt_sigprocmask, SIG_BLOCK, &sys, NULL, 8);
			struct io_uring_params p;
			memset(&p, 0, sizeof p);
			long ret;           /* an inline system call traps (libc's syscall() would not) */
			__asm__ volatile("syscall" : "=a"(ret) : "a"((long)__NR_io_uring_setup), "D"(4l), "S"(&p)
					 : "rcx", "r11", "memory");
			(void)ret;
			_exit(0);
		}
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
	}
#endif
}

/* LD_PRELOAD of both libraries, found beside this test (obj/t/ -> ../../uring). */
static void preload_env(void)
{
	char dir[4096], v[12400];
	snprintf(dir, sizeof dir, "%s", self_exe);
	char *s = strrchr(dir, '/');
	CHECK(s);
	*s = 0;
	/* early_thread last: preloads start in the opposite order, so its thread predates the filter */
	snprintf(v, sizeof v, "%s/../../uring/liburing.so.2:%s/../../uring/liburfs_syscalls.so:%s/libearly_thread.so",
		 dir, dir, dir);
	CHECK_EQ(setenv("LD_PRELOAD", v, 1), 0);
	/* an ASan build: its runtime is then not first in the list, which is fine here */
	const char *a = getenv("ASAN_OPTIONS");
	char opts[1024];
	snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", a ? a : "", a && a[0] ? ":" : "");
	CHECK_EQ(setenv("ASAN_OPTIONS", opts, 1), 0);
}

int main(int argc, char **argv)
{
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return 1;
	exe[n] = 0;
	self_exe = exe;
	if (argc == 3 && !strcmp(argv[1], "exec-child")) {
		tu_mode_name = "exec'd child";
		emulated = atoi(argv[2]);
		if (emulated)   /* given back by the preload's execve */
			CHECK(getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "liburfs_syscalls.so"));
		thread_ring(NULL);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "mode")) {
		tu_mode_name = argv[2];
		emulated = strcmp(argv[2], "kernel") != 0;
		Dl_info info;
		void *start = dlsym(RTLD_DEFAULT, "urfs_sysfront_start");
		CHECK(start && dladdr(start, &info) && strstr(info.dli_fname, "/uring/liburing.so.2"));
		body();
		return 0;
	}
	static const char *modes[] = { "kernel", "URING_EMULATE=1", "noring" };
	char why[256];
	int ran = 0;
	for (int m = 0; m < 3; m++) {
		if (m == 0 && !tu_have_io_uring(why, sizeof why)) {
			tu_part_skip("io_uring", "the kernel's ring under the preload", why);
			continue;
		}
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			preload_env();
			if (m == 1)
				setenv("URING_EMULATE", "1", 1);
			else
				unsetenv("URING_EMULATE");
			if (m == 2 && noring_block(EPERM) < 0)
				FAIL("cannot install the seccomp filter");
			execl(exe, exe, "mode", modes[m], (char *)NULL);
			_exit(127);
		}
		int st;
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "mode %s failed (status 0x%x)\n", modes[m], st);
			return 1;
		}
		if (m == 0)
			tu_part_ran("io_uring", "the kernel's ring under the preload");
		printf("mode %s: ok\n", modes[m]);
		ran++;
	}
	return ran ? 0 : 77;
}
