/* SPDX-License-Identifier: MIT */
/*
 * submit.c - submission on the emulated ring (the kernel's io_submit_sqes and
 * io_init_req): takes SQEs from the SQ, copying each one before looking at it,
 * runs the checks every opcode shares and the row's prep (opdef.c), builds
 * link chains and holds them back behind IOSQE_IO_DRAIN; the fast path
 * completes plain reads and writes of cached regular files without a request.
 *
 * Must never: read an SQE twice from the ring (the copy is what runs),
 * dereference an SQE field as a pointer (system calls or ucopy check them:
 * -EFAULT), or let the fast path take an SQE that the request path would
 * answer differently (flags, links, a file not known to be regular).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "opdef.h"

#define SQE_FLAGS (IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_ASYNC | \
	IOSQE_BUFFER_SELECT | IOSQE_CQE_SKIP_SUCCESS)

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
	/* the kernel's ring cannot keep a drain's count once CQEs may be skipped:
	 * from the first IOSQE_CQE_SKIP_SUCCESS on, IOSQE_IO_DRAIN is refused */
	if (s->flags & IOSQE_CQE_SKIP_SUCCESS)
		r->drain_disabled = 1;
	if ((s->flags & IOSQE_IO_DRAIN) && r->drain_disabled)
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

/* What q reads of the program's memory, copied now: it runs after the
 * submission (opdef.c's stable). */
static int stable(struct emu_ring *r, struct ureq *q)
{
	op_prep_fn f = op_defs[q->sqe.opcode].stable;
	return f ? f(r, q) : 0;
}

/*
 * A finished chain (head h) goes to run or waits behind a drain. Ring lock held.
 * As the kernel's ring (io_uring.c: io_drain_req, io_queue_deferred; Linux 6.18):
 * an IOSQE_IO_DRAIN chain makes the drain active, and while it is, every chain
 * waits in the defer queue, in SQ order, when anything waits there or runs. The
 * queue's first chain goes when nothing runs, and those behind it go with it up
 * to the next drained one (exec_release_deferred_locked): what follows a drained
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
		/* held back: it runs after the submission (its array copied now) */
		if ((r->defer_head || r->inflight) && !(h->prep_err = stable(r, h))) {
			h->state = RS_DEFER;
			rq_push(&r->defer_head, &r->defer_tail, h);
			return;
		}
		if (!h->prep_err && !(h->sqe.flags & IOSQE_IO_DRAIN))
			r->drain_active = 0;
	}
	r->inflight += h->chain_n;
	h->state = RS_RUN;
	h->qnext = NULL;
	**tailp = h;
	*tailp = &h->qnext;
}

/* ---- the fast path: plain reads and writes of cached regular files ---- */

/* The kernel's ring takes a program's 64 SQEs of one io_uring_enter at once;
 * so does a batch of cached reads here (one io_submit of 64). */
#define FAST_BATCH 64

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
 * long as RWF_NOWAIT does it at once.
 */
static int fast_ok(const struct emu_ring *r, const struct io_uring_sqe *s)
{
	unsigned op = s->opcode;
	if ((op != IORING_OP_READ && op != IORING_OP_WRITE && op != IORING_OP_READV && op != IORING_OP_WRITEV) ||
	    s->flags || s->ioprio || s->personality || (int64_t)s->off < -1 || (unsigned)s->fd >= EMU_FCACHE ||
	    ((unsigned)s->rw_flags & RWF_REFUSED))
		return 0;
	const struct fent *fe = &r->fcache[s->fd];
	return __atomic_load_n(&fe->valid, __ATOMIC_ACQUIRE) && fe->kind == FK_REG && !fe->direct &&
	       ((op != IORING_OP_WRITE && op != IORING_OP_WRITEV) || !__atomic_load_n(&fe->wr_block, __ATOMIC_RELAXED));
}

/* What a fast-path transfer of s gave (n bytes, or -errno) means: 1 done with
 * *res (all of it, EOF, or an error the request path would give too), 2 short
 * with *res bytes (the request path continues it), 0 nothing done (would
 * block, not for here: the request path runs it). */
static int fast_outcome(const struct io_uring_sqe *s, int64_t n, int32_t *res)
{
	int vec = s->opcode == IORING_OP_READV || s->opcode == IORING_OP_WRITEV;
	if (n < 0) {
		int e = (int)-n;
		if (e == EAGAIN || e == EOPNOTSUPP || e == ESPIPE || vec)
			return 0;       /* a worker, a stream, the program's own NOWAIT, a bad
					 * iovec array (-EFAULT before -EBADF): op_rw decides */
		*res = -e;
		return 1;
	}
	*res = (int32_t)n;
	/* READV: the kernel has just read the program's array without a fault */
	uint64_t want = vec ? exec_iov_total((const struct iovec *)(uintptr_t)s->addr, (int)s->len) : s->len;
	return n == 0 || (uint64_t)n >= want ? 1 : 2;
}

