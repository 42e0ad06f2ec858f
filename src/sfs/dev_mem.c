/* SPDX-License-Identifier: MIT */
/*
 * dev_mem.c - memory block devices for tests and the fuzzer: a plain memory
 * device, and the fault device that simulates a power cut.
 *
 * Fault device model: `cur` is what reads see; `durable` is what survives a
 * crash. Writes go to cur and mark their blocks dirty; sync copies the dirty
 * blocks to durable. Once armed with n, the n-th write after the arm call
 * (n = 1: the very next one) and every later write are "accepted" (visible in
 * cur) but the cut has happened: syncs no longer make anything durable.
 * crash() restores cur from durable (power cut) and disarms.
 * Must never print; allocation only at creation.
 */
#include <stdlib.h>
#include "sfs_int.h"

struct memdev {
	struct sfs_dev d;
	uint8_t *cur;
	int fault;
	uint8_t *durable;
	uint8_t *dirty;          /* one byte per 4 KiB block */
	uint64_t nblk;
	uint64_t writes;
	uint64_t arm_at;         /* absolute index of the first lost write; 0: not armed */
	int cut;
};

static int mem_pread(struct sfs_dev *dev, void *buf, size_t len, uint64_t off)
{
	struct memdev *m = (struct memdev *)dev;
	if (off > dev->size || len > dev->size - off)
		return -EIO;
	memcpy(buf, m->cur + off, len);
	return 0;
}

static int mem_pwrite(struct sfs_dev *dev, const void *buf, size_t len, uint64_t off)
{
	struct memdev *m = (struct memdev *)dev;
	if (off > dev->size || len > dev->size - off)
		return -EIO;
	m->writes++;
	if (m->fault && m->arm_at && m->writes >= m->arm_at)
		m->cut = 1;
	memcpy(m->cur + off, buf, len);
	if (m->fault && !m->cut && len) {
		for (uint64_t b = off / BS; b <= (off + len - 1) / BS; b++)
			m->dirty[b] = 1;
	}
	return 0;
}

static int mem_sync(struct sfs_dev *dev)
{
	struct memdev *m = (struct memdev *)dev;
	if (!m->fault || m->cut)
		return 0;
	for (uint64_t b = 0; b < m->nblk; b++) {
		if (!m->dirty[b])
			continue;
		uint64_t off = b * BS;
		uint64_t n = dev->size - off < BS ? dev->size - off : BS;
		memcpy(m->durable + off, m->cur + off, n);
		m->dirty[b] = 0;
	}
	return 0;
}

static void mem_close(struct sfs_dev *dev)
{
	struct memdev *m = (struct memdev *)dev;
	free(m->cur);
	free(m->durable);
	free(m->dirty);
	free(m);
}

static struct memdev *mem_new(uint64_t size, int fault)
{
	if (size == 0 || size > (uint64_t)SIZE_MAX / 2)
		return NULL;
	struct memdev *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->cur = calloc(1, (size_t)size);
	if (!m->cur)
		goto fail;
	if (fault) {
		m->fault = 1;
		m->nblk = (size + BS - 1) / BS;
		m->durable = calloc(1, (size_t)size);
		m->dirty = calloc(1, (size_t)m->nblk);
		if (!m->durable || !m->dirty)
			goto fail;
	}
	m->d.pread = mem_pread;
	m->d.pwrite = mem_pwrite;
	m->d.sync = mem_sync;
	m->d.close = mem_close;
	m->d.size = size;
	m->d.map = m->cur;
	m->d.fd = -1;
	m->d.direct = 0;
	return m;
fail:
	mem_close(&m->d);
	return NULL;
}

SFS_EXPORT struct sfs_dev *sfs_memdev_new(const void *data, size_t len, uint64_t size)
{
	struct memdev *m = mem_new(size, 0);
	if (!m)
		return NULL;
	if (data && len)
		memcpy(m->cur, data, len < size ? len : (size_t)size);
	return &m->d;
}

SFS_EXPORT struct sfs_dev *sfs_faultdev_new(uint64_t size)
{
	struct memdev *m = mem_new(size, 1);
	return m ? &m->d : NULL;
}

static struct memdev *as_fault(const struct sfs_dev *dev)
{
	if (!dev || dev->pwrite != mem_pwrite)
		return NULL;
	struct memdev *m = (struct memdev *)dev;
	return m->fault ? m : NULL;
}

SFS_EXPORT void sfs_faultdev_arm(struct sfs_dev *dev, uint64_t n)
{
	struct memdev *m = as_fault(dev);
	if (!m)
		return;
	m->arm_at = n ? m->writes + n : 0;
	m->cut = 0;
}

SFS_EXPORT void sfs_faultdev_crash(struct sfs_dev *dev)
{
	struct memdev *m = as_fault(dev);
	if (!m)
		return;
	memcpy(m->cur, m->durable, (size_t)dev->size);
	memset(m->dirty, 0, (size_t)m->nblk);
	m->cut = 0;
	m->arm_at = 0;
}

SFS_EXPORT void sfs_faultdev_forget(struct sfs_dev *dev)
{
	struct memdev *m = as_fault(dev);
	if (m)
		memset(m->dirty, 0, (size_t)m->nblk);
}

SFS_EXPORT uint64_t sfs_faultdev_writes(const struct sfs_dev *dev)
{
	const struct memdev *m = as_fault(dev);
	if (!m)
		return dev && dev->pwrite == mem_pwrite ? ((const struct memdev *)dev)->writes : 0;
	return m->writes;
}

SFS_EXPORT void sfs_dev_free(struct sfs_dev *dev)
{
	if (dev && dev->close)
		dev->close(dev);
}
