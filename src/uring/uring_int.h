/* SPDX-License-Identifier: MIT */
/*
 * uring_int.h - the drop-in liburing's internal header (src/uring/ only).
 *
 * The library has two faces behind liburing's exported functions: a ring the
 * kernel runs (every call is a raw io_uring_* system call) and a ring emulated
 * in this process (struct emu_ring, found by its ring fd). The emulated ring
 * lays its memory out as the kernel does, so liburing.h's inline helpers work
 * on it unchanged; an executor (exec.c and submit.c, the opcode table in
 * opdef.c, a file per family of operations) performs each SQE inline when it
 * cannot block, on worker threads (wq.c) when it may, on the reactor thread
 * (reactor.c: poll, timeouts, kernel AIO completions) when it waits for an
 * event.
 *
 * Must never: include anything of src/lib or src/server (this room reaches
 * only down: src/common and the system), or dereference a pointer taken from
 * an SQE or an io_uring_register argument without going through ucopy()/
 * uwrite() or a system call that checks it (a bad pointer is -EFAULT, never a
 * crash).
 */
#ifndef URING_INT_H
#define URING_INT_H

#define LIBURING_INTERNAL 1
#include <liburing.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

/* <liburing/io_uring.h> of liburing 2.3 predates these (Linux 6.2 uapi) */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

/* Highest fd number an emulated ring can have (its eventfd is moved below). */
#define EMU_MAX_FD 65536
#define EMU_MAX_ENTRIES 32768u
#define EMU_MAX_CQ (2u * EMU_MAX_ENTRIES)
#define EMU_INLINE_IOV 4
#define EMU_FCACHE 1024
#define EMU_EFD_ID_UNKNOWN (-3L)     /* emu_ring.efd_id not looked up yet */
#define EMU_FD_BASE 512             /* the library's own fds go at or above this */
/* Numbers no descriptor can have: the kernel's stay below sysctl_nr_open_max
 * (INT_MAX rounded down to a multiple of 64). A ring the system-call front
 * makes while the program holds every number of its range is named by one of
 * these (sysfront.c): mmap, io_uring_enter/register and close of it trap and
 * are served; anything else on it is the kernel's -EBADF. */
#define EMU_VFD_LO 0x7fffffc0
#define EMU_VFD_N 64
#define emu_vfd(fd) ((fd) >= EMU_VFD_LO)
#define EMU_UDH_MAX_BITS 12         /* user_data hash: at most 4096 chains */
#define EMU_SHARED_LOOK_MS 100      /* a wait on a ring shared across fork looks this often */

/* How an fd is served: kind decides inline/poll/worker, direct decides AIO. */
enum { FK_UNKNOWN = 0, FK_REG, FK_POLL, FK_SOCK, FK_OTHER };
struct fent {
	int fd;                  /* real fd (registered files: our dup) or -1 */
	uint8_t kind, direct, nonblock;
	uint8_t wr_block;              /* fcache: a write's RWF_NOWAIT was refused (EOPNOTSUPP):
					* writes go to a worker at once (read/written with __atomic) */
	uint8_t valid;                 /* fcache: filled (read/written with __atomic) */
	uint8_t whash;                 /* a regular file: its inode's bucket (1..64) of hashed
					* work (wq.c); 0: not a regular file */
	uint32_t vgen;                 /* fcache: O_DIRECT confirmed in submission vgen (0: not since filled) */
};

/* Where a request is. Cancellation looks at it under the ring lock. */
enum {
	RS_FREE = 0, RS_CHAIN,     /* waiting for its predecessor in a link chain */
	RS_DEFER,                  /* held back by IOSQE_IO_DRAIN */
	RS_RUN,                    /* being executed by some thread now */
	RS_WQ,                     /* queued for a worker, not started */
	RS_POLL,                   /* waiting in the reactor for readiness */
	RS_TIMEOUT,                /* TIMEOUT or armed LINK_TIMEOUT */
	RS_AIO,                    /* in the kernel's AIO */
	RS_LT_IDLE,                /* LINK_TIMEOUT not armed yet */
};

struct emu_ring;

