/* SPDX-License-Identifier: MIT */
/* Description: the server's start-up validation of a region, by a raw client
 * (ABI.md "Processes and descriptors", "Validation"). The test builds the
 * region itself (memfd, two eventfds, a socketpair on fds 3..6), starts
 * simplefs_server --client --backend none, and reads its one hello: a
 * well-formed region gets "ready"; a region not sealed against shrinking, a
 * bad magic, version or size, entry counts that are not powers of two or
 * exceed 32768, fewer CQ than SQ entries, rings outside the region, misaligned
 * or overlapping, and a misaligned data area or one (or its buffers) outside its bounds each get -EINVAL and a reason, and
 * the server exits instead of serving. Run by hand, --help prints the usage
 * (exit 0) and an unknown option gets it on stderr (exit 2); --check of a
 * good image exits 0, of a missing one 1 with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ur_abi.h"

#include "testutil.h"

extern char **environ;

#define SQN 8u
#define CQN 16u

/* A well-formed geometry (written out here, not taken from the library: the
 * test plays a client that builds its own region). */
static struct ur_region_hdr good(void)
{
	struct ur_region_hdr g = {
		.magic = UR_ABI_MAGIC, .version = UR_ABI_VERSION,
		.sq_entries = SQN, .cq_entries = CQN,
		.sq_ctl_off = 256, .cq_ctl_off = 512,
		.sqes_off = 1024, .cqes_off = 1024 + SQN * sizeof(struct ur_sqe),
		.data_off = 4096, .data_size = 8192,      /* staging 4 KiB, then buffers */
		.bufs_off = 8192, .bufs_size = 4096,
		.size = 4096 + 8192, .idle_us = 0,
	};
	return g;
}

/* Start a server on a region holding g (memfd of size bytes, sealed if seal),
 * return its hello; the server must then exit (or, when ready, exits once we
 * hang up). */
static struct ur_hello start(const struct ur_region_hdr *g, uint64_t size, int seal)
{
	struct ur_hello h;
	int mfd = memfd_create("ur-test", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	int sq = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), cq = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int sp[2];
	CHECK(mfd >= 0 && sq >= 0 && cq >= 0);
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0);
	CHECK(ftruncate(mfd, (off_t)size) == 0);
	if (size >= sizeof(*g))
		CHECK(pwrite(mfd, g, sizeof(*g), 0) == (ssize_t)sizeof(*g));
	if (seal)
		CHECK(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, mfd, UR_FD_REGION);
	posix_spawn_file_actions_adddup2(&fa, sq, UR_FD_SQ_DOORBELL);
	posix_spawn_file_actions_adddup2(&fa, cq, UR_FD_CQ_DOORBELL);
	posix_spawn_file_actions_adddup2(&fa, sp[1], UR_FD_LIVE);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	char *srv = getenv("UR_SERVER");
	if (!srv)
		FAIL("UR_SERVER is not set (run through tests/run.sh)");
	char *argv[] = { srv, (char *)"--client", (char *)"--backend", (char *)"none", NULL };
	pid_t pid;
	int e = posix_spawn(&pid, srv, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e)
		FAIL("spawn %s: %s", srv, strerror(e));
	close(sp[1]);
	memset(&h, 0, sizeof(h));
	struct timeval tv = { 10, 0 };
	setsockopt(sp[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t n = recv(sp[0], &h, sizeof(h), 0);
	if (n != (ssize_t)sizeof(h))
		FAIL("no hello from the server (%zd: %s)", n, n < 0 ? strerror(errno) : "short");
	h.msg[sizeof(h.msg) - 1] = '\0';
	close(sp[0]);                          /* hang up: a ready server follows us out */
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st))
		FAIL("server died of signal %d (hello %d: %s)", WTERMSIG(st), h.err, h.msg);
	if (h.err != 0 && WEXITSTATUS(st) == 0)
		FAIL("server refused the region (%s) but exited 0", h.msg);
	close(mfd);
	close(sq);
	close(cq);
	return h;
}

static void refused(const char *what, const struct ur_region_hdr *g, uint64_t size, int seal,
		    const char *why)
{
	struct ur_hello h = start(g, size, seal);
	if (h.err != -EINVAL)
		FAIL("%s: hello %d (%s), expected -EINVAL", what, h.err, h.msg);
	if (why && !strstr(h.msg, why))
		FAIL("%s: the server said '%s', expected '%s'", what, h.msg, why);
	printf("refused: %-40s %s\n", what, h.msg);
}

/* The server run by hand with args: its exit status, and what it wrote to
 * the stream it was told to keep (fd 1 or 2; the other goes to /dev/null). */
