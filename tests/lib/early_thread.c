/* SPDX-License-Identifier: MIT */
/* early_thread.c: preloaded before the system-call front's libraries by
 * test_uring_sysfront, so that its constructor starts a thread before the
 * front installs its filter (the filter must reach it: SECCOMP_FILTER_FLAG_TSYNC).
 * early_thread_run(fn) runs fn on that thread and returns what it returned;
 * early_thread_filters_at_start() and early_thread_filters_now() count the
 * seccomp filters on that thread (/proc's "Seccomp_filters:") when it started
 * and now, so the test can tell the front's filter reached a thread that
 * predates it (whatever filters the process had before: ./noring's, Docker's).
 * Must never: run anything on its thread but what it is handed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int (*job)(void);
static int result, done, filters_at_start = -1;

static int seccomp_filters(void)
{
	char line[256];
	int v = -1;
	FILE *f = fopen("/proc/thread-self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "Seccomp_filters:", 16))
			v = atoi(line + 16);
	if (f)
		fclose(f);
	return v;
}

static void *loop(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	filters_at_start = seccomp_filters();
	pthread_cond_broadcast(&cv);
	for (;;) {
		while (!job)
			pthread_cond_wait(&cv, &mu);
		int (*fn)(void) = job;
		pthread_mutex_unlock(&mu);
		int r = fn();
		pthread_mutex_lock(&mu);
		job = NULL;
		result = r;
		done = 1;
		pthread_cond_broadcast(&cv);
	}
	return NULL;
}

__attribute__((constructor)) static void start(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, loop, NULL) != 0)
		abort();
	pthread_mutex_lock(&mu);
	while (filters_at_start < 0)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

int early_thread_filters_at_start(void)
{
	return filters_at_start;
}

int early_thread_run(int (*fn)(void))
{
	pthread_mutex_lock(&mu);
	done = 0;
	job = fn;
	pthread_cond_broadcast(&cv);
	while (!done)
		pthread_cond_wait(&cv, &mu);
	int r = result;
	pthread_mutex_unlock(&mu);
	return r;
}

int early_thread_filters_now(void)
{
	return early_thread_run(seccomp_filters);
}
