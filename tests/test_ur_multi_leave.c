/* SPDX-License-Identifier: MIT */
/* Description: a client that leaves never kills a server that serves others
 * (nor signals it). Two rings of this process on one server; the server
 * stopped (SIGSTOP, its state seen as 'T') with 256 writes of the staying ring
 * queued in its SQ; the leaving ring's ur_shutdown, its exit bound cut to
 * 300 ms by UR_EXIT_TIMEOUT_MS, returns -ETIMEDOUT after the bound and within
 * 2 s more, and the server is as it was: alive and still stopped, never
 * signalled. After SIGCONT every one of the 256 writes completes, the data
 * reads back, and the server ends cleanly (exit 0) after the other ring
 * leaves, and that last ring returns well within its exit bound (20 s),
 * also when the server it waits for is a zombie of this process, its
 * starter gone. Twice: the ring that leaves is the one that started the
 * server (its child), then one that attached to it. */
#include "test_ur_multi.h"

#define IMG "leave.sfs"
#define NW 256u
#define CHUNK 512u
#define BOUND_MS 300

/* The state letter of /proc/pid/stat ('T' stopped, 'Z' zombie), or 0 when
 * the process is gone. */
static char proc_state(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char *s = tu_slurp(path);
	if (!s)
		return 0;
	const char *rp = strrchr(s, ')');
	char c = rp && rp[1] == ' ' ? rp[2] : '?';
	free(s);
	return c;
}

static void leaver_init(void)
{
	int e = ur_init_image(IMG, 8, 0);
	if (e < 0)
		FAIL("leaving ring: %s (%s)", strerror(-e), ur_errmsg());
}

static void round_trip(int spawner_leaves)
{
	struct urfs_ring stay;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = IMG;
	if (spawner_leaves)
		leaver_init();
	int e = urfs_queue_init_params(NW, &stay, &p);
	if (e < 0)
		FAIL("staying ring: %s (%s)", strerror(-e), p.errmsg);
	if (!spawner_leaves)
		leaver_init();
	pid_t spid = stay.server_pid;
	const char *who = spawner_leaves ? "the server's starter" : "an attached ring";
	int fd = mp_open(&stay, "f", URFS_O_CREAT | URFS_O_TRUNC);
	CHECK(fd >= 0);
	static uint8_t data[NW][CHUNK];
	for (unsigned i = 0; i < NW; i++) {
		memset(data[i], (int)((i * 7 + (unsigned)spawner_leaves) & 0xff), CHUNK);
		struct urfs_sqe *sqe = mp_sqe(&stay);
		urfs_prep_write(sqe, fd, data[i], CHUNK, (uint64_t)i * CHUNK);
		urfs_sqe_set_data64(sqe, i);
	}
	STOP_PROCESS(spid);
	if ((e = urfs_submit(&stay)) != (int)NW)
		FAIL("submit: %d", e);
	uint64_t t0 = mp_now_ms();
	e = ur_shutdown();
	uint64_t took = mp_now_ms() - t0;
	printf("%s left a stopped server: %s after %llu ms (bound %d ms)\n", who,
	       e < 0 ? strerror(-e) : "0", (unsigned long long)took, BOUND_MS);
	if (e != -ETIMEDOUT)
		FAIL("%s: ur_shutdown gave %d, want -ETIMEDOUT", who, e);
	if (took < BOUND_MS || took > BOUND_MS + 2000)
		FAIL("%s: leaving took %llu ms, bound %d ms", who, (unsigned long long)took, BOUND_MS);
	char st = proc_state(spid);
	if (st != 'T' && st != 't')
		FAIL("%s left and the server it shares is in state '%c', not stopped (signalled?)", who,
		     st ? st : '-');
	if (kill(spid, SIGCONT) < 0)
		FAIL("SIGCONT: %s", strerror(errno));
	unsigned seen[NW] = { 0 };
	for (unsigned k = 0; k < NW; k++) {
		struct urfs_cqe *cqe;
		if ((e = urfs_wait_cqe(&stay, &cqe)) < 0)
			FAIL("%s left; the other ring's completion %u of %u: %s", who, k, NW, strerror(-e));
		unsigned i = (unsigned)urfs_cqe_get_data64(cqe);
		if (i >= NW || seen[i]++ || cqe->res != (int32_t)CHUNK)
			FAIL("write %u: %d", i, cqe->res);
		urfs_cqe_seen(&stay, cqe);
	}
	static uint8_t back[CHUNK];
	for (unsigned i = 0; i < NW; i++)
		if (mp_pread(&stay, fd, back, CHUNK, (uint64_t)i * CHUNK) != (int32_t)CHUNK ||
		    memcmp(back, data[i], CHUNK))
			FAIL("chunk %u does not read back", i);
	CHECK_EQ(mp_fd_op(&stay, 1, fd), 0);
	CHECK_EQ(mp_fd_op(&stay, 0, fd), 0);
	/* The last client returns once the server has exited (ABI.md,
	 * Lifetimes). When its starter left first, the server ends as a zombie
	 * of this process, which nobody reaps yet: that is exited, not a server
	 * to wait the exit bound (20 s here) for. */
	setenv("UR_EXIT_TIMEOUT_MS", "20000", 1);
	t0 = mp_now_ms();
	urfs_queue_exit(&stay);
	took = mp_now_ms() - t0;
	char b[16];
	snprintf(b, sizeof(b), "%d", BOUND_MS);
	setenv("UR_EXIT_TIMEOUT_MS", b, 1);
	if (spawner_leaves && proc_state(spid) != 'Z')
		FAIL("the server is not a zombie of this process after its last client left");
	if (took >= 10000)
		FAIL("%s: the last client took %llu ms to leave (its server exited: %s)", who,
		     (unsigned long long)took, spawner_leaves ? "a zombie" : "reaped");
	mp_server_gone(spid, IMG, 10000);
	printf("%s: the other ring's %u writes completed after SIGCONT; the server ended cleanly\n",
	       who, NW);
}

int main(void)
{
	alarm(120);
	int e = sfs_format(IMG, 64ull << 20, 0);
	if (e < 0)
		FAIL("format: %s", strerror(-e));
	char b[16];
	snprintf(b, sizeof(b), "%d", BOUND_MS);
	setenv("UR_EXIT_TIMEOUT_MS", b, 1);
	round_trip(1);
	round_trip(0);
	FSCK_CLEAN(IMG);
	return 0;
}
