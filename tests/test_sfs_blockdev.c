/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS in a block device (src/sfs/dev_file.c: a device's
 * size is BLKGETSIZE64's, a file's is its length). An image with a file in
 * it is attached to a free loop device (/dev/loop-control, as root); mounted through
 * /dev/loopN, the file reads back byte for byte, a write through it is found
 * in the image file after the unmount, and the geometry is the image file's.
 * The loop device detaches itself when the test's descriptor of it closes.
 * When BLKGETSIZE64 fails (this program's own ioctl, which libsfs.a calls,
 * answers EIO for it) the mount fails with -EIO and its reason, as a failed
 * fstat would. Without root or loop devices the loop part is a counted skip;
 * a character device (/dev/null) is refused with -EINVAL either way. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sfs.h"
#include "testutil.h"

#define IMG "blk.sfs"
#define IMG_SIZE (16ull << 20)

static int fail_blksize;                /* errno BLKGETSIZE64 answers, 0: the kernel's */
static char loopdev[64];

/* libsfs.a is linked into this program, so its ioctl calls come here. */
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	if (req == BLKGETSIZE64 && fail_blksize) {
		errno = fail_blksize;
		return -1;
	}
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

/* Attach IMG to a free loop device that detaches itself when this process
 * closes it (LO_FLAGS_AUTOCLEAR: nothing is left behind, even by a crash):
 * its fd (kept open), or -1 with why. */
static int attach(char *why, size_t cap)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		snprintf(why, cap, "/dev/loop-control: %s", strerror(errno));
		return -1;
	}
	int n = ioctl(ctl, LOOP_CTL_GET_FREE), e = errno;
	close(ctl);
	if (n < 0) {
		snprintf(why, cap, "no free loop device: %s", strerror(e));
		return -1;
	}
	snprintf(loopdev, sizeof loopdev, "/dev/loop%d", n);
	int lfd = open(loopdev, O_RDWR | O_CLOEXEC), ffd = open(IMG, O_RDWR | O_CLOEXEC);
	CHECK(ffd >= 0);
	if (lfd < 0) {
		snprintf(why, cap, "%s: %s", loopdev, strerror(errno));
		close(ffd);
		return -1;
	}
	struct loop_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.fd = (uint32_t)ffd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
	if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
		snprintf(why, cap, "LOOP_CONFIGURE %s: %s", loopdev, strerror(errno));
		close(lfd);
		close(ffd);
		return -1;
	}
	close(ffd);
	return lfd;
}

static void put(const char *path, const char *name, const char *text)
{
	struct sfs *fs;
	char err[256] = "";
	int e = sfs_mount(path, 0, &fs, err, sizeof err);
	if (e < 0)
		FAIL("mount %s: %s (%s)", path, strerror(-e), err);
	int fd = sfs_file_open(fs, name, SFS_O_CREAT | SFS_O_TRUNC);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, text, strlen(text), 0), (ssize_t)strlen(text));
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
}

static void expect(const char *path, const char *name, const char *text)
{
	struct sfs *fs;
	char err[256] = "", buf[256] = "";
	int e = sfs_mount(path, SFS_MOUNT_RDONLY, &fs, err, sizeof err);
	if (e < 0)
		FAIL("mount %s: %s (%s)", path, strerror(-e), err);
	int fd = sfs_file_open(fs, name, SFS_O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, sizeof buf - 1, 0), (ssize_t)strlen(text));
	CHECK_EQ(strcmp(buf, text), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
}

int main(void)
{
	char err[256] = "", why[256];
	struct sfs *fs = NULL;

	/* a character device: neither a file nor a block device */
	CHECK_EQ(sfs_mount("/dev/null", SFS_MOUNT_RDONLY, &fs, err, sizeof err), -EINVAL);
	CHECK(strstr(err, "not a regular file or block device"));

	CHECK_EQ(sfs_format(IMG, IMG_SIZE, 0), 0);
	put(IMG, "a.txt", "written into the image file\n");
	struct sfs_statfs image_st;              /* the image file's geometry */
	CHECK_EQ(sfs_mount(IMG, SFS_MOUNT_RDONLY, &fs, err, sizeof err), 0);
	CHECK_EQ(sfs_statfs(fs, &image_st), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	int lfd = attach(why, sizeof why);
	if (lfd < 0) {
		tu_part_skip("loop device", "SimpleFS in a block device", why);
		printf("PASS\n");
		return 0;
	}
	tu_part_ran("loop device", "SimpleFS in a block device");
	printf("image attached to %s\n", loopdev);

	/* mounted through the block device: the file, a write, the size */
	expect(loopdev, "a.txt", "written into the image file\n");
	put(loopdev, "b.txt", "written through the block device\n");
	struct sfs_statfs st;
	CHECK_EQ(sfs_mount(loopdev, SFS_MOUNT_RDONLY, &fs, err, sizeof err), 0);
	CHECK_EQ(sfs_statfs(fs, &st), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	printf("mounted through %s: %llu blocks of %llu bytes, %llu free\n", loopdev,
	       (unsigned long long)st.total_blocks, (unsigned long long)st.block_size,
	       (unsigned long long)st.free_blocks);
	CHECK_EQ(st.total_blocks, image_st.total_blocks);
	CHECK_EQ(st.free_blocks + 1, image_st.free_blocks);   /* b.txt's one block */

	/* the device's size cannot be read: the mount fails with that error */
	fail_blksize = EIO;
	err[0] = '\0';
	CHECK_EQ(sfs_mount(loopdev, 0, &fs, err, sizeof err), -EIO);
	printf("BLKGETSIZE64 failing: %s\n", err);
	CHECK(strstr(err, strerror(EIO)));
	fail_blksize = 0;

	close(lfd);                              /* the loop device detaches */
	expect(IMG, "b.txt", "written through the block device\n");
	printf("PASS\n");
	return 0;
}
