/* SPDX-License-Identifier: MIT */
/*
 * meta.c - SimpleFS metadata: format, load + check (shared by mount and
 * fsck; it replays a committed transaction that journal.c reads), block
 * allocation, the name hash, and freeing of unlinked files. The write-ahead
 * journal itself (transactions, commit, device syncs) is journal.c.
 *
 * Invariants kept here (docs/FORMAT.md has the full list):
 *  - the superblock is written only by format;
 *  - a block freed in the running transaction is FAT_PENDING in memory (free on
 *    disk images written by the commit) and is not reused before the commit;
 *  - every running transaction fits the journal (callers reserve first).
 * Must never print, never trust a byte read from the device before checking it,
 * and never loop on a FAT chain without a bound.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* O_DIRECT, fallocate, pthread_rwlockattr_setkind_np */
#endif
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "sfs_int.h"

unsigned sfs_debug_jcap;

uint64_t sfs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* ---- geometry and format ---------------------------------------------- */

int sfs_format_geometry(uint64_t size, uint32_t max_files, struct sfs_super_disk *sb)
{
	size &= ~(uint64_t)(BS - 1);
	if (size < SFS_MIN_SIZE)
		return -EINVAL;
	if (size > SFS_MAX_SIZE)
		return -EFBIG;
	uint64_t total = size / BS - 1;   /* the last block holds the backup superblock */
	if (total > MAX_BLOCKS)
		total = MAX_BLOCKS;
	uint64_t jcap = total / 128;
	if (jcap < 16)
		jcap = 16;
	if (jcap > 256)
		jcap = 256;
	uint64_t fat_blocks = div_up(total, FAT_PER_BLOCK);
	uint64_t mf = max_files;
	if (mf == 0) {
		mf = SFS_DEFAULT_MAX_FILES;
		uint64_t fit = (total / 4) * DIR_PER_BLOCK;
		if (mf > fit)
			mf = fit;
	}
	if (mf < MIN_FILES || mf > MAX_FILES_LIMIT)
		return -EINVAL;
	uint64_t dir_blocks = div_up(mf, DIR_PER_BLOCK);
	uint64_t data_start = 1 + (jcap + 1) + fat_blocks + dir_blocks;
	if (data_start + 16 > total)
		return -ENOSPC;
	memset(sb, 0, sizeof *sb);
	sb->magic = SB_MAGIC;
	sb->version = SB_VERSION;
	sb->block_size = BS;
	sb->total_blocks = (uint32_t)total;
	sb->journal_start = 1;
	sb->journal_blocks = (uint32_t)(jcap + 1);
	sb->fat_start = sb->journal_start + sb->journal_blocks;
	sb->fat_blocks = (uint32_t)fat_blocks;
	sb->dir_start = sb->fat_start + sb->fat_blocks;
	sb->dir_blocks = (uint32_t)dir_blocks;
	sb->data_start = (uint32_t)data_start;
	sb->max_files = (uint32_t)mf;
	sb->created_ns = sfs_now_ns();
	for (int i = 0; i < 16; i++)
		sb->uuid[i] = (uint8_t)(sb->created_ns >> ((i % 8) * 8)) ^ (uint8_t)(i * 37);
	return 0;
}

#define FMT_CHUNK 64u

/* Write sb as the superblock copy at block home (0: the primary; total_blocks:
 * the backup), sealed with that home. buf: one aligned block of scratch. */
int sfs_super_write(struct sfs_dev *dev, const struct sfs_super_disk *sb, uint32_t home, uint8_t *buf)
{
	memset(buf, 0, BS);
	memcpy(buf, sb, sizeof *sb);
	sfs_block_seal(buf, home);
	return sfs_io_write(dev, buf, BS, (uint64_t)home * BS);
}

