/* SPDX-License-Identifier: MIT */
/*
 * file.c - the SimpleFS handle API: mount/unmount, open/close, read/write
 * (with allocation, hole zeroing and disk-full handling), truncate, unlink,
 * fsync, stat/statfs/readdir, and the extent map for servers doing their own
 * image I/O.
 *
 * Locking: one rwlock per mount. Reads, and writes inside the file's size and
 * allocated blocks, run under the shared lock (their image I/O in parallel);
 * everything that changes metadata runs under the exclusive lock.
 * Must never print, never call fsync/malloc per block, and never let a file
 * show bytes it did not write (new space is zeroed before it becomes visible).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* O_DIRECT, fallocate, pthread_rwlockattr_setkind_np */
#endif
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sfs_int.h"

#define IO_MAX 0x7ffff000u   /* largest single transfer, as Linux */

static inline uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* ---- open files and handles -------------------------------------------- */

static int ensure_cap(struct sfs_ofile *of, uint64_t n)
{
	if (n <= of->cap)
		return 0;
	uint64_t c = of->cap ? of->cap : 16;
	while (c < n)
		c *= 2;
	if (c > UINT32_MAX)
		c = UINT32_MAX;
	uint32_t *p = realloc(of->blocks, (size_t)c * sizeof *p);
	if (!p)
		return -ENOMEM;
	of->blocks = p;
	of->cap = (uint32_t)c;
	return 0;
}

static int ofile_get(struct sfs *fs, uint32_t slot, struct sfs_ofile **out)
{
	struct sfs_ofile *of = fs->ofile_by_slot[slot];
	if (of) {
		of->refs++;
		*out = of;
		return 0;
	}
	struct sfs_dirent *e = &fs->dir[slot];
	of = calloc(1, sizeof *of);
	if (!of)
		return -ENOMEM;
	if (ensure_cap(of, e->nblocks < 16 ? 16 : e->nblocks)) {
		free(of);
		return -ENOMEM;
	}
	/* The chain was checked at mount and is kept valid since; the bound
	 * and range checks are a second line of defence. */
	uint32_t b = e->first;
	for (uint32_t i = 0; i < e->nblocks; i++) {
		if (b < fs->data_start || b >= fs->total) {
			free(of->blocks);
			free(of);
			return -EUCLEAN;
		}
		of->blocks[i] = b;
		b = fs->fat[b];
	}
	of->slot = slot;
	of->refs = 1;
	of->next = fs->open_list;
	if (of->next)
		of->next->prev = of;
	fs->open_list = of;
	fs->ofile_by_slot[slot] = of;
	*out = of;
	return 0;
}

static int ofile_put(struct sfs *fs, struct sfs_ofile *of)
{
	int r = 0;
	if (--of->refs)
		return 0;
	if (of->orphan) {
		if (!fs->rdonly)
			r = sfs_free_orphan(fs, of->slot);
	} else if (atomic_load(&of->mdirty) && !fs->rdonly) {
		uint64_t t = atomic_load(&of->mtime);
		if (t > fs->dir[of->slot].mtime_ns) {
			if (!(r = sfs_txn_reserve(fs, 1))) {
				fs->dir[of->slot].mtime_ns = t;
				sfs_mark_dir(fs, of->slot);
			}
		}
	}
	if (of->prev)
		of->prev->next = of->next;
	else
		fs->open_list = of->next;
	if (of->next)
		of->next->prev = of->prev;
	fs->ofile_by_slot[of->slot] = NULL;
	free(of->blocks);
	free(of);
	return r;
}

/* Find (growing the table if needed) a free handle slot; -EMFILE at the cap.
 * Under the exclusive lock the slot stays free until taken. */
static int handle_find(struct sfs *fs)
{
	for (;;) {
		for (uint32_t i = fs->handle_hint; i < fs->nhandles; i++)
			if (!fs->handles[i].of) {
				fs->handle_hint = i;
				return (int)i;
			}
		if (fs->handle_hint > 0) {
			/* The hint is only a lower bound: look below it once. */
			fs->handle_hint = 0;
			continue;
		}
		if (fs->nhandles >= MAX_HANDLES)
			return -EMFILE;
		uint32_t n = fs->nhandles ? fs->nhandles * 2 : 64;
		if (n > MAX_HANDLES)
			n = MAX_HANDLES;
		struct sfs_handle *h = realloc(fs->handles, (size_t)n * sizeof *h);
		if (!h)
			return -ENOMEM;
		memset(h + fs->nhandles, 0, (size_t)(n - fs->nhandles) * sizeof *h);
		fs->handle_hint = fs->nhandles;
		fs->handles = h;
		fs->nhandles = n;
	}
}

