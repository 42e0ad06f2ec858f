/* SPDX-License-Identifier: MIT */
/*
 * chan.c - channels (include/ur_chan.h): open/close, the batch driver shared
 * by every engine (streams any number of ops through the engine's ring,
 * resubmits short transfers, gives each op its own result), the *_fully
 * loops, transfers, the host-file helpers (size, truncate, force, OFD locks)
 * and the psync engine.
 * Must never: print, stop a batch at its first error, report an op done
 * before all its bytes moved, or allocate per op.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chan_int.h"

#define URCH_ALIGN 4096u
#define URCH_DEF_ENTRIES 256u
#define URCH_HOST_CHUNK (1u << 30)

static _Atomic uint64_t urch_ids = 1;

URCH_EXPORT uint64_t urch_next_op_id(void)
{
	return atomic_load(&urch_ids);
}

static const struct urch_eng *eng_of(int engine)
{
	switch (engine) {
	case URCH_PSYNC:    return &urch_eng_psync;
	case URCH_IO_URING: return &urch_eng_io_uring;
	case URCH_UR:       return &urch_eng_ur;
	}
	return NULL;
}

URCH_EXPORT const char *urch_engine_name(int engine)
{
	const struct urch_eng *e = eng_of(engine);
	return e ? e->name : "?";
}

/* The caller's options with their defaults; -EINVAL for a ring too large. */
static int opts_fill(struct urch_opts *o, const struct urch_opts *opts)
{
	memset(o, 0, sizeof(*o));
	if (opts)
		*o = *opts;
	if (!o->ring_entries)
		o->ring_entries = URCH_DEF_ENTRIES;
	return o->ring_entries > 32768 ? -EINVAL : 0;
}

URCH_EXPORT int urch_open_opts(const char *path, unsigned flags, int engine,
			       const struct urch_opts *opts, struct urch **out)
{
	const struct urch_eng *e = eng_of(engine);
	struct urch_opts o;
	int r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!e || !path || (flags & ~(URCH_CREATE | URCH_TRUNC | URCH_RDONLY | URCH_DIRECT |
				      URCH_DSYNC | URCH_EXCL)))
		return -EINVAL;
	if (opts_fill(&o, opts) < 0)
		return -EINVAL;
	struct urch *ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->engine = engine;
	ch->flags = flags;
	ch->eng = e;
	ch->fd = -1;
	ch->cap = o.ring_entries;
	ch->max_chunk = URCH_HOST_CHUNK;
	ch->redo = calloc(ch->cap, sizeof(*ch->redo));
	if (!ch->redo) {
		free(ch);
		return -ENOMEM;
	}
	r = e->open(ch, path, &o);
	if (r < 0) {
		free(ch->redo);
		free(ch);
		return r;
	}
	*out = ch;
	return 0;
}

URCH_EXPORT int urch_open(const char *path, unsigned flags, int engine, struct urch **ch)
{
	return urch_open_opts(path, flags, engine, NULL, ch);
}

URCH_EXPORT int urch_unlink(const char *path, int engine, const struct urch_opts *opts)
{
	struct urch_opts o;
	if (!path || !eng_of(engine))
		return -EINVAL;
	if (engine != URCH_UR)
		return unlink(path) < 0 ? -errno : 0;
	if (opts_fill(&o, opts) < 0)
		return -EINVAL;
	return urch_ur_unlink(path, &o);
}

URCH_EXPORT int urch_close(struct urch *ch)
{
	if (!ch)
		return -EINVAL;
	if (ch->reg_owner) {
		ch->eng->enter(ch);
		ch->eng->unreg(ch);
		ch->eng->leave(ch);
	}
	ch->eng->close(ch);
	free(ch->redo);
	free(ch->pdone);
	free(ch);
	return 0;
}

URCH_EXPORT int urch_engine(const struct urch *ch)
{
	return ch ? ch->engine : -EINVAL;
}

URCH_EXPORT int urch_fd(const struct urch *ch)
{
	return ch ? ch->fd : -EINVAL;
}

URCH_EXPORT int urch_get_stats(const struct urch *ch, struct urch_stats *st)
{
	if (!ch || !st)
		return -EINVAL;
	*st = ch->stats;
	return 0;
}

