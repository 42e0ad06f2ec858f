/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS disk full on a small image: a write larger than the
 * free space stores exactly what fits and returns that partial count, the
 * next write fails with -ENOSPC, unaligned writes fill to the last byte of
 * the last block, nothing is corrupted (fsck clean, the other file intact,
 * the partial file's bytes exact after remount), a write that fails with
 * -ENOSPC changes nothing (not even with uncommitted frees about),
 * and the space is usable again after a remove.
 *
 * The image has 577 blocks (1 mod 8), so a full one owns a block whose bit
 * stands alone in the last byte of fsck's bitmap of owned blocks.
 *
 * It must never accept "some error" where the contract names one.
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define BS 4096u
/* 577 blocks for the file system, then the backup superblock's */
#define IMG_SIZE (578u * BS)
static const char *img = "full.sfs";

static uint64_t free_blocks(struct sfs *fs)
{
	struct sfs_statfs sf;

	CHECK_EQ(sfs_sync(fs), 0);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	return sf.free_blocks;
}

static void pattern(uint8_t *b, size_t n, uint64_t off, uint8_t tag)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(tag ^ ((off + i) * 2654435761u >> 13));
}

static void check_file(struct sfs *fs, const char *name, uint64_t size, uint8_t tag)
{
	static uint8_t got[1 << 16], want[1 << 16];
	struct sfs_stat st;
	uint64_t off;
	int fd = sfs_file_open(fs, name, SFS_O_RDONLY);

	if (fd < 0)
		FAIL("open %s: %s", name, strerror(-fd));
	CHECK_EQ(sfs_file_stat(fs, fd, &st), 0);
	if (st.size != size)
		FAIL("%s: size %" PRIu64 ", expected %" PRIu64, name, st.size, size);
	for (off = 0; off < size; off += sizeof got) {
		size_t len = size - off < sizeof got ? (size_t)(size - off) : sizeof got;

		CHECK_EQ(sfs_file_pread(fs, fd, got, len, off), len);
		pattern(want, len, off, tag);
		if (memcmp(got, want, len))
			FAIL("%s: bytes differ in [%" PRIu64 ", +%zu)", name, off, len);
	}
	CHECK_EQ(sfs_file_pread(fs, fd, got, 1, size), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
}

/* Writes tagged bytes at the file position in chunks of chunk bytes until
 * -ENOSPC; returns the bytes stored. Checks a short count comes only once,
 * right before -ENOSPC. */
static uint64_t write_until_full(struct sfs *fs, int fd, size_t chunk, uint8_t tag, uint64_t start)
{
	static uint8_t buf[3 << 20];
	uint64_t off = start;
	int short_seen = 0;

	CHECK(chunk <= sizeof buf);
	for (;;) {
		ssize_t n;

		pattern(buf, chunk, off, tag);
		n = sfs_file_write(fs, fd, buf, chunk);
		if (n == -ENOSPC)
			break;
		if (n < 0)
			FAIL("write: %s (expected a count or -ENOSPC)", strerror((int)-n));
		if (n == 0)
			FAIL("write returned 0 instead of -ENOSPC");
		if (short_seen)
			FAIL("a write succeeded after a short count");
		if ((size_t)n < chunk)
			short_seen = 1;
		off += (uint64_t)n;
	}
	return off - start;
}

int main(void)
{
	struct sfs *fs;
	struct sfs_statfs sf;
	uint64_t free0, stored, keep_size = 3 * BS + 123;
	static uint8_t buf[4 << 20];
	int fd, keep, r;

	r = sfs_format(img, IMG_SIZE, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	fs = MOUNT_OR_DIE(img);
	free0 = free_blocks(fs);
	CHECK(free0 >= 16);
	CHECK(free0 * BS < sizeof buf);

	keep = sfs_file_open(fs, "keep", SFS_O_CREAT);
	CHECK(keep >= 0);
	pattern(buf, keep_size, 0, 0x11);
	CHECK_EQ(sfs_file_write(fs, keep, buf, keep_size), keep_size);
	CHECK_EQ(sfs_file_fsync(fs, keep), 0);
	CHECK_EQ(free_blocks(fs), free0 - 4);

	/* 1. One write of more than the free space: exactly the free space. */
	fd = sfs_file_open(fs, "big", SFS_O_CREAT);
	CHECK(fd >= 0);
	pattern(buf, free0 * BS, 0, 0x22);
	{
		ssize_t n = sfs_file_write(fs, fd, buf, free0 * BS);

		if (n < 0)
			FAIL("over-size write: %s, expected the partial count %" PRIu64,
			     strerror((int)-n), (free0 - 4) * BS);
		CHECK_EQ(n, (free0 - 4) * BS);
	}
	CHECK_EQ(sfs_file_write(fs, fd, buf, 1), -ENOSPC);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 10, 5 * BS * free0), -ENOSPC);
	CHECK_EQ(free_blocks(fs), 0);
	check_file(fs, "big", (free0 - 4) * BS, 0x22);
	check_file(fs, "keep", keep_size, 0x11);
	/* Full, but overwriting allocated bytes and filling the last block of
	 * "keep" needs no new block. */
	pattern(buf, BS - 123, keep_size, 0x11);
	CHECK_EQ(sfs_file_pwrite(fs, keep, buf, BS - 123, keep_size), BS - 123);
	keep_size += BS - 123;
	CHECK_EQ(sfs_file_pwrite(fs, keep, buf, 1, keep_size), -ENOSPC);
	pattern(buf, 1000, 500, 0x22);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 1000, 500), 1000);
	/* Creating an empty file needs no data block. */
	r = sfs_file_open(fs, "empty", SFS_O_CREAT);
	CHECK(r >= 0);
	CHECK_EQ(sfs_file_write(fs, r, buf, 1), -ENOSPC);
	CHECK_EQ(sfs_file_close(fs, r), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);

	/* Nothing corrupted: remount, fsck, all bytes. */
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);
	fs = MOUNT_OR_DIE(img);
	check_file(fs, "big", (free0 - 4) * BS, 0x22);
	check_file(fs, "keep", keep_size, 0x11);
	check_file(fs, "empty", 0, 0);
	CHECK_EQ(sfs_stat(fs, "big", &(struct sfs_stat){ 0 }), 0);

	/* 2. Space is usable again after a remove; unaligned writes fill every
	 *    byte of the last block. */
	CHECK_EQ(sfs_unlink(fs, "big"), 0);
	CHECK_EQ(free_blocks(fs), free0 - 4);
	fd = sfs_file_open(fs, "big2", SFS_O_CREAT);
	CHECK(fd >= 0);
	stored = write_until_full(fs, fd, 10007, 0x33, 0);
	CHECK_EQ(stored, (free0 - 4) * BS);
	CHECK_EQ(free_blocks(fs), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	check_file(fs, "big2", stored, 0x33);

	/* 3. Appending to "keep" when full fails; after truncating big2 it works
	 *    for exactly the freed blocks. */
	keep = sfs_file_open(fs, "keep", 0);
	CHECK(keep >= 0);
	fd = sfs_file_open(fs, "big2", 0);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, stored - 5 * BS), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(free_blocks(fs), 5);
	CHECK_EQ(sfs_file_seek(fs, keep, 0, SEEK_END), keep_size);
	stored = write_until_full(fs, keep, 3000, 0x11, keep_size);
	CHECK_EQ(stored, 5 * BS);
	keep_size += stored;
	CHECK_EQ(sfs_file_close(fs, keep), 0);
	check_file(fs, "keep", keep_size, 0x11);
	check_file(fs, "big2", (free0 - 4) * BS - 5 * BS, 0x33);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);

	/* 3b. A write past the end that fails with -ENOSPC changes nothing,
	 *     also while blocks freed by an uncommitted truncate are about
	 *     (the library commits inside the write to reach them). */
	fs = MOUNT_OR_DIE(img);
	{
		struct sfs_stat st;

		keep = sfs_file_open(fs, "keep", 0);
		CHECK(keep >= 0);
		keep_size -= 100;                   /* a partial last block */
		CHECK_EQ(sfs_file_truncate(fs, keep, keep_size), 0);
		fd = sfs_file_open(fs, "big2", 0);
		CHECK(fd >= 0);
		CHECK_EQ(sfs_file_stat(fs, fd, &st), 0);
		CHECK_EQ(sfs_file_truncate(fs, fd, st.size - BS), 0);   /* one block, pending */
		CHECK_EQ(free_blocks(fs), 1);
		CHECK_EQ(sfs_file_truncate(fs, fd, st.size - 2 * BS), 0);   /* one more, pending */
		CHECK_EQ(sfs_file_pwrite(fs, keep, buf, 1, keep_size + 5 * BS + 100), -ENOSPC);
		CHECK_EQ(sfs_file_stat(fs, keep, &st), 0);
		if (st.size != keep_size)
			FAIL("a write that failed with -ENOSPC changed the size from %" PRIu64 " to %" PRIu64,
			     keep_size, st.size);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
		CHECK_EQ(sfs_file_close(fs, keep), 0);
		check_file(fs, "keep", keep_size, 0x11);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);

	/* 4. Remove everything: the whole data area is free and fillable again. */
	fs = MOUNT_OR_DIE(img);
	CHECK_EQ(sfs_unlink(fs, "keep"), 0);
	CHECK_EQ(sfs_unlink(fs, "big2"), 0);
	CHECK_EQ(sfs_unlink(fs, "empty"), 0);
	CHECK_EQ(free_blocks(fs), free0);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	CHECK_EQ(sf.files, 0);
	fd = sfs_file_open(fs, "all", SFS_O_CREAT);
	CHECK(fd >= 0);
	stored = write_until_full(fs, fd, 1 << 20, 0x44, 0);
	CHECK_EQ(stored, free0 * BS);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);
	fs = MOUNT_OR_DIE(img);
	check_file(fs, "all", free0 * BS, 0x44);
	CHECK_EQ(sfs_unmount(fs), 0);
	printf("ok\n");
	return 0;
}
