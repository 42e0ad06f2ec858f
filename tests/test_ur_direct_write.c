/* SPDX-License-Identifier: MIT */
/* Description: O_DIRECT overwrites through the server's AIO path, and AIO
 * back-pressure. On an O_DIRECT image: batches of aligned page overwrites
 * (registered and ordinary buffers, pieces spanning several extents of a
 * fragmented file) in one submit; overwrites mixed with reads, an fsync and a
 * shrinking truncate in one submit (the fsync's CQE after every earlier
 * write's, nothing written before the truncate surviving past the new end even
 * where the file is extended again past a hole); 1000 reads and writes in flight on
 * a 1024-entry ring (more than the server's 256 AIO slots: each CQE exactly
 * once, each byte right); IO_DRAIN and IO_LINK ops and an unaligned write
 * ordered after the AIO overwrites before them; reads in flight counting
 * against the CQ's room (an 8-entry CQ never overrun); a write straddling EOF,
 * one on an O_APPEND handle
 * and one on a read-only handle (all synchronous rules kept). Everything is
 * checked byte for byte against a model after remount, through SimpleFS
 * directly and through a second, buffered ring; the mtime moved. Skips only
 * where a scratch file here cannot be opened O_DIRECT (probed apart from the code
 * under test); where it can, the server failing to is a failure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sfs.h"
#include "ur_fs.h"

#include "testutil.h"

#define ENTRIES 1024
#define FSZ (4u << 20)            /* "f" and "g": 4 MiB each, interleaved */
#define CHUNK 8192u               /* the interleave: extents of 8 KiB */
#define MAXOP 1000
#define OPBUF 8192u

static struct urfs_ring ring;
static unsigned char *area;        /* the registered buffer: OPBUF per op */
static unsigned char *model;       /* "f" */
static uint64_t msize;
static int fd_f, fd_g;
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	return tu_xorshift64(&rng);
}

static void fill(unsigned char *b, uint32_t len)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = rnd();
		memcpy(b + i, &v, len - i < 8 ? len - i : 8);
	}
}

struct op {
	int opcode, fd, fixed, flags;     /* flags: URFS_IOSQE_* */
	uint64_t off;
	uint32_t len;
	unsigned char *buf;
	int32_t res;
	int seen, order;
};

static struct op ops[MAXOP];

/* Submit ops[0..n) in one go, collect every CQE (each exactly once). */
static void run(int n)
{
	for (int i = 0; i < n; i++) {
		struct op *o = &ops[i];
		struct urfs_sqe *s = urfs_get_sqe(&ring);
		if (!s)
			FAIL("no SQE for op %d", i);
		switch (o->opcode) {
		case UR_OP_READ:
			if (o->fixed)
				urfs_prep_read_fixed(s, o->fd, o->buf, o->len, o->off, 0);
			else
				urfs_prep_read(s, o->fd, o->buf, o->len, o->off);
			break;
		case UR_OP_WRITE:
			if (o->fixed)
				urfs_prep_write_fixed(s, o->fd, o->buf, o->len, o->off, 0);
			else
				urfs_prep_write(s, o->fd, o->buf, o->len, o->off);
			break;
		case UR_OP_FSYNC:
			urfs_prep_fsync(s, o->fd, 0);
			break;
		case UR_OP_FTRUNCATE:
			urfs_prep_ftruncate(s, o->fd, o->off);
			break;
		default:
			FAIL("op %d", o->opcode);
		}
		urfs_sqe_set_data64(s, (uint64_t)i);
		urfs_sqe_set_flags(s, (unsigned)o->flags);
		o->seen = 0;
	}
	int r, got = 0;
	while (got < n) {
		if ((r = urfs_submit(&ring)) < 0)
			FAIL("submit: %s", strerror(-r));
		struct urfs_cqe *c;
		if ((r = urfs_wait_cqe(&ring, &c)) < 0)
			FAIL("wait: %s", strerror(-r));
		uint32_t head;
		unsigned k = 0;
		urfs_for_each_cqe(&ring, head, c) {
			if (c->user_data >= (uint64_t)n || ops[c->user_data].seen)
				FAIL("bogus or repeated completion %llu", (unsigned long long)c->user_data);
			struct op *o = &ops[c->user_data];
			o->seen = 1;
			o->res = c->res;
			o->order = got++;
			k++;
		}
		urfs_cq_advance(&ring, k);
	}
	struct urfs_cqe *c;
	if (urfs_peek_cqe(&ring, &c) == 0)
		FAIL("a completion too many");
}

