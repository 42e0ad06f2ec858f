/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS persistence across unmount/mount: 200 files of many
 * sizes (0, block edges, up to 3 MiB) and names (1 to 63 bytes, spaces,
 * UTF-8), then removes, appends, overwrites and truncates over several
 * remount cycles; each cycle compares the directory, sizes, mtimes (kept by
 * a remount, never going back), inos (stable while a file exists) and every
 * byte with an in-memory model. A name unlinked while open is reused at
 * once and only the new file survives. Also the classic API (mksfs,
 * sfs_open...) on the default image across mksfs(0) remounts.
 *
 * It must never compare the library with itself: the model is plain memory.
 */
#include <sfs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define NFILES 200
static const char *img = "persist.sfs";

struct mfile {
	char name[SFS_NAME_MAX + 1];
	uint8_t *data;
	size_t size, cap;
	int live;
	uint64_t mtime;
	uint32_t ino;        /* 0: not known yet (slot numbers are stable while a file exists) */
	int has_ino;
};
static struct mfile files[NFILES];

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	return tu_xorshift64(&rng);
}

static void mreserve(struct mfile *f, size_t size)
{
	if (size > f->cap) {
		f->data = realloc(f->data, size);
		CHECK(f->data);
		f->cap = size;
	}
}

static int find(const char *name)
{
	for (int i = 0; i < NFILES; i++)
		if (files[i].live && !strcmp(files[i].name, name))
			return i;
	return -1;
}

/* Writes len random bytes at off into file i (through the fs and the model). */
static void mwrite(struct sfs *fs, int fd, int i, uint64_t off, size_t len)
{
	struct mfile *f = &files[i];
	uint8_t *p;

	mreserve(f, off + len);
	if (off > f->size)
		memset(f->data + f->size, 0, off - f->size);
	p = f->data + off;
	for (size_t k = 0; k < len; k++)
		p[k] = (uint8_t)(rnd() >> 24);
	if (off + len > f->size)
		f->size = off + len;
	CHECK_EQ(sfs_file_pwrite(fs, fd, p, len, off), len);
}

