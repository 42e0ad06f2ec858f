/* SPDX-License-Identifier: MIT */
/*
 * db.c - `bench db`: database page patterns (8 KiB pages, O_DIRECT) through
 * channels (include/ur_chan.h) on every engine - the kernel's io_uring and
 * pread/pwrite on host files, this project's engine on a file inside a
 * SimpleFS image opened O_DIRECT - next to plain pwrite/pread loops:
 *   page writes in batches (10, 100, 500, 1000), random page reads (16 ..
 *   4096 pages over a 512 MiB file), a mixed OLTP pattern (70 % reads, 30 %
 *   writes, fdatasync every N ops), and a per-phase breakdown of one
 *   100-page batch next to one pwrite. Medians over --iters iterations.
 * Every page carries bench's stamps (offset + seed per 512-byte sector): what
 * is read is checked after each timed iteration, so a fast wrong answer
 * fails the run. Must never: allocate, print or check inside a timed region,
 * or report a figure from a run that had an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "db.h"
#include "sfs.h"
#include "ur_chan.h"

#define PG 8192u
#define MAXB 4096u                 /* largest batch (random reads) */
#define NENG 3

static const char *prog = "bench db";

struct dbopt {
	char dir[PATH_MAX];
	char image[PATH_MAX];
	unsigned iters;
	uint64_t size;             /* the page file */
	uint64_t seed;
	int quick;
	int image_default;         /* O.image is DIR/db.sfs, bench's own */
	int want[NENG];            /* io_uring, ur, psync */
	unsigned oltp_ops, oltp_force, oltp_group;
	unsigned ring;             /* channel ring entries */
	FILE *csv;
};

struct eng {
	int engine;
	const char *name;
	struct urch *ch;
	void *fixed[MAXB];
	int nfixed;                /* 0: no fixed buffers (why in fwhy) */
	char why[200], fwhy[200];
	int ok;
};

static struct dbopt O;
static struct eng E[NENG] = {
	{ .engine = URCH_IO_URING, .name = "io_uring" },
	{ .engine = URCH_UR, .name = "ur" },
	{ .engine = URCH_PSYNC, .name = "psync" },
};
static int host_fd = -1, host_dsync = -1;
static char *bufs;                 /* MAXB pages, aligned */
static uint64_t pos[MAXB];
static double *samples;
static int failed;

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */
static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t rng_s;
static uint64_t rnd(void)
{
	rng_s ^= rng_s << 13;
	rng_s ^= rng_s >> 7;
	rng_s ^= rng_s << 17;
	return rng_s;
}

/* n distinct random page positions in a file of size bytes. */
static void pick(uint64_t size, unsigned n, uint64_t seed)
{
	uint64_t pages = size / PG;
	static unsigned char *seen;
	static uint64_t seen_pages;
	if (seen_pages < pages) {
		free(seen);
		seen = calloc(pages / 8 + 1, 1);
		seen_pages = pages;
		if (!seen) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(1);
		}
	}
	memset(seen, 0, pages / 8 + 1);
	rng_s = seed * 0x9e3779b97f4a7c15ull + 1;
	for (unsigned i = 0; i < n; i++) {
		uint64_t p;
		do
			p = rnd() % pages;
		while (seen[p / 8] & (1u << (p % 8)));
		seen[p / 8] |= (unsigned char)(1u << (p % 8));
		pos[i] = p * PG;
	}
}

static void stamp_pages(char *const *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		bench_stamp_fill(b[i], PG, pos[i], O.seed);
}

static int check_pages(char *const *b, unsigned n, const char *what)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t bad;
		if (bench_stamp_check(b[i], PG, pos[i], O.seed, &bad) < 0) {
			fprintf(stderr, "%s: %s: wrong data at offset %llu (page at %llu)\n", prog,
				what, (unsigned long long)bad, (unsigned long long)pos[i]);
			failed = 1;
			return -1;
		}
	}
	return 0;
}

static char *pbuf[MAXB];           /* page buffers of the current method */

static void use_plain(void)
{
	for (unsigned i = 0; i < MAXB; i++)
		pbuf[i] = bufs + (size_t)i * PG;
}

