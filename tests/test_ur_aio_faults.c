/* SPDX-License-Identifier: MIT */
/* Description: the server's O_DIRECT image path when kernel AIO misbehaves
 * (tests/lib/slowaio.c preloaded into the server, docs/ABI.md "O_DIRECT").
 * Short: every AIO completes one block short; an aligned read or in-place
 * overwrite that went by AIO must complete with -EIO ("-EIO for a short
 * piece"), never with its length, and the server keeps serving (a NOP, an
 * unaligned read on the synchronous path). Late: each io_submit reaches the
 * kernel 5 ms after the server made it, so the server finds nothing complete
 * and must block in io_getevents: 600 reads in flight on a 1024-entry ring
 * (more than its 256 AIO slots) each get exactly one CQE with the right bytes,
 * and an FSYNC behind them (which waits for the image I/O) completes. Skips
 * only where a scratch file here cannot be opened O_DIRECT (probed apart from
 * the code under test). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sfs.h"
#include "ur_abi.h"
#include "ur_fs.h"

#include "testutil.h"

#define IMG "aio.sfs"
#define BLK 4096u
#define NBLK 256u                /* the file: 1 MiB */
#define NREAD 600u

static unsigned char pat(uint64_t pos)
{
	return (unsigned char)(pos * 7 + pos / 4096 * 13 + 1);
}

static int32_t one(struct urfs_ring *r)
{
	struct urfs_cqe *cqe;
	int e = urfs_submit_and_wait(r, 1);
	if (e < 0)
		FAIL("submit: %s", strerror(-e));
	if ((e = urfs_wait_cqe(r, &cqe)) < 0)
		FAIL("wait: %s", strerror(-e));
	int32_t res = cqe->res;
	urfs_cqe_seen(r, cqe);
	return res;
}

/* A ring on a new O_DIRECT image whose server runs with URTEST_AIO=mode, and
 * the file "f" of NBLK blocks of pat() written through it (synchronously:
 * extending writes never take the AIO path). Returns its fd. */
