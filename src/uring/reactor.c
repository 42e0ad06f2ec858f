/*
 * reactor.c - the emulated ring's waiting thread: one per ring, started on
 * first need, asleep in ppoll() otherwise. It waits for readiness (POLL_ADD,
 * and reads/writes/sends/receives/accepts on sockets and pipes that said
 * EAGAIN: the kernel's FAST_POLL) and for time (TIMEOUT, LINK_TIMEOUT). A request waiting here can be
 * cancelled at once, which is why nothing that merely waits blocks a worker.
 *
 * Must never: act on a request whose state or arming generation changed
 * since the poll set was built (it may have been cancelled and reused), or on
 * an epoll event whose slot generation is not the slot's own, call
 * an operation that can block (only the non-blocking retry runs here), or
 * hold the ring lock in ppoll.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "uring_int.h"

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

void reactor_arm_locked(struct ureq *q, short events)
{
	struct emu_ring *r = q->r;
	q->state = RS_POLL;
	q->pevents = events;
	q->revents = 0;
	q->pgen = ++r->pgen;
	reactor_start_locked(r);
	reactor_kick(r);
}

/* TIMEOUTs whose completion count has been reached complete with 0. */
int timeouts_count_locked(struct emu_ring *r, struct ureq **run)
{
	int n = 0;
	for (int again = 1; again;) {
		again = 0;
		for (struct ureq *x = r->live; x; x = x->next) {
			if (x->state == RS_TIMEOUT && x->sqe.opcode == IORING_OP_TIMEOUT && x->target &&
			    r->ncompleted >= x->target) {
				r->ncount--;
				x->target = 0;
				exec_complete_locked(x, 0, run);
				n++;
				again = 1;
				break;
			}
		}
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

static void expire_locked(struct emu_ring *r, uint64_t now, uint64_t *next, struct ureq **run)
{
	for (int again = 1; again;) {
		again = 0;
		for (struct ureq *x = r->live; x; x = x->next) {
			if (x->state != RS_TIMEOUT)
				continue;
			if (x->deadline > now) {
				if (x->deadline < *next)
					*next = x->deadline;
				continue;
			}
			if (x->sqe.opcode == IORING_OP_LINK_TIMEOUT) {
				fire_lt_locked(r, x, run);
			} else {
				if (x->target)
					r->ncount--;
				x->target = 0;
				exec_complete_locked(x, -ETIME, run);
			}
			again = 1;
			break;
		}
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
	int e, fresh = r->ep_fd < 0;
	if (fresh) {
		r->ep_fd = emu_fd_high(epoll_create1(EPOLL_CLOEXEC));
		if (r->ep_fd < 0)
			return -errno;
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
	q->pgen = ++r->pgen;
	if ((e = reactor_start_locked(r)) < 0) {
		reactor_mshot_disarm_locked(q);
		return e;
	}
	if (fresh)
		reactor_kick(r);             /* the epoll fd joins its poll set */
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

/* Post a CQE (IORING_CQE_F_MORE) for each multishot poll the epoll set says
 * was woken. One that finds the CQ full ends instead, with a final CQE (no
 * F_MORE) that overflows, as the kernel (6.1 and later) does. */
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
			if (!x || x->state != RS_POLL || !x->mshot)
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
			if (r->ncount)
				timeouts_count_locked(r, run);
		}
	} while (n == 64);
}

struct pset {
	struct pollfd *pf;
	struct ureq **rq;
	uint32_t *gen;
	size_t cap;
};

static int pset_grow(struct pset *p, size_t n)
{
	if (n <= p->cap)
		return 0;
	size_t c = p->cap ? p->cap * 2 : 64;
	while (c < n)
		c *= 2;
	struct pollfd *pf = realloc(p->pf, c * sizeof(*pf));
	if (pf)
		p->pf = pf;
	struct ureq **rq = realloc(p->rq, c * sizeof(*rq));
	if (rq)
		p->rq = rq;
	uint32_t *g = realloc(p->gen, c * sizeof(*g));
	if (g)
		p->gen = g;
	if (!pf || !rq || !g)
		return -ENOMEM;
	p->cap = c;
	return 0;
}

static void *reactor_main(void *arg)
{
	struct emu_ring *r = arg;
	struct pset ps = { 0 };
	for (;;) {
		struct ureq *run = NULL;
		uint64_t next = UINT64_MAX;
		size_t n = 0;
		pthread_mutex_lock(&r->lock);
		if (r->dying) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		expire_locked(r, now_ns(), &next, &run);
		if (run) {
			pthread_mutex_unlock(&r->lock);
			exec_issue_list(run, CTX_REACTOR);
			continue;
		}
		size_t want = 3;
		for (struct ureq *x = r->live; x; x = x->next)
			want += x->state == RS_POLL && !x->mshot;
		if (pset_grow(&ps, want) < 0) {
			pthread_mutex_unlock(&r->lock);
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);           /* out of memory: try again shortly */
			continue;
		}
		ps.pf[n++] = (struct pollfd){ r->wake_fd, POLLIN, 0 };
		if (r->ep_fd >= 0) {
			ps.pf[n] = (struct pollfd){ r->ep_fd, POLLIN, 0 };
			ps.rq[n++] = NULL;
		}
		for (struct ureq *x = r->live; x; x = x->next) {
			if (x->state != RS_POLL || x->mshot)
				continue;
			ps.pf[n] = (struct pollfd){ x->fd, x->pevents, 0 };
			ps.rq[n] = x;
			ps.gen[n] = x->pgen;
			n++;
		}
		pthread_mutex_unlock(&r->lock);

		struct timespec ts, *tsp = NULL;
		if (next != UINT64_MAX) {
			uint64_t now = now_ns(), d = next > now ? next - now : 0;
			ts.tv_sec = (time_t)(d / 1000000000ull);
			ts.tv_nsec = (long)(d % 1000000000ull);
			tsp = &ts;
		}
		int pr = ppoll(ps.pf, (nfds_t)n, tsp, NULL);
		if (pr <= 0)
			continue;
		uint64_t v;
		if (ps.pf[0].revents) {
			ssize_t rd = read(r->wake_fd, &v, sizeof(v));
			(void)rd;
		}
		struct ureq *retry = NULL;
		pthread_mutex_lock(&r->lock);
		for (size_t i = 1; i < n; i++) {
			if (!ps.pf[i].revents)
				continue;
			struct ureq *x = ps.rq[i];
			if (!x) {
				reactor_mshot_harvest_locked(r, &run);
				continue;
			}
			if (x->state != RS_POLL || x->pgen != ps.gen[i])
				continue;           /* cancelled, re-armed or reused meanwhile */
			short rev = ps.pf[i].revents;
			if (x->sqe.opcode == IORING_OP_POLL_ADD) {
				x->state = RS_RUN;
				exec_complete_locked(x, rev & (x->pevents | POLLERR | POLLHUP | POLLNVAL), &run);
				continue;
			}
			x->state = RS_RUN;
			x->revents = rev;
			x->qnext = retry;
			retry = x;
			if (x->fe.kind == FK_OTHER || x->fe.kind == FK_REG) {
				/* a regular file is always "ready": a misrouted request goes to a worker */
				exec_fcache_drop(r, x->sqe.fd);
			}
		}
		pthread_mutex_unlock(&r->lock);
		exec_issue_list(run, CTX_REACTOR);
		exec_issue_list(retry, CTX_REACTOR);
	}
	free(ps.pf);
	free(ps.rq);
	free(ps.gen);
	emu_put(r);
	return NULL;
}

int reactor_start_locked(struct emu_ring *r)
{
	if (r->reactor_on)
		return 0;
	if (r->wake_fd < 0) {
		r->wake_fd = emu_fd_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
		if (r->wake_fd < 0)
			return -errno;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_fetch_add(&r->refs, 1);
	int e = pthread_create(&r->reactor, NULL, reactor_main, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		atomic_fetch_sub(&r->refs, 1);
		return -e;
	}
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
	if (r->wake_fd >= 0)
		close(r->wake_fd);
	r->wake_fd = -1;
	pthread_mutex_lock(&r->lock);
	if (r->ep_fd >= 0)
		close(r->ep_fd);
	r->ep_fd = -1;
	pthread_mutex_unlock(&r->lock);
}