static int use_fixed(const struct eng *e)
{
	if (!e->nfixed)
		return -1;
	for (unsigned i = 0; i < MAXB; i++)
		pbuf[i] = e->fixed[i % (unsigned)e->nfixed];
	return 0;
}

/* ---------------------------------------------------------------------------
 * Preparation: the page file on the host and inside the image, stamped.
 * ------------------------------------------------------------------------- */
static int prepare_image(char *why, size_t n)
{
	struct stat st;
	int r;
	uint64_t need = O.size + (256ull << 20);
	/* bench's own default image is remade when too small; a given one never */
	if (stat(O.image, &st) < 0 || (O.image_default && (uint64_t)st.st_size < need)) {
		r = sfs_format(O.image, need, 0);
		if (r < 0) {
			snprintf(why, n, "format %.100s: %s", O.image, strerror(-r));
			return r;
		}
	}
	struct urch_opts o = { .image = O.image, .ring_entries = 64 };
	struct urch *ch;
	r = urch_open_opts("dbfile", URCH_CREATE, URCH_UR, &o, &ch);
	if (r < 0) {
		snprintf(why, n, "open dbfile in %.100s: %s", O.image, strerror(-r));
		return r;
	}
	int ok = urch_size(ch) == (int64_t)O.size;
	for (unsigned k = 0; ok && k < 3; k++) {
		uint64_t p = (O.size / PG - 1) * k / 2 * PG;
		ok = urch_read_fully(ch, bufs, PG, p) == PG &&
		     bench_stamp_check(bufs, PG, p, O.seed, NULL) == 0;
	}
	if (!ok) {
		const size_t cs = 1u << 20;
		char *chunk = bufs;            /* MAXB pages: more than cs */
		bench_stamp_body(chunk, cs);
		fprintf(stderr, "%s: writing dbfile in %s (%llu MiB)...\n", prog, O.image,
			(unsigned long long)(O.size >> 20));
		r = urch_truncate(ch, 0);
		for (uint64_t off = 0; r >= 0 && off < O.size; off += cs) {
			size_t len = O.size - off < cs ? (size_t)(O.size - off) : cs;
			bench_stamp_fill(chunk, len, off, O.seed);
			int64_t w = urch_write_fully(ch, chunk, len, off);
			r = w < 0 ? (int)w : 0;
		}
		if (r >= 0)
			r = urch_force(ch, 1);
		if (r < 0) {
			snprintf(why, n, "fill dbfile in %.100s: %s%s", O.image, strerror(-r),
				 r == -ENOSPC ? " (image too small)" : "");
			urch_close(ch);
			return r;
		}
	}
	return urch_close(ch);
}

static void open_engines(const char *path)
{
	for (int i = 0; i < NENG; i++) {
		struct eng *e = &E[i];
		struct urch_opts o = { .ring_entries = O.ring, .image = O.image,
				       .reg_area = (size_t)MAXB * PG + (1u << 20),
				       .staging = 16u << 20 };
		int r;
		if (!O.want[i]) {
			snprintf(e->why, sizeof(e->why), "not asked for");
			continue;
		}
		if (e->engine == URCH_UR) {
			char why[200];
			r = prepare_image(why, sizeof(why));
			if (r < 0) {
				snprintf(e->why, sizeof(e->why), "%s", why);
				continue;
			}
			r = urch_open_opts("dbfile", URCH_DIRECT, URCH_UR, &o, &e->ch);
		} else {
			r = urch_open_opts(path, URCH_DIRECT, e->engine, &o, &e->ch);
		}
		if (r < 0) {
			snprintf(e->why, sizeof(e->why), "open: %s%s", strerror(-r),
				 r == -ENOSYS || r == -EPERM ? " (io_uring unavailable here)" : "");
			continue;
		}
		r = urch_register_buffers(e->ch, PG, MAXB, e->fixed);
		if (r < 0)
			snprintf(e->fwhy, sizeof(e->fwhy), "register buffers: %s", strerror(-r));
		else
			e->nfixed = MAXB;
		e->ok = 1;
	}
}

/* ---------------------------------------------------------------------------
 * Methods: one timed iteration over n pages at pos[] through pbuf[].
 * ------------------------------------------------------------------------- */
