/* SPDX-License-Identifier: MIT */
/*
 * sfs.h - SimpleFS, a FAT-like, crash-safe file system inside one image file.
 *
 * This is the whole public interface of the SimpleFS library (libsfs.a). The
 * server, the image tool, the sync benchmark and the tests link it directly.
 * The library knows nothing of rings or servers and never prints: every call
 * returns 0 (or a count) on success and a negative errno value on failure.
 *
 * Two layers:
 *   - the handle API (struct sfs *): mount an image, operate on it, unmount.
 *     No global state; several images may be mounted at once. A mounted fs is
 *     thread-safe: concurrent reads, and writes that do not allocate, run their
 *     image I/O in parallel; metadata changes are serialised inside.
 *   - the classic API (mksfs, sfs_open, ...) on one default instance, for the
 *     programs of the original course design.
 *
 * On-disk format: docs/FORMAT.md.
 */
#ifndef SFS_H
#define SFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SFS_BLOCK_SIZE        4096u
#define SFS_NAME_MAX          63u            /* bytes in a name, NUL excluded */
#define SFS_DEFAULT_IMAGE     "disk.sfs"
#define SFS_IMAGE_ENV         "SFS_IMAGE"    /* names another default image */
#define SFS_DEFAULT_SIZE      (1ull << 30)   /* 1 GiB, sparse */
#define SFS_DEFAULT_MAX_FILES 4096u
#define SFS_MIN_SIZE          (1ull << 20)   /* smallest image mkfs accepts */
#define SFS_MAX_SIZE          (1ull << 44)   /* 16 TiB: 2^32 blocks of 4 KiB */

/* ---------------------------------------------------------------------------
 * Block device under the file system. The library opens image files itself;
 * tests and the fuzzer hand it other devices (memory, fault injection).
 * ------------------------------------------------------------------------- */
struct sfs_dev {
	/* Whole transfers only: 0 on success, -errno on failure. */
	int (*pread)(struct sfs_dev *dev, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct sfs_dev *dev, const void *buf, size_t len, uint64_t off);
	/* Make every write that returned before this call durable. */
	int (*sync)(struct sfs_dev *dev);
	/* Release the device (called by sfs_unmount for devices it owns). */
	void (*close)(struct sfs_dev *dev);
	uint64_t size;          /* bytes */
	const void *map;        /* optional read-only mapping of all of it, or NULL */
	int fd;                 /* host file descriptor, or -1 */
	unsigned direct;        /* nonzero: buffers, offsets, lengths must be 4 KiB aligned */
};

/* Test devices. A memory device starts as a copy of data (zero-filled up to
 * size if data is shorter). A fault device is a memory device that counts
 * writes: once armed with n, the n-th write and every later one are accepted
 * but never become durable; sfs_faultdev_crash() then throws away every write
 * not made durable by a sync before the cut (a power cut) and disarms.
 * Details: n counts from the arm call (n = 1: the very next write is the cut;
 * n = 0 disarms). Reads always see every accepted write until the crash.
 * sfs_faultdev_writes() counts all pwrite calls since creation (never reset).
 * Unmount (or abandon) the fs on the device BEFORE sfs_faultdev_crash(): after
 * the crash the device is disarmed and writes are durable again. Memory and
 * fault devices also work with sfs_faultdev_writes (memdev: its write count). */
struct sfs_dev *sfs_memdev_new(const void *data, size_t len, uint64_t size);
struct sfs_dev *sfs_faultdev_new(uint64_t size);
void     sfs_faultdev_arm(struct sfs_dev *dev, uint64_t n);
void     sfs_faultdev_crash(struct sfs_dev *dev);
uint64_t sfs_faultdev_writes(const struct sfs_dev *dev);   /* writes so far */
/* Forget the writes not yet synced without making them durable: reads still
 * see them, a crash loses them, a later sync does not save them (what Linux
 * does to dirty pages whose write-back failed). */
