/* SPDX-License-Identifier: MIT */
/* Description: proof 1 of the liburing drop-in. liburing 2.3's own
 * tests and examples, built unchanged from Debian's source package against
 * Debian's liburing.h (scripts/liburing-tests.sh fetches and builds them once,
 * into $UR_BIN/liburing-tests/), pass with the drop-in ($UR_BIN/uring/) as
 * tests/liburing-expected.txt lists: with the kernel's io_uring blocked by
 * noring (emulated ring) and, where the kernel allows io_uring, in pass-through;
 * and through the system-call front (issue 30), the same programs (setup e) and
 * the same sources linked with Debian's liburing.a (setup f, built on first use
 * into $UR_BIN/liburing-tests/bin-static/), both under noring with the front's
 * preload: there only the tests tagged !front in the list run (-F: the raw
 * system-call users and the paths of the front that setup c does not take: 8
 * programs each, about a tenth of the program time of c and d; a full check of e
 * and f is `liburing-tests.sh -s ef -c`).
 * A listed test that fails, hangs or crashes fails this one when it fails
 * again run alone (the runner tries each once more: timeout-new measures its
 * own waits, which a loaded machine stretches); a test passing unlisted is
 * reported (NEW:) so the list can grow. Skips, with the reason,
 * when the source package cannot be fetched or built here. In a sanitizer
 * build (make SANITIZE=1) the drop-in is ASan's and only setup c runs.
 * Time limit: 900 s (tests/run.sh). The first run fetches and builds liburing's
 * tests (about 35 s), then runs 143 programs in each setup, the slowest
 * first: 270 s on a 2-CPU machine whose system calls are slow (a PVM guest),
 * past run.sh's 300 s.
 */
#include <stdio.h>
#include <string.h>
#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

int main(void)
{
	char why[128], setups[8] = "ce";

	if (SANITIZED)   /* the drop-in under ASan: its emulation is what is worth the time */
		printf("SKIP-PART: sanitizer: setup d (drop-in pass-through): run in the plain build\n");
	else if (tu_have_io_uring(why, sizeof why)) {
		strcpy(setups, "cde");
		tu_part_ran("io_uring", "setup d (drop-in pass-through)");
	} else {   /* a counted part skip (tests/run.sh), never a silent pass */
		tu_part_skip("io_uring", "setup d (drop-in pass-through)", why);
	}
	fflush(stdout);
	/* 60 s per listed test, liburing's own limit: emulated, poll-mshot-update takes 15 to 20 s
	 * on a loaded 2-CPU machine (5000 multishot polls, a million wake-ups and updates). A hang
	 * guard, not a speed: under ASan, a4c0b3decb33 (5,000 forks, each a new sanitized process)
	 * and pollfree take 20-30 s plain and went past 60 s beside the other sanitized tests, so
	 * a sanitizer build gives each 180 s. */
	if (!SANITIZED) {
		strcat(setups, "f");
	} else {   /* the front with the ASan runtime preloaded before it: not checked yet */
		strcpy(setups, "c");
		printf("SKIP-PART: sanitizer: setups e and f (the system-call front): run in the plain build\n");
	}
	const char *args[] = { "-s", setups, "-F", "-t", SANITIZED ? "180" : "60", "-c",
			       "@tests/liburing-expected.txt", NULL };
	return tu_run_script("scripts/liburing-tests.sh", args);
}