static void handle_take(struct sfs *fs, int i, struct sfs_ofile *of, unsigned flags)
{
	fs->handles[i].of = of;
	fs->handles[i].flags = flags;
	atomic_store(&fs->handles[i].pos, 0);
	fs->handle_hint = (uint32_t)i + 1;
}

static struct sfs_handle *get_handle(struct sfs *fs, int fd)
{
	if (fd < 0 || (uint32_t)fd >= fs->nhandles || !fs->handles[fd].of)
		return NULL;
	return &fs->handles[fd];
}

/* Why a write-type call may not change this file system: -EROFS, -EIO, or 0. */
static int write_err(const struct sfs *fs)
{
	return fs->rdonly ? -EROFS : fs->failed ? -EIO : 0;
}

static void rdlock(struct sfs *fs) { pthread_rwlock_rdlock(&fs->lock); }
static void wrlock(struct sfs *fs) { pthread_rwlock_wrlock(&fs->lock); }
static void unlock(struct sfs *fs) { pthread_rwlock_unlock(&fs->lock); }

static int check_name(const char *name)
{
	if (!name)
		return -EINVAL;
	size_t len = strnlen(name, SFS_NAME_MAX + 1);
	if (len == 0)
		return -EINVAL;
	if (len > SFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len))
		return -EINVAL;
	return 0;
}

/* ---- mount ---------------------------------------------------------------- */

static void fs_destroy(struct sfs *fs)
{
	while (fs->open_list) {
		struct sfs_ofile *of = fs->open_list;
		fs->open_list = of->next;
		free(of->blocks);
		free(of);
	}
	free(fs->handles);
	sfs_free_meta(fs);
	pthread_rwlock_destroy(&fs->lock);
	free(fs);
}

SFS_EXPORT int sfs_mount_dev(struct sfs_dev *dev, unsigned flags, int own, struct sfs **out,
			     char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!dev || !out)
		return -EINVAL;
	struct sfs *fs = calloc(1, sizeof *fs);
	if (!fs)
		return -ENOMEM;
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&fs->lock, &a);
	pthread_rwlockattr_destroy(&a);
	fs->dev = dev;
	fs->mflags = flags;
	fs->rdonly = !!(flags & SFS_MOUNT_RDONLY);
	struct sfs_chk c = { .strict = 1, .err = err, .errlen = errlen };
	int r = sfs_load(fs, &c);
	if (r)
		goto fail;
	if (!fs->rdonly) {
		/* Finish unlinks that a crash interrupted. */
		for (uint32_t s = 0; s < fs->max_files; s++)
			if ((fs->dir[s].flags & DE_ORPHAN) && (r = sfs_free_orphan(fs, s)))
				goto iofail;
		if ((r = sfs_commit(fs)))
			goto iofail;
	}
	fs->own = own;
	*out = fs;
	return 0;
iofail:
	sfs_seterr(err, errlen, "device I/O error during recovery: %s", strerror(-r));
fail:
	fs_destroy(fs);
	return r;
}

SFS_EXPORT int sfs_mount(const char *path, unsigned flags, struct sfs **out,
			 char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (!path || !*path || !out)
		return -EINVAL;
	struct stat st;
	if ((flags & SFS_MOUNT_CREATE) && !(flags & SFS_MOUNT_RDONLY) &&
	    stat(path, &st) < 0 && errno == ENOENT) {
		int r = sfs_format(path, SFS_DEFAULT_SIZE, 0);
		if (r && r != -EBUSY) {
			sfs_seterr(err, errlen, "cannot create image: %s", strerror(-r));
			return r;
		}
	}
	struct sfs_dev *dev;
	int r = sfs_filedev_open(path, flags, &dev, err, errlen);
	if (r)
		return r;
	r = sfs_mount_dev(dev, flags, 1, out, err, errlen);
	if (r)
		dev->close(dev);
	return r;
}

SFS_EXPORT int sfs_unmount(struct sfs *fs)
{
	if (!fs)
		return -EINVAL;
	wrlock(fs);
	int r = 0, r2;
	for (uint32_t i = 0; i < fs->nhandles; i++) {
		if (fs->handles[i].of) {
			struct sfs_ofile *of = fs->handles[i].of;
			fs->handles[i].of = NULL;
			if ((r2 = ofile_put(fs, of)) && !r)
				r = r2;
		}
	}
	if ((r2 = sfs_finish(fs)) && !r)
		r = r2;
	if (!r && !fs->rdonly)
		r = atomic_load(&fs->sync_err);
	unlock(fs);
	if (fs->own)
		fs->dev->close(fs->dev);
	fs_destroy(fs);
	return r;
}

