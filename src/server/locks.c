/*
 * locks.c - byte-range locks between clients, kept by simplefs_server
 * (UR_OP_LOCK / UR_OP_UNLOCK, docs/ABI.md "Locks"): one table per server,
 * records keyed by the file's inode (two clients hold different handles to
 * one file), owned by (ring, handle) - so locks belong to an open handle, as
 * OFD locks belong to an open file description: two handles contend even
 * within one ring. POSIX rules per owner: relocking converts, unlocking part
 * of a range splits it, adjacent or overlapping records of one type merge.
 * A waiting request stays queued (its SQE's CQE is posted when it is
 * granted) and is granted as soon as no other owner's record conflicts; it
 * ends instead at its deadline (-ETIMEDOUT), by UR_OP_ASYNC_CANCEL
 * (-ECANCELED), or when its handle is closed (-EBADF). A request that would
 * close a cycle of waiting owners is refused (-EDEADLK): every queued wait of
 * every owner reached is followed, each owner once.
 *
 * Must never: block the server's loop, let a client's records or waits
 * exceed their bounds (UR_CLIENT_MAX_LOCKS records, UR_CLIENT_MAX_LOCKWAITS
 * waits, which also count against the client's CQ room, so a grant, a
 * timeout or a cancel always has a CQE slot: a grant pass costs at most
 * waits x records, a deadlock search at most that plus records + waits per
 * owner it reaches), keep a record or a
 * wait of a handle after it is closed or of a ring after it is dropped, or
 * post a CQE to a ring that did not ask (a broken ring's waits stay queued,
 * never granted nor timed out, until it is dropped).
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
	uint32_t seen;                     /* = the table's gen: its owner was reached (deadlock()) */
};

struct ur_lockwait {
	struct ur_lockwait *next;          /* FIFO: granted in arrival order when free */
	struct ur_lock want;               /* owner, file, range, type (want.seen: deadlock()) */
	uint64_t user_data;
	uint64_t deadline;                 /* CLOCK_MONOTONIC ns; 0: none */
	struct ur_lockwait *work;          /* deadlock()'s work list */
};

static struct ur_locktab *tab_of(struct ur_server *s)
{
	return s->host ? &s->host->locks : &s->own_locks;
}

static int same_owner(const struct ur_lock *a, const struct ur_lock *b)
{
	return a->ring == b->ring && a->fd == b->fd;
}

static int conflict(const struct ur_lock *l, const struct ur_lock *w)
{
	return l->ino == w->ino && !same_owner(l, w) && l->start < w->end && w->start < l->end &&
	       !(l->shared && w->shared);
}

/* The first record of another owner that conflicts with w, or NULL. */
static struct ur_lock *blocker(struct ur_locktab *t, const struct ur_lock *w)
{
	for (struct ur_lock *l = t->held; l; l = l->next)
		if (conflict(l, w))
			return l;
	return NULL;
}

/* Mark owner o reached: stamp its records, put its queued waits on the work
 * list. Once per owner: a stamped record means its owner was reached. */
static void reach(struct ur_locktab *t, const struct ur_lock *o, struct ur_lockwait **work)
{
	for (struct ur_lock *l = t->held; l; l = l->next)
		if (same_owner(l, o))
			l->seen = t->gen;
	for (struct ur_lockwait *x = t->waits; x; x = x->next)
		if (same_owner(&x->want, o) && x->want.seen != t->gen) {
			x->want.seen = t->gen;
			x->work = *work;
			*work = x;
		}
}

/* Would w, waiting, close a cycle: does any owner w would wait for wait,
 * through any of its queued waits and any record blocking one of them, and
 * so on, for w's owner? A search over the owners reached, each expanded
 * once (its records stamped with the table's generation), every queued wait
 * of each followed. */
