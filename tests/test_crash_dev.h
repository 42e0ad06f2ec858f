/* SPDX-License-Identifier: MIT */
/*
 * test_crash_dev.h - the reordering crash device of the crash tests, after
 * SQLite's test6.c: reads see every write; a sync makes the writes before it
 * durable (unless the cut has happened); at the crash each piece (4 KiB, or
 * 512-byte sectors so one block can be torn) of every write pending since the
 * last sync reaches the disk or not, each on its own coin, applied in order.
 * rdev_torn() builds such a crash image without touching the device, so a
 * replayed trace can be cut at every point (tests/test_sfs_crash_file.c).
 * Shared by tests/test_sfs_crash.c and tests/test_sfs_crash_file.c. Header
 * only; it must never hide a failure (allocation failures fail the test).
 */
#ifndef TEST_CRASH_DEV_H
#define TEST_CRASH_DEV_H

#include <sfs.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/*
 * Reads see every write. A sync makes the writes before it durable, unless
 * the cut has happened. At the cut (the n-th write after arming) and after
 * it nothing more becomes durable; at the crash each 4 KiB piece of each write
 * made since the last sync (and before the cut) is kept or lost at random. */
struct pw {
	uint64_t off;
	size_t len;
	uint8_t *data;
};
struct rdev {
	struct sfs_dev d;
	uint8_t *cur, *dur;
	struct pw *pend;
	size_t npend, cap;
	uint64_t writes, cut_at;      /* cut at write cut_at (0: not armed) */
	uint64_t syncs, cut_sync;     /* or during sync cut_sync (0: not armed) */
	int cut;
};

static int r_pread(struct sfs_dev *d, void *buf, size_t len, uint64_t off)
{
	struct rdev *r = (struct rdev *)d;

	if (off > d->size || len > d->size - off)
		return -EIO;
	memcpy(buf, r->cur + off, len);
	return 0;
}

static int r_pwrite(struct sfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	struct rdev *r = (struct rdev *)d;

	if (off > d->size || len > d->size - off)
		return -EIO;
	r->writes++;
	if (r->cut_at && r->writes >= r->cut_at)
		r->cut = 1;
	memcpy(r->cur + off, buf, len);
	if (!r->cut) {
		if (r->npend == r->cap) {
			r->cap = r->cap ? 2 * r->cap : 64;
			r->pend = realloc(r->pend, r->cap * sizeof *r->pend);
			CHECK(r->pend);
		}
		r->pend[r->npend].off = off;
		r->pend[r->npend].len = len;
		r->pend[r->npend].data = malloc(len ? len : 1);
		CHECK(r->pend[r->npend].data);
		memcpy(r->pend[r->npend].data, buf, len);
		r->npend++;
	}
	return 0;
}

static inline void r_drop_pending(struct rdev *r)
{
	for (size_t i = 0; i < r->npend; i++)
		free(r->pend[i].data);
	r->npend = 0;
}

static int r_sync(struct sfs_dev *d)
{
	struct rdev *r = (struct rdev *)d;

	r->syncs++;
	if (r->cut_sync && r->syncs >= r->cut_sync)
		r->cut = 1;           /* the power fails while this sync runs */
	if (r->cut)
		return 0;
	for (size_t i = 0; i < r->npend; i++)
		memcpy(r->dur + r->pend[i].off, r->pend[i].data, r->pend[i].len);
	r_drop_pending(r);
	return 0;
}

static void r_close(struct sfs_dev *d)
{
	struct rdev *r = (struct rdev *)d;

	r_drop_pending(r);
	free(r->pend);
	free(r->cur);
	free(r->dur);
	free(r);
}

static inline struct sfs_dev *rdev_new(uint64_t size)
{
	struct rdev *r = calloc(1, sizeof *r);

	CHECK(r);
	r->cur = calloc(1, size);
	r->dur = calloc(1, size);
	CHECK(r->cur && r->dur);
	r->d.pread = r_pread;
	r->d.pwrite = r_pwrite;
	r->d.sync = r_sync;
	r->d.close = r_close;
	r->d.size = size;
	r->d.map = r->cur;
	r->d.fd = -1;
	r->d.direct = 0;
	return &r->d;
}

/* The crash: of the writes made since the last sync (and before the cut), a
 * random subset of pieces of `piece` bytes reaches the disk (4096: blocks;
 * 512: sectors, so one 4 KiB block can be torn), each piece on its own coin.
 * Writes are applied in order, so a lost piece of a later write can leave an
 * earlier write's bytes there, as a disk that flushed its cache part way would. */
enum { RDEV_KEEP_NONE, RDEV_KEEP_ALL, RDEV_KEEP_RANDOM };

/* Lay the pending writes over out (a copy of the durable bytes) as a crash
 * would leave them: none, all, or each piece on its coin (keep). */
static inline void rdev_torn(const struct rdev *r, uint8_t *out, uint64_t seed, size_t piece, int keep)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < r->npend && keep != RDEV_KEEP_NONE; i++) {
		const struct pw *p = &r->pend[i];

		for (size_t k = 0; k < p->len; k += piece) {
			size_t n = p->len - k < piece ? p->len - k : piece;

			if (keep == RDEV_KEEP_ALL || (tu_xorshift64(&x) & 1))
				memcpy(out + p->off + k, p->data + k, n);
		}
	}
}

static inline void rdev_crash(struct sfs_dev *d, uint64_t seed, size_t piece)
{
	struct rdev *r = (struct rdev *)d;

	rdev_torn(r, r->dur, seed, piece, RDEV_KEEP_RANDOM);
	r_drop_pending(r);
	memcpy(r->cur, r->dur, d->size);
	r->cut = 0;
	r->cut_at = r->cut_sync = 0;
}

#endif
