/* SPDX-License-Identifier: MIT */
/*
 * urfs_vfs.c - the "urfs" SQLite VFS: databases, journals and WAL files live
 * inside a SimpleFS image and all their I/O goes through the channel API
 * (include/ur_chan.h) on the ur engine. Writes between two xSync calls are
 * gathered in an overlay of pending 4 KiB chunks (reads see them) and go to
 * the server at xSync as one channel batch with the FSYNC drained behind it
 * (urch_batch_write_force); xSync returns only after both completed.
 * docs/SQLITE.md explains the design and its limits.
 * Built twice: as a loadable extension (liburfs_sqlite.so, entry point
 * sqlite3_urfssqlite_init) and, with -DSQLITE_CORE, for programs that link
 * SQLite (urfs_sqlite_register, src/sqlite/urfs_sqlite.h).
 * Must never: acknowledge an xSync before its batch and its FSYNC completed
 * without error, drop a pending write that a read or a sync should see, or
 * let two connections of this process hold conflicting SQLite locks.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "ur_chan.h"
#include "urfs_sqlite.h"

#define CHUNK        4096u
#define NAME_MAX_DB  55          /* 63 (SimpleFS) minus "-journal" */
#define PEND_LIMIT   (32u << 20) /* pending bytes that force a batch before xSync */
#define CLEAN_MAX    4096u       /* clean chunks (16 MiB) a file keeps at most */
#define MERGE_MAX    256u        /* chunks (1 MiB) one op of a batch carries at most */

/* SQLite's lock bytes (os.h), as the unix VFS uses them. */
#define PENDING_BYTE  0x40000000u
#define RESERVED_BYTE (PENDING_BYTE + 1)
#define SHARED_FIRST  (PENDING_BYTE + 2)
#define SHARED_SIZE   510u

#define ABSENT_JOURNAL 1u
#define ABSENT_WAL     2u

/* A chunk of a file held in memory: bytes [lo, hi), of which [dlo, dhi)
 * are pending (newer than the file; dhi 0: none). */
struct chunk {
	uint64_t idx;
	uint32_t lo, hi, dlo, dhi;
	unsigned char data[CHUNK];
};

/* One file of one image, shared by every handle of this process on it: the
 * overlay of pending writes and, for a database, its WAL index (heap). */
struct node {
	struct node *next;
	char key[PATH_MAX + 80];   /* realpath(image) "//" name */
	char image[PATH_MAX];
	char name[64];
	int refs;
	pthread_mutex_t mu;
	struct chunk **tab;        /* open addressing on idx; NULL = empty */
	size_t cap, n, ndirty;     /* chunks held, of which pending */
	uint64_t pend_end;         /* end of the furthest pending byte */
	/* What the server holds, known while the node is open (this process
	 * is the image's only client, and its writes all pass here). */
	int64_t size;              /* the file's size, -1: ask */
	unsigned absent;           /* database: ABSENT_* names known not to exist */
	/* WAL index */
	void **regions;
	int nregion, shm_refs;
	int shm_shared[SQLITE_SHM_NLOCK];
	const void *shm_excl[SQLITE_SHM_NLOCK];
};

struct ufile {
	sqlite3_file base;
	struct urch *ch;
	struct node *node;
	int lock;                  /* SQLITE_LOCK_* */
	int flags;                 /* SQLITE_OPEN_* */
	int shm;                   /* mapped the WAL index */
	unsigned shm_shared, shm_excl;   /* masks of the slots this handle holds */
};

static sqlite3_vfs *host_vfs;       /* temp files, randomness, time */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct node *nodes;

/* ---------------------------------------------------------------------------
 * The overlay and the cache (node->mu held). Every chunk holds bytes
 * [lo, hi) of its part of the file as they are for SQLite; [dlo, dhi) of
 * them are pending (dhi 0: none, a clean chunk, which equals the file).
 * ------------------------------------------------------------------------- */
static size_t slot_of(const struct node *nd, uint64_t idx)
{
	return (size_t)(idx * 0x9E3779B97F4A7C15ull >> 17) & (nd->cap - 1);
}

static struct chunk *find(const struct node *nd, uint64_t idx)
{
	if (!nd->n)
		return NULL;
	for (size_t i = slot_of(nd, idx);; i = (i + 1) & (nd->cap - 1)) {
		struct chunk *c = nd->tab[i];
		if (!c || c->idx == idx)
			return c;
	}
}

static void put(struct node *nd, struct chunk *c)
{
	size_t i = slot_of(nd, c->idx);
	while (nd->tab[i])
		i = (i + 1) & (nd->cap - 1);
	nd->tab[i] = c;
	nd->n++;
}

static int grow(struct node *nd)
{
	if ((nd->n + 1) * 2 <= nd->cap)
		return 0;
	size_t oc = nd->cap, nc = oc ? oc * 2 : 256;
	struct chunk **old = nd->tab;
	struct chunk **t = calloc(nc, sizeof(*t));
	if (!t)
		return -ENOMEM;
	nd->tab = t;
	nd->cap = nc;
	nd->n = 0;
	for (size_t i = 0; i < oc; i++)
		if (old[i])
			put(nd, old[i]);
	free(old);
	return 0;
}

static void drop_all(struct node *nd)
{
	for (size_t i = 0; i < nd->cap; i++)
		free(nd->tab[i]);
	free(nd->tab);
	nd->tab = NULL;
	nd->cap = nd->n = nd->ndirty = 0;
	nd->pend_end = 0;
}

