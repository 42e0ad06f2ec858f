/* SPDX-License-Identifier: MIT */
/*
 * lockbench - what hostile lock holders cost everyone else on one
 * simplefs_server (issue 27 item 2; docs/BENCHMARKS.md "Lock grants"): the
 * round trip of an UNLOCK (of a record it holds, so the server runs a
 * grant pass; the record is taken again between UNLOCKs) on a file of its own, and a neighbour's NOP round trips
 * meanwhile, first with 1 hostile ring, then with N (default 62: a server
 * takes UR_MAX_CLIENTS = 64 rings, two are the measuring and the neighbour
 * ring). Each hostile ring is a process of its own (so the per-process
 * bounds do not stop it) that takes records on a file of its own and queues
 * waiting LOCKs on one shared file held by the measuring process, each until
 * the server answers -ENOLCK (its ring's, or the server's bound: together
 * they hold what the server allows). Prints, per set, the hostile records and
 * waits, the UNLOCK's median and p99, the neighbour's NOP median, p99 and
 * max, then the ratio of the two UNLOCK medians - in one run, side by side.
 *
 *   lockbench [--image PATH] [--hostile N] [--reps R] [--ms T] [--idle-rings]
 *
 * --idle-rings: the control, the same rings taking no locks at all (what
 * the number of rings costs, without the lock table).
 * Each set is measured for at least R UNLOCKs (default 2000) and T ms
 * (default 2000).
 * The image (default lockbench.sfs here) is formatted anew. Never asserts a
 * speed: it measures.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ur_fs.h"
#include "sfs.h"

#define MAX_HOSTILE (UR_MAX_CLIENTS - 2)
#define NOP_MAX 2000000u

static const char *image = "lockbench.sfs";
static int idle_rings;                  /* --idle-rings: hostile rings that take no locks */

