/* SPDX-License-Identifier: MIT */
/* Description: lifetimes of client and server. The server killed mid-run:
 * the client's wait, submit and buffer unregistration return -EPIPE instead
 * of hanging (within 5 s). The client
 * SIGKILLed (server idle or busy): the server exits promptly, no orphan (the
 * test is a subreaper and reaps it). A missing server binary: a clear -ENOENT
 * naming simplefs_server. SIGINT leaves the server serving; normal exit
 * reaps it. A fake server (this
 * program run again as the "server") that answers the start-up with hostile
 * hello values: an err in -4095..-1 comes back as that -errno with the
 * server's message, anything else (-4096, INT32_MIN, a positive number) as
 * -EIO, never as success or a wild value (ABI.md: err is 0 or -errno); one
 * that exits without a hello (-EPIPE, "exited during start-up"); one that
 * signals the client before its refusal, whose handler opens descriptors:
 * the failed start closes none of them (the server's end of the socket
 * pair is closed once); a
 * server that cannot be started (a directory); each failed start leaves no
 * descriptor or region mapping behind. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ur_abi.h"
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

/* Run as the ring's server (argv[1] "--client"): answer the start-up with the
 * hello err given in $URTEST_FAKE_ERR and a message that is not terminated. */
static int fake_server(void)
{
	if (!strcmp(getenv("URTEST_FAKE_ERR"), "none"))
		return 0;               /* exits without a word */
	if (!strcmp(getenv("URTEST_FAKE_ERR"), "signal")) {
		/* SIGUSR1 to the client (the liveness socket's peer), pending
		 * there before our refusal can be read: its handler runs first */
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		if (getsockopt(UR_FD_LIVE, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || kill(cr.pid, SIGUSR1) < 0)
			return 2;
		setenv("URTEST_FAKE_ERR", "-30", 1);        /* -EROFS */
	}
	struct ur_hello h;
	memset(&h, 'x', sizeof(h));
	h.err = (int32_t)strtoll(getenv("URTEST_FAKE_ERR"), NULL, 0);
	h.pid = (int32_t)getpid();
	return send(UR_FD_LIVE, &h, sizeof(h), 0) == (ssize_t)sizeof(h) ? 0 : 2;
}

/* Start a ring (no image) on the server program given, the fake one (this
 * program) answering with $URTEST_FAKE_ERR = fake: what the setup returns. */
static int start_on(const char *server, const char *fake, struct urfs_params *p)
{
	if (fake)
		setenv("URTEST_FAKE_ERR", fake, 1);
	struct urfs_ring r;
	memset(p, 0, sizeof(*p));
	p->flags = URFS_SETUP_NOIMAGE;
	p->server = server;
	int e = urfs_queue_init_params(8, &r, p);
	if (e == 0)
		urfs_queue_exit(&r);
	unsetenv("URTEST_FAKE_ERR");
	return e;
}

/* The descriptors a signal handler opened while the ring was starting. */
#define SIG_FDS 16
static int sig_fd[SIG_FDS];

static void on_usr1(int sig)
{
	(void)sig;
	for (int i = 0; i < SIG_FDS; i++)
		sig_fd[i] = dup(2);
}

/* A failed start closes its descriptors and only those: the server's end of
 * the socket pair, closed once the server has it, is not closed again on
 * the way out, where its number may be another's by then (here a signal
 * handler's, run while the setup waits for the hello). */
static void start_closes_only_its_own(void)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
	for (int i = 0; i < SIG_FDS; i++)
		sig_fd[i] = -1;
	struct urfs_params p;
	int e = start_on("/proc/self/exe", "signal", &p);
	CHECK(sigaction(SIGUSR1, &old, NULL) == 0);
	if (e != -EROFS)
		FAIL("fake server refusing with -EROFS after a signal: setup returned %d", e);
	for (int i = 0; i < SIG_FDS; i++) {
		if (sig_fd[i] < 0)
			FAIL("the signal handler did not run (dup: %d)", sig_fd[i]);
		if (fcntl(sig_fd[i], F_GETFD) < 0)
			FAIL("a failed start closed fd %d, which a signal handler opened while it waited",
			     sig_fd[i]);
		close(sig_fd[i]);
	}
}

