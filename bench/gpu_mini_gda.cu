/*
 * gic-gpu-bench: mini-gda on the GPU, measured (issue 3's benchmarks).
 *
 *   issue    issue time of one 8-byte inline write for each ordering variant
 *            of Table 4, beside a floor (the same stores with no queue logic)
 *            measured in the same run, and put+completion
 *   rate     Table 5's rows: message rate against threads, QPs, SMs, WQEs
 *            per doorbell and publication mode
 *   ceiling  the GPU engine's own execution rate with many QPs
 *
 * `gic-gpu-bench [issue|rate|ceiling|all] [cpu|gpu]` (default all, gpu).
 * Every write carries a distinct value to a distinct slot; every slot is
 * checked after every run, and a mismatch fails the program (exit 1).
 * Times: issue in SM cycles (clock64) converted with the SM clock measured
 * in the run; rates from %globaltimer spans.
 */
#include <string>

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
/* issue */

typedef struct sample {
	long long issue_cycles;
	unsigned long long putc_ns;
	int rc;
} sample;

#define ISSUE_KERNEL(O)                                                                     \
	__global__ void issue_k_##O(gic_sq *g, uint64_t *dst, uint32_t rkey, int n, sample *out) \
	{                                                                                   \
		gic_sq s;                                                                   \
		gic_cq c;                                                                   \
		gic_sq_local_begin(&s, &c, g);                                              \
		for (int i = 0; i < n; i++) {                                               \
			uint64_t v = val(i, 7), pos;                                        \
			uint64_t raddr = (uint64_t)&dst[i];                                 \
			unsigned long long t0 = gic_now_ns();                               \
			/* The payload and address are inputs: made before the clock */    \
			asm volatile("" : "+l"(v), "+l"(raddr));                            \
			long long c0 = clock64();                                           \
			int rc = gic_sq_reserve_excl(&s, 1, &pos, O, t0 + ENV_DEADLINE_NS); \
			if (!rc) {                                                          \
				gic_wqe_write_inline_u64(&s, pos, raddr, rkey, v, SIG);     \
				gic_sq_note_signaled(&s, pos + 1, 0);                       \
				gic_sq_publish_excl(&s, O);                                 \
			}                                                                   \
			long long c1 = clock64();                                           \
			if (!rc)                                                            \
				rc = gic_sq_wait_retired(&s, s.ready, 0, O, DL);            \
			out[i].issue_cycles = c1 - c0;                                      \
			out[i].putc_ns = gic_now_ns() - t0;                                 \
			out[i].rc = rc;                                                     \
			if (rc && rc != EIO) /* EIO: the engine failed the WQE; */        \
				break;       /* the issue time still counts */         \
		}                                                                           \
		gic_sq_local_end(g, &s);                                                    \
	}

/* The same stores as one post (three 16-byte WQE segments, doorbell record,
 * doorbell, the variant's fences) into scratch memory of the same placement,
 * with no reservation, index or CQ logic. */
#define FLOOR_KERNEL(O)                                                                     \
	__global__ void floor_k_##O(gic_sq *g, int n, sample *out)                          \
	{                                                                                   \
		gic_sq s = *g;                                                              \
		for (int i = 0; i < n; i++) {                                               \
			uint4 seg = make_uint4(i, 1, 2, 3);                                 \
			uint8_t *w = s.wqes + (i & (s.bb_cnt - 1)) * 64;                    \
			long long c0 = clock64();                                           \
			gic_st_seg16(w, &seg);                                              \
			gic_st_seg16(w + 16, &seg);                                         \
			gic_st_seg16(w + 32, &seg);                                         \
			gic_sq_ring(&s, (uint64_t)i + 1, O);                                \
			out[i].issue_cycles = clock64() - c0;                               \
			out[i].putc_ns = 0;                                                 \
			out[i].rc = 0;                                                      \
		}                                                                           \
	}

#define STAMP(O) ISSUE_KERNEL(O) FLOOR_KERNEL(O)
STAMP(0) STAMP(1) STAMP(2) STAMP(3) STAMP(4) STAMP(5) STAMP(6)

typedef void (*issue_fn)(gic_sq *, uint64_t *, uint32_t, int, sample *);
typedef void (*floor_fn)(gic_sq *, int, sample *);
static const issue_fn issue_kernels[] = { issue_k_0, issue_k_1, issue_k_2, issue_k_3,
					  issue_k_4, issue_k_5, issue_k_6 };
static const floor_fn floor_kernels[] = { floor_k_0, floor_k_1, floor_k_2, floor_k_3,
					  floor_k_4, floor_k_5, floor_k_6 };
