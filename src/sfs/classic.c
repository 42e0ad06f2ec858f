/* SPDX-License-Identifier: MIT */
/*
 * classic.c - the course-style SimpleFS API (mksfs, sfs_open, sfs_read, ...)
 * on one default instance: the image sfs_default_image() names
 * ($SFS_IMAGE, else disk.sfs in the current directory).
 *
 * A thin layer over the handle API; it keeps no state but the default mount
 * and the sfs_getnextfilename() cursor. Must never print.
 */
#include <stdlib.h>
#include "sfs_int.h"

static struct sfs *g_fs;
static uint32_t g_cookie;

SFS_EXPORT const char *sfs_default_image(void)
{
	const char *p = getenv(SFS_IMAGE_ENV);
	return p && *p ? p : SFS_DEFAULT_IMAGE;
}

SFS_EXPORT struct sfs *sfs_default(void)
{
	return g_fs;
}

SFS_EXPORT int sfs_unmountdefault(void)
{
	if (!g_fs)
		return 0;
	int r = sfs_unmount(g_fs);
	g_fs = NULL;
	g_cookie = 0;
	return r;
}

SFS_EXPORT int mksfs(int fresh)
{
	int r = sfs_unmountdefault();
	(void)r;   /* the old instance is gone either way */
	const char *path = sfs_default_image();
	if (fresh && (r = sfs_format(path, SFS_DEFAULT_SIZE, 0)))
		return r;
	return sfs_mount(path, SFS_MOUNT_CREATE, &g_fs, NULL, 0);
}

SFS_EXPORT int sfs_open(const char *name)
{
	if (!g_fs)
		return -ENODEV;
	return sfs_file_open(g_fs, name, SFS_O_CREAT);
}

SFS_EXPORT int sfs_close(int fd)
{
	return g_fs ? sfs_file_close(g_fs, fd) : -EBADF;
}

SFS_EXPORT ssize_t sfs_read(int fd, void *buf, size_t len)
{
	return g_fs ? sfs_file_read(g_fs, fd, buf, len) : -EBADF;
}

SFS_EXPORT ssize_t sfs_write(int fd, const void *buf, size_t len)
{
	return g_fs ? sfs_file_write(g_fs, fd, buf, len) : -EBADF;
}

SFS_EXPORT int64_t sfs_seek(int fd, int64_t off, int whence)
{
	return g_fs ? sfs_file_seek(g_fs, fd, off, whence) : -EBADF;
}

SFS_EXPORT ssize_t sfs_pread(int fd, void *buf, size_t len, uint64_t off)
{
	return g_fs ? sfs_file_pread(g_fs, fd, buf, len, off) : -EBADF;
}

SFS_EXPORT ssize_t sfs_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	return g_fs ? sfs_file_pwrite(g_fs, fd, buf, len, off) : -EBADF;
}

SFS_EXPORT int sfs_fsync(int fd)
{
	return g_fs ? sfs_file_fsync(g_fs, fd) : -EBADF;
}

SFS_EXPORT int sfs_truncate(int fd, uint64_t size)
{
	return g_fs ? sfs_file_truncate(g_fs, fd, size) : -EBADF;
}

SFS_EXPORT int sfs_remove(const char *name)
{
	return g_fs ? sfs_unlink(g_fs, name) : -ENODEV;
}

SFS_EXPORT int64_t sfs_getfilesize(const char *name)
{
	if (!g_fs)
		return -ENODEV;
	struct sfs_stat st;
	int r = sfs_stat(g_fs, name, &st);
	return r ? r : (int64_t)st.size;
}

SFS_EXPORT int sfs_getnextfilename(char *name)
{
	if (!g_fs)
		return -ENODEV;
	if (!name)
		return -EINVAL;
	struct sfs_stat st;
	int r = sfs_readdir(g_fs, &g_cookie, &st);
	if (r == 1) {
		memcpy(name, st.name, SFS_NAME_MAX + 1);
		return 1;
	}
	g_cookie = 0;
	return r;
}

SFS_EXPORT int sfs_fstat(int fd, struct sfs_stat *st)
{
	return g_fs ? sfs_file_stat(g_fs, fd, st) : -EBADF;
}

SFS_EXPORT int sfs_fstatfs(struct sfs_statfs *st)
{
	return g_fs ? sfs_statfs(g_fs, st) : -ENODEV;
}