/* The file is being removed: forget what the node holds of it, its chunks
 * and its size (a file created again under the name starts empty). */
static void forget(struct node *nd)
{
	pthread_mutex_lock(&nd->mu);
	drop_all(nd);
	nd->size = -1;
	pthread_mutex_unlock(&nd->mu);
}

/* Keep the chunks keep() accepts, cut to [0, size); rebuilt table (removals
 * would break its probe chains). */
static int rebuild(struct node *nd, uint64_t size, int (*keep)(const struct chunk *))
{
	struct chunk **old = nd->tab;
	size_t oc = nd->cap;
	struct chunk **t = oc ? calloc(oc, sizeof(*t)) : NULL;
	if (oc && !t)
		return -ENOMEM;
	nd->tab = t;
	nd->n = nd->ndirty = 0;
	for (size_t i = 0; i < oc; i++) {
		struct chunk *c = old[i];
		if (!c)
			continue;
		uint64_t cs = c->idx * CHUNK;
		if (!keep(c) || cs + c->lo >= size) {
			free(c);
			continue;
		}
		if (cs + c->hi > size)
			c->hi = (uint32_t)(size - cs);
		if (c->dhi && cs + c->dhi > size)
			c->dhi = (uint32_t)(size - cs);
		if (c->dhi <= c->dlo)
			c->dlo = c->dhi = 0;
		nd->ndirty += c->dhi != 0;
		put(nd, c);
	}
	free(old);
	if (nd->pend_end > size)
		nd->pend_end = size;
	return 0;
}

static int keep_all(const struct chunk *c)
{
	(void)c;
	return 1;
}

static int keep_dirty(const struct chunk *c)
{
	return c->dhi != 0;
}

