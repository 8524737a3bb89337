/*
 * bench/gic/exp_rate.h - `gic rate`: message rate against threads, QPs,
 * SMs, WQEs per doorbell and publication mode (paper Table 5, Figure 3b).
 *
 * A run is a list of rows; each row is a configuration: `threads` posting
 * threads in all, spread over `sms` CTAs (host: `threads` host threads),
 * onto `qps` QPs (thread i uses QP i % qps), `batch` WQEs per doorbell,
 * publication `mode`, inline or pointer payloads of `size` bytes. --row
 * NAME picks Table 5 rows by their short names (gic_rate_rows below);
 * without --row, one row comes from the flags (-t, --qps, -c, --batch,
 * --mode, --payload, --doorbell, -b).
 *
 * Result names: the row's name (a Table 5 short name, or "custom"); metric
 * "message rate", unit "M msg/s"; params carry every field of the row.
 */
#ifndef GIC_BENCH_EXP_RATE_H
#define GIC_BENCH_EXP_RATE_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Publication modes. */
enum {
	GIC_RATE_OWN = 0,     /* each thread owns its QP (exclusive calls) */
	GIC_RATE_LOCK = 1,    /* threads share a QP under one lock per WQE */
	GIC_RATE_HANDOFF = 2, /* shared QP, per-thread slot hand-off */
	GIC_RATE_WARP = 3,    /* shared QP, warp-cooperative (GPU only) */
	GIC_RATE_NVSHMEM = 4, /* NVSHMEM's public API, PEs in processes of their own
			       * (nvshmem_pe.h); --row nvshmem-* only */
	GIC_RATE_GIN = 5,     /* NCCL GIN put + flush, PEs in processes of their own
			       * (nccl_pe.h); --row gin-* only */
	GIC_RATE_CTA = 6,     /* warp-cooperative, one QP per CTA (QP = CTA % qps;
			       * Table 5's footnote: as NVSHMEM does; GPU only) */
	GIC_RATE_RR = 7,      /* each thread owns qps / threads QPs and posts
			       * round-robin over them, --batch WQEs and one
			       * doorbell per QP per turn */
	GIC_RATE_CASLOCK = 8, /* as lock, under the compare-and-swap lock (test,
			       * CAS, position loads: the previous lock row) */
};

enum { GIC_RATE_MAX_ROWS = 48 };

typedef struct rate_row {
	char name[32];  /* "t1-q1-b1", ..., or "custom" */
	int threads;    /* posting threads in all (1..65536) */
	int qps;        /* QPs (1..1024) */
	int sms;        /* CTAs (GPU) the threads are spread over (1..1024) */
	int batch;      /* WQEs per doorbell (1..256) */
	int mode;       /* GIC_RATE_* */
	int pointer;    /* 0: inline payload, 1: payload read from a registered source */
	size_t size;    /* payload bytes */
	int staged;     /* inline payloads on the GPU: 0 in registers (the paper's mini-gda;
			 * sizes other than 8 built for 12..512, see gpu_rate.cu), 1 loaded
			 * from a staging buffer in GPU memory at each post (payload in memory) */
	int log_bb;     /* GPU: log2 of each QP's ring in BBs; 0: 2^14, which holds every
			 * write of a row (posting never waits); the -wrap rows take 2^10
			 * and post 16 rings' worth per thread (reclaimed from CQEs while
			 * posting, the paper's method), reporting the rate to the last
			 * CQE as "message rate" and the GPU side as "message rate
			 * posting only" */
	int host_rung;  /* 0, the poster rings its doorbells; 1, one pinned host thread
			 * rings (bench/gic/hostdb.h; the paper's "GPU submission is not
			 * needed for peak rate"): mode own's posters write WQEs and the
			 * doorbell record and publish their position; modes warp and cta
			 * (GPU only; on the host they run as handoff, poster-rung) store
			 * their doorbells to a word the host thread forwards. Params
			 * doorbell=host-rung, else doorbell=poster */
} rate_row;

typedef struct rate_state {
	int nrows;
	rate_row rows[GIC_RATE_MAX_ROWS];
} rate_state;

/* The Table 5 rows, by short name:
 *   t1-q1-b1, t1-q1-b16, t32-q1-lock, t256-q1-handoff, t32-q1-warp,
 *   t256-q1-warp, t16-q16-s16-b1, t16-q16-s16-b16, t32-q32-s1-b16,
 *   t64-q64-s1-b16, t64-q64-s64-b16, t16-q16-s16-b16-hostdb (as
 *   t16-q16-s16-b16 with host-rung doorbells), t4096-q16-s16-cta and its
 *   host-rung t4096-q16-s16-cta-hostdb, the rr, caslock and -wrap rows
 * (8-byte inline writes). *n receives the count. The NVSHMEM rows
 * (mode GIC_RATE_NVSHMEM: -n nvshmem_putmem_nbi of 8 B per thread to its
 * own slots, then nvshmem_quiet; result names "nvshmem t1", ...) are
 * separate: --row nvshmem-t1, nvshmem-t32, nvshmem-t256, nvshmem-t4096-c16
 * (4096 threads over 16 CTAs), or nvshmem for all four; never in --row all
 * (they need two GPUs). Likewise the NCCL GIN rows (mode GIC_RATE_GIN: -n
 * ncclGin puts of 8 B per thread, then flush; CTA b on GIN context b;
 * result names "gin t1", ...): --row gin-t1, gin-t32, gin-t256,
 * gin-t4096-c16, or gin for all four. */
const rate_row *gic_rate_rows(int *n);

/* "own", "lock", "handoff", "warp", "nvshmem", "gin", "cta", "rr",
 * "caslock"; NULL for a bad mode. */
const char *gic_rate_mode_name(int mode);

/* The row's payload as its params say it: "pointer", "inline" (GPU: in
 * registers) or "inline-staged" (GPU: loaded from GPU memory). */
const char *gic_rate_payload_name(const rate_row *r);

/* The row's doorbell mode as its params say it: "poster" (the posting
 * thread rings) or "host-rung" (one host thread rings; hostdb.h). */
const char *gic_rate_doorbell_name(const rate_row *r);

/* GPU mode (bench/gic/gpu_rate.cu): one result per row. */
struct gic_pair;
enum { GIC_RATE_GPU_PAIR_MAX_QPS = 64 }; /* at most gpu_pair.h's GPU_PAIR_MAX_QPS */
/* --procs 2 in GPU mode: row r (resolved; gic_rate_gpu_pair_ok) as this PE
 * of pair (gpu_pair.h): PE 0 posts into PE 1's region through softnic's
 * GPU peers, PE 1 checks every payload; a phase. 0 or an errno. */
int gic_gpu_rate_pe(struct gic_pair *pair, const gic_opts *o, const rate_row *r);
/* 1 when --procs 2 in GPU mode runs row r (resolved), else 0 after a
 * message saying why. */
int gic_rate_gpu_pair_ok(const rate_row *r);
int gic_gpu_rate(const gic_opts *o, const rate_state *st, const gic_run_info *info,
		 gic_sink *sink);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_RATE_H */
