/* SPDX-License-Identifier: MIT */
/* Description: the backup superblock (docs/FORMAT.md "Backup superblock").
 * Format writes a copy of the superblock in the image's last block. Every one of
 * the 32768 bits of the primary superblock - magic, geometry, informational and
 * reserved bytes, the trailer - is flipped in turn: the image still mounts (with
 * the backup, and sfs_mount_warnings says so; without a warning its message is
 * empty), its files read back whole, fsck
 * reports the damage, fsck -y restores the primary byte for byte (the whole image
 * is then the pristine one) and a second fsck is clean. fsck also finds and
 * rewrites a damaged backup. An image made before backups existed (no last block
 * to hold one) still mounts and checks clean, and a damaged primary is then
 * refused as before. Through the tool (UR_BIN, set by tests/run.sh): `sfs ls`
 * prints a warning and works, `sfs fsck -y` exits 1 (fixed), `sfs fsck` then 0. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define BS   4096u
#define SIZE (1u << 20)

static uint8_t base[SIZE], cur[SIZE];

static void fill(char *buf, size_t n, unsigned k)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)('a' + (i * 7 + k) % 26);
}

/* The files of every image here: f0..f3, 5000*(k+1) bytes of fill(k). */
static void make_files(struct sfs *fs)
{
	static char buf[20000];
	for (unsigned k = 0; k < 4; k++) {
		char name[8];
		snprintf(name, sizeof name, "f%u", k);
		int fd = sfs_file_open(fs, name, SFS_O_CREAT);
		CHECK(fd >= 0);
		fill(buf, 5000 * (k + 1), k);
		CHECK_EQ(sfs_file_pwrite(fs, fd, buf, 5000 * (k + 1), 0), 5000 * (k + 1));
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
}

static void check_files(struct sfs *fs, unsigned bit)
{
	static char want[20000], got[20000];
	for (unsigned k = 0; k < 4; k++) {
		char name[8];
		snprintf(name, sizeof name, "f%u", k);
		int fd = sfs_file_open(fs, name, SFS_O_RDONLY);
		if (fd < 0)
			FAIL("bit %u: open %s: %s", bit, name, strerror(-fd));
		fill(want, 5000 * (k + 1), k);
		if (sfs_file_pread(fs, fd, got, sizeof got, 0) != 5000 * (k + 1) ||
		    memcmp(want, got, 5000 * (k + 1)))
			FAIL("bit %u: %s does not read back", bit, name);
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
}

static int run_tool(const char *args)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "\"$UR_BIN/sfs\" %s >tool.out 2>tool.err", args);
	int st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int file_has(const char *path, const char *text)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, text) != NULL;
}

