/* Description: the emulated ring answers as the kernel's does. Random SQEs (opcodes of the Linux
 * 5.10 set and later ones both support, fds from {bad, -1, a file, a directory, both ends of a
 * pipe holding data, a socket holding data, /dev/null, an epoll fd}, pointers from {NULL, low
 * garbage, an unmapped page, the op's own valid argument}, lengths, offsets, op flags, and now and
 * then a stray value in a field the op does not use) each run on a fresh fixture through a kernel
 * ring and an emulated one (URING_EMULATE=1 at setup) in the same process; their CQEs must agree:
 * the result (an fd's number aside), the F_MORE/F_NOTIF flags, the bytes a read left in the
 * buffer and the file's contents after. A request still pending after 20 ms on both rings agrees
 * (it waits for something that never comes); on one only, the other gets a second more. The
 * kernel is the reference: with io_uring blocked this test has nothing to compare with and
 * skips its one part. TRIALS (env) sets the number of SQEs (default 1500), SEED the seed. */
#include "test_uring.h"
#include "parts.h"
#include <dirent.h>
#include <fcntl.h>
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

/* The fixture: made afresh for each run of an SQE. */
enum { F_BAD, F_NONE, F_FILE, F_DIR, F_PIPE_R, F_PIPE_W, F_SOCK, F_NULLDEV, F_EPOLL, NFD };
struct fixture {
	char dir[64];
	int fd[NFD];
	int dirfd;
};

static char top[4096];              /* the test's own directory */
static char *buf;                   /* BUF bytes, then an unmapped page */
static char *hole;
static struct iovec iovs[2];
static struct __kernel_timespec ts1ms = { 0, 1000000 };
static struct epoll_event epev = { EPOLLIN, { 0 } };

static void fixture_make(struct fixture *f)
{
	strcpy(f->dir, "/tmp/tu_diffXXXXXX");
	CHECK(mkdtemp(f->dir) != NULL);
	f->dirfd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(f->dirfd >= 0);
	int fd = openat(f->dirfd, "f", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "0123456789abcdef", 16), 16);
	CHECK_EQ(mkdirat(f->dirfd, "d", 0700), 0);
	int p[2], sv[2];
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_EQ(write(p[1], "pipedata", 8), 8);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	CHECK_EQ(write(sv[1], "sockdata", 8), 8);
	f->fd[F_BAD] = 1000;            /* not open: the test's own fds stay below */
	f->fd[F_NONE] = -1;
	f->fd[F_FILE] = fd;
	f->fd[F_DIR] = f->dirfd;
	f->fd[F_PIPE_R] = p[0];
	f->fd[F_PIPE_W] = p[1];
	f->fd[F_SOCK] = sv[0];
	f->fd[F_NULLDEV] = open("/dev/null", O_RDWR | O_CLOEXEC);
	f->fd[F_EPOLL] = epoll_create1(EPOLL_CLOEXEC);
	CHECK(f->fd[F_NULLDEV] >= 0 && f->fd[F_EPOLL] >= 0);
	close(sv[1]);                   /* the data stays readable */
}

/* The file's contents and the directory's names, to compare after a run. */
static size_t fixture_state(struct fixture *f, char *out, size_t cap)
{
	size_t n = 0;
	char path[128];
	snprintf(path, sizeof path, "%s/f", f->dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r = read(fd, out, cap / 2);
		n = r > 0 ? (size_t)r : 0;
		close(fd);
	}
	struct dirent **names;
	int k = scandir(f->dir, &names, NULL, alphasort);
	CHECK(k >= 0);
	for (int i = 0; i < k; i++) {
		n += (size_t)snprintf(out + n, cap - n, "|%s", names[i]->d_name);
		free(names[i]);
	}
	free(names);
	return n;
}

