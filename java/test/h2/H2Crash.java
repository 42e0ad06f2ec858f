// SPDX-License-Identifier: MIT
// H2Crash.java - the two halves of tests/test_java_h2_crash.c, which kills the
// JVM (kill -9) in the middle of "work":
//   java ... H2Crash work URL LOG   reopens and checks as "check" does, then
//       transactions for ever: transaction k inserts row k and adds 1 to the
//       counter row, commits (WRITE_DELAY 0: the commit is in the file when
//       commit() returns), then appends "k\n" to the host file LOG (the
//       driver's record of what was committed)
//   java ... H2Crash check URL LOG  reopens: every k in LOG is a row; the rows
//       are 1..n with no gap; the counter equals n; n is the last k in LOG or
//       one more (a commit whose line the kill cut off). Prints "ok n".
//       Exit 1 (and a FAIL line) when a check fails.
// Must never count a transaction as committed before commit() returned.

import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import org.urfs.h2.FilePathUrfs;

public final class H2Crash {
    public static void main(String[] args) throws Exception {
        FilePathUrfs.register();
        String url = args[1] + ";WRITE_DELAY=0";
        Path log = Path.of(args[2]);
        try (Connection c = DriverManager.getConnection(url, "sa", "")) {
            Statement s = c.createStatement();
            s.execute("CREATE TABLE IF NOT EXISTS t(k INT PRIMARY KEY, v VARCHAR(200))");
            s.execute("CREATE TABLE IF NOT EXISTS counter(id INT PRIMARY KEY, n INT)");
            s.execute("MERGE INTO counter VALUES(0, COALESCE((SELECT n FROM counter WHERE id = 0), 0))");
            ResultSet rs = s.executeQuery("SELECT COUNT(*), COALESCE(MAX(k), 0) FROM t");
            rs.next();
            long rows = rs.getLong(1), max = rs.getLong(2);
            rs = s.executeQuery("SELECT n FROM counter WHERE id = 0");
            rs.next();
            long n = rs.getLong(1);
            List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
            long logged = lines.isEmpty() ? 0 : Long.parseLong(lines.get(lines.size() - 1));
            if (rows != max || n != max || max < logged || max > logged + 1) {
                System.out.println("FAIL: rows " + rows + ", max k " + max + ", counter " + n
                                   + ", last committed in the log " + logged);
                System.exit(1);
            }
            for (String l : lines) {
                rs = s.executeQuery("SELECT COUNT(*) FROM t WHERE k = " + Long.parseLong(l));
                rs.next();
                if (rs.getLong(1) != 1) {
                    System.out.println("FAIL: committed transaction " + l + " is missing");
                    System.exit(1);
                }
            }
            if (args[0].equals("check")) {
                System.out.println("ok " + max + " transactions, " + lines.size() + " logged");
                return;
            }
            c.setAutoCommit(false);
            PreparedStatement ins = c.prepareStatement("INSERT INTO t VALUES(?, ?)");
            PreparedStatement upd = c.prepareStatement("UPDATE counter SET n = n + 1 WHERE id = 0");
            try (FileOutputStream out = new FileOutputStream(log.toFile(), true)) {
                for (long k = max + 1;; k++) {
                    ins.setLong(1, k);
                    ins.setString(2, ("row " + k + " ").repeat(10));
                    ins.execute();
                    upd.execute();
                    c.commit();
                    out.write((k + "\n").getBytes(StandardCharsets.US_ASCII));
                }
            }
        }
    }
}
