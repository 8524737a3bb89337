/*
 * bench/gic/pattern.h - the benchmarks' one value generator and the
 * poisoning of destinations before a write: what gic's host modes
 * (host.h's hx_value), gic-demo and bench-cpu-engine derive every payload
 * from, so that each checked value is distinct and a write that never
 * lands cannot pass its check.
 */
#ifndef GIC_BENCH_PATTERN_H
#define GIC_BENCH_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* splitmix64's output function: a bijection of 64-bit values (distinct
 * inputs give distinct outputs) that spreads every input bit over the
 * whole word. Callers form the input (a counter plus 0x9e3779b97f4a7c15,
 * or their own fields) and keep their own streams apart. */
uint64_t gic_mix64(uint64_t z);

/* Stores the complement of pat[0..len) into dst (a write that never lands
 * cannot pass a check against pat). */
void gic_poison(uint8_t *dst, const uint8_t *pat, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_PATTERN_H */
