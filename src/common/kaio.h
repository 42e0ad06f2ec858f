/* SPDX-License-Identifier: MIT */
/*
 * kaio.h - the kernel's native AIO (io_setup/io_submit/io_getevents) through
 * raw system calls, and reaping completions from the AIO ring the kernel maps
 * into user space (no system call). Shared by the server's O_DIRECT image
 * path (src/server/aio.c) and the drop-in's O_DIRECT path (src/uring/kaio.c).
 * Header only (static inline).
 *
 * Must never: read the mapped ring unless its magic and compat fields say it
 * has the layout below (callers then fall back to io_getevents), or move the
 * ring head past an event it did not copy out.
 */
#ifndef UR_KAIO_H
#define UR_KAIO_H

#include <errno.h>
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct kaio_ring_hdr {           /* the kernel's mapped AIO completion ring */
	unsigned id, nr, head, tail, magic, compat, incompat, header_length;
	struct io_event events[];
};
#define KAIO_RING_MAGIC 0xa10a10a1u

static inline long kaio_io_setup(unsigned nr, aio_context_t *ctx) { return syscall(SYS_io_setup, nr, ctx); }
static inline long kaio_io_destroy(aio_context_t ctx) { return syscall(SYS_io_destroy, ctx); }
static inline long kaio_io_submit(aio_context_t ctx, long n, struct iocb **v) { return syscall(SYS_io_submit, ctx, n, v); }
static inline long kaio_io_getevents(aio_context_t ctx, long min, long max, struct io_event *ev, struct timespec *ts)
{
	return syscall(SYS_io_getevents, ctx, min, max, ev, ts);
}

/* Submit n iocbs in as few io_submit calls as the kernel allows (it may take
 * part of a batch; EINTR is retried). Returns how many it took; if fewer than
 * n, *err is why the next one was refused (-errno, or -EIO). */
static inline int kaio_submit_all(aio_context_t ctx, int n, struct iocb **v, int *err)
{
	int done = 0;
	*err = 0;
	while (done < n) {
		long r = kaio_io_submit(ctx, n - done, v + done);
		if (r > 0) {
			done += (int)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		*err = r < 0 ? -errno : -EIO;
		break;
	}
	return done;
}

/* Copy up to max completed events out of the mapped ring. Returns how many,
 * or -1 if the ring cannot be read in user space (use kaio_io_getevents). */
static inline int kaio_ring_pop(aio_context_t ctx, struct io_event *ev, int max)
{
	struct kaio_ring_hdr *ring = (struct kaio_ring_hdr *)(uintptr_t)ctx;
	if (ring->magic != KAIO_RING_MAGIC || ring->incompat != 0)
		return -1;
	unsigned head = ring->head, nr = ring->nr;
	unsigned tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
	int got = 0;
	while (got < max && head != tail && head < nr) {
		ev[got++] = ring->events[head];
		head = (head + 1) % nr;
	}
	if (got)
		__atomic_store_n(&ring->head, head, __ATOMIC_RELEASE);
	return got;
}

#endif
