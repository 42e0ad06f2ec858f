/* SPDX-License-Identifier: MIT */
/*
 * opdef.h - the emulated ring's opcode table (opdef.c) and the entry points of
 * each family of operations, as the kernel's io_uring/opdef.h: one row per
 * opcode, read by preparation (submit.c), dispatch (exec.c) and the probe.
 *
 * Must never: hold a fact the table has a column for anywhere else (a list of
 * opcodes in a condition): a row is the single source, so the probe cannot
 * report what dispatch would refuse, nor a new opcode miss a check.
 */
#ifndef URING_OPDEF_H
#define URING_OPDEF_H

#include <errno.h>
#include <poll.h>
#include <string.h>
#include "uring_int.h"

/* where an op starts: inline (it cannot block, or decides at run time: reads,
 * sends, polls), or on a worker (it may block); 0: not emulated */
enum { W_INLINE = 1, W_WORKER = 2 };
/* SQE fields an op does not use and the kernel's prep refuses when not 0 */
enum { Z_OFF = 1, Z_LEN = 2, Z_OPF = 4, Z_BUF = 8, Z_SFD = 16, Z_A3 = 32, Z_P2 = 64, Z_ADDR = 128 };
/* what sqe->ioprio may hold: nothing, an I/O priority (class and level), or
 * flags of the op that its prep checks */
enum { IOP_NONE = 0, IOP_CLASS, IOP_FLAGS };

/* prep: validates and copies what the SQE points to, once, at submission (0 or
 * -errno: the request's result). issue: runs it in ctx (CTX_*): its result, or
 * Q_QUEUED when someone else completes it; *run gets what became ready. */
typedef int (*op_prep_fn)(struct emu_ring *r, struct ureq *q);
typedef int32_t (*op_issue_fn)(struct ureq *q, int ctx, struct ureq **run);

struct op_def {
	uint8_t where;           /* W_*, 0: not emulated (the probe says so, prep -EINVAL) */
	uint8_t zero;            /* Z_* fields that must be 0 (-EINVAL, before the file) */
	uint8_t takes_file;      /* IOSQE_FIXED_FILE with no registered table: -EBADF */
	uint8_t buffer_select;   /* takes IOSQE_BUFFER_SELECT (else -EOPNOTSUPP) */
	uint8_t ioprio;          /* IOP_* */
	uint8_t async_own;       /* IOSQE_ASYNC does not punt it at submission: it runs
				  * inline and decides itself (a read, a send, a wait) */
	uint8_t rw;              /* a read or write of a file (short transfers) */
	uint8_t hash_reg;        /* a write: on a regular file its worker is the file's one
				  * (hashed work, wq.c), as the kernel's hash_reg_file */
	op_prep_fn prep;         /* NULL: the common checks are all */
	op_issue_fn issue;
	op_prep_fn stable;       /* one that runs after its submission (a link's member, one a
				  * drain holds back) copies what it reads of the program's
				  * memory now, as the kernel's prep does (FEAT_SUBMIT_STABLE):
				  * its iovec array, its msghdr; NULL: nothing to copy */
};

extern const struct op_def op_defs[IORING_OP_LAST];

static inline int op_supported(unsigned op)
{
	return op < IORING_OP_LAST && op_defs[op].where != 0;
}

void op_fill_probe(struct io_uring_probe *p, unsigned n);

