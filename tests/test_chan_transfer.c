/* SPDX-License-Identifier: MIT */
/* Description: transfer_to / transfer_from between channels of every pair of
 * engines (psync, io_uring, ur; host to host uses copy_file_range, anything
 * with an image file copies through the channels): a range from the middle
 * of a 2.5 MiB file (more than one copy chunk) into a gap of the target, an
 * empty range, a range past the end (0 bytes), a range crossing the end (cut
 * at it), the whole file; the target is checked byte for byte (gaps zero), through
 * the channel and from outside it (host stdio, or the sfs library on the image). */
#include <unistd.h>
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
	free(src_data);
	free(model);
	free(got);
	return 0;
}
