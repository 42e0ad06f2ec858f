/* SPDX-License-Identifier: MIT */
/* Description: a full host file system under a real server. The image lives on
 * a 2 MiB tmpfs (mounted here; without the privilege to mount, the test is
 * skipped): it is sparse, so writes that need new host space fail with ENOSPC
 * while the image is far from full. Through the ring: a file written and
 * fsynced first; then writes until one completes with -ENOSPC (a short count
 * may come first); after it every other SQE still works - NOP, a read and an
 * in-place overwrite of the first file, its FSYNC, a statx - (format gave the
 * journal its space, so no commit fails); unlinking the big file and creating
 * another commit fine; the server unmounts cleanly;
 * the image is fsck-clean and holds the fsynced file. Then `sfs put` of a
 * file too big for the host says "No space left on device", exits 1 and
 * leaves an fsck-clean image whose earlier files are intact. Last, an O_DIRECT
 * image: a file whose blocks are punched holes on the host (a write far past
 * its start), the host filled up, and an in-place overwrite - which the server
 * sends to the kernel's AIO - completes with -ENOSPC from the AIO completion;
 * the server goes on (an AIO read, FSYNC), and once the host has room the same
 * write succeeds (a host without O_DIRECT on tmpfs: SKIP-PART). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ur_abi.h"
#include "ur_fs.h"

#include "testutil.h"

static struct urfs_ring ring;
static char dir[] = "/tmp/sfs_enospc.XXXXXX";

/* Whatever happens, the tmpfs goes (a failed CHECK exits). */
static void cleanup(void)
{
	char cmd[128];
	umount2(dir, MNT_DETACH);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	unlink("/tmp/sfs_enospc_src");
	unlink("/tmp/sfs_enospc_err");
}

static int32_t one(struct urfs_sqe *sqe)
{
	struct urfs_cqe *cqe;
	urfs_sqe_set_data64(sqe, 9);
	int r = urfs_submit_and_wait(&ring, 1);
	if (r < 0)
		FAIL("submit: %s", strerror(-r));
	if ((r = urfs_wait_cqe(&ring, &cqe)) < 0)
		FAIL("wait: %s", strerror(-r));
	int32_t res = cqe->res;
	urfs_cqe_seen(&ring, cqe);
	return res;
}

static struct urfs_sqe *sqe(void)
{
	struct urfs_sqe *s = urfs_get_sqe(&ring);
	CHECK(s != NULL);
	return s;
}

/* After the server is gone: the image is fsck-clean; the first 8 KiB of name. */
static void read_back(const char *image, const char *name, char *buf)
{
	FSCK_CLEAN(image);
	struct sfs *fs = MOUNT_OR_DIE(image);
	int fd = sfs_file_open(fs, name, SFS_O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pread(fs, fd, buf, 8192, 0), 8192);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
}

