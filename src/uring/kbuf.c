/* SPDX-License-Identifier: MIT */
/*
 * kbuf.c - provided buffers on the emulated ring, as the kernel's
 * io_uring/kbuf.c: PROVIDE_BUFFERS and REMOVE_BUFFERS (classic groups), the
 * application's buffer rings (io_uring_register_buf_ring), and selection of
 * a buffer for a READ, READV, RECV or RECVMSG with IOSQE_BUFFER_SELECT.
 *
 * Must never: hand one buffer to two requests, or read a buffer ring's
 * entries without the acquire that pairs with the application's release.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "opdef.h"

static struct bgroup *group_find(struct emu_ring *r, uint16_t bgid)
{
	for (unsigned i = 0; i < r->ngroups; i++)
		if (r->groups[i].used && r->groups[i].bgid == bgid)
			return &r->groups[i];
	return NULL;
}

/* The buffer group bgid; with create, a new empty one if there is none
 * (NULL: out of memory). Ring lock held. */
struct bgroup *exec_group_locked(struct emu_ring *r, uint16_t bgid, int create)
{
	struct bgroup *g = group_find(r, bgid);
	if (g || !create)
		return g;
	for (unsigned i = 0; i < r->ngroups && !g; i++)
		if (!r->groups[i].used)
			g = &r->groups[i];
	if (!g) {
		struct bgroup *ng = realloc(r->groups, (r->ngroups + 1) * sizeof(*ng));
		if (!ng)
			return NULL;
		r->groups = ng;
		g = &ng[r->ngroups++];
	}
	memset(g, 0, sizeof(*g));
	g->used = 1;
	g->bgid = bgid;
	return g;
}

/* The next buffer of a classic group's list (also a buffer ring's given back
 * out of order, below) into q. Ring lock held; the list is not empty. */
static void list_take(struct bgroup *g, struct ureq *q)
{
	struct pbuf *b = &g->bufs[g->head];
	q->baddr = b->addr;
	q->blen = b->len;
	q->bid = b->bid;
	g->head = (g->head + 1) % g->cap;
	g->count--;
}

/* Room in g's list for more buffers: 0, or -ENOMEM. Ring lock held. */
static int list_room(struct bgroup *g, uint32_t more)
{
	if (g->count + more <= g->cap)
		return 0;
	uint32_t ncap = g->cap ? g->cap : 16;
	while (ncap < g->count + more)
		ncap *= 2;
	struct pbuf *nb = malloc(ncap * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->count; i++)
		nb[i] = g->bufs[(g->head + i) % g->cap];
	free(g->bufs);
	g->bufs = nb;
	g->cap = ncap;
	g->head = 0;
	return 0;
}

/* b back at the head of g's list, taken next (the kernel's legacy recycle):
 * 0, or -ENOMEM (the list could not grow). Ring lock held. */
static int list_put_front(struct bgroup *g, uint64_t addr, uint32_t len, uint16_t bid)
{
	if (list_room(g, 1) < 0)
		return -ENOMEM;
	g->head = (g->head + g->cap - 1) % g->cap;
	g->bufs[g->head] = (struct pbuf){ addr, len, bid };
	g->count++;
	return 0;
}

/*
 * Buffer rings: a buffer taken moves the group's head (rhead) on at once, so
 * that two requests running at the same time never take one entry. A buffer
 * given back unused (a request that goes back to waiting, a cancel, a file
 * that is not a socket) moves the head back only when it is the last one
 * taken (q->bslot + 1 == rhead: nothing taken since); else an entry between
 * them is held by another request and the head must not cross it: the buffer
 * goes on the group's own list instead (bufs, as a classic group's), which is
 * taken from before the ring. No buffer is ever held by two requests, and
 * with one submitter the answers are the kernel's, whose waiting requests
 * hold no buffer either (exec_wait_ready gives it back).
 */
