/*
 * bench/gic/nccl_pe.cu - the PE side of the NCCL GIN path (nccl_pe.h): one
 * process per PE, started by the driver. NCCL's device API is header-only
 * (its GDAKI and Proxy backends are inline device code), so this file is
 * compiled whole-program into gic like the other GPU parts; the host calls
 * go through function pointers taken from libnccl.so.2 at run time (dlopen),
 * so gic has no link-time dependency on NCCL.
 *
 * lat (one GPU thread on PE 0, context 0; 8-byte payloads; clock64 cycles
 * over the SM clock measured in this process):
 *   "gin put"       issue           ncclGin::put of 8 B from PE 0's window
 *                                   into PE 1's
 *                   put+completion  that, then ncclGin::flush (NCCL: the
 *                                   source may be reused; remote
 *                                   visibility is what signals give)
 *   "gin putValue"  issue           ncclGin::putValue (the value travels in
 *                                   the descriptor: the inline case)
 *                   put+completion  that, then flush
 *                   rtt             PE 0 putValue's a request with a signal
 *                                   increment into PE 1; PE 1, polling the
 *                                   signal (readSignal, with a time limit),
 *                                   checks the word and answers the same way;
 *                                   PE 0 sees its signal and checks the answer
 * Sample i writes its own slot (up to 65536, then they repeat). After a
 * one-way run PE 0 sends one signal on the context (NCCL: it becomes
 * visible only after every earlier put on that context to that peer has
 * landed); PE 1 waits for it, reads its window back and checks every slot.
 * rate (each row: `threads` threads over `ctas` CTAs on PE 0, CTA b on
 * context b mod the context count, each thread posting -n puts of 8 B to
 * its own 64 slots, then flush; the rate is every message over first start
 * to last flush, globaltimer): after its flushes each CTA signals on its
 * context; PE 1 waits for every CTA's signal and checks every slot. One
 * warm-up round, then PE_ROUNDS measured ones (p50 is their median).
 *
 * Signals live per context at the receiver: NC_SIG_REQ (PE 1: requests),
 * NC_SIG_ANS (PE 0: answers), NC_SIG_DONE (PE 1: a sender's "all landed").
 * The receiver resets them before the barrier that starts a phase, so no
 * reset races an increment.
 *
 * Every wait of ours has a time limit: GPU polls (globaltimer), stream
 * waits (cudaStreamQuery), and alarm() for the whole process (NCCL's own
 * waits, inside flush and the collectives, have none).
 */
/* NCCL's headers, without the warnings our flags find in them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl.h>
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exp_lat.h"
#include "nccl_pe.h"
#include "pe_gpu.cuh"

enum {
	NC_PH_PUT = 0, NC_PH_PUTV = 1, NC_PH_RTT = 2, /* lat phases; rate: the row index */
	NC_SIG_REQ = 0, NC_SIG_ANS = 1, NC_SIG_DONE = 2, NC_SIGNALS = 3,
	NC_ALIGN = 4096,        /* NCCL_WIN_REQUIRED_ALIGNMENT */
};

typedef pe_sample nc_sample;

/* The host calls, from libnccl.so.2 (types checked against the headers). */
typedef struct nc_lib {
	void *handle;
	decltype(&ncclGetVersion) getVersion;
	decltype(&ncclGetUniqueId) getUniqueId;
	decltype(&ncclCommInitRank) commInitRank;
	decltype(&ncclCommFinalize) commFinalize;
	decltype(&ncclCommDestroy) commDestroy;
	decltype(&ncclGetErrorString) getErrorString;
	decltype(&ncclGetLastError) getLastError;
	decltype(&ncclMemAlloc) memAlloc;
	decltype(&ncclMemFree) memFree;
	decltype(&ncclCommWindowRegister) windowRegister;
	decltype(&ncclCommWindowDeregister) windowDeregister;
	decltype(&ncclDevCommCreate) devCommCreate;
	decltype(&ncclDevCommDestroy) devCommDestroy;
	decltype(&ncclAllReduce) allReduce;
} nc_lib;

/* One PE's state. */
typedef struct nc_pe {
	gic_pl_pe pl;           /* rank, PE count, records to the driver; sub:
				 * "lat" or "rate" */
	int peer;
	const gic_nc_job *job;
	nc_lib lib;
	ncclComm_t comm;
	ncclDevComm dev;        /* by value into every kernel */
	ncclWindow_t win;       /* the symmetric window over buf */
	uint8_t *buf;           /* ncclMemAlloc'd, this PE's part of the window */
	size_t size;            /* bytes of buf (and of the window) */
	int *d_one, *d_sum;     /* the barrier's all-reduce */
	cudaStream_t stream;
	double mhz;             /* SM clock, measured */
	int nctx;               /* GIN contexts of the device communicator */
	char version[16];       /* NCCL library version, "2.28.9" */
	char backend[16];       /* "gdaki" or "proxy" */
	char transport[32];     /* "nccl-gin-gdaki", ... */
} nc_pe;

