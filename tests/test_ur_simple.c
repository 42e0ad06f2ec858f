/* SPDX-License-Identifier: MIT */
/* Description: the simple API (ur_init ... ur_shutdown). Many writes queued
 * (more than the ring holds: ur_write hands a full queue to the server by
 * itself), a synchronous ur_open/ur_close in the middle while completions are
 * pending (none may be lost or reordered: they come back from ur_wait and
 * ur_peek_cqe afterwards), reads at the file position, ur_peek_cqe copying
 * read data into the caller's buffer, errors as -errno (bad handle, calls
 * before ur_init, a second ur_init, a NULL name), and the data surviving ur_shutdown. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sfs.h"
#include "ur_fs.h"

#include "testutil.h"

int main(void)
{
	struct ur_completion c;
	int r;
	if (ur_open("x", 0) != -ENOTCONN || ur_submit() != -ENOTCONN)
		FAIL("calls before ur_init must fail with -ENOTCONN");
	if (sfs_format("s.sfs", 16ull << 20, 0) < 0)
		FAIL("format");
	if ((r = ur_init_image("s.sfs", 8, 0)) < 0)
		FAIL("ur_init_image: %s (%s)", strerror(-r), ur_errmsg());
	if (ur_init(8) != -EBUSY)
		FAIL("second ur_init");
	if ((r = ur_open(NULL, 0)) != -EFAULT)
		FAIL("ur_open(NULL): %d, expected -EFAULT", r);
	int fd = ur_open("data", URFS_O_CREAT | URFS_O_TRUNC);
	if (fd < 0)
		FAIL("ur_open: %s", strerror(-fd));

	/* 100 writes of 100 bytes on an 8-entry ring, a sync open in between */
	char rec[100][100];
	int fd2 = -1;
	for (int i = 0; i < 100; i++) {
		memset(rec[i], 'A' + i % 26, sizeof(rec[i]));
		if ((r = ur_write(fd, rec[i], 100, (uint64_t)i * 100, 1000 + i)) < 0)
			FAIL("ur_write %d: %s", i, strerror(-r));
		if (i == 50 && (fd2 = ur_open("other", URFS_O_CREAT)) < 0)
			FAIL("ur_open mid-stream: %s", strerror(-fd2));
	}
	if ((r = ur_submit()) < 0)
		FAIL("ur_submit: %s", strerror(-r));
	int next = 1000;
	while (next < 1100) {
		if ((r = (next % 2) ? ur_wait(&c) : ur_peek_cqe(&c)) == -EAGAIN)
			continue;
		if (r < 0)
			FAIL("wait: %s", strerror(-r));
		if ((int)c.user_data != next || c.res != 100)
			FAIL("completion %llu res %d, want %d res 100", (unsigned long long)c.user_data, c.res, next);
		next++;
	}
	if (ur_peek_cqe(&c) != -EAGAIN)
		FAIL("extra completion");
	if ((r = ur_close(fd2)) < 0)
		FAIL("ur_close: %s", strerror(-r));
	if (ur_close(fd2) != -EBADF)
		FAIL("double close");

	/* reads at the position, data copied in by ur_peek_cqe/ur_wait */
	static char back[10000];
	memset(back, 0, sizeof(back));
	for (int i = 0; i < 100; i++)
		if ((r = ur_read(fd, back + i * 100, 100, URFS_POS, 5000 + i)) < 0)
			FAIL("ur_read: %s", strerror(-r));
	ur_submit();
	for (int got = 0; got < 100;) {
		r = ur_peek_cqe(&c);
		if (r == -EAGAIN)
			continue;
		if (r < 0 || c.res != 100 || c.user_data != (uint64_t)(5000 + got))
			FAIL("read completion %d: r %d res %d ud %llu", got, r, c.res, (unsigned long long)c.user_data);
		if (memcmp(back + got * 100, rec[got], 100))
			FAIL("read %d: wrong bytes", got);
		got++;
	}
	if (ur_write(9999, "x", 1, 0, 1) < 0 || ur_submit() < 0 || ur_wait(&c) < 0 || c.res != -EBADF)
		FAIL("bad handle: res %d", c.res);
	if ((r = ur_close(fd)) < 0)
		FAIL("close");
	if ((r = ur_shutdown()) < 0)
		FAIL("ur_shutdown: %s", strerror(-r));
	if (ur_shutdown() != -ENOTCONN)
		FAIL("second shutdown");

	/* durable: check with SimpleFS directly */
	struct sfs *fs;
	char err[128];
	if ((r = sfs_mount("s.sfs", SFS_MOUNT_RDONLY, &fs, err, sizeof(err))) < 0)
		FAIL("mount: %s", err);
	int h = sfs_file_open(fs, "data", SFS_O_RDONLY);
	if (h < 0)
		FAIL("open after shutdown");
	static char all[10000];
	if (sfs_file_pread(fs, h, all, sizeof(all), 0) != 10000)
		FAIL("size after shutdown");
	for (int i = 0; i < 100; i++)
		if (memcmp(all + i * 100, rec[i], 100))
			FAIL("record %d after shutdown", i);
	sfs_file_close(fs, h);
	sfs_unmount(fs);
	printf("ok\n");
	return 0;
}
