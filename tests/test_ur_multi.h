/* SPDX-License-Identifier: MIT */
/*
 * test_ur_multi.h - many client processes on one simplefs_server: the
 * workload of tests/test_ur_multi*.c. Client i of n writes and reads its
 * private file "p<n>_<i>" and its own stripe of the shared file "s<n>" (the
 * pages p with p % n == i), in batches of requests on distinct pages, with
 * contents drawn from a generator seeded by (n, i): the same function
 * replayed without a ring (ring NULL) gives the expected files, which the
 * parent then compares byte for byte with the image. Reads during the run
 * are checked against the client's own model as it goes.
 * Header only; every helper fails the test (exit 1) on any surprise.
 */
#ifndef TEST_UR_MULTI_H
#define TEST_UR_MULTI_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ur_fs.h"
#include "sfs.h"
#include "testutil.h"
#include "../src/common/attach.h"

#define MP_PAGE 4096u
#define MP_PRIV_PAGES 48u             /* private file: up to this many pages */
#define MP_SHARED_PER 24u             /* shared file: pages per client */
#define MP_BATCH 4u

struct mp_model {
	uint8_t priv[MP_PRIV_PAGES * MP_PAGE];
	uint64_t priv_size;
	uint8_t *shared;                  /* MP_SHARED_PER * n pages */
	uint64_t shared_size;             /* the end of this client's writes */
};

static inline uint64_t mp_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline uint64_t mp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* One request and its completion; the result. */
static inline int32_t mp_wait1(struct urfs_ring *r)
{
	struct urfs_cqe *cqe;
	int e = urfs_submit_and_wait(r, 1);
	if (e < 0)
		return e;
	if ((e = urfs_wait_cqe(r, &cqe)) < 0)
		return e;
	int32_t res = cqe->res;
	urfs_cqe_seen(r, cqe);
	return res;
}

static inline struct urfs_sqe *mp_sqe(struct urfs_ring *r)
{
	struct urfs_sqe *sqe = urfs_get_sqe(r);
	if (!sqe)
		FAIL("no SQE free");
	return sqe;
}

static inline int32_t mp_open(struct urfs_ring *r, const char *name, unsigned flags)
{
	urfs_prep_openat(mp_sqe(r), name, flags);
	return mp_wait1(r);
}

/* FSYNC (fsync 1) or CLOSE of fd. */
static inline int32_t mp_fd_op(struct urfs_ring *r, int fsync, int fd)
{
	struct urfs_sqe *sqe = mp_sqe(r);
	if (fsync)
		urfs_prep_fsync(sqe, fd, 0);
	else
		urfs_prep_close(sqe, fd);
	return mp_wait1(r);
}

static inline int32_t mp_unlink(struct urfs_ring *r, const char *name)
{
	urfs_prep_unlink(mp_sqe(r), name);
	return mp_wait1(r);
}

static inline int32_t mp_pread(struct urfs_ring *r, int fd, void *buf, unsigned len, uint64_t off)
{
	urfs_prep_read(mp_sqe(r), fd, buf, len, off);
	return mp_wait1(r);
}

static inline int32_t mp_pwrite(struct urfs_ring *r, int fd, const void *buf, unsigned len, uint64_t off)
{
	urfs_prep_write(mp_sqe(r), fd, buf, len, off);
	return mp_wait1(r);
}

/* Added to every ring's flags (URFS_SETUP_DIRECT: the image O_DIRECT). */
static unsigned mp_flags;

static inline void mp_ring(struct urfs_ring *r, const char *img, unsigned flags)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = img;
	p.flags = flags | mp_flags;
	int e = urfs_queue_init_params(32, r, &p);
	if (e < 0)
		FAIL("ring on %s: %s (%s)", img, strerror(-e), p.errmsg);
}

/* Format img (mb MiB) and make three rings, clients of its one server:
 * the server's pid. */
