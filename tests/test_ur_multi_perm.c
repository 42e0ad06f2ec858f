/* SPDX-License-Identifier: MIT */
/* Description: the server's place for more clients is the image's alone and
 * its user's alone: an abstract Unix socket named
 * after the image's identity, "@urfs/DEV:INO" (listed in /proc/net/unix),
 * whose listener (SO_PEERCRED) is the image's server, of this user; no file
 * is made for it. A client of the same user attaches (mp_attach_raw's sound
 * request is answered "ready"). As root, a child that becomes nobody
 * reaches the name (an abstract name has no mode) and is refused by the
 * server itself (SO_PEERCRED: -EACCES, "another user"), with or without
 * CAP_DAC_OVERRIDE. Not root: that part is skipped. */
#include <linux/capability.h>
#include <sys/syscall.h>
#include "test_ur_multi.h"

#define IMG "u.sfs"
#define NOBODY 65534

/* In a child: become nobody (keeping CAP_DAC_OVERRIDE if keep), attach by
 * hand; exit 0 if the answer is want (an -errno of connect or of the server). */
static void as_nobody(const struct ur_attach_name *n, int keep, int want)
{
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork");
	if (pid == 0) {
		if (keep && prctl(PR_SET_KEEPCAPS, 1) < 0)
			_exit(10);
		if (setresgid(NOBODY, NOBODY, NOBODY) < 0 || setresuid(NOBODY, NOBODY, NOBODY) < 0)
			_exit(11);
		if (keep) {
			struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
			struct __user_cap_data_struct d[2];
			memset(d, 0, sizeof(d));
			d[0].effective = d[0].permitted = 1u << CAP_DAC_OVERRIDE;
			if (syscall(SYS_capset, &h, d) < 0)
				_exit(12);
		}
		char why[256] = "";
		int err = mp_attach_raw_at(n, 7, why, sizeof(why));
		if (err != want || !strstr(why, "another user")) {
			fprintf(stderr, "as nobody (keep %d): %d '%s', want %d\n", keep, err, why, want);
			_exit(1);
		}
		printf("as nobody%s: %s%s%s\n", keep ? " with CAP_DAC_OVERRIDE" : "", strerror(-err),
		       why[0] ? ", " : "", why);
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("nobody%s: status %#x", keep ? " with CAP_DAC_OVERRIDE" : "", st);
}

int main(void)
{
	alarm(60);
	fflush(stdout);
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	struct urfs_ring r;
	mp_ring(&r, IMG, 0);
	struct stat ist;
	struct ur_attach_name n;
	if (stat(IMG, &ist) < 0 || ur_attach_name(IMG, &n) < 0)
		FAIL("stat");
	char want[64];
	snprintf(want, sizeof(want), "@urfs/%llx:%llu", (unsigned long long)ist.st_dev,
		 (unsigned long long)ist.st_ino);
	if (strcmp(n.shown, want) || n.a.sun_path[0] != '\0' || memcmp(n.a.sun_path + 1, want + 1, strlen(want) - 1))
		FAIL("attach name %s, want %s, abstract", n.shown, want);
	char *unx = tu_slurp("/proc/net/unix");
	if (!unx || !strstr(unx, want))
		FAIL("%s is not in /proc/net/unix", want);
	free(unx);
	int c = mp_connect(IMG);
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (c < 0 || getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
		FAIL("connect to %s: %s", want, strerror(c < 0 ? -c : errno));
	close(c);
	if (cr.pid != r.server_pid || cr.uid != geteuid())
		FAIL("%s is held by pid %d uid %u, want the server %d, uid %u", want, (int)cr.pid,
		     (unsigned)cr.uid, (int)r.server_pid, (unsigned)geteuid());
	char why[256];
	int err = mp_attach_raw(IMG, 7, why, sizeof(why));
	if (err != 0)
		FAIL("same user's sound attach: %d '%s'", err, why);
	if (geteuid() != 0) {
		tu_part_skip("root", "another user", "not root: cannot become nobody");
	} else {
		as_nobody(&n, 0, -EACCES);
		as_nobody(&n, 1, -EACCES);
		tu_part_ran("root", "another user");
	}
	pid_t spid = r.server_pid;
	urfs_queue_exit(&r);
	/* The raw attaches above closed their sockets, but the server may not
	 * have seen it yet: then it still serves them when this ring leaves, and
	 * ends (closing its socket) as soon as it does. */
	mp_server_gone(spid, IMG, 10000);
	printf("%s, held by the server, this user's; same user attaches\n", want);
	return 0;
}
