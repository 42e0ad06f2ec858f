/* SPDX-License-Identifier: MIT */
/*
 * ur_fs.h - libur_fs: io_uring in user space, on a SimpleFS image.
 *
 * The public interface of libur_fs.so. Two layers:
 *   - the ring API, shaped like liburing with the prefix urfs_ for io_uring_
 *     (urfs(7) lists it, each function has its man page): queue init/exit, get_sqe, prep
 *     helpers, submit, wait/peek CQEs, registered buffers;
 *   - the simple API of the original design on one default ring: ur_init,
 *     ur_open, ur_read, ur_write, ur_submit, ur_wait, ur_peek_cqe, ur_close,
 *     ur_shutdown.
 * One simplefs_server process mounts an image and serves the rings of all its
 * client processes through shared memory: the first ring on an image starts
 * it, later rings attach to it (include/ur_abi.h, docs/ABI.md).
 *
 * Every call returns >= 0 on success or a negative errno value; nothing here
 * prints. A ring is used by one thread at a time, and by the process that
 * created it (a forked child must not use it; it keeps the server alive for
 * as long as it holds the inherited descriptors). Buffers of ordinary
 * (non-fixed) reads and writes, and READV iovec arrays, must stay valid until
 * their CQE has been returned by a peek/wait call; names and write data are
 * copied at submit time.
 */
#ifndef UR_FS_H
#define UR_FS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include "ur_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The SQE and CQE are the shared-memory ones. */
#define urfs_sqe ur_sqe
#define urfs_cqe ur_cqe
#define urfs_statx ur_statx

/* SQE flags (IOSQE_*). */
#define URFS_IOSQE_IO_LINK   UR_SQE_IO_LINK
#define URFS_IOSQE_IO_DRAIN  UR_SQE_IO_DRAIN

/* Open flags for urfs_prep_openat / ur_open. */
#define URFS_O_CREAT   UR_O_CREAT
#define URFS_O_TRUNC   UR_O_TRUNC
#define URFS_O_EXCL    UR_O_EXCL
#define URFS_O_APPEND  UR_O_APPEND
#define URFS_O_RDONLY  UR_O_RDONLY
#define URFS_LOCK_SHARED UR_LOCK_SHARED
#define URFS_LOCK_WAIT   UR_LOCK_WAIT

/* Offset meaning "at the file position" (and advance it). */
#define URFS_POS ((uint64_t)-1)

/* urfs_params.flags */
#define URFS_SETUP_CREATE   0x01u  /* format a default image if it is missing */
#define URFS_SETUP_RDONLY   0x02u  /* mount read-only (shared lock) */
#define URFS_SETUP_DIRECT   0x04u  /* server opens the image O_DIRECT */
#define URFS_SETUP_NOIMAGE  0x08u  /* no image at all: transport only (NOP) */
#define URFS_SETUP_IDLE     0x10u  /* use idle_us as given (0 = sleep at once) */
#define URFS_SETUP_RAW      0x20u  /* submit SQEs untranslated: addr fields are
				      region offsets, user_data goes as is (tests) */
#define URFS_SETUP_EXCL     0x40u  /* the server serves no other client while this
				      ring lives (-EBUSY both ways): for users whose
				      locks are their own process's (channels, SQLite) */

struct urfs_params {
	const char *image;        /* NULL: $SFS_IMAGE or disk.sfs */
	const char *server;       /* NULL: $UR_SERVER, else beside the library,
				     beside the program, then the install's
				     libexec directory; given: only that one */
	unsigned flags;           /* URFS_SETUP_* */
	unsigned cq_entries;      /* 0: twice the SQ entries, at most 32768 */
	unsigned idle_us;         /* server spin before sleeping, at most (default 1000; adaptive within it) */
	unsigned wait_spin_us;    /* client spin in wait before sleeping (default 50) */
	size_t   staging_size;    /* bytes for ordinary buffers (default 4 MiB) */
	size_t   buf_area_size;   /* bytes for registered buffers (default 4 MiB) */
	/* out */
	int      server_pid;
	char     errmsg[256];     /* why init failed ("disk.sfs: in use by pid 1234", "8 CQ
				     entries: at least the SQ's 16, ...", ...);
				     empty only where the errno says it all
				     (urfs_queue_init(3)) */
};

struct urfs__priv;

struct urfs_sq {
	uint32_t *khead, *ktail, *kflags, *kcpu;
	struct urfs_sqe *sqes;
	uint32_t sqe_head;        /* first SQE not yet submitted */
	uint32_t sqe_tail;        /* next SQE get_sqe hands out */
	uint32_t ring_mask, ring_entries;
};

