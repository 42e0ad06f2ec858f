/* SPDX-License-Identifier: MIT */
/* Description: bench sweep's progress lines ("[k/N] Ts elapsed, about Rs
 * left") go to stderr only when stderr is a terminal or --progress asks, and
 * never to stdout: with stdout and stderr captured to files there are none
 * anywhere; with --progress there is one per cell on stderr, the last [N/N];
 * with a pseudo-terminal as stderr they are there, each redrawn with '\r'.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* psync, buffered, the quick grid: T1 read/write, T3 2 pairs x read/write,
 * T2 qd 64/128 x read/write: 10 cells, about a second. */
#define ARGS "sweep --quick --engine psync --direct 0 --busy-load 1000 --busy-cpu 1000"
#define CELLS 10

static char *must(const char *path)
{
	char *s = tu_slurp(path);
	if (!s)
		FAIL("read %s", path);
	return s;
}

static void run(const char *bin, const char *extra)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "'%s/bench' " ARGS " %s > out 2> err", bin, extra);
	int st = system(cmd);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("%s: exit %d\n%s", cmd, WEXITSTATUS(st), must("err"));
}

int main(void)
{
	const char *bin = getenv("UR_BIN");
	if (!bin) {
		printf("UR_BIN unset: run from tests/run.sh\n");
		return 77;
	}
	char want[32];
	snprintf(want, sizeof(want), "[%d/%d] ", CELLS, CELLS);

	/* captured: no progress anywhere */
	run(bin, "");
	char *out = must("out"), *err = must("err");
	if (strstr(out, "elapsed, about") || strstr(err, "elapsed, about"))
		FAIL("progress with stderr in a file:\nstdout:\n%s\nstderr:\n%s", out, err);
	if (!strstr(out, "## T2: random 4K IOPS"))
		FAIL("no tables on stdout:\n%s", out);
	free(out);
	free(err);

	/* --progress: one line per cell on stderr, none on stdout */
	run(bin, "--progress");
	out = must("out");
	err = must("err");
	if (strstr(out, "elapsed, about"))
		FAIL("progress on stdout");
	if (tu_count(err, " elapsed, about ") != CELLS || !strstr(err, want) || strchr(err, '\r'))
		FAIL("--progress: %d lines (want %d, the last %s):\n%s", tu_count(err, " elapsed, about "),
		     CELLS, want, err);
	free(out);
	free(err);

	/* a terminal as stderr: progress, redrawn in place */
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || !ptsname(m))
		FAIL("no pseudo-terminal");
	int s = open(ptsname(m), O_RDWR | O_NOCTTY);
	if (s < 0)
		FAIL("open %s", ptsname(m));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int o = open("out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || dup2(o, 1) < 0 || dup2(s, 2) < 0)
			_exit(99);
		close(m);
		char path[4096];
		snprintf(path, sizeof(path), "%s/bench", bin);
		execl(path, path, "sweep", "--quick", "--engine", "psync", "--direct", "0",
		      "--busy-load", "1000", "--busy-cpu", "1000", (char *)NULL);
		_exit(98);
	}
	close(s);
	static char tty[1 << 16];
	size_t n = 0;
	for (;;) {       /* until the child closes the terminal (EIO) */
		ssize_t r = read(m, tty + n, sizeof(tty) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	tty[n] = 0;
	close(m);
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("bench with a terminal as stderr: status %d\n%s", st, tty);
	out = must("out");
	if (strstr(out, "elapsed, about"))
		FAIL("progress on stdout with a terminal as stderr");
	if (tu_count(tty, " elapsed, about ") != CELLS || !strstr(tty, want) || !strstr(tty, "\r["))
		FAIL("terminal: %d progress lines (want %d redrawn with \\r):\n%s",
		     tu_count(tty, " elapsed, about "), CELLS, tty);
	free(out);
	printf("progress: none captured, %d with --progress, %d on a terminal\n", CELLS, CELLS);
	printf("PASS\n");
	return 0;
}