static inline pid_t mp_three_rings(const char *img, unsigned mb, struct urfs_ring *a,
				   struct urfs_ring *b, struct urfs_ring *c)
{
	int e = sfs_format(img, (uint64_t)mb << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	mp_ring(a, img, 0);
	mp_ring(b, img, 0);
	mp_ring(c, img, 0);
	if (b->server_pid != a->server_pid || c->server_pid != a->server_pid)
		FAIL("three rings, servers %d %d %d", a->server_pid, b->server_pid, c->server_pid);
	return a->server_pid;
}

struct mp_req {
	int fd, wr, file;                 /* file 0 private, 1 shared */
	uint64_t off;
	unsigned len;
	uint8_t buf[MP_PAGE];
};

/*
 * Client i of n: steps batches (steps 0: for ever). ring NULL: only update
 * the model m (the expected result). fds: the private and shared handles.
 */
static inline void mp_client(struct urfs_ring *ring, const int fds[2], unsigned n, unsigned i,
			     unsigned steps, struct mp_model *m)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n << 32) ^ (i + 1) * 0x100000001b3ull;
	static struct mp_req q[MP_BATCH];
	static uint8_t got[MP_BATCH][MP_PAGE];
	for (unsigned step = 0; !steps || step < steps; step++) {
		unsigned used_pages[MP_BATCH * 2];
		unsigned nb = 1 + (unsigned)(mp_rand(&seed) % MP_BATCH);
		for (unsigned k = 0; k < nb; k++) {
			struct mp_req *x = &q[k];
			unsigned page, key;
			do {
				x->file = (int)(mp_rand(&seed) % 2);
				page = x->file ? (unsigned)(mp_rand(&seed) % MP_SHARED_PER) * n + i
					       : (unsigned)(mp_rand(&seed) % MP_PRIV_PAGES);
				key = page * 2 + (unsigned)x->file;
				int dup = 0;
				for (unsigned j = 0; j < k; j++)
					dup |= used_pages[j] == key;
				if (!dup)
					break;
			} while (1);
			used_pages[k] = key;
			unsigned in = (unsigned)(mp_rand(&seed) % MP_PAGE);
			x->off = (uint64_t)page * MP_PAGE + in;
			x->len = 1 + (unsigned)(mp_rand(&seed) % (MP_PAGE - in));
			if (mp_rand(&seed) % 4 == 0) {   /* whole pages: O_DIRECT's AIO path */
				x->off = (uint64_t)page * MP_PAGE;
				x->len = MP_PAGE;
			}
			x->wr = mp_rand(&seed) % 3 != 0;
			x->fd = fds ? fds[x->file] : -1;
			if (x->wr)
				for (unsigned b = 0; b < x->len; b++)
					x->buf[b] = (uint8_t)(mp_rand(&seed) >> 24);
		}
		if (ring) {
			for (unsigned k = 0; k < nb; k++) {
				struct urfs_sqe *sqe = mp_sqe(ring);
				if (q[k].wr)
					urfs_prep_write(sqe, q[k].fd, q[k].buf, q[k].len, q[k].off);
				else
					urfs_prep_read(sqe, q[k].fd, got[k], q[k].len, q[k].off);
				urfs_sqe_set_data64(sqe, k);
			}
			int e = urfs_submit_and_wait(ring, nb);
			if (e < 0)
				FAIL("client %u/%u step %u: submit: %s", i, n, step, strerror(-e));
			for (unsigned c = 0; c < nb; c++) {
				struct urfs_cqe *cqe;
				if ((e = urfs_wait_cqe(ring, &cqe)) < 0)
					FAIL("client %u/%u: wait: %s", i, n, strerror(-e));
				unsigned k = (unsigned)urfs_cqe_get_data64(cqe);
				int32_t res = cqe->res;
				urfs_cqe_seen(ring, cqe);
				struct mp_req *x = &q[k];
				uint8_t *img = x->file ? m->shared : m->priv;
				uint64_t size = x->file ? m->shared_size : m->priv_size;
				if (x->wr) {
					if (res != (int32_t)x->len)
						FAIL("client %u/%u step %u: write of %u at %llu: %d", i, n, step,
						     x->len, (unsigned long long)x->off, res);
					continue;
				}
				/* The file may be longer than the model knew before the
				 * batch (others extend the shared one, a write of this
				 * batch may extend either): the known bytes must be
				 * there, the rest of the page is a hole (zeros). */
				uint64_t want = size > x->off ? size - x->off : 0;
				if (want > x->len)
					want = x->len;
				if (res < 0 || (uint64_t)res < want || (unsigned)res > x->len)
					FAIL("client %u/%u step %u: read of %u at %llu (%s): %d, want %llu", i, n,
					     step, x->len, (unsigned long long)x->off, x->file ? "shared" : "private",
					     res, (unsigned long long)want);
				if (memcmp(got[k], img + x->off, (size_t)res))
					FAIL("client %u/%u step %u: read at %llu (%s) differs from what was written",
					     i, n, step, (unsigned long long)x->off, x->file ? "shared" : "private");
			}
		}
		for (unsigned k = 0; k < nb; k++) {      /* the model follows the writes */
			struct mp_req *x = &q[k];
			if (!x->wr)
				continue;
			uint8_t *img = x->file ? m->shared : m->priv;
			uint64_t *size = x->file ? &m->shared_size : &m->priv_size;
			memcpy(img + x->off, x->buf, x->len);
			if (x->off + x->len > *size)
				*size = x->off + x->len;
		}
	}
}