/* ------------------------------------------------------------------ */
/* Device side. */

/* Polls signal s of gin's context until it reaches least; ETIMEDOUT after
 * limit_ns. readSignal is an acquire load: the payloads the signal covers
 * are visible to this thread's later loads. */
static __device__ __forceinline__ int nc_wait_signal(const ncclGin &gin, ncclGinSignal_t s,
						     uint64_t least, uint64_t limit_ns)
{
	uint64_t t0 = pe_now_ns();

	while (gin.readSignal(s) < least)
		if (pe_now_ns() - t0 > limit_ns)
			return ETIMEDOUT;
	return 0;
}

/* Resets signals 0..NC_SIGNALS-1 of every context (the receiver, before
 * the barrier that starts a phase). */
static __global__ void reset_kernel(ncclDevComm dev)
{
	for (int c = 0; c < dev.ginContextCount; c++) {
		ncclGin gin(dev, c);

		for (int s = 0; s < NC_SIGNALS; s++)
			gin.resetSignal((ncclGinSignal_t)s);
	}
}

/* The GIN transport of the shared bodies (pe_bodies.cuh): window offsets
 * of win on one context (gin); round trips: putValue to dst with an
 * increment of signal out, waiting for signal in to count message i + 1,
 * then reading the word at in_word (PE 1: a wrong request counted in
 * *bad). */
typedef struct pe_tx {
	size_t dst, src;
	ncclGin *gin;
	ncclTeam world;
	ncclWindow_t win;
	int peer;
	ncclGinSignal_t out, in;
	const volatile uint64_t *in_word;
	int *bad;
} pe_tx;

static __device__ __forceinline__ pe_tx nc_tx(ncclGin *gin, const ncclDevComm &dev,
					      ncclWindow_t win, size_t dst, size_t src, int peer)
{
	pe_tx x = { dst, src, gin, ncclTeamWorld(dev), win, peer, 0, 0, NULL, NULL };

	return x;
}

static __device__ __forceinline__ pe_tx pe_tx_at(const pe_tx &x, size_t k)
{
	pe_tx y = x;

	y.dst = x.dst + 8 * k;
	y.src = x.src + 8 * k;
	return y;
}

/* mode 1: put from x.src; 0: putValue of v (the value travels in the
 * descriptor). */
static __device__ __forceinline__ void pe_tx_put(const pe_tx &x, int mode, uint64_t v)
{
	if (mode)
		x.gin->put(x.world, x.peer, x.win, x.dst, x.win, x.src, 8);
	else
		x.gin->putValue(x.world, x.peer, x.win, x.dst, v);
}

#define pe_tx_complete(x, mode) (x).gin->flush(ncclCoopThread())
#define pe_tx_rtt_end(x) (x).gin->flush(ncclCoopThread())
#define pe_tx_send(x, v) \
	(x).gin->putValue((x).world, (x).peer, (x).win, (x).dst, v, ncclGin_SignalInc{ (x).out })
#define pe_tx_answer_rc(x, rc, v) ((rc) ? (rc) : *(x).in_word == ~(v) ? 0 : EIO)

static __device__ __forceinline__ int pe_tx_wait(const pe_tx &x, int i, uint64_t want,
						 uint64_t limit_ns)
{
	int rc = nc_wait_signal(*x.gin, x.in, (uint64_t)i + 1, limit_ns);

	if (!rc && x.in == NC_SIG_REQ) /* PE 1 */
		*x.bad += *x.in_word != want;
	return rc;
}

/* Every thread's puts are issued and flushed before thread 0 signals; the
 * signal lands after all of them (same context). */
static __device__ __forceinline__ void pe_tx_rate_end(const pe_tx &x)
{
	__syncthreads();
	if (threadIdx.x == 0) {
		x.gin->signal(x.world, x.peer, ncclGin_SignalInc{ NC_SIG_DONE });
		x.gin->flush(ncclCoopThread());
	}
}

/* The host halves' PE (pe_bodies.cuh). */
typedef nc_pe pe_self;

/* A rate job's window regions (offsets: src, dst; 64 slots per thread of
 * the largest row), and PE 1's signal wait's device words. */
typedef struct pe_rate_bufs {
	size_t src, dst, words;
	int *d_want, *d_rc;
} pe_rate_bufs;

#define PE_RATE_CHECK_IN_ROUND 1 /* PE 1 waits for every CTA's signal itself */

#include "pe_bodies.cuh"

/* PE 0, one thread, context 0: sample i puts 8 bytes into slot i % slots
 * of the peer's window at dst (from the same slot at src: put; the value
 * itself: putValue), then flushes. Last, the "all landed" signal. */
