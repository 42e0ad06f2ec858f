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
	ssize_t n = exec_sys_rw(op == IORING_OP_WRITE || op == IORING_OP_WRITEV, s->fd, iov, niov, (int64_t)s->off,
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
	return n == 0 || (uint64_t)n >= (vec ? exec_iov_total(iov, niov) : s->len) ? 1 : 2;
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
	exec_in_submit = 1;
	unsigned done = fast_submit(r, n, &head, &carry, &carry_done);
	exec_in_submit = 0;
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
		struct ureq *q = exec_req_get_locked(r);
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
		exec_ud_hash_add(q);
		q->prep_err = prep(r, q);
		if (has_carry) {
			/* the rest of a short fast-path transfer (op_rw adds done to the offset) */
			has_carry = 0;
			if (exec_rw_carry(q, carry_done) < 0) {
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
