/* SPDX-License-Identifier: MIT */
/* Description: a forked child that turns hostile cannot reach into its
 * parent through the page a ring shared across fork() keeps its cross-process state in
 * (emulated; src/uring/xshared.h). The child finds that page as an attacker would (the shared
 * mapping the fork added, in /proc/self/maps), drops to nobody where it can (as root), makes
 * the ring fd's shared file blocking, and attacks the page while the parent submits and waits:
 * messages to the parent's listener that no process leaving the ring would send (TIMEOUT flags
 * no SQE may have: -EINVAL; more TIMEOUTs handed over than XP_ADOPT_MAX: -EBUSY past it);
 * random bytes; every 32-bit word at each worst value (0, -1, INT_MAX, the sign bit, an index
 * past every bound, a pid past PID_MAX, the parent's pid, the child's pid with and without the
 * waiters bit); every mailbox naming a live process (pid 1), free and never answered, with a
 * huge overflow count; its own pid in every word (a live holder that never lets go); the last
 * two each for longer than the library's wait bound; and it dies leaving its pid there (a dead
 * holder). The parent never crashes, never writes outside its own objects (run under ASan), and
 * no call waits for ever: an io_uring_submit returns within SUBMIT_MS (-EAGAIN while the SQ
 * lock is kept), a 50 ms wait (for a NOP's CQE, or for nothing: then it asks the mailboxes)
 * within WAIT_MS (-EBUSY while the CQ lock is kept); a lock holder or a mailbox that outlasted
 * one bounded wait is not waited for again (many calls in each of those phases); after the
 * child is gone the ring works again (NOP CQEs) and io_uring_queue_exit returns in time. The
 * kernel's ring runs as the reference: there is no such page. */
#include "test_uring.h"
#include "../src/uring/xshared.h"
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

/* each wait for another process ends within XP_BOUND_MS (docs/DROPIN.md); a submit makes
 * two (the SQ lock, the CQ lock for its inline NOP), a wait three (the CQ lock, the
 * mailboxes, the eventfd's clear) */
#define SUBMIT_MS (2 * XP_BOUND_MS + 1000)
#define WAIT_MS (3 * XP_BOUND_MS + 1300)
#define HOLD_MS (WAIT_MS + 3000)     /* a live holder, a mailbox never answered: longer than
				      * any bound of a step */
#define MAXMAP 64

enum { P_START, P_MSG, P_RANDOM, P_WORDS, P_MAIL, P_HOLD, P_DONE, P_N };

struct ctl {
	_Atomic int phase;            /* the child's */
	_Atomic int found;            /* shared mappings the fork added */
	_Atomic int dropped;          /* 1: it runs as nobody */
	int bad_flags;                /* the parent's answer to a TIMEOUT with flags no SQE may have */
	unsigned adopted, refused;    /* its answers to XP_ADOPT_MAX + 8 TIMEOUTs handed over */
};

static struct { unsigned long lo, hi; } pre[MAXMAP];
static int npre;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The shared ("rw-s") mappings of this process into lo/hi; their count. */
static int shared_maps(unsigned long *lo, unsigned long *hi, int max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	char line[512], perm[8];
	unsigned long a, b;
	int n = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perm) == 3 && strcmp(perm, "rw-s") == 0 && n < max) {
			lo[n] = a;
			hi[n++] = b;
		}
	fclose(f);
	return n;
}

static uint64_t rnd_state;
static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)rnd_state;
}

static void fill(uint32_t *w, size_t n, uint32_t v, int random)
{
	for (size_t i = 0; i < n; i++)
		__atomic_store_n(&w[i], random ? rnd() : v, __ATOMIC_RELAXED);
}

/* Every mailbox names pid (alive), is free and never answers; the CQEs in overflow lists
 * "number" a billion: a waiter asks every process to flush, and the first asked never
 * answers while this lasts. */
