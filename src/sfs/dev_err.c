/* SPDX-License-Identifier: MIT */
/*
 * dev_err.c - the error-injecting device for tests (SQLite's test_vfs.c
 * counted faults): it passes every call to the device under it, except that
 * once armed the n-th read, write or sync (of the kinds asked for) and a
 * number of later ones fail with a chosen -errno (-EIO, -ENOSPC, ...) without
 * reaching the device. A failed write changes nothing; a failed sync makes
 * nothing durable that was not durable before, and over a fault device it
 * loses the writes it was to make durable for good, as Linux does when a
 * write-back fails (the pages are marked clean; the next sync returns 0).
 * Must never print; never change the device under it on a failed call.
 */
#include <stdlib.h>
#include "sfs_int.h"

struct errdev {
	struct sfs_dev d;
	struct sfs_dev *under;
	int own;
	unsigned ops;               /* SFS_ERR_* armed */
	int err;
	uint64_t at, count;         /* calls at .. at+count-1 fail (count 0: all from at) */
	_Atomic uint64_t calls;     /* armed-kind calls since the arm */
	_Atomic uint64_t injected;
};

/* 0 to pass the call through, or the error to return. */
static int inject(struct errdev *e, unsigned op)
{
	if (!(e->ops & op))
		return 0;
	uint64_t k = atomic_fetch_add(&e->calls, 1) + 1;
	if (k < e->at || (e->count && k - e->at >= e->count))
		return 0;
	atomic_fetch_add(&e->injected, 1);
	return e->err;
}

static int err_pread(struct sfs_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct errdev *e = (struct errdev *)dev;
	int r = inject(e, SFS_ERR_READ);
	return r ? r : e->under->pread(e->under, buf, len, off);
}

static int err_pwrite(struct sfs_dev *dev, const void *buf, size_t len, uint64_t off)
{
	struct errdev *e = (struct errdev *)dev;
	int r = inject(e, SFS_ERR_WRITE);
	return r ? r : e->under->pwrite(e->under, buf, len, off);
}

static int err_sync(struct sfs_dev *dev)
{
	struct errdev *e = (struct errdev *)dev;
	int r = inject(e, SFS_ERR_SYNC);
	if (r)
		sfs_faultdev_forget(e->under);   /* the pages are "clean" now: lost */
	return r ? r : e->under->sync(e->under);
}

static void err_close(struct sfs_dev *dev)
{
	struct errdev *e = (struct errdev *)dev;
	if (e->own)
		e->under->close(e->under);
	free(e);
}

SFS_EXPORT struct sfs_dev *sfs_errdev_new(struct sfs_dev *under, int own)
{
	if (!under)
		return NULL;
	struct errdev *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->under = under;
	e->own = own;
	e->d = (struct sfs_dev){ .pread = err_pread, .pwrite = err_pwrite, .sync = err_sync,
				 .close = err_close, .size = under->size,
				 .map = NULL,   /* every read goes through err_pread */
				 .fd = -1, .direct = under->direct };
	return &e->d;
}

static struct errdev *as_err(const struct sfs_dev *dev)
{
	return dev && dev->pread == err_pread ? (struct errdev *)dev : NULL;
}

SFS_EXPORT void sfs_errdev_arm(struct sfs_dev *dev, unsigned ops, uint64_t n, uint64_t count, int err)
{
	struct errdev *e = as_err(dev);
	if (!e)
		return;
	e->ops = n && err < 0 ? ops : 0;
	e->at = n;
	e->count = count;
	e->err = err;
	atomic_store(&e->calls, 0);
}

SFS_EXPORT uint64_t sfs_errdev_injected(const struct sfs_dev *dev)
{
	struct errdev *e = as_err(dev);
	return e ? atomic_load(&e->injected) : 0;
}
