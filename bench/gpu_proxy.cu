/*
 * gic-gpu-proxy-bench: mini-proxy with GPU producers (issue 4's numbers).
 *
 *   latency: enqueue time of one 8-byte inline request, baseline and tuned
 *   protocol, beside one posted 16-byte store to mapped host memory (the
 *   tuned protocol's floor); put+completion (enqueue until the counter the
 *   producer polls shows it done); round trip (PE0 -> PE1 -> PE0 through
 *   two proxies, each side polling its own region). Two NIC placements:
 *   softnic's CPU engine with host-resident regions and counters, and
 *   softnic's GPU engine with GPU-resident regions and a GPU-resident
 *   counter that the worker bumps through the NIC (ATOMIC_FA).
 *   rate: message rate against workers T, rings R and batch B (one GPU
 *   producer thread per ring, tuned protocol), on both placements.
 *
 * Every request writes a distinct value to a distinct slot; all slots are
 * checked after each run, and a failed check fails the program.
 */
#include "../tests/gpu/gpu_env.h"

#include "../tests/gpu/proxy_env.h"

extern "C" {
#include "stats.h"
}

enum { LAT_N = 2000, LAT_WARMUP = 200, RATE_PER_RING = 4096, MAX_RINGS = PROXY_ENV_RINGS };

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

/* Round trip: PE0's thread (block 0) enqueues request i into ring 0 of
 * proxy 0 (a write of val(i, 1) into PE1's region) and waits for PE1's
 * answer in its own region; PE1's thread (block 1) waits for the request
 * and answers through proxy 1 with val(i, 2). Each side polls its own
 * region; the time is PE0's, enqueue to answer seen. */
template <int TUNED>
static __device__ __forceinline__ void rtt_side(gic_proxy_ring *g, int pe, const uint64_t *in, int n,
						lat_sample *out)
{
	gic_proxy_ring local = *g;
	gic_proxy_ring *r = TUNED ? &local : g; /* baseline: atomics on the global view */

	for (int i = 0; i < n; i++) {
		gic_proxy_desc d;
		uint64_t deadline = gic_now_ns() + 2000000000ull;
		uint64_t want = pe ? val(i, 1) : val(i, 2);
		long long c0 = clock64();
		int rc = 0;

		if (pe == 1) /* the request first */
			while (gic_ld_acquire_sys_u64(&in[i]) != want && !rc)
				rc = gic_now_ns() > deadline ? ETIMEDOUT : 0;
		if (!rc)
			rc = gic_proxy_desc_inline(&d, 8 * (uint64_t)i, pe ? val(i, 2) : val(i, 1), 8, 0);
		if (!rc)
			rc = TUNED ? gic_proxy_enqueue_tuned(r, &d, deadline, NULL)
				   : gic_proxy_enqueue_baseline(r, &d, deadline, NULL);
		if (pe == 0) /* then the answer */
			while (!rc && gic_ld_acquire_sys_u64(&in[i]) != want)
				rc = gic_now_ns() > deadline ? ETIMEDOUT : 0;
		if (pe == 0) {
			out[i].enq_cycles = clock64() - c0;
			out[i].rc = rc;
		}
		if (rc)
			break;
	}
	if (TUNED)
		*g = local;
}

__global__ void round_trip(gic_proxy_ring *v0, gic_proxy_ring *v1, const uint64_t *in0,
			   const uint64_t *in1, int n, int tuned, lat_sample *out)
{
	int pe = blockIdx.x;

	if (tuned)
		rtt_side<1>(pe ? v1 : v0, pe, pe ? in1 : in0, n, out);
	else
		rtt_side<0>(pe ? v1 : v0, pe, pe ? in1 : in0, n, out);
}

/* ------------------------------------------------------------------ */

static const char *const nic_names[] = { "cpu engine, host counter", "gpu engine, gpu counter" };

