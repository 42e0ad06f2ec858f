/* SPDX-License-Identifier: MIT */
/*
 * server.h - simplefs_server's private state: one struct ur_server per client
 * ring (its private copies of everything the server must not re-read from
 * shared memory, its files, its registered buffers, its AIO), and one struct
 * ur_host for the server: the mounted backend every ring shares, the list of
 * rings and the socket later clients attach through.
 *
 * Must never be included by client code: the client sees only ur_abi.h.
 */
#ifndef UR_SERVER_H
#define UR_SERVER_H

#include <stdint.h>
#include <signal.h>
#include <linux/aio_abi.h>
#include "ur_abi.h"
#include "backend.h"

#define UR_AIO_MAX 256                    /* image I/Os in flight */
#define UR_AIO_QUEUED     INT32_MIN         /* ur_aio_rw: issued, CQE later */
#define UR_AIO_NOT_ASYNC  (INT32_MIN + 1)   /* ur_aio_rw: use the sync path */
#define UR_AIO_BUSY       (INT32_MIN + 2)   /* ur_aio_rw: no slot free, retry later */

struct ur_aio_req {
	uint64_t user_data;
	int32_t  res;
	uint16_t pending;                    /* extents still in flight */
};

struct ur_host;

/* locks.c: byte-range locks between clients (docs/ABI.md, "Locks"). */
struct ur_lock;
struct ur_lockwait;
struct ur_lockfile;
#define UR_LOCK_BUCKET_BITS 8
struct ur_locktab {
	/* Files with records or queued waits, by inode (each with its own
	 * records and FIFO of waits); the records and waits of a ring are also
	 * on that ring's lists (struct ur_server's locks, lwaits). */
	struct ur_lockfile *file[1u << UR_LOCK_BUCKET_BITS];
	uint32_t nlocks, nwaits;           /* of every ring: <= UR_SERVER_MAX_* */
	uint64_t next_deadline;            /* no wait times out before (ns; 0: none has one) */
	uint32_t gen;                      /* deadlock()'s search, the current one */
	uint64_t n_grant_looked;           /* queued waits looked at by grant passes (--stats) */
};
#define UR_LOCK_QUEUED UR_AIO_QUEUED        /* ur_lock_request: CQE when granted */

/* spin.c: the idle spin learned from the ring's inter-arrival gaps. */
#define UR_SPIN_HIST      8u          /* gaps remembered */
#define UR_SPIN_WORTH_NS  100000u     /* longer gaps are not worth a spin */
#define UR_SPIN_MIN_NS    20000u      /* the least spin when spinning pays */
#define UR_HANDOVER_NS    20000u      /* CQEs unreaped this long on our CPU: hand over */
struct ur_spin {
	uint64_t idle_at;                 /* when the ring ran out of work; 0: busy */
	uint32_t gap[UR_SPIN_HIST];       /* ns, the last gaps (clamped to ~4 s) */
	uint32_t next;
};
void     ur_spin_init(struct ur_spin *sp);
/* The ring ran out of work at now_ns (the first call of an idle period counts). */
void     ur_spin_idle(struct ur_spin *sp, uint64_t now_ns);
/* Work was found at now_ns: if the ring was idle, its gap is learned. */
void     ur_spin_arrival(struct ur_spin *sp, uint64_t now_ns);
/* How long to spin now before sleeping, at most cap_ns. */
uint64_t ur_spin_budget_ns(const struct ur_spin *sp, uint64_t cap_ns);
/* spin.c: the hand-over rule, per ring: give up the CPU (sched_yield) to a
 * client that has waited UR_HANDOVER_NS on this very CPU (its CQ owner_cpu
 * hint; my_cpu the server's; both +1, 0 unknown/asleep) for CQEs it has not
 * reaped (cq_head behind cq_published), once per batch of CQEs? */
struct ur_handover {
	uint32_t tail;                    /* cq_published when the CPU was last handed over */
	uint64_t since;                   /* the client began to wait on our CPU (0: not) */
};
int      ur_handover(struct ur_handover *ho, uint32_t my_cpu, uint32_t client_cpu,
		     uint32_t cq_head, uint32_t cq_published, uint64_t now_ns);

