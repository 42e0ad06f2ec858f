/* SPDX-License-Identifier: MIT */
/*
 * dev_file.c - the image-file block device: open, flock, mmap for reads,
 * pread/pwrite, fdatasync; the /proc/locks lookup that names a lock holder;
 * and the device I/O helpers the file system uses (aligned bounce buffers for
 * O_DIRECT, zeroing with hole punching).
 *
 * Must never print, and never take a per-I/O malloc: bounce buffers are per
 * thread and reused.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* O_DIRECT, fallocate, pthread_rwlockattr_setkind_np */
#endif
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "sfs_int.h"

struct filedev {
	struct sfs_dev d;
	size_t maplen;
};

void *sfs_aligned_alloc(size_t len)
{
	void *p = NULL;
	if (posix_memalign(&p, BS, len ? len : BS))
		return NULL;
	return p;
}

/* Whole-range pread/pwrite: retries EINTR and short transfers; 0 bytes is -EIO. */
static int fd_rw(int fd, char *p, size_t len, uint64_t off, int write)
{
	while (len) {
		ssize_t n = write ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int fd_pread(struct sfs_dev *dev, void *buf, size_t len, uint64_t off)
{
	return fd_rw(dev->fd, buf, len, off, 0);
}

static int fd_pwrite(struct sfs_dev *dev, const void *buf, size_t len, uint64_t off)
{
	return fd_rw(dev->fd, (char *)buf, len, off, 1);   /* pwrite only reads buf */
}

static int fd_sync(struct sfs_dev *dev)
{
	if (fdatasync(dev->fd) < 0)
		return -errno;
	return 0;
}

static void fd_close(struct sfs_dev *dev)
{
	struct filedev *f = (struct filedev *)dev;
	if (dev->map)
		munmap((void *)dev->map, f->maplen);
	if (dev->fd >= 0)
		close(dev->fd);   /* releases the flock */
	free(f);
}

/* A device on fd with no mapping yet; NULL when out of memory. */
static struct filedev *filedev_new(int fd, uint64_t size, int direct)
{
	struct filedev *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->d.pread = fd_pread;
	f->d.pwrite = fd_pwrite;
	f->d.sync = fd_sync;
	f->d.close = fd_close;
	f->d.size = size;
	f->d.fd = fd;
	f->d.direct = direct;
	f->d.map = NULL;
	return f;
}

/* Find the pid holding a lock on (dev, ino) in /proc/locks. */
static int holder_of(dev_t dv, ino_t ino)
{
	FILE *f = fopen("/proc/locks", "re");
	if (!f)
		return 0;
	char line[256];
	int pid_dev = 0, pid_ino = 0;
	while (fgets(line, sizeof line, f)) {
		char *s = strchr(line, ':');
		if (!s)
			continue;
		s++;
		if (strstr(s, "->"))
			continue;   /* a waiter, not a holder */
		char type[16], adv[16], rw[16];
		int pid;
		unsigned maj, min;
		unsigned long long in;
		if (sscanf(s, "%15s %15s %15s %d %x:%x:%llu", type, adv, rw, &pid,
			   &maj, &min, &in) != 7)
			continue;
		if ((ino_t)in != ino || pid <= 0)
			continue;
		if (maj == major(dv) && min == minor(dv)) {
			pid_dev = pid;
			break;
		}
		if (!pid_ino)
			pid_ino = pid;   /* overlayfs: st_dev may differ */
	}
	fclose(f);
	return pid_dev ? pid_dev : pid_ino;
}

int sfs_lock_holder_fd(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	return holder_of(st.st_dev, st.st_ino);
}

SFS_EXPORT int sfs_lock_holder(const char *path)
{
	struct stat st;
	if (!path)
		return -EINVAL;
	if (stat(path, &st) < 0)
		return -errno;
	return holder_of(st.st_dev, st.st_ino);
}

void sfs_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int sfs_filedev_open(const char *path, unsigned mflags, struct sfs_dev **out,
		     char *err, size_t errlen)
{
	int rdonly = !!(mflags & SFS_MOUNT_RDONLY);
	int direct = !!(mflags & SFS_MOUNT_DIRECT);
	int oflags = (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | (direct ? O_DIRECT : 0);
	int fd = open(path, oflags);
	if (fd < 0) {
		int e = errno;
		if (direct && e == EINVAL)
			sfs_seterr(err, errlen, "O_DIRECT not supported here");
		else
			sfs_seterr(err, errlen, "%s", strerror(e));
		return -e;
	}
	if (flock(fd, (rdonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		int e = errno;
		if (e == EWOULDBLOCK) {
			int pid = sfs_lock_holder_fd(fd);
			if (pid > 0)
				sfs_seterr(err, errlen, "in use by pid %d", pid);
			else
				sfs_seterr(err, errlen, "in use by another process");
			e = EBUSY;
		} else {
			sfs_seterr(err, errlen, "cannot lock: %s", strerror(e));
		}
		close(fd);
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		sfs_seterr(err, errlen, "%s", strerror(e));
		return -e;
	}
	uint64_t size;
	if (S_ISREG(st.st_mode)) {
		size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
			int e = errno;
			close(fd);
			sfs_seterr(err, errlen, "%s", strerror(e));
			return -e;
		}
	} else {
		close(fd);
		sfs_seterr(err, errlen, "not a regular file or block device");
		return -EINVAL;
	}
	struct filedev *f = filedev_new(fd, size, direct);
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	if (!direct && size >= BS && size <= (uint64_t)SIZE_MAX) {
		void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			f->d.map = m;
			f->maplen = (size_t)size;
		}
	}
	*out = &f->d;
	return 0;
}

/* A device on an fd the caller already opened and locked (used by format).
 * No mmap; closing it closes the fd. */
int sfs_filedev_from_fd(int fd, uint64_t size, struct sfs_dev **out)
{
	struct filedev *f = filedev_new(fd, size, 0);
	if (!f)
		return -ENOMEM;
	*out = &f->d;
	return 0;
}

/* ---- I/O helpers used by the file system ------------------------------ */

static pthread_key_t bounce_key;
static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
struct bounce { void *p; size_t len; };

static void bounce_free(void *v)
{
	struct bounce *b = v;
	free(b->p);
	free(b);
}
static void bounce_init(void)
{
	pthread_key_create(&bounce_key, bounce_free);
}

#define BOUNCE_CHUNK (1u << 20)

/* A per-thread aligned buffer of at least len bytes (len <= BOUNCE_CHUNK + 2*BS). */
static void *bounce_get(size_t len)
{
	pthread_once(&bounce_once, bounce_init);
	struct bounce *b = pthread_getspecific(bounce_key);
	if (!b) {
		b = calloc(1, sizeof *b);
		if (!b)
			return NULL;
		if (pthread_setspecific(bounce_key, b)) {
			free(b);
			return NULL;
		}
	}
	if (b->len < len) {
		void *p = sfs_aligned_alloc(len);
		if (!p)
			return NULL;
		free(b->p);
		b->p = p;
		b->len = len;
	}
	return b->p;
}

static inline int aligned(const void *buf, size_t len, uint64_t off)
{
	return (((uintptr_t)buf | len | off) & (BS - 1)) == 0;
}

int sfs_io_read(struct sfs_dev *dev, void *buf, size_t len, uint64_t off)
{
	if (len == 0)
		return 0;
	if (off > dev->size || len > dev->size - off)
		return -EIO;
	if (dev->map) {
		memcpy(buf, (const char *)dev->map + off, len);
		return 0;
	}
	if (!dev->direct || aligned(buf, len, off))
		return dev->pread(dev, buf, len, off);
	char *p = buf;
	while (len) {
		size_t n = len > BOUNCE_CHUNK ? BOUNCE_CHUNK : len;
		uint64_t a = off & ~(uint64_t)(BS - 1);
		uint64_t e = (off + n + BS - 1) & ~(uint64_t)(BS - 1);
		char *b = bounce_get((size_t)(e - a));
		if (!b)
			return -ENOMEM;
		int r = dev->pread(dev, b, (size_t)(e - a), a);
		if (r)
			return r;
		memcpy(p, b + (off - a), n);
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int sfs_io_write(struct sfs_dev *dev, const void *buf, size_t len, uint64_t off)
{
	if (len == 0)
		return 0;
	if (off > dev->size || len > dev->size - off)
		return -EIO;
	if (!dev->direct || aligned(buf, len, off))
		return dev->pwrite(dev, buf, len, off);
	/* O_DIRECT, unaligned: read-modify-write through the bounce buffer.
	 * The caller holds the fs lock exclusively. */
	const char *p = buf;
	while (len) {
		size_t n = len > BOUNCE_CHUNK ? BOUNCE_CHUNK : len;
		uint64_t a = off & ~(uint64_t)(BS - 1);
		uint64_t e = (off + n + BS - 1) & ~(uint64_t)(BS - 1);
		char *b = bounce_get((size_t)(e - a));
		if (!b)
			return -ENOMEM;
		int r;
		if (off != a && (r = dev->pread(dev, b, BS, a)))
			return r;
		if ((off + n) != e && (e - BS != a || off == a) &&
		    (r = dev->pread(dev, b + (e - BS - a), BS, e - BS)))
			return r;
		memcpy(b + (off - a), p, n);
		r = dev->pwrite(dev, b, (size_t)(e - a), a);
		if (r)
			return r;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static const uint8_t zeros[1u << 16] __attribute__((aligned(4096)));

int sfs_dev_zero(struct sfs_dev *dev, uint64_t off, uint64_t len)
{
	if (len == 0)
		return 0;
	if (dev->fd >= 0 && ((off | len) & (BS - 1)) == 0 && len >= BS) {
		if (fallocate(dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)off, (off_t)len) == 0)
			return 0;
	}
	while (len) {
		size_t n = len > sizeof zeros ? sizeof zeros : (size_t)len;
		int r = sfs_io_write(dev, zeros, n, off);
		if (r)
			return r;
		off += n;
		len -= n;
	}
	return 0;
}
