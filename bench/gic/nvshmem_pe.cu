/*
 * bench/gic/nvshmem_pe.cu - the PE side of the NVSHMEM path (nvshmem_pe.h):
 * one process per PE, started by the driver. Built into the static library
 * gic_nvshmem with relocatable device code, device-linked there against
 * libnvshmem_device.a, so the rest of `gic` stays whole-program compiled.
 *
 * lat (one GPU thread on PE 0; 8-byte payloads; clock64 cycles over the SM
 * clock measured in this process):
 *   "nvshmem put"  issue           nvshmem_putmem_nbi(8 B) to PE 1
 *                  put+completion  that, then nvshmem_quiet()
 *   "nvshmem p"    issue           nvshmem_uint64_p to PE 1
 *                  put+completion  that, then nvshmem_quiet()
 *                  rtt             PE 0 p's a request into PE 1's word; PE 1,
 *                                  polling with nvshmem_uint64_test, p's the
 *                                  answer into PE 0's word; PE 0 sees it
 * Sample i writes its own destination slot (up to 65536 slots, then they
 * repeat); afterwards PE 1 reads its whole buffer back and checks every
 * slot; round trips are checked by both sides as they go (each waits for
 * the exact value).
 * rate (each row: `threads` threads over `ctas` CTAs on PE 0, each posting
 * -n nvshmem_putmem_nbi of 8 B to its own 64 destination slots, then
 * nvshmem_quiet; the rate is every message over first start to last quiet,
 * globaltimer): one warm-up round, then GIC_NV_ROUNDS rounds (the result
 * summarizes them; p50 is their median); PE 1 checks every slot of every
 * round and clears them between rounds.
 *
 * Every wait has a time limit: GPU polls (nvshmem_uint64_test with a
 * globaltimer limit), stream waits (cudaStreamQuery), and alarm() for the
 * whole process (collectives inside NVSHMEM have none of their own).
 */
#include <nvshmem.h>
#include <nvshmemx.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "exp_lat.h"
#include "nvshmem_pe.h"

enum {
	NV_LAT_SLOTS = 1 << 16, /* destination slots of the one-way runs */
	NV_RATE_SLOTS = 64,     /* per thread */
	NV_ROUNDS = 5,          /* measured rate rounds */
	NV_PH_PUT = 0, NV_PH_P = 1, NV_PH_RTT = 2, /* lat phases; rate: the row index */
};

static const char ref_note[] = "reference (NVSHMEM 3.4, NVLink, this machine)";

typedef struct nv_sample {
	long long issue;  /* cycles */
	long long total;  /* cycles: to the quiet's return or the answer */
	int rc;
	int pad;
} nv_sample;

/* One PE's state. */
typedef struct nv_pe {
	int rank, peer, out_fd;
	const gic_nv_job *job;
	const char *sub;       /* "lat" or "rate" */
	cudaStream_t stream;
	double mhz;            /* SM clock, measured */
	char version[16];      /* NVSHMEM library version, "3.8.0" */
	char transport[32];    /* "nvshmem-p2p", "nvshmem-ibgda", ... */
	char qps[16];          /* QPs the transport uses to the peer ("0" over P2P) */
	int devices[2];        /* CUDA device of each PE */
} nv_pe;

/* ------------------------------------------------------------------ */
/* Device side. */

static __device__ __forceinline__ uint64_t nv_now_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* The payload of slot (or sample) i under tag: never 0, distinct per i. */
static __host__ __device__ uint64_t nv_val(uint64_t i, uint64_t tag)
{
	return (tag << 56) | (((i + 1) * 0x10001ull) & 0x00ffffffffffffffull);
}

/* Polls the local symmetric word until it holds want; ETIMEDOUT after
 * limit_ns. */
static __device__ int nv_wait(uint64_t *ivar, uint64_t want, uint64_t limit_ns)
{
	uint64_t t0 = nv_now_ns();

	while (!nvshmem_uint64_test(ivar, NVSHMEM_CMP_EQ, want))
		if (nv_now_ns() - t0 > limit_ns)
			return ETIMEDOUT;
	return 0;
}

static __global__ void clock_kernel(double *mhz)
{
	uint64_t t0 = nv_now_ns();
	long long c0 = clock64();

	while (nv_now_ns() - t0 < 20000000ull)
		;
	*mhz = (double)(clock64() - c0) / (double)(nv_now_ns() - t0) * 1e3;
}

