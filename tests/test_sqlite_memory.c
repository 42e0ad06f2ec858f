/* SPDX-License-Identifier: MIT */
/* Description: the "urfs" VFS's memory (src/sqlite/urfs_vfs.c), at the file
 * level: the clean chunks a file keeps are bounded (SQLITE.md, The cache: at
 * most 4096, 16 MiB; reading 24 MiB grows the heap by less than 18 MiB) and
 * the pending bytes outlive the drop of the clean ones; the WAL index's
 * regions are freed when its last handle unmaps it, and an xSync's batch
 * leaves nothing behind (the heap flat over rounds of each); a handle's
 * xShmMap waits while another handle's read holds the file's node (a read
 * held inside the channel by this test).
 * Must never: assert a speed (the heap is measured, not the time). */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

#include "testutil.h"
#include "ur_chan.h"
#include "../src/sqlite/urfs_sqlite.h"

/* Bytes of the heap in use (glibc's arenas and its mmapped chunks). */
static long long heap_used(void)
{
	struct mallinfo2 m = mallinfo2();
	return (long long)(m.uordblks + m.hblkhd);
}

/* urch_read, held at a gate while gate_on: the reader sets in_read and waits
 * until gate_on is cleared (libur_fs's definition comes after this one). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_on, in_read, reads;   /* reads: urch_read calls */