static inline void mp_model_init(struct mp_model *m, unsigned n)
{
	memset(m->priv, 0, sizeof(m->priv));
	m->priv_size = 0;
	m->shared = calloc((size_t)MP_SHARED_PER * n, MP_PAGE);
	m->shared_size = 0;
	if (!m->shared)
		FAIL("calloc");
}

static inline void mp_names(unsigned n, unsigned i, char priv[32], char shared[32])
{
	snprintf(priv, 32, "p%u_%u", n, i);
	snprintf(shared, 32, "s%u", n);
}

/*
 * The body of client process i of n: open a ring on img (attaching to the
 * running server, or starting it) when a byte comes on go_fd (all clients
 * start at once), report its server's pid on report_fd, wait for a byte on
 * run_fd (every ring exists), run steps batches (0: until killed), fsync,
 * close, leave. Exits 0.
 */
static inline void mp_child(const char *img, unsigned n, unsigned i, unsigned steps, int report_fd,
			    int go_fd, int run_fd)
{
	struct urfs_ring r;
	struct mp_model m;
	char pn[32], sn[32];
	char b;
	mp_names(n, i, pn, sn);
	mp_model_init(&m, n);
	if (go_fd >= 0 && read(go_fd, &b, 1) != 1)      /* all start at once */
		FAIL("go");
	mp_ring(&r, img, 0);
	int fds[2];
	fds[0] = mp_open(&r, pn, URFS_O_CREAT | URFS_O_TRUNC);
	fds[1] = mp_open(&r, sn, URFS_O_CREAT);
	if (fds[0] < 0 || fds[1] < 0)
		FAIL("client %u/%u: open: %d %d", i, n, fds[0], fds[1]);
	int32_t pid = r.server_pid;
	if (write(report_fd, &pid, sizeof(pid)) != sizeof(pid))
		FAIL("report");
	if (run_fd >= 0 && read(run_fd, &b, 1) != 1)
		FAIL("run");
	mp_client(&r, fds, n, i, steps, &m);
	for (int k = 0; k < 2; k++) {
		int32_t e = mp_fd_op(&r, 1, fds[k]);
		if (e < 0)
			FAIL("client %u/%u: fsync: %d", i, n, e);
		if ((e = mp_fd_op(&r, 0, fds[k])) < 0)
			FAIL("client %u/%u: close: %d", i, n, e);
	}
	urfs_queue_exit(&r);
	free(m.shared);
	exit(0);
}

/* A file of the mounted image, whole. */
static inline uint8_t *mp_slurp(struct sfs *fs, const char *name, uint64_t *size)
{
	struct sfs_stat st;
	int r = sfs_stat(fs, name, &st);
	if (r < 0)
		FAIL("stat %s: %s", name, strerror(-r));
	uint8_t *b = malloc(st.size + 1);
	int fd = sfs_file_open(fs, name, SFS_O_RDONLY);
	if (!b || fd < 0)
		FAIL("open %s: %d", name, fd);
	if (sfs_file_pread(fs, fd, b, st.size, 0) != (int64_t)st.size)
		FAIL("read %s", name);
	sfs_file_close(fs, fd);
	*size = st.size;
	return b;
}

