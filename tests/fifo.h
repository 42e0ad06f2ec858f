/* SPDX-License-Identifier: MIT */
/* fifo.h: SCHED_FIFO for a test's measuring thread or for a server it started, so that
 * CPU-bound load beside the test (busy loops at the test's own priority) cannot take their CPU
 * in the middle of what is measured. A test that bounds a thread's own CPU time or counts a
 * server's sleeps then measures the code, not how soon the scheduler ran a thread: a spin that
 * yields to a busy loop, or a server kept from its CPU while its client waits, shows what the
 * scheduler did. Each returns 0 or an errno (EPERM where the process may not: the caller says so
 * once and runs without, as it did before). Use it only around a bounded stretch (a wait, a
 * burst of round trips): a FIFO thread that spins keeps SCHED_OTHER threads off its CPU.
 * Header only. */
#ifndef TU_FIFO_H
#define TU_FIFO_H

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

/* The calling thread SCHED_FIFO at priority 1 (on) or back to SCHED_OTHER. */
static inline int tu_fifo_self(int on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };
	return pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp);
}

/* Every thread of process pid SCHED_FIFO at priority 1 (on; threads it starts later inherit
 * it) or back to SCHED_OTHER; stops at the first refusal. */
static inline int tu_fifo_process(pid_t pid, int on)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return errno;
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };
	struct dirent *de;
	int e = 0;
	while (!e && (de = readdir(d)))
		if (de->d_name[0] != '.' &&
		    sched_setscheduler(atoi(de->d_name), on ? SCHED_FIFO : SCHED_OTHER, &sp) < 0)
			e = errno;
	closedir(d);
	return e;
}

#endif
