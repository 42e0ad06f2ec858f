/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the emulated ring's executor: takes SQEs from the SQ (copying each
 * one before looking at it), builds link chains, holds back IOSQE_IO_DRAIN,
 * runs each operation where the kernel's io_uring would: inline when it
 * cannot block (RWF_NOWAIT reads and writes, MSG_DONTWAIT sends and receives,
 * NOP, CLOSE, ...), on the reactor when it waits for readiness (poll: sockets,
 * pipes) or time, on a worker when it may block (RWF_NOWAIT said -EAGAIN on a
 * regular file, fsync, openat, ...), through kernel AIO for O_DIRECT files.
 * Completion posts the CQE and starts the next request of the chain, or
 * cancels the rest with -ECANCELED when the request failed.
 *
 * Must never: dereference an SQE field as a pointer (system calls or ucopy
 * check them: -EFAULT), use an fd or index without checking it (-EBADF,
 * -EINVAL), post two CQEs for one request or none, or run an opcode that the
 * probe does not report (the table below is the single source of both).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "opdef.h"

#ifndef OPEN_HOW_SIZE_VER0
#define OPEN_HOW_SIZE_VER0 24
#endif

/* Set while the submitting thread runs requests inline (REGISTER_EVENTFD_ASYNC).
 * initial-exec: read per request, it must not cost a __tls_get_addr call. */
static __thread int tls_in_submit __attribute__((tls_model("initial-exec")));

/* ---- requests ---- */

static struct ureq *req_get_locked(struct emu_ring *r)
{
	struct ureq *q = r->freelist;
	if (q) {
		r->freelist = q->qnext;
	} else {
		if (reactor_reserve_locked(r) < 0 || !(q = malloc(sizeof(*q))))
			return NULL;
	}
	memset(q, 0, offsetof(struct ureq, iov_in));
	q->r = r;
	q->fd = -1;
	q->qnext = NULL;
	q->p1 = q->p2 = NULL;
	q->umsg = NULL;
	q->next = r->live;
	q->prev = NULL;
	if (r->live)
		r->live->prev = q;
	r->live = q;
	return q;
}

/* ---- the user_data hash: requests found by user_data without a walk of all ---- */

static struct ureq **ud_chain(struct emu_ring *r, uint64_t ud)
{
	return &r->udh[(ud * 0x9e3779b97f4a7c15ull) >> (64 - r->udh_bits)];
}

static void ud_hash_add(struct ureq *q)
{
	struct ureq **h = ud_chain(q->r, q->sqe.user_data);
	q->hprev = NULL;
	q->hnext = *h;
	if (*h)
		(*h)->hprev = q;
	*h = q;
	q->hashed = 1;
}

static void ud_hash_del(struct ureq *q)
{
	if (!q->hashed)
		return;
	if (q->hprev)
		q->hprev->hnext = q->hnext;
	else
		*ud_chain(q->r, q->sqe.user_data) = q->hnext;
	if (q->hnext)
		q->hnext->hprev = q->hprev;
	q->hnext = q->hprev = NULL;
	q->hashed = 0;
}

/* q's user_data becomes ud (a poll update). Ring lock held. */
static void ud_rehash(struct ureq *q, uint64_t ud)
{
	ud_hash_del(q);
	q->sqe.user_data = ud;
	ud_hash_add(q);
}

void exec_live_del(struct ureq *q)
{
	struct emu_ring *r = q->r;
	ud_hash_del(q);
	if (q->prev)
		q->prev->next = q->next;
	else if (r->live == q)
		r->live = q->next;
	if (q->next)
		q->next->prev = q->prev;
	q->next = q->prev = NULL;
}

/* Free what a request copied at submission: its iovec array and path or
 * address arguments. */
void exec_args_free(struct ureq *q)
{
	if (q->iov && q->iov != q->iov_in)
		free(q->iov);
	if (q->p1 || q->p2) {
		free(q->p1);
		free(q->p2);
	}
	q->iov = NULL;
	q->p1 = q->p2 = NULL;
}

void exec_put_locked(struct emu_ring *r, struct ureq *q)
{
	reactor_forget_locked(q);
	exec_live_del(q);
	exec_args_free(q);
	q->state = RS_FREE;
	q->qnext = r->freelist;
	r->freelist = q;
}

/* ---- files ---- */

static void fill_fent(int fd, struct fent *fe)
{
	struct stat st;
	fe->fd = fd;
	fe->kind = FK_OTHER;
	fe->direct = fe->nonblock = 0;
	if (fstat(fd, &st) == 0) {
		if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
			fe->kind = FK_REG;
		else if (S_ISSOCK(st.st_mode))
			fe->kind = FK_SOCK;
		else if (!S_ISDIR(st.st_mode))
			fe->kind = FK_POLL;     /* pipes, ttys, eventfd, timerfd, ...: streams */
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0) {
		fe->direct = !!(fl & O_DIRECT);
		fe->nonblock = !!(fl & O_NONBLOCK);
	}
}

/*
 * Resolve an SQE's fd: fixed (an index into the registered table), else the
 * process fd, whose kind is cached by number (see DROPIN.md: a stale entry
 * only misroutes, never misreads). fixed = -1: fill from scratch.
 */
int exec_file(struct emu_ring *r, int fd, int fixed, struct fent *out)
{
	if (fixed > 0) {
		pthread_mutex_lock(&r->lock);
		int ok = (unsigned)fd < r->nfiles && r->files[fd].fd >= 0;
		if (ok)
			*out = r->files[fd];
		pthread_mutex_unlock(&r->lock);
		return ok ? 0 : -EBADF;
	}
	if (fd < 0)
		return -EBADF;
	if (fixed == 0 && fd < EMU_FCACHE && __atomic_load_n(&r->fcache[fd].valid, __ATOMIC_ACQUIRE)) {
		*out = r->fcache[fd];
		return 0;
	}
	if (fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	if (emu_find_checked(fd)) {
		/* An emulated ring: an eventfd that may be polled. */
		out->fd = fd;
		out->kind = FK_POLL;
		out->direct = 0;
		out->nonblock = 1;
		return 0;
	}
	fill_fent(fd, out);
	if (fixed == 0 && fd < EMU_FCACHE) {
		r->fcache[fd].fd = fd;
		r->fcache[fd].kind = out->kind;
		r->fcache[fd].direct = out->direct;
		r->fcache[fd].nonblock = out->nonblock;
		__atomic_store_n(&r->fcache[fd].vgen, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&r->fcache[fd].valid, 1, __ATOMIC_RELEASE);
	}
	return 0;
}

void exec_fcache_drop(struct emu_ring *r, int fd)
{
	if (fd >= 0 && fd < EMU_FCACHE)
		__atomic_store_n(&r->fcache[fd].valid, 0, __ATOMIC_RELEASE);
}

static int req_file(struct ureq *q)
{
	int e = exec_file(q->r, q->sqe.fd, (q->sqe.flags & IOSQE_FIXED_FILE) ? 1 : 0, &q->fe);
	if (e == 0)
		q->fd = q->fe.fd;
	return e;
}

/* ---- user strings ---- */

static int ustrdup(const void *src, char **out)
{
	if (!src)
		return -EFAULT;
	char *buf = malloc(PATH_MAX);
	if (!buf)
		return -ENOMEM;
	size_t n = 0;
	const char *s = src;
	while (n < PATH_MAX) {
		size_t chunk = 4096 - ((uintptr_t)(s + n) & 4095);
		if (chunk > PATH_MAX - n)
			chunk = PATH_MAX - n;
		if (ucopy(buf + n, s + n, chunk) < 0) {
			free(buf);
			return -EFAULT;
		}
		char *z = memchr(buf + n, 0, chunk);
		if (z) {
			*out = buf;
			return 0;
		}
		n += chunk;
	}
	free(buf);
	return -ENAMETOOLONG;
}

/* A path argument, copied as the kernel's ring does at prep (getname): an empty
 * one is -ENOENT there, before its directory fd is looked at, unless the op's
 * AT_EMPTY_PATH allows it. */
static int upath(const void *src, char **out, int empty_ok)
{
	int e = ustrdup(src, out);
	if (!e && !empty_ok && !**out) {
		free(*out);
		*out = NULL;
		return -ENOENT;
	}
	return e;
}

/* ---- preparation: validation done once, at submission ---- */

#define SQE_FLAGS (IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_ASYNC | \
	IOSQE_BUFFER_SELECT | IOSQE_CQE_SKIP_SUCCESS)

/* RWF_ flags up to RWF_NOSIGNAL (0x100): a kernel may know them (the read or
 * write system call says); above, none does (6.18 refuses 0x200). RWF_REFUSED:
 * what the request path looks at before the system call (the fast path leaves
 * them to it). */
#define RWF_KNOWN 0x1ffu
#define RWF_REFUSED ((unsigned)RWF_HIPRI | ~RWF_KNOWN)

static int is_write(unsigned op)
{
	return op == IORING_OP_WRITE || op == IORING_OP_WRITEV || op == IORING_OP_WRITE_FIXED;
}

/* Checks every opcode shares, in the kernel's order (io_init_req, then the
 * op's prep): the opcode, the SQE flags, a buffer group, the personality, the
 * ioprio, the fields the op leaves 0, a fixed file with no table; then the
 * row's prep (opdef.c). */
static int prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	unsigned op = s->opcode;
	if (!op_supported(op))
		return -EINVAL;
	const struct op_def *d = &op_defs[op];
	if (s->flags & ~SQE_FLAGS)
		return -EINVAL;
	/* an op that takes no provided buffer: -EOPNOTSUPP, as the kernel's io_init_req
	 * (before the personality); SEND from provided buffers (Linux 6.10) is not emulated */
	if ((s->flags & IOSQE_BUFFER_SELECT) && !d->buffer_select)
		return -EOPNOTSUPP;
	if (s->personality)
		return -EINVAL;                    /* personalities are not emulated */
	if (d->ioprio == IOP_CLASS) {
		/* ioprio as the kernel's ioprio_check_cap takes it: class 0..3, its level
		 * the low 3 bits (bits 3-12 are hints), class 0 with none */
		unsigned cls = s->ioprio >> 13;
		if (cls > 3 || (cls == 0 && (s->ioprio & 7)))
			return -EINVAL;
	} else if (s->ioprio && d->ioprio == IOP_NONE) {
		return -EINVAL;
	}
	unsigned z = d->zero;
	if (((z & Z_OFF) && s->off) || ((z & Z_LEN) && s->len) || ((z & Z_OPF) && s->rw_flags) ||
	    ((z & Z_BUF) && s->buf_index) || ((z & Z_SFD) && s->splice_fd_in) || ((z & Z_A3) && s->addr3) ||
	    ((z & Z_P2) && s->__pad2[0]) || ((z & Z_ADDR) && s->addr))
		return -EINVAL;
	/* IOSQE_FIXED_FILE with no table: -EBADF for an op that takes a file; the kernel
	 * ignores it on the others (TIMEOUT_REMOVE and FILES_UPDATE refuse it themselves) */
	if ((s->flags & IOSQE_FIXED_FILE) && !r->files && d->takes_file)
		return -EBADF;
	return d->prep ? d->prep(r, q) : 0;
}

int32_t op_nop(struct ureq *q, int ctx, struct ureq **run)
{
	(void)q, (void)ctx, (void)run;
	return 0;
}

/* ---- per-op preparation (moves to the families) ---- */

int timeout_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->len != 1 || s->buf_index || s->splice_fd_in || s->ioprio)
		return -EINVAL;
	if (s->timeout_flags & ~(IORING_TIMEOUT_ABS | IORING_TIMEOUT_BOOTTIME | IORING_TIMEOUT_REALTIME |
				 IORING_TIMEOUT_ETIME_SUCCESS))
		return -EINVAL;
	if ((s->timeout_flags & IORING_TIMEOUT_BOOTTIME) && (s->timeout_flags & IORING_TIMEOUT_REALTIME))
		return -EINVAL;
	if (s->opcode == IORING_OP_LINK_TIMEOUT && s->off)
		return -EINVAL;
	if (ucopy(&q->ts, (void *)(uintptr_t)s->addr, sizeof(q->ts)) < 0)
		return -EFAULT;
	if (q->ts.tv_sec < 0 || q->ts.tv_nsec < 0 || q->ts.tv_nsec >= 1000000000)
		return -EINVAL;
	return 0;
}

int timeout_remove_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->buf_index || s->len || s->splice_fd_in || s->ioprio || (s->flags & IOSQE_FIXED_FILE))
		return -EINVAL;
	if (s->timeout_flags & IORING_TIMEOUT_UPDATE) {
		if (ucopy(&q->ts, (void *)(uintptr_t)s->off, sizeof(q->ts)) < 0)
			return -EFAULT;
		if (q->ts.tv_sec < 0 || q->ts.tv_nsec < 0 || q->ts.tv_nsec >= 1000000000)
			return -EINVAL;
	}
	return 0;
}

int open_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	if (q->sqe.flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return upath((void *)(uintptr_t)q->sqe.addr, &q->p1, 0);
}

int statx_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return upath((void *)(uintptr_t)s->addr, &q->p1, !!(s->statx_flags & AT_EMPTY_PATH));
}

int unlink_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	if (s->unlink_flags & ~AT_REMOVEDIR)
		return -EINVAL;         /* before the path is taken, as the kernel's prep */
	return upath((void *)(uintptr_t)s->addr, &q->p1, 0);
}

int mkdir_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	if (q->sqe.flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return upath((void *)(uintptr_t)q->sqe.addr, &q->p1, 0);
}

/* RENAMEAT, LINKAT, SYMLINKAT: two paths */
int link_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	int e = upath((void *)(uintptr_t)s->addr, &q->p1,
		      s->opcode == IORING_OP_LINKAT && (s->hardlink_flags & AT_EMPTY_PATH));
	return e ? e : upath((void *)(uintptr_t)s->addr2, &q->p2, 0);
}

/* SETXATTR, GETXATTR: the name, then the path */
int xattr_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	int e = ustrdup((void *)(uintptr_t)q->sqe.addr, &q->p1);
	return e ? e : ustrdup((void *)(uintptr_t)q->sqe.addr3, &q->p2);
}

int fxattr_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	return ustrdup((void *)(uintptr_t)q->sqe.addr, &q->p1);
}

int accept_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->ioprio & ~IORING_ACCEPT_MULTISHOT)
		return -EINVAL;
	if (s->accept_flags & ~(unsigned)(SOCK_CLOEXEC | SOCK_NONBLOCK))
		return -EINVAL;         /* at prep, before the file */
	if (s->file_index && (s->accept_flags & SOCK_CLOEXEC))
		return -EINVAL;         /* a direct descriptor has no close-on-exec */
	/* a multishot accept into the registered table allocates each slot */
	if ((s->ioprio & IORING_ACCEPT_MULTISHOT) && s->file_index && s->file_index != IORING_FILE_INDEX_ALLOC)
		return -EINVAL;
	return 0;
}

