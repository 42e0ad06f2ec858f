/* SPDX-License-Identifier: MIT */
/*
 * ring_setup.c - libur_fs's ring setup and teardown (urfs_queue_init*,
 * urfs_queue_exit): create the shared region and its doorbells, attach it
 * to the simplefs_server already serving the image (its abstract Unix
 * socket, whose listener must be of this user or root: common/attach.h) or
 * start one, and leave it (the server's last word, within a bound).
 * Submitting and completing on the ring is ring.c's.
 *
 * Must never: print, leave errno as the error channel, block forever when the
 * server is gone; hand a ring's descriptors to a listener of another user;
 * start a server again while another of the image's servers is there; or
 * signal a server that others may share.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"
#include "../common/attach.h"

#ifndef UR_LIBEXECDIR
#define UR_LIBEXECDIR "/usr/local/libexec/urfs"
#endif

#define DEFAULT_IDLE_US 1000u
#define DEFAULT_SPIN_US 50u
#define DEFAULT_STAGING (4u << 20)
#define DEFAULT_BUFAREA (4u << 20)
#define READY_TIMEOUT_MS 60000
#define EXIT_TIMEOUT_MS 120000

extern char **environ;

static uint32_t roundup_pow2(uint32_t v)
{
	uint32_t r = 1;
	while (r < v)
		r <<= 1;
	return r;
}

/* ---------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------- */
static int exec_ok(const char *p)
{
	return access(p, X_OK) == 0;
}

static int beside(const char *file, char *out, size_t outlen)
{
	const char *slash = strrchr(file, '/');
	if (!slash)
		return 0;
	int n = snprintf(out, outlen, "%.*s/simplefs_server", (int)(slash - file), file);
	return n > 0 && (size_t)n < outlen && exec_ok(out);
}

static int find_server(const char *given, char *out, size_t outlen)
{
	const char *e = given ? given : getenv("UR_SERVER");
	if (e && *e) {
		snprintf(out, outlen, "%s", e);
		return exec_ok(out) ? 0 : -ENOENT;
	}
	Dl_info info;
	if (dladdr((void *)find_server, &info) && info.dli_fname && beside(info.dli_fname, out, outlen))
		return 0;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		if (beside(self, out, outlen))
			return 0;
	}
	snprintf(out, outlen, "%s/simplefs_server", UR_LIBEXECDIR);
	return exec_ok(out) ? 0 : -ENOENT;
}