int sfs_format_write(struct sfs_dev *dev, const struct sfs_super_disk *sb)
{
	if ((uint64_t)sb->total_blocks * BS > dev->size)
		return -ENOSPC;
	uint8_t *buf = sfs_aligned_alloc((size_t)FMT_CHUNK * BS);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	/* Empty journal header. */
	memset(buf, 0, BS);
	struct sfs_jhdr_disk *jh = (struct sfs_jhdr_disk *)buf;
	jh->magic = JH_MAGIC;
	sfs_block_seal(buf, sb->journal_start);
	if ((r = sfs_io_write(dev, buf, BS, (uint64_t)sb->journal_start * BS)))
		goto out;
	/* FAT: metadata blocks reserved, data blocks free. */
	for (uint32_t m = 0; m < sb->fat_blocks; m += FMT_CHUNK) {
		uint32_t n = sb->fat_blocks - m < FMT_CHUNK ? sb->fat_blocks - m : FMT_CHUNK;
		memset(buf, 0, (size_t)n * BS);
		for (uint32_t k = 0; k < n; k++) {
			uint32_t *e = (uint32_t *)(buf + (size_t)k * BS);
			uint64_t first = (uint64_t)(m + k) * FAT_PER_BLOCK;
			for (uint32_t i = 0; i < FAT_PER_BLOCK; i++) {
				uint64_t b = first + i;
				if (b < sb->data_start)
					e[i] = FAT_RESERVED;
			}
			sfs_block_seal(buf + (size_t)k * BS, sb->fat_start + m + k);
		}
		if ((r = sfs_io_write(dev, buf, (size_t)n * BS, (uint64_t)(sb->fat_start + m) * BS)))
			goto out;
	}
	/* Directory: all slots free. */
	for (uint32_t m = 0; m < sb->dir_blocks; m += FMT_CHUNK) {
		uint32_t n = sb->dir_blocks - m < FMT_CHUNK ? sb->dir_blocks - m : FMT_CHUNK;
		memset(buf, 0, (size_t)n * BS);
		for (uint32_t k = 0; k < n; k++)
			sfs_block_seal(buf + (size_t)k * BS, sb->dir_start + m + k);
		if ((r = sfs_io_write(dev, buf, (size_t)n * BS, (uint64_t)(sb->dir_start + m) * BS)))
			goto out;
	}
	if ((r = dev->sync(dev)))
		goto out;
	/* The superblocks last: a torn format is not an image. The backup
	 * (when the device has room for it) goes first. */
	if ((uint64_t)sb->total_blocks * BS + BS <= dev->size &&
	    (r = sfs_super_write(dev, sb, sb->total_blocks, buf)))
		goto out;
	if ((r = sfs_super_write(dev, sb, 0, buf)))
		goto out;
	r = dev->sync(dev);
out:
	free(buf);
	return r;
}

SFS_EXPORT int sfs_format_dev(struct sfs_dev *dev, uint32_t max_files)
{
	if (!dev)
		return -EINVAL;
	struct sfs_super_disk sb;
	int r = sfs_format_geometry(dev->size, max_files, &sb);
	if (r)
		return r;
	return sfs_format_write(dev, &sb);
}

/* Does the file on fd start with a SimpleFS superblock magic? */
static int looks_like_image(int fd)
{
	uint64_t magic = 0;
	return pread(fd, &magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) && magic == SB_MAGIC;
}

/*
 * Open path for formatting: create it (O_EXCL: never through a symlink,
 * dangling or not, and exactly mode), or open the existing file without
 * following a final symlink. An existing non-empty regular file that is not
 * an image is kept unless SFS_FORMAT_FORCE. The fd is locked exclusively.
 */
static int open_for_format(const char *path, unsigned flags, unsigned mode, int *created)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 07777);
	*created = fd >= 0;
	if (fd >= 0) {
		if (fchmod(fd, mode & 07777) < 0) {    /* exactly mode, whatever the umask */
			int e = errno;
			close(fd);
			unlink(path);
			return -e;
		}
	} else if (errno == EEXIST) {
		fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno == EWOULDBLOCK ? EBUSY : errno;
		close(fd);
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (S_ISREG(st.st_mode) && st.st_size > 0 && !(flags & SFS_FORMAT_FORCE) && !looks_like_image(fd)) {
		close(fd);
		return -EEXIST;
	}
	return fd;
}

/* fsync the directory that holds path, so a new name survives a power cut.
 * A directory that cannot be fsynced (EINVAL: some file systems) is let be. */
