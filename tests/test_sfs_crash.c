/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS crash safety, SQLite-style: a fixed scenario of
 * creates, small and large writes, appends, overwrites, truncates down and up,
 * removes (one of an open file, one followed at once by new allocations),
 * a disk filled to -ENOSPC then partly freed, fsyncs and syncs, on a 1 MiB
 * image so allocation wraps around and reuses freed blocks, runs once to
 * count its device writes W; then for EVERY n in 1..W it runs again on a
 * fresh device whose n-th write is the power cut, crashes, and checks: fsck is clean, the image mounts, every file fsynced
 * before the cut has its fsynced bytes exactly (except ranges rewritten or
 * truncated since), sizes lie between the smallest and largest the file had
 * since, no file shows a byte of another (each file's bytes carry its tag in
 * the high nibble; zeros are allowed only where unsynced), durably removed
 * files stay removed, no unknown file appears, and the recovered fs takes new
 * writes cleanly. Pass 1 uses the library's fault device (everything since
 * the last sync is lost). Pass 2 uses this test's own device, after SQLite's
 * test6.c: at the crash each 4 KiB piece of every write made since the last
 * sync survives or not at random (reordered, torn writes), a seed per n.
 * Pass 3 runs a second scenario (multi-MiB writes, truncates and an unlink
 * of an open file) with the journal capped to 4 blocks, so operations split
 * into several transactions, at every cut point (at most 60, spread over
 * all its writes), then at 30 of them on the reordering device. Pass 4 cuts
 * the power again during the recovery (replay, orphan freeing) of every 5th
 * crash of pass 1, at each of its writes. Pass 5, for each scenario (the
 * second with the journal capped), cuts the power DURING each sync in turn
 * (the unmount's included), several seeds each, and for the first scenario
 * again during each sync of each crashed image's recovery: of the writes
 * pending since the sync before, a random subset of 512-byte sectors reaches
 * the disk (so a 4 KiB block, a log copy or the commit header, can be torn)
 * and nothing later does; what that sync was to make durable is not counted
 * as durable, everything before it is. The other passes cannot see a sync
 * that only part happened: there a sync makes all its writes durable or,
 * after the cut, none.
 *
 * It must never trust the library for what is expected: the model is memory.
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "test_crash_dev.h"

#define DEV_SIZE  (1u << 20)         /* the main scenario's image */
#define BIG_DEV   (8u << 20)         /* the split-transaction scenario's: J and K need reuse */
#define MAXF      (6u << 20)         /* largest file in either scenario */
#define NF        11

struct cf {
	const char *name;
	uint8_t tag;                 /* 1..15: the high nibble of every byte it writes */
	uint8_t *cur;                /* what the file holds now (the running model) */
	size_t cur_size;
	uint8_t *dur;                /* what it held at its last durable point */
	size_t dur_size;
	int dur_exists;              /* a durable point exists */
	uint8_t *dirty;              /* per byte: changed since the durable point */
	size_t min_size, max_size;   /* sizes held since the durable point */
	int exists;                  /* has its name now */
	int unlinked;                /* unlinked since the durable point */
	int removed_durably;         /* its removal is durable */
	int fd;
};

static struct cf F[NF] = {
	{ .name = "alpha", .tag = 1 }, { .name = "bravo", .tag = 2 },
	{ .name = "charlie", .tag = 3 }, { .name = "delta", .tag = 4 },
	{ .name = "echo", .tag = 5 }, { .name = "foxtrot", .tag = 6 },
	{ .name = "golf-open-unlinked", .tag = 7 }, { .name = "hotel", .tag = 8 },
	{ .name = "india", .tag = 9 }, { .name = "juliett", .tag = 10 },
	{ .name = "kilo", .tag = 11 },
};

/* The run in progress. */
static struct sfs_dev *dev;
static struct sfs *fs;
static int reorder;                    /* passes 2, 5: dev is an rdev */
static int sync_cut;                   /* pass 5: the cut is during a sync (rdev) */
static int big;                        /* pass 3: the split-transaction scenario */
extern unsigned sfs_debug_jcap;       /* src/sfs test knob (src/sfs/meta.c) */
static uint64_t arm_base, cut_n;       /* cut at write (pass 5: sync) arm_base + cut_n (0: never) */

/* The device events a cut is counted in: writes, or (pass 5) syncs. */
static uint64_t dev_events(void)
{
	if (!reorder)
		return sfs_faultdev_writes(dev);
	return sync_cut ? ((struct rdev *)dev)->syncs : ((struct rdev *)dev)->writes;
}

static void dev_arm(uint64_t n)
{
	struct rdev *r = (struct rdev *)dev;

	if (!reorder)
		sfs_faultdev_arm(dev, n);
	else if (sync_cut)
		r->cut_sync = n ? r->syncs + n : 0;
	else
		r->cut_at = n ? r->writes + n : 0;
}

static struct sfs_dev *dev_new(uint64_t size)
{
	return reorder ? rdev_new(size) : sfs_faultdev_new(size);
}

static void dev_crash(uint64_t seed)
{
	if (reorder)
		rdev_crash(dev, seed, sync_cut ? 512 : 4096);
	else
		sfs_faultdev_crash(dev);
}

static uint8_t pat(const struct cf *f, uint64_t pos, unsigned ver)
{
	return (uint8_t)((f->tag << 4) | ((pos * 7 + ver * 5 + 1) & 0xF));
}

/* The power is still on: what the last sync returned for is durable. */
static int durable_now(void)
{
	if (reorder)
		return !((struct rdev *)dev)->cut;
	return cut_n == 0 || dev_events() - arm_base < cut_n;
}

static void mark(struct cf *f, size_t from, size_t to)
{
	if (to > from)
		memset(f->dirty + from, 1, to - from);
}

static void size_changed(struct cf *f)
{
	if (f->cur_size < f->min_size)
		f->min_size = f->cur_size;
	if (f->cur_size > f->max_size)
		f->max_size = f->cur_size;
}

static void snapshot(struct cf *f)
{
	/* dirty bytes lie below the largest size since the last snapshot */
	memset(f->dirty, 0, f->max_size > f->dur_size ? f->max_size : f->dur_size);
	memcpy(f->dur, f->cur, f->cur_size);
	f->dur_size = f->cur_size;
	f->dur_exists = 1;
	f->min_size = f->max_size = f->cur_size;
}

/* --- scenario steps: each does it on the fs and in the model --- */

static void s_create(int i)
{
	struct cf *f = &F[i];

	f->fd = sfs_file_open(fs, f->name, SFS_O_CREAT | SFS_O_EXCL);
	if (f->fd < 0)
		FAIL("create %s: %s", f->name, strerror(-f->fd));
	f->exists = 1;
	f->cur_size = 0;
	f->min_size = 0;
}

static void s_write(int i, size_t off, size_t len, unsigned ver, size_t chunk)
{
	static uint8_t buf[MAXF];
	struct cf *f = &F[i];

	CHECK(off + len <= MAXF);
	for (size_t k = 0; k < len; k++)
		buf[k] = pat(f, off + k, ver);
	for (size_t done = 0; done < len; done += chunk) {
		size_t n = len - done < chunk ? len - done : chunk;
		ssize_t r = sfs_file_pwrite(fs, f->fd, buf + done, n, off + done);

		if (r != (ssize_t)n)
			FAIL("write %s [%zu,+%zu): %zd", f->name, off + done, n, r);
	}
	if (off > f->cur_size) {
		memset(f->cur + f->cur_size, 0, off - f->cur_size);
		mark(f, f->cur_size, off);
	}
	memcpy(f->cur + off, buf, len);
	mark(f, off, off + len);
	if (off + len > f->cur_size)
		f->cur_size = off + len;
	size_changed(f);
}

/* Appends until the disk is full: each reply must be a count (maybe short)
 * or, at the end, -ENOSPC; the model takes exactly the bytes stored. */
static void s_fill(int i, unsigned ver)
{
	static uint8_t buf[65536];
	struct cf *f = &F[i];

	for (;;) {
		size_t off = f->cur_size;
		ssize_t r;

		CHECK(off + sizeof buf <= MAXF);
		for (size_t k = 0; k < sizeof buf; k++)
			buf[k] = pat(f, off + k, ver);
		r = sfs_file_pwrite(fs, f->fd, buf, sizeof buf, off);
		if (r == -ENOSPC)
			return;
		if (r <= 0 || (size_t)r > sizeof buf)
			FAIL("filling %s at %zu: %zd", f->name, off, r);
		memcpy(f->cur + off, buf, (size_t)r);
		mark(f, off, off + (size_t)r);
		f->cur_size = off + (size_t)r;
		size_changed(f);
	}
}

static void s_truncate(int i, size_t size)
{
	struct cf *f = &F[i];
	int r = sfs_file_truncate(fs, f->fd, size);

	if (r < 0)
		FAIL("truncate %s to %zu: %s", f->name, size, strerror(-r));
	if (size > f->cur_size) {
		memset(f->cur + f->cur_size, 0, size - f->cur_size);
		mark(f, f->cur_size, size);
	} else {
		mark(f, size, f->cur_size);
	}
	f->cur_size = size;
	size_changed(f);
}

static void s_fsync(int i)
{
	struct cf *f = &F[i];
	int r = sfs_file_fsync(fs, f->fd);

	if (r < 0)
		FAIL("fsync %s: %s", f->name, strerror(-r));
	if (!durable_now())
		return;
	if (f->unlinked)
		f->removed_durably = 1;
	else
		snapshot(f);
}

static void s_sync(void)
{
	int r = sfs_sync(fs);

	if (r < 0)
		FAIL("sync: %s", strerror(-r));
	if (!durable_now())
		return;
	for (int i = 0; i < NF; i++) {
		if (F[i].unlinked)
			F[i].removed_durably = 1;
		else if (F[i].exists)
			snapshot(&F[i]);
	}
}

static void s_unlink(int i)
{
	struct cf *f = &F[i];
	int r = sfs_unlink(fs, f->name);

	if (r < 0)
		FAIL("unlink %s: %s", f->name, strerror(-r));
	f->exists = 0;
	f->unlinked = 1;
}

static void s_close(int i)
{
	int r = sfs_file_close(fs, F[i].fd);

	if (r < 0)
		FAIL("close %s: %s", F[i].name, strerror(-r));
	F[i].fd = -1;
}

/* Reads a file through its handle and compares with the running model. */
static void s_verify(int i)
{
	static uint8_t buf[MAXF + 1];
	struct cf *f = &F[i];
	ssize_t r = sfs_file_pread(fs, f->fd, buf, sizeof buf, 0);

	if (r != (ssize_t)f->cur_size || memcmp(buf, f->cur, f->cur_size))
		FAIL("in-run read of %s differs (got %zd bytes, expected %zu)", f->name, r, f->cur_size);
}

enum { A, B, C, D, E, Fx, G, H, I, J, K };

static void scenario(void)
{
	s_create(A);
	s_write(A, 0, 10000, 0, 10000);
	s_fsync(A);

	s_create(B);
	s_write(B, 0, 200000, 0, 200000);           /* one large write */
	s_fsync(B);

	s_write(A, 10000, 5000, 1, 5000);           /* append */
	s_write(A, 100, 4100, 2, 4100);             /* overwrite across a block edge */
	s_fsync(A);

	s_create(C);
	s_write(C, 0, 100, 0, 100);                 /* never synced */

	s_truncate(B, 5000);                        /* down, inside block 1 */
	s_fsync(B);
	s_truncate(B, 20000);                       /* up: zeros */
	s_write(B, 30000, 100, 1, 100);             /* past the end: a hole */
	s_fsync(B);
	s_verify(B);

	s_create(G);                                /* open, unlinked, still used */
	s_write(G, 0, 65536, 0, 65536);
	s_fsync(G);
	s_unlink(G);
	s_write(G, 65536, 16384, 1, 4096);
	s_verify(G);
	s_fsync(G);

	s_unlink(C);                                /* created and removed unsynced */
	s_close(C);

	s_create(E);
	s_write(E, 0, 102400, 0, 4096);             /* many small writes */
	s_sync();
	s_close(G);                                 /* last close frees G's blocks */

	s_write(E, 50000, 10000, 1, 10000);         /* overwrite, unsynced */
	s_truncate(A, 0);
	s_write(A, 0, 3000, 3, 3000);
	s_fsync(A);

	s_create(Fx);
	s_write(Fx, 0, 300000, 0, 65536);           /* large, never synced */

	s_create(H);
	s_write(H, 0, 8192, 0, 8192);
	s_fsync(H);
	s_unlink(H);
	s_close(H);
	s_sync();                                   /* H's removal is durable */

	s_create(D);
	s_write(D, 0, 50000, 0, 50000);
	s_truncate(D, 1000);
	s_write(D, 2000, 40000, 1, 40000);
	s_fsync(D);
	s_verify(D);
	s_write(D, 5000, 3000, 2, 3000);            /* in place only, then fsync */
	s_fsync(D);
	s_truncate(D, 60000);                       /* a size change only, then fsync */
	s_fsync(D);
	s_truncate(D, 41000);                       /* down inside the last block */
	s_fsync(D);
	s_write(A, 10, 20, 4, 20);
	s_sync();

	s_write(B, 30100, 51200, 2, 51200);         /* append, unsynced */
	s_truncate(E, 30000);                       /* truncate down, unsynced */
	s_verify(E);

	/* Free blocks and allocate at once: E's blocks are freed by an unlink
	 * that is not yet committed while I allocates; until the commit, E
	 * still owns them on disk and must not show I's bytes. */
	s_close(E);
	s_close(Fx);
	s_unlink(E);
	s_unlink(Fx);
	s_create(I);
	s_write(I, 0, 400000, 0, 32768);
	s_fsync(I);
	s_write(I, 100000, 20000, 1, 20000);        /* overwrite in place, unsynced */

	/* The disk runs full; space freed by a truncate that is not committed
	 * yet must still serve the next write (after a commit inside it). */
	s_create(J);
	s_fill(J, 0);
	s_fsync(J);
	s_truncate(J, 10000);
	s_write(A, 3000, 50000, 5, 50000);
	s_fsync(A);
	s_verify(J);
}

/* The split-transaction scenario: run with the journal capped to 4 blocks
 * (sfs_debug_jcap) on an 8 MiB image, so one write, truncate or unlink
 * touches more FAT and directory blocks than a transaction holds and must be
 * split into transactions that are each consistent. */
static void scenario_big(void)
{
	s_create(J);
	s_write(J, 0, 5u << 20, 0, 1u << 20);       /* spans two FAT blocks */
	s_fsync(J);
	s_create(K);
	s_write(K, 0, 6000, 0, 6000);
	s_fsync(K);
	s_truncate(J, 100000);                      /* frees across two FAT blocks */
	s_write(K, 6000, 5u << 20, 1, 5u << 20);    /* one call; needs J's freed blocks */
	s_fsync(K);
	s_write(J, 100000, 300000, 1, 300000);
	s_unlink(K);                                /* open: freed at close */
	s_write(J, 0, 1000, 2, 1000);
	s_close(K);
	s_fsync(J);
	s_write(J, 4608u << 10, 1000, 3, 1000);     /* far past the end: a long hole */
	s_fsync(J);
	s_truncate(J, 0);
}

/* --- checking after the crash --- */

static int nfail;
static char why[512];

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	return -1;
}