SFS_EXPORT unsigned sfs_mount_warnings(struct sfs *fs, char *msg, size_t len)
{
	if (msg && len)
		msg[0] = 0;
	if (!fs || !fs->warn[0])
		return 0;
	sfs_seterr(msg, len, "%s", fs->warn);
	return SFS_WARN_BACKUP_SUPER;
}

SFS_EXPORT int sfs_image_fd(struct sfs *fs, int *direct)
{
	if (!fs)
		return -EINVAL;
	if (direct)
		*direct = (int)fs->dev->direct;
	return fs->dev->fd;
}

SFS_EXPORT int sfs_sync(struct sfs *fs)
{
	if (!fs)
		return -EINVAL;
	wrlock(fs);
	int r;
	if (fs->rdonly) {
		r = 0;
	} else {
		uint64_t seq = fs->seq;
		r = sfs_commit(fs);
		if (!r && fs->seq == seq)
			r = sfs_dev_sync(fs);   /* data only */
		if (!r)
			r = atomic_load(&fs->sync_err);   /* an earlier sync failed */
	}
	unlock(fs);
	return r;
}

/* ---- data I/O ------------------------------------------------------------- */

/* Read [off, off+len) of a file (caller clipped it to the size). */
static int file_read_blocks(struct sfs *fs, struct sfs_ofile *of, uint32_t nblocks,
			    char *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		uint64_t pos = off + done;
		uint64_t bi = pos >> BS_SHIFT;
		uint32_t inb = (uint32_t)(pos & (BS - 1));
		if (bi >= nblocks) {
			memset(buf + done, 0, len - done);   /* hole at the tail */
			break;
		}
		uint32_t first = of->blocks[bi];
		uint64_t k = 1;
		size_t want = len - done;
		while (bi + k < nblocks && of->blocks[bi + k] == first + k && k * BS - inb < want)
			k++;
		size_t n = k * BS - inb < want ? (size_t)(k * BS - inb) : want;
		int r = sfs_io_read(fs->dev, buf + done, n, (uint64_t)first * BS + inb);
		if (r)
			return r;
		done += n;
	}
	return 0;
}

/* Write [off, off+len) inside the allocated blocks. */
static int file_write_blocks(struct sfs *fs, struct sfs_ofile *of, const char *buf,
			     size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		uint64_t pos = off + done;
		uint64_t bi = pos >> BS_SHIFT;
		uint32_t inb = (uint32_t)(pos & (BS - 1));
		uint32_t first = of->blocks[bi];
		uint64_t k = 1;
		size_t want = len - done;
		uint32_t nb = fs->dir[of->slot].nblocks;
		while (bi + k < nb && of->blocks[bi + k] == first + k && k * BS - inb < want)
			k++;
		size_t n = k * BS - inb < want ? (size_t)(k * BS - inb) : want;
		int r = buf ? sfs_io_write(fs->dev, buf + done, n, (uint64_t)first * BS + inb)
			    : sfs_dev_zero(fs->dev, (uint64_t)first * BS + inb, n);
		if (r)
			return r;
		done += n;
	}
	return 0;
}

/* Zero [from, to) of a file, inside its allocated blocks. */
static int zero_range(struct sfs *fs, struct sfs_ofile *of, uint64_t from, uint64_t to)
{
	return from < to ? file_write_blocks(fs, of, NULL, (size_t)(to - from), from) : 0;
}

static ssize_t do_read(struct sfs *fs, struct sfs_ofile *of, void *buf, size_t len, uint64_t off)
{
	struct sfs_dirent *e = &fs->dir[of->slot];
	uint64_t size = e->size;
	if (off >= size || len == 0)
		return 0;
	if (len > IO_MAX)
		len = IO_MAX;
	if (len > size - off)
		len = (size_t)(size - off);
	int r = file_read_blocks(fs, of, e->nblocks, buf, len, off);
	return r ? r : (ssize_t)len;
}

/* Cut a file's chain to keep blocks, freeing from the tail in transactions
 * that fit the journal; the size follows so each commit is consistent. */
static int chain_shrink(struct sfs *fs, struct sfs_ofile *of, uint32_t keep)
{
	struct sfs_dirent *e = &fs->dir[of->slot];
	while (e->nblocks > keep) {
		int r = sfs_txn_reserve(fs, 3);
		if (r)
			return r;
		sfs_mark_dir(fs, of->slot);
		uint32_t n = e->nblocks;
		while (n > keep && fs->ndirty + 2 <= fs->jcap)
			sfs_free_block(fs, of->blocks[--n]);
		if (n) {
			fs->fat[of->blocks[n - 1]] = FAT_EOC;
			sfs_mark_fat(fs, of->blocks[n - 1]);
		} else {
			e->first = 0;
		}
		e->nblocks = n;
		if (e->size > (uint64_t)n * BS)
			e->size = (uint64_t)n * BS;
	}
	return 0;
}

