/* SPDX-License-Identifier: MIT */
/* Description: the O_DIRECT image path. With the image opened O_DIRECT the
 * server sends aligned reads to the image through kernel AIO, many in flight
 * (checked: the server's AIO counter moves); reads of a fragmented file
 * (extents interleaved with another file), of holes, of an unaligned file
 * tail, unaligned reads, reads through ordinary buffers, and writes mixed in
 * (which must wait for reads in flight) are all verified byte for byte against
 * a model, at queue depth 64. Skips only where a
 * scratch file here cannot be opened O_DIRECT (probed apart from the code under
 * test); where it can, the server failing to is a failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sfs.h"
#include "ur_fs.h"

#include "testutil.h"

#define QD 64
#define BUF (64u << 10)
#define NF 4
#define FSZ (1u << 20)

static struct urfs_ring ring;
static struct iovec fixed[QD];
static unsigned char *model[NF];
static uint64_t msize[NF];
static int fds[NF];
static const char *names[NF] = { "frag", "other", "holey", "tail" };
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return tu_xorshift64(&rng);
}

static int32_t sync1(struct urfs_sqe *s)
{
	struct urfs_cqe *c;
	urfs_sqe_set_data64(s, 999999);
	if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0)
		FAIL("sync op");
	int32_t r = c->res;
	urfs_cqe_seen(&ring, c);
	return r;
}

static void mwrite(int f, uint64_t off, uint32_t len)
{
	unsigned char *b = fixed[0].iov_base;
	for (uint32_t i = 0; i < len; i++)
		b[i] = (unsigned char)rnd();
	struct urfs_sqe *s = urfs_get_sqe(&ring);
	urfs_prep_write_fixed(s, fds[f], b, len, off, 0);
	int32_t r = sync1(s);
	if (r != (int32_t)len)
		FAIL("write %s: %d", names[f], r);
	memcpy(model[f] + off, b, len);
	if (off + len > msize[f])
		msize[f] = off + len;
}

struct op {
	int f, fixed_buf, write;
	uint64_t off;
	uint32_t len;
	unsigned char *dst;
};

int main(void)
{
	int r;
	if ((r = sfs_format("d.sfs", 64ull << 20, 0)) < 0)
		FAIL("format: %s", strerror(-r));
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = "d.sfs";
	p.flags = URFS_SETUP_DIRECT;
	p.buf_area_size = QD * BUF;
	/* O_DIRECT is probed on the host, apart from the code under test: where a scratch file
	 * here opens O_DIRECT, the server must open its image O_DIRECT too */
	char why[256];
	if (!tu_have_odirect(".", why, sizeof(why))) {
		printf("%s\n", why);
		return 77;
	}
	r = urfs_queue_init_params(QD, &ring, &p);
	if (r < 0)
		FAIL("init: %s (%s)", strerror(-r), p.errmsg);
	for (int i = 0; i < QD; i++)
		fixed[i].iov_len = BUF;
	if ((r = urfs_register_buffers(&ring, fixed, QD)) < 0)
		FAIL("register: %s", strerror(-r));
	for (int f = 0; f < NF; f++) {
		model[f] = calloc(2 * FSZ, 1);
		struct urfs_sqe *s = urfs_get_sqe(&ring);
		urfs_prep_openat(s, names[f], URFS_O_CREAT | URFS_O_TRUNC);
		if ((fds[f] = sync1(s)) < 0)
			FAIL("open %s: %s", names[f], strerror(-fds[f]));
	}
	/* frag and other interleaved block by block; holey with a hole and a
	 * zero-extended unaligned end; tail ends mid-block. */
	for (uint64_t off = 0; off < FSZ; off += 4096) {
		mwrite(0, off, 4096);
		mwrite(1, off, 4096);
	}
	mwrite(2, 0, 4096);
	mwrite(2, FSZ - 8192, 8192);
	struct urfs_sqe *s = urfs_get_sqe(&ring);
	urfs_prep_ftruncate(s, fds[2], FSZ + 4096 + 100);
	if (sync1(s) != 0)
		FAIL("truncate up");
	msize[2] = FSZ + 4096 + 100;
	mwrite(3, 0, 10000);

	struct op ops[QD];
	int busy[QD] = { 0 };
	unsigned char *plain[QD];
	for (int i = 0; i < QD; i++)
		plain[i] = malloc(BUF);
	int total = 4000, issued = 0, done = 0, inflight = 0;
	while (done < total) {
		while (issued < total && inflight < QD) {
			int slot = 0;
			while (busy[slot])
				slot++;
			struct op *o = &ops[slot];
			o->f = (int)(rnd() % NF);
			o->fixed_buf = rnd() % 4 != 0;
			o->write = rnd() % 50 == 0;
			if (rnd() % 5) {
				o->off = (rnd() % (FSZ / 4096 + 2)) * 4096;
				o->len = (uint32_t)(1 + rnd() % (BUF / 4096)) * 4096;
			} else {
				o->off = rnd() % (FSZ + 8192);
				o->len = (uint32_t)(1 + rnd() % BUF);
			}
			if (o->write) {
				o->f = 1;              /* rewrite blocks of "other" */
				o->off &= ~4095ull;
				if (o->off >= FSZ)
					o->off = 0;
				if (o->off + o->len > FSZ)
					o->len = (uint32_t)(FSZ - o->off);
				if (!o->len)
					o->len = 4096, o->off = 0;
				/* no read of "other" may be in flight */
				int clash = 0;
				for (int i = 0; i < QD; i++)
					if (busy[i] && ops[i].f == 1)
						clash = 1;
				if (clash)
					o->write = 0;
			} else if (o->f == 1) {
				int clash = 0;
				for (int i = 0; i < QD; i++)
					if (busy[i] && ops[i].write)
						clash = 1;
				if (clash)
					break;
			}
			o->dst = o->fixed_buf ? fixed[slot].iov_base : plain[slot];
			s = urfs_get_sqe(&ring);
			if (!s)
				break;
			if (o->write) {
				for (uint32_t i = 0; i < o->len; i++)
					o->dst[i] = (unsigned char)rnd();
				memcpy(model[1] + o->off, o->dst, o->len);
				if (o->fixed_buf)
					urfs_prep_write_fixed(s, fds[1], o->dst, o->len, o->off, slot);
				else
					urfs_prep_write(s, fds[1], o->dst, o->len, o->off);
			} else {
				memset(o->dst, 0xcc, o->len);
				if (o->fixed_buf)
					urfs_prep_read_fixed(s, fds[o->f], o->dst, o->len, o->off, slot);
				else
					urfs_prep_read(s, fds[o->f], o->dst, o->len, o->off);
			}
			urfs_sqe_set_data64(s, (uint64_t)slot);
			busy[slot] = 1;
			inflight++;
			issued++;
		}
		if ((r = urfs_submit(&ring)) < 0)
			FAIL("submit: %s", strerror(-r));
		struct urfs_cqe *c;
		if ((r = urfs_wait_cqe(&ring, &c)) < 0)
			FAIL("wait: %s", strerror(-r));
		uint32_t head;
		unsigned n = 0;
		urfs_for_each_cqe(&ring, head, c) {
			uint64_t slot = c->user_data;
			if (slot >= QD || !busy[slot])
				FAIL("bogus completion %llu", (unsigned long long)slot);
			struct op *o = &ops[slot];
			if (o->write) {
				if (c->res != (int32_t)o->len)
					FAIL("write res %d", c->res);
			} else {
				uint64_t avail = msize[o->f] > o->off ? msize[o->f] - o->off : 0;
				uint32_t want = (uint32_t)(avail < o->len ? avail : o->len);
				if (c->res != (int32_t)want)
					FAIL("read %s off %llu len %u fixed %d: res %d want %u", names[o->f],
					     (unsigned long long)o->off, o->len, o->fixed_buf, c->res, want);
				if (memcmp(o->dst, model[o->f] + o->off, want))
					FAIL("read %s off %llu len %u fixed %d: data differs", names[o->f],
					     (unsigned long long)o->off, o->len, o->fixed_buf);
			}
			busy[slot] = 0;
			n++;
		}
		urfs_cq_advance(&ring, n);
		inflight -= (int)n;
		done += (int)n;
	}
	struct ur_region_hdr *h = (struct ur_region_hdr *)ring.region;
	uint64_t aio = h->server_aio_reads;
	urfs_queue_exit(&ring);
	for (int i = 0; i < QD; i++)
		free(plain[i]);
	for (int f = 0; f < NF; f++)
		free(model[f]);
	if (aio < 500)
		FAIL("only %llu reads went through AIO", (unsigned long long)aio);
	printf("ok: %d ops, %llu by AIO\n", total, (unsigned long long)aio);
	return 0;
}
