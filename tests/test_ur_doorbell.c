/* SPDX-License-Identifier: MIT */
/* Description: the server's doorbell operations cannot block, whatever the
 * client does to the eventfd it shares with the server: a client never wedges
 * it. In-process, on the server's own functions: ringing a blocking eventfd
 * whose counter is saturated, and draining a blocking eventfd that is empty
 * (with preadv2(RWF_NOWAIT) and with the timer fallback of older kernels),
 * each return within a second; ringing and draining still count correctly;
 * the interrupt timer is not left armed; and the start-up check refuses
 * anything but a counter-mode eventfd (/dev/null, a pipe, a semaphore
 * eventfd, a timerfd, a socket) with a message that names the fd and what it
 * is not. Each blocking case runs in a child that is
 * killed if it hangs. */
#include <sys/timerfd.h>
#include "test_ur_raw.h"
#include "../src/server/server.h"

#define SATURATED 0xfffffffffffffffeull

/* Run fn in a child; it must exit 0 within 2 s (a hang is the bug). */
static void in_child(const char *what, void (*fn)(void))
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (ur_doorbell_init() < 0)
			_exit(3);
		fn();
		_exit(0);
	}
	uint64_t t0 = raw_now_ms();
	int st = raw_wait(pid, 2000);
	if (st == -1)
		FAIL("%s: blocked (killed after 2 s)", what);
	if (st != 0)
		FAIL("%s: child ended with %d", what, st);
	printf("%s: returned in %llu ms\n", what, (unsigned long long)(raw_now_ms() - t0));
}

static void ring_saturated(void)
{
	int fd = eventfd(0, 0);                  /* blocking, as a client may leave it */
	uint64_t v = SATURATED;
	if (fd < 0 || write(fd, &v, 8) != 8)
		_exit(4);
	int r = ur_doorbell_ring(fd);
	if (r != -EINTR && r != -EAGAIN)
		_exit(5);
}

static void drain_empty(void)
{
	int fd = eventfd(0, 0);
	if (fd < 0 || ur_doorbell_drain(fd) != -EAGAIN)
		_exit(4);
}

static void drain_empty_fallback(void)
{
	ur_doorbell_nowait = 0;                  /* as on a kernel without RWF_NOWAIT on eventfd */
	int fd = eventfd(0, 0);
	int r = fd < 0 ? 0 : ur_doorbell_drain(fd);
	if (r != -EINTR && r != -EAGAIN)
		_exit(4);
}

/* Rings and drains count; afterwards the timer is quiet: a blocking read
 * that takes 150 ms is not interrupted. */
static void counts_and_quiet(void)
{
	int fd = eventfd(0, 0), p[2];
	uint64_t v;
	if (fd < 0 || pipe(p) < 0)
		_exit(4);
	for (int i = 0; i < 3; i++)
		if (ur_doorbell_ring(fd) != 0)
			_exit(5);
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, 0) != 1 || read(fd, &v, 8) != 8 || v != 3)
		_exit(6);
	v = 5;
	if (write(fd, &v, 8) != 8 || ur_doorbell_drain(fd) != 0 || poll(&pf, 1, 0) != 0)
		_exit(7);
	ur_doorbell_nowait = 0;
	if (write(fd, &v, 8) != 8 || ur_doorbell_drain(fd) != 0 || poll(&pf, 1, 0) != 0)
		_exit(8);
	pid_t w = fork();
	if (w == 0) {
		usleep(150000);
		_exit(write(p[1], "x", 1) == 1 ? 0 : 1);
	}
	char c;
	if (read(p[0], &c, 1) != 1)
		_exit(9);                        /* EINTR: the timer was left running */
	waitpid(w, NULL, 0);
}

int main(void)
{
	in_child("ring a saturated blocking eventfd", ring_saturated);
	in_child("drain an empty blocking eventfd", drain_empty);
	in_child("drain an empty blocking eventfd (timer fallback)", drain_empty_fallback);
	in_child("ring and drain count, timer disarmed", counts_and_quiet);

	char err[256];
	int efd = eventfd(0, EFD_NONBLOCK);
	CHECK_EQ(ur_doorbell_check(efd, err, sizeof(err)), 0);
	int bad[5], sv[2];
	bad[0] = open("/dev/null", O_RDWR);
	int p[2];
	CHECK(pipe(p) == 0);
	bad[1] = p[0];
	bad[2] = eventfd(0, EFD_SEMAPHORE);
	bad[3] = timerfd_create(CLOCK_MONOTONIC, 0);
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	bad[4] = sv[0];
	for (int i = 0; i < 5; i++) {
		CHECK(bad[i] >= 0);
		err[0] = 0;
		int r = ur_doorbell_check(bad[i], err, sizeof(err));
		if (r != -EINVAL)
			FAIL("doorbell check %d took fd %d (r %d)", i, bad[i], r);
		printf("refused: %s\n", err);
		/* The refusal says which fd and what it is not (the server
		 * prints it, a client shows it: ABI.md, counter-mode eventfds). */
		char want[64];
		snprintf(want, sizeof(want), "doorbell fd %d is not ", bad[i]);
		if (strncmp(err, want, strlen(want)))
			FAIL("refusal of fd %d does not name it: \"%s\"", bad[i], err);
		const char *what = i == 2 ? "EFD_SEMAPHORE" : "an eventfd";
		if (!strstr(err, what))
			FAIL("refusal of fd %d does not say it is not %s: \"%s\"", bad[i],
			     i == 2 ? "counter-mode" : "an eventfd", err);
	}
	return 0;
}
