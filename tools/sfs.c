/* SPDX-License-Identifier: MIT */
/*
 * sfs.c - the SimpleFS image tool (mkfs, ls, put, get, rm, stat, fsck): the
 * mtools/e2fsprogs of the format, built only on the public API in sfs.h.
 *
 * It must never touch an image behind the library's back (no raw I/O on the
 * image), never hold more than one fixed-size buffer of file data (put and get
 * stream, so a 1 GiB file works), and never overwrite an image another
 * process has mounted.
 *
 * Exit codes: 0 success, 1 error, 2 usage error; fsck uses e2fsck's codes
 * (0 clean, 1 errors fixed, 4 errors left, 8 operational error, 16 usage).
 */
#include <sfs.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef SFS_TOOL_VERSION
#define SFS_TOOL_VERSION "0.1.0"
#endif

#define EXIT_USAGE 2
#define IO_CHUNK   (1u << 20)          /* put/get stream through one 1 MiB buffer */

/* fsck exit codes, as e2fsck */
#define FSCK_CLEAN  0
#define FSCK_FIXED  1
#define FSCK_LEFT   4
#define FSCK_OPER   8

static const char *prog = "sfs";

static void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---------------------------------------------------------------------------
 * Usage texts
 * ------------------------------------------------------------------------- */
struct cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;
	const char *help;
};

static const struct cmd *cur_cmd;

static void usage_main(FILE *f);

static void cmd_help(const struct cmd *c, FILE *f)
{
	fprintf(f, "usage: sfs %s\n\n%s", c->synopsis, c->help);
}

/* A usage error in the current command: message, synopsis, exit 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s: ", prog, cur_cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: sfs %s\n(sfs %s --help for more)\n",
		cur_cmd->synopsis, cur_cmd->name);
	return EXIT_USAGE;
}

/* Parses the options of a command that has none but --help (and the ones in
 * short/longs). Returns the option character, -1 at the end, or exits. */
static int next_opt(int argc, char **argv, const char *shortopts,
		    const struct option *longopts, int *status)
{
	int c;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	*status = -1;
	if (c == 'h') {
		cmd_help(cur_cmd, stdout);
		*status = 0;
	} else if (c == '?' || c == ':') {
		if (optopt && strchr(shortopts, optopt))
			usage_error("option '-%c' needs an argument", optopt);
		else if (optopt)
			usage_error("unknown option '-%c'", optopt);
		else
			usage_error("unknown or malformed option '%s'", argv[optind - 1]);
		*status = EXIT_USAGE;
	}
	return c;
}

/* ---------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------- */

/* An integer with an optional binary suffix K/M/G/T (KiB..TiB), which may be
 * followed by "iB" or "B": "512", "64K", "1GiB". Returns 0 or -EINVAL/-ERANGE. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;
	int r = parse_size(s, &v);

	if (r)
		return r;
	if (v > UINT32_MAX)
		return -ERANGE;
	*out = (uint32_t)v;
	return 0;
}

/* Human-readable binary size: "1.0 GiB". */
static const char *human(uint64_t v, char *buf, size_t len)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	unsigned u = 0;

	while (d >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", v);
	else
		snprintf(buf, len, "%.1f %s", d, units[u]);
	return buf;
}

/* Length of the UTF-8 sequence of a printable character at p (a code point
 * of U+00A0 or above, shortest form, not a surrogate), or 0. */
static size_t utf8_printable(const unsigned char *p)
{
	unsigned c = p[0];
	size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	uint32_t cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	static const uint32_t min[5] = { 0, 0, 0xa0, 0x800, 0x10000 };   /* below: overlong or C1 */
	if (!n || cp < min[n] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

/* Print a file name from an image so that it cannot act on a terminal:
 * control characters, DEL, C1 controls and bytes that are not UTF-8 become
 * C escapes (\n, \t, \033, \377 ...), a backslash becomes \\ (docs/FORMAT.md). */
static void put_name(const char *name)
{
	static const char letter[] = "abtnvfr";   /* \a .. \r */
	for (const unsigned char *p = (const unsigned char *)name; *p; ) {
		size_t n;
		if (*p >= 0x20 && *p < 0x7f) {
			if (*p == '\\')
				putchar('\\');
			putchar(*p++);
		} else if (*p >= 0x80 && (n = utf8_printable(p))) {
			fwrite(p, 1, n, stdout);
			p += n;
		} else if (*p >= '\a' && *p <= '\r') {
			printf("\\%c", letter[*p - '\a']);
			p++;
		} else {
			printf("\\%03o", *p++);
		}
	}
}

static void fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / UINT64_C(1000000000));
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
		snprintf(buf, len, "%" PRIu64, ns / UINT64_C(1000000000));
}

