/* SPDX-License-Identifier: MIT */
/*
 * fuzz_steps.h - the steps one fuzz input goes through, shared by the
 * libFuzzer target (fuzz/fuzz_sfs.c) and the corpus replay test
 * (tests/test_sfs_fuzz_corpus.c), so the seed corpus is checked in every
 * normal and sanitizer test run.
 *
 * An input is the start of an image: it becomes a memory device zero-filled up
 * to FUZZ_DEV_SIZE. Then: fsck (check only) on one copy, fsck with repair on
 * another, mount, readdir, open and read every file, write a little, truncate,
 * unlink one, sync, unmount. Every step is bounded, so an input is fast.
 * Each input runs twice: as it is, and with its metadata checksums fixed up
 * (docs/FORMAT.md), so mutations reach the deep checks, not just the CRCs.
 *
 * It must never assert anything a hostile image may legitimately break (a
 * corrupt image may fail any call); it only has to run every path. Crashes,
 * hangs and sanitizer reports are the findings.
 */
#ifndef FUZZ_STEPS_H
#define FUZZ_STEPS_H

#include <sfs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define FUZZ_DEV_SIZE   (1u << 20)     /* 1 MiB (SFS_MIN_SIZE): the image every input becomes */
#define FUZZ_MAX_FILES  64             /* files opened and read per input */
#define FUZZ_READ_MAX   (8u << 20)     /* bytes read per file at most */

/* What happened, for the corpus test (which can demand more of valid seeds). */
struct fuzz_outcome {
	int fsck_rc;                 /* sfs_fsck_dev, check only */
	unsigned fsck_errors;
	int repair_rc;               /* sfs_fsck_dev, repair */
	unsigned repair_found, repair_fixed;
	int recheck_rc;              /* check-only fsck after the repair */
	unsigned recheck_errors;
	int mount_rc;                /* sfs_mount_dev */
	int files;                   /* directory entries seen */
	int read_errors;             /* opens/reads that failed */
	int ops_rc;                  /* first failure among write/truncate/unlink/sync, or 0 */
	int unmount_rc;
	int after_rc;                /* check-only fsck after our own operations */
	unsigned after_errors;
};

static void fuzz_ignore_msg(void *arg, const char *text)
{
	(void)arg;
	(void)text;
}

static int fuzz_first_err(int cur, long long r)
{
	return cur ? cur : (r < 0 ? (int)r : 0);
}

/* ---- checksum fix-up (from docs/FORMAT.md), so mutations get past the
 * CRCs and reach the parsing of FAT chains, directory entries and journal
 * headers instead of stopping at "bad checksum". ---- */
static uint32_t fuzz_crc_table[256];

static uint32_t fuzz_crc32c(const uint8_t *p, size_t len)
{
	uint32_t c = 0xFFFFFFFFu;

	if (!fuzz_crc_table[1]) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i;

			for (int k = 0; k < 8; k++)
				v = (v >> 1) ^ (0x82F63B78u & (0u - (v & 1)));
			fuzz_crc_table[i] = v;
		}
	}
	while (len--)
		c = (c >> 8) ^ fuzz_crc_table[(c ^ *p++) & 0xFF];
	return ~c;
}

static uint32_t fuzz_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void fuzz_seal(uint8_t *blk, uint32_t home)
{
	uint32_t crc;

	memcpy(blk + 4088, &home, 4);
	crc = fuzz_crc32c(blk, 4092);
	memcpy(blk + 4092, &crc, 4);
}

/* Seals the superblock, the journal header and every FAT and directory
 * block the (possibly hostile) superblock names, within the first len
 * bytes. Never trusts a field beyond bounding it. */
static void fuzz_reseal(uint8_t *img, size_t len)
{
	size_t nblk = len / 4096;
	uint32_t jstart, fat_start, data_start;

	if (nblk == 0 || memcmp(img, "SIMPLEFS", 8))
		return;
	fuzz_seal(img, 0);
	jstart = fuzz_get32(img + 20);
	fat_start = fuzz_get32(img + 28);
	data_start = fuzz_get32(img + 44);
	if (jstart > 0 && jstart < nblk)
		fuzz_seal(img + (size_t)jstart * 4096, jstart);
	for (uint64_t b = fat_start; b < data_start && b < nblk; b++)
		if (b > 0)
			fuzz_seal(img + b * 4096, (uint32_t)b);
}

