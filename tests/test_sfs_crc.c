/* SPDX-License-Identifier: MIT */
/* Description: CRC-32C, both ways src/sfs/crc32c.c computes it - the SSE4.2
 * instruction and the slicing-by-8 table, the path of every CPU without SSE4.2,
 * which no other test takes on a CPU that has it. Each gives the standard check
 * value of "123456789" (0xE3069283), agrees with the bitwise reference of
 * tests/testutil.h (docs/FORMAT.md's definition) on every length 0..300 at each
 * of the 8 alignments and when chained in two pieces; and where the CPU has the
 * instruction, an image written with one mounts, reads back and fscks clean
 * with the other, both ways (a counted skip elsewhere).
 *
 * crc32c.c is compiled into this program, so that the test can choose its path
 * (have_hw cleared: the table); libsfs.a's copy is then not linked, and the
 * library's format, mount and fsck below use this one. It must never compare
 * the file with itself: the reference is testutil.h's bit-at-a-time loop.
 */
#include "testutil.h"

#include "../src/sfs/crc32c.c"

static void against_reference(const char *path)
{
	static unsigned char buf[320 + 8];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < sizeof buf; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	CHECK_EQ(sfs_crc32c(0, "123456789", 9), 0xE3069283u);
	for (size_t al = 0; al < 8; al++)
		for (size_t len = 0; len <= 300; len++) {
			const unsigned char *p = buf + al;
			uint32_t want = crc32c(p, len);
			uint32_t got = sfs_crc32c(0, p, len);
			if (got != want)
				FAIL("%s: %zu bytes at alignment %zu: %08x, want %08x", path, len, al, got, want);
			size_t cut = len / 3;
			got = sfs_crc32c(sfs_crc32c(0, p, cut), p + cut, len - cut);
			if (got != want)
				FAIL("%s: %zu bytes in pieces of %zu and %zu: %08x, want %08x", path, len, cut,
				     len - cut, got, want);
		}
}

#define SIZE (2u << 20)

/* Mount dev, check name's bytes (if given), write another, unmount, fsck clean. */
static void use_image(struct sfs_dev *dev, const char *check, const char *write)
{
	struct sfs *fs;
	char err[256] = "";
	unsigned char a[10000], b[10000];
	int r = sfs_mount_dev(dev, 0, 0, &fs, err, sizeof err);
	if (r < 0)
		FAIL("mount with have_hw %d: %s (%s)", have_hw, strerror(-r), err);
	if (check) {
		memset(a, check[0], sizeof a);
		int fd = sfs_file_open(fs, check, 0);
		CHECK(fd >= 0);
		CHECK_EQ(sfs_file_pread(fs, fd, b, sizeof b, 0), (long long)sizeof b);
		CHECK(memcmp(a, b, sizeof a) == 0);
		sfs_file_close(fs, fd);
	}
	memset(a, write[0], sizeof a);
	int fd = sfs_file_open(fs, write, SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, a, sizeof a, 0), (long long)sizeof a);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	struct sfs_fsck_result res = { 0, 0 };
	CHECK_EQ(sfs_fsck_dev(dev, 0, &res, NULL, NULL, err, sizeof err), 0);
	CHECK_EQ(res.errors_found, 0);
}

int main(void)
{
	pthread_once(&once, init);
	int hw = have_hw;

	have_hw = 0;
	against_reference("table");
	if (!hw) {
		tu_part_skip("SSE4.2", "the crc32 instruction against the reference and the table",
			     "the CPU has no SSE4.2 (or is not x86-64): the table is the only path");
		printf("ok\n");
		return 0;
	}
	have_hw = 1;
	against_reference("SSE4.2");
	tu_part_ran("SSE4.2", "the crc32 instruction against the reference and the table");

	/* an image formatted and written through the instruction, used through the
	 * table, then through the instruction again */
	struct sfs_dev *dev = sfs_memdev_new(NULL, 0, SIZE);
	CHECK(dev != NULL);
	CHECK_EQ(sfs_format_dev(dev, 0), 0);
	use_image(dev, NULL, "h");
	have_hw = 0;
	use_image(dev, "h", "t");
	have_hw = 1;
	use_image(dev, "t", "u");
	sfs_dev_free(dev);
	printf("ok\n");
	return 0;
}
