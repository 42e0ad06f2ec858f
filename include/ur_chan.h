/* SPDX-License-Identifier: MIT */
/*
 * ur_chan.h - channels: positional page I/O for database engines, over the
 * kernel's io_uring (URCH_IO_URING, host files), this project's engine
 * (URCH_UR, files inside a SimpleFS image) or pread/pwrite (URCH_PSYNC, host
 * files). Part of libur_fs.so; docs/CHANNEL.md explains the semantics.
 *
 * Every call returns >= 0 on success or a negative errno value; nothing here
 * prints. A channel is used by one thread at a time (channels on one SimpleFS
 * image share one ring and one server; the library serializes them).
 * Must never: report a batch op as done when it was not, or stop a batch at
 * its first error.
 */
#ifndef UR_CHAN_H
#define UR_CHAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Engines. */
enum urch_engine {
	URCH_PSYNC = 0,     /* pread/pwrite on a host file */
	URCH_IO_URING = 1,  /* the kernel's io_uring (liburing) on a host file */
	URCH_UR = 2,        /* libur_fs rings to simplefs_server; a file inside an image */
};

/* urch_open flags. */
#define URCH_CREATE  0x01u  /* create the file if missing */
#define URCH_TRUNC   0x02u  /* truncate to 0 at open */
#define URCH_RDONLY  0x04u  /* read only (writes fail with -EBADF) */
#define URCH_DIRECT  0x08u  /* O_DIRECT (UR: the image is opened O_DIRECT); buffers,
			       positions and lengths must be aligned: urch_alloc_buf */
#define URCH_DSYNC   0x10u  /* O_DSYNC (UR: an FSYNC after each write call) */
#define URCH_EXCL    0x20u  /* UR: this process's ring is the image server's only
			       client while it lives (URFS_SETUP_EXCL): for users
			       whose state is the process's own (the SQLite VFS) */

/* Optional settings (NULL or zeroed = defaults). */
struct urch_opts {
	const char *image;        /* URCH_UR: the image ($SFS_IMAGE, else disk.sfs) */
	unsigned ring_entries;    /* ring size (default 256); bigger batches stream */
	size_t   reg_area;        /* URCH_UR: bytes for registered buffers in the shared
				     region, fixed when the image's ring starts (default 16 MiB) */
	size_t   staging;         /* URCH_UR: staging bytes (default 8 MiB) */
};

/* One op of a batch. result: bytes moved (== len when it succeeded) or -errno. */
struct urch_op {
	uint64_t pos;
	void    *buf;
	size_t   len;
	int64_t  result;
};

struct urch;

/* Errors from urch_open: -ENOSYS / -EPERM: the engine cannot run here (io_uring
 * absent or blocked); -EINVAL: bad engine/flags, or for URCH_UR a name that is
 * not a SimpleFS name (1..63 bytes, no '/'); -EBUSY: the image is mounted by
 * another program than a server, or URCH_EXCL is asked or held by another
 * client; the file's own errors (-ENOENT ...). */
int urch_open(const char *path, unsigned flags, int engine, struct urch **ch);
int urch_open_opts(const char *path, unsigned flags, int engine,
		   const struct urch_opts *opts, struct urch **ch);
/* Releases the channel's locks, unregisters its buffers, frees it. */
int urch_close(struct urch *ch);

/* Remove a file: unlink(2) for host engines; UR: the name inside the image of
 * opts (as urch_open_opts; a file still open stays readable through its
 * channels until they close). Not durable by itself: on UR, urch_force on any
 * channel of the image commits it (or the last channel's close, a clean
 * unmount); on a host file, fsync the directory. -ENOENT when absent. */
int urch_unlink(const char *path, int engine, const struct urch_opts *opts);

int urch_engine(const struct urch *ch);
/* The host fd (PSYNC, IO_URING) or the server's file handle (UR). */
int urch_fd(const struct urch *ch);
const char *urch_engine_name(int engine);

/* Aligned (4 KiB) memory, suitable for O_DIRECT. */
int  urch_alloc_buf(struct urch *ch, size_t len, void **buf);
void urch_free_buf(struct urch *ch, void *buf);

