/*
 * gic-gpu-proxy-bench: mini-proxy with GPU producers (issue 4's numbers).
 *
 *   enqueue time of one 8-byte inline request, baseline and tuned protocol,
 *   beside one posted 16-byte store to the same mapped host memory (the
 *   tuned protocol's floor), and put+completion (enqueue until the
 *   host-resident counter the GPU polls shows it done);
 *   message rate against workers T, rings R and batch B (one GPU producer
 *   thread per ring, tuned protocol).
 *
 * Rings, destination and counters are pinned host memory mapped into the
 * GPU; the workers post through softnic's CPU engine. Every request writes a
 * distinct value to a distinct slot; all slots are checked after each run.
 */
#include "../tests/gpu/gpu_env.h"

#include "gic/proxy.h"

extern "C" {
#include "stats.h"
}

enum { LAT_N = 2000, LAT_WARMUP = 200, RATE_PER_RING = 4096, MAX_RINGS = 32 };

static int failures;

static __host__ __device__ uint64_t val(uint64_t i, uint64_t ring)
{
	return (ring << 48) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x0123456700000001ull;
}

typedef struct lat_sample {
	long long enq_cycles;
	unsigned long long putc_ns;
	int rc;
	int pad;
} lat_sample;

/* One producer: enqueue request i, wait for the counter to reach i + 1. */
static __device__ __forceinline__ void latency_loop(gic_proxy_ring *r, int tuned,
						    const uint64_t *counter, int n, lat_sample *out)
{
	for (int i = 0; i < n; i++) {
		gic_proxy_desc d;
		unsigned long long t0 = gic_now_ns();
		uint64_t deadline = t0 + 2000000000ull;
		int rc = gic_proxy_desc_inline(&d, 8 * (uint64_t)i, val(i, 0), 8, 0);
		long long c0 = clock64();

		/* The protocol's own call: the dispatcher would carry the
		 * baseline's atomic on the view's head, which keeps a tuned
		 * view out of registers. */
		if (!rc)
			rc = tuned ? gic_proxy_enqueue_tuned(r, &d, deadline, NULL)
				   : gic_proxy_enqueue_baseline(r, &d, deadline, NULL);
		long long c1 = clock64();

		if (!rc)
			rc = gic_proxy_wait_counter(r, counter, (uint64_t)i + 1, deadline);
		out[i].enq_cycles = c1 - c0;
		out[i].putc_ns = gic_now_ns() - t0;
		out[i].rc = rc;
		if (rc)
			break;
	}
}

/* Tuned: the ring's one producer keeps its view in registers. Baseline:
 * the view (its head takes atomics) stays in global memory. */
__global__ void enqueue_latency(gic_proxy_ring *g, const uint64_t *counter, int n, lat_sample *out)
{
	if (g->protocol == GIC_PROXY_TUNED) {
		gic_proxy_ring r = *g;

		latency_loop(&r, 1, counter, n, out);
		*g = r;
	} else {
		latency_loop(g, 0, counter, n, out);
	}
}

/* The floor of the tuned enqueue: one posted 16-byte store to mapped host
 * memory, as the tuned protocol makes. */
__global__ void store_floor(gic_proxy_desc *slots, int n, lat_sample *out)
{
	for (int i = 0; i < n; i++) {
		long long c0 = clock64();

		gic_proxy_slot_store16(&slots[i & 255], (uint64_t)i, (uint64_t)i * 3);
		out[i].enq_cycles = clock64() - c0;
		out[i].putc_ns = 0;
		out[i].rc = 0;
	}
}

/* Thread r produces into ring r (tuned: one producer per ring), per
 * requests, then waits for its counter; times first enqueue to completion. */
