/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS holes and truncation: seek past the end then write
 * (the gap reads as zeros), reads at and past EOF, truncate down and up
 * (zeros after re-extending, never the old bytes, within a block and across
 * blocks), blocks reused from a deleted file never show its bytes (the disk
 * is first filled with 0xCC and emptied, so every allocation reuses), a size
 * past the allocated blocks then written inside and at its end, sfs_file_map
 * extents that cover each file and point at its bytes in the image (holes:
 * img_off 0), and all of it the same after a remount.
 *
 * It must never let stale bytes pass: old data is 0xEE/0xCC, never zero.
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define BS 4096u
static const char *img = "holes.sfs";

/* Model of each file: its expected bytes. */
struct model {
	const char *name;
	uint8_t *d;
	size_t size;
};
#define NM 5
static struct model m[NM] = { { "a", 0, 0 }, { "b", 0, 0 }, { "c", 0, 0 }, { "d", 0, 0 },
			      { "e", 0, 0 } };

static void m_resize(struct model *f, size_t size)
{
	f->d = realloc(f->d, size ? size : 1);
	CHECK(f->d);
	if (size > f->size)
		memset(f->d + f->size, 0, size - f->size);
	f->size = size;
}

static void m_write(struct model *f, const void *p, size_t len, size_t off)
{
	if (off + len > f->size)
		m_resize(f, off + len);
	memcpy(f->d + off, p, len);
}

static void verify(struct sfs *fs, struct model *f, int line)
{
	static uint8_t buf[1 << 20];
	struct sfs_stat st;
	int fd = sfs_file_open(fs, f->name, SFS_O_RDONLY);
	ssize_t n;

	if (fd < 0)
		FAIL("(line %d) open %s: %s", line, f->name, strerror(-fd));
	CHECK_EQ(sfs_file_stat(fs, fd, &st), 0);
	if (st.size != f->size)
		FAIL("(line %d) %s: size %" PRIu64 ", expected %zu", line, f->name, st.size, f->size);
	CHECK(f->size <= sizeof buf);
	n = sfs_file_pread(fs, fd, buf, sizeof buf, 0);
	if (n != (ssize_t)f->size)
		FAIL("(line %d) %s: read %zd, expected %zu", line, f->name, n, f->size);
	for (size_t i = 0; i < f->size; i++)
		if (buf[i] != f->d[i])
			FAIL("(line %d) %s: byte %zu is 0x%02x, expected 0x%02x", line, f->name, i,
			     buf[i], f->d[i]);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
}
#define VERIFY(fs, f) verify(fs, f, __LINE__)

static void check_map(struct sfs *fs, struct model *f)
{
	static struct sfs_extent ext[512];
	static uint8_t buf[64 * BS];
	int fd = sfs_file_open(fs, f->name, SFS_O_RDONLY), n, ifd;
	uint64_t covered = 0;

	CHECK(fd >= 0);
	ifd = sfs_image_fd(fs, NULL);
	CHECK(ifd >= 0);
	n = sfs_file_map(fs, fd, 0, f->size + 100000, ext, 512);
	if (n < 0)
		FAIL("map %s: %s", f->name, strerror(-n));
	CHECK(n < 512);
	for (int k = 0; k < n; k++) {
		if (ext[k].file_off != covered || ext[k].len == 0)
			FAIL("map %s: extent %d at %" PRIu64 "+%" PRIu64 ", expected it at %" PRIu64,
			     f->name, k, ext[k].file_off, ext[k].len, covered);
		for (uint64_t done = 0; done < ext[k].len; done += sizeof buf) {
			size_t len = ext[k].len - done < sizeof buf ? ext[k].len - done : sizeof buf;

			if (ext[k].img_off)
				CHECK(pread(ifd, buf, len, (off_t)(ext[k].img_off + done)) == (ssize_t)len);
			else
				memset(buf, 0, len);
			if (memcmp(buf, f->d + covered + done, len))
				FAIL("map %s: extent %d (img_off %" PRIu64 ") does not hold the file's bytes",
				     f->name, k, ext[k].img_off);
		}
		covered += ext[k].len;
	}
	if (covered != f->size)
		FAIL("map %s: extents cover %" PRIu64 " bytes, the file has %zu", f->name, covered, f->size);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
}

