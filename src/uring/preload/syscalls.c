/* SPDX-License-Identifier: MIT */
/*
 * syscalls.c - liburfs_syscalls.so, the preload of the system-call front
 * (`urfs-uring --syscalls`, LD_PRELOAD after the drop-in liburing.so.2):
 * at load it puts its SIGSYS handler in place and asks the drop-in to start
 * the front (src/uring/sysfront.c: a seccomp filter that traps the io_uring
 * system calls, only where the kernel's io_uring is refused or emulation is
 * forced). The handler serves each trap of the front from the emulated ring
 * and writes the result where the system call's would go; errno is kept.
 *
 * The kernel kills a process whose thread traps with SIGSYS blocked, and a
 * program may install a SIGSYS handler of its own. So, while the front is
 * on, these wrap libc's:
 *  - sigaction, signal: SIGSYS's disposition is kept here as the program's
 *    (what it reads back is what it set), and called for every SIGSYS that
 *    is not the front's trap (raise(), kill, another filter's trap);
 *  - sigprocmask, pthread_sigmask: never block SIGSYS (a raw rt_sigprocmask
 *    system call can, and its next trap then kills the process: DROPIN.md);
 *  - execve, execvpe, fexecve, posix_spawn, posix_spawnp: a child gets
 *    LD_PRELOAD with both libraries even from an environment that dropped it
 *    (the filter is inherited, and a child without the handler would die of
 *    SIGSYS where it got EPERM; a static binary still does: DROPIN.md).
 *    execv, execvp, execl, execle and execlp (glibc's call its execve
 *    inside, past any wrapper) go through the ones above, with environ
 *    where they take none;
 *  - every exec of this process (not posix_spawn's child, not a vfork()ed
 *    child, which shares this process's memory) first cancels its requests
 *    on rings shared across fork (urfs_sysfront_exec), as the kernel cancels
 *    a task's at exec; an exec that fails has lost them.
 * The handler runs with SA_NODEFER (a signal handler of the program may
 * enter the ring while a trapped wait sleeps) and SA_ONSTACK.
 *
 * Must never: change anything when the front is off (every wrapper passes
 * straight through), or lose a SIGSYS that is the program's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "../sysfront.h"
#include "patch.h"

#define WRAP __attribute__((visibility("default")))   /* built with -fvisibility=hidden */

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1
#endif

/* weak: a process whose liburing.so.2 is the system's has not these */
extern int urfs_sysfront_start(void) __attribute__((weak));
extern long urfs_sysfront_call(long nr, const long *a) __attribute__((weak));
extern void urfs_sysfront_exec(void) __attribute__((weak));

static int front_on;
static pid_t self_pid;                     /* this process's (fork's child: pthread_atfork) */
static struct sigaction prog_act;          /* the program's SIGSYS disposition */

static long (*real_syscall)(long, ...);
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static sighandler_t (*real_signal)(int, sighandler_t);
static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);
static int (*real_pthread_sigmask)(int, const sigset_t *, sigset_t *);
static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[]);
static spawn_fn *real_posix_spawn, *real_posix_spawnp;

static char preload_paths[2 * 4096 + 2];   /* "DROPIN:SELF", what a child's LD_PRELOAD gets */
static const char *self_path = "";

#if defined(__x86_64__)
#define ARG_REGS { REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9 }
#define UC_ARG(uc, i) ((long)(uc)->uc_mcontext.gregs[i])
#define UC_SET_RET(uc, v) ((uc)->uc_mcontext.gregs[REG_RAX] = (greg_t)(v))
#elif defined(__aarch64__)
#define ARG_REGS { 0, 1, 2, 3, 4, 5 }
#define UC_ARG(uc, i) ((long)(uc)->uc_mcontext.regs[i])
#define UC_SET_RET(uc, v) ((uc)->uc_mcontext.regs[0] = (unsigned long long)(v))
#else
#error "syscalls.c: add this architecture's system-call argument registers"
#endif

static void *next(void **slot, const char *name);
/* libc's own function: resolved at first use (another library's constructor may call a
 * wrapper before this one's has run). */
#define REAL(fn) (real_##fn ? real_##fn : (__typeof__(real_##fn))next((void **)&real_##fn, #fn))

