/* SPDX-License-Identifier: MIT */
/* Description: the sfs image tool as a user drives it ($UR_BIN/sfs): mkfs
 * (size suffixes, refusing to clobber, 0600 or --mode, no symlink followed),
 * names with control characters printed as escapes by ls and stat, put/get round trip of a binary file
 * (byte for byte, also through stdin/stdout and a default name), put in
 * constant memory (peak RSS while storing 48 MiB), ls and ls -l, rm, stat,
 * fsck exit codes (clean 0; a leaked block: -n gives 4, -y gives 1, then 0),
 * bad input (names, full images, mkfs geometry, --mode under the umask, a
 * damaged FAT) answered with what is wrong and what to do,
 * --help and --version, and clear messages with non-zero exits for a missing
 * image, a file that is not an image, a missing file, and an image in use.
 *
 * It must never trust the tool's own output for content: files are compared
 * byte for byte, and corruption is made by hand from docs/FORMAT.md.
 */
#include <sfs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static char sfs_bin[4096];
static char out[1 << 16], err[1 << 16];     /* the last command's stdout, stderr */
static char last_cmd[1024];

static void slurp(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, cap - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* Runs "sfs ARGS" through sh (ARGS is shell text), captures stdout and
 * stderr, returns the exit status. */
static int sfs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sfs(const char *fmt, ...)
{
	char args[800], cmd[sizeof sfs_bin + 900];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof args, fmt, ap);
	va_end(ap);
	snprintf(last_cmd, sizeof last_cmd, "sfs %s", args);
	snprintf(cmd, sizeof cmd, "'%s' %s >cmd.out 2>cmd.err", sfs_bin, args);
	st = system(cmd);
	CHECK(st != -1 && WIFEXITED(st));
	slurp("cmd.out", out, sizeof out);
	slurp("cmd.err", err, sizeof err);
	return WEXITSTATUS(st);
}

#define EXPECT(code, ...) do { int _st = sfs(__VA_ARGS__); if (_st != (code)) \
	FAIL("'%s' exited %d, expected %d\nstdout: %s\nstderr: %s", last_cmd, _st, (code), out, err); \
	} while (0)
#define OUT_HAS(s) do { if (!strstr(out, (s))) \
	FAIL("'%s': stdout lacks '%s':\n%s", last_cmd, (s), out); } while (0)
