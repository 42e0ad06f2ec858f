/* SPDX-License-Identifier: MIT */
/* Description: a client that leaves a server of an O_DIRECT image,
 * by exiting or by kill -9 in the middle of its reads, takes its kernel AIO
 * context with it: the server waits for that context's I/O and destroys it
 * before it unmaps the client's region. Seen from outside: the server's
 * "[aio]" mappings (one per live context, /proc/PID/maps) return to what
 * they were before the client came, after each of six clients, while the
 * first client keeps the server alive. A server that forgets the context
 * keeps one more mapping per departed client (and would soon meet
 * aio-max-nr). Skipped (counted) where the scratch directory has no
 * O_DIRECT or the server uses no AIO. */
#include "test_ur_multi.h"

#define IMG "aio.sfs"
#define PAGES 64u
#define ROUNDS 6

/* The number of kernel AIO rings mapped into process pid. */
static int aio_maps(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		FAIL("%s: %s", path, strerror(errno));
	int n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "/[aio]") != NULL;
	fclose(f);
	return n;
}

/* A client: its own ring on the server, page reads of "f" for ever (kill
 * 1) or for a while, then it exits without a word (exit 0). */
static void reader(int forever, int ready_fd)
{
	struct urfs_ring r;
	mp_ring(&r, IMG, 0);
	int fd = mp_open(&r, "f", 0);
	if (fd < 0)
		FAIL("child open: %s", strerror(-fd));
	static uint8_t buf[8][MP_PAGE];
	uint64_t seed = 7;
	for (unsigned iter = 0; forever || iter < 200; iter++) {
		for (unsigned k = 0; k < 8; k++)
			urfs_prep_read(mp_sqe(&r), fd, buf[k], MP_PAGE, (mp_rand(&seed) % PAGES) * MP_PAGE);
		if (urfs_submit_and_wait(&r, 8) < 0)
			FAIL("child submit");
		for (unsigned k = 0; k < 8; k++) {
			struct urfs_cqe *cqe;
			if (urfs_wait_cqe(&r, &cqe) < 0 || cqe->res != (int)MP_PAGE)
				FAIL("child read");
			urfs_cqe_seen(&r, cqe);
		}
		if (iter == 10 && write(ready_fd, "r", 1) != 1)
			FAIL("ready");
	}
	_exit(0);   /* no urfs_queue_exit: the server sees the socket close */
}

int main(void)
{
	alarm(120);
	char why[128];
	if (!tu_have_odirect(".", why, sizeof(why))) {
		tu_part_skip("AIO", "a departed client's AIO context", why);
		return 0;
	}
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	mp_flags = URFS_SETUP_DIRECT;
	struct urfs_ring a;
	mp_ring(&a, IMG, 0);
	int fd = mp_open(&a, "f", URFS_O_CREAT);
	CHECK(fd >= 0);
	static uint8_t page[MP_PAGE];
	for (unsigned i = 0; i < PAGES; i++) {
		memset(page, 'a' + i % 26, sizeof(page));
		CHECK_EQ(mp_pwrite(&a, fd, page, MP_PAGE, (uint64_t)i * MP_PAGE), (int)MP_PAGE);
	}
	CHECK_EQ(mp_fd_op(&a, 1, fd), 0);
	CHECK_EQ(mp_pread(&a, fd, page, MP_PAGE, 0), (int)MP_PAGE);
	pid_t spid = a.server_pid;
	int base = aio_maps(spid);
	if (base < 1) {
		tu_part_skip("AIO", "a departed client's AIO context", "the server maps no AIO ring");
		return 0;
	}
	for (int round = 0; round < ROUNDS; round++) {
		int forever = round & 1, pfd[2];
		if (pipe(pfd) < 0)
			FAIL("pipe");
		pid_t kid = fork();
		if (kid < 0)
			FAIL("fork");
		if (kid == 0) {
			close(pfd[0]);
			reader(forever, pfd[1]);
		}
		close(pfd[1]);
		char c;
		if (read(pfd[0], &c, 1) != 1)
			FAIL("round %d: the client failed before its reads ran", round);
		close(pfd[0]);
		int during = aio_maps(spid);
		if (during != base + 1)
			FAIL("round %d: %d AIO rings in the server while a second client reads (expected %d)",
			     round, during, base + 1);
		if (forever)
			kill(kid, SIGKILL);
		int st;
		if (waitpid(kid, &st, 0) != kid)
			FAIL("waitpid");
		if (forever ? !WIFSIGNALED(st) : !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("round %d: the client ended with status %#x", round, st);
		uint64_t end = mp_now_ms() + 5000;
		int now;
		while ((now = aio_maps(spid)) != base && mp_now_ms() < end) {
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		if (now != base)
			FAIL("round %d: %d AIO rings in the server 5 s after the client %s (expected %d)",
			     round, now, forever ? "was killed" : "exited", base);
		printf("round %d: client %s, server back to %d AIO ring(s)\n", round,
		       forever ? "killed -9 mid-read" : "exited", base);
	}
	/* The first client still reads what it wrote. */
	CHECK_EQ(mp_pread(&a, fd, page, MP_PAGE, 5 * MP_PAGE), (int)MP_PAGE);
	CHECK_EQ(page[0], 'a' + 5);
	urfs_queue_exit(&a);
	tu_part_ran("AIO", "a departed client's AIO context");
	return 0;
}
