/* SPDX-License-Identifier: MIT */
/*
 * sysfront.h - what the system-call front's two halves share: sysfront.c in
 * liburing.so.2 (the seccomp filter, the trapped calls served from the
 * emulated ring) and the preload (preload/syscalls.c: the SIGSYS handler and
 * the wrappers that keep it deliverable), loaded by `urfs-uring --syscalls`.
 * Header only; docs/DROPIN.md "The system-call front".
 */
#ifndef URFS_SYSFRONT_H
#define URFS_SYSFRONT_H

/* SECCOMP_RET_DATA of the front's traps: a SIGSYS whose si_errno is not this
 * (raise(), another filter's trap) is the program's, not the front's. */
#define SYSFRONT_TRAP_DATA 0x5552u

/* Rings made through the front get fd numbers in [SYSFRONT_FD_LO, SYSFRONT_FD_HI):
 * the filter traps mmap() and close() of numbers in that range only, so a
 * program's other files never trap (unless it has that many open). HI is
 * EMU_FD_BASE, where the library's own descriptors start. */
#define SYSFRONT_FD_LO 384
#define SYSFRONT_FD_HI 512

/* Exported from liburing.so.2 (version node URFS_SYSFRONT_1), for the preload only. */
/* 1: the front is on (the filter installed here, or inherited across exec: a probe
 * trapped); 0: not wanted (the kernel's io_uring works and URING_EMULATE is not 1);
 * -errno: the filter could not be installed. The SIGSYS handler must be in place. */
int urfs_sysfront_start(void);
/* Serves trapped system call nr with arguments a[0..5]: its return value, -errno on error. */
long urfs_sysfront_call(long nr, const long *a);
/* This process is about to exec: its requests on rings shared across fork are
 * cancelled (-ECANCELED CQEs), as the kernel cancels a task's at exec. Never
 * from a vfork()ed child (it would act on the parent's rings). */
void urfs_sysfront_exec(void);

#endif
