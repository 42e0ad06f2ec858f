/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS against damaged and hostile images, corrupted by hand
 * from docs/FORMAT.md: bad magic, unknown version, bad superblock checksum,
 * impossible geometry, geometry bigger than the device/file, truncated and
 * tiny images, bad FAT/directory checksums, FAT cycles, cross-linked chains,
 * out-of-range block numbers, bad directory entries, hand-made journal
 * transactions (a valid one is replayed, torn or hostile ones are dropped),
 * a valid block at the wrong home, leaked blocks, and thousands of random
 * corruptions (most resealed so they pass the checksums; a block left with a
 * bad checksum is never mounted; both outcomes occur often). Mount must fail with the right error or succeed; fsck must
 * report; fsck -y must fix what it reports (a second check is clean) and the
 * image then mounts; a check-only fsck and a read-only mount never write;
 * fsck -y cut by a power cut at any of its writes leaves an image a second
 * fsck -y repairs; nothing may crash (run it under ASan too).
 *
 * It must never use the library's own format code to make the damage.
 */
#include <sfs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define BS        4096u
#define IMG_SIZE  (1u << 20)
#define FAT_PER   1022u
#define DIR_PER   31u
#define DE_SIZE   128u
#define EOC       0xFFFFFFFFu

/* ---- the format, from docs/FORMAT.md ---- */
/* crc32c(): testutil.h */
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static void set32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void set64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static uint8_t base[IMG_SIZE];    /* the pristine image */
static uint8_t img[IMG_SIZE];     /* the one being damaged */

/* geometry of base */
static uint32_t total, jstart, jblocks, fat_start, fat_blocks, dir_start, dir_blocks, data_start;

static uint8_t *blk(uint32_t b) { return img + (size_t)b * BS; }
static void seal(uint32_t b)
{
	set32(blk(b) + BS - 8, b);
	set32(blk(b) + BS - 4, crc32c(blk(b), BS - 4));
}
static uint32_t fat_get(uint32_t b) { return get32(blk(fat_start + b / FAT_PER) + (b % FAT_PER) * 4); }
static void fat_set(uint32_t b, uint32_t v)
{
	set32(blk(fat_start + b / FAT_PER) + (b % FAT_PER) * 4, v);
	seal(fat_start + b / FAT_PER);
}
static uint8_t *dirent(uint32_t slot) { return blk(dir_start + slot / DIR_PER) + (slot % DIR_PER) * DE_SIZE; }
static void dir_seal(uint32_t slot) { seal(dir_start + slot / DIR_PER); }
static int slot_of(const char *name)
{
	for (uint32_t s = 0; s < dir_blocks * DIR_PER; s++)
		if (get32(dirent(s) + 88) & 1 && !strncmp((char *)dirent(s), name, 64))
			return (int)s;
	FAIL("no slot for %s", name);
}
static uint32_t first_of(const char *name) { return get32(dirent((uint32_t)slot_of(name)) + 80); }

/* ---- running the library over img ---- */
struct outcome {
	int mount_rc;
	char mount_err[256];
	int fsck_rc;
	unsigned found;
	int repair_rc;
	unsigned rfound, rfixed;
	int recheck_rc;
	unsigned recheck_found;
	int remount_rc;
	char remount_err[256];
	unsigned warn, rewarn;     /* sfs_mount_warnings() of the mount, the remount */
};

static void msg_sink(void *arg, const char *text)
{
	(void)arg;
	CHECK(text && strlen(text) < 1024);
}

/* Reads every file of a mounted fs; returns the number of files. */
static int read_all(struct sfs *fs)
{
	static uint8_t buf[1 << 16];
	struct sfs_stat st;
	uint32_t cookie = 0;
	int n = 0;

	while (sfs_readdir(fs, &cookie, &st) == 1 && n < 100000) {
		int fd = sfs_file_open(fs, st.name, SFS_O_RDONLY);
		uint64_t off = 0;
		ssize_t r;

		n++;
		if (fd < 0)
			continue;
		while ((r = sfs_file_pread(fs, fd, buf, sizeof buf, off)) > 0 && off < IMG_SIZE * 2)
			off += (uint64_t)r;
		sfs_file_close(fs, fd);
	}
	return n;
}

