/*
 * locks.c - byte-range locks between clients, kept by simplefs_server
 * (UR_OP_LOCK / UR_OP_UNLOCK, docs/ABI.md "Locks"): one table per server,
 * records keyed by the file's inode (two clients hold different handles to
 * one file), owned by (ring, handle) - so locks belong to an open handle, as
 * OFD locks belong to an open file description: two handles contend even
 * within one ring. POSIX rules per owner: relocking converts, unlocking part
 * of a range splits it, adjacent or overlapping records of one type merge.
 * A waiting request stays queued (its SQE's CQE is posted when it is
 * granted) and is granted as soon as no other owner's record conflicts.
 *
 * Must never: block the server's loop, let a client's records or waits
 * exceed their bounds (UR_CLIENT_MAX_LOCKS records, UR_CLIENT_MAX_LOCKWAITS
 * waits, which also count against the client's CQ room, so a grant always
 * has a CQE slot: a grant pass costs at most waits x records), keep a record or a
 * wait of a handle after it is closed or of a ring after it is dropped, or
 * post a CQE to a ring that did not ask (a broken ring's waits stay queued,
 * never granted, until it is dropped).
 */
#include <errno.h>
#include <stdlib.h>
#include "server.h"

struct ur_lock {
	struct ur_lock *next;
	struct ur_server *ring;            /* owner: (ring, fd) */
	int32_t fd;
	uint32_t ino;
	uint64_t start, end;               /* [start, end); end UINT64_MAX: to EOF and beyond */
	int shared;
};

struct ur_lockwait {
	struct ur_lockwait *next;          /* FIFO: granted in arrival order when free */
	struct ur_lock want;               /* owner, file, range, type */
	uint64_t user_data;
};

#define UR_DEADLOCK_DEPTH 16               /* owners followed along a wait chain */

static struct ur_locktab *tab_of(struct ur_server *s)
{
	return s->host ? &s->host->locks : &s->own_locks;
}

static int same_owner(const struct ur_lock *a, const struct ur_lock *b)
{
	return a->ring == b->ring && a->fd == b->fd;
}

/* The first record of another owner that conflicts with w, or NULL. */
static struct ur_lock *blocker(struct ur_locktab *t, const struct ur_lock *w)
{
	for (struct ur_lock *l = t->held; l; l = l->next)
		if (l->ino == w->ino && !same_owner(l, w) && l->start < w->end && w->start < l->end &&
		    !(l->shared && w->shared))
			return l;
	return NULL;
}

/* Would w, waiting, close a cycle: does the chain of owners that b waits
 * for (each wait's first blocker) lead back to w's owner? */
static int deadlock(struct ur_locktab *t, const struct ur_lock *w, const struct ur_lock *b)
{
	for (int depth = 0; b && depth < UR_DEADLOCK_DEPTH; depth++) {
		if (same_owner(b, w))
			return 1;
		struct ur_lockwait *bw = t->waits;
		while (bw && !same_owner(&bw->want, b))
			bw = bw->next;
		if (!bw)
			return 0;
		b = blocker(t, &bw->want);
	}
	return 0;
}

static void unlink_rec(struct ur_lock **pp)
{
	struct ur_lock *l = *pp;
	*pp = l->next;
	l->ring->nlocks--;
	free(l);
}

static int add_rec(struct ur_locktab *t, const struct ur_lock *w, uint64_t start, uint64_t end, int shared)
{
	struct ur_lock *l = malloc(sizeof(*l));
	if (!l)
		return -ENOLCK;
	*l = *w;
	l->start = start;
	l->end = end;
	l->shared = shared;
	l->next = t->held;
	t->held = l;
	w->ring->nlocks++;
	return 0;
}

/* Remove w's owner's hold on [w->start, w->end) of w's file, splitting a
 * record that covers it: -ENOLCK, and nothing changed, when that split
 * finds the owner's ring at UR_CLIENT_MAX_LOCKS (an owner's records never
 * overlap, so a record that covers the range is the only one it meets). */
static int cut_own(struct ur_locktab *t, const struct ur_lock *w)
{
	for (struct ur_lock **pp = &t->held; *pp;) {
		struct ur_lock *l = *pp;
		if (!same_owner(l, w) || l->ino != w->ino || l->end <= w->start || w->end <= l->start) {
			pp = &l->next;
			continue;
		}
		if (l->start < w->start && w->end < l->end) {
			if (l->ring->nlocks >= UR_CLIENT_MAX_LOCKS)
				return -ENOLCK;
			uint64_t right = w->end, rend = l->end;
			l->end = w->start;
			if (add_rec(t, l, right, rend, l->shared) < 0)
				return -ENOLCK;
			return 0;           /* one record covered it all */
		}
		if (l->start < w->start) {
			l->end = w->start;
			pp = &l->next;
		} else if (w->end < l->end) {
			l->start = w->end;
			pp = &l->next;
		} else {
			unlink_rec(pp);
		}
	}
	return 0;
}

