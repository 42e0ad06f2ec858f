/* SPDX-License-Identifier: MIT */
/* Description: the liburing drop-in reads and writes files like the kernel's io_uring, in all
 * three modes (kernel pass-through, URING_EMULATE=1, seccomp-blocked): NOP batches, READ/WRITE,
 * READV/WRITEV against pread, reads of a file dropped from the page cache (they would block: a
 * worker does them), a READV that comes back short inline (partly cached) and goes on from the
 * library's copy of the iovec array, a read at the file position (offset -1), READ_FIXED/WRITE_FIXED
 * with registered buffers and a registered (fixed) file (a sparse buffer table unregisters like
 * another), a read past EOF, an fd number reused
 * for a pipe and then a file again (the offset applies only to the file), a batch larger
 * than the SQ taken in several submits, and FILES_UPDATE with IORING_FILE_INDEX_ALLOC: each fd
 * goes to a free slot of the table (a taken one is left alone), the slot is written back into
 * the caller's array, and a full table is -ENFILE. Emulated, the ring's own calls never reach
 * the kernel's io_uring: with io_uring_enter and io_uring_register failing ENOTRECOVERABLE from
 * then on (a seccomp filter), io_uring_enter, io_uring_register and the wrappers still work; on
 * the kernel's ring, CQEs already there are waited for without io_uring_enter. A
 * ring gives its memory back at io_uring_queue_exit: 20 rings that each ran 64 NOPs at once
 * leave the heap (glibc's count of bytes in use) under 64 KiB larger. */
#include "test_uring.h"
#include <fcntl.h>
#include <malloc.h>
#include <sys/uio.h>

#define FSZ (256 * 1024)

static void nops(struct io_uring *ring)
{
	struct io_uring_cqe c[64];
	for (int round = 0; round < 3; round++) {
		for (unsigned i = 0; i < 64; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			CHECK(sqe);
			io_uring_prep_nop(sqe);
			sqe->user_data = 1000 + i;
		}
		CHECK(io_uring_get_sqe(ring) == NULL);       /* the SQ holds 64 */
		CHECK_EQ(io_uring_submit(ring), 64);
		tu_reap(ring, c, 64);
		for (unsigned i = 0; i < 64; i++) {
			CHECK_EQ(tu_find(c, 64, 1000 + i)->res, 0);
		}
		CHECK_EQ(io_uring_cq_ready(ring), 0);
	}
}

/* A pipe's read end with one byte c waiting in it (the write end closed). */
static int byte_pipe(char c)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(write(p[1], &c, 1), 1);
	close(p[1]);
	return p[0];
}

/* The byte waiting in the registered file at slot. */
static char fixed_byte(struct io_uring *ring, int slot)
{
	struct io_uring_cqe c;
	char b = 0;
	struct io_uring_sqe *sqe = tu_sqe(ring);
	io_uring_prep_read(sqe, slot, &b, 1, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.res, 1);
	return b;
}

static void files_alloc(struct io_uring *ring)
{
	struct io_uring_cqe c;
	int table[3] = { -1, byte_pipe('b'), -1 };
	int fds[2] = { byte_pipe('a'), byte_pipe('c') }, mine[2] = { fds[0], fds[1] };
	CHECK_EQ(io_uring_register_files(ring, table, 3), 0);
	struct io_uring_sqe *sqe = tu_sqe(ring);
	io_uring_prep_files_update(sqe, fds, 2, IORING_FILE_INDEX_ALLOC);
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.res, 2);
	/* the free slots 0 and 2, each written back where its fd was */
	CHECK(fds[0] != fds[1]);
	CHECK(fds[0] == 0 || fds[0] == 2);
	CHECK(fds[1] == 0 || fds[1] == 2);
	CHECK_EQ(fixed_byte(ring, fds[0]), 'a');
	CHECK_EQ(fixed_byte(ring, fds[1]), 'c');
	CHECK_EQ(fixed_byte(ring, 1), 'b');
	/* the table is full */
	int more = byte_pipe('d');
	sqe = tu_sqe(ring);
	io_uring_prep_files_update(sqe, &more, 1, IORING_FILE_INDEX_ALLOC);
	CHECK_EQ(io_uring_submit(ring), 1);
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.res, -ENFILE);
	CHECK_EQ(io_uring_unregister_files(ring), 0);
	close(more);
	close(mine[0]);
	close(mine[1]);
	close(table[1]);
}

