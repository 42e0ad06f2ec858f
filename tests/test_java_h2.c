/* SPDX-License-Identifier: MIT */
/* Description: H2 (Debian's libh2-java, unchanged) runs on the urfs FilePath
 * (java/src/org/urfs/h2, docs/JAVA.md): java/test/h2/H2Check.java writes one
 * JDBC workload (tables, indexes, 4,000 accounts and 3,000 transfers in
 * several transactions, one rolled back, updates, deletes) on H2's default
 * store and on each form here, closes, reopens, checks the rows through the
 * tables and their indexes, and compares SCRIPT's output with the default
 * store's: jdbc:h2:urfs: on host files through psync, the kernel's io_uring
 * (a counted skip where it is blocked) and the drop-in's emulated ring under
 * noring (a counted skip without seccomp), and jdbc:h2:urfs:image= inside a
 * SimpleFS image, which `sfs fsck` then finds clean. A skip (77) when no JDK,
 * no H2 or the Java parts are not built.
 * Time limit: 600 s
 */
#include "testutil.h"
#include "java_common.h"

#define JARS "urfs.jar urfs-h2.jar urfs-h2-tests.jar"

int main(void)
{
	char args[3 * PATH_MAX];
	struct stat st;

	jc_need(JARS);
	if (stat("/usr/share/java/h2.jar", &st) != 0) {
		printf("no /usr/share/java/h2.jar (install libh2-java: scripts/install-deps.sh)\n");
		return 77;
	}
	jc_args(args, sizeof args, "host:psync image", "host:io_uring", "H2");
	int rc = jc_run("", JARS, "H2Check", args);
	if (rc != 0)
		FAIL("H2Check exited %d", rc);
	JC_FMT(args, "\"%s/sfs\" fsck img.sfs", jc_bin);
	CHECK(system(args) == 0);
	JC_FMT(args, "\"%s/sfs\" ls img.sfs | grep -qx db.mv.db", jc_bin);
	CHECK(system(args) == 0);
	rc = jc_dropin_run(JARS, "H2Check", "host:io_uring", "H2");
	if (rc != 0)
		FAIL("H2Check on the drop-in exited %d", rc);
	printf("ok\n");
	return 0;
}
