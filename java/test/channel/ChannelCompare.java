// SPDX-License-Identifier: MIT
// ChannelCompare.java - runs one script of FileChannel calls on the JDK's own
// FileChannel (a host file) and on UrfsFileChannel (each engine named on the
// command line), records every result and every exception's class, and
// compares the records line by line and the files' bytes at the end; then
// checks what the JDK has no counterpart for (batches, registered buffers,
// error texts) against fixed expectations. Run by tests/test_java_channel.c:
//   java -cp urfs.jar:urfs-tests.jar ChannelCompare DIR IMAGE ENGINE...
// (ENGINE: psync, io_uring, ur; IMAGE: a formatted SimpleFS image for ur).
// Prints "ok ENGINE" per engine; exits 1 at the first difference, with both lines.
// Must never compare a script with itself: the reference is always the JDK's channel.

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.urfs.channel.Engine;
import org.urfs.channel.UrfsFileChannel;

public final class ChannelCompare {
    static final OpenOption R = StandardOpenOption.READ, W = StandardOpenOption.WRITE,
        C = StandardOpenOption.CREATE, T = StandardOpenOption.TRUNCATE_EXISTING;

    /** Opens file name of one implementation. */
    interface Opener {
        FileChannel open(String name, OpenOption... o) throws IOException;
    }

    interface Step {
        Object run() throws Exception;
    }

    /** The record of one run: a line per step, "label = result" or "label ! ExceptionClass". */
    static final class Rec {
        final List<String> lines = new ArrayList<>();
        final Rec ref;       // the JDK's record, compared line by line as we go (null: this is it)
        final String label;

        Rec(Rec ref, String label) {
            this.ref = ref;
            this.label = label;
        }

        /** Adds a line; the first one that differs from the JDK's ends the run
         * (a later step might wait for ever on what went wrong). */
        void add(String line) {
            int k = lines.size();
            lines.add(line);
            String x = ref == null ? line : k < ref.lines.size() ? ref.lines.get(k) : "(nothing)";
            if (!x.equals(line)) {
                System.out.println("FAIL: " + label + " differs from the JDK at step " + k + ":\n  jdk:  " + x + "\n  urfs: " + line);
                System.exit(1);
            }
        }

        void step(String label, Step s) {
            String r;
            try {
                Object v = s.run();
                r = " = " + show(v);
            } catch (Exception e) {
                r = " ! " + e.getClass().getName();
            }
            add(label + r);
        }

        static String show(Object v) {
            if (v instanceof ByteBuffer) {
                ByteBuffer b = (ByteBuffer) v;
                byte[] a = new byte[b.limit()];
                b.duplicate().position(0).get(a);
                return "buf pos " + b.position() + " " + Arrays.hashCode(a);
            }
            if (v instanceof FileLock) {
                FileLock l = (FileLock) v;
                return "lock " + l.position() + "+" + l.size() + (l.isShared() ? " shared" : "")
                    + (l.isValid() ? " valid" : " invalid");
            }
            if (v instanceof FileChannel)
                return "channel";
            return String.valueOf(v);
        }
    }

    static ByteBuffer heap(int n, int seed) {
        ByteBuffer b = ByteBuffer.allocate(n);
        for (int i = 0; i < n; i++)
            b.put((byte) (i * 31 + seed));
        return b.flip();
    }

    static ByteBuffer direct(int n, int seed) {
        return ByteBuffer.allocateDirect(n).put(heap(n, seed)).flip();
    }

