/* SPDX-License-Identifier: MIT */
/*
 * fuzz_sfs.c - libFuzzer target over SimpleFS: every input is an image (the
 * start of one, zero-filled to 4 MiB) put through fsck, repair, mount and a
 * few operations (fuzz/fuzz_steps.h, shared with tests/test_sfs_fuzz_corpus.c).
 *
 * Build and run: make fuzz FUZZ_TIME=60 (clang -fsanitize=fuzzer,address,undefined).
 * It must never report anything itself: a crash, a hang or a sanitizer
 * report in the library is the finding.
 */
#include "fuzz_steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_outcome raw, sealed;

	fuzz_sfs_input(data, size, &raw, &sealed);
	return 0;
}
