/* SPDX-License-Identifier: MIT */
/*
 * syscount.c - whole-system counters for one benchmark run: syscalls (the
 * raw_syscalls:sys_enter tracepoint), context switches and task-clock, all
 * with perf_event_open(inherit=1) on this process, so threads and child
 * processes started later (the ur server) are counted while they live.
 * Plus CPU user/sys of a live process from /proc/<pid>/stat.
 * Must never fake a figure: a counter the kernel refuses is reported n/a
 * with the reason. It may mount tracefs only inside a private mount
 * namespace of a short-lived child, never on the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static const char *const tp_paths[] = {
	"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
	"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
};

static int read_id(const char *path)
{
	char buf[32];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	close(fd);
	if (n <= 0)
		return n < 0 ? -e : -EIO;
	buf[n] = 0;
	return atoi(buf);
}

/* tracefs is not mounted: try to read the id from a child that mounts tracefs
 * in a mount namespace of its own (needs CAP_SYS_ADMIN; the host is untouched). */
static int id_from_private_tracefs(void)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return e;
	}
	if (pid == 0) {
		int id = -EPERM;
		close(pfd[0]);
		if (unshare(CLONE_NEWNS) == 0 &&
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
			id = read_id(tp_paths[0]);
		else
			id = -errno;
		if (write(pfd[1], &id, sizeof(id)) != sizeof(id))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	int id = -EIO;
	if (read(pfd[0], &id, sizeof(id)) != sizeof(id))
		id = -EIO;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	return id;
}

int bench_syscall_tp_id(char *why, size_t n)
{
	static int cached;
	static char cached_why[120];
	if (cached) {
		if (cached < 0)
			snprintf(why, n, "%s", cached_why);
		return cached;
	}
	int id = -ENOENT;
	for (size_t i = 0; i < sizeof(tp_paths) / sizeof(tp_paths[0]) && id < 0; i++)
		id = read_id(tp_paths[i]);
	if (id < 0) {
		int first = id;
		id = id_from_private_tracefs();
		if (id < 0)
			snprintf(cached_why, sizeof(cached_why),
				 "no raw_syscalls tracepoint: tracefs not mounted (%s) "
				 "and cannot mount it (%s)", strerror(-first), strerror(-id));
	}
	if (id == 0)
		id = -ENOENT;
	cached = id;
	if (id < 0)
		snprintf(why, n, "%s", cached_why);
	return id;
}

static int perf_open(uint32_t type, uint64_t config, char *why, size_t n)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = type;
	a.config = config;
	a.inherit = 1;
	a.exclude_hv = 1;
	a.disabled = 0;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
		int par = -99;
		if (f) {
			if (fscanf(f, "%d", &par) != 1)
				par = -99;
			fclose(f);
		}
		snprintf(why, n, "perf_event_open refused: %s (perf_event_paranoid=%d)",
			 strerror(e), par);
		return -e;
	}
	return fd;
}

void bench_counters_open(struct bench_counters *c)
{
	memset(c, 0, sizeof(*c));
	int id = bench_syscall_tp_id(c->why[BENCH_CNT_SYSCALLS], sizeof(c->why[0]));
	c->fd[BENCH_CNT_SYSCALLS] = id < 0 ? -1 :
		perf_open(PERF_TYPE_TRACEPOINT, (uint64_t)id, c->why[BENCH_CNT_SYSCALLS],
			  sizeof(c->why[0]));
	c->fd[BENCH_CNT_CTXSW] = perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
					   c->why[BENCH_CNT_CTXSW], sizeof(c->why[0]));
	c->fd[BENCH_CNT_TASKCLOCK] = perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
					       c->why[BENCH_CNT_TASKCLOCK], sizeof(c->why[0]));
	for (int i = 0; i < BENCH_CNT_N; i++)
		if (c->fd[i] < 0)
			c->fd[i] = -1;
}

/* read() of an inherited counter sums the live children's counts too. */
void bench_counters_read(const struct bench_counters *c, int64_t v[BENCH_CNT_N])
{
	for (int i = 0; i < BENCH_CNT_N; i++) {
		uint64_t x;
		v[i] = -1;
		if (c->fd[i] >= 0 && read(c->fd[i], &x, sizeof(x)) == sizeof(x))
			v[i] = (int64_t)x;
	}
}

void bench_counters_close(struct bench_counters *c)
{
	for (int i = 0; i < BENCH_CNT_N; i++) {
		if (c->fd[i] >= 0)
			close(c->fd[i]);
		c->fd[i] = -1;
	}
}

int bench_proc_cpu(pid_t pid, double *user, double *sys)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	char *p = strrchr(buf, ')');      /* comm may contain spaces */
	if (!p)
		return -EIO;
	unsigned long ut = 0, st = 0;
	/* after ") ": state(3) ... utime is field 14, stime 15 */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -EIO;
	long hz = sysconf(_SC_CLK_TCK);
	*user = (double)ut / (double)hz;
	*sys = (double)st / (double)hz;
	return 0;
}
