/* SPDX-License-Identifier: MIT */
/* Description: the "urfs" SQLite VFS (src/sqlite/urfs_vfs.c) on a SimpleFS
 * image: create/insert/select/update/delete in rollback (DELETE) and WAL
 * mode, a 3 MiB blob and thousands of pages, persistence across a reopen,
 * integrity_check; at the file level: writes stay pending (the file inside
 * the image is unchanged) until xSync, reads and a second handle see the
 * pending bytes, xSync puts them in the file (one without memory for its
 * batch fails and leaves them pending; one with nothing pending needs no
 * memory), truncate cuts pending and cached bytes, a read over held chunks
 * around one not held, short channel reads asked again for the rest (and
 * only for it), a held read across a chunk's end reading nothing, writes
 * that meet the held bytes reading nothing from the file, a gap whose read
 * fails failing its write, the pending bytes of consecutive chunks sent as
 * one op at xSync (up to 1 MiB), a truncate into a chunk's pending bytes
 * keeping those below it pending, short reads (also across the end, from the
 * server); delete-on-close files; xAccess/xDelete of journals, names that
 * are only "-journal" or "-wal", the known-absent journal answered from the
 * node (no realpath), a pending one with no channel opened; xDlError;
 * SHARED refused while another owner holds PENDING or the SHARED range
 * exclusively; locks between two connections of the process in both modes; another process
 * cannot open a channel on the image while the VFS uses it; the image from
 * the URI or $SFS_IMAGE; names the image cannot hold are refused (by
 * xFullPathname and by xOpen); the WAL index's regions (several, shared by
 * the handles) and its locks at the file level (a handle's own SHARED does
 * not keep its EXCLUSIVE off, another's does); a full image reported by the
 * write that passes 32 MiB pending, and a failed batch leaving the size to be
 * asked again; registration refused over a host VFS older than version 2. */
#include <dlfcn.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "ur_chan.h"
#include "../src/sqlite/urfs_sqlite.h"

/* Calls of realpath(3) in the process (the VFS resolves an image's real
 * path with it): this definition comes before libc's. */
static int realpath_calls;

char *realpath(const char *restrict path, char *restrict resolved)
{
	static char *(*next)(const char *restrict, char *restrict);
	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "realpath");
	__atomic_add_fetch(&realpath_calls, 1, __ATOMIC_RELAXED);
	return next(path, resolved);
}

/* Built with _FORTIFY_SOURCE (Debian's flags), the VFS calls glibc's checked
 * variant instead: it is counted the same. */
char *__realpath_chk(const char *restrict path, char *restrict resolved, size_t len)
{
	static char *(*next)(const char *restrict, char *restrict, size_t);
	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "__realpath_chk");
	__atomic_add_fetch(&realpath_calls, 1, __ATOMIC_RELAXED);
	return next(path, resolved, len);
}

/* Calls of urch_read in the process (the VFS reads the file itself with it;
 * libur_fs's definition comes after this one). read_cap (when not 0) makes
 * each one short, at most that many bytes, as ur_chan.h allows; read_err
 * (when not 0) fails each one with it. */
static int urch_reads, read_err;
static size_t read_cap;

int64_t urch_read(struct urch *ch, void *buf, size_t len, uint64_t pos)
{
	static int64_t (*next)(struct urch *, void *, size_t, uint64_t);
	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "urch_read");
	__atomic_add_fetch(&urch_reads, 1, __ATOMIC_RELAXED);
	if (read_err)
		return read_err;
	return next(ch, buf, read_cap && len > read_cap ? read_cap : len, pos);
}

/* Channels opened in the process (each a round trip to the server). */
static int urch_opens;

int urch_open_opts(const char *name, unsigned flags, int engine, const struct urch_opts *o,
		   struct urch **out)
{
	static int (*next)(const char *, unsigned, int, const struct urch_opts *, struct urch **);
	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "urch_open_opts");
	__atomic_add_fetch(&urch_opens, 1, __ATOMIC_RELAXED);
	return next(name, flags, engine, o, out);
}

/* The ops of the last batch the VFS sent with its FSYNC (xSync: ov_flush),
 * kept as they were given; libur_fs's definition comes after this one. */
static struct urch_op last_ops[64];
static size_t last_nops;

int urch_batch_write_force(struct urch *ch, struct urch_op *ops, size_t n, int metadata)
{
	static int (*next)(struct urch *, struct urch_op *, size_t, int);
	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "urch_batch_write_force");
	last_nops = n;
	if (n)      /* an xSync with nothing pending sends none: ops may be NULL */
		memcpy(last_ops, ops, (n < 64 ? n : 64) * sizeof(*ops));
	return next(ch, ops, n, metadata);
}

/* calloc fails while nomem is set in this thread (ov_flush's arrays for a
 * batch); otherwise it is the next library's (libc's, or ASan's). */
static __thread int nomem, nomem_dlsym;

void *calloc(size_t n, size_t size)
{
	static void *(*next)(size_t, size_t);
	if (nomem || nomem_dlsym)
		return errno = ENOMEM, NULL;
	if (!next) {
		nomem_dlsym = 1;   /* dlsym's own calloc: NULL, which it survives */
		*(void **)&next = dlsym(RTLD_NEXT, "calloc");
		nomem_dlsym = 0;
	}
	return next ? next(n, size) : (errno = ENOMEM, NULL);
}

static void exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		FAIL("%s: %s", sql, err ? err : "?");
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

static void q_text(sqlite3 *db, const char *sql, const char *want)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		FAIL("prepare %s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) != SQLITE_ROW)
		FAIL("%s: no row", sql);
	const char *t = (const char *)sqlite3_column_text(st, 0);
	if (!t || strcmp(t, want))
		FAIL("%s = %s, expected %s", sql, t ? t : "NULL", want);
	sqlite3_finalize(st);
}

static sqlite3 *open_db(const char *uri)
{
	sqlite3 *db;
	int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				 SQLITE_OPEN_URI, NULL);
	if (rc != SQLITE_OK)
		FAIL("open %s: %s", uri, sqlite3_errstr(rc));
	return db;
}

