/*
 * gpu_env: a two-PE softnic fixture for GPU programs, on either engine.
 *
 * PE0 and PE1 each have a protection domain; nqps RC QPs of PE0 are each
 * connected to a QP of PE1 (PE1's QPs share one receive CQ). PE1 exposes a
 * destination region, PE0 a source region and a result region (for fetched
 * atomic values). With the CPU engine, queues and regions are pinned host
 * memory mapped into the GPU; with the GPU engine, queues are managed
 * memory on the GPU and regions are device memory.
 *
 * QPs have 2^log_sq_bb-BB rings (QP 1 16 BBs with small_ring_qp1). The
 * device sees the queues through d_sq[i] / d_cq[i] (device copies of
 * the views) and PE1's receive CQ through d_rcq. PE1 posts back to PE0
 * (round trips) through d_peer_sq[i], into PE0's region `back`.
 *
 * With cfg.dc, also the DC transport (softnic.h): each PE a DCI and a DCT
 * (created after every RC QP, so the RC QPs keep their slots of the
 * engine's QP table). PE0's DCI (d_dci_sq[0]) reaches PE1's DCT
 * (dctn[1]: the destination region, in PE1's PD); PE1's DCI (d_dci_sq[1])
 * reaches PE0's DCT (dctn[0]: the region `back`). The DCTs' key is
 * ENV_DC_KEY; the caller builds the address vectors from dctn.
 *
 * With cfg.provider ENV_PROVIDER_MLX5 (builds with the mlx5 provider,
 * GIC_HAVE_MLX5) the same QPs, regions and device views come from the
 * mlx5 provider (gic/provider.h): PE0 and PE1 are two contexts of one
 * RDMA device (a ConnectX, or the emulated device under gic-emu), queues
 * in host memory mapped into the GPU by the provider's device views,
 * the doorbell GPU-rung or forwarded (the provider says which), regions
 * in mapped pinned host memory. softnic's own options (gpu_engine,
 * strict, engine sizes, arenas, peer_gpu) are refused there;
 * host_doorbells asks nothing of mlx5 (a host thread rings the UAR through
 * the provider's host view: gpu_env_host_doorbell); d_rcq is then an empty view. cfg.dc works on both (the DCTs'
 * key is then GIC_DC_KEY; use dc_av, which carries the key and route). Use the gpu_env_* keys and
 * gpu_env_qp_error() below, which serve both.
 */
#ifndef GIC_GPU_ENV_H
#define GIC_GPU_ENV_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/provider.h"
#include "gic/softnic_gpu.h"

#define CUDA_OK(call)                                                               \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorString(e_));                            \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

/* QPs: 2048 holds `gic kernel` at the paper's 8 blocks/SM on 132 SMs (-c
 * 1056, one QP per block); with their peers that is 2112 of softnic's 4096
 * table slots (SNX_MAX_QP). */
enum { ENV_MAX_QPS = 2048, ENV_DEADLINE_NS = 2000000000ull };

typedef struct gpu_env_cfg {
	int gpu_engine;      /* 0: CPU engine (1 thread), 1: GPU engine */
	int nqps;            /* 1..ENV_MAX_QPS */
	int log_sq_bb;       /* per QP */
	size_t region;       /* bytes of each region */
	int strict;
	int engine_blocks;   /* GPU engine: blocks (0: 4) */
	int engine_warps;    /* GPU engine: warps per block (0: 4) */
	int small_ring_qp1;  /* 1: QP 1 gets a 16-BB ring (wraparound cases) */
	size_t arena_bytes;  /* GPU engine arenas (0: the engine's default) */
	int peer_gpu;        /* 1: PE1's destination region on GPU 1 (peer access) */
	int host_doorbells;  /* 1: PE0's doorbell registers in mapped pinned host memory
			      * (a 64-byte line each, host_db), so that a host thread
			      * can ring them (bench/gic/hostdb.h); the GPU engine then
			      * reads them through the mapping and synchronizes at
			      * system scope (softnic_gpu_attr.host_submitters);
			      * mlx5: nothing to place, the UAR is the host's */
	int dc;              /* 1: a DCI and a DCT per PE (above) */
	int provider;        /* ENV_PROVIDER_SOFTNIC (0) or ENV_PROVIDER_MLX5 (above) */
	const char *nic;     /* mlx5: the RDMA device (NULL: the first) */
	int engine_sms;      /* GPU engine: 0 shares the device's SMs; N > 0 puts the
			      * engine on SMs of its own (softnic_gpu_attr.engine_sms)
			      * and `stream` below in the callers' green context, so
			      * that everything launched on it keeps off them */
	int engine_batch;    /* GPU engine: WQEs per batch of a drained QP, 0 or 32
			      * (one per lane), 64 or 96 (softnic_gpu_attr.batch_wqes) */
} gpu_env_cfg;

/* gpu_env_cfg.provider (the values of gic_opts.provider). */
enum { ENV_PROVIDER_SOFTNIC = 0, ENV_PROVIDER_MLX5 = 1 };

/* gpu_env_qp_error's qp for PE0's DCI. */
enum { ENV_QP_DCI0 = -1 };

#define ENV_DC_KEY 0x6769632d64632d6bull

