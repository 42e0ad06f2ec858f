/* SPDX-License-Identifier: MIT */
/*
 * api.c - liburing's exported functions (liburing.so.2, LIBURING_2.0..2.3),
 * written to liburing's man pages and the kernel's <linux/io_uring.h>.
 *
 * Every function works on both kinds of ring: ring_enter()/ring_register()
 * send a call to the emulated ring when the ring fd is one of ours
 * (emu_find), else straight to the kernel as a raw system call. So the
 * pass-through costs one table lookup per call and nothing else.
 *
 * Must never: touch a kernel ring's memory other than as liburing.h's inline
 * helpers do (heads, tails, flags, array), leave errno as the only error
 * report (all return -errno), or reach the kernel for an emulated ring fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "uring_int.h"

#define INT_FLAG_REG_RING 1u
#define SIGSZ (_NSIG / 8)

static int sys_setup(unsigned entries, struct io_uring_params *p)
{
	long r = syscall(__NR_io_uring_setup, entries, p);
	return r < 0 ? -errno : (int)r;
}

static int sys_enter(unsigned fd, unsigned sub, unsigned min, unsigned flags, const void *arg, size_t sz)
{
	long r = syscall(__NR_io_uring_enter, fd, sub, min, flags, arg, sz);
	return r < 0 ? -errno : (int)r;
}

static int sys_register(unsigned fd, unsigned op, const void *arg, unsigned nr)
{
	long r = syscall(__NR_io_uring_register, fd, op, arg, nr);
	return r < 0 ? -errno : (int)r;
}

/* ---- the four system calls liburing 2.3 exports ---- */

EXPORT int io_uring_setup(unsigned entries, struct io_uring_params *p)
{
	if (emu_forced() || emu_front_on)   /* the front's filter would trap the system call */
		return emu_setup(entries, p);
	int r = sys_setup(entries, p);
	if (r == -EPERM || r == -ENOSYS || r == -EACCES)
		return emu_setup(entries, p);
	return r;
}

/* The kernel refused fd: a dup() of an emulated ring's fd? (emu_alias) */
static struct emu_ring *alias_after(int fd, int err)
{
	if (err != -EPERM && err != -ENOSYS && err != -EACCES && err != -EOPNOTSUPP)
		return NULL;
	return emu_alias(fd);
}

EXPORT int io_uring_enter2(unsigned fd, unsigned to_submit, unsigned min_complete, unsigned flags,
			   sigset_t *sig, size_t sz)
{
	struct emu_ring *r = (flags & IORING_ENTER_REGISTERED_RING) ? NULL : emu_find((int)fd);
	if (r)
		return emu_enter(r, to_submit, min_complete, flags, sig, sz);
	int ret = sys_enter(fd, to_submit, min_complete, flags, sig, sz);
	if (ret < 0 && !(flags & IORING_ENTER_REGISTERED_RING) && (r = alias_after((int)fd, ret)))
		return emu_enter(r, to_submit, min_complete, flags, sig, sz);
	return ret;
}

EXPORT int io_uring_enter(unsigned fd, unsigned to_submit, unsigned min_complete, unsigned flags, sigset_t *sig)
{
	return io_uring_enter2(fd, to_submit, min_complete, flags, sig, SIGSZ);
}

EXPORT int io_uring_register(unsigned fd, unsigned op, const void *arg, unsigned nr)
{
	struct emu_ring *r = emu_find((int)fd);
	if (r)
		return emu_register(r, op, (void *)arg, nr);
	int ret = sys_register(fd, op, arg, nr);
	if (ret < 0 && (r = alias_after((int)fd, ret)))
		return emu_register(r, op, (void *)arg, nr);
	return ret;
}

