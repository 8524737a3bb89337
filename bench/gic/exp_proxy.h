/*
 * bench/gic/exp_proxy.h - `gic proxy`: mini-proxy message rate and
 * latency against workers T, rings R and batch B (paper Figure 7, Tables 9
 * and 10), cold or warm worker cores.
 *
 * Every combination of the -T, -R and -B lists (R >= T; others skipped
 * with a note) and each protocol selected is one configuration. Rate: one
 * producer per ring, -n requests per ring, 8-byte inline descriptors.
 * Latency: one request at a time on ring 0, put+completion (enqueue, then
 * wait for the completion counter).
 *
 * Result names: "<protocol> T<t>/R<r>/B<b>" (e.g. "tuned T1/R32/B16");
 * metric "message rate" (M msg/s) or "put+completion" (us), with " warm"
 * appended to the metric when --warm > 0 and " cold" when --idle > 0 (the
 * paper's cold/warm columns; neither: the worker state was not set).
 * Params carry inflight=K (chains per worker in flight; before --inflight
 * existed a worker had one).
 */
#ifndef GIC_BENCH_EXP_PROXY_H
#define GIC_BENCH_EXP_PROXY_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GIC_PROXY_EXP_MAX_LIST = 8 };

/* Protocols (bits of proxy_state.protocols). */
enum { GIC_PROXY_EXP_BASELINE = 1u << 0, GIC_PROXY_EXP_TUNED = 1u << 1 };

/* Metrics (bits of proxy_state.metrics). */
enum { GIC_PROXY_EXP_RATE = 1u << 0, GIC_PROXY_EXP_LAT = 1u << 1 };

typedef struct proxy_state {
	int nT, T[GIC_PROXY_EXP_MAX_LIST]; /* -T: workers (1..16), default 1 */
	int nR, R[GIC_PROXY_EXP_MAX_LIST]; /* -R: rings (1..32), default 32 */
	int nB, B[GIC_PROXY_EXP_MAX_LIST]; /* -B: batch (1..16), default 1,4,16 */
	unsigned protocols; /* --protocol baseline|tuned|both; default tuned */
	int counter_gpu;    /* --counter gpu (1): NIC ATOMIC_FA counter; host (0, default) */
	int warm_ms;        /* --warm MS: workers spin MS ms before measuring (the paper's
			     * warm: 20 s of load); 0 (default): none */
	int idle_ms;        /* --idle MS: workers idle MS ms before measuring (the paper's
			     * cold: 45 s idle); 0 (default): none; not with --warm */
	int inflight;       /* --inflight K: chains per worker in flight (1..32); 0: 8 */
	unsigned metrics;   /* --metric rate|lat|both; default both */
} proxy_state;

/* The flags of gic proxy (flags.h); its rows' params take counter,
 * warm_ms, idle_ms and inflight from it (gic_result_flag_params). */
extern const struct gic_flag_table gic_proxy_flags;

/* metric with " warm" (--warm), " cold" (--idle) or nothing appended; the
 * text lives until the calling thread's next call. */
const char *gic_proxy_exp_metric(const proxy_state *st, const char *metric);

/* GPU mode (bench/gic/gpu_proxy.cu): GPU producers. */
int gic_gpu_proxy(const gic_opts *o, const proxy_state *st, const gic_run_info *info,
		  gic_sink *sink);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_PROXY_H */
