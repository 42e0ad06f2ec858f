/* SPDX-License-Identifier: MIT */
/* Description: a program that ignores SIGCHLD (the kernel then reaps its
 * children itself, and waitpid finds none) still learns how its server
 * ended: ur_shutdown (urfs_queue_exit's status) answers 0 after a clean
 * unmount, as without the SIG_IGN (never -EIO for a clean exit), and the data
 * written is in the image.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sfs.h>
#include <ur_fs.h>
#include "testutil.h"

int main(void)
{
	struct ur_completion c;
	char buf[16] = "";

	CHECK(signal(SIGCHLD, SIG_IGN) != SIG_ERR);
	CHECK_EQ(sfs_format("img.sfs", 16 << 20, 0), 0);
	CHECK(setenv("SFS_IMAGE", "img.sfs", 1) == 0);

	/* the simple API */
	CHECK_EQ(ur_init(8), 0);
	int fd = ur_open("f", URFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(ur_write(fd, "sigchld", 7, 0, 1), 0);
	CHECK_EQ(ur_submit(), 1);
	CHECK_EQ(ur_wait(&c), 0);
	CHECK_EQ(c.res, 7);
	CHECK_EQ(ur_close(fd), 0);
	CHECK_EQ(ur_shutdown(), 0);

	/* again, on a server that this one's exit left unmounted: also clean */
	CHECK_EQ(ur_init_image("img.sfs", 8, 0), 0);
	CHECK_EQ(ur_shutdown(), 0);

	struct sfs *fs = MOUNT_OR_DIE("img.sfs");
	int h = sfs_file_open(fs, "f", SFS_O_RDONLY);
	CHECK(h >= 0);
	CHECK_EQ(sfs_file_pread(fs, h, buf, sizeof buf, 0), 7);
	CHECK(!memcmp(buf, "sigchld", 7));
	CHECK_EQ(sfs_file_close(fs, h), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	printf("ok\n");
	return 0;
}
