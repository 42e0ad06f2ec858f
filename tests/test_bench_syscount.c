/* SPDX-License-Identifier: MIT */
/* Description: bench's syscall counter (perf_event_open on the
 * raw_syscalls:sys_enter tracepoint, inherited) counts 1000 getppid calls
 * as about 1000, and counts a live child's syscalls before it exits (as it
 * must for the ur server); and the figure bench reports for a job (psync
 * reads: about 1 syscall per I/O), from the library and as the bench program
 * prints it: by default from an untimed pass of its own, the counter closed
 * before the timed runs (it slows every system call), or counted in the timed
 * runs (BENCH_SC_TIMED, the sweep's T1); with --no-syscount (job.syscount 0)
 * nothing is counted: n/a. Skips when the kernel refuses perf events.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/bench/bench.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static int perf_fds_pass = -1, perf_fds_off = -1;

/* bench's ready hook (just before the warm-up and the timed runs): how many
 * perf events this process has open */
static void count_perf_fds(void *arg, int ok)
{
	int *out = arg, n = 0;
	char path[300], link[64];
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	if (!ok || !d) {
		if (d)
			closedir(d);
		return;
	}
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		ssize_t k = readlink(path, link, sizeof(link) - 1);
		if (k > 0) {
			link[k] = 0;
			n += strcmp(link, "anon_inode:[perf_event]") == 0;
		}
	}
	closedir(d);
	*out = n;
}