enum { M_LOOP, M_LOOP_DSYNC, M_SINGLE, M_BATCH, M_FIXED };
static const char *mname[] = { "loop", "loop O_DSYNC", "channel one at a time",
			       "channel batch", "channel batch + fixed bufs" };

static struct urch_op ops[MAXB];

static int batch_err(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ops[i].result != PG)
			return ops[i].result < 0 ? (int)ops[i].result : -EIO;
	return -EIO;
}

/* ns, or -errno */
static int64_t once(int m, struct eng *e, int write, unsigned n)
{
	uint64_t t0 = bench_now_ns();
	int64_t r;
	switch (m) {
	case M_LOOP:
	case M_LOOP_DSYNC: {
		int fd = m == M_LOOP ? host_fd : host_dsync;
		for (unsigned i = 0; i < n; i++) {
			ssize_t k = write ? pwrite(fd, pbuf[i], PG, (off_t)pos[i])
					  : pread(fd, pbuf[i], PG, (off_t)pos[i]);
			if (k != PG)
				return k < 0 ? -errno : -EIO;
		}
		break;
	}
	case M_SINGLE:
		for (unsigned i = 0; i < n; i++) {
			r = write ? urch_write(e->ch, pbuf[i], PG, pos[i])
				  : urch_read(e->ch, pbuf[i], PG, pos[i]);
			if (r != PG)
				return r < 0 ? r : -EIO;
		}
		break;
	default:
		for (unsigned i = 0; i < n; i++) {
			ops[i].pos = pos[i];
			ops[i].buf = pbuf[i];
			ops[i].len = PG;
		}
		r = write ? urch_batch_write_fully(e->ch, ops, n) : urch_batch_read_fully(e->ch, ops, n);
		if (r < 0)
			return r;
		if (r > 0)
			return batch_err(n);
	}
	return (int64_t)(bench_now_ns() - t0);
}

/* Median ms over the iterations (after one warm-up), or -errno. */
static double measure(int m, struct eng *e, int write, unsigned n, unsigned salt, char *why,
		      size_t wn)
{
	if (m == M_FIXED) {
		if (use_fixed(e) < 0) {
			snprintf(why, wn, "%s", e->fwhy);
			return -1;
		}
	} else {
		use_plain();
	}
	struct urch_stats st0 = { 0, 0 }, st1;
	if (e)
		urch_get_stats(e->ch, &st0);
	for (unsigned it = 0; it <= O.iters; it++) {
		pick(O.size, n, (uint64_t)salt * 7919 + it * 131 + n);
		if (write)
			stamp_pages(pbuf, n);
		int64_t t = once(m, e, write, n);
		if (t < 0) {
			snprintf(why, wn, "%s", strerror((int)-t));
			failed = 1;
			return -1;
		}
		if (!write && check_pages(pbuf, n, mname[m]) < 0) {
			snprintf(why, wn, "wrong data read");
			return -1;
		}
		if (it)
			samples[it - 1] = (double)t / 1e6;
	}
	/* a "fixed bufs" figure must come from fixed ops (zero copy) */
	if (m == M_FIXED && e->engine != URCH_PSYNC && urch_get_stats(e->ch, &st1) == 0 &&
	    st1.fixed_ops - st0.fixed_ops < (uint64_t)n * (O.iters + 1)) {
		snprintf(why, wn, "the fixed-buffer path was not taken");
		failed = 1;
		return -1;
	}
	return median(samples, O.iters);
}

static void row(const char *section, unsigned n, const char *method, double ms, double base_ms,
		const char *why)
{
	if (ms < 0) {
		printf("| %5u | %-36s | skipped: %s |\n", n, method, why);
		return;
	}
	double opms = n / ms, mbs = n * (double)PG / 1e6 / (ms / 1e3);
	char ratio[32] = "";
	if (base_ms > 0)
		snprintf(ratio, sizeof(ratio), "%.2fx", base_ms / ms);
	printf("| %5u | %-36s | %9.3f | %8.2f | %8.1f | %7s |\n", n, method, ms, opms, mbs, ratio);
	if (O.csv)
		fprintf(O.csv, "%s,%u,%s,%.6f,%.4f,%.2f\n", section, n, method, ms, opms, mbs);
	fflush(stdout);
}

