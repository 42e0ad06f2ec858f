/* SPDX-License-Identifier: MIT */
/*
 * crc32c.c - CRC-32C (Castagnoli) for SimpleFS metadata checksums, and the
 * seal/check of the 8-byte trailer every metadata block carries.
 *
 * Uses the SSE4.2 crc32 instruction when the CPU has it, else a slicing-by-8
 * table. Both give the same result (standard CRC-32C: init ~0, final ~0).
 * Must never allocate or print.
 */
#include <pthread.h>
#include "sfs_int.h"

static uint32_t table[8][256];
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int have_hw;

static void init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
#if defined(__x86_64__)
	__builtin_cpu_init();
	have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		v ^= crc;
		crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^
		      table[5][(v >> 16) & 0xff] ^ table[4][(v >> 24) & 0xff] ^
		      table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
		      table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

uint32_t sfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&once, init);
	crc = ~crc;
#if defined(__x86_64__)
	if (have_hw)
		return ~crc_hw(crc, buf, len);
#endif
	return ~crc_sw(crc, buf, len);
}

void sfs_block_seal(void *blk, uint32_t home)
{
	unsigned char *b = blk;
	memcpy(b + TRAILER_OFF, &home, 4);
	uint32_t crc = sfs_crc32c(0, b, BS - 4);
	memcpy(b + BS - 4, &crc, 4);
}

int sfs_block_ok(const void *blk, uint32_t home)
{
	const unsigned char *b = blk;
	uint32_t h, crc;
	memcpy(&h, b + TRAILER_OFF, 4);
	memcpy(&crc, b + BS - 4, 4);
	return h == home && crc == sfs_crc32c(0, b, BS - 4);
}
