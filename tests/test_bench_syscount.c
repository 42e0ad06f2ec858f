/* Description: bench's syscall counter (perf_event_open on the
 * raw_syscalls:sys_enter tracepoint, inherited) counts 1000 getppid calls
 * as about 1000, and counts a live child's syscalls before it exits (as it
 * must for the ur server). Skips when the kernel refuses perf events.
 */
#include <stdio.h>
#include <stdlib.h>
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
	printf("PASS\n");
	return 0;
}