template <int PUT>
static __global__ void oneway_kernel(ncclDevComm dev, ncclWindow_t win, size_t src, size_t dst,
				     int n, int slots, int peer, nc_sample *out)
{
	ncclGin gin(dev, 0);
	pe_tx x = nc_tx(&gin, dev, win, dst, src, peer);

	pe_oneway_body(x, PUT, PUT ? 1 : 2, n, slots, out);
	/* NCCL orders a signal after every earlier put of this context to
	 * this peer: when PE 1 sees it, every payload above has landed. */
	gin.signal(x.world, peer, ncclGin_SignalInc{ NC_SIG_DONE });
	gin.flush(ncclCoopThread());
}

/* PE 1: waits until signal NC_SIG_DONE of context c has counted want[c]
 * (one thread per context); *rc receives ETIMEDOUT if one did not. */
static __global__ void done_kernel(ncclDevComm dev, const int *want, uint64_t limit_ns, int *rc)
{
	int c = (int)threadIdx.x;

	if (c >= dev.ginContextCount)
		return;
	ncclGin gin(dev, c);

	if (want[c] && nc_wait_signal(gin, NC_SIG_DONE, (uint64_t)want[c], limit_ns))
		atomicExch(rc, ETIMEDOUT);
}

/* Round trips on context 0: PE 0 putValue's request i to off with an
 * increment of NC_SIG_REQ and waits for NC_SIG_ANS to reach i + 1 and its
 * word resp to hold ~request; PE 1 waits for each request, checks its
 * word req (*bad counts wrong ones) and answers the same way. *rc_out:
 * ETIMEDOUT when a request did not arrive. */
static __global__ void rtt_pe0_kernel(ncclDevComm dev, ncclWindow_t win, size_t off,
				      const volatile uint64_t *resp, int n, int peer,
				      uint64_t limit_ns, nc_sample *out)
{
	ncclGin gin(dev, 0);
	pe_tx x = nc_tx(&gin, dev, win, off, 0, peer);

	x.out = NC_SIG_REQ;
	x.in = NC_SIG_ANS;
	x.in_word = resp;
	pe_rtt_pe0_body(x, n, limit_ns, out);
}

static __global__ void rtt_pe1_kernel(ncclDevComm dev, ncclWindow_t win, size_t off,
				      const volatile uint64_t *req, int n, int peer,
				      uint64_t limit_ns, int *rc_out, int *bad)
{
	ncclGin gin(dev, 0);
	pe_tx x = nc_tx(&gin, dev, win, off, 0, peer);

	x.out = NC_SIG_ANS;
	x.in = NC_SIG_REQ;
	x.in_word = req;
	x.bad = bad;
	pe_rtt_pe1_body(x, n, limit_ns, rc_out);
}

/* PE 0, the threads of a rate row: n puts each to the thread's own slots,
 * then flush; thread 0 of each CTA then signals on the CTA's context. */
static __global__ void rate_kernel(ncclDevComm dev, ncclWindow_t win, size_t src, size_t dst,
				   int n, int peer, unsigned long long *span)
{
	ncclGin gin(dev, (int)blockIdx.x);

	pe_rate_body(nc_tx(&gin, dev, win, dst, src, peer), 1, n, span);
}

/* ------------------------------------------------------------------ */
/* Host side. */

/* NCCL's result and its last message, as one reason. */
static void nc_reason(const nc_pe *P, ncclResult_t r, char *buf, size_t len)
{
	const char *last = P->lib.getLastError ? P->lib.getLastError(P->comm) : NULL;
	size_t k = (size_t)snprintf(buf, len, "%s", P->lib.getErrorString(r));

	if (last && *last && k < len)
		snprintf(buf + k, len - k, ": %s", last);
	for (char *c = buf; *c; c++) /* NCCL's messages end in newlines */
		if (*c == '\n')
			*c = ' ';
}

static void nccl_ok(const nc_pe *P, ncclResult_t r, const char *what)
{
	char why[512];

	if (r == ncclSuccess)
		return;
	nc_reason(P, r, why, sizeof(why));
	pe_die(P, what, why);
}

/* Barrier of both PEs: a one-integer all-reduce on the stream, after
 * everything this PE queued before it; it completes only once every PE
 * has queued its own, and the sum proves they all took part. */
static void pe_barrier(const nc_pe *P, const char *what)
{
	int sum = 0;

	nccl_ok(P, P->lib.allReduce(P->d_one, P->d_sum, 1, ncclInt32, ncclSum, P->comm,
				    P->stream), what);
	cuda_ok(P, cudaMemcpyAsync(&sum, P->d_sum, sizeof(int), cudaMemcpyDeviceToHost,
				   P->stream), what);
	pe_wait(P, what);
	if (sum != P->pl.npes)
		pe_die(P, what, "the barrier's all-reduce did not count every PE");
}

/* Sends a SKIP of kind with a reason (or the GPU count) and leaves. */
static int nc_skip(const nc_pe *P, int kind, int found, const char *why)
{
	gic_nc_skip s;

	memset(&s, 0, sizeof(s));
	s.kind = kind;
	s.found = found;
	snprintf(s.why, sizeof(s.why), "%s", why ? why : "");
	gic_pl_send(&P->pl, GIC_PL_REC_SKIP, 0, &s, sizeof(s));
	return 0;
}

