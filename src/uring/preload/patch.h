/* SPDX-License-Identifier: MIT */
/* patch.h - the preload's trap-site patching (patch.c): the SIGSYS handler asks
 * for a site that trapped to be turned into a call. */
#ifndef URFS_PRELOAD_PATCH_H
#define URFS_PRELOAD_PATCH_H

/* call_addr: the address after the `syscall` instruction that trapped (si_call_addr);
 * nr: its system call. Patches the site when it is `mov $nr,%eax; syscall` (x86-64),
 * else does nothing. */
void front_patch_site(void *call_addr, int nr);

#endif
