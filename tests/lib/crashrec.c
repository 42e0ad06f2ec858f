/* SPDX-License-Identifier: MIT */
/*
 * crashrec.c - libcrashrec.so, the recording half of the crash layer for the
 * real file device (tests/test_sfs_crash_file.c). Loaded with LD_PRELOAD into
 * a program that works on an image file ($CRASHREC_IMAGE: the sfs tool, a
 * program using libsfs, simplefs_server), it appends to $CRASHREC_TRACE every
 * change of that file's bytes and every sync of it, in the order the program
 * made them: pwrite (W, with the data), fallocate PUNCH_HOLE (P: zeros),
 * O_DIRECT writes submitted with io_submit (W), fdatasync/fsync (S). Each
 * event is one write(2) to the trace, opened O_APPEND, so several processes
 * (a client appending its own markers) can share it. The replay side
 * (tests/crash_trace.h) rebuilds the image at every cut point.
 *
 * Must never change what the program does: every call goes on to the real
 * one with the same arguments and result; only successful calls are
 * recorded (an io_submit's writes when it is submitted). Never prints.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../crash_trace.h"

static int trace_fd = -2;            /* -2: not set up yet; -1: recording off */
static dev_t img_dev;
static ino_t img_ino;

static void setup(void)
{
	const char *t = getenv("CRASHREC_TRACE"), *img = getenv("CRASHREC_IMAGE");
	struct stat st;
	trace_fd = -1;
	if (!t || !img || stat(img, &st) < 0)
		return;
	img_dev = st.st_dev;
	img_ino = st.st_ino;
	trace_fd = open(t, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

static int is_image(int fd)
{
	struct stat st;
	if (trace_fd == -2)
		setup();
	return trace_fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == img_dev && st.st_ino == img_ino;
}

static void record(uint32_t type, uint64_t off, uint64_t len, const void *data)
{
	int e = errno;
	size_t dl = type == CT_WRITE ? (size_t)len : 0;
	uint8_t *b = malloc(sizeof(struct ct_event) + dl);
	if (b) {
		struct ct_event ev = { .magic = CT_MAGIC, .type = type, .pid = (uint32_t)getpid(),
				       .off = off, .len = len };
		memcpy(b, &ev, sizeof ev);
		if (dl)
			memcpy(b + sizeof ev, data, dl);
		if (write(trace_fd, b, sizeof ev + dl) != (ssize_t)(sizeof ev + dl))
			abort();     /* a trace with a hole would replay a lie */
		free(b);
	}
	errno = e;
}

#define REAL(ret, name, ...) \
	static ret (*real_##name)(__VA_ARGS__); \
	if (!real_##name) real_##name = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
	ssize_t r = real_pwrite(fd, buf, n, off);
	if (r > 0 && is_image(fd))
		record(CT_WRITE, (uint64_t)off, (uint64_t)r, buf);
	return r;
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) __attribute__((alias("pwrite")));

int fdatasync(int fd)
{
	REAL(int, fdatasync, int);
	int r = real_fdatasync(fd);
	if (r == 0 && is_image(fd))
		record(CT_SYNC, 0, 0, NULL);
	return r;
}

int fsync(int fd)
{
	REAL(int, fsync, int);
	int r = real_fsync(fd);
	if (r == 0 && is_image(fd))
		record(CT_SYNC, 0, 0, NULL);
	return r;
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	REAL(int, fallocate, int, int, off_t, off_t);
	int r = real_fallocate(fd, mode, off, len);
	if (r == 0 && (mode & FALLOC_FL_PUNCH_HOLE) && is_image(fd))
		record(CT_PUNCH, (uint64_t)off, (uint64_t)len, NULL);
	return r;
}
int fallocate64(int fd, int mode, off_t off, off_t len) __attribute__((alias("fallocate")));

/* The server's O_DIRECT writes: raw io_submit through syscall(2). */
long syscall(long nr, ...)
{
	REAL(long, syscall, long, long, long, long, long, long, long);
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_io_submit && a[1] > 0) {
		struct iocb **v = (struct iocb **)a[2];
		for (long i = 0; i < a[1]; i++)
			if (v[i]->aio_lio_opcode == IOCB_CMD_PWRITE && is_image((int)v[i]->aio_fildes))
				record(CT_WRITE, (uint64_t)v[i]->aio_offset, v[i]->aio_nbytes,
				       (const void *)(uintptr_t)v[i]->aio_buf);
	}
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
