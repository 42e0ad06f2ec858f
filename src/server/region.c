/* SPDX-License-Identifier: MIT */
/*
 * region.c - the check of a client's region header, done once at start-up
 * before the server touches anything but the header: the geometry every later
 * access relies on (serve.c, aio.c index the region only through it).
 *
 * Must never: accept a structure that reaches outside [0, size), a misaligned
 * ring, or two structures that overlap (overflow-safe arithmetic throughout);
 * read anything but the header; or depend on anything but ur_abi.h and libc,
 * so the tests can call it in-process on millions of headers.
 */
#include <string.h>
#include "server.h"

static int is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

int ur_inside(uint64_t off, uint64_t len, uint64_t lo, uint64_t span)
{
	return off >= lo && len <= span && off - lo <= span - len;
}

const char *ur_region_check(const struct ur_region_hdr *g, uint64_t size)
{
	if (size < sizeof(*g))
		return "region too small";
	if (g->magic != UR_ABI_MAGIC)
		return "bad region magic";
	if (g->version != UR_ABI_VERSION)
		return "unsupported ABI version";
	if (g->size != size)
		return "region size mismatch";
	if (!is_pow2(g->sq_entries) || g->sq_entries > UR_MAX_ENTRIES ||
	    !is_pow2(g->cq_entries) || g->cq_entries > UR_MAX_ENTRIES)
		return "bad ring sizes";
	if (g->cq_entries < g->sq_entries)
		return "fewer CQ entries than SQ entries";
	/* Every structure within [0, size); the header is one of them. */
	const struct { uint64_t o, l; } r[6] = {
		{ 0, sizeof(*g) },
		{ g->sq_ctl_off, sizeof(struct ur_ring_ctl) },
		{ g->cq_ctl_off, sizeof(struct ur_ring_ctl) },
		{ g->sqes_off, (uint64_t)g->sq_entries * sizeof(struct ur_sqe) },
		{ g->cqes_off, (uint64_t)g->cq_entries * sizeof(struct ur_cqe) },
		{ g->data_off, g->data_size },
	};
	if (!ur_inside(r[1].o, r[1].l, 0, size) || !ur_inside(r[2].o, r[2].l, 0, size) ||
	    (g->sq_ctl_off | g->cq_ctl_off) % 64)
		return "bad ring offsets";
	if (!ur_inside(r[3].o, r[3].l, 0, size) || !ur_inside(r[4].o, r[4].l, 0, size) ||
	    (g->sqes_off | g->cqes_off) % 64)
		return "bad entry array offsets";
	if (!ur_inside(g->data_off, g->data_size, 0, size) || g->data_off % 4096 ||
	    !ur_inside(g->bufs_off, g->bufs_size, g->data_off, g->data_size))
		return "bad data area";
	/* All inside, so o + l cannot overflow. An empty data area overlaps nothing. */
	for (int i = 0; i < 6; i++)
		for (int j = i + 1; j < 6; j++)
			if (r[i].l && r[j].l && r[i].o < r[j].o + r[j].l && r[j].o < r[i].o + r[i].l)
				return j == 5 ? "data area overlaps the rings" : "ring structures overlap";
	return NULL;
}
