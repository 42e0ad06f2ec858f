/* SPDX-License-Identifier: MIT */
/* Description: plain READ/WRITE SQEs of a cached regular file (the emulation's fast path: no
 * request structure, run straight from the SQE copy) keep the kernel's results in all three
 * modes: a READ that comes back short inline (the rest of its range dropped from the page cache)
 * goes on and returns all of it, at an offset and at the file position (offset -1), and so does a
 * READV (its array clobbered by the program after submit; a missing array is -EFAULT); a READ with
 * the program's own RWF_NOWAIT of an uncached page is -EAGAIN (or the data, if readahead was that
 * quick; an empty pipe's -EAGAIN at once, not a wait), never a worker's read; without it a
 * worker reads it (a
 * submitting thread that a seccomp filter allows only RWF_NOWAIT reads of the file gets all of
 * an uncached page, on the fast path and on the request path: it never waits for the disk); a
 * bad buffer is -EFAULT, a closed fd -EBADF (a READV's missing array
 * on it -EFAULT), a failed READ linked to a NOP cancels it; a TIMEOUT waiting for a count of completions fires
 * on fast-path completions (res 0, not -ETIME); a drained NOP submitted after fast reads in the
 * same batch completes after all of them; and a write through it is read back. */
#include "test_uring.h"
#include "../src/common/noring.h"
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#define FSZ (256 * 1024)

static struct io_uring_cqe one(struct io_uring *ring)
{
	struct io_uring_cqe *cqe, c;
	int r = io_uring_wait_cqe(ring, &cqe);
	if (r < 0)
		FAIL("wait_cqe: %s", strerror(-r));
	c = *cqe;
	io_uring_cqe_seen(ring, cqe);
	return c;
}

static int read_one(struct io_uring *ring, int fd, void *buf, unsigned len, uint64_t off, int rwf)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	CHECK(sqe);
	io_uring_prep_read(sqe, fd, buf, len, off);
	sqe->rw_flags = rwf;
	CHECK_EQ(io_uring_submit(ring), 1);
	return one(ring).res;
}

/* Page 16 of fd cached, the pages after it not: a 4-page read from there is short inline. */
static void partly_cached(int fd, uint8_t *chk)
{
	CHECK_EQ(fsync(fd), 0);
	CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);     /* no readahead */
	CHECK_EQ(pread(fd, chk, 4096, 65536), 4096);
}

/* Drop the page at off from the page cache; DONTNEED can miss a page still in
 * another CPU's LRU batch, so look, with mincore(2): not with a RWF_NOWAIT
 * read, whose miss starts readahead that may bring the page back before the
 * ring's read (it did, under load). */
static void gone_from_cache(int fd, off_t off)
{
	long pg = sysconf(_SC_PAGESIZE);
	off_t base = off - off % pg;
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, base);
	CHECK(m != MAP_FAILED);
	for (int i = 0; i < 200; i++) {
		unsigned char in = 1;
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(mincore(m, (size_t)pg, &in), 0);
		if (!(in & 1)) {
			munmap(m, (size_t)pg);
			return;
		}
		usleep(5000);
	}
	FAIL("the page at %lld stays in the page cache", (long long)off);
}

/*
 * Only reads that cannot wait for the disk, for the calling thread: a filter on
 * it alone (no TSYNC; threads it starts later inherit it) that fails every read
 * of fd - read, pread64, readv, preadv, and preadv2 without RWF_NOWAIT (with
 * nowait_too 0: every preadv2 too) - with EXDEV. Other fds (the ring's eventfd)
 * and other threads are untouched.
 */
