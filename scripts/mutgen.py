#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/mutgen.py - mutants that nobody chose: makes mutants mechanically from the C
sources of src/ with the classic operators, runs a seeded random sample of them against the
tests of the mutated file's area, and reports the mutation score per directory.

    python3 scripts/mutgen.py list [--seed S] [--sample N] [--dirs src/sfs,src/lib,...]
    python3 scripts/mutgen.py run  [--seed S] [--sample N] [--dirs ...] [--budget SECONDS]
                                   [--jobs J] [--report FILE.md] [--fail-under PCT] [--keep]

Must never touch the tree it is run from: it works on scratch copies of git's tracked (and
untracked, not ignored) files in a temporary directory, removed at the end (unless --keep),
and must never leave a process behind: whatever a test or a build started is ended when the
run ends or is interrupted. A mutant's identity never depends on the sample or on edits
elsewhere in its file (see mutant_id); the same seed on the same tree gives the same sample.
docs/MUTATION.md is the reference: operators, areas, coverage-based test selection, results.
Python 3 standard library only.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# Areas: which tests run for a mutant of which directory (test names are globs). A test of
# EXTERNAL runs only with --with-external (those run outside programs for minutes).
AREAS = {
    "src/sfs":    ["test_sfs_*"],
    "src/server": ["test_ur_*"],
    "src/lib":    ["test_ur_*", "test_chan_*"],
    "src/uring":  ["test_uring_*"],
    "src/sqlite": ["test_sqlite_*"],
    "src/bench":  ["test_bench_*"],
    "src/common": ["test_ur_*", "test_chan_*", "test_uring_*"],
}
EXTERNAL = {
    "src/uring":  ["test_dropin_*"],
}
EQUIVALENT = "tests/mutants/equivalent.txt"
# Files that change neither a build nor a test: left out of the tree's content hash, which
# keys the cache of coverage maps and unmutated test times.
UNHASHED = ["docs/*", "man/*", "debian/*", ".ci/*", "*.md", "tests/mutants/*", "scripts/mutgen.py",
            "*.pyc"]
RETRIES_UNMUTATED = 2
TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The coverage build: -O1, since at -O0 test_sfs_crash alone ran past 300 s on a loaded
# machine; its tests get 3x --timeout. Warnings other than -O2's are not errors there.
COVERAGE_CFLAGS = "-O1 -g --coverage -Wno-error"       # runs of an unmutated test before it counts as failing

# ---------------------------------------------------------------------------------------
# C tokens. Comments, string and character literals and preprocessor lines are never
# mutated: the lexer drops them (a preprocessor line with its continuations).

TOKEN_RE = re.compile(r"""
 (?P<ws>[ \t\r\f\v]+)
|(?P<nl>\n)
|(?P<comment>//[^\n]*|/\*.*?\*/)
|(?P<str>"(?:\\.|[^"\\\n])*")
|(?P<chr>'(?:\\.|[^'\\\n])*')
|(?P<num>(?:0[xX][0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)[uUlLfF]*)
|(?P<id>[A-Za-z_][A-Za-z0-9_]*)
|(?P<op>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|[][(){}.,;:?~!<>=+\-*/%&|^\#@\\])
""", re.S | re.X)

KEYWORDS = set("""auto break case char const continue default do double else enum extern float for
goto if inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Bool _Static_assert static_assert _Noreturn _Alignas _Alignof
_Atomic _Thread_local __thread typeof __typeof__ __attribute__ __asm__ asm bool""".split())
TYPE_WORDS = set("""char const double enum float int long short signed struct union unsigned void
volatile static register _Bool bool _Atomic __thread _Thread_local typeof __typeof__""".split())
ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}
REL_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
BOUND_NEIGHBOURS = set(REL_NEGATE) | {"+", "-", "*", "/", "%", "<<", ">>", "+=", "-=", "*=",
                                        "/=", "<<=", ">>=", "%="}
REL_BOUND = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
SIGNED_INT = set("int long short signed ssize_t off_t int8_t int16_t int32_t int64_t intptr_t "
                 "ptrdiff_t __s32 __s64 time_t".split())
UNSIGNED_INT = set("unsigned size_t uint8_t uint16_t uint32_t uint64_t uintptr_t __u8 __u16 __u32 "
                   "__u64 char mode_t uid_t gid_t pid_t dev_t ino_t nlink_t blksize_t blkcnt_t "
                   "socklen_t sfs_blk_t".split())


class Tok:
    __slots__ = ("kind", "text", "start", "end", "line", "col")

    def __init__(self, kind, text, start, end, line, col):
        self.kind, self.text, self.start, self.end, self.line, self.col = kind, text, start, end, line, col


def lex(src):
    toks, pos, line, bol, at_bol = [], 0, 1, 0, True
    n = len(src)
    while pos < n:
        if at_bol and src[pos] == "#":          # a preprocessor line, with its continuations
            end = pos
            while True:
                nl = src.find("\n", end)
                if nl < 0:
                    end = n
                    break
                # a block comment that crosses the newline belongs to the directive too
                seg = src[pos:nl]
                if seg.rstrip().endswith("\\") or seg.count("/*") > seg.count("*/"):
                    end = nl + 1
                    continue
                end = nl
                break
            line += src.count("\n", pos, end)
            bol = src.rfind("\n", 0, end) + 1 if "\n" in src[pos:end] else bol
            pos = end
            continue
        m = TOKEN_RE.match(src, pos)
        if not m:
            raise ValueError("line %d: cannot read %r" % (line, src[pos:pos + 10]))
        kind, text = m.lastgroup, m.group()
        if kind == "nl":
            line, bol, at_bol = line + 1, m.end(), True
        elif kind == "ws":
            pass
        elif kind == "comment":
            k = text.count("\n")
            if k:
                line, bol = line + k, pos + text.rfind("\n") + 1
        else:
            toks.append(Tok(kind, text, pos, m.end(), line, pos - bol + 1))
            at_bol = False
        pos = m.end()
    return toks


