/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS with many files written interleaved: 48 files, each
 * open once, grown by random-sized writes (1 byte to 40 KiB) in random order,
 * plus random overwrites, positional writes and sequential-cursor writes, with
 * a fixed seed; every file is verified byte for byte against a memory model
 * while mounted, after a remount, and fsck is clean.
 *
 * It must never use the library to compute what it expects.
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define NF      48
#define MAXSZ   (768u * 1024)
#define OPS     6000
static const char *img = "interleave.sfs";

struct mf {
	char name[16];
	uint8_t *d;
	size_t size;
	size_t target;
	int fd;
	uint64_t pos;     /* the handle's position, as the model sees it */
};
static struct mf f[NF];

static uint64_t rng = 12345;
static uint32_t rnd(void)
{
	return tu_lcg32(&rng);
}

static void verify_all(struct sfs *fs, const char *when)
{
	static uint8_t buf[MAXSZ + 4096];

	for (int i = 0; i < NF; i++) {
		int fd = sfs_file_open(fs, f[i].name, SFS_O_RDONLY);
		ssize_t n;

		if (fd < 0)
			FAIL("%s: open %s: %s", when, f[i].name, strerror(-fd));
		n = sfs_file_pread(fs, fd, buf, sizeof buf, 0);
		if (n != (ssize_t)f[i].size)
			FAIL("%s: %s: read %zd bytes, expected %zu", when, f[i].name, n, f[i].size);
		if (memcmp(buf, f[i].d, f[i].size)) {
			size_t k = 0;

			while (buf[k] == f[i].d[k])
				k++;
			FAIL("%s: %s: byte %zu is 0x%02x, expected 0x%02x", when, f[i].name, k,
			     buf[k], f[i].d[k]);
		}
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
}

int main(void)
{
	static uint8_t src[64 * 1024];
	struct sfs *fs;
	struct sfs_fsck_result res = { 0, 0 };
	char err[256];
	int r;

	r = sfs_format(img, 64u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	fs = MOUNT_OR_DIE(img);
	for (int i = 0; i < NF; i++) {
		snprintf(f[i].name, sizeof f[i].name, "il%02d", i);
		f[i].d = calloc(1, MAXSZ);
		CHECK(f[i].d);
		f[i].target = rnd() % MAXSZ;
		f[i].fd = sfs_file_open(fs, f[i].name, SFS_O_CREAT | SFS_O_EXCL);
		CHECK(f[i].fd >= 0);
	}

	for (int op = 0; op < OPS; op++) {
		struct mf *x = &f[rnd() % NF];
		size_t len = 1 + rnd() % (rnd() % 4 ? 4096 : 40960);
		uint64_t off;
		ssize_t n;
		int kind = (int)(rnd() % 10);

		for (size_t k = 0; k < len && k < sizeof src; k++)
			src[k] = (uint8_t)rnd();
		if (len > sizeof src)
			len = sizeof src;
		if (kind < 6) {                    /* grow: write at the cursor, at the end */
			if (x->size >= x->target)
				continue;
			if (len > x->target - x->size)
				len = x->target - x->size;
			if (x->pos != x->size) {
				CHECK_EQ(sfs_file_seek(fs, x->fd, (int64_t)x->size, SEEK_SET),
					 (int64_t)x->size);
				x->pos = x->size;
			}
			n = sfs_file_write(fs, x->fd, src, len);
			off = x->size;
			x->pos += len;
		} else if (kind < 9) {             /* overwrite inside, positional */
			if (!x->size)
				continue;
			off = rnd() % x->size;
			if (len > x->size - off)
				len = x->size - off;
			n = sfs_file_pwrite(fs, x->fd, src, len, off);
		} else {                           /* read back a random range */
			static uint8_t rb[64 * 1024];

			if (!x->size)
				continue;
			off = rnd() % x->size;
			if (len > x->size - off)
				len = x->size - off;
			n = sfs_file_pread(fs, x->fd, rb, len, off);
			if (n != (ssize_t)len || memcmp(rb, x->d + off, len))
				FAIL("op %d: %s: read-back of [%" PRIu64 ", +%zu) differs", op, x->name, off, len);
			continue;
		}
		if (n != (ssize_t)len)
			FAIL("op %d: %s: write of %zu at %" PRIu64 " returned %zd", op, x->name, len, off, n);
		memcpy(x->d + off, src, len);
		if (off + len > x->size)
			x->size = off + len;
	}
	verify_all(fs, "mounted");
	for (int i = 0; i < NF; i++)
		CHECK_EQ(sfs_file_close(fs, f[i].fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);

	r = sfs_fsck(img, 0, &res, NULL, NULL, err, sizeof err);
	if (r < 0)
		FAIL("fsck: %s (%s)", strerror(-r), err);
	CHECK_EQ(res.errors_found, 0);

	fs = MOUNT_OR_DIE(img);
	verify_all(fs, "remounted");
	CHECK_EQ(sfs_unmount(fs), 0);
	for (int i = 0; i < NF; i++)
		free(f[i].d);
	printf("ok\n");
	return 0;
}