static void table_head(const char *title)
{
	printf("\n### %s\n\n", title);
	printf("| pages | method                               |        ms |   ops/ms |     MB/s | vs loop |\n");
	printf("|------:|--------------------------------------|----------:|---------:|---------:|--------:|\n");
}

/* ratio[engine][0]: 100-page writes batch / pwrite loop; [1]: 512 reads */
static double ratio_w[NENG][2], ratio_r[NENG][2];

static void section_rw(int write, const unsigned *sizes, unsigned nsizes)
{
	char why[200], label[80];
	table_head(write ? "Page writes, 8 KiB, O_DIRECT, random pages (median ms per batch)"
			 : "Random page reads, 8 KiB, O_DIRECT (median ms per batch)");
	for (unsigned s = 0; s < nsizes; s++) {
		unsigned n = sizes[s];
		double base = measure(M_LOOP, NULL, write, n, 1, why, sizeof(why));
		row(write ? "write" : "read", n, write ? "pwrite loop" : "pread loop", base, -1, why);
		if (write) {
			double d = measure(M_LOOP_DSYNC, NULL, 1, n, 1, why, sizeof(why));
			row("write", n, "pwrite loop O_DSYNC", d, base, why);
		}
		for (int i = 0; i < NENG; i++) {
			struct eng *e = &E[i];
			if (!e->ok)
				continue;
			for (int m = M_SINGLE; m <= M_FIXED; m++) {
				if (m == M_SINGLE && n > 1000 && O.quick)
					continue;
				double ms = measure(m, e, write, n, 1, why, sizeof(why));
				snprintf(label, sizeof(label), "%s: %s", e->name, mname[m]);
				row(write ? "write" : "read", n, label, ms, base, why);
				if (ms > 0 && base > 0 && m >= M_BATCH && n == (write ? 100u : 512u)) {
					double *rt = write ? ratio_w[i] : ratio_r[i];
					rt[m - M_BATCH] = base / ms;
				}
			}
		}
	}
}

/* ---------------------------------------------------------------------------
 * Mixed OLTP: 70 % reads, 30 % writes, in groups of oltp_group ops (one read
 * batch and one write batch per group), fdatasync every oltp_force ops.
 * ------------------------------------------------------------------------- */
static unsigned char isw[MAXB];

static int64_t oltp_once(int m, struct eng *e, unsigned n)
{
	uint64_t t0 = bench_now_ns();
	unsigned G = O.oltp_group, F = O.oltp_force;
	for (unsigned g = 0; g < n; g += G) {
		unsigned end = g + G < n ? g + G : n;
		if (m == M_LOOP || m == M_SINGLE) {
			for (unsigned i = g; i < end; i++) {
				int64_t k;
				if (m == M_LOOP)
					k = isw[i] ? pwrite(host_fd, pbuf[i], PG, (off_t)pos[i])
						   : pread(host_fd, pbuf[i], PG, (off_t)pos[i]);
				else
					k = isw[i] ? urch_write(e->ch, pbuf[i], PG, pos[i])
						   : urch_read(e->ch, pbuf[i], PG, pos[i]);
				if (k != PG)
					return k < 0 ? (m == M_LOOP ? -errno : k) : -EIO;
			}
		} else {
			for (int w = 0; w < 2; w++) {
				unsigned k = 0;
				for (unsigned i = g; i < end; i++)
					if (isw[i] == w) {
						ops[k].pos = pos[i];
						ops[k].buf = pbuf[i];
						ops[k].len = PG;
						k++;
					}
				if (!k)
					continue;
				int r = w ? urch_batch_write_fully(e->ch, ops, k)
					  : urch_batch_read_fully(e->ch, ops, k);
				if (r < 0)
					return r;
				if (r > 0)
					return batch_err(k);
			}
		}
		if ((end % F) == 0 || end == n) {
			int r = m == M_LOOP ? (fdatasync(host_fd) < 0 ? -errno : 0) : urch_force(e->ch, 0);
			if (r < 0)
				return r;
		}
	}
	return (int64_t)(bench_now_ns() - t0);
}

