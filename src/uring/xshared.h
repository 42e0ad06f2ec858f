/* SPDX-License-Identifier: MIT */
/*
 * xshared.h - the page a ring shared across fork() keeps its cross-process
 * state in (xproc.c), from the first fork() on: MAP_SHARED, so every process
 * that forked with the ring can write all of it, whatever its uid since.
 * Here so that xproc.c and its hostile test (tests/test_uring_fork_hostile.c)
 * agree on where each field is.
 *
 * Must never hold anything a process would trust as more than a value it
 * checks before use: no pointer, no list link, no libc lock or state. Lock
 * words are futex words (0 free, else the holder's thread id | XL_WAITERS);
 * pids and counts are plain numbers.
 */
#ifndef URING_XSHARED_H
#define URING_XSHARED_H

#include <stdatomic.h>
#include <stdint.h>

#define XP_SLOTS 64                 /* processes that use one ring at once */
#define XP_BOUND_MS 2000            /* the longest wait for another process (DROPIN.md) */
#define XL_WAITERS 0x80000000u      /* lock word: someone sleeps on it */
#define XP_ADOPT_MAX 4096u          /* a TIMEOUT handed over is adopted by a process
				     * with fewer requests than this in flight */

enum { XM_CANCEL = 1, XM_TIMEOUT, XM_FLUSH };

struct xmsg {
	int type;
	unsigned fl;                /* XM_CANCEL: cancel flags; XM_TIMEOUT: timeout flags */
	int fd;
	uint64_t ud;
	uint64_t deadline, left;    /* XM_TIMEOUT */
	int32_t res;                /* the answer */
};

struct xslot {
	_Atomic int pid;            /* 0 free, -1 being set up, else the process that listens */
	_Atomic uint32_t req, ack;  /* futex words: a message is waiting while req != ack */
	_Atomic uint32_t mbox;      /* lock word: one sender at a time */
	struct xmsg msg;
};

struct xshared {
	_Atomic uint32_t sq, cq;    /* lock words: one submitter at a time, CQ posting */
	int rfd_signalled;          /* the ring's eventfd holds a count */
	_Atomic int novf;           /* CQEs in the processes' overflow lists */
	struct xslot slot[XP_SLOTS];
};

#endif
