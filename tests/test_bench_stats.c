/* SPDX-License-Identifier: MIT */
/* Description: bench's statistics are right on known data: median of odd
 * and even counts, interpolated percentiles, min/max, IQR; the latency
 * histogram's buckets stay within 1.6% and its percentiles and mean match
 * exact values; a job's reported median is the median of its repeats; a
 * table cell's spread (max - min) / median is flagged above 25% and not at or
 * below it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../src/bench/bench.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)
#define NEAR(a, b, tol) (fabs((double)(a) - (double)(b)) <= (tol))

int main(void)
{
	double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 }, one[] = { 7 };
	if (bench_median(odd, 3) != 3 || bench_median(even, 4) != 2.5 || bench_median(one, 1) != 7)
		FAIL("median");
	double ten[] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	if (!NEAR(bench_percentile(ten, 10, 90), 9.1, 1e-9) ||
	    !NEAR(bench_percentile(ten, 10, 0), 1, 1e-9) ||
	    !NEAR(bench_percentile(ten, 10, 100), 10, 1e-9))
		FAIL("percentile: %f", bench_percentile(ten, 10, 90));
	double q1, q3, mn, mx;
	bench_iqr(ten, 10, &q1, &q3);
	bench_minmax(ten, 10, &mn, &mx);
	if (!NEAR(q1, 3.25, 1e-9) || !NEAR(q3, 7.75, 1e-9) || mn != 1 || mx != 10)
		FAIL("iqr %f %f minmax %f %f", q1, q3, mn, mx);
	if (ten[0] != 10)
		FAIL("percentile sorted the caller's array");

	/* a table cell: flagged when (max - min) / median exceeds 25% */
	struct bench_spread sp;
	double planted[] = { 100, 70, 104 };         /* (104 - 70) / 100 = 34% */
	bench_spread(planted, 3, &sp);
	if (sp.med != 100 || sp.min != 70 || sp.max != 104 || !NEAR(sp.rel, 0.34, 1e-12) ||
	    !sp.flagged || sp.n != 3)
		FAIL("planted 34%% spread: med %g min %g max %g rel %g flagged %d", sp.med, sp.min,
		     sp.max, sp.rel, sp.flagged);
	double edge[] = { 120, 100, 95 };            /* exactly 25%: not flagged */
	bench_spread(edge, 3, &sp);
	if (sp.flagged || !NEAR(sp.rel, 0.25, 1e-12))
		FAIL("a 25%% spread is flagged (rel %g)", sp.rel);
	double just[] = { 100, 74.9, 100 };          /* 25.1%, the median 100: flagged */
	bench_spread(just, 3, &sp);
	if (!sp.flagged)
		FAIL("a 25.1%% spread is not flagged (rel %g)", sp.rel);
	double tight[] = { 1000, 990, 1010, 1005 };  /* median 1002.5, 2%: not flagged */
	bench_spread(tight, 4, &sp);
	if (sp.flagged || sp.med != 1002.5)
		FAIL("a 2%% spread: flagged %d, median %g", sp.flagged, sp.med);
	double zero[] = { 0, 0, 3 };                 /* median 0 with a spread: flagged */
	bench_spread(zero, 3, &sp);
	if (!sp.flagged)
		FAIL("a spread around a zero median is not flagged");
	bench_spread(one, 1, &sp);
	if (sp.flagged || sp.med != 7 || sp.min != 7 || sp.max != 7)
		FAIL("one run");

	/* bucket resolution */
	uint64_t st = 1;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = bench_rand64(&st) >> (bench_rand64(&st) % 60);
		uint64_t m = bench_hist_value(bench_hist_index(v));
		if (v < 128 ? m != v : fabs((double)m - (double)v) / (double)v > 1.0 / 64)
			FAIL("bucket of %llu is represented by %llu", (unsigned long long)v,
			     (unsigned long long)m);
	}
	/* uniform 1..100000 ns */
	static struct bench_hist h;
	bench_hist_reset(&h);
	for (uint64_t v = 1; v <= 100000; v++)
		bench_hist_add(&h, v);
	if (h.n != 100000 || h.min != 1 || h.max != 100000 || !NEAR(bench_hist_mean(&h), 50000.5, 1e-6))
		FAIL("hist n/min/max/mean");
	struct { double p, want; } pc[] = { { 50, 50000 }, { 99, 99000 }, { 99.9, 99900 }, { 1, 1000 } };
	for (int i = 0; i < 4; i++) {
		uint64_t got = bench_hist_percentile(&h, pc[i].p);
		if (fabs((double)got - pc[i].want) / pc[i].want > 0.016)
			FAIL("p%g = %llu, want about %.0f", pc[i].p, (unsigned long long)got, pc[i].want);
	}
	if (bench_hist_percentile(&h, 100) != 100000)
		FAIL("p100 is not the max");
	/* two-valued data: 99 fast, 1 slow */
	bench_hist_reset(&h);
	for (int i = 0; i < 99; i++)
		bench_hist_add(&h, 1000);
	bench_hist_add(&h, 1000000);
	if (!NEAR(bench_hist_percentile(&h, 99), 1000, 16) ||
	    !NEAR(bench_hist_percentile(&h, 99.9), 1000000, 16000))
		FAIL("p99/p99.9 of 99 x 1us + 1 x 1ms");

	/* the median the harness reports is the median of its repeats */
	struct bench_job job;
	static struct bench_result r;
	bench_job_defaults(&job);
	job.ops = &bench_eng_psync;
	job.size = 1u << 20;
	job.repeat = 5;
	if (bench_run_job(&job, &r) < 0 || r.status != BENCH_OK || r.nruns != 5)
		FAIL("run: %s", r.reason);
	double v[5], w[5];
	for (int i = 0; i < 5; i++) {
		v[i] = r.runs[i].mibs;
		w[i] = r.runs[i].lat_p99;
	}
	bench_minmax(v, 5, &mn, &mx);
	if (r.med.mibs != bench_median(v, 5) || r.mibs_min != mn || r.mibs_max != mx ||
	    r.med.lat_p99 != bench_median(w, 5))
		FAIL("reported median/spread is not that of the repeats");
	int below = 0, above = 0;
	for (int i = 0; i < 5; i++) {
		below += v[i] < r.med.mibs;
		above += v[i] > r.med.mibs;
	}
	if (below > 2 || above > 2)
		FAIL("median is not in the middle");
	printf("PASS\n");
	return 0;
}
