/* SPDX-License-Identifier: MIT */
/* fuzz_replay.h: the loop of the corpus replay tests (test_ur_fuzz_corpus,
 * test_uring_fuzz_corpus): every file of $UR_SRCDIR/fuzz/<corpus> handed to the
 * test's function for one input. Header only; include it after the FAIL macro
 * (testutil.h). It must never pass on a missing corpus: a directory it cannot
 * open or a file it cannot read fails the test; without UR_SRCDIR it skips (77). */
#ifndef FUZZ_REPLAY_H
#define FUZZ_REPLAY_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls one() for each input of fuzz/<corpus>; returns how many there were. */
static inline unsigned fuzz_replay(const char *corpus, void (*one)(const char *name, const uint8_t *data, size_t len))
{
	static uint8_t data[1u << 20];
	const char *src = getenv("UR_SRCDIR");
	char dir[4096], path[8192];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	if (!src) {
		printf("UR_SRCDIR is not set (run through tests/run.sh)\n");
		exit(77);
	}
	snprintf(dir, sizeof dir, "%s/fuzz/%s", src, corpus);
	d = opendir(dir);
	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			FAIL("%s: %s", path, strerror(errno));
		size_t len = fread(data, 1, sizeof data, f);
		fclose(f);
		one(de->d_name, data, len);
		n++;
	}
	closedir(d);
	return n;
}

#endif
