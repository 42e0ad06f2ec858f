/* SPDX-License-Identifier: MIT */
/* parts.h: how a test reports a part it ran or could not run, for tests/run.sh.
 * A part is a piece of a test that needs something the host may lack (the kernel's io_uring,
 * O_DIRECT on the test directory, a seccomp filter). The runner counts every "SKIP-PART:"
 * line of a passing test as a skip and shows it; "PART:" lines go to $TEST_PARTS_LOG only, so
 * CI can check that a run with io_uring blocked skips exactly the io_uring parts.
 * Header only, included by tests/testutil.h and tests/test_chan_common.h.
 * It must never turn a failure into a skip: call tu_part_skip only for a missing facility
 * probed independently of the code under test, never because that code failed. */
#ifndef TU_PARTS_H
#define TU_PARTS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* need: what the part requires ("io_uring", "O_DIRECT", "seccomp", ...); label: which part. */
static inline void tu_part_ran(const char *need, const char *label)
{
	printf("PART: %s: %s\n", need, label);
	fflush(stdout);
}

static inline void tu_part_skip(const char *need, const char *label, const char *why)
{
	printf("SKIP-PART: %s: %s: %s\n", need, label, why);
	fflush(stdout);
}

/* Probes of the host, independent of the code under test: 1 when available, else 0 with the
 * reason in why. */

/* The kernel's io_uring: one raw io_uring_setup (blocked: EPERM/ENOSYS/EACCES). */
static inline int tu_have_io_uring(char *why, size_t cap)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof p);
	int fd = (int)syscall(__NR_io_uring_setup, 1, &p);
	if (fd < 0) {
		snprintf(why, cap, "io_uring_setup: %s", strerror(errno));
		return 0;
	}
	close(fd);
	return 1;
}

/* O_DIRECT on the file system of directory dir: open a scratch file there with O_DIRECT. */
static inline int tu_have_odirect(const char *dir, char *why, size_t cap)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/.odirect-probe.%d", dir, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_DIRECT, 0600);
	if (fd < 0) {
		snprintf(why, cap, "open(O_DIRECT) in %s: %s", dir, strerror(errno));
		unlink(path);
		return 0;
	}
	close(fd);
	unlink(path);
	return 1;
}

#endif
