/*
 * xproc.c - an emulated ring shared by the processes that fork()ed with it,
 * as a kernel ring is (its SQ/CQ memory is a MAP_SHARED mapping of the ring
 * file): parent and child see the same SQ and CQ, either submits and reaps.
 *
 * What is shared: the ring memory (SQ and CQ rings, SQE array: MAP_SHARED from
 * setup on, emu.c), the eventfd behind the ring fd (fork() shares the file),
 * and, from the first fork() on, struct xshared (MAP_SHARED): the
 * process-shared locks of the SQ (one submitter at a time, across processes)
 * and of CQ posting, whether the eventfd holds a count, and one slot per
 * process that used the ring since (its mailbox).
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
 * Must never: take a process-shared lock outside the ring lock's order
 * (r->sq_lock -> sq; r->lock -> cq), wait for another process while holding
 * the CQ lock, or let a dead process's lock or mailbox hang the others
 * (robust mutexes; a listener holds its slot's `alive` lock for life).
 */
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "uring_int.h"

#define XP_SLOTS 64                 /* processes that use one ring at once */

enum { XM_CANCEL = 1, XM_TIMEOUT, XM_FLUSH };

struct xmsg {
	int type;
	unsigned fl;                /* XM_CANCEL: cancel flags; XM_TIMEOUT: timeout flags */
	int fd;
	uint64_t ud;
	uint64_t deadline, left;    /* XM_TIMEOUT */
	int32_t res;                /* the answer */
};

struct xslot {
	_Atomic int pid;            /* 0 free, -1 being set up, else the process */
	_Atomic uint32_t req, ack;  /* futex words: a message is waiting while req != ack */
	pthread_mutex_t alive;      /* held by the process's listener while it lives */
	pthread_mutex_t mbox;       /* one sender at a time */
	struct xmsg msg;
};

struct xshared {
	pthread_mutex_t sq, cq;     /* robust, process-shared */
	int rfd_signalled;
	_Atomic int novf;           /* CQEs in the processes' overflow lists */
	struct xslot slot[XP_SLOTS];
};

static pthread_mutex_t glock = PTHREAD_MUTEX_INITIALIZER;   /* the list of rings */
static struct emu_ring *grings;

static long futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op, val, ts, NULL, 0);
}

static void shared_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

/* A holder that died left the data it guarded as it was: each use of these
 * locks leaves it consistent at every step (a counter or index written once). */
static void rlock(pthread_mutex_t *m)
{
	if (pthread_mutex_lock(m) == EOWNERDEAD)
		pthread_mutex_consistent(m);
}

void xproc_sq_lock(struct emu_ring *r)
{
	rlock(&r->xs->sq);
}

void xproc_sq_unlock(struct emu_ring *r)
{
	pthread_mutex_unlock(&r->xs->sq);
}

void xproc_cq_lock(struct emu_ring *r)
{
	rlock(&r->xs->cq);
}

void xproc_cq_unlock(struct emu_ring *r)
{
	pthread_mutex_unlock(&r->xs->cq);
}

/* ---- the process's listener: answers the other processes' messages ---- */