struct ur_server {
	/* The region and the geometry validated once at start-up. */
	uint8_t *base;
	uint64_t size;
	struct ur_region_hdr geo;          /* private copy of the header */
	struct ur_region_hdr *hdr;         /* shared header (server writes pid/state) */
	struct ur_ring_ctl *sq, *cq;
	struct ur_sqe *sqes;
	struct ur_cqe *cqes;
	uint32_t sq_mask, cq_mask;
	/* Private copies of the counters the server owns. */
	uint32_t sq_head, cq_tail;
	uint32_t cq_published;
	int broken;                        /* the client corrupted the ring */
	int chain_failed;                  /* inside a link chain whose member failed */

	int efd_sq, efd_cq, live;
	uint64_t idle_ns;                  /* cap of the idle spin (the client's idle_us) */
	struct ur_spin spin;

	const struct ur_backend_ops *be;
	void *bst;

	/* Files opened by this client (handle -> open). */
	uint8_t *fdopen;
	int fdcap;
	uint32_t nfiles;                   /* open now (<= UR_CLIENT_MAX_FILES) */

	/* Many clients (host.c): the server this ring belongs to (NULL when a
	 * driver serves one ring in-process), the next ring, and the idle
	 * clock of this ring. */
	struct ur_host *host;
	struct ur_server *next;
	uint64_t busy_at;                  /* last work found or doorbell (ns); 0: never */
	uint32_t cold_skip;                /* idle: turns to skip before the next look */
	uint64_t idle_since;
	struct ur_handover handover;       /* spin.c's hand-over rule for this ring */
	int first;                         /* from the server's parent (fds 3..6) */
	int gone;                          /* client left: tear down */
	int rdonly;                        /* attached read-only to a read-write mount */
	int excl;                          /* the server's only client while it lives */

	/* Byte-range locks: the table when there is no host; this ring's
	 * records and queued waits (each wait holds a CQ slot). */
	struct ur_locktab own_locks;
	uint32_t nlocks, nlockwait;
	struct ur_lock *locks;             /* this ring's records (owner list) */
	struct ur_lockwait *lwaits;        /* this ring's queued waits, newest first */
	int32_t pid;                       /* the client's process (SO_PEERCRED; 0: unknown):
					    * its rings share UR_PROC_MAX_* */

	/* Registered buffers (private snapshot). */
	struct ur_iovec bufs[UR_MAX_BUFS];
	uint32_t nbufs;

	/* Scratch for READV/WRITEV. */
	struct ur_iovec iov[UR_IOV_MAX];

	/* O_DIRECT reads and overwrites through the kernel's native AIO (aio.c). */
	int aio_on;
	aio_context_t aio_ctx;
	int aio_efd, img_fd;
	uint32_t aio_inflight;               /* requests: each owes one CQE */
	struct iocb iocbs[UR_AIO_MAX];
	uint32_t iocb_free[UR_AIO_MAX], n_iocb_free;
	struct ur_aio_req areq[UR_AIO_MAX];
	uint32_t areq_free[UR_AIO_MAX], n_areq_free;
	struct iocb *pend[UR_AIO_MAX];
	int npend, npend_req;                /* iocbs / requests not yet submitted */
	uint64_t pend_since;                 /* when the oldest of them was queued */

	int aio_full;                        /* an SQE waits for an AIO slot */

	/* Counters (for --stats). */
	uint64_t n_sqe, n_sleep, n_wake_client, n_handover, n_aio, n_aio_w, n_busy;
};

#define UR_PEND_MAX 8          /* connections waiting for their attach message */
#define UR_PEND_NS  1000000000ull   /* ... at most this long */
#define UR_PEND_MS  100

