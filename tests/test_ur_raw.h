/* SPDX-License-Identifier: MIT */
/*
 * test_ur_raw.h - a client that speaks the ring ABI directly, the way an
 * attacker would, without libur_fs.so's setup: it builds the memfd region
 * (any header, any size, any seals), makes the doorbells and the liveness
 * socket itself and execs simplefs_server ($UR_SERVER) with the documented
 * descriptor layout (fd 3 region, 4 SQ doorbell, 5 CQ doorbell, 6 liveness).
 * Shared by tests/test_ur_attack_*.c. Header only; every helper fails the
 * test (exit 1, caller's file:line) instead of hiding an error.
 */
#ifndef TEST_UR_RAW_H
#define TEST_UR_RAW_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ur_abi.h"
#include "testutil.h"

#define RAW_CANARY 0xa5

struct raw {
	int memfd, sq, cq, live;     /* the client's descriptors */
	int live_on_fd2;             /* hand our end of the liveness socket over as the server's fd 2 */
	int traced;                  /* the server starts stopped, under raw_trace() */
	int block_signals;           /* the server starts with every signal blocked */
	int shut_rd;                 /* our end of the liveness socket reads nothing: the hello cannot go */
	pid_t pid;                   /* the server, or -1 */
	uint8_t *base;               /* the client's mapping, maplen bytes */
	uint64_t size, maplen;
};

