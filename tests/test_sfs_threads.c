/* SPDX-License-Identifier: MIT */
/* Description: one SimpleFS mount used by several threads at once, as the
 * server does: four writer threads each grow and overwrite their own file
 * (allocating, so metadata changes interleave) and fsync it, while four reader
 * threads pread a shared, already written file at random offsets and check
 * every byte, one thread keeps calling statfs/readdir/stat, and one creates,
 * writes, truncates and unlinks short-lived files (some unlinked while
 * open); afterwards every file is compared with what its writer wrote, and
 * fsck is clean. Every call (open, read, write, truncate, fsync, seek,
 * stat, readdir, close, unlink; succeeding or failing) returns with the
 * mount's lock released: another thread gets it after the caller is gone.
 *
 * It must never share a model between threads: each checks its own bytes.
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define NW      4
#define NR      4
#define WSIZE   (3u << 20)
#define SHARED  (4u << 20)
static const char *img = "threads.sfs";
static struct sfs *fs;
static atomic_int writers_done;
static uint8_t *wmodel[NW];
static size_t wsize[NW];

static uint8_t shared_byte(uint64_t p) { return (uint8_t)(p * 2654435761u >> 11); }

static void *writer(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t s = 1000 + (uint64_t)id;
	static __thread uint8_t buf[70000];
	char name[16];
	int fd;

	snprintf(name, sizeof name, "w%d", id);
	fd = sfs_file_open(fs, name, SFS_O_CREAT);
	CHECK(fd >= 0);
	for (int op = 0; op < 400; op++) {
		size_t len = 1 + tu_lcg32(&s) % sizeof buf;
		uint64_t off;
		ssize_t n;

		if (op % 3 == 2 && wsize[id])
			off = tu_lcg32(&s) % wsize[id];        /* overwrite (maybe growing) */
		else
			off = wsize[id];                  /* append */
		if (off + len > WSIZE)
			off = tu_lcg32(&s) % (WSIZE - len);
		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)(tu_lcg32(&s) | 1);
		n = sfs_file_pwrite(fs, fd, buf, len, off);
		if (n != (ssize_t)len)
			FAIL("writer %d: pwrite returned %zd", id, n);
		if (off > wsize[id])
			memset(wmodel[id] + wsize[id], 0, off - wsize[id]);
		memcpy(wmodel[id] + off, buf, len);
		if (off + len > wsize[id])
			wsize[id] = off + len;
		if (op % 50 == 49)
			CHECK_EQ(sfs_file_fsync(fs, fd), 0);
		if (op % 20 == 7) {                   /* read back a range of its own */
			static __thread uint8_t rb[70000];
			uint64_t ro = tu_lcg32(&s) % wsize[id];
			size_t rl = 1 + tu_lcg32(&s) % sizeof rb;

			if (rl > wsize[id] - ro)
				rl = wsize[id] - ro;
			n = sfs_file_pread(fs, fd, rb, rl, ro);
			if (n != (ssize_t)rl || memcmp(rb, wmodel[id] + ro, rl))
				FAIL("writer %d: read-back of [%" PRIu64 ", +%zu) differs", id, ro, rl);
		}
	}
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static void *reader(void *arg)
{
	uint64_t s = 77 + (uint64_t)(intptr_t)arg;
	static __thread uint8_t buf[1 << 17];
	int fd = sfs_file_open(fs, "shared", SFS_O_RDONLY);
	unsigned rounds = 0;

	CHECK(fd >= 0);
	while (atomic_load(&writers_done) < NW || rounds < 200) {
		uint64_t off = tu_lcg32(&s) % SHARED;
		size_t len = 1 + tu_lcg32(&s) % sizeof buf;
		ssize_t n = sfs_file_pread(fs, fd, buf, len, off);
		size_t want = SHARED - off < len ? SHARED - off : len;

		if (n != (ssize_t)want)
			FAIL("reader: pread returned %zd, expected %zu", n, want);
		for (size_t k = 0; k < want; k++)
			if (buf[k] != shared_byte(off + k))
				FAIL("reader: byte %" PRIu64 " wrong", off + k);
		rounds++;
	}
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	return NULL;
}

