/* SPDX-License-Identifier: MIT */
/* Description: another user cannot take an image's attach name to break
 * sharing or to be trusted. The name is an abstract
 * socket, "@urfs/DEV:INO", that any process may bind first; an impostor (a
 * child become nobody) does, before the victim's first server:
 *  - listening: every client of the victim fails at once (under 1 s) with
 *    -EACCES and a message naming the place and the impostor's uid, starts
 *    no server, and sends the impostor nothing (it counts the descriptors it
 *    receives; it answers "ready" to any attach message, so a client that
 *    trusted it would think itself attached);
 *  - bound but not listening (connect says ECONNREFUSED, as when nobody is
 *    there): each client starts one server, which cannot take the name and
 *    refuses its client at once with the reason: one server per client, no
 *    storm of starts;
 *  - listening only once the client has found nobody there and started its
 *    server (the wrapper that counts server starts lets the impostor listen
 *    and waits 0.5 s before the server runs): the server sees the listener is
 *    another user's and refuses its client with -EACCES and the reason.
 * Once the impostor is gone, a client of the image starts its server and
 * works. Needs root (to become nobody); skipped otherwise. */
#include "test_ur_multi.h"

#define IMG "n.sfs"
#define NOBODY 65534
#define GO_FD 9                  /* the wrapper's way to tell the impostor to listen */

struct impostor {
	pid_t pid;
	int quit, rep, go;           /* our ends: close quit to end it; its tally on rep */
};

/* The impostor's body: bind n as nobody, listen now or when a byte comes on
 * go, count connections and received descriptors, answer "ready" to all. */
static void impostor_run(const struct ur_attach_name *n, int listen_now, int go, int quit, int rep)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
		_exit(11);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (const struct sockaddr *)&n->a, n->len) < 0)
		_exit(12);
	int listening = listen_now;
	if (listening && listen(s, 16) < 0)
		_exit(13);
	int32_t tally[2] = { 0, 0 };         /* connections, descriptors received */
	if (write(rep, "b", 1) != 1)
		_exit(14);
	for (;;) {
		struct pollfd pf[2] = { { quit, POLLIN, 0 }, { listening ? s : go, POLLIN, 0 } };
		if (poll(pf, 2, -1) < 0)
			continue;
		if (pf[0].revents)
			break;
		if (!pf[1].revents)
			continue;
		if (!listening) {
			char g;
			if (read(go, &g, 1) != 1 || listen(s, 16) < 0)
				_exit(15);
			listening = 1;
			continue;
		}
		int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		tally[0]++;
		struct pollfd cp = { c, POLLIN, 0 };
		if (poll(&cp, 1, 500) > 0) {
			char buf[64];
			union {
				char b[CMSG_SPACE(sizeof(int) * 8)];
				struct cmsghdr align;
			} cb;
			struct iovec iov = { buf, sizeof(buf) };
			struct msghdr msg;
			memset(&msg, 0, sizeof(msg));
			msg.msg_iov = &iov;
			msg.msg_iovlen = 1;
			msg.msg_control = cb.b;
			msg.msg_controllen = sizeof(cb.b);
			if (recvmsg(c, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) > 0)
				for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
					if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
						int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
						for (int i = 0; i < k; i++) {
							int fd;
							memcpy(&fd, CMSG_DATA(cm) + (size_t)i * sizeof(int), sizeof(int));
							close(fd);
						}
						tally[1] += k;
					}
		}
		struct ur_hello h;
		memset(&h, 0, sizeof(h));
		h.pid = (int32_t)getpid();
		snprintf(h.msg, sizeof(h.msg), "ready");
		(void)send(c, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT);
		close(c);
	}
	if (write(rep, tally, sizeof(tally)) != sizeof(tally))
		_exit(16);
	_exit(0);
}

static struct impostor impostor_start(const struct ur_attach_name *n, int listen_now)
{
	int q[2], r[2], g[2];
	if (pipe2(q, O_CLOEXEC) < 0 || pipe2(r, O_CLOEXEC) < 0 || pipe2(g, O_CLOEXEC) < 0)
		FAIL("pipe");
	struct impostor im = { fork(), q[1], r[0], g[1] };
	if (im.pid < 0)
		FAIL("fork");
	if (im.pid == 0) {
		close(q[1]);
		close(r[0]);
		close(g[1]);
		impostor_run(n, listen_now, g[0], q[0], r[1]);
	}
	close(q[0]);
	close(r[1]);
	close(g[0]);
	char b;
	if (read(im.rep, &b, 1) != 1)
		FAIL("the impostor could not take %s", n->shown);
	return im;
}