static int sync_parent(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;
	if (n >= sizeof dir)
		return -ENAMETOOLONG;
	if (!slash)
		memcpy(dir, ".", 2);
	else if (n == 0)
		memcpy(dir, "/", 2);
	else {
		memcpy(dir, path, n);
		dir[n] = 0;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int r = fsync(dfd) < 0 && errno != EINVAL ? -errno : 0;
	close(dfd);
	return r;
}

SFS_EXPORT int sfs_format(const char *path, uint64_t size, uint32_t max_files)
{
	return sfs_format_ex(path, size, max_files, 0, SFS_DEFAULT_MODE);
}

SFS_EXPORT int sfs_format_ex(const char *path, uint64_t size, uint32_t max_files,
			     unsigned flags, unsigned mode)
{
	if (!path || !*path || (flags & ~SFS_FORMAT_FORCE) || (mode & ~07777u))
		return -EINVAL;
	struct sfs_super_disk sb;
	int r = sfs_format_geometry(size, max_files, &sb);
	if (r)
		return r;
	int created;
	int fd = open_for_format(path, flags, mode, &created);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	uint64_t bytes = (uint64_t)sb.total_blocks * BS + BS;   /* + the backup superblock */
	/* Drop the old contents, then size it sparse. */
	if (S_ISREG(st.st_mode) && (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)bytes) < 0)) {
		r = -errno;
		goto fail;
	}
	/* Give the journal its disk space now, so that on a full host file
	 * system only data writes can fail with ENOSPC, never a commit (FAT,
	 * directory and superblocks are written below, so they have theirs).
	 * A file system without fallocate keeps the journal sparse. */
	if (S_ISREG(st.st_mode) &&
	    fallocate(fd, 0, (off_t)sb.journal_start * BS, (off_t)sb.journal_blocks * BS) < 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS) {
		r = -errno;
		goto fail;
	}
	struct sfs_dev *dev;
	if ((r = sfs_filedev_from_fd(fd, bytes, &dev)))
		goto fail;
	r = sfs_format_write(dev, &sb);
	/* Durable creation: the image's size and inode (fsync, not fdatasync),
	 * then its name in the parent directory. */
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (!r)
		r = sync_parent(path);
	dev->close(dev);
	return r;
fail:
	close(fd);
	if (created)
		unlink(path);
	return r;
}

/* ---- problems (mount: fatal; fsck: reported and maybe fixed) ---------- */

__attribute__((format(printf, 2, 3)))
static int problem(struct sfs_chk *c, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	c->found++;
	if (c->strict) {
		sfs_seterr(c->err, c->errlen, "%s", text);
		return -EUCLEAN;
	}
	if (c->repair)
		c->fixed++;
	if (c->msg) {
		if (c->nmsg < 200)
			c->msg(c->arg, text);
		else if (c->nmsg == 200)
			c->msg(c->arg, "too many problems; not listing the rest");
		c->nmsg++;
	}
	return 0;
}

/* ---- allocation -------------------------------------------------------- */

uint32_t sfs_alloc_block(struct sfs *fs, uint32_t pref)
{
	if (fs->free_count == 0)
		return 0;
	uint32_t b = 0;
	if (pref >= fs->data_start && pref < fs->total && fs->fat[pref] == FAT_FREE) {
		b = pref;
	} else {
		uint32_t h = fs->alloc_hint;
		if (h < fs->data_start || h >= fs->total)
			h = fs->data_start;
		for (uint32_t i = h; i < fs->total; i++)
			if (fs->fat[i] == FAT_FREE) {
				b = i;
				break;
			}
		if (!b)
			for (uint32_t i = fs->data_start; i < h; i++)
				if (fs->fat[i] == FAT_FREE) {
					b = i;
					break;
				}
		if (!b)
			return 0;
	}
	fs->fat[b] = FAT_EOC;
	fs->free_count--;
	fs->alloc_hint = b + 1 < fs->total ? b + 1 : fs->data_start;
	sfs_mark_fat(fs, b);
	return b;
}

void sfs_free_block(struct sfs *fs, uint32_t b)
{
	fs->fat[b] = FAT_PENDING;
	fs->npend++;
	sfs_mark_fat(fs, b);
}

/* ---- names ------------------------------------------------------------- */

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

