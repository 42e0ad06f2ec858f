/* SPDX-License-Identifier: MIT */
/*
 * ur_abi.h - the shared-memory ABI between a client (libur_fs.so) and its
 * simplefs_server: the one header both sides include, and nothing else of
 * each other. docs/ABI.md writes the rules down (layout, ordering, wakeups,
 * validation, lifetimes).
 *
 * Must never: depend on anything but libc headers, change a layout without
 * bumping UR_ABI_VERSION, or contain pointers (the two processes map the
 * region at different addresses: every "address" here is a region offset).
 */
#ifndef UR_ABI_H
#define UR_ABI_H

#include <stdint.h>
#include <stdatomic.h>

#define UR_ABI_MAGIC    0x55524e47u      /* "URNG" */
#define UR_ABI_VERSION  1u

/* Limits the server enforces (a client asking for more gets -EINVAL). */
#define UR_MAX_ENTRIES  32768u           /* SQ or CQ entries, powers of two */
#define UR_IOV_MAX      1024u            /* iovecs per READV/WRITEV */
#define UR_MAX_BUFS     4096u            /* registered buffers */
#define UR_NAME_MAX     63u              /* = SFS_NAME_MAX */
#define UR_MAX_IDLE_US  100000u          /* idle_us is clamped to this (0.1 s) */

/* ---------------------------------------------------------------------------
 * Region header (offset 0). Written by the client before the server starts;
 * the server copies and validates it once and never re-reads the geometry.
 * ------------------------------------------------------------------------- */
struct ur_region_hdr {
	uint32_t magic;          /* UR_ABI_MAGIC */
	uint32_t version;        /* UR_ABI_VERSION */
	uint64_t size;           /* bytes of the whole region (memfd size) */
	uint32_t sq_entries;     /* power of two */
	uint32_t cq_entries;     /* power of two, >= sq_entries */
	uint64_t sq_ctl_off;     /* struct ur_ring_ctl of the SQ */
	uint64_t cq_ctl_off;     /* struct ur_ring_ctl of the CQ */
	uint64_t sqes_off;       /* struct ur_sqe[sq_entries], 64-byte aligned */
	uint64_t cqes_off;       /* struct ur_cqe[cq_entries], 64-byte aligned */
	uint64_t data_off;       /* data area: staging, then registered buffers */
	uint64_t data_size;
	uint64_t bufs_off;       /* registered-buffer part (inside the data area, at its end) */
	uint64_t bufs_size;
	uint32_t idle_us;        /* server spins at most this long without work before sleeping */
	uint32_t reserved0;
	/* Written by the server (informational only: the client never relies on them). */
	int32_t  server_pid;
	uint32_t server_state;   /* UR_STATE_* */
	uint64_t server_aio_reads;   /* reads issued to the image by kernel AIO (O_DIRECT) */
	uint64_t reserved[6];
};

#define UR_STATE_STARTING 0u
#define UR_STATE_READY    1u
#define UR_STATE_FAILED   2u
#define UR_STATE_EXITED   3u
#define UR_STATE_BROKEN   4u     /* the client corrupted the ring; no longer served */

/* One direction of the ring: each word the two sides write on its own
 * 64-byte line, so producer and consumer never share a cache line. */
struct ur_ring_ctl {
	uint32_t head;           /* consumer's free-running counter */
	uint8_t  pad0[60];
	uint32_t tail;           /* producer's free-running counter */
	uint8_t  pad1[60];
	uint32_t flags;          /* UR_SQ_NEED_WAKEUP (SQ) / UR_CQ_NEED_WAKEUP (CQ) */
	uint32_t owner_cpu;      /* hint: the CPU (+1, 0 unknown/asleep) the consumer of
				    this ring runs on: the server (SQ), the client (CQ).
				    A spinner whose peer is on its own CPU yields at once. */
	uint8_t  pad2[56];
};

/* SQ flags (written by the server): it is asleep; ring the SQ doorbell. */
#define UR_SQ_NEED_WAKEUP 0x1u
/* CQ flags (set by a client about to sleep, cleared by whoever wakes it). */
#define UR_CQ_NEED_WAKEUP 0x1u

/* ---------------------------------------------------------------------------
 * Submission queue entry, 64 bytes. addr/addr2 are region offsets.
 * ------------------------------------------------------------------------- */
