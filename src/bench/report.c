/* SPDX-License-Identifier: MIT */
/*
 * report.c - bench's output: a fio-like text report per job, JSON with every
 * figure and the setup (kernel, CPU, file system, options, commit), and CSV.
 * Must never print a figure that was not measured: unavailable counters are
 * written as n/a (text), null (JSON) or empty (CSV), with the reason.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

const char *bench_rw_name(int rw)
{
	switch (rw) {
	case BENCH_RW_WRITE: return "write";
	case BENCH_RW_MIX:   return "mix";
	case BENCH_RW_NOP:   return "nop";
	default:             return "read";
	}
}

void bench_fmt_size(char *buf, size_t n, uint64_t v)
{
	if (v && v % (1ull << 30) == 0)
		snprintf(buf, n, "%lluG", (unsigned long long)(v >> 30));
	else if (v && v % (1ull << 20) == 0)
		snprintf(buf, n, "%lluM", (unsigned long long)(v >> 20));
	else if (v && v % 1024 == 0)
		snprintf(buf, n, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

int bench_parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (tolower((unsigned char)*end)) {
	case 0:   break;
	case 'k': v <<= 10; end++; break;
	case 'm': v <<= 20; end++; break;
	case 'g': v <<= 30; end++; break;
	case 't': v <<= 40; end++; break;
	default:  return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "2ms", "500us", "1s", "250000ns": a unit is required. */
int bench_parse_interval(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v > 0))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			double n = v * units[i].mul;
			if (n < 1 || n > 3600e9)
				return -EINVAL;
			*ns = (uint64_t)n;
			return 0;
		}
	return -EINVAL;
}

void bench_fmt_interval(char *buf, size_t n, uint64_t ns)
{
	if (ns % 1000000000u == 0)
		snprintf(buf, n, "%llus", (unsigned long long)(ns / 1000000000u));
	else if (ns % 1000000u == 0)
		snprintf(buf, n, "%llums", (unsigned long long)(ns / 1000000u));
	else if (ns % 1000u == 0)
		snprintf(buf, n, "%lluus", (unsigned long long)(ns / 1000u));
	else
		snprintf(buf, n, "%lluns", (unsigned long long)ns);
}

double bench_fairness(const struct bench_result *r)
{
	if (r->nclients < 2)
		return 0;
	double lo = r->client_p99[0], hi = lo;
	for (unsigned i = 1; i < r->nclients; i++) {
		if (r->client_p99[i] < lo)
			lo = r->client_p99[i];
		if (r->client_p99[i] > hi)
			hi = r->client_p99[i];
	}
	return lo > 0 ? hi / lo : 0;
}