def match_pairs(toks):
    """Index of the matching bracket for each ( [ { and ) ] }; raises on an unbalanced file."""
    pair, stack = {}, []
    opening = {"(": ")", "[": "]", "{": "}"}
    for i, t in enumerate(toks):
        if t.kind != "op":
            continue
        if t.text in opening:
            stack.append(i)
        elif t.text in (")", "]", "}"):
            if not stack or opening[toks[stack[-1]].text] != t.text:
                raise ValueError("line %d: unbalanced %r" % (t.line, t.text))
            j = stack.pop()
            pair[i], pair[j] = j, i
    if stack:
        raise ValueError("line %d: unclosed %r" % (toks[stack[-1]].line, toks[stack[-1]].text))
    return pair


# ---------------------------------------------------------------------------------------
# Candidates. Each is one edit of one file: replace src[start:end] with repl.

class Mutant:
    __slots__ = ("file", "line", "col", "op", "orig", "repl", "start", "end", "func", "lo", "hi",
                 "flo", "fhi", "key", "id", "dir")

    def show(self, text):
        s = " ".join(text.split())
        return s if len(s) <= 70 else s[:67] + "..."

    def line_text(self):
        return "%s  %s:%d  %s  %s -> %s" % (self.id, self.file, self.line, self.op,
                                            self.show(self.orig), self.show(self.repl))


def area_of(path):
    d = os.path.dirname(path)
    return d if d in AREAS else None


