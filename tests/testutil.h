/* SPDX-License-Identifier: MIT */
/* testutil.h: the assertion macros and small SimpleFS helpers shared by the test programs
 * (FAIL/CHECK/CHECK_EQ, mount-or-fail, fsck-must-be-clean, a file's block count, crc32c,
 * the seeded pseudo-random generators, a whole file as a string, how often a string occurs in
 * another, running a script of the project as a test, the first two CPUs and pinning to one,
 * stopping a process and waiting until it is stopped, a wrapper script for the ring's server).
 * Header only (static inline), included as "testutil.h" by tests/test_*.c.
 * It must never hide a failure: every helper exits 1 with the caller's file:line on error. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <sfs.h>

#include "parts.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A test may define its own FAIL (e.g. to add a seed) before including this header. */
#ifndef FAIL
#define FAIL(...) do { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#endif
#define CHECK(c) do { if (!(c)) FAIL("%s", #c); } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) FAIL("%s = %lld, expected %s = %lld", #a, _a, #b, _b); } while (0)

/* The helpers report the caller's location, like FAIL does. */
#define TU_FAIL_AT(file, line, ...) do { fprintf(stderr, "FAIL %s:%d: ", (file), (line)); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

/* Mount img read-write; any error fails the test. */
#define MOUNT_OR_DIE(img) tu_mount_or_die((img), __FILE__, __LINE__)
static inline struct sfs *tu_mount_or_die(const char *img, const char *file, int line)
{
	struct sfs *fs;
	char err[256] = "";
	int r = sfs_mount(img, 0, &fs, err, sizeof err);

	if (r < 0)
		TU_FAIL_AT(file, line, "mount: %s (%s)", strerror(-r), err);
	return fs;
}

/* fsck img (not mounted): it must run and find no error. */
#define FSCK_CLEAN(img) tu_fsck_clean((img), __FILE__, __LINE__)
static inline void tu_fsck_clean(const char *img, const char *file, int line)
{
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";
	int r = sfs_fsck(img, 0, &res, NULL, NULL, err, sizeof err);

	if (r < 0)
		TU_FAIL_AT(file, line, "fsck: %s (%s)", strerror(-r), err);
	if (res.errors_found != 0)
		TU_FAIL_AT(file, line, "res.errors_found = %lld, expected 0 = 0",
			   (long long)res.errors_found);
}

/* The number of data blocks file name holds; a stat error fails the test. */
#define FILE_BLOCKS(fs, name) tu_file_blocks((fs), (name), __FILE__, __LINE__)
static inline uint64_t tu_file_blocks(struct sfs *fs, const char *name, const char *file, int line)
{
	struct sfs_stat st;
	int r = sfs_stat(fs, name, &st);

	if (r < 0)
		TU_FAIL_AT(file, line, "stat %s: %s", name, strerror(-r));
	return st.blocks;
}

/* CRC-32C (Castagnoli, reflected, init and final xor ~0) as docs/FORMAT.md defines the
 * block checksum: for tests that build or damage images by hand. */
static inline uint32_t crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = 0xFFFFFFFFu;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
	}
	return ~c;
}

/* The tests' pseudo-random generators, on a caller-held state (fixed seeds, so a failing
 * run replays): xorshift64 returns the new state; the LCG (Knuth's MMIX constants) returns
 * the high 32 bits of its new state. */
static inline uint64_t tu_xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline uint32_t tu_lcg32(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

/* The whole file as a NUL-terminated string (malloc'd), or NULL if it cannot be read. */
static inline char *tu_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0, r;
	char *b = malloc(cap), *nb;
	while (b && (r = fread(b + n, 1, cap - n - 1, f)) > 0) {
		n += r;
		if (cap - n < 2) {
			cap *= 2;
			if (!(nb = realloc(b, cap)))
				free(b);
			b = nb;
		}
	}
	fclose(f);
	if (b)
		b[n] = '\0';
	return b;
}

