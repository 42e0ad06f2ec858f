/* SPDX-License-Identifier: MIT */
/*
 * clients.c - bench's clients knob: N processes run one job at once, each
 * with its own engine instance (its own ring, server, AIO context ...) on the
 * same host file or SimpleFS image. The file is prepared once, by the parent,
 * before the clients start; every client sets up (ur clients end on one
 * server: the first one's, docs/ABI.md), then waits at a start gate until
 * all are set up, so the timed runs overlap. The parent sums the
 * clients' figures and keeps each one's p99 (fairness = max/min p99).
 * Must never report an aggregate unless every client's job was OK (one
 * failed or skipped client fails or skips the whole job, with its reason),
 * and never leave a client process behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/* What one client hands back, in memory shared with the parent. */
struct client_out {
	struct bench_result r;
	struct bench_hist hist;
	int done;                 /* the client wrote r (and hist if OK) */
};

struct gate {
	int ready_w;              /* client -> parent: one byte when set up (or failed) */
	int go_r;                 /* parent -> client: EOF when every client is ready */
};

static void gate_ready(void *arg, int ok)
{
	const struct gate *g = arg;
	char c = ok ? 'r' : 'x';
	ssize_t w = write(g->ready_w, &c, 1);
	(void)w;                  /* a parent that is gone lets us run: nothing to wait for */
	close(g->ready_w);
	if (ok) {
		char b;
		while (read(g->go_r, &b, 1) < 0 && errno == EINTR)
			;
	}
	close(g->go_r);
}

const char *bench_clients_refused(const struct bench_job *job, unsigned n)
{
	if (n > BENCH_MAX_CLIENTS)
		return "too many clients (at most 64)";
	if (n > 1 && job->ops == &bench_eng_sfs)
		return "the sfs engine mounts the image inside the bench process: one process "
		       "at a time (--clients 1; the ur engine shares an image through its server)";
	return NULL;
}

/* A ur job refused because the image is in use (its server serves one
 * client exclusively, is read-only for a writer, or another tool holds the
 * image; the reason names the pid) is an error, not a skip. */
static int ur_in_use(const struct bench_job *job, const char *reason)
{
	return job->ops == &bench_eng_ur && strstr(reason, "in use") != NULL;
}

/* The whole job takes the status and reason of client i, which did not run. */
static void client_reason(struct bench_result *r, const struct bench_job *job, unsigned i,
			  unsigned n, const struct bench_result *c)
{
	r->status = ur_in_use(job, c->reason) ? BENCH_FAILED : c->status;
	snprintf(r->reason, sizeof(r->reason), "client %u of %u: %.180s", i + 1, n, c->reason);
}

/* Sum the clients' figures into r (runs k of every client added up). */
static void aggregate(struct bench_result *r, const struct client_out *o, unsigned n,
		      struct bench_hist *all)
{
	unsigned nruns = BENCH_MAX_REPEAT;
	for (unsigned i = 0; i < n; i++)
		if (o[i].r.nruns < nruns)
			nruns = o[i].r.nruns;
	bench_hist_reset(all);
	for (unsigned i = 0; i < n; i++) {
		bench_hist_merge(all, &o[i].hist);
		r->client_p99[i] = o[i].r.lat_p99;
		r->client_iops[i] = o[i].r.med.iops;
	}
	r->nclients = n;
	r->nservers = 0;
	for (unsigned i = 0; i < n; i++) {
		int dup = !o[i].r.server_pid;
		for (unsigned j = 0; j < i; j++)
			dup |= o[j].r.server_pid == o[i].r.server_pid;
		r->nservers += !dup;
	}
	r->nruns = nruns;
	for (unsigned k = 0; k < nruns; k++) {
		struct bench_run *a = &r->runs[k];
		memset(a, 0, sizeof(*a));
		int pids_seen = 0;
		for (unsigned i = 0; i < n; i++) {
			const struct bench_run *c = &o[i].r.runs[k];
			if (c->secs > a->secs)
				a->secs = c->secs;
			a->ios += c->ios;
			a->bytes += c->bytes;
			a->reads += c->reads;
			a->writes += c->writes;
			a->drained += c->drained;
			a->mibs += c->mibs;
			a->iops += c->iops;
			a->cpu_user += c->cpu_user;
			a->cpu_sys += c->cpu_sys;
			a->task_clock = (i && a->task_clock < 0) || c->task_clock < 0 ? -1 :
					a->task_clock + c->task_clock;
			a->ctxsw = (i && a->ctxsw < 0) || c->ctxsw < 0 ? -1 : a->ctxsw + c->ctxsw;
			a->syscalls = (i && a->syscalls < 0) || c->syscalls < 0 ? -1 :
				      a->syscalls + c->syscalls;
			/* A server shared by several clients counts once. */
			int dup = 0;
			for (unsigned j = 0; j < i; j++)
				dup |= o[j].r.server_pid == o[i].r.server_pid;
			if (c->server_cpu >= 0 && !dup) {
				a->server_cpu = (pids_seen ? a->server_cpu : 0) + c->server_cpu;
				pids_seen = 1;
			} else if (!pids_seen) {
				a->server_cpu = -1;
			}
		}
		/* Per run latency: the worst client's (each client has its own). */
		for (unsigned i = 0; i < n; i++) {
			const struct bench_run *c = &o[i].r.runs[k];
			if (c->lat_p99 > a->lat_p99)
				a->lat_p99 = c->lat_p99;
			if (c->lat_p999 > a->lat_p999)
				a->lat_p999 = c->lat_p999;
			a->lat_mean += c->lat_mean / n;
			a->lat_p50 += c->lat_p50 / n;
		}
	}
	bench_fill_result(r, all);
	/* each client's own counted pass (or timed runs): their sum */
	r->sc_calls = 0;
	r->sc_ios = 0;
	r->sc_pass = o[0].r.sc_pass;
	for (unsigned i = 0; i < n && r->sc_calls >= 0; i++) {
		r->sc_calls = o[i].r.sc_calls < 0 ? -1 : r->sc_calls + o[i].r.sc_calls;
		r->sc_ios += o[i].r.sc_ios;
	}
	memcpy(r->cnt_why, o[0].r.cnt_why, sizeof(r->cnt_why));
	snprintf(r->note, sizeof(r->note), "%s", o[0].r.note);
	r->fill_secs = o[0].r.fill_secs;
	r->status = BENCH_OK;
}