static const char *const order_names[] = {
	"none (unsafe)", "gpu-scope fence", "gpu-scope fence + fenced dbrec",
	"gpu-scope release store", "__threadfence()", "system-scope release store",
	"system-scope fence",
};
/* Table 4, P-IB, issue and put+completion (us). */
static const double paper_issue[] = { 0.19, 0.70, 0.93, 0.70, 1.22, 2.37, 2.62 };
static const double paper_putc[] = { 3.46, 4.03, 4.26, 4.00, 4.48, 5.66, 5.92 };

enum { ISSUE_N = 3000, ISSUE_WARMUP = 300 };

static void summarize(const sample *s, int n, int putc, double scale, gic_summary *out)
{
	gic_samples v;

	gic_samples_init(&v, n);
	for (int i = 0; i < n; i++)
		gic_samples_add(&v, (putc ? (double)s[i].putc_ns : (double)s[i].issue_cycles) * scale);
	gic_summarize(&v, ISSUE_WARMUP, out);
	gic_samples_free(&v);
}

/* A scratch view with the queue's shape in memory of the same placement. */
static gic_sq *scratch_view(gpu_env *e, void **mem)
{
	gic_sq s, *d;
	size_t ring = 1024 * 64;

	if (e->cfg.gpu_engine)
		CUDA_OK(cudaMalloc(mem, ring + 128));
	else
		*mem = gpu_mapped_alloc(ring + 128, 4096, NULL);
	memset(&s, 0, sizeof(s));
	s.wqes = (uint8_t *)*mem;
	s.dbrec = (uint32_t *)((uint8_t *)*mem + ring);
	s.db = (uint64_t *)((uint8_t *)*mem + ring + 64);
	s.bb_cnt = 1024;
	CUDA_OK(cudaMalloc(&d, sizeof(s)));
	CUDA_OK(cudaMemcpy(d, &s, sizeof(s), cudaMemcpyHostToDevice));
	return d;
}

/* Waits for a sample kernel and copies its samples back. Returns the
 * number of writes that failed (-1: the kernel itself failed). */
static int run_sample_kernel(gpu_env *e, sample *d, sample *h, const char *what, softnic_qp *qp)
{
	int failed = 0;

	CUDA_OK(cudaGetLastError());
	if (gpu_env_wait(e, what, 60))
		return -1;
	CUDA_OK(cudaMemcpyAsync(h, d, sizeof(sample) * ISSUE_N, cudaMemcpyDeviceToHost, e->stream));
	if (gpu_env_wait(e, what, 10))
		return -1;
	for (int i = 0; i < ISSUE_N; i++) {
		if (h[i].rc && !failed++)
			fprintf(stderr, "%s: write %d: rc %d (%s)\n", what, i, h[i].rc,
				softnic_qp_error(qp));
		if (h[i].rc && h[i].rc != EIO)
			return -1;
	}
	return failed;
}