#define ERR_HAS(s) do { if (!strstr(err, (s))) \
	FAIL("'%s': stderr lacks '%s':\n%s", last_cmd, (s), err); } while (0)

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	CHECK(f);
	CHECK(fwrite(buf, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

static void same_file(const char *path, const uint8_t *want, size_t len)
{
	struct stat sb;
	uint8_t *got;
	FILE *f;

	if (stat(path, &sb) < 0)
		FAIL("%s: %s", path, strerror(errno));
	if ((size_t)sb.st_size != len)
		FAIL("%s: %lld bytes, expected %zu", path, (long long)sb.st_size, len);
	got = malloc(len + 1);
	CHECK(got);
	f = fopen(path, "rb");
	CHECK(f);
	CHECK(fread(got, 1, len, f) == len);
	fclose(f);
	for (size_t i = 0; i < len; i++)
		if (got[i] != want[i])
			FAIL("%s: byte %zu is 0x%02x, expected 0x%02x", path, i, got[i], want[i]);
	free(got);
}

/* --- the on-disk format, from docs/FORMAT.md, for making a leaked block --- */
/* crc32c(): testutil.h */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* Marks the image's last block allocated (end of chain) with no file using it. */
static void leak_last_block(const char *path)
{
	uint8_t sb[4096], fat[4096];
	uint32_t total, fat_start, last, fb;
	int fd = open(path, O_RDWR);

	CHECK(fd >= 0);
	CHECK(pread(fd, sb, 4096, 0) == 4096);
	CHECK(memcmp(sb, "SIMPLEFS", 8) == 0);
	total = le32(sb + 16);
	fat_start = le32(sb + 28);
	last = total - 1;
	fb = fat_start + last / 1022;
	CHECK(pread(fd, fat, 4096, (off_t)fb * 4096) == 4096);
	CHECK(le32(fat + 4088) == fb);
	CHECK(le32(fat + 4092) == crc32c(fat, 4092));
	CHECK_EQ(le32(fat + (last % 1022) * 4), 0);        /* it was free */
	put32(fat + (last % 1022) * 4, 0xFFFFFFFFu);
	put32(fat + 4092, crc32c(fat, 4092));
	CHECK(pwrite(fd, fat, 4096, (off_t)fb * 4096) == 4096);
	CHECK(close(fd) == 0);
}

/* Peak RSS (KiB) of "sfs put IMG HOST NAME", which must succeed. */
static long put_peak_rss(const char *img, const char *host, const char *name)
{
	struct rusage ru;
	int st;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		execl(sfs_bin, "sfs", "put", img, host, name, (char *)NULL);
		_exit(127);
	}
	CHECK(wait4(pid, &st, 0, &ru) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		FAIL("sfs put %s %s %s failed", img, host, name);
	return ru.ru_maxrss;
}

/* Names with control characters, DEL, C1 controls, bytes that are not UTF-8
 * and a backslash (the format allows every byte but '/' and NUL), as ls and
 * stat must print them, and a name that is printable UTF-8 (printed as is). */
static const struct { const char *name, *shown; } hostile[] = {
	{ "nl\nname", "nl\\nname" },
	{ "esc\033[2J\033]0;owned\a", "esc\\033[2J\\033]0;owned\\a" },
	{ "del\177", "del\\177" },
	{ "bad\377\300", "bad\\377\\300" },
	{ "c1\302\233x", "c1\\302\\233x" },
	{ "back\\slash", "back\\\\slash" },
	{ "tab\there\r", "tab\\there\\r" },
	{ "ok-\303\274", "ok-\303\274" },
};
#define NHOSTILE (sizeof(hostile) / sizeof(hostile[0]))

/* The last command's stdout holds nothing a terminal would act on: every
 * byte printable ASCII, a line end, or part of printable UTF-8 (here: ü). */
static void out_is_inert(void)
{
	for (const unsigned char *p = (const unsigned char *)out; *p; p++) {
		if ((*p >= 0x20 && *p < 0x7f) || *p == '\n')
			continue;
		if (p[0] == 0xc3 && p[1] == 0xbc) {
			p++;
			continue;
		}
		FAIL("'%s' printed byte 0x%02x raw:\n%s", last_cmd, *p, out);
	}
}

static void names_printed_safely(void)
{
	struct sfs *fs;
	CHECK_EQ(sfs_format("names.sfs", 1u << 20, 0), 0);
	fs = MOUNT_OR_DIE("names.sfs");
	for (size_t i = 0; i < NHOSTILE; i++) {
		int fd = sfs_file_open(fs, hostile[i].name, SFS_O_CREAT | SFS_O_EXCL);
		if (fd < 0)
			FAIL("create '%s': %s", hostile[i].shown, strerror(-fd));
		CHECK_EQ(sfs_file_close(fs, fd), 0);
	}
	CHECK_EQ(sfs_unmount(fs), 0);
	for (int l = 0; l < 2; l++) {
		EXPECT(0, l ? "ls -l names.sfs" : "ls names.sfs");
		out_is_inert();
		size_t lines = 0;
		for (const char *p = out; *p; p++)
			lines += *p == '\n';
		CHECK_EQ(lines, NHOSTILE + (size_t)l);          /* one line per file (+ total) */
		for (size_t i = 0; i < NHOSTILE; i++) {
			char want[128];
			snprintf(want, sizeof(want), "%s%s\n", l ? "  " : "", hostile[i].shown);
			OUT_HAS(want);
		}
	}
	EXPECT(0, "stat names.sfs \"$(printf 'nl\\nname')\"");
	out_is_inert();
	OUT_HAS("name:   nl\\nname\n");
}

/* Bad input gets a message that says what is wrong: names
 * against FORMAT.md's rule, each before the image is touched (usage: exit
 * 2); which limit a full image met; mkfs's geometry mistakes as usage
 * errors; its count of files in words; the FAT's cost before a long format;
 * a checksum error that says how to repair it. */
static void bad_input(void)
{
	char name64[80];

	EXPECT(0, "mkfs --size 4M --files 1 one.sfs");
	OUT_HAS("room for 1 file\n");
	EXPECT(2, "put one.sfs bin.dat ''");
	ERR_HAS("sfs: put: '': NAME is empty (a file name is 1 to 63 bytes");
	EXPECT(2, "put one.sfs bin.dat a/b");
	ERR_HAS("sfs: put: 'a/b': NAME contains '/' (an image holds one flat directory");
	memset(name64, 'n', 64);
	name64[64] = '\0';
	EXPECT(2, "put one.sfs bin.dat %s", name64);
	ERR_HAS("NAME is 64 bytes long (a file name is at most 63)");
	name64[63] = '\0';                         /* 63 bytes: the longest name */
	EXPECT(0, "put one.sfs bin.dat %s", name64);
	EXPECT(2, "get one.sfs a/b out.dat");
	ERR_HAS("sfs: get: 'a/b': NAME contains '/'");
	EXPECT(2, "rm one.sfs %s ''", name64);
	ERR_HAS("sfs: rm: '': NAME is empty");
	EXPECT(0, "stat one.sfs %s", name64);      /* the rm above removed nothing */
	EXPECT(2, "stat one.sfs a/b");
	ERR_HAS("sfs: stat: 'a/b': NAME contains '/'");
	EXPECT(2, "put one.sfs bin.dat trailing/");
	/* a full directory and a full data area say which */
	EXPECT(1, "put one.sfs bin.dat second");
	ERR_HAS("sfs: put: second: the image's directory is full (1 of 1 files; sfs mkfs --files N");
	EXPECT(0, "rm one.sfs %s", name64);
	EXPECT(0, "mkfs --size 1M --files 2 tiny.sfs");
	EXPECT(1, "put tiny.sfs bin.dat");          /* 1 MiB + 123 bytes: more than fits */
	ERR_HAS("sfs: put: bin.dat: the image's data area is full (");
	ERR_HAS(" bytes stored)");
	EXPECT(0, "fsck tiny.sfs");
	/* mkfs: a geometry that cannot be is a usage error, as a bad value is */
	EXPECT(2, "mkfs --size 1M --files 100000 nofit.sfs");
	ERR_HAS("100000 files do not fit in 1048576 bytes");
	ERR_HAS("usage: sfs mkfs");
	EXPECT(2, "mkfs --files 2000000 nofit.sfs");
	ERR_HAS("bad geometry");
	CHECK(access("nofit.sfs", F_OK) != 0);
	/* the FAT's cost is said before it is written (64 MiB of FAT here) */
	EXPECT(0, "mkfs --size 1G small1g.sfs");
	if (strstr(err, "FAT"))
		FAIL("mkfs of 1 GiB spoke of its FAT: %s", err);
	EXPECT(0, "mkfs --size 64G fat64m.sfs");
	ERR_HAS("writing a 64.0 MiB FAT (4 bytes per 4096-byte block)");
	CHECK(unlink("fat64m.sfs") == 0);
	/* a FAT block whose checksum fails: the message says how to repair it */
	{
		uint8_t sb0[64];
		int fd = open("one.sfs", O_RDWR);

		CHECK(fd >= 0);
		CHECK(pread(fd, sb0, sizeof sb0, 0) == (ssize_t)sizeof sb0);
		CHECK(pwrite(fd, "X", 1, (off_t)le32(sb0 + 28) * 4096 + 100) == 1);   /* fat_start */
		CHECK(close(fd) == 0);
		EXPECT(1, "ls one.sfs");
		ERR_HAS("sfs: one.sfs: bad checksum in FAT block 0; run sfs fsck -y one.sfs to repair it");
		EXPECT(1, "fsck -y one.sfs");
		EXPECT(0, "ls one.sfs");
	}
}

int main(void)
{
	const char *bin = getenv("UR_BIN");
	size_t blen = (1u << 20) + 123;
	uint8_t *data;
	struct stat sb;
	uint64_t x = 88172645463325252ull;
	char line[256];

	if (!bin) {
		printf("UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	snprintf(sfs_bin, sizeof sfs_bin, "%s/sfs", bin);
	if (access(sfs_bin, X_OK) != 0)
		FAIL("%s: %s (make all builds it)", sfs_bin, strerror(errno));
	/* a binary file: random bytes, a run of zeros, every byte value */
	data = malloc(blen);
	CHECK(data);
	for (size_t i = 0; i < blen; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		data[i] = (uint8_t)x;
	}
	memset(data + 5000, 0, 9000);
	for (int i = 0; i < 256; i++)
		data[20000 + i] = (uint8_t)i;
	write_file("bin.dat", data, blen);

	/* help, version, usage errors */
	EXPECT(0, "--help");
	OUT_HAS("usage");
	OUT_HAS("fsck");
	EXPECT(0, "--version");
	OUT_HAS("sfs");
	EXPECT(0, "mkfs --help");
	OUT_HAS("--size");
	EXPECT(0, "fsck --help");
	OUT_HAS("-y");
	EXPECT(2, "%s", "");
	EXPECT(2, "frobnicate x.sfs");
	ERR_HAS("frobnicate");
	EXPECT(2, "put");
	ERR_HAS("usage");
	EXPECT(2, "ls -Z t.sfs");
	EXPECT(2, "mkfs --size 12Q t.sfs");
	CHECK(access("t.sfs", F_OK) != 0);

	/* mkfs */
	EXPECT(0, "mkfs --size 16M t.sfs");
	CHECK(stat("t.sfs", &sb) == 0);
	CHECK_EQ(sb.st_size, 16 << 20);
	EXPECT(1, "mkfs --size 16M t.sfs");         /* exists: refuses */
	ERR_HAS("t.sfs");
	EXPECT(0, "mkfs --force --size 16M t.sfs");
	EXPECT(0, "fsck t.sfs");
	OUT_HAS("clean");

	/* mkfs is careful with what it creates: owner-only unless
	 * --mode says otherwise, no symbolic link followed, a file that is not
	 * an image kept unless --force. */
	umask(022);
	CHECK_EQ(sb.st_mode & 0777, 0600);
	EXPECT(0, "mkfs --size 1M --mode 0640 shared.sfs");
	CHECK(stat("shared.sfs", &sb) == 0);
	CHECK_EQ(sb.st_mode & 0777, 0640);
	/* the umask applies to --mode, as to open(2): no world-writable image
	 * by a slip */
	EXPECT(0, "mkfs --size 1M --mode 0777 open.sfs");
	CHECK(stat("open.sfs", &sb) == 0);
	CHECK_EQ(sb.st_mode & 0777, 0755);
	EXPECT(2, "mkfs --size 1M --mode 0999 bad.sfs");
	EXPECT(2, "mkfs --size 1M --mode 01777 bad.sfs");
	CHECK(access("bad.sfs", F_OK) != 0);
	CHECK(symlink("victim.sfs", "dangling.sfs") == 0);
	EXPECT(1, "mkfs --size 1M dangling.sfs");
	ERR_HAS("symbolic link");
	EXPECT(1, "mkfs --force --size 1M dangling.sfs");
	CHECK(access("victim.sfs", F_OK) != 0);
	write_file("notes.txt", "precious\n", 9);
	EXPECT(1, "mkfs --size 1M notes.txt");
	same_file("notes.txt", (const uint8_t *)"precious\n", 9);
	EXPECT(0, "mkfs --force --size 1M notes.txt");
	EXPECT(0, "fsck notes.txt");

	names_printed_safely();

	/* put / get */
	EXPECT(0, "put t.sfs bin.dat");
	EXPECT(0, "get t.sfs bin.dat copy.dat");
	same_file("copy.dat", data, blen);
	{
		int st = system("\"$UR_BIN/sfs\" get t.sfs bin.dat - > stdout.dat");

		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		same_file("stdout.dat", data, blen);
	}
	EXPECT(0, "put t.sfs - piped < bin.dat");
	EXPECT(0, "put t.sfs bin.dat other");
	CHECK(mkdir("sub", 0755) == 0);
	EXPECT(0, "get t.sfs piped sub/piped.dat");
	same_file("sub/piped.dat", data, blen);
	{
		int st = system("cd sub && \"$UR_BIN/sfs\" get ../t.sfs other >/dev/null 2>&1");

		CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		same_file("sub/other", data, blen);
	}
	write_file("empty.dat", "", 0);
	EXPECT(0, "put t.sfs empty.dat");
	EXPECT(0, "get t.sfs empty.dat empty.out");
	same_file("empty.out", data, 0);
	/* put replaces: a shorter file over a longer one */
	write_file("short.dat", "short", 5);
	EXPECT(0, "put t.sfs short.dat other");
	EXPECT(0, "get t.sfs other other.out");
	same_file("other.out", (const uint8_t *)"short", 5);

	/* ls, ls -l, stat */
	EXPECT(0, "ls t.sfs");
	if (strcmp(out, "bin.dat\nempty.dat\nother\npiped\n"))
		FAIL("ls printed:\n%s", out);
	EXPECT(0, "ls -l t.sfs");
	snprintf(line, sizeof line, "total: 4 files, %zu bytes", 2 * blen + 5);
	OUT_HAS(line);
	{
		/* each line: size blocks date time name */
		char *s = out;
		int rows = 0;

		while (*s && strncmp(s, "total:", 6)) {
			unsigned long long size, blocks;
			char name[80];

			if (sscanf(s, "%llu %llu %*s %*s %79s", &size, &blocks, name) != 3)
				FAIL("ls -l line unreadable: %.80s", s);
			if (!strcmp(name, "bin.dat") || !strcmp(name, "piped")) {
				CHECK_EQ(size, blen);
				CHECK_EQ(blocks, (blen + 4095) / 4096);
			} else if (!strcmp(name, "other")) {
				CHECK_EQ(size, 5);
				CHECK_EQ(blocks, 1);
			} else if (!strcmp(name, "empty.dat")) {
				CHECK_EQ(size, 0);
				CHECK_EQ(blocks, 0);
			} else {
				FAIL("ls -l: unexpected name %s", name);
			}
			rows++;
			s = strchr(s, '\n');
			CHECK(s);
			s++;
		}
		CHECK_EQ(rows, 4);
	}
	EXPECT(0, "stat t.sfs bin.dat");
	snprintf(line, sizeof line, "size:   %zu", blen);
	OUT_HAS(line);
	EXPECT(0, "stat t.sfs");
	OUT_HAS("files:        4 of");
	OUT_HAS("block size:   4096");
	OUT_HAS("total blocks: 4095");   /* 16 MiB: the last block is the backup superblock */

	/* rm */
	EXPECT(0, "rm t.sfs other piped");
	EXPECT(0, "ls t.sfs");
	if (strcmp(out, "bin.dat\nempty.dat\n"))
		FAIL("ls after rm printed:\n%s", out);
	EXPECT(1, "rm t.sfs nothere");
	ERR_HAS("sfs: rm: nothere: No such file or directory");
	EXPECT(0, "rm -f t.sfs nothere");

	/* errors a user meets */
	EXPECT(1, "ls missing.sfs");
	ERR_HAS("missing.sfs");
	{
		static char text[2 << 20];

		memset(text, 'x', sizeof text);
		write_file("notimg.sfs", text, sizeof text);
	}
	EXPECT(1, "ls notimg.sfs");
	ERR_HAS("sfs: notimg.sfs: not a SimpleFS image");
	EXPECT(8, "fsck notimg.sfs");
	ERR_HAS("not a SimpleFS image");
	EXPECT(8, "fsck missing.sfs");
	EXPECT(1, "get t.sfs nofile");
	ERR_HAS("sfs: get: nofile: No such file or directory");
	CHECK(access("nofile", F_OK) != 0);          /* no empty file left behind */
	EXPECT(1, "put t.sfs nohost.dat");
	ERR_HAS("nohost.dat: No such file or directory");
	EXPECT(1, "stat t.sfs nofile");
	EXPECT(1, "get t.sfs bin.dat t.sfs");       /* never truncates the image */
	ERR_HAS("image itself");
	CHECK(stat("t.sfs", &sb) == 0 && sb.st_size == 16 << 20);
	{
		char longname[100];

		memset(longname, 'n', 70);
		longname[70] = '\0';
		EXPECT(2, "put t.sfs bin.dat %s", longname);   /* a usage error, before the image */
		ERR_HAS("NAME is 70 bytes long (a file name is at most 63)");
	}

	/* fsck exit codes on a leaked block */
	EXPECT(0, "fsck -n t.sfs");
	leak_last_block("t.sfs");
	EXPECT(4, "fsck -n t.sfs");
	EXPECT(4, "fsck t.sfs");                     /* -n is the default */
	EXPECT(1, "fsck -y t.sfs");
	EXPECT(0, "fsck -n t.sfs");
	EXPECT(0, "get t.sfs bin.dat after.dat");
	same_file("after.dat", data, blen);

	/* in use: another process holds the image */
	{
		int p[2], st;
		char c;
		pid_t pid;

		CHECK(pipe(p) == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			struct sfs *fs;
			char e[256];

			close(p[0]);
			c = sfs_mount("t.sfs", 0, &fs, e, sizeof e) < 0 ? 'e' : 'm';
			if (write(p[1], &c, 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		close(p[1]);
		CHECK_EQ(read(p[0], &c, 1), 1);
		CHECK_EQ(c, 'm');
		snprintf(line, sizeof line, "sfs: t.sfs: in use by pid %d", (int)pid);
		EXPECT(1, "ls t.sfs");
		ERR_HAS(line);
		EXPECT(1, "put t.sfs bin.dat again");
		ERR_HAS(line);
		EXPECT(1, "mkfs --force --size 16M t.sfs");
		ERR_HAS("in use by pid");
		EXPECT(8, "fsck -y t.sfs");
		ERR_HAS("in use by pid");
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &st, 0) == pid);
		close(p[0]);
		EXPECT(0, "ls t.sfs");
	}

	/* put streams in constant memory: 48 MiB in, peak RSS far below */
	{
		static uint8_t chunk[1 << 20];
		FILE *f = fopen("big.dat", "wb");
		long rss;

		CHECK(f);
		for (int i = 0; i < 48; i++) {
			memset(chunk, i + 1, sizeof chunk);
			CHECK(fwrite(chunk, 1, sizeof chunk, f) == sizeof chunk);
		}
		CHECK(fclose(f) == 0);
		EXPECT(0, "mkfs --size 128M big.sfs");
		rss = put_peak_rss("big.sfs", "big.dat", "big");
		/* Under valgrind the child's peak includes valgrind's own, from
		 * before the exec: nothing to learn there. */
		if (rss > 24 * 1024 && !(getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload")))
			FAIL("sfs put of 48 MiB peaked at %ld KiB of memory", rss);
		EXPECT(0, "stat big.sfs big");
		OUT_HAS("size:   50331648");
		EXPECT(0, "get big.sfs big - | cmp -s - big.dat");
		EXPECT(0, "fsck big.sfs");
		printf("put of 48 MiB: peak RSS %ld KiB\n", rss);
		/* too big for the image: a clear error, the image stays clean */
		EXPECT(0, "mkfs --size 1M small.sfs");
		EXPECT(1, "put small.sfs big.dat");
		ERR_HAS("sfs: put: big.dat: the image's data area is full (");
		EXPECT(0, "fsck small.sfs");
	}
	bad_input();
	free(data);
	printf("ok\n");
	return 0;
}
