/*
 * gic-gpu-pipeline: where one WQE's time goes on softnic's GPU engine
 * (docs/softnic.md, "The GPU engine's pipeline").
 *
 * One GPU thread posts single signaled 8-byte inline RDMA writes, one at
 * a time (build, doorbell record, doorbell with a GPU-scope fence, then
 * the CQE), on a GPU-engine softnic whose queues are in GPU memory, and
 * stamps its doorbell store, its sighting of the CQE and the return of
 * the poll (which consumes the CQE and writes the CQ's consumer record).
 * Run once with the engine's trace off, once with it on
 * (GIC_SOFTNIC_GPU_TRACE), it prints the median and p99 of every
 * step-to-step interval of a WQE's life: poster and engine stamps are
 * matched by WQE index; intervals between two stamps of one agent use
 * that SM's clock64, intervals across agents %globaltimer (whose
 * resolution is printed: it bounds what they can show). Before that it
 * times the memory primitives the pipeline is made of, one thread,
 * dependent chains (the cost model's units).
 *
 * `gic-gpu-pipeline [--check] [-n N]`: --check only verifies that the
 * trace records every step of every WQE in order (exit 1 when not); it
 * prints no timing. Every payload is checked in both modes.
 *
 * `gic-gpu-pipeline --batch R [--ring L]`: where the time of one QP's drain
 * goes. One warp posts R rounds of 32 8-byte inline writes, one doorbell
 * per round and the last WQE signaled (gic rate's t32-q1-warp row), as
 * fast as the ring of 2^L BBs lets it (default 14, gic rate's: posting
 * never waits; 10: the -wrap rows' ring, reclaimed from CQEs); run with the trace off (the rate) and on, it prints the
 * engine warp's timeline as step-to-step intervals (every pair of
 * consecutive records of the busy warp, its own clock64), their share of
 * the traced span, and the batch sizes the engine took. Payloads checked.
 */
#include "gpu_env.h"

#include <unistd.h>

#define DL (gic_now_ns() + ENV_DEADLINE_NS)

enum { MAX_N = 4000, WARM = 50 };

typedef struct psample {
	long long c0, c_db, c_seen, c_done; /* poster clock64 */
	uint64_t t_db, t_seen;              /* poster %globaltimer */
	int rc;
	int pad;
} psample;

static __host__ __device__ uint64_t pval(uint64_t i)
{
	return (i * 0x9e3779b97f4a7c15ull) ^ 0x7070707000000005ull;
}

/* The poster: WQE i at position i (one BB each), so its index is i. */
__global__ void k_post(gic_sq *g, uint8_t *dst, uint32_t rkey, int n, psample *out)
{
	gic_sq s;
	gic_cq cq;

	gic_sq_local_begin(&s, &cq, g);
	for (int i = 0; i < n; i++) {
		psample r;
		uint64_t pos, raddr = (uint64_t)(dst + (uint64_t)i * 8), deadline = DL;
		gic_cqe64 *cqe;

		memset(&r, 0, sizeof(r));
		r.c0 = clock64();
		r.rc = gic_sq_reserve_excl(&s, 1, &pos, GIC_ORDER_FENCE_GPU, deadline);
		if (!r.rc) {
			gic_wqe_write_inline_u64(&s, pos, raddr, rkey, pval(i), GIC_CTRL_CQ_UPDATE);
			gic_sq_note_signaled(&s, pos + 1, 0);
			gic_sq_publish_excl(&s, GIC_ORDER_FENCE_GPU);
			r.c_db = clock64();
			r.t_db = gic_now_ns();
			/* The CQE's sighting: the tail load that finds it owned. */
			cqe = &cq.cqes[cq.ci & (cq.cqe_cnt - 1)];
			while (!gic_cqe_sw_owned(gic_cqe_load_tail(cqe, GIC_ORDER_FENCE_GPU), cq.ci,
						 cq.cqe_cnt)) {
				if (gic_now_ns() > deadline) {
					r.rc = ETIMEDOUT;
					break;
				}
			}
			r.c_seen = clock64();
			r.t_seen = gic_now_ns();
			/* Consumes it as gic lat's put+completion does. */
			if (!r.rc)
				r.rc = gic_sq_wait_retired(&s, s.ready, 0, GIC_ORDER_FENCE_GPU, deadline);
			r.c_done = clock64();
		}
		out[i] = r;
		if (r.rc)
			break;
	}
	gic_sq_local_end(g, &s);
}

