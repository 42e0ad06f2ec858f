/* SPDX-License-Identifier: MIT */
/*
 * locks.c - byte-range locks between clients, kept by simplefs_server
 * (UR_OP_LOCK / UR_OP_UNLOCK, docs/ABI.md "Locks"): one table per server,
 * indexed by file (inode: two clients hold different handles to one file),
 * each file with its records and its FIFO of queued waits; every record and
 * wait is also on its ring's own list, so a ring's CLOSE, cancel or
 * departure finds its own without looking at anyone else's. Records are
 * owned by (ring, handle) - so locks belong to an open handle, as OFD locks
 * belong to an open file description: two handles contend even within one
 * ring. POSIX rules per owner: relocking converts, unlocking part of a
 * range splits it, adjacent or overlapping records of one type merge.
 * A waiting request stays queued (its SQE's CQE is posted when it is
 * granted) and is granted as soon as no other owner's record conflicts; it
 * ends instead at its deadline (-ETIMEDOUT), by UR_OP_ASYNC_CANCEL
 * (-ECANCELED), or when its handle is closed (-EBADF). A request that would
 * close a cycle of waiting owners is refused (-EDEADLK): every queued wait of
 * every owner reached is followed, each owner once.
 *
 * Must never: block the server's loop; let records or waits exceed their
 * bounds per ring (UR_CLIENT_MAX_LOCKS, UR_CLIENT_MAX_LOCKWAITS: the waits
 * also count against the ring's CQ room, so a grant, a timeout or a cancel
 * always has a CQE slot), per process (UR_PROC_MAX_*) or per server
 * (UR_SERVER_MAX_*); look, in a grant pass, at another file's waits or run
 * one when no record of the file was freed, cut or converted (a pass costs
 * at most the file's waits x its records, each re-run only after a grant
 * that cut a record; a deadlock search at most every record and wait once
 * plus the records of the files of the waits it follows); keep a record or
 * a wait of a handle after it is closed or of a ring after it is dropped;
 * or post a CQE to a ring that did not ask (a broken ring's waits stay
 * queued, never granted nor timed out, until it is dropped).
 */
#include <errno.h>
#include <stdlib.h>
#include "server.h"

struct ur_lockfile {
	struct ur_lockfile *next;          /* in its bucket */
	uint32_t ino;
	struct ur_lock *held;              /* every owner's records on this file */
	struct ur_lockwait *waits, **wtail;   /* FIFO: granted in arrival order when free */
	struct ur_lockfile *touched;       /* ur_locks_release's list of files it changed */
	int on_touched;
	int freed;                         /* a record was freed, cut or converted: grant */
};

struct ur_lock {
	struct ur_lock *next, **prev;      /* on its file */
	struct ur_lock *onext, **oprev;    /* on its ring (owner list) */
	struct ur_lockfile *file;
	struct ur_server *ring;            /* owner: (ring, fd) */
	int32_t fd;
	uint32_t ino;
	uint64_t start, end;               /* [start, end); end UINT64_MAX: to EOF and beyond */
	int shared;
	uint32_t seen;                     /* = the table's gen: its owner was reached (deadlock()) */
};

struct ur_lockwait {
	struct ur_lockwait *next, **prev;  /* on its file, FIFO */
	struct ur_lockwait *onext, **oprev;   /* on its ring, newest first */
	struct ur_lock want;               /* owner, file, range, type (want.seen: deadlock()) */
	uint64_t user_data;
	uint64_t deadline;                 /* CLOCK_MONOTONIC ns; 0: none */
	struct ur_lockwait *work;          /* deadlock()'s work list */
};

static struct ur_locktab *tab_of(struct ur_server *s)
{
	return s->host ? &s->host->locks : &s->own_locks;
}

/* Every ring whose records and waits are in s's table: s's server's, or s. */
#define FOR_RINGS(r, s) \
	for (struct ur_server *r = (s)->host ? (s)->host->rings : (s); r; r = (s)->host ? r->next : NULL)

static struct ur_lockfile **bucket(struct ur_locktab *t, uint32_t ino)
{
	return &t->file[(ino * 2654435761u) >> (32 - UR_LOCK_BUCKET_BITS)];
}

static struct ur_lockfile *file_find(struct ur_locktab *t, uint32_t ino)
{
	struct ur_lockfile *f = *bucket(t, ino);
	while (f && f->ino != ino)
		f = f->next;
	return f;
}

