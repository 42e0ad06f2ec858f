/* SPDX-License-Identifier: MIT */
/*
 * xproc.c - an emulated ring shared by the processes that fork()ed with it,
 * as a kernel ring is (its SQ/CQ memory is a MAP_SHARED mapping of the ring
 * file): parent and child see the same SQ and CQ, either submits and reaps.
 *
 * What is shared: the ring memory (SQ and CQ rings, SQE array: MAP_SHARED from
 * setup on, emu.c), the eventfd behind the ring fd (fork() shares the file),
 * and, from the first fork() on, struct xshared (MAP_SHARED, xshared.h): the
 * lock words of the SQ (one submitter at a time, across processes) and of CQ
 * posting, whether the eventfd holds a count, and one slot per process that
 * used the ring since (its pid and mailbox).
 * What is not: requests and their executor. Each process runs the requests it
 * submitted, with its own workers and reactor (fds, memory and credentials are
 * the submitter's, as the kernel resolves them in the submitting task); a
 * forked child forgets the parent's (exec_child_reset) and starts its own on
 * its first submission (xproc_join). A process that is not in the library
 * (waitpid, sleep) still gets its requests done: its threads run them.
 * Across processes: ASYNC_CANCEL and IORING_REGISTER_SYNC_CANCEL that find
 * nothing here (or, ALL/ANY, in addition) ask each other process through its
 * mailbox; a listener thread per process (futex-woken) cancels there and
 * answers. A process leaving the ring (exit(), or closing it) cancels its own
 * requests (-ECANCELED CQEs, as the kernel cancels a task's requests when it
 * exits) and hands its TIMEOUTs over to a process that stays.
 *
 * Must never: keep in the shared page anything this process trusts that
 * another process can write: no pointer, list link, libc lock or state
 * (a forked child, maybe of another uid since, writes it at will); take a
 * shared lock outside the ring lock's order (r->sq_lock -> sq; r->lock -> cq);
 * wait for another process while holding the CQ lock; or wait for another
 * process longer than XP_BOUND_MS: a dead holder of a lock is seen gone and
 * taken over, a live one that keeps it (or a mailbox that is not answered)
 * fails the operation instead (docs/DROPIN.md, Sharing across fork).
 * What is read from the page is a value checked before it is used: a lock
 * word names a thread only to ask whether it lives, a pid is in range before
 * kill(pid, 0), a slot index is ours, a message is copied, then checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "uring_int.h"
#include "xshared.h"

#define XP_LOOK_MS 50               /* a waiter looks whether the holder lives this often */
#define XP_ID_MAX 4194304u          /* PID_MAX_LIMIT: a larger lock word or pid is a scribble */

/* This process's own view of a shared ring (private memory: nothing here is
 * another's to write). */
struct xpriv {
	int self;                   /* getpid() */
	_Atomic uint32_t stuck_sq, stuck_cq;  /* a holder that outlasted a wait: not waited for again */
	_Atomic int deaf[XP_SLOTS]; /* a pid that let a message go unanswered: not asked again */
};

static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;   /* the list of rings */
static struct emu_ring *grings;
static __thread uint32_t tls_tid;   /* this thread's id (reset in a fork's child) */

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

static uint32_t self_tid(void)
{
	if (!tls_tid)
		tls_tid = (uint32_t)syscall(SYS_gettid);
	return tls_tid;
}

static uint64_t xp_deadline(void)
{
	return now_ns() + XP_BOUND_MS * 1000000ull;
}

/* Sleep on w while it holds val, until `until` at the latest. */
static void xp_sleep(_Atomic uint32_t *w, uint32_t val, uint64_t until)
{
	uint64_t now = now_ns();
	if (now >= until)
		return;
	uint64_t d = until - now;
	struct timespec ts = { (time_t)(d / 1000000000ull), (long)(d % 1000000000ull) };
	futex(w, FUTEX_WAIT, val, &ts);
}