__attribute__((noreturn)) static void die(const char *what, int e)
{
	fprintf(stderr, "lockbench: %s: %s\n", what, strerror(e < 0 ? -e : e));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void ring(struct urfs_ring *r, unsigned entries)
{
	struct urfs_params p;
	memset(&p, 0, sizeof(p));
	p.image = image;
	int e = urfs_queue_init_params(entries, r, &p);
	if (e < 0) {
		fprintf(stderr, "lockbench: ring: %s (%s)\n", strerror(-e), p.errmsg);
		exit(1);
	}
}

static struct urfs_sqe *sqe_of(struct urfs_ring *r)
{
	struct urfs_sqe *s = urfs_get_sqe(r);
	if (!s)
		die("no SQE free", EBUSY);
	return s;
}

/* Submit what is prepared and wait for one CQE: its res (and user_data). */
static int32_t round_trip(struct urfs_ring *r, uint64_t *ud)
{
	struct urfs_cqe *cqe;
	int e = urfs_submit_and_wait(r, 1);
	if (e < 0 || (e = urfs_wait_cqe(r, &cqe)) < 0)
		die("wait", e);
	int32_t res = cqe->res;
	if (ud)
		*ud = cqe->user_data;
	urfs_cqe_seen(r, cqe);
	return res;
}

static int open_f(struct urfs_ring *r, const char *name)
{
	urfs_prep_openat(sqe_of(r), name, URFS_O_CREAT);
	int32_t fd = round_trip(r, NULL);
	if (fd < 0)
		die(name, fd);
	return fd;
}

static int32_t lock_now(struct urfs_ring *r, int op, int fd, uint64_t pos, uint64_t len)
{
	struct urfs_sqe *s = sqe_of(r);
	if (op == UR_OP_LOCK)
		urfs_prep_lock(s, fd, pos, len, 0);
	else
		urfs_prep_unlock(s, fd, pos, len);
	return round_trip(r, NULL);
}

/* A hostile client: records on its own file, then waits on "h" (held by the
 * measuring process), each until -ENOLCK. Reports both counts up, then
 * holds them until killed. */
static void hostile(unsigned k, int up)
{
	static struct urfs_ring r;
	char name[32];
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	ring(&r, 256);
	snprintf(name, sizeof(name), "hostile%u", k);
	int fd = open_f(&r, name), fh = open_f(&r, "h");
	unsigned recs = 0, waits = 0;
	while (!idle_rings && recs < UR_CLIENT_MAX_LOCKS &&
	       lock_now(&r, UR_OP_LOCK, fd, 2 * (uint64_t)recs, 1) == 0)
		recs++;
	while (!idle_rings) {
		/* a waiting LOCK, then a NOP: a refused LOCK's CQE comes first */
		struct urfs_sqe *s = sqe_of(&r);
		urfs_prep_lock(s, fh, waits, 1, URFS_LOCK_WAIT);
		urfs_sqe_set_data64(s, 1);
		s = sqe_of(&r);
		urfs_prep_nop(s);
		urfs_sqe_set_data64(s, 2);
		uint64_t ud;
		round_trip(&r, &ud);
		if (ud == 1) {               /* refused: take the NOP's CQE too */
			round_trip(&r, NULL);
			break;
		}
		if (++waits >= UR_CLIENT_MAX_LOCKWAITS)
			break;
	}
	unsigned got[2] = { recs, waits };
	if (write(up, got, sizeof(got)) != (ssize_t)sizeof(got))
		_exit(1);
	pause();
	_exit(0);
}

/* The neighbour: NOP round trips from "go" until "stop" (bytes on in), its
 * latencies (ns) sent up at the end: count, then the values. */
static void neighbour(int in, int up)
{
	static struct urfs_ring r;
	static uint32_t lat[NOP_MAX];
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	ring(&r, 8);
	char c;
	while (read(in, &c, 1) == 1 && c == 'g') {
		fcntl(in, F_SETFL, O_NONBLOCK);
		uint32_t n = 0;
		urfs_prep_nop(sqe_of(&r));
		round_trip(&r, NULL);
		if (write(up, "r", 1) != 1)          /* running */
			_exit(1);
		int stopped;
		while (!(stopped = read(in, &c, 1) == 1) && n < NOP_MAX) {
			urfs_prep_nop(sqe_of(&r));
			uint64_t t = now_ns();
			round_trip(&r, NULL);
			uint64_t d = now_ns() - t;
			lat[n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		}
		fcntl(in, F_SETFL, 0);
		/* full before the stop came: take the stop, or the next set's
		 * "go" would read it and this process would leave */
		if (!stopped && read(in, &c, 1) != 1)
			_exit(1);
		if (write(up, &n, sizeof(n)) != (ssize_t)sizeof(n) ||
		    write(up, lat, n * sizeof(lat[0])) != (ssize_t)(n * sizeof(lat[0])))
			_exit(1);
	}
	_exit(0);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static double pct_us(uint32_t *v, uint32_t n, double p)
{
	if (!n)
		return 0;
	uint32_t i = (uint32_t)(p * (n - 1) + 0.5);
	return v[i] / 1000.0;
}

static int read_all(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t r = read(fd, (char *)buf + got, len - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

struct result {
	unsigned rings, recs, waits;
	double unlock_med, unlock_p99, nop_med, nop_p99, nop_max;
	uint32_t nops, unlocks;
};

/* UNLOCK + LOCK pairs on fd (its record [0,1) held before and after), the
 * UNLOCKs timed, at least reps of them and for at least min_ms, while the
 * neighbour runs. The record is kept between pairs: the hostile set fills
 * the server's bound, and the room a freed record leaves is what its LOCK
 * takes back. */
static void measure(struct urfs_ring *m, int fd, unsigned reps, unsigned min_ms, int go, int back,
		    struct result *res)
{
	static uint32_t lat[NOP_MAX];
	uint32_t *u = calloc(NOP_MAX, sizeof(*u));
	char c;
	if (!u)
		die("memory", ENOMEM);
	if (write(go, "g", 1) != 1 || read(back, &c, 1) != 1)
		die("neighbour", errno);
	uint64_t end = now_ns() + (uint64_t)min_ms * 1000000u;
	unsigned i;
	for (i = 0; i < NOP_MAX && (i < reps || now_ns() < end); i++) {
		urfs_prep_unlock(sqe_of(m), fd, 0, 1);
		uint64_t t = now_ns();
		int32_t r = round_trip(m, NULL);
		uint64_t d = now_ns() - t;
		if (r != 0)
			die("measuring UNLOCK", r);
		u[i] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
		if ((r = lock_now(m, UR_OP_LOCK, fd, 0, 1)) != 0)   /* its record back */
			die("measuring LOCK", r);
	}
	uint32_t n;
	if (write(go, "s", 1) != 1 || read_all(back, &n, sizeof(n)) < 0 || n > NOP_MAX ||
	    read_all(back, lat, n * sizeof(lat[0])) < 0)
		die("neighbour's latencies", EIO);
	qsort(u, i, sizeof(*u), cmp_u32);
	qsort(lat, n, sizeof(lat[0]), cmp_u32);
	res->unlocks = i;
	res->unlock_med = pct_us(u, i, 0.5);
	res->unlock_p99 = pct_us(u, i, 0.99);
	res->nops = n;
	res->nop_med = pct_us(lat, n, 0.5);
	res->nop_p99 = pct_us(lat, n, 0.99);
	res->nop_max = pct_us(lat, n, 1.0);
	free(u);
}

static void print(const struct result *r)
{
	printf("hostile rings %2u (records %5u, waits %4u): UNLOCK median %8.2f us p99 %8.1f us "
	       "(%u); neighbour NOP median %7.2f us p99 %7.1f us max %8.1f us (%u)\n",
	       r->rings, r->recs, r->waits, r->unlock_med, r->unlock_p99, r->unlocks, r->nop_med,
	       r->nop_p99, r->nop_max, r->nops);
}

int main(int argc, char **argv)
{
	unsigned nhost = MAX_HOSTILE, reps = 2000, min_ms = 2000;
	static const struct option lo[] = {
		{ "image", required_argument, 0, 'i' },
		{ "hostile", required_argument, 0, 'n' },
		{ "reps", required_argument, 0, 'r' },
		{ "ms", required_argument, 0, 't' },
		{ "idle-rings", no_argument, 0, 'z' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'i': image = optarg; break;
		case 'n': nhost = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'r': reps = (unsigned)strtoul(optarg, NULL, 10); break;
		case 't': min_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'z': idle_rings = 1; break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
				"usage: lockbench [--image PATH] [--hostile N (2..%u)] [--reps R] [--ms T] [--idle-rings]\n",
				MAX_HOSTILE);
			return c == 'h' ? 0 : 2;
		}
	}
	if (nhost < 2 || nhost > MAX_HOSTILE || reps < 1 || reps > NOP_MAX || min_ms > 600000) {
		fprintf(stderr, "lockbench: --hostile 2..%u, --reps 1..%u, --ms 0..600000\n", MAX_HOSTILE, NOP_MAX);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);   /* a helper process gone: its pipe's EPIPE says so (die) */
	int e = sfs_format(image, 64ull << 20, 0);
	if (e < 0)
		die("format", e);
	struct urfs_ring m;
	ring(&m, 8);
	int fm = open_f(&m, "m"), fh = open_f(&m, "h");
	if (lock_now(&m, UR_OP_LOCK, fh, 0, 0) != 0 ||   /* every hostile wait waits on it */
	    lock_now(&m, UR_OP_LOCK, fm, 0, 1) != 0)     /* the record measure() cycles */
		die("first records", EIO);

	int go[2], back[2], up[2];
	if (pipe(go) < 0 || pipe(back) < 0 || pipe(up) < 0)
		die("pipe", errno);
	pid_t nb = fork();
	if (nb < 0)
		die("fork", errno);
	if (nb == 0) {
		close(go[1]);
		close(back[0]);
		neighbour(go[0], back[1]);
	}
	close(go[0]);
	close(back[1]);

	pid_t kids[MAX_HOSTILE];
	unsigned nkids = 0;
	struct result res[2];
	memset(res, 0, sizeof(res));
	unsigned sets[2] = { 1, nhost };
	for (unsigned s = 0; s < 2; s++) {
		while (nkids < sets[s]) {
			pid_t p = fork();
			if (p < 0)
				die("fork", errno);
			if (p == 0)
				hostile(nkids, up[1]);
			kids[nkids++] = p;
			unsigned got[2];
			if (read_all(up[0], got, sizeof(got)) < 0)
				die("a hostile client failed", EIO);
			res[1].recs += got[0];
			res[1].waits += got[1];
			if (s == 0) {
				res[0].recs = got[0];
				res[0].waits = got[1];
			}
		}
		res[s].rings = sets[s];
		measure(&m, fm, reps, min_ms, go[1], back[0], &res[s]);
		print(&res[s]);
	}
	printf("ratio %u-vs-1 hostile rings: UNLOCK median x%.2f, p99 x%.2f\n", nhost,
	       res[0].unlock_med > 0 ? res[1].unlock_med / res[0].unlock_med : 0.0,
	       res[0].unlock_p99 > 0 ? res[1].unlock_p99 / res[0].unlock_p99 : 0.0);

	for (unsigned i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	kill(nb, SIGKILL);
	for (unsigned i = 0; i < nkids; i++)
		waitpid(kids[i], NULL, 0);
	waitpid(nb, NULL, 0);
	urfs_queue_exit(&m);
	unlink(image);
	return 0;
}