/* The server: one mounted backend, many rings. */
struct ur_host {
	const struct ur_backend_ops *be;
	void *bst;
	unsigned attach_flags;             /* UR_ATTACH_* of the mount */
	struct ur_server *rings;           /* served round-robin */
	uint32_t nrings;
	int listen_fd;                     /* -1: no attaching (no image) */
	/* Connections accepted whose attach message has not come yet. */
	int pend_fd[UR_PEND_MAX];
	uint64_t pend_t[UR_PEND_MAX];
	int npend_fd;
	int last_live;                     /* the last client's, for the final word */
	int aio;                           /* O_DIRECT reads by AIO for each ring */
	struct ur_locktab locks;           /* byte-range locks of every ring */
	uint64_t n_attach, n_refused;
	uint64_t n_turn, n_look;           /* loop turns; rings looked at in them */
	/* Counters of rings that have left (for --stats). */
	uint64_t n_sqe, n_sleep, n_wake_client, n_handover, n_aio, n_aio_w, n_busy;
};

/* SQEs one ring may take per turn before the next ring's turn (fairness). */
#define UR_TURN_BUDGET 64u
/* A ring that had no work for UR_HOT_NS is looked at every UR_COLD_EVERY
 * turns (its doorbell, a lock grant or work found makes it hot again). */
#define UR_HOT_NS 1000000u
#define UR_COLD_EVERY 8u
/* While busy, the server looks at its sockets (new clients, departures) at
 * most this often: one poll() with a zero timeout. */
#define UR_CHECK_NS 2000000u

extern volatile sig_atomic_t ur_server_stop;
/* The process that started the server (and made the first ring) is gone. */
extern volatile sig_atomic_t ur_server_parent_gone;

/* region.c: [off, off+len) inside [lo, lo+span)? Overflow-safe. */
int  ur_inside(uint64_t off, uint64_t len, uint64_t lo, uint64_t span);
/* Why the header g of a region of size bytes is refused, or NULL if it is
 * sound: every structure inside [0, size), aligned, none overlapping (docs/ABI.md). */
const char *ur_region_check(const struct ur_region_hdr *g, uint64_t size);

/* doorbell.c: the client's eventfds, used so that nothing the client does
 * can make the server block on them (see there). */
extern int ur_doorbell_nowait;     /* 0: never try preadv2(RWF_NOWAIT) (tests) */
/* 0 if fd is an eventfd in counter mode, else -errno and why in err. */
int  ur_doorbell_check(int fd, char *err, size_t errlen);
/* The interrupt timer of the calling thread (once, before any ring/drain). */
int  ur_doorbell_init(void);
/* Add 1 to the CQ doorbell: 0, or -EAGAIN/-EINTR (saturated: the client wakes anyway). */
int  ur_doorbell_ring(int fd);
/* Empty the SQ doorbell: 0, or -EAGAIN (it was empty). */
int  ur_doorbell_drain(int fd);

/* Validate the region mapped at base (size bytes); fill s. 0 or -errno + err. */
int  ur_server_attach(struct ur_server *s, uint8_t *base, uint64_t size, char *err, size_t errlen);
/* Serve every ring of h until the last client goes away (or a stop
 * signal); rings come and go meanwhile (host.c). Returns 0. */
int  ur_host_run(struct ur_host *h);
/* One pass of the loop without spinning or sleeping: serve the SQEs pending
 * now (as many as the CQ has room for); returns how many were taken. For
 * drivers that run the server in-process (tests/test_ur_inproc.h, the fuzzer). */
uint32_t ur_server_poll(struct ur_server *s);
/* Close the client's files. */
void ur_server_close_files(struct ur_server *s);
/* Post one CQE on s now and publish it (a queued request's; its CQ slot
 * was reserved when it was queued). */
void ur_server_post(struct ur_server *s, uint64_t user_data, int32_t res);
/* The ring's state word in its header (UR_STATE_*). */
void ur_server_set_state(struct ur_server *s, uint32_t st);
/* Wait for the image I/O in flight of every ring of the server (of s alone
 * without a host): before anything that may change a file's mapping. */
void ur_image_quiesce(struct ur_server *s);

/* host.c: rings joining and leaving. */
/* Check the descriptors of a new client (region memfd, doorbells, liveness
 * socket), map and validate the region, add the ring to h. The descriptors
 * become the ring's; on failure all but live are closed. 0 or -errno + err. */
