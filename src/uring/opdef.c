/* SPDX-License-Identifier: MIT */
/*
 * opdef.c - the emulated ring's opcode table, as the kernel's io_uring/opdef.c:
 * one row per opcode with where it starts, the SQE fields it refuses, whether
 * it takes a file, a buffer group, an ioprio, and its prep and issue
 * functions. Preparation and dispatch (exec.c) and the probe read it.
 *
 * The zero fields are as Linux 6.18 answers, measured by
 * test_uring_differential's stray values (and, for RECVMSG, SENDMSG,
 * LINK_TIMEOUT, CONNECT, OPENAT2, SOCKET and addr, by test_uring_errors); ops
 * without one check their own in their prep or not at all (DROPIN.md).
 *
 * Must never: have a row without an issue function, or report in the probe an
 * opcode that dispatch does not run (URING_CMD: not emulated, DROPIN.md).
 */
#include "opdef.h"

#define RW(pr, bufsel) .where = W_INLINE, .takes_file = 1, .buffer_select = bufsel, \
	.ioprio = IOP_CLASS, .async_own = 1, .rw = 1, .prep = pr, .issue = op_rw

const struct op_def op_defs[IORING_OP_LAST] = {
	[IORING_OP_NOP] = { .where = W_INLINE, .issue = op_nop },
	[IORING_OP_READV] = { RW(rw_prep, 1), .stable = rw_stable },
	[IORING_OP_WRITEV] = { RW(rw_prep, 0), .hash_reg = 1, .stable = rw_stable },
	[IORING_OP_READ_FIXED] = { RW(rw_prep, 0) },
	[IORING_OP_WRITE_FIXED] = { RW(rw_prep, 0), .hash_reg = 1 },
	[IORING_OP_READ] = { RW(rw_prep, 1) },
	[IORING_OP_WRITE] = { RW(rw_prep, 0), .hash_reg = 1 },
	[IORING_OP_FSYNC] = { .where = W_WORKER, .zero = Z_BUF | Z_SFD | Z_ADDR, .takes_file = 1,
			      .prep = fsync_prep, .issue = op_fsync },
	[IORING_OP_SYNC_FILE_RANGE] = { .where = W_WORKER, .zero = Z_BUF | Z_SFD | Z_ADDR, .takes_file = 1,
					.issue = op_sync_file_range },
	[IORING_OP_FALLOCATE] = { .where = W_WORKER, .zero = Z_OPF | Z_BUF | Z_SFD, .takes_file = 1,
				  .issue = op_fallocate },
	[IORING_OP_POLL_ADD] = { .where = W_INLINE, .zero = Z_OFF | Z_BUF | Z_ADDR, .takes_file = 1,
				 .async_own = 1, .prep = poll_add_prep, .issue = op_poll_add },
	[IORING_OP_POLL_REMOVE] = { .where = W_INLINE, .issue = op_poll_remove },
	[IORING_OP_SENDMSG] = { .where = W_INLINE, .zero = Z_OFF | Z_SFD, .takes_file = 1,
				.ioprio = IOP_FLAGS, .async_own = 1, .prep = send_prep, .issue = op_sendrecv,
				.stable = msg_stable },
	[IORING_OP_RECVMSG] = { .where = W_INLINE, .zero = Z_OFF | Z_SFD, .takes_file = 1, .buffer_select = 1,
				.ioprio = IOP_FLAGS, .async_own = 1, .prep = recv_prep, .issue = op_recv,
				.stable = msg_stable },
	[IORING_OP_SEND] = { .where = W_INLINE, .takes_file = 1, .ioprio = IOP_FLAGS, .async_own = 1,
			     .prep = send_prep, .issue = op_sendrecv },
	[IORING_OP_RECV] = { .where = W_INLINE, .zero = Z_OFF | Z_SFD, .takes_file = 1, .buffer_select = 1,
			     .ioprio = IOP_FLAGS, .async_own = 1, .prep = recv_prep, .issue = op_recv },
	/* SEND_ZC, SENDMSG_ZC: copied as SEND, SENDMSG are, with the kernel's two CQEs */
	[IORING_OP_SEND_ZC] = { .where = W_INLINE, .takes_file = 1, .ioprio = IOP_FLAGS, .async_own = 1,
				.prep = send_zc_prep, .issue = op_sendrecv },
	[IORING_OP_SENDMSG_ZC] = { .where = W_INLINE, .takes_file = 1, .ioprio = IOP_FLAGS, .async_own = 1,
				   .prep = send_zc_prep, .issue = op_sendrecv, .stable = msg_stable },
	[IORING_OP_ACCEPT] = { .where = W_INLINE, .zero = Z_LEN | Z_BUF, .takes_file = 1, .ioprio = IOP_FLAGS,
			       .async_own = 1, .prep = accept_prep, .issue = op_accept },
	[IORING_OP_CONNECT] = { .where = W_INLINE, .zero = Z_LEN | Z_OPF | Z_BUF | Z_SFD, .takes_file = 1,
				.issue = op_connect },
	[IORING_OP_SHUTDOWN] = { .where = W_INLINE, .zero = Z_OFF | Z_OPF | Z_BUF | Z_SFD | Z_ADDR,
				 .takes_file = 1, .issue = op_shutdown },
	[IORING_OP_SOCKET] = { .where = W_INLINE, .zero = Z_OPF | Z_BUF | Z_ADDR, .issue = op_socket },
	[IORING_OP_TIMEOUT] = { .where = W_INLINE, .zero = Z_A3 | Z_P2, .async_own = 1,
				.prep = timeout_prep, .issue = op_timeout },
	[IORING_OP_LINK_TIMEOUT] = { .where = W_INLINE, .zero = Z_A3 | Z_P2, .async_own = 1,
				     .prep = timeout_prep, .issue = op_link_timeout },
	[IORING_OP_TIMEOUT_REMOVE] = { .where = W_INLINE, .prep = timeout_remove_prep, .issue = op_timeout_remove },
	[IORING_OP_ASYNC_CANCEL] = { .where = W_INLINE, .zero = Z_OFF | Z_SFD, .issue = op_cancel },
	[IORING_OP_OPENAT] = { .where = W_INLINE, .zero = Z_BUF, .takes_file = 1, .async_own = 1,
			       .prep = open_prep, .issue = op_open },
	[IORING_OP_OPENAT2] = { .where = W_INLINE, .zero = Z_BUF, .takes_file = 1, .async_own = 1,
				.prep = open_prep, .issue = op_open },
	[IORING_OP_CLOSE] = { .where = W_INLINE, .takes_file = 1, .prep = close_prep, .issue = op_close },
	[IORING_OP_FILES_UPDATE] = { .where = W_INLINE, .issue = op_files_update },
	[IORING_OP_STATX] = { .where = W_WORKER, .zero = Z_BUF | Z_SFD, .takes_file = 1,
			      .prep = statx_prep, .issue = op_statx },
	[IORING_OP_FADVISE] = { .where = W_INLINE, .zero = Z_BUF | Z_SFD, .takes_file = 1, .issue = op_fadvise },
	[IORING_OP_MADVISE] = { .where = W_WORKER, .zero = Z_BUF | Z_SFD, .issue = op_madvise },
	[IORING_OP_EPOLL_CTL] = { .where = W_INLINE, .zero = Z_BUF | Z_SFD, .issue = op_epoll_ctl },
	[IORING_OP_SPLICE] = { .where = W_WORKER, .takes_file = 1, .issue = op_splice },
	[IORING_OP_TEE] = { .where = W_WORKER, .zero = Z_OFF | Z_ADDR, .takes_file = 1, .issue = op_splice },
	[IORING_OP_PROVIDE_BUFFERS] = { .where = W_INLINE, .issue = op_provide },
	[IORING_OP_REMOVE_BUFFERS] = { .where = W_INLINE, .zero = Z_OPF | Z_SFD, .issue = op_remove_bufs },
	[IORING_OP_RENAMEAT] = { .where = W_WORKER, .zero = Z_BUF | Z_SFD, .takes_file = 1,
				 .prep = link_prep, .issue = op_renameat },
	[IORING_OP_UNLINKAT] = { .where = W_WORKER, .zero = Z_OFF | Z_LEN | Z_BUF | Z_SFD, .takes_file = 1,
				 .prep = unlink_prep, .issue = op_unlinkat },
	[IORING_OP_MKDIRAT] = { .where = W_WORKER, .zero = Z_OFF | Z_OPF | Z_BUF | Z_SFD, .takes_file = 1,
				.prep = mkdir_prep, .issue = op_mkdirat },
	[IORING_OP_SYMLINKAT] = { .where = W_WORKER, .zero = Z_LEN | Z_OPF | Z_BUF | Z_SFD, .takes_file = 1,
				  .prep = link_prep, .issue = op_symlinkat },
	[IORING_OP_LINKAT] = { .where = W_WORKER, .zero = Z_BUF | Z_SFD, .takes_file = 1,
			       .prep = link_prep, .issue = op_linkat },
	[IORING_OP_MSG_RING] = { .where = W_INLINE, .takes_file = 1, .issue = op_msg_ring },
	[IORING_OP_FSETXATTR] = { .where = W_WORKER, .takes_file = 1, .prep = fxattr_prep, .issue = op_fsetxattr },
	[IORING_OP_FGETXATTR] = { .where = W_WORKER, .takes_file = 1, .prep = fxattr_prep, .issue = op_fgetxattr },
	[IORING_OP_SETXATTR] = { .where = W_WORKER, .takes_file = 1, .prep = xattr_prep, .issue = op_setxattr },
	[IORING_OP_GETXATTR] = { .where = W_WORKER, .takes_file = 1, .prep = xattr_prep, .issue = op_getxattr },
	/* URING_CMD: not emulated (DROPIN.md). */
};

void op_fill_probe(struct io_uring_probe *p, unsigned n)
{
	p->last_op = IORING_OP_LAST - 1;
	p->ops_len = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		p->ops[i].op = (uint8_t)i;
		p->ops[i].flags = op_supported(i) ? IO_URING_OP_SUPPORTED : 0;
	}
}
