/* SPDX-License-Identifier: MIT */
/* Description: requests that fail fail as the kernel's ring fails them, in all three modes:
 * READ/WRITE with RWF_HIPRI on a ring without IOPOLL
 * is -EINVAL and with an RWF_ flag no kernel knows -EOPNOTSUPP, both after the file's mode
 * (-EBADF for a read-only fd written); a READV whose iovec array is unreadable is -EFAULT even on
 * a bad fd; a read of a socket at an offset above 0 is -ESPIPE (a pipe's offset is ignored);
 * with IOSQE_ASYNC a read of a pipe's write end is -EBADF and a RECV of a pipe -ENOTSOCK at once
 * (a RECV of a pipe with IOSQE_BUFFER_SELECT is -ENOTSOCK, with or without IOSQE_ASYNC, with no
 * buffer provided too, and takes none; a READ into a provided buffer is -ENOBUFS, none left, before
 * the file's mode, its flags and offset are looked at, a READV's one iovec is read before the fd);
 * both hold for an fd number the emulation has seen as a file or a socket before (the program
 * closed it and got it back for a socket, then a pipe);
 * an empty path is -ENOENT when it is taken (UNLINKAT's bad flags -EINVAL before it), before the other path is looked up or read; OPENAT with O_DIRECTORY and a
 * mode opens the directory (the mode is ignored, not -EINVAL); a SPLICE into a pipe's read end
 * with an offset on the other pipe is -EBADF, not -ESPIPE; a POLL_ADD of a file that cannot be
 * polled with none of its events ready is -EINVAL, and POLLRDHUP is reported unasked; a
 * PROVIDE_BUFFERS of none is -E2BIG, of length 0 -EINVAL, of a NULL address fine; a WRITE to a socket whose peer has
 * gone raises SIGPIPE in the submitting thread, a SEND does not; a field an op does not use set is
 * -EINVAL before the fd is looked at (UNLINKAT's off, SHUTDOWN's buf_index, ACCEPT's unknown flags and ioprio bits,
 * NOP's ioprio; RECVMSG's and SENDMSG's off and splice_fd_in, OPENAT2's buf_index, CONNECT's len, flags,
 * buf_index and splice_fd_in, SOCKET's flags, buf_index and addr, the addr of FSYNC, SYNC_FILE_RANGE,
 * POLL_ADD, SHUTDOWN and TEE, a TIMEOUT's or LINK_TIMEOUT's addr3 and __pad2; a direct ACCEPT, OPENAT
 * or OPENAT2 with close-on-exec), a read's ioprio class 0 with a level -EINVAL, with only a hint fine (best-effort with a level too), a class above 3 -EINVAL; MADVISE takes
 * its length from off, FADVISE from addr, when set; a multishot POLL_ADD of a file that cannot be
 * polled with none of its events ready is -EINVAL; IOSQE_BUFFER_SELECT on an op that takes no
 * provided buffer is -EOPNOTSUPP (before the personality); an ASYNC_CANCEL or sync cancel of ALL
 * or ANY that finds nothing is 0, of one -ENOENT (its off -EINVAL, by fd with ANY -EINVAL, by
 * an fd not open or a registered file not there -EBADF); IOSQE_FIXED_FILE with no table is
 * ignored by ops that take no file (TIMEOUT_REMOVE: -EINVAL); EPOLL_CTL reads its event (-EFAULT) before it
 * looks at the epoll fd (-EBADF); a registered buffer with a NULL base (an empty slot) may not
 * carry a tag (-EINVAL), untagged it is fine; a registered-buffer update whose iovec or tag
 * cannot be read is -EFAULT (a tag after one that can: the count updated before it), with no table
 * -ENXIO; an OPENAT2 open_how larger than the kernel's whose tail runs into an unreadable page is
 * -EFAULT, with a byte of it not zero -E2BIG; io-wq's CPU affinity is set to this process's CPUs
 * and taken back (io_uring_unregister_iowq_aff: 0); registering more files than RLIMIT_NOFILE is
 * -EMFILE, and io_uring_register_files raises the soft limit and succeeds (where the hard limit
 * allows 128 files; else that step counts a SKIP-PART); io_uring_queue_init under a descriptor
 * limit too low for it is -EMFILE. */
#include "test_uring.h"
#include "parts.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>

static volatile sig_atomic_t sigpipes;
static int have_odirect;           /* O_DIRECT in /tmp: probed once, in main */
static struct __kernel_timespec zts = { 0, 1000000 };
static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

/* Submit the SQE prepared, return its CQE's res. */
static int32_t res(struct io_uring *ring)
{
	CHECK_EQ(io_uring_submit(ring), 1);
	struct io_uring_cqe c;
	tu_next(ring, &c);
	return c.res;
}

/* Number n, closed through the ring (which forgets what it knew of it), names src's file. */
static void ring_renumber(struct io_uring *ring, int n, int src)
{
	io_uring_prep_close(tu_sqe(ring), n);
	CHECK_EQ(res(ring), 0);
	CHECK_EQ(dup2(src, n), n);
}

