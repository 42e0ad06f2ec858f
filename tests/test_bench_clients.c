/* SPDX-License-Identifier: MIT */
/* Description: bench's interval mode and clients knob. Interval:
 * a paced job issues one I/O per interval and no more (a 20 ms interval over
 * 0.25 s gives 2..13 I/Os, never a burst), and a ur job reports its server's
 * CPU. Clients: two psync processes on one host file give an aggregate whose
 * IOPS is the sum of the clients' and a p99 for each client; the sfs engine
 * refuses a second client; ur read and write clients each get a ring on the
 * image's one server; when another process holds that server exclusively
 * the job fails with the "in use by pid" message, never a skip or figures. The
 * program prints the aggregate and fairness lines and rejects bad values
 * (--clients 0, 65, x; --interval without a unit or 0; --clients with sfs;
 * either outside 'bench run') with exit status 2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testutil.h"
#include "parts.h"
#include "ur_fs.h"
#include "../src/bench/bench.h"

static struct bench_result r;

static void job_of(struct bench_job *job, const char *engine, int rw, double time_s,
		   unsigned nclients)
{
	char err[200];
	bench_job_defaults(job);
	if (bench_parse_engine(engine, job, err, sizeof(err)) < 0)
		FAIL("%s", err);
	job->size = 2u << 20;
	job->rw = rw;
	job->repeat = 1;
	job->time_s = time_s;
	job->clients = nclients;
}

static void interval(void)
{
	struct bench_job job;
	job_of(&job, "null", BENCH_RW_NOP, 0.25, 1);
	job.interval_ns = 20000000;
	job.qd = 4;
	CHECK_EQ(bench_run_job(&job, &r), 0);
	CHECK_EQ(r.status, BENCH_OK);
	printf("null nop every 20 ms for 0.25 s: %llu I/Os\n", (unsigned long long)r.med.ios);
	CHECK(r.med.ios >= 2 && r.med.ios <= 13);
	CHECK(strstr(r.note, "one I/O in flight"));
	CHECK(r.med.server_cpu < 0);        /* no server: n/a, not 0 */

	job_of(&job, "ur", BENCH_RW_NOP, 0.3, 1);
	job.interval_ns = 5000000;
	CHECK_EQ(bench_run_job(&job, &r), 0);
	if (r.status != BENCH_OK)
		FAIL("ur nop: %s", r.reason);
	printf("ur nop every 5 ms for 0.3 s: %llu I/Os, server CPU %.3f s (%.1f%%)\n",
	       (unsigned long long)r.med.ios, r.med.server_cpu, r.med.server_cpu * 100 / r.med.secs);
	CHECK(r.med.ios >= 2 && r.med.ios <= 61);
	CHECK(r.med.server_cpu >= 0);
	CHECK(r.server_pid > 0);
}

static void clients(void)
{
	struct bench_job job;
	job_of(&job, "psync", BENCH_RW_READ, 0.3, 2);
	job.random = 1;
	CHECK_EQ(bench_run_clients(&job, &r), 0);
	if (r.status != BENCH_OK)
		FAIL("psync, 2 clients: %s", r.reason);
	CHECK_EQ(r.nclients, 2);
	CHECK_EQ(r.job.clients, 2);
	printf("psync, 2 clients: %.0f IOPS = %.0f + %.0f; p99 %.2f / %.2f us, fairness %.2f\n",
	       r.med.iops, r.client_iops[0], r.client_iops[1], r.client_p99[0], r.client_p99[1],
	       bench_fairness(&r));
	CHECK(r.client_iops[0] > 0 && r.client_iops[1] > 0);
	CHECK(fabs(r.med.iops - r.client_iops[0] - r.client_iops[1]) <= 1e-6 * r.med.iops);
	CHECK(r.client_p99[0] > 0 && r.client_p99[1] > 0);
	CHECK(bench_fairness(&r) >= 1.0);
	CHECK(r.med.ios > 0 && r.lat_p99 > 0);
	/* JSON: the job's client count and the per-client figures, one key each */
	CHECK_EQ(bench_write_json("clients.json", &r, 1, ".", "test"), 0);
	char *js = tu_slurp("clients.json");
	CHECK(js);
	CHECK(strstr(js, "\"clients\": 2,") && strstr(js, "\"per_client\": {\"p99_us\": ["));
	CHECK(strstr(js, "\"p99_max_over_min\": "));
	CHECK(strstr(strstr(js, "\"clients\": ") + 1, "\"clients\": ") == NULL);
	free(js);

	job_of(&job, "sfs", BENCH_RW_READ, 0, 2);
	CHECK_EQ(bench_run_clients(&job, &r), -1);
	CHECK_EQ(r.status, BENCH_FAILED);
	CHECK(strstr(r.reason, "sfs engine"));
	CHECK(bench_clients_refused(&job, 1) == NULL);
	job_of(&job, "psync", BENCH_RW_READ, 0, 1);
	CHECK(bench_clients_refused(&job, BENCH_MAX_CLIENTS + 1) != NULL);

	/* ur reads: each client its own ring on the one image, all served by
	 * one server (read-only servers starting at once end as one: the later
	 * ones send their clients to the first, docs/ABI.md) */
	job_of(&job, "ur", BENCH_RW_READ, 0.3, 3);
	CHECK_EQ(bench_run_clients(&job, &r), 0);
	if (r.status != BENCH_OK)
		FAIL("ur read, 3 clients: %s", r.reason);
	CHECK_EQ(r.nclients, 3);
	CHECK(r.client_iops[0] > 0 && r.client_iops[1] > 0 && r.client_iops[2] > 0);
	printf("ur read, 3 clients: %u server(s)\n", r.nservers);
	CHECK_EQ(r.nservers, 1);
	CHECK(r.server_pid > 0);

	/* ur writes: two clients share the image's server */
	job_of(&job, "ur", BENCH_RW_WRITE, 0.3, 2);
	CHECK_EQ(bench_run_clients(&job, &r), 0);
	if (r.status != BENCH_OK)
		FAIL("ur write, 2 clients: %s", r.reason);
	CHECK_EQ(r.nclients, 2);

	/* an image whose server serves another process exclusively: an error
	 * naming the holder, never a skip or figures */
	char img[PATH_MAX];
	bench_image_path(&job, img, sizeof(img));
	struct urfs_ring excl;
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = img;
	p.flags = URFS_SETUP_EXCL;
	int e = urfs_queue_init_params(4, &excl, &p);
	if (e < 0)
		FAIL("exclusive ring on %s: %s (%s)", img, strerror(-e), p.errmsg);
	job_of(&job, "ur", BENCH_RW_READ, 0.3, 2);
	e = bench_run_clients(&job, &r);
	printf("ur read, 2 clients, image held exclusively: %s\n", r.reason);
	CHECK_EQ(e, -1);
	CHECK_EQ(r.status, BENCH_FAILED);
	CHECK(strstr(r.reason, "in use by pid"));
	CHECK_EQ(r.nclients, 0);
	urfs_queue_exit(&excl);
}