/* How many times needle occurs in s (not overlapping). */
static inline int tu_count(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; *needle && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The flags a program the test compiles needs to load the built library lib: a
 * SANITIZE=1 build's libraries need the sanitizer runtime first, so such a
 * program is built with it too ("" for an ordinary build). */
static inline const char *tu_sanitize_cflags(const char *lib)
{
	char cmd[8400];
	snprintf(cmd, sizeof cmd, "readelf -d '%s' | grep -q libasan", lib);
	return system(cmd) == 0 ? "-fsanitize=address,undefined" : "";
}

/* For tests that drive a script of the project (scripts/...) with programs built outside it:
 * runs bash $UR_SRCDIR/script ARGS... in place of the test, with O=$UR_BIN (the build folder),
 * so the script's exit status is the test's (0 pass, 1 fail, 77 skip). An argument that
 * starts with "@" names a file of the source tree: "@tests/x.txt" is passed as
 * $UR_SRCDIR/tests/x.txt. Returns only if the script cannot be run: 77 outside
 * tests/run.sh (no UR_SRCDIR/UR_BIN), else 1. */
static inline int tu_run_script(const char *script, const char *const *args)
{
	const char *src = getenv("UR_SRCDIR"), *bin = getenv("UR_BIN");
	static char path[16][4096];
	const char *argv[20];
	int n = 0;

	if (!src || !bin) {
		printf("UR_SRCDIR or UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	argv[n++] = "bash";
	snprintf(path[0], sizeof path[0], "%s/%s", src, script);
	argv[n++] = path[0];
	for (int i = 0; args[i]; i++) {
		if (n >= 16) {
			fprintf(stderr, "FAIL: tu_run_script: too many arguments\n");
			return 1;
		}
		if (args[i][0] == '@') {
			snprintf(path[n], sizeof path[n], "%s/%s", src, args[i] + 1);
			argv[n] = path[n];
		} else {
			argv[n] = args[i];
		}
		n++;
	}
	argv[n] = NULL;
	if (setenv("O", bin, 1) < 0) {
		fprintf(stderr, "FAIL: setenv: %s\n", strerror(errno));
		return 1;
	}
	fflush(NULL);
	execvp("bash", (char *const *)argv);
	fprintf(stderr, "FAIL: bash %s: %s\n", path[0], strerror(errno));
	return 1;
}

/* The first two CPUs this process may run on: 1 with cpus[] set, 0 when it has one only. */
static inline int tu_two_cpus(int cpus[2])
{
	cpu_set_t set;
	int n = 0;
	if (sched_getaffinity(0, sizeof(set), &set) < 0) {
		fprintf(stderr, "FAIL: sched_getaffinity: %s\n", strerror(errno));
		exit(1);
	}
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n == 2;
}

/* Pin the calling thread to one CPU (what it forks or starts inherits it). */
#define PIN_CPU(cpu) tu_pin_cpu((cpu), __FILE__, __LINE__)
static inline void tu_pin_cpu(int cpu, const char *file, int line)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		TU_FAIL_AT(file, line, "pin to CPU %d: %s", cpu, strerror(errno));
}

/* SIGSTOP pid and wait until /proc shows it stopped (kill only asks). */
#define STOP_PROCESS(pid) tu_stop_process((pid), __FILE__, __LINE__)
static inline void tu_stop_process(pid_t pid, const char *file, int line)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (kill(pid, SIGSTOP) < 0)
		TU_FAIL_AT(file, line, "SIGSTOP %d: %s", (int)pid, strerror(errno));
	for (int i = 0; i < 100000; i++) {
		FILE *f = fopen(path, "r");
		if (!f)
			TU_FAIL_AT(file, line, "%s: %s", path, strerror(errno));
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		const char *st = strrchr(buf, ')');   /* "pid (comm) S ..." */
		if (st && st[1] == ' ' && (st[2] == 'T' || st[2] == 't'))
			return;
		usleep(100);
	}
	TU_FAIL_AT(file, line, "process %d did not stop", (int)pid);
}

/* Rings opened from now on start their server through the script name (in the
 * current directory): "#!/bin/sh", then before, "exec SERVER", after, "$@", where
 * SERVER is $UR_SERVER (tests/run.sh sets it). Returns that server's path, for
 * setenv("UR_SERVER", it, 1) to undo this; NULL when UR_SERVER is not set. */
static inline const char *tu_wrap_server(const char *name, const char *before, const char *after)
{
	static char path[4096 + 64];
	const char *srv = getenv("UR_SERVER");
	if (!srv)
		return NULL;
	FILE *w = fopen(name, "w");
	if (!w || fprintf(w, "#!/bin/sh\n%sexec '%s' %s\"$@\"\n", before, srv, after) < 0 ||
	    fclose(w) != 0 || chmod(name, 0700) != 0 || !getcwd(path, sizeof(path) - 64)) {
		fprintf(stderr, "FAIL: server wrapper %s: %s\n", name, strerror(errno));
		exit(1);
	}
	snprintf(path + strlen(path), 64, "/%s", name);
	static char orig[4096];
	snprintf(orig, sizeof(orig), "%s", srv);
	setenv("UR_SERVER", path, 1);
	return orig;
}

#endif
