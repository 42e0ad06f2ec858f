/* SPDX-License-Identifier: MIT */
/* uring_which - a small liburing program (Debian's <liburing.h>, linked with
 * -luring, no rpath) that says which liburing.so.2 it loaded and which kind of
 * ring it got, and does real I/O through that ring: it writes a line to FILE
 * (IORING_OP_WRITE), reads it back (IORING_OP_READ) and compares.
 *
 *   uring_which [FILE]      (FILE: default uring_which.dat, in the current directory)
 *
 * Prints one line per liburing.so* file mapped into the process ("liburing:
 * PATH", from /proc/self/maps: the real file, e.g. Debian's liburing.so.2.3), then "ring: emulated" or
 * "ring: kernel" (an emulated ring's fd is an eventfd, a kernel ring's an
 * io_uring file: docs/DROPIN.md), then "io: ok".
 * Used by tests/test_urfs_uring.c and scripts/test-deb.sh to check the
 * launcher urfs-uring; not installed.
 * Must never: print "io: ok" unless the bytes read back through the ring are
 * the bytes written through it. Exit status 0, or 1 after "uring_which: what:
 * strerror".
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "uring_which: %s: %s\n", what, strerror(err));
	return 1;
}

/* One SQE through the ring, its result. */
static int one(struct io_uring *ring, int write, int fd, char *buf, unsigned len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;

	if (!sqe)
		return -EBUSY;
	if (write)
		io_uring_prep_write(sqe, fd, buf, len, 0);
	else
		io_uring_prep_read(sqe, fd, buf, len, 0);
	int r = io_uring_submit_and_wait(ring, 1);
	if (r < 0)
		return r;
	r = io_uring_wait_cqe(ring, &cqe);
	if (r < 0)
		return r;
	r = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return r;
}

int main(int argc, char **argv)
{
	char line[4200], link[128], fdpath[64];
	static char msg[] = "written and read back through the ring\n";
	char back[sizeof msg];
	struct io_uring ring;

	if (argc > 2) {
		fprintf(stderr, "usage: uring_which [FILE]\n");
		return 2;
	}
	const char *file = argc == 2 ? argv[1] : "uring_which.dat";
	FILE *maps = fopen("/proc/self/maps", "r");
	if (!maps)
		return fail("/proc/self/maps", errno);
	char last[4200] = "";
	while (fgets(line, sizeof line, maps)) {
		char *path = strchr(line, '/');
		size_t n = path ? strlen(path) : 0;
		if (n && path[n - 1] == '\n')
			path[--n] = '\0';
		const char *base = n ? strrchr(path, '/') + 1 : "";
		if (strncmp(base, "liburing.so", 11) || !strcmp(path, last))
			continue;
		printf("liburing: %s\n", path);
		snprintf(last, sizeof last, "%s", path);
	}
	fclose(maps);
	fflush(stdout);

	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		return fail("io_uring_queue_init", -r);
	snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", ring.ring_fd);
	ssize_t l = readlink(fdpath, link, sizeof link - 1);
	if (l < 0)
		return fail(fdpath, errno);
	link[l] = '\0';
	printf("ring: %s\n", strstr(link, "[eventfd]") ? "emulated" :
	       strstr(link, "[io_uring]") ? "kernel" : link);

	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return fail(file, errno);
	r = one(&ring, 1, fd, msg, sizeof msg - 1);
	if (r != (int)sizeof msg - 1)
		return fail("write through the ring", r < 0 ? -r : EIO);
	memset(back, 0, sizeof back);
	r = one(&ring, 0, fd, back, sizeof back);
	if (r != (int)sizeof msg - 1 || memcmp(back, msg, sizeof msg - 1))
		return fail("read back through the ring", r < 0 ? -r : EIO);
	close(fd);
	io_uring_queue_exit(&ring);
	printf("io: ok\n");
	return 0;
}
