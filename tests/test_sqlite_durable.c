/* SPDX-License-Identifier: MIT */
/* Description: a COMMIT through the "urfs" VFS is durable when it returns:
 * 20 transactions (each a row of 3 KiB, each its own COMMIT), then the
 * server is killed with SIGKILL at once (no clean unmount: what SimpleFS had
 * not committed is gone); reopened, the database holds all 20 rows and
 * passes integrity_check, and fsck is clean. In WAL mode at
 * synchronous=FULL, and in rollback mode at EXTRA (SQLite makes a journal's
 * deletion durable only there). Unlike test_sqlite_crash's random kills,
 * the kill lands right after the last commit, every time. */
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include "test_chan_common.h"
#include "../src/sqlite/urfs_sqlite.h"

#define TXNS 20

static sqlite3 *open_db(void)
{
	sqlite3 *db;
	int rc = sqlite3_open_v2("file:d.db?vfs=urfs&image=d.sfs", &db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL);
	CHECK(rc == SQLITE_OK, "open: %s", sqlite3_errstr(rc));
	return db;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	CHECK(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "%s: %s", sql, err ? err : "?");
}

static long q_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(db));
	CHECK(sqlite3_step(st) == SQLITE_ROW, "%s: no row", sql);
	long v = (long)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void round_trip(const char *setup)
{
	int r = sfs_format("d.sfs", 64ull << 20, 0);
	CHECK(r == 0, "format: %s", strerror(-r));
	sqlite3 *db = open_db();
	exec_ok(db, setup);
	exec_ok(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, pad BLOB)");
	char sql[128];
	for (int k = 1; k <= TXNS; k++) {
		snprintf(sql, sizeof(sql), "INSERT INTO t VALUES(%d, randomblob(3000))", k);
		exec_ok(db, sql);
	}
	pid_t srv = child_server();
	CHECK(srv > 0, "server process not found");
	CHECK(kill(srv, SIGKILL) == 0, "kill");
	int st = 0;
	CHECK(waitpid(srv, &st, 0) == srv && WIFSIGNALED(st), "reap the server");
	sqlite3_close(db);   /* its server is gone: errors are expected */

	db = open_db();
	long n = q_int(db, "SELECT count(*) FROM t");
	CHECK(n == TXNS, "%s: %ld of %d committed rows after the server was killed", setup, n, TXNS);
	sqlite3_stmt *q;
	CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL) == SQLITE_OK, "prepare");
	CHECK(sqlite3_step(q) == SQLITE_ROW && !strcmp((const char *)sqlite3_column_text(q, 0), "ok"),
	      "%s: integrity_check", setup);
	sqlite3_finalize(q);
	CHECK(sqlite3_close(db) == SQLITE_OK, "close");
	struct sfs_fsck_result res = { 0, 0 };
	char err[256] = "";
	r = sfs_fsck("d.sfs", 0, &res, NULL, NULL, err, sizeof(err));
	CHECK(r >= 0 && res.errors_found == 0, "fsck: %d, %lld errors (%s)", r,
	      (long long)res.errors_found, err);
	printf("ok %s\n", setup);
}

int main(void)
{
	CHECK(urfs_sqlite_register(0) == SQLITE_OK, "register");
	round_trip("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL");
	round_trip("PRAGMA journal_mode=DELETE; PRAGMA synchronous=EXTRA");
	return 0;
}