/* Mount an image; on failure print "sfs: IMAGE: reason" and return -errno. */
static int mount_image(const char *path, unsigned flags, struct sfs **fs)
{
	char err[256] = "";
	int r = sfs_mount(path, flags, fs, err, sizeof err);

	if (r == -EUCLEAN)   /* damage a check found: fsck's to repair */
		err_msg("%s: %s; run sfs fsck -y %s to repair it", path, err[0] ? err : strerror(-r), path);
	else if (r < 0)
		err_msg("%s: %s", path, err[0] ? err : strerror(-r));
	else if (sfs_mount_warnings(*fs, err, sizeof err))
		err_msg("%s: warning: %s; run sfs fsck -y", path, err);
	return r;
}

static int unmount_image(const char *path, struct sfs *fs)
{
	int r = sfs_unmount(fs);

	if (r < 0)
		err_msg("%s: unmount: %s", path, strerror(-r));
	return r;
}

/* Full write to a host fd; 0 or -errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Fill buf from a host fd until len bytes or EOF; returns bytes or -errno. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Progress on a terminal for long transfers, at most a few times a second. */
struct progress {
	int on;
	const char *what;
	uint64_t total;        /* 0: unknown */
	struct timespec last;
};

static void progress_init(struct progress *p, const char *what, uint64_t total)
{
	p->on = isatty(STDERR_FILENO);
	p->what = what;
	p->total = total;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
}

static void progress_update(struct progress *p, uint64_t done)
{
	struct timespec now;
	char a[32], b[32];

	if (!p->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - p->last.tv_sec) * 1000000000ll + (now.tv_nsec - p->last.tv_nsec) < 250000000ll)
		return;
	p->last = now;
	if (p->total)
		fprintf(stderr, "\r%s: %s / %s (%u%%)   ", p->what, human(done, a, sizeof a),
			human(p->total, b, sizeof b), (unsigned)(done * 100 / p->total));
	else
		fprintf(stderr, "\r%s: %s   ", p->what, human(done, a, sizeof a));
	p->on = 2;
}

static void progress_done(struct progress *p)
{
	if (p->on == 2)
		fprintf(stderr, "\r\033[K");
}

/* What is wrong with NAME as a SimpleFS file name (docs/FORMAT.md: 1..63
 * bytes, no '/'), or NULL when nothing is. */
static const char *name_problem(const char *name)
{
	static char why[96];
	size_t len = strlen(name);

	if (!len)
		return "NAME is empty (a file name is 1 to 63 bytes, any but '/')";
	if (len > SFS_NAME_MAX) {
		snprintf(why, sizeof why, "NAME is %zu bytes long (a file name is at most %u)",
			 len, SFS_NAME_MAX);
		return why;
	}
	if (strchr(name, '/'))
		return "NAME contains '/' (an image holds one flat directory: no folders)";
	return NULL;
}

/* The reason for a usage error about NAME in a message that names it. */
static int bad_name(const char *name, const char *why)
{
	return usage_error("'%.80s': %s", name, why);
}

/* -ENOSPC from creating NAME or writing it: which limit it met: the image's
 * directory (max_files slots), its data blocks, or the host file system that
 * holds the image (the image still has free blocks). */
