/* SPDX-License-Identifier: MIT */
/* Description: transfer_to / transfer_from between channels of every pair of
 * engines (psync, io_uring, ur; host to host uses copy_file_range, anything
 * with an image file copies through the channels): a range from the middle
 * of a 2.5 MiB file (more than one copy chunk) into a gap of the target, an
 * empty range, a range past the end (0 bytes), a range crossing the end (cut
 * at it), the whole file; the target is checked byte for byte (gaps zero), through
 * the channel and from outside it (host stdio, or the sfs library on the image).
 * Host to host with copy_file_range refused (a seccomp filter in a child): EXDEV,
 * EINVAL, ENOSYS, EOPNOTSUPP and EPERM fall back to copying (the bytes checked),
 * EIO is returned, and so is a read error of the fallback's copy (where no filter
 * can be installed, each is a skipped part). */
#include <stddef.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "test_chan_common.h"

#define SZ ((size_t)(5u << 19) + 123)   /* 2.5 MiB + a tail */
#define DSZ (SZ + 3 * 65536)

static unsigned char *src_data, *model, *got;

static void pair(const struct cfg *s, const struct cfg *d, unsigned k)
{
	struct cfg sc = *s, dc = *d;
	char sname[32], dname[32];
	struct urch *a, *b;
	int64_t n;
	snprintf(sname, sizeof(sname), "s%u%s", k, s->engine == URCH_UR ? "" : ".dat");
	snprintf(dname, sizeof(dname), "d%u%s", k, d->engine == URCH_UR ? "" : ".dat");
	sc.path = sname;
	dc.path = dname;
	CHECK(cfg_open(&sc, URCH_CREATE | URCH_TRUNC, 16, &a) == 0, "open src");
	CHECK(cfg_open(&dc, URCH_CREATE | URCH_TRUNC, 16, &b) == 0, "open dst");
	CHECK(urch_write_fully(a, src_data, SZ, 0) == (int64_t)SZ, "fill src");
	memset(model, 0, DSZ);
	size_t msz = 0;

	n = urch_transfer_to(a, 1000, 1500000, b, 3000);
	CHECK(n == 1500000, "%s->%s: middle range: %lld", s->label, d->label, (long long)n);
	memcpy(model + 3000, src_data + 1000, 1500000);
	msz = 3000 + 1500000;
	CHECK(urch_size(b) == (int64_t)msz, "%s->%s: size after middle", s->label, d->label);
	n = urch_transfer_to(a, 5, 0, b, 10);
	CHECK(n == 0, "%s->%s: empty range: %lld", s->label, d->label, (long long)n);
	n = urch_transfer_to(a, SZ + 10, 4096, b, 0);
	CHECK(n == 0, "%s->%s: past the end: %lld", s->label, d->label, (long long)n);
	n = urch_transfer_to(a, SZ, 4096, b, 0);
	CHECK(n == 0, "%s->%s: at the end: %lld", s->label, d->label, (long long)n);
	CHECK(urch_size(b) == (int64_t)msz, "%s->%s: size changed by empty transfers", s->label, d->label);
	n = urch_transfer_to(a, SZ - 777, 100000, b, 1600000);
	CHECK(n == 777, "%s->%s: crossing the end: %lld", s->label, d->label, (long long)n);
	memcpy(model + 1600000, src_data + SZ - 777, 777);
	msz = 1600000 + 777;
	n = urch_transfer_from(b, 3 * 65536, a, 0, SZ);
	CHECK(n == (int64_t)SZ, "%s->%s: whole file: %lld", s->label, d->label, (long long)n);
	memcpy(model + 3 * 65536, src_data, SZ);
	msz = DSZ;
	CHECK(urch_size(b) == (int64_t)msz, "%s->%s: final size %lld", s->label, d->label,
	      (long long)urch_size(b));
	memset(got, 0xee, DSZ);
	n = urch_read_fully(b, got, DSZ, 0);
	CHECK(n == (int64_t)DSZ, "%s->%s: read back %lld", s->label, d->label, (long long)n);
	for (size_t i = 0; i < DSZ; i++)
		CHECK(got[i] == model[i], "%s->%s: byte %zu is %u, want %u", s->label, d->label, i,
		      got[i], model[i]);
	CHECK(urch_transfer_to(a, (uint64_t)1 << 63, 1, b, 0) == -EINVAL, "bad position");
	urch_close(a);
	urch_close(b);
	/* and from outside the channel: host stdio, or the sfs library on the image */
	memset(got, 0xee, DSZ);
	n = outside_read(&dc, got, DSZ);
	CHECK(n == (int64_t)DSZ, "%s->%s: outside read %lld", s->label, d->label, (long long)n);
	CHECK(memcmp(got, model, DSZ) == 0, "%s->%s: outside read differs", s->label, d->label);
}

