/*
 * bench/gic/pattern.c - the value generator and poisoning (pattern.h).
 */
#include "pattern.h"

uint64_t gic_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void gic_poison(uint8_t *dst, const uint8_t *pat, size_t len)
{
	for (size_t i = 0; i < len; i++)
		dst[i] = (uint8_t)~pat[i];
}
