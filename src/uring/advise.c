/* SPDX-License-Identifier: MIT */
/*
 * advise.c - FADVISE and MADVISE on the emulated ring, as the kernel's
 * io_uring/advise.c: the advice that cannot block runs inline, the rest on a
 * worker.
 *
 * Must never: run an advice that may block (WILLNEED reads) inline.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include "opdef.h"

int32_t op_fadvise(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	int e;
	(void)run;
	if ((e = req_file(q)))
		return e;
	int adv = (int)s->fadvise_advice;
	if (ctx == CTX_INLINE && adv != POSIX_FADV_NORMAL && adv != POSIX_FADV_RANDOM &&
	    adv != POSIX_FADV_SEQUENTIAL)
		return exec_punt(q);
	/* the length: addr, else len (64-bit lengths since Linux 6.7) */
	return -posix_fadvise(q->fd, (off_t)s->off, (off_t)(s->addr ? s->addr : s->len), adv);
}

int32_t op_madvise(struct ureq *q, int ctx, struct ureq **run)
{
	struct io_uring_sqe *s = &q->sqe;
	(void)ctx, (void)run;
	/* the length: off, else len (64-bit lengths since Linux 6.7) */
	return ret_errno(madvise((void *)(uintptr_t)s->addr, s->off ? s->off : s->len, (int)s->fadvise_advice));
}