/* PE 1: waits for the "all landed" signals, want[c] of them on context c;
 * 0 or ETIMEDOUT. */
static int nc_wait_done(const nc_pe *P, const int *want, int *d_want, int *d_rc)
{
	int rc = 0;

	cuda_ok(P, cudaMemcpyAsync(d_want, want, sizeof(int) * NCCL_GIN_MAX_CONTEXTS,
				   cudaMemcpyHostToDevice, P->stream), "signal counts");
	cuda_ok(P, cudaMemsetAsync(d_rc, 0, sizeof(int), P->stream), "clear");
	done_kernel<<<1, NCCL_GIN_MAX_CONTEXTS, 0, P->stream>>>(
		P->dev, d_want, (uint64_t)P->job->limit_s * 1000000000ull, d_rc);
	cuda_ok(P, cudaGetLastError(), "signal wait launch");
	cuda_ok(P, cudaMemcpyAsync(&rc, d_rc, sizeof(int), cudaMemcpyDeviceToHost, P->stream),
		"signal wait");
	pe_wait(P, "signal wait");
	if (rc)
		fprintf(stderr, "gic %s: NCCL PE %d: the sender's final signal did not arrive in "
			"time\n", P->pl.sub, P->pl.rank);
	return rc;
}

/* Resets this PE's signals; the barrier that follows orders it before any
 * increment the peer sends. */
static void nc_reset_signals(const nc_pe *P)
{
	reset_kernel<<<1, 1, 0, P->stream>>>(P->dev);
	cuda_ok(P, cudaGetLastError(), "signal reset");
}

/* ------------------------------------------------------------------ */
/* lat. */

/* The paper's Table 3 (P-IB, NCCL 2.30/2.31 over ConnectX-7) for a row,
 * by backend: GDAKI non-inline (put) and inline (putValue), GIN Proxy. */
static double lat_paper(const nc_pe *P, int putv, const char *metric)
{
	int m = !strcmp(metric, "issue") ? 0 : !strcmp(metric, "put+completion") ? 1 : 2;
	static const double gdaki_put[3] = { 1.82, 6.85, NAN };
	static const double gdaki_putv[3] = { 1.60, 6.02, 10.50 };
	static const double proxy[3] = { 2.46, 8.19, 16.32 };

	if (!strcmp(P->backend, "gdaki"))
		return putv ? gdaki_putv[m] : gdaki_put[m];
	if (!strcmp(P->backend, "proxy") && putv)
		return proxy[m];
	return NAN;
}

/* Converts sample cycles to us and emits (name, metric). */
static void lat_emit(const nc_pe *P, int phase, const char *name, const char *metric,
		     const nc_sample *h, int n, int total_not_issue, int validated, const char *api)
{
	gic_result r;
	int putv = phase != NC_PH_PUT;

	pe_res(P, &r, name, metric, "us");
	pe_set_cycles(&r, h, n, total_not_issue, P->mhz, P->job->warmup);
	gic_result_param(&r, "size=8 api=%s pes=2 devices=0,1 backend=%s contexts=%d "
			 "context=0 nccl=%s sm_mhz=%.0f", api, P->backend, P->nctx, P->version,
			 P->mhz);
	r.paper = lat_paper(P, putv, metric);
	if (!isnan(r.paper))
		snprintf(r.paper_ref, sizeof(r.paper_ref), "Table 3");
	snprintf(r.note, sizeof(r.note), "NCCL %s GIN %s; paper: NCCL 2.30/2.31 on ConnectX-7, "
		 "completion by flushAsync+wait; here flush (one peer: same scope)", P->version,
		 P->backend);
	r.validated = validated;
	gic_pl_emit(&P->pl, phase, &r);
}

/* The window's regions for a lat job: src and dst slots, then two words
 * (request, answer). */
typedef struct lat_layout {
	int n, slots;
	size_t src, dst, words, size;
} lat_layout;

static lat_layout lat_plan(const gic_nc_job *J)
{
	lat_layout L;
	size_t slot_bytes;

	L.n = J->iters + J->warmup;
	L.slots = L.n < PE_LAT_SLOTS ? L.n : PE_LAT_SLOTS;
	slot_bytes = ((size_t)L.slots * 8 + NC_ALIGN - 1) / NC_ALIGN * NC_ALIGN;
	L.src = 0;
	L.dst = slot_bytes;
	L.words = 2 * slot_bytes;
	L.size = L.words + NC_ALIGN;
	return L;
}