/* O_DIRECT: an AIO overwrite of punched blocks on a full host. */
static void direct_part(const char *old)
{
	static char abuf[8192] __attribute__((aligned(4096)));
	char img2[96], filler[96];
	CHECK(unlink(old) == 0);                     /* room for a new image */
	snprintf(img2, sizeof img2, "%s/direct.sfs", dir);
	snprintf(filler, sizeof filler, "%s/filler", dir);
	CHECK_EQ(sfs_format(img2, 64u << 20, 64), 0);
	struct urfs_params p = { .image = img2, .flags = URFS_SETUP_DIRECT };
	int r = urfs_queue_init_params(8, &ring, &p);
	if (r < 0) {
		printf("SKIP-PART O_DIRECT on tmpfs: %s (%s)\n", strerror(-r), p.errmsg);
		return;
	}
	struct urfs_sqe *s = sqe();
	urfs_prep_openat(s, "holes", URFS_O_CREAT);
	int fd = one(s);
	CHECK(fd >= 0);
	memset(abuf, 'h', sizeof abuf);
	urfs_prep_write(s = sqe(), fd, abuf, 4096, (1u << 20) - 4096);   /* blocks 0..254 punched */
	CHECK_EQ(one(s), 4096);
	urfs_prep_fsync(s = sqe(), fd, 0);
	CHECK_EQ(one(s), 0);
	const struct ur_region_hdr *h = (const struct ur_region_hdr *)ring.region;
	uint64_t aio0 = h->server_aio_reads;
	urfs_prep_read(s = sqe(), fd, abuf, 4096, (1u << 20) - 4096);   /* aligned: by AIO */
	CHECK_EQ(one(s), 4096);
	CHECK(abuf[0] == 'h');
	if (h->server_aio_reads == aio0) {
		printf("SKIP-PART O_DIRECT AIO: the server has no kernel AIO here\n");
		urfs_queue_exit(&ring);
		return;
	}
	/* fill the host */
	int hf = open(filler, O_WRONLY | O_CREAT, 0600);
	CHECK(hf >= 0);
	static char junk[65536];
	while (write(hf, junk, sizeof junk) > 0)
		;
	while (write(hf, junk, 512) > 0)
		;
	CHECK(close(hf) == 0);
	memset(abuf, 'o', sizeof abuf);
	urfs_prep_write(s = sqe(), fd, abuf, 8192, 0);   /* in place, aligned: AIO into holes */
	int32_t res = one(s);
	if (res != -ENOSPC)
		FAIL("an AIO overwrite of punched blocks on a full host returned %d (%s)", res,
		     res < 0 ? strerror(-res) : "");
	urfs_prep_nop(s = sqe());
	CHECK_EQ(one(s), 0);
	urfs_prep_read(s = sqe(), fd, abuf, 4096, (1u << 20) - 4096);
	CHECK_EQ(one(s), 4096);
	CHECK(abuf[0] == 'h');
	urfs_prep_fsync(s = sqe(), fd, 0);
	CHECK_EQ(one(s), 0);
	CHECK(unlink(filler) == 0);                   /* room again: the same write works */
	memset(abuf, 'o', sizeof abuf);
	urfs_prep_write(s = sqe(), fd, abuf, 8192, 0);
	CHECK_EQ(one(s), 8192);
	urfs_prep_fsync(s = sqe(), fd, 0);
	CHECK_EQ(one(s), 0);
	urfs_queue_exit(&ring);
	read_back(img2, "holes", abuf);
	CHECK(abuf[0] == 'o' && abuf[8191] == 'o');
	printf("O_DIRECT: an AIO overwrite on a full host completed with -ENOSPC; retried once there was room\n");
}

