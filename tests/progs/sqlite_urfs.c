/* SPDX-License-Identifier: MIT */
/* sqlite_urfs - a small SQLite program on the urfs VFS, built against the
 * installed files only (<sqlite3.h>, <urfs_sqlite.h>; -lurfs_sqlite -lur_fs
 * -lsqlite3, no rpath): it registers the VFS, opens DB inside the SimpleFS
 * image IMAGE (a file: URI with image=), writes three rows in one
 * transaction in WAL mode, closes, opens the database again, and prints the
 * rows' count and sum, then "ok".
 *
 *   sqlite_urfs IMAGE DB
 *
 * Used by scripts/test-deb.sh (the packaged VFS) and as the example of
 * urfs_sqlite(3); not installed.
 * Must never: print "ok" unless the rows read back after a reopen are the
 * rows written. Exit status 0, or 1 after "sqlite_urfs: what: message".
 */
#include <sqlite3.h>
#include <stdio.h>
#include <urfs_sqlite.h>

static int fail(const char *what, sqlite3 *db)
{
	fprintf(stderr, "sqlite_urfs: %s: %s\n", what, db ? sqlite3_errmsg(db) : "out of memory");
	sqlite3_close(db);
	return 1;
}

static int open_db(const char *image, const char *name, sqlite3 **db)
{
	char *uri = sqlite3_mprintf("file:%s?image=%s", name, image);
	int r = uri ? sqlite3_open_v2(uri, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				      SQLITE_OPEN_URI, "urfs") : SQLITE_NOMEM;

	sqlite3_free(uri);
	return r;
}

int main(int argc, char **argv)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: sqlite_urfs IMAGE DB\n");
		return 2;
	}
	if ((r = urfs_sqlite_register(0)) != SQLITE_OK) {
		fprintf(stderr, "sqlite_urfs: urfs_sqlite_register: %s\n", sqlite3_errstr(r));
		return 1;
	}
	if (open_db(argv[1], argv[2], &db) != SQLITE_OK)
		return fail("open", db);
	if (sqlite3_exec(db, "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t(x);"
			 "BEGIN; INSERT INTO t VALUES(1),(20),(300); COMMIT;", NULL, NULL, NULL))
		return fail("write", db);
	if (sqlite3_close(db) != SQLITE_OK)
		return fail("close", db);
	db = NULL;
	if (open_db(argv[1], argv[2], &db) != SQLITE_OK)
		return fail("reopen", db);
	if (sqlite3_prepare_v2(db, "SELECT count(*), sum(x) FROM t", -1, &st, NULL) ||
	    sqlite3_step(st) != SQLITE_ROW)
		return fail("read", db);
	printf("rows: %d, sum: %d\n", sqlite3_column_int(st, 0), sqlite3_column_int(st, 1));
	sqlite3_finalize(st);
	if (sqlite3_close(db) != SQLITE_OK)
		return fail("close", db);
	printf("ok\n");
	return 0;
}