static void run_lib(const uint8_t *image, uint64_t devsize, struct outcome *o)
{
	struct sfs_fsck_result res;
	struct sfs_dev *dev;
	struct sfs *fs;
	char err[256];

	memset(o, 0, sizeof *o);
	dev = sfs_memdev_new(image, devsize < IMG_SIZE ? devsize : IMG_SIZE, devsize);
	CHECK(dev);
	o->mount_rc = sfs_mount_dev(dev, 0, 0, &fs, o->mount_err, sizeof o->mount_err);
	if (o->mount_rc == 0) {
		o->warn = sfs_mount_warnings(fs, NULL, 0);
		read_all(fs);
		CHECK_EQ(sfs_unmount(fs), 0);
	}
	sfs_dev_free(dev);

	dev = sfs_memdev_new(image, devsize < IMG_SIZE ? devsize : IMG_SIZE, devsize);
	CHECK(dev);
	memset(&res, 0, sizeof res);
	o->fsck_rc = sfs_fsck_dev(dev, 0, &res, msg_sink, NULL, err, sizeof err);
	o->found = res.errors_found;
	/* a check-only fsck changes nothing */
	{
		static uint8_t after[IMG_SIZE];
		size_t n = devsize < IMG_SIZE ? (size_t)devsize : IMG_SIZE;

		CHECK_EQ(dev->pread(dev, after, n, 0), 0);
		if (memcmp(after, image, n))
			FAIL("a check-only fsck changed the device");
	}
	memset(&res, 0, sizeof res);
	o->repair_rc = sfs_fsck_dev(dev, 1, &res, msg_sink, NULL, err, sizeof err);
	o->rfound = res.errors_found;
	o->rfixed = res.errors_fixed;
	memset(&res, 0, sizeof res);
	o->recheck_rc = sfs_fsck_dev(dev, 0, &res, msg_sink, NULL, err, sizeof err);
	o->recheck_found = res.errors_found;
	o->remount_rc = sfs_mount_dev(dev, 0, 0, &fs, o->remount_err, sizeof o->remount_err);
	if (o->remount_rc == 0) {
		o->rewarn = sfs_mount_warnings(fs, NULL, 0);
		read_all(fs);
		CHECK_EQ(sfs_unmount(fs), 0);
	}
	sfs_dev_free(dev);
}

/* fsck reported errors, fsck -y fixed them all, and a recheck is clean. */
static void expect_fixed(const char *what, const struct outcome *o)
{
	if (o->fsck_rc != 0 || o->found == 0)
		FAIL("%s: fsck returned %d with %u errors, expected errors", what, o->fsck_rc, o->found);
	if (o->repair_rc != 0 || o->rfound == 0 || o->rfixed != o->rfound)
		FAIL("%s: fsck -y returned %d, found %u, fixed %u", what, o->repair_rc, o->rfound,
		     o->rfixed);
	if (o->recheck_rc != 0 || o->recheck_found != 0)
		FAIL("%s: after fsck -y, a check returned %d with %u errors", what, o->recheck_rc,
		     o->recheck_found);
}

/* A damaged image that mount refuses with rc/why, fsck reports, fsck -y
 * repairs (a recheck is clean) and that then mounts. */
static void expect_repairable(const char *what, int rc, const char *why)
{
	struct outcome o;

	run_lib(img, IMG_SIZE, &o);
	if (o.mount_rc != rc)
		FAIL("%s: mount returned %d (%s), expected %d", what, o.mount_rc, o.mount_err, rc);
	if (why && !strstr(o.mount_err, why))
		FAIL("%s: mount said '%s', expected it to say '%s'", what, o.mount_err, why);
	expect_fixed(what, &o);
	if (o.remount_rc != 0)
		FAIL("%s: after fsck -y, mount failed: %s", what, o.remount_err);
}

/* A damaged primary superblock: mount uses the backup and warns, fsck reports,
 * fsck -y restores the primary (a recheck is clean, a remount does not warn). */
static void expect_backup(const char *what)
{
	struct outcome o;

	run_lib(img, IMG_SIZE, &o);
	if (o.mount_rc != 0 || o.warn != SFS_WARN_BACKUP_SUPER)
		FAIL("%s: mount returned %d (%s), warnings %#x; expected the backup", what, o.mount_rc,
		     o.mount_err, o.warn);
	expect_fixed(what, &o);
	if (o.remount_rc != 0 || o.rewarn)
		FAIL("%s: after fsck -y, mount returned %d (%s), warnings %#x", what, o.remount_rc,
		     o.remount_err, o.rewarn);
}

/* The backup superblock (the image's last block) is gone: an image made
 * before backups existed, or one whose end is damaged too. */
static void nobackup(void) { memset(blk(IMG_SIZE / BS - 1), 0, BS); }

