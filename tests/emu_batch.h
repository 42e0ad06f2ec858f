/* SPDX-License-Identifier: MIT */
/* emu_batch.h: for the drop-in's tests of batched cached reads (test_uring_batch_*.c): run a
 * test's body once per URING_EMU_BATCH setting, and the file contents they read.
 * Header only, after test_uring.h. */
#ifndef TU_EMU_BATCH_H
#define TU_EMU_BATCH_H

#include "test_uring.h"

/* fn(-1) on the kernel's ring; emulated, fn(1) with URING_EMU_BATCH=1 and fn(0) with 0,
 * each in a process of its own (the setting is read once per process). */
static inline void tu_each_batch_setting(void (*fn)(int want))
{
	if (tu_mode == TU_KERNEL) {
		fn(-1);
		return;
	}
	for (int want = 1; want >= 0; want--) {
		fflush(stdout);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("URING_EMU_BATCH", want ? "1" : "0", 1);
			fn(want);
			exit(0);
		}
		int st;
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			FAIL("URING_EMU_BATCH=%d failed (status 0x%x)", want, st);
	}
}

/* n bytes no two pages of which are alike. */
static inline uint8_t *tu_batch_pattern(size_t n)
{
	uint8_t *p = malloc(n);
	CHECK(p != NULL);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + (i >> 9));
	return p;
}

/* An unlinked file in the test's directory holding src[0..n): its fd. */
static inline int tu_batch_file(const uint8_t *src, size_t n)
{
	char path[] = "uring_batch.XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(pwrite(fd, src, n, 0), (long)n);
	return fd;
}

/* The next CQE of a batch whose user_data are 0..n-1, each once (seen): its index; *res its
 * result. */
static inline int tu_batch_next(struct io_uring *ring, int *seen, int n, int *res)
{
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_wait_cqe(ring, &cqe), 0);
	int i = (int)cqe->user_data;
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	CHECK(i >= 0 && i < n && !seen[i]);
	seen[i] = 1;
	return i;
}

#endif