static struct op *add(int *n, int opcode, int fd, uint64_t off, uint32_t len, int fixed)
{
	struct op *o = &ops[*n];
	memset(o, 0, sizeof(*o));
	o->opcode = opcode;
	o->fd = fd;
	o->off = off;
	o->len = len;
	o->fixed = fixed;
	o->buf = area + (size_t)*n * OPBUF;
	(*n)++;
	return o;
}

/* A write op: fresh bytes, into the model at once (the caller orders). */
static struct op *addw(int *n, uint64_t off, uint32_t len, int fixed, unsigned char *plain)
{
	struct op *o = add(n, UR_OP_WRITE, fd_f, off, len, fixed);
	if (!fixed)
		o->buf = plain;
	fill(o->buf, len);
	return o;
}

static void check_writes(int n)
{
	for (int i = 0; i < n; i++)
		if (ops[i].opcode == UR_OP_WRITE && ops[i].res != (int32_t)ops[i].len)
			FAIL("write %d at %llu len %u: res %d", i, (unsigned long long)ops[i].off,
			     ops[i].len, ops[i].res);
}

static void apply(struct op *o)
{
	memcpy(model + o->off, o->buf, o->len);
	if (o->off + o->len > msize)
		msize = o->off + o->len;
}

static void check_read(struct op *o)
{
	uint64_t avail = msize > o->off ? msize - o->off : 0;
	uint32_t want = (uint32_t)(avail < o->len ? avail : o->len);
	if (o->res != (int32_t)want)
		FAIL("read at %llu len %u: res %d want %u", (unsigned long long)o->off, o->len, o->res, want);
	if (memcmp(o->buf, model + o->off, want))
		FAIL("read at %llu len %u: data differs", (unsigned long long)o->off, o->len);
}

static int32_t one(int opcode, int fd, uint64_t off, uint32_t len, unsigned char *buf)
{
	int n = 0;
	struct op *o = add(&n, opcode, fd, off, len, 0);
	o->buf = buf;
	run(1);
	return ops[0].res;
}

