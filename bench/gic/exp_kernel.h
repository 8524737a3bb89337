/*
 * bench/gic/exp_kernel.h - `gic kernel`: what communication code costs the
 * kernel that encloses it (paper §4.3.2, Figure 9, Table 14).
 *
 * A caller (FMA compute over --live N live values, or a streaming copy)
 * runs -c blocks of -t threads (paper: 528 x 256) in variants: none (no
 * communication code), code (the send compiled in, never taken), send
 * (each block sends --msgs messages of --size bytes), sendwait (sends and
 * waits for their completion). GPU results: registers per thread, spills
 * (bytes), resident blocks per SM, and useful-throughput loss against
 * "none". Host mode runs the FMA caller on host threads and reports only
 * the loss.
 *
 * --path nvshmem (GPU only; nvshmem_pe.h) runs the same fma caller (the
 * same source: kernel_caller.cuh) in NVSHMEM's PEs, PE 0 timing it, with
 * NVSHMEM's send path in place of mini-gda's: code (nvshmem_putmem_nbi
 * behind a run-time flag that is false), send (thread 0 of each block
 * puts each message, nbi), sendwait (then nvshmem_quiet); --msgs default
 * 16 there (Table 14); PE 1 checks every message's payload, and that
 * nothing landed for none and code. Its rows are named "nvshmem <...>".
 *
 * Result names: "<caller> <variant> msgs=<m> size=<B>"; metrics
 * "registers" (regs), "spill" (B), "blocks/SM" (blocks), "time" (us), "loss"
 * (%).
 */
#ifndef GIC_BENCH_EXP_KERNEL_H
#define GIC_BENCH_EXP_KERNEL_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Callers (bits of kernel_state.callers). */
enum { GIC_KERNEL_FMA = 1u << 0, GIC_KERNEL_STREAM = 1u << 1 };

/* Variants (bits of kernel_state.variants). */
enum {
	GIC_KERNEL_NONE = 1u << 0,
	GIC_KERNEL_CODE = 1u << 1,
	GIC_KERNEL_SEND = 1u << 2,
	GIC_KERNEL_SENDWAIT = 1u << 3,
	GIC_KERNEL_VARIANT_ALL = 0xfu,
};

/* Paths (indices; bit (1u << index) in kernel_state.paths). */
enum { GIC_KERNEL_GDA = 0, GIC_KERNEL_NVSHMEM = 1 };

/* Live values: Appendix D.2 goes to 224. */
enum { GIC_KERNEL_MAX_MSGS = 8, GIC_KERNEL_MAX_LIVE = 224 };

/* The live counts the GPU modes (gpu_kernel.cu, nvshmem_pe.cu) instantiate:
 * GIC_KERNEL_LIVE_CASES(X) expands X(n) for each. */
#define GIC_KERNEL_LIVE_CASES(X) X(4) X(8) X(16) X(32) X(64) X(160) X(224)

typedef struct kernel_state {
	unsigned callers;  /* --caller fma|stream|both; default fma */
	int live;          /* --live N: live values per thread (1..224), default 8 */
	unsigned variants; /* --variant none|code|send|sendwait|all; default all */
	int nmsgs;         /* --msgs LIST: messages per block, default 0,1,4,16 */
	int msgs[GIC_KERNEL_MAX_MSGS];
	size_t size;       /* --size 8|7168: bytes per message, default 8 */
	unsigned paths;    /* --path gda|nvshmem (repeatable): bits 1u << GIC_KERNEL_*;
			    * default gda */
	int msgs_given;    /* 1: --msgs was given (else nvshmem sends 16) */
	int work_us;       /* --work-us T (GPU, gda path): the work is sized so that
			    * "none" takes T us; 0: a fixed 4096 iterations; default
			    * GIC_KERNEL_WORK_PAPER: the paper's times (Figure 9:
			    * fma 2100 us, stream 2600 us) */
} kernel_state;

enum { GIC_KERNEL_WORK_PAPER = -1 };

/* "none", "code", "send", "sendwait" / "fma", "stream"; NULL when bad. */
const char *gic_kernel_variant_name(unsigned variant_bit);
const char *gic_kernel_caller_name(unsigned caller_bit);

/* 1 when live is one of GIC_KERNEL_LIVE_CASES. */
int gic_kernel_live_ok(int live);

/* The GPU mode's gda launch: -c blocks (default 528, the paper's) of -t
 * threads (default 256), a QP each, and the most messages a block sends. */
typedef struct kernel_gpu_shape {
	int blocks, threads, max_msgs;
	size_t region; /* blocks x max_msgs x size bytes */
} kernel_gpu_shape;

enum {
	GIC_KERNEL_GPU_MAX_BLOCKS = 2048,      /* one process: the fixture's QPs (ENV_MAX_QPS) */
	GIC_KERNEL_GPU_PAIR_MAX_BLOCKS = 896,  /* --procs 2: gpu_pair.h's GPU_PAIR_MAX_QPS */
	GIC_KERNEL_GPU_MAX_REGION = 256 << 20, /* blocks x messages x size */
};

/* *s from o and st; 0, or EINVAL after a message when --live is not a
 * GPU count, the blocks are above max_blocks or the region above
 * GIC_KERNEL_GPU_MAX_REGION. */
int gic_kernel_gpu_shape(const gic_opts *o, const kernel_state *st, int max_blocks,
			 kernel_gpu_shape *s);

/* GPU mode (bench/gic/gpu_kernel.cu). */
int gic_gpu_kernel(const gic_opts *o, const kernel_state *st, const gic_run_info *info,
		   gic_sink *sink);

/* --procs 2 in GPU mode: the gda path's configurations as this PE of pair
 * (gpu_pair.h), a phase each: PE 0 runs and times the enclosing kernels
 * (its blocks' QPs connected to PE 1's through softnic's GPU peers, its
 * region the source), PE 1 clears its region (the destination) before
 * each configuration and checks every message after it. 0 or an errno. */
struct gic_pair;
int gic_gpu_kernel_pe(struct gic_pair *pair, const gic_opts *o, const kernel_state *st);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_KERNEL_H */