static void bench_issue(int gpu_engine, double mhz, FILE *log)
{
	gpu_env_cfg cfg = { gpu_engine, GIC_ORDER_COUNT, 10, 4 << 20, 0, 4, 4 };
	sample *d, *h = (sample *)malloc(sizeof(sample) * ISSUE_N);
	gpu_env e;
	void *scratch_mem;
	gic_sq *scratch;

	CUDA_OK(cudaMalloc(&d, sizeof(sample) * ISSUE_N));
	gpu_env_open(&e, &cfg);
	scratch = scratch_view(&e, &scratch_mem);
	printf("\nissue: one thread, one QP, 8-byte inline, %d samples after %d warm-up; queues in %s "
	       "memory, softnic %s engine; SM clock %.0f MHz\n", ISSUE_N - ISSUE_WARMUP, ISSUE_WARMUP,
	       gpu_engine ? "GPU" : "mapped host", gpu_engine ? "GPU" : "CPU", mhz);
	printf("%-31s %8s %8s %8s | %8s %6s | %8s | %9s %8s\n", "ordering", "p50 us", "p99", "max",
	       "floor", "ratio", "paper", "put+c p50", "paper");
	for (int o = 0; o < GIC_ORDER_COUNT; o++) {
		gic_summary is, fl, pc;

		int bad;

		issue_kernels[o]<<<1, 1, 0, e.stream>>>(e.d_sq + o, (uint64_t *)e.dst,
							softnic_mr_rkey(e.dst_mr), ISSUE_N, d);
		bad = run_sample_kernel(&e, d, h, order_names[o], e.qp[o]);
		if (bad < 0 || (bad && o != GIC_ORDER_NONE) ||
		    (!bad && !validate(&e, ISSUE_N, ISSUE_N, 7, order_names[o]))) {
			failures++;
			continue;
		}
		summarize(h, ISSUE_N, 0, 1.0 / mhz, &is);
		summarize(h, ISSUE_N, 1, 1e-3, &pc);
		floor_kernels[o]<<<1, 1, 0, e.stream>>>(scratch, ISSUE_N, d);
		run_sample_kernel(&e, d, h, "floor", e.qp[o]);
		summarize(h, ISSUE_N, 0, 1.0 / mhz, &fl);
		printf("%-31s %8.3f %8.3f %8.3f | %8.3f %6.2f | %8.2f | %9.3f %8.2f\n", order_names[o],
		       is.p50, is.p99, is.max, fl.p50, is.p50 / fl.p50, paper_issue[o],
		       bad ? 0.0 : pc.p50, paper_putc[o]);
		if (bad) /* only the unordered variant gets here */
			printf("%-31s   unsafe, as named: the engine read %d of %d WQEs before their "
			       "stores landed (error CQEs); put+completion not measured\n", "", bad,
			       ISSUE_N);
		if (log) {
			fprintf(log, "[%s engine] %s\n", gpu_engine ? "gpu" : "cpu", order_names[o]);
			gic_summary_print(log, "  issue", &is, "us");
			gic_summary_print(log, "  floor", &fl, "us");
			gic_summary_print(log, "  put+completion", &pc, "us");
		}
		CUDA_OK(cudaMemsetAsync(e.dst, 0, ISSUE_N * 8, e.stream));
	}
	gpu_env_close(&e);
	if (gpu_engine)
		cudaFree(scratch_mem);
	else
		gpu_mapped_free(scratch_mem, NULL);
	cudaFree(scratch);
	cudaFree(d);
	free(h);
}

/* ------------------------------------------------------------------ */
/* rate (Table 5) */

enum rate_mode { RM_EXCL, RM_LOCK, RM_HANDOFF, RM_WARP };

typedef struct rate_row {
	const char *name;
	int threads, qps, blocks, batch, mode;
	double paper; /* M msg/s, P-IB */
} rate_row;

static const rate_row rate_rows[] = {
	{ "1 thread, 1 QP, batch 1", 1, 1, 1, 1, RM_EXCL, 1.79 },
	{ "1 thread, 1 QP, batch 16", 1, 1, 1, 16, RM_EXCL, 4.70 },
	{ "32 threads, 1 QP, lock per WQE", 32, 1, 1, 1, RM_LOCK, 1.27 },
	{ "256 threads, 1 QP, per-thread handoff", 256, 1, 1, 1, RM_HANDOFF, 2.60 },
	{ "32 threads, 1 QP, warp-cooperative", 32, 1, 1, 32, RM_WARP, 21.6 },
	{ "256 threads, 1 QP, warp-cooperative", 256, 1, 1, 32, RM_WARP, 30.7 },
	{ "16 thr, 16 QPs, 16 SMs, batch 1", 16, 16, 16, 1, RM_EXCL, 27.9 },
	{ "16 thr, 16 QPs, 16 SMs, batch 16", 16, 16, 16, 16, RM_EXCL, 74.4 },
	{ "32 thr, 32 QPs, 1 SM, batch 16", 32, 32, 1, 16, RM_EXCL, 133 },
	{ "64 thr, 64 QPs, 1 SM, batch 16", 64, 64, 1, 16, RM_EXCL, 206 },
	{ "64 thr, 64 QPs, 64 SMs, batch 16", 64, 64, 64, 16, RM_EXCL, 260 },
};

typedef struct span {
	unsigned long long t0, t1; /* start; end after the final drain */
	unsigned long long tp;     /* after the last doorbell (posting done) */
	int rc;
	int pad;
} span;

/* Thread t owns QP t: batches of `batch` WQEs per doorbell; the last WQE
 * of a batch is signaled whenever the batch ends on a multiple of 16. */
