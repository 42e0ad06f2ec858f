/* SPDX-License-Identifier: MIT */
/* Description: channels used from several threads at once, one channel per
 * thread, on every engine: four threads each stream batches of writes and
 * reads of their own file (for ur all four files are in one image, so the
 * channels share one ring and server, serialized by the library), every
 * page checked byte for byte; op ids taken by the batches of all threads
 * never collide (the counter moved by exactly the total of ops). */
#include <pthread.h>
#include "test_chan_common.h"

#define PG 4096u
#define NT 4
#define NOPS 300u
#define ROUNDS 4

struct targ {
	const struct cfg *c;
	int idx;
	char err[200];
};

static void *worker(void *arg)
{
	struct targ *t = arg;
	struct cfg c = *t->c;
	char name[32];
	struct urch *ch;
	struct urch_op ops[NOPS];
	unsigned char *buf;
	snprintf(name, sizeof(name), "th%d%s", t->idx, c.engine == URCH_UR ? "" : ".dat");
	c.path = name;
	int r = cfg_open(&c, URCH_CREATE | URCH_TRUNC, 16, &ch);
	if (r < 0) {
		snprintf(t->err, sizeof(t->err), "open: %s", strerror(-r));
		return NULL;
	}
	if (urch_alloc_buf(ch, (size_t)NOPS * PG, (void **)&buf) < 0) {
		snprintf(t->err, sizeof(t->err), "alloc");
		urch_close(ch);
		return NULL;
	}
	for (unsigned round = 0; round < ROUNDS && !t->err[0]; round++) {
		unsigned seed = (unsigned)t->idx * 100 + round;
		for (unsigned i = 0; i < NOPS; i++) {
			ops[i].pos = (uint64_t)((i * 7) % NOPS) * PG;
			ops[i].buf = buf + (size_t)i * PG;
			ops[i].len = PG;
			fillpat(ops[i].buf, PG, ops[i].pos, seed);
		}
		r = urch_batch_write_fully(ch, ops, NOPS);
		if (r != 0) {
			snprintf(t->err, sizeof(t->err), "write batch: %d failed", r);
			break;
		}
		memset(buf, 0, (size_t)NOPS * PG);
		for (unsigned i = 0; i < NOPS; i++)
			ops[i].pos = (uint64_t)((i * 11) % NOPS) * PG;
		r = urch_batch_read_fully(ch, ops, NOPS);
		if (r != 0) {
			snprintf(t->err, sizeof(t->err), "read batch: %d failed", r);
			break;
		}
		for (unsigned i = 0; i < NOPS && !t->err[0]; i++)
			for (unsigned k = 0; k < PG; k++)
				if (((unsigned char *)ops[i].buf)[k] != pat(ops[i].pos + k, seed)) {
					snprintf(t->err, sizeof(t->err), "round %u: page at %llu byte %u",
						 round, (unsigned long long)ops[i].pos, k);
					break;
				}
	}
	urch_free_buf(ch, buf);
	urch_close(ch);
	return NULL;
}

int main(void)
{
	for (unsigned i = 0; i < NCFG; i++) {
		const struct cfg *c = &cfgs[i];
		if (!cfg_runnable(c))
			continue;
		pthread_t th[NT];
		struct targ ta[NT];
		uint64_t id0 = urch_next_op_id();
		for (int k = 0; k < NT; k++) {
			memset(&ta[k], 0, sizeof(ta[k]));
			ta[k].c = c;
			ta[k].idx = k;
			CHECK(pthread_create(&th[k], NULL, worker, &ta[k]) == 0, "thread");
		}
		for (int k = 0; k < NT; k++) {
			pthread_join(th[k], NULL);
			CHECK(!ta[k].err[0], "%s: thread %d: %s", c->label, k, ta[k].err);
		}
		uint64_t used = urch_next_op_id() - id0;
		CHECK(used == (uint64_t)NT * ROUNDS * 2 * NOPS, "%s: op ids moved by %llu, want %u",
		      c->label, (unsigned long long)used, NT * ROUNDS * 2 * NOPS);
		printf("ok %s\n", c->label);
	}
	return 0;
}