/* The batch poster: one warp, R rounds of 32 one-BB inline writes (WQE
 * r * 32 + l writes pval of its number to slot r * 32 + l), the round's
 * last WQE signaled; lane 0 stamps each round's return (t_round[r]; round
 * 0's after its completion) and the end of the final quiet (t_round[R]). */
__global__ void k_post_warp(gic_sq *g, uint8_t *dst, uint32_t rkey, int rounds, uint64_t *t_round,
			    int *rc_out)
{
	gic_sq_warp w;
	int lane = threadIdx.x & 31, rc = 0;
	uint64_t deadline = DL;

	gic_sq_warp_begin(&w, g);
	for (int r = 0; r < rounds && !rc; r++) {
		uint64_t i = (uint64_t)r * 32 + (uint64_t)lane, v = pval(i);

		rc = gic_sq_warp_write_inline(&w, (uint64_t)(dst + i * 8), rkey, &v, 8, 1,
					      GIC_ORDER_FENCE_GPU, deadline);
		/* Round 0 completes before the clock starts: the engine's start
		 * (its first sighting can lag the launch by hundreds of us)
		 * stays out of the rate. */
		if (r == 0 && !rc && lane == 0)
			rc = gic_sq_wait_retired(g, gic_ld_acquire_gpu_u64(&g->ready), 1,
						 GIC_ORDER_FENCE_GPU, deadline);
		rc = r == 0 ? __shfl_sync(0xffffffffu, rc, 0) : rc;
		if (lane == 0)
			t_round[r] = gic_now_ns();
	}
	if (!rc && lane == 0)
		rc = gic_sq_wait_retired(g, gic_ld_acquire_gpu_u64(&g->ready), 1, GIC_ORDER_FENCE_GPU,
					 deadline);
	rc = __shfl_sync(0xffffffffu, rc, 0);
	if (lane == 0) {
		t_round[rounds] = gic_now_ns();
		*rc_out = rc;
	}
}

/* ------------------------------------------------------------------ */
/* Primitive costs: one thread, ITER dependent operations each. */

enum { ITER = 512 };
enum {
	P_LD_PLAIN, P_LD_RELAXED_GPU, P_LD_RELAXED_SYS, P_LD_ACQUIRE_GPU, P_LD_ACQUIRE_SYS,
	P_LD_AFTER_ACQUIRE, P_CAS_ACQUIRE_GPU, P_ST_FENCE_GPU, P_ST_FENCE_SYS, P_ST_RELEASE_GPU,
	P_GLOBALTIMER, P_COUNT
};
static const char *const prim_name[P_COUNT] = {
	"plain load (L1 hit), dependent",
	"ld.relaxed.gpu, dependent (L2)",
	"ld.relaxed.sys, dependent",
	"ld.acquire.gpu, dependent",
	"ld.acquire.sys, dependent",
	"plain load after ld.acquire.gpu (pair)",
	"atom.cas.acquire.gpu (lock take)",
	"store + fence.acq_rel.gpu",
	"store + fence.acq_rel.sys",
	"store + st.release.gpu (CQE tail)",
	"%globaltimer read",
};

