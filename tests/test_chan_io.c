/* SPDX-License-Identifier: MIT */
/* Description: channel I/O on every engine (psync, io_uring, ur; buffered and
 * O_DIRECT). Data written through a channel (single ops, *_fully, batches
 * streamed through an 8-entry ring, registered buffers) reads back byte-exact
 * from outside (host read, or the sfs library for an image) and the other way
 * round; gaps read as zeros; read returns 0 at EOF; read_fully past EOF is
 * -ENODATA; a batch with bad ops (past EOF, bad position, NULL buffer, crossing
 * EOF, zero length) reports each op and completes the rest; a batch read across
 * an end of file inside a page is -ENODATA (under O_DIRECT in one read); writes on a
 * read-only channel and I/O on a closed fd fail per op; size, truncate, force;
 * O_DSYNC channels; urch_batch_write_force; urch_unlink removes the file once (then -ENOENT);
 * a NULL channel is -EINVAL to close, engine and fd, and a NULL buf to
 * urch_alloc_buf; a UR channel opened
 * without an image in its options lives in $SFS_IMAGE's image; every engine's
 * closed channels leave no descriptor open; a UR name of
 * 63 bytes opens and unlinks, one of 64 is -EINVAL.
 * A configuration the host cannot run (io_uring blocked, no O_DIRECT) is a skipped part. */
#include <unistd.h>
#include "test_chan_common.h"

#define PG 8192u
#define NPG 440u          /* model size in pages */
#define NB 200u           /* batch ops (ring of 8) */

static unsigned char *model;
static uint64_t msize;

static void mwrite(const void *buf, size_t len, uint64_t pos)
{
	memcpy(model + pos, buf, len);
	if (pos + len > msize)
		msize = pos + len;
}

static void check_outside(const struct cfg *c, unsigned char *tmp)
{
	int64_t n = outside_read(c, tmp, NPG * PG);
	CHECK(n == (int64_t)msize, "%s: outside size %lld, model %llu", c->label, (long long)n,
	      (unsigned long long)msize);
	for (uint64_t i = 0; i < msize; i++)
		CHECK(tmp[i] == model[i], "%s: outside byte %llu: %u, model %u", c->label,
		      (unsigned long long)i, tmp[i], model[i]);
}

