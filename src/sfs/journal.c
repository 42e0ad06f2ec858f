/* SPDX-License-Identifier: MIT */
/*
 * journal.c - SimpleFS's write-ahead journal: the running transaction's dirty
 * metadata blocks, commit (log, header as the commit point, install), device
 * syncs that remember a failure (fsyncgate), reading the journal for
 * recovery (replayed by sfs_load in meta.c) and leaving it empty at unmount.
 *
 * Invariants kept here (docs/FORMAT.md has the full list):
 *  - metadata blocks (FAT, directory) reach their home location only through
 *    a committed journal transaction;
 *  - a block freed in the running transaction stays FAT_PENDING until its
 *    transaction is committed;
 *  - a transaction's log slots are reused only once its installs are durable.
 * Must never print, never trust a byte read from the device before checking
 * it, and never write a transaction that does not fit the journal.
 */
#include <stdlib.h>
#include <time.h>
#include "sfs_int.h"

/* ---- transaction bookkeeping ------------------------------------------ */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}


void sfs_mark_meta(struct sfs *fs, uint32_t m)
{
	if (!fs->dirty_bm[m]) {
		if (fs->ndirty == 0)
			fs->txn_start_ns = mono_ns();
		fs->dirty_bm[m] = 1;
		fs->dirty[fs->ndirty++] = m;
	}
}

void sfs_mark_fat(struct sfs *fs, uint32_t block)
{
	sfs_mark_meta(fs, block / FAT_PER_BLOCK);
}

void sfs_mark_dir(struct sfs *fs, uint32_t slot)
{
	sfs_mark_meta(fs, fs->fat_blocks + slot / DIR_PER_BLOCK);
}

/* Make room for n more dirty blocks in the running transaction, committing
 * it first if it is near the journal's capacity or older than
 * SFS_COMMIT_AGE_NS (so metadata never lags far behind without fsync). */
int sfs_txn_reserve(struct sfs *fs, uint32_t n)
{
	if (fs->failed)
		return -EIO;
	if (fs->ndirty + n > fs->jcap)
		return sfs_commit(fs);
	if (fs->ndirty && mono_ns() - fs->txn_start_ns > SFS_COMMIT_AGE_NS)
		return sfs_commit(fs);
	return 0;
}