int bench_run_clients(const struct bench_job *job, struct bench_result *r)
{
	unsigned n = job->clients > 1 ? job->clients : 1;
	const char *no = bench_clients_refused(job, n);
	memset(r, 0, sizeof(*r));
	r->job = *job;
	if (no) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason), "--clients %u: %s", n, no);
		return -1;
	}
	if (n == 1)
		return bench_run_job(job, r);

	/* 1. the file, once, before any client runs */
	if (bench_prepare_job(job, r->reason, sizeof(r->reason)) < 0) {
		r->status = ur_in_use(job, r->reason) ? BENCH_FAILED : BENCH_SKIPPED;
		return r->status == BENCH_FAILED ? -1 : 0;
	}
	size_t mapsz = sizeof(struct client_out) * n;
	struct client_out *o = mmap(NULL, mapsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				    -1, 0);
	struct bench_hist *all = malloc(sizeof(*all));
	int readyp[2] = { -1, -1 }, gop[2] = { -1, -1 };
	pid_t pids[BENCH_MAX_CLIENTS];
	unsigned started = 0;
	int ret = 0;
	if (o == MAP_FAILED || !all || pipe2(readyp, O_CLOEXEC) < 0 || pipe2(gop, O_CLOEXEC) < 0) {
		r->status = BENCH_FAILED;
		snprintf(r->reason, sizeof(r->reason), "clients: %s", strerror(errno ? errno : ENOMEM));
		ret = -1;
		goto out;
	}
	memset(o, 0, mapsz);

	/* 2. the clients: set up, wait at the gate, run */
	fflush(NULL);
	for (; started < n; started++) {
		pid_t p = fork();
		if (p < 0) {
			r->status = BENCH_FAILED;
			snprintf(r->reason, sizeof(r->reason), "clients: fork: %s", strerror(errno));
			ret = -1;
			break;
		}
		if (p == 0) {
			close(readyp[0]);
			close(gop[1]);
			struct gate g = { .ready_w = readyp[1], .go_r = gop[0] };
			struct bench_hooks hk = { .prepared = 1, .ready = gate_ready, .arg = &g,
						  .hist = &o[started].hist };
			struct bench_job cj = *job;
			cj.clients = 1;
			bench_run_job_ex(&cj, &o[started].r, &hk);
			o[started].done = 1;
			_exit(0);
		}
		pids[started] = p;
	}
	close(readyp[1]);
	readyp[1] = -1;
	close(gop[0]);
	gop[0] = -1;
	/* Every client ready (or gone: EOF once all have closed their end), then go. */
	unsigned nready = 0;
	char b;
	while (nready < started) {
		ssize_t rd = read(readyp[0], &b, 1);
		if (rd == 0 || (rd < 0 && errno != EINTR))
			break;
		if (rd == 1)
			nready++;
	}
	close(gop[1]);
	gop[1] = -1;
	for (unsigned i = 0; i < started; i++) {
		int st;
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (ret == 0 && (!o[i].done || !WIFEXITED(st))) {
			r->status = BENCH_FAILED;
			snprintf(r->reason, sizeof(r->reason), "client %u of %u died (status 0x%x)",
				 i + 1, n, st);
			ret = -1;
		}
	}
	if (ret < 0)
		goto out;

	/* 3. one verdict: any failed client fails the job, any skipped one skips it */
	for (int pass = BENCH_FAILED; pass >= BENCH_SKIPPED && r->status == BENCH_OK; pass--)
		for (unsigned i = 0; i < n; i++)
			if (o[i].r.status == pass) {
				client_reason(r, job, i, n, &o[i].r);
				break;
			}
	if (r->status == BENCH_OK)
		aggregate(r, o, n, all);
	r->job = *job;
	r->server_pid = o[0].r.server_pid;
	ret = r->status == BENCH_FAILED ? -1 : 0;
out:
	for (int i = 0; i < 2; i++) {
		if (readyp[i] >= 0)
			close(readyp[i]);
		if (gop[i] >= 0)
			close(gop[i]);
	}
	if (o != MAP_FAILED)
		munmap(o, mapsz);
	free(all);
	return ret;
}
