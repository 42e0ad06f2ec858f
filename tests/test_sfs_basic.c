/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS basics - format, mount, create/write/read/seek/pread/pwrite,
 * remount persistence, stat, statfs, readdir, unlink (also while open), truncate,
 * holes, lock (-EBUSY naming the pid), fsck clean, memory device (its range and
 * write count; a clean image's writable mount writes nothing), reused blocks read as zeros, O_DIRECT mounts (unaligned I/O), classic
 * API, a NULL fs (-EINVAL), a transaction committed only when it would exceed the
 * journal's capacity, a create refused by a full directory writing nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sfs.h"
#include "parts.h"

static int failures;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s\n", \
	__FILE__, __LINE__, #c); failures++; } } while (0)
#define REQUIRE(c) do { if (!(c)) { fprintf(stderr, "%s:%d: required: %s\n", \
	__FILE__, __LINE__, #c); exit(1); } } while (0)

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

static int all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

static void fsck_clean(const char *img)
{
	struct sfs_fsck_result res;
	char err[256];
	int r = sfs_fsck(img, 0, &res, NULL, NULL, err, sizeof err);
	CHECK(r == 0);
	CHECK(res.errors_found == 0);
}

static void test_handle_api(void)
{
	const char *img = "t.sfs";
	char err[256];
	struct sfs *fs;
	REQUIRE(sfs_format(img, 8u << 20, 0) == 0);
	REQUIRE(sfs_mount(img, 0, &fs, err, sizeof err) == 0);

	struct sfs_statfs sf0;
	REQUIRE(sfs_statfs(fs, &sf0) == 0);
	CHECK(sf0.block_size == 4096);
	CHECK(sf0.total_blocks == 2047);   /* 2048 blocks, the last a backup superblock */
	CHECK(sf0.free_blocks == sf0.data_blocks);
	CHECK(sf0.files == 0);
	CHECK(sf0.max_files == SFS_DEFAULT_MAX_FILES);
	CHECK(sf0.name_max == 63);

	/* Names. */
	char longname[80];
	memset(longname, 'x', 64);
	longname[64] = 0;
	CHECK(sfs_file_open(fs, longname, SFS_O_CREAT) == -ENAMETOOLONG);
	longname[63] = 0;
	int fl = sfs_file_open(fs, longname, SFS_O_CREAT);
	CHECK(fl >= 0);
	CHECK(sfs_file_close(fs, fl) == 0);
	CHECK(sfs_file_open(fs, "", SFS_O_CREAT) == -EINVAL);
	CHECK(sfs_file_open(fs, "nope", 0) == -ENOENT);
	CHECK(sfs_unlink(fs, longname) == 0);

	/* Sequential write and read at the position. */
	enum { N = 100000 };
	static unsigned char a[N], b[N];
	pattern(a, N, 1);
	int fd = sfs_file_open(fs, "alpha", SFS_O_CREAT | SFS_O_EXCL);
	REQUIRE(fd >= 0);
	CHECK(sfs_file_open(fs, "alpha", SFS_O_CREAT | SFS_O_EXCL) == -EEXIST);
	CHECK(sfs_file_write(fs, fd, a, 1000) == 1000);
	CHECK(sfs_file_write(fs, fd, a + 1000, N - 1000) == N - 1000);
	CHECK(sfs_file_seek(fs, fd, 0, SEEK_CUR) == N);
	CHECK(sfs_file_seek(fs, fd, 0, SEEK_SET) == 0);
	memset(b, 0, N);
	CHECK(sfs_file_read(fs, fd, b, N + 50) == N);
	CHECK(memcmp(a, b, N) == 0);
	CHECK(sfs_file_read(fs, fd, b, 10) == 0);   /* EOF */
	CHECK(sfs_file_seek(fs, fd, -10, SEEK_END) == N - 10);
	CHECK(sfs_file_read(fs, fd, b, 100) == 10);
	CHECK(memcmp(b, a + N - 10, 10) == 0);
	CHECK(sfs_file_seek(fs, fd, -1, SEEK_SET) == -EINVAL);

	/* Positional overwrite (in place) across a block boundary. */
	unsigned char p[9000];
	pattern(p, sizeof p, 7);
	CHECK(sfs_file_pwrite(fs, fd, p, sizeof p, 4000) == (ssize_t)sizeof p);
	memcpy(a + 4000, p, sizeof p);
	CHECK(sfs_file_pread(fs, fd, b, N, 0) == N);
	CHECK(memcmp(a, b, N) == 0);
	CHECK(sfs_file_pread(fs, fd, b, 100, N + 5) == 0);

	struct sfs_stat st;
	CHECK(sfs_file_stat(fs, fd, &st) == 0);
	CHECK(st.size == N);
	CHECK(st.blocks == (N + 4095) / 4096);
	CHECK(strcmp(st.name, "alpha") == 0);
	CHECK(st.mtime_ns > 0);

	/* Extents: a sequentially written file is one contiguous extent. */
	struct sfs_extent ext[4];
	int ne = sfs_file_map(fs, fd, 0, N, ext, 4);
	CHECK(ne == 1);
	if (ne == 1) {
		CHECK(ext[0].file_off == 0 && ext[0].len == N && ext[0].img_off % 4096 == 0);
		/* The extent really points at the bytes. */
		FILE *f = fopen(img, "rb");
		unsigned char q[64];
		CHECK(f && fseeko(f, (off_t)ext[0].img_off + 4000, SEEK_SET) == 0 &&
		      fread(q, 1, 64, f) == 64 && memcmp(q, p, 64) == 0);
		if (f)
			fclose(f);
	}

	/* Holes: write far past the end; the gap reads as zeros. */
	int fh = sfs_file_open(fs, "holes", SFS_O_CREAT);
	REQUIRE(fh >= 0);
	CHECK(sfs_file_pwrite(fs, fh, "abc", 3, 5000) == 3);
	CHECK(sfs_file_pread(fs, fh, b, 6000, 0) == 5003);
	CHECK(all_zero(b, 5000) && memcmp(b + 5000, "abc", 3) == 0);
	CHECK(sfs_file_seek(fs, fh, 300000, SEEK_SET) == 300000);
	CHECK(sfs_file_write(fs, fh, "Z", 1) == 1);
	CHECK(sfs_file_pread(fs, fh, b, N, 5003) == N);
	CHECK(all_zero(b, N));

	/* Truncate down then up: the old bytes must not come back. */
	CHECK(sfs_file_truncate(fs, fh, 5002) == 0);
	CHECK(sfs_file_truncate(fs, fh, 20000) == 0);
	CHECK(sfs_file_pread(fs, fh, b, 30000, 0) == 20000);
	CHECK(all_zero(b, 5000) && memcmp(b + 5000, "ab", 2) == 0 && all_zero(b + 5002, 20000 - 5002));
	CHECK(sfs_file_stat(fs, fh, &st) == 0 && st.size == 20000);
	CHECK(sfs_file_truncate(fs, fh, 0) == 0);
	CHECK(sfs_file_stat(fs, fh, &st) == 0 && st.size == 0 && st.blocks == 0);

	/* Bad handles. */
	CHECK(sfs_file_read(fs, 999, b, 1) == -EBADF);
	CHECK(sfs_file_write(fs, -1, b, 1) == -EBADF);
	CHECK(sfs_file_close(fs, 12345) == -EBADF);

	/* No fs at all: -EINVAL from every call of the handle API (man3). */
	struct sfs *nofs = NULL;
	struct sfs_extent nox;
	struct sfs_statfs sfst;
	CHECK(sfs_file_open(nofs, "alpha", SFS_O_CREAT) == -EINVAL);
	CHECK(sfs_file_close(nofs, 0) == -EINVAL);
	CHECK(sfs_file_pread(nofs, 0, b, 1, 0) == -EINVAL);
	CHECK(sfs_file_read(nofs, 0, b, 1) == -EINVAL);
	CHECK(sfs_file_pwrite(nofs, 0, b, 1, 0) == -EINVAL);
	CHECK(sfs_file_write(nofs, 0, b, 1) == -EINVAL);
	CHECK(sfs_file_seek(nofs, 0, 0, SEEK_SET) == -EINVAL);
	CHECK(sfs_file_fsync(nofs, 0) == -EINVAL);
	CHECK(sfs_file_truncate(nofs, 0, 0) == -EINVAL);
	CHECK(sfs_unlink(nofs, "alpha") == -EINVAL);
	CHECK(sfs_file_stat(nofs, 0, &st) == -EINVAL);
	CHECK(sfs_stat(nofs, "alpha", &st) == -EINVAL);
	CHECK(sfs_statfs(nofs, &sfst) == -EINVAL);
	CHECK(sfs_readdir(nofs, &(uint32_t){ 0 }, &st) == -EINVAL);
	CHECK(sfs_file_map(nofs, 0, 0, 1, &nox, 1) == -EINVAL);
	CHECK(sfs_file_map_write(nofs, 0, 0, 1, &nox, 1) == -EINVAL);
	CHECK(sfs_image_fd(nofs, NULL) == -EINVAL);
	CHECK(sfs_sync(nofs) == -EINVAL);
	CHECK(sfs_unmount(nofs) == -EINVAL);
	CHECK(sfs_mount_warnings(nofs, NULL, 0) == 0);

	/* Read-only handle. */
	int fr = sfs_file_open(fs, "alpha", SFS_O_RDONLY);
	CHECK(fr >= 0);
	CHECK(sfs_file_write(fs, fr, "x", 1) == -EBADF);
	CHECK(sfs_file_pread(fs, fr, b, 5, 0) == 5 && memcmp(a, b, 5) == 0);
	CHECK(sfs_file_close(fs, fr) == 0);

	/* Readdir sees exactly alpha and holes. */
	uint32_t cookie = 0;
	int seen = 0, n = 0, r;
	while ((r = sfs_readdir(fs, &cookie, &st)) == 1) {
		n++;
		if (!strcmp(st.name, "alpha"))
			seen |= 1;
		if (!strcmp(st.name, "holes"))
			seen |= 2;
	}
	CHECK(r == 0 && n == 2 && seen == 3);

	/* Second mount of the same image: -EBUSY naming this process. */
	struct sfs *fs2;
	char want[64];
	snprintf(want, sizeof want, "in use by pid %d", (int)getpid());
	CHECK(sfs_mount(img, 0, &fs2, err, sizeof err) == -EBUSY);
	CHECK(strcmp(err, want) == 0);
	CHECK(sfs_lock_holder(img) == (int)getpid());

	CHECK(sfs_file_close(fs, fh) == 0);
	CHECK(sfs_file_close(fs, fd) == 0);
	CHECK(sfs_file_close(fs, fd) == -EBADF);
	CHECK(sfs_unmount(fs) == 0);
	CHECK(sfs_lock_holder(img) == 0);
	fsck_clean(img);

	/* Remount: contents persisted. */
	REQUIRE(sfs_mount(img, 0, &fs, err, sizeof err) == 0);
	CHECK(sfs_stat(fs, "alpha", &st) == 0 && st.size == N);
	CHECK(sfs_stat(fs, "holes", &st) == 0 && st.size == 0);
	fd = sfs_file_open(fs, "alpha", 0);
	REQUIRE(fd >= 0);
	memset(b, 0, N);
	CHECK(sfs_file_pread(fs, fd, b, N, 0) == N && memcmp(a, b, N) == 0);

	/* Unlink while open: name gone at once, handle still works, blocks
	 * freed at close. */
	struct sfs_statfs sf1, sf2;
	CHECK(sfs_statfs(fs, &sf1) == 0);
	CHECK(sfs_unlink(fs, "alpha") == 0);
	CHECK(sfs_stat(fs, "alpha", &st) == -ENOENT);
	CHECK(sfs_unlink(fs, "alpha") == -ENOENT);
	int fd2 = sfs_file_open(fs, "alpha", SFS_O_CREAT);   /* name reusable */
	CHECK(fd2 >= 0);
	CHECK(sfs_file_pwrite(fs, fd2, "new", 3, 0) == 3);
	CHECK(sfs_file_pread(fs, fd, b, N, 0) == N && memcmp(a, b, N) == 0);
	CHECK(sfs_file_close(fs, fd) == 0);
	CHECK(sfs_statfs(fs, &sf2) == 0);
	CHECK(sf2.free_blocks == sf1.free_blocks + (N + 4095) / 4096 - 1);
	CHECK(sfs_file_pread(fs, fd2, b, 10, 0) == 3 && memcmp(b, "new", 3) == 0);
	CHECK(sfs_file_close(fs, fd2) == 0);
	CHECK(sfs_unlink(fs, "alpha") == 0);
	CHECK(sfs_unlink(fs, "holes") == 0);
	CHECK(sfs_statfs(fs, &sf2) == 0);
	CHECK(sf2.free_blocks == sf0.free_blocks && sf2.files == 0);

	/* O_TRUNC and O_APPEND. */
	fd = sfs_file_open(fs, "log", SFS_O_CREAT | SFS_O_APPEND);
	CHECK(sfs_file_write(fs, fd, "one", 3) == 3);
	CHECK(sfs_file_pwrite(fs, fd, "two", 3, 0) == 3);   /* appends */
	CHECK(sfs_file_pread(fs, fd, b, 10, 0) == 6 && memcmp(b, "onetwo", 6) == 0);
	CHECK(sfs_file_close(fs, fd) == 0);
	fd = sfs_file_open(fs, "log", SFS_O_TRUNC);
	CHECK(sfs_file_stat(fs, fd, &st) == 0 && st.size == 0);
	CHECK(sfs_file_fsync(fs, fd) == 0);
	CHECK(sfs_file_close(fs, fd) == 0);
	CHECK(sfs_sync(fs) == 0);
	CHECK(sfs_unmount(fs) == 0);
	fsck_clean(img);

	/* Not an image. */
	FILE *f = fopen("junk.sfs", "wb");
	REQUIRE(f);
	for (int i = 0; i < 300000; i++)
		fputc(i * 7, f);
	fclose(f);
	CHECK(sfs_mount("junk.sfs", 0, &fs2, err, sizeof err) == -EMEDIUMTYPE);
	CHECK(strcmp(err, "not a SimpleFS image") == 0);
}

/* A transaction that exactly fills the journal waits for more, as any
 * other: a commit comes when it is about to exceed the journal's capacity
 * (FORMAT.md). With the journal capped to 4 blocks, creates in slots 0..93
 * dirty directory blocks 0..3 and write nothing; the next create commits.
 * A create refused by a full directory (124 slots) writes nothing, not even
 * with the transaction at the journal's capacity. */
extern unsigned sfs_debug_jcap;   /* src/sfs test knob (src/sfs/meta.c) */

static void test_txn_full(void)
{
	struct sfs_dev *dev = sfs_faultdev_new(2u << 20);
	struct sfs *fs;
	char err[256], name[16];
	REQUIRE(dev && sfs_format_dev(dev, 124) == 0);
	sfs_debug_jcap = 4;
	REQUIRE(sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err) == 0);
	sfs_debug_jcap = 0;
	uint64_t w = sfs_faultdev_writes(dev);
	for (int i = 0; i <= 94; i++) {
		if (i == 94)
			CHECK(sfs_faultdev_writes(dev) == w);   /* 4 blocks dirty */
		snprintf(name, sizeof name, "f%d", i);
		int fd = sfs_file_open(fs, name, SFS_O_CREAT);
		CHECK(fd >= 0 && sfs_file_close(fs, fd) == 0);
	}
	CHECK(sfs_faultdev_writes(dev) > w);            /* it might need a fifth: committed */
	for (int i = 95; i < 124; i++) {
		snprintf(name, sizeof name, "f%d", i);
		int fd = sfs_file_open(fs, name, SFS_O_CREAT);
		CHECK(fd >= 0 && sfs_file_close(fs, fd) == 0);
	}
	CHECK(sfs_sync(fs) == 0);
	for (int i = 0; i < 124; i += 31) {            /* slots 0, 31, 62, 93: 4 blocks dirty */
		snprintf(name, sizeof name, "f%d", i);
		int fd = sfs_file_open(fs, name, 0);
		CHECK(fd >= 0 && sfs_file_truncate(fs, fd, 10) == 0 && sfs_file_close(fs, fd) == 0);
	}
	w = sfs_faultdev_writes(dev);
	CHECK(sfs_file_open(fs, "extra", SFS_O_CREAT) == -ENOSPC);
	CHECK(sfs_faultdev_writes(dev) == w);
	CHECK(sfs_unmount(fs) == 0);
	sfs_dev_free(dev);
}

