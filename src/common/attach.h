/* attach.h: where the simplefs_server of an image listens for more clients
 * (docs/ABI.md, "Many clients"). The library (which connects) and the server
 * (which binds) compute the same path from the image's identity: the
 * directory is $XDG_RUNTIME_DIR when it is an absolute path to a directory
 * of ours that nobody else may enter, else /tmp/urfs-UID (made 0700 when
 * missing); the name is urfs-DEV-INO.sock (st_dev in hex, st_ino in decimal).
 * Header only, libc only. Must never: return a path in a directory another
 * user could write to (they could plant a socket there), or follow a symlink
 * for the directory. */
#ifndef URFS_ATTACH_H
#define URFS_ATTACH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Is dir a real directory (not a symlink) owned by us and closed to others? */
static inline int ur_attach_dir_ok(const char *dir)
{
	struct stat st;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

/* The socket path of image into out (a sun_path). mkdir: create /tmp/urfs-UID
 * if it is missing (the server does; a client only looks). 0 or -errno. */
static inline int ur_attach_path(const char *image, char *out, size_t outlen, int mkdir_ok)
{
	struct stat st;
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if (stat(image, &st) < 0)
		return -errno;
	const char *x = getenv("XDG_RUNTIME_DIR");
	if (x && x[0] == '/' && ur_attach_dir_ok(x) == 0) {
		if ((size_t)snprintf(dir, sizeof(dir), "%s", x) >= sizeof(dir))
			return -ENAMETOOLONG;
	} else {
		snprintf(dir, sizeof(dir), "/tmp/urfs-%u", (unsigned)geteuid());
		if (mkdir_ok && mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		int r = ur_attach_dir_ok(dir);
		if (r < 0)
			return r;
	}
	int n = snprintf(out, outlen, "%s/urfs-%llx-%llu.sock", dir,
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	if (n < 0 || (size_t)n >= outlen || (size_t)n >= sizeof(dir))
		return -ENAMETOOLONG;
	return 0;
}

#endif
