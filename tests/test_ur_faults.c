/* SPDX-License-Identifier: MIT */
/* Description: device errors through the ring (SQLite's test_vfs.c counted
 * faults, under the server). The server's dispatch loop runs in-process
 * (tests/test_ur_inproc.h) on SimpleFS mounted on sfs_errdev over a fault
 * device. A fixed workload of SQEs (opens, writes that allocate and that
 * overwrite, fsyncs, a truncate, reads, statx, closes) runs once without
 * faults, then once for every N with the N-th device read, write or sync
 * failing: with -EIO once, with -EIO for ever, with -ENOSPC once and for ever
 * on writes (an image file that cannot grow). A failed sync loses the writes
 * it was to make durable, as Linux does. For every run:
 *  - every CQE before the fault is the fault-free one; the SQE during which
 *    the fault hit gets a negative res; every other CQE is the fault-free one
 *    or -errno (the injected one, -EIO from a mount that refuses changes after
 *    a failed metadata write, -EBADF for a handle whose open failed);
 *  - a NOP after every SQE completes with 0 (the server keeps serving);
 *  - the server closes the files and unmounts (0 when nothing was injected);
 *  - after a power cut the image passes fsck, mounts, holds every byte an
 *    FSYNC CQE said was durable (unless a later SQE wrote over it), and takes
 *    a new file.
 * Then a read-only image: every change gets -EROFS or -EBADF, reads work.
 * Prints the runs, the faults injected and the outcomes (FAULT_TRACE=1: each
 * step of each run on stderr). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "test_ur_inproc.h"

#define SIZE   (4u << 20)
#define FMAX   32768u
#define NFILES 2

enum { OPEN, CLOSE, WRITE, READ, FSYNC, TRUNC, STATX };
struct step { int op, file; uint32_t off, len; uint8_t pat; };
static const struct step wl[] = {
	{ OPEN, 0, 0, 0, 0 },        { WRITE, 0, 0, 8192, 1 },     { FSYNC, 0, 0, 0, 0 },
	{ OPEN, 1, 0, 0, 0 },        { WRITE, 1, 0, 20000, 2 },    { WRITE, 0, 8192, 4096, 3 },
	{ FSYNC, 1, 0, 0, 0 },       { READ, 0, 0, 12288, 0 },     { WRITE, 0, 0, 4096, 4 },
	{ FSYNC, 0, 0, 0, 0 },       { TRUNC, 1, 5000, 0, 0 },     { FSYNC, 1, 0, 0, 0 },
	{ STATX, 0, 0, 0, 0 },       { READ, 1, 0, 5000, 0 },      { WRITE, 1, 5000, 9000, 5 },
	{ WRITE, 0, 1000, 100, 6 },  { FSYNC, 1, 0, 0, 0 },        { FSYNC, 0, 0, 0, 0 },
	{ CLOSE, 0, 0, 0, 0 },       { OPEN, 0, 0, 0, 0 },         { READ, 0, 0, 12288, 0 },
	{ CLOSE, 0, 0, 0, 0 },       { CLOSE, 1, 0, 0, 0 },
};
#define NSTEPS (int)(sizeof wl / sizeof wl[0])
static const char *const names[NFILES] = { "a", "b" };

/* The model of one file: what successful SQEs made of it, what the last
 * successful FSYNC made durable, and which bytes SQEs touched since. */
struct mfile {
	uint8_t cur[FMAX], claim[FMAX], touched[FMAX];
	uint32_t size, claim_size;
	int claimed, fd;
};
static struct mfile mf[NFILES];

/* Is res what the model says step i returns when nothing fails? */
static int as_modelled(int i, int32_t res, const uint8_t *rbuf)
{
	const struct step *w = &wl[i];
	const struct mfile *f = &mf[w->file];
	switch (w->op) {
	case OPEN:
		return res >= 0;
	case WRITE:
		return res == (int32_t)w->len;
	case READ: {
		uint32_t n = w->off >= f->size ? 0 : f->size - w->off < w->len ? f->size - w->off : w->len;
		return res == (int32_t)n && memcmp(rbuf, f->cur + w->off, n) == 0;
	}
	case STATX:
		return res == 0 && ((const struct ur_statx *)rbuf)->size == f->size;
	default:
		return res == 0;
	}
}