static void test_memdev(void)
{
	struct sfs_dev *dev = sfs_memdev_new(NULL, 0, 2u << 20);
	REQUIRE(dev);
	CHECK(sfs_faultdev_writes(dev) == 0);   /* a memory device counts its writes too */
	/* its range, as a device's: up to its end (0 bytes at the end too), not past it */
	unsigned char c = 'e';
	CHECK(dev->pwrite(dev, &c, 1, dev->size - 1) == 0);
	CHECK(dev->pwrite(dev, &c, 0, dev->size) == 0);
	CHECK(dev->pwrite(dev, &c, 1, dev->size) == -EIO);
	CHECK(dev->pread(dev, &c, 0, dev->size) == 0);
	CHECK(dev->pread(dev, &c, 1, dev->size) == -EIO);
	c = 0;
	CHECK(dev->pread(dev, &c, 1, dev->size - 1) == 0 && c == 'e');
	CHECK(sfs_faultdev_writes(dev) == 2);
	REQUIRE(sfs_format_dev(dev, 1024) == 0);
	uint64_t w = sfs_faultdev_writes(dev);
	CHECK(w > 0);
	struct sfs *fs;
	char err[256];
	REQUIRE(sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err) == 0);
	struct sfs_statfs sf;
	CHECK(sfs_statfs(fs, &sf) == 0 && sf.max_files == 1024);
	int fd = sfs_file_open(fs, "m", SFS_O_CREAT);
	CHECK(fd >= 0);
	unsigned char a[70000], b[70000];
	pattern(a, sizeof a, 3);
	CHECK(sfs_file_pwrite(fs, fd, a, sizeof a, 0) == (ssize_t)sizeof a);
	CHECK(sfs_unmount(fs) == 0);
	CHECK(sfs_faultdev_writes(dev) > w);
	struct sfs_fsck_result res;
	CHECK(sfs_fsck_dev(dev, 0, &res, NULL, NULL, err, sizeof err) == 0 && res.errors_found == 0);
	w = sfs_faultdev_writes(dev);
	REQUIRE(sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err) == 0);
	CHECK(sfs_faultdev_writes(dev) == w);   /* a clean image's writable mount writes nothing */
	CHECK(sfs_unmount(fs) == 0);
	REQUIRE(sfs_mount_dev(dev, SFS_MOUNT_RDONLY, 1, &fs, err, sizeof err) == 0);
	fd = sfs_file_open(fs, "m", 0);
	CHECK(sfs_file_pread(fs, fd, b, sizeof b, 0) == (ssize_t)sizeof b && memcmp(a, b, sizeof a) == 0);
	CHECK(sfs_file_pwrite(fs, fd, a, 1, 0) == -EROFS);
	CHECK(sfs_file_open(fs, "new", SFS_O_CREAT) == -EROFS);
	CHECK(sfs_unmount(fs) == 0);   /* owns dev: frees it */
}

