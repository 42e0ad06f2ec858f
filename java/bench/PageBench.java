// SPDX-License-Identifier: MIT
// PageBench.java - the design's page table for Java (docs/JAVA.md,
// "Benchmark"): 8 KiB pages with O_DIRECT, batches of 10, 100 and 1,000 page
// writes made durable, and as many random page reads, on the JDK's
// FileChannel (force at the end, or DSYNC on every write) and on
// UrfsFileChannel over each engine, one call per page ("sync") or one batch
// call ("batch", its writes forced in the same submission). Each row: the
// median of REPS runs in ms, ops/ms and MB/s. Run by scripts/java-bench.sh:
//   java ... PageBench DIR IMAGE REPS ENGINE...
// Must never time a setup step (opening, filling the file) or report a row
// whose I/O failed (a short or failed op ends the run with an error).

import com.sun.nio.file.ExtendedOpenOption;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import org.urfs.channel.Engine;
import org.urfs.channel.UrfsFileChannel;

public final class PageBench {
    static final int PAGE = 8192, MAXN = 1000;
    static final OpenOption R = StandardOpenOption.READ, W = StandardOpenOption.WRITE,
        C = StandardOpenOption.CREATE;

    interface Run {
        void run(int n) throws IOException;
    }

    static ByteBuffer[] bufs = new ByteBuffer[MAXN];
    static long[] pos = new long[MAXN];
    static int reps;

    static void row(String what, int n, Run r) throws IOException {
        double[] ms = new double[reps];
        r.run(n);   // warm
        for (int i = 0; i < reps; i++) {
            long t = System.nanoTime();
            r.run(n);
            ms[i] = (System.nanoTime() - t) / 1e6;
        }
        Arrays.sort(ms);
        double med = ms[reps / 2];
        System.out.printf("%-34s %6d %10.3f %10.2f %10.1f%n", what, n, med, n / med,
                          n * (double) PAGE / 1e6 / (med / 1e3));
    }

    static void full(long r, int len, String what) throws IOException {
        if (r != len)
            throw new IOException(what + ": " + r + " of " + len + " bytes");
    }

    /** Positions of n pages: written in order, read at random. */
    static void positions(int n, boolean random, Random rnd) {
        for (int i = 0; i < n; i++)
            pos[i] = (long) (random ? rnd.nextInt(MAXN) : i) * PAGE;
    }

    static ByteBuffer[] slice(int n) {
        ByteBuffer[] b = Arrays.copyOf(bufs, n);
        for (ByteBuffer x : b)
            x.clear();
        return b;
    }

    static void each(FileChannel ch, int n, boolean write) throws IOException {
        for (int i = 0; i < n; i++) {
            bufs[i].clear();
            full(write ? ch.write(bufs[i], pos[i]) : ch.read(bufs[i], pos[i]), PAGE, "page " + i);
        }
    }

    static void batchCheck(long[] res) throws IOException {
        for (long r : res)
            full(r, PAGE, "batch op");
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String image = args[1];
        reps = Integer.parseInt(args[2]);
        for (int i = 0; i < MAXN; i++) {
            bufs[i] = ByteBuffer.allocateDirect(PAGE + 4096).alignedSlice(4096).limit(PAGE).slice();
            for (int k = 0; k < PAGE; k++)
                bufs[i].put(k, (byte) (i + k));
        }
        Random rnd = new Random(1);
        System.out.printf("%-34s %6s %10s %10s %10s%n", "8 KiB pages, O_DIRECT", "pages", "median ms", "ops/ms", "MB/s");
        for (boolean dsync : new boolean[] { false, true }) {
            FileChannel ch = dsync
                ? FileChannel.open(dir.resolve("jdk.dat"), R, W, C, ExtendedOpenOption.DIRECT, StandardOpenOption.DSYNC)
                : FileChannel.open(dir.resolve("jdk.dat"), R, W, C, ExtendedOpenOption.DIRECT);
            String name = dsync ? "jdk FileChannel DSYNC" : "jdk FileChannel";
            for (int n : new int[] { 10, 100, MAXN }) {
                row(name + " write+force", n, k -> {
                    positions(k, false, rnd);
                    each(ch, k, true);
                    if (!dsync)
                        ch.force(false);
                });
            }
            if (!dsync)
                row(name + " random read", MAXN, k -> {
                    positions(k, true, rnd);
                    each(ch, k, false);
                });
            ch.close();
        }
        for (int e = 3; e < args.length; e++) {
            Engine eng = Engine.valueOf(args[e].toUpperCase());
            String file = eng == Engine.UR ? "bench.dat" : dir.resolve(args[e] + ".dat").toString();
            UrfsFileChannel ch = UrfsFileChannel.open(file, eng, image, R, W, C, UrfsFileChannel.DIRECT);
            String name = "urfs " + args[e];
            for (int n : new int[] { 10, 100, MAXN }) {
                row(name + " sync write+force", n, k -> {
                    positions(k, false, rnd);
                    each(ch, k, true);
                    ch.force(false);
                });
                row(name + " batch write+force", n, k -> {
                    positions(k, false, rnd);
                    batchCheck(ch.writeFullyAndForce(slice(k), Arrays.copyOf(pos, k), false));
                });
            }
            row(name + " sync random read", MAXN, k -> {
                positions(k, true, rnd);
                each(ch, k, false);
            });
            row(name + " batch random read", MAXN, k -> {
                positions(k, true, rnd);
                batchCheck(ch.readFully(slice(k), Arrays.copyOf(pos, k)));
            });
            ch.close();
        }
    }
}
