/* SPDX-License-Identifier: MIT */
/* Description: cached reads submitted together (32 READs and READVs in one submission) keep
 * the kernel's results in all three modes, each CQE checked by its user_data: whole pages at
 * scattered offsets, a READV of two halves, a read that meets the end of the file (the bytes up
 * to it), one past it (0), a NULL buffer (-EFAULT), a READV with no array (-EFAULT), a read of
 * an fd the program has closed since the ring cached its kind (-EBADF), a read at the file
 * position (offset -1: it moves); with pages dropped from the page cache in the middle of the
 * batch (and the second page of a two-page read), every read still returns all its data. Emulated, run twice, in a process each:
 * URING_EMU_BATCH=1, where the batch's cached reads go to the kernel in one io_submit with
 * RWF_NOWAIT: 32 whole cached pages make no read system call (/proc/self/io's syscr grows by
 * 1, the read of that file), and with the odd ones only those make one or two (the batch
 * goes on past one the kernel refused and past one that does not finish at once); URING_EMU_BATCH=0, a preadv2 each (it grows by 33). */
#include "test_uring.h"
#include "emu_batch.h"
#include "proc_io.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>

#define FSZ (1024 * 1024)
#define N 32

static uint8_t *src;
static uint8_t buf[N][4096], two[8192];
#define TWO_OFF (200 * 4096)     /* read 15's two pages: the second not cached in round 2 */

static void uncache(int fd, off_t off)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, fd, off - off % pg);
	CHECK(m != MAP_FAILED);
	for (int i = 0; i < 200; i++) {
		unsigned char in = 1;
		CHECK_EQ(posix_fadvise(fd, off - off % pg, pg, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(mincore(m, (size_t)pg, &in), 0);
		if (!(in & 1))
			break;
		usleep(5000);
	}
	munmap(m, (size_t)pg);
}

static uint64_t off_of(int i)
{
	return (uint64_t)((i * 37) % 120) * 4096;
}

/* The batch; want: 1 one io_submit, 0 a preadv2 each, -1 either (not checked). */
static void batch(int want)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(64, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int fd = tu_batch_file(src, FSZ);
	int gone = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(gone >= 0);
	/* one read of each fd first: the emulation learns their kinds */
	struct io_uring_sqe *sqe;
	for (int k = 0; k < 2; k++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, k ? gone : fd, buf[0], 16, 0);
	}
	CHECK_EQ(io_uring_submit_and_wait(&ring, 2), 2);
	io_uring_cq_advance(&ring, 2);
	CHECK_EQ(close(gone), 0);
	struct iovec halves[2] = { { buf[3], 2048 }, { buf[3] + 2048, 2048 } };

	/* round 0: whole cached pages only; 1: with the odd ones; 2: and pages not cached */
	for (int round = 0; round < 3; round++) {
		int odd = round > 0;
		if (round == 2) {
			/* pages of the middle of the batch not cached: a worker reads each */
			CHECK_EQ(fsync(fd), 0);
			for (int i = 10; i < 14; i++)
				uncache(fd, (off_t)off_of(i));
			uncache(fd, TWO_OFF + 4096);
		}
		memset(buf, 0xEE, sizeof(buf));
		memset(two, 0xEE, sizeof(two));
		for (int i = 0; i < N; i++) {
			sqe = io_uring_get_sqe(&ring);
			uint64_t off = off_of(i);
			if (!odd)
				io_uring_prep_read(sqe, fd, buf[i], 4096, off);
			else if (i == 3)
				io_uring_prep_readv(sqe, fd, halves, 2, off);
			else if (i == 5)
				io_uring_prep_read(sqe, fd, buf[i], 4096, FSZ - 1000);
			else if (i == 6)
				io_uring_prep_read(sqe, fd, buf[i], 4096, FSZ + 4096);
			else if (i == 7)
				io_uring_prep_read(sqe, fd, NULL, 4096, off);
			else if (i == N - 1)      /* last: the kernel's ring may end the submission there */
				io_uring_prep_readv(sqe, fd, NULL, 2, off);
			else if (i == 9)
				io_uring_prep_read(sqe, gone, buf[i], 4096, 0);
			else if (i == 15)
				io_uring_prep_read(sqe, fd, two, 8192, TWO_OFF);
			else if (i == 20)
				io_uring_prep_read(sqe, fd, buf[i], 4096, (uint64_t)-1);
			else
				io_uring_prep_read(sqe, fd, buf[i], 4096, off);
			sqe->user_data = (uint64_t)i;
		}
		CHECK_EQ(lseek(fd, 8192, SEEK_SET), 8192);
		long c0 = tu_proc_io("syscr");
		CHECK_EQ(io_uring_submit(&ring), N);
		long c1 = tu_proc_io("syscr");
		int seen[N] = { 0 };
		for (int k = 0; k < N; k++) {
			int res, i = tu_batch_next(&ring, seen, N, &res);
			if (!odd) {
				CHECK_EQ(res, 4096);
				CHECK(memcmp(buf[i], src + off_of(i), 4096) == 0);
			} else if (i == 5) {
				CHECK_EQ(res, 1000);
				CHECK(memcmp(buf[i], src + FSZ - 1000, 1000) == 0);
			} else if (i == 6) {
				CHECK_EQ(res, 0);
			} else if (i == 7 || i == N - 1) {
				CHECK_EQ(res, -EFAULT);
			} else if (i == 9) {
				CHECK_EQ(res, -EBADF);
			} else if (i == 15) {
				CHECK_EQ(res, 8192);
				CHECK(memcmp(two, src + TWO_OFF, 8192) == 0);
			} else if (i == 20) {
				CHECK_EQ(res, 4096);
				CHECK(memcmp(buf[i], src + 8192, 4096) == 0);
			} else {
				if (res != 4096)
					FAIL("read %d (round %d): %d, expected 4096", i, round, res);
				CHECK(memcmp(buf[i], src + off_of(i), 4096) == 0);
			}
		}
		CHECK_EQ(lseek(fd, 0, SEEK_CUR), odd ? 8192 + 4096 : 8192);
		/* one read system call: syscr's own; with the odd ones, a few more for those
		 * the kernel refused, the one that goes on at EOF and the one at the file
		 * position, none for the rest of the batch */
		if (round == 0 && want >= 0 && c0 >= 0)
			CHECK_EQ(c1 - c0, want ? 1 : N + 1);
		if (round == 1 && want == 1 && c0 >= 0 && c1 - c0 > 6)
			FAIL("%ld read system calls for a batch with 4 odd reads", c1 - c0);
	}
	close(fd);
	io_uring_queue_exit(&ring);
}

static void body(void)
{
	tu_each_batch_setting(batch);
}

int main(void)
{
	src = tu_batch_pattern(FSZ);
	return tu_uring_main(body);
}