static void section_oltp(void)
{
	char why[200], label[80];
	unsigned n = O.oltp_ops;
	printf("\n### Mixed OLTP: %u ops, 70%% reads / 30%% writes, groups of %u (one read batch + one write batch), fdatasync every %u ops (median ms per run)\n\n",
	       n, O.oltp_group, O.oltp_force);
	printf("| ops   | method                               |        ms |   ops/ms |     MB/s | vs loop |\n");
	printf("|------:|--------------------------------------|----------:|---------:|---------:|--------:|\n");
	double base = -1;
	for (int i = -1; i < NENG; i++) {
		struct eng *e = i < 0 ? NULL : &E[i];
		if (e && !e->ok)
			continue;
		for (int m = M_LOOP; m <= M_FIXED; m++) {
			if ((!e) != (m == M_LOOP) || m == M_LOOP_DSYNC)
				continue;
			double ms = -1;
			if (m == M_FIXED && use_fixed(e) < 0) {
				snprintf(why, sizeof(why), "%s", e->fwhy);
			} else {
				if (m != M_FIXED)
					use_plain();
				for (unsigned it = 0; it <= O.iters; it++) {
					pick(O.size, n, 99991u + it);
					for (unsigned k = 0; k < n; k++)
						isw[k] = rnd() % 100 < 30;
					stamp_pages(pbuf, n);
					int64_t t = oltp_once(m, e, n);
					if (t < 0) {
						snprintf(why, sizeof(why), "%s", strerror((int)-t));
						failed = 1;
						ms = -1;
						break;
					}
					if (check_pages(pbuf, n, "oltp") < 0) {
						snprintf(why, sizeof(why), "wrong data read");
						ms = -1;
						break;
					}
					if (it)
						samples[it - 1] = (double)t / 1e6;
					ms = 0;
				}
				if (ms == 0)
					ms = median(samples, O.iters);
			}
			if (!e)
				base = ms;
			snprintf(label, sizeof(label), "%s%s%s", e ? e->name : "pread/pwrite loop",
				 e ? ": " : "", e ? mname[m] : "");
			row("oltp", n, label, ms, e ? base : -1, why);
		}
	}
}

/* ---------------------------------------------------------------------------
 * Per-phase breakdown of one 100-page write batch.
 * ------------------------------------------------------------------------- */
static void section_phases(void)
{
	const unsigned n = 100;
	unsigned it;
	double *ph[5];
	for (int k = 0; k < 5; k++) {
		ph[k] = calloc(O.iters, sizeof(double));
		if (!ph[k]) {
			fprintf(stderr, "%s: out of memory\n", prog);
			exit(1);
		}
	}
	use_plain();
	for (it = 0; it < O.iters; it++) {
		pick(O.size, 1, 4242 + it);
		bench_stamp_fill(pbuf[0], PG, pos[0], O.seed);
		uint64_t t0 = bench_now_ns();
		ssize_t k = pwrite(host_fd, pbuf[0], PG, (off_t)pos[0]);
		uint64_t t1 = bench_now_ns();
		if (k != PG) {
			fprintf(stderr, "%s: pwrite: %s\n", prog, k < 0 ? strerror(errno) : "short");
			failed = 1;
			return;
		}
		samples[it] = (double)(t1 - t0) / 1e3;
	}
	double one_pwrite = median(samples, O.iters);
	printf("\n### One 100-page write batch, phase by phase (median µs over %u)\n\n", O.iters);
	printf("| engine   | prepare | submit+collect | result check |   total | unaccounted | µs/page | one pwrite |\n");
	printf("|----------|--------:|---------------:|-------------:|--------:|------------:|--------:|-----------:|\n");
	for (int i = 0; i < NENG; i++) {
		struct eng *e = &E[i];
		if (!e->ok)
			continue;
		int bad = 0;
		for (it = 0; it < O.iters && !bad; it++) {
			pick(O.size, n, 777 + it);
			stamp_pages(pbuf, n);
			uint64_t ta = bench_now_ns();
			uint64_t t0 = bench_now_ns();
			for (unsigned j = 0; j < n; j++) {
				ops[j].pos = pos[j];
				ops[j].buf = pbuf[j];
				ops[j].len = PG;
				ops[j].result = 0;
			}
			uint64_t t1 = bench_now_ns();
			int r = urch_batch_write_fully(e->ch, ops, n);
			uint64_t t2 = bench_now_ns();
			unsigned okc = 0;
			for (unsigned j = 0; j < n; j++)
				okc += ops[j].result == PG;
			uint64_t t3 = bench_now_ns();
			uint64_t tb = bench_now_ns();
			if (r != 0 || okc != n) {
				fprintf(stderr, "%s: phases: %s: batch failed (%d)\n", prog, e->name, r);
				failed = bad = 1;
			}
			ph[0][it] = (double)(t1 - t0) / 1e3;
			ph[1][it] = (double)(t2 - t1) / 1e3;
			ph[2][it] = (double)(t3 - t2) / 1e3;
			ph[3][it] = (double)(tb - ta) / 1e3;
			ph[4][it] = ph[3][it] - ph[0][it] - ph[1][it] - ph[2][it];
		}
		if (bad)
			continue;
		double m[5];
		for (int k = 0; k < 5; k++)
			m[k] = median(ph[k], O.iters);
		printf("| %-8s | %7.2f | %14.1f | %12.2f | %7.1f | %11.2f | %7.2f | %10.1f |\n", e->name,
		       m[0], m[1], m[2], m[3], m[4], m[3] / n, one_pwrite);
		if (O.csv)
			fprintf(O.csv, "phases,%u,%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", n, e->name, m[0],
				m[1], m[2], m[3], m[4], one_pwrite);
	}
	for (int k = 0; k < 5; k++)
		free(ph[k]);
}

