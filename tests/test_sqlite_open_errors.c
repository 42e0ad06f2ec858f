/* SPDX-License-Identifier: MIT */
/* Description: the VFS tells a user why a database does not open,
 * by SQLite's error code and, with the image's path, in SQLite's log:
 * an image= that does not exist is not made (SQLITE_CANTOPEN, nothing
 * created) unless create=1 asks for it; a file that is not a SimpleFS image
 * is SQLITE_NOTADB ("file is not a database"); an image another client of
 * its server uses is SQLITE_BUSY ("database is locked"); the image made with
 * create=1 then works.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ur_fs.h>
#include "testutil.h"
#include "../src/sqlite/urfs_sqlite.h"

static char logged[4096];

static void on_log(void *arg, int code, const char *msg)
{
	(void)arg;
	snprintf(logged + strlen(logged), sizeof logged - strlen(logged), "%d %s\n", code, msg);
}

/* opens uri; its result, with the connection's errmsg in msg */
static int try_open(const char *uri, char *msg, size_t n)
{
	sqlite3 *db = NULL;
	int r;

	logged[0] = '\0';
	r = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, "urfs");
	if (r == SQLITE_OK)
		r = sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES(1);",
				 NULL, NULL, NULL);
	snprintf(msg, n, "%s", db ? sqlite3_errmsg(db) : "");
	printf("%s: %d (%s); log: %s", uri, r, msg, logged[0] ? logged : "nothing\n");
	sqlite3_close(db);
	return r;
}

#define LOGGED(s) do { if (!strstr(logged, (s))) FAIL("SQLite's log lacks '%s':\n%s", (s), logged); } while (0)

int main(void)
{
	char msg[256];

	CHECK_EQ(sqlite3_config(SQLITE_CONFIG_LOG, on_log, NULL), SQLITE_OK);
	CHECK_EQ(urfs_sqlite_register(0), SQLITE_OK);

	/* a typo in image= makes nothing */
	CHECK_EQ(try_open("file:a.db?image=typo.sfs", msg, sizeof msg), SQLITE_CANTOPEN);
	LOGGED("urfs: image=typo.sfs: No such file or directory (create=1 makes a new image)");
	CHECK(access("typo.sfs", F_OK) != 0 && errno == ENOENT);
	/* create=1 asks for it */
	CHECK_EQ(try_open("file:a.db?image=made.sfs&create=1", msg, sizeof msg), SQLITE_OK);
	CHECK(access("made.sfs", F_OK) == 0);
	CHECK_EQ(try_open("file:a.db?image=made.sfs", msg, sizeof msg), SQLITE_OK);

	/* not an image */
	FILE *f = fopen("junk.sfs", "w");
	CHECK(f);
	for (int i = 0; i < 4096; i++)
		fputs("not an image at all ", f);
	CHECK(fclose(f) == 0);
	CHECK_EQ(try_open("file:a.db?image=junk.sfs", msg, sizeof msg), SQLITE_NOTADB);
	CHECK(!strcmp(msg, "file is not a database"));
	LOGGED("urfs: a.db in image junk.sfs: ");
	LOGGED("(not a SimpleFS image, a newer one, or a damaged one: sfs fsck)");

	/* in use by another client of the image's server */
	struct urfs_ring ring;
	struct urfs_params p;
	memset(&p, 0, sizeof p);
	p.image = "made.sfs";
	CHECK_EQ(urfs_queue_init_params(8, &ring, &p), 0);
	CHECK_EQ(try_open("file:a.db?image=made.sfs", msg, sizeof msg), SQLITE_BUSY);
	CHECK(!strcmp(msg, "database is locked"));
	LOGGED("urfs: a.db in image made.sfs: Device or resource busy (another process or client uses the image)");
	urfs_queue_exit(&ring);
	CHECK_EQ(try_open("file:a.db?image=made.sfs", msg, sizeof msg), SQLITE_OK);
	printf("ok\n");
	return 0;
}
