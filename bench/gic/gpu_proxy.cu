/*
 * bench/gic/gpu_proxy.cu - `gic proxy` on the GPU: mini-proxy with GPU
 * producers (paper Figure 7, Tables 9 and 10).
 *
 * For every (protocol, T, R, B) of the lists: message rate (one GPU producer
 * thread per ring, -n 8-byte inline requests per ring, timed from the first
 * enqueue to the last counter showing its ring done) and put+completion of
 * one request at a time on ring 0. --counter host: softnic's CPU engine
 * executes the workers' WQEs and the workers add to host-resident counters;
 * --counter gpu: softnic's GPU engine serves the workers' host-resident
 * queues and the workers bump GPU-resident counters with ATOMIC_FA through
 * it (tests/gpu/proxy_env.h). Worker cores are pinned from core 8; their
 * frequency is reported where the machine exposes it. Every payload is
 * checked after every run.
 */
#include "exp_proxy.h"
#include "gpu_common.h"
#include "../../tests/gpu/proxy_env.h"

#include <errno.h>

enum { PROXY_LAT_MAX = 4096 };

static __host__ __device__ uint64_t pval(uint64_t i, uint64_t ring)
{
	return (ring << 48) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x0123456700000011ull;
}

/* Thread r produces `per` requests into ring r (one producer per ring),
 * then waits for its counter; times first enqueue to completion (ns). */
__global__ void proxy_rate_kernel(gic_proxy_ring *views, const uint64_t *counters, int per,
				  unsigned long long *t0, unsigned long long *t1, int *rc_out)
{
	int r = threadIdx.x;
	gic_proxy_ring local = views[r];
	int tuned = local.protocol == GIC_PROXY_TUNED;
	gic_proxy_ring *ring = tuned ? &local : &views[r];
	uint64_t deadline;
	int rc = 0;

	t0[r] = gic_now_ns();
	deadline = t0[r] + 20000000000ull;
	for (int i = 0; i < per && !rc; i++) {
		gic_proxy_desc d;

		rc = gic_proxy_desc_inline(&d, 8 * ((uint64_t)r * per + i), pval(i, r), 8, r);
		if (!rc)
			rc = tuned ? gic_proxy_enqueue_tuned(ring, &d, deadline, NULL)
				   : gic_proxy_enqueue_baseline(ring, &d, deadline, NULL);
	}
	if (!rc)
		rc = gic_proxy_wait_counter(ring, &counters[r], (uint64_t)per, deadline);
	t1[r] = gic_now_ns();
	rc_out[r] = rc;
	if (tuned)
		views[r] = local;
}

/* One request at a time on ring 0: put+completion in SM cycles. */
__global__ void proxy_putc_kernel(gic_proxy_ring *views, const uint64_t *counter, int n,
				  long long *cycles, int *rc_out)
{
	gic_proxy_ring local = views[0];
	int tuned = local.protocol == GIC_PROXY_TUNED;
	gic_proxy_ring *ring = tuned ? &local : &views[0];
	int rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		gic_proxy_desc d;
		uint64_t deadline = gic_now_ns() + 2000000000ull;
		long long c0;

		rc = gic_proxy_desc_inline(&d, 8 * (uint64_t)i, pval(i, 0), 8, 0);
		c0 = clock64();
		if (!rc)
			rc = tuned ? gic_proxy_enqueue_tuned(ring, &d, deadline, NULL)
				   : gic_proxy_enqueue_baseline(ring, &d, deadline, NULL);
		if (!rc)
			rc = gic_proxy_wait_counter(ring, counter, (uint64_t)i + 1, deadline);
		cycles[i] = clock64() - c0;
	}
	*rc_out = rc;
	if (tuned)
		views[0] = local;
}

/* ------------------------------------------------------------------ */

typedef struct proxy_cfg {
	int protocol, T, R, B;
} proxy_cfg;

typedef struct proxy_run {
	const gic_opts *o;
	const proxy_state *st;
	const gic_run_info *info;
	gic_sink *sink;
	unsigned long long *d_t0, *d_t1;
	int *d_rc;
	long long *d_cycles;
	int failed;          /* configurations that could not run */
} proxy_run;