static void fmt_count(char *buf, size_t n, double v)
{
	if (v >= 1e6)
		snprintf(buf, n, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else
		snprintf(buf, n, "%.0f", v);
}

static void per_io(char *buf, size_t n, int64_t v, uint64_t ios, const char *why)
{
	if (v < 0)
		snprintf(buf, n, "n/a (%s)", why[0] ? why : "unavailable");
	else
		snprintf(buf, n, "%lld (%.3f/IO)", (long long)v, ios ? (double)v / (double)ios : 0.0);
}

void bench_report_text(FILE *f, const struct bench_result *r)
{
	const struct bench_job *j = &r->job;
	char bs[16], sz[16];
	bench_fmt_size(bs, sizeof(bs), j->bs);
	bench_fmt_size(sz, sizeof(sz), j->size);
	fprintf(f, "%s: rw=%s%s%s bs=%s qd=%u size=%s direct=%d", j->label,
		j->rw == BENCH_RW_NOP ? "" : j->random ? "rand" : "seq", bench_rw_name(j->rw),
		j->rw == BENCH_RW_MIX ? "" : "", bs, j->qd, sz, j->direct);
	if (j->rw == BENCH_RW_MIX)
		fprintf(f, " mix-read=%u%%", j->mix_read);
	if (j->time_s > 0)
		fprintf(f, " time=%gs", j->time_s);
	if (j->batch)
		fprintf(f, " batch=%u", j->qd);
	if (j->interval_ns) {
		char iv[32];
		bench_fmt_interval(iv, sizeof(iv), j->interval_ns);
		fprintf(f, " interval=%s", iv);
	}
	if (j->clients > 1)
		fprintf(f, " clients=%u", j->clients);
	if (r->status == BENCH_SKIPPED) {
		fprintf(f, "\n  skipped: %s\n", r->reason);
		return;
	}
	if (r->status == BENCH_FAILED) {
		fprintf(f, "\n  FAILED: %s\n", r->reason);
		return;
	}
	const struct bench_run *m = &r->med;
	char iops[16], lo[16], hi[16];
	fmt_count(iops, sizeof(iops), m->iops);
	fmt_count(lo, sizeof(lo), r->iops_min);
	fmt_count(hi, sizeof(hi), r->iops_max);
	fprintf(f, " runs=%u%s\n", r->nruns, r->nruns > 1 ? " (median, min..max)" : "");
	fprintf(f, "  %s: IOPS=%s", bench_rw_name(j->rw), iops);
	if (r->nruns > 1)
		fprintf(f, " (%s..%s)", lo, hi);
	if (j->rw != BENCH_RW_NOP) {
		fprintf(f, ", BW=%.1fMiB/s", m->mibs);
		if (r->nruns > 1)
			fprintf(f, " (%.1f..%.1f)", r->mibs_min, r->mibs_max);
	}
	fprintf(f, ", %llu I/Os in %.3fs", (unsigned long long)m->ios, m->secs);
	if (j->rw == BENCH_RW_MIX)
		fprintf(f, " (%llu reads, %llu writes)", (unsigned long long)m->reads,
			(unsigned long long)m->writes);
	if (m->drained)
		fprintf(f, ", %llu drained at the deadline", (unsigned long long)m->drained);
	fprintf(f, "\n    clat (usec): mean=%.2f, p50=%.2f, p99=%.2f, p99.9=%.2f, min=%.2f, max=%.1f\n",
		r->lat_mean, r->lat_p50, r->lat_p99, r->lat_p999, r->lat_min, r->lat_max);
	double ios = m->ios ? (double)m->ios : 1.0;
	fprintf(f, "    cpu: user=%.3fs sys=%.3fs (%.2f us/IO)", m->cpu_user, m->cpu_sys,
		(m->cpu_user + m->cpu_sys) * 1e6 / ios);
	if (m->task_clock >= 0)
		fprintf(f, ", task-clock=%.3fs (%.2f us/IO)", m->task_clock, m->task_clock * 1e6 / ios);
	fprintf(f, "\n");
	if (m->server_cpu >= 0)
		fprintf(f, "    server cpu: %.3fs = %.1f%% of one CPU", m->server_cpu,
			m->secs > 0 ? m->server_cpu * 100 / m->secs : 0.0);
	if (m->server_cpu >= 0 && r->nclients > 1)
		fprintf(f, " (%u server%s for %u clients)", r->nservers, r->nservers == 1 ? "" : "s",
			r->nclients);
	if (m->server_cpu >= 0)
		fprintf(f, "\n");
	if (r->nclients > 1) {
		fprintf(f, "    clients: %u, aggregate IOPS=%s; per client (IOPS, p99 usec):", r->nclients,
			iops);
		for (unsigned i = 0; i < r->nclients; i++) {
			char ci[16];
			fmt_count(ci, sizeof(ci), r->client_iops[i]);
			fprintf(f, "%s %s %.2f", i ? "," : "", ci, r->client_p99[i]);
		}
		fprintf(f, "\n    fairness: max/min client p99 = %.2f\n", bench_fairness(r));
	}
	char a[200], b[200];
	per_io(a, sizeof(a), m->ctxsw, m->ios, r->cnt_why[BENCH_CNT_CTXSW]);
	per_io(b, sizeof(b), r->sc_calls, r->sc_ios, r->cnt_why[BENCH_CNT_SYSCALLS]);
	fprintf(f, "    ctx switches: %s, syscalls: %s", a, b);
	if (r->sc_pass && r->sc_calls >= 0)
		fprintf(f, " in an untimed pass of %llu I/Os", (unsigned long long)r->sc_ios);
	fprintf(f, "\n");
	if (r->note[0])
		fprintf(f, "    note: %s\n", r->note);
}

/* ---------------------------------------------------------------- setup */

static void read_line(const char *path, const char *key, char *out, size_t n)
{
	char line[512];
	FILE *f = fopen(path, "r");
	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, strlen(key)))
			continue;
		char *p = strchr(line, ':');
		if (!p)
			continue;
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		p[strcspn(p, "\n")] = 0;
		snprintf(out, n, "%s", p);
		break;
	}
	fclose(f);
}