/* Read [pos, pos+len) of the file itself: bytes read (short at end of file). */
static int64_t base_read(struct urch *ch, void *buf, size_t len, uint64_t pos)
{
	size_t got = 0;
	while (got < len) {
		int64_t r = urch_read(ch, (char *)buf + got, len - got, pos + got);
		if (r < 0)
			return r;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (int64_t)got;
}

/* Add [pos, pos+len) to the overlay. A write that leaves a gap between it
 * and the bytes a chunk holds first fills the gap from the file. */
static int ov_write(struct node *nd, struct urch *ch, const void *buf, size_t len, uint64_t pos)
{
	const unsigned char *p = buf;
	while (len) {
		uint64_t idx = pos / CHUNK;
		uint32_t o = (uint32_t)(pos % CHUNK);
		uint32_t l = CHUNK - o < len ? CHUNK - o : (uint32_t)len;
		struct chunk *c = find(nd, idx);
		if (!c) {
			if (grow(nd) < 0 || !(c = malloc(sizeof(*c))))
				return -ENOMEM;
			c->idx = idx;
			c->lo = o;
			c->hi = o + l;
			c->dlo = c->dhi = 0;
			put(nd, c);
		} else if (o > c->hi || o + l < c->lo) {
			unsigned char tmp[CHUNK];
			uint32_t lo = o < c->lo ? o : c->lo, hi = o + l > c->hi ? o + l : c->hi;
			int64_t r = base_read(ch, tmp + lo, hi - lo, idx * CHUNK + lo);
			if (r < 0)
				return (int)r;
			memset(tmp + lo + r, 0, hi - lo - (size_t)r);
			if (lo < c->lo)
				memcpy(c->data + lo, tmp + lo, c->lo - lo);
			if (hi > c->hi)
				memcpy(c->data + c->hi, tmp + c->hi, hi - c->hi);
			c->lo = lo;
			c->hi = hi;
		} else {
			if (o < c->lo)
				c->lo = o;
			if (o + l > c->hi)
				c->hi = o + l;
		}
		memcpy(c->data + o, p, l);
		if (!c->dhi) {
			c->dlo = o;
			c->dhi = o + l;
			nd->ndirty++;
		} else {
			if (o < c->dlo)
				c->dlo = o;
			if (o + l > c->dhi)
				c->dhi = o + l;
		}
		if (pos + l > nd->pend_end)
			nd->pend_end = pos + l;
		p += l;
		pos += l;
		len -= l;
	}
	return 0;
}

/* Keep the whole chunks of [pos, pos+got), just read from the file, as
 * clean chunks; past CLEAN_MAX chunks the clean ones are all dropped. */
static void cache_fill(struct node *nd, const unsigned char *p, uint64_t pos, uint64_t got)
{
	if (nd->n - nd->ndirty > CLEAN_MAX && rebuild(nd, UINT64_MAX, keep_dirty) < 0)
		return;
	for (uint64_t q = (pos + CHUNK - 1) / CHUNK * CHUNK; q + CHUNK <= pos + got; q += CHUNK) {
		struct chunk *c;
		if (find(nd, q / CHUNK) || grow(nd) < 0 || !(c = malloc(sizeof(*c))))
			continue;
		c->idx = q / CHUNK;
		c->lo = 0;
		c->hi = CHUNK;
		c->dlo = c->dhi = 0;
		memcpy(c->data, p + (q - pos), CHUNK);
		put(nd, c);
	}
}

/* Read through the overlay: bytes valid from pos (< len: end of file; the
 * rest of buf is zeroed), or -errno. */
static int64_t ov_read(struct node *nd, struct urch *ch, void *buf, size_t len, uint64_t pos)
{
	unsigned char *p = buf;
	int covered = 1;
	for (uint64_t q = pos; q < pos + len; q = (q / CHUNK + 1) * CHUNK) {
		struct chunk *c = find(nd, q / CHUNK);
		uint32_t o = (uint32_t)(q % CHUNK);
		uint64_t e = (q / CHUNK + 1) * CHUNK < pos + len ? (q / CHUNK + 1) * CHUNK : pos + len;
		if (!c || o < c->lo || e - q + o > c->hi) {
			covered = 0;
			break;
		}
	}
	uint64_t valid = len;      /* held bytes are in the file or pending */
	uint64_t from_file = 0;
	if (!covered) {
		int64_t r = base_read(ch, p, len, pos);
		if (r < 0)
			return r;
		memset(p + r, 0, len - (size_t)r);
		valid = from_file = (uint64_t)r;
		if (nd->pend_end > pos && nd->pend_end - pos > valid)
			valid = nd->pend_end - pos;
	}
	for (uint64_t q = pos; q < pos + len; q = (q / CHUNK + 1) * CHUNK) {
		struct chunk *c = find(nd, q / CHUNK);
		if (!c)
			continue;
		uint64_t cs = c->idx * CHUNK;
		uint64_t s = cs + c->lo > pos ? cs + c->lo : pos;
		uint64_t e = cs + c->hi < pos + len ? cs + c->hi : pos + len;
		if (s < e)
			memcpy(p + (s - pos), c->data + (s - cs), e - s);
	}
	if (!covered && from_file == len)   /* the file had every byte */
		cache_fill(nd, p, pos, len);
	return (int64_t)(valid < len ? valid : len);
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct chunk *x = *(struct chunk *const *)a, *y = *(struct chunk *const *)b;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Send every pending chunk to the server as one batch: the pending bytes of
 * consecutive chunks that meet (one ends its chunk, the next starts at its
 * start) go as one op of up to MERGE_MAX chunks, copied together. sync: the
 * FSYNC goes in the same submission, drained behind the writes
 * (urch_batch_write_force), and a failed FSYNC fails the batch. On success
 * the chunks are clean; on failure they stay pending (reads still see them). */
static int ov_flush(struct node *nd, struct urch *ch, int sync)
{
	if (!nd->ndirty)
		return sync ? urch_batch_write_force(ch, NULL, 0, 0) : 0;
	struct chunk **v = malloc(nd->ndirty * sizeof(*v));
	struct urch_op *ops = calloc(nd->ndirty, sizeof(*ops));
	char *own = calloc(nd->ndirty, 1);     /* ops[i].buf is a merged copy */
	int r = 0;
	size_t n = 0, nops = 0;
	if (!v || !ops || !own) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nd->cap; i++)
		if (nd->tab[i] && nd->tab[i]->dhi)
			v[n++] = nd->tab[i];
	qsort(v, n, sizeof(*v), cmp_chunk);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && j - i < MERGE_MAX && v[j]->idx == v[j - 1]->idx + 1 &&
		       v[j - 1]->dhi == CHUNK && v[j]->dlo == 0)
			j++;
		struct urch_op *op = &ops[nops++];
		op->pos = v[i]->idx * CHUNK + v[i]->dlo;
		if (j == i + 1) {
			op->buf = v[i]->data + v[i]->dlo;
			op->len = v[i]->dhi - v[i]->dlo;
		} else {
			op->len = (CHUNK - v[i]->dlo) + (j - i - 2) * CHUNK + v[j - 1]->dhi;
			if (!(op->buf = malloc(op->len))) {
				r = -ENOMEM;
				goto out;
			}
			own[nops - 1] = 1;
			char *d = op->buf;
			for (size_t k = i; k < j; k++) {
				memcpy(d, v[k]->data + v[k]->dlo, v[k]->dhi - v[k]->dlo);
				d += v[k]->dhi - v[k]->dlo;
			}
		}
		i = j;
	}
	uint64_t end = ops[nops - 1].pos + ops[nops - 1].len;
	r = sync ? urch_batch_write_force(ch, ops, nops, 0) : urch_batch_write_fully(ch, ops, nops);
	if (r > 0) {
		r = -EIO;
		for (size_t i = 0; i < nops; i++)
			if (ops[i].result < 0) {
				r = (int)ops[i].result;
				break;
			}
	}
	if (r == 0) {
		for (size_t i = 0; i < n; i++)
			v[i]->dlo = v[i]->dhi = 0;
		nd->ndirty = 0;
		nd->pend_end = 0;
		if (nd->size >= 0 && (uint64_t)nd->size < end)
			nd->size = (int64_t)end;
	} else {
		nd->size = -1;
	}
out:
	for (size_t i = 0; own && i < nops; i++)
		if (own[i])
			free(ops[i].buf);
	free(own);
	free(v);
	free(ops);
	return r;
}

/* Forget held bytes at and past size. */
static int ov_cut(struct node *nd, uint64_t size)
{
	return rebuild(nd, size, keep_all);
}

/* ---------------------------------------------------------------------------
 * Nodes.
 * ------------------------------------------------------------------------- */
static const char *default_image(void)
{
	const char *e = getenv("SFS_IMAGE");
	return e && *e ? e : "disk.sfs";
}