__global__ void k_prims(uint64_t *w, int which, long long *cycles)
{
	uint64_t v = 0, *p = w;
	long long c0;

	w[8] = 0; /* another line for the paired load */
	c0 = clock64();
	for (int i = 0; i < ITER; i++) {
		switch (which) {
		case P_LD_PLAIN:
			v = p[v];
			break;
		case P_LD_RELAXED_GPU:
			v = gic_chain_ld_gpu_u64(p + v);
			break;
		case P_LD_RELAXED_SYS:
			v = gic_ld_relaxed_sys_u64(p + v);
			break;
		case P_LD_ACQUIRE_GPU:
			v = gic_ld_acquire_gpu_u64(p + v);
			break;
		case P_LD_ACQUIRE_SYS:
			v = gic_ld_acquire_sys_u64(p + v);
			break;
		case P_LD_AFTER_ACQUIRE:
			v = gic_ld_acquire_gpu_u64(p + v);
			v = p[8 + v];
			break;
		case P_CAS_ACQUIRE_GPU:
			v = gic_atomic_cas_acquire_gpu_u32((uint32_t *)(p + 16 + v), 1, 1);
			break;
		case P_ST_FENCE_GPU:
			*(volatile uint64_t *)(p + 24) = v;
			gic_fence_acq_rel_gpu();
			break;
		case P_ST_FENCE_SYS:
			*(volatile uint64_t *)(p + 24) = v;
			asm volatile("fence.acq_rel.sys;" ::: "memory");
			break;
		case P_ST_RELEASE_GPU:
			*(volatile uint64_t *)(p + 24) = v;
			gic_st_release_gpu_u64(p + 32, v);
			break;
		default:
			v += gic_now_ns() & 0;
			break;
		}
	}
	*cycles = clock64() - c0 + (long long)(v & 0);
}

/* The smallest step of %globaltimer seen in about 200 us. */
__global__ void k_timer_res(uint64_t *res)
{
	uint64_t t0 = gic_now_ns(), last = t0, best = ~0ull;

	while (last - t0 < 200000) {
		uint64_t t = gic_now_ns();

		if (t != last && t - last < best)
			best = t - last;
		last = t;
	}
	*res = best;
}

/* The primitives beside a running engine. Every CUDA allocation comes
 * before the engine starts and every free after it stopped: cudaFree waits
 * for the device, and the persistent engine never ends (docs/DESIGN.md
 * §4.5). */
static void prims(double mhz)
{
	gpu_env_cfg cfg = { 1, 1, 10, 4096, 0, 4, 4, 0, 0, 0, 0 };
	gpu_env env, *e = &env;
	uint64_t *dev, *managed, *d_res;
	long long *d_cyc, cyc;
	uint64_t res;

	CUDA_OK(cudaMalloc(&dev, 4096));
	CUDA_OK(cudaMallocManaged(&managed, 4096, cudaMemAttachGlobal));
	CUDA_OK(cudaMalloc(&d_cyc, sizeof(long long)));
	CUDA_OK(cudaMalloc(&d_res, sizeof(uint64_t)));
	gpu_env_open(e, &cfg);
	CUDA_OK(cudaMemsetAsync(dev, 0, 4096, e->stream));
	CUDA_OK(cudaMemsetAsync(managed, 0, 4096, e->stream));
	k_timer_res<<<1, 1, 0, e->stream>>>(d_res);
	CUDA_OK(cudaMemcpyAsync(&res, d_res, sizeof(res), cudaMemcpyDeviceToHost, e->stream));
	if (gpu_env_wait(e, "timer", 10))
		exit(1);
	printf("%%globaltimer resolution: %llu ns (smallest step seen)\n", (unsigned long long)res);
	printf("primitive costs, ns per operation (one thread, %d in a chain; SM %.0f MHz):\n",
	       ITER, mhz);
	printf("  %-40s %10s %10s\n", "operation", "device", "managed");
	for (int w = 0; w < P_COUNT; w++) {
		double ns[2];

		for (int m = 0; m < 2; m++) {
			k_prims<<<1, 1, 0, e->stream>>>(m ? managed : dev, w, d_cyc); /* warm */
			k_prims<<<1, 1, 0, e->stream>>>(m ? managed : dev, w, d_cyc);
			CUDA_OK(cudaMemcpyAsync(&cyc, d_cyc, sizeof(cyc), cudaMemcpyDeviceToHost,
						e->stream));
			if (gpu_env_wait(e, "primitives", 10))
				exit(1);
			ns[m] = (double)cyc / ITER / mhz * 1e3;
		}
		printf("  %-40s %10.1f %10.1f\n", prim_name[w], ns[0], ns[1]);
	}
	gpu_env_close(e);
	cudaFree(dev);
	cudaFree(managed);
	cudaFree(d_cyc);
	cudaFree(d_res);
}

/* ------------------------------------------------------------------ */
/* Runs. */

static int failures;

