/* SPDX-License-Identifier: MIT */
/* Description: the manual is complete and clean. Every symbol libur_fs.so
 * exports (its dynamic symbol table, `nm -D`, and the global list of
 * src/lib/libur_fs.map) and every function or function-like macro the public
 * headers ur_fs.h, ur_chan.h and sfs.h declare has a section 3 page in
 * $UR_SRCDIR/man/man3 (a page of its own or a .so link to its family's page)
 * whose NAME and SYNOPSIS name it and which has SYNOPSIS, DESCRIPTION and
 * RETURN VALUE sections; every program of tools/ that is installed has a
 * section 1 page (bench as urfs-bench), simplefs_server a section 8 page, and
 * urfs(7) and urfs-uring(7) (the liburing drop-in) exist; and
 * `groff -ww -z -man` prints no warning for any page.
 *
 * Without groff the coverage checks still run and must pass; the rendering
 * check is then a skip (exit 77), never a silent pass.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#define MAXSYM 512
#define NAMELEN 96

static const char *src, *bin;
static char syms[MAXSYM][NAMELEN];
static unsigned nsyms;
static unsigned problems;

#define PROBLEM(...) do { fprintf(stderr, "  " __VA_ARGS__); fputc('\n', stderr); problems++; } while (0)

static void add_sym(const char *s)
{
	for (unsigned i = 0; i < nsyms; i++)
		if (!strcmp(syms[i], s))
			return;
	if (nsyms == MAXSYM)
		FAIL("more than %d symbols", MAXSYM);
	if (strlen(s) >= NAMELEN)
		FAIL("symbol name too long: %s", s);
	strcpy(syms[nsyms++], s);
}

/* A file of the source tree, which must exist. */
static char *slurp_src(const char *rel)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", src, rel);
	char *t = tu_slurp(path);
	if (!t)
		FAIL("%s: %s", path, strerror(errno));
	return t;
}

/* The global: list of the version script. */
static unsigned map_symbols(void)
{
	char *m = slurp_src("src/lib/libur_fs.map");
	char *g = strstr(m, "global:"), *l = strstr(m, "local:");
	if (!g || !l || l < g)
		FAIL("libur_fs.map: no global:/local: lists");
	*l = '\0';
	unsigned n = 0;
	for (char *t = strtok(g + 7, " \t\n;"); t; t = strtok(NULL, " \t\n;"))
		add_sym(t), n++;
	free(m);
	return n;
}

/* The dynamic symbols the built library defines (nm -D --defined-only). */
static unsigned elf_symbols(void)
{
	char cmd[4200], line[512];
	snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s/libur_fs.so' 2>&1", bin);
	FILE *p = popen(cmd, "r");
	if (!p)
		FAIL("popen nm: %s", strerror(errno));
	unsigned n = 0;
	while (fgets(line, sizeof line, p)) {
		char addr[64], type[8], name[256];
		if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
			continue;
		char *at = strchr(name, '@');
		if (at)
			*at = '\0';
		if (!strcmp(type, "A"))     /* the version node itself */
			continue;
		add_sym(name);
		n++;
	}
	int st = pclose(p);
	if (st != 0 || n == 0)
		FAIL("nm -D on %s/libur_fs.so: status %d, %u symbols", bin, st, n);
	return n;
}

/* Functions and function-like macros a header declares: on a line that starts
 * in column 0 (not a comment, not a continuation), the first identifier
 * directly followed by '('; for #define, a lower-case name directly followed
 * by '('. */
static unsigned header_functions(const char *hdr)
{
	char rel[256];
	snprintf(rel, sizeof rel, "include/%s", hdr);
	char *h = slurp_src(rel);
	/* Blank out comments, keeping line breaks. */
	for (char *c = h; *c; c++) {
		if (c[0] == '/' && c[1] == '*') {
			char *e = strstr(c + 2, "*/");
			e = e ? e + 2 : c + strlen(c);
			for (; c < e; c++)
				if (*c != '\n')
					*c = ' ';
			c--;
		} else if (c[0] == '/' && c[1] == '/') {
			for (; *c && *c != '\n'; c++)
				*c = ' ';
			c--;
		}
	}
	unsigned n = 0;
	for (char *line = strtok(h, "\n"); line; line = strtok(NULL, "\n")) {
		char *s = line;
		if (!strncmp(s, "#define ", 8)) {
			s += 8;
			char *e = s;
			while (isalnum((unsigned char)*e) || *e == '_')
				e++;
			if (*e != '(' || !islower((unsigned char)*s))
				continue;
			*e = '\0';
			add_sym(s);
			n++;
			continue;
		}
		if (!isalpha((unsigned char)*s) && *s != '_')
			continue;
		for (char *c = s; *c; c++) {
			if (*c != '(')
				continue;
			char *e = c;
			while (e > s && (isalnum((unsigned char)e[-1]) || e[-1] == '_'))
				e--;
			if (e == c)
				break;     /* "(" after a non-identifier: a pointer to function */
			*c = '\0';
			add_sym(e);
			n++;
			break;
		}
	}
	free(h);
	return n;
}

/* The text of man3/<name>.3 with one .so link followed; which file it is. */
static char *page_of(const char *name, char *file, size_t filelen)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/man/man3/%s.3", src, name);
	char *t = tu_slurp(path);
	if (!t)
		return NULL;
	snprintf(file, filelen, "man3/%s.3", name);
	if (!strncmp(t, ".so ", 4)) {
		char target[256];
		if (sscanf(t + 4, "%255s", target) != 1) {
			free(t);
			return NULL;
		}
		free(t);
		snprintf(path, sizeof path, "%s/man/%s", src, target);
		t = tu_slurp(path);
		if (!t || !strncmp(t, ".so ", 4)) {
			free(t);
			return NULL;
		}
		snprintf(file, filelen, "%s", target);
	}
	return t;
}

