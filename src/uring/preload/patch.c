/* SPDX-License-Identifier: MIT */
/*
 * patch.c - the system-call front's shortcut for a hot trap site (x86-64):
 * a trap costs a signal's delivery and return, several system calls' worth,
 * and programs such as fio make io_uring_enter with an inline instruction
 * pair `mov $nr,%eax; syscall`. The first time such a site traps, its 5-byte
 * `mov` is replaced by a `jmp` to a stub of its own (allocated within 2 GiB
 * of it), which calls the front as a function and jumps back past the
 * `syscall`: from then on that site costs a call, not a trap.
 *
 * The stub keeps the system call's contract: every register but rax (the
 * result), rcx and r11 is preserved, the vector and x87 state too, the
 * flags, the 128-byte red zone below the stack pointer, and errno. Where the
 * system enables exactly x87+SSE+AVX (XCR0 7) or those and AVX-512 (0xe7,
 * with AVX512BW), and the CPU reports XINUSE, the vector registers, mask
 * registers and MXCSR are saved and restored with plain moves (an xrstor
 * costs about 130 ns on some virtual machines, the moves about 20), x87
 * state in use at entry with fxsave/fxrstor (fio's thread has it: its
 * long double code), x87 state the front's code dirtied from its initial
 * configuration is put back to it, and upper halves that
 * were initial at entry are made so again (vzeroupper: no SSE/AVX transition
 * cost for the program); elsewhere xsave / xrstor of every component the
 * system enables (not patched where AMX is enabled, whose state is 8 KiB).
 * A thread that is between the `mov` and the `syscall` when the site is
 * patched executes the `syscall`, which traps as before.
 *
 * Must never: patch bytes that are not exactly `b8 <nr> 0f 05` in a private
 * read+execute mapping of the process, change them other than with one
 * aligned 8-byte atomic store (another thread may be fetching them; sites
 * whose `mov` straddles an 8-byte word keep trapping), or leave a page
 * writable. URING_SYSCALLS_PATCH=0 turns it off; URING_SYSCALLS_PATCH=xsave
 * keeps the xsave stub everywhere; URING_SYSCALLS_PATCH=avx is a test's: the
 * AVX stub wherever AVX is enabled (with AVX-512 it keeps too little: its
 * test then checks ymm0-15 only). URING_SYSCALLS_CLOBBER=1 is a test's: the
 * front's call then clobbers every vector, mask and x87 register and MXCSR's
 * flags before it returns (tests/test_uring_front_regs.c).
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "patch.h"
#include "../sysfront.h"

#if defined(__x86_64__)

unsigned long front_xsave_size;              /* bytes of the xsave area (asm below) */
__attribute__((aligned(64))) unsigned char front_x87_init[576];  /* xrstor: x87 initial */
static void (*entry)(void);                  /* the stub's entry: see decide() */
static int patch_off = -1;                   /* -1: not decided yet */
static int clobber;                          /* URING_SYSCALLS_CLOBBER=1: 1 AVX, 2 AVX-512 */

/* The test's clobber (URING_SYSCALLS_CLOBBER=1): every register the front's code
 * may change, changed, as an ABI-following callee may leave them. */
static void clobber_state(void)
{
	unsigned m;
	__asm__ volatile("fld1\n fld1\n fld1\n fld1\n fld1\n fld1\n fld1\n fld1\n"   /* the whole x87 stack, */
			 "fstp %%st(0)\n fstp %%st(0)\n fstp %%st(0)\n fstp %%st(0)\n"  /* as the ABI allows */
			 "fstp %%st(0)\n fstp %%st(0)\n fstp %%st(0)\n fstp %%st(0)\n"
			 "stmxcsr %0\n orl $0x3f, %0\n ldmxcsr %0" /* every exception flag */
			 : "=m"(m));
	if (clobber == 2)
		__asm__ volatile(
#define CZ(i) "vpternlogd $0xff, %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n"
			CZ(0) CZ(1) CZ(2) CZ(3) CZ(4) CZ(5) CZ(6) CZ(7) CZ(8) CZ(9) CZ(10) CZ(11)
			CZ(12) CZ(13) CZ(14) CZ(15) CZ(16) CZ(17) CZ(18) CZ(19) CZ(20) CZ(21) CZ(22)
			CZ(23) CZ(24) CZ(25) CZ(26) CZ(27) CZ(28) CZ(29) CZ(30) CZ(31)
#undef CZ
			"kxnorq %%k0, %%k0, %%k0\n kxnorq %%k1, %%k1, %%k1\n kxnorq %%k2, %%k2, %%k2\n"
			"kxnorq %%k3, %%k3, %%k3\n kxnorq %%k4, %%k4, %%k4\n kxnorq %%k5, %%k5, %%k5\n"
			"kxnorq %%k6, %%k6, %%k6\n kxnorq %%k7, %%k7, %%k7\n" ::: "memory");
	else if (clobber == 1)
		__asm__ volatile(
#define CY(i) "vpcmpeqd %%ymm" #i ", %%ymm" #i ", %%ymm" #i "\n"
			CY(0) CY(1) CY(2) CY(3) CY(4) CY(5) CY(6) CY(7) CY(8) CY(9) CY(10) CY(11)
			CY(12) CY(13) CY(14) CY(15)
#undef CY
			::: "memory");
}