static void fsck_msg(void *arg, const char *text)
{
	char *acc = arg;
	size_t l = strlen(acc);

	if (l < 400)
		snprintf(acc + l, 512 - l, "%s%s", l ? "; " : "", text);
}

static int fsck_ok(const char *when)
{
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "", msgs[512] = "";
	int r = sfs_fsck_dev(dev, 0, &res, fsck_msg, msgs, err, sizeof err);

	if (r < 0)
		return bad("fsck %s: %s (%s)", when, strerror(-r), err);
	if (res.errors_found)
		return bad("fsck %s: %u errors: %s", when, res.errors_found, msgs);
	return 0;
}

static int check_file(struct sfs *m, struct cf *f, const struct sfs_stat *st)
{
	static uint8_t buf[MAXF + 1];
	int fd;
	ssize_t n;

	if (f->removed_durably)
		return bad("%s: durably removed, but back", f->name);
	if (st->size < f->min_size || st->size > f->max_size)
		return bad("%s: size %" PRIu64 " outside [%zu, %zu]", f->name, st->size,
			   f->min_size, f->max_size);
	fd = sfs_file_open(m, f->name, SFS_O_RDONLY);
	if (fd < 0)
		return bad("%s: open: %s", f->name, strerror(-fd));
	n = sfs_file_pread(m, fd, buf, sizeof buf, 0);
	sfs_file_close(m, fd);
	if (n != (ssize_t)st->size)
		return bad("%s: read %zd bytes of %" PRIu64, f->name, n, st->size);
	for (size_t p = 0; p < (size_t)n; p++) {
		if (f->dur_exists && p < f->dur_size && !f->dirty[p]) {
			if (buf[p] != f->dur[p])
				return bad("%s: fsynced byte %zu is 0x%02x, expected 0x%02x", f->name, p,
					   buf[p], f->dur[p]);
		} else if (buf[p] != 0 && buf[p] >> 4 != f->tag) {
			return bad("%s: byte %zu is 0x%02x: %s", f->name, p, buf[p],
				   buf[p] >> 4 < NF + 1 && buf[p] >> 4 ?
				   "ANOTHER FILE'S BYTE" : "garbage");
		}
	}
	return 0;
}

