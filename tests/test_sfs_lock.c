/* SPDX-License-Identifier: MIT */
/* Description: SimpleFS allows one mounter at a time: a second mount of a
 * mounted image fails with -EBUSY and "in use by pid N" naming the holder
 * (this process, or a child that holds it), sfs_lock_holder() names the same
 * pid (0 when free), read-only mounts share, fsck refuses a mounted image,
 * and everything works again after unmount or the holder's exit.
 *
 * It must never leave a child behind: every child is reaped.
 */
#include <sfs.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static const char *img = "lock.sfs";

/* A mount that must fail with -EBUSY naming pid. */
static void expect_busy(unsigned flags, pid_t pid, const char *who)
{
	struct sfs *fs = NULL;
	char err[256] = "", want[64];
	int r = sfs_mount(img, flags, &fs, err, sizeof err);

	if (r != -EBUSY)
		FAIL("%s: second mount returned %d (%s), expected -EBUSY", who, r,
		     r < 0 ? strerror(-r) : "success");
	snprintf(want, sizeof want, "in use by pid %d", (int)pid);
	if (!strstr(err, want))
		FAIL("%s: message '%s' does not say '%s'", who, err, want);
	r = sfs_lock_holder(img);
	if (r != pid)
		FAIL("%s: sfs_lock_holder = %d, expected %d", who, r, (int)pid);
}

/* Run fn in a child; its exit status must be 0. */
static void in_child(void (*fn)(pid_t), pid_t arg, const char *what)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		FAIL("child (%s) failed", what);
}

static void child_expect_busy(pid_t holder)
{
	expect_busy(0, holder, "child vs parent");
	expect_busy(SFS_MOUNT_RDONLY, holder, "child read-only vs parent");
}

static void child_rdonly_ok(pid_t unused)
{
	struct sfs *fs;
	char err[256];
	struct sfs_stat st;

	(void)unused;
	if (sfs_mount(img, SFS_MOUNT_RDONLY, &fs, err, sizeof err) < 0)
		FAIL("child: read-only mount beside a read-only one: %s", err);
	CHECK_EQ(sfs_stat(fs, "data", &st), 0);
	CHECK_EQ(st.size, 5);
	CHECK_EQ(sfs_unmount(fs), 0);
}

