/* SPDX-License-Identifier: MIT */
/*
 * crash_trace.h - the trace format of the file-device crash layer, shared by
 * its recorder (tests/lib/crashrec.c, LD_PRELOADed into the program under
 * test) and its replayer (tests/test_sfs_crash_file.c). A trace is a list of
 * events, each a struct ct_event followed by len bytes of data for a write:
 *   CT_WRITE  bytes written to the image at off (pwrite, or an O_DIRECT AIO write)
 *   CT_SYNC   fdatasync/fsync of the image returned 0
 *   CT_PUNCH  [off, off+len) punched (reads as zeros)
 *   CT_MARK   a claim by the scenario, from here on: the file named by the
 *             len bytes of data holds at least off bytes of its pattern
 *             (off = CT_ABSENT: the file does not exist; CT_ANY: no claim)
 * Must never depend on anything but libc: the recorder is loaded into any
 * program.
 */
#ifndef CRASH_TRACE_H
#define CRASH_TRACE_H

#include <stdint.h>

#define CT_MAGIC  0x31525443u          /* "CTR1" */
#define CT_ABSENT UINT64_MAX
#define CT_ANY    (UINT64_MAX - 1)    /* no claim (a removal is under way) */
enum { CT_WRITE = 1, CT_SYNC, CT_PUNCH, CT_MARK };

struct ct_event {
	uint32_t magic;
	uint32_t type;
	uint32_t pid;
	uint32_t pad;
	uint64_t off;
	uint64_t len;
};

#endif