void     sfs_faultdev_forget(struct sfs_dev *dev);
void     sfs_dev_free(struct sfs_dev *dev);
/* An error device passes every call to under (closed with it if own) until
 * armed: then, counting from the arm call, the n-th call among the kinds in
 * ops (SFS_ERR_*) and the count-1 after it (count 0: every later one) fail
 * with err (a negative errno: -EIO, -ENOSPC, ...) without reaching under.
 * n = 0 disarms. Reads never use a mapping, so they can fail too. A failed
 * sync over a fault device also forgets the writes it was to make durable
 * (sfs_faultdev_forget: the kernel's "fsyncgate" behaviour).
 * sfs_errdev_injected() counts the failures injected since creation. */
#define SFS_ERR_READ  0x1u
#define SFS_ERR_WRITE 0x2u
#define SFS_ERR_SYNC  0x4u
struct sfs_dev *sfs_errdev_new(struct sfs_dev *under, int own);
void     sfs_errdev_arm(struct sfs_dev *dev, unsigned ops, uint64_t n, uint64_t count, int err);
uint64_t sfs_errdev_injected(const struct sfs_dev *dev);

/* ---------------------------------------------------------------------------
 * Handle API
 * ------------------------------------------------------------------------- */
struct sfs;

/* Mount flags */
#define SFS_MOUNT_RDONLY  0x1u   /* no writes at all; shared lock on the image */
#define SFS_MOUNT_DIRECT  0x2u   /* open the image O_DIRECT (aligned bounce buffers inside) */
#define SFS_MOUNT_CREATE  0x4u   /* path: format a default-size image if none exists */

/* Open flags */
#define SFS_O_CREAT   0x1u       /* create a missing file */
#define SFS_O_TRUNC   0x2u       /* truncate to 0 on open */
#define SFS_O_EXCL    0x4u       /* with CREAT: fail with -EEXIST if it exists */
#define SFS_O_APPEND  0x8u       /* every write goes to the end */
#define SFS_O_RDONLY  0x10u      /* writes through this handle fail with -EBADF */

/* Format an image file of size bytes (rounded down to 4 KiB) with room for
 * max_files files (0: the default). The file is created sparse.
 * Errors: -EINVAL (size < SFS_MIN_SIZE, max_files > 1048576), -EFBIG (size >
 * SFS_MAX_SIZE), -ENOSPC (max_files leaves < 16 data blocks), -EBUSY (the image
 * is mounted). max_files 0 on a small image gives fewer than 4096 slots: the
 * directory takes at most a quarter of the image (1 MiB: 1953 files). */
int sfs_format(const char *path, uint64_t size, uint32_t max_files);
/* The same, with flags and the mode of a new image file (sfs_format: 0,
 * SFS_DEFAULT_MODE). A new file is created O_EXCL with exactly mode (not
 * through a symbolic link, even a dangling one); an existing path is opened
 * without following a final symbolic link (-ELOOP). An existing non-empty
 * regular file that is not a SimpleFS image is left alone (-EEXIST) unless
 * SFS_FORMAT_FORCE; an image is reformatted. -EINVAL: unknown flags, mode
 * above 07777, or not a regular file or block device. */
int sfs_format_ex(const char *path, uint64_t size, uint32_t max_files, unsigned flags, unsigned mode);
#define SFS_FORMAT_FORCE  0x1u   /* overwrite a file that is not an image */
#define SFS_DEFAULT_MODE  0600u  /* images hold every file's data: owner only */
int sfs_format_dev(struct sfs_dev *dev, uint32_t max_files);