typedef struct gpu_env {
	gpu_env_cfg cfg;
	softnic *nic;
	softnic_allocator host_alloc;
	softnic_pd *pd[2];
	softnic_qp *qp[ENV_MAX_QPS], *peer[ENV_MAX_QPS];
	softnic_cq *rcq;
	uint8_t *dst, *src, *res;   /* regions (device-visible addresses) */
	uint8_t *back;              /* PE0's region PE1 writes into */
	softnic_mr *dst_mr, *src_mr, *res_mr, *back_mr;
	gic_sq *d_sq;               /* nqps device copies of the views */
	gic_cq *d_cq;
	gic_sq *d_peer_sq;          /* PE1's QPs (16-BB rings), connected to PE0's */
	gic_cq *d_peer_cq;
	gic_cq *d_rcq;
	cudaStream_t stream;        /* non-blocking: never waits for the engine; with
				     * cfg.engine_sms the callers' green-context stream
				     * (owned by the softnic) */
	cudaStream_t own_stream;    /* the env's own stream (the primary context) */
	softnic_gpu_placement placement; /* GPU engine: the SM split it runs with */
	int batch_wqes;             /* GPU engine: WQEs per drained batch it runs
				     * (softnic_gpu_batch_wqes, taken at open: rows
				     * are written after the close) */
	uint64_t *host_db;          /* host_doorbells: nqps lines of mapped pinned memory */
	softnic_qp *dci[2], *dct[2]; /* cfg.dc: [pe] */
	softnic_srq *dct_srq[2];
	softnic_cq *dc_rcq;         /* cfg.dc: both DCTs' receive CQ (writes post none) */
	uint32_t dctn[2];           /* cfg.dc: the DCTs' numbers */
	gic_sq *d_dci_sq;           /* cfg.dc: device copies of the DCIs' views, [pe] */
	gic_cq *d_dci_cq;
	/* cfg.dc: the address vector reaching PE t's DCT from the other PE's
	 * DCI, [t][0] compact, [t][1] full; dc_av_rc[t][f] 0, or why that
	 * form is not available (mlx5: the compact one on a route with a GRH). */
	gic_av_seg dc_av[2][2];
	int dc_av_rc[2][2];
	gic_nic_cq *p_dc_cq[2][2];  /* mlx5 cfg.dc: [pe][0] the DCI's CQ, [1] the DCT's */
	gic_nic_qp *p_dci[2], *p_dct[2];
	/* Either provider: the regions' keys. */
	uint32_t dst_rkey, src_lkey, res_lkey, back_rkey;
	/* ENV_PROVIDER_MLX5: the provider's objects (softnic's above stay NULL). */
	gic_nic *pe_nic[2];
	gic_nic_cq *p_cq[ENV_MAX_QPS], *p_peer_cq[ENV_MAX_QPS];
	gic_nic_qp *p_qp[ENV_MAX_QPS], *p_peer[ENV_MAX_QPS];
	gic_nic_mr *p_mr[4];        /* dst, src, res, back */
	char nic_desc[160];         /* gic_nic_describe() of PE0, or "softnic (... engine)" */
} gpu_env;

/* What the provider knows of the failure of PE0's QP qp (0..nqps-1, or
 * ENV_QP_DCI0): softnic's recorded error, or the mlx5 provider's text. */
const char *gpu_env_qp_error(const gpu_env *e, int qp);

/* The host address at which a host thread rings PE0's QP q (hostdb.h's
 * ringer), or NULL when there is none. softnic: the QP's doorbell word,
 * in mapped pinned host memory only with cfg.host_doorbells. mlx5: the
 * provider's host view of the QP's doorbell register (the UAR, which the
 * CPU can store to whatever the GPU can map; on the emulated device a
 * page its doorbell watcher reads). */
uint64_t *gpu_env_host_doorbell(const gpu_env *e, int q);

/* Builds the fixture; exits with a message on failure. */
void gpu_env_open(gpu_env *e, const gpu_env_cfg *cfg);

/* Closes the softnic (stopping its engine), then frees the regions. */
void gpu_env_close(gpu_env *e);

/* Waits for stream s at most seconds: 0, or ETIMEDOUT / EIO after a
 * message naming what (the stream is left as it is). */
int gpu_stream_wait(cudaStream_t s, const char *what, double seconds);

/* Waits for the env's stream with a time limit; 0, or ETIMEDOUT/EIO with a
 * message naming what. */
int gpu_env_wait(gpu_env *e, const char *what, double seconds);

/* Copies n bytes from a region address to host memory (stream + wait). */
int gpu_env_read(gpu_env *e, void *host, const void *region, size_t n);

/* Copies n bytes from host memory to a region address. */
int gpu_env_write(gpu_env *e, void *region, const void *host, size_t n);

/* Pinned host memory mapped into the GPU, zeroed: softnic's queue
 * allocator for the CPU engine with GPU submitters. */
void *gpu_mapped_alloc(size_t size, size_t align, void *ctx);
void gpu_mapped_free(void *p, void *ctx);

/* SM clock in MHz, measured by a kernel (clock64 against globaltimer). */
double gpu_sm_clock_mhz(cudaStream_t stream);

#endif /* GIC_GPU_ENV_H */
