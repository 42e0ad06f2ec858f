/* SPDX-License-Identifier: MIT */
/* Description: bench's JSON and CSV carry every job, OK and skipped alike:
 * the JSON is well formed (balanced, no nan/inf, every job with its status,
 * reason and median figures), a skipped job has no figures but its reason,
 * and every CSV line has as many fields as the header.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/bench/bench.h"

#define FAIL(...) do { fprintf(stderr, "FAIL: " __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		FAIL("open %s", path);
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strdup(buf);
}

static int count(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Braces and brackets balance outside strings; strings close. */
static void well_formed(const char *s)
{
	int depth = 0, in = 0;
	for (const char *p = s; *p; p++) {
		if (in) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in = 0;
			else if ((unsigned char)*p < 0x20)
				FAIL("control character inside a JSON string");
			continue;
		}
		if (*p == '"')
			in = 1;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			if (--depth < 0)
				FAIL("unbalanced JSON");
	}
	if (depth || in)
		FAIL("JSON not closed (depth %d, in string %d)", depth, in);
}

int main(void)
{
	static struct bench_result r[3];
	struct bench_job job;

	bench_job_defaults(&job);
	job.size = 1u << 20;
	job.repeat = 3;
	job.ops = &bench_eng_psync;
	if (bench_run_job(&job, &r[0]) < 0 || r[0].status != BENCH_OK)
		FAIL("psync: %s", r[0].reason);
	job.ops = &bench_eng_null;
	job.rw = BENCH_RW_NOP;
	job.repeat = 1;
	if (bench_run_job(&job, &r[1]) < 0 || r[1].status != BENCH_OK)
		FAIL("null: %s", r[1].reason);
	job.ops = &bench_eng_libaio;     /* no NOP: skipped, with a quote in no field */
	if (bench_run_job(&job, &r[2]) < 0 || r[2].status != BENCH_SKIPPED)
		FAIL("libaio nop not skipped");
	snprintf(r[2].reason, sizeof(r[2].reason), "a \"quoted\", comma\\reason");

	if (bench_write_json("out.json", r, 3, ".", "bench \"test\"") < 0)
		FAIL("write json");
	if (bench_write_csv("out.csv", r, 3) < 0)
		FAIL("write csv");

	char *js = slurp("out.json");
	well_formed(js);
	if (strstr(js, "nan") || strstr(js, "inf"))
		FAIL("nan or inf in the JSON");
	if (count(js, "\"status\": \"ok\"") != 2 || count(js, "\"status\": \"skipped\"") != 1)
		FAIL("statuses wrong");
	if (count(js, "\"median\": {") != 2 || count(js, "\"runs\": [") != 2)
		FAIL("medians/runs: %d/%d", count(js, "\"median\": {"), count(js, "\"runs\": ["));
	if (!strstr(js, "a \\\"quoted\\\", comma\\\\reason"))
		FAIL("reason not escaped");
	if (!strstr(js, "\"kernel\": \"Linux") || !strstr(js, "\"filesystem\": "))
		FAIL("setup missing");
	char want[64];
	snprintf(want, sizeof(want), "\"iops\": %.6g", r[0].med.iops);
	if (!strstr(js, want))
		FAIL("median IOPS %s not in the JSON", want);

	char *cs = slurp("out.csv");
	int fields0 = -1, lines = 0;
	for (char *line = strtok(cs, "\n"); line; line = strtok(NULL, "\n")) {
		int f = 1, in = 0;
		for (char *p = line; *p; p++) {
			if (*p == '"')
				in = !in;
			else if (*p == ',' && !in)
				f++;
		}
		if (fields0 < 0)
			fields0 = f;
		else if (f != fields0)
			FAIL("CSV line %d has %d fields, header %d: %s", lines, f, fields0, line);
		lines++;
	}
	if (lines != 4)
		FAIL("CSV has %d lines", lines);
	free(js);
	free(cs);
	printf("PASS\n");
	return 0;
}
