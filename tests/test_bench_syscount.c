/* Description: bench's syscall counter (perf_event_open on the
 * raw_syscalls:sys_enter tracepoint, inherited) counts 1000 getppid calls
 * as about 1000, and counts a live child's syscalls before it exits (as it
 * must for the ur server); and the figure bench reports for a job (psync
 * reads: about 1 syscall per I/O), from the library and as the bench program
 * prints it; with --no-syscount (job.syscount 0) nothing is counted: n/a. Skips when the kernel refuses perf events.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/bench/bench.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

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
	double per = (double)r.med.syscalls / (double)r.med.ios;
	printf("psync 4k random reads: %lld syscalls for %llu I/Os (%.3f/IO)\n",
	       (long long)r.med.syscalls, (unsigned long long)r.med.ios, per);
	if (r.med.ios != 1024 || per < 0.99 || per > 1.5)
		FAIL("psync job: %.3f syscalls per I/O over %llu I/Os, expected about 1", per,
		     (unsigned long long)r.med.ios);

	/* --no-syscount: not counted (n/a with its reason), the rest as ever */
	job.syscount = 0;
	if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK)
		FAIL("psync job without syscount: status %d: %s", r.status, r.reason);
	if (r.med.syscalls != -1 || r.med.ios != 1024 || !strstr(r.cnt_why[BENCH_CNT_SYSCALLS], "--no-syscount"))
		FAIL("--no-syscount: syscalls %lld over %llu I/Os (%s)", (long long)r.med.syscalls,
		     (unsigned long long)r.med.ios, r.cnt_why[BENCH_CNT_SYSCALLS]);

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
	}
	int rc = p ? pclose(p) : -1;
	if (rc != 0 || shown < 0.99 || shown > 1.5)
		FAIL("bench run psync: exit status %d, syscalls/IO shown %.3f, expected about 1", rc,
		     shown);
	printf("PASS\n");
	return 0;
}