int main(void)
{
	struct bench_counters c;
	int64_t a[BENCH_CNT_N], b[BENCH_CNT_N];

	bench_counters_open(&c);
	if (c.fd[BENCH_CNT_SYSCALLS] < 0) {
		printf("syscall counting unavailable: %s\n", c.why[BENCH_CNT_SYSCALLS]);
		return 77;
	}
	bench_counters_read(&c, a);
	for (int i = 0; i < 1000; i++)
		syscall(SYS_getppid);
	bench_counters_read(&c, b);
	int64_t d = b[BENCH_CNT_SYSCALLS] - a[BENCH_CNT_SYSCALLS];
	printf("1000 getppid: %lld syscalls counted\n", (long long)d);
	/* the first read() is counted, the second may be: allow a few */
	if (d < 1000 || d > 1010)
		FAIL("1000 getppid counted as %lld", (long long)d);

	int up[2], down[2];
	if (pipe(up) || pipe(down))
		FAIL("pipe");
	bench_counters_read(&c, a);
	pid_t pid = fork();
	if (pid < 0)
		FAIL("fork");
	if (pid == 0) {
		char x = 0;
		for (int i = 0; i < 5000; i++)
			syscall(SYS_getppid);
		if (write(up[1], &x, 1) != 1 || read(down[0], &x, 1) != 1)
			_exit(1);
		_exit(0);
	}
	char x;
	if (read(up[0], &x, 1) != 1)
		FAIL("child");
	bench_counters_read(&c, b);     /* child still alive, blocked in read */
	d = b[BENCH_CNT_SYSCALLS] - a[BENCH_CNT_SYSCALLS];
	printf("live child with 5000 getppid: %lld syscalls counted\n", (long long)d);
	if (write(down[1], &x, 1) != 1)
		FAIL("write");
	waitpid(pid, NULL, 0);
	if (d < 5000 || d > 5200)
		FAIL("a live child's 5000 syscalls counted as %lld", (long long)d);
	if (b[BENCH_CNT_TASKCLOCK] >= 0 && b[BENCH_CNT_TASKCLOCK] <= a[BENCH_CNT_TASKCLOCK])
		FAIL("task-clock did not advance");
	bench_counters_close(&c);

	/* The figure bench reports: psync reads are one pread per I/O, so a job's
	 * syscalls per I/O is about 1 (a few more for the job's own setup). */
	struct bench_job job;
	static struct bench_result r;
	char err[200];
	bench_job_defaults(&job);
	if (bench_parse_engine("psync", &job, err, sizeof(err)) < 0)
		FAIL("%s", err);
	job.size = 4u << 20;
	job.random = 1;
	job.rw = BENCH_RW_READ;
	job.repeat = 1;
	if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK)
		FAIL("psync job: status %d: %s", r.status, r.reason);
	double per = (double)r.sc_calls / (double)r.sc_ios;
	printf("psync 4k random reads: %lld syscalls for %llu I/Os (%.3f/IO), pass %d\n",
	       (long long)r.sc_calls, (unsigned long long)r.sc_ios, per, r.sc_pass);
	if (r.med.ios != 1024 || r.sc_ios != 1024 || per < 0.99 || per > 1.5 || !r.sc_pass)
		FAIL("psync job: %.3f syscalls per I/O over %llu I/Os (pass %d), expected about 1",
		     per, (unsigned long long)r.sc_ios, r.sc_pass);
	/* by default they are counted in an untimed pass: the timed runs go without
	 * the counter (it makes every system call dearer) */
	if (r.med.syscalls != -1 || r.runs[0].syscalls != -1)
		FAIL("the timed run was counted too: %lld syscalls", (long long)r.runs[0].syscalls);
	struct bench_hooks hk = { .ready = count_perf_fds, .arg = &perf_fds_pass };
	if (bench_run_job_ex(&job, &r, &hk) < 0 || r.status != BENCH_OK)
		FAIL("psync job with hooks: status %d: %s", r.status, r.reason);

	/* BENCH_SC_TIMED (the sweep's T1, whose figures are counts): in the timed run */
	job.syscount = BENCH_SC_TIMED;
	if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK)
		FAIL("psync job, counted while timed: status %d: %s", r.status, r.reason);
	per = (double)r.sc_calls / (double)r.sc_ios;
	if (r.sc_pass || r.sc_calls != r.med.syscalls || r.sc_ios != 1024 || per < 0.99 || per > 1.5)
		FAIL("counted while timed: %lld syscalls over %llu I/Os (pass %d, median run %lld)",
		     (long long)r.sc_calls, (unsigned long long)r.sc_ios, r.sc_pass,
		     (long long)r.med.syscalls);

	/* --no-syscount: not counted (n/a with its reason), the rest as ever */
	job.syscount = 0;
	if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK)
		FAIL("psync job without syscount: status %d: %s", r.status, r.reason);
	if (r.med.syscalls != -1 || r.sc_calls != -1 || r.med.ios != 1024 ||
	    !strstr(r.cnt_why[BENCH_CNT_SYSCALLS], "--no-syscount"))
		FAIL("--no-syscount: syscalls %lld over %llu I/Os (%s)", (long long)r.sc_calls,
		     (unsigned long long)r.med.ios, r.cnt_why[BENCH_CNT_SYSCALLS]);
	/* when the timed runs start, as many perf events are open with the
	 * counted pass as without counting: the syscall counter is closed */
	hk.arg = &perf_fds_off;
	if (bench_run_job_ex(&job, &r, &hk) < 0 || r.status != BENCH_OK)
		FAIL("psync job with hooks: status %d: %s", r.status, r.reason);
	printf("perf events open as the timed runs start: %d after a counted pass, %d not counting\n",
	       perf_fds_pass, perf_fds_off);
	if (perf_fds_off < 0 || perf_fds_pass != perf_fds_off)
		FAIL("the syscall counter stays open for the timed runs (%d perf events, %d without)",
		     perf_fds_pass, perf_fds_off);

	/* and as the bench program prints it ("syscalls: N (X/IO)") */
	const char *bin = getenv("UR_BIN");
	if (!bin)
		FAIL("UR_BIN is not set (run through tests/run.sh)");
	char cmd[4096], line[512];
	snprintf(cmd, sizeof(cmd), "'%s/bench' run --engine psync --pattern rand --size 4m "
		 "--repeat 1 2>&1", bin);
	FILE *p = popen(cmd, "r");
	double shown = -1;
	while (p && fgets(line, sizeof(line), p)) {
		fputs(line, stdout);
		char *q = strstr(line, "syscalls: ");
		long long n;
		if (q && sscanf(q, "syscalls: %lld (%lf/IO)", &n, &shown) != 2)
			shown = -2;
		if (q && !strstr(q, "in an untimed pass of 1024 I/Os"))
			shown = -3;
	}
	int rc = p ? pclose(p) : -1;
	if (rc != 0 || shown < 0.99 || shown > 1.5)
		FAIL("bench run psync: exit status %d, syscalls/IO shown %.3f, expected about 1", rc,
		     shown);
	printf("PASS\n");
	return 0;
}
