/* Description: proof 1 of the liburing drop-in (issue 9). liburing 2.3's own
 * tests and examples, built unchanged from Debian's source package against
 * Debian's liburing.h (scripts/liburing-tests.sh fetches and builds them once,
 * into $UR_BIN/liburing-tests/), pass with the drop-in ($UR_BIN/uring/) as
 * tests/liburing-expected.txt lists: with the kernel's io_uring blocked by
 * noring (emulated ring) and, where the kernel allows io_uring, in pass-through.
 * A listed test that fails, hangs or crashes fails this one; a test passing
 * unlisted is reported (NEW:) so the list can grow. Skips, with the reason,
 * when the source package cannot be fetched or built here.
 */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "testutil.h"

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

	if (kernel_io_uring(why, sizeof why))
		strcpy(setups, "cd");
	else   /* a counted part skip (tests/run.sh), never a silent pass */
		printf("SKIP-PART: io_uring: setup d (drop-in pass-through): %s\n", why);
	fflush(stdout);
	const char *args[] = { "-s", setups, "-c", "@tests/liburing-expected.txt", NULL };
	return tu_run_script("scripts/liburing-tests.sh", args);
}