__global__ void rate_excl(gic_sq *g, uint64_t *dst, uint32_t rkey, int per, int batch, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq s;
	gic_cq c;
	int rc = 0;

	gic_sq_local_begin(&s, &c, &g[t]);
	out[t].t0 = gic_now_ns();
	for (int i = 0; i < per && !rc; i += batch) {
		int n = per - i < batch ? per - i : batch;

		for (int j = 0; j < n && !rc; j++) {
			uint64_t pos, v = val(i + j, t);
			int k = i + j + 1, sig = j + 1 == n && (k % 16 == 0 || k == per);

			rc = gic_sq_reserve_excl(&s, 1, &pos, GIC_ORDER_FENCE_GPU, DL);
			if (rc)
				break;
			gic_wqe_write_inline_u64(&s, pos, (uint64_t)&dst[(uint64_t)t * per + i + j],
						 rkey, v, sig ? SIG : 0);
			if (sig)
				gic_sq_note_signaled(&s, pos + 1, 0);
		}
		gic_sq_publish_excl(&s, GIC_ORDER_FENCE_GPU);
	}
	out[t].tp = gic_now_ns();
	if (!rc)
		rc = gic_sq_quiet(&s, GIC_ORDER_FENCE_GPU, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
	gic_sq_local_end(&g[t], &s);
}

/* Threads share QP 0, one lock per WQE (reserve, build, doorbell). */
__global__ void rate_lock(gic_sq *sq, uint64_t *dst, uint32_t rkey, int per, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int rc = 0;

	out[t].t0 = gic_now_ns();
	for (int i = 0; i < per && !rc; i++)
		rc = gic_sq_locked_write_inline_u64(sq, (uint64_t)&dst[(uint64_t)t * per + i], rkey,
						    val(i, t), 16, GIC_ORDER_FENCE_GPU, DL);
	out[t].tp = gic_now_ns();
	if (!rc && !(rc = gic_sq_post_lock(sq, DL))) {
		rc = gic_sq_quiet(sq, GIC_ORDER_FENCE_GPU, DL);
		gic_sq_post_unlock(sq);
	}
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* Threads share QP 0, slots handed off per thread in reservation order. */
__global__ void rate_handoff(gic_sq *sq, uint64_t *dst, uint32_t rkey, int per, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int rc = 0;
	uint64_t last = 0;

	out[t].t0 = gic_now_ns();
	for (int i = 0; i < per && !rc; i++)
		rc = gic_sq_handoff_write_inline_u64(sq, (uint64_t)&dst[(uint64_t)t * per + i], rkey,
						     val(i, t), 16, GIC_ORDER_FENCE_GPU, DL, NULL);
	last = gic_ld_acquire_gpu_u64(&sq->ready);
	out[t].tp = gic_now_ns();
	if (!rc)
		rc = gic_sq_wait_retired(sq, last, 1, GIC_ORDER_FENCE_GPU, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* Warps share QP 0; each round a warp posts 32 WQEs with one doorbell. */
__global__ void rate_warp(gic_sq *sq, uint64_t *dst, uint32_t rkey, int per, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int rc = 0;
	gic_sq_warp w;

	gic_sq_warp_begin(&w, sq);
	out[t].t0 = gic_now_ns();
	for (int i = 0; i < per && !rc; i++) {
		uint64_t v = val(i, t);

		rc = gic_sq_warp_write_inline(&w, (uint64_t)&dst[(uint64_t)t * per + i], rkey, &v, 8,
					      1, GIC_ORDER_FENCE_GPU, DL);
	}
	out[t].tp = gic_now_ns();
	if (!rc && (t & 31) == 0)
		rc = gic_sq_wait_retired(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1,
					 GIC_ORDER_FENCE_GPU, DL);
	rc = __shfl_sync(0xffffffffu, rc, 0);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

static void launch_rate(gpu_env *e, const rate_row *r, int per, span *d)
{
	int tpb = r->threads / r->blocks;
	uint32_t rkey = softnic_mr_rkey(e->dst_mr);
	uint64_t *dst = (uint64_t *)e->dst;

	switch (r->mode) {
	case RM_EXCL:
		rate_excl<<<r->blocks, tpb, 0, e->stream>>>(e->d_sq, dst, rkey, per, r->batch, d);
		break;
	case RM_LOCK:
		rate_lock<<<r->blocks, tpb, 0, e->stream>>>(e->d_sq, dst, rkey, per, d);
		break;
	case RM_HANDOFF:
		rate_handoff<<<r->blocks, tpb, 0, e->stream>>>(e->d_sq, dst, rkey, per, d);
		break;
	default:
		rate_warp<<<r->blocks, tpb, 0, e->stream>>>(e->d_sq, dst, rkey, per, d);
		break;
	}
}

/* Runs one row on a fresh env. Each QP's ring holds all its writes, so
 * posting never waits for the engine: *post is the GPU-side posting rate
 * (first post to last doorbell), the return value the end-to-end rate
 * with the final drain (softnic-bound), both M msg/s; 0 on failure. */
static double run_rate_row(const rate_row *r, int gpu_engine, int engine_blocks, double *post)
{
	gpu_env_cfg cfg = { gpu_engine, r->qps, 14, 16 << 20, 0, engine_blocks, 1 };
	int per = (1 << 14) * r->qps / r->threads - (r->mode == RM_WARP ? 0 : 1);
	span *d, *h = (span *)calloc(r->threads, sizeof(span));
	unsigned long long t0 = ~0ull, t1 = 0, tp = 0;
	gpu_env e;
	double rate = 0;

	gpu_env_open(&e, &cfg);
	CUDA_OK(cudaMalloc(&d, sizeof(span) * r->threads));
	launch_rate(&e, r, per, d);
	CUDA_OK(cudaGetLastError());
	if (gpu_env_wait(&e, r->name, 120) == 0 &&
	    cudaMemcpy(h, d, sizeof(span) * r->threads, cudaMemcpyDeviceToHost) == cudaSuccess) {
		int ok = 1;

		for (int t = 0; t < r->threads; t++) {
			if (h[t].rc) {
				fprintf(stderr, "%s: thread %d rc %d (%s)\n", r->name, t, h[t].rc,
					softnic_qp_error(e.qp[0]));
				ok = 0;
				break;
			}
			t0 = h[t].t0 < t0 ? h[t].t0 : t0;
			t1 = h[t].t1 > t1 ? h[t].t1 : t1;
			tp = h[t].tp > tp ? h[t].tp : tp;
		}
		if (ok && validate(&e, (uint64_t)per * r->threads, per, 0, r->name)) {
			rate = (double)per * r->threads / (double)(t1 - t0) * 1e3;
			*post = (double)per * r->threads / (double)(tp - t0) * 1e3;
		}
		else
			failures++;
	} else {
		failures++;
	}
	gpu_env_close(&e);
	cudaFree(d);
	free(h);
	return rate;
}

static void bench_rate(int gpu_engine, int engine_blocks)
{
	printf("\nrate (M msg/s): 8-byte inline writes, GPU-scope fence ordering; 'posting' is the "
	       "GPU side (first post to last doorbell,\nrings sized so posting never waits), "
	       "'with drain' adds the wait for the last CQE on softnic's %s engine (%d blocks x 1 warp)\n",
	       gpu_engine ? "GPU" : "CPU", engine_blocks);
	printf("%-40s %10s %10s %8s %12s\n", "row", "posting", "paper", "ratio", "with drain");
	for (size_t i = 0; i < sizeof(rate_rows) / sizeof(rate_rows[0]); i++) {
		double post = 0, m = run_rate_row(&rate_rows[i], gpu_engine, engine_blocks, &post);

		printf("%-40s %10.2f %10.2f %8.2f %12.2f\n", rate_rows[i].name, post,
		       rate_rows[i].paper, post / rate_rows[i].paper, m);
		fflush(stdout);
	}
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
	ceil_fill<<<(nqps + 31) / 32, 32, 0, e->stream>>>(e->d_sq, (uint64_t *)e->dst,
							   softnic_mr_rkey(e->dst_mr), per,
							   (uint64_t)round * 1000, d_rc);
	ceil_ring<<<(nqps + 31) / 32, 32, 0, e->stream>>>(e->d_sq, d);
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
	static const int configs[][3] = { /* QPs, engine blocks, warps per block */
		{ 64, 64, 1 }, { 128, 64, 2 }, { 256, 64, 4 }, { 512, 128, 4 },
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

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int gpu_engine = !(argc > 2 && !strcmp(argv[2], "cpu"));
	FILE *log = getenv("OUT") ? fopen((std::string(getenv("OUT")) + "/gpu_bench.detail").c_str(), "w")
				  : NULL;
	cudaDeviceProp prop;
	char cpu[256];
	double mhz;

	setenv("CUDA_MODULE_LOADING", "EAGER", 1); /* DESIGN.md: the lazy-loading trap */
	CUDA_OK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	mhz = gpu_sm_clock_mhz(0);
	gic_cpu_state_line(cpu, sizeof(cpu));
	printf("gic-gpu-bench on %s (%d SMs), SM clock %.0f MHz (clock64 vs globaltimer); CPU: %s\n",
	       prop.name, prop.multiProcessorCount, mhz, cpu);
	if (!strcmp(what, "issue") || !strcmp(what, "all"))
		bench_issue(gpu_engine, mhz, log);
	if (!strcmp(what, "rate") || !strcmp(what, "all"))
		bench_rate(gpu_engine, 64);
	if (gpu_engine && (!strcmp(what, "ceiling") || !strcmp(what, "all")))
		bench_ceiling();
	printf("\nSM clock after the runs: %.0f MHz\n", gpu_sm_clock_mhz(0));
	if (log)
		fclose(log);
	printf("validation: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
