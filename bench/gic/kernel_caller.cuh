/*
 * bench/gic/kernel_caller.cuh - the enclosing kernel of `gic kernel`
 * (exp_kernel.h): the caller's body, shared by mini-gda's variants
 * (gpu_kernel.cu) and NVSHMEM's (nvshmem_pe.cu), so that both programs'
 * "none" rows run the same source and their variants differ from it only
 * in what sits between the two halves of work.
 *
 * Each thread holds LIVE values in registers across the whole kernel:
 *   fma     every iteration applies an FMA to each value (compute-bound);
 *   stream  every iteration adds one value per slot read from a large array
 *           (memory-bound).
 * kc_caller() loads the values from data, runs iterations [0, iters/2),
 * calls MID::between (the variant: nothing, or a send behind a run-time flag),
 * runs [iters/2, iters) and stores the values back. Everything is forced
 * inline: the caller is one kernel, as a real one would be.
 */
#ifndef GIC_BENCH_KERNEL_CALLER_CUH
#define GIC_BENCH_KERNEL_CALLER_CUH

#include <stddef.h>

enum { K_FMA = 0, K_STREAM = 1 };

/* Iterations [from, to) of the caller's work on the live values. c.data
 * and c.stream_len: the stream's array (floats); the fma caller reads
 * neither. */
template <int CALLER, int LIVE, class CFG>
static __device__ __forceinline__ void kc_work(float (&v)[LIVE], const CFG &c, int from, int to,
					       size_t tid, size_t nthreads)
{
	for (int it = from; it < to; it++) {
		if (CALLER == K_FMA) {
#pragma unroll
			for (int k = 0; k < LIVE; k++)
				v[k] = fmaf(v[k], 0.999f, 0.001f * (float)k);
		} else {
			size_t base = (((size_t)it * nthreads + tid) * LIVE) % (c.stream_len - LIVE);
#pragma unroll
			for (int k = 0; k < LIVE; k++)
				v[k] += c.data[base + k];
		}
	}
}

/* The caller: thread tid's LIVE values in c.data[tid * LIVE ...] in and
 * out; MID::between(c) between the two halves of c.iters iterations
 * (the variant: for none an empty function, so the same kernel). CFG: the
 * kernel's by-value argument, with members float *data, size_t stream_len
 * and int iters (read where the kernel reads them, from its parameters). */
template <int CALLER, int LIVE, class CFG, class MID>
static __device__ __forceinline__ void kc_caller(const CFG &c)
{
	size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t nthreads = (size_t)gridDim.x * blockDim.x;
	float v[LIVE];

#pragma unroll
	for (int k = 0; k < LIVE; k++)
		v[k] = c.data[tid * LIVE + k];
	kc_work<CALLER, LIVE>(v, c, 0, c.iters / 2, tid, nthreads);
	MID::between(c);
	kc_work<CALLER, LIVE>(v, c, c.iters / 2, c.iters, tid, nthreads);
#pragma unroll
	for (int k = 0; k < LIVE; k++)
		c.data[tid * LIVE + k] = v[k];
}

#endif /* GIC_BENCH_KERNEL_CALLER_CUH */