static void body(void)
{
	struct io_uring ring;
	CHECK_EQ(io_uring_queue_init(8, &ring, 0), 0);
	tu_uring_check_mode(&ring);
	char dir[] = "/tmp/tu_errorsXXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	char path[64];
	snprintf(path, sizeof path, "%s/f", dir);
	int fd = open(path, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "0123456789abcdef", 16), 16);
	int ro = open(path, O_RDONLY);
	CHECK(ro >= 0);
	char buf[128];

	/* RWF_ flags: HIPRI without IOPOLL, an unknown one; the mode first (a read first,
	 * so that the emulation knows fd as a file: its fast path must refuse them too) */
	struct io_uring_sqe *s = tu_sqe(&ring);
	io_uring_prep_read(s, fd, buf, 16, 0);
	CHECK_EQ(res(&ring), 16);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, fd, buf, 16, 0);
	s->rw_flags = RWF_HIPRI;
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_write(s, fd, buf, 16, 0);
	s->rw_flags = (int)0x80000000u;
	CHECK_EQ(res(&ring), -EOPNOTSUPP);
	/* RWF_NOSIGNAL (0x100): whatever this kernel's pwritev2 says of it */
	struct iovec wv = { buf, 16 };
	ssize_t pw = pwritev2(fd, &wv, 1, 0, 0x100);
	s = tu_sqe(&ring);
	io_uring_prep_write(s, fd, buf, 16, 0);
	s->rw_flags = 0x100;
	CHECK_EQ(res(&ring), pw < 0 ? -errno : pw);
	s = tu_sqe(&ring);
	io_uring_prep_write(s, ro, buf, 16, 0);
	s->rw_flags = RWF_HIPRI;
	CHECK_EQ(res(&ring), -EBADF);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, fd, buf, 16, (uint64_t)-5);
	CHECK_EQ(res(&ring), -EINVAL);

	/* READV: the iovec array before the fd */
	s = tu_sqe(&ring);
	io_uring_prep_readv(s, 1000, (struct iovec *)0x10, 1, 0);
	CHECK_EQ(res(&ring), -EFAULT);

	/* a socket at an offset: -ESPIPE; a pipe's offset is ignored */
	int sv[2], p[2];
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ(write(sv[1], "sock", 4), 4);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, sv[0], buf, 4, 16);
	CHECK_EQ(res(&ring), -ESPIPE);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, sv[0], buf, 4, 0);
	CHECK_EQ(res(&ring), 4);
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(write(p[1], "pipe", 4), 4);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, p[0], buf, 4, 16);
	CHECK_EQ(res(&ring), 4);
	/* with IOSQE_ASYNC: a read of a pipe's write end, a recv of a pipe: at once */
	s = tu_sqe(&ring);
	io_uring_prep_read(s, p[1], buf, 4, 0);
	s->flags |= IOSQE_ASYNC;
	CHECK_EQ(res(&ring), -EBADF);
	s = tu_sqe(&ring);
	io_uring_prep_recv(s, p[0], buf, 4, 0);
	s->flags |= IOSQE_ASYNC;
	CHECK_EQ(res(&ring), -ENOTSOCK);
	/* ... and with a provided buffer (with IOSQE_ASYNC and without), which stays
	 * provided; with none provided: -ENOTSOCK too, not -ENOBUFS */
	for (int k = 0; k < 2; k++) {
		s = tu_sqe(&ring);
		io_uring_prep_provide_buffers(s, buf, 64, 1, 2, 0);
		CHECK_EQ(res(&ring), 0);
		s = tu_sqe(&ring);
		io_uring_prep_recv(s, p[0], NULL, 64, 0);
		s->flags |= (k ? 0 : IOSQE_ASYNC) | IOSQE_BUFFER_SELECT;
		s->buf_group = 2;
		CHECK_EQ(res(&ring), -ENOTSOCK);
		s = tu_sqe(&ring);
		io_uring_prep_remove_buffers(s, 1, 2);
		CHECK_EQ(res(&ring), 1);
	}
	s = tu_sqe(&ring);
	io_uring_prep_recv(s, p[0], NULL, 64, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 2;
	CHECK_EQ(res(&ring), -ENOTSOCK);
	/* a READ into a provided buffer takes it first: none left is -ENOBUFS before the
	 * file's mode (a pipe's write end), RWF_HIPRI and the offset; a READV's one iovec is
	 * read at prep: two are -EINVAL, an unreadable one -EFAULT, before a bad fd */
	s = tu_sqe(&ring);
	io_uring_prep_read(s, p[1], NULL, 64, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 2;
	CHECK_EQ(res(&ring), -ENOBUFS);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, fd, NULL, 64, (uint64_t)-5);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->rw_flags = RWF_HIPRI;
	s->buf_group = 2;
	CHECK_EQ(res(&ring), -ENOBUFS);
	{       /* a number the ring has cached, closed by the program since: -EBADF first */
		int cn = dup(fd);
		CHECK(cn >= 0);
		s = tu_sqe(&ring);
		io_uring_prep_read(s, cn, buf, 4, 0);
		CHECK_EQ(res(&ring), 4);
		close(cn);
		s = tu_sqe(&ring);
		io_uring_prep_read(s, cn, NULL, 64, 0);
		s->flags |= IOSQE_BUFFER_SELECT;
		s->buf_group = 2;
		CHECK_EQ(res(&ring), -EBADF);
	}
	struct iovec bsv[2] = { { NULL, 64 }, { NULL, 64 } };
	s = tu_sqe(&ring);
	io_uring_prep_readv(s, 1000, bsv, 2, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 2;
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_readv(s, 1000, (struct iovec *)0x10, 1, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 2;
	CHECK_EQ(res(&ring), -EFAULT);
	s = tu_sqe(&ring);
	io_uring_prep_readv(s, 1000, bsv, 1, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->buf_group = 2;
	CHECK_EQ(res(&ring), -EBADF);

	/* an fd number the emulation knows as a file, then a socket's (closed and reused by
	 * the program itself): a read at an offset is -ESPIPE and leaves the data there */
	int n = dup(fd), sv2[2];
	CHECK(n >= 0);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, n, buf, 4, 0);
	CHECK_EQ(res(&ring), 4);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2), 0);
	CHECK_EQ(dup2(sv2[0], n), n);
	CHECK_EQ(write(sv2[1], "data", 4), 4);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, n, buf, 4, 16);
	CHECK_EQ(res(&ring), -ESPIPE);
	/* ... then a pipe's (known as a socket by a RECV): with IOSQE_ASYNC a RECV is
	 * -ENOTSOCK at once, not a wait for data that never comes */
	s = tu_sqe(&ring);
	io_uring_prep_recv(s, n, buf, 4, 0);
	s->flags |= IOSQE_ASYNC;
	CHECK_EQ(res(&ring), 4);
	CHECK_EQ(memcmp(buf, "data", 4), 0);
	int p2[2];
	CHECK_EQ(pipe(p2), 0);
	CHECK_EQ(dup2(p2[0], n), n);
	s = tu_sqe(&ring);
	io_uring_prep_recv(s, n, buf, 4, 0);
	s->flags |= IOSQE_ASYNC;
	CHECK_EQ(res(&ring), -ENOTSOCK);
	/* ... then, known as a file again (closed through the ring, which forgets its kind),
	 * a socket's holding 8 bytes: a READ of 100 at the file position returns the 8 (it is
	 * no regular file's short read, to go on with) */
	ring_renumber(&ring, n, fd);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, n, buf, 4, 0);
	CHECK_EQ(res(&ring), 4);
	close(sv2[0]);
	close(sv2[1]);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2), 0);
	CHECK_EQ(dup2(sv2[0], n), n);
	CHECK_EQ(write(sv2[1], "eightbyt", 8), 8);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, n, buf, 100, (uint64_t)-1);
	CHECK_EQ(res(&ring), 8);
	/* ... and known as an O_DIRECT file (where /tmp has O_DIRECT: a counted part), a socket's
	 * now: a WRITE at an offset is -ESPIPE, not an AIO write of the socket */
	char dpath[96];
	snprintf(dpath, sizeof dpath, "%s/direct", dir);
	if (have_odirect) {
		int dfd0 = open(dpath, O_RDWR | O_CREAT | O_DIRECT, 0600);
		char *al = aligned_alloc(4096, 4096);
		CHECK(dfd0 >= 0 && al != NULL);
		memset(al, 'd', 4096);
		ring_renumber(&ring, n, dfd0);
		s = tu_sqe(&ring);
		io_uring_prep_write(s, n, al, 4096, 0);
		CHECK_EQ(res(&ring), 4096);
		CHECK_EQ(dup2(sv2[0], n), n);
		s = tu_sqe(&ring);
		io_uring_prep_write(s, n, al, 4096, 4096);
		CHECK_EQ(res(&ring), -ESPIPE);
		close(dfd0);
		unlink(dpath);
		free(al);
	}
	close(n);
	close(sv2[0]);
	close(sv2[1]);
	close(p2[0]);
	close(p2[1]);

	/* a socket whose peer has gone: a WRITE raises SIGPIPE in the submitting thread (the
	 * kernel's inline try), a SEND does not */
	CHECK(signal(SIGPIPE, on_sigpipe) != SIG_ERR);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv2), 0);
	close(sv2[1]);
	int fresh = fcntl(sv2[0], F_DUPFD, 200);         /* a number this ring has not seen */
	CHECK(fresh >= 200);
	s = tu_sqe(&ring);
	io_uring_prep_write(s, fresh, "x", 1, 0);
	CHECK_EQ(res(&ring), -EPIPE);
	CHECK_EQ(sigpipes, 1);
	s = tu_sqe(&ring);
	io_uring_prep_send(s, fresh, "x", 1, 0);
	CHECK_EQ(res(&ring), -EPIPE);
	CHECK_EQ(sigpipes, 1);
	close(fresh);
	close(sv2[0]);
	signal(SIGPIPE, SIG_DFL);

	/* a number the ring knows as a pipe's, closed by the program: a SPLICE of 0 bytes from
	 * it is -EBADF (splice(2) of 0 bytes looks at no file) */
	int p3[2], p4[2], sv3[2];
	CHECK_EQ(pipe(p3), 0);
	CHECK_EQ(pipe(p4), 0);
	int m3 = fcntl(p3[0], F_DUPFD, 300), m4 = fcntl(p4[0], F_DUPFD, 310);   /* new to the ring */
	CHECK(m3 >= 300 && m4 >= 310);
	s = tu_sqe(&ring);
	io_uring_prep_splice(s, m3, -1, p4[1], -1, 0, 0);
	CHECK_EQ(res(&ring), 0);
	close(m3);
	s = tu_sqe(&ring);
	io_uring_prep_splice(s, m3, -1, p4[1], -1, 0, 0);
	CHECK_EQ(res(&ring), -EBADF);
	/* ... and one it knows as a pipe's that is an empty socket's now: a READ at an offset
	 * with IOSQE_ASYNC is -ESPIPE at once, not a wait for data */
	CHECK_EQ(write(p4[1], "x", 1), 1);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, m4, buf, 1, (uint64_t)-1);
	CHECK_EQ(res(&ring), 1);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv3), 0);
	CHECK_EQ(dup2(sv3[0], m4), m4);
	s = tu_sqe(&ring);
	io_uring_prep_read(s, m4, buf, 4, 16);
	s->flags |= IOSQE_ASYNC;
	CHECK_EQ(res(&ring), -ESPIPE);
	close(m4);
	close(sv3[0]);
	close(sv3[1]);
	close(p3[0]);
	close(p3[1]);
	close(p4[0]);
	close(p4[1]);

	/* paths: an empty one is -ENOENT when it is taken, before the other path is
	 * looked up or read; UNLINKAT's flags come first (-EINVAL) */
	s = tu_sqe(&ring);
	io_uring_prep_unlinkat(s, AT_FDCWD, "", 0x8000);
	CHECK_EQ(res(&ring), -EINVAL);
	snprintf(buf, sizeof buf, "%s/x", path);         /* below a file */
	s = tu_sqe(&ring);
	io_uring_prep_renameat(s, AT_FDCWD, buf, AT_FDCWD, "", 0);
	CHECK_EQ(res(&ring), -ENOENT);
	s = tu_sqe(&ring);
	io_uring_prep_symlinkat(s, "", AT_FDCWD, (const char *)0x10);
	CHECK_EQ(res(&ring), -ENOENT);
	s = tu_sqe(&ring);
	io_uring_prep_mkdirat(s, 1000, "x", 0700);
	CHECK_EQ(res(&ring), -EBADF);
	/* O_DIRECTORY with a mode: the directory */
	s = tu_sqe(&ring);
	io_uring_prep_openat(s, AT_FDCWD, dir, O_DIRECTORY, 0600);
	int dfd = res(&ring);
	CHECK(dfd >= 0 || (fprintf(stderr, "openat O_DIRECTORY: %d\n", dfd), 0));
	struct stat st;
	CHECK_EQ(fstat(dfd, &st), 0);
	CHECK(S_ISDIR(st.st_mode));
	close(dfd);

	/* SPLICE from a pipe at an offset into a pipe's read end: the mode first */
	int q[2];
	CHECK_EQ(pipe(q), 0);
	s = tu_sqe(&ring);
	io_uring_prep_splice(s, p[0], 0, q[0], -1, 4, 0);
	CHECK_EQ(res(&ring), -EBADF);
	s = tu_sqe(&ring);
	io_uring_prep_splice(s, p[0], 0, q[1], -1, 4, 0);
	CHECK_EQ(res(&ring), -ESPIPE);

	/* POLL_ADD: a file that cannot be polled, none of its events ready: -EINVAL; a
	 * socket whose peer left: POLLRDHUP too, unasked */
	s = tu_sqe(&ring);
	io_uring_prep_poll_add(s, fd, 0);
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_poll_add(s, fd, POLLIN);
	CHECK_EQ(res(&ring), POLLIN);
	close(sv[1]);
	s = tu_sqe(&ring);
	io_uring_prep_poll_add(s, sv[0], POLLIN);
	int32_t m = res(&ring);
	CHECK(m > 0 && (m & POLLRDHUP) && (m & POLLIN));

	/* PROVIDE_BUFFERS: none is -E2BIG; the memory is not looked at */
	s = tu_sqe(&ring);
	io_uring_prep_provide_buffers(s, buf, 64, 0, 1, 0);
	CHECK_EQ(res(&ring), -E2BIG);
	s = tu_sqe(&ring);
	io_uring_prep_provide_buffers(s, NULL, 64, 1, 1, 0);
	CHECK_EQ(res(&ring), 0);
	/* buffers of length 0: -EINVAL (the kernel's answer since it checks; an older
	 * kernel took them, so the kernel mode accepts either) */
	s = tu_sqe(&ring);
	io_uring_prep_provide_buffers(s, buf, 0, 1, 2, 0);
	int32_t pz = res(&ring);
	CHECK(pz == -EINVAL || (tu_mode == TU_KERNEL && pz == 0));
	s = tu_sqe(&ring);
	io_uring_prep_remove_buffers(s, 1, 1);
	CHECK_EQ(res(&ring), 1);

	/* fields an op does not use: not 0 is -EINVAL before the file is looked at (the bad fd) */
	s = tu_sqe(&ring);
	io_uring_prep_unlinkat(s, 1000, "x", 0);
	s->off = 1;
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_shutdown(s, 1000, SHUT_RD);
	s->buf_index = 1;
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_accept(s, 1000, NULL, NULL, 0);
	s->accept_flags = 1;
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_accept(s, 1000, NULL, NULL, 0);
	s->ioprio = 0x80;               /* no IORING_ACCEPT_* flag */
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_nop(s);
	s->ioprio = 1;
	CHECK_EQ(res(&ring), -EINVAL);
	/* ... and the ops that share a prep with one the generator makes (RECVMSG: RECV's,
	 * LINK_TIMEOUT: TIMEOUT's), the ones it does not make, and addr (Linux 6.18's answers) */
	struct msghdr zmh;
	struct iovec ziov = { buf, 4 };
	memset(&zmh, 0, sizeof zmh);
	zmh.msg_iov = &ziov;
	zmh.msg_iovlen = 1;
	struct open_how zhow = { .flags = O_RDONLY };
	struct sockaddr_in zsa = { .sin_family = AF_INET };
	for (int k = 0; k < 18; k++) {
		s = tu_sqe(&ring);
		switch (k) {
		case 0: io_uring_prep_recvmsg(s, 1000, &zmh, 0); s->off = 1; break;
		case 1: io_uring_prep_recvmsg(s, 1000, &zmh, 0); s->splice_fd_in = 1; break;
		case 2: io_uring_prep_sendmsg(s, 1000, &zmh, 0); s->off = 1; break;
		case 3: io_uring_prep_sendmsg(s, 1000, &zmh, 0); s->splice_fd_in = 1; break;
		case 4: io_uring_prep_openat2(s, 1000, "x", &zhow); s->buf_index = 1; break;
		case 5: io_uring_prep_connect(s, 1000, (struct sockaddr *)&zsa, sizeof zsa); s->len = 1; break;
		case 6: io_uring_prep_connect(s, 1000, (struct sockaddr *)&zsa, sizeof zsa); s->rw_flags = 1; break;
		case 7: io_uring_prep_connect(s, 1000, (struct sockaddr *)&zsa, sizeof zsa); s->buf_index = 1; break;
		case 8: io_uring_prep_connect(s, 1000, (struct sockaddr *)&zsa, sizeof zsa); s->splice_fd_in = 1; break;
		case 9: io_uring_prep_socket(s, AF_INET, SOCK_STREAM, 0, 0); s->rw_flags = 1; break;
		case 10: io_uring_prep_socket(s, AF_INET, SOCK_STREAM, 0, 0); s->buf_index = 1; break;
		case 11: io_uring_prep_socket(s, AF_INET, SOCK_STREAM, 0, 0); s->addr = 1; break;
		case 12: io_uring_prep_fsync(s, 1000, 0); s->addr = 1; break;
		case 13: io_uring_prep_sync_file_range(s, 1000, 16, 0, 0); s->addr = 1; break;
		case 14: io_uring_prep_poll_add(s, 1000, POLLIN); s->addr = 1; break;
		case 15: io_uring_prep_shutdown(s, 1000, SHUT_RD); s->addr = 1; break;
		case 16: io_uring_prep_tee(s, 1000, 1000, 16, 0); s->addr = 1; break;
		case 17: io_uring_prep_timeout(s, &zts, 0, 0); s->addr3 = 1; break;
		}
		int32_t got = res(&ring);
		if (got != -EINVAL)
			FAIL("stray field case %d: res %d, expected -EINVAL", k, got);
	}
	/* a direct descriptor (file_index) asked for with close-on-exec: -EINVAL (before the fd) */
	s = tu_sqe(&ring);
	io_uring_prep_accept_direct(s, 1000, NULL, NULL, SOCK_CLOEXEC, 0);
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_openat_direct(s, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0, 0);
	CHECK_EQ(res(&ring), -EINVAL);
	zhow.flags = O_RDONLY | O_CLOEXEC;
	s = tu_sqe(&ring);
	io_uring_prep_openat2_direct(s, AT_FDCWD, path, &zhow, 0);
	CHECK_EQ(res(&ring), -EINVAL);
	/* a LINK_TIMEOUT's __pad2: it fails, the request it guards is cancelled */
	s = tu_sqe(&ring);
	io_uring_prep_nop(s);
	s->flags |= IOSQE_IO_LINK;
	s->user_data = 71;
	s = tu_sqe(&ring);
	io_uring_prep_link_timeout(s, &zts, 0);
	s->__pad2[0] = 1;
	s->user_data = 72;
	CHECK_EQ(io_uring_submit(&ring), 2);
	for (int k = 0; k < 2; k++) {
		struct io_uring_cqe zc;
		tu_next(&ring, &zc);
		CHECK_EQ(zc.res, zc.user_data == 71 ? -ECANCELED : -EINVAL);
	}
	/* a read's ioprio (class in bits 13-15, level in 0-2): class 0 with a level is -EINVAL, a
	 * hint alone (bits 3-12) is fine, best-effort (2) level 4 fine, a class above 3 -EINVAL */
	static const struct { uint16_t prio; int res; } prios[] = {
		{ 1, -EINVAL }, { 8, 4 }, { (2 << 13) | 4, 4 }, { 5 << 13, -EINVAL },
	};
	for (unsigned i = 0; i < sizeof prios / sizeof prios[0]; i++) {
		s = tu_sqe(&ring);
		io_uring_prep_read(s, fd, buf, 4, 0);
		s->ioprio = prios[i].prio;
		CHECK_EQ(res(&ring), prios[i].res);
	}
	/* MADVISE's length is off when set, FADVISE's addr (64-bit lengths, Linux 6.7) */
	char *m2 = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m2 != MAP_FAILED);
	CHECK_EQ(munmap(m2 + 4096, 4096), 0);
	s = tu_sqe(&ring);
	io_uring_prep_madvise(s, m2, 4096, MADV_NORMAL);
	CHECK_EQ(res(&ring), 0);
	s = tu_sqe(&ring);
	io_uring_prep_madvise(s, m2, 4096, MADV_NORMAL);
	s->off = 8192;                                  /* into the unmapped page */
	CHECK_EQ(res(&ring), -ENOMEM);
	munmap(m2, 4096);
	s = tu_sqe(&ring);
	io_uring_prep_fadvise(s, fd, 0, 100, POSIX_FADV_NORMAL);
	s->addr = 0x8000000000000000ull;                /* a negative length */
	CHECK_EQ(res(&ring), -EINVAL);
	/* a multishot POLL_ADD of a file that cannot be polled, none of its events ready */
	s = tu_sqe(&ring);
	io_uring_prep_poll_multishot(s, fd, 0);
	CHECK_EQ(res(&ring), -EINVAL);
	/* IOSQE_BUFFER_SELECT on an op that takes no provided buffer: -EOPNOTSUPP, before a
	 * personality is looked at */
	s = tu_sqe(&ring);
	io_uring_prep_nop(s);
	s->flags |= IOSQE_BUFFER_SELECT;
	s->personality = 1;
	CHECK_EQ(res(&ring), -EOPNOTSUPP);
	s = tu_sqe(&ring);
	io_uring_prep_fsync(s, 1000, 0);
	s->flags |= IOSQE_BUFFER_SELECT;
	CHECK_EQ(res(&ring), -EOPNOTSUPP);
	/* an ASYNC_CANCEL (and a sync cancel) of ALL or ANY that finds nothing: 0 cancelled;
	 * of one: -ENOENT */
	static const unsigned cfl[] = { IORING_ASYNC_CANCEL_ALL, IORING_ASYNC_CANCEL_ANY,
					IORING_ASYNC_CANCEL_FD | IORING_ASYNC_CANCEL_ALL, 0, IORING_ASYNC_CANCEL_FD };
	for (unsigned k = 0; k < sizeof cfl / sizeof cfl[0]; k++) {
		s = tu_sqe(&ring);
		if (cfl[k] & IORING_ASYNC_CANCEL_FD)
			io_uring_prep_cancel_fd(s, fd, cfl[k]);
		else
			io_uring_prep_cancel64(s, 12345, (int)cfl[k]);
		CHECK_EQ(res(&ring), k < 3 ? 0 : -ENOENT);
		struct io_uring_sync_cancel_reg reg = { .addr = 12345, .fd = fd, .flags = cfl[k] };
		reg.timeout.tv_sec = reg.timeout.tv_nsec = -1;
		CHECK_EQ(io_uring_register_sync_cancel(&ring, &reg), k < 3 ? 0 : -ENOENT);
	}
	/* a cancel's off: -EINVAL; by fd with ANY: -EINVAL; by an fd that is not open, or a
	 * registered file not there (FD_FIXED, or IOSQE_FIXED_FILE): -EBADF, also synchronous;
	 * FD_FIXED without FD: by user_data. IOSQE_FIXED_FILE on ops that take no file, with no
	 * table: ignored (a cancel by user_data, PROVIDE_BUFFERS), TIMEOUT_REMOVE -EINVAL */
	s = tu_sqe(&ring);
	io_uring_prep_cancel64(s, 12345, 0);
	s->off = 1;
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_cancel_fd(s, fd, IORING_ASYNC_CANCEL_ANY);
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_cancel_fd(s, 1000, 0);
	CHECK_EQ(res(&ring), -EBADF);
	s = tu_sqe(&ring);
	io_uring_prep_cancel_fd(s, 0, IORING_ASYNC_CANCEL_FD_FIXED);
	CHECK_EQ(res(&ring), -EBADF);
	s = tu_sqe(&ring);
	io_uring_prep_cancel_fd(s, 0, 0);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(res(&ring), -EBADF);
	s = tu_sqe(&ring);
	io_uring_prep_cancel64(s, 12345, IORING_ASYNC_CANCEL_FD_FIXED);
	CHECK_EQ(res(&ring), -ENOENT);
	s = tu_sqe(&ring);
	io_uring_prep_cancel64(s, 12345, 0);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(res(&ring), -ENOENT);
	{
		struct io_uring_sync_cancel_reg reg = { .addr = 12345, .fd = 1000, .flags = IORING_ASYNC_CANCEL_FD };
		reg.timeout.tv_sec = reg.timeout.tv_nsec = -1;
		CHECK_EQ(io_uring_register_sync_cancel(&ring, &reg), -EBADF);
		reg.flags |= IORING_ASYNC_CANCEL_FD_FIXED;
		reg.fd = 0;
		CHECK_EQ(io_uring_register_sync_cancel(&ring, &reg), -EBADF);
	}
	s = tu_sqe(&ring);
	io_uring_prep_timeout_remove(s, 12345, 0);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(res(&ring), -EINVAL);
	s = tu_sqe(&ring);
	io_uring_prep_provide_buffers(s, buf, 16, 1, 77, 0);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(res(&ring), 0);
	s = tu_sqe(&ring);
	io_uring_prep_remove_buffers(s, 1, 77);
	CHECK_EQ(res(&ring), 1);
	/* EPOLL_CTL: the event is read before the epoll fd is looked at */
	s = tu_sqe(&ring);
	io_uring_prep_epoll_ctl(s, 1000, fd, EPOLL_CTL_ADD, (struct epoll_event *)0x10);
	CHECK_EQ(res(&ring), -EFAULT);
	struct epoll_event eev = { EPOLLIN, { 0 } };
	s = tu_sqe(&ring);
	io_uring_prep_epoll_ctl(s, 1000, fd, EPOLL_CTL_ADD, &eev);
	CHECK_EQ(res(&ring), -EBADF);
	/* ... a plain fd, IOSQE_FIXED_FILE or not (the kernel's takes no file) */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	int ep_pipe[2];
	CHECK_EQ(pipe(ep_pipe), 0);
	s = tu_sqe(&ring);
	io_uring_prep_epoll_ctl(s, ep, ep_pipe[0], EPOLL_CTL_ADD, &eev);
	s->flags |= IOSQE_FIXED_FILE;
	CHECK_EQ(res(&ring), 0);
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_DEL, ep_pipe[0], NULL), 0);     /* it was added */
	/* a sync cancel of ALL or ANY answers how many it cancelled, as ASYNC_CANCEL */
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < 2; i++) {
			s = tu_sqe(&ring);
			io_uring_prep_poll_add(s, ep_pipe[0], POLLIN);
			s->user_data = 4242;
		}
		CHECK_EQ(io_uring_submit(&ring), 2);
		struct io_uring_sync_cancel_reg reg = { .addr = 4242, .fd = -1,
			.flags = k ? IORING_ASYNC_CANCEL_ANY : IORING_ASYNC_CANCEL_ALL };
		reg.timeout.tv_sec = reg.timeout.tv_nsec = -1;
		CHECK_EQ(io_uring_register_sync_cancel(&ring, &reg), 2);
		struct io_uring_cqe pc[2];
		tu_reap(&ring, pc, 2);
		CHECK(pc[0].user_data == 4242 && pc[0].res == -ECANCELED);
		CHECK(pc[1].user_data == 4242 && pc[1].res == -ECANCELED);
	}
	close(ep_pipe[0]);
	close(ep_pipe[1]);
	close(ep);

	/* a tagged empty buffer slot is -EINVAL; untagged it registers */
	struct iovec none = { NULL, 0 };
	__u64 tag = 7;
	CHECK_EQ(io_uring_register_buffers_tags(&ring, &none, &tag, 1), -EINVAL);
	tag = 0;
	CHECK_EQ(io_uring_register_buffers_tags(&ring, &none, &tag, 1), 0);
	CHECK_EQ(io_uring_unregister_buffers(&ring), 0);

	/* an update whose iovec or tag cannot be read is -EFAULT; a tag that cannot
	 * be read after one that can: the count of entries done before it */
	{
		static char ub[2][64];
		struct iovec two[2] = { { ub[0], sizeof ub[0] }, { ub[1], sizeof ub[1] } };
		__u64 tags2[2] = { 0, 0 };
		long pg = sysconf(_SC_PAGESIZE);
		char *m = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(m != MAP_FAILED);
		CHECK_EQ(mprotect(m + pg, (size_t)pg, PROT_NONE), 0);
		__u64 *tag_edge = (__u64 *)(m + pg) - 1;
		*tag_edge = 0;
		CHECK_EQ(io_uring_register_buffers_tags(&ring, two, tags2, 2), 0);
		CHECK_EQ(io_uring_register_buffers_update_tag(&ring, 0, two, (__u64 *)(m + pg), 1), -EFAULT);
		CHECK_EQ(io_uring_register_buffers_update_tag(&ring, 0, (struct iovec *)(m + pg), tags2, 1), -EFAULT);
		CHECK_EQ(io_uring_register_buffers_update_tag(&ring, 0, two, tag_edge, 2), 1);
		CHECK_EQ(io_uring_register_buffers_update_tag(&ring, 0, two, tags2, 2), 2);
		CHECK_EQ(io_uring_unregister_buffers(&ring), 0);
		/* with no table registered an update is -ENXIO */
		CHECK_EQ(io_uring_register_buffers_update_tag(&ring, 0, two, tags2, 1), -ENXIO);
		/* OPENAT2's struct open_how larger than the kernel's: its tail must be readable
		 * (-EFAULT when it runs into a page that is not) and zero (-E2BIG) */
		struct open_how *how_edge = (struct open_how *)(m + pg) - 1;
		memset(how_edge, 0, sizeof(*how_edge));
		struct io_uring_sqe *s2 = tu_sqe(&ring);
		io_uring_prep_openat2(s2, AT_FDCWD, path, how_edge);
		s2->len = sizeof(*how_edge) + 8;
		CHECK_EQ(res(&ring), -EFAULT);
		CHECK_EQ(mprotect(m + pg, (size_t)pg, PROT_READ | PROT_WRITE), 0);
		memset(m + pg, 0, 8);
		m[pg + 7] = 1;
		s2 = tu_sqe(&ring);
		io_uring_prep_openat2(s2, AT_FDCWD, path, how_edge);
		s2->len = sizeof(*how_edge) + 8;
		CHECK_EQ(res(&ring), -E2BIG);
		munmap(m, 2 * (size_t)pg);
	}

	/* more files than RLIMIT_NOFILE allows: io_uring_register is -EMFILE (the kernel's check),
	 * io_uring_register_files raises the soft limit, as liburing's does, and registers them */
	struct rlimit rl0, rl;
	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl0), 0);
	if (rl0.rlim_max >= 128) {
		int empty[100];
		for (int i = 0; i < 100; i++)
			empty[i] = -1;
		rl = rl0;
		rl.rlim_cur = 64;
		CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
		CHECK_EQ(io_uring_register((unsigned)ring.ring_fd, IORING_REGISTER_FILES, empty, 100), -EMFILE);
		CHECK_EQ(io_uring_register_files(&ring, empty, 100), 0);
		CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
		CHECK(rl.rlim_cur >= 100);
		CHECK_EQ(io_uring_unregister_files(&ring), 0);
		CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl0), 0);
	}
	/* a ring set up at the descriptor limit: -EMFILE until the limit allows it */
	{
		struct io_uring r2;
		int e = -EMFILE;
		rlim_t lim;
		for (lim = 0; lim < 4096 && lim <= rl0.rlim_cur; lim++) {
			rl = rl0;
			rl.rlim_cur = lim;
			CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
			e = io_uring_queue_init(4, &r2, 0);
			CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl0), 0);
			if (e == 0)
				break;
			CHECK_EQ(e, -EMFILE);
		}
		CHECK_EQ(e, 0);
		CHECK(lim > 3);
		io_uring_queue_exit(&r2);
	}

	/* io-wq affinity: set (the CPUs this process may use), then taken back */
	cpu_set_t cpus;
	CHECK_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
	CHECK_EQ(io_uring_register_iowq_aff(&ring, sizeof cpus, &cpus), 0);
	CHECK_EQ(io_uring_unregister_iowq_aff(&ring), 0);

	tu_none(&ring);
	io_uring_queue_exit(&ring);
	close(fd);
	close(ro);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	char why[256];
	struct rlimit nofile;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_max >= 128)
		tu_part_ran("RLIMIT_NOFILE", "more files registered than the soft limit");
	else
		tu_part_skip("RLIMIT_NOFILE", "more files registered than the soft limit", "hard limit under 128");
	have_odirect = tu_have_odirect("/tmp", why, sizeof why);
	if (have_odirect)
		tu_part_ran("O_DIRECT", "a stale O_DIRECT number that is a socket now");
	else
		tu_part_skip("O_DIRECT", "a stale O_DIRECT number that is a socket now", why);
	return tu_uring_main(body);
}
