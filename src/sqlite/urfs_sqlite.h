/* SPDX-License-Identifier: MIT */
/*
 * urfs_sqlite.h - the "urfs" SQLite VFS (src/sqlite/urfs_vfs.c) for programs
 * that link SQLite themselves: installed, -lurfs_sqlite -lur_fs -lsqlite3 (in
 * the tree: obj/liburfs_sqlite.a, libur_fs.so, -lsqlite3). The sqlite3 shell
 * loads liburfs_sqlite.so instead (.load). The manual: urfs_sqlite(3).
 * Must never need anything but <sqlite3.h> to compile against.
 */
#ifndef URFS_SQLITE_H
#define URFS_SQLITE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Register the VFS "urfs" (make_default 1: as SQLite's default VFS).
 * SQLITE_OK or an SQLite error code. Safe to call more than once. */
int urfs_sqlite_register(int make_default);

#ifdef __cplusplus
}
#endif
#endif /* URFS_SQLITE_H */
