/* SPDX-License-Identifier: MIT */
/*
 * fs.c - RENAMEAT, UNLINKAT, MKDIRAT, SYMLINKAT, LINKAT on the emulated ring, as
 * the kernel's io_uring/fs.c, and the copies of user strings (paths, xattr
 * names) that these and OPENAT, STATX and the xattr ops take at submission.
 *
 * Must never: read a path from the application's memory after submission
 * (it is copied, with a bound: -ENAMETOOLONG), or dereference it without
 * ucopy (-EFAULT).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "opdef.h"

int exec_ustrdup(const void *src, char **out)
{
	if (!src)
		return -EFAULT;
	char *buf = malloc(PATH_MAX);
	if (!buf)
		return -ENOMEM;
	size_t n = 0;
	const char *s = src;
	while (n < PATH_MAX) {
		size_t chunk = 4096 - ((uintptr_t)(s + n) & 4095);
		if (chunk > PATH_MAX - n)
			chunk = PATH_MAX - n;
		if (ucopy(buf + n, s + n, chunk) < 0) {
			free(buf);
			return -EFAULT;
		}
		char *z = memchr(buf + n, 0, chunk);
		if (z) {
			*out = buf;
			return 0;
		}
		n += chunk;
	}
	free(buf);
	return -ENAMETOOLONG;
}

/* A path argument, copied as the kernel's ring does at prep (getname): an empty
 * one is -ENOENT there, before its directory fd is looked at, unless the op's
 * AT_EMPTY_PATH allows it. */
int exec_upath(const void *src, char **out, int empty_ok)
{
	int e = exec_ustrdup(src, out);
	if (!e && !empty_ok && !**out) {
		free(*out);
		*out = NULL;
		return -ENOENT;
	}
	return e;
}

int unlink_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	if (s->unlink_flags & ~AT_REMOVEDIR)
		return -EINVAL;         /* before the path is taken, as the kernel's prep */
	return exec_upath((void *)(uintptr_t)s->addr, &q->p1, 0);
}

int mkdir_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	if (q->sqe.flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return exec_upath((void *)(uintptr_t)q->sqe.addr, &q->p1, 0);
}

/* RENAMEAT, LINKAT, SYMLINKAT: two paths */
int link_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	int e = exec_upath((void *)(uintptr_t)s->addr, &q->p1,
		      s->opcode == IORING_OP_LINKAT && (s->hardlink_flags & AT_EMPTY_PATH));
	return e ? e : exec_upath((void *)(uintptr_t)s->addr2, &q->p2, 0);
}

int32_t op_renameat(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(renameat2(s->fd, q->p1, (int)s->len, q->p2, s->rename_flags));
}

int32_t op_unlinkat(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	return ret_errno(unlinkat(q->sqe.fd, q->p1, (int)q->sqe.unlink_flags));
}

int32_t op_mkdirat(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	return ret_errno(mkdirat(q->sqe.fd, q->p1, (mode_t)q->sqe.len));
}

int32_t op_symlinkat(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	return ret_errno(symlinkat(q->p1, q->sqe.fd, q->p2));
}

int32_t op_linkat(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	return ret_errno(linkat(s->fd, q->p1, (int)s->len, q->p2, (int)s->hardlink_flags));
}