static int ring_enter(struct io_uring *ring, unsigned sub, unsigned min, unsigned flags, const void *arg, size_t sz)
{
	struct emu_ring *r = emu_find(ring->ring_fd);
	if (r)
		return emu_enter(r, sub, min, flags, arg, sz);
	if (ring->int_flags & INT_FLAG_REG_RING)
		return sys_enter((unsigned)ring->enter_ring_fd, sub, min, flags | IORING_ENTER_REGISTERED_RING, arg, sz);
	int ret = sys_enter((unsigned)ring->ring_fd, sub, min, flags, arg, sz);
	if (ret < 0 && (r = alias_after(ring->ring_fd, ret)))
		return emu_enter(r, sub, min, flags, arg, sz);
	return ret;
}

static int ring_register(struct io_uring *ring, unsigned op, const void *arg, unsigned nr)
{
	return io_uring_register((unsigned)ring->ring_fd, op, arg, nr);
}

/* ---- setup and teardown ---- */

static void unmap_rings(struct io_uring *ring)
{
	if (ring->sq.ring_ptr && ring->sq.ring_ptr != MAP_FAILED)
		munmap(ring->sq.ring_ptr, ring->sq.ring_sz);
	if (ring->cq.ring_ptr && ring->cq.ring_ptr != MAP_FAILED && ring->cq.ring_ptr != ring->sq.ring_ptr)
		munmap(ring->cq.ring_ptr, ring->cq.ring_sz);
	if (ring->sq.sqes && ring->sq.sqes != MAP_FAILED) {
		size_t sqe_sz = (ring->flags & IORING_SETUP_SQE128) ? 128 : 64;
		munmap(ring->sq.sqes, sqe_sz * ring->sq.ring_entries);
	}
}

/* Fill ring's pointers from the two ring mappings and the SQE array (used
 * for both kinds of ring: the offsets come from the params). */
void api_fill_ring(struct io_uring *ring, const struct io_uring_params *p, void *sqr, void *cqr,
		   size_t sq_sz, size_t cq_sz, void *sqes);
void api_fill_ring(struct io_uring *ring, const struct io_uring_params *p, void *sqr, void *cqr,
		   size_t sq_sz, size_t cq_sz, void *sqes)
{
	char *s = sqr, *c = cqr;
	ring->sq.ring_ptr = sqr;
	ring->sq.ring_sz = sq_sz;
	ring->cq.ring_ptr = cqr;
	ring->cq.ring_sz = cq_sz;
	ring->sq.khead = (unsigned *)(s + p->sq_off.head);
	ring->sq.ktail = (unsigned *)(s + p->sq_off.tail);
	ring->sq.kring_mask = (unsigned *)(s + p->sq_off.ring_mask);
	ring->sq.kring_entries = (unsigned *)(s + p->sq_off.ring_entries);
	ring->sq.kflags = (unsigned *)(s + p->sq_off.flags);
	ring->sq.kdropped = (unsigned *)(s + p->sq_off.dropped);
	ring->sq.array = (unsigned *)(s + p->sq_off.array);
	ring->sq.sqes = sqes;
	ring->sq.ring_mask = *ring->sq.kring_mask;
	ring->sq.ring_entries = *ring->sq.kring_entries;
	ring->cq.khead = (unsigned *)(c + p->cq_off.head);
	ring->cq.ktail = (unsigned *)(c + p->cq_off.tail);
	ring->cq.kring_mask = (unsigned *)(c + p->cq_off.ring_mask);
	ring->cq.kring_entries = (unsigned *)(c + p->cq_off.ring_entries);
	ring->cq.koverflow = (unsigned *)(c + p->cq_off.overflow);
	ring->cq.cqes = (struct io_uring_cqe *)(c + p->cq_off.cqes);
	ring->cq.kflags = p->cq_off.flags ? (unsigned *)(c + p->cq_off.flags) : NULL;
	ring->cq.ring_mask = *ring->cq.kring_mask;
	ring->cq.ring_entries = *ring->cq.kring_entries;
	/* SQ slot i always names SQE i: get_sqe hands out SQEs in order. */
	for (unsigned i = 0; i < ring->sq.ring_entries; i++)
		ring->sq.array[i] = i;
}