int recv_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->ioprio & ~(IORING_RECVSEND_POLL_FIRST | IORING_RECV_MULTISHOT))
		return -EINVAL;
	/* multishot: each chunk in a buffer of its own, WAITALL meaningless */
	if ((s->ioprio & IORING_RECV_MULTISHOT) &&
	    (!(s->flags & IOSQE_BUFFER_SELECT) || (s->msg_flags & MSG_WAITALL)))
		return -EINVAL;
	return 0;
}

int send_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	if (q->sqe.ioprio & ~IORING_RECVSEND_POLL_FIRST)
		return -EINVAL;
	return 0;
}

/* SEND_ZC, SENDMSG_ZC, checked in the kernel's order: what fails before it
 * allocates the notification has one CQE, what fails after it two (F_MORE,
 * then NOTIF), as a send does. The destination of a SEND_ZC (addr2,
 * addr_len) is copied now, as the kernel does. */
int send_zc_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->addr3)
		return -EINVAL;
	if (s->flags & IOSQE_CQE_SKIP_SUCCESS)
		return -EINVAL;
	q->zc_notif = 1;
	if (s->ioprio & ~(IORING_RECVSEND_POLL_FIRST | IORING_RECVSEND_FIXED_BUF | IORING_SEND_ZC_REPORT_USAGE))
		return -EINVAL;
	if (s->opcode == IORING_OP_SENDMSG_ZC)
		return (s->ioprio & IORING_RECVSEND_FIXED_BUF) ? -EINVAL : 0;
	if (s->addr2 && s->addr_len) {
		if (s->addr_len > sizeof(struct sockaddr_storage))
			return -EINVAL;
		if (!(q->p1 = malloc(s->addr_len)))
			return -ENOMEM;
		if (ucopy(q->p1, (void *)(uintptr_t)s->addr2, s->addr_len) < 0)
			return -EFAULT;
	}
	return 0;
}

int poll_add_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->len & ~IORING_POLL_ADD_MULTI)
		return -EINVAL;                /* IORING_POLL_ADD_LEVEL: not emulated */
	if ((s->len & IORING_POLL_ADD_MULTI) && (s->flags & IOSQE_CQE_SKIP_SUCCESS))
		return -EINVAL;
	return 0;
}

int fsync_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	if (q->sqe.fsync_flags & ~IORING_FSYNC_DATASYNC)
		return -EINVAL;
	return 0;
}

int close_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->off || s->addr || s->len || s->rw_flags || s->buf_index)
		return -EINVAL;
	if (s->file_index && s->fd)
		return -EINVAL;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return 0;
}

int rw_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	unsigned op = s->opcode;
	(void)r;
	if ((op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED) &&
	    (s->flags & IOSQE_BUFFER_SELECT))
		return -EINVAL;
	/* a READV into a provided buffer: one iovec, read at prep (before the fd) */
	if (op == IORING_OP_READV && (s->flags & IOSQE_BUFFER_SELECT)) {
		struct iovec v;
		if (s->len != 1)
			return -EINVAL;
		if (ucopy(&v, (void *)(uintptr_t)s->addr, sizeof(v)) < 0)
			return -EFAULT;
	}
	return 0;
}

/* ---- buffer selection ---- */

static struct bgroup *group_find(struct emu_ring *r, uint16_t bgid)
{
	for (unsigned i = 0; i < r->ngroups; i++)
		if (r->groups[i].used && r->groups[i].bgid == bgid)
			return &r->groups[i];
	return NULL;
}

/* The buffer group bgid; with create, a new empty one if there is none
 * (NULL: out of memory). Ring lock held. */
struct bgroup *exec_group_locked(struct emu_ring *r, uint16_t bgid, int create)
{
	struct bgroup *g = group_find(r, bgid);
	if (g || !create)
		return g;
	for (unsigned i = 0; i < r->ngroups && !g; i++)
		if (!r->groups[i].used)
			g = &r->groups[i];
	if (!g) {
		struct bgroup *ng = realloc(r->groups, (r->ngroups + 1) * sizeof(*ng));
		if (!ng)
			return NULL;
		r->groups = ng;
		g = &ng[r->ngroups++];
	}
	memset(g, 0, sizeof(*g));
	g->used = 1;
	g->bgid = bgid;
	return g;
}

static int select_buf(struct ureq *q, uint32_t want)
{
	if (q->has_buf)
		return 0;
	struct emu_ring *r = q->r;
	int e = -ENOBUFS;
	pthread_mutex_lock(&r->lock);
	struct bgroup *g = group_find(r, q->sqe.buf_group);
	if (g && g->is_ring) {
		uint16_t tail = __atomic_load_n(&g->br->tail, __ATOMIC_ACQUIRE);
		if (tail != g->rhead) {
			struct io_uring_buf *b = &g->br->bufs[g->rhead & (g->entries - 1)];
			q->baddr = b->addr;
			q->blen = b->len;
			q->bid = b->bid;
			q->buf_ring = 1;
			g->rhead++;
			e = 0;
		}
	} else if (g && g->count) {
		struct pbuf *b = &g->bufs[g->head];
		q->baddr = b->addr;
		q->blen = b->len;
		q->bid = b->bid;
		q->buf_ring = 0;
		g->head = (g->head + 1) % g->cap;
		g->count--;
		e = 0;
	}
	if (!e) {
		q->has_buf = 1;
		q->bgid = q->sqe.buf_group;
		if (want && want < q->blen)
			q->blen = want;
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* Give a selected, unused buffer back (a cancelled request). */
void exec_buf_recycle_locked(struct ureq *q)
{
	if (!q->has_buf)
		return;
	struct bgroup *g = group_find(q->r, q->bgid);
	q->has_buf = 0;
	if (!g)
		return;
	if (g->is_ring) {
		if (q->buf_ring)
			g->rhead--;          /* best effort: see DROPIN.md */
		return;
	}
	if (g->count < g->cap) {
		g->head = (g->head + g->cap - 1) % g->cap;
		g->bufs[g->head] = (struct pbuf){ q->baddr, q->blen, q->bid };
		g->count++;
	}
}

int32_t op_provide(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	unsigned nbufs = (unsigned)s->fd, len = s->len, bid = (unsigned)s->off;
	/* as the kernel's: no buffers or too many is -E2BIG; their memory is not
	 * looked at here (a read into a bad one fails with -EFAULT when it is used) */
	if (s->rw_flags || s->splice_fd_in)
		return -EINVAL;
	if (!nbufs || nbufs > 65536 || bid + nbufs > 65536)
		return -E2BIG;
	if ((uint64_t)len * nbufs / nbufs != len || s->addr + (uint64_t)len * nbufs < s->addr)
		return -EOVERFLOW;
	int e = 0;
	pthread_mutex_lock(&r->lock);
	struct bgroup *g = exec_group_locked(r, s->buf_group, 1);
	if (!g || g->is_ring) {
		e = g ? -EINVAL : -ENOMEM;
		goto out;
	}
	if (g->count + nbufs > g->cap) {
		uint32_t ncap = g->cap ? g->cap : 16;
		while (ncap < g->count + nbufs)
			ncap *= 2;
		struct pbuf *nb = malloc(ncap * sizeof(*nb));
		if (!nb) {
			e = -ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < g->count; i++)
			nb[i] = g->bufs[(g->head + i) % g->cap];
		free(g->bufs);
		g->bufs = nb;
		g->cap = ncap;
		g->head = 0;
	}
	for (unsigned i = 0; i < nbufs; i++) {
		struct pbuf *b = &g->bufs[(g->head + g->count) % g->cap];
		b->addr = s->addr + (uint64_t)len * i;
		b->len = len;
		b->bid = (uint16_t)(bid + i);
		g->count++;
	}
	e = 0;                  /* the kernel answers 0, not the count its man page names */
out:
	pthread_mutex_unlock(&r->lock);
	return e;
}

int32_t op_remove_bufs(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	unsigned nbufs = (unsigned)q->sqe.fd;
	if (!nbufs || nbufs > 65536 || q->sqe.addr || q->sqe.len || q->sqe.off)
		return -EINVAL;
	int e;
	pthread_mutex_lock(&r->lock);
	struct bgroup *g = group_find(r, q->sqe.buf_group);
	if (!g || g->is_ring) {
		e = g ? -EINVAL : -ENOENT;
	} else if (!g->count) {
		e = -ENOENT;
	} else {
		unsigned n = nbufs < g->count ? nbufs : g->count;
		g->head = (g->head + n) % g->cap;
		g->count -= n;
		e = (int)n;
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* ---- hand-offs ---- */

/* Make the request independent of the submitter's memory (FEAT_SUBMIT_STABLE). */
static int stabilize_iov(struct ureq *q)
{
	if (q->iov)
		return 0;
	unsigned op = q->sqe.opcode;
	if (op == IORING_OP_READV || op == IORING_OP_WRITEV) {
		if (q->has_buf) {
			q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)q->baddr, q->blen };
			q->iov = q->iov_in;
			q->niov = 1;
			return 0;
		}
		unsigned n = q->sqe.len;
		if (n > UIO_MAXIOV)
			return -EINVAL;
		struct iovec *v = n <= EMU_INLINE_IOV ? q->iov_in : malloc(n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		if (ucopy(v, (void *)(uintptr_t)q->sqe.addr, n * sizeof(*v)) < 0) {
			if (v != q->iov_in)
				free(v);
			return -EFAULT;
		}
		q->iov = v;
		q->niov = (int)n;
		return 0;
	}
	if (q->has_buf)
		q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)q->baddr, q->blen };
	else
		q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)q->sqe.addr, q->sqe.len };
	q->iov = q->iov_in;
	q->niov = 1;
	return 0;
}

int exec_punt(struct ureq *q)
{
	if (wq_queue(q) == 0)
		return Q_QUEUED;
	/* no worker thread at all: cancelled, as the kernel's; a transfer that
	 * had begun reports what it did */
	return q->done ? (int32_t)q->done : -ECANCELED;
}

int exec_wait_ready(struct ureq *q, short events)
{
	struct emu_ring *r = q->r;
	pthread_mutex_lock(&r->lock);
	if (q->cancel_run) {
		q->cancel_run = 0;
		pthread_mutex_unlock(&r->lock);
		return -ECANCELED;
	}
	int e = reactor_arm_locked(q, events);
	pthread_mutex_unlock(&r->lock);
	return e < 0 ? e : Q_QUEUED;
}

static int ready_now(int fd, short ev)
{
	struct pollfd p = { fd, ev, 0 };
	return poll(&p, 1, 0) > 0;
}

/* ---- read / write ---- */

/* The cached kind of q's plain fd proved wrong: look again. */
static void refresh_file(struct ureq *q)
{
	if (q->sqe.flags & IOSQE_FIXED_FILE)
		return;                       /* registered files are our own dups: exact */
	exec_fcache_drop(q->r, q->sqe.fd);
	req_file(q);
}

/* What q's file is now, whatever the cache says (the number may have been
 * reused): 1 a socket, 0 another file (the cached kind refreshed if it said
 * socket), -1 none. An fstat: error paths and waits only. */
static int file_is_socket(struct ureq *q)
{
	struct stat st;
	if (fstat(q->fd, &st) < 0)
		return -1;
	if (S_ISSOCK(st.st_mode))
		return 1;
	if (q->fe.kind == FK_SOCK)
		refresh_file(q);
	return 0;
}

/*
 * The cached O_DIRECT of q's file still holds (it goes to kernel AIO). A
 * registered file is our own dup: its kind cannot change, and an O_DIRECT the
 * program cleared on it only sends it through AIO, which the kernel then does
 * synchronously and correctly. A plain fd may have been closed and its number
 * reused, or its flags changed (F_SETFL): F_GETFL asks, once per fd in each
 * submission (io_uring_enter) of the submitting thread. Within one, the ring's
 * own CLOSE and opens drop the cached entry (a refill asks again); the
 * program changing an fd from another thread meanwhile races its own I/O on
 * it, as it would with the kernel's ring.
 */
static int direct_still(struct ureq *q, int ctx)
{
	struct emu_ring *r = q->r;
	if (q->sqe.flags & IOSQE_FIXED_FILE)
		return 1;
	int fd = q->sqe.fd;
	struct fent *c = ctx == CTX_INLINE && tls_in_submit && fd >= 0 && fd < EMU_FCACHE ? &r->fcache[fd] : NULL;
	if (c && __atomic_load_n(&c->valid, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&c->vgen, __ATOMIC_RELAXED) == r->sub_gen)
		return 1;
	if (!(fcntl(q->fd, F_GETFL) & O_DIRECT))
		return 0;
	if (c)
		__atomic_store_n(&c->vgen, r->sub_gen, __ATOMIC_RELAXED);
	return 1;
}

/* preadv2/pwritev2 as the system call itself: libc's wrappers are
 * cancellation points (and cost two atomics each once the process has
 * threads), the kernel's ring is not. On x86-64 the instruction inline (the
 * offset whole in the low word, as the 64-bit kernel takes it); elsewhere
 * libc's wrapper. -1 and errno on failure, as libc. */
static ssize_t sys_rw(int wr, int fd, const struct iovec *iov, int niov, int64_t off, int flags)
{
#if defined(__x86_64__) && defined(SYS_preadv2) && defined(SYS_pwritev2)
	long n;
	register long r10 __asm__("r10") = (long)off;
	register long r8 __asm__("r8") = 0;
	register long r9 __asm__("r9") = flags;
	__asm__ volatile("syscall"
			 : "=a"(n)
			 : "0"(wr ? SYS_pwritev2 : SYS_preadv2), "D"((long)fd), "S"(iov), "d"((long)niov),
			   "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	if (n >= 0)
		return n;
	if (n != -ENOSYS || flags) {
		errno = (int)-n;
		return -1;
	}
#endif
	return wr ? pwritev2(fd, iov, niov, off, flags) : preadv2(fd, iov, niov, off, flags);
}

/* The sum of the lengths of an iovec array that the kernel has just read
 * without a fault (the program's own array, which may be misaligned). */
static uint64_t iov_total(const struct iovec *iov, int niov)
{
	uint64_t want = 0;
	for (int i = 0; i < niov; i++) {
		struct iovec v;
		memcpy(&v, (const char *)iov + (size_t)i * sizeof(v), sizeof(v));
		want += v.iov_len;
	}
	return want;
}

/* n more bytes of q's transfer are done (q->iov: the library's copy, shorter
 * than n): q->done counts them, q->iov is left with the rest. -ENOMEM. */
static int rw_advance(struct ureq *q, uint64_t n)
{
	q->done += n;
	uint64_t skip = n;
	int k = 0;
	while (k < q->niov && skip >= q->iov[k].iov_len)
		skip -= q->iov[k++].iov_len;
	int left = q->niov - k;
	struct iovec *v = left ? malloc((size_t)left * sizeof(*v)) : NULL;
	if (!v)
		return -ENOMEM;
	memcpy(v, q->iov + k, (size_t)left * sizeof(*v));
	v[0].iov_base = (void *)((uintptr_t)v[0].iov_base + skip);   /* the base may be NULL */
	v[0].iov_len -= skip;
	if (q->iov != q->iov_in)
		free(q->iov);
	q->iov = v;
	q->niov = left;
	return 0;
}

/* A fast-path transfer (fast_rw) came back short with done bytes: q, made from
 * the same SQE, goes on from there (the next RWF_NOWAIT try, then a worker). */
static int rw_carry(struct ureq *q, uint32_t done)
{
	int e = stabilize_iov(q);
	return e < 0 ? e : rw_advance(q, done);
}

/* addr..addr+len of q lies in its registered buffer buf_index: 0, else -EFAULT. */
static int fixed_range(struct ureq *q)
{
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	pthread_mutex_lock(&r->lock);
	int ok = s->buf_index < r->nbufs;
	struct iovec b = ok ? r->bufs[s->buf_index] : (struct iovec){ 0, 0 };
	pthread_mutex_unlock(&r->lock);
	if (!ok)
		return -EFAULT;
	uint64_t lo = (uintptr_t)b.iov_base, hi = lo + b.iov_len;
	if (!b.iov_base || s->addr < lo || s->addr + s->len > hi || s->addr + s->len < s->addr)
		return -EFAULT;
	return 0;
}

/* 1 when fd cannot be read (wr 0) or written (wr 1): an O_PATH fd or one open for
 * the other direction only (the kernel's ring: -EBADF), or a number no longer open
 * (closed by the program since the ring cached it); 0 otherwise. */
static int fd_mode_refuses(int fd, int wr)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return errno == EBADF;
	return (fl & O_PATH) || (fl & O_ACCMODE) == (wr ? O_RDONLY : O_WRONLY);
}