/* Grow the size to new_size: bytes [size, new_size) inside allocated blocks
 * are zeroed first (stale tail, new blocks); beyond them is a hole. */
static int grow_size(struct sfs *fs, struct sfs_ofile *of, uint64_t new_size)
{
	struct sfs_dirent *e = &fs->dir[of->slot];
	uint64_t alloc_end = (uint64_t)e->nblocks * BS;
	if (new_size <= e->size)
		return 0;
	if (e->size < alloc_end) {
		uint64_t to = new_size < alloc_end ? new_size : alloc_end;
		int r = file_write_blocks(fs, of, NULL, (size_t)(to - e->size), e->size);
		if (r)
			return r;
	}
	e->size = new_size;
	sfs_mark_dir(fs, of->slot);
	return 0;
}

/* Give back the blocks a write round allocated past keep (a full disk or an
 * I/O error): they are in the running transaction, so their FAT blocks are
 * already dirty; freed blocks wait for the commit like any other. */
static void rollback(struct sfs *fs, struct sfs_ofile *of, uint32_t keep)
{
	struct sfs_dirent *e = &fs->dir[of->slot];
	if (e->nblocks <= keep)
		return;
	for (uint32_t n = e->nblocks; n > keep;)
		sfs_free_block(fs, of->blocks[--n]);
	if (keep) {
		fs->fat[of->blocks[keep - 1]] = FAT_EOC;
		sfs_mark_fat(fs, of->blocks[keep - 1]);
	} else {
		e->first = 0;
	}
	e->nblocks = keep;
}

/* The exclusive-lock write: allocates, zeroes gaps, handles a full disk, and
 * splits work into transactions that fit the journal. */
static ssize_t write_locked(struct sfs *fs, struct sfs_ofile *of, const char *buf,
			    size_t len, uint64_t off)
{
	struct sfs_dirent *e = &fs->dir[of->slot];
	uint64_t end = off + len;
	size_t written = 0;
	int r = 0;
	uint64_t need = div_up(end, BS);
	/* A write that cannot store even one byte (its first block lies past
	 * all the free space) fails at once and changes nothing. */
	uint64_t first_blk = off / BS;
	if (first_blk >= e->nblocks &&
	    first_blk + 1 - e->nblocks > fs->free_count + fs->npend)
		return -ENOSPC;
	for (;;) {
		uint64_t cur = off + written;
		int stop = 0;   /* 1: journal full, 2: no space */
		if ((r = sfs_txn_reserve(fs, 3)))
			break;
		/* Space freed in the running transaction becomes usable only
		 * after its commit: commit now, at a consistent point, rather than
		 * in the middle of this round. */
		if (fs->npend && need - e->nblocks > fs->free_count && (r = sfs_commit(fs)))
			break;
		sfs_mark_dir(fs, of->slot);
		uint64_t old_end = (uint64_t)e->nblocks * BS;
		while (e->nblocks < need) {
			if (fs->ndirty + 2 > fs->jcap) {
				stop = 1;
				break;
			}
			uint32_t last = e->nblocks ? of->blocks[e->nblocks - 1] : 0;
			if ((r = ensure_cap(of, (uint64_t)e->nblocks + 1))) {
				stop = 3;
				break;
			}
			uint32_t b = sfs_alloc_block(fs, last ? last + 1 : 0);
			if (!b) {
				stop = 2;
				break;
			}
			if (last) {
				fs->fat[last] = b;
				sfs_mark_fat(fs, last);
			} else {
				e->first = b;
			}
			of->blocks[e->nblocks++] = b;
		}
		uint64_t covered = (uint64_t)e->nblocks * BS;
		/* Every byte that will be inside the size and is not written now
		 * must read as zero: the stale tail of the old last block, and
		 * new blocks (they may hold a deleted file's bytes). */
		if (covered > cur) {
			uint64_t seg_end = end < covered ? end : covered;
			uint64_t to = cur < old_end ? cur : old_end;
			uint64_t from = seg_end > old_end ? seg_end : old_end;
			uint64_t to2 = e->size < covered ? e->size : covered;
			if ((e->size < to && (r = zero_range(fs, of, e->size, to))) ||
			    (cur > old_end && (r = zero_range(fs, of, old_end, cur))) ||
			    (from < to2 && (r = zero_range(fs, of, from, to2))) ||
			    (r = file_write_blocks(fs, of, buf + written, (size_t)(seg_end - cur), cur))) {
				rollback(fs, of, (uint32_t)(old_end / BS));
				break;
			}
			written += (size_t)(seg_end - cur);
			if (seg_end > e->size)
				e->size = seg_end;
		} else if (stop == 1) {
			/* Only blocks before the write so far: zero them, make them
			 * part of the file, so the commit below is consistent. */
			if ((e->size < old_end && (r = zero_range(fs, of, e->size, old_end))) ||
			    (covered > old_end && (r = zero_range(fs, of, old_end, covered)))) {
				rollback(fs, of, (uint32_t)(old_end / BS));
				break;
			}
			if (covered > e->size)
				e->size = covered;
		} else {
			/* Cannot reach the write: give back this round's blocks. */
			rollback(fs, of, (uint32_t)(old_end / BS));
		}
		e->mtime_ns = sfs_now_ns();
		if (written == len || stop >= 2)
			break;
		if ((r = sfs_commit(fs)))
			break;
	}
	if (written)
		return (ssize_t)written;
	if (r)
		return r;
	return -ENOSPC;
}