/* What the stub calls: the front, errno kept (a system call leaves it alone). */
__attribute__((visibility("hidden"), used)) long front_stub_call(long nr, const long *a)
{
	int e = errno;
	long r = urfs_sysfront_call(nr, a);
	errno = e;
	if (__builtin_expect(clobber, 0))
		clobber_state();
	return r;
}

/* The stubs' way in and out: the flags, rbp, the result's slot at -8(%rbp), the
 * arguments at -56(%rbp) (a[0..5]), rdi = the number, rsi = a; and back. */
#define FRONT_IN(name) \
	".text\n" \
	".p2align 4\n" \
	".type " #name ", @function\n" \
	#name ":\n" \
	"	pushfq\n" \
	"	push %rbp\n" \
	"	mov %rsp, %rbp\n" \
	"	sub $8, %rsp\n"                    /* -8(%rbp): the result */ \
	"	push %r9\n" \
	"	push %r8\n" \
	"	push %r10\n" \
	"	push %rdx\n" \
	"	push %rsi\n" \
	"	push %rdi\n"                       /* -56(%rbp): a[0..5] */ \
	"	cld\n" \
	"	mov %rax, %rdi\n" \
	"	mov %rsp, %rsi\n"

#define FRONT_OUT(name) \
	"	lea -56(%rbp), %rsp\n" \
	"	pop %rdi\n" \
	"	pop %rsi\n" \
	"	pop %rdx\n" \
	"	pop %r10\n" \
	"	pop %r8\n" \
	"	pop %r9\n" \
	"	mov -8(%rbp), %rax\n" \
	"	leave\n" \
	"	popfq\n" \
	"	ret\n" \
	".size " #name ", .-" #name "\n"

/* front_entry: called by a site's stub with rax = the system call's number and its
 * arguments in rdi, rsi, rdx, r10, r8, r9; returns the result in rax with everything
 * else as it was (rcx and r11 as a syscall leaves them: clobbered). Two builds of it:
 * with xsavec (the compacted form, which skips state in its initial configuration:
 * upper AVX-512 halves nobody used) where the CPU has it, else with xsave. */
#define FRONT_ENTRY(name, save) __asm__( \
	FRONT_IN(name) \
	"	sub front_xsave_size(%rip), %rsp\n" \
	"	and $-64, %rsp\n" \
	"	movq $0, 512(%rsp)\n"              /* the xsave header must start zeroed */ \
	"	movq $0, 520(%rsp)\n" \
	"	movq $0, 528(%rsp)\n" \
	"	movq $0, 536(%rsp)\n" \
	"	movq $0, 544(%rsp)\n" \
	"	movq $0, 552(%rsp)\n" \
	"	movq $0, 560(%rsp)\n" \
	"	movq $0, 568(%rsp)\n" \
	"	mov $-1, %eax\n" \
	"	mov $-1, %edx\n" \
	"	" save " (%rsp)\n" \
	"	call front_stub_call\n" \
	"	mov %rax, -8(%rbp)\n" \
	"	mov $-1, %eax\n" \
	"	mov $-1, %edx\n" \
	"	xrstor (%rsp)\n" \
	FRONT_OUT(name))
FRONT_ENTRY(front_entry, "xsave");
FRONT_ENTRY(front_entry_c, "xsavec");
void front_entry_c(void);
void front_entry(void);

/* front_entry_avx, front_entry_avx512: the same contract with plain moves. Area
 * at rsp (64-aligned): the vector registers from 0, the mask registers at 2048,
 * MXCSR at 2112, XINUSE at entry at 2116, and x87 state in use at entry (fxsave,
 * about 80 ns with fxrstor here, where xsavec with xrstor is about 170) at 2176. */
