/* SPDX-License-Identifier: MIT */
/*
 * test_ur_write_v2 - the original design's check of the asynchronous write
 * path, on the simple API: write "Hello from async ur_write!\n" to
 * test_write.txt in the image ($SFS_IMAGE or disk.sfs, created if missing),
 * print the completion, read the file back through the ring and compare.
 * Afterwards `cat_ur test_write.txt` prints the text.
 *
 * Must never report success unless the bytes read back are exactly the ones
 * written.
 */
#include <stdio.h>
#include <string.h>
#include "ur_fs.h"

#define NAME "test_write.txt"

static int fail(const char *what, int err)
{
	fprintf(stderr, "test_ur_write_v2: %s: %s\n", what, strerror(-err));
	ur_shutdown();
	return 1;
}

int main(void)
{
	static const char msg[] = "Hello from async ur_write!\n";
	const size_t len = sizeof(msg) - 1;
	struct ur_completion c;
	char back[64];
	int r;

	if ((r = ur_init(0)) < 0) {
		fprintf(stderr, "test_ur_write_v2: ur_init: %s\n", ur_errmsg()[0] ? ur_errmsg() : strerror(-r));
		return 1;
	}
	int fd = ur_open(NAME, URFS_O_CREAT | URFS_O_TRUNC);
	if (fd < 0)
		return fail("ur_open " NAME, fd);

	if ((r = ur_write(fd, msg, len, 0, 2)) < 0)
		return fail("ur_write", r);
	if ((r = ur_submit()) < 0)
		return fail("ur_submit", r);
	if ((r = ur_wait(&c)) < 0)
		return fail("ur_wait", r);
	printf("Write completed: user_data=%llu, res=%d\n", (unsigned long long)c.user_data, c.res);
	if (c.user_data != 2 || c.res != (int)len) {
		fprintf(stderr, "test_ur_write_v2: FAILED: expected user_data=2, res=%zu\n", len);
		ur_shutdown();
		return 1;
	}

	memset(back, 0, sizeof(back));
	if ((r = ur_read(fd, back, sizeof(back), 0, 3)) < 0)
		return fail("ur_read", r);
	if ((r = ur_submit()) < 0)
		return fail("ur_submit", r);
	if ((r = ur_wait(&c)) < 0)
		return fail("ur_wait", r);
	if (c.user_data != 3 || c.res != (int)len || memcmp(back, msg, len) != 0) {
		fprintf(stderr, "test_ur_write_v2: FAILED: read back %d bytes (user_data=%llu): \"%.*s\"\n",
			c.res, (unsigned long long)c.user_data, c.res > 0 ? c.res : 0, back);
		ur_shutdown();
		return 1;
	}
	if ((r = ur_close(fd)) < 0)
		return fail("ur_close", r);
	if ((r = ur_shutdown()) < 0) {
		fprintf(stderr, "test_ur_write_v2: ur_shutdown: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}
