/* SPDX-License-Identifier: MIT */
/* early_thread.c: preloaded before the system-call front's libraries by
 * test_uring_sysfront, so that its constructor starts a thread before the
 * front installs its filter (the filter must reach it: SECCOMP_FILTER_FLAG_TSYNC).
 * early_thread_run(fn) runs fn on that thread and returns what it returned;
 * early_thread_seccomp_at_start() is the thread's seccomp mode (/proc's
 * "Seccomp:") when it started, so the test can tell it predates the filter.
 * Must never: run anything on its thread but what it is handed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int (*job)(void);
static int result, done, mode_at_start = -1;

static int seccomp_mode(void)
{
	char line[256];
	int v = -1;
	FILE *f = fopen("/proc/thread-self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "Seccomp:", 8))
			v = atoi(line + 8);
	if (f)
		fclose(f);
	return v;
}

static void *loop(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	mode_at_start = seccomp_mode();
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
	while (mode_at_start < 0)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

int early_thread_seccomp_at_start(void)
{
	return mode_at_start;
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
