/* SPDX-License-Identifier: MIT */
/*
 * test_ur_inproc.h - simplefs_server's dispatch loop run in-process, for the
 * tests and the fuzzer that put something under it the real server cannot
 * have (a fault-injecting device, a memory image) or need every SQE served
 * deterministically: the region lives in ordinary memory that ends exactly
 * where it does - allocated to its exact size under ASan (which then sees
 * any access past it), else placed right before an inaccessible guard page
 * (so an overrun faults in a plain build too) - is attached with
 * ur_server_attach like the real one, and each ur_server_poll() serves what
 * is pending. The backend is SimpleFS on a struct sfs the caller mounted.
 * No doorbells, no liveness socket. Header only; every helper fails the test
 * (exit 1) instead of hiding an error.
 */
#ifndef TEST_UR_INPROC_H
#define TEST_UR_INPROC_H

#include <stdlib.h>
#include "test_ur_raw.h"
#include "../src/server/server.h"

extern const struct ur_backend_ops ur_backend_sfs;

#if defined(__SANITIZE_ADDRESS__)
#define INPROC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INPROC_ASAN 1
#endif
#endif

struct inproc {
	struct ur_server s;
	uint8_t *base;
	uint64_t size;
	uint8_t *map;                    /* without ASan: the mapping, guard page last */
	size_t maplen;
	uint32_t sq_tail, cq_head;       /* the client's private counters */
	uint64_t data_next;              /* bump allocator in the data area */
};

/* A region of exactly g->size bytes holding g, attached to a server whose
 * backend is fs. Returns the attach error (0 = served) so a fuzzer can hand
 * it any header; the region is allocated either way (free with inproc_fini). */
static inline int inproc_attach(struct inproc *ip, const struct ur_region_hdr *g, uint64_t size,
				struct sfs *fs)
{
	char err[128];
	memset(ip, 0, sizeof(*ip));
	ip->size = size;
#ifdef INPROC_ASAN
	if (posix_memalign((void **)&ip->base, 4096, size ? size : 1))
		FAIL("out of memory");
#else
	/* The region's end on the guard page's start; its start 64-byte aligned
	 * (so a size that is not a multiple of 64 leaves a little slack). */
	uint64_t span = (size + 63) & ~63ull;
	ip->maplen = (size_t)((span + 4095) & ~4095ull) + 4096;
	ip->map = mmap(NULL, ip->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ip->map == MAP_FAILED || mprotect(ip->map + ip->maplen - 4096, 4096, PROT_NONE))
		FAIL("mmap: %s", strerror(errno));
	ip->base = ip->map + ip->maplen - 4096 - span;
#endif
	memset(ip->base, 0, size);
	memcpy(ip->base, g, size < sizeof(*g) ? size : sizeof(*g));
	int r = ur_server_attach(&ip->s, ip->base, size, err, sizeof(err));
	ip->s.efd_sq = ip->s.efd_cq = ip->s.live = -1;
	ip->s.img_fd = -1;
	ip->s.be = &ur_backend_sfs;
	ip->s.bst = fs;
	ip->data_next = g->data_off;
	return r;
}

/* The library's layout with sqn/cqn entries and data bytes of data area. */
static inline void inproc_start(struct inproc *ip, struct sfs *fs, uint32_t sqn, uint32_t cqn,
				uint64_t data)
{
	struct ur_region_hdr g;
	raw_layout(&g, sqn, cqn, data, 0);
	if (inproc_attach(ip, &g, g.size, fs))
		FAIL("attach of a sound region failed");
}

static inline void inproc_fini(struct inproc *ip)
{
	ur_server_close_files(&ip->s);
#ifdef INPROC_ASAN
	free(ip->base);
#else
	munmap(ip->map, ip->maplen);
#endif
	ip->base = NULL;
}

/* Copy len bytes (or zeros if src is NULL) into the data area; its offset. */
static inline uint64_t inproc_put(struct inproc *ip, const void *src, uint64_t len)
{
	const struct ur_region_hdr *g = &ip->s.geo;
	uint64_t off = (ip->data_next + 63) & ~63ull;
	if (off + len > g->data_off + g->data_size)
		off = g->data_off;       /* wrap: callers keep batches small */
	if (off + len > g->data_off + g->data_size)
		FAIL("inproc_put: %llu bytes do not fit", (unsigned long long)len);
	if (src)
		memcpy(ip->base + off, src, len);
	else
		memset(ip->base + off, 0, len);
	ip->data_next = off + len;
	return off;
}

/* The next SQE, zeroed; NULL if the SQ is full. */
static inline struct ur_sqe *inproc_sqe(struct inproc *ip)
{
	uint32_t head = ur_load_acquire(&ip->s.sq->head);
	if (ip->sq_tail - head >= ip->s.geo.sq_entries)
		return NULL;
	struct ur_sqe *q = &ip->s.sqes[ip->sq_tail++ & ip->s.sq_mask];
	memset(q, 0, sizeof(*q));
	return q;
}

/* Publish the SQEs, serve them, and take one CQE (1) or none (0). */
static inline void inproc_submit(struct inproc *ip)
{
	ur_store_release(&ip->s.sq->tail, ip->sq_tail);
	while (ur_server_poll(&ip->s))
		;
}

static inline int inproc_cqe(struct inproc *ip, struct ur_cqe *out)
{
	if (ur_load_acquire(&ip->s.cq->tail) == ip->cq_head)
		return 0;
	*out = ip->s.cqes[ip->cq_head++ & ip->s.cq_mask];
	ur_store_release(&ip->s.cq->head, ip->cq_head);
	return 1;
}

/* One SQE in, its CQE's res out. */
static inline int32_t inproc_run1(struct inproc *ip, const struct ur_sqe *q)
{
	struct ur_sqe *e = inproc_sqe(ip);
	struct ur_cqe c;
	if (!e)
		FAIL("SQ full");
	*e = *q;
	inproc_submit(ip);
	if (!inproc_cqe(ip, &c))
		FAIL("no CQE for opcode %u", q->opcode);
	if (c.user_data != q->user_data)
		FAIL("CQE user_data %llu, expected %llu", (unsigned long long)c.user_data,
		     (unsigned long long)q->user_data);
	return c.res;
}

#endif
