/* SPDX-License-Identifier: MIT */
/*
 * rw.c - READ, WRITE, READV, WRITEV, READ_FIXED, WRITE_FIXED on the emulated
 * ring, as the kernel's io_uring/rw.c: tried inline without blocking
 * (RWF_NOWAIT), on a worker when the file said -EAGAIN, through kernel AIO
 * for O_DIRECT files, on the reactor for pipes and sockets; a short transfer
 * of a regular file is continued.
 *
 * Must never: block the submitting thread or the reactor on a file, use an
 * fd or a registered buffer index without checking it (-EBADF, -EFAULT), or
 * read the application's iovec array after submission (it is copied).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "opdef.h"

static int is_write(unsigned op)
{
	return op == IORING_OP_WRITE || op == IORING_OP_WRITEV || op == IORING_OP_WRITE_FIXED;
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

/* A READV/WRITEV that does not run now (a link's member, one a drain holds
 * back): its iovec array is copied at submission, as the kernel's prep takes
 * it (FEAT_SUBMIT_STABLE); -EFAULT, -EINVAL as its prep would fail. */
int rw_stable(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	return q->sqe.flags & IOSQE_BUFFER_SELECT ? 0 : stabilize_iov(q);
}

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
int exec_file_is_socket(struct ureq *q)
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
	struct fent *c = ctx == CTX_INLINE && exec_in_submit && fd >= 0 && fd < EMU_FCACHE ? &r->fcache[fd] : NULL;
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
ssize_t exec_sys_rw(int wr, int fd, const struct iovec *iov, int niov, int64_t off, int flags)
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
int exec_rw_carry(struct ureq *q, uint32_t done)
{
	int e = stabilize_iov(q);
	return e < 0 ? e : rw_advance(q, done);
}

