/* SPDX-License-Identifier: MIT */
/*
 * reactor.c - the emulated ring's waiting thread: one per ring, started on
 * first need, asleep in epoll_wait otherwise. It waits for readiness
 * (POLL_ADD, and reads/writes/sends/receives/accepts on sockets and pipes that
 * said EAGAIN: the kernel's FAST_POLL) and for time (TIMEOUT, LINK_TIMEOUT). A
 * request waiting here can be cancelled at once, which is why nothing that
 * merely waits blocks a worker.
 *
 * Its poll set is kept incrementally, so that a wake-up costs what fired, not
 * what is armed: one epoll set (pp_fd) holds its wake-up eventfd, the
 * multishot set (ep_fd) and one level-triggered EPOLLONESHOT entry per fd that
 * has one-shot waiters (struct pgroup), armed with EPOLL_CTL_MOD/ADD when a
 * request starts waiting; a cancel only unlinks the request. Timers are a heap
 * by deadline, and TIMEOUTs with a completion count a list by target.
 *
 * Must never: act on a request that no longer waits here (it may have been
 * cancelled and reused: waiters are unlinked under the ring lock the moment
 * they stop waiting), or on an epoll event whose generation is not its
 * entry's own; leave an fd's entry armed with fewer events than a waiter of it
 * wants; call an operation that can block (only the non-blocking retry runs
 * here); hold the ring lock while it sleeps; walk every request in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "uring_int.h"

/* Cookies of pp_fd's own entries; an fd's entry is gen << 32 | fd. */
#define CK_WAKE UINT64_MAX
#define CK_MSHOT (UINT64_MAX - 1)
#define REACTOR_EVENTS 128