static void make_key(char *key, size_t n, const char *image, const char *name)
{
	char rp[PATH_MAX];
	snprintf(key, n, "%s//%s", realpath(image, rp) ? rp : image, name);
}

static struct node *node_find(const char *key)
{
	for (struct node *nd = nodes; nd; nd = nd->next)
		if (!strcmp(nd->key, key))
			return nd;
	return NULL;
}

static struct node *node_get(const char *image, const char *name)
{
	char key[sizeof(((struct node *)0)->key)];
	make_key(key, sizeof(key), image, name);
	pthread_mutex_lock(&g_mu);
	struct node *nd = node_find(key);
	if (nd) {
		nd->refs++;
	} else if ((nd = calloc(1, sizeof(*nd)))) {
		memcpy(nd->key, key, sizeof(key));
		snprintf(nd->image, sizeof(nd->image), "%s", image);
		snprintf(nd->name, sizeof(nd->name), "%s", name);
		nd->refs = 1;
		nd->size = -1;
		pthread_mutex_init(&nd->mu, NULL);
		nd->next = nodes;
		nodes = nd;
	}
	pthread_mutex_unlock(&g_mu);
	return nd;
}

static void node_put(struct node *nd)
{
	pthread_mutex_lock(&g_mu);
	if (--nd->refs == 0) {
		for (struct node **pp = &nodes; *pp; pp = &(*pp)->next)
			if (*pp == nd) {
				*pp = nd->next;
				break;
			}
		drop_all(nd);
		for (int i = 0; i < nd->nregion; i++)
			free(nd->regions[i]);
		free(nd->regions);
		pthread_mutex_destroy(&nd->mu);
		free(nd);
	}
	pthread_mutex_unlock(&g_mu);
}

/* The database a journal, WAL or super-journal name belongs to. */
static void db_of(const char *name, char *db, size_t n)
{
	static const char *const sfx[] = { "-journal", "-wal", "-shm" };
	snprintf(db, n, "%s", name);
	size_t l = strlen(db);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(*sfx); i++) {
		size_t s = strlen(sfx[i]);
		if (l > s && !strcmp(db + l - s, sfx[i])) {
			db[l - s] = '\0';
			return;
		}
	}
	char *mj = strstr(db, "-mj");
	if (mj && mj != db)
		*mj = '\0';
}

/* The image of a name: that of its open database, else $SFS_IMAGE, else
 * disk.sfs. image must hold PATH_MAX bytes. */
static void image_of(const char *name, char *image)
{
	char db[64];
	db_of(name, db, sizeof(db));
	pthread_mutex_lock(&g_mu);
	const char *found = NULL;
	for (struct node *nd = nodes; nd; nd = nd->next)
		if (!strcmp(nd->name, db)) {
			found = nd->image;
			break;
		}
	snprintf(image, PATH_MAX, "%s", found ? found : default_image());
	pthread_mutex_unlock(&g_mu);
}

/* The image of name (into image, PATH_MAX bytes) and its node if open in
 * this process; returns with g_mu held. */
static struct node *locked_node(const char *name, char *image)
{
	char key[PATH_MAX + 80];
	image_of(name, image);
	make_key(key, sizeof(key), image, name);
	pthread_mutex_lock(&g_mu);
	return node_find(key);
}

/* The open database node a journal or WAL name belongs to (g_mu held) and
 * the ABSENT_* bit of that name, or NULL. */
static unsigned suffix_bit(const char *name)
{
	size_t l = strlen(name);
	return l > 8 && !strcmp(name + l - 8, "-journal") ? ABSENT_JOURNAL :
	       l > 4 && !strcmp(name + l - 4, "-wal") ? ABSENT_WAL : 0;
}

static struct node *db_node(const char *name, const char *image, unsigned *bit)
{
	char db[64], key[PATH_MAX + 80];
	*bit = suffix_bit(name);
	if (!*bit)
		return NULL;
	db_of(name, db, sizeof(db));
	make_key(key, sizeof(key), image, db);
	return node_find(key);
}

/* Record that name does (0) or does not (1) exist, on its database's node. */
static void note_absent(const char *name, const char *image, int absent)
{
	unsigned bit;
	pthread_mutex_lock(&g_mu);
	struct node *db = db_node(name, image, &bit);
	if (db && absent)
		db->absent |= bit;
	else if (db)
		db->absent &= ~bit;
	pthread_mutex_unlock(&g_mu);
}

static int name_ok(const char *name)
{
	size_t l = strlen(name);
	return l && l <= 63 && !strchr(name, '/');
}

/* ---------------------------------------------------------------------------
 * Locks: SQLite's protocol on the channel's byte-range locks (in-process
 * among the channels of the image: see docs/SQLITE.md).
 * ------------------------------------------------------------------------- */
static int busy_or(int r, int err)
{
	return r == -EAGAIN ? SQLITE_BUSY : err;
}