/* Everything after the crash; 0 or -1 with why[] set. */
static int check_after_crash(void)
{
	struct sfs *m;
	struct sfs_stat st;
	char err[256] = "";
	uint32_t cookie = 0;
	int seen[NF] = { 0 };
	int r, fd;
	uint64_t used = 0;
	uint32_t nfiles = 0;
	struct sfs_statfs sf;

	if (fsck_ok("after the crash") < 0)
		return -1;
	r = sfs_mount_dev(dev, 0, 0, &m, err, sizeof err);
	if (r < 0)
		return bad("mount: %s (%s)", strerror(-r), err);
	while ((r = sfs_readdir(m, &cookie, &st)) == 1) {
		int i;

		used += st.blocks;
		nfiles++;

		for (i = 0; i < NF && strcmp(F[i].name, st.name); i++)
			;
		if (i == NF) {
			sfs_unmount(m);
			return bad("unknown file '%.64s'", st.name);
		}
		seen[i] = 1;
		if (check_file(m, &F[i], &st) < 0) {
			sfs_unmount(m);
			return -1;
		}
	}
	if (r < 0) {
		sfs_unmount(m);
		return bad("readdir: %s", strerror(-r));
	}
	for (int i = 0; i < NF; i++) {
		if (!seen[i] && F[i].dur_exists && !F[i].unlinked) {
			sfs_unmount(m);
			return bad("%s: fsynced, never removed, and missing", F[i].name);
		}
	}
	/* no space is lost: unlinked-open files were freed by the recovery */
	r = sfs_statfs(m, &sf);
	if (r < 0 || sf.files != nfiles || used + sf.free_blocks != sf.data_blocks) {
		sfs_unmount(m);
		return bad("space after recovery: %u files listed, statfs says %u; %" PRIu64
			   " blocks in files + %" PRIu64 " free != %" PRIu64 " data blocks",
			   nfiles, sf.files, used, sf.free_blocks, sf.data_blocks);
	}
	/* the recovered fs is usable */
	fd = sfs_file_open(m, "after-crash", SFS_O_CREAT);
	if (fd >= 0) {
		ssize_t w = sfs_file_pwrite(m, fd, "new", 3, 0);

		if (w != 3 && !(w == -ENOSPC && sf.free_blocks == 0))
			fd = -1;          /* failed although there was room */
		if (sfs_file_close(m, fd) < 0)
			fd = -1;
	}
	if (fd < 0) {
		sfs_unmount(m);
		return bad("writing after recovery failed");
	}
	r = sfs_unmount(m);
	if (r < 0)
		return bad("unmount after recovery: %s", strerror(-r));
	return fsck_ok("after recovery and a new file");
}

