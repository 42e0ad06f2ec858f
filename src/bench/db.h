/* SPDX-License-Identifier: MIT */
/*
 * db.h - `bench db`: database page patterns through channels (ur_chan.h).
 * Must never be called with argv other than the subcommand's own: argv[0]
 * is "db", options follow (bench_db_main prints its usage with --help).
 */
#ifndef BENCH_DB_H
#define BENCH_DB_H

/* Runs the database-pattern benchmark; the process exit code (0 ok, 1 a
 * failure such as a bad stamp or an I/O error, 2 usage). */
int bench_db_main(int argc, char **argv);

#endif