int main(void)
{
	char err[256];
	struct sfs *fs;
	struct sfs_fsck_result res;

	/* the pristine image */
	struct sfs_dev *dev = sfs_memdev_new(NULL, 0, SIZE);
	CHECK(dev != NULL);
	CHECK_EQ(sfs_format_dev(dev, 62), 0);   /* 2 directory blocks: a quick mount */
	CHECK_EQ(sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err), 0);
	make_files(fs);
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(dev->pread(dev, base, SIZE, 0), 0);
	uint32_t total;
	memcpy(&total, base + 16, 4);
	CHECK_EQ(total, SIZE / BS - 1);
	CHECK(memcmp(base + (size_t)total * BS, "SIMPLEFS", 8) == 0);   /* the backup */

	/* every bit of the primary */
	unsigned bits = 0;
	for (unsigned bit = 0; bit < BS * 8; bit++) {
		memcpy(cur, base, BS);
		cur[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		CHECK_EQ(dev->pwrite(dev, cur, BS, 0), 0);
		int r = sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err);
		if (r)
			FAIL("bit %u: mount: %s (%s)", bit, strerror(-r), err);
		unsigned w = sfs_mount_warnings(fs, err, sizeof err);
		if (w != SFS_WARN_BACKUP_SUPER || !strstr(err, "backup"))
			FAIL("bit %u: mount warnings %#x '%s'", bit, w, err);
		check_files(fs, bit);
		CHECK_EQ(sfs_unmount(fs), 0);
		r = sfs_fsck_dev(dev, 0, &res, NULL, NULL, err, sizeof err);
		if (r || res.errors_found == 0)
			FAIL("bit %u: fsck returned %d, found %u", bit, r, res.errors_found);
		r = sfs_fsck_dev(dev, 1, &res, NULL, NULL, err, sizeof err);
		if (r || res.errors_found == 0 || res.errors_fixed != res.errors_found)
			FAIL("bit %u: fsck -y returned %d (%s), found %u, fixed %u", bit, r, err,
			     res.errors_found, res.errors_fixed);
		CHECK_EQ(dev->pread(dev, cur, BS, 0), 0);
		if (memcmp(cur, base, BS))
			FAIL("bit %u: fsck -y did not restore the primary", bit);
		if (bit % 512 == 0) {
			CHECK_EQ(dev->pread(dev, cur, SIZE, 0), 0);
			if (memcmp(cur, base, SIZE))
				FAIL("bit %u: the image differs from the pristine one after fsck -y", bit);
			CHECK_EQ(sfs_fsck_dev(dev, 0, &res, NULL, NULL, err, sizeof err), 0);
			CHECK_EQ(res.errors_found, 0);
		}
		bits++;
	}

	/* a damaged backup: found by fsck, rewritten by fsck -y; mount does not care */
	memset(cur, 0, BS);
	memcpy(cur, base + (size_t)total * BS, BS);
	cur[100] ^= 4;
	CHECK_EQ(dev->pwrite(dev, cur, BS, (uint64_t)total * BS), 0);
	CHECK_EQ(sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err), 0);
	CHECK_EQ(sfs_mount_warnings(fs, NULL, 0), 0);
	char wmsg[64] = "stale";
	CHECK_EQ(sfs_mount_warnings(fs, wmsg, sizeof wmsg), 0);
	CHECK_EQ(wmsg[0], 0);                    /* no warning: an empty message */
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(sfs_fsck_dev(dev, 0, &res, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ(res.errors_found, 1);
	CHECK_EQ(sfs_fsck_dev(dev, 1, &res, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ(res.errors_fixed, 1);
	CHECK_EQ(dev->pread(dev, cur, SIZE, 0), 0);
	CHECK(memcmp(cur, base, SIZE) == 0);
	sfs_dev_free(dev);

	/* an image file without a backup (as made before backups existed) */
	char dir[] = "/tmp/sfs_backup.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chdir(dir) == 0);
	CHECK_EQ(sfs_format("old.sfs", SIZE, 0), 0);
	fs = MOUNT_OR_DIE("old.sfs");
	make_files(fs);
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK(truncate("old.sfs", (off_t)total * BS) == 0);
	fs = MOUNT_OR_DIE("old.sfs");
	CHECK_EQ(sfs_mount_warnings(fs, NULL, 0), 0);
	check_files(fs, 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN("old.sfs");
	int fd = open("old.sfs", O_RDWR);
	CHECK(fd >= 0);
	uint8_t byte;
	CHECK(pread(fd, &byte, 1, 2000) == 1);
	byte ^= 1;
	CHECK(pwrite(fd, &byte, 1, 2000) == 1);
	CHECK(close(fd) == 0);
	CHECK_EQ(sfs_mount("old.sfs", 0, &fs, err, sizeof err), -EUCLEAN);
	CHECK(sfs_fsck("old.sfs", 1, &res, NULL, NULL, err, sizeof err) < 0);

	/* the tool, on an image file with a flipped bit in its primary */
	const char *bin = getenv("UR_BIN");
	if (bin) {
		CHECK_EQ(sfs_format("new.sfs", SIZE, 0), 0);
		fs = MOUNT_OR_DIE("new.sfs");
		make_files(fs);
		CHECK_EQ(sfs_unmount(fs), 0);
		fd = open("new.sfs", O_RDWR);
		CHECK(fd >= 0);
		CHECK(pread(fd, &byte, 1, 20) == 1);
		byte ^= 0x10;                         /* total_blocks */
		CHECK(pwrite(fd, &byte, 1, 20) == 1);
		CHECK(close(fd) == 0);
		CHECK_EQ(run_tool("ls new.sfs"), 0);
		CHECK(file_has("tool.out", "f3"));
		CHECK(file_has("tool.err", "warning: primary superblock damaged"));
		CHECK_EQ(run_tool("fsck -n new.sfs"), 4);
		CHECK_EQ(run_tool("fsck -y new.sfs"), 1);
		CHECK_EQ(run_tool("fsck new.sfs"), 0);
		CHECK_EQ(run_tool("ls new.sfs"), 0);
		CHECK(!file_has("tool.err", "warning"));
		unlink("new.sfs");
		unlink("tool.out");
		unlink("tool.err");
	} else {
		printf("SKIP-PART the tool: UR_BIN is not set (run through tests/run.sh)\n");
	}
	unlink("old.sfs");
	CHECK(chdir("/") == 0);
	rmdir(dir);
	printf("%u bits of the primary superblock flipped: each mounted with the backup and was repaired\n", bits);
	printf("ok\n");
	return 0;
}
