/* SPDX-License-Identifier: MIT */
/* Description: the programs end to end, as a user runs them. test_ur_write_v2
 * prints exactly "Write completed: user_data=2, res=27" and exits 0, then
 * `cat_ur test_write.txt` prints the text; cat_ur prints a binary file of
 * 1 MiB + 123 bytes, an empty file and a one-byte file in argument order byte
 * for byte, reports `cat_ur: missing: No such file or directory` and exits 1
 * while still printing the others; -i and $SFS_IMAGE pick the image; a
 * missing image is reported clearly; while another client's server holds
 * the image, cat_ur and a second library client attach to that server (same
 * pid) and read, and `sfs put` is refused with the server's pid. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sfs.h"
#include "ur_fs.h"

#include "testutil.h"

static char bin[4096];

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		FAIL("open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n)
		FAIL("read %s", path);
	b[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return b;
}

/* Run $UR_BIN/prog with args; stdout -> "out", stderr -> "err". Exit code. */
static int run(char *const argv[])
{
	char path[8192];
	snprintf(path, sizeof(path), "%s/%s", bin, argv[0]);
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork");
	if (pid == 0) {
		int o = open("out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open("err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, 1);
		dup2(e, 2);
		execv(path, argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		FAIL("waitpid");
	if (!WIFEXITED(st))
		FAIL("%s died with status %d", argv[0], st);
	return WEXITSTATUS(st);
}

static void put(const char *img, const char *name, const void *data, size_t len)
{
	struct urfs_ring ring;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = img;
	p.flags = URFS_SETUP_CREATE;
	int r = urfs_queue_init_params(8, &ring, &p);
	if (r < 0)
		FAIL("init %s: %s", p.errmsg, strerror(-r));
	struct urfs_sqe *s = urfs_get_sqe(&ring);
	struct urfs_cqe *c;
	urfs_prep_openat(s, name, URFS_O_CREAT | URFS_O_TRUNC);
	urfs_submit_and_wait(&ring, 1);
	if (urfs_wait_cqe(&ring, &c) < 0 || c->res < 0)
		FAIL("open %s", name);
	int fd = c->res;
	urfs_cqe_seen(&ring, c);
	for (size_t off = 0; off < len; off += 65536) {
		size_t n = len - off < 65536 ? len - off : 65536;
		s = urfs_get_sqe(&ring);
		urfs_prep_write(s, fd, (const char *)data + off, (unsigned)n, off);
		urfs_submit_and_wait(&ring, 1);
		if (urfs_wait_cqe(&ring, &c) < 0 || c->res != (int)n)
			FAIL("write %s", name);
		urfs_cqe_seen(&ring, c);
	}
	urfs_queue_exit(&ring);
}

int main(void)
{
	const char *b = getenv("UR_BIN");
	if (!b) {
		printf("UR_BIN not set (run through tests/run.sh)\n");
		return 77;
	}
	snprintf(bin, sizeof(bin), "%s", b);

	/* 1. test_ur_write_v2 then cat_ur, on the default image disk.sfs (created) */
	char *a1[] = { "test_ur_write_v2", NULL };
	int rc = run(a1);
	char *out = slurp("out", NULL);
	if (rc != 0 || strcmp(out, "Write completed: user_data=2, res=27\n") != 0)
		FAIL("test_ur_write_v2: exit %d, output '%s' err '%s'", rc, out, slurp("err", NULL));
	free(out);
	char *a2[] = { "cat_ur", "test_write.txt", NULL };
	rc = run(a2);
	out = slurp("out", NULL);
	if (rc != 0 || strcmp(out, "Hello from async ur_write!\n") != 0)
		FAIL("cat_ur test_write.txt: exit %d, output '%s'", rc, out);
	free(out);

	/* 2. binary, empty, one byte, missing; order kept */
	if (sfs_format("x.sfs", 64ull << 20, 0) < 0)
		FAIL("format");
	size_t blen = (1u << 20) + 123;
	unsigned char *big = malloc(blen);
	for (size_t i = 0; i < blen; i++)
		big[i] = (unsigned char)((i * 131) ^ (i >> 8));
	put("x.sfs", "big", big, blen);
	put("x.sfs", "empty", "", 0);
	put("x.sfs", "one", "Z", 1);
	char *a3[] = { "cat_ur", "-i", "x.sfs", "one", "big", "missing", "empty", "one", NULL };
	rc = run(a3);
	size_t olen;
	out = slurp("out", &olen);
	char *err = slurp("err", NULL);
	if (rc != 1)
		FAIL("cat_ur with a missing file: exit %d, want 1", rc);
	if (!strstr(err, "cat_ur: missing: No such file or directory"))
		FAIL("cat_ur error message: '%s'", err);
	if (olen != blen + 2 || out[0] != 'Z' || memcmp(out + 1, big, blen) || out[blen + 1] != 'Z')
		FAIL("cat_ur output differs (%zu bytes, want %zu)", olen, blen + 2);
	free(out);
	free(err);
	free(big);

	/* 3. $SFS_IMAGE */
	setenv("SFS_IMAGE", "x.sfs", 1);
	char *a4[] = { "cat_ur", "one", NULL };
	rc = run(a4);
	out = slurp("out", NULL);
	if (rc != 0 || strcmp(out, "Z"))
		FAIL("SFS_IMAGE: exit %d out '%s'", rc, out);
	free(out);
	unsetenv("SFS_IMAGE");

	/* 4. missing image: clear message, no image created */
	char *a5[] = { "cat_ur", "-i", "nothere.sfs", "one", NULL };
	rc = run(a5);
	err = slurp("err", NULL);
	if (rc != 1 || !strstr(err, "nothere.sfs") || !strstr(err, "No such file or directory"))
		FAIL("missing image: exit %d err '%s'", rc, err);
	if (access("nothere.sfs", F_OK) == 0)
		FAIL("cat_ur created an image");
	free(err);

	/* 5. image in use: another client's server holds it. Clients attach
	 * to it; the image tool is kept out with the server's pid. */
	struct urfs_ring holder;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = "x.sfs";
	if (urfs_queue_init_params(4, &holder, &p) < 0)
		FAIL("holder: %s", p.errmsg);
	char *a6[] = { "cat_ur", "-i", "x.sfs", "one", NULL };
	rc = run(a6);
	out = slurp("out", NULL);
	if (rc != 0 || strcmp(out, "Z"))
		FAIL("cat_ur beside another client: exit %d out '%s'", rc, out);
	free(out);
	char want[64];
	snprintf(want, sizeof(want), "in use by pid %d", holder.server_pid);
	char *a7[] = { "sfs", "put", "x.sfs", "out", NULL };
	rc = run(a7);
	err = slurp("err", NULL);
	if (rc == 0 || !strstr(err, want))
		FAIL("sfs put while a server runs: exit %d err '%s' (want '%s')", rc, err, want);
	free(err);
	/* and through the library: attached to the same server */
	struct urfs_ring second;
	struct urfs_params p2;
	memset(&p2, 0, sizeof(p2));
	p2.image = "x.sfs";
	int r = urfs_queue_init_params(4, &second, &p2);
	if (r != 0 || second.server_pid != holder.server_pid)
		FAIL("second client: %d '%s', server %d (holder's %d)", r, p2.errmsg,
		     second.server_pid, holder.server_pid);
	urfs_queue_exit(&second);
	if (kill(holder.server_pid, 0) < 0)
		FAIL("the server left with the second client");
	urfs_queue_exit(&holder);
	printf("ok\n");
	return 0;
}