static void run_lat_oneway(nc_pe *P, const lat_layout *L, nc_sample *h, nc_sample *d_s,
			   int *d_want, int *d_rc)
{
	const gic_nc_job *J = P->job;

	for (int put = 1; put >= 0; put--) {
		int phase = put ? NC_PH_PUT : NC_PH_PUTV, valid = 1;
		uint64_t tag = put ? 1 : 2;
		const char *name = put ? "gin put" : "gin putValue";

		if (P->pl.rank == 0) {
			pe_fill(P, P->buf + L->src, (size_t)L->slots, tag);
		} else {
			cuda_ok(P, cudaMemsetAsync(P->buf + L->dst, 0, (size_t)L->slots * 8,
						   P->stream), "clear");
			nc_reset_signals(P);
		}
		pe_barrier(P, "barrier before the one-way run");
		if (P->pl.rank == 0) {
			if (put)
				oneway_kernel<1><<<1, 1, 0, P->stream>>>(P->dev, P->win, L->src, L->dst,
									L->n, L->slots, P->peer, d_s);
			else
				oneway_kernel<0><<<1, 1, 0, P->stream>>>(P->dev, P->win, L->src, L->dst,
									L->n, L->slots, P->peer, d_s);
			cuda_ok(P, cudaGetLastError(), "one-way launch");
			cuda_ok(P, cudaMemcpyAsync(h, d_s, sizeof(nc_sample) * (size_t)L->n,
						   cudaMemcpyDeviceToHost, P->stream), "samples");
			pe_wait(P, name);
		} else {
			int want[NCCL_GIN_MAX_CONTEXTS] = { 1 }; /* context 0: one signal */
			int rc = nc_wait_done(P, want, d_want, d_rc);

			gic_pl_verdict(&P->pl, phase,
				       !rc && pe_check(P, P->buf + L->dst, (size_t)L->slots,
						       pe_tag_want, &tag, name));
		}
		pe_barrier(P, "barrier after the one-way run");
		if (P->pl.rank == 1)
			continue;
		for (int i = 0; i < L->n; i++)
			valid &= h[i].rc == 0;
		if (J->metrics & GIC_LAT_ISSUE)
			lat_emit(P, phase, name, "issue", h, L->n, 0, valid,
				 put ? "put" : "putValue");
		if (J->metrics & GIC_LAT_PUTC)
			lat_emit(P, phase, name, "put+completion", h, L->n, 1, valid,
				 put ? "put+flush" : "putValue+flush");
	}
}

static void run_lat_rtt(nc_pe *P, const lat_layout *L, nc_sample *h, nc_sample *d_s, int *d_rc)
{
	uint64_t limit_ns = (uint64_t)P->job->limit_s * 1000000000ull;
	/* Requests land in the first word (PE 1), answers in the second (PE 0). */
	size_t req = L->words, resp = L->words + 8;
	int rc = -1, bad = 0, *d_bad = d_rc + 1, valid = 1;

	cuda_ok(P, cudaMemsetAsync(P->buf + L->words, 0, 16, P->stream), "clear");
	cuda_ok(P, cudaMemsetAsync(d_rc, 0, 2 * sizeof(int), P->stream), "clear");
	nc_reset_signals(P);
	pe_barrier(P, "barrier before the round trips");
	if (P->pl.rank == 0)
		rtt_pe0_kernel<<<1, 1, 0, P->stream>>>(P->dev, P->win, req,
						       (const uint64_t *)(P->buf + resp), L->n,
						       P->peer, limit_ns, d_s);
	else
		rtt_pe1_kernel<<<1, 1, 0, P->stream>>>(P->dev, P->win, resp,
						       (const uint64_t *)(P->buf + req), L->n,
						       P->peer, limit_ns, d_rc, d_bad);
	cuda_ok(P, cudaGetLastError(), "rtt launch");
	if (P->pl.rank == 0) {
		cuda_ok(P, cudaMemcpyAsync(h, d_s, sizeof(nc_sample) * (size_t)L->n,
					   cudaMemcpyDeviceToHost, P->stream), "samples");
	} else {
		cuda_ok(P, cudaMemcpyAsync(&rc, d_rc, sizeof(int), cudaMemcpyDeviceToHost, P->stream),
			"rc");
		cuda_ok(P, cudaMemcpyAsync(&bad, d_bad, sizeof(int), cudaMemcpyDeviceToHost,
					   P->stream), "bad");
	}
	pe_wait(P, "round trips");
	pe_barrier(P, "barrier after the round trips");
	if (P->pl.rank == 1) {
		if (rc)
			fprintf(stderr, "gic lat: NCCL PE 1: round trips: a request did not arrive "
				"in time\n");
		if (bad)
			fprintf(stderr, "gic lat: NCCL PE 1: round trips: %d requests held a wrong "
				"value\n", bad);
		gic_pl_verdict(&P->pl, NC_PH_RTT, rc == 0 && bad == 0);
		return;
	}
	for (int i = 0; i < L->n; i++)
		valid &= h[i].rc == 0;
	if (!valid)
		fprintf(stderr, "gic lat: NCCL PE 0: round trips: an answer was late or wrong\n");
	lat_emit(P, NC_PH_RTT, "gin putValue", "rtt", h, L->n, 1, valid,
		 "putValue+SignalInc/readSignal");
}