struct ureq {
	struct io_uring_sqe sqe;       /* private copy, never re-read from the ring */
	struct emu_ring *r;
	struct ureq *link;             /* next request of the chain */
	struct ureq *lt;               /* armed/attached LINK_TIMEOUT, or NULL */
	struct ureq *lt_target;        /* for a LINK_TIMEOUT: the request it guards */
	struct ureq *next, *prev;      /* live list (all requests in flight) */
	struct ureq *hnext, *hprev;    /* its chain in the user_data hash (cancel, remove) */
	struct ureq *qnext;            /* work queue / defer queue */
	uint8_t state, chain_fail, canceled, connecting, hashed;
	uint8_t chain_drain;            /* head of a chain: a request after the head has IOSQE_IO_DRAIN */
	uint8_t cancel_run;             /* a cancel found it running (-EALREADY): it ends, -ECANCELED, instead of waiting again */
	uint8_t started;                /* run_one has issued it (a cancel finds only those) */
	uint8_t wq_hash;                /* queued for a worker as hashed work: its file's bucket
					 * (fent.whash), 0 none (wq.c) */
	uint32_t chain_n;              /* head of a chain: how many requests it holds */
	int32_t prep_err;
	int32_t res;
	uint32_t cflags;
	int fd;                        /* real fd to use */
	struct fent fe;
	uint64_t done;                 /* bytes already done (short read continuation) */
	uint64_t deadline;             /* CLOCK_MONOTONIC ns, timeouts */
	uint64_t target;               /* TIMEOUT: completion count that fires it */
	short pevents;                 /* reactor: events waited for */
	short revents;                 /* what fired (a waiter of r->pnow: what poll() saw) */
	/* a one-shot wait in the reactor (RS_POLL): a waiter of its fd's group
	 * (pg, linked by pw_next/pw_prev), of r->pnow, or of none (never fires) */
	struct pgroup *pg;
	struct ureq *pw_next, *pw_prev;
	/* timers (RS_TIMEOUT): position + 1 in the deadline heap (0: not in it);
	 * a TIMEOUT with a completion count is also on r->counted (tnext/tprev) */
	uint32_t th_idx;
	struct ureq *tnext, *tprev;
	/* multishot POLL_ADD, ACCEPT, RECV, RECVMSG: armed in the reactor's epoll
	 * set (mshot), by ms_fd (q->fd, or our dup of it when that file is in the
	 * set already: ms_dup). An ACCEPT/RECV the set woke runs (RS_RUN) until
	 * the file says EAGAIN; woken again meanwhile: ms_again; cancelled
	 * meanwhile: ms_end (the result it ends with) */
	uint8_t mshot, ms_dup, ms_again, ms_run;   /* ms_run: counted in r->ms_running */
	int ms_fd;
	uint32_t ms_slot;
	int32_t ms_end;
	/* SEND_ZC, SENDMSG_ZC past the point where the kernel allocates the
	 * notification: its CQE has F_MORE and a NOTIF CQE follows */
	uint8_t zc_notif;
	/* buffer selection: from a classic group's list (BUF_LIST), a buffer
	 * ring's entry bslot (BUF_RING) or its list of buffers given back
	 * (BUF_RING_LIST): kbuf.c */
	uint8_t has_buf, buf_ring;
	uint16_t bid, bgid, bslot;
	uint64_t baddr;
	uint32_t blen, bgen;           /* bgen: the buffer ring's registration */
	/* stable copies for async work */
	struct iovec *iov;
	int niov;
	struct iovec iov_in[EMU_INLINE_IOV];
	struct msghdr msg;             /* SENDMSG/RECVMSG copy (punted) */
	struct msghdr *umsg;
	struct iocb cb;                /* AIO */
	char *p1, *p2;                 /* path arguments copied at submission */
	struct __kernel_timespec ts;   /* TIMEOUT/LINK_TIMEOUT, copied at submission */
};

/* FIFO of requests linked by qnext (worker queue, drain queue). Changed under a
 * lock; the head is stored atomically because the submit fast path peeks at the
 * drain queue's head without the lock (relaxed: a plain move on x86-64). */
static inline void rq_push(struct ureq **head, struct ureq **tail, struct ureq *q)
{
	q->qnext = NULL;
	if (*tail)
		(*tail)->qnext = q;
	else
		__atomic_store_n(head, q, __ATOMIC_RELAXED);
	*tail = q;
}