static void mail(struct xshared *x, pid_t pid)
{
	atomic_store(&x->sq, 0);
	atomic_store(&x->cq, 0);
	atomic_store(&x->novf, 1 << 30);
	for (int i = 0; i < XP_SLOTS; i++) {
		atomic_store(&x->slot[i].pid, pid);
		atomic_store(&x->slot[i].mbox, 0);
		atomic_store(&x->slot[i].ack, 0);
	}
}

/* Keep the page at v (random, or the mailbox scribble) for ms, rewritten every 200 us. */
static void hold(uint32_t *w, size_t n, uint32_t v, int how, int ms)
{
	for (uint64_t end = mono_ms() + (uint64_t)ms; mono_ms() < end;) {
		if (how == P_MAIL)
			mail((struct xshared *)w, (pid_t)v);
		else
			fill(w, n, v, how == P_RANDOM);
		usleep(200);
	}
}

/* Send the parent's listener (slot i) message m as another process would; its answer, or
 * 1 if none came within 5 s. */
static int32_t ask(struct xslot *s, const struct xmsg *m)
{
	s->msg = *m;
	uint32_t seq = atomic_load(&s->req) + 1;
	atomic_store(&s->req, seq);
	syscall(SYS_futex, &s->req, FUTEX_WAKE, 1, NULL, NULL, 0);
	for (uint64_t end = mono_ms() + 5000; atomic_load(&s->ack) != seq;)
		if (mono_ms() > end)
			return 1;
	return s->msg.res;
}

/* Messages no process that left the ring would send: refused, and adoption is bounded. */
static void messages(struct ctl *c, struct xshared *x, pid_t parent)
{
	int i = XP_SLOTS;
	for (uint64_t end = mono_ms() + 5000; i == XP_SLOTS && mono_ms() < end; usleep(1000))
		for (i = 0; i < XP_SLOTS && atomic_load(&x->slot[i].pid) != parent;)
			i++;               /* the parent's listener starts after the fork */
	if (i == XP_SLOTS)
		return;
	struct xmsg m = { .type = XM_TIMEOUT, .fl = ~0u, .ud = 99, .deadline = UINT64_MAX };
	c->bad_flags = ask(&x->slot[i], &m);
	m.fl = 0;
	for (unsigned k = 0; k < XP_ADOPT_MAX + 8; k++) {
		int32_t res = ask(&x->slot[i], &m);
		c->adopted += res == 0;
		c->refused += res == -EBUSY;
	}
}

static void child(struct ctl *c, pid_t parent, int ring_fd)
{
	/* the ring fd's file is shared too: blocking from now on (the library reads it) */
	CHECK_EQ(fcntl(ring_fd, F_SETFL, fcntl(ring_fd, F_GETFL) & ~O_NONBLOCK), 0);
	unsigned long lo[MAXMAP], hi[MAXMAP];
	int n = shared_maps(lo, hi, MAXMAP), k = -1;
	for (int i = 0; i < n; i++) {
		int old = 0;
		for (int j = 0; j < npre; j++)
			old |= pre[j].lo == lo[i];
		if (!old) {
			k = k < 0 ? i : k;
			atomic_fetch_add(&c->found, 1);
		}
	}
	if (getuid() == 0 && setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0)
		atomic_store(&c->dropped, 1);
	if (k < 0 || hi[k] - lo[k] < sizeof(struct xshared)) {   /* a kernel ring: no such page */
		atomic_store(&c->phase, P_DONE);
		_exit(0);
	}
	uint32_t *w = (uint32_t *)lo[k];
	size_t nw = (hi[k] - lo[k]) / 4;
	pid_t me = getpid();
	atomic_store(&c->phase, P_MSG);
	messages(c, (struct xshared *)w, parent);
	atomic_store(&c->phase, P_RANDOM);
	hold(w, nw, 0, P_RANDOM, 1500);
	atomic_store(&c->phase, P_WORDS);
	const uint32_t worst[] = { 0, UINT32_MAX, INT_MAX, 0x80000000u, 0x40000000u, XP_SLOTS, XP_SLOTS + 1,
				   4194305u, (uint32_t)parent, (uint32_t)me, (uint32_t)me | XL_WAITERS };
	for (unsigned i = 0; i < sizeof worst / sizeof worst[0]; i++)
		hold(w, nw, worst[i], P_WORDS, 300);
	atomic_store(&c->phase, P_MAIL);
	hold(w, nw, 1, P_MAIL, HOLD_MS);    /* pid 1: alive, and no earlier phase wrote it */
	atomic_store(&c->phase, P_HOLD);
	hold(w, nw, (uint32_t)me, P_HOLD, HOLD_MS);
	fill(w, nw, (uint32_t)me, 0);       /* and dies holding everything */
	atomic_store(&c->phase, P_DONE);
	_exit(0);
}

