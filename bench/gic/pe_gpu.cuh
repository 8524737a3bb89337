/*
 * bench/gic/pe_gpu.cuh - what the two library PE programs share, the
 * NVSHMEM PEs (nvshmem_pe.cu) and the NCCL GIN PEs (nccl_pe.cu): the
 * globaltimer, the payload words, the SM-clock kernel, and the host
 * side's CUDA checks, stream waits with the job's time limit, pattern
 * fills and word checks. Every host helper takes the PE's record channel
 * (pe_launch.h) and ends the process through gic_pl_die on an error;
 * none returns an error code.
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

/* Ends the process (gic_pl_die: what, CUDA's reason) unless e is cudaSuccess. */
static void pe_cuda_ok(const gic_pl_pe *pl, cudaError_t e, const char *what)
{
	if (e != cudaSuccess)
		gic_pl_die(pl, what, cudaGetErrorString(e));
}

/* Waits for stream s within limit_s seconds; ends the process when it
 * does not finish in time or finishes with an error. */
static void pe_sync(const gic_pl_pe *pl, cudaStream_t s, int limit_s, const char *what)
{
	uint64_t deadline = gic_pl_now_ms() + (uint64_t)limit_s * 1000;
	cudaError_t e;

	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
		if (gic_pl_now_ms() > deadline)
			gic_pl_die(pl, what, "the GPU did not finish within the time limit");
		usleep(20);
	}
	pe_cuda_ok(pl, e, what);
}

/* The SM clock (MHz) measured now on stream s by pe_clock_kernel,
 * waited for with limit_s; ends the process when it is not measurable. */
static double pe_sm_clock(const gic_pl_pe *pl, cudaStream_t s, int limit_s)
{
	double *d, mhz = 0;

	pe_cuda_ok(pl, cudaMalloc(&d, sizeof(double)), "cudaMalloc");
	pe_clock_kernel<<<1, 1, 0, s>>>(d);
	pe_cuda_ok(pl, cudaMemcpyAsync(&mhz, d, sizeof(double), cudaMemcpyDeviceToHost, s),
		   "SM clock");
	pe_sync(pl, s, limit_s, "SM clock");
	cudaFree(d);
	if (!(mhz > 0))
		gic_pl_die(pl, "SM clock", "not measurable");
	return mhz;
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

/* Writes pe_val(i, tag) into the n device words at dev (on s, waited for). */
static void pe_fill(const gic_pl_pe *pl, cudaStream_t s, int limit_s, void *dev, size_t n,
		    uint64_t tag)
{
	uint64_t *pat = (uint64_t *)malloc(n * 8);

	if (!pat)
		gic_pl_die(pl, "pattern", "out of memory");
	for (size_t i = 0; i < n; i++)
		pat[i] = pe_val(i, tag);
	pe_cuda_ok(pl, cudaMemcpyAsync(dev, pat, n * 8, cudaMemcpyHostToDevice, s), "pattern");
	pe_sync(pl, s, limit_s, "pattern");
	free(pat);
}

/* Reads the n device words at dev back (on s, waited for); 1 when word i
 * holds want(i, arg) for every i, else 0 after printing the first wrong
 * word as "gic SUB: LIB PE R: WHAT: word ..." (pl->lib). */
static int pe_check(const gic_pl_pe *pl, cudaStream_t s, int limit_s,
		    const void *dev, size_t n, uint64_t (*want)(size_t i, const void *arg),
		    const void *arg, const char *what)
{
	uint64_t *h = (uint64_t *)malloc(n * sizeof(uint64_t));
	int ok = 1;

	if (!h)
		gic_pl_die(pl, what, "out of memory");
	pe_cuda_ok(pl, cudaMemcpyAsync(h, dev, n * sizeof(uint64_t), cudaMemcpyDeviceToHost, s),
		   what);
	pe_sync(pl, s, limit_s, what);
	for (size_t i = 0; i < n && ok; i++) {
		if (h[i] != want(i, arg)) {
			fprintf(stderr, "gic %s: %s PE %d: %s: word %zu holds 0x%016llx, "
				"expected 0x%016llx\n", pl->sub, pl->lib, pl->rank, what, i,
				(unsigned long long)h[i], (unsigned long long)want(i, arg));
			ok = 0;
		}
	}
	free(h);
	return ok;
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

/* 1 when every one of the n samples at h has rc 0. */
static int pe_samples_ok(const pe_sample *h, int n)
{
	int ok = 1;

	for (int i = 0; i < n; i++)
		ok &= h[i].rc == 0;
	return ok;
}

/* The fields every result of a PE shares: its subcommand, and transport. */
static void pe_result(const gic_pl_pe *pl, gic_result *r, const char *name, const char *metric,
		      const char *unit, const char *transport)
{
	gic_result_init(r, pl->sub, name, metric, unit);
	snprintf(r->transport, sizeof(r->transport), "%s", transport);
}

/* The rate of round: threads x msgs messages over span[0..1] ns, M msg/s. */
static double pe_rate_mps(int threads, int msgs, const unsigned long long *span)
{
	return (double)threads * msgs * 1e3 / (double)(span[1] - span[0]);
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
