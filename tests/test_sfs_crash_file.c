/* SPDX-License-Identifier: MIT */
/* Description: crash safety on the real image file, SQLite-style. Programs run
 * on an image file with libcrashrec.so preloaded (tests/lib/crashrec.c), which
 * records every pwrite, hole punch, O_DIRECT AIO write and fdatasync/fsync of
 * the image in order, as the file device and the server really do them; the
 * scenario adds its claims (a file holds at least N bytes of its pattern, or
 * is gone) once a program has said they are durable. The trace is then
 * replayed on the reordering crash device (tests/test_crash_dev.h) and the
 * image rebuilt at every cut point - after each write or punch: (a) all
 * since the last sync lost (once per sync interval), (b) all kept, (c)
 * CRASH_FILE_SEEDS random subsets of 512-byte sectors (so blocks are torn) -
 * and each image must pass fsck, mount (recovery), hold every claimed byte,
 * show no foreign byte (every byte of every file is its name's pattern, or
 * zero in a file written over zeros), know no other name, take a new file,
 * unmount and pass fsck again. Scenarios: the sfs tool's put and rm; a record
 * writer through libsfs (appends, fsync every third record, a truncate); the
 * ring server on a buffered image (writes, fsyncs, an unlink); the ring
 * server on an O_DIRECT image (in-place overwrites through kernel AIO).
 * Knobs: CRASH_FILE_SEEDS (default 2; the long pass: CRASH_FILE_SEEDS=40),
 * CRASH_FILE_SCENARIOS (default "tool,writer,ring,direct"). A scenario the
 * host cannot run (no O_DIRECT, no kernel AIO) is a SKIP-PART. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ur_fs.h"

#include "testutil.h"
#include "test_crash_dev.h"
#include "crash_trace.h"

#define IMG_SIZE (2u << 20)
#define FMAX     (256u << 10)

static char tdir[64], img[128], trace[128], preload[4200];
static unsigned seeds = 2;

/* The pattern of file name at off; files named z* were first written with zeros. */
static uint8_t pat(const char *name, uint64_t off)
{
	uint32_t h = 2166136261u;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	uint8_t b = (uint8_t)(h ^ (off * 7) ^ ((off >> 9) * 13));
	return b ? b : 1;
}

static void fill(uint8_t *buf, const char *name, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(name, off + i);
}

/* Append a claim to the trace (the recorder opens it O_APPEND too). */
static void claim(const char *name, uint64_t size)
{
	int fd = open(trace, O_WRONLY | O_APPEND | O_CREAT, 0600);
	CHECK(fd >= 0);
	struct ct_event ev = { .magic = CT_MAGIC, .type = CT_MARK, .pid = (uint32_t)getpid(),
			       .off = size, .len = strlen(name) };
	uint8_t b[sizeof ev + 32];
	memcpy(b, &ev, sizeof ev);
	memcpy(b + sizeof ev, name, ev.len);
	CHECK(write(fd, b, sizeof ev + ev.len) == (ssize_t)(sizeof ev + ev.len));
	CHECK(close(fd) == 0);
}

static void record_env(int on)
{
	if (on) {
		setenv("LD_PRELOAD", preload, 1);
		setenv("CRASHREC_TRACE", trace, 1);
		setenv("CRASHREC_IMAGE", img, 1);
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
	} else {
		unsetenv("LD_PRELOAD");
		unsetenv("CRASHREC_TRACE");
		unsetenv("CRASHREC_IMAGE");
	}
}

/* ---- scenarios (each writes img and trace) ---------------------------- */

static void run_cmd(const char *cmd)
{
	int st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("'%s' failed (status %d)", cmd, st);
}

static void host_file(const char *path, const char *name, size_t len)
{
	static uint8_t buf[FMAX];
	fill(buf, name, 0, len);
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0);
}