static void pattern(uint8_t *p, uint32_t off, uint32_t len, uint8_t pat)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(pat * 31 + (off + i) * 7);
}

static void touch(struct mfile *f, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to && i < FMAX; i++)
		f->touched[i] = 1;
}

/* Run step i as one SQE; returns its res (checked by the caller). */
static int32_t run_step(struct inproc *ip, int i, uint8_t *rbuf)
{
	const struct step *w = &wl[i];
	struct mfile *f = &mf[w->file];
	struct ur_sqe q = { .user_data = 1000u + (unsigned)i, .fd = f->fd };
	static uint8_t data[FMAX];
	switch (w->op) {
	case OPEN:
		q.opcode = UR_OP_OPENAT;
		q.fd = 0;
		q.addr = inproc_put(ip, names[w->file], 1);
		q.len = 1;
		q.op_flags = UR_O_CREAT;
		break;
	case CLOSE:
		q.opcode = UR_OP_CLOSE;
		break;
	case WRITE:
	case READ:
		pattern(data, w->off, w->len, w->pat);
		q.opcode = w->op == WRITE ? UR_OP_WRITE : UR_OP_READ;
		q.addr = inproc_put(ip, w->op == WRITE ? data : NULL, w->len);
		q.len = w->len;
		q.off = w->off;
		break;
	case FSYNC:
		q.opcode = UR_OP_FSYNC;
		break;
	case TRUNC:
		q.opcode = UR_OP_FTRUNCATE;
		q.off = w->off;
		break;
	case STATX:
		q.opcode = UR_OP_STATX;
		q.addr2 = inproc_put(ip, NULL, sizeof(struct ur_statx));
		break;
	}
	int32_t res = inproc_run1(ip, &q);
	if (w->op == READ && res > 0)
		memcpy(rbuf, ip->base + q.addr, (size_t)res);
	if (w->op == STATX && res == 0)
		memcpy(rbuf, ip->base + q.addr2, sizeof(struct ur_statx));
	return res;
}

/* What a successful step does to the model. */
static void apply(int i, int32_t res)
{
	const struct step *w = &wl[i];
	struct mfile *f = &mf[w->file];
	switch (w->op) {
	case OPEN:
		f->fd = res;
		break;
	case CLOSE:
		f->fd = -1;
		break;
	case WRITE:
		pattern(f->cur + w->off, w->off, w->len, w->pat);
		if (w->off + w->len > f->size)
			f->size = w->off + w->len;
		touch(f, w->off, w->off + w->len);
		break;
	case TRUNC:
		if (w->off > f->size)
			memset(f->cur + f->size, 0, w->off - f->size);
		touch(f, w->off < f->size ? w->off : f->size, FMAX);
		f->size = w->off;
		break;
	case FSYNC:
		memcpy(f->claim, f->cur, FMAX);
		f->claim_size = f->size;
		f->claimed = 1;
		memset(f->touched, 0, FMAX);
		break;
	}
}

static struct sfs *mount_or_die(struct sfs_dev *d, unsigned flags)
{
	struct sfs *fs;
	char err[256] = "";
	int r = sfs_mount_dev(d, flags, 0, &fs, err, sizeof err);
	if (r)
		FAIL("mount: %s (%s)", strerror(-r), err);
	return fs;
}

static void fsck_clean(struct sfs_dev *d, const char *what)
{
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";
	int r = sfs_fsck_dev(d, 0, &res, NULL, NULL, err, sizeof err);
	if (r || res.errors_found)
		FAIL("%s: fsck returned %d (%s), %u errors", what, r, err, res.errors_found);
}

static uint8_t pristine[SIZE];
static unsigned n_runs, n_injected, n_err_cqes, n_refusing, n_cancel_free;

