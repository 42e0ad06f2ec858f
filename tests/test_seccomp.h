/* test_seccomp.h: block_io_uring(), shared by the tests that check how io_uring being
 * blocked the way containers block it (a seccomp filter on io_uring_setup) is handled.
 * Header only (static), included as "test_seccomp.h" by tests/test_*.c.
 * It must never report success for a filter it did not install: any prctl error is returned. */
#ifndef TEST_SECCOMP_H
#define TEST_SECCOMP_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* Make io_uring_setup fail with err in this process and its children (Docker's default
 * profile gives EPERM). 0, or -errno if the filter cannot be installed here. */
static inline int block_io_uring(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

#endif
