/*
 * bench/gic/gpu_common.h - helpers shared by the GPU modes of `gic`
 * (bench/gic/gpu_*.cu). The fixtures are the GPU test suite's
 * (tests/gpu/gpu_env.h: two PEs on one softnic; tests/gpu/proxy_env.h:
 * mini-proxy with GPU producers).
 */
#ifndef GIC_BENCH_GPU_COMMON_H
#define GIC_BENCH_GPU_COMMON_H

#include "../../tests/gpu/gpu_env.h"
#include "exp.h"

/* Summarizes v[0..n) (dropping the first warmup) into r and emits it. */
void gpu_samples_emit(gic_sink *sink, gic_result *r, const double *v, int n, int warmup);

/* "softnic-gpu" or "softnic-cpu" into r->transport. */
void gpu_result_transport(gic_result *r, int gpu_engine);

#define GPU_DEADLINE(ns) (gic_now_ns() + (ns))

#endif /* GIC_BENCH_GPU_COMMON_H */
