/* SPDX-License-Identifier: MIT */
/*
 * chan_ur.c - the channel engine over this project's rings (urfs_*), on a
 * file inside a SimpleFS image. All channels of this process on one image
 * share one context: one ring (a client of the image's simplefs_server,
 * which other processes may share), one mutex that serializes their calls,
 * one set of registered buffers. Byte-range locks are the server's
 * (UR_OP_LOCK, owned by the channel's handle), so channels of this and of
 * other processes contend; an exclusive context (URCH_EXCL: no other
 * client) keeps them in the process instead, without round trips. A
 * blocking server lock waits without the mutex: its CQE comes whenever the
 * server grants it, whoever reaps it records it for its waiter and wakes
 * it. The context lives while a channel uses it.
 * Must never: use the ring without the context's mutex, hand a lock's CQE to
 * anyone but its waiter, hold the mutex while a lock waits, or leave SQEs
 * unsubmitted or CQEs unreaped when a call returns (but a waiting lock's).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "chan_int.h"
#include "ur_fs.h"

#define UR_DEF_REG     (16u << 20)
#define UR_DEF_STAGING (8u << 20)

/* A lock of an exclusive context (URCH_EXCL), kept in the process. */
struct urlock {
	const struct urch *owner;
	char name[64];
	uint64_t start, end;       /* [start, end) */
	int shared;
};

/* A blocking lock in flight: its CQE's user_data is tag (bit 63 set, which
 * op ids never have); efd wakes its thread. */
#define LKW_TAG (1ull << 63)
struct lkwait {
	struct lkwait *next;
	uint64_t tag;
	int efd;
	int done, res;
};

struct urctx {
	struct urctx *next;
	char key[PATH_MAX];
	int refs;
	pthread_mutex_t mu;        /* the ring */
	struct urfs_ring ring;
	const struct urch *reg_by; /* who registered the region's buffers */
	pid_t pid;                 /* the process whose ring it is (a forked child makes its own) */
	int excl;                  /* URCH_EXCL: the server's only client */
	struct lkwait *waits;      /* blocking locks in flight (mu) */
	uint64_t nwait;
	/* Exclusive context: no other client can take a lock, so the locks
	 * among this process's channels are kept here (no round trip). */
	pthread_mutex_t lkmu;
	pthread_cond_t lkcv;
	struct urlock *locks;
	size_t nlocks, caplocks;
};

static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static struct urctx *ctxs;

static struct urctx *ctx_of(const struct urch *ch)
{
	return ch->priv;
}

static int ctx_get(const char *image, unsigned flags, const struct urch_opts *o, struct urctx **out)
{
	char key[PATH_MAX];
	if (!realpath(image, key)) {
		if (strlen(image) >= sizeof(key))
			return -ENAMETOOLONG;
		strcpy(key, image);
	}
	pthread_mutex_lock(&ctx_mu);
	for (struct urctx *c = ctxs; c; c = c->next)
		if (!strcmp(c->key, key) && c->pid == getpid() && (c->excl || !(flags & URCH_EXCL))) {
			c->refs++;
			pthread_mutex_unlock(&ctx_mu);
			*out = c;
			return 0;
		}
	struct urctx *c = calloc(1, sizeof(*c));
	if (!c) {
		pthread_mutex_unlock(&ctx_mu);
		return -ENOMEM;
	}
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = image;
	if (flags & URCH_CREATE)
		p.flags |= URFS_SETUP_CREATE;
	if (flags & URCH_DIRECT)
		p.flags |= URFS_SETUP_DIRECT;
	if (flags & URCH_EXCL)
		p.flags |= URFS_SETUP_EXCL;     /* (a second ring of ours is refused too) */
	p.staging_size = o->staging ? o->staging : UR_DEF_STAGING;
	p.buf_area_size = o->reg_area ? o->reg_area : UR_DEF_REG;
	int r = urfs_queue_init_params(o->ring_entries, &c->ring, &p);
	if (r < 0) {
		pthread_mutex_unlock(&ctx_mu);
		free(c);
		return r;
	}
	if (!realpath(image, c->key))
		strcpy(c->key, key);
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->lkmu, NULL);
	pthread_cond_init(&c->lkcv, NULL);
	c->refs = 1;
	c->pid = getpid();
	c->excl = !!(flags & URCH_EXCL);
	c->next = ctxs;
	ctxs = c;
	pthread_mutex_unlock(&ctx_mu);
	*out = c;
	return 0;
}

