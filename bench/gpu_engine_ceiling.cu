/*
 * gic-gpu-ceiling: the softnic GPU engine's own execution rate (issue 3's
 * ceiling): 8-byte inline writes pre-built on many QPs, one doorbell per
 * QP, so that what is timed is the engine alone. Target: 260 M msg/s (the
 * CX-7 ceiling the paper reports), so that the engine never bounds the
 * GPU-side experiments. Every payload is checked after every round.
 *
 * The GPU-side experiments themselves are `gic lat` and `gic rate`.
 */
#include "../tests/gpu/gpu_env.h"

extern "C" {
#include "stats.h"
}

#define DL (gic_now_ns() + ENV_DEADLINE_NS)
#define SIG GIC_CTRL_CQ_UPDATE

static int failures;

static __host__ __device__ uint64_t val(uint64_t i, uint64_t tag)
{
	return (tag << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x5a5a5a5a00000001ull;
}

typedef struct span {
	unsigned long long t0, t1;
	int rc;
	int pad;
} span;

/* Checks that slot k of dst holds val(k % per, k / per + tag0), k < n. */
static int validate(gpu_env *e, uint64_t n, uint64_t per, uint64_t tag0, const char *what)
{
	uint64_t *h = (uint64_t *)malloc(n * 8);
	int ok = gpu_env_read(e, h, e->dst, n * 8) == 0;

	for (uint64_t k = 0; k < n && ok; k++) {
		uint64_t want = val(k % per, k / per + tag0);

		if (h[k] != want) {
			fprintf(stderr, "%s: slot %llu holds 0x%llx, want 0x%llx\n", what,
				(unsigned long long)k, (unsigned long long)h[k],
				(unsigned long long)want);
			ok = 0;
		}
	}
	free(h);
	if (!ok)
		failures++;
	return ok;
}

/* ------------------------------------------------------------------ */
/* ceiling: the GPU engine's own rate */

/* Thread t builds per WQEs on QP t without ringing. */
__global__ void ceil_fill(gic_sq *g, uint64_t *dst, uint32_t rkey, int per, uint64_t tag, int *rc)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq s;
	gic_cq c;

	gic_sq_local_begin(&s, &c, &g[t]);
	for (int i = 0; i < per && !rc[t]; i++) {
		uint64_t pos, v = val(i, t + tag);
		int sig = i % 64 == 63 || i + 1 == per;

		rc[t] = gic_sq_reserve_excl(&s, 1, &pos, GIC_ORDER_FENCE_GPU, DL);
		if (rc[t])
			break;
		gic_wqe_write_inline_u64(&s, pos, (uint64_t)&dst[(uint64_t)t * per + i], rkey, v,
					 sig ? SIG : 0);
		if (sig)
			gic_sq_note_signaled(&s, pos + 1, 0);
	}
	gic_sq_local_end(&g[t], &s);
}

/* Thread t rings QP t's doorbell for everything built and waits for it. */
__global__ void ceil_ring(gic_sq *g, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq s;
	gic_cq c;

	gic_sq_local_begin(&s, &c, &g[t]);
	out[t].t0 = gic_now_ns();
	gic_sq_publish_excl(&s, GIC_ORDER_FENCE_GPU);
	out[t].rc = gic_sq_wait_retired(&s, s.ready, 0, GIC_ORDER_FENCE_GPU, DL);
	out[t].t1 = gic_now_ns();
	gic_sq_local_end(&g[t], &s);
}

