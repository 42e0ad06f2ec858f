/* SPDX-License-Identifier: MIT */
/* Description: the memory devices of include/sfs.h (sfs_memdev_new, sfs_faultdev_new), which
 * the tests and the fuzzer open thousands of times, give back all their memory at close: 200
 * devices of 4 MiB each opened, written and closed, the heap that malloc counts in use
 * (mallinfo2: arena and mmapped chunks) grows by less than one device. Where the allocator does
 * not count (a sanitizer's, whose leak check covers this then), that part is a counted skip. */
#include "testutil.h"
#include <malloc.h>

#define DEV_SIZE (4u << 20)

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

static void cycle(int fault)
{
	struct sfs_dev *d = fault ? sfs_faultdev_new(DEV_SIZE) : sfs_memdev_new("abc", 3, DEV_SIZE);
	CHECK(d != NULL);
	CHECK_EQ(d->size, DEV_SIZE);
	static char page[4096];
	memset(page, 0x5a, sizeof(page));
	CHECK_EQ(d->pwrite(d, page, sizeof(page), DEV_SIZE - sizeof(page)), 0);
	CHECK_EQ(d->sync(d), 0);
	d->close(d);
}

/* The probe, independent of the devices: does mallinfo2 see a 1 MiB allocation? */
static int heap_counts(void)
{
	size_t a = heap_in_use();
	void *volatile p = malloc(1u << 20);
	CHECK(p != NULL);
	size_t b = heap_in_use();
	free(p);
	return b >= a + (1u << 20);
}

int main(void)
{
	if (!heap_counts()) {
		tu_part_skip("mallinfo2", "the heap after 200 devices",
			     "mallinfo2 does not count a 1 MiB malloc (a sanitizer's allocator: its leak check covers this)");
		return 0;
	}
	cycle(0);
	cycle(1);
	size_t before = heap_in_use();
	for (int i = 0; i < 200; i++)
		cycle(i % 2);
	size_t after = heap_in_use();
	if (after > before + DEV_SIZE)
		FAIL("200 devices opened and closed: the heap grew by %zu bytes", after - before);
	printf("200 devices of %u bytes opened and closed: heap in use %zu -> %zu bytes\n", DEV_SIZE,
	       before, after);
	return 0;
}