/* End the impostor; its tally. */
static void impostor_end(struct impostor *im, int32_t tally[2])
{
	close(im->quit);
	close(im->go);
	if (read(im->rep, tally, 2 * sizeof(int32_t)) != (ssize_t)(2 * sizeof(int32_t)))
		FAIL("no tally from the impostor");
	close(im->rep);
	int st;
	if (waitpid(im->pid, &st, 0) != im->pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("impostor: status %#x", st);
}

/* Server starts so far (lines the wrapper wrote). */
static int starts(void)
{
	char *s = tu_slurp("starts");
	int n = s ? tu_count(s, "x") : 0;
	free(s);
	return n;
}

/* A client of the image: init must fail with want within limit_ms and its
 * message hold each of the needles. */
static void client_fails(const char *what, int want, uint64_t limit_ms, const char *n1, const char *n2)
{
	struct urfs_ring r;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	uint64_t t0 = mp_now_ms();
	int e = urfs_queue_init_params(8, &r, &p);
	uint64_t took = mp_now_ms() - t0;
	printf("%s: %s after %llu ms: %s\n", what, e < 0 ? strerror(-e) : "attached", (unsigned long long)took,
	       p.errmsg);
	if (e == 0)
		FAIL("%s: the client trusted the impostor's place (server pid %d)", what, r.server_pid);
	if (e != want)
		FAIL("%s: %s, want %s", what, strerror(-e), strerror(-want));
	if (took > limit_ms)
		FAIL("%s: failing took %llu ms, more than %llu", what, (unsigned long long)took,
		     (unsigned long long)limit_ms);
	if (!strstr(p.errmsg, n1) || (n2 && !strstr(p.errmsg, n2)))
		FAIL("%s: the message '%s' does not name '%s'%s%s", what, p.errmsg, n1, n2 ? " and " : "",
		     n2 ? n2 : "");
}

int main(void)
{
	alarm(120);
	if (geteuid() != 0) {
		printf("not root: cannot become another user\n");
		return 77;
	}
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct ur_attach_name n = mp_name(IMG);
	char uid[32];
	snprintf(uid, sizeof(uid), "uid %d", NOBODY);
	int32_t tally[2];

	/* Listening first: refused at the client, nothing sent, no server. */
	const char *srv = tu_wrap_server("count.sh", "echo x >> starts\n", "");
	if (!srv)
		FAIL("UR_SERVER is not set");
	struct impostor im = impostor_start(&n, 1);
	for (int i = 0; i < 3; i++)
		client_fails("impostor listening", -EACCES, 1000, n.shown, uid);
	impostor_end(&im, tally);
	printf("impostor listening: %d connections, %d descriptors received; %d servers started\n",
	       tally[0], tally[1], starts());
	if (tally[1] != 0)
		FAIL("a client handed the impostor %d descriptors", tally[1]);
	if (starts() != 0)
		FAIL("%d servers started for clients that should have failed at the socket", starts());

	/* Bound, not listening: one server per client, each refusing at once. */
	im = impostor_start(&n, 0);
	for (int i = 0; i < 3; i++)
		client_fails("impostor bound, not listening", -EADDRINUSE, 2000, n.shown, "does not listen");
	impostor_end(&im, tally);
	printf("impostor bound, not listening: %d servers started for 3 clients\n", starts());
	if (starts() != 3)
		FAIL("%d servers started for 3 clients, want 3", starts());

	/* Listening only after the client found nobody: the server refuses. */
	im = impostor_start(&n, 0);
	if (dup2(im.go, GO_FD) != GO_FD)                /* inherited by the wrapper */
		FAIL("dup2");
	setenv("UR_SERVER", srv, 1);
	tu_wrap_server("count_go.sh", "echo x >> starts\necho g >&9\nsleep 0.5\n", "");
	client_fails("impostor listening after the client looked", -EACCES, 3000, n.shown, uid);
	close(GO_FD);
	impostor_end(&im, tally);
	if (tally[1] != 0)
		FAIL("the impostor received %d descriptors", tally[1]);
	if (starts() != 4)
		FAIL("%d servers started, want 4", starts());

	/* The impostor gone, the image is shared again. */
	setenv("UR_SERVER", srv, 1);
	struct urfs_ring a, b;
	mp_ring(&a, IMG, 0);
	mp_ring(&b, IMG, 0);
	CHECK_EQ(a.server_pid, b.server_pid);
	CHECK_EQ(starts(), 4);                          /* the wrapper is not used any more */
	int fd = mp_open(&a, "f", URFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(mp_pwrite(&a, fd, "hello", 5, 0), 5);
	int fd2 = mp_open(&b, "f", 0);
	char got[5];
	CHECK(fd2 >= 0);
	CHECK_EQ(mp_pread(&b, fd2, got, 5, 0), 5);
	CHECK(!memcmp(got, "hello", 5));
	pid_t spid = a.server_pid;
	urfs_queue_exit(&b);
	urfs_queue_exit(&a);
	mp_server_gone(spid, IMG, 10000);
	FSCK_CLEAN(IMG);
	printf("the impostor gone, two clients share one server again\n");
	return 0;
}