/* A read's or write's early error e, in the kernel's order: a READV/WRITEV's iovec
 * array is taken at prep, before all (-EFAULT); then the file (-EBADF) and its
 * mode (-EBADF: looked at here, an fcntl on the error path only, since the cached
 * kind of an fd number may be stale); then the flags and the offset (e). */
static int32_t rw_early_err(struct ureq *q, int wr, int32_t e)
{
	unsigned op = q->sqe.opcode;
	int e2;
	if ((op == IORING_OP_READV || op == IORING_OP_WRITEV) && !(q->sqe.flags & IOSQE_BUFFER_SELECT) &&
	    (e2 = stabilize_iov(q)) < 0)
		return e2;
	if (e == -EBADF)
		return e;
	return fd_mode_refuses(q->fd, wr) ? -EBADF : e;
}

int32_t op_rw(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	unsigned op = s->opcode;
	int wr = is_write(op);
	int e = req_file(q);
	if (e)
		return rw_early_err(q, wr, e);
	/* a provided buffer is taken first, as the kernel's issue takes it: -ENOBUFS
	 * before the file's mode, the flags and the offset are looked at (a READV's one
	 * iovec was checked at prep); a number closed since it was cached: -EBADF */
	if ((s->flags & IOSQE_BUFFER_SELECT) && !q->has_buf) {
		uint32_t want = s->len;
		if (op == IORING_OP_READV) {
			struct iovec v;
			if (ucopy(&v, (void *)(uintptr_t)s->addr, sizeof(v)) < 0)
				return -EFAULT;
			want = (uint32_t)v.iov_len;
		}
		if ((e = select_buf(q, want)) < 0)
			return fcntl(q->fd, F_GETFD) < 0 ? -EBADF : e;
		q->cflags = IORING_CQE_F_BUFFER | ((uint32_t)q->bid << IORING_CQE_BUFFER_SHIFT);
	}
	/* RWF_ flags no kernel knows: -EOPNOTSUPP; RWF_HIPRI on a ring without
	 * IOPOLL: -EINVAL (the kernel's order), whatever the file */
	if ((unsigned)s->rw_flags & RWF_REFUSED) {
		if ((unsigned)s->rw_flags & ~RWF_KNOWN)
			return rw_early_err(q, wr, -EOPNOTSUPP);
		if (!(q->r->flags & IORING_SETUP_IOPOLL))
			return rw_early_err(q, wr, -EINVAL);
	}
	/* a number cached as an O_DIRECT file (kernel AIO, below) is confirmed first, once
	 * per fd in each submission: what it names now is routed, and checked, as what it is */
	if (q->fe.direct && q->fe.kind == FK_REG && (int64_t)s->off >= 0 && ctx != CTX_WORKER && !q->done &&
	    !direct_still(q, ctx))
		refresh_file(q);
	/* a socket at an offset above 0: -ESPIPE, as the kernel's ring has it (below -1:
	 * -EINVAL, below; a pipe's offset is ignored); a cached socket or stream is
	 * confirmed (a pipe's number may be a socket's now, and with IOSQE_ASYNC it would
	 * wait first), a number cached as another file is looked at again on ESPIPE (below) */
	if ((q->fe.kind == FK_SOCK || q->fe.kind == FK_POLL) && (int64_t)s->off > 0 && !q->done &&
	    file_is_socket(q) == 1)
		return rw_early_err(q, wr, -ESPIPE);
	if (op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED) {
		if (!q->iov) {
			if ((e = fixed_range(q)) < 0)
				return e;
			q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)s->addr, s->len };
			q->iov = q->iov_in;
			q->niov = 1;
		}
	}
	if (op != IORING_OP_READV && op != IORING_OP_WRITEV && !q->iov) {
		if (q->has_buf)
			q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)q->baddr, q->blen };
		else
			q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)s->addr, s->len };
		q->iov = q->iov_in;
		q->niov = 1;
	}
	/* Inline, READV/WRITEV hand the program's iovec array to the kernel, which
	 * checks it (-EFAULT); it is copied (ucopy) only to leave the submitter:
	 * a worker, AIO, or a short transfer to continue. */
	if ((op == IORING_OP_READV || op == IORING_OP_WRITEV) && !q->iov &&
	    (ctx != CTX_INLINE || q->fe.direct || (s->flags & IOSQE_ASYNC)) &&
	    (e = stabilize_iov(q)) < 0)
		return e;
	const struct iovec *iov = q->iov ? q->iov : (const struct iovec *)(uintptr_t)s->addr;
	int niov = q->iov ? q->niov : (int)s->len;
	/* The offset is always tried as given: the cached kind of a plain fd may be
	 * stale (the number reused), so only the kernel's ESPIPE makes it a stream,
	 * whose offset the kernel's io_uring ignores. The kind only routes. */
	int stream = q->fe.kind == FK_POLL || q->fe.kind == FK_SOCK;
	int64_t off = (int64_t)s->off;
	if (off < -1)
		return rw_early_err(q, wr, -EINVAL);
	if (off != -1)
		off += (int64_t)q->done;

	/* O_DIRECT at an offset (confirmed above): kernel AIO, so the device sees the queue depth. */
	if (q->fe.direct && q->fe.kind == FK_REG && off != -1 && ctx != CTX_WORKER && !q->done) {
		e = kaio_submit(q, wr, ctx);
		if (e != -EAGAIN)
			return e;
		if ((e = stabilize_iov(q)) < 0)
			return e;
		return exec_punt(q);
	}
	int flags = (int)s->rw_flags;
	if (ctx != CTX_WORKER) {
		if ((s->flags & IOSQE_ASYNC) && ctx == CTX_INLINE) {
			if ((e = stabilize_iov(q)) < 0)
				return e;
			if (stream) {
				/* the wrong end of a pipe: -EBADF now, not a wait that never ends */
				if ((e = rw_early_err(q, wr, 0)) < 0)
					return e;
				return exec_wait_ready(q, wr ? POLLOUT : POLLIN);
			}
			return exec_punt(q);
		}
		flags |= RWF_NOWAIT;
	}
	ssize_t n = -1;
	if (q->fe.kind == FK_SOCK) {
		struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)niov };
		int mf = ctx != CTX_WORKER ? MSG_DONTWAIT : 0;
		/* a WRITE to a socket whose peer has gone raises SIGPIPE in the submitting
		 * thread, as the kernel's ring's inline try does; never in our threads
		 * (the poller, workers, the reactor), which block it (the kernel's io-wq
		 * sends none either; its retry after a wait does, as task work of the
		 * submitter: not emulated, DROPIN.md) */
		if (wr && (ctx != CTX_INLINE || !tls_in_submit || (q->r->flags & IORING_SETUP_SQPOLL)))
			mf |= MSG_NOSIGNAL;
		n = wr ? sendmsg(q->fd, &m, mf) : recvmsg(q->fd, &m, mf);
		if (n < 0 && errno == ENOTSOCK) {
			refresh_file(q);          /* not a socket (any more) */
			errno = ENOTSOCK;
		}
	}
	if (q->fe.kind != FK_SOCK) {
		n = sys_rw(wr, q->fd, iov, niov, off, flags);
		if (n < 0 && errno == ESPIPE && off != -1) {
			/* a number cached as a file that is a socket now (a cached stream was
			 * looked at above) */
			if (q->fe.kind != FK_POLL && (int64_t)s->off > 0 && !q->done && file_is_socket(q) == 1) {
				refresh_file(q);
				return rw_early_err(q, wr, -ESPIPE);
			}
			stream = 1;               /* a pipe, eventfd, ...: the offset does not apply */
			if (q->fe.kind == FK_REG)
				refresh_file(q);
			off = -1;
			n = sys_rw(wr, q->fd, iov, niov, off, flags);
		}
	}
	if (n < 0) {
		int err = errno;
		/* The kernel's ring takes the iovec array before the file is used: a bad
		 * one is -EFAULT even where the file would say -EBADF (liburing's
		 * link-timeout), so an error looks at the array first. */
		if ((op == IORING_OP_READV || op == IORING_OP_WRITEV) && !q->iov && (e = stabilize_iov(q)) < 0)
			return e;
		if (err == EOPNOTSUPP && ctx != CTX_WORKER && !(s->rw_flags & RWF_NOWAIT)) {
			/* This file cannot say "would block": a worker does it. */
			if ((e = stabilize_iov(q)) < 0)
				return e;
			if (stream && ready_now(q->fd, wr ? POLLOUT : POLLIN) == 0)
				return exec_wait_ready(q, wr ? POLLOUT : POLLIN);
			return exec_punt(q);
		}
		if (err == EAGAIN && ctx != CTX_WORKER) {
			/* the rest of a short read: a pipe's or socket's now if the number
			 * cached as a file is looked up again and is one no more */
			if (q->done && q->fe.kind == FK_REG && !(q->sqe.flags & IOSQE_FIXED_FILE) &&
			    (refresh_file(q), q->fe.kind != FK_REG))
				return (int32_t)q->done;
			if ((s->rw_flags & RWF_NOWAIT) || q->fe.nonblock)
				return q->done ? (int32_t)q->done : -EAGAIN;
			if ((e = stabilize_iov(q)) < 0)
				return e;
			if (stream)
				return exec_wait_ready(q, wr ? POLLOUT : POLLIN);
			return exec_punt(q);
		}
		return q->done ? (int32_t)q->done : -err;
	}
	/* A short transfer on a regular file continues (the kernel retries too). */
	uint64_t want = 0;
	if (n > 0 && q->fe.kind == FK_REG && !q->iov) {
		/* The kernel has just read all niov entries of this array without a
		 * fault (n > 0), so their lengths are readable here; it is copied
		 * with ucopy() only when the transfer is short and goes on. */
		want = iov_total(iov, niov);
		if ((uint64_t)n < want && (e = stabilize_iov(q)) < 0)
			return e;
		want = 0;
	}
	for (int i = 0; q->iov && i < q->niov; i++)
		want += q->iov[i].iov_len;
	if (n > 0 && q->fe.kind == FK_REG && q->iov && (uint64_t)n < want) {
		if (rw_advance(q, (uint64_t)n) < 0)
			return (int32_t)q->done;
		/* inline, the rest is tried at once too (RWF_NOWAIT): 0 at the end of a file,
		 * EAGAIN (below) where the number cached as a file is a pipe's now */
		return op_rw(q, ctx, run);
	}
	return (int32_t)(q->done + (uint64_t)n);
}

/* ---- network ---- */

static int stream_sock(int fd);
static int stabilize_msg(struct ureq *q);

/* Whether the kernel would zero-copy from this socket (its SOCK_SUPPORT_ZC: TCP
 * and UDP over IPv4 and IPv6): else SEND_ZC and SENDMSG_ZC are -EOPNOTSUPP
 * there, as in the kernel, although the emulation copies anyway. 0 or -errno. */
static int zc_socket(int fd)
{
	int v;
	socklen_t l = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) < 0)
		return -errno;                  /* -ENOTSOCK: not a socket */
	if (v != AF_INET && v != AF_INET6)
		return -EOPNOTSUPP;
	l = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &l) < 0)
		return -errno;
	return v == IPPROTO_TCP || v == IPPROTO_UDP || v == IPPROTO_UDPLITE ? 0 : -EOPNOTSUPP;
}

