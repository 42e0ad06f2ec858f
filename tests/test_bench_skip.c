/* SPDX-License-Identifier: MIT */
/* Description: an engine that cannot run here is reported as skipped with
 * its reason, never crashed on: io_uring blocked by a seccomp filter (as in
 * Docker), a NOP job on an engine without NOP, a missing directory, the ur
 * engine without its server; and the
 * bench program itself prints "skipped: <reason>" and exits 0 for them; its
 * --help names exactly the engines that run NOP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/bench/bench.h"
#include "../src/common/noring.h"
#include "parts.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static void expect_skip(struct bench_job *job, const char *what, const char *needle)
{
	static struct bench_result r;
	if (bench_run_job(job, &r) < 0 || r.status != BENCH_SKIPPED)
		FAIL("%s: status %d, expected skipped (%s)", what, r.status, r.reason);
	if (!strstr(r.reason, needle))
		FAIL("%s: reason '%s' lacks '%s'", what, r.reason, needle);
	printf("%s: skipped: %s\n", what, r.reason);
}

int main(void)
{
	struct bench_job job;
	char err[200];

	bench_job_defaults(&job);
	job.size = 1u << 20;
	job.repeat = 1;
	job.ops = &bench_eng_libaio;
	job.rw = BENCH_RW_NOP;
	expect_skip(&job, "libaio nop", "no NOP");

	bench_job_defaults(&job);
	job.size = 1u << 20;
	job.repeat = 1;
	snprintf(job.dir, sizeof(job.dir), "no/such/dir");
	expect_skip(&job, "psync in a missing directory", "No such file or directory");

	/* the engine's server cannot be found */
	const char *srv = getenv("UR_SERVER");
	char saved[4096] = "";
	if (srv)
		snprintf(saved, sizeof(saved), "%s", srv);
	setenv("UR_SERVER", "/nonexistent/simplefs_server", 1);
	bench_job_defaults(&job);
	job.size = 1u << 20;
	job.repeat = 1;
	job.qd = 8;
	if (bench_parse_engine("ur", &job, err, sizeof(err)) < 0)
		FAIL("%s", err);
	expect_skip(&job, "ur without its server", "not found");
	if (saved[0])
		setenv("UR_SERVER", saved, 1);
	else
		unsetenv("UR_SERVER");

	if (bench_parse_engine("nonesuch", &job, err, sizeof(err)) != -EINVAL)
		FAIL("unknown engine accepted");
	if (bench_parse_engine("io_uring:bogus", &job, err, sizeof(err)) != -EINVAL)
		FAIL("unknown engine option accepted");

	/* io_uring refused by the kernel, in a child so the filter stays there */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (noring_block(EPERM) < 0) {
			printf("cannot install a seccomp filter\n");
			_exit(77);
		}
		bench_job_defaults(&job);
		job.size = 1u << 20;
		job.repeat = 1;
		job.qd = 8;
		job.ops = &bench_eng_io_uring;
		expect_skip(&job, "io_uring under seccomp", "io_uring blocked");
		/* the same job on psync still runs in that process */
		static struct bench_result r;
		job.ops = &bench_eng_psync;
		if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK)
			FAIL("psync beside a blocked io_uring: %s", r.reason);
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		FAIL("seccomp child crashed");
	if (WEXITSTATUS(st) == 77)
		tu_part_skip("seccomp", "io_uring blocked by a filter", "cannot install a seccomp filter");
	else if (WEXITSTATUS(st) != 0)
		FAIL("seccomp child failed");

	/* the program: skipped engines are reported and the run succeeds */
	const char *bin = getenv("UR_BIN");
	if (bin) {
		char cmd[4096];
		snprintf(cmd, sizeof(cmd), "'%s/bench' run --engine libaio,posixaio --rw nop --repeat 1 "
			 "--size 1m 2>&1", bin);
		FILE *p = popen(cmd, "r");
		char line[512];
		int skipped = 0;
		while (p && fgets(line, sizeof(line), p)) {
			fputs(line, stdout);
			skipped += strstr(line, "skipped: libaio has no NOP") != NULL ||
				   strstr(line, "skipped: posixaio has no NOP") != NULL;
		}
		int rc = p ? pclose(p) : -1;
		if (skipped != 2 || rc != 0)
			FAIL("bench run: %d skipped lines, exit status %d", skipped, rc);

		/* --help names exactly the engines that run NOP (the others skip it) */
		snprintf(cmd, sizeof(cmd), "'%s/bench' --help 2>&1", bin);
		p = popen(cmd, "r");
		char help[512] = "";
		while (p && fgets(line, sizeof(line), p))
			if (strstr(line, "--rw") && strstr(line, "nop:"))
				snprintf(help, sizeof(help), "%s", strstr(line, "nop:"));
		if (!p || pclose(p) != 0 || !help[0])
			FAIL("bench --help says nothing of nop");
		for (size_t i = 0; bench_engines[i]; i++) {   /* every engine bench has */
			const char *name = bench_engines[i]->name;
			bench_job_defaults(&job);
			if (bench_parse_engine(name, &job, err, sizeof(err)) < 0)
				FAIL("%s", err);
			char word[32];
			int named = 0;
			for (const char *w = help; *w; ) {
				size_t n = strcspn(w, " ,():\n");
				snprintf(word, sizeof(word), "%.*s", (int)n, w);
				named |= n && !strcmp(word, name);
				w += n ? n : 1;
			}
			if (named != !!(job.ops->flags & BENCH_ENG_NOP))
				FAIL("bench --help (%s) %s %s, which %s NOP", help, named ? "names" : "omits",
				     name, job.ops->flags & BENCH_ENG_NOP ? "runs" : "does not run");
		}
	}
	printf("PASS\n");
	return 0;
}
