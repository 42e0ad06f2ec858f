/* SPDX-License-Identifier: MIT */
/* Description: thousands of random reads and writes of random sizes (1 B to
 * 64 KiB, unaligned, across block boundaries and file ends) on three files,
 * up to 32 in flight, through ordinary buffers, fixed buffers and readv/
 * writev, with a small staging area so submissions must wait for space; every
 * result and every byte read is checked against an in-memory model, and the
 * files are checked byte for byte again after the server unmounted and a new
 * one mounted the image. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sfs.h"
#include "ur_fs.h"

#include "testutil.h"

#define NF 3
#define MAXF (1u << 20)
#define MAXIO (64u << 10)
#define QD 32

static struct urfs_ring ring;
static unsigned char *model[NF];
static uint64_t msize[NF];
static int fds[NF];
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	return tu_xorshift64(&rng);
}

struct op {
	int write, file, kind;          /* kind 0 ordinary, 1 fixed, 2 vector */
	uint64_t off;
	uint32_t len;
	unsigned char *buf;             /* ordinary / vector data */
	struct iovec iov[3];
	int slot;                       /* fixed buffer */
};

static struct op ops[QD];
static struct iovec fixed[QD];

/* Two in-flight ops conflict when their order could change a result: writes
 * that overlap, or a write that reaches past a read's start (it changes the
 * bytes or the file size the read sees). */
static int conflicts(const struct op *a, const struct op *b)
{
	if (a->file != b->file || (!a->write && !b->write))
		return 0;
	if (a->write && b->write)
		return a->off < b->off + b->len && b->off < a->off + a->len;
	const struct op *w = a->write ? a : b, *rd = a->write ? b : a;
	return w->off + w->len > rd->off;
}

static void open_all(const char *img, int create)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = img;
	p.staging_size = 256u << 10;     /* small: forces waiting for staging space */
	p.buf_area_size = QD * MAXIO;
	int r = urfs_queue_init_params(QD, &ring, &p);
	if (r < 0)
		FAIL("init: %s (%s)", strerror(-r), p.errmsg);
	for (int i = 0; i < QD; i++)
		fixed[i].iov_len = MAXIO;
	if ((r = urfs_register_buffers(&ring, fixed, QD)) < 0)
		FAIL("register: %s", strerror(-r));
	for (int f = 0; f < NF; f++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", f);
		struct urfs_sqe *s = urfs_get_sqe(&ring);
		urfs_prep_openat(s, name, create ? URFS_O_CREAT | URFS_O_TRUNC : 0);
		struct urfs_cqe *c;
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0)
			FAIL("open");
		if (c->res < 0)
			FAIL("open %s: %s", name, strerror(-c->res));
		fds[f] = c->res;
		urfs_cqe_seen(&ring, c);
	}
}

static void check_read(const struct op *o, int32_t res)
{
	uint64_t end = o->off + o->len;
	uint64_t avail = msize[o->file] > o->off ? msize[o->file] - o->off : 0;
	uint32_t want = (uint32_t)(avail < o->len ? avail : o->len);
	(void)end;
	if (res != (int32_t)want)
		FAIL("read f%d off %llu len %u kind %d: res %d want %u", o->file,
		     (unsigned long long)o->off, o->len, o->kind, res, want);
	const unsigned char *m = model[o->file] + o->off;
	if (o->kind == 1) {
		if (memcmp(fixed[o->slot].iov_base, m, want))
			FAIL("fixed read data differs");
	} else if (o->kind == 0) {
		if (memcmp(o->buf, m, want))
			FAIL("read data differs (f%d off %llu len %u)", o->file, (unsigned long long)o->off, o->len);
	} else {
		uint32_t done = 0;
		for (int i = 0; i < 3 && done < want; i++) {
			uint32_t take = (uint32_t)o->iov[i].iov_len;
			if (take > want - done)
				take = want - done;
			if (memcmp(o->iov[i].iov_base, m + done, take))
				FAIL("readv data differs");
			done += take;
		}
	}
}