static int ring_with_file(struct urfs_ring *r, const char *mode, unsigned entries)
{
	char self[4096], pre[4096 + 256], name[32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0);
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(pre, sizeof(pre), "LD_PRELOAD='%s/libslowaio.so' URTEST_AIO=%s "
		 "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0\" ", self, mode);
	snprintf(name, sizeof(name), "aio-%s.sh", mode);
	const char *srv = tu_wrap_server(name, pre, "");
	if (!srv)
		FAIL("UR_SERVER is not set (run through tests/run.sh)");
	int e = sfs_format(IMG, 16ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	p.flags = URFS_SETUP_DIRECT;
	e = urfs_queue_init_params(entries, r, &p);
	setenv("UR_SERVER", srv, 1);
	if (e < 0)
		FAIL("ring (%s): %s (%s)", mode, strerror(-e), p.errmsg);
	struct urfs_sqe *sqe = urfs_get_sqe(r);
	urfs_prep_openat(sqe, "f", URFS_O_CREAT);
	int fd = one(r);
	if (fd < 0)
		FAIL("open: %s", strerror(-fd));
	static unsigned char buf[BLK] __attribute__((aligned(4096)));
	for (uint64_t b = 0; b < NBLK; b++) {
		for (unsigned i = 0; i < BLK; i++)
			buf[i] = pat(b * BLK + i);
		sqe = urfs_get_sqe(r);
		urfs_prep_write(sqe, fd, buf, BLK, b * BLK);
		if ((e = one(r)) != (int)BLK)
			FAIL("write block %llu: %d", (unsigned long long)b, e);
	}
	return fd;
}

static uint64_t aio_reads(struct urfs_ring *r)
{
	return __atomic_load_n(&((struct ur_region_hdr *)r->region)->server_aio_reads, __ATOMIC_ACQUIRE);
}

static void short_completions(void)
{
	struct urfs_ring r;
	int fd = ring_with_file(&r, "short", 8);
	static unsigned char buf[16 * BLK] __attribute__((aligned(4096)));
	static const struct { uint64_t off; uint32_t len; } rd[] = {
		{ 0, 16 * BLK }, { 8 * BLK, BLK }, { 100 * BLK, 3 * BLK },
	};
	for (size_t i = 0; i < sizeof(rd) / sizeof(rd[0]); i++) {
		uint64_t before = aio_reads(&r);
		struct urfs_sqe *sqe = urfs_get_sqe(&r);
		urfs_prep_read(sqe, fd, buf, rd[i].len, rd[i].off);
		int32_t res = one(&r);
		if (aio_reads(&r) == before)
			FAIL("the aligned read at %llu did not take the AIO path", (unsigned long long)rd[i].off);
		if (res != -EIO)
			FAIL("read of %u at %llu, every AIO piece short: %d, want -EIO", rd[i].len,
			     (unsigned long long)rd[i].off, res);
	}
	/* An in-place overwrite of allocated blocks inside the size: AIO too. */
	memset(buf, 'w', 2 * BLK);
	struct urfs_sqe *sqe = urfs_get_sqe(&r);
	urfs_prep_write(sqe, fd, buf, 2 * BLK, 4 * BLK);
	int32_t res = one(&r);
	if (res != -EIO)
		FAIL("overwrite of 2 blocks, every AIO piece short: %d, want -EIO", res);
	/* The server serves on: a NOP, an unaligned (synchronous) read. */
	sqe = urfs_get_sqe(&r);
	urfs_prep_nop(sqe);
	CHECK_EQ(one(&r), 0);
	char small[100];
	sqe = urfs_get_sqe(&r);
	urfs_prep_read(sqe, fd, small, sizeof(small), 20 * BLK + 10);
	CHECK_EQ(one(&r), (int)sizeof(small));
	for (unsigned i = 0; i < sizeof(small); i++)
		if ((unsigned char)small[i] != pat(20 * BLK + 10 + i))
			FAIL("unaligned read after the short ones: byte %u wrong", i);
	urfs_queue_exit(&r);
	printf("short AIO completions: 3 reads and an overwrite got -EIO; the server served on\n");
}

static void late_completions(void)
{
	struct urfs_ring r;
	int fd = ring_with_file(&r, "late", 1024);
	unsigned char *buf = aligned_alloc(4096, (size_t)NREAD * BLK);
	CHECK(buf != NULL);
	memset(buf, 0, (size_t)NREAD * BLK);
	uint64_t before = aio_reads(&r);
	static unsigned seen[NREAD];
	unsigned queued = 0, got = 0;
	while (got < NREAD) {
		struct urfs_sqe *sqe;
		while (queued < NREAD && (sqe = urfs_get_sqe(&r))) {
			uint64_t b = (queued * 37u) % NBLK;
			urfs_prep_read(sqe, fd, buf + (size_t)queued * BLK, BLK, b * BLK);
			urfs_sqe_set_data64(sqe, queued);
			queued++;
		}
		int e = urfs_submit_and_wait(&r, 1);
		if (e < 0)
			FAIL("submit: %s", strerror(-e));
		struct urfs_cqe *cqe;
		unsigned head, k = 0;
		urfs_for_each_cqe(&r, head, cqe) {
			uint64_t i = cqe->user_data;
			if (i >= NREAD || seen[i]++)
				FAIL("CQE for read %llu: unknown or twice", (unsigned long long)i);
			if (cqe->res != (int)BLK)
				FAIL("read %llu: %d, want %u", (unsigned long long)i, cqe->res, BLK);
			k++;
		}
		urfs_cq_advance(&r, k);
		got += k;
	}
	for (unsigned i = 0; i < NREAD; i++) {
		uint64_t b = (i * 37u) % NBLK;
		for (unsigned j = 0; j < BLK; j++)
			if (buf[(size_t)i * BLK + j] != pat(b * BLK + j))
				FAIL("read %u (block %llu): byte %u wrong", i, (unsigned long long)b, j);
	}
	if (aio_reads(&r) - before < NREAD)
		FAIL("only %llu of %u reads took the AIO path",
		     (unsigned long long)(aio_reads(&r) - before), NREAD);
	/* An FSYNC waits for the image I/O in flight: some reads, then it. */
	for (unsigned i = 0; i < 8; i++) {
		struct urfs_sqe *sqe = urfs_get_sqe(&r);
		urfs_prep_read(sqe, fd, buf + (size_t)i * BLK, BLK, (uint64_t)i * BLK);
		urfs_sqe_set_data64(sqe, i);
	}
	struct urfs_sqe *sqe = urfs_get_sqe(&r);
	urfs_prep_fsync(sqe, fd, 0);
	urfs_sqe_set_data64(sqe, 1000);
	CHECK(urfs_submit_and_wait(&r, 9) >= 0);
	for (unsigned n = 0; n < 9; n++) {
		struct urfs_cqe *cqe;
		CHECK(urfs_wait_cqe(&r, &cqe) == 0);
		if (cqe->user_data == 1000)
			CHECK_EQ(cqe->res, 0);
		else
			CHECK_EQ(cqe->res, (int)BLK);
		urfs_cqe_seen(&r, cqe);
	}
	free(buf);
	urfs_queue_exit(&r);
	printf("late AIO completions: %u reads in flight, each once and right; an FSYNC behind reads\n",
	       NREAD);
}

int main(void)
{
	alarm(120);
	char why[256];
	if (!tu_have_odirect(".", why, sizeof(why))) {
		printf("%s\n", why);
		return 77;
	}
	short_completions();
	late_completions();
	FSCK_CLEAN(IMG);
	return 0;
}
