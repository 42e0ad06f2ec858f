/* SPDX-License-Identifier: MIT */
/*
 * net.c - the socket operations of the emulated ring, as the kernel's
 * io_uring/net.c: SEND, RECV, SENDMSG, RECVMSG (and the zero-copy SEND_ZC,
 * SENDMSG_ZC, copied, with the kernel's two CQEs), ACCEPT, CONNECT, SHUTDOWN,
 * SOCKET, and the multishot ACCEPT, RECV and RECVMSG (armed in the reactor's
 * epoll set).
 *
 * Must never: block the submitting thread or the reactor on a socket
 * (MSG_DONTWAIT, then a wait in the reactor), or read the application's
 * msghdr or iovecs after submission when the request waits (they are copied).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "opdef.h"

static int stream_sock(int fd);
static int stabilize_msg(struct ureq *q);

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
	    exec_file_is_socket(q) == 0)
		return -ENOTSOCK;
	/* a SEND_ZC from a registered buffer: the memory is the program's own */
	if (op == IORING_OP_SEND_ZC && (s->ioprio & IORING_RECVSEND_FIXED_BUF) && !q->done &&
	    (e = exec_fixed_range(q)) < 0)
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
		if ((e = exec_select_buf(q, want)) < 0) {
			int k = e == -ENOBUFS ? exec_file_is_socket(q) : 1;
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

/* SENDMSG/RECVMSG that runs after its submission: its header and iovecs now. */
int msg_stable(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	return stabilize_msg(q);
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
	return s->file_index ? exec_install_direct(q, fd) : fd;
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
	int e = exec_select_buf(q, msg ? 0 : s->len);
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
		emu_post(r, s->user_data, res, cf | IORING_CQE_F_MORE, !exec_in_submit);
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
	return s->file_index ? exec_install_direct(q, fd) : fd;
}
