/* SPDX-License-Identifier: MIT */
/* Description: proof 2 of the liburing drop-in: Debian's plocate, an
 * unchanged binary linking liburing.so.2, run under noring (the kernel's
 * io_uring blocked) with the drop-in ($UR_BIN/uring/) in LD_LIBRARY_PATH,
 * prints for every query on an index it builds (updatedb over a generated
 * tree) exactly what it prints without the filter; it loads the drop-in,
 * takes its io_uring path (not "not using io_uring") and its own thread does
 * not read the index with one pread64 per read, as its fallback does
 * (counted with strace -f). scripts/plocate-dropin.sh does the work; skips
 * with the reason when plocate or strace is not installed.
 */
#include "testutil.h"

int main(void)
{
	const char *args[] = { NULL };
	return tu_run_script("scripts/plocate-dropin.sh", args);
}
