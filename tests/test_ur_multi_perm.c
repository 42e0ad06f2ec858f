/* Description: the server's socket for more clients is its user's alone
 * (issue 10): it lives in a directory of mode 0700 owned by the user (or
 * $XDG_RUNTIME_DIR), is itself 0600, and is named after the image's
 * identity; a client of the same user attaches (mp_attach_raw's sound
 * request is answered "ready"). As root, a child that becomes nobody cannot
 * reach it (connect: EACCES), and one that becomes nobody but keeps
 * CAP_DAC_OVERRIDE (so the file modes do not stop it) is refused by the
 * server itself (SO_PEERCRED: -EACCES, "another user"). Not root: those two
 * parts are skipped. */
#include <linux/capability.h>
#include <sys/syscall.h>
#include "test_ur_multi.h"

#define IMG "u.sfs"
#define NOBODY 65534

/* In a child: become nobody (keeping CAP_DAC_OVERRIDE if keep), attach by
 * hand; exit 0 if the answer is want (an -errno of connect or of the server). */
static void as_nobody(const char *sock, int keep, int want)
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
		int err = mp_attach_raw(sock, 7, why, sizeof(why));
		if (err != want) {
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
	char sock[108], dir[108];
	if (ur_attach_path(IMG, sock, sizeof(sock), 0) < 0)
		FAIL("socket path");
	struct stat st, ist;
	if (lstat(sock, &st) < 0)
		FAIL("no socket at %s: %s", sock, strerror(errno));
	if (!S_ISSOCK(st.st_mode) || (st.st_mode & 0777) != 0600 || st.st_uid != geteuid())
		FAIL("socket %s: mode %o uid %u", sock, (unsigned)st.st_mode, (unsigned)st.st_uid);
	snprintf(dir, sizeof(dir), "%s", sock);
	*strrchr(dir, '/') = '\0';
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid())
		FAIL("socket directory %s: mode %o", dir, (unsigned)st.st_mode);
	if (stat(IMG, &ist) < 0)
		FAIL("stat");
	char name[64];
	snprintf(name, sizeof(name), "/urfs-%llx-%llu.sock", (unsigned long long)ist.st_dev,
		 (unsigned long long)ist.st_ino);
	if (!strstr(sock, name))
		FAIL("socket %s is not named after the image (%s)", sock, name);
	char why[256];
	int err = mp_attach_raw(sock, 7, why, sizeof(why));
	if (err != 0)
		FAIL("same user's sound attach: %d '%s'", err, why);
	if (geteuid() != 0) {
		tu_part_skip("root", "another user", "not root: cannot become nobody");
	} else {
		as_nobody(sock, 0, -EACCES);
		as_nobody(sock, 1, -EACCES);
		tu_part_ran("root", "another user");
	}
	pid_t spid = r.server_pid;
	urfs_queue_exit(&r);
	/* The raw attaches above closed their sockets, but the server may not
	 * have seen it yet: then it still serves them when this ring leaves, and
	 * ends (removing its socket) as soon as it does. */
	mp_server_gone(spid, IMG, 10000);
	printf("socket 0600 in a 0700 directory, named after the image; same user attaches\n");
	return 0;
}