int main(void)
{
	int r;
	alarm(120);
	if ((r = sfs_format("r.sfs", 64ull << 20, 0)) < 0)
		FAIL("format: %s", strerror(-r));
	for (int f = 0; f < NF; f++)
		if (!(model[f] = calloc(MAXF + MAXIO, 1)))
			FAIL("oom");
	for (int i = 0; i < QD; i++)
		if (!(ops[i].buf = malloc(MAXIO)))
			FAIL("oom");
	open_all("r.sfs", 1);

	const int total = 6000;
	int issued = 0, done = 0;
	int busy[QD] = { 0 };
	unsigned inflight = 0;
	while (done < total) {
		/* fill up with non-conflicting ops */
		while (issued < total && inflight < QD) {
			int slot = -1;
			for (int i = 0; i < QD; i++)
				if (!busy[i]) { slot = i; break; }
			struct op *o = &ops[slot];
			o->write = (int)(rnd() % 2);
			o->file = (int)(rnd() % NF);
			o->kind = (int)(rnd() % 3);
			uint32_t len = (uint32_t)(rnd() % 4 == 0 ? 1 + rnd() % MAXIO : 1 + rnd() % 9000);
			o->len = len;
			o->off = rnd() % MAXF;
			o->slot = slot;
			int conflict = 0;
			for (int i = 0; i < QD; i++)
				if (busy[i] && conflicts(&ops[i], o))
					conflict = 1;
			if (conflict)
				break;
			struct urfs_sqe *s = urfs_get_sqe(&ring);
			if (!s)
				break;
			unsigned char *src = o->kind == 1 ? fixed[slot].iov_base : o->buf;
			if (o->write)
				for (uint32_t i = 0; i < len; i++)
					src[i] = (unsigned char)rnd();
			else
				memset(src, 0xee, len);
			if (o->kind == 0) {
				if (o->write) urfs_prep_write(s, fds[o->file], src, len, o->off);
				else urfs_prep_read(s, fds[o->file], src, len, o->off);
			} else if (o->kind == 1) {
				if (o->write) urfs_prep_write_fixed(s, fds[o->file], src, len, o->off, slot);
				else urfs_prep_read_fixed(s, fds[o->file], src, len, o->off, slot);
			} else {
				uint32_t a = len / 3, b = len / 2 - len / 3;
				/* middle piece in the region, outer pieces ordinary */
				o->iov[0] = (struct iovec){ src, a };
				o->iov[1] = (struct iovec){ fixed[slot].iov_base, b };
				o->iov[2] = (struct iovec){ src + a + b, len - a - b };
				if (o->write)
					memcpy(fixed[slot].iov_base, src + a, b);
				if (o->write) urfs_prep_writev(s, fds[o->file], o->iov, 3, o->off);
				else urfs_prep_readv(s, fds[o->file], o->iov, 3, o->off);
			}
			urfs_sqe_set_data64(s, (uint64_t)slot);
			if (o->write) {
				/* the model changes at submission: no in-flight op overlaps */
				memcpy(model[o->file] + o->off, src, len);
				if (o->off + len > msize[o->file])
					msize[o->file] = o->off + len;
			}
			busy[slot] = 1;
			inflight++;
			issued++;
		}
		r = urfs_submit(&ring);
		if (r < 0)
			FAIL("submit: %s", strerror(-r));
		struct urfs_cqe *c;
		if ((r = urfs_wait_cqe(&ring, &c)) < 0)
			FAIL("wait: %s", strerror(-r));
		uint32_t head;
		unsigned n = 0;
		urfs_for_each_cqe(&ring, head, c) {
			int slot = (int)c->user_data;
			if (slot < 0 || slot >= QD || !busy[slot])
				FAIL("bogus completion %llu", (unsigned long long)c->user_data);
			struct op *o = &ops[slot];
			if (o->write) {
				if (c->res != (int32_t)o->len)
					FAIL("write f%d off %llu len %u kind %d: res %d", o->file,
					     (unsigned long long)o->off, o->len, o->kind, c->res);
			} else {
				check_read(o, c->res);
			}
			busy[slot] = 0;
			n++;
		}
		urfs_cq_advance(&ring, n);
		inflight -= n;
		done += (int)n;
	}
	urfs_queue_exit(&ring);

	/* Remount (a new server) and compare everything. */
	open_all("r.sfs", 0);
	for (int f = 0; f < NF; f++) {
		struct urfs_statx st;
		struct urfs_sqe *s = urfs_get_sqe(&ring);
		urfs_prep_statx(s, fds[f], NULL, &st);
		struct urfs_cqe *c;
		urfs_submit_and_wait(&ring, 1);
		if (urfs_wait_cqe(&ring, &c) < 0 || c->res < 0)
			FAIL("statx");
		urfs_cqe_seen(&ring, c);
		if (st.size != msize[f])
			FAIL("f%d size %llu after remount, want %llu", f, (unsigned long long)st.size,
			     (unsigned long long)msize[f]);
		for (uint64_t off = 0; off < msize[f]; off += MAXIO) {
			s = urfs_get_sqe(&ring);
			urfs_prep_read_fixed(s, fds[f], fixed[0].iov_base, MAXIO, off, 0);
			urfs_submit_and_wait(&ring, 1);
			if (urfs_wait_cqe(&ring, &c) < 0)
				FAIL("wait");
			uint64_t want = msize[f] - off < MAXIO ? msize[f] - off : MAXIO;
			if (c->res != (int32_t)want || memcmp(fixed[0].iov_base, model[f] + off, want))
				FAIL("f%d differs after remount at %llu", f, (unsigned long long)off);
			urfs_cqe_seen(&ring, c);
		}
	}
	/* 32 ordinary 64 KiB reads (2 MiB) through a 256 KiB staging area, all
	 * waited for at once: the wait must push out what submit held back. */
	{
		unsigned n = 0;
		for (uint64_t off = 0; off + MAXIO <= msize[0] && n < QD; off += MAXIO, n++) {
			struct urfs_sqe *s = urfs_get_sqe(&ring);
			urfs_prep_read(s, fds[0], ops[n].buf, MAXIO, off);
			urfs_sqe_set_data64(s, n);
		}
		int sub = urfs_submit(&ring);
		if (sub <= 0 || (unsigned)sub >= n)
			FAIL("expected a partial submit (staging full), got %d of %u", sub, n);
		struct urfs_cqe *c;
		if ((r = urfs_wait_cqe_nr(&ring, &c, n)) < 0)
			FAIL("wait for all: %s", strerror(-r));
		uint32_t head;
		unsigned got = 0;
		urfs_for_each_cqe(&ring, head, c) {
			uint64_t k = c->user_data;
			if (k >= n || c->res != (int32_t)MAXIO || memcmp(ops[k].buf, model[0] + k * MAXIO, MAXIO))
				FAIL("held-back read %llu: res %d", (unsigned long long)k, c->res);
			got++;
		}
		urfs_cq_advance(&ring, got);
		if (got != n)
			FAIL("got %u of %u", got, n);
	}
	urfs_queue_exit(&ring);
	printf("ok: %d ops\n", total);
	return 0;
}
