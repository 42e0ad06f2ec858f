/* SPDX-License-Identifier: MIT */
/* Description: urch_lock_timeout on every engine. UR
 * (the server's locks) and UR opened URCH_EXCL (locks kept in the process):
 * against another channel's lock, a 150 ms timeout returns -ETIMEDOUT no
 * sooner than 150 ms and leaves nothing queued (the holder's unlock gives the
 * waiter nothing: the holder can lock the range again at once), and so does
 * the shortest one, 1 ns (never a wait for ever); a timeout
 * that the holder's unlock beats returns 0 at the unlock, long before it; a
 * free range is taken at once. Every engine: timeout 0 is a try (-EAGAIN),
 * a negative one waits as urch_lock does; host files (OFD locks, which have
 * no timeout): -EOPNOTSUPP for a timeout > 0, nothing taken. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include "test_chan_common.h"

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct timed {
	struct urch *ch;
	int64_t timeout_ns;
	int res;
	uint64_t took_ms;
};

static void *timed_lock(void *arg)
{
	struct timed *t = arg;
	uint64_t t0 = now_ms();
	t->res = urch_lock_timeout(t->ch, 0, 10, 0, t->timeout_ns);
	t->took_ms = now_ms() - t0;
	return NULL;
}

static void run(const struct cfg *c)
{
	printf("%s\n", c->label);
	struct urch *a, *b;
	int r;
	CHECK(cfg_open(c, URCH_CREATE, 8, &a) == 0, "%s: open a", c->label);
	CHECK(cfg_open(c, 0, 8, &b) == 0, "%s: open b", c->label);
	CHECK(urch_try_lock(a, 0, 100, 0) == 0, "%s: a locks", c->label);
	r = urch_lock_timeout(b, 0, 10, 0, 0);
	CHECK(r == -EAGAIN, "%s: timeout 0: %d", c->label, r);
	CHECK(urch_lock_timeout(b, 100, 10, 1, -1) == 0, "%s: negative: a plain lock", c->label);
	CHECK(urch_unlock(b, 0, 0) == 0, "%s: b unlocks", c->label);

	if (c->engine != URCH_UR) {
		r = urch_lock_timeout(b, 200, 10, 0, 150 * 1000000ll);
		CHECK(r == -EOPNOTSUPP, "%s: host timeout: %d", c->label, r);
		CHECK(urch_try_lock(a, 200, 10, 0) == 0, "%s: b took nothing", c->label);
		urch_close(b);
		urch_close(a);
		return;
	}
	struct timed t = { .ch = b, .timeout_ns = 150 * 1000000ll };
	timed_lock(&t);
	CHECK(t.res == -ETIMEDOUT, "%s: timed lock: %d", c->label, t.res);
	CHECK(t.took_ms >= 150 && t.took_ms < 5000, "%s: timed out after %llu ms", c->label,
	      (unsigned long long)t.took_ms);
	/* nothing left queued: a's unlock gives b nothing */
	CHECK(urch_unlock(a, 0, 0) == 0, "%s: a unlocks", c->label);
	CHECK(urch_try_lock(a, 0, 100, 0) == 0, "%s: a again: b took nothing", c->label);
	/* the shortest timeout, 1 ns, is a timeout too, not a wait for ever
	 * (bounded here: a's unlock after 5 s frees a waiter that missed it) */
	struct timed o = { .ch = b, .timeout_ns = 1 };
	pthread_t to;
	CHECK(pthread_create(&to, NULL, timed_lock, &o) == 0, "thread");
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 5;
	int j = pthread_timedjoin_np(to, NULL, &end);
	if (j) {
		CHECK(urch_unlock(a, 0, 0) == 0, "%s: a unlocks", c->label);
		pthread_join(to, NULL);
	}
	CHECK(!j && o.res == -ETIMEDOUT, "%s: a 1 ns timeout: %d after %llu ms", c->label, o.res,
	      (unsigned long long)o.took_ms);
	CHECK(urch_unlock(a, 0, 0) == 0 && urch_try_lock(a, 0, 100, 0) == 0,
	      "%s: a again after the 1 ns timeout: b took nothing", c->label);

	/* the unlock comes first: granted then, not at the timeout */
	struct timed u = { .ch = b, .timeout_ns = 3000 * 1000000ll };
	pthread_t th;
	CHECK(pthread_create(&th, NULL, timed_lock, &u) == 0, "thread");
	struct timespec ts = { 0, 100 * 1000000L };
	nanosleep(&ts, NULL);
	CHECK(urch_unlock(a, 0, 0) == 0, "%s: a unlocks", c->label);
	pthread_join(th, NULL);
	CHECK(u.res == 0 && u.took_ms < 2000, "%s: granted: %d after %llu ms", c->label, u.res,
	      (unsigned long long)u.took_ms);
	CHECK(urch_try_lock(a, 0, 1, 1) == -EAGAIN, "%s: b holds it", c->label);
	CHECK(urch_unlock(b, 0, 0) == 0, "%s: b unlocks", c->label);
	CHECK(urch_lock_timeout(b, 0, 10, 0, 1000000) == 0, "%s: a free range at once", c->label);
	urch_close(b);
	urch_close(a);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	for (unsigned i = 0; i < NCFG; i++) {
		const struct cfg *c = &cfgs[i];
		if ((c->flags & URCH_DIRECT) || !cfg_runnable(c))
			continue;
		run(c);
		if (c->engine == URCH_UR) {
			struct cfg x = *c;
			x.flags |= URCH_EXCL;
			x.label = "ur+excl";
			run(&x);
		}
	}
	printf("ok\n");
	return 0;
}
