/* SPDX-License-Identifier: MIT */
/* Description: the shell EXAMPLES of the man1, man7 and man8 pages do what
 * the pages say, run as a user would run them: every command line of the
 * .EX/.EE blocks under .SH EXAMPLES, taken from the page itself (roff escapes
 * \- \e \& undone, an unknown one fails; a trailing "  # comment" dropped),
 * runs with sh in a fresh directory of its page, with the build's tools first
 * on PATH under their installed names (sfs, cat_ur, noring, urfs-uring, and
 * urfs-bench for ./bench), the build's pkg-config file and library found as
 * installed ones would be (PKG_CONFIG_PATH, LD_LIBRARY_PATH). Each line's exit
 * status and output are checked for what its page says it does (table below):
 * cat_ur prints the files byte for byte, sfs fsck exits 0, urfs-bench prints
 * a result for each engine it names, noring's run skips the io_uring rows and
 * runs the ur rows, liburing programs under urfs-uring load the build's drop-in
 * (the loader's own report, LD_DEBUG) and run on its emulated ring.
 * A page's lines must be the table's, in order: a page with fewer, more or
 * other example lines, or with an EXAMPLES section the table does not know,
 * fails (an example renamed must be followed here). A line whose tool the host
 * lacks (plocate, qemu-img, cc, pkg-config, a file of /etc) is a counted skip
 * with the reason; the io_uring rows of urfs-bench are the io_uring parts (run
 * where the kernel's io_uring works, skipped rows checked where it does not).
 * Time limit: 600 s
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "examples.h"
#include "testutil.h"

/* One example line: its page, how it starts (the rest is the page's own), the
 * tools or files it needs (space separated; "/..." a file), the exit status it
 * must have, a check in sh run after it in the same directory (out.txt: its
 * standard output, err.txt: its standard error; $BIN the build, $SRC the
 * source tree, $IOU "io_uring" where the kernel's io_uring works, else
 * "io_uring(skipped)"; $BENCH_JOBS: urfs-bench's rows, see below), whether it loads the
 * drop-in (checked in the loader's report), and whether it has io_uring rows. */
struct example {
	const char *page, *start, *need;
	int status;
	const char *check;
	int dropin, iou;
};

/* $BENCH_JOBS (a script the test writes): urfs-bench run's jobs in out.txt,
 * "ENGINE*N" for each engine that ran N jobs and "ENGINE(skipped)*N" for
 * skipped ones, sorted, space separated. */
static const char bench_jobs[] =
	"#!/bin/sh\n"
	"awk '/^[a-z_]+: rw=/ { e = $1; sub(\":\", \"\", e); next }\n"
	"     e != \"\" && /^  (read|write|nop|mix): / { print e; e = \"\" }\n"
	"     e != \"\" && /^  skipped: / { print e \"(skipped)\"; e = \"\" }' out.txt |\n"
	"sort | uniq -c | awk '{ printf \"%s*%d \", $2, $1 }'\n";

