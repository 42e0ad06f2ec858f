/* SPDX-License-Identifier: MIT */
/*
 * eng_null.c - an engine that does no I/O (fio's null): every I/O completes
 * at once with its full length, so the harness can measure its own cost.
 * Must never touch a file or a buffer.
 */
#include "bench.h"

static int null_setup(struct bench_td *td)
{
	(void)td;
	return 0;
}

static int null_queue(struct bench_td *td, struct bench_io *io)
{
	(void)td;
	io->res = io->op == BENCH_OP_NOP ? 0 : io->len;
	return BENCH_Q_COMPLETED;
}

const struct bench_engine_ops bench_eng_null = {
	.name = "null",
	.desc = "no I/O at all: the harness's own cost",
	.flags = BENCH_ENG_SYNC | BENCH_ENG_NODATA | BENCH_ENG_NOP,
	.setup = null_setup,
	.queue = null_queue,
};
