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

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char jc_bin[PATH_MAX];   /* the build directory */

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

/* Runs "java ... CLASS ARGS" (ARGS: shell text) with the jars on the class
 * path (and Debian's H2 jar); returns its exit status (-1: not run). */
static inline int jc_run(const char *jars, const char *cls, const char *args)
{
	char cp[8192] = "", cmd[16384], one[PATH_MAX + 300];
	char list[256];
	int st;

	snprintf(list, sizeof list, "%s", jars);
	for (char *s = strtok(list, " "); s; s = strtok(NULL, " ")) {
		JC_FMT(one, "%s'%s/javalib/%s'", cp[0] ? ":" : "", jc_bin, s);
		if (strlen(cp) + strlen(one) >= sizeof cp)
			return -1;
		strcat(cp, one);
	}
	JC_FMT(cmd, "java -Djava.library.path='%s/javalib' -cp %s:/usr/share/java/h2.jar %s %s",
	       jc_bin, cp, cls, args);
	printf("running: %s\n", cmd);
	fflush(stdout);
	st = system(cmd);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

#endif /* JAVA_COMMON_H */
