/* Description: lifetimes of client and server. The server killed mid-run:
 * the client's wait and submit return -EPIPE instead of hanging (within 5 s). The client
 * SIGKILLed (server idle or busy): the server exits promptly, no orphan (the
 * test is a subreaper and reaps it). A missing server binary: a clear -ENOENT
 * naming simplefs_server. Normal exit reaps the server. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ur_fs.h"

#include "testutil.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void init(struct urfs_ring *r, unsigned idle_us)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.flags = URFS_SETUP_NOIMAGE | URFS_SETUP_IDLE;
	p.idle_us = idle_us;
	int e = urfs_queue_init_params(8, r, &p);
	if (e < 0)
		FAIL("init: %s (%s)", strerror(-e), p.errmsg);
}

static int nop(struct urfs_ring *r)
{
	struct urfs_sqe *sqe = urfs_get_sqe(r);
	if (!sqe)
		return -EBUSY;
	urfs_prep_nop(sqe);
	int s = urfs_submit(r);
	if (s < 0)
		return s;
	/* bounded: a client that never notices a dead server fails here, not at the alarm */
	struct urfs_cqe *cqe;
	struct timespec ts = { 5, 0 };
	int w = urfs_wait_cqe_timeout(r, &cqe, &ts);
	if (w < 0)
		return w;
	urfs_cqe_seen(r, cqe);
	return 0;
}

/* A client in a child process, killed with SIGKILL; the server must go. */
static void client_killed(int busy)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		FAIL("pipe");
	pid_t child = fork();
	if (child < 0)
		FAIL("fork");
	if (child == 0) {
		struct urfs_ring r;
		init(&r, busy ? 100000 : 0);
		if (write(pfd[1], &r.server_pid, sizeof(int)) != sizeof(int))
			_exit(3);
		for (;;) {
			if (busy)
				nop(&r);
			else
				pause();
		}
	}
	close(pfd[1]);
	int spid = 0;
	if (read(pfd[0], &spid, sizeof(spid)) != sizeof(spid) || spid <= 0)
		FAIL("child did not start a server");
	close(pfd[0]);
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* We are a subreaper: the orphaned server is our child now. */
	double t0 = now();
	for (;;) {
		int st;
		pid_t w = waitpid(spid, &st, WNOHANG);
		if (w == spid) {
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				FAIL("server ended badly: status %d", st);
			break;
		}
		if (w < 0)
			FAIL("server %d not reparented to us: %s", spid, strerror(errno));
		if (now() - t0 > 5)
			FAIL("server %d still running 5 s after its client was killed (busy=%d)", spid, busy);
		nanosleep(&ts, NULL);
	}
}

int main(void)
{
	struct urfs_ring r;
	alarm(60);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		FAIL("subreaper");

	/* 1. normal: exit reaps the server */
	init(&r, 1000);
	if (nop(&r) < 0)
		FAIL("nop");
	int spid = r.server_pid;
	urfs_queue_exit(&r);
	if (kill(spid, 0) == 0 || errno != ESRCH)
		FAIL("server %d not reaped by queue_exit", spid);

	/* 2. server killed while sleeping, then while spinning */
	for (int polling = 0; polling < 2; polling++) {
		init(&r, polling ? 1000000 : 0);
		if (nop(&r) < 0)
			FAIL("nop");
		kill(r.server_pid, SIGKILL);
		double t0 = now();
		int e = nop(&r);
		if (e != -EPIPE)
			FAIL("nop after server death: %d (%s), want -EPIPE", e, strerror(-e));
		struct urfs_sqe *sqe = urfs_get_sqe(&r);
		if (sqe) {
			urfs_prep_nop(sqe);
			if ((e = urfs_submit(&r)) != -EPIPE)
				FAIL("submit after death: %d", e);
		}
		struct urfs_cqe *cqe;
		if ((e = urfs_wait_cqe(&r, &cqe)) != -EPIPE)
			FAIL("wait after death: %d", e);
		if (now() - t0 > 5)
			FAIL("too slow to notice the dead server");
		urfs_queue_exit(&r);
	}

	/* 3. client killed: server idle (asleep), and busy */
	client_killed(0);
	client_killed(1);

	/* 4. no server binary */
	setenv("UR_SERVER", "/nonexistent/simplefs_server", 1);
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.flags = URFS_SETUP_NOIMAGE;
	int e = urfs_queue_init_params(8, &r, &p);
	if (e != -ENOENT)
		FAIL("missing server: %d, want -ENOENT", e);
	if (!strstr(p.errmsg, "simplefs_server"))
		FAIL("message does not name the server: '%s'", p.errmsg);
	printf("ok\n");
	return 0;
}
