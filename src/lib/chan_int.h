/* SPDX-License-Identifier: MIT */
/*
 * chan_int.h - the channel's private structures (src/lib/chan*.c): one table
 * of hooks per engine (psync, io_uring, ur), used by the common batch driver
 * in chan.c.
 * Must never be installed or included by applications.
 */
#ifndef UR_CHAN_INT_H
#define UR_CHAN_INT_H

#include <pthread.h>
#include <stdint.h>
#include "ur_chan.h"

#define URCH_EXPORT __attribute__((visibility("default")))

struct urch;

/* Completion callback of the batch driver. */
typedef void (*urch_cb)(void *arg, uint64_t id, int64_t res);

struct urch_eng {
	const char *name;
	int     (*open)(struct urch *ch, const char *path, const struct urch_opts *o);
	void    (*close)(struct urch *ch);
	/* One op, synchronous: bytes or -errno. */
	int64_t (*rw1)(struct urch *ch, int write, void *buf, size_t len, uint64_t pos);
	/* Queue one op (not yet submitted): 0, -EBUSY (no room: submit and reap
	 * first) or -errno (this op fails). */
	int     (*prep)(struct urch *ch, int write, void *buf, size_t len, uint64_t pos,
			uint64_t id);
	/* Queue a force (metadata as urch_force) that starts after everything
	 * queued before it completed (a drain): 0, -EBUSY or -errno. */
	int     (*prep_force)(struct urch *ch, int metadata, uint64_t id);
	/* Submit what is queued and wait for at least one completion. >= 0 or -errno. */
	int     (*submit_wait)(struct urch *ch);
	/* Hand every available completion to cb; their number. */
	unsigned (*reap)(struct urch *ch, urch_cb cb, void *arg);
	/* Called around a batch or single op (UR: the image's ring lock). */
	void    (*enter)(struct urch *ch);
	void    (*leave)(struct urch *ch);
	int     (*reg)(struct urch *ch, size_t len, unsigned nr, void **bufs);
	int     (*unreg)(struct urch *ch);
	int64_t (*size)(struct urch *ch);
	int     (*truncate)(struct urch *ch, uint64_t size);
	int     (*force)(struct urch *ch, int metadata);
	/* wait_ns: < 0 for ever, 0 not at all (-EAGAIN), else at most that long
	 * (-ETIMEDOUT). */
	int     (*lock)(struct urch *ch, uint64_t pos, uint64_t len, int shared, int64_t wait_ns);
	int     (*unlock)(struct urch *ch, uint64_t pos, uint64_t len);
};

struct urch_pdone {
	uint64_t id;
	int64_t res;
};

struct urch {
	int engine;
	unsigned flags;
	const struct urch_eng *eng;
	int fd;                  /* host fd, or the server's handle (UR) */
	unsigned cap;            /* ops in flight at most (<= ring entries) */
	size_t max_chunk;        /* bytes per submitted piece of an op */
	uint32_t *redo;          /* cap entries: ops to resubmit (short transfers) */
	/* registered buffers: nr of len bytes from base */
	char *reg_base;
	size_t reg_len;
	unsigned reg_nr;
	int reg_owner;           /* this channel allocated them (UR: the image's) */
	/* psync: completions done in prep, handed out by reap */
	struct urch_pdone *pdone;
	unsigned npdone;
	void *priv;              /* io_uring: struct io_uring; ur: struct urch_urctx */
	char name[64];           /* UR: the file name (for locks) */
	struct urch_stats stats;
};

extern const struct urch_eng urch_eng_psync;
extern const struct urch_eng urch_eng_io_uring;
extern const struct urch_eng urch_eng_ur;

/* Host-file helpers shared by psync and io_uring (chan.c). */
int     urch_host_open(struct urch *ch, const char *path);
int64_t urch_host_size(struct urch *ch);
int     urch_host_truncate(struct urch *ch, uint64_t size);
int     urch_host_force(struct urch *ch, int metadata);
int     urch_host_lock(struct urch *ch, uint64_t pos, uint64_t len, int shared, int64_t wait_ns);
int     urch_host_unlock(struct urch *ch, uint64_t pos, uint64_t len);
/* UR: remove a name from the image of o (chan_ur.c). */
int     urch_ur_unlink(const char *path, const struct urch_opts *o);
/* Registered buffers (chan.c): record nr of len bytes from base as ch's own
 * and hand them out in bufs; forget them (the caller frees, if it must). */
void    urch_reg_set(struct urch *ch, char *base, size_t len, unsigned nr, void **bufs);
void    urch_reg_clear(struct urch *ch);
/* Fixed-buffer index of [buf, buf+len), or -1. */
int     urch_fixed_index(const struct urch *ch, const void *buf, size_t len);

#endif /* UR_CHAN_INT_H */