static void run_lat(nc_pe *P, const lat_layout *L)
{
	nc_sample *d_s = NULL, *h = (nc_sample *)calloc((size_t)L->n, sizeof(nc_sample));
	int *d_want = NULL, *d_rc = NULL;

	if (!h)
		pe_die(P, "lat", "out of memory");
	cuda_ok(P, cudaMalloc(&d_s, sizeof(nc_sample) * (size_t)L->n), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&d_want, sizeof(int) * NCCL_GIN_MAX_CONTEXTS), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&d_rc, 2 * sizeof(int)), "cudaMalloc");
	if (P->job->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC))
		run_lat_oneway(P, L, h, d_s, d_want, d_rc);
	if (P->job->metrics & GIC_LAT_RTT)
		run_lat_rtt(P, L, h, d_s, d_rc);
	cudaFree(d_rc);
	cudaFree(d_want);
	cudaFree(d_s);
	free(h);
}

/* ------------------------------------------------------------------ */
/* rate. */

/* The window's regions for a rate job: src, dst (64 slots per thread). */
static size_t rate_words(const gic_nc_job *J)
{
	int maxt = 1;

	for (int r = 0; r < J->nrows; r++)
		maxt = J->rows[r].threads > maxt ? J->rows[r].threads : maxt;
	return (size_t)maxt * PE_RATE_SLOTS;
}

static void pe_rate_clear(const nc_pe *P, const pe_rate_bufs *B)
{
	cuda_ok(P, cudaMemsetAsync(P->buf + B->dst, 0, B->words * 8, P->stream), "clear");
	nc_reset_signals(P);
}

static void pe_rate_launch(const nc_pe *P, const pe_rate_bufs *B, int ctas, int per_cta,
			   unsigned long long *d_span)
{
	rate_kernel<<<ctas, per_cta, 0, P->stream>>>(P->dev, P->win, B->src, B->dst,
						     P->job->iters, P->peer, d_span);
}

/* Every CTA's signal (CTA b's once on context b mod nctx), then every
 * slot. */
static int pe_rate_check(const nc_pe *P, const pe_rate_bufs *B, int threads, int ctas,
			 const char *name)
{
	int want[NCCL_GIN_MAX_CONTEXTS] = { 0 };

	for (int b = 0; b < ctas; b++)
		want[b % P->nctx]++;
	return !nc_wait_done(P, want, B->d_want, B->d_rc) &&
	       pe_check(P, P->buf + B->dst, (size_t)threads * PE_RATE_SLOTS, pe_rate_want,
			&P->job->iters, name);
}

static void run_rate(nc_pe *P)
{
	const gic_nc_job *J = P->job;
	pe_rate_bufs B;
	unsigned long long *d_span = NULL;

	B.words = rate_words(J);
	B.src = 0;
	B.dst = (B.words * 8 + NC_ALIGN - 1) / NC_ALIGN * NC_ALIGN;
	cuda_ok(P, cudaMalloc(&d_span, 2 * sizeof(unsigned long long)), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&B.d_want, sizeof(int) * NCCL_GIN_MAX_CONTEXTS), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&B.d_rc, sizeof(int)), "cudaMalloc");
	if (P->pl.rank == 0)
		pe_fill(P, P->buf + B.src, B.words, 4);
	for (int r = 0; r < J->nrows; r++) {
		const gic_nc_rate_row *row = &J->rows[r];
		gic_result res;

		if (!pe_rate_row(P, &B, r, row->name, row->threads, row->ctas, d_span, &res))
			continue;
		gic_result_param(&res, "threads=%d ctas=%d size=8 msgs_per_thread=%d rounds=%d "
				 "api=put+flush pes=2 devices=0,1 backend=%s contexts=%d nccl=%s",
				 row->threads, row->ctas, J->iters, PE_ROUNDS, P->backend, P->nctx,
				 P->version);
		snprintf(res.note, sizeof(res.note), "NCCL %s GIN %s; CTA b on context b mod %d; "
			 "64 slots per thread, each checked on PE 1 after every round", P->version,
			 P->backend, P->nctx);
		gic_pl_emit(&P->pl, r, &res);
	}
	cudaFree(B.d_rc);
	cudaFree(B.d_want);
	cudaFree(d_span);
}

/* ------------------------------------------------------------------ */
/* Joining NCCL. */

