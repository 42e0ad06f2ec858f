/* SPDX-License-Identifier: MIT */
/*
 * backend_sfs.c - the SimpleFS backend: the server's file operations on a
 * mounted SimpleFS image through the handle API of include/sfs.h. Warm reads
 * are served by SimpleFS from its mapping of the image (no syscall), straight
 * into the shared region.
 *
 * Must never: print, or hand SimpleFS a name or buffer the server has not
 * validated.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "backend.h"
#include "sfs.h"

static int sfs_be_init(const struct ur_backend_conf *conf, void **st, char *err, size_t errlen)
{
	unsigned fl = 0;
	struct sfs *fs = NULL;
	if (conf->rdonly)
		fl |= SFS_MOUNT_RDONLY;
	if (conf->direct)
		fl |= SFS_MOUNT_DIRECT;
	if (conf->create)
		fl |= SFS_MOUNT_CREATE;
	err[0] = '\0';
	int r = sfs_mount(conf->image, fl, &fs, err, errlen);
	if (r < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-r));
		return r;
	}
	sfs_mount_warnings(fs, err, errlen);
	*st = fs;
	return 0;
}

static int sfs_be_fini(void *st)
{
	return sfs_unmount(st);
}

static int sfs_be_open(void *st, const char *name, unsigned fl)
{
	/* UR_O_* are SFS_O_* bit for bit. */
	return sfs_file_open(st, name, fl);
}

static int sfs_be_close(void *st, int fd)
{
	return sfs_file_close(st, fd);
}

static ssize_t sfs_be_read(void *st, int fd, void *buf, size_t len, uint64_t off)
{
	if (off == UR_OFF_POS)
		return sfs_file_read(st, fd, buf, len);
	return sfs_file_pread(st, fd, buf, len, off);
}

static ssize_t sfs_be_write(void *st, int fd, const void *buf, size_t len, uint64_t off)
{
	if (off == UR_OFF_POS)
		return sfs_file_write(st, fd, buf, len);
	return sfs_file_pwrite(st, fd, buf, len, off);
}

static int sfs_be_fsync(void *st, int fd)
{
	return sfs_file_fsync(st, fd);
}

static int sfs_be_ftruncate(void *st, int fd, uint64_t size)
{
	return sfs_file_truncate(st, fd, size);
}

static int sfs_be_unlink(void *st, const char *name)
{
	return sfs_unlink(st, name);
}

static void to_statx(const struct sfs_stat *s, struct ur_statx *o)
{
	o->size = s->size;
	o->blocks = s->blocks;
	o->mtime_ns = s->mtime_ns;
	o->ino = s->ino;
	o->reserved = 0;
}

static int sfs_be_fstat(void *st, int fd, struct ur_statx *out)
{
	struct sfs_stat s;
	int r = sfs_file_stat(st, fd, &s);
	if (r >= 0)
		to_statx(&s, out);
	return r;
}

static int sfs_be_stat(void *st, const char *name, struct ur_statx *out)
{
	struct sfs_stat s;
	int r = sfs_stat(st, name, &s);
	if (r >= 0)
		to_statx(&s, out);
	return r;
}

/* Run an sfs_file_map* call and convert its extents to ur_extent. */
static int map_with(int (*fn)(struct sfs *, int, uint64_t, uint64_t, struct sfs_extent *, int),
		    void *st, int fd, uint64_t off, uint64_t len, struct ur_extent *ext, int max)
{
	struct sfs_extent e[16];
	if (max > 16)
		max = 16;
	int n = fn(st, fd, off, len, e, max);
	for (int i = 0; i < n; i++)
		ext[i] = (struct ur_extent){ e[i].file_off, e[i].img_off, e[i].len };
	return n;
}

static int sfs_be_map(void *st, int fd, uint64_t off, uint64_t len, struct ur_extent *ext, int max)
{
	return map_with(sfs_file_map, st, fd, off, len, ext, max);
}

static int sfs_be_map_write(void *st, int fd, uint64_t off, uint64_t len, struct ur_extent *ext, int max)
{
	return map_with(sfs_file_map_write, st, fd, off, len, ext, max);
}

static int sfs_be_image_fd(void *st, int *direct)
{
	return sfs_image_fd(st, direct);
}

_Static_assert(UR_O_CREAT == SFS_O_CREAT && UR_O_TRUNC == SFS_O_TRUNC && UR_O_EXCL == SFS_O_EXCL &&
	       UR_O_APPEND == SFS_O_APPEND && UR_O_RDONLY == SFS_O_RDONLY, "UR_O_* == SFS_O_*");
_Static_assert(UR_NAME_MAX == SFS_NAME_MAX, "name length");

const struct ur_backend_ops ur_backend_sfs = {
	.name      = "sfs",
	.init      = sfs_be_init,
	.fini      = sfs_be_fini,
	.open      = sfs_be_open,
	.close     = sfs_be_close,
	.read      = sfs_be_read,
	.write     = sfs_be_write,
	.fsync     = sfs_be_fsync,
	.ftruncate = sfs_be_ftruncate,
	.unlink    = sfs_be_unlink,
	.fstat     = sfs_be_fstat,
	.stat      = sfs_be_stat,
	.map       = sfs_be_map,
	.image_fd  = sfs_be_image_fd,
	.map_write = sfs_be_map_write,
};
