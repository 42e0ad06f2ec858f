/* SPDX-License-Identifier: MIT */
/*
 * cond.c - the machine's conditions around a benchmark: the 1-minute load
 * average, and the CPU time everything else used, measured as the machine's
 * busy time (/proc/stat: user + nice + system over all CPUs) minus bench's
 * own (getrusage of bench and its reaped children, the ur server among them).
 * The rule that calls a machine busy (report.c writes the figures as JSON).
 * Must never guess: a figure it cannot read is -1 and reported so, and the
 * rule never calls a machine quiet on a figure it could not read.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int bench_cpu_sample(struct bench_cpu_sample *s)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	struct rusage self, kids;
	memset(s, 0, sizeof(*s));
	s->t = (double)bench_now_ns() / 1e9;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	s->self = tv_s(self.ru_utime) + tv_s(self.ru_stime) + tv_s(kids.ru_utime) +
		  tv_s(kids.ru_stime);
	FILE *f = fopen("/proc/stat", "r");
	if (!f)
		return -errno;
	/* cpu  user nice system idle iowait irq softirq steal (guest is inside user) */
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		       &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8 || hz <= 0)
		return -EIO;
	s->busy = (double)(v[0] + v[1] + v[2]) / (double)hz;
	s->steal = (double)v[7] / (double)hz;
	return 0;
}

double bench_other_cpu(const struct bench_cpu_sample *a, const struct bench_cpu_sample *b,
		       long ncpu, double *steal_pct)
{
	double cap = (b->t - a->t) * (double)(ncpu > 0 ? ncpu : 1);
	if (steal_pct)
		*steal_pct = cap > 0 ? 100.0 * (b->steal - a->steal) / cap : 0;
	if (cap <= 0)
		return 0;
	double other = (b->busy - a->busy) - (b->self - a->self);
	return other > 0 ? 100.0 * other / cap : 0.0;
}

double bench_load1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* Busy when the load average before the run, or the CPU share of others
 * before or during it, reaches its threshold; an unreadable figure is busy. */
int bench_cond_judge(struct bench_cond *c)
{
	size_t o = 0;
	c->busy = 0;
	c->why[0] = 0;
#define WHY(...) do { \
		if (o < sizeof(c->why)) \
			o += (size_t)snprintf(c->why + o, sizeof(c->why) - o, "%s", o ? "; " : ""); \
		if (o < sizeof(c->why)) \
			o += (size_t)snprintf(c->why + o, sizeof(c->why) - o, __VA_ARGS__); \
		c->busy = 1; } while (0)
	if (c->load_before < 0)
		WHY("the load average could not be read");
	else if (c->load_before >= c->busy_load)
		WHY("load average %.2f before the run (busy at %.2f or more)", c->load_before,
		    c->busy_load);
	if (c->other_before < 0)
		WHY("the CPU use of other processes could not be read");
	else if (c->other_before >= c->busy_cpu)
		WHY("other processes used %.1f%% of the %ld CPUs in a %.1f s idle sample before "
		    "the run (busy at %.1f%% or more)", c->other_before, c->ncpu, c->idle_window,
		    c->busy_cpu);
	if (c->measured_during && c->other_during >= c->busy_cpu)
		WHY("other processes used %.1f%% of the %ld CPUs during the run (busy at %.1f%% or "
		    "more)", c->other_during, c->ncpu, c->busy_cpu);
#undef WHY
	return c->busy;
}
