/* SPDX-License-Identifier: MIT */
/*
 * noring - run a program with the kernel's io_uring blocked, as Docker's default
 * seccomp profile, Android or a hardened server block it: io_uring_setup,
 * io_uring_enter and io_uring_register fail with EPERM (or the errno given).
 * The filter is inherited by every child and cannot be lifted.
 *
 *   noring [-e EPERM|ENOSYS|EACCES] [--] COMMAND [ARG...]
 *
 * Must never: run COMMAND without the filter in place (any failure to install
 * it is an error, exit 125), or block anything but the three io_uring calls.
 * Exit status: COMMAND's; 125 when noring itself fails, 126/127 as the shell's
 * for a command that cannot be run / is not found.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../src/common/launcher.h"
#include "../src/common/noring.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: noring [-e EPERM|ENOSYS|EACCES] [--] COMMAND [ARG...]\n"
		"Run COMMAND with the kernel's io_uring blocked by a seccomp filter:\n"
		"io_uring_setup, io_uring_enter and io_uring_register fail with the errno\n"
		"(default EPERM, as Docker's default profile). Children inherit the filter.\n"
		"  -e ERRNO   EPERM, ENOSYS or EACCES\n"
		"  --help     this text\n");
}

int main(int argc, char **argv)
{
	int err = EPERM, i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-e") && i + 1 < argc) {
			const char *e = argv[++i];
			if (!strcmp(e, "EPERM"))
				err = EPERM;
			else if (!strcmp(e, "ENOSYS"))
				err = ENOSYS;
			else if (!strcmp(e, "EACCES"))
				err = EACCES;
			else {
				fprintf(stderr, "noring: -e %s: not one of EPERM, ENOSYS, EACCES\n", e);
				return 125;
			}
		} else {
			return launcher_usage_error("noring", argv[i], usage);
		}
	}
	if (i >= argc)
		return launcher_usage_error("noring", NULL, usage);
	int r = noring_block(err);
	if (r < 0) {
		fprintf(stderr, "noring: cannot install the seccomp filter: %s\n", strerror(-r));
		return 125;
	}
	return launcher_exec("noring", argv + i);
}