EXPORT int io_uring_queue_mmap(int fd, struct io_uring_params *p, struct io_uring *ring)
{
	memset(ring, 0, sizeof(*ring));
	ring->flags = p->flags;
	ring->ring_fd = ring->enter_ring_fd = fd;
	ring->features = p->features;
	struct emu_ring *r = emu_find(fd);
	if (r)
		return emu_mmap(r, p, ring);

	size_t cqe_sz = (p->flags & IORING_SETUP_CQE32) ? 32 : 16;
	size_t sqe_sz = (p->flags & IORING_SETUP_SQE128) ? 128 : 64;
	size_t sq_sz = p->sq_off.array + p->sq_entries * sizeof(unsigned);
	size_t cq_sz = p->cq_off.cqes + p->cq_entries * cqe_sz;
	if (p->features & IORING_FEAT_SINGLE_MMAP) {
		if (cq_sz > sq_sz)
			sq_sz = cq_sz;
		cq_sz = sq_sz;
	}
	void *sqr = mmap(NULL, sq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
	if (sqr == MAP_FAILED)
		return -errno;
	void *cqr = sqr;
	if (!(p->features & IORING_FEAT_SINGLE_MMAP)) {
		cqr = mmap(NULL, cq_sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_CQ_RING);
		if (cqr == MAP_FAILED) {
			int e = -errno;
			munmap(sqr, sq_sz);
			return e;
		}
	}
	void *sqes = mmap(NULL, sqe_sz * p->sq_entries, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			  fd, IORING_OFF_SQES);
	if (sqes == MAP_FAILED) {
		int e = -errno;
		munmap(sqr, sq_sz);
		if (cqr != sqr)
			munmap(cqr, cq_sz);
		return e;
	}
	api_fill_ring(ring, p, sqr, cqr, sq_sz, cq_sz, sqes);
	return 0;
}

EXPORT int io_uring_queue_init_params(unsigned entries, struct io_uring *ring, struct io_uring_params *p)
{
	int fd = io_uring_setup(entries, p);
	if (fd < 0)
		return fd;
	int r = io_uring_queue_mmap(fd, p, ring);
	if (r < 0) {
		struct emu_ring *e = emu_find(fd);
		if (e)
			emu_close(e);
		else
			close(fd);
		return r;
	}
	ring->features = p->features;
	return 0;
}

EXPORT int io_uring_queue_init(unsigned entries, struct io_uring *ring, unsigned flags)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	return io_uring_queue_init_params(entries, ring, &p);
}

EXPORT void io_uring_queue_exit(struct io_uring *ring)
{
	struct emu_ring *r = emu_find(ring->ring_fd);
	if (!r && fcntl(ring->ring_fd, F_GETFD) >= 0)
		r = emu_alias(ring->ring_fd);       /* a dup() of an emulated ring's fd */
	if (r) {
		int own = r->fd;
		emu_close(r);
		if (ring->ring_fd != own)
			close(ring->ring_fd);           /* the dup the program handed us */
		return;
	}
	unmap_rings(ring);
	if (ring->int_flags & INT_FLAG_REG_RING)
		io_uring_unregister_ring_fd(ring);
	close(ring->ring_fd);
}

EXPORT int io_uring_ring_dontfork(struct io_uring *ring)
{
	if (!ring->sq.ring_ptr || !ring->sq.sqes || !ring->cq.ring_ptr)
		return -EINVAL;
	size_t sqe_sz = (ring->flags & IORING_SETUP_SQE128) ? 128 : 64;
	if (madvise(ring->sq.sqes, sqe_sz * ring->sq.ring_entries, MADV_DONTFORK) < 0)
		return -errno;
	if (madvise(ring->sq.ring_ptr, ring->sq.ring_sz, MADV_DONTFORK) < 0)
		return -errno;
	if (ring->cq.ring_ptr != ring->sq.ring_ptr && madvise(ring->cq.ring_ptr, ring->cq.ring_sz, MADV_DONTFORK) < 0)
		return -errno;
	return 0;
}

