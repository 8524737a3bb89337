/*
 * bench/gic/exp_lat.h - `gic lat`: latency of one operation at a time
 * (paper Table 3, Table 4, Figure 3a, Figure 4).
 *
 * Metrics: issue (the posting call: WQE, doorbell record, doorbell; or the
 * proxy enqueue), put+completion (post, then wait for the CQE or the
 * proxy's counter), rtt (PE0 writes PE1, PE1 answers with a write, PE0
 * sees the answer). Paths: mini-gda inline / pointer (each with every
 * ordering variant selected; order none is the paper's "unordered" row),
 * mini-proxy baseline / tuned, and nvshmem (NVSHMEM's public API between
 * two GPUs, PEs in processes of their own: bench/gic/nvshmem_pe.h; only
 * when asked for, never in --path all; its rows include the per-QP
 * completion "nvshmem qp-quiet" where the transport has QPs). --qps LIST
 * configures that many QPs per PE, one run per count (QP 0 is used);
 * --scope LIST completes put+completion on the used QP only (qp), with a
 * PE-wide quiet polling every configured QP's CQ (all), or with a PE-wide
 * quiet reading every QP's progress words as NVSHMEM 3.8's IBGDA quiet does
 * (all-progress): Figure 4 / Table 7 is `--qps 1,2,4,8,16 --scope
 * qp,all,all-progress`. --sweep runs payload sizes -b..-e (factor -f) for
 * each path selected (gic_lat_sweep_sizes; without --path: gda-inline
 * alone), and then only those rows: gda-inline's inline sizes (Figure 3a;
 * default 8..512 B by 2), gda-pointer's and the proxy paths' pointer
 * writes (Figure 11: put+completion against payload size; default 8 B ..
 * 1 MiB by 2, --quick 8 B .. 64 KiB by 8). Pointer rows reuse
 * destination slots (GIC_LAT_SWEEP_REGION of them, at most 256); every
 * transfer's destination bytes are compared with its source right after
 * its completion, outside the timed span (on the GPU by a checker CTA),
 * and poisoned again (the complement) for the next write to that slot.
 *
 * Result names (also the keys of the paper table, bench/gic/paper.c):
 *   "<path> <order>"   for mini-gda paths, e.g. "gda-inline fence-gpu";
 *   "<path>"           for proxy paths, e.g. "proxy-tuned";
 *   "<path> <order> qps=<N> scope=<S>" (issue, put+completion) and
 *   "<path> <order> qps=<N>" (rtt, a control that completes nothing) for
 *   the mini-gda paths when more than one count or scope is selected, or
 *   any but --qps 1 --scope qp (gic_lat_scope_named; never --sweep rows,
 *   which take one count and one scope); params qps=, scope= (none for rtt);
 *   "gda-pointer <order> size=<B>", "proxy-baseline size=<B>" and
 *   "proxy-tuned size=<B>" (issue, put+completion) for --sweep rows of the
 *   pointer paths (Figure 11), params payload=pointer slots=<N>
 *   check=each (the proxies T=1 R=1 B=1);
 *   "<path> <order> size=<B>" for --sweep rows; on the GPU two per size:
 *   "gda-inline ..." with the payload in registers when the clock starts
 *   (gic_wqe_write_inline_regs, the paper's mini-gda; sizes 8 12 16 32 48
 *   64 128 256 512) and "gda-inline-staged ..." loading it from GPU memory
 *   inside the timed span (gic_wqe_write_inline); params payload=registers
 *   or payload=memory;
 *   "nvshmem put" (issue, put+completion) and "nvshmem p" (issue,
 *   put+completion, rtt) for the NVSHMEM path, transport "nvshmem-p2p"
 *   (or the NIC transport NVSHMEM was told to use); with issue or
 *   put+completion also "nvshmem qp-quiet" (issue, put+completion): a put
 *   on a QP of its own (nvshmemx_qp_create, nvshmemx_qp_uint64_put_nbi)
 *   completed for that QP alone (nvshmemx_qp_quiet), DeepEP's per-QP
 *   completion; only over a NIC transport that creates QPs (IBGDA, IBRC,
 *   ...): without one, and always over P2P, the row is skipped with one
 *   line saying why (nvshmem_pe.h);
 *   "gin put" (issue, put+completion) and "gin putValue" (issue,
 *   put+completion, rtt) for the NCCL GIN path, transport "nccl-gin-gdaki"
 *   or "nccl-gin-proxy" (the backend NCCL chose);
 *   "timer-check gda-inline <order>" (metric "timer-check", --metric
 *   timer-check only): the timer check below;
 *   "gda-hostdb" (issue, put+completion; --path gda-hostdb): the 8-byte
 *   inline write of gda-inline, but the poster writes the doorbell record
 *   and publishes its position in a host-visible word, and a pinned host
 *   thread rings (bench/gic/hostdb.h); params doorbell=host-rung. The same
 *   fixture first runs the poster-rung write ("gda-hostdb control",
 *   doorbell=poster), and the row's note gives the p50 difference, the
 *   latency the host hop adds (the paper: 2.6-5.8 us);
 *   "gda-dc <order>" and "gda-dc-full <order>" (issue, put+completion,
 *   rtt; --path gda-dc / gda-dc-full, not in all, not with --sweep): the
 *   8-byte inline write of gda-inline posted on a DCI of PE0 to a DCT of
 *   PE1 (softnic's DC transport), its address vector compact (16 bytes,
 *   gic_wqe_dc_write_inline_u64: one BB) or full (48 bytes, two BBs),
 *   precomputed once; completion on the DCI's CQ; the round trip's answer
 *   goes back the same way (PE1's DCI to a DCT of PE0, the same AV form).
 *   Same fixture as the RC rows of the run (the DC QPs are opened beside
 *   the RC ones when a DC path is selected), first --qps count only, scope
 *   qp; params transport=dc av=compact|full dci=1 (rtt also answer=dc);
 *   no paper number (the paper has no per-operation DC row);
 * metric "issue", "put+completion" or "rtt"; unit "us".
 */