/* PE 0, one thread: sample i puts 8 bytes into slot i % slots of the
 * peer's dst (from the same slot of src: put; the value itself: p). */
template <int PUT>
static __global__ void oneway_kernel(uint64_t *dst, const uint64_t *src, int n, int slots,
				     int peer, nv_sample *out)
{
	for (int i = 0; i < n; i++) {
		int s = i % slots;
		uint64_t v = nv_val((uint64_t)s, PUT ? 1 : 2), *d = dst + s;
		const uint64_t *from = src + s;

		/* Inputs are made before the clock starts. */
		asm volatile("" : "+l"(v), "+l"(d), "+l"(from));
		long long c0 = clock64();
		if (PUT)
			nvshmem_putmem_nbi(d, from, 8, peer);
		else
			nvshmem_uint64_p(d, v, peer);
		long long c1 = clock64();
		nvshmem_quiet();
		long long c2 = clock64();

		out[i].issue = c1 - c0;
		out[i].total = c2 - c0;
		out[i].rc = 0;
	}
}

/* PE 0: request i, then the answer. */
static __global__ void rtt_pe0_kernel(uint64_t *req, uint64_t *resp, int n, int peer,
				      uint64_t limit_ns, nv_sample *out)
{
	for (int i = 0; i < n; i++) {
		uint64_t v = nv_val((uint64_t)i, 3);

		asm volatile("" : "+l"(v));
		long long c0 = clock64();
		nvshmem_uint64_p(req, v, peer);
		int rc = nv_wait(resp, ~v, limit_ns);

		out[i].total = clock64() - c0;
		out[i].issue = 0;
		out[i].rc = rc;
		if (rc)
			break;
	}
}

/* PE 1: waits for each request and answers it. */
static __global__ void rtt_pe1_kernel(uint64_t *req, uint64_t *resp, int n, int peer,
				      uint64_t limit_ns, int *rc_out)
{
	for (int i = 0; i < n; i++) {
		uint64_t v = nv_val((uint64_t)i, 3);
		int rc = nv_wait(req, v, limit_ns);

		if (rc) {
			*rc_out = rc;
			return;
		}
		nvshmem_uint64_p(resp, ~v, peer);
	}
	*rc_out = 0;
}

/* PE 0, threads of a rate row: n puts each to the thread's own slots. */
static __global__ void rate_kernel(uint64_t *dst, const uint64_t *src, int n, int peer,
				   unsigned long long *span)
{
	size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t *d = dst + t * NV_RATE_SLOTS;
	const uint64_t *s = src + t * NV_RATE_SLOTS;

	__syncthreads();
	unsigned long long t0 = nv_now_ns();
	for (int i = 0; i < n; i++)
		nvshmem_putmem_nbi(d + (i & (NV_RATE_SLOTS - 1)), s + (i & (NV_RATE_SLOTS - 1)), 8,
				   peer);
	nvshmem_quiet();
	unsigned long long t1 = nv_now_ns();

	atomicMin(&span[0], t0);
	atomicMax(&span[1], t1);
}

/* ------------------------------------------------------------------ */
/* Host side. */

/* Prints why and ends the process: a PE that fails cannot finish the
 * collectives its peer waits in; the driver reports our exit status and
 * kills the peer. */
static void nv_die(const nv_pe *P, const char *what, const char *why)
{
	fprintf(stderr, "gic %s: NVSHMEM PE %d: %s: %s\n", P ? P->sub : "?", P ? P->rank : -1,
		what, why);
	fflush(stderr);
	_exit(1);
}

static void cuda_ok(const nv_pe *P, cudaError_t e, const char *what)
{
	if (e != cudaSuccess)
		nv_die(P, what, cudaGetErrorString(e));
}

static uint64_t host_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits for the PE's stream within the job's time limit. */
static void nv_sync(const nv_pe *P, const char *what)
{
	uint64_t deadline = host_now_ms() + (uint64_t)P->job->limit_s * 1000;
	cudaError_t e;

	while ((e = cudaStreamQuery(P->stream)) == cudaErrorNotReady) {
		if (host_now_ms() > deadline)
			nv_die(P, what, "the GPU did not finish within the time limit");
		usleep(20);
	}
	cuda_ok(P, e, what);
}