/* Reads the job (and, for rank > 0, the unique id) from the driver. */
static void read_input(nc_pe *P, int in_fd, gic_nc_job *job, ncclUniqueId *uid)
{
	gic_pl_read_job(&P->pl, in_fd, job, sizeof(*job));
	if (job->kind != GIC_NC_LAT && job->kind != GIC_NC_RATE)
		pe_die(P, "reading the job", "malformed");
	if (job->iters < 1 || job->warmup < 0 || job->nrows < 0 || job->nrows > GIC_NC_MAX_ROWS ||
	    job->limit_s < 1 ||
	    (job->kind == GIC_NC_LAT && job->iters + job->warmup > GIC_NC_MAX_SAMPLES))
		pe_die(P, "reading the job", "values out of range");
	for (int r = 0; r < job->nrows; r++) {
		const gic_nc_rate_row *w = &job->rows[r];

		if (w->threads < 1 || w->ctas < 1 || w->threads % w->ctas ||
		    w->threads / w->ctas > 1024 || w->threads > 65536)
			pe_die(P, "reading the job", "a rate row's threads do not split into CTAs");
	}
	if (P->pl.rank > 0)
		gic_pl_read_uid(&P->pl, in_fd, uid, sizeof(*uid));
}

/* Opens libnccl.so.2 (or $GIC_NCCL_LIBRARY) and takes the host calls;
 * 0, or ENOENT with why filled in (not found, a missing symbol, another
 * version than the headers'). */
