/* SPDX-License-Identifier: MIT */
/* examples.h: what the tests of the documentation's examples share: the roff
 * escapes of the man pages undone (test_man_examples, test_man_shell_examples),
 * a command line run with sh as a user would run it, with its output kept and
 * shown (test_readme_examples, test_man_shell_examples), the build's tools
 * linked into a directory, and the check of what tests/progs/uring_which.c
 * prints on the drop-in's emulated ring.
 * Header only, beside tests/testutil.h (which it needs).
 * Must never: take an escape it does not know for text (the test fails and
 * names it), or report a line's exit status other than sh's. */
#ifndef TU_EXAMPLES_H
#define TU_EXAMPLES_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* Undo the roff escapes the pages use in examples: \e (backslash), \- (minus),
 * \& (nothing). Any other escape fails the test, naming page. */
static inline void ex_unescape(const char *in, size_t n, FILE *out, const char *page)
{
	for (size_t i = 0; i < n; i++) {
		if (in[i] != '\\') {
			fputc(in[i], out);
			continue;
		}
		char c = i + 1 < n ? in[++i] : '\0';
		if (c == 'e')
			fputc('\\', out);
		else if (c == '-')
			fputc('-', out);
		else if (c != '&')
			FAIL("%s: escape \\%c in an example: teach the test or write it as \\e", page, c);
	}
}

/* Shows a file a line wrote, at most 3,000 bytes of it, indented. */
static inline void ex_show(const char *path)
{
	char *o = tu_slurp(path);
	if (o && *o) {
		size_t n = strlen(o);
		printf("%.3000s%s%s", o, n > 3000 ? "\n[...]" : "", o[n - 1] == '\n' ? "" : "\n");
	}
	free(o);
}

/* Runs `sh -c line` (under timeout(1), secs seconds) in the current directory,
 * its standard output to out and its standard error to err (NULL: to out as
 * well); prints the line and what it wrote. Returns sh's exit status, -1 if it
 * did not exit (124: the time limit). */
static inline int ex_run(const char *line, const char *out, const char *err, int secs)
{
	char limit[16];
	snprintf(limit, sizeof limit, "%d", secs);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644) : o;
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		execlp("timeout", "timeout", limit, "sh", "-c", line, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			FAIL("waitpid: %s", strerror(errno));
	printf("$ %s\n", line);
	ex_show(out);
	if (err)
		ex_show(err);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Links each tool of the build into dir: "NAME" as dir/NAME, "AS=NAME" as dir/AS. */
static inline void ex_link_tools(const char *bin, const char *dir, const char *const *tools)
{
	char from[8400], to[8400];
	for (; *tools; tools++) {
		const char *eq = strchr(*tools, '=');
		snprintf(from, sizeof from, "%s/%s", bin, eq ? eq + 1 : *tools);
		snprintf(to, sizeof to, "%s/%.*s", dir, (int)(eq ? (size_t)(eq - *tools) : strlen(*tools)), *tools);
		if (symlink(from, to) != 0)
			FAIL("symlink %s %s: %s", from, to, strerror(errno));
	}
}

/* 1 when uring_which's report in file says it ran on the emulated ring of the
 * build's drop-in (bin: the build directory, a real path) and its I/O came back
 * whole; else 0, saying why. */
static inline int ex_which_emulated(const char *file, const char *bin)
{
	char *o = tu_slurp(file), want[8400];
	snprintf(want, sizeof want, "\nliburing: %s/uring/liburing.so.2\n", bin);
	int ok = 0;
	if (!o)
		printf("%s: cannot be read\n", file);
	else if (strncmp(o, want + 1, strlen(want + 1)) && !strstr(o, want))
		printf("%s: not the build's drop-in (%s/uring/liburing.so.2)\n", file, bin);
	else if (!strstr(o, "\nring: emulated\n"))
		printf("%s: not the emulated ring\n", file);
	else if (!strstr(o, "\nio: ok\n"))
		printf("%s: the I/O did not come back\n", file);
	else
		ok = 1;
	free(o);
	return ok;
}

#endif
