/* SPDX-License-Identifier: MIT */
/*
 * eng_sfs.c - SimpleFS called directly (sfs_file_pread/pwrite on a mounted
 * image): the synchronous baseline of the engine. Also prepares the stamped
 * benchmark file inside the image for the ur engine. The image is the one the
 * job names (--image, $SFS_IMAGE, else DIR/disk.sfs), created when missing.
 * Must never leave the image mounted after cleanup or prepare.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "sfs.h"

struct sfsb {
	struct sfs *fs;
	int fd;
};

static int sample_ok(struct sfs *fs, int fd, uint64_t size, uint64_t seed, void *buf)
{
	uint64_t offs[3] = { 0, (size / 2) & ~4095ull, (size - 4096) & ~4095ull };
	for (int i = 0; i < 3; i++)
		if (sfs_file_pread(fs, fd, buf, 4096, offs[i]) != 4096 ||
		    bench_stamp_check(buf, 4096, offs[i], seed, NULL))
			return 0;
	return 1;
}

int bench_sfs_prepare(struct bench_td *td)
{
	const struct bench_job *job = td->job;
	char err[256] = "";
	struct sfs *fs = NULL;
	struct stat st;
	int e;

	/* A read-only look first: a read-only mount writes nothing and needs no
	 * sync at unmount (cheap on a disk that others keep busy). */
	if (stat(td->image, &st) == 0 &&
	    sfs_mount(td->image, SFS_MOUNT_RDONLY, &fs, err, sizeof(err)) == 0) {
		char *b = aligned_alloc(4096, 4096);
		int rfd = sfs_file_open(fs, td->fname, SFS_O_RDONLY);
		struct sfs_stat rst;
		int good = b && rfd >= 0 && sfs_file_stat(fs, rfd, &rst) == 0 &&
			   rst.size == job->size && job->size >= 4096 &&
			   sample_ok(fs, rfd, job->size, job->seed, b);
		if (rfd >= 0)
			sfs_file_close(fs, rfd);
		sfs_unmount(fs);
		free(b);
		fs = NULL;
		if (good)
			return 0;
	}
	err[0] = 0;
	if (stat(td->image, &st) < 0) {
		uint64_t isz = SFS_DEFAULT_SIZE;
		if (job->size + job->size / 8 + (64ull << 20) > isz)
			isz = job->size + job->size / 8 + (64ull << 20);
		e = sfs_format(td->image, isz, 0);
		if (e < 0)
			return bench_set_reason(td, e, "create SimpleFS image %s: %s", td->image,
						strerror(-e));
	}
	e = sfs_mount(td->image, 0, &fs, err, sizeof(err));
	if (e < 0)
		return bench_set_reason(td, e, "mount SimpleFS image %s: %s", td->image,
					err[0] ? err : strerror(-e));
	const size_t chunk = 1u << 20;
	char *buf = aligned_alloc(4096, chunk);
	int fd = sfs_file_open(fs, td->fname, SFS_O_CREAT);
	if (!buf || fd < 0) {
		e = buf ? fd : -ENOMEM;
		bench_set_reason(td, e, "open %s in %s: %s", td->fname, td->image, strerror(-e));
		goto out;
	}
	struct sfs_stat fst;
	e = sfs_file_stat(fs, fd, &fst);
	if (e < 0) {
		bench_set_reason(td, e, "stat %s in %s: %s", td->fname, td->image, strerror(-e));
		goto out;
	}
	if (fst.size == job->size && job->size >= 4096 && sample_ok(fs, fd, job->size, job->seed, buf))
		goto out;
	struct sfs_statfs sf;
	e = sfs_statfs(fs, &sf);
	if (e == 0 && (sf.free_blocks + fst.blocks) * sf.block_size < job->size) {
		e = bench_set_reason(td, -ENOSPC,
				     "SimpleFS image %s too small: %llu MiB free, the file needs %llu MiB "
				     "(use --image or remove it)", td->image,
				     (unsigned long long)((sf.free_blocks + fst.blocks) * sf.block_size >> 20),
				     (unsigned long long)(job->size >> 20));
		goto out;
	}
	if ((e = sfs_file_truncate(fs, fd, 0)) < 0) {
		bench_set_reason(td, e, "truncate %s in %s: %s", td->fname, td->image, strerror(-e));
		goto out;
	}
	bench_stamp_body(buf, chunk);
	for (uint64_t off = 0; off < job->size; off += chunk) {
		size_t len = job->size - off < chunk ? (size_t)(job->size - off) : chunk;
		bench_stamp_fill(buf, len, off, job->seed);
		ssize_t w = sfs_file_pwrite(fs, fd, buf, len, off);
		if (w != (ssize_t)len) {
			e = w < 0 ? (int)w : -EIO;
			bench_set_reason(td, e, "fill %s in %s: %s", td->fname, td->image,
					 strerror(-e));
			goto out;
		}
	}
	e = 0;
out:
	if (fd >= 0)
		sfs_file_close(fs, fd);
	int u = sfs_unmount(fs);
	if (u < 0 && e == 0)
		e = bench_set_reason(td, u, "unmount %s: %s", td->image, strerror(-u));
	free(buf);
	return e < 0 ? e : 0;
}

static void sfsb_cleanup(struct bench_td *td)
{
	struct sfsb *s = td->eng;
	if (!s)
		return;
	if (s->fd >= 0)
		sfs_file_close(s->fs, s->fd);
	if (s->fs)
		sfs_unmount(s->fs);
	free(s);
	td->eng = NULL;
}

static int sfsb_setup(struct bench_td *td)
{
	char err[256] = "";
	struct sfsb *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	td->eng = s;
	/* a read job mounts read-only: nothing to write back at unmount */
	int ro = td->job->rw == BENCH_RW_READ;
	int e = sfs_mount(td->image, (td->job->direct ? SFS_MOUNT_DIRECT : 0) |
			  (ro ? SFS_MOUNT_RDONLY : 0), &s->fs, err, sizeof(err));
	if (e < 0) {
		s->fs = NULL;
		sfsb_cleanup(td);
		return bench_set_reason(td, e, "mount SimpleFS image %s%s: %s", td->image,
					td->job->direct ? " (O_DIRECT)" : "", err[0] ? err : strerror(-e));
	}
	s->fd = sfs_file_open(s->fs, td->fname, ro ? SFS_O_RDONLY : 0);
	if (s->fd < 0) {
		e = s->fd;
		sfsb_cleanup(td);
		return bench_set_reason(td, e, "open %s in %s: %s", td->fname, td->image,
					strerror(-e));
	}
	return 0;
}

static int sfsb_queue(struct bench_td *td, struct bench_io *io)
{
	struct sfsb *s = td->eng;
	io->res = io->op == BENCH_OP_WRITE ? sfs_file_pwrite(s->fs, s->fd, io->buf, io->len, io->off)
					   : sfs_file_pread(s->fs, s->fd, io->buf, io->len, io->off);
	return BENCH_Q_COMPLETED;
}

const struct bench_engine_ops bench_eng_sfs = {
	.name = "sfs",
	.desc = "SimpleFS library called directly (synchronous)",
	.flags = BENCH_ENG_SYNC | BENCH_ENG_IMAGE,
	.prepare = bench_sfs_prepare,
	.setup = sfsb_setup,
	.queue = sfsb_queue,
	.cleanup = sfsb_cleanup,
};
