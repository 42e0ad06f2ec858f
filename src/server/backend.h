/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the server's backend interface: what simplefs_server calls to
 * do file I/O, one table of function pointers per backend (as fio's
 * ioengines). A new backend is a new backend_*.c file and one line in
 * backends.c.
 *
 * Backends never see the shared region's layout and never print; every call
 * returns >= 0 or -errno. Arguments are already validated by the server
 * (names are NUL-terminated, 1..UR_NAME_MAX bytes; buffers are inside the
 * region), except file handles, which the backend checks itself too.
 */
#ifndef UR_BACKEND_H
#define UR_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ur_abi.h"

struct ur_backend_conf {
	const char *image;       /* image path */
	int direct;              /* open the image O_DIRECT */
	int create;              /* format a default image if it is missing */
	int rdonly;              /* mount read-only (shared lock) */
};

/* A piece of a file on the image (for backends that can map files). */
struct ur_extent {
	uint64_t file_off;
	uint64_t img_off;        /* 0: a hole (reads as zeros) */
	uint64_t len;
};

struct ur_backend_ops {
	const char *name;
	/* Mount. On failure returns -errno and writes a one-line reason to err;
	 * on success err is empty or holds a warning for the server to print
	 * (e.g. mounted with the backup superblock). */
	int     (*init)(const struct ur_backend_conf *conf, void **state, char *err, size_t errlen);
	/* Close every file, make everything durable, release the image. */
	int     (*fini)(void *st);
	int     (*open)(void *st, const char *name, unsigned ur_o_flags);   /* -> handle >= 0 */
	int     (*close)(void *st, int fd);
	/* off == UR_OFF_POS: at (and advancing) the file position. */
	ssize_t (*read)(void *st, int fd, void *buf, size_t len, uint64_t off);
	ssize_t (*write)(void *st, int fd, const void *buf, size_t len, uint64_t off);
	int     (*fsync)(void *st, int fd);
	int     (*ftruncate)(void *st, int fd, uint64_t size);
	int     (*unlink)(void *st, const char *name);
	int     (*fstat)(void *st, int fd, struct ur_statx *out);
	int     (*stat)(void *st, const char *name, struct ur_statx *out);
	/* Optional (NULL if the backend cannot): where [off, off+len) of a file
	 * lies on the image, clipped to the file size (count, or -errno), and the
	 * image's host fd (and whether it is O_DIRECT). The server uses them to
	 * issue O_DIRECT reads itself, many at once. */
	int     (*map)(void *st, int fd, uint64_t off, uint64_t len, struct ur_extent *ext, int max);
	int     (*image_fd)(void *st, int *direct);
	/* Optional: map [off, off+len) for an in-place overwrite the server
	 * writes to the image itself (no metadata change; the backend records
	 * the mtime). Count of extents exactly covering the range, 0 if it does
	 * not qualify (beyond the size, a hole, append, too fragmented: use
	 * write), or -errno for a write that must fail (-EBADF, -EROFS, -EIO). */
	int     (*map_write)(void *st, int fd, uint64_t off, uint64_t len, struct ur_extent *ext, int max);
};

/* The backend called name, or NULL. */
const struct ur_backend_ops *ur_backend_find(const char *name);
/* Space-separated names of the backends built in (for --help). */
const char *ur_backend_names(void);

#endif /* UR_BACKEND_H */
