/*
 * gic-gpu-proxy-suite: mini-proxy driven by GPU producers, on both NIC
 * placements of proxy_env.h (softnic's CPU engine with host-resident
 * counters; softnic's GPU engine with GPU-resident counters bumped through
 * the NIC). The host tests (tests/host/test_proxy.c) cover the same
 * protocol with host producers; these run the device code paths.
 *
 * Cases: the tuned protocol through many wraps of a small ring (the
 * producer outruns the worker: back-pressure, never overwrite); the
 * baseline protocol with 64 producers on one 16-slot ring; several rings,
 * workers and chains; pointer requests whose source the producer wrote
 * just before; an error CQE (bad rkey) reaching the producer as EIO with
 * the failed request named; a clean stop. Every payload is validated.
 * Prints "N passed, N failed"; exit status 0 only when all passed.
 */
#include "proxy_env.h"

#include <errno.h>

static __host__ __device__ uint64_t val(uint64_t slot)
{
	return (slot * 0x9e3779b97f4a7c15ull) ^ 0x5151000000000077ull;
}

enum { DEADLINE_NS = 3000000000ull };

/* rings * ppr threads; thread t produces `per` requests into ring t / ppr,
 * slot (t * per + i) of PE1's region, counted on counter `ring`; then the
 * ring's first producer waits until its counter shows every request of the
 * ring done. Pointer requests copy the word the producer wrote at the same
 * slot of its source just before. Tuned rings have one producer each,
 * which keeps its view in registers. */
__global__ void k_produce(gic_proxy_ring *views, int ppr, int per, int pointer, uint64_t *src,
			  const uint64_t *counters, int *rc_out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int ring = t / ppr;
	gic_proxy_ring local = views[ring];
	int tuned = local.protocol == GIC_PROXY_TUNED;
	gic_proxy_ring *r = tuned ? &local : &views[ring];
	uint64_t deadline = gic_now_ns() + DEADLINE_NS;
	int rc = 0;

	for (int i = 0; i < per && !rc; i++) {
		uint64_t slot = (uint64_t)t * per + i;
		gic_proxy_desc d;

		if (pointer) {
			src[slot] = val(slot);
			rc = gic_proxy_desc_pointer(&d, 8 * slot, 8 * slot, 8, (uint32_t)ring);
		} else {
			rc = gic_proxy_desc_inline(&d, 8 * slot, val(slot), 8, (uint32_t)ring);
		}
		if (!rc)
			rc = tuned ? gic_proxy_enqueue_tuned(r, &d, deadline, NULL)
				   : gic_proxy_enqueue_baseline(r, &d, deadline, NULL);
	}
	if (!rc && t % ppr == 0)
		rc = gic_proxy_wait_counter(r, &counters[ring], (uint64_t)ppr * per, deadline);
	if (tuned)
		views[ring] = local;
	rc_out[t] = rc;
}

typedef struct pcase {
	const char *name;
	int protocol, workers, rings, ppr, batch, log_slots, per, pointer, bad_rkey;
} pcase;

static const pcase cases[] = {
	{ "tuned_wraps_small_ring", GIC_PROXY_TUNED, 1, 1, 1, 1, 4, 3000, 0, 0 },
	{ "baseline_64_producers_16_slots", GIC_PROXY_BASELINE, 1, 1, 64, 4, 4, 100, 0, 0 },
	{ "tuned_2_workers_8_rings_chains", GIC_PROXY_TUNED, 2, 8, 1, 4, 5, 1000, 0, 0 },
	{ "baseline_4_rings_chains", GIC_PROXY_BASELINE, 2, 4, 32, 16, 6, 50, 0, 0 },
	{ "tuned_pointer_requests", GIC_PROXY_TUNED, 1, 2, 1, 4, 5, 800, 1, 0 },
	{ "error_reaches_producer", GIC_PROXY_TUNED, 1, 1, 1, 1, 4, 20, 0, 1 },
};

/* Validates PE1's region after a successful case: every slot holds val(). */
static int check_region(proxy_env *e, size_t n, char *why, size_t len)
{
	uint64_t *h = (uint64_t *)malloc(n * 8);
	int bad = 0;

	if (!h || proxy_env_read(e, h, e->region[1], n * 8)) {
		snprintf(why, len, "cannot read the region");
		free(h);
		return 1;
	}
	for (size_t s = 0; s < n && !bad; s++)
		if (h[s] != val(s)) {
			snprintf(why, len, "slot %zu holds 0x%llx, expected 0x%llx", s,
				 (unsigned long long)h[s], (unsigned long long)val(s));
			bad = 1;
		}
	free(h);
	return bad;
}