int sfs_lookup(struct sfs *fs, const char *name)
{
	for (int32_t s = fs->hhead[name_hash(name) & fs->hmask]; s >= 0; s = fs->hnext[s])
		if (strncmp(fs->dir[s].name, name, 64) == 0)
			return s;
	return -1;
}

void sfs_hash_insert(struct sfs *fs, uint32_t slot)
{
	uint32_t h = name_hash(fs->dir[slot].name) & fs->hmask;
	fs->hnext[slot] = fs->hhead[h];
	fs->hhead[h] = (int32_t)slot;
}

void sfs_hash_remove(struct sfs *fs, uint32_t slot)
{
	int32_t *p = &fs->hhead[name_hash(fs->dir[slot].name) & fs->hmask];
	while (*p >= 0) {
		if (*p == (int32_t)slot) {
			*p = fs->hnext[slot];
			fs->hnext[slot] = -1;
			return;
		}
		p = &fs->hnext[*p];
	}
}

/* Free an unlinked file's blocks from the head, in transactions that fit the
 * journal, then clear its slot. Each intermediate commit leaves a valid
 * (shorter) orphan, so a crash in between is finished at the next mount. */
int sfs_free_orphan(struct sfs *fs, uint32_t slot)
{
	struct sfs_dirent *e = &fs->dir[slot];
	int r = sfs_txn_reserve(fs, 3);
	if (r)
		return r;
	e->flags |= DE_ORPHAN;
	sfs_mark_dir(fs, slot);
	uint32_t b = e->first, n = e->nblocks;
	while (n > 0) {
		if (b < fs->data_start || b >= fs->total)
			break;   /* cannot happen on a checked image */
		if (fs->ndirty + 2 > fs->jcap) {
			e->first = b;
			e->nblocks = n;
			if (e->size > (uint64_t)n * BS)
				e->size = (uint64_t)n * BS;
			if ((r = sfs_commit(fs)))
				return r;
			sfs_mark_dir(fs, slot);
		}
		uint32_t next = fs->fat[b];
		if (next == FAT_FREE || next == FAT_PENDING || next == FAT_RESERVED)
			break;
		sfs_free_block(fs, b);
		b = next;
		n--;
	}
	memset(e, 0, sizeof *e);
	sfs_mark_dir(fs, slot);
	fs->nslots--;
	return 0;
}

/* ---- load and check ----------------------------------------------------- */

void sfs_free_meta(struct sfs *fs)
{
	free(fs->fat);
	free(fs->dir);
	free(fs->hhead);
	free(fs->hnext);
	free(fs->dirty_bm);
	free(fs->dirty);
	free(fs->jbuf);
	free(fs->hbuf);
	free(fs->ofile_by_slot);
	fs->fat = NULL;
	fs->dir = NULL;
	fs->hhead = fs->hnext = NULL;
	fs->dirty_bm = NULL;
	fs->dirty = NULL;
	fs->jbuf = fs->hbuf = NULL;
	fs->ofile_by_slot = NULL;
}

/* Check the superblock copy in buf, read from block home (0: the primary; a
 * backup must also say that it is the block just past the file system). */
