/* SPDX-License-Identifier: MIT */
/* Description: io_uring blocked the way containers block it (a seccomp filter
 * making io_uring_setup fail with EPERM, as Docker's default profile does, or
 * ENOSYS): urch_open with URCH_IO_URING returns that error, leaks nothing and
 * creates no file, and the same process still does its I/O through psync and
 * ur channels. Skips if seccomp filters cannot be installed here. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_chan_common.h"
#include "../src/common/noring.h"

/* In the child: 0 ok, 77 cannot filter, else the failing line. */
static int child(int err)
{
	struct urch *ch = NULL;
	char buf[4096];
	if (noring_block(err) < 0)
		return 77;
	int r = urch_open("blocked.dat", URCH_CREATE, URCH_IO_URING, &ch);
	if (r != -err || ch)
		return __LINE__;
	struct stat st;
	if (stat("blocked.dat", &st) == 0)
		return __LINE__;            /* nothing created for a channel that failed */
	r = urch_open("blocked.dat", URCH_CREATE, URCH_PSYNC, &ch);
	if (r < 0)
		return __LINE__;
	fillpat(buf, sizeof(buf), 0, 3);
	if (urch_write_fully(ch, buf, sizeof(buf), 0) != (int64_t)sizeof(buf))
		return __LINE__;
	memset(buf, 0, sizeof(buf));
	if (urch_read_fully(ch, buf, sizeof(buf), 0) != (int64_t)sizeof(buf))
		return __LINE__;
	for (size_t i = 0; i < sizeof(buf); i++)
		if ((unsigned char)buf[i] != pat(i, 3))
			return __LINE__;
	urch_close(ch);
	struct urch_opts o = { .image = "b.sfs" };
	r = urch_open_opts("f", URCH_CREATE, URCH_UR, &o, &ch);
	if (r < 0)
		return __LINE__;
	if (urch_write_fully(ch, "page", 4, 8192) != 4 || urch_size(ch) != 8196)
		return __LINE__;
	urch_close(ch);
	return 0;
}

int main(void)
{
	int errs[2] = { EPERM, ENOSYS };
	int r = sfs_format("b.sfs", 16ull << 20, 0);
	CHECK(r == 0, "format: %s", strerror(-r));
	for (int k = 0; k < 2; k++) {
		unlink("blocked.dat");
		pid_t pid = fork();
		CHECK(pid >= 0, "fork");
		if (pid == 0)
			_exit(child(errs[k]));
		int st;
		CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
		CHECK(WIFEXITED(st), "child died");
		if (WEXITSTATUS(st) == 77) {
			printf("cannot install a seccomp filter here\n");
			return 77;
		}
		CHECK(WEXITSTATUS(st) == 0, "blocked with %s: child failed at line %d", strerror(errs[k]),
		      WEXITSTATUS(st));
		printf("ok io_uring blocked with %s\n", strerror(errs[k]));
	}
	return 0;
}