int32_t op_sendrecv(struct ureq *q, int ctx, struct ureq **run)
{
	(void)run;
	struct io_uring_sqe *s = &q->sqe;
	unsigned op = s->opcode;
	int e = req_file(q);
	if (e)
		return e;
	int is_send = op == IORING_OP_SEND || op == IORING_OP_SENDMSG || op == IORING_OP_SEND_ZC ||
		      op == IORING_OP_SENDMSG_ZC;
	int msg = op == IORING_OP_SENDMSG || op == IORING_OP_RECVMSG || op == IORING_OP_SENDMSG_ZC;
	if ((op == IORING_OP_SEND_ZC || op == IORING_OP_SENDMSG_ZC) && !q->done && (e = zc_socket(q->fd)) < 0)
		return e;
	/* with IOSQE_ASYNC or POLL_FIRST it waits before it tries: a file that is not
	 * a socket is -ENOTSOCK now, before a provided buffer is taken (looked at even
	 * where the cache says socket: the number may be a pipe's now, which could
	 * keep the wait from ever ending) */
	if (ctx == CTX_INLINE && ((s->flags & IOSQE_ASYNC) || (s->ioprio & IORING_RECVSEND_POLL_FIRST)) &&
	    file_is_socket(q) == 0)
		return -ENOTSOCK;
	/* a SEND_ZC from a registered buffer: the memory is the program's own */
	if (op == IORING_OP_SEND_ZC && (s->ioprio & IORING_RECVSEND_FIXED_BUF) && !q->done &&
	    (e = fixed_range(q)) < 0)
		return e;
	int flags = (int)s->msg_flags;
	if ((s->flags & IOSQE_BUFFER_SELECT) && !q->has_buf) {
		uint32_t want = s->len;
		if (msg) {
			struct msghdr m;
			struct iovec v;
			if (ucopy(&m, (void *)(uintptr_t)s->addr, sizeof(m)) < 0)
				return -EFAULT;
			if (m.msg_iovlen != 1)
				return -EINVAL;
			if (ucopy(&v, m.msg_iov, sizeof(v)) < 0)
				return -EFAULT;
			want = (uint32_t)v.iov_len;
		}
		/* none to take: a file that is not a socket says so first (the kernel's
		 * issue looks at the socket before it takes a buffer), a number closed
		 * since it was cached -EBADF */
		if ((e = select_buf(q, want)) < 0) {
			int k = e == -ENOBUFS ? file_is_socket(q) : 1;
			return k == 0 ? -ENOTSOCK : k < 0 ? -EBADF : e;
		}
		q->cflags = IORING_CQE_F_BUFFER | ((uint32_t)q->bid << IORING_CQE_BUFFER_SHIFT);
	}
	if (ctx == CTX_INLINE && ((s->flags & IOSQE_ASYNC) || (s->ioprio & IORING_RECVSEND_POLL_FIRST)))
		goto wait;
	int mf = flags | (ctx != CTX_WORKER ? MSG_DONTWAIT : 0);
	if (is_send)
		mf |= MSG_NOSIGNAL;
	ssize_t n;
	if (msg) {
		struct msghdr *m = q->umsg ? &q->msg : (struct msghdr *)(uintptr_t)s->addr;
		if (q->has_buf) {
			if (!q->umsg) {
				if (ucopy(&q->msg, m, sizeof(q->msg)) < 0)
					return -EFAULT;
				q->umsg = m;
				m = &q->msg;
			}
			q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)q->baddr, q->blen };
			q->msg.msg_iov = q->iov_in;
			q->msg.msg_iovlen = 1;
		}
		n = is_send ? sendmsg(q->fd, m, mf) : recvmsg(q->fd, m, mf);
		if (n >= 0 && q->umsg && !is_send) {
			/* what recvmsg returns in the header goes back to the caller's copy */
			if (uwrite(&q->umsg->msg_namelen, &q->msg.msg_namelen, sizeof(q->msg.msg_namelen)) < 0 ||
			    uwrite(&q->umsg->msg_controllen, &q->msg.msg_controllen, sizeof(q->msg.msg_controllen)) < 0 ||
			    uwrite(&q->umsg->msg_flags, &q->msg.msg_flags, sizeof(q->msg.msg_flags)) < 0)
				return -EFAULT;
		}
	} else {
		/* integer sums: the application's address may be NULL (no pointer arithmetic on it) */
		void *buf = (void *)(uintptr_t)(q->has_buf ? q->baddr : s->addr + q->done);
		size_t len = q->has_buf ? q->blen : s->len - q->done;
		if (q->p1)        /* SEND_ZC to the address copied at submission */
			n = sendto(q->fd, buf, len, mf, (struct sockaddr *)q->p1, s->addr_len);
		else
			n = is_send ? send(q->fd, buf, len, mf) : recv(q->fd, buf, len, mf);
	}
	if (n < 0 && errno == ENOTSOCK && q->has_buf) {
		/* the kernel takes no buffer for a file that is not a socket */
		pthread_mutex_lock(&q->r->lock);
		exec_buf_recycle_locked(q);
		pthread_mutex_unlock(&q->r->lock);
		q->cflags = 0;
		return -ENOTSOCK;
	}
	if (n < 0) {
		if (errno != EAGAIN || ctx == CTX_WORKER || (flags & MSG_DONTWAIT))
			return q->done ? (int32_t)q->done : -errno;
		goto wait;
	}
	if ((flags & MSG_WAITALL) && !q->has_buf && n > 0 && stream_sock(q->fd)) {
		if (!msg && q->done + (uint64_t)n < s->len) {
			q->done += (uint64_t)n;
			goto wait;
		}
		if (msg && (e = stabilize_msg(q)) < 0)
			return e;
		if (msg && exec_advance_iov(q, (uint64_t)n)) {
			q->done += (uint64_t)n;
			q->msg.msg_iov = q->iov;
			q->msg.msg_iovlen = (size_t)q->niov;
			goto wait;
		}
	}
	return (int32_t)(q->done + (uint64_t)n);
wait:
	if (msg && (e = stabilize_msg(q)) < 0)
		return e;
	return exec_wait_ready(q, is_send ? POLLOUT : POLLIN);
}

static int stream_sock(int fd)
{
	int t = 0;
	socklen_t l = sizeof(t);
	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &l) == 0 && t == SOCK_STREAM;
}

/* Drop n bytes from the front of q->iov (our copy); 1 if some remain. */
int exec_advance_iov(struct ureq *q, uint64_t n)
{
	int k = 0;
	while (k < q->niov && n >= q->iov[k].iov_len)
		n -= q->iov[k++].iov_len;
	if (k == q->niov)
		return 0;
	memmove(q->iov, q->iov + k, (size_t)(q->niov - k) * sizeof(*q->iov));
	q->niov -= k;
	q->iov[0].iov_base = (void *)((uintptr_t)q->iov[0].iov_base + n);   /* the base may be NULL */
	q->iov[0].iov_len -= n;
	return 1;
}

/* Keep our own copy of a SENDMSG/RECVMSG header and its iovecs (SUBMIT_STABLE). */
static int stabilize_msg(struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	if (!q->umsg) {
		/* Keep our own copy of the header and its iovecs (SUBMIT_STABLE). */
		struct msghdr *um = (struct msghdr *)(uintptr_t)s->addr;
		if (ucopy(&q->msg, um, sizeof(q->msg)) < 0)
			return -EFAULT;
		q->umsg = um;
		if (!q->has_buf) {
			if (q->msg.msg_iovlen > UIO_MAXIOV)
				return -EMSGSIZE;
			size_t n2 = q->msg.msg_iovlen;
			struct iovec *v = n2 <= EMU_INLINE_IOV ? q->iov_in : malloc(n2 * sizeof(*v));
			if (!v)
				return -ENOMEM;
			if (ucopy(v, q->msg.msg_iov, n2 * sizeof(*v)) < 0) {
				if (v != q->iov_in)
					free(v);
				return -EFAULT;
			}
			q->iov = v;
			q->niov = (int)n2;
			q->msg.msg_iov = v;
		}
	}
	return 0;
}

/* Put fd (owned: closed on failure) in r's registered table at file_index idx
 * (1-based, or IORING_FILE_INDEX_ALLOC: the lowest free slot of the allocation
 * range). 0 or the allocated slot; -ENXIO no table, -EINVAL bad index, -ENFILE full. */
static int install_file(struct emu_ring *r, unsigned idx, int fd, const struct fent *kind)
{
	int alloc = idx == IORING_FILE_INDEX_ALLOC;
	struct fent fe;
	if (kind) {
		fe = *kind;
		fe.fd = fd;
	} else {
		fill_fent(fd, &fe);
	}
	int res;
	pthread_mutex_lock(&r->lock);
	if (!r->files || r->dying) {
		res = -ENXIO;
	} else if (alloc) {
		res = -ENFILE;
		for (unsigned k = r->alloc_lo; k < r->alloc_hi && k < r->nfiles; k++) {
			if (r->files[k].fd < 0) {
				r->files[k] = fe;
				r->file_tags[k] = 0;
				res = (int)k;
				break;
			}
		}
	} else if (idx - 1 >= r->nfiles) {
		res = -EINVAL;
	} else {
		if (r->files[idx - 1].fd >= 0)
			close(r->files[idx - 1].fd);
		r->files[idx - 1] = fe;
		r->file_tags[idx - 1] = 0;
		res = 0;
	}
	pthread_mutex_unlock(&r->lock);
	if (res < 0)
		close(fd);
	return res;
}

/* OPENAT/ACCEPT/SOCKET with file_index: the new file goes to the registered table. */
static int install_direct(struct ureq *q, int fd)
{
	return install_file(q->r, q->sqe.file_index, fd, NULL);
}

/* 0: fd is a listening socket; -EINVAL: a socket that does not listen (the
 * kernel's accept fails at once, it never waits); -ENOTSOCK: not a socket. */
static int listening(int fd)
{
	int on = 0;
	socklen_t l = sizeof(on);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &l) < 0)
		return -errno;
	return on ? 0 : -EINVAL;
}

/* Blocking listeners being accepted from now, by (st_dev, st_ino): a thread of
 * the drop-in marks its listener busy from its poll to its accept4, so that
 * two of them (two rings' reactors woken by one connection, or a submitter and
 * a reactor) never both see the one connection waiting: the loser would block
 * in accept4 (a reactor so stuck never ends, nor the ring's exit that joins
 * it). A whole process's, since rings of several threads often share one
 * listener; by the socket, since a registered file is a dup of the program's
 * number. Nobody waits for a mark: a listener that is busy is "nothing now",
 * and its request waits for readiness again (one-shot: a level-triggered poll
 * entry, multishot: re-armed with EPOLL_CTL_MOD, which reports what is pending),
 * so a thread that an accepter outside the drop-in left blocked in accept4
 * holds up no other listener and no submitter. fork()'s child starts with none
 * (exec_forked). */
#define ACC_BUSY 64
static struct { dev_t dev; ino_t ino; int used; } acc_busy[ACC_BUSY];
static pthread_mutex_t acc_mx = PTHREAD_MUTEX_INITIALIZER;

void exec_forked(void)
{
	pthread_mutex_init(&acc_mx, NULL);
	memset(acc_busy, 0, sizeof(acc_busy));
}

/* Mark fd's listener busy: its slot + 1; 0: busy already; -1: not marked
 * (fstat failed, or ACC_BUSY accepts at once: goes on unguarded, as before). */
static int acc_mark(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -1;
	int slot = -1;
	pthread_mutex_lock(&acc_mx);
	for (int i = 0; i < ACC_BUSY; i++) {
		if (acc_busy[i].used && acc_busy[i].dev == st.st_dev && acc_busy[i].ino == st.st_ino) {
			pthread_mutex_unlock(&acc_mx);
			return 0;
		}
		if (!acc_busy[i].used && slot < 0)
			slot = i;
	}
	if (slot >= 0) {
		acc_busy[slot].dev = st.st_dev;
		acc_busy[slot].ino = st.st_ino;
		acc_busy[slot].used = 1;
	}
	pthread_mutex_unlock(&acc_mx);
	return slot + 1;
}

static void acc_unmark(int mark)
{
	if (mark <= 0)
		return;
	pthread_mutex_lock(&acc_mx);
	acc_busy[mark - 1].used = 0;
	pthread_mutex_unlock(&acc_mx);
}

/* One accept: the new fd (or its registered slot), -EAGAIN when none waits
 * (outside a worker: a blocking listener is only accepted from when poll says
 * a connection waits, and it is not busy (acc_busy), so the thread never
 * blocks), or -errno. *busy (may be NULL): set when the listener was busy. */
static int32_t accept_now(struct ureq *q, int ctx, int *busy)
{
	struct io_uring_sqe *s = &q->sqe;
	int mark = -1;
	if (ctx != CTX_WORKER && !q->fe.nonblock) {
		if ((mark = acc_mark(q->fd)) == 0) {
			if (busy)
				*busy = 1;
			return -EAGAIN;
		}
		if (!ready_now(q->fd, POLLIN)) {
			acc_unmark(mark);
			int e = listening(q->fd);
			return e ? e : -EAGAIN;
		}
	}
	int flags = (int)s->accept_flags;
	if (s->file_index)
		flags |= SOCK_CLOEXEC;
	/* the system call itself: libc's accept4 may be wrapped (ASan's reads *addrlen
	 * first), and the application's addrlen pointer must give -EFAULT, not a crash */
	int fd = (int)syscall(SYS_accept4, q->fd, (struct sockaddr *)(uintptr_t)s->addr,
			      (socklen_t *)(uintptr_t)s->addr2, flags);
	int err = errno;
	acc_unmark(mark);
	if (fd < 0)
		return -err;
	return s->file_index ? install_direct(q, fd) : fd;
}

static int32_t accept_one(struct ureq *q, int ctx)
{
	int e = req_file(q);
	if (e)
		return e;
	if (ctx == CTX_INLINE && (q->sqe.flags & IOSQE_ASYNC) && !q->fe.nonblock)
		return (e = listening(q->fd)) ? e : exec_wait_ready(q, POLLIN);
	int32_t res = accept_now(q, ctx, NULL);
	if (res == -EAGAIN && ctx != CTX_WORKER)
		return exec_wait_ready(q, POLLIN);   /* O_NONBLOCK too: the kernel polls */
	return res;
}

/* ---- multishot ACCEPT, RECV, RECVMSG ---- */

/* One try of a multishot without waiting: a result for a CQE (*cf: its flags;
 * *last: it ends the request), or -EAGAIN: nothing now (no buffer kept). */
typedef int32_t (*ms_try_fn)(struct ureq *q, uint32_t *cf, int *last);

static int32_t accept_try(struct ureq *q, uint32_t *cf, int *last)
{
	(void)cf;
	(void)last;
	int busy = 0;
	int32_t res = accept_now(q, CTX_INLINE, &busy);
	if (busy) {
		/* its entry is edge-triggered: armed anew, it reports the connection
		 * the other accepter may leave waiting */
		pthread_mutex_lock(&q->r->lock);
		reactor_mshot_rearm_locked(q);
		pthread_mutex_unlock(&q->r->lock);
	}
	return res;
}

/* A selected buffer goes back unused. */
static int32_t buf_give_back(struct ureq *q, int32_t res)
{
	pthread_mutex_lock(&q->r->lock);
	exec_buf_recycle_locked(q);
	pthread_mutex_unlock(&q->r->lock);
	return res;
}

/* A chunk into a buffer of its own. RECVMSG lays the buffer out as the
 * kernel does (struct io_uring_recvmsg_out, the name and control areas the
 * msghdr's lengths reserve, then the payload) and its result counts all of
 * it; end of file is res 0 without a buffer (RECV), the header alone with
 * payloadlen 0 (RECVMSG). */
static int32_t recv_try(struct ureq *q, uint32_t *cf, int *last)
{
	struct io_uring_sqe *s = &q->sqe;
	int msg = s->opcode == IORING_OP_RECVMSG;
	int flags = (int)s->msg_flags | MSG_DONTWAIT;
	size_t out = sizeof(struct io_uring_recvmsg_out);
	size_t hdr = msg ? out + q->msg.msg_namelen + q->msg.msg_controllen : 0;
	int e = select_buf(q, msg ? 0 : s->len);
	if (e < 0)
		return e;
	uintptr_t b = (uintptr_t)q->baddr;
	ssize_t n;
	struct msghdr m;
	struct iovec v;
	if (msg) {
		if (q->blen < hdr)
			return buf_give_back(q, -EFAULT);
		v = (struct iovec){ (void *)(b + hdr), q->blen - hdr };
		m = (struct msghdr){ .msg_name = q->msg.msg_namelen ? (void *)(b + out) : NULL,
				     .msg_namelen = q->msg.msg_namelen, .msg_iov = &v, .msg_iovlen = 1,
				     .msg_control = q->msg.msg_controllen ? (void *)(b + out + q->msg.msg_namelen) : NULL,
				     .msg_controllen = q->msg.msg_controllen };
		n = recvmsg(q->fd, &m, flags);
	} else {
		n = recv(q->fd, (void *)b, q->blen, flags);
	}
	if (n < 0)
		return buf_give_back(q, -errno);
	*last = n == 0;
	if (!msg && !n)
		return buf_give_back(q, 0);
	*cf = IORING_CQE_F_BUFFER | ((uint32_t)q->bid << IORING_CQE_BUFFER_SHIFT);
	if (!msg)
		return (int32_t)n;
	struct io_uring_recvmsg_out o = { m.msg_namelen, (uint32_t)m.msg_controllen, (uint32_t)n,
					  (uint32_t)m.msg_flags };
	if (uwrite((void *)b, &o, sizeof(o)) < 0)
		return buf_give_back(q, -EFAULT);
	return (int32_t)(hdr + ((size_t)n < v.iov_len ? (size_t)n : v.iov_len));
}