/* Barrier of both PEs (on the stream), waited for with the time limit. */
static void nv_barrier(const nv_pe *P, const char *what)
{
	nvshmemx_barrier_all_on_stream(P->stream);
	nv_sync(P, what);
}

static void nv_send(const nv_pe *P, uint32_t type, int phase, const void *data, uint32_t len)
{
	int rc = gic_nv_write_rec(P->out_fd, type, phase, data, len);

	if (rc)
		nv_die(P, "writing to the driver", strerror(rc));
}

static void nv_verdict(const nv_pe *P, int phase, int ok)
{
	int32_t v = ok;

	nv_send(P, GIC_NV_REC_VERDICT, phase, &v, sizeof(v));
}

/* The fields every result of this PE shares. */
static void nv_result(const nv_pe *P, gic_result *r, const char *name, const char *metric,
		      const char *unit)
{
	gic_result_init(r, P->sub, name, metric, unit);
	snprintf(r->transport, sizeof(r->transport), "%s", P->transport);
}

static void nv_emit(const nv_pe *P, int phase, gic_result *r)
{
	nv_send(P, GIC_NV_REC_RESULT, phase, r, sizeof(*r));
}

/* Reads n words of the PE's symmetric buffer back; 1 when word i holds
 * want(i) for every i. */
static int nv_check(const nv_pe *P, const uint64_t *sym, size_t n,
		    uint64_t (*want)(size_t i, const void *arg), const void *arg, const char *what)
{
	uint64_t *h = (uint64_t *)malloc(n * sizeof(uint64_t));
	int ok = 1;

	if (!h)
		nv_die(P, what, "out of memory");
	cuda_ok(P, cudaMemcpyAsync(h, sym, n * sizeof(uint64_t), cudaMemcpyDeviceToHost,
				   P->stream), what);
	nv_sync(P, what);
	for (size_t i = 0; i < n && ok; i++) {
		if (h[i] != want(i, arg)) {
			fprintf(stderr, "gic %s: NVSHMEM PE %d: %s: word %zu holds 0x%016llx, "
				"expected 0x%016llx\n", P->sub, P->rank, what, i,
				(unsigned long long)h[i], (unsigned long long)want(i, arg));
			ok = 0;
		}
	}
	free(h);
	return ok;
}

/* ------------------------------------------------------------------ */
/* lat. */

typedef struct lat_want {
	uint64_t tag;
} lat_want;

static uint64_t lat_slot_want(size_t i, const void *arg)
{
	return nv_val(i, ((const lat_want *)arg)->tag);
}

/* Converts sample cycles to us and emits (name, metric). */
static void lat_emit(const nv_pe *P, int phase, const char *name, const char *metric,
		     const nv_sample *h, int n, int total_not_issue, int validated,
		     const char *api, const char *note)
{
	gic_result r;
	gic_samples s;

	nv_result(P, &r, name, metric, "us");
	gic_samples_init(&s, (size_t)n);
	for (int i = 0; i < n; i++)
		gic_samples_add(&s, (double)(total_not_issue ? h[i].total : h[i].issue) / P->mhz);
	gic_result_set_samples(&r, &s, (size_t)P->job->warmup);
	gic_samples_free(&s);
	gic_result_param(&r, "size=8 api=%s pes=2 devices=%d,%d qps=%s nvshmem=%s sm_mhz=%.0f",
			 api, P->devices[0], P->devices[1], P->qps, P->version, P->mhz);
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.validated = validated;
	nv_emit(P, phase, &r);
}

