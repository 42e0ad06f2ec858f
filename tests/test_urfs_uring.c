/* SPDX-License-Identifier: MIT */
/* Description: the launcher urfs-uring runs an unchanged liburing program with
 * the drop-in. tests/progs/uring_which.c, compiled here against Debian's
 * <liburing.h> with -luring (no rpath), loads the system's liburing when run
 * alone; under $UR_BIN/urfs-uring the only liburing in its /proc/self/maps is
 * the drop-in $UR_BIN/uring/liburing.so.2 and its write + read-back through the
 * ring works: a kernel ring where the kernel allows io_uring (pass-through),
 * an emulated one with --emulate and under noring (io_uring blocked: without
 * the launcher the same program fails there). The launcher puts the drop-in's
 * directory in front of LD_LIBRARY_PATH keeping the caller's entries (no empty
 * entry when there were none), sets URING_EMULATE=1 only with --emulate, finds
 * the drop-in in uring/ beside itself (a copy elsewhere uses the uring/ beside
 * the copy), and with no drop-in there or in its built-in directory exits 125
 * without running the command; with --syscalls both of the front's libraries go in
 * front of LD_PRELOAD, after a sanitizer runtime that comes first in it; the
 * command's own status comes back, 127 for
 * a command not found. Before a set-group-ID or set-user-ID program of another
 * group or user (the loader then ignores LD_LIBRARY_PATH and the program gets
 * the system's liburing, which the test confirms) it prints a warning; not
 * before a plain one, nor under no_new_privs (noring), where the bit is not
 * applied and the drop-in loads.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#ifndef URFS_URING_DIR
#error "the Makefile passes the launcher's built-in directory (URFS_URING_DIR)"
#endif

static char out[16384];

/* Run cmd with sh, stdout and stderr into out; its exit status (-1: killed). */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	char full[8300];
	snprintf(full, sizeof full, "timeout 60 sh -c '%s' > run.out 2>&1", cmd);
	int st = system(full);
	char *t = tu_slurp("run.out");
	snprintf(out, sizeof out, "%s", t ? t : "");
	free(t);
	printf("$ %s\n%s", cmd, out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The liburing files uring_which reported: how many, and whether each is want. */
static int libs_are(const char *want)
{
	int n = 0;
	for (const char *p = strstr(out, "liburing: "); p; p = strstr(p + 1, "liburing: ")) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p - 10) : strlen(p + 10);
		if (l != strlen(want) || strncmp(p + 10, want, l))
			return -1;
		n++;
	}
	return n;
}

