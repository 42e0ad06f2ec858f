/* SPDX-License-Identifier: MIT */
/* Description: a hostile client. Random garbage SQEs (raw, untranslated) each
 * get exactly one CQE and the server survives; a client that scribbles its SQ
 * tail or CQ head into nonsense gets its ring shut down (state BROKEN) while
 * the server stays alive, uses (almost) no CPU, and exits as soon as the
 * client goes away. Bytes the client sends on its liveness socket are read
 * and dropped: the ring lives on.
 * Serial: pins the server to CPU 0 while it lies (tests/run.sh runs it alone).
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ur_fs.h"

#include "testutil.h"

static void init(struct urfs_ring *r, unsigned flags)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.flags = URFS_SETUP_NOIMAGE | URFS_SETUP_IDLE | flags;
	p.idle_us = 200;
	int e = urfs_queue_init_params(16, r, &p);
	if (e < 0)
		FAIL("init: %s (%s)", strerror(-e), p.errmsg);
}

static double cpu_secs(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void wait_state(struct urfs_ring *r, uint32_t want)
{
	struct ur_region_hdr *h = (struct ur_region_hdr *)r->region;
	for (int i = 0; i < 500; i++) {
		if (ur_load_acquire(&h->server_state) == want)
			return;
		/* make sure a sleeping server looks */
		uint64_t one = 1;
		if (write(r->sq_fd, &one, sizeof(one)) < 0)
			FAIL("doorbell");
		sleep_ms(10);
	}
	FAIL("server state %u, wanted %u", h->server_state, want);
}

static void check_idle_and_exit(struct urfs_ring *r)
{
	int pid = r->server_pid;
	if (kill(pid, 0) < 0)
		FAIL("server died: %s", strerror(errno));
	double c0 = cpu_secs(pid);
	sleep_ms(500);
	double c1 = cpu_secs(pid);
	if (c0 < 0 || c1 < 0)
		FAIL("cannot read server CPU time");
	if (c1 - c0 > 0.15)
		FAIL("server burns CPU on a broken ring: %.2f s in 0.5 s", c1 - c0);
	/* the client goes: the server must exit (queue_exit waits for it) */
	urfs_queue_exit(r);
	if (kill(pid, 0) == 0)
		FAIL("server %d still there after the client left", pid);
}