/* Take w now (no other owner conflicts): its own records in the range are
 * replaced, neighbours of the same type merged in. */
static int take(struct ur_locktab *t, const struct ur_lock *w)
{
	if (w->ring->nlocks + 2 > UR_CLIENT_MAX_LOCKS)
		return -ENOLCK;
	int r = cut_own(t, w);
	if (r < 0)
		return r;
	uint64_t start = w->start, end = w->end;
	for (struct ur_lock **pp = &t->held; *pp;) {
		struct ur_lock *l = *pp;
		if (same_owner(l, w) && l->ino == w->ino && l->shared == w->shared &&
		    (l->end == start || l->start == end)) {
			if (l->end == start)
				start = l->start;
			else
				end = l->end;
			unlink_rec(pp);
			pp = &t->held;      /* the range grew: look again */
			continue;
		}
		pp = &l->next;
	}
	return add_rec(t, w, start, end, w->shared);
}

/* Grant every queued wait that no longer conflicts, in arrival order. */
static void grant(struct ur_locktab *t)
{
	int more = 1;
	while (more) {
		more = 0;
		for (struct ur_lockwait **pp = &t->waits; *pp;) {
			struct ur_lockwait *w = *pp;
			if (w->want.ring->broken || blocker(t, &w->want)) {
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			struct ur_server *r = w->want.ring;
			r->nlockwait--;
			int res = take(t, &w->want);
			ur_server_post(r, w->user_data, res);
			free(w);
			more = 1;
		}
	}
}

int32_t ur_lock_request(struct ur_server *s, const struct ur_sqe *q, uint32_t ino)
{
	struct ur_locktab *t = tab_of(s);
	struct ur_lock w = {
		.ring = s, .fd = q->fd, .ino = ino, .start = q->off,
		.end = q->addr ? q->off + q->addr : UINT64_MAX,
		.shared = !!(q->op_flags & UR_LOCK_SHARED),
	};
	struct ur_lock *b = blocker(t, &w);
	if (!b) {
		int r = take(t, &w);
		if (!r)
			grant(t);           /* a downgrade may free others */
		return r;
	}
	if (!(q->op_flags & UR_LOCK_WAIT))
		return -EAGAIN;
	if (deadlock(t, &w, b))
		return -EDEADLK;
	if (s->nlockwait >= UR_CLIENT_MAX_LOCKWAITS)
		return -ENOLCK;
	struct ur_lockwait *lw = malloc(sizeof(*lw));
	if (!lw)
		return -ENOLCK;
	lw->want = w;
	lw->user_data = q->user_data;
	lw->next = NULL;
	struct ur_lockwait **pp = &t->waits;
	while (*pp)
		pp = &(*pp)->next;
	*pp = lw;
	s->nlockwait++;
	return UR_LOCK_QUEUED;
}

int32_t ur_unlock_request(struct ur_server *s, const struct ur_sqe *q, uint32_t ino)
{
	struct ur_locktab *t = tab_of(s);
	struct ur_lock w = {
		.ring = s, .fd = q->fd, .ino = ino, .start = q->off,
		.end = q->addr ? q->off + q->addr : UINT64_MAX,
	};
	int r = cut_own(t, &w);
	grant(t);
	return r;
}

void ur_locks_release(struct ur_server *s, int fd)
{
	struct ur_locktab *t = tab_of(s);
	int any = 0;
	for (struct ur_lock **pp = &t->held; *pp;) {
		struct ur_lock *l = *pp;
		if (l->ring == s && (fd < 0 || l->fd == fd)) {
			unlink_rec(pp);
			any = 1;
		} else {
			pp = &l->next;
		}
	}
	for (struct ur_lockwait **pp = &t->waits; *pp;) {
		struct ur_lockwait *w = *pp;
		if (w->want.ring != s || (fd >= 0 && w->want.fd != fd)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		s->nlockwait--;
		if (fd >= 0)
			ur_server_post(s, w->user_data, -EBADF);   /* its handle was closed */
		free(w);
	}
	if (any)
		grant(t);
}
