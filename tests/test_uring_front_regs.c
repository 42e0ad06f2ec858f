/* SPDX-License-Identifier: MIT */
/* Description: a patched io_uring_enter site of the system-call front (issue 30,
 * src/uring/preload/patch.c) keeps the vector, mask and x87 state as the system call does,
 * whichever stub the CPU gets (plain moves where XCR0 is 7 or 0xe7, else xsave), while the
 * front's code clobbers all of it (URING_SYSCALLS_CLOBBER=1: zmm0-31 or ymm0-15, k0-7,
 * MXCSR's flags, an x87 push and pop). Each inline site runs 3 times: a trap, then the patched
 * call twice (the site's `mov` must be a `jmp` then). Checked: every vector register's full
 * width (zmm0-31 with AVX-512, ymm0-15 with AVX), k0-7, MXCSR; x87 in use at entry (st0, the
 * control word, the tag of a 2-deep stack); x87 and the upper halves that were initial at entry
 * are initial after (XINUSE, where the CPU reports it). All of it twice: with the stub the CPU
 * gets, then (children run again) with URING_SYSCALLS_PATCH=xsave and =avx (the AVX stub,
 * checked for ymm0-15). Parts the CPU cannot run (no AVX-512,
 * no XINUSE, not x86-64) are counted skips. Run under the front by tu_front_main.
 * Must never: pass when the site was not patched, or check a register the asm did not load.
 */
#include "test_uring.h"
#include "test_uring_front.h"
#include "parts.h"
#include <cpuid.h>
#include <sys/wait.h>

#if defined(__x86_64__)
static int fd;

static unsigned xcr0(void)
{
	unsigned a, b, c, d, lo, hi;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return lo;
}

static int has_xinuse(void)
{
	unsigned a, b, c, d;
	__cpuid_count(0xd, 1, a, b, c, d);
	return (a >> 2) & 1;
}

static int has_avx512bw(void)
{
	unsigned a, b, c, d;
	__cpuid_count(7, 0, a, b, c, d);
	return (xcr0() & 0xe6) == 0xe6 && ((b >> 16) & 1) && ((b >> 30) & 1);
}

/* The site: `mov $426,%eax; syscall` at an 8-byte boundary; *at: its mov. fd, 0, 0, 0, NULL, 8. */
#define SITE(at) \
	"lea 1f(%%rip), %[at]\n" \
	".p2align 3\n" \
	"1: mov $426, %%eax\n" \
	"syscall\n"
#define ENTER_REGS(ret, at) "=a"(ret), [at] "=&r"(at), "+D"(di), "+S"(si), "+d"(dx), "+r"(r10), "+r"(r8), "+r"(r9)
#define ENTER_VARS \
	long ret, di = fd, si = 0, dx = 0; \
	register long r10 __asm__("r10") = 0; \
	register long r8 __asm__("r8") = 0; \
	register long r9 __asm__("r9") = 8; \
	unsigned char *at
#define XMM_CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
	"xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

#define R8(m, a, b, c, d, e, f, g, h) m(a) m(b) m(c) m(d) m(e) m(f) m(g) m(h)
#define R16(m) R8(m, 0, 1, 2, 3, 4, 5, 6, 7) R8(m, 8, 9, 10, 11, 12, 13, 14, 15)
#define R32(m) R16(m) R8(m, 16, 17, 18, 19, 20, 21, 22, 23) R8(m, 24, 25, 26, 27, 28, 29, 30, 31)
#define LZ(i) "vmovdqu64 " #i "*64(%[in]), %%zmm" #i "\n"
#define SZ(i) "vmovdqu64 %%zmm" #i ", " #i "*64(%[out])\n"
#define LY(i) "vmovdqu " #i "*32(%[in]), %%ymm" #i "\n"
#define SY(i) "vmovdqu %%ymm" #i ", " #i "*32(%[out])\n"
#define LX(i) "movdqu " #i "*16(%[in]), %%xmm" #i "\n"
#define SX(i) "movdqu %%xmm" #i ", " #i "*16(%[out])\n"
#define LK(i) "kmovq 2048+" #i "*8(%[in]), %%k" #i "\n"
#define SK(i) "kmovq %%k" #i ", 2048+" #i "*8(%[out])\n"
/* in/out: 2048 bytes of vector registers, k0-7 at 2048, MXCSR at 2112, XINUSE at 2116 (out), rax kept at 2120 */
#define XINUSE_TO_OUT "mov %%rax, 2120(%[out])\n mov $1, %%ecx\n xgetbv\n mov %%eax, 2116(%[out])\n" \
	"mov 2120(%[out]), %%rax\n"

static void fill(unsigned char *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		in[i] = (unsigned char)(i * 7 + 3);
}

/* One inline site with the registers loaded from in[] before and stored to out[] after:
 * zmm0-31, k0-7 and MXCSR (avx512), or ymm0-15 and MXCSR. */
static long vector_enter(int avx512, const unsigned char *in, unsigned char *out, unsigned char **site)
{
	ENTER_VARS;
	if (avx512)
		__asm__ volatile("ldmxcsr 2112(%[in])\n" R32(LZ) R8(LK, 0, 1, 2, 3, 4, 5, 6, 7) SITE(at)
				 "stmxcsr 2112(%[out])\n" R32(SZ) R8(SK, 0, 1, 2, 3, 4, 5, 6, 7)
				 : ENTER_REGS(ret, at)
				 : [in] "r"(in), [out] "r"(out)
				 : "rcx", "r11", "memory", XMM_CLOBBERS);
	else
		__asm__ volatile("ldmxcsr 2112(%[in])\n" R16(LY) SITE(at) "stmxcsr 2112(%[out])\n" R16(SY)
				 : ENTER_REGS(ret, at)
				 : [in] "r"(in), [out] "r"(out)
				 : "rcx", "r11", "memory", XMM_CLOBBERS);
	*site = at;
	return ret;
}

