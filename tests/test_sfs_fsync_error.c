/* SPDX-License-Identifier: MIT */
/* Description: device errors come back, and stay. On a device whose sync or
 * write fails with -EIO: sfs_file_fsync returns the error (never 0 for data
 * that may not be durable), whether it had metadata to commit or only data
 * to sync; after a failed metadata write the mount refuses further changes
 * with -EIO (writes, creates, truncates, fsync; docs/FORMAT.md "Errors") while
 * reads through open handles go on; unmount reports the error; and the image on the device still
 * mounts clean with every file that was fsynced before the failure. Also where the failure
 * comes inside other calls: the sync a commit makes before it reuses the journal's slots
 * (wrap), the commit a truncate makes because the transaction is full, and an O_DIRECT
 * device's unaligned data write (read-modify-write): each is -EIO, and the first two fail
 * the mount. A format whose n-th write fails returns the error, whichever n. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SIZE (8u << 20)

/* A memory device whose sync or writes can be made to fail. */
struct edev {
	struct sfs_dev d;
	struct sfs_dev *mem;
	int fail_sync, fail_write;       /* -EIO from now on while set */
	int fail_syncs;                  /* -EIO for this many more syncs */
	unsigned syncs;
};

static int e_pread(struct sfs_dev *d, void *buf, size_t len, uint64_t off)
{
	struct edev *e = (struct edev *)d;
	return e->mem->pread(e->mem, buf, len, off);
}

static int e_pwrite(struct sfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	struct edev *e = (struct edev *)d;
	return e->fail_write ? -EIO : e->mem->pwrite(e->mem, buf, len, off);
}

static int e_sync(struct sfs_dev *d)
{
	struct edev *e = (struct edev *)d;
	e->syncs++;
	if (e->fail_syncs > 0) {
		e->fail_syncs--;
		return -EIO;
	}
	return e->fail_sync ? -EIO : e->mem->sync(e->mem);
}

static void e_close(struct sfs_dev *d)
{
	(void)d;
}

static struct edev dev;

extern unsigned sfs_debug_jcap;   /* src/sfs test knob (src/sfs/meta.c): the journal's slots */

static struct sfs *mount_edev(void)
{
	struct sfs *fs;
	char err[256] = "";
	int r = sfs_mount_dev(&dev.d, 0, 0, &fs, err, sizeof err);
	if (r < 0)
		FAIL("mount: %s (%s)", strerror(-r), err);
	return fs;
}