static void verify(struct sfs *fs, int check_mtime)
{
	static uint8_t buf[1 << 16];
	struct sfs_stat st;
	struct sfs_statfs sf;
	uint32_t cookie = 0;
	int r, seen = 0, live = 0;
	char seen_map[NFILES] = { 0 };

	for (int i = 0; i < NFILES; i++)
		live += files[i].live;
	while ((r = sfs_readdir(fs, &cookie, &st)) == 1) {
		int i = find(st.name);

		if (i < 0)
			FAIL("unexpected file '%s' in the directory", st.name);
		if (seen_map[i]++)
			FAIL("'%s' listed twice", st.name);
		seen++;
		if (st.size != files[i].size)
			FAIL("'%s': size %" PRIu64 ", expected %zu", st.name, st.size, files[i].size);
		CHECK(st.mtime_ns != 0);
		if (check_mtime && files[i].mtime && st.mtime_ns != files[i].mtime)
			FAIL("'%s': mtime changed across remount", st.name);
		if (!check_mtime && files[i].mtime && st.mtime_ns < files[i].mtime)
			FAIL("'%s': mtime went backwards", st.name);
		files[i].mtime = st.mtime_ns;
		if (files[i].has_ino && st.ino != files[i].ino)
			FAIL("'%s': ino changed from %u to %u while the file existed", st.name,
			     files[i].ino, st.ino);
		files[i].ino = st.ino;
		files[i].has_ino = 1;
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(seen, live);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	CHECK_EQ(sf.files, live);

	for (int i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i];
		uint64_t off = 0;
		int fd;

		if (!f->live)
			continue;
		fd = sfs_file_open(fs, f->name, SFS_O_RDONLY);
		if (fd < 0)
			FAIL("open '%s': %s", f->name, strerror(-fd));
		for (;;) {
			ssize_t n = sfs_file_read(fs, fd, buf, sizeof buf);

			if (n < 0)
				FAIL("read '%s': %s", f->name, strerror((int)-n));
			if (n == 0)
				break;
			if (off + (uint64_t)n > f->size)
				FAIL("'%s': read past its size", f->name);
			if (memcmp(buf, f->data + off, (size_t)n)) {
				size_t k = 0;

				while (buf[k] == f->data[off + k])
					k++;
				FAIL("'%s': byte %" PRIu64 " is %u, expected %u", f->name, off + k,
				     buf[k], f->data[off + k]);
			}
			off += (uint64_t)n;
		}
		CHECK_EQ(off, f->size);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
}

static void make_name(char *name, int i)
{
	static const char *const special[] = {
		"a", "with space", "UTF-8 \xc3\xa9t\xc3\xa9 \xe2\x82\xac", ".hidden", "-dash",
		"x.y.z", "NAME", "name",
	};
	size_t len;

	if (i < (int)(sizeof special / sizeof special[0])) {
		strcpy(name, special[i]);
		return;
	}
	len = (size_t)(i % SFS_NAME_MAX) + 1;
	if (i == 100 || i == 150)
		len = SFS_NAME_MAX;
	snprintf(name, SFS_NAME_MAX + 1, "f%03d_", i);
	for (size_t k = strlen(name); k < len; k++)
		name[k] = (char)('a' + (i + k) % 26);
	name[len < 5 ? strlen(name) : len] = '\0';
}

static size_t pick_size(int i)
{
	static const size_t edges[] = { 0, 1, 2, 511, 4095, 4096, 4097, 8191, 8192, 8193,
					12288, 65536, 65537, 1 << 20, 3 << 20 };

	if (i < (int)(sizeof edges / sizeof edges[0]))
		return edges[i];
	return (size_t)(rnd() % 150000);
}

/* A name unlinked while open is free at once: a new file takes it, the old
 * handle keeps its own bytes, and after a remount only the new file is there
 * and no space is lost. */
static void unlinked_open(void)
{
	struct sfs *fs = MOUNT_OR_DIE(img);
	struct sfs_statfs sf0, sf;
	struct sfs_stat st;
	char buf[64];
	int old, new;

	CHECK_EQ(sfs_sync(fs), 0);
	CHECK_EQ(sfs_statfs(fs, &sf0), 0);
	old = sfs_file_open(fs, "reused-name", SFS_O_CREAT | SFS_O_EXCL);
	CHECK(old >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, old, "old bytes", 9, 0), 9);
	CHECK_EQ(sfs_file_fsync(fs, old), 0);
	CHECK_EQ(sfs_unlink(fs, "reused-name"), 0);
	CHECK_EQ(sfs_stat(fs, "reused-name", &st), -ENOENT);
	new = sfs_file_open(fs, "reused-name", SFS_O_CREAT | SFS_O_EXCL);
	CHECK(new >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, new, "NEW", 3, 0), 3);
	CHECK_EQ(sfs_file_pwrite(fs, old, " and more", 9, 9), 9);   /* the orphan grows */
	CHECK_EQ(sfs_file_truncate(fs, old, 5000), 0);
	CHECK_EQ(sfs_file_pread(fs, old, buf, sizeof buf, 0), sizeof buf);
	CHECK(memcmp(buf, "old bytes and more", 18) == 0);
	CHECK_EQ(sfs_file_pread(fs, new, buf, sizeof buf, 0), 3);
	CHECK(memcmp(buf, "NEW", 3) == 0);
	CHECK_EQ(sfs_stat(fs, "reused-name", &st), 0);
	CHECK_EQ(st.size, 3);
	CHECK_EQ(sfs_file_close(fs, new), 0);
	CHECK_EQ(sfs_unmount(fs), 0);        /* closes "old": the orphan is freed */
	FSCK_CLEAN(img);
	fs = MOUNT_OR_DIE(img);
	CHECK_EQ(sfs_stat(fs, "reused-name", &st), 0);
	CHECK_EQ(st.size, 3);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	CHECK_EQ(sf.files, sf0.files + 1);
	CHECK_EQ(sf.free_blocks, sf0.free_blocks - 1);
	CHECK_EQ(sfs_unlink(fs, "reused-name"), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
}