/* addr..addr+len of q lies in its registered buffer buf_index: 0, else -EFAULT. */
int exec_fixed_range(struct ureq *q)
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
int exec_fd_mode_refuses(int fd, int wr)
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
	return exec_fd_mode_refuses(q->fd, wr) ? -EBADF : e;
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
		if ((e = exec_select_buf(q, want)) < 0)
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
	    exec_file_is_socket(q) == 1)
		return rw_early_err(q, wr, -ESPIPE);
	if (op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED) {
		if (!q->iov) {
			if ((e = exec_fixed_range(q)) < 0)
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
	 * checks it (-EFAULT): to preadv2, or to io_submit for an O_DIRECT file (the
	 * batch goes before the submission returns); it is copied (ucopy) only to
	 * leave the submitter: a worker, or a short transfer to continue. */
	if ((op == IORING_OP_READV || op == IORING_OP_WRITEV) && !q->iov &&
	    (ctx != CTX_INLINE || (s->flags & IOSQE_ASYNC)) && (e = stabilize_iov(q)) < 0)
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
		/* a file whose writes refused RWF_NOWAIT before (EOPNOTSUPP: ext4's
		 * buffered writes): a worker at once, no try that would be refused */
		if (wr && q->fe.wr_block && q->fe.kind == FK_REG && !((unsigned)s->rw_flags & RWF_NOWAIT)) {
			if ((e = stabilize_iov(q)) < 0)
				return e;
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
		if (wr && (ctx != CTX_INLINE || !exec_in_submit || (q->r->flags & IORING_SETUP_SQPOLL)))
			mf |= MSG_NOSIGNAL;
		n = wr ? sendmsg(q->fd, &m, mf) : recvmsg(q->fd, &m, mf);
		if (n < 0 && errno == ENOTSOCK) {
			refresh_file(q);          /* not a socket (any more) */
			errno = ENOTSOCK;
		}
	}
	if (q->fe.kind != FK_SOCK) {
		n = exec_sys_rw(wr, q->fd, iov, niov, off, flags);
		if (n < 0 && errno == ESPIPE && off != -1) {
			/* a number cached as a file that is a socket now (a cached stream was
			 * looked at above) */
			if (q->fe.kind != FK_POLL && (int64_t)s->off > 0 && !q->done && exec_file_is_socket(q) == 1) {
				refresh_file(q);
				return rw_early_err(q, wr, -ESPIPE);
			}
			stream = 1;               /* a pipe, eventfd, ...: the offset does not apply */
			if (q->fe.kind == FK_REG)
				refresh_file(q);
			off = -1;
			n = exec_sys_rw(wr, q->fd, iov, niov, off, flags);
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
			/* This file cannot say "would block": a worker does it. For a write
			 * of a regular file the cache remembers (the next ones go at once). */
			if (wr && q->fe.kind == FK_REG && !(s->flags & IOSQE_FIXED_FILE) && q->sqe.fd >= 0 &&
			    q->sqe.fd < EMU_FCACHE && !q->done)
				__atomic_store_n(&q->r->fcache[q->sqe.fd].wr_block, 1, __ATOMIC_RELAXED);
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
		want = exec_iov_total(iov, niov);
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

/* q, a hashed write a worker took, goes in a batch as cb (aio_data: idx): a plain
 * WRITE, or a WRITEV whose array is the library's copy, of a buffered regular
 * file at an offset, with nothing to happen first (a failed chain, a link
 * timeout, a transfer begun, flags op_rw answers itself). 0: it runs alone. */
static int hashed_iocb(struct ureq *q, struct iocb *cb, int idx)
{
	const struct io_uring_sqe *s = &q->sqe;
	if (q->r->dying || q->chain_fail || q->prep_err || q->lt || q->done || (int64_t)s->off < 0 ||
	    q->fe.kind != FK_REG || q->fe.direct || ((unsigned)s->rw_flags & RWF_REFUSED) ||
	    (s->flags & IOSQE_BUFFER_SELECT))
		return 0;
	if (s->opcode == IORING_OP_WRITE && !q->iov) {
		q->iov_in[0] = (struct iovec){ (void *)(uintptr_t)s->addr, s->len };
		q->iov = q->iov_in;
		q->niov = 1;
	} else if ((s->opcode != IORING_OP_WRITE && s->opcode != IORING_OP_WRITEV) || !q->iov) {
		return 0;
	}
	memset(cb, 0, sizeof(*cb));
	cb->aio_data = (uint64_t)idx;
	cb->aio_fildes = (uint32_t)q->fd;
	cb->aio_rw_flags = (int)s->rw_flags;
	cb->aio_offset = (int64_t)s->off;
	cb->aio_lio_opcode = IOCB_CMD_PWRITEV;
	cb->aio_buf = (uint64_t)(uintptr_t)q->iov;
	cb->aio_nbytes = (uint64_t)q->niov;
	__atomic_store_n(&q->started, 1, __ATOMIC_RELAXED);    /* a cancel may find it now */
	return 1;
}

/*
 * A worker runs the hashed writes v[0..n) of one file (wq.c), in their order:
 * runs of two or more that hashed_iocb takes in one io_submit on the worker's
 * own AIO context where batches pay (kaio_batch_pays; a buffered write is done
 * inside the call), the others as any request, one the kernel refused at
 * io_submit (a closed fd) too, alone, for its own error. A short write goes on
 * from where it stopped, as op_rw's (after the batch's later writes are done:
 * a short buffered write is a full disk or a file size limit; the kernel's
 * goes back to its bucket's queue too). What their completions make ready (a
 * link's next) goes to *held: the worker runs it after it let the bucket go,
 * so that a blocking request linked to a write never holds the file's queue.
 */
void rw_hashed_run(struct ureq **v, int n, struct ureq **held)
{
	struct iocb cb[WQ_BATCH], *cbp[WQ_BATCH];
	int32_t res[WQ_BATCH];
	int pays = n >= 2 && kaio_batch_pays();
	for (int i = 0; i < n;) {
		int k = 0;
		while (pays && i + k < n && k < WQ_BATCH && hashed_iocb(v[i + k], &cb[k], k)) {
			cbp[k] = &cb[k];
			k++;
		}
		int took = k >= 2 ? kaio_worker_batch(cbp, k, res) : 0;
		if (!took) {
			exec_run_held(v[i++], held);
			continue;
		}
		struct emu_ring *r = v[i]->r;
		struct ureq *run = NULL;
		pthread_mutex_lock(&r->lock);
		for (int j = 0; j < took; j++) {
			struct ureq *q = v[i + j];
			if (res[j] > 0 && (uint64_t)res[j] < exec_iov_total(q->iov, q->niov)) {
				if (rw_advance(q, (uint64_t)res[j]) == 0) {
					pthread_mutex_unlock(&r->lock);
					exec_run_held(q, held);
					pthread_mutex_lock(&r->lock);
					continue;
				}
				res[j] = (int32_t)q->done;
			}
			exec_complete_locked(q, res[j], &run);
		}
		pthread_mutex_unlock(&r->lock);
		while (run) {
			struct ureq *m = run;
			run = m->qnext;
			m->qnext = *held;
			*held = m;
		}
		i += took;
		if (took < k)
			exec_run_held(v[i++], held);
	}
}