/* An image mount and fsck must refuse outright (not an image, etc.). */
static void expect_refused(const char *what, uint64_t devsize, int rc, const char *why)
{
	struct outcome o;

	run_lib(img, devsize, &o);
	if (o.mount_rc != rc)
		FAIL("%s: mount returned %d (%s), expected %d", what, o.mount_rc, o.mount_err, rc);
	if (why && !strstr(o.mount_err, why))
		FAIL("%s: mount said '%s', expected it to say '%s'", what, o.mount_err, why);
	if (o.fsck_rc >= 0 && o.found == 0)
		FAIL("%s: fsck ran and found nothing", what);
	if (o.remount_rc == 0 && o.recheck_found)
		FAIL("%s: inconsistent", what);
}

/* An image that mounts (recovery may change it) and fsck finds clean. */
static void expect_clean(const char *what)
{
	struct outcome o;

	run_lib(img, IMG_SIZE, &o);
	if (o.mount_rc != 0)
		FAIL("%s: mount returned %d (%s), expected success", what, o.mount_rc, o.mount_err);
	if (o.fsck_rc != 0 || o.found != 0)
		FAIL("%s: fsck returned %d with %u errors, expected clean", what, o.fsck_rc, o.found);
}

static void make_base(void)
{
	struct sfs_dev *dev = sfs_faultdev_new(IMG_SIZE);
	struct sfs *fs;
	char err[256];
	static const struct { const char *name; size_t len; } files[] = {
		{ "A", 10000 }, { "B", 5000 }, { "C", 0 }, { "D", 4096 }, { "E", 40000 },
	};

	CHECK(dev);
	CHECK_EQ(sfs_format_dev(dev, 64), 0);
	if (sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err) < 0)
		FAIL("mount of a fresh image: %s", err);
	for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++) {
		static uint8_t buf[40000];
		int fd = sfs_file_open(fs, files[i].name, SFS_O_CREAT);

		CHECK(fd >= 0);
		memset(buf, files[i].name[0], files[i].len);
		CHECK_EQ(sfs_file_write(fs, fd, buf, files[i].len), files[i].len);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(dev->pread(dev, base, IMG_SIZE, 0), 0);
	sfs_dev_free(dev);

	CHECK(memcmp(base, "SIMPLEFS", 8) == 0);
	total = get32(base + 16);
	jstart = get32(base + 20);
	jblocks = get32(base + 24);
	fat_start = get32(base + 28);
	fat_blocks = get32(base + 32);
	dir_start = get32(base + 36);
	dir_blocks = get32(base + 40);
	data_start = get32(base + 44);
	CHECK_EQ(total, IMG_SIZE / BS - 1);   /* the last block: the backup superblock */
	CHECK_EQ(get32(base + 12), BS);
	CHECK_EQ(fat_start, jstart + jblocks);
	CHECK_EQ(dir_start, fat_start + fat_blocks);
	CHECK_EQ(data_start, dir_start + dir_blocks);
	CHECK_EQ(get32(base + BS - 4), crc32c(base, BS - 4));
}

static void reset(void) { memcpy(img, base, IMG_SIZE); }

static uint64_t rng = 0x1234567;
static uint32_t rnd(void)
{
	return (uint32_t)tu_xorshift64(&rng);
}

/* A journal transaction by hand: log blocks at slots start.., header last. */
static void journal_txn(uint32_t start, uint32_t n, const uint32_t *homes, const uint8_t *blocks)
{
	uint8_t *h = blk(jstart);

	memset(h, 0, BS);
	memcpy(h, "SFSJRNL1", 8);
	set64(h + 8, get64(base + (size_t)jstart * BS + 8) + 1);
	set32(h + 16, n);
	set32(h + 20, start);
	for (uint32_t i = 0; i < n; i++) {
		memcpy(blk(jstart + 1 + start + i), blocks + (size_t)i * BS, BS);
		set32(h + 32 + i * 8, homes[i]);
		set32(h + 32 + i * 8 + 4, get32(blocks + (size_t)i * BS + BS - 4));
	}
	seal(jstart);
}