URCH_EXPORT int urch_alloc_buf(struct urch *ch, size_t len, void **buf)
{
	(void)ch;
	if (!buf)
		return -EINVAL;
	size_t l = (len + URCH_ALIGN - 1) & ~(size_t)(URCH_ALIGN - 1);
	void *p = aligned_alloc(URCH_ALIGN, l ? l : URCH_ALIGN);
	if (!p)
		return -ENOMEM;
	memset(p, 0, l ? l : URCH_ALIGN);
	*buf = p;
	return 0;
}

URCH_EXPORT void urch_free_buf(struct urch *ch, void *buf)
{
	(void)ch;
	free(buf);
}

void urch_reg_set(struct urch *ch, char *base, size_t len, unsigned nr, void **bufs)
{
	ch->reg_base = base;
	ch->reg_len = len;
	ch->reg_nr = nr;
	ch->reg_owner = 1;
	for (unsigned i = 0; i < nr; i++)
		bufs[i] = base + (size_t)i * len;
}

void urch_reg_clear(struct urch *ch)
{
	ch->reg_base = NULL;
	ch->reg_nr = 0;
	ch->reg_owner = 0;
}

int urch_fixed_index(const struct urch *ch, const void *buf, size_t len)
{
	const char *p = buf;
	if (!ch->reg_base || p < ch->reg_base || p >= ch->reg_base + ch->reg_len * ch->reg_nr)
		return -1;
	size_t i = (size_t)(p - ch->reg_base) / ch->reg_len;
	if ((size_t)(p - ch->reg_base) + len > (i + 1) * ch->reg_len)
		return -1;
	return (int)i;
}

URCH_EXPORT int urch_register_buffers(struct urch *ch, size_t len, unsigned nr, void **bufs)
{
	if (!ch || !len || !nr || !bufs || nr > 16384)
		return -EINVAL;
	if (ch->reg_base)
		return -EBUSY;
	len = (len + URCH_ALIGN - 1) & ~(size_t)(URCH_ALIGN - 1);
	ch->eng->enter(ch);
	int r = ch->eng->reg(ch, len, nr, bufs);
	ch->eng->leave(ch);
	return r;
}

URCH_EXPORT int urch_unregister_buffers(struct urch *ch)
{
	if (!ch)
		return -EINVAL;
	if (!ch->reg_base)
		return -ENXIO;
	ch->eng->enter(ch);
	int r = ch->eng->unreg(ch);
	ch->eng->leave(ch);
	return r;
}

/* ---------------------------------------------------------------------------
 * Single ops and the *_fully loops
 * ------------------------------------------------------------------------- */
static int bad_range(uint64_t pos, size_t len)
{
	return pos > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - pos;
}

static int64_t rw1(struct urch *ch, int write, void *buf, size_t len, uint64_t pos)
{
	if (!ch)
		return -EINVAL;
	if (bad_range(pos, len))
		return -EINVAL;
	if (!len)
		return 0;
	if (!buf)
		return -EFAULT;
	if (len > ch->max_chunk)
		len = ch->max_chunk;
	ch->eng->enter(ch);
	int64_t r;
	do
		r = ch->eng->rw1(ch, write, buf, len, pos);
	while (r == -EINTR || r == -EAGAIN);
	ch->eng->leave(ch);
	return r;
}

static int dsync_after(struct urch *ch)
{
	/* UR has no O_DSYNC: the write is followed by an FSYNC. */
	if (ch->engine == URCH_UR && (ch->flags & URCH_DSYNC)) {
		ch->eng->enter(ch);
		int r = ch->eng->force(ch, 0);
		ch->eng->leave(ch);
		return r;
	}
	return 0;
}

URCH_EXPORT int64_t urch_read(struct urch *ch, void *buf, size_t len, uint64_t pos)
{
	return rw1(ch, 0, buf, len, pos);
}

URCH_EXPORT int64_t urch_write(struct urch *ch, const void *buf, size_t len, uint64_t pos)
{
	int64_t r = rw1(ch, 1, (void *)buf, len, pos);
	if (r > 0) {
		int e = dsync_after(ch);
		if (e < 0)
			return e;
	}
	return r;
}

/* A short read under O_DIRECT at an unaligned place only happens at the end. */
static int at_eof(const struct urch *ch, uint64_t next_pos)
{
	return (ch->flags & URCH_DIRECT) && (next_pos & 511);
}

