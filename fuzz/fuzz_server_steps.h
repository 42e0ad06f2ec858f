/* SPDX-License-Identifier: MIT */
/*
 * fuzz_server_steps.h - what one fuzz input does to simplefs_server's
 * dispatch loop, shared by the libFuzzer target (fuzz/fuzz_server.c) and the
 * corpus replay test (tests/test_ur_fuzz_corpus.c), so the kept corpus runs in
 * every test run.
 *
 * The server runs in-process (tests/test_ur_inproc.h) on SimpleFS over a 1 MiB
 * memory image holding two files. The input plays a hostile client:
 *   byte 0  bit 0: the region header is the input's next 160 bytes (raw; a
 *           header the server refuses ends the input), else a sound layout;
 *           bits 1-2: log2 of the SQ entries (1..8), bit 3: CQ twice the SQ;
 *   byte 1  data area pages (1..8)
 * then commands, each a byte c and its operands:
 *   c%5 0  an SQE from 19 bytes, in range more often than not (opcode,
 *          flags, fd, addresses near the data area, lengths, offsets,
 *          buf_index, op_flags, a wild reserved word now and then)
 *   c%5 1  publish the SQ tail and let the server serve; c&8: then reap the CQ
 *   c%5 2  poke: 4 bytes at any offset of the region (counters, header,
 *          entries: a client scribbling on shared memory)
 *   c%5 3  up to 64 bytes into the data area (names, iovecs, buffer tables)
 *   c%5 4  a NOP SQE with IO_LINK or IO_DRAIN
 * At the end the server serves once more, closes the client's files and
 * unmounts. The region ends exactly where the memory does (ASan, or a guard
 * page without it: tests/test_ur_inproc.h), so any overrun is reported.
 * Findings: a crash, a sanitizer report, an unmount that fails or an image
 * that fsck does not find clean (fuzz_server_input returns nonzero: the
 * target aborts). Every step is bounded: no input can hang.
 */
#ifndef FUZZ_SERVER_STEPS_H
#define FUZZ_SERVER_STEPS_H

#include <sfs.h>
#include <stdint.h>
#include <string.h>
#include "../tests/test_ur_inproc.h"

#define FZS_IMAGE (1u << 20)

static uint64_t fzs_last_sqes;   /* SQEs the server took in the last input */
static unsigned fzs_last_ok;     /* CQEs with res >= 0 reaped in it */

struct fzs_in {
	const uint8_t *p;
	size_t n;
};

static uint8_t fzs_u8(struct fzs_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint32_t fzs_u32(struct fzs_in *in, unsigned bytes)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint32_t)fzs_u8(in) << (8 * i);
	return v;
}

