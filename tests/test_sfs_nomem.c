/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS when memory runs out. Every allocation libsfs.a
 * makes (malloc, calloc, realloc, posix_memalign: this test is linked with
 * the linker's --wrap for them, see the Makefile) is made to fail in turn,
 * one per run, in a workload (on a plain and on an O_DIRECT mount, whose
 * unaligned buffers go through a bounce buffer) of mount, create, writes, fsync, a read, truncate, unlink, a directory listing,
 * unmount (each run in a thread of its own); then in format and fsck. Each
 * call either does its work or returns -ENOMEM (fsck and format: an error),
 * never another answer and never a crash, and only the call whose allocation
 * failed answers -ENOMEM (memory that comes back is used again); after a
 * failure the run goes on as a program would (a failed mount is retried, a
 * failed step is left), the unmount succeeds, and then the image is
 * fsck-clean and holds every file whose writes were reported done and
 * synced, byte for byte. ASan's run checks that no failure path leaks or
 * touches freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sfs.h"
#include "testutil.h"

#define IMG "nomem.sfs"
#define DATA (256u * 1024u)

/* The allocator seen by libsfs.a (and this file): the k-th allocation
 * (counting from 1 while counting is on) fails once; 0: none. */
static unsigned long n_alloc, fail_at;
static int counting;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t s);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);

static int fail_now(void)
{
	if (!counting)
		return 0;
	return ++n_alloc == fail_at;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t s)
{
	return fail_now() ? NULL : __real_calloc(n, s);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	return fail_now() ? ENOMEM : __real_posix_memalign(p, a, n);
}

/* data is never 4096-aligned: an O_DIRECT mount copies it through its bounce buffer */
static unsigned char data_at[DATA + 1], back[DATA];
#define data (data_at + 1)
static unsigned enomem;          /* calls that answered -ENOMEM in a run */

/* A call's answer r (>= 0 or -errno): 1 done, 0 out of memory; anything
 * else fails the test. */
static int done(long r, const char *what)
{
	if (r >= 0)
		return 1;
	if (r == -ENOMEM) {
		enomem++;
		return 0;
	}
	FAIL("%s: %s (allocation %lu failing)", what, strerror((int)-r), fail_at);
	return 0;
}

/* What the workload promises survives: a.dat and c.dat written and synced,
 * b.dat truncated to 4096 bytes and synced, d.dat unlinked, as far as each
 * step reported success. */
struct outcome {
	int a, b_trunc, c, d_gone;
};

static unsigned mflags;           /* the workload's mount: 0 or SFS_MOUNT_DIRECT */

static struct sfs *mount_retry(void)
{
	struct sfs *fs = NULL;
	char err[256];
	for (int tries = 0; tries < 2; tries++) {
		int r = sfs_mount(IMG, mflags, &fs, err, sizeof err);
		if (done(r, "mount"))
			return fs;
	}
	FAIL("mount failed twice with one failing allocation");
	return NULL;
}