EXPORT ssize_t io_uring_mlock_size_params(unsigned entries, struct io_uring_params *p)
{
	struct io_uring_params lp;
	struct io_uring ring;
	memset(&lp, 0, sizeof(lp));
	/* Rings of kernels with native workers are not charged to RLIMIT_MEMLOCK. */
	if (io_uring_queue_init_params(4, &ring, &lp) == 0) {
		io_uring_queue_exit(&ring);
		if (lp.features & IORING_FEAT_NATIVE_WORKERS)
			return 0;
	}
	if (!entries || entries > EMU_MAX_ENTRIES) {
		if (!(p->flags & IORING_SETUP_CLAMP) || !entries)
			return -EINVAL;
		entries = EMU_MAX_ENTRIES;
	}
	unsigned sq = 1;
	while (sq < entries)
		sq <<= 1;
	unsigned cq = 2 * sq;
	if (p->flags & IORING_SETUP_CQSIZE) {
		if (!p->cq_entries)
			return -EINVAL;
		cq = 1;
		while (cq < p->cq_entries)
			cq <<= 1;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t cqe = (p->flags & IORING_SETUP_CQE32) ? 32 : 16, sqe = (p->flags & IORING_SETUP_SQE128) ? 128 : 64;
	size_t rings = 256 + cq * cqe + sq * sizeof(unsigned);
	rings = (rings + page - 1) / page * page;
	size_t sqes = (sq * sqe + page - 1) / page * page;
	return (ssize_t)(rings + sqes);
}

EXPORT ssize_t io_uring_mlock_size(unsigned entries, unsigned flags)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	return io_uring_mlock_size_params(entries, &p);
}

/* ---- submission ---- */

/* Publish the SQEs handed out by get_sqe; returns how many wait in the SQ. */
static unsigned flush_sq(struct io_uring *ring)
{
	struct io_uring_sq *sq = &ring->sq;
	unsigned tail = sq->sqe_tail;
	if (sq->sqe_head != tail) {
		sq->sqe_head = tail;
		io_uring_smp_store_release(sq->ktail, tail);
	}
	return tail - io_uring_smp_load_acquire(sq->khead);
}

/* Does submitting need io_uring_enter? With SQPOLL only to wake the poller. */
static int sq_needs_enter(struct io_uring *ring, unsigned submit, unsigned *flags)
{
	if (!submit)
		return 0;
	if (!(ring->flags & IORING_SETUP_SQPOLL))
		return 1;
	io_uring_smp_mb();
	if (IO_URING_READ_ONCE(*ring->sq.kflags) & IORING_SQ_NEED_WAKEUP) {
		*flags |= IORING_ENTER_SQ_WAKEUP;
		return 1;
	}
	return 0;
}

static int cq_needs_flush(struct io_uring *ring)
{
	return IO_URING_READ_ONCE(*ring->sq.kflags) & (IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN);
}

static int cq_needs_enter(struct io_uring *ring)
{
	return (ring->flags & IORING_SETUP_IOPOLL) || cq_needs_flush(ring);
}

static int do_submit(struct io_uring *ring, unsigned submitted, unsigned wait_nr, int getevents)
{
	unsigned flags = 0;
	int cq = getevents || wait_nr || cq_needs_enter(ring);
	if (sq_needs_enter(ring, submitted, &flags) || cq) {
		if (cq)
			flags |= IORING_ENTER_GETEVENTS;
		return ring_enter(ring, submitted, wait_nr, flags, NULL, SIGSZ);
	}
	return (int)submitted;
}

EXPORT int io_uring_submit(struct io_uring *ring)
{
	return do_submit(ring, flush_sq(ring), 0, 0);
}

EXPORT int io_uring_submit_and_wait(struct io_uring *ring, unsigned wait_nr)
{
	return do_submit(ring, flush_sq(ring), wait_nr, 0);
}

EXPORT int io_uring_submit_and_get_events(struct io_uring *ring)
{
	return do_submit(ring, flush_sq(ring), 0, 1);
}

EXPORT int io_uring_get_events(struct io_uring *ring)
{
	return ring_enter(ring, 0, 0, IORING_ENTER_GETEVENTS, NULL, SIGSZ);
}

EXPORT struct io_uring_sqe *io_uring_get_sqe(struct io_uring *ring)
{
	return _io_uring_get_sqe(ring);
}