int main(void)
{
	struct outcome o;
	uint32_t a0, a1, a2;

	make_base();
	reset();
	expect_clean("the pristine image");

	/* superblock: each damage is refused without a backup, and mounts with
	 * the backup (fsck -y restores the primary) */
#define SB_CASE(what, rc, why, damage) do { \
		reset(); nobackup(); damage; expect_refused(what, IMG_SIZE, rc, why); \
		reset(); damage; expect_backup(what); } while (0)
	SB_CASE("bad magic", -EMEDIUMTYPE, "not a SimpleFS image", img[0] ^= 0xFF);
	SB_CASE("version 99", -EPROTONOSUPPORT, NULL, (set32(img + 8, 99), seal(0)));
	SB_CASE("superblock checksum", -EUCLEAN, "checksum", img[70] ^= 1);   /* uuid, no reseal */
	SB_CASE("inconsistent geometry", -EUCLEAN, NULL, (set32(img + 32, fat_blocks + 1), seal(0)));
	SB_CASE("block size 512", -EUCLEAN, NULL, (set32(img + 12, 512), seal(0)));
	SB_CASE("2^32-1 blocks", -EUCLEAN, NULL, (set32(img + 16, 0xFFFFFFFFu), seal(0)));
	SB_CASE("reserved byte", -EUCLEAN, "reserved", (img[2000] = 1, seal(0)));
	SB_CASE("whole superblock zeroed", -EMEDIUMTYPE, NULL, memset(img, 0, BS));
	reset();
	memcpy(blk(total), blk(total - 1), BS);   /* a backup that is not one: fsck -y rewrites it */
	{
		struct outcome o;

		run_lib(img, IMG_SIZE, &o);
		if (o.mount_rc != 0 || o.warn || o.found != 1 || o.rfixed != 1 || o.recheck_found)
			FAIL("damaged backup: mount %d warn %#x, fsck found %u, fixed %u, then %u",
			     o.mount_rc, o.warn, o.found, o.rfixed, o.recheck_found);
	}
	reset();
	expect_refused("device smaller than the geometry", IMG_SIZE / 2, -EUCLEAN, NULL);
	reset();
	expect_refused("one block of an image", BS, -EUCLEAN, NULL);
	reset();
	memset(img, 0, IMG_SIZE);
	expect_refused("all zeros", IMG_SIZE, -EMEDIUMTYPE, "not a SimpleFS image");
	expect_refused("100 bytes", 100, -EMEDIUMTYPE, NULL);

	/* a valid metadata block in the wrong place (a misdirected write): its
	 * checksum holds, its trailer names another home */
	reset();
	CHECK(dir_blocks >= 2);
	memcpy(blk(dir_start), blk(dir_start + 1), BS);
	expect_refused("a directory block at the wrong home", IMG_SIZE, -EUCLEAN, NULL);

	/* FAT */
	reset();
	a0 = first_of("A");
	a1 = fat_get(a0);
	a2 = fat_get(a1);
	CHECK(a0 >= data_start && a1 >= data_start && a2 >= data_start);
	CHECK_EQ(fat_get(a2), EOC);
	reset();
	blk(fat_start)[100] ^= 0x40;           /* no reseal */
	expect_repairable("bad FAT checksum", -EUCLEAN, "checksum");
	reset();
	fat_set(a2, a0);                       /* a0 -> a1 -> a2 -> a0 */
	expect_repairable("FAT cycle through the whole chain", -EUCLEAN, NULL);
	reset();
	fat_set(a1, a0);                       /* a0 -> a1 -> a0 */
	expect_repairable("FAT cycle inside the chain", -EUCLEAN, NULL);
	reset();
	fat_set(a1, a1);                       /* self loop */
	expect_repairable("FAT self loop", -EUCLEAN, NULL);
	reset();
	fat_set(first_of("B"), a1);            /* B's second block is A's */
	expect_repairable("cross-linked chains", -EUCLEAN, NULL);
	reset();
	fat_set(a0, total + 100);
	expect_repairable("FAT entry beyond the image", -EUCLEAN, NULL);
	reset();
	fat_set(a0, 3);                        /* points into metadata */
	expect_repairable("FAT entry into metadata", -EUCLEAN, NULL);
	reset();
	fat_set(a1, EOC);                      /* chain shorter than its entry says */
	expect_repairable("short chain", -EUCLEAN, NULL);
	reset();
	fat_set(a1, 0);                        /* a free block in a chain */
	expect_repairable("free block in a chain", -EUCLEAN, NULL);
	reset();
	fat_set(2, 0);                         /* a metadata block marked free */
	expect_repairable("metadata block free in the FAT", -EUCLEAN, NULL);
	reset();
	fat_set(total - 1, EOC);               /* leaked: mount tolerates it */
	run_lib(img, IMG_SIZE, &o);
	CHECK_EQ(o.mount_rc, 0);
	CHECK_EQ(o.found, 1);
	CHECK_EQ(o.rfixed, 1);
	CHECK_EQ(o.recheck_found, 0);

	/* directory */
	{
		uint8_t *e;
		int s = slot_of("B");

		reset();
		dirent((uint32_t)s)[20] ^= 1;      /* no reseal */
		expect_repairable("bad directory checksum", -EUCLEAN, "checksum");
		reset();
		e = dirent((uint32_t)s);
		memset(e, 'x', 64);                /* no NUL */
		dir_seal((uint32_t)s);
		expect_repairable("name without NUL", -EUCLEAN, NULL);
		reset();
		e = dirent((uint32_t)s);
		memset(e, 0, 64);
		e[0] = 'A';                        /* a second "A" */
		dir_seal((uint32_t)s);
		expect_repairable("duplicate name", -EUCLEAN, NULL);
		reset();
		e = dirent((uint32_t)s);
		strcpy((char *)e, "a/b");
		dir_seal((uint32_t)s);
		expect_repairable("name with a slash", -EUCLEAN, NULL);
		reset();
		e = dirent((uint32_t)s);
		set32(e + 88, 0x80 | 1);
		dir_seal((uint32_t)s);
		expect_repairable("unknown flag", -EUCLEAN, NULL);
		reset();
		e = dirent((uint32_t)s);
		set64(e + 64, UINT64_MAX);         /* size */
		dir_seal((uint32_t)s);
		expect_repairable("absurd size", -EUCLEAN, NULL);
		reset();
		e = dirent((uint32_t)s);
		set32(e + 84, 1000);               /* nblocks */
		dir_seal((uint32_t)s);
		expect_repairable("more blocks than the size needs", -EUCLEAN, NULL);
		reset();
		e = dirent((uint32_t)s);
		set32(e + 80, total + 7);          /* first block */
		dir_seal((uint32_t)s);
		expect_repairable("first block out of range", -EUCLEAN, NULL);
		reset();
		e = dirent((uint32_t)s);
		set32(e + 80, 0);                  /* first block 0 with blocks */
		dir_seal((uint32_t)s);
		expect_repairable("first block 0", -EUCLEAN, NULL);
	}

	/* journal */
	{
		static uint8_t logblk[2 * BS];
		uint32_t homes[2];
		int s = slot_of("D");
		uint32_t db = dir_start + (uint32_t)s / DIR_PER;

		/* A valid committed transaction renaming D to Z: replayed. */
		reset();
		memcpy(logblk, blk(db), BS);
		strcpy((char *)logblk + (s % DIR_PER) * DE_SIZE, "Z");
		set32(logblk + BS - 8, db);
		set32(logblk + BS - 4, crc32c(logblk, BS - 4));
		homes[0] = db;
		journal_txn(0, 1, homes, logblk);
		expect_clean("a committed journal transaction");
		{
			struct sfs_dev *dev = sfs_memdev_new(img, IMG_SIZE, IMG_SIZE);
			struct sfs *fs;
			struct sfs_stat st;
			char err[256];

			CHECK(dev);
			if (sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err) < 0)
				FAIL("mount with a committed transaction: %s", err);
			if (sfs_stat(fs, "Z", &st) != 0 || st.size != 4096)
				FAIL("the committed transaction (rename D to Z) was not replayed");
			CHECK_EQ(sfs_stat(fs, "D", &st), -ENOENT);
			CHECK_EQ(sfs_unmount(fs), 0);
			/* replay is idempotent: a second mount sees the same */
			if (sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err) < 0)
				FAIL("second mount: %s", err);
			CHECK_EQ(sfs_stat(fs, "Z", &st), 0);
			CHECK_EQ(sfs_unmount(fs), 0);
			sfs_dev_free(dev);
		}
		/* Torn: the log block's checksum does not match the header's. */
		reset();
		journal_txn(0, 1, homes, logblk);
		blk(jstart + 1)[10] ^= 1;
		expect_clean("a torn journal transaction");
		{
			struct sfs_dev *dev = sfs_memdev_new(img, IMG_SIZE, IMG_SIZE);
			struct sfs *fs;
			struct sfs_stat st;
			char err[256];

			CHECK(dev);
			CHECK_EQ(sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err), 0);
			CHECK_EQ(sfs_stat(fs, "D", &st), 0);     /* dropped whole */
			CHECK_EQ(sfs_stat(fs, "Z", &st), -ENOENT);
			CHECK_EQ(sfs_unmount(fs), 0);
			sfs_dev_free(dev);
		}
		/* Hostile: a transaction aimed at the superblock and at data. */
		reset();
		memcpy(logblk, blk(0), BS);
		memset(logblk + 8, 0xAB, 100);
		set32(logblk + BS - 4, crc32c(logblk, BS - 4));
		homes[0] = 0;
		memset(logblk + BS, 0xCD, BS);
		set32(logblk + 2 * BS - 8, total - 1);
		set32(logblk + 2 * BS - 4, crc32c(logblk + BS, BS - 4));
		homes[1] = total - 1;
		journal_txn(0, 2, homes, logblk);
		expect_clean("a journal transaction aimed outside the metadata");
		/* Hostile: a transaction aimed at a file's data block only (sealed for
		 * that home): dropped, the file's bytes untouched */
		reset();
		homes[0] = first_of("A");
		memset(logblk, 0xCD, BS);
		set32(logblk + BS - 8, homes[0]);
		set32(logblk + BS - 4, crc32c(logblk, BS - 4));
		journal_txn(0, 1, homes, logblk);
		expect_clean("a journal transaction aimed at file data");
		{
			struct sfs_dev *dev = sfs_memdev_new(img, IMG_SIZE, IMG_SIZE);
			struct sfs *fs;
			char err[256];
			uint8_t got[BS];
			int fd;

			CHECK(dev);
			CHECK_EQ(sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err), 0);
			fd = sfs_file_open(fs, "A", SFS_O_RDONLY);
			CHECK(fd >= 0);
			CHECK_EQ(sfs_file_pread(fs, fd, got, BS, 0), BS);
			for (unsigned k = 0; k < BS; k++)
				if (got[k] != 'A')
					FAIL("a journal transaction aimed at data changed A's byte %u", k);
			CHECK_EQ(sfs_file_close(fs, fd), 0);
			CHECK_EQ(sfs_unmount(fs), 0);
			sfs_dev_free(dev);
		}
		/* Hostile: counts and starts beyond the journal. */
		reset();
		journal_txn(0, 0, homes, logblk);
		set32(blk(jstart) + 16, 0xFFFFFFFFu);
		seal(jstart);
		expect_clean("a journal count of 2^32-1");
		reset();
		journal_txn(0, 0, homes, logblk);
		set32(blk(jstart) + 16, 1);
		set32(blk(jstart) + 20, 0xFFFFFFF0u);
		seal(jstart);
		expect_clean("a journal start far beyond the journal");
	}

	/* A committed transaction in an image file: a read-only mount and a
	 * check-only fsck see it replayed but leave the file alone; a writable
	 * mount installs it. */
	{
		static uint8_t logblk[BS], file[IMG_SIZE];
		uint32_t homes[1];
		int s = slot_of("D");
		uint32_t db = dir_start + (uint32_t)s / DIR_PER;
		struct sfs *fs;
		struct sfs_stat st;
		struct sfs_fsck_result res = { 0, 0 };
		char err[256] = "";
		int fd;

		reset();
		memcpy(logblk, blk(db), BS);
		strcpy((char *)logblk + (s % DIR_PER) * DE_SIZE, "Z");
		set32(logblk + BS - 8, db);
		set32(logblk + BS - 4, crc32c(logblk, BS - 4));
		homes[0] = db;
		journal_txn(0, 1, homes, logblk);
		fd = open("journal.sfs", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0);
		CHECK(write(fd, img, IMG_SIZE) == IMG_SIZE);
		CHECK(close(fd) == 0);

		if (sfs_mount("journal.sfs", SFS_MOUNT_RDONLY, &fs, err, sizeof err) < 0)
			FAIL("read-only mount with a committed transaction: %s", err);
		CHECK_EQ(sfs_stat(fs, "Z", &st), 0);
		CHECK_EQ(sfs_stat(fs, "D", &st), -ENOENT);
		CHECK_EQ(sfs_unmount(fs), 0);
		CHECK_EQ(sfs_fsck("journal.sfs", 0, &res, NULL, NULL, err, sizeof err), 0);
		CHECK_EQ(res.errors_found, 0);
		fd = open("journal.sfs", O_RDONLY);
		CHECK(fd >= 0 && read(fd, file, IMG_SIZE) == IMG_SIZE && close(fd) == 0);
		if (memcmp(file, img, IMG_SIZE))
			FAIL("a read-only mount or a check-only fsck wrote to the image");

		if (sfs_mount("journal.sfs", 0, &fs, err, sizeof err) < 0)
			FAIL("mount with a committed transaction: %s", err);
		CHECK_EQ(sfs_stat(fs, "Z", &st), 0);
		CHECK_EQ(sfs_unmount(fs), 0);
		fd = open("journal.sfs", O_RDONLY);
		CHECK(fd >= 0 && read(fd, file, IMG_SIZE) == IMG_SIZE && close(fd) == 0);
		CHECK(memcmp(file + (size_t)db * BS, logblk, BS) == 0);     /* installed */
		CHECK_EQ(get32(file + (size_t)jstart * BS + 16), 0);        /* journal empty */
	}

	/* fsck -y interrupted by a power cut at every device write it makes:
	 * the image is never left worse than repairable, a second fsck -y
	 * cleans it, and files it had no reason to touch keep their bytes. */
	{
		struct sfs_fsck_result res;
		char err[256];
		uint64_t w = 0, n;
		int bs = slot_of("B");

		reset();
		fat_set(first_of("D"), a1);           /* D cross-linked into A */
		fat_set(total - 2, EOC);              /* two leaks */
		fat_set(total - 5, EOC);
		memset(dirent((uint32_t)bs), 'x', 64); /* B: a bad name */
		dir_seal((uint32_t)bs);
		for (n = 0; n == 0 || n <= w; n++) {
			struct sfs_dev *dev = sfs_faultdev_new(IMG_SIZE);
			struct sfs *fs;
			struct sfs_stat st;
			uint64_t base_writes;

			CHECK(dev);
			CHECK_EQ(dev->pwrite(dev, img, IMG_SIZE, 0), 0);
			CHECK_EQ(dev->sync(dev), 0);
			base_writes = sfs_faultdev_writes(dev);
			sfs_faultdev_arm(dev, n);
			memset(&res, 0, sizeof res);
			CHECK_EQ(sfs_fsck_dev(dev, 1, &res, msg_sink, NULL, err, sizeof err), 0);
			CHECK(res.errors_found >= 4);
			if (n == 0) {
				w = sfs_faultdev_writes(dev) - base_writes;
				CHECK(w > 0);
			}
			sfs_faultdev_crash(dev);
			memset(&res, 0, sizeof res);
			CHECK_EQ(sfs_fsck_dev(dev, 1, &res, msg_sink, NULL, err, sizeof err), 0);
			if (res.errors_fixed != res.errors_found)
				FAIL("repair cut at write %" PRIu64 ": the second fsck -y fixed %u of %u", n,
				     res.errors_fixed, res.errors_found);
			memset(&res, 0, sizeof res);
			CHECK_EQ(sfs_fsck_dev(dev, 0, &res, msg_sink, NULL, err, sizeof err), 0);
			if (res.errors_found)
				FAIL("repair cut at write %" PRIu64 ": %u errors left after a second fsck -y",
				     n, res.errors_found);
			if (sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err) < 0)
				FAIL("repair cut at write %" PRIu64 ": mount: %s", n, err);
			for (const char *nm = "ACE"; *nm; nm++) {
				static uint8_t buf[40001];
				char name[2] = { *nm, 0 };
				int fd = sfs_file_open(fs, name, SFS_O_RDONLY);
				ssize_t got;

				if (fd < 0)
					FAIL("repair cut at write %" PRIu64 ": %s lost", n, name);
				CHECK_EQ(sfs_file_stat(fs, fd, &st), 0);
				got = sfs_file_pread(fs, fd, buf, sizeof buf, 0);
				CHECK_EQ(got, (ssize_t)st.size);
				for (ssize_t k = 0; k < got; k++)
					if (buf[k] != (uint8_t)*nm)
						FAIL("repair cut at write %" PRIu64 ": %s byte %zd is 0x%02x", n,
						     name, k, buf[k]);
				if (*nm != 'A')      /* A may lose its cross-linked tail */
					CHECK_EQ(st.size, *nm == 'C' ? 0 : 40000);
				sfs_file_close(fs, fd);
			}
			CHECK_EQ(sfs_unmount(fs), 0);
			sfs_dev_free(dev);
		}
		printf("fsck -y cut at each of its %" PRIu64 " writes: always repairable\n", w);
	}

	/* An image file, truncated; a tiny file; a directory. */
	{
		char err[256] = "";
		struct sfs *fs;
		int fd = open("trunc.sfs", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int r;

		CHECK(fd >= 0);
		CHECK(write(fd, base, IMG_SIZE / 2) == IMG_SIZE / 2);
		CHECK(close(fd) == 0);
		r = sfs_mount("trunc.sfs", 0, &fs, err, sizeof err);
		if (r != -EUCLEAN)
			FAIL("truncated image file: mount returned %d (%s), expected -EUCLEAN", r, err);
		fd = open("tiny.sfs", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0);
		CHECK(write(fd, base, 100) == 100);
		CHECK(close(fd) == 0);
		r = sfs_mount("tiny.sfs", 0, &fs, err, sizeof err);
		if (r != -EMEDIUMTYPE && r != -EUCLEAN)
			FAIL("100-byte image file: mount returned %d (%s)", r, err);
		fd = open("empty.sfs", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		CHECK(fd >= 0 && close(fd) == 0);
		r = sfs_mount("empty.sfs", 0, &fs, err, sizeof err);
		if (r >= 0)
			FAIL("empty image file mounted");
		r = sfs_mount(".", 0, &fs, err, sizeof err);
		if (r >= 0)
			FAIL("a directory mounted");
		r = sfs_mount("missing.sfs", 0, &fs, err, sizeof err);
		CHECK_EQ(r, -ENOENT);
	}

	/* Random damage: bytes flipped in metadata blocks, resealed so they
	 * pass the checksums; and whole random metadata blocks. */
	{
		unsigned mounted = 0, refused = 0, rounds = 1500;

		for (unsigned i = 0; i < rounds; i++) {
			/* a quarter the superblock or journal header, the rest FAT
			 * and directory blocks */
			uint32_t b = rnd() % 8 == 0 ? 0 : rnd() % 8 == 0 ? jstart :
				fat_start + rnd() % (data_start - fat_start);
			unsigned flips = 1 + rnd() % 8;

			reset();
			for (unsigned k = 0; k < flips; k++) {
				uint32_t off = rnd() % (BS - 8);

				if (rnd() % 2)
					blk(b)[off] ^= (uint8_t)(1u << (rnd() % 8));
				else
					blk(b)[off] = (uint8_t)rnd();
			}
			if (i % 10 == 9)
				for (uint32_t k = 0; k < BS - 8; k++)
					blk(b)[k] = (uint8_t)rnd();
			if (i % 7)
				seal(b);
			run_lib(img, IMG_SIZE, &o);
			if (o.mount_rc == 0)
				mounted++;
			else
				refused++;
			/* a damaged block left with a bad trailer is refused, except the
			 * journal header (invalid means nothing committed) and the
			 * superblock, whose backup then mounts with its warning (FORMAT.md) */
			if (i % 7 == 0 && b != jstart && o.mount_rc == 0 &&
			    !(b == 0 && (o.warn & SFS_WARN_BACKUP_SUPER)))
				FAIL("random damage %u: block %u with a bad checksum mounted%s", i, b,
				     b == 0 ? " without the backup superblock's warning" : "");
			if (o.mount_rc != 0 && o.mount_rc != -EUCLEAN && o.mount_rc != -EMEDIUMTYPE &&
			    o.mount_rc != -EPROTONOSUPPORT)
				FAIL("random damage %u (block %u): mount returned %d (%s)", i, b, o.mount_rc,
				     o.mount_err);
			if (o.repair_rc == 0 && o.rfixed != o.rfound)
				FAIL("random damage %u (block %u): fsck -y found %u, fixed %u", i, b,
				     o.rfound, o.rfixed);
			if (o.repair_rc == 0 && (o.recheck_rc != 0 || o.recheck_found))
				FAIL("random damage %u (block %u): after fsck -y, a check found %u errors (rc %d)",
				     i, b, o.recheck_found, o.recheck_rc);
			if (o.repair_rc == 0 && o.remount_rc != 0)
				FAIL("random damage %u (block %u): after fsck -y, mount failed: %s", i, b,
				     o.remount_err);
			if (o.mount_rc == -EUCLEAN && o.fsck_rc == 0 && o.found == 0)
				FAIL("random damage %u (block %u): mount refused (%s) but fsck found nothing",
				     i, b, o.mount_err);
		}
		printf("random damage: %u rounds, %u mounted, %u refused\n", rounds, mounted, refused);
		/* both outcomes must occur, each often: damage that is never refused (or
		 * never mounted) means the checks, or this test, stopped looking */
		if (mounted < rounds / 10 || refused < rounds / 10)
			FAIL("random damage: %u mounted, %u refused of %u: expected at least %u each",
			     mounted, refused, rounds, rounds / 10);
	}
	printf("ok\n");
	return 0;
}
