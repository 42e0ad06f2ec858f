/* SPDX-License-Identifier: MIT */
/*
 * fuzz_uring_steps.h - what one fuzz input does to the liburing drop-in's
 * emulated ring (src/uring/), shared by the libFuzzer target (fuzz/fuzz_uring.c,
 * which compiles the drop-in in) and the corpus replay test
 * (tests/test_uring_fuzz_corpus.c, linked to uring/liburing.so.2), so the kept
 * corpus fuzz/corpus-uring runs in every test run. URING_EMULATE=1 is forced
 * and checked (the ring fd must be an eventfd).
 *
 * An input is read as:
 *   byte 0  log2 of the SQ entries (b % 6: 1..32)
 *   byte 1  bit 0: IORING_SETUP_CQSIZE with CQ = SQ << (bits 4-5) (equal sizes
 *           overflow soon), bit 1: SUBMIT_ALL, bit 2: COOP_TASKRUN|TASKRUN_FLAG,
 *           bit 3: SINGLE_ISSUER
 * then commands, each a byte c (c % 8) and its operands:
 *   0  an SQE from 12 bytes: opcode (a table of every opcode, and raw values
 *      above IORING_OP_LAST), flags, fd selector, pointer selector, length (2),
 *      offset (2), op flags (2), buffer index/group, target selector
 *   1  io_uring_submit
 *   2  io_uring_submit_and_wait_timeout (wait 0..3, at most 2 ms)
 *      (1 and 2 then take what is in the CQ, unless c & 0x80: CQEs pile up, overflow)
 *   3  reap: peek + cqe_seen one by one, or peek_batch + cq_advance
 *   4  a register call (buffers, files, updates with tags, unregister, eventfd,
 *      sync cancel, file alloc range, iowq max workers, probe), or the system-call
 *      front's mmap of the ring fd (its offset, length, protection and flags from the
 *      table: what a program that maps its ring itself gets)
 *   5  up to 32 bytes into the data area
 *   6  the harness writes into the pipe, the socket or the eventfd (wakes polls)
 *   7  an SQE as 0, with IOSQE_IO_LINK added to the one before (if not submitted yet)
 * Every SQE is built per opcode so that no pointer can reach memory the
 * harness does not own: a pointer argument is either a harness-built object of
 * the type the opcode reads (iovec arrays, msghdr, timespec, open_how, paths,
 * statx buffer, epoll_event, sockaddr_un, fd arrays) in its own slot, such an
 * object straddling a PROT_NONE page, a range of the data area (bounded by the
 * length), or an invalid address (NULL, 0x10, a kernel-half address, a
 * PROT_NONE page). fds come from a table of the harness's own (a regular file,
 * an O_DIRECT file, a pipe, a socketpair, an eventfd, an epoll fd, the ring,
 * the private directory, fds the ring opened) and invalid numbers; paths are
 * fixed relative names under a private temporary directory, whose fd is the
 * only dirfd path opcodes get (never AT_FDCWD); sockets only AF_UNIX.
 *
 * Invariants (a failure returns 1 with fzu_why set; the target aborts):
 * every submitted SQE gets exactly one CQE without IORING_CQE_F_MORE (a multishot POLL_ADD
 * or ACCEPT may have CQEs with F_MORE before it; at most one when it or its chain
 * asked for CQE_SKIP_SUCCESS; a zero-copy send's result may have F_MORE, and then exactly one
 * IORING_CQE_F_NOTIF CQE follows it), no CQE for an unknown user_data, MSG_RING and
 * tag CQEs exactly as announced, the members of a link chain complete in order
 * and after a failed IO_LINK member the rest fail, a successful IO_DRAIN
 * request completes after everything submitted before it and before anything
 * after it, the SQ is always fully consumed, head/tail distances within the
 * ring sizes, cq.overflow stays 0, everything completes after synchronous cancels
 * of all within a bounded time, and after io_uring_queue_exit the process has the fds
 * and threads it had before. Nothing waits unbounded.
 *
 * Must never: touch anything outside the private directory, hand the library
 * a pointer into memory it does not own, or send a signal.
 */
#ifndef FUZZ_URING_STEPS_H
#define FUZZ_URING_STEPS_H

#include <liburing.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "../src/uring/sysfront.h"

#define FZU_MAX_SQE 256
#define FZU_PAGE 4096
#define FZU_DATA (64 * 1024)
#define FZU_SLOT 512                     /* one object area per SQE, never reused in an input */
#define FZU_SLOTS (FZU_SLOT * (FZU_MAX_SQE + 8) + FZU_PAGE)
#define FZU_TAG_BASE (1ull << 62)        /* user_data of tag CQEs: FZU_TAG_BASE + n */
#define FZU_MSG_BASE (1ull << 61)        /* user_data of MSG_RING CQEs: FZU_MSG_BASE + sqe index */
#define FZU_MAXFD 4096
#define FZU_NSTRAD 64                    /* SQE i straddles the edge of pair i % 64 (> any SQ batch) */

static char fzu_why[256];              /* what the last failing input broke */
static int fzu_trace;                  /* CQEs on stderr (the replay test sets it) */
static unsigned fzu_last_sqes, fzu_last_ok; /* SQEs submitted, CQEs with res >= 0 in the last input */

struct fzu_sqe {
	uint8_t op, flags, skip_ok, is_lt, batch_end, etime_ok;
	uint8_t direct;                      /* file_index set: res is no fd */
	uint8_t closing;                     /* CLOSE of an fd the ring opened (opened[] lowered) */
	int fd;
	uint16_t chain;                      /* chain id + 1 (0: not linked) */
	int32_t res;
	uint32_t cqes, order;
	uint32_t msg_cqes;                   /* MSG_RING: CQEs posted with FZU_MSG_BASE + index */
	uint8_t zc_more, zc_notifs;          /* SEND_ZC/SENDMSG_ZC: result with F_MORE, notifications */
};

struct fzu {
	struct io_uring ring;
	int ring_ok;
	char *mem, *data, *slots, *guard1, *guard2; /* [guard0][data][guard1][slots][guard2][straddle pairs] */
	char *strad;                         /* FZU_NSTRAD x [a page][a PROT_NONE page]: objects across the edge */
	size_t mem_sz;
	int dirfd, reg, odirect, pr, pw, s0, s1, efd, epfd;
	int hpr, hpw;                        /* the harness's own O_NONBLOCK opens of the pipe */
	uint8_t opened[FZU_MAXFD];           /* fds the ring opened and did not close */
	int last_open;
	struct fzu_sqe q[FZU_MAX_SQE];
	unsigned nq, placed_done;            /* SQEs placed; SQEs consumed by the library */
	uint32_t order;                      /* CQEs seen */
	uint32_t tags, tag_cqes[64];
	int files_on, bufs_on;
};

struct fzu_in {
	const uint8_t *p;
	size_t n;
};

static uint8_t fzu_u8(struct fzu_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint32_t fzu_u16(struct fzu_in *in)
{
	uint32_t v = fzu_u8(in);
	return v | (uint32_t)fzu_u8(in) << 8;
}

#define FZU_BAD(...) do { snprintf(fzu_why, sizeof fzu_why, __VA_ARGS__); return 1; } while (0)

static char fzu_dir[96];                /* the private directory (short: paths under it fit 128) */

static int fzu_count(const char *what)
{
	if (!strcmp(what, "fd")) {
		DIR *d = opendir("/proc/self/fd");
		int n = 0;
		if (!d)
			return -1;
		while (readdir(d))
			n++;
		closedir(d);
		return n;
	}
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "Threads:", 8))
			n = atoi(line + 8);
	fclose(f);
	return n;
}

/* Remove what is in directory dfd (renames can nest directories a few levels). */
static int fzu_empty_dir(int dfd, int depth)
{
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;
	int e = 0;
	if (!d || depth > 16)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0 || unlinkat(dfd, de->d_name, AT_REMOVEDIR) == 0)
			continue;
		int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || fzu_empty_dir(sub, depth + 1) || unlinkat(dfd, de->d_name, AT_REMOVEDIR))
			e = -1;
		if (sub >= 0)
			close(sub);
	}
	closedir(d);
	return e;
}

static void fzu_rm_dir(void)
{
	int dfd = open(fzu_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fzu_empty_dir(dfd, 0);
		close(dfd);
	}
	rmdir(fzu_dir);
}