EXPORT int __io_uring_sqring_wait(struct io_uring *ring)
{
	return ring_enter(ring, 0, 0, IORING_ENTER_SQ_WAIT, NULL, SIGSZ);
}

/* ---- completions ---- */

struct getcqe {
	unsigned submit, wait_nr, flags;
	const void *arg;
	size_t sz;
	int has_ts;
};

/* An emulated ring with multishots armed: run those woken before the CQ is
 * looked at (emu_mshot_run), as the kernel's task work would have run. */
static void mshot_run(struct io_uring *ring)
{
	struct emu_ring *r = emu_find(ring->ring_fd);
	if (r && __atomic_load_n(&r->ms_armed, __ATOMIC_RELAXED))
		emu_mshot_run(r);
}

/*
 * The one loop behind every wait: peek; if the CQE (or wait_nr of them) is
 * not there, or SQEs are to be submitted, or overflowed CQEs must be flushed,
 * enter (with GETEVENTS when waiting); repeat until a CQE, an error, or the
 * one timed wait has passed.
 */
static int get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, struct getcqe *d)
{
	int waited = 0;
	mshot_run(ring);
	for (;;) {
		struct io_uring_cqe *cqe = NULL;
		unsigned avail = 0;
		int err = __io_uring_peek_cqe(ring, &cqe, &avail);
		*cqe_ptr = cqe;
		if (err)
			return err;
		int need_wait = d->wait_nr > avail, flush = cq_needs_flush(ring);
		if (cqe && !d->submit && !need_wait)
			return 0;
		if (!cqe && !d->wait_nr && !d->submit && !flush)
			return waited && d->has_ts ? -ETIME : -EAGAIN;
		if (waited && d->has_ts && !d->submit)
			return cqe ? 0 : -ETIME;
		unsigned flags = d->flags;
		if (need_wait || flush || !cqe)
			flags |= IORING_ENTER_GETEVENTS;
		if (d->submit)
			sq_needs_enter(ring, d->submit, &flags);
		int r = ring_enter(ring, d->submit, d->wait_nr, flags, d->arg, d->sz);
		if (r < 0)
			return r;
		d->submit -= (unsigned)r < d->submit ? (unsigned)r : d->submit;
		waited = 1;
		if (cqe)
			return 0;
		if (!d->wait_nr && !d->submit) {
			err = __io_uring_peek_cqe(ring, &cqe, NULL);
			*cqe_ptr = cqe;
			return err ? err : (cqe ? 0 : -EAGAIN);
		}
	}
}

EXPORT int __io_uring_get_cqe(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned submit,
			      unsigned wait_nr, sigset_t *sigmask)
{
	struct getcqe d = { submit, wait_nr, 0, sigmask, SIGSZ, 0 };
	return get_cqe(ring, cqe_ptr, &d);
}

/* Kernels without EXT_ARG: a TIMEOUT SQE with LIBURING_UDATA_TIMEOUT ends the wait. */
static int add_timeout_sqe(struct io_uring *ring, unsigned wait_nr, struct __kernel_timespec *ts, unsigned *to_submit)
{
	struct io_uring_sqe *sqe = _io_uring_get_sqe(ring);
	if (!sqe) {
		int r = io_uring_submit(ring);
		if (r < 0)
			return r;
		sqe = _io_uring_get_sqe(ring);
		if (!sqe)
			return -EAGAIN;
	}
	io_uring_prep_timeout(sqe, ts, wait_nr, 0);
	sqe->user_data = LIBURING_UDATA_TIMEOUT;
	*to_submit = flush_sq(ring);
	return 0;
}

