/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS limits and their errors: names of 63 bytes work, 64
 * give -ENAMETOOLONG, empty names -EINVAL; exactly max_files files can exist
 * and one more gives -ENOSPC (a slot comes back after a remove: once the
 * last slot was taken, or when the search from the slot after the last one
 * taken meets the end, it wraps to the first, never past the array;
 * the full directory survives a remount); bad handles give -EBADF everywhere; the
 * handle table holds exactly 65536 handles, then -EMFILE; a file may be
 * truncated to exactly 2^44 bytes (fsck clean, the size kept across a
 * remount) but not past it, and a write at 2^44 (at an
 * offset, the position, or appending) is -EFBIG; offsets and seeks that
 * overflow are refused and change nothing. Formatted images of 1 MiB to
 * 1 GiB have the journal FORMAT.md's rule gives them.
 *
 * It must never accept a crash or a silent success where an error is due.
 */
#include <sfs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
/* r must be one of the listed errors */
#define CHECK_ERR2(r, e1, e2) do { long long _r = (long long)(r); \
	if (_r != -(e1) && _r != -(e2)) FAIL("%s = %lld (%s), expected -%s or -%s", #r, _r, \
		_r < 0 ? strerror((int)-_r) : "success", #e1, #e2); } while (0)

static const char *img = "limits.sfs";

static void names(struct sfs *fs)
{
	char n63[SFS_NAME_MAX + 1], n64[SFS_NAME_MAX + 2], n200[201];
	struct sfs_stat st;
	int fd;

	CHECK_EQ(SFS_NAME_MAX, 63);
	memset(n63, 'L', SFS_NAME_MAX);
	n63[SFS_NAME_MAX] = '\0';
	memset(n64, 'L', SFS_NAME_MAX + 1);
	n64[SFS_NAME_MAX + 1] = '\0';
	memset(n200, 'M', 200);
	n200[200] = '\0';

	fd = sfs_file_open(fs, n63, SFS_O_CREAT);
	if (fd < 0)
		FAIL("63-byte name: %s", strerror(-fd));
	CHECK_EQ(sfs_file_write(fs, fd, "x", 1), 1);
	CHECK_EQ(sfs_file_stat(fs, fd, &st), 0);
	CHECK(strcmp(st.name, n63) == 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_stat(fs, n63, &st), 0);
	CHECK_EQ(st.size, 1);

	CHECK_EQ(sfs_file_open(fs, n64, SFS_O_CREAT), -ENAMETOOLONG);
	CHECK_EQ(sfs_file_open(fs, n64, 0), -ENAMETOOLONG);
	CHECK_EQ(sfs_file_open(fs, n200, SFS_O_CREAT), -ENAMETOOLONG);
	CHECK_EQ(sfs_unlink(fs, n64), -ENAMETOOLONG);
	CHECK_EQ(sfs_stat(fs, n64, &st), -ENAMETOOLONG);
	/* A 64-byte name must not match its 63-byte prefix either. */
	CHECK_EQ(sfs_stat(fs, n63, &st), 0);

	CHECK_EQ(sfs_file_open(fs, "", SFS_O_CREAT), -EINVAL);
	CHECK_EQ(sfs_file_open(fs, "", 0), -EINVAL);
	CHECK_EQ(sfs_unlink(fs, ""), -EINVAL);
	CHECK_EQ(sfs_stat(fs, "", &st), -EINVAL);
	/* '/' has no meaning in a flat directory (FORMAT: names exclude it). */
	CHECK_EQ(sfs_file_open(fs, "a/b", SFS_O_CREAT), -EINVAL);

	CHECK_EQ(sfs_file_open(fs, "nope", 0), -ENOENT);
	CHECK_EQ(sfs_unlink(fs, "nope"), -ENOENT);
	CHECK_EQ(sfs_stat(fs, "nope", &st), -ENOENT);
	fd = sfs_file_open(fs, "excl", SFS_O_CREAT | SFS_O_EXCL);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_open(fs, "excl", SFS_O_CREAT | SFS_O_EXCL), -EEXIST);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unlink(fs, "excl"), 0);
	CHECK_EQ(sfs_unlink(fs, n63), 0);
}

