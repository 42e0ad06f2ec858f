/* SPDX-License-Identifier: MIT */
/* Description: a request that needs a worker thread (FSYNC), when no worker runs and none can
 * be started (pthread_create fails: this program's own pthread_create, which the drop-in's
 * call reaches first, answers EAGAIN while told to), ends -ECANCELED, a soft link after it
 * too, as the kernel's io-wq cancels the work it cannot give a first worker; it neither hangs
 * nor runs in the submitting thread. An EAGAIN that passes (3 refusals) is tried through, as
 * the kernel retries it. With a worker already there (idle), the same request runs. A READ
 * whose first page was cached and whose rest needed a worker reports the bytes it read. The
 * kernel's ring (its own threads) runs them all. */
#include "test_uring.h"
#include "parts.h"
#include <fcntl.h>
#include <sys/mman.h>

static int refuse_threads;     /* refuse every thread */
static int refuse_next;        /* refuse the next ones, this many */

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (__atomic_load_n(&refuse_threads, __ATOMIC_RELAXED))
		return EAGAIN;
	int n = __atomic_load_n(&refuse_next, __ATOMIC_RELAXED);
	while (n > 0 && !__atomic_compare_exchange_n(&refuse_next, &n, n - 1, 0, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
	if (n > 0)
		return EAGAIN;
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
	return real(t, a, fn, arg);
}

static void fsync_link(struct io_uring *ring, int fd, struct io_uring_cqe *c)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_fsync(sqe, fd, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 1;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = 2;
	CHECK_EQ(io_uring_submit(ring), 2);
	tu_next(ring, &c[0]);
	tu_next(ring, &c[1]);
	CHECK_EQ(c[0].user_data, 1);
	CHECK_EQ(c[1].user_data, 2);
}

static void body(void)
{
	struct io_uring ring;
	struct io_uring_cqe c[2];
	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&ring);
	char path[] = "/tmp/tu_wq_nothreadXXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(write(fd, "x", 1), 1);

	/* No worker yet, none can start: cancelled, the link after it too. */
	__atomic_store_n(&refuse_threads, 1, __ATOMIC_RELAXED);
	fsync_link(&ring, fd, c);
	__atomic_store_n(&refuse_threads, 0, __ATOMIC_RELAXED);
	if (tu_mode == TU_KERNEL) {
		CHECK_EQ(c[0].res, 0);
		CHECK_EQ(c[1].res, 0);
	} else {
		CHECK_EQ(c[0].res, -ECANCELED);
		CHECK_EQ(c[1].res, -ECANCELED);
	}

	/* A READ of 1 MiB whose first page is cached, the rest not: the first page is read
	 * inline, the rest needs a worker; still none runs or can start: the short count, not
	 * -ECANCELED. (The inline miss starts the kernel's I/O for the rest: a retry that finds
	 * it all done already reads it all, and the round is run again, up to 10 times.) */
	enum { LEN = 1 << 20 };
	static char data[LEN], buf[LEN];
	memset(data, 'a', sizeof data);
	CHECK_EQ(pwrite(fd, data, LEN, 0), LEN);
	CHECK_EQ(fsync(fd), 0);
	CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);   /* no readahead past page 1 */
	int got = LEN, split = 0;
	for (int round = 0; round < 10 && got == LEN; round++) {
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(pread(fd, buf, 4096, 0), 4096);
		void *map = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
		CHECK(map != MAP_FAILED);
		static unsigned char res[LEN / 4096];
		CHECK_EQ(mincore(map, LEN, res), 0);
		munmap(map, LEN);
		split = (res[0] & 1) && !(res[1] & 1);
		if (tu_mode != TU_KERNEL && !split)
			break;
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_read(sqe, fd, buf, LEN, 0);
		__atomic_store_n(&refuse_threads, 1, __ATOMIC_RELAXED);
		CHECK_EQ(io_uring_submit(&ring), 1);
		__atomic_store_n(&refuse_threads, 0, __ATOMIC_RELAXED);
		tu_next(&ring, &c[0]);
		got = c[0].res;
		if (tu_mode == TU_KERNEL)
			break;
		if (got != LEN && (got < 4096 || got % 4096))
			FAIL("a short read's rest with no worker: res %d, expected the bytes read inline", got);
	}
	if (tu_mode == TU_KERNEL)
		CHECK_EQ(got, LEN);
	else if (!split)
		tu_part_skip("page cache", "a short read's rest with no worker",
			     "the file system kept the second page cached");
	else if (got == LEN)
		FAIL("a short read's rest with no worker: each of 10 rounds read it all inline");

	/* A passing refusal (EAGAIN three times, then threads again) is tried through: it runs
	 * (a worker starts and stays idle for a while). */
	__atomic_store_n(&refuse_next, 3, __ATOMIC_RELAXED);
	fsync_link(&ring, fd, c);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(c[1].res, 0);
	if (tu_mode != TU_KERNEL)
		CHECK_EQ(__atomic_load_n(&refuse_next, __ATOMIC_RELAXED), 0);   /* all three were tried */
	__atomic_store_n(&refuse_next, 0, __ATOMIC_RELAXED);

	/* That idle worker takes the next one though no thread can start. */
	__atomic_store_n(&refuse_threads, 1, __ATOMIC_RELAXED);
	fsync_link(&ring, fd, c);
	__atomic_store_n(&refuse_threads, 0, __ATOMIC_RELAXED);
	CHECK_EQ(c[0].res, 0);
	CHECK_EQ(c[1].res, 0);

	close(fd);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
