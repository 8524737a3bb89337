/*
 * bench/gic/pe_gpu.cuh - what the two library PE programs share, the
 * NVSHMEM PEs (nvshmem_pe.cu) and the NCCL GIN PEs (nccl_pe.cu), before
 * their transports (pe_bodies.cuh): the globaltimer, the payload words,
 * the SM-clock kernel, the GPU count, the words checks want, and samples
 * as a result's.
 */
#ifndef GIC_BENCH_PE_GPU_CUH
#define GIC_BENCH_PE_GPU_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "exp.h"
#include "pe_launch.h"

enum {
	PE_LAT_SLOTS = 1 << 16, /* lat: destination slots of the one-way runs */
	PE_RATE_SLOTS = 64,     /* rate: destination slots per thread */
	PE_ROUNDS = 5,          /* rate: measured rounds */
};

/* A PE's lat sample, as its kernels write it. */
typedef struct pe_sample {
	long long issue;  /* cycles */
	long long total;  /* cycles: to the completion's return, or to the answer */
	int rc;           /* 0, ETIMEDOUT, or EIO (a wrong answer) */
	int pad;
} pe_sample;

/* The GPU's globaltimer, ns. */
static __device__ __forceinline__ uint64_t pe_now_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* The payload of slot (or sample) i under tag: never 0, distinct per i. */
static __host__ __device__ __forceinline__ uint64_t pe_val(uint64_t i, uint64_t tag)
{
	return (tag << 56) | (((i + 1) * 0x10001ull) & 0x00ffffffffffffffull);
}

/* One thread: the SM clock into *mhz, 20 ms of clock64 against globaltimer. */
static __global__ void pe_clock_kernel(double *mhz)
{
	uint64_t t0 = pe_now_ns();
	long long c0 = clock64();

	while (pe_now_ns() - t0 < 20000000ull)
		;
	*mhz = (double)(clock64() - c0) / (double)(pe_now_ns() - t0) * 1e3;
}

/* The CUDA devices this process sees; 0 when CUDA cannot count them (its
 * error is cleared). */
static int pe_gpu_count(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError();
		n = 0;
	}
	return n;
}

/* The words pe_check wants of a one-way lat run: pe_val(i, *tag). */
static uint64_t pe_tag_want(size_t i, const void *tag)
{
	return pe_val(i, *(const uint64_t *)tag);
}

/* The words pe_check wants of a rate round: word i is the source's word i
 * (pattern tag 4) when its thread wrote that slot (*n messages per thread
 * cover the first *n of its PE_RATE_SLOTS slots), else 0. */
static uint64_t pe_rate_want(size_t i, const void *n)
{
	return (int)(i % PE_RATE_SLOTS) < *(const int *)n ? pe_val(i, 4) : 0;
}

/* Summarizes h[0..n)'s total (or issue) cycles as us at mhz (dropping the
 * first warmup) into r->s. */
static void pe_set_cycles(gic_result *r, const pe_sample *h, int n, int total_not_issue,
			  double mhz, int warmup)
{
	gic_samples s;

	gic_samples_init(&s, (size_t)n);
	for (int i = 0; i < n; i++)
		gic_samples_add(&s, (double)(total_not_issue ? h[i].total : h[i].issue) / mhz);
	gic_result_set_samples(r, &s, (size_t)warmup);
	gic_samples_free(&s);
}

#endif /* GIC_BENCH_PE_GPU_CUH */
