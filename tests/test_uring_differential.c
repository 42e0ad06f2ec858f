/* SPDX-License-Identifier: MIT */
/* Description: the emulated ring answers as the kernel's does. Random SQEs (opcodes of the Linux
 * 5.10 set and later ones both support, fds from {bad, -1, a file, an O_DIRECT file, a directory,
 * both ends of a pipe holding data, a socket holding data, empty pipes and sockets blocking and
 * O_NONBLOCK, /dev/null, an epoll fd}, pointers from {NULL, low garbage, an unmapped page, the
 * op's own valid argument}, lengths, offsets, op flags, and now and then a stray value in a field
 * the op does not use) run through a kernel ring and an emulated one (URING_EMULATE=1 at setup)
 * in the same process; their CQEs must agree: the result (an fd's number aside), the
 * F_MORE/F_NOTIF flags, the bytes a read left in the buffer and the directory's files after. A
 * request still pending after 20 ms on both rings agrees (it waits for something that never
 * comes; it is cancelled); on one only, the other gets a second more. Part 1: each SQE on fresh
 * rings and a fresh fixture. Part 2: the two rings kept for all SQEs (of the ops that take a plain
 * fd), each SQE's fresh fixture moved (dup3) to fd numbers that named other kinds for the SQE
 * before, the same sequence on both rings: the emulated ring's per-ring cache of an fd number's
 * kind (DROPIN.md) goes stale, as when a program closes an fd itself and gets the number back for
 * another file. Part 3: fixed scripts of IOSQE_IO_DRAIN (drained, linked and failing NOPs, READs
 * and POLL_ADDs of empty pipes, in batches), the CQEs that came at each look compared. The
 * kernel is the reference: with io_uring blocked this test has nothing to compare with and
 * skips all three parts. TRIALS (env) sets the number of SQEs of part 1 (default 1500),
 * REUSE_TRIALS of part 2 (default 1000), SEED the seed of both. */
#include "test_uring.h"
#include "parts.h"
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#define BUF 8192

static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}
#define PICK(a) ((a)[rnd() % (sizeof(a) / sizeof((a)[0]))])
#define CHOOSE(g, a) ((a)[(g)->pick % (sizeof(a) / sizeof((a)[0]))])

/* The fixture: made afresh for each run of an SQE. Its fds by kind: the cached kind of an fd
 * (DROPIN.md) is regular, socket, stream or directory, with O_DIRECT and O_NONBLOCK, and an
 * empty pipe or socket is where a stale one would wait, or not, unlike the kernel. */
enum {
	F_BAD, F_NONE, F_FILE, F_DIR, F_PIPE_R, F_PIPE_W, F_SOCK, F_NULLDEV, F_EPOLL,
	F_DIRECT,                       /* a file opened O_DIRECT (plain where the fs has none) */
	F_PIPE_EMPTY, F_PIPE_NB,        /* read ends of empty pipes, the writer open; O_NONBLOCK */
	F_SOCK_EMPTY, F_SOCK_NB,        /* sockets, nothing to read, the peer open; O_NONBLOCK */
	NFD
};
static const char *const kind_name[NFD] = {
	"bad", "-1", "file", "dir", "pipe-r", "pipe-w", "sock", "null", "epoll",
	"odirect", "pipe-empty", "pipe-nonblock", "sock-empty", "sock-nonblock",
};
struct fixture {
	char dir[64];
	int fd[NFD];
	int keep[4];                    /* the other ends of the empty pipes and sockets */
};

/* The working directory between runs: a directory this test made and removed (main), so that
 * a path relative to AT_FDCWD resolved outside a run (by a request that outlived it) creates
 * nothing, anywhere (-ENOENT); an fd, for fchdir. Within a run it is the fixture's directory. */
static int away = -1;
static char *buf;                   /* BUF bytes, then an unmapped page */
static char *hole;
static struct iovec iovs[2];
static struct __kernel_timespec ts1ms = { 0, 1000000 };
static struct epoll_event epev = { EPOLLIN, { 0 } };

static int odirect = O_DIRECT;      /* 0 where /tmp has no O_DIRECT */

/* Part 2 puts the fixture's fds at these numbers (pos[kind]: its slot), the same numbers
 * for other kinds each time: above the test's own fds, below the library's (EMU_FD_BASE)
 * and within the ring's fd cache (EMU_FCACHE). */
#define SLOT0 100

/* pos: NULL (the fds where they were opened), else each kind but F_NONE moves to
 * SLOT0 + pos[kind] (F_BAD's is left closed). */