static void refuse_reads(int fd, int nowait_too)
{
	const unsigned no = SECCOMP_RET_ERRNO | EXDEV;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NORING_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_read, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pread64, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_readv, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_preadv, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_preadv2, 2, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, no),
		/* preadv2: its flags (args[5], the low word) must hold RWF_NOWAIT */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[5])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, nowait_too ? RWF_NOWAIT : 0, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, no),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	CHECK_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	CHECK_EQ(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

struct miss_arg {
	struct io_uring *ring;
	int fd;
	uint8_t *dst;
	const uint8_t *src;
};

/* A READ of a page that is not cached, on the fast path (flags 0) or the
 * request path (IOSQE_IO_LINK, a NOP after it): all of it is read. */
static void read_miss(struct miss_arg *a, off_t off, unsigned flags)
{
	gone_from_cache(a->fd, off);
	struct io_uring_sqe *sqe = io_uring_get_sqe(a->ring);
	CHECK(sqe);
	io_uring_prep_read(sqe, a->fd, a->dst, 4096, (uint64_t)off);
	sqe->flags = (uint8_t)flags;
	sqe->user_data = 1;
	unsigned n = 1;
	if (flags & IOSQE_IO_LINK) {
		sqe = io_uring_get_sqe(a->ring);
		CHECK(sqe);
		io_uring_prep_nop(sqe);
		sqe->user_data = 2;
		n = 2;
	}
	CHECK_EQ(io_uring_submit(a->ring), n);
	struct io_uring_cqe c[2];
	tu_reap(a->ring, c, n);
	const struct io_uring_cqe *rd = tu_find(c, n, 1);
	CHECK(rd);
	CHECK_EQ(rd->res, 4096);
	CHECK(memcmp(a->dst, a->src + off, 4096) == 0);
}

/* The submitting thread, allowed only reads that cannot wait for the disk:
 * misses and a cached page still read (by the worker that exists already,
 * or inline with RWF_NOWAIT). */
static void *nowait_submitter(void *p)
{
	struct miss_arg *a = p;
	refuse_reads(a->fd, 1);
	read_miss(a, 196608, 0);
	read_miss(a, 200704, IOSQE_IO_LINK);
	CHECK_EQ(read_one(a->ring, a->fd, a->dst, 4096, 200704, 0), 4096);   /* cached now */
	return NULL;
}

struct starter_arg {
	struct io_uring *ring;
	int fd;
	uint8_t *dst;
	int res;
};

/* Starts the ring's one worker from a thread that may not read fd at all: the
 * worker inherits the filter (emulated; the kernel's io-wq threads do not). */
static void *filtered_worker_starter(void *p)
{
	struct starter_arg *a = p;
	refuse_reads(a->fd, 0);
	struct io_uring_sqe *sqe = io_uring_get_sqe(a->ring);
	CHECK(sqe);
	io_uring_prep_read(sqe, a->fd, a->dst, 4096, 0);
	sqe->flags = IOSQE_ASYNC;
	CHECK_EQ(io_uring_submit(a->ring), 1);
	a->res = one(a->ring).res;
	return NULL;
}

/*
 * A READ with the program's own RWF_NOWAIT of a page that is not cached is
 * -EAGAIN, not handed to a worker (the kernel completes it so too). The miss
 * starts readahead, which on a fast disk can end before the read looks again,
 * so the data itself is a right answer too (CI saw it every time for a
 * while): what tells a worker's read is that the ring's only worker may not
 * read fd (-EXDEV), while the submitting thread may.
 */
static void nowait_not_punted(int fd, uint8_t *dst, const uint8_t *src)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	unsigned one_worker[2] = { 1, 1 };
	CHECK_EQ(io_uring_register_iowq_max_workers(&ring, one_worker), 0);
	int eagain = 0;
	for (int i = 0; i < 3; i++) {
		/* the filtered worker is (re)started for each read: one that outlived its 5 s
		 * idle time would leave a punt to an unfiltered new one (the page is dropped
		 * after, as the kernel's worker reads page 0 and perhaps ahead) */
		struct starter_arg sa = { &ring, fd, dst, 0 };
		pthread_t th;
		CHECK_EQ(pthread_create(&th, NULL, filtered_worker_starter, &sa), 0);
		CHECK_EQ(pthread_join(th, NULL), 0);
		CHECK_EQ(sa.res, tu_mode == TU_KERNEL ? 4096 : -EXDEV);
		gone_from_cache(fd, 131072);
		memset(dst, 0, 4096);
		int nr = read_one(&ring, fd, dst, 4096, 131072, RWF_NOWAIT);
		if (nr == -EAGAIN) {
			eagain++;
		} else {
			CHECK_EQ(nr, 4096);
			CHECK(memcmp(dst, src + 131072, 4096) == 0);
		}
	}
	printf("    %s: RWF_NOWAIT of an uncached page: -EAGAIN %d of 3 (else readahead was done)\n",
	       tu_mode_name, eagain);
	io_uring_queue_exit(&ring);
}

