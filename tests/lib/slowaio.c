/* SPDX-License-Identifier: MIT */
/* slowaio.c: preloaded into simplefs_server to make kernel AIO misbehave the
 * way a device may, on the server's io_submit (which it makes through
 * syscall(2), src/common/kaio.h); nothing else changes. $URTEST_AIO says how:
 *  - unset or "slow" (test_ur_wait_behind): every io_submit takes 2 ms
 *    longer, as on a device whose queue blocks the submitter;
 *  - "short" (test_ur_aio_faults): every I/O completes one 4 KiB block short
 *    (the kernel is handed a copy of each iocb asking that much less; the
 *    server's own iocbs are left as they were);
 *  - "late" (test_ur_aio_faults): io_submit takes the batch and returns at
 *    once, a thread hands it to the kernel 5 ms later, so nothing is complete
 *    when the server next looks and it must block in io_getevents. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

static long (*real)(long, ...);

struct late {
	long ctx, n;
	struct iocb **v;
};

static void *submit_late(void *arg)
{
	struct late *l = arg;
	struct timespec ts = { 0, 5 * 1000 * 1000 };
	while (nanosleep(&ts, &ts) != 0)
		;
	for (long done = 0; done < l->n;) {
		long r = real(SYS_io_submit, l->ctx, l->n - done, l->v + done, 0L, 0L, 0L);
		if (r <= 0)
			abort();        /* its completions would never come: fail loudly */
		done += r;
	}
	free(l->v);
	free(l);
	return NULL;
}

static long submit(long ctx, long n, struct iocb **v)
{
	const char *mode = getenv("URTEST_AIO");
	if (mode && !strcmp(mode, "short") && n > 0 && n <= 1024) {
		struct iocb cb[n], *p[n];
		for (long i = 0; i < n; i++) {
			cb[i] = *v[i];
			cb[i].aio_nbytes = cb[i].aio_nbytes > 4096 ? cb[i].aio_nbytes - 4096 : 0;
			p[i] = &cb[i];
		}
		return real(SYS_io_submit, ctx, n, p, 0L, 0L, 0L);
	}
	if (mode && !strcmp(mode, "late") && n > 0) {
		struct late *l = malloc(sizeof(*l));
		pthread_t t;
		pthread_attr_t a;
		if (!l || !(l->v = malloc(sizeof(*v) * (size_t)n)))
			abort();
		memcpy(l->v, v, sizeof(*v) * (size_t)n);
		l->ctx = ctx;
		l->n = n;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, submit_late, l) != 0)
			abort();
		pthread_attr_destroy(&a);
		return n;
	}
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	while (nanosleep(&ts, &ts) != 0)
		;
	return real(SYS_io_submit, ctx, n, v, 0L, 0L, 0L);
}

long syscall(long n, ...)
{
	long a[6];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);    /* as glibc's own wrapper: six argument registers */
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (n == SYS_io_submit)
		return submit(a[0], a[1], (struct iocb **)a[2]);
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
