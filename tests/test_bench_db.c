/* SPDX-License-Identifier: MIT */
/* Description: `bench db` (the channel page patterns, docs/CHANNEL.md) runs
 * end to end on a small file and takes its image as `bench run` does: from
 * --image, else $SFS_IMAGE (made when missing, never remade), else its own
 * DIR/db.sfs; each of its tables is printed with the ur engine's rows; a bad
 * value is refused (exit 2) with what is wrong.
 * Time limit: 240 s
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char *out;   /* the last run's stdout and stderr */

/* Runs "bench db ARGS" (shell text) with SFS_IMAGE=sfs_image (NULL: unset);
 * returns the exit status. */
static int bench_db(const char *sfs_image, const char *args)
{
	char cmd[4096];
	int st;

	if (sfs_image)
		CHECK(setenv("SFS_IMAGE", sfs_image, 1) == 0);
	else
		CHECK(unsetenv("SFS_IMAGE") == 0);
	snprintf(cmd, sizeof cmd, "'%s/bench' db %s >db.out 2>&1", getenv("UR_BIN"), args);
	st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st));
	free(out);
	out = tu_slurp("db.out");
	CHECK(out);
	printf("bench db %s: exit %d\n", args, WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

#define HAS(s) do { if (!strstr(out, (s))) FAIL("bench db: the output lacks '%s':\n%s", (s), out); } while (0)

int main(void)
{
	struct stat sb;

	if (!getenv("UR_BIN")) {
		printf("UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	CHECK(mkdir("d", 0700) == 0);
	/* $SFS_IMAGE names the image: made there, DIR/db.sfs never */
	CHECK_EQ(bench_db("mine.sfs", "--dir d --size 64M --iters 1 --engine ur"), 0);
	HAS("### Mixed OLTP");
	HAS("| ur: channel batch ");
	HAS("### Ratios (channel batch over the loop)");
	CHECK(stat("mine.sfs", &sb) == 0 && S_ISREG(sb.st_mode));
	CHECK(access("d/db.sfs", F_OK) != 0 && errno == ENOENT);
	/* --image wins over $SFS_IMAGE */
	CHECK_EQ(bench_db("mine.sfs", "--dir d --size 64M --iters 1 --engine ur --image other.sfs"), 0);
	CHECK(stat("other.sfs", &sb) == 0);
	/* neither: bench's own image in DIR */
	CHECK_EQ(bench_db(NULL, "--dir d --size 64M --iters 1 --engine ur"), 0);
	CHECK(stat("d/db.sfs", &sb) == 0);
	/* a given image too small for the page file is not remade: a clear refusal */
	CHECK(system("\"$UR_BIN/sfs\" mkfs --size 8M small.sfs >/dev/null") == 0);
	CHECK(stat("small.sfs", &sb) == 0);
	off_t before = sb.st_size;
	int st = bench_db("small.sfs", "--dir d --size 64M --iters 1 --engine ur");
	CHECK(stat("small.sfs", &sb) == 0);
	CHECK_EQ(sb.st_size, before);
	CHECK_EQ(st, 0);   /* the engine is skipped, with the reason */
	HAS("engine ur: skipped: fill dbfile in small.sfs: No space left on device (image too small)");
	/* bad values */
	CHECK_EQ(bench_db(NULL, "--dir d --size 1000"), 2);
	HAS("--size a multiple of 8 KiB, at least 64 MiB");
	CHECK_EQ(bench_db(NULL, "--dir d --iters 0"), 2);
	free(out);
	printf("ok\n");
	return 0;
}