static void run_lat(nv_pe *P)
{
	const gic_nv_job *J = P->job;
	int n = J->iters + J->warmup, slots = n < NV_LAT_SLOTS ? n : NV_LAT_SLOTS;
	uint64_t limit_ns = (uint64_t)J->limit_s * 1000000000ull;
	uint64_t *dst = (uint64_t *)nvshmem_malloc((size_t)slots * 8);
	uint64_t *src = (uint64_t *)nvshmem_malloc((size_t)slots * 8);
	uint64_t *words = (uint64_t *)nvshmem_malloc(16); /* req, resp */
	nv_sample *d_s = NULL, *h = (nv_sample *)calloc((size_t)n, sizeof(nv_sample));
	int *d_rc = NULL;
	char note[160];

	if (!dst || !src || !words || !h)
		nv_die(P, "lat", "out of memory (symmetric heap: NVSHMEM_SYMMETRIC_SIZE)");
	cuda_ok(P, cudaMalloc(&d_s, sizeof(nv_sample) * (size_t)n), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&d_rc, sizeof(int)), "cudaMalloc");
	P->peer = 1 - P->rank;
	/* The transport to the peer, read back: a pointer means loads and
	 * stores (P2P over NVLink or PCIe). */
	if (nvshmem_ptr(dst, P->peer)) {
		snprintf(P->transport, sizeof(P->transport), "nvshmem-p2p");
		snprintf(P->qps, sizeof(P->qps), "0");
	}
	for (int put = 1; put >= 0 && (J->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)); put--) {
		int phase = put ? NV_PH_PUT : NV_PH_P, valid = 1;
		lat_want w = { (uint64_t)(put ? 1 : 2) };
		const char *name = put ? "nvshmem put" : "nvshmem p";

		if (P->rank == 0) {
			uint64_t *pat = (uint64_t *)malloc((size_t)slots * 8);

			if (!pat)
				nv_die(P, "lat", "out of memory");
			for (int i = 0; i < slots; i++)
				pat[i] = nv_val((uint64_t)i, w.tag);
			cuda_ok(P, cudaMemcpyAsync(src, pat, (size_t)slots * 8,
						   cudaMemcpyHostToDevice, P->stream), "pattern");
			nv_sync(P, "pattern");
			free(pat);
		} else {
			cuda_ok(P, cudaMemsetAsync(dst, 0, (size_t)slots * 8, P->stream), "clear");
		}
		nv_barrier(P, "barrier before the one-way run");
		if (P->rank == 0) {
			if (put)
				oneway_kernel<1><<<1, 1, 0, P->stream>>>(dst, src, n, slots, P->peer, d_s);
			else
				oneway_kernel<0><<<1, 1, 0, P->stream>>>(dst, src, n, slots, P->peer, d_s);
			cuda_ok(P, cudaGetLastError(), "oneway launch");
			cuda_ok(P, cudaMemcpyAsync(h, d_s, sizeof(nv_sample) * (size_t)n,
						   cudaMemcpyDeviceToHost, P->stream), "samples");
			nv_sync(P, name);
		}
		nv_barrier(P, "barrier after the one-way run");
		if (P->rank == 1) {
			nv_verdict(P, phase, nv_check(P, dst, (size_t)slots, lat_slot_want, &w, name));
			continue;
		}
		for (int i = 0; i < n; i++)
			valid &= h[i].rc == 0;
		if (J->metrics & GIC_LAT_ISSUE) {
			if (put)
				snprintf(note, sizeof(note), "%s: 0.357 us; NVSHMEM %s here", ref_note,
					 P->version);
			else
				snprintf(note, sizeof(note), "NVSHMEM %s; no reference for nvshmem_p",
					 P->version);
			lat_emit(P, phase, name, "issue", h, n, 0, valid,
				 put ? "nvshmem_putmem_nbi" : "nvshmem_uint64_p", note);
		}
		if (J->metrics & GIC_LAT_PUTC) {
			if (put)
				snprintf(note, sizeof(note), "%s: 1.22 us (put+quiet); NVSHMEM %s here",
					 ref_note, P->version);
			else
				snprintf(note, sizeof(note), "NVSHMEM %s; no reference for "
					 "nvshmem_p+quiet", P->version);
			lat_emit(P, phase, name, "put+completion", h, n, 1, valid,
				 put ? "nvshmem_putmem_nbi+nvshmem_quiet" : "nvshmem_uint64_p+nvshmem_quiet",
				 note);
		}
	}
	if (J->metrics & GIC_LAT_RTT) {
		int rc = -1, valid = 1;

		cuda_ok(P, cudaMemsetAsync(words, 0, 16, P->stream), "clear");
		nv_barrier(P, "barrier before the round trips");
		if (P->rank == 0)
			rtt_pe0_kernel<<<1, 1, 0, P->stream>>>(words, words + 1, n, P->peer, limit_ns,
								d_s);
		else
			rtt_pe1_kernel<<<1, 1, 0, P->stream>>>(words, words + 1, n, P->peer, limit_ns,
								d_rc);
		cuda_ok(P, cudaGetLastError(), "rtt launch");
		if (P->rank == 0)
			cuda_ok(P, cudaMemcpyAsync(h, d_s, sizeof(nv_sample) * (size_t)n,
						   cudaMemcpyDeviceToHost, P->stream), "samples");
		else
			cuda_ok(P, cudaMemcpyAsync(&rc, d_rc, sizeof(int), cudaMemcpyDeviceToHost,
						   P->stream), "rc");
		nv_sync(P, "round trips");
		nv_barrier(P, "barrier after the round trips");
		if (P->rank == 1) {
			uint64_t last = nv_val((uint64_t)n - 1, 3), got = 0;

			if (rc)
				fprintf(stderr, "gic lat: NVSHMEM PE 1: round trips: %s\n",
					rc == ETIMEDOUT ? "a request did not arrive in time" : "failed");
			/* Every request was seen (exact values, in order); the
			 * word holds the last. */
			cuda_ok(P, cudaMemcpyAsync(&got, words, 8, cudaMemcpyDeviceToHost, P->stream),
				"read back");
			nv_sync(P, "read back");
			nv_verdict(P, NV_PH_RTT, rc == 0 && got == last);
		} else {
			for (int i = 0; i < n; i++)
				valid &= h[i].rc == 0;
			if (!valid)
				fprintf(stderr, "gic lat: NVSHMEM PE 0: round trips: an answer did not "
					"arrive in time\n");
			snprintf(note, sizeof(note), "%s: 2.30 us (p/wait_until); here p and an "
				 "nvshmem_uint64_test poll with a time limit", ref_note);
			lat_emit(P, NV_PH_RTT, "nvshmem p", "rtt", h, n, 1, valid, "nvshmem_uint64_p",
				 note);
		}
	}
	nv_barrier(P, "barrier before freeing");
	nvshmem_free(words);
	nvshmem_free(src);
	nvshmem_free(dst);
	cudaFree(d_rc);
	cudaFree(d_s);
	free(h);
}