/* Emulated only: nothing the ring does from here on may call the kernel's io_uring. */
static void no_kernel_calls(struct io_uring *ring, int fd)
{
	struct io_uring_cqe c;
	CHECK_EQ(noring_block(ENOTRECOVERABLE), 0);
	CHECK_EQ(io_uring_enter((unsigned)ring->ring_fd, 0, 0, 0, NULL), 0);
	struct io_uring_sqe *sqe = tu_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 70;
	CHECK_EQ(io_uring_submit(ring), 1);
	CHECK_EQ(io_uring_enter((unsigned)ring->ring_fd, 0, 1, IORING_ENTER_GETEVENTS, NULL), 0);
	tu_reap(ring, &c, 1);
	CHECK_EQ(c.user_data, 70);
	CHECK_EQ(io_uring_register((unsigned)ring->ring_fd, IORING_REGISTER_FILES, &fd, 1), 0);
	CHECK_EQ(io_uring_unregister_files(ring), 0);
}

/* Kernel pass-through: CQEs already there are taken without a system call
 * (io_uring_wait_cqe_nr and io_uring_wait_cqe with as many ready as asked
 * for). A child, whose kernel ring is the same mapping, makes io_uring_enter
 * fail ENOTRECOVERABLE and still gets its 4 CQEs; asking for a fifth shows
 * that the filter is on. */
static void ready_without_enter(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	for (unsigned i = 0; i < 4; i++) {
		struct io_uring_sqe *sqe = tu_sqe(ring);
		io_uring_prep_nop(sqe);
		sqe->user_data = 80 + i;
	}
	CHECK_EQ(io_uring_submit_and_wait(ring, 4), 4);
	CHECK_EQ(io_uring_cq_ready(ring), 4);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK_EQ(noring_block(ENOTRECOVERABLE), 0);
		CHECK_EQ(io_uring_wait_cqe_nr(ring, &cqe, 4), 0);
		CHECK_EQ(cqe->user_data, 80);
		CHECK_EQ(io_uring_wait_cqe(ring, &cqe), 0);
		CHECK_EQ(io_uring_wait_cqe_nr(ring, &cqe, 5), -ENOTRECOVERABLE);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		FAIL("4 ready CQEs with io_uring_enter failing: the child ended with status 0x%x", st);
	io_uring_cq_advance(ring, 4);
}