/* Blocks that held a deleted file's bytes must read as zeros wherever a new
 * file has not written: holes, tails, space inside a truncated-up size. */
static void test_reuse_zero(void)
{
	struct sfs_dev *dev = sfs_memdev_new(NULL, 0, 2u << 20);
	REQUIRE(dev && sfs_format_dev(dev, 64) == 0);
	struct sfs *fs;
	char err[256];
	REQUIRE(sfs_mount_dev(dev, 0, 1, &fs, err, sizeof err) == 0);
	static unsigned char junk[4u << 20], b[300000];
	memset(junk, 0xEE, sizeof junk);
	int j = sfs_file_open(fs, "junk", SFS_O_CREAT);
	ssize_t n = sfs_file_pwrite(fs, j, junk, sizeof junk, 0);
	CHECK(n > (1 << 20) && n < (2 << 20));   /* disk full: a partial count */
	CHECK(sfs_file_pwrite(fs, j, junk, 1, (uint64_t)n) == -ENOSPC);
	CHECK(sfs_file_close(fs, j) == 0 && sfs_unlink(fs, "junk") == 0 && sfs_sync(fs) == 0);

	int f1 = sfs_file_open(fs, "t1", SFS_O_CREAT);
	CHECK(sfs_file_truncate(fs, f1, 256 * 1024) == 0);
	CHECK(sfs_file_pwrite(fs, f1, "A", 1, 128 * 1024) == 1);
	CHECK(sfs_file_pread(fs, f1, b, sizeof b, 0) == 256 * 1024);
	CHECK(all_zero(b, 128 * 1024) && b[128 * 1024] == 'A' && all_zero(b + 128 * 1024 + 1, 128 * 1024 - 1));
	int f2 = sfs_file_open(fs, "t2", SFS_O_CREAT);
	CHECK(sfs_file_truncate(fs, f2, 64 * 1024) == 0);
	CHECK(sfs_file_pwrite(fs, f2, "0123456789", 10, 0) == 10);
	CHECK(sfs_file_pread(fs, f2, b, sizeof b, 0) == 64 * 1024);
	CHECK(memcmp(b, "0123456789", 10) == 0 && all_zero(b + 10, 64 * 1024 - 10));
	int f3 = sfs_file_open(fs, "t3", SFS_O_CREAT);
	CHECK(sfs_file_pwrite(fs, f3, junk, 100, 0) == 100);
	CHECK(sfs_file_pwrite(fs, f3, "Z", 1, 20000) == 1);
	CHECK(sfs_file_pread(fs, f3, b, sizeof b, 0) == 20001);
	CHECK(all_zero(b + 100, 19900) && b[20000] == 'Z');
	/* Truncate down inside a block, then extend: the cut bytes are gone. */
	CHECK(sfs_file_truncate(fs, f3, 50) == 0);
	CHECK(sfs_file_pwrite(fs, f3, "Y", 1, 60) == 1);
	CHECK(sfs_file_pread(fs, f3, b, sizeof b, 0) == 61);
	CHECK(all_zero(b + 50, 10) && b[60] == 'Y' && b[49] == 0xEE);
	CHECK(sfs_file_close(fs, f1) == 0 && sfs_file_close(fs, f2) == 0 && sfs_file_close(fs, f3) == 0);
	CHECK(sfs_unmount(fs) == 0);
}