/* ---------------------------------------------------------------------------
 * Entry point
 * ------------------------------------------------------------------------- */
static void usage(FILE *f)
{
	fprintf(f,
"usage: bench db [options]\n"
"  database page patterns, 8 KiB pages, O_DIRECT, through channels (ur_chan.h)\n"
"  --dir DIR       where the host page file 'dbfile' is (default .)\n"
"  --image PATH    the SimpleFS image for the ur engine (default $SFS_IMAGE, else\n"
"                  DIR/db.sfs; only that one is remade when too small)\n"
"  --engine LIST   io_uring,ur,psync (default all)\n"
"  --iters N       iterations per figure, median reported (default 30)\n"
"  --size BYTES    page file size (default 512M)\n"
"  --quick         5 iterations, 128 MiB file, fewer single-op runs\n"
"  --csv FILE      also write every figure as CSV\n"
"  --ring N        channel ring entries (default 256)\n"
"  --seed N        stamp seed (default 1)\n");
}

int bench_db_main(int argc, char **argv)
{
	char path[PATH_MAX + 16], *csv = NULL;
	int size_set = 0, iters_set = 0;
	memset(&O, 0, sizeof(O));
	strcpy(O.dir, ".");
	O.iters = 30;
	O.size = 512ull << 20;
	O.seed = 1;
	O.want[0] = O.want[1] = O.want[2] = 1;
	O.oltp_ops = 1000;
	O.oltp_force = 100;
	O.oltp_group = 10;
	O.ring = 256;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--quick")) {
			O.quick = 1;
		} else if (v && !strcmp(a, "--dir")) {
			snprintf(O.dir, sizeof(O.dir), "%s", v);
			i++;
		} else if (v && !strcmp(a, "--image")) {
			snprintf(O.image, sizeof(O.image), "%s", v);
			i++;
		} else if (v && !strcmp(a, "--iters")) {
			O.iters = (unsigned)strtoul(v, NULL, 10);
			iters_set = 1;
			i++;
		} else if (v && !strcmp(a, "--ring")) {
			O.ring = (unsigned)strtoul(v, NULL, 10);
			i++;
		} else if (v && !strcmp(a, "--seed")) {
			O.seed = strtoull(v, NULL, 10);
			i++;
		} else if (v && !strcmp(a, "--csv")) {
			csv = (char *)v;
			i++;
		} else if (v && !strcmp(a, "--size")) {
			if (bench_parse_size(v, &O.size) < 0) {
				fprintf(stderr, "%s: bad size '%s'\n", prog, v);
				return 2;
			}
			size_set = 1;
			i++;
		} else if (v && !strcmp(a, "--engine")) {
			O.want[0] = !!strstr(v, "io_uring");
			O.want[1] = !!strstr(v, "ur") && (strstr(v, "ur,") == v || strstr(v, ",ur") ||
						      !strcmp(v, "ur"));
			O.want[2] = !!strstr(v, "psync");
			i++;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
			usage(stderr);
			return 2;
		}
	}
	if (O.quick) {
		if (!iters_set)
			O.iters = 5;
		if (!size_set)
			O.size = 128ull << 20;
		O.oltp_ops = 200;
	}
	if (!O.iters || !O.ring || O.ring > 32768 || O.size < (uint64_t)MAXB * PG * 2 || O.size % PG) {
		fprintf(stderr, "%s: --iters and --ring (<= 32768) must be > 0 and --size a multiple of 8 KiB, at least 64 MiB\n",
			prog);
		return 2;
	}
	if (!O.image[0] && getenv("SFS_IMAGE") && *getenv("SFS_IMAGE")) {
		snprintf(O.image, sizeof(O.image), "%s", getenv("SFS_IMAGE"));   /* as run and sweep */
	} else if (!O.image[0]) {
		snprintf(O.image, sizeof(O.image), "%s/db.sfs", O.dir);
		O.image_default = 1;
	}
	snprintf(path, sizeof(path), "%s/dbfile", O.dir);
	if (csv && !(O.csv = fopen(csv, "w"))) {
		fprintf(stderr, "%s: %s: %s\n", prog, csv, strerror(errno));
		return 1;
	}
	if (O.csv)
		fprintf(O.csv, "section,pages,method,ms,ops_per_ms,mb_s\n");
	bufs = aligned_alloc(4096, (size_t)MAXB * PG);
	samples = calloc(O.iters + 1, sizeof(double));
	if (!bufs || !samples) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	char why[256];
	if (bench_prepare_hostfile(path, O.size, O.seed, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return 1;
	}
	host_fd = open(path, O_RDWR | O_DIRECT | O_CLOEXEC);
	host_dsync = open(path, O_RDWR | O_DIRECT | O_DSYNC | O_CLOEXEC);
	if (host_fd < 0 || host_dsync < 0) {
		fprintf(stderr, "%s: open %s O_DIRECT: %s\n", prog, path, strerror(errno));
		return 1;
	}
	/* the fill's dirty pages must not be written back during the timing */
	if (fsync(host_fd) < 0) {
		fprintf(stderr, "%s: fsync %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	open_engines(path);
	sync();
	printf("## bench db: 8 KiB pages, O_DIRECT, %u iterations (median), page file %llu MiB\n\n",
	       O.iters, (unsigned long long)(O.size >> 20));
	bench_setup_info(stdout, O.dir);
	for (int i = 0; i < NENG; i++) {
		if (!E[i].ok)
			printf("engine %s: skipped: %s\n", E[i].name, E[i].why);
		else if (!E[i].nfixed)
			printf("engine %s: fixed buffers skipped: %s\n", E[i].name, E[i].fwhy);
	}
	printf("engines: io_uring and psync on %s; ur on 'dbfile' in %s (image opened O_DIRECT);\n"
	       "channel rings of %u entries; fixed buffers: %u of 8 KiB per channel\n",
	       path, O.image, O.ring, MAXB);

	static const unsigned wsz[] = { 10, 100, 500, 1000 };
	static const unsigned rsz[] = { 16, 64, 256, 512, 4096 };
	section_rw(1, wsz, 4);
	section_rw(0, rsz, 5);
	section_oltp();
	section_phases();

	printf("\n### Ratios (channel batch over the loop)\n\n");
	printf("| engine   | 100-page writes: batch | fixed bufs | 512 random reads: batch | fixed bufs |\n");
	printf("|----------|-----------------------:|-----------:|------------------------:|-----------:|\n");
	for (int i = 0; i < NENG; i++)
		if (E[i].ok)
			printf("| %-8s | %21.2fx | %9.2fx | %22.2fx | %9.2fx |\n", E[i].name,
			       ratio_w[i][0], ratio_w[i][1], ratio_r[i][0], ratio_r[i][1]);

	for (int i = 0; i < NENG; i++)
		if (E[i].ch)
			urch_close(E[i].ch);
	close(host_fd);
	close(host_dsync);
	free(bufs);
	free(samples);
	if (O.csv)
		fclose(O.csv);
	if (failed)
		fprintf(stderr, "%s: FAILED (see above): the figures of failed runs are not reported\n",
			prog);
	return failed ? 1 : 0;
}
