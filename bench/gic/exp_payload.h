/*
 * bench/gic/exp_payload.h - `gic payload`: pipelined goodput against
 * payload size, and the first size reaching 90% of a reference (Figure 8).
 *
 * For each size of -b..-e (factor -f), -n pointer writes of that size with
 * up to --window outstanding; goodput = bytes / time. The reference is the
 * goodput at --reference SIZE (default: the largest size run).
 *
 * Result names: "<path> size=<B>" with metric "goodput" (GB/s), and one
 * "<path>" row with metric "first size at 90% of own max" (unit "B"): the
 * smallest size from which every larger size run keeps at least 90% of the
 * reference.
 */
#ifndef GIC_BENCH_EXP_PAYLOAD_H
#define GIC_BENCH_EXP_PAYLOAD_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GIC_PAYLOAD_GDA = 0, GIC_PAYLOAD_PROXY = 1 };

typedef struct payload_state {
	int path;         /* --path gda|proxy; default gda */
	int window;       /* --window N: outstanding writes (1..4096), default 64 */
	size_t reference; /* --reference SIZE: 0 (default): the largest size */
} payload_state;

/* GPU mode (bench/gic/gpu_payload.cu). */
int gic_gpu_payload(const gic_opts *o, const payload_state *st, const gic_run_info *info,
		    gic_sink *sink);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_PAYLOAD_H */
