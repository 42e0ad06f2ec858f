/*
 * chan_ur.c - the channel engine over this project's rings (urfs_*), on a
 * file inside a SimpleFS image. An image can be mounted by one process (one
 * server) only, so all channels of this process on one image share one
 * context: one ring, one simplefs_server, one mutex that serializes their
 * calls, one set of registered buffers, and a table of byte-range locks
 * among those channels. The context lives while a channel uses it.
 * Must never: use the ring without the context's mutex, or leave SQEs
 * unsubmitted or CQEs unreaped when a call returns.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "chan_int.h"
#include "ur_fs.h"

#define UR_DEF_REG     (16u << 20)
#define UR_DEF_STAGING (8u << 20)

struct urlock {
	const struct urch *owner;
	char name[64];
	uint64_t start, end;       /* [start, end) */
	int shared;
};

struct urctx {
	struct urctx *next;
	char key[PATH_MAX];
	int refs;
	pthread_mutex_t mu;        /* the ring */
	struct urfs_ring ring;
	const struct urch *reg_by; /* who registered the region's buffers */
	pthread_mutex_t lkmu;      /* the lock table */
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
		if (!strcmp(c->key, key)) {
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
	p.flags |= URFS_SETUP_EXCL;     /* our byte-range locks are this process's own */
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

/* One request, synchronously (ring mutex held): cqe->res. */
static int sync_sqe(struct urfs_ring *ring)
{
	struct urfs_cqe *cqe;
	int r = urfs_submit_and_wait(ring, 1);
	if (r < 0)
		return r;
	r = urfs_wait_cqe(ring, &cqe);
	if (r < 0)
		return r;
	r = cqe->res;
	urfs_cqe_seen(ring, cqe);
	return r;
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
	pthread_mutex_unlock(&ctx_of(ch)->mu);
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
	pthread_mutex_unlock(&c->mu);
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
	pthread_mutex_unlock(&c->mu);
	ctx_put(c);
	return r < 0 ? r : 0;
}

static void drop_locks(struct urch *ch);

static void cu_close(struct urch *ch)
{
	struct urctx *c = ctx_of(ch);
	if (!c)
		return;
	drop_locks(ch);
	pthread_mutex_lock(&c->mu);
	struct urfs_sqe *sqe = urfs_get_sqe(&c->ring);
	if (sqe) {
		urfs_prep_close(sqe, ch->fd);
		sync_sqe(&c->ring);
	}
	pthread_mutex_unlock(&c->mu);
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
	unsigned n = 0;
	urfs_for_each_cqe(ring, head, cqe) {
		cb(arg, cqe->user_data, cqe->res);
		n++;
	}
	urfs_cq_advance(ring, n);
	return n;
}

static int ur_reg(struct urch *ch, size_t len, unsigned nr, void **bufs)
{
	struct urctx *c = ctx_of(ch);
	if (c->reg_by)
		return -EBUSY;
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
 * Locks among the channels of this process (lkmu held).
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

static int ur_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared, int wait)
{
	struct urctx *c = ctx_of(ch);
	uint64_t e = len ? pos + len : UINT64_MAX;
	int r;
	if (!shared && (ch->flags & URCH_RDONLY))
		return -EBADF;
	pthread_mutex_lock(&c->lkmu);
	while (conflicts(c, ch, pos, e, shared)) {
		if (!wait) {
			pthread_mutex_unlock(&c->lkmu);
			return -EAGAIN;
		}
		pthread_cond_wait(&c->lkcv, &c->lkmu);
	}
	r = cut_own(c, ch, pos, e);
	if (!r)
		r = add_lock(c, ch, pos, e, shared);
	pthread_cond_broadcast(&c->lkcv);
	pthread_mutex_unlock(&c->lkmu);
	return r;
}

static int ur_unlock(struct urch *ch, uint64_t pos, uint64_t len)
{
	struct urctx *c = ctx_of(ch);
	uint64_t e = len ? pos + len : UINT64_MAX;
	pthread_mutex_lock(&c->lkmu);
	int r = cut_own(c, ch, pos, e);
	pthread_cond_broadcast(&c->lkcv);
	pthread_mutex_unlock(&c->lkmu);
	return r;
}

static void drop_locks(struct urch *ch)
{
	ur_unlock(ch, 0, 0);
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
