/* SPDX-License-Identifier: MIT */
/* Description: the start-up race on the region's size. A
 * raw-ABI client hands over an unsealed memfd and, at the very moment the
 * server asks for the seals (the test traces the server and acts at that
 * system call's entry), shrinks it to nothing and seals it: a server that
 * read the size before the seals maps a region that is no longer there and
 * dies of SIGBUS. It must refuse with its error instead, and so it must a
 * region that is not sealed against shrinking at all. */
#include "test_ur_raw.h"

static int shrink_at_seals(void *arg, uint64_t nr, const uint64_t *a)
{
	struct raw *r = arg;
	if (nr != SYS_fcntl || a[0] != UR_FD_REGION || a[1] != F_GET_SEALS)
		return 0;
	if (ftruncate(r->memfd, 0) < 0 || fcntl(r->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		FAIL("shrink and seal: %s", strerror(errno));
	return 1;
}

static void refused(struct raw *r, const char *how)
{
	char msg[256] = "";
	int h = raw_hello(r, 20000, msg, sizeof(msg));
	pid_t pid = r->pid;
	raw_close(r);
	int st = raw_wait(pid, 20000);
	if (h != -EINVAL || st != 1)
		FAIL("%s: hello %d (%s), server ended with %d (want -EINVAL, 1; 128+n: signal n)",
		     how, h, msg, st);
	printf("%s: refused (%s)\n", how, msg);
}

int main(void)
{
	struct ur_region_hdr g;
	raw_layout(&g, 4, 8, 8192, 0);
	struct raw r;

	/* Not sealed against shrinking: sealed against growing only, or not at all. */
	unsigned seals[2] = { 0, F_SEAL_GROW | F_SEAL_SEAL };
	for (int i = 0; i < 2; i++) {
		RAW_REGION(&r, &g, g.size, seals[i]);
		RAW_START(&r, NULL, -1, -1);
		refused(&r, i ? "sealed against growing only" : "not sealed");
	}

	if (!raw_can_trace()) {
		printf("cannot trace a child here (ptrace not permitted): the race is not tested\n");
		return 77;
	}
	for (int i = 0; i < 3; i++) {
		RAW_REGION(&r, &g, g.size, 0);
		r.traced = 1;
		RAW_START(&r, NULL, -1, -1);
		if (raw_trace(r.pid, shrink_at_seals, &r) < 0)
			FAIL("the server ended before it asked for the seals");
		refused(&r, "shrunk and sealed while starting");
	}
	return 0;
}
