/* SPDX-License-Identifier: MIT */
/* Description: crash safety of the "urfs" SQLite VFS. A writer process runs
 * transactions (50 rows of 1-3 KiB each, plus a running total) on a database
 * inside a SimpleFS image, synchronous=FULL (EXTRA for a rollback journal
 * when its server is killed too: see writer's call), and after each COMMIT returns
 * appends the transaction's id to a host file it fsyncs. It is killed with
 * SIGKILL at a random moment (in half the rounds after it logged a transaction
 * of that round, so some kills land among transactions on any machine), 32 times: on even rounds alone (its server sees
 * it die), on odd rounds together with its simplefs_server (no clean unmount:
 * the image is left as a crash leaves it). Rounds alternate between a
 * rollback-journal database and a WAL database. After every kill: fsck of
 * the image as the crash left it is clean; then, through the VFS (which
 * rolls back a hot journal or recovers the WAL), integrity_check is ok, every
 * transaction the writer logged is there whole, every transaction there is
 * whole (its 50 rows, less those later ones deleted), at most one is newer than the log (committed, killed
 * before it logged it), and the total matches the rows. Seed: $CRASH_SEED. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "../src/sqlite/urfs_sqlite.h"

#define ROUNDS 32
#define ROWS   50
#define IMAGE  "c.sfs"

static const char *const dbs[2] = { "rb.db", "wal.db" };
static const char *const modes[2] = { "delete", "wal" };

static sqlite3 *open_db(int which)
{
	char uri[128];
	sqlite3 *db;
	snprintf(uri, sizeof(uri), "file:%s?vfs=urfs&image=" IMAGE, dbs[which]);
	int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				 SQLITE_OPEN_URI, NULL);
	if (rc != SQLITE_OK)
		FAIL("open %s: %s", uri, sqlite3_errstr(rc));
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static int exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
	if (rc != SQLITE_OK)
		fprintf(stderr, "%s: %s\n", sql, err ? err : sqlite3_errstr(rc));
	sqlite3_free(err);
	return rc;
}

static sqlite3_int64 q_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		FAIL("prepare %s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) != SQLITE_ROW)
		FAIL("%s: no row: %s", sql, sqlite3_errmsg(db));
	sqlite3_int64 v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void log_name(int which, char *buf, size_t n)
{
	snprintf(buf, n, "committed-%d.log", which);
}

/* The ids the writer logged, in order; their number. */
static int read_log(int which, long *ids, int max)
{
	char name[64];
	log_name(which, name, sizeof(name));
	FILE *f = fopen(name, "r");
	if (!f)
		return 0;
	int n = 0;
	long v;
	while (n < max && fscanf(f, "%ld", &v) == 1)
		ids[n++] = v;
	fclose(f);
	return n;
}