/* The private directory (gone at exit), emptied and given its two files at each input. */
static int fzu_reset_dir(struct fzu *z)
{
	if (!fzu_dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(fzu_dir, sizeof fzu_dir, "%.80s/fzu.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(fzu_dir))
			return -1;
		atexit(fzu_rm_dir);
	}
	z->dirfd = open(fzu_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (z->dirfd < 0)
		return -1;
	if (fzu_empty_dir(z->dirfd, 0))
		return -1;
	z->reg = openat(z->dirfd, "f0", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	z->odirect = openat(z->dirfd, "f1", O_RDWR | O_CREAT | O_CLOEXEC | O_DIRECT, 0600);
	if (z->odirect < 0)            /* a file system without O_DIRECT: a plain file */
		z->odirect = openat(z->dirfd, "f1", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (z->reg < 0 || z->odirect < 0 || ftruncate(z->odirect, 64 * 1024) < 0)
		return -1;
	static char pat[8192];
	for (size_t i = 0; i < sizeof pat; i++)
		pat[i] = (char)('a' + i % 26);
	return pwrite(z->reg, pat, sizeof pat, 0) == (ssize_t)sizeof pat ? 0 : -1;
}

/* ---- what an SQE points at ---- */

static const char *const fzu_names[] = { "f0", "f1", "f2", "d0", "s0", "", "d0/f3", "f0/x" };

static uint64_t fzu_invalid(struct fzu *z, unsigned sel)
{
	switch (sel % 4) {
	case 0: return 0;
	case 1: return 0x10;
	case 2: return 0xffff800000001000ull;
	default: return (uint64_t)(uintptr_t)z->guard1;
	}
}

/* A range of the data area of up to *len bytes (clamped), or an invalid address. */
static uint64_t fzu_data(struct fzu *z, unsigned sel, unsigned off, uint32_t *len)
{
	if (*len > FZU_DATA)
		*len = FZU_DATA;
	switch (sel % 8) {
	case 1: case 2: case 3: case 4:
		return fzu_invalid(z, sel);
	case 5:                              /* straddles into the guard page */
		return (uint64_t)(uintptr_t)(z->data + FZU_DATA - (*len / 2 + 1));
	default:
		off %= FZU_DATA;
		if (*len > FZU_DATA - off)
			*len = FZU_DATA - off;
		return (uint64_t)(uintptr_t)(z->data + off);
	}
}

/* Where SQE i's straddling objects end: the start of a PROT_NONE page. */
static char *fzu_edge(struct fzu *z, unsigned i)
{
	return z->strad + (2 * (size_t)(i % FZU_NSTRAD) + 1) * FZU_PAGE;
}

/* The object slot of SQE i, or an invalid address (then *obj is scratch). */
static char fzu_scratch[FZU_SLOT];
static uint64_t fzu_obj(struct fzu *z, unsigned i, unsigned sel, size_t size, char **obj)
{
	*obj = fzu_scratch;
	memset(fzu_scratch, 0, sizeof fzu_scratch);
	switch (sel % 8) {
	case 1: case 2: case 3:
		return fzu_invalid(z, sel);
	case 4: {                            /* half of it in a PROT_NONE page: an edge of its own */
		char *p = fzu_edge(z, i) - size / 2;
		if (size < 2)
			return fzu_invalid(z, 3);
		*obj = fzu_scratch;
		return (uint64_t)(uintptr_t)p;
	}
	default:
		*obj = z->slots + (size_t)i * FZU_SLOT;   /* zeroed by fzu_fill */
		return (uint64_t)(uintptr_t)*obj;
	}
}

/* Copy what fits of an object built in scratch into a straddling placement. */
static void fzu_obj_done(struct fzu *z, uint64_t addr, const char *obj, size_t size)
{
	char *p = (char *)(uintptr_t)addr;
	if (obj != fzu_scratch || addr < (uint64_t)(uintptr_t)z->strad ||
	    addr >= (uint64_t)(uintptr_t)(z->strad + 2 * FZU_NSTRAD * FZU_PAGE))
		return;
	char *edge = (char *)(uintptr_t)((addr / FZU_PAGE + 1) * FZU_PAGE);
	memcpy(p, obj, (size_t)(edge - p) < size ? (size_t)(edge - p) : size);
}

/* A fixed relative name (absolute: under the private directory) in slot part
 * which (0 or 1), one whose end lies in a PROT_NONE page, or an invalid address. */
static uint64_t fzu_path(struct fzu *z, unsigned i, unsigned sel, unsigned which, int absolute)
{
	const char *n = fzu_names[(sel >> 3) % 8];
	switch (sel % 8) {
	case 1: case 2: case 3:
		return fzu_invalid(z, sel);
	case 4: {                            /* no terminator before the guard page */
		size_t l = strlen(n);
		memcpy(fzu_edge(z, i) - l, n, l);
		return (uint64_t)(uintptr_t)(fzu_edge(z, i) - l);
	}
	default: {
		char *o = z->slots + (size_t)i * FZU_SLOT + which * 128;
		if (absolute)
			snprintf(o, 128, "%.96s/%.8s", fzu_dir, n);
		else
			snprintf(o, 128, "%s", n);
		return (uint64_t)(uintptr_t)o;
	}
	}
}

/* An fd from the table: the harness's own, the ring's opens, invalid numbers. */
static int fzu_fd(struct fzu *z, unsigned sel)
{
	switch (sel % 14) {
	case 0: return z->dirfd;
	case 1: return z->reg;
	case 2: return z->odirect;
	case 3: return z->pr;
	case 4: return z->pw;
	case 5: return z->s0;
	case 6: return z->s1;
	case 7: return z->efd;
	case 8: return z->epfd;
	case 9: return z->ring.ring_fd;
	case 10: return z->last_open;
	case 11: return -1;
	case 12: return 9999;
	default: return 1 << 30;
	}
}

/* A path opcode's dirfd: the private directory mostly, never AT_FDCWD. */
static int fzu_dirfd(struct fzu *z, unsigned sel)
{
	static const int alt[] = { -1, 9999 };
	if (sel % 8 == 7)
		return alt[(sel >> 3) & 1];
	if (sel % 8 == 6)
		return z->reg;                   /* ENOTDIR */
	return z->dirfd;
}

static uint64_t fzu_ts(struct fzu *z, unsigned i, unsigned sel, uint32_t v)
{
	char *o;
	uint64_t a = fzu_obj(z, i, sel, sizeof(struct __kernel_timespec), &o);
	struct __kernel_timespec ts = { 0, (long long)(v % 3000000) };
	if ((v >> 24) == 0xff)
		ts.tv_nsec = 1000000000;         /* invalid */
	else if ((v >> 24) == 0xfe)
		ts.tv_sec = -1;
	memcpy(o, &ts, sizeof ts);
	fzu_obj_done(z, a, o, sizeof ts);
	return a;
}

static uint64_t fzu_iov(struct fzu *z, unsigned i, unsigned sel, unsigned n, uint32_t len, char *at)
{
	char *o = at;
	uint64_t a = 0;
	if (!o)
		a = fzu_obj(z, i, sel, n * sizeof(struct iovec), &o);
	struct iovec v[8];
	for (unsigned k = 0; k < n && k < 8; k++) {
		uint32_t l = len / (k + 1);
		v[k].iov_base = (void *)(uintptr_t)fzu_data(z, (k == 1 && sel & 0x80) ? sel >> 3 : 0,
							    (len * 7 + k * 4096) % FZU_DATA, &l);
		v[k].iov_len = l;
	}
	memcpy(o, v, n * sizeof(struct iovec));
	if (at)
		return (uint64_t)(uintptr_t)at;
	fzu_obj_done(z, a, o, n * sizeof(struct iovec));
	return a;
}

/* ---- building one SQE ---- */

static const uint8_t fzu_ops[] = {
	IORING_OP_NOP, IORING_OP_READV, IORING_OP_WRITEV, IORING_OP_FSYNC, IORING_OP_READ_FIXED,
	IORING_OP_WRITE_FIXED, IORING_OP_POLL_ADD, IORING_OP_POLL_REMOVE, IORING_OP_SYNC_FILE_RANGE,
	IORING_OP_SENDMSG, IORING_OP_RECVMSG, IORING_OP_TIMEOUT, IORING_OP_TIMEOUT_REMOVE,
	IORING_OP_ACCEPT, IORING_OP_ASYNC_CANCEL, IORING_OP_LINK_TIMEOUT, IORING_OP_CONNECT,
	IORING_OP_FALLOCATE, IORING_OP_OPENAT, IORING_OP_CLOSE, IORING_OP_FILES_UPDATE, IORING_OP_STATX,
	IORING_OP_READ, IORING_OP_WRITE, IORING_OP_FADVISE, IORING_OP_MADVISE, IORING_OP_SEND,
	IORING_OP_RECV, IORING_OP_OPENAT2, IORING_OP_EPOLL_CTL, IORING_OP_SPLICE,
	IORING_OP_PROVIDE_BUFFERS, IORING_OP_REMOVE_BUFFERS, IORING_OP_TEE, IORING_OP_SHUTDOWN,
	IORING_OP_RENAMEAT, IORING_OP_UNLINKAT, IORING_OP_MKDIRAT, IORING_OP_SYMLINKAT,
	IORING_OP_LINKAT, IORING_OP_MSG_RING, IORING_OP_FSETXATTR, IORING_OP_SETXATTR,
	IORING_OP_FGETXATTR, IORING_OP_GETXATTR, IORING_OP_SOCKET, IORING_OP_URING_CMD,
	IORING_OP_SEND_ZC, IORING_OP_SENDMSG_ZC,
};
#define FZU_NOPS (sizeof fzu_ops / sizeof fzu_ops[0])

static const int fzu_madv[] = { MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_DONTNEED };

/* Fill s as SQE number i from the input. Returns 0, or -1 when no SQE could be had. */
static void fzu_fill(struct fzu *z, struct io_uring_sqe *s, unsigned i, struct fzu_in *in)
{
	uint8_t ob = fzu_u8(in), fl = fzu_u8(in), fsel = fzu_u8(in), psel = fzu_u8(in);
	uint32_t len = fzu_u16(in), off = fzu_u16(in), opf = fzu_u16(in);
	uint8_t bsel = fzu_u8(in), tsel = fzu_u8(in);
	uint8_t op = ob < 0xf0 ? fzu_ops[ob % FZU_NOPS] : (uint8_t)(IORING_OP_LAST + (ob & 0xf));
	int fd = fzu_fd(z, fsel);
	uint64_t target = tsel < 0xf0 && i ? 1 + (tsel % i) : tsel;  /* an earlier SQE's user_data */
	char *o;
	uint64_t a;

	memset(s, 0, sizeof *s);
	memset(z->slots + (size_t)i * FZU_SLOT, 0, FZU_SLOT);
	s->opcode = op;
	s->fd = fd;
	s->flags = fl & (IOSQE_FIXED_FILE | IOSQE_IO_DRAIN | IOSQE_IO_LINK | IOSQE_IO_HARDLINK | IOSQE_ASYNC |
			 IOSQE_BUFFER_SELECT | IOSQE_CQE_SKIP_SUCCESS);
	if (fl == 0xff)
		s->flags = 0xff;                 /* an unknown flag */
	if (s->flags & IOSQE_FIXED_FILE)
		s->fd = fsel >> 4;
	/* a registered buffer's index where the op takes one; elsewhere a stray value now
	 * and then only (the prep of most ops refuses it, as the kernel's: -EINVAL) */
	if (op == IORING_OP_READ_FIXED || op == IORING_OP_WRITE_FIXED || op == IORING_OP_SEND_ZC || bsel >= 0xf0)
		s->buf_index = bsel % 4;
	uint64_t bigoff = (off & 0x8000) ? (off == 0xffff ? (uint64_t)-1 : (uint64_t)(off & 0x7fff) << 12) : off;

	switch (op) {
	case IORING_OP_NOP:
		break;
	case IORING_OP_READV: case IORING_OP_WRITEV:
		s->len = len % 9;
		s->addr = s->len && psel % 8 != 1 ? fzu_iov(z, i, psel, s->len, opf * 4 % 20000, NULL) : fzu_invalid(z, psel >> 3);
		if (psel % 8 == 1)
			s->len = len;                /* a huge count */
		s->off = bigoff;
		s->rw_flags = (opf >> 8) & (RWF_NOWAIT | RWF_HIPRI | RWF_DSYNC | RWF_APPEND);
		break;
	case IORING_OP_READ: case IORING_OP_WRITE: case IORING_OP_READ_FIXED: case IORING_OP_WRITE_FIXED:
	case IORING_OP_SEND: case IORING_OP_RECV:
		if (s->flags & IOSQE_BUFFER_SELECT) {
			s->addr = psel % 8 == 0 ? 0 : fzu_invalid(z, psel);
			s->buf_group = bsel % 4;
			s->len = len % 20000;
		} else {
			s->addr = fzu_data(z, psel, opf * 4, &len);
			s->len = len;
		}
		if (op == IORING_OP_SEND || op == IORING_OP_RECV) {
			s->msg_flags = (opf >> 8) & (MSG_DONTWAIT | MSG_WAITALL | MSG_PEEK | MSG_TRUNC);
			s->msg_flags |= MSG_NOSIGNAL;
			s->ioprio = opf & 0x8000 ? IORING_RECVSEND_POLL_FIRST : 0;
		} else {
			s->off = bigoff;
			s->rw_flags = (opf >> 8) & (RWF_NOWAIT | RWF_HIPRI | RWF_DSYNC | RWF_APPEND);
		}
		break;
	case IORING_OP_FSYNC:
		s->fsync_flags = opf & 1;
		break;
	case IORING_OP_SYNC_FILE_RANGE:
		s->off = off;
		s->len = len;
		s->sync_range_flags = opf & 7;
		break;
	case IORING_OP_FALLOCATE: {
		static const int modes[] = { 0, 1, 3, 0x10 };  /* KEEP_SIZE, PUNCH_HOLE|KEEP, ZERO_RANGE */
		s->off = off * 16;                            /* at most 1 MiB */
		s->addr = len * 16;
		s->len = (uint32_t)modes[opf % 4];
		break;
	}
	case IORING_OP_FADVISE:
		s->off = off;
		s->len = len;
		s->fadvise_advice = opf % 7;
		break;
	case IORING_OP_MADVISE:
		len = (len % 16 + 1) * FZU_PAGE;
		s->addr = psel % 8 < 1 || psel % 8 > 4 ? (uint64_t)(uintptr_t)(z->data + (off % 16) * FZU_PAGE)
						     : fzu_invalid(z, psel);
		if (s->addr == (uint64_t)(uintptr_t)(z->data + (off % 16) * FZU_PAGE) && len > FZU_DATA - (off % 16) * FZU_PAGE)
			len = FZU_DATA - (off % 16) * FZU_PAGE;
		s->len = len;
		s->fadvise_advice = (uint32_t)fzu_madv[opf % 5];
		break;
	case IORING_OP_POLL_ADD:
		s->poll32_events = opf & (POLLIN | POLLOUT | POLLPRI | POLLERR | POLLHUP | POLLRDHUP);
		s->len = (opf & 0x8000) ? IORING_POLL_ADD_MULTI : 0;
		break;
	case IORING_OP_POLL_REMOVE:
		s->addr = target;
		s->len = opf & IORING_POLL_UPDATE_EVENTS;        /* never UPDATE_USER_DATA: it renames CQEs */
		s->poll32_events = (opf >> 4) & (POLLIN | POLLOUT);
		s->fd = -1;
		break;
	case IORING_OP_SENDMSG: case IORING_OP_RECVMSG: {
		a = fzu_obj(z, i, psel, sizeof(struct msghdr), &o);
		struct msghdr m = { 0 };
		unsigned n = len % 5;
		if (o != fzu_scratch) {
			m.msg_iov = (struct iovec *)(uintptr_t)fzu_iov(z, i, 0, n, opf * 4 % 20000, o + 128);
			m.msg_iovlen = n;
		} else {
			m.msg_iov = (struct iovec *)(uintptr_t)fzu_invalid(z, psel >> 3);
			m.msg_iovlen = n;
		}
		if (op == IORING_OP_RECVMSG && (opf & 0x4000)) {
			uint32_t cl = 64;
			m.msg_control = (void *)(uintptr_t)fzu_data(z, psel >> 3, off, &cl);
			m.msg_controllen = cl;
		}
		memcpy(o, &m, sizeof m);
		fzu_obj_done(z, a, o, sizeof m);
		s->addr = a;
		s->msg_flags = ((opf >> 8) & (MSG_DONTWAIT | MSG_WAITALL | MSG_PEEK)) | MSG_NOSIGNAL;
		if (s->flags & IOSQE_BUFFER_SELECT)
			s->buf_group = bsel % 4;
		break;
	}
	case IORING_OP_TIMEOUT: case IORING_OP_LINK_TIMEOUT:
		s->addr = fzu_ts(z, i, psel, (uint32_t)opf << 8 | len);
		s->len = (psel & 0x40) ? 2 : 1;                  /* 1 is the only valid count of timespecs */
		s->off = op == IORING_OP_TIMEOUT ? off % 4 : 0;
		s->timeout_flags = (opf >> 12) & (IORING_TIMEOUT_ABS | IORING_TIMEOUT_BOOTTIME | IORING_TIMEOUT_ETIME_SUCCESS);
		s->fd = -1;
		break;
	case IORING_OP_TIMEOUT_REMOVE:
		s->addr = target;
		s->timeout_flags = (opf >> 12) & (IORING_TIMEOUT_UPDATE | IORING_TIMEOUT_ABS);
		if (s->timeout_flags & IORING_TIMEOUT_UPDATE)
			s->addr2 = fzu_ts(z, i, psel, (uint32_t)len << 8);
		s->fd = -1;
		break;
	case IORING_OP_ASYNC_CANCEL:
		s->addr = target;
		s->cancel_flags = (opf >> 12) & (IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD |
						 IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_FD_FIXED);
		if (!(s->cancel_flags & IORING_ASYNC_CANCEL_FD))
			s->fd = -1;
		break;
	case IORING_OP_ACCEPT: {
		a = fzu_obj(z, i, psel, 128, &o);
		socklen_t sl = 110;
		memcpy(o + 120, &sl, sizeof sl);
		fzu_obj_done(z, a, o, 128);
		s->addr = a;
		s->addr2 = (psel & 0x40) ? 0 : a + 120;
		s->accept_flags = (opf & 1) ? SOCK_NONBLOCK : 0;
		s->ioprio = (opf & 2) ? IORING_ACCEPT_MULTISHOT : 0;
		break;
	}
	case IORING_OP_CONNECT: {
		a = fzu_obj(z, i, psel, sizeof(struct sockaddr_un), &o);
		struct sockaddr_un su = { .sun_family = AF_UNIX };
		snprintf(su.sun_path + 1, sizeof su.sun_path - 1, "urfs-fuzz-none-%d", getpid()); /* abstract, unbound */
		memcpy(o, &su, sizeof su);
		fzu_obj_done(z, a, o, sizeof su);
		s->addr = a;
		s->off = (opf & 1) ? len % 200 : sizeof su;
		break;
	}
	case IORING_OP_OPENAT: case IORING_OP_OPENAT2: {
		s->fd = fzu_dirfd(z, fsel);
		s->addr = fzu_path(z, i, psel, 0, 0);
		int flags = (int)(opf & 0x3) | (opf & 0x4 ? O_CREAT : 0) | (opf & 0x8 ? O_EXCL : 0) |
			(opf & 0x10 ? O_TRUNC : 0) | (opf & 0x20 ? O_DIRECTORY : 0) | (opf & 0x40 ? O_NOFOLLOW : 0) |
			(opf & 0x80 ? O_PATH : 0) | (opf & 0x100 ? O_DIRECT : 0) | (opf & 0x200 ? O_NONBLOCK : 0) |
			(opf & 0x400 ? O_APPEND : 0) | O_CLOEXEC;
		if (op == IORING_OP_OPENAT) {
			s->open_flags = (uint32_t)flags;
			s->len = 0600;
		} else {
			char *h;
			uint64_t ha = fzu_obj(z, i, psel >> 3, sizeof(struct open_how), &h);
			struct open_how how = { .flags = (uint64_t)flags, .mode = 0600,
				.resolve = (opf & 0x800) ? RESOLVE_BENEATH | RESOLVE_CACHED : 0 };
			if (h != fzu_scratch) {
				h += 256;
				ha += 256;
			}
			memcpy(h, &how, sizeof how);
			fzu_obj_done(z, ha, h, sizeof how);
			s->addr2 = ha;
			s->len = (opf & 0x1000) ? len % 64 : sizeof how;
		}
		if (opf & 0x2000)
			s->file_index = (opf & 0x4000) ? IORING_FILE_INDEX_ALLOC : 1u + bsel % 4u;
		break;
	}
	case IORING_OP_CLOSE:
		/* only what the ring opened (once), fixed slots, or numbers that are no fd */
		s->fd = (fsel & 2) ? 9999 : -1;
		if ((fsel & 1) && z->last_open >= 0 && z->opened[z->last_open]) {
			s->fd = z->last_open;
			z->opened[z->last_open]--;
			z->last_open = -1;
			z->q[i].closing = 1;
		}
		if (s->fd == -1 && (opf & 1)) {
			s->fd = 0;
			s->file_index = 1 + bsel % 8;
		}
		s->flags &= (uint8_t)~IOSQE_FIXED_FILE;
		break;
	case IORING_OP_FILES_UPDATE: {
		unsigned n = len % 5 + 1;
		a = fzu_obj(z, i, psel, n * sizeof(int), &o);
		for (unsigned k = 0; k < n; k++) {
			int f = k == 0 ? fd : fzu_fd(z, fsel + k * 3);
			if (f == z->ring.ring_fd)
				f = -1;
			memcpy(o + k * sizeof(int), &f, sizeof f);
		}
		fzu_obj_done(z, a, o, n * sizeof(int));
		s->addr = a;
		s->len = n;
		s->off = (opf & 0x8000) ? IORING_FILE_INDEX_ALLOC : opf % 10;
		s->fd = -1;
		s->flags &= (uint8_t)~IOSQE_FIXED_FILE;
		break;
	}
	case IORING_OP_STATX:
		s->fd = fzu_dirfd(z, fsel);
		s->addr = fzu_path(z, i, psel, 0, 0);
		s->len = opf;                                    /* mask */
		s->statx_flags = (opf & 0x8000 ? AT_EMPTY_PATH : 0) | (opf & 0x4000 ? AT_SYMLINK_NOFOLLOW : 0);
		s->addr2 = (psel & 0x80) ? fzu_invalid(z, psel >> 3) :
			   (uint64_t)(uintptr_t)(z->slots + (size_t)i * FZU_SLOT + 256);
		break;
	case IORING_OP_EPOLL_CTL: {
		a = fzu_obj(z, i, psel, sizeof(struct epoll_event), &o);
		struct epoll_event ev = { .events = (opf & (EPOLLIN | EPOLLOUT | EPOLLET | EPOLLONESHOT)), .data.u64 = i };
		memcpy(o, &ev, sizeof ev);
		fzu_obj_done(z, a, o, sizeof ev);
		s->fd = (fsel & 0x80) ? fd : z->epfd;
		s->addr = opf >> 14 ? opf >> 14 : 1;             /* EPOLL_CTL_ADD/DEL/MOD */
		s->len = (uint32_t)fzu_fd(z, bsel);
		s->off = a;
		break;
	}
	case IORING_OP_SPLICE: case IORING_OP_TEE:
		s->splice_fd_in = fzu_fd(z, bsel);
		if (s->splice_fd_in == z->ring.ring_fd)
			s->splice_fd_in = -1;
		s->len = len;
		s->splice_flags = (opf & (SPLICE_F_MOVE | SPLICE_F_NONBLOCK | SPLICE_F_MORE)) |
				  ((opf & 0x100) ? SPLICE_F_FD_IN_FIXED : 0);
		if (op == IORING_OP_SPLICE) {
			s->splice_off_in = (opf & 0x200) ? off : (uint64_t)-1;
			s->off = (opf & 0x400) ? off : (uint64_t)-1;
		}
		break;
	case IORING_OP_PROVIDE_BUFFERS: {
		unsigned n = len % 8 + 1;
		uint32_t bl = (opf % 2048) + 1, tot = n * bl;
		s->addr = fzu_data(z, psel, off * 4, &tot);
		s->fd = (int)n;
		s->len = bl;
		s->buf_group = bsel % 4;
		s->off = tsel;                                   /* first bid */
		break;
	}
	case IORING_OP_REMOVE_BUFFERS:
		s->fd = len % 9;
		s->buf_group = bsel % 4;
		break;
	case IORING_OP_SHUTDOWN:
		s->len = opf % 3;
		break;
	case IORING_OP_RENAMEAT: case IORING_OP_LINKAT:
		s->fd = fzu_dirfd(z, fsel);
		s->addr = fzu_path(z, i, psel, 0, 0);
		s->len = (uint32_t)fzu_dirfd(z, fsel >> 3);
		s->addr2 = fzu_path(z, i, tsel, 1, 0);
		if (op == IORING_OP_RENAMEAT)
			s->rename_flags = opf & 3;              /* NOREPLACE, EXCHANGE */
		else
			s->hardlink_flags = (opf & 1 ? AT_SYMLINK_FOLLOW : 0) | (opf & 2 ? AT_EMPTY_PATH : 0);
		break;
	case IORING_OP_UNLINKAT:
		s->fd = fzu_dirfd(z, fsel);
		s->addr = fzu_path(z, i, psel, 0, 0);
		s->unlink_flags = opf & 1 ? AT_REMOVEDIR : 0;
		break;
	case IORING_OP_MKDIRAT:
		s->fd = fzu_dirfd(z, fsel);
		s->addr = fzu_path(z, i, psel, 0, 0);
		s->len = 0700;
		break;
	case IORING_OP_SYMLINKAT:
		s->fd = fzu_dirfd(z, fsel);
		s->addr = fzu_path(z, i, tsel, 1, 0);            /* the target: a relative name */
		s->addr2 = fzu_path(z, i, psel, 0, 0);
		break;
	case IORING_OP_MSG_RING:
		s->addr = (opf & 0x8000) ? IORING_MSG_SEND_FD : IORING_MSG_DATA;
		s->len = len;                                    /* the res of the posted CQE */
		s->off = FZU_MSG_BASE + i;
		s->msg_ring_flags = (opf & 0x4000) ? IORING_MSG_RING_CQE_SKIP : 0;
		if (s->addr == IORING_MSG_SEND_FD)
			s->addr3 = 0, s->file_index = 1;
		break;
	case IORING_OP_FSETXATTR: case IORING_OP_SETXATTR: case IORING_OP_FGETXATTR: case IORING_OP_GETXATTR: {
		a = fzu_obj(z, i, psel, 32, &o);
		snprintf(o, 32, (opf & 1) ? "user.fz%u" : "trusted.x%u", opf % 4);  /* root may set trusted. */
		fzu_obj_done(z, a, o, 32);
		s->addr = a;
		uint32_t vl = len % 512;
		s->addr2 = fzu_data(z, psel >> 3, off, &vl);
		s->len = vl;
		s->xattr_flags = (opf >> 4) & 3;                 /* XATTR_CREATE/REPLACE */
		if (op == IORING_OP_SETXATTR || op == IORING_OP_GETXATTR)
			s->addr3 = fzu_path(z, i, tsel, 1, 1);   /* absolute, inside the directory */
		break;
	}
	case IORING_OP_SOCKET:
		s->fd = AF_UNIX;
		s->off = (uint64_t)((opf % 3 == 0 ? SOCK_STREAM : opf % 3 == 1 ? SOCK_DGRAM : SOCK_SEQPACKET) |
				    SOCK_CLOEXEC | (opf & 0x10 ? SOCK_NONBLOCK : 0));
		s->len = 0;
		s->rw_flags = 0;
		if (opf & 0x2000)
			s->file_index = (opf & 0x4000) ? IORING_FILE_INDEX_ALLOC : 1u + bsel % 4u;
		break;
	default:                                     /* URING_CMD, zero copy, unknown: no valid pointer */
		s->addr = fzu_invalid(z, psel);
		s->addr2 = fzu_invalid(z, psel >> 2);
		s->len = len;
		s->off = off;
		break;
	}
}

/* ---- completions ---- */

/* fd, returned by SQE ud, is the ring's to close at the end. */
static int fzu_opened(struct fzu *z, const struct fzu_sqe *q, uint64_t ud, int fd)
{
	if (fd >= FZU_MAXFD)
		FZU_BAD("SQE %llu (op %u) opened fd %d, too high for the harness", (unsigned long long)ud, q->op, fd);
	if (z->opened[fd]++)
		FZU_BAD("SQE %llu (op %u) returned fd %d, which was open already", (unsigned long long)ud, q->op, fd);
	z->last_open = fd;
	return 0;
}

static int fzu_cqe(struct fzu *z, const struct io_uring_cqe *c)
{
	uint64_t ud = c->user_data;
	if (fzu_trace)
		fprintf(stderr, "  cqe %llx res %d flags %x\n", (unsigned long long)ud, c->res, c->flags);
	z->order++;
	if (ud >= FZU_TAG_BASE) {
		if (ud - FZU_TAG_BASE >= z->tags || ud - FZU_TAG_BASE >= 64)
			FZU_BAD("a CQE for tag %llu that was never registered", (unsigned long long)(ud - FZU_TAG_BASE));
		if (++z->tag_cqes[ud - FZU_TAG_BASE] > 1)
			FZU_BAD("two CQEs for tag %llu", (unsigned long long)(ud - FZU_TAG_BASE));
		return 0;
	}
	if (ud >= FZU_MSG_BASE) {
		uint64_t k = ud - FZU_MSG_BASE;
		if (k >= z->nq || z->q[k].op != IORING_OP_MSG_RING)
			FZU_BAD("a MSG_RING CQE %llx that no MSG_RING SQE sent", (unsigned long long)ud);
		z->q[k].msg_cqes++;
		return 0;
	}
	if (ud == 0 || ud > z->nq)
		FZU_BAD("a CQE for user_data %llu, never submitted", (unsigned long long)ud);
	struct fzu_sqe *q = &z->q[ud - 1];
	int zc = q->op == IORING_OP_SEND_ZC || q->op == IORING_OP_SENDMSG_ZC;
	if (c->flags & IORING_CQE_F_NOTIF) {
		/* a zero-copy send's notification: once, after a result CQE that announced it */
		if (!zc || !q->zc_more || q->zc_notifs++)
			FZU_BAD("SQE %llu (op %u) got an unannounced notification CQE", (unsigned long long)ud, q->op);
		return 0;
	}
	if ((c->flags & IORING_CQE_F_MORE) && !zc) {
		/* a wake-up of a multishot poll, a connection of a multishot accept: not its
		 * completion, a final CQE without F_MORE follows */
		if ((q->op != IORING_OP_POLL_ADD && q->op != IORING_OP_ACCEPT) || q->cqes)
			FZU_BAD("SQE %llu (op %u) got a CQE with F_MORE (res %d)", (unsigned long long)ud, q->op, c->res);
		if (ud > z->placed_done)
			FZU_BAD("SQE %llu completed before it was submitted", (unsigned long long)ud);
		if (q->op == IORING_OP_ACCEPT && c->res >= 0 && !q->direct)
			return fzu_opened(z, q, ud, c->res);
		return 0;
	}
	if (zc && (c->flags & IORING_CQE_F_MORE))
		q->zc_more = 1;
	if (++q->cqes > 1)
		FZU_BAD("SQE %llu (op %u flags %#x) got a second CQE (res %d)", (unsigned long long)ud, q->op, q->flags, c->res);
	if (ud > z->placed_done)
		FZU_BAD("SQE %llu completed before it was submitted", (unsigned long long)ud);
	q->res = c->res;
	q->order = z->order;
	fzu_last_ok += c->res >= 0;
	if (q->closing && c->res < 0)
		z->opened[q->fd]++;              /* not closed (cancelled): still ours */
	/* fds the ring opened: the harness closes them at the end */
	if (c->res >= 0 && !q->direct && (q->op == IORING_OP_OPENAT || q->op == IORING_OP_OPENAT2 ||
					  q->op == IORING_OP_SOCKET || q->op == IORING_OP_ACCEPT))
		return fzu_opened(z, q, ud, c->res);
	return 0;
}

static int fzu_check_ring(struct fzu *z)
{
	struct io_uring *r = &z->ring;
	unsigned sh = io_uring_smp_load_acquire(r->sq.khead), st = *r->sq.ktail;
	unsigned ch = *r->cq.khead, ct = io_uring_smp_load_acquire(r->cq.ktail);
	if (st - sh > r->sq.ring_entries)
		FZU_BAD("SQ head %u tail %u: more than %u entries", sh, st, r->sq.ring_entries);
	if (ct - ch > r->cq.ring_entries)
		FZU_BAD("CQ head %u tail %u: more than %u entries", ch, ct, r->cq.ring_entries);
	if (*r->cq.koverflow)
		FZU_BAD("cq.overflow %u: CQEs were dropped", *r->cq.koverflow);
	if (*r->sq.kflags & ~(IORING_SQ_NEED_WAKEUP | IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN))
		FZU_BAD("unknown SQ flags %#x", *r->sq.kflags);
	return 0;
}

/* Take what is in the CQ (max: how many; mode: 0 one by one, 1 batch + advance). */
static int fzu_reap(struct fzu *z, unsigned max, int mode)
{
	struct io_uring_cqe *c, *cs[16];
	if (fzu_check_ring(z))
		return 1;
	for (unsigned got = 0; got < max;) {
		if (mode) {
			unsigned n = io_uring_peek_batch_cqe(&z->ring, cs, 16);
			if (!n)
				break;
			for (unsigned k = 0; k < n; k++)
				if (fzu_cqe(z, cs[k]))
					return 1;
			io_uring_cq_advance(&z->ring, n);
			got += n;
		} else {
			if (io_uring_peek_cqe(&z->ring, &c) || !c)
				break;
			if (fzu_cqe(z, c))
				return 1;
			io_uring_cqe_seen(&z->ring, c);
			got++;
		}
	}
	return fzu_check_ring(z);
}

/* A submission consumed n SQEs from placed_done on: a batch ends a chain. */
static void fzu_consumed(struct fzu *z, int n)
{
	if (n <= 0)
		return;
	if (fzu_trace)
		fprintf(stderr, "  submitted %d\n", n);
	z->placed_done += (unsigned)n;
	if (z->placed_done > z->nq)
		z->placed_done = z->nq;
	if (z->placed_done)
		z->q[z->placed_done - 1].batch_end = 1;
}

/* Submit (wait: and wait for wait_nr CQEs or ns); reap: then take the CQ. */
static int fzu_submit(struct fzu *z, int wait, unsigned wait_nr, unsigned ns, int reap)
{
	int r;
	if (wait) {
		struct __kernel_timespec ts = { 0, ns };
		struct io_uring_cqe *c;
		unsigned before = io_uring_sq_ready(&z->ring);
		r = io_uring_submit_and_wait_timeout(&z->ring, &c, wait_nr, &ts, NULL);
		/* it returns the wait's result; what it took shows in the SQ */
		fzu_consumed(z, (int)(before - io_uring_sq_ready(&z->ring)));
		(void)r;
	} else {
		r = io_uring_submit(&z->ring);
		if (r < 0 && r != -EBUSY && r != -EAGAIN && r != -EINTR)
			FZU_BAD("io_uring_submit: %s", strerror(-r));
		fzu_consumed(z, r);
	}
	return reap ? fzu_reap(z, ~0u, 0) : fzu_check_ring(z);
}

/* The system-call front's mmap of the ring fd (sysfront.c, what a program's own mmap of its
 * ring gets): a length, offset, protection and flags from a, b; a mapping it gives must show
 * the ring's own SQ/CQ sizes (SQ or CQ ring) and is unmapped again. 0, or 1 with fzu_why. */
static int fzu_front_mmap(struct fzu *z, uint8_t a, uint8_t b)
{
	static const unsigned long offs[] = { IORING_OFF_SQ_RING, IORING_OFF_CQ_RING, IORING_OFF_SQES,
					      0x1234000, 0x80000000ul, 0x40000000ul, 0xffffffffffff0000ul, 1 };
	static const long lens[] = { 0, 1, 4096, 8192, 65536, 1l << 24, -4096l, 0x7fffffffffffl };
	static const int prots[] = { PROT_READ | PROT_WRITE, PROT_READ, PROT_NONE, PROT_WRITE };
	static const int flags[] = { MAP_SHARED, MAP_PRIVATE, MAP_SHARED | MAP_FIXED_NOREPLACE, MAP_SHARED_VALIDATE };
	unsigned long off = offs[a % 8];
	long args[6] = { 0, lens[(a >> 3) % 8], prots[(a >> 6) % 4], flags[b % 4], z->ring.ring_fd, (long)off };
	long m = urfs_sysfront_call(__NR_mmap, args);
	if (m < 0 && m > -4096)
		return 0;
	if (args[1] <= 0 || (unsigned long)args[1] > (1ul << 24))
		FZU_BAD("the front mapped %ld bytes of the ring at offset %#lx", args[1], off);
	struct io_uring *r = &z->ring;
	size_t sq_at = (size_t)((char *)r->sq.kring_entries - (char *)r->sq.ring_ptr);
	size_t cq_at = (size_t)((char *)r->cq.kring_entries - (char *)r->cq.ring_ptr);
	if ((off & 0xf8000000ul) != IORING_OFF_SQES && (prots[(a >> 6) % 4] & PROT_READ) &&
	    (unsigned long)args[1] >= 512 &&
	    (*(unsigned *)((char *)m + sq_at) != *r->sq.kring_entries ||
	     *(unsigned *)((char *)m + cq_at) != *r->cq.kring_entries))
		FZU_BAD("the front's mapping at offset %#lx does not show the ring", off);
	munmap((void *)m, (size_t)args[1]);
	return 0;
}

static int fzu_register(struct fzu *z, struct fzu_in *in)
{
	uint8_t w = fzu_u8(in), a = fzu_u8(in), b = fzu_u8(in);
	struct io_uring *r = &z->ring;
	struct iovec v[4];
	int fds[4];
	__u64 tags[4];
	unsigned n = a % 4 + 1;
	for (unsigned k = 0; k < n; k++) {
		uint32_t l = 4096u << (k & 1);
		v[k].iov_base = (void *)(uintptr_t)fzu_data(z, (b >> k) & 1 ? b >> 2 : 0, k * 8192 + 4096, &l);
		v[k].iov_len = l;
		fds[k] = fzu_fd(z, (unsigned)b + k * 5);
		if (fds[k] == r->ring_fd)
			fds[k] = -1;
		tags[k] = (a & 0x80) && z->tags < 64 ? FZU_TAG_BASE + z->tags++ : 0;
		if (!tags[k] && (a & 0x80))
			tags[k] = 0;
	}
	switch (w % 12) {
	case 0: io_uring_register_buffers_tags(r, v, tags, n); break;
	case 1: io_uring_register_buffers_sparse(r, 4); break;
	case 2: io_uring_register_buffers_update_tag(r, b % 5, v, tags, n); break;
	case 3: io_uring_unregister_buffers(r); break;
	case 4: io_uring_register_files_tags(r, fds, tags, n); break;
	case 5: io_uring_register_files_sparse(r, 8); break;
	case 6: io_uring_register_files_update_tag(r, b % 9, fds, tags, n); break;
	case 7: io_uring_unregister_files(r); break;
	case 8:
		if (a & 1)
			io_uring_unregister_eventfd(r);
		else if (a & 2)
			io_uring_register_eventfd_async(r, z->efd);
		else
			io_uring_register_eventfd(r, z->efd);
		break;
	case 9: {
		struct io_uring_sync_cancel_reg reg = { .addr = 1 + b % (z->nq + 1), .fd = fzu_fd(z, a),
			.flags = (a >> 4) & (IORING_ASYNC_CANCEL_ALL | IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ANY),
			.timeout = { 0, 1000000 } };
		io_uring_register_sync_cancel(r, &reg);
		break;
	}
	case 10: io_uring_register_file_alloc_range(r, a % 8, b % 8); break;
	default: {
		if (b & 0x80)
			return fzu_front_mmap(z, a, b);
		unsigned vals[2] = { a % 5, b % 5 };
		io_uring_register_iowq_max_workers(r, vals);
		struct io_uring_probe *p = io_uring_get_probe_ring(r);
		io_uring_free_probe(p);
		break;
	}
	}
	return fzu_reap(z, ~0u, 0);
}

/* The harness's own side of the pipe, the socket, the eventfd (never blocks). */
static void fzu_poke(struct fzu *z, uint8_t w)
{
	char b[512];
	memset(b, 'p', sizeof b);
	uint64_t one = 1;
	switch (w % 4) {
	case 0: if (write(z->hpw, b, w) < 0) {} break;
	case 1: if (send(z->s1, b, w, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {} break;
	case 2: if (write(z->efd, &one, 8) < 0) {} break;
	default: if (recv(z->s1, b, sizeof b, MSG_DONTWAIT) < 0) {} if (read(z->hpr, b, sizeof b) < 0) {} break;
	}
}

/* Chains are exact: a submission batch ends one. A chain with a CQE_SKIP_SUCCESS
 * member may silence the rest (a failed one silences their cancellations). */
static void fzu_mark_chains(struct fzu *z)
{
	unsigned cid = 0;
	for (unsigned i = 0; i < z->placed_done; i++) {
		unsigned st = i;
		/* (flags 0xff fail preparation but link on, as on the kernel's ring) */
		while (i < z->placed_done && (z->q[i].flags & (IOSQE_IO_LINK | IOSQE_IO_HARDLINK)) &&
		       !z->q[i].batch_end)
			i++;
		if (i == st)
			continue;
		cid++;
		int skip = 0;
		for (unsigned k = st; k <= i; k++)
			skip |= !!(z->q[k].flags & IOSQE_CQE_SKIP_SUCCESS);
		for (unsigned k = st; k <= i; k++) {
			z->q[k].chain = (uint16_t)cid;
			z->q[k].skip_ok |= (uint8_t)skip;
		}
	}
}

/* The members of a chain complete in order; after a failed IO_LINK (soft) member, the rest fail. */
static int fzu_check_chains(struct fzu *z)
{
	for (unsigned st = 0; st < z->placed_done;) {
		unsigned i = st;
		if (!z->q[st].chain) {
			st++;
			continue;
		}
		while (i + 1 < z->placed_done && z->q[i + 1].chain == z->q[st].chain)
			i++;
		struct fzu_sqe *prev = NULL;
		int failed = 0;
		for (unsigned k = st; k <= i && !z->q[st].skip_ok; k++) {
			struct fzu_sqe *q = &z->q[k];
			if (q->is_lt || !q->cqes)
				continue;
			if (prev && q->order < prev->order)
				FZU_BAD("chain: SQE %u (op %u) completed before SQE %u (op %u) linked before it",
					k + 1, q->op, (unsigned)(prev - z->q) + 1, prev->op);
			if (failed && q->res >= 0)
				FZU_BAD("chain: SQE %u (op %u) ran (res %d) after a linked request failed",
					k + 1, q->op, q->res);
			if (q->res < 0 && !q->etime_ok && !(q->flags & IOSQE_IO_HARDLINK) && k < i)
				failed = 1;
			prev = q;
		}
		st = i + 1;
	}
	return 0;
}

/* A successful IO_DRAIN request outside chains: after all before it, before all that
 * succeeded after it. */
static int fzu_check_drain(struct fzu *z)
{
	for (unsigned d = 0; d < z->placed_done; d++) {
		struct fzu_sqe *D = &z->q[d];
		if (!(D->flags & IOSQE_IO_DRAIN) || D->flags == 0xff || D->chain || !D->cqes || D->res < 0)
			continue;
		for (unsigned k = 0; k < z->placed_done; k++) {
			struct fzu_sqe *q = &z->q[k];
			if (k == d || !q->cqes || q->res == -ECANCELED)
				continue;
			if (k < d && q->order > D->order)
				FZU_BAD("drain: SQE %u (op %u) completed after the IO_DRAIN SQE %u submitted after it",
					k + 1, q->op, d + 1);
			/* (one that fails preparation completes at once, drain or not, as on the kernel's ring) */
			if (k > d && q->res >= 0 && q->order < D->order)
				FZU_BAD("drain: SQE %u (op %u) completed before the IO_DRAIN SQE %u submitted before it",
					k + 1, q->op, d + 1);
		}
	}
	return 0;
}

static void fzu_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void fzu_fds_close(struct fzu *z)
{
	fzu_close(&z->reg);
	fzu_close(&z->odirect);
	fzu_close(&z->pr);
	fzu_close(&z->pw);
	fzu_close(&z->hpr);
	fzu_close(&z->hpw);
	fzu_close(&z->s0);
	fzu_close(&z->s1);
	fzu_close(&z->efd);
	fzu_close(&z->epfd);
	fzu_close(&z->dirfd);
	for (int f = 0; f < FZU_MAXFD; f++)
		if (z->opened[f]) {
			close(f);
			z->opened[f] = 0;
		}
}

/* Cancel anything, synchronously (an ASYNC_CANCEL SQE would itself wait behind a
 * drained chain that waits for a request that never ends, as on the kernel's ring);
 * again and again: what a hard link starts after a cancelled request needs another. */
static int fzu_cancel_all(struct fzu *z)
{
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.flags = IORING_ASYNC_CANCEL_ANY;
	reg.fd = -1;
	reg.timeout.tv_sec = 0;
	reg.timeout.tv_nsec = 1000000;
	int r = io_uring_register_sync_cancel(&z->ring, &reg);
	if (r < 0 && r != -ENOENT && r != -EALREADY && r != -ETIME)
		FZU_BAD("io_uring_register_sync_cancel(ANY): %s", strerror(-r));
	return 0;
}

/* Everything still out: cancel, unblock workers blocked in the kernel, wait (bounded). */
static int fzu_drain_all(struct fzu *z)
{
	struct io_uring *r = &z->ring;
	for (int k = 0; k < 64 && io_uring_sq_ready(r); k++)
		if (fzu_submit(z, 0, 0, 0, 1))
			return 1;
	if (io_uring_sq_ready(r))
		FZU_BAD("%u SQEs never taken by io_uring_submit", io_uring_sq_ready(r));
	fzu_mark_chains(z);
	if (fzu_cancel_all(z))
		return 1;
	io_uring_unregister_files(r);          /* its dups would keep the pipe open */
	int fl;
	int *nb[] = { &z->pr, &z->pw, &z->s0, &z->s1, &z->efd };
	for (unsigned k = 0; k < 5; k++)
		if ((fl = fcntl(*nb[k], F_GETFL)) >= 0)
			fcntl(*nb[k], F_SETFL, fl | O_NONBLOCK);
	shutdown(z->s0, SHUT_RDWR);
	shutdown(z->s1, SHUT_RDWR);
	fzu_close(&z->pw);
	fzu_close(&z->pr);
	fzu_close(&z->hpw);
	fzu_close(&z->hpr);
	for (int k = 0; k < 600; k++) {
		uint64_t v = 1;
		if (write(z->efd, &v, 8) < 0 && read(z->efd, &v, 8) < 0) {}
		if (k & 1 && read(z->efd, &v, 8) < 0) {}
		if (fzu_reap(z, ~0u, k & 1))
			return 1;
		unsigned out = 0;
		for (unsigned i = 0; i < z->placed_done; i++)
			out += !z->q[i].cqes && !z->q[i].skip_ok && !(z->q[i].flags & IOSQE_CQE_SKIP_SUCCESS);
		if (!out) {
			/* a moment for late extra CQEs (a second one for an SQE is a finding) */
			usleep(200);
			return fzu_reap(z, ~0u, 0);
		}
		struct __kernel_timespec ts = { 0, 5000000 };
		struct io_uring_cqe *c;
		if (io_uring_wait_cqe_timeout(r, &c, &ts) == -ETIME && fzu_cancel_all(z))
			return 1;
	}
	for (unsigned i = 0; i < z->placed_done; i++)
		if (!z->q[i].cqes && !z->q[i].skip_ok && !(z->q[i].flags & IOSQE_CQE_SKIP_SUCCESS))
			FZU_BAD("SQE %u (op %u flags %#x) never completed, even after cancels of all (3 s)",
				i + 1, z->q[i].op, z->q[i].flags);
	for (unsigned i = 0; i < z->placed_done; i++)
		if (z->q[i].zc_more != z->q[i].zc_notifs)
			FZU_BAD("SQE %u (op %u): its result announced a notification that never came", i + 1, z->q[i].op);
	return 0;
}

static int fzu_base_fds = -1, fzu_base_threads = -1;
static uint8_t fzu_fdset[FZU_MAXFD];       /* fds open before the input (the first 64 looked at) */
static struct fzu fzu_state;

static int fzu_setup(struct fzu *z)
{
	if (!z->mem) {
		z->mem_sz = FZU_PAGE + FZU_DATA + FZU_PAGE + FZU_SLOTS + FZU_PAGE + 2 * FZU_NSTRAD * FZU_PAGE;
		z->mem = mmap(NULL, z->mem_sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (z->mem == MAP_FAILED)
			return -1;
		z->data = z->mem + FZU_PAGE;
		z->guard1 = z->data + FZU_DATA;
		z->slots = z->guard1 + FZU_PAGE;
		z->guard2 = z->slots + FZU_SLOTS;
		z->strad = z->guard2 + FZU_PAGE;
		if (mprotect(z->mem, FZU_PAGE, PROT_NONE) || mprotect(z->guard1, FZU_PAGE, PROT_NONE) ||
		    mprotect(z->guard2, FZU_PAGE, PROT_NONE))
			return -1;
		for (unsigned k = 0; k < FZU_NSTRAD; k++)
			if (mprotect(fzu_edge(z, k), FZU_PAGE, PROT_NONE))
				return -1;
		signal(SIGPIPE, SIG_IGN);       /* sends on a shut socket answer EPIPE */
		setenv("URING_EMULATE", "1", 1);
	}
	return 0;
}

/* One input: 0, or 1 with fzu_why saying which invariant broke. */
static int fuzz_uring_input(const uint8_t *data, size_t size)
{
	struct fzu *z = &fzu_state;
	struct fzu_in in = { data, size };
	fzu_why[0] = 0;
	fzu_last_sqes = fzu_last_ok = 0;
	if (fzu_setup(z))
		FZU_BAD("harness setup: %s", strerror(errno));
	/* what the process has before this input (libFuzzer may open fds of its own between inputs) */
	fzu_base_fds = fzu_count("fd");
	for (int f = 0; f < FZU_MAXFD; f++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", f);
		fzu_fdset[f] = f < 64 ? !access(path, F_OK) : fzu_fdset[f];
	}
	if (fzu_base_threads < 0)
		fzu_base_threads = fzu_count("threads");
	char *keep = z->mem, *d = z->data, *g1 = z->guard1, *sl = z->slots, *g2 = z->guard2, *st = z->strad;
	size_t msz = z->mem_sz;
	memset(z, 0, sizeof *z);
	z->mem = keep, z->data = d, z->guard1 = g1, z->slots = sl, z->guard2 = g2, z->strad = st, z->mem_sz = msz;
	memset(z->data, 'd', FZU_DATA);
	z->reg = z->odirect = z->pr = z->pw = z->s0 = z->s1 = z->efd = z->epfd = z->dirfd = z->last_open = -1;
	z->hpr = z->hpw = -1;
	int p[2], sv[2];
	if (fzu_reset_dir(z) || pipe2(p, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		FZU_BAD("harness files: %s", strerror(errno));
	z->pr = p[0], z->pw = p[1], z->s0 = sv[0], z->s1 = sv[1];
	char pp[64];
	snprintf(pp, sizeof pp, "/proc/self/fd/%d", p[0]);
	z->hpr = open(pp, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	snprintf(pp, sizeof pp, "/proc/self/fd/%d", p[1]);
	z->hpw = open(pp, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	/* non-blocking: the harness's own writes to it must never block */
	z->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	z->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (z->efd < 0 || z->epfd < 0 || z->hpr < 0 || z->hpw < 0)
		FZU_BAD("harness fds: %s", strerror(errno));

	uint8_t g = fzu_u8(&in), f = fzu_u8(&in);
	struct io_uring_params par;
	memset(&par, 0, sizeof par);
	unsigned entries = 1u << (g % 6);
	if (f & 1) {
		par.flags |= IORING_SETUP_CQSIZE;
		par.cq_entries = entries << ((f >> 4) & 3);
	}
	if (f & 2)
		par.flags |= IORING_SETUP_SUBMIT_ALL;
	if (f & 4)
		par.flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	if (f & 8)
		par.flags |= IORING_SETUP_SINGLE_ISSUER;
	int e = io_uring_queue_init_params(entries, &z->ring, &par);
	if (e < 0) {
		fzu_fds_close(z);
		FZU_BAD("io_uring_queue_init_params(%u, flags %#x): %s", entries, par.flags, strerror(-e));
	}
	{
		char path[64], link[64] = "";
		snprintf(path, sizeof path, "/proc/self/fd/%d", z->ring.ring_fd);
		if (readlink(path, link, sizeof link - 1) < 0 || !strstr(link, "eventfd"))
			FZU_BAD("the ring is not the emulated one (%s)", link);
	}
	int bad = 0;
	while (in.n && !bad) {
		uint8_t c = fzu_u8(&in);
		switch (c % 8) {
		case 0: case 7: {    /* 7: IOSQE_IO_LINK on the SQE before, if not yet submitted */
			if (z->nq >= FZU_MAX_SQE)
				break;
			struct io_uring_sqe *s = io_uring_get_sqe(&z->ring);
			if (!s) {                /* SQ full: submit, then place it */
				bad = fzu_submit(z, 0, 0, 0, 1);
				s = bad ? NULL : io_uring_get_sqe(&z->ring);
			}
			if (!s) {
				struct io_uring_sqe junk;
				fzu_fill(z, &junk, z->nq, &in);   /* its bytes are read all the same */
				break;
			}
			unsigned i = z->nq;
			if (c % 8 == 7 && i) {
				/* again the opcode before, linked to it */
				struct io_uring_sqe *ps = z->ring.sq.sqes + ((z->ring.sq.sqe_tail - 2) & *z->ring.sq.kring_mask);
				if (i > z->placed_done)
					ps->flags |= IOSQE_IO_LINK;
				if (i > z->placed_done)
					z->q[i - 1].flags = ps->flags;
			}
			fzu_fill(z, s, i, &in);
			/* an fd the harness never hears of could not be closed */
			if ((s->opcode == IORING_OP_OPENAT || s->opcode == IORING_OP_OPENAT2 ||
			     s->opcode == IORING_OP_SOCKET || s->opcode == IORING_OP_ACCEPT) && !s->file_index)
				s->flags &= (uint8_t)~IOSQE_CQE_SKIP_SUCCESS;
			s->user_data = i + 1;
			if (fzu_trace)
				fprintf(stderr, "  sqe %x op %u flags %#x fd %d addr %#llx len %u off %llu\n", i + 1, s->opcode,
					s->flags, s->fd, (unsigned long long)s->addr, s->len, (unsigned long long)s->off);
			z->q[i].op = s->opcode;
			z->q[i].fd = s->fd;
			z->q[i].direct = s->file_index != 0;
			z->q[i].flags = s->flags;
			z->q[i].is_lt = s->opcode == IORING_OP_LINK_TIMEOUT;
			z->q[i].etime_ok = s->opcode == IORING_OP_TIMEOUT && (s->timeout_flags & IORING_TIMEOUT_ETIME_SUCCESS);
			z->nq++;
			break;
		}
		case 1: bad = fzu_submit(z, 0, 0, 0, !(c & 0x80)); break;
		case 2: {
			uint8_t w = fzu_u8(&in);
			bad = fzu_submit(z, 1, w % 4, (w >> 2) * 32000u, !(c & 0x80));
			break;
		}
		case 3: { uint8_t w = fzu_u8(&in); bad = fzu_reap(z, w % 16 + 1, w >> 7); break; }
		case 4: bad = fzu_register(z, &in); break;
		case 5: {
			uint32_t o = fzu_u16(&in) % FZU_DATA;
			uint8_t n = fzu_u8(&in) % 33;
			for (uint8_t k = 0; k < n && o + k < FZU_DATA; k++)
				z->data[o + k] = (char)fzu_u8(&in);
			break;
		}
		case 6: fzu_poke(z, fzu_u8(&in)); break;
		}
	}
	if (!bad)
		bad = fzu_drain_all(z);
	fzu_last_sqes = z->placed_done;
	/* MSG_RING CQEs: one for each that succeeded without CQE_SKIP (the harness sends to itself) */
	for (unsigned i = 0; !bad && i < z->placed_done; i++) {
		struct fzu_sqe *q = &z->q[i];
		if (q->op != IORING_OP_MSG_RING || !q->cqes)
			continue;
		if (q->msg_cqes > 1 || (q->res < 0 && q->msg_cqes))
			bad = (snprintf(fzu_why, sizeof fzu_why, "MSG_RING SQE %u (res %d) posted %u CQEs",
					i + 1, q->res, q->msg_cqes), 1);
	}
	if (!bad)
		bad = fzu_check_chains(z) || fzu_check_drain(z);
	io_uring_queue_exit(&z->ring);
	fzu_fds_close(z);
	if (!bad) {
		int fds = fzu_count("fd"), th = -1;
		for (int k = 0; k < 2000; k++) {        /* workers leave once the ring is gone */
			th = fzu_count("threads");
			if (th <= fzu_base_threads)
				break;
			usleep(1000);
		}
		if (fds != fzu_base_fds) {
			char what[128] = "", path[64];
			for (int f = 0; f < FZU_MAXFD; f++) {   /* name one that was not there */
				snprintf(path, sizeof path, "/proc/self/fd/%d", f);
				if (fzu_fdset[f] || access(path, F_OK))
					continue;
				ssize_t l = readlink(path, what, sizeof what - 1);
				what[l > 0 ? l : 0] = 0;
				snprintf(path, sizeof path, " (fd %d)", f);
				strncat(what, path, sizeof what - strlen(what) - 1);
				break;
			}
			FZU_BAD("%d fds open after the input, %d before (new: %s)", fds, fzu_base_fds, what);
		}
		if (th > fzu_base_threads)
			FZU_BAD("%d threads 2 s after io_uring_queue_exit, %d before", th, fzu_base_threads);
	}
	return bad;
}

#endif