static void handles(struct sfs *fs)
{
	char buf[16];
	struct sfs_stat st;
	struct sfs_extent ext[2];
	int fd, ro, bad[] = { -1, -1000, 7777, 65536, 1 << 30 };

	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int b = bad[i];

		CHECK_EQ(sfs_file_close(fs, b), -EBADF);
		CHECK_EQ(sfs_file_pread(fs, b, buf, 1, 0), -EBADF);
		CHECK_EQ(sfs_file_pwrite(fs, b, buf, 1, 0), -EBADF);
		CHECK_EQ(sfs_file_read(fs, b, buf, 1), -EBADF);
		CHECK_EQ(sfs_file_write(fs, b, buf, 1), -EBADF);
		CHECK_EQ(sfs_file_seek(fs, b, 0, SEEK_SET), -EBADF);
		CHECK_EQ(sfs_file_fsync(fs, b), -EBADF);
		CHECK_EQ(sfs_file_truncate(fs, b, 0), -EBADF);
		CHECK_EQ(sfs_file_stat(fs, b, &st), -EBADF);
		CHECK_EQ(sfs_file_map(fs, b, 0, 1, ext, 2), -EBADF);
	}
	/* A closed handle is bad, also after its number could be reused. */
	fd = sfs_file_open(fs, "h", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_file_close(fs, fd), -EBADF);
	CHECK_EQ(sfs_file_write(fs, fd, "x", 1), -EBADF);
	/* Writes through a read-only handle. */
	ro = sfs_file_open(fs, "h", SFS_O_RDONLY);
	CHECK(ro >= 0);
	CHECK_EQ(sfs_file_write(fs, ro, "x", 1), -EBADF);
	CHECK_EQ(sfs_file_pwrite(fs, ro, "x", 1, 0), -EBADF);
	CHECK_EQ(sfs_file_truncate(fs, ro, 10), -EBADF);
	CHECK_EQ(sfs_stat(fs, "h", &st), 0);
	CHECK_EQ(st.size, 0);
	CHECK_EQ(sfs_file_read(fs, ro, buf, sizeof buf), 0);
	CHECK_EQ(sfs_file_close(fs, ro), 0);
	/* Many handles on one file at once (the cap is far above this). */
	{
		static int h[2000];

		for (int i = 0; i < 2000; i++) {
			h[i] = sfs_file_open(fs, "h", 0);
			if (h[i] < 0)
				FAIL("handle %d: %s", i, strerror(-h[i]));
		}
		CHECK_EQ(sfs_file_pwrite(fs, h[1999], "abc", 3, 0), 3);
		CHECK_EQ(sfs_file_pread(fs, h[0], buf, sizeof buf, 0), 3);
		CHECK(memcmp(buf, "abc", 3) == 0);
		for (int i = 0; i < 2000; i++)
			CHECK_EQ(sfs_file_close(fs, h[i]), 0);
	}
	/* The handle table is capped (65536, docs/FORMAT.md): -EMFILE, and
	 * closing one makes room again. */
	{
		static int h[70000];
		int n = 0, r;

		while ((r = sfs_file_open(fs, "h", SFS_O_RDONLY)) >= 0) {
			CHECK(n < 70000);
			h[n++] = r;
		}
		CHECK_EQ(r, -EMFILE);
		if (n != 65536)      /* exactly the documented cap, nothing else is open here */
			FAIL("%d handles before -EMFILE, expected 65536", n);
		{
			struct sfs_stat st;

			/* a create that cannot get a handle creates nothing */
			CHECK_EQ(sfs_file_open(fs, "no-handle", SFS_O_CREAT), -EMFILE);
			CHECK_EQ(sfs_stat(fs, "no-handle", &st), -ENOENT);
		}
		CHECK_EQ(sfs_file_close(fs, h[n / 2]), 0);
		h[n / 2] = sfs_file_open(fs, "h", 0);
		CHECK(h[n / 2] >= 0);
		CHECK_EQ(sfs_file_open(fs, "h", 0), -EMFILE);
		for (int i = 0; i < n; i++)
			CHECK_EQ(sfs_file_close(fs, h[i]), 0);
	}
	CHECK_EQ(sfs_unlink(fs, "h"), 0);
}