/* Run s (fast_ok) from its copy with one preadv2/pwritev2: fast_outcome's answer. */
static int fast_rw(const struct io_uring_sqe *s, int32_t *res)
{
	unsigned op = s->opcode;
	int vec = op == IORING_OP_READV || op == IORING_OP_WRITEV;
	/* READV/WRITEV: the program's iovec array, as op_rw passes it inline */
	struct iovec one = { (void *)(uintptr_t)s->addr, s->len };
	const struct iovec *iov = vec ? (const struct iovec *)(uintptr_t)s->addr : &one;
	ssize_t n = exec_sys_rw(op == IORING_OP_WRITE || op == IORING_OP_WRITEV, s->fd, iov, vec ? (int)s->len : 1,
			   (int64_t)s->off, (int)s->rw_flags | RWF_NOWAIT);
	return fast_outcome(s, n < 0 ? -(int64_t)errno : (int64_t)n, res);
}

/* An SQE the fast path took that the request path finishes: not done at all
 * (done 0: run as if it came from the SQ), or short by done bytes. A
 * submission carries at most CARRY_MAX; the fast path stops while it has
 * room for one more batch. */
#define CARRY_MAX (2 * FAST_BATCH + 1)
#define CARRY_ROOM(n) ((n) + FAST_BATCH + 1 <= CARRY_MAX)
struct fast_carry {
	struct io_uring_sqe sqe;
	uint32_t done;
};

/* The fast path's arrays, about 20 KiB: one per ring (only the holder of
 * sq_lock submits), not on the stack of a program's thread, which may be
 * small. Made at the ring's first submission; without it the request path
 * takes every SQE. */
struct fast_mem {
	struct fast_carry carry[CARRY_MAX];
	struct fast_cqe c[FAST_BATCH];
	struct io_uring_sqe bs[FAST_BATCH];
	struct iocb cb[FAST_BATCH], *cbp[FAST_BATCH];
	int32_t res[FAST_BATCH];
};

/* Post c[0..*nc) once it is full (sq_head: head). */
static void fast_add(struct emu_ring *r, struct fast_cqe *c, unsigned *nc, unsigned head, uint64_t ud, int32_t res)
{
	c[*nc].ud = ud;
	c[(*nc)++].res = res;
	if (*nc == FAST_BATCH) {
		fast_post(r, c, *nc, head);
		*nc = 0;
	}
}

/*
 * Run the cached reads bs[0..nb) (fast_ok READ and READV SQEs at an offset,
 * copied): two or more in one io_submit where batches pay (kaio_batch),
 * RWF_NOWAIT in each; one with a preadv2, and so is one the kernel refused (a
 * bad fd or iovec array), the rest going on in another io_submit. Each result
 * means what fast_rw's would: what is done goes to c (SQ order), the rest to
 * carry.
 */
static void fast_reads(struct emu_ring *r, const struct io_uring_sqe *bs, unsigned nb, struct fast_cqe *c,
			   unsigned *nc, unsigned head, struct fast_carry *carry, unsigned *ncarry)
{
	struct iocb *cb = r->fast_mem->cb, **cbp = r->fast_mem->cbp;
	int32_t *res = r->fast_mem->res;
	uint8_t by_aio[FAST_BATCH] = { 0 };
	if (nb >= 2) {
		for (unsigned i = 0; i < nb; i++) {
			const struct io_uring_sqe *s = &bs[i];
			memset(&cb[i], 0, sizeof(cb[i]));
			cb[i].aio_data = i;
			cb[i].aio_fildes = (uint32_t)s->fd;
			cb[i].aio_lio_opcode = s->opcode == IORING_OP_READV ? IOCB_CMD_PREADV : IOCB_CMD_PREAD;
			cb[i].aio_buf = s->addr;
			cb[i].aio_nbytes = s->len;      /* READV: the iovec count */
			cb[i].aio_offset = (int64_t)s->off;
			cb[i].aio_rw_flags = (int)s->rw_flags | RWF_NOWAIT;
			cbp[i] = &cb[i];
		}
		/* past one the kernel refused, the rest in the next io_submit */
		for (unsigned i = 0; i + 2 <= nb && r->fb_state >= 0;) {
			int took = kaio_batch(&r->fb_ctx, &r->fb_state, cbp + i, (int)(nb - i), res);
			memset(by_aio + i, 1, (size_t)took);
			i += (unsigned)took + 1;
		}
	}
	for (unsigned i = 0; i < nb; i++) {
		int32_t v = 0;
		int k = by_aio[i] ? fast_outcome(&bs[i], res[i], &v) : fast_rw(&bs[i], &v);
		if (k == 1) {
			fast_add(r, c, nc, head, bs[i].user_data, v);
			continue;
		}
		carry[*ncarry].sqe = bs[i];
		carry[(*ncarry)++].done = k == 2 ? (uint32_t)v : 0;
	}
}