/*
 * 0 if the thread or process id is gone (no such id, or a zombie), 1 if it
 * lives or that cannot be told. id comes from the shared page: out of range
 * is no process (kill() would take 0 and -1 for groups). Another user's
 * process answers EPERM: alive.
 */
static int id_alive(uint32_t id)
{
	if (id == 0 || id > XP_ID_MAX)
		return 0;
	if (kill((pid_t)id, 0) < 0 && errno == ESRCH)
		return 0;
	char path[40], buf[256];
	snprintf(path, sizeof path, "/proc/%u/stat", id);
	int f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return errno != ENOENT;
	ssize_t n = read(f, buf, sizeof buf - 1);
	close(f);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');      /* "pid (comm) S ...": comm may hold ')' */
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/*
 * Take lock word w for this thread: 0, or -ETIMEDOUT when a live holder keeps
 * it until end (it is then remembered in *stuck, if given, and not waited for
 * again while it holds). Whether the holder lives is looked at every
 * XP_LOOK_MS of waiting (at once for a remembered one). A holder that is gone,
 * a word that names no thread (past PID_MAX_LIMIT) or this thread (no lock
 * here is taken twice: a scribble), is taken over: what a lock guards is
 * consistent at every step (a counter or an index written once).
 */
static int xlock(_Atomic uint32_t *w, _Atomic uint32_t *stuck, uint64_t end)
{
	uint32_t me = self_tid(), cur = 0;
	uint64_t look = 0;
	if (atomic_compare_exchange_strong(w, &cur, me))
		return 0;
	for (;;) {
		uint32_t holder = cur & ~XL_WAITERS;
		int known = stuck && holder && atomic_load(stuck) == holder;
		uint64_t now = now_ns();
		if (!look)
			look = now + XP_LOOK_MS * 1000000ull;
		if (!holder || holder == me || holder > XP_ID_MAX ||
		    ((known || now >= look) && !id_alive(holder))) {
			if (atomic_compare_exchange_strong(w, &cur, me | XL_WAITERS))
				break;
			continue;
		}
		if (known || now >= end) {
			if (stuck)
				atomic_store(stuck, holder);
			return -ETIMEDOUT;
		}
		if (now >= look)
			look = now + XP_LOOK_MS * 1000000ull;
		if (!(cur & XL_WAITERS) && !atomic_compare_exchange_strong(w, &cur, cur | XL_WAITERS))
			continue;
		xp_sleep(w, cur | XL_WAITERS, look < end ? look : end);
		cur = atomic_load(w);
	}
	if (stuck)
		atomic_store(stuck, 0);
	return 0;
}

/* Let w go if this thread still holds it (another process may have taken it
 * over, or written it: then it is not ours to clear). */
static void xunlock(_Atomic uint32_t *w)
{
	uint32_t me = self_tid(), cur = atomic_load(w);
	while ((cur & ~XL_WAITERS) == me)
		if (atomic_compare_exchange_weak(w, &cur, 0)) {
			if (cur & XL_WAITERS)
				futex(w, FUTEX_WAKE, 1, NULL);
			return;
		}
}

/* The shared SQ lock: -EAGAIN when another process keeps it (io_uring_enter's answer). */
int xproc_sq_lock(struct emu_ring *r)
{
	return xlock(&r->xs->sq, &r->xp->stuck_sq, xp_deadline()) < 0 ? -EAGAIN : 0;
}

void xproc_sq_unlock(struct emu_ring *r)
{
	xunlock(&r->xs->sq);
}

/* The shared CQ lock: -EBUSY when another process keeps it (the CQE waits in
 * the overflow list; a wait answers -EBUSY, as the kernel's when it cannot
 * flush its overflow). */
int xproc_cq_lock(struct emu_ring *r)
{
	return xlock(&r->xs->cq, &r->xp->stuck_cq, xp_deadline()) < 0 ? -EBUSY : 0;
}