/* The whole SQL round: tables, a blob, updates, a rollback, persistence. */
static void sql_round(const char *name, const char *mode)
{
	char uri[256], sql[256];
	snprintf(uri, sizeof(uri), "file:%s?vfs=urfs&image=t.sfs", name);
	sqlite3 *db = open_db(uri);
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode=%s", mode);
	q_text(db, sql, mode);
	exec_ok(db, "PRAGMA synchronous=FULL");
	exec_ok(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INT)");
	exec_ok(db, "CREATE INDEX t_v ON t(v)");
	exec_ok(db, "BEGIN; WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<20000)"
		    " INSERT INTO t(v, n) SELECT printf('row-%08d-%s', i, hex(randomblob(40))), i FROM c;"
		    " COMMIT");
	exec_ok(db, "CREATE TABLE b(id INTEGER PRIMARY KEY, data BLOB)");
	exec_ok(db, "INSERT INTO b(data) VALUES(zeroblob(3145728))");
	exec_ok(db, "UPDATE b SET data = randomblob(3145728) WHERE id = 1");
	sqlite3_int64 bsum = q_int(db, "SELECT sum(unicode(substr(data, 1 + 4096 * k, 1)))"
				       " FROM b, (WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k+1"
				       " FROM c WHERE k<767) SELECT k FROM c)");
	exec_ok(db, "UPDATE t SET n = n * 2 WHERE id % 3 = 0");
	exec_ok(db, "DELETE FROM t WHERE id % 7 = 0");
	exec_ok(db, "BEGIN; DELETE FROM t; INSERT INTO t(v, n) VALUES('gone', 1); ROLLBACK");
	sqlite3_int64 cnt = q_int(db, "SELECT count(*) FROM t");
	sqlite3_int64 sum = q_int(db, "SELECT sum(n) FROM t");
	CHECK_EQ(cnt, 20000 - 20000 / 7);
	sqlite3_int64 pages = q_int(db, "PRAGMA page_count");
	CHECK(pages > 1500);
	q_text(db, "PRAGMA integrity_check", "ok");
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);

	db = open_db(uri);
	q_text(db, "PRAGMA journal_mode", mode);
	CHECK_EQ(q_int(db, "SELECT count(*) FROM t"), cnt);
	CHECK_EQ(q_int(db, "SELECT sum(n) FROM t"), sum);
	CHECK_EQ(q_int(db, "SELECT length(data) FROM b"), 3145728);
	CHECK_EQ(q_int(db, "SELECT sum(unicode(substr(data, 1 + 4096 * k, 1)))"
			   " FROM b, (WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k+1"
			   " FROM c WHERE k<767) SELECT k FROM c)"), bsum);
	q_text(db, "PRAGMA integrity_check", "ok");
	/* Shrink: VACUUM truncates the database file. */
	exec_ok(db, "DROP TABLE b; VACUUM");
	CHECK(q_int(db, "PRAGMA page_count") < pages - 700);
	q_text(db, "PRAGMA integrity_check", "ok");
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);
}

/* Read name inside the image through a plain channel (the same image
 * context as the VFS's): bytes read. */
static int64_t chan_read(const char *name, void *buf, size_t len, uint64_t pos)
{
	struct urch_opts o = { .image = "t.sfs" };
	struct urch *ch;
	int r = urch_open_opts(name, URCH_RDONLY, URCH_UR, &o, &ch);
	if (r < 0)
		FAIL("urch_open %s: %s", name, strerror(-r));
	int64_t got = 0;
	while ((size_t)got < len) {
		int64_t n = urch_read(ch, (char *)buf + got, len - (size_t)got, pos + (uint64_t)got);
		if (n < 0)
			FAIL("urch_read: %s", strerror((int)-n));
		if (n == 0)
			break;
		got += n;
	}
	urch_close(ch);
	return got;
}

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)((i * 131 + seed * 7) % 251 + 1);
}

