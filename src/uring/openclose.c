/* SPDX-License-Identifier: MIT */
/*
 * openclose.c - OPENAT, OPENAT2 and CLOSE on the emulated ring, as the
 * kernel's io_uring/openclose.c, into a plain fd or a slot of the registered
 * file table (filetable.c).
 *
 * Must never: close a ring's own fd (io_uring_queue_exit does), or leave the
 * file cache naming an fd number that was closed or reopened.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "opdef.h"

#ifndef OPEN_HOW_SIZE_VER0
#define OPEN_HOW_SIZE_VER0 24
#endif

int open_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	if (q->sqe.flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return exec_upath((void *)(uintptr_t)q->sqe.addr, &q->p1, 0);
}

int close_prep(struct emu_ring *r, struct ureq *q)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)r;
	if (s->off || s->addr || s->len || s->rw_flags || s->buf_index)
		return -EINVAL;
	if (s->file_index && s->fd)
		return -EINVAL;
	if (s->flags & IOSQE_FIXED_FILE)
		return -EBADF;
	return 0;
}

int32_t op_open(struct ureq *q, int ctx, struct ureq **run)
{
	(void)run;
	struct io_uring_sqe *s = &q->sqe;
	struct open_how how;
	memset(&how, 0, sizeof(how));
	if (s->opcode == IORING_OP_OPENAT2) {
		if (s->len < OPEN_HOW_SIZE_VER0 || s->len > 4096)
			return -EINVAL;
		size_t n = s->len < sizeof(how) ? s->len : sizeof(how);
		if (ucopy(&how, (void *)(uintptr_t)s->addr2, n) < 0)
			return -EFAULT;
		for (size_t i = sizeof(how); i < s->len; i++) {
			char c;
			if (ucopy(&c, (void *)(uintptr_t)(s->addr2 + i), 1) < 0)
				return -EFAULT;
			if (c)
				return -E2BIG;
		}
	} else {
		how.flags = s->open_flags;
		/* O_TMPFILE holds O_DIRECTORY's bit: all of it, or O_DIRECTORY alone had
		 * its mode passed, which openat2 refuses (-EINVAL) */
		how.mode = (how.flags & O_CREAT) || (how.flags & O_TMPFILE) == O_TMPFILE ? s->len : 0;
	}
	if (s->file_index && (how.flags & O_CLOEXEC))
		return -EINVAL;                 /* a direct descriptor has no O_CLOEXEC: the kernel's prep */
	how.flags |= O_LARGEFILE;
	if (s->file_index)
		how.flags |= O_CLOEXEC;
	int dfd = s->fd;
	if (ctx != CTX_WORKER) {
		if (how.flags & (O_CREAT | O_TRUNC) || (how.flags & O_TMPFILE) == O_TMPFILE ||
		    (s->flags & IOSQE_ASYNC))
			return exec_punt(q);
		struct open_how c = how;
		/* the inline try, as the kernel's: only if the lookup is cached, and
		 * O_NONBLOCK (a FIFO's or a device's open must not wait here; the
		 * kernel gives its answer, -ENXIO for a FIFO without reader, as is) */
		c.resolve |= RESOLVE_CACHED;
		c.flags |= O_NONBLOCK;
		long fd = syscall(SYS_openat2, dfd, q->p1, &c, sizeof(c));
		if (fd < 0 && (errno == EAGAIN || errno == ENOSYS || errno == EPERM))
			return exec_punt(q);
		if (fd < 0)
			return -errno;
		if (!(how.flags & O_NONBLOCK))
			fcntl((int)fd, F_SETFL, fcntl((int)fd, F_GETFL) & ~O_NONBLOCK);
		exec_fcache_drop(q->r, (int)fd);
		return s->file_index ? exec_install_direct(q, (int)fd) : (int32_t)fd;
	}
	long fd = syscall(SYS_openat2, dfd, q->p1, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS && s->opcode == IORING_OP_OPENAT)
		fd = openat(dfd, q->p1, (int)how.flags, (mode_t)how.mode);
	if (fd < 0)
		return -errno;
	exec_fcache_drop(q->r, (int)fd);
	return s->file_index ? exec_install_direct(q, (int)fd) : (int32_t)fd;
}

int32_t op_close(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	if (s->file_index) {
		unsigned idx = s->file_index - 1;
		int fd = -1, e = 0;
		pthread_mutex_lock(&r->lock);
		if (idx >= r->nfiles)
			e = -EINVAL;
		else if (r->files[idx].fd < 0)
			e = -EBADF;
		else {
			fd = r->files[idx].fd;
			r->files[idx].fd = -1;
			if (r->file_tags[idx])
				emu_post(r, r->file_tags[idx], 0, 0, 1);
			r->file_tags[idx] = 0;
		}
		pthread_mutex_unlock(&r->lock);
		if (fd >= 0)
			close(fd);
		return e;
	}
	if (s->fd < 0)
		return -EBADF;
	if (emu_find_checked(s->fd))
		return -EBADF;          /* a ring's fd is closed by io_uring_queue_exit */
	exec_fcache_drop(r, s->fd);
	return close(s->fd) < 0 ? -errno : 0;
}