static inline struct ureq *rq_pop(struct ureq **head, struct ureq **tail)
{
	struct ureq *q = *head;
	if (q) {
		__atomic_store_n(head, q->qnext, __ATOMIC_RELAXED);
		if (!*head)
			*tail = NULL;
		q->qnext = NULL;
	}
	return q;
}

/* Unlink q from the queue if it is there (the head stored atomically, as rq_pop). */
static inline void rq_del(struct ureq **head, struct ureq **tail, struct ureq *q)
{
	struct ureq **pp = head, *prev = NULL;
	while (*pp && *pp != q) {
		prev = *pp;
		pp = &(*pp)->qnext;
	}
	if (*pp) {
		__atomic_store_n(pp, q->qnext, __ATOMIC_RELAXED);
		if (*tail == q)
			*tail = prev;
	}
	q->qnext = NULL;
}

/* The one-shot waiters of one fd number: one entry of the reactor's epoll set
 * (level-triggered, EPOLLONESHOT), registered by that number with the union of
 * their events, its cookie the number and gen (an entry the number no longer
 * names, a closed or replaced file, reports under an old gen: ignored). */
struct pgroup {
	struct ureq *head;
	uint32_t gen;
	uint16_t want;                 /* events registered: at least the union of the waiters' */
	uint8_t in_set;
};

struct ovf {                       /* one CQE waiting for room in the CQ */
	struct ovf *next;
	uint64_t user_data;
	int32_t res;
	uint32_t flags;
};

struct pbuf {                      /* one provided buffer (PROVIDE_BUFFERS) */
	uint64_t addr;
	uint32_t len;
	uint16_t bid;
};
enum { BUF_LIST, BUF_RING, BUF_RING_LIST };   /* ureq.buf_ring */
struct bgroup {
	uint16_t bgid;
	uint8_t used, is_ring;
	/* classic: FIFO of buffers; a ring: its buffers given back out of
	 * order, taken before the ring's (kbuf.c) */
	struct pbuf *bufs;
	uint32_t head, count, cap;
	/* ring: the application's io_uring_buf_ring */
	struct io_uring_buf_ring *br;
	uint32_t entries, gen;         /* gen: this registration's number */
	uint16_t rhead;
};

struct emu_ring {
	_Atomic int refs;
	int fd;                        /* the ring fd: an eventfd (see DROPIN.md) */
	long efd_id;                   /* its kernel id (fdinfo), -1 if it cannot be told,
					* EMU_EFD_ID_UNKNOWN until first needed */
	_Atomic int aliased;           /* emu_alias() gave it another fd number too */
	int ifd;                       /* our own dup of it: what the library uses */
	unsigned flags, features;
	unsigned sq_entries, cq_entries;
	uint32_t sqe_size, cqe_shift;
	void *mem;                     /* SQ ring + CQ ring (one mapping) */
	size_t mem_sz;
	struct io_uring_sqe *sqes;
	size_t sqes_sz;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_entries_p, *sq_flags, *sq_dropped, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask, *cq_entries_p, *cq_overflow, *cq_flags;
	struct io_uring_cqe *cqes;
	struct io_uring_params params;  /* the offsets handed out */

