/* SPDX-License-Identifier: MIT */
/* Description: channel byte-range locks on every engine. Two channels of one
 * process contend (exclusive vs shared, shared vs shared, adjacent ranges,
 * len 0 = to the end and beyond, 200 ranges held at once and the gaps
 * between them free, unlocking the middle of a range, close
 * releasing, an exclusive lock on a read-only channel refused, a NULL channel
 * or a range past INT64_MAX refused (-EINVAL) by lock and unlock, a blocking
 * lock in a second thread waking when the holder unlocks). Two processes
 * contend too (host files: OFD locks; UR: the server's locks, the second
 * process a client of the first one's server): try_lock sees the other's
 * lock, a blocking lock waits for the other's unlock (it then sees what the
 * other wrote before unlocking); three processes add to a counter in the
 * file under the lock and none of the updates is lost; a holder killed
 * (SIGKILL) releases its lock. UR channels opened URCH_EXCL (locks kept in
 * the process) pass the same in-process rules. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "test_chan_common.h"

static void msleep(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

struct waiter {
	struct urch *ch;
	volatile int got;
	int res;
};

static void *wait_lock(void *arg)
{
	struct waiter *w = arg;
	w->res = urch_lock(w->ch, 0, 100, 0);
	w->got = 1;
	return NULL;
}

static void in_process(const struct cfg *c)
{
	printf("%s: in one process\n", c->label);
	struct urch *a, *b, *ro;
	int r;
	CHECK(cfg_open(c, URCH_CREATE, 8, &a) == 0, "%s: open a", c->label);
	CHECK(cfg_open(c, 0, 8, &b) == 0, "%s: open b", c->label);

	/* Arguments outside the promise (urch_lock(3)): -EINVAL, nothing locked. */
	CHECK(urch_try_lock(NULL, 0, 1, 0) == -EINVAL && urch_unlock(NULL, 0, 1) == -EINVAL,
	      "%s: NULL channel", c->label);
	CHECK(urch_try_lock(a, 1ull << 63, 1, 0) == -EINVAL && urch_unlock(a, 1ull << 63, 1) == -EINVAL,
	      "%s: pos above INT64_MAX", c->label);
	CHECK(urch_try_lock(a, INT64_MAX, 2, 0) == -EINVAL && urch_unlock(a, INT64_MAX, 2) == -EINVAL,
	      "%s: pos + len above INT64_MAX", c->label);
	CHECK(urch_try_lock(a, 0, 100, 0) == 0, "%s: a excl", c->label);
	r = urch_try_lock(b, 50, 10, 1);
	CHECK(r == -EAGAIN, "%s: b shared inside a's excl: %d", c->label, r);
	CHECK(urch_try_lock(b, 99, 1, 0) == -EAGAIN, "%s: b on a's last byte", c->label);
	CHECK(urch_try_lock(b, 100, 50, 0) == 0, "%s: b adjacent", c->label);
	CHECK(urch_try_lock(a, 120, 1, 1) == -EAGAIN, "%s: a inside b's", c->label);
	CHECK(urch_unlock(a, 0, 100) == 0, "%s: a unlock", c->label);
	CHECK(urch_try_lock(b, 0, 10, 0) == 0, "%s: b after a's unlock", c->label);
	CHECK(urch_unlock(b, 0, 0) == 0, "%s: b unlock all", c->label);

	/* shared + shared; then exclusive refused */
	CHECK(urch_try_lock(a, 0, 100, 1) == 0, "%s: a shared", c->label);
	CHECK(urch_try_lock(b, 10, 100, 1) == 0, "%s: b shared", c->label);
	CHECK(urch_try_lock(b, 10, 10, 0) == -EAGAIN, "%s: b upgrade against a's shared", c->label);
	CHECK(urch_try_lock(b, 150, 10, 0) == 0, "%s: b upgrade outside a's range", c->label);
	CHECK(urch_unlock(a, 0, 0) == 0 && urch_unlock(b, 0, 0) == 0, "%s: unlocks", c->label);

	/* unlocking the middle of a range */
	CHECK(urch_try_lock(a, 0, 300, 0) == 0, "%s: a 0..300", c->label);
	CHECK(urch_unlock(a, 100, 100) == 0, "%s: a unlock middle", c->label);
	CHECK(urch_try_lock(b, 120, 10, 0) == 0, "%s: b in the hole", c->label);
	CHECK(urch_try_lock(b, 50, 10, 0) == -EAGAIN, "%s: b in left part", c->label);
	CHECK(urch_try_lock(b, 250, 10, 0) == -EAGAIN, "%s: b in right part", c->label);
	CHECK(urch_unlock(a, 0, 0) == 0 && urch_unlock(b, 0, 0) == 0, "%s: unlocks", c->label);

	/* many ranges at once (more than any first allocation): each is held,
	 * the gaps between them are free */
	for (uint64_t i = 0; i < 200; i++)
		CHECK(urch_try_lock(a, 2000 + 10 * i, 5, 0) == 0, "%s: a range %llu", c->label,
		      (unsigned long long)i);
	/* the heap in use meanwhile: a lock table written past its end shows */
	void *churn[64];
	for (int k = 0; k < 64; k++) {
		churn[k] = malloc(32 + 48 * (size_t)k);
		CHECK(churn[k], "malloc");
		memset(churn[k], 0x5a, 32 + 48 * (size_t)k);
	}
	for (uint64_t i = 0; i < 200; i++) {
		CHECK(urch_try_lock(b, 2004 + 10 * i, 1, 1) == -EAGAIN, "%s: b inside a's range %llu",
		      c->label, (unsigned long long)i);
		CHECK(urch_try_lock(b, 2005 + 10 * i, 5, 0) == 0, "%s: b in gap %llu", c->label,
		      (unsigned long long)i);
	}
	CHECK(urch_unlock(b, 0, 0) == 0, "%s: b unlock all", c->label);
	for (int k = 0; k < 64; k++)
		free(churn[k]);
	for (uint64_t i = 0; i < 200; i++)
		CHECK(urch_unlock(a, 2000 + 10 * i, 5) == 0, "%s: a unlock range %llu", c->label,
		      (unsigned long long)i);
	CHECK(urch_try_lock(b, 2000, 2000, 0) == 0 && urch_unlock(b, 0, 0) == 0,
	      "%s: b over all of a's former ranges", c->label);

	/* len 0: to the end and beyond */
	CHECK(urch_try_lock(a, 1000, 0, 0) == 0, "%s: a to EOF", c->label);
	CHECK(urch_try_lock(b, (uint64_t)1 << 40, 1, 1) == -EAGAIN, "%s: b far past EOF", c->label);
	CHECK(urch_try_lock(b, 0, 1000, 0) == 0, "%s: b before", c->label);
	CHECK(urch_unlock(b, 0, 0) == 0, "unlock");

	/* a blocking lock in another thread wakes when a unlocks (a holds 1000..).
	 * Valgrind does not know F_OFD_SETLKW blocks and keeps its big lock
	 * through it, so no other thread runs: left out under valgrind (host). */
	CHECK(urch_try_lock(a, 0, 10, 0) == 0, "%s: a 0..10", c->label);
	const char *pre = getenv("LD_PRELOAD");
	if (c->engine != URCH_UR && pre && strstr(pre, "vgpreload")) {
		printf("%s: blocking lock in a thread left out under valgrind\n", c->label);
		CHECK(urch_unlock(a, 0, 10) == 0 && urch_try_lock(b, 0, 100, 0) == 0, "%s: b", c->label);
	} else {
		printf("%s: a blocking lock in a second thread\n", c->label);
		struct waiter w = { .ch = b };
		pthread_t t;
		CHECK(pthread_create(&t, NULL, wait_lock, &w) == 0, "thread");
		msleep(100);
		CHECK(!w.got, "%s: blocking lock did not wait", c->label);
		CHECK(urch_unlock(a, 0, 10) == 0, "%s: a unlock", c->label);
		pthread_join(t, NULL);
		CHECK(w.got && w.res == 0, "%s: blocking lock: %d", c->label, w.res);
	}
	CHECK(urch_try_lock(a, 5, 1, 1) == -EAGAIN, "%s: b holds now", c->label);

	/* close releases */
	CHECK(urch_close(b) == 0, "close b");
	CHECK(urch_try_lock(a, 5, 1, 0) == 0, "%s: after b closed", c->label);
	CHECK(cfg_open(c, URCH_RDONLY, 8, &ro) == 0, "%s: open ro", c->label);
	r = urch_try_lock(ro, 5000, 1, 0);
	CHECK(r == -EBADF, "%s: exclusive on read-only: %d", c->label, r);
	CHECK(urch_try_lock(ro, 5000, 1, 1) == -EAGAIN, "%s: shared on ro inside a's", c->label);
	CHECK(urch_try_lock(ro, 500, 1, 1) == 0, "%s: shared on ro", c->label);
	urch_close(ro);
	urch_close(a);
}