/* The text of section ".SH <sec>" up to the next .SH. */
static char *section(const char *page, const char *sec, char *out, size_t outlen)
{
	char hd[64];
	snprintf(hd, sizeof hd, "\n.SH %s\n", sec);
	const char *s = strstr(page, hd);
	if (!s)
		return NULL;
	s += strlen(hd);
	const char *e = strstr(s, "\n.SH ");
	size_t n = e ? (size_t)(e - s) : strlen(s);
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, s, n);
	out[n] = '\0';
	return out;
}

/* name appears as a whole word (roff may escape nothing in an identifier). */
static int has_word(const char *text, const char *name)
{
	size_t l = strlen(name);
	for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
		int before = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
		int after = !(isalnum((unsigned char)p[l]) || p[l] == '_');
		if (before && after)
			return 1;
	}
	return 0;
}

static void check_function_page(const char *name)
{
	char file[300];
	static char buf[65536];
	char *page = page_of(name, file, sizeof file);
	if (!page) {
		PROBLEM("%s: no page man/man3/%s.3 (or a .so link to a missing page)", name, name);
		return;
	}
	if (!section(page, "NAME", buf, sizeof buf) || !has_word(buf, name))
		PROBLEM("%s: %s does not name it in NAME", name, file);
	if (!section(page, "SYNOPSIS", buf, sizeof buf) || !has_word(buf, name))
		PROBLEM("%s: %s has no SYNOPSIS for it", name, file);
	if (!section(page, "DESCRIPTION", buf, sizeof buf))
		PROBLEM("%s: %s has no DESCRIPTION", name, file);
	if (!section(page, "RETURN VALUE", buf, sizeof buf))
		PROBLEM("%s: %s has no RETURN VALUE", name, file);
	free(page);
}

static void need_page(const char *rel)
{
	char path[4200];
	struct stat st;
	snprintf(path, sizeof path, "%s/man/%s", src, rel);
	if (stat(path, &st) != 0 || st.st_size == 0)
		PROBLEM("no page man/%s", rel);
}

/* Every installed program of tools/ has a section 1 page (test_ur_write_v2,
 * an example, and lockbench, a benchmark run in the tree, are not
 * installed; the Makefile's INSTALL_TOOLS). */
static unsigned program_pages(void)
{
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/tools", src);
	DIR *d = opendir(dir);
	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 3 || strcmp(de->d_name + l - 2, ".c") || !strcmp(de->d_name, "test_ur_write_v2.c") ||
		    !strcmp(de->d_name, "lockbench.c"))
			continue;
		char rel[300];
		snprintf(rel, sizeof rel, "man1/%.*s.1", (int)(l - 2), de->d_name);
		need_page(rel);
		n++;
	}
	closedir(d);
	need_page("man1/urfs-bench.1");
	need_page("man8/simplefs_server.8");
	need_page("man7/urfs.7");
	need_page("man7/urfs-uring.7");
	return n + 4;
}

/* groff -ww -z -man on every page (from man/, so .so links resolve): any
 * output is a warning. Returns the number of pages rendered. */
static unsigned render_all(void)
{
	unsigned n = 0;
	for (int s = 1; s <= 8; s++) {
		char dir[4200];
		snprintf(dir, sizeof dir, "%s/man/man%d", src, s);
		DIR *d = opendir(dir);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char cmd[8800], out[1024];
			snprintf(cmd, sizeof cmd, "cd '%s/man' && groff -ww -z -man 'man%d/%s' 2>&1; echo \"status $?\"",
				 src, s, de->d_name);
			FILE *p = popen(cmd, "r");
			if (!p)
				FAIL("popen groff: %s", strerror(errno));
			int clean = 0, lines = 0;
			while (fgets(out, sizeof out, p)) {
				if (!strcmp(out, "status 0\n"))
					clean = 1;
				else {
					lines++;
					fprintf(stderr, "  man%d/%s: %s", s, de->d_name, out);
				}
			}
			pclose(p);
			if (!clean || lines)
				problems++;
			n++;
		}
		closedir(d);
	}
	return n;
}

int main(void)
{
	src = getenv("UR_SRCDIR");
	bin = getenv("UR_BIN");
	if (!src || !bin) {
		printf("UR_SRCDIR or UR_BIN is not set (run through tests/run.sh)\n");
		return 77;
	}
	unsigned nmap = map_symbols();
	unsigned nelf = elf_symbols();
	unsigned nhdr = header_functions("ur_fs.h") + header_functions("ur_chan.h") +
			header_functions("sfs.h");
	printf("%u symbols in libur_fs.map, %u exported by libur_fs.so, %u functions in the headers: %u names\n",
	       nmap, nelf, nhdr, nsyms);
	/* The parsers found what is certainly there. */
	CHECK(nmap >= 50 && nelf >= 50 && nhdr >= 100);
	for (unsigned i = 0; i < nsyms; i++)
		check_function_page(syms[i]);
	unsigned nprog = program_pages();
	printf("%u program and overview pages checked\n", nprog);

	if (system("command -v groff >/dev/null 2>&1") != 0) {
		if (problems)
			FAIL("%u problems in the manual (above)", problems);
		printf("groff is not installed (apt-get install groff-base): pages not rendered\n");
		return 77;
	}
	unsigned npages = render_all();
	printf("%u pages rendered with groff -ww -z -man\n", npages);
	CHECK(npages >= nsyms);
	if (problems)
		FAIL("%u problems in the manual (above)", problems);
	return 0;
}