/* Mount the image at path: a file, or a block device holding one (sized by
 * BLKGETSIZE64; tests/test_sfs_blockdev.c). On failure returns -errno and, if err is not NULL, writes a one-line
 * reason into err ("not a SimpleFS image", "bad checksum in FAT block 7",
 * "in use by pid 1234", ...). Distinct errors:
 *   -EBUSY        the image is mounted by another process or handle
 *   -EMEDIUMTYPE  not a SimpleFS image (bad magic)
 *   -EPROTONOSUPPORT  a SimpleFS version this library cannot read
 *   -EUCLEAN      corrupt metadata (bad checksum, impossible geometry, ...)
 *   -EIO          the device failed
 *   -ENOMEM       out of memory (as any call may answer; the image stays consistent,
 *                 and memory that comes back is used again: tests/test_sfs_nomem.c)
 * Recovery (journal replay, freeing unlinked-while-open files) runs here. */
int sfs_mount(const char *path, unsigned flags, struct sfs **out, char *err, size_t errlen);
/* Mount a device; with own != 0 the fs closes it at unmount. If the mount
 * fails the device is never closed: the caller still owns it. */
int sfs_mount_dev(struct sfs_dev *dev, unsigned flags, int own, struct sfs **out,
		  char *err, size_t errlen);
/* Commit everything, make it durable, close all files, release the lock.
 * Returns the error of a device sync that failed while mounted (docs/FORMAT.md,
 * "A failed fsync stays failed"), even if everything else went well. */
int sfs_unmount(struct sfs *fs);

/* What a successful mount had to work around, for the caller to print (the
 * library never prints). Returns a mask of SFS_WARN_*, 0 if none; msg (may be
 * NULL) gets a one-line explanation.
 *   SFS_WARN_BACKUP_SUPER  the primary superblock is damaged: mounted with the
 *                          backup copy at the end of the image; sfs fsck -y
 *                          restores the primary. */
#define SFS_WARN_BACKUP_SUPER 0x1u
unsigned sfs_mount_warnings(struct sfs *fs, char *msg, size_t len);

/* pid of the process holding the image's lock, 0 if none, or -errno.
 * Reads /proc/locks only; a read-only mount's shared lock counts too. */
int sfs_lock_holder(const char *path);

/* The image path sfs_mount() uses by default: $SFS_IMAGE or "disk.sfs". */
const char *sfs_default_image(void);

/* Commit the running transaction and make everything durable. */
int sfs_sync(struct sfs *fs);

/* Files. A file handle is a small integer >= 0, private to the mount. */
int     sfs_file_open(struct sfs *fs, const char *name, unsigned flags);
int     sfs_file_close(struct sfs *fs, int fd);
ssize_t sfs_file_pread(struct sfs *fs, int fd, void *buf, size_t len, uint64_t off);
ssize_t sfs_file_pwrite(struct sfs *fs, int fd, const void *buf, size_t len, uint64_t off);
ssize_t sfs_file_read(struct sfs *fs, int fd, void *buf, size_t len);        /* at position */
ssize_t sfs_file_write(struct sfs *fs, int fd, const void *buf, size_t len); /* at position */
int64_t sfs_file_seek(struct sfs *fs, int fd, int64_t off, int whence);      /* SEEK_SET/CUR/END */
int     sfs_file_fsync(struct sfs *fs, int fd);   /* commits the whole fs */
int     sfs_file_truncate(struct sfs *fs, int fd, uint64_t size);
int     sfs_unlink(struct sfs *fs, const char *name);

struct sfs_stat {
	char     name[SFS_NAME_MAX + 1];
	uint64_t size;       /* bytes */
	uint64_t blocks;     /* 4 KiB blocks allocated */
	uint64_t mtime_ns;   /* last data change, CLOCK_REALTIME */
	uint32_t ino;        /* directory slot, stable while the file exists */
};
struct sfs_statfs {
	uint64_t block_size;
	uint64_t total_blocks;   /* whole image */
	uint64_t data_blocks;    /* blocks usable for file data */
	uint64_t free_blocks;    /* includes blocks freed but not yet committed */
	uint32_t max_files;
	uint32_t files;
	uint32_t name_max;
};
int sfs_file_stat(struct sfs *fs, int fd, struct sfs_stat *st);
int sfs_stat(struct sfs *fs, const char *name, struct sfs_stat *st);
int sfs_statfs(struct sfs *fs, struct sfs_statfs *st);
/* Iterate the directory: *cookie starts at 0; returns 1 with st filled, 0 at
 * the end, or -errno. */