static int x_lock(sqlite3_file *f, int level)
{
	struct ufile *u = (struct ufile *)f;
	int r;
	if (u->lock >= level)
		return SQLITE_OK;
	if (level == SQLITE_LOCK_SHARED) {
		if ((r = urch_try_lock(u->ch, PENDING_BYTE, 1, 1)) < 0)
			return busy_or(r, SQLITE_IOERR_LOCK);
		r = urch_try_lock(u->ch, SHARED_FIRST, SHARED_SIZE, 1);
		urch_unlock(u->ch, PENDING_BYTE, 1);
		if (r < 0)
			return busy_or(r, SQLITE_IOERR_LOCK);
		u->lock = SQLITE_LOCK_SHARED;
		return SQLITE_OK;
	}
	if (level == SQLITE_LOCK_RESERVED) {
		if ((r = urch_try_lock(u->ch, RESERVED_BYTE, 1, 0)) < 0)
			return busy_or(r, SQLITE_IOERR_LOCK);
		u->lock = SQLITE_LOCK_RESERVED;
		return SQLITE_OK;
	}
	/* EXCLUSIVE, through PENDING: new readers stay out while we wait. */
	if (u->lock < SQLITE_LOCK_PENDING) {
		if ((r = urch_try_lock(u->ch, PENDING_BYTE, 1, 0)) < 0)
			return busy_or(r, SQLITE_IOERR_LOCK);
		u->lock = SQLITE_LOCK_PENDING;
	}
	if ((r = urch_try_lock(u->ch, SHARED_FIRST, SHARED_SIZE, 0)) < 0)
		return busy_or(r, SQLITE_IOERR_LOCK);
	u->lock = SQLITE_LOCK_EXCLUSIVE;
	return SQLITE_OK;
}

static int x_unlock(sqlite3_file *f, int level)
{
	struct ufile *u = (struct ufile *)f;
	if (u->lock <= level)
		return SQLITE_OK;
	if (level == SQLITE_LOCK_SHARED) {
		if (u->lock >= SQLITE_LOCK_PENDING &&
		    urch_try_lock(u->ch, SHARED_FIRST, SHARED_SIZE, 1) < 0)
			return SQLITE_IOERR_RDLOCK;
		urch_unlock(u->ch, PENDING_BYTE, 2);   /* PENDING and RESERVED */
	} else {
		urch_unlock(u->ch, 0, 0);
	}
	u->lock = level;
	return SQLITE_OK;
}

static int x_check_reserved(sqlite3_file *f, int *out)
{
	struct ufile *u = (struct ufile *)f;
	*out = 0;
	if (u->lock >= SQLITE_LOCK_RESERVED) {
		*out = 1;
		return SQLITE_OK;
	}
	int r = urch_try_lock(u->ch, RESERVED_BYTE, 1, 1);
	if (r == -EAGAIN)
		*out = 1;
	else if (r < 0)
		return SQLITE_IOERR_CHECKRESERVEDLOCK;
	else
		urch_unlock(u->ch, RESERVED_BYTE, 1);
	return SQLITE_OK;
}

/* ---------------------------------------------------------------------------
 * I/O methods.
 * ------------------------------------------------------------------------- */
static int x_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
	struct ufile *u = (struct ufile *)f;
	pthread_mutex_lock(&u->node->mu);
	int64_t r = ov_read(u->node, u->ch, buf, (size_t)n, (uint64_t)off);
	pthread_mutex_unlock(&u->node->mu);
	if (r < 0)
		return SQLITE_IOERR_READ;
	return r < n ? SQLITE_IOERR_SHORT_READ : SQLITE_OK;
}

static int x_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
	struct ufile *u = (struct ufile *)f;
	if (u->flags & SQLITE_OPEN_READONLY)
		return SQLITE_IOERR_WRITE;
	struct node *nd = u->node;
	pthread_mutex_lock(&nd->mu);
	int r = ov_write(nd, u->ch, buf, (size_t)n, (uint64_t)off);
	if (!r && nd->ndirty * sizeof(struct chunk) > PEND_LIMIT)
		r = ov_flush(nd, u->ch, 0);
	pthread_mutex_unlock(&nd->mu);
	return r == -ENOSPC ? SQLITE_FULL : r ? SQLITE_IOERR_WRITE : SQLITE_OK;
}

static int x_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct ufile *u = (struct ufile *)f;
	pthread_mutex_lock(&u->node->mu);
	int r = ov_cut(u->node, (uint64_t)size);
	if (!r)
		r = urch_truncate(u->ch, (uint64_t)size);
	u->node->size = r ? -1 : size;
	pthread_mutex_unlock(&u->node->mu);
	return r == -ENOMEM ? SQLITE_IOERR_NOMEM : r < 0 ? SQLITE_IOERR_TRUNCATE : SQLITE_OK;
}

/* The durability point: the pending writes as one batch with the FSYNC
 * drained behind them (it commits the image's journal and syncs the image);
 * done when both are. */
static int x_sync(sqlite3_file *f, int flags)
{
	(void)flags;
	struct ufile *u = (struct ufile *)f;
	pthread_mutex_lock(&u->node->mu);
	int r = ov_flush(u->node, u->ch, 1);
	pthread_mutex_unlock(&u->node->mu);
	return r == -ENOSPC ? SQLITE_FULL : r < 0 ? SQLITE_IOERR_FSYNC : SQLITE_OK;
}

static int x_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	struct ufile *u = (struct ufile *)f;
	pthread_mutex_lock(&u->node->mu);
	int64_t s = u->node->size;
	if (s < 0)
		s = u->node->size = urch_size(u->ch);
	if (s >= 0 && (uint64_t)s < u->node->pend_end)
		s = (int64_t)u->node->pend_end;
	pthread_mutex_unlock(&u->node->mu);
	if (s < 0)
		return SQLITE_IOERR_FSTAT;
	*size = s;
	return SQLITE_OK;
}