/* One round: fill, ring, validate; returns M msg/s or 0. */
static double ceiling_round(gpu_env *e, int nqps, int per, int round, span *d, int *d_rc)
{
	span *h = (span *)calloc(nqps, sizeof(span));
	unsigned long long t0 = ~0ull, t1 = 0;
	double rate = 0;
	int ok = 1;

	CUDA_OK(cudaMemsetAsync(d_rc, 0, sizeof(int) * nqps, e->stream));
	ceil_fill<<<(nqps + 31) / 32, nqps < 32 ? nqps : 32, 0, e->stream>>>(e->d_sq, (uint64_t *)e->dst,
							   softnic_mr_rkey(e->dst_mr), per,
							   (uint64_t)round * 1000, d_rc);
	ceil_ring<<<(nqps + 31) / 32, nqps < 32 ? nqps : 32, 0, e->stream>>>(e->d_sq, d);
	CUDA_OK(cudaGetLastError());
	if (gpu_env_wait(e, "ceiling", 120) ||
	    cudaMemcpy(h, d, sizeof(span) * nqps, cudaMemcpyDeviceToHost) != cudaSuccess)
		ok = 0;
	for (int t = 0; t < nqps && ok; t++) {
		if (h[t].rc) {
			fprintf(stderr, "ceiling: QP %d rc %d (%s)\n", t, h[t].rc, softnic_qp_error(e->qp[t]));
			ok = 0;
		}
		t0 = h[t].t0 < t0 ? h[t].t0 : t0;
		t1 = h[t].t1 > t1 ? h[t].t1 : t1;
	}
	if (ok && validate(e, (uint64_t)nqps * per, per, (uint64_t)round * 1000, "ceiling"))
		rate = (double)nqps * per / (double)(t1 - t0) * 1e3;
	else
		failures++;
	free(h);
	return rate;
}

static void bench_ceiling(void)
{
	static const int configs[][3] = { /* QPs, engine blocks, warps per block (one QP: the single-queue drain) */
		{ 1, 1, 1 }, { 64, 64, 1 }, { 128, 64, 2 }, { 256, 64, 4 }, { 512, 128, 4 },
	};

	printf("\nceiling: the GPU engine's own rate, 8-byte inline writes pre-built on many QPs, "
	       "one doorbell per QP; median of 5 rounds (target 260 M msg/s)\n");
	printf("%6s %8s %6s %12s %12s\n", "QPs", "blocks", "warps", "M msg/s", "min..max");
	for (size_t c = 0; c < sizeof(configs) / sizeof(configs[0]); c++) {
		int nqps = configs[c][0], per = 4000;
		gpu_env_cfg cfg = { 1, nqps, 12, (size_t)nqps * per * 8, 0, configs[c][1],
				    configs[c][2], 0, (size_t)1 << 30, 0 };
		gic_samples v;
		gic_summary sm;
		gpu_env e;
		span *d;
		int *d_rc;

		gpu_env_open(&e, &cfg);
		CUDA_OK(cudaMalloc(&d, sizeof(span) * nqps));
		CUDA_OK(cudaMalloc(&d_rc, sizeof(int) * nqps));
		gic_samples_init(&v, 8);
		for (int round = 0; round < 6; round++) {
			double m = ceiling_round(&e, nqps, per, round, d, d_rc);

			if (round) /* the first round warms the managed pages up */
				gic_samples_add(&v, m);
		}
		gic_summarize(&v, 0, &sm);
		printf("%6d %8d %6d %12.1f %5.1f..%.1f\n", nqps, configs[c][1], configs[c][2], sm.p50,
		       sm.min, sm.max);
		fflush(stdout);
		gic_samples_free(&v);
		gpu_env_close(&e);
		cudaFree(d);
		cudaFree(d_rc);
	}
}

int main(void)
{
	cudaDeviceProp prop;
	char cpu[256];

	setenv("CUDA_MODULE_LOADING", "EAGER", 1); /* docs/DESIGN.md §4.5: the lazy-loading trap */
	CUDA_OK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	gic_cpu_state_line(cpu, sizeof(cpu));
	printf("gic-gpu-ceiling on %s (%d SMs), SM clock %.0f MHz; CPU: %s\n", prop.name,
	       prop.multiProcessorCount, gpu_sm_clock_mhz(0), cpu);
	bench_ceiling();
	printf("validation: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
