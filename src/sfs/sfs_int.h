/* SPDX-License-Identifier: MIT */
/*
 * sfs_int.h - internals of the SimpleFS library: on-disk structures, the
 * mounted-fs state, and the functions the src/sfs/ files share.
 *
 * The on-disk format is described in docs/FORMAT.md; the structs here are
 * that format (little-endian, packed, fixed sizes checked at compile time).
 * Nothing outside src/sfs/ includes this header. Must never print.
 */
#ifndef SFS_INT_H
#define SFS_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "sfs.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "SimpleFS assumes a little-endian host (the on-disk format is little-endian)"
#endif

#define SFS_EXPORT __attribute__((visibility("default")))

#define BS              4096u
#define BS_SHIFT        12
#define SB_MAGIC        0x5346454c504d4953ull  /* bytes "SIMPLEFS" */
#define SB_VERSION      1u
#define JH_MAGIC        0x314c4e524a534653ull  /* bytes "SFSJRNL1" */

/* Every metadata block ends with this trailer. */
#define TRAILER_OFF     (BS - 8)
/* FAT: 32-bit entries, 1022 per block (4088 bytes), then the trailer. */
#define FAT_PER_BLOCK   1022u
#define FAT_FREE        0x00000000u
#define FAT_EOC         0xFFFFFFFFu
#define FAT_RESERVED    0xFFFFFFFEu
#define FAT_PENDING     0xFFFFFFFDu   /* in memory only: freed in the running transaction */
#define MAX_BLOCKS      0xFFFFFFF0u   /* largest total_blocks */
/* Directory: 128-byte entries, 31 per block (3968 bytes), zero padding, trailer. */
#define DIRENT_SIZE     128u
#define DIR_PER_BLOCK   31u
#define DE_USED         0x1u
#define DE_ORPHAN       0x2u
#define MAX_FILES_LIMIT (1u << 20)
#define MIN_FILES       1u
/* Journal: header block + log blocks; at most JCAP_MAX blocks per transaction. */
#define JCAP_MAX        500u
#define JCAP_MIN        8u
#define MAX_FILE_SIZE   SFS_MAX_SIZE  /* 2^44: offsets at or beyond -> -EFBIG */
#define MAX_HANDLES     65536u
#define SFS_COMMIT_AGE_NS (5ull * 1000000000ull)  /* commit a running transaction this old */

struct sfs_super_disk {
	uint64_t magic;
	uint32_t version;
	uint32_t block_size;
	uint32_t total_blocks;
	uint32_t journal_start;
	uint32_t journal_blocks;   /* header + log blocks */
	uint32_t fat_start;
	uint32_t fat_blocks;
	uint32_t dir_start;
	uint32_t dir_blocks;
	uint32_t data_start;
	uint32_t max_files;
	uint32_t flags;            /* 0 */
	uint64_t created_ns;
	uint8_t  uuid[16];
};

struct sfs_jent {
	uint32_t home;
	uint32_t crc;
};
struct sfs_jhdr_disk {
	uint64_t magic;
	uint64_t seq;
	uint32_t count;            /* 0: journal empty */
	uint32_t start;            /* first log slot */
	uint32_t reserved[2];
	struct sfs_jent ent[JCAP_MAX];
};

struct sfs_dirent {
	char     name[64];         /* NUL-terminated, zero-padded */
	uint64_t size;
	uint64_t mtime_ns;
	uint32_t first;            /* first block, 0 if nblocks == 0 */
	uint32_t nblocks;          /* blocks in the chain */
	uint32_t flags;            /* DE_USED | DE_ORPHAN */
	uint32_t reserved[9];
};

_Static_assert(sizeof(struct sfs_dirent) == DIRENT_SIZE, "dirent size");
_Static_assert(sizeof(struct sfs_jhdr_disk) <= TRAILER_OFF, "journal header size");
_Static_assert(sizeof(struct sfs_super_disk) <= TRAILER_OFF, "superblock size");

/* crc32c.c */
uint32_t sfs_crc32c(uint32_t crc, const void *buf, size_t len);
/* Seal / check a metadata block: trailer = {home block number, crc32c}. */
void sfs_block_seal(void *blk, uint32_t home);
int  sfs_block_ok(const void *blk, uint32_t home);

/* dev_file.c */
int  sfs_filedev_open(const char *path, unsigned mflags, struct sfs_dev **out,
		      char *err, size_t errlen);
int  sfs_filedev_from_fd(int fd, uint64_t size, struct sfs_dev **out);
int  sfs_lock_holder_fd(int fd);
int  sfs_dev_zero(struct sfs_dev *dev, uint64_t off, uint64_t len);
int  sfs_io_read(struct sfs_dev *dev, void *buf, size_t len, uint64_t off);
int  sfs_io_write(struct sfs_dev *dev, const void *buf, size_t len, uint64_t off);
void *sfs_aligned_alloc(size_t len);

/* An open file, shared by all its handles. */
struct sfs_ofile {
	uint32_t slot;
	uint32_t refs;
	uint32_t *blocks;          /* blocks[i] = image block of file block i */
	uint32_t cap;              /* allocated length of blocks[] */
	int orphan;
	_Atomic uint64_t mtime;    /* set by shared-lock writes, flushed at commit */
	atomic_int mdirty;
	/* Failed fsync stays failed (docs/FORMAT.md "Errors"): wgen is the sync
	 * epoch of the last data write (0: none), werr the write-back error a
	 * failed device sync left on this file, returned by every fsync of every
	 * handle until the last one is closed. */
	_Atomic uint64_t wgen;
	atomic_int werr;
	struct sfs_ofile *next, *prev;
};