static int check_super(struct sfs *fs, const uint8_t *buf, uint64_t home, struct sfs_chk *c)
{
	struct sfs_super_disk sb;
	memcpy(&sb, buf, sizeof sb);
	if (sb.magic != SB_MAGIC) {
		sfs_seterr(c->err, c->errlen, "not a SimpleFS image");
		return -EMEDIUMTYPE;
	}
	if (sb.version != SB_VERSION) {
		sfs_seterr(c->err, c->errlen, "unsupported SimpleFS version %u", sb.version);
		return -EPROTONOSUPPORT;
	}
	if (home > MAX_BLOCKS || !sfs_block_ok(buf, (uint32_t)home)) {
		sfs_seterr(c->err, c->errlen, "bad checksum in superblock");
		return -EUCLEAN;
	}
	if (home && sb.total_blocks != home) {
		sfs_seterr(c->err, c->errlen, "backup superblock not at the end of its file system");
		return -EUCLEAN;
	}
	const char *why = NULL;
	uint64_t total = sb.total_blocks;
	if (sb.block_size != BS)
		why = "block size";
	else if (total < 32 || total > MAX_BLOCKS)
		why = "total blocks";
	else if (sb.journal_start != 1 || sb.journal_blocks < JCAP_MIN + 1 ||
		 sb.journal_blocks > JCAP_MAX + 1)
		why = "journal";
	else if ((uint64_t)sb.fat_start != 1ull + sb.journal_blocks ||
		 sb.fat_blocks != div_up(total, FAT_PER_BLOCK))
		why = "FAT";
	else if (sb.max_files < MIN_FILES || sb.max_files > MAX_FILES_LIMIT ||
		 sb.dir_blocks != div_up(sb.max_files, DIR_PER_BLOCK) ||
		 (uint64_t)sb.dir_start != (uint64_t)sb.fat_start + sb.fat_blocks)
		why = "directory";
	else if ((uint64_t)sb.data_start != (uint64_t)sb.dir_start + sb.dir_blocks ||
		 sb.data_start >= total)
		why = "data start";
	else if (sb.flags != 0)
		why = "flags";
	else
		for (size_t i = sizeof sb; i < TRAILER_OFF && !why; i++)
			if (buf[i])
				why = "reserved bytes not zero";
	if (why) {
		sfs_seterr(c->err, c->errlen, "bad geometry in superblock (%s)", why);
		return -EUCLEAN;
	}
	if (total * BS > fs->dev->size) {
		sfs_seterr(c->err, c->errlen,
			   "image truncated: superblock says %llu blocks, device has %llu",
			   (unsigned long long)total, (unsigned long long)(fs->dev->size / BS));
		return -EUCLEAN;
	}
	fs->total = sb.total_blocks;
	fs->jstart = sb.journal_start;
	fs->jblocks = sb.journal_blocks;
	fs->jcap = sb.journal_blocks - 1;
	if (sfs_debug_jcap >= 4 && sfs_debug_jcap < fs->jcap)
		fs->jcap = sfs_debug_jcap;
	fs->fat_start = sb.fat_start;
	fs->fat_blocks = sb.fat_blocks;
	fs->dir_start = sb.dir_start;
	fs->dir_blocks = sb.dir_blocks;
	fs->data_start = sb.data_start;
	fs->max_files = sb.max_files;
	fs->meta_blocks = sb.fat_blocks + sb.dir_blocks;
	fs->sb = sb;
	return 0;
}

/*
 * The superblock: the primary (block 0), or when it is damaged the backup in
 * the device's last block (format puts one there; images made before the
 * backup existed have none, and then the primary's error stands). A mount
 * notes the fallback in fs->warn; fsck counts it as a problem and, repairing,
 * has the primary rewritten (fs->sb_fix). fsck also checks that the backup is
 * an exact copy when the device is laid out with one, and has it rewritten.
 */
static int load_super(struct sfs *fs, uint8_t *buf, struct sfs_chk *c)
{
	char why[160] = "";
	struct sfs_chk pc = *c;
	pc.err = why;
	pc.errlen = sizeof why;
	int r = check_super(fs, buf, 0, &pc);
	uint64_t last = fs->dev->size / BS - 1;
	if (r == 0) {
		if (c->strict || last != fs->total)
			return 0;
		/* fsck: the backup must be the primary's exact copy */
		uint8_t *want = buf + BS, *got = buf + 2 * BS;
		memset(want, 0, BS);
		memcpy(want, &fs->sb, sizeof fs->sb);
		sfs_block_seal(want, fs->total);
		if ((r = sfs_io_read(fs->dev, got, BS, last * BS)))
			return r;
		if (memcmp(want, got, BS) != 0) {
			if ((r = problem(c, "backup superblock (block %u) damaged or missing", fs->total)))
				return r;
			fs->sb_fix |= 2;
		}
		return 0;
	}
	char bwhy[160];
	pc.err = bwhy;
	pc.errlen = sizeof bwhy;
	if (fs->dev->size < 33 * (uint64_t)BS || sfs_io_read(fs->dev, buf, BS, last * BS) ||
	    check_super(fs, buf, last, &pc)) {
		sfs_seterr(c->err, c->errlen, "%s", why);   /* no usable backup: the primary's error */
		return r;
	}
	snprintf(fs->warn, sizeof fs->warn,
		 "primary superblock damaged (%s); mounted with the backup at block %llu", why,
		 (unsigned long long)last);
	if (!c->strict) {
		if ((r = problem(c, "primary superblock damaged (%s); the backup at block %llu is good",
				 why, (unsigned long long)last)))
			return r;
		fs->sb_fix |= 1;
	}
	return 0;
}