/* Runs one input; returns 0, or -ENOMEM when a device cannot be made. */
static int fuzz_sfs_steps(const uint8_t *data, size_t len, struct fuzz_outcome *o)
{
	static uint8_t buf[64 * 1024];
	struct sfs_fsck_result fr;
	struct sfs_dev *dev;
	struct sfs *fs = NULL;
	char err[256];
	uint32_t cookie = 0;
	struct sfs_stat st;
	char victim[SFS_NAME_MAX + 1] = "";
	int r, i, fd;

	memset(o, 0, sizeof(*o));
	if (len > FUZZ_DEV_SIZE)
		len = FUZZ_DEV_SIZE;

	/* 1. fsck, check only. */
	dev = sfs_memdev_new(data, len, FUZZ_DEV_SIZE);
	if (!dev)
		return -ENOMEM;
	memset(&fr, 0, sizeof fr);
	o->fsck_rc = sfs_fsck_dev(dev, 0, &fr, fuzz_ignore_msg, NULL, err, sizeof err);
	o->fsck_errors = fr.errors_found;
	sfs_dev_free(dev);

	/* 2. fsck with repair on a fresh copy, then check what it left. */
	dev = sfs_memdev_new(data, len, FUZZ_DEV_SIZE);
	if (!dev)
		return -ENOMEM;
	memset(&fr, 0, sizeof fr);
	o->repair_rc = sfs_fsck_dev(dev, 1, &fr, fuzz_ignore_msg, NULL, err, sizeof err);
	o->repair_found = fr.errors_found;
	o->repair_fixed = fr.errors_fixed;
	memset(&fr, 0, sizeof fr);
	o->recheck_rc = sfs_fsck_dev(dev, 0, &fr, fuzz_ignore_msg, NULL, err, sizeof err);
	o->recheck_errors = fr.errors_found;
	sfs_dev_free(dev);

	/* 3. mount the original bytes and use the file system. */
	dev = sfs_memdev_new(data, len, FUZZ_DEV_SIZE);
	if (!dev)
		return -ENOMEM;
	o->mount_rc = sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err);
	if (o->mount_rc < 0) {
		sfs_dev_free(dev);
		return 0;
	}
	for (i = 0; i < FUZZ_MAX_FILES; i++) {
		uint64_t off = 0;

		r = sfs_readdir(fs, &cookie, &st);
		if (r <= 0)
			break;
		o->files++;
		st.name[SFS_NAME_MAX] = '\0';
		if (!victim[0])
			memcpy(victim, st.name, sizeof victim);
		fd = sfs_file_open(fs, st.name, SFS_O_RDONLY);
		if (fd < 0) {
			o->read_errors++;
			continue;
		}
		while (off < FUZZ_READ_MAX) {
			ssize_t n = sfs_file_pread(fs, fd, buf, sizeof buf, off);

			if (n < 0)
				o->read_errors++;
			if (n <= 0)
				break;
			off += (uint64_t)n;
		}
		sfs_file_close(fs, fd);
	}

	fd = sfs_file_open(fs, "fuzz-new", SFS_O_CREAT);
	o->ops_rc = fuzz_first_err(o->ops_rc, fd);
	if (fd >= 0) {
		memset(buf, 0xA5, 9000);
		o->ops_rc = fuzz_first_err(o->ops_rc, sfs_file_pwrite(fs, fd, buf, 9000, 100));
		o->ops_rc = fuzz_first_err(o->ops_rc, sfs_file_truncate(fs, fd, 5000));
		o->ops_rc = fuzz_first_err(o->ops_rc, sfs_file_pread(fs, fd, buf, sizeof buf, 0));
		o->ops_rc = fuzz_first_err(o->ops_rc, sfs_file_fsync(fs, fd));
		sfs_file_close(fs, fd);
	}
	if (victim[0]) {
		fd = sfs_file_open(fs, victim, 0);
		if (fd >= 0) {
			memset(buf, 0x5A, 5000);
			o->ops_rc = fuzz_first_err(o->ops_rc, sfs_file_pwrite(fs, fd, buf, 5000, 4000));
			o->ops_rc = fuzz_first_err(o->ops_rc, sfs_file_truncate(fs, fd, 1));
			sfs_file_close(fs, fd);
		}
		o->ops_rc = fuzz_first_err(o->ops_rc, sfs_unlink(fs, victim));
	}
	o->ops_rc = fuzz_first_err(o->ops_rc, sfs_sync(fs));
	o->unmount_rc = sfs_unmount(fs);

	/* 4. what our own operations left must still be checkable. */
	memset(&fr, 0, sizeof fr);
	o->after_rc = sfs_fsck_dev(dev, 0, &fr, fuzz_ignore_msg, NULL, err, sizeof err);
	o->after_errors = fr.errors_found;
	sfs_dev_free(dev);
	return 0;
}

/* One fuzz input: its bytes as they are, then a copy with every metadata
 * checksum fixed up. Returns 0, or -ENOMEM. */
static int fuzz_sfs_input(const uint8_t *data, size_t len, struct fuzz_outcome *raw,
			  struct fuzz_outcome *sealed)
{
	static uint8_t copy[FUZZ_DEV_SIZE];
	int r;

	if (len > FUZZ_DEV_SIZE)
		len = FUZZ_DEV_SIZE;
	r = fuzz_sfs_steps(data, len, raw);
	if (r < 0)
		return r;
	memcpy(copy, data, len);
	fuzz_reseal(copy, len);
	return fuzz_sfs_steps(copy, len, sealed);
}

#endif /* FUZZ_STEPS_H */
