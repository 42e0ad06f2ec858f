/* SPDX-License-Identifier: MIT */
/* Description: a raw-ABI attacker's region headers.
 * Every offset/size pair of the header must lie within [0, region size),
 * aligned, with no two structures overlapping and the buffer part inside the
 * data area, and cq_entries >= sq_entries. Half a million random and boundary
 * headers (off by one past the end, overlaps, huge values, wraparound, bad
 * counts) go through the server's check in-process and are compared with an
 * independent oracle (128-bit arithmetic); a few hundred of them, with every
 * structure pushed just past the end, are handed to the real simplefs_server
 * (as this test's client, not through libur_fs.so): each must be refused with
 * its error and exit 1, or served (a full ring of NOPs, twice) without a byte
 * written past the region (the page tail after it is a canary) and exit 0 -
 * never a crash, under ASan too. Every other served region's counters start
 * just before they wrap at 2^32 (ABI.md: free-running, any start): the server
 * must begin at the SQ head and CQ tail it finds, and wrap with them. */
#include <inttypes.h>
#include "test_ur_raw.h"
#include "../src/server/server.h"

typedef unsigned __int128 u128;

/* The documented rules, written independently of region.c. */
static int oracle(const struct ur_region_hdr *g, uint64_t size)
{
	if (size < sizeof(*g) || g->magic != UR_ABI_MAGIC || g->version != UR_ABI_VERSION ||
	    g->size != size)
		return 0;
	uint32_t e[2] = { g->sq_entries, g->cq_entries };
	for (int i = 0; i < 2; i++)
		if (e[i] == 0 || e[i] > UR_MAX_ENTRIES || (e[i] & (e[i] - 1)))
			return 0;
	if (g->cq_entries < g->sq_entries)
		return 0;
	u128 lo[6] = { 0, g->sq_ctl_off, g->cq_ctl_off, g->sqes_off, g->cqes_off, g->data_off };
	u128 hi[6] = { sizeof(*g), lo[1] + 192, lo[2] + 192, lo[3] + (u128)g->sq_entries * 64,
		       lo[4] + (u128)g->cq_entries * 16, lo[5] + g->data_size };
	for (int i = 0; i < 6; i++)
		if (hi[i] > size)
			return 0;
	if (g->sq_ctl_off % 64 || g->cq_ctl_off % 64 || g->sqes_off % 64 || g->cqes_off % 64 ||
	    g->data_off % 4096)
		return 0;
	if (g->bufs_off < g->data_off || (u128)g->bufs_off + g->bufs_size > hi[5])
		return 0;
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++)
			if (i != j && hi[i] > lo[i] && hi[j] > lo[j] && lo[i] < hi[j] && lo[j] < hi[i])
				return 0;
	return 1;
}

static uint64_t seed = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { return tu_xorshift64(&seed); }

/* One hostile value for an offset field whose structure is len bytes long. */
static uint64_t hostile_off(uint64_t cur, uint64_t len, uint64_t size, const uint64_t *others)
{
	static const int64_t d[] = { -64, -1, 0, 1, 16, 64, 128, 160, 192 };
	switch (rnd() % 10) {
	case 0: case 1: return size - len + (uint64_t)d[rnd() % 9];    /* at / just past the end */
	case 2: return size + rnd() % 256;
	case 3: return UINT64_MAX - rnd() % 256;
	case 4: return (1ull << 63) + rnd() % 4;
	case 5: return (uint64_t)0 - len + 64 * (rnd() % 4);             /* off + len wraps */
	case 6: return others[rnd() % 6] + 64 * (rnd() % 3);              /* onto another */
	case 7: return cur + (rnd() & 1 ? 64 : (uint64_t)-64);
	case 8: return cur + (uint64_t[]){ 1, 8, 32, 4095 }[rnd() % 4];   /* misaligned */
	default: return rnd() & 1 ? 0 : rnd();
	}
}

static uint32_t hostile_entries(void)
{
	static const uint32_t v[] = { 0, 1, 2, 3, 4, 64, 32768, 65536, 0x80000000u, 0xffffffffu };
	return rnd() % 3 ? v[rnd() % 10] : (uint32_t)rnd();
}

