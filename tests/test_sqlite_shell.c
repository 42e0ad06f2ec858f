/* SPDX-License-Identifier: MIT */
/* Description: Debian's unchanged sqlite3 shell uses the VFS as a loadable
 * extension: `.load $UR_BIN/liburfs_sqlite`, then `.open` of a file: URI with
 * vfs=urfs&image=...; a table written in rollback mode, then in WAL mode,
 * reads back in the shell, lands inside the image (checked with the SimpleFS
 * library after the shell exits: no journal or WAL left, fsck clean) and
 * reads back through the VFS linked into this program (a gcc sanitizer build
 * preloads the runtimes into the shell). The shell missing
 * (scripts/install-deps.sh installs it) is a skip. */
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include "testutil.h"

/* A sanitized build's extension needs the sanitizers' runtimes loaded first
 * in the (unsanitized) shell: gcc's are preloaded. */
#if defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#define SHELL_ENV "LD_PRELOAD=\"$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)\"" \
		  " ASAN_OPTIONS=detect_leaks=0 "
#else
#define SHELL_ENV ""
#endif
#include "../src/sqlite/urfs_sqlite.h"

int main(void)
{
	if (system("command -v sqlite3 >/dev/null 2>&1") != 0) {
		printf("SKIP: no sqlite3 shell (apt-get install sqlite3)\n");
		return 77;
	}
	const char *bin = getenv("UR_BIN");
	if (!bin)
		bin = ".";
	FILE *f = fopen("script.sql", "w");
	CHECK(f != NULL);
	fprintf(f, ".load %s/liburfs_sqlite\n"
		   ".open file:sh.db?vfs=urfs&image=s.sfs\n"
		   "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);\n"
		   "INSERT INTO t(b) VALUES('one'),('two');\n"
		   "PRAGMA journal_mode=WAL;\n"
		   "INSERT INTO t(b) SELECT b || '+' FROM t;\n"
		   "SELECT group_concat(b, ',') FROM t;\n"
		   "PRAGMA integrity_check;\n"
		   "SELECT file FROM pragma_database_list WHERE name='main';\n", bin);
	CHECK(fclose(f) == 0);
	CHECK_EQ(sfs_format("s.sfs", 64u << 20, 64), 0);
	CHECK_EQ(system(SHELL_ENV "timeout 60 sqlite3 -bail < script.sql > out.txt 2> err.txt"), 0);
	char *out = tu_slurp("out.txt"), *err = tu_slurp("err.txt");
	if (strcmp(out, "wal\none,two,one+,two+\nok\nsh.db\n") || *err)
		FAIL("the shell said:\n%s\nstderr:\n%s", out, err);
	free(out);
	free(err);

	struct sfs *fs = MOUNT_OR_DIE("s.sfs");
	struct sfs_stat st;
	CHECK_EQ(sfs_stat(fs, "sh.db", &st), 0);
	CHECK(st.size >= 8192);
	CHECK_EQ(sfs_stat(fs, "sh.db-wal", &st), -ENOENT);
	CHECK_EQ(sfs_stat(fs, "sh.db-journal", &st), -ENOENT);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN("s.sfs");

	CHECK_EQ(urfs_sqlite_register(0), SQLITE_OK);
	sqlite3 *db;
	CHECK_EQ(sqlite3_open_v2("file:sh.db?vfs=urfs&image=s.sfs", &db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL), SQLITE_OK);
	sqlite3_stmt *q;
	CHECK_EQ(sqlite3_prepare_v2(db, "SELECT count(*), max(b) FROM t", -1, &q, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_step(q), SQLITE_ROW);
	CHECK_EQ(sqlite3_column_int(q, 0), 4);
	CHECK(!strcmp((const char *)sqlite3_column_text(q, 1), "two+"));
	sqlite3_finalize(q);
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);
	printf("ok\n");
	return 0;
}