static int deadlock(struct ur_locktab *t, const struct ur_lock *w)
{
	struct ur_lockwait *work = NULL;
	if (++t->gen == 0) {                   /* a wrap: no old stamp may match */
		for (struct ur_lock *l = t->held; l; l = l->next)
			l->seen = 0;
		for (struct ur_lockwait *x = t->waits; x; x = x->next)
			x->want.seen = 0;
		t->gen = 1;
	}
	for (struct ur_lock *l = t->held; l; l = l->next)
		if (conflict(l, w) && l->seen != t->gen)
			reach(t, l, &work);
	while (work) {
		struct ur_lockwait *x = work;
		work = x->work;
		for (struct ur_lock *l = t->held; l; l = l->next) {
			if (!conflict(l, &x->want))
				continue;
			if (same_owner(l, w))
				return 1;
			if (l->seen != t->gen)
				reach(t, l, &work);
		}
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

/* End the queued wait *pp: unlinked, freed, its CQE res posted. */
static void end_wait(struct ur_lockwait **pp, int32_t res)
{
	struct ur_lockwait *w = *pp;
	struct ur_server *r = w->want.ring;
	*pp = w->next;
	r->nlockwait--;
	ur_server_post(r, w->user_data, res);
	free(w);
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
			end_wait(pp, take(t, &w->want));
			more = 1;
		}
	}
}

int32_t ur_lock_request(struct ur_server *s, const struct ur_sqe *q, uint32_t ino, uint64_t now)
{
	struct ur_locktab *t = tab_of(s);
	struct ur_lock w = {
		.ring = s, .fd = q->fd, .ino = ino, .start = q->off,
		.end = q->addr ? q->off + q->addr : UINT64_MAX,
		.shared = !!(q->op_flags & UR_LOCK_SHARED),
	};
	if (!blocker(t, &w)) {
		int r = take(t, &w);
		if (!r)
			grant(t);           /* a downgrade may free others */
		return r;
	}
	if (!(q->op_flags & UR_LOCK_WAIT))
		return -EAGAIN;
	if (deadlock(t, &w))
		return -EDEADLK;
	if (s->nlockwait >= UR_CLIENT_MAX_LOCKWAITS)
		return -ENOLCK;
	struct ur_lockwait *lw = malloc(sizeof(*lw));
	if (!lw)
		return -ENOLCK;
	lw->want = w;
	lw->user_data = q->user_data;
	lw->deadline = 0;
	if (q->addr2) {                     /* a timeout: ns from now (saturated) */
		lw->deadline = q->addr2 > UINT64_MAX - now ? UINT64_MAX : now + q->addr2;
		if (!t->next_deadline || lw->deadline < t->next_deadline)
			t->next_deadline = lw->deadline;
	}
	lw->next = NULL;
	struct ur_lockwait **pp = &t->waits;
	while (*pp)
		pp = &(*pp)->next;
	*pp = lw;
	s->nlockwait++;
	return UR_LOCK_QUEUED;
}

int32_t ur_lock_cancel(struct ur_server *s, uint64_t user_data)
{
	struct ur_locktab *t = tab_of(s);
	for (struct ur_lockwait **pp = &t->waits; *pp; pp = &(*pp)->next)
		if ((*pp)->want.ring == s && (*pp)->user_data == user_data) {
			end_wait(pp, -ECANCELED);
			return 0;
		}
	return -ENOENT;
}

uint64_t ur_locks_deadline(struct ur_server *s)
{
	return tab_of(s)->next_deadline;
}

void ur_locks_expire(struct ur_server *s, uint64_t now)
{
	struct ur_locktab *t = tab_of(s);
	if (!t->next_deadline || now < t->next_deadline)
		return;
	uint64_t next = 0;
	for (struct ur_lockwait **pp = &t->waits; *pp;) {
		struct ur_lockwait *w = *pp;
		if (!w->deadline || w->want.ring->broken) {
			pp = &w->next;      /* a broken ring's: never a CQE (never due) */
			continue;
		}
		if (w->deadline <= now) {
			end_wait(pp, -ETIMEDOUT);
			continue;
		}
		if (!next || w->deadline < next)
			next = w->deadline;
		pp = &w->next;
	}
	t->next_deadline = next;
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