/* A library-shaped header with 0..3 hostile fields; *size: the memfd's size. */
static void gen(struct ur_region_hdr *g, uint64_t *size)
{
	uint32_t sqn = 1u << (rnd() % 7);
	uint32_t cqn = sqn << (rnd() % 3);
	raw_layout(g, sqn, cqn, 4096 * (rnd() % 4), 64 * (rnd() % 8));
	*size = g->size;
	for (int k = (int)(rnd() % 4); k > 0; k--) {
		uint64_t others[6] = { 0, g->sq_ctl_off, g->cq_ctl_off, g->sqes_off, g->cqes_off, g->data_off };
		switch (rnd() % 13) {
		case 0: g->sq_ctl_off = hostile_off(g->sq_ctl_off, 192, *size, others); break;
		case 1: g->cq_ctl_off = hostile_off(g->cq_ctl_off, 192, *size, others); break;
		case 2: g->sqes_off = hostile_off(g->sqes_off, (uint64_t)g->sq_entries * 64, *size, others); break;
		case 3: g->cqes_off = hostile_off(g->cqes_off, (uint64_t)g->cq_entries * 16, *size, others); break;
		case 4: g->data_off = hostile_off(g->data_off, g->data_size, *size, others); break;
		case 5: g->data_size = hostile_off(g->data_size, g->data_off, *size, others); break;
		case 6: g->bufs_off = hostile_off(g->bufs_off, g->bufs_size, *size, others); break;
		case 7: g->bufs_size = hostile_off(g->bufs_size, g->bufs_off, *size, others); break;
		case 8: g->sq_entries = hostile_entries(); break;
		case 9: g->cq_entries = hostile_entries(); break;
		case 10: g->size = *size = hostile_off(*size, 0, *size, others) % (1u << 20); break;
		case 11: *size += (uint64_t)(rnd() % 3) - 1; break;    /* header and memfd disagree */
		default: if (rnd() & 1) g->magic ^= 1; else g->version++; break;
		}
	}
}