	pthread_mutex_t sq_lock;       /* one submitter at a time (uring_lock) */
	pthread_mutex_t lock;          /* everything below */
	int dying, disabled;
	int *rfd_signalled;            /* ring eventfd holds a count: &rfd_own, or the
					* shared one once the ring is shared (xs) */
	int rfd_own;
	/* sharing across fork (xproc.c): NULL until the first fork(); then the
	 * shared part (process-shared locks, mailboxes) and this process's slot */
	struct xshared *xs;
	struct xpriv *xp;              /* this process's own view of it (private) */
	int xslot;                     /* -1: this process has not used the ring since fork */
	int xl_stop;                   /* the listener is asked to leave */
	int xl_on;                     /* this process's listener runs */
	pthread_t xlistener;
	struct emu_ring *gnext, *gprev;  /* all emulated rings of the process (fork, exit) */
	struct ovf *ovf_head, *ovf_tail;
	unsigned novf;
	uint64_t ncompleted;           /* non-timeout completions, for TIMEOUT count */
	struct ureq *live;             /* requests in flight */
	struct ureq **udh;             /* the same, hashed by user_data: 1 << udh_bits chains */
	unsigned udh_bits;
	struct ureq *freelist;
	unsigned inflight;             /* issued, not completed (for DRAIN) */
	struct ureq *defer_head, *defer_tail;
	int drain_active;              /* an IO_DRAIN was submitted: chains wait while anything runs (queue_chain_locked) */
	int drain_disabled;            /* an SQE had IOSQE_CQE_SKIP_SUCCESS: IO_DRAIN is -EOPNOTSUPP from then on */
	int drain_next;                /* the chain after one with an IO_DRAIN past its head is drained too */
	struct ureq *counted, *counted_tail;  /* TIMEOUTs waiting for a completion count, by target */
	unsigned cq_timeouts;          /* TIMEOUTs that expired or met their count: a wait
	                                * for CQEs ends when it moves (the kernel's cq_timeouts) */
	int evfd, evfd_async;          /* registered eventfd */
	/* registered resources */
	struct iovec *bufs;
	uint64_t *buf_tags;
	unsigned nbufs;
	struct fent *files;
	uint64_t *file_tags;
	unsigned nfiles, alloc_lo, alloc_hi, alloc_next;
	struct bgroup *groups;
	unsigned ngroups;
	struct fent fcache[EMU_FCACHE];
	uint32_t sub_gen;              /* exec_submit calls (never 0): the submitter's own */
	unsigned personalities;
	/* workers */
	pthread_cond_t wq_cond;
	struct ureq *wq_head, *wq_tail;
	unsigned wq_threads, wq_idle, wq_max;  /* wq_max: 0 until emu_wq_max_locked() */
	uint64_t wq_hash_busy;         /* buckets of hashed work a worker is running (bit whash - 1) */
	/* reactor: it sleeps in pp_fd, an epoll set of its wake-up eventfd, the
	 * multishot set (ep_fd) and one entry per fd with one-shot waiters (pgt[fd]) */
	int reactor_on, wake_fd, pp_fd;
	pthread_t reactor;
	struct pgroup **pgt;
	unsigned pgt_cap;
	struct pgroup pnow;            /* waiters to fire at the next round (epoll cannot wait for them) */
	struct ureq **th;              /* min-heap of RS_TIMEOUT requests by deadline */
	unsigned th_n, th_cap, nreq;   /* th_cap >= nreq, the requests ever allocated: pushes cannot fail */
	/* multishot polls: an edge-triggered epoll set whose events name a slot
	 * of ms[] and its generation (a stale event names a freed slot: ignored) */
	int ep_fd;
	struct msslot { struct ureq *q; uint32_t gen, next_free; } *ms;
	unsigned ms_cap, ms_free;      /* ms_free: index + 1 of a free slot, 0 none */
	int ms_harvest;                /* armed or re-armed inline: harvest before the submit returns */
	unsigned ms_armed;             /* requests in the set: a waiter harvests too */
	unsigned ms_running;           /* ACCEPT/RECV multishots woken and not done with it: a
					* waiter that has its CQEs waits for them (ms_cond), as the
					* kernel's wait runs its task work to the end */
	pthread_cond_t ms_cond;
	/* kernel AIO for O_DIRECT */
	int aio_state;                 /* 0 untried, 1 on, -1 unavailable */
	aio_context_t aio_ctx;
	unsigned aio_inflight, aio_max;
	struct iocb *aio_pend[64];
	int aio_npend;
	/* kernel AIO for the fast path's batches of cached reads (kaio.c): a
	 * context of its own, whose reads complete inside io_submit */
	int fb_state;                  /* 0 untried, 1 on, -1 unavailable */
	aio_context_t fb_ctx;
	int fb_on;                     /* batch at all: kaio_batch_pays() at setup */
	struct fast_mem *fast_mem;     /* the fast path's arrays (submit.c), under sq_lock */
	/* SQPOLL */
	int sqp_on, sqp_sleeping;
	pthread_t sqp;
	pthread_cond_t sqp_cond;       /* poller sleeps here (NEED_WAKEUP) */
	pthread_cond_t sqspace_cond;   /* SQ_WAIT waiters */
	unsigned sq_idle_ms;
	int sq_cpu;                    /* IORING_SETUP_SQ_AFF: the poller's CPU, else -1 */
};

