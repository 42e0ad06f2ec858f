/* Description: IORING_REGISTER_SYNC_CANCEL waits for a request it finds being tried by a thread
 * of the drop-in (test_uring_cancel_trying), but not for one that would not end while the caller
 * waits: emulated, it answers -EALREADY at once, as before, for an O_DIRECT READ in the kernel's
 * AIO (its completion is reaped only when the program enters the ring) and for a SPLICE from an
 * empty pipe blocked on a worker (the kernel's io-wq interrupts such a call; a thread of the
 * drop-in cannot be). Without that exception each waited out its 2 s timeout (-ETIME), and for
 * good without one. The kernel's ring gives answers of its own: checked only that the cancel
 * returns and the requests complete. Skips where O_DIRECT is refused. */
#include "test_uring.h"
#include <fcntl.h>
#include <time.h>

static int sync_cancel(struct io_uring *ring, uint64_t ud, double *secs)
{
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.addr = ud;
	reg.fd = -1;
	reg.timeout.tv_sec = 2;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int r = io_uring_register_sync_cancel(ring, &reg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return r;
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	int emulated = tu_ring_is_emulated(ring.ring_fd);
	double secs;

	/* an O_DIRECT read: in the AIO from its submit until the ring is entered to reap */
	int fd = open("sync_cancel_stuck.dat", O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(ftruncate(fd, 65536), 0);
	void *buf;
	CHECK_EQ(posix_memalign(&buf, 4096, 4096), 0);
	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_read(s, fd, buf, 4096, 4096);
	s->user_data = 1;
	CHECK_EQ(io_uring_submit(&ring), 1);
	int r = sync_cancel(&ring, 1, &secs);
	if (emulated && (r != -EALREADY || secs > 1.0))
		FAIL("sync cancel of a read in AIO: %d after %.3f s (not -EALREADY at once)", r, secs);
	struct io_uring_cqe c = tu_wait_at(&ring, 5, __LINE__);
	if (c.user_data != 1 || (emulated && c.res != 4096))
		FAIL("the read: user_data %llu res %d", (unsigned long long)c.user_data, c.res);
	tu_none(&ring);

	/* a SPLICE from an empty pipe: blocks on a worker until the pipe has a byte */
	int a[2], b[2];
	CHECK_EQ(pipe(a), 0);
	CHECK_EQ(pipe(b), 0);
	s = tu_sqe(&ring);
	io_uring_prep_splice(s, a[0], -1, b[1], -1, 1, 0);
	s->user_data = 2;
	CHECK_EQ(io_uring_submit(&ring), 1);
	usleep(20000);                         /* a worker takes it meanwhile */
	r = sync_cancel(&ring, 2, &secs);
	/* taken by then: -EALREADY at once; still queued: cancelled (0) */
	if (emulated && ((r != -EALREADY && r != 0) || secs > 1.0))
		FAIL("sync cancel of a splice on a worker: %d after %.3f s (not -EALREADY at once)", r, secs);
	CHECK_EQ(write(a[1], "x", 1), 1);     /* lets a splice still running end */
	c = tu_wait_at(&ring, 5, __LINE__);
	if (c.user_data != 2 || (emulated && c.res != (r == 0 ? -ECANCELED : 1)))
		FAIL("the splice: user_data %llu res %d (cancel %d)", (unsigned long long)c.user_data,
		     c.res, r);
	tu_none(&ring);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	free(buf);
	close(fd);
	unlink("sync_cancel_stuck.dat");
	io_uring_queue_exit(&ring);
}

int main(void)
{
	int fd = open("sync_cancel_stuck.dat", O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0) {
		printf("O_DIRECT refused here: %s\n", strerror(errno));
		return 77;
	}
	close(fd);
	return tu_uring_main(body);
}
