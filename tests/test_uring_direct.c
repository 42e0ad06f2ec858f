/* SPDX-License-Identifier: MIT */
/* Description: O_DIRECT files through the drop-in, in all three modes: 32 aligned 4 KiB reads in
 * flight at once (and 8 writes) on a file opened O_DIRECT give pread's bytes, a write with
 * RWF_APPEND goes to the end of the file whatever its offset; emulated, they go
 * through the kernel's native AIO (the process then maps an AIO ring: "/[aio]" in /proc/self/maps;
 * one AIO context per ring, however many submissions used it), not through a thread per I/O.
 * F_SETFL clearing O_DIRECT makes an unaligned read work, and the fd's number turned into a pipe
 * (dup2) between submissions is read as the pipe (waiting for its data), not sent to AIO. Skips a
 * mode's work if the file system here refuses O_DIRECT. With io_setup refused (a seccomp trap that
 * counts it, x86-64 only), a new ring's O_DIRECT reads in three submissions go to its workers and
 * give the bytes, and the ring asked for an AIO context once (the kernel's ring: never).
 */
#include "test_uring.h"
#include "parts.h"
#include <fcntl.h>
#include <signal.h>
#include <ucontext.h>

#define BS 4096
#define NR 32

/* AIO rings mapped in this process: one per AIO context */
static int maps_aio(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;
	CHECK(f);
	while (fgets(line, sizeof line, f))
		if (strstr(line, "/[aio]"))
			n++;
	fclose(f);
	return n;
}

#if defined(__x86_64__)
static volatile sig_atomic_t io_setups;     /* io_setup calls refused by the filter below */

