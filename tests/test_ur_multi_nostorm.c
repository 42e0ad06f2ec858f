/* SPDX-License-Identifier: MIT */
/* Description: a client that finds the image held by a simplefs_server which
 * does not take clients yet (starting, or leaving: it holds the image's lock
 * and listens at no socket) waits for it and starts no other server
 * meanwhile (never a storm of servers, one started every few ms while the
 * holder lives). The holder here is a child of this test that mounts the
 * image (the lock names its pid), calls itself simplefs_server in its
 * command line, and lets go 400 ms after the client's first server (its pid
 * written by the wrapper that counts starts) has told it "in use by pid N"
 * and ended. The client waits for N to end (trying the socket), then starts
 * its own: two servers started in all, the ring works, and init took at
 * least the holder's 400 ms. */
#include "test_ur_multi.h"

#define IMG "s.sfs"
#define HOLD_MS 400

int main(int argc, char **argv)
{
	(void)argc;
	alarm(60);
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	if (!tu_wrap_server("count.sh", "echo $$ >> starts\n", ""))
		FAIL("UR_SERVER is not set");
	int ready[2];
	if (pipe(ready) < 0)
		FAIL("pipe");
	fflush(stdout);
	pid_t holder = fork();
	if (holder < 0)
		FAIL("fork");
	if (holder == 0) {
		/* /proc/self/cmdline reads argv's memory: name ourselves */
		static const char name[] = "simplefs_server";
		if (strlen(argv[0]) < sizeof(name) - 1)
			_exit(10);
		memset(argv[0], 0, strlen(argv[0]));
		memcpy(argv[0], name, sizeof(name) - 1);
		struct sfs *fs;
		char err[200];
		if (sfs_mount(IMG, 0, &fs, err, sizeof(err)) < 0)
			_exit(11);
		if (write(ready[1], "r", 1) != 1)
			_exit(12);
		/* the client's first server: its pid, then its end */
		char *st = NULL;
		struct timespec ms = { 0, 1000000L };
		while (!(st = tu_slurp("starts")) || !strchr(st, '\n')) {
			free(st);
			nanosleep(&ms, NULL);
		}
		pid_t first = atoi(st);
		free(st);
		while (first > 0 && kill(first, 0) == 0)
			nanosleep(&ms, NULL);
		struct timespec ts = { 0, HOLD_MS * 1000000L };
		nanosleep(&ts, NULL);
		_exit(sfs_unmount(fs) < 0 ? 13 : 0);
	}
	char b;
	if (read(ready[0], &b, 1) != 1)
		FAIL("the holder did not mount");
	uint64_t t0 = mp_now_ms();
	struct urfs_ring r;
	mp_ring(&r, IMG, 0);
	uint64_t took = mp_now_ms() - t0;
	char *s = tu_slurp("starts");
	int n = s ? tu_count(s, "\n") : 0;
	free(s);
	printf("init waited %llu ms for the holder (%d ms); %d servers started\n", (unsigned long long)took,
	       HOLD_MS, n);
	if (n != 2)
		FAIL("%d servers started while one holder held the image, want 2", n);
	if (took + 50 < HOLD_MS)
		FAIL("init returned after %llu ms, before the holder let go", (unsigned long long)took);
	int st;
	if (waitpid(holder, &st, 0) != holder || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("holder: status %#x", st);
	int fd = mp_open(&r, "f", URFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(mp_pwrite(&r, fd, "x", 1, 0), 1);
	CHECK_EQ(mp_fd_op(&r, 0, fd), 0);
	pid_t spid = r.server_pid;
	urfs_queue_exit(&r);
	mp_server_gone(spid, IMG, 10000);
	FSCK_CLEAN(IMG);
	return 0;
}