/* O_DIRECT mounts: unaligned requests go through bounce buffers (with
 * read-modify-write for partial blocks); results must equal a plain mount. */
/* A write that fails with -ENOSPC changes nothing, even when the only free
 * space was freed in the running transaction. */
static void test_enospc_nochange(void)
{
	struct sfs_dev *dev = sfs_memdev_new(NULL, 0, 1u << 20);
	REQUIRE(dev && sfs_format_dev(dev, 64) == 0);
	struct sfs *fs;
	char err[256];
	REQUIRE(sfs_mount_dev(dev, 0, 1, &fs, err, sizeof err) == 0);
	int x = sfs_file_open(fs, "x", SFS_O_CREAT);
	CHECK(sfs_file_pwrite(fs, x, "0123456789", 10, 0) == 10);
	int a = sfs_file_open(fs, "a", SFS_O_CREAT);
	static char buf[4096];
	ssize_t n;
	uint64_t tot = 0;
	while ((n = sfs_file_write(fs, a, buf, sizeof buf)) > 0)
		tot += (uint64_t)n;
	CHECK(n == -ENOSPC && tot > 0);
	CHECK(sfs_sync(fs) == 0);
	CHECK(sfs_file_truncate(fs, a, tot - 4096) == 0);   /* one block, not committed */
	struct sfs_stat st;
	CHECK(sfs_file_pwrite(fs, x, "Z", 1, 20000) == -ENOSPC);   /* needs 4 blocks */
	CHECK(sfs_file_stat(fs, x, &st) == 0 && st.size == 10 && st.blocks == 1);
	CHECK(sfs_file_pwrite(fs, x, "Z", 1, 4100) == 1);          /* the freed block */
	CHECK(sfs_file_stat(fs, x, &st) == 0 && st.size == 4101 && st.blocks == 2);
	CHECK(sfs_unmount(fs) == 0);
}

