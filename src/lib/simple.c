/* SPDX-License-Identifier: MIT */
/*
 * simple.c - the simple API of the original design (ur_init, ur_open,
 * ur_read, ur_write, ur_submit, ur_wait, ur_peek_cqe, ur_close, ur_shutdown)
 * on one default ring. ur_open and ur_close are synchronous; completions of
 * the caller's requests that arrive while they wait are kept, in order, for
 * ur_wait/ur_peek_cqe.
 *
 * Must never: print, lose or reorder a caller's completion, or be used from
 * two threads at once (it is one ring, like the original).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define INTERNAL_UD 0xfffffffffffff00dull

static struct urfs_ring g_ring;
static int g_up;
static char g_msg[256];

/* Completions of the caller's requests collected during a synchronous op. */
static struct ur_completion *g_kept;
static unsigned g_kept_head, g_kept_n, g_kept_cap;

UR_EXPORT const char *ur_errmsg(void)
{
	return g_msg;
}

UR_EXPORT int ur_init_image(const char *image, unsigned entries, unsigned flags)
{
	if (g_up)
		return -EBUSY;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = image;
	p.flags = flags;
	int r = urfs_queue_init_params(entries ? entries : 64, &g_ring, &p);
	snprintf(g_msg, sizeof(g_msg), "%s", p.errmsg);
	if (r < 0)
		return r;
	g_up = 1;
	g_kept_head = g_kept_n = 0;
	return 0;
}

UR_EXPORT int ur_init(unsigned entries)
{
	return ur_init_image(NULL, entries, URFS_SETUP_CREATE);
}

static int keep(uint64_t ud, int32_t res)
{
	if (g_kept_n == g_kept_cap) {
		unsigned ncap = g_kept_cap ? 2 * g_kept_cap : 64;
		struct ur_completion *n = malloc(ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (unsigned i = 0; i < g_kept_n; i++)
			n[i] = g_kept[(g_kept_head + i) % g_kept_cap];
		free(g_kept);
		g_kept = n;
		g_kept_cap = ncap;
		g_kept_head = 0;
	}
	g_kept[(g_kept_head + g_kept_n) % g_kept_cap] = (struct ur_completion){ ud, res };
	g_kept_n++;
	return 0;
}

/* A free SQE. When the queue is full, hand it to the server; if that frees
 * nothing yet (the server waits for room in the CQ), move completions into
 * the kept list until it does. NULL with *err set on failure. */
static struct urfs_sqe *get_sqe(int *err)
{
	for (;;) {
		struct urfs_sqe *sqe = urfs_get_sqe(&g_ring);
		if (sqe)
			return sqe;
		int r = urfs_submit(&g_ring);
		if (r < 0) {
			*err = r;
			return NULL;
		}
		if ((sqe = urfs_get_sqe(&g_ring)))
			return sqe;
		struct urfs_cqe *cqe;
		if ((r = urfs_wait_cqe(&g_ring, &cqe)) < 0) {
			*err = r;
			return NULL;
		}
		r = keep(cqe->user_data, cqe->res);
		urfs_cqe_seen(&g_ring, cqe);
		if (r < 0) {
			*err = r;
			return NULL;
		}
	}
}

/* Submit everything and wait for the internal request's result. */
static int run_sync(struct urfs_sqe *sqe)
{
	sqe->user_data = INTERNAL_UD;
	int r = urfs_submit(&g_ring);
	if (r < 0)
		return r;
	for (;;) {
		struct urfs_cqe *cqe;
		r = urfs_wait_cqe(&g_ring, &cqe);
		if (r < 0)
			return r;
		uint64_t ud = cqe->user_data;
		int32_t res = cqe->res;
		urfs_cqe_seen(&g_ring, cqe);
		if (ud == INTERNAL_UD)
			return res;
		if ((r = keep(ud, res)) < 0)
			return r;
		if (urfs_sq_ready(&g_ring) && (r = urfs_submit(&g_ring)) < 0)
			return r;
	}
}

UR_EXPORT int ur_open(const char *name, unsigned flags)
{
	if (!g_up)
		return -ENOTCONN;
	if (!name)
		return -EFAULT;
	int err = 0;
	struct urfs_sqe *sqe = get_sqe(&err);
	if (!sqe)
		return err;
	urfs_prep_openat(sqe, name, flags ? flags : URFS_O_CREAT);
	return run_sync(sqe);
}

UR_EXPORT int ur_close(int fd)
{
	if (!g_up)
		return -ENOTCONN;
	int err = 0;
	struct urfs_sqe *sqe = get_sqe(&err);
	if (!sqe)
		return err;
	urfs_prep_close(sqe, fd);
	return run_sync(sqe);
}

static int queue_rw(int op, int fd, const void *buf, size_t len, uint64_t off, uint64_t ud)
{
	if (!g_up)
		return -ENOTCONN;
	if (len > INT32_MAX)
		return -EINVAL;
	if (ud >> 63)
		return -EINVAL;
	int err = 0;
	struct urfs_sqe *sqe = get_sqe(&err);
	if (!sqe)
		return err;
	urfs_prep_rw(op, sqe, fd, buf, (unsigned)len, off);
	sqe->user_data = ud;
	return 0;
}

UR_EXPORT int ur_read(int fd, void *buf, size_t len, uint64_t offset, uint64_t user_data)
{
	return queue_rw(UR_OP_READ, fd, buf, len, offset, user_data);
}

UR_EXPORT int ur_write(int fd, const void *buf, size_t len, uint64_t offset, uint64_t user_data)
{
	return queue_rw(UR_OP_WRITE, fd, buf, len, offset, user_data);
}

UR_EXPORT int ur_submit(void)
{
	if (!g_up)
		return -ENOTCONN;
	return urfs_submit(&g_ring);
}

static int take(struct ur_completion *c, int block)
{
	if (!g_up)
		return -ENOTCONN;
	if (g_kept_n) {
		*c = g_kept[g_kept_head];
		g_kept_head = (g_kept_head + 1) % g_kept_cap;
		g_kept_n--;
		return 0;
	}
	struct urfs_cqe *cqe;
	int r = block ? urfs_wait_cqe(&g_ring, &cqe) : urfs_peek_cqe(&g_ring, &cqe);
	if (r < 0)
		return r;
	c->user_data = cqe->user_data;
	c->res = cqe->res;
	urfs_cqe_seen(&g_ring, cqe);
	return 0;
}

UR_EXPORT int ur_wait(struct ur_completion *c)
{
	return take(c, 1);
}

UR_EXPORT int ur_peek_cqe(struct ur_completion *c)
{
	return take(c, 0);
}

UR_EXPORT int ur_shutdown(void)
{
	if (!g_up)
		return -ENOTCONN;
	int dead = g_ring.dead;
	int st = __urfs_queue_exit_status(&g_ring);
	free(g_kept);
	g_kept = NULL;
	g_kept_cap = g_kept_n = g_kept_head = 0;
	g_up = 0;
	return dead ? -EPIPE : st;
}
