/*
 * proxy_env: mini-proxy fixtures for GPU producers, shared by the GPU
 * proxy suite and gic-gpu-proxy-bench.
 *
 * Two PEs (protection domains) on one softnic. Proxy k carries PE k's
 * producers' requests into PE 1-k's region; with pes == 2 both directions
 * exist (round trips). Two placements of the NIC:
 *  PROXY_NIC_CPU: softnic's CPU engine; regions, sources and counters in
 *                 mapped host memory; host-resident counters (the worker
 *                 adds after the CQE).
 *  PROXY_NIC_GPU: softnic's GPU engine serving host-resident queues (the
 *                 workers post as to a NIC); regions, sources and counters
 *                 in GPU memory; the worker bumps the GPU-resident counter
 *                 with an ATOMIC_FA through the NIC, so a producer waiting
 *                 for completion never reads host memory.
 *  PROXY_NIC_MLX5: the mlx5 provider (gic/provider.h: a ConnectX, or the
 *                 emulated device under gic-emu): two contexts of one
 *                 device (cfg.nic; NULL: the first) as the PEs; regions,
 *                 sources and counters in mapped host memory; host-resident
 *                 counters.
 * Every CUDA allocation happens before the engine starts; pinned host
 * memory the proxy frees is released only after the engine stopped
 * (cudaFreeHost waits for the device, which a persistent engine never
 * leaves idle).
 */
#ifndef GIC_PROXY_ENV_H
#define GIC_PROXY_ENV_H

#include "gpu_env.h"

#include "gic/proxy.h"

enum { PROXY_NIC_CPU = 0, PROXY_NIC_GPU = 1, PROXY_NIC_MLX5 = 2 };
enum { PROXY_ENV_RINGS = 32, PROXY_ENV_DEFER = 256 };

typedef struct proxy_env_cfg {
	int nic_kind;       /* PROXY_NIC_* */
	int pes;            /* 1: proxy 0 only; 2: both directions */
	int workers, rings, batch, protocol;
	int log_ring_slots; /* 0: 2^10 slots */
	size_t region_len;  /* bytes of each PE's region and source */
	int bad_rkey;       /* 1: proxy 0 writes with a wrong rkey (error cases) */
	int warmup_ms;      /* workers spin their cores this long at start (0: none) */
	int inflight;       /* K chains per worker (0: the proxy's default, 8) */
	int idle_ms;        /* workers idle this long before the warm-up (0: none) */
	const char *nic;    /* PROXY_NIC_MLX5: the RDMA device (NULL: the first) */
} proxy_env_cfg;

typedef struct proxy_env {
	proxy_env_cfg cfg;
	softnic *nic;
	void *later[PROXY_ENV_DEFER]; /* pinned frees deferred past the engine */
	int nlater;
	softnic_allocator mapped;
	softnic_pd *pd[2];
	gic_nic *pe[2];         /* provider PEs over pd[k] (mini-proxy's attributes) */
	uint64_t *region[2];    /* PE k's destination region (device-visible) */
	uint64_t *src[2];       /* PE k's source of pointer requests */
	uint64_t *counters[2];  /* PE k's producers' counters (PROXY_ENV_RINGS) */
	softnic_mr *region_mr[2], *src_mr[2], *counter_mr[2];
	gic_nic_mr *p_mr[2][3];     /* PROXY_NIC_MLX5: region, src, counters of PE k */
	uint32_t region_rkey[2], src_lkey[2], counter_rkey[2]; /* either kind */
	gic_proxy *proxy[2];
	gic_proxy_ring *d_views[2]; /* device copies of the ring views */
	gic_proxy_desc *scratch;    /* 256 slots of mapped host memory */
	cudaStream_t stream;        /* non-blocking */
} proxy_env;

/* Builds the fixture; 0, or 1 with a message on stderr (then call
 * proxy_env_close all the same). */
int proxy_env_open(proxy_env *e, const proxy_env_cfg *cfg);

/* Stops the proxies and the NIC, then frees everything. */
void proxy_env_close(proxy_env *e);

/* Waits for the stream with a time limit; 0, or 1 with a message. */
int proxy_env_wait(proxy_env *e, const char *what, double seconds);

/* Copies n bytes of device-visible memory (a region) to the host. */
int proxy_env_read(proxy_env *e, void *host, const void *from, size_t n);

/* Copies n bytes from the host into device-visible memory. */
int proxy_env_write(proxy_env *e, void *to, const void *host, size_t n);

#endif /* GIC_PROXY_ENV_H */
