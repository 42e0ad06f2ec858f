/* SPDX-License-Identifier: MIT */
/* launcher.h: what the launchers noring and urfs-uring share: they take their
 * options, then execute COMMAND [ARG...] with the shell's exit codes (125: the
 * launcher itself failed, 126: COMMAND cannot be run, 127: not found).
 * Header only. Must never: return from launcher_exec without saying why
 * COMMAND did not run. */
#ifndef URFS_LAUNCHER_H
#define URFS_LAUNCHER_H

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LAUNCHER_FAILED 125

/* An unknown option (opt) or no COMMAND (opt NULL): the usage on stderr, 125. */
static inline int launcher_usage_error(const char *prog, const char *opt, void (*usage)(FILE *))
{
	if (opt)
		fprintf(stderr, "%s: unknown option %s\n", prog, opt);
	usage(stderr);
	return LAUNCHER_FAILED;
}

/* execvp(cmd[0], cmd); on failure prints why and returns 126 or 127. */
static inline int launcher_exec(const char *prog, char **cmd)
{
	execvp(cmd[0], cmd);
	int e = errno;
	fprintf(stderr, "%s: %s: %s\n", prog, cmd[0], strerror(e));
	return e == ENOENT ? 127 : 126;
}

#endif