/* Opens a fixture of region_len-byte regions; 0 or 1 (then failed). */
static int bench_open(proxy_env *e, int nic_kind, int pes, int workers, int rings, int batch,
		      int protocol, size_t region_len)
{
	proxy_env_cfg c = { 0 };

	c.nic_kind = nic_kind;
	c.pes = pes;
	c.workers = workers;
	c.rings = rings;
	c.batch = batch;
	c.protocol = protocol;
	c.region_len = region_len;
	if (!proxy_env_open(e, &c))
		return 0;
	failures++;
	proxy_env_close(e);
	return 1;
}

/* Checks PE k's region: word r * per + i == val(i, r + tag) for every ring r
 * and request i. */
static void validate(proxy_env *e, int k, int rings, int per, uint64_t tag, const char *what)
{
	size_t n = (size_t)rings * per;
	uint64_t *h = (uint64_t *)malloc(n * 8);

	if (!h || proxy_env_read(e, h, e->region[k], n * 8)) {
		fprintf(stderr, "%s: cannot read PE%d's region\n", what, k);
		failures++;
		free(h);
		return;
	}
	for (int r = 0; r < rings; r++)
		for (int i = 0; i < per; i++)
			if (h[(uint64_t)r * per + i] != val(i, r + tag)) {
				fprintf(stderr, "%s: PE%d ring %d request %d: 0x%llx\n", what, k, r, i,
					(unsigned long long)h[(uint64_t)r * per + i]);
				failures++;
				free(h);
				return;
			}
	free(h);
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

/* One row of the latency table: enqueue and put+completion on proxy 0,
 * then the round trip on both proxies; every payload validated. */
static void latency_row(int nic_kind, int proto, double mhz, lat_sample *d, lat_sample *h)
{
	static const char *const names[] = { "baseline", "tuned" };
	static const double paper_enq[] = { 2.27, 0.13 }, paper_putc[] = { 7.07, 4.10 },
			    paper_rtt[] = { 14.59, 5.89 };
	gic_summary enq, putc, fl, rtt;
	proxy_env b;
	int bad = 0;

	if (bench_open(&b, nic_kind, 2, 1, 1, 1, proto, LAT_N * 8))
		return;
	enqueue_latency<<<1, 1, 0, b.stream>>>(b.d_views[0], &b.counters[0][0], LAT_N, d);
	bad = proxy_env_wait(&b, names[proto], 60);
	CUDA_OK(cudaMemcpy(h, d, sizeof(lat_sample) * LAT_N, cudaMemcpyDeviceToHost));
	for (int i = 0; i < LAT_N && !bad; i++)
		bad = h[i].rc != 0;
	if (!bad) {
		validate(&b, 1, 1, LAT_N, 0, names[proto]);
		summarize(h, 0, 1.0 / mhz, &enq);
		summarize(h, 1, 1e-3, &putc);
		store_floor<<<1, 1, 0, b.stream>>>(b.scratch, LAT_N, d);
		bad = proxy_env_wait(&b, "floor", 60);
		CUDA_OK(cudaMemcpy(h, d, sizeof(lat_sample) * LAT_N, cudaMemcpyDeviceToHost));
		summarize(h, 0, 1.0 / mhz, &fl);
	}
	if (!bad) {
		round_trip<<<2, 1, 0, b.stream>>>(b.d_views[0], b.d_views[1], b.region[0], b.region[1],
						  LAT_N, proto == GIC_PROXY_TUNED, d);
		bad = proxy_env_wait(&b, "round trip", 60);
		CUDA_OK(cudaMemcpy(h, d, sizeof(lat_sample) * LAT_N, cudaMemcpyDeviceToHost));
		for (int i = 0; i < LAT_N && !bad; i++)
			bad = h[i].rc != 0;
	}
	if (bad) {
		fprintf(stderr, "%s, %s: a request failed: %s | %s\n", nic_names[nic_kind], names[proto],
			gic_proxy_error(b.proxy[0]), gic_proxy_error(b.proxy[1]));
		failures++;
	} else {
		validate(&b, 1, 1, LAT_N, 1, "round trip, PE1");
		validate(&b, 0, 1, LAT_N, 2, "round trip, PE0");
		summarize(h, 0, 1.0 / mhz, &rtt);
		printf("%-25s %-9s %8.3f %7.3f %7.3f | %6.3f %5.2f | %5.2f | %7.3f %7.3f %6.2f | "
		       "%7.3f %7.3f %6.2f\n", nic_names[nic_kind], names[proto], enq.p50, enq.p99,
		       enq.max, fl.p50, enq.p50 / fl.p50, paper_enq[proto], putc.p50, putc.p99,
		       paper_putc[proto], rtt.p50, rtt.p99, paper_rtt[proto]);
	}
	proxy_env_close(&b);
}

static void bench_latency(double mhz)
{
	lat_sample *d, *h = (lat_sample *)calloc(LAT_N, sizeof(lat_sample));

	CUDA_OK(cudaMalloc(&d, sizeof(lat_sample) * LAT_N));
	printf("\nlatency: one GPU thread per PE, 8-byte inline requests, T=1 R=1 B=1; %d samples "
	       "after %d warm-up; enqueue and round trip in SM cycles at %.0f MHz, put+completion in "
	       "globaltimer ns; floor: one posted 16-byte store to mapped host memory\n",
	       LAT_N - LAT_WARMUP, LAT_WARMUP, mhz);
	printf("%-25s %-9s %8s %7s %7s | %6s %5s | %5s | %7s %7s %6s | %7s %7s %6s\n", "nic, counter",
	       "protocol", "enq p50", "p99", "max", "floor", "ratio", "paper", "put+c", "p99", "paper",
	       "rtt p50", "p99", "paper");
	for (int nic = PROXY_NIC_CPU; nic <= PROXY_NIC_GPU; nic++)
		for (int proto = GIC_PROXY_BASELINE; proto <= GIC_PROXY_TUNED; proto++)
			latency_row(nic, proto, mhz, d, h);
	cudaFree(d);
	free(h);
}

static void bench_rate(int nic_kind)
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
	printf("\nrate (%s): tuned protocol, one GPU producer thread per ring, %d 8-byte inline "
	       "requests per ring, until every counter shows them done (paper: B 1->16 gives 5.5x at "
	       "T=1, R=32)\n", nic_names[nic_kind], RATE_PER_RING);
	printf("%4s %4s %4s %12s %10s\n", "T", "R", "B", "M msg/s", "vs B=1");
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		int T = rows[k][0], R = rows[k][1], B = rows[k][2];
		unsigned long long lo = ~0ull, hi = 0;
		proxy_env b;
		double m = 0;
		int ok;

		if (bench_open(&b, nic_kind, 1, T, R, B, GIC_PROXY_TUNED, (size_t)R * RATE_PER_RING * 8))
			continue;
		produce_rate<<<1, R, 0, b.stream>>>(b.d_views[0], b.counters[0], RATE_PER_RING, d_t0,
						     d_t1, d_rc);
		ok = !proxy_env_wait(&b, "rate", 60);
		CUDA_OK(cudaMemcpy(t0, d_t0, sizeof(t0), cudaMemcpyDeviceToHost));
		CUDA_OK(cudaMemcpy(t1, d_t1, sizeof(t1), cudaMemcpyDeviceToHost));
		CUDA_OK(cudaMemcpy(rc, d_rc, sizeof(rc), cudaMemcpyDeviceToHost));
		for (int r = 0; r < R && ok; r++) {
			ok = rc[r] == 0;
			lo = t0[r] < lo ? t0[r] : lo;
			hi = t1[r] > hi ? t1[r] : hi;
		}
		if (ok) {
			validate(&b, 1, R, RATE_PER_RING, 0, "rate");
			m = (double)R * RATE_PER_RING / (double)(hi - lo) * 1e3;
			if (T == 1 && R == 32 && B == 1)
				base = m;
		} else {
			fprintf(stderr, "rate T%d R%d B%d failed: %s\n", T, R, B,
				gic_proxy_error(b.proxy[0]));
			failures++;
		}
		printf("%4d %4d %4d %12.2f %10.2f\n", T, R, B, m, base > 0 ? m / base : 0.0);
		proxy_env_close(&b);
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
	bench_rate(PROXY_NIC_CPU);
	bench_rate(PROXY_NIC_GPU);
	printf("\nvalidation: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
