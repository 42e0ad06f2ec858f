/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS survives SIGKILL of a writer: a child appends to four
 * files on an image file (random sizes, fsync after one to three writes,
 * sometimes a truncate, and a scratch file created and removed) and reports
 * every fsynced size through a pipe; the parent kills it at a random moment
 * (10 rounds, fixed seed), then checks: the lock is free, fsck is clean, it
 * mounts, every file has at least its fsynced size with exact bytes, and the
 * unsynced tail holds only the file's own bytes or zeros.
 *
 * It must never leave the child running (it is killed and reaped each round).
 */
#include <sfs.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define NFILES   4
#define ROUNDS   10
#define MAXFILE  (4u << 20)
static const char *img = "kill.sfs";

/* pipe record: the child's fsynced size, or an intent to shrink */
struct rec {
	uint32_t file;       /* | 0x80000000: intent to truncate to size */
	uint32_t size;
};

static uint64_t synced[NFILES];    /* the parent's knowledge */

static uint8_t pat(unsigned file, uint64_t pos)
{
	return (uint8_t)((file + 1) * 37 + pos * 13 + (pos >> 11));
}

static uint64_t rng;
static uint32_t rnd(void)
{
	return tu_lcg32(&rng);
}

static void send_rec(int wfd, uint32_t file, uint64_t size)
{
	struct rec r = { file, (uint32_t)size };

	if (write(wfd, &r, sizeof r) != (ssize_t)sizeof r)
		_exit(3);
}

/* The child: never returns; errors exit with a code the parent reports. */
static void child(int wfd, unsigned round)
{
	static uint8_t buf[65536];
	struct sfs *fs;
	char err[256];
	uint64_t size[NFILES];
	int fd[NFILES];

	rng = 1000 + round;
	if (sfs_mount(img, 0, &fs, err, sizeof err) < 0)
		_exit(10);
	for (unsigned i = 0; i < NFILES; i++) {
		char name[16];

		snprintf(name, sizeof name, "k%u", i);
		fd[i] = sfs_file_open(fs, name, SFS_O_CREAT);
		if (fd[i] < 0)
			_exit(11);
		/* drop the unverified tail left by the last kill */
		if (sfs_file_truncate(fs, fd[i], synced[i]) < 0 || sfs_file_fsync(fs, fd[i]) < 0)
			_exit(12);
		size[i] = synced[i];
	}
	for (unsigned iter = 0;; iter++) {
		unsigned i = rnd() % NFILES, nw = 1 + rnd() % 3;

		if (size[i] > MAXFILE) {
			uint64_t ns = rnd() % 2 ? 0 : size[i] / 3;

			send_rec(wfd, i | 0x80000000u, ns);
			if (sfs_file_truncate(fs, fd[i], ns) < 0 || sfs_file_fsync(fs, fd[i]) < 0)
				_exit(13);
			size[i] = ns;
			continue;
		}
		for (unsigned k = 0; k < nw; k++) {
			size_t len = 1 + rnd() % sizeof buf;

			for (size_t b = 0; b < len; b++)
				buf[b] = pat(i, size[i] + b);
			if (sfs_file_pwrite(fs, fd[i], buf, len, size[i]) != (ssize_t)len)
				_exit(14);
			size[i] += len;
		}
		if (sfs_file_fsync(fs, fd[i]) < 0)
			_exit(15);
		send_rec(wfd, i, size[i]);
		if (iter % 16 == 5) {           /* a scratch file: create, write, remove */
			int s = sfs_file_open(fs, "scratch", SFS_O_CREAT | SFS_O_TRUNC);

			if (s < 0 || sfs_file_pwrite(fs, s, buf, 20000, 0) != 20000 ||
			    sfs_file_fsync(fs, s) < 0 || sfs_unlink(fs, "scratch") < 0)
				_exit(16);
			if (iter % 32 == 5)
				sfs_file_close(fs, s);   /* else: left open, unlinked */
		}
	}
}

static void take(const struct rec *r)
{
	uint32_t f = r->file & 0x7fffffffu;

	CHECK(f < NFILES);
	if (r->file & 0x80000000u) {
		if (r->size < synced[f])
			synced[f] = r->size;
	} else {
		synced[f] = r->size;
	}
}