/* ------------------------------------------------------------------ */
/* rate. */

static uint64_t rate_slot_want(size_t i, const void *arg)
{
	int n = *(const int *)arg; /* messages per thread */
	size_t s = i % NV_RATE_SLOTS;

	return (int)s < n ? nv_val(i, 4) : 0;
}

static void run_rate(nv_pe *P)
{
	const gic_nv_job *J = P->job;
	int maxt = 1;
	size_t words;
	uint64_t *dst, *src;
	unsigned long long *d_span = NULL;

	for (int r = 0; r < J->nrows; r++)
		maxt = J->rows[r].threads > maxt ? J->rows[r].threads : maxt;
	words = (size_t)maxt * NV_RATE_SLOTS;
	dst = (uint64_t *)nvshmem_malloc(words * 8);
	src = (uint64_t *)nvshmem_malloc(words * 8);
	if (!dst || !src)
		nv_die(P, "rate", "out of memory (symmetric heap: NVSHMEM_SYMMETRIC_SIZE)");
	cuda_ok(P, cudaMalloc(&d_span, 2 * sizeof(unsigned long long)), "cudaMalloc");
	P->peer = 1 - P->rank;
	if (nvshmem_ptr(dst, P->peer)) {
		snprintf(P->transport, sizeof(P->transport), "nvshmem-p2p");
		snprintf(P->qps, sizeof(P->qps), "0");
	}
	if (P->rank == 0) {
		uint64_t *pat = (uint64_t *)malloc(words * 8);

		if (!pat)
			nv_die(P, "rate", "out of memory");
		for (size_t i = 0; i < words; i++)
			pat[i] = nv_val(i, 4);
		cuda_ok(P, cudaMemcpyAsync(src, pat, words * 8, cudaMemcpyHostToDevice, P->stream),
			"pattern");
		nv_sync(P, "pattern");
		free(pat);
	}
	for (int r = 0; r < J->nrows; r++) {
		const gic_nv_rate_row *row = &J->rows[r];
		int per_cta = row->threads / row->ctas, ok = 1;
		double rates[NV_ROUNDS];

		for (int round = -1; round < NV_ROUNDS; round++) { /* -1: warm-up */
			unsigned long long span[2] = { ~0ull, 0 };

			if (P->rank == 1)
				cuda_ok(P, cudaMemsetAsync(dst, 0, words * 8, P->stream), "clear");
			else
				cuda_ok(P, cudaMemcpyAsync(d_span, span, sizeof(span),
							   cudaMemcpyHostToDevice, P->stream), "span");
			nv_barrier(P, "barrier before a rate round");
			if (P->rank == 0) {
				rate_kernel<<<row->ctas, per_cta, 0, P->stream>>>(dst, src, J->iters,
										 P->peer, d_span);
				cuda_ok(P, cudaGetLastError(), "rate launch");
				cuda_ok(P, cudaMemcpyAsync(span, d_span, sizeof(span),
							   cudaMemcpyDeviceToHost, P->stream), "span");
				nv_sync(P, row->name);
				if (round >= 0)
					rates[round] = (double)row->threads * J->iters * 1e3 /
						       (double)(span[1] - span[0]);
			}
			nv_barrier(P, "barrier after a rate round");
			if (P->rank == 1)
				ok &= nv_check(P, dst, (size_t)row->threads * NV_RATE_SLOTS,
					       rate_slot_want, &J->iters, row->name);
		}
		if (P->rank == 1) {
			nv_verdict(P, r, ok);
			continue;
		}
		gic_result res;
		gic_samples s;

		nv_result(P, &res, row->name, "message rate", "M msg/s");
		gic_samples_init(&s, NV_ROUNDS);
		for (int i = 0; i < NV_ROUNDS; i++)
			gic_samples_add(&s, rates[i]);
		gic_result_set_samples(&res, &s, 0);
		gic_samples_free(&s);
		gic_result_param(&res, "threads=%d ctas=%d size=8 msgs_per_thread=%d rounds=%d "
				 "api=nvshmem_putmem_nbi+nvshmem_quiet pes=2 devices=%d,%d qps=%s "
				 "nvshmem=%s", row->threads, row->ctas, J->iters, NV_ROUNDS,
				 P->devices[0], P->devices[1], P->qps, P->version);
		snprintf(res.note, sizeof(res.note), "NVSHMEM %s; 64 slots per thread, each "
			 "checked on PE 1 after every round; not the paper's P-IB row", P->version);
		res.validated = 1;
		nv_emit(P, r, &res);
	}
	nv_barrier(P, "barrier before freeing");
	nvshmem_free(src);
	nvshmem_free(dst);
	cudaFree(d_span);
}