/* Serialize metadata block m (index from fat_start) into buf, sealed. */
static void serialize(struct sfs *fs, uint32_t m, uint8_t *buf)
{
	memset(buf, 0, BS);
	if (m < fs->fat_blocks) {
		uint32_t *e = (uint32_t *)buf;
		uint64_t first = (uint64_t)m * FAT_PER_BLOCK;
		for (uint32_t i = 0; i < FAT_PER_BLOCK && first + i < fs->total; i++) {
			uint32_t v = fs->fat[first + i];
			e[i] = v == FAT_PENDING ? FAT_FREE : v;
		}
	} else {
		uint64_t first = (uint64_t)(m - fs->fat_blocks) * DIR_PER_BLOCK;
		uint64_t n = DIR_PER_BLOCK;
		if (first + n > fs->max_files)
			n = fs->max_files - first;
		memcpy(buf, &fs->dir[first], (size_t)n * DIRENT_SIZE);
	}
	sfs_block_seal(buf, fs->fat_start + m);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/*
 * Sync the device and remember a failure, because the kernel does not: after
 * a failed fdatasync the image's dirty pages may be dropped and marked clean,
 * and the next fdatasync returns 0 although the data never reached the disk
 * (PostgreSQL's "fsyncgate"). So every open file written since the last good
 * sync keeps the error (werr) and the mount does (sync_err). A write stamps
 * its file with the epoch current when its data was written; the sync takes
 * the next epoch first, so a write stamped with an epoch <= ours was written
 * before this sync began, and one that races with it is counted with the
 * next. Callers hold the fs lock, shared or exclusive (open_list is stable).
 * A failed sync may also lose metadata written since the last good one: the
 * last commit's installs. The journal header still names that transaction,
 * so before anything may replace the header (the next commit, unmount) it is
 * installed again from the journal and synced (reinstall()). (Inside a
 * commit a failed sync fails the mount anyway; and a data-only fsync runs
 * with no transaction pending, so no uncommitted allocation depends on lost
 * data.)
 */
int sfs_dev_sync(struct sfs *fs)
{
	uint64_t good = atomic_load(&fs->synced_epoch);
	uint64_t e = atomic_fetch_add(&fs->sync_epoch, 1);
	int r = fs->dev->sync(fs->dev);
	if (r == 0) {
		atomic_store(&fs->installs_unsynced, 0);
		uint64_t s = good;
		while (s < e && !atomic_compare_exchange_weak(&fs->synced_epoch, &s, e))
			;
		return 0;
	}
	int zero = 0;
	atomic_compare_exchange_strong(&fs->sync_err, &zero, r);
	/* The last commit's installs may be lost with the rest: the journal
	 * still holds them; the next commit installs them again first. */
	if (atomic_load(&fs->installs_unsynced))
		atomic_store(&fs->reinstall, 1);
	for (struct sfs_ofile *of = fs->open_list; of; of = of->next) {
		uint64_t w = atomic_load(&of->wgen);
		zero = 0;
		if (w > good && w <= e)
			atomic_compare_exchange_strong(&of->werr, &zero, r);
	}
	return r;
}

static int fail(struct sfs *fs, int r)
{
	fs->failed = 1;
	return r < 0 ? r : -EIO;
}

/* Write one transaction of n blocks (list sorted) through the journal. */
static int commit_part(struct sfs *fs, const uint32_t *list, uint32_t n)
{
	struct sfs_dev *dev = fs->dev;
	int r;
	if (fs->jnext + n > fs->jcap) {
		/* Wrapping: the previous transaction's log slots may be reused
		 * only once its installs are durable. */
		if (fs->installs_unsynced && (r = sfs_dev_sync(fs)))
			return fail(fs, r);
		fs->installs_unsynced = 0;
		fs->jnext = 0;
	}
	for (uint32_t i = 0; i < n; i++)
		serialize(fs, list[i], fs->jbuf + (size_t)i * BS);
	uint64_t logoff = (uint64_t)(fs->jstart + 1 + fs->jnext) * BS;
	if ((r = sfs_io_write(dev, fs->jbuf, (size_t)n * BS, logoff)))
		return fail(fs, r);
	if ((r = sfs_dev_sync(fs)))   /* log copies + earlier data + earlier installs */
		return fail(fs, r);
	fs->installs_unsynced = 0;
	struct sfs_jhdr_disk *h = (struct sfs_jhdr_disk *)fs->hbuf;
	memset(fs->hbuf, 0, BS);
	h->magic = JH_MAGIC;
	h->seq = fs->seq + 1;
	h->count = n;
	h->start = fs->jnext;
	for (uint32_t i = 0; i < n; i++) {
		h->ent[i].home = fs->fat_start + list[i];
		memcpy(&h->ent[i].crc, fs->jbuf + (size_t)i * BS + BS - 4, 4);
	}
	sfs_block_seal(fs->hbuf, fs->jstart);
	if ((r = sfs_io_write(dev, fs->hbuf, BS, (uint64_t)fs->jstart * BS)))
		return fail(fs, r);
	if ((r = sfs_dev_sync(fs)))   /* the commit point */
		return fail(fs, r);
	fs->seq++;
	/* Install, coalescing runs of consecutive home blocks. */
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i + 1;
		while (j < n && list[j] == list[j - 1] + 1)
			j++;
		if ((r = sfs_io_write(dev, fs->jbuf + (size_t)i * BS, (size_t)(j - i) * BS,
				      (uint64_t)(fs->fat_start + list[i]) * BS)))
			return fail(fs, r);
		i = j;
	}
	fs->jnext += n;
	fs->installs_unsynced = 1;
	return 0;
}

/* Copy mtimes set by shared-lock writes into directory entries, while the
 * transaction has room (they are not critical; the rest wait). */
static void flush_mtimes(struct sfs *fs)
{
	for (struct sfs_ofile *of = fs->open_list; of; of = of->next) {
		if (!atomic_load(&of->mdirty))
			continue;
		uint32_t m = fs->fat_blocks + of->slot / DIR_PER_BLOCK;
		if (!fs->dirty_bm[m] && fs->ndirty >= fs->jcap)
			continue;
		atomic_store(&of->mdirty, 0);
		uint64_t t = atomic_load(&of->mtime);
		if (t > fs->dir[of->slot].mtime_ns)
			fs->dir[of->slot].mtime_ns = t;
		sfs_mark_meta(fs, m);
	}
}

/* A failed sync lost the last commit's installs (sfs_dev_sync): install that
 * transaction again from the journal, where it is durable and still named by
 * the header, and sync, before the header may be replaced. Uses jbuf/hbuf,
 * which are free between commits. */
static int reinstall(struct sfs *fs)
{
	int clean, r;
	int n = sfs_read_journal(fs, &clean);
	if (n < 0)
		return n;
	const struct sfs_jhdr_disk *h = (const struct sfs_jhdr_disk *)fs->hbuf;
	for (int i = 0; i < n; i++)
		if ((r = sfs_io_write(fs->dev, fs->jbuf + (size_t)i * BS, BS, (uint64_t)h->ent[i].home * BS)))
			return r;
	if ((r = sfs_dev_sync(fs)))
		return r;
	atomic_store(&fs->reinstall, 0);
	return 0;
}