static void fixture_make(struct fixture *f, const int *pos)
{
	strcpy(f->dir, "/tmp/tu_diffXXXXXX");
	CHECK(mkdtemp(f->dir) != NULL);
	int dfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	int fd = openat(dfd, "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "0123456789abcdef", 16), 16);
	CHECK_EQ(mkdirat(dfd, "d", 0700), 0);
	int p[2], sv[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_EQ(write(p[1], "pipedata", 8), 8);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(write(sv[1], "sockdata", 8), 8);
	f->fd[F_BAD] = 1000;            /* not open: the test's own fds stay below */
	f->fd[F_NONE] = -1;
	f->fd[F_FILE] = fd;
	f->fd[F_DIR] = dfd;
	f->fd[F_PIPE_R] = p[0];
	f->fd[F_PIPE_W] = p[1];
	f->fd[F_SOCK] = sv[0];
	f->fd[F_NULLDEV] = open("/dev/null", O_RDWR | O_CLOEXEC);
	f->fd[F_EPOLL] = epoll_create1(EPOLL_CLOEXEC);
	CHECK(f->fd[F_NULLDEV] >= 0 && f->fd[F_EPOLL] >= 0);
	close(sv[1]);                   /* the data stays readable */
	fd = openat(dfd, "o", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	char data[4096];
	memset(data, 'o', sizeof data);
	CHECK_EQ(write(fd, data, sizeof data), (long)sizeof data);
	close(fd);
	f->fd[F_DIRECT] = openat(dfd, "o", O_RDWR | O_CLOEXEC | odirect);
	CHECK(f->fd[F_DIRECT] >= 0);
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	f->fd[F_PIPE_EMPTY] = p[0];
	f->keep[0] = p[1];
	CHECK_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	f->fd[F_PIPE_NB] = p[0];
	f->keep[1] = p[1];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	f->fd[F_SOCK_EMPTY] = sv[0];
	f->keep[2] = sv[1];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
	f->fd[F_SOCK_NB] = sv[0];
	f->keep[3] = sv[1];
	if (!pos)
		return;
	for (int k = 0; k < NFD; k++) {
		if (k == F_NONE)
			continue;
		int to = SLOT0 + pos[k];
		if (k != F_BAD) {
			CHECK(f->fd[k] < SLOT0);
			CHECK_EQ(dup3(f->fd[k], to, O_CLOEXEC), to);
			close(f->fd[k]);
		}
		f->fd[k] = to;
	}
}

/* The directory's names, with the size and a hash (FNV-1a) of each regular file's contents,
 * to compare after a run. */
static size_t fixture_state(struct fixture *f, char *out, size_t cap)
{
	size_t n = 0;
	struct dirent **names;
	int k = scandir(f->dir, &names, NULL, alphasort);
	CHECK(k >= 0);
	for (int i = 0; i < k; i++) {
		char path[512], chunk[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s", f->dir, names[i]->d_name);
		int fd = -1;
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			fd = open(path, O_RDONLY | O_CLOEXEC);
		uint64_t h = 14695981039346656037ull, size = 0;
		ssize_t r;
		while (fd >= 0 && (r = read(fd, chunk, sizeof chunk)) > 0) {
			for (ssize_t j = 0; j < r; j++)
				h = (h ^ (uint8_t)chunk[j]) * 1099511628211ull;
			size += (uint64_t)r;
		}
		if (fd >= 0)
			n += (size_t)snprintf(out + n, cap - n, "|%s:%llu:%llx", names[i]->d_name,
					      (unsigned long long)size, (unsigned long long)h);
		else
			n += (size_t)snprintf(out + n, cap - n, "|%s", names[i]->d_name);
		if (n >= cap)
			n = cap - 1;
		if (fd >= 0)
			close(fd);
		free(names[i]);
	}
	free(names);
	return n;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path);
}

static void fixture_close(struct fixture *f)
{
	for (int i = F_FILE; i < NFD; i++) {
		close(f->fd[i]);                /* EBADF where the SQE closed it: fine */
		f->fd[i] = -1;
	}
	for (int i = 0; i < 4; i++) {
		close(f->keep[i]);
		f->keep[i] = -1;
	}
}

static void fixture_free(struct fixture *f)
{
	fixture_close(f);
	CHECK_EQ(nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* One SQE's description: picks made once, applied to each fixture. */
struct gen {
	uint8_t op, sqe_flags;
	int fd_i, fd2_i;
	int addr_k, addr2_k;            /* 0 NULL, 1 low garbage, 2 unmapped, 3 valid */
	uint32_t len;
	uint64_t off;
	uint32_t op_flags;
	uint32_t pick;                  /* the op's choice among its own values */
	int stray;                      /* a field set to 1 after the prep helper (gen_sqe), 0 none */
};

static const uint8_t ops[] = {
	IORING_OP_NOP, IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC, IORING_OP_POLL_ADD,
	IORING_OP_SYNC_FILE_RANGE, IORING_OP_TIMEOUT, IORING_OP_ACCEPT, IORING_OP_FALLOCATE,
	IORING_OP_OPENAT, IORING_OP_CLOSE, IORING_OP_FILES_UPDATE, IORING_OP_STATX, IORING_OP_READ,
	IORING_OP_WRITE, IORING_OP_FADVISE, IORING_OP_MADVISE, IORING_OP_SEND, IORING_OP_RECV,
	IORING_OP_EPOLL_CTL, IORING_OP_SPLICE, IORING_OP_PROVIDE_BUFFERS, IORING_OP_REMOVE_BUFFERS,
	IORING_OP_TEE, IORING_OP_SHUTDOWN, IORING_OP_RENAMEAT, IORING_OP_UNLINKAT, IORING_OP_MKDIRAT,
	IORING_OP_SYMLINKAT, IORING_OP_LINKAT, IORING_OP_ASYNC_CANCEL,
};

/* Part 2's: the ops that take a plain fd, which the emulation looks up in its cache. */
static const uint8_t fd_ops[] = {
	IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC, IORING_OP_POLL_ADD, IORING_OP_SYNC_FILE_RANGE,
	IORING_OP_ACCEPT, IORING_OP_FALLOCATE, IORING_OP_CLOSE, IORING_OP_READ, IORING_OP_WRITE,
	IORING_OP_FADVISE, IORING_OP_SEND, IORING_OP_RECV, IORING_OP_EPOLL_CTL, IORING_OP_SPLICE,
	IORING_OP_TEE, IORING_OP_SHUTDOWN,
};

static int is_rw(uint8_t op)
{
	return op == IORING_OP_READ || op == IORING_OP_WRITE || op == IORING_OP_READV || op == IORING_OP_WRITEV;
}

static int is_path(uint8_t op)
{
	return op == IORING_OP_OPENAT || op == IORING_OP_STATX || op == IORING_OP_RENAMEAT ||
	       op == IORING_OP_UNLINKAT || op == IORING_OP_MKDIRAT || op == IORING_OP_SYMLINKAT ||
	       op == IORING_OP_LINKAT;
}

static int is_read(uint8_t op)
{
	return op == IORING_OP_READ || op == IORING_OP_READV;
}

/* An empty pipe or socket (nothing to read, the writer open). */
static int is_empty_stream(int k)
{
	return k == F_PIPE_EMPTY || k == F_PIPE_NB || k == F_SOCK_EMPTY || k == F_SOCK_NB;
}

/*
 * What the emulation does not yet answer as this kernel (6.x) does is left out here, each
 * with the kernel's answer (DROPIN.md, "Compared with the kernel"); all else is compared.
 * reuse: part 2's SQE, whose numbers may be cached by the emulated ring as other kinds.
 */
static void scope(struct gen *g, int reuse)
{
	if (is_rw(g->op)) {
		if (g->fd_i == F_EPOLL)         /* a READ of an epoll fd waits in the kernel */
			g->fd_i = F_FILE;
		/* a directory with RWF_DSYNC, RWF_SYNC, RWF_APPEND or RWF_NOSIGNAL: the kernel's
		 * ring says -EISDIR, preadv2 -EOPNOTSUPP (a file without read_iter takes no flags) */
		if (g->fd_i == F_DIR)
			g->op_flags &= ~(unsigned)(RWF_DSYNC | RWF_SYNC | RWF_APPEND | 0x100);
	}
	if (is_read(g->op)) {
		/* a read of an empty O_NONBLOCK pipe or socket waits in the kernel (which
		 * ignores O_NONBLOCK where it can poll), -EAGAIN emulated */
		if (g->fd_i == F_PIPE_NB)
			g->fd_i = F_PIPE_EMPTY;
		if (g->fd_i == F_SOCK_NB)
			g->fd_i = F_SOCK_EMPTY;
		/* a read of 0 bytes of an empty pipe or socket: 0 at once in the kernel; the
		 * emulation waits for data first with IOSQE_ASYNC (and on a socket) */
		if (is_empty_stream(g->fd_i) && (g->op == IORING_OP_READ ? g->len : g->len % 3) == 0)
			g->len = 1;
	}
	/* a RECV with MSG_DONTWAIT, or MSG_OOB (a stray 1 in its flags), and IOSQE_ASYNC of
	 * an empty socket: -EAGAIN or -EINVAL in the kernel, the emulation waits for data */
	if (g->op == IORING_OP_RECV && (g->pick % 4 == 1 || g->stray == 4))
		g->sqe_flags &= (uint8_t)~IOSQE_ASYNC;
	/* stray values the kernel reads as a feature the emulation does not have: a read's or
	 * write's __pad2 (PI attributes: addr3 is then read, -EFAULT at NULL); POLL_FIRST
	 * (ioprio 1) of a SEND/RECV, which this kernel answers -EAGAIN or waits for on a file
	 * that is not a socket or a socket whose peer left; a multishot ACCEPT of a file that
	 * is not listening (-EBADFD or a wait) */
	if ((is_rw(g->op) && g->stray == 8) ||
	    ((g->op == IORING_OP_SEND || g->op == IORING_OP_RECV || g->op == IORING_OP_ACCEPT) && g->stray == 1))
		g->stray = 0;
	/* SEND with IOSQE_BUFFER_SELECT: from a provided buffer on Linux 6.10+, not emulated
	 * (-EOPNOTSUPP, as before 6.10) */
	if (g->op == IORING_OP_SEND)
		g->sqe_flags &= (uint8_t)~IOSQE_BUFFER_SELECT;
	/* an ASYNC_CANCEL with IOSQE_ASYNC, by fd or by its own user_data: the kernel's,
	 * running on io-wq, finds itself there (-EALREADY); -ENOENT emulated */
	if (g->op == IORING_OP_ASYNC_CANCEL)
		g->sqe_flags &= (uint8_t)~IOSQE_ASYNC;
	if (is_path(g->op)) {
		/* a NULL path: this kernel says -ENOENT for some ops, -EFAULT for others */
		if (g->addr_k == 0)
			g->addr_k = 1;
		if (g->addr2_k == 0)
			g->addr2_k = 1;
	}
	if (!reuse)
		return;
	/* On a kept ring a multishot POLL_ADD (len 1: IORING_POLL_ADD_MULTI, a stray value)
	 * would go on posting into later SQEs' turns: one-shot there. */
	if (g->op == IORING_OP_POLL_ADD && g->stray == 3)
		g->stray = 0;
	/* The O_DIRECT file's number is never used: one cached as a pipe (or another
	 * stream) that is an O_DIRECT file now, read or written, waits in the emulation
	 * (RWF_NOWAIT's -EAGAIN taken for a stream's); one cached as the O_DIRECT file that
	 * is a socket now, written at an offset above 0, is written (by kernel AIO) where
	 * the kernel says -ESPIPE. */
	if (g->fd_i == F_DIRECT)
		g->fd_i = F_FILE;
	if (g->fd2_i == F_DIRECT)
		g->fd2_i = F_FILE;
	/* A read of a pipe or socket whose number was cached as an O_NONBLOCK pipe or
	 * socket (and it is not now): -EAGAIN emulated, the kernel waits. With RWF_NOWAIT
	 * both end at once (but not with IOSQE_ASYNC, with which the emulation waits for
	 * data first where the kernel says -EAGAIN). */
	if (is_read(g->op) && (g->fd_i == F_PIPE_R || g->fd_i == F_SOCK || is_empty_stream(g->fd_i))) {
		g->op_flags |= RWF_NOWAIT;
		g->sqe_flags &= (uint8_t)~IOSQE_ASYNC;
	}
	/* A write to a number cached as a regular file that is not one now: a write the
	 * kernel cuts short (at 2 GiB - 4 KiB) goes on in the emulation; of 0 bytes to a
	 * socket whose peer has gone, cached as a pipe: 0 emulated, -EPIPE in the kernel. */
	if (is_rw(g->op) && !is_read(g->op)) {
		if (g->len == 0x7fffffff)
			g->len = BUF;
		if ((g->op == IORING_OP_WRITE ? g->len : g->len % 3) == 0 &&
		    (g->fd_i == F_SOCK || g->fd_i == F_SOCK_EMPTY || g->fd_i == F_SOCK_NB))
			g->len = 1;
	}
}

/* A random SQE of an op from opl (n of them), its fds by kind; scope() is applied after. */
static void gen_make(struct gen *g, const uint8_t *opl, size_t n)
{
	static const uint32_t lens[] = { 0, 1, 8, 16, 100, 4096, BUF, 0x7fffffff };
	static const uint64_t offs[] = { 0, 0, 4, 16, 100, (uint64_t)-1, (uint64_t)-2, 1ull << 62 };
	static const uint32_t flagsv[] = { 0, 0, 0, 1, 2, 3, 4, 7, 0x10, 0x100, 0x80000000u };
	static const uint8_t sqef[] = { 0, 0, 0, 0, 0, 0, IOSQE_ASYNC, IOSQE_ASYNC, IOSQE_BUFFER_SELECT };
	memset(g, 0, sizeof(*g));
	g->op = opl[rnd() % n];
	g->sqe_flags = PICK(sqef);
	g->fd_i = (int)(rnd() % NFD);
	g->fd2_i = (int)(rnd() % NFD);
	g->addr_k = rnd() % 4 ? 3 : (int)(rnd() % 3);
	g->addr2_k = rnd() % 4 ? 3 : (int)(rnd() % 3);
	g->len = PICK(lens);
	g->off = PICK(offs);
	g->op_flags = PICK(flagsv);
	g->pick = (uint32_t)rnd();
	if (rnd() % 3 == 0)
		g->stray = 1 + (int)(rnd() % 9);
}

static const char *paths[] = { "f", "d", "nonexistent", "", "f/x", "d/new" };

static void *ptr(int k, void *valid)
{
	switch (k) {
	case 0: return NULL;
	case 1: return (void *)0x10;
	case 2: return hole;
	default: return valid;
	}
}

/* The SQE of g for fixture f, made by liburing's own prep helper for the op (so its
 * unused fields are zero, as a program's are), with g's values in its arguments. */
static void gen_sqe(const struct gen *g, struct fixture *f, struct io_uring_sqe *s)
{
	int fd = f->fd[g->fd_i], fd2 = f->fd[g->fd2_i];
	int dfd = g->fd_i == F_BAD ? AT_FDCWD : fd, dfd2 = g->fd2_i == F_BAD ? AT_FDCWD : fd2;
	const char *p1 = ptr(g->addr_k, (void *)paths[g->len % 6]);
	const char *p2 = ptr(g->addr2_k, (void *)paths[(g->len / 6 + g->op_flags) % 6]);
	void *b = ptr(g->addr_k, buf), *b2 = ptr(g->addr2_k, buf + 4096);
	unsigned fl = g->op_flags;
	switch (g->op) {
	case IORING_OP_NOP: io_uring_prep_nop(s); break;
	case IORING_OP_READ: io_uring_prep_read(s, fd, b, g->len, g->off); s->rw_flags = (int)fl; break;
	case IORING_OP_WRITE: io_uring_prep_write(s, fd, b, g->len, g->off); s->rw_flags = (int)fl; break;
	case IORING_OP_READV: io_uring_prep_readv(s, fd, ptr(g->addr_k, iovs), g->len % 3, g->off); s->rw_flags = (int)fl; break;
	case IORING_OP_WRITEV: io_uring_prep_writev(s, fd, ptr(g->addr_k, iovs), g->len % 3, g->off); s->rw_flags = (int)fl; break;
	case IORING_OP_FSYNC: io_uring_prep_fsync(s, fd, fl); break;
	case IORING_OP_POLL_ADD:
		io_uring_prep_poll_add(s, fd, (unsigned)CHOOSE(g, ((const int[]){ POLLIN, POLLOUT, POLLIN | POLLOUT, 0 })));
		break;
	case IORING_OP_SYNC_FILE_RANGE: io_uring_prep_sync_file_range(s, fd, g->len, g->off, (int)fl); break;
	case IORING_OP_TIMEOUT: io_uring_prep_timeout(s, ptr(g->addr_k, &ts1ms), (unsigned)(g->off % 3), fl & 3); break;
	case IORING_OP_ACCEPT: io_uring_prep_accept(s, fd, NULL, NULL, (int)(fl & SOCK_CLOEXEC)); break;
	case IORING_OP_FALLOCATE: io_uring_prep_fallocate(s, fd, (int)fl, g->off, g->len); break;
	case IORING_OP_OPENAT:
		io_uring_prep_openat(s, dfd, p1, CHOOSE(g, ((const int[]){ O_RDONLY, O_RDWR | O_CREAT, O_DIRECTORY,
							      O_WRONLY | O_TRUNC, O_RDONLY | O_NONBLOCK })), 0600);
		break;
	case IORING_OP_CLOSE: io_uring_prep_close(s, fd); break;
	case IORING_OP_FILES_UPDATE: io_uring_prep_files_update(s, ptr(g->addr_k, &f->fd[F_FILE]), g->len % 3, (int)(g->off % 3)); break;
	case IORING_OP_STATX:
		io_uring_prep_statx(s, dfd, p1, g->off % 5 ? 0 : AT_EMPTY_PATH, fl & 0xfff, b2);
		break;
	case IORING_OP_FADVISE: io_uring_prep_fadvise(s, fd, g->off, (off_t)g->len, (int)(fl % 7)); break;
	case IORING_OP_MADVISE: io_uring_prep_madvise(s, b, g->len > BUF ? 4096 : g->len, (int)(fl % 5)); break;
	case IORING_OP_SEND: case IORING_OP_RECV: {
		int mf = CHOOSE(g, ((const int[]){ 0, MSG_DONTWAIT, MSG_PEEK, MSG_WAITALL }));
		if (g->op == IORING_OP_SEND)
			io_uring_prep_send(s, fd, b, g->len, mf);
		else
			io_uring_prep_recv(s, fd, b, g->len, mf);
		break;
	}
	case IORING_OP_EPOLL_CTL: io_uring_prep_epoll_ctl(s, f->fd[F_EPOLL], fd, (int)(fl % 4), ptr(g->addr_k, &epev)); break;
	case IORING_OP_SPLICE:
		io_uring_prep_splice(s, fd2, g->off % 2 ? -1 : 0, fd, g->off % 3 ? -1 : 0, g->len, fl & 0xf);
		break;
	case IORING_OP_TEE: io_uring_prep_tee(s, fd2, fd, g->len, fl & 0xf); break;
	case IORING_OP_PROVIDE_BUFFERS: io_uring_prep_provide_buffers(s, b, 64, (int)(g->len % 5), (int)(g->off % 3), (int)(fl % 4)); break;
	case IORING_OP_REMOVE_BUFFERS: io_uring_prep_remove_buffers(s, (int)(g->len % 5), (int)(g->off % 3)); break;
	case IORING_OP_SHUTDOWN: io_uring_prep_shutdown(s, fd, (int)(fl % 4)); break;
	case IORING_OP_RENAMEAT: io_uring_prep_renameat(s, dfd, p1, dfd2, p2, fl & 1); break;
	case IORING_OP_UNLINKAT: io_uring_prep_unlinkat(s, dfd, p1, (int)(fl & AT_REMOVEDIR)); break;
	case IORING_OP_MKDIRAT: io_uring_prep_mkdirat(s, dfd, p1, 0700); break;
	case IORING_OP_SYMLINKAT: io_uring_prep_symlinkat(s, p2, dfd, p1); break;
	case IORING_OP_LINKAT: io_uring_prep_linkat(s, dfd, p1, dfd2, p2, 0); break;
	case IORING_OP_ASYNC_CANCEL: {
		/* nothing else is in flight on a fresh ring: what each way of asking finds */
		unsigned cf = (unsigned)CHOOSE(g, ((const int[]){ 0, IORING_ASYNC_CANCEL_ALL, IORING_ASYNC_CANCEL_ANY,
			IORING_ASYNC_CANCEL_FD, IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL,
			IORING_ASYNC_CANCEL_FD_FIXED, 1 << 7 }));
		if (cf & IORING_ASYNC_CANCEL_FD)
			io_uring_prep_cancel_fd(s, fd, cf);
		else
			io_uring_prep_cancel64(s, g->off, (int)cf);
		break;
	}
	default: FAIL("op %u", g->op);
	}
	s->flags = g->sqe_flags;
	switch (g->stray) {               /* the field's own meaning where the op uses it */
	case 1: s->ioprio = 1; break;
	case 2: s->off = 1; break;
	case 3: s->len = 1; break;
	case 4: s->rw_flags = 1; break;
	case 5: s->buf_index = 1; break;
	case 6: s->splice_fd_in = 1; break;
	case 7: s->addr3 = 1; break;
	case 8: s->__pad2[0] = 1; break;
	case 9: s->personality = 1; break;
	}
}

struct outcome {
	int pending;
	int32_t res;
	uint32_t flags;
	char bytes[BUF];
	char state[4096];
	size_t nstate;
};

static int fd_like(uint8_t op)
{
	return op == IORING_OP_OPENAT || op == IORING_OP_ACCEPT;
}

/* A request still pending (user_data 7) is cancelled and both CQEs reaped, so that nothing
 * of it outlives its fixture; one the cancel cannot stop (running) ends when the fixture's
 * fds close (the empty pipes' and sockets' writers too). */
static void settle(struct io_uring *ring, uint8_t op, struct fixture *f)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	io_uring_prep_cancel64(s, 7, 0);
	s->user_data = 8;
	CHECK_EQ(io_uring_submit(ring), 1);
	int seen = 0;
	for (int i = 0; i < 200 && seen != 3; i++) {
		struct io_uring_cqe *c;
		struct __kernel_timespec t = { 0, 50000000 };
		if (i == 40)
			fixture_close(f);            /* 2 s: a cancel takes less */
		if (io_uring_wait_cqe_timeout(ring, &c, &t) == 0) {
			CHECK(c->user_data == 7 || c->user_data == 8);
			if (c->user_data == 7 && fd_like(op) && c->res >= 0)
				close(c->res);
			seen |= c->user_data == 7 ? 1 : 2;
			io_uring_cqe_seen(ring, c);
		}
	}
	if (seen != 3)
		FAIL("a pending request did not end when cancelled and its fds closed (seen %d)", seen);
}

/* g on ring with a fresh fixture, its fds at SLOT0 + pos[kind] (pos NULL: where they were
 * opened), AT_FDCWD its directory; the CQE waited for wait_ms, else o->pending. */
static void run_on(struct io_uring *ring, const struct gen *g, const int *pos, long wait_ms, struct outcome *o)
{
	struct fixture f;
	fixture_make(&f, pos);
	CHECK_EQ(chdir(f.dir), 0);
	memset(buf, 0xaa, BUF);
	iovs[0] = (struct iovec){ buf, 10 };
	iovs[1] = (struct iovec){ buf + 100, 20 };
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	gen_sqe(g, &f, s);
	s->user_data = 7;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe *c;
	struct __kernel_timespec t = { wait_ms / 1000, wait_ms % 1000 * 1000000 };
	memset(o, 0, sizeof(*o));
	if (io_uring_wait_cqe_timeout(ring, &c, &t) == 0) {
		CHECK_EQ(c->user_data, 7);
		o->res = c->res;
		o->flags = c->flags & (IORING_CQE_F_MORE | IORING_CQE_F_NOTIF);
		if (fd_like(g->op) && c->res >= 0) {
			close(c->res);
			o->res = 0;
		}
		io_uring_cqe_seen(ring, c);
	} else {
		o->pending = 1;
	}
	memcpy(o->bytes, buf, BUF);
	if (o->pending)
		settle(ring, g->op, &f);
	o->nstate = fixture_state(&f, o->state, sizeof o->state);
	CHECK_EQ(fchdir(away), 0);
	fixture_free(&f);
}

static void ring_make(struct io_uring *ring, int emulated)
{
	if (emulated)
		setenv("URING_EMULATE", "1", 1);
	else
		unsetenv("URING_EMULATE");
	CHECK_EQ(io_uring_queue_init(4, ring, 0), 0);
	CHECK_EQ(tu_ring_is_emulated(ring->ring_fd), emulated);
}

/* Part 1: g on a fresh ring and fixture. */
static void run_one(const struct gen *g, int emulated, struct outcome *o)
{
	struct io_uring ring;
	ring_make(&ring, emulated);
	run_on(&ring, g, NULL, 20, o);
	io_uring_queue_exit(&ring);
}

/* When one ring is still waiting and the other is not: the waiting one again, given a second. */
static void run_patient(const struct gen *g, int emulated, struct outcome *o)
{
	for (int i = 0; i < 50 && (run_one(g, emulated, o), o->pending); i++)
		usleep(20000);
}

static void describe(const struct gen *g, char *out, size_t cap)
{
	snprintf(out, cap, "op %u flags 0x%x fd %s fd2 %s addr#%d addr2#%d len %u off %lld opflags 0x%x pick %u stray %d",
		 g->op, g->sqe_flags, kind_name[g->fd_i], kind_name[g->fd2_i], g->addr_k, g->addr2_k, g->len,
		 (long long)g->off, g->op_flags, g->pick % 20, g->stray);
}

/* The two outcomes agree (a pending request's result aside; STATX fills its buffer with
 * times); else the difference is printed, with what (the numbers' history) says. */
static int compare(const char *part, long i, const struct gen *g, const struct outcome *k,
		   const struct outcome *u, const char *what)
{
	int same = k->pending == u->pending && (k->pending || (k->res == u->res && k->flags == u->flags)) &&
		   (g->op == IORING_OP_STATX || !memcmp(k->bytes, u->bytes, BUF)) && k->nstate == u->nstate &&
		   !memcmp(k->state, u->state, k->nstate);
	if (same)
		return 1;
	char d[256];
	describe(g, d, sizeof d);
	fprintf(stderr, "DIFF %s trial %ld: %s%s: kernel %s%d flags %x, emulated %s%d flags %x%s%s\n", part, i, d,
		what, k->pending ? "pending " : "", k->res, k->flags, u->pending ? "pending " : "", u->res, u->flags,
		memcmp(k->bytes, u->bytes, BUF) ? ", buffer differs" : "",
		k->nstate != u->nstate || memcmp(k->state, u->state, k->nstate) ? ", files differ" : "");
	return 0;
}

/* Part 1: each SQE on fresh rings. The number of SQEs answered differently. */
static long part_fresh(long trials)
{
	static struct outcome k, u;
	long bad = 0;
	for (long i = 0; i < trials; i++) {
		struct gen g;
		gen_make(&g, ops, sizeof ops);
		scope(&g, 0);
		run_one(&g, 0, &k);
		run_one(&g, 1, &u);
		if (k.pending != u.pending) {
			if (k.pending)
				run_patient(&g, 0, &k);
			else
				run_patient(&g, 1, &u);
		}
		bad += !compare("fresh", i, &g, &k, &u, "");
	}
	return bad;
}

/*
 * Part 2: one kernel ring and one emulated ring for all SQEs, each SQE on its fixture made
 * afresh with every fd moved (dup3) to a number that named another kind for the SQE before
 * (the slots SLOT0.. dealt anew, none keeping its kind), the same sequence on both rings. Half
 * the time an SQE uses a number the one before used, so the emulated ring's cached kind of it
 * is of another file. The kernel has no such state: a request pending there and not in the
 * emulation runs again on the kernel's ring (as part 1); the emulated ring, whose cache a rerun
 * would change, waits a second at once where the kernel did not wait.
 */
#define NSLOT (NFD - 1)                 /* every kind but F_NONE (-1) has a number */
#define NHIST 3

static long part_reuse(long trials)
{
	static struct outcome k, u;
	struct io_uring kr, ur;
	ring_make(&kr, 0);
	ring_make(&ur, 1);
	int at[NSLOT], pos[NFD], hist[NSLOT][NHIST], used[3], nused = 0;
	for (int s = 0, kd = 0; kd < NFD; kd++)
		if (kd != F_NONE)
			at[s++] = kd;
	memset(hist, -1, sizeof hist);
	long bad = 0;
	for (long i = 0; i < trials; i++) {
		int prev[NSLOT], moved;
		memcpy(prev, at, sizeof prev);
		do {                            /* a shuffle with no kind at its old number */
			for (int s = NSLOT - 1; s > 0; s--) {
				int j = (int)(rnd() % (unsigned)(s + 1)), t = at[s];
				at[s] = at[j];
				at[j] = t;
			}
			moved = 1;
			for (int s = 0; s < NSLOT; s++)
				moved &= at[s] != prev[s];
		} while (!moved);
		for (int s = 0; s < NSLOT; s++)
			pos[at[s]] = s;
		pos[F_NONE] = -1;
		struct gen g;
		gen_make(&g, fd_ops, sizeof fd_ops);
		int s1 = nused && rnd() % 2 ? used[rnd() % (unsigned)nused] : (int)(rnd() % NSLOT);
		int s2 = nused && rnd() % 2 ? used[rnd() % (unsigned)nused] : (int)(rnd() % NSLOT);
		g.fd_i = rnd() % 16 ? at[s1] : F_NONE;
		g.fd2_i = rnd() % 16 ? at[s2] : F_NONE;
		scope(&g, 1);
		run_on(&kr, &g, pos, 20, &k);
		run_on(&ur, &g, pos, k.pending ? 20 : 1000, &u);
		for (int j = 0; j < 50 && k.pending && !u.pending; j++) {
			usleep(20000);
			run_on(&kr, &g, pos, 20, &k);
		}
		/* the numbers this SQE names (the fd the emulation looks up first) */
		nused = 0;
		if (g.fd_i != F_NONE)
			used[nused++] = pos[g.fd_i];
		if ((g.op == IORING_OP_SPLICE || g.op == IORING_OP_TEE) && g.fd2_i != F_NONE)
			used[nused++] = pos[g.fd2_i];
		if (g.op == IORING_OP_EPOLL_CTL)
			used[nused++] = pos[F_EPOLL];
		char what[256];
		size_t n = 0;
		for (int j = 0; j < nused; j++) {
			const int *h = hist[used[j]];
			n += (size_t)snprintf(what + n, sizeof what - n, "; fd %d: %s, before: %s %s %s", SLOT0 + used[j],
					      kind_name[at[used[j]]], h[0] < 0 ? "-" : kind_name[h[0]],
					      h[1] < 0 ? "-" : kind_name[h[1]], h[2] < 0 ? "-" : kind_name[h[2]]);
		}
		bad += !compare("reuse", i, &g, &k, &u, what);
		for (int j = 0; j < nused; j++) {
			int *h = hist[used[j]];
			if (j && used[j] == used[0])
				continue;
			memmove(h + 1, h, (NHIST - 1) * sizeof *h);
			h[0] = at[used[j]];
		}
	}
	io_uring_queue_exit(&kr);
	io_uring_queue_exit(&ur);
	return bad;
}

/*
 * Part 3: IOSQE_IO_DRAIN against the kernel's ring. Each script runs on a fresh kernel ring
 * and a fresh emulated one: its SQEs (user_data: their place in the script, from 1) are
 * queued and submitted in the batches it says, and at each "look" the CQEs that came are
 * noted (user_data and result, in user_data order): the kernel's ring until none came for
 * 100 ms, the emulated one until it has as many (5 s at most) and then none for 100 ms. Every
 * step of a script is one whose outcome this kernel (Linux 6.18) gives every time: a drained
 * NOP submitted alone and not waited for before the next submission is not among them (the
 * kernel's ring may or may not still count it as running then).
 * Words: read (16 bytes of a file that holds them), nop, bad (a NOP with ioprio 1: -EINVAL at
 * preparation), pollA, pollB (POLLIN of an empty pipe, A or B), each with +drain, +link; submit;
 * look; writeA, writeB (a byte into it).
 */
static const struct {
	const char *name, *script;
} drain_scripts[] = {
	/* what follows a drained request waits for it to complete, not for each other: the last
	 * NOP completes though the poll before it does not; the drain stays active while the
	 * poll it held back runs, so a NOP submitted later waits for the poll */
	{ "after a drain", "read nop+drain pollA nop submit look nop submit look writeA look" },
	{ "a drain inside a chain drains the next chain", "nop+link nop+drain pollA nop submit look writeA look" },
	{ "a drain on a chain's head does not", "nop+link+drain nop pollA nop submit look writeA look" },
	{ "a drained poll", "pollA+drain pollB submit look writeA look nop submit look writeB look" },
	{ "a drain and a poll in one batch", "nop+drain pollA submit look nop submit look writeA look" },
	{ "a drain waits", "pollA nop+drain submit look writeA look pollB submit nop submit look writeB look" },
	{ "a drain that ended", "nop+drain submit look pollA submit nop submit look writeA look" },
	/* what fails preparation (a NOP's ioprio) completes at once, behind a drain or not */
	{ "a request that fails", "pollA+drain submit nop bad submit look writeA look" },
	{ "a chain that fails", "pollA+drain submit nop+link bad submit look writeA look" },
};

#define DLOOKS 8
struct dout {
	int nlook;
	int count[DLOOKS];            /* CQEs at each look */
	char text[512];               /* "| ud:res ... | ..." */
};

/* The CQEs that come now, into o (at least want of them, waited for). */
static void drain_look(struct io_uring *ring, int want, struct dout *o)
{
	uint64_t ud[16];
	int32_t res[16];
	int n = 0;
	for (;;) {
		struct io_uring_cqe *c;
		struct __kernel_timespec t = { n < want ? 5 : 0, n < want ? 0 : 100000000 };
		if (io_uring_wait_cqe_timeout(ring, &c, &t))
			break;
		CHECK(n < 16);
		int i = n++;
		for (; i > 0 && ud[i - 1] > c->user_data; i--) {
			ud[i] = ud[i - 1];
			res[i] = res[i - 1];
		}
		ud[i] = c->user_data;
		res[i] = c->res;
		io_uring_cqe_seen(ring, c);
	}
	CHECK(o->nlook < DLOOKS);
	o->count[o->nlook++] = n;
	size_t len = strlen(o->text);
	len += (size_t)snprintf(o->text + len, sizeof o->text - len, " |");
	for (int i = 0; i < n && len < sizeof o->text; i++)
		len += (size_t)snprintf(o->text + len, sizeof o->text - len, " %llu:%d", (unsigned long long)ud[i], res[i]);
}

/* script on a fresh ring, emulated or not; ref: the kernel's outcome (how many CQEs to wait
 * for at each look), or NULL */
static void drain_run(const char *script, int emulated, const struct dout *ref, struct dout *o)
{
	struct io_uring ring;
	int pa[2], pb[2], mfd = memfd_create("drain", MFD_CLOEXEC);
	static char rbuf[16];
	char words[256], *save = NULL;
	unsigned ud = 0, queued = 0;
	memset(o, 0, sizeof(*o));
	ring_make(&ring, emulated);
	CHECK(mfd >= 0);
	CHECK_EQ(write(mfd, "0123456789abcdef", 16), 16);
	CHECK_EQ(pipe2(pa, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(pb, O_CLOEXEC), 0);
	CHECK(strlen(script) < sizeof words);
	strcpy(words, script);
	for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (!strcmp(w, "submit")) {
			CHECK_EQ(io_uring_submit(&ring), queued);
			queued = 0;
		} else if (!strcmp(w, "look")) {
			drain_look(&ring, ref ? ref->count[o->nlook] : 0, o);
		} else if (!strcmp(w, "writeA") || !strcmp(w, "writeB")) {
			CHECK_EQ(write(w[5] == 'A' ? pa[1] : pb[1], "x", 1), 1);
		} else {
			struct io_uring_sqe *s = tu_sqe(&ring);
			if (!strncmp(w, "read", 4))
				io_uring_prep_read(s, mfd, rbuf, sizeof rbuf, 0);
			else if (!strncmp(w, "nop", 3))
				io_uring_prep_nop(s);
			else if (!strncmp(w, "bad", 3)) {
				io_uring_prep_nop(s);
				s->ioprio = 1;
			}
			else if (!strncmp(w, "poll", 4))
				io_uring_prep_poll_add(s, w[4] == 'A' ? pa[0] : pb[0], POLLIN);
			else
				FAIL("drain script \"%s\": what is \"%s\"?", script, w);
			if (strstr(w, "+drain"))
				s->flags |= IOSQE_IO_DRAIN;
			if (strstr(w, "+link"))
				s->flags |= IOSQE_IO_LINK;
			s->user_data = ++ud;
			queued++;
		}
	}
	io_uring_queue_exit(&ring);
	close(mfd);
	close(pa[0]);
	close(pa[1]);
	close(pb[0]);
	close(pb[1]);
}

/* Part 3: the number of scripts answered differently. */
static long part_drain(void)
{
	long bad = 0;
	for (size_t i = 0; i < sizeof drain_scripts / sizeof drain_scripts[0]; i++) {
		struct dout k, u;
		drain_run(drain_scripts[i].script, 0, NULL, &k);
		drain_run(drain_scripts[i].script, 1, &k, &u);
		if (strcmp(k.text, u.text)) {
			fprintf(stderr, "DIFF drain \"%s\" (%s): CQEs at each look: kernel%s, emulated%s\n",
				drain_scripts[i].name, drain_scripts[i].script, k.text, u.text);
			bad++;
		}
	}
	return bad;
}

int main(void)
{
	char why[256];
	if (!tu_have_io_uring(why, sizeof why)) {
		tu_part_skip("io_uring", "emulated ring against the kernel's", why);
		tu_part_skip("io_uring", "emulated ring against the kernel's, fd numbers reused", why);
		tu_part_skip("io_uring", "IOSQE_IO_DRAIN scripts, emulated ring against the kernel's", why);
		return 0;
	}
	tu_uring_check_lib();
	const char *e = getenv("TRIALS");
	long trials = e ? atol(e) : 1500;
	e = getenv("REUSE_TRIALS");
	long rtrials = e ? atol(e) : 1000;
	e = getenv("SEED");
	uint64_t seed = e ? strtoull(e, NULL, 0) : 0x5eed1234abcdull;
	char gone[] = "/tmp/tu_diff_awayXXXXXX";
	CHECK(mkdtemp(gone) != NULL);
	away = open(gone, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(away >= 0);
	CHECK_EQ(fchdir(away), 0);
	CHECK_EQ(rmdir(gone), 0);
	signal(SIGPIPE, SIG_IGN);                   /* writes to the socket whose peer is gone */
	char *m = mmap(NULL, BUF + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK_EQ(mprotect(m + BUF, 4096, PROT_NONE), 0);
	buf = m;
	hole = m + BUF;
	if (!tu_have_odirect("/tmp", why, sizeof why)) {
		odirect = 0;
		tu_part_skip("O_DIRECT", "an O_DIRECT file among the fds compared", why);
	}
	rs = seed;
	long bad = part_fresh(trials);
	tu_part_ran("io_uring", "emulated ring against the kernel's");
	printf("SUMMARY: %ld SQEs on fresh rings, %ld answered differently\n", trials, bad);
	rs = seed;
	long rbad = part_reuse(rtrials);
	tu_part_ran("io_uring", "emulated ring against the kernel's, fd numbers reused");
	printf("SUMMARY: %ld SQEs on two kept rings, fd numbers reused for other kinds, %ld answered differently\n",
	       rtrials, rbad);
	long dbad = part_drain();
	tu_part_ran("io_uring", "IOSQE_IO_DRAIN scripts, emulated ring against the kernel's");
	printf("SUMMARY: %zu IOSQE_IO_DRAIN scripts, %ld answered differently\n",
	       sizeof drain_scripts / sizeof drain_scripts[0], dbad);
	if (bad || rbad || dbad)
		FAIL("%ld of %ld SQEs on fresh rings, %ld of %ld on kept rings and %ld drain scripts answered differently",
		     bad, trials, rbad, rtrials, dbad);
	return 0;
}