static void check_image(unsigned round)
{
	static uint8_t buf[MAXFILE + 65536 * 3 + 1];
	struct sfs_fsck_result res = { 0, 0 };
	struct sfs *fs;
	char err[256] = "";
	int r;

	r = sfs_lock_holder(img);
	if (r != 0)
		FAIL("round %u: lock holder %d after the holder was killed", round, r);
	r = sfs_fsck(img, 0, &res, NULL, NULL, err, sizeof err);
	if (r < 0)
		FAIL("round %u: fsck: %s (%s)", round, strerror(-r), err);
	if (res.errors_found)
		FAIL("round %u: fsck found %u errors after SIGKILL", round, res.errors_found);
	r = sfs_mount(img, SFS_MOUNT_RDONLY, &fs, err, sizeof err);
	if (r < 0)
		FAIL("round %u: mount: %s (%s)", round, strerror(-r), err);
	for (unsigned i = 0; i < NFILES; i++) {
		char name[16];
		ssize_t n;
		int fd;

		snprintf(name, sizeof name, "k%u", i);
		fd = sfs_file_open(fs, name, SFS_O_RDONLY);
		if (fd < 0) {
			if (fd == -ENOENT && synced[i] == 0)
				continue;
			FAIL("round %u: open %s: %s", round, name, strerror(-fd));
		}
		n = sfs_file_pread(fs, fd, buf, sizeof buf, 0);
		CHECK(n >= 0 && (size_t)n < sizeof buf);
		if ((uint64_t)n < synced[i])
			FAIL("round %u: %s has %zd bytes, %" PRIu64 " were fsynced", round, name, n, synced[i]);
		for (uint64_t p = 0; p < (uint64_t)n; p++) {
			if (buf[p] == pat(i, p))
				continue;
			if (p < synced[i])
				FAIL("round %u: %s: fsynced byte %" PRIu64 " is 0x%02x, expected 0x%02x",
				     round, name, p, buf[p], pat(i, p));
			if (buf[p] != 0)
				FAIL("round %u: %s: unsynced byte %" PRIu64 " is 0x%02x: neither its own nor zero",
				     round, name, p, buf[p]);
		}
		sfs_file_close(fs, fd);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
}

int main(void)
{
	unsigned total_recs = 0;
	int r;

	r = sfs_format(img, 64u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	rng = 7;
	for (unsigned round = 0; round < ROUNDS; round++) {
		int p[2], status;
		pid_t pid;
		long delay_ms = 20 + rnd() % 150;
		struct timespec t0, now;
		struct rec rec;
		unsigned recs = 0;

		CHECK(pipe(p) == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			close(p[0]);
			child(p[1], round);
		}
		close(p[1]);
		/* Even rounds: time from the first fsync, so every round gets some
		 * work done even on a slow machine; odd rounds: from the fork, so
		 * the kill may also land in the mount and its recovery. */
		if (round % 2 == 0 && read(p[0], &rec, sizeof rec) == (ssize_t)sizeof rec) {
			take(&rec);
			recs++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (;;) {
			struct pollfd pfd = { p[0], POLLIN, 0 };
			long left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = delay_ms - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
			if (left <= 0)
				break;
			r = poll(&pfd, 1, (int)left);
			if (r > 0) {
				ssize_t n = read(p[0], &rec, sizeof rec);

				if (n == 0)
					break;          /* the child died on its own */
				CHECK(n == (ssize_t)sizeof rec);
				take(&rec);
				recs++;
			}
		}
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &status, 0) == pid);
		/* what it reported before dying */
		while (read(p[0], &rec, sizeof rec) == (ssize_t)sizeof rec) {
			take(&rec);
			recs++;
		}
		close(p[0]);
		if (!WIFSIGNALED(status))
			FAIL("round %u: the writer exited with %d before it was killed", round,
			     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		check_image(round);
		total_recs += recs;
		printf("round %u: killed after %ld ms, %u fsyncs reported, sizes %" PRIu64 " %" PRIu64
		       " %" PRIu64 " %" PRIu64 "\n", round, delay_ms, recs, synced[0], synced[1],
		       synced[2], synced[3]);
	}
	if (total_recs < ROUNDS)
		FAIL("only %u fsyncs in %u rounds: the test exercised nothing", total_recs, ROUNDS);
	printf("ok\n");
	return 0;
}