EXPORT int io_uring_wait_cqes(struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned wait_nr,
			      struct __kernel_timespec *ts, sigset_t *sigmask)
{
	unsigned to_submit = 0;
	if (ts) {
		if (ring->features & IORING_FEAT_EXT_ARG) {
			struct io_uring_getevents_arg arg = {
				.sigmask = (uint64_t)(uintptr_t)sigmask, .sigmask_sz = SIGSZ,
				.ts = (uint64_t)(uintptr_t)ts,
			};
			struct getcqe d = { 0, wait_nr, IORING_ENTER_EXT_ARG, &arg, sizeof(arg), 1 };
			return get_cqe(ring, cqe_ptr, &d);
		}
		int r = add_timeout_sqe(ring, wait_nr, ts, &to_submit);
		if (r < 0)
			return r;
	}
	return __io_uring_get_cqe(ring, cqe_ptr, to_submit, wait_nr, sigmask);
}

EXPORT int io_uring_wait_cqe_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
				     struct __kernel_timespec *ts)
{
	return io_uring_wait_cqes(ring, cqe_ptr, 1, ts, NULL);
}

EXPORT int io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
					    unsigned wait_nr, struct __kernel_timespec *ts, sigset_t *sigmask)
{
	unsigned to_submit;
	int r;
	if (ts && (ring->features & IORING_FEAT_EXT_ARG)) {
		struct io_uring_getevents_arg arg = {
			.sigmask = (uint64_t)(uintptr_t)sigmask, .sigmask_sz = SIGSZ,
			.ts = (uint64_t)(uintptr_t)ts,
		};
		to_submit = flush_sq(ring);
		struct getcqe d = { to_submit, wait_nr, IORING_ENTER_EXT_ARG, &arg, sizeof(arg), 1 };
		r = get_cqe(ring, cqe_ptr, &d);
	} else {
		to_submit = 0;
		if (ts) {
			r = add_timeout_sqe(ring, wait_nr, ts, &to_submit);
			if (r < 0)
				return r;
		} else {
			to_submit = flush_sq(ring);
		}
		r = __io_uring_get_cqe(ring, cqe_ptr, to_submit, wait_nr, sigmask);
	}
	return r < 0 ? r : (int)to_submit;
}

EXPORT unsigned io_uring_peek_batch_cqe(struct io_uring *ring, struct io_uring_cqe **cqes, unsigned count)
{
	int shift = (ring->flags & IORING_SETUP_CQE32) ? 1 : 0;
	mshot_run(ring);
	for (int pass = 0; pass < 2; pass++) {
		unsigned ready = io_uring_cq_ready(ring);
		if (ready) {
			unsigned head = *ring->cq.khead, mask = ring->cq.ring_mask;
			if (count > ready)
				count = ready;
			for (unsigned i = 0; i < count; i++)
				cqes[i] = &ring->cq.cqes[((head + i) & mask) << shift];
			return count;
		}
		if (pass || !cq_needs_flush(ring))
			break;
		ring_enter(ring, 0, 0, IORING_ENTER_GETEVENTS, NULL, SIGSZ);
	}
	return 0;
}

/* ---- probe ---- */

EXPORT struct io_uring_probe *io_uring_get_probe_ring(struct io_uring *ring)
{
	size_t sz = sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op);
	struct io_uring_probe *p = calloc(1, sz);
	if (!p)
		return NULL;
	if (ring_register(ring, IORING_REGISTER_PROBE, p, 256) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

EXPORT struct io_uring_probe *io_uring_get_probe(void)
{
	struct io_uring ring;
	if (io_uring_queue_init(2, &ring, 0) < 0)
		return NULL;
	struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
	io_uring_queue_exit(&ring);
	return p;
}

EXPORT void io_uring_free_probe(struct io_uring_probe *probe)
{
	free(probe);
}

/* ---- registration ---- */

static int zero_or_err(int r)
{
	return r < 0 ? r : 0;
}

EXPORT int io_uring_register_buffers(struct io_uring *ring, const struct iovec *iov, unsigned nr)
{
	return zero_or_err(ring_register(ring, IORING_REGISTER_BUFFERS, iov, nr));
}

EXPORT int io_uring_register_buffers_tags(struct io_uring *ring, const struct iovec *iov, const __u64 *tags,
					  unsigned nr)
{
	struct io_uring_rsrc_register reg = {
		.nr = nr, .data = (uint64_t)(uintptr_t)iov, .tags = (uint64_t)(uintptr_t)tags,
	};
	return zero_or_err(ring_register(ring, IORING_REGISTER_BUFFERS2, &reg, sizeof(reg)));
}

EXPORT int io_uring_register_buffers_sparse(struct io_uring *ring, unsigned nr)
{
	struct io_uring_rsrc_register reg = { .nr = nr, .flags = IORING_RSRC_REGISTER_SPARSE };
	return zero_or_err(ring_register(ring, IORING_REGISTER_BUFFERS2, &reg, sizeof(reg)));
}

EXPORT int io_uring_register_buffers_update_tag(struct io_uring *ring, unsigned off, const struct iovec *iov,
						const __u64 *tags, unsigned nr)
{
	struct io_uring_rsrc_update2 up = {
		.offset = off, .data = (uint64_t)(uintptr_t)iov, .tags = (uint64_t)(uintptr_t)tags, .nr = nr,
	};
	return ring_register(ring, IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up));
}