class FileMutator:
    """Finds the function bodies of one file and the candidates in them."""

    def __init__(self, path, src):
        self.path, self.src = path, src
        self.toks = lex(src)
        self.pair = match_pairs(self.toks)
        self.out = []
        self.seen = {}

    def text(self, i, j):              # source text of tokens i..j-1
        return self.src[self.toks[i].start:self.toks[j - 1].end] if j > i else ""

    def add(self, func, op, start, end, repl, line, col, lo, hi):
        orig = self.src[start:end]
        if orig == repl:
            return
        base = "%s|%s|%s|%s" % (self.path, func, op, " ".join(orig.split()))
        k = self.seen.get(base, 0)
        self.seen[base] = k + 1
        m = Mutant()
        m.file, m.line, m.col, m.op, m.orig, m.repl = self.path, line, col, op, orig, repl
        m.start, m.end, m.func, m.lo, m.hi = start, end, func, lo, hi
        m.flo, m.fhi = self.frange
        m.key = "%s|%d" % (base, k)
        m.id = "g" + hashlib.sha1(m.key.encode()).hexdigest()[:8]
        m.dir = os.path.dirname(self.path)
        self.out.append(m)

    def functions(self):
        """(name, return-type tokens, body '{' index) of each function definition."""
        toks, depth, boundary = self.toks, 0, -1
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.kind == "op" and t.text == "{":
                if i > 0 and toks[i - 1].text == ")":
                    o = self.pair[i - 1]
                    if o > 0 and toks[o - 1].kind == "id" and toks[o - 1].text not in KEYWORDS:
                        rtype = [x.text for x in toks[boundary + 1:o - 1]]
                        yield toks[o - 1].text, rtype, i
                boundary = self.pair[i]
                i = boundary + 1
                continue
            if t.kind == "op" and t.text in ("(", "["):
                i = self.pair[i] + 1
                continue
            if t.kind == "op" and t.text == ";":
                boundary = i
            i += 1

    def run(self):
        for name, rtype, body in self.functions():
            self.body(name, rtype, body)
        return self.out

    # -- the operators --------------------------------------------------------------
    def returns(self, rtype):
        """The early returns that type-check for this return type: [(op, statement)]."""
        words = [w for w in rtype if w not in ("static", "inline", "extern", "const", "__inline__",
                                                "_Noreturn", "noreturn")]
        if "_Noreturn" in rtype or "noreturn" in rtype:
            return []
        if "*" in words:
            return [("return_early", "return NULL;")]
        if words == ["void"]:
            return [("return_early", "return;")]
        if "struct" in words or "union" in words:
            return []
        if "bool" in words or "_Bool" in words:
            return [("return_early", "return false;"), ("return_error", "return true;")]
        if any(w in SIGNED_INT for w in words) and "unsigned" not in words:
            return [("return_early", "return 0;"), ("return_error", "return -EIO;")]
        if any(w in UNSIGNED_INT or w in ("double", "float") for w in words):
            return [("return_early", "return 0;")]
        if words:                       # a typedef: an enum or integer most often
            return [("return_early", "return 0;")]
        return []

    def body(self, func, rtype, ob):
        toks, pair = self.toks, self.pair
        cb = pair[ob]
        self.frange = (toks[ob].line, toks[cb].line)
        rets = self.returns(rtype)
        for op, stmt in rets:
            self.add(func, op, toks[ob].start, toks[ob].end, "{ " + stmt, toks[ob].line,
                     toks[ob].col, toks[ob].line, toks[cb].line)
        is_void = rets == [("return_early", "return;")]
        stmt_start = ob + 1
        header_end = set()          # ')' that closes an if/while/for/switch header
        i = ob + 1
        skip_until = -1             # tokens of a case label or static_assert: no mutants
        while i < cb:
            t = toks[i]
            txt = t.text
            if t.kind == "id" and txt in ("if", "while", "for", "switch") and i + 1 < cb \
                    and toks[i + 1].text == "(":
                header_end.add(pair[i + 1])
                if txt == "if":
                    self.error_check(func, i, stmt_start)
            if t.kind == "id" and txt in ("case",):
                j = i + 1
                while j < cb and toks[j].text != ":":
                    j += 1
                skip_until = j
            if t.kind == "id" and txt in ("_Static_assert", "static_assert", "__attribute__",
                                          "sizeof", "_Alignof", "__builtin_offsetof", "offsetof") \
                    and i + 1 < cb and toks[i + 1].text == "(":
                skip_until = max(skip_until, pair[i + 1])
            sl = toks[stmt_start].line if stmt_start < cb else t.line
            if i > skip_until:
                if t.kind == "op" and txt in REL_NEGATE:
                    self.add(func, "rel_negate", t.start, t.end, REL_NEGATE[txt], t.line, t.col,
                             sl, t.line)
                    if txt in REL_BOUND:
                        self.add(func, "rel_bound", t.start, t.end, REL_BOUND[txt], t.line, t.col,
                                 sl, t.line)
                elif t.kind == "op" and txt in ("&&", "||"):
                    self.add(func, "and_or", t.start, t.end, "||" if txt == "&&" else "&&",
                             t.line, t.col, sl, t.line)
                elif t.kind == "num" and self.is_int(txt) and self.is_bound(i) and \
                        not self.in_decl_bracket(stmt_start, i):
                    v, fmt = self.int_value(txt)
                    self.add(func, "const_inc", t.start, t.end, fmt(v + 1), t.line, t.col, sl, t.line)
                    if v > 0:
                        self.add(func, "const_dec", t.start, t.end, fmt(v - 1), t.line, t.col,
                                 sl, t.line)
            # statement boundaries
            if t.kind == "op" and txt in ("{", "}"):
                stmt_start = i + 1
            elif t.kind == "op" and txt == ";":
                self.statement(func, stmt_start, i, is_void)
                stmt_start = i + 1
            elif t.kind == "op" and txt == ")" and i in header_end:
                stmt_start = i + 1
            elif t.kind == "id" and txt in ("else", "do") and i == stmt_start:
                stmt_start = i + 1
            elif t.kind == "op" and txt == ":" and (i == skip_until or (
                    i == stmt_start + 1 and toks[stmt_start].kind == "id")) or \
                    (t.kind == "op" and txt == ":" and toks[stmt_start].text == "default"):
                stmt_start = i + 1
            i += 1

    def is_bound(self, i):
        """A constant compared with, added to, shifted by, or indexing: a bound or a size."""
        p, n = self.toks[i - 1].text, self.toks[i + 1].text
        if p == "-" and self.toks[i - 2].text in REL_NEGATE:     # x == -1
            return True
        return p in BOUND_NEIGHBOURS or n in BOUND_NEIGHBOURS or p == "[" or n == "]"

    @staticmethod
    def is_int(txt):
        return re.fullmatch(r"(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*", txt) is not None

    @staticmethod
    def int_value(txt):
        m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|[0-9]+)([uUlL]*)", txt)
        digits, suffix = m.group(1), m.group(2)
        if digits[:2] in ("0x", "0X"):
            return int(digits, 16), lambda v: "0x%x%s" % (v, suffix)
        if len(digits) > 1 and digits[0] == "0":
            return int(digits, 8), lambda v: "0%o%s" % (v, suffix)
        return int(digits), lambda v: "%d%s" % (v, suffix)

    def in_decl_bracket(self, s, i):
        """A constant inside [ ] of a declaration (an array's size): a bigger buffer is no bug."""
        if not self.is_decl(s, i):
            return False
        depth = 0
        for k in range(s, i):
            if self.toks[k].text == "[":
                depth += 1
            elif self.toks[k].text == "]":
                depth -= 1
        return depth > 0

    def is_decl(self, s, e):
        toks = self.toks
        if s >= e:
            return False
        a = toks[s]
        if a.kind == "id" and a.text in TYPE_WORDS:
            return True
        if a.kind == "id" and a.text not in KEYWORDS and s + 1 < e:
            b = toks[s + 1]
            if b.kind == "id" or b.text == "*":
                return True
        return False

    def top_level(self, s, e, want):
        """First index in s..e-1 at bracket depth 0 whose text is in want."""
        k = s
        while k < e:
            x = self.toks[k].text
            if x in ("(", "[", "{"):
                k = self.pair[k] + 1
                continue
            if x in want:
                return k
            k += 1
        return -1

    def statement(self, func, s, e, is_void):
        """The statement toks[s:e] (e is its ';'): drop it, or zero its value."""
        toks = self.toks
        if s >= e:
            return
        first = toks[s]
        lo, hi = first.line, toks[e].line
        if first.kind == "id" and first.text == "return":
            if e - s >= 2 and not is_void and not (e - s == 2 and toks[s + 1].text == "0"):
                self.add(func, "zero_value", toks[s + 1].start, toks[e - 1].end, "0",
                         toks[s + 1].line, toks[s + 1].col, lo, hi)
            return
        if first.kind == "id" and first.text in KEYWORDS and first.text not in TYPE_WORDS:
            return                                  # break, continue, goto, ...
        if self.is_decl(s, e):
            a = self.top_level(s, e, {"=", ","})
            if a > 0 and toks[a].text == "=" and toks[a + 1].text != "{":
                z = self.top_level(a + 1, e, {","})
                z = e if z < 0 else z
                if not (z - a == 2 and toks[a + 1].text == "0"):
                    self.add(func, "zero_value", toks[a + 1].start, toks[z - 1].end, "0",
                             toks[a + 1].line, toks[a + 1].col, lo, hi)
            return
        # a call: f(...);  or (void)f(...);
        c = s
        if toks[c].text == "(" and c + 2 < e and toks[c + 1].text == "void" and toks[c + 2].text == ")":
            c += 3
        if toks[c].kind == "id" and c + 1 < e and toks[c + 1].text == "(" and self.pair[c + 1] == e - 1:
            self.add(func, "drop_call", first.start, toks[e - 1].end, "(void)0", first.line,
                     first.col, lo, hi)
            return
        a = self.top_level(s, e, ASSIGN_OPS | {"++", "--"})
        if a < 0:
            return
        self.add(func, "drop_assign", first.start, toks[e - 1].end, "(void)0", first.line,
                 first.col, lo, hi)
        if toks[a].text == "=" and not (e - a == 2 and toks[a + 1].text == "0") and a + 1 < e \
                and toks[a + 1].text != "{":
            self.add(func, "zero_value", toks[a + 1].start, toks[e - 1].end, "0",
                     toks[a + 1].line, toks[a + 1].col, lo, hi)

    def error_check(self, func, i, stmt_start):
        """if (cond) return/goto ...;  or  if (cond) { ...; return/goto ...; }: cond -> 0."""
        toks, pair = self.toks, self.pair
        o = i + 1
        c = pair[o]
        if c + 1 >= len(toks) or c - o < 2:
            return
        nxt = toks[c + 1]
        exits = ("return", "goto")
        if nxt.text == "{":
            end = pair[c + 1]
            # the block's last statement
            k = end - 1
            if toks[k].text != ";":
                return
            j = k - 1
            while j > c + 1 and toks[j].text not in (";", "{", "}"):
                j -= 1
            if toks[j + 1].text not in exits:
                return
        elif nxt.text not in exits:
            return
        cond = self.src[toks[o + 1].start:toks[c - 1].end]
        side = any(toks[k].text in ASSIGN_OPS | {"++", "--"} or
                   (toks[k].kind == "id" and toks[k + 1].text == "(" and toks[k].text not in KEYWORDS)
                   for k in range(o + 1, c))
        repl = "(void)(%s), 0" % cond if side else "0"
        self.add(func, "drop_check", toks[o + 1].start, toks[c - 1].end, repl, toks[o + 1].line,
                 toks[o + 1].col, toks[i].line, toks[c].line)


