/* SPDX-License-Identifier: MIT */
/* Description: what clients of one server see of each other, with
 * three rings of this process as three clients (the second and third attach
 * to the first one's server): a file written and fsynced by A is read back
 * by B byte for byte; A unlinks it while B has it open: B still reads the
 * data (POSIX: it stays until the last close), the name is gone for A at
 * once; a client's handles are its own (A using B's handle, to read, close
 * or statx: -EBADF); a
 * client may hold UR_CLIENT_MAX_FILES handles, the next open is -EMFILE while
 * another client still opens; a read-only client of the read-write server
 * reads but cannot create, truncate-open or unlink (-EROFS) nor write; the
 * server outlives its starter A, which leaves first, and exits 0 after the
 * last client; the image is then fsck-clean, the unlinked file gone. A
 * client that leaves with an unlinked file open releases it: on an image of
 * 8 directory slots, 8 files can be created afterwards. An exclusive ring
 * (URFS_SETUP_EXCL) refuses company both ways (-EBUSY). A read-only mount
 * refuses a read-write client (-EBUSY) and serves a read-only one. */
#include "test_ur_multi.h"

#define IMG "x.sfs"

static void fresh(const char *img)
{
	int e = sfs_format(img, 16ull << 20, 0);
	if (e < 0)
		FAIL("format %s: %s", img, strerror(-e));
}

/* A ring on img with flags is refused: -EBUSY, its reason containing text. */
static void refused(const char *img, unsigned flags, const char *text, const char *what)
{
	struct urfs_ring r;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = img;
	p.flags = flags;
	int e = urfs_queue_init_params(8, &r, &p);
	if (e != -EBUSY || !strstr(p.errmsg, text))
		FAIL("%s: %d '%s'", what, e, p.errmsg);
}

