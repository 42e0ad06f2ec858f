/* Description: proof 1 of the liburing drop-in (issue 9). liburing 2.3's own
 * tests and examples, built unchanged from Debian's source package against
 * Debian's liburing.h (scripts/liburing-tests.sh fetches and builds them once,
 * into $UR_BIN/liburing-tests/), pass with the drop-in ($UR_BIN/uring/) as
 * tests/liburing-expected.txt lists: with the kernel's io_uring blocked by
 * noring (emulated ring) and, where the kernel allows io_uring, in pass-through.
 * A listed test that fails, hangs or crashes fails this one; a test passing
 * unlisted is reported (NEW:) so the list can grow. Skips, with the reason,
 * when the source package cannot be fetched or built here. In a sanitizer
 * build (make SANITIZE=1) the drop-in is ASan's and only setup c runs.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
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

/* 1 when the kernel's io_uring works here (setup d can run), else 0 with why. */
static int kernel_io_uring(char *why, size_t cap)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof p);
	int fd = (int)syscall(__NR_io_uring_setup, 1, &p);
	if (fd < 0) {
		snprintf(why, cap, "io_uring_setup: %s", strerror(errno));
		return 0;
	}
	close(fd);
	return 1;
}

int main(void)
{
	char why[128], setups[3] = "c";

	if (SANITIZED)   /* the drop-in under ASan: its emulation is what is worth the time */
		printf("SKIP-PART: sanitizer: setup d (drop-in pass-through): run in the plain build\n");
	else if (kernel_io_uring(why, sizeof why))
		strcpy(setups, "cd");
	else   /* a counted part skip (tests/run.sh), never a silent pass */
		printf("SKIP-PART: io_uring: setup d (drop-in pass-through): %s\n", why);
	fflush(stdout);
	/* 60 s per listed test, liburing's own limit: emulated, poll-cancel-ton takes 8 to 45 s on a
	 * loaded 2-CPU machine (its thousands of polls and cancels go through the reactor). */
	const char *args[] = { "-s", setups, "-t", "60", "-c", "@tests/liburing-expected.txt", NULL };
	return tu_run_script("scripts/liburing-tests.sh", args);
}