/* Open descriptors, and mappings of a ring's region, of this process. */
static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	CHECK(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int count_region_maps(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "re");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "urfs-ring") != NULL;
	fclose(f);
	return n;
}

static void hostile_hello(void)
{
	int fds0 = count_fds(), maps0 = count_region_maps();
	static const struct { long long err; int want; } t[] = {
		{ -4095, -4095 }, { -EROFS, -EROFS }, { -1, -1 },
		{ -4096, -EIO }, { INT32_MIN, -EIO }, { 1, -EIO }, { 4095, -EIO }, { INT32_MAX, -EIO },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct urfs_params p;
		char v[32];
		snprintf(v, sizeof(v), "%lld", t[i].err);
		int e = start_on("/proc/self/exe", v, &p);
		if (e != t[i].want)
			FAIL("server hello err %lld: setup returned %d, want %d", t[i].err, e, t[i].want);
		/* the server's reason, cut to the buffer and terminated */
		if (strspn(p.errmsg, "x") < 100 || p.errmsg[strspn(p.errmsg, "x")] != '\0')
			FAIL("server hello err %lld: message '%.40s...' is not the server's", t[i].err, p.errmsg);
	}
	start_closes_only_its_own();
	/* A server that exits before its hello: -EPIPE and why, at once (not the
	 * start-up timeout's -ETIMEDOUT). */
	struct urfs_params p;
	int e = start_on("/proc/self/exe", "none", &p);
	if (e != -EPIPE || !strstr(p.errmsg, "exited during start-up"))
		FAIL("a server that exits without a hello: %d '%s', want -EPIPE", e, p.errmsg);
	/* A "server" that cannot be started (a directory passes access(X_OK)). */
	if ((e = start_on("/", NULL, &p)) >= 0)
		FAIL("a directory as the server started a ring");
	/* Every failed start gave back what it took. */
	if (count_fds() != fds0 || count_region_maps() != maps0)
		FAIL("failed starts leaked: %d descriptors (was %d), %d region mappings (was %d)",
		     count_fds(), fds0, count_region_maps(), maps0);
}

int main(int argc, char **argv)
{
	struct urfs_ring r;
	if (argc > 1 && !strcmp(argv[1], "--client") && getenv("URTEST_FAKE_ERR"))
		return fake_server();
	alarm(60);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		FAIL("subreaper");

	/* 1. normal: exit reaps the server; SIGINT (^C) does not end it before
	 * (ABI.md: ignored, the server follows its client out) */
	init(&r, 1000);
	if (nop(&r) < 0)
		FAIL("nop");
	int spid = r.server_pid;
	if (kill(spid, SIGINT) < 0)
		FAIL("SIGINT to the server");
	struct timespec pause = { 0, 100 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	int e0 = nop(&r);
	if (e0 < 0)
		FAIL("nop after SIGINT to the server: %s", strerror(-e0));
	urfs_queue_exit(&r);
	if (kill(spid, 0) == 0 || errno != ESRCH)
		FAIL("server %d not reaped by queue_exit", spid);

	/* 2. server killed while sleeping, then while spinning */
	for (int polling = 0; polling < 2; polling++) {
		init(&r, polling ? 1000000 : 0);
		if (nop(&r) < 0)
			FAIL("nop");
		struct iovec bv = { NULL, 4096 };
		if (urfs_register_buffers(&r, &bv, 1) < 0)
			FAIL("register");
		kill(r.server_pid, SIGKILL);
		double t0 = now();
		int e = urfs_unregister_buffers(&r);    /* first: nothing else queued */
		if (e != -EPIPE)
			FAIL("unregister after death: %d, want -EPIPE", e);
		e = nop(&r);
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

	/* 4. a server whose hello is hostile */
	hostile_hello();

	/* 5. no server binary */
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
