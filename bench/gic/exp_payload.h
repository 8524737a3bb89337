/*
 * bench/gic/exp_payload.h - `gic payload`: pipelined goodput against
 * payload size, and the first size reaching 90% of a reference (Figure 8).
 *
 * For each size of -b..-e (factor -f), -n pointer writes of that size with
 * up to --window outstanding; goodput = bytes / time. The reference is the
 * goodput at --reference SIZE (default: the largest size run).
 *
 * Paths (--path, repeatable): gda, proxy (softnic) and nvshmem: NVSHMEM's
 * public API between two GPUs, PEs in processes of their own
 * (bench/gic/nvshmem_pe.h): -n nvshmem_putmem_nbi of each size from one
 * thread ("nvshmem") and nvshmemx_putmem_nbi_block from one CTA
 * ("nvshmem-block"), all outstanding, one nvshmem_quiet at the end (no
 * --window); PE 1 checks every destination byte after every size.
 *
 * The proxy path's shape is -T workers, -R rings with a producer each and
 * -B requests per doorbell (default T1/R1/B16; the paper's Figure 8 runs
 * four workers), in every proxy row's params as T=, R=, B=.
 *
 * GPU gda path with --qps N > 1: rows "gda qps=N size=<B>" (the same
 * metric); --reps gives each row that many samples (p50/p99/max).
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

/* Paths (indices; bit (1u << index) in payload_state.paths). */
enum { GIC_PAYLOAD_GDA = 0, GIC_PAYLOAD_PROXY = 1, GIC_PAYLOAD_NVSHMEM = 2 };

typedef struct payload_state {
	unsigned paths;   /* --path gda|proxy|nvshmem (repeatable): bits 1u << GIC_PAYLOAD_*;
			   * default gda */
	int path;         /* the path of this run: GIC_PAYLOAD_GDA or GIC_PAYLOAD_PROXY */
	int window;       /* --window N: outstanding writes (1..4096), default 64 */
	size_t reference; /* --reference SIZE: 0 (default): the largest size */
	int T, R, B;      /* --path proxy: -T workers, -R rings (one producer each: host
			   * mode one host thread round-robin over them, GPU mode a CTA
			   * each), -B requests per doorbell; defaults 1, 1, 16 */
	int qps;          /* --qps N: GPU gda path, N QPs with a poster CTA each (1..64;
			   * default 1); goodput = all QPs' bytes over the first post to
			   * the last completion */
	int reps;         /* --reps N: GPU gda path, runs per size, the samples of its
			   * row (1..100; default 1) */
	int engine_blocks, engine_warps; /* --engine-blocks/--engine-warps: the GPU
			   * engine's shape for the gda path (0: gpu_env's 4 x 4) */
} payload_state;

/* The flags of gic payload (flags.h); its rows' params take T, R, B (the
 * proxy path) and qps, reps (the GPU gda path) from it. */
extern const struct gic_flag_table gic_payload_flags;

/* GPU mode (bench/gic/gpu_payload.cu): st->path (the driver loops over
 * the paths). */
struct gic_pair;
/* --procs 2 in GPU mode: st's gda path (one path, at most 64 QPs) as this
 * PE of pair (gpu_pair.h): PE 0's posters copy into PE 1's region through
 * softnic's GPU peers, PE 1 checks every slot; a phase per size and one
 * for the first-size row. 0 or an errno. */
int gic_gpu_payload_pe(struct gic_pair *pair, const gic_opts *o, const payload_state *st);
int gic_gpu_payload(const gic_opts *o, const payload_state *st, const gic_run_info *info,
		    gic_sink *sink);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_PAYLOAD_H */
