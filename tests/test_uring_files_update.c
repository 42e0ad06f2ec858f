/* SPDX-License-Identifier: MIT */
/* Description: registered-file updates answer as the kernel's ring (6.18) does, through
 * io_uring_register_files_update and IORING_OP_FILES_UPDATE, in all three modes: an update
 * whose first fd cannot be installed (a number that is not open) answers -EBADF and leaves
 * that slot empty (the kernel drops the slot's file before it looks at the new fd); one whose
 * second cannot answers 1, the first slot holding its new file and the second empty; a range
 * past the table's end answers -EINVAL and changes nothing; slots not named keep their files; a
 * tag given with IORING_REGISTER_FILES_SKIP answers -EINVAL (the count done before it). */
#include "test_uring.h"
#include <fcntl.h>

static int closed_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ(close(fd), 0);
	return fd;
}

/* A pipe whose read end holds byte c: its read end. */
static int pipe_with(char c)
{
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(write(p[1], &c, 1), 1);
	close(p[1]);
	return p[0];
}

/* Read one byte from registered slot idx: the byte, or the CQE's error. */
static int read_slot(struct io_uring *ring, int idx)
{
	char c = 0;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_read(sqe, idx, &c, 1, 0);
	sqe->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe cqe;
	tu_next(ring, &cqe);
	return cqe.res == 1 ? c : cqe.res;
}

/* FILES_UPDATE as an SQE: its CQE's result. */
static int op_update(struct io_uring *ring, int *fds, unsigned nr, int off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	io_uring_prep_files_update(sqe, fds, nr, off);
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe cqe;
	tu_next(ring, &cqe);
	return cqe.res;
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	for (int via_op = 0; via_op < 2; via_op++) {
		const char *how = via_op ? "FILES_UPDATE" : "register_files_update";
		int files[3] = { pipe_with('a'), pipe_with('b'), pipe_with('z') };
		CHECK_EQ(io_uring_register_files(&ring, files, 3), 0);
		int bad[1] = { closed_fd() };
		int res = via_op ? op_update(&ring, bad, 1, 0) : io_uring_register_files_update(&ring, 0, bad, 1);
		if (res != -EBADF)
			FAIL("%s: an update whose only fd is not open: %d, expected -EBADF", how, res);
		if ((res = read_slot(&ring, 0)) != -EBADF)
			FAIL("%s: the slot of a failed update reads %d, expected empty (-EBADF)", how, res);
		CHECK_EQ(read_slot(&ring, 1), 'b');
		int two[2];
		two[0] = pipe_with('c');
		two[1] = closed_fd();           /* after: a number no pipe took */
		res = via_op ? op_update(&ring, two, 2, 1) : io_uring_register_files_update(&ring, 1, two, 2);
		if (res != 1)
			FAIL("%s: an update whose second fd is not open: %d, expected 1", how, res);
		CHECK_EQ(read_slot(&ring, 1), 'c');
		if ((res = read_slot(&ring, 2)) != -EBADF)
			FAIL("%s: the second slot of a half-failed update reads %d, expected empty", how, res);
		int over[2];
		over[0] = pipe_with('d');
		over[1] = pipe_with('e');
		res = via_op ? op_update(&ring, over, 2, 2) : io_uring_register_files_update(&ring, 2, over, 2);
		if (res != -EINVAL)
			FAIL("%s: an update past the table's end: %d, expected -EINVAL", how, res);
		CHECK_EQ(read_slot(&ring, 2), -EBADF);
		if (!via_op) {
			/* a tag on a slot that is skipped or emptied: -EINVAL, at that entry */
			int skip[2] = { over[0], IORING_REGISTER_FILES_SKIP };
			__u64 tags[2] = { 0, 7 };
			res = io_uring_register_files_update_tag(&ring, 1, skip + 1, tags + 1, 1);
			if (res != -EINVAL)
				FAIL("a skipped slot with a tag: %d, expected -EINVAL", res);
			CHECK_EQ(io_uring_register_files_update_tag(&ring, 1, skip, tags, 2), 1);
			CHECK_EQ(read_slot(&ring, 1), 'd');
		}
		CHECK_EQ(io_uring_unregister_files(&ring), 0);
		for (int k = 0; k < 3; k++)
			close(files[k]);
		close(two[0]);
		close(over[0]);
		close(over[1]);
	}
	io_uring_queue_exit(&ring);
}

int main(void)
{
	return tu_uring_main(body);
}
