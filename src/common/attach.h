/* SPDX-License-Identifier: MIT */
/* attach.h: where the simplefs_server of an image listens for more clients
 * (docs/ABI.md, "Many clients"), and whom each side may trust there. The
 * place is a Linux abstract Unix socket named after the image's identity
 * alone, "@urfs/DEV:INO" (st_dev in hex, st_ino in decimal; '@' stands for
 * the leading NUL), so every client of one image finds it whatever its
 * environment ($XDG_RUNTIME_DIR, $TMPDIR, working directory, the path it
 * names the image by), and there is no file to plant, leave behind or
 * remove. An abstract name has no owner and no mode: any process of the
 * network namespace may bind it first or connect to it. So each side checks
 * the other's credentials (SO_PEERCRED) before it trusts it: the server
 * refuses a client of another user, and a client hands its descriptors only
 * to a listener of its own user (or root): ur_attach_peer.
 * Header only, libc only. Must never: depend on the environment, or call a
 * peer trusted without checking its uid. */
#ifndef URFS_ATTACH_H
#define URFS_ATTACH_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct ur_attach_name {
	struct sockaddr_un a;
	socklen_t len;             /* of a: the family and the name, no NUL after it */
	char shown[64];            /* the name for messages: "@urfs/DEV:INO" */
};

/* The attach name of image: 0 or -errno (of stat). */
static inline int ur_attach_name(const char *image, struct ur_attach_name *n)
{
	struct stat st;
	if (stat(image, &st) < 0)
		return -errno;
	memset(n, 0, sizeof(*n));
	n->a.sun_family = AF_UNIX;
	int k = snprintf(n->shown, sizeof(n->shown), "@urfs/%llx:%llu", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
	memcpy(n->a.sun_path + 1, n->shown + 1, (size_t)k - 1);     /* sun_path[0] stays NUL */
	n->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)k);
	return 0;
}

/* The credentials of the process at the other end of the connected socket
 * fd (for a listener: the one that called listen) into *cr: 0 when it is of
 * this user or root, -EACCES when of another user, -errno when unknown. */
static inline int ur_attach_peer(int fd, struct ucred *cr)
{
	socklen_t cl = sizeof(*cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &cl) < 0)
		return -errno;
	return cr->uid == geteuid() || cr->uid == 0 ? 0 : -EACCES;
}

#endif