static void body(void)
{
	struct io_uring ring;
	int r = io_uring_queue_init(64, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&ring);
	char path[] = "uring_fast.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	uint8_t *src = malloc(FSZ), *dst = malloc(FSZ), *chk = malloc(FSZ);
	CHECK(src && dst && chk);
	for (int i = 0; i < FSZ; i++)
		src[i] = (uint8_t)(i * 131 + (i >> 9));
	CHECK_EQ(pwrite(fd, src, FSZ, 0), FSZ);

	/* the first read of an fd learns its kind; later ones take the fast path */
	CHECK_EQ(read_one(&ring, fd, dst, 4096, 0, 0), 4096);
	CHECK(memcmp(dst, src, 4096) == 0);

	/* a write, read back with pread */
	memcpy(chk, "fast path write", 15);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_write(sqe, fd, chk, 15, 3000);
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(one(&ring).res, 15);
	CHECK_EQ(pread(fd, dst, 15, 3000), 15);
	CHECK(memcmp(dst, "fast path write", 15) == 0);
	memcpy(src + 3000, "fast path write", 15);

	/* A READ that comes back short inline goes on. Whether it is short depends on
	 * the disk: the miss starts readahead of the rest, which now and then ends
	 * inside the same preadv2 (about 1 in 2 under load, here): so each case
	 * runs 8 times, and any round that was short checks the going on. */
	for (int round = 0; round < 8; round++) {
		/* short inline, goes on: at an offset ... */
		partly_cached(fd, chk);
		memset(dst, 0, FSZ);
		CHECK_EQ(read_one(&ring, fd, dst, 16384, 65536, 0), 16384);
		CHECK(memcmp(dst, src + 65536, 16384) == 0);
		/* ... and at the file position, which ends after all of it */
		partly_cached(fd, chk);
		CHECK_EQ(lseek(fd, 65536, SEEK_SET), 65536);
		memset(dst, 0, FSZ);
		CHECK_EQ(read_one(&ring, fd, dst, 16384, (uint64_t)-1, 0), 16384);
		CHECK(memcmp(dst, src + 65536, 16384) == 0);
		CHECK_EQ(lseek(fd, 0, SEEK_CUR), 65536 + 16384);

		/* READV the same, from an array the program clobbers after submit */
		partly_cached(fd, chk);
		memset(dst, 0, FSZ);
		struct iovec pv[2] = { { dst, 1000 }, { dst + 5000, 15384 } };
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_readv(sqe, fd, pv, 2, 65536);
		CHECK_EQ(io_uring_submit(&ring), 1);
		memset(pv, 0, sizeof pv);
		CHECK_EQ(one(&ring).res, 16384);
		CHECK(memcmp(dst, src + 65536, 1000) == 0);
		CHECK(memcmp(dst + 5000, src + 65536 + 1000, 15384) == 0);
	}
	/* a READV whose array is not there: -EFAULT */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_readv(sqe, fd, (struct iovec *)16, 2, 0);
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(one(&ring).res, -EFAULT);

	/* the program's own RWF_NOWAIT on an uncached page: -EAGAIN, never a worker's read */
	nowait_not_punted(fd, dst, src);
	/* ... and where it can never be ready, deterministically: an empty pipe's is -EAGAIN
	 * at once, not a wait, inline and on the request path (IOSQE_IO_LINK, a NOP after) */
	int ep[2];
	CHECK_EQ(pipe(ep), 0);
	for (int link = 0; link < 2; link++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, ep[0], dst, 16, (uint64_t)-1);
		sqe->rw_flags = RWF_NOWAIT;
		sqe->user_data = 1;
		if (link) {
			sqe->flags = IOSQE_IO_LINK;
			io_uring_prep_nop(io_uring_get_sqe(&ring));
		}
		CHECK_EQ(io_uring_submit(&ring), 1 + link);
		struct io_uring_cqe pc;
		tu_next(&ring, &pc);
		CHECK_EQ(pc.user_data, 1);
		CHECK_EQ(pc.res, -EAGAIN);
		if (link) {
			tu_next(&ring, &pc);
			CHECK_EQ(pc.res, -ECANCELED);
		}
	}
	close(ep[0]);
	close(ep[1]);
	/* without it: read */
	gone_from_cache(fd, 131072);
	CHECK_EQ(read_one(&ring, fd, dst, 4096, 131072, 0), 4096);
	CHECK(memcmp(dst, src + 131072, 4096) == 0);
	/* and the submitter never waits for the disk: a thread allowed only reads with
	 * RWF_NOWAIT of fd submits misses. Its worker (one at most) is started here
	 * first (IOSQE_ASYNC), so that no thread inherits its filter */
	unsigned now[2] = { 0, 0 };             /* 0: change nothing, say the bound */
	CHECK_EQ(io_uring_register_iowq_max_workers(&ring, now), 0);
	if (tu_mode != TU_KERNEL) {
		/* the emulation's default (DROPIN.md): 4 per CPU, at most 64 and the SQ size */
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		unsigned want = cpus > 0 ? 4 * (unsigned)cpus : 4;
		want = want > 64 ? 64 : want;
		CHECK_EQ(now[0], want);
	}
	unsigned one_worker[2] = { 1, 1 };
	CHECK_EQ(io_uring_register_iowq_max_workers(&ring, one_worker), 0);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, dst, 4096, 0);
	sqe->flags = IOSQE_ASYNC;
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(one(&ring).res, 4096);
	struct miss_arg ma = { &ring, fd, dst, src };
	pthread_t th;
	CHECK_EQ(pthread_create(&th, NULL, nowait_submitter, &ma), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL), 0);
	CHECK_EQ(pread(fd, chk, FSZ, 0), FSZ);                  /* all cached again */

	/* errors: a bad buffer, a closed fd (its kind still cached) */
	CHECK_EQ(read_one(&ring, fd, (void *)16, 4096, 0, 0), -EFAULT);
	/* a number no other file of this ring had (the lowest free one may be the
	 * empty pipe's above, cached as a pipe: then the fast path is never tried) */
	int fd2 = fcntl(fd, F_DUPFD, 64);
	CHECK(fd2 >= 64);
	CHECK_EQ(read_one(&ring, fd2, dst, 100, 0, 0), 100);
	close(fd2);
	CHECK_EQ(read_one(&ring, fd2, dst, 100, 0, 0), -EBADF);
	sqe = io_uring_get_sqe(&ring);          /* the array is looked at before the file */
	io_uring_prep_readv(sqe, fd2, (struct iovec *)16, 2, 0);
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(one(&ring).res, -EFAULT);

	/* a failed READ linked to a NOP cancels it */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, (void *)16, 4096, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 1;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 2);
	for (int i = 0; i < 2; i++) {
		struct io_uring_cqe c = one(&ring);
		CHECK_EQ(c.res, c.user_data == 1 ? -EFAULT : -ECANCELED);
	}

	/* a TIMEOUT counting completions: three fast reads complete it (res 0) */
	struct __kernel_timespec ts = { .tv_sec = 20 };
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_timeout(sqe, &ts, 2, 0);
	sqe->user_data = 99;
	CHECK_EQ(io_uring_submit(&ring), 1);
	for (int i = 0; i < 3; i++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, dst + i * 4096, 4096, (uint64_t)i * 4096);
		sqe->user_data = (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), 3);
	struct __kernel_timespec wait = { .tv_sec = 5 };
	int seen_timeout = 0;
	for (int i = 0; i < 4; i++) {
		struct io_uring_cqe *cqe;
		r = io_uring_wait_cqe_timeout(&ring, &cqe, &wait);
		if (r < 0)
			FAIL("CQE %d of 4: %s (a TIMEOUT that did not count the reads?)", i, strerror(-r));
		if (cqe->user_data == 99) {
			CHECK_EQ(cqe->res, 0);
			seen_timeout = 1;
		} else {
			CHECK_EQ(cqe->res, 4096);
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	CHECK(seen_timeout);

	/* reads, then a drained NOP in the same submission: the NOP's CQE is last */
	for (int i = 0; i < 8; i++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, dst + i * 4096, 4096, (uint64_t)i * 8192);
		sqe->user_data = 10 + (uint64_t)i;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->flags |= IOSQE_IO_DRAIN;
	sqe->user_data = 50;
	CHECK_EQ(io_uring_submit(&ring), 9);
	for (int i = 0; i < 9; i++) {
		struct io_uring_cqe c = one(&ring);
		if (i < 8) {
			CHECK(c.user_data >= 10 && c.user_data < 18);
			CHECK_EQ(c.res, 4096);
			CHECK(memcmp(dst + (c.user_data - 10) * 4096, src + (c.user_data - 10) * 8192, 4096) == 0);
		} else {
			CHECK_EQ(c.user_data, 50);
		}
	}
	close(fd);
	free(src);
	free(dst);
	free(chk);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