/* fsck repair: rewrite the superblock copies load_super found damaged. */
int sfs_super_repair(struct sfs *fs)
{
	if (!fs->sb_fix)
		return 0;
	uint8_t *buf = sfs_aligned_alloc(BS);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	if (fs->sb_fix & 2)
		r = sfs_super_write(fs->dev, &fs->sb, fs->total, buf);
	if (!r && (fs->sb_fix & 1))
		r = sfs_super_write(fs->dev, &fs->sb, 0, buf);
	if (!r)
		r = sfs_dev_sync(fs);
	free(buf);
	return r;
}

static int alloc_meta(struct sfs *fs)
{
	uint32_t hs = 16;
	while (hs < fs->max_files)
		hs <<= 1;
	fs->hmask = hs - 1;
	fs->fat = malloc((size_t)fs->total * sizeof(uint32_t));
	fs->dir = calloc(fs->max_files, sizeof(struct sfs_dirent));
	fs->hhead = malloc((size_t)hs * sizeof(int32_t));
	fs->hnext = malloc((size_t)fs->max_files * sizeof(int32_t));
	fs->dirty_bm = calloc(fs->meta_blocks, 1);
	fs->dirty = malloc((size_t)fs->meta_blocks * sizeof(uint32_t));
	fs->jbuf = sfs_aligned_alloc((size_t)fs->jcap * BS);
	fs->hbuf = sfs_aligned_alloc(BS);
	fs->ofile_by_slot = calloc(fs->max_files, sizeof(struct sfs_ofile *));
	if (!fs->fat || !fs->dir || !fs->hhead || !fs->hnext || !fs->dirty_bm || !fs->dirty ||
	    !fs->jbuf || !fs->hbuf || !fs->ofile_by_slot)
		return -ENOMEM;
	memset(fs->hhead, 0xff, (size_t)hs * sizeof(int32_t));
	memset(fs->hnext, 0xff, (size_t)fs->max_files * sizeof(int32_t));
	return 0;
}

static int valid_name(const char *n)
{
	size_t len = strnlen(n, 64);
	return len > 0 && len < 64 && !memchr(n, '/', len);
}

#define LOAD_CHUNK 256u

/* Load (and check) all metadata of fs->dev into fs. Strict (mount): the first
 * problem fails with -EUCLEAN. Otherwise (fsck) problems are reported, and
 * with c->repair fixed in memory and marked dirty (the caller commits). */