static ssize_t file_write(struct sfs *fs, int fd, const void *buf, size_t len,
			  uint64_t off, int at_pos)
{
	if (!fs)
		return -EINVAL;
	if (len > IO_MAX)
		len = IO_MAX;
	rdlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	if (!h || (h->flags & SFS_O_RDONLY)) {
		unlock(fs);
		return -EBADF;
	}
	int err = write_err(fs);
	if (err) {
		unlock(fs);
		return err;
	}
	if (at_pos)
		off = atomic_load(&h->pos);
	if (len == 0) {
		unlock(fs);
		return 0;
	}
	if (off >= MAX_FILE_SIZE) {
		unlock(fs);
		return -EFBIG;
	}
	if (len > MAX_FILE_SIZE - off)
		len = (size_t)(MAX_FILE_SIZE - off);
	struct sfs_ofile *of = h->of;
	struct sfs_dirent *e = &fs->dir[of->slot];
	if (!(h->flags & SFS_O_APPEND) && off + len <= e->size &&
	    off + len <= (uint64_t)e->nblocks * BS &&
	    (!fs->dev->direct || (((uintptr_t)buf | len | off) & (BS - 1)) == 0)) {
		/* In place: no metadata change but the mtime. */
		int r = file_write_blocks(fs, of, buf, len, off);
		if (!r) {
			sfs_note_write(fs, of);
			atomic_store(&of->mtime, sfs_now_ns());
			atomic_store(&of->mdirty, 1);
			if (at_pos)
				atomic_store(&h->pos, off + len);
		}
		unlock(fs);
		return r ? r : (ssize_t)len;
	}
	unlock(fs);
	wrlock(fs);
	h = get_handle(fs, fd);
	ssize_t n;
	if (!h) {
		n = -EBADF;
	} else if (fs->failed) {
		n = -EIO;
	} else {
		of = h->of;
		e = &fs->dir[of->slot];
		if (h->flags & SFS_O_APPEND)
			off = e->size;
		else if (at_pos)
			off = atomic_load(&h->pos);
		if (off >= MAX_FILE_SIZE)
			n = -EFBIG;
		else {
			if (len > MAX_FILE_SIZE - off)
				len = (size_t)(MAX_FILE_SIZE - off);
			n = write_locked(fs, of, buf, len, off);
			if (n > 0)
				sfs_note_write(fs, of);
		}
		if (n > 0 && (at_pos || (h->flags & SFS_O_APPEND)))
			atomic_store(&h->pos, off + (uint64_t)n);
	}
	unlock(fs);
	return n;
}

SFS_EXPORT ssize_t sfs_file_pwrite(struct sfs *fs, int fd, const void *buf, size_t len, uint64_t off)
{
	return file_write(fs, fd, buf, len, off, 0);
}

SFS_EXPORT ssize_t sfs_file_write(struct sfs *fs, int fd, const void *buf, size_t len)
{
	return file_write(fs, fd, buf, len, 0, 1);
}

static ssize_t file_read(struct sfs *fs, int fd, void *buf, size_t len, uint64_t off, int at_pos)
{
	if (!fs)
		return -EINVAL;
	rdlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	ssize_t n;
	if (!h) {
		n = -EBADF;
	} else {
		if (at_pos)
			off = atomic_load(&h->pos);
		n = do_read(fs, h->of, buf, len, off);
		if (n > 0 && at_pos)
			atomic_store(&h->pos, off + (uint64_t)n);
	}
	unlock(fs);
	return n;
}