/* emu.c */
struct emu_ring *emu_find(int fd);
struct emu_ring *emu_find_checked(int fd);
struct emu_ring *emu_alias(int fd);
int emu_setup(unsigned entries, struct io_uring_params *p);
int emu_setup_from(unsigned entries, struct io_uring_params *p, int min_fd);
unsigned emu_wq_max_locked(struct emu_ring *r);
int emu_enter(struct emu_ring *r, unsigned to_submit, unsigned min_complete,
	      unsigned flags, const void *arg, size_t argsz);
int emu_mmap(struct emu_ring *r, struct io_uring_params *p, struct io_uring *ring);
int emu_close(struct emu_ring *r);
void emu_put(struct emu_ring *r);
void emu_post(struct emu_ring *r, uint64_t ud, int32_t res, uint32_t cflags, int async);
void emu_signal_efd(struct emu_ring *r);
void emu_mshot_run(struct emu_ring *r);
int emu_cq_full_locked(struct emu_ring *r);
int emu_forced(void);
int emu_close_number(int fd);
/* sysfront.c: the system-call front (urfs-uring --syscalls). With it on, the
 * filter traps close() of the numbers where it puts rings, and the library's
 * own threads block every signal: so every close() of the library is
 * emu_close_fd(), which closes such a number with close_range(2) instead. */
extern int emu_front_on;
int emu_close_fd(int fd);
#define close(fd) emu_close_fd(fd)
int emu_fd_high(int fd);
int ucopy(void *dst, const void *src, size_t n);
int uwrite(void *dst, const void *src, size_t n);
uint64_t now_ns(void);
struct timespec realtime_in_ms(long ms);

/* register.c */
int emu_register(struct emu_ring *r, unsigned op, void *arg, unsigned nr);
/* rsrc.c: registered buffers and files */
int rsrc_reg_buffers(struct emu_ring *r, const struct iovec *uiov, const uint64_t *utags, unsigned nr, int sparse);
int rsrc_unreg_buffers(struct emu_ring *r);
int rsrc_update_buffers(struct emu_ring *r, unsigned off, const struct iovec *uiov, const uint64_t *utags,
			unsigned nr);
int rsrc_reg_files(struct emu_ring *r, const int *ufds, const uint64_t *utags, unsigned nr, int sparse);
int rsrc_unreg_files(struct emu_ring *r);
/* kbuf.c: buffer rings */
int kbuf_reg_pbuf_ring(struct emu_ring *r, void *arg, unsigned nr);
int kbuf_unreg_pbuf_ring(struct emu_ring *r, void *arg, unsigned nr);

/* the executor: exec.c (the core), submit.c, and a file per family of
 * operations (opdef.h lists their entry points) */
#define Q_QUEUED (-0x40000000)    /* op result: someone else completes it */
unsigned exec_submit(struct emu_ring *r, unsigned n, int *err);                 /* submit.c */
int exec_punt(struct ureq *q);                                                  /* exec.c */
int exec_wait_ready(struct ureq *q, short events);
void exec_run(struct ureq *q, int ctx);
void exec_run_held(struct ureq *q, struct ureq **held);
void exec_complete(struct ureq *q, int32_t res);
void exec_complete_locked(struct ureq *q, int32_t res, struct ureq **next);
void exec_inflight_dec_locked(struct emu_ring *r, struct ureq **run);
void exec_issue_list(struct ureq *list, int ctx);
void exec_put_locked(struct emu_ring *r, struct ureq *q);
void exec_live_del(struct ureq *q);
void exec_args_free(struct ureq *q);
int exec_cancel_locked(struct emu_ring *r, struct ureq *q, int32_t res, struct ureq **run); /* cancel.c */
int exec_sync_cancel(struct emu_ring *r, const struct io_uring_sync_cancel_reg *reg);
int exec_advance_iov(struct ureq *q, uint64_t n);                               /* net.c */
int32_t exec_poll_now(int fd, short ev);                                        /* poll.c */
int exec_file(struct emu_ring *r, int fd, int fixed, struct fent *out);         /* filetable.c */
void exec_fcache_drop(struct emu_ring *r, int fd);
int emu_update_files(struct emu_ring *r, unsigned off, int *ufds, const uint64_t *utags, unsigned nr); /* rsrc.c */
void exec_buf_recycle_locked(struct ureq *q);                                   /* kbuf.c */
struct bgroup *exec_group_locked(struct emu_ring *r, uint16_t bgid, int create);
enum { CTX_INLINE, CTX_WORKER, CTX_REACTOR };