int sfs_readdir(struct sfs *fs, uint32_t *cookie, struct sfs_stat *st);

/* Map a file range onto the image for a server that does its own image I/O
 * (O_DIRECT with many I/Os in flight). Fills up to max extents covering
 * [off, off+len) clipped to the file size; holes have img_off == 0. Returns
 * the number of extents, or -errno. Valid until the file is truncated. */
struct sfs_extent {
	uint64_t file_off;
	uint64_t img_off;    /* 0: a hole, reads as zeros */
	uint64_t len;
};
int sfs_file_map(struct sfs *fs, int fd, uint64_t off, uint64_t len,
		 struct sfs_extent *ext, int max);
/* The same for an in-place overwrite of [off, off+len) that the caller then
 * writes to the image itself: if the whole range lies inside the file's size
 * and allocated blocks (and the handle is not O_APPEND), fills the extents
 * (all allocated, exactly covering the range), records the file's mtime as
 * sfs_file_pwrite would, and returns their count. Returns 0 when the range
 * does not qualify or needs more than max extents (use sfs_file_pwrite), or
 * -EBADF (not open for writing), -EROFS, -EIO (device failed), -EINVAL. */
int sfs_file_map_write(struct sfs *fs, int fd, uint64_t off, uint64_t len,
		       struct sfs_extent *ext, int max);
/* The image's host file descriptor (-1 for non-file devices) and whether it
 * is open O_DIRECT. */
int sfs_image_fd(struct sfs *fs, int *direct);

/* ---------------------------------------------------------------------------
 * fsck
 * ------------------------------------------------------------------------- */
struct sfs_fsck_result {
	unsigned errors_found;
	unsigned errors_fixed;
};
/* Check an image (repair != 0: fix what can be fixed). Each problem is
 * reported through msg (may be NULL). Returns 0 when the check ran, whatever
 * it found, or -errno when it could not run (cannot open, in use, not an
 * image: err says why). */
int sfs_fsck(const char *path, int repair, struct sfs_fsck_result *res,
	     void (*msg)(void *arg, const char *text), void *arg,
	     char *err, size_t errlen);
int sfs_fsck_dev(struct sfs_dev *dev, int repair, struct sfs_fsck_result *res,
		 void (*msg)(void *arg, const char *text), void *arg,
		 char *err, size_t errlen);

/* ---------------------------------------------------------------------------
 * Classic API on a default instance (the image sfs_default_image() names).
 * Not thread-safe with respect to mksfs(); otherwise as the handle API.
 * ------------------------------------------------------------------------- */
int     mksfs(int fresh);     /* 0: mount, creating if absent; 1: format anew */
int     sfs_unmountdefault(void);
int     sfs_open(const char *name);   /* creates a missing file */
int     sfs_close(int fd);
ssize_t sfs_read(int fd, void *buf, size_t len);
ssize_t sfs_write(int fd, const void *buf, size_t len);
int64_t sfs_seek(int fd, int64_t off, int whence);
ssize_t sfs_pread(int fd, void *buf, size_t len, uint64_t off);
ssize_t sfs_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int     sfs_fsync(int fd);
int     sfs_truncate(int fd, uint64_t size);
int     sfs_remove(const char *name);
int64_t sfs_getfilesize(const char *name);
/* Copies the next name into name (SFS_NAME_MAX+1 bytes); returns 1, or 0
 * after the last one (and restarts), or -errno. */
int     sfs_getnextfilename(char *name);
int     sfs_fstat(int fd, struct sfs_stat *st);
int     sfs_fstatfs(struct sfs_statfs *st);
struct sfs *sfs_default(void);        /* the default instance, or NULL */

#ifdef __cplusplus
}
#endif
#endif /* SFS_H */
