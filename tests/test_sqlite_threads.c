/* SPDX-License-Identifier: MIT */
/* Description: connections of one process in several threads on the "urfs"
 * VFS: 4 threads, each with its own connection, run 150 write transactions
 * (BEGIN IMMEDIATE, an insert and an update of a shared counter) and reads
 * between them, on a rollback-journal database and on a WAL database of the
 * same image at once; SQLITE_BUSY is waited out by the busy timeout. After:
 * every row is there once, the counter equals the rows, integrity_check is
 * ok, fsck of the image is clean. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>

#include "testutil.h"
#include "../src/sqlite/urfs_sqlite.h"

#define THREADS 4
#define TXNS    150

struct job {
	const char *uri;
	int id;
	char err[256];
};

static int run(sqlite3 *db, const char *sql, char *err, size_t n)
{
	char *e = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &e);
	if (rc != SQLITE_OK)
		snprintf(err, n, "%s: %s", sql, e ? e : sqlite3_errstr(rc));
	sqlite3_free(e);
	return rc;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	sqlite3 *db;
	if (sqlite3_open_v2(j->uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
		snprintf(j->err, sizeof(j->err), "open %s", j->uri);
		return NULL;
	}
	sqlite3_busy_timeout(db, 20000);
	char sql[256];
	for (int i = 0; i < TXNS; i++) {
		snprintf(sql, sizeof(sql), "BEGIN IMMEDIATE; INSERT INTO r VALUES(%d, %d, randomblob(%d));"
			 " UPDATE c SET n = n + 1; COMMIT", j->id, i, 100 + i * 37 % 3000);
		if (run(db, sql, j->err, sizeof(j->err)) ||
		    run(db, "SELECT count(*), sum(length(pad)) FROM r", j->err, sizeof(j->err)))
			break;
	}
	sqlite3_close(db);
	return NULL;
}

static sqlite3_int64 q_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		FAIL("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_int64 v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int main(void)
{
	static const char *const uris[2] = { "file:rb.db?vfs=urfs&image=th.sfs",
					     "file:wal.db?vfs=urfs&image=th.sfs" };
	static const char *const modes[2] = { "PRAGMA journal_mode=DELETE", "PRAGMA journal_mode=WAL" };
	CHECK(sqlite3_threadsafe() != 0);
	CHECK_EQ(urfs_sqlite_register(0), SQLITE_OK);
	CHECK_EQ(sfs_format("th.sfs", 128u << 20, 64), 0);
	sqlite3 *keep[2];
	char err[256];
	for (int d = 0; d < 2; d++) {
		CHECK_EQ(sqlite3_open_v2(uris[d], &keep[d], SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					 SQLITE_OPEN_URI, NULL), SQLITE_OK);
		if (run(keep[d], modes[d], err, sizeof(err)) ||
		    run(keep[d], "PRAGMA synchronous=FULL; CREATE TABLE r(t INT, i INT, pad BLOB,"
				 " UNIQUE(t, i)); CREATE TABLE c(n INT); INSERT INTO c VALUES(0)", err, sizeof(err)))
			FAIL("%s", err);
	}
	pthread_t th[2 * THREADS];
	struct job jobs[2 * THREADS];
	for (int k = 0; k < 2 * THREADS; k++) {
		jobs[k] = (struct job){ .uri = uris[k % 2], .id = k / 2, .err = "" };
		CHECK_EQ(pthread_create(&th[k], NULL, worker, &jobs[k]), 0);
	}
	for (int k = 0; k < 2 * THREADS; k++) {
		CHECK_EQ(pthread_join(th[k], NULL), 0);
		if (jobs[k].err[0])
			FAIL("thread %d on %s: %s", k, jobs[k].uri, jobs[k].err);
	}
	for (int d = 0; d < 2; d++) {
		CHECK_EQ(q_int(keep[d], "SELECT count(*) FROM r"), THREADS * TXNS);
		CHECK_EQ(q_int(keep[d], "SELECT count(DISTINCT t * 1000 + i) FROM r"), THREADS * TXNS);
		CHECK_EQ(q_int(keep[d], "SELECT n FROM c"), THREADS * TXNS);
		sqlite3_stmt *st;
		CHECK_EQ(sqlite3_prepare_v2(keep[d], "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
		CHECK_EQ(sqlite3_step(st), SQLITE_ROW);
		CHECK(!strcmp((const char *)sqlite3_column_text(st, 0), "ok"));
		sqlite3_finalize(st);
		CHECK_EQ(sqlite3_close(keep[d]), SQLITE_OK);
	}
	FSCK_CLEAN("th.sfs");
	printf("ok\n");
	return 0;
}