/*
 * After a run of n clients (skip: a client whose results are unknown, or
 * -1): the image is fsck-clean, each private file and each client's stripe
 * of the shared file hold exactly what the replayed workload wrote.
 */
static inline void mp_verify(const char *img, unsigned n, unsigned steps, int skip)
{
	FSCK_CLEAN(img);
	struct sfs *fs = MOUNT_OR_DIE(img);
	char pn[32], sn[32];
	uint64_t ssize = 0, max_shared = 0;
	mp_names(n, 0, pn, sn);
	uint8_t *shared = mp_slurp(fs, sn, &ssize);
	for (unsigned i = 0; i < n; i++) {
		if ((int)i == skip)
			continue;
		struct mp_model m;
		mp_model_init(&m, n);
		mp_client(NULL, NULL, n, i, steps, &m);
		mp_names(n, i, pn, sn);
		uint64_t psize;
		uint8_t *priv = mp_slurp(fs, pn, &psize);
		if (psize != m.priv_size || memcmp(priv, m.priv, psize))
			FAIL("n=%u: private file of client %u differs (size %llu, want %llu)", n, i,
			     (unsigned long long)psize, (unsigned long long)m.priv_size);
		for (unsigned pg = i; pg < MP_SHARED_PER * n; pg += n) {
			uint64_t off = (uint64_t)pg * MP_PAGE;
			uint64_t have = ssize > off ? ssize - off : 0;
			uint64_t mine = m.shared_size > off ? m.shared_size - off : 0;
			if (have > MP_PAGE)
				have = MP_PAGE;
			if (mine > MP_PAGE)
				mine = MP_PAGE;
			if (have < mine)
				FAIL("n=%u: shared file too short for client %u's page %u", n, i, pg);
			for (uint64_t b = 0; b < have; b++)
				if (shared[off + b] != m.shared[off + b])
					FAIL("n=%u: shared page %u (client %u) byte %llu: %u, want %u", n, pg, i,
					     (unsigned long long)b, shared[off + b], m.shared[off + b]);
		}
		if (m.shared_size > max_shared)
			max_shared = m.shared_size;
		free(priv);
		free(m.shared);
	}
	if (skip < 0 && ssize != max_shared)
		FAIL("n=%u: shared file is %llu bytes, want %llu", n, (unsigned long long)ssize,
		     (unsigned long long)max_shared);
	free(shared);
	if (sfs_unmount(fs) < 0)
		FAIL("unmount");
}

/* The attach name of img (attach.h). */
static inline struct ur_attach_name mp_name(const char *img)
{
	struct ur_attach_name n;
	int e = ur_attach_name(img, &n);
	if (e < 0)
		FAIL("attach name of %s: %s", img, strerror(-e));
	return n;
}

/* Connect to the attach name n: the connected socket, or -errno. */
static inline int mp_connect_at(const struct ur_attach_name *n)
{
	int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c < 0)
		FAIL("socket: %s", strerror(errno));
	if (connect(c, (const struct sockaddr *)&n->a, n->len) < 0) {
		int e = -errno;
		close(c);
		return e;
	}
	return c;
}

/* Connect to the attach name of img: the connected socket, or -errno. */
static inline int mp_connect(const char *img)
{
	struct ur_attach_name n = mp_name(img);
	return mp_connect_at(&n);
}

/* The server pid ends within timeout_ms, with exit 0 if it is a child of
 * ours (we are a subreaper: its starter left before it ended); else its
 * starter, the last to leave, has reaped it. Nobody listens at its attach
 * name any more. */
static inline void mp_server_gone(pid_t spid, const char *img, int timeout_ms)
{
	uint64_t end = mp_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		int st;
		pid_t w = waitpid(spid, &st, WNOHANG);
		if (w == spid) {
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				FAIL("server %d ended with status %#x", (int)spid, st);
			break;
		}
		if (w < 0 && errno == ECHILD && kill(spid, 0) < 0 && errno == ESRCH)
			break;          /* its starter left last and reaped it */
		if (w < 0 && errno != ECHILD)
			FAIL("waitpid %d: %s", (int)spid, strerror(errno));
		if (mp_now_ms() > end)
			FAIL("server %d still runs %d ms after its last client left", (int)spid, timeout_ms);
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	int c = mp_connect(img);
	if (c >= 0)
		FAIL("something still listens at the attach name of %s", img);
	if (c != -ECONNREFUSED)
		FAIL("connect to the attach name of %s: %s", img, strerror(-c));
}