/*
 * Take SQEs from the head of the SQ through the fast path while they qualify
 * and no drain is active and nothing dying; stops at the first that does
 * not, so CQEs keep SQ order with what the slow path does after. Cached
 * reads in a row are gathered for one io_submit (fast_reads) where batches
 * pay. SQEs taken that the request path must finish (not cached, short) go
 * to carry, copied and consumed, and run there after the fast path, as the
 * kernel's ring completes them later too. Returns how many SQEs were consumed.
 */
static unsigned fast_submit(struct emu_ring *r, unsigned n, unsigned *headp, struct fast_carry *carry,
			    unsigned *ncarry)
{
	if (__atomic_load_n(&r->defer_head, __ATOMIC_RELAXED) ||
	    r->drain_active ||                                      /* the request path decides */
	    __atomic_load_n(&r->dying, __ATOMIC_RELAXED))
		return 0;
	struct fast_cqe *c = r->fast_mem->c;
	struct io_uring_sqe *bs = r->fast_mem->bs;
	unsigned nc = 0, nb = 0, done = 0, head = *headp;
	int batch = r->fb_on && r->fb_state >= 0 && n >= 2;
	while (done < n) {
		unsigned idx = __atomic_load_n(&r->sq_array[head & (r->sq_entries - 1)], __ATOMIC_RELAXED);
		if (idx >= r->sq_entries)
			break;
		struct io_uring_sqe s;
		memcpy(&s, (char *)r->sqes + (size_t)idx * r->sqe_size, sizeof(s));
		if (!fast_ok(r, &s))
			break;
		if (batch && (s.opcode == IORING_OP_READ || s.opcode == IORING_OP_READV) && (int64_t)s.off >= 0) {
			bs[nb++] = s;
			head++;
			done++;
			if (nb == FAST_BATCH) {
				fast_reads(r, bs, nb, c, &nc, head, carry, ncarry);
				nb = 0;
				if (!CARRY_ROOM(*ncarry))
					break;
			}
			continue;
		}
		if (nb) {
			fast_reads(r, bs, nb, c, &nc, head, carry, ncarry);
			nb = 0;
			if (!CARRY_ROOM(*ncarry))
				break;          /* s stays in the SQ */
		}
		int32_t res;
		int k = fast_rw(&s, &res);
		if (!k)
			break;
		head++;
		done++;
		if (k == 2) {
			carry[*ncarry].sqe = s;
			carry[(*ncarry)++].done = (uint32_t)res;
			if (!CARRY_ROOM(*ncarry))
				break;
			continue;
		}
		fast_add(r, c, &nc, head, s.user_data, res);
	}
	if (nb)
		fast_reads(r, bs, nb, c, &nc, head, carry, ncarry);
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
	if (!r->fast_mem)
		r->fast_mem = malloc(sizeof(*r->fast_mem));
	struct fast_carry *carry = r->fast_mem ? r->fast_mem->carry : NULL;
	unsigned ncarry = 0, ci = 0, done = 0;
	if (carry) {
		exec_in_submit = 1;
		done = fast_submit(r, n, &head, carry, &ncarry);
		exec_in_submit = 0;
	}
	int stop = 0, has_carry = ncarry > 0;
	if (done == n && !has_carry) {
		kaio_flush(r);           /* as below: nothing of this submission, but an older batch */
		return done;             /* all done and posted; sq_head published */
	}
	pthread_mutex_lock(&r->lock);
	while ((done < n || has_carry) && !stop) {
		const void *src = has_carry ? &carry[ci].sqe : NULL;
		if (!has_carry) {
			unsigned idx = __atomic_load_n(&r->sq_array[head & (r->sq_entries - 1)], __ATOMIC_RELAXED);
			if (idx >= r->sq_entries) {
				head++;
				(*r->sq_dropped)++;
				break;
			}
			src = (char *)r->sqes + (size_t)idx * r->sqe_size;
		}
		struct ureq *q = exec_req_get_locked(r);
		if (!q) {
			if (has_carry) {
				/* no memory to go on with it: its short count is its
				 * result, or -ENOMEM when nothing was done */
				emu_post(r, carry[ci].sqe.user_data,
					 carry[ci].done ? (int32_t)carry[ci].done : -ENOMEM, 0, 0);
				r->ncompleted++;
				has_carry = ++ci < ncarry;
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
		exec_ud_hash_add(q);
		q->prep_err = prep(r, q);
		if (has_carry) {
			/* the rest of a short fast-path transfer (op_rw adds done to the
			 * offset), or one it took and did not do, run from its copy */
			uint32_t cd = carry[ci].done;
			has_carry = ++ci < ncarry;
			if (cd && exec_rw_carry(q, cd) < 0) {
				/* its array is gone, or no memory: its short count is its result */
				emu_post(r, q->sqe.user_data, (int32_t)cd, 0, 0);
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
			if (!q->prep_err)
				q->prep_err = stable(r, q);    /* it runs later */
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
	exec_in_submit = 1;
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
	exec_in_submit = 0;
	kaio_flush(r);
	return done;
}
