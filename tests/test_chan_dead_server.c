/* SPDX-License-Identifier: MIT */
/* Description: a ur channel whose simplefs_server dies (SIGKILL) does not
 * hang: a batch returns -EPIPE and every op carries an error (none reports
 * success, not even one never queued whose result held an earlier batch's), so does a batch with its force (zero-length writes too: a force
 * that failed is never reported done), single ops and size fail with -EPIPE,
 * close returns; a new channel
 * on the image then starts a fresh server and sees the data written and
 * forced before the kill; after its close no server runs, nor after a failed
 * open (the context ends with its last channel). */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "test_chan_common.h"

#define PG 4096u
#define N 64u

int main(void)
{
	struct urch *ch;
	struct urch_op ops[N];
	static unsigned char buf[N * PG];
	int r = sfs_format("k.sfs", 32ull << 20, 0);
	CHECK(r == 0, "format: %s", strerror(-r));
	struct urch_opts o = { .image = "k.sfs", .ring_entries = 16 };
	r = urch_open_opts("f", URCH_CREATE, URCH_UR, &o, &ch);
	CHECK(r == 0, "open: %s", strerror(-r));
	fillpat(buf, sizeof(buf), 0, 7);
	CHECK(urch_write_fully(ch, buf, sizeof(buf), 0) == (int64_t)sizeof(buf), "write");
	CHECK(urch_force(ch, 1) == 0, "force");
	pid_t srv = child_server();
	CHECK(srv > 0, "server process not found");
	CHECK(kill(srv, SIGKILL) == 0, "kill");
	int st = 0;
	pid_t w = waitpid(srv, &st, 0);     /* the kill took: the server is dead before we go on */
	CHECK(w == srv && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "reap: waitpid %d, status %#x",
	      (int)w, st);
	for (unsigned i = 0; i < N; i++) {
		ops[i].pos = (uint64_t)i * PG;
		ops[i].buf = buf + (size_t)i * PG;
		ops[i].len = PG;
		ops[i].result = PG;         /* stale: an array reused from a batch that succeeded */
	}
	r = urch_batch_read_fully(ch, ops, N);
	CHECK(r == -EPIPE, "batch after the server died: %d", r);
	for (unsigned i = 0; i < N; i++)
		CHECK(ops[i].result < 0, "op %u reports %lld after the server died", i,
		      (long long)ops[i].result);
	/* A batch and its force on the dead channel: the force cannot even be
	 * queued (its prep fails with -EPIPE, not the -EBUSY of a full ring).
	 * The call fails as a whole or op by op, never "all done"; a batch of
	 * zero-length writes whose force failed carries its error too. */
	for (unsigned len = PG;; len = 0) {
		for (unsigned i = 0; i < N; i++) {
			ops[i].len = len;
			ops[i].result = 0;
		}
		r = urch_batch_write_force(ch, ops, N, 1);
		CHECK(r == (int)N || r == -EPIPE, "write_force (len %u) after the server died: %d", len, r);
		for (unsigned i = 0; i < N; i++)
			CHECK(ops[i].result == -EPIPE, "write_force (len %u) op %u after the server died: %lld",
			      len, i, (long long)ops[i].result);
		if (!len)
			break;
	}
	CHECK(urch_read(ch, buf, PG, 0) == -EPIPE, "single read");
	CHECK(urch_size(ch) == -EPIPE, "size");
	CHECK(urch_close(ch) == 0, "close");

	r = urch_open_opts("f", 0, URCH_UR, &o, &ch);
	CHECK(r == 0, "reopen: %s", strerror(-r));
	memset(buf, 0, sizeof(buf));
	CHECK(urch_read_fully(ch, buf, sizeof(buf), 0) == (int64_t)sizeof(buf), "read back");
	for (size_t i = 0; i < sizeof(buf); i++)
		CHECK(buf[i] == pat(i, 7), "byte %zu after restart", i);
	urch_close(ch);
	CHECK(child_server() < 0, "a server runs after the image's last channel closed");

	/* An open that fails is no channel: it does not keep the context (its
	 * ring, its server) alive once it is the only one. */
	r = urch_open_opts("missing", 0, URCH_UR, &o, &ch);
	CHECK(r == -ENOENT, "open of a missing file: %d", r);
	CHECK(child_server() < 0, "a failed open left the image's ring and server running");
	return 0;
}