#ifndef GIC_BENCH_EXP_LAT_H
#define GIC_BENCH_EXP_LAT_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Paths (bits of lat_state.paths). */
enum {
	GIC_LAT_GDA_INLINE = 1u << 0,
	GIC_LAT_GDA_POINTER = 1u << 1,
	GIC_LAT_PROXY_BASELINE = 1u << 2,
	GIC_LAT_PROXY_TUNED = 1u << 3,
	GIC_LAT_PATH_ALL = 0xfu,      /* --path all: not nvshmem (it needs two GPUs) */
	GIC_LAT_NVSHMEM = 1u << 4,    /* --path nvshmem (nvshmem_pe.h) */
	GIC_LAT_GIN = 1u << 5,        /* --path gin: NCCL GIN (nccl_pe.h); not in all either */
	GIC_LAT_GDA_HOSTDB = 1u << 6, /* --path gda-hostdb: gda-inline's 8-byte write, its
				       * doorbell rung by a host thread (hostdb.h); issue and
				       * put+completion, QP 0 of the first --qps count, scope
				       * qp; not in all */
	GIC_LAT_GDA_DC = 1u << 7,     /* --path gda-dc: gda-inline's 8-byte write from a DCI to
				       * PE1's DCT, the compact 16-byte AV (one BB) */
	GIC_LAT_GDA_DC_FULL = 1u << 8, /* --path gda-dc-full: the same, the full 48-byte AV
				       * (two BBs); both not in all, not with --sweep */
	GIC_LAT_GDA_DC_ANY = GIC_LAT_GDA_DC | GIC_LAT_GDA_DC_FULL,
};

/* Metrics (bits of lat_state.metrics). */
enum {
	GIC_LAT_ISSUE = 1u << 0,
	GIC_LAT_PUTC = 1u << 1,  /* put+completion */
	GIC_LAT_RTT = 1u << 2,
	GIC_LAT_METRIC_ALL = 0x7u,
	GIC_LAT_TIMER = 1u << 3, /* --metric timer-check (not in all) */
};

/* The timer check (paper Appendix A): round trips on gda-inline, 8 bytes,
 * where the responder delays every other answer by D, spinning on its own
 * clock (CLOCK_MONOTONIC on the host; %globaltimer on the GPU, while the
 * round trip is timed with clock64 over the measured SM clock). Its row
 * ("timer-check gda-inline <order>", metric "timer-check", unit us) holds
 * rtt p50 (delayed samples) - rtt p50 (plain samples), and is valid when
 * that is within GIC_LAT_TIMER_TOL_FRAC * D + GIC_LAT_TIMER_TOL_US of D (and
 * every payload checked out). */
#define GIC_LAT_TIMER_TOL_FRAC 0.10
#define GIC_LAT_TIMER_TOL_US 2.0
#define GIC_LAT_TIMER_DEFAULT_US 50

/* Number of ordering variants (enum gic_order in gic/post.h: NONE,
 * FENCE_GPU, FENCE_GPU_DBR, RELEASE_GPU, THREADFENCE, RELEASE_SYS,
 * FENCE_SYS, MMIO_SYS). */
#define GIC_LAT_ORDERS 8

/* Completion scopes (bits (1u << s) of lat_state.scopes). */
enum {
	GIC_LAT_SCOPE_QP = 0,       /* the used QP's CQ only (DeepEP's port) */
	GIC_LAT_SCOPE_ALL = 1,      /* then every other QP's CQ polled (gic_quiet_all_poll) */
	GIC_LAT_SCOPE_PROGRESS = 2, /* then every other QP's progress words, NVSHMEM 3.8's
				     * walk (gic_quiet_all_progress) */
	GIC_LAT_SCOPES = 3,
};

/* Most QP counts in one --qps list. */
#define GIC_LAT_MAX_QPS_LIST 8

