/* SPDX-License-Identifier: MIT */
/* Description: every operation on a SimpleFS image through the ring (open
 * flags, read/write at offsets and at the file position, append, readv/writev
 * mixing region and ordinary buffers, fixed buffers, fsync, ftruncate, statx
 * by handle and by name, unlink, close), linked chains cancelled with
 * -ECANCELED (error, short read and short readv; a link whose result is 0
 * goes on), drain, and every malformed SQE class
 * (opcode, flags, reserved bits, fd, buffer index, address/length ranges with
 * overflow, offset, iovec count and ranges, names, statx output, registration,
 * a registration of 0 or more than UR_MAX_BUFS buffers, server-side too;
 * exactly UR_MAX_BUFS register)
 * answered with -EINVAL/-EBADF/-EFAULT/-ENAMETOOLONG in ABI.md's order while
 * the ring stays healthy; an index no longer registered; a buffer larger than
 * the staging area, alone or as a vector's pieces (-ENOBUFS). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sfs.h"
#include "ur_fs.h"

#include "testutil.h"

static struct urfs_ring ring;

/* Submit what is queued and collect n results in order of user_data 0..n-1. */
static void run(unsigned n, int32_t *res)
{
	int s = urfs_submit_and_wait(&ring, n);
	if (s < 0)
		FAIL("submit_and_wait: %s", strerror(-s));
	for (unsigned i = 0; i < n; i++) {
		struct urfs_cqe *cqe;
		int r = urfs_wait_cqe(&ring, &cqe);
		if (r < 0)
			FAIL("wait: %s", strerror(-r));
		if (cqe->user_data >= n)
			FAIL("unexpected user_data %llu", (unsigned long long)cqe->user_data);
		res[cqe->user_data] = cqe->res;
		urfs_cqe_seen(&ring, cqe);
	}
}

static struct urfs_sqe *sqe_get(void)
{
	struct urfs_sqe *sqe = urfs_get_sqe(&ring);
	if (!sqe)
		FAIL("get_sqe");
	return sqe;
}
static struct urfs_sqe *sqe_n(unsigned ud)
{
	(void)ud;
	return sqe_get();
}

#define SET(sqe, ud) urfs_sqe_set_data64((sqe), (ud))

static int32_t one(struct urfs_sqe *sqe)
{
	int32_t r;
	SET(sqe, 0);
	run(1, &r);
	return r;
}

static int do_open(const char *name, unsigned fl)
{
	struct urfs_sqe *s = sqe_n(0);
	urfs_prep_openat(s, name, fl);
	return one(s);
}

static void expect(int32_t got, int32_t want, const char *what)
{
	if (got != want)
		FAIL("%s: got %d (%s), want %d", what, got, got < 0 ? strerror(-got) : "", want);
}

/* Raw SQE (region offsets), one at a time. */
static int32_t raw(struct ur_sqe q)
{
	ring.flags |= URFS_SETUP_RAW;
	struct urfs_sqe *s = sqe_n(0);
	*s = q;
	int32_t r = one(s);
	ring.flags &= ~URFS_SETUP_RAW;
	return r;
}