static void scen_tool(void)
{
	static const struct { const char *name; size_t len; } put[] = {
		{ "f1", 20000 }, { "f2", 70000 }, { "f3", 5000 },
	};
	char cmd[1024], host[160];
	const char *bin = getenv("UR_BIN");
	CHECK(bin != NULL);
	for (int i = 0; i < 3; i++) {
		snprintf(host, sizeof host, "%s/h-%s", tdir, put[i].name);
		host_file(host, put[i].name, put[i].len);
		snprintf(cmd, sizeof cmd, "\"%s/sfs\" put %s %s %s", bin, img, host, put[i].name);
		record_env(1);
		run_cmd(cmd);
		record_env(0);
		claim(put[i].name, put[i].len);
		if (i == 1) {
			claim("f1", CT_ANY);
			snprintf(cmd, sizeof cmd, "\"%s/sfs\" rm %s f1", bin, img);
			record_env(1);
			run_cmd(cmd);
			record_env(0);
			claim("f1", CT_ABSENT);
		}
	}
}

/* The record writer (runs in a child with the recorder preloaded). */
static int writer_main(void)
{
	static uint8_t buf[8192];
	struct sfs *fs = MOUNT_OR_DIE(img);
	int fd = sfs_file_open(fs, "log", SFS_O_CREAT | SFS_O_APPEND);
	CHECK(fd >= 0);
	uint64_t size = 0;
	for (int i = 0; i < 12; i++) {
		size_t len = 700 + (size_t)i * 613;
		fill(buf, "log", size, len);
		CHECK_EQ(sfs_file_write(fs, fd, buf, len), (long long)len);
		size += len;
		if (i % 3 == 2) {
			CHECK_EQ(sfs_file_fsync(fs, fd), 0);
			claim("log", size);
		}
		if (i == 7) {           /* cut the tail back to a record boundary */
			size -= len;
			CHECK_EQ(sfs_file_truncate(fs, fd, size), 0);
			CHECK_EQ(sfs_file_fsync(fs, fd), 0);
			claim("log", size);
		}
	}
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	return 0;
}