int main(void)
{
	const char *src = getenv("UR_SRCDIR"), *binenv = getenv("UR_BIN");
	char bin[PATH_MAX], dropin[PATH_MAX + 32], why[256];
	struct stat st;

	if (!src || !binenv) {
		printf("UR_SRCDIR or UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	/* The launcher finds itself through /proc/self/exe: the real path. */
	if (!realpath(binenv, bin))
		FAIL("realpath %s: %s", binenv, strerror(errno));
	snprintf(dropin, sizeof dropin, "%s/uring/liburing.so.2", bin);
	CHECK(stat(dropin, &st) == 0);

	CHECK_EQ(run("cc -std=gnu11 -Wall -Wextra -Werror %s -o uring_which %s/tests/progs/uring_which.c -luring",
		     tu_sanitize_cflags(dropin), src), 0);

	/* Alone it loads the system's liburing (so the checks below can tell). */
	run("env -u LD_LIBRARY_PATH ./uring_which f");
	CHECK(strstr(out, "liburing: "));
	CHECK_EQ(libs_are(dropin), -1);

	/* Under the launcher: the drop-in and nothing else, and the I/O works. */
	int kernel = tu_have_io_uring(why, sizeof why);
	CHECK_EQ(run("%s/urfs-uring ./uring_which f", bin), 0);
	CHECK_EQ(libs_are(dropin), 1);
	CHECK(strstr(out, "io: ok\n"));
	if (kernel) {
		tu_part_ran("io_uring", "pass-through: a kernel ring under urfs-uring");
		CHECK(strstr(out, "ring: kernel\n"));
	} else {
		tu_part_skip("io_uring", "pass-through: a kernel ring under urfs-uring", why);
		CHECK(strstr(out, "ring: emulated\n"));
	}

	/* --emulate: the emulated ring although the kernel may allow io_uring. */
	CHECK_EQ(run("env -u URING_EMULATE %s/urfs-uring --emulate ./uring_which f", bin), 0);
	CHECK_EQ(libs_are(dropin), 1);
	CHECK(strstr(out, "ring: emulated\n") && strstr(out, "io: ok\n"));

	/* io_uring blocked: the program fails alone and works under the launcher. */
	CHECK(run("%s/noring ./uring_which f", bin) != 0);
	CHECK(!strstr(out, "io: ok"));
	CHECK_EQ(run("env -u URING_EMULATE %s/noring %s/urfs-uring ./uring_which f", bin, bin), 0);
	CHECK_EQ(libs_are(dropin), 1);
	CHECK(strstr(out, "ring: emulated\n") && strstr(out, "io: ok\n"));

	/* LD_LIBRARY_PATH: the drop-in's directory in front, the caller's entries kept. */
	char want[2 * PATH_MAX + 256];
	CHECK_EQ(run("LD_LIBRARY_PATH=/nonexistent/a:/nonexistent/b %s/urfs-uring printenv LD_LIBRARY_PATH", bin), 0);
	snprintf(want, sizeof want, "%s/uring:/nonexistent/a:/nonexistent/b\n", bin);
	CHECK(!strcmp(out, want));
	snprintf(want, sizeof want, "%s/uring\n", bin);
	CHECK_EQ(run("env -u LD_LIBRARY_PATH %s/urfs-uring printenv LD_LIBRARY_PATH", bin), 0);
	CHECK(!strcmp(out, want));
	CHECK_EQ(run("LD_LIBRARY_PATH= %s/urfs-uring printenv LD_LIBRARY_PATH", bin), 0);
	CHECK(!strcmp(out, want));

	/* --syscalls: both libraries in front of the caller's LD_PRELOAD, after a sanitizer
	 * runtime that comes first in it (it must stay first); ld.so says it cannot load these. */
	CHECK_EQ(run("ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD=/nonexistent/a.so %s/urfs-uring "
		     "--syscalls printenv LD_PRELOAD", bin), 0);
	snprintf(want, sizeof want, "\n%s/uring/liburing.so.2:%s/uring/liburfs_syscalls.so:/nonexistent/a.so\n",
		 bin, bin);
	CHECK(strstr(out, want) != NULL);
	CHECK_EQ(run("ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD=/nonexistent/libasan.so.8:/nonexistent/b.so "
		     "%s/urfs-uring --syscalls printenv LD_PRELOAD", bin), 0);
	snprintf(want, sizeof want,
		 "\n/nonexistent/libasan.so.8:%s/uring/liburing.so.2:%s/uring/liburfs_syscalls.so:/nonexistent/b.so\n",
		 bin, bin);
	CHECK(strstr(out, want) != NULL);

	/* URING_EMULATE: set only by --emulate, an existing value left alone. */
	CHECK(run("env -u URING_EMULATE %s/urfs-uring printenv URING_EMULATE", bin) != 0);
	CHECK(!strcmp(out, ""));
	CHECK_EQ(run("env -u URING_EMULATE %s/urfs-uring --emulate printenv URING_EMULATE", bin), 0);
	CHECK(!strcmp(out, "1\n"));

	/* Exit statuses: the command's; 127 not found; 125 a bad option. */
	CHECK_EQ(run("%s/urfs-uring sh -c \"exit 7\"", bin), 7);
	CHECK_EQ(run("%s/urfs-uring ./no-such-program", bin), 127);
	CHECK_EQ(run("%s/urfs-uring --no-such-option true", bin), 125);
	CHECK_EQ(run("%s/urfs-uring", bin), 125);
	CHECK_EQ(run("%s/urfs-uring --help", bin), 0);
	CHECK(strstr(out, "--emulate"));

	/* A set-group-ID (or set-user-ID) program to another group: the loader
	 * ignores LD_LIBRARY_PATH for it, and the launcher says so first. */
	gid_t other = getuid() == 0 ? 65534 : (gid_t)-1;
	if (other == (gid_t)-1) {
		gid_t g[64];
		int n = getgroups(64, g);
		for (int k = 0; k < n; k++)
			if (g[k] != getgid())
				other = g[k];
	}
	if (other == (gid_t)-1 || other == getgid()) {
		tu_part_skip("set-ID", "the warning for a set-group-ID program",
			     "no group but our own to give a program (not root, no supplementary group)");
	} else {
		tu_part_ran("set-ID", "the warning for a set-group-ID program");
		CHECK_EQ(run("cp uring_which sgid_which && chgrp %u sgid_which && chmod 2755 sgid_which",
			     (unsigned)other), 0);
		run("%s/urfs-uring ./sgid_which f", bin);
		if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) {
			/* under noring: the bit is not applied, the drop-in loads, no word */
			CHECK(!strstr(out, "warning"));
			CHECK_EQ(libs_are(dropin), 1);
		} else {
			CHECK(strstr(out, "urfs-uring: warning: ./sgid_which is set-group-ID: the dynamic loader "
				      "ignores LD_LIBRARY_PATH for it, so it runs with the system's liburing"));
			CHECK(libs_are(dropin) != 1);           /* the warning is true */
		}
		if (getuid() == 0 && prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
			CHECK_EQ(run("cp uring_which suid_which && chown 65534 suid_which && chmod 4755 suid_which"), 0);
			run("%s/urfs-uring ./suid_which f", bin);
			CHECK(strstr(out, "urfs-uring: warning: ./suid_which is set-user-ID"));
		}
		/* not a word for a plain program, nor for one set-group-ID to our own group */
		CHECK_EQ(run("cp uring_which own_which && chmod 2755 own_which && "
			     "%s/urfs-uring --emulate ./own_which f", bin), 0);
		CHECK(!strstr(out, "warning"));
		CHECK_EQ(libs_are(dropin), 1);
	}

	/* A copy of the launcher uses the uring/ beside it... */
	CHECK_EQ(run("mkdir -p copy/uring && cp %s/urfs-uring copy/ && cp %s copy/uring/", bin, dropin), 0);
	char cwd[PATH_MAX], copy[PATH_MAX + 64];
	CHECK(getcwd(cwd, sizeof cwd));
	snprintf(copy, sizeof copy, "%s/copy/uring/liburing.so.2", cwd);
	CHECK_EQ(run("./copy/urfs-uring --emulate ./uring_which f"), 0);
	CHECK_EQ(libs_are(copy), 1);
	CHECK(strstr(out, "io: ok\n"));
	/* ... and with none there nor in its built-in directory, runs nothing. */
	char baked[PATH_MAX];
	snprintf(baked, sizeof baked, "%s/liburing.so.2", URFS_URING_DIR);
	if (stat(baked, &st) == 0) {
		char w[PATH_MAX + 64];
		snprintf(w, sizeof w, "%s is installed on this host", baked);
		tu_part_skip("no installed drop-in", "a launcher without a drop-in exits 125", w);
	} else {
		CHECK_EQ(run("rm copy/uring/liburing.so.2 && ./copy/urfs-uring touch ran"), 125);
		CHECK(strstr(out, "drop-in is missing") && strstr(out, "copy/uring/liburing.so.2") &&
		      strstr(out, baked));
		CHECK(access("ran", F_OK) != 0);
		/* Not an ELF file is no drop-in either. */
		CHECK_EQ(run("echo text > copy/uring/liburing.so.2 && ./copy/urfs-uring touch ran"), 125);
		CHECK(strstr(out, "Exec format error"));
		CHECK(access("ran", F_OK) != 0);
	}
	printf("ok\n");
	return 0;
}