/* File system type and mount point of dir, from /proc/self/mountinfo. */
static void fs_of(const char *dir, char *out, size_t n)
{
	struct stat st;
	char line[1024];
	snprintf(out, n, "unknown");
	if (stat(dir, &st) < 0)
		return;
	FILE *f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned ma, mi;
		char mnt[512], fstype[64], src[256];
		if (sscanf(line, "%*d %*d %u:%u %*s %511s", &ma, &mi, mnt) != 3)
			continue;
		if (makedev(ma, mi) != st.st_dev)
			continue;
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(dash + 3, "%63s %255s", fstype, src) != 2)
			continue;
		snprintf(out, n, "%s on %s (%s)", fstype, mnt, src);
	}
	fclose(f);
}

static void git_commit(char *out, size_t n)
{
	char exe[PATH_MAX], cmd[PATH_MAX + 64];
	out[0] = 0;
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return;
	exe[l] = 0;
	char *slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	snprintf(cmd, sizeof(cmd), "git -C '%s' describe --always --dirty 2>/dev/null", exe);
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	if (fgets(out, (int)n, p))
		out[strcspn(out, "\n")] = 0;
	else
		out[0] = 0;
	pclose(p);
}

struct setup {
	char kernel[256], cpu[256], fs[900], commit[64], when[64], load[64];
	long ncpu;
};

