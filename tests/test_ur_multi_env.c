/* SPDX-License-Identifier: MIT */
/* Description: every client of one image finds the same server whatever its
 * environment and however it names the image (a desktop session and a
 * cron job with different $XDG_RUNTIME_DIR must never each start a
 * server). The first client runs with $XDG_RUNTIME_DIR and $TMPDIR set to
 * directories of its own; three more, each a process with a 15 s alarm, run
 * with other values or none ($XDG_RUNTIME_DIR naming a missing directory,
 * then unset) and name the image by another path: "../e.sfs" from a
 * subdirectory, its absolute path with a "./" in it, and a hard link. All
 * four share the first one's server (one server started, counted by a
 * wrapper), and each reads what the first wrote. Abstract socket names are
 * per network namespace: a client in a namespace of its own (unshare, where
 * permitted) fails at once (under 2 s, one server started) with -EBUSY and a
 * message that says so, instead of waiting for a socket it cannot see. */
#include <sched.h>
#include "test_ur_multi.h"

#define IMG "e.sfs"

/* Server starts so far (lines the wrapper wrote, in dir). */
static int starts(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/starts", dir);
	char *s = tu_slurp(path);
	int n = s ? tu_count(s, "x") : 0;
	free(s);
	return n;
}

/* A client process: env as given (NULL: unset), in directory cd, the image
 * by path img; reads "f" and reports its server's pid on rep. */
static pid_t client(const char *xdg, const char *tmp, const char *cd, const char *img, int rep)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork");
	if (pid > 0)
		return pid;
	alarm(15);
	if (xdg)
		setenv("XDG_RUNTIME_DIR", xdg, 1);
	else
		unsetenv("XDG_RUNTIME_DIR");
	if (tmp)
		setenv("TMPDIR", tmp, 1);
	else
		unsetenv("TMPDIR");
	if (chdir(cd) < 0)
		FAIL("chdir %s: %s", cd, strerror(errno));
	struct urfs_ring r;
	mp_ring(&r, img, 0);
	int fd = mp_open(&r, "f", 0);
	char got[7] = "";
	if (fd < 0 || mp_pread(&r, fd, got, 6, 0) != 6 || strcmp(got, "shared"))
		FAIL("client of %s in %s: read '%s' (fd %d)", img, cd, got, fd);
	int32_t spid = r.server_pid;
	if (write(rep, &spid, sizeof(spid)) != sizeof(spid))
		FAIL("report");
	mp_fd_op(&r, 0, fd);
	urfs_queue_exit(&r);
	exit(0);
}

int main(void)
{
	alarm(60);
	char top[4096], abs_img[4200], xdg_a[4200], tmp_a[4200];
	if (!getcwd(top, sizeof(top)))
		FAIL("getcwd");
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	snprintf(abs_img, sizeof(abs_img), "%s/./%s", top, IMG);
	snprintf(xdg_a, sizeof(xdg_a), "%s/xdg-a", top);
	snprintf(tmp_a, sizeof(tmp_a), "%s/tmp-a", top);
	if (mkdir("sub", 0700) < 0 || mkdir(xdg_a, 0700) < 0 || mkdir(tmp_a, 0700) < 0 ||
	    link(IMG, "link.sfs") < 0)
		FAIL("setup: %s", strerror(errno));
	char before[4300];
	snprintf(before, sizeof(before), "echo x >> '%s/starts'\n", top);
	if (!tu_wrap_server("count.sh", before, ""))
		FAIL("UR_SERVER is not set");

	setenv("XDG_RUNTIME_DIR", xdg_a, 1);
	setenv("TMPDIR", tmp_a, 1);
	struct urfs_ring a;
	mp_ring(&a, IMG, 0);
	int fd = mp_open(&a, "f", URFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(mp_pwrite(&a, fd, "shared", 6, 0), 6);
	CHECK_EQ(mp_fd_op(&a, 1, fd), 0);

	int rep[2];
	if (pipe(rep) < 0)
		FAIL("pipe");
	static const struct {
		const char *xdg, *tmp, *cd, *img;
	} cl[] = {
		{ "/nonexistent/run/user", "/var/tmp", "sub", "../" IMG },
		{ NULL, NULL, "/", NULL },              /* the absolute path */
		{ NULL, "/tmp", ".", "link.sfs" },
	};
	for (int i = 0; i < 3; i++) {
		pid_t pid = client(cl[i].xdg, cl[i].tmp, cl[i].cd, cl[i].img ? cl[i].img : abs_img, rep[1]);
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("client %d (XDG_RUNTIME_DIR %s, TMPDIR %s, image %s): status %#x", i,
			     cl[i].xdg ? cl[i].xdg : "unset", cl[i].tmp ? cl[i].tmp : "unset",
			     cl[i].img ? cl[i].img : abs_img, st);
		int32_t spid;
		if (read(rep[0], &spid, sizeof(spid)) != sizeof(spid))
			FAIL("report");
		if (spid != a.server_pid)
			FAIL("client %d (image %s) is on server %d, not the first client's %d", i,
			     cl[i].img ? cl[i].img : abs_img, (int)spid, (int)a.server_pid);
		printf("client with XDG_RUNTIME_DIR %s, TMPDIR %s, image %s: server %d\n",
		       cl[i].xdg ? cl[i].xdg : "unset", cl[i].tmp ? cl[i].tmp : "unset",
		       cl[i].img ? cl[i].img : abs_img, (int)spid);
	}
	CHECK_EQ(starts(top), 1);

	/* Another network namespace: the name cannot be seen from there. */
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork");
	if (pid == 0) {
		alarm(15);
		if (unshare(CLONE_NEWNET) < 0) {
			printf("unshare(CLONE_NEWNET): %s\n", strerror(errno));
			exit(77);
		}
		struct urfs_ring r;
		struct urfs_params p;
		memset(&p, 0, sizeof(p));
		p.image = IMG;
		uint64_t t0 = mp_now_ms();
		e = urfs_queue_init_params(8, &r, &p);
		uint64_t took = mp_now_ms() - t0;
		printf("client in another network namespace: %s after %llu ms: %s\n",
		       e < 0 ? strerror(-e) : "attached", (unsigned long long)took, p.errmsg);
		if (e != -EBUSY || took > 2000 || !strstr(p.errmsg, "another network namespace"))
			FAIL("client in another network namespace: %d after %llu ms", e, (unsigned long long)took);
		exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		FAIL("netns client: status %#x", st);
	if (WEXITSTATUS(st) == 77) {
		tu_part_skip("netns", "a client in another network namespace", "unshare(CLONE_NEWNET) refused");
	} else {
		if (WEXITSTATUS(st) != 0)
			FAIL("netns client: status %#x", st);
		CHECK_EQ(starts(top), 2);
		tu_part_ran("netns", "a client in another network namespace");
	}
	CHECK_EQ(mp_fd_op(&a, 0, fd), 0);
	pid_t spid = a.server_pid;
	urfs_queue_exit(&a);
	mp_server_gone(spid, IMG, 10000);
	printf("four clients, four environments and spellings of the image: one server\n");
	return 0;
}