int64_t urch_read(struct urch *ch, void *buf, size_t len, uint64_t pos)
{
	static int64_t (*next)(struct urch *, void *, size_t, uint64_t);
	if (!next)
		*(void **)&next = dlsym(RTLD_NEXT, "urch_read");
	pthread_mutex_lock(&gate_mu);
	reads++;
	if (gate_on) {
		__atomic_store_n(&in_read, 1, __ATOMIC_SEQ_CST);
		while (gate_on)
			pthread_cond_wait(&gate_cv, &gate_mu);
		__atomic_store_n(&in_read, 0, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&gate_mu);
	return next(ch, buf, len, pos);
}

static sqlite3_file *open_file(sqlite3_vfs *vfs, const char *name)
{
	sqlite3_file *f = calloc(1, (size_t)vfs->szOsFile);
	int out = 0;
	CHECK(f != NULL);
	CHECK_EQ(vfs->xOpen(vfs, name, f, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_MAIN_DB, &out), SQLITE_OK);
	return f;
}

static void close_file(sqlite3_file *f)
{
	CHECK_EQ(f->pMethods->xClose(f), SQLITE_OK);
	free(f);
}

/* 24 MiB read in 1 MiB pieces keeps at most 4096 clean chunks: the heap grows
 * by less than 18 MiB; a pending write is still read back after the clean
 * chunks around it were dropped, and the bytes read are the file's. */
static void clean_bounded(sqlite3_vfs *vfs)
{
	const size_t M = 1u << 20;
	unsigned char *a = malloc(M), *b = malloc(M);
	CHECK(a && b);
	sqlite3_file *f = open_file(vfs, "big.db");
	for (unsigned i = 0; i < 24; i++) {
		memset(a, (int)(i + 1), M);
		CHECK_EQ(f->pMethods->xWrite(f, a, (int)M, (sqlite3_int64)i * M), SQLITE_OK);
	}
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	close_file(f);                      /* the last handle: nothing held */
	f = open_file(vfs, "big.db");
	memset(a, 0x5A, 100);
	CHECK_EQ(f->pMethods->xWrite(f, a, 100, (sqlite3_int64)(30 * M)), SQLITE_OK);
	long long before = heap_used();
	for (unsigned i = 0; i < 24; i++) {
		CHECK_EQ(f->pMethods->xRead(f, b, (int)M, (sqlite3_int64)i * M), SQLITE_OK);
		if (b[0] != i + 1 || b[M - 1] != i + 1)
			FAIL("MiB %u read back as %u..%u", i, b[0], b[M - 1]);
	}
	long long grown = heap_used() - before;
	if (grown >= 18ll << 20)
		FAIL("24 MiB read: the heap grew by %lld KiB (at most 4096 clean chunks: < 18 MiB)",
		     grown >> 10);
	/* The last MiB read is held (the file gave all of it, though bytes
	 * past it are pending): read again, it costs no read of the file. */
	int n0 = reads;
	CHECK_EQ(f->pMethods->xRead(f, b, (int)M, (sqlite3_int64)23 * M), SQLITE_OK);
	CHECK_EQ(reads, n0);
	CHECK(b[0] == 24 && b[M - 1] == 24);
	memset(b, 0, 100);
	CHECK_EQ(f->pMethods->xRead(f, b, 100, (sqlite3_int64)(30 * M)), SQLITE_OK);
	CHECK(b[0] == 0x5A && b[99] == 0x5A);
	CHECK_EQ(f->pMethods->xTruncate(f, 0), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
	close_file(f);
	CHECK_EQ(vfs->xDelete(vfs, "big.db", 0), SQLITE_OK);
	free(a);
	free(b);
}

/* A round: the WAL index mapped (4 regions of 32 KiB) and unmapped by its
 * only handle, 10 times; an xSync of 1024 lone pending pieces; a file
 * written, cut by a truncate and closed (its node freed). */
static void map_and_sync(sqlite3_vfs *vfs, sqlite3_file *f)
{
	static const char piece[8] = "pending";
	sqlite3_file *g = open_file(vfs, "flat2.db");
	CHECK_EQ(g->pMethods->xWrite(g, piece, 8, 4 * 4096), SQLITE_OK);
	CHECK_EQ(g->pMethods->xWrite(g, piece, 8, 0), SQLITE_OK);
	CHECK_EQ(g->pMethods->xTruncate(g, 4096), SQLITE_OK);
	close_file(g);
	for (int k = 0; k < 10; k++) {
		void volatile *p = NULL;
		for (int i = 0; i < 4; i++) {
			CHECK_EQ(f->pMethods->xShmMap(f, i, 32768, 1, &p), SQLITE_OK);
			CHECK(p != NULL);
		}
		CHECK_EQ(f->pMethods->xShmUnmap(f, 0), SQLITE_OK);
	}
	for (int i = 0; i < 1024; i++)
		CHECK_EQ(f->pMethods->xWrite(f, piece, 8, (sqlite3_int64)i * 8192), SQLITE_OK);
	CHECK_EQ(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
}

/* The heap is flat over 40 rounds (after one that allocates the chunks). */
static void flat_heap(sqlite3_vfs *vfs)
{
	sqlite3_file *f = open_file(vfs, "flat.db");
	map_and_sync(vfs, f);
	long long before = heap_used();
	for (int round = 0; round < 40; round++)
		map_and_sync(vfs, f);
	long long grown = heap_used() - before;
	if (grown >= 16 * 1024)
		FAIL("40 rounds of WAL-index maps, xSyncs and files closed: the heap grew by %lld bytes",
		     grown);
	close_file(f);
	CHECK_EQ(vfs->xDelete(vfs, "flat.db", 0), SQLITE_OK);
	CHECK_EQ(vfs->xDelete(vfs, "flat2.db", 0), SQLITE_OK);
}

/* While handle f's read holds the node (inside the channel, at the gate),
 * handle g's xShmMap waits for it: it returns only after the read left. */
struct mapper {
	sqlite3_file *g;
	pid_t tid;
	int started, done, saw_read;
};

static void *map_region(void *arg)
{
	struct mapper *m = arg;
	void volatile *p = NULL;
	__atomic_store_n(&m->tid, gettid(), __ATOMIC_SEQ_CST);
	__atomic_store_n(&m->started, 1, __ATOMIC_SEQ_CST);
	CHECK_EQ(m->g->pMethods->xShmMap(m->g, 0, 32768, 1, &p), SQLITE_OK);
	m->saw_read = __atomic_load_n(&in_read, __ATOMIC_SEQ_CST);
	__atomic_store_n(&m->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *read_one(void *arg)
{
	sqlite3_file *f = arg;
	unsigned char b[100];
	int rc = f->pMethods->xRead(f, b, sizeof(b), 0);
	CHECK(rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ);
	return NULL;
}

/* The thread's state letter from /proc (S: asleep, here on the node's mutex). */
static char task_state(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	const char *e = strrchr(buf, ')');
	return e && e[1] == ' ' ? e[2] : '?';
}

static void map_waits_for_read(sqlite3_vfs *vfs)
{
	sqlite3_file *f = open_file(vfs, "gate.db"), *g = open_file(vfs, "gate.db");
	struct mapper m = { .g = g };
	pthread_t rt, mt;
	pthread_mutex_lock(&gate_mu);
	gate_on = 1;
	pthread_mutex_unlock(&gate_mu);
	CHECK_EQ(pthread_create(&rt, NULL, read_one, f), 0);
	while (!__atomic_load_n(&in_read, __ATOMIC_SEQ_CST))
		usleep(1000);
	CHECK_EQ(pthread_create(&mt, NULL, map_region, &m), 0);
	/* Until the mapper is done or asleep (on the node's mutex). */
	for (int i = 0; i < 20000; i++) {
		if (__atomic_load_n(&m.done, __ATOMIC_SEQ_CST))
			break;
		if (__atomic_load_n(&m.started, __ATOMIC_SEQ_CST) && task_state(m.tid) == 'S')
			break;
		usleep(1000);
	}
	pthread_mutex_lock(&gate_mu);
	gate_on = 0;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	CHECK_EQ(pthread_join(rt, NULL), 0);
	CHECK_EQ(pthread_join(mt, NULL), 0);
	if (m.saw_read)
		FAIL("xShmMap returned while another handle's read held the node");
	CHECK_EQ(g->pMethods->xShmUnmap(g, 1), SQLITE_OK);
	close_file(f);
	close_file(g);
	CHECK_EQ(vfs->xDelete(vfs, "gate.db", 0), SQLITE_OK);
}

int main(void)
{
	CHECK_EQ(urfs_sqlite_register(0), SQLITE_OK);
	sqlite3_vfs *vfs = sqlite3_vfs_find("urfs");
	CHECK(vfs != NULL);
	CHECK_EQ(sfs_format("m.sfs", 128u << 20, 64), 0);
	setenv("SFS_IMAGE", "m.sfs", 1);
	clean_bounded(vfs);
	flat_heap(vfs);
	map_waits_for_read(vfs);
	FSCK_CLEAN("m.sfs");
	printf("ok\n");
	return 0;
}