static void test_direct(void)
{
	const char *img = "direct.sfs";
	char err[256];
	struct sfs *fs;
	/* the host is probed on its own: where it takes O_DIRECT, the mount must too */
	if (!tu_have_odirect(".", err, sizeof err)) {
		tu_part_skip("O_DIRECT", "O_DIRECT mount", err);
		return;
	}
	tu_part_ran("O_DIRECT", "O_DIRECT mount");
	REQUIRE(sfs_format(img, 8u << 20, 0) == 0);
	int r = sfs_mount(img, SFS_MOUNT_DIRECT, &fs, err, sizeof err);
	if (r < 0)
		fprintf(stderr, "O_DIRECT mount: %s (%s)\n", strerror(-r), err);
	REQUIRE(r == 0);
	int direct = 0;
	CHECK(sfs_image_fd(fs, &direct) >= 0 && direct == 1);
	enum { N = 200000 };
	static unsigned char model[N], b[N + 8192];
	int fd = sfs_file_open(fs, "d", SFS_O_CREAT);
	REQUIRE(fd >= 0);
	unsigned seed = 5;
	size_t size = 0;
	for (int i = 0; i < 300; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t off = (seed >> 8) % (N - 20000);
		size_t len = 1 + (seed >> 3) % 15000;
		if (i % 3 == 0) {   /* aligned: the in-place shared path once allocated */
			off &= ~(size_t)4095;
			len = ((len + 4095) & ~(size_t)4095);
		}
		unsigned char *src = b + 4096 + (i % 7);   /* unaligned buffer too */
		pattern(src, len, (unsigned)i);
		CHECK(sfs_file_pwrite(fs, fd, src, len, off) == (ssize_t)len);
		memcpy(model + off, src, len);
		if (off + len > size)
			size = off + len;
	}
	CHECK(sfs_file_pread(fs, fd, b + 1, N, 0) == (ssize_t)size && memcmp(b + 1, model, size) == 0);
	CHECK(sfs_file_pread(fs, fd, b, 5000, 777) == 5000 && memcmp(b, model + 777, 5000) == 0);
	CHECK(sfs_file_truncate(fs, fd, 10001) == 0);
	CHECK(sfs_file_pwrite(fs, fd, "q", 1, 10010) == 1);
	memset(model + 10001, 0, N - 10001);
	model[10010] = 'q';
	size = 10011;
	CHECK(sfs_file_close(fs, fd) == 0);
	CHECK(sfs_unmount(fs) == 0);
	REQUIRE(sfs_mount(img, 0, &fs, err, sizeof err) == 0);
	fd = sfs_file_open(fs, "d", 0);
	CHECK(sfs_file_pread(fs, fd, b, N, 0) == (ssize_t)size && memcmp(b, model, size) == 0);
	CHECK(sfs_file_close(fs, fd) == 0);
	CHECK(sfs_unmount(fs) == 0);
	fsck_clean(img);
}