static void run(const struct cfg *c)
{
	struct urch *ch;
	struct urch_op ops[NB];
	unsigned char *bufs, *tmp = malloc(NPG * PG);
	int r;
	int64_t n;

	CHECK(tmp, "malloc");
	memset(model, 0, NPG * PG);
	msize = 0;
	r = cfg_open(c, URCH_CREATE | URCH_TRUNC, 8, &ch);
	CHECK(r == 0, "%s: open: %s", c->label, strerror(-r));
	CHECK(urch_engine(ch) == c->engine, "engine");
	CHECK(urch_size(ch) == 0, "%s: size of new file", c->label);
	r = urch_alloc_buf(ch, (size_t)NB * PG, (void **)&bufs);
	CHECK(r == 0, "alloc_buf");
	CHECK(((uintptr_t)bufs & 4095) == 0, "alloc_buf alignment");
	CHECK(urch_read(ch, bufs, PG, 0) == 0, "%s: read at EOF of empty file", c->label);

	/* Batch write: pages 0, 2, 4, ... (gaps between), 200 ops through 8 slots. */
	uint64_t id0 = urch_next_op_id();
	for (unsigned i = 0; i < NB; i++) {
		ops[i].pos = (uint64_t)i * 2 * PG;
		ops[i].buf = bufs + (size_t)i * PG;
		ops[i].len = PG;
		ops[i].result = 12345;
		fillpat(ops[i].buf, PG, ops[i].pos, 1);
		mwrite(ops[i].buf, PG, ops[i].pos);
	}
	r = urch_batch_write_fully(ch, ops, NB);
	CHECK(r == 0, "%s: batch write: %d failed", c->label, r);
	for (unsigned i = 0; i < NB; i++)
		CHECK(ops[i].result == PG, "%s: write op %u: %lld", c->label, i, (long long)ops[i].result);
	CHECK(urch_next_op_id() >= id0 + NB, "op ids not taken from the counter");
	CHECK(urch_size(ch) == (int64_t)msize, "%s: size %lld, want %llu", c->label,
	      (long long)urch_size(ch), (unsigned long long)msize);

	/* Batch read back in reverse order. */
	memset(bufs, 0, (size_t)NB * PG);
	for (unsigned i = 0; i < NB; i++) {
		ops[i].pos = (uint64_t)(NB - 1 - i) * 2 * PG;
		ops[i].buf = bufs + (size_t)i * PG;
		ops[i].len = PG;
		ops[i].result = -1;
	}
	r = urch_batch_read_fully(ch, ops, NB);
	CHECK(r == 0, "%s: batch read: %d failed", c->label, r);
	for (unsigned i = 0; i < NB; i++) {
		CHECK(ops[i].result == PG, "%s: read op %u: %lld", c->label, i, (long long)ops[i].result);
		CHECK(!memcmp(ops[i].buf, model + ops[i].pos, PG), "%s: read op %u data", c->label, i);
	}
	/* A gap reads as zeros; a single write fills it; read_fully over several pages. */
	n = urch_read_fully(ch, bufs, PG, PG);
	CHECK(n == PG, "%s: read gap: %lld", c->label, (long long)n);
	for (unsigned i = 0; i < PG; i++)
		CHECK(bufs[i] == 0, "%s: gap byte %u not zero", c->label, i);
	fillpat(bufs, PG, PG, 2);
	CHECK(urch_write(ch, bufs, PG, PG) == PG, "%s: single write", c->label);
	mwrite(bufs, PG, PG);
	fillpat(bufs, 3 * PG, 5 * PG, 3);
	CHECK(urch_write_fully(ch, bufs, 3 * PG, 5 * PG) == 3 * PG, "%s: write_fully", c->label);
	mwrite(bufs, 3 * PG, 5 * PG);
	memset(bufs, 0, 10 * PG);
	n = urch_read_fully(ch, bufs, 10 * PG, 0);
	CHECK(n == 10 * PG, "%s: read_fully: %lld", c->label, (long long)n);
	CHECK(!memcmp(bufs, model, 10 * PG), "%s: read_fully data", c->label);
	n = urch_read(ch, bufs, PG, msize);
	CHECK(n == 0, "%s: read at EOF: %lld", c->label, (long long)n);
	n = urch_read_fully(ch, bufs, 2 * PG, msize - PG);
	CHECK(n == -ENODATA, "%s: read_fully across EOF: %lld", c->label, (long long)n);
	CHECK(!memcmp(bufs, model + msize - PG, PG), "%s: bytes before EOF", c->label);
	CHECK(urch_read(ch, bufs, PG, (uint64_t)1 << 63) == -EINVAL, "%s: read bad pos", c->label);
	CHECK(urch_write(ch, bufs, PG, (uint64_t)INT64_MAX - 10) == -EINVAL,
	      "%s: a write whose end passes INT64_MAX", c->label);

	/* A batch with failing ops: each reported, the rest done. */
	memset(bufs, 0, 8 * PG);
	struct urch_op bad[7] = {
		{ 0, bufs, PG, 0 },                          /* ok */
		{ msize + 4 * PG, bufs + PG, PG, 0 },        /* past EOF: -ENODATA */
		{ (uint64_t)1 << 63, bufs + 2 * PG, PG, 0 }, /* bad position: -EINVAL */
		{ 4 * PG, NULL, PG, 0 },                     /* no buffer: -EFAULT */
		{ 4 * PG, bufs + 3 * PG, PG, 0 },            /* ok */
		{ 6 * PG, bufs + 4 * PG, 0, 7 },             /* empty: 0 */
		{ msize - PG, bufs + 5 * PG, 2 * PG, 0 },    /* crosses EOF: -ENODATA */
	};
	r = urch_batch_read_fully(ch, bad, 7);
	CHECK(r == 4, "%s: bad batch: %d failed, want 4", c->label, r);
	CHECK(bad[0].result == PG && !memcmp(bufs, model, PG), "%s: op 0", c->label);
	CHECK(bad[1].result == -ENODATA, "%s: op 1 %lld", c->label, (long long)bad[1].result);
	CHECK(bad[2].result == -EINVAL, "%s: op 2 %lld", c->label, (long long)bad[2].result);
	CHECK(bad[3].result == -EFAULT, "%s: op 3 %lld", c->label, (long long)bad[3].result);
	CHECK(bad[4].result == PG && !memcmp(bufs + 3 * PG, model + 4 * PG, PG), "%s: op 4", c->label);
	CHECK(bad[5].result == 0, "%s: op 5 %lld", c->label, (long long)bad[5].result);
	CHECK(bad[6].result == -ENODATA, "%s: op 6 %lld", c->label, (long long)bad[6].result);
	CHECK(!memcmp(bufs + 5 * PG, model + msize - PG, PG), "%s: op 6 bytes before EOF", c->label);

	/* Registered buffers: 16 of them, write 16 pages past the end, read back. */
	void *fb[16];
	r = urch_register_buffers(ch, PG, 16, fb);
	CHECK(r == 0, "%s: register: %s", c->label, strerror(-r));
	CHECK(urch_register_buffers(ch, PG, 16, fb) == -EBUSY, "%s: second register", c->label);
	for (unsigned i = 0; i < 16; i++) {
		ops[i].pos = (uint64_t)(NB * 2 + 4 + i) * PG;
		ops[i].buf = fb[i];
		ops[i].len = PG;
		fillpat(fb[i], PG, ops[i].pos, 4);
		mwrite(fb[i], PG, ops[i].pos);
	}
	struct urch_stats st0, st1;
	CHECK(urch_get_stats(ch, &st0) == 0, "stats");
	CHECK(st0.fixed_ops == 0, "%s: fixed ops before registering", c->label);
	r = urch_batch_write_fully(ch, ops, 16);
	CHECK(r == 0, "%s: fixed write: %d", c->label, r);
	for (unsigned i = 0; i < 16; i++)
		memset(fb[i], 0, PG);
	r = urch_batch_read_fully(ch, ops, 16);
	CHECK(r == 0, "%s: fixed read: %d", c->label, r);
	for (unsigned i = 0; i < 16; i++)
		CHECK(ops[i].result == PG && !memcmp(fb[i], model + ops[i].pos, PG),
		      "%s: fixed op %u", c->label, i);
	/* the fixed path is really taken (zero copy) where the engine has one */
	CHECK(urch_get_stats(ch, &st1) == 0, "stats");
	CHECK(st1.ops - st0.ops == 32, "%s: %llu ops for 32", c->label,
	      (unsigned long long)(st1.ops - st0.ops));
	CHECK(st1.fixed_ops == (c->engine == URCH_PSYNC ? 0u : 32u), "%s: %llu fixed ops",
	      c->label, (unsigned long long)st1.fixed_ops);
	CHECK(urch_unregister_buffers(ch) == 0, "%s: unregister", c->label);
	CHECK(urch_size(ch) == (int64_t)msize, "%s: size after fixed", c->label);
	CHECK(urch_force(ch, 0) == 0 && urch_force(ch, 1) == 0, "%s: force", c->label);
	urch_free_buf(ch, bufs);
	CHECK(urch_close(ch) == 0, "close");
	check_outside(c, tmp);

	/* Truncate down and up; the regrown part is zeros. */
	r = cfg_open(c, 0, 8, &ch);
	CHECK(r == 0, "%s: reopen: %s", c->label, strerror(-r));
	r = urch_alloc_buf(ch, 4 * PG, (void **)&bufs);
	CHECK(r == 0, "alloc");
	CHECK(urch_truncate(ch, 50 * PG) == 0, "%s: truncate down", c->label);
	CHECK(urch_size(ch) == 50 * PG, "%s: size after truncate", c->label);
	CHECK(urch_read(ch, bufs, PG, 60 * PG) == 0, "%s: read past truncated end", c->label);
	/* An end of file inside a page: a batch read across it is -ENODATA, with the
	 * bytes before it read; under O_DIRECT in one read (a short read ending at an
	 * unaligned place can only be the end: the op is not read again there). */
	CHECK(urch_truncate(ch, 50 * PG - 1000) == 0, "%s: truncate inside a page", c->label);
	memset(bufs, 0xee, 2 * PG);
	struct urch_op eof = { 48 * PG, bufs, 2 * PG, 0 };
	struct urch_stats es0, es1;
	CHECK(urch_get_stats(ch, &es0) == 0, "stats");
	r = urch_batch_read_fully(ch, &eof, 1);
	CHECK(r == 1 && eof.result == -ENODATA, "%s: batch read across an unaligned EOF: %d, %lld",
	      c->label, r, (long long)eof.result);
	CHECK(urch_get_stats(ch, &es1) == 0, "stats");
	CHECK(!(c->flags & URCH_DIRECT) || es1.ops - es0.ops == 1,
	      "%s: %llu reads for a read across an unaligned EOF", c->label,
	      (unsigned long long)(es1.ops - es0.ops));
	CHECK(!memcmp(bufs, model + 48 * PG, 2 * PG - 1000), "%s: bytes before the unaligned EOF",
	      c->label);
	CHECK(urch_truncate(ch, 80 * PG) == 0, "%s: truncate up", c->label);
	memset(model + 50 * PG - 1000, 0, (NPG - 50) * PG + 1000);
	msize = 80 * PG;
	memset(bufs, 0xee, 4 * PG);
	CHECK(urch_read_fully(ch, bufs, 4 * PG, 49 * PG) == 4 * PG, "%s: read regrown", c->label);
	CHECK(!memcmp(bufs, model + 49 * PG, 4 * PG), "%s: regrown bytes", c->label);
	urch_free_buf(ch, bufs);
	urch_close(ch);
	check_outside(c, tmp);

	/* O_DSYNC (UR: an FSYNC after each write call): writes and batches work. */
	r = cfg_open(c, URCH_DSYNC, 8, &ch);
	CHECK(r == 0, "%s: open dsync: %s", c->label, strerror(-r));
	r = urch_alloc_buf(ch, 20 * PG, (void **)&bufs);
	CHECK(r == 0, "alloc");
	for (unsigned i = 0; i < 20; i++) {
		ops[i].pos = (uint64_t)(60 + i) * PG;
		ops[i].buf = bufs + (size_t)i * PG;
		ops[i].len = PG;
		fillpat(ops[i].buf, PG, ops[i].pos, 8);
		mwrite(ops[i].buf, PG, ops[i].pos);
	}
	CHECK(urch_batch_write_fully(ch, ops, 20) == 0, "%s: dsync batch", c->label);
	fillpat(bufs, PG, 10 * PG, 8);
	CHECK(urch_write(ch, bufs, PG, 10 * PG) == PG, "%s: dsync write", c->label);
	mwrite(bufs, PG, 10 * PG);
	urch_free_buf(ch, bufs);
	urch_close(ch);
	check_outside(c, tmp);

	/* urch_batch_write_force: 60 pages through the 8-entry ring, the force
	 * drained behind them (one more op id); a bad op fails alone; n == 0 is
	 * just the force. (test_chan_dsync checks the force makes them durable.) */
	r = cfg_open(c, 0, 8, &ch);
	CHECK(r == 0, "%s: open: %s", c->label, strerror(-r));
	r = urch_alloc_buf(ch, 60 * PG, (void **)&bufs);
	CHECK(r == 0, "alloc");
	for (unsigned i = 0; i < 60; i++) {
		ops[i].pos = (uint64_t)(100 + i) * PG;
		ops[i].buf = bufs + (size_t)i * PG;
		ops[i].len = PG;
		ops[i].result = 7;
		fillpat(ops[i].buf, PG, ops[i].pos, 10);
		mwrite(ops[i].buf, PG, ops[i].pos);
	}
	uint64_t fid = urch_next_op_id();
	r = urch_batch_write_force(ch, ops, 60, 0);
	CHECK(r == 0, "%s: batch with force: %d failed", c->label, r);
	for (unsigned i = 0; i < 60; i++)
		CHECK(ops[i].result == PG, "%s: forced op %u: %lld", c->label, i, (long long)ops[i].result);
	CHECK(urch_next_op_id() >= fid + 61, "%s: the force takes no op id", c->label);
	ops[3].buf = NULL;
	r = urch_batch_write_force(ch, ops, 5, 1);
	CHECK(r == 1 && ops[3].result == -EFAULT, "%s: forced batch with a bad op: %d, %lld",
	      c->label, r, (long long)ops[3].result);
	for (unsigned i = 0; i < 5; i++)
		CHECK(i == 3 || ops[i].result == PG, "%s: forced op %u after a bad one", c->label, i);
	CHECK(urch_batch_write_force(ch, ops, 0, 0) == 0, "%s: force alone", c->label);
	CHECK(urch_batch_write_force(NULL, ops, 1, 0) == -EINVAL, "%s: NULL channel", c->label);
	urch_free_buf(ch, bufs);
	urch_close(ch);
	check_outside(c, tmp);

	/* The other way round: written outside, read through the channel. */
	fillpat(model, 37 * PG, 0, 9);
	msize = 37 * PG;
	outside_write(c, model, msize);
	r = cfg_open(c, URCH_RDONLY, 8, &ch);
	CHECK(r == 0, "%s: open rdonly: %s", c->label, strerror(-r));
	CHECK(urch_size(ch) == 37 * PG, "%s: size of outside file", c->label);
	r = urch_alloc_buf(ch, 37 * PG, (void **)&bufs);
	CHECK(r == 0, "alloc");
	for (unsigned i = 0; i < 37; i++) {
		ops[i].pos = (uint64_t)(i * 11 % 37) * PG;
		ops[i].buf = bufs + (size_t)i * PG;
		ops[i].len = PG;
	}
	r = urch_batch_read_fully(ch, ops, 37);
	CHECK(r == 0, "%s: read outside data: %d", c->label, r);
	for (unsigned i = 0; i < 37; i++)
		CHECK(!memcmp(ops[i].buf, model + ops[i].pos, PG), "%s: outside page %u", c->label, i);
	/* Writes on a read-only channel fail, each op. */
	r = urch_batch_write_fully(ch, ops, 3);
	CHECK(r == 3, "%s: write on rdonly: %d failed", c->label, r);
	for (unsigned i = 0; i < 3; i++)
		CHECK(ops[i].result == -EBADF, "%s: rdonly write op %u: %lld", c->label, i,
		      (long long)ops[i].result);
	/* A closed file: every op fails with -EBADF (host fds). */
	if (c->engine != URCH_UR) {
		close(urch_fd(ch));
		r = urch_batch_read_fully(ch, ops, 5);
		CHECK(r == 5, "%s: closed fd: %d failed", c->label, r);
		for (unsigned i = 0; i < 5; i++)
			CHECK(ops[i].result == -EBADF, "%s: closed op %u: %lld", c->label, i,
			      (long long)ops[i].result);
	}
	urch_free_buf(ch, bufs);
	urch_close(ch);
	check_outside(c, tmp);
	free(tmp);
	/* urch_unlink: the file is gone (once), bad arguments are refused. */
	struct urch_opts o;
	memset(&o, 0, sizeof(o));
	o.image = c->image;
	r = urch_unlink(c->path, c->engine, &o);
	CHECK(r == 0, "%s: unlink: %s", c->label, strerror(-r));
	r = cfg_open(c, 0, 8, &ch);
	CHECK(r == -ENOENT, "%s: open after unlink: %d", c->label, r);
	r = urch_unlink(c->path, c->engine, &o);
	CHECK(r == -ENOENT, "%s: unlink twice: %d", c->label, r);
	CHECK(urch_unlink(NULL, c->engine, &o) == -EINVAL, "%s: unlink NULL", c->label);
	CHECK(urch_close(NULL) == -EINVAL, "%s: close NULL", c->label);
	CHECK(urch_engine(NULL) == -EINVAL && urch_fd(NULL) == -EINVAL, "%s: engine, fd of NULL", c->label);
	CHECK(urch_alloc_buf(NULL, PG, NULL) == -EINVAL, "%s: alloc_buf into NULL", c->label);
	CHECK(urch_unlink(c->path, 99, &o) == -EINVAL, "%s: unlink, bad engine", c->label);
	if (c->engine == URCH_UR)
		CHECK(urch_unlink("a/b", c->engine, &o) == -EINVAL, "%s: unlink a/b", c->label);
}

