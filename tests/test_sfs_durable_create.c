/* SPDX-License-Identifier: MIT */
/* Description: durable creation. sfs_format (sfs mkfs, the server's --create, a
 * mount with SFS_MOUNT_CREATE) must leave an image that survives a power cut: the
 * superblock is written, then the image is fsynced (its size and inode, not only
 * its data), then its parent directory is fsynced (the new name). The test
 * defines fsync, fdatasync and pwrite itself - the static libsfs.a links to them,
 * they record each call with the path of its descriptor and then do the real
 * system call - and checks the order: every pwrite of the image before the last
 * fsync of the image, and that before an fsync of the directory. A path with no
 * '/' syncs ".", a nested one its own directory; a reformat does the same. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "testutil.h"

enum { EV_PWRITE, EV_FSYNC, EV_FDATASYNC };
struct ev { int kind; char path[PATH_MAX]; };
static struct ev evs[4096];
static int nev;

static void record(int kind, int fd)
{
	char link[64];
	if (nev >= (int)(sizeof evs / sizeof evs[0]))
		return;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, evs[nev].path, PATH_MAX - 1);
	evs[nev].path[n > 0 ? n : 0] = 0;
	evs[nev++].kind = kind;
}

int fsync(int fd)
{
	record(EV_FSYNC, fd);
	return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd)
{
	record(EV_FDATASYNC, fd);
	return (int)syscall(SYS_fdatasync, fd);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	record(EV_PWRITE, fd);
	return syscall(SYS_pwrite64, fd, buf, n, off);
}

/* Format path (relative to cwd) and check the order of durable steps. */
static void check_format(const char *path, const char *dir_abs, const char *img_abs)
{
	nev = 0;
	CHECK_EQ(sfs_format(path, 1u << 20, 0), 0);
	int last_write = -1, img_fsync = -1, dir_fsync = -1, writes = 0;
	for (int i = 0; i < nev; i++) {
		if (strcmp(evs[i].path, img_abs) == 0) {
			if (evs[i].kind == EV_PWRITE) {
				last_write = i;
				writes++;
			} else if (evs[i].kind == EV_FSYNC) {
				img_fsync = i;
			}
		} else if (strcmp(evs[i].path, dir_abs) == 0 && evs[i].kind == EV_FSYNC) {
			dir_fsync = i;
		}
	}
	if (writes == 0)
		FAIL("%s: no pwrite of the image recorded", path);
	if (img_fsync < last_write)
		FAIL("%s: the image is not fsynced after its last write (fsync %d, write %d)",
		     path, img_fsync, last_write);
	if (dir_fsync < img_fsync)
		FAIL("%s: the parent directory %s is not fsynced after the image (dir %d, image %d)",
		     path, dir_abs, dir_fsync, img_fsync);
	struct sfs *fs = MOUNT_OR_DIE(path);
	CHECK_EQ(sfs_unmount(fs), 0);
}

int main(void)
{
	char tmpl[] = "/tmp/sfs_durable.XXXXXX", cwd[PATH_MAX], img[PATH_MAX + 32], sub[PATH_MAX + 8];
	CHECK(mkdtemp(tmpl) != NULL);
	CHECK(chdir(tmpl) == 0);
	CHECK(getcwd(cwd, sizeof cwd) != NULL);

	snprintf(img, sizeof img, "%s/a.sfs", cwd);
	check_format("a.sfs", cwd, img);          /* new, in "." */
	check_format("a.sfs", cwd, img);          /* reformatted */
	snprintf(sub, sizeof sub, "%s/d", cwd);
	CHECK(mkdir("d", 0700) == 0);
	snprintf(img, sizeof img, "%s/d/b.sfs", cwd);
	check_format("d/b.sfs", sub, img);        /* nested */
	unlink("d/b.sfs");
	rmdir("d");
	unlink("a.sfs");
	CHECK(chdir("/") == 0);
	rmdir(tmpl);
	printf("ok\n");
	return 0;
}