int main(void)
{
	static char buf[8192], got[8192];
	struct sfs_stat st;

	dev.mem = sfs_memdev_new(NULL, 0, SIZE);
	CHECK(dev.mem != NULL);
	dev.d = (struct sfs_dev){ .pread = e_pread, .pwrite = e_pwrite, .sync = e_sync,
				  .close = e_close, .size = SIZE, .map = NULL, .fd = -1 };
	CHECK_EQ(sfs_format_dev(&dev.d, 0), 0);

	/* 1. data only (an in-place overwrite, nothing to commit): the sync's error */
	struct sfs *fs = mount_edev();
	int fd = sfs_file_open(fs, "kept", SFS_O_CREAT);
	CHECK(fd >= 0);
	memset(buf, 'k', sizeof buf);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, sizeof buf, 0), (long long)sizeof buf);
	CHECK_EQ(sfs_file_fsync(fs, fd), 0);
	memset(buf, 'K', 4096);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 4096, 0), 4096);   /* in place: no metadata */
	dev.fail_sync = 1;
	unsigned s0 = dev.syncs;
	CHECK_EQ(sfs_file_fsync(fs, fd), -EIO);
	CHECK(dev.syncs > s0);
	dev.fail_sync = 0;
	CHECK_EQ(sfs_file_close(fs, fd), 0);

	/* 2. metadata to commit (a new file): the commit's sync fails: -EIO, and the
	 *    mount refuses every later change, also once the device works again */
	fd = sfs_file_open(fs, "lost", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 100, 0), 100);
	dev.fail_sync = 1;
	CHECK_EQ(sfs_file_fsync(fs, fd), -EIO);
	dev.fail_sync = 0;
	CHECK_EQ(sfs_file_fsync(fs, fd), -EIO);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 100, 100), -EIO);
	CHECK_EQ(sfs_file_truncate(fs, fd, 0), -EIO);
	CHECK_EQ(sfs_file_open(fs, "new", SFS_O_CREAT), -EIO);
	CHECK_EQ(sfs_unlink(fs, "kept"), -EIO);
	/* reads through an open handle still work */
	CHECK_EQ(sfs_file_pread(fs, fd, got, sizeof got, 0), 100);
	CHECK(got[0] == 'K' && got[99] == 'K');
	sfs_file_close(fs, fd);
	CHECK(sfs_unmount(fs) < 0);

	/* 3. the device's image is consistent: it mounts, fsck is clean, the file
	 *    fsynced before the failures is whole */
	fs = mount_edev();
	CHECK_EQ(sfs_stat(fs, "kept", &st), 0);
	CHECK_EQ(st.size, sizeof buf);
	fd = sfs_file_open(fs, "kept", 0);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pread(fs, fd, got, sizeof got, 4096), 4096);
	CHECK(got[0] == 'k' && got[4095] == 'k');

	/* 4. a metadata write that fails (the journal's) is as sticky */
	CHECK_EQ(sfs_file_truncate(fs, fd, 100), 0);
	dev.fail_write = 1;
	CHECK_EQ(sfs_file_fsync(fs, fd), -EIO);
	dev.fail_write = 0;
	CHECK_EQ(sfs_file_fsync(fs, fd), -EIO);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 10, 0), -EIO);
	sfs_file_close(fs, fd);
	CHECK(sfs_unmount(fs) < 0);
	fs = mount_edev();
	CHECK_EQ(sfs_stat(fs, "kept", &st), 0);
	CHECK(st.size == sizeof buf || st.size == 100);   /* the truncate never committed, or did */
	CHECK_EQ(sfs_unmount(fs), 0);
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";
	CHECK_EQ(sfs_fsck_dev(&dev.d, 0, &res, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ(res.errors_found, 0);

	/* 5. the sync before a commit reuses the journal's slots (a 4-slot journal:
	 *    each create's commit takes one) fails once: the fsync says so and the
	 *    mount is failed, at every count of good commits before it */
	for (int k = 0; k <= 9; k++) {
		char name[16];
		CHECK_EQ(sfs_format_dev(&dev.d, 0), 0);
		sfs_debug_jcap = 4;
		fs = mount_edev();
		sfs_debug_jcap = 0;
		for (int i = 0; i <= k; i++) {
			snprintf(name, sizeof name, "w%d", i);
			fd = sfs_file_open(fs, name, SFS_O_CREAT);
			CHECK(fd >= 0);
			if (i == k)
				dev.fail_syncs = 1;
			int r = sfs_file_fsync(fs, fd);
			if (i < k)
				CHECK_EQ(r, 0);
			else if (r != -EIO)
				FAIL("after %d commits, a failed sync: fsync gave %d, not -EIO", k, r);
			sfs_file_close(fs, fd);
		}
		dev.fail_syncs = 0;
		CHECK_EQ(sfs_file_open(fs, "after", SFS_O_CREAT), -EIO);
		CHECK(sfs_unmount(fs) < 0);
	}

	/* 6. a truncate whose transaction is full commits first; that commit fails:
	 *    -EIO, never 0 (94 creates dirty directory blocks 0..3 of a 4-slot
	 *    journal without committing; the truncate grows "t0", no blocks freed) */
	CHECK_EQ(sfs_format_dev(&dev.d, 124), 0);
	sfs_debug_jcap = 4;
	fs = mount_edev();
	sfs_debug_jcap = 0;
	int t0 = -1;
	unsigned s1 = dev.syncs;
	for (int i = 0; i <= 93; i++) {
		char name[16];
		snprintf(name, sizeof name, "t%d", i);
		fd = sfs_file_open(fs, name, SFS_O_CREAT);
		CHECK(fd >= 0);
		if (i == 0)
			t0 = fd;
		else
			sfs_file_close(fs, fd);
	}
	CHECK_EQ(dev.syncs, s1);                  /* nothing committed yet */
	dev.fail_sync = 1;
	CHECK_EQ(sfs_file_truncate(fs, t0, 10), -EIO);
	CHECK(dev.syncs > s1);                    /* it did commit */
	dev.fail_sync = 0;
	CHECK_EQ(sfs_file_truncate(fs, t0, 20), -EIO);
	sfs_file_close(fs, t0);
	CHECK(sfs_unmount(fs) < 0);

	/* 7. an O_DIRECT device: an unaligned write is a read-modify-write of whole
	 *    blocks; its failed write is -EIO, and the bytes read back unchanged */
	CHECK_EQ(sfs_format_dev(&dev.d, 0), 0);
	dev.d.direct = 1;
	fs = mount_edev();
	fd = sfs_file_open(fs, "d", SFS_O_CREAT);
	CHECK(fd >= 0);
	memset(buf, 'd', sizeof buf);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, sizeof buf, 0), (long long)sizeof buf);
	CHECK_EQ(sfs_file_fsync(fs, fd), 0);
	dev.fail_write = 1;
	CHECK_EQ(sfs_file_pwrite(fs, fd, "XYZ", 3, 4095), -EIO);
	dev.fail_write = 0;
	CHECK_EQ(sfs_file_pread(fs, fd, got, sizeof got, 0), (long long)sizeof got);
	CHECK(memcmp(got, buf, sizeof got) == 0);
	sfs_file_close(fs, fd);
	sfs_unmount(fs);
	dev.d.direct = 0;

	/* 8. a format whose n-th write fails returns the error (ENOSPC, as a full
	 *    host disk would give), for every n until one writes all it must */
	struct sfs_dev *ed = sfs_errdev_new(dev.mem, 0);
	CHECK(ed != NULL);
	for (uint64_t n = 1;; n++) {
		uint64_t inj = sfs_errdev_injected(ed);
		sfs_errdev_arm(ed, SFS_ERR_WRITE, n, 1, -ENOSPC);
		int r = sfs_format_dev(ed, 0);
		if (sfs_errdev_injected(ed) == inj) {
			CHECK_EQ(r, 0);
			CHECK(n > 4);   /* journal header, FAT, directory, the superblocks */
			break;
		}
		if (r != -ENOSPC)
			FAIL("format with its write %llu refused: %d, not -ENOSPC", (unsigned long long)n, r);
	}
	sfs_errdev_arm(ed, 0, 0, 0, 0);
	sfs_dev_free(ed);

	sfs_dev_free(dev.mem);
	printf("ok\n");
	return 0;
}
