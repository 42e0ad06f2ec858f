/* SPDX-License-Identifier: MIT */
/*
 * stats.c - latency histogram (log-linear buckets, constant memory, no
 * allocation when adding) and the small-array statistics used for repeats:
 * median, percentiles, min/max, interquartile range, and the spread of a
 * table cell (median, min..max, flagged above 25%).
 * Must never allocate in bench_hist_add (it runs inside the timed region).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_hist_reset(struct bench_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/* Values below 128 have a bucket each; above, each power of two is split
 * into 64 buckets (the 7 top bits of the value), so a bucket is < 1.6% wide. */
unsigned bench_hist_index(uint64_t v)
{
	if (v < BENCH_HIST_EXACT)
		return (unsigned)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);      /* >= 7 */
	unsigned shift = msb - 6u;
	unsigned top = (unsigned)(v >> shift);                 /* [64, 128) */
	return BENCH_HIST_EXACT + (msb - 7u) * BENCH_HIST_SUB + (top - 64u);
}

uint64_t bench_hist_value(unsigned idx)
{
	if (idx < BENCH_HIST_EXACT)
		return idx;
	unsigned k = idx - BENCH_HIST_EXACT;
	unsigned msb = k / BENCH_HIST_SUB + 7u;
	unsigned shift = msb - 6u;
	uint64_t lo = (uint64_t)(64u + k % BENCH_HIST_SUB) << shift;
	return lo + ((1ull << shift) >> 1);
}

void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src)
{
	dst->n += src->n;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	for (unsigned i = 0; i < BENCH_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
}

double bench_hist_mean(const struct bench_hist *h)
{
	return h->n ? (double)h->sum / (double)h->n : 0.0;
}

/* The value below which p percent of the samples fall (nearest rank), as the
 * middle of its bucket, clamped to the exact min and max. */
uint64_t bench_hist_percentile(const struct bench_hist *h, double p)
{
	if (!h->n)
		return 0;
	uint64_t rank = (uint64_t)((p / 100.0) * (double)h->n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank >= h->n)
		return h->max;
	uint64_t seen = 0;
	for (unsigned i = 0; i < BENCH_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t v = bench_hist_value(i);
			if (v < h->min)
				v = h->min;
			if (v > h->max)
				v = h->max;
			return v;
		}
	}
	return h->max;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Percentile with linear interpolation between closest ranks (the method of
 * numpy's default and of Excel's PERCENTILE.INC). n <= BENCH_MAX_REPEAT*8. */
double bench_percentile(const double *v, size_t n, double p)
{
	double s[BENCH_MAX_REPEAT * 8];
	if (n == 0)
		return 0.0;
	if (n > sizeof(s) / sizeof(s[0]))
		n = sizeof(s) / sizeof(s[0]);
	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	double pos = (p / 100.0) * (double)(n - 1);
	size_t lo = (size_t)pos;
	if (lo >= n - 1)
		return s[n - 1];
	double frac = pos - (double)lo;
	return s[lo] + (s[lo + 1] - s[lo]) * frac;
}

double bench_median(const double *v, size_t n)
{
	return bench_percentile(v, n, 50.0);
}

void bench_minmax(const double *v, size_t n, double *min, double *max)
{
	*min = n ? v[0] : 0.0;
	*max = n ? v[0] : 0.0;
	for (size_t i = 1; i < n; i++) {
		if (v[i] < *min)
			*min = v[i];
		if (v[i] > *max)
			*max = v[i];
	}
}

void bench_iqr(const double *v, size_t n, double *q1, double *q3)
{
	*q1 = bench_percentile(v, n, 25.0);
	*q3 = bench_percentile(v, n, 75.0);
}

/* A cell of a table: the median of n repeats with their min..max, flagged
 * when the spread (max - min) / median exceeds BENCH_SPREAD_MAX. A median of
 * 0 with any spread is flagged too (the ratio is unbounded). */
void bench_spread(const double *v, size_t n, struct bench_spread *s)
{
	s->n = (unsigned)n;
	s->med = bench_median(v, n);
	bench_minmax(v, n, &s->min, &s->max);
	double w = s->max - s->min;
	s->rel = s->med > 0 ? w / s->med : w > 0 ? INFINITY : 0.0;
	s->flagged = s->rel > BENCH_SPREAD_MAX;
}