static int x_file_control(sqlite3_file *f, int op, void *arg)
{
	(void)f;
	if (op == SQLITE_FCNTL_VFSNAME) {
		*(char **)arg = sqlite3_mprintf("urfs");
		return SQLITE_OK;
	}
	return SQLITE_NOTFOUND;
}

static int x_sector_size(sqlite3_file *f)
{
	(void)f;
	return (int)CHUNK;
}

static int x_device_characteristics(sqlite3_file *f)
{
	(void)f;
	/* The image is a host file: a write changes only its own bytes. */
	return SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

/* ---------------------------------------------------------------------------
 * The WAL index: heap memory of the database's node, shared by every
 * connection of this process (the only process that can open the image).
 * ------------------------------------------------------------------------- */
static int x_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp)
{
	struct ufile *u = (struct ufile *)f;
	struct node *nd = u->node;
	int rc = SQLITE_OK;
	*pp = NULL;
	pthread_mutex_lock(&nd->mu);
	if (!u->shm) {
		u->shm = 1;
		nd->shm_refs++;
	}
	if (region >= nd->nregion && extend) {
		void **v = realloc(nd->regions, (size_t)(region + 1) * sizeof(*v));
		if (!v) {
			rc = SQLITE_NOMEM;
			goto out;
		}
		nd->regions = v;
		while (nd->nregion <= region) {
			if (!(v[nd->nregion] = calloc(1, (size_t)size))) {
				rc = SQLITE_NOMEM;
				goto out;
			}
			nd->nregion++;
		}
	}
	if (region < nd->nregion)
		*pp = nd->regions[region];
out:
	pthread_mutex_unlock(&nd->mu);
	return rc;
}

static int x_shm_lock(sqlite3_file *f, int ofst, int n, int flags)
{
	struct ufile *u = (struct ufile *)f;
	struct node *nd = u->node;
	unsigned mask = ((1u << n) - 1) << ofst;
	int rc = SQLITE_OK;
	pthread_mutex_lock(&nd->mu);
	if (flags & SQLITE_SHM_UNLOCK) {
		for (int i = ofst; i < ofst + n; i++) {
			if (u->shm_excl & (1u << i))
				nd->shm_excl[i] = NULL;
			if (u->shm_shared & (1u << i))
				nd->shm_shared[i]--;
		}
		u->shm_excl &= ~mask;
		u->shm_shared &= ~mask;
	} else if (flags & SQLITE_SHM_SHARED) {
		for (int i = ofst; i < ofst + n; i++)
			if (nd->shm_excl[i] && nd->shm_excl[i] != u)
				rc = SQLITE_BUSY;
		if (rc == SQLITE_OK)
			for (int i = ofst; i < ofst + n; i++)
				if (!(u->shm_shared & (1u << i))) {
					nd->shm_shared[i]++;
					u->shm_shared |= 1u << i;
				}
	} else {
		for (int i = ofst; i < ofst + n; i++) {
			int others = nd->shm_shared[i] - !!(u->shm_shared & (1u << i));
			if ((nd->shm_excl[i] && nd->shm_excl[i] != u) || others > 0)
				rc = SQLITE_BUSY;
		}
		if (rc == SQLITE_OK)
			for (int i = ofst; i < ofst + n; i++) {
				nd->shm_excl[i] = u;
				u->shm_excl |= 1u << i;
			}
	}
	pthread_mutex_unlock(&nd->mu);
	return rc;
}

static void x_shm_barrier(sqlite3_file *f)
{
	struct ufile *u = (struct ufile *)f;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&u->node->mu);
	pthread_mutex_unlock(&u->node->mu);
}

static int x_shm_unmap(sqlite3_file *f, int del)
{
	(void)del;
	struct ufile *u = (struct ufile *)f;
	struct node *nd = u->node;
	if (!u->shm)
		return SQLITE_OK;
	x_shm_lock(f, 0, SQLITE_SHM_NLOCK, SQLITE_SHM_UNLOCK);
	pthread_mutex_lock(&nd->mu);
	u->shm = 0;
	if (--nd->shm_refs == 0) {
		for (int i = 0; i < nd->nregion; i++)
			free(nd->regions[i]);
		free(nd->regions);
		nd->regions = NULL;
		nd->nregion = 0;
	}
	pthread_mutex_unlock(&nd->mu);
	return SQLITE_OK;
}

static int x_close(sqlite3_file *f)
{
	struct ufile *u = (struct ufile *)f;
	struct node *nd = u->node;
	int rc = SQLITE_OK;
	x_shm_unmap(f, 0);
	urch_unlock(u->ch, 0, 0);
	pthread_mutex_lock(&nd->mu);
	/* A closing handle hands what is pending on the file to the server
	 * (no sync: with synchronous=OFF nothing asked for one), so that the
	 * last close never leaves it behind. */
	if (ov_flush(nd, u->ch, 0) < 0)
		rc = SQLITE_IOERR_CLOSE;
	pthread_mutex_unlock(&nd->mu);
	if (u->flags & SQLITE_OPEN_DELETEONCLOSE) {
		struct urch_opts o = { .image = nd->image };
		forget(nd);
		urch_unlink(nd->name, URCH_UR, &o);
	}
	urch_close(u->ch);
	node_put(nd);
	return rc;
}

