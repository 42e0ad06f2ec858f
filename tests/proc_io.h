/* SPDX-License-Identifier: MIT */
/* proc_io.h: a counter of this process's /proc/self/io (all its threads), for tests that
 * count the read or write system calls a step makes: "syscr" or "syscw". */
#ifndef TU_PROC_IO_H
#define TU_PROC_IO_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The counter named key ("syscr", "syscw") so far, -1 where the kernel does not count it. */
static inline long tu_proc_io(const char *key)
{
	char t[512], k[32];
	int fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, t, sizeof(t) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	t[n] = '\0';
	snprintf(k, sizeof(k), "%s: ", key);
	const char *p = strstr(t, k);
	return p ? atol(p + strlen(k)) : -1;
}

#endif
