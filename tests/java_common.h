/* SPDX-License-Identifier: MIT */
/* java_common.h: what tests/test_java_*.c share: where the build's Java parts
 * are (BIN/javalib, BIN = $UR_BIN, else two levels above the test program),
 * whether they can run here (a java launcher, the jars and liburfs_jni.so
 * built: the Makefile builds them only where javac is; else exit 77, a counted
 * skip), and running one Java class of the tests' jars in the current directory.
 * Header only. It must never turn a failure into a skip: it skips only for a
 * missing JDK or unbuilt parts, before any code under test has run. */
#ifndef JAVA_COMMON_H
#define JAVA_COMMON_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "parts.h"

static char jc_bin[PATH_MAX];   /* the build directory */

/* A sanitizer build (make SANITIZE=1) has an ASan-built liburfs_jni.so, which a
 * JVM loads only with ASan's runtime first: preloaded, with SIGSEGV left to
 * the JVM and no leak report (the JVM keeps its memory). gcc's runtimes. */
#if defined(__SANITIZE_ADDRESS__)
#define JC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JC_ASAN 1
#endif
#endif
#if defined(JC_ASAN)
#define JC_SAN_ENV "env LD_PRELOAD=\"$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)\" " \
	"ASAN_OPTIONS=handle_segv=0:detect_leaks=0:allow_user_segv_handler=1 " \
	"UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1"
#else
#define JC_SAN_ENV ""
#endif

/* snprintf into an array, failing the test if the text does not fit. */
#define JC_FMT(buf, ...) do { int n_ = snprintf((buf), sizeof(buf), __VA_ARGS__); \
	if (n_ < 0 || (size_t)n_ >= sizeof(buf)) { printf("FAIL %s:%d: text too long\n", \
		__FILE__, __LINE__); exit(1); } } while (0)

/* Finds the build and checks that the jars listed (space separated, under
 * javalib/) and the JNI library are there and a java launcher runs; exits 77
 * saying what is missing otherwise. */
static inline void jc_need(const char *jars)
{
	char path[PATH_MAX + 64], list[256];
	const char *b = getenv("UR_BIN");
	struct stat st;

	if (b) {
		JC_FMT(jc_bin, "%s", b);
	} else {
		ssize_t n = readlink("/proc/self/exe", jc_bin, sizeof jc_bin - 1);
		if (n <= 0) {
			printf("cannot find the build: no UR_BIN, no /proc/self/exe\n");
			exit(1);
		}
		jc_bin[n] = 0;
		for (int up = 0; up < 3; up++)   /* BIN/obj/t/test_x -> BIN */
			*strrchr(jc_bin, '/') = 0;
	}
#if defined(__clang__) && defined(JC_ASAN)
	printf("a JVM cannot load clang's ASan-built liburfs_jni.so here (its runtime is not preloaded)\n");
	exit(77);
#endif
	if (system("java -version >/dev/null 2>&1") != 0) {
		printf("no java launcher here (install openjdk-17-jdk-headless: scripts/install-deps.sh)\n");
		exit(77);
	}
	snprintf(list, sizeof list, "%s liburfs_jni.so", jars);
	for (char *s = strtok(list, " "); s; s = strtok(NULL, " ")) {
		JC_FMT(path, "%s/javalib/%s", jc_bin, s);
		if (stat(path, &st) != 0) {
			printf("%s is not built (make builds it where javac and H2's jar are)\n", path);
			exit(77);
		}
	}
}

/* The command "WRAP java ... CLASS ARGS" (WRAP, ARGS: shell text; WRAP may be "")
 * with the jars on the class path (and Debian's H2 jar), into cmd. */