struct ur_sqe {
	uint8_t  opcode;         /* UR_OP_* */
	uint8_t  flags;          /* UR_SQE_* */
	uint16_t buf_index;      /* READ_FIXED / WRITE_FIXED: registered buffer */
	int32_t  fd;             /* server file handle (from OPENAT), or -1 */
	uint64_t off;            /* file offset; UR_OFF_POS (-1): the file position */
	uint64_t addr;           /* buffer / iovec array / name (region offset) */
	uint32_t len;            /* bytes, iovec count, name length, or errno (FAIL) */
	uint32_t op_flags;       /* OPENAT: UR_O_* */
	uint64_t user_data;      /* echoed in the CQE */
	uint64_t addr2;          /* STATX: struct ur_statx output (region offset);
				    LOCK with UR_LOCK_WAIT: timeout in ns (0: none) */
	uint64_t reserved[2];    /* must be zero */
};

/* Completion queue entry, 16 bytes. res: byte count, fd, 0, or -errno. */
struct ur_cqe {
	uint64_t user_data;
	int32_t  res;
	uint32_t flags;          /* none defined yet: always 0 */
};

/* iovec in the region (READV/WRITEV), and a registered buffer's place. */
struct ur_iovec {
	uint64_t off;
	uint64_t len;
};

/* STATX-like result. */
struct ur_statx {
	uint64_t size;           /* bytes */
	uint64_t blocks;         /* 4 KiB blocks allocated */
	uint64_t mtime_ns;       /* CLOCK_REALTIME */
	uint32_t ino;
	uint32_t reserved;
};

_Static_assert(sizeof(struct ur_sqe) == 64, "SQE is 64 bytes");
_Static_assert(sizeof(struct ur_cqe) == 16, "CQE is 16 bytes");
_Static_assert(sizeof(struct ur_ring_ctl) == 192, "ring ctl is 3 cache lines");
_Static_assert(sizeof(struct ur_region_hdr) == 160, "region header size");
_Static_assert(sizeof(struct ur_iovec) == 16, "ur_iovec size");
_Static_assert(sizeof(struct ur_statx) == 32, "ur_statx size");

#define UR_OFF_POS ((uint64_t)-1)

/* Opcodes. */
enum {
	UR_OP_NOP = 0,
	UR_OP_OPENAT,            /* addr,len: name; op_flags: UR_O_*; res: fd */
	UR_OP_CLOSE,             /* fd */
	UR_OP_READ,              /* fd, addr, len, off */
	UR_OP_WRITE,
	UR_OP_READV,             /* fd, addr: struct ur_iovec[len], off */
	UR_OP_WRITEV,
	UR_OP_READ_FIXED,        /* fd, addr, len, off, buf_index */
	UR_OP_WRITE_FIXED,
	UR_OP_FSYNC,             /* fd */
	UR_OP_FTRUNCATE,         /* fd, off: new size */
	UR_OP_UNLINK,            /* addr,len: name */
	UR_OP_STATX,             /* fd >= 0, or fd = -1 and addr,len: name; addr2: out */
	UR_OP_REGISTER_BUFFERS,  /* addr: struct ur_iovec[len]; len 0 unregisters */
	UR_OP_FAIL,              /* client-side error carried in order: res = -len */
	UR_OP_LOCK,              /* fd, off: start, addr: length (0: to EOF and beyond),
				    op_flags: UR_LOCK_*, addr2: with UR_LOCK_WAIT, a timeout
				    in ns (0: none; -ETIMEDOUT when it passes);
				    res 0 or -errno (docs/ABI.md, "Locks") */
	UR_OP_UNLOCK,            /* fd, off, addr: the range to release */
	UR_OP_ASYNC_CANCEL,      /* fd -1, addr: the user_data of this ring's queued
				    LOCK to end (its CQE: -ECANCELED); res 0, -ENOENT */
	UR_OP_LAST
};

/* SQE flags. */
#define UR_SQE_IO_LINK   0x01u   /* next SQE starts when this one succeeds */
#define UR_SQE_IO_DRAIN  0x02u   /* start after every earlier SQE completed */
#define UR_SQE_VALID     (UR_SQE_IO_LINK | UR_SQE_IO_DRAIN)

/* OPENAT flags (= SFS_O_*). */
#define UR_O_CREAT   0x1u
#define UR_O_TRUNC   0x2u
#define UR_O_EXCL    0x4u
#define UR_O_APPEND  0x8u
#define UR_O_RDONLY  0x10u
#define UR_O_VALID   0x1fu