static int64_t fully(struct urch *ch, int write, char *buf, size_t len, uint64_t pos)
{
	size_t done = 0;
	if (!ch)
		return -EINVAL;
	if (bad_range(pos, len))
		return -EINVAL;
	while (done < len) {
		if (!write && done && at_eof(ch, pos + done))
			return -ENODATA;
		int64_t r = rw1(ch, write, buf + done, len - done, pos + done);
		if (r < 0)
			return r;
		if (r == 0)
			return write ? -EIO : -ENODATA;
		done += (size_t)r;
	}
	if (write && len) {
		int e = dsync_after(ch);
		if (e < 0)
			return e;
	}
	return (int64_t)len;
}

URCH_EXPORT int64_t urch_read_fully(struct urch *ch, void *buf, size_t len, uint64_t pos)
{
	return fully(ch, 0, buf, len, pos);
}

URCH_EXPORT int64_t urch_write_fully(struct urch *ch, const void *buf, size_t len, uint64_t pos)
{
	return fully(ch, 1, (char *)buf, len, pos);
}

/* ---------------------------------------------------------------------------
 * The batch driver
 *
 * ops[i].result holds the bytes done so far while op i is pending, and its
 * final result (len or -errno) once finished. At most ch->cap ops are in
 * flight, each at most once, so the redo list (ops to resubmit after a short
 * transfer) never holds more than cap entries. Op ids are base + i, base
 * taken from the process-wide counter for the whole batch.
 * ------------------------------------------------------------------------- */
struct batch {
	struct urch *ch;
	struct urch_op *ops;
	size_t n;
	uint64_t base;
	int write;
	unsigned inflight, nredo;
	size_t failed;
	/* urch_batch_write_force: the force travels as id base + n */
	int force;               /* -1: none, else its metadata argument */
	int force_state;         /* 0: not queued, 1: in flight, 2: done */
	int force_stale;         /* an op was resubmitted after it was queued */
	int64_t force_res;
};

/* An op to resubmit; one queued after the force leaves it uncovered. */
static void redo_op(struct batch *b, size_t i)
{
	b->ch->redo[b->nredo++] = (uint32_t)i;
	if (b->force_state)
		b->force_stale = 1;
}

static void batch_done(void *arg, uint64_t id, int64_t res)
{
	struct batch *b = arg;
	if (b->force >= 0 && b->force_state == 1 && id == b->base + b->n) {
		b->inflight--;
		b->force_state = 2;
		b->force_res = res < 0 ? res : 0;
		return;
	}
	if (id - b->base >= b->n)
		return;                 /* not ours: cannot happen, never trusted */
	size_t i = (size_t)(id - b->base);
	struct urch_op *op = &b->ops[i];
	b->inflight--;
	if (res == -EAGAIN || res == -EINTR) {
		redo_op(b, i);
		return;
	}
	if (res < 0) {
		op->result = res;
		b->failed++;
		return;
	}
	if (res == 0) {
		op->result = b->write ? -EIO : -ENODATA;
		b->failed++;
		return;
	}
	op->result += res;
	if ((size_t)op->result >= op->len)
		return;
	if (!b->write && at_eof(b->ch, op->pos + (uint64_t)op->result)) {
		op->result = -ENODATA;
		b->failed++;
		return;
	}
	redo_op(b, i);
}

/* Ops that had succeeded get e (a sync after them failed: not durable).
 * Zero-length ones too (result 0): else a batch of them whose force failed
 * would return 0, the force's failure seen nowhere. */
static void fail_done(struct urch_op *ops, size_t n, int64_t e, size_t *failed)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i].result >= 0) {
			ops[i].result = e;
			(*failed)++;
		}
}