int main(void)
{
	int r;
	int32_t res[16];
	char buf[8192], buf2[8192];

	if ((r = sfs_format("t.sfs", 64ull << 20, 0)) < 0)
		FAIL("format: %s", strerror(-r));
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = "t.sfs";
	if ((r = urfs_queue_init_params(16, &ring, &p)) < 0)
		FAIL("init: %s (%s)", strerror(-r), p.errmsg);

	/* --- open flags --- */
	int fd = do_open("a", URFS_O_CREAT);
	if (fd < 0) FAIL("open create: %s", strerror(-fd));
	expect(do_open("a", URFS_O_CREAT | URFS_O_EXCL), -EEXIST, "excl");
	expect(do_open("missing", 0), -ENOENT, "missing");
	expect(do_open("", URFS_O_CREAT), -EINVAL, "empty name");
	expect(do_open("0123456789012345678901234567890123456789012345678901234567890123", URFS_O_CREAT),
	       -ENAMETOOLONG, "64-byte name");
	expect(do_open("a", 0x100), -EINVAL, "bad open flags");

	/* --- read/write at offsets --- */
	for (int i = 0; i < 8192; i++)
		buf[i] = (char)(i * 7 + 3);
	struct urfs_sqe *s = sqe_n(0);
	urfs_prep_write(s, fd, buf, 8192, 100);
	expect(one(s), 8192, "write 8192 @100");
	memset(buf2, 0, sizeof(buf2));
	s = sqe_n(0);
	urfs_prep_read(s, fd, buf2, 8192, 100);
	expect(one(s), 8192, "read back");
	if (memcmp(buf, buf2, 8192)) FAIL("read data differs");
	s = sqe_n(0);
	urfs_prep_read(s, fd, buf2, 100, 0);
	expect(one(s), 100, "read hole");
	for (int i = 0; i < 100; i++) if (buf2[i]) FAIL("hole not zero");
	s = sqe_n(0);
	urfs_prep_read(s, fd, buf2, 1000, 8192);
	expect(one(s), 100, "short read at end");
	if (memcmp(buf2, buf + 8092, 100)) FAIL("short read data");
	s = sqe_n(0);
	urfs_prep_read(s, fd, buf2, 10, 8292);
	expect(one(s), 0, "read at EOF");

	/* --- file position --- */
	int fp = do_open("pos", URFS_O_CREAT | URFS_O_TRUNC);
	s = sqe_n(0); urfs_prep_write(s, fp, "abc", 3, URFS_POS); SET(s, 0);
	s = sqe_n(1); urfs_prep_write(s, fp, "defg", 4, URFS_POS); SET(s, 1);
	run(2, res);
	expect(res[0], 3, "pos write 1"); expect(res[1], 4, "pos write 2");
	s = sqe_n(0); urfs_prep_read(s, fp, buf2, 10, 0);
	expect(one(s), 7, "read pos file");
	if (memcmp(buf2, "abcdefg", 7)) FAIL("position writes: %.7s", buf2);

	/* --- append --- */
	int fa = do_open("pos", URFS_O_APPEND);
	s = sqe_n(0); urfs_prep_write(s, fa, "XY", 2, 0);
	expect(one(s), 2, "append");
	s = sqe_n(0); urfs_prep_read(s, fa, buf2, 10, 0);
	expect(one(s), 9, "read appended");
	if (memcmp(buf2, "abcdefgXY", 9)) FAIL("append: %.9s", buf2);

	/* --- fixed buffers --- */
	struct iovec fb[2] = { { NULL, 4096 }, { NULL, 8192 } };
	static struct iovec many[UR_MAX_BUFS + 1];
	for (unsigned i = 0; i <= UR_MAX_BUFS; i++)
		many[i].iov_len = 1;
	expect(urfs_register_buffers(&ring, fb, 0), -EINVAL, "register 0 buffers");
	expect(urfs_register_buffers(&ring, many, UR_MAX_BUFS + 1), -EINVAL, "register 4097 buffers");
	if ((r = urfs_register_buffers(&ring, fb, 2)) < 0) FAIL("register: %s", strerror(-r));
	if (!fb[0].iov_base || !fb[1].iov_base) FAIL("no buffer addresses");
	expect(urfs_register_buffers(&ring, fb, 2), -EBUSY, "second registration");
	memset(fb[1].iov_base, 0x5a, 8192);
	s = sqe_n(0); urfs_prep_write_fixed(s, fd, fb[1].iov_base, 8192, 50000, 1);
	expect(one(s), 8192, "write_fixed");
	memset(fb[0].iov_base, 0, 4096);
	s = sqe_n(0); urfs_prep_read_fixed(s, fd, fb[0].iov_base, 4096, 52000, 0);
	expect(one(s), 4096, "read_fixed");
	for (int i = 0; i < 4096; i++) if (((char *)fb[0].iov_base)[i] != 0x5a) FAIL("fixed data");
	s = sqe_n(0); urfs_prep_read_fixed(s, fd, fb[1].iov_base, 4096, 0, 0);
	expect(one(s), -EFAULT, "fixed: buffer not in index 0");
	s = sqe_n(0); urfs_prep_read_fixed(s, fd, fb[0].iov_base, 8192, 0, 0);
	expect(one(s), -EFAULT, "fixed: longer than the buffer");
	s = sqe_n(0); urfs_prep_read_fixed(s, fd, fb[0].iov_base, 10, 0, 7);
	expect(one(s), -EFAULT, "fixed: bad index");
	s = sqe_n(0); urfs_prep_read_fixed(s, fd, buf2, 10, 0, 0);
	expect(one(s), -EFAULT, "fixed: ordinary memory");
	/* an index no longer registered (2 buffers, then 1): -EFAULT, even where the
	 * old buffer's memory is still there */
	{
		void *old1 = fb[1].iov_base;
		struct iovec one_fb = { NULL, 4096 };
		expect(urfs_unregister_buffers(&ring), 0, "unregister");
		expect(urfs_register_buffers(&ring, &one_fb, 1), 0, "register one");
		s = sqe_n(0); urfs_prep_read_fixed(s, fd, old1, 4096, 0, 1);
		expect(one(s), -EFAULT, "fixed: index 1 of 1 buffer");
		expect(urfs_unregister_buffers(&ring), 0, "unregister");
		void *b0 = fb[0].iov_base, *b1 = fb[1].iov_base;
		expect(urfs_register_buffers(&ring, fb, 2), 0, "register two again");
		if (fb[0].iov_base != b0 || fb[1].iov_base != b1)
			FAIL("registered buffers moved");
	}

	/* --- readv/writev, region and ordinary buffers mixed --- */
	char v1[5] = "hello", v3[7] = "-world!";
	memcpy(fb[0].iov_base, ", ", 2);
	struct iovec wv[3] = { { v1, 5 }, { fb[0].iov_base, 2 }, { v3, 7 } };
	int fv = do_open("vec", URFS_O_CREAT | URFS_O_TRUNC);
	s = sqe_n(0); urfs_prep_writev(s, fv, wv, 3, 0);
	expect(one(s), 14, "writev");
	char r1[3], r3[20];
	memset(fb[1].iov_base, 0, 16);
	struct iovec rv[3] = { { r1, 3 }, { fb[1].iov_base, 4 }, { r3, 20 } };
	s = sqe_n(0); urfs_prep_readv(s, fv, rv, 3, 0);
	expect(one(s), 14, "readv");
	if (memcmp(r1, "hel", 3) || memcmp(fb[1].iov_base, "lo, ", 4) || memcmp(r3, "-world!", 7))
		FAIL("readv data");

	/* --- fsync, ftruncate, statx, unlink, close --- */
	struct urfs_statx st;
	s = sqe_n(0); urfs_prep_fsync(s, fd, 0);
	expect(one(s), 0, "fsync");
	s = sqe_n(0); urfs_prep_ftruncate(s, fd, 1000);
	expect(one(s), 0, "ftruncate");
	memset(&st, 0xff, sizeof(st));
	s = sqe_n(0); urfs_prep_statx(s, fd, NULL, &st);
	expect(one(s), 0, "statx fd");
	if (st.size != 1000) FAIL("size after truncate: %llu", (unsigned long long)st.size);
	memset(&st, 0xff, sizeof(st));
	s = sqe_n(0); urfs_prep_statx(s, -1, "vec", &st);
	expect(one(s), 0, "statx name");
	if (st.size != 14) FAIL("statx name size %llu", (unsigned long long)st.size);
	s = sqe_n(0); urfs_prep_statx(s, -1, "nothere", &st);
	expect(one(s), -ENOENT, "statx missing");
	s = sqe_n(0); urfs_prep_close(s, fv);
	expect(one(s), 0, "close");
	s = sqe_n(0); urfs_prep_read(s, fv, buf2, 10, 0);
	expect(one(s), -EBADF, "read closed fd");
	s = sqe_n(0); urfs_prep_close(s, fv);
	expect(one(s), -EBADF, "close twice");
	s = sqe_n(0); urfs_prep_unlink(s, "vec");
	expect(one(s), 0, "unlink");
	expect(do_open("vec", 0), -ENOENT, "open unlinked");
	s = sqe_n(0); urfs_prep_unlink(s, "vec");
	expect(one(s), -ENOENT, "unlink twice");

	/* --- links --- */
	s = sqe_n(0); urfs_prep_write(s, fd, "L", 1, 0); SET(s, 0); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(1); urfs_prep_read(s, 9999, buf2, 1, 0); SET(s, 1); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(2); urfs_prep_write(s, fd, "M", 1, 1); SET(s, 2); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(3); urfs_prep_nop(s); SET(s, 3);
	s = sqe_n(4); urfs_prep_nop(s); SET(s, 4);
	run(5, res);
	expect(res[0], 1, "link[0]"); expect(res[1], -EBADF, "link[1]");
	expect(res[2], -ECANCELED, "link[2]"); expect(res[3], -ECANCELED, "link[3] (end of chain)");
	expect(res[4], 0, "after the chain");
	s = sqe_n(0); urfs_prep_read(s, fd, buf2, 1, 1);
	expect(one(s), 1, "read");
	if (buf2[0] == 'M') FAIL("cancelled write happened");
	/* a short read breaks a chain too */
	s = sqe_n(0); urfs_prep_read(s, fd, buf2, 100, 950); SET(s, 0); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(1); urfs_prep_nop(s); SET(s, 1);
	run(2, res);
	expect(res[0], 50, "short linked read"); expect(res[1], -ECANCELED, "after short read");
	struct iovec sv[2] = { { buf2, 30 }, { buf2 + 30, 70 } };
	s = sqe_n(0); urfs_prep_readv(s, fd, sv, 2, 950); SET(s, 0); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(1); urfs_prep_nop(s); SET(s, 1);
	run(2, res);
	expect(res[0], 50, "short linked readv"); expect(res[1], -ECANCELED, "after short readv");
	/* a good chain runs whole */
	s = sqe_n(0); urfs_prep_write(s, fd, "QQ", 2, 10); SET(s, 0); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(1); urfs_prep_read(s, fd, buf2, 2, 10); SET(s, 1);
	run(2, res);
	expect(res[0], 2, "chain w"); expect(res[1], 2, "chain r");
	if (memcmp(buf2, "QQ", 2)) FAIL("chain data");
	/* links whose result is 0 (a NOP, an FSYNC) succeeded: the chain goes on */
	s = sqe_n(0); urfs_prep_nop(s); SET(s, 0); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(1); urfs_prep_fsync(s, fd, 0); SET(s, 1); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	s = sqe_n(2); urfs_prep_read(s, fd, buf2, 2, 10); SET(s, 2);
	run(3, res);
	expect(res[0], 0, "chain nop"); expect(res[1], 0, "chain fsync after nop"); expect(res[2], 2, "chain read after fsync");

	/* a chain may span submissions: the link state carries over */
	s = sqe_n(0); urfs_prep_read(s, 9999, buf2, 1, 0); SET(s, 0); urfs_sqe_set_flags(s, URFS_IOSQE_IO_LINK);
	if (urfs_submit(&ring) != 1) FAIL("submit first half");
	s = sqe_n(1); urfs_prep_write(s, fd, "Z", 1, 5); SET(s, 1);
	run(2, res);
	expect(res[0], -EBADF, "span[0]"); expect(res[1], -ECANCELED, "span[1] in the next submit");
	/* wait with a timeout that a completion beats */
	{
		struct timespec ts = { 5, 0 };
		struct urfs_cqe *c;
		s = sqe_n(0); urfs_prep_nop(s); SET(s, 77);
		urfs_submit(&ring);
		if ((r = urfs_wait_cqe_timeout(&ring, &c, &ts)) < 0 || c->user_data != 77)
			FAIL("wait_cqe_timeout: %d", r);
		urfs_cqe_seen(&ring, c);
	}

	/* --- drain --- */
	for (unsigned i = 0; i < 4; i++) {
		s = sqe_n(i); urfs_prep_write(s, fd, "D", 1, 20 + i); SET(s, i);
	}
	s = sqe_n(4); urfs_prep_read(s, fd, buf2, 4, 20); SET(s, 4); urfs_sqe_set_flags(s, URFS_IOSQE_IO_DRAIN);
	run(5, res);
	expect(res[4], 4, "drained read");
	if (memcmp(buf2, "DDDD", 4)) FAIL("drain order");

	/* --- malformed SQEs (raw region offsets) --- */
	struct ur_region_hdr *h = (struct ur_region_hdr *)ring.region;
	uint64_t data = h->data_off, rsz = h->size;
	struct ur_sqe q0;
	memset(&q0, 0, sizeof(q0));
	q0.opcode = UR_OP_READ; q0.fd = fd; q0.addr = data; q0.len = 16; q0.off = 0;
	struct ur_sqe q;
	expect(raw(q0), 16, "raw baseline read");
	q = q0; q.opcode = 200; expect(raw(q), -EINVAL, "bad opcode");
	q = q0; q.opcode = UR_OP_LAST; expect(raw(q), -EINVAL, "opcode LAST");
	q = q0; q.flags = 0x80; expect(raw(q), -EINVAL, "bad flags");
	q = q0; q.reserved[1] = 1; expect(raw(q), -EINVAL, "reserved bits");
	q = q0; q.fd = -5; expect(raw(q), -EBADF, "negative fd");
	q = q0; q.fd = 1 << 30; expect(raw(q), -EBADF, "huge fd");
	q = q0; q.opcode = UR_OP_CLOSE; q.fd = 1 << 30; expect(raw(q), -EBADF, "close a huge fd");
	q = q0; q.opcode = UR_OP_FSYNC; q.fd = 1 << 20; expect(raw(q), -EBADF, "fsync a huge fd");
	q = q0; q.addr = 0; expect(raw(q), -EFAULT, "addr in header");
	q = q0; q.addr = h->sqes_off; expect(raw(q), -EFAULT, "addr in SQ array");
	q = q0; q.addr = rsz - 8; expect(raw(q), -EFAULT, "crosses region end");
	q = q0; q.addr = rsz + 4096; expect(raw(q), -EFAULT, "beyond region");
	q = q0; q.addr = UINT64_MAX - 4; expect(raw(q), -EFAULT, "overflowing addr");
	q = q0; q.len = 0x80000000u; expect(raw(q), -EINVAL, "len > INT32_MAX");
	q = q0; q.len = (uint32_t)(rsz - data + 1); expect(raw(q), -EFAULT, "len beyond data area");
	q = q0; q.off = 1ull << 63; expect(raw(q), -EINVAL, "offset > INT64_MAX");
	q = q0; q.opcode = UR_OP_WRITE; q.addr = 64; expect(raw(q), -EFAULT, "write from header");
	q = q0; q.opcode = UR_OP_READ_FIXED; q.buf_index = 999; expect(raw(q), -EFAULT, "fixed bad index");
	q = q0; q.opcode = UR_OP_READ_FIXED; q.buf_index = 0; expect(raw(q), -EFAULT, "fixed outside buffer");
	q = q0; q.opcode = UR_OP_READV; q.len = 0; expect(raw(q), -EINVAL, "readv 0 iovecs");
	q = q0; q.opcode = UR_OP_READV; q.len = UR_IOV_MAX + 1; expect(raw(q), -EINVAL, "readv too many");
	q = q0; q.opcode = UR_OP_READV; q.len = 1; q.addr = 8; expect(raw(q), -EFAULT, "iovec array outside");
	struct ur_iovec *uv = (struct ur_iovec *)(ring.region + data);
	uv[0].off = data + 64; uv[0].len = 8; uv[1].off = 0; uv[1].len = 8;
	q = q0; q.opcode = UR_OP_READV; q.len = 2; expect(raw(q), -EFAULT, "iovec pointing at header");
	uv[1].off = data + 128; uv[1].len = UINT64_MAX - 100;
	expect(raw(q), -EFAULT, "iovec length overflow");
	memcpy(ring.region + data + 512, "ok/no", 5);
	q = q0; q.opcode = UR_OP_OPENAT; q.fd = -1; q.addr = data + 512; q.len = 5;
	expect(raw(q), -EINVAL, "name with slash");
	q.len = 0; expect(raw(q), -EINVAL, "name length 0");
	q.len = 64; expect(raw(q), -ENAMETOOLONG, "name length 64");
	q.len = 2; q.addr = 16; expect(raw(q), -EFAULT, "name in header");
	q.addr = data + 512; q.op_flags = 0x40; expect(raw(q), -EINVAL, "open flag bits");
	/* the order (ABI.md): flags, opcode, fd, length and offset, a name's length,
	 * then addresses, then a name's bytes */
	q.op_flags = 0; q.addr = 16; q.len = 64; expect(raw(q), -ENAMETOOLONG, "long name in header");
	q.len = 0; expect(raw(q), -EINVAL, "empty name in header");
	q.len = 5; q.addr = rsz - 2; expect(raw(q), -EFAULT, "name crossing the region's end");
	q.op_flags = 0x40; expect(raw(q), -EINVAL, "open flag bits before the name's address");
	q = q0; q.flags = 0x80; q.opcode = 200; expect(raw(q), -EINVAL, "bad flags and opcode");
	q = q0; q.fd = -5; q.len = 0x80000000u; expect(raw(q), -EBADF, "bad fd before bad len");
	q = q0; q.len = 0x80000000u; q.addr = 0; expect(raw(q), -EINVAL, "bad len before bad addr");
	q = q0; q.off = 1ull << 63; q.addr = 0; expect(raw(q), -EINVAL, "bad offset before bad addr");
	q = q0; q.opcode = UR_OP_READV; q.len = 0; q.addr = 8; expect(raw(q), -EINVAL, "iovec count before address");
	q = q0; q.opcode = UR_OP_STATX; q.fd = -5; q.addr2 = 0; expect(raw(q), -EFAULT, "statx output before fd");
	q = q0; q.opcode = UR_OP_STATX; q.addr2 = 0; expect(raw(q), -EFAULT, "statx out in header");
	q = q0; q.opcode = UR_OP_STATX; q.addr2 = rsz - 4; expect(raw(q), -EFAULT, "statx out crosses end");
	q = q0; q.opcode = UR_OP_REGISTER_BUFFERS; q.len = 1; q.addr = data;
	expect(raw(q), -EBUSY, "register over registered");
	q = q0; q.opcode = UR_OP_FAIL; q.len = 0; expect(raw(q), -EINVAL, "FAIL without errno");
	q = q0; q.opcode = UR_OP_FAIL; q.len = EIO; expect(raw(q), -EIO, "FAIL carries errno");
	q = q0; q.opcode = UR_OP_FTRUNCATE; q.off = 1ull << 63; expect(raw(q), -EINVAL, "truncate huge");
	expect(raw(q0), 16, "ring still healthy");

	/* unregister, then registration rules */
	if ((r = urfs_unregister_buffers(&ring)) < 0) FAIL("unregister: %s", strerror(-r));
	expect(urfs_unregister_buffers(&ring), -ENXIO, "unregister twice");
	uv[0].off = data; uv[0].len = 4096;
	q = q0; q.opcode = UR_OP_REGISTER_BUFFERS; q.len = 1; q.addr = data + 1024;
	memcpy(ring.region + data + 1024, uv, sizeof(*uv));
	expect(raw(q), -EFAULT, "register a buffer outside the buffer area");
	struct iovec big = { NULL, 1ull << 40 };
	expect(urfs_register_buffers(&ring, &big, 1), -ENOMEM, "register too much");
	/* the server's own bound (the library checks it first, so raw): exactly
	 * UR_MAX_BUFS buffers register, one more is -EINVAL */
	{
		struct ur_iovec *mv = (struct ur_iovec *)(ring.region + data + 4096);
		for (unsigned i = 0; i <= UR_MAX_BUFS; i++) {
			mv[i].off = h->bufs_off;
			mv[i].len = 1;
		}
		q = q0; q.opcode = UR_OP_REGISTER_BUFFERS; q.addr = data + 4096;
		q.len = UR_MAX_BUFS + 1; expect(raw(q), -EINVAL, "raw register UR_MAX_BUFS + 1");
		q.len = UR_MAX_BUFS; expect(raw(q), 0, "raw register UR_MAX_BUFS");
		q.len = 0; q.addr = 0; expect(raw(q), 0, "raw unregister");
	}

	/* an ordinary buffer larger than the whole staging area (4 MiB by default):
	 * its CQE says -ENOBUFS, at once (not a submit that never goes out) */
	{
		size_t huge = (8u << 20) + 4096;
		char *hb = malloc(huge);
		struct urfs_cqe *c;
		struct timespec ts = { 5, 0 };
		if (!hb) FAIL("malloc");
		s = sqe_n(0); urfs_prep_read(s, fd, hb, (unsigned)huge, 0); SET(s, 9);
		urfs_submit(&ring);
		if ((r = urfs_wait_cqe_timeout(&ring, &c, &ts)) < 0)
			FAIL("a read larger than the staging area: no CQE (%s)", strerror(-r));
		expect(c->res, -ENOBUFS, "read larger than the staging area");
		urfs_cqe_seen(&ring, c);
		/* the same for a vector whose pieces add up past it */
		struct iovec hv[2] = { { hb, huge / 2 }, { hb + huge / 2, huge - huge / 2 } };
		s = sqe_n(0); urfs_prep_readv(s, fd, hv, 2, 0); SET(s, 10);
		urfs_submit(&ring);
		if ((r = urfs_wait_cqe_timeout(&ring, &c, &ts)) < 0)
			FAIL("a readv larger than the staging area: no CQE (%s)", strerror(-r));
		expect(c->res, -ENOBUFS, "readv larger than the staging area");
		urfs_cqe_seen(&ring, c);
		free(hb);
	}

	urfs_queue_exit(&ring);
	printf("ok\n");
	return 0;
}