int kts_to_deadline(const struct __kernel_timespec *ts, unsigned flags, uint64_t *out)
{
	uint64_t v = (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
	uint64_t now = now_ns();
	if (flags & IORING_TIMEOUT_ABS) {
		clockid_t c = (flags & IORING_TIMEOUT_BOOTTIME) ? CLOCK_BOOTTIME :
			      (flags & IORING_TIMEOUT_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		struct timespec t;
		clock_gettime(c, &t);
		uint64_t cnow = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
		*out = v > cnow ? now + (v - cnow) : now;
	} else {
		*out = now + v;
	}
	if (!*out)
		*out = 1;
	return 0;
}

void reactor_kick(struct emu_ring *r)
{
	if (r->wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t w = write(r->wake_fd, &one, sizeof(one));
		(void)w;
	}
}

/* ---- timers: a min-heap by deadline (th_idx: position + 1) ---- */

static int th_less(struct emu_ring *r, unsigned a, unsigned b)
{
	return r->th[a]->deadline < r->th[b]->deadline;
}

static void th_swap(struct emu_ring *r, unsigned a, unsigned b)
{
	struct ureq *t = r->th[a];
	r->th[a] = r->th[b];
	r->th[b] = t;
	r->th[a]->th_idx = a + 1;
	r->th[b]->th_idx = b + 1;
}

static void th_fix(struct emu_ring *r, unsigned i)
{
	while (i && th_less(r, i, (i - 1) / 2)) {
		th_swap(r, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		unsigned l = 2 * i + 1, m = i;
		if (l < r->th_n && th_less(r, l, m))
			m = l;
		if (l + 1 < r->th_n && th_less(r, l + 1, m))
			m = l + 1;
		if (m == i)
			break;
		th_swap(r, i, m);
		i = m;
	}
}

/* Room for one more request in the heap (exec_req_get_locked, before it allocates
 * one): th_cap never falls below the number of requests, so a push cannot fail. */
int reactor_reserve_locked(struct emu_ring *r)
{
	if (r->nreq < r->th_cap) {
		r->nreq++;
		return 0;
	}
	unsigned cap = r->th_cap ? 2 * r->th_cap : 64;
	struct ureq **th = realloc(r->th, cap * sizeof(*th));
	if (!th)
		return -ENOMEM;
	r->th = th;
	r->th_cap = cap;
	r->nreq++;
	return 0;
}

/* q (RS_TIMEOUT, deadline set; a TIMEOUT with a count: target set) starts waiting. */
void timer_add_locked(struct ureq *q)
{
	struct emu_ring *r = q->r;
	r->th[r->th_n] = q;
	q->th_idx = ++r->th_n;
	th_fix(r, r->th_n - 1);
	if (!q->target)
		return;
	/* by target, after those with the same one (the kernel's order); a new one
	 * usually has the highest target: the walk starts at the tail */
	struct ureq *x = r->counted_tail;
	while (x && x->target > q->target)
		x = x->tprev;
	q->tprev = x;
	q->tnext = x ? x->tnext : r->counted;
	if (q->tnext)
		q->tnext->tprev = q;
	else
		r->counted_tail = q;
	if (x)
		x->tnext = q;
	else
		r->counted = q;
}

/* q's deadline changed (TIMEOUT_REMOVE with an update). */
void timer_update_locked(struct ureq *q)
{
	if (q->th_idx)
		th_fix(q->r, q->th_idx - 1);
}

static void timer_del_locked(struct ureq *q)
{
	struct emu_ring *r = q->r;
	if (q->th_idx) {
		unsigned i = q->th_idx - 1;
		q->th_idx = 0;
		if (i != --r->th_n) {
			r->th[i] = r->th[r->th_n];
			r->th[i]->th_idx = i + 1;
			th_fix(r, i);
		}
	}
	if (q->target) {
		q->target = 0;
		if (q->tprev)
			q->tprev->tnext = q->tnext;
		else
			r->counted = q->tnext;
		if (q->tnext)
			q->tnext->tprev = q->tprev;
		else
			r->counted_tail = q->tprev;
		q->tnext = q->tprev = NULL;
	}
}

/* TIMEOUTs whose completion count has been reached complete with 0. */
int timeouts_count_locked(struct emu_ring *r, struct ureq **run)
{
	int n = 0;
	while (r->counted && r->ncompleted >= r->counted->target) {
		struct ureq *x = r->counted;
		timer_del_locked(x);
		r->cq_timeouts++;
		exec_complete_locked(x, 0, run);
		n++;
	}
	return n;
}

/* A LINK_TIMEOUT fired: cancel what it guards, then post its own CQE. */
static void fire_lt_locked(struct emu_ring *r, struct ureq *lt, struct ureq **run)
{
	struct ureq *t = lt->lt_target;
	int32_t res = -ETIME;
	lt->lt_target = NULL;
	if (t) {
		t->lt = NULL;
		int e = exec_cancel_locked(r, t, -ECANCELED, run);
		if (e)
			res = e;
	}
	/* the kernel never marks a link timeout failed: CQE_SKIP_SUCCESS silences it */
	if (!(lt->sqe.flags & IOSQE_CQE_SKIP_SUCCESS))
		emu_post(r, lt->sqe.user_data, res, 0, 1);
	r->ncompleted++;
	exec_put_locked(r, lt);
	exec_inflight_dec_locked(r, run);
}

/* Fire the timers whose deadline has passed; *next: the earliest left. */
static void expire_locked(struct emu_ring *r, uint64_t now, uint64_t *next, struct ureq **run)
{
	while (r->th_n && r->th[0]->deadline <= now) {
		struct ureq *x = r->th[0];
		timer_del_locked(x);
		if (x->sqe.opcode == IORING_OP_LINK_TIMEOUT)
			fire_lt_locked(r, x, run);
		else {
			r->cq_timeouts++;
			exec_complete_locked(x, -ETIME, run);
		}
	}
	*next = r->th_n ? r->th[0]->deadline : UINT64_MAX;
}

/* ---- one-shot waits: one epoll entry per fd ---- */

static void pw_link(struct pgroup *g, struct ureq *q)
{
	q->pg = g;
	q->pw_prev = NULL;
	q->pw_next = g->head;
	if (g->head)
		g->head->pw_prev = q;
	g->head = q;
}

static void pw_unlink(struct ureq *q)
{
	struct pgroup *g = q->pg;
	if (!g)
		return;
	if (q->pw_prev)
		q->pw_prev->pw_next = q->pw_next;
	else
		g->head = q->pw_next;
	if (q->pw_next)
		q->pw_next->pw_prev = q->pw_prev;
	q->pg = NULL;
	q->pw_next = q->pw_prev = NULL;
}

static struct pgroup *pgroup_get_locked(struct emu_ring *r, int fd)
{
	if ((unsigned)fd >= r->pgt_cap) {
		unsigned cap = r->pgt_cap ? r->pgt_cap : 64;
		while (cap <= (unsigned)fd)
			cap *= 2;
		struct pgroup **t = realloc(r->pgt, cap * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + r->pgt_cap, 0, (cap - r->pgt_cap) * sizeof(*t));
		r->pgt = t;
		r->pgt_cap = cap;
	}
	if (!r->pgt[fd])
		r->pgt[fd] = calloc(1, sizeof(struct pgroup));
	return r->pgt[fd];
}

/* The waiters of g but keep were armed on a file that fd no longer names (the
 * program closed it, maybe opened another under the number): they wait on
 * until cancelled, never woken by another file's events (the kernel's poll
 * keeps its file and stays armed on it). */
static void pg_orphan(struct pgroup *g, struct ureq *keep)
{
	for (struct ureq *x = g->head, *nx; x; x = nx) {
		nx = x->pw_next;
		if (x != keep)
			pw_unlink(x);
	}
	g->want = keep ? (uint16_t)keep->pevents : 0;
}

/* Arm fd's entry with g->want for g's waiters, keep the one arming now (or
 * NULL). EPOLL_CTL_MOD first: it finds the entry only while fd still names
 * the file it was added for; a number the program closed (the entry is gone)
 * or reused for another file gets a fresh entry, under a new generation (what
 * the old one may still report is stale). -errno: epoll cannot wait for fd
 * (EPERM: a regular file; EBADF: closed). */
static int pg_ctl(struct emu_ring *r, struct pgroup *g, int fd, struct ureq *keep)
{
	struct epoll_event ev = { .events = (uint32_t)g->want | EPOLLONESHOT };
	if (g->in_set) {
		ev.data.u64 = (uint64_t)g->gen << 32 | (uint32_t)fd;
		if (epoll_ctl(r->pp_fd, EPOLL_CTL_MOD, fd, &ev) == 0)
			return 0;
		if (errno != ENOENT)
			return -errno;
		g->in_set = 0;
		pg_orphan(g, keep);
		if (!g->head)
			return 0;
		ev.events = (uint32_t)g->want | EPOLLONESHOT;
	}
	g->gen++;
	ev.data.u64 = (uint64_t)g->gen << 32 | (uint32_t)fd;
	if (epoll_ctl(r->pp_fd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	g->in_set = 1;
	return 0;
}

/* epoll cannot wait for q's fd (a regular file or /dev/null: EPERM; closed:
 * EBADF): as poll() would, q fires at the next round with what poll() sees
 * now, or, when that is nothing, waits until cancelled. */
static void pw_fallback_locked(struct emu_ring *r, struct ureq *q)
{
	int32_t m = exec_poll_now(q->fd, q->pevents);
	if (m > 0) {
		q->revents = (short)m;
		pw_link(&r->pnow, q);
		reactor_kick(r);
	}
}

/* q waits for events on q->fd (state RS_POLL): a retry once the fd is ready,
 * or the POLL_ADD's CQE. */
int reactor_arm_locked(struct ureq *q, short events)
{
	struct emu_ring *r = q->r;
	int e = reactor_start_locked(r);
	if (e < 0)
		return e;
	struct pgroup *g = pgroup_get_locked(r, q->fd);
	if (!g)
		return -ENOMEM;
	q->state = RS_POLL;
	q->pevents = events;
	q->revents = 0;
	pw_link(g, q);
	g->want |= (uint16_t)events;
	e = pg_ctl(r, g, q->fd, q);
	if (e < 0) {
		pw_unlink(q);
		/* a POLL_ADD of a file that cannot be polled (EPERM: no poll method)
		 * with none of its events ready could never complete: the kernel's
		 * ring says -EINVAL */
		if (e == -EPERM && q->sqe.opcode == IORING_OP_POLL_ADD && exec_poll_now(q->fd, events) <= 0) {
			q->state = RS_RUN;
			return -EINVAL;
		}
		pw_fallback_locked(r, q);
	}
	return 0;
}

/* An armed one-shot poll's events changed (POLL_REMOVE with an update). */
void reactor_rearm_locked(struct ureq *q)
{
	pw_unlink(q);
	if (reactor_arm_locked(q, q->pevents) < 0) {
		q->state = RS_POLL;          /* still armed: a cancel or remove finds it */
		pw_fallback_locked(q->r, q);
	}
}

/* q stops waiting here (it is freed): out of its group, the timers, the multishot set. */
void reactor_forget_locked(struct ureq *q)
{
	pw_unlink(q);
	timer_del_locked(q);
	if (q->mshot)
		reactor_mshot_disarm_locked(q);
}

/* x's wait is over with mask: the POLL_ADD completes, anything else is retried. */
static void pw_fire_locked(struct ureq *x, int32_t mask, struct ureq **run, struct ureq **retry)
{
	pw_unlink(x);
	x->state = RS_RUN;
	if (x->sqe.opcode == IORING_OP_POLL_ADD) {
		exec_complete_locked(x, mask & (x->pevents | POLLERR | POLLHUP | POLLNVAL), run);
		return;
	}
	x->revents = (short)mask;
	x->qnext = *retry;
	*retry = x;
	if (x->fe.kind == FK_OTHER || x->fe.kind == FK_REG) {
		/* a regular file is always "ready": a misrouted request goes to a worker */
		exec_fcache_drop(x->r, x->sqe.fd);
	}
}

/* fd's entry fired with events: its waiters that wanted them go, the others
 * keep it armed with what they want (the cost is this fd's waiters, as a
 * wake-up of the file's wait queue in the kernel). */
static void pg_fire_locked(struct emu_ring *r, uint64_t cookie, uint32_t events, struct ureq **run,
			   struct ureq **retry)
{
	uint32_t fd = (uint32_t)cookie, gen = (uint32_t)(cookie >> 32);
	struct pgroup *g = fd < r->pgt_cap ? r->pgt[fd] : NULL;
	if (!g || g->gen != gen)
		return;                         /* an entry replaced since (see pg_ctl) */
	uint16_t want = 0;
	for (struct ureq *x = g->head, *nx; x; x = nx) {
		nx = x->pw_next;
		int32_t m = (int32_t)(events & ((uint16_t)x->pevents | POLLERR | POLLHUP));
		if (m)
			pw_fire_locked(x, m, run, retry);
		else
			want |= (uint16_t)x->pevents;
	}
	g->want = want;
	int e = g->head ? pg_ctl(r, g, (int)fd, NULL) : 0;
	if (e == -EBADF)
		pg_orphan(g, NULL);              /* fd was closed since they armed */
	while (e < 0 && g->head) {
		struct ureq *x = g->head;
		pw_unlink(x);
		pw_fallback_locked(r, x);
	}
}

/* ---- multishot poll ---- */

static uint64_t ms_cookie(struct emu_ring *r, uint32_t slot)
{
	return (uint64_t)r->ms[slot].gen << 32 | slot;
}

static int ms_ctl(struct emu_ring *r, int op, struct ureq *q)
{
	struct epoll_event ev = { .events = (uint32_t)(uint16_t)q->pevents | EPOLLET,
				  .data.u64 = ms_cookie(r, q->ms_slot) };
	return epoll_ctl(r->ep_fd, op, q->ms_fd, &ev) < 0 ? -errno : 0;
}

/* Arm q (POLL_ADD with IORING_POLL_ADD_MULTI, fd resolved, pevents set) in the
 * epoll set: state RS_POLL until a final CQE. Events already pending are
 * reported by the next harvest, as the kernel reports them at arming.
 * -EPERM: the file cannot be waited for (a regular file: always ready). */
int reactor_mshot_arm_locked(struct ureq *q)
{
	struct emu_ring *r = q->r;
	int e = reactor_start_locked(r);
	if (e < 0)
		return e;
	if (r->ep_fd < 0) {
		int fd = emu_fd_high(epoll_create1(EPOLL_CLOEXEC));
		if (fd < 0)
			return -errno;
		/* level-triggered in the reactor's set: readable while it holds events */
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = CK_MSHOT };
		if (epoll_ctl(r->pp_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			e = -errno;
			close(fd);
			return e;
		}
		r->ep_fd = fd;
	}
	if (!r->ms_free) {
		unsigned cap = r->ms_cap ? 2 * r->ms_cap : 64;
		struct msslot *ms = realloc(r->ms, cap * sizeof(*ms));
		if (!ms)
			return -ENOMEM;
		for (unsigned i = r->ms_cap; i < cap; i++)
			ms[i] = (struct msslot){ NULL, 0, i + 1 < cap ? i + 2 : 0 };
		r->ms = ms;
		r->ms_free = r->ms_cap + 1;
		r->ms_cap = cap;
	}
	uint32_t slot = r->ms_free - 1;
	q->ms_slot = slot;
	q->ms_fd = q->fd;
	q->ms_dup = 0;
	e = ms_ctl(r, EPOLL_CTL_ADD, q);
	if (e == -EEXIST) {
		/* this file is in the set already (another multishot poll): a dup is
		 * another entry of the set */
		q->ms_fd = emu_fd_high(fcntl(q->fd, F_DUPFD_CLOEXEC, 0));
		if (q->ms_fd < 0)
			return -errno;
		q->ms_dup = 1;
		if ((e = ms_ctl(r, EPOLL_CTL_ADD, q)) < 0) {
			close(q->ms_fd);
			q->ms_dup = 0;
		}
	}
	if (e < 0)
		return e;
	r->ms_free = r->ms[slot].next_free;
	r->ms[slot].q = q;
	q->mshot = 1;
	q->state = RS_POLL;
	__atomic_store_n(&r->ms_armed, r->ms_armed + 1, __ATOMIC_RELAXED);   /* read unlocked: api.c */
	return 0;
}

/* New events of an armed multishot poll (POLL_REMOVE with an update): the
 * kernel re-arms it, reporting what is pending at once (EPOLL_CTL_MOD does). */
int reactor_mshot_rearm_locked(struct ureq *q)
{
	return ms_ctl(q->r, EPOLL_CTL_MOD, q);
}

/* q leaves the set (its final CQE is posted or it is freed). */
void reactor_mshot_disarm_locked(struct ureq *q)
{
	struct emu_ring *r = q->r;
	if (!q->mshot)
		return;
	q->mshot = 0;
	__atomic_store_n(&r->ms_armed, r->ms_armed - 1, __ATOMIC_RELAXED);
	reactor_mshot_run_locked(q, 0);      /* its final CQE is posted */
	if (r->ep_fd >= 0)
		ms_ctl(r, EPOLL_CTL_DEL, q);    /* may fail: the program closed its fd */
	if (q->ms_dup)
		close(q->ms_fd);
	q->ms_dup = 0;
	struct msslot *m = &r->ms[q->ms_slot];
	m->q = NULL;
	m->gen++;                           /* events still queued for it are stale */
	m->next_free = r->ms_free;
	r->ms_free = q->ms_slot + 1;
}

/* q (a multishot ACCEPT/RECV) starts (on) or ends a run that posts CQEs:
 * counted in r->ms_running, whose return to 0 wakes the waiters of ms_cond. */
void reactor_mshot_run_locked(struct ureq *q, int on)
{
	struct emu_ring *r = q->r;
	if (q->ms_run == !!on)
		return;
	q->ms_run = !!on;
	if (on)
		r->ms_running++;
	else if (!--r->ms_running)
		pthread_cond_broadcast(&r->ms_cond);
}

/* Post a CQE (IORING_CQE_F_MORE) for each multishot poll the epoll set says
 * was woken. One that finds the CQ full ends instead, with a final CQE (no
 * F_MORE) that overflows, as the kernel (6.1 and later) does. A woken
 * multishot ACCEPT/RECV goes to *run (it accepts or receives until EAGAIN:
 * exec.c), or, running already, is told to look again (ms_again). */
void reactor_mshot_harvest_locked(struct emu_ring *r, struct ureq **run)
{
	struct epoll_event ev[64];
	int n;
	if (r->ep_fd < 0)
		return;
	do {
		n = epoll_wait(r->ep_fd, ev, 64, 0);
		for (int i = 0; i < n; i++) {
			uint32_t slot = (uint32_t)ev[i].data.u64, gen = (uint32_t)(ev[i].data.u64 >> 32);
			struct ureq *x = slot < r->ms_cap && r->ms[slot].gen == gen ? r->ms[slot].q : NULL;
			if (!x || !x->mshot)
				continue;
			if (x->sqe.opcode != IORING_OP_POLL_ADD) {
				if (x->state == RS_RUN) {
					x->ms_again = 1;
				} else if (x->state == RS_POLL) {
					x->state = RS_RUN;
					reactor_mshot_run_locked(x, 1);
					x->qnext = *run;
					*run = x;
				}
				continue;
			}
			if (x->state != RS_POLL)
				continue;
			int32_t mask = (int32_t)(ev[i].events & ((uint16_t)x->pevents | POLLERR | POLLHUP | POLLNVAL));
			if (!mask)
				continue;
			if (emu_cq_full_locked(r)) {
				x->state = RS_RUN;
				exec_complete_locked(x, mask, run);
				continue;
			}
			emu_post(r, x->sqe.user_data, mask, IORING_CQE_F_MORE, 1);
			r->ncompleted++;            /* a CQE: TIMEOUT counts it */
			if (r->counted)
				timeouts_count_locked(r, run);
		}
	} while (n == 64);
}

/* Wait for pp_fd's events until next (CLOCK_MONOTONIC ns, UINT64_MAX: no
 * limit). epoll_pwait2 keeps a timer's nanoseconds; where it is refused
 * (ENOSYS, a seccomp profile's EPERM) epoll_wait, rounded up to a millisecond. */
static int pp_wait(struct emu_ring *r, struct epoll_event *ev, uint64_t next)
{
	static _Atomic int no_pwait2;
	if (next == UINT64_MAX)
		return epoll_wait(r->pp_fd, ev, REACTOR_EVENTS, -1);
	uint64_t now = now_ns(), d = next > now ? next - now : 0;
	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		struct timespec ts = { (time_t)(d / 1000000000ull), (long)(d % 1000000000ull) };
		int n = epoll_pwait2(r->pp_fd, ev, REACTOR_EVENTS, &ts, NULL);
		if (n >= 0 || (errno != ENOSYS && errno != EPERM))
			return n;
		atomic_store_explicit(&no_pwait2, 1, memory_order_relaxed);
	}
	uint64_t ms = (d + 999999) / 1000000;
	return epoll_wait(r->pp_fd, ev, REACTOR_EVENTS, ms > INT_MAX ? INT_MAX : (int)ms);
}

static void *reactor_main(void *arg)
{
	emu_thread_running();
	struct emu_ring *r = arg;
	struct epoll_event ev[REACTOR_EVENTS];
	for (;;) {
		struct ureq *run = NULL, *retry = NULL;
		uint64_t next;
		pthread_mutex_lock(&r->lock);
		if (r->dying) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		expire_locked(r, now_ns(), &next, &run);
		while (r->pnow.head)
			pw_fire_locked(r->pnow.head, r->pnow.head->revents, &run, &retry);
		pthread_mutex_unlock(&r->lock);
		if (run || retry) {
			exec_issue_list(run, CTX_REACTOR);
			exec_issue_list(retry, CTX_REACTOR);
			continue;
		}
		int n = pp_wait(r, ev, next);
		if (n <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == CK_WAKE) {
				uint64_t v;
				ssize_t rd = read(r->wake_fd, &v, sizeof(v));
				(void)rd;
				break;
			}
		}
		pthread_mutex_lock(&r->lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == CK_MSHOT)
				reactor_mshot_harvest_locked(r, &run);
			else if (ev[i].data.u64 != CK_WAKE)
				pg_fire_locked(r, ev[i].data.u64, ev[i].events, &run, &retry);
		}
		pthread_mutex_unlock(&r->lock);
		exec_issue_list(run, CTX_REACTOR);
		exec_issue_list(retry, CTX_REACTOR);
	}
	emu_put(r);
	return NULL;
}

int reactor_start_locked(struct emu_ring *r)
{
	if (r->reactor_on)
		return 0;
	if (r->dying)
		return -ECANCELED;              /* torn down: no new thread */
	if (r->pp_fd < 0) {
		int fd = emu_fd_high(epoll_create1(EPOLL_CLOEXEC));
		if (fd < 0)
			return -errno;
		r->pp_fd = fd;
	}
	if (r->wake_fd < 0) {
		int fd = emu_fd_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
		if (fd < 0)
			return -errno;
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = CK_WAKE };
		if (epoll_ctl(r->pp_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			int e = -errno;
			close(fd);
			return e;
		}
		r->wake_fd = fd;
	}
	int e = emu_thread_start(r, &r->reactor, 0, 1, -1, reactor_main);
	if (e)
		return -e;
	r->reactor_on = 1;
	return 0;
}

void reactor_stop(struct emu_ring *r)
{
	pthread_mutex_lock(&r->lock);
	int on = r->reactor_on;
	r->reactor_on = 0;
	reactor_kick(r);
	pthread_mutex_unlock(&r->lock);
	if (on)
		pthread_join(r->reactor, NULL);
	pthread_mutex_lock(&r->lock);
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	r->wake_fd = -1;
	if (r->ep_fd >= 0)
		close(r->ep_fd);
	r->ep_fd = -1;
	if (r->pp_fd >= 0)
		close(r->pp_fd);
	r->pp_fd = -1;
	pthread_mutex_unlock(&r->lock);
}

/* The reactor's memory (emu_free: no thread uses the ring any more). */
void reactor_free(struct emu_ring *r)
{
	for (unsigned i = 0; i < r->pgt_cap; i++)
		free(r->pgt[i]);
	free(r->pgt);
	free(r->th);
	r->pgt = NULL;
	r->th = NULL;
	r->pgt_cap = r->th_cap = r->th_n = 0;
}

/* fork()'s child (exec_child_reset): the reactor thread and its epoll sets are
 * the parent's (closing the child's descriptors of them leaves the parent's
 * alone), and so are all waiters and timers; the next wait starts a reactor. */
void reactor_child_reset(struct emu_ring *r)
{
	r->reactor_on = 0;
	int *fds[] = { &r->wake_fd, &r->pp_fd, &r->ep_fd };
	for (unsigned i = 0; i < 3; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	for (unsigned i = 0; i < r->pgt_cap; i++)
		if (r->pgt[i])
			*r->pgt[i] = (struct pgroup){ 0 };
	r->pnow = (struct pgroup){ 0 };
	r->th_n = 0;
	r->counted = r->counted_tail = NULL;
	for (unsigned i = 0; i < r->ms_cap; i++)
		r->ms[i] = (struct msslot){ NULL, r->ms[i].gen + 1, i + 1 < r->ms_cap ? i + 2 : 0 };
	r->ms_free = r->ms_cap ? 1 : 0;
	r->ms_harvest = 0;
	/* the parent's multishots stay the parent's: none armed or running here */
	r->ms_armed = 0;
	r->ms_running = 0;
	pthread_cond_init(&r->ms_cond, NULL);
}
