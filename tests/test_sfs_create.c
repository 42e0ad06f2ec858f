/* SPDX-License-Identifier: MIT */
/* Description: how the library creates an image file:
 * sfs_format / sfs_format_ex and sfs_mount(SFS_MOUNT_CREATE). A new image is
 * 0600 whatever the umask lets through (or exactly the mode asked for); a
 * dangling symbolic link is never followed (its target is not created), nor
 * a link to an existing image (left as it was); an existing non-empty file
 * that is not an image is not clobbered unless SFS_FORMAT_FORCE; an empty
 * file and an existing image are formatted; bad flags or modes are -EINVAL. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"

#define MIB (1u << 20)

static unsigned mode_of(const char *p)
{
	struct stat st;
	if (lstat(p, &st) < 0)
		FAIL("stat %s: %s", p, strerror(errno));
	return st.st_mode & 07777;
}

static int exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

static void write_text(const char *p, const char *s)
{
	FILE *f = fopen(p, "w");
	CHECK(f && fputs(s, f) >= 0 && fclose(f) == 0);
}

static void same_text(const char *p, const char *s)
{
	char buf[256] = "";
	FILE *f = fopen(p, "r");
	CHECK(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (strcmp(buf, s))
		FAIL("%s was changed: '%s'", p, buf);
}

int main(void)
{
	umask(022);
	CHECK_EQ(sfs_format("new.sfs", MIB, 0), 0);
	CHECK_EQ(mode_of("new.sfs"), 0600);
	struct sfs *fs = MOUNT_OR_DIE("new.sfs");
	CHECK_EQ(sfs_unmount(fs), 0);

	umask(077);                            /* an explicit mode is exact */
	CHECK_EQ(sfs_format_ex("group.sfs", MIB, 0, 0, 0640), 0);
	CHECK_EQ(mode_of("group.sfs"), 0640);
	umask(022);

	/* A dangling symlink: not followed, its target not created. */
	CHECK(symlink("target.sfs", "dangling.sfs") == 0);
	int r = sfs_format("dangling.sfs", MIB, 0);
	CHECK(r == -ELOOP || r == -EEXIST);
	CHECK(!exists("target.sfs"));
	char err[256] = "";
	CHECK(sfs_mount("dangling.sfs", SFS_MOUNT_CREATE, &fs, err, sizeof(err)) < 0);
	CHECK(!exists("target.sfs"));

	/* A symlink to an existing image: not followed, the image unchanged. */
	CHECK(symlink("new.sfs", "link.sfs") == 0);
	fs = MOUNT_OR_DIE("new.sfs");
	int fd = sfs_file_open(fs, "keep", SFS_O_CREAT);
	CHECK(fd >= 0);
	CHECK_EQ(sfs_file_pwrite(fs, fd, "kept", 4, 0), 4);
	CHECK_EQ(sfs_file_close(fs, fd), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(sfs_format("link.sfs", MIB, 0), -ELOOP);
	fs = MOUNT_OR_DIE("new.sfs");
	struct sfs_stat st;
	CHECK_EQ(sfs_stat(fs, "keep", &st), 0);
	CHECK_EQ(st.size, 4);
	CHECK_EQ(sfs_unmount(fs), 0);

	/* A file that is not an image: kept, unless forced (its mode stays). */
	write_text("notes.txt", "precious\n");
	CHECK_EQ(sfs_format("notes.txt", MIB, 0), -EEXIST);
	same_text("notes.txt", "precious\n");
	CHECK_EQ(sfs_format_ex("notes.txt", MIB, 0, SFS_FORMAT_FORCE, 0600), 0);
	CHECK_EQ(mode_of("notes.txt"), 0644);
	fs = MOUNT_OR_DIE("notes.txt");
	CHECK_EQ(sfs_unmount(fs), 0);

	/* An empty file and an existing image are formatted without force. */
	write_text("empty.sfs", "");
	CHECK_EQ(sfs_format("empty.sfs", MIB, 0), 0);
	CHECK_EQ(sfs_format("new.sfs", MIB, 0), 0);
	fs = MOUNT_OR_DIE("new.sfs");
	CHECK_EQ(sfs_stat(fs, "keep", &st), -ENOENT);
	CHECK_EQ(sfs_unmount(fs), 0);

	/* The server's --create path (SFS_MOUNT_CREATE) makes a 0600 image. */
	CHECK_EQ(sfs_mount("fresh.sfs", SFS_MOUNT_CREATE, &fs, err, sizeof(err)), 0);
	CHECK_EQ(sfs_unmount(fs), 0);
	CHECK_EQ(mode_of("fresh.sfs"), 0600);

	CHECK_EQ(sfs_format_ex("bad.sfs", MIB, 0, 0x80, 0600), -EINVAL);
	CHECK_EQ(sfs_format_ex("bad.sfs", MIB, 0, 0, 010000), -EINVAL);
	CHECK(!exists("bad.sfs"));
	return 0;
}
