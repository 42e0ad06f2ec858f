/* SPDX-License-Identifier: MIT */
/*
 * sync.c - FSYNC, SYNC_FILE_RANGE and FALLOCATE on the emulated ring, as the
 * kernel's io_uring/sync.c: each runs on a worker (opdef.c).
 *
 * Must never: run on the submitting thread or the reactor (they block).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "opdef.h"

int fsync_prep(struct emu_ring *r, struct ureq *q)
{
	(void)r;
	if (q->sqe.fsync_flags & ~IORING_FSYNC_DATASYNC)
		return -EINVAL;
	return 0;
}

int32_t op_fsync(struct ureq *q, int ctx, struct ureq **run)
{
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno((q->sqe.fsync_flags & IORING_FSYNC_DATASYNC) ? fdatasync(q->fd) : fsync(q->fd));
}

int32_t op_sync_file_range(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(sync_file_range(q->fd, (off64_t)s->off, s->len, s->sync_range_flags));
}

int32_t op_fallocate(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)ctx, (void)run;
	if ((e = req_file(q)))
		return e;
	return ret_errno(fallocate(q->fd, (int)s->len, (off_t)s->off, (off_t)s->addr));
}