static void ctx_put(struct urctx *c)
{
	pthread_mutex_lock(&ctx_mu);
	if (--c->refs > 0) {
		pthread_mutex_unlock(&ctx_mu);
		return;
	}
	for (struct urctx **pp = &ctxs; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&ctx_mu);
	if (c->reg_by)
		urfs_unregister_buffers(&c->ring);
	urfs_queue_exit(&c->ring);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->lkmu);
	pthread_cond_destroy(&c->lkcv);
	free(c->locks);
	free(c);
}

static struct urctx *ctx_of_ring(struct urfs_ring *ring)
{
	return (struct urctx *)((char *)ring - offsetof(struct urctx, ring));
}

static void wake(int efd)
{
	uint64_t one = 1;
	if (write(efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: saturated, it wakes anyway */
	}
}

/* A CQE of a blocking lock (mu held): recorded for its waiter, who is woken. 1 if it was one. */
static int divert(struct urctx *c, uint64_t ud, int res)
{
	if (!(ud & LKW_TAG))
		return 0;
	for (struct lkwait *w = c->waits; w; w = w->next)
		if (w->tag == ud) {
			w->done = 1;
			w->res = res;
			wake(w->efd);
		}
	return 1;
}

/* Release the ring (mu held, not by a sleeping waiter): the waiters wake to
 * re-arm their sleep, as this thread may have taken their doorbell. */
static void ctx_unlock(struct urctx *c)
{
	for (struct lkwait *w = c->waits; w; w = w->next)
		wake(w->efd);
	pthread_mutex_unlock(&c->mu);
}

/* One request, synchronously (ring mutex held): its cqe->res. A blocking
 * lock's CQE that comes first goes to its waiter. */
static int sync_sqe(struct urfs_ring *ring)
{
	struct urctx *c = ctx_of_ring(ring);
	struct urfs_cqe *cqe;
	int r = urfs_submit(ring);
	if (r < 0)
		return r;
	for (;;) {
		r = urfs_wait_cqe(ring, &cqe);
		if (r < 0)
			return r;
		uint64_t ud = cqe->user_data;
		r = cqe->res;
		urfs_cqe_seen(ring, cqe);
		if (!divert(c, ud, r))
			return r;
	}
}

/* An SQE of the image's ring, or NULL with *err: -EPIPE once the server is
 * gone (its SQEs are never consumed again), else -EBUSY. */
static struct urfs_sqe *get_sqe(struct urfs_ring *ring, int *err)
{
	if (ring->dead) {
		*err = -EPIPE;
		return NULL;
	}
	struct urfs_sqe *sqe = urfs_get_sqe(ring);
	if (!sqe)
		*err = -EBUSY;
	return sqe;
}

static void ur_enter(struct urch *ch)
{
	pthread_mutex_lock(&ctx_of(ch)->mu);
}

static void ur_leave(struct urch *ch)
{
	ctx_unlock(ctx_of(ch));
}

/* The image a UR name lives in: opts, else $SFS_IMAGE, else disk.sfs. */
static const char *image_of(const struct urch_opts *o)
{
	const char *image = o->image;
	if (!image)
		image = getenv("SFS_IMAGE");
	if (!image || !*image)
		image = "disk.sfs";
	return image;
}

static int name_ok(const char *path)
{
	size_t nl = strlen(path);
	return nl && nl <= UR_NAME_MAX && !strchr(path, '/');
}

static int cu_open(struct urch *ch, const char *path, const struct urch_opts *o)
{
	size_t nl = strlen(path);
	if (!name_ok(path))
		return -EINVAL;
	struct urctx *c;
	int r = ctx_get(image_of(o), ch->flags, o, &c);
	if (r < 0)
		return r;
	ch->priv = c;
	unsigned of = 0;
	if (ch->flags & URCH_CREATE)
		of |= URFS_O_CREAT;
	if (ch->flags & URCH_TRUNC)
		of |= URFS_O_TRUNC;
	if (ch->flags & URCH_RDONLY)
		of |= URFS_O_RDONLY;
	pthread_mutex_lock(&c->mu);
	struct urfs_sqe *sqe = get_sqe(&c->ring, &r);
	if (sqe) {
		urfs_prep_openat(sqe, path, of);
		r = sync_sqe(&c->ring);
	}
	ctx_unlock(c);
	if (r < 0) {
		ch->priv = NULL;
		ctx_put(c);
		return r;
	}
	ch->fd = r;
	memcpy(ch->name, path, nl + 1);
	size_t st = o->staging ? o->staging : UR_DEF_STAGING;
	ch->max_chunk = st / 4;
	if (ch->cap > c->ring.sq.ring_entries)
		ch->cap = c->ring.sq.ring_entries;
	return 0;
}

int urch_ur_unlink(const char *path, const struct urch_opts *o)
{
	if (!name_ok(path))
		return -EINVAL;
	struct urctx *c;
	int r = ctx_get(image_of(o), 0, o, &c);
	if (r < 0)
		return r;
	pthread_mutex_lock(&c->mu);
	struct urfs_sqe *sqe = get_sqe(&c->ring, &r);
	if (sqe) {
		urfs_prep_unlink(sqe, path);
		r = sync_sqe(&c->ring);
	}
	ctx_unlock(c);
	ctx_put(c);
	return r < 0 ? r : 0;
}

static int lt_unlock(struct urch *ch, uint64_t pos, uint64_t len);

static void cu_close(struct urch *ch)
{
	struct urctx *c = ctx_of(ch);
	if (!c)
		return;
	if (c->excl)
		lt_unlock(ch, 0, 0);
	pthread_mutex_lock(&c->mu);         /* CLOSE releases the handle's locks */
	struct urfs_sqe *sqe = urfs_get_sqe(&c->ring);
	if (sqe) {
		urfs_prep_close(sqe, ch->fd);
		sync_sqe(&c->ring);
	}
	ctx_unlock(c);
	ch->priv = NULL;
	ch->fd = -1;
	ctx_put(c);
}

static void ur_prep_sqe(struct urch *ch, struct urfs_sqe *sqe, int write, void *buf,
			size_t len, uint64_t pos)
{
	int fi = urch_fixed_index(ch, buf, len) >= 0 ? 0 : -1;  /* one region buffer */
	ch->stats.ops++;
	ch->stats.fixed_ops += fi >= 0;
	if (fi >= 0 && write)
		urfs_prep_write_fixed(sqe, ch->fd, buf, (unsigned)len, pos, 0);
	else if (fi >= 0)
		urfs_prep_read_fixed(sqe, ch->fd, buf, (unsigned)len, pos, 0);
	else if (write)
		urfs_prep_write(sqe, ch->fd, buf, (unsigned)len, pos);
	else
		urfs_prep_read(sqe, ch->fd, buf, (unsigned)len, pos);
}

static int64_t ur_rw1(struct urch *ch, int write, void *buf, size_t len, uint64_t pos)
{
	struct urfs_ring *ring = &ctx_of(ch)->ring;
	int err;
	struct urfs_sqe *sqe = get_sqe(ring, &err);
	if (!sqe)
		return err;
	ur_prep_sqe(ch, sqe, write, buf, len, pos);
	urfs_sqe_set_data64(sqe, 0);
	return sync_sqe(ring);
}

static int ur_prep(struct urch *ch, int write, void *buf, size_t len, uint64_t pos, uint64_t id)
{
	int err;
	struct urfs_sqe *sqe = get_sqe(&ctx_of(ch)->ring, &err);
	if (!sqe)
		return err;
	ur_prep_sqe(ch, sqe, write, buf, len, pos);
	urfs_sqe_set_data64(sqe, id);
	return 0;
}

static int ur_prep_force(struct urch *ch, int metadata, uint64_t id)
{
	(void)metadata;         /* SimpleFS's fsync commits data and metadata */
	int err;
	struct urfs_sqe *sqe = get_sqe(&ctx_of(ch)->ring, &err);
	if (!sqe)
		return err;
	urfs_prep_fsync(sqe, ch->fd, 0);
	urfs_sqe_set_flags(sqe, URFS_IOSQE_IO_DRAIN);
	urfs_sqe_set_data64(sqe, id);
	return 0;
}

static int ur_submit_wait(struct urch *ch)
{
	return urfs_submit_and_wait(&ctx_of(ch)->ring, 1);
}

static unsigned ur_reap(struct urch *ch, urch_cb cb, void *arg)
{
	struct urfs_ring *ring = &ctx_of(ch)->ring;
	struct urfs_cqe *cqe;
	uint32_t head;
	unsigned n = 0, mine = 0;
	urfs_for_each_cqe(ring, head, cqe) {
		if (!divert(ctx_of(ch), cqe->user_data, cqe->res)) {
			cb(arg, cqe->user_data, cqe->res);
			mine++;
		}
		n++;
	}
	urfs_cq_advance(ring, n);
	return mine;
}

static int ur_reg(struct urch *ch, size_t len, unsigned nr, void **bufs)
{
	struct urctx *c = ctx_of(ch);
	if (c->reg_by || c->waits)
		return -EBUSY;              /* a waiting lock keeps the ring busy */
	struct iovec iov = { .iov_base = NULL, .iov_len = len * nr };
	int r = urfs_register_buffers(&c->ring, &iov, 1);
	if (r < 0)
		return r;
	c->reg_by = ch;
	urch_reg_set(ch, iov.iov_base, len, nr, bufs);
	return 0;
}

static int ur_unreg(struct urch *ch)
{
	struct urctx *c = ctx_of(ch);
	if (c->waits)
		return -EBUSY;
	int r = urfs_unregister_buffers(&c->ring);
	c->reg_by = NULL;
	urch_reg_clear(ch);
	return r < 0 ? r : 0;
}

static int64_t ur_size(struct urch *ch)
{
	struct urfs_ring *ring = &ctx_of(ch)->ring;
	struct urfs_statx stx;
	int err;
	struct urfs_sqe *sqe = get_sqe(ring, &err);
	if (!sqe)
		return err;
	urfs_prep_statx(sqe, ch->fd, NULL, &stx);
	int r = sync_sqe(ring);
	return r < 0 ? r : (int64_t)stx.size;
}

static int ur_truncate(struct urch *ch, uint64_t size)
{
	struct urfs_ring *ring = &ctx_of(ch)->ring;
	int err;
	struct urfs_sqe *sqe = get_sqe(ring, &err);
	if (!sqe)
		return err;
	urfs_prep_ftruncate(sqe, ch->fd, size);
	return sync_sqe(ring);
}

static int ur_force(struct urch *ch, int metadata)
{
	(void)metadata;         /* SimpleFS's fsync commits data and metadata */
	struct urfs_ring *ring = &ctx_of(ch)->ring;
	int err;
	struct urfs_sqe *sqe = get_sqe(ring, &err);
	if (!sqe)
		return err;
	urfs_prep_fsync(sqe, ch->fd, 0);
	return sync_sqe(ring);
}

/* ---------------------------------------------------------------------------
 * Locks of an exclusive context: among the channels of this process (lkmu held).
 * ------------------------------------------------------------------------- */
static int conflicts(struct urctx *c, const struct urch *ch, uint64_t s, uint64_t e, int shared)
{
	for (size_t i = 0; i < c->nlocks; i++) {
		struct urlock *l = &c->locks[i];
		if (l->owner == ch || strcmp(l->name, ch->name))
			continue;
		if (l->start < e && s < l->end && !(shared && l->shared))
			return 1;
	}
	return 0;
}

static int add_lock(struct urctx *c, const struct urch *ch, uint64_t s, uint64_t e, int shared)
{
	if (c->nlocks == c->caplocks) {
		size_t nc = c->caplocks ? c->caplocks * 2 : 16;
		struct urlock *nl = realloc(c->locks, nc * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		c->locks = nl;
		c->caplocks = nc;
	}
	struct urlock *l = &c->locks[c->nlocks++];
	l->owner = ch;
	memcpy(l->name, ch->name, sizeof(l->name));
	l->start = s;
	l->end = e;
	l->shared = shared;
	return 0;
}

/* Remove ch's hold on [s, e), splitting a record that covers it. */
static int cut_own(struct urctx *c, const struct urch *ch, uint64_t s, uint64_t e)
{
	for (size_t i = 0; i < c->nlocks;) {
		struct urlock *l = &c->locks[i];
		if (l->owner != ch || l->end <= s || e <= l->start) {
			i++;
			continue;
		}
		if (l->start < s && e < l->end) {
			struct urlock right = *l;
			right.start = e;
			l->end = s;
			if (add_lock(c, ch, right.start, right.end, right.shared) < 0)
				return -ENOMEM;
			i++;
		} else if (l->start < s) {
			l->end = s;
			i++;
		} else if (e < l->end) {
			l->start = e;
			i++;
		} else {
			c->locks[i] = c->locks[--c->nlocks];
		}
	}
	return 0;
}

static int lt_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared, int64_t wait_ns)
{
	struct urctx *c = ctx_of(ch);
	uint64_t e = len ? pos + len : UINT64_MAX;
	struct timespec dl;
	int r;
	if (wait_ns > 0) {
		clock_gettime(CLOCK_MONOTONIC, &dl);
		long ns = dl.tv_nsec + (long)(wait_ns % 1000000000);
		dl.tv_sec += (time_t)(wait_ns / 1000000000) + ns / 1000000000;
		dl.tv_nsec = ns % 1000000000;
	}
	pthread_mutex_lock(&c->lkmu);
	while (conflicts(c, ch, pos, e, shared)) {
		if (!wait_ns) {
			pthread_mutex_unlock(&c->lkmu);
			return -EAGAIN;
		}
		if (wait_ns < 0)
			pthread_cond_wait(&c->lkcv, &c->lkmu);
		else if (pthread_cond_clockwait(&c->lkcv, &c->lkmu, CLOCK_MONOTONIC, &dl) == ETIMEDOUT &&
			 conflicts(c, ch, pos, e, shared)) {
			pthread_mutex_unlock(&c->lkmu);
			return -ETIMEDOUT;
		}
	}
	r = cut_own(c, ch, pos, e);
	if (!r)
		r = add_lock(c, ch, pos, e, shared);
	pthread_cond_broadcast(&c->lkcv);
	pthread_mutex_unlock(&c->lkmu);
	return r;
}

static int lt_unlock(struct urch *ch, uint64_t pos, uint64_t len)
{
	struct urctx *c = ctx_of(ch);
	uint64_t e = len ? pos + len : UINT64_MAX;
	pthread_mutex_lock(&c->lkmu);
	int r = cut_own(c, ch, pos, e);
	pthread_cond_broadcast(&c->lkcv);
	pthread_mutex_unlock(&c->lkmu);
	return r;
}

/* ---------------------------------------------------------------------------
 * Locks: the server's (docs/ABI.md, "Locks"), owned by the channel's handle.
 * ------------------------------------------------------------------------- */

/* Sleep until w's CQE came (mu held on entry and return): collect what the
 * CQ holds (only blocking locks' CQEs can be there: every other call reaps
 * its own before it lets go of mu), else arm the CQ doorbell and wait on it,
 * the liveness socket and w's own eventfd without mu. */
static int wait_lock(struct urctx *c, struct lkwait *w)
{
	struct urfs_ring *ring = &c->ring;
	for (;;) {
		struct urfs_cqe *cqe;
		while (urfs_peek_cqe(ring, &cqe) == 0) {
			uint64_t ud = cqe->user_data;
			int res = cqe->res;
			urfs_cqe_seen(ring, cqe);
			divert(c, ud, res);
		}
		if (w->done)
			return w->res;
		if (ring->dead)
			return -EPIPE;
		ur_fetch_or(ring->cq.kflags, UR_CQ_NEED_WAKEUP);
		ur_smp_mb();
		if (urfs_cq_ready(ring))
			continue;
		pthread_mutex_unlock(&c->mu);
		struct pollfd pf[3] = {
			{ .fd = w->efd, .events = POLLIN },
			{ .fd = ring->cq_fd, .events = POLLIN },
			{ .fd = ring->live_fd, .events = POLLIN },
		};
		int r = poll(pf, 3, -1);
		pthread_mutex_lock(&c->mu);
		uint64_t v;
		if (r > 0 && (pf[0].revents & POLLIN) && read(w->efd, &v, sizeof(v)) < 0) {
			/* EAGAIN: drained already */
		}
		if (r > 0 && (pf[1].revents & POLLIN) && read(ring->cq_fd, &v, sizeof(v)) < 0) {
			/* EAGAIN: another thread took it (and woke us if it mattered) */
		}
		if (r > 0 && (pf[2].revents & (POLLIN | POLLHUP | POLLERR)))
			ring->dead = 1;     /* any CQE it posted is collected above first */
	}
}

static int ur_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared, int64_t wait_ns)
{
	struct urctx *c = ctx_of(ch);
	struct lkwait w = { .efd = -1 };
	int wait = wait_ns != 0;
	int r;
	/* for both tables: the server refuses it too, the process's own does not */
	if (!shared && (ch->flags & URCH_RDONLY))
		return -EBADF;
	if (c->excl)
		return lt_lock(ch, pos, len, shared, wait_ns);
	if (wait && (w.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -errno;
	pthread_mutex_lock(&c->mu);
	struct urfs_sqe *sqe = get_sqe(&c->ring, &r);
	if (sqe) {
		urfs_prep_lock(sqe, ch->fd, pos, len, (shared ? URFS_LOCK_SHARED : 0) |
			       (wait ? URFS_LOCK_WAIT : 0));
		if (wait_ns > 0)
			sqe->addr2 = (uint64_t)wait_ns;   /* the server ends it: -ETIMEDOUT */
		if (!wait) {
			r = sync_sqe(&c->ring);
		} else {
			w.tag = LKW_TAG | ++c->nwait;
			urfs_sqe_set_data64(sqe, w.tag);
			w.next = c->waits;
			c->waits = &w;
			r = urfs_submit(&c->ring);
			if (r >= 0)
				r = wait_lock(c, &w);
			for (struct lkwait **pp = &c->waits; *pp; pp = &(*pp)->next)
				if (*pp == &w) {
					*pp = w.next;
					break;
				}
		}
	}
	ctx_unlock(c);
	if (w.efd >= 0)
		close(w.efd);
	return r;
}

static int ur_unlock(struct urch *ch, uint64_t pos, uint64_t len)
{
	struct urctx *c = ctx_of(ch);
	int r;
	if (c->excl)
		return lt_unlock(ch, pos, len);
	pthread_mutex_lock(&c->mu);
	struct urfs_sqe *sqe = get_sqe(&c->ring, &r);
	if (sqe) {
		urfs_prep_unlock(sqe, ch->fd, pos, len);
		r = sync_sqe(&c->ring);
	}
	ctx_unlock(c);
	return r;
}

const struct urch_eng urch_eng_ur = {
	.name = "ur",
	.open = cu_open,
	.close = cu_close,
	.rw1 = ur_rw1,
	.prep = ur_prep,
	.prep_force = ur_prep_force,
	.submit_wait = ur_submit_wait,
	.reap = ur_reap,
	.enter = ur_enter,
	.leave = ur_leave,
	.reg = ur_reg,
	.unreg = ur_unreg,
	.size = ur_size,
	.truncate = ur_truncate,
	.force = ur_force,
	.lock = ur_lock,
	.unlock = ur_unlock,
};
