/* SPDX-License-Identifier: MIT */
/* Description: read-only clients that start at the same moment share one
 * server. Read-only mounts share the image's lock, so several
 * read-only servers can mount it at once; the one that binds the image's
 * socket first (under the socket directory's lock) serves, and a later one
 * sends its client there ("in use by pid N", which the library follows)
 * instead of taking the name. Ten rounds of six processes racing to open a
 * read-only ring: every client of a round reports the same server pid and
 * reads the file right, the server ends after the last one with its socket
 * removed: never several servers per round, each a spinner. */
#include "test_ur_multi.h"

#define IMG "ro.sfs"
#define KIDS 6
#define ROUNDS 10
#define TEXT "read-only clients share one server"

static void kid(int go_fd, int rep_fd, int run_fd)
{
	char b;
	if (read(go_fd, &b, 1) != 1)
		FAIL("go");
	struct urfs_ring r;
	mp_ring(&r, IMG, URFS_SETUP_RDONLY);
	int fd = mp_open(&r, "f", URFS_O_RDONLY);
	if (fd < 0)
		FAIL("open: %s", strerror(-fd));
	char buf[64];
	memset(buf, 0, sizeof(buf));
	int n = mp_pread(&r, fd, buf, sizeof(buf), 0);
	if (n != (int)strlen(TEXT) || memcmp(buf, TEXT, strlen(TEXT)))
		FAIL("read %d '%.*s'", n, n > 0 ? n : 0, buf);
	int32_t pid = r.server_pid;
	if (write(rep_fd, &pid, sizeof(pid)) != sizeof(pid))
		FAIL("report");
	if (read(run_fd, &b, 1) != 1)                   /* all rings live at once */
		FAIL("run");
	urfs_queue_exit(&r);
	exit(0);
}

int main(void)
{
	alarm(120);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		FAIL("subreaper");
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct urfs_ring w;
	mp_ring(&w, IMG, 0);
	int fd = mp_open(&w, "f", URFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(mp_pwrite(&w, fd, TEXT, strlen(TEXT), 0), (int)strlen(TEXT));
	CHECK_EQ(mp_fd_op(&w, 1, fd), 0);
	pid_t wpid = w.server_pid;
	urfs_queue_exit(&w);
	mp_server_gone(wpid, IMG, 10000);
	fflush(stdout);
	for (int round = 0; round < ROUNDS; round++) {
		int go[2], rep[2], run[2];
		pid_t kids[KIDS];
		if (pipe(go) < 0 || pipe(rep) < 0 || pipe(run) < 0)
			FAIL("pipe");
		for (int i = 0; i < KIDS; i++) {
			if ((kids[i] = fork()) < 0)
				FAIL("fork");
			if (kids[i] == 0) {
				close(go[1]);
				close(rep[0]);
				close(run[1]);
				kid(go[0], rep[1], run[0]);
			}
		}
		close(go[0]);
		close(rep[1]);
		close(run[0]);
		char gos[KIDS];
		memset(gos, 'g', sizeof(gos));
		if (write(go[1], gos, KIDS) != KIDS)     /* all at once */
			FAIL("go");
		int32_t pids[KIDS];
		int nserv = 0;
		for (int i = 0; i < KIDS; i++) {
			if (read(rep[0], &pids[i], sizeof(pids[i])) != sizeof(pids[i]))
				FAIL("round %d: a client did not start (%d of %d reported)", round, i, KIDS);
			int seen = 0;
			for (int j = 0; j < i; j++)
				seen |= pids[j] == pids[i];
			nserv += !seen;
		}
		if (write(run[1], gos, KIDS) != KIDS)
			FAIL("run");
		for (int i = 0; i < KIDS; i++) {
			int st;
			if (waitpid(kids[i], &st, 0) != kids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
				FAIL("round %d: client %d ended with status %#x", round, i, st);
		}
		if (nserv != 1)
			FAIL("round %d: %d read-only servers for one image and %d clients", round, nserv, KIDS);
		mp_server_gone(pids[0], IMG, 10000);
		close(go[1]);
		close(rep[0]);
		close(run[1]);
	}
	printf("%d rounds of %d read-only clients starting at once: one server each round\n",
	       ROUNDS, KIDS);
	return 0;
}