struct sfs_handle {
	struct sfs_ofile *of;      /* NULL: free */
	unsigned flags;
	_Atomic uint64_t pos;
};

struct sfs {
	struct sfs_dev *dev;
	int own;
	unsigned mflags;
	int rdonly;
	atomic_int failed;         /* a metadata write failed: refuse changes */
	/* Device syncs (sfs_dev_sync): each takes an epoch; a failed one marks
	 * the open files written since the last good one, and the mount. */
	_Atomic uint64_t sync_epoch;   /* next epoch; starts at 1 */
	_Atomic uint64_t synced_epoch; /* every write of an epoch <= this is durable */
	atomic_int sync_err;       /* a device sync failed: sfs_sync/unmount report it */
	pthread_rwlock_t lock;

	/* geometry (validated) */
	uint32_t total, jstart, jblocks, jcap, fat_start, fat_blocks;
	uint32_t dir_start, dir_blocks, data_start, max_files, meta_blocks;
	struct sfs_super_disk sb;  /* the superblock in use */
	unsigned sb_fix;           /* fsck: 1 rewrite the primary, 2 the backup */
	char warn[256];            /* mount: why it fell back to the backup superblock */

	uint32_t *fat;             /* total entries */
	struct sfs_dirent *dir;    /* max_files entries */
	uint64_t free_count;       /* FAT_FREE entries */
	uint32_t alloc_hint;
	uint32_t *pend;            /* blocks freed in the running transaction */
	size_t npend, pend_cap;

	/* names -> slots (chained hash) */
	int32_t *hhead, *hnext;
	uint32_t hmask;
	uint32_t nfiles;           /* named files */
	uint32_t nslots;           /* used slots (named + orphans) */
	uint32_t slot_hint;

	/* running transaction: dirty metadata blocks (index from fat_start) */
	uint8_t *dirty_bm;
	uint32_t *dirty;
	uint32_t ndirty;
	uint64_t txn_start_ns;     /* CLOCK_MONOTONIC when the transaction got its first block */
	uint8_t *jbuf;             /* jcap blocks, aligned */
	uint8_t *hbuf;             /* one block, aligned */
	uint64_t seq;
	uint32_t jnext;
	atomic_int installs_unsynced;   /* the last commit's installs are not durable yet */
	atomic_int reinstall;      /* a failed sync may have lost them: install again first */

	/* open files and handles */
	struct sfs_ofile **ofile_by_slot;
	struct sfs_ofile *open_list;
	struct sfs_handle *handles;
	uint32_t nhandles;         /* capacity of handles[] */
	uint32_t handle_hint;
};

/* meta.c */
/* Test knob (not in the public header): if nonzero, mounts cap the journal's
 * per-transaction capacity to this many blocks (>= 4), so tests can drive the
 * split-transaction paths on small images. */
extern unsigned sfs_debug_jcap;
struct sfs_chk {
	int strict;                /* mount: first problem fails */
	int repair;
	unsigned found, fixed;
	unsigned nmsg;
	void (*msg)(void *arg, const char *text);
	void *arg;
	char *err;
	size_t errlen;
};
int  sfs_load(struct sfs *fs, struct sfs_chk *c);
void sfs_free_meta(struct sfs *fs);
uint32_t sfs_alloc_block(struct sfs *fs, uint32_t pref);
void sfs_free_block(struct sfs *fs, uint32_t b);
int  sfs_lookup(struct sfs *fs, const char *name);
void sfs_hash_insert(struct sfs *fs, uint32_t slot);
void sfs_hash_remove(struct sfs *fs, uint32_t slot);
int  sfs_free_orphan(struct sfs *fs, uint32_t slot);
int  sfs_format_geometry(uint64_t size, uint32_t max_files, struct sfs_super_disk *sb);
int  sfs_format_write(struct sfs_dev *dev, const struct sfs_super_disk *sb);
int  sfs_super_write(struct sfs_dev *dev, const struct sfs_super_disk *sb, uint32_t home, uint8_t *buf);
int  sfs_super_repair(struct sfs *fs);
void sfs_seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t sfs_now_ns(void);

/* journal.c */
int  sfs_commit(struct sfs *fs);
int  sfs_dev_sync(struct sfs *fs);
static inline void sfs_note_write(struct sfs *fs, struct sfs_ofile *of)
{
	atomic_store(&of->wgen, atomic_load(&fs->sync_epoch));
}
int  sfs_finish(struct sfs *fs);
int  sfs_txn_reserve(struct sfs *fs, uint32_t n);
/* Mark metadata block m (index from fat_start) dirty in the running transaction. */
void sfs_mark_meta(struct sfs *fs, uint32_t m);
void sfs_mark_fat(struct sfs *fs, uint32_t block);
void sfs_mark_dir(struct sfs *fs, uint32_t slot);
/* Read the journal into jbuf/hbuf: the number of blocks of a committed
 * transaction there (0: none), or -errno; *clean: a valid empty header. */
int  sfs_read_journal(struct sfs *fs, int *clean);
/* Write an empty journal header (seq kept) and sync. */
int  sfs_write_empty_header(struct sfs *fs);

static inline uint32_t meta_fat_index(uint32_t block) { return block / FAT_PER_BLOCK; }

#endif /* SFS_INT_H */
