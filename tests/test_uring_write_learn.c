/* SPDX-License-Identifier: MIT */
/* Description: buffered writes to a file whose file system refuses RWF_NOWAIT writes
 * (EOPNOTSUPP, as ext4 does) are tried that way once per file, then go to a worker at once:
 * emulated, after the first WRITE of a file, 16 WRITEs and WRITEVs in one submission try no
 * pwritev2 with RWF_NOWAIT (the refusal is made by a seccomp trap on the submitting thread,
 * which counts the tries, so the count is exact on any file system); every write completes
 * with its length and the file holds what was written, in all three modes; a READ of the
 * file still takes the fast path. A file opened again under the same number learns anew. */
#include "test_uring.h"
#include "parts.h"
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <ucontext.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#define NW 16

#if defined(__x86_64__)
static volatile sig_atomic_t tries;

/* A pwritev2 with RWF_NOWAIT of the watched fd: refused as the file system would, counted. */
static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	tries++;
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = -EOPNOTSUPP;
}

/* The calling thread (and the threads it starts later: the ring's workers, which never
 * ask for RWF_NOWAIT) traps pwritev2(fd, ..., flags with RWF_NOWAIT). */
static void trap_nowait_writes(int fd)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	CHECK_EQ(sigaction(SIGSYS, &sa, NULL), 0);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NORING_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pwritev2, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[5])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, RWF_NOWAIT, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	CHECK_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	CHECK_EQ(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
}

static uint8_t data[NW + 1][4096];

/* Writes NW pages at 4096 * (1 + i) in one submission, every other one a WRITEV. */
static void write_batch(struct io_uring *ring, int fd, unsigned seed)
{
	struct iovec iv[NW];
	for (int i = 0; i < NW; i++) {
		memset(data[i + 1], (int)(seed + (unsigned)i), 4096);
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		if (i % 2) {
			iv[i] = (struct iovec){ data[i + 1], 4096 };
			io_uring_prep_writev(sqe, fd, &iv[i], 1, 4096u * (unsigned)(i + 1));
		} else {
			io_uring_prep_write(sqe, fd, data[i + 1], 4096, 4096u * (unsigned)(i + 1));
		}
		sqe->user_data = (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(ring), NW);
	for (int k = 0; k < NW; k++) {
		struct io_uring_cqe *cqe;
		CHECK_EQ(io_uring_wait_cqe(ring, &cqe), 0);
		CHECK(cqe->user_data < NW);
		CHECK_EQ(cqe->res, 4096);
		io_uring_cqe_seen(ring, cqe);
	}
	uint8_t back[4096];
	for (int i = 0; i < NW; i++) {
		CHECK_EQ(pread(fd, back, 4096, 4096 * (i + 1)), 4096);
		CHECK(memcmp(back, data[i + 1], 4096) == 0);
	}
}

/* One WRITE of page 0; its result. */
static int write_one(struct io_uring *ring, int fd, unsigned seed)
{
	memset(data[0], (int)seed, 4096);
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_write(sqe, fd, data[0], 4096, 0);
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_wait_cqe(ring, &cqe), 0);
	int res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static int scratch(void)
{
	char path[] = "uring_wlearn.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(64, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int emulated = tu_mode != TU_KERNEL;
	int fd = scratch();
	trap_nowait_writes(fd);

	/* the first write of the file: refused with RWF_NOWAIT, done by a worker */
	CHECK_EQ(write_one(&ring, fd, 1), 4096);
	int t1 = tries;
	if (emulated)
		CHECK(t1 >= 1);
	/* learned: no more tries for this file */
	write_batch(&ring, fd, 10);
	write_batch(&ring, fd, 40);
	CHECK_EQ(write_one(&ring, fd, 2), 4096);
	CHECK_EQ(tries, t1);
	/* a READ of it is not a write: the fast path, as before */
	uint8_t back[4096];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_read(sqe, fd, back, 4096, 0);
	CHECK_EQ(io_uring_submit(&ring), 1);
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
	CHECK_EQ(cqe->res, 4096);
	io_uring_cqe_seen(&ring, cqe);
	CHECK(memcmp(back, data[0], 4096) == 0);

	/* the number given to another file: learned again, from one try */
	CHECK_EQ(close(fd), 0);
	CHECK_EQ(scratch(), fd);
	int t2 = tries;
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_close(sqe, fd);         /* the ring's own CLOSE forgets the number's kind */
	CHECK_EQ(io_uring_submit(&ring), 1);
	CHECK_EQ(io_uring_wait_cqe(&ring, &cqe), 0);
	CHECK_EQ(cqe->res, 0);
	io_uring_cqe_seen(&ring, cqe);
	CHECK_EQ(scratch(), fd);
	CHECK_EQ(write_one(&ring, fd, 3), 4096);
	if (emulated)
		CHECK(tries > t2);
	int t3 = tries;
	write_batch(&ring, fd, 70);
	CHECK_EQ(tries, t3);
	close(fd);
	io_uring_queue_exit(&ring);
}
#else
static void body(void)
{
}
#endif

int main(void)
{
#if defined(__x86_64__)
	return tu_uring_main(body);
#else
	tu_part_skip("x86-64", "RWF_NOWAIT writes refused by a seccomp trap",
		     "the SIGSYS handler sets the result in an x86-64 register");
	return 0;
#endif
}