static void scen_writer(void)
{
	char cmd[600], self[256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = 0;
	snprintf(cmd, sizeof cmd, "'%s' --writer '%s' '%s'", self, img, trace);
	record_env(1);
	run_cmd(cmd);
	record_env(0);
}

static struct urfs_ring ring;

static int32_t one(struct urfs_sqe *s)
{
	struct urfs_cqe *c;
	urfs_sqe_set_data64(s, 1);
	CHECK(urfs_submit_and_wait(&ring, 1) >= 0);
	CHECK(urfs_wait_cqe(&ring, &c) == 0);
	int32_t r = c->res;
	urfs_cqe_seen(&ring, c);
	return r;
}

static struct urfs_sqe *sq(void)
{
	struct urfs_sqe *s = urfs_get_sqe(&ring);
	CHECK(s != NULL);
	return s;
}

/* The ring server: buffered, or O_DIRECT with in-place overwrites (AIO). */
static int scen_ring(int direct)
{
	static uint8_t buf[16384] __attribute__((aligned(4096)));
	struct urfs_params p = { .image = img, .flags = direct ? URFS_SETUP_DIRECT : 0 };
	record_env(1);
	int r = urfs_queue_init_params(8, &ring, &p);
	record_env(0);
	if (r < 0) {
		if (direct) {
			printf("SKIP-PART direct: the ring with an O_DIRECT image: %s (%s)\n", strerror(-r),
			       p.errmsg);
			return 0;
		}
		FAIL("queue_init: %s (%s)", strerror(-r), p.errmsg);
	}
	struct urfs_sqe *s = sq();
	const char *name = direct ? "zdirect" : "ring";
	urfs_prep_openat(s, name, URFS_O_CREAT);
	int fd = one(s);
	CHECK(fd >= 0);
	if (direct) {
		/* zeros first (allocating writes: the synchronous path), then the
		 * pattern over them in place, 8 KiB at a time (kernel AIO) */
		memset(buf, 0, sizeof buf);
		for (uint64_t off = 0; off < 65536; off += sizeof buf) {
			urfs_prep_write(s = sq(), fd, buf, sizeof buf, off);
			CHECK_EQ(one(s), (int)sizeof buf);
		}
		urfs_prep_fsync(s = sq(), fd, 0);
		CHECK_EQ(one(s), 0);
		for (uint64_t off = 0; off < 65536; off += 8192) {
			fill(buf, name, off, 8192);
			urfs_prep_write(s = sq(), fd, buf, 8192, off);
			CHECK_EQ(one(s), 8192);
			if (off % 16384 == 8192) {
				urfs_prep_fsync(s = sq(), fd, 0);
				CHECK_EQ(one(s), 0);
				claim(name, off + 8192);
			}
		}
	} else {
		urfs_prep_openat(s = sq(), "gone", URFS_O_CREAT);
		int g = one(s);
		CHECK(g >= 0);
		fill(buf, "gone", 0, 9000);
		urfs_prep_write(s = sq(), g, buf, 9000, 0);
		CHECK_EQ(one(s), 9000);
		uint64_t size = 0;
		for (int i = 0; i < 8; i++) {
			size_t len = 1500 + (size_t)i * 1111;
			fill(buf, name, size, len);
			urfs_prep_write(s = sq(), fd, buf, (unsigned)len, size);
			CHECK_EQ(one(s), (int)len);
			size += len;
			if (i % 2 == 1) {
				urfs_prep_fsync(s = sq(), fd, 0);
				CHECK_EQ(one(s), 0);
				claim(name, size);
			}
			if (i == 3) {
				urfs_prep_fsync(s = sq(), g, 0);
				CHECK_EQ(one(s), 0);
				claim("gone", 9000);
				urfs_prep_close(s = sq(), g);
				CHECK_EQ(one(s), 0);
				claim("gone", CT_ANY);
				urfs_prep_unlink(s = sq(), "gone");
				CHECK_EQ(one(s), 0);
			}
			if (i == 5)
				claim("gone", CT_ABSENT);   /* the fsync of i == 5 committed the unlink */
		}
	}
	urfs_prep_close(s = sq(), fd);
	CHECK_EQ(one(s), 0);
	urfs_queue_exit(&ring);
	return 1;
}

/* ---- replay ------------------------------------------------------------ */

struct claimst { char name[32]; uint64_t size; };
static struct claimst claims[16];
static int nclaims;

static void set_claim(const char *name, size_t nlen, uint64_t size)
{
	int k;
	for (k = 0; k < nclaims; k++)
		if (strlen(claims[k].name) == nlen && !memcmp(claims[k].name, name, nlen))
			break;
	if (k == nclaims) {
		CHECK(nclaims < 16 && nlen < 32);
		memcpy(claims[k].name, name, nlen);
		claims[k].name[nlen] = 0;
		nclaims++;
	}
	claims[k].size = size;
}

static const char *const known[] = { "f1", "f2", "f3", "log", "ring", "gone", "zdirect", NULL };
static uint64_t n_states;

/* Check one crash image (bytes). */
static void check_image(const uint8_t *bytes, const char *what)
{
	static uint8_t rb[FMAX];
	struct sfs_dev *d = sfs_memdev_new(bytes, IMG_SIZE, IMG_SIZE);
	CHECK(d != NULL);
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";
	int r = sfs_fsck_dev(d, 0, &res, NULL, NULL, err, sizeof err);
	if (r || res.errors_found)
		FAIL("%s: fsck returned %d (%s), %u errors", what, r, err, res.errors_found);
	struct sfs *fs;
	if ((r = sfs_mount_dev(d, 0, 0, &fs, err, sizeof err)))
		FAIL("%s: mount: %s (%s)", what, strerror(-r), err);
	for (int k = 0; k < nclaims; k++) {
		struct sfs_stat st;
		r = sfs_stat(fs, claims[k].name, &st);
		if (claims[k].size == CT_ANY)
			continue;
		if (claims[k].size == CT_ABSENT) {
			if (r != -ENOENT)
				FAIL("%s: %s was durably removed and is back", what, claims[k].name);
		} else if (r || st.size < claims[k].size) {
			FAIL("%s: %s: %s, size %" PRIu64 ", claimed %" PRIu64, what, claims[k].name,
			     r ? strerror(-r) : "there", r ? 0 : st.size, claims[k].size);
		} else {
			/* the claimed bytes are the pattern, zeros not allowed */
			int fd = sfs_file_open(fs, claims[k].name, SFS_O_RDONLY);
			CHECK(fd >= 0 && claims[k].size <= FMAX);
			CHECK_EQ(sfs_file_pread(fs, fd, rb, claims[k].size, 0), (long long)claims[k].size);
			for (uint64_t o = 0; o < claims[k].size; o++)
				if (rb[o] != pat(claims[k].name, o))
					FAIL("%s: %s: claimed byte %" PRIu64 " is %#x, not %#x", what,
					     claims[k].name, o, rb[o], pat(claims[k].name, o));
			CHECK_EQ(sfs_file_close(fs, fd), 0);
		}
	}
	uint32_t cookie = 0;
	struct sfs_stat st;
	while ((r = sfs_readdir(fs, &cookie, &st)) == 1) {
		int ok = 0;
		for (int k = 0; known[k]; k++)
			ok |= !strcmp(known[k], st.name);
		if (!ok)
			FAIL("%s: unknown file '%s'", what, st.name);
		int fd = sfs_file_open(fs, st.name, SFS_O_RDONLY);
		CHECK(fd >= 0);
		CHECK(st.size <= FMAX);
		CHECK_EQ(sfs_file_pread(fs, fd, rb, FMAX, 0), (long long)st.size);
		for (uint64_t o = 0; o < st.size; o++)
			if (rb[o] != pat(st.name, o) && !(st.name[0] == 'z' && rb[o] == 0))
				FAIL("%s: %s: byte %" PRIu64 " is %#x, not its pattern %#x", what, st.name, o,
				     rb[o], pat(st.name, o));
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	CHECK_EQ(r, 0);
	int fd = sfs_file_open(fs, "zz-new", SFS_O_CREAT);
	if (fd < 0)
		FAIL("%s: a new file: %s", what, strerror(-fd));
	memset(rb, 'n', 10000);
	CHECK_EQ(sfs_file_pwrite(fs, fd, rb, 10000, 0), 10000);
	CHECK_EQ(sfs_file_fsync(fs, fd), 0);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	if (sfs_fsck_dev(d, 0, &res, NULL, NULL, err, sizeof err) || res.errors_found)
		FAIL("%s: after new writes fsck found %u errors", what, res.errors_found);
	sfs_dev_free(d);
	n_states++;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	CHECK(fseek(f, 0, SEEK_END) == 0);
	long n = ftell(f);
	CHECK(n >= 0);
	rewind(f);
	uint8_t *b = malloc((size_t)n + 1);
	CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static void replay(const char *scen, const uint8_t *base)
{
	size_t tlen;
	uint8_t *t = slurp(trace, &tlen);
	static uint8_t out[IMG_SIZE];
	char what[128];
	struct sfs_dev *d = rdev_new(IMG_SIZE);
	struct rdev *rd = (struct rdev *)d;
	memcpy(rd->cur, base, IMG_SIZE);
	memcpy(rd->dur, base, IMG_SIZE);
	nclaims = 0;
	uint64_t n_ev = 0, n_sync = 0, n_cut = 0, n_marks = 0;
	uint64_t s0 = n_states;
	int lost_checked = 1;             /* the base is checked as the first "lost" image */
	memcpy(out, rd->dur, IMG_SIZE);
	snprintf(what, sizeof what, "%s: before the first write", scen);
	check_image(out, what);
	for (size_t pos = 0; pos < tlen;) {
		struct ct_event ev;
		CHECK(tlen - pos >= sizeof ev);
		memcpy(&ev, t + pos, sizeof ev);
		CHECK_EQ(ev.magic, CT_MAGIC);
		const uint8_t *data = t + pos + sizeof ev;
		size_t dl = ev.type == CT_WRITE || ev.type == CT_MARK ? (size_t)ev.len : 0;
		CHECK(tlen - pos - sizeof ev >= dl);
		pos += sizeof ev + dl;
		n_ev++;
		if (ev.type == CT_MARK) {
			set_claim((const char *)data, dl, ev.off);
			n_marks++;
			continue;
		}
		if (ev.type == CT_SYNC) {
			d->sync(d);
			n_sync++;
			lost_checked = 0;
			continue;
		}
		CHECK(ev.off <= IMG_SIZE && ev.len <= IMG_SIZE - ev.off);
		if (ev.type == CT_WRITE) {
			CHECK_EQ(d->pwrite(d, data, dl, ev.off), 0);
		} else {
			static uint8_t zero[IMG_SIZE];
			CHECK_EQ(d->pwrite(d, zero, ev.len, ev.off), 0);
		}
		n_cut++;
		/* the cut after this event */
		if (!lost_checked) {
			memcpy(out, rd->dur, IMG_SIZE);
			snprintf(what, sizeof what, "%s: event %" PRIu64 ", all since the sync lost", scen, n_ev);
			check_image(out, what);
			lost_checked = 1;
		}
		memcpy(out, rd->dur, IMG_SIZE);
		rdev_torn(rd, out, 0, 512, RDEV_KEEP_ALL);
		snprintf(what, sizeof what, "%s: event %" PRIu64 ", all kept", scen, n_ev);
		check_image(out, what);
		for (unsigned sd = 1; sd <= seeds; sd++) {
			memcpy(out, rd->dur, IMG_SIZE);
			rdev_torn(rd, out, n_ev * 1000 + sd, 512, RDEV_KEEP_RANDOM);
			snprintf(what, sizeof what, "%s: event %" PRIu64 ", sectors seed %u", scen, n_ev, sd);
			check_image(out, what);
		}
	}
	/* the end of the run: everything kept */
	memcpy(out, rd->dur, IMG_SIZE);
	rdev_torn(rd, out, 0, 512, RDEV_KEEP_ALL);
	snprintf(what, sizeof what, "%s: the end", scen);
	check_image(out, what);
	if (n_marks == 0)
		FAIL("%s: the scenario made no claim", scen);
	printf("%-7s %4" PRIu64 " events (%" PRIu64 " syncs, %" PRIu64 " claims): %4" PRIu64
	       " cut points, %5" PRIu64 " crash images checked\n", scen, n_ev, n_sync, n_marks, n_cut,
	       n_states - s0);
	sfs_dev_free(d);
	free(t);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--writer")) {
		snprintf(img, sizeof img, "%s", argv[2]);
		snprintf(trace, sizeof trace, "%s", argv[3]);
		return writer_main();
	}
	const char *e = getenv("CRASH_FILE_SEEDS");
	if (e)
		seeds = (unsigned)atoi(e);
	const char *which = getenv("CRASH_FILE_SCENARIOS");
	if (!which)
		which = "tool,writer,ring,direct";
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	CHECK(n > 0);
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(preload, sizeof preload, "%s/libcrashrec.so", self);
	if (access(preload, R_OK) != 0)
		FAIL("%s: %s (make all builds it)", preload, strerror(errno));
	if (!getenv("UR_BIN")) {
		printf("UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	snprintf(tdir, sizeof tdir, "/tmp/sfs_crashfile.XXXXXX");
	CHECK(mkdtemp(tdir) != NULL);
	snprintf(img, sizeof img, "%s/img.sfs", tdir);
	snprintf(trace, sizeof trace, "%s/trace", tdir);
	static uint8_t base[IMG_SIZE];
	static const char *const scen[] = { "tool", "writer", "ring", "direct" };
	for (int k = 0; k < 4; k++) {
		if (!strstr(which, scen[k]))
			continue;
		unlink(img);
		unlink(trace);
		CHECK_EQ(sfs_format(img, IMG_SIZE, 31), 0);
		int fd = open(img, O_RDONLY);
		CHECK(fd >= 0 && pread(fd, base, IMG_SIZE, 0) == IMG_SIZE && close(fd) == 0);
		int ran = 1;
		switch (k) {
		case 0: scen_tool(); break;
		case 1: scen_writer(); break;
		case 2: ran = scen_ring(0); break;
		case 3: ran = scen_ring(1); break;
		}
		if (ran)
			replay(scen[k], base);
	}
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
	CHECK(system(cmd) == 0);
	printf("%" PRIu64 " crash images checked (%u random sector subsets per cut point)\n", n_states, seeds);
	printf("ok\n");
	return 0;
}