static const sqlite3_io_methods urfs_io = {
	.iVersion = 2,
	.xClose = x_close,
	.xRead = x_read,
	.xWrite = x_write,
	.xTruncate = x_truncate,
	.xSync = x_sync,
	.xFileSize = x_file_size,
	.xLock = x_lock,
	.xUnlock = x_unlock,
	.xCheckReservedLock = x_check_reserved,
	.xFileControl = x_file_control,
	.xSectorSize = x_sector_size,
	.xDeviceCharacteristics = x_device_characteristics,
	.xShmMap = x_shm_map,
	.xShmLock = x_shm_lock,
	.xShmBarrier = x_shm_barrier,
	.xShmUnmap = x_shm_unmap,
};

/* ---------------------------------------------------------------------------
 * The VFS.
 * ------------------------------------------------------------------------- */
/* What a failed channel open of name in image means to SQLite: the image in
 * use by another process or client (SQLITE_BUSY, for the main database: "database
 * is locked"), a file that is no SimpleFS image (SQLITE_NOTADB), or else
 * SQLITE_CANTOPEN; the reason, with the image's path, goes to SQLite's log. */
static int open_error(const char *name, const char *image, int flags, int r)
{
	int code = r == -EBUSY && (flags & SQLITE_OPEN_MAIN_DB) ? SQLITE_BUSY
		 : r == -EMEDIUMTYPE || r == -EPROTONOSUPPORT || r == -EUCLEAN ? SQLITE_NOTADB
		 : SQLITE_CANTOPEN;

	sqlite3_log(code, "urfs: %s in image %s: %s%s", name, image, strerror(-r),
		    code == SQLITE_BUSY ? " (another process or client uses the image)" :
		    code == SQLITE_NOTADB ? " (not a SimpleFS image, a newer one, or a damaged one: sfs fsck)" : "");
	return code;
}

static int v_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
	(void)vfs;
	struct ufile *u = (struct ufile *)f;
	const int temp = SQLITE_OPEN_TEMP_DB | SQLITE_OPEN_TEMP_JOURNAL |
			 SQLITE_OPEN_TRANSIENT_DB | SQLITE_OPEN_SUBJOURNAL;
	memset(u, 0, sizeof(*u));
	if (!name || (flags & temp))   /* scratch files: the host's VFS */
		return host_vfs->xOpen(host_vfs, name, f, flags, out);
	if (!name_ok(name))
		return SQLITE_CANTOPEN;
	char image[PATH_MAX];
	const char *img = (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_WAL))
			  ? sqlite3_uri_parameter(name, "image") : NULL;
	if (img && *img)
		snprintf(image, sizeof(image), "%s", img);
	else
		image_of(name, image);
	/* An image that image= names is made only when create=1 asks for it:
	 * a typo must not make a new, empty image. */
	if (img && *img && !sqlite3_uri_boolean(name, "create", 0) && access(image, F_OK) != 0) {
		sqlite3_log(SQLITE_CANTOPEN, "urfs: image=%s: %s (create=1 makes a new image)",
			    image, strerror(errno));
		return SQLITE_CANTOPEN;
	}
	unsigned cf = URCH_EXCL;     /* the node state below is this process's own */
	if (flags & SQLITE_OPEN_CREATE)
		cf |= URCH_CREATE;
	if (flags & SQLITE_OPEN_READONLY)
		cf |= URCH_RDONLY;
	struct urch_opts o = { .image = image };
	note_absent(name, image, 0);
	int r = urch_open_opts(name, cf, URCH_UR, &o, &u->ch);
	if (r < 0)
		return open_error(name, image, flags, r);
	if (flags & SQLITE_OPEN_MAIN_DB) {
		/* One image per database name in this process: journals and
		 * WAL files find their image by the database's name. */
		char key[PATH_MAX + 80];
		int clash = 0;
		make_key(key, sizeof(key), image, name);
		pthread_mutex_lock(&g_mu);
		for (struct node *nd = nodes; nd; nd = nd->next)
			if (!strcmp(nd->name, name) && strcmp(nd->key, key))
				clash = 1;
		pthread_mutex_unlock(&g_mu);
		if (clash) {
			urch_close(u->ch);
			return SQLITE_CANTOPEN;
		}
	}
	if (!(u->node = node_get(image, name))) {
		urch_close(u->ch);
		return SQLITE_NOMEM;
	}
	u->flags = flags;
	u->base.pMethods = &urfs_io;
	if (out)
		*out = flags;
	return SQLITE_OK;
}

static int v_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	(void)vfs;
	char image[PATH_MAX];
	if (!name_ok(name))
		return SQLITE_IOERR_DELETE;
	struct node *nd = locked_node(name, image);
	if (nd)
		forget(nd);
	pthread_mutex_unlock(&g_mu);
	struct urch_opts o = { .image = image };
	int r = urch_unlink(name, URCH_UR, &o);
	if (r == 0 || r == -ENOENT)
		note_absent(name, image, 1);
	if (r == -ENOENT)
		return SQLITE_IOERR_DELETE_NOENT;
	if (r < 0)
		return SQLITE_IOERR_DELETE;
	if (sync_dir) {
		/* Commit the removal: the FSYNC of any channel of the image
		 * commits its metadata; the database's is at hand. */
		char db[64];
		struct urch *ch;
		db_of(name, db, sizeof(db));
		if (urch_open_opts(db, URCH_EXCL, URCH_UR, &o, &ch) == 0) {
			r = urch_force(ch, 0);
			urch_close(ch);
			if (r < 0)
				return SQLITE_IOERR_DIR_FSYNC;
		}
		/* No database: its last channel's close unmounted the image
		 * cleanly, which committed the removal. */
	}
	return SQLITE_OK;
}