static inline uint64_t raw_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline uint64_t raw_align(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* The library's layout (docs/ABI.md): rings, entry arrays, a 4 KiB aligned
 * data area of data bytes (half staging, half buffers), then tail bytes. */
static inline void raw_layout(struct ur_region_hdr *g, uint32_t sqn, uint32_t cqn,
			      uint64_t data, uint64_t tail)
{
	memset(g, 0, sizeof(*g));
	g->magic = UR_ABI_MAGIC;
	g->version = UR_ABI_VERSION;
	g->sq_entries = sqn;
	g->cq_entries = cqn;
	g->sq_ctl_off = 256;
	g->cq_ctl_off = 512;
	g->sqes_off = 1024;
	g->cqes_off = raw_align(g->sqes_off + (uint64_t)sqn * sizeof(struct ur_sqe), 64);
	g->data_off = raw_align(g->cqes_off + (uint64_t)cqn * sizeof(struct ur_cqe), 4096);
	g->data_size = data;
	g->bufs_off = g->data_off + data / 2;
	g->bufs_size = data - data / 2;
	g->size = g->data_off + data + tail;
}

/* A memfd of size bytes holding the header g (as much of it as fits), the
 * bytes after size up to the page end filled with RAW_CANARY, then seals. */
#define RAW_REGION(r, g, size, seals) raw_region((r), (g), (size), (seals), __FILE__, __LINE__)
static inline void raw_region(struct raw *r, const struct ur_region_hdr *g, uint64_t size,
			      unsigned seals, const char *file, int line)
{
	memset(r, 0, sizeof(*r));
	r->sq = r->cq = r->live = -1;
	r->pid = -1;
	r->size = size;
	r->maplen = raw_align(size, 4096);
	r->memfd = memfd_create("raw-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->memfd < 0 || ftruncate(r->memfd, (off_t)size) < 0)
		TU_FAIL_AT(file, line, "memfd: %s", strerror(errno));
	if (size == 0) {           /* nothing to map: any access would fault */
		r->maplen = 0;
	} else {
		r->base = mmap(NULL, r->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, r->memfd, 0);
		if (r->base == MAP_FAILED)
			TU_FAIL_AT(file, line, "mmap: %s", strerror(errno));
		memcpy(r->base, g, size < sizeof(*g) ? size : sizeof(*g));
		/* the page tail past size is part of the same shared page */
		memset(r->base + size, RAW_CANARY, r->maplen - size);
	}
	if (seals && fcntl(r->memfd, F_ADD_SEALS, seals) < 0)
		TU_FAIL_AT(file, line, "seal: %s", strerror(errno));
}

/* Is the page tail past the region still untouched? */
static inline int raw_canary_ok(const struct raw *r)
{
	for (uint64_t i = r->size; i < r->maplen; i++)
		if (r->base[i] != RAW_CANARY)
			return 0;
	return 1;
}

static inline const char *raw_server_path(void)
{
	const char *s = getenv("UR_SERVER");
	if (!s || !*s) {
		fprintf(stderr, "FAIL: UR_SERVER is not set (run through tests/run.sh)\n");
		exit(1);
	}
	return s;
}

/*
 * Start the server on r's region with doorbells and a liveness socket made
 * here (eventfds unless sq_fd/cq_fd >= 0 are given: then those are handed
 * over instead). args: extra arguments, NULL-terminated (NULL: the none
 * backend). The server's 0 and 1 are /dev/null, 2 is ours.
 */
#define RAW_START(r, args, sq_fd, cq_fd) raw_start((r), (args), (sq_fd), (cq_fd), __FILE__, __LINE__)
static inline void raw_start(struct raw *r, const char *const *args, int sq_fd, int cq_fd,
			     const char *file, int line)
{
	int sv[2];
	r->sq = sq_fd >= 0 ? sq_fd : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->cq = cq_fd >= 0 ? cq_fd : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->sq < 0 || r->cq < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		TU_FAIL_AT(file, line, "doorbells: %s", strerror(errno));
	r->live = sv[0];
	if (r->shut_rd && shutdown(sv[0], SHUT_RD) < 0)
		TU_FAIL_AT(file, line, "shutdown: %s", strerror(errno));
	const char *argv[32];
	int a = 0;
	static const char *const none[] = { "--backend", "none", NULL };
	argv[a++] = raw_server_path();
	argv[a++] = "--client";
	for (const char *const *p = args ? args : none; *p && a < 30; p++)
		argv[a++] = *p;
	argv[a] = NULL;
	pid_t pid = fork();
	if (pid < 0)
		TU_FAIL_AT(file, line, "fork: %s", strerror(errno));
	if (pid == 0) {
		/* Move the four out of the way first: they may sit on 3..6. */
		int src[4] = { r->memfd, r->sq, r->cq, sv[1] }, hi[4];
		for (int i = 0; i < 4; i++)
			if ((hi[i] = fcntl(src[i], F_DUPFD, 20)) < 0)
				_exit(127);
		int nul = open("/dev/null", O_RDWR);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0)
			_exit(127);
		if (r->live_on_fd2 && dup2(sv[0], 2) < 0)   /* before 3..6 are overwritten */
			_exit(127);
		for (int i = 0; i < 4; i++)
			if (dup2(hi[i], UR_FD_REGION + i) < 0)
				_exit(127);
		sigset_t all;
		sigfillset(&all);
		if (r->block_signals)
			sigprocmask(SIG_BLOCK, &all, NULL);
		if (r->traced && ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(sv[1]);
	r->pid = pid;
}

/* The server's hello: its err (0 ready, -errno refused), or 1 if it sent none
 * (exited, crashed) within timeout_ms. */
static inline int raw_hello(struct raw *r, int timeout_ms, char *msg, size_t msglen)
{
	struct ur_hello h;
	struct pollfd p = { .fd = r->live, .events = POLLIN };
	int pr;
	while ((pr = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	if (pr <= 0 || recv(r->live, &h, sizeof(h), MSG_DONTWAIT) != (ssize_t)sizeof(h))
		return 1;
	h.msg[sizeof(h.msg) - 1] = '\0';
	if (msg)
		snprintf(msg, msglen, "%s", h.msg);
	return h.err;
}

/* Wait up to timeout_ms for pid: its exit code, 128 + signal, or -1 when it
 * is still running (then it is killed and reaped). */
static inline int raw_wait(pid_t pid, int timeout_ms)
{
	uint64_t end = raw_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (w < 0 && errno != EINTR)
			return -2;
		if (raw_now_ms() >= end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
}

/*
 * Step a traced server (RAW_START with r->traced) from system call to system
 * call; at each entry call at(arg, nr, args): it may act (as a racing client
 * would, at the worst moment) and returns 1 to let the server run on
 * untraced. Returns 0 then, or -1 if the server ended first.
 */
static inline int raw_trace(pid_t pid, int (*at)(void *arg, uint64_t nr, const uint64_t *args), void *arg)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))     /* the stop at exec */
		return -1;
	ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD);
	int sig = 0;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig) < 0 ||
		    waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
			return -1;
		sig = 0;
		if (WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			sig = WSTOPSIG(st);              /* a real signal: deliver it */
			continue;
		}
		struct __ptrace_syscall_info info;
		if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof(info), &info) <= 0)
			return -1;
		if (info.op == PTRACE_SYSCALL_INFO_ENTRY && at(arg, info.entry.nr, info.entry.args)) {
			ptrace(PTRACE_DETACH, pid, NULL, NULL);
			return 0;
		}
	}
}

/* May this test trace its children? (Containers may forbid ptrace.) */
static inline int raw_can_trace(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0)
			_exit(1);
		raise(SIGSTOP);
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 0;
	int ok = WIFSTOPPED(st);
	if (ok)
		kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return ok;
}

/* The client goes away: every descriptor and the mapping. */
static inline void raw_close(struct raw *r)
{
	if (r->live >= 0)
		close(r->live);
	if (r->sq >= 0)
		close(r->sq);
	if (r->cq >= 0)
		close(r->cq);
	if (r->memfd >= 0)
		close(r->memfd);
	if (r->base)
		munmap(r->base, r->maplen);
	r->live = r->sq = r->cq = r->memfd = -1;
	r->base = NULL;
}

#endif