/* One run of the workload; ops/n/count/err: the fault (n 0: none). */
static void run(unsigned ops, uint64_t n, uint64_t count, int err, int *hit)
{
	static uint8_t rbuf[FMAX];
	static struct inproc ip;
	char what[96];
	snprintf(what, sizeof what, "fault ops %#x n %llu count %llu err %d", ops,
		 (unsigned long long)n, (unsigned long long)count, err);
	struct sfs_dev *fdev = sfs_faultdev_new(SIZE);
	CHECK(fdev != NULL);
	CHECK_EQ(fdev->pwrite(fdev, pristine, SIZE, 0), 0);
	CHECK_EQ(fdev->sync(fdev), 0);
	struct sfs_dev *dev = sfs_errdev_new(fdev, 0);
	CHECK(dev != NULL);
	struct sfs *fs = mount_or_die(dev, 0);
	inproc_start(&ip, fs, 8, 16, 64 * 1024);
	memset(mf, 0, sizeof mf);
	for (int k = 0; k < NFILES; k++)
		mf[k].fd = -1;
	sfs_errdev_arm(dev, ops, n, count, err);
	uint64_t inj = 0;
	for (int i = 0; i < NSTEPS; i++) {
		const struct step *w = &wl[i];
		int32_t res = run_step(&ip, i, rbuf);
		uint64_t inj_now = sfs_errdev_injected(dev);
		int ok = as_modelled(i, res, rbuf);
		if (inj_now > inj && res >= 0)
			FAIL("%s: step %d (op %d) hit the fault and returned %d", what, i, w->op, res);
		if (!ok) {
			if (inj_now == 0)
				FAIL("%s: step %d (op %d) returned %d before any fault", what, i, w->op, res);
			if (res >= 0)
				FAIL("%s: step %d (op %d) returned %d, not what the model says", what, i,
				     w->op, res);
			if (res != err && res != -EIO && !(res == -EBADF && mf[w->file].fd < 0))
				FAIL("%s: step %d (op %d) returned %d (%s), not the fault's error", what, i,
				     w->op, res, strerror(-res));
			n_err_cqes++;
			if (w->op == WRITE)
				touch(&mf[w->file], w->off, w->off + w->len);   /* undefined now */
			if (w->op == TRUNC)
				touch(&mf[w->file], 0, FMAX);
			if (w->op == OPEN)
				mf[w->file].fd = -1;
			if (w->op == CLOSE)
				mf[w->file].fd = -1;
		} else {
			apply(i, res);
		}
		if (getenv("FAULT_TRACE")) fprintf(stderr, "step %d op %d file %d res %d inj %llu\n", i, w->op, w->file, res, (unsigned long long)inj_now);
		inj = inj_now;
		struct ur_sqe nop = { .opcode = UR_OP_NOP, .user_data = 7 };
		CHECK_EQ(inproc_run1(&ip, &nop), 0);
	}
	inproc_fini(&ip);
	int ur = sfs_unmount(fs);
	inj = sfs_errdev_injected(dev);       /* the unmount's calls count too */
	*hit = inj > 0;
	if (!inj && ur)
		FAIL("%s: unmount returned %d with no fault injected", what, ur);
	if (ur)
		n_refusing++;
	n_injected += (unsigned)inj;
	n_runs++;
	sfs_dev_free(dev);

	/* The power cut: what the syncs made durable survives. */
	sfs_faultdev_crash(fdev);
	fsck_clean(fdev, what);
	fs = mount_or_die(fdev, 0);
	for (int k = 0; k < NFILES; k++) {
		struct mfile *f = &mf[k];
		if (!f->claimed)
			continue;
		int fd = sfs_file_open(fs, names[k], SFS_O_RDONLY);
		if (fd < 0)
			FAIL("%s: %s was fsynced and is gone", what, names[k]);
		ssize_t got = sfs_file_pread(fs, fd, rbuf, FMAX, 0);
		CHECK(got >= 0);
		for (uint32_t b = 0; b < f->claim_size; b++) {
			if (f->touched[b])
				continue;
			if ((uint32_t)got <= b || rbuf[b] != f->claim[b])
				FAIL("%s: %s: fsynced byte %u lost (size %zd)", what, names[k], b, got);
		}
		sfs_file_close(fs, fd);
	}
	int fd = sfs_file_open(fs, "new", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "after", 5, 0), 5);
	CHECK_EQ(sfs_file_fsync(fs, fd), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	fsck_clean(fdev, what);
	sfs_dev_free(fdev);
}

