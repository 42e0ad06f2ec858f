/* SPDX-License-Identifier: MIT */
/* Description: replays every file of the committed fuzz seed corpus
 * ($UR_SRCDIR/fuzz/corpus) through the fuzz target's steps (fuzz/fuzz_steps.h:
 * fsck, fsck -y, mount, read everything, write, truncate, unlink, sync,
 * unmount, fsck; as it is and with its checksums fixed up), so the corpus is
 * exercised in every normal and sanitizer run without libFuzzer. Seeds named valid-* must also be valid: they mount,
 * check clean, take every operation, and are clean afterwards. Every other
 * seed must at least not crash, and a repair must leave it clean.
 *
 * It must never pass on an empty or missing corpus.
 */
#include "../fuzz/fuzz_steps.h"

#include <dirent.h>
#include <stdlib.h>

#include "testutil.h"

static uint8_t data[FUZZ_DEV_SIZE];

int main(void)
{
	const char *src = getenv("UR_SRCDIR");
	char dir[4096], path[8192];
	struct dirent *de;
	unsigned n = 0, valid = 0;
	DIR *d;

	if (!src) {
		printf("UR_SRCDIR is not set (run through tests/run.sh)\n");
		return 77;
	}
	snprintf(dir, sizeof dir, "%s/fuzz/corpus", src);
	d = opendir(dir);
	if (!d)
		FAIL("%s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		struct fuzz_outcome o, sealed;
		FILE *f;
		size_t len;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		if (!f)
			FAIL("%s: %s", path, strerror(errno));
		len = fread(data, 1, sizeof data, f);
		fclose(f);
		if (fuzz_sfs_input(data, len, &o, &sealed) < 0)
			FAIL("%s: out of memory", de->d_name);
		if (sealed.repair_rc == 0 && (sealed.recheck_rc != 0 || sealed.recheck_errors != 0))
			FAIL("%s (checksums fixed up): after fsck -y a check found %u errors (rc %d)",
			     de->d_name, sealed.recheck_errors, sealed.recheck_rc);
		n++;
		printf("%-24s %7zu bytes: fsck %d (%u errors), mount %d, %d files, ops %d, after %u errors\n",
		       de->d_name, len, o.fsck_rc, o.fsck_errors, o.mount_rc, o.files, o.ops_rc,
		       o.after_errors);
		if (o.repair_rc == 0 && (o.recheck_rc != 0 || o.recheck_errors != 0))
			FAIL("%s: after fsck -y a check found %u errors (rc %d)", de->d_name,
			     o.recheck_errors, o.recheck_rc);
		if (strncmp(de->d_name, "valid-", 6))
			continue;
		valid++;
		if (o.fsck_rc != 0 || o.fsck_errors != 0)
			FAIL("%s: fsck %d, %u errors", de->d_name, o.fsck_rc, o.fsck_errors);
		if (o.repair_found != 0 || o.recheck_errors != 0)
			FAIL("%s: fsck -y found %u errors", de->d_name, o.repair_found);
		if (o.mount_rc != 0)
			FAIL("%s: mount failed: %s", de->d_name, strerror(-o.mount_rc));
		if (o.read_errors)
			FAIL("%s: %d reads failed", de->d_name, o.read_errors);
		if (o.ops_rc != 0)
			FAIL("%s: an operation failed: %s", de->d_name, strerror(-o.ops_rc));
		if (o.unmount_rc != 0)
			FAIL("%s: unmount: %s", de->d_name, strerror(-o.unmount_rc));
		if (o.after_rc != 0 || o.after_errors != 0)
			FAIL("%s: after the operations fsck returned %d with %u errors", de->d_name,
			     o.after_rc, o.after_errors);
	}
	closedir(d);
	if (valid < 8)          /* fuzz/make_corpus.sh makes 8: none may go missing */
		FAIL("only %u valid-* seeds in %s (of %u files)", valid, dir, n);
	printf("ok: %u seeds, %u valid\n", n, valid);
	return 0;
}
