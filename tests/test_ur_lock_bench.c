/* SPDX-License-Identifier: MIT */
/* Description: the lock benchmark runs (tools/lockbench.c; docs/BENCHMARKS.md
 * "Lock grants"): briefly, with 3 hostile rings, it prints its two sets side
 * by side and the ratio line. Its hostile rings hold what the bounds allow
 * (UR_CLIENT_MAX_LOCKS - 1 records and UR_CLIENT_MAX_LOCKWAITS waits each:
 * three stay under the server's bounds), so those counts are checked; with
 * --idle-rings (the control) they hold nothing. No speed is checked: a test
 * never asserts one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ur_abi.h"
#include "testutil.h"

int main(void)
{
	alarm(240);
	const char *bin = getenv("UR_BIN");
	if (!bin || !getenv("UR_SERVER")) {
		printf("SKIP: needs UR_BIN and UR_SERVER (run under tests/run.sh)\n");
		return 77;
	}
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "'%s/lockbench' --image lb.sfs --hostile 3 --reps 50 --ms 100", bin);
	FILE *p = popen(cmd, "r");
	if (!p)
		FAIL("popen: %s", strerror(errno));
	char line[512];
	unsigned sets = 0, ratio = 0;
	while (fgets(line, sizeof(line), p)) {
		fputs(line, stdout);
		unsigned rings, recs, waits;
		double med;
		if (sscanf(line, "hostile rings %u (records %u, waits %u): UNLOCK median %lf", &rings, &recs,
			   &waits, &med) == 4) {
			unsigned want = sets ? 3 : 1;
			CHECK_EQ(rings, want);
			CHECK_EQ(recs, want * (UR_CLIENT_MAX_LOCKS - 1));
			CHECK_EQ(waits, want * UR_CLIENT_MAX_LOCKWAITS);
			CHECK(med > 0);
			CHECK(strstr(line, "neighbour NOP median"));
			sets++;
		} else if (!strncmp(line, "ratio 3-vs-1 hostile rings: UNLOCK median x", 43)) {
			ratio++;
		}
	}
	int st = pclose(p);
	CHECK_EQ(st, 0);
	CHECK_EQ(sets, 2);
	CHECK_EQ(ratio, 1);
	/* the control: the same rings holding nothing */
	snprintf(cmd, sizeof(cmd), "'%s/lockbench' --image lb.sfs --hostile 2 --reps 20 --ms 50 --idle-rings", bin);
	if (!(p = popen(cmd, "r")))
		FAIL("popen: %s", strerror(errno));
	sets = 0;
	while (fgets(line, sizeof(line), p)) {
		fputs(line, stdout);
		unsigned rings, recs, waits;
		if (sscanf(line, "hostile rings %u (records %u, waits %u)", &rings, &recs, &waits) == 3) {
			CHECK_EQ(rings, sets ? 2 : 1);
			CHECK_EQ(recs, 0);
			CHECK_EQ(waits, 0);
			sets++;
		}
	}
	CHECK_EQ(pclose(p), 0);
	CHECK_EQ(sets, 2);
	printf("ok\n");
	return 0;
}