static void say_no_space(struct sfs *fs, const char *name, int creating, uint64_t stored)
{
	struct sfs_statfs sf;
	int known = sfs_statfs(fs, &sf) == 0;

	if (known && creating && sf.files >= sf.max_files)
		err_msg("put: %s: the image's directory is full (%u of %u files; sfs mkfs "
			"--files N makes an image with room for more)", name, sf.files, sf.max_files);
	else if (known && !creating && sf.free_blocks == 0)
		err_msg("put: %s: the image's data area is full (%" PRIu64 " bytes stored)",
			name, stored);
	else if (known)
		err_msg("put: %s: %s (the host file system that holds the image is full; %" PRIu64
			" bytes stored)", name, strerror(ENOSPC), stored);
	else
		err_msg("put: %s: %s (%" PRIu64 " bytes stored)", name, strerror(ENOSPC), stored);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	/* "dir/" has no usable basename */
	return s ? s + 1 : path;
}

/* ---------------------------------------------------------------------------
 * mkfs
 * ------------------------------------------------------------------------- */
static int cmd_mkfs(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "files", required_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		{ "mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t size = SFS_DEFAULT_SIZE;
	uint32_t files = 0;
	unsigned mode = SFS_DEFAULT_MODE;
	int force = 0, c, st, r;
	const char *path;
	struct stat sb;
	char h[32];

	while ((c = next_opt(argc, argv, "s:n:fm:h", lo, &st)) != -1) {
		if (st >= 0)
			return st;
		switch (c) {
		case 's':
			if (parse_size(optarg, &size))
				return usage_error("bad size '%s' (a number with an optional K, M, G or T suffix)", optarg);
			break;
		case 'n':
			if (parse_u32(optarg, &files) || files == 0)
				return usage_error("bad file count '%s'", optarg);
			break;
		case 'f':
			force = 1;
			break;
		case 'm': {
			char *end;
			unsigned long m = strtoul(optarg, &end, 8);
			if (!*optarg || *end || m > 0777)
				return usage_error("bad mode '%s' (octal, 0 .. 0777, e.g. 0640)", optarg);
			mode = (unsigned)m;
			break;
		}
		}
	}
	if (optind + 1 != argc)
		return usage_error(optind == argc ? "missing IMAGE" : "too many arguments");
	path = argv[optind];
	if (size < SFS_MIN_SIZE || size > SFS_MAX_SIZE)
		return usage_error("size %" PRIu64 " out of range (%llu MiB .. %llu TiB)", size,
				   (unsigned long long)(SFS_MIN_SIZE >> 20), (unsigned long long)(SFS_MAX_SIZE >> 40));

	if (lstat(path, &sb) == 0) {
		int holder = sfs_lock_holder(path);

		if (S_ISLNK(sb.st_mode)) {
			err_msg("%s: is a symbolic link (not followed: give the path it points to)", path);
			return 1;
		}
		if (holder > 0) {
			err_msg("%s: in use by pid %d", path, holder);
			return 1;
		}
		if (!S_ISREG(sb.st_mode)) {
			err_msg("%s: not a regular file", path);
			return 1;
		}
		if (sb.st_size > 0 && !force) {
			err_msg("%s: file exists (use --force to overwrite it)", path);
			return 1;
		}
	} else if (errno != ENOENT) {
		err_msg("%s: %s", path, strerror(errno));
		return 1;
	}

	/* As open(2) would: the umask takes bits away from a new image's mode. */
	{
		mode_t um = umask(0);

		umask(um);
		mode &= ~(unsigned)um;
	}
	/* The FAT (4 bytes a block) and the journal are written now: tell the cost
	 * before a long format. */
	if (size / SFS_BLOCK_SIZE * 4 >= (UINT64_C(64) << 20))
		fprintf(stderr, "%s: mkfs: %s: writing a %s FAT (4 bytes per %u-byte block): "
			"the image takes that much disk space at once\n", prog, path,
			human(size / SFS_BLOCK_SIZE * 4, h, sizeof h), (unsigned)SFS_BLOCK_SIZE);
	r = sfs_format_ex(path, size, files, force ? SFS_FORMAT_FORCE : 0, mode);
	if (r == -ELOOP || r == -EEXIST) {   /* it changed under us since the lstat */
		err_msg("%s: %s", path, r == -ELOOP ? "is a symbolic link (not followed)"
			: "exists and is not a SimpleFS image (use --force to overwrite it)");
		return 1;
	}
	if (r == -ENOSPC)
		return usage_error("%u files do not fit in %" PRIu64 " bytes (at least 16 data blocks "
				   "must remain): give a smaller --files or a larger --size", files, size);
	if (r == -EINVAL)
		return usage_error("bad geometry: %" PRIu64 " bytes, %u files (files: 1..1048576)",
				   size, files);
	if (r < 0) {
		err_msg("%s: mkfs: %s", path, strerror(-r));
		return 1;
	}

	/* Report what was made, from the image itself. */
	{
		struct sfs *fs;
		struct sfs_statfs sf;

		if (mount_image(path, SFS_MOUNT_RDONLY, &fs) < 0)
			return 1;
		r = sfs_statfs(fs, &sf);
		unmount_image(path, fs);
		if (r < 0) {
			err_msg("%s: statfs: %s", path, strerror(-r));
			return 1;
		}
		printf("%s: %s, %" PRIu64 " blocks of %" PRIu64 " bytes, %" PRIu64
		       " data blocks, room for %u file%s\n", path,
		       human(sf.total_blocks * sf.block_size, h, sizeof h), sf.total_blocks,
		       sf.block_size, sf.data_blocks, sf.max_files, sf.max_files == 1 ? "" : "s");
	}
	return 0;
}

/* ---------------------------------------------------------------------------
 * ls
 * ------------------------------------------------------------------------- */
static int cmp_stat_name(const void *a, const void *b)
{
	return strcmp(((const struct sfs_stat *)a)->name, ((const struct sfs_stat *)b)->name);
}

static int cmd_ls(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "long", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int lflag = 0, c, st, r, rc = 0;
	const char *path;
	struct sfs *fs;
	struct sfs_stat *v = NULL, s;
	size_t n = 0, cap = 0, i;
	uint32_t cookie = 0;
	uint64_t bytes = 0, blocks = 0;

	while ((c = next_opt(argc, argv, "lh", lo, &st)) != -1) {
		if (st >= 0)
			return st;
		if (c == 'l')
			lflag = 1;
	}
	if (optind + 1 != argc)
		return usage_error(optind == argc ? "missing IMAGE" : "too many arguments");
	path = argv[optind];
	if (mount_image(path, SFS_MOUNT_RDONLY, &fs) < 0)
		return 1;

	/* The directory is bounded by max_files, so this list is too. */
	while ((r = sfs_readdir(fs, &cookie, &s)) == 1) {
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct sfs_stat *nv = realloc(v, ncap * sizeof(*v));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = s;
	}
	if (r < 0) {
		err_msg("%s: readdir: %s", path, strerror(-r));
		rc = 1;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_stat_name);
	for (i = 0; i < n; i++) {
		if (lflag) {
			char t[32];

			fmt_time(v[i].mtime_ns, t, sizeof t);
			printf("%12" PRIu64 " %8" PRIu64 "  %s  ", v[i].size, v[i].blocks, t);
		}
		put_name(v[i].name);
		putchar('\n');
		bytes += v[i].size;
		blocks += v[i].blocks;
	}
	if (lflag)
		printf("total: %zu file%s, %" PRIu64 " bytes, %" PRIu64 " blocks\n",
		       n, n == 1 ? "" : "s", bytes, blocks);
	free(v);
	if (unmount_image(path, fs) < 0)
		rc = 1;
	if (fflush(stdout) == EOF || ferror(stdout)) {
		err_msg("ls: write error: %s", strerror(errno));
		rc = 1;
	}
	return rc;
}

/* ---------------------------------------------------------------------------
 * put
 * ------------------------------------------------------------------------- */
static int cmd_put(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path, *host, *name;
	int c, st, r, rc = 1, hfd = -1, fd = -1;
	struct sfs *fs = NULL;
	struct stat sb;
	char *buf = NULL;
	uint64_t off = 0;
	struct progress pg;
	char what[SFS_NAME_MAX + 16];

	while ((c = next_opt(argc, argv, "h", lo, &st)) != -1)
		if (st >= 0)
			return st;
	if (argc - optind < 2)
		return usage_error(argc == optind ? "missing IMAGE and HOSTFILE" : "missing HOSTFILE");
	if (argc - optind > 3)
		return usage_error("too many arguments");
	path = argv[optind];
	host = argv[optind + 1];
	if (argc - optind == 3)
		name = argv[optind + 2];
	else if (!strcmp(host, "-"))
		return usage_error("NAME is required when reading standard input");
	else
		name = base_name(host);
	if (argc - optind < 3 && !*name)
		return usage_error("'%s' has no file name; give NAME", host);
	if (name_problem(name))
		return bad_name(name, name_problem(name));

	if (!strcmp(host, "-")) {
		hfd = STDIN_FILENO;
	} else {
		hfd = open(host, O_RDONLY | O_CLOEXEC);
		if (hfd < 0) {
			err_msg("put: %s: %s", host, strerror(errno));
			return 1;
		}
	}
	if (fstat(hfd, &sb) < 0) {
		err_msg("put: %s: %s", host, strerror(errno));
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		err_msg("put: %s: %s", host, strerror(EISDIR));
		goto out;
	}
	buf = malloc(IO_CHUNK);
	if (!buf) {
		err_msg("put: %s", strerror(ENOMEM));
		goto out;
	}
	if (mount_image(path, 0, &fs) < 0)
		goto out;
	fd = sfs_file_open(fs, name, SFS_O_CREAT | SFS_O_TRUNC);
	if (fd == -ENOSPC) {
		say_no_space(fs, name, 1, 0);
		goto out;
	}
	if (fd < 0) {
		err_msg("put: %s: %s", name, strerror(-fd));
		goto out;
	}
	snprintf(what, sizeof what, "put %s", name);
	progress_init(&pg, what, S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0);
	for (;;) {
		ssize_t n = read_full(hfd, buf, IO_CHUNK), w, done;

		if (n < 0) {
			progress_done(&pg);
			err_msg("put: %s: %s", host, strerror((int)-n));
			goto out;
		}
		if (n == 0)
			break;
		/* A short write stores what fits; the next call tells why. */
		for (done = 0; done < n; done += w) {
			w = sfs_file_pwrite(fs, fd, buf + done, (size_t)(n - done), off + (uint64_t)done);
			if (w == 0)
				w = -ENOSPC;
			if (w < 0) {
				progress_done(&pg);
				if (w == -ENOSPC)
					say_no_space(fs, name, 0, off + (uint64_t)done);
				else
					err_msg("put: %s: %s (%" PRIu64 " bytes stored)", name,
						strerror((int)-w), off + (uint64_t)done);
				goto out;
			}
		}
		off += (uint64_t)n;
		progress_update(&pg, off);
	}
	progress_done(&pg);
	r = sfs_file_fsync(fs, fd);
	if (r < 0) {
		err_msg("put: %s: fsync: %s", name, strerror(-r));
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0) {
		r = sfs_file_close(fs, fd);
		if (r < 0 && rc == 0) {
			err_msg("put: %s: close: %s", name, strerror(-r));
			rc = 1;
		}
	}
	if (fs && unmount_image(path, fs) < 0)
		rc = 1;
	if (hfd > STDERR_FILENO)
		close(hfd);
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------------------
 * get
 * ------------------------------------------------------------------------- */
static int cmd_get(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path, *name, *host;
	int c, st, r, rc = 1, hfd = -1, fd = -1, to_stdout;
	struct sfs *fs = NULL;
	struct sfs_stat s;
	char *buf = NULL;
	uint64_t off = 0;
	struct progress pg;
	char what[SFS_NAME_MAX + 16];

	while ((c = next_opt(argc, argv, "h", lo, &st)) != -1)
		if (st >= 0)
			return st;
	if (argc - optind < 2)
		return usage_error(argc == optind ? "missing IMAGE and NAME" : "missing NAME");
	if (argc - optind > 3)
		return usage_error("too many arguments");
	path = argv[optind];
	name = argv[optind + 1];
	if (name_problem(name))
		return bad_name(name, name_problem(name));
	host = argc - optind == 3 ? argv[optind + 2] : name;
	to_stdout = !strcmp(host, "-");

	buf = malloc(IO_CHUNK);
	if (!buf) {
		err_msg("get: %s", strerror(ENOMEM));
		return 1;
	}
	if (mount_image(path, SFS_MOUNT_RDONLY, &fs) < 0)
		goto out;
	fd = sfs_file_open(fs, name, SFS_O_RDONLY);
	if (fd < 0) {
		err_msg("get: %s: %s", name, strerror(-fd));
		goto out;
	}
	r = sfs_file_stat(fs, fd, &s);
	if (r < 0) {
		err_msg("get: %s: %s", name, strerror(-r));
		goto out;
	}
	/* Open the destination only once the source is known to exist, and
	 * never truncate the image itself. */
	if (to_stdout) {
		hfd = STDOUT_FILENO;
	} else {
		struct stat hs, is;

		if (stat(host, &hs) == 0 && stat(path, &is) == 0 && hs.st_dev == is.st_dev &&
		    hs.st_ino == is.st_ino) {
			err_msg("get: %s: is the image itself; not overwriting it", host);
			goto out;
		}
		hfd = open(host, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
		if (hfd < 0) {
			err_msg("get: %s: %s", host, strerror(errno));
			goto out;
		}
	}
	snprintf(what, sizeof what, "get %s", name);
	progress_init(&pg, what, s.size);
	if (to_stdout)
		pg.on = 0;      /* keep a terminal showing the data readable */
	for (;;) {
		ssize_t n = sfs_file_pread(fs, fd, buf, IO_CHUNK, off);

		if (n < 0) {
			progress_done(&pg);
			err_msg("get: %s: %s", name, strerror((int)-n));
			goto out;
		}
		if (n == 0)
			break;
		r = write_all(hfd, buf, (size_t)n);
		if (r < 0) {
			progress_done(&pg);
			err_msg("get: %s: %s", to_stdout ? "standard output" : host, strerror(-r));
			goto out;
		}
		off += (uint64_t)n;
		progress_update(&pg, off);
	}
	progress_done(&pg);
	if (!to_stdout && close(hfd) < 0) {
		hfd = -1;
		err_msg("get: %s: %s", host, strerror(errno));
		goto out;
	}
	if (!to_stdout)
		hfd = -1;
	rc = 0;
out:
	if (fd >= 0)
		sfs_file_close(fs, fd);
	if (fs && unmount_image(path, fs) < 0)
		rc = 1;
	if (hfd > STDERR_FILENO)
		close(hfd);
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------------------
 * rm
 * ------------------------------------------------------------------------- */
static int cmd_rm(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, st, i, r, rc = 0, force = 0;
	const char *path;
	struct sfs *fs;

	while ((c = next_opt(argc, argv, "fh", lo, &st)) != -1) {
		if (st >= 0)
			return st;
		if (c == 'f')
			force = 1;
	}
	if (argc - optind < 2)
		return usage_error(argc == optind ? "missing IMAGE and NAME" : "missing NAME");
	path = argv[optind];
	for (i = optind + 1; i < argc; i++)
		if (name_problem(argv[i]))
			return bad_name(argv[i], name_problem(argv[i]));
	if (mount_image(path, 0, &fs) < 0)
		return 1;
	for (i = optind + 1; i < argc; i++) {
		r = sfs_unlink(fs, argv[i]);
		if (r == -ENOENT && force)
			continue;
		if (r < 0) {
			err_msg("rm: %s: %s", argv[i], strerror(-r));
			rc = 1;
		}
	}
	r = sfs_sync(fs);
	if (r < 0) {
		err_msg("%s: sync: %s", path, strerror(-r));
		rc = 1;
	}
	if (unmount_image(path, fs) < 0)
		rc = 1;
	return rc;
}

/* ---------------------------------------------------------------------------
 * stat
 * ------------------------------------------------------------------------- */
static int cmd_stat(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, st, r, rc = 0;
	const char *path;
	struct sfs *fs;
	char a[32], b[32];

	while ((c = next_opt(argc, argv, "h", lo, &st)) != -1)
		if (st >= 0)
			return st;
	if (argc - optind < 1)
		return usage_error("missing IMAGE");
	if (argc - optind > 2)
		return usage_error("too many arguments");
	path = argv[optind];
	if (argc - optind == 2 && name_problem(argv[optind + 1]))
		return bad_name(argv[optind + 1], name_problem(argv[optind + 1]));
	if (mount_image(path, SFS_MOUNT_RDONLY, &fs) < 0)
		return 1;
	if (argc - optind == 2) {
		const char *name = argv[optind + 1];
		struct sfs_stat s;

		r = sfs_stat(fs, name, &s);
		if (r < 0) {
			err_msg("stat: %s: %s", name, strerror(-r));
			rc = 1;
		} else {
			fmt_time(s.mtime_ns, a, sizeof a);
			printf("name:   ");
			put_name(s.name);
			putchar('\n');
			printf("size:   %" PRIu64 " (%s)\n", s.size, human(s.size, b, sizeof b));
			printf("blocks: %" PRIu64 "\n", s.blocks);
			printf("mtime:  %s (%" PRIu64 ".%09" PRIu64 ")\n", a,
			       s.mtime_ns / UINT64_C(1000000000), s.mtime_ns % UINT64_C(1000000000));
			printf("slot:   %u\n", s.ino);
		}
	} else {
		struct sfs_statfs s;

		r = sfs_statfs(fs, &s);
		if (r < 0) {
			err_msg("%s: statfs: %s", path, strerror(-r));
			rc = 1;
		} else {
			printf("image:        %s\n", path);
			printf("block size:   %" PRIu64 "\n", s.block_size);
			printf("total blocks: %" PRIu64 " (%s)\n", s.total_blocks,
			       human(s.total_blocks * s.block_size, a, sizeof a));
			printf("data blocks:  %" PRIu64 " (%s)\n", s.data_blocks,
			       human(s.data_blocks * s.block_size, a, sizeof a));
			printf("free blocks:  %" PRIu64 " (%s)\n", s.free_blocks,
			       human(s.free_blocks * s.block_size, b, sizeof b));
			printf("files:        %u of %u\n", s.files, s.max_files);
			printf("name max:     %u\n", s.name_max);
		}
	}
	if (unmount_image(path, fs) < 0)
		rc = 1;
	return rc;
}

/* ---------------------------------------------------------------------------
 * fsck
 * ------------------------------------------------------------------------- */
struct fsck_ctx {
	const char *path;
	unsigned lines;
};

static void fsck_msg(void *arg, const char *text)
{
	struct fsck_ctx *c = arg;

	printf("%s: %s\n", c->path, text);
	c->lines++;
}

static int cmd_fsck(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, st, r, repair = 0, nflag = 0;
	struct sfs_fsck_result res = { 0, 0 };
	struct fsck_ctx ctx = { NULL, 0 };
	char err[256] = "";

	while ((c = next_opt(argc, argv, "nyh", lo, &st)) != -1) {
		if (st >= 0)
			return st == EXIT_USAGE ? 16 : st;
		if (c == 'n')
			nflag = 1;
		else if (c == 'y')
			repair = 1;
	}
	if (nflag && repair) {
		usage_error("-n and -y exclude each other");
		return 16;
	}
	if (argc - optind != 1) {
		usage_error(argc == optind ? "missing IMAGE" : "too many arguments");
		return 16;
	}
	ctx.path = argv[optind];
	r = sfs_fsck(ctx.path, repair, &res, fsck_msg, &ctx, err, sizeof err);
	fflush(stdout);
	if (r < 0) {
		err_msg("%s: %s", ctx.path, err[0] ? err : strerror(-r));
		return FSCK_OPER;
	}
	if (res.errors_found == 0) {
		printf("%s: clean\n", ctx.path);
		return FSCK_CLEAN;
	}
	printf("%s: %u error%s found, %u fixed%s\n", ctx.path, res.errors_found,
	       res.errors_found == 1 ? "" : "s", res.errors_fixed,
	       repair ? "" : " (check only; run sfs fsck -y to repair)");
	if (repair && res.errors_fixed >= res.errors_found)
		return FSCK_FIXED;
	return FSCK_LEFT;
}

/* ---------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------- */
static const struct cmd cmds[] = {
	{ "mkfs", cmd_mkfs, "mkfs [--size N] [--files N] [--mode MODE] [--force] IMAGE",
	  "Create a SimpleFS image file. It is sparse: it costs its FAT (1 MiB per GiB\n"
	  "of size, written at once), its journal (1 MiB) and the data written.\n"
	  "A new image is readable by its owner only; IMAGE may not be a symbolic link.\n"
	  "  -s, --size N    image size (default 1G); N takes a K, M, G or T suffix\n"
	  "  -n, --files N   room for N files (default 4096)\n"
	  "  -m, --mode MODE permissions of a new image, octal (default 0600; 0640\n"
	  "                  shares it with the group on purpose); the umask applies,\n"
	  "                  as for open(2)\n"
	  "  -f, --force     overwrite an existing file, even one that is not an image\n"
	  "                  (never one that is mounted)\n" },
	{ "ls", cmd_ls, "ls [-l] IMAGE",
	  "List the files in an image, sorted by name. Control characters, DEL and bytes\n"
	  "that are not UTF-8 in a name are printed as C escapes (\\n, \\033, \\377), a\n"
	  "backslash as \\\\: one file, one line, nothing a terminal acts on.\n"
	  "  -l, --long      size in bytes, 4 KiB blocks, modification time, name; totals\n" },
	{ "put", cmd_put, "put IMAGE HOSTFILE [NAME]",
	  "Copy a host file into the image as NAME (default: the host file's basename),\n"
	  "replacing any file of that name. HOSTFILE '-' reads standard input (NAME is\n"
	  "then required). Streams in constant memory; the file is fsynced at the end.\n"
	  "On failure (e.g. the image is full) the partial file is left, as cp does.\n" },
	{ "get", cmd_get, "get IMAGE NAME [HOSTFILE|-]",
	  "Copy file NAME out of the image to HOSTFILE (default: ./NAME); '-' writes\n"
	  "to standard output. Streams in constant memory.\n" },
	{ "rm", cmd_rm, "rm [-f] IMAGE NAME...",
	  "Remove files from the image.\n"
	  "  -f, --force     ignore names that do not exist\n" },
	{ "stat", cmd_stat, "stat IMAGE [NAME]",
	  "Without NAME: the image's geometry, free space and file count.\n"
	  "With NAME: the file's size, blocks, modification time and directory slot.\n" },
	{ "fsck", cmd_fsck, "fsck [-n|-y] IMAGE",
	  "Check an image (replaying its journal first).\n"
	  "  -n              check only, change nothing (default)\n"
	  "  -y              repair what can be repaired\n"
	  "Exit status as e2fsck: 0 clean, 1 errors fixed, 4 errors left uncorrected,\n"
	  "8 operational error (cannot open, in use, not an image), 16 usage error.\n" },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage_main(FILE *f)
{
	size_t i;

	fprintf(f, "usage: sfs COMMAND [ARGS]   (the SimpleFS image tool)\n\ncommands:\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  sfs %s\n", cmds[i].synopsis);
	fprintf(f, "\n  sfs COMMAND --help   help on one command\n"
		   "  sfs --version\n\n"
		   "Sizes take K, M, G, T suffixes (powers of 1024). Exit status: 0 success,\n"
		   "1 error, 2 usage error (fsck: see sfs fsck --help).\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage_main(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 2) {
			for (i = 0; i < NCMDS; i++)
				if (!strcmp(argv[2], cmds[i].name)) {
					cmd_help(&cmds[i], stdout);
					return 0;
				}
		}
		usage_main(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("sfs (SimpleFS image tool) %s\n", SFS_TOOL_VERSION);
		return 0;
	}
	for (i = 0; i < NCMDS; i++) {
		if (!strcmp(argv[1], cmds[i].name)) {
			cur_cmd = &cmds[i];
			optind = 1;
			return cmds[i].run(argc - 1, argv + 1);
		}
	}
	err_msg("unknown command '%s'", argv[1]);
	usage_main(stderr);
	return EXIT_USAGE;
}