/*
 * A multishot ACCEPT or RECV(MSG): armed in the reactor's multishot set at
 * its first issue, it tries until the file says EAGAIN, posting a CQE with
 * IORING_CQE_F_MORE per result, then waits there (RS_POLL) for the set to
 * wake it (reactor_mshot_harvest_locked puts it back on a run list). It ends
 * (its result is the final CQE, posted by the caller's completion) on an
 * error, end of file, a cancel (ms_end), or a result that finds the CQ full
 * (that one is the final CQE, overflowed, as the kernel). While it runs it
 * counts in r->ms_running (until it waits again, or its final CQE is posted).
 */
static int32_t op_multishot(struct ureq *q, ms_try_fn try1, struct ureq **run)
{
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	if (!q->mshot) {
		int e = req_file(q);
		if (e)
			return e;
		if (s->opcode == IORING_OP_RECVMSG) {
			/* what the kernel reads of the msghdr at submission: the lengths it reserves */
			if (ucopy(&q->msg, (void *)(uintptr_t)s->addr, sizeof(q->msg)) < 0)
				return -EFAULT;
			if (q->msg.msg_iovlen > 1)
				return -EINVAL;
			if (sizeof(struct io_uring_recvmsg_out) + (uint64_t)q->msg.msg_namelen +
			    q->msg.msg_controllen > INT_MAX)
				return -EOVERFLOW;
		}
		int poll_first = s->opcode != IORING_OP_ACCEPT && (s->ioprio & IORING_RECVSEND_POLL_FIRST);
		pthread_mutex_lock(&r->lock);
		q->pevents = POLLIN;
		e = reactor_mshot_arm_locked(q);
		if (!e && !poll_first) {
			q->state = RS_RUN;
			reactor_mshot_run_locked(q, 1);
		}
		pthread_mutex_unlock(&r->lock);
		if (e)
			return e == -EPERM ? -ENOTSOCK : e;   /* a regular file */
		if (poll_first)
			return Q_QUEUED;
	}
	for (;;) {
		uint32_t cf = 0;
		int last = 0;
		int32_t res = q->ms_end ? -EAGAIN : try1(q, &cf, &last);
		pthread_mutex_lock(&r->lock);
		if (res == -EAGAIN) {
			if (q->ms_end) {
				res = q->ms_end;
			} else if (q->ms_again) {
				q->ms_again = 0;
				pthread_mutex_unlock(&r->lock);
				continue;
			} else {
				q->state = RS_POLL;
				reactor_mshot_run_locked(q, 0);
				pthread_mutex_unlock(&r->lock);
				return Q_QUEUED;
			}
		}
		if (res < 0 || last || emu_cq_full_locked(r)) {
			q->cflags = cf;
			pthread_mutex_unlock(&r->lock);
			return res;
		}
		emu_post(r, s->user_data, res, cf | IORING_CQE_F_MORE, !tls_in_submit);
		q->has_buf = 0;                 /* the buffer is the program's again */
		r->ncompleted++;
		if (r->counted)
			timeouts_count_locked(r, run);
		pthread_mutex_unlock(&r->lock);
	}
}