/* ------------------------------------------------------------------ */

static char alarm_msg[128];

/* The PE's own time limit (alarm): says so and ends the process. */
static void on_alarm(int sig)
{
	ssize_t k = write(2, alarm_msg, strlen(alarm_msg));

	(void)sig, (void)k;
	_exit(124);
}

/* Reads the job (and, for rank > 0, the unique id) from the driver. */
static void read_input(nv_pe *P, int in_fd, gic_nv_job *job, nvshmemx_uniqueid_t *uid)
{
	gic_nv_rec h;
	int rc = gic_nv_read_full(in_fd, job, sizeof(*job), 30000);

	if (rc || job->magic != GIC_NV_MAGIC || (job->kind != GIC_NV_LAT && job->kind != GIC_NV_RATE))
		nv_die(P, "reading the job", rc ? strerror(rc) : "malformed");
	if (job->iters < 1 || job->warmup < 0 || job->nrows < 0 || job->nrows > GIC_NV_MAX_ROWS ||
	    job->limit_s < 1 ||
	    (job->kind == GIC_NV_LAT && job->iters + job->warmup > GIC_NV_MAX_SAMPLES))
		nv_die(P, "reading the job", "values out of range");
	for (int r = 0; r < job->nrows; r++) {
		const gic_nv_rate_row *w = &job->rows[r];

		if (w->threads < 1 || w->ctas < 1 || w->threads % w->ctas ||
		    w->threads / w->ctas > 1024)
			nv_die(P, "reading the job", "a rate row's threads do not split into CTAs");
	}
	if (P->rank == 0)
		return;
	rc = gic_nv_read_full(in_fd, &h, sizeof(h), 30000);
	if (!rc && (h.magic != GIC_NV_MAGIC || h.type != GIC_NV_REC_UID || h.len != sizeof(*uid)))
		rc = EPROTO;
	if (!rc)
		rc = gic_nv_read_full(in_fd, uid, sizeof(*uid), 30000);
	if (rc)
		nv_die(P, "reading the unique id", strerror(rc));
}