static void test_classic(void)
{
	setenv("SFS_IMAGE", "classic.sfs", 1);
	CHECK(strcmp(sfs_default_image(), "classic.sfs") == 0);
	REQUIRE(mksfs(1) == 0);
	CHECK(sfs_default() != NULL);
	int fd = sfs_open("hello.txt");
	REQUIRE(fd >= 0);
	CHECK(sfs_write(fd, "hello, world", 12) == 12);
	CHECK(sfs_seek(fd, 7, SEEK_SET) == 7);
	char buf[32] = { 0 };
	CHECK(sfs_read(fd, buf, sizeof buf) == 5 && memcmp(buf, "world", 5) == 0);
	CHECK(sfs_pwrite(fd, "W", 1, 7) == 1);
	CHECK(sfs_pread(fd, buf, 12, 0) == 12 && memcmp(buf, "hello, World", 12) == 0);
	CHECK(sfs_fsync(fd) == 0);
	CHECK(sfs_getfilesize("hello.txt") == 12);
	CHECK(sfs_getfilesize("missing") == -ENOENT);
	struct sfs_stat st;
	CHECK(sfs_fstat(fd, &st) == 0 && st.size == 12);
	CHECK(sfs_close(fd) == 0);
	int fd2 = sfs_open("second");
	CHECK(fd2 >= 0 && sfs_close(fd2) == 0);
	char name[SFS_NAME_MAX + 1];
	int n = 0, r;
	while ((r = sfs_getnextfilename(name)) == 1)
		n++;
	CHECK(r == 0 && n == 2);
	CHECK(sfs_getnextfilename(name) == 1);   /* restarted */
	CHECK(sfs_remove("second") == 0);
	CHECK(sfs_unmountdefault() == 0);
	CHECK(sfs_default() == NULL);
	/* mksfs(0) mounts the existing image: the file is still there. */
	REQUIRE(mksfs(0) == 0);
	CHECK(sfs_getfilesize("hello.txt") == 12);
	CHECK(sfs_getfilesize("second") == -ENOENT);
	struct sfs_statfs sf;
	CHECK(sfs_fstatfs(&sf) == 0 && sf.files == 1 && sf.total_blocks == SFS_DEFAULT_SIZE / 4096 - 1);
	/* mksfs(1) formats anew. */
	REQUIRE(mksfs(1) == 0);
	CHECK(sfs_getfilesize("hello.txt") == -ENOENT);
	CHECK(sfs_unmountdefault() == 0);
	/* Missing image: mksfs(0) creates it. */
	setenv("SFS_IMAGE", "fresh.sfs", 1);
	REQUIRE(mksfs(0) == 0);
	CHECK(access("fresh.sfs", F_OK) == 0);
	CHECK(sfs_unmountdefault() == 0);
	unsetenv("SFS_IMAGE");
	CHECK(strcmp(sfs_default_image(), "disk.sfs") == 0);
}

int main(void)
{
	test_handle_api();
	test_memdev();
	test_txn_full();
	test_reuse_zero();
	test_enospc_nochange();
	test_direct();
	test_classic();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