/* PE1's region: word r * per + i == pval(i, r) for r < rings, i < per. */
static int check_region(proxy_env *e, int rings, int per)
{
	size_t n = (size_t)rings * per;
	uint64_t *h = (uint64_t *)malloc(n * 8);
	int ok = h && !proxy_env_read(e, h, e->region[1], n * 8);

	for (size_t k = 0; k < n && ok; k++)
		if (h[k] != pval(k % per, k / per)) {
			fprintf(stderr, "gic proxy: ring %zu request %zu: 0x%llx\n", k / per, k % per,
				(unsigned long long)h[k]);
			ok = 0;
		}
	free(h);
	return ok;
}

static void fill_result(proxy_run *P, gic_result *r, const proxy_cfg *c, const char *metric,
			const char *unit, proxy_env *e)
{
	char name[96], mhz[24];

	snprintf(name, sizeof(name), "%s T%d/R%d/B%d", c->protocol ? "tuned" : "baseline", c->T,
		 c->R, c->B);
	gic_result_init(r, "proxy", name, metric, unit);
	gic_proxy_worker_mhz_text(e->proxy[0], 0, mhz, sizeof(mhz));
	snprintf(r->params, sizeof(r->params), "protocol=%s T=%d R=%d B=%d",
		 c->protocol ? "tuned" : "baseline", c->T, c->R, c->B);
	gic_result_flag_params(r, &gic_proxy_flags, P->st, "counter warm_ms idle_ms inflight");
	gic_result_param(r, "per_ring=%d", P->o->iters);
	snprintf(r->note, sizeof(r->note), "worker 0: %s; K%d chains in flight; %s", mhz,
		 P->st->inflight,
		 P->st->counter_gpu ? "softnic GPU engine serving host queues (slow: PCIe reads)"
				    : "softnic CPU engine");
	snprintf(r->transport, sizeof(r->transport), "%s",
		 gpu_transport_name(P->o, P->st->counter_gpu));
}

static void rate_one(proxy_run *P, const proxy_cfg *c, proxy_env *e)
{
	unsigned long long t0[PROXY_ENV_RINGS], t1[PROXY_ENV_RINGS], lo = ~0ull, hi = 0;
	int rc[PROXY_ENV_RINGS], per = P->o->iters, ok;
	gic_result r;

	proxy_rate_kernel<<<1, c->R, 0, e->stream>>>(e->d_views[0], e->counters[0], per, P->d_t0,
						      P->d_t1, P->d_rc);
	ok = !proxy_env_wait(e, "gic proxy rate", 120) &&
	     !proxy_env_read(e, t0, P->d_t0, sizeof(t0)) && !proxy_env_read(e, t1, P->d_t1, sizeof(t1)) &&
	     !proxy_env_read(e, rc, P->d_rc, sizeof(rc));
	for (int k = 0; k < c->R && ok; k++) {
		if (rc[k]) {
			fprintf(stderr, "gic proxy: ring %d: error %d (%s)\n", k, rc[k],
				gic_proxy_error(e->proxy[0]));
			ok = 0;
		}
		lo = t0[k] < lo ? t0[k] : lo;
		hi = t1[k] > hi ? t1[k] : hi;
	}
	ok = ok && check_region(e, c->R, per);
	fill_result(P, &r, c, gic_proxy_exp_metric(P->st, "message rate"), "M msg/s", e);
	gic_result_set_value(&r, ok ? (double)c->R * per / (double)(hi - lo) * 1e3 : 0);
	r.validated = ok;
	gic_emit(P->sink, &r); /* a failed check is the row's verdict, not an error */
}