static void offsets(struct sfs *fs)
{
	char buf[64];
	struct sfs_stat st;
	int fd = sfs_file_open(fs, "off", SFS_O_CREAT);

	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_write(fs, fd, "0123456789", 10), 10);

	/* off + len wraps around 2^64 */
	CHECK_ERR2(sfs_file_pwrite(fs, fd, buf, 100, UINT64_MAX - 10), EFBIG, EINVAL);
	CHECK_ERR2(sfs_file_pwrite(fs, fd, buf, 1, UINT64_MAX), EFBIG, EINVAL);
	/* beyond any possible file (the image is 64 MiB; 2^63 and 2^50) */
	CHECK_ERR2(sfs_file_pwrite(fs, fd, buf, 1, 1ull << 63), EFBIG, EINVAL);
	CHECK_ERR2(sfs_file_pwrite(fs, fd, buf, 1, 1ull << 50), EFBIG, ENOSPC);
	CHECK_ERR2(sfs_file_truncate(fs, fd, UINT64_MAX), EFBIG, EINVAL);
	CHECK_ERR2(sfs_file_truncate(fs, fd, 1ull << 50), EFBIG, ENOSPC);
	/* the limit itself (FORMAT.md): a file holds up to 2^44 bytes, at offsets below
	 * 2^44: truncating to exactly 2^44 works, one byte more or a write at 2^44 is
	 * -EFBIG (not -ENOSPC: nothing is allocated for it) */
	CHECK_EQ(sfs_file_truncate(fs, fd, SFS_MAX_SIZE + 1), -EFBIG);
	CHECK_EQ(sfs_file_truncate(fs, fd, SFS_MAX_SIZE), 0);
	CHECK_EQ(sfs_file_stat(fs, fd, &st), 0);
	CHECK_EQ(st.size, SFS_MAX_SIZE);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 1, SFS_MAX_SIZE), -EFBIG);
	CHECK_EQ(sfs_file_seek(fs, fd, 0, SEEK_END), (long long)SFS_MAX_SIZE);
	CHECK_EQ(sfs_file_write(fs, fd, "z", 1), -EFBIG);          /* at the position */
	{
		int ap = sfs_file_open(fs, "off", SFS_O_APPEND);

		CHECK(ap >= 0);
		CHECK_EQ(sfs_file_write(fs, ap, "z", 1), -EFBIG);  /* appending at 2^44 */
		CHECK_EQ(sfs_file_close(fs, ap), 0);
	}
	CHECK_EQ(sfs_file_seek(fs, fd, 10, SEEK_SET), 10);
	memset(buf, 1, sizeof buf);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, sizeof buf, SFS_MAX_SIZE - 4), 4);
	CHECK(buf[0] == 0 && buf[3] == 0);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, sizeof buf, SFS_MAX_SIZE), 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, 10), 0);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, 10, 0), 10);
	CHECK(memcmp(buf, "0123456789", 10) == 0);
	/* reads past the end, or at absurd offsets, read nothing */
	{
		ssize_t r = sfs_file_pread(fs, fd, buf, sizeof buf, UINT64_MAX - 3);

		if (r != 0 && r != -EINVAL && r != -EFBIG)
			FAIL("pread at 2^64-4 = %zd, expected 0 or an error", r);
	}
	CHECK_EQ(sfs_file_pread(fs, fd, buf, sizeof buf, 1ull << 40), 0);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, sizeof buf, 10), 0);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, sizeof buf, 7), 3);

	/* seeks */
	CHECK_EQ(sfs_file_seek(fs, fd, 0, SEEK_END), 10);
	CHECK_EQ(sfs_file_seek(fs, fd, -1, SEEK_SET), -EINVAL);
	CHECK_EQ(sfs_file_seek(fs, fd, -11, SEEK_END), -EINVAL);
	CHECK_EQ(sfs_file_seek(fs, fd, 3, 12345), -EINVAL);
	CHECK_EQ(sfs_file_seek(fs, fd, 0, SEEK_CUR), 10);   /* failed seeks moved nothing */
	CHECK_EQ(sfs_file_seek(fs, fd, INT64_MAX, SEEK_SET), INT64_MAX);
	CHECK_ERR2(sfs_file_seek(fs, fd, 1, SEEK_CUR), EOVERFLOW, EINVAL);
	CHECK_ERR2(sfs_file_seek(fs, fd, INT64_MAX, SEEK_END), EOVERFLOW, EINVAL);
	CHECK_ERR2(sfs_file_write(fs, fd, "z", 1), EFBIG, EINVAL);
	CHECK_EQ(sfs_file_read(fs, fd, buf, sizeof buf), 0);
	CHECK_EQ(sfs_file_seek(fs, fd, 4, SEEK_SET), 4);
	CHECK_EQ(sfs_file_seek(fs, fd, 2, SEEK_CUR), 6);
	CHECK_EQ(sfs_file_seek(fs, fd, -6, SEEK_CUR), 0);
	CHECK_EQ(sfs_file_seek(fs, fd, -1, SEEK_CUR), -EINVAL);

	/* none of it changed the file */
	CHECK_EQ(sfs_file_stat(fs, fd, &st), 0);
	CHECK_EQ(st.size, 10);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, sizeof buf, 0), 10);
	CHECK(memcmp(buf, "0123456789", 10) == 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
}

