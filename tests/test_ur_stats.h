/* SPDX-License-Identifier: MIT */
/* test_ur_stats.h - reading simplefs_server's --stats lines in tests
 * (test_ur_handover, test_ur_lock_scope). Header only. */
#ifndef TEST_UR_STATS_H
#define TEST_UR_STATS_H

#include <stdlib.h>
#include <string.h>

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