static void reset_model(void)
{
	for (int i = 0; i < NF; i++) {
		struct cf *f = &F[i];

		if (!f->cur) {
			f->cur = malloc(MAXF);
			f->dur = malloc(MAXF);
			f->dirty = calloc(1, MAXF);
			CHECK(f->cur && f->dur && f->dirty);
		}
		memset(f->dirty, 0, f->max_size > f->dur_size ? f->max_size : f->dur_size);
		f->cur_size = f->dur_size = 0;
		f->dur_exists = f->exists = f->unlinked = f->removed_durably = 0;
		f->min_size = f->max_size = 0;
		f->fd = -1;
	}
}

/* One run with the cut at write n (pass 5: during sync n) of the scenario
 * (0: none); returns the writes (syncs) the scenario and its unmount made. */
static uint64_t run(uint64_t n)
{
	uint64_t size = big ? BIG_DEV : DEV_SIZE;
	char err[256] = "";
	int r;

	reset_model();
	dev = dev_new(size);
	CHECK(dev);
	r = sfs_format_dev(dev, 64);
	if (r < 0)
		FAIL("format_dev: %s", strerror(-r));
	CHECK(dev->sync(dev) == 0);
	arm_base = dev_events();
	cut_n = n;
	dev_arm(n);
	r = sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err);
	if (r < 0)
		FAIL("mount before the scenario: %s (%s)", strerror(-r), err);
	if (big)
		scenario_big();
	else
		scenario();
	r = sfs_unmount(fs);
	if (r < 0)
		FAIL("unmount: %s", strerror(-r));
	if (durable_now()) {           /* unmount makes everything durable */
		for (int i = 0; i < NF; i++) {
			if (F[i].unlinked)
				F[i].removed_durably = 1;
			else if (F[i].exists)
				snapshot(&F[i]);
		}
	}
	return dev_events() - arm_base;
}