void xproc_cq_unlock(struct emu_ring *r)
{
	xunlock(&r->xs->cq);
}

/* ---- the process's listener: answers the other processes' messages ---- */

/* Run message m (a copy: the slot may change under it), checked as an SQE is. */
static int32_t answer(struct emu_ring *r, const struct xmsg *m)
{
	switch (m->type) {
	case XM_CANCEL:
		if (m->fl & ~(IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY |
			      IORING_ASYNC_CANCEL_FD_FIXED))
			return -EINVAL;
		return exec_cancel_here(r, m->fl, m->ud, m->fd);
	case XM_TIMEOUT:
		if ((m->fl & ~(IORING_TIMEOUT_ABS | IORING_TIMEOUT_BOOTTIME | IORING_TIMEOUT_REALTIME |
			       IORING_TIMEOUT_ETIME_SUCCESS)) ||
		    ((m->fl & IORING_TIMEOUT_BOOTTIME) && (m->fl & IORING_TIMEOUT_REALTIME)))
			return -EINVAL;
		if (__atomic_load_n(&r->inflight, __ATOMIC_RELAXED) >= XP_ADOPT_MAX)
			return -EBUSY;                /* the leaving process cancels it */
		return exec_adopt_timeout(r, m->ud, m->deadline, m->fl, m->left);
	case XM_FLUSH:
		emu_flush_overflow(r);
		return 0;
	}
	return -EINVAL;
}

static void *listener(void *arg)
{
	emu_thread_running();
	struct emu_ring *r = arg;
	struct xslot *s = &r->xs->slot[r->xslot];
	atomic_store(&s->pid, r->xp->self);
	for (;;) {
		uint32_t seq = atomic_load(&s->req);
		if (__atomic_load_n(&r->xl_stop, __ATOMIC_ACQUIRE))
			break;
		if (seq == atomic_load(&s->ack)) {
			futex(&s->req, FUTEX_WAIT, seq, NULL);
			continue;
		}
		struct xmsg m;
		memcpy(&m, &s->msg, sizeof m);
		atomic_signal_fence(memory_order_seq_cst);   /* m is read once, here */
		s->msg.res = answer(r, &m);
		atomic_store(&s->ack, seq);
		futex(&s->ack, FUTEX_WAKE, INT32_MAX, NULL);
	}
	emu_put(r);
	return NULL;
}

static int listener_start(struct emu_ring *r)
{
	r->xl_stop = 0;
	int e = emu_thread_start(r, &r->xlistener, 0, 1, -1, listener);
	if (!e)
		r->xl_on = 1;
	return -e;
}

/* 1: pid (read from slot i) is another process that lives; 0: it is not (a
 * dead one's slot is freed). */
static int peer_alive(struct emu_ring *r, int i, int pid)
{
	if (pid <= 0 || pid == r->xp->self)
		return 0;                       /* free, starting, or a scribble naming us */
	if (id_alive((uint32_t)pid))
		return 1;
	atomic_compare_exchange_strong(&r->xs->slot[i].pid, &pid, 0);
	return 0;
}

/* Take a slot for this process (pid -1 until its listener runs: senders wait):
 * a free one, else one whose process is gone. */
static int claim_slot(struct emu_ring *r)
{
	struct xshared *xs = r->xs;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < XP_SLOTS; i++) {
			int z = atomic_load(&xs->slot[i].pid);
			if (z != 0 && (pass == 0 || z == -1 || peer_alive(r, i, z)))
				continue;
			if (!atomic_compare_exchange_strong(&xs->slot[i].pid, &z, -1))
				continue;
			struct xslot *s = &xs->slot[i];
			atomic_store(&s->ack, atomic_load(&s->req));
			atomic_store(&r->xp->deaf[i], 0);
			r->xslot = i;
			return 0;
		}
	return -EBUSY;                      /* XP_SLOTS processes use it already */
}

