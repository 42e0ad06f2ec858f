/* SPDX-License-Identifier: MIT */
/*
 * backend_none.c - a backend without an image: the transport alone (NOP,
 * validation, wakeups) for tests and for measuring the ring itself, like
 * fio's null engine. Every file operation fails with -ENODEV.
 *
 * Must never pretend to do I/O: no operation here reports success.
 */
#include <errno.h>
#include "backend.h"

static int none_init(const struct ur_backend_conf *conf, void **st, char *err, size_t errlen)
{
	(void)conf; (void)err; (void)errlen;
	*st = NULL;
	return 0;
}
static int none_fini(void *st) { (void)st; return 0; }
static int none_open(void *st, const char *name, unsigned fl) { (void)st; (void)name; (void)fl; return -ENODEV; }
static int none_close(void *st, int fd) { (void)st; (void)fd; return -EBADF; }
static ssize_t none_read(void *st, int fd, void *b, size_t l, uint64_t o)
{ (void)st; (void)fd; (void)b; (void)l; (void)o; return -EBADF; }
static ssize_t none_write(void *st, int fd, const void *b, size_t l, uint64_t o)
{ (void)st; (void)fd; (void)b; (void)l; (void)o; return -EBADF; }
static int none_fsync(void *st, int fd) { (void)st; (void)fd; return -EBADF; }
static int none_ftruncate(void *st, int fd, uint64_t s) { (void)st; (void)fd; (void)s; return -EBADF; }
static int none_unlink(void *st, const char *name) { (void)st; (void)name; return -ENODEV; }
static int none_fstat(void *st, int fd, struct ur_statx *o) { (void)st; (void)fd; (void)o; return -EBADF; }
static int none_stat(void *st, const char *name, struct ur_statx *o) { (void)st; (void)name; (void)o; return -ENODEV; }

const struct ur_backend_ops ur_backend_none = {
	.name      = "none",
	.init      = none_init,
	.fini      = none_fini,
	.open      = none_open,
	.close     = none_close,
	.read      = none_read,
	.write     = none_write,
	.fsync     = none_fsync,
	.ftruncate = none_ftruncate,
	.unlink    = none_unlink,
	.fstat     = none_fstat,
	.stat      = none_stat,
};