static unsigned first_seed;            /* SFS_CRASH_FIRST_SEED */

/* The cut points of one pass: all of them, or (max != 0) max of them spread
 * evenly over 1..w, each with seeds crashes (seeds first_seed, +1, ...);
 * returns the number that failed. */
static int pass(uint64_t w, unsigned seeds, uint64_t max)
{
	int fails = 0;
	uint64_t points = max && max < w ? max : w;

	for (uint64_t k = 0; k < points; k++) {
		uint64_t n = points == w ? k + 1 : 1 + k * w / points + (k * 7919) % (w / points);

		for (unsigned seed = 0; seed < seeds; seed++) {
			uint64_t w2 = run(n);

			if (w2 != w)
				FAIL("cut at %" PRIu64 ": the scenario made %" PRIu64 " %s, not %"
				     PRIu64 " (not deterministic)", n, w2, sync_cut ? "syncs" : "writes", w);
			dev_crash((n << 32) + first_seed + seed);
			if (check_after_crash() < 0) {
				fails++;
				if (nfail + fails <= 15)
					fprintf(stderr, "%s%s cut %s %" PRIu64 "/%" PRIu64 " (seed %u): %s\n",
						big ? "split scenario, " : "", reorder ? "reordering device:" :
						"fault device:", sync_cut ? "during sync" : "at write", n, w,
						first_seed + seed, why);
			}
			sfs_dev_free(dev);
		}
	}
	return fails;
}