static void fixture_free(struct fixture *f)
{
	for (int i = F_FILE; i < NFD; i++)
		if (i != F_DIR)
			close(f->fd[i]);        /* EBADF where the SQE closed it: fine */
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
	CHECK_EQ(system(cmd), 0);
	close(f->dirfd);
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
	IORING_OP_SYMLINKAT, IORING_OP_LINKAT,
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

/*
 * What the emulation does not yet answer as this kernel (6.x) does is left out here, each
 * with the kernel's answer (DROPIN.md, "Compared with the kernel"); all else is compared.
 */
static void scope(struct gen *g)
{
	if (is_rw(g->op)) {
		if (g->fd_i == F_EPOLL)         /* a READ of an epoll fd waits in the kernel */
			g->fd_i = F_FILE;
		/* a directory with RWF_DSYNC, RWF_SYNC, RWF_APPEND or RWF_NOSIGNAL: the kernel's
		 * ring says -EISDIR, preadv2 -EOPNOTSUPP (a file without read_iter takes no flags) */
		if (g->fd_i == F_DIR)
			g->op_flags &= ~(unsigned)(RWF_DSYNC | RWF_SYNC | RWF_APPEND | 0x100);
	}
	/* stray values the kernel reads as a feature the emulation does not have: a read's or
	 * write's __pad2 (PI attributes: addr3 is then read, -EFAULT at NULL); POLL_FIRST
	 * (ioprio 1) of a SEND/RECV, which this kernel answers -EAGAIN or waits for on a file
	 * that is not a socket or a socket whose peer left; a multishot ACCEPT of a file that
	 * is not listening (-EBADFD or a wait) */
	if ((is_rw(g->op) && g->stray == 8) ||
	    ((g->op == IORING_OP_SEND || g->op == IORING_OP_RECV || g->op == IORING_OP_ACCEPT) && g->stray == 1))
		g->stray = 0;
	if (is_path(g->op)) {
		/* a NULL path: this kernel says -ENOENT for some ops, -EFAULT for others */
		if (g->addr_k == 0)
			g->addr_k = 1;
		if (g->addr2_k == 0)
			g->addr2_k = 1;
	}
}

static void gen_make(struct gen *g)
{
	static const uint32_t lens[] = { 0, 1, 8, 16, 100, 4096, BUF, 0x7fffffff };
	static const uint64_t offs[] = { 0, 0, 4, 16, 100, (uint64_t)-1, (uint64_t)-2, 1ull << 62 };
	static const uint32_t flagsv[] = { 0, 0, 0, 1, 2, 3, 4, 7, 0x10, 0x100, 0x80000000u };
	static const uint8_t sqef[] = { 0, 0, 0, IOSQE_ASYNC };
	memset(g, 0, sizeof(*g));
	g->op = PICK(ops);
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
	scope(g);
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

static void run_one(const struct gen *g, int emulated, struct outcome *o)
{
	if (emulated)
		setenv("URING_EMULATE", "1", 1);
	else
		unsetenv("URING_EMULATE");
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(4, &ring, 0), 0);
	CHECK_EQ(tu_ring_is_emulated(ring.ring_fd), emulated);
	struct fixture f;
	fixture_make(&f);
	CHECK_EQ(chdir(f.dir), 0);                  /* AT_FDCWD: the fixture's directory */
	memset(buf, 0xaa, BUF);
	iovs[0] = (struct iovec){ buf, 10 };
	iovs[1] = (struct iovec){ buf + 100, 20 };
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	gen_sqe(g, &f, s);
	s->user_data = 7;
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe *c;
	struct __kernel_timespec t = { 0, 20000000 };
	memset(o, 0, sizeof(*o));
	if (io_uring_wait_cqe_timeout(&ring, &c, &t) == 0) {
		o->res = c->res;
		o->flags = c->flags & (IORING_CQE_F_MORE | IORING_CQE_F_NOTIF);
		if (fd_like(g->op) && c->res >= 0) {
			close(c->res);
			o->res = 0;
		}
		io_uring_cqe_seen(&ring, c);
	} else {
		o->pending = 1;
	}
	memcpy(o->bytes, buf, BUF);
	io_uring_queue_exit(&ring);
	o->nstate = fixture_state(&f, o->state, sizeof o->state);
	CHECK_EQ(chdir(top), 0);
	fixture_free(&f);
}

/* When one ring is still waiting and the other is not: the waiting one again, given a second. */
static void run_patient(const struct gen *g, int emulated, struct outcome *o)
{
	for (int i = 0; i < 50 && (run_one(g, emulated, o), o->pending); i++)
		usleep(20000);
}

static void describe(const struct gen *g, char *out, size_t cap)
{
	snprintf(out, cap, "op %u flags 0x%x fd#%d fd2#%d addr#%d addr2#%d len %u off %lld opflags 0x%x pick %u stray %d",
		 g->op, g->sqe_flags, g->fd_i, g->fd2_i, g->addr_k, g->addr2_k, g->len, (long long)g->off,
		 g->op_flags, g->pick % 5, g->stray);
}

int main(void)
{
	char why[256];
	if (!tu_have_io_uring(why, sizeof why)) {
		tu_part_skip("io_uring", "emulated ring against the kernel's", why);
		return 0;
	}
	tu_uring_check_lib();
	const char *e = getenv("TRIALS");
	long trials = e ? atol(e) : 1500;
	e = getenv("SEED");
	rs = e ? strtoull(e, NULL, 0) : 0x5eed1234abcdull;
	CHECK(getcwd(top, sizeof top));
	signal(SIGPIPE, SIG_IGN);                   /* writes to the socket whose peer is gone */
	char *m = mmap(NULL, BUF + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK_EQ(mprotect(m + BUF, 4096, PROT_NONE), 0);
	buf = m;
	hole = m + BUF;
	static struct outcome k, u;
	int bad = 0;
	for (long i = 0; i < trials; i++) {
		struct gen g;
		gen_make(&g);
		run_one(&g, 0, &k);
		run_one(&g, 1, &u);
		if (k.pending != u.pending) {
			if (k.pending)
				run_patient(&g, 0, &k);
			else
				run_patient(&g, 1, &u);
		}
		int same = k.pending == u.pending &&
			   (k.pending || (k.res == u.res && k.flags == u.flags)) &&
			   (g.op == IORING_OP_STATX || !memcmp(k.bytes, u.bytes, BUF)) &&
			   k.nstate == u.nstate && !memcmp(k.state, u.state, k.nstate);
		if (!same) {
			char d[256];
			describe(&g, d, sizeof d);
			fprintf(stderr, "DIFF trial %ld: %s: kernel %s%d flags %x, emulated %s%d flags %x%s%s\n", i, d,
				k.pending ? "pending " : "", k.res, k.flags, u.pending ? "pending " : "", u.res,
				u.flags, memcmp(k.bytes, u.bytes, BUF) ? ", buffer differs" : "",
				k.nstate != u.nstate || memcmp(k.state, u.state, k.nstate) ? ", files differ" : "");
			bad++;
		}
	}
	tu_part_ran("io_uring", "emulated ring against the kernel's");
	printf("SUMMARY: %ld SQEs, %d answered differently\n", trials, bad);
	if (bad)
		FAIL("%d of %ld SQEs answered differently", bad, trials);
	return 0;
}