int sfs_load(struct sfs *fs, struct sfs_chk *c)
{
	struct sfs_dev *dev = fs->dev;
	uint8_t *buf = NULL, *owned = NULL;
	int r;
	atomic_store(&fs->sync_epoch, 1);   /* wgen 0 means "never written" */
	if (dev->size < BS) {
		sfs_seterr(c->err, c->errlen, "not a SimpleFS image (too small)");
		return -EMEDIUMTYPE;
	}
	buf = sfs_aligned_alloc(3 * BS);   /* the superblock, its backup, a compare */
	if (!buf)
		return -ENOMEM;
	if ((r = sfs_io_read(dev, buf, BS, 0))) {
		sfs_seterr(c->err, c->errlen, "cannot read superblock: %s", strerror(-r));
		goto out;
	}
	if ((r = load_super(fs, buf, c)))
		goto out;
	if ((r = alloc_meta(fs)))
		goto out;
	uint32_t chunk = fs->meta_blocks < LOAD_CHUNK ? fs->meta_blocks : LOAD_CHUNK;
	free(buf);
	if (!(buf = sfs_aligned_alloc((size_t)chunk * BS))) {
		r = -ENOMEM;
		goto out;
	}

	/* Journal recovery: a committed transaction is laid over what is read
	 * from the home locations, and (when writable) installed for real. */
	int clean;
	int jn = sfs_read_journal(fs, &clean);
	if (jn < 0) {
		r = jn;
		sfs_seterr(c->err, c->errlen, "cannot read journal: %s", strerror(-r));
		goto out;
	}
	const struct sfs_jhdr_disk *jh = (const struct sfs_jhdr_disk *)fs->hbuf;
	int writable = !fs->rdonly;
	if (writable && jn > 0) {
		for (int i = 0; i < jn; i++)
			if ((r = sfs_io_write(dev, fs->jbuf + (size_t)i * BS, BS,
					      (uint64_t)jh->ent[i].home * BS)))
				goto ioerr;
		if ((r = sfs_dev_sync(fs)))
			goto ioerr;
	}

	for (uint32_t m0 = 0; m0 < fs->meta_blocks; m0 += chunk) {
		uint32_t n = fs->meta_blocks - m0 < chunk ? fs->meta_blocks - m0 : chunk;
		if ((r = sfs_io_read(dev, buf, (size_t)n * BS, (uint64_t)(fs->fat_start + m0) * BS)))
			goto ioerr;
		for (int i = 0; i < jn; i++) {
			uint32_t m = jh->ent[i].home - fs->fat_start;
			if (m >= m0 && m < m0 + n)
				memcpy(buf + (size_t)(m - m0) * BS, fs->jbuf + (size_t)i * BS, BS);
		}
		for (uint32_t k = 0; k < n; k++) {
			uint32_t m = m0 + k;
			const uint8_t *b = buf + (size_t)k * BS;
			int isfat = m < fs->fat_blocks;
			uint32_t idx = isfat ? m : m - fs->fat_blocks;
			if (!sfs_block_ok(b, fs->fat_start + m)) {
				if ((r = problem(c, "bad checksum in %s block %u",
						 isfat ? "FAT" : "directory", idx)))
					goto out;
				if (c->repair)
					sfs_mark_meta(fs, m);
			}
			if (isfat) {
				uint64_t first = (uint64_t)idx * FAT_PER_BLOCK;
				const uint32_t *e = (const uint32_t *)b;
				for (uint32_t i = 0; i < FAT_PER_BLOCK; i++) {
					if (first + i < fs->total)
						fs->fat[first + i] = e[i];
				}
			} else {
				uint64_t first = (uint64_t)idx * DIR_PER_BLOCK;
				uint64_t cnt = DIR_PER_BLOCK;
				if (first + cnt > fs->max_files)
					cnt = fs->max_files - first;
				memcpy(&fs->dir[first], b, (size_t)cnt * DIRENT_SIZE);
			}
		}
	}
	if (writable && (jn > 0 || !clean)) {
		if ((r = sfs_write_empty_header(fs)))
			goto ioerr;
	}
	fs->jnext = 0;
	fs->installs_unsynced = 0;

	/* FAT entries. */
	for (uint64_t b = 0; b < fs->total; b++) {
		uint32_t v = fs->fat[b];
		if (b < fs->data_start) {
			if (v != FAT_RESERVED) {
				if ((r = problem(c, "FAT entry of metadata block %llu is %#x, not reserved",
						 (unsigned long long)b, v)))
					goto out;
				fs->fat[b] = FAT_RESERVED;
				if (c->repair)
					sfs_mark_fat(fs, (uint32_t)b);
			}
		} else if (v != FAT_FREE && v != FAT_EOC && (v < fs->data_start || v >= fs->total)) {
			if ((r = problem(c, "FAT entry of block %llu out of range (%#x)",
					 (unsigned long long)b, v)))
				goto out;
			fs->fat[b] = FAT_EOC;
			if (c->repair)
				sfs_mark_fat(fs, (uint32_t)b);
		}
	}

	/* Directory entries and their chains. */
	owned = calloc(((size_t)fs->total + 7) / 8, 1);
	if (!owned) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t s = 0; s < fs->max_files; s++) {
		struct sfs_dirent *e = &fs->dir[s];
		if (e->flags == 0)
			continue;
		const char *why = NULL;
		if (e->flags & ~(DE_USED | DE_ORPHAN) || !(e->flags & DE_USED))
			why = "bad flags";
		else if (!(e->flags & DE_ORPHAN) && !valid_name(e->name))
			why = "bad name";
		else if (!(e->flags & DE_ORPHAN) && sfs_lookup(fs, e->name) >= 0)
			why = "duplicate name";
		if (why) {
			if ((r = problem(c, "directory slot %u: %s; entry dropped", s, why)))
				goto out;
			memset(e, 0, sizeof *e);
			if (c->repair)
				sfs_mark_dir(fs, s);
			continue;
		}
		char nm[96];
		snprintf(nm, sizeof nm, "file %.63s (slot %u)", e->flags & DE_ORPHAN ? "(unlinked)" : e->name, s);
		if (e->size > MAX_FILE_SIZE) {
			if ((r = problem(c, "%s: size %llu too large", nm, (unsigned long long)e->size)))
				goto out;
			e->size = (uint64_t)e->nblocks * BS;
			if (e->size > MAX_FILE_SIZE)
				e->size = MAX_FILE_SIZE;
			if (c->repair)
				sfs_mark_dir(fs, s);
		}
		uint64_t maxb = div_up(e->size, BS);
		if (e->nblocks > maxb) {
			if ((r = problem(c, "%s: %u blocks for %llu bytes", nm, e->nblocks,
					 (unsigned long long)e->size)))
				goto out;
			/* cut below */
		}
		if (e->nblocks == 0 && e->first != 0) {
			if ((r = problem(c, "%s: first block set on an empty chain", nm)))
				goto out;
			e->first = 0;
			if (c->repair)
				sfs_mark_dir(fs, s);
		}
		uint32_t want = e->nblocks > maxb ? (uint32_t)maxb : e->nblocks;
		uint32_t b = e->first, prev = 0, good = 0;
		int bad = want < e->nblocks;   /* reported above */
		while (good < want) {
			if (b < fs->data_start || b >= fs->total || fs->fat[b] == FAT_FREE ||
			    (owned[b >> 3] & (1u << (b & 7)))) {
				const char *how = (b < fs->data_start || b >= fs->total) ? "out of range" :
					fs->fat[b] == FAT_FREE ? "free" :
					"already in use (cross-linked or a cycle)";
				if ((r = problem(c, "%s: block %u of the chain (%u) is %s", nm, good, b, how)))
					goto out;
				bad = 1;
				break;
			}
			owned[b >> 3] |= (uint8_t)(1u << (b & 7));
			prev = b;
			good++;
			uint32_t next = fs->fat[b];
			if (good < want) {
				if (next == FAT_EOC) {
					if ((r = problem(c, "%s: chain ends after %u of %u blocks", nm,
							 good, e->nblocks)))
						goto out;
					bad = 1;
					break;
				}
				b = next;
			}
		}
		if (!bad && good > 0 && fs->fat[prev] != FAT_EOC) {
			if ((r = problem(c, "%s: chain longer than %u blocks", nm, e->nblocks)))
				goto out;
			bad = 1;
		}
		if (bad) {
			/* Cut the chain after the good blocks; the rest become leaks. */
			if (good > 0) {
				fs->fat[prev] = FAT_EOC;
				if (c->repair)
					sfs_mark_fat(fs, prev);
			}
			if (good == 0)
				e->first = 0;
			e->nblocks = good;
			if (c->repair)
				sfs_mark_dir(fs, s);
		}
		fs->nslots++;
		if (!(e->flags & DE_ORPHAN)) {
			sfs_hash_insert(fs, s);
			fs->nfiles++;
		}
	}
	/* Leaks: allocated blocks no file owns. Harmless at mount (lost space);
	 * fsck reports and frees them. */
	fs->free_count = 0;
	for (uint64_t b = fs->data_start; b < fs->total; b++) {
		if (fs->fat[b] != FAT_FREE && !(owned[b >> 3] & (1u << (b & 7))) && !c->strict) {
			if ((r = problem(c, "block %llu is allocated but belongs to no file",
					 (unsigned long long)b)))
				goto out;
			fs->fat[b] = FAT_FREE;
			if (c->repair)
				sfs_mark_fat(fs, (uint32_t)b);
		}
		if (fs->fat[b] == FAT_FREE)
			fs->free_count++;
	}
	fs->alloc_hint = fs->data_start;
	r = 0;
	goto out;
ioerr:
	sfs_seterr(c->err, c->errlen, "device I/O error: %s", strerror(-r));
out:
	free(owned);
	free(buf);
	return r;
}