int gic_nvshmem_pe(int rank, int nranks, int in_fd, int out_fd)
{
	nv_pe pe, *P = &pe;
	gic_nv_job job;
	nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
	nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
	int ngpu = 0, maj = 0, min = 0, patch = 0;
	double *d_mhz;

	memset(P, 0, sizeof(*P));
	P->rank = rank;
	P->out_fd = out_fd;
	P->job = &job;
	P->sub = "nvshmem";
	read_input(P, in_fd, &job, &uid);
	P->sub = job.kind == GIC_NV_LAT ? "lat" : "rate";
	snprintf(alarm_msg, sizeof(alarm_msg), "gic %s: NVSHMEM PE %d: time limit (%d s) "
		 "reached\n", P->sub, rank, job.limit_s);
	signal(SIGALRM, on_alarm);
	alarm((unsigned)job.limit_s);
	if (cudaGetDeviceCount(&ngpu) != cudaSuccess) {
		cudaGetLastError();
		ngpu = 0;
	}
	if (ngpu < nranks) {
		int32_t found = ngpu;

		if (rank == 0)
			nv_send(P, GIC_NV_REC_SKIP, 0, &found, sizeof(found));
		return 0;
	}
	P->devices[0] = 0;
	P->devices[1] = 1;
	cuda_ok(P, cudaSetDevice(rank), "cudaSetDevice");
	if (rank == 0) {
		if (nvshmemx_get_uniqueid(&uid))
			nv_die(P, "nvshmemx_get_uniqueid", "failed");
		nv_send(P, GIC_NV_REC_UID, 0, &uid, sizeof(uid));
	}
	if (nvshmemx_set_attr_uniqueid_args(rank, nranks, &uid, &attr))
		nv_die(P, "nvshmemx_set_attr_uniqueid_args", "failed");
	/* Exits the process (status 255) when NVSHMEM cannot start; its
	 * messages say why, the driver reports the status. */
	nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
	if (nvshmem_my_pe() != rank || nvshmem_n_pes() != nranks)
		nv_die(P, "nvshmemx_init_attr", "this PE's rank or the PE count differ from ours");
	cuda_ok(P, cudaStreamCreateWithFlags(&P->stream, cudaStreamNonBlocking), "stream");
	nvshmemx_vendor_get_version_info(&maj, &min, &patch);
	snprintf(P->version, sizeof(P->version), "%d.%d.%d", maj, min, patch);
	/* Not P2P: a NIC transport; which one is what we asked NVSHMEM for. */
	{
		const char *ibgda = getenv("NVSHMEM_IB_ENABLE_IBGDA");
		const char *remote = getenv("NVSHMEM_REMOTE_TRANSPORT");
		const char *nrc = getenv("NVSHMEM_IBGDA_NUM_RC_PER_PE");

		if (ibgda && (!strcmp(ibgda, "1") || !strcasecmp(ibgda, "true")))
			snprintf(P->transport, sizeof(P->transport), "nvshmem-ibgda");
		else
			snprintf(P->transport, sizeof(P->transport), "nvshmem-%s",
				 remote ? remote : "ibrc");
		snprintf(P->qps, sizeof(P->qps), "%s", nrc ? nrc : "default");
	}
	cuda_ok(P, cudaMalloc(&d_mhz, sizeof(double)), "cudaMalloc");
	clock_kernel<<<1, 1, 0, P->stream>>>(d_mhz);
	cuda_ok(P, cudaMemcpyAsync(&P->mhz, d_mhz, sizeof(double), cudaMemcpyDeviceToHost,
				   P->stream), "SM clock");
	nv_sync(P, "SM clock");
	cudaFree(d_mhz);
	if (!(P->mhz > 0))
		nv_die(P, "SM clock", "not measurable");
	if (job.kind == GIC_NV_LAT)
		run_lat(P);
	else
		run_rate(P);
	cudaStreamDestroy(P->stream);
	nvshmem_finalize();
	nv_send(P, GIC_NV_REC_DONE, 0, NULL, 0);
	return 0;
}
