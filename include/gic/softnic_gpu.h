/*
 * gic/softnic_gpu.h - softnic with its GPU engine: a persistent CUDA kernel
 * that executes the same WQEs with the same semantics and error CQEs as the
 * CPU engine (one execution core, src/nic/softnic/engine_core.h).
 *
 * Placement: the engine's own state (QP and CQ records, the MR table) is
 * CUDA managed memory, so that the host-side object calls of gic/softnic.h
 * work unchanged and the engine reads it from GPU memory in steady state.
 * Queues (send queues, doorbell records and words, CQ rings) are managed
 * memory that prefers the GPU (the paper's default placement) or, with
 * queues_on_host, pinned host memory mapped into the GPU. Regions may be
 * device memory of this GPU or a peer GPU with peer access, or mapped host
 * memory.
 *
 * Rules for programs that use it:
 *  - Load every kernel before the engine starts (set CUDA_MODULE_LOADING=
 *    EAGER, or call cudaFuncGetAttributes on each kernel): under lazy
 *    loading a kernel launched while the engine spins can never load.
 *  - Launch work on non-blocking streams and wait with a time limit (the
 *    engine runs on a non-blocking stream of its own; cudaDeviceSynchronize
 *    would wait for it forever).
 *  - Do not call cudaFree while the engine runs; softnic defers its own
 *    frees to softnic_close().
 *  - softnic_progress() does nothing on a persistent GPU engine; with
 *    on_demand it launches the engine kernel, which runs until two passes
 *    over every QP found no work, and waits for it.
 *
 * Engine state and queues are carved from arenas allocated at open, before
 * the engine kernel starts: no CUDA allocation or free happens while it
 * runs, and tools that track allocations per launch (compute-sanitizer)
 * see every address the engine touches. Memory is returned at close; an
 * exhausted arena fails the object call with ENOMEM.
 */
#ifndef GIC_SOFTNIC_GPU_H
#define GIC_SOFTNIC_GPU_H

#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct softnic_gpu_attr {
	int device;          /* CUDA device that runs the engine */
	int blocks;          /* blocks of the persistent kernel (SMs it takes), >= 1 */
	int warps_per_block; /* 1..32; warp w serves QP table slots w, w + W, ... */
	int queues_on_host;  /* 1: queues in mapped pinned host memory */
	int on_demand;       /* 1: no persistent kernel; softnic_progress() runs
			      * the engine until the QPs are idle (for tools that
			      * serialize kernels, such as compute-sanitizer, and for
			      * host submitters) */
	size_t arena_bytes;  /* engine state and queues come from two arenas of
			      * this size, allocated before the engine starts
			      * (0: 256 MiB each); see below */
	int host_submitters; /* 1: host threads post and poll too (the emulated
			      * rdma-core device): system-scope ordering even
			      * with the queues in GPU memory */
} softnic_gpu_attr;

/* Opens a softnic whose engine is a persistent kernel on gattr->device,
 * started at once. attr->engine_threads must be 0. NULL with errno set
 * (ENODEV: no CUDA device; ENOTSUP: no concurrent managed access) and the
 * reason in stderr when it cannot start. */
softnic *softnic_open_gpu(const softnic_attr *attr, const softnic_gpu_attr *gattr);

/* 1 when the engine kernel is still running (0 after a fault: then
 * softnic_gpu_engine_error() says what the CUDA runtime reported). */
int softnic_gpu_engine_alive(const softnic *nic);
const char *softnic_gpu_engine_error(const softnic *nic);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_GPU_H */
