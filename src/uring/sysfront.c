/* SPDX-License-Identifier: MIT */
/*
 * sysfront.c - the system-call front: programs that make the io_uring system
 * calls themselves (fio, liburing.a, runtimes with their own ring code) run
 * on the emulated ring. A seccomp filter answers io_uring_setup,
 * io_uring_enter and io_uring_register with SECCOMP_RET_TRAP (a trap outranks
 * a container's SECCOMP_RET_ERRNO), and mmap() and close() of the fd numbers
 * where the front puts its rings (SYSFRONT_FD_LO..HI, and when the program
 * holds all of those, the virtual numbers EMU_VFD_LO.., which no descriptor
 * can have: uring_int.h); the preload's SIGSYS
 * handler (preload/syscalls.c) hands each trapped call to
 * urfs_sysfront_call(), which serves it from the same emulated ring the
 * library's functions use. A program's mmap of IORING_OFF_SQ_RING,
 * IORING_OFF_CQ_RING or IORING_OFF_SQES gets a second mapping of the ring's
 * own shared pages (mremap with old_size 0), so it reads and writes the very
 * memory the emulation does.
 *
 * The filter is installed only where the kernel's io_uring is refused (or
 * URING_EMULATE=1 forces emulation): where the kernel's ring works, nothing
 * ever traps. It is inherited by threads (TSYNC), fork and exec: a child that
 * execs with the preload finds it (its probe traps) and serves it too.
 *
 * Must never: let the library's own threads trap (they block every signal,
 * and a trap with SIGSYS blocked kills the process: the library closes fds
 * in the range with close_range(2), which the filter lets through), trap
 * anything when the kernel's io_uring works and emulation was not forced, or
 * read an argument of a trapped call other than through the emulation's
 * checked copies (a bad pointer is -EFAULT, as the kernel's).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "uring_int.h"
#include "sysfront.h"
#include "../common/noring.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

int emu_front_on;                /* the filter traps in this process */
static int front_traps_close;    /* ... and close() of the range (close_range exists) */
static _Atomic int traps_seen;   /* a trap reached urfs_sysfront_call */

#undef close
/* The library's close(): a number in the front's range is closed with
 * close_range(2), which does not trap. */
int emu_close_fd(int fd)
{
	if (__builtin_expect(emu_vfd(fd), 0)) {
		errno = EBADF;                           /* no descriptor: its close would trap */
		return -1;
	}
	if (__builtin_expect(front_traps_close, 0) && fd >= SYSFRONT_FD_LO && fd < SYSFRONT_FD_HI) {
		if (fcntl(fd, F_GETFD) < 0)
			return -1;                       /* EBADF, as close() */
		return (int)syscall(SYS_close_range, (unsigned)fd, (unsigned)fd, 0u);
	}
	return close(fd);
}

static int install_filter(int trap_close)
{
	const unsigned lo_arg4 = offsetof(struct seccomp_data, args) + 4 * sizeof(__u64);
	const unsigned lo_arg0 = offsetof(struct seccomp_data, args);
	struct sock_filter f[] = {
		NORING_FILTER_HEAD,                                                      /* 0-3 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 12, 0),         /* 4 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 11, 0),         /* 5 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 10, 0),      /* 6 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 2, 0),                    /* 7 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close, trap_close ? 3 : 0, 0),  /* 8 */
		BPF_STMT(BPF_JMP | BPF_JA, 8),                                           /* 9 */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, lo_arg4),     /* 10: mmap's fd (low word) */
		BPF_STMT(BPF_JMP | BPF_JA, 1),                                           /* 11 */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, lo_arg0),     /* 12: close's fd */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, EMU_VFD_LO, 0, 1),                   /* 13 */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x80000000u, 3, 2),  /* 14: -1 and below: no */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SYSFRONT_FD_LO, 0, 2),               /* 15 */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, SYSFRONT_FD_HI, 1, 0),               /* 16 */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | SYSFRONT_TRAP_DATA),        /* 17 */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),                            /* 18 */
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	long r = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
	if (r < 0)
		return -errno;
	return r > 0 ? -EBUSY : 0;   /* a thread (id r) could not take it */
}

EXPORT int urfs_sysfront_start(void)
{
	if (emu_front_on)
		return 1;
	/* close_range(2) (Linux 5.9): a range past any open fd closes nothing */
	int have_close_range = syscall(SYS_close_range, ~0u - 1, ~0u - 1, 0u) == 0;
	long rc = syscall(__NR_io_uring_setup, 0u, NULL);
	int e = errno;
	if (atomic_load(&traps_seen)) {
		/* an inherited filter of ours (a parent's, across exec) trapped it */
		front_traps_close = have_close_range;
		emu_front_on = 1;
		return 1;
	}
	int blocked = rc < 0 && (e == EPERM || e == ENOSYS || e == EACCES);
	if (!blocked && !emu_forced())
		return 0;
	int err = install_filter(have_close_range);
	if (err < 0)
		return err;
	front_traps_close = have_close_range;
	emu_front_on = 1;
	return 1;
}