SFS_EXPORT ssize_t sfs_file_pread(struct sfs *fs, int fd, void *buf, size_t len, uint64_t off)
{
	return file_read(fs, fd, buf, len, off, 0);
}

SFS_EXPORT ssize_t sfs_file_read(struct sfs *fs, int fd, void *buf, size_t len)
{
	return file_read(fs, fd, buf, len, 0, 1);
}

SFS_EXPORT int64_t sfs_file_seek(struct sfs *fs, int fd, int64_t off, int whence)
{
	if (!fs)
		return -EINVAL;
	rdlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	int64_t r;
	if (!h) {
		r = -EBADF;
	} else {
		int64_t base;
		switch (whence) {
		case SEEK_SET: base = 0; break;
		case SEEK_CUR: base = (int64_t)atomic_load(&h->pos); break;
		case SEEK_END: base = (int64_t)fs->dir[h->of->slot].size; break;
		default: base = -1; break;
		}
		if (base < 0)
			r = -EINVAL;
		else if (off > 0 && base > INT64_MAX - off)
			r = -EOVERFLOW;
		else if (base + off < 0)
			r = -EINVAL;
		else {
			r = base + off;
			atomic_store(&h->pos, (uint64_t)r);
		}
	}
	unlock(fs);
	return r;
}

/* ---- open, close, truncate, unlink, fsync -------------------------------- */

static int truncate_locked(struct sfs *fs, struct sfs_ofile *of, uint64_t size)
{
	struct sfs_dirent *e = &fs->dir[of->slot];
	if (size > MAX_FILE_SIZE)
		return -EFBIG;
	int r;
	uint64_t keep = div_up(size, BS);   /* may be 2^32: compare before narrowing */
	if (size < e->size && keep < e->nblocks &&
	    (r = chain_shrink(fs, of, (uint32_t)keep)))
		return r;
	if ((r = sfs_txn_reserve(fs, 1)))
		return r;
	if (size > e->size) {
		if ((r = grow_size(fs, of, size)))
			return r;
	} else {
		e->size = size;
	}
	e->mtime_ns = sfs_now_ns();
	sfs_mark_dir(fs, of->slot);
	return 0;
}

SFS_EXPORT int sfs_file_open(struct sfs *fs, const char *name, unsigned flags)
{
	if (!fs)
		return -EINVAL;
	int r = check_name(name);
	if (r)
		return r;
	if (flags & ~(SFS_O_CREAT | SFS_O_TRUNC | SFS_O_EXCL | SFS_O_APPEND | SFS_O_RDONLY))
		return -EINVAL;
	wrlock(fs);
	if (fs->failed) {
		r = -EIO;
		goto out;
	}
	/* A free handle first, so a failed open creates nothing. */
	int fd = handle_find(fs);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	int s = sfs_lookup(fs, name);
	if (s >= 0) {
		if ((flags & SFS_O_CREAT) && (flags & SFS_O_EXCL)) {
			r = -EEXIST;
			goto out;
		}
	} else {
		if (!(flags & SFS_O_CREAT)) {
			r = -ENOENT;
			goto out;
		}
		if (fs->rdonly) {
			r = -EROFS;
			goto out;
		}
		if (fs->nslots >= fs->max_files) {
			r = -ENOSPC;
			goto out;
		}
		if ((r = sfs_txn_reserve(fs, 1)))
			goto out;
		uint32_t i = fs->slot_hint < fs->max_files ? fs->slot_hint : 0;
		for (uint32_t k = 0; k < fs->max_files; k++, i = i + 1 < fs->max_files ? i + 1 : 0)
			if (fs->dir[i].flags == 0)
				break;
		if (fs->dir[i].flags != 0) {
			r = -ENOSPC;
			goto out;
		}
		s = (int)i;
		fs->slot_hint = i + 1;
		struct sfs_dirent *e = &fs->dir[s];
		memset(e, 0, sizeof *e);
		memcpy(e->name, name, strlen(name));
		e->flags = DE_USED;
		e->mtime_ns = sfs_now_ns();
		sfs_mark_dir(fs, (uint32_t)s);
		sfs_hash_insert(fs, (uint32_t)s);
		fs->nfiles++;
		fs->nslots++;
	}
	if ((flags & SFS_O_TRUNC) && fs->rdonly) {
		r = -EROFS;
		goto out;
	}
	struct sfs_ofile *of;
	if ((r = ofile_get(fs, (uint32_t)s, &of)))
		goto out;
	handle_take(fs, fd, of, flags);
	if ((flags & SFS_O_TRUNC) && fs->dir[s].size > 0 && (r = truncate_locked(fs, of, 0))) {
		fs->handles[fd].of = NULL;
		ofile_put(fs, of);
		goto out;
	}
	r = fd;
out:
	unlock(fs);
	return r;
}