static void putc_one(proxy_run *P, const proxy_cfg *c, proxy_env *e)
{
	int n = P->o->iters + P->o->warmup, rc = 0, ok;
	long long *h = (long long *)calloc(n, sizeof(long long));
	double *v = (double *)calloc(n, sizeof(double));
	gic_result r;

	proxy_putc_kernel<<<1, 1, 0, e->stream>>>(e->d_views[0], &e->counters[0][0], n, P->d_cycles,
						   P->d_rc);
	ok = h && v && !proxy_env_wait(e, "gic proxy put+completion", 120) &&
	     !proxy_env_read(e, h, P->d_cycles, sizeof(long long) * n) &&
	     !proxy_env_read(e, &rc, P->d_rc, sizeof(int)) && rc == 0 && check_region(e, 1, n);
	if (rc)
		fprintf(stderr, "gic proxy: put+completion: error %d (%s)\n", rc,
			gic_proxy_error(e->proxy[0]));
	for (int i = 0; i < n && h && v; i++)
		v[i] = (double)h[i] / P->info->sm_mhz;
	fill_result(P, &r, c, gic_proxy_exp_metric(P->st, "put+completion"), "us", e);
	r.validated = ok;
	if (v)
		gpu_samples_emit(P->sink, &r, v, n, P->o->warmup);
	free(h);
	free(v);
}

/* One configuration on a fresh fixture per metric (counters and regions
 * start at zero). */
static void run_cfg(proxy_run *P, const proxy_cfg *c)
{
	for (unsigned m = GIC_PROXY_EXP_RATE; m <= GIC_PROXY_EXP_LAT; m <<= 1) {
		int n = P->o->iters + P->o->warmup;
		size_t len = m == GIC_PROXY_EXP_RATE ? (size_t)c->R * P->o->iters * 8 : (size_t)n * 8;
		proxy_env_cfg cfg = { P->st->counter_gpu ? PROXY_NIC_GPU : PROXY_NIC_CPU, 1, c->T, c->R,
				      c->B, c->protocol, 0, len, 0, P->st->warm_ms, P->st->inflight,
				      P->st->idle_ms };
		proxy_env e;

		gpu_proxy_env_nic(&cfg, P->o);
		if (!(P->st->metrics & m))
			continue;
		if (proxy_env_open(&e, &cfg)) {
			proxy_env_close(&e);
			P->failed++;
			continue;
		}
		if (m == GIC_PROXY_EXP_RATE)
			rate_one(P, c, &e);
		else
			putc_one(P, c, &e);
		proxy_env_close(&e);
	}
}

int gic_gpu_proxy(const gic_opts *o, const proxy_state *st, const gic_run_info *info,
		  gic_sink *sink)
{
	proxy_run P;
	int total = 0, done = 0;

	if (st->counter_gpu && gpu_softnic_only(o, "proxy", "--counter gpu (softnic's GPU engine "
							     "behind the workers)"))
		return ENOTSUP;
	memset(&P, 0, sizeof(P));
	P.o = o;
	P.st = st;
	P.info = info;
	P.sink = sink;
	if (info->sm_mhz <= 0)
		return ENODEV;
	if (o->iters + o->warmup > PROXY_LAT_MAX) {
		fprintf(stderr, "gic proxy: -n plus -w must be at most %d on the GPU\n", PROXY_LAT_MAX);
		return EINVAL;
	}
	if (cudaMalloc(&P.d_t0, 8 * PROXY_ENV_RINGS) || cudaMalloc(&P.d_t1, 8 * PROXY_ENV_RINGS) ||
	    cudaMalloc(&P.d_rc, sizeof(int) * PROXY_ENV_RINGS) ||
	    cudaMalloc(&P.d_cycles, sizeof(long long) * PROXY_LAT_MAX))
		return ENOMEM;
	total = 2 * st->nT * st->nR * st->nB;
	for (int p = 0; p < 2; p++)
		for (int a = 0; a < st->nT; a++)
			for (int b = 0; b < st->nR; b++)
				for (int k = 0; k < st->nB; k++, done++) {
					proxy_cfg c = { p, st->T[a], st->R[b], st->B[k] };

					if (!(st->protocols & (p ? GIC_PROXY_EXP_TUNED
								 : GIC_PROXY_EXP_BASELINE)))
						continue;
					if (c.R < c.T) {
						fprintf(stderr, "gic proxy: T%d/R%d skipped: every worker "
							"needs a ring (R >= T)\n", c.T, c.R);
						continue;
					}
					gic_progress("proxy", done, total, "configuration");
					run_cfg(&P, &c);
				}
	cudaFree(P.d_t0);
	cudaFree(P.d_t1);
	cudaFree(P.d_rc);
	cudaFree(P.d_cycles);
	return P.failed ? EIO : 0;
}
