/*
 * bench/gic/gpu_pair.h - `--procs 2` in GPU mode: this process's PE of a
 * pair whose other PE is a process of its own on the same GPU (or another
 * GPU of the host), the QPs connected through softnic's GPU peers
 * (gic/softnic_gpu_peer.h). Each PE has a GPU-engine softnic, nqps QPs
 * (each with a send CQ of its own), one registered region in GPU memory and
 * a stream; QP q of PE 0 is connected to QP q of PE 1, so PE 0's engine
 * writes straight into PE 1's region. Both engines spin at once only under
 * MPS (gpu_pair_pe.mps says whether it shares the device).
 *
 * Used by gpu_lat.cu, gpu_rate.cu, gpu_payload.cu and gpu_kernel.cu (CUDA
 * C++ only).
 */
#ifndef GIC_BENCH_GPU_PAIR_H
#define GIC_BENCH_GPU_PAIR_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "gic/post.h"
#include "gic/softnic.h"
#include "gic/softnic_gpu_peer.h"
#include "../../tests/gpu/gpu_env.h"
extern "C" {
#include "pe_pair.h" /* a C header without a C++ guard */
}

/* QPs of a pair: as many as one PE's record (gpu_pair_info) carries in a
 * GATHER (pe_launch.h); gic kernel's paper launch (528 blocks, a QP each)
 * fits. */
enum { GPU_PAIR_MAX_QPS = 896 };

/* What the PEs swap: the GPU peer record, the region and the QP numbers. */
typedef struct gpu_pair_info {
	softnic_gpu_peer_rec rec;
	uint64_t region; /* its address in the owner's process */
	uint32_t rkey, nqps;
	uint32_t qpn[GPU_PAIR_MAX_QPS];
} gpu_pair_info;

static_assert(sizeof(gpu_pair_info) <= GIC_PL_GATHER_MAX, "a PE's record is one GATHER");

/* One PE's shape; both PEs pass the same nqps and region. */
typedef struct gpu_pair_cfg {
	int device;
	int nqps;            /* 1..GPU_PAIR_MAX_QPS */
	int log_sq_bb;       /* each QP's ring: 2^log_sq_bb BBs */
	size_t region;       /* bytes of the region (GPU memory) */
	int engine_blocks;   /* the GPU engine's blocks x warps */
	int engine_warps;
} gpu_pair_cfg;

typedef struct gpu_pair_pe {
	const char *who;     /* the subcommand, for messages */
	int rank, nqps, peer;
	int mps;             /* the device's contexts are shared through MPS */
	softnic *nic;
	softnic_pd *pd;
	softnic_mr *mr;
	softnic_cq *cq[GPU_PAIR_MAX_QPS];
	softnic_qp *qp[GPU_PAIR_MAX_QPS];
	uint8_t *region;     /* this PE's (PE 1: the destination of PE 0's writes) */
	gic_sq *d_sq;        /* nqps device copies of the QPs' views */
	gic_cq *d_cq;
	cudaStream_t stream; /* non-blocking: never waits for the engine */
	gpu_pair_info mine, theirs;
} gpu_pair_pe;

/* Opens this PE of pair (both PEs call it with the same cfg): the softnic,
 * its GPU peer record, the QPs, the region; swaps the records through the
 * driver, adds the other PE as a GPU peer and connects QP q to its QP q.
 * The caller makes its own CUDA allocations first (a persistent engine
 * starts here) and has called gic_gpu_available(), which sets eager module
 * loading (a kernel loaded lazily beside the engine would never load).
 * 0, or an errno after a message naming who and the PE. gpu_pair_finish()
 * in either case. */
int gpu_pair_open(gpu_pair_pe *P, gic_pair *pair, const char *who, const gpu_pair_cfg *c);

/* gpu_pair_open() for a PE that failed before it (its message said why):
 * opens nothing and swaps an empty record, so that the other PE's open
 * fails too instead of waiting for it. Returns rc. gpu_pair_finish() after. */
int gpu_pair_open_failed(gpu_pair_pe *P, gic_pair *pair, const char *who, int rc);

/* Closes what gpu_pair_open() made (the engine stops first). */
void gpu_pair_close(gpu_pair_pe *P);

/* The PEs' last barrier (neither closes while the other still posts into
 * it), then gpu_pair_close(). Both PEs call it, after a failure too. */
void gpu_pair_finish(gpu_pair_pe *P, gic_pair *pair);

/* Waits for P's stream with a limit of seconds. 0, ETIMEDOUT or EIO after
 * a message. */
int gpu_pair_wait(const gpu_pair_pe *P, const char *what, double seconds);

/* Says on stderr that without MPS the PEs' kernels time-slice the GPU. */
void gpu_pair_warn_mps(const char *who);

/* A barrier of the two PEs, through the driver (pair NULL: nothing),
 * waiting up to the PE's own limit (gic_pair_exchange_late). */
void gpu_pair_sync(gic_pair *pair);

/* A barrier that hands PE 0's v to PE 1: v on PE 0 (and with pair NULL),
 * PE 0's v on PE 1. For what PE 1 must follow of PE 0's run (whether its
 * rounds ran, so that both PEs take the same steps). */
int gpu_pair_from0(gic_pair *pair, int v);

/* PE pe's region (0 or 1) and its key as this PE names them in WQEs:
 * its own, or the other process's address (never dereference that). */
void gpu_pair_region(const gpu_pair_pe *P, int pe, uint8_t **region, uint32_t *key);

/* The PE's objects as a gpu_env for the experiments' helpers that take
 * one (kernel launches on e->stream with e->d_sq, gpu_env_read/_write,
 * gpu_env_qp_error): the stream, the views, the QPs and the regions of a
 * one-way run: PE 1's region is dst (with its key) on both PEs; on PE 0
 * its own region is src (with its lkey) and dst is the other process's
 * address, for WQEs only (never gpu_env_read/_write it). Nothing else of
 * *e is set; never gpu_env_close it. */
void gpu_pair_env(const gpu_pair_pe *P, gpu_env *e);

#endif