/* The file of ino, made when none has records or waits yet (NULL: no memory). */
static struct ur_lockfile *file_get(struct ur_locktab *t, uint32_t ino)
{
	struct ur_lockfile *f = file_find(t, ino);
	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	struct ur_lockfile **b = bucket(t, ino);
	f->ino = ino;
	f->wtail = &f->waits;
	f->next = *b;
	*b = f;
	return f;
}

/* Forget f when nothing is left on it. */
static void file_put(struct ur_locktab *t, struct ur_lockfile *f)
{
	if (f->held || f->waits)
		return;
	struct ur_lockfile **pp = bucket(t, f->ino);
	while (*pp != f)
		pp = &(*pp)->next;
	*pp = f->next;
	free(f);
}

/* Records (waits: 1, queued waits) of every ring of s's client process. */
static uint32_t proc_count(struct ur_server *s, int waits)
{
	if (!s->host || !s->pid)
		return waits ? s->nlockwait : s->nlocks;
	uint32_t n = 0;
	for (struct ur_server *r = s->host->rings; r; r = r->next)
		if (r->pid == s->pid)
			n += waits ? r->nlockwait : r->nlocks;
	return n;
}

/* Room for n more records of ring s: per ring, per process, per server. */
static int rec_room(struct ur_locktab *t, struct ur_server *s, uint32_t n)
{
	if (s->nlocks + n > UR_CLIENT_MAX_LOCKS)
		return 0;
	if (proc_count(s, 0) + n > UR_PROC_MAX_LOCKS)
		return 0;
	if (t->nlocks + n > UR_SERVER_MAX_LOCKS)
		return 0;
	return 1;
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

/* The first record on file f of another owner that conflicts with w, or NULL. */
static struct ur_lock *blocker(struct ur_lockfile *f, const struct ur_lock *w)
{
	for (struct ur_lock *l = f->held; l; l = l->next)
		if (conflict(l, w))
			return l;
	return NULL;
}

/* Mark owner o reached: stamp its records, put its queued waits on the work
 * list. Once per owner: a stamped record means its owner was reached. Only
 * o's ring's own lists are looked at. */
static void reach(struct ur_locktab *t, const struct ur_lock *o, struct ur_lockwait **work)
{
	for (struct ur_lock *l = o->ring->locks; l; l = l->onext)
		if (l->fd == o->fd)
			l->seen = t->gen;
	for (struct ur_lockwait *x = o->ring->lwaits; x; x = x->onext)
		if (same_owner(&x->want, o) && x->want.seen != t->gen) {
			x->want.seen = t->gen;
			x->work = *work;
			*work = x;
		}
}

/* Would w, waiting on file f, close a cycle: does any owner w would wait
 * for wait, through any of its queued waits and any record blocking one of
 * them (on that wait's file), and so on, for w's owner? A search over the
 * owners reached, each expanded once (its records stamped with the table's
 * generation), every queued wait of each followed. */
static int deadlock(struct ur_locktab *t, struct ur_lockfile *f, struct ur_server *s, const struct ur_lock *w)
{
	struct ur_lockwait *work = NULL;
	if (++t->gen == 0) {                   /* a wrap: no old stamp may match */
		FOR_RINGS(r, s) {
			for (struct ur_lock *l = r->locks; l; l = l->onext)
				l->seen = 0;
			for (struct ur_lockwait *x = r->lwaits; x; x = x->onext)
				x->want.seen = 0;
		}
		t->gen = 1;
	}
	for (struct ur_lock *l = f->held; l; l = l->next)
		if (conflict(l, w) && l->seen != t->gen)
			reach(t, l, &work);
	while (work) {
		struct ur_lockwait *x = work;
		work = x->work;
		for (struct ur_lock *l = x->want.file->held; l; l = l->next) {
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

static void unlink_rec(struct ur_locktab *t, struct ur_lock *l)
{
	if ((*l->prev = l->next))
		l->next->prev = l->prev;
	if ((*l->oprev = l->onext))
		l->onext->oprev = l->oprev;
	l->file->freed = 1;
	l->ring->nlocks--;
	t->nlocks--;
	free(l);
}

static int add_rec(struct ur_locktab *t, struct ur_lockfile *f, const struct ur_lock *w,
		   uint64_t start, uint64_t end, int shared)
{
	struct ur_lock *l = malloc(sizeof(*l));
	if (!l)
		return -ENOLCK;
	*l = *w;
	l->file = f;
	l->start = start;
	l->end = end;
	l->shared = shared;
	if ((l->next = f->held))
		l->next->prev = &l->next;
	l->prev = &f->held;
	f->held = l;
	if ((l->onext = w->ring->locks))
		l->onext->oprev = &l->onext;
	l->oprev = &w->ring->locks;
	w->ring->locks = l;
	w->ring->nlocks++;
	t->nlocks++;
	return 0;
}

/* Remove w's owner's hold on [w->start, w->end) of file f, splitting a
 * record that covers it: -ENOLCK, and nothing changed, when that split
 * finds no room for one more record (rec_room: the owner's ring, process
 * or server at its bound; an owner's records never overlap, so a record
 * that covers the range is the only one it meets). */
static int cut_own(struct ur_locktab *t, struct ur_lockfile *f, const struct ur_lock *w)
{
	for (struct ur_lock *l = f->held, *nx; l; l = nx) {
		nx = l->next;
		if (!same_owner(l, w) || l->end <= w->start || w->end <= l->start)
			continue;
		if (l->start < w->start && w->end < l->end) {
			if (!rec_room(t, l->ring, 1))
				return -ENOLCK;
			uint64_t right = w->end, rend = l->end;
			l->end = w->start;
			f->freed = 1;
			if (add_rec(t, f, l, right, rend, l->shared) < 0)
				return -ENOLCK;
			return 0;           /* one record covered it all */
		}
		if (l->start < w->start) {
			l->end = w->start;
			f->freed = 1;
		} else if (w->end < l->end) {
			l->start = w->end;
			f->freed = 1;
		} else {
			unlink_rec(t, l);
		}
	}
	return 0;
}

/* Take w now (no other owner conflicts): its own records in the range are
 * replaced, neighbours of the same type merged in. */
static int take(struct ur_locktab *t, struct ur_lockfile *f, const struct ur_lock *w)
{
	if (!rec_room(t, w->ring, 2))
		return -ENOLCK;
	int r = cut_own(t, f, w);
	if (r < 0)
		return r;
	uint64_t start = w->start, end = w->end;
	for (struct ur_lock *l = f->held; l;) {
		if (same_owner(l, w) && l->shared == w->shared &&
		    (l->end == start || l->start == end)) {
			if (l->end == start)
				start = l->start;
			else
				end = l->end;
			unlink_rec(t, l);
			l = f->held;        /* the range grew: look again */
			continue;
		}
		l = l->next;
	}
	return add_rec(t, f, w, start, end, w->shared);
}

/* Unlink and free the queued wait w (its file is left for the caller to
 * file_put); res >= 0 or a -errno: its CQE is posted, NO_CQE: none. */
#define NO_CQE INT32_MIN
static void end_wait(struct ur_locktab *t, struct ur_lockwait *w, int32_t res)
{
	struct ur_server *r = w->want.ring;
	struct ur_lockfile *f = w->want.file;
	if ((*w->prev = w->next))
		w->next->prev = w->prev;
	else
		f->wtail = w->prev;
	if ((*w->oprev = w->onext))
		w->onext->oprev = w->oprev;
	r->nlockwait--;
	t->nwaits--;
	if (res != NO_CQE)
		ur_server_post(r, w->user_data, res);
	free(w);
}

/* Grant every wait queued on file f that no longer conflicts, in arrival
 * order; again while a grant cut or converted a record of its owner. Only
 * f's waits are looked at (each counted for --stats). */
static void grant(struct ur_locktab *t, struct ur_lockfile *f)
{
	while (f->freed) {
		f->freed = 0;
		for (struct ur_lockwait *w = f->waits, *nx; w; w = nx) {
			nx = w->next;
			t->n_grant_looked++;
			if (w->want.ring->broken || blocker(f, &w->want))
				continue;
			end_wait(t, w, take(t, f, &w->want));
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
	struct ur_lockfile *f = file_get(t, ino);
	int32_t r = -ENOLCK;
	if (!f)
		return r;
	w.file = f;
	f->freed = 0;
	if (!blocker(f, &w)) {
		r = take(t, f, &w);
		if (!r)
			grant(t, f);        /* a downgrade may free others */
		goto out;
	}
	r = -EAGAIN;
	if (!(q->op_flags & UR_LOCK_WAIT))
		goto out;
	r = -EDEADLK;
	if (deadlock(t, f, s, &w))
		goto out;
	r = -ENOLCK;
	if (s->nlockwait >= UR_CLIENT_MAX_LOCKWAITS)
		goto out;
	if (proc_count(s, 1) >= UR_PROC_MAX_LOCKWAITS)
		goto out;
	if (t->nwaits >= UR_SERVER_MAX_LOCKWAITS)
		goto out;
	struct ur_lockwait *lw = malloc(sizeof(*lw));
	if (!lw)
		goto out;
	lw->want = w;
	lw->user_data = q->user_data;
	lw->deadline = 0;
	if (q->addr2) {                     /* a timeout: ns from now (saturated) */
		lw->deadline = q->addr2 > UINT64_MAX - now ? UINT64_MAX : now + q->addr2;
		if (!t->next_deadline || lw->deadline < t->next_deadline)
			t->next_deadline = lw->deadline;
	}
	lw->next = NULL;
	lw->prev = f->wtail;
	*f->wtail = lw;
	f->wtail = &lw->next;
	if ((lw->onext = s->lwaits))
		lw->onext->oprev = &lw->onext;
	lw->oprev = &s->lwaits;
	s->lwaits = lw;
	s->nlockwait++;
	t->nwaits++;
	return UR_LOCK_QUEUED;
out:
	file_put(t, f);
	return r;
}

int32_t ur_lock_cancel(struct ur_server *s, uint64_t user_data)
{
	struct ur_lockwait *first = NULL;  /* the ring's list is newest first */
	for (struct ur_lockwait *w = s->lwaits; w; w = w->onext)
		if (w->want.ring == s && w->user_data == user_data)
			first = w;
	if (!first)
		return -ENOENT;
	struct ur_lockfile *f = first->want.file;
	end_wait(tab_of(s), first, -ECANCELED);
	file_put(tab_of(s), f);
	return 0;
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
	FOR_RINGS(r, s)
		for (struct ur_lockwait *w = r->lwaits, *nx; w; w = nx) {
			nx = w->onext;
			if (!w->deadline || w->want.ring->broken)
				continue;   /* a broken ring's: never a CQE (never due) */
			if (w->deadline <= now) {
				struct ur_lockfile *f = w->want.file;
				end_wait(t, w, -ETIMEDOUT);
				file_put(t, f);
				continue;
			}
			if (!next || w->deadline < next)
				next = w->deadline;
		}
	t->next_deadline = next;
}

int32_t ur_unlock_request(struct ur_server *s, const struct ur_sqe *q, uint32_t ino)
{
	struct ur_locktab *t = tab_of(s);
	struct ur_lockfile *f = file_find(t, ino);
	if (!f)
		return 0;                   /* nothing held on the file by anyone */
	struct ur_lock w = {
		.ring = s, .fd = q->fd, .ino = ino, .start = q->off,
		.end = q->addr ? q->off + q->addr : UINT64_MAX,
	};
	f->freed = 0;
	int r = cut_own(t, f, &w);
	grant(t, f);
	file_put(t, f);
	return r;
}

/* Put f on the list of files ur_locks_release changed (once). */
static void touch(struct ur_lockfile *f, struct ur_lockfile **list)
{
	if (f->on_touched)
		return;
	f->on_touched = 1;
	f->touched = *list;
	*list = f;
}

void ur_locks_release(struct ur_server *s, int fd)
{
	struct ur_locktab *t = tab_of(s);
	struct ur_lockfile *list = NULL;
	for (struct ur_lock *l = s->locks, *nx; l; l = nx) {
		nx = l->onext;
		if (fd >= 0 && l->fd != fd)
			continue;
		touch(l->file, &list);
		unlink_rec(t, l);
	}
	for (struct ur_lockwait *w = s->lwaits, *nx; w; w = nx) {
		nx = w->onext;
		if (fd >= 0 && w->want.fd != fd)
			continue;
		touch(w->want.file, &list);
		/* a closed handle's: -EBADF; a leaving ring's: no CQE */
		end_wait(t, w, fd >= 0 ? -EBADF : NO_CQE);
	}
	while (list) {
		struct ur_lockfile *f = list;
		list = f->touched;
		f->on_touched = 0;
		grant(t, f);                /* only if a record of it was freed */
		file_put(t, f);
	}
}