static int server_says(const char *args, int fd, char *out, size_t cap)
{
	char cmd[4096 + 128];
	snprintf(cmd, sizeof(cmd), "'%s' %s %s", getenv("UR_SERVER"), args,
		 fd == 2 ? "2>&1 >/dev/null" : "2>/dev/null");
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* simplefs_server(8): --help prints the usage and exits 0; an unknown
 * option gets the usage on stderr and exit status 2. */
static void usage_text(void)
{
	char out[4096];
	if (!getenv("UR_SERVER"))
		FAIL("UR_SERVER is not set (run through tests/run.sh)");
	int st = server_says("--help", 1, out, sizeof(out));
	if (st != 0 || strncmp(out, "usage: simplefs_server", 22))
		FAIL("--help: exit %d, stdout '%.60s'", st, out);
	st = server_says("--no-such-option", 2, out, sizeof(out));
	if (st != 2 || !strstr(out, "usage: simplefs_server"))
		FAIL("an unknown option: exit %d, stderr '%.200s', want 2 and the usage", st, out);
	printf("usage: on stdout for --help (exit 0), on stderr for a bad option (exit 2)\n");
	/* --check mounts the image, reports and exits: 0 for a good one, 1 and
	 * the reason on stderr for one that cannot be mounted. */
	int e = sfs_format("chk.sfs", 16ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	st = server_says("--check --image chk.sfs", 1, out, sizeof(out));
	if (st != 0 || !strstr(out, "mounted and unmounted cleanly"))
		FAIL("--check of a good image: exit %d, stdout '%.200s'", st, out);
	st = server_says("--check --image no-such.sfs", 2, out, sizeof(out));
	if (st != 1 || !strstr(out, "simplefs_server: no-such.sfs: "))
		FAIL("--check of a missing image: exit %d, stderr '%.200s', want 1 and the reason", st, out);
	printf("--check: a good image mounts and unmounts (exit 0), a missing one: %s", out);
}

int main(void)
{
	usage_text();
	struct ur_region_hdr g = good();
	struct ur_hello h = start(&g, g.size, 1);
	if (h.err != 0)
		FAIL("a well-formed region: hello %d (%s)", h.err, h.msg);
	printf("ready: a well-formed region\n");

	refused("not sealed", &g, g.size, 0, "sealed");
	g = good(); g.magic ^= 1;            refused("bad magic", &g, g.size, 1, "magic");
	g = good(); g.version = 99;          refused("version 99", &g, g.size, 1, "version");
	g = good();                          refused("header size != memfd size", &g, g.size + 4096, 1, "size");
	g = good(); g.sq_entries = 12;       refused("12 SQ entries", &g, g.size, 1, "ring sizes");
	g = good(); g.cq_entries = 0;        refused("0 CQ entries", &g, g.size, 1, "ring sizes");
	g = good(); g.sq_entries = 65536;    refused("65536 SQ entries", &g, g.size, 1, "ring sizes");
	g = good(); g.cq_entries = 65536;    refused("65536 CQ entries", &g, g.size, 1, "ring sizes");
	g = good(); g.sq_ctl_off = g.size;   refused("SQ control outside", &g, g.size, 1, "offsets");
	g = good(); g.cq_ctl_off = 0;        refused("CQ control over the header", &g, g.size, 1, "overlap");
	g = good(); g.sqes_off = 1056;       refused("SQEs misaligned", &g, g.size, 1, "offsets");
	g = good(); g.cqes_off = g.size - 64; refused("CQEs past the end", &g, g.size, 1, "entry array");
	g = good(); g.cqes_off = 1024;       refused("CQEs over the SQEs", &g, g.size, 1, "overlap");
	g = good(); g.sq_ctl_off = 512;      refused("SQ and CQ control shared", &g, g.size, 1, "overlap");
	g = good(); g.data_off = 0;          g.bufs_off = 4096;   /* over the header and rings */
	refused("data area over the rings", &g, g.size, 1, "overlaps");
	g = good(); g.data_off = 1280;       g.bufs_off = 1280 + 4096;   /* not 4096-aligned */
	refused("data area misaligned", &g, g.size, 1, "data area");
	g = good(); g.cq_entries = 4;        refused("fewer CQ than SQ entries", &g, g.size, 1, "fewer CQ");
	g = good(); g.data_size = g.size;    refused("data area past the end", &g, g.size, 1, "data area");
	g = good(); g.bufs_off = g.data_off + 8192; refused("buffers past the data area", &g, g.size, 1, "data area");
	g = good(); g.data_off = UINT64_MAX - 100; refused("data offset near 2^64", &g, g.size, 1, "data area");
	refused("a region smaller than its header", &g, 64, 1, NULL);
	printf("ok\n");
	return 0;
}
