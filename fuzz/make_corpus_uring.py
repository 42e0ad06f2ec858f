#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# fuzz/make_corpus_uring.py - writes the seed corpus of the drop-in fuzzer
# (fuzz/corpus-uring) in the input format fuzz/fuzz_uring_steps.h defines: a
# few well-formed sessions per opcode family (reads/writes, vectored and
# O_DIRECT; links, hard links and drains; timeouts and link timeouts; sockets,
# pipes and polls; path opcodes; registered buffers and files, provided
# buffers, MSG_RING; cancellation; CQ overflow; bad pointers) so the fuzzer
# starts deep in the executor.
#   python3 fuzz/make_corpus_uring.py
# Must never write outside fuzz/corpus-uring.
import os, struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-uring")
(NOP, READV, WRITEV, FSYNC, READ_FIXED, WRITE_FIXED, POLL_ADD, POLL_REMOVE, SYNC_FILE_RANGE,
 SENDMSG, RECVMSG, TIMEOUT, TIMEOUT_REMOVE, ACCEPT, ASYNC_CANCEL, LINK_TIMEOUT, CONNECT,
 FALLOCATE, OPENAT, CLOSE, FILES_UPDATE, STATX, READ, WRITE, FADVISE, MADVISE, SEND, RECV,
 OPENAT2, EPOLL_CTL, SPLICE, PROVIDE_BUFFERS, REMOVE_BUFFERS, TEE, SHUTDOWN, RENAMEAT,
 UNLINKAT, MKDIRAT, SYMLINKAT, LINKAT, MSG_RING, FSETXATTR, SETXATTR, FGETXATTR, GETXATTR,
 SOCKET, URING_CMD, SEND_ZC, SENDMSG_ZC) = range(49)
# fd selectors (fzu_fd) and path names (pointer selector name << 3, fzu_names)
DIR, REG, ODIRECT, PR, PW, S0, S1, EFD, EPFD, RING, LAST, MINUS1, BADFD = range(13)
F0, F1, F2, D0, S0N, EMPTY, D0F3, F0X = range(8)
FIXED, DRAIN, LINK, HARDLINK, ASYNC, BUFSEL, SKIP = 1, 2, 4, 8, 16, 32, 64
INVALID_NULL, INVALID_LOW, INVALID_KERNEL, INVALID_GUARD, STRADDLE_OBJ, STRADDLE_DATA = 4, 1, 2, 3, 4, 5
MS1 = (3906, 64)            # opf, len giving a 1 ms timespec (opf << 8 | len = 1000000)


def sqe(op, flags=0, fd=0, ptr=0, length=0, off=0, opf=0, buf=0, target=0, link_prev=False):
    return bytes([7 if link_prev else 0, op, flags, fd, ptr]) + struct.pack("<HHHBB", length, off, opf, buf, target)


def submit(reap=True):
    return bytes([1 if reap else 0x81])


def wait(nr, units=1):          # units of 32 us
    return bytes([2, (units << 2) | nr])


def reap(n=15, batch=False):
    return bytes([3, n | (0x80 if batch else 0)])


def register(w, a=0, b=0):
    return bytes([4, w, a, b])


def data(off, b):
    return bytes([5]) + struct.pack("<HB", off, len(b)) + b


def poke(w):
    return bytes([6, w])


def session(log2_entries, flags, *parts):
    return bytes([log2_entries, flags]) + b"".join(parts)


