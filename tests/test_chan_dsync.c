/* SPDX-License-Identifier: MIT */
/* Description: a ur channel opened URCH_DSYNC makes each write durable before
 * the call returns (SimpleFS has no O_DSYNC: the channel sends an FSYNC, which
 * commits): data written through urch_write, urch_write_fully and
 * urch_batch_write_fully each survives a SIGKILL of the server right after
 * the call, and so does urch_batch_write_force on a channel without DSYNC, checked from outside the channel with the SimpleFS library on the
 * image. The same write on a channel without DSYNC, killed the same way, shows
 * what the check would see without the FSYNC (printed: not a promise). */
#include <signal.h>
#include <sys/wait.h>
#include "test_chan_common.h"

#define LEN 12288u

static unsigned char data[LEN], got[2 * LEN];

/* Write data to a new file through one of the write calls, kill the server,
 * close the channel; the bytes the image then holds for the file, or -errno. */
static int64_t write_then_kill(const char *img, unsigned flags, int how)
{
	struct urch *ch;
	struct urch_opts o = { .image = img, .ring_entries = 16 };
	struct cfg c = { "ur", URCH_UR, 0, "f", img };
	int r = sfs_format(img, 32ull << 20, 0);
	CHECK(r == 0, "format: %s", strerror(-r));
	r = urch_open_opts("f", URCH_CREATE | flags, URCH_UR, &o, &ch);
	CHECK(r == 0, "open: %s", strerror(-r));
	int64_t n;
	if (how == 0) {
		n = urch_write(ch, data, LEN, 0);
	} else if (how == 1) {
		n = urch_write_fully(ch, data, LEN, 0);
	} else {
		struct urch_op ops[3];
		for (unsigned i = 0; i < 3; i++) {
			ops[i].pos = i * 4096ull;
			ops[i].buf = data + i * 4096u;
			ops[i].len = 4096;
			ops[i].result = 0;
		}
		r = how == 2 ? urch_batch_write_fully(ch, ops, 3) : urch_batch_write_force(ch, ops, 3, 0);
		CHECK(r == 0, "batch write: %d", r);
		for (unsigned i = 0; i < 3; i++)
			CHECK(ops[i].result == 4096, "batch op %u: %lld", i, (long long)ops[i].result);
		n = LEN;
	}
	CHECK(n == (int64_t)LEN, "write %d: %lld", how, (long long)n);
	pid_t srv = child_server();
	CHECK(srv > 0, "server process not found");
	CHECK(kill(srv, SIGKILL) == 0, "kill");
	int st = 0;
	CHECK(waitpid(srv, &st, 0) == srv && WIFSIGNALED(st), "reap");
	urch_close(ch);
	struct sfs *fs;
	char err[256];
	r = sfs_mount(img, 0, &fs, err, sizeof(err));
	CHECK(r == 0, "mount after the kill: %s (%s)", strerror(-r), err);
	int fd = sfs_file_open(fs, "f", SFS_O_RDONLY);
	sfs_unmount(fs);
	if (fd < 0)
		return fd;
	memset(got, 0, sizeof(got));
	return outside_read(&c, got, sizeof(got));
}

int main(void)
{
	static const char *const how[] = { "urch_write", "urch_write_fully", "urch_batch_write_fully" };
	fillpat(data, LEN, 0, 11);
	for (int h = 0; h < 3; h++) {
		int64_t n = write_then_kill("d.sfs", URCH_DSYNC, h);
		CHECK(n == (int64_t)LEN, "DSYNC %s, server killed: the image holds %lld bytes (%s)",
		      how[h], (long long)n, n < 0 ? strerror((int)-n) : "");
		CHECK(memcmp(got, data, LEN) == 0, "DSYNC %s: the data differs", how[h]);
		printf("ok DSYNC %s survives a killed server\n", how[h]);
	}
	/* urch_batch_write_force on a plain channel: the FSYNC drained behind
	 * the writes commits them before the call returns. */
	int64_t n = write_then_kill("f.sfs", 0, 3);
	CHECK(n == (int64_t)LEN, "urch_batch_write_force, server killed: the image holds %lld bytes (%s)",
	      (long long)n, n < 0 ? strerror((int)-n) : "");
	CHECK(memcmp(got, data, LEN) == 0, "urch_batch_write_force: the data differs");
	printf("ok urch_batch_write_force survives a killed server\n");
	n = write_then_kill("n.sfs", 0, 0);
	printf("without DSYNC, a killed server leaves %lld bytes%s\n", (long long)(n < 0 ? 0 : n),
	       n < 0 ? " (the file was never committed)" : "");
	return 0;
}
