/* SPDX-License-Identifier: MIT */
/* Description: the buffered writes of one regular file run on one worker at a time, in the
 * order they were submitted (hashed work, as the kernel's io-wq hashes a file's inode), in all
 * three modes: 64 overlapping WRITEs and WRITEVs in one submission, with four workers allowed,
 * leave each page with the last write's data, round after round (on a file system that refuses
 * buffered RWF_NOWAIT writes, as ext4: else a counted skip; the kernel hashes a write it punted
 * after its inline try, not one IOSQE_ASYNC sends at once, which the drop-in hashes too); a
 * request linked after a write that then blocks (an OPENAT of a FIFO) does not hold the file's
 * later writes, which complete on the second worker meanwhile. Emulated with URING_EMU_BATCH=1,
 * the writes queued behind a busy worker (its only worker held by an OPENAT of a FIFO until a
 * writer comes) are done by one io_submit: the process's write system calls (/proc/self/io
 * syscw) grow by far fewer than the 32 writes. A write of such a batch that crosses
 * RLIMIT_FSIZE is short (its bytes up to the limit), one past it -EFBIG, the others whole. */
#include "test_uring.h"
#include "parts.h"
#include "proc_io.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define NW 32

static uint8_t data[2 * NW][4096];

static int scratch(void)
{
	char path[] = "uring_whash.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

/* Write i: data[i] (filled with seed + i) at page pg, every other one a WRITEV; its SQE. */
static struct io_uring_sqe *queue_write(struct io_uring *ring, int fd, int i, unsigned seed, uint64_t pg,
				       struct iovec *iv)
{
	memset(data[i], (int)(seed + (unsigned)i), 4096);
	struct io_uring_sqe *s = tu_sqe(ring);
	if (i % 2) {
		*iv = (struct iovec){ data[i], 4096 };
		io_uring_prep_writev(s, fd, iv, 1, pg * 4096);
	} else {
		io_uring_prep_write(s, fd, data[i], 4096, pg * 4096);
	}
	s->user_data = (uint64_t)i;
	return s;
}

static void check_page(int fd, uint64_t pg, int byte)
{
	uint8_t back[4096];
	CHECK_EQ(pread(fd, back, 4096, (off_t)(pg * 4096)), 4096);
	for (int j = 0; j < 4096; j++)
		if (back[j] != (uint8_t)byte)
			FAIL("page %llu holds %d at %d, the last write to it wrote %d", (unsigned long long)pg,
			     back[j], j, byte & 0xff);
}

/* 64 writes to 8 pages in one submission, four workers: each page ends with its last write.
 * Where the file system takes a buffered RWF_NOWAIT write, the kernel's ring does some inline
 * and punts others (an mtime update says -EAGAIN), which then land after later ones: the part
 * needs a file system that refuses them all (ext4: EOPNOTSUPP), so that every write is hashed. */
static void in_order(struct io_uring *ring, int fd)
{
	uint8_t b = 0;
	struct iovec v = { &b, 1 };
	if (pwritev2(fd, &v, 1, 0, RWF_NOWAIT) >= 0 || errno != EOPNOTSUPP) {
		tu_part_skip("no RWF_NOWAIT writes", "writes of one file in order",
			     "a buffered pwritev2(RWF_NOWAIT) works here: the kernel's ring does some inline");
		return;
	}
	unsigned four[2] = { 4, 4 };
	CHECK_EQ(io_uring_register_iowq_max_workers(ring, four), 0);
	static struct iovec iv[2 * NW];
	for (unsigned round = 0; round < 8; round++) {
		for (int i = 0; i < 2 * NW; i++)
			queue_write(ring, fd, i, round * 64, (uint64_t)(i % 8), &iv[i]);
		CHECK_EQ(io_uring_submit(ring), 2 * NW);
		for (int i = 0; i < 2 * NW; i++) {
			struct io_uring_cqe c;
			tu_next(ring, &c);
			CHECK(c.user_data < 2 * NW);
			CHECK_EQ(c.res, 4096);
		}
		for (int p = 0; p < 8; p++)
			check_page(fd, (uint64_t)p, (int)(round * 64 + 56 + (unsigned)p));
	}
}

/* The ring's only worker waits in an OPENAT of fifo (user_data 1000) until release(). */
static void hold_worker(struct io_uring *ring, const char *fifo)
{
	unsigned one[2] = { 1, 1 };
	CHECK_EQ(io_uring_register_iowq_max_workers(ring, one), 0);
	struct io_uring_sqe *s = tu_sqe(ring);
	io_uring_prep_openat(s, AT_FDCWD, fifo, O_RDONLY, 0);
	s->flags |= IOSQE_ASYNC;
	s->user_data = 1000;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_none(ring);
}

static int release(const char *fifo)
{
	int w = open(fifo, O_WRONLY);
	CHECK(w >= 0);
	return w;
}

/* n results by user_data into res[]; the OPENAT's fd closed. */
static void reap(struct io_uring *ring, int n, int32_t *res)
{
	for (int i = 0; i < n + 1; i++) {
		struct io_uring_cqe c;
		tu_next(ring, &c);
		if (c.user_data == 1000) {
			CHECK(c.res >= 0);
			close(c.res);
			continue;
		}
		CHECK(c.user_data < (uint64_t)n);
		res[c.user_data] = c.res;
	}
}

static void batched(int fd, const char *fifo)
{
	static struct iovec iv[NW];
	int32_t res[NW];
	struct io_uring rg, *ring = &rg;
	CHECK_EQ(io_uring_queue_init(2 * NW, ring, 0), 0);    /* no worker of an earlier step */
	hold_worker(ring, fifo);
	for (int i = 0; i < NW; i++)
		queue_write(ring, fd, i, 100, (uint64_t)(16 + i), &iv[i])->flags |= IOSQE_ASYNC;
	CHECK_EQ(io_uring_submit(ring), NW);
	long c0 = tu_proc_io("syscw");
	int w = release(fifo);
	reap(ring, NW, res);
	long c1 = tu_proc_io("syscw");
	close(w);
	for (int i = 0; i < NW; i++) {
		CHECK_EQ(res[i], 4096);
		check_page(fd, (uint64_t)(16 + i), 100 + i);
	}
	if (tu_mode != TU_KERNEL && c0 >= 0) {
		printf("%d queued writes of one file: %ld write system calls\n", NW, c1 - c0);
		if (c1 - c0 >= NW / 2)
			FAIL("%d writes queued behind the worker took %ld write system calls: not one batch",
			     NW, c1 - c0);
	}

	/* RLIMIT_FSIZE inside a batch: short at the limit, -EFBIG past it */
	CHECK(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
	struct rlimit was, rl;
	CHECK_EQ(getrlimit(RLIMIT_FSIZE, &was), 0);
	rl = was;
	rl.rlim_cur = 60 * 4096 + 100;          /* the soft limit: given back below */
	CHECK_EQ(setrlimit(RLIMIT_FSIZE, &rl), 0);
	hold_worker(ring, fifo);
	static const uint64_t pages[5] = { 57, 58, 60, 61, 59 };
	for (int i = 0; i < 5; i++)
		queue_write(ring, fd, i, 200, pages[i], &iv[i])->flags |= IOSQE_ASYNC;
	CHECK_EQ(io_uring_submit(ring), 5);
	w = release(fifo);
	reap(ring, 5, res);
	close(w);
	CHECK_EQ(res[0], 4096);
	CHECK_EQ(res[1], 4096);
	CHECK_EQ(res[2], 100);
	CHECK_EQ(res[3], -EFBIG);
	CHECK_EQ(res[4], 4096);
	struct stat st;
	CHECK_EQ(fstat(fd, &st), 0);
	CHECK_EQ(st.st_size, 60 * 4096 + 100);
	check_page(fd, 59, 204);
	CHECK_EQ(setrlimit(RLIMIT_FSIZE, &was), 0);
	io_uring_queue_exit(ring);
}

/* A request linked after a write that then blocks (an OPENAT of a FIFO without a writer) does
 * not hold the file's later writes: with two workers they complete while it waits. */
static void link_blocks(int fd, const char *fifo)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(2 * NW, &ring, 0), 0);
	unsigned two[2] = { 2, 2 };
	CHECK_EQ(io_uring_register_iowq_max_workers(&ring, two), 0);
	static struct iovec iv[8];
	queue_write(&ring, fd, 0, 50, 70, &iv[0])->flags |= IOSQE_ASYNC | IOSQE_IO_LINK;
	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_openat(s, AT_FDCWD, fifo, O_RDONLY, 0);
	s->user_data = 1000;
	CHECK_EQ(io_uring_submit(&ring), 2);
	struct io_uring_cqe c;
	tu_next(&ring, &c);
	CHECK_EQ(c.user_data, 0);
	CHECK_EQ(c.res, 4096);
	tu_none(&ring);                         /* the open waits for a writer */
	for (int i = 1; i < 8; i++)
		queue_write(&ring, fd, i, 50, (uint64_t)(70 + i), &iv[i])->flags |= IOSQE_ASYNC;
	CHECK_EQ(io_uring_submit(&ring), 7);
	for (int i = 1; i < 8; i++) {
		tu_next(&ring, &c);             /* within 5 s, the open still waiting */
		CHECK(c.user_data >= 1 && c.user_data < 8);
		CHECK_EQ(c.res, 4096);
	}
	int w = release(fifo);
	tu_next(&ring, &c);
	CHECK_EQ(c.user_data, 1000);
	CHECK(c.res >= 0);
	close(c.res);
	close(w);
	for (int i = 0; i < 8; i++)
		check_page(fd, (uint64_t)(70 + i), 50 + i);
	io_uring_queue_exit(&ring);
}

static void body(void)
{
	setenv("URING_EMU_BATCH", "1", 1);
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(2 * NW, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	char dir[] = "/tmp/tu_whashXXXXXX", fifo[64];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK_EQ(mkfifo(fifo, 0600), 0);
	int fd = scratch();
	in_order(&ring, fd);
	batched(fd, fifo);
	link_blocks(fd, fifo);
	close(fd);
	unlink(fifo);
	rmdir(dir);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
