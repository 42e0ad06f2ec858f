/* SPDX-License-Identifier: MIT */
/* Description: replays every file of the drop-in fuzzer's kept corpus
 * ($UR_SRCDIR/fuzz/corpus-uring) through the fuzz target's steps
 * (fuzz/fuzz_uring_steps.h: a ring set up from the input, SQEs of every opcode
 * family with links, drains, timeouts, registered files and buffers, waits and
 * reaps, on URING_EMULATE=1), so the corpus runs in every normal and sanitizer
 * test run without libFuzzer. Each input must keep every invariant the steps
 * check (one CQE per SQE, chain order and cancellation, drain order, no fd or
 * thread left behind). The "links-drain" seed must also reach the executor:
 * its SQEs all complete, with the expected number of successes, so a change of
 * the input format that leaves the seeds shallow is noticed.
 *
 * It must never pass on an empty or missing corpus, or on a kernel ring.
 */
#include "../fuzz/fuzz_uring_steps.h"
#include "testutil.h"
#include "fuzz_replay.h"

/* the links-drain seed (fuzz/make_corpus_uring.py): SQEs submitted, CQEs with res >= 0 */
#define FZU_SEED_SQES 9u
#define FZU_SEED_OK 5u

static void one(const char *name, const uint8_t *data, size_t len)
{
	if (fzu_trace)
		fprintf(stderr, "%s:\n", name);
	if (fuzz_uring_input(data, len))
		FAIL("%s: %s", name, fzu_why);
	printf("%-44s %5zu bytes: %3u SQEs submitted, %3u CQEs with res >= 0\n", name, len, fzu_last_sqes,
	       fzu_last_ok);
	if (!strcmp(name, "links-drain") && (fzu_last_sqes != FZU_SEED_SQES || fzu_last_ok != FZU_SEED_OK))
		FAIL("%s: %u SQEs submitted, %u succeeded; expected %u and %u", name, fzu_last_sqes, fzu_last_ok,
		     FZU_SEED_SQES, FZU_SEED_OK);
}

int main(void)
{
	fzu_trace = getenv("FZU_TRACE") != NULL;
	unsigned n = fuzz_replay("corpus-uring", one);
	if (n < 5)
		FAIL("fuzz/corpus-uring: %u seeds, expected the kept corpus", n);
	printf("ok\n");
	return 0;
}