/* The ring fd names: the ring, or NULL with *err the kernel's answer for it.
 * A number that is not open is -EBADF even where the table still names a
 * ring: the program closed a dup() below the front's range (no trap). */
static struct emu_ring *ring_of(int fd, long *err)
{
	struct emu_ring *r = emu_find(fd);
	if (r && fd == r->fd && ((fd >= SYSFRONT_FD_LO && fd < SYSFRONT_FD_HI) || emu_vfd(fd)))
		return r;       /* the ring's own number in the range: its close traps, no look needed */
	if (fd < 0 || fcntl(fd, F_GETFD) < 0) {
		*err = -EBADF;  /* a dup the program closed without a trap (below the range) */
		return NULL;
	}
	if (!r)
		r = emu_alias(fd);          /* a dup() of a ring's fd */
	if (!r)
		*err = -EOPNOTSUPP;
	return r;
}

static size_t page_up(size_t n)
{
	size_t pg = (size_t)getpagesize();
	return (n + pg - 1) & ~(pg - 1);
}

/* mmap of a number in the range that is not a ring: the program's own file,
 * mapped through a dup outside the range (the call itself would trap). */
static long mmap_other(const long *a)
{
	int fd = (int)a[4];
	int d = fcntl(fd, F_DUPFD_CLOEXEC, SYSFRONT_FD_HI);
	if (d < 0 && errno != EBADF)
		d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (d < 0)
		return -errno;
	long p = -EMFILE;
	if (d < SYSFRONT_FD_LO || d >= SYSFRONT_FD_HI) {
		p = syscall(__NR_mmap, a[0], a[1], a[2], a[3], (long)d, a[5]);
		if (p == -1)
			p = -errno;
	}
	emu_close_fd(d);
	return p;
}

/* mmap(addr, len, prot, flags, ring fd, IORING_OFF_*): another mapping of the
 * ring's pages, as the kernel maps its ring's. */
static long mmap_ring(struct emu_ring *r, const long *a)
{
	void *addr = (void *)a[0];
	size_t len = (size_t)a[1];
	int prot = (int)a[2], flags = (int)a[3];
	unsigned long off = (unsigned long)a[5] & 0xf8000000ul;   /* IORING_OFF_MMAP_MASK: the kernel's */
	void *base;
	size_t size;

	if (off == IORING_OFF_SQ_RING || off == IORING_OFF_CQ_RING) {
		base = r->mem;
		size = (size_t)((char *)r->sqes - (char *)r->mem);
	} else if (off == IORING_OFF_SQES) {
		base = r->sqes;
		size = page_up(r->sqes_sz);
	} else {
		return -EINVAL;
	}
	if (!len || len > size)
		return -EINVAL;
	len = page_up(len);
	int mflags = MREMAP_MAYMOVE;
	if (flags & MAP_FIXED)
		mflags |= MREMAP_FIXED;
	void *p = mremap(base, 0, len, mflags, addr);
	if (p == MAP_FAILED)
		return -errno;
	if ((flags & MAP_FIXED_NOREPLACE) && !(flags & MAP_FIXED) && addr && p != addr) {
		munmap(p, len);
		return -EEXIST;
	}
	if ((prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) != (PROT_READ | PROT_WRITE) &&
	    mprotect(p, len, prot) < 0) {
		long e = -errno;
		munmap(p, len);
		return e;
	}
	return (long)p;
}

EXPORT void urfs_sysfront_exec(void)
{
	xproc_exec();
}

EXPORT long urfs_sysfront_call(long nr, const long *a)
{
	struct emu_ring *r;
	long err = 0;

	atomic_store_explicit(&traps_seen, 1, memory_order_relaxed);
	switch (nr) {
	case __NR_io_uring_setup:
		return emu_setup_from((unsigned)a[0], (struct io_uring_params *)a[1], SYSFRONT_FD_LO);
	case __NR_io_uring_enter:
		if ((unsigned)a[3] & IORING_ENTER_REGISTERED_RING)
			return -EINVAL;   /* no ring is registered (IORING_REGISTER_RING_FDS: DROPIN.md) */
		if (!(r = ring_of((int)a[0], &err)))
			return err;
		return emu_enter(r, (unsigned)a[1], (unsigned)a[2], (unsigned)a[3], (const void *)a[4],
				 (size_t)a[5]);
	case __NR_io_uring_register:
		if (!(r = ring_of((int)a[0], &err)))
			return err;
		return emu_register(r, (unsigned)a[1], (void *)a[2], (unsigned)a[3]);
	case __NR_mmap:
		if ((int)a[3] & MAP_ANONYMOUS) {   /* the fd is ignored: mapped as asked, without it */
			long p = syscall(__NR_mmap, a[0], a[1], a[2], a[3], -1L, a[5]);
			return p == -1 ? -errno : p;
		}
		if ((r = emu_find((int)a[4])))
			return mmap_ring(r, a);
		return mmap_other(a);
	case __NR_close:
		return emu_close_number((int)a[0]);
	default:
		return -ENOSYS;
	}
}
