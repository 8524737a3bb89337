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
	int engine_sms;      /* where the engine runs (below, "SM placement"):
			      * 0: on the device's SMs, shared with every other
			      * kernel (as before); N > 0: on SMs of its own, a
			      * CUDA green context of at least N SMs (the driver
			      * rounds N up to its split granularity: 8 on
			      * sm_90), the rest of the device a second green
			      * context for the callers
			      * (softnic_gpu_caller_stream) */
	int batch_wqes;      /* WQEs per batch of a drained QP's one-BB inline
			      * writes: 0 or 32, one per lane (the default); 64,
			      * two per lane under one CQ claim and one proof of
			      * disjointness (wide_batch in engine_gpu.cu): on
			      * the H200 the engine alone drains one QP at 26
			      * instead of 20 M msg/s (gic rate's t32-q1-warp
			      * with drain 19.7 -> 25.1), but put+completion
			      * +0.25-0.4 us and the round trip +0.5-0.7 us
			      * (another kernel: more registers, a spill);
			      * 96, three per lane, a kernel of 255 registers
			      * (8 warps a block at most): alone 29.7 M msg/s,
			      * t32-q1-warp with drain 26.5-27.9 over three
			      * machine instances, latency as with 32
			      * (2026-12-04);
			      * sm_100 and later run 32 in every case
			      * (softnic_gpu_batch_wqes). docs/softnic.md */
} softnic_gpu_attr;

/* SM placement (softnic_gpu_attr.engine_sms > 0). softnic_open_gpu splits the
 * device's SMs with CUDA green contexts (driver API, reached through the
 * runtime's cudaGetDriverEntryPointByVersion, so nothing links libcuda):
 * one group of at least engine_sms SMs for the engine, the remaining SMs
 * for the callers; it makes both contexts and a non-blocking stream in
 * each before the engine kernel starts, launches the engine on the first
 * and hands out the second. Both are views of the device's primary
 * context: memory allocated there (cudaMalloc, managed, mapped host) is
 * the same in both. At open a probe kernel on each stream records the SMs
 * it ran on (smid), so the record says what the hardware did, not only
 * what was asked. Kernels launched on other streams still run on every
 * SM, the engine's included: launch the work that must keep off the
 * engine's SMs on the caller stream. softnic_open_gpu fails (NULL) with
 * ENOTSUP when the driver has no green contexts (CUDA 12.5 drivers and
 * later have them), EINVAL when engine_sms leaves no SM for the callers
 * or the engine's blocks cannot all be resident on its SMs; the message
 * says which.
 *
 * The engine on another GPU than its posters (the queues fetched across
 * NVLink, the measured GPU keeping all its SMs) needs two GPUs and is not
 * built: gattr->device is where the engine runs and where its arenas
 * prefer to live; posters on another GPU would reach its managed queues
 * through page migration, not a NIC's fetch. */
typedef struct softnic_gpu_placement {
	int engine_sms_asked; /* softnic_gpu_attr.engine_sms (0: shared) */
	int engine_sms;       /* SMs of the engine's green context (0: shared) */
	int caller_sms;       /* SMs of the callers' green context (0: shared) */
	int device_sms;       /* SMs of the device */
	int min_partition;    /* the driver's smallest SM group */
	int alignment;        /* the driver's SM co-scheduling alignment */
	int engine_seen;      /* distinct SMs the probe saw on the engine's stream */
	int caller_seen;      /* ... on the callers' stream */
	int overlap_seen;     /* SMs seen on both (0 when the split holds) */
} softnic_gpu_placement;

/* The WQEs per batch nic's engine runs (softnic_gpu_attr.batch_wqes as the
 * device's engine kernel takes it): 32, 64 or 96; 0 for a softnic that is
 * not a GPU engine's. */
int softnic_gpu_batch_wqes(const softnic *nic);

struct CUstream_st;

/* The split softnic_open_gpu would make on device for engine_sms (> 0),
 * without making contexts: engine_sms, caller_sms, device_sms,
 * min_partition and alignment of *p (the _seen fields 0). 0; ENOTSUP
 * when the driver has no green contexts, EINVAL when engine_sms is out of
 * range, ENODEV without the device; each with the reason in stderr. */
int softnic_gpu_sm_split(int device, int engine_sms, softnic_gpu_placement *p);

/* The stream in the callers' green context (engine_sms > 0), owned by nic
 * and destroyed by softnic_close(); NULL when the engine shares the SMs
 * (launch anywhere) or nic has no GPU engine. */
struct CUstream_st *softnic_gpu_caller_stream(const softnic *nic);

/* The placement nic runs with (all zero but device_sms for a shared
 * engine). 0, or EINVAL when nic has no GPU engine. */
int softnic_gpu_placement_get(const softnic *nic, softnic_gpu_placement *p);

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
 * started at once (on SMs of its own with gattr->engine_sms: SM placement
 * above). attr->engine_threads must be 0. NULL with errno set (ENODEV: no
 * CUDA device; ENOTSUP: no concurrent managed access, or no green
 * contexts for engine_sms; EINVAL: attributes out of range) and the
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