static void too_many_files(void)
{
	struct sfs *fs;
	struct sfs_statfs sf;
	struct sfs_stat st;
	char name[32];
	uint32_t max, cookie = 0, n = 0;
	int fd, r;

	r = sfs_format(img, 64u << 20, 1024);
	if (r < 0)
		FAIL("format with 1024 files: %s", strerror(-r));
	fs = MOUNT_OR_DIE(img);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	max = sf.max_files;
	if (max < 1024)
		FAIL("max_files %u after asking for 1024", max);
	for (uint32_t i = 0; i < max; i++) {
		snprintf(name, sizeof name, "file%05u", i);
		fd = sfs_file_open(fs, name, SFS_O_CREAT | SFS_O_EXCL);
		if (fd < 0)
			FAIL("file %u of %u: %s", i, max, strerror(-fd));
		if (i % 97 == 0)
			CHECK_EQ(sfs_file_write(fs, fd, name, strlen(name)), strlen(name));
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	CHECK_EQ(sfs_file_open(fs, "one-too-many", SFS_O_CREAT), -ENOSPC);
	CHECK_EQ(sfs_stat(fs, "one-too-many", &st), -ENOENT);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	CHECK_EQ(sf.files, max);
	/* a slot comes back after a remove */
	CHECK_EQ(sfs_unlink(fs, "file00500"), 0);
	fd = sfs_file_open(fs, "replacement", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_file_open(fs, "again-too-many", SFS_O_CREAT), -ENOSPC);
	/* a free slot before the one last taken: the search runs to the last
	 * slot, then wraps to the first, never past the array */
	CHECK_EQ(sfs_unlink(fs, "file00050"), 0);
	fd = sfs_file_open(fs, "wrapped", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);

	fs = MOUNT_OR_DIE(img);
	while ((r = sfs_readdir(fs, &cookie, &st)) == 1) {
		n++;
		CHECK(n <= max);
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(n, max);
	CHECK_EQ(sfs_stat(fs, "replacement", &st), 0);
	CHECK_EQ(sfs_stat(fs, "file00500", &st), -ENOENT);
	CHECK_EQ(sfs_stat(fs, "wrapped", &st), 0);
	CHECK_EQ(sfs_stat(fs, "file00050", &st), -ENOENT);
	CHECK_EQ(sfs_stat(fs, "file00097", &st), 0);
	CHECK_EQ(st.size, 9);
	CHECK_EQ(sfs_file_open(fs, "still-too-many", SFS_O_CREAT), -ENOSPC);
	CHECK_EQ(sfs_unmount(fs), 0);
}

/* The journal format gives an image (FORMAT.md, "Format"): J = clamp(
 * total_blocks / 128, 16, 256) + 1 blocks, read from the superblock
 * (total_blocks at byte 16, journal_blocks at 24, little-endian). */
static void journal_sizes(void)
{
	const uint64_t mib[] = { 1, 8, 64, 100, 128, 200, 1024 };
	for (unsigned i = 0; i < sizeof mib / sizeof mib[0]; i++) {
		CHECK_EQ(sfs_format("geo.sfs", mib[i] << 20, 0), 0);
		uint8_t sb[32];
		int fd = open("geo.sfs", O_RDONLY);
		CHECK(fd >= 0);
		CHECK_EQ(pread(fd, sb, sizeof sb, 0), (ssize_t)sizeof sb);
		close(fd);
		uint32_t total = sb[16] | sb[17] << 8 | sb[18] << 16 | (uint32_t)sb[19] << 24;
		uint32_t j = sb[24] | sb[25] << 8 | sb[26] << 16 | (uint32_t)sb[27] << 24;
		uint32_t cap = total / 128 < 16 ? 16 : total / 128 > 256 ? 256 : total / 128;
		printf("%4llu MiB: %u blocks, journal %u blocks\n", (unsigned long long)mib[i], total, j);
		CHECK_EQ(total, (uint32_t)((mib[i] << 20) / 4096 - 1));
		CHECK_EQ(j, cap + 1);
		FSCK_CLEAN("geo.sfs");
	}
	unlink("geo.sfs");
}

int main(void)
{
	struct sfs *fs;
	int r;

	/* A fixed mmap threshold (glibc raises it as mmapped blocks are freed):
	 * too_many_files' directory array of 1024 entries (128 KiB) is then
	 * always mapped on its own, and the zeros after it read as free slots,
	 * so a slot search that runs past the array takes one (ASan reports the
	 * overrun itself). */
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
	journal_sizes();

	/* format arguments */
	CHECK(sfs_format("tiny.sfs", SFS_MIN_SIZE - 4096, 0) < 0);
	CHECK(sfs_format("huge.sfs", SFS_MAX_SIZE + (1ull << 30), 0) < 0);

	r = sfs_format(img, 64u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	fs = MOUNT_OR_DIE(img);
	names(fs);
	handles(fs);
	offsets(fs);
	/* a file of exactly 2^44 bytes is a valid file: fsck is clean, and it
	 * keeps its size across a remount */
	int fd = sfs_file_open(fs, "max", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, SFS_MAX_SIZE), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);
	fs = MOUNT_OR_DIE(img);
	struct sfs_stat st;
	CHECK_EQ(sfs_stat(fs, "max", &st), 0);
	CHECK_EQ(st.size, SFS_MAX_SIZE);
	CHECK_EQ(sfs_unlink(fs, "max"), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	too_many_files();
	FSCK_CLEAN(img);
	printf("ok\n");
	return 0;
}
