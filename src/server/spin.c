/* SPDX-License-Identifier: MIT */
/*
 * spin.c - how long the server spins on an idle ring before it sleeps on the
 * SQ doorbell: learned from the ring's own inter-arrival gaps, the way
 * adaptive mutexes and the kernel's hybrid polling learn theirs; and when a
 * busy server hands its CPU to a client waiting on that CPU (ur_handover).
 *
 * The rule (docs/ABI.md, "Wakeups"): the ring remembers its last
 * UR_SPIN_HIST gaps (from running out of work to the next SQE found). If at
 * least half of them were short (<= UR_SPIN_WORTH_NS: a wait that a spin
 * saves without costing more CPU than the sleep and wakeup it replaces), the
 * server spins up to twice the longest of those short gaps (at least
 * UR_SPIN_MIN_NS); otherwise it sleeps at once. Never longer than the cap (the
 * client's idle_us, itself clamped).
 * Must never spin on a ring whose requests come further apart than the spin
 * can pay for, and never take a syscall or the time itself: the caller
 * passes the clock (the rule is tested in-process, tests/test_ur_spin.c).
 */
#include <string.h>
#include "server.h"

void ur_spin_init(struct ur_spin *sp)
{
	memset(sp, 0, sizeof(*sp));     /* no history: all gaps short (0), spin the minimum */
}

void ur_spin_idle(struct ur_spin *sp, uint64_t now_ns)
{
	if (!sp->idle_at)
		sp->idle_at = now_ns ? now_ns : 1;
}

void ur_spin_arrival(struct ur_spin *sp, uint64_t now_ns)
{
	if (!sp->idle_at)
		return;                     /* busy: no gap */
	uint64_t gap = now_ns > sp->idle_at ? now_ns - sp->idle_at : 0;
	sp->gap[sp->next++ % UR_SPIN_HIST] = gap > UINT32_MAX ? UINT32_MAX : (uint32_t)gap;
	sp->idle_at = 0;
}

/*
 * The hand-over rule (docs/ABI.md, "Wakeups"): a client waiting for CQEs on
 * the server's own CPU cannot reap them until the server lets go of that CPU;
 * while other rings keep the server busy it never reaches its idle path's
 * yield, and the client waits for the scheduler's next turn. So once such a
 * client's CQEs have waited UR_HANDOVER_NS unreaped, the server yields. Not
 * at once: a yield may hand the CPU to another process for a whole slice
 * (measured: yielding at once made 4 clients under load slower and less
 * fair than not yielding at all). Once per batch of CQEs, so a client that
 * sets the hint and never reaps costs at most one yield per batch of its own.
 */
int ur_handover(struct ur_handover *ho, uint32_t my_cpu, uint32_t client_cpu, uint32_t cq_head,
		uint32_t cq_published, uint64_t now_ns)
{
	if (!my_cpu || client_cpu != my_cpu || cq_head == cq_published || ho->tail == cq_published) {
		ho->since = 0;
		return 0;
	}
	if (!ho->since)
		ho->since = now_ns ? now_ns : 1;
	if (now_ns - ho->since < UR_HANDOVER_NS)
		return 0;
	ho->tail = cq_published;
	ho->since = 0;
	return 1;
}

uint64_t ur_spin_budget_ns(const struct ur_spin *sp, uint64_t cap_ns)
{
	unsigned nshort = 0;
	uint64_t longest = 0;
	for (unsigned i = 0; i < UR_SPIN_HIST; i++)
		if (sp->gap[i] <= UR_SPIN_WORTH_NS) {
			nshort++;
			if (sp->gap[i] > longest)
				longest = sp->gap[i];
		}
	if (2 * nshort < UR_SPIN_HIST)
		return 0;
	uint64_t b = 2 * longest;
	if (b < UR_SPIN_MIN_NS)
		b = UR_SPIN_MIN_NS;
	return b < cap_ns ? b : cap_ns;
}
