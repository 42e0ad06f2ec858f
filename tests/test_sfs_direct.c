/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS with SFS_MOUNT_DIRECT (the image opened O_DIRECT):
 * unaligned and aligned reads and writes at random offsets and lengths
 * (1 byte to 300 KiB, crossing block edges, growing and overwriting, truncates)
 * through a direct mount agree byte for byte with a memory model, and with a
 * normal mount of the same image afterwards; sfs_image_fd reports O_DIRECT;
 * a direct mount of a missing image says ENOENT (not "O_DIRECT not supported").
 * Skips where the file system of the test directory refuses O_DIRECT.
 *
 * It must never compare the library with itself.
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

#define NF    3
#define MAXSZ (2u << 20)
static const char *img = "direct.sfs";

static uint8_t *model[NF];
static size_t msize[NF];

static uint64_t rng = 99;
static uint32_t rnd(void)
{
	return tu_lcg32(&rng);
}

static void verify(struct sfs *fs, const char *when)
{
	static uint8_t buf[MAXSZ + 8192];

	for (int i = 0; i < NF; i++) {
		char name[8];
		int fd;
		ssize_t n;

		snprintf(name, sizeof name, "d%d", i);
		fd = sfs_file_open(fs, name, SFS_O_RDONLY);
		CHECK(fd >= 0);
		/* unaligned buffer, unaligned offset */
		n = sfs_file_pread(fs, fd, buf + 1, MAXSZ + 100, 0);
		if (n != (ssize_t)msize[i])
			FAIL("%s: %s: read %zd, expected %zu", when, name, n, msize[i]);
		for (size_t k = 0; k < msize[i]; k++)
			if (buf[1 + k] != model[i][k])
				FAIL("%s: %s: byte %zu is 0x%02x, expected 0x%02x", when, name, k,
				     buf[1 + k], model[i][k]);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
}

int main(void)
{
	static uint8_t src[300 * 1024 + 64], rb[300 * 1024 + 64];
	struct sfs *fs;
	char err[256] = "";
	int fd[NF], r, direct = 0;

	/* A direct mount that fails for another reason than O_DIRECT says that
	 * reason (a missing image: ENOENT and its message). */
	CHECK_EQ(sfs_mount("missing.sfs", SFS_MOUNT_DIRECT, &fs, err, sizeof err), -ENOENT);
	if (strcmp(err, strerror(ENOENT)))
		FAIL("direct mount of a missing image: \"%s\"", err);

	/* Does this directory take O_DIRECT at all? (probed apart from SimpleFS) */
	if (!tu_have_odirect(".", err, sizeof err)) {
		printf("O_DIRECT not supported here: %s\n", err);
		return 77;
	}

	r = sfs_format(img, 32u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	r = sfs_mount(img, SFS_MOUNT_DIRECT, &fs, err, sizeof err);
	if (r < 0)
		FAIL("direct mount: %s (%s)", strerror(-r), err);
	CHECK(sfs_image_fd(fs, &direct) >= 0);
	CHECK(direct != 0);
	CHECK(fcntl(sfs_image_fd(fs, NULL), F_GETFL) & O_DIRECT);

	for (int i = 0; i < NF; i++) {
		char name[8];

		snprintf(name, sizeof name, "d%d", i);
		fd[i] = sfs_file_open(fs, name, SFS_O_CREAT);
		CHECK(fd[i] >= 0);
		model[i] = calloc(1, MAXSZ);
		CHECK(model[i]);
	}
	for (int op = 0; op < 600; op++) {
		int i = (int)(rnd() % NF);
		unsigned kind = rnd() % 10;
		size_t len = kind < 2 ? 4096 * (1 + rnd() % 16) : 1 + rnd() % (rnd() % 3 ? 5000 : sizeof src - 64);
		uint64_t off = kind < 2 ? 4096 * (uint64_t)(rnd() % 256) : rnd() % (MAXSZ - len);
		unsigned shift = kind < 2 ? 0 : rnd() % 64;    /* buffer misalignment */

		if (off + len > MAXSZ)
			continue;
		if (kind == 9) {                   /* truncate */
			size_t ns = rnd() % MAXSZ;

			CHECK_EQ(sfs_file_truncate(fs, fd[i], ns), 0);
			if (ns > msize[i])
				memset(model[i] + msize[i], 0, ns - msize[i]);
			msize[i] = ns;
			continue;
		}
		if (kind == 8) {                   /* read back */
			ssize_t n = sfs_file_pread(fs, fd[i], rb + shift, len, off);
			size_t want = off >= msize[i] ? 0 : (msize[i] - off < len ? msize[i] - off : len);

			if (n != (ssize_t)want || memcmp(rb + shift, model[i] + off, want))
				FAIL("op %d: read of d%d [%" PRIu64 ", +%zu) at shift %u: %zd bytes, or wrong",
				     op, i, off, len, shift, n);
			continue;
		}
		for (size_t k = 0; k < len; k++)
			src[shift + k] = (uint8_t)rnd();
		r = (int)sfs_file_pwrite(fs, fd[i], src + shift, len, off);
		if (r != (int)len)
			FAIL("op %d: write of d%d [%" PRIu64 ", +%zu) at shift %u returned %d", op, i, off,
			     len, shift, r);
		if (off > msize[i])
			memset(model[i] + msize[i], 0, off - msize[i]);
		memcpy(model[i] + off, src + shift, len);
		if (off + len > msize[i])
			msize[i] = off + len;
	}
	verify(fs, "direct");
	for (int i = 0; i < NF; i++)
		CHECK_EQ(sfs_file_close(fs, fd[i]), 0);
	CHECK_EQ(sfs_unmount(fs), 0);

	r = sfs_mount(img, 0, &fs, err, sizeof err);
	if (r < 0)
		FAIL("mount: %s (%s)", strerror(-r), err);
	CHECK(sfs_image_fd(fs, &direct) >= 0);
	CHECK_EQ(direct, 0);
	verify(fs, "buffered remount");
	CHECK_EQ(sfs_unmount(fs), 0);
	{
		struct sfs_fsck_result res = { 0, 0 };

		CHECK_EQ(sfs_fsck(img, 0, &res, NULL, NULL, err, sizeof err), 0);
		CHECK_EQ(res.errors_found, 0);
	}
	for (int i = 0; i < NF; i++)
		free(model[i]);
	printf("ok\n");
	return 0;
}
