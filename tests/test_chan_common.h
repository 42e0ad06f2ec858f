/* SPDX-License-Identifier: MIT */
/*
 * test_chan_common.h - helpers shared by tests/test_chan_*.c: the table of
 * channel configurations every test runs against (each engine, buffered and
 * O_DIRECT), a position-dependent byte pattern, and failure reporting.
 * Must never hide a failure: every check exits 1 with file:line.
 */
#ifndef TEST_CHAN_COMMON_H
#define TEST_CHAN_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sfs.h"
#include "ur_chan.h"
#include "parts.h"

#define FAIL(...) do { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c, ...) do { if (!(c)) FAIL(__VA_ARGS__); } while (0)

struct cfg {
	const char *label;
	int engine;
	unsigned flags;       /* URCH_DIRECT or 0 */
	const char *path;     /* host file, or the name inside the image */
	const char *image;    /* UR: the image */
};

static const struct cfg cfgs[] = {
	{ "psync",           URCH_PSYNC,    0,           "f.dat", NULL },
	{ "psync+direct",    URCH_PSYNC,    URCH_DIRECT, "fd.dat", NULL },
	{ "io_uring",        URCH_IO_URING, 0,           "u.dat", NULL },
	{ "io_uring+direct", URCH_IO_URING, URCH_DIRECT, "ud.dat", NULL },
	{ "ur",              URCH_UR,       0,           "f",      "t.sfs" },
	{ "ur+direct",       URCH_UR,       URCH_DIRECT, "f",      "td.sfs" },
};
#define NCFG (sizeof(cfgs) / sizeof(cfgs[0]))

static inline unsigned char pat(uint64_t pos, unsigned seed)
{
	uint64_t x = pos * 0x9e3779b97f4a7c15ull + seed * 0x2545f4914f6cdd1dull;
	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (unsigned char)(x | 1);    /* never 0: a gap is told from data */
}

static inline void fillpat(void *buf, size_t len, uint64_t pos, unsigned seed)
{
	unsigned char *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = pat(pos + i, seed);
}

/* Open with the configuration's engine; 77-style skip reason in why. */
static inline int cfg_open(const struct cfg *c, unsigned flags, unsigned entries,
			   struct urch **ch)
{
	struct urch_opts o;
	memset(&o, 0, sizeof(o));
	o.image = c->image;
	o.ring_entries = entries;
	return urch_open_opts(c->path, flags | c->flags, c->engine, &o, ch);
}

/* Is this configuration runnable here? Probes the host independently of the code under test
 * (io_uring_setup, an O_DIRECT scratch file) and reports the configuration as a part that ran
 * or was skipped (tests/parts.h); formats the UR image. Then the channel must open: a failure
 * of the code under test where the host could is a failure, never a skip. 1: run it. */
static inline int cfg_runnable(const struct cfg *c)
{
	char why[160];
	if (c->engine == URCH_IO_URING && !tu_have_io_uring(why, sizeof(why))) {
		tu_part_skip("io_uring", c->label, why);
		return 0;
	}
	if ((c->flags & URCH_DIRECT) && !tu_have_odirect(".", why, sizeof(why))) {
		tu_part_skip("O_DIRECT", c->label, why);
		return 0;
	}
	if (c->engine == URCH_UR) {
		int r = sfs_format(c->image, 64ull << 20, 0);
		if (r < 0)
			FAIL("format %s: %s", c->image, strerror(-r));
	}
	struct urch *ch;
	int r = cfg_open(c, URCH_CREATE, 8, &ch);
	if (r < 0)
		FAIL("%s: open %s: %s", c->label, c->path, strerror(-r));
	urch_close(ch);
	if (c->engine == URCH_IO_URING)
		tu_part_ran("io_uring", c->label);
	else if (c->flags & URCH_DIRECT)
		tu_part_ran("O_DIRECT", c->label);
	return 1;
}

/* Read a whole file from outside the channel: host pread, or the sfs library. */
static inline int64_t outside_read(const struct cfg *c, void *buf, size_t cap)
{
	if (c->engine != URCH_UR) {
		FILE *f = fopen(c->path, "rb");
		if (!f)
			return -errno;
		size_t n = fread(buf, 1, cap, f);
		fclose(f);
		return (int64_t)n;
	}
	struct sfs *fs;
	char err[256];
	int r = sfs_mount(c->image, 0, &fs, err, sizeof(err));
	if (r < 0)
		FAIL("mount %s: %s (%s)", c->image, strerror(-r), err);
	int fd = sfs_file_open(fs, c->path, 0);
	if (fd < 0)
		FAIL("sfs open %s: %s", c->path, strerror(-fd));
	size_t got = 0;
	for (;;) {
		ssize_t n = sfs_file_pread(fs, fd, (char *)buf + got, cap - got, got);
		if (n < 0)
			FAIL("sfs pread: %s", strerror((int)-n));
		if (n == 0 || got + (size_t)n == cap) {
			got += (size_t)n;
			break;
		}
		got += (size_t)n;
	}
	sfs_file_close(fs, fd);
	sfs_unmount(fs);
	return (int64_t)got;
}

/* Write a whole file from outside (replacing it). */
static inline void outside_write(const struct cfg *c, const void *buf, size_t len)
{
	if (c->engine != URCH_UR) {
		FILE *f = fopen(c->path, "wb");
		if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
			FAIL("write %s", c->path);
		return;
	}
	struct sfs *fs;
	char err[256];
	int r = sfs_mount(c->image, 0, &fs, err, sizeof(err));
	if (r < 0)
		FAIL("mount %s: %s (%s)", c->image, strerror(-r), err);
	int fd = sfs_file_open(fs, c->path, SFS_O_CREAT);
	if (fd < 0)
		FAIL("sfs open %s: %s", c->path, strerror(-fd));
	if ((r = sfs_file_truncate(fs, fd, 0)) < 0)
		FAIL("sfs truncate: %s", strerror(-r));
	ssize_t n = sfs_file_pwrite(fs, fd, buf, len, 0);
	if (n != (ssize_t)len)
		FAIL("sfs pwrite: %zd", n);
	sfs_file_close(fs, fd);
	if ((r = sfs_unmount(fs)) < 0)
		FAIL("unmount: %s", strerror(-r));
}

/* The pid of our child simplefs_server, or -1. */
static inline pid_t child_server(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = -1, me = getpid();
	while (d && (e = readdir(d))) {
		char p[64], comm[64] = "", line[512];
		int pid = atoi(e->d_name), ppid = -1;
		if (pid <= 0)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/stat", pid);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f)) {
			char *rp = strrchr(line, ')');
			char *lp = strchr(line, '(');
			if (rp && lp && rp - lp - 1 < (long)sizeof(comm)) {
				memcpy(comm, lp + 1, (size_t)(rp - lp - 1));
				comm[rp - lp - 1] = 0;
				sscanf(rp + 2, "%*c %d", &ppid);
			}
		}
		fclose(f);
		if (ppid == me && !strncmp(comm, "simplefs_server", 15))
			found = pid;
	}
	if (d)
		closedir(d);
	return found;
}

#endif