struct urfs_cq {
	uint32_t *khead, *ktail, *kflags, *kcpu;
	struct urfs_cqe *cqes;
	uint32_t head;            /* private copy of *khead */
	uint32_t ready;           /* CQEs before this are ready for the caller */
	uint32_t ring_mask, ring_entries;
};

struct urfs_ring {
	struct urfs_sq sq;
	struct urfs_cq cq;
	unsigned flags;
	int dead;                 /* the server is gone */
	uint8_t *region;
	size_t region_size;
	int sq_fd, cq_fd, live_fd;
	int server_pid;
	struct urfs__priv *priv;
};

/* ---------------------------------------------------------------------------
 * Setup and teardown
 * ------------------------------------------------------------------------- */
int  urfs_queue_init(unsigned entries, struct urfs_ring *ring, unsigned flags);
int  urfs_queue_init_params(unsigned entries, struct urfs_ring *ring, struct urfs_params *p);
/* Leaves the server and waits until it has released the ring (closed its
 * files). With other clients attached the server goes on serving them; after
 * its last client it unmounts the image and exits, and that client's call
 * returns once it has. Waits at most 120 s ($UR_EXIT_TIMEOUT_MS); a server
 * silent that long is left as it is, never signalled (others may share it). */
void urfs_queue_exit(struct urfs_ring *ring);

/* ---------------------------------------------------------------------------
 * Submission and completion
 * ------------------------------------------------------------------------- */
/* Hand the prepared SQEs to the server: the number handed over. Fewer (even
 * 0) when the staging area for ordinary buffers is full: the rest stay
 * queued and go out with the next submit or while a wait call waits. */
int  urfs_submit(struct urfs_ring *ring);
int  urfs_submit_and_wait(struct urfs_ring *ring, unsigned wait_nr);
int  urfs_wait_cqe(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr);
int  urfs_wait_cqe_nr(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr, unsigned wait_nr);
/* ts: relative timeout; -ETIME when it passes. */
int  urfs_wait_cqe_timeout(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr, struct timespec *ts);
int  urfs_peek_cqe(struct urfs_ring *ring, struct urfs_cqe **cqe_ptr);
unsigned urfs_peek_batch_cqe(struct urfs_ring *ring, struct urfs_cqe **cqes, unsigned count);
/* CQEs ready to be seen. */
unsigned urfs_cq_ready(struct urfs_ring *ring);
/* Internal, for the for-each macro: finish arrived CQEs, return the ready end. */
uint32_t __urfs_cq_collect(struct urfs_ring *ring);

/* Registered buffers. iovecs[i].iov_len says how big buffer i must be;
 * iov_base is filled in with an address inside the shared region (the
 * server cannot see the caller's memory). Use them with the _fixed preps.
 * -EBUSY if buffers are registered already or I/O is in flight. */
int  urfs_register_buffers(struct urfs_ring *ring, struct iovec *iovecs, unsigned nr);
int  urfs_unregister_buffers(struct urfs_ring *ring);

/* ---------------------------------------------------------------------------
 * Inline helpers
 * ------------------------------------------------------------------------- */
static inline struct urfs_sqe *urfs_get_sqe(struct urfs_ring *ring)
{
	struct urfs_sq *sq = &ring->sq;
	uint32_t head = ur_load_acquire(sq->khead);
	if (sq->sqe_tail - head >= sq->ring_entries)
		return NULL;
	return &sq->sqes[sq->sqe_tail++ & sq->ring_mask];
}

static inline unsigned urfs_sq_ready(const struct urfs_ring *ring)
{
	return ring->sq.sqe_tail - ring->sq.sqe_head;
}

static inline unsigned urfs_sq_space_left(const struct urfs_ring *ring)
{
	return ring->sq.ring_entries - (ring->sq.sqe_tail - ur_load_acquire(ring->sq.khead));
}

static inline void urfs_cq_advance(struct urfs_ring *ring, unsigned nr)
{
	if (nr) {
		ring->cq.head += nr;
		ur_store_release(ring->cq.khead, ring->cq.head);
	}
}

static inline void urfs_cqe_seen(struct urfs_ring *ring, struct urfs_cqe *cqe)
{
	if (cqe)
		urfs_cq_advance(ring, 1);
}

#define urfs_for_each_cqe(ring, head, cqe)                                        \
	for (uint32_t __urfs_end = ((head) = (ring)->cq.head, __urfs_cq_collect(ring)); \
	     (head) != __urfs_end &&                                              \
	     ((cqe) = &(ring)->cq.cqes[(head) & (ring)->cq.ring_mask], 1);        \
	     (head)++)