/* Pass 4: a power cut during the recovery itself. For every step-th cut
 * point of the scenario, the crashed image is mounted and unmounted (journal
 * replay, orphan freeing) with a second cut at each of those writes (pass 5:
 * during each of those syncs), crashed again, and must then satisfy the same
 * checks. Returns the failures. */
static int pass_recovery(const char *what, uint64_t w, uint64_t step)
{
	static uint8_t crashed[DEV_SIZE];
	int fails = 0;
	uint64_t tried = 0;

	for (uint64_t n = 1; n <= w; n += step) {
		uint64_t rw = 0;

		CHECK_EQ(run(n), w);
		dev_crash((n << 32) + first_seed);
		CHECK_EQ(dev->pread(dev, crashed, DEV_SIZE, 0), 0);
		sfs_dev_free(dev);
		for (uint64_t m = 0; m == 0 || m <= rw; m++) {
			struct sfs *r;
			char err[256];
			uint64_t base;

			dev = dev_new(DEV_SIZE);
			CHECK(dev);
			CHECK_EQ(dev->pwrite(dev, crashed, DEV_SIZE, 0), 0);
			CHECK_EQ(dev->sync(dev), 0);
			base = dev_events();
			dev_arm(m);
			if (sfs_mount_dev(dev, 0, 0, &r, err, sizeof err) == 0)
				sfs_unmount(r);
			if (m == 0) {
				rw = dev_events() - base;
			} else {
				dev_crash((n << 40) + (m << 20) + first_seed + 1);
				tried++;
				if (check_after_crash() < 0) {
					fails++;
					if (nfail + fails <= 15)
						fprintf(stderr, "%s: cut %s %" PRIu64 ", then %s %" PRIu64 "/%"
							PRIu64 ": %s\n", what,
							sync_cut ? "during sync" : "at write", n,
							sync_cut ? "during recovery sync" : "at recovery write",
							m, rw, why);
				}
			}
			sfs_dev_free(dev);
		}
	}
	printf("%s: %d of %" PRIu64 " crashes failed\n", what, fails, tried);
	return fails;
}