/* In a child: copy_file_range fails with cfr_err (a seccomp filter, as a
 * container's may), pread with rd_err when that is not 0. A psync-to-psync
 * transfer of 100000 bytes then gives want (a count, or -errno), with the
 * target's bytes checked when it is a count. */
static void refused(int cfr_err, int rd_err, int64_t want, unsigned k)
{
	pid_t pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		struct cfg sc = cfgs[0], dc = cfgs[0];
		char sname[32], dname[32];
		struct urch *a, *b;
		snprintf(sname, sizeof(sname), "rs%u.dat", k);
		snprintf(dname, sizeof(dname), "rd%u.dat", k);
		sc.path = sname;
		dc.path = dname;
		CHECK(cfg_open(&sc, URCH_CREATE | URCH_TRUNC, 16, &a) == 0, "open src");
		CHECK(cfg_open(&dc, URCH_CREATE | URCH_TRUNC, 16, &b) == 0, "open dst");
		CHECK(urch_write_fully(a, src_data, SZ, 0) == (int64_t)SZ, "fill src");
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_copy_file_range, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)cfr_err),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pread64, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, rd_err ? SECCOMP_RET_ERRNO | (unsigned)rd_err : SECCOMP_RET_ALLOW),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
			_exit(77);           /* no seccomp here (or under valgrind) */
		int64_t n = urch_transfer_to(a, 1000, 100000, b, 0);
		CHECK(n == want, "copy_file_range %s, pread %s: %lld, want %lld", strerror(cfr_err),
		      rd_err ? strerror(rd_err) : "works", (long long)n, (long long)want);
		if (want > 0)
			CHECK(urch_size(b) == want, "size after a refused copy_file_range");
		urch_close(a);
		urch_close(b);
		_exit(0);
	}
	int st;
	char label[96];
	snprintf(label, sizeof(label), "copy_file_range %s, pread %s", strerror(cfr_err),
		 rd_err ? strerror(rd_err) : "works");
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		tu_part_skip("seccomp", label, "no seccomp filter can be installed");
		return;
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child for %s: status 0x%x", label, st);
	tu_part_ran("seccomp", label);
	if (want > 0) {
		struct cfg dc = cfgs[0];
		char dname[32];
		snprintf(dname, sizeof(dname), "rd%u.dat", k);
		dc.path = dname;
		memset(got, 0xee, (size_t)want);
		CHECK(outside_read(&dc, got, (size_t)want) == want, "outside read after fallback");
		CHECK(memcmp(got, src_data + 1000, (size_t)want) == 0, "bytes after fallback");
	}
}

int main(void)
{
	const struct cfg *ok[NCFG];
	unsigned nok = 0, k = 0;
	src_data = malloc(SZ);
	model = malloc(DSZ);
	got = malloc(DSZ);
	CHECK(src_data && model && got, "malloc");
	fillpat(src_data, SZ, 0, 5);
	for (unsigned i = 0; i < NCFG; i++) {
		if (cfgs[i].flags & URCH_DIRECT)
			continue;
		if (!cfg_runnable(&cfgs[i]))
			continue;
		ok[nok++] = &cfgs[i];
	}
	for (unsigned i = 0; i < nok; i++)
		for (unsigned j = 0; j < nok; j++) {
			pair(ok[i], ok[j], k++);
			printf("ok %s -> %s\n", ok[i]->label, ok[j]->label);
		}
	/* copy_file_range refused (EXDEV, EINVAL, ENOSYS, EOPNOTSUPP, EPERM): the
	 * bytes are copied through the channels; another error is returned; an
	 * error of that copy's read is returned too */
	static const int fallback[] = { EXDEV, EINVAL, ENOSYS, EOPNOTSUPP, EPERM };
	for (unsigned i = 0; i < sizeof(fallback) / sizeof(fallback[0]); i++)
		refused(fallback[i], 0, 100000, i);
	refused(EIO, 0, -EIO, 10);
	refused(EXDEV, EIO, -EIO, 11);
	printf("ok copy_file_range refused\n");
	free(src_data);
	free(model);
	free(got);
	return 0;
}