int main(void)
{
	alarm(60);
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct urfs_ring a, b, c;
	mp_ring(&a, IMG, 0);
	mp_ring(&b, IMG, 0);
	mp_ring(&c, IMG, URFS_SETUP_RDONLY);
	pid_t spid = a.server_pid;
	if (b.server_pid != spid || c.server_pid != spid)
		FAIL("three rings, servers %d %d %d", a.server_pid, b.server_pid, c.server_pid);

	/* written and fsynced by A, read by B */
	static uint8_t w[3 * MP_PAGE + 77], r[sizeof(w)];
	for (size_t i = 0; i < sizeof(w); i++)
		w[i] = (uint8_t)(i * 7 + 3);
	int fa = mp_open(&a, "f", URFS_O_CREAT);
	CHECK(fa >= 0);
	CHECK_EQ(mp_pwrite(&a, fa, w, sizeof(w), 0), sizeof(w));
	CHECK_EQ(mp_fd_op(&a, 1, fa), 0);
	int fb = mp_open(&b, "f", 0);
	if (fb < 0)
		FAIL("B opens A's file: %d", fb);
	CHECK_EQ(mp_pread(&b, fb, r, sizeof(r), 0), sizeof(r));
	if (memcmp(r, w, sizeof(w)))
		FAIL("B reads other bytes than A wrote");

	/* handles are per client */
	CHECK_EQ(mp_pread(&a, fb, r, 16, 0), -EBADF);
	CHECK_EQ(mp_fd_op(&a, 0, fb), -EBADF);
	struct urfs_statx stx;
	urfs_prep_statx(mp_sqe(&a), fb, NULL, &stx);
	CHECK_EQ(mp_wait1(&a), -EBADF);           /* not even its size */

	/* unlink while another client has it open */
	CHECK_EQ(mp_fd_op(&a, 0, fa), 0);
	CHECK_EQ(mp_unlink(&a, "f"), 0);
	CHECK_EQ(mp_open(&a, "f", 0), -ENOENT);
	memset(r, 0, sizeof(r));
	CHECK_EQ(mp_pread(&b, fb, r, sizeof(r), 0), sizeof(r));
	if (memcmp(r, w, sizeof(w)))
		FAIL("B lost the data of the file A unlinked");
	CHECK_EQ(mp_pwrite(&b, fb, w, 100, sizeof(w)), 100);   /* still writable */
	CHECK_EQ(mp_fd_op(&b, 0, fb), 0);

	/* per-client open files */
	int g = mp_open(&b, "g", URFS_O_CREAT);
	CHECK(g >= 0);
	CHECK_EQ(mp_pwrite(&b, g, w, 10, 0), 10);
	static int hs[UR_CLIENT_MAX_FILES];
	hs[0] = g;
	for (unsigned i = 1; i < UR_CLIENT_MAX_FILES; i++)
		if ((hs[i] = mp_open(&b, "g", 0)) < 0)
			FAIL("open %u of %u: %d", i + 1, UR_CLIENT_MAX_FILES, hs[i]);
	CHECK_EQ(mp_open(&b, "g", 0), -EMFILE);
	int ga = mp_open(&a, "g", 0);
	if (ga < 0)
		FAIL("A cannot open while B is at its limit: %d", ga);
	CHECK_EQ(mp_fd_op(&a, 0, ga), 0);
	CHECK_EQ(mp_fd_op(&b, 0, hs[5]), 0);
	hs[5] = mp_open(&b, "g", 0);                 /* a close frees one */
	CHECK(hs[5] >= 0);

	/* a read-only client of a read-write mount */
	CHECK_EQ(mp_open(&c, "new", URFS_O_CREAT), -EROFS);
	CHECK_EQ(mp_open(&c, "g", URFS_O_TRUNC), -EROFS);
	CHECK_EQ(mp_unlink(&c, "g"), -EROFS);
	int gc = mp_open(&c, "g", 0);
	CHECK(gc >= 0);
	CHECK_EQ(mp_pread(&c, gc, r, 10, 0), 10);
	CHECK(memcmp(r, w, 10) == 0);
	CHECK(mp_pwrite(&c, gc, w, 10, 0) < 0);
	urfs_queue_exit(&c);

	/* the starter leaves first; the server goes on for B */
	urfs_queue_exit(&a);
	if (kill(spid, 0) < 0)
		FAIL("the server left with its starter");
	CHECK_EQ(mp_pread(&b, hs[0], r, 10, 0), 10);
	urfs_queue_exit(&b);                         /* closes B's 1024 handles */
	int st;
	if (waitpid(spid, &st, 0) != spid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("server ended with status %#x", st);
	FSCK_CLEAN(IMG);
	struct sfs *fs = MOUNT_OR_DIE(IMG);
	struct sfs_stat sst;
	CHECK_EQ(sfs_stat(fs, "f", &sst), -ENOENT);
	CHECK_EQ(sfs_stat(fs, "g", &sst), 0);
	CHECK_EQ(sst.size, 10);
	CHECK_EQ(sfs_unmount(fs), 0);
	/* A client that leaves without closing releases its files: an
	 * unlinked file it held open gives its directory slot back. */
	unlink("y.sfs");
	if ((e = sfs_format("y.sfs", 16ull << 20, 8)) < 0)
		FAIL("format y: %s", strerror(-e));
	struct urfs_ring y1, y2;
	mp_ring(&y1, "y.sfs", 0);
	mp_ring(&y2, "y.sfs", 0);
	CHECK(mp_open(&y2, "z", URFS_O_CREAT) >= 0);
	CHECK_EQ(mp_unlink(&y1, "z"), 0);
	urfs_queue_exit(&y2);                        /* "z" still open there */
	for (int i = 0; i < 8; i++) {
		char nm[8];
		snprintf(nm, sizeof(nm), "c%d", i);
		int fd = mp_open(&y1, nm, URFS_O_CREAT);
		if (fd < 0)
			FAIL("create %d of 8 after the holder of an unlinked file left: %d", i + 1, fd);
		CHECK_EQ(mp_fd_op(&y1, 0, fd), 0);
	}
	urfs_queue_exit(&y1);
	FSCK_CLEAN("y.sfs");
	/* URFS_SETUP_EXCL (the channel API's rings): the only client */
	fresh("w.sfs");
	struct urfs_ring x1, x2;
	mp_ring(&x1, "w.sfs", URFS_SETUP_EXCL);
	refused("w.sfs", 0, "in use by pid", "a client beside an exclusive one");
	urfs_queue_exit(&x1);
	mp_ring(&x2, "w.sfs", 0);
	refused("w.sfs", URFS_SETUP_EXCL, "", "an exclusive client beside another");
	urfs_queue_exit(&x2);
	/* a read-only mount refuses a read-write client and serves a read-only one */
	fresh("v.sfs");
	mp_ring(&x1, "v.sfs", URFS_SETUP_RDONLY);
	refused("v.sfs", 0, "mounted read-only", "a read-write client of a read-only mount");
	mp_ring(&x2, "v.sfs", URFS_SETUP_RDONLY);
	CHECK_EQ(x2.server_pid, x1.server_pid);
	urfs_queue_exit(&x2);
	urfs_queue_exit(&x1);
	printf("fsync visibility, unlink of an open file, per-client handles and limits, read-only client: ok\n");
	return 0;
}
