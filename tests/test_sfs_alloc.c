/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS block allocation: block counts per file, free-space
 * accounting (file blocks + free == data blocks), freed blocks reused (a disk
 * filled, emptied and filled again), contiguous allocation of a sequential
 * file (checked through sfs_file_map), truncate frees blocks, all persistent;
 * a new file's first block found next-fit from the rotating hint (FORMAT.md),
 * wrapping at the image's end.
 *
 * It must never pass on a guess: every count and byte is compared exactly.
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define BS 4096u
static const char *img = "alloc.sfs";

/* Sum of all files' blocks + free blocks must equal the data blocks. */
static uint64_t check_accounting(struct sfs *fs)
{
	struct sfs_statfs sf;
	struct sfs_stat st;
	uint32_t cookie = 0;
	uint64_t used = 0;
	uint32_t n = 0;
	int r;

	CHECK_EQ(sfs_sync(fs), 0);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	while ((r = sfs_readdir(fs, &cookie, &st)) == 1) {
		used += st.blocks;
		CHECK_EQ(st.blocks, (st.size + BS - 1) / BS);
		n++;
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(n, sf.files);
	if (used + sf.free_blocks != sf.data_blocks)
		FAIL("accounting: %" PRIu64 " used + %" PRIu64 " free != %" PRIu64 " data blocks",
		     used, sf.free_blocks, sf.data_blocks);
	return sf.free_blocks;
}

static void fill(uint8_t *b, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 12)) ^ seed);
}

/* Image extents of a whole file, with adjacent ones merged. */
static int file_runs(struct sfs *fs, int fd, uint64_t size, struct sfs_extent *runs, int max)
{
	static struct sfs_extent ext[4096];
	int n = sfs_file_map(fs, fd, 0, size, ext, 4096), k = 0;
	uint64_t covered = 0;

	if (n < 0)
		FAIL("sfs_file_map: %s", strerror(-n));
	for (int i = 0; i < n; i++) {
		CHECK_EQ(ext[i].file_off, covered);
		CHECK(ext[i].len > 0);
		CHECK(ext[i].img_off != 0);       /* written file: no holes */
		CHECK_EQ(ext[i].img_off % BS, 0);
		covered += ext[i].len;
		if (k && runs[k - 1].img_off + runs[k - 1].len == ext[i].img_off &&
		    runs[k - 1].file_off + runs[k - 1].len == ext[i].file_off) {
			runs[k - 1].len += ext[i].len;
		} else {
			CHECK(k < max);
			runs[k++] = ext[i];
		}
	}
	CHECK_EQ(covered, size);
	return k;
}

/* Image block of a one-block file. */
static uint64_t block_of(struct sfs *fs, const char *name)
{
	struct sfs_extent ext[2];
	int fd = sfs_file_open(fs, name, 0);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_map(fs, fd, 0, BS, ext, 2), 1);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	return ext[0].img_off / BS;
}

static void write_blocks(struct sfs *fs, const char *name, uint8_t *buf, uint64_t blocks)
{
	int fd = sfs_file_open(fs, name, SFS_O_CREAT);
	CHECK(fd >= 0);
	fill(buf, 256 * BS, (uint32_t)blocks);
	for (uint64_t done = 0, k; done < blocks; done += k) {   /* buf: 1 MiB */
		k = blocks - done < 256 ? blocks - done : 256;
		CHECK_EQ(sfs_file_write(fs, fd, buf, (size_t)k * BS), (ssize_t)(k * BS));
	}
	CHECK_EQ(sfs_file_close(fs, fd), 0);
}

/* FORMAT.md: a file's first block is found next-fit from a rotating hint:
 * the search starts after the last block allocated (not at the lowest free
 * block) and wraps at the image's end. Z takes the first data block, A all
 * but the last two, B the second-to-last; Z is removed: C takes the last
 * block (after B's), D, the search wrapping, Z's old block. */
