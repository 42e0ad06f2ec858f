/* SPDX-License-Identifier: MIT */
/*
 * noring.h - noring_block(): blocks the kernel's io_uring in this process and
 * its children the way container runtimes do (a seccomp filter that makes
 * io_uring_setup, io_uring_enter and io_uring_register fail with an errno).
 * Shared by the noring launcher (tools/noring.c) and the tests; header only.
 * NORING_FILTER_HEAD and noring_install() are the parts it is built of, for a
 * test that needs a filter of its own (test_uring_direct traps io_setup).
 *
 * Must never: report success for a filter it did not install (every prctl
 * error is returned), or block any system call but those three.
 */
#ifndef UR_NORING_H
#define UR_NORING_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define NORING_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NORING_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "noring.h: add this architecture's AUDIT_ARCH_* value"
#endif

/* The start of a filter: only this architecture's numbers mean what we think (other ABIs
 * pass); then the system call's number is loaded for the checks that follow. */
#define NORING_FILTER_HEAD \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NORING_AUDIT_ARCH, 1, 0), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))

/* Install filter f of n instructions for this thread and the ones it starts: 0 or -errno. */
static inline int noring_install(struct sock_filter *f, unsigned short n)
{
	struct sock_fprog prog = { .len = n, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

/* 0, or -errno if the filter cannot be installed here. err: the errno the three
 * calls then fail with (EPERM as Docker's default profile, ENOSYS, EACCES). */
static inline int noring_block(int err)
{
	const unsigned ret = SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA);
	struct sock_filter f[] = {
		NORING_FILTER_HEAD,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, ret),
	};
	return noring_install(f, sizeof(f) / sizeof(f[0]));
}

#endif