#define FRONT_FAST(name, vsave, vrest) __asm__( \
	FRONT_IN(name) \
	"	mov $1, %ecx\n" \
	"	xgetbv\n"                        /* XINUSE */ \
	"	sub $2752, %rsp\n" \
	"	and $-64, %rsp\n" \
	"	mov %eax, 2116(%rsp)\n" \
	"	test $1, %al\n" \
	"	jz 1f\n" \
	"	fxsave64 2176(%rsp)\n"            /* x87 in use: its state kept */ \
	"1:	stmxcsr 2112(%rsp)\n" \
	vsave \
	"	call front_stub_call\n" \
	"	mov %rax, -8(%rbp)\n" \
	vrest \
	"	ldmxcsr 2112(%rsp)\n" \
	"	testb $1, 2116(%rsp)\n" \
	"	jz 4f\n" \
	"	fxrstor64 2176(%rsp)\n" \
	"	jmp 2f\n" \
	"4:	mov $1, %ecx\n" \
	"	xgetbv\n" \
	"	test $1, %al\n" \
	"	jz 2f\n"                          /* x87 dirtied: back to its initial state */ \
	"	mov $1, %eax\n" \
	"	xor %edx, %edx\n" \
	"	xrstor front_x87_init(%rip)\n" \
	"2:	testl $0x44, 2116(%rsp)\n"        /* AVX, ZMM_Hi256 initial at entry */ \
	"	jnz 3f\n" \
	"	vzeroupper\n" \
	"3:" \
	FRONT_OUT(name))
#define R8(m, a, b, c, d, e, f, g, h) m(a) m(b) m(c) m(d) m(e) m(f) m(g) m(h)
#define R16(m) R8(m, 0, 1, 2, 3, 4, 5, 6, 7) R8(m, 8, 9, 10, 11, 12, 13, 14, 15)
#define R32(m) R16(m) R8(m, 16, 17, 18, 19, 20, 21, 22, 23) R8(m, 24, 25, 26, 27, 28, 29, 30, 31)
#define SY(i) "	vmovdqu %ymm" #i ", " #i "*32(%rsp)\n"
#define LY(i) "	vmovdqu " #i "*32(%rsp), %ymm" #i "\n"
#define SZ(i) "	vmovdqu64 %zmm" #i ", " #i "*64(%rsp)\n"
#define LZ(i) "	vmovdqu64 " #i "*64(%rsp), %zmm" #i "\n"
#define SK(i) "	kmovq %k" #i ", 2048+" #i "*8(%rsp)\n"
#define LK(i) "	kmovq 2048+" #i "*8(%rsp), %k" #i "\n"
FRONT_FAST(front_entry_avx, R16(SY), R16(LY));
FRONT_FAST(front_entry_avx512, R32(SZ) R8(SK, 0, 1, 2, 3, 4, 5, 6, 7), R32(LZ) R8(LK, 0, 1, 2, 3, 4, 5, 6, 7));
void front_entry_avx(void), front_entry_avx512(void);

/* A stub: a page of its own within 1 GiB of its site (written once, then
 * read+execute for good), at most MAX_SITES of them. */
#define MAX_SITES 64
static int nsites;

static int near(const void *a, const void *b)
{
	long d = (long)((uintptr_t)a - (uintptr_t)b);
	return d > -(1l << 30) && d < (1l << 30);
}

static unsigned char *page_near(unsigned char *site, size_t pg)
{
	uintptr_t at = (uintptr_t)site & ~(uintptr_t)(pg - 1);
	for (long step = 1; step < 4096; step++) {      /* 64 KiB steps, below then above */
		for (int side = -1; side <= 1; side += 2) {
			uintptr_t hint = at + (uintptr_t)(side * step * 65536l);
			void *p = mmap((void *)hint, pg, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == MAP_FAILED)
				continue;
			if (near(p, site))
				return p;
			munmap(p, pg);
		}
	}
	return NULL;
}

/* Is [addr, addr+len) in a private read+execute mapping? (/proc/self/maps, read
 * with plain system calls: this runs in the SIGSYS handler) */
static int in_private_text(uintptr_t addr, size_t len)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[4096];
	size_t have = 0;
	int ok = 0, done = 0;
	while (!done) {
		ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = 0;
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {       /* "lo-hi perm ..." */
			*nl = 0;
			char *end;
			unsigned long lo = strtoul(line, &end, 16), hi = 0;
			if (*end == '-')
				hi = strtoul(end + 1, &end, 16);
			if (hi && addr >= lo && addr + len <= hi) {
				ok = !strncmp(end, " r-xp", 5);
				done = 1;
				break;
			}
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1)
			have = 0;                  /* a line longer than the buffer: skip it */
	}
	close(fd);
	return ok;
}

