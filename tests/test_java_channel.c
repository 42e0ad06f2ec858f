/* SPDX-License-Identifier: MIT */
/* Description: the Java binding's FileChannel (java/, docs/JAVA.md) keeps the
 * JDK's FileChannel contract: java/test/channel/ChannelCompare.java runs one
 * script of calls (relative and positional reads and writes with heap and
 * direct buffers, scatter/gather, position, size, truncate, force, locks and
 * their overlaps, open modes, transfers, interruption, closing) on the JDK's
 * channel and on UrfsFileChannel over each engine that can run here (psync;
 * io_uring where the kernel allows it, else a counted skip; ur on a SimpleFS
 * image), and compares every result, every exception's class and the files'
 * bytes; then batches, registered buffers and error texts. Then the io_uring
 * engine again with the kernel's ring blocked (noring) and the drop-in
 * emulating it (urfs-uring). A skip (77) when no JDK is here or the Java parts
 * are not built.
 * Time limit: 300 s
 */
#include "testutil.h"
#include "java_common.h"

#define JARS "urfs.jar urfs-tests.jar"

int main(void)
{
	char args[3 * PATH_MAX];

	jc_need(JARS);
	jc_args(args, sizeof args, "psync ur", "io_uring", "UrfsFileChannel");
	int rc = jc_run("", JARS, "ChannelCompare", args);
	if (rc != 0)
		FAIL("ChannelCompare exited %d", rc);
	rc = jc_dropin_run(JARS, "ChannelCompare", "io_uring", "UrfsFileChannel");
	if (rc != 0)
		FAIL("ChannelCompare on the drop-in exited %d", rc);
	JC_FMT(args, "\"%s/sfs\" fsck img.sfs", jc_bin);
	CHECK(system(args) == 0);
	printf("ok\n");
	return 0;
}