static int open_ring(unsigned flags, const char *image, int direct, struct urfs_params *p)
{
	memset(p, 0, sizeof(*p));
	p->image = image;
	p->flags = flags | (direct ? URFS_SETUP_DIRECT : 0);
	p->buf_area_size = (size_t)MAXOP * OPBUF + (1u << 20);
	return urfs_queue_init_params(ENTRIES, &ring, p);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	int r;
	if ((r = sfs_format("d.sfs", 64ull << 20, 0)) < 0)
		FAIL("format: %s", strerror(-r));
	struct urfs_params p;
	/* O_DIRECT is probed on the host, apart from the code under test: where a scratch file
	 * here opens O_DIRECT, the server must open its image O_DIRECT too */
	char why[256];
	if (!tu_have_odirect(".", why, sizeof(why))) {
		printf("%s\n", why);
		return 77;
	}
	r = open_ring(0, "d.sfs", 1, &p);
	if (r < 0)
		FAIL("init: %s (%s)", strerror(-r), p.errmsg);
	struct iovec iv = { NULL, (size_t)MAXOP * OPBUF };
	if ((r = urfs_register_buffers(&ring, &iv, 1)) < 0)
		FAIL("register: %s", strerror(-r));
	area = iv.iov_base;
	model = calloc(2 * FSZ, 1);
	unsigned char *plain = NULL, *gbuf = malloc(CHUNK);
	if (!model || !gbuf || posix_memalign((void **)&plain, 4096, 64 * OPBUF))
		FAIL("memory");

	struct urfs_sqe *s = urfs_get_sqe(&ring);
	urfs_prep_openat(s, "f", URFS_O_CREAT | URFS_O_TRUNC);
	int n = 0;
	{
		struct urfs_cqe *c;
		urfs_sqe_set_data64(s, 0);
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0)
			FAIL("open f");
		fd_f = c->res;
		urfs_cqe_seen(&ring, c);
		s = urfs_get_sqe(&ring);
		urfs_prep_openat(s, "g", URFS_O_CREAT | URFS_O_TRUNC);
		urfs_sqe_set_data64(s, 0);
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0)
			FAIL("open g");
		fd_g = c->res;
		urfs_cqe_seen(&ring, c);
		if (fd_f < 0 || fd_g < 0)
			FAIL("open: %d %d", fd_f, fd_g);
	}
	/* f and g interleaved CHUNK by CHUNK (extending writes: synchronous). */
	for (uint64_t off = 0; off < FSZ; off += CHUNK) {
		n = 0;
		struct op *o = addw(&n, off, CHUNK, 1, NULL);
		run(1);
		check_writes(1);
		apply(o);
		fill(gbuf, CHUNK);
		if (one(UR_OP_WRITE, fd_g, off, CHUNK, gbuf) != (int32_t)CHUNK)
			FAIL("write g");
	}
	uint64_t t0 = realtime_ns();

	/* 1. A batch of 100 page overwrites, 8 and 16 KiB at 4 KiB-aligned
	 *    positions (so most span two extents), distinct ranges, a quarter
	 *    from ordinary buffers; then read back through the ring. */
	{
		static unsigned char used[FSZ / 4096];
		memset(used, 0, sizeof(used));
		n = 0;
		int nplain = 0;
		while (n < 100) {
			uint32_t len = rnd() % 2 ? 8192 : 16384;
			uint64_t blk = rnd() % (FSZ / 4096 - len / 4096 + 1);
			int clash = 0;
			for (uint32_t k = 0; k < len / 4096; k++)
				clash |= used[blk + k];
			if (clash)
				continue;
			for (uint32_t k = 0; k < len / 4096; k++)
				used[blk + k] = 1;
			int fixed = rnd() % 4 != 0 || nplain >= 4;
			addw(&n, blk * 4096, len, fixed, fixed ? NULL : plain + (size_t)nplain++ * 16384);
		}
		run(n);
		check_writes(n);
		for (int i = 0; i < n; i++)
			apply(&ops[i]);
		n = 0;
		for (uint64_t off = 0; off < FSZ; off += OPBUF)
			add(&n, UR_OP_READ, fd_f, off, OPBUF, 1);
		run(n);
		for (int i = 0; i < n; i++)
			check_read(&ops[i]);
		/* The overwrites moved the mtime (no other change was made). */
		struct urfs_statx *stx = (struct urfs_statx *)(area + (size_t)MAXOP * OPBUF - 4096);
		s = urfs_get_sqe(&ring);
		urfs_prep_statx(s, fd_f, NULL, stx);
		struct urfs_cqe *c;
		urfs_sqe_set_data64(s, 0);
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0 || c->res < 0)
			FAIL("statx");
		urfs_cqe_seen(&ring, c);
		if (stx->mtime_ns < t0 || stx->size != FSZ)
			FAIL("after overwrites: mtime %llu (before %llu), size %llu",
			     (unsigned long long)stx->mtime_ns, (unsigned long long)t0,
			     (unsigned long long)stx->size);
	}

	/* 1b. Links and IO_DRAIN on the AIO path, in one submit: an overwrite goes to
	 *     AIO (queued for the batch's io_submit); a drained read of the same range
	 *     must see it and complete after it; a second overwrite, then a linked read
	 *     of the range (chain to a plain read) must see that one; an overwrite, then
	 *     a drained overwrite of the same range: the drained one lands last; the
	 *     same for an unaligned (synchronous) write after an AIO overwrite. */
	{
		n = 0;
		struct op *w1 = addw(&n, 0, CHUNK, 1, NULL);
		struct op *r1 = add(&n, UR_OP_READ, fd_f, 0, CHUNK, 1);
		r1->flags = URFS_IOSQE_IO_DRAIN;
		struct op *w2 = addw(&n, 0, CHUNK, 1, NULL);
		struct op *l1 = add(&n, UR_OP_READ, fd_f, 0, CHUNK, 1);
		l1->flags = URFS_IOSQE_IO_LINK;
		struct op *l2 = add(&n, UR_OP_READ, fd_f, 4 * CHUNK, CHUNK, 1);
		struct op *w3 = addw(&n, 8 * CHUNK, CHUNK, 1, NULL);
		struct op *w4 = addw(&n, 8 * CHUNK, CHUNK, 1, NULL);
		w4->flags = URFS_IOSQE_IO_DRAIN;
		/* an overwrite by AIO, then an unaligned write into it: that one goes
		 * the synchronous way, after the AIO write (ABI.md O_DIRECT) */
		struct op *w5 = addw(&n, 12 * CHUNK, CHUNK, 1, NULL);
		struct op *w6 = addw(&n, 12 * CHUNK + 100, 300, 1, NULL);
		run(n);
		check_writes(n);
		if (r1->order < w1->order || l1->order < w2->order || w4->order < w3->order)
			FAIL("a drained or linked op completed before the AIO write before it");
		apply(w1);
		check_read(r1);
		apply(w2);
		check_read(l1);
		check_read(l2);
		apply(w3);
		apply(w4);
		apply(w5);
		apply(w6);
		n = 0;
		add(&n, UR_OP_READ, fd_f, 8 * CHUNK, CHUNK, 1);
		add(&n, UR_OP_READ, fd_f, 12 * CHUNK, CHUNK, 1);
		run(2);
		check_read(&ops[0]);
		check_read(&ops[1]);
	}

	/* 2. One submit: overwrites and reads (of other ranges), an fsync; more
	 *    overwrites (some beyond 3 MiB) and reads, a truncate to 3 MiB, then
	 *    a write that extends the file past a hole. Overwrites before the
	 *    truncate beyond 3 MiB must be gone, the hole zero; the fsync and
	 *    the truncate each complete after every I/O before them. */
	{
		n = 0;
		for (int i = 0; i < 30; i++)          /* even 8 KiB pages 0..58 */
			apply(addw(&n, (uint64_t)i * 2 * CHUNK, CHUNK, 1, NULL));
		for (int i = 0; i < 30; i++)
			add(&n, UR_OP_READ, fd_f, (uint64_t)(i * 2 + 1) * CHUNK, CHUNK, 1);
		int fs_i = n;
		add(&n, UR_OP_FSYNC, fd_f, 0, 0, 0);
		for (int i = 30; i < 60; i++)         /* even pages 60..118 */
			apply(addw(&n, (uint64_t)i * 2 * CHUNK, CHUNK, 1, NULL));
		for (int i = 0; i < 40; i++)          /* beyond 3 MiB: cut by the truncate */
			addw(&n, (3u << 20) + (uint64_t)i * CHUNK, CHUNK, 1, NULL);
		for (int i = 30; i < 60; i++)
			add(&n, UR_OP_READ, fd_f, (uint64_t)(i * 2 + 1) * CHUNK, CHUNK, 1);
		int tr_i = n;
		add(&n, UR_OP_FTRUNCATE, fd_f, 3u << 20, 0, 0);
		int ext_i = n;
		addw(&n, (7u << 19), CHUNK, 1, NULL);
		run(n);
		for (int i = 0; i < tr_i; i++) {
			if (i == fs_i)
				continue;
			if (ops[i].opcode == UR_OP_WRITE && ops[i].res != (int32_t)ops[i].len)
				FAIL("write %d: res %d", i, ops[i].res);
			if (ops[i].opcode == UR_OP_READ)
				check_read(&ops[i]);
			if (i < fs_i && ops[i].order > ops[fs_i].order)
				FAIL("op %d completed after the fsync that follows it", i);
			if (ops[i].order > ops[tr_i].order)
				FAIL("op %d completed after the truncate that follows it", i);
		}
		if (ops[fs_i].res != 0 || ops[tr_i].res != 0 || ops[ext_i].res != (int32_t)CHUNK)
			FAIL("fsync %d truncate %d extend %d", ops[fs_i].res, ops[tr_i].res, ops[ext_i].res);
		memset(model + (3u << 20), 0, FSZ - (3u << 20));
		msize = 3u << 20;
		apply(&ops[ext_i]);
		n = 0;
		for (uint64_t off = 3u << 20; off < msize; off += OPBUF)
			add(&n, UR_OP_READ, fd_f, off, OPBUF, 1);
		run(n);
		for (int i = 0; i < n; i++)
			check_read(&ops[i]);
	}

	/* 3. More SQEs than AIO slots: 1000 page reads and writes (4 KiB, and
	 *    8 KiB across two extents) in one submit on a 1024-entry ring. Grow
	 *    f back to 4 MiB first (synchronous, allocating). */
	{
		struct op *o;
		while (msize < FSZ) {
			n = 0;
			o = addw(&n, msize, OPBUF, 1, NULL);
			run(1);
			check_writes(1);
			apply(o);
		}
		/* Blocks 0..1023: writes on every other even block, reads on the
		 * rest of the even ones, then reads of the odd blocks. */
		n = 0;
		for (uint32_t b = 0; b < FSZ / 4096; b += 2) {
			if ((b / 2) % 2 == 0)
				addw(&n, (uint64_t)b * 4096, 4096, 1, NULL);
			else
				add(&n, UR_OP_READ, fd_f, (uint64_t)b * 4096, 4096, 1);
		}
		for (uint32_t b = 1; b < FSZ / 4096 && n < MAXOP; b += 2)
			add(&n, UR_OP_READ, fd_f, (uint64_t)b * 4096, 4096, 1);
		if (n != MAXOP)
			FAIL("only %d ops", n);
		run(n);
		check_writes(n);
		for (int i = 0; i < n; i++)
			if (ops[i].opcode == UR_OP_WRITE)
				apply(&ops[i]);
		for (int i = 0; i < n; i++)
			if (ops[i].opcode == UR_OP_READ)
				check_read(&ops[i]);
		/* 256 overwrites of 16 KiB, two extents each in the interleaved
		 * part: more pieces than AIO slots. Two op buffers each. */
		n = 0;
		for (uint64_t off = 0; off < FSZ; off += 16384) {
			o = add(&n, UR_OP_WRITE, fd_f, off, 16384, 1);
			o->buf = area + (size_t)(n - 1) * 2 * OPBUF;
			fill(o->buf, 16384);
		}
		run(n);
		check_writes(n);
		for (int i = 0; i < n; i++)
			apply(&ops[i]);
	}

	/* 4. The synchronous rules: a write straddling EOF extends the file, an
	 *    O_APPEND handle appends whatever the offset, a read-only handle
	 *    refuses. */
	{
		fill(plain, 16384);
		uint64_t off = FSZ - 8192;
		if (one(UR_OP_WRITE, fd_f, off, 16384, plain) != 16384)
			FAIL("write across EOF");
		memcpy(model + off, plain, 16384);
		msize = off + 16384;
		s = urfs_get_sqe(&ring);
		urfs_prep_openat(s, "f", URFS_O_APPEND);
		struct urfs_cqe *c;
		urfs_sqe_set_data64(s, 0);
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0)
			FAIL("open append");
		int fa = c->res;
		urfs_cqe_seen(&ring, c);
		s = urfs_get_sqe(&ring);
		urfs_prep_openat(s, "f", URFS_O_RDONLY);
		urfs_sqe_set_data64(s, 0);
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0)
			FAIL("open rdonly");
		int fr = c->res;
		urfs_cqe_seen(&ring, c);
		if (fa < 0 || fr < 0)
			FAIL("open: %d %d", fa, fr);
		fill(plain, 4096);
		if ((r = one(UR_OP_WRITE, fa, 0, 4096, plain)) != 4096)
			FAIL("append write: %d", r);
		memcpy(model + msize, plain, 4096);
		msize += 4096;
		fill(plain, 4096);
		if ((r = one(UR_OP_WRITE, fr, 0, 4096, plain)) != -EBADF)
			FAIL("write on a read-only handle: %d", r);
	}

	urfs_queue_exit(&ring);

	/* Remount: through SimpleFS directly... */
	struct sfs *fs;
	char err[256];
	if ((r = sfs_mount("d.sfs", 0, &fs, err, sizeof(err))) < 0)
		FAIL("mount: %s", err);
	struct sfs_stat st;
	int h = sfs_file_open(fs, "f", SFS_O_RDONLY);
	if (h < 0 || sfs_file_stat(fs, h, &st) < 0)
		FAIL("open f after remount");
	if (st.size != msize)
		FAIL("size %llu, want %llu", (unsigned long long)st.size, (unsigned long long)msize);
	if (st.mtime_ns < t0)
		FAIL("mtime did not move");
	unsigned char *back = malloc(msize + 1);
	if (!back || sfs_file_pread(fs, h, back, msize + 1, 0) != (ssize_t)msize)
		FAIL("read back");
	if (memcmp(back, model, msize)) {
		uint64_t i = 0;
		while (back[i] == model[i])
			i++;
		FAIL("after remount: f differs at %llu", (unsigned long long)i);
	}
	sfs_file_close(fs, h);
	if ((r = sfs_unmount(fs)) < 0)
		FAIL("unmount: %s", strerror(-r));

	/* ...and through a second, buffered ring. */
	if ((r = open_ring(0, "d.sfs", 0, &p)) < 0)
		FAIL("init 2: %s (%s)", strerror(-r), p.errmsg);
	iv.iov_base = NULL;
	iv.iov_len = (size_t)MAXOP * OPBUF;
	if ((r = urfs_register_buffers(&ring, &iv, 1)) < 0)
		FAIL("register 2: %s", strerror(-r));
	area = iv.iov_base;
	s = urfs_get_sqe(&ring);
	urfs_prep_openat(s, "f", URFS_O_RDONLY);
	{
		struct urfs_cqe *c;
		urfs_sqe_set_data64(s, 0);
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0 || c->res < 0)
			FAIL("open f on ring 2");
		fd_f = c->res;
		urfs_cqe_seen(&ring, c);
	}
	n = 0;
	for (uint64_t off = 0; off < msize + OPBUF; off += OPBUF)
		add(&n, UR_OP_READ, fd_f, off, OPBUF, 1);
	run(n);
	for (int i = 0; i < n; i++)
		check_read(&ops[i]);
	urfs_queue_exit(&ring);

	/* Reads in flight on the image count against the CQ's room (ABI.md): SQ 8,
	 * CQ 8, four NOP CQEs left unreaped, then 8 reads: only 4 may be taken until
	 * CQEs are reaped; the CQ never holds more than 8; every CQE comes once. */
	memset(&p, 0, sizeof(p));
	p.image = "d.sfs";
	p.flags = URFS_SETUP_DIRECT;
	p.cq_entries = 8;
	p.buf_area_size = 8 * 4096;
	if ((r = urfs_queue_init_params(8, &ring, &p)) < 0)
		FAIL("init 3: %s (%s)", strerror(-r), p.errmsg);
	iv.iov_base = NULL;
	iv.iov_len = 8 * 4096;
	if ((r = urfs_register_buffers(&ring, &iv, 1)) < 0)
		FAIL("register 3: %s", strerror(-r));
	area = iv.iov_base;
	s = urfs_get_sqe(&ring);
	urfs_prep_openat(s, "f", URFS_O_RDONLY);
	{
		struct urfs_cqe *c;
		urfs_sqe_set_data64(s, 0);
		if (urfs_submit_and_wait(&ring, 1) < 0 || urfs_wait_cqe(&ring, &c) < 0 || c->res < 0)
			FAIL("open f on ring 3");
		fd_f = c->res;
		urfs_cqe_seen(&ring, c);
		for (int i = 0; i < 4; i++) {
			s = urfs_get_sqe(&ring);
			urfs_prep_nop(s);
			urfs_sqe_set_data64(s, 100);
		}
		if (urfs_submit_and_wait(&ring, 4) != 4)
			FAIL("NOPs on ring 3");
		for (int i = 0; i < 8; i++) {
			s = urfs_get_sqe(&ring);
			urfs_prep_read_fixed(s, fd_f, area + i * 4096, 4096, (uint64_t)i * 4096, 0);
			urfs_sqe_set_data64(s, (uint64_t)i);
		}
		if ((r = urfs_submit(&ring)) != 8)
			FAIL("submit reads on ring 3: %d", r);
		struct timespec pause = { 0, 50 * 1000 * 1000 };
		for (int i = 0; i < 100 && urfs_cq_ready(&ring) < 8; i++)
			nanosleep(&pause, NULL);
		nanosleep(&pause, NULL);      /* time to overrun it, if the server would */
		if (urfs_cq_ready(&ring) != 8)
			FAIL("CQ of 8 with reads in flight holds %u CQEs", urfs_cq_ready(&ring));
		unsigned nops = 0, seen = 0;
		while (nops + __builtin_popcount(seen) < 12) {
			if ((r = urfs_wait_cqe(&ring, &c)) < 0)
				FAIL("wait on ring 3: %s", strerror(-r));
			if (c->user_data == 100) {
				nops++;
			} else {
				if (c->user_data >= 8 || (seen & (1u << c->user_data)) || c->res != 4096)
					FAIL("ring 3: CQE %llu res %d", (unsigned long long)c->user_data, c->res);
				seen |= 1u << c->user_data;
				if (memcmp(area + c->user_data * 4096, model + c->user_data * 4096, 4096))
					FAIL("ring 3: read %llu differs", (unsigned long long)c->user_data);
			}
			urfs_cqe_seen(&ring, c);
		}
		if (nops != 4 || urfs_peek_cqe(&ring, &c) == 0)
			FAIL("ring 3: %u NOP CQEs, or a CQE too many", nops);
	}
	urfs_queue_exit(&ring);
	free(back);
	free(model);
	free(plain);
	free(gbuf);
	printf("ok: f %llu bytes verified after remount, twice\n", (unsigned long long)msize);
	return 0;
}