/* The pristine image: formatted once, two files ("a": 10000 bytes, "b": empty). */
static const uint8_t *fzs_image(void)
{
	static uint8_t img[FZS_IMAGE];
	static int done;
	if (done)
		return img;
	struct sfs_dev *d = sfs_memdev_new(NULL, 0, FZS_IMAGE);
	struct sfs *fs;
	char err[128];
	static char buf[10000];
	if (!d || sfs_format_dev(d, 31) || sfs_mount_dev(d, 0, 0, &fs, err, sizeof err))
		abort();
	memset(buf, 'a', sizeof buf);
	int fd = sfs_file_open(fs, "a", SFS_O_CREAT);
	if (fd < 0 || sfs_file_pwrite(fs, fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf ||
	    sfs_file_open(fs, "b", SFS_O_CREAT) < 0 || sfs_unmount(fs) || d->pread(d, img, FZS_IMAGE, 0))
		abort();
	sfs_dev_free(d);
	done = 1;
	return img;
}

/* An address near the data area: mostly inside, sometimes at or past its edges. */
static uint64_t fzs_addr(const struct ur_region_hdr *g, uint32_t sel)
{
	uint64_t span = g->data_size + 128;
	uint64_t a = g->data_off + sel % span;
	return (sel >> 24) == 0xff ? (uint64_t)sel << 32 | sel : a - 64;
}

static void fzs_sqe(struct inproc *ip, struct fzs_in *in, uint64_t *ud)
{
	const struct ur_region_hdr *g = &ip->s.geo;
	uint32_t t = ip->sq_tail;
	struct ur_sqe *q = &ip->s.sqes[t & ip->s.sq_mask];
	uint8_t op = fzs_u8(in), fl = fzs_u8(in);
	memset(q, 0, sizeof(*q));
	q->opcode = (uint8_t)(op % (UR_OP_LAST + 1));
	q->flags = fl & 0x80 ? fl : fl & UR_SQE_VALID;
	q->fd = (int8_t)fzs_u8(in) % 8 - (fl & 0x40 ? 4 : 0);
	q->buf_index = (uint16_t)(fzs_u8(in) % 8);
	q->addr = fzs_addr(g, fzs_u32(in, 4));
	uint32_t len = fzs_u32(in, 2);
	q->len = fl & 0x20 ? len << 16 : len % 5000;
	uint32_t off = fzs_u32(in, 4);
	q->off = fl & 0x10 ? UR_OFF_POS : (uint64_t)off << (off >> 29);
	q->op_flags = fzs_u8(in) & (fl & 0x08 ? 0xff : UR_O_VALID);
	q->addr2 = fzs_addr(g, fzs_u32(in, 4));
	if (fl == 0xff)
		q->reserved[0] = 1;
	q->user_data = (*ud)++;
	ip->sq_tail = t + 1;
}

static int fzs_trace;            /* the replay test sets it from FZS_TRACE: CQEs on stderr */

static void fzs_reap(struct inproc *ip)
{
	struct ur_cqe c;
	for (uint32_t k = 0; k < ip->s.geo.cq_entries && inproc_cqe(ip, &c); k++) {
		fzs_last_ok += c.res >= 0;
		if (fzs_trace)
			fprintf(stderr, "  cqe user_data %llu res %d\n", (unsigned long long)c.user_data, c.res);
	}
}

/* Serve what is published; bounded however the client lies. */
static void fzs_serve(struct inproc *ip)
{
	ur_store_release(&ip->s.sq->tail, ip->sq_tail);
	for (int k = 0; k < 4 && ur_server_poll(&ip->s); k++)
		;
}

/* 0, or 1 for a finding the sanitizers cannot see (unmount failed, fsck not clean). */
static int fuzz_server_input(const uint8_t *data, size_t size)
{
	static struct inproc ip;
	struct fzs_in in = { data, size };
	const uint8_t *img = fzs_image();
	struct sfs_dev *dev = sfs_memdev_new(img, FZS_IMAGE, FZS_IMAGE);
	struct sfs *fs;
	char err[128];
	if (!dev || sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err))
		return 1;
	fzs_last_ok = 0;
	uint8_t mode = fzs_u8(&in), pages = (uint8_t)(fzs_u8(&in) % 8 + 1);
	struct ur_region_hdr g;
	uint32_t sqn = 1u << ((mode >> 1) & 3);
	raw_layout(&g, sqn, mode & 8 ? 2 * sqn : sqn, (uint64_t)pages * 4096, 0);
	if (mode & 1) {
		for (size_t i = 0; i < sizeof(g); i++)
			((uint8_t *)&g)[i] = fzs_u8(&in);
		if (g.size < sizeof(g) || g.size > (1u << 20))
			g.size = sizeof(g) + (g.size & 0xffff);
	}
	int bad = 0;
	if (inproc_attach(&ip, &g, g.size, fs) == 0) {
		uint64_t ud = 0;
		while (in.n) {
			uint8_t c = fzs_u8(&in);
			switch (c % 5) {
			case 0:
				fzs_sqe(&ip, &in, &ud);
				break;
			case 1:
				fzs_serve(&ip);
				if (c & 8)
					fzs_reap(&ip);
				break;
			case 2: {
				uint32_t off = fzs_u32(&in, 3), v = fzs_u32(&in, 4);
				if (ip.size >= 4) {
					off %= (uint32_t)(ip.size - 3);
					memcpy(ip.base + off, &v, 4);
				}
				break;
			}
			case 3: {
				uint32_t off = fzs_u32(&in, 2);
				uint8_t n = fzs_u8(&in) % 64;
				if (!ip.s.geo.data_size)   /* a sound header may have no data area */
					break;
				off %= (uint32_t)ip.s.geo.data_size;
				for (uint8_t k = 0; k < n && off + k < ip.s.geo.data_size; k++)
					ip.base[ip.s.geo.data_off + off + k] = fzs_u8(&in);
				break;
			}
			case 4: {
				struct ur_sqe *q = &ip.s.sqes[ip.sq_tail++ & ip.s.sq_mask];
				memset(q, 0, sizeof(*q));
				q->flags = c & 16 ? UR_SQE_IO_LINK : UR_SQE_IO_DRAIN;
				q->user_data = ud++;
				break;
			}
			}
		}
		fzs_serve(&ip);
		fzs_reap(&ip);
		fzs_serve(&ip);
	}
	fzs_last_sqes = ip.s.n_sqe;
	inproc_fini(&ip);
	if (sfs_unmount(fs))
		bad = 1;
	struct sfs_fsck_result res = { 0, 0 };
	if (sfs_fsck_dev(dev, 0, &res, NULL, NULL, err, sizeof err) || res.errors_found)
		bad = 1;
	sfs_dev_free(dev);
	return bad;
}

#endif