static inline void urfs_sqe_set_data64(struct urfs_sqe *sqe, uint64_t data)
{
	sqe->user_data = data;
}
static inline void urfs_sqe_set_data(struct urfs_sqe *sqe, void *data)
{
	sqe->user_data = (uint64_t)(uintptr_t)data;
}
static inline uint64_t urfs_cqe_get_data64(const struct urfs_cqe *cqe)
{
	return cqe->user_data;
}
static inline void *urfs_cqe_get_data(const struct urfs_cqe *cqe)
{
	return (void *)(uintptr_t)cqe->user_data;
}
static inline void urfs_sqe_set_flags(struct urfs_sqe *sqe, unsigned flags)
{
	sqe->flags = (uint8_t)flags;
}

static inline void urfs_prep_rw(int op, struct urfs_sqe *sqe, int fd, const void *addr,
				unsigned len, uint64_t offset)
{
	sqe->opcode = (uint8_t)op;
	sqe->flags = 0;
	sqe->buf_index = 0;
	sqe->fd = fd;
	sqe->off = offset;
	sqe->addr = (uint64_t)(uintptr_t)addr;
	sqe->len = len;
	sqe->op_flags = 0;
	sqe->user_data = 0;
	sqe->addr2 = 0;
	sqe->reserved[0] = 0;
	sqe->reserved[1] = 0;
}

static inline void urfs_prep_nop(struct urfs_sqe *sqe)
{
	urfs_prep_rw(UR_OP_NOP, sqe, -1, NULL, 0, 0);
}
/* flags: URFS_O_*. The result is the file handle. */
static inline void urfs_prep_openat(struct urfs_sqe *sqe, const char *path, unsigned flags)
{
	urfs_prep_rw(UR_OP_OPENAT, sqe, -1, path, (unsigned)strlen(path), 0);
	sqe->op_flags = flags;
}
static inline void urfs_prep_close(struct urfs_sqe *sqe, int fd)
{
	urfs_prep_rw(UR_OP_CLOSE, sqe, fd, NULL, 0, 0);
}
static inline void urfs_prep_read(struct urfs_sqe *sqe, int fd, void *buf, unsigned nbytes,
				  uint64_t offset)
{
	urfs_prep_rw(UR_OP_READ, sqe, fd, buf, nbytes, offset);
}
static inline void urfs_prep_write(struct urfs_sqe *sqe, int fd, const void *buf, unsigned nbytes,
				   uint64_t offset)
{
	urfs_prep_rw(UR_OP_WRITE, sqe, fd, buf, nbytes, offset);
}
static inline void urfs_prep_readv(struct urfs_sqe *sqe, int fd, const struct iovec *iovecs,
				   unsigned nr_vecs, uint64_t offset)
{
	urfs_prep_rw(UR_OP_READV, sqe, fd, iovecs, nr_vecs, offset);
}
static inline void urfs_prep_writev(struct urfs_sqe *sqe, int fd, const struct iovec *iovecs,
				    unsigned nr_vecs, uint64_t offset)
{
	urfs_prep_rw(UR_OP_WRITEV, sqe, fd, iovecs, nr_vecs, offset);
}
static inline void urfs_prep_read_fixed(struct urfs_sqe *sqe, int fd, void *buf, unsigned nbytes,
					uint64_t offset, int buf_index)
{
	urfs_prep_rw(UR_OP_READ_FIXED, sqe, fd, buf, nbytes, offset);
	sqe->buf_index = (uint16_t)buf_index;
}
static inline void urfs_prep_write_fixed(struct urfs_sqe *sqe, int fd, const void *buf,
					 unsigned nbytes, uint64_t offset, int buf_index)
{
	urfs_prep_rw(UR_OP_WRITE_FIXED, sqe, fd, buf, nbytes, offset);
	sqe->buf_index = (uint16_t)buf_index;
}
static inline void urfs_prep_fsync(struct urfs_sqe *sqe, int fd, unsigned fsync_flags)
{
	(void)fsync_flags;
	urfs_prep_rw(UR_OP_FSYNC, sqe, fd, NULL, 0, 0);
}
/* Byte-range lock on [pos, pos + len) of handle fd (len 0: to the end of the
 * file and beyond); flags: URFS_LOCK_SHARED (else exclusive), URFS_LOCK_WAIT
 * (the CQE comes when granted; else -EAGAIN at once when held elsewhere). */
