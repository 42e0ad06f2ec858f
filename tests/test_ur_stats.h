/* SPDX-License-Identifier: MIT */
/* test_ur_stats.h - a server started with --stats in tests, and its
 * counters read (test_ur_handover, test_ur_lock_scope, test_ur_multi_idle).
 * Header only; include after testutil.h. */
#ifndef TEST_UR_STATS_H
#define TEST_UR_STATS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The servers the library starts print their counters (--stats), and an
 * image of 16 MiB is formatted; 0 (skip the test) without a real server. */
static inline int tu_stats_setup(const char *img)
{
	if (!tu_wrap_server("stats-server.sh", "", "--stats ")) {
		printf("SKIP: the real server needs UR_SERVER (run under tests/run.sh)\n");
		return 0;
	}
	int e = sfs_format(img, 16ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	return 1;
}

/* Standard error to file path (truncated) until tu_stderr_back(the
 * result): a server started meanwhile writes its counters there. */
static inline int tu_stderr_to(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), saved = dup(2);
	if (fd < 0 || saved < 0 || dup2(fd, 2) < 0)
		FAIL("redirect stderr to %s: %s", path, strerror(errno));
	close(fd);
	return saved;
}

static inline void tu_stderr_back(int saved)
{
	dup2(saved, 2);
	close(saved);
}

/* The number just before label in text (a server's --stats line), or -1
 * when label is not there. */
static inline long long tu_count_before(const char *text, const char *label)
{
	const char *p = strstr(text, label);
	if (!p)
		return -1;
	while (p > text && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return strtoll(p, NULL, 10);
}

#endif