/* Hand (g, size) to the real server; check it refuses or serves safely. */
static void against_server(const struct ur_region_hdr *g0, uint64_t size, int *served)
{
	struct ur_region_hdr g = *g0;
	g.idle_us = 0;                  /* sleep at once: the doorbell path too */
	int want = oracle(&g, size);
	struct raw r;
	RAW_REGION(&r, &g, size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	/* Every other start: counters 3 entries before the wrap (ring control
	 * blocks inside the region only: a refused header may place them out). */
	static unsigned nstart;
	uint32_t base = want && (nstart++ & 1) ? 0u - 3u : 0u;
	if (base) {
		struct ur_ring_ctl *sq = (void *)(r.base + g.sq_ctl_off), *cq = (void *)(r.base + g.cq_ctl_off);
		sq->head = sq->tail = cq->head = cq->tail = base;
	}
	RAW_START(&r, NULL, -1, -1);
	char msg[256] = "";
	int h = raw_hello(&r, 20000, msg, sizeof(msg));
	if (!want) {
		if (h >= 0)
			FAIL("server took a bad header (hello %d) size %" PRIu64 " sq %" PRIu64 " cq %" PRIu64
			     " sqes %" PRIu64 " cqes %" PRIu64 " data %" PRIu64 "+%" PRIu64, h, size,
			     g.sq_ctl_off, g.cq_ctl_off, g.sqes_off, g.cqes_off, g.data_off, g.data_size);
		CHECK_EQ(h, -EINVAL);
	} else {
		if (h != 0)
			FAIL("server refused a sound header: %d %s", h, msg);
		/* A full ring of NOPs: the server reads every SQE slot and writes
		 * every CQE slot it will ever use (cq_entries >= sq_entries). */
		struct ur_ring_ctl *sq = (void *)(r.base + g.sq_ctl_off), *cq = (void *)(r.base + g.cq_ctl_off);
		struct ur_sqe *sqes = (void *)(r.base + g.sqes_off);
		struct ur_cqe *cqes = (void *)(r.base + g.cqes_off);
		for (uint32_t round = 0; round < 2; round++) {
			uint32_t t = base + round * g.sq_entries;
			for (uint32_t i = 0; i < g.sq_entries; i++) {
				memset(&sqes[(t + i) & (g.sq_entries - 1)], 0, sizeof(struct ur_sqe));
				sqes[(t + i) & (g.sq_entries - 1)].user_data = 7000 + (uint64_t)(t + i);
			}
			ur_store_release(&sq->tail, t + g.sq_entries);
			uint64_t one = 1;
			CHECK(write(r.sq, &one, sizeof(one)) == 8);
			uint64_t end = raw_now_ms() + 20000;
			while (ur_load_acquire(&cq->tail) != t + g.sq_entries) {
				if (raw_now_ms() > end)
					FAIL("no CQEs (tail %u, want %u)", ur_load_acquire(&cq->tail), t + g.sq_entries);
				usleep(100);
			}
			for (uint32_t i = 0; i < g.sq_entries; i++) {
				struct ur_cqe *c = &cqes[(t + i) & (g.cq_entries - 1)];
				CHECK_EQ(c->user_data, 7000 + (uint64_t)(t + i));
				CHECK_EQ(c->res, 0);
			}
			ur_store_release(&cq->head, t + g.sq_entries);
		}
		(*served)++;
	}
	if (!raw_canary_ok(&r))
		FAIL("the server wrote past the end of its region (size %" PRIu64 ")", size);
	pid_t pid = r.pid;
	raw_close(&r);
	int st = raw_wait(pid, 20000);
	if (st != (want ? 0 : 1))
		FAIL("server ended with %d (want %d; 128+n: signal n, -1: hung)", st, want ? 0 : 1);
}

int main(void)
{
	/* 1. In-process: the check against the oracle, both ways. */
	long ok = 0, n = 500000;
	for (long i = 0; i < n; i++) {
		struct ur_region_hdr g;
		uint64_t size;
		gen(&g, &size);
		const char *why = ur_region_check(&g, size);
		int want = oracle(&g, size);
		if ((why == NULL) != want)
			FAIL("case %ld: check says %s, oracle says %s (size %" PRIu64 " sqn %u cqn %u sq %" PRIu64
			     " cq %" PRIu64 " sqes %" PRIu64 " cqes %" PRIu64 " data %" PRIu64 "+%" PRIu64
			     " bufs %" PRIu64 "+%" PRIu64 ")", i, why ? why : "ok", want ? "ok" : "bad", size,
			     g.sq_entries, g.cq_entries, g.sq_ctl_off, g.cq_ctl_off, g.sqes_off, g.cqes_off,
			     g.data_off, g.data_size, g.bufs_off, g.bufs_size);
		ok += want;
	}
	printf("in-process: %ld headers, %ld sound, %ld refused\n", n, ok, n - ok);
	CHECK(ok > n / 10 && n - ok > n / 2);     /* the generator reaches both sides */

	/* 2. The real server: each structure pushed to the end and 0..192 bytes
	 * past it (the region's size is not page-aligned: the page tail past it
	 * is a canary), then random headers from the generator. */
	int served = 0, starts = 0;
	for (int s = 0; s < 6; s++) {
		for (int d = 0; d <= 192; d += 64) {
			struct ur_region_hdr g;
			raw_layout(&g, 4, 8, 8192, 1024);
			uint64_t size = g.size;
			switch (s) {
			case 0: g.sq_ctl_off = size - 192 + (uint64_t)d; break;
			case 1: g.cq_ctl_off = size - 192 + (uint64_t)d; break;
			case 2: g.sqes_off = size - 256 + (uint64_t)d; break;
			case 3: g.cqes_off = size - 128 + (uint64_t)d; break;
			case 4: g.data_size += 1024 + (uint64_t)d; g.bufs_size += 1024 + (uint64_t)d; break;
			case 5: g.sq_entries = 16; g.cq_entries = 8; break;     /* cq < sq */
			}
			against_server(&g, size, &served);
			starts++;
		}
	}
	for (int i = 0; i < 300; i++) {
		struct ur_region_hdr g;
		uint64_t size;
		gen(&g, &size);
		if (size > (8u << 20))
			size = g.size = 8u << 20;
		against_server(&g, size, &served);
		starts++;
	}
	printf("server: %d starts, %d served, %d refused\n", starts, served, starts - served);
	CHECK(served > 20 && starts - served > 100);
	return 0;
}