def source_files(top, dirs):
    out = []
    for d in dirs:
        full = os.path.join(top, d)
        if not os.path.isdir(full):
            raise SystemExit("mutgen: no such directory: %s" % d)
        for f in sorted(os.listdir(full)):
            if f.endswith((".c", ".h")):
                out.append(os.path.join(d, f))
    return out


def candidates(top, dirs):
    allm = []
    for path in source_files(top, dirs):
        with open(os.path.join(top, path), encoding="utf-8", errors="surrogateescape") as fh:
            src = fh.read()
        try:
            allm.extend(FileMutator(path, src).run())
        except ValueError as e:
            print("mutgen: %s skipped: %s" % (path, e), file=sys.stderr)
    allm.sort(key=lambda m: (m.file, m.line, m.col, m.op, m.repl))
    return allm


def sample(allm, seed, n, per_dir):
    if per_dir:                 # interleaved, so that a budget cuts every directory alike
        per = []
        for d in sorted({m.dir for m in allm}):
            ms = [m for m in allm if m.dir == d]
            per.append(random.Random("%s:%s" % (seed, d)).sample(ms, min(per_dir, len(ms))))
        return [ms[k] for k in range(max(map(len, per), default=0)) for ms in per if k < len(ms)]
    return random.Random(seed).sample(allm, min(n, len(allm)))


def pick_ids(allm, spec):
    """The candidates named by --ids, in the order named; None (and a message) when one is not
    among the candidates of this tree (its code changed or moved: a new mutant)."""
    if spec.startswith("@"):
        with open(spec[1:]) as fh:
            ids = [ln.split()[0] for ln in fh if ln.strip() and not ln.startswith("#")]
    else:
        ids = [i.strip() for i in spec.split(",") if i.strip()]
    by_id = {m.id: m for m in allm}
    missing = [i for i in ids if i not in by_id]
    if missing:
        print("mutgen: --ids: not among this tree's candidates (code changed or moved, or another "
              "--dirs): %s" % " ".join(missing), file=sys.stderr)
        return None
    return [by_id[i] for i in dict.fromkeys(ids)]