/* LOCK flags. Owner of a lock: the file handle of the ring that took it. */
#define UR_LOCK_SHARED 0x1u      /* a read lock (else exclusive) */
#define UR_LOCK_WAIT   0x2u      /* held elsewhere: the CQE comes when granted
				    (else -EAGAIN at once) */
#define UR_LOCK_VALID  0x3u

/* Start-up handshake: the server's first and only message on the liveness
 * socket (SOCK_SEQPACKET), then the socket stays silent until one side dies. */
struct ur_hello {
	int32_t  err;            /* 0: ready; else -errno */
	int32_t  pid;
	char     msg[248];       /* NUL-terminated reason when err != 0 */
};

/* Attaching to a running server (docs/ABI.md, "Many clients"): a later
 * client connects (SOCK_SEQPACKET) to the server's socket and sends one
 * ur_attach with SCM_RIGHTS [region memfd, SQ doorbell, CQ doorbell]; the
 * connection is its liveness socket, and the server's ur_hello comes back
 * on it. */
struct ur_attach {
	uint32_t magic;          /* UR_ABI_MAGIC */
	uint32_t version;        /* UR_ABI_VERSION */
	uint32_t flags;          /* UR_ATTACH_*: must match how the server mounted */
	uint32_t reserved;       /* 0 */
};
#define UR_ATTACH_RDONLY 0x1u
#define UR_ATTACH_DIRECT 0x2u
#define UR_ATTACH_EXCL   0x4u        /* the only client while it lives */
#define UR_ATTACH_VALID  0x7u

/* The server's last word on a liveness socket, after the client shut its
 * side (or at the server's exit): an ur_hello with msg UR_BYE_LAST when this
 * was the last client (err: the unmount's result, and the server exits
 * now), UR_BYE_MORE when others remain (err 0). */
#define UR_BYE_LAST "bye:last"
#define UR_BYE_MORE "bye:more"

/* Per client (docs/ABI.md, "Limits"). */
#define UR_CLIENT_MAX_FILES 1024u        /* open handles; more: -EMFILE */
#define UR_MAX_CLIENTS      64u          /* rings per server; more: refused, -EUSERS */
#define UR_CLIENT_MAX_LOCKS 1024u        /* lock records held; more: -ENOLCK */
#define UR_CLIENT_MAX_LOCKWAITS 256u     /* LOCKs waiting at once; more: -ENOLCK */
/* Per client process (all its rings, by the pid of the liveness socket's
 * peer) and per server (all rings): docs/ABI.md, "Locks". */
#define UR_PROC_MAX_LOCKS       2560u
#define UR_PROC_MAX_LOCKWAITS   384u
#define UR_SERVER_MAX_LOCKS     8192u
#define UR_SERVER_MAX_LOCKWAITS 1024u

/* Fixed descriptor numbers in the server when started by the library. */
#define UR_FD_REGION 3
#define UR_FD_SQ_DOORBELL 4
#define UR_FD_CQ_DOORBELL 5
#define UR_FD_LIVE 6

/* ---------------------------------------------------------------------------
 * Ordering helpers (C11 atomics on the plain u32 words of the region).
 * ------------------------------------------------------------------------- */
static inline uint32_t ur_load_acquire(const uint32_t *p)
{
	return atomic_load_explicit((_Atomic uint32_t *)p, memory_order_acquire);
}
static inline uint32_t ur_load_relaxed(const uint32_t *p)
{
	return atomic_load_explicit((_Atomic uint32_t *)p, memory_order_relaxed);
}
static inline void ur_store_release(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_release);
}
static inline void ur_store_relaxed(uint32_t *p, uint32_t v)
{
	atomic_store_explicit((_Atomic uint32_t *)p, v, memory_order_relaxed);
}
static inline void ur_fetch_or(uint32_t *p, uint32_t v)
{
	atomic_fetch_or_explicit((_Atomic uint32_t *)p, v, memory_order_seq_cst);
}
static inline uint32_t ur_fetch_and(uint32_t *p, uint32_t v)
{
	return atomic_fetch_and_explicit((_Atomic uint32_t *)p, v, memory_order_seq_cst);
}
/* The full fence of the wakeup protocol (store flag/tail, fence, load). */
static inline void ur_smp_mb(void)
{
	atomic_thread_fence(memory_order_seq_cst);
}
static inline void ur_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif /* UR_ABI_H */