SFS_EXPORT int sfs_file_close(struct sfs *fs, int fd)
{
	if (!fs)
		return -EINVAL;
	wrlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	int r;
	if (!h) {
		r = -EBADF;
	} else {
		struct sfs_ofile *of = h->of;
		h->of = NULL;
		if ((uint32_t)fd < fs->handle_hint)
			fs->handle_hint = (uint32_t)fd;
		r = ofile_put(fs, of);
	}
	unlock(fs);
	return r;
}

SFS_EXPORT int sfs_file_truncate(struct sfs *fs, int fd, uint64_t size)
{
	if (!fs)
		return -EINVAL;
	wrlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	int r;
	if (!h || (h->flags & SFS_O_RDONLY))
		r = -EBADF;
	else if (!(r = write_err(fs)))
		r = truncate_locked(fs, h->of, size);
	unlock(fs);
	return r;
}

SFS_EXPORT int sfs_unlink(struct sfs *fs, const char *name)
{
	if (!fs)
		return -EINVAL;
	int r = check_name(name);
	if (r)
		return r;
	wrlock(fs);
	int s = sfs_lookup(fs, name);
	if (s < 0)
		r = -ENOENT;
	else if (!(r = write_err(fs)) && (r = sfs_txn_reserve(fs, 1)) == 0) {
		sfs_hash_remove(fs, (uint32_t)s);
		fs->nfiles--;
		struct sfs_ofile *of = fs->ofile_by_slot[s];
		if (of) {
			/* Open: the name goes now, the blocks at the last close. */
			fs->dir[s].flags |= DE_ORPHAN;
			sfs_mark_dir(fs, (uint32_t)s);
			of->orphan = 1;
		} else {
			r = sfs_free_orphan(fs, (uint32_t)s);
		}
	}
	unlock(fs);
	return r;
}

/* What an fsync of h returns once its own sync went well: the write-back
 * error an earlier failed sync left on the file, if any (sticky). */
static int fsync_result(struct sfs_handle *h, int r)
{
	return r ? r : atomic_load(&h->of->werr);
}

SFS_EXPORT int sfs_file_fsync(struct sfs *fs, int fd)
{
	if (!fs)
		return -EINVAL;
	/* Nothing structural pending: the data is in place and one sync makes
	 * it durable; do it under the shared lock so other I/O goes on. An mtime
	 * set by in-place writes waits for the next commit (as fdatasync). */
	rdlock(fs);
	int r;
	struct sfs_handle *h = get_handle(fs, fd);
	if (!h)
		r = -EBADF;
	else if (fs->rdonly)
		r = 0;
	else if (fs->failed)
		r = -EIO;
	else if (fs->ndirty == 0)
		r = fsync_result(h, sfs_dev_sync(fs));
	else
		r = 1;
	unlock(fs);
	if (r <= 0)
		return r;
	wrlock(fs);
	if (!(h = get_handle(fs, fd))) {
		r = -EBADF;
	} else if (fs->failed) {
		r = -EIO;
	} else {
		uint64_t seq = fs->seq;
		r = sfs_commit(fs);
		if (!r && fs->seq == seq)
			r = sfs_dev_sync(fs);
		r = fsync_result(h, r);
	}
	unlock(fs);
	return r;
}

/* ---- stat, statfs, readdir, map ----------------------------------------- */

static void fill_stat(struct sfs *fs, uint32_t slot, struct sfs_stat *st)
{
	const struct sfs_dirent *e = &fs->dir[slot];
	memset(st, 0, sizeof *st);
	memcpy(st->name, e->name, strnlen(e->name, SFS_NAME_MAX));
	st->size = e->size;
	st->blocks = e->nblocks;
	st->mtime_ns = e->mtime_ns;
	struct sfs_ofile *of = fs->ofile_by_slot[slot];
	if (of && atomic_load(&of->mdirty)) {
		uint64_t t = atomic_load(&of->mtime);
		if (t > st->mtime_ns)
			st->mtime_ns = t;
	}
	st->ino = slot;
}

SFS_EXPORT int sfs_file_stat(struct sfs *fs, int fd, struct sfs_stat *st)
{
	if (!fs || !st)
		return -EINVAL;
	rdlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	int r = h ? 0 : -EBADF;
	if (h)
		fill_stat(fs, h->of->slot, st);
	unlock(fs);
	return r;
}