void ur_host_init(struct ur_host *h, const struct ur_backend_ops *be);
int  ur_host_add(struct ur_host *h, int memfd, int efd_sq, int efd_cq, int live,
		 char *err, size_t errlen);
/* Tear down s (AIO drained first, files closed, region unmapped) and drop it. */
void ur_host_drop(struct ur_host *h, struct ur_server *s);
/* Listen for later clients at the image's attach name (attach.h): 0;
 * -EADDRINUSE with *other, the pid of a server of ours that listens there
 * already; or -errno and why in err (-EACCES: another user holds the name). */
int  ur_host_listen(struct ur_host *h, const char *image, pid_t *other, char *err, size_t errlen);
/* Take the connections waiting on the listening socket (never blocks). */
void ur_host_accept(struct ur_host *h);
/* A waiting connection's attach message (or its hang-up) arrived. */
void ur_host_pending(struct ur_host *h, int fd);
/* Close waiting connections older than UR_PEND_NS. */
void ur_host_expire(struct ur_host *h, uint64_t now);
/* Stop listening (and remove the socket file if it is still ours). */
void ur_host_unlisten(struct ur_host *h);
/* Send the last word on a liveness socket and close it. */
void ur_host_bye(int live, int err, const char *msg);
/* 0 if fd is an AF_UNIX SOCK_SEQPACKET socket, else -errno. */
int  ur_check_live(int fd);
/* The hello on a liveness socket, without blocking: 0, or -1 if not sent. */
int  ur_hello_send(int live, int err, const char *msg);

/* locks.c. q is a LOCK / UNLOCK SQE already checked (handle, flags, range,
 * a timeout only with UR_LOCK_WAIT) on file ino; now: CLOCK_MONOTONIC ns.
 * LOCK: 0, -EAGAIN (held elsewhere, no UR_LOCK_WAIT), -EDEADLK, -ENOLCK, or
 * UR_LOCK_QUEUED (the CQE comes when granted, or -ETIMEDOUT at now + q->addr2
 * when that is nonzero). */
int32_t ur_lock_request(struct ur_server *s, const struct ur_sqe *q, uint32_t ino, uint64_t now);
/* End s's first queued LOCK whose user_data is user_data (its CQE:
 * -ECANCELED, posted now): 0, or -ENOENT when s has none. */
int32_t ur_lock_cancel(struct ur_server *s, uint64_t user_data);
/* When the first queued wait of s's table times out (ns; 0: none has a
 * deadline); ur_locks_expire ends those due at now with -ETIMEDOUT (a broken
 * ring's stay: never a CQE to it). Cheap when none is due. */
uint64_t ur_locks_deadline(struct ur_server *s);
void    ur_locks_expire(struct ur_server *s, uint64_t now);
int32_t ur_unlock_request(struct ur_server *s, const struct ur_sqe *q, uint32_t ino);
/* Release the records of handle fd of s (fd < 0: of every handle, and its
 * waits go without a CQE: the ring is leaving) and grant who can go now;
 * a closed handle's waits complete with -EBADF. */
void ur_locks_release(struct ur_server *s, int fd);

/* aio.c */
int      ur_aio_init(struct ur_server *s);
void     ur_aio_fini(struct ur_server *s);
/* A read (wr 0) or an in-place overwrite (wr 1) of q at buf: UR_AIO_QUEUED,
 * UR_AIO_BUSY, UR_AIO_NOT_ASYNC or a final result. */
int32_t  ur_aio_rw(struct ur_server *s, const struct ur_sqe *q, uint8_t *buf, int wr);
void     ur_aio_flush(struct ur_server *s);
/* Submit queued reads now, or keep collecting a moment for one io_submit? */
int      ur_aio_flush_due(struct ur_server *s, uint64_t now);
unsigned ur_aio_reap(struct ur_server *s, int wait);
void     ur_aio_drain(struct ur_server *s);

#endif /* UR_SERVER_H */