static const struct example known[] = {
	{ "cat_ur.1", "sfs mkfs ", "", 0, NULL, 0, 0 },
	{ "cat_ur.1", "sfs put disk.sfs /etc/hostname", "/etc/hostname", 0, NULL, 0, 0 },
	{ "cat_ur.1", "cat_ur hostname", "/etc/hostname", 0, "cmp out.txt /etc/hostname", 0, 0 },
	{ "cat_ur.1", "sfs mkfs ", "", 0, NULL, 0, 0 },
	{ "cat_ur.1", "sfs put other.sfs /etc/hosts a.txt", "/etc/hosts", 0, NULL, 0, 0 },
	{ "cat_ur.1", "sfs put other.sfs /etc/services b.txt", "/etc/services", 0, NULL, 0, 0 },
	{ "cat_ur.1", "cat_ur -i other.sfs a.txt b.txt > both.txt", "/etc/hosts /etc/services", 0,
	  "cat /etc/hosts /etc/services | cmp - both.txt", 0, 0 },

	{ "noring.1", "noring urfs-bench run --engine ur,io_uring", "", 0,
	  "[ \"$($BENCH_JOBS)\" = \"io_uring(skipped)*1 ur*1 \" ]", 0, 0 },

	{ "sfs.1", "sfs mkfs ", "", 0, NULL, 0, 0 },
	{ "sfs.1", "sfs put my.sfs /etc/services", "/etc/services", 0, NULL, 0, 0 },
	{ "sfs.1", "SFS_IMAGE=my.sfs cat_ur services", "/etc/services", 0, "cmp out.txt /etc/services", 0, 0 },
	{ "sfs.1", "sfs ls -l my.sfs", "/etc/services", 0,
	  "grep -Eq \"(^|[^0-9])$(wc -c < /etc/services)[^0-9].*services$\" out.txt", 0, 0 },
	{ "sfs.1", "sfs fsck my.sfs", "", 0, NULL, 0, 0 },

	{ "urfs-bench.1", "urfs-bench run --engine ur,psync,io_uring --qd 1,16", "", 0,
	  "[ \"$($BENCH_JOBS)\" = \"$IOU*2 psync*2 ur*2 \" ]", 0, 1 },
	{ "urfs-bench.1", "urfs-bench run --engine ur --rw nop,read --interval 2ms,10ms", "", 0,
	  "[ \"$($BENCH_JOBS)\" = \"ur*4 \" ] && [ \"$(grep -c 'interval=.*ms' out.txt)\" = 4 ] && "
	  "[ \"$(grep -c '^    server cpu: ' out.txt)\" = 4 ]", 0, 0 },
	{ "urfs-bench.1", "urfs-bench run --engine psync,ur --pattern rand --clients 1,2,4", "", 0,
	  "[ \"$($BENCH_JOBS)\" = \"psync*3 ur*3 \" ] && [ \"$(grep -c 'rw=randread.* clients=4 ' out.txt)\" = 2 ]", 0, 0 },
	{ "urfs-bench.1", "urfs-bench sweep --quick ", "", 0,
	  "for t in T1 T2 T3; do grep -q \"^## $t: \" sweep.md || exit 1; done; "
	  "for e in sfs ur psync io_uring libaio posixaio dropin; do grep -q \"^| $e |\" sweep.md || exit 1; done; "
	  "[ \"$(head -c 1 sweep.json)\" = \"{\" ] && [ \"$(tail -c 2 sweep.json)\" = \"}\" ]", 0, 0 },
	{ "urfs-bench.1", "urfs-bench db --quick", "", 0,
	  "grep -q '^### Page writes' out.txt && grep -q '^### Random page reads' out.txt && "
	  "grep -q '| ur: channel batch ' out.txt && grep -q '| psync: channel batch ' out.txt && "
	  "if [ \"$IOU\" = io_uring ]; then grep -q '| io_uring: channel batch ' out.txt; "
	  "else grep -q '^engine io_uring: skipped: ' out.txt && ! grep -q '| io_uring: ' out.txt; fi", 0, 1 },

	{ "urfs-uring.1", "mkdir notes && echo ", "", 0, NULL, 0, 0 },
	{ "urfs-uring.1", "updatedb ", "updatedb plocate", 0, NULL, 0, 0 },
	{ "urfs-uring.1", "noring urfs-uring plocate -d plocate.db ", "updatedb plocate", 0,
	  "[ \"$(cat out.txt)\" = \"$PWD/notes/todo.txt\" ]", 1, 0 },
	{ "urfs-uring.1", "qemu-img create ", "qemu-img", 0, "[ \"$(stat -c %s disk.img)\" = 67108864 ]", 0, 0 },
	{ "urfs-uring.1", "urfs-uring --emulate qemu-img bench ", "qemu-img", 0,
	  "grep -q '^Run completed in ' out.txt && "
	  "noring qemu-img bench -f raw -i io_uring -c 1 disk.img > kernel.txt 2>&1; [ $? -ne 0 ]", 1, 0 },
	{ "urfs-uring.1", "noring urfs-uring --syscalls fio --name=r --ioengine=io_uring ", "fio", 0,
	  "grep -q 'err= 0' out.txt && [ \"$(stat -c %s data)\" = 8388608 ] && "
	  "noring fio --name=r --ioengine=io_uring --rw=randread --size=8m --filename=data > kernel.txt 2>&1; "
	  "[ $? -ne 0 ]", 1, 0 },

	{ "urfs-uring.7", "cc -o myprogram myprogram.c -luring", "cc", 0, "[ -x myprogram ]", 0, 0 },
	{ "urfs-uring.7", "noring urfs-uring ./myprogram", "cc", 0, NULL, 1, 0 },
	{ "urfs-uring.7", "urfs-uring --emulate ./myprogram", "cc", 0, NULL, 1, 0 },

	{ "urfs.7", "sfs mkfs ", "", 0, NULL, 0, 0 },
	{ "urfs.7", "sfs put disk.sfs /etc/services", "/etc/services", 0, NULL, 0, 0 },
	{ "urfs.7", "cat_ur services | head", "/etc/services", 0, "head /etc/services | cmp - out.txt", 0, 0 },
	{ "urfs.7", "cc -o myprog myprog.c $(pkg-config --cflags --libs libur_fs)", "cc pkg-config", 0,
	  "[ -x myprog ]", 0, 0 },
	{ "urfs.7", "./myprog", "cc pkg-config", 0, "[ \"$(cat out.txt)\" = \"user_data=1 res=6\" ]", 0, 0 },
	{ "urfs.7", "cat_ur hello.txt", "cc pkg-config", 0, "[ \"$(cat out.txt)\" = hello ]", 0, 0 },
};
#define NKNOWN (sizeof known / sizeof known[0])