int sfs_commit(struct sfs *fs)
{
	if (fs->failed)
		return -EIO;
	if (fs->rdonly)
		return 0;
	int rr;
	if (atomic_load(&fs->reinstall) && (rr = reinstall(fs)))
		return fail(fs, rr);
	flush_mtimes(fs);
	if (fs->ndirty == 0)
		return 0;
	qsort(fs->dirty, fs->ndirty, sizeof fs->dirty[0], cmp_u32);
	for (uint32_t i = 0; i < fs->ndirty;) {
		uint32_t n = fs->ndirty - i < fs->jcap ? fs->ndirty - i : fs->jcap;
		int r = commit_part(fs, fs->dirty + i, n);
		if (r)
			return r;
		i += n;
	}
	/* Blocks freed in this transaction become allocatable now. */
	for (uint32_t i = 0; i < fs->ndirty; i++) {
		uint32_t m = fs->dirty[i];
		fs->dirty_bm[m] = 0;
		if (m >= fs->fat_blocks || !fs->npend)
			continue;
		uint64_t first = (uint64_t)m * FAT_PER_BLOCK;
		for (uint32_t k = 0; k < FAT_PER_BLOCK && first + k < fs->total; k++) {
			if (fs->fat[first + k] == FAT_PENDING) {
				fs->fat[first + k] = FAT_FREE;
				fs->free_count++;
				fs->npend--;
			}
		}
	}
	fs->ndirty = 0;
	return 0;
}

/* ---- recovery and unmount ---------------------------------------------- */

/* Read the journal. Returns the number of valid logged blocks now in jbuf
 * (homes in hbuf's header), 0 if none, or -errno on I/O failure. *clean is
 * set when the header is a valid empty one. */
int sfs_read_journal(struct sfs *fs, int *clean)
{
	struct sfs_dev *dev = fs->dev;
	int r = sfs_io_read(dev, fs->hbuf, BS, (uint64_t)fs->jstart * BS);
	*clean = 0;
	if (r)
		return r;
	struct sfs_jhdr_disk *h = (struct sfs_jhdr_disk *)fs->hbuf;
	if (h->magic != JH_MAGIC || !sfs_block_ok(fs->hbuf, fs->jstart))
		return 0;   /* torn or never written: nothing committed */
	fs->seq = h->seq;
	if (h->count == 0) {
		*clean = 1;
		return 0;
	}
	uint32_t cap = fs->jblocks - 1;   /* the on-disk capacity, not a tuned-down one */
	if (h->count > cap || h->start > cap || h->count > cap - h->start)
		return 0;
	for (uint32_t i = 0; i < h->count; i++)
		if (h->ent[i].home < fs->fat_start || h->ent[i].home >= fs->data_start)
			return 0;
	r = sfs_io_read(dev, fs->jbuf, (size_t)h->count * BS,
			(uint64_t)(fs->jstart + 1 + h->start) * BS);
	if (r)
		return r;
	for (uint32_t i = 0; i < h->count; i++) {
		const uint8_t *b = fs->jbuf + (size_t)i * BS;
		uint32_t crc;
		memcpy(&crc, b + BS - 4, 4);
		if (crc != h->ent[i].crc || !sfs_block_ok(b, h->ent[i].home))
			return 0;   /* incomplete transaction: drop it whole */
	}
	return (int)h->count;
}

int sfs_write_empty_header(struct sfs *fs)
{
	memset(fs->hbuf, 0, BS);
	struct sfs_jhdr_disk *h = (struct sfs_jhdr_disk *)fs->hbuf;
	h->magic = JH_MAGIC;
	h->seq = fs->seq;
	sfs_block_seal(fs->hbuf, fs->jstart);
	int r = sfs_io_write(fs->dev, fs->hbuf, BS, (uint64_t)fs->jstart * BS);
	if (!r)
		r = sfs_dev_sync(fs);
	return r;
}

/* Commit, make everything durable, and leave the journal empty (unmount,
 * fsck repair). */
int sfs_finish(struct sfs *fs)
{
	if (fs->rdonly)
		return 0;
	if (fs->failed)
		return -EIO;
	int r = sfs_commit(fs);
	if (!r)
		r = sfs_dev_sync(fs);
	if (!r)
		r = sfs_write_empty_header(fs);
	if (r)
		fs->failed = 1;
	return r;
}