static inline void jc_cmd(char *cmd, size_t cap, const char *wrap, const char *jars,
			  const char *cls, const char *args)
{
	char cp[8192] = "", one[PATH_MAX + 300];
	char list[256];

	JC_FMT(list, "%s", jars);
	for (char *s = strtok(list, " "); s; s = strtok(NULL, " ")) {
		JC_FMT(one, "%s'%s/javalib/%s'", cp[0] ? ":" : "", jc_bin, s);
		if (strlen(cp) + strlen(one) >= sizeof cp) {
			printf("FAIL %s:%d: class path too long\n", __FILE__, __LINE__);
			exit(1);
		}
		strcat(cp, one);
	}
	if ((size_t)snprintf(cmd, cap, "%s %s java -Djava.library.path='%s/javalib' -cp %s:/usr/share/java/h2.jar %s %s",
			     wrap, JC_SAN_ENV, jc_bin, cp, cls, args) >= cap) {
		printf("FAIL %s:%d: command too long\n", __FILE__, __LINE__);
		exit(1);
	}
}

/* Runs jc_cmd's command; returns its exit status (-1: not run). */
static inline int jc_run(const char *wrap, const char *jars, const char *cls, const char *args)
{
	char cmd[16384];
	int st;

	jc_cmd(cmd, sizeof cmd, wrap, jars, cls, args);
	printf("running: %s\n", cmd);
	fflush(stdout);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

/* The arguments the Java test classes take into args: "CWD CWD/img.sfs" (a
 * fresh 64 MiB image made in the test's directory, and a directory dropin/
 * there for jc_dropin_run), then more, then io_uring_arg when the kernel's
 * io_uring runs here (a part that ran, else one skipped: "the kernel's
 * io_uring: what"). */
static inline void jc_args(char *args, size_t cap, const char *more, const char *io_uring_arg,
			   const char *what)
{
	char cwd[PATH_MAX], cmd[PATH_MAX + 64], why[160], label[200];

	if (!getcwd(cwd, sizeof cwd) || mkdir("dropin", 0700) != 0) {
		printf("FAIL %s:%d: the test's directory: %s\n", __FILE__, __LINE__, strerror(errno));
		exit(1);
	}
	JC_FMT(cmd, "\"%s/sfs\" mkfs --size 64M img.sfs >/dev/null", jc_bin);
	if (system(cmd) != 0) {
		printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, cmd);
		exit(1);
	}
	JC_FMT(label, "%s on the kernel's io_uring", what);
	int have = tu_have_io_uring(why, sizeof why);
	if ((size_t)snprintf(args, cap, "'%s' '%s/img.sfs' %s%s%s", cwd, cwd, more,
			     have ? " " : "", have ? io_uring_arg : "") >= cap) {
		printf("FAIL %s:%d: arguments too long\n", __FILE__, __LINE__);
		exit(1);
	}
	if (have)
		tu_part_ran("io_uring", label);
	else
		tu_part_skip("io_uring", label, why);
}

/* Runs CLASS "CWD/dropin none ARG" with the kernel's io_uring blocked (noring)
 * and the liburing drop-in emulating it (urfs-uring): its exit status, or 0
 * and a counted skip where noring cannot block io_uring (`noring true` fails). */
static inline int jc_dropin_run(const char *jars, const char *cls, const char *arg, const char *what)
{
	char cmd[PATH_MAX + 64], wrap[2 * PATH_MAX + 16], args[PATH_MAX + 200], cwd[PATH_MAX], label[200];

	JC_FMT(label, "%s on the drop-in's emulated ring", what);
	JC_FMT(cmd, "'%s/noring' true >/dev/null 2>&1", jc_bin);
	if (system(cmd) != 0) {
		tu_part_skip("seccomp", label, "noring cannot block io_uring here (no seccomp?)");
		return 0;
	}
	tu_part_ran("seccomp", label);
	JC_FMT(wrap, "'%s/noring' '%s/urfs-uring'", jc_bin, jc_bin);
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	JC_FMT(args, "'%s/dropin' none %s", cwd, arg);
	return jc_run(wrap, jars, cls, args);
}

#endif /* JAVA_COMMON_H */