static void *listener(void *arg)
{
	emu_thread_running();
	struct emu_ring *r = arg;
	struct xslot *s = &r->xs->slot[r->xslot];
	rlock(&s->alive);
	atomic_store(&s->pid, getpid());
	for (;;) {
		uint32_t seq = atomic_load(&s->req);
		if (__atomic_load_n(&r->xl_stop, __ATOMIC_ACQUIRE))
			break;
		if (seq == atomic_load(&s->ack)) {
			futex(&s->req, FUTEX_WAIT, seq, NULL);
			continue;
		}
		struct xmsg *m = &s->msg;
		if (m->type == XM_CANCEL)
			m->res = exec_cancel_here(r, m->fl, m->ud, m->fd);
		else if (m->type == XM_TIMEOUT)
			m->res = exec_adopt_timeout(r, m->ud, m->deadline, m->fl, m->left);
		else if (m->type == XM_FLUSH)
			emu_flush_overflow(r), m->res = 0;
		else
			m->res = -EINVAL;
		atomic_store(&s->ack, seq);
		futex(&s->ack, FUTEX_WAKE, INT32_MAX, NULL);
	}
	pthread_mutex_unlock(&s->alive);
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

/* Take a slot for this process (pid -1 until its listener runs: senders wait). */
static int claim_slot(struct emu_ring *r)
{
	struct xshared *xs = r->xs;
	for (int i = 0; i < XP_SLOTS; i++) {
		int z = 0;
		if (!atomic_compare_exchange_strong(&xs->slot[i].pid, &z, -1))
			continue;
		struct xslot *s = &xs->slot[i];
		atomic_store(&s->ack, atomic_load(&s->req));
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

/* 1: s's process listens; 0: it is gone (its slot is freed if it died). */
static int peer_alive(struct xslot *s, int pid)
{
	int e = pthread_mutex_trylock(&s->alive);
	if (e == EBUSY)
		return 1;
	if (e == EOWNERDEAD) {
		pthread_mutex_consistent(&s->alive);
		pthread_mutex_unlock(&s->alive);
		atomic_compare_exchange_strong(&s->pid, &pid, 0);
		return 0;
	}
	if (e == 0)
		pthread_mutex_unlock(&s->alive);
	return 0;
}

/* Send m to slot i and wait for the answer; -ESRCH if the process is gone. */
static int32_t send_msg(struct emu_ring *r, int i, struct xmsg *m)
{
	struct xslot *s = &r->xs->slot[i];
	int pid;
	/* -1: a process took it and is starting its listener (a parent in fork()) */
	for (int k = 0; (pid = atomic_load(&s->pid)) == -1 && k < 10000; k++)
		usleep(1000);
	if (pid <= 0 || !peer_alive(s, pid))
		return -ESRCH;
	rlock(&s->mbox);
	if (atomic_load(&s->pid) != pid) {
		pthread_mutex_unlock(&s->mbox);       /* it left meanwhile */
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
		struct timespec ts = { 0, 50 * 1000000 };
		futex(&s->ack, FUTEX_WAIT, a, &ts);
		if (atomic_load(&s->ack) != seq && (atomic_load(&s->pid) != pid || !peer_alive(s, pid)))
			break;                    /* it died or left without answering */
	}
	pthread_mutex_unlock(&s->mbox);
	return res;
}

int32_t xproc_cancel(struct emu_ring *r, unsigned fl, uint64_t ud, int fd, int all)
{
	struct xmsg m = { .type = XM_CANCEL, .fl = fl, .fd = fd, .ud = ud };
	int32_t res = -ENOENT;
	for (int i = 0; i < XP_SLOTS; i++) {
		if (i == r->xslot)
			continue;
		int32_t e = send_msg(r, i, &m);
		if (e == -ESRCH || e == -ENOENT)
			continue;
		if (!all)
			return e;
		res = res == -ENOENT ? e : res + e;
	}
	return res;
}

/* 1 if another process uses the ring (took a slot since the fork and lives). */
int xproc_others(struct emu_ring *r)
{
	for (int i = 0; i < XP_SLOTS; i++) {
		int pid = atomic_load(&r->xs->slot[i].pid);
		if (i != r->xslot && (pid == -1 || (pid > 0 && peer_alive(&r->xs->slot[i], pid))))
			return 1;
	}
	return 0;
}

/* The CQEs waiting in all processes' overflow lists, after adding delta. */
int xproc_ovf_count(struct emu_ring *r, int delta)
{
	return atomic_fetch_add(&r->xs->novf, delta) + delta;
}

/* Each other process moves its overflowed CQEs into the CQ (room allowing). */
void xproc_flush_others(struct emu_ring *r)
{
	struct xmsg m = { .type = XM_FLUSH };
	for (int i = 0; i < XP_SLOTS; i++)
		if (i != r->xslot)
			send_msg(r, i, &m);
}

/* Hand TIMEOUT q over to a process that stays: 0 if one took it. */
int xproc_handover_timeout(struct emu_ring *r, const struct ureq *q, uint64_t left)
{
	struct xmsg m = { .type = XM_TIMEOUT, .fl = q->sqe.timeout_flags, .ud = q->sqe.user_data,
			  .deadline = q->deadline, .left = left };
	for (int i = 0; i < XP_SLOTS; i++)
		if (i != r->xslot && send_msg(r, i, &m) == 0)
			return 0;
	return -ESRCH;
}

/* Stop this process's listener and free its slot (the ring lock not held). */
static void listener_stop(struct emu_ring *r)
{
	struct xslot *s = &r->xs->slot[r->xslot];
	if (!r->xl_on) {
		atomic_store(&s->pid, 0);
		r->xslot = -1;
		return;
	}
	rlock(&s->mbox);                            /* a sender's message is answered first */
	__atomic_store_n(&r->xl_stop, 1, __ATOMIC_RELEASE);
	/* FUTEX_WAIT compares req: bumped, a listener about to sleep does not */
	atomic_fetch_add(&s->req, 1);
	futex(&s->req, FUTEX_WAKE, INT32_MAX, NULL);
	pthread_join(r->xlistener, NULL);
	r->xl_on = 0;
	atomic_store(&s->ack, atomic_load(&s->req));
	pthread_mutex_unlock(&s->mbox);
	atomic_store(&s->pid, 0);
	r->xslot = -1;
}

/*
 * This process leaves the shared ring (exit(), or it closes the ring): its
 * requests are cancelled or handed over (exec_leave_locked) and nothing of it
 * posts again. r->sq_lock stays held: no thread of this process submits (or
 * holds the shared SQ lock when the process ends).
 */
void xproc_leave(struct emu_ring *r)
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
	exec_leave_locked(r);
	pthread_mutex_unlock(&r->lock);
}

void xproc_free(struct emu_ring *r)
{
	if (r->xs)
		munmap(r->xs, sizeof(struct xshared));
	r->xs = NULL;
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
		if (xs == MAP_FAILED)
			continue;            /* the child cannot use it: see fork_child */
		shared_mutex_init(&xs->sq);
		shared_mutex_init(&xs->cq);
		for (int i = 0; i < XP_SLOTS; i++) {
			shared_mutex_init(&xs->slot[i].alive);
			shared_mutex_init(&xs->slot[i].mbox);
		}
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
		if (r->dying)
			continue;
		exec_child_reset(r);
		if (!r->xs)
			r->disabled = 1;         /* no shared part (mmap failed): -EBADFD */
	}
	pthread_mutex_init(&glock, NULL);
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
__attribute__((destructor)) static void xproc_exit(void)
{
	pthread_mutex_lock(&glock);
	for (struct emu_ring *r = grings; r; r = r->gnext)
		if (r->xs && r->xslot >= 0)
			xproc_leave(r);
	pthread_mutex_unlock(&glock);
}
