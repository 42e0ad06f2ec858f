/* SPDX-License-Identifier: MIT */
/*
 * urfs-uring - run a program with the liburing drop-in (this project's
 * liburing.so.2) in place of the system's liburing: the drop-in's private
 * directory goes in front of LD_LIBRARY_PATH, then COMMAND is executed. With
 * --emulate, URING_EMULATE=1 forces the emulated ring even where the kernel's
 * io_uring works (docs/DROPIN.md). With --syscalls, both the drop-in and the
 * system-call front's preload (liburfs_syscalls.so) go in front of LD_PRELOAD:
 * a program that makes the io_uring system calls itself (fio, liburing.a) runs
 * on the emulated ring too, where the kernel's is blocked.
 *
 *   urfs-uring [--emulate] [--syscalls] [--] COMMAND [ARG...]
 *
 * The drop-in is looked for in uring/ beside this program (the build tree:
 * ./urfs-uring runs with ./uring/liburing.so.2), then in URFS_URING_DIR, baked
 * in at build time ($(LIBDIR)/urfs: /usr/lib/<triplet>/urfs in the package).
 * A C program rather than a script: it finds itself through /proc/self/exe
 * (not $0), its directory is baked in by the Makefile like the library's
 * libexec directory, and it is built, installed and checked as the other tools.
 * A COMMAND the loader will run in secure mode (set-user-ID or set-group-ID to
 * another user or group, file capabilities) ignores LD_LIBRARY_PATH: that is
 * said on stderr before it runs.
 * Must never: run COMMAND when no drop-in is found (exit 125, naming the paths
 * it looked at), drop or reorder the caller's LD_LIBRARY_PATH entries, or add
 * an empty entry (the dynamic loader would read it as the current directory).
 * Exit status: COMMAND's; 125 when urfs-uring itself fails; 126/127 as the
 * shell's for a command that cannot be run / is not found.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "../src/common/launcher.h"

#ifndef URFS_URING_DIR
#define URFS_URING_DIR "/usr/local/lib/urfs"
#endif
#define DROPIN "liburing.so.2"
#define FRONT "liburfs_syscalls.so"

static void usage(FILE *f)
{
	fprintf(f, "usage: urfs-uring [--emulate] [--syscalls] [--] COMMAND [ARG...]\n"
		"Run COMMAND with urfs's liburing drop-in in place of the system's liburing\n"
		"(its directory goes in front of LD_LIBRARY_PATH). Where the kernel's io_uring\n"
		"is blocked the drop-in emulates the ring; elsewhere it passes through.\n"
		"  --emulate  set URING_EMULATE=1: emulate the ring even where io_uring works\n"
		"  --syscalls also serve programs that make the io_uring system calls\n"
		"             themselves (fio, liburing.a): both libraries go in LD_PRELOAD\n"
		"  --help     this text\n"
		"The drop-in: uring/" DROPIN " beside urfs-uring, else " URFS_URING_DIR "/" DROPIN "\n");
}

/* 0 if dir/name is a readable ELF file, else -errno (ENOEXEC: not ELF). */
static int check_lib(const char *dir, const char *name)
{
	char path[PATH_MAX + 32], magic[4];
	struct stat st;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = 0;
	if (fstat(fd, &st) != 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EISDIR;
	else if (read(fd, magic, 4) != 4 || memcmp(magic, "\177ELF", 4))
		r = -ENOEXEC;
	close(fd);
	return r;
}

static int check_dropin(const char *dir)
{
	return check_lib(dir, DROPIN);
}

/* The directory of this program (from /proc/self/exe) followed by /uring, or "". */
static void beside_self(char *out, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	out[0] = '\0';
	if (n <= 0)
		return;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	if ((size_t)snprintf(out, cap, "%s/uring", exe) >= cap)
		out[0] = '\0';
}

/* The file execvp would run for cmd: cmd itself when it has a '/', else the
 * first executable regular file of that name in $PATH. 0, or -1. */
static int which(const char *cmd, char *out, size_t cap)
{
	struct stat st;

	if (strchr(cmd, '/'))
		return (size_t)snprintf(out, cap, "%s", cmd) < cap ? 0 : -1;
	const char *p = getenv("PATH");
	for (p = p ? p : "/usr/local/bin:/usr/bin:/bin"; ; p++) {
		size_t n = strcspn(p, ":");
		if ((size_t)snprintf(out, cap, "%.*s%s%s", (int)n, p, n ? "/" : "", cmd) < cap &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		p += n;
		if (!*p)
			return -1;
	}
}

/* Says so on stderr when the dynamic loader will run COMMAND in secure mode
 * (set-user-ID or set-group-ID to another user or group, or file
 * capabilities): it then ignores LD_LIBRARY_PATH, and the program runs with
 * the system's liburing, not the drop-in. */
static void warn_secure(const char *cmd)
{
	char path[PATH_MAX];
	struct stat st;
	const char *what = NULL;

	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
		return;   /* no_new_privs (noring): set-ID bits and capabilities are not applied */
	if (which(cmd, path, sizeof path) < 0 || stat(path, &st) != 0)
		return;   /* execvp will say what is wrong */
	if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
		what = "set-user-ID";
	else if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid())
		what = "set-group-ID";
	else if (getxattr(path, "security.capability", NULL, 0) > 0)
		what = "given file capabilities";
	if (what)
		fprintf(stderr, "urfs-uring: warning: %s is %s: the dynamic loader ignores "
			"LD_LIBRARY_PATH for it, so it runs with the system's liburing, not the "
			"drop-in (run a copy without that bit, e.g. cp %s /tmp/)\n", path, what, path);
}

/* LD_PRELOAD: dir/liburing.so.2 and dir/liburfs_syscalls.so, then the caller's (a sanitizer
 * runtime first in the caller's stays first). 0 or -1 (said). */
static int set_preload(const char *dir)
{
	int r = check_lib(dir, FRONT);
	if (r < 0) {
		fprintf(stderr, "urfs-uring: --syscalls: %s/%s: %s\n", dir, FRONT, strerror(-r));
		return -1;
	}
	const char *old = getenv("LD_PRELOAD");
	if (!old)
		old = "";
	/* a sanitizer's runtime the caller preloads first stays first (it checks that it is) */
	size_t keep = strcspn(old, ": ");
	char first[PATH_MAX];
	snprintf(first, sizeof first, "%.*s", (int)(keep < sizeof first ? keep : 0), old);
	if (!strstr(first, "libasan.so") && !strstr(first, "libclang_rt.asan"))
		keep = 0;
	size_t len = 2 * strlen(dir) + sizeof(DROPIN) + sizeof(FRONT) + strlen(old) + 8;
	char *v = malloc(len);
	if (!v) {
		fprintf(stderr, "urfs-uring: LD_PRELOAD: %s\n", strerror(ENOMEM));
		return -1;
	}
	const char *rest = old + keep + (keep && old[keep] ? 1 : 0);
	snprintf(v, len, "%.*s%s%s/%s:%s/%s%s%s", (int)keep, old, keep ? ":" : "", dir, DROPIN, dir, FRONT,
		 rest[0] ? ":" : "", rest);
	if (setenv("LD_PRELOAD", v, 1) != 0) {
		fprintf(stderr, "urfs-uring: setenv: %s\n", strerror(errno));
		free(v);
		return -1;
	}
	free(v);
	return 0;
}

int main(int argc, char **argv)
{
	int emulate = 0, syscalls = 0, i = 1;

	for (; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--emulate"))
			emulate = 1;
		else if (!strcmp(argv[i], "--syscalls"))
			syscalls = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(stdout), 0;
		else
			return launcher_usage_error("urfs-uring", argv[i], usage);
	}
	i += i < argc && !strcmp(argv[i], "--");
	if (i >= argc)
		return launcher_usage_error("urfs-uring", NULL, usage);

	char local[PATH_MAX + 16];
	const char *dir = NULL;
	beside_self(local, sizeof local);
	int r_local = local[0] ? check_dropin(local) : -ENOENT;
	int r_baked = -ENOENT;
	if (r_local == 0)
		dir = local;
	else if ((r_baked = check_dropin(URFS_URING_DIR)) == 0)
		dir = URFS_URING_DIR;
	if (!dir) {
		fprintf(stderr, "urfs-uring: the liburing drop-in is missing: %s/%s: %s; %s/%s: %s\n",
			local[0] ? local : "(beside urfs-uring)", DROPIN, strerror(-r_local),
			URFS_URING_DIR, DROPIN, strerror(-r_baked));
		return LAUNCHER_FAILED;
	}

	/* The drop-in's directory first, then the caller's entries as they were. */
	const char *old = getenv("LD_LIBRARY_PATH");
	size_t len = strlen(dir) + (old ? strlen(old) : 0) + 2;
	char *path = malloc(len);
	if (!path) {
		fprintf(stderr, "urfs-uring: LD_LIBRARY_PATH: %s\n", strerror(ENOMEM));
		return LAUNCHER_FAILED;
	}
	if (old && old[0])
		snprintf(path, len, "%s:%s", dir, old);
	else
		snprintf(path, len, "%s", dir);
	if (setenv("LD_LIBRARY_PATH", path, 1) != 0 ||
	    (emulate && setenv("URING_EMULATE", "1", 1) != 0)) {
		fprintf(stderr, "urfs-uring: setenv: %s\n", strerror(errno));
		return LAUNCHER_FAILED;
	}
	free(path);
	if (syscalls && set_preload(dir) < 0)
		return LAUNCHER_FAILED;

	warn_secure(argv[i]);
	return launcher_exec("urfs-uring", argv + i);
}