    /** The script. Files: "a" (the main one), "b" (a transfer's other end). */
    static Rec script(Opener op, Rec ref, String label) throws Exception {
        Rec r = new Rec(ref, label);
        FileChannel a = op.open("a", R, W, C, T);
        r.step("size0", a::size);
        r.step("write heap", () -> a.write(heap(100, 1)));
        r.step("position", a::position);
        r.step("pwrite direct", () -> a.write(direct(50, 2), 1000));
        r.step("position unchanged", a::position);
        r.step("size", a::size);
        ByteBuffer h30 = ByteBuffer.allocate(30);
        r.step("position(0)", () -> a.position(0));
        r.step("read heap", () -> a.read(h30));
        r.step("read heap data", () -> h30);
        r.step("position after read", a::position);
        r.step("position(1040)", () -> a.position(1040));
        ByteBuffer d64 = ByteBuffer.allocateDirect(64);
        r.step("short read", () -> a.read(d64));
        r.step("short read data", () -> d64);
        r.step("position after short read", a::position);
        r.step("read at eof", () -> a.read(ByteBuffer.allocate(8)));
        r.step("pread past eof", () -> a.read(ByteBuffer.allocate(8), 2000));
        r.step("pread empty buffer", () -> a.read(ByteBuffer.allocate(0), 10));
        r.step("pread hole", () -> { ByteBuffer b = ByteBuffer.allocate(40); int n = a.read(b, 90); return n + " " + Rec.show(b); });
        r.step("pread negative", () -> a.read(ByteBuffer.allocate(8), -1));
        r.step("pwrite negative", () -> a.write(heap(8, 3), -1));
        r.step("position negative", () -> a.position(-1));
        r.step("truncate negative", () -> a.truncate(-1));
        r.step("read null", () -> a.read((ByteBuffer) null));
        r.step("read read-only buffer", () -> a.read(ByteBuffer.allocate(8).asReadOnlyBuffer(), 0));
        r.step("write read-only heap", () -> a.write(heap(9, 4).asReadOnlyBuffer(), 1100));
        ByteBuffer[] sc = { ByteBuffer.allocate(10), ByteBuffer.allocateDirect(20), ByteBuffer.allocate(5) };
        r.step("position(0) again", () -> a.position(0));
        r.step("scatter read", () -> a.read(sc));
        r.step("scatter data", () -> Rec.show(sc[0]) + Rec.show(sc[1]) + Rec.show(sc[2]));
        r.step("position after scatter", a::position);
        r.step("position(200)", () -> a.position(200));
        r.step("gather write", () -> a.write(new ByteBuffer[] { heap(7, 5), direct(9, 6), heap(0, 0) }));
        r.step("position after gather", a::position);
        r.step("position(a.size)", () -> a.position(a.size()));
        r.step("scatter at eof", () -> a.read(new ByteBuffer[] { ByteBuffer.allocate(4), ByteBuffer.allocate(4) }));
        r.step("scatter empty", () -> a.read(new ByteBuffer[] { ByteBuffer.allocate(0) }));
        r.step("scatter bad index", () -> a.read(sc, 2, 5));
        r.step("gather bad index", () -> a.write(sc, -1, 1));
        r.step("position(1080)", () -> a.position(1080));
        r.step("scatter across eof", () -> a.read(new ByteBuffer[] { ByteBuffer.allocate(20), ByteBuffer.allocate(20) }));
        r.step("write past eof", () -> a.write(heap(30, 7), 5000));
        r.step("size after hole", a::size);
        r.step("position(216)", () -> a.position(216));
        r.step("truncate 3000", () -> a.truncate(3000));
        r.step("size", a::size);
        r.step("position", a::position);
        r.step("truncate 100", () -> a.truncate(100));
        r.step("position clipped", a::position);
        r.step("position(101)", () -> a.position(101));
        r.step("truncate to its size", () -> a.truncate(100));
        r.step("position clipped by one, file unchanged", a::position);
        r.step("position(300)", () -> a.position(300));
        r.step("truncate larger", () -> a.truncate(200));
        r.step("size not grown", a::size);
        r.step("position clipped again", a::position);
        r.step("write at position", () -> a.write(heap(50, 8)));
        r.step("size", a::size);
        r.step("force meta", () -> { a.force(true); return "forced"; });
        r.step("force data", () -> { a.force(false); return "forced"; });

        // locks: overlap inside this JVM, across channels of one file
        FileLock[] l = new FileLock[4];
        r.step("lock 0+10", () -> l[0] = a.lock(0, 10, false));
        r.step("trylock overlap same channel", () -> a.tryLock(5, 10, false));
        FileChannel a2 = op.open("a", R, W);
        r.step("trylock overlap other channel", () -> a2.tryLock(5, 10, true));
        r.step("lock overlap other channel", () -> a2.lock(9, 1, false));
        r.step("trylock adjacent other channel", () -> l[1] = a2.tryLock(10, 10, true));
        r.step("lock 0+0 (to the end)", () -> l[2] = a.lock(100, 0, true));
        r.step("lock overlapping the end", () -> a2.tryLock(1L << 40, 1, true));
        r.step("lock negative size", () -> a.tryLock(0, -1, false));
        r.step("lock negative position", () -> a.lock(-5, 1, false));
        r.step("lock overflowing", () -> a.lock(10, Long.MAX_VALUE, false));
        r.step("release", () -> { l[0].release(); return l[0]; });
        r.step("release again", () -> { l[0].release(); return l[0]; });
        r.step("relock after release", () -> l[3] = a2.tryLock(0, 5, false));
        r.step("l1", () -> l[1]);
        r.step("channel of lock", () -> l[1].channel() == a2);
        r.step("overlaps", () -> l[1].overlaps(19, 1) + " " + l[1].overlaps(20, 1) + " " + l[1].overlaps(0, 10));
        r.step("close a2", () -> { a2.close(); return a2.isOpen(); });
        r.step("l1 after close", () -> l[1]);
        r.step("release after close", () -> { l[1].release(); return "released"; });
        r.step("relock freed range", () -> { FileLock x = a.tryLock(0, 20, false); x.release(); return x; });
        r.step("release l2", () -> { l[2].release(); return l[2]; });
        r.step("whole lock", () -> { FileLock x = a.lock(); String s = Rec.show(x); x.close(); return s + " " + Rec.show(x); });

        // open modes
        FileChannel ro = op.open("a", R);
        r.step("ro write", () -> ro.write(heap(4, 9)));
        r.step("ro pwrite", () -> ro.write(heap(4, 9), 0));
        r.step("ro gather", () -> ro.write(new ByteBuffer[] { heap(4, 9) }));
        r.step("ro truncate", () -> ro.truncate(0));
        r.step("ro exclusive lock", () -> ro.tryLock(0, 1, false));
        r.step("ro shared lock", () -> { FileLock x = ro.tryLock(0, 1, true); x.release(); return x; });
        r.step("ro transferFrom", () -> ro.transferFrom(Channels.newChannel(new ByteArrayInputStream(new byte[4])), 0, 4));
        r.step("ro read", () -> { ByteBuffer b = ByteBuffer.allocate(64); ro.read(b); return b; });
        r.step("ro force", () -> { ro.force(true); return "forced"; });
        FileChannel wo = op.open("a", W);
        r.step("wo read", () -> wo.read(ByteBuffer.allocate(4)));
        r.step("wo pread", () -> wo.read(ByteBuffer.allocate(4), 0));
        r.step("wo scatter", () -> wo.read(new ByteBuffer[] { ByteBuffer.allocate(4) }));
        r.step("wo shared lock", () -> wo.tryLock(0, 1, true));
        r.step("wo transferTo", () -> wo.transferTo(0, 4, Channels.newChannel(new ByteArrayOutputStream())));
        r.step("wo write", () -> wo.write(heap(6, 10)));
        r.step("wo position(50)", () -> wo.position(50));   // an overlapping copy within one file is unspecified
        r.step("ro transferTo wo", () -> ro.transferTo(0, 10, wo));
        r.step("wo transferTo ro", () -> ro.transferFrom(wo, 0, 10));
        r.step("close ro wo", () -> { ro.close(); wo.close(); return "closed"; });

        // transfers
        FileChannel b = op.open("b", R, W, C, T);
        r.step("b fill", () -> b.write(heap(700, 11)));
        r.step("b position(100)", () -> b.position(100));
        r.step("transferTo a->b", () -> a.transferTo(10, 120, b));
        r.step("b position after", b::position);
        r.step("transferTo past eof", () -> a.transferTo(a.size() + 10, 10, b));
        r.step("transferTo short", () -> a.transferTo(a.size() - 7, 100, b));
        r.step("transferTo negative", () -> a.transferTo(-1, 10, b));
        r.step("b position(30)", () -> b.position(30));
        r.step("transferFrom b->a", () -> a.transferFrom(b, 40, 55));
        r.step("b position after from", b::position);
        r.step("transferFrom past size", () -> a.transferFrom(b, a.size() + 1, 10));
        r.step("transferFrom at size", () -> a.transferFrom(b, a.size(), 10));
        r.step("transferFrom negative", () -> a.transferFrom(b, 0, -1));
        r.step("transferTo stream", () -> {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            long n = a.transferTo(5, 77, Channels.newChannel(out));
            return n + " " + Arrays.hashCode(out.toByteArray());
        });
        r.step("transferFrom stream", () -> a.transferFrom(Channels.newChannel(new ByteArrayInputStream(heap(33, 12).array())), 20, 40));
        r.step("transferTo closed target", () -> { FileChannel x = op.open("b", R); x.close(); return a.transferTo(0, 1, x); });
        r.step("a size", a::size);

        // interruption: an interrupted thread's call closes the channel
        FileChannel c = op.open("b", R, W);
        r.step("interrupted read", () -> {
            Thread.currentThread().interrupt();
            try {
                return c.read(ByteBuffer.allocate(8), 0);
            } finally {
                r.add("  interrupted flag " + Thread.interrupted());
            }
        });
        r.step("open after interrupt", c::isOpen);
        r.step("read after interrupt", () -> c.read(ByteBuffer.allocate(8)));
        FileChannel c2 = op.open("b", R, W);
        r.step("interrupted lock", () -> {
            Thread.currentThread().interrupt();
            try {
                return c2.lock(0, 1, false);
            } finally {
                r.add("  interrupted flag " + Thread.interrupted());
            }
        });
        r.step("open after interrupted lock", c2::isOpen);
        r.step("lock free after interrupted lock", () -> { FileLock x = a.tryLock(); x.release(); return x; });
        FileChannel c4 = op.open("b", R, W);
        r.step("reader interrupted by another thread", () -> {
            String[] got = { "nothing" };
            Thread t = new Thread(() -> {
                ByteBuffer buf = ByteBuffer.allocateDirect(4096);
                try {
                    for (;;)
                        c4.read(buf.clear(), 0);
                } catch (IOException e) {
                    got[0] = e.getClass().getName();
                }
            });
            t.start();
            Thread.sleep(50);
            new Thread(t::interrupt).start();   // a deadlock stays in that thread
            t.join(20_000);
            return (t.isAlive() ? "still running (deadlock?)" : got[0]) + " open " + c4.isOpen();
        });
        FileChannel c3 = op.open("b", R, W);
        FileLock[] held = new FileLock[1];
        r.step("lock held elsewhere", () -> held[0] = b.lock(0, 10, false));
        r.step("lock held by another channel", () -> c3.lock(0, 10, false));
        r.step("trylock held by another channel", () -> c3.tryLock(9, 10, true));

        // closed
        r.step("close", () -> { a.close(); return a.isOpen(); });
        r.step("close twice", () -> { a.close(); return a.isOpen(); });
        r.step("closed read", () -> a.read(ByteBuffer.allocate(4)));
        r.step("closed pread", () -> a.read(ByteBuffer.allocate(4), 0));
        r.step("closed write", () -> a.write(heap(4, 1)));
        r.step("closed position", a::position);
        r.step("closed set position", () -> a.position(3));
        r.step("closed size", a::size);
        r.step("closed truncate", () -> a.truncate(1));
        r.step("closed force", () -> { a.force(true); return "forced"; });
        r.step("closed lock", () -> a.tryLock());
        r.step("closed transferTo", () -> a.transferTo(0, 1, b));
        r.step("transferFrom closed src", () -> b.transferFrom(a, 0, 1));
        r.step("held lock, closing b", () -> { b.close(); return held[0]; });
        c.close(); c2.close(); c3.close(); c4.close();
        r.step("open missing", () -> op.open("missing", R));
        r.step("open missing for write", () -> op.open("missing", W));
        return r;
    }