int main(void)
{
	struct urfs_ring r;
	struct urfs_cqe *cqe;
	alarm(60);

	/* 1. garbage SQEs: one CQE each, server alive */
	init(&r, URFS_SETUP_RAW);
	srand(12345);
	for (int round = 0; round < 200; round++) {
		unsigned n = 1 + (unsigned)(rand() % 16);
		for (unsigned i = 0; i < n; i++) {
			struct urfs_sqe *sqe = urfs_get_sqe(&r);
			if (!sqe)
				FAIL("get_sqe");
			unsigned char *b = (unsigned char *)sqe;
			for (size_t k = 0; k < sizeof(*sqe); k++)
				b[k] = (unsigned char)rand();
			if (round % 3 == 0)
				sqe->opcode = (uint8_t)(rand() % UR_OP_LAST);
			if (round % 5 == 0)
				sqe->reserved[0] = sqe->reserved[1] = 0;
			sqe->flags &= (uint8_t)~UR_SQE_IO_LINK;
			sqe->user_data = (uint64_t)round << 8 | i;
		}
		int s = urfs_submit_and_wait(&r, n);
		if (s != (int)n)
			FAIL("submit_and_wait: %d", s);
		for (unsigned i = 0; i < n; i++) {
			if (urfs_peek_cqe(&r, &cqe) < 0)
				FAIL("missing CQE");
			if (cqe->user_data != ((uint64_t)round << 8 | i))
				FAIL("wrong CQE");
			if (cqe->res >= 0 && cqe->res != 0)
				FAIL("garbage SQE succeeded with %d (opcode %u)", cqe->res, 0);
			urfs_cqe_seen(&r, cqe);
		}
	}
	if (kill(r.server_pid, 0) < 0)
		FAIL("server died on garbage");
	/* bytes on the liveness socket are not a hang-up: the server reads
	 * them, drops them and keeps the ring (it polls that socket once it
	 * sleeps, after 200 us idle) */
	if (send(r.live_fd, "hello, server", 13, MSG_NOSIGNAL) != 13)
		FAIL("send on the liveness socket: %s", strerror(errno));
	usleep(100 * 1000);
	struct urfs_sqe *nop = urfs_get_sqe(&r);
	if (!nop)
		FAIL("get_sqe");
	urfs_prep_nop(nop);
	nop->user_data = 77;
	int ns = urfs_submit_and_wait(&r, 1);
	if (ns != 1 || urfs_peek_cqe(&r, &cqe) < 0 || cqe->user_data != 77 || cqe->res != 0)
		FAIL("the ring died of bytes on its liveness socket: %d (%s)", ns,
		     ns < 0 ? strerror(-ns) : "");
	urfs_cqe_seen(&r, cqe);
	urfs_queue_exit(&r);

	/* 2. SQ tail scribbled far ahead of the head */
	init(&r, 0);
	*r.sq.ktail = *r.sq.khead + 1000000u;
	wait_state(&r, UR_STATE_BROKEN);
	check_idle_and_exit(&r);

	/* 3. CQ head moved past the tail (tail - head wraps to huge) */
	init(&r, 0);
	struct urfs_sqe *sqe = urfs_get_sqe(&r);
	urfs_prep_nop(sqe);
	if (urfs_submit_and_wait(&r, 1) != 1)
		FAIL("nop");
	*r.cq.khead = *r.cq.ktail + 7u;
	sqe = urfs_get_sqe(&r);
	urfs_prep_nop(sqe);
	urfs_submit(&r);
	wait_state(&r, UR_STATE_BROKEN);
	check_idle_and_exit(&r);

	/* 4. The CQ's owner_cpu hint pinned to the server's own CPU (a stale or
	 * lying hint): the server may yield, but it must still go to sleep and
	 * notice the client leaving; queue_exit returns promptly. */
	init(&r, 0);
	{
		struct ur_ring_ctl *cqc = (struct ur_ring_ctl *)(r.region + 512);
		sqe = urfs_get_sqe(&r);
		urfs_prep_nop(sqe);
		if (urfs_submit_and_wait(&r, 1) != 1)
			FAIL("nop");
		sleep_ms(5);
		/* pin the server to CPU 0 and claim CPU 0 in the client's hint:
		 * the server always sees "the client spins on my CPU" */
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		if (sched_setaffinity(r.server_pid, sizeof(set), &set) < 0)
			FAIL("sched_setaffinity: %s", strerror(errno));
		sleep_ms(20);
		/* wake the server (it spins after serving), then lie */
		sqe = urfs_get_sqe(&r);
		urfs_prep_nop(sqe);
		urfs_submit(&r);
		ur_store_relaxed(&cqc->owner_cpu, 1);
		sleep_ms(20);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int pid = r.server_pid;
		/* bypass the library's own clearing of the hint: leave as a killed
		 * client would, by closing the liveness socket */
		close(r.live_fd);
		int st;
		if (waitpid(pid, &st, 0) != pid)
			FAIL("waitpid");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (secs > 3)
			FAIL("server took %.1f s to leave with a pinned owner_cpu hint", secs);
		r.server_pid = 0;
		r.live_fd = open("/dev/null", O_RDONLY);
		urfs_queue_exit(&r);
	}

	/* 5. SQ head (server-owned) scribbled: the server ignores it */
	init(&r, 0);
	*r.sq.khead = 0xdead0000u;
	for (int i = 0; i < 4; i++) {
		urfs_prep_nop(&r.sq.sqes[r.sq.sqe_tail++ & r.sq.ring_mask]);
	}
	/* the library's view of free space is now garbage too; submit anyway */
	urfs_submit(&r);
	sleep_ms(50);
	if (kill(r.server_pid, 0) < 0)
		FAIL("server died on scribbled head");
	urfs_queue_exit(&r);
	printf("ok\n");
	return 0;
}
