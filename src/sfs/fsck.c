/* SPDX-License-Identifier: MIT */
/*
 * fsck.c - check (and optionally repair) a SimpleFS image.
 *
 * The checks themselves live in sfs_load() (meta.c), shared with mount: there
 * they are fatal, here they are reported one by one and, with repair, fixed in
 * memory and written back through the journal. Recovery (journal replay,
 * freeing files unlinked while open) is normal operation, not an error.
 * Must never crash, hang or read out of bounds on any image; never print.
 */
#include <stdlib.h>
#include "sfs_int.h"

SFS_EXPORT int sfs_fsck_dev(struct sfs_dev *dev, int repair, struct sfs_fsck_result *res,
			    void (*msg)(void *arg, const char *text), void *arg,
			    char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (res)
		*res = (struct sfs_fsck_result){ 0, 0 };
	if (!dev)
		return -EINVAL;
	struct sfs *fs = calloc(1, sizeof *fs);
	if (!fs)
		return -ENOMEM;
	fs->dev = dev;
	fs->rdonly = !repair;
	struct sfs_chk c = { .strict = 0, .repair = !!repair, .msg = msg, .arg = arg,
			     .err = err, .errlen = errlen };
	int r = sfs_load(fs, &c);
	if (!r && repair) {
		for (uint32_t s = 0; s < fs->max_files && !r; s++)
			if (fs->dir[s].flags & DE_ORPHAN)
				r = sfs_free_orphan(fs, s);
		if (!r)
			r = sfs_finish(fs);
		if (!r)
			r = sfs_super_repair(fs);
		if (r) {
			sfs_seterr(err, errlen, "cannot write repairs: %s", strerror(-r));
			c.fixed = 0;
		}
	}
	if (res) {
		res->errors_found = c.found;
		res->errors_fixed = c.fixed;
	}
	sfs_free_meta(fs);
	free(fs);
	return r;
}

SFS_EXPORT int sfs_fsck(const char *path, int repair, struct sfs_fsck_result *res,
			void (*msg)(void *arg, const char *text), void *arg,
			char *err, size_t errlen)
{
	if (err && errlen)
		err[0] = 0;
	if (res)
		*res = (struct sfs_fsck_result){ 0, 0 };
	if (!path || !*path)
		return -EINVAL;
	struct sfs_dev *dev;
	int r = sfs_filedev_open(path, repair ? 0 : SFS_MOUNT_RDONLY, &dev, err, errlen);
	if (r)
		return r;
	r = sfs_fsck_dev(dev, repair, res, msg, arg, err, errlen);
	dev->close(dev);
	return r;
}