int main(void)
{
	static uint8_t ee[64 * BS], cc[64 * BS];
	struct sfs *fs;
	char buf[100];
	int fd, r;

	memset(ee, 0xEE, sizeof ee);
	memset(cc, 0xCC, sizeof cc);
	r = sfs_format(img, 2u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	fs = MOUNT_OR_DIE(img);

	/* a: seek past the end and write; reads at/after EOF. */
	fd = sfs_file_open(fs, "a", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_write(fs, fd, "abc", 3), 3);
	m_write(&m[0], "abc", 3, 0);
	CHECK_EQ(sfs_file_seek(fs, fd, 100000, SEEK_SET), 100000);
	CHECK_EQ(sfs_file_read(fs, fd, buf, sizeof buf), 0);     /* past EOF */
	CHECK_EQ(sfs_file_write(fs, fd, "xyz", 3), 3);
	m_write(&m[0], "xyz", 3, 100000);
	CHECK_EQ(sfs_file_seek(fs, fd, 0, SEEK_CUR), 100003);
	CHECK_EQ(sfs_file_seek(fs, fd, 5000, SEEK_END), 105003);
	CHECK_EQ(sfs_file_write(fs, fd, "!", 1), 1);
	m_write(&m[0], "!", 1, 105003);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, 10, 105004), 0);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, 10, 105000), 4);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, 10, 1ull << 40), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	VERIFY(fs, &m[0]);

	/* b: stale data must never come back after truncate down + up. */
	fd = sfs_file_open(fs, "b", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, ee, 2 * BS, 0), 2 * BS);
	m_write(&m[1], ee, 2 * BS, 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, 100), 0);                  /* within block 0 */
	m_resize(&m[1], 100);
	VERIFY(fs, &m[1]);
	CHECK_EQ(sfs_file_truncate(fs, fd, 2 * BS), 0);               /* up again: zeros */
	m_resize(&m[1], 2 * BS);
	VERIFY(fs, &m[1]);
	CHECK_EQ(sfs_file_truncate(fs, fd, 50), 0);
	m_resize(&m[1], 50);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "W", 1, 5000), 1);           /* write past: zeros between */
	m_write(&m[1], "W", 1, 5000);
	VERIFY(fs, &m[1]);
	CHECK_EQ(sfs_file_pwrite(fs, fd, ee, 3 * BS, 0), 3 * BS);
	m_write(&m[1], ee, 3 * BS, 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, BS + 10), 0);              /* across blocks */
	m_resize(&m[1], BS + 10);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "Q", 1, 3 * BS + 5), 1);
	m_write(&m[1], "Q", 1, 3 * BS + 5);
	VERIFY(fs, &m[1]);
	CHECK_EQ(sfs_file_truncate(fs, fd, 0), 0);
	m_resize(&m[1], 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, 3 * BS), 0);
	m_resize(&m[1], 3 * BS);
	VERIFY(fs, &m[1]);
	/* The same size is a no-op; truncate keeps the position. */
	CHECK_EQ(sfs_file_seek(fs, fd, 7, SEEK_SET), 7);
	CHECK_EQ(sfs_file_truncate(fs, fd, 3 * BS), 0);
	CHECK_EQ(sfs_file_seek(fs, fd, 0, SEEK_CUR), 7);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	VERIFY(fs, &m[1]);

	/* c: every free block is filled with 0xCC by a file that is then
	 * deleted, so every later allocation reuses a block with old bytes:
	 * they must never show. */
	fd = sfs_file_open(fs, "old", SFS_O_CREAT);
	CHECK(fd >= 0);
	for (;;) {
		ssize_t n = sfs_file_write(fs, fd, cc, sizeof cc);

		if (n == -ENOSPC)
			break;
		if (n <= 0)
			FAIL("filling: %zd", n);
	}
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unlink(fs, "old"), 0);
	CHECK_EQ(sfs_sync(fs), 0);       /* the freed blocks may now be reused */
	fd = sfs_file_open(fs, "c", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, 40 * BS), 0);
	m_resize(&m[2], 40 * BS);
	VERIFY(fs, &m[2]);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "P", 1, 50 * BS + 7), 1);
	m_write(&m[2], "P", 1, 50 * BS + 7);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "R", 1, 20 * BS + 4000), 1);
	m_write(&m[2], "R", 1, 20 * BS + 4000);
	VERIFY(fs, &m[2]);
	CHECK_EQ(sfs_file_close(fs, fd), 0);

	/* d: many small extensions by truncate and write, alternating. */
	fd = sfs_file_open(fs, "d", SFS_O_CREAT);
	CHECK(fd >= 0);
	for (unsigned i = 0; i < 40; i++) {
		size_t sz = m[3].size;

		if (i % 3 == 0) {
			CHECK_EQ(sfs_file_truncate(fs, fd, sz + 1000 + i * 37), 0);
			m_resize(&m[3], sz + 1000 + i * 37);
		} else if (i % 3 == 1) {
			CHECK_EQ(sfs_file_pwrite(fs, fd, ee, 700 + i, sz + 300), 700 + i);
			m_write(&m[3], ee, 700 + i, sz + 300);
		} else {
			CHECK_EQ(sfs_file_truncate(fs, fd, sz - 500), 0);
			m_resize(&m[3], sz - 500);
		}
	}
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	VERIFY(fs, &m[3]);

	/* e: a size beyond the allocated blocks (truncate up), then writes
	 * inside that tail and at its end: the blocks they allocate are zero
	 * around the written bytes. */
	fd = sfs_file_open(fs, "e", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "head", 4, 0), 4);
	m_write(&m[4], "head", 4, 0);
	CHECK_EQ(sfs_file_truncate(fs, fd, 3 * BS + 500), 0);
	m_resize(&m[4], 3 * BS + 500);
	VERIFY(fs, &m[4]);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "inside", 6, 2 * BS + 100), 6);
	m_write(&m[4], "inside", 6, 2 * BS + 100);
	VERIFY(fs, &m[4]);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "end", 3, 3 * BS + 500), 3);
	m_write(&m[4], "end", 3, 3 * BS + 500);
	VERIFY(fs, &m[4]);
	CHECK_EQ(sfs_file_truncate(fs, fd, 9 * BS), 0);
	m_resize(&m[4], 9 * BS);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "after", 5, 12 * BS + 1), 5);
	m_write(&m[4], "after", 5, 12 * BS + 1);
	VERIFY(fs, &m[4]);
	CHECK_EQ(sfs_file_close(fs, fd), 0);

	/* sfs_file_map: extents cover each file exactly, holes have img_off 0,
	 * and the image bytes where the extents point are the file's bytes. */
	for (int i = 0; i < NM; i++)
		check_map(fs, &m[i]);

	/* After a remount: the same. */
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);
	fs = MOUNT_OR_DIE(img);
	for (int i = 0; i < NM; i++)
		VERIFY(fs, &m[i]);
	CHECK_EQ(sfs_unmount(fs), 0);
	for (int i = 0; i < NM; i++)
		free(m[i].d);
	printf("ok\n");
	return 0;
}
