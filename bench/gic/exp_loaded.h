/*
 * bench/gic/exp_loaded.h - `gic loaded`: round trip of a probe while
 * background CTAs (host: threads) load both ends (paper Figure 6, Table 11).
 *
 * The probe ping-pongs one 8-byte write between PE0 and PE1 while
 * --bg-ctas background writers stream writes in both directions. With
 * --queue shared the probe posts on the background's queue (behind its
 * WQEs); with reserved it owns a queue of its own. --pace NS spaces each
 * background writer's posts (0: as fast as it can). --bg-ctas takes a list
 * of load levels; each path runs every level.
 *
 * Paths (--path, repeatable): gda, proxy (softnic), and nvshmem: NVSHMEM's
 * public API between two GPUs, PEs in processes of their own
 * (bench/gic/nvshmem_pe.h): the probe is nvshmem_uint64_p answered by
 * nvshmem_uint64_p, the background writers stream 8-byte
 * nvshmem_putmem_nbi (half on each PE, to the other). Over P2P there is no
 * queue to share or reserve: one row, "nvshmem p2p"; over a NIC transport
 * "nvshmem shared" (NVSHMEM's default QPs) and "nvshmem reserved" (the
 * probe on a QP of its own from nvshmemx_qp_create).
 *
 * Result names: "<path> <queue>" (e.g. "gda shared", "proxy reserved"),
 * with " paced" appended when --pace > 0 and " bg=<N>" when --bg-ctas
 * lists more than one level; two results per configuration: metric
 * "loaded rtt" (us) for the probe and "background rate" (M msg/s) for the
 * load it carried meanwhile.
 */
#ifndef GIC_BENCH_EXP_LOADED_H
#define GIC_BENCH_EXP_LOADED_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Queues (bits of loaded_state.queues). */
enum { GIC_LOADED_SHARED = 1u << 0, GIC_LOADED_RESERVED = 1u << 1 };

/* Paths (indices; bit (1u << index) in loaded_state.paths). */
enum { GIC_LOADED_GDA = 0, GIC_LOADED_PROXY = 1, GIC_LOADED_NVSHMEM = 2 };

enum {
	GIC_LOADED_MAX_LEVELS = 8, /* --bg-ctas list entries */
	GIC_LOADED_GPU_MAX_BG = 254, /* background CTAs of one GPU run */
	GIC_LOADED_GPU_MAX_SAMPLES = 4096, /* -n plus -w of one GPU run */
};

typedef struct loaded_state {
	int bg_ctas;      /* background CTAs (GPU) or threads (host) of this run: one of
			   * levels[] (host: capped, see the result note) */
	int levels[GIC_LOADED_MAX_LEVELS]; /* --bg-ctas N[,N...]: 0..1024 each; default 64 */
	int nlevels;
	int level_in_name;/* 1: names end in " bg=<N>" (more than one level) */
	unsigned queues;  /* --queue shared|reserved|both; default both */
	long pace_ns;     /* --pace NS: gap between a background writer's posts; 0: unpaced */
	unsigned paths;   /* --path gda|proxy|nvshmem (repeatable): bits 1u << GIC_LOADED_*;
			   * default gda */
	int path;         /* the path of this run: GIC_LOADED_GDA or GIC_LOADED_PROXY */
	/* --path proxy: each PE's mini-proxy (-T, -R, -B, --inflight); 0: the
	 * defaults, T4/R32/B16 on the GPU (the paper's), T1/R2/B16 on the host;
	 * K 8. Both queues use the baseline protocol (rings with several
	 * producers); the probe is on ring 0, the writers on rings 0..R-1
	 * (shared) or 1..R-1 (reserved). */
	int T, R, B, inflight;
} loaded_state;

/* GPU mode (bench/gic/gpu_loaded.cu): st->path at st->bg_ctas (the
 * driver loops over paths and levels). */
int gic_gpu_loaded(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		   gic_sink *sink);

/* --procs 2 in GPU mode: st's gda path at st->bg_ctas as this PE of pair
 * (gpu_pair.h): PE 0 probes and runs the even writers, PE 1 answers and
 * runs the odd ones, through softnic's GPU peers; each checks what it
 * received; a phase per queue. 0 or an errno. */
struct gic_pair;
int gic_gpu_loaded_pe(struct gic_pair *pair, const gic_opts *o, const loaded_state *st);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_LOADED_H */