static void workload(struct outcome *o)
{
	memset(o, 0, sizeof *o);
	struct sfs *fs = mount_retry();
	int fd = sfs_file_open(fs, "a.dat", SFS_O_CREAT);
	if (done(fd, "open a.dat")) {
		int ok = 1;
		for (unsigned off = 0; off < DATA && ok; off += 65536) {
			ssize_t w = sfs_file_pwrite(fs, fd, data + off, 65536, off);
			if ((ok = done(w, "write a.dat")))
				CHECK_EQ(w, 65536);
		}
		if (ok && done(sfs_file_fsync(fs, fd), "fsync a.dat"))
			o->a = 1;
		if (done(sfs_file_pread(fs, fd, back, DATA, 0), "read a.dat") && o->a)
			CHECK(!memcmp(back, data, DATA));
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	fd = sfs_file_open(fs, "b.dat", 0);            /* made before the runs */
	if (done(fd, "open b.dat")) {
		if (done(sfs_file_truncate(fs, fd, 4096), "truncate b.dat") &&
		    done(sfs_file_fsync(fs, fd), "fsync b.dat"))
			o->b_trunc = 1;
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	fd = sfs_file_open(fs, "c.dat", SFS_O_CREAT | SFS_O_TRUNC);
	if (done(fd, "open c.dat")) {
		ssize_t w = sfs_file_pwrite(fs, fd, data, 8192, 0);
		if (done(w, "write c.dat") && done(sfs_sync(fs), "sync")) {
			CHECK_EQ(w, 8192);
			o->c = 1;
		}
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	if (done(sfs_unlink(fs, "d.dat"), "unlink d.dat") && done(sfs_sync(fs), "sync"))
		o->d_gone = 1;
	uint32_t cookie = 0;
	struct sfs_stat st;
	int r;
	while ((r = sfs_readdir(fs, &cookie, &st)) == 1)
		;
	done(r, "readdir");
	CHECK_EQ(sfs_unmount(fs), 0);
}

/* The image as it was before a run: b.dat and d.dat of DATA bytes each. */
static void fresh_image(void)
{
	counting = 0;
	unlink(IMG);
	CHECK_EQ(sfs_format(IMG, 32ull << 20, 0), 0);
	struct sfs *fs;
	char err[256];
	CHECK_EQ(sfs_mount(IMG, 0, &fs, err, sizeof err), 0);
	const char *names[] = { "b.dat", "d.dat" };
	for (int i = 0; i < 2; i++) {
		int fd = sfs_file_open(fs, names[i], SFS_O_CREAT);
		CHECK(fd >= 0);
		CHECK_EQ(sfs_file_pwrite(fs, fd, data, DATA, 0), (ssize_t)DATA);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
}

static void verify(const struct outcome *o)
{
	struct sfs_fsck_result res;
	char err[256];
	CHECK_EQ(sfs_fsck(IMG, 0, &res, NULL, NULL, err, sizeof err), 0);
	if (res.errors_found)
		FAIL("fsck found %u errors after allocation %lu failed", res.errors_found, fail_at);
	struct sfs *fs;
	CHECK_EQ(sfs_mount(IMG, SFS_MOUNT_RDONLY, &fs, err, sizeof err), 0);
	struct sfs_stat st;
	if (o->a) {
		int fd = sfs_file_open(fs, "a.dat", SFS_O_RDONLY);
		CHECK(fd >= 0);
		CHECK_EQ(sfs_file_pread(fs, fd, back, DATA, 0), (ssize_t)DATA);
		CHECK(!memcmp(back, data, DATA));
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	CHECK_EQ(sfs_stat(fs, "b.dat", &st), 0);
	CHECK_EQ(st.size, o->b_trunc ? 4096u : (uint64_t)DATA);
	if (o->c) {
		CHECK_EQ(sfs_stat(fs, "c.dat", &st), 0);
		CHECK_EQ(st.size, 8192u);
	}
	if (o->d_gone)
		CHECK_EQ(sfs_stat(fs, "d.dat", &st), -ENOENT);
	CHECK_EQ(sfs_unmount(fs), 0);
}

/* The workload in a thread of its own, so that per-thread buffers (the
 * O_DIRECT bounce buffer) are allocated in every run. */
static void *workload_thread(void *o)
{
	workload(o);
	return NULL;
}

static void run_workload(struct outcome *o)
{
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, workload_thread, o), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
}

/* The workload once with no failure (counting its allocations), then once
 * per allocation with that one failing. */
static void sweep(const char *label)
{
	struct outcome o;
	fresh_image();
	n_alloc = 0;
	fail_at = 0;
	enomem = 0;
	counting = 1;
	run_workload(&o);
	counting = 0;
	CHECK_EQ(enomem, 0u);
	unsigned long total = n_alloc;
	CHECK(o.a && o.b_trunc && o.c && o.d_gone);
	verify(&o);
	CHECK(total > 10);

	unsigned long failed_calls = 0;
	for (fail_at = 1; fail_at <= total; fail_at++) {
		fresh_image();
		enomem = 0;
		n_alloc = 0;
		counting = 1;
		run_workload(&o);
		counting = 0;
		verify(&o);
		if (enomem > 1)
			FAIL("%s: one failing allocation (%lu) made %u calls answer -ENOMEM: "
			     "memory that came back is not used again", label, fail_at, enomem);
		failed_calls += enomem;
	}
	printf("%s: %lu runs, allocation 1 to %lu failing: %lu calls answered -ENOMEM, "
	       "every image fsck-clean with what was reported done\n", label, total, total, failed_calls);
	CHECK(failed_calls > 0);
}

int main(void)
{
	for (unsigned i = 0; i < DATA; i++)
		data[i] = (unsigned char)(i * 31 + (i >> 12));

	char why[256];
	for (int direct = 0; direct < 2; direct++) {
		if (direct && !tu_have_odirect(".", why, sizeof why)) {
			tu_part_skip("O_DIRECT", "the workload on an O_DIRECT mount", why);
			continue;
		}
		if (direct)
			tu_part_ran("O_DIRECT", "the workload on an O_DIRECT mount");
		mflags = direct ? SFS_MOUNT_DIRECT : 0;
		sweep(direct ? "O_DIRECT mount" : "mount");
	}

	/* format and fsck themselves, each allocation failing in turn */
	unsigned long fmt_fail = 0, fsck_fail = 0;
	for (fail_at = 1; fail_at < 200; fail_at++) {
		unlink(IMG);
		n_alloc = 0;
		counting = 1;
		int r = sfs_format(IMG, 32ull << 20, 0);
		counting = 0;
		if (r == 0 && n_alloc < fail_at)
			break;                  /* past the last allocation */
		if (r != 0)
			fmt_fail++;
	}
	fresh_image();
	for (fail_at = 1; fail_at < 200; fail_at++) {
		struct sfs_fsck_result res;
		char err[256] = "";
		n_alloc = 0;
		counting = 1;
		int r = sfs_fsck(IMG, 0, &res, NULL, NULL, err, sizeof err);
		counting = 0;
		if (r == 0 && n_alloc < fail_at)
			break;
		if (r != 0)
			fsck_fail++;
		else
			CHECK_EQ(res.errors_found, 0u);   /* no memory is no corruption */
	}
	printf("format: %lu failing allocations refused; fsck: %lu\n", fmt_fail, fsck_fail);
	printf("PASS\n");
	return 0;
}