static void get_setup(struct setup *s, const char *dir)
{
	struct utsname u;
	memset(s, 0, sizeof(*s));
	if (uname(&u) == 0)
		snprintf(s->kernel, sizeof(s->kernel), "%s %s %s", u.sysname, u.release, u.machine);
	read_line("/proc/cpuinfo", "model name", s->cpu, sizeof(s->cpu));
	s->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	fs_of(dir, s->fs, sizeof(s->fs));
	git_commit(s->commit, sizeof(s->commit));
	FILE *lf = fopen("/proc/loadavg", "r");
	if (!lf || !fgets(s->load, sizeof(s->load), lf))
		snprintf(s->load, sizeof(s->load), "unknown");
	if (lf)
		fclose(lf);
	s->load[strcspn(s->load, "\n")] = 0;
	time_t t = time(NULL);
	strftime(s->when, sizeof(s->when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}

void bench_setup_info(FILE *f, const char *dir)
{
	struct setup s;
	get_setup(&s, dir);
	fprintf(f, "setup: %s, %s x %ld, %s: %s, commit %s, %s, load average %s\n", s.kernel,
		s.cpu, s.ncpu, dir, s.fs, s.commit[0] ? s.commit : "unknown", s.when, s.load);
	double load1 = atof(s.load);
	if (s.ncpu > 0 && load1 > 0.5 * (double)s.ncpu)
		fprintf(f, "warning: load average %.2f on %ld CPUs: other work is running, so these "
			"figures are noisy; compare ratios from one run\n", load1, s.ncpu);
}

int bench_progress_wanted(int asked)
{
	return asked || isatty(STDERR_FILENO);
}

/* ---------------------------------------------------------------- JSON */

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void jnum(FILE *f, const char *key, double v, int last)
{
	fprintf(f, "\"%s\": %.6g%s", key, v, last ? "" : ", ");
}

static void jcnt(FILE *f, const char *key, int64_t v, uint64_t ios)
{
	if (v < 0)
		fprintf(f, "\"%s\": null, \"%s_per_io\": null, ", key, key);
	else
		fprintf(f, "\"%s\": %lld, \"%s_per_io\": %.6g, ", key, (long long)v, key,
			ios ? (double)v / (double)ios : 0.0);
}

/* m's figures; its syscalls: sc over sc_ios (the result's, for the median) */
static void jrun(FILE *f, const struct bench_run *m, int64_t sc, uint64_t sc_ios)
{
	fprintf(f, "{");
	jnum(f, "secs", m->secs, 0);
	fprintf(f, "\"ios\": %llu, \"bytes\": %llu, \"reads\": %llu, \"writes\": %llu, "
		"\"drained\": %llu, ", (unsigned long long)m->ios, (unsigned long long)m->bytes,
		(unsigned long long)m->reads, (unsigned long long)m->writes,
		(unsigned long long)m->drained);
	jnum(f, "mibs", m->mibs, 0);
	jnum(f, "iops", m->iops, 0);
	jnum(f, "lat_mean_us", m->lat_mean, 0);
	jnum(f, "lat_p50_us", m->lat_p50, 0);
	jnum(f, "lat_p99_us", m->lat_p99, 0);
	jnum(f, "lat_p999_us", m->lat_p999, 0);
	jnum(f, "cpu_user_s", m->cpu_user, 0);
	jnum(f, "cpu_sys_s", m->cpu_sys, 0);
	jnum(f, "cpu_us_per_io", m->ios ? (m->cpu_user + m->cpu_sys) * 1e6 / (double)m->ios : 0, 0);
	if (m->task_clock >= 0)
		jnum(f, "task_clock_s", m->task_clock, 0);
	else
		fprintf(f, "\"task_clock_s\": null, ");
	jcnt(f, "ctxsw", m->ctxsw, m->ios);
	jcnt(f, "syscalls", sc, sc_ios);
	if (m->server_cpu >= 0) {
		jnum(f, "server_cpu_s", m->server_cpu, 0);
		jnum(f, "server_cpu_pct", m->secs > 0 ? m->server_cpu * 100 / m->secs : 0, 0);
	} else {
		fprintf(f, "\"server_cpu_s\": null, \"server_cpu_pct\": null, ");
	}
	fprintf(f, "\"end\": 0}");
}

/* A sweep's conditions (cond.c) as one JSON object. */
static void jcond(FILE *f, const struct bench_cond *c)
{
	fprintf(f, "{\"ncpu\": %ld, ", c->ncpu);
	jnum(f, "busy_load", c->busy_load, 0);
	jnum(f, "busy_cpu_pct", c->busy_cpu, 0);
	jnum(f, "idle_window_s", c->idle_window, 0);
	jnum(f, "load_before", c->load_before, 0);
	jnum(f, "load_max_during", c->load_max, 0);
	jnum(f, "load_after", c->load_after, 0);
	jnum(f, "other_cpu_before_pct", c->other_before, 0);
	if (c->measured_during) {
		jnum(f, "other_cpu_during_pct", c->other_during, 0);
		jnum(f, "steal_during_pct", c->steal_during, 0);
	} else {
		fprintf(f, "\"other_cpu_during_pct\": null, \"steal_during_pct\": null, ");
	}
	fprintf(f, "\"busy\": %s, \"forced\": %s, \"noisy\": %s, \"why\": ",
		c->busy ? "true" : "false", c->forced ? "true" : "false",
		c->busy && c->forced ? "true" : "false");
	jstr(f, c->why);
	fprintf(f, ", ");
	jnum(f, "estimate_s", c->est_secs, 0);
	jnum(f, "total_s", c->total_secs, 0);
	fprintf(f, "\"parts_s\": {");
	for (unsigned i = 0; i < c->nparts; i++) {
		if (i)
			fprintf(f, ", ");
		jnum(f, c->parts[i].name, c->parts[i].secs, 1);
	}
	fprintf(f, "}}");
}

int bench_write_json(const char *path, const struct bench_result *rs, size_t n, const char *dir,
		     const char *cmdline)
{
	return bench_write_json_cond(path, rs, n, dir, cmdline, NULL);
}

int bench_write_json_cond(const char *path, const struct bench_result *rs, size_t n,
			  const char *dir, const char *cmdline, const struct bench_cond *cond)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	struct setup s;
	get_setup(&s, dir);
	fprintf(f, "{\n  \"setup\": {\"kernel\": ");
	jstr(f, s.kernel);
	fprintf(f, ", \"cpu\": ");
	jstr(f, s.cpu);
	fprintf(f, ", \"ncpu\": %ld, \"dir\": ", s.ncpu);
	jstr(f, dir);
	fprintf(f, ", \"filesystem\": ");
	jstr(f, s.fs);
	fprintf(f, ", \"commit\": ");
	jstr(f, s.commit);
	fprintf(f, ", \"date\": ");
	jstr(f, s.when);
	fprintf(f, ", \"loadavg_when_written\": ");
	jstr(f, s.load);
	fprintf(f, ", \"command\": ");
	jstr(f, cmdline);
	if (cond) {
		fprintf(f, ",\n    \"conditions\": ");
		jcond(f, cond);
	}
	fprintf(f, "},\n  \"jobs\": [\n");
	for (size_t i = 0; i < n; i++) {
		const struct bench_result *r = &rs[i];
		const struct bench_job *j = &r->job;
		fprintf(f, "    {\"engine\": ");
		jstr(f, j->ops ? j->ops->name : j->label);
		fprintf(f, ", \"label\": ");
		jstr(f, j->label);
		fprintf(f, ", \"options\": {\"sqpoll\": %u, \"regfiles\": %u, \"fixedbufs\": %u, "
			"\"idle_us\": %d}, ", j->eo.sqpoll, j->eo.regfiles, j->eo.fixedbufs,
			j->eo.idle_us);
		fprintf(f, "\"rw\": \"%s\", \"pattern\": \"%s\", \"mix_read\": %u, \"bs\": %u, "
			"\"qd\": %u, \"size\": %llu, \"direct\": %d, \"time_s\": %g, \"bytes\": %llu, "
			"\"warmup_s\": %g, \"repeat\": %u, \"seed\": %llu, \"verify\": %d, \"batch\": %d, ",
			bench_rw_name(j->rw), j->random ? "random" : "sequential", j->mix_read, j->bs,
			j->qd, (unsigned long long)j->size, j->direct, j->time_s,
			(unsigned long long)j->bytes, j->warmup_s, j->repeat,
			(unsigned long long)j->seed, j->verify, j->batch);
		fprintf(f, "\"interval_us\": %g, \"clients\": %u, ", (double)j->interval_ns / 1e3,
			j->clients ? j->clients : 1);
		fprintf(f, "\"status\": \"%s\", \"reason\": ",
			r->status == BENCH_OK ? "ok" : r->status == BENCH_SKIPPED ? "skipped" : "failed");
		jstr(f, r->reason);
		fprintf(f, ", \"note\": ");
		jstr(f, r->note);
		fprintf(f, ", \"counters_na\": {\"syscalls\": ");
		jstr(f, r->cnt_why[BENCH_CNT_SYSCALLS]);
		fprintf(f, ", \"ctxsw\": ");
		jstr(f, r->cnt_why[BENCH_CNT_CTXSW]);
		fprintf(f, "}, \"fill_s\": %.3f", r->fill_secs);
		/* where the median's syscalls come from: an untimed pass of its own
		 * ("pass", with its I/Os), the timed runs ("timed") or nowhere */
		fprintf(f, ", \"syscalls_counted\": \"%s\"",
			r->sc_calls < 0 ? "no" : r->sc_pass ? "pass" : "timed");
		if (r->sc_pass && r->sc_calls >= 0)
			fprintf(f, ", \"syscalls_pass_ios\": %llu", (unsigned long long)r->sc_ios);
		if (r->status == BENCH_OK) {
			fprintf(f, ",\n     \"median\": ");
			jrun(f, &r->med, r->sc_calls, r->sc_ios);
			fprintf(f, ",\n     \"spread\": {\"mibs_min\": %.6g, \"mibs_max\": %.6g, "
				"\"iops_min\": %.6g, \"iops_max\": %.6g},\n     \"latency_all_runs_us\": {",
				r->mibs_min, r->mibs_max, r->iops_min, r->iops_max);
			jnum(f, "mean", r->lat_mean, 0);
			jnum(f, "p50", r->lat_p50, 0);
			jnum(f, "p99", r->lat_p99, 0);
			jnum(f, "p99.9", r->lat_p999, 0);
			jnum(f, "min", r->lat_min, 0);
			jnum(f, "max", r->lat_max, 1);
			if (r->nclients > 1) {
				fprintf(f, "},\n     \"per_client\": {\"p99_us\": [");
				for (unsigned k = 0; k < r->nclients; k++)
					fprintf(f, "%s%.6g", k ? ", " : "", r->client_p99[k]);
				fprintf(f, "], \"iops\": [");
				for (unsigned k = 0; k < r->nclients; k++)
					fprintf(f, "%s%.6g", k ? ", " : "", r->client_iops[k]);
				fprintf(f, "], \"p99_max_over_min\": %.6g, \"servers\": %u",
					bench_fairness(r), r->nservers);
			}
			fprintf(f, "},\n     \"runs\": [");
			for (unsigned k = 0; k < r->nruns; k++) {
				if (k)
					fprintf(f, ",\n       ");
				jrun(f, &r->runs[k], r->runs[k].syscalls, r->runs[k].ios);
			}
			fprintf(f, "]");
		}
		fprintf(f, "}%s\n", i + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	int e = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && !e)
		e = -errno;
	return e;
}

/* ---------------------------------------------------------------- CSV */

static void ccnt(FILE *f, int64_t v, uint64_t ios)
{
	if (v < 0)
		fprintf(f, ",,");
	else
		fprintf(f, ",%lld,%.6g", (long long)v, ios ? (double)v / (double)ios : 0.0);
}

int bench_write_csv(const char *path, const struct bench_result *rs, size_t n)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "label,engine,rw,pattern,mix_read,bs,qd,size,direct,time_s,status,runs,"
		"mibs,mibs_min,mibs_max,iops,iops_min,iops_max,lat_mean_us,lat_p50_us,lat_p99_us,"
		"lat_p999_us,cpu_user_s,cpu_sys_s,cpu_us_per_io,ctxsw,ctxsw_per_io,syscalls,"
		"syscalls_per_io,interval_us,clients,server_cpu_pct,p99_max_over_min,reason\n");
	for (size_t i = 0; i < n; i++) {
		const struct bench_result *r = &rs[i];
		const struct bench_job *j = &r->job;
		const struct bench_run *m = &r->med;
		fprintf(f, "%s,%s,%s,%s,%u,%u,%u,%llu,%d,%g,%s,%u", j->label, j->ops ? j->ops->name : j->label,
			bench_rw_name(j->rw), j->random ? "random" : "sequential", j->mix_read, j->bs,
			j->qd, (unsigned long long)j->size, j->direct, j->time_s,
			r->status == BENCH_OK ? "ok" : r->status == BENCH_SKIPPED ? "skipped" : "failed",
			r->nruns);
		if (r->status == BENCH_OK) {
			fprintf(f, ",%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g",
				m->mibs, r->mibs_min, r->mibs_max, m->iops, r->iops_min, r->iops_max,
				r->lat_mean, r->lat_p50, r->lat_p99, r->lat_p999, m->cpu_user, m->cpu_sys,
				m->ios ? (m->cpu_user + m->cpu_sys) * 1e6 / (double)m->ios : 0);
			ccnt(f, m->ctxsw, m->ios);
			ccnt(f, r->sc_calls, r->sc_ios);
		} else {
			fprintf(f, ",,,,,,,,,,,,,,,,,");
		}
		fprintf(f, ",%g,%u,", (double)j->interval_ns / 1e3, j->clients ? j->clients : 1);
		if (r->status == BENCH_OK && m->server_cpu >= 0 && m->secs > 0)
			fprintf(f, "%.4g", m->server_cpu * 100 / m->secs);
		fputc(',', f);
		if (r->status == BENCH_OK && r->nclients > 1)
			fprintf(f, "%.4g", bench_fairness(r));
		fputc(',', f);
		fputc('"', f);
		for (const char *p = r->reason; *p; p++) {
			if (*p == '"')
				fputc('"', f);
			fputc(*p, f);
		}
		fputc('"', f);
		fputc('\n', f);
	}
	int e = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && !e)
		e = -errno;
	return e;
}
