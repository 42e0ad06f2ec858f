/* SPDX-License-Identifier: MIT */
/* Description: urfs_queue_init_params says why it refused, in errmsg, for
 * each mistake a caller can make before a server is involved:
 * SQ entries out of range, a CQ smaller than the SQ or over the limit, a
 * staging or buffer area over 1 TiB, and a server program that is not there,
 * named by urfs_params.server or $UR_SERVER (the path it tried and who named
 * it); and the server's reasons name the image they are about (a missing
 * image, a file that is not one). Each answer is the errno it should be,
 * and nothing is left open (the descriptors after equal those before).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ur_fs.h>
#include "testutil.h"

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* init with p (errmsg filled in), expecting err and an errmsg holding want */
static void refused(unsigned entries, struct urfs_params *p, int err, const char *want)
{
	struct urfs_ring ring;
	int before = open_fds();
	int r = urfs_queue_init_params(entries, &ring, p);

	printf("entries %u: %d, errmsg \"%s\"\n", entries, r, p->errmsg);
	CHECK_EQ(r, err);
	if (!strstr(p->errmsg, want))
		FAIL("errmsg \"%s\" lacks \"%s\"", p->errmsg, want);
	CHECK_EQ(open_fds(), before);
}

int main(void)
{
	struct urfs_params p;

	memset(&p, 0, sizeof p);
	refused(0, &p, -EINVAL, "0 SQ entries: 1 .. 32768");
	refused(32769, &p, -EINVAL, "32769 SQ entries: 1 .. 32768");
	p.cq_entries = 8;
	refused(16, &p, -EINVAL, "8 CQ entries: at least the SQ's 16, at most 32768");
	p.cq_entries = 40000;
	refused(16, &p, -EINVAL, "40000 CQ entries: at least the SQ's 16, at most 32768");
	p.cq_entries = 0;
	p.staging_size = (size_t)1 << 41;
	refused(16, &p, -EINVAL, "staging area of 2199023255552 bytes: at most 1 TiB");
	p.staging_size = 0;
	p.buf_area_size = ((size_t)1 << 40) + 1;
	refused(16, &p, -EINVAL, "buffer area of 1099511631872 bytes: at most 1 TiB");
	p.buf_area_size = 0;
	p.flags = URFS_SETUP_NOIMAGE;
	p.server = "/nonexistent/simplefs_server";
	refused(16, &p, -ENOENT, "simplefs_server not found: /nonexistent/simplefs_server "
		"(named by urfs_params.server) is not an executable file");
	p.server = NULL;
	const char *server = getenv("UR_SERVER");
	CHECK(setenv("UR_SERVER", "/nonexistent/urfs-server", 1) == 0);
	refused(16, &p, -ENOENT, "simplefs_server not found: /nonexistent/urfs-server (named by $UR_SERVER) "
		"is not an executable file");
	if (server)
		CHECK(setenv("UR_SERVER", server, 1) == 0);
	else
		CHECK(unsetenv("UR_SERVER") == 0);

	/* the server's reasons name the image they are about */
	memset(&p, 0, sizeof p);
	p.image = "missing.sfs";
	refused(16, &p, -ENOENT, "missing.sfs: No such file or directory");
	FILE *f = fopen("junk.sfs", "w");
	CHECK(f);
	for (int i = 0; i < 8192; i++)
		fputs("junk", f);
	CHECK(fclose(f) == 0);
	p.image = "junk.sfs";
	refused(16, &p, -EMEDIUMTYPE, "junk.sfs: not a SimpleFS image");
	printf("ok\n");
	return 0;
}