#define CHECK(cond, ...)                                    \
	do {                                                \
		if (!(cond)) {                              \
			fprintf(stderr, "FAIL: " __VA_ARGS__); \
			fprintf(stderr, "\n");              \
			failures++;                         \
		}                                           \
	} while (0)

/* Posts n WQEs on a fresh softnic (trace per the environment); fills
 * h[0..n) and, with the trace on, recs. Returns the records read. */
static size_t run(int n, psample *h, softnic_gpu_trace_rec *recs, size_t max)
{
	gpu_env_cfg cfg = { 1, 1, 10, (size_t)MAX_N * 8, 0, 4, 4, 0, 0, 0, 0 };
	gpu_env e;
	psample *d;
	uint64_t *back;
	size_t got = 0;
	int rc;

	/* Allocated before the engine starts, freed after it stopped (see
	 * prims). */
	CUDA_OK(cudaMalloc(&d, sizeof(psample) * n));
	gpu_env_open(&e, &cfg);
	CUDA_OK(cudaMemsetAsync(d, 0, sizeof(psample) * n, e.stream));
	k_post<<<1, 1, 0, e.stream>>>(e.d_sq, e.dst, softnic_mr_rkey(e.dst_mr), n, d);
	CUDA_OK(cudaGetLastError());
	if (gpu_env_wait(&e, "poster", 60))
		exit(1);
	/* On the fixture's stream: a synchronous copy on the legacy default
	 * stream would wait for the persistent engine. */
	CUDA_OK(cudaMemcpyAsync(h, d, sizeof(psample) * n, cudaMemcpyDeviceToHost, e.stream));
	if (gpu_env_wait(&e, "samples", 10))
		exit(1);
	for (int i = 0; i < n; i++)
		if (h[i].rc) {
			CHECK(0, "sample %d: rc %d", i, h[i].rc);
			break;
		}
	back = (uint64_t *)malloc(8 * (size_t)n);
	if (!back || gpu_env_read(&e, back, e.dst, 8 * (size_t)n))
		exit(1);
	for (int i = 0; i < n; i++)
		if (back[i] != pval(i)) {
			CHECK(0, "payload %d: %llx, want %llx", i, (unsigned long long)back[i],
			      (unsigned long long)pval(i));
			break;
		}
	free(back);
	if (recs) {
		usleep(2000); /* the last pass's records (its end follows the CQE) */
		rc = softnic_gpu_trace_read(e.nic, recs, max, &got);
		CHECK(rc == 0, "softnic_gpu_trace_read: %d", rc);
	}
	if (!softnic_gpu_engine_alive(e.nic))
		CHECK(0, "GPU engine died: %s", softnic_gpu_engine_error(e.nic));
	gpu_env_close(&e);
	cudaFree(d);
	return got;
}

/* One WQE's stamps: engine steps (clk, ns) by step; poster's from h. */
typedef struct life {
	int have[SOFTNIC_TRACE_STEPS];
	uint64_t clk[SOFTNIC_TRACE_STEPS], ns[SOFTNIC_TRACE_STEPS];
} life;

/* Samples of one interval, ns. */
typedef struct series {
	double v[MAX_N];
	int n;
} series;