def read_equivalent(top):
    eq = {}
    path = os.path.join(top, EQUIVALENT)
    if os.path.exists(path):
        with open(path) as fh:
            for ln in fh:
                ln = ln.strip()
                if ln and not ln.startswith("#"):
                    parts = ln.split(None, 1)
                    eq[parts[0]] = parts[1] if len(parts) > 1 else ""
    return eq


# ---------------------------------------------------------------------------------------
# Running: scratch copies, builds, tests. Every child runs in a session of its own; the
# tests run with TMPDIR inside the scratch copy, so whatever they leave is found by its
# URTEST_RUN (tests/run.sh sets it) and ended.

class Failure(Exception):
    pass


def tail(path, n=25):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-n:])
    except OSError:
        return ""


CHILDREN = set()
CHILD_LOCK = threading.Lock()


def spawn(cmd, cwd, env, log, timeout):
    """Runs cmd in a new session; returns (rc, seconds); rc None when it overran timeout."""
    t0 = time.time()
    with open(log, "w") as out:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    with CHILD_LOCK:
        CHILDREN.add(p)
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_child(p)
        rc = None
    finally:
        with CHILD_LOCK:
            CHILDREN.discard(p)
    return rc, time.time() - t0


def end_child(p):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def reap_under(prefix):
    """Ends every process started by a test whose run directory is under prefix."""
    mark = ("URTEST_RUN=" + prefix).encode()
    for _ in range(3):
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as fh:
                    env = fh.read()
            except OSError:
                continue
            if any(v.startswith(mark) for v in env.split(b"\0")):
                found.append(int(pid))
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.3)


def copy_tree(top, dest):
    r = subprocess.run(["git", "-C", top, "ls-files", "-co", "--exclude-standard", "-z"],
                       stdout=subprocess.PIPE, check=False)
    if r.returncode != 0:
        raise Failure("git ls-files failed in %s" % top)
    h = hashlib.sha256()
    for f in sorted(x for x in r.stdout.decode().split("\0") if x):
        hashed = not any(fnmatch.fnmatchcase(f, g) for g in UNHASHED)
        src = os.path.join(top, f)
        if not os.path.isfile(src) or os.path.islink(src) and not os.path.exists(src):
            continue
        dst = os.path.join(dest, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.islink(src):
            os.symlink(os.readlink(src), dst)
            if hashed:
                h.update(b"L" + f.encode() + b"\0" + os.readlink(src).encode() + b"\0")
            continue
        shutil.copy2(src, dst)
        if hashed:
            with open(src, "rb") as fh:
                h.update(b"F" + f.encode() + b"\0" + hashlib.sha256(fh.read()).digest())
    return h.hexdigest()


class Tree:
    """One scratch copy of the tree: builds and runs tests in it."""

    def __init__(self, base, name, top, cflags=None):
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir)
        self.hash = copy_tree(top, self.dir)
        self.tmp = os.path.join(self.dir, ".tmp")
        os.makedirs(self.tmp)
        self.cflags = cflags

    def env(self, timeout=None):
        e = dict(os.environ)
        e["TMPDIR"] = self.tmp
        e["O"] = self.dir
        if timeout:
            e["TEST_TIMEOUT"] = str(int(timeout))
        return e

    def make(self, targets, log, jobs=2):
        cmd = ["make", "-C", self.dir, "-s", "-j%d" % jobs]
        if self.cflags:
            cmd += ["CFLAGS=" + self.cflags, "LDFLAGS=--coverage"]
        env = self.env()
        del env["O"]                    # targets are named relative to the tree (O=.)
        rc, _ = spawn(cmd + targets, self.dir, env, log, 3600)
        return rc == 0

    def run_test(self, test, timeout, log):
        """(status, seconds): status 'pass', 'fail', 'timeout' (the test's time limit)."""
        rc, secs = spawn(["sh", "tests/run.sh", test], self.dir, self.env(timeout), log,
                         timeout + 120)
        reap_under(self.tmp)
        if rc is None:
            return "timeout", secs
        if rc == 0:
            return "pass", secs
        with open(log, errors="replace") as fh:
            text = fh.read()
        if re.search(r"^FAIL %s \(exit (124|137)," % re.escape(test), text, re.M):
            return "timeout", secs
        return "fail", secs


def area_tests(tree_dir, d, external):
    names = sorted(f[:-2] for f in os.listdir(os.path.join(tree_dir, "tests"))
                   if f.startswith("test_") and f.endswith(".c"))
    globs = AREAS[d] + (EXTERNAL.get(d, []) if external else [])
    return [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in globs)]