/* Two processes. */
static void two_processes(const struct cfg *c)
{
	printf("%s: two processes\n", c->label);
	int up[2], down[2];
	char x;
	CHECK(pipe(up) == 0 && pipe(down) == 0, "pipe");
	struct urch *a;
	CHECK(cfg_open(c, URCH_CREATE | URCH_TRUNC, 8, &a) == 0, "%s: open", c->label);
	CHECK(urch_write_fully(a, "0", 1, 8192) == 1, "write");
	CHECK(urch_lock(a, 0, 4096, 0) == 0, "%s: parent lock", c->label);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct urch *b;
		int code = 0;
		if (cfg_open(c, 0, 8, &b) < 0)
			_exit(10);
		if (urch_try_lock(b, 100, 10, 1) != -EAGAIN)
			code = 11;
		if (!code && urch_try_lock(b, 4096, 10, 0) != 0)
			code = 12;
		if (write(up[1], "r", 1) != 1)
			code = 13;
		/* blocks until the parent unlocks; the parent writes '1' first */
		if (!code && urch_lock(b, 0, 4096, 0) != 0)
			code = 14;
		char m = 0;
		if (!code && (urch_read_fully(b, &m, 1, 8192) != 1 || m != '1'))
			code = 15;
		/* now the child holds 0..4096 shared-downgraded, parent checks */
		if (!code && urch_lock(b, 0, 4096, 1) != 0)
			code = 16;
		if (write(up[1], "s", 1) != 1)
			code = 17;
		if (read(down[0], &x, 1) != 1)
			code = 18;
		urch_close(b);
		_exit(code);
	}
	CHECK(read(up[0], &x, 1) == 1 && x == 'r', "child ready");
	msleep(150);
	/* the child is blocked in lock(): it must not have got further */
	CHECK(urch_try_lock(a, 4096, 10, 1) == -EAGAIN, "%s: child's lock not seen", c->label);
	CHECK(urch_write_fully(a, "1", 1, 8192) == 1, "write marker");
	CHECK(urch_unlock(a, 0, 4096) == 0, "parent unlock");
	CHECK(read(up[0], &x, 1) == 1 && x == 's', "child holds shared");
	CHECK(urch_try_lock(a, 0, 10, 0) == -EAGAIN, "%s: excl against child's shared", c->label);
	CHECK(urch_try_lock(a, 0, 10, 1) == 0, "%s: shared with child's shared", c->label);
	CHECK(write(down[1], "q", 1) == 1, "release child");
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child failed with %d", c->label,
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	CHECK(urch_try_lock(a, 0, 4096, 0) == 0, "%s: after the child exited", c->label);
	urch_close(a);
	close(up[0]); close(up[1]); close(down[0]); close(down[1]);
}

