/* SPDX-License-Identifier: MIT */
/* Description: the complete programs in the section 3 pages' EXAMPLES (every
 * .EX/.EE block of $UR_SRCDIR/man/man3 that has a main) are true to the code:
 * each, with its roff escapes undone, compiles warning-free (-Wall -Wextra
 * -Werror) against include/ and links against the built libur_fs.so and
 * libsfs.a, then runs to exit 0 in a directory of its own (the library starts
 * $UR_SERVER). An escape the extraction does not know fails the test rather
 * than compile something else than the page shows.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "examples.h"
#include "testutil.h"

static const char *src, *bin;
static char sanitize[64];

/* Compile and run one example; 0 if it works. */
static int try_example(const char *page, int idx, const char *code, size_t n)
{
	char dir[600], path[700], cmd[4096];
	snprintf(dir, sizeof dir, "ex-%s-%d", page, idx);
	if (mkdir(dir, 0755) != 0)
		FAIL("mkdir %s: %s", dir, strerror(errno));
	snprintf(path, sizeof path, "%s/ex.c", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		FAIL("%s: %s", path, strerror(errno));
	ex_unescape(code, n, f, page);
	fputc('\n', f);
	fclose(f);
	snprintf(cmd, sizeof cmd,
		 "cd '%s' && cc -std=gnu11 -Wall -Wextra -Werror %s -I'%s/include' -o ex ex.c "
		 "-L'%s' -l:libur_fs.so.1 -Wl,-rpath,'%s' '%s/obj/libsfs.a' -pthread -lrt 2>&1",
		 dir, sanitize, src, bin, bin, bin);
	if (system(cmd) != 0) {
		fprintf(stderr, "  %s example %d does not compile (%s/ex.c)\n", page, idx, dir);
		return 1;
	}
	snprintf(cmd, sizeof cmd, "cd '%s' && timeout 120 ./ex > out 2>&1", dir);
	int st = system(cmd);
	if (st != 0) {
		snprintf(cmd, sizeof cmd, "sed 's/^/    /' '%s/out' >&2", dir);
		if (system(cmd) != 0) { /* the output is only a hint */ }
		fprintf(stderr, "  %s example %d exits with status %d\n", page, idx,
			WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return 1;
	}
	return 0;
}

int main(void)
{
	src = getenv("UR_SRCDIR");
	bin = getenv("UR_BIN");
	if (!src || !bin || !getenv("UR_SERVER")) {
		printf("UR_SRCDIR, UR_BIN or UR_SERVER is not set (run through tests/run.sh)\n");
		return 77;
	}
	/* A sanitizer build's library needs its runtime first: build the same way. */
	char lib[4200];
	snprintf(lib, sizeof lib, "%s/libur_fs.so", bin);
	snprintf(sanitize, sizeof sanitize, "%s", tu_sanitize_cflags(lib));

	char dirpath[4200];
	snprintf(dirpath, sizeof dirpath, "%s/man/man3", src);
	DIR *d = opendir(dirpath);
	if (!d)
		FAIL("%s: %s", dirpath, strerror(errno));
	unsigned programs = 0, bad = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 3 || strcmp(de->d_name + l - 2, ".3"))
			continue;
		char path[8400];
		snprintf(path, sizeof path, "%s/%s", dirpath, de->d_name);
		char *t = tu_slurp(path);
		if (!t)
			FAIL("%s: %s", path, strerror(errno));
		char page[256];
		snprintf(page, sizeof page, "%.*s", (int)(l - 2), de->d_name);
		int idx = 0;
		for (char *b = strstr(t, "\n.EX\n"); b; b = strstr(b, "\n.EX\n")) {
			b += 5;
			char *e = strstr(b, "\n.EE\n");
			if (!e)
				FAIL("%s: .EX without .EE", de->d_name);
			*e = '\0';
			if (strstr(b, "int main(")) {
				programs++;
				bad += (unsigned)try_example(page, ++idx, b, (size_t)(e - b));
			}
			b = e + 1;
		}
		free(t);
	}
	closedir(d);
	printf("%u complete example programs in section 3, %u failed\n", programs, bad);
	/* ur_read(3), urfs_queue_init(3) and sfs_mount(3) have one each. */
	CHECK(programs >= 3);
	CHECK_EQ(bad, 0);
	return 0;
}