/* A SIGSYS that is not the front's: what the program asked for it. */
static void to_program(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = prog_act;

	if (a.sa_flags & SA_RESETHAND) {
		prog_act.sa_handler = SIG_DFL;
		prog_act.sa_flags &= ~SA_SIGINFO;
	}
	if (a.sa_flags & SA_SIGINFO) {
		a.sa_sigaction(sig, si, uc);
	} else if (a.sa_handler == SIG_IGN) {
		return;
	} else if (a.sa_handler == SIG_DFL) {
		/* its default action (the process ends, dumping core) */
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, SIGSYS);
		REAL(sigaction)(SIGSYS, &dfl, NULL);
		REAL(pthread_sigmask)(SIG_UNBLOCK, &one, NULL);
		raise(SIGSYS);
	} else {
		a.sa_handler(sig);
	}
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	if (si->si_code == SYS_SECCOMP && (unsigned)si->si_errno == SYSFRONT_TRAP_DATA) {
		ucontext_t *uc = ucv;
		static const int regs[6] = ARG_REGS;
		long a[6];
		for (int i = 0; i < 6; i++)
			a[i] = UC_ARG(uc, regs[i]);
		UC_SET_RET(uc, urfs_sysfront_call(si->si_syscall, a));
		if (si->si_syscall == __NR_io_uring_enter)
			front_patch_site(si->si_call_addr, si->si_syscall);  /* next time a call */
	} else {
		to_program(sig, si, ucv);
	}
	errno = saved;
}

/* ---- the wrappers ---- */


/* libc's syscall(): the io_uring calls go straight to the emulated ring, with no trap
 * (fio, t/io_uring, libuv and Rust's io-uring make them so); the rest pass on. */
WRAP long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (front_on && (nr == __NR_io_uring_setup || nr == __NR_io_uring_enter || nr == __NR_io_uring_register)) {
		long r = urfs_sysfront_call(nr, a);
		if (r < 0 && r > -4096) {
			errno = (int)-r;
			return -1;
		}
		return r;
	}
	return REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

WRAP int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!front_on || sig != SIGSYS)
		return REAL(sigaction)(sig, act, old);
	struct sigaction was = prog_act;
	if (act)
		prog_act = *act;
	if (old)
		*old = was;
	return 0;
}

WRAP sighandler_t signal(int sig, sighandler_t h)
{
	if (!front_on || sig != SIGSYS)
		return REAL(signal)(sig, h);
	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sighandler_t was = (prog_act.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)prog_act.sa_sigaction
							     : prog_act.sa_handler;
	memset(&prog_act, 0, sizeof(prog_act));
	prog_act.sa_handler = h;
	prog_act.sa_flags = SA_RESTART;      /* glibc's signal(): BSD semantics */
	return was;
}

/* set without SIGSYS, in *tmp, when the front is on and how would block it. */
static const sigset_t *keep_sigsys(int how, const sigset_t *set, sigset_t *tmp)
{
	if (!front_on || !set || how == SIG_UNBLOCK || !sigismember(set, SIGSYS))
		return set;
	*tmp = *set;
	sigdelset(tmp, SIGSYS);
	return tmp;
}

WRAP int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t tmp;
	return REAL(sigprocmask)(how, keep_sigsys(how, set, &tmp), old);
}

WRAP int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t tmp;
	return REAL(pthread_sigmask)(how, keep_sigsys(how, set, &tmp), old);
}

/* The environment a child gets: envp, with LD_PRELOAD starting with both
 * libraries unless it names this one already. out has room for the entries
 * of envp and one more and the end; line for the new LD_PRELOAD entry. */
static char *const *child_env(char *const envp[], char **out, char *line, size_t cap)
{
	size_t n = 0;
	int at = -1;
	for (; envp && envp[n]; n++)
		if (!strncmp(envp[n], "LD_PRELOAD=", 11))
			at = (int)n;
	if (at >= 0 && strstr(envp[at] + 11, self_path))
		return envp;
	const char *theirs = at >= 0 ? envp[at] + 11 : "";
	if ((size_t)snprintf(line, cap, "LD_PRELOAD=%s%s%s", preload_paths, theirs[0] ? ":" : "", theirs) >= cap)
		return envp;               /* cannot say it: as it was */
	for (size_t i = 0; i < n; i++)
		out[i] = envp[i];
	if (at >= 0)
		out[at] = line;
	else
		out[n++] = line;
	out[n] = NULL;
	return out;
}

