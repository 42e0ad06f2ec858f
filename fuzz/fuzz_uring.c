/* SPDX-License-Identifier: MIT */
/*
 * fuzz_uring.c - libFuzzer target over the liburing drop-in's emulated ring
 * (src/uring/, compiled in, URING_EMULATE=1): each input sets up a ring and
 * plays SQEs, submissions, waits, reaps and register calls against it
 * (fuzz/fuzz_uring_steps.h says how an input is read and what is checked).
 *
 * Build and run: make fuzz FUZZ_TIME=60 (clang -fsanitize=fuzzer,address,undefined);
 * its kept corpus is fuzz/corpus-uring, replayed by tests/test_uring_fuzz_corpus.
 * It must never report anything but a broken invariant: then it prints which
 * and aborts (libFuzzer keeps the input).
 */
#include <stdio.h>
#include <stdlib.h>
#include "fuzz_uring_steps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_uring_input(data, size)) {
		fprintf(stderr, "fuzz_uring: %s\n", fzu_why);
		abort();
	}
	return 0;
}