static int start_slot(struct emu_ring *r)
{
	int e = listener_start(r);
	if (e < 0) {
		atomic_store(&r->xs->slot[r->xslot].pid, 0);
		r->xslot = -1;
	}
	return e;
}

/* Take a slot for this process and start its listener (r->sq_lock held). */
static int join_locked(struct emu_ring *r)
{
	int e = claim_slot(r);
	return e < 0 ? e : start_slot(r);
}

int xproc_join(struct emu_ring *r)
{
	pthread_mutex_lock(&r->sq_lock);
	int e = r->xslot < 0 ? join_locked(r) : 0;
	pthread_mutex_unlock(&r->sq_lock);
	return e;
}

/*
 * Send m to slot i and wait for the answer, until end at the latest: -ESRCH
 * if no process that lives listens there, or it does not answer in time (it
 * is then deaf to this process: not asked again while that pid holds the
 * slot).
 */
static int32_t send_msg(struct emu_ring *r, int i, const struct xmsg *m, uint64_t end)
{
	struct xslot *s = &r->xs->slot[i];
	int pid;
	/* -1: a process took it and is starting its listener (a parent in fork()) */
	while ((pid = atomic_load(&s->pid)) == -1 && now_ns() < end)
		xp_sleep(&s->req, atomic_load(&s->req), now_ns() + 1000000);
	if (!peer_alive(r, i, pid) || atomic_load(&r->xp->deaf[i]) == pid)
		return -ESRCH;
	if (xlock(&s->mbox, NULL, end) < 0)
		goto deaf;
	if (atomic_load(&s->pid) != pid) {
		xunlock(&s->mbox);                  /* it left meanwhile */
		return -ESRCH;
	}
	s->msg = *m;
	uint32_t seq = atomic_load(&s->req) + 1;
	atomic_store(&s->req, seq);
	futex(&s->req, FUTEX_WAKE, 1, NULL);
	int32_t res = -ESRCH;
	for (;;) {
		uint32_t a = atomic_load(&s->ack);
		if (a == seq) {
			res = s->msg.res;
			break;
		}
		uint64_t now = now_ns(), look = now + XP_LOOK_MS * 1000000ull;
		if (now >= end) {
			xunlock(&s->mbox);
			goto deaf;
		}
		xp_sleep(&s->ack, a, look < end ? look : end);
		if (atomic_load(&s->ack) != seq && (atomic_load(&s->pid) != pid || !peer_alive(r, i, pid)))
			break;                    /* it died or left without answering */
	}
	xunlock(&s->mbox);
	return res;
deaf:
	atomic_store(&r->xp->deaf[i], pid);
	return -ESRCH;
}

int32_t xproc_cancel(struct emu_ring *r, unsigned fl, uint64_t ud, int fd, int all)
{
	struct xmsg m = { .type = XM_CANCEL, .fl = fl, .fd = fd, .ud = ud };
	int32_t res = -ENOENT;
	uint64_t end = xp_deadline();
	for (int i = 0; i < XP_SLOTS; i++) {
		if (i == r->xslot)
			continue;
		int32_t e = send_msg(r, i, &m, end);
		if (e == -ESRCH || e == -ENOENT)
			continue;
		if (!all)
			return e;
		if (e < 0)
			continue;                /* no count: another process's nonsense */
		res = res == -ENOENT ? e : res + e;
	}
	return res;
}

/* 1 if another process uses the ring (took a slot since the fork and lives). */
int xproc_others(struct emu_ring *r)
{
	for (int i = 0; i < XP_SLOTS; i++) {
		int pid = atomic_load(&r->xs->slot[i].pid);
		if (i != r->xslot && (pid == -1 || peer_alive(r, i, pid)))
			return 1;
	}
	return 0;
}

/* The CQEs waiting in all processes' overflow lists, after adding delta (a
 * count another process may have written: used as a hint, never as a size). */