int main(void)
{
	struct sfs *fs, *ro;
	struct sfs_fsck_result res;
	char err[256];
	int r, fd, p[2], q[2];
	pid_t pid, me = getpid();

	r = sfs_format(img, 8u << 20, 0);
	if (r < 0)
		FAIL("format: %s", strerror(-r));
	CHECK_EQ(sfs_lock_holder(img), 0);
	CHECK(sfs_lock_holder("no-such-image.sfs") < 0);

	/* 1. This process holds it. */
	r = sfs_mount(img, 0, &fs, err, sizeof err);
	if (r < 0)
		FAIL("mount: %s (%s)", strerror(-r), err);
	fd = sfs_file_open(fs, "data", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_write(fs, fd, "hello", 5), 5);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	expect_busy(0, me, "same process");
	expect_busy(SFS_MOUNT_RDONLY, me, "same process, read-only");
	r = sfs_fsck(img, 1, &res, NULL, NULL, err, sizeof err);
	if (r != -EBUSY)
		FAIL("fsck -y of a mounted image returned %d, expected -EBUSY", r);
	CHECK(strstr(err, "in use by pid") != NULL);
	r = sfs_format(img, 8u << 20, 0);
	if (r != -EBUSY)
		FAIL("format of a mounted image returned %d, expected -EBUSY", r);
	in_child(child_expect_busy, me, "busy");
	/* the holder still works after all those refusals */
	fd = sfs_file_open(fs, "data", 0);
	CHECK(fd >= 0);
	{
		char b[8];

		CHECK_EQ(sfs_file_pread(fs, fd, b, sizeof b, 0), 5);
		CHECK(memcmp(b, "hello", 5) == 0);
	}
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(sfs_lock_holder(img), 0);

	/* 2. Read-only mounts share; a writer is refused meanwhile. */
	r = sfs_mount(img, SFS_MOUNT_RDONLY, &ro, err, sizeof err);
	if (r < 0)
		FAIL("read-only mount: %s (%s)", strerror(-r), err);
	in_child(child_rdonly_ok, 0, "read-only beside read-only");
	r = sfs_mount(img, 0, &fs, err, sizeof err);
	if (r != -EBUSY)
		FAIL("read-write mount beside a read-only one returned %d, expected -EBUSY", r);
	fd = sfs_file_open(ro, "data", 0);
	if (fd >= 0) {
		CHECK_EQ(sfs_file_write(ro, fd, "x", 1), -EROFS);
		CHECK_EQ(sfs_file_close(ro, fd), 0);
	} else {
		CHECK_EQ(fd, -EROFS);
	}
	CHECK_EQ(sfs_file_open(ro, "new", SFS_O_CREAT), -EROFS);
	CHECK_EQ(sfs_unlink(ro, "data"), -EROFS);
	CHECK_EQ(sfs_unmount(ro), 0);

	/* 3. A child holds it: we are refused with its pid, until it exits. */
	CHECK(pipe(p) == 0 && pipe(q) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char c = 'm';

		close(p[0]);
		close(q[1]);
		if (sfs_mount(img, 0, &fs, err, sizeof err) < 0)
			c = 'e';
		if (write(p[1], &c, 1) != 1)
			_exit(2);
		if (read(q[0], &c, 1) != 1)      /* hold until told */
			_exit(3);
		if (c == 'u' && sfs_unmount(fs) < 0)
			_exit(4);
		if (c == 'u') {
			c = 'd';
			if (write(p[1], &c, 1) != 1)
				_exit(5);
			if (read(q[0], &c, 1) < 0)
				_exit(6);
		}
		_exit(0);
	}
	close(p[1]);
	close(q[0]);
	{
		char c = 0;

		CHECK_EQ(read(p[0], &c, 1), 1);
		if (c != 'm')
			FAIL("child could not mount");
		expect_busy(0, pid, "parent vs child");
		expect_busy(SFS_MOUNT_RDONLY, pid, "parent read-only vs child");
		/* the child unmounts but lives on: the image is free */
		c = 'u';
		CHECK_EQ(write(q[1], &c, 1), 1);
		CHECK_EQ(read(p[0], &c, 1), 1);
		CHECK_EQ(c, 'd');
		CHECK_EQ(sfs_lock_holder(img), 0);
		r = sfs_mount(img, 0, &fs, err, sizeof err);
		if (r < 0)
			FAIL("mount after the child's unmount: %s (%s)", strerror(-r), err);
		CHECK_EQ(sfs_unmount(fs), 0);
		CHECK_EQ(write(q[1], &c, 1), 1);
		CHECK(waitpid(pid, &r, 0) == pid);
		CHECK(WIFEXITED(r) && WEXITSTATUS(r) == 0);
	}
	close(p[0]);
	close(q[1]);

	/* 4. A holder that dies (SIGKILL) releases the lock. */
	CHECK(pipe(p) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char c = 'm';

		close(p[0]);
		if (sfs_mount(img, 0, &fs, err, sizeof err) < 0)
			c = 'e';
		if (write(p[1], &c, 1) != 1)
			_exit(2);
		for (;;)
			pause();
	}
	close(p[1]);
	{
		char c = 0;

		CHECK_EQ(read(p[0], &c, 1), 1);
		CHECK_EQ(c, 'm');
		expect_busy(0, pid, "parent vs a child about to die");
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &r, 0) == pid);
		close(p[0]);
	}
	CHECK_EQ(sfs_lock_holder(img), 0);
	r = sfs_mount(img, 0, &fs, err, sizeof err);
	if (r < 0)
		FAIL("mount after the holder died: %s (%s)", strerror(-r), err);
	{
		struct sfs_stat st;

		CHECK_EQ(sfs_stat(fs, "data", &st), 0);
		CHECK_EQ(st.size, 5);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
	printf("ok\n");
	return 0;
}
