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
	int warps_per_block; /* 1..32, and no more than the engine kernel's registers
			      * allow (about 10 on sm_90; open says); warp w serves
			      * QP table slots w, w + W, ... */
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
	int trace_wqes;      /* > 0: each engine warp records the pipeline steps
			      * of the first trace_wqes WQE executions it runs
			      * (softnic_gpu_trace_read); the environment
			      * variable GIC_SOFTNIC_GPU_TRACE=N, read at open,
			      * sets it too. 0: off (one predicted branch per
			      * step) */
} softnic_gpu_attr;

/* The steps of a WQE's life that the engine records when tracing
 * (docs/softnic.md, "The GPU engine's pipeline"). A batch of WQEs run one
 * per lane records each batch-wide step once, under its first WQE. */
enum softnic_gpu_trace_step {
	SOFTNIC_TRACE_DB_SEEN = 1,    /* the scan read a changed doorbell word */
	SOFTNIC_TRACE_RECORD = 2,     /* pass begun: epoch, link, doorbell record read */
	SOFTNIC_TRACE_WQE_READ = 3,   /* the WQE's first BB is in registers */
	SOFTNIC_TRACE_KEY_OK = 4,     /* decoded, keys and bounds checked */
	SOFTNIC_TRACE_CQ_CLAIMED = 5, /* the send CQ's lock taken, slots claimed */
	SOFTNIC_TRACE_DATA_MOVED = 6, /* payload stores issued */
	SOFTNIC_TRACE_CQE_WRITTEN = 7, /* the CQE's tail released (one per WQE) */
	SOFTNIC_TRACE_PASS_END = 8,   /* CQ unlocked, counters added: the warp is free */
	SOFTNIC_TRACE_SERIAL = 9,     /* a WQE run by the serial core (snx_step) */
	SOFTNIC_TRACE_STEPS = 10
};

typedef struct softnic_gpu_trace_rec {
	uint64_t ns;        /* %globaltimer (comparable across SMs) */
	uint64_t clk;       /* clock64 of the recording warp's SM */
	uint32_t qpn;
	uint16_t wqe_index; /* the (first) WQE's index */
	uint8_t step;       /* enum softnic_gpu_trace_step; 0: empty */
	uint8_t count;      /* WQEs the step covered */
	uint32_t warp;      /* the engine warp */
	uint32_t smid;
} softnic_gpu_trace_rec;


/* Opens a softnic whose engine is a persistent kernel on gattr->device,
 * started at once. attr->engine_threads must be 0. NULL with errno set
 * (ENODEV: no CUDA device; ENOTSUP: no concurrent managed access) and the
 * reason in stderr when it cannot start. */
softnic *softnic_open_gpu(const softnic_attr *attr, const softnic_gpu_attr *gattr);

/* 1 when the engine kernel is still running (0 after a fault: then
 * softnic_gpu_engine_error() says what the CUDA runtime reported). */
int softnic_gpu_engine_alive(const softnic *nic);
const char *softnic_gpu_engine_error(const softnic *nic);

/* Copies up to max trace records (warp by warp, each warp's in the order
 * it recorded them) into out and sets *n; the engine may still be running
 * (records of steps under way may be missing). 0, ENOTSUP when tracing is
 * off (or nic has no GPU engine), EIO when the copy fails. */
int softnic_gpu_trace_read(const softnic *nic, softnic_gpu_trace_rec *out, size_t max, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_GPU_H */