static int v_access(sqlite3_vfs *vfs, const char *name, int flags, int *res)
{
	(void)vfs;
	(void)flags;
	char image[PATH_MAX];
	*res = 0;
	if (!name_ok(name))
		return SQLITE_OK;
	/* Known absent on the open database image_of would pick: no lookup of
	 * the image's real path (system calls), no round trip. */
	unsigned bit = suffix_bit(name);
	if (bit) {
		char dbn[64];
		int hit = 0;
		db_of(name, dbn, sizeof(dbn));
		pthread_mutex_lock(&g_mu);
		for (struct node *n = nodes; n; n = n->next)
			if (!strcmp(n->name, dbn)) {
				hit = (n->absent & bit) != 0;
				break;
			}
		pthread_mutex_unlock(&g_mu);
		if (hit)
			return SQLITE_OK;
	}
	struct node *nd = locked_node(name, image), *db = db_node(name, image, &bit);
	int known_absent = db && (db->absent & bit);
	if (nd) {
		pthread_mutex_lock(&nd->mu);
		*res = nd->pend_end != 0;
		pthread_mutex_unlock(&nd->mu);
	}
	pthread_mutex_unlock(&g_mu);
	if (*res || known_absent)
		return SQLITE_OK;
	struct urch_opts o = { .image = image };
	struct urch *ch;
	int r = urch_open_opts(name, URCH_RDONLY | URCH_EXCL, URCH_UR, &o, &ch);
	if (r == 0) {
		urch_close(ch);
		*res = 1;
		return SQLITE_OK;
	}
	if (r != -ENOENT)
		return SQLITE_IOERR_ACCESS;
	note_absent(name, image, 1);
	return SQLITE_OK;
}

/* Names live in the image's flat directory: no '/', and short enough for
 * "-journal" to fit SimpleFS's 63 bytes. */
static int v_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	size_t l = strlen(name);
	if (!l || l > NAME_MAX_DB || strchr(name, '/') || (int)l >= n)
		return SQLITE_CANTOPEN;
	memcpy(out, name, l + 1);
	return SQLITE_OK;
}

static void *v_dlopen(sqlite3_vfs *v, const char *p)
{
	(void)v;
	return host_vfs->xDlOpen(host_vfs, p);
}

static void v_dlerror(sqlite3_vfs *v, int n, char *msg)
{
	(void)v;
	host_vfs->xDlError(host_vfs, n, msg);
}

static void (*v_dlsym(sqlite3_vfs *v, void *h, const char *s))(void)
{
	(void)v;
	return host_vfs->xDlSym(host_vfs, h, s);
}

static void v_dlclose(sqlite3_vfs *v, void *h)
{
	(void)v;
	host_vfs->xDlClose(host_vfs, h);
}

static int v_randomness(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return host_vfs->xRandomness(host_vfs, n, out);
}

static int v_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return host_vfs->xSleep(host_vfs, us);
}

static int v_current_time(sqlite3_vfs *v, double *t)
{
	(void)v;
	return host_vfs->xCurrentTime(host_vfs, t);
}

static int v_last_error(sqlite3_vfs *v, int n, char *msg)
{
	(void)v;
	return host_vfs->xGetLastError ? host_vfs->xGetLastError(host_vfs, n, msg) : 0;
}

static int v_current_time64(sqlite3_vfs *v, sqlite3_int64 *t)
{
	(void)v;
	return host_vfs->xCurrentTimeInt64(host_vfs, t);
}

static sqlite3_vfs urfs_vfs = {
	.iVersion = 2,
	.mxPathname = 512,
	.zName = "urfs",
	.xOpen = v_open,
	.xDelete = v_delete,
	.xAccess = v_access,
	.xFullPathname = v_full_pathname,
	.xDlOpen = v_dlopen,
	.xDlError = v_dlerror,
	.xDlSym = v_dlsym,
	.xDlClose = v_dlclose,
	.xRandomness = v_randomness,
	.xSleep = v_sleep,
	.xCurrentTime = v_current_time,
	.xGetLastError = v_last_error,
	.xCurrentTimeInt64 = v_current_time64,
};

int urfs_sqlite_register(int make_default)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	int rc = SQLITE_OK;
	pthread_mutex_lock(&mu);
	if (!host_vfs) {
		sqlite3_vfs *h = sqlite3_vfs_find(NULL);
		if (!h || h->iVersion < 2) {
			rc = SQLITE_ERROR;
			goto out;
		}
		host_vfs = h;
		int sz = (int)sizeof(struct ufile);
		urfs_vfs.szOsFile = sz > h->szOsFile ? sz : h->szOsFile;
	}
	rc = sqlite3_vfs_register(&urfs_vfs, make_default);
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

#ifndef SQLITE_CORE
/* The loadable extension's entry point (`.load ./liburfs_sqlite`). */
__attribute__((visibility("default")))
int sqlite3_urfssqlite_init(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
	(void)db;
	(void)err;
	SQLITE_EXTENSION_INIT2(api);
	int rc = urfs_sqlite_register(0);
	return rc == SQLITE_OK ? SQLITE_OK_LOAD_PERMANENTLY : rc;
}
#endif