/* Pass 5: the power fails DURING a sync. For every sync of the scenario
 * (its unmount's included), seeds crashes: of the writes pending at that sync
 * (made since the sync before), a random subset of 512-byte sectors reaches
 * the disk (rdev_crash), and nothing after it does. Returns the failures. */
static int pass_sync(const char *what, unsigned seeds)
{
	uint64_t s;
	int fails;

	reorder = sync_cut = 1;
	s = run(0);
	sfs_dev_free(dev);
	CHECK(s > 5);
	fails = pass(s, seeds, 0);
	printf("pass 5 (%s: power cut during each of %" PRIu64 " syncs, random 512-byte sectors "
	       "of the pending writes kept): %d of %" PRIu64 " crashes failed\n", what, s, fails,
	       s * seeds);
	if (!big)
		fails += pass_recovery("pass 5 (a second cut during each sync of the recovery)", s, 1);
	reorder = sync_cut = 0;
	return fails;
}

static unsigned env_unsigned(const char *name, unsigned dflt)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return dflt;
	x = strtoul(v, &end, 10);
	if (*end || x > 1000000)
		FAIL("%s=%s: not a number up to 1000000", name, v);
	return (unsigned)x;
}

/* Knobs (environment): SFS_CRASH_SEEDS, crashes per sync point in pass 5
 * (default 3, as `make test` runs it; at least 1), and SFS_CRASH_FIRST_SEED
 * (default 0), the first of them. The long pass (about 100 s; docs/FORMAT.md):
 *   make -j2 all && SFS_CRASH_SEEDS=100 ./obj/t/test_sfs_crash */
int main(void)
{
	uint64_t w;
	int f1, f2;
	unsigned seeds = env_unsigned("SFS_CRASH_SEEDS", 3);

	first_seed = env_unsigned("SFS_CRASH_FIRST_SEED", 0);
	if (seeds == 0)
		FAIL("SFS_CRASH_SEEDS=0: pass 5 needs at least one seed");

	/* Counting run, no cut: everything is durable and exact. */
	w = run(0);
	sfs_faultdev_crash(dev);
	if (check_after_crash() < 0)
		FAIL("no cut at all: %s", why);
	for (int i = 0; i < NF; i++)
		if (F[i].exists && (F[i].min_size != F[i].cur_size || F[i].max_size != F[i].cur_size))
			FAIL("%s: the clean unmount left it unsynced in the model", F[i].name);
	sfs_dev_free(dev);
	printf("scenario: %" PRIu64 " device writes\n", w);
	CHECK(w > 20);

	f1 = pass(w, 1, 0);
	nfail += f1;
	printf("pass 1 (fault device, lose all since the last sync): %d of %" PRIu64 " cut points failed\n",
	       f1, w);
	reorder = 1;
	f2 = pass(w, 1, 0);
	nfail += f2;
	printf("pass 2 (reordering device, random surviving pieces): %d of %" PRIu64 " crashes failed\n",
	       f2, w);

	reorder = 0;
	nfail += pass_recovery("pass 4 (a second cut during recovery)", w, 5);
	nfail += pass_sync("main scenario", seeds);

	/* Pass 3: split transactions, every cut point. */
	int f3;

	reorder = 0;
	big = 1;
	sfs_debug_jcap = 4;
	w = run(0);
	sfs_faultdev_crash(dev);
	if (check_after_crash() < 0)
		FAIL("split scenario, no cut: %s", why);
	sfs_dev_free(dev);
	f3 = pass(w, 1, 60);
	nfail += f3;
	printf("pass 3 (journal capped to 4 blocks, 8 MiB image): %d of %" PRIu64
	       " cut points (of %" PRIu64 ") failed\n", f3, w < 60 ? w : 60, w);
	reorder = 1;
	f3 = pass(w, 1, 30);
	nfail += f3;
	reorder = 0;
	sfs_debug_jcap = 0;
	printf("pass 3 on the reordering device: %d of %" PRIu64 " crashes failed\n", f3,
	       w < 30 ? w : 30);
	sfs_debug_jcap = 4;
	nfail += pass_sync("split scenario", seeds);
	sfs_debug_jcap = 0;
	big = 0;
	for (int i = 0; i < NF; i++) {
		free(F[i].cur);
		free(F[i].dur);
		free(F[i].dirty);
	}
	if (nfail) {
		fprintf(stderr, "FAIL: %d crashes did not recover correctly\n", nfail);
		return 1;
	}
	printf("ok\n");
	return 0;
}