/* Wait for the server; its exit status (0: clean unmount), or -1. */
static int reap(pid_t pid)
{
	int st;
	pid_t r;
	while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (r != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Start the server with the four descriptors at fixed numbers. */
static int spawn_server(const char *path, char *const argv[], const int fds[4], pid_t *pid)
{
	int hi[4] = { -1, -1, -1, -1 };
	int r = 0;
	for (int i = 0; i < 4; i++) {
		hi[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
		if (hi[i] < 0) {
			r = -errno;
			goto out;
		}
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	for (int i = 0; i < 4; i++)
		posix_spawn_file_actions_adddup2(&fa, hi[i], UR_FD_REGION + i);
	sigset_t none, def;
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGINT);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	r = -posix_spawn(pid, path, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
out:
	for (int i = 0; i < 4; i++)
		if (hi[i] >= 0)
			close(hi[i]);
	return r;
}

/* The server's word on live (its hello, or its last word): 0 and *h, or
 * -errno and why in errmsg. */
static int wait_hello(int live, struct ur_hello *h, char *errmsg, size_t errlen)
{
	struct pollfd pf = { .fd = live, .events = POLLIN };
	int pr;
	do
		pr = poll(&pf, 1, READY_TIMEOUT_MS);
	while (pr < 0 && errno == EINTR);
	ssize_t n = pr > 0 ? recv(live, h, sizeof(*h), MSG_DONTWAIT) : -1;
	if (n != (ssize_t)sizeof(*h)) {
		snprintf(errmsg, errlen, "%s", pr == 0 ? "the server did not start in time"
			 : "the server exited during start-up");
		return pr == 0 ? -ETIMEDOUT : -EPIPE;
	}
	h->msg[sizeof(h->msg) - 1] = '\0';
	return 0;
}

/*
 * Attach the ring (fds: region memfd, SQ and CQ doorbells) to the server
 * listening at the image's attach name n: 0 with *live (the connection, now
 * the liveness socket) and the server's hello in *h (h->err may say no);
 * -ECONNREFUSED or -ECONNRESET when no server is there (or it is just
 * leaving); another -errno, with why in errmsg, when the place cannot be
 * used: -EACCES when the listener is another user's (nothing is sent to it).
 */
static int try_attach(const struct ur_attach_name *n, const int fds[3], uint32_t aflags, int *live,
		      struct ur_hello *h, char *errmsg, size_t errlen)
{
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -errno;
	int r = 0;
	if (connect(c, (const struct sockaddr *)&n->a, n->len) < 0) {
		r = -errno;
		if (r != -ECONNREFUSED)
			snprintf(errmsg, errlen, "cannot connect to the attach socket %s: %s", n->shown,
				 strerror(-r));
		goto out;
	}
	/* An abstract name is anybody's to take: the region and the doorbells
	 * go only to a listener of this user (or root). */
	struct ucred cr = { 0, 0, 0 };
	if ((r = ur_attach_peer(c, &cr)) < 0) {
		snprintf(errmsg, errlen, "the attach socket %s of this image is held by pid %d of uid %u, "
			 "another user: refused (docs/ABI.md, many clients)", n->shown, (int)cr.pid,
			 (unsigned)cr.uid);
		goto out;
	}
	struct ur_attach m = { UR_ABI_MAGIC, UR_ABI_VERSION, aflags, 0 };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} cb;
	memset(&cb, 0, sizeof(cb));
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr msg;
	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cb.buf;
	msg.msg_controllen = sizeof(cb.buf);
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * 3);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * 3);
	if (sendmsg(c, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
		r = errno == EPIPE ? -ECONNRESET : -errno;
		if (r != -ECONNRESET)
			snprintf(errmsg, errlen, "cannot attach at %s: %s", n->shown, strerror(-r));
		goto out;
	}
	if (wait_hello(c, h, errmsg, errlen) < 0) {
		r = -ECONNRESET;             /* the server left meanwhile */
		goto out;
	}
	*live = c;
	return 0;
out:
	close(c);
	return r;
}

/* Does the lock-holder message name a running simplefs_server of this user
 * ("in use by pid N")? Its pid: a server is starting or leaving, attach
 * again shortly. (Its command line, not its name: a server run under
 * valgrind counts too.) Else 0. */
static pid_t holder_is_server(const char *msg)
{
	const char *p = strstr(msg, "in use by pid ");
	if (!p)
		return 0;
	pid_t pid = atoi(p + 14);
	char path[64], cmd[4096];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (pid <= 0 || stat(path, &st) < 0 || st.st_uid != geteuid())
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, cmd, sizeof(cmd));
	close(fd);
	return n > 0 && memmem(cmd, (size_t)n, "simplefs_server", 15) != NULL ? pid : 0;
}

/* Is process pid in another network namespace than ours (so that the
 * abstract attach name it listens on is not the one we see)? */
static int other_netns(pid_t pid)
{
	char path[64], a[64] = "", b[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	ssize_t na = readlink(path, a, sizeof(a) - 1);
	ssize_t nb = readlink("/proc/self/ns/net", b, sizeof(b) - 1);
	return na > 0 && nb > 0 && strcmp(a, b) != 0;
}

/* Is process pid still there (not gone, not a zombie)? */
static int alive(pid_t pid)
{
	char path[64], st[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, st, sizeof(st) - 1);
	close(fd);
	st[n > 0 ? n : 0] = '\0';
	const char *rp = strrchr(st, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

static void free_priv(struct urfs__priv *P)
{
	if (!P)
		return;
	free(P->pend);
	free(P->recs);
	free(P);
}

UR_EXPORT int urfs_queue_init_params(unsigned entries, struct urfs_ring *ring, struct urfs_params *p)
{
	struct urfs_params defp;
	if (!p) {
		memset(&defp, 0, sizeof(defp));
		p = &defp;
	}
	p->errmsg[0] = '\0';
	p->server_pid = 0;
	memset(ring, 0, sizeof(*ring));
	ring->sq_fd = ring->cq_fd = ring->live_fd = -1;
	if (entries == 0 || entries > UR_MAX_ENTRIES) {
		snprintf(p->errmsg, sizeof(p->errmsg), "%u SQ entries: 1 .. %u", entries, UR_MAX_ENTRIES);
		return -EINVAL;
	}
	uint32_t sqn = roundup_pow2(entries);
	/* the default CQ is twice the SQ, capped at the limit (ABI.md) */
	uint32_t cqn = p->cq_entries ? roundup_pow2(p->cq_entries)
				     : sqn < UR_MAX_ENTRIES ? 2 * sqn : sqn;
	if (cqn < sqn || cqn > UR_MAX_ENTRIES) {
		snprintf(p->errmsg, sizeof(p->errmsg), "%u CQ entries: at least the SQ's %u, at most %u",
			 p->cq_entries, sqn, UR_MAX_ENTRIES);
		return -EINVAL;
	}
	uint64_t stage = align_up(p->staging_size ? p->staging_size : DEFAULT_STAGING, 4096);
	uint64_t bufa = align_up(p->buf_area_size ? p->buf_area_size : DEFAULT_BUFAREA, 4096);
	if (stage > (1ull << 40) || bufa > (1ull << 40)) {
		snprintf(p->errmsg, sizeof(p->errmsg), "%s of %llu bytes: at most 1 TiB",
			 stage > (1ull << 40) ? "staging area" : "buffer area",
			 (unsigned long long)(stage > (1ull << 40) ? stage : bufa));
		return -EINVAL;
	}

	struct ur_region_hdr g;
	memset(&g, 0, sizeof(g));
	g.magic = UR_ABI_MAGIC;
	g.version = UR_ABI_VERSION;
	g.sq_entries = sqn;
	g.cq_entries = cqn;
	g.sq_ctl_off = 256;
	g.cq_ctl_off = 512;
	g.sqes_off = 1024;
	g.cqes_off = align_up(g.sqes_off + (uint64_t)sqn * sizeof(struct ur_sqe), 64);
	g.data_off = align_up(g.cqes_off + (uint64_t)cqn * sizeof(struct ur_cqe), 4096);
	g.data_size = stage + bufa;
	g.bufs_off = g.data_off + stage;
	g.bufs_size = bufa;
	g.size = g.data_off + g.data_size;
	g.idle_us = (p->flags & URFS_SETUP_IDLE) ? p->idle_us : (p->idle_us ? p->idle_us : DEFAULT_IDLE_US);

	struct urfs__priv *P = calloc(1, sizeof(*P));
	if (!P) {
		snprintf(p->errmsg, sizeof(p->errmsg), "out of memory");
		return -ENOMEM;
	}
	P->memfd = -1;
	P->npend = sqn + cqn;
	P->pend = calloc(P->npend, sizeof(*P->pend));
	P->rmask = roundup_pow2(P->npend) - 1;
	P->recs = calloc(P->rmask + 1, sizeof(*P->recs));
	int r;
	int sv[2] = { -1, -1 };
	pid_t pid = -1;
	uint8_t *base = MAP_FAILED;
	if (!P->pend || !P->recs) {
		r = -ENOMEM;
		snprintf(p->errmsg, sizeof(p->errmsg), "out of memory");
		goto err;
	}
	for (uint32_t i = 0; i < P->npend; i++)
		P->pend[i].next = i + 1 < P->npend ? i + 1 : NONE;
	P->free_head = 0;
	P->st_base = g.data_off;
	P->st_size = stage;
	P->bufs_off = g.bufs_off;
	P->bufs_size = bufa;
	P->data_off = g.data_off;
	P->data_size = g.data_size;
	P->wait_spin_ns = (uint64_t)(p->wait_spin_us ? p->wait_spin_us : DEFAULT_SPIN_US) * 1000u;
	P->spin_cur = P->wait_spin_ns;

	P->memfd = memfd_create("urfs-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (P->memfd < 0 || ftruncate(P->memfd, (off_t)g.size) < 0 ||
	    fcntl(P->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		r = -errno;
		snprintf(p->errmsg, sizeof(p->errmsg), "cannot create the shared region (%llu bytes): %s",
			 (unsigned long long)g.size, strerror(-r));
		goto err;
	}
	base = mmap(NULL, g.size, PROT_READ | PROT_WRITE, MAP_SHARED, P->memfd, 0);
	if (base == MAP_FAILED) {
		r = -errno;
		snprintf(p->errmsg, sizeof(p->errmsg), "cannot map the shared region (%llu bytes): %s",
			 (unsigned long long)g.size, strerror(-r));
		goto err;
	}
	memcpy(base, &g, sizeof(g));
	ring->region = base;
	ring->region_size = g.size;
	ring->sq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ring->cq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ring->sq_fd < 0 || ring->cq_fd < 0) {
		r = -errno;
		snprintf(p->errmsg, sizeof(p->errmsg), "cannot create the doorbells (eventfd): %s", strerror(-r));
		goto err;
	}

	char spath[PATH_MAX];
	r = find_server(p->server, spath, sizeof(spath));
	if (r < 0 && (p->server || (getenv("UR_SERVER") && *getenv("UR_SERVER"))))
		snprintf(p->errmsg, sizeof(p->errmsg), "simplefs_server not found: %.150s (named by %s) "
			 "is not an executable file", spath, p->server ? "urfs_params.server" : "$UR_SERVER");
	else if (r < 0)
		snprintf(p->errmsg, sizeof(p->errmsg), "simplefs_server not found (looked beside "
			 "libur_fs.so, beside the program and at %.150s)", spath);
	if (r < 0)
		goto err;
	const char *image = p->image;
	if (!image) {
		const char *e = getenv("SFS_IMAGE");
		image = e && *e ? e : "disk.sfs";
	}
	char *argv[16];
	int a = 0;
	argv[a++] = spath;
	argv[a++] = (char *)"--client";
	if (p->flags & URFS_SETUP_NOIMAGE) {
		argv[a++] = (char *)"--backend";
		argv[a++] = (char *)"none";
	} else {
		argv[a++] = (char *)"--image";
		argv[a++] = (char *)image;
	}
	if (p->flags & URFS_SETUP_CREATE)
		argv[a++] = (char *)"--create";
	if (p->flags & URFS_SETUP_RDONLY)
		argv[a++] = (char *)"--rdonly";
	if (p->flags & URFS_SETUP_DIRECT)
		argv[a++] = (char *)"--direct";
	if (p->flags & URFS_SETUP_EXCL)
		argv[a++] = (char *)"--exclusive";
	argv[a] = NULL;
	uint32_t aflags = (p->flags & URFS_SETUP_RDONLY ? UR_ATTACH_RDONLY : 0) |
			  (p->flags & URFS_SETUP_DIRECT ? UR_ATTACH_DIRECT : 0) |
			  (p->flags & URFS_SETUP_EXCL ? UR_ATTACH_EXCL : 0);
	int afds[3] = { P->memfd, ring->sq_fd, ring->cq_fd };
	struct ur_hello h;
	uint64_t give_up = now_ns() + (uint64_t)READY_TIMEOUT_MS * 1000000u;
	struct ur_attach_name an;
	int named = 0;
	pid_t holder = 0;
	memset(&an, 0, sizeof(an));
	/* The image's server, if one runs, else a new one; two clients starting
	 * at once: the image's lock lets one server mount, the other client
	 * then attaches to it (docs/ABI.md, "Many clients"). While a server
	 * that holds the image starts or leaves, this client waits for it
	 * (trying its socket every 5 ms), and starts no other server until it
	 * has gone: one server start per holder, not one per try. */
	for (;;) {
		if (!named && !(p->flags & URFS_SETUP_NOIMAGE))
			named = ur_attach_name(image, &an) == 0;    /* the image exists */
		if (named) {
			r = try_attach(&an, afds, aflags, &sv[0], &h, p->errmsg, sizeof(p->errmsg));
			if (r == 0)
				break;
			if (r != -ECONNREFUSED && r != -ECONNRESET)
				goto err;
		}
		if (holder > 0 && alive(holder)) {
			if (now_ns() > give_up) {
				snprintf(p->errmsg, sizeof(p->errmsg), "in use by pid %d, a simplefs_server that did "
					 "not take clients at %s within %d s", (int)holder, named ? an.shown : "its socket",
					 READY_TIMEOUT_MS / 1000);
				r = -EBUSY;
				goto err;
			}
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			continue;
		}
		holder = 0;
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
			r = -errno;
			snprintf(p->errmsg, sizeof(p->errmsg), "cannot create the server's socket pair: %s",
				 strerror(-r));
			goto err;
		}
		int fds[4] = { P->memfd, ring->sq_fd, ring->cq_fd, sv[1] };
		r = spawn_server(spath, argv, fds, &pid);
		if (r < 0) {
			snprintf(p->errmsg, sizeof(p->errmsg), "cannot start %.180s: %s", spath, strerror(-r));
			pid = -1;
			goto err;
		}
		P->spawned = 1;
		close(sv[1]);
		sv[1] = -1;
		if ((r = wait_hello(sv[0], &h, p->errmsg, sizeof(p->errmsg))) < 0)
			goto err;
		if (h.err != -EBUSY || !(holder = holder_is_server(h.msg)) || now_ns() > give_up)
			break;
		/* Another client's server holds the image: it is starting (and
		 * will listen) or leaving (and will let go). Unless it serves
		 * another network namespace, whose abstract names are not ours. */
		if (other_netns(holder)) {
			snprintf(p->errmsg, sizeof(p->errmsg), "in use by pid %d, a simplefs_server in another "
				 "network namespace: its attach socket %s is not reachable from this one",
				 (int)holder, named ? an.shown : "@urfs/...");
			r = -EBUSY;
			goto err;
		}
		close(sv[0]);
		sv[0] = -1;
		reap(pid);
		pid = -1;
		P->spawned = 0;
	}
	if (h.err) {
		/* the server's reason, with the image it is about when it does not name it */
		if (!(p->flags & URFS_SETUP_NOIMAGE) && !strstr(h.msg, image))
			snprintf(p->errmsg, sizeof(p->errmsg), "%.100s: %.150s", image, h.msg);
		else
			snprintf(p->errmsg, sizeof(p->errmsg), "%s", h.msg);
		r = h.err < 0 && h.err > -4096 ? h.err : -EIO;
		goto err;
	}
	if (!P->spawned)
		pid = h.pid;                 /* attached: another process's child */
	ring->live_fd = sv[0];
	ring->server_pid = pid;
	p->server_pid = pid;
	ring->flags = p->flags;
	ring->priv = P;
	struct ur_ring_ctl *sq = (struct ur_ring_ctl *)(base + g.sq_ctl_off);
	struct ur_ring_ctl *cq = (struct ur_ring_ctl *)(base + g.cq_ctl_off);
	ring->sq.khead = &sq->head;
	ring->sq.ktail = &sq->tail;
	ring->sq.kflags = &sq->flags;
	ring->sq.kcpu = &sq->owner_cpu;
	ring->sq.sqes = (struct ur_sqe *)(base + g.sqes_off);
	ring->sq.ring_mask = sqn - 1;
	ring->sq.ring_entries = sqn;
	ring->cq.khead = &cq->head;
	ring->cq.ktail = &cq->tail;
	ring->cq.kflags = &cq->flags;
	ring->cq.kcpu = &cq->owner_cpu;
	ring->cq.cqes = (struct ur_cqe *)(base + g.cqes_off);
	ring->cq.ring_mask = cqn - 1;
	ring->cq.ring_entries = cqn;
	return 0;

err:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	if (pid > 0 && P->spawned)
		reap(pid);
	if (ring->sq_fd >= 0)
		close(ring->sq_fd);
	if (ring->cq_fd >= 0)
		close(ring->cq_fd);
	if (base != MAP_FAILED)
		munmap(base, g.size);
	if (P->memfd >= 0)
		close(P->memfd);
	free_priv(P);
	memset(ring, 0, sizeof(*ring));
	ring->sq_fd = ring->cq_fd = ring->live_fd = -1;
	return r;
}

UR_EXPORT int urfs_queue_init(unsigned entries, struct urfs_ring *ring, unsigned flags)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	return urfs_queue_init_params(entries, ring, &p);
}

/* ---------------------------------------------------------------------------
 * Teardown
 * ------------------------------------------------------------------------- */
/* How long urfs_queue_exit waits for the server's last word:
 * $UR_EXIT_TIMEOUT_MS when it is a number of milliseconds from 1 to
 * EXIT_TIMEOUT_MS, else EXIT_TIMEOUT_MS. */
static uint64_t exit_timeout_ns(void)
{
	const char *e = getenv("UR_EXIT_TIMEOUT_MS");
	char *end = NULL;
	unsigned long ms = e && *e ? strtoul(e, &end, 10) : 0;
	if (!ms || *end || ms > EXIT_TIMEOUT_MS)
		ms = EXIT_TIMEOUT_MS;
	return (uint64_t)ms * 1000000u;
}

/* Wait until process pid (not our child) has ended, gone or a zombie its
 * parent has yet to reap, or until the clock passes end. On the exit path
 * only. */
static void wait_gone(pid_t pid, uint64_t end)
{
	while (alive(pid) && now_ns() <= end) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* urfs_queue_exit that says how the server ended: 0 when it released the
 * ring cleanly (and, if this was its last client, unmounted cleanly), -EIO
 * when it failed to unmount or died, -ETIMEDOUT when it said nothing within
 * the exit bound (exit_timeout_ns): this side of the ring is released all
 * the same, and the server is left as it is. */
int __urfs_queue_exit_status(struct urfs_ring *ring)
{
	if (!ring->priv)
		return -EINVAL;
	/* EOF on the liveness socket tells the server to release the ring (and
	 * to unmount and exit after its last client); its last word, then its
	 * end closing, says it has. Waiting for that, not for waitpid, also
	 * works when the program ignores SIGCHLD. */
	shutdown(ring->live_fd, SHUT_WR);
	uint64_t end = now_ns() + exit_timeout_ns();
	int bye = 0, last = 0, err = 0, timed_out = 0;
	for (;;) {
		uint64_t t = now_ns();
		if (t >= end) {
			timed_out = 1;
			break;
		}
		struct pollfd pf = { .fd = ring->live_fd, .events = POLLIN };
		int r = poll(&pf, 1, (int)((end - t + 999999) / 1000000));
		if (r == 0 || (r < 0 && errno == EINTR))
			continue;
		struct ur_hello h;
		ssize_t n = r < 0 ? -1 : recv(ring->live_fd, &h, sizeof(h), MSG_DONTWAIT);
		if (n <= 0)
			break;
		if (n == (ssize_t)sizeof(h)) {
			h.msg[sizeof(h.msg) - 1] = '\0';
			if (!strcmp(h.msg, UR_BYE_LAST) || !strcmp(h.msg, UR_BYE_MORE)) {
				bye = 1;
				last = !strcmp(h.msg, UR_BYE_LAST);
				err = h.err;
			}
		}
	}
	close(ring->live_fd);
	/* A server that says nothing within the bound is stopped or wedged.
	 * This client leaves without it and never signals it: other clients
	 * may have attached to it (this process cannot know they have not),
	 * and a stopped server serves them again once it runs. Only a server
	 * this process started for this ring alone (URFS_SETUP_EXCL: nobody
	 * else could attach while the ring lived) is ended, as nobody else
	 * needs it, and reaped. */
	int st = 0;
	if (timed_out && ring->server_pid > 0 && ring->priv->spawned && (ring->flags & URFS_SETUP_EXCL)) {
		kill(ring->server_pid, SIGKILL);
		reap(ring->server_pid);
	} else if (!timed_out && ring->server_pid > 0 && ring->priv->spawned && (last || !bye)) {
		/* Our child: reap it once it exits (its last client gone, or
		 * dead); if it serves others still, it is reaped when it ends (a
		 * zombie until this process waits for it or exits: docs/ABI.md). */
		st = reap(ring->server_pid);
		if (st < 0 && bye)
			st = 0;   /* SIGCHLD ignored: the kernel reaped it; its bye says how it ended */
	} else if (!timed_out && ring->server_pid > 0 && last) {
		/* Another process's child: its last client returns when it has
		 * exited (within what is left of the bound). */
		wait_gone(ring->server_pid, end);
	}
	close(ring->sq_fd);
	close(ring->cq_fd);
	munmap(ring->region, ring->region_size);
	close(ring->priv->memfd);
	free_priv(ring->priv);
	memset(ring, 0, sizeof(*ring));
	ring->sq_fd = ring->cq_fd = ring->live_fd = -1;
	if (timed_out)
		return -ETIMEDOUT;
	return bye && err == 0 && st == 0 ? 0 : -EIO;
}

UR_EXPORT void urfs_queue_exit(struct urfs_ring *ring)
{
	__urfs_queue_exit_status(ring);
}
