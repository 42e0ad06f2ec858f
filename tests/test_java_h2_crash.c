/* SPDX-License-Identifier: MIT */
/* Description: H2 on the urfs FilePath keeps every committed transaction when
 * its JVM is killed (kill -9) in the middle of a workload, 20 times in a row:
 * java/test/h2/H2Crash.java "work" reopens the database and checks it (every
 * transaction logged before the last kill is there, rows 1..n without a gap, a
 * counter updated in the same transactions equal to n), then commits one
 * transaction after another (WRITE_DELAY=0) and logs each k after commit()
 * returned; this test kills it at a random moment after its first commit.
 * "check" checks the same way after the last kill of each database. Kills
 * alternate between a database on host files (the kernel's io_uring engine,
 * psync where it is blocked: a counted skip) and one inside a SimpleFS image,
 * which `sfs fsck` finds clean after each kill (once the image's server left)
 * and after the last check. A skip (77) without a JDK, H2 or the Java parts.
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

/* sfs fsck img.sfs is clean, once the image's server has left after its last
 * client (it may take a moment); step names the kill for the message. */
static void need_clean_image(int step)
{
	char cmd[PATH_MAX + 64];
	int clean = 0;

	JC_FMT(cmd, "\"%s/sfs\" fsck img.sfs", jc_bin);
	for (int w = 0; w < 40 && !(clean = system(cmd) == 0); w++)
		usleep(250000);
	if (!clean)
		FAIL("step %d: sfs fsck img.sfs is not clean", step);
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
	char dbargs[2][3 * PATH_MAX];
	JC_FMT(dbargs[0], "'jdbc:h2:urfs:%s/db' '%s/%s'", cwd, cwd, logs[0]);
	JC_FMT(dbargs[1], "'jdbc:h2:urfs:image=%s/img.sfs:/db' '%s/%s'", cwd, cwd, logs[1]);
	for (int i = 0; i < KILLS; i++) {
		int form = i % 2, status;
		JC_FMT(args, "work %s", dbargs[form]);
		jc_cmd(cmd, sizeof cmd, "exec", JARS, url[form], args);
		long before = fsize(logs[form]);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
		/* Kill it at a random moment after its first commit (or after 120 s);
		 * a JVM that ends by itself failed its check of the last kill. */
		for (int w = 0; w < 2400 && fsize(logs[form]) == before; w++) {
			pid_t r = waitpid(pid, &status, WNOHANG);
			CHECK(r >= 0);
			if (r == pid)
				FAIL("kill %d (%s): the JVM ended by itself (status 0x%x) before its first commit",
				     i + 1, form ? "image" : "host", status);
			usleep(50000);
		}
		CHECK(fsize(logs[form]) > before);
		usleep((useconds_t)(rand() % 600) * 1000);
		CHECK(kill(pid, SIGKILL) == 0);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		if (form == 1)
			need_clean_image(i + 1);
	}
	for (int form = 0; form < 2; form++) {   /* the last kill of each */
		JC_FMT(args, "check %s", dbargs[form]);
		int rc = jc_run("", JARS, url[form], args);
		if (rc != 0)
			FAIL("after the last kill (%s): the check exited %d", form ? "image" : "host", rc);
	}
	need_clean_image(KILLS + 1);
	printf("ok: %d kills, every committed transaction there\n", KILLS);
	return 0;
}