/* wq.c */
#define WQ_BATCH 32             /* hashed work a worker takes at once */
int wq_queue(struct ureq *q);
void wq_stop(struct emu_ring *r);

/* reactor.c */
int reactor_start_locked(struct emu_ring *r);
void reactor_kick(struct emu_ring *r);
int reactor_arm_locked(struct ureq *q, short events);
void reactor_rearm_locked(struct ureq *q);
void reactor_forget_locked(struct ureq *q);
void reactor_stop(struct emu_ring *r);
void reactor_free(struct emu_ring *r);
int reactor_reserve_locked(struct emu_ring *r);
void timer_add_locked(struct ureq *q);
void timer_update_locked(struct ureq *q);
int reactor_mshot_arm_locked(struct ureq *q);
int reactor_mshot_rearm_locked(struct ureq *q);
void reactor_mshot_disarm_locked(struct ureq *q);
void reactor_mshot_harvest_locked(struct emu_ring *r, struct ureq **run);
void reactor_mshot_run_locked(struct ureq *q, int on);
int timeouts_count_locked(struct emu_ring *r, struct ureq **run);
int kts_to_deadline(const struct __kernel_timespec *ts, unsigned flags, uint64_t *out);

/* kaio.c */
int kaio_submit(struct ureq *q, int wr, int ctx);
void kaio_flush(struct emu_ring *r);
int kaio_reap_locked(struct emu_ring *r, struct ureq **run);
void kaio_fini(struct emu_ring *r);
int kaio_batch_pays(void);
int kaio_batch(aio_context_t *ctx, int *state, struct iocb **cbp, int k, int32_t *res);
int kaio_worker_batch(struct iocb **cbp, int k, int32_t *res);
void kaio_thread_fini(void);

/* xproc.c: a ring shared by the processes that fork()ed with it */
void xproc_track(struct emu_ring *r);
void xproc_untrack(struct emu_ring *r);
int xproc_join(struct emu_ring *r);
void xproc_leave(struct emu_ring *r, int handover);
void xproc_exec(void);
void xproc_free(struct emu_ring *r);
int xproc_ovf_count(struct emu_ring *r, int delta);
int xproc_others(struct emu_ring *r);
void xproc_flush_others(struct emu_ring *r);
void emu_flush_overflow(struct emu_ring *r);
int emu_flush_overflow_locked(struct emu_ring *r);
int xproc_sq_lock(struct emu_ring *r);
void xproc_sq_unlock(struct emu_ring *r);
int xproc_cq_lock(struct emu_ring *r);
void xproc_cq_unlock(struct emu_ring *r);
int32_t xproc_cancel(struct emu_ring *r, unsigned fl, uint64_t ud, int fd, int all);
int xproc_handover_timeout(struct emu_ring *r, const struct ureq *q, uint64_t left);

/* the executor, for xproc.c */
int32_t exec_cancel_here(struct emu_ring *r, unsigned fl, uint64_t ud, int fd);  /* cancel.c */
void exec_leave_locked(struct emu_ring *r, int handover);
int exec_adopt_timeout(struct emu_ring *r, uint64_t ud, uint64_t deadline, unsigned tflags, uint64_t left); /* timeout.c */
void exec_child_reset(struct emu_ring *r);                                      /* exec.c */
void exec_forked(void);                                                         /* net.c */
void reactor_child_reset(struct emu_ring *r);

/* sqpoll (emu.c) */
int sqpoll_start(struct emu_ring *r);
/* The library's threads (workers, reactor, SQPOLL poller, fork listener): started
 * with every signal blocked, holding a ring reference if take_ref; fn calls
 * emu_thread_running() first. emu_threads_settle() (fork) waits for those still
 * starting; emu_threads_forked() forgets them in the child. */
int emu_thread_start(struct emu_ring *r, pthread_t *t, int detached, int take_ref, int cpu, void *(*fn)(void *));
void emu_thread_running(void);
void emu_threads_settle(void);
void emu_threads_forked(void);
void sqpoll_stop(struct emu_ring *r);

#endif