def gcov_lines(tree):
    """{file: set(lines executed)} from the .gcda files of a coverage tree."""
    gcdas = []
    for root, _, files in os.walk(os.path.join(tree.dir, "obj")):
        gcdas.extend(os.path.join(root, f) for f in files if f.endswith(".gcda"))
    cov = {}
    for k in range(0, len(gcdas), 40):
        r = subprocess.run(["gcov", "--json-format", "--stdout"] + gcdas[k:k + 40], cwd=tree.dir,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
        for ln in r.stdout.decode(errors="replace").splitlines():
            ln = ln.strip()
            if not ln.startswith("{"):
                continue
            doc = json.loads(ln)
            for f in doc.get("files", []):
                name = os.path.normpath(f["file"])
                if name.startswith(tree.dir + "/"):
                    name = name[len(tree.dir) + 1:]
                if not name.startswith("src/"):
                    continue
                s = cov.setdefault(name, set())
                s.update(x["line_number"] for x in f.get("lines", []) if x.get("count", 0) > 0)
    return cov


class Cache:
    """Per tree content hash: each test's covered lines and its unmutated times."""

    def __init__(self, cdir, h):
        self.path = os.path.join(cdir, "tree-%s.json" % h[:20]) if cdir else None
        self.data = {"coverage": {}, "seconds": {}, "verified": {}}
        if self.path and os.path.exists(self.path):
            try:
                with open(self.path) as fh:
                    self.data = json.load(fh)
            except (OSError, ValueError):
                pass

    def save(self):
        if not self.path:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = "%s.%d.tmp" % (self.path, os.getpid())   # concurrent runs share the cache
        with open(tmp, "w") as fh:
            json.dump(self.data, fh)
        os.replace(tmp, self.path)


def say(*a):
    print(*a, flush=True)


def run_unmutated(tree, test, timeout, log):
    for k in range(RETRIES_UNMUTATED):
        st, secs = tree.run_test(test, timeout, log)
        if st == "pass":
            return secs
        if k + 1 < RETRIES_UNMUTATED:
            say("mutgen: %s failed unmutated (%s), once more" % (test, st))
    raise Failure("%s fails on the unmutated tree:\n%s" % (test, tail(log, 30)))


def coverage_map(args, base, top, tests, cache):
    """Fills cache coverage for tests not in it yet (one coverage build, each test once)."""
    todo = [t for t in tests if t not in cache.data["coverage"]]
    if not todo:
        say("mutgen: coverage of %d tests from the cache %s" % (len(tests), cache.path))
        return
    say("mutgen: coverage build (%s) for %d tests" % (COVERAGE_CFLAGS, len(todo)))
    ct = Tree(base, "cov", top, cflags=COVERAGE_CFLAGS)
    t0 = time.time()
    if not ct.make(build_targets(todo), os.path.join(base, "cov-build.log")):
        raise Failure("the coverage build failed:\n" + tail(os.path.join(base, "cov-build.log")))
    say("mutgen: coverage build done (%ds)" % (time.time() - t0))
    for t in todo:
        for root, _, files in os.walk(os.path.join(ct.dir, "obj")):
            for f in files:
                if f.endswith(".gcda"):
                    os.unlink(os.path.join(root, f))
        secs = run_unmutated(ct, t, 3 * args.timeout, os.path.join(base, "cov-test.log"))
        cov = gcov_lines(ct)
        cache.data["coverage"][t] = {f: sorted(v) for f, v in cov.items()}
        cache.data["seconds"].setdefault(t, round(secs, 1))
        say("mutgen: coverage %s: %d lines of src/ (%.0fs)" % (t, sum(len(v) for v in cov.values()), secs))
        cache.save()
    if not args.keep:
        shutil.rmtree(ct.dir, ignore_errors=True)


def tests_for(m, tests, cache, use_cov):
    """The tests that execute the mutated statement; when none does, those that execute its
    function (optimized code's line numbers are approximate: at -O1 gcov may put a function's
    last 'return -1;' on another line); none: the mutant is not covered."""
    if not use_cov:
        return list(tests)
    for lo, hi in ((m.lo, m.hi), (m.flo, m.fhi)):
        out = [t for t in tests
               if any(lo <= ln <= hi for ln in cache.data["coverage"].get(t, {}).get(m.file, ()))]
        if out:
            return out
    return []


def build_targets(tests):
    """What a run of these tests needs: the programs, the SQLite extension, the libraries the
    tests preload (tests/lib/NAME.c -> obj/t/libNAME.so) and the tests."""
    libs = sorted("obj/t/lib%s.so" % f[:-2] for f in os.listdir(os.path.join(TOP, "tests/lib"))
                  if f.endswith(".c"))
    return ["progs", "liburfs_sqlite.so"] + libs + ["obj/t/" + t for t in tests]


def apply_mutant(tree, m):
    path = os.path.join(tree.dir, m.file)
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        src = fh.read()
    if src[m.start:m.end] != m.orig:
        raise Failure("%s: %s does not apply at %s:%d" % (m.id, m.orig, m.file, m.line))
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(src[:m.start] + m.repl + src[m.end:])
    return src


def restore(tree, m, src):
    with open(os.path.join(tree.dir, m.file), "w", encoding="utf-8", errors="surrogateescape") as fh:
        fh.write(src)


def verify_killer(tree, test, cache, args, lock):
    """A test that killed a mutant must pass on the unmutated tree of this build."""
    with lock:
        if cache.data["verified"].get(test):
            return
    log = os.path.join(tree.dir, ".verify.log")
    if not tree.make(build_targets([test]), log, jobs=2):
        raise Failure("the unmutated tree does not build again:\n" + tail(log))
    secs = run_unmutated(tree, test, args.timeout, log)
    with lock:
        cache.data["verified"][test] = True
        cache.data["seconds"][test] = round(secs, 1)
        cache.save()
    say("mutgen: unmutated %s passes in this build (%.0fs)" % (test, secs))


def run_mutant(tree, m, tests, cache, args):
    """Returns (status, seconds, detail)."""
    t0 = time.time()
    log = os.path.join(tree.dir, ".mutant.log")
    src = apply_mutant(tree, m)
    try:
        if not tree.make(build_targets(tests), log, jobs=2):
            with open(log, errors="replace") as fh:
                err = [ln.strip() for ln in fh if "error" in ln]
            return "NOBUILD", time.time() - t0, err[0][:150] if err else "build failed"
        secs = cache.data["seconds"]
        for t in sorted(tests, key=lambda x: (secs.get(x, 1e9), x)):
            limit = args.timeout if args.timeout_fixed else \
                min(args.timeout, max(60, 4 * secs.get(t, args.timeout) + 30))
            st, _ = tree.run_test(t, limit, log)
            if st == "fail":
                return "KILLED", time.time() - t0, t
            if st == "timeout":
                return "TIMEOUT", time.time() - t0, "%s (%ds limit)" % (t, limit)
        return "SURVIVED", time.time() - t0, "tests passed: " + " ".join(tests)
    finally:
        restore(tree, m, src)


def report(results, sampled, ran_all, elapsed, args, out):
    dirs = sorted({m.dir for m in sampled})
    rows = []
    tot = {"KILLED": 0, "SURVIVED": 0, "EQUIV": 0, "NOBUILD": 0}
    for d in dirs:
        rs = [r for r in results if r[0].dir == d]
        k = sum(1 for r in rs if r[1] in ("KILLED", "TIMEOUT"))
        s = sum(1 for r in rs if r[1] == "SURVIVED")
        e = sum(1 for r in rs if r[1] == "EQUIV")
        nb = sum(1 for r in rs if r[1] == "NOBUILD")
        tot["KILLED"] += k
        tot["SURVIVED"] += s
        tot["EQUIV"] += e
        tot["NOBUILD"] += nb
        score = 100.0 * k / (k + s) if k + s else None
        rows.append((d, k + s, k, s, e, nb, score))
    lines = ["", "| dir | run | killed | survived | equivalent | score | not built |",
             "|---|---|---|---|---|---|---|"]
    for d, run, k, s, e, nb, score in rows:
        lines.append("| %s | %d | %d | %d | %d | %s | %d |" % (
            d, run, k, s, e, "-" if score is None else "%.0f%%" % score, nb))
    lines.append("")
    if not ran_all:
        lines.append("budget spent: ran %d of the %d sampled mutants" % (len(results), len(sampled)))
    lines.append("generated mutants: %d killed, %d survived, %d equivalent, %d not built (%ds)" % (
        tot["KILLED"], tot["SURVIVED"], tot["EQUIV"], tot["NOBUILD"], elapsed))
    say("\n".join(lines))
    if out:
        md = ["# Generated mutants: %s, %d sampled, %d run" % (
                  "--ids (a rerun of chosen IDs)" if args.ids else "seed %s" % args.seed, len(sampled), len(results)),
              "", "    " + " ".join(sys.argv), ""] + lines[1:] + ["", "## Survivors", ""]
        for m, st, secs, detail in results:
            if st == "SURVIVED":
                md.append("- %s `%s:%d` %s (in %s): `%s` -> `%s` (%s)" % (
                    m.id, m.file, m.line, m.op, m.func, m.show(m.orig), m.show(m.repl), detail))
        md += ["", "## Not built", ""]
        for m, st, secs, detail in results:
            if st == "NOBUILD":
                md.append("- %s `%s:%d` %s: %s" % (m.id, m.file, m.line, m.op, detail))
        with open(out, "w") as fh:
            fh.write("\n".join(md) + "\n")
    return rows


def cmd_run(args, top, sampled):
    eq = read_equivalent(top)
    base = tempfile.mkdtemp(prefix="mutgen.")
    start = time.time()
    results = []
    ran_all = True
    try:
        say("mutgen: %d mutants %s; scratch copy in %s" % (
            len(sampled), "named by --ids" if args.ids else "sampled (seed %r)" % args.seed, base))
        trees = []
        for j in range(args.jobs):
            trees.append(Tree(base, "w%d" % j, top))
        cache = Cache(None if args.no_cache else args.cache_dir, trees[0].hash)
        dtests = {d: area_tests(trees[0].dir, d, args.with_external) for d in sorted({m.dir for m in sampled})}
        for d, ts in dtests.items():
            if not ts:
                raise Failure("no tests for the area %s in tests/ (see AREAS)" % d)
        need = sorted({t for ts in dtests.values() for t in ts})
        if not args.no_coverage:
            coverage_map(args, base, top, need, cache)
        todo = [m for m in sampled if m.id not in eq]
        sel = {m.id: tests_for(m, dtests[m.dir], cache, not args.no_coverage) for m in todo}
        need = sorted({t for ts in sel.values() for t in ts})
        say("mutgen: building the scratch copies")
        for tr in trees:
            if not tr.make(build_targets(need), os.path.join(base, "build.log")):
                raise Failure("the unmutated tree does not build:\n" + tail(os.path.join(base, "build.log")))
        # With coverage, the coverage pass ran each test unmutated (at -O0); a test that kills
        # a mutant is run unmutated in this build too, once, before its kill counts.
        unverified = [t for t in need if t not in cache.data["verified"]] \
            if args.no_coverage and not args.trusted else []
        if unverified:
            say("mutgen: %d tests, each run once unmutated" % len(unverified))
        for t in unverified:
            secs = run_unmutated(trees[0], t, args.timeout, os.path.join(base, "verify.log"))
            cache.data["seconds"][t] = round(secs, 1)
            cache.data["verified"][t] = True
            say("mutgen: unmutated %s passes (%.0fs)" % (t, secs))
            cache.save()
        queue = list(sampled)
        lock = threading.Lock()
        errors = []

        def worker(tree):
            nonlocal ran_all
            while True:
                with lock:
                    if not queue or errors:
                        return
                    if args.budget and time.time() - start > args.budget:
                        ran_all = False
                        return
                    m = queue.pop(0)
                if m.id in eq:
                    res = (m, "EQUIV", 0.0, eq[m.id])
                elif not sel[m.id]:
                    res = (m, "SURVIVED", 0.0, "not covered by any test of %s" % m.dir)
                else:
                    try:
                        st, secs, detail = run_mutant(tree, m, sel[m.id], cache, args)
                        if st in ("KILLED", "TIMEOUT"):
                            verify_killer(tree, detail.split()[0], cache, args, lock)
                    except Failure as e:
                        with lock:
                            errors.append(str(e))
                        return
                    res = (m, st, secs, detail)
                with lock:
                    results.append(res)
                    what = {"KILLED": "by ", "TIMEOUT": "by "}.get(res[1], "")
                    say("%-8s %s  %s:%d  %s  %s -> %s  (%.0fs) %s%s" % (
                        res[1], m.id, m.file, m.line, m.op, m.show(m.orig), m.show(m.repl),
                        res[2], what, res[3]))

        if args.jobs == 1:
            worker(trees[0])
        else:
            th = [threading.Thread(target=worker, args=(tr,), daemon=True) for tr in trees]
            for x in th:
                x.start()
            for x in th:
                while x.is_alive():
                    x.join(0.5)
        if errors:
            raise Failure(errors[0])
        if queue and not ran_all:
            say("mutgen: budget of %ds spent: %d of the %d sampled mutants run" % (
                args.budget, len(results), len(sampled)))
        order = {m.id: k for k, m in enumerate(sampled)}
        results.sort(key=lambda r: order[r[0].id])
        rows = report(results, sampled, ran_all and not queue, time.time() - start, args, args.report)
        if args.fail_under is not None:
            low = [r for r in rows if r[6] is not None and r[6] < args.fail_under]
            if low:
                say("mutgen: score under %g%% in %s" % (args.fail_under, ", ".join(r[0] for r in low)))
                return 1
        return 0
    finally:
        with CHILD_LOCK:
            kids = list(CHILDREN)
        for p in kids:
            end_child(p)
        reap_under(base)
        if args.keep:
            say("mutgen: kept %s" % base)
        else:
            shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description="Generated mutants of src/ (docs/MUTATION.md)")
    ap.add_argument("command", choices=["list", "run"])
    ap.add_argument("--seed", default="0", help="any string (CI passes the commit id)")
    ap.add_argument("--sample", type=int, default=50, help="mutants drawn from the candidates")
    ap.add_argument("--per-dir", type=int, default=0,
                    help="draw this many from each directory instead (seeded per directory)")
    ap.add_argument("--dirs", default=",".join(sorted(AREAS)), help="comma-separated source dirs")
    ap.add_argument("--ids", help="run these mutants (IDs, comma-separated, or @FILE with one ID a line, "
                                  "the first word of each line) instead of a sample: a rerun of survivors")
    ap.add_argument("--budget", type=int, default=0, help="seconds after which no mutant is started")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run at once (one scratch copy each)")
    ap.add_argument("--report", help="write a Markdown report to this file")
    ap.add_argument("--fail-under", type=float, help="exit 1 if a directory scores under PCT")
    ap.add_argument("--timeout", type=int, default=300,
                    help="most seconds per test run (a mutant gets 4x the unmutated time + 30 s, at least 60)")
    ap.add_argument("--timeout-fixed", action="store_true", help="always give a test --timeout seconds")
    ap.add_argument("--with-external", action="store_true", help="add EXTERNAL tests (test_dropin_*)")
    ap.add_argument("--no-coverage", action="store_true", help="run all area tests for each mutant")
    ap.add_argument("--trusted", action="store_true",
                    help="with --no-coverage: the tests passed unmutated on this tree already (CI's "
                         "make test), so they are not run once first; a killing test still is")
    ap.add_argument("--cache-dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                        os.path.expanduser("~/.cache"), "urfs-mutgen"),
                    help="where coverage maps and unmutated times are kept, per tree content hash")
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the scratch copies")
    args = ap.parse_args()
    top = TOP
    dirs = [d.strip().rstrip("/") for d in args.dirs.split(",") if d.strip()]
    for d in dirs:
        if d not in AREAS:
            ap.error("%s has no area (AREAS at the top of scripts/mutgen.py)" % d)
    if args.jobs < 1 or args.sample < 1:
        ap.error("--jobs and --sample must be 1 or more")
    allm = candidates(top, dirs)
    if args.ids:
        sampled = pick_ids(allm, args.ids)
        if sampled is None:
            return 2
    else:
        sampled = sample(allm, args.seed, args.sample, args.per_dir)
    if args.command == "list":
        for m in sampled:
            say(m.line_text())
        say("# %d of %d candidates (%s)" % (len(sampled), len(allm),
                                             "--ids" if args.ids else "seed %r" % args.seed))
        return 0

    def on_signal(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        return cmd_run(args, top, sampled)
    except Failure as e:
        print("mutgen: error: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mutgen: interrupted; what it started is ended", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