/* The error case: the producer saw EIO, the proxy names ring 0's first
 * request and a remote access error. */
static int check_error(proxy_env *e, const int *rc, char *why, size_t len)
{
	gic_proxy_failure f;

	if (rc[0] != EIO) {
		snprintf(why, len, "producer returned %d, expected EIO", rc[0]);
		return 1;
	}
	if (gic_proxy_error_info(e->proxy[0], &f)) {
		snprintf(why, len, "no failure recorded");
		return 1;
	}
	if (f.ring != 0 || f.position != 0 || f.syndrome != GIC_SYND_REMOTE_ACCESS_ERR) {
		snprintf(why, len, "failure names ring %d position %llu syndrome 0x%x (%s)", f.ring,
			 (unsigned long long)f.position, f.syndrome, gic_proxy_error(e->proxy[0]));
		return 1;
	}
	return 0;
}

static int run_case(const pcase *c, int nic_kind, char *why, size_t len)
{
	int threads = c->rings * c->ppr;
	size_t n = (size_t)threads * c->per;
	proxy_env_cfg cfg = { 0 };
	proxy_env e;
	int *d_rc, rc[PROXY_ENV_RINGS * 64];
	int bad;

	cfg.nic_kind = nic_kind;
	cfg.pes = 1;
	cfg.workers = c->workers;
	cfg.rings = c->rings;
	cfg.batch = c->batch;
	cfg.protocol = c->protocol;
	cfg.log_ring_slots = c->log_slots;
	cfg.region_len = n * 8;
	cfg.bad_rkey = c->bad_rkey;
	CUDA_OK(cudaMalloc(&d_rc, sizeof(int) * threads));
	if (proxy_env_open(&e, &cfg)) {
		snprintf(why, len, "fixture failed (see above)");
		proxy_env_close(&e);
		cudaFree(d_rc);
		return 1;
	}
	k_produce<<<(threads + 31) / 32, threads < 32 ? threads : 32, 0, e.stream>>>(
		e.d_views[0], c->ppr, c->per, c->pointer, e.src[0], e.counters[0], d_rc);
	bad = proxy_env_wait(&e, c->name, 60);
	if (bad)
		snprintf(why, len, "producers did not finish");
	else if (proxy_env_read(&e, rc, d_rc, sizeof(int) * threads))
		bad = snprintf(why, len, "cannot read the results") > 0;
	if (!bad && c->bad_rkey) {
		bad = check_error(&e, rc, why, len);
	} else if (!bad) {
		for (int t = 0; t < threads && !bad; t++)
			if (rc[t])
				bad = snprintf(why, len, "producer %d: error %d (%s)", t, rc[t],
					       gic_proxy_error(e.proxy[0])) > 0;
		if (!bad)
			bad = check_region(&e, n, why, len);
		/* A clean stop, twice (the second is a no-op). */
		if (!bad && (gic_proxy_stop(e.proxy[0]) || gic_proxy_stop(e.proxy[0])))
			bad = snprintf(why, len, "stop failed: %s", gic_proxy_error(e.proxy[0])) > 0;
	}
	proxy_env_close(&e);
	cudaFree(d_rc);
	return bad;
}

int main(int argc, char **argv)
{
	static const char *const nics[] = { "cpu", "gpu" };
	const char *only = argc > 1 ? argv[1] : NULL;
	int passed = 0, failed = 0;

	CUDA_OK(cudaSetDeviceFlags(cudaDeviceMapHost));
	for (int nic = PROXY_NIC_CPU; nic <= PROXY_NIC_GPU; nic++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			char why[512] = "";

			if (only && strcmp(only, nics[nic]) && strcmp(only, cases[i].name))
				continue;
			if (run_case(&cases[i], nic, why, sizeof(why))) {
				failed++;
				printf("FAIL %s/%s: %s\n", nics[nic], cases[i].name, why);
			} else {
				passed++;
				printf("PASS %s/%s\n", nics[nic], cases[i].name);
			}
			fflush(stdout);
		}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
