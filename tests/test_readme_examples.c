/* SPDX-License-Identifier: MIT */
/* Description: README's examples for users do what README says, run as
 * README gives them (each line taken from README.md itself, from a directory
 * where ./sfs, ./cat_ur, ./noring, ./urfs-uring and ./liburfs_sqlite.so are
 * the build's): "Using it" makes an image, copies /etc/services in, reads it
 * back through the ring (byte for byte), lists and checks it; the drop-in's
 * two launcher lines run a liburing program (tests/progs/uring_which.c built
 * as ./myprogram) on the emulated ring, its I/O checked; the sqlite3 shell
 * lines load the VFS and open a database in my.sfs, which then holds it.
 * Fewer example lines than these in README fails the test (an example
 * renamed must be followed here); a missing /etc/services or sqlite3 shell
 * is a counted skip of that part.
 * Time limit: 120 s
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "examples.h"
#include "testutil.h"

static char *readme;

/* The example lines of README's section `title` (to the next heading;
 * indented 4 spaces) that
 * start with one of the prefixes, without their "# comment", in order. */
static int examples(const char *title, const char *const *prefix, char lines[][512], int max)
{
	const char *s = strstr(readme, title), *end;
	int n = 0;

	if (!s)
		FAIL("README.md has no section '%s'", title);
	end = strstr(s + strlen(title), "\n#");   /* the next heading */
	for (const char *l = strchr(s, '\n'); l && (!end || l < end) && n < max; l = strchr(l + 1, '\n')) {
		if (strncmp(l + 1, "    ", 4))
			continue;
		const char *t = l + 5, *e = strchr(t, '\n');
		size_t len = e ? (size_t)(e - t) : strlen(t);
		for (const char *const *p = prefix; *p; p++)
			if (!strncmp(t, *p, strlen(*p))) {
				snprintf(lines[n], sizeof lines[n], "%.*s", (int)len, t);
				char *c = strstr(lines[n], " # ");
				if (c)
					*c = '\0';
				for (size_t k = strlen(lines[n]); k && lines[n][k - 1] == ' '; k--)
					lines[n][k - 1] = '\0';
				n++;
				break;
			}
	}
	return n;
}

/* sh -c line, output to out.txt; its exit status */
static int sh(const char *line)
{
	return ex_run(line, "out.txt", NULL, 60);
}

int main(void)
{
	const char *src = getenv("UR_SRCDIR"), *binenv = getenv("UR_BIN");
	char bin[PATH_MAX], path[PATH_MAX + 32], lines[8][512], cmd[PATH_MAX * 2 + 1024];
	int n;

	if (!src || !binenv) {
		printf("UR_SRCDIR or UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	CHECK(realpath(binenv, bin));
	snprintf(path, sizeof path, "%s/README.md", src);
	readme = tu_slurp(path);
	CHECK(readme);
	static const char *const tools[] = { "sfs", "cat_ur", "noring", "urfs-uring", "liburfs_sqlite.so",
					     "libur_fs.so.1", NULL };   /* the extension's $ORIGIN is here */
	ex_link_tools(bin, ".", tools);

	/* Using it */
	static const char *const using[] = { "./sfs ", "SFS_IMAGE=", NULL };
	n = examples("\n## Using it\n", using, lines, 8);
	CHECK_EQ(n, 4);
	if (access("/etc/services", R_OK) != 0) {
		tu_part_skip("/etc/services", "README's Using it", "no /etc/services to copy in");
		CHECK_EQ(sh("./sfs mkfs --size 4G my.sfs"), 0);
	} else {
		tu_part_ran("/etc/services", "README's Using it");
		for (int i = 0; i < n; i++)
			CHECK_EQ(sh(lines[i]), 0);
		/* the cat_ur line's output is the file */
		CHECK(strstr(lines[2], "cat_ur services"));
		snprintf(cmd, sizeof cmd, "%s > got.txt && cmp got.txt /etc/services", lines[2]);
		CHECK_EQ(sh(cmd), 0);
	}

	/* the drop-in's launcher */
	static const char *const launch[] = { "./noring ./urfs-uring ./myprogram", "./urfs-uring --emulate ./myprogram", NULL };
	n = examples("\n### Unchanged liburing programs: the drop-in\n", launch, lines, 8);
	if (n != 2)
		FAIL("README's drop-in section lacks its two launcher lines (found %d)", n);
	snprintf(path, sizeof path, "%s/uring/liburing.so.2", bin);
	snprintf(cmd, sizeof cmd, "cc -std=gnu11 -Wall -Werror %s -o myprogram %s/tests/progs/uring_which.c -luring",
		 tu_sanitize_cflags(path), src);
	CHECK_EQ(sh(cmd), 0);
	for (int i = 0; i < n; i++) {
		snprintf(cmd, sizeof cmd, "env -u URING_EMULATE %s > prog.txt", lines[i]);
		CHECK_EQ(sh(cmd), 0);
		CHECK(ex_which_emulated("prog.txt", bin));
	}

	/* the sqlite3 shell */
	static const char *const shell[] = { "sqlite> ", NULL };
	n = examples("\n### SQLite on SimpleFS\n", shell, lines, 8);
	if (n != 2)
		FAIL("README's SQLite section lacks its two sqlite> lines (found %d)", n);
	snprintf(path, sizeof path, "%s/liburfs_sqlite.so", bin);
	if (system("command -v sqlite3 >/dev/null 2>&1") != 0) {
		tu_part_skip("sqlite3", "README's sqlite3 lines", "no sqlite3 shell");
	} else if (*tu_sanitize_cflags(path)) {
		tu_part_skip("sqlite3", "README's sqlite3 lines",
			     "a sanitizer build's extension does not load in Debian's shell as README loads it");
	} else {
		tu_part_ran("sqlite3", "README's sqlite3 lines");
		FILE *f = fopen("s.sql", "w");
		CHECK(f);
		fprintf(f, "%s\n%s\nCREATE TABLE t(x); INSERT INTO t VALUES(42);\nSELECT x FROM t;\n",
			lines[0] + 8, lines[1] + 8);
		CHECK(fclose(f) == 0);
		CHECK_EQ(sh("sqlite3 -bail -batch < s.sql > q.txt && grep -qx 42 q.txt"), 0);
		CHECK_EQ(sh("./sfs ls my.sfs | grep -qx app.db"), 0);
	}
	free(readme);
	printf("ok\n");
	return 0;
}