/* A page with EXAMPLES: its lines and their rows of known[]. */
#define MAXPAGES 16
#define MAXLINES 32
struct page {
	char name[256];
	int n;
	char lines[MAXLINES][1024];
	const struct example *x;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct page *)a)->name, ((const struct page *)b)->name);
}

static const char *src;
static char bin[PATH_MAX], top[PATH_MAX];
static int have_iou, skips;
static char asan_rt[PATH_MAX];   /* a sanitizer build: the ASan runtime its drop-in links */
static char iou_why[256];

/* The command lines of page's EXAMPLES section (text: the page), escapes
 * undone, comments dropped, at most max; -1 when it has none. */
static int example_lines(const char *page, const char *text, char lines[][1024], int max)
{
	const char *s = strstr(text, "\n.SH EXAMPLES\n");
	if (!s)
		return -1;
	s += 13;
	const char *end = strstr(s, "\n.SH ");
	int n = 0, in = 0;
	for (const char *l = s; *l && (!end || l < end); l = strchr(l, '\n') + 1) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		if (len == 3 && !strncmp(l, ".EX", 3)) {
			in = 1;
		} else if (len == 3 && !strncmp(l, ".EE", 3)) {
			in = 0;
		} else if (in && len) {
			if (*l == '.' || *l == '\'')
				FAIL("%s: a request in an example: %.*s", page, (int)len, l);
			if (n == max)
				FAIL("%s: more than %d example lines", page, max);
			char *buf;
			size_t sz;
			FILE *f = open_memstream(&buf, &sz);
			CHECK(f);
			ex_unescape(l, len, f, page);
			CHECK(fclose(f) == 0);
			char *c = strstr(buf, "  #");
			if (c)
				*c = '\0';
			for (size_t k = strlen(buf); k && buf[k - 1] == ' '; k--)
				buf[k - 1] = '\0';
			if (strlen(buf) >= sizeof lines[0])
				FAIL("%s: an example line longer than %zu bytes", page, sizeof lines[0] - 1);
			snprintf(lines[n++], sizeof lines[0], "%s", buf);
			free(buf);
		}
		if (!e)
			break;
	}
	return n;
}

/* 1 when everything x->need names is here; else 0, the line a counted skip. */
static int needs_met(const struct example *x, const char *line)
{
	char need[256], cmd[PATH_MAX + 300];
	snprintf(need, sizeof need, "%s", x->need);
	for (char *sv, *w = strtok_r(need, " ", &sv); w; w = strtok_r(NULL, " ", &sv)) {
		int here;
		if (*w == '/') {
			here = access(w, R_OK) == 0;
		} else {
			snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", w);
			here = system(cmd) == 0;
		}
		if (!here) {
			char label[1200];
			snprintf(label, sizeof label, "%s: %.1024s", x->page, line);
			tu_part_skip(w, label, *w == '/' ? "no such file here" :
				     "not installed here (scripts/install-deps.sh installs it)");
			skips++;
			return 0;
		}
	}
	return 1;
}

/* Makes the files page's examples take as the user's own: myprogram.c (a
 * liburing program: tests/progs/uring_which.c) and myprog.c (the ur_* program
 * of ur_read(3)'s EXAMPLES). */
