/* SPDX-License-Identifier: MIT */
/* Description: a failed fsync stays failed (PostgreSQL's "fsyncgate"). The
 * kernel reports a failed write-back of the image once: the next fdatasync
 * returns 0 although the data never reached the disk. SimpleFS remembers:
 * after a device sync fails, every fsync of a file written since the last good
 * sync returns -EIO, through every handle open on it, also once the device
 * works again, until all its handles are closed (a new open starts clean);
 * a file not written since the last good sync is not blamed; a file written
 * after the failure syncs normally; sfs_sync and unmount report the failure
 * until the next mount. A failed sync that may have lost the last commit's
 * installs makes the next commit install that transaction again from the
 * journal (a power cut after it loses nothing committed); if that fails (the
 * journal's read, a write or the sync), the mount refuses changes. The device here is
 * sfs_errdev (failures injected by count) over a fault device: a failed sync
 * forgets the writes it was to make durable, as Linux does. Last, a failed
 * write that zeroes a kept block's tail fails the truncate up that needed it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define SIZE (8u << 20)

static struct sfs *mount_dev(struct sfs_dev *d)
{
	struct sfs *fs;
	char err[256] = "";
	int r = sfs_mount_dev(d, 0, 0, &fs, err, sizeof err);
	if (r < 0)
		FAIL("mount: %s (%s)", strerror(-r), err);
	return fs;
}

static int open_write(struct sfs *fs, const char *name, char c, size_t len)
{
	static char buf[16384];
	int fd = sfs_file_open(fs, name, SFS_O_CREAT);
	CHECK(fd >= 0);
	memset(buf, c, len);
	CHECK_EQ(sfs_file_pwrite(fs, fd, buf, len, 0), (long long)len);
	return fd;
}

int main(void)
{
	char buf[4096];
	struct sfs_stat st;
	struct sfs_dev *fdev = sfs_faultdev_new(SIZE);   /* power cuts; failed syncs forget */
	CHECK(fdev != NULL);
	struct sfs_dev *dev = sfs_errdev_new(fdev, 1);
	CHECK(dev != NULL);
	CHECK_EQ(sfs_format_dev(dev, 0), 0);

	/* 1. a data-only fsync fails once; its retries keep failing */
	struct sfs *fs = mount_dev(dev);
	int a = open_write(fs, "a", 'a', 8192);
	int b = open_write(fs, "b", 'b', 4096);
	CHECK_EQ(sfs_file_fsync(fs, a), 0);     /* commits both files */
	CHECK_EQ(sfs_sync(fs), 0);               /* and makes the commit's installs durable */
	int a2 = sfs_file_open(fs, "a", 0);      /* a second handle on a */
	CHECK(a2 >= 0);
	memset(buf, 'A', sizeof buf);
	CHECK_EQ(sfs_file_pwrite(fs, a, buf, 4096, 0), 4096);   /* in place: data only */
	sfs_errdev_arm(dev, SFS_ERR_SYNC, 1, 1, -EIO);          /* the next sync only */
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);
	CHECK_EQ(sfs_errdev_injected(dev), 1);
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);   /* the device works again: still -EIO */
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);
	CHECK_EQ(sfs_file_fsync(fs, a2), -EIO);  /* every handle of the file */
	CHECK_EQ(sfs_file_fsync(fs, b), 0);      /* b was durable before: not blamed */
	int c = open_write(fs, "c", 'c', 4096);  /* written after the failure */
	CHECK_EQ(sfs_file_fsync(fs, c), 0);
	CHECK_EQ(sfs_sync(fs), -EIO);            /* the mount remembers */
	CHECK_EQ(sfs_sync(fs), -EIO);
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);
	/* reads and writes go on; the error stays until the file is closed */
	CHECK_EQ(sfs_file_pread(fs, a, buf, 4096, 4096), 4096);
	CHECK(buf[0] == 'a');
	CHECK_EQ(sfs_file_pwrite(fs, a, buf, 4096, 0), 4096);
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);
	CHECK_EQ(sfs_file_close(fs, a), 0);
	CHECK_EQ(sfs_file_fsync(fs, a2), -EIO);  /* a2 still holds the file open */
	CHECK_EQ(sfs_file_close(fs, a2), 0);
	a = sfs_file_open(fs, "a", 0);           /* reopened: clean */
	CHECK(a >= 0);
	CHECK_EQ(sfs_file_fsync(fs, a), 0);
	CHECK_EQ(sfs_file_close(fs, a), 0);
	CHECK_EQ(sfs_file_close(fs, b), 0);
	CHECK_EQ(sfs_file_close(fs, c), 0);
	CHECK_EQ(sfs_unmount(fs), -EIO);         /* and unmount reports it */

	/* 2. the next mount starts clean */
	fs = mount_dev(dev);
	CHECK_EQ(sfs_sync(fs), 0);
	a = open_write(fs, "a", 'x', 4096);
	CHECK_EQ(sfs_file_fsync(fs, a), 0);

	/* 3a. a data-only sync that fails while the last commit's installs are
	 *     not durable yet: they may be lost too (the fault device forgets
	 *     them), so the next commit installs that transaction again from the
	 *     journal before it replaces the header; after a power cut the
	 *     committed file is there */
	int e = open_write(fs, "e", 'e', 4096);   /* allocates */
	CHECK_EQ(sfs_file_fsync(fs, e), 0);       /* commit: installs written, not synced */
	CHECK_EQ(sfs_file_pwrite(fs, e, buf, 100, 0), 100);   /* in place */
	sfs_errdev_arm(dev, SFS_ERR_SYNC, 1, 1, -EIO);
	CHECK_EQ(sfs_file_fsync(fs, e), -EIO);
	CHECK_EQ(sfs_file_fsync(fs, a), 0);       /* a was durable: not blamed */
	int f = open_write(fs, "f", 'f', 4096);   /* the next commit */
	CHECK_EQ(sfs_file_fsync(fs, f), 0);
	sfs_file_close(fs, f);
	sfs_file_close(fs, e);
	sfs_file_close(fs, a);
	CHECK_EQ(sfs_unmount(fs), -EIO);          /* the mount remembers the failed sync */
	sfs_faultdev_crash(fdev);                 /* and the power goes */
	fs = mount_dev(dev);
	CHECK_EQ(sfs_stat(fs, "e", &st), 0);      /* reinstalled and synced: there */
	CHECK_EQ(st.size, 4096);
	CHECK_EQ(sfs_stat(fs, "f", &st), 0);
	a = sfs_file_open(fs, "a", 0);
	CHECK(a >= 0);

	/* 3b. the reinstall itself fails: the journal cannot be read back (k 0),
	 *     its sync fails (k 1) or its first write does (k 2); the commit
	 *     fails, and the mount with it, as after a failed sync inside a
	 *     commit */
	static const unsigned reinstall_fails[] = { SFS_ERR_READ, SFS_ERR_SYNC, SFS_ERR_WRITE };
	for (int k = 0; k < 3; k++) {
		char gn[] = "g0", hn[] = "h0";
		gn[1] = hn[1] = (char)('0' + k);
		int g = open_write(fs, gn, 'g', 4096);
		CHECK_EQ(sfs_file_fsync(fs, g), 0);    /* installs written, not synced */
		CHECK_EQ(sfs_file_pwrite(fs, g, buf, 100, 0), 100);
		sfs_errdev_arm(dev, SFS_ERR_SYNC, 1, 1, -EIO);
		CHECK_EQ(sfs_file_fsync(fs, g), -EIO); /* the next commit reinstalls */
		int h = open_write(fs, hn, 'h', 4096);
		uint64_t inj = sfs_errdev_injected(dev);
		sfs_errdev_arm(dev, reinstall_fails[k], 1, 1, -EIO);
		CHECK_EQ(sfs_file_fsync(fs, h), -EIO);
		CHECK_EQ(sfs_errdev_injected(dev), inj + 1);
		CHECK_EQ(sfs_file_pwrite(fs, a, buf, 10, 0), -EIO);   /* no more changes */
		CHECK_EQ(sfs_sync(fs), -EIO);
		sfs_file_close(fs, h);
		sfs_file_close(fs, g);
		sfs_file_close(fs, a);
		CHECK(sfs_unmount(fs) < 0);
		fs = mount_dev(dev);
		CHECK_EQ(sfs_stat(fs, gn, &st), 0);    /* the journal still had it */
		a = sfs_file_open(fs, "a", 0);
		CHECK(a >= 0);
	}

	/* 3. a sync that fails inside a commit (metadata): the mount refuses
	 *    changes and every fsync fails, also with the device back */
	int d = open_write(fs, "d", 'd', 12288);  /* allocates: a commit is pending */
	sfs_errdev_arm(dev, SFS_ERR_SYNC, 1, 1, -EIO);
	CHECK_EQ(sfs_file_fsync(fs, d), -EIO);
	CHECK_EQ(sfs_file_fsync(fs, d), -EIO);
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);
	CHECK_EQ(sfs_sync(fs), -EIO);
	CHECK_EQ(sfs_file_pwrite(fs, a, buf, 10, 0), -EIO);
	sfs_file_close(fs, a);
	sfs_file_close(fs, d);
	CHECK(sfs_unmount(fs) < 0);

	/* 4. what was fsynced in 2 survived 3; a sync that fails for ever, then
	 *    a device that works again: the same stickiness */
	fs = mount_dev(dev);
	a = sfs_file_open(fs, "a", 0);
	CHECK(a >= 0);
	CHECK_EQ(sfs_file_pread(fs, a, buf, 4096, 0), 4096);
	CHECK(buf[0] == 'x' && buf[4095] == 'x');       /* fsynced in 2: kept */
	CHECK_EQ(sfs_file_pwrite(fs, a, buf, 4096, 0), 4096);
	sfs_errdev_arm(dev, SFS_ERR_SYNC, 1, 0, -EIO);  /* every sync fails */
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);
	sfs_errdev_arm(dev, 0, 0, 0, 0);
	CHECK_EQ(sfs_file_fsync(fs, a), -EIO);
	CHECK_EQ(sfs_file_close(fs, a), 0);
	CHECK_EQ(sfs_unmount(fs), -EIO);
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";
	CHECK_EQ(sfs_fsck_dev(dev, 0, &res, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ(res.errors_found, 0);

	/* 5. a truncate up over a kept block's stale tail zeroes it first; when
	 *    that write fails the truncate fails and the size stays: no stale
	 *    byte becomes file data */
	fs = mount_dev(dev);
	int z = open_write(fs, "z", 'z', 4096);
	CHECK_EQ(sfs_file_truncate(fs, z, 100), 0);   /* the block stays, 'z' past 100 */
	CHECK_EQ(sfs_sync(fs), 0);
	sfs_errdev_arm(dev, SFS_ERR_WRITE, 1, 1, -EIO);
	CHECK_EQ(sfs_file_truncate(fs, z, 4096), -EIO);
	CHECK_EQ(sfs_file_pread(fs, z, buf, 4096, 0), 100);
	CHECK_EQ(sfs_file_close(fs, z), 0);
	sfs_unmount(fs);
	sfs_dev_free(dev);
	printf("ok\n");
	return 0;
}