/* The overlay, at the file level. */
static void file_round(void)
{
	sqlite3_vfs *vfs = sqlite3_vfs_find("urfs");
	CHECK(vfs != NULL);
	sqlite3_file *f = calloc(1, (size_t)vfs->szOsFile), *g = calloc(1, (size_t)vfs->szOsFile);
	CHECK(f && g);
	/* A database name gives the file its image (URI); this name has none,
	 * so the test sets $SFS_IMAGE for it. */
	setenv("SFS_IMAGE", "t.sfs", 1);
	int out = 0;
	const int fl = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	CHECK_EQ(vfs->xOpen(vfs, "ov.db", f, fl, &out), SQLITE_OK);
	CHECK_EQ(vfs->xOpen(vfs, "ov.db", g, fl, &out), SQLITE_OK);
	static unsigned char a[20000], b[20000], z[20000];
	fill(a, sizeof(a), 1);
	/* Odd sizes and offsets, across chunk boundaries, with a gap. */
	CHECK_EQ(f->pMethods->xWrite(f, a, 5000, 100), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a + 9000, 3000, 9000), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a + 6000, 100, 6000), SQLITE_OK);   /* gap inside a chunk */
	sqlite3_int64 sz = 0;
	CHECK_EQ(f->pMethods->xFileSize(f, &sz), SQLITE_OK);
	CHECK_EQ(sz, 12000);
	/* Nothing reached the file yet: the writes are pending. */
	CHECK_EQ(chan_read("ov.db", b, sizeof(b), 0), 0);
	/* Both handles read the pending bytes; the holes read as zeros. */
	for (int h = 0; h < 2; h++) {
		sqlite3_file *x = h ? g : f;
		memset(b, 0xEE, sizeof(b));
		CHECK_EQ(x->pMethods->xRead(x, b, 12000, 0), SQLITE_OK);
		CHECK(!memcmp(b, z, 100));
		CHECK(!memcmp(b + 100, a, 5000));
		CHECK(!memcmp(b + 5100, z, 900));
		CHECK(!memcmp(b + 6000, a + 6000, 100));
		CHECK(!memcmp(b + 6100, z, 2900));
		CHECK(!memcmp(b + 9000, a + 9000, 3000));
	}
	/* Past the end: a short read, zero-filled. */
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(f->pMethods->xRead(f, b, 2000, 11000), SQLITE_IOERR_SHORT_READ);
	CHECK(!memcmp(b, a + 11000, 1000) && !memcmp(b + 1000, z, 1000));
	/* No memory for the batch: xSync fails and the bytes stay pending. No
	 * memory for a truncate's new table: it fails, and every pending byte is
	 * still there to read and to sync. */
	nomem = 1;
	CHECK_EQ(g->pMethods->xSync(g, SQLITE_SYNC_FULL), SQLITE_IOERR_FSYNC);
	CHECK_EQ(g->pMethods->xTruncate(g, 20000), SQLITE_IOERR_NOMEM);
	nomem = 0;
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(g->pMethods->xRead(g, b, 12000, 0), SQLITE_OK);
	CHECK(!memcmp(b + 100, a, 5000) && !memcmp(b + 6000, a + 6000, 100) && !memcmp(b + 9000, a + 9000, 3000));
	CHECK_EQ(chan_read("ov.db", b, sizeof(b), 0), 0);
	/* xSync: now the file inside the image has them. */
	CHECK_EQ(g->pMethods->xSync(g, SQLITE_SYNC_FULL), SQLITE_OK);
	nomem = 1;      /* nothing pending: only the FSYNC goes, no batch to build */
	CHECK_EQ(g->pMethods->xSync(g, SQLITE_SYNC_FULL), SQLITE_OK);
	nomem = 0;
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(chan_read("ov.db", b, sizeof(b), 0), 12000);
	CHECK(!memcmp(b + 100, a, 5000) && !memcmp(b + 6000, a + 6000, 100) &&
	      !memcmp(b + 9000, a + 9000, 3000) && !memcmp(b + 5100, z, 900));
	/* Pending over synced: a read mixes file and overlay. */
	fill(a, sizeof(a), 2);
	CHECK_EQ(f->pMethods->xWrite(f, a, 10, 4090), SQLITE_OK);
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(g->pMethods->xRead(g, b, 200, 4000), SQLITE_OK);
	fill(z + 10000, 5000, 1);                       /* the synced bytes, again */
	CHECK(!memcmp(b, z + 10000 + 3900, 90) && !memcmp(b + 90, a, 10) &&
	      !memcmp(b + 100, z + 10000 + 4000, 100));
	memset(z + 10000, 0, 5000);
	/* A gap in a pending chunk over synced data is filled from the file. */
	CHECK_EQ(f->pMethods->xWrite(f, a + 100, 10, 4200), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(chan_read("ov.db", b, 4200, 0), 4200);
	fill(z + 10000, 5000, 1);
	CHECK(!memcmp(b + 100, z + 10000, 3990) && !memcmp(b + 4090, a, 10) &&
	      !memcmp(b + 4100, z + 10000 + 4000, 100));
	memset(z + 10000, 0, 5000);
	/* The same below the pending range, on chunks the VFS does not hold
	 * yet (the last close forgets them): 4500 first, then 4350. */
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(g->pMethods->xClose(g), SQLITE_OK);
	CHECK_EQ(vfs->xOpen(vfs, "ov.db", f, fl, &out), SQLITE_OK);
	CHECK_EQ(vfs->xOpen(vfs, "ov.db", g, fl, &out), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a + 200, 10, 4500), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a + 300, 10, 4350), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(chan_read("ov.db", b, 200, 4340), 200);
	fill(z + 10000, 5000, 1);
	CHECK(!memcmp(b, z + 10000 + 4240, 10) && !memcmp(b + 10, a + 300, 10) &&
	      !memcmp(b + 20, z + 10000 + 4260, 140) && !memcmp(b + 160, a + 200, 10) &&
	      !memcmp(b + 170, z + 10000 + 4410, 30));
	memset(z + 10000, 0, 5000);
	/* Truncate with pending bytes past the cut. */
	CHECK_EQ(f->pMethods->xWrite(f, a, 4000, 20000), SQLITE_OK);
	CHECK_EQ(f->pMethods->xTruncate(f, 6050), SQLITE_OK);
	CHECK_EQ(f->pMethods->xFileSize(f, &sz), SQLITE_OK);
	CHECK_EQ(sz, 6050);
	CHECK_EQ(f->pMethods->xRead(f, b, 100, 6000), SQLITE_IOERR_SHORT_READ);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	CHECK_EQ(chan_read("ov.db", b, sizeof(b), 0), 6050);
	/* Held (clean) bytes follow a truncate: the cut part reads as zeros
	 * when the file grows again. */
	static unsigned char keep[6050];
	CHECK_EQ(g->pMethods->xRead(g, keep, 6050, 0), SQLITE_OK);
	CHECK_EQ(f->pMethods->xTruncate(f, 100), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a, 10, 5000), SQLITE_OK);
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(g->pMethods->xRead(g, b, 5010, 0), SQLITE_OK);
	CHECK(!memcmp(b, keep, 100) && !memcmp(b + 100, z, 4900) && !memcmp(b + 5000, a, 10));
	CHECK_EQ(g->pMethods->xSync(g, SQLITE_SYNC_NORMAL), SQLITE_OK);
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(chan_read("ov.db", b, sizeof(b), 0), 5010);
	CHECK(!memcmp(b, keep, 100) && !memcmp(b + 100, z, 4900) && !memcmp(b + 5000, a, 10));
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(g->pMethods->xClose(g), SQLITE_OK);
	/* Pending bytes of a closing file go to the server (no sync asked). */
	CHECK_EQ(vfs->xOpen(vfs, "ov.db", f, fl, &out), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a, 100, 7000), SQLITE_OK);
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(chan_read("ov.db", b, sizeof(b), 0), 7100);
	CHECK(!memcmp(b, keep, 100) && !memcmp(b + 5000, a, 10));
	CHECK(!memcmp(b + 7000, a, 100));
	/* A read across the end of the file, from the server (nothing held):
	 * the bytes before the end, zeros after. */
	CHECK_EQ(vfs->xOpen(vfs, "ov.db", f, fl, &out), SQLITE_OK);
	memset(b, 0xEE, 200);
	CHECK_EQ(f->pMethods->xRead(f, b, 200, 7000), SQLITE_IOERR_SHORT_READ);
	CHECK(!memcmp(b, a, 100) && !memcmp(b + 100, z, 100));
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	/* xAccess / xDelete. */
	int res = -1;
	CHECK_EQ(vfs->xAccess(vfs, "ov.db", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 1);
	CHECK_EQ(vfs->xDelete(vfs, "ov.db", 1), SQLITE_OK);
	CHECK_EQ(vfs->xAccess(vfs, "ov.db", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	CHECK_EQ(vfs->xDelete(vfs, "ov.db", 1), SQLITE_IOERR_DELETE_NOENT);
	/* Names SimpleFS cannot hold. */
	char full[600];
	CHECK_EQ(vfs->xFullPathname(vfs, "dir/x.db", (int)sizeof(full), full), SQLITE_CANTOPEN);
	CHECK_EQ(vfs->xFullPathname(vfs, "a2345678901234567890123456789012345678901234567890123456",
				    (int)sizeof(full), full), SQLITE_CANTOPEN);
	/* xOpen refuses them too (a name SQLite did not make: no xFullPathname
	 * before it), and creates nothing under a cut name. */
	static const char *const bad[] = {
		"", "dir/x.db",
		"a234567890123456789012345678901234567890123456789012345678901234",
	};
	for (int i = 0; i < 3; i++)
		CHECK_EQ(vfs->xOpen(vfs, bad[i], f, fl, &out), SQLITE_CANTOPEN);
	CHECK_EQ(vfs->xAccess(vfs, "a23456789012345678901234567890123456789012345678901234567890123",
			      SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	unsetenv("SFS_IMAGE");
	free(f);
	free(g);
}

/* The file-level parts: the VFS, with $SFS_IMAGE naming the image for the
 * names they open (they give no URI); a handle's memory. */
static sqlite3_vfs *file_level(void)
{
	sqlite3_vfs *vfs = sqlite3_vfs_find("urfs");
	CHECK(vfs != NULL);
	setenv("SFS_IMAGE", "t.sfs", 1);
	return vfs;
}

static sqlite3_file *file_alloc(sqlite3_vfs *vfs)
{
	sqlite3_file *f = calloc(1, (size_t)vfs->szOsFile);
	CHECK(f != NULL);
	return f;
}

/* A delete-on-close file (SQLITE_OPEN_DELETEONCLOSE) is gone when its handle
 * closes, even while another handle of this process keeps the file open: a
 * file created again under its name starts empty (the VFS forgets what it
 * held of the old one: its chunks and its size). */
static void delete_on_close(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *f = file_alloc(vfs), *g = file_alloc(vfs), *h = file_alloc(vfs);
	const int fl = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	int out = 0, res = -1;
	static unsigned char a[6000], b[6000];
	fill(a, sizeof(a), 3);
	CHECK_EQ(vfs->xOpen(vfs, "doc.tmp", f, fl | SQLITE_OPEN_DELETEONCLOSE, &out), SQLITE_OK);
	CHECK_EQ(vfs->xOpen(vfs, "doc.tmp", g, fl, &out), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a, 5000, 0), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	sqlite3_int64 sz = -1;
	CHECK_EQ(f->pMethods->xFileSize(f, &sz), SQLITE_OK);
	CHECK_EQ(sz, 5000);
	CHECK_EQ(f->pMethods->xWrite(f, a, 100, 5000), SQLITE_OK);     /* pending at the close */
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(vfs->xAccess(vfs, "doc.tmp", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	/* The same name again: a new, empty file. */
	CHECK_EQ(vfs->xOpen(vfs, "doc.tmp", h, fl, &out), SQLITE_OK);
	CHECK_EQ(h->pMethods->xFileSize(h, &sz), SQLITE_OK);
	CHECK_EQ(sz, 0);
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(h->pMethods->xRead(h, b, 100, 0), SQLITE_IOERR_SHORT_READ);
	CHECK_EQ(b[0], 0);
	CHECK_EQ(h->pMethods->xWrite(h, a + 1, 10, 0), SQLITE_OK);
	CHECK_EQ(h->pMethods->xSync(h, SQLITE_SYNC_NORMAL), SQLITE_OK);
	CHECK_EQ(h->pMethods->xFileSize(h, &sz), SQLITE_OK);
	CHECK_EQ(sz, 10);
	CHECK_EQ(chan_read("doc.tmp", b, sizeof(b), 0), 10);
	CHECK(!memcmp(b, a + 1, 10));
	CHECK_EQ(g->pMethods->xClose(g), SQLITE_OK);
	CHECK_EQ(h->pMethods->xClose(h), SQLITE_OK);
	CHECK_EQ(vfs->xDelete(vfs, "doc.tmp", 0), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	free(f);
	free(g);
	free(h);
}

/* Names that are only a suffix ("-journal", "-wal") are files of their own,
 * no database's journal or WAL: what the VFS knows of journals never answers
 * for them. A known-absent journal is answered from the database's node,
 * without resolving the image's real path. The loader
 * calls go to the host's VFS. */
static void names_and_cache(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *h = file_alloc(vfs);
	const int fl = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	static const char *const sfx[] = { "-journal", "-wal" };
	for (int i = 0; i < 2; i++) {
		int out = 0, res = -1;
		/* Deleted while a handle keeps its node: still nobody's journal. */
		CHECK_EQ(vfs->xOpen(vfs, sfx[i], h, fl, &out), SQLITE_OK);
		CHECK_EQ(vfs->xAccess(vfs, sfx[i], SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
		CHECK_EQ(res, 1);
		CHECK_EQ(vfs->xDelete(vfs, sfx[i], 0), SQLITE_OK);
		CHECK_EQ(vfs->xAccess(vfs, sfx[i], SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
		CHECK_EQ(res, 0);
		/* Created again (a plain channel of this process): it exists. */
		struct urch_opts o = { .image = "t.sfs" };
		struct urch *ch;
		CHECK_EQ(urch_open_opts(sfx[i], URCH_CREATE, URCH_UR, &o, &ch), 0);
		urch_close(ch);
		CHECK_EQ(vfs->xAccess(vfs, sfx[i], SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
		CHECK_EQ(res, 1);
		CHECK_EQ(h->pMethods->xClose(h), SQLITE_OK);
		CHECK_EQ(vfs->xDelete(vfs, sfx[i], 0), SQLITE_OK);
	}
	unsetenv("SFS_IMAGE");

	/* The known-absent journal (SQLite's hot-journal check after a commit
	 * in journal_mode=DELETE deleted it) and WAL are answered from the
	 * database's node, by its name: the image's real path is not resolved
	 * (SQLITE.md: that cost a getcwd and a readlink per read transaction). */
	sqlite3 *db = open_db("file:ab.db?vfs=urfs&image=t.sfs");
	exec_ok(db, "PRAGMA journal_mode=DELETE; CREATE TABLE a(x); INSERT INTO a VALUES(1)");
	int res = -1, calls = realpath_calls;
	CHECK_EQ(vfs->xAccess(vfs, "ab.db-journal", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	CHECK_EQ(realpath_calls, calls);
	res = -1;
	CHECK_EQ(vfs->xAccess(vfs, "ab.db-wal", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	CHECK_EQ(realpath_calls, calls);
	CHECK(vfs->xAccess(vfs, "ab.db", SQLITE_ACCESS_EXISTS, &res) == SQLITE_OK && res == 1);
	CHECK(realpath_calls > calls);     /* the counter counts: not known absent */
	CHECK_EQ(q_int(db, "SELECT x FROM a"), 1);
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);

	/* xDlOpen/xDlError: the host's loader and its message. */
	char msg[256];
	memset(msg, 0, sizeof(msg));
	CHECK(vfs->xDlOpen(vfs, "./no-such-library.so") == NULL);
	vfs->xDlError(vfs, (int)sizeof(msg) - 1, msg);
	if (!strstr(msg, "no-such-library"))
		FAIL("xDlError: \"%s\"", msg);
	free(h);
}

/* A read over chunks the VFS holds and one it does not, between them, gets
 * the missing one from the file. */
static void held_around_gap(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *f = file_alloc(vfs);
	const int fl = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	int out = 0;
	static unsigned char a[3 * 4096], b[3 * 4096];
	fill(a, sizeof(a), 5);
	CHECK_EQ(vfs->xOpen(vfs, "gap.db", f, fl, &out), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a, sizeof(a), 0), SQLITE_OK);
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);     /* sent; nothing held */
	CHECK_EQ(vfs->xOpen(vfs, "gap.db", f, fl, &out), SQLITE_OK);
	/* The channel's reads may be short: the VFS asks again for the rest,
	 * and only for the rest (5 reads of at most 1000 bytes, no sixth). */
	int n0 = urch_reads;
	read_cap = 1000;
	CHECK_EQ(f->pMethods->xRead(f, b, 4096, 0), SQLITE_OK);      /* held: chunk 0 */
	read_cap = 0;
	CHECK_EQ(urch_reads - n0, 5);
	CHECK(!memcmp(b, a, 4096));
	CHECK_EQ(f->pMethods->xRead(f, b, 4096, 8192), SQLITE_OK);   /* and chunk 2 */
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(f->pMethods->xRead(f, b, sizeof(b), 0), SQLITE_OK);
	CHECK(!memcmp(b, a, sizeof(b)));
	/* All three held now: a read across a chunk's end reads nothing. */
	n0 = urch_reads;
	CHECK_EQ(f->pMethods->xRead(f, b, 4096, 2048), SQLITE_OK);
	CHECK_EQ(urch_reads, n0);
	CHECK(!memcmp(b, a + 2048, 4096));
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(vfs->xDelete(vfs, "gap.db", 0), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	free(f);
}

/* Writes that meet the bytes a chunk holds, ending where they start or
 * starting where they end, leave no gap: nothing is read from the file. */
static void adjacent_writes(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *f = file_alloc(vfs);
	const int fl = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	int out = 0;
	static unsigned char a[4096], b[4096];
	fill(a, sizeof(a), 6);
	CHECK_EQ(vfs->xOpen(vfs, "adj.db", f, fl, &out), SQLITE_OK);
	int n0 = urch_reads;
	CHECK_EQ(f->pMethods->xWrite(f, a + 1000, 1000, 1000), SQLITE_OK);  /* held: [1000, 2000) */
	CHECK_EQ(f->pMethods->xWrite(f, a + 500, 500, 500), SQLITE_OK);     /* ends at 1000 */
	CHECK_EQ(f->pMethods->xWrite(f, a + 2000, 500, 2000), SQLITE_OK);   /* starts at 2000 */
	CHECK_EQ(urch_reads, n0);
	CHECK_EQ(f->pMethods->xRead(f, b, 2000, 500), SQLITE_OK);
	CHECK(!memcmp(b, a + 500, 2000));
	/* A gap whose read fails: the write fails, the held bytes unchanged. */
	read_err = -EIO;
	CHECK_EQ(f->pMethods->xWrite(f, a + 3000, 10, 3000), SQLITE_IOERR_WRITE);
	read_err = 0;
	memset(b, 0xEE, sizeof(b));
	CHECK_EQ(f->pMethods->xRead(f, b, 2000, 500), SQLITE_OK);
	CHECK(!memcmp(b, a + 500, 2000));
	n0 = urch_reads;
	CHECK_EQ(f->pMethods->xWrite(f, a + 3000, 10, 3000), SQLITE_OK);    /* a gap: read */
	CHECK(urch_reads > n0);
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(vfs->xDelete(vfs, "adj.db", 0), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	free(f);
}

/* xSync sends the pending bytes of consecutive chunks that meet as one op,
 * of at most 256 chunks (1 MiB): 300 whole chunks from 0 go as two ops; a
 * chunk pending to its middle does not join the next; the bytes in the file
 * are the ones written. */
static void merged_flush(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *f = file_alloc(vfs);
	const int fl = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	const size_t C = 4096, big = 300 * C;
	int out = 0;
	unsigned char *a = malloc(big), *b = malloc(big);
	CHECK(a && b);
	fill(a, big, 9);
	CHECK_EQ(vfs->xOpen(vfs, "merge.db", f, fl, &out), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a, (int)big, 0), SQLITE_OK);                 /* chunks 0-299 */
	CHECK_EQ(f->pMethods->xWrite(f, a, 1000, (sqlite3_int64)(320 * C + 100)), SQLITE_OK); /* ends mid-chunk */
	CHECK_EQ(f->pMethods->xWrite(f, a + 1000, 500, (sqlite3_int64)(321 * C)), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, a, (int)(2 * C), (sqlite3_int64)(330 * C)), SQLITE_OK); /* 330-331 */
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	const struct { uint64_t pos, len; } want[] = {
		{ 0, 256 * C }, { 256 * C, 44 * C }, { 320 * C + 100, 1000 }, { 321 * C, 500 }, { 330 * C, 2 * C },
	};
	CHECK_EQ(last_nops, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < last_nops && i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ(last_ops[i].pos, want[i].pos);
		CHECK_EQ(last_ops[i].len, want[i].len);
	}
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(chan_read("merge.db", b, big, 0), (int64_t)big);
	CHECK(!memcmp(a, b, big));
	CHECK_EQ(chan_read("merge.db", b, 1000, 320 * C + 100), 1000);
	CHECK(!memcmp(a, b, 1000));
	CHECK_EQ(chan_read("merge.db", b, 500, 321 * C), 500);
	CHECK(!memcmp(a + 1000, b, 500));
	CHECK_EQ(chan_read("merge.db", b, 2 * C, 330 * C), (int64_t)(2 * C));
	CHECK(!memcmp(a, b, 2 * C));
	/* A truncate into a chunk's pending bytes keeps those below the new
	 * size pending: xSync sends them. */
	fill(b, C, 77);
	CHECK_EQ(vfs->xOpen(vfs, "merge.db", f, fl, &out), SQLITE_OK);
	CHECK_EQ(f->pMethods->xWrite(f, b, (int)C, 0), SQLITE_OK);
	CHECK_EQ(f->pMethods->xTruncate(f, 2000), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(chan_read("merge.db", a, C, 0), 2000);
	CHECK(!memcmp(a, b, 2000));
	CHECK_EQ(vfs->xDelete(vfs, "merge.db", 0), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	free(f);
	free(a);
	free(b);
}

/* The WAL index's locks at the file level, as the unix VFS keeps them: a
 * handle may take EXCLUSIVE on a slot where it alone holds SHARED; another
 * handle's SHARED keeps it off (SQLITE_BUSY). */
static void shm_locks(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *f = file_alloc(vfs), *g = file_alloc(vfs);
	const int fl = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	const int sh = SQLITE_SHM_LOCK | SQLITE_SHM_SHARED, ex = SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE;
	int out = 0;
	void volatile *p = NULL, *q = NULL;
	CHECK_EQ(vfs->xOpen(vfs, "shm.db", f, fl, &out), SQLITE_OK);
	CHECK_EQ(vfs->xOpen(vfs, "shm.db", g, fl, &out), SQLITE_OK);
	CHECK_EQ(f->pMethods->xShmMap(f, 0, 32768, 1, &p), SQLITE_OK);
	CHECK_EQ(g->pMethods->xShmMap(g, 0, 32768, 1, &q), SQLITE_OK);
	CHECK(p != NULL && p == q);
	/* Regions past the first: up to 5 in one call, the others seen by g;
	 * one not yet mapped, asked without extend, is NULL. */
	void volatile *r[6] = { NULL };
	CHECK_EQ(f->pMethods->xShmMap(f, 5, 32768, 1, &r[5]), SQLITE_OK);
	CHECK_EQ(g->pMethods->xShmMap(g, 6, 32768, 0, &q), SQLITE_OK);
	CHECK(q == NULL);
	for (int i = 0; i < 6; i++) {
		CHECK_EQ(g->pMethods->xShmMap(g, i, 32768, 0, &q), SQLITE_OK);
		if (i < 5)
			r[i] = q;
		CHECK(q != NULL && q == r[i] && (i == 0 || q != r[i - 1]));
		((volatile char *)q)[32767] = (char)i;
	}
	CHECK(((volatile char *)r[4])[32767] == 4);
	CHECK_EQ(f->pMethods->xShmLock(f, 3, 1, sh), SQLITE_OK);
	CHECK_EQ(f->pMethods->xShmLock(f, 3, 1, ex), SQLITE_OK);     /* its own SHARED */
	CHECK_EQ(g->pMethods->xShmLock(g, 3, 1, sh), SQLITE_BUSY);
	CHECK_EQ(f->pMethods->xShmLock(f, 3, 1, SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE), SQLITE_OK);
	CHECK_EQ(g->pMethods->xShmLock(g, 3, 1, sh), SQLITE_OK);
	CHECK_EQ(f->pMethods->xShmLock(f, 3, 1, sh), SQLITE_OK);
	CHECK_EQ(f->pMethods->xShmLock(f, 3, 1, ex), SQLITE_BUSY);   /* g's SHARED */
	CHECK_EQ(g->pMethods->xShmLock(g, 3, 1, SQLITE_SHM_UNLOCK | SQLITE_SHM_SHARED), SQLITE_OK);
	CHECK_EQ(f->pMethods->xShmLock(f, 3, 1, ex), SQLITE_OK);
	CHECK_EQ(f->pMethods->xShmUnmap(f, 1), SQLITE_OK);
	CHECK_EQ(g->pMethods->xShmUnmap(g, 1), SQLITE_OK);
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(g->pMethods->xClose(g), SQLITE_OK);
	CHECK_EQ(vfs->xDelete(vfs, "shm.db", 0), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	free(f);
	free(g);
}

/* SQLite's SHARED on the unix VFS's bytes: another owner's exclusive lock on
 * PENDING, or on the SHARED range alone (a plain channel of this process: the
 * same lock table), keeps it off with SQLITE_BUSY, and the handle then holds
 * nothing (the channel's exclusive lock over both is granted). */
static void shared_kept_off(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *f = file_alloc(vfs);
	const uint64_t pending = 0x40000000u;
	const uint64_t pos[2] = { pending, pending + 2 }, len[2] = { 1, 510 };
	int out = 0;
	CHECK_EQ(vfs->xOpen(vfs, "sh.db", f, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_MAIN_DB, &out), SQLITE_OK);
	struct urch_opts o = { .image = "t.sfs" };
	struct urch *ch;
	CHECK_EQ(urch_open_opts("sh.db", 0, URCH_UR, &o, &ch), 0);
	for (int k = 0; k < 2; k++) {
		CHECK_EQ(urch_try_lock(ch, pos[k], len[k], 0), 0);
		CHECK_EQ(f->pMethods->xLock(f, SQLITE_LOCK_SHARED), SQLITE_BUSY);
		CHECK_EQ(urch_unlock(ch, pos[k], len[k]), 0);
		CHECK_EQ(urch_try_lock(ch, pending, 512, 0), 0);
		CHECK_EQ(urch_unlock(ch, pending, 512), 0);
		CHECK_EQ(f->pMethods->xLock(f, SQLITE_LOCK_SHARED), SQLITE_OK);
		CHECK_EQ(urch_try_lock(ch, pending + 2, 510, 0), -EAGAIN);
		CHECK_EQ(f->pMethods->xUnlock(f, SQLITE_LOCK_NONE), SQLITE_OK);
	}
	urch_close(ch);
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(vfs->xDelete(vfs, "sh.db", 0), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	free(f);
}

/* Past 32 MiB pending the bytes go to the server (SQLITE.md): on an image too
 * small for them, the write that sent them says SQLITE_FULL (not only the
 * next xSync); the bytes stay pending. */
static void full_at_write(void)
{
	sqlite3_vfs *vfs = file_level();
	sqlite3_file *f = file_alloc(vfs);
	CHECK_EQ(sfs_format("small.sfs", 16u << 20, 64), 0);
	setenv("SFS_IMAGE", "small.sfs", 1);
	int out = 0, rc = SQLITE_OK;
	unsigned mib = 0;
	static unsigned char a[1u << 20];
	fill(a, sizeof(a), 9);
	CHECK_EQ(vfs->xOpen(vfs, "big.db", f, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &out),
		 SQLITE_OK);
	while (rc == SQLITE_OK && mib < 40)
		rc = f->pMethods->xWrite(f, a, (int)sizeof(a), (sqlite3_int64)mib++ << 20);
	if (rc != SQLITE_FULL)
		FAIL("%u MiB written to a 16 MiB image: %d, expected SQLITE_FULL", mib, rc);
	CHECK(mib > 16);
	sqlite3_int64 sz = 0;
	CHECK_EQ(f->pMethods->xFileSize(f, &sz), SQLITE_OK);
	CHECK_EQ(sz, (sqlite3_int64)mib << 20);   /* pending, the failed write's too */
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_FULL);
	CHECK_EQ(f->pMethods->xTruncate(f, 0), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	/* A failed batch leaves the file's size to be asked again: a sparse
	 * 100 MiB file, 20 MiB written into its hole, the xSync full. */
	CHECK_EQ(f->pMethods->xTruncate(f, 100 << 20), SQLITE_OK);
	for (mib = 0; mib < 20; mib++)
		CHECK_EQ(f->pMethods->xWrite(f, a, (int)sizeof(a), (sqlite3_int64)mib << 20), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_FULL);
	CHECK_EQ(f->pMethods->xFileSize(f, &sz), SQLITE_OK);
	CHECK_EQ(sz, 100 << 20);
	CHECK_EQ(f->pMethods->xTruncate(f, 0), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	CHECK_EQ(vfs->xDelete(vfs, "big.db", 0), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	free(f);
	FSCK_CLEAN("small.sfs");
}

/* Journals come and go; two connections follow SQLite's locking. */
static void journal_and_locks(void)
{
	sqlite3 *a = open_db("file:lk.db?vfs=urfs&image=t.sfs");
	sqlite3 *b = open_db("file:lk.db?vfs=urfs&image=t.sfs");
	sqlite3_vfs *vfs = sqlite3_vfs_find("urfs");
	int res = -1;
	exec_ok(a, "PRAGMA journal_mode=DELETE; CREATE TABLE k(x); INSERT INTO k VALUES(1)");
	CHECK_EQ(vfs->xAccess(vfs, "lk.db-journal", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	exec_ok(a, "BEGIN IMMEDIATE; INSERT INTO k VALUES(2)");
	int opens = urch_opens;      /* pending bytes: answered from the node */
	CHECK_EQ(vfs->xAccess(vfs, "lk.db-journal", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 1);
	CHECK_EQ(urch_opens, opens);
	CHECK_EQ(sqlite3_exec(b, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_BUSY);
	CHECK_EQ(q_int(b, "SELECT count(*) FROM k"), 1);     /* a reader still reads */
	exec_ok(a, "COMMIT");
	CHECK_EQ(vfs->xAccess(vfs, "lk.db-journal", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	CHECK_EQ(q_int(b, "SELECT count(*) FROM k"), 2);
	/* A reader holding SHARED keeps the writer from committing. */
	sqlite3_stmt *st;
	CHECK_EQ(sqlite3_prepare_v2(b, "SELECT x FROM k", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_step(st), SQLITE_ROW);
	exec_ok(a, "BEGIN; INSERT INTO k VALUES(3)");
	CHECK_EQ(sqlite3_exec(a, "COMMIT", NULL, NULL, NULL), SQLITE_BUSY);
	sqlite3_finalize(st);
	exec_ok(a, "COMMIT");
	CHECK_EQ(q_int(b, "SELECT count(*) FROM k"), 3);

	/* WAL: the index is shared heap memory; a reader keeps its snapshot,
	 * and a checkpoint cannot reset the WAL under it. */
	q_text(a, "PRAGMA journal_mode=WAL", "wal");
	exec_ok(a, "INSERT INTO k VALUES(4)");
	CHECK_EQ(vfs->xAccess(vfs, "lk.db-wal", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 1);
	exec_ok(b, "BEGIN");
	CHECK_EQ(q_int(b, "SELECT count(*) FROM k"), 4);
	exec_ok(a, "INSERT INTO k VALUES(5)");
	CHECK_EQ(q_int(b, "SELECT count(*) FROM k"), 4);
	CHECK_EQ(q_int(a, "PRAGMA wal_checkpoint(TRUNCATE)"), 1);   /* busy: b reads */
	exec_ok(a, "INSERT INTO k VALUES(6)");
	CHECK_EQ(q_int(b, "SELECT count(*) FROM k"), 4);
	exec_ok(b, "COMMIT");
	CHECK_EQ(q_int(b, "SELECT count(*) FROM k"), 6);
	exec_ok(a, "BEGIN IMMEDIATE");
	CHECK_EQ(sqlite3_exec(b, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_BUSY);
	exec_ok(a, "INSERT INTO k VALUES(7); COMMIT");
	exec_ok(b, "INSERT INTO k VALUES(8)");
	CHECK_EQ(q_int(a, "PRAGMA wal_checkpoint(TRUNCATE)"), 0);
	CHECK_EQ(q_int(a, "SELECT sum(x) FROM k"), 36);
	CHECK_EQ(sqlite3_close(b), SQLITE_OK);
	CHECK_EQ(sqlite3_close(a), SQLITE_OK);
	/* The last close checkpoints and deletes the WAL. */
	CHECK_EQ(vfs->xAccess(vfs, "lk.db-wal", SQLITE_ACCESS_EXISTS, &res), SQLITE_OK);
	CHECK_EQ(res, 0);
	a = open_db("file:lk.db?vfs=urfs&image=t.sfs");
	CHECK_EQ(q_int(a, "SELECT sum(x) FROM k"), 36);
	CHECK_EQ(sqlite3_close(a), SQLITE_OK);
}

/* The image: from the URI, else $SFS_IMAGE; one image per name at a time. */
static void images(void)
{
	CHECK_EQ(sfs_format("u.sfs", 64u << 20, 64), 0);
	setenv("SFS_IMAGE", "u.sfs", 1);
	sqlite3 *a = open_db("file:e.db?vfs=urfs");
	exec_ok(a, "CREATE TABLE e(x); INSERT INTO e VALUES(42)");
	/* The VFS keeps its state in the process: its ring is the server's
	 * only client, another process's channel is refused. */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct urch_opts o = { .image = "u.sfs" };
		struct urch *ch;
		int r = urch_open_opts("other", URCH_CREATE, URCH_UR, &o, &ch);
		_exit(r == -EBUSY ? 0 : 1);
	}
	int wst;
	CHECK(waitpid(pid, &wst, 0) == pid);
	if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0)
		FAIL("another process opened a channel on the VFS's image");
	sqlite3 *c;
	CHECK(sqlite3_open_v2("file:e.db?vfs=urfs&image=t.sfs", &c, SQLITE_OPEN_READWRITE |
			      SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL) == SQLITE_CANTOPEN);
	sqlite3_close(c);
	CHECK_EQ(sqlite3_close(a), SQLITE_OK);
	unsetenv("SFS_IMAGE");
	struct sfs *fs = MOUNT_OR_DIE("u.sfs");
	struct sfs_stat st;
	CHECK_EQ(sfs_stat(fs, "e.db", &st), 0);
	CHECK(st.size >= 8192);
	CHECK_EQ(sfs_stat(fs, "e.db-journal", &st), -ENOENT);
	CHECK_EQ(sfs_unmount(fs), 0);
	FSCK_CLEAN("u.sfs");
}

int main(void)
{
	/* The VFS needs a host VFS of version 2 or later (xCurrentTimeInt64):
	 * registered over an older default it refuses, and works once a
	 * suitable one is the default. */
	sqlite3_vfs *host = sqlite3_vfs_find(NULL), old;
	CHECK(host != NULL);
	old = *host;
	old.iVersion = 1;
	old.zName = "old-host";
	CHECK_EQ(sqlite3_vfs_register(&old, 1), SQLITE_OK);
	CHECK_EQ(urfs_sqlite_register(0), SQLITE_ERROR);
	CHECK(sqlite3_vfs_find("urfs") == NULL);
	CHECK_EQ(sqlite3_vfs_register(host, 1), SQLITE_OK);
	CHECK_EQ(sqlite3_vfs_unregister(&old), SQLITE_OK);
	CHECK_EQ(urfs_sqlite_register(0), SQLITE_OK);
	CHECK_EQ(urfs_sqlite_register(0), SQLITE_OK);
	CHECK_EQ(sfs_format("t.sfs", 256u << 20, 256), 0);
	sql_round("rb.db", "delete");
	sql_round("wal.db", "wal");
	file_round();
	delete_on_close();
	names_and_cache();
	held_around_gap();
	adjacent_writes();
	merged_flush();
	shm_locks();
	shared_kept_off();
	full_at_write();
	journal_and_locks();
	images();
	/* Every connection closed: the server unmounted the image cleanly. */
	FSCK_CLEAN("t.sfs");
	struct sfs *fs = MOUNT_OR_DIE("t.sfs");
	struct sfs_stat st;
	CHECK_EQ(sfs_stat(fs, "rb.db", &st), 0);
	CHECK_EQ(sfs_stat(fs, "wal.db", &st), 0);
	CHECK_EQ(sfs_stat(fs, "rb.db-journal", &st), -ENOENT);
	CHECK_EQ(sfs_stat(fs, "wal.db-wal", &st), -ENOENT);
	CHECK_EQ(sfs_unmount(fs), 0);
	printf("ok\n");
	return 0;
}