static void next_fit(uint8_t *buf)
{
	struct sfs_statfs sf;
	CHECK_EQ(sfs_format("hint.sfs", 4u << 20, 0), 0);
	struct sfs *fs = MOUNT_OR_DIE("hint.sfs");
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	uint64_t total = sf.total_blocks, first = total - sf.data_blocks;
	write_blocks(fs, "Z", buf, 1);
	CHECK_EQ(block_of(fs, "Z"), first);
	write_blocks(fs, "A", buf, sf.data_blocks - 3);
	write_blocks(fs, "B", buf, 1);
	CHECK_EQ(block_of(fs, "B"), total - 2);
	CHECK_EQ(sfs_unlink(fs, "Z"), 0);
	CHECK_EQ(sfs_sync(fs), 0);          /* Z's block is free once committed */
	write_blocks(fs, "C", buf, 1);
	CHECK_EQ(block_of(fs, "C"), total - 1);
	write_blocks(fs, "D", buf, 1);
	CHECK_EQ(block_of(fs, "D"), first);
	CHECK_EQ(check_accounting(fs), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN("hint.sfs");
}

int main(void)
{
	struct sfs *fs;
	struct sfs_statfs sf;
	struct sfs_extent runs[64];
	uint64_t free0, free1, data_blocks;
	uint8_t *buf, *rd;
	int fd, fd2, n, r;
	const size_t big = 1u << 20;

	buf = malloc(big);
	rd = malloc(big);
	CHECK(buf && rd);

	/* A small image, so "fill it" is quick: 4 MiB. */
	r = sfs_format(img, 4u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	fs = MOUNT_OR_DIE(img);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	CHECK_EQ(sf.block_size, BS);
	CHECK_EQ(sf.total_blocks, (4u << 20) / BS - 1);   /* + the backup superblock */
	CHECK(sf.data_blocks > 0 && sf.data_blocks < sf.total_blocks);
	CHECK_EQ(sf.free_blocks, sf.data_blocks);
	CHECK_EQ(sf.files, 0);
	data_blocks = sf.data_blocks;
	free0 = check_accounting(fs);

	/* Block counts at the edges of a block. */
	{
		static const struct { size_t len; uint64_t blocks; } t[] = {
			{ 0, 0 }, { 1, 1 }, { 4095, 1 }, { 4096, 1 }, { 4097, 2 },
			{ 8192, 2 }, { 8193, 3 }, { 40000, 10 },
		};
		char name[32];

		for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
			snprintf(name, sizeof name, "edge%u", i);
			fd = sfs_file_open(fs, name, SFS_O_CREAT | SFS_O_EXCL);
			CHECK(fd >= 0);
			fill(buf, t[i].len, i);
			CHECK_EQ(sfs_file_write(fs, fd, buf, t[i].len), t[i].len);
			CHECK_EQ(sfs_file_close(fs, fd), 0);
			CHECK_EQ(FILE_BLOCKS(fs, name), t[i].blocks);
		}
		free1 = check_accounting(fs);
		CHECK_EQ(free1, free0 - (0 + 1 + 1 + 1 + 2 + 2 + 3 + 10));
		for (unsigned i = 0; i < sizeof t / sizeof t[0]; i++) {
			snprintf(name, sizeof name, "edge%u", i);
			CHECK_EQ(sfs_unlink(fs, name), 0);
		}
		CHECK_EQ(check_accounting(fs), free0);
	}

	/* A sequential file, written 4 KiB at a time, is one contiguous run. */
	fd = sfs_file_open(fs, "seq", SFS_O_CREAT);
	CHECK(fd >= 0);
	fill(buf, 256 * BS, 42);
	for (unsigned i = 0; i < 256; i++)
		CHECK_EQ(sfs_file_write(fs, fd, buf + (size_t)i * BS, BS), BS);
	n = file_runs(fs, fd, 256 * BS, runs, 64);
	if (n != 1)
		FAIL("sequential 1 MiB file in %d runs, expected 1 contiguous run", n);
	CHECK_EQ(FILE_BLOCKS(fs, "seq"), 256);
	/* The image bytes at the mapped place are the file's (read via map). */
	CHECK_EQ(sfs_file_pread(fs, fd, rd, 256 * BS, 0), 256 * BS);
	CHECK(memcmp(rd, buf, 256 * BS) == 0);

	/* Appending in odd sizes through a second handle stays contiguous too. */
	fd2 = sfs_file_open(fs, "seq", SFS_O_APPEND);
	CHECK(fd2 >= 0);
	fill(buf, 100000, 43);
	for (unsigned i = 0; i < 10; i++)
		CHECK_EQ(sfs_file_write(fs, fd2, buf + i * 10000, 10000), 10000);
	n = file_runs(fs, fd, 256 * BS + 100000, runs, 64);
	if (n != 1)
		FAIL("appended file in %d runs, expected 1", n);
	CHECK_EQ(sfs_file_close(fs, fd2), 0);
	CHECK_EQ(FILE_BLOCKS(fs, "seq"), (256 * BS + 100000 + BS - 1) / BS);
	CHECK_EQ(check_accounting(fs), free0 - (256 * BS + 100000 + BS - 1) / BS);

	/* Truncate down frees blocks. */
	CHECK_EQ(sfs_file_truncate(fs, fd, 10 * BS + 1), 0);
	CHECK_EQ(FILE_BLOCKS(fs, "seq"), 11);
	CHECK_EQ(check_accounting(fs), free0 - 11);
	CHECK_EQ(sfs_file_truncate(fs, fd, 0), 0);
	CHECK_EQ(FILE_BLOCKS(fs, "seq"), 0);
	CHECK_EQ(check_accounting(fs), free0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);

	/* Fill the disk with files A (even) and B (odd), 8 blocks at a time. */
	{
		uint64_t got[2] = { 0, 0 };
		int fa = sfs_file_open(fs, "A", SFS_O_CREAT), fb = sfs_file_open(fs, "B", SFS_O_CREAT);
		int full = 0;

		CHECK(fa >= 0 && fb >= 0);
		fill(buf, 8 * BS, 1);
		while (!full) {
			for (int w = 0; w < 2 && !full; w++) {
				ssize_t k = sfs_file_write(fs, w ? fb : fa, buf, 8 * BS);

				if (k == -ENOSPC || (k >= 0 && k < 8 * BS))
					full = 1;
				else if (k < 0)
					FAIL("fill write: %s", strerror((int)-k));
				if (k > 0)
					got[w] += (uint64_t)k;
			}
		}
		CHECK_EQ(got[0] + got[1], free0 * BS);
		CHECK_EQ(sfs_file_close(fs, fa), 0);
		CHECK_EQ(sfs_file_close(fs, fb), 0);
		CHECK_EQ(check_accounting(fs), 0);

		/* Remove A: its blocks (interleaved with B's) come back and are used
		 * by one new file C; then the disk is exactly full again. */
		CHECK_EQ(sfs_unlink(fs, "A"), 0);
		CHECK_EQ(check_accounting(fs), got[0] / BS);
		fd = sfs_file_open(fs, "C", SFS_O_CREAT);
		CHECK(fd >= 0);
		fill(buf, big, 77);
		uint64_t c = 0;
		for (;;) {
			ssize_t k = sfs_file_write(fs, fd, buf, big);

			if (k < 0) {
				CHECK_EQ(k, -ENOSPC);
				break;
			}
			CHECK(k > 0);
			c += (uint64_t)k;   /* a short count: the next write says ENOSPC */
		}
		CHECK_EQ(c, got[0]);
		CHECK_EQ(check_accounting(fs), 0);
		/* C reads back exactly, although its blocks are scattered. */
		for (uint64_t off = 0; off < c; off += big) {
			size_t len = c - off < big ? (size_t)(c - off) : big;

			CHECK_EQ(sfs_file_pread(fs, fd, rd, len, off), len);
			if (memcmp(rd, buf, len))
				FAIL("C differs in [%" PRIu64 ", +%zu)", off, len);
		}
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}

	/* Persistence of the allocation: remount, fsck, the same numbers. */
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);
	fs = MOUNT_OR_DIE(img);
	CHECK_EQ(check_accounting(fs), 0);
	CHECK_EQ(sfs_unlink(fs, "B"), 0);
	CHECK_EQ(sfs_unlink(fs, "C"), 0);
	CHECK_EQ(sfs_unlink(fs, "seq"), 0);
	CHECK_EQ(check_accounting(fs), data_blocks);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);
	fs = MOUNT_OR_DIE(img);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	CHECK_EQ(sf.free_blocks, data_blocks);
	CHECK_EQ(sf.files, 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	next_fit(buf);
	free(buf);
	free(rd);
	printf("ok\n");
	return 0;
}
