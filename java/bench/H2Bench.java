// SPDX-License-Identifier: MIT
// H2Bench.java - H2 on a TPC-B-like JDBC workload (docs/JAVA.md,
// "Benchmark"): branches, tellers, accounts and history at a fixed scale;
// THREADS threads run for SECONDS the TPC-B transaction (update an account,
// read its balance, update its teller and branch, insert a history row,
// commit) on each FORM, one after another in this JVM, with the same URL
// settings: "default" (H2's own file store) or "urfs:ENGINE"
// (jdbc:h2:urfs: with urfs.engine=ENGINE), ROUNDS times, each round on new
// databases and in an order rotated by one, after an untimed warm-up of
// every form. Prints per run: transactions, transactions/s, p95 latency in
// ms, transactions retried (lock timeouts); then per form the medians and the
// ratio of its median tx/s to the first form's.
// Run by scripts/java-bench.sh h2:
//   java ... H2Bench DIR SECONDS THREADS ROUNDS FORM...
// Must never count a transaction that did not commit.

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.urfs.h2.FilePathUrfs;

public final class H2Bench {
    static final int BRANCHES = 10, TELLERS = 100, ACCOUNTS = 100_000;
    static final String SETTINGS = ";LOCK_TIMEOUT=10000";

    static void setup(String url) throws SQLException {
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            Statement s = c.createStatement();
            String[] sql = {
                "CREATE TABLE branches(bid INT PRIMARY KEY, bbalance BIGINT, filler CHAR(88))",
                "CREATE TABLE tellers(tid INT PRIMARY KEY, bid INT, tbalance BIGINT, filler CHAR(84))",
                "CREATE TABLE accounts(aid INT PRIMARY KEY, bid INT, abalance BIGINT, filler CHAR(84))",
                "CREATE TABLE history(tid INT, bid INT, aid INT, delta BIGINT, mtime TIMESTAMP, filler CHAR(22))",
                "INSERT INTO branches SELECT X, 0, '' FROM SYSTEM_RANGE(0, " + (BRANCHES - 1) + ")",
                "INSERT INTO tellers SELECT X, X / " + (TELLERS / BRANCHES) + ", 0, '' FROM SYSTEM_RANGE(0, " + (TELLERS - 1) + ")",
                "INSERT INTO accounts SELECT X, X / " + (ACCOUNTS / BRANCHES) + ", 0, '' FROM SYSTEM_RANGE(0, " + (ACCOUNTS - 1) + ")",
            };
            for (String q : sql)
                s.execute(q);
        }
    }

    /** THREADS threads of the TPC-B transaction on url for seconds: {latencies (ns, sorted), retried}. */
    static long[][] run(String url, long seconds, int threads) throws Exception {
        AtomicLong retried = new AtomicLong();
        long[][] lat = new long[threads][];
        int[] count = new int[threads];
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        Thread[] ts = new Thread[threads];
        Exception[] failed = new Exception[1];
        for (int t = 0; t < threads; t++) {
            int id = t;
            lat[t] = new long[1 << 16];
            ts[t] = new Thread(() -> {
                Random r = new Random(id);
                try (Connection c = DriverManager.getConnection(url, "sa", "")) {
                    c.setAutoCommit(false);
                    PreparedStatement ua = c.prepareStatement("UPDATE accounts SET abalance = abalance + ? WHERE aid = ?");
                    PreparedStatement sa = c.prepareStatement("SELECT abalance FROM accounts WHERE aid = ?");
                    PreparedStatement ut = c.prepareStatement("UPDATE tellers SET tbalance = tbalance + ? WHERE tid = ?");
                    PreparedStatement ub = c.prepareStatement("UPDATE branches SET bbalance = bbalance + ? WHERE bid = ?");
                    PreparedStatement ih = c.prepareStatement("INSERT INTO history VALUES(?, ?, ?, ?, CURRENT_TIMESTAMP, '')");
                    while (System.nanoTime() < end) {
                        int aid = r.nextInt(ACCOUNTS), tid = r.nextInt(TELLERS), bid = tid / (TELLERS / BRANCHES);
                        long delta = r.nextInt(10_000) - 5_000, t0 = System.nanoTime();
                        try {
                            ua.setLong(1, delta); ua.setInt(2, aid); ua.executeUpdate();
                            sa.setInt(1, aid);
                            try (ResultSet rs = sa.executeQuery()) { rs.next(); }
                            ut.setLong(1, delta); ut.setInt(2, tid); ut.executeUpdate();
                            ub.setLong(1, delta); ub.setInt(2, bid); ub.executeUpdate();
                            ih.setInt(1, tid); ih.setInt(2, bid); ih.setInt(3, aid); ih.setLong(4, delta); ih.executeUpdate();
                            c.commit();
                        } catch (SQLException e) {
                            c.rollback();
                            retried.incrementAndGet();
                            continue;
                        }
                        if (count[id] == lat[id].length)
                            lat[id] = Arrays.copyOf(lat[id], count[id] * 2);
                        lat[id][count[id]++] = System.nanoTime() - t0;
                    }
                } catch (Exception e) {
                    failed[0] = e;
                }
            });
            ts[t].start();
        }
        for (Thread t : ts)
            t.join();
        if (failed[0] != null)
            throw failed[0];
        int n = 0;
        for (int c : count)
            n += c;
        long[] all = new long[n];
        for (int t = 0, k = 0; t < threads; k += count[t], t++)
            System.arraycopy(lat[t], 0, all, k, count[t]);
        Arrays.sort(all);
        return new long[][] { all, { retried.get() } };
    }

    static String url(String dir, String form, String name) {
        if (form.equals("default"))
            return "jdbc:h2:" + dir + "/default-" + name + "/db" + SETTINGS;
        System.setProperty("urfs.engine", form.substring("urfs:".length()));
        return "jdbc:h2:urfs:" + dir + "/" + form.replace(':', '-') + "-" + name + "/db" + SETTINGS;
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    public static void main(String[] args) throws Exception {
        FilePathUrfs.register();
        String dir = args[0];
        long seconds = Long.parseLong(args[1]);
        int threads = Integer.parseInt(args[2]);
        int rounds = Integer.parseInt(args[3]);
        String[] forms = Arrays.copyOfRange(args, 4, args.length);
        int k = forms.length;
        // The JIT's warm-up, not timed: every form's code paths, 10 s in all at most.
        for (String form : forms) {
            String warm = url(dir, form, "warmup");
            setup(warm);
            run(warm, Math.max(1, Math.min(seconds, 10) / k), threads);
        }
        double[][] tps = new double[k][rounds], p95 = new double[k][rounds];
        System.out.printf("%-16s %5s %8s %10s %8s %8s%n", "H2 store", "round", "tx", "tx/s", "p95 ms", "retried");
        // Round r runs the forms in an order rotated by r, so that no form
        // always runs first (or last) in the JVM.
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < k; j++) {
                int f = (j + r) % k;
                String url = url(dir, forms[f], "r" + r);
                setup(url);
                long[][] res = run(url, seconds, threads);
                long[] all = res[0];
                int n = all.length;
                tps[f][r] = n / (double) seconds;
                p95[f][r] = n == 0 ? 0 : all[(int) (n * 0.95)] / 1e6;
                System.out.printf("%-16s %5d %8d %10.1f %8.2f %8d%n", forms[f], r + 1, n, tps[f][r], p95[f][r], res[1][0]);
            }
        }
        System.out.printf("%nmedian of %d rounds, %d threads, %d s each%n", rounds, threads, seconds);
        System.out.printf("%-16s %10s %8s %10s%n", "H2 store", "tx/s", "p95 ms", "x " + forms[0]);
        for (int f = 0; f < k; f++)
            System.out.printf("%-16s %10.1f %8.2f %10.2f%n", forms[f], median(tps[f]), median(p95[f]),
                              median(tps[f]) / median(tps[0]));
    }
}