/* What the parent saw in one phase of the child's. */
struct seen {
	unsigned steps, got, eagain, ebusy;
	unsigned eagain_fast;         /* submits that answered -EAGAIN in under XP_BOUND_MS / 2 */
	unsigned idle_fast;           /* waits for nothing that ended in under XP_BOUND_MS / 2 */
};

/* A wait of up to 50 ms, timed: a CQE counted in got, -EBUSY in ebusy; its time. */
static uint64_t wait50(struct io_uring *ring, unsigned *got, unsigned *ebusy)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { 0, 50000000 };
	uint64_t t0 = mono_ms();
	int r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	uint64_t t1 = mono_ms();
	if (t1 - t0 > WAIT_MS)
		FAIL("a 50 ms wait took %llu ms (bound %d)", (unsigned long long)(t1 - t0), WAIT_MS);
	if (r == 0) {
		(*got)++;
		io_uring_cqe_seen(ring, cqe);
	} else if (r == -EBUSY) {
		(*ebusy)++;
	} else if (r != -ETIME) {
		FAIL("wait: %s", strerror(-r));
	}
	return t1 - t0;
}

/* One step of the parent, each call timed: a NOP submitted, a wait for its CQE, and a wait
 * with nothing to come (which asks the other processes to move their overflowed CQEs in when
 * the page's count says there are some). */
static void step(struct io_uring *ring, struct seen *v)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (sqe) {
		io_uring_prep_nop(sqe);
		sqe->user_data = 7;
	}
	uint64_t t0 = mono_ms();
	int r = io_uring_submit(ring);
	uint64_t t1 = mono_ms();
	if (t1 - t0 > SUBMIT_MS)
		FAIL("io_uring_submit took %llu ms (bound %d)", (unsigned long long)(t1 - t0), SUBMIT_MS);
	if (r == -EAGAIN) {
		v->eagain++;
		v->eagain_fast += t1 - t0 < XP_BOUND_MS / 2;
	} else if (r < 0) {
		FAIL("io_uring_submit: %s", strerror(-r));
	}
	wait50(ring, &v->got, &v->ebusy);
	if (!io_uring_cq_ready(ring))
		v->idle_fast += wait50(ring, &v->got, &v->ebusy) < XP_BOUND_MS / 2;
	v->steps++;
}