int main(void)
{
	char img[64], cmd[512];
	static char buf[65536], got[8192];
	CHECK(mkdtemp(dir) != NULL);
	if (mount("tmpfs", dir, "tmpfs", 0, "size=2m") < 0) {
		printf("cannot mount a tmpfs (%s): skipped\n", strerror(errno));
		rmdir(dir);
		return 77;
	}
	atexit(cleanup);
	snprintf(img, sizeof img, "%s/img.sfs", dir);
	CHECK_EQ(sfs_format(img, 64u << 20, 64), 0);   /* 64 MiB image on 2 MiB of host */

	struct urfs_params p = { .image = img };
	int r = urfs_queue_init_params(8, &ring, &p);
	if (r < 0)
		FAIL("queue_init: %s (%s)", strerror(-r), p.errmsg);
	struct urfs_sqe *s = sqe();
	urfs_prep_openat(s, "keep", URFS_O_CREAT);
	int keep = one(s);
	CHECK(keep >= 0);
	memset(buf, 'k', 8192);
	urfs_prep_write(s = sqe(), keep, buf, 8192, 0);
	CHECK_EQ(one(s), 8192);
	urfs_prep_fsync(s = sqe(), keep, 0);
	CHECK_EQ(one(s), 0);

	urfs_prep_openat(s = sqe(), "big", URFS_O_CREAT);
	int big = one(s);
	CHECK(big >= 0);
	uint64_t off = 0;
	int32_t res = 0;
	unsigned writes = 0;
	memset(buf, 'b', sizeof buf);
	while (off < (64u << 20)) {
		urfs_prep_write(s = sqe(), big, buf, sizeof buf, off);
		res = one(s);
		writes++;
		if (res <= 0)
			break;
		off += (uint64_t)res;
	}
	if (res != -ENOSPC)
		FAIL("after %llu bytes, a write returned %d (%s), expected -ENOSPC",
		     (unsigned long long)off, res, res < 0 ? strerror(-res) : "");
	printf("host full after %llu bytes in %u writes: -ENOSPC\n", (unsigned long long)off, writes);
	urfs_prep_nop(s = sqe());
	CHECK_EQ(one(s), 0);
	urfs_prep_read(s = sqe(), keep, got, 8192, 0);
	CHECK_EQ(one(s), 8192);
	CHECK(got[0] == 'k' && got[8191] == 'k');
	memset(buf, 'K', 4096);
	urfs_prep_write(s = sqe(), keep, buf, 4096, 0);   /* in place: host space it has */
	CHECK_EQ(one(s), 4096);
	urfs_prep_fsync(s = sqe(), keep, 0);
	CHECK_EQ(one(s), 0);
	urfs_prep_fsync(s = sqe(), big, 0);
	CHECK_EQ(one(s), 0);                            /* what was stored of big is durable */
	struct urfs_statx st;
	urfs_prep_statx(s = sqe(), big, NULL, &st);
	CHECK_EQ(one(s), 0);
	CHECK_EQ(st.size, off);
	urfs_prep_close(s = sqe(), big);
	CHECK_EQ(one(s), 0);
	urfs_prep_unlink(s = sqe(), "big");
	CHECK_EQ(one(s), 0);
	urfs_prep_openat(s = sqe(), "again", URFS_O_CREAT);   /* a commit: no host space needed */
	int again = one(s);
	CHECK(again >= 0);
	urfs_prep_fsync(s = sqe(), again, 0);
	CHECK_EQ(one(s), 0);
	urfs_queue_exit(&ring);                            /* the server unmounts */
	read_back(img, "keep", got);
	CHECK(got[0] == 'K' && got[4096] == 'k');
	struct sfs *fs;

	/* sfs put of a file the host has no room for */
	const char *bin = getenv("UR_BIN");
	if (bin) {
		FILE *f = fopen("/tmp/sfs_enospc_src", "w");
		CHECK(f != NULL);
		for (int i = 0; i < 64; i++)
			CHECK(fwrite(buf, 1, sizeof buf, f) == sizeof buf);
		CHECK(fclose(f) == 0);
		snprintf(cmd, sizeof cmd, "\"%s/sfs\" put %s /tmp/sfs_enospc_src huge 2>/tmp/sfs_enospc_err", bin, img);
		int st2 = system(cmd);
		CHECK(st2 != -1 && WIFEXITED(st2));
		CHECK_EQ(WEXITSTATUS(st2), 1);
		f = fopen("/tmp/sfs_enospc_err", "r");
		CHECK(f != NULL);
		size_t n = fread(got, 1, sizeof got - 1, f);
		got[n] = 0;
		fclose(f);
		if (!strstr(got, "put: huge: No space left on device"))
			FAIL("sfs put said: %s", got);
		printf("sfs put: %s", got);
		FSCK_CLEAN(img);
		fs = MOUNT_OR_DIE(img);
		CHECK(FILE_BLOCKS(fs, "keep") == 2 && FILE_BLOCKS(fs, "again") == 0);
		CHECK_EQ(sfs_unmount(fs), 0);
	} else {
		printf("SKIP-PART sfs put: UR_BIN is not set (run through tests/run.sh)\n");
	}
	direct_part(img);
	printf("ok\n");
	return 0;
}