int exec_select_buf(struct ureq *q, uint32_t want)
{
	if (q->has_buf)
		return 0;
	struct emu_ring *r = q->r;
	int e = -ENOBUFS;
	pthread_mutex_lock(&r->lock);
	struct bgroup *g = group_find(r, q->sqe.buf_group);
	if (g && g->count) {
		list_take(g, q);
		q->buf_ring = g->is_ring ? BUF_RING_LIST : BUF_LIST;
		q->bgen = g->gen;
		e = 0;
	} else if (g && g->is_ring) {
		uint16_t tail = __atomic_load_n(&g->br->tail, __ATOMIC_ACQUIRE);
		if (tail != g->rhead) {
			struct io_uring_buf *b = &g->br->bufs[g->rhead & (g->entries - 1)];
			q->baddr = b->addr;
			q->blen = b->len;
			q->bid = b->bid;
			q->buf_ring = BUF_RING;
			q->bslot = g->rhead++;
			q->bgen = g->gen;
			e = 0;
		}
	}
	if (!e) {
		q->has_buf = 1;
		q->bgid = q->sqe.buf_group;
		if (want && want < q->blen)
			q->blen = want;
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* Give a selected, unused buffer back (a request that waits, a cancelled one):
 * never a gap in a buffer ring (above). */
void exec_buf_recycle_locked(struct ureq *q)
{
	if (!q->has_buf)
		return;
	struct bgroup *g = group_find(q->r, q->bgid);
	q->has_buf = 0;
	if (!g || g->is_ring != (q->buf_ring != BUF_LIST) || g->gen != q->bgen)
		return;          /* unregistered, or another group now */
	if (q->buf_ring == BUF_RING && (uint16_t)(q->bslot + 1) == g->rhead) {
		g->rhead--;
		return;
	}
	/* a list that cannot grow (out of memory) loses the buffer, as if used */
	(void)list_put_front(g, q->baddr, q->blen, q->bid);
}

int32_t op_provide(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	struct io_uring_sqe *s = &q->sqe;
	unsigned nbufs = (unsigned)s->fd, len = s->len, bid = (unsigned)s->off;
	/* as the kernel's: no buffers or too many is -E2BIG, buffers of length 0
	 * -EINVAL (6.18 here; older kernels took them); their memory is not
	 * looked at here (a read into a bad one fails with -EFAULT when it is used) */
	if (s->rw_flags || s->splice_fd_in)
		return -EINVAL;
	if (!nbufs || nbufs > 65536 || bid + nbufs > 65536)
		return -E2BIG;
	if (!len)
		return -EINVAL;
	if ((uint64_t)len * nbufs / nbufs != len || s->addr + (uint64_t)len * nbufs < s->addr)
		return -EOVERFLOW;
	int e = 0;
	pthread_mutex_lock(&r->lock);
	struct bgroup *g = exec_group_locked(r, s->buf_group, 1);
	if (!g || g->is_ring) {
		e = g ? -EINVAL : -ENOMEM;
		goto out;
	}
	if ((e = list_room(g, nbufs)) < 0)
		goto out;
	for (unsigned i = 0; i < nbufs; i++) {
		struct pbuf *b = &g->bufs[(g->head + g->count) % g->cap];
		b->addr = s->addr + (uint64_t)len * i;
		b->len = len;
		b->bid = (uint16_t)(bid + i);
		g->count++;
	}
	e = 0;                  /* the kernel answers 0, not the count its man page names */
out:
	pthread_mutex_unlock(&r->lock);
	return e;
}

int32_t op_remove_bufs(struct ureq *q, int ctx, struct ureq **run)
{
	(void)ctx, (void)run;
	struct emu_ring *r = q->r;
	unsigned nbufs = (unsigned)q->sqe.fd;
	if (!nbufs || nbufs > 65536 || q->sqe.addr || q->sqe.len || q->sqe.off)
		return -EINVAL;
	int e;
	pthread_mutex_lock(&r->lock);
	struct bgroup *g = group_find(r, q->sqe.buf_group);
	if (!g || g->is_ring) {
		e = g ? -EINVAL : -ENOENT;
	} else if (!g->count) {
		e = -ENOENT;
	} else {
		unsigned n = nbufs < g->count ? nbufs : g->count;
		g->head = (g->head + n) % g->cap;
		g->count -= n;
		e = (int)n;
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* ---- buffer rings (io_uring_register_buf_ring) ---- */

static uint32_t ring_gen;       /* registrations so far, in all rings (0: a classic group) */

int kbuf_reg_pbuf_ring(struct emu_ring *r, void *arg, unsigned nr)
{
	struct io_uring_buf_reg reg;
	if (nr != 1)
		return -EINVAL;
	if (ucopy(&reg, arg, sizeof(reg)) < 0)
		return -EFAULT;
	for (int i = 0; i < 3; i++)
		if (reg.resv[i])
			return -EINVAL;
	if (!reg.ring_addr || (reg.ring_addr & 4095) || !reg.ring_entries ||
	    (reg.ring_entries & (reg.ring_entries - 1)) || reg.ring_entries > 32768)
		return -EINVAL;
	char c;
	if (ucopy(&c, (void *)(uintptr_t)reg.ring_addr, 1) < 0 ||
	    ucopy(&c, (void *)(uintptr_t)(reg.ring_addr + reg.ring_entries * sizeof(struct io_uring_buf) - 1), 1) < 0)
		return -EFAULT;
	pthread_mutex_lock(&r->lock);
	int e = 0;
	struct bgroup *g = exec_group_locked(r, reg.bgid, 0);
	if (g && (g->is_ring || g->count)) {
		e = -EEXIST;
	} else if (!g && !(g = exec_group_locked(r, reg.bgid, 1))) {
		e = -ENOMEM;
	} else {
		free(g->bufs);
		memset(g, 0, sizeof(*g));
		g->used = 1;
		g->is_ring = 1;
		g->bgid = reg.bgid;
		g->br = (struct io_uring_buf_ring *)(uintptr_t)reg.ring_addr;
		g->entries = reg.ring_entries;
		/* a buffer of an earlier ring of this bgid is never given back to it */
		g->gen = __atomic_add_fetch(&ring_gen, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}

int kbuf_unreg_pbuf_ring(struct emu_ring *r, void *arg, unsigned nr)
{
	struct io_uring_buf_reg reg;
	if (nr != 1)
		return -EINVAL;
	if (ucopy(&reg, arg, sizeof(reg)) < 0)
		return -EFAULT;
	int e = -ENOENT;
	pthread_mutex_lock(&r->lock);
	for (unsigned i = 0; i < r->ngroups; i++) {
		struct bgroup *g = &r->groups[i];
		if (g->used && g->bgid == reg.bgid) {
			if (!g->is_ring) {
				e = -EINVAL;
			} else {
				free(g->bufs);
				memset(g, 0, sizeof(*g));
				e = 0;
			}
		}
	}
	pthread_mutex_unlock(&r->lock);
	return e;
}
