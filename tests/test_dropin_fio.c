/* SPDX-License-Identifier: MIT */
/* Description: Debian's unchanged fio 3.33, whose io_uring engine makes the
 * io_uring system calls itself and maps the ring with its own mmap, runs under
 * noring (the kernel's io_uring refused, as Docker refuses it) through
 * `urfs-uring --syscalls`: the system-call front traps its calls and serves
 * them from the emulated ring. scripts/fio-syscalls.sh --quick first checks
 * that fio's io_uring engine fails under noring alone, then runs randrw 4k
 * iodepth 32 buffered and --direct=1 with --verify=crc32c (read back and
 * checked), randread --fixedbufs --registerfiles, a --sqthread_poll=1 write
 * job and a --nonvectored=1 one; each must end with fio's exit 0, error 0 in
 * its JSON, I/O done and its writes read back. Without fio installed this is a
 * counted SKIP-PART, never a pass; a --direct=1 job where the test directory
 * refuses O_DIRECT is a skip the script names. The whole matrix is `sh scripts/fio-syscalls.sh` (minutes).
 */
#include "testutil.h"

int main(void)
{
	if (access("/usr/bin/fio", X_OK) != 0) {
		char why[256];
		snprintf(why, sizeof why, "/usr/bin/fio: %s (package fio: sh scripts/install-deps.sh)",
			 strerror(errno));
		tu_part_skip("fio", "fio --ioengine=io_uring through the system-call front", why);
		return 0;
	}
	char wd[4096];
	if (!getcwd(wd, sizeof wd)) {
		fprintf(stderr, "FAIL: getcwd: %s\n", strerror(errno));
		return 1;
	}
	const char *args[] = { "--quick", "-W", wd, NULL };
	return tu_run_script("scripts/fio-syscalls.sh", args);
}
