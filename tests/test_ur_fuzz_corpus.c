/* Description: replays every file of the server fuzzer's kept corpus
 * ($UR_SRCDIR/fuzz/corpus_server) through the fuzz target's steps
 * (fuzz/fuzz_server_steps.h: a hostile client's SQEs, pokes and data on a
 * region served in-process over a memory SimpleFS), so the corpus runs in
 * every normal and sanitizer test run without libFuzzer. Each input must end
 * with a clean unmount and an fsck-clean image. The open-write-read seed
 * (fuzz/make_corpus_server.py) must also reach the backend: its 9 SQEs (open,
 * create, write, read, fsync, statx, truncate, close, unlink) all succeed, so
 * a change of the input format that leaves the seeds shallow is noticed.
 *
 * It must never pass on an empty or missing corpus.
 */
#include "../fuzz/fuzz_server_steps.h"

#include <dirent.h>
#include <stdlib.h>

static uint8_t data[1u << 20];

int main(void)
{
	const char *src = getenv("UR_SRCDIR");
	char dir[4096], path[8192];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	fzs_trace = getenv("FZS_TRACE") != NULL;
	if (!src) {
		printf("UR_SRCDIR is not set (run through tests/run.sh)\n");
		return 77;
	}
	snprintf(dir, sizeof dir, "%s/fuzz/corpus_server", src);
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
		if (fuzz_server_input(data, len))
			FAIL("%s: the unmount failed or the image is not fsck-clean", de->d_name);
		printf("%-24s %7zu bytes: %llu SQEs served, %u CQEs with res >= 0\n", de->d_name, len,
		       (unsigned long long)fzs_last_sqes, fzs_last_ok);
		if (!strcmp(de->d_name, "open-write-read") && (fzs_last_sqes != 9 || fzs_last_ok != 9))
			FAIL("%s: %llu SQEs served, %u succeeded; expected 9 and 9", de->d_name,
			     (unsigned long long)fzs_last_sqes, fzs_last_ok);
		n++;
	}
	closedir(d);
	if (n < 3)
		FAIL("%s: %u seeds, expected the kept corpus", dir, n);
	printf("ok\n");
	return 0;
}