static int run_batch(struct urch *ch, int write, struct urch_op *ops, size_t n, int force)
{
	struct batch b = { .ch = ch, .ops = ops, .n = n, .write = write, .force = force };
	size_t next = 0;
	int err = 0;

	if (!ch || (n && !ops))
		return -EINVAL;
	if (!n)
		return force >= 0 ? urch_force(ch, force) : 0;
	b.base = atomic_fetch_add(&urch_ids, n + (force >= 0));
	ch->eng->enter(ch);
	while (next < n || b.nredo || b.inflight || (force >= 0 && !b.force_state)) {
		while (b.inflight < ch->cap && (b.nredo || next < n)) {
			size_t i;
			int fresh = !b.nredo;
			if (fresh) {
				i = next;
				ops[i].result = 0;
				if (!ops[i].len) {
					next++;
					continue;
				}
				if (bad_range(ops[i].pos, ops[i].len) || !ops[i].buf) {
					ops[i].result = ops[i].buf ? -EINVAL : -EFAULT;
					b.failed++;
					next++;
					continue;
				}
			} else {
				i = ch->redo[b.nredo - 1];
			}
			struct urch_op *op = &ops[i];
			size_t done = (size_t)op->result;
			size_t len = op->len - done;
			if (len > ch->max_chunk)
				len = ch->max_chunk;
			int r = ch->eng->prep(ch, write, (char *)op->buf + done, len,
					      op->pos + done, b.base + i);
			if (r == -EBUSY)
				break;
			if (fresh)
				next++;
			else
				b.nredo--;
			if (r < 0) {
				op->result = r;
				b.failed++;
				continue;
			}
			b.inflight++;
		}
		/* Every op queued once: the force follows them, drained. */
		if (force >= 0 && !b.force_state && next == n && !b.nredo && b.inflight < ch->cap) {
			int r = ch->eng->prep_force(ch, force, b.base + n);
			if (r == 0) {
				b.force_state = 1;
				b.inflight++;
			} else if (r != -EBUSY) {
				b.force_state = 2;
				b.force_res = r;
			}
		}
		if (!b.inflight) {
			if (next < n || b.nredo || (force >= 0 && !b.force_state)) {
				err = -EBUSY;   /* no room and nothing of ours in flight */
				break;
			}
			continue;
		}
		int r = ch->eng->submit_wait(ch);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
			err = r;
			break;
		}
		ch->eng->reap(ch, batch_done, &b);
	}
	if (err) {
		/* Let what is in flight land (the kernel may still write into the
		 * buffers), as far as the engine still answers; then every op not
		 * finished gets the error. A dead UR server answers -EPIPE at once. */
		b.nredo = 0;
		while (b.inflight && ch->eng->submit_wait(ch) >= 0)
			ch->eng->reap(ch, batch_done, &b);
		for (size_t i = 0; i < n; i++) {
			int pending = i >= next || (ops[i].result >= 0 && (size_t)ops[i].result < ops[i].len);
			if (pending) {
				ops[i].result = err;
				b.failed++;
			}
		}
	}
	if (!err && force >= 0 && b.force_stale && b.force_res == 0)
		b.force_res = ch->eng->force(ch, force);   /* cover the resubmitted ops */
	ch->eng->leave(ch);
	if (!err && force >= 0 && b.force_res < 0)
		fail_done(ops, n, b.force_res, &b.failed);
	if (!err && write) {
		int e = dsync_after(ch);
		if (e < 0)
			fail_done(ops, n, e, &b.failed);
	}
	if (err)
		return err;
	return b.failed > INT_MAX ? INT_MAX : (int)b.failed;
}

URCH_EXPORT int urch_batch_read_fully(struct urch *ch, struct urch_op *ops, size_t n)
{
	return run_batch(ch, 0, ops, n, -1);
}

URCH_EXPORT int urch_batch_write_fully(struct urch *ch, struct urch_op *ops, size_t n)
{
	return run_batch(ch, 1, ops, n, -1);
}

URCH_EXPORT int urch_batch_write_force(struct urch *ch, struct urch_op *ops, size_t n, int metadata)
{
	return run_batch(ch, 1, ops, n, metadata ? 1 : 0);
}

/* ---------------------------------------------------------------------------
 * size, truncate, force, locks
 * ------------------------------------------------------------------------- */
URCH_EXPORT int64_t urch_size(struct urch *ch)
{
	if (!ch)
		return -EINVAL;
	ch->eng->enter(ch);
	int64_t r = ch->eng->size(ch);
	ch->eng->leave(ch);
	return r;
}

URCH_EXPORT int urch_truncate(struct urch *ch, uint64_t size)
{
	if (!ch || size > (uint64_t)INT64_MAX)
		return -EINVAL;
	if (ch->flags & URCH_RDONLY)
		return -EBADF;
	ch->eng->enter(ch);
	int r = ch->eng->truncate(ch, size);
	ch->eng->leave(ch);
	return r;
}

URCH_EXPORT int urch_force(struct urch *ch, int metadata)
{
	if (!ch)
		return -EINVAL;
	ch->eng->enter(ch);
	int r = ch->eng->force(ch, metadata);
	ch->eng->leave(ch);
	return r;
}

static int lock_args(struct urch *ch, uint64_t pos, uint64_t len)
{
	if (!ch || pos > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - pos)
		return -EINVAL;
	return 0;
}