static void user_files(const char *page)
{
	char path[PATH_MAX + 64], cmd[2 * PATH_MAX + 64];
	if (!strcmp(page, "urfs-uring.7")) {
		snprintf(cmd, sizeof cmd, "cp '%s/tests/progs/uring_which.c' myprogram.c", src);
		CHECK(system(cmd) == 0);
	} else if (!strcmp(page, "urfs.7")) {
		snprintf(path, sizeof path, "%s/man/man3/ur_read.3", src);
		char *t = tu_slurp(path);
		CHECK(t);
		char *b = strstr(t, "\n.SH EXAMPLES\n.EX\n"), *e = b ? strstr(b, "\n.EE\n") : NULL;
		if (!b || !e || !strstr(b, "int main("))
			FAIL("ur_read(3) has no example program for urfs(7)'s myprog.c");
		b += 18;
		FILE *f = fopen("myprog.c", "w");
		CHECK(f);
		ex_unescape(b, (size_t)(e - b) + 1, f, "ur_read.3");
		CHECK(fclose(f) == 0);
		free(t);
	}
}

/* Runs the lines of one page in a fresh directory, each checked by its row. */
static void run_page(const char *page, char lines[][1024], int n, const struct example *x)
{
	char dir[2 * PATH_MAX], check[8192];
	snprintf(dir, sizeof dir, "%s/%s.d", top, page);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(chdir(dir) == 0);
	user_files(page);
	printf("== %s: %d example lines, in %s\n", page, n, dir);
	for (int i = 0; i < n; i++, x++) {
		if (!needs_met(x, lines[i]))
			continue;
		if (x->dropin) {
			CHECK(setenv("LD_DEBUG", "libs", 1) == 0);
			CHECK(setenv("LD_DEBUG_OUTPUT", "ld.debug", 1) == 0);
			if (*asan_rt) {   /* as scripts/dropin-env.sh: a sanitizer build's drop-in needs its runtime first */
				CHECK(setenv("LD_PRELOAD", asan_rt, 1) == 0);
				CHECK(setenv("ASAN_OPTIONS", "detect_leaks=0:handle_segv=0", 1) == 0);
			}
		}
		int st = ex_run(lines[i], "out.txt", "err.txt", 240);
		unsetenv("LD_DEBUG");
		unsetenv("LD_DEBUG_OUTPUT");
		if (x->dropin && *asan_rt) {
			unsetenv("LD_PRELOAD");
			unsetenv("ASAN_OPTIONS");
		}
		if (st != x->status)
			FAIL("%s: `%s` exits with %d, not %d", page, lines[i], st, x->status);
		if (x->check) {
			if (ex_run(x->check, "check.out", NULL, 60) != 0)
				FAIL("%s: `%s` does not do what the page says (check: %s)", page, lines[i], x->check);
		}
		if (x->dropin) {
			/* the loader's report of each process: the build's drop-in initialised */
			snprintf(check, sizeof check, "grep -l 'calling init: %s/uring/liburing.so.2$' ld.debug.* && "
				 "rm -f ld.debug.*", bin);
			if (ex_run(check, "check.out", NULL, 60) != 0)
				FAIL("%s: `%s` did not load the build's drop-in %s/uring/liburing.so.2", page, lines[i], bin);
			if (strstr(lines[i], "./myprogram") && !ex_which_emulated("out.txt", bin))
				FAIL("%s: `%s` did not run on the drop-in's emulated ring", page, lines[i]);
		}
		if (x->iou) {
			char label[1200];
			snprintf(label, sizeof label, "%.64s: %.1024s: the io_uring rows", page, lines[i]);
			if (have_iou) {
				tu_part_ran("io_uring", label);
			} else {
				tu_part_skip("io_uring", label, iou_why);
				skips++;
			}
		}
	}
	CHECK(chdir(top) == 0);
}