/* SIGSYS from the filter: count the io_setup and make it fail ENOSYS. */
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	if (si->si_syscall == __NR_io_setup) {
		io_setups++;
		((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
	}
}

/* From here on io_setup traps (SIGSYS: counted, -ENOSYS); 0 or -errno. */
static int refuse_io_setup(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		return -errno;
	struct sock_filter f[] = {
		NORING_FILTER_HEAD,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	return noring_install(f, sizeof(f) / sizeof(f[0]));
}

/* Kernel AIO refused (io_setup -ENOSYS): a new ring's O_DIRECT reads, three submissions, go to
 * its workers and give the bytes; the ring asked for an AIO context once (the kernel's: never). */
static void aio_refused(int fd, uint8_t *buf, const uint8_t *data)
{
	struct io_uring r2;
	struct io_uring_cqe c;
	CHECK_EQ(refuse_io_setup(), 0);
	CHECK_EQ(io_uring_queue_init(8, &r2, 0), 0);
	for (int i = 0; i < 3; i++) {
		io_uring_prep_read(tu_sqe(&r2), fd, buf, BS, (uint64_t)(NR - 1 - i) * BS);
		CHECK_EQ(io_uring_submit(&r2), 1);
		tu_reap(&r2, &c, 1);
		CHECK_EQ(c.res, BS);
		CHECK(memcmp(buf, data + (NR - 1 - i) * BS, BS) == 0);
	}
	CHECK_EQ(io_setups, tu_mode != TU_KERNEL);
	io_uring_queue_exit(&r2);
}
#endif

static void body(void)
{
	alarm(30);                       /* a wait that never ends (a lost AIO completion) fails */
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(64, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	char path[] = "uring_direct.XXXXXX";
	int wfd = mkstemp(path);
	CHECK(wfd >= 0);
	uint8_t *data = malloc(NR * BS);
	CHECK(data);
	for (int i = 0; i < NR * BS; i++)
		data[i] = (uint8_t)(i * 131 + i / BS);
	CHECK_EQ(write(wfd, data, NR * BS), NR * BS);
	CHECK_EQ(fsync(wfd), 0);
	int fd = open(path, O_RDWR | O_DIRECT);
	unlink(path);
	close(wfd);
	if (fd < 0) {
		printf("O_DIRECT refused here (%s): nothing to check\n", strerror(errno));
		io_uring_queue_exit(&ring);
		return;
	}
	uint8_t *buf;
	CHECK_EQ(posix_memalign((void **)&buf, BS, NR * BS), 0);
	memset(buf, 0, NR * BS);
	for (int i = 0; i < NR; i++) {
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		int blk = (i * 7) % NR;
		io_uring_prep_read(s, fd, buf + i * BS, BS, (uint64_t)blk * BS);
		s->user_data = (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), NR);
	struct io_uring_cqe c[NR];
	tu_reap(&ring, c, NR);
	for (int i = 0; i < NR; i++) {
		int blk = (i * 7) % NR;
		CHECK_EQ(tu_find(c, NR, (uint64_t)i)->res, BS);
		CHECK(memcmp(buf + i * BS, data + blk * BS, BS) == 0);
	}
	if (tu_mode != TU_KERNEL)
		CHECK_EQ(maps_aio(), 1);
	/* writes, then read back with pread */
	for (int i = 0; i < 8; i++) {
		memset(buf + i * BS, 'A' + i, BS);
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_write(s, fd, buf + i * BS, BS, (uint64_t)(i * 2) * BS);
		s->user_data = 100 + (uint64_t)i;
	}
	CHECK_EQ(io_uring_submit(&ring), 8);
	tu_reap(&ring, c, 8);
	for (int i = 0; i < 8; i++) {
		CHECK_EQ(tu_find(c, 8, 100 + (uint64_t)i)->res, BS);
		uint8_t *chk;
		CHECK_EQ(posix_memalign((void **)&chk, BS, BS), 0);
		CHECK_EQ(pread(fd, chk, BS, (off_t)(i * 2) * BS), BS);
		CHECK(chk[0] == 'A' + i && chk[BS - 1] == 'A' + i);
		free(chk);
	}
	/* a write with RWF_APPEND goes to the end of the file, whatever its offset */
	memset(buf, 'Z', BS);
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	io_uring_prep_write(s, fd, buf, BS, 0);
	s->rw_flags = RWF_APPEND;
	s->user_data = 110;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, BS);
	CHECK_EQ(lseek(fd, 0, SEEK_END), (off_t)(NR + 1) * BS);
	memset(buf, 0, 2 * BS);
	CHECK_EQ(pread(fd, buf, BS, (off_t)NR * BS), BS);
	CHECK(buf[0] == 'Z' && buf[BS - 1] == 'Z');
	CHECK_EQ(pread(fd, buf + BS, BS, 0), BS);
	CHECK(buf[BS] == 'A');
	/* an unaligned O_DIRECT read fails as the kernel says (-EINVAL), nothing crashes */
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, fd, buf + 1, 100, 3);
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, -EINVAL);
	/* F_SETFL clears O_DIRECT: the same unaligned read now gives the bytes (block 0 is 'A's) */
	CHECK_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT), 0);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, fd, buf + 1, 100, 3);
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, 100);
	CHECK(buf[1] == 'A' && buf[100] == 'A');
	CHECK_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT), 0);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, fd, buf, BS, 0);
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_reap(&ring, c, 1);
	CHECK_EQ(c[0].res, BS);
	/* one AIO context for the ring, made on first use, whatever the submissions since */
	CHECK_EQ(maps_aio(), tu_mode != TU_KERNEL);
#if defined(__x86_64__)
	aio_refused(fd, buf, data);
#endif
	/* the number, known O_DIRECT, becomes an empty pipe (dup2) before the next submission: a
	 * READ at an offset waits for the pipe's data (emulated: the cached O_DIRECT is asked
	 * again in each submission; kernel AIO would block the submit on a pipe) */
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(dup2(p[0], fd), fd);
	s = io_uring_get_sqe(&ring);
	io_uring_prep_read(s, fd, buf, BS, 0);
	s->user_data = 200;
	CHECK_EQ(io_uring_submit(&ring), 1);
	tu_none(&ring);
	CHECK_EQ(write(p[1], "pipe", 4), 4);
	tu_next(&ring, &c[0]);
	CHECK_EQ(c[0].user_data, 200);
	CHECK_EQ(c[0].res, 4);
	CHECK(memcmp(buf, "pipe", 4) == 0);
	close(p[0]);
	close(p[1]);
	free(buf);
	free(data);
	close(fd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
#if defined(__x86_64__)
	tu_part_ran("x86-64", "kernel AIO refused: workers, one io_setup per ring");
#else
	tu_part_skip("x86-64", "kernel AIO refused: workers, one io_setup per ring",
		     "the SIGSYS handler sets x86-64's return register");
#endif
	return tu_uring_main(body);
}