EXPORT int io_uring_unregister_buffers(struct io_uring *ring)
{
	return zero_or_err(ring_register(ring, IORING_UNREGISTER_BUFFERS, NULL, 0));
}

/* Registering many files may need a higher RLIMIT_NOFILE (the kernel checks it). */
static int register_files_retry(struct io_uring *ring, unsigned op, const void *arg, unsigned nr, unsigned nfiles)
{
	int r = ring_register(ring, op, arg, nr);
	if (r == -EMFILE) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur += nfiles;
			if (rl.rlim_cur > rl.rlim_max)
				rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
				r = ring_register(ring, op, arg, nr);
		}
	}
	return zero_or_err(r);
}

EXPORT int io_uring_register_files(struct io_uring *ring, const int *files, unsigned nr)
{
	return register_files_retry(ring, IORING_REGISTER_FILES, files, nr, nr);
}

EXPORT int io_uring_register_files_tags(struct io_uring *ring, const int *files, const __u64 *tags, unsigned nr)
{
	struct io_uring_rsrc_register reg = {
		.nr = nr, .data = (uint64_t)(uintptr_t)files, .tags = (uint64_t)(uintptr_t)tags,
	};
	return register_files_retry(ring, IORING_REGISTER_FILES2, &reg, sizeof(reg), nr);
}

EXPORT int io_uring_register_files_sparse(struct io_uring *ring, unsigned nr)
{
	struct io_uring_rsrc_register reg = { .nr = nr, .flags = IORING_RSRC_REGISTER_SPARSE };
	return register_files_retry(ring, IORING_REGISTER_FILES2, &reg, sizeof(reg), nr);
}

EXPORT int io_uring_register_files_update_tag(struct io_uring *ring, unsigned off, const int *files,
					      const __u64 *tags, unsigned nr)
{
	struct io_uring_rsrc_update2 up = {
		.offset = off, .data = (uint64_t)(uintptr_t)files, .tags = (uint64_t)(uintptr_t)tags, .nr = nr,
	};
	return ring_register(ring, IORING_REGISTER_FILES_UPDATE2, &up, sizeof(up));
}

EXPORT int io_uring_register_files_update(struct io_uring *ring, unsigned off, const int *files, unsigned nr)
{
	struct io_uring_files_update up = { .offset = off, .fds = (uint64_t)(uintptr_t)files };
	return ring_register(ring, IORING_REGISTER_FILES_UPDATE, &up, nr);
}

EXPORT int io_uring_unregister_files(struct io_uring *ring)
{
	return zero_or_err(ring_register(ring, IORING_UNREGISTER_FILES, NULL, 0));
}

EXPORT int io_uring_register_eventfd(struct io_uring *ring, int fd)
{
	return zero_or_err(ring_register(ring, IORING_REGISTER_EVENTFD, &fd, 1));
}

EXPORT int io_uring_register_eventfd_async(struct io_uring *ring, int fd)
{
	return zero_or_err(ring_register(ring, IORING_REGISTER_EVENTFD_ASYNC, &fd, 1));
}