static size_t env_len(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

#define WITH_CHILD_ENV(envp, call)                                                   \
	do {                                                                         \
		char *out_[env_len(envp) + 2];                                       \
		char line_[sizeof(preload_paths) + 4096 + 16];                       \
		char *const *e_ = front_on ? child_env(envp, out_, line_, sizeof line_) : (envp); \
		return call;                                                         \
	} while (0)

/* Before this process execs: its requests on shared rings are cancelled. A
 * vfork()ed child (its pid is not the one this process has) shares the
 * parent's memory and rings: nothing is done there. */
static void before_exec(void)
{
	if (front_on && urfs_sysfront_exec && getpid() == self_pid)
		urfs_sysfront_exec();
}

static void forked(void)
{
	self_pid = getpid();
}

WRAP int execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	WITH_CHILD_ENV(envp, REAL(execve)(path, argv, e_));
}

WRAP int execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	WITH_CHILD_ENV(envp, REAL(execvpe)(file, argv, e_));
}

WRAP int fexecve(int fd, char *const argv[], char *const envp[])
{
	before_exec();
	WITH_CHILD_ENV(envp, REAL(fexecve)(fd, argv, e_));
}

WRAP int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

WRAP int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

#define EXEC_ARGS_MAX 4096    /* more arguments: E2BIG, as a kernel limit would */
enum { LIST_PATH, LIST_SEARCH, LIST_ENV };

/* execl, execlp, execle: arg0, then va up to NULL (and for execle the
 * environment after it), as an array for execve or execvpe above. */
static int exec_list(int how, const char *path, const char *arg0, va_list va)
{
	char *argv[EXEC_ARGS_MAX + 1];
	int n = 0;
	for (const char *a = arg0; a; a = va_arg(va, const char *)) {
		if (n >= EXEC_ARGS_MAX) {
			errno = E2BIG;
			return -1;
		}
		argv[n++] = (char *)a;
	}
	argv[n] = NULL;
	if (how == LIST_SEARCH)
		return execvpe(path, argv, environ);
	return execve(path, argv, how == LIST_ENV ? va_arg(va, char *const *) : environ);
}

#define EXEC_LIST_WRAP(name, how)                                       \
	WRAP int name(const char *path, const char *arg, ...)           \
	{                                                               \
		va_list va;                                             \
		va_start(va, arg);                                      \
		int r = exec_list(how, path, arg, va);                  \
		va_end(va);                                             \
		return r;                                               \
	}

EXEC_LIST_WRAP(execl, LIST_PATH)
EXEC_LIST_WRAP(execlp, LIST_SEARCH)
EXEC_LIST_WRAP(execle, LIST_ENV)

WRAP int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	WITH_CHILD_ENV(envp, REAL(posix_spawn)(pid, path, fa, attr, argv, e_));
}

WRAP int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	WITH_CHILD_ENV(envp, REAL(posix_spawnp)(pid, file, fa, attr, argv, e_));
}

/* ---- start ---- */

static void *next(void **slot, const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) {
		fprintf(stderr, "urfs-uring: the system-call front: %s not found: %s\n", name, dlerror());
		abort();
	}
	__atomic_store_n(slot, f, __ATOMIC_RELAXED);
	return f;
}

__attribute__((constructor)) static void front_init(void)
{

	Dl_info self, drop;
	if (!urfs_sysfront_start || !urfs_sysfront_call ||
	    !dladdr((void *)front_init, &self) || !dladdr((void *)urfs_sysfront_start, &drop)) {
		fprintf(stderr, "urfs-uring: the system-call front is off: the process loaded a liburing.so.2 "
			"that is not urfs's drop-in (LD_PRELOAD it before %s)\n", "liburfs_syscalls.so");
		return;
	}
	self_path = self.dli_fname;
	snprintf(preload_paths, sizeof preload_paths, "%s:%s", drop.dli_fname, self.dli_fname);

	struct sigaction ours = { .sa_sigaction = on_sigsys,
				  .sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART };
	sigemptyset(&ours.sa_mask);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, SIGSYS);
	if (REAL(sigaction)(SIGSYS, &ours, &prog_act) < 0)
		return;
	REAL(pthread_sigmask)(SIG_UNBLOCK, &one, NULL);
	int r = urfs_sysfront_start();
	if (r == 1) {
		self_pid = getpid();
		pthread_atfork(NULL, NULL, forked);
		front_on = 1;
		return;
	}
	REAL(sigaction)(SIGSYS, &prog_act, NULL);
	if (r < 0)
		fprintf(stderr, "urfs-uring: the system-call front is off: its seccomp filter: %s\n",
			strerror(-r));
}
