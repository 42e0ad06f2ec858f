/* SPDX-License-Identifier: MIT */
/* Description: one simplefs_server, many client processes. For n
 * = 2, 4 and 8, n processes start at the same moment on one image (racing to
 * start the server: they must all end on one server, the same pid), each
 * does verified random reads and writes in batches on its private file and
 * its stripe of a shared file, fsyncs and leaves; afterwards the server has
 * exited 0 (clean unmount) with its socket removed, the image is fsck-clean
 * and every file is byte for byte what the replayed workload wrote. Then 4
 * clients again, one of them killed (SIGKILL) mid-run: the other three finish
 * and verify, the server releases the dead client's files and exits cleanly
 * after the last one. Then the same two runs of 4 on an O_DIRECT image
 * (whole-page I/O through the server's kernel AIO). */
#include "test_ur_multi.h"

#define IMG "m.sfs"
#define STEPS 400u

/* n clients (the one at index victim, if >= 0, runs until killed). */
static void run(unsigned n, int victim)
{
	int rep[2], go[2], runp[2];
	pid_t kids[8];
	unlink(IMG);                      /* a fresh image for each run */
	int r = sfs_format(IMG, 64ull << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	fflush(stdout);                   /* not once per child */
	if (pipe(rep) < 0 || pipe(go) < 0 || pipe(runp) < 0)
		FAIL("pipe");
	for (unsigned i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			FAIL("fork");
		if (kids[i] == 0) {
			close(rep[0]);
			close(go[1]);
			close(runp[1]);
			mp_child(IMG, n, i, (int)i == victim ? 0 : STEPS, rep[1], go[0], runp[0]);
		}
	}
	close(rep[1]);
	close(go[0]);
	close(runp[0]);
	char gos[8];
	memset(gos, 'g', sizeof(gos));
	if (write(go[1], gos, n) != (ssize_t)n)       /* all at once */
		FAIL("go");
	close(go[1]);
	int32_t spid = 0;
	for (unsigned i = 0; i < n; i++) {
		int32_t p;
		if (read(rep[0], &p, sizeof(p)) != sizeof(p))
			FAIL("n=%u: a client did not start (%u of %u reported)", n, i, n);
		if (i && p != spid)
			FAIL("n=%u: two servers on one image: pids %d and %d", n, (int)spid, (int)p);
		spid = p;
	}
	close(rep[0]);
	if (write(runp[1], gos, n) != (ssize_t)n)     /* every ring is there: work */
		FAIL("run");
	close(runp[1]);
	if (victim >= 0) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		kill(kids[victim], SIGKILL);
	}
	for (unsigned i = 0; i < n; i++) {
		int st;
		if (waitpid(kids[i], &st, 0) != kids[i])
			FAIL("waitpid");
		if ((int)i == victim) {
			if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
				FAIL("the victim ended with status %#x before it was killed", st);
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			FAIL("n=%u: client %u failed (status %#x)", n, i, st);
		}
	}
	mp_server_gone(spid, IMG, 10000);
	mp_verify(IMG, n, STEPS, victim);
	printf("n=%u%s: one server (pid %d), files verified, fsck clean\n", n,
	       victim >= 0 ? " with one client killed" : "", (int)spid);
}

int main(void)
{
	alarm(240);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		FAIL("subreaper");
	run(2, -1);
	run(4, -1);
	run(8, -1);
	run(4, 3);
	/* O_DIRECT: whole-page reads and overwrites go by kernel AIO, each
	 * ring its own context; metadata, syncs and sync writes of one client
	 * wait for every client's AIO; the killed client's AIO is waited for
	 * before its region is unmapped. */
	char why[128];
	if (!tu_have_odirect(".", why, sizeof(why))) {
		tu_part_skip("O_DIRECT", "many clients on an O_DIRECT image", why);
		return 0;
	}
	mp_flags = URFS_SETUP_DIRECT;
	run(4, -1);
	run(4, 1);
	tu_part_ran("O_DIRECT", "many clients on an O_DIRECT image");
	return 0;
}