static int nc_open_lib(nc_pe *P, char *why, size_t len)
{
	const char *file = getenv("GIC_NCCL_LIBRARY");
	nc_lib *L = &P->lib;
	int v = 0;

	if (!file || !*file)
		file = "libnccl.so.2";
	L->handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
	if (!L->handle) {
		snprintf(why, len, "NCCL library not found (dlopen %s: %s; set LD_LIBRARY_PATH to "
			 "NCCL's lib directory or GIC_NCCL_LIBRARY to the file)", file, dlerror());
		return ENOENT;
	}
#define NC_SYM(field, name)                                                                 \
	do {                                                                                \
		*(void **)&L->field = dlsym(L->handle, name);                               \
		if (!L->field) {                                                            \
			snprintf(why, len, "NCCL library %s lacks %s (not NCCL %d.%d.%d?)",  \
				 file, name, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);            \
			return ENOENT;                                                      \
		}                                                                           \
	} while (0)
	NC_SYM(getVersion, "ncclGetVersion");
	NC_SYM(getUniqueId, "ncclGetUniqueId");
	NC_SYM(commInitRank, "ncclCommInitRank");
	NC_SYM(commFinalize, "ncclCommFinalize");
	NC_SYM(commDestroy, "ncclCommDestroy");
	NC_SYM(getErrorString, "ncclGetErrorString");
	NC_SYM(getLastError, "ncclGetLastError");
	NC_SYM(memAlloc, "ncclMemAlloc");
	NC_SYM(memFree, "ncclMemFree");
	NC_SYM(windowRegister, "ncclCommWindowRegister");
	NC_SYM(windowDeregister, "ncclCommWindowDeregister");
	NC_SYM(devCommCreate, "ncclDevCommCreate");
	NC_SYM(devCommDestroy, "ncclDevCommDestroy");
	NC_SYM(allReduce, "ncclAllReduce");
#undef NC_SYM
	if (L->getVersion(&v) != ncclSuccess)
		v = 0;
	snprintf(P->version, sizeof(P->version), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	/* The device communicator and window structures are shared between
	 * our kernels (compiled from the headers) and the library. */
	if (v != NCCL_VERSION_CODE) {
		snprintf(why, len, "NCCL library %s is version %s, gic was built with the headers "
			 "of %d.%d.%d (the device API's structures must match; use that library "
			 "or rebuild with its headers, -DNCCL_HOME)", file, P->version, NCCL_MAJOR,
			 NCCL_MINOR, NCCL_PATCH);
		return ENOENT;
	}
	return 0;
}

/* Window and device communicator with GIN; 0, or ENOTSUP with why filled
 * in when NCCL has no GIN backend (the device communicator's creation
 * fails, or it comes back without a GIN context). */
static int nc_setup(nc_pe *P, size_t size, char *why, size_t len)
{
	ncclDevCommRequirements reqs;
	ncclResult_t r;

	P->size = size;
	nccl_ok(P, P->lib.memAlloc((void **)&P->buf, size), "ncclMemAlloc");
	cuda_ok(P, cudaMemset(P->buf, 0, size), "clear");
	nccl_ok(P, P->lib.windowRegister(P->comm, P->buf, size, &P->win, NCCL_WIN_COLL_SYMMETRIC),
		"ncclCommWindowRegister");
	memset(&reqs, 0, sizeof(reqs));
	reqs.ginForceEnable = true;   /* GIN even between the GPUs of one node */
	reqs.ginContextCount = NCCL_GIN_MAX_CONTEXTS; /* a hint: NCCL decides */
	reqs.ginSignalCount = NC_SIGNALS;
	r = P->lib.devCommCreate(P->comm, &reqs, &P->dev);
	if (r != ncclSuccess) {
		char reason[320];

		nc_reason(P, r, reason, sizeof(reason));
		snprintf(why, len, "ncclDevCommCreate: %s", reason);
		return ENOTSUP;
	}
	P->nctx = P->dev.ginContextCount;
	if (P->nctx < 1 || P->nctx > NCCL_GIN_MAX_CONTEXTS) {
		snprintf(why, len, "ncclDevCommCreate gave %d GIN contexts", P->nctx);
		return ENOTSUP;
	}
	switch (P->dev.ginTypes[0]) {
	case NCCL_NET_DEVICE_GIN_GDAKI:
		snprintf(P->backend, sizeof(P->backend), "gdaki");
		break;
	case NCCL_NET_DEVICE_GIN_PROXY:
		snprintf(P->backend, sizeof(P->backend), "proxy");
		break;
	default:
		snprintf(why, len, "ncclDevCommCreate gave GIN backend type %d, not GDAKI (%d) or "
			 "Proxy (%d)", P->dev.ginTypes[0], NCCL_NET_DEVICE_GIN_GDAKI,
			 NCCL_NET_DEVICE_GIN_PROXY);
		return ENOTSUP;
	}
	snprintf(P->transport, sizeof(P->transport), "nccl-gin-%s", P->backend);
	return 0;
}

static void nc_teardown(nc_pe *P)
{
	nccl_ok(P, P->lib.devCommDestroy(P->comm, &P->dev), "ncclDevCommDestroy");
	nccl_ok(P, P->lib.windowDeregister(P->comm, P->win), "ncclCommWindowDeregister");
	nccl_ok(P, P->lib.memFree(P->buf), "ncclMemFree");
	nccl_ok(P, P->lib.commFinalize(P->comm), "ncclCommFinalize");
	nccl_ok(P, P->lib.commDestroy(P->comm), "ncclCommDestroy");
}

int gic_nccl_pe(int rank, int nranks, int in_fd, int out_fd)
{
	nc_pe pe, *P = &pe;
	gic_nc_job job;
	ncclUniqueId uid;
	int ngpu = 0, one = 1;
	char why[384];
	size_t size;

	memset(P, 0, sizeof(*P));
	memset(&uid, 0, sizeof(uid));
	gic_pl_pe_init(&P->pl, "NCCL", "nccl", GIC_NC_MAGIC, rank, nranks, out_fd);
	P->peer = 1 - rank;
	P->job = &job;
	read_input(P, in_fd, &job, &uid);
	P->pl.sub = job.kind == GIC_NC_LAT ? "lat" : "rate";
	gic_pl_pe_alarm(&P->pl, job.limit_s);
	if (nranks != GIC_NC_PES)
		pe_die(P, "starting", "the GIN path runs with exactly 2 PEs");
	ngpu = pe_gpu_count();
	if (ngpu < nranks)
		return rank == 0 ? nc_skip(P, GIC_NC_SKIP_GPUS, ngpu, NULL) : 0;
	if (nc_open_lib(P, why, sizeof(why)))
		return nc_skip(P, GIC_NC_SKIP_LIB, 0, why);
	cuda_ok(P, cudaSetDevice(rank), "cudaSetDevice");
	if (rank == 0) {
		nccl_ok(P, P->lib.getUniqueId(&uid), "ncclGetUniqueId");
		gic_pl_send(&P->pl, GIC_PL_REC_UID, 0, &uid, sizeof(uid));
	}
	nccl_ok(P, P->lib.commInitRank(&P->comm, nranks, uid, rank), "ncclCommInitRank");
	cuda_ok(P, cudaStreamCreateWithFlags(&P->stream, cudaStreamNonBlocking), "stream");
	cuda_ok(P, cudaMalloc(&P->d_one, 2 * sizeof(int)), "cudaMalloc");
	P->d_sum = P->d_one + 1;
	cuda_ok(P, cudaMemcpy(P->d_one, &one, sizeof(int), cudaMemcpyHostToDevice), "barrier word");
	if (job.kind == GIC_NC_LAT) {
		size = lat_plan(&job).size;
	} else {
		size_t w = rate_words(&job) * 8;

		size = 2 * ((w + NC_ALIGN - 1) / NC_ALIGN * NC_ALIGN);
	}
	/* A skip here leaves without tearing down: the communicator of a
	 * failed ncclDevCommCreate is not worth the risk of a hang. */
	if (nc_setup(P, size, why, sizeof(why))) {
		nc_skip(P, GIC_NC_SKIP_GIN, 0, why);
		fflush(NULL);
		_exit(0);
	}
	P->mhz = pe_sm_clock(P);
	if (job.kind == GIC_NC_LAT) {
		lat_layout L = lat_plan(&job);

		run_lat(P, &L);
	} else {
		run_rate(P);
	}
	pe_barrier(P, "barrier before leaving");
	nc_teardown(P);
	cudaFree(P->d_one);
	cudaStreamDestroy(P->stream);
	gic_pl_send(&P->pl, GIC_PL_REC_DONE, 0, NULL, 0);
	return 0;
}
