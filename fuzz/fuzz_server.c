/* SPDX-License-Identifier: MIT */
/*
 * fuzz_server.c - libFuzzer target over simplefs_server's SQE path: each input
 * plays a hostile client on a region the server serves in-process, over a
 * memory-backed SimpleFS (fuzz/fuzz_server_steps.h says how an input is read).
 *
 * Build and run: make fuzz FUZZ_TIME=60 (clang -fsanitize=fuzzer,address,undefined);
 * its kept corpus is fuzz/corpus_server, replayed by tests/test_ur_fuzz_corpus.
 * It must never report anything itself but abort on a finding the sanitizers
 * cannot see: an unmount that fails, or an image fsck does not find clean.
 */
#include <stdlib.h>
#include "fuzz_server_steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_server_input(data, size))
		abort();
	return 0;
}