static void body(void)
{
	struct ctl *c = mmap(NULL, sizeof *c, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(c != MAP_FAILED);
	struct io_uring ring;
	int r = io_uring_queue_init(16, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&ring);
	unsigned long lo[MAXMAP], hi[MAXMAP];
	npre = shared_maps(lo, hi, MAXMAP);
	for (int i = 0; i < npre; i++)
		pre[i].lo = lo[i], pre[i].hi = hi[i];
	rnd_state = (uint64_t)time(NULL) * 2654435761u + (uint64_t)getpid();
	printf("seed %llu\n", (unsigned long long)rnd_state);
	fflush(stdout);
	pid_t parent = getpid(), pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child(c, parent, ring.ring_fd);
	struct seen v[P_N];
	memset(v, 0, sizeof v);
	while (atomic_load(&c->phase) != P_DONE)
		step(&ring, &v[atomic_load(&c->phase)]);
	tu_child_ok(pid);
	if (tu_mode == TU_KERNEL)
		CHECK_EQ(atomic_load(&c->found), 0);
	else
		CHECK_EQ(atomic_load(&c->found), 1);   /* xproc.c's page: the only one the fork added */
	struct seen all = { 0 };
	for (int p = 0; p < P_N; p++)
		all.steps += v[p].steps, all.got += v[p].got, all.eagain += v[p].eagain, all.ebusy += v[p].ebusy;
	printf("%s: %u steps (%u random, %u words, %u mailboxes, %u holder), %u CQEs, %u -EAGAIN, "
	       "%u -EBUSY%s\n", tu_mode_name, all.steps, v[P_RANDOM].steps, v[P_WORDS].steps,
	       v[P_MAIL].steps, v[P_HOLD].steps, all.got, all.eagain, all.ebusy,
	       atomic_load(&c->dropped) ? ", the child as nobody" : "");
	printf("%s: mailboxes never answered: %u of %u waits for nothing fast; a live holder: %u "
	       "of %u -EAGAIN fast\n", tu_mode_name, v[P_MAIL].idle_fast, v[P_MAIL].steps,
	       v[P_HOLD].eagain_fast, v[P_HOLD].eagain);
	printf("%s: a bad TIMEOUT answered %d; of %u TIMEOUTs handed over %u adopted, %u refused\n",
	       tu_mode_name, c->bad_flags, XP_ADOPT_MAX + 8, c->adopted, c->refused);
	if (tu_mode != TU_KERNEL) {
		/* a live holder that outlasted one bounded wait is not waited for again: later
		 * submits answer -EAGAIN at once (each would take XP_BOUND_MS otherwise); the
		 * same for a mailbox never answered */
		CHECK(v[P_HOLD].eagain_fast >= 3);
		CHECK(v[P_MAIL].idle_fast >= 3);
		/* checked as an SQE is; a process adopts so many TIMEOUTs and no more */
		CHECK_EQ(c->bad_flags, -EINVAL);
		CHECK(c->adopted > 0 && c->adopted <= XP_ADOPT_MAX);
		CHECK(c->refused >= 8);
		CHECK_EQ(c->adopted + c->refused, XP_ADOPT_MAX + 8);
	}
	if (!atomic_load(&c->dropped))
		printf("SKIP-PART: the child kept its uid (not run as root)\n");
	/* the child is gone, its pid left in every word: the parent takes the locks over
	 * and its ring works (what the SQ still held from refused submits runs too) */
	uint64_t t0 = mono_ms();
	CHECK(io_uring_submit(&ring) >= 0);     /* what the SQ held */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	CHECK(sqe != NULL);
	io_uring_prep_nop(sqe);
	sqe->user_data = 8;
	CHECK_EQ(io_uring_submit(&ring), 1);
	int seen8 = 0;
	while (!seen8) {
		struct io_uring_cqe cq = tu_wait_at(&ring, WAIT_MS / 1000 + 1, __LINE__);
		CHECK(cq.user_data == 7 || cq.user_data == 8);
		CHECK_EQ(cq.res, 0);
		seen8 = cq.user_data == 8;
	}
	uint64_t t1 = mono_ms();
	io_uring_queue_exit(&ring);
	uint64_t t2 = mono_ms();
	printf("%s: after the child, a NOP in %llu ms, queue_exit in %llu ms\n", tu_mode_name,
	       (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1));
	CHECK(t1 - t0 <= SUBMIT_MS + WAIT_MS);
	CHECK(t2 - t1 <= SUBMIT_MS);
	munmap(c, sizeof *c);
}

int main(void)
{
	return tu_uring_main(body);
}
