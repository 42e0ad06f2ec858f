/* Description: io_uring_register_sync_cancel of a request that is running (an IOSQE_ASYNC
 * OPENAT of a FIFO, waiting in a worker for a writer) does not return -EALREADY: as the
 * kernel's, it waits until the request is gone and returns 0, its CQE already posted (a
 * program may free the request's memory then). The kernel interrupts the open (its CQE an
 * error); the emulation cannot interrupt a system call and waits for it to end: here a
 * writer that comes 150 ms later. With a timeout, the emulation gives -ETIME while it still
 * runs ({0, 0}: at once), the request untouched until its writer comes (DROPIN.md: ASYNC_CANCEL, Limits). */
#include "test_uring.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

static char fifo[64];

static uint64_t ms_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Some thread of this process is in system call nr (/proc/self/task/T/syscall)? */
static int in_syscall(long nr)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0;
	CHECK(d != NULL);
	while (!found && (e = readdir(d))) {
		char p[300], line[64];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "/proc/self/task/%s/syscall", e->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof line, f) && strtol(line, NULL, 10) == nr)
			found = 1;
		fclose(f);
	}
	closedir(d);
	return found;
}

static void *writer(void *arg)
{
	usleep((useconds_t)(uintptr_t)arg * 1000u);
	/* no reader any more (the kernel interrupted the open): -ENXIO, fine */
	int w = open(fifo, O_WRONLY | O_NONBLOCK);
	return (void *)(intptr_t)w;
}

/* Submit the blocking open and return once it runs (emulated: a worker is in openat2). */
static void start_open(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_openat(sqe, AT_FDCWD, fifo, O_RDONLY, 0);
	sqe->flags |= IOSQE_ASYNC;
	sqe->user_data = ud;
	CHECK_EQ(io_uring_submit(ring), 1);
	if (tu_mode == TU_KERNEL) {
		usleep(50000);            /* io-wq's thread: no telling when it is in the open */
		return;
	}
	for (int i = 0; !in_syscall(SYS_openat2); i++) {
		if (i == 5000)
			FAIL("the worker never started the open");
		usleep(1000);
	}
}

static void finish_open(struct io_uring *ring, uint64_t ud, pthread_t t)
{
	void *w;
	struct io_uring_cqe c;
	CHECK_EQ(pthread_join(t, &w), 0);
	tu_next(ring, &c);
	CHECK_EQ(c.user_data, ud);
	if (c.res >= 0)
		close(c.res);
	if ((intptr_t)w >= 0)
		close((int)(intptr_t)w);
}

static void body(void)
{
	struct io_uring ring;
	int r = io_uring_queue_init(8, &ring, 0);
	if (r < 0)
		FAIL("queue_init: %s", strerror(-r));
	tu_uring_check_mode(&ring);
	char dir[] = "/tmp/tu_sync_cancelXXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	CHECK_EQ(mkfifo(fifo, 0600), 0);
	int emulated = tu_mode != TU_KERNEL;

	/* No timeout: it returns once the open has ended, its CQE there at once. */
	pthread_t t;
	start_open(&ring, 1);
	CHECK_EQ(pthread_create(&t, NULL, writer, (void *)(uintptr_t)150), 0);
	struct io_uring_sync_cancel_reg reg;
	memset(&reg, 0, sizeof reg);
	reg.addr = 1;
	reg.fd = -1;
	reg.timeout.tv_sec = -1;
	reg.timeout.tv_nsec = -1;
	uint64_t t0 = ms_now();
	CHECK_EQ(io_uring_register_sync_cancel(&ring, &reg), 0);
	uint64_t took = ms_now() - t0;
	struct io_uring_cqe *cqe;
	CHECK_EQ(io_uring_peek_cqe(&ring, &cqe), 0);      /* posted before it returned */
	CHECK_EQ(cqe->user_data, 1);
	if (emulated) {
		CHECK(cqe->res >= 0);                      /* the open ended: the writer came */
		if (took < 100)
			FAIL("sync cancel returned after %llu ms, before the writer came",
			     (unsigned long long)took);
	} else {
		CHECK(cqe->res < 0);                       /* the kernel interrupted it */
	}
	if (cqe->res >= 0)
		close(cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	void *w;
	CHECK_EQ(pthread_join(t, &w), 0);
	if ((intptr_t)w >= 0)
		close((int)(intptr_t)w);

	/* A timeout the open outlasts, then none at all ({0, 0}). */
	for (int k = 0; k < 2; k++) {
		start_open(&ring, 2);
		/* the writer comes late: a wait that ignored the timeout would end with 0 */
		CHECK_EQ(pthread_create(&t, NULL, writer, (void *)(uintptr_t)400), 0);
		reg.addr = 2;
		reg.timeout.tv_sec = 0;
		reg.timeout.tv_nsec = k == 0 ? 50000000 : 0;
		r = io_uring_register_sync_cancel(&ring, &reg);
		if (emulated) {
			CHECK_EQ(r, -ETIME);
			tu_none(&ring);                    /* still running, not cancelled */
		} else if (r != -ETIME) {
			CHECK_EQ(r, 0);                    /* the kernel interrupted it in time */
		}
		finish_open(&ring, 2, t);
	}

	/* Nothing by that user_data: -ENOENT, as before any wait. */
	reg.addr = 3;
	CHECK_EQ(io_uring_register_sync_cancel(&ring, &reg), -ENOENT);

	io_uring_queue_exit(&ring);
	unlink(fifo);
	rmdir(dir);
}

int main(void)
{
	return tu_uring_main(body);
}