int main(void)
{
	const char *binenv = getenv("UR_BIN");
	char path[PATH_MAX + 64], env[3 * PATH_MAX + 64];
	src = getenv("UR_SRCDIR");
	if (!src || !binenv) {
		printf("UR_SRCDIR or UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	CHECK(realpath(binenv, bin));
	CHECK(getcwd(top, sizeof top));

	/* the user's PATH: the build's tools under their installed names first */
	CHECK(mkdir("bin", 0755) == 0);
	static const char *const tools[] = { "sfs", "cat_ur", "noring", "urfs-uring", "urfs-bench=bench", NULL };
	ex_link_tools(bin, "bin", tools);
	snprintf(path, sizeof path, "%s/libur_fs.so", bin);
	const char *san = tu_sanitize_cflags(path);
	if (*san) {   /* a sanitizer build's libraries need the runtime in the programs that load them */
		FILE *f = fopen("bin/cc", "w");
		CHECK(f);
		fprintf(f, "#!/bin/sh\nPATH=${PATH#*/bin:} exec cc %s \"$@\"\n", san);
		CHECK(fclose(f) == 0);
		CHECK(chmod("bin/cc", 0755) == 0);
		char cmd[PATH_MAX + 128];
		snprintf(cmd, sizeof cmd, "ldd '%s/uring/liburing.so.2' | awk '/libasan\\.so/ { print $3 }'", bin);
		FILE *p = popen(cmd, "r");
		CHECK(p);
		if (!fgets(asan_rt, sizeof asan_rt, p))
			FAIL("a sanitizer build whose drop-in links no ASan runtime");
		asan_rt[strcspn(asan_rt, "\n")] = '\0';
		CHECK(pclose(p) == 0);
	}
	snprintf(env, sizeof env, "%s/bin:%s", top, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	CHECK(setenv("PATH", env, 1) == 0);
	CHECK(setenv("PKG_CONFIG_PATH", bin, 1) == 0);   /* libur_fs-uninstalled.pc */
	CHECK(setenv("LD_LIBRARY_PATH", bin, 1) == 0);   /* libur_fs.so.1, as if installed */
	FILE *f = fopen("bench-jobs", "w");
	CHECK(f && fputs(bench_jobs, f) >= 0);
	CHECK(fclose(f) == 0);
	CHECK(chmod("bench-jobs", 0755) == 0);
	snprintf(env, sizeof env, "%s/bench-jobs", top);
	CHECK(setenv("BENCH_JOBS", env, 1) == 0);
	CHECK(setenv("BIN", bin, 1) == 0);
	CHECK(setenv("SRC", src, 1) == 0);
	unsetenv("URING_EMULATE");
	have_iou = tu_have_io_uring(iou_why, sizeof iou_why);
	CHECK(setenv("IOU", have_iou ? "io_uring" : "io_uring(skipped)", 1) == 0);

	/* every page of sections 1, 7 and 8: its example lines are the table's,
	 * all checked before any runs */
	static const char *const sections[] = { "man1", "man7", "man8" };
	static struct page pagev[MAXPAGES];
	int pages = 0, run = 0;
	size_t used = 0;
	for (size_t s = 0; s < 3; s++) {
		snprintf(path, sizeof path, "%s/man/%s", src, sections[s]);
		DIR *d = opendir(path);
		if (!d)
			FAIL("%s: %s", path, strerror(errno));
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			struct page *pg = &pagev[pages];
			char file[2 * PATH_MAX + 300];
			snprintf(file, sizeof file, "%s/%s", path, de->d_name);
			snprintf(pg->name, sizeof pg->name, "%s", de->d_name);
			char *text = tu_slurp(file);
			CHECK(text);
			int n = example_lines(pg->name, text, pg->lines, MAXLINES);
			free(text);
			size_t first = NKNOWN, k = 0;
			for (size_t i = 0; i < NKNOWN; i++)
				if (!strcmp(known[i].page, pg->name)) {
					if (first == NKNOWN)
						first = i;
					k++;
				}
			if (n < 0 && k)
				FAIL("%s has no EXAMPLES section, but the test knows %zu example lines of it", pg->name, k);
			if (n < 0)
				continue;
			if (!k)
				FAIL("%s has an EXAMPLES section the test does not know: add its lines and checks", pg->name);
			if ((size_t)n != k)
				FAIL("%s has %d example lines, the test knows %zu: follow the page", pg->name, n, k);
			for (int i = 0; i < n; i++)
				if (strncmp(pg->lines[i], known[first + i].start, strlen(known[first + i].start)))
					FAIL("%s: example line %d is `%s`, the test knows one starting `%s`: follow the page",
					     pg->name, i + 1, pg->lines[i], known[first + i].start);
			pg->n = n;
			pg->x = &known[first];
			used += k;
			if (++pages == MAXPAGES)
				FAIL("more than %d pages with EXAMPLES in sections 1, 7 and 8", MAXPAGES - 1);
		}
		closedir(d);
	}
	if (used != NKNOWN)
		FAIL("the test knows %zu example lines, the pages have %zu of them: a page is gone or renamed",
		     NKNOWN, used);
	qsort(pagev, (size_t)pages, sizeof pagev[0], by_name);
	for (int i = 0; i < pages; i++) {
		run_page(pagev[i].name, pagev[i].lines, pagev[i].n, pagev[i].x);
		run += pagev[i].n;
	}
	printf("SUMMARY: %d pages, %d example lines, %d counted skips\n", pages, run, skips);
	return 0;
}