URCH_EXPORT int urch_lock_timeout(struct urch *ch, uint64_t pos, uint64_t len, int shared,
				  int64_t timeout_ns)
{
	int r = lock_args(ch, pos, len);
	return r < 0 ? r : ch->eng->lock(ch, pos, len, shared, timeout_ns < 0 ? -1 : timeout_ns);
}

URCH_EXPORT int urch_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared)
{
	return urch_lock_timeout(ch, pos, len, shared, -1);
}

URCH_EXPORT int urch_try_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared)
{
	return urch_lock_timeout(ch, pos, len, shared, 0);
}

URCH_EXPORT int urch_unlock(struct urch *ch, uint64_t pos, uint64_t len)
{
	int r = lock_args(ch, pos, len);
	return r < 0 ? r : ch->eng->unlock(ch, pos, len);
}

/* ---------------------------------------------------------------------------
 * Transfers
 * ------------------------------------------------------------------------- */
#define XFER_CHUNK (1u << 20)

static int64_t transfer_copy(struct urch *src, uint64_t spos, uint64_t count,
			     struct urch *dst, uint64_t dpos)
{
	void *buf;
	uint64_t done = 0;
	int r = urch_alloc_buf(src, XFER_CHUNK, &buf);
	if (r < 0)
		return r;
	while (done < count) {
		size_t want = count - done < XFER_CHUNK ? (size_t)(count - done) : XFER_CHUNK;
		size_t got = 0;
		while (got < want) {
			int64_t n = urch_read(src, (char *)buf + got, want - got, spos + done + got);
			if (n < 0) {
				free(buf);
				return n;
			}
			if (n == 0)
				break;
			got += (size_t)n;
			if (at_eof(src, spos + done + got))
				break;
		}
		if (!got)
			break;
		int64_t w = urch_write_fully(dst, buf, got, dpos + done);
		if (w < 0) {
			free(buf);
			return w;
		}
		done += got;
		if (got < want)
			break;
	}
	free(buf);
	return (int64_t)done;
}

URCH_EXPORT int64_t urch_transfer_to(struct urch *src, uint64_t src_pos, uint64_t count,
				     struct urch *dst, uint64_t dst_pos)
{
	if (!src || !dst || bad_range(src_pos, count) || bad_range(dst_pos, count))
		return -EINVAL;
	if (dst->flags & URCH_RDONLY)
		return -EBADF;
	if (!count)
		return 0;
	if (src->engine == URCH_UR || dst->engine == URCH_UR)
		return transfer_copy(src, src_pos, count, dst, dst_pos);
	uint64_t done = 0;
	while (done < count) {
		loff_t in = (loff_t)(src_pos + done), outp = (loff_t)(dst_pos + done);
		size_t want = count - done < URCH_HOST_CHUNK ? (size_t)(count - done) : URCH_HOST_CHUNK;
		ssize_t n = copy_file_range(src->fd, &in, dst->fd, &outp, want, 0);
		if (n < 0) {
			int e = errno;
			if (e == EINTR)
				continue;
			if (!done && (e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP ||
				      e == EPERM))
				return transfer_copy(src, src_pos, count, dst, dst_pos);
			return -e;
		}
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	if (done && (dst->flags & URCH_DSYNC) && fdatasync(dst->fd) < 0)
		return -errno;
	return (int64_t)done;
}

URCH_EXPORT int64_t urch_transfer_from(struct urch *dst, uint64_t dst_pos, struct urch *src,
				       uint64_t src_pos, uint64_t count)
{
	return urch_transfer_to(src, src_pos, count, dst, dst_pos);
}

/* ---------------------------------------------------------------------------
 * Host files (psync and io_uring)
 * ------------------------------------------------------------------------- */
int urch_host_open(struct urch *ch, const char *path)
{
	int of = O_CLOEXEC | ((ch->flags & URCH_RDONLY) ? O_RDONLY : O_RDWR);
	if (ch->flags & URCH_CREATE)
		of |= O_CREAT;
	if (ch->flags & URCH_TRUNC)
		of |= O_TRUNC;
	if (ch->flags & URCH_DIRECT)
		of |= O_DIRECT;
	if (ch->flags & URCH_DSYNC)
		of |= O_DSYNC;
	int fd = open(path, of, 0644);
	if (fd < 0)
		return -errno;
	ch->fd = fd;
	return 0;
}

int64_t urch_host_size(struct urch *ch)
{
	struct stat st;
	if (fstat(ch->fd, &st) < 0)
		return -errno;
	return (int64_t)st.st_size;
}

int urch_host_truncate(struct urch *ch, uint64_t size)
{
	return ftruncate(ch->fd, (off_t)size) < 0 ? -errno : 0;
}

int urch_host_force(struct urch *ch, int metadata)
{
	int r = metadata ? fsync(ch->fd) : fdatasync(ch->fd);
	return r < 0 ? -errno : 0;
}

static int host_setlk(struct urch *ch, short type, uint64_t pos, uint64_t len, int wait)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)pos;
	fl.l_len = (off_t)len;
	for (;;) {
		if (fcntl(ch->fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EACCES)
			return -EAGAIN;
		return -errno;
	}
}