static inline void urfs_prep_lock(struct urfs_sqe *sqe, int fd, uint64_t pos, uint64_t len,
				  unsigned flags)
{
	urfs_prep_rw(UR_OP_LOCK, sqe, fd, NULL, 0, pos);
	sqe->addr = len;
	sqe->op_flags = flags;
}
/* A waiting lock (URFS_LOCK_WAIT added to flags) that gives up after
 * timeout_ns nanoseconds (0: never): its CQE is then -ETIMEDOUT, and nothing
 * of it stays queued. The clock starts when the server takes the SQE. */
static inline void urfs_prep_lock_timeout(struct urfs_sqe *sqe, int fd, uint64_t pos, uint64_t len,
					  unsigned flags, uint64_t timeout_ns)
{
	urfs_prep_lock(sqe, fd, pos, len, flags | URFS_LOCK_WAIT);
	sqe->addr2 = timeout_ns;
}
/* End this ring's queued waiting lock whose user_data is user_data: its CQE
 * is -ECANCELED, this SQE's 0 (-ENOENT: no such wait). flags: 0. */
static inline void urfs_prep_cancel64(struct urfs_sqe *sqe, uint64_t user_data, int flags)
{
	urfs_prep_rw(UR_OP_ASYNC_CANCEL, sqe, -1, NULL, 0, 0);
	sqe->addr = user_data;
	sqe->op_flags = (unsigned)flags;
}
static inline void urfs_prep_unlock(struct urfs_sqe *sqe, int fd, uint64_t pos, uint64_t len)
{
	urfs_prep_rw(UR_OP_UNLOCK, sqe, fd, NULL, 0, pos);
	sqe->addr = len;
}
static inline void urfs_prep_ftruncate(struct urfs_sqe *sqe, int fd, uint64_t len)
{
	urfs_prep_rw(UR_OP_FTRUNCATE, sqe, fd, NULL, 0, len);
}
static inline void urfs_prep_unlink(struct urfs_sqe *sqe, const char *path)
{
	urfs_prep_rw(UR_OP_UNLINK, sqe, -1, path, (unsigned)strlen(path), 0);
}
/* Size query: by handle (fd >= 0, path NULL) or by name (fd -1). */
static inline void urfs_prep_statx(struct urfs_sqe *sqe, int fd, const char *path,
				   struct urfs_statx *out)
{
	urfs_prep_rw(UR_OP_STATX, sqe, path ? -1 : fd, path, path ? (unsigned)strlen(path) : 0, 0);
	sqe->addr2 = (uint64_t)(uintptr_t)out;
}

/* ---------------------------------------------------------------------------
 * The simple API, on one default ring (not thread-safe). user_data values
 * with the top bit set are reserved.
 * ------------------------------------------------------------------------- */
struct ur_completion {
	uint64_t user_data;
	int32_t  res;              /* bytes, or -errno */
};

/* Start the default ring on the default image ($SFS_IMAGE or disk.sfs,
 * created if missing). entries 0: 64. */
int  ur_init(unsigned entries);
/* Same on a given image; flags: URFS_SETUP_*. */
int  ur_init_image(const char *image, unsigned entries, unsigned flags);
/* Why the last ur_init failed, or "". */
const char *ur_errmsg(void);
/* Synchronous open: returns a file handle. flags: URFS_O_* (0: create). */
int  ur_open(const char *name, unsigned flags);
/* Queue a read/write (offset URFS_POS: the file position). 0 or -errno;
 * the request goes to the server at the next ur_submit (or when the queue is
 * full). The read's data is in buf when its completion is returned. */
int  ur_read(int fd, void *buf, size_t len, uint64_t offset, uint64_t user_data);
int  ur_write(int fd, const void *buf, size_t len, uint64_t offset, uint64_t user_data);
/* Hand queued requests to the server: the number handed, or -errno. */
int  ur_submit(void);
/* Wait for one completion. */
int  ur_wait(struct ur_completion *c);
/* One completion if there is one: 0, or -EAGAIN. */
int  ur_peek_cqe(struct ur_completion *c);
/* Synchronous close. */
int  ur_close(int fd);
/* urfs_queue_exit on the default ring: 0 when the server released it
 * cleanly (and, for its last client, unmounted and exited cleanly); with
 * other clients attached the server goes on. -ENOTCONN: not started;
 * -EPIPE: the server had died; -ETIMEDOUT: it said nothing within the exit
 * bound; -EIO: it died meanwhile or did not unmount cleanly (ur_init(3)). */
int  ur_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif /* UR_FS_H */