SFS_EXPORT int sfs_stat(struct sfs *fs, const char *name, struct sfs_stat *st)
{
	if (!fs || !st)
		return -EINVAL;
	int r = check_name(name);
	if (r)
		return r;
	rdlock(fs);
	int s = sfs_lookup(fs, name);
	if (s < 0)
		r = -ENOENT;
	else
		fill_stat(fs, (uint32_t)s, st);
	unlock(fs);
	return r;
}

SFS_EXPORT int sfs_statfs(struct sfs *fs, struct sfs_statfs *st)
{
	if (!fs || !st)
		return -EINVAL;
	rdlock(fs);
	memset(st, 0, sizeof *st);
	st->block_size = BS;
	st->total_blocks = fs->total;
	st->data_blocks = fs->total - fs->data_start;
	st->free_blocks = fs->free_count + fs->npend;
	st->max_files = fs->max_files;
	st->files = fs->nfiles;
	st->name_max = SFS_NAME_MAX;
	unlock(fs);
	return 0;
}

SFS_EXPORT int sfs_readdir(struct sfs *fs, uint32_t *cookie, struct sfs_stat *st)
{
	if (!fs || !cookie || !st)
		return -EINVAL;
	rdlock(fs);
	int r = 0;
	for (uint32_t s = *cookie; s < fs->max_files; s++) {
		if (fs->dir[s].flags == DE_USED) {
			fill_stat(fs, s, st);
			*cookie = s + 1;
			r = 1;
			break;
		}
	}
	if (!r)
		*cookie = fs->max_files;
	unlock(fs);
	return r;
}

SFS_EXPORT int sfs_file_map(struct sfs *fs, int fd, uint64_t off, uint64_t len,
			    struct sfs_extent *ext, int max)
{
	if (!fs || (!ext && max > 0) || max < 0)
		return -EINVAL;
	rdlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	if (!h) {
		unlock(fs);
		return -EBADF;
	}
	struct sfs_ofile *of = h->of;
	const struct sfs_dirent *e = &fs->dir[of->slot];
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	if (end > e->size)
		end = e->size;
	int count = 0;
	uint64_t pos = off;
	while (pos < end && count < max) {
		uint64_t bi = pos >> BS_SHIFT;
		uint32_t inb = (uint32_t)(pos & (BS - 1));
		if (bi >= e->nblocks) {
			ext[count++] = (struct sfs_extent){ pos, 0, end - pos };
			break;
		}
		uint32_t first = of->blocks[bi];
		uint64_t k = 1;
		while (bi + k < e->nblocks && of->blocks[bi + k] == first + k && k * BS - inb < end - pos)
			k++;
		uint64_t n = k * BS - inb < end - pos ? k * BS - inb : end - pos;
		ext[count++] = (struct sfs_extent){ pos, (uint64_t)first * BS + inb, n };
		pos += n;
	}
	unlock(fs);
	return count;
}

SFS_EXPORT int sfs_file_map_write(struct sfs *fs, int fd, uint64_t off, uint64_t len,
				  struct sfs_extent *ext, int max)
{
	if (!fs || !ext || max <= 0 || !len)
		return -EINVAL;
	rdlock(fs);
	struct sfs_handle *h = get_handle(fs, fd);
	int r = 0;
	if (!h || (h->flags & SFS_O_RDONLY))
		r = -EBADF;
	else
		r = write_err(fs);
	if (r || (h->flags & SFS_O_APPEND)) {
		unlock(fs);
		return r;
	}
	struct sfs_ofile *of = h->of;
	const struct sfs_dirent *e = &fs->dir[of->slot];
	/* The same test as file_write's in-place path: inside the size and the
	 * allocated blocks, so no metadata but the mtime changes. */
	if (off > e->size || len > e->size - off || off + len > (uint64_t)e->nblocks * BS) {
		unlock(fs);
		return 0;
	}
	int count = 0;
	uint64_t pos = off, end = off + len;
	while (pos < end && count < max) {
		uint64_t bi = pos >> BS_SHIFT;
		uint32_t inb = (uint32_t)(pos & (BS - 1));
		uint32_t first = of->blocks[bi];
		uint64_t k = 1;
		while (bi + k < e->nblocks && of->blocks[bi + k] == first + k && k * BS - inb < end - pos)
			k++;
		uint64_t n = k * BS - inb < end - pos ? k * BS - inb : end - pos;
		ext[count++] = (struct sfs_extent){ pos, (uint64_t)first * BS + inb, n };
		pos += n;
	}
	if (pos < end) {
		count = 0;            /* too fragmented for max extents */
	} else {
		sfs_note_write(fs, of);   /* the caller writes before any fsync */
		atomic_store(&of->mtime, sfs_now_ns());
		atomic_store(&of->mdirty, 1);
	}
	unlock(fs);
	return count;
}