static void add(series *s, double ns)
{
	if (s->n < MAX_N)
		s->v[s->n++] = ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The p99 of s, sorted. */
static double p99_sorted(const series *s)
{
	int k = (int)(s->n * 0.99);

	return s->v[k < s->n ? k : s->n - 1];
}

/* Prints p50 and p99 in us, and empties s. */
static void print_row(const char *what, series *s)
{
	if (!s->n) {
		printf("  %-46s %8s %8s   (no samples)\n", what, "-", "-");
		return;
	}
	qsort(s->v, (size_t)s->n, sizeof(double), cmp_double);
	printf("  %-46s %8.3f %8.3f   n=%d\n", what, s->v[s->n / 2] / 1e3, p99_sorted(s) / 1e3, s->n);
	s->n = 0;
}

static series S;

static void putc_row(const char *what, const psample *h, int n, double mhz)
{
	for (int i = WARM; i < n; i++)
		add(&S, (double)(h[i].c_done - h[i].c0) / mhz * 1e3);
	print_row(what, &S);
}

/* Matches records to WQEs; with check, verifies presence and order. */
static void analyse(const psample *h, int n, const softnic_gpu_trace_rec *r, size_t nr,
		    double mhz, int check)
{
	static life L[MAX_N];
	static const struct { int a, b; const char *what; } eng[] = {
		{ SOFTNIC_TRACE_DB_SEEN, SOFTNIC_TRACE_RECORD, "doorbell seen -> record read" },
		{ SOFTNIC_TRACE_RECORD, SOFTNIC_TRACE_WQE_READ, "record read -> WQE read" },
		{ SOFTNIC_TRACE_WQE_READ, SOFTNIC_TRACE_KEY_OK, "WQE read -> key checked" },
		{ SOFTNIC_TRACE_KEY_OK, SOFTNIC_TRACE_CQ_CLAIMED, "key checked -> CQ claimed" },
		{ SOFTNIC_TRACE_CQ_CLAIMED, SOFTNIC_TRACE_DATA_MOVED, "CQ claimed -> data moved" },
		{ SOFTNIC_TRACE_DATA_MOVED, SOFTNIC_TRACE_CQE_WRITTEN, "data moved -> CQE written" },
		{ SOFTNIC_TRACE_CQE_WRITTEN, SOFTNIC_TRACE_PASS_END, "CQE written -> pass end (unlock)" },
		{ SOFTNIC_TRACE_DB_SEEN, SOFTNIC_TRACE_CQE_WRITTEN, "engine: doorbell seen -> CQE written" },
	};
	int bad = 0;

	memset(L, 0, sizeof(L));
	for (size_t k = 0; k < nr; k++) {
		int i = r[k].wqe_index; /* WQE i has index i (n < 65536) */

		/* The last record of a step wins: a pass that saw the doorbell
		 * before its record (the watch) records DB_SEEN, RECORD and
		 * PASS_END under the same WQE once more before the pass that
		 * runs it. */
		if (i >= n || r[k].step >= SOFTNIC_TRACE_STEPS)
			continue;
		L[i].have[r[k].step] = 1;
		L[i].clk[r[k].step] = r[k].clk;
		L[i].ns[r[k].step] = r[k].ns;
	}
	if (check) {
		for (int i = 0; i < n; i++) {
			uint64_t last = 0;

			for (int s = SOFTNIC_TRACE_DB_SEEN; s <= SOFTNIC_TRACE_PASS_END; s++) {
				if (!L[i].have[s] || L[i].clk[s] < last) {
					if (bad++ < 5)
						fprintf(stderr, "FAIL: WQE %d: step %d %s\n", i, s,
							L[i].have[s] ? "out of order" : "missing");
					break;
				}
				last = L[i].clk[s];
			}
		}
		CHECK(bad == 0, "%d WQEs with missing or disordered trace steps", bad);
		printf("trace check: %d WQEs, %zu records, %s\n", n, nr, bad ? "FAIL" : "ok");
		return;
	}
	printf("pipeline of one 8-byte inline write (us; p50 p99 over WQEs %d..%d):\n", WARM, n - 1);
	for (int i = WARM; i < n; i++)
		add(&S, (double)(h[i].c_db - h[i].c0) / mhz * 1e3);
	print_row("poster: issue (reserve, build, ring)", &S);
	for (int i = WARM; i < n; i++)
		if (L[i].have[SOFTNIC_TRACE_DB_SEEN])
			add(&S, (double)L[i].ns[SOFTNIC_TRACE_DB_SEEN] - (double)h[i].t_db);
	print_row("doorbell stored -> seen (globaltimer)", &S);
	for (size_t e = 0; e < sizeof(eng) / sizeof(eng[0]); e++) {
			for (int i = WARM; i < n; i++)
			if (L[i].have[eng[e].a] && L[i].have[eng[e].b])
				add(&S, (double)(L[i].clk[eng[e].b] - L[i].clk[eng[e].a]) / mhz * 1e3);
		print_row(eng[e].what, &S);
	}
	for (int i = WARM; i < n; i++)
		if (L[i].have[SOFTNIC_TRACE_CQE_WRITTEN])
			add(&S, (double)h[i].t_seen - (double)L[i].ns[SOFTNIC_TRACE_CQE_WRITTEN]);
	print_row("CQE written -> seen (globaltimer)", &S);
	for (int i = WARM; i < n; i++)
		add(&S, (double)(h[i].c_seen - h[i].c_db) / mhz * 1e3);
	print_row("poster: doorbell stored -> CQE seen", &S);
	for (int i = WARM; i < n; i++)
		if (L[i].have[SOFTNIC_TRACE_DB_SEEN] && L[i].have[SOFTNIC_TRACE_CQE_WRITTEN])
			add(&S, (double)(h[i].c_seen - h[i].c_db) / mhz * 1e3 -
				    (double)(L[i].clk[SOFTNIC_TRACE_CQE_WRITTEN] -
					     L[i].clk[SOFTNIC_TRACE_DB_SEEN]) / mhz * 1e3);
	print_row("both crossings (stored->seen + written->seen)", &S);
	for (int i = WARM; i < n; i++)
		add(&S, (double)(h[i].c_done - h[i].c_seen) / mhz * 1e3);
	print_row("poster: CQE seen -> poll returned", &S);
	putc_row("put+completion, trace on", h, n, mhz);
}

/* ------------------------------------------------------------------ */
/* --batch: one QP drained. */

enum { MAX_ROUNDS = 2000 }; /* WQE numbers stay below 2^16 (the trace's index) */

/* Runs R rounds on a fresh softnic (trace per the environment); checks the
 * payloads; returns the run's msg/s (from the first round's return to the
 * final quiet) and, with recs, fills them (*nr). */
static double run_batch(int rounds, int log_bb, softnic_gpu_trace_rec *recs, size_t max,
			size_t *nr)
{
	size_t bytes = (size_t)rounds * 32 * 8;
	gpu_env_cfg cfg = { 1, 1, log_bb, bytes, 0, 4, 4, 0, 0, 0, 0 };
	uint64_t *d_t, *t = (uint64_t *)calloc((size_t)rounds + 1, sizeof(uint64_t));
	uint64_t *back = (uint64_t *)malloc(bytes);
	int *d_rc, rc = -1;
	double rate = 0;
	gpu_env e;

	if (!t || !back)
		exit(1);
	CUDA_OK(cudaMalloc(&d_t, sizeof(uint64_t) * ((size_t)rounds + 1)));
	CUDA_OK(cudaMalloc(&d_rc, sizeof(int)));
	gpu_env_open(&e, &cfg);
	k_post_warp<<<1, 32, 0, e.stream>>>(e.d_sq, e.dst, softnic_mr_rkey(e.dst_mr), rounds, d_t,
					    d_rc);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaMemcpyAsync(t, d_t, sizeof(uint64_t) * ((size_t)rounds + 1),
				cudaMemcpyDeviceToHost, e.stream));
	CUDA_OK(cudaMemcpyAsync(&rc, d_rc, sizeof(int), cudaMemcpyDeviceToHost, e.stream));
	if (gpu_env_wait(&e, "batch poster", 60))
		exit(1);
	CHECK(rc == 0, "batch poster: rc %d", rc);
	if (!rc && rounds > 1)
		rate = (double)(rounds - 1) * 32 / ((double)(t[rounds] - t[0]) * 1e-9);
	if (gpu_env_read(&e, back, e.dst, bytes))
		exit(1);
	for (size_t i = 0; i < (size_t)rounds * 32; i++)
		if (back[i] != pval(i)) {
			CHECK(0, "batch payload %zu: %llx, want %llx", i,
			      (unsigned long long)back[i], (unsigned long long)pval(i));
			break;
		}
	*nr = 0;
	if (recs) {
		uint64_t first = ~0ull, last_cqe = 0;

		usleep(2000); /* the last pass's records */
		CHECK(softnic_gpu_trace_read(e.nic, recs, max, nr) == 0, "softnic_gpu_trace_read");
		for (size_t k = 0; k < *nr; k++) {
			if (recs[k].ns < first)
				first = recs[k].ns;
			if (recs[k].step == SOFTNIC_TRACE_CQE_WRITTEN && recs[k].ns > last_cqe)
				last_cqe = recs[k].ns;
		}
		/* Where the poster's span goes (one clock: %globaltimer). */
		if (!rc && *nr)
			printf("poster: round 0 returned at 0, last round at +%.1f us, quiet ended at "
			       "+%.1f us; engine: first record at %+.1f us, last CQE at +%.1f us\n",
			       (double)(t[rounds - 1] - t[0]) / 1e3, (double)(t[rounds] - t[0]) / 1e3,
			       ((double)first - (double)t[0]) / 1e3,
			       ((double)last_cqe - (double)t[0]) / 1e3);
	}
	if (!softnic_gpu_engine_alive(e.nic))
		CHECK(0, "GPU engine died: %s", softnic_gpu_engine_error(e.nic));
	gpu_env_close(&e);
	cudaFree(d_t);
	cudaFree(d_rc);
	free(t);
	free(back);
	return rate;
}