/* The vector registers (2048 bytes with AVX-512, else 512) and MXCSR kept, 3 rounds. */
static void vector_site(int avx512)
{
	_Alignas(64) unsigned char in[2176], out[2176];
	fill(in, sizeof in);
	uint32_t mx = 0x1f80;
	memcpy(in + 2112, &mx, 4);
	size_t n = avx512 ? 2112 : 512;
	for (int round = 0; round < 3; round++) {
		unsigned char *at;
		memset(out, 0, sizeof out);
		CHECK_EQ(vector_enter(avx512, in, out, &at), 0);
		CHECK(memcmp(in, out, n) == 0);
		CHECK(memcmp(in + 2112, out + 2112, 4) == 0);
		if (round)
			CHECK_EQ(at[0], 0xe9);       /* patched at the first trap */
	}
}

/* xmm0-15 loaded with the upper halves and x87 initial at entry (vzeroupper, fninit): the
 * values kept, and XINUSE shows x87 and the upper halves initial after the call. */
static void initial_site(void)
{
	_Alignas(64) unsigned char in[2176], out[2176];
	fill(in, sizeof in);
	for (int round = 0; round < 3; round++) {
		ENTER_VARS;
		memset(out, 0, sizeof out);
		__asm__ volatile("vzeroupper\n fninit\n" R16(LX) SITE(at) R16(SX) XINUSE_TO_OUT
				 : ENTER_REGS(ret, at)
				 : [in] "r"(in), [out] "r"(out)
				 : "rcx", "r11", "memory", XMM_CLOBBERS);
		CHECK_EQ(ret, 0);
		CHECK(memcmp(in, out, 256) == 0);
		uint32_t xin;
		memcpy(&xin, out + 2116, 4);
		CHECK_EQ(xin & 0x45u, 0);     /* x87, AVX, ZMM_Hi256 initial */
		if (round)
			CHECK_EQ(at[0], 0xe9);
	}
}

/* x87 in use at entry: a 2-deep stack and a control word of the program's own. */
static void x87_site(void)
{
	for (int round = 0; round < 3; round++) {
		ENTER_VARS;
		long double a = 1.0L / 3.0L, b = -12345.678L, ra = 0, rb = 0;
		unsigned short cw = 0x027f, rcw = 0, tw = 0;   /* double precision: not the initial 0x37f */
		unsigned char env[28];
		__asm__ volatile("fninit\n fldcw %[cw]\n fldt %[b]\n fldt %[a]\n" SITE(at)
				 "fnstcw %[rcw]\n fnstenv %[env]\n fldcw %[rcw]\n fstpt %[ra]\n fstpt %[rb]\n fninit\n"
				 : ENTER_REGS(ret, at), [ra] "=m"(ra), [rb] "=m"(rb), [rcw] "=m"(rcw), [env] "=m"(env)
				 : [a] "m"(a), [b] "m"(b), [cw] "m"(cw)
				 : "rcx", "r11", "memory", "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)",
				   "st(7)");
		CHECK_EQ(ret, 0);
		CHECK(memcmp(&ra, &a, 10) == 0);
		CHECK(memcmp(&rb, &b, 10) == 0);
		CHECK_EQ(rcw, cw);
		memcpy(&tw, env + 8, 2);
		CHECK_EQ(tw, 0x0fff);             /* st0, st1 valid, the rest empty (physical 6, 7) */
		if (round)
			CHECK_EQ(at[0], 0xe9);
	}
}

static int front_body(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	CHECK(fd >= 0);
	CHECK_EQ(tu_ring_is_emulated(fd), 1);
	CHECK(getenv("URING_SYSCALLS_CLOBBER") != NULL);
	unsigned x = xcr0();
	const char *forced = getenv("URING_SYSCALLS_PATCH");
	if (forced && !strcmp(forced, "avx")) {
		/* the AVX stub forced: ymm0-15 are its promise, not zmm0-31 */
	} else if (has_avx512bw()) {
		tu_part_ran("AVX-512", "zmm0-31, k0-7, MXCSR kept");
		vector_site(1);
	} else {
		tu_part_skip("AVX-512", "zmm0-31, k0-7, MXCSR kept", "no AVX-512 (AVX512BW) here");
	}
	if (x & 4) {
		tu_part_ran("AVX", "ymm0-15, MXCSR kept");
		vector_site(0);
	} else {
		tu_part_skip("AVX", "ymm0-15, MXCSR kept", "no AVX here");
	}
	if ((x & 4) && has_xinuse()) {
		tu_part_ran("XINUSE", "x87 and upper halves initial after");
		initial_site();
	} else {
		tu_part_skip("XINUSE", "x87 and upper halves initial after", "no AVX or no XINUSE here");
	}
	x87_site();
	CHECK_EQ(close(fd), 0);
	/* the same through the stubs other CPUs get: xsave, and the AVX one (XCR0 7) */
	const char *others[] = { "xsave", (x & 4) && has_xinuse() ? "avx" : NULL };
	for (unsigned i = 0; i < 2 && !forced && others[i]; i++) {
		fflush(stdout);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("URING_SYSCALLS_PATCH", others[i], 1);
			execl("/proc/self/exe", "test_uring_front_regs", "--front", (char *)NULL);
			_exit(127);
		}
		int st;
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("URING_SYSCALLS_PATCH=%s: status 0x%x", others[i], st);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setenv("URING_SYSCALLS_CLOBBER", "1", 1);
	return tu_front_main(argc, argv, front_body);
}
#else
int main(void)
{
	tu_part_skip("x86-64", "patched sites keep the vector state", "not x86-64: no site is patched");
	return 0;
}
#endif
