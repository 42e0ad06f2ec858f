/* SPDX-License-Identifier: MIT */
/* test_uring_front.h: shared by the tests of the system-call front (tests/test_uring_front_*.c).
 * tu_front_main() runs the test's body in the program run again with the front's two libraries
 * (liburing.so.2 and liburfs_syscalls.so, from the folder of the drop-in the test links) in
 * LD_PRELOAD and URING_EMULATE=1, which puts the front's filter in place where the kernel's
 * io_uring works too. Header only (after test_uring.h). Must never: run the body without the
 * preload (a missing liburfs_syscalls.so fails the test) or count a run without it as a pass. */
#ifndef TEST_URING_FRONT_H
#define TEST_URING_FRONT_H
#include <libgen.h>

/* 1 if liburfs_syscalls.so is mapped in this process. */
static inline int tu_front_loaded(void)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, "liburfs_syscalls.so") != NULL;
	if (f)
		fclose(f);
	return found;
}

static inline int tu_front_main(int argc, char **argv, int (*body)(void))
{
	if (argc > 1 && !strcmp(argv[1], "--front")) {
		tu_mode = TU_ENV;
		tu_mode_name = "front";
		CHECK(tu_front_loaded());
		return body();
	}
	tu_uring_check_lib();
	Dl_info info;
	CHECK(dladdr((void *)io_uring_setup, &info) && info.dli_fname);
	char lib[4096], dir[4096], preload[8300], front[4200];
	snprintf(lib, sizeof lib, "%s", info.dli_fname);
	snprintf(dir, sizeof dir, "%s", dirname(lib));
	snprintf(preload, sizeof preload, "%s/liburing.so.2:%s/liburfs_syscalls.so", dir, dir);
	snprintf(front, sizeof front, "%s/liburfs_syscalls.so", dir);
	if (access(front, R_OK) != 0) {
		printf("FAIL: no %s (make builds it)\n", front);
		return 1;
	}
	setenv("LD_PRELOAD", preload, 1);
	setenv("URING_EMULATE", "1", 1);
	/* an ASan build: its runtime is then not first in the list, which is fine here */
	const char *ao = getenv("ASAN_OPTIONS");
	char opts[1024];
	snprintf(opts, sizeof opts, "%s%sverify_asan_link_order=0", ao ? ao : "", ao && ao[0] ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	fflush(stdout);
	execl("/proc/self/exe", argv[0], "--front", (char *)NULL);
	perror("exec /proc/self/exe");
	return 1;
}
#endif