/* Creates, writes, fsyncs, truncates and unlinks short-lived files, so
 * directory and FAT changes and commits race with everything else. */
static void *churn(void *arg)
{
	uint64_t s = 555;
	static __thread uint8_t buf[20000], rb[20000];
	int n = 0;

	(void)arg;
	while (atomic_load(&writers_done) < NW || n < 50) {
		char name[16];
		size_t len = 1 + tu_lcg32(&s) % sizeof buf;
		int fd;

		snprintf(name, sizeof name, "tmp%d", n++ % 3);
		fd = sfs_file_open(fs, name, SFS_O_CREAT | SFS_O_EXCL);
		if (fd < 0)
			FAIL("churn: create %s: %s", name, strerror(-fd));
		memset(buf, n, len);
		CHECK_EQ(sfs_file_pwrite(fs, fd, buf, len, 0), (ssize_t)len);
		if (n % 4 == 0)
			CHECK_EQ(sfs_file_fsync(fs, fd), 0);
		CHECK_EQ(sfs_file_truncate(fs, fd, len / 2), 0);
		CHECK_EQ(sfs_file_pread(fs, fd, rb, sizeof rb, 0), (ssize_t)(len / 2));
		CHECK(memcmp(rb, buf, len / 2) == 0);
		CHECK_EQ(sfs_unlink(fs, name), 0);
		if (n % 2)
			CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 100, len), 100);   /* orphan */
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	return NULL;
}

static void *meta(void *arg)
{
	(void)arg;
	while (atomic_load(&writers_done) < NW) {
		struct sfs_statfs sf;
		struct sfs_stat st;
		uint32_t cookie = 0;
		int n = 0, r;

		CHECK_EQ(sfs_statfs(fs, &sf), 0);
		CHECK(sf.files >= NW + 1 && sf.files <= NW + 2);
		CHECK(sf.free_blocks <= sf.data_blocks);
		/* the permanent files are all listed, once each; churn files
		 * come and go during the listing */
		while ((r = sfs_readdir(fs, &cookie, &st)) == 1)
			n += st.name[0] == 'w' || !strcmp(st.name, "shared");
		CHECK_EQ(r, 0);
		CHECK_EQ(n, NW + 1);
		CHECK_EQ(sfs_stat(fs, "shared", &st), 0);
		CHECK_EQ(st.size, SHARED);
	}
	return NULL;
}

