/*
 * bench/gic/gpu_common.h - helpers shared by the GPU modes of `gic`
 * (bench/gic/gpu_*.cu). The fixtures are the GPU test suite's
 * (tests/gpu/gpu_env.h: two PEs on one softnic; tests/gpu/proxy_env.h:
 * mini-proxy with GPU producers).
 */
#ifndef GIC_BENCH_GPU_COMMON_H
#define GIC_BENCH_GPU_COMMON_H

#include "../../tests/gpu/gpu_env.h"
#include "../../tests/gpu/proxy_env.h"
#include "exp.h"

#include <errno.h>

/* Summarizes v[0..n) (dropping the first warmup) into r and emits it. */
void gpu_samples_emit(gic_sink *sink, gic_result *r, const double *v, int n, int warmup);

/* The row's transport into r->transport: gic_transport(o) with the mlx5
 * provider, else "softnic-gpu" or "softnic-cpu" as gpu_engine says. */
void gpu_result_transport(gic_result *r, const gic_opts *o, int gpu_engine);
/* The same name, returned. */
const char *gpu_transport_name(const gic_opts *o, int gpu_engine);

/* The NIC o names into the fixture's configuration (provider, device),
 * and the engine's SM placement (--engine-sms, for the GPU engine: set
 * c->gpu_engine first). */
void gpu_env_cfg_nic(gpu_env_cfg *c, const gic_opts *o);

/* Appends to r->params the SM split env e's engine ran with when it had
 * SMs of its own ("placement=green engine_sms=N caller_sms=M" and the SM
 * probe's counts; nothing for a shared engine: the run info says so), and
 * "engine_batch=N" when --engine-batch was given. It reads only what
 * gpu_env_open() recorded in e, so rows may be written after the close. */
void gpu_result_placement(gic_result *r, const gpu_env *e);
/* The same for mini-proxy's fixture: with --provider mlx5 its PEs are the
 * provider's (PROXY_NIC_MLX5) instead of softnic's CPU engine. */
void gpu_proxy_env_nic(proxy_env_cfg *c, const gic_opts *o);

/* 0 on softnic; with --provider mlx5, ENOTSUP after "gic <sub>: <what>
 * runs on softnic only" (a fixture option or a path the mlx5 provider's
 * GPU mode does not have). */
int gpu_softnic_only(const gic_opts *o, const char *sub, const char *what);

#define GPU_DEADLINE(ns) (gic_now_ns() + (ns))

/* The order of the GPU modes' posts on env e: fence-gpu (the paper's
 * rows; exact for softnic's GPU engine on this GPU) or fence-sys when the
 * queues' reader is outside the GPU (softnic's CPU engine, an mlx5
 * device: queues in host memory, read across PCIe, where a GPU-scope
 * fence does not order the WQE before the doorbell). Kernels take it as a
 * template parameter, so that the choice costs no register. */
static inline int gpu_env_post_order(const gpu_env *e)
{
	return !e->cfg.gpu_engine || e->cfg.provider == ENV_PROVIDER_MLX5 ? GIC_ORDER_FENCE_SYS
									    : GIC_ORDER_FENCE_GPU;
}

/* Sample index i tied to a clock reading. ptxas schedules ordinary
 * instructions freely across clock reads, and hoists the next sample's
 * input computation (payload hash, addresses, constant-bank loads) into
 * the current sample's timed span to fill its stalls. Deriving the inputs
 * from the index returned here makes them depend on the reading (the top
 * bit of a cycle count is zero, which ptxas cannot know), so they are
 * computed after the previous sample's clock stops. */
static __device__ __forceinline__ int gpu_after_clock(int i, long long clk)
{
	return i + (int)((unsigned long long)clk >> 63);
}

/* Waits (ENV_DEADLINE_NS at most) until the 8-byte word at p holds want:
 * a system-scope acquire, so that it serves words written by either softnic
 * engine, in GPU or mapped host memory. 0 or ETIMEDOUT. */
static __device__ __forceinline__ int gpu_wait_word(const uint64_t *p, uint64_t want)
{
	uint64_t deadline = gic_now_ns() + ENV_DEADLINE_NS;

	while (gic_ld_acquire_sys_u64(p) != want)
		if (gic_now_ns() > deadline)
			return ETIMEDOUT;
	return 0;
}

#endif /* GIC_BENCH_GPU_COMMON_H */
