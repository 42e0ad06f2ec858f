/* SPDX-License-Identifier: MIT */
/* Description: a raw-ABI client cannot wedge its server, nor make it outlive
 * it and keep the image locked. The attacker
 * saturates the CQ doorbell counter, drains the SQ doorbell, clears
 * O_NONBLOCK on both (it shares the file descriptions), asks for a CQ wakeup,
 * submits a NOP and goes away: by closing everything (the server must see
 * the liveness socket hang up), by dying (with the server reparented to this
 * test), by dying while a child of its own keeps the liveness socket open
 * (the server follows the process that started it), or after handing its end
 * of the liveness socket to the server as its fd 2, or by never reading its
 * hello (its reading side shut, the socket open). Each time the server must
 * exit within a few seconds and the image must then mount (also when the
 * attacker starts it with every signal blocked). A racing client
 * that rings and drains the SQ doorbell while the server wakes changes
 * nothing. Doorbells that are not eventfds (/dev/null, a pipe, a semaphore
 * eventfd) are refused at start-up. */
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include "test_ur_raw.h"

#define IMG "img.sfs"
#define SATURATED 0xfffffffffffffffeull

static const char *const img_args[] = { "--image", IMG, NULL };

static void start(struct raw *r, int live_on_fd2, int block_signals)
{
	struct ur_region_hdr g;
	raw_layout(&g, 4, 8, 8192, 0);
	g.idle_us = 0;                       /* the server sleeps at once */
	RAW_REGION(r, &g, g.size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	r->live_on_fd2 = live_on_fd2;
	r->block_signals = block_signals;
	RAW_START(r, img_args, -1, -1);
	char msg[256] = "";
	int h = raw_hello(r, 20000, msg, sizeof(msg));
	if (h != 0)
		FAIL("server did not start: %d %s", h, msg);
}

/* Saturate and block the CQ doorbell, drain and block the SQ doorbell, ask
 * for a CQ wakeup and submit a NOP: a server that writes the CQ doorbell
 * blindly now sleeps for ever. Returns once the NOP's CQE is published. */
static void wedge(struct raw *r)
{
	struct ur_region_hdr *g = (void *)r->base;
	struct ur_ring_ctl *sq = (void *)(r->base + g->sq_ctl_off), *cq = (void *)(r->base + g->cq_ctl_off);
	struct ur_sqe *sqes = (void *)(r->base + g->sqes_off);
	uint64_t v = SATURATED;
	CHECK(write(r->cq, &v, 8) == 8);
	CHECK(fcntl(r->cq, F_SETFL, 0) == 0);
	CHECK(fcntl(r->sq, F_SETFL, 0) == 0);
	ur_fetch_or(&cq->flags, UR_CQ_NEED_WAKEUP);
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].user_data = 42;
	ur_store_release(&sq->tail, 1);
	v = 1;
	CHECK(write(r->sq, &v, 8) == 8);          /* the server is asleep: wake it */
	uint64_t end = raw_now_ms() + 10000;
	while (ur_load_acquire(&cq->tail) != 1) {
		if (raw_now_ms() > end)
			FAIL("the NOP never completed");
		usleep(200);
	}
	usleep(50000);                            /* let it reach the doorbell write */
}

/* The server must be gone within 5 s, cleanly, and the image mountable. */
static void server_gone(pid_t pid, const char *how)
{
	uint64_t t0 = raw_now_ms();
	int st = raw_wait(pid, 5000);
	if (st == -1)
		FAIL("%s: the server outlived its client (killed after 5 s)", how);
	if (st != 0)
		FAIL("%s: the server ended with %d", how, st);
	struct sfs *fs;
	char err[256] = "";
	int r = sfs_mount(IMG, 0, &fs, err, sizeof(err));
	if (r < 0)
		FAIL("%s: image still locked: %s (%s)", how, strerror(-r), err);
	CHECK_EQ(sfs_unmount(fs), 0);
	printf("%s: server gone in %llu ms, image mounts\n", how, (unsigned long long)(raw_now_ms() - t0));
}

static int rw_nowait(int fd)
{
	uint64_t v;
	struct iovec iov = { &v, 8 };
	return (int)preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
}

/* Traced server: when it goes to sleep in poll, ring; at the entry of its
 * doorbell read, drain the counter and clear O_NONBLOCK - the race a client
 * wins now and then, made certain. */
static int stage;
static int drain_at_read(void *arg, uint64_t nr, const uint64_t *a)
{
	struct raw *r = arg;
	uint64_t one = 1;
	int is_poll = nr == SYS_ppoll;
#ifdef SYS_poll
	is_poll |= nr == SYS_poll;
#endif
	if (stage == 0 && is_poll) {
		CHECK(write(r->sq, &one, 8) == 8);
		stage = 1;
		return 0;
	}
	if (stage == 1 && (nr == SYS_read || nr == SYS_readv || nr == SYS_preadv2) &&
	    a[0] == UR_FD_SQ_DOORBELL) {
		CHECK(rw_nowait(r->sq) == 8);
		CHECK(fcntl(r->sq, F_SETFL, 0) == 0);
		return 1;
	}
	return 0;
}