int32_t op_connect(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct io_uring_sqe *s = &q->sqe;
	int e = req_file(q);
	if (e)
		return e;
	if (q->connecting) {
		int err = 0;
		socklen_t l = sizeof(err);
		if (getsockopt(q->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			return -errno;
		return -err;
	}
	/* Started without blocking (O_NONBLOCK for the call only), finished on the
	 * reactor: a connect in progress can be cancelled or timed out. */
	int fl = q->fe.nonblock ? -1 : fcntl(q->fd, F_GETFL);
	if (fl >= 0 && fcntl(q->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		fl = -1;
	int r = connect(q->fd, (struct sockaddr *)(uintptr_t)s->addr, (socklen_t)s->off);
	int err = errno;
	if (fl >= 0)
		fcntl(q->fd, F_SETFL, fl);
	if (r == 0)
		return 0;
	if (err == EINPROGRESS) {
		q->connecting = 1;
		return exec_wait_ready(q, POLLOUT);
	}
	return -err;
}

/* ---- file system and misc ---- */

static int32_t ret_errno(long r)
{
	return r < 0 ? -errno : (int32_t)r;
}

int32_t op_open(struct ureq *q, int ctx, struct ureq **run)
{
	(void)run;
	struct io_uring_sqe *s = &q->sqe;
	struct open_how how;
	memset(&how, 0, sizeof(how));
	if (s->opcode == IORING_OP_OPENAT2) {
		if (s->len < OPEN_HOW_SIZE_VER0 || s->len > 4096)
			return -EINVAL;
		size_t n = s->len < sizeof(how) ? s->len : sizeof(how);
		if (ucopy(&how, (void *)(uintptr_t)s->addr2, n) < 0)
			return -EFAULT;
		for (size_t i = sizeof(how); i < s->len; i++) {
			char c;
			if (ucopy(&c, (void *)(uintptr_t)(s->addr2 + i), 1) < 0)
				return -EFAULT;
			if (c)
				return -E2BIG;
		}
	} else {
		how.flags = s->open_flags;
		/* O_TMPFILE holds O_DIRECTORY's bit: all of it, or O_DIRECTORY alone had
		 * its mode passed, which openat2 refuses (-EINVAL) */
		how.mode = (how.flags & O_CREAT) || (how.flags & O_TMPFILE) == O_TMPFILE ? s->len : 0;
	}
	if (s->file_index && (how.flags & O_CLOEXEC))
		return -EINVAL;                 /* a direct descriptor has no O_CLOEXEC: the kernel's prep */
	how.flags |= O_LARGEFILE;
	if (s->file_index)
		how.flags |= O_CLOEXEC;
	int dfd = s->fd;
	if (ctx != CTX_WORKER) {
		if (how.flags & (O_CREAT | O_TRUNC) || (how.flags & O_TMPFILE) == O_TMPFILE ||
		    (s->flags & IOSQE_ASYNC))
			return exec_punt(q);
		struct open_how c = how;
		/* the inline try, as the kernel's: only if the lookup is cached, and
		 * O_NONBLOCK (a FIFO's or a device's open must not wait here; the
		 * kernel gives its answer, -ENXIO for a FIFO without reader, as is) */
		c.resolve |= RESOLVE_CACHED;
		c.flags |= O_NONBLOCK;
		long fd = syscall(SYS_openat2, dfd, q->p1, &c, sizeof(c));
		if (fd < 0 && (errno == EAGAIN || errno == ENOSYS || errno == EPERM))
			return exec_punt(q);
		if (fd < 0)
			return -errno;
		if (!(how.flags & O_NONBLOCK))
			fcntl((int)fd, F_SETFL, fcntl((int)fd, F_GETFL) & ~O_NONBLOCK);
		exec_fcache_drop(q->r, (int)fd);
		return s->file_index ? install_direct(q, (int)fd) : (int32_t)fd;
	}
	long fd = syscall(SYS_openat2, dfd, q->p1, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS && s->opcode == IORING_OP_OPENAT)
		fd = openat(dfd, q->p1, (int)how.flags, (mode_t)how.mode);
	if (fd < 0)
		return -errno;
	exec_fcache_drop(q->r, (int)fd);
	return s->file_index ? install_direct(q, (int)fd) : (int32_t)fd;
}

int32_t op_close(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	if (s->file_index) {
		unsigned idx = s->file_index - 1;
		int fd = -1, e = 0;
		pthread_mutex_lock(&r->lock);
		if (idx >= r->nfiles)
			e = -EINVAL;
		else if (r->files[idx].fd < 0)
			e = -EBADF;
		else {
			fd = r->files[idx].fd;
			r->files[idx].fd = -1;
			if (r->file_tags[idx])
				emu_post(r, r->file_tags[idx], 0, 0, 1);
			r->file_tags[idx] = 0;
		}
		pthread_mutex_unlock(&r->lock);
		if (fd >= 0)
			close(fd);
		return e;
	}
	if (s->fd < 0)
		return -EBADF;
	if (emu_find_checked(s->fd))
		return -EBADF;          /* a ring's fd is closed by io_uring_queue_exit */
	exec_fcache_drop(r, s->fd);
	return close(s->fd) < 0 ? -errno : 0;
}

int32_t op_splice(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct io_uring_sqe *s = &q->sqe;
	struct emu_ring *r = q->r;
	int e = req_file(q);
	if (e)
		return e;
	unsigned sf = s->splice_flags;
	if (sf & ~(SPLICE_F_FD_IN_FIXED | SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE | SPLICE_F_GIFT))
		return -EINVAL;
	struct fent in;
	if ((e = exec_file(r, s->splice_fd_in, (sf & SPLICE_F_FD_IN_FIXED) ? 1 : 0, &in)) < 0)
		return e;
	sf &= ~SPLICE_F_FD_IN_FIXED;
	/* 0 bytes: splice(2) and tee(2) look at no file, the kernel's ring has both */
	if (!s->len && (fcntl(in.fd, F_GETFD) < 0 || fcntl(q->fd, F_GETFD) < 0))
		return -EBADF;
	if (s->opcode == IORING_OP_TEE) {
		if (s->splice_off_in || s->off)
			return -EINVAL;
		return ret_errno(tee(in.fd, q->fd, s->len, sf));
	}
	loff_t oin = (loff_t)s->splice_off_in, oout = (loff_t)s->off;
	ssize_t n = splice(in.fd, oin == -1 ? NULL : &oin, q->fd, oout == -1 ? NULL : &oout, s->len, sf);
	if (n >= 0 || errno != ESPIPE)
		return ret_errno(n);
	/* splice(2) refuses an offset on a pipe before it looks at the files' modes;
	 * the kernel's ring looks at the modes first (-EBADF) */
	return fd_mode_refuses(in.fd, 0) || fd_mode_refuses(q->fd, 1) ? -EBADF : -ESPIPE;
}

/* IORING_MSG_SEND_FD: the registered file at index addr3 of q's ring goes to
 * the target ring's table at file_index (as a dup of our dup: the two tables
 * close theirs independently), then the target gets a CQE {off, the install's
 * result: 0 or the allocated slot} unless IORING_MSG_RING_CQE_SKIP. len must be
 * 0 (as the kernel). Never holds two ring locks at once. */
static int32_t msg_send_fd(struct ureq *q, struct emu_ring *t)
{
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	if (s->len || t == r)
		return -EINVAL;
	if (t->disabled)
		return -EBADFD;
	struct fent src = { .fd = -1 };
	int fd = -EBADF;
	pthread_mutex_lock(&r->lock);
	if (s->addr3 < r->nfiles && r->files[s->addr3].fd >= 0) {
		src = r->files[s->addr3];
		fd = emu_fd_high(fcntl(src.fd, F_DUPFD_CLOEXEC, 0));
		if (fd < 0)
			fd = -errno;
	}
	pthread_mutex_unlock(&r->lock);
	if (fd < 0)
		return fd;
	int res = install_file(t, s->file_index, fd, &src);
	if (res < 0 || (s->msg_ring_flags & IORING_MSG_RING_CQE_SKIP))
		return res;
	pthread_mutex_lock(&t->lock);
	emu_post(t, s->off, res, 0, 1);
	pthread_mutex_unlock(&t->lock);
	return res;
}

int32_t op_msg_ring(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct io_uring_sqe *s = &q->sqe;
	if (s->addr != IORING_MSG_DATA && s->addr != IORING_MSG_SEND_FD)
		return -EINVAL;
	if (s->buf_index || (s->msg_ring_flags & ~IORING_MSG_RING_CQE_SKIP))
		return -EINVAL;
	if (s->addr == IORING_MSG_DATA && (s->msg_ring_flags || s->addr3 || s->file_index))
		return -EINVAL;
	int e = req_file(q);
	if (e)
		return e;
	struct emu_ring *t = emu_find_checked(q->fd);
	if (!t)
		return -EBADFD;
	if (s->addr == IORING_MSG_SEND_FD)
		return msg_send_fd(q, t);
	pthread_mutex_lock(&t->lock);
	if (t->dying)
		e = -EBADFD;
	else
		emu_post(t, s->off, (int32_t)s->len, 0, 1);
	pthread_mutex_unlock(&t->lock);
	return e;
}

int32_t op_timeout(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	uint64_t dl;
	int e = kts_to_deadline(&q->ts, q->sqe.timeout_flags, &dl);
	if (e)
		return e;
	pthread_mutex_lock(&r->lock);
	q->deadline = dl;
	q->target = 0;
	if (q->sqe.off)
		q->target = r->ncompleted + q->sqe.off;
	q->state = RS_TIMEOUT;
	timer_add_locked(q);
	reactor_start_locked(r);
	reactor_kick(r);
	pthread_mutex_unlock(&r->lock);
	return Q_QUEUED;
}

static struct ureq *find_locked(struct emu_ring *r, struct ureq *self, uint64_t ud, unsigned op, int state)
{
	for (struct ureq *x = *ud_chain(r, ud); x; x = x->hnext)
		if (x != self && x->sqe.user_data == ud && x->sqe.opcode == op && x->state == state)
			return x;
	return NULL;
}

int32_t op_timeout_remove(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	unsigned fl = s->timeout_flags;
	int lt = !!(fl & IORING_LINK_TIMEOUT_UPDATE);
	unsigned op = lt ? IORING_OP_LINK_TIMEOUT : IORING_OP_TIMEOUT;
	int32_t res;
	pthread_mutex_lock(&r->lock);
	struct ureq *t = find_locked(r, q, s->addr, op, RS_TIMEOUT);
	if (!t) {
		res = -ENOENT;
	} else if (fl & (IORING_TIMEOUT_UPDATE | IORING_LINK_TIMEOUT_UPDATE)) {
		uint64_t dl;
		res = kts_to_deadline(&q->ts, fl & ~(IORING_TIMEOUT_UPDATE | IORING_LINK_TIMEOUT_UPDATE), &dl);
		if (!res) {
			t->deadline = dl;
			timer_update_locked(t);
			reactor_kick(r);
		}
	} else {
		exec_complete_locked(t, -ECANCELED, run);
		res = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return res;
}

int32_t exec_poll_now(int fd, short ev)
{
	struct pollfd p = { fd, ev, 0 };
	int n = poll(&p, 1, 0);
	if (n < 0)
		return -errno;
	return p.revents & (ev | POLLERR | POLLHUP | POLLNVAL);
}

int32_t op_poll_add(struct ureq *q, int ctx, struct ureq **run)
{
	(void)run;
	struct emu_ring *r = q->r;
	int e = req_file(q);
	if (e)
		return e;
	/* POLLRDHUP is always asked and reported, as the kernel's ring has it (with
	 * POLLERR, POLLHUP and POLLNVAL, which poll() reports unasked) */
	short ev = (short)((q->sqe.poll32_events & 0xffff) | POLLRDHUP);
	if (q->sqe.len & IORING_POLL_ADD_MULTI) {
		/* one CQE (IORING_CQE_F_MORE) per wake-up until cancelled; what is
		 * pending now is posted before the submit returns, as the kernel
		 * (one harvest for the whole submission: exec_submit) */
		pthread_mutex_lock(&r->lock);
		q->pevents = ev;
		e = reactor_mshot_arm_locked(q);
		r->ms_harvest = 1;
		pthread_mutex_unlock(&r->lock);
		if (e == -EPERM) {
			/* a regular file: ready, and never woken; none of its events ready:
			 * -EINVAL, as a one-shot poll (reactor_arm_locked) */
			int32_t m = exec_poll_now(q->fd, ev);
			return m > 0 ? m : -EINVAL;
		}
		return e ? e : Q_QUEUED;
	}
	if (ctx == CTX_INLINE) {
		int32_t m = exec_poll_now(q->fd, ev);
		if (m > 0 && (m & POLLNVAL))
			return -EBADF;            /* closed since the ring cached it */
		if (m)
			return m;
	}
	return exec_wait_ready(q, ev);
}

int32_t op_poll_remove(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	unsigned fl = s->len;
	if (fl & ~(IORING_POLL_UPDATE_EVENTS | IORING_POLL_UPDATE_USER_DATA | IORING_POLL_ADD_MULTI))
		return -EINVAL;
	if (fl == IORING_POLL_ADD_MULTI)
		return -EINVAL;                   /* meaningless without an update */
	int32_t res = 0;
	pthread_mutex_lock(&r->lock);
	struct ureq *t = find_locked(r, q, s->addr, IORING_OP_POLL_ADD, RS_POLL);
	if (!t) {
		res = -ENOENT;
	} else if (fl & (IORING_POLL_UPDATE_EVENTS | IORING_POLL_UPDATE_USER_DATA)) {
		/* the events and user_data change; one-shot or multishot stays as armed */
		if (fl & IORING_POLL_UPDATE_EVENTS)
			t->pevents = (short)((s->poll32_events & 0xffff) | POLLRDHUP);
		if (fl & IORING_POLL_UPDATE_USER_DATA)
			ud_rehash(t, s->off);
		if (t->mshot) {
			if (reactor_mshot_rearm_locked(t) < 0)
				exec_complete_locked(t, -ECANCELED, run);   /* as the kernel's failed re-arm */
			r->ms_harvest = 1;
		} else {
			reactor_rearm_locked(t);
		}
	} else {
		exec_complete_locked(t, -ECANCELED, run);
	}
	pthread_mutex_unlock(&r->lock);
	return res;
}

static void cancel_one_locked(struct emu_ring *r, struct ureq *m, int32_t res, int quiet);
static void release_deferred_locked(struct emu_ring *r, struct ureq **run);

/* Cancel q (found by a cancel or a firing LINK_TIMEOUT). Ring lock held.
 * 0: cancelled (its CQE posted), -EALREADY: running, -ENOENT: not cancellable. */
int exec_cancel_locked(struct emu_ring *r, struct ureq *q, int32_t res, struct ureq **run)
{
	switch (q->state) {
	case RS_WQ:
		rq_del(&r->wq_head, &r->wq_tail, q);
		break;
	case RS_DEFER: {
		rq_del(&r->defer_head, &r->defer_tail, q);
		r->inflight += q->chain_n;    /* completion counts them out again */
		/* Its chain never started: all of it is cancelled, hard links too (what is
		 * linked after it must not start ahead of the drain it waited behind). */
		for (struct ureq *m = q; m;) {
			struct ureq *n = m->link;
			m->link = NULL;
			cancel_one_locked(r, m, m == q ? res : m->prep_err ? m->prep_err : -ECANCELED, 0);
			m = n;
		}
		/* the drain stays active though the queue may be empty now: what is
		 * submitted later still waits for what runs (queue_chain_locked) */
		if (r->inflight == 0 && r->defer_head)
			release_deferred_locked(r, run);
		return 0;
	}
	case RS_POLL:
	case RS_TIMEOUT:
		break;
	case RS_RUN:
		if (q->mshot && q->sqe.opcode != IORING_OP_POLL_ADD) {
			/* a multishot accepting or receiving now ends when it next looks */
			q->ms_end = res;
			return 0;
		}
		/* a one-shot that goes back to wait for readiness ends there
		 * (exec_wait_ready), or the cancel would be lost: a blocking
		 * listener's accept that lost its connection to another thread, a
		 * stream read retried (a LINK_TIMEOUT's cancel too) */
		q->cancel_run = 1;
		return -EALREADY;
	case RS_AIO:
		return -EALREADY;
	default:
		return -ENOENT;
	}
	if (q->sqe.opcode == IORING_OP_LINK_TIMEOUT && q->lt_target) {
		q->lt_target->lt = NULL;
		q->lt_target = NULL;
	}
	exec_buf_recycle_locked(q);
	q->cflags = 0;
	exec_complete_locked(q, res, run);
	return 0;
}

static int cancel_match(struct ureq *x, struct ureq *self, unsigned fl, uint64_t ud, int fd)
{
	if (x == self || x->state == RS_CHAIN || x->state == RS_LT_IDLE || x->state == RS_FREE)
		return 0;
	/* queued to run in this submission, not issued yet: the kernel issues a
	 * submission's SQEs in order, so a cancel never finds a later one */
	if (x->state == RS_RUN && !__atomic_load_n(&x->started, __ATOMIC_RELAXED))
		return 0;
	if (fl & IORING_ASYNC_CANCEL_ANY)
		return 1;
	if (fl & IORING_ASYNC_CANCEL_FD) {
		int fixed = !!(x->sqe.flags & IOSQE_FIXED_FILE);
		return x->sqe.fd == fd && fixed == !!(fl & IORING_ASYNC_CANCEL_FD_FIXED);
	}
	return x->sqe.user_data == ud;
}

/* The requests a cancel looks at: all (ANY, FD), or those of one user_data. */
static struct ureq *cand_first(struct emu_ring *r, unsigned fl, uint64_t ud)
{
	return (fl & (IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_FD)) ? r->live : *ud_chain(r, ud);
}

static struct ureq *cand_next(struct ureq *x, unsigned fl)
{
	return (fl & (IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_FD)) ? x->next : x->hnext;
}

static int32_t cancel_locked(struct emu_ring *r, struct ureq *self, unsigned fl, uint64_t ud, int fd,
			     struct ureq **run)
{
	int all = !!(fl & (IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_ANY));
	int found = 0, canceled = 0;
	for (int again = 1; again;) {
		again = 0;
		for (struct ureq *x = cand_first(r, fl, ud); x; x = cand_next(x, fl)) {
			if (!cancel_match(x, self, fl, ud, fd) || x->canceled)
				continue;
			found++;
			x->canceled = 1;
			int e = exec_cancel_locked(r, x, -ECANCELED, run);
			if (e == 0) {
				canceled++;
				again = 1;            /* the live list changed */
				break;
			}
			if (!all)
				break;
		}
		if (!all && found)
			break;
	}
	for (struct ureq *x = cand_first(r, fl, ud); x; x = cand_next(x, fl))
		if (x->state == RS_RUN || x->state == RS_AIO)
			x->canceled = 0;
	if (all)
		return canceled;        /* how many, 0 for none (the kernel's count) */
	if (!found)
		return -ENOENT;
	return canceled ? 0 : -EALREADY;
}

/*
 * A ring shared across fork(): what this process did not find (or, for ALL
 * and ANY, in addition) is looked for among the requests of the other
 * processes, each of which runs and cancels its own (xproc.c). res is the
 * answer here; the first process that knows the request answers otherwise.
 */
static int32_t cancel_elsewhere(struct emu_ring *r, unsigned fl, uint64_t ud, int fd, int32_t res)
{
	if (__builtin_expect(!r->xs, 1))
		return res;
	int all = !!(fl & (IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_ANY));
	if (!all && res != -ENOENT)
		return res;
	int32_t there = xproc_cancel(r, fl, ud, fd, all);
	if (!all)
		return there;
	if (there == -ENOENT)
		return res;
	return res == -ENOENT ? there : res + there;
}

/* Another process asks (xproc.c's listener): cancel what matches here. */
int32_t exec_cancel_here(struct emu_ring *r, unsigned fl, uint64_t ud, int fd)
{
	struct ureq *run = NULL;
	pthread_mutex_lock(&r->lock);
	int32_t res = r->dying ? -ENOENT : cancel_locked(r, NULL, fl, ud, fd, &run);
	pthread_mutex_unlock(&r->lock);
	exec_issue_list(run, CTX_WORKER);
	return res;
}

/* A cancel by fd names an open fd, or a registered file with FD_FIXED: else -EBADF
 * (the kernel looks the file up before it searches). */
static int cancel_fd_ok(struct emu_ring *r, unsigned fl, int fd)
{
	struct fent fe;
	if (!(fl & IORING_ASYNC_CANCEL_FD))
		return 0;
	if (fl & IORING_ASYNC_CANCEL_FD_FIXED)
		return exec_file(r, fd, 1, &fe);
	return fcntl(fd, F_GETFD) < 0 ? -EBADF : 0;
}

int32_t op_cancel(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx;
	struct io_uring_sqe *s = &q->sqe;
	unsigned fl = s->cancel_flags;
	int e;
	if (fl & ~(IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY |
		   IORING_ASYNC_CANCEL_FD_FIXED))
		return -EINVAL;
	if ((fl & IORING_ASYNC_CANCEL_FD) && (fl & IORING_ASYNC_CANCEL_ANY))
		return -EINVAL;
	/* FD_FIXED without FD means nothing; IOSQE_FIXED_FILE with FD means FD_FIXED */
	if ((fl & IORING_ASYNC_CANCEL_FD) && (s->flags & IOSQE_FIXED_FILE))
		fl |= IORING_ASYNC_CANCEL_FD_FIXED;
	if ((e = cancel_fd_ok(q->r, fl, s->fd)) < 0)
		return e;
	pthread_mutex_lock(&q->r->lock);
	int32_t res = cancel_locked(q->r, q, fl, s->addr, s->fd, run);
	pthread_mutex_unlock(&q->r->lock);
	return cancel_elsewhere(q->r, fl, s->addr, s->fd, res);
}

int exec_sync_cancel(struct emu_ring *r, const struct io_uring_sync_cancel_reg *reg)
{
	for (int i = 0; i < 4; i++)
		if (reg->pad[i])
			return -EINVAL;
	unsigned fl = reg->flags;
	if (fl & ~(IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY |
		   IORING_ASYNC_CANCEL_FD_FIXED))
		return -EINVAL;
	int e = cancel_fd_ok(r, fl, reg->fd);
	if (e < 0)
		return e;
	struct ureq *run = NULL;
	pthread_mutex_lock(&r->lock);
	int32_t res = cancel_locked(r, NULL, fl, reg->addr, reg->fd, &run);
	pthread_mutex_unlock(&r->lock);
	exec_issue_list(run, CTX_INLINE);
	/* the kernel's answer: an ALL or ANY's count, as ASYNC_CANCEL's */
	return cancel_elsewhere(r, fl, reg->addr, reg->fd, res);
}

/* ---- dispatch ---- */

static int32_t op_exec(struct ureq *q, int ctx, struct ureq **run)
{
	const struct op_def *d = &op_defs[q->sqe.opcode];
	/* the reactor too (a link after a poll, a drain released): it must not block */
	if (ctx != CTX_WORKER && d->where == W_WORKER)
		return exec_punt(q);
	if (ctx == CTX_INLINE && (q->sqe.flags & IOSQE_ASYNC) && d->where == W_INLINE && !d->async_own)
		return exec_punt(q);
	return d->issue(q, ctx, run);
}

/* ---- issue functions of the ops without a function of their own (move to the families) ---- */

int32_t op_fsync(struct ureq *q, int ctx, struct ureq **run)
{
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno((q->sqe.fsync_flags & IORING_FSYNC_DATASYNC) ? fdatasync(q->fd) : fsync(q->fd));
}

int32_t op_sync_file_range(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(sync_file_range(q->fd, (off64_t)s->off, s->len, s->sync_range_flags));
}

int32_t op_fallocate(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(fallocate(q->fd, (int)s->len, (off_t)s->off, (off_t)s->addr));
}

int32_t op_fadvise(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)run;
	if ((e = req_file(q)))
		return e;
	int adv = (int)s->fadvise_advice;
	if (ctx == CTX_INLINE && adv != POSIX_FADV_NORMAL && adv != POSIX_FADV_RANDOM &&
	    adv != POSIX_FADV_SEQUENTIAL)
		return exec_punt(q);
	/* the length: addr, else len (64-bit lengths since Linux 6.7) */
	return -posix_fadvise(q->fd, (off_t)s->off, (off_t)(s->addr ? s->addr : s->len), adv);
}

int32_t op_madvise(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	/* the length: off, else len (64-bit lengths since Linux 6.7) */
	return ret_errno(madvise((void *)(uintptr_t)s->addr, s->off ? s->off : s->len, (int)s->fadvise_advice));
}

int32_t op_recv(struct ureq *q, int ctx, struct ureq **run)
{
	if (q->sqe.ioprio & IORING_RECV_MULTISHOT)
		return op_multishot(q, recv_try, run);
	return op_sendrecv(q, ctx, run);
}

int32_t op_accept(struct ureq *q, int ctx, struct ureq **run)
{
	if (q->sqe.ioprio & IORING_ACCEPT_MULTISHOT)
		return op_multishot(q, accept_try, run);
	return accept_one(q, ctx);
}

int32_t op_shutdown(struct ureq *q, int ctx, struct ureq **run)
{
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(shutdown(q->fd, (int)q->sqe.len));
}

int32_t op_socket(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	int fd = socket(s->fd, (int)s->off | (s->file_index ? SOCK_CLOEXEC : 0), (int)s->len);
	if (fd < 0)
		return -errno;
	return s->file_index ? install_direct(q, fd) : fd;
}

int32_t op_link_timeout(struct ureq *q, int ctx, struct ureq **run)
{
	(void)q, (void)ctx, (void)run;
	return -EINVAL;                   /* not after a linked request */
}

int32_t op_files_update(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	if (s->flags & IOSQE_FIXED_FILE || s->rw_flags || s->splice_fd_in)
		return -EINVAL;
	if (!s->len)
		return -EINVAL;
	if (!q->r->files)
		return -ENXIO;
	return emu_update_files(q->r, (unsigned)s->off, (int *)(uintptr_t)s->addr, NULL, s->len);
}

int32_t op_statx(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	/* the system call: libc declares the buffer non-null, the application may pass NULL */
	return ret_errno(syscall(SYS_statx, s->fd, q->p1, (int)s->statx_flags, s->len,
				 (struct statx *)(uintptr_t)s->addr2));
}

int32_t op_epoll_ctl(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	/* the event is copied first (the kernel's prep), then the epoll fd */
	struct epoll_event ev;
	int eop = (int)s->len;
	if (eop != EPOLL_CTL_DEL && ucopy(&ev, (void *)(uintptr_t)s->addr, sizeof(ev)) < 0)
		return -EFAULT;
	/* a plain fd even with IOSQE_FIXED_FILE: the kernel's EPOLL_CTL takes no file */
	if ((e = exec_file(q->r, s->fd, 0, &q->fe)))
		return e;
	return ret_errno(epoll_ctl(q->fe.fd, eop, (int)s->off, &ev));
}

int32_t op_renameat(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(renameat2(s->fd, q->p1, (int)s->len, q->p2, s->rename_flags));
}

int32_t op_unlinkat(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	return ret_errno(unlinkat(q->sqe.fd, q->p1, (int)q->sqe.unlink_flags));
}

int32_t op_mkdirat(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	return ret_errno(mkdirat(q->sqe.fd, q->p1, (mode_t)q->sqe.len));
}

int32_t op_symlinkat(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	return ret_errno(symlinkat(q->p1, q->sqe.fd, q->p2));
}

int32_t op_linkat(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(linkat(s->fd, q->p1, (int)s->len, q->p2, (int)s->hardlink_flags));
}

int32_t op_fsetxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(fsetxattr(q->fd, q->p1, (void *)(uintptr_t)s->addr2, s->len, (int)s->xattr_flags));
}

int32_t op_fgetxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(fgetxattr(q->fd, q->p1, (void *)(uintptr_t)s->addr2, s->len));
}

int32_t op_setxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(setxattr(q->p2, q->p1, (void *)(uintptr_t)s->addr2, s->len, (int)s->xattr_flags));
}

int32_t op_getxattr(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(getxattr(q->p2, q->p1, (void *)(uintptr_t)s->addr2, s->len));
}

/* ---- completion, links, drain ---- */

static int short_transfer(struct ureq *q, int32_t res)
{
	unsigned op = q->sqe.opcode;
	if (res < 0)
		return 0;
	if (op_defs[op].rw) {
		uint64_t want = 0;
		if (op == IORING_OP_READV || op == IORING_OP_WRITEV) {
			if (q->iov && !q->done) {
				for (int i = 0; i < q->niov; i++)
					want += q->iov[i].iov_len;
			} else if (q->has_buf) {
				want = q->blen;
			} else {
				unsigned n = q->sqe.len;
				struct iovec v;
				for (unsigned i = 0; i < n && i < UIO_MAXIOV; i++) {
					if (ucopy(&v, (struct iovec *)(uintptr_t)q->sqe.addr + i, sizeof(v)) < 0)
						return 1;
					want += v.iov_len;
				}
			}
		} else {
			want = q->has_buf ? q->blen : q->sqe.len;
		}
		return (uint64_t)res < want;
	}
	if ((op == IORING_OP_SEND || op == IORING_OP_RECV || op == IORING_OP_SEND_ZC) &&
	    (q->sqe.msg_flags & MSG_WAITALL))
		return (uint32_t)res < q->sqe.len;
	return 0;
}

static void push_run(struct ureq **run, struct ureq *q)
{
	q->qnext = *run;
	*run = q;
}

/* q's final CQE. A SEND_ZC's (past its notification's allocation) has F_MORE
 * and its notification follows at once: the data was copied, the buffer is
 * free; with IORING_SEND_ZC_REPORT_USAGE the notification says so. */
static void post_cqe(struct emu_ring *r, struct ureq *q, int32_t res, uint32_t cflags, int async)
{
	if (!q->zc_notif) {
		emu_post(r, q->sqe.user_data, res, cflags, async);
		return;
	}
	emu_post(r, q->sqe.user_data, res, cflags | IORING_CQE_F_MORE, async);
	uint32_t usage = (q->sqe.ioprio & IORING_SEND_ZC_REPORT_USAGE) ? IORING_NOTIF_USAGE_ZC_COPIED : 0;
	emu_post(r, q->sqe.user_data, (int32_t)usage, IORING_CQE_F_NOTIF, async);
	r->ncompleted++;
}

/* Complete one request that never ran: -ECANCELED (or its own prep error). */
static void cancel_one_locked(struct emu_ring *r, struct ureq *m, int32_t res, int quiet)
{
	if (m->lt) {
		struct ureq *lt = m->lt;
		m->lt = NULL;
		if (!quiet && !(lt->sqe.flags & IOSQE_CQE_SKIP_SUCCESS))
			emu_post(r, lt->sqe.user_data, -ECANCELED, 0, 1);
		r->inflight--;
		exec_put_locked(r, lt);
	}
	if (!quiet)
		post_cqe(r, m, res, 0, 1);
	r->ncompleted++;
	r->inflight--;
	exec_put_locked(r, m);
}

static void release_deferred_locked(struct emu_ring *r, struct ureq **run)
{
	while (r->defer_head && r->inflight == 0) {
		int first = 1;
		while (r->defer_head) {
			struct ureq *h = r->defer_head;
			if ((h->sqe.flags & IOSQE_IO_DRAIN) && !first)
				break;
			rq_pop(&r->defer_head, &r->defer_tail);
			r->inflight += h->chain_n;
			h->state = RS_RUN;
			push_run(run, h);
			if (h->sqe.flags & IOSQE_IO_DRAIN)
				break;
			first = 0;
		}
		break;
	}
}

/* One request fewer in flight: a drain waiting for zero may go. */
void exec_inflight_dec_locked(struct emu_ring *r, struct ureq **run)
{
	r->inflight--;
	if (r->inflight == 0 && r->defer_head)
		release_deferred_locked(r, run);
}

void exec_complete_locked(struct ureq *q, int32_t res, struct ureq **run)
{
	struct emu_ring *r = q->r;
	if (q->lt) {
		struct ureq *lt = q->lt;
		q->lt = NULL;
		lt->lt_target = NULL;
		/* disarmed because its request finished: a "success" it may skip */
		if (!(lt->sqe.flags & IOSQE_CQE_SKIP_SUCCESS))
			emu_post(r, lt->sqe.user_data, -ECANCELED, 0, 1);
		r->inflight--;
		exec_put_locked(r, lt);
	}
	/* Short counts as failed only for what follows in a chain or a skipped
	 * success CQE: not looked at otherwise (it may read the iovec array). */
	int failed = res < 0 || ((q->link || (q->sqe.flags & IOSQE_CQE_SKIP_SUCCESS)) && short_transfer(q, res));
	if (res == -ETIME && q->sqe.opcode == IORING_OP_TIMEOUT && (q->sqe.timeout_flags & IORING_TIMEOUT_ETIME_SUCCESS))
		failed = 0;
	uint32_t cflags = q->cflags;
	if (q->has_buf && res == -ECANCELED) {
		exec_buf_recycle_locked(q);
		cflags = 0;
	} else if (!q->has_buf) {
		cflags &= ~(IORING_CQE_F_BUFFER | 0xffff0000u);
	}
	if (!(q->sqe.flags & IOSQE_CQE_SKIP_SUCCESS) || failed)
		post_cqe(r, q, res, cflags, !tls_in_submit);
	if (q->sqe.opcode != IORING_OP_TIMEOUT) {
		r->ncompleted++;
		if (r->counted)
			timeouts_count_locked(r, run);
	}
	struct ureq *next = q->link;
	q->link = NULL;
	if (next) {
		if (failed && !(q->sqe.flags & IOSQE_IO_HARDLINK)) {
			/* A failed request that asked to skip its success CQE also
			 * silences the cancellations of the rest of its chain (as the kernel). */
			int quiet = !!(q->sqe.flags & IOSQE_CQE_SKIP_SUCCESS);
			while (next) {
				struct ureq *n2 = next->link;
				cancel_one_locked(r, next, next->prep_err ? next->prep_err : -ECANCELED, quiet);
				next = n2;
			}
		} else {
			next->state = RS_RUN;
			push_run(run, next);
		}
	}
	r->inflight--;
	exec_put_locked(r, q);
	if (r->inflight == 0 && r->defer_head)
		release_deferred_locked(r, run);
}

void exec_complete(struct ureq *q, int32_t res)
{
	struct ureq *run = NULL;
	pthread_mutex_lock(&q->r->lock);
	exec_complete_locked(q, res, &run);
	pthread_mutex_unlock(&q->r->lock);
	exec_issue_list(run, CTX_WORKER);
}

/* A chain whose member failed preparation: nothing runs, each gets its error or -ECANCELED. */
static void fail_chain_locked(struct emu_ring *r, struct ureq *h)
{
	while (h) {
		struct ureq *n = h->link;
		cancel_one_locked(r, h, h->prep_err ? h->prep_err : -ECANCELED, 0);
		h = n;
	}
}

/* Arm q's LINK_TIMEOUT once q waits somewhere (as the kernel: after the first
 * issue), so a short timeout cannot fire while q is still being issued. q may
 * have completed meanwhile (its completion disposed of lt): check under the lock. */
static void arm_lt(struct ureq *q, struct ureq *lt)
{
	struct emu_ring *r = q->r;
	uint64_t dl;
	if (kts_to_deadline(&lt->ts, lt->sqe.timeout_flags, &dl) < 0)
		dl = now_ns();
	pthread_mutex_lock(&r->lock);
	if (lt->state == RS_LT_IDLE && lt->lt_target == q && q->lt == lt) {
		lt->deadline = dl;
		lt->state = RS_TIMEOUT;
		timer_add_locked(lt);
		reactor_start_locked(r);
		reactor_kick(r);
	}
	pthread_mutex_unlock(&r->lock);
}

/* Run one request that is ready (state RS_RUN). Returns its result when it
 * finished here and is still to be completed (by the caller, batched), else
 * Q_QUEUED; *run gets what became ready meanwhile. */
static int32_t run_one(struct ureq *q, int ctx, struct ureq **run)
{
	struct emu_ring *r = q->r;
	if (r->dying) {
		pthread_mutex_lock(&r->lock);
		exec_put_locked(r, q);
		pthread_mutex_unlock(&r->lock);
		return Q_QUEUED;
	}
	if (q->chain_fail) {
		pthread_mutex_lock(&r->lock);
		fail_chain_locked(r, q);
		if (r->inflight == 0 && r->defer_head)
			release_deferred_locked(r, run);
		pthread_mutex_unlock(&r->lock);
		return Q_QUEUED;
	}
	if (q->prep_err)
		return q->prep_err;
	struct ureq *lt = q->lt && q->lt->state == RS_LT_IDLE ? q->lt : NULL;
	__atomic_store_n(&q->started, 1, __ATOMIC_RELAXED);    /* a cancel may find it now */
	int32_t res = op_exec(q, ctx, run);
	if (res == Q_QUEUED && lt)
		arm_lt(q, lt);
	return res;
}

void exec_run(struct ureq *q, int ctx)
{
	q->qnext = NULL;
	exec_issue_list(q, ctx);
}

/* Put the requests of more in front of *list. */
static void list_prepend(struct ureq **list, struct ureq *more)
{
	while (more) {
		struct ureq *m = more;
		more = m->qnext;
		m->qnext = *list;
		*list = m;
	}
}

#define DONE_BATCH 16

/*
 * Run a list of ready requests. Those that finish here are completed in
 * batches, one ring lock for up to DONE_BATCH CQEs (as the kernel flushes a
 * submission's completions together); what a completion makes ready (the
 * next of a link chain, a drained request) runs after the batch.
 */
void exec_issue_list(struct ureq *list, int ctx)
{
	struct emu_ring *r = list ? list->r : NULL;
	struct ureq *done[DONE_BATCH];
	int32_t res[DONE_BATCH];
	int nd = 0;
	while (list || nd) {
		if (nd == DONE_BATCH || (!list && nd)) {
			struct ureq *run = NULL;
			pthread_mutex_lock(&r->lock);
			for (int i = 0; i < nd; i++)
				exec_complete_locked(done[i], res[i], &run);
			pthread_mutex_unlock(&r->lock);
			nd = 0;
			list_prepend(&list, run);
			continue;
		}
		struct ureq *q = list, *more = NULL;
		list = q->qnext;
		q->qnext = NULL;
		int32_t e = run_one(q, ctx, &more);
		if (e != Q_QUEUED) {
			done[nd] = q;
			res[nd++] = e;
		}
		list_prepend(&list, more);
	}
	/* Inline O_DIRECT I/O is batched into one io_submit (kaio_submit): a batch issued
	 * outside a submission (a sync cancel, a waiter reaping AIO, a flush) goes now,
	 * or it would wait for the next submission */
	if (r && ctx == CTX_INLINE)
		kaio_flush(r);
}

/*
 * A finished chain (head h) goes to run or waits behind a drain. Ring lock held.
 * As the kernel's ring (io_uring.c: io_drain_req, io_queue_deferred; Linux 6.18):
 * an IOSQE_IO_DRAIN chain makes the drain active, and while it is, every chain
 * waits in the defer queue, in SQ order, when anything waits there or runs. The
 * queue's first chain goes when nothing runs, and those behind it go with it up
 * to the next drained one (release_deferred_locked): what follows a drained
 * request waits for it to complete, not for each other. Only a chain without a
 * drain of its own that goes at once ends the drain (not a release, nor a cancel
 * that empties the queue). An IOSQE_IO_DRAIN past a chain's head drains the
 * whole chain and the next one too (the kernel's drain_next). A chain that
 * failed preparation is failed at once, drain or not.
 */
static void queue_chain_locked(struct emu_ring *r, struct ureq *h, struct ureq ***tailp)
{
	if (r->drain_next) {
		h->sqe.flags |= IOSQE_IO_DRAIN;
		r->drain_next = 0;
	}
	if (h->chain_drain)
		r->drain_next = 1;
	if (h->sqe.flags & IOSQE_IO_DRAIN)
		r->drain_active = 1;
	if (r->drain_active && !h->chain_fail && !h->prep_err) {
		if (r->defer_head || r->inflight) {
			h->state = RS_DEFER;
			rq_push(&r->defer_head, &r->defer_tail, h);
			return;
		}
		if (!(h->sqe.flags & IOSQE_IO_DRAIN))
			r->drain_active = 0;
	}
	r->inflight += h->chain_n;
	h->state = RS_RUN;
	h->qnext = NULL;
	**tailp = h;
	*tailp = &h->qnext;
}

/* ---- the fast path: plain reads and writes of cached regular files ---- */

#define FAST_BATCH 32

struct fast_cqe {
	uint64_t ud;
	int32_t res;
};

/* Post the fast path's CQEs (in SQ order) under one ring lock. */
static void fast_post(struct emu_ring *r, const struct fast_cqe *c, unsigned n, unsigned head)
{
	struct ureq *run = NULL;
	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < n; i++) {
		emu_post(r, c[i].ud, c[i].res, 0, 0);
		r->ncompleted++;
		if (r->counted)
			timeouts_count_locked(r, &run);
	}
	__atomic_store_n(r->sq_head, head, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&r->lock);
	if (run)
		exec_issue_list(run, CTX_INLINE);
}

