/* SPDX-License-Identifier: MIT */
/* Description: a submission of 200 cached reads (READs and READVs of whole pages at scattered
 * offsets) gives each its page, in all three modes. Emulated with URING_EMU_BATCH=1, the fast
 * path reads them 64 to an io_submit, as the kernel's ring takes 64 SQEs of one enter: the
 * submitting thread makes at most 4 io_submit calls for the 200 (counted with the
 * syscalls:sys_enter_io_submit tracepoint, perf_event_open on this thread alone; batches of 32
 * would take 7) and none when batches are off (a preadv2 each); their CQEs come in SQ order,
 * as the fast path posts them. Where the tracepoint cannot be had (no tracefs, perf refused)
 * the count is a skipped part. The fast path's arrays (about 20 KiB a ring) go with their
 * ring: 300 rings made, used for a batch and torn down grow the heap by less than 2 MiB. */
#include "test_uring.h"
#include "emu_batch.h"
#include "parts.h"
#include <fcntl.h>
#include <malloc.h>
#include <linux/perf_event.h>
#include <sys/uio.h>

#define FSZ (1024 * 1024)
#define N 200

static uint8_t *src;
static uint8_t buf[N][4096];

static uint64_t off_of(int i)
{
	return (uint64_t)((i * 97) % (FSZ / 4096)) * 4096;
}

/* A counter of this thread's io_submit calls, or -1 with why. */
static int io_submit_counter(char *why, size_t n)
{
	const char *path = "/sys/kernel/tracing/events/syscalls/sys_enter_io_submit/id";
	FILE *f = fopen(path, "r");
	int id = -1;
	if (!f || fscanf(f, "%d", &id) != 1) {
		snprintf(why, n, "%s: %s", path, f ? "unreadable" : strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = (uint64_t)id;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		snprintf(why, n, "perf_event_open: %s", strerror(errno));
	return fd;
}

static long count_of(int fd)
{
	uint64_t v;
	CHECK_EQ(read(fd, &v, sizeof(v)), (long)sizeof(v));
	return (long)v;
}

/* want: 1 batches on, 0 off, -1 not counted (the kernel's ring) */
static void many(int want)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(256, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int fd = tu_batch_file(src, FSZ);
	char why[200];
	int cfd = want >= 0 ? io_submit_counter(why, sizeof(why)) : -1;
	const char *label = "a batch of 200 cached reads makes at most 4 io_submit calls";
	if (want >= 0) {
		if (cfd < 0)
			tu_part_skip("the io_submit tracepoint", label, why);
		else
			tu_part_ran("the io_submit tracepoint", label);
	}
	static struct iovec iov[N];
	for (int round = 0; round < 3; round++) {   /* round 0 warms up (the batch cost probe) */
		memset(buf, 0xEE, sizeof(buf));
		for (int i = 0; i < N; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			CHECK(sqe != NULL);
			if (i % 5 == 2) {
				iov[i] = (struct iovec){ buf[i], 4096 };
				io_uring_prep_readv(sqe, fd, &iov[i], 1, off_of(i));
			} else {
				io_uring_prep_read(sqe, fd, buf[i], 4096, off_of(i));
			}
			sqe->user_data = (uint64_t)i;
		}
		long c0 = cfd >= 0 ? count_of(cfd) : 0;
		CHECK_EQ(io_uring_submit(&ring), N);
		long calls = cfd >= 0 ? count_of(cfd) - c0 : -1;
		int seen[N] = { 0 }, next = 0, in_order = 1;
		for (int k = 0; k < N; k++) {
			int res, i = tu_batch_next(&ring, seen, N, &res);
			in_order &= i == next++;
			if (res != 4096)
				FAIL("read %d (round %d): %d, expected 4096", i, round, res);
			if (memcmp(buf[i], src + off_of(i), 4096) != 0)
				FAIL("read %d (round %d): not the page at %llu", i, round,
				     (unsigned long long)off_of(i));
		}
		if (round == 0 || want < 0)
			continue;
		if (!in_order)
			FAIL("round %d: the CQEs of the cached reads are not in SQ order", round);
		if (calls < 0)
			continue;
		printf("round %d, batches %s: %ld io_submit calls for %d cached reads\n", round,
		       want ? "on" : "off", calls, N);
		/* the counter's own read enters no io_submit */
		if (want && (calls < 1 || calls > 4))
			FAIL("batches on: %ld io_submit calls for %d cached reads (at most 4, 64 a call)",
			     calls, N);
		if (!want && calls != 0)
			FAIL("batches off: %ld io_submit calls (a preadv2 each expected)", calls);
	}
	if (cfd >= 0)
		close(cfd);
	close(fd);
	io_uring_queue_exit(&ring);
}

/* 300 rings, each reading a batch of two, torn down: the heap in use grows by less than
 * 2 MiB (the arrays of the fast path kept would be 6 MiB). */
static void rings_go(void)
{
	int fd = tu_batch_file(src, 8192);
	size_t before = 0;
	for (int k = 0; k < 301; k++) {
		if (k == 1)
			before = mallinfo2().uordblks;
		struct io_uring ring;
		CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
		for (int i = 0; i < 2; i++)
			io_uring_prep_read(io_uring_get_sqe(&ring), fd, buf[i], 4096, (uint64_t)i * 4096);
		CHECK_EQ(io_uring_submit_and_wait(&ring, 2), 2);
		io_uring_queue_exit(&ring);
	}
	size_t after = mallinfo2().uordblks;
	if (after > before + (2u << 20))
		FAIL("300 rings left %zu bytes more in the heap", after - before);
	close(fd);
}

static void many_and_rings(int want)
{
	many(want);
	if (want == 1)
		rings_go();
}

static void body(void)
{
	tu_each_batch_setting(many_and_rings);
}

int main(void)
{
	src = tu_batch_pattern(FSZ);
	return tu_uring_main(body);
}
