/*
 * tests/fuzz/fuzz_input.h - a fuzzer's input read as a stream of bytes,
 * zeros once it runs out (fuzz_verbs, fuzz_devx).
 */
#ifndef GIC_FUZZ_INPUT_H
#define GIC_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct in {
	const uint8_t *p;
	size_t n;
} in;

/* The next `bytes` bytes (at most 4) as a big-endian number. */
static uint32_t take(in *s, int bytes)
{
	uint32_t v = 0;

	for (int i = 0; i < bytes; i++) {
		v = v << 8 | (s->n ? *s->p : 0);
		if (s->n) {
			s->p++;
			s->n--;
		}
	}
	return v;
}

#endif /* GIC_FUZZ_INPUT_H */