int xproc_ovf_count(struct emu_ring *r, int delta)
{
	return (int)((unsigned)atomic_fetch_add(&r->xs->novf, delta) + (unsigned)delta);
}

/* Each other process moves its overflowed CQEs into the CQ (room allowing). */
void xproc_flush_others(struct emu_ring *r)
{
	struct xmsg m = { .type = XM_FLUSH };
	uint64_t end = xp_deadline();
	for (int i = 0; i < XP_SLOTS; i++)
		if (i != r->xslot)
			send_msg(r, i, &m, end);
}

/* Hand TIMEOUT q over to a process that stays: 0 if one took it. */
int xproc_handover_timeout(struct emu_ring *r, const struct ureq *q, uint64_t left)
{
	struct xmsg m = { .type = XM_TIMEOUT, .fl = q->sqe.timeout_flags, .ud = q->sqe.user_data,
			  .deadline = q->deadline, .left = left };
	uint64_t end = xp_deadline();
	for (int i = 0; i < XP_SLOTS; i++)
		if (i != r->xslot && send_msg(r, i, &m, end) == 0)
			return 0;
	return -ESRCH;
}

/* Stop this process's listener and free its slot (the ring lock not held). A
 * sender's message is answered first, unless the mailbox lock is kept. */
static void listener_stop(struct emu_ring *r)
{
	struct xslot *s = &r->xs->slot[r->xslot];
	if (!r->xl_on) {
		atomic_store(&s->pid, 0);
		r->xslot = -1;
		return;
	}
	int held = xlock(&s->mbox, NULL, xp_deadline()) == 0;
	__atomic_store_n(&r->xl_stop, 1, __ATOMIC_RELEASE);
	/* FUTEX_WAIT compares req: bumped, a listener about to sleep does not;
	 * woken again until it ends (another process may set req back) */
	for (;;) {
		atomic_fetch_add(&s->req, 1);
		futex(&s->req, FUTEX_WAKE, INT32_MAX, NULL);
		struct timespec ts = realtime_in_ms(10);
		if (pthread_timedjoin_np(r->xlistener, NULL, &ts) == 0)
			break;
	}
	r->xl_on = 0;
	atomic_store(&s->ack, atomic_load(&s->req));
	if (held)
		xunlock(&s->mbox);
	atomic_store(&s->pid, 0);
	r->xslot = -1;
}

/*
 * This process leaves the shared ring (exit(), it closes the ring, or, without
 * handover, it execs): its requests are cancelled or handed over
 * (exec_leave_locked) and nothing of it posts again. r->sq_lock stays held: no
 * thread of this process submits (or holds the shared SQ lock when the process
 * ends).
 */
void xproc_leave(struct emu_ring *r, int handover)
{
	pthread_mutex_lock(&r->sq_lock);
	if (r->xslot < 0 || r->dying) {
		pthread_mutex_lock(&r->lock);
		r->dying = 1;                /* not joined: nothing of its own in flight */
		pthread_mutex_unlock(&r->lock);
		return;
	}
	listener_stop(r);                    /* our slot is free: handover goes to others */
	pthread_mutex_lock(&r->lock);
	exec_leave_locked(r, handover);
	pthread_mutex_unlock(&r->lock);
}

void xproc_free(struct emu_ring *r)
{
	if (r->xs)
		munmap(r->xs, sizeof(struct xshared));
	free(r->xp);
	r->xs = NULL;
	r->xp = NULL;
}

/* ---- fork() ---- */