seeds = {
    # 9 SQEs: a chain of 3 (all succeed), a drained NOP, a soft chain whose head fails
    # (-EBADF, then -ECANCELED twice), a hard chain whose head fails (the NOP still runs)
    "links-drain": session(
        4, 0,
        sqe(NOP, LINK), sqe(READ, LINK, REG, 0, 100), sqe(NOP),
        sqe(NOP, DRAIN),
        sqe(READ, LINK, BADFD, 0, 10), sqe(NOP, LINK), sqe(NOP),
        sqe(READ, HARDLINK, BADFD, 0, 10), sqe(NOP),
        submit(), wait(3, 8), reap()),
    # a poll holds a drained NOP, the NOP after it, a poll and a second drained NOP in the
    # defer queue: the second drain may only start once the poll before it completed
    "drain-queue": session(
        3, 0,
        sqe(POLL_ADD, 0, PR, 0, 0, 0, 1), sqe(NOP, DRAIN), sqe(NOP), sqe(POLL_ADD, 0, S0, 0, 0, 0, 1),
        sqe(NOP, DRAIN), sqe(NOP), submit(), poke(4), wait(3, 60), reap(), poke(5), wait(3, 60), reap()),
    "rw-files": session(
        3, 0, data(0, b"hello, drop-in"),
        sqe(WRITE, 0, REG, 0, 4096, 0), sqe(READ, 0, REG, 0, 8192, 0, 0x400),
        sqe(READV, 0, REG, 0, 3, 100, 1000), sqe(WRITEV, 0, REG, 0, 2, 200, 2000),
        sqe(FSYNC, 0, REG), sqe(READ, 0, ODIRECT, 0, 4096, 0), sqe(WRITE, 0, ODIRECT, 0, 4096, 1, 0x400),
        sqe(READ, ASYNC, REG, 0, 512, 0xffff), submit(), wait(4, 60), reap(),
        sqe(FALLOCATE, 0, REG, 0, 16, 64), sqe(FADVISE, 0, REG, 0, 100, 0, 3),
        sqe(SYNC_FILE_RANGE, 0, REG, 0, 4096, 0, 2), sqe(MADVISE, 0, REG, 0, 1, 0, 3),
        submit(), wait(4, 60), reap(batch=True)),
    "timeouts": session(
        3, 0,
        sqe(TIMEOUT, 0, 0, 0, MS1[1], 0, MS1[0]), sqe(TIMEOUT, 0, 0, 0, MS1[1], 1, MS1[0]), sqe(NOP),
        sqe(POLL_ADD, LINK, PR, 0, 0, 0, 1), sqe(LINK_TIMEOUT, 0, 0, 0, MS1[1], 0, MS1[0]),
        sqe(TIMEOUT, 0, 0, 0, MS1[1], 0, 0xF42 | 0x4000), sqe(TIMEOUT_REMOVE, target=5),
        submit(), wait(3, 63), wait(3, 63), reap()),
    # a multishot poll of the eventfd: each write to it is a CQE with IORING_CQE_F_MORE,
    # the final one comes from the harness's cancel at the end
    "mshot-poll-efd": session(
        3, 0,
        sqe(POLL_ADD, 0, EFD, 0, 0, 0, 0x8001), submit(), poke(2), reap(0), poke(2), submit(),
        poke(2), reap(15), submit()),
    "net-poll": session(
        3, 0, data(0, b"ping" * 8),
        sqe(SEND, 0, S0, 0, 32), sqe(RECV, 0, S1, 0, 32, 0, 0x100),
        sqe(SENDMSG, 0, S0, 0, 2, 0, 40), sqe(RECVMSG, 0, S1, 0, 2, 0, 40),
        sqe(POLL_ADD, 0, PR, 0, 0, 0, 1), submit(), poke(16), wait(1, 20), reap(),
        sqe(POLL_ADD, 0, S1, 0, 0, 0, 1), sqe(POLL_REMOVE, target=5), sqe(RECV, ASYNC, PR, 0, 8),
        submit(), poke(8), sqe(SOCKET, 0, 0, 0, 0, 0, 0), sqe(SPLICE, 0, PW, 0, 100, 0, 0, REG),
        sqe(TEE, 0, S0, 0, 10, 0, 0, PR), sqe(SHUTDOWN, 0, S0, 0, 0, 0, 1),
        sqe(READ, 0, EFD, 0, 8), sqe(EPOLL_CTL, 0, EPFD, 0, 0, 0, 1 | (1 << 14), S1),
        submit(), wait(2, 30), reap()),
    "paths": session(
        3, 0,
        sqe(OPENAT, 0, DIR, F2 << 3, 0, 0, 2 | 4), sqe(MKDIRAT, 0, DIR, D0 << 3),
        sqe(SYMLINKAT, 0, DIR, S0N << 3, target=F0 << 3), submit(), wait(3, 60), reap(),
        sqe(STATX, 0, DIR, F0 << 3, 0x7ff), sqe(OPENAT2, 0, DIR, S0N << 3, 0, 0, 2),
        sqe(LINKAT, 0, DIR, F0 << 3, target=D0F3 << 3), sqe(RENAMEAT, 0, DIR, F2 << 3, target=F0X << 3),
        sqe(WRITE, 0, LAST, 0, 64), sqe(CLOSE, 0, LAST), submit(), wait(4, 60), reap(),
        sqe(UNLINKAT, 0, DIR, D0F3 << 3), sqe(UNLINKAT, 0, DIR, D0 << 3, 0, 0, 1),
        sqe(FSETXATTR, 0, REG, 0, 10, 0, 1), sqe(FGETXATTR, 0, REG, 0, 100, 0, 1),
        sqe(SETXATTR, 0, 0, 0, 10, 0, 1, target=F0 << 3), sqe(GETXATTR, 0, 0, 0, 100, 0, 1, target=F0 << 3),
        submit(), wait(4, 60), reap()),
    "registered": session(
        3, 0,
        register(0, 0x81, 0), sqe(READ_FIXED, 0, REG, 0, 4096, 0, 0x400), sqe(WRITE_FIXED, 0, REG, 0, 100),
        register(4, 0x82, REG), sqe(READ, FIXED | (REG << 4), 0, 0, 100), submit(), wait(2, 30), reap(),
        register(6, 0x80, 1), register(2, 0x80, 1), register(8, 0, 0),
        sqe(PROVIDE_BUFFERS, 0, 0, 0, 3, 16, 1000, 1, 7), sqe(READ, BUFSEL, REG, 0, 500, 0, 0, 1),
        sqe(REMOVE_BUFFERS, 0, 0, 0, 2, 0, 0, 1), sqe(FILES_UPDATE, 0, REG, 0, 1, 0, 2),
        sqe(MSG_RING, 0, RING, 0, 42), sqe(CLOSE, 0, 0, 0, 0, 0, 1, 1),
        submit(), wait(4, 60), reap(), register(3), register(7), register(8, 1), register(10, 1, 4),
        register(11, 2, 2), reap()),
    "cancel": session(
        3, 2,
        sqe(POLL_ADD, 0, PR, 0, 0, 0, 1), sqe(ASYNC_CANCEL, target=0),
        sqe(POLL_ADD, 0, S1, 0, 0, 0, 1), sqe(ASYNC_CANCEL, 0, S1, 0, 0, 0, 2 << 12),
        sqe(READ, 0, PR, 0, 10), sqe(ASYNC_CANCEL, 0, 0, 0, 0, 0, 4 << 12), submit(), reap(),
        sqe(POLL_ADD, 0, PR, 0, 0, 0, 1), submit(), register(9, 0x40, 8), wait(1, 10), reap()),
    "overflow": session(
        1, 1,
        sqe(NOP), sqe(NOP), submit(False), sqe(NOP), sqe(NOP), submit(False), sqe(NOP, SKIP), sqe(NOP),
        submit(False), reap(1), sqe(NOP), sqe(NOP), submit(False), reap(15, True), reap()),
    "bad-pointers": session(
        3, 2,
        sqe(SEND, 0, S0, 0, 8), submit(), sqe(RECV, 0, S1, INVALID_NULL, 8), sqe(SEND, 0, S0, INVALID_NULL, 8),
        submit(), wait(2, 30), reap(),
        sqe(READ, 0, REG, INVALID_LOW, 10), sqe(READV, 0, REG, INVALID_KERNEL, 2),
        sqe(READV, 0, REG, STRADDLE_OBJ, 4), sqe(WRITE, 0, REG, STRADDLE_DATA, 100),
        sqe(TIMEOUT, 0, 0, INVALID_GUARD, 1), sqe(OPENAT, 0, DIR, INVALID_LOW),
        sqe(OPENAT, 0, DIR, STRADDLE_OBJ | (F0 << 3)), sqe(SENDMSG, 0, S0, STRADDLE_OBJ, 2),
        sqe(STATX, 0, DIR, 0, 0, 0, 0, 0, 0) + b"", sqe(ACCEPT, 0, S0, STRADDLE_OBJ),
        sqe(0xf5), sqe(NOP, 0xff), sqe(URING_CMD, 0, REG, 1), submit(), submit(), wait(4, 60), reap()),
}

os.makedirs(OUT, exist_ok=True)
for name, blob in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)
print("wrote %d seeds to %s" % (len(seeds), OUT))
