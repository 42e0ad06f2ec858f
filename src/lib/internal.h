/* SPDX-License-Identifier: MIT */
/*
 * internal.h - libur_fs's private state behind struct urfs_ring: the table of
 * in-flight requests (tags), the staging allocator for ordinary buffers, and
 * the registered-buffer bookkeeping; and the small helpers that ring_setup.c
 * (setup, teardown) and ring.c (submission, completion) share.
 *
 * Must never be installed or included by applications.
 */
#ifndef UR_LIB_INTERNAL_H
#define UR_LIB_INTERNAL_H

#include <stdint.h>
#include <time.h>
#include "ur_fs.h"

#define UR_EXPORT __attribute__((visibility("default")))

/* Tags: what the library puts in an SQE's user_data in place of the caller's. */
#define URFS_TAG_HI 0x75726673u          /* "urfs" in the high half */

struct urfs_pend {
	uint64_t user_data;      /* the caller's */
	void    *dst;            /* READ: copy back here; READV: the caller's iovecs; STATX: out */
	uint64_t stage;          /* region offset of the staged data */
	uint32_t rec;            /* staging record, or UINT32_MAX */
	uint32_t len;            /* READ: bytes; READV: iovec count */
	uint32_t next;           /* free list */
	uint8_t  op;
	uint8_t  busy;
};

struct urfs_srec {
	uint64_t end;
	uint8_t  freed;
};

struct urfs__priv {
	struct urfs_pend *pend;
	uint32_t npend, free_head, inflight;
	int held;               /* submit left SQEs behind (no staging room) */
	/* staging: a circular arena with out-of-order frees */
	uint64_t st_base, st_size, st_head, st_tail;
	struct urfs_srec *recs;
	uint32_t rhead, rtail, rmask;
	/* registered buffers */
	uint64_t bufs_off, bufs_size;
	unsigned nbufs;
	uint64_t data_off, data_size;
	uint64_t wait_spin_ns, spin_cur;
	int rang;               /* the SQ doorbell was rung since the last wait: the server slept */
	int memfd;
	int spawned;            /* we started the server: it is our child */
};

int __urfs_queue_exit_status(struct urfs_ring *ring);

/* No pend slot, no staging record, end of the free list. */
#define NONE UINT32_MAX

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

#endif /* UR_LIB_INTERNAL_H */