__global__ void produce_rate(gic_proxy_ring *views, const uint64_t *counters, int per,
			     unsigned long long *t0, unsigned long long *t1, int *rc_out)
{
	int r = threadIdx.x;
	gic_proxy_ring ring = views[r];
	uint64_t deadline;
	int rc = 0;

	t0[r] = gic_now_ns();
	deadline = t0[r] + 10000000000ull;
	for (int i = 0; i < per && !rc; i++) {
		gic_proxy_desc d;

		rc = gic_proxy_desc_inline(&d, 8 * ((uint64_t)r * per + i), val(i, r), 8, r);
		if (!rc)
			rc = gic_proxy_enqueue_tuned(&ring, &d, deadline, NULL);
	}
	if (!rc)
		rc = gic_proxy_wait_counter(&ring, &counters[r], (uint64_t)per, deadline);
	t1[r] = gic_now_ns();
	rc_out[r] = rc;
	views[r] = ring;
}

/* ------------------------------------------------------------------ */

typedef struct pbench {
	softnic *nic;
	softnic_allocator mapped;
	softnic_pd *local, *target;
	uint64_t *dst, *counters;
	softnic_mr *dst_mr;
	gic_proxy *proxy;
	gic_proxy_ring *d_views;
	cudaStream_t stream;
} pbench;