/* rw.c */
int rw_prep(struct emu_ring *r, struct ureq *q);
int32_t op_rw(struct ureq *q, int ctx, struct ureq **run);
void rw_hashed_run(struct ureq **v, int n, struct ureq **held);
/* net.c */
int send_prep(struct emu_ring *r, struct ureq *q);
int send_zc_prep(struct emu_ring *r, struct ureq *q);
int recv_prep(struct emu_ring *r, struct ureq *q);
int accept_prep(struct emu_ring *r, struct ureq *q);
int msg_stable(struct emu_ring *r, struct ureq *q);
int32_t op_sendrecv(struct ureq *q, int ctx, struct ureq **run);
int32_t op_recv(struct ureq *q, int ctx, struct ureq **run);
int32_t op_accept(struct ureq *q, int ctx, struct ureq **run);
int32_t op_connect(struct ureq *q, int ctx, struct ureq **run);
int32_t op_shutdown(struct ureq *q, int ctx, struct ureq **run);
int32_t op_socket(struct ureq *q, int ctx, struct ureq **run);
/* openclose.c */
int open_prep(struct emu_ring *r, struct ureq *q);
int close_prep(struct emu_ring *r, struct ureq *q);
int32_t op_open(struct ureq *q, int ctx, struct ureq **run);
int32_t op_close(struct ureq *q, int ctx, struct ureq **run);
/* fs.c */
int unlink_prep(struct emu_ring *r, struct ureq *q);
int mkdir_prep(struct emu_ring *r, struct ureq *q);
int link_prep(struct emu_ring *r, struct ureq *q);
int32_t op_renameat(struct ureq *q, int ctx, struct ureq **run);
int32_t op_unlinkat(struct ureq *q, int ctx, struct ureq **run);
int32_t op_mkdirat(struct ureq *q, int ctx, struct ureq **run);
int32_t op_symlinkat(struct ureq *q, int ctx, struct ureq **run);
int32_t op_linkat(struct ureq *q, int ctx, struct ureq **run);
/* statx.c */
int statx_prep(struct emu_ring *r, struct ureq *q);
int32_t op_statx(struct ureq *q, int ctx, struct ureq **run);
/* xattr.c */
int xattr_prep(struct emu_ring *r, struct ureq *q);
int fxattr_prep(struct emu_ring *r, struct ureq *q);
int32_t op_fsetxattr(struct ureq *q, int ctx, struct ureq **run);
int32_t op_fgetxattr(struct ureq *q, int ctx, struct ureq **run);
int32_t op_setxattr(struct ureq *q, int ctx, struct ureq **run);
int32_t op_getxattr(struct ureq *q, int ctx, struct ureq **run);
/* sync.c */
int fsync_prep(struct emu_ring *r, struct ureq *q);
int32_t op_fsync(struct ureq *q, int ctx, struct ureq **run);
int32_t op_sync_file_range(struct ureq *q, int ctx, struct ureq **run);
int32_t op_fallocate(struct ureq *q, int ctx, struct ureq **run);
/* advise.c */
int32_t op_fadvise(struct ureq *q, int ctx, struct ureq **run);
int32_t op_madvise(struct ureq *q, int ctx, struct ureq **run);
/* epoll.c */
int32_t op_epoll_ctl(struct ureq *q, int ctx, struct ureq **run);
/* splice.c */
int32_t op_splice(struct ureq *q, int ctx, struct ureq **run);
/* msg_ring.c */
int32_t op_msg_ring(struct ureq *q, int ctx, struct ureq **run);
/* timeout.c */
int timeout_prep(struct emu_ring *r, struct ureq *q);
int timeout_remove_prep(struct emu_ring *r, struct ureq *q);
int32_t op_timeout(struct ureq *q, int ctx, struct ureq **run);
int32_t op_link_timeout(struct ureq *q, int ctx, struct ureq **run);
int32_t op_timeout_remove(struct ureq *q, int ctx, struct ureq **run);
/* poll.c */
int poll_add_prep(struct emu_ring *r, struct ureq *q);
int32_t op_poll_add(struct ureq *q, int ctx, struct ureq **run);
int32_t op_poll_remove(struct ureq *q, int ctx, struct ureq **run);
/* cancel.c */
int32_t op_cancel(struct ureq *q, int ctx, struct ureq **run);
/* rw.c */
int exec_file_is_socket(struct ureq *q);
int exec_fixed_range(struct ureq *q);
int exec_rw_carry(struct ureq *q, uint32_t done);
int rw_stable(struct emu_ring *r, struct ureq *q);
ssize_t exec_sys_rw(int wr, int fd, const struct iovec *iov, int niov, int64_t off, int flags);
int exec_fd_mode_refuses(int fd, int wr);
/* kbuf.c */
int32_t op_provide(struct ureq *q, int ctx, struct ureq **run);
int32_t op_remove_bufs(struct ureq *q, int ctx, struct ureq **run);
/* filetable.c */
int32_t op_files_update(struct ureq *q, int ctx, struct ureq **run);
/* exec.c */
int32_t op_nop(struct ureq *q, int ctx, struct ureq **run);

/* ---- helpers the families share ---- */

/* RWF_ flags up to RWF_NOSIGNAL (0x100): a kernel may know them (the read or
 * write system call says); above, none does (6.18 refuses 0x200). RWF_REFUSED:
 * what the request path looks at before the system call (the fast path leaves
 * them to it). */
#define RWF_KNOWN 0x1ffu
#define RWF_REFUSED ((unsigned)RWF_HIPRI | ~RWF_KNOWN)

/* q's file (plain or fixed) into q->fe and q->fd */
static inline int req_file(struct ureq *q)
{
	int e = exec_file(q->r, q->sqe.fd, (q->sqe.flags & IOSQE_FIXED_FILE) ? 1 : 0, &q->fe);
	if (e == 0)
		q->fd = q->fe.fd;
	return e;
}

static inline int32_t ret_errno(long r)
{
	return r < 0 ? -errno : (int32_t)r;
}

static inline int ready_now(int fd, short ev)
{
	struct pollfd p = { fd, ev, 0 };
	return poll(&p, 1, 0) > 0;
}

/* The sum of the lengths of an iovec array that the kernel has just read
 * without a fault (the program's own array, which may be misaligned). */
static inline uint64_t exec_iov_total(const struct iovec *iov, int niov)
{
	uint64_t want = 0;
	for (int i = 0; i < niov; i++) {
		struct iovec v;
		memcpy(&v, (const char *)iov + (size_t)i * sizeof(v), sizeof(v));
		want += v.iov_len;
	}
	return want;
}

/* exec.c: requests and the user_data hash */
struct ureq *exec_req_get_locked(struct emu_ring *r);
void exec_ud_hash_add(struct ureq *q);
void exec_ud_rehash(struct ureq *q, uint64_t ud);
struct ureq *exec_find_locked(struct emu_ring *r, struct ureq *self, uint64_t ud, unsigned op, int state);
static inline struct ureq **exec_ud_chain(struct emu_ring *r, uint64_t ud)
{
	return &r->udh[(ud * 0x9e3779b97f4a7c15ull) >> (64 - r->udh_bits)];
}
/* exec.c: completion, for cancel.c */
void exec_cancel_one_locked(struct emu_ring *r, struct ureq *m, int32_t res, int quiet);
void exec_release_deferred_locked(struct emu_ring *r, struct ureq **run);
/* fs.c: user strings copied at submission */
int exec_ustrdup(const void *src, char **out);
int exec_upath(const void *src, char **out, int empty_ok);
/* kbuf.c */
int exec_select_buf(struct ureq *q, uint32_t want);
/* filetable.c */
int exec_install_file(struct emu_ring *r, unsigned idx, int fd, const struct fent *kind);
int exec_install_direct(struct ureq *q, int fd);
/* Set while the submitting thread runs requests inline (exec.c). */
extern __thread int exec_in_submit __attribute__((tls_model("initial-exec")));

#endif
