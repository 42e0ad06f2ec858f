/* SPDX-License-Identifier: MIT */
/* Description: the Java binding's FileChannel (java/, docs/JAVA.md) keeps the
 * JDK's FileChannel contract: java/test/channel/ChannelCompare.java runs one
 * script of calls (relative and positional reads and writes with heap and
 * direct buffers, scatter/gather, position, size, truncate, force, locks and
 * their overlaps, open modes, transfers, interruption, closing) on the JDK's
 * channel and on UrfsFileChannel over each engine that can run here (psync;
 * io_uring where the kernel allows it, else a counted skip; ur on a SimpleFS
 * image), and compares every result, every exception's class and the files'
 * bytes; then batches, registered buffers and error texts. A skip (77) when no
 * JDK is here or the Java parts are not built.
 * Time limit: 300 s
 */
#include "testutil.h"
#include "java_common.h"

int main(void)
{
	char why[160], args[3 * PATH_MAX], cwd[PATH_MAX];

	jc_need("urfs.jar urfs-tests.jar");
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	JC_FMT(args, "\"%s/sfs\" mkfs --size 64M img.sfs >/dev/null", jc_bin);
	CHECK(system(args) == 0);
	JC_FMT(args, "'%s' '%s/img.sfs' psync ur", cwd, cwd);
	if (tu_have_io_uring(why, sizeof why)) {
		strcat(args, " io_uring");
		tu_part_ran("io_uring", "UrfsFileChannel on the kernel's io_uring");
	} else {
		tu_part_skip("io_uring", "UrfsFileChannel on the kernel's io_uring", why);
	}
	int rc = jc_run("urfs.jar urfs-tests.jar", "ChannelCompare", args);
	if (rc != 0)
		FAIL("ChannelCompare exited %d", rc);
	JC_FMT(args, "\"%s/sfs\" fsck img.sfs", jc_bin);
	CHECK(system(args) == 0);
	printf("ok\n");
	return 0;
}