static const char *const step_name[] = {
	"-", "db seen", "record", "wqe read", "key ok", "cq claimed", "data moved", "cqe written",
	"pass end", "serial",
};

/* A step's name ("step N" for one this program does not know). */
static const char *step_label(int s, char buf[16])
{
	if (s >= 0 && s < (int)(sizeof(step_name) / sizeof(step_name[0])))
		return step_name[s];
	snprintf(buf, 16, "step %d", s);
	return buf;
}

static int cmp_rec(const void *a, const void *b)
{
	const softnic_gpu_trace_rec *x = (const softnic_gpu_trace_rec *)a;
	const softnic_gpu_trace_rec *y = (const softnic_gpu_trace_rec *)b;

	if (x->warp != y->warp)
		return x->warp < y->warp ? -1 : 1;
	return x->clk < y->clk ? -1 : x->clk > y->clk;
}

/* The busy warp's timeline: each transition a -> b between consecutive
 * records, with its p50, p99, count and share of the span from the first
 * record to the last; then the batch sizes (WQE read's count). */
static void analyse_batch(softnic_gpu_trace_rec *r, size_t nr, double mhz)
{
	enum { NS = SOFTNIC_TRACE_STEPS };
	static series T[NS][NS];
	double sum[NS][NS] = { { 0 } }, span;
	uint32_t busy = 0, most = 0;
	size_t lo = 0, hi, per[64] = { 0 }, batches = 0, wqes = 0, passes = 0;

	qsort(r, nr, sizeof(*r), cmp_rec);
	for (size_t k = 0; k < nr; k++)
		if (r[k].warp < 64 && ++per[r[k].warp] > most)
			most = (uint32_t)per[r[k].warp], busy = r[k].warp;
	while (lo < nr && r[lo].warp != busy)
		lo++;
	for (hi = lo; hi < nr && r[hi].warp == busy; hi++)
		;
	if (hi - lo < 2) {
		CHECK(0, "batch trace: %zu records of the busy warp", hi - lo);
		return;
	}
	span = (double)(r[hi - 1].clk - r[lo].clk) / mhz * 1e3;
	for (size_t k = lo + 1; k < hi; k++) {
		int a = r[k - 1].step, b = r[k].step;
		double ns = (double)(r[k].clk - r[k - 1].clk) / mhz * 1e3;

		if (a >= NS || b >= NS)
			continue;
		add(&T[a][b], ns);
		sum[a][b] += ns;
	}
	for (size_t k = lo; k < hi; k++)
		if (r[k].step == SOFTNIC_TRACE_WQE_READ)
			batches++, wqes += r[k].count;
		else if (r[k].step == SOFTNIC_TRACE_RECORD)
			passes++;
	printf("engine warp %u timeline: %zu records over %.1f us; %zu passes, %zu batches, %.1f "
	       "WQEs each, %.2f M WQEs/s while traced\n",
	       busy, hi - lo, span / 1e3, passes, batches,
	       batches ? (double)wqes / batches : 0.0,
	       span > 0 ? (double)wqes / span * 1e3 : 0.0);
	printf("  %-28s %8s %8s %8s %7s\n", "transition", "p50 us", "p99 us", "n", "share");
	for (int a = 0; a < NS; a++)
		for (int b = 0; b < NS; b++) {
			char what[64], la[16], lb[16];
			int n = T[a][b].n;

			if (!n)
				continue;
			snprintf(what, sizeof(what), "%s -> %s", step_label(a, la), step_label(b, lb));
			qsort(T[a][b].v, (size_t)n, sizeof(double), cmp_double);
			printf("  %-28s %8.3f %8.3f %8d %6.1f%%\n", what, T[a][b].v[n / 2] / 1e3,
			       p99_sorted(&T[a][b]) / 1e3, n, 100.0 * sum[a][b] / span);
			T[a][b].n = 0;
		}
}