/*
 * A READ or WRITE without SQE flags, ioprio or personality on a plain fd that
 * the cache knows as a regular file without O_DIRECT: the one case that needs
 * none of a request's machinery (links, drain, cancel, buffers, a worker), as
 * long as RWF_NOWAIT does it at once. Runs it from the SQE copy s. Returns 1
 * with *res when it is done (all of it, EOF, or an error the slow path would
 * give too), 2 with *res bytes when it was short (the slow path continues
 * it), 0 when nothing was done (would block, not for here: the slow path).
 */
static int fast_rw(struct emu_ring *r, const struct io_uring_sqe *s, int32_t *res)
{
	unsigned op = s->opcode;
	int vec = op == IORING_OP_READV || op == IORING_OP_WRITEV;
	if ((op != IORING_OP_READ && op != IORING_OP_WRITE && !vec) || s->flags || s->ioprio || s->personality ||
	    (int64_t)s->off < -1 || (unsigned)s->fd >= EMU_FCACHE || ((unsigned)s->rw_flags & RWF_REFUSED))
		return 0;
	const struct fent *fe = &r->fcache[s->fd];
	if (!__atomic_load_n(&fe->valid, __ATOMIC_ACQUIRE) || fe->kind != FK_REG || fe->direct)
		return 0;
	/* READV/WRITEV: the program's iovec array, as op_rw passes it inline */
	struct iovec one = { (void *)(uintptr_t)s->addr, s->len };
	const struct iovec *iov = vec ? (const struct iovec *)(uintptr_t)s->addr : &one;
	int niov = vec ? (int)s->len : 1;
	ssize_t n = sys_rw(op == IORING_OP_WRITE || op == IORING_OP_WRITEV, s->fd, iov, niov, (int64_t)s->off,
			   (int)s->rw_flags | RWF_NOWAIT);
	if (n < 0) {
		int e = errno;
		if (e == EAGAIN || e == EOPNOTSUPP || e == ESPIPE || vec)
			return 0;       /* a worker, a stream, the program's own NOWAIT, a bad
					 * iovec array (-EFAULT before -EBADF): op_rw decides */
		*res = -e;
		return 1;
	}
	*res = (int32_t)n;
	return n == 0 || (uint64_t)n >= (vec ? iov_total(iov, niov) : s->len) ? 1 : 2;
}