static void fork_prepare(void)
{
	pthread_mutex_lock(&glock);
	for (struct emu_ring *r = grings; r; r = r->gnext) {
		pthread_mutex_lock(&r->sq_lock);
		pthread_mutex_lock(&r->lock);
		if (r->dying)
			continue;
		if (r->xs) {
			if (r->xslot < 0)
				claim_slot(r);           /* listens from this fork on */
			continue;
		}
		struct xshared *xs = mmap(NULL, sizeof(*xs), PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		struct xpriv *xp = xs == MAP_FAILED ? NULL : calloc(1, sizeof(*xp));
		if (!xp) {
			if (xs != MAP_FAILED)
				munmap(xs, sizeof(*xs));
			continue;            /* the child cannot use it: see fork_child */
		}
		/* zero-filled: every lock free, every slot free */
		xp->self = getpid();
		r->xp = xp;
		xs->rfd_signalled = r->rfd_own;
		r->rfd_signalled = &xs->rfd_signalled;
		r->xs = xs;
		/* the parent's slot is taken before the child runs: a child's first
		 * cancel waits for the parent's listener instead of missing it */
		claim_slot(r);
	}
	emu_threads_settle();        /* none of ours starts inside an allocator the child inherits */
}

static void fork_parent(void)
{
	for (struct emu_ring *r = grings; r; r = r->gnext) {
		pthread_mutex_unlock(&r->lock);
		if (r->xs && r->xslot >= 0 && !r->dying && !r->xl_on)
			start_slot(r);           /* the parent listens from the first fork on */
		if (r->sqp_on)
			pthread_cond_signal(&r->sqp_cond);   /* it sleeps timed from now on */
		pthread_mutex_unlock(&r->sq_lock);
	}
	pthread_mutex_unlock(&glock);
}

static void fork_child(void)
{
	for (struct emu_ring *r = grings; r; r = r->gnext) {
		pthread_mutex_init(&r->lock, NULL);
		pthread_mutex_init(&r->sq_lock, NULL);
		pthread_cond_init(&r->wq_cond, NULL);
		pthread_cond_init(&r->sqp_cond, NULL);
		pthread_cond_init(&r->sqspace_cond, NULL);
		r->xslot = -1;
		r->xl_on = 0;
		if (r->xp) {                     /* what the parent saw is not the child's */
			memset(r->xp, 0, sizeof(*r->xp));
			r->xp->self = getpid();
		}
		if (r->dying)
			continue;
		exec_child_reset(r);
		if (!r->xs)
			r->disabled = 1;         /* no shared part (mmap failed): -EBADFD */
	}
	pthread_mutex_init(&glock, NULL);
	tls_tid = 0;
	exec_forked();
	emu_threads_forked();
}

static void atfork_once(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void xproc_track(struct emu_ring *r)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, atfork_once);
	pthread_mutex_lock(&glock);
	r->gprev = NULL;
	r->gnext = grings;
	if (grings)
		grings->gprev = r;
	grings = r;
	pthread_mutex_unlock(&glock);
}

void xproc_untrack(struct emu_ring *r)
{
	pthread_mutex_lock(&glock);
	if (r->gprev)
		r->gprev->gnext = r->gnext;
	else if (grings == r)
		grings = r->gnext;
	if (r->gnext)
		r->gnext->gprev = r->gprev;
	r->gnext = r->gprev = NULL;
	pthread_mutex_unlock(&glock);
}

/* exit(): the process leaves every shared ring it used (the ring itself
 * lives on in the others; this process's copy is left to the exit). */
static void leave_all(int handover)
{
	pthread_mutex_lock(&glock);
	for (struct emu_ring *r = grings; r; r = r->gnext)
		if (r->xs && r->xslot >= 0)
			xproc_leave(r, handover);
	pthread_mutex_unlock(&glock);
}

__attribute__((destructor)) static void xproc_exit(void)
{
	leave_all(1);
}

/* execve() is about to replace this process (the system-call front's
 * wrappers call it; never in a vfork()ed child, which shares the parent's
 * memory): every request it submitted to a shared ring is cancelled, its
 * TIMEOUTs too, as the kernel cancels a task's requests at exec. An exec
 * that then fails has lost them (the kernel cancels past the point of no
 * return, which a library cannot see). */
void xproc_exec(void)
{
	leave_all(0);
}