static void classic_api(void)
{
	static const char msg[] = "classic API data that must survive a remount";
	char name[SFS_NAME_MAX + 1], buf[128];
	int fd, r, n = 0, found = 0;

	setenv(SFS_IMAGE_ENV, "classic.sfs", 1);
	CHECK(strcmp(sfs_default_image(), "classic.sfs") == 0);
	CHECK_EQ(mksfs(1), 0);
	CHECK(sfs_default() != NULL);
	fd = sfs_open("hello");
	CHECK(fd >= 0);
	CHECK_EQ(sfs_write(fd, msg, sizeof msg), sizeof msg);
	CHECK_EQ(sfs_pwrite(fd, "XY", 2, 100), 2);
	CHECK_EQ(sfs_close(fd), 0);
	fd = sfs_open("second");
	CHECK(fd >= 0);
	CHECK_EQ(sfs_close(fd), 0);
	CHECK_EQ(sfs_unmountdefault(), 0);
	CHECK(access("classic.sfs", F_OK) == 0);

	CHECK_EQ(mksfs(0), 0);       /* mounts the existing image: data stays */
	CHECK_EQ(sfs_getfilesize("hello"), 102);
	CHECK_EQ(sfs_getfilesize("second"), 0);
	CHECK_EQ(sfs_getfilesize("missing"), -ENOENT);
	fd = sfs_open("hello");
	CHECK(fd >= 0);
	CHECK_EQ(sfs_read(fd, buf, sizeof buf), 102);
	CHECK(memcmp(buf, msg, sizeof msg) == 0);
	for (int k = (int)sizeof msg; k < 100; k++)
		CHECK_EQ(buf[k], 0);
	CHECK(memcmp(buf + 100, "XY", 2) == 0);
	CHECK_EQ(sfs_close(fd), 0);
	while ((r = sfs_getnextfilename(name)) == 1) {
		n++;
		found += !strcmp(name, "hello") + !strcmp(name, "second");
		CHECK(n <= 2);
	}
	CHECK_EQ(r, 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(found, 2);
	CHECK_EQ(sfs_getnextfilename(name), 1);     /* after the end it starts again */
	CHECK_EQ(sfs_remove("second"), 0);
	CHECK_EQ(sfs_unmountdefault(), 0);

	CHECK_EQ(mksfs(0), 0);
	CHECK_EQ(sfs_getfilesize("second"), -ENOENT);
	CHECK_EQ(sfs_getfilesize("hello"), 102);
	CHECK_EQ(sfs_unmountdefault(), 0);

	CHECK_EQ(mksfs(1), 0);       /* formats anew: nothing left */
	CHECK_EQ(sfs_getfilesize("hello"), -ENOENT);
	CHECK_EQ(sfs_unmountdefault(), 0);

	setenv(SFS_IMAGE_ENV, "absent.sfs", 1);
	CHECK(access("absent.sfs", F_OK) != 0);
	CHECK_EQ(mksfs(0), 0);       /* no image yet: one is made, default size */
	{
		struct stat sb;

		CHECK(stat("absent.sfs", &sb) == 0);
		CHECK_EQ(sb.st_size, SFS_DEFAULT_SIZE);
	}
	CHECK_EQ(sfs_getnextfilename(name), 0);
	CHECK_EQ(sfs_unmountdefault(), 0);
	unsetenv(SFS_IMAGE_ENV);
}

int main(void)
{
	struct sfs *fs;
	int r;

	r = sfs_format(img, 64u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));

	/* Cycle 0: create everything. */
	fs = MOUNT_OR_DIE(img);
	for (int i = 0; i < NFILES; i++) {
		struct mfile *f = &files[i];
		size_t size = pick_size(i), off = 0;
		int fd;

		make_name(f->name, i);
		fd = sfs_file_open(fs, f->name, SFS_O_CREAT | SFS_O_EXCL);
		if (fd < 0)
			FAIL("create '%s': %s", f->name, strerror(-fd));
		f->live = 1;
		/* in random-sized pieces */
		while (off < size) {
			size_t len = 1 + (size_t)(rnd() % 70000);

			if (len > size - off)
				len = size - off;
			mwrite(fs, fd, i, off, len);
			off += len;
		}
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	verify(fs, 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN(img);

	for (int cycle = 1; cycle <= 3; cycle++) {
		fs = MOUNT_OR_DIE(img);
		verify(fs, 1);
		for (int i = 0; i < NFILES; i++) {
			struct mfile *f = &files[i];
			int fd, what = (int)(rnd() % 8);

			if (!f->live) {
				if (what < 3) {       /* recreate under the same name */
					fd = sfs_file_open(fs, f->name, SFS_O_CREAT | SFS_O_EXCL);
					CHECK(fd >= 0);
					f->live = 1;
					f->size = 0;
					f->mtime = 0;
					f->has_ino = 0;
					mwrite(fs, fd, i, 0, (size_t)(rnd() % 20000));
					CHECK_EQ(sfs_file_close(fs, fd), 0);
				}
				continue;
			}
			if (what == 0) {
				CHECK_EQ(sfs_unlink(fs, f->name), 0);
				f->live = 0;
				continue;
			}
			fd = sfs_file_open(fs, f->name, 0);
			CHECK(fd >= 0);
			switch (what) {
			case 1: case 2:       /* append */
				mwrite(fs, fd, i, f->size, (size_t)(rnd() % 30000));
				break;
			case 3: case 4:       /* overwrite inside */
				if (f->size) {
					uint64_t off = rnd() % f->size;
					size_t len = (size_t)(rnd() % (f->size - off)) + 1;

					mwrite(fs, fd, i, off, len);
				}
				break;
			case 5: {             /* truncate down */
				size_t ns = f->size ? (size_t)(rnd() % f->size) : 0;

				CHECK_EQ(sfs_file_truncate(fs, fd, ns), 0);
				f->size = ns;
				break;
			}
			case 6: {             /* truncate up: zeros */
				size_t ns = f->size + (size_t)(rnd() % 10000);

				CHECK_EQ(sfs_file_truncate(fs, fd, ns), 0);
				mreserve(f, ns);
				memset(f->data + f->size, 0, ns - f->size);
				f->size = ns;
				break;
			}
			default:              /* opened, untouched */
				break;
			}
			CHECK_EQ(sfs_file_close(fs, fd), 0);
		}
		verify(fs, 0);
		CHECK_EQ(sfs_unmount(fs), 0);
		FSCK_CLEAN(img);
	}
	fs = MOUNT_OR_DIE(img);
	verify(fs, 1);
	CHECK_EQ(sfs_unmount(fs), 0);

	unlinked_open();
	classic_api();
	for (int i = 0; i < NFILES; i++)
		free(files[i].data);
	printf("ok\n");
	return 0;
}