    static byte[] contents(Opener op, String name) throws IOException {
        try (FileChannel ch = op.open(name, R)) {
            ByteBuffer b = ByteBuffer.allocate((int) ch.size());
            while (b.hasRemaining() && ch.read(b) > 0) {
            }
            return b.array();
        }
    }

    static int fails;

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL: " + what);
            fails++;
        }
    }

    /** What the JDK has no counterpart for: batches, registered buffers, error texts. */
    static void extras(Engine e, Opener op, String label) throws IOException {
        UrfsFileChannel ch = (UrfsFileChannel) op.open("p", R, W, C, T);
        int page = 8192, n = 16;
        ByteBuffer[] w = new ByteBuffer[n];
        long[] pos = new long[n];
        for (int i = 0; i < n; i++) {
            w[i] = i % 2 == 0 ? direct(page, i) : heap(page, i);
            pos[i] = (long) (n - 1 - i) * page;
        }
        long[] res = ch.writeFully(w, pos);
        for (int i = 0; i < n; i++)
            check(res[i] == page && !w[i].hasRemaining(), label + " batch write op " + i + ": " + res[i]);
        check(ch.size() == (long) n * page, label + " size after batch write " + ch.size());
        ByteBuffer[] rd = new ByteBuffer[n + 1];
        long[] rpos = new long[n + 1];
        for (int i = 0; i < n; i++) {
            rd[i] = i % 3 == 0 ? ByteBuffer.allocate(page) : ByteBuffer.allocateDirect(page);
            rpos[i] = pos[i];
        }
        rd[n] = ByteBuffer.allocateDirect(page);   // half of it lies past the end
        rpos[n] = (long) n * page - page / 2;
        res = ch.readFully(rd, rpos);
        for (int i = 0; i < n; i++) {
            check(res[i] == page, label + " batch read op " + i + ": " + UrfsFileChannel.describe(res[i]));
            check(rd[i].flip().equals(heap(page, i)), label + " batch read data " + i);
        }
        check(res[n] == -61, label + " batch read past the end: " + UrfsFileChannel.describe(res[n]));
        check(rd[n].position() == 0, label + " a failed op's buffer does not move");
        res = ch.writeFullyAndForce(new ByteBuffer[] { heap(100, 40) }, new long[] { 3 }, true);
        check(res[0] == 100, label + " write and force " + res[0]);

        // registered buffers: I/O through them goes as fixed ops (no copy), except psync
        ByteBuffer[] reg = ch.registerBuffers(page, 2);
        check(reg.length == 2 && reg[0].isDirect() && reg[0].capacity() == page, label + " registered buffers");
        long[] st0 = ch.stats();
        reg[0].put(heap(page, 50)).flip();
        check(ch.write(reg[0], 0) == page, label + " write from a registered buffer");
        reg[1].clear();
        check(ch.read(reg[1], 0) == page && reg[1].flip().equals(heap(page, 50)), label + " read into a registered buffer");
        res = ch.readFully(new ByteBuffer[] { reg[1].clear() }, new long[] { 0 });
        check(res[0] == page, label + " batch read into a registered buffer");
        long[] st1 = ch.stats();
        long fixed = st1[1] - st0[1];
        check(e == Engine.PSYNC ? fixed == 0 : fixed == 3, label + " fixed ops through registered buffers: " + fixed);
        check(st1[0] - st0[0] >= 3, label + " ops counted");
        ch.close();

        // errors carry the path and strerror's text
        try {
            op.open("missing", R);
            check(false, label + " open missing");
        } catch (java.nio.file.NoSuchFileException x) {
            check(x.getMessage().contains("missing"), label + " message names the file: " + x.getMessage());
        }
        if (e != Engine.UR) {
            try {
                op.open(".", R, W);
                check(false, label + " open a directory for writing");
            } catch (java.nio.file.FileSystemException x) {
                check(x.getMessage().contains("Is a directory") && x.getMessage().contains("."),
                      label + " message: " + x.getMessage());
            }
        }
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String image = args[1];
        Path jdkDir = Files.createDirectories(dir.resolve("jdk"));
        Opener jdk = (name, o) -> FileChannel.open(jdkDir.resolve(name), o);
        Rec ref = script(jdk, null, "jdk");
        for (int i = 2; i < args.length; i++) {
            String label = args[i];
            Engine e = Engine.valueOf(label.toUpperCase());
            Path eDir = Files.createDirectories(dir.resolve(label));
            Opener op = e == Engine.UR ? (name, o) -> UrfsFileChannel.open(name, e, image, o)
                : (name, o) -> UrfsFileChannel.open(eDir.resolve(name).toString(), e, null, o);
            Rec got = script(op, ref, label);
            check(got.lines.size() == ref.lines.size(), label + ": " + got.lines.size() + " steps, the JDK's " + ref.lines.size());
            for (String f : new String[] { "a", "b" })
                check(Arrays.equals(contents(jdk, f), contents(op, f)), label + ": file " + f + " differs from the JDK's");
            extras(e, op, label);
            if (fails > 0)
                System.exit(1);
            System.out.println("ok " + label + ": " + got.lines.size() + " steps equal to the JDK's, files equal, batches and registered buffers checked");
        }
        if (Boolean.getBoolean("verbose"))
            ref.lines.forEach(System.out::println);
        System.exit(fails > 0 ? 1 : 0);
    }
}
