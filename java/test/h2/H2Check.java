// SPDX-License-Identifier: MIT
// H2Check.java - H2 2.1 (Debian's libh2-java, unchanged) on the urfs FilePath:
// one JDBC workload (tables, indexes, a few thousand rows in several
// transactions, one rolled back, updates and deletes) written on H2's default
// file store and on each form named, the database closed and reopened, its
// rows checked against what the workload computed, and its SCRIPT output
// compared with the default store's, line by line; the database file opens
// as an UrfsFileChannel of the engine named. Run by tests/test_java_h2.c:
//   java -cp ... H2Check DIR IMAGE FORM...
// FORM: host:ENGINE (jdbc:h2:urfs:DIR/ENGINE/db, urfs.engine=ENGINE) or image
// (jdbc:h2:urfs:image=IMAGE:/db). Prints "ok FORM ..." per form; exits 1 at
// the first difference. Must never compare a store with itself: the reference
// is H2's default store.

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.nio.channels.FileChannel;
import org.h2.store.fs.FilePath;
import org.urfs.channel.Engine;
import org.urfs.channel.UrfsFileChannel;
import org.urfs.h2.FilePathUrfs;

public final class H2Check {
    static final int ACCOUNTS = 4000, BRANCHES = 10, TRANSFERS = 3000;

    /** What the workload leaves: {accounts, sum of balances, history rows}. */
    static long[] workload(String url) throws SQLException {
        long sum = 0;
        int history = 0;
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            Statement s = c.createStatement();
            s.execute("CREATE TABLE branches(id INT PRIMARY KEY, balance BIGINT, name VARCHAR(100))");
            s.execute("CREATE TABLE accounts(id INT PRIMARY KEY, branch INT NOT NULL, balance BIGINT, filler VARCHAR(200))");
            s.execute("CREATE INDEX acc_branch ON accounts(branch)");
            s.execute("CREATE TABLE history(id INT PRIMARY KEY, account INT, delta BIGINT, note VARCHAR(100))");
            c.setAutoCommit(false);
            PreparedStatement br = c.prepareStatement("INSERT INTO branches VALUES(?, 0, ?)");
            for (int i = 0; i < BRANCHES; i++) {
                br.setInt(1, i);
                br.setString(2, "branch " + i);
                br.execute();
            }
            PreparedStatement ins = c.prepareStatement("INSERT INTO accounts VALUES(?, ?, ?, ?)");
            for (int i = 0; i < ACCOUNTS; i++) {
                ins.setInt(1, i);
                ins.setInt(2, i % BRANCHES);
                ins.setLong(3, 1000 + i);
                ins.setString(4, ("account " + i + " ").repeat(8));
                ins.execute();
                sum += 1000 + i;
                if (i % 500 == 499)
                    c.commit();
            }
            c.commit();
            Random r = new Random(42);
            PreparedStatement upd = c.prepareStatement("UPDATE accounts SET balance = balance + ? WHERE id = ?");
            PreparedStatement hist = c.prepareStatement("INSERT INTO history VALUES(?, ?, ?, ?)");
            for (int t = 0; t < TRANSFERS; t++) {
                int a = r.nextInt(ACCOUNTS);
                long d = r.nextInt(200) - 100;
                upd.setLong(1, d);
                upd.setInt(2, a);
                upd.execute();
                hist.setInt(1, t);
                hist.setInt(2, a);
                hist.setLong(3, d);
                hist.setString(4, "transfer " + t);
                hist.execute();
                if (t % 250 == 249) {
                    if (t / 250 == 5) {
                        c.rollback();   // this transaction's transfers never happened
                        continue;
                    }
                    c.commit();
                }
            }
            c.commit();
            s.execute("DELETE FROM accounts WHERE MOD(id, 97) = 0");
            s.execute("CREATE INDEX hist_account ON history(account)");
            c.commit();
            ResultSet rs = s.executeQuery("SELECT COUNT(*), SUM(balance) FROM accounts");
            rs.next();
            long[] expect = { rs.getLong(1), rs.getLong(2), 0 };
            rs = s.executeQuery("SELECT COUNT(*) FROM history");
            rs.next();
            expect[2] = rs.getLong(1);
            history = (int) expect[2];
            if (history != TRANSFERS - 250 || sum == 0)
                throw new IllegalStateException("the workload itself: " + history + " history rows");
            return expect;
        }
    }

    /** Reopens url: the rows (through the table and through each index) and SCRIPT's lines. */
    static List<String> reopen(String url, long[] expect, String label) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT COUNT(*), SUM(balance) FROM accounts");
            rs.next();
            check(rs.getLong(1) == expect[0] && rs.getLong(2) == expect[1], label + ": accounts after reopening: "
                  + rs.getLong(1) + " " + rs.getLong(2) + ", expected " + expect[0] + " " + expect[1]);
            rs = s.executeQuery("SELECT COUNT(*) FROM accounts WHERE branch >= 0");   // acc_branch
            rs.next();
            check(rs.getLong(1) == expect[0], label + ": accounts through their index: " + rs.getLong(1));
            rs = s.executeQuery("SELECT COUNT(*) FROM history WHERE account >= 0");   // hist_account
            rs.next();
            check(rs.getLong(1) == expect[2], label + ": history through its index: " + rs.getLong(1));
            rs = s.executeQuery("SCRIPT NOPASSWORDS");
            while (rs.next())
                out.add(rs.getString(1));
        }
        return out;
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL: " + what);
            System.exit(1);
        }
    }

    public static void main(String[] args) throws Exception {
        FilePathUrfs.register();
        String dir = args[0], image = args[1];
        String ref = "jdbc:h2:" + dir + "/ref/db";
        long[] expect = workload(ref);
        List<String> script = reopen(ref, expect, "default store");
        for (int i = 2; i < args.length; i++) {
            String form = args[i], url;
            if (form.startsWith("host:")) {
                System.setProperty("urfs.engine", form.substring(5));
                url = "jdbc:h2:urfs:" + dir + "/" + form.substring(5) + "/db";
            } else {
                url = "jdbc:h2:urfs:image=" + image + ":/db";
            }
            check(expect[0] == workload(url)[0], form + ": the workload's own count");
            String file = url.substring("jdbc:h2:".length()) + ".mv.db";
            try (FileChannel ch = FilePath.get(file).open("r")) {
                Engine want = form.startsWith("host:") ? Engine.valueOf(form.substring(5).toUpperCase()) : Engine.UR;
                check(ch instanceof UrfsFileChannel && ((UrfsFileChannel) ch).engine() == want,
                      form + ": " + file + " opens as " + ch);
            }
            List<String> got = reopen(url, expect, form);
            for (int k = 0; k < Math.max(script.size(), got.size()); k++) {
                String x = k < script.size() ? script.get(k) : "(nothing)";
                String y = k < got.size() ? got.get(k) : "(nothing)";
                check(x.equals(y), form + ": SCRIPT differs at line " + k + ":\n  default: " + x + "\n  urfs:    " + y);
            }
            System.out.println("ok " + form + " (" + url + "): rows equal, " + got.size()
                               + " lines of SCRIPT equal to the default store's");
        }
    }
}
