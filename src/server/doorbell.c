/* SPDX-License-Identifier: MIT */
/*
 * doorbell.c - the server's side of the two eventfd doorbells its client
 * hands over (fd 4: SQ, client -> server; fd 5: CQ, server -> client): check
 * at start-up that they are plain eventfds, drain the SQ doorbell and ring the
 * CQ doorbell without ever blocking, whatever the client does to the file
 * description it shares with the server (O_NONBLOCK cleared at any moment) or
 * to the counters (drained before the server reads, saturated before it
 * writes).
 *
 * How it cannot block: a read uses preadv2(RWF_NOWAIT), which eventfd honours
 * per call whatever the file's flags (Linux >= 5.12). An eventfd write has no
 * such flag (pwritev2 RWF_NOWAIT: EOPNOTSUPP), so the write - and the read on
 * a kernel without RWF_NOWAIT - runs under a periodic timer whose signal has
 * a handler without SA_RESTART: a write that sleeps on a saturated counter is
 * interrupted (EINTR) within one tick, and the periodic tick covers a signal
 * that lands just before the call starts. A saturated counter already wakes
 * the client, so nothing is lost when the write gives up.
 *
 * Must never: sleep on a doorbell longer than one tick; leave the timer
 * armed outside the one call it guards; accept a doorbell that is not an
 * eventfd in counter mode (a /dev/null doorbell made the server spin).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "server.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define UR_DB_SIGNAL  SIGALRM
#define UR_DB_TICK_NS 10000000L           /* 10 ms */

int ur_doorbell_nowait = 1;               /* try preadv2(RWF_NOWAIT) first */

static timer_t db_timer;
static int db_timer_ok;

static void on_tick(int sig)
{
	(void)sig;                            /* only there to interrupt a call */
}

int ur_doorbell_check(int fd, char *err, size_t errlen)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(path, "re");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "doorbell fd %d: cannot inspect it: %s", fd, strerror(e));
		return -e;
	}
	int is_efd = 0, sem = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "eventfd-count:", 14))
			is_efd = 1;
		else if (!strncmp(line, "eventfd-semaphore:", 18))
			sem = atoi(line + 18) != 0;
	}
	fclose(f);
	if (!is_efd || sem) {
		snprintf(err, errlen, "doorbell fd %d is not %s", fd,
			 is_efd ? "a counter-mode eventfd (EFD_SEMAPHORE)" : "an eventfd");
		return -EINVAL;
	}
	return 0;
}

int ur_doorbell_init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;                 /* no SA_RESTART: the point */
	sigemptyset(&sa.sa_mask);
	if (sigaction(UR_DB_SIGNAL, &sa, NULL) < 0)
		return -errno;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, UR_DB_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = UR_DB_SIGNAL;
	ev.sigev_notify_thread_id = gettid();
	if (timer_create(CLOCK_MONOTONIC, &ev, &db_timer) < 0)
		return -errno;
	db_timer_ok = 1;
	return 0;
}

/* One 8-byte read or write that a sleeping eventfd cannot hold for longer
 * than a tick: bytes, or -errno (-EINTR: it would have blocked). */
static ssize_t guarded(int fd, uint64_t *v, int wr)
{
	static const struct itimerspec on = { { 0, UR_DB_TICK_NS }, { 0, UR_DB_TICK_NS } };
	static const struct itimerspec off;
	if (!db_timer_ok || timer_settime(db_timer, 0, &on, NULL) < 0)
		return -EAGAIN;                  /* never a call that could block */
	ssize_t r = wr ? write(fd, v, sizeof(*v)) : read(fd, v, sizeof(*v));
	int e = errno;
	timer_settime(db_timer, 0, &off, NULL);
	return r < 0 ? -e : r;
}

int ur_doorbell_ring(int fd)
{
	uint64_t one = 1;
	ssize_t r = guarded(fd, &one, 1);
	return r < 0 ? (int)r : 0;
}

int ur_doorbell_drain(int fd)
{
	uint64_t v;
	ssize_t r = -EOPNOTSUPP;
	if (ur_doorbell_nowait) {
		struct iovec iov = { &v, sizeof(v) };
		r = preadv2(fd, &iov, 1, -1, RWF_NOWAIT);
		if (r < 0 && (errno == EOPNOTSUPP || errno == EINVAL))
			ur_doorbell_nowait = 0;      /* an older kernel: the timer it is */
		r = r < 0 ? -errno : r;
	}
	if (!ur_doorbell_nowait)
		r = guarded(fd, &v, 0);
	return r < 0 ? (int)r : 0;
}