EXPORT int io_uring_unregister_eventfd(struct io_uring *ring)
{
	return zero_or_err(ring_register(ring, IORING_UNREGISTER_EVENTFD, NULL, 0));
}

EXPORT int io_uring_register_probe(struct io_uring *ring, struct io_uring_probe *p, unsigned nr)
{
	return zero_or_err(ring_register(ring, IORING_REGISTER_PROBE, p, nr));
}

EXPORT int io_uring_register_personality(struct io_uring *ring)
{
	return ring_register(ring, IORING_REGISTER_PERSONALITY, NULL, 0);
}

EXPORT int io_uring_unregister_personality(struct io_uring *ring, int id)
{
	return ring_register(ring, IORING_UNREGISTER_PERSONALITY, NULL, (unsigned)id);
}

EXPORT int io_uring_register_iowq_aff(struct io_uring *ring, size_t cpusz, const cpu_set_t *mask)
{
	if (cpusz >= (1u << 31))
		return -EINVAL;
	return zero_or_err(ring_register(ring, IORING_REGISTER_IOWQ_AFF, mask, (unsigned)cpusz));
}

EXPORT int io_uring_unregister_iowq_aff(struct io_uring *ring)
{
	return zero_or_err(ring_register(ring, IORING_UNREGISTER_IOWQ_AFF, NULL, 0));
}

EXPORT int io_uring_register_iowq_max_workers(struct io_uring *ring, unsigned *values)
{
	return zero_or_err(ring_register(ring, IORING_REGISTER_IOWQ_MAX_WORKERS, values, 2));
}

EXPORT int io_uring_register_ring_fd(struct io_uring *ring)
{
	if (ring->int_flags & INT_FLAG_REG_RING)
		return -EEXIST;
	if (emu_find(ring->ring_fd)) {
		/* An emulated ring is entered by its fd anyway: nothing to save. */
		ring->int_flags |= INT_FLAG_REG_RING;
		return 1;
	}
	struct io_uring_rsrc_update up = { .offset = -1U, .data = (uint64_t)ring->ring_fd };
	int r = ring_register(ring, IORING_REGISTER_RING_FDS, &up, 1);
	if (r == 1) {
		ring->enter_ring_fd = (int)up.offset;
		ring->int_flags |= INT_FLAG_REG_RING;
	}
	return r;
}

EXPORT int io_uring_unregister_ring_fd(struct io_uring *ring)
{
	if (!(ring->int_flags & INT_FLAG_REG_RING))
		return -EINVAL;
	if (emu_find(ring->ring_fd)) {
		ring->int_flags &= (__u8)~INT_FLAG_REG_RING;
		return 1;
	}
	struct io_uring_rsrc_update up = { .offset = (unsigned)ring->enter_ring_fd };
	int r = ring_register(ring, IORING_UNREGISTER_RING_FDS, &up, 1);
	if (r == 1) {
		ring->enter_ring_fd = ring->ring_fd;
		ring->int_flags &= (__u8)~INT_FLAG_REG_RING;
	}
	return r;
}

EXPORT int io_uring_register_buf_ring(struct io_uring *ring, struct io_uring_buf_reg *reg, unsigned flags)
{
	(void)flags;
	return zero_or_err(ring_register(ring, IORING_REGISTER_PBUF_RING, reg, 1));
}

EXPORT int io_uring_unregister_buf_ring(struct io_uring *ring, int bgid)
{
	struct io_uring_buf_reg reg = { .bgid = (uint16_t)bgid };
	return zero_or_err(ring_register(ring, IORING_UNREGISTER_PBUF_RING, &reg, 1));
}

EXPORT int io_uring_register_sync_cancel(struct io_uring *ring, struct io_uring_sync_cancel_reg *reg)
{
	return ring_register(ring, IORING_REGISTER_SYNC_CANCEL, reg, 1);
}

EXPORT int io_uring_register_file_alloc_range(struct io_uring *ring, unsigned off, unsigned len)
{
	struct io_uring_file_index_range range = { .off = off, .len = len };
	return ring_register(ring, IORING_REGISTER_FILE_ALLOC_RANGE, &range, 0);
}