static void put32(unsigned char *p, int32_t v)
{
	memcpy(p, &v, 4);
}

static int decide(void)
{
	const char *e = getenv("URING_SYSCALLS_PATCH");
	if (e && e[0] == '0')
		return 1;
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))   /* OSXSAVE */
		return 1;
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if (lo & (3u << 17))          /* AMX tile state enabled: 8 KiB more a call */
		return 1;
	__cpuid_count(0xd, 0, a, b, c, d);
	if (b < 576)
		return 1;
	front_xsave_size = b + 64;
	__cpuid_count(0xd, 1, a, b, c, d);
	entry = (a & 2) ? front_entry_c : front_entry;      /* XSAVEC */
	int xinuse = (a >> 2) & 1;
	__cpuid_count(7, 0, a, b, c, d);
	int avx512bw = (b >> 30) & 1;
	int moves = !(e && !strcmp(e, "xsave")) && xinuse;
	if (moves && e && !strcmp(e, "avx") && (lo & 7) == 7)
		entry = front_entry_avx;       /* a test's: the AVX stub, even where it keeps too little */
	else if (moves && lo == 0x7 && !hi)
		entry = front_entry_avx;
	else if (moves && lo == 0xe7 && !hi && avx512bw)
		entry = front_entry_avx512;
	const char *cl = getenv("URING_SYSCALLS_CLOBBER");
	if (cl && cl[0] == '1')
		clobber = entry != front_entry_avx && (lo & 0xe0) == 0xe0 && avx512bw ? 2 : (lo & 4) ? 1 : 0;
	return 0;
}

static void patch(void *call_addr, int nr);

void front_patch_site(void *call_addr, int nr)
{
	static int busy;              /* one thread patches at a time; the others trap meanwhile */
	if (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		return;
	if (patch_off < 0)
		patch_off = decide();
	if (!patch_off)
		patch(call_addr, nr);
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
}

static void patch(void *call_addr, int nr)
{
	unsigned char *sc = (unsigned char *)call_addr - 2, *mov = sc - 5;
	uintptr_t word = (uintptr_t)mov & ~(uintptr_t)7;
	unsigned off = (unsigned)((uintptr_t)mov - word);
	if (off > 3 || !in_private_text(word, 8))
		return;                       /* straddles a word, or not plain program text */
	unsigned char want[7] = { 0xb8, 0, 0, 0, 0, 0x0f, 0x05 };
	put32(want + 1, nr);
	if (memcmp(mov, want, 7))
		return;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *base = nsites < MAX_SITES ? page_near(mov, pg) : NULL;
	if (!base)
		return;
	void (**slot)(void) = (void (**)(void))base;
	*slot = entry;                                           /* the stub calls through it */
	unsigned char *s = base + 16, *p = s;
	memcpy(p, "\x48\x8d\x64\x24\x80", 5), p += 5;            /* lea -128(%rsp),%rsp */
	*p++ = 0xb8, put32(p, nr), p += 4;                       /* mov $nr,%eax */
	*p++ = 0xff, *p++ = 0x15;                                /* call *slot(%rip) */
	put32(p, (int32_t)((unsigned char *)slot - (p + 4))), p += 4;
	memcpy(p, "\x48\x8d\xa4\x24\x80\x00\x00\x00", 8), p += 8; /* lea 128(%rsp),%rsp */
	*p++ = 0xe9;                                             /* jmp back, past the syscall */
	put32(p, (int32_t)((unsigned char *)call_addr - (p + 4)));
	void *page = (void *)(word & ~(uintptr_t)(pg - 1));
	if (mprotect(base, pg, PROT_READ | PROT_EXEC) < 0 ||
	    mprotect(page, pg, PROT_READ | PROT_WRITE | PROT_EXEC) < 0) {
		munmap(base, pg);
		return;
	}
	nsites++;
	/* the jmp, in one aligned 8-byte store */
	uint64_t old, new;
	unsigned char b[8];
	memcpy(&old, (void *)word, 8);
	memcpy(b, &old, 8);
	b[off] = 0xe9;
	put32(b + off + 1, (int32_t)(s - (mov + 5)));
	memcpy(&new, b, 8);
	__atomic_compare_exchange_n((uint64_t *)word, &old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	mprotect(page, pg, PROT_READ | PROT_EXEC);
}

#else

void front_patch_site(void *call_addr, int nr)
{
	(void)call_addr;
	(void)nr;
}

#endif
