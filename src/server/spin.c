/*
 * spin.c - how long the server spins on an idle ring before it sleeps on the
 * SQ doorbell: learned from the ring's own inter-arrival gaps, the way
 * adaptive mutexes and the kernel's hybrid polling learn theirs.
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
