/* SPDX-License-Identifier: MIT */
/* Description: through the system-call front (issue 30), a ring made when the program holds
 * every number of the front's range (SYSFRONT_FD_LO..HI: the filter traps mmap and close of
 * those only) still works as the kernel's: its number is outside the range and a filter of its
 * own traps mmap and close of it, so the program's mmap of IORING_OFF_SQ_RING gives the ring's
 * memory (liburing's test/poll-many, linked with liburing.a, opens 10,000 pipes first: its mmap
 * was -ENODEV, an eventfd's answer), its close ends the ring (-EBADF after), and a file that
 * gets that number back maps as a file. Run under the front by tu_front_main
 * (test_uring_front.h). Must never: pass when the front did not serve the calls.
 */
#include "test_uring.h"
#include "test_uring_front.h"
#include <fcntl.h>
#include <sys/mman.h>
#include "../src/uring/sysfront.h"

static int front_body(void)
{
	int null = open("/dev/null", O_RDONLY);
	CHECK(null >= 0);
	for (int n = SYSFRONT_FD_LO; n < SYSFRONT_FD_HI; n++)   /* the range, all taken */
		if (fcntl(n, F_GETFD) < 0)
			CHECK_EQ(dup2(null, n), n);
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	CHECK(fd >= SYSFRONT_FD_HI || (fd >= 0 && fd < SYSFRONT_FD_LO));
	CHECK_EQ(tu_ring_is_emulated(fd), 1);
	size_t len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, IORING_OFF_SQ_RING);
	CHECK(m != MAP_FAILED);
	CHECK_EQ(*(unsigned *)(m + p.sq_off.ring_entries), p.sq_entries);
	CHECK_EQ(munmap(m, len), 0);
	CHECK_EQ(close(fd), 0);
	errno = 0;
	CHECK_EQ(syscall(__NR_io_uring_register, fd, IORING_REGISTER_PROBE, NULL, 0), -1);
	CHECK_EQ(errno, EBADF);

	/* a file at that number again: mapped as the file */
	char path[] = "/tmp/urfs-front-range-XXXXXX";
	int t = mkstemp(path);
	CHECK(t >= 0);
	unlink(path);
	CHECK_EQ(write(t, "ring", 4), 4);
	if (t != fd) {   /* mkstemp may have taken that number itself */
		CHECK_EQ(dup2(t, fd), fd);
		close(t);
	}
	char *f = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED)
		FAIL("mmap of the file at %d: %s", fd, strerror(errno));
	CHECK(memcmp(f, "ring", 4) == 0);
	munmap(f, 4096);
	CHECK_EQ(close(fd), 0);
	return 0;
}

int main(int argc, char **argv)
{
	return tu_front_main(argc, argv, front_body);
}