/* A region of the library's layout, sealed as asked. */
static inline int mp_region(int seal, int bad_header)
{
	int fd = memfd_create("bad", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint64_t size = 1u << 20;
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		FAIL("memfd");
	struct ur_region_hdr g;
	memset(&g, 0, sizeof(g));
	g.magic = UR_ABI_MAGIC;
	g.version = UR_ABI_VERSION;
	g.size = size;
	g.sq_entries = 8;
	g.cq_entries = bad_header ? 4 : 16;       /* cq < sq: refused */
	g.sq_ctl_off = 256;
	g.cq_ctl_off = 512;
	g.sqes_off = 1024;
	g.cqes_off = 1024 + 8 * 64;
	g.data_off = 4096;
	g.data_size = size - 4096;
	g.bufs_off = size / 2;
	g.bufs_size = size / 2;
	if (pwrite(fd, &g, sizeof(g), 0) != sizeof(g))
		FAIL("header");
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		FAIL("seal");
	return fd;
}

/* Send an attach request by hand on connection c: kind 0 says nothing, 1 a
 * bad magic, 2 passes no descriptors, 3 five, 4 an unsealed region, 5
 * /dev/null doorbells, 6 a bad header, 7 a sound request. */
static inline void mp_attach_send(int c, int kind)
{
	int fds[5], nfd = 3;
	struct ur_attach m = { UR_ABI_MAGIC, UR_ABI_VERSION, 0, 0 };
	fds[0] = mp_region(kind != 4, kind == 6);
	fds[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fds[2] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fds[3] = eventfd(0, EFD_CLOEXEC);
	fds[4] = eventfd(0, EFD_CLOEXEC);
	if (kind == 1)
		m.magic = 0xdeadbeef;
	if (kind == 2)
		nfd = 0;
	if (kind == 3)
		nfd = 5;
	if (kind == 5) {
		close(fds[1]);
		close(fds[2]);
		fds[1] = open("/dev/null", O_RDWR | O_CLOEXEC);
		fds[2] = open("/dev/null", O_RDWR | O_CLOEXEC);
	}
	if (kind != 0) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 5)];
			struct cmsghdr align;
		} cb;
		memset(&cb, 0, sizeof(cb));
		struct iovec iov = { &m, sizeof(m) };
		struct msghdr msg;
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		if (nfd) {
			msg.msg_control = cb.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
			struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
			memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfd);
		}
		if (sendmsg(c, &msg, MSG_NOSIGNAL) != (ssize_t)sizeof(m))
			FAIL("sendmsg: %s", strerror(errno));
	}
	for (int i = 0; i < 5; i++)
		close(fds[i]);
}

/* The server's answer on connection c: its err (1: none within 5 s) and its
 * reason in why. */
static inline int mp_attach_answer(int c, char *why, size_t whylen)
{
	struct ur_hello h;
	struct pollfd p = { .fd = c, .events = POLLIN };
	int err = 1;
	if (poll(&p, 1, 5000) > 0 && recv(c, &h, sizeof(h), 0) == (ssize_t)sizeof(h)) {
		h.msg[sizeof(h.msg) - 1] = '\0';
		snprintf(why, whylen, "%s", h.msg);
		err = h.err;
	}
	return err;
}

/* Attach to the server at attach name n by hand (mp_attach_send's kinds):
 * the answer's err (1: no answer within 5 s) and its reason in why; -errno
 * of connect (nothing sent) when the name cannot be reached. */
static inline int mp_attach_raw_at(const struct ur_attach_name *n, int kind, char *why, size_t whylen)
{
	int c = mp_connect_at(n);
	if (c < 0)
		return c;
	mp_attach_send(c, kind);
	int err = mp_attach_answer(c, why, whylen);
	close(c);
	return err;
}

/* mp_attach_raw_at on the attach name of img. */
static inline int mp_attach_raw(const char *img, int kind, char *why, size_t whylen)
{
	struct ur_attach_name n = mp_name(img);
	return mp_attach_raw_at(&n, kind, why, whylen);
}

#endif
