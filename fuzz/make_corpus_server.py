#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# fuzz/make_corpus_server.py - writes the seed corpus of the server fuzzer
# (fuzz/corpus_server) in the input format fuzz/fuzz_server_steps.h defines:
# a few well-formed client sessions (open, write, read, fsync, statx,
# truncate, registered buffers and fixed I/O, readv/writev, links, unlink) so
# the fuzzer starts deep in the dispatch code, plus a raw sound header and a
# client that corrupts its ring counters.
#   python3 fuzz/make_corpus_server.py
# Must never write outside fuzz/corpus_server.
import os, struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_server")
NOP, OPENAT, CLOSE, READ, WRITE, READV, WRITEV, READ_FIXED, WRITE_FIXED, FSYNC, \
    FTRUNCATE, UNLINK, STATX, REGISTER_BUFFERS, FAIL = range(15)
SERVE, SERVE_REAP = bytes([6]), bytes([11])   # c%5 == 1; c&8: reap


def sqe(op, fd=0, addr=0, length=0, off=0, flags=0, buf=0, opf=0, addr2=0):
    # addr/addr2: offsets into the data area (the steps subtract 64 from sel)
    return bytes([0, op, flags, fd & 0xff, buf]) + struct.pack(
        "<IHIBI", addr + 64, length, off, opf, addr2 + 64)


def data(off, b):
    return bytes([3]) + struct.pack("<HB", off, len(b)) + b


def poke(off, v):
    return bytes([2]) + struct.pack("<I", off)[:3] + struct.pack("<I", v)


def session(mode, pages, *parts):
    return bytes([mode, pages - 1]) + b"".join(parts)   # the steps add 1


seeds = {
    "open-write-read": session(
        0x0a, 2, data(0, b"a"), data(8, b"c"),
        sqe(OPENAT, addr=0, length=1), SERVE_REAP,
        sqe(OPENAT, addr=8, length=1, opf=1), SERVE_REAP,
        data(100, b"hello, ring" * 4),
        sqe(WRITE, fd=1, addr=100, length=44, off=0),
        sqe(READ, fd=0, addr=300, length=200, off=9000), SERVE_REAP,
        sqe(FSYNC, fd=1), sqe(STATX, fd=1, addr2=600), SERVE_REAP,
        sqe(FTRUNCATE, fd=1, off=5), sqe(CLOSE, fd=1), SERVE_REAP,
        sqe(UNLINK, addr=8, length=1), SERVE_REAP),
    # mode 0x04: 4 SQ and CQ entries, data area at region offset 4096; 4 pages:
    # the buffer part (second half) is region [12288, 20480)
    "fixed-buffers": session(
        0x04, 4, data(0, b"a"),
        data(12288, struct.pack("<QQ", 12288, 4096)),     # the iovec table, region 16384
        sqe(OPENAT, addr=0, length=1), SERVE_REAP,
        sqe(REGISTER_BUFFERS, addr=12288, length=1), SERVE_REAP,
        sqe(READ_FIXED, fd=0, addr=8192, length=4096, off=0, buf=0),
        sqe(WRITE_FIXED, fd=0, addr=8192, length=512, off=4096, buf=0), SERVE_REAP),
    # mode 0x06: 8 entries, data area at region 4096
    "vectors-links": session(
        0x06, 2, data(0, b"b"),
        data(64, struct.pack("<QQQQ", 4096 + 1024, 100, 4096 + 2048, 50)),
        sqe(OPENAT, addr=0, length=1, opf=2), SERVE,
        sqe(WRITEV, fd=0, addr=64, length=2, off=0, flags=1),
        sqe(READV, fd=0, addr=64, length=2, off=0, flags=2), SERVE_REAP,
        sqe(READ, fd=0, addr=200, length=100, off=0, flags=1),
        sqe(NOP), SERVE_REAP,
        bytes([19]), bytes([4]), SERVE_REAP),
    "raw-header": bytes([0x01, 0]) + struct.pack(
        "<IIQIIQQQQQQQQII", 0x55524E47, 1, 8192, 1, 1, 256, 512, 1024, 1088,
        4096, 4096, 6144, 2048, 0, 0) + b"\0" * 64 + sqe(NOP) + SERVE_REAP,
    "corrupt-counters": session(
        0x06, 1, sqe(NOP), sqe(NOP), SERVE_REAP, poke(256, 0xfffffff0), sqe(NOP), SERVE_REAP,
        poke(512 + 64, 0x7fffffff), SERVE_REAP),
}

os.makedirs(OUT, exist_ok=True)
for name, blob in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)
print("wrote %d seeds to %s" % (len(seeds), OUT))