/* NPROC processes each add 1 to a counter in the file ROUNDS times, a
 * read-modify-write under a blocking exclusive lock: the sum proves they
 * excluded each other. Then a process holding a lock is killed (SIGKILL): a
 * blocking lock in this one is granted. */
#define NPROC 3
#define ROUNDS 40
static void counter_processes(const struct cfg *c)
{
	printf("%s: %d processes, a counter under the lock\n", c->label, NPROC);
	struct urch *a;
	uint64_t v = 0;
	CHECK(cfg_open(c, URCH_CREATE | URCH_TRUNC, 8, &a) == 0, "%s: open", c->label);
	CHECK(urch_write_fully(a, &v, sizeof(v), 0) == sizeof(v), "write");
	pid_t kids[NPROC];
	for (int k = 0; k < NPROC; k++) {
		kids[k] = fork();
		CHECK(kids[k] >= 0, "fork");
		if (kids[k])
			continue;
		struct urch *b;
		if (cfg_open(c, 0, 8, &b) < 0)
			_exit(10);
		for (int i = 0; i < ROUNDS; i++) {
			uint64_t x;
			if (urch_lock(b, 0, 8, 0) != 0)
				_exit(11);
			if (urch_read_fully(b, &x, sizeof(x), 0) != sizeof(x))
				_exit(12);
			if (i % 8 == 0)
				sched_yield();  /* let the others run into the lock */
			x++;
			if (urch_write_fully(b, &x, sizeof(x), 0) != sizeof(x))
				_exit(13);
			if (urch_unlock(b, 0, 8) != 0)
				_exit(14);
		}
		urch_close(b);
		_exit(0);
	}
	for (int k = 0; k < NPROC; k++) {
		int st;
		CHECK(waitpid(kids[k], &st, 0) == kids[k], "waitpid");
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: counter child: %#x", c->label, st);
	}
	CHECK(urch_read_fully(a, &v, sizeof(v), 0) == sizeof(v), "read");
	CHECK(v == NPROC * ROUNDS, "%s: counter %llu, not %d: the lock did not exclude",
	      c->label, (unsigned long long)v, NPROC * ROUNDS);

	int p[2];
	char x = 0;
	CHECK(pipe(p) == 0, "pipe");
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct urch *b;
		if (cfg_open(c, 0, 8, &b) < 0 || urch_lock(b, 100, 0, 0) != 0)
			_exit(20);
		if (write(p[1], "l", 1) != 1)
			_exit(21);
		for (;;)
			pause();
	}
	CHECK(read(p[0], &x, 1) == 1 && x == 'l', "child locked");
	CHECK(urch_try_lock(a, 200, 1, 1) == -EAGAIN, "%s: the child's lock", c->label);
	kill(pid, SIGKILL);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(urch_lock(a, 0, 0, 0) == 0, "%s: lock after the holder was killed", c->label);
	urch_close(a);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned i = 0; i < NCFG; i++) {
		const struct cfg *c = &cfgs[i];
		if (c->flags & URCH_DIRECT)
			continue;
		if (!cfg_runnable(c))
			continue;
		in_process(c);
		two_processes(c);
		counter_processes(c);
		if (c->engine == URCH_UR) {
			/* an exclusive context keeps the locks in the process */
			struct cfg x = *c;
			x.flags |= URCH_EXCL;
			x.label = "ur+excl";
			in_process(&x);
		}
		printf("ok %s\n", c->label);
	}
	return 0;
}