static volatile int racing;
static void *race_sq(void *arg)
{
	struct raw *r = arg;
	uint64_t one = 1;
	for (unsigned i = 0; racing; i++) {
		if (write(r->sq, &one, 8) != 8)
			break;
		for (volatile unsigned k = 0; k < (i & 1023); k++)
			;
		rw_nowait(r->sq);                 /* drain before the server reads */
	}
	return NULL;
}

int main(void)
{
	CHECK_EQ(sfs_format(IMG, 8u << 20, 0), 0);
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);   /* orphaned servers come to us */

	/* 1. Wedged, then the client closes everything. */
	struct raw r;
	start(&r, 0, 1);
	wedge(&r);
	pid_t pid = r.pid;
	raw_close(&r);
	server_gone(pid, "wedged, client closed");

	/* 2. Racing the SQ doorbell drain, blocking flags, then closed. */
	start(&r, 0, 0);
	CHECK(fcntl(r.sq, F_SETFL, 0) == 0);
	racing = 1;
	pthread_t th;
	CHECK(pthread_create(&th, NULL, race_sq, &r) == 0);
	usleep(300000);
	racing = 0;
	pthread_join(th, NULL);
	pid = r.pid;
	raw_close(&r);
	server_gone(pid, "SQ drain race, client closed");

	/* 2b. The same race, won for certain (the server traced). */
	int traced = raw_can_trace();
	if (traced) {
		struct ur_region_hdr g;
		raw_layout(&g, 4, 8, 8192, 0);
		RAW_REGION(&r, &g, g.size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
		r.traced = 1;
		RAW_START(&r, img_args, -1, -1);
		if (raw_trace(r.pid, drain_at_read, &r) < 0)
			FAIL("the server ended before it read its doorbell");
		CHECK_EQ(raw_hello(&r, 20000, NULL, 0), 0);
		pid = r.pid;
		raw_close(&r);
		server_gone(pid, "SQ doorbell drained at the server's read, client closed");
	}

	/* 3. The client dies (the kernel closes its ends); 4. it dies while its
	 * child keeps the liveness socket open. */
	for (int keep = 0; keep < 2; keep++) {
		int p[2];
		CHECK(pipe(p) == 0);
		pid_t att = fork();
		CHECK(att >= 0);
		if (att == 0) {
			start(&r, 0, 1);                /* signals blocked: they must land anyway */
			wedge(&r);
			pid_t pids[2] = { r.pid, 0 };
			if (keep && (pids[1] = fork()) == 0) {
				sleep(30);               /* holds r.live */
				_exit(0);
			}
			if (write(p[1], pids, sizeof(pids)) != sizeof(pids))
				_exit(2);
			_exit(0);                        /* no cleanup: the kernel's */
		}
		pid_t pids[2];
		CHECK(read(p[0], pids, sizeof(pids)) == sizeof(pids));
		CHECK_EQ(raw_wait(att, 10000), 0);
		server_gone(pids[0], keep ? "client died, its child holds the socket" : "client died");
		if (keep) {
			kill(pids[1], SIGKILL);
			raw_wait(pids[1], 5000);
		}
		close(p[0]);
		close(p[1]);
	}

	/* 5. Our end of the liveness socket handed to the server as its fd 2. */
	start(&r, 1, 0);
	wedge(&r);
	pid = r.pid;
	raw_close(&r);
	server_gone(pid, "liveness peer on the server's fd 2");

	/* 5b. Its hello cannot be sent (our end reads nothing, yet is open:
	 * no hang-up to see): nobody listens, the server drops the ring and
	 * exits. */
	{
		struct ur_region_hdr g;
		raw_layout(&g, 4, 8, 8192, 0);
		RAW_REGION(&r, &g, g.size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
		r.shut_rd = 1;
		RAW_START(&r, img_args, -1, -1);
		server_gone(r.pid, "its hello undeliverable, the liveness socket open");
		r.pid = -1;
		raw_close(&r);
	}

	/* 6. Doorbells that are not eventfds are refused. */
	int sem = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC), nul = open("/dev/null", O_RDWR | O_CLOEXEC), pp[2];
	CHECK(sem >= 0 && nul >= 0 && pipe2(pp, O_CLOEXEC) == 0);
	int bad_sq[3] = { nul, pp[0], sem };
	for (int i = 0; i < 3; i++) {
		struct ur_region_hdr g;
		raw_layout(&g, 4, 8, 8192, 0);
		RAW_REGION(&r, &g, g.size, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
		RAW_START(&r, NULL, i < 2 ? bad_sq[i] : -1, i == 2 ? bad_sq[i] : -1);
		char msg[256] = "";
		int h = raw_hello(&r, 20000, msg, sizeof(msg));
		if (h != -EINVAL)
			FAIL("bad doorbell %d taken: hello %d %s", i, h, msg);
		printf("bad doorbell refused: %s\n", msg);
		if (i < 2)                          /* ours: closed below, once */
			r.sq = -1;
		else
			r.cq = -1;
		pid = r.pid;
		raw_close(&r);
		CHECK_EQ(raw_wait(pid, 10000), 1);
	}
	if (!traced) {
		printf("cannot trace a child here (ptrace not permitted): the certain drain race is not tested\n");
		return 77;
	}
	return 0;
}