/* Positional I/O. read: bytes (0 at end of file, may be short); write: bytes. */
int64_t urch_read(struct urch *ch, void *buf, size_t len, uint64_t pos);
int64_t urch_write(struct urch *ch, const void *buf, size_t len, uint64_t pos);
/* Loop on short transfers: len, or -errno; a read meeting end of file before
 * len bytes returns -ENODATA (the bytes before it are in buf). */
int64_t urch_read_fully(struct urch *ch, void *buf, size_t len, uint64_t pos);
int64_t urch_write_fully(struct urch *ch, const void *buf, size_t len, uint64_t pos);

/* Batches: every op is attempted (any number: a batch larger than the ring
 * streams through it), short transfers are resubmitted, each op gets its own
 * result (len, or -errno; -ENODATA for a read meeting end of file; -EINVAL for
 * a position above INT64_MAX; -EFAULT for a NULL buffer). Returns the number of
 * ops that failed, or a negative errno if the call itself could not run (then
 * every op not completed carries that error too). One call submits and collects. */
int urch_batch_read_fully(struct urch *ch, struct urch_op *ops, size_t n);
int urch_batch_write_fully(struct urch *ch, struct urch_op *ops, size_t n);
/* The same writes, then urch_force(ch, metadata) in the same submission,
 * drained behind them (it starts when every write completed; io_uring:
 * IOSQE_IO_DRAIN, UR: the FSYNC op, psync: after the writes). If the force
 * fails, every op that had succeeded gets its error (not durable). n == 0:
 * just the force (its result). */
int urch_batch_write_force(struct urch *ch, struct urch_op *ops, size_t n, int metadata);

/* Registered (fixed) buffers: the channel allocates nr buffers of len bytes
 * (4 KiB aligned) and registers them with the engine (io_uring fixed buffers;
 * UR: memory inside the shared region, zero copy). Any op whose buffer lies
 * inside one of them goes as a fixed op. PSYNC: plain aligned memory.
 * -EBUSY if buffers are registered already (UR: per image). */
int urch_register_buffers(struct urch *ch, size_t len, unsigned nr, void **bufs);
int urch_unregister_buffers(struct urch *ch);

int64_t urch_size(struct urch *ch);
int urch_truncate(struct urch *ch, uint64_t size);
/* metadata 0: fdatasync; 1: fsync (UR: the FSYNC op, which commits everything). */
int urch_force(struct urch *ch, int metadata);

/* Byte-range locks; len 0 = to the end of the file (and beyond); each
 * channel owns its own, so channels contend with each other, in this and in
 * other processes. Host files: OFD locks. UR: the server's (see
 * docs/CHANNEL.md). try_lock: -EAGAIN when held elsewhere; lock: -EDEADLK
 * when waiting would close a cycle the server sees. */
int urch_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared);
/* As urch_lock, waiting at most timeout_ns nanoseconds: -ETIMEDOUT then, with
 * nothing left queued. timeout_ns 0: as urch_try_lock; < 0: as urch_lock.
 * Host files: -EOPNOTSUPP for a timeout > 0 (OFD locks have none). */
int urch_lock_timeout(struct urch *ch, uint64_t pos, uint64_t len, int shared,
		      int64_t timeout_ns);
int urch_try_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared);
int urch_unlock(struct urch *ch, uint64_t pos, uint64_t len);

/* Copy up to count bytes from src at src_pos to dst at dst_pos, stopping at
 * src's end of file: the bytes copied (0 for an empty range or src_pos past
 * the end), or -errno. copy_file_range when both are host files. */
int64_t urch_transfer_to(struct urch *src, uint64_t src_pos, uint64_t count,
			 struct urch *dst, uint64_t dst_pos);
int64_t urch_transfer_from(struct urch *dst, uint64_t dst_pos, struct urch *src,
			   uint64_t src_pos, uint64_t count);

/* What a channel has sent to its engine so far. */
struct urch_stats {
	uint64_t ops;             /* reads and writes submitted (pieces included) */
	uint64_t fixed_ops;       /* of which READ_FIXED / WRITE_FIXED (zero copy) */
};
int urch_get_stats(const struct urch *ch, struct urch_stats *st);

/* Unique op ids come from one process-wide atomic counter; the next one. */
uint64_t urch_next_op_id(void);

#ifdef __cplusplus
}
#endif
#endif /* UR_CHAN_H */