int urch_host_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared, int64_t wait_ns)
{
	if (wait_ns > 0)
		return -EOPNOTSUPP;        /* F_OFD_SETLKW has no timeout */
	return host_setlk(ch, shared ? F_RDLCK : F_WRLCK, pos, len, wait_ns < 0);
}

int urch_host_unlock(struct urch *ch, uint64_t pos, uint64_t len)
{
	return host_setlk(ch, F_UNLCK, pos, len, 0);
}

/* ---------------------------------------------------------------------------
 * psync: pread/pwrite. prep does the I/O at once and keeps the completion for
 * reap, so batches run through the same driver as the ring engines.
 * ------------------------------------------------------------------------- */
static int ps_open(struct urch *ch, const char *path, const struct urch_opts *o)
{
	(void)o;
	ch->pdone = calloc(ch->cap, sizeof(*ch->pdone));
	if (!ch->pdone)
		return -ENOMEM;
	int r = urch_host_open(ch, path);
	if (r < 0) {
		free(ch->pdone);
		ch->pdone = NULL;
	}
	return r;
}

static void ps_close(struct urch *ch)
{
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
}

static int64_t ps_rw1(struct urch *ch, int write, void *buf, size_t len, uint64_t pos)
{
	ch->stats.ops++;
	ssize_t r = write ? pwrite(ch->fd, buf, len, (off_t)pos) : pread(ch->fd, buf, len, (off_t)pos);
	return r < 0 ? -errno : r;
}

static int ps_prep(struct urch *ch, int write, void *buf, size_t len, uint64_t pos, uint64_t id)
{
	if (ch->npdone >= ch->cap)
		return -EBUSY;
	ch->pdone[ch->npdone].id = id;
	ch->pdone[ch->npdone].res = ps_rw1(ch, write, buf, len, pos);
	ch->npdone++;
	return 0;
}

/* psync runs each op in prep, in order: the force comes after them. */
static int ps_prep_force(struct urch *ch, int metadata, uint64_t id)
{
	if (ch->npdone >= ch->cap)
		return -EBUSY;
	ch->pdone[ch->npdone].id = id;
	ch->pdone[ch->npdone].res = urch_host_force(ch, metadata);
	ch->npdone++;
	return 0;
}

static int ps_submit_wait(struct urch *ch)
{
	(void)ch;
	return 0;
}

static unsigned ps_reap(struct urch *ch, urch_cb cb, void *arg)
{
	unsigned n = ch->npdone;
	ch->npdone = 0;
	for (unsigned i = 0; i < n; i++)
		cb(arg, ch->pdone[i].id, ch->pdone[i].res);
	return n;
}

static void ps_nothing(struct urch *ch)
{
	(void)ch;
}

static int ps_reg(struct urch *ch, size_t len, unsigned nr, void **bufs)
{
	char *p;
	int r = urch_alloc_buf(ch, len * nr, (void **)&p);
	if (r < 0)
		return r;
	urch_reg_set(ch, p, len, nr, bufs);
	return 0;
}

static int ps_unreg(struct urch *ch)
{
	free(ch->reg_base);
	urch_reg_clear(ch);
	return 0;
}

const struct urch_eng urch_eng_psync = {
	.name = "psync",
	.open = ps_open,
	.close = ps_close,
	.rw1 = ps_rw1,
	.prep = ps_prep,
	.prep_force = ps_prep_force,
	.submit_wait = ps_submit_wait,
	.reap = ps_reap,
	.enter = ps_nothing,
	.leave = ps_nothing,
	.reg = ps_reg,
	.unreg = ps_unreg,
	.size = urch_host_size,
	.truncate = urch_host_truncate,
	.force = urch_host_force,
	.lock = urch_host_lock,
	.unlock = urch_host_unlock,
};
