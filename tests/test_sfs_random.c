/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS under random operations on a nearly full 1 MiB image,
 * against a memory model: writes at random offsets (inside, at and past the
 * end), writes and reads at a handle's position, seeks, O_APPEND writes
 * through a second handle, truncates up and down, unlink and re-create, reopen, sync, remount;
 * the disk runs full again and again, so partial writes, -ENOSPC and reuse of
 * freed blocks happen all the time. Every reply is checked (a short write
 * stores exactly its count, -ENOSPC changes nothing), files are compared byte
 * for byte every 100 operations and after each remount, space is accounted
 * (blocks of all files + free = data blocks) and fsck is clean. Three seeds.
 *
 * It must never accept a reply the model cannot explain.
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { fprintf(stderr, "FAIL %s:%d: seed %u op %d: ", __FILE__, __LINE__, \
	seed, op); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#include "testutil.h"

#define NF     6
#define MAXSZ  (600u * 1024)
#define OPS    2500
#define BS     4096u
static const char *img = "random.sfs";
static unsigned seed;
static int op;

struct mf {
	char name[16];
	uint8_t d[MAXSZ];
	size_t size;
	int fd;           /* a plain handle; its position is pos */
	uint64_t pos;
	int afd;          /* an O_APPEND handle */
};
static struct mf F[NF];
static struct sfs *fs;
static uint64_t rs;

static uint32_t rnd(void)
{
	return (uint32_t)(tu_xorshift64(&rs) >> 11);
}

static void do_mount(void)
{
	char err[256] = "";
	int r = sfs_mount(img, 0, &fs, err, sizeof err);

	if (r < 0)
		FAIL("mount: %s (%s)", strerror(-r), err);
	for (int i = 0; i < NF; i++) {
		F[i].fd = sfs_file_open(fs, F[i].name, SFS_O_CREAT);
		if (F[i].fd < 0)
			FAIL("open %s: %s", F[i].name, strerror(-F[i].fd));
		F[i].afd = sfs_file_open(fs, F[i].name, SFS_O_APPEND);
		CHECK(F[i].afd >= 0);
		F[i].pos = 0;
	}
}

static void verify(void)
{
	static uint8_t buf[MAXSZ + 1];
	struct sfs_statfs sf;
	uint64_t used = 0;

	for (int i = 0; i < NF; i++) {
		struct sfs_stat st;
		ssize_t n = sfs_file_pread(fs, F[i].fd, buf, sizeof buf, 0);

		if (n != (ssize_t)F[i].size)
			FAIL("%s: read %zd bytes, expected %zu", F[i].name, n, F[i].size);
		if (memcmp(buf, F[i].d, F[i].size)) {
			size_t k = 0;

			while (buf[k] == F[i].d[k])
				k++;
			FAIL("%s: byte %zu is 0x%02x, expected 0x%02x", F[i].name, k, buf[k], F[i].d[k]);
		}
		CHECK_EQ(sfs_file_stat(fs, F[i].fd, &st), 0);
		CHECK_EQ(st.size, F[i].size);
		CHECK(st.blocks <= (st.size + BS - 1) / BS);
		used += st.blocks;
	}
	CHECK_EQ(sfs_sync(fs), 0);
	CHECK_EQ(sfs_statfs(fs, &sf), 0);
	CHECK_EQ(sf.files, NF);
	if (used + sf.free_blocks != sf.data_blocks)
		FAIL("%" PRIu64 " blocks in files + %" PRIu64 " free != %" PRIu64 " data blocks", used,
		     sf.free_blocks, sf.data_blocks);
}

static void remount(void)
{
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";

	for (int i = 0; i < NF; i++) {
		CHECK_EQ(sfs_file_close(fs, F[i].fd), 0);
		CHECK_EQ(sfs_file_close(fs, F[i].afd), 0);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(sfs_fsck(img, 0, &res, NULL, NULL, err, sizeof err), 0);
	if (res.errors_found)
		FAIL("fsck found %u errors", res.errors_found);
	do_mount();
	verify();
}

/* mode 0: pwrite at a random place; 1: write at the plain handle's position;
 * 2: write through the O_APPEND handle. */
static void one_write(struct mf *f, int mode)
{
	static uint8_t src[64 * 1024];
	size_t len = 1 + rnd() % (rnd() % 4 ? 8192 : sizeof src);
	uint64_t off;
	ssize_t n;

	switch (mode ? 4 : rnd() % 4) {
	case 0: off = f->size; break;                                  /* append */
	case 1: off = f->size + rnd() % 20000; break;                   /* past the end */
	case 4: off = mode == 1 ? f->pos : f->size; break;
	default: off = f->size ? rnd() % f->size : 0; break;           /* inside */
	}
	if (off + len > MAXSZ)
		return;
	for (size_t k = 0; k < len; k++)
		src[k] = (uint8_t)(rnd() | 0x80);
	if (mode == 0)
		n = sfs_file_pwrite(fs, f->fd, src, len, off);
	else
		n = sfs_file_write(fs, mode == 1 ? f->fd : f->afd, src, len);
	if (n == -ENOSPC) {
		if (mode == 1 && sfs_file_seek(fs, f->fd, 0, SEEK_CUR) != (int64_t)f->pos)
			FAIL("%s: a failed write moved the position", f->name);
		return;                          /* nothing changed: verify() will tell */
	}
	if (n <= 0 || (size_t)n > len)
		FAIL("%s: write(%zu at %" PRIu64 ", mode %d) returned %zd", f->name, len, off, mode, n);
	if (off > f->size)
		memset(f->d + f->size, 0, off - f->size);
	memcpy(f->d + off, src, (size_t)n);
	if (off + (uint64_t)n > f->size)
		f->size = off + (size_t)n;
	if (mode == 1)
		f->pos = off + (uint64_t)n;
	if (mode == 2 && sfs_file_seek(fs, f->afd, 0, SEEK_CUR) != (int64_t)f->size)
		FAIL("%s: the O_APPEND handle is not at the end after a write", f->name);
}

/* Read at the plain handle's position and compare; or move it. */
static void cursor_op(struct mf *f)
{
	static uint8_t buf[70000];

	if (rnd() % 2) {
		size_t len = 1 + rnd() % sizeof buf;
		size_t want = f->pos >= f->size ? 0 : (f->size - f->pos < len ? f->size - f->pos : len);
		ssize_t n = sfs_file_read(fs, f->fd, buf, len);

		if (n != (ssize_t)want || memcmp(buf, f->d + f->pos, want))
			FAIL("%s: read of %zu at position %" PRIu64 ": %zd bytes (expected %zu) or wrong",
			     f->name, len, f->pos, n, want);
		f->pos += want;
	} else {
		int whence = (int)(rnd() % 3);
		int64_t off, want;

		if (whence == SEEK_SET) {
			off = rnd() % (f->size + 10000);
			want = off;
		} else if (whence == SEEK_CUR) {
			off = (int64_t)(rnd() % 20000) - (int64_t)(f->pos < 10000 ? f->pos : 10000);
			want = (int64_t)f->pos + off;
		} else {
			off = (int64_t)(rnd() % 5000) - (int64_t)(rnd() % (f->size + 1));
			want = (int64_t)f->size + off;
		}
		if (sfs_file_seek(fs, f->fd, off, whence) != want)
			FAIL("%s: seek(%" PRId64 ", %d) from %" PRIu64 " (size %zu) is not %" PRId64,
			     f->name, off, whence, f->pos, f->size, want);
		f->pos = (uint64_t)want;
	}
}

static void run_seed(void)
{
	int r;

	rs = 0x2545F4914F6CDD1Dull * (seed + 1);
	r = sfs_format(img, 1u << 20, 64);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	for (int i = 0; i < NF; i++) {
		snprintf(F[i].name, sizeof F[i].name, "r%d", i);
		F[i].size = 0;
	}
	do_mount();
	for (op = 0; op < OPS; op++) {
		struct mf *f = &F[rnd() % NF];
		unsigned what = rnd() % 100;

		if (what < 45) {
			one_write(f, 0);
		} else if (what < 52) {
			one_write(f, 1);
		} else if (what < 57) {
			one_write(f, 2);
		} else if (what < 64) {
			cursor_op(f);
		} else if (what < 75) {                  /* truncate */
			size_t ns = rnd() % 2 ? (f->size ? rnd() % f->size : 0) : rnd() % MAXSZ;

			r = sfs_file_truncate(fs, f->fd, ns);
			if (r < 0)
				FAIL("%s: truncate to %zu: %s", f->name, ns, strerror(-r));
			if (ns > f->size)
				memset(f->d + f->size, 0, ns - f->size);
			f->size = ns;
		} else if (what < 82) {                  /* unlink, re-create */
			CHECK_EQ(sfs_unlink(fs, f->name), 0);
			if (rnd() % 2) {                     /* the orphan is written to first */
				r = (int)sfs_file_pwrite(fs, f->fd, "orphan", 6, 0);
				if (r != 6 && r != -ENOSPC)
					FAIL("write to an orphan: %d", r);
			}
			CHECK_EQ(sfs_file_close(fs, f->fd), 0);
			CHECK_EQ(sfs_file_close(fs, f->afd), 0);
			f->fd = sfs_file_open(fs, f->name, SFS_O_CREAT | SFS_O_EXCL);
			CHECK(f->fd >= 0);
			f->afd = sfs_file_open(fs, f->name, SFS_O_APPEND);
			CHECK(f->afd >= 0);
			f->size = 0;
			f->pos = 0;
		} else if (what < 90) {                  /* reopen */
			CHECK_EQ(sfs_file_close(fs, f->fd), 0);
			f->fd = sfs_file_open(fs, f->name, 0);
			CHECK(f->fd >= 0);
			f->pos = 0;
		} else if (what < 96) {
			r = rnd() % 2 ? sfs_sync(fs) : sfs_file_fsync(fs, f->fd);
			CHECK_EQ(r, 0);
		} else if (what < 98) {
			remount();
		} else {
			verify();
		}
		if (op % 100 == 99)
			verify();
	}
	remount();
	for (int i = 0; i < NF; i++) {
		CHECK_EQ(sfs_file_close(fs, F[i].fd), 0);
		CHECK_EQ(sfs_file_close(fs, F[i].afd), 0);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
}

int main(void)
{
	for (seed = 0; seed < 3; seed++)
		run_seed();
	printf("ok\n");
	return 0;
}