/*
 * Take SQEs from the head of the SQ through the fast path while they qualify
 * and no drain is active and nothing dying; stops at the first that does
 * not, so CQEs keep SQ order with what the slow path does after. A short
 * transfer is handed to the slow path in *carry (copied once, already
 * consumed) with *carry_done bytes done. Returns how many SQEs were consumed.
 */
static unsigned fast_submit(struct emu_ring *r, unsigned n, unsigned *headp, struct io_uring_sqe *carry,
			    uint32_t *carry_done)
{
	if (__atomic_load_n(&r->defer_head, __ATOMIC_RELAXED) ||
	    r->drain_active ||                                      /* the request path decides */
	    __atomic_load_n(&r->dying, __ATOMIC_RELAXED))
		return 0;
	struct fast_cqe c[FAST_BATCH];
	unsigned nc = 0, done = 0, head = *headp;
	while (done < n) {
		unsigned idx = __atomic_load_n(&r->sq_array[head & (r->sq_entries - 1)], __ATOMIC_RELAXED);
		if (idx >= r->sq_entries)
			break;
		struct io_uring_sqe s;
		memcpy(&s, (char *)r->sqes + (size_t)idx * r->sqe_size, sizeof(s));
		int32_t res;
		int k = fast_rw(r, &s, &res);
		if (!k)
			break;
		head++;
		done++;
		if (k == 2) {
			*carry = s;
			*carry_done = (uint32_t)res;
			break;
		}
		c[nc].ud = s.user_data;
		c[nc++].res = res;
		if (nc == FAST_BATCH) {
			fast_post(r, c, nc, head);
			nc = 0;
		}
	}
	if (nc)
		fast_post(r, c, nc, head);
	*headp = head;
	return done;
}

unsigned exec_submit(struct emu_ring *r, unsigned n, int *err)
{
	unsigned head = *r->sq_head;
	unsigned tail = __atomic_load_n(r->sq_tail, __ATOMIC_ACQUIRE);
	unsigned avail = tail - head;
	if (avail > r->sq_entries)
		avail = r->sq_entries;
	if (n > avail)
		n = avail;
	struct ureq *run = NULL, **rtail = &run;
	struct ureq *chead = NULL, *ctail = NULL;
	if (++r->sub_gen == 0) {
		/* wrapped: no entry may look confirmed by a submission 2^32 ago */
		for (unsigned i = 0; i < EMU_FCACHE; i++)
			__atomic_store_n(&r->fcache[i].vgen, 0, __ATOMIC_RELAXED);
		r->sub_gen = 1;
	}
	struct io_uring_sqe carry;
	uint32_t carry_done = 0;
	tls_in_submit = 1;
	unsigned done = fast_submit(r, n, &head, &carry, &carry_done);
	tls_in_submit = 0;
	int stop = 0, has_carry = carry_done > 0;
	if (done == n && !has_carry) {
		kaio_flush(r);           /* as below: nothing of this submission, but an older batch */
		return done;             /* all done and posted; sq_head published */
	}
	pthread_mutex_lock(&r->lock);
	while ((done < n || has_carry) && !stop) {
		const void *src = &carry;
		if (!has_carry) {
			unsigned idx = __atomic_load_n(&r->sq_array[head & (r->sq_entries - 1)], __ATOMIC_RELAXED);
			if (idx >= r->sq_entries) {
				head++;
				(*r->sq_dropped)++;
				break;
			}
			src = (char *)r->sqes + (size_t)idx * r->sqe_size;
		}
		struct ureq *q = req_get_locked(r);
		if (!q) {
			if (has_carry) {
				/* no memory to go on with it: its short count is its result */
				emu_post(r, carry.user_data, (int32_t)carry_done, 0, 0);
				r->ncompleted++;
				has_carry = 0;
				continue;
			}
			if (!done)
				*err = -EAGAIN;
			break;
		}
		if (!has_carry) {
			head++;
			done++;
		}
		memcpy(&q->sqe, src, sizeof(q->sqe));
		ud_hash_add(q);
		q->prep_err = prep(r, q);
		if (has_carry) {
			/* the rest of a short fast-path transfer (op_rw adds done to the offset) */
			has_carry = 0;
			if (rw_carry(q, carry_done) < 0) {
				/* its array is gone, or no memory: its short count is its result */
				emu_post(r, carry.user_data, (int32_t)carry_done, 0, 0);
				r->ncompleted++;
				exec_put_locked(r, q);
				continue;
			}
		}
		unsigned lf = q->sqe.flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK);
		if (chead) {
			/* q belongs to the open chain */
			if (q->sqe.flags & IOSQE_IO_DRAIN) {
				chead->sqe.flags |= IOSQE_IO_DRAIN;
				chead->chain_drain = 1;
			}
			if (q->sqe.opcode == IORING_OP_LINK_TIMEOUT && !q->prep_err && ctail->lt == NULL &&
			    ctail->sqe.opcode != IORING_OP_LINK_TIMEOUT) {
				q->state = RS_LT_IDLE;
				q->lt_target = ctail;
				ctail->lt = q;
				chead->chain_n++;
				if (!lf) {
					queue_chain_locked(r, chead, &rtail);
					chead = ctail = NULL;
				}
				continue;
			}
			q->state = RS_CHAIN;
			ctail->link = q;
			ctail = q;
			chead->chain_n++;
			if (q->prep_err)
				chead->chain_fail = 1;
			if (!lf) {
				queue_chain_locked(r, chead, &rtail);
				if (chead->chain_fail && !(r->flags & IORING_SETUP_SUBMIT_ALL))
					stop = 1;
				chead = ctail = NULL;
			}
			continue;
		}
		q->chain_n = 1;
		if (q->sqe.opcode == IORING_OP_LINK_TIMEOUT && !q->prep_err)
			q->prep_err = -EINVAL;         /* nothing to guard */
		if (lf) {
			chead = ctail = q;
			if (q->prep_err)
				q->chain_fail = 1;
			continue;
		}
		queue_chain_locked(r, q, &rtail);
		if (q->prep_err && !(r->flags & IORING_SETUP_SUBMIT_ALL))
			stop = 1;
	}
	if (chead)
		queue_chain_locked(r, chead, &rtail);
	__atomic_store_n(r->sq_head, head, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&r->lock);
	tls_in_submit = 1;
	exec_issue_list(run, CTX_INLINE);
	if (r->ms_harvest) {
		/* multishot polls armed or updated by this submission: what is ready now */
		run = NULL;
		pthread_mutex_lock(&r->lock);
		r->ms_harvest = 0;
		reactor_mshot_harvest_locked(r, &run);
		pthread_mutex_unlock(&r->lock);
		exec_issue_list(run, CTX_INLINE);
	}
	tls_in_submit = 0;
	kaio_flush(r);
	return done;
}

/* ---- a ring shared across fork() (xproc.c) ---- */

/* A TIMEOUT handed over by a process that left the ring: armed here with the
 * same user_data and deadline (CLOCK_MONOTONIC is the machine's), and left
 * completions to wait for (0: none). */
int exec_adopt_timeout(struct emu_ring *r, uint64_t ud, uint64_t deadline, unsigned tflags, uint64_t left)
{
	pthread_mutex_lock(&r->lock);
	struct ureq *q = r->dying ? NULL : req_get_locked(r);
	if (!q) {
		pthread_mutex_unlock(&r->lock);
		return -ENOMEM;
	}
	q->sqe.opcode = IORING_OP_TIMEOUT;
	q->sqe.user_data = ud;
	q->sqe.timeout_flags = tflags;
	q->sqe.off = left;
	ud_hash_add(q);
	q->chain_n = 1;
	r->inflight++;
	q->deadline = deadline;
	q->target = left ? r->ncompleted + left : 0;
	q->state = RS_TIMEOUT;
	timer_add_locked(q);
	int e = reactor_start_locked(r);
	if (e < 0)
		exec_complete_locked(q, e, &(struct ureq *){ NULL });
	else
		reactor_kick(r);
	pthread_mutex_unlock(&r->lock);
	return e < 0 ? e : 0;
}

/* Post -ECANCELED for x, its armed-or-not LINK_TIMEOUT and what is linked
 * after it, leaving the requests where they are (a thread of this process
 * still runs x; r->dying, set next, keeps its CQE out). */
static void leave_post_running_locked(struct emu_ring *r, struct ureq *x)
{
	emu_post(r, x->sqe.user_data, -ECANCELED, 0, 1);
	if (x->lt && x->lt->state == RS_LT_IDLE)
		emu_post(r, x->lt->sqe.user_data, -ECANCELED, 0, 1);
	for (struct ureq *m = x->link; m; m = m->link) {
		emu_post(r, m->sqe.user_data, -ECANCELED, 0, 1);
		if (m->lt)
			emu_post(r, m->lt->sqe.user_data, -ECANCELED, 0, 1);
	}
}

/*
 * This process leaves a shared ring (it exits, or closes the ring): as the
 * kernel cancels a task's requests when it exits, each of its requests gets
 * -ECANCELED (chains and LINK_TIMEOUTs as a cancel would have them), except a
 * TIMEOUT that is not part of a chain, which is handed over to a process that
 * stays and fires there (or, if none can take it, is cancelled too). Ring
 * lock held; the ring is dying after it: nothing of this process posts again.
 */
void exec_leave_locked(struct emu_ring *r)
{
	struct ureq *run = NULL;
	for (int again = 1; again;) {
		again = 0;
		for (struct ureq *x = r->live; x; x = x->next) {
			if (x->state != RS_TIMEOUT || x->sqe.opcode != IORING_OP_TIMEOUT || x->link)
				continue;
			uint64_t left = x->target ? (x->target > r->ncompleted ? x->target - r->ncompleted : 1) : 0;
			if (xproc_handover_timeout(r, x, left) == 0) {
				r->inflight--;           /* it goes on elsewhere: no CQE here */
				exec_put_locked(r, x);
				again = 1;
				break;
			}
		}
	}
	for (struct ureq *x = r->live; x; x = x->next)
		if ((x->state == RS_RUN || x->state == RS_AIO) && !x->canceled) {
			x->canceled = 1;
			leave_post_running_locked(r, x);
		}
	for (int again = 1; again;) {
		again = 0;
		for (struct ureq *x = r->live; x; x = x->next) {
			if (x->state != RS_WQ && x->state != RS_DEFER && x->state != RS_POLL &&
			    x->state != RS_TIMEOUT)
				continue;
			x->canceled = 1;
			if (exec_cancel_locked(r, x, -ECANCELED, &run) == 0) {
				again = 1;
				break;
			}
		}
	}
	/* released by the cancels (a drain queue emptied): never started, cancelled */
	while (run) {
		struct ureq *q = run;
		run = q->qnext;
		q->qnext = NULL;
		if (q->state == RS_RUN && !q->canceled) {
			q->canceled = 1;
			leave_post_running_locked(r, q);
		}
	}
	/* what overflowed here goes into the CQ while it has room; the rest is lost
	 * with this process (counted in cq.overflow) */
	emu_flush_overflow_locked(r);
	if (r->novf) {
		xproc_ovf_count(r, -(int)r->novf);
		__atomic_fetch_add(r->cq_overflow, r->novf, __ATOMIC_RELAXED);
	}
	r->dying = 1;
}

/*
 * fork()'s child (its only thread, the locks taken before the fork): the
 * requests in flight are the parent's, which runs and completes them; the
 * threads, the reactor's epoll sets and the AIO context are not the child's.
 * The child's copies of the requests go to its free list (their copied
 * arguments freed), the rest is forgotten; the child starts its own executor
 * when it first submits.
 */
void exec_child_reset(struct emu_ring *r)
{
	atomic_store(&r->refs, 1);
	while (r->live) {
		struct ureq *q = r->live;
		r->live = q->next;
		exec_args_free(q);
		if (q->mshot && q->ms_dup)
			close(q->ms_fd);             /* the child's copy of the dup */
		q->state = RS_FREE;
		q->qnext = r->freelist;
		r->freelist = q;
	}
	while (r->ovf_head) {
		struct ovf *o = r->ovf_head;
		r->ovf_head = o->next;
		free(o);
	}
	memset(r->udh, 0, sizeof(*r->udh) << r->udh_bits);
	r->inflight = 0;
	r->defer_head = r->defer_tail = NULL;
	r->drain_active = r->drain_next = 0;
	r->ovf_head = r->ovf_tail = NULL;         /* the parent's to flush */
	r->novf = 0;
	r->wq_head = r->wq_tail = NULL;
	r->wq_threads = r->wq_idle = 0;
	r->aio_state = 0;                         /* io_setup() contexts are not inherited */
	r->aio_ctx = 0;
	r->aio_inflight = 0;
	r->aio_npend = 0;
	r->sqp_on = r->sqp_sleeping = 0;          /* the SQ poller stays the parent's */
	reactor_child_reset(r);
}