static int pbench_open(pbench *b, int workers, int rings, int batch, int protocol, size_t dst_len)
{
	softnic_attr na = { 0 };
	gic_proxy_attr pa;
	gic_proxy_ring views[MAX_RINGS];

	memset(b, 0, sizeof(*b));
	b->mapped.alloc = gpu_mapped_alloc;
	b->mapped.free = gpu_mapped_free;
	na.engine_threads = workers < 4 ? workers : 4;
	na.pin_engines = 1; /* engines on cores 2..5, workers from core 8 */
	na.first_cpu = 2;
	b->nic = softnic_open(&na);
	b->local = softnic_pd_alloc(b->nic);
	b->target = softnic_pd_alloc(b->nic);
	CUDA_OK(cudaHostAlloc((void **)&b->dst, dst_len, cudaHostAllocMapped));
	CUDA_OK(cudaHostAlloc((void **)&b->counters, MAX_RINGS * 8, cudaHostAllocMapped));
	memset(b->dst, 0, dst_len);
	memset(b->counters, 0, MAX_RINGS * 8);
	b->dst_mr = softnic_reg_mr(b->target, b->dst, dst_len, SOFTNIC_ACCESS_REMOTE_WRITE);
	memset(&pa, 0, sizeof(pa));
	pa.nic = b->nic;
	pa.local_pd = b->local;
	pa.target_pd = b->target;
	pa.workers = workers;
	pa.rings = rings;
	pa.batch = batch;
	pa.protocol = protocol;
	pa.counter_kind = GIC_PROXY_COUNTER_HOST;
	pa.log_ring_slots = 10;
	pa.first_cpu = 8; /* workers on cores 8.., engines and the host elsewhere */
	pa.dst_addr = (uint64_t)(uintptr_t)b->dst;
	pa.dst_rkey = b->dst_mr ? softnic_mr_rkey(b->dst_mr) : 0;
	pa.counters = b->counters;
	pa.counter_cnt = MAX_RINGS;
	pa.ring_mem = &b->mapped;
	b->proxy = gic_proxy_create(&pa);
	if (!b->proxy || gic_proxy_start(b->proxy)) {
		fprintf(stderr, "proxy: %s %s\n", b->proxy ? gic_proxy_error(b->proxy) : "create",
			softnic_last_error(b->nic));
		return 1;
	}
	for (int r = 0; r < rings; r++)
		gic_proxy_ring_view(b->proxy, r, &views[r]);
	CUDA_OK(cudaMalloc(&b->d_views, sizeof(views)));
	CUDA_OK(cudaMemcpy(b->d_views, views, sizeof(gic_proxy_ring) * rings, cudaMemcpyHostToDevice));
	CUDA_OK(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
	return 0;
}

static void pbench_close(pbench *b)
{
	gic_proxy_destroy(b->proxy);
	softnic_close(b->nic);
	cudaFreeHost(b->dst);
	cudaFreeHost(b->counters);
	cudaFree(b->d_views);
	cudaStreamDestroy(b->stream);
}

/* Checks slot r * per + i == val(i, r) for every ring and request. */
static void validate(const pbench *b, int rings, int per, const char *what)
{
	for (int r = 0; r < rings; r++)
		for (int i = 0; i < per; i++)
			if (b->dst[(uint64_t)r * per + i] != val(i, r)) {
				fprintf(stderr, "%s: ring %d request %d: 0x%llx\n", what, r, i,
					(unsigned long long)b->dst[(uint64_t)r * per + i]);
				failures++;
				return;
			}
}

static void summarize(const lat_sample *s, int putc, double scale, gic_summary *out)
{
	gic_samples v;

	gic_samples_init(&v, LAT_N);
	for (int i = 0; i < LAT_N; i++)
		gic_samples_add(&v, (putc ? (double)s[i].putc_ns : (double)s[i].enq_cycles) * scale);
	gic_summarize(&v, LAT_WARMUP, out);
	gic_samples_free(&v);
}

static int wait_kernel(pbench *b, const char *what)
{
	uint64_t deadline = gic_now_ns() + 60000000000ull;
	cudaError_t e;

	while ((e = cudaStreamQuery(b->stream)) == cudaErrorNotReady) {
		if (gic_now_ns() > deadline) {
			fprintf(stderr, "%s: GPU producers did not finish (%s)\n", what,
				gic_proxy_error(b->proxy));
			return 1;
		}
		gic_cpu_relax();
	}
	if (e != cudaSuccess)
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
	return e != cudaSuccess;
}

static void bench_latency(double mhz)
{
	static const char *const names[] = { "baseline", "tuned" };
	static const double paper_enq[] = { 2.27, 0.13 }, paper_putc[] = { 7.07, 4.10 };
	lat_sample *d, *h = (lat_sample *)calloc(LAT_N, sizeof(lat_sample));
	gic_summary fl;

	CUDA_OK(cudaMalloc(&d, sizeof(lat_sample) * LAT_N));
	printf("\nenqueue: one GPU thread, 8-byte inline requests, T=1 R=1 B=1, host-resident counter "
	       "polled by the GPU; %d samples after %d warm-up; SM clock %.0f MHz\n",
	       LAT_N - LAT_WARMUP, LAT_WARMUP, mhz);
	printf("%-9s %9s %8s %8s | %8s %6s | %6s | %9s %8s %7s\n", "protocol", "enq p50", "p99", "max",
	       "floor", "ratio", "paper", "put+c p50", "p99", "paper");
	for (int proto = 0; proto < 2; proto++) {
		pbench b;
		gic_summary enq, putc;
		int bad = 0;

		if (pbench_open(&b, 1, 1, 1, proto, LAT_N * 8)) {
			failures++;
			return;
		}
		enqueue_latency<<<1, 1, 0, b.stream>>>(b.d_views, &b.counters[0], LAT_N, d);
		if (wait_kernel(&b, names[proto]))
			bad = 1;
		CUDA_OK(cudaMemcpy(h, d, sizeof(lat_sample) * LAT_N, cudaMemcpyDeviceToHost));
		for (int i = 0; i < LAT_N && !bad; i++)
			bad = h[i].rc != 0;
		if (bad) {
			fprintf(stderr, "%s: a request failed: %s\n", names[proto], gic_proxy_error(b.proxy));
			failures++;
		} else {
			validate(&b, 1, LAT_N, names[proto]);
			summarize(h, 0, 1.0 / mhz, &enq);
			summarize(h, 1, 1e-3, &putc);
			store_floor<<<1, 1, 0, b.stream>>>((gic_proxy_desc *)b.dst, LAT_N, d);
			wait_kernel(&b, "floor");
			CUDA_OK(cudaMemcpy(h, d, sizeof(lat_sample) * LAT_N, cudaMemcpyDeviceToHost));
			summarize(h, 0, 1.0 / mhz, &fl);
			printf("%-9s %9.3f %8.3f %8.3f | %8.3f %6.2f | %6.2f | %9.3f %8.3f %7.2f\n",
			       names[proto], enq.p50, enq.p99, enq.max, fl.p50, enq.p50 / fl.p50,
			       paper_enq[proto], putc.p50, putc.p99, paper_putc[proto]);
		}
		pbench_close(&b);
	}
	cudaFree(d);
	free(h);
}

static void bench_rate(void)
{
	static const int rows[][3] = { /* T, R, B */
		{ 1, 32, 1 }, { 1, 32, 4 }, { 1, 32, 16 }, { 2, 32, 16 }, { 4, 32, 16 }, { 4, 8, 16 },
	};
	unsigned long long *d_t0, *d_t1, t0[MAX_RINGS], t1[MAX_RINGS];
	int *d_rc, rc[MAX_RINGS];
	double base = 0;

	CUDA_OK(cudaMalloc(&d_t0, sizeof(t0)));
	CUDA_OK(cudaMalloc(&d_t1, sizeof(t1)));
	CUDA_OK(cudaMalloc(&d_rc, sizeof(rc)));
	printf("\nrate: tuned protocol, one GPU producer thread per ring, %d 8-byte inline requests "
	       "per ring, until every counter shows them done (paper: B 1->16 gives 5.5x at T=1, R=32)\n",
	       RATE_PER_RING);
	printf("%4s %4s %4s %12s %10s\n", "T", "R", "B", "M msg/s", "vs B=1");
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		int T = rows[k][0], R = rows[k][1], B = rows[k][2];
		unsigned long long lo = ~0ull, hi = 0;
		pbench b;
		double m = 0;
		int ok = 1;

		if (pbench_open(&b, T, R, B, GIC_PROXY_TUNED, (size_t)R * RATE_PER_RING * 8)) {
			failures++;
			continue;
		}
		produce_rate<<<1, R, 0, b.stream>>>(b.d_views, b.counters, RATE_PER_RING, d_t0, d_t1, d_rc);
		ok = !wait_kernel(&b, "rate");
		CUDA_OK(cudaMemcpy(t0, d_t0, sizeof(t0), cudaMemcpyDeviceToHost));
		CUDA_OK(cudaMemcpy(t1, d_t1, sizeof(t1), cudaMemcpyDeviceToHost));
		CUDA_OK(cudaMemcpy(rc, d_rc, sizeof(rc), cudaMemcpyDeviceToHost));
		for (int r = 0; r < R && ok; r++) {
			ok = rc[r] == 0;
			lo = t0[r] < lo ? t0[r] : lo;
			hi = t1[r] > hi ? t1[r] : hi;
		}
		if (ok) {
			validate(&b, R, RATE_PER_RING, "rate");
			m = (double)R * RATE_PER_RING / (double)(hi - lo) * 1e3;
			if (T == 1 && R == 32 && B == 1)
				base = m;
		} else {
			fprintf(stderr, "rate T%d R%d B%d failed: %s\n", T, R, B, gic_proxy_error(b.proxy));
			failures++;
		}
		printf("%4d %4d %4d %12.2f %10.2f\n", T, R, B, m, base > 0 ? m / base : 0.0);
		pbench_close(&b);
	}
	cudaFree(d_t0);
	cudaFree(d_t1);
	cudaFree(d_rc);
}

int main(void)
{
	cudaDeviceProp prop;
	char cpu[256];
	double mhz;

	CUDA_OK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	mhz = gpu_sm_clock_mhz(0);
	gic_cpu_state_line(cpu, sizeof(cpu));
	printf("gic-gpu-proxy-bench on %s, SM clock %.0f MHz; CPU: %s; workers pinned from core 8 "
	       "(frequency not exposed: cold/warm unknown)\n", prop.name, mhz, cpu);
	bench_latency(mhz);
	bench_rate();
	printf("\nvalidation: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