typedef struct lat_state {
	unsigned paths;   /* GIC_LAT_GDA_* | GIC_LAT_PROXY_*; default all */
	unsigned orders;  /* bit (1u << o) for each enum gic_order o to run (mini-gda
			   * paths); default: FENCE_GPU only; --order all: every one */
	unsigned metrics; /* GIC_LAT_ISSUE | _PUTC | _RTT; default all */
	int qps[GIC_LAT_MAX_QPS_LIST]; /* --qps: QPs configured on PE0 per run (1..64 each,
				      * default 1); QP 0 is used */
	int nqps;         /* counts in qps[] (1..GIC_LAT_MAX_QPS_LIST) */
	unsigned scopes;  /* --scope: bits (1u << GIC_LAT_SCOPE_*); default qp only */
	int sweep;        /* --sweep (1): sizes -b..-e by -f for each path selected
			   * (gic_lat_sweep_sizes); default path gda-inline */
	int timer_delay_us; /* --timer-delay: D of the timer check (1..10000, default 50) */
} lat_state;

/* --sweep's size families: the inline sizes of gda-inline (Figure 3a) and
 * the pointer writes of gda-pointer and the proxy paths (Figure 11). */
enum { GIC_LAT_SWEEP_INLINE = 0, GIC_LAT_SWEEP_POINTER = 1 };
enum { GIC_LAT_SWEEP_MAX_SIZES = 64 };
/* The GPU mode's samples (-n plus -w) at most: its sample buffers. */
enum { GIC_LAT_GPU_MAX_SAMPLES = 4096 };

/* 1 when n samples (-n plus -w) fit the GPU mode, else 0 after a message. */
int gic_lat_gpu_samples_ok(int n);
/* The largest pointer size, and the destination (and source) bytes of a
 * pointer sweep: at least two slots of the largest size. */
#define GIC_LAT_SWEEP_MAX_POINTER ((size_t)2 << 20)
#define GIC_LAT_SWEEP_REGION ((size_t)4 << 20)

/* The sizes --sweep runs for family: -b, -e, -f where given, else the
 * family's defaults (inline: 8..512 by 2, host --quick 8..64; pointer:
 * 8..1M by 2, --quick 8..64K by 8); inline_max: the mode's inline limit
 * (pointer: GIC_LAT_SWEEP_MAX_POINTER). sizes[] holds up to
 * GIC_LAT_SWEEP_MAX_SIZES, *n receives the count. 0, or EINVAL after a
 * message naming the flag, the value and the limit ("gic lat: --sweep:
 * ..."). */
int gic_lat_sweep_sizes(const gic_opts *o, int family, size_t inline_max, size_t *sizes,
			int *n);

/* The name of scope s ("qp", "all", "all-progress"), NULL for a bad one. */
const char *gic_lat_scope_name(int s);

/* 1 when the mini-gda rows' names carry " qps=N scope=S" (more than one
 * count or scope, or any but one QP with scope qp). */
int gic_lat_scope_named(const lat_state *st);

/* The order the timer check posts with: fence-gpu when selected, else the
 * first order selected. */
int gic_lat_timer_order(const lat_state *st);

/* Emits the timer check's row from round-trip samples in us: plain[] and
 * delayed[] (warm-up already dropped), payload_ok 0 when a payload did not
 * check out; transport and params (the caller's, may be "") as for the
 * other rows; ENOMEM or 0. The host and GPU modes share it. */
int gic_lat_timer_emit(gic_sink *sink, const lat_state *st, int order, const gic_samples *plain,
		       const gic_samples *delayed, int payload_ok, const char *transport,
		       const char *params);

/* Names of the flag values ("gda-inline", "fence-gpu", "put+completion",
 * ...): used for result names; NULL for a bad index. */
const char *gic_lat_path_name(unsigned path_bit);
const char *gic_lat_order_name(int order);
const char *gic_lat_metric_name(unsigned metric_bit);

/* GPU mode (bench/gic/gpu_lat.cu): emits one result per (path, order,
 * metric[, size]). ENOTSUP without CUDA, ENODEV without a GPU. */
int gic_gpu_lat(const gic_opts *o, const lat_state *st, const gic_run_info *info,
		gic_sink *sink);

struct gic_pair;

/* --procs 2 in GPU mode (bench/gic/gpu_lat.cu), this process's PE of pair:
 * gda-inline's issue, put+completion and rtt at order fence-gpu, one QP,
 * each PE a process on o->device with a GPU-engine softnic of its own
 * (one warp), the QPs connected through gic/softnic_gpu_peer.h (PE 0's
 * engine writes PE 1's GPU memory, mapped through CUDA IPC). PE 0 times
 * and puts the rows; PE 1 checks every payload and sends its verdict.
 * Both engines spin on the GPU at once only under MPS. 0, ENOTSUP without
 * CUDA, or an errno after a message. */
int gic_gpu_lat_pe(struct gic_pair *pair, const gic_opts *o, const lat_state *st);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_LAT_H */
