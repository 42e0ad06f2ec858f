/*
 * server.h - simplefs_server's private state: one client ring, its private
 * copies of everything the server must not re-read from shared memory, and
 * the backend it dispatches to.
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

/* spin.c: the idle spin learned from the ring's inter-arrival gaps. */
#define UR_SPIN_HIST      8u          /* gaps remembered */
#define UR_SPIN_WORTH_NS  100000u     /* longer gaps are not worth a spin */
#define UR_SPIN_MIN_NS    20000u      /* the least spin when spinning pays */
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
	uint64_t n_sqe, n_sleep, n_wake_client, n_aio, n_aio_w, n_busy;
};

extern volatile sig_atomic_t ur_server_stop;

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
/* Serve until the client goes away (or a stop signal). Returns 0. */
int  ur_server_run(struct ur_server *s);
/* One pass of the loop without spinning or sleeping: serve the SQEs pending
 * now (as many as the CQ has room for); returns how many were taken. For
 * drivers that run the server in-process (tests/test_ur_inproc.h, the fuzzer). */
uint32_t ur_server_poll(struct ur_server *s);
/* Close the client's files. */
void ur_server_close_files(struct ur_server *s);

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
