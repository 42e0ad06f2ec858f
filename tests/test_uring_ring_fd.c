/* SPDX-License-Identifier: MIT */
/* Description: io_uring_register_ring_fd and io_uring_unregister_ring_fd on three rings of one
 * thread, in all three modes: each registers (1; again: -EEXIST), the kernel's rings each get a
 * registered index of their own (the drop-in asks the kernel for any free slot, not slot 0, which
 * the first ring already holds: -EBUSY), a NOP through each ring then works, each unregisters (1;
 * again: -EINVAL) and a NOP still works through its plain fd. */
#include "test_uring.h"

static void nop(struct io_uring *ring, uint64_t ud)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	CHECK(s != NULL);
	io_uring_prep_nop(s);
	s->user_data = ud;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe cqe;
	tu_reap(ring, &cqe, 1);
	CHECK_EQ(cqe.user_data, ud);
	CHECK_EQ(cqe.res, 0);
}

static void body(void)
{
	struct io_uring r[3];
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(io_uring_queue_init(4, &r[i], 0), 0);
		tu_uring_check_mode(&r[i]);
	}
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(io_uring_register_ring_fd(&r[i]), 1);
		CHECK_EQ(io_uring_register_ring_fd(&r[i]), -EEXIST);
	}
	if (tu_mode == TU_KERNEL) {     /* registered indices, one each */
		CHECK(r[0].enter_ring_fd != r[1].enter_ring_fd && r[1].enter_ring_fd != r[2].enter_ring_fd &&
		      r[0].enter_ring_fd != r[2].enter_ring_fd);
		for (int i = 0; i < 3; i++)
			CHECK(r[i].enter_ring_fd != r[i].ring_fd);
	}
	for (int i = 0; i < 3; i++)
		nop(&r[i], 10 + (uint64_t)i);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(io_uring_unregister_ring_fd(&r[i]), 1);
		CHECK_EQ(io_uring_unregister_ring_fd(&r[i]), -EINVAL);
		CHECK_EQ(r[i].enter_ring_fd, r[i].ring_fd);
		nop(&r[i], 20 + (uint64_t)i);
		io_uring_queue_exit(&r[i]);
	}
}

int main(void)
{
	return tu_uring_main(body);
}