/* Bytes of the heap in use (glibc's arenas and its mmapped chunks). */
static size_t heap_used(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

/* A ring of 64 with 64 NOPs in flight at once, then io_uring_queue_exit. */
static void ring_cycle(void)
{
	struct io_uring ring;
	struct io_uring_cqe c[64];
	CHECK_EQ(io_uring_queue_init(64, &ring, 0), 0);
	for (unsigned i = 0; i < 64; i++)
		io_uring_prep_nop(tu_sqe(&ring));
	CHECK_EQ(io_uring_submit(&ring), 64);
	tu_reap(&ring, c, 64);
	io_uring_queue_exit(&ring);
}

static void no_leak(void)
{
	ring_cycle();                        /* what is allocated once per process */
	size_t before = heap_used();
	for (int i = 0; i < 20; i++)
		ring_cycle();
	size_t after = heap_used();
	if (after > before + 65536)
		FAIL("20 rings left the heap %zu bytes larger", after - before);
}

static void body(void)
{
	struct io_uring ring;
	int r = io_uring_queue_init(64, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&ring);
	CHECK(ring.features & IORING_FEAT_NODROP);
	CHECK(ring.features & IORING_FEAT_EXT_ARG);
	nops(&ring);
	no_leak();

	char path[] = "uring_rw.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	uint8_t *src = malloc(FSZ), *dst = malloc(FSZ), *chk = malloc(FSZ);
	CHECK(src && dst && chk);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < FSZ; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		src[i] = (uint8_t)x;
	}
	/* WRITE 16 KiB pieces at their offsets, all in one submit */
	for (int i = 0; i < FSZ / 16384; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_write(sqe, fd, src + i * 16384, 16384, (uint64_t)i * 16384);
		sqe->user_data = (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), FSZ / 16384);
	struct io_uring_cqe c[64];
	tu_reap(&ring, c, FSZ / 16384);
	for (int i = 0; i < FSZ / 16384; i++)
		CHECK_EQ(tu_find(c, FSZ / 16384, (uint64_t)i)->res, 16384);
	CHECK_EQ(pread(fd, chk, FSZ, 0), FSZ);
	CHECK(memcmp(chk, src, FSZ) == 0);

	/* READ vs pread, 4 KiB at odd offsets */
	for (int i = 0; i < 32; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, dst + i * 4096, 4096, (uint64_t)i * 7777);
		sqe->user_data = 100 + (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit_and_wait(&ring, 32), 32);
	tu_reap(&ring, c, 32);
	for (int i = 0; i < 32; i++) {
		CHECK_EQ(tu_find(c, 32, 100 + (uint64_t)i)->res, 4096);
		CHECK(memcmp(dst + i * 4096, src + i * 7777, 4096) == 0);
	}

	/* the same reads with the file out of the page cache: what would block is
	 * done by a worker */
	CHECK_EQ(fsync(fd), 0);
	CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	memset(dst, 0, FSZ);
	for (int i = 0; i < 32; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, dst + i * 4096, 4096, (uint64_t)i * 7777);
		sqe->user_data = 200 + (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit_and_wait(&ring, 32), 32);
	tu_reap(&ring, c, 32);
	for (int i = 0; i < 32; i++) {
		CHECK_EQ(tu_find(c, 32, 200 + (uint64_t)i)->res, 4096);
		CHECK(memcmp(dst + i * 4096, src + i * 7777, 4096) == 0);
	}

	/* READV with three pieces; WRITEV two pieces; then check with pread */
	memset(dst, 0, FSZ);
	struct iovec iv[3] = { { dst, 100 }, { dst + 1000, 5000 }, { dst + 9000, 3 } };
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_readv(sqe, fd, iv, 3, 12345);
	sqe->user_data = 7;
	memset(iv, 0, sizeof iv);       /* SUBMIT_STABLE would let us; we reap first */
	struct iovec iv2[3] = { { dst, 100 }, { dst + 1000, 5000 }, { dst + 9000, 3 } };
	sqe->addr = (uint64_t)(uintptr_t)iv2;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, 5103);
	CHECK(memcmp(dst, src + 12345, 100) == 0);
	CHECK(memcmp(dst + 1000, src + 12345 + 100, 5000) == 0);
	CHECK(memcmp(dst + 9000, src + 12345 + 5100, 3) == 0);

	/* READV over a cached page and pages dropped from the cache: an inline
	 * RWF_NOWAIT read comes back short and the rest is read later from the
	 * library's copy of the iovec array (the program clobbers its own as soon
	 * as submit returns, as FEAT_SUBMIT_STABLE allows) */
	{
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);    /* no readahead */
		CHECK_EQ(pread(fd, chk, 4096, 65536), 4096);
		memset(dst, 0, FSZ);
		struct iovec pv[2] = { { dst, 2048 }, { dst + 8192, 14336 } };
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_readv(sqe, fd, pv, 2, 65536);
		sqe->user_data = 9;
		CHECK_EQ(io_uring_submit(&ring), 1);
		memset(pv, 0, sizeof pv);
		tu_reap(&ring, c, 1);
		CHECK_EQ(c[0].res, 16384);
		CHECK(memcmp(dst, src + 65536, 2048) == 0);
		CHECK(memcmp(dst + 8192, src + 65536 + 2048, 14336) == 0);
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL), 0);
	}

	uint8_t a[300], b[500];
	memset(a, 'a', sizeof a);
	memset(b, 'b', sizeof b);
	struct iovec wv[2] = { { a, sizeof a }, { b, sizeof b } };
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_writev(sqe, fd, wv, 2, 4096);
	sqe->user_data = 8;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, 800);
	CHECK_EQ(pread(fd, chk, 800, 4096), 800);
	CHECK(memcmp(chk, a, 300) == 0 && memcmp(chk + 300, b, 500) == 0);
	memcpy(src + 4096, chk, 800);

	/* offset -1: the file position, which moves */
	CHECK_EQ(lseek(fd, 1000, SEEK_SET), 1000);
	for (int i = 0; i < 2; i++) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, dst, 10, (uint64_t)-1);
		CHECK_EQ(io_uring_submit(&ring), 1);
		tu_reap(&ring, c, 1);
		CHECK_EQ(c[0].res, 10);
		CHECK(memcmp(dst, src + 1000 + 10 * i, 10) == 0);
	}
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 1020);

	/* past EOF: 0; straddling EOF: short */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, dst, 100, FSZ + 10);
	sqe->user_data = 1;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, dst + 200, 100, FSZ - 40);
	sqe->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 2);
	tu_reap(&ring, c, 2);
	CHECK_EQ(tu_find(c, 2, 1)->res, 0);
	CHECK_EQ(tu_find(c, 2, 2)->res, 40);

	/* an fd number reused for another kind of file: the ring must follow
	 * (file -> pipe: the offset does not apply; pipe -> file: it does) */
	{
		int p2[2];
		char small[16];
		int num = dup(fd);
		CHECK(num >= 0);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, num, small, 4, 100);
		CHECK_EQ(io_uring_submit(&ring), 1);
		tu_reap(&ring, c, 1);
		CHECK_EQ(c[0].res, 4);
		CHECK_EQ(pipe(p2), 0);
		CHECK_EQ(dup2(p2[0], num), num);          /* num is now the pipe's read end */
		CHECK_EQ(write(p2[1], "pipe", 4), 4);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, num, small, sizeof small, 0);
		CHECK_EQ(io_uring_submit(&ring), 1);
		tu_reap(&ring, c, 1);
		CHECK_EQ(c[0].res, 4);
		CHECK(memcmp(small, "pipe", 4) == 0);
		CHECK_EQ(dup2(fd, num), num);             /* and a regular file again */
		CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, num, small, 8, 5000);
		CHECK_EQ(io_uring_submit(&ring), 1);
		tu_reap(&ring, c, 1);
		CHECK_EQ(c[0].res, 8);
		CHECK(memcmp(small, src + 5000, 8) == 0);
		close(num);
		close(p2[0]);
		close(p2[1]);
	}

	/* registered buffers and a registered file */
	struct iovec reg[2] = { { dst, 65536 }, { chk, 65536 } };
	CHECK_EQ(io_uring_register_buffers(&ring, reg, 2), 0);
	CHECK_EQ(io_uring_register_files(&ring, &fd, 1), 0);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read_fixed(sqe, 0, dst + 4096, 8192, 65536, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = 11;
	memcpy(chk + 100, "fixed write!", 12);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_write_fixed(sqe, fd, chk + 100, 12, 200000, 1);
	sqe->user_data = 12;
	sqe = io_uring_get_sqe(&ring);                  /* outside the registered buffer: -EFAULT */
	io_uring_prep_read_fixed(sqe, fd, dst + 65536 - 10, 20, 0, 0);
	sqe->user_data = 13;
	sqe = io_uring_get_sqe(&ring);                  /* no buffer 5 */
	io_uring_prep_read_fixed(sqe, fd, dst, 20, 0, 5);
	sqe->user_data = 14;
	sqe = io_uring_get_sqe(&ring);                  /* no fixed file 3 */
	io_uring_prep_read(sqe, 3, dst, 20, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = 15;
	CHECK_EQ(io_uring_submit(&ring), 5);
	tu_reap(&ring, c, 5);
	CHECK_EQ(tu_find(c, 5, 11)->res, 8192);
	CHECK(memcmp(dst + 4096, src + 65536, 8192) == 0);
	CHECK_EQ(tu_find(c, 5, 12)->res, 12);
	CHECK_EQ(tu_find(c, 5, 13)->res, -EFAULT);
	CHECK_EQ(tu_find(c, 5, 14)->res, -EFAULT);
	CHECK_EQ(tu_find(c, 5, 15)->res, -EBADF);
	CHECK_EQ(pread(fd, dst, 12, 200000), 12);
	CHECK(memcmp(dst, "fixed write!", 12) == 0);
	/* the registered file outlives the program's fd, as the kernel's does */
	int fd2 = dup(fd);
	close(fd);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, 0, dst, 12, 200000);
	sqe->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, 12);
	CHECK_EQ(io_uring_unregister_files(&ring), 0);
	CHECK_EQ(io_uring_unregister_buffers(&ring), 0);
	CHECK_EQ(io_uring_unregister_buffers(&ring), -ENXIO);
	/* a sparse table (IORING_RSRC_REGISTER_SPARSE) is a registered table: unregistered once */
	CHECK_EQ(io_uring_register_buffers_sparse(&ring, 2), 0);
	CHECK_EQ(io_uring_unregister_buffers(&ring), 0);
	CHECK_EQ(io_uring_unregister_buffers(&ring), -ENXIO);
	files_alloc(&ring);
	if (tu_mode != TU_KERNEL)
		no_kernel_calls(&ring, fd2);
	else
		ready_without_enter(&ring);
	close(fd2);
	free(src);
	free(dst);
	free(chk);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
