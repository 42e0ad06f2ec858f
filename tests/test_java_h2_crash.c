/* SPDX-License-Identifier: MIT */
/* Description: H2 on the urfs FilePath keeps every committed transaction when
 * its JVM is killed (kill -9) in the middle of a workload, 20 times in a row:
 * java/test/h2/H2Crash.java "work" commits one transaction after another
 * (WRITE_DELAY=0) and logs each k after commit() returned; this test kills it
 * at a random moment after its first commit, and "check" reopens the database:
 * every logged transaction is there, rows 1..n without a gap, a counter
 * updated in the same transactions equal to n. Kills alternate between a
 * database on host files (the kernel's io_uring engine, psync where it is
 * blocked: a counted skip) and one inside a SimpleFS image, which `sfs fsck`
 * finds clean after each check. A skip (77) without a JDK, H2 or the Java parts.
 * Time limit: 900 s
 */
#include <signal.h>
#include <sys/types.h>
#include "testutil.h"
#include "java_common.h"

#define JARS "urfs.jar urfs-h2.jar urfs-h2-tests.jar"
#define KILLS 20

/* Bytes in file path (0 when absent). */
static long fsize(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : 0;
}

int main(void)
{
	char why[160], cwd[PATH_MAX], url[2][PATH_MAX + 64], args[3 * PATH_MAX], cmd[16384];
	const char *logs[2] = { "host.log", "image.log" };
	struct stat st;

	jc_need(JARS);
	if (stat("/usr/share/java/h2.jar", &st) != 0) {
		printf("no /usr/share/java/h2.jar (install libh2-java: scripts/install-deps.sh)\n");
		return 77;
	}
	CHECK(getcwd(cwd, sizeof cwd) != NULL);
	JC_FMT(args, "\"%s/sfs\" mkfs --size 64M img.sfs >/dev/null", jc_bin);
	CHECK(system(args) == 0);
	const char *engine = "io_uring";
	if (tu_have_io_uring(why, sizeof why)) {
		tu_part_ran("io_uring", "H2 killed on the kernel's io_uring");
	} else {
		tu_part_skip("io_uring", "H2 killed on the kernel's io_uring (psync instead)", why);
		engine = "psync";
	}
	JC_FMT(url[0], "-Durfs.engine=%s H2Crash", engine);
	JC_FMT(url[1], "H2Crash");
	srand(12345);
	for (int i = 0; i < KILLS; i++) {
		int form = i % 2;
		char dbargs[3 * PATH_MAX];
		if (form == 0)
			JC_FMT(dbargs, "'jdbc:h2:urfs:%s/db' '%s/%s'", cwd, cwd, logs[0]);
		else
			JC_FMT(dbargs, "'jdbc:h2:urfs:image=%s/img.sfs:/db' '%s/%s'", cwd, cwd, logs[1]);
		JC_FMT(args, "work %s", dbargs);
		jc_cmd(cmd, sizeof cmd, "exec", JARS, url[form], args);
		long before = fsize(logs[form]);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		/* Kill it at a random moment after its first commit (or after 120 s). */
		for (int w = 0; w < 2400 && fsize(logs[form]) == before; w++)
			usleep(50000);
		CHECK(fsize(logs[form]) > before);
		usleep((useconds_t)(rand() % 600) * 1000);
		CHECK(kill(pid, SIGKILL) == 0);
		int status;
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

		JC_FMT(args, "check %s", dbargs);
		int rc = jc_run("", JARS, url[form], args);
		if (rc != 0)
			FAIL("kill %d (%s): the check exited %d", i + 1, form ? "image" : "host", rc);
		if (form == 1) {   /* the image's server leaves after its last client */
			JC_FMT(args, "\"%s/sfs\" fsck img.sfs", jc_bin);
			int clean = 0;
			for (int w = 0; w < 40 && !(clean = system(args) == 0); w++)
				usleep(250000);
			if (!clean)
				FAIL("kill %d: sfs fsck img.sfs is not clean", i + 1);
		}
	}
	printf("ok: %d kills, every committed transaction there\n", KILLS);
	return 0;
}