/* UR without an image in the options: the image is $SFS_IMAGE (CHANNEL.md). */
static void image_from_env(void)
{
	struct urch *ch;
	char got[5] = "";
	int r = sfs_format("env.sfs", 16ull << 20, 0);
	CHECK(r == 0, "format: %s", strerror(-r));
	setenv("SFS_IMAGE", "env.sfs", 1);
	r = urch_open("envf", URCH_CREATE, URCH_UR, &ch);
	CHECK(r == 0, "open with $SFS_IMAGE: %s", strerror(-r));
	CHECK(urch_write(ch, "envy", 4, 0) == 4, "write with $SFS_IMAGE");
	CHECK(urch_close(ch) == 0, "close");
	unsetenv("SFS_IMAGE");
	struct urch_opts o = { .image = "env.sfs" };
	r = urch_open_opts("envf", 0, URCH_UR, &o, &ch);
	CHECK(r == 0, "the file is not in $SFS_IMAGE's image: %s", strerror(-r));
	CHECK(urch_read(ch, got, 4, 0) == 4 && !memcmp(got, "envy", 4), "data in $SFS_IMAGE's image");
	urch_close(ch);
	/* A UR name of exactly SFS_NAME_MAX (= UR_NAME_MAX) bytes is a name
	 * (urch_open(3): 1 to 63 bytes); one more is -EINVAL, to open and unlink. */
	char name[SFS_NAME_MAX + 2];
	memset(name, 'n', SFS_NAME_MAX + 1);
	name[SFS_NAME_MAX + 1] = 0;
	CHECK(urch_open_opts(name, URCH_CREATE, URCH_UR, &o, &ch) == -EINVAL, "open a 64-byte name");
	CHECK(urch_unlink(name, URCH_UR, &o) == -EINVAL, "unlink a 64-byte name");
	name[SFS_NAME_MAX] = 0;
	r = urch_open_opts(name, URCH_CREATE, URCH_UR, &o, &ch);
	CHECK(r == 0, "open a 63-byte name: %s", strerror(-r));
	CHECK(urch_close(ch) == 0, "close");
	r = urch_unlink(name, URCH_UR, &o);
	CHECK(r == 0, "unlink a 63-byte name: %s", strerror(-r));
	printf("ok ur: the image from $SFS_IMAGE\n");
}

/* Descriptors open in this process. */
static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	CHECK(d, "opendir /proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int main(void)
{
	image_from_env();
	model = calloc(NPG, PG);
	CHECK(model, "malloc");
	for (unsigned i = 0; i < NCFG; i++) {
		if (!cfg_runnable(&cfgs[i]))
			continue;
		int fds = count_fds();
		run(&cfgs[i]);
		/* closed channels keep no descriptor: file, ring, server link */
		CHECK(count_fds() == fds, "%s: %d descriptors open after the channels closed, %d before",
		      cfgs[i].label, count_fds(), fds);
		printf("ok %s\n", cfgs[i].label);
	}
	free(model);
	return 0;
}