/* --batch R: the rate with the trace off, then the traced timeline. */
static void batch_mode(int rounds, int log_bb, double mhz)
{
	size_t max = (size_t)rounds * 8 * SOFTNIC_TRACE_STEPS * 16, nr = 0;
	softnic_gpu_trace_rec *recs = (softnic_gpu_trace_rec *)calloc(max, sizeof(*recs));
	char buf[32];
	double rate;

	if (!recs)
		exit(1);
	unsetenv("GIC_SOFTNIC_GPU_TRACE");
	for (int k = 0; k < 3; k++) {
		rate = run_batch(rounds, log_bb, NULL, 0, &nr);
		printf("one QP drained, trace off: %.2f M msg/s (%d rounds of 32, ring 2^%d BBs)\n",
		       rate / 1e6, rounds, log_bb);
	}
	snprintf(buf, sizeof(buf), "%d", rounds * 8);
	setenv("GIC_SOFTNIC_GPU_TRACE", buf, 1);
	rate = run_batch(rounds, log_bb, recs, max, &nr);
	unsetenv("GIC_SOFTNIC_GPU_TRACE");
	printf("one QP drained, trace on: %.2f M msg/s\n", rate / 1e6);
	analyse_batch(recs, nr, mhz);
	free(recs);
}

int main(int argc, char **argv)
{
	int n = 600, check = 0, rounds = 0, batch = 0, log_bb = 14;
	double mhz;
	cudaDeviceProp prop;
	static psample h[MAX_N];
	softnic_gpu_trace_rec *recs;
	size_t nr, max;
	char buf[32];
	setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a kill at a time limit */

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--check"))
			check = 1;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			rounds = atoi(argv[++i]), batch = 1;
		else if (!strcmp(argv[i], "--ring") && i + 1 < argc)
			log_bb = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: gic-gpu-pipeline [--check] [-n N] [--batch R [--ring L]]\n");
			return 2;
		}
	}
	if (batch && (rounds < 2 || rounds > MAX_ROUNDS)) {
		fprintf(stderr, "--batch: 2..%d rounds\n", MAX_ROUNDS);
		return 2;
	}
	if (log_bb < 6 || log_bb > 14) {
		fprintf(stderr, "--ring: 6..14 (log2 of the ring's BBs)\n");
		return 2;
	}
	if (n < WARM + 10 || n > MAX_N) {
		fprintf(stderr, "-n: %d..%d\n", WARM + 10, MAX_N);
		return 2;
	}
	/* docs/DESIGN.md §4.5: every kernel must be loaded before the engine spins. */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	CUDA_OK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	mhz = gpu_sm_clock_mhz(0);
	printf("gic-gpu-pipeline on %s (sm_%d%d), SM clock %.0f MHz, %d WQEs\n", prop.name,
	       prop.major, prop.minor, mhz, n);
	if (batch) {
		batch_mode(rounds, log_bb, mhz);
		printf("%s\n", failures ? "FAIL" : "ok");
		return failures ? 1 : 0;
	}
	max = (size_t)n * SOFTNIC_TRACE_STEPS * 4;
	recs = (softnic_gpu_trace_rec *)calloc(max, sizeof(*recs));
	if (!recs)
		return 1;
	if (!check) {
		unsetenv("GIC_SOFTNIC_GPU_TRACE");
		run(n, h, NULL, 0);
		putc_row("put+completion, trace off", h, n, mhz);
	}
	snprintf(buf, sizeof(buf), "%d", n + 16);
	setenv("GIC_SOFTNIC_GPU_TRACE", buf, 1);
	nr = run(n, h, recs, max);
	unsetenv("GIC_SOFTNIC_GPU_TRACE");
	analyse(h, n, recs, nr, mhz, check);
	if (!check) {
		prims(mhz);
	}
	free(recs);
	printf("%s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}