/* Run bench with args; its exit status, and whether its output holds want. */
static int bench(const char *args, const char *want, int *found)
{
	const char *bin = getenv("UR_BIN");
	char cmd[4096], line[1024];
	snprintf(cmd, sizeof(cmd), "'%s/bench' %s 2>&1", bin, args);
	FILE *p = popen(cmd, "r");
	CHECK(p);
	*found = 0;
	while (fgets(line, sizeof(line), p)) {
		fputs(line, stdout);
		*found |= want && strstr(line, want) != NULL;
	}
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void program(void)
{
	int f;
	if (!getenv("UR_BIN")) {
		tu_part_skip("UR_BIN", "the bench program", "UR_BIN is not set (run under tests/run.sh)");
		return;
	}
	CHECK_EQ(bench("run --engine psync --clients 2 --time 0.2 --repeat 1 --size 1m",
		       "clients: 2, aggregate IOPS=", &f), 0);
	CHECK(f);
	CHECK_EQ(bench("run --engine psync --clients 2 --time 0.2 --repeat 1 --size 1m",
		       "fairness: max/min client p99 = ", &f), 0);
	CHECK(f);
	CHECK_EQ(bench("run --engine ur --rw nop --interval 10ms --time 0.2 --repeat 1",
		       "% of one CPU", &f), 0);
	CHECK(f);
	/* a bad value is refused, and the message says what the option takes */
	static const struct { const char *arg, *says; } bad[] = {
		{ "--clients 0", "'0' (up to 16 client counts, comma-separated, 1 .. 64)" },
		{ "--clients 65", "'65' (up to 16 client counts" },
		{ "--clients x", "'x' (up to 16 client counts" },
		{ "--clients 1,0", "'1,0' (up to 16 client counts" },
		{ "--interval 2", "'2' (up to 16 times with a unit (ns, us, ms or s)" },
		{ "--interval 0ms", "'0ms' (up to 16 times with a unit" },
		{ "--interval 2parsecs", "'2parsecs' (up to 16 times" },
		{ "--interval ms", "'ms' (up to 16 times" },
		{ "--qd 100000", "'100000' (up to 16 queue depths, comma-separated, 1 .. 65535)" },
		{ "--repeat 33", "'33' (a count, 1 .. 32)" },
		{ "--mix-read 101", "'101' (a percentage of reads, 0 .. 100)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char a[256], says[256];
		snprintf(a, sizeof(a), "run --engine psync --size 1m %s", bad[i].arg);
		snprintf(says, sizeof(says), "bad value for %.*s: %s", (int)strcspn(bad[i].arg, " "),
			 bad[i].arg, bad[i].says);
		CHECK_EQ(bench(a, says, &f), 2);
		if (!f)
			FAIL("bench %s: the message lacks \"%s\"", a, says);
	}
	CHECK_EQ(bench("run --engine sfs --clients 2 --size 1m", "sfs engine", &f), 2);
	CHECK(f);
	CHECK_EQ(bench("--clients 2", "options of 'bench run'", &f), 2);
	CHECK(f);
	CHECK_EQ(bench("sweep --interval 2ms", "options of 'bench run'", &f), 2);
	CHECK(f);
}

int main(void)
{
	interval();
	clients();
	program();
	printf("ok\n");
	return 0;
}