/* The writer: transactions until it is killed. */
static void writer(int which, long next, const char *sync)
{
	char name[64];
	log_name(which, name, sizeof(name));
	int lf = open(name, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (lf < 0)
		_exit(3);
	sqlite3 *db = open_db(which);
	char sql[512];
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode=%s", modes[which]);
	char ps[160];
	/* Small checkpoints and a WAL cut back to nothing after each: the WAL
	 * keeps growing, so its new blocks (SimpleFS metadata) need the FSYNC. */
	snprintf(ps, sizeof(ps), "PRAGMA synchronous=%s; PRAGMA wal_autocheckpoint=64;"
		 " PRAGMA journal_size_limit=0", sync);
	if (exec(db, sql) || exec(db, ps) ||
	    exec(db, "CREATE TABLE IF NOT EXISTS r(txn INT, k INT, pad BLOB);"
		     "CREATE INDEX IF NOT EXISTS r_txn ON r(txn);"
		     "CREATE TABLE IF NOT EXISTS total(n INT);"
		     "INSERT INTO total SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM total)"))
		_exit(4);
	for (long id = next;; id++) {
		snprintf(sql, sizeof(sql),
			 "BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<%d)"
			 " INSERT INTO r SELECT %ld, i, randomblob(1024 + abs(random()) %% 2048) FROM c;"
			 " UPDATE total SET n = n + %d; DELETE FROM r WHERE txn < %ld AND k %% 10 = %ld;"
			 " COMMIT", ROWS, id, ROWS, id - 5, id % 10);
		if (exec(db, sql))
			_exit(5);
		char line[32];
		int l = snprintf(line, sizeof(line), "%ld\n", id);
		if (write(lf, line, (size_t)l) != l || fsync(lf) < 0)
			_exit(6);
	}
}

/* Wait until no process holds the image (a killed writer's server may take a
 * moment to notice and go). */
static void wait_image_free(void)
{
	for (int i = 0; i < 1000; i++) {
		int h = sfs_lock_holder(IMAGE);
		if (h == 0)
			return;
		if (h < 0)
			FAIL("sfs_lock_holder: %s", strerror(-h));
		usleep(10000);
	}
	FAIL("the image is still held after 10 s");
}

static void verify(int which, int round)
{
	static long ids[100000];
	int n = read_log(which, ids, 100000);
	sqlite3 *db = open_db(which);
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW ||
	    strcmp((const char *)sqlite3_column_text(st, 0), "ok"))
		FAIL("round %d %s: integrity_check: %s", round, dbs[which],
		     st ? (const char *)sqlite3_column_text(st, 0) : sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (q_int(db, "SELECT count(*) FROM sqlite_master WHERE name='total'") == 0) {
		CHECK_EQ(n, 0);   /* killed before its schema was committed */
		CHECK(sqlite3_close(db) == SQLITE_OK);
		return;
	}
	long last = n ? ids[n - 1] : 0;
	char sql[256];
	sqlite3_int64 maxid = q_int(db, "SELECT coalesce(max(txn), 0) FROM r");
	if (maxid < last || maxid > last + 1)
		FAIL("round %d %s: newest transaction %lld, log ends at %ld", round, dbs[which],
		     (long long)maxid, last);
	/* Nothing half-applied, nothing lost: transaction t (1..maxid, each
	 * logged or the one newer) keeps the rows k whose k%10 no later
	 * transaction u (t+6 <= u <= maxid) removed with u%10. */
	for (long t = 1; t <= maxid; t++) {
		int gone[10] = { 0 };
		for (long u = t + 6; u <= maxid; u++)
			gone[u % 10] = 1;
		int want = 0;
		for (int k = 1; k <= ROWS; k++)
			want += !gone[k % 10];
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM r WHERE txn=%ld", t);
		sqlite3_int64 got = q_int(db, sql);
		if (got != want)
			FAIL("round %d %s: transaction %ld has %lld rows, expected %d", round,
			     dbs[which], t, (long long)got, want);
	}
	sqlite3_int64 total = q_int(db, "SELECT n FROM total");
	if (total != maxid * ROWS)
		FAIL("round %d %s: total %lld after %lld transactions", round, dbs[which],
		     (long long)total, (long long)maxid);
	/* The writer's next round goes on from the newest transaction. */
	if (maxid > last) {
		char name[64], line[32];
		log_name(which, name, sizeof(name));
		FILE *f = fopen(name, "a");
		CHECK(f != NULL);
		snprintf(line, sizeof(line), "%lld\n", (long long)maxid);
		fputs(line, f);
		CHECK(fclose(f) == 0);
	}
	CHECK(sqlite3_close(db) == SQLITE_OK);
}

int main(void)
{
	unsigned seed = getenv("CRASH_SEED") ? (unsigned)atoi(getenv("CRASH_SEED"))
					     : (unsigned)time(NULL);
	printf("seed %u (CRASH_SEED)\n", seed);
	srand(seed);
	CHECK_EQ(urfs_sqlite_register(0), SQLITE_OK);
	CHECK_EQ(sfs_format(IMAGE, 256u << 20, 64), 0);
	int committed[2] = { 0, 0 }, after_one[2] = { 0, 0 }, st0;
	for (int round = 0; round < ROUNDS; round++) {
		int which = round / 2 % 2;
		static long ids[100000];
		int n = read_log(which, ids, 100000);
		long next = n ? ids[n - 1] + 1 : 1;
		fflush(stdout);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setpgid(0, 0);
			/* A rollback journal's deletion is its commit point: SQLite
			 * makes it durable (xDelete's syncDir) only at EXTRA, on
			 * every VFS; a killed server loses it as a power cut
			 * loses an unsynced unlink. */
			writer(which, next, which == 0 && round % 2 ? "EXTRA" : "FULL");
		}
		setpgid(pid, pid);
		/* Half the rounds (four in a row: both databases, both kinds of
		 * kill) start the random delay only once the writer has logged a
		 * transaction of this round, so kills land among transactions
		 * however slow the machine; the others start it at the fork, so
		 * a kill may land in the open and recovery too. */
		if (round / 4 % 2 == 0) {
			static long cur[100000];
			int waited_ms = 0;
			while (read_log(which, cur, 100000) == n) {
				if (waitpid(pid, &st0, WNOHANG) != 0)
					FAIL("round %d: the writer ended by itself (status %#x)", round, st0);
				if ((waited_ms += 10) > 120000)
					FAIL("round %d: the writer logged no transaction in 120 s", round);
				usleep(10000);
			}
			after_one[which]++;
		}
		usleep(100000 + (unsigned)(rand() % 400) * 1000);
		int st;
		if (waitpid(pid, &st, WNOHANG) != 0)
			FAIL("round %d: the writer ended by itself (status %#x)", round, st);
		/* Odd rounds: the writer and its server (same process group). */
		CHECK(kill(round % 2 ? -pid : pid, SIGKILL) == 0);
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
		wait_image_free();
		FSCK_CLEAN(IMAGE);
		int m = read_log(which, ids, 100000);
		committed[which] += m - n;
		verify(which, round);
		FSCK_CLEAN(IMAGE);
	}
	printf("committed and logged: %d (rollback), %d (WAL)\n", committed[0], committed[1]);
	/* (a writer that commits nothing fails in the rounds that wait for one; no speed is asserted) */
	printf("rounds killed after a logged transaction: %d (rollback), %d (WAL)\n", after_one[0], after_one[1]);
	printf("ok\n");
	return 0;
}