static void verify(const char *when)
{
	static uint8_t buf[WSIZE + 1];

	for (int i = 0; i < NW; i++) {
		char name[16];
		int fd;
		ssize_t n;

		snprintf(name, sizeof name, "w%d", i);
		fd = sfs_file_open(fs, name, SFS_O_RDONLY);
		CHECK(fd >= 0);
		n = sfs_file_pread(fs, fd, buf, sizeof buf, 0);
		if (n != (ssize_t)wsize[i] || memcmp(buf, wmodel[i], wsize[i]))
			FAIL("%s: %s differs (%zd bytes, expected %zu)", when, name, n, wsize[i]);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
}

/* Every call returns with the mount's lock released, whatever its result:
 * each call below runs in a thread of its own that then ends, and a second
 * thread must then get the lock (sfs_sync takes it exclusively). A call
 * that kept it would leave it to a thread that is gone: the second thread
 * would wait for ever, so this runs in a child that an alarm ends (30 s:
 * the calls take milliseconds; mutgen gives a mutated test 60 s at least). */
static struct sfs *lfs;
static int lfd = -1;

static void *lock_call(void *arg)
{
	static char buf[8192];
	struct sfs_stat st;
	uint32_t cookie = 0;
	switch ((int)(intptr_t)arg) {
	case 0: lfd = sfs_file_open(lfs, "l", SFS_O_CREAT); break;
	case 1: (void)sfs_file_open(lfs, "l", SFS_O_CREAT | SFS_O_EXCL); break;   /* -EEXIST */
	case 2: (void)sfs_file_open(lfs, "none", 0); break;                     /* -ENOENT */
	case 3: (void)sfs_file_pwrite(lfs, lfd, buf, sizeof buf, 0); break;     /* extends */
	case 4: (void)sfs_file_pwrite(lfs, lfd, buf, 100, 10); break;           /* in place */
	case 5: (void)sfs_file_pread(lfs, lfd, buf, sizeof buf, 0); break;
	case 6: (void)sfs_file_truncate(lfs, lfd, 5000); break;
	case 7: (void)sfs_file_fsync(lfs, lfd); break;
	case 8: (void)sfs_file_seek(lfs, lfd, 0, SEEK_END); break;
	case 9: (void)sfs_file_stat(lfs, lfd, &st); break;
	case 10: (void)sfs_stat(lfs, "l", &st); break;
	case 11: (void)sfs_readdir(lfs, &cookie, &st); break;
	case 12: (void)sfs_file_close(lfs, lfd); break;
	case 13: (void)sfs_file_close(lfs, lfd); break;                         /* -EBADF */
	case 14: (void)sfs_unlink(lfs, "l"); break;
	default: return (void *)1;
	}
	return NULL;
}

static void *lock_sync(void *arg)
{
	(void)arg;
	CHECK_EQ(sfs_sync(lfs), 0);
	return NULL;
}

static void calls_release_the_lock(void)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(30);
		char err[256] = "";
		CHECK_EQ(sfs_format("lock.sfs", 8u << 20, 0), 0);
		CHECK_EQ(sfs_mount("lock.sfs", 0, &lfs, err, sizeof err), 0);
		for (int i = 0;; i++) {
			pthread_t t;
			void *end;
			CHECK(pthread_create(&t, NULL, lock_call, (void *)(intptr_t)i) == 0);
			CHECK(pthread_join(t, &end) == 0);
			if (end)
				break;
			CHECK(pthread_create(&t, NULL, lock_sync, NULL) == 0);
			CHECK(pthread_join(t, NULL) == 0);
		}
		CHECK_EQ(sfs_unmount(lfs), 0);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (WIFSIGNALED(st))
		FAIL("a call kept the mount's lock: the next one waited %s",
		     WTERMSIG(st) == SIGALRM ? "30 s" : "and died");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	pthread_t w[NW], r[NR], m, c;
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";
	int fd, rc;

	rc = sfs_format(img, 64u << 20, 0);
	if (rc < 0)
		FAIL("format: %s", strerror(-rc));
	rc = sfs_mount(img, 0, &fs, err, sizeof err);
	if (rc < 0)
		FAIL("mount: %s (%s)", strerror(-rc), err);
	{
		static uint8_t sb[SHARED];

		for (uint64_t p = 0; p < SHARED; p++)
			sb[p] = shared_byte(p);
		fd = sfs_file_open(fs, "shared", SFS_O_CREAT);
		CHECK(fd >= 0);
		CHECK_EQ(sfs_file_pwrite(fs, fd, sb, SHARED, 0), SHARED);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	for (int i = 0; i < NW; i++) {
		wmodel[i] = calloc(1, WSIZE);
		CHECK(wmodel[i]);
		/* create the files first, so the meta thread sees them all */
		char name[16];

		snprintf(name, sizeof name, "w%d", i);
		fd = sfs_file_open(fs, name, SFS_O_CREAT);
		CHECK(fd >= 0);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	for (int i = 0; i < NR; i++)
		CHECK(pthread_create(&r[i], NULL, reader, (void *)(intptr_t)i) == 0);
	CHECK(pthread_create(&m, NULL, meta, NULL) == 0);
	CHECK(pthread_create(&c, NULL, churn, NULL) == 0);
	for (int i = 0; i < NW; i++)
		CHECK(pthread_create(&w[i], NULL, writer, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	for (int i = 0; i < NR; i++)
		pthread_join(r[i], NULL);
	pthread_join(m, NULL);
	pthread_join(c, NULL);
	verify("mounted");
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(sfs_fsck(img, 0, &res, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ(res.errors_found, 0);
	rc = sfs_mount(img, 0, &fs, err, sizeof err);
	CHECK_EQ(rc, 0);
	verify("remounted");
	CHECK_EQ(sfs_unmount(fs), 0);
	calls_release_the_lock();
	for (int i = 0; i < NW; i++)
		free(wmodel[i]);
	printf("ok\n");
	return 0;
}
