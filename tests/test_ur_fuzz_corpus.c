/* SPDX-License-Identifier: MIT */
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
#include "fuzz_replay.h"

static void one(const char *name, const uint8_t *data, size_t len)
{
	if (fuzz_server_input(data, len))
		FAIL("%s: the unmount failed or the image is not fsck-clean", name);
	printf("%-24s %7zu bytes: %llu SQEs served, %u CQEs with res >= 0\n", name, len,
	       (unsigned long long)fzs_last_sqes, fzs_last_ok);
	if (!strcmp(name, "open-write-read") && (fzs_last_sqes != 9 || fzs_last_ok != 9))
		FAIL("%s: %llu SQEs served, %u succeeded; expected 9 and 9", name,
		     (unsigned long long)fzs_last_sqes, fzs_last_ok);
}

int main(void)
{
	fzs_trace = getenv("FZS_TRACE") != NULL;
	unsigned n = fuzz_replay("corpus_server", one);
	if (n < 3)
		FAIL("fuzz/corpus_server: %u seeds, expected the kept corpus", n);
	printf("ok\n");
	return 0;
}