static void read_only(void)
{
	static struct inproc ip;
	struct sfs_dev *mem = sfs_memdev_new(pristine, SIZE, SIZE);
	CHECK(mem != NULL);
	struct sfs *fs = mount_or_die(mem, 0);
	int fd = sfs_file_open(fs, "ro", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "kept", 4, 0), 4);
	CHECK_EQ(sfs_unmount(fs), 0);
	fs = mount_or_die(mem, SFS_MOUNT_RDONLY);
	inproc_start(&ip, fs, 8, 16, 64 * 1024);
	struct ur_sqe q = { .opcode = UR_OP_OPENAT, .user_data = 1 };
	q.addr = inproc_put(&ip, "ro", 2);
	q.len = 2;
	int32_t h = inproc_run1(&ip, &q);
	CHECK(h >= 0);
	q.op_flags = UR_O_CREAT;
	q.addr = inproc_put(&ip, "new", 3);
	q.len = 3;
	CHECK_EQ(inproc_run1(&ip, &q), -EROFS);
	q = (struct ur_sqe){ .opcode = UR_OP_WRITE, .fd = h, .len = 4, .user_data = 2 };
	q.addr = inproc_put(&ip, "xxxx", 4);
	int32_t r = inproc_run1(&ip, &q);
	CHECK(r == -EROFS || r == -EBADF);
	q = (struct ur_sqe){ .opcode = UR_OP_FTRUNCATE, .fd = h, .user_data = 3 };
	r = inproc_run1(&ip, &q);
	CHECK(r == -EROFS || r == -EBADF);
	q = (struct ur_sqe){ .opcode = UR_OP_UNLINK, .len = 2, .user_data = 4 };
	q.addr = inproc_put(&ip, "ro", 2);
	CHECK_EQ(inproc_run1(&ip, &q), -EROFS);
	q = (struct ur_sqe){ .opcode = UR_OP_READ, .fd = h, .len = 4, .user_data = 5 };
	q.addr = inproc_put(&ip, NULL, 4);
	CHECK_EQ(inproc_run1(&ip, &q), 4);
	CHECK(memcmp(ip.base + q.addr, "kept", 4) == 0);
	q = (struct ur_sqe){ .opcode = UR_OP_FSYNC, .fd = h, .user_data = 6 };
	CHECK_EQ(inproc_run1(&ip, &q), 0);
	q = (struct ur_sqe){ .opcode = UR_OP_NOP, .user_data = 7 };
	CHECK_EQ(inproc_run1(&ip, &q), 0);
	inproc_fini(&ip);
	CHECK_EQ(sfs_unmount(fs), 0);
	sfs_dev_free(mem);
}

int main(void)
{
	struct sfs_dev *mem = sfs_memdev_new(NULL, 0, SIZE);
	CHECK(mem != NULL);
	CHECK_EQ(sfs_format_dev(mem, 62), 0);
	CHECK_EQ(mem->pread(mem, pristine, SIZE, 0), 0);
	sfs_dev_free(mem);

	int hit;
	run(0, 0, 0, 0, &hit);                   /* fault-free: the expected CQEs */
	static const struct { unsigned ops; uint64_t count; int err; } kinds[] = {
		{ SFS_ERR_READ, 1, -EIO },  { SFS_ERR_READ, 0, -EIO },
		{ SFS_ERR_WRITE, 1, -EIO }, { SFS_ERR_WRITE, 0, -EIO },
		{ SFS_ERR_SYNC, 1, -EIO },  { SFS_ERR_SYNC, 0, -EIO },
		{ SFS_ERR_WRITE, 1, -ENOSPC }, { SFS_ERR_WRITE, 0, -ENOSPC },
	};
	for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		unsigned runs = 0;
		for (uint64_t n = 1;; n++) {
			run(kinds[k].ops, n, kinds[k].count, kinds[k].err, &hit);
			if (!hit)
				break;
			runs++;
		}
		printf("%s %s %s: %u runs with a fault\n",
		       kinds[k].ops == SFS_ERR_READ ? "read" : kinds[k].ops == SFS_ERR_WRITE ? "write" : "sync",
		       kinds[k].err == -EIO ? "EIO" : "ENOSPC", kinds[k].count ? "once" : "for ever", runs);
	}
	read_only();
	printf("%u runs, %u faults injected, %u CQEs with an error, %u unmounts reported an error; "
	       "every image fsck-clean after a power cut with every fsynced byte\n",
	       n_runs, n_injected, n_err_cqes, n_refusing);
	(void)n_cancel_free;
	printf("ok\n");
	return 0;
}
