/* SPDX-License-Identifier: MIT */
/* Description: through the system-call front (issue 30), a ring lives while any number of the
 * process names it, as the kernel's ring lives while a file references it: a ring made by a raw
 * io_uring_setup, dup()ed, then its first number closed (a trapped close), still answers on the
 * dup (IORING_REGISTER_PROBE: 0), although the library never saw the dup before the close
 * (liburing's test/sq-poll-dup crashed: the close had unmapped the ring); closing the dup too
 * ends it (-EBADF on that number). Run under the front by tu_front_main (test_uring_front.h).
 * Must never: pass when the front did not serve the calls (the ring fd must be an eventfd in the
 * front's range).
 */
#include "test_uring.h"
#include "test_uring_front.h"
#include "../src/uring/sysfront.h"

static int front_body(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	CHECK(fd >= SYSFRONT_FD_LO && fd < SYSFRONT_FD_HI);
	CHECK_EQ(tu_ring_is_emulated(fd), 1);
	int d = dup(fd);
	CHECK(d >= 0);
	CHECK_EQ(close(fd), 0);
	struct io_uring_probe *probe = calloc(1, sizeof(*probe) + 256 * sizeof(struct io_uring_probe_op));
	CHECK(probe != NULL);
	CHECK_EQ(syscall(__NR_io_uring_register, d, IORING_REGISTER_PROBE, probe, 256), 0);
	CHECK(probe->ops_len > 0);
	CHECK_EQ(close(d), 0);
	errno = 0;
	CHECK_EQ(syscall(__NR_io_uring_register, d, IORING_REGISTER_PROBE, probe, 256), -1);
	CHECK_EQ(errno, EBADF);
	free(probe);
	return 0;
}

int main(int argc, char **argv)
{
	return tu_front_main(argc, argv, front_body);
}
