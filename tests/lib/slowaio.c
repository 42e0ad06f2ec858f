/* slowaio.c: preloaded into simplefs_server by test_ur_wait_behind, makes every
 * io_submit (which the server makes through syscall(2), src/common/kaio.h)
 * take 2 ms longer, as on a device whose queue blocks the submitter, so that a
 * test can see what a waiting client does meanwhile. Nothing else changes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <time.h>

long syscall(long n, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);    /* as glibc's own wrapper: six argument registers */
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (n == SYS_io_submit) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
