/*
 * bench/gic/nvshmem_pe.cu - the PE side of the NVSHMEM path (nvshmem_pe.h):
 * one process per PE, started by the driver. Built into the static library
 * gic_nvshmem with relocatable device code, device-linked there against
 * libnvshmem_device.a, so the rest of `gic` stays whole-program compiled.
 *
 * lat (one GPU thread on PE 0; 8-byte payloads; clock64 cycles over the SM
 * clock measured in this process; exp_lat.h):
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
 * globaltimer): one warm-up round, then PE_ROUNDS rounds (the result
 * summarizes them; p50 is their median); PE 1 checks every slot of every
 * round and clears them between rounds.
 *
 *   "nvshmem qp-quiet" issue           nvshmemx_qp_uint64_put_nbi(8 B) on a QP
 *                                      from nvshmemx_qp_create
 *                  put+completion  that, then nvshmemx_qp_quiet(PE 1, that
 *                                  QP): DeepEP's per-QP completion. Only over
 *                                  a NIC transport that creates QPs; else a
 *                                  NOTE record says why (nvshmem_pe.h)
 * loaded (per background level; exp_loaded.h): PE 0's CTA 0 p's request i
 * into PE 1's word i and waits for the answer PE 1's CTA 0 p's back into
 * its own word i (clock64 cycles per round trip); background CTAs, writer
 * w on PE w % 2, stream 8-byte nvshmem_putmem_nbi into the other PE's
 * 2048 slots of writer w (the value of write i: from a source slot filled
 * per generation of 2048 writes, after a quiet frees the previous one)
 * until PE 0's probe raises the stop flag on both PEs. The carried rate
 * counts each writer's writes between the probe's run and stop flags over
 * the probe's span (PE 0's globaltimer). Each PE checks what landed in its
 * memory: the probe words, and the last value of every background slot
 * (each writer puts its count into its target PE after a quiet).
 * payload (per size; exp_payload.h): -n nvshmem_putmem_nbi (one thread) or
 * nvshmemx_putmem_nbi_block (one CTA of NV_PL_BLOCK threads) of that size,
 * write i from source slot i % slots to the same destination slot, none
 * waited for until one nvshmem_quiet at the end; goodput is bytes over
 * first put to quiet (globaltimer), after an untimed warm-up of
 * NV_PL_WARMUP writes. PE 1 checks every byte of every slot after each
 * size (it clears them before).
 *
 * kernel (per configuration; exp_kernel.h): PE 0 runs gic kernel's fma
 * caller (kernel_caller.cuh: the same source as gic kernel's own rows;
 * --live values, -c blocks of -t threads) with NVSHMEM between its halves:
 * none nothing, code thread 0's nvshmem_putmem_nbi of each message behind
 * a flag that is false, send the same taken, sendwait then nvshmem_quiet;
 * message m of block b goes from PE 0's source slot (b, m) to the same slot
 * of PE 1's. Registers and spill from cudaFuncGetAttributes, blocks per SM
 * from cudaOccupancyMaxActiveBlocksPerMultiprocessor at the run's threads
 * per block; time: one untimed launch, then the job's rounds (5) of CUDA-event
 * timed launches, their median (the puts' nvshmemx_quiet_on_stream after
 * each launch, outside the events); loss against none. PE 1 checks its
 * whole region after each configuration: every message's payload, and
 * zeros everywhere else (for none and code: nothing landed).
 *
 * Every wait has a time limit: GPU polls (nvshmem_uint64_test with a
 * globaltimer limit), stream waits (cudaStreamQuery), and alarm() for the
 * whole process (collectives inside NVSHMEM have none of their own).
 */
#include <infiniband/verbs.h>
#include <nvshmem.h>
#include <nvshmemx.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "exp_kernel.h"
#include "exp_lat.h"
#include "exp_loaded.h"
#include "kernel_caller.cuh"
#include "nvshmem_pe.h"
#include "pe_gpu.cuh"

enum {
	NV_PH_PUT = 0, NV_PH_P = 1, NV_PH_RTT = 2, NV_PH_QP = 3, /* lat phases; rate: the row
								    * index */
	NV_BG_SLOTS = 2048,     /* loaded: slots per background writer */
	NV_COUNT_PUTS = 16,     /* puts between the two count kernels of an issue row */
	NV_PL_BLOCK = 256,      /* payload: threads of the block-scope row's CTA */
	NV_PL_WARMUP = 16,      /* payload: untimed writes before each timed run */
	NV_PL_FIRST90 = 2 * GIC_NV_MAX_SIZES, /* payload: phase of the 90% rows (+ scope) */
};

/* One-way modes of the lat kernel. */
enum { NV_MODE_P = 0, NV_MODE_PUT = 1, NV_MODE_QP = 2 };

static const uint64_t NV_WAIT_NS = 10000000000ull; /* one GPU-side wait (loaded) */
static const uint64_t NV_BG_LIMIT_NS = 60000000000ull; /* a background writer's run */

static const char ref_note[] = "reference (NVSHMEM 3.4, NVLink, this machine)";

typedef pe_sample nv_sample;

/* One PE's state. */
typedef struct nv_pe {
	gic_pl_pe pl;          /* rank, records to the driver; sub: "lat", "rate",
				* "loaded" or "payload" */
	int peer;
	const gic_nv_job *job;
	cudaStream_t stream;
	double mhz;            /* SM clock, measured */
	char version[16];      /* NVSHMEM library version, "3.8.0" */
	char transport[32];    /* "nvshmem-p2p", "nvshmem-ibgda", ... */
	char qps[16];          /* QPs the transport uses to the peer ("0" over P2P) */
	char nic[96];          /* " nic=NAME nic_fw=FW" behind a NIC transport, "" over P2P */
	int devices[2];        /* CUDA device of each PE */
	void *qp_arrays[4];    /* from nvshmemx_qp_create: freed after finalize */
	int nqp_arrays;
	int k_max_msgs;        /* kernel: slots per block (the most messages, at least 1) */
} nv_pe;

/* ------------------------------------------------------------------ */
/* Device side. */

/* Polls the local symmetric word until it holds want; ETIMEDOUT after
 * limit_ns. */
static __device__ int nv_wait(uint64_t *ivar, uint64_t want, uint64_t limit_ns)
{
	uint64_t t0 = pe_now_ns();

	while (!nvshmem_uint64_test(ivar, NVSHMEM_CMP_EQ, want))
		if (pe_now_ns() - t0 > limit_ns)
			return ETIMEDOUT;
	return 0;
}

/* The tag of a one-way mode's payloads (pe_val). */
static __host__ __device__ uint64_t nv_mode_tag(int mode)
{
	return mode == NV_MODE_PUT ? 1 : mode == NV_MODE_P ? 2 : 5;
}

/* The NVSHMEM transport of the shared bodies (pe_bodies.cuh): symmetric
 * addresses; for NV_MODE_QP the QP's handle h and its copy in device
 * memory qp; round trips: p into dst, polling in (exact values). */
typedef struct pe_tx {
	uint64_t *dst;
	const uint64_t *src;
	int peer;
	nvshmemx_qp_handle_t h;
	const nvshmemx_qp_handle_t *qp;
	uint64_t *in;
} pe_tx;

/* The transport of a kernel of mode: h read from *qp for NV_MODE_QP. */
static __device__ __forceinline__ pe_tx nv_tx(uint64_t *dst, const uint64_t *src, int peer,
					      int mode, const nvshmemx_qp_handle_t *qp)
{
	pe_tx x = { dst, src, peer,
		    mode == NV_MODE_QP ? *qp : (nvshmemx_qp_handle_t)NVSHMEMX_QP_DEFAULT, qp, NULL };

	return x;
}

static __device__ __forceinline__ pe_tx pe_tx_at(pe_tx x, size_t k)
{
	x.dst += k;
	x.src += k;
	return x;
}

/* put: nvshmem_putmem_nbi; qp: nvshmemx_qp_uint64_put_nbi on x.h; p:
 * nvshmem_uint64_p of v. */
static __device__ __forceinline__ void pe_tx_put(const pe_tx &x, int mode, uint64_t v)
{
	if (mode == NV_MODE_PUT)
		nvshmem_putmem_nbi(x.dst, x.src, 8, x.peer);
	else if (mode == NV_MODE_QP)
		nvshmemx_qp_uint64_put_nbi(x.dst, x.src, 1, x.peer, x.h);
	else
		nvshmem_uint64_p(x.dst, v, x.peer);
}

/* nvshmem_quiet (every QP, PE-wide), or for NV_MODE_QP nvshmemx_qp_quiet on
 * the peer and the one QP *x.qp. */
static __device__ __forceinline__ void pe_tx_complete(const pe_tx &x, int mode)
{
	if (mode == NV_MODE_QP)
		nvshmemx_qp_quiet(x.peer, (nvshmemx_qp_handle_t *)x.qp, 1);
	else
		nvshmem_quiet();
}

#define pe_tx_send(x, v) nvshmem_uint64_p((x).dst, v, (x).peer)
#define pe_tx_wait(x, i, want, limit_ns) nv_wait((x).in, want, limit_ns)
#define pe_tx_answer_rc(x, rc, v) (rc)
#define pe_tx_rtt_end(x) ((void)0)
#define pe_tx_rate_end(x) ((void)0)

/* The host halves' PE (pe_bodies.cuh). */
typedef nv_pe pe_self;

/* A rate job's symmetric regions: 64 slots per thread of the largest row. */
typedef struct pe_rate_bufs {
	uint64_t *dst, *src;
	size_t words;
} pe_rate_bufs;

#define PE_RATE_CHECK_IN_ROUND 0 /* after the barrier: PE 0's quiets have returned */

#include "pe_bodies.cuh"

/* PE 0, one thread: sample i puts 8 bytes into slot i % slots of the
 * peer's dst (from the same slot of src: put, qp; the value itself: p),
 * then completes it (pe_tx_complete). */
template <int MODE>
static __global__ void oneway_kernel(uint64_t *dst, const uint64_t *src, int n, int slots,
				     int peer, const nvshmemx_qp_handle_t *qp, nv_sample *out)
{
	pe_oneway_body(nv_tx(dst, src, peer, MODE, qp), MODE, nv_mode_tag(MODE), n, slots, out);
}

/* The put of one issue row, k times back to back, nothing timed or waited
 * for: launched with k = 1 and k = 1 + NV_COUNT_PUTS before each issue
 * row, so that a profiler's instruction counts of the two launches
 * (ncu -k regex:count_kernel, scripts/nvshmem-compare.sh) differ by
 * NV_COUNT_PUTS puts and nothing else. The slots get the row's own values;
 * count_quiet_kernel completes them. */
template <int MODE>
static __global__ void count_kernel(uint64_t *dst, const uint64_t *src, int k, int slots,
				    int peer, const nvshmemx_qp_handle_t *qp)
{
	pe_tx x = nv_tx(dst, src, peer, MODE, qp);

	for (int i = 0; i < k; i++) {
		int s = i % slots;

		pe_tx_put(pe_tx_at(x, s), MODE, pe_val((uint64_t)s, nv_mode_tag(MODE)));
	}
}

template <int MODE>
static __global__ void count_quiet_kernel(int peer, const nvshmemx_qp_handle_t *qp)
{
	pe_tx_complete(nv_tx(NULL, NULL, peer, NV_MODE_PUT, qp), MODE);
}

/* The kernels of each one-way mode, indexed by NV_MODE_*. */
static void (*const oneway_kernels[])(uint64_t *, const uint64_t *, int, int, int,
				      const nvshmemx_qp_handle_t *, nv_sample *) = {
	oneway_kernel<NV_MODE_P>, oneway_kernel<NV_MODE_PUT>, oneway_kernel<NV_MODE_QP>
};
static void (*const count_kernels[])(uint64_t *, const uint64_t *, int, int, int,
				     const nvshmemx_qp_handle_t *) = {
	count_kernel<NV_MODE_P>, count_kernel<NV_MODE_PUT>, count_kernel<NV_MODE_QP>
};

/* Round trips: PE 0 p's request i into PE 1's word req and waits for the
 * answer PE 1 p's into its word resp. */
static __global__ void rtt_pe0_kernel(uint64_t *req, uint64_t *resp, int n, int peer,
				      uint64_t limit_ns, nv_sample *out)
{
	pe_tx x = { req, NULL, peer, (nvshmemx_qp_handle_t)NVSHMEMX_QP_DEFAULT, NULL, resp };

	pe_rtt_pe0_body(x, n, limit_ns, out);
}

static __global__ void rtt_pe1_kernel(uint64_t *req, uint64_t *resp, int n, int peer,
				      uint64_t limit_ns, int *rc_out)
{
	pe_tx x = { resp, NULL, peer, (nvshmemx_qp_handle_t)NVSHMEMX_QP_DEFAULT, NULL, req };

	pe_rtt_pe1_body(x, n, limit_ns, rc_out);
}

/* PE 0, threads of a rate row: n puts each to the thread's own slots,
 * then nvshmem_quiet. */
static __global__ void rate_kernel(uint64_t *dst, const uint64_t *src, int n, int peer,
				   unsigned long long *span)
{
	pe_rate_body(nv_tx(dst, src, peer, NV_MODE_PUT, NULL), NV_MODE_PUT, n, span);
}

/* loaded: what one configuration's kernel gets (by value). The symmetric
 * arrays are each PE's own copy; a writer's slots and counts live in the PE
 * it writes to. */
typedef struct nv_ld_cfg {
	uint64_t *probe;    /* [n]: requests land in PE 1's, answers in PE 0's */
	uint64_t *flags;    /* [2]: run, stop (raised by PE 0's probe on both PEs) */
	uint64_t *bg;       /* [nbg][NV_BG_SLOTS]: writer w's slots (in its target) */
	uint64_t *src;      /* [nbg][NV_BG_SLOTS]: writer w's source slots (its own PE) */
	uint64_t *total;    /* [nbg]: writer w's writes (put into its target) */
	uint64_t *window;   /* [nbg]: writer w's writes between run and stop (PE 0's) */
	int n, rank, peer;
	long pace_ns;
	nvshmemx_qp_handle_t probe_qp; /* the probe's and answer's QP */
	long long *cycles;  /* PE 0: round trip i, cycles */
	unsigned long long *span; /* PE 0: the probe's start and end (ns) */
	int *rc;            /* per CTA */
} nv_ld_cfg;

/* The value of background write i of writer w, or of probe i (tag 1). */
static __host__ __device__ uint64_t ld_val(uint64_t i, uint64_t tag)
{
	return (tag << 44) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x4c4c4c4c00000009ull;
}

/* Raises flag k on this PE and on the peer; returns when the peer's is
 * delivered (quiet). */
static __device__ void ld_raise(const nv_ld_cfg &c, int k)
{
	*(volatile uint64_t *)(c.flags + k) = 1;
	__threadfence(); /* our flag before the peer's: local writers see it first */
	nvshmem_uint64_p(c.flags + k, 1, c.peer);
	nvshmem_quiet();
}

/* PE 0, CTA 0: the timed round trips. */
static __device__ int ld_probe(const nv_ld_cfg &c)
{
	int rc = 0;

	c.span[0] = pe_now_ns();
	ld_raise(c, 0);
	for (int i = 0; i < c.n && !rc; i++) {
		uint64_t v = ld_val((uint64_t)i, 1);

		asm volatile("" : "+l"(v));
		long long c0 = clock64();
		nvshmemx_qp_uint64_p(c.probe + i, v, c.peer, c.probe_qp);
		rc = nv_wait(c.probe + i, ~v, NV_WAIT_NS);
		c.cycles[i] = clock64() - c0;
	}
	c.span[1] = pe_now_ns();
	ld_raise(c, 1); /* also after a failure: the writers stop */
	return rc;
}

/* PE 1, CTA 0: answers each request with its complement. */
static __device__ int ld_respond(const nv_ld_cfg &c)
{
	int rc = 0;

	for (int i = 0; i < c.n && !rc; i++) {
		uint64_t v = ld_val((uint64_t)i, 1);

		rc = nv_wait(c.probe + i, v, NV_WAIT_NS);
		if (!rc)
			nvshmemx_qp_uint64_p(c.probe + i, ~v, c.peer, c.probe_qp);
	}
	nvshmem_quiet();
	return rc;
}

/* Background writer w (on this PE, writing to the peer) until the stop
 * flag; then its counts. ETIMEDOUT when no stop came in NV_BG_LIMIT_NS. */
static __device__ int ld_write(const nv_ld_cfg &c, int w)
{
	uint64_t *d = c.bg + (size_t)w * NV_BG_SLOTS, *s = c.src + (size_t)w * NV_BG_SLOTS;
	uint64_t i = 0, c0 = 0, t0 = pe_now_ns();
	int seen_run = 0, rc = 0;

	for (;;) {
		uint64_t k = i % NV_BG_SLOTS;

		if (!seen_run && nvshmem_uint64_test(c.flags, NVSHMEM_CMP_EQ, 1)) {
			seen_run = 1;
			c0 = i;
		}
		if (nvshmem_uint64_test(c.flags + 1, NVSHMEM_CMP_EQ, 1))
			break;
		if (pe_now_ns() - t0 > NV_BG_LIMIT_NS) {
			rc = ETIMEDOUT;
			break;
		}
		if (k == 0) { /* a new generation of source values */
			if (i)
				nvshmem_quiet(); /* the last generation's sources are read */
			for (uint64_t j = 0; j < NV_BG_SLOTS; j++)
				s[j] = ld_val(i + j, 100 + (uint64_t)w);
			__threadfence_system(); /* the sources before any transport reads them */
		}
		nvshmem_putmem_nbi(d + k, s + k, 8, c.peer);
		i++;
		if (c.pace_ns)
			__nanosleep((unsigned)c.pace_ns);
	}
	uint64_t carried = seen_run ? i - c0 : 0;

	nvshmem_quiet(); /* every write delivered before the counts announce them */
	nvshmem_uint64_p(c.total + w, i, c.peer);
	if (c.rank == 0)
		c.window[w] = carried;
	else
		nvshmem_uint64_p(c.window + w, carried, 0);
	nvshmem_quiet();
	return rc;
}

/* CTA 0: the probe (PE 0) or the responder (PE 1); CTA b > 0: writer
 * rank + 2 (b - 1). One thread per CTA. */
static __global__ void loaded_kernel(nv_ld_cfg c)
{
	int b = blockIdx.x;

	if (b == 0)
		c.rc[0] = c.rank == 0 ? ld_probe(c) : ld_respond(c);
	else
		c.rc[b] = ld_write(c, c.rank + 2 * (b - 1));
}

/* payload: the byte at j of slot k for a size. */
static __host__ __device__ uint8_t pl_byte(uint32_t size, uint64_t k, uint64_t j)
{
	return (uint8_t)((k * 131u) ^ (j * 7u) ^ (j >> 8) ^ (size * 29u) ^ 0x5du);
}

/* payload, PE 0: n puts of size bytes, write i from src slot i % slots to
 * the same slot of the peer's dst; thread scope (one thread) or block
 * scope (the whole CTA per put); one quiet at the end. span: first put,
 * quiet returned (ns). */
template <int BLOCK>
static __global__ void payload_kernel(uint8_t *dst, const uint8_t *src, uint32_t size, int n,
				      int slots, int peer, unsigned long long *span)
{
	unsigned long long t0;

	if (BLOCK)
		__syncthreads(); /* every thread starts together */
	t0 = pe_now_ns();
	for (int i = 0; i < n; i++) {
		size_t off = (size_t)(i % slots) * size;

		if (BLOCK)
			nvshmemx_putmem_nbi_block(dst + off, src + off, size, peer);
		else
			nvshmem_putmem_nbi(dst + off, src + off, size, peer);
	}
	nvshmem_quiet(); /* each thread: its stores (P2P) or the PE's puts (NIC) complete */
	if (BLOCK)
		__syncthreads(); /* every thread's quiet has returned */
	if (threadIdx.x == 0) {
		span[0] = t0;
		span[1] = pe_now_ns();
	}
}

/* ------------------------------------------------------------------ */
/* Host side. */

/* Barrier of both PEs (on the stream), waited for with the time limit. */
static void pe_barrier(const nv_pe *P, const char *what)
{
	nvshmemx_barrier_all_on_stream(P->stream);
	pe_wait(P, what);
}

/* ------------------------------------------------------------------ */
/* lat. */

/* Converts sample cycles to us and emits (name, metric). */
static void lat_emit(const nv_pe *P, int phase, const char *name, const char *metric,
		     const nv_sample *h, int n, int total_not_issue, int validated,
		     const char *api, const char *note)
{
	gic_result r;

	pe_res(P, &r, name, metric, "us");
	pe_set_cycles(&r, h, n, total_not_issue, P->mhz, P->job->warmup);
	gic_result_param(&r, "size=8 api=%s pes=2 devices=%d,%d qps=%s nvshmem=%s%s sm_mhz=%.0f",
			 api, P->devices[0], P->devices[1], P->qps, P->version, P->nic, P->mhz);
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.validated = validated;
	gic_pl_emit(&P->pl, phase, &r);
}

/* Reads the transport to the peer back: a pointer to the peer's copy of
 * sym means loads and stores (P2P over NVLink or PCIe). Sets P->peer, and
 * P->transport and P->qps for P2P; returns 1 for P2P. */
static int nv_transport(nv_pe *P, void *sym)
{
	P->peer = 1 - P->pl.rank;
	if (!nvshmem_ptr(sym, P->peer))
		return 0;
	snprintf(P->transport, sizeof(P->transport), "nvshmem-p2p");
	snprintf(P->qps, sizeof(P->qps), "0");
	P->nic[0] = 0;
	return 1;
}

/* The first RDMA device as the rows record it: its name and firmware
 * version, spaces made dashes (the emulated device's firmware version
 * ends "(gic softnic)", so rows say when softnic stood in for a NIC). */
static void nv_nic_label(nv_pe *P)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = l && l[0] ? ibv_open_device(l[0]) : NULL;
	struct ibv_device_attr a;
	char fw[sizeof(a.fw_ver)] = "unknown";

	if (c && !ibv_query_device(c, &a))
		snprintf(fw, sizeof(fw), "%s", a.fw_ver);
	for (char *q = fw; *q; q++)
		if (*q == ' ')
			*q = '-';
	snprintf(P->nic, sizeof(P->nic), " nic=%s nic_fw=%s", l && l[0] ?
		 ibv_get_device_name(l[0]) : "none", fw);
	if (c)
		ibv_close_device(c);
	if (l)
		ibv_free_device_list(l);
}

/* Sends the driver the line "<name>: skipped: <why>" (PE 0 only). */
static void nv_rowskip(const nv_pe *P, int phase, const char *name, const char *why)
{
	char text[GIC_PL_NOTE_MAX];

	if (P->pl.rank != 0)
		return;
	snprintf(text, sizeof(text), "%s: skipped: %s", name, why);
	gic_pl_send(&P->pl, GIC_PL_REC_NOTE, phase, text, (uint32_t)strlen(text) + 1);
}

/* A QP of our own (nvshmemx_qp_create, collective: both PEs call it with
 * the same decision): 1 with its handle in *h and a copy in device memory
 * in *d_qp (the caller frees it); 0 with the reason in why when the pair
 * runs over P2P (no call then) or the transport gives no QP of its own. */
static int nv_qp_create(nv_pe *P, int p2p, nvshmemx_qp_handle_t *h, nvshmemx_qp_handle_t **d_qp,
			char *why, size_t len)
{
	nvshmemx_qp_handle_t *qps = NULL;
	int rc;

	*d_qp = NULL;
	if (p2p) {
		snprintf(why, len, "this pair runs over P2P (nvshmem_ptr maps the peer's memory): "
			 "nvshmemx_qp_quiet is a system fence there, no per-QP completion; "
			 "NVSHMEM_DISABLE_P2P=1 sends it through the NIC");
		return 0;
	}
	rc = nvshmemx_qp_create(1, &qps);
	if (rc || !qps) {
		snprintf(why, len, "nvshmemx_qp_create failed (%d) on %s", rc, P->transport);
		return 0;
	}
	if (P->nqp_arrays < (int)(sizeof(P->qp_arrays) / sizeof(P->qp_arrays[0])))
		P->qp_arrays[P->nqp_arrays++] = qps; /* NVSHMEM's rule: freed after finalize */
	if (qps[0] == (nvshmemx_qp_handle_t)NVSHMEMX_QP_DEFAULT) {
		snprintf(why, len, "nvshmemx_qp_create gave the default QP: %s creates no QP of "
			 "its own (IBGDA with RC QPs, IBRC, IBDEVX and GPUNetIO do)", P->transport);
		return 0;
	}
	*h = qps[0];
	cuda_ok(P, cudaMalloc(d_qp, sizeof(nvshmemx_qp_handle_t)), "cudaMalloc");
	cuda_ok(P, cudaMemcpyAsync(*d_qp, h, sizeof(nvshmemx_qp_handle_t), cudaMemcpyHostToDevice,
				   P->stream), "QP handle");
	pe_wait(P, "QP handle");
	return 1;
}

/* The buffers of the lat runs. */
typedef struct lat_bufs {
	uint64_t *dst, *src, *words; /* symmetric: slots, slots, req + resp */
	nv_sample *d_s, *h;          /* samples: device, host */
	int *d_rc;
	int n, slots;
} lat_bufs;

/* PE 0: the count kernels of one issue row (count_kernel), then their
 * completion. */
static void lat_count(nv_pe *P, lat_bufs *B, int mode, const nvshmemx_qp_handle_t *d_qp)
{
	for (int k = 1; k <= 1 + NV_COUNT_PUTS; k += NV_COUNT_PUTS) {
		count_kernels[mode]<<<1, 1, 0, P->stream>>>(B->dst, B->src, k, B->slots, P->peer,
							    d_qp);
		if (mode == NV_MODE_QP)
			count_quiet_kernel<NV_MODE_QP><<<1, 1, 0, P->stream>>>(P->peer, d_qp);
		else
			count_quiet_kernel<NV_MODE_PUT><<<1, 1, 0, P->stream>>>(P->peer, d_qp);
		cuda_ok(P, cudaGetLastError(), "count launch");
	}
	pe_wait(P, "count kernels");
}

/* One one-way row (mode): PE 0 times -n puts and their completion, PE 1
 * checks every slot afterwards. */
static void lat_oneway(nv_pe *P, lat_bufs *B, int mode, const nvshmemx_qp_handle_t *d_qp)
{
	const gic_nv_job *J = P->job;
	static const int phase_of[] = { NV_PH_P, NV_PH_PUT, NV_PH_QP };
	static const char *const names[] = { "nvshmem p", "nvshmem put", "nvshmem qp-quiet" };
	static const char *const issue_api[] = { "nvshmem_uint64_p", "nvshmem_putmem_nbi",
						 "nvshmemx_qp_uint64_put_nbi" };
	static const char *const putc_api[] = { "nvshmem_uint64_p+nvshmem_quiet",
						"nvshmem_putmem_nbi+nvshmem_quiet",
						"nvshmemx_qp_uint64_put_nbi+nvshmemx_qp_quiet" };
	int phase = phase_of[mode], valid = 1;
	uint64_t tag = nv_mode_tag(mode);
	const char *name = names[mode];
	char note[160];

	if (P->pl.rank == 0) {
		pe_fill(P, B->src, (size_t)B->slots, tag);
	} else {
		cuda_ok(P, cudaMemsetAsync(B->dst, 0, (size_t)B->slots * 8, P->stream), "clear");
	}
	pe_barrier(P, "barrier before the one-way run");
	if (P->pl.rank == 0 && (J->metrics & GIC_LAT_ISSUE))
		lat_count(P, B, mode, d_qp);
	if (P->pl.rank == 0) {
		oneway_kernels[mode]<<<1, 1, 0, P->stream>>>(B->dst, B->src, B->n, B->slots, P->peer,
							     d_qp, B->d_s);
		cuda_ok(P, cudaGetLastError(), "oneway launch");
		cuda_ok(P, cudaMemcpyAsync(B->h, B->d_s, sizeof(nv_sample) * (size_t)B->n,
					   cudaMemcpyDeviceToHost, P->stream), "samples");
		pe_wait(P, name);
	}
	pe_barrier(P, "barrier after the one-way run");
	if (P->pl.rank == 1) {
		gic_pl_verdict(&P->pl, phase,
			       pe_check(P, B->dst, (size_t)B->slots, pe_tag_want, &tag, name));
		return;
	}
	for (int i = 0; i < B->n; i++)
		valid &= B->h[i].rc == 0;
	if (J->metrics & GIC_LAT_ISSUE) {
		if (mode == NV_MODE_PUT)
			snprintf(note, sizeof(note), "%s: 0.357 us; NVSHMEM %s here", ref_note,
				 P->version);
		else
			snprintf(note, sizeof(note), "NVSHMEM %s; no reference for %s", P->version,
				 issue_api[mode]);
		lat_emit(P, phase, name, "issue", B->h, B->n, 0, valid, issue_api[mode], note);
	}
	if (J->metrics & GIC_LAT_PUTC) {
		if (mode == NV_MODE_PUT)
			snprintf(note, sizeof(note), "%s: 1.22 us (put+quiet); NVSHMEM %s here",
				 ref_note, P->version);
		else if (mode == NV_MODE_QP)
			snprintf(note, sizeof(note), "NVSHMEM %s; per-QP completion (the used QP to "
				 "PE 1 only, DeepEP's pattern); nvshmem put: PE-wide quiet", P->version);
		else
			snprintf(note, sizeof(note), "NVSHMEM %s; no reference for "
				 "nvshmem_p+quiet", P->version);
		lat_emit(P, phase, name, "put+completion", B->h, B->n, 1, valid, putc_api[mode], note);
	}
}

/* Round trips: PE 0 p's request i, PE 1 answers with its complement. */
static void lat_rtt(nv_pe *P, lat_bufs *B)
{
	const gic_nv_job *J = P->job;
	uint64_t limit_ns = (uint64_t)J->limit_s * 1000000000ull;
	int rc = -1, valid = 1, n = B->n;
	char note[160];

	cuda_ok(P, cudaMemsetAsync(B->words, 0, 16, P->stream), "clear");
	pe_barrier(P, "barrier before the round trips");
	if (P->pl.rank == 0)
		rtt_pe0_kernel<<<1, 1, 0, P->stream>>>(B->words, B->words + 1, n, P->peer, limit_ns,
							B->d_s);
	else
		rtt_pe1_kernel<<<1, 1, 0, P->stream>>>(B->words, B->words + 1, n, P->peer, limit_ns,
							B->d_rc);
	cuda_ok(P, cudaGetLastError(), "rtt launch");
	if (P->pl.rank == 0)
		cuda_ok(P, cudaMemcpyAsync(B->h, B->d_s, sizeof(nv_sample) * (size_t)n,
					   cudaMemcpyDeviceToHost, P->stream), "samples");
	else
		cuda_ok(P, cudaMemcpyAsync(&rc, B->d_rc, sizeof(int), cudaMemcpyDeviceToHost,
					   P->stream), "rc");
	pe_wait(P, "round trips");
	pe_barrier(P, "barrier after the round trips");
	if (P->pl.rank == 1) {
		uint64_t last = pe_val((uint64_t)n - 1, 3), got = 0;

		if (rc)
			fprintf(stderr, "gic lat: NVSHMEM PE 1: round trips: %s\n",
				rc == ETIMEDOUT ? "a request did not arrive in time" : "failed");
		/* Every request was seen (exact values, in order); the word
		 * holds the last. */
		cuda_ok(P, cudaMemcpyAsync(&got, B->words, 8, cudaMemcpyDeviceToHost, P->stream),
			"read back");
		pe_wait(P, "read back");
		gic_pl_verdict(&P->pl, NV_PH_RTT, rc == 0 && got == last);
		return;
	}
	for (int i = 0; i < n; i++)
		valid &= B->h[i].rc == 0;
	if (!valid)
		fprintf(stderr, "gic lat: NVSHMEM PE 0: round trips: an answer did not "
			"arrive in time\n");
	snprintf(note, sizeof(note), "%s: 2.30 us (p/wait_until); here p and an "
		 "nvshmem_uint64_test poll with a time limit", ref_note);
	lat_emit(P, NV_PH_RTT, "nvshmem p", "rtt", B->h, n, 1, valid, "nvshmem_uint64_p", note);
}

static void run_lat(nv_pe *P)
{
	const gic_nv_job *J = P->job;
	lat_bufs B;
	int oneway = (J->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)) != 0, p2p;

	memset(&B, 0, sizeof(B));
	B.n = J->iters + J->warmup;
	B.slots = B.n < PE_LAT_SLOTS ? B.n : PE_LAT_SLOTS;
	B.dst = (uint64_t *)nvshmem_malloc((size_t)B.slots * 8);
	B.src = (uint64_t *)nvshmem_malloc((size_t)B.slots * 8);
	B.words = (uint64_t *)nvshmem_malloc(16); /* req, resp */
	B.h = (nv_sample *)calloc((size_t)B.n, sizeof(nv_sample));
	if (!B.dst || !B.src || !B.words || !B.h)
		pe_die(P, "lat", "out of memory (symmetric heap: NVSHMEM_SYMMETRIC_SIZE)");
	cuda_ok(P, cudaMalloc(&B.d_s, sizeof(nv_sample) * (size_t)B.n), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&B.d_rc, sizeof(int)), "cudaMalloc");
	p2p = nv_transport(P, B.dst);
	if (oneway) {
		lat_oneway(P, &B, NV_MODE_PUT, NULL);
		lat_oneway(P, &B, NV_MODE_P, NULL);
	}
	if (oneway && J->qp_quiet) {
		nvshmemx_qp_handle_t *d_qp = NULL, h;
		char why[GIC_PL_NOTE_MAX - 64];

		if (nv_qp_create(P, p2p, &h, &d_qp, why, sizeof(why))) {
			char saved[sizeof(P->qps)];

			memcpy(saved, P->qps, sizeof(saved));
			snprintf(P->qps, sizeof(P->qps), "1");
			lat_oneway(P, &B, NV_MODE_QP, d_qp);
			memcpy(P->qps, saved, sizeof(saved));
			cudaFree(d_qp);
		} else {
			nv_rowskip(P, NV_PH_QP, "nvshmem qp-quiet", why);
		}
	}
	if (J->metrics & GIC_LAT_RTT)
		lat_rtt(P, &B);
	pe_barrier(P, "barrier before freeing");
	nvshmem_free(B.words);
	nvshmem_free(B.src);
	nvshmem_free(B.dst);
	cudaFree(B.d_rc);
	cudaFree(B.d_s);
	free(B.h);
}

/* ------------------------------------------------------------------ */
/* rate. */

static void pe_rate_clear(const nv_pe *P, const pe_rate_bufs *B)
{
	cuda_ok(P, cudaMemsetAsync(B->dst, 0, B->words * 8, P->stream), "clear");
}

static void pe_rate_launch(const nv_pe *P, const pe_rate_bufs *B, int ctas, int per_cta,
			   unsigned long long *d_span)
{
	rate_kernel<<<ctas, per_cta, 0, P->stream>>>(B->dst, B->src, P->job->iters, P->peer,
						     d_span);
}

static int pe_rate_check(const nv_pe *P, const pe_rate_bufs *B, int threads, int,
			 const char *name)
{
	return pe_check(P, B->dst, (size_t)threads * PE_RATE_SLOTS, pe_rate_want, &P->job->iters,
			name);
}

static void run_rate(nv_pe *P)
{
	const gic_nv_job *J = P->job;
	int maxt = 1;
	pe_rate_bufs B;
	unsigned long long *d_span = NULL;

	for (int r = 0; r < J->nrows; r++)
		maxt = J->rows[r].threads > maxt ? J->rows[r].threads : maxt;
	B.words = (size_t)maxt * PE_RATE_SLOTS;
	B.dst = (uint64_t *)nvshmem_malloc(B.words * 8);
	B.src = (uint64_t *)nvshmem_malloc(B.words * 8);
	if (!B.dst || !B.src)
		pe_die(P, "rate", "out of memory (symmetric heap: NVSHMEM_SYMMETRIC_SIZE)");
	cuda_ok(P, cudaMalloc(&d_span, 2 * sizeof(unsigned long long)), "cudaMalloc");
	nv_transport(P, B.dst);
	if (P->pl.rank == 0)
		pe_fill(P, B.src, B.words, 4);
	for (int r = 0; r < J->nrows; r++) {
		const gic_nv_rate_row *row = &J->rows[r];
		gic_result res;

		if (!pe_rate_row(P, &B, r, row->name, row->threads, row->ctas, d_span, &res))
			continue;
		gic_result_param(&res, "threads=%d ctas=%d size=8 msgs_per_thread=%d rounds=%d "
				 "api=nvshmem_putmem_nbi+nvshmem_quiet pes=2 devices=%d,%d qps=%s "
				 "nvshmem=%s%s", row->threads, row->ctas, J->iters, PE_ROUNDS,
				 P->devices[0], P->devices[1], P->qps, P->version, P->nic);
		snprintf(res.note, sizeof(res.note), "NVSHMEM %s; 64 slots per thread, each "
			 "checked on PE 1 after every round; not the paper's P-IB row", P->version);
		gic_pl_emit(&P->pl, r, &res);
	}
	pe_barrier(P, "barrier before freeing");
	nvshmem_free(B.src);
	nvshmem_free(B.dst);
	cudaFree(d_span);
}

/* ------------------------------------------------------------------ */
/* loaded. */

/* Host copies of what one loaded configuration left behind. */
typedef struct ld_host {
	long long *cycles;               /* [n] (PE 0) */
	uint64_t *probe, *total, *window, *bg;
	unsigned long long span[2];      /* (PE 0) */
	int rc[1 + GIC_NV_MAX_BG];
} ld_host;

/* 1 when every word this PE received in one configuration holds what its
 * writer last put there: the probe words, and the slots of every writer
 * that writes to this PE (each writer's count came with its last write). */
static int ld_check(const nv_pe *P, const ld_host *H, int n, int level, int nloc)
{
	for (int b = 0; b < 1 + nloc; b++)
		if (H->rc[b]) {
			fprintf(stderr, "gic loaded: NVSHMEM PE %d: %s %d: %s\n", P->pl.rank,
				b ? "background writer" : (P->pl.rank ? "responder" : "probe"),
				b ? P->pl.rank + 2 * (b - 1) : 0,
				H->rc[b] == ETIMEDOUT ? "timed out" : strerror(H->rc[b]));
			return 0;
		}
	for (int i = 0; i < n; i++) {
		uint64_t v = ld_val((uint64_t)i, 1);

		if (H->probe[i] != (P->pl.rank ? v : ~v)) {
			fprintf(stderr, "gic loaded: NVSHMEM PE %d: probe word %d holds 0x%016llx\n",
				P->pl.rank, i, (unsigned long long)H->probe[i]);
			return 0;
		}
	}
	for (int w = 0; w < level; w++) {
		uint64_t t = H->total[w];

		if (1 - w % 2 != P->pl.rank) /* writer w writes to the other PE */
			continue;
		for (uint64_t k = 0; k < NV_BG_SLOTS; k++) {
			uint64_t want = k < t ? ld_val(k + (t - 1 - k) / NV_BG_SLOTS * NV_BG_SLOTS,
						       100 + (uint64_t)w) : 0;

			if (H->bg[(size_t)w * NV_BG_SLOTS + k] != want) {
				fprintf(stderr, "gic loaded: NVSHMEM PE %d: writer %d slot %llu holds "
					"0x%016llx, expected 0x%016llx (%llu writes)\n", P->pl.rank,
					w, (unsigned long long)k,
					(unsigned long long)H->bg[(size_t)w * NV_BG_SLOTS + k],
					(unsigned long long)want, (unsigned long long)t);
				return 0;
			}
		}
	}
	return 1;
}

/* PE 0: the configuration's two results. */
static void ld_emit(const nv_pe *P, int phase, const char *label, int level, const ld_host *H,
		    int n, int ok)
{
	const gic_nv_job *J = P->job;
	char name[96], params[256];
	double carried = 0;
	gic_result r;
	gic_samples s;

	snprintf(name, sizeof(name), "nvshmem %s%s", label, J->pace_ns ? " paced" : "");
	if (J->level_in_name)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), " bg=%d", level);
	snprintf(params, sizeof(params), "bg_ctas=%d pace_ns=%ld queue=%s size=8 "
		 "probe_api=nvshmem_uint64_p bg_api=nvshmem_putmem_nbi pes=2 devices=%d,%d qps=%s "
		 "nvshmem=%s%s", level, J->pace_ns, strcmp(label, "p2p") ? label : "none",
		 P->devices[0], P->devices[1], P->qps, P->version, P->nic);
	pe_res(P, &r, name, "loaded rtt", "us");
	gic_samples_init(&s, (size_t)n);
	for (int i = 0; i < n; i++)
		gic_samples_add(&s, (double)H->cycles[i] / P->mhz);
	gic_result_set_samples(&r, &s, (size_t)(J->warmup < n ? J->warmup : 0));
	gic_samples_free(&s);
	gic_result_param(&r, "%s sm_mhz=%.0f", params, P->mhz);
	snprintf(r.note, sizeof(r.note), "NVSHMEM %s%s; background: 8 B nvshmem_putmem_nbi, "
		 "writers alternating between the PEs", P->version,
		 strcmp(label, "p2p") ? "" : " over P2P: no queue to share or reserve");
	r.validated = ok;
	gic_pl_emit(&P->pl, phase, &r);

	for (int w = 0; w < level; w++)
		carried += (double)H->window[w];
	pe_res(P, &r, name, "background rate", "M msg/s");
	gic_result_set_value(&r, H->span[1] > H->span[0]
					 ? carried / (double)(H->span[1] - H->span[0]) * 1e3 : 0);
	gic_result_param(&r, "%s", params);
	snprintf(r.note, sizeof(r.note), "carried over the probe's span, both directions: each "
		 "writer's writes between the probe's run and stop flags");
	r.validated = ok;
	gic_pl_emit(&P->pl, phase, &r);
}

/* One configuration: level writers, the probe on qp. */
static void ld_config(nv_pe *P, nv_ld_cfg c, ld_host *H, int level, const char *label,
		      nvshmemx_qp_handle_t qp, int phase)
{
	const gic_nv_job *J = P->job;
	int n = J->iters + J->warmup, nloc = (level - P->pl.rank + 1) / 2, ok;
	size_t bgw = (size_t)level * NV_BG_SLOTS;
	cudaStream_t st = P->stream;

	cuda_ok(P, cudaMemsetAsync(c.probe, 0, (size_t)n * 8, st), "clear");
	cuda_ok(P, cudaMemsetAsync(c.flags, 0, 16, st), "clear");
	if (level) {
		cuda_ok(P, cudaMemsetAsync(c.bg, 0, bgw * 8, st), "clear");
		cuda_ok(P, cudaMemsetAsync(c.total, 0, (size_t)level * 8, st), "clear");
		cuda_ok(P, cudaMemsetAsync(c.window, 0, (size_t)level * 8, st), "clear");
	}
	cuda_ok(P, cudaMemsetAsync(c.rc, 0xff, sizeof(int) * (size_t)(1 + nloc), st), "clear");
	cuda_ok(P, cudaMemsetAsync(c.cycles, 0, (size_t)n * 8, st), "clear");
	pe_barrier(P, "barrier before a loaded run");
	c.n = n;
	c.rank = P->pl.rank;
	c.peer = P->peer;
	c.pace_ns = J->pace_ns;
	c.probe_qp = qp;
	loaded_kernel<<<1 + nloc, 1, 0, st>>>(c);
	cuda_ok(P, cudaGetLastError(), "loaded launch");
	pe_wait(P, "loaded run");
	/* Both PEs' kernels have ended: every write was quieted before its
	 * writer's count, and the barrier completes what is left. */
	pe_barrier(P, "barrier after a loaded run");
	cuda_ok(P, cudaMemcpyAsync(H->rc, c.rc, sizeof(int) * (size_t)(1 + nloc),
				   cudaMemcpyDeviceToHost, st), "read back");
	cuda_ok(P, cudaMemcpyAsync(H->probe, c.probe, (size_t)n * 8, cudaMemcpyDeviceToHost, st),
		"read back");
	if (level) {
		cuda_ok(P, cudaMemcpyAsync(H->total, c.total, (size_t)level * 8,
					   cudaMemcpyDeviceToHost, st), "read back");
		cuda_ok(P, cudaMemcpyAsync(H->window, c.window, (size_t)level * 8,
					   cudaMemcpyDeviceToHost, st), "read back");
		cuda_ok(P, cudaMemcpyAsync(H->bg, c.bg, bgw * 8, cudaMemcpyDeviceToHost, st),
			"read back");
	}
	if (P->pl.rank == 0) {
		cuda_ok(P, cudaMemcpyAsync(H->cycles, c.cycles, (size_t)n * 8,
					   cudaMemcpyDeviceToHost, st), "read back");
		cuda_ok(P, cudaMemcpyAsync(H->span, c.span, sizeof(H->span), cudaMemcpyDeviceToHost,
					   st), "read back");
	}
	pe_wait(P, "read back");
	ok = ld_check(P, H, n, level, nloc);
	if (P->pl.rank == 1)
		gic_pl_verdict(&P->pl, phase, ok);
	else
		ld_emit(P, phase, label, level, H, n, ok);
}

static void run_loaded(nv_pe *P)
{
	const gic_nv_job *J = P->job;
	int n = J->iters + J->warmup, maxbg = 1, p2p, have_qp = 0;
	nvshmemx_qp_handle_t qp = (nvshmemx_qp_handle_t)NVSHMEMX_QP_DEFAULT, *d_qp = NULL;
	char why[GIC_PL_NOTE_MAX - 64] = "";
	size_t bgw;
	nv_ld_cfg c;
	ld_host H;

	for (int k = 0; k < J->nlevels; k++)
		maxbg = J->levels[k] > maxbg ? J->levels[k] : maxbg;
	bgw = (size_t)maxbg * NV_BG_SLOTS;
	memset(&c, 0, sizeof(c));
	memset(&H, 0, sizeof(H));
	c.probe = (uint64_t *)nvshmem_malloc((size_t)n * 8);
	c.flags = (uint64_t *)nvshmem_malloc(16);
	c.bg = (uint64_t *)nvshmem_malloc(bgw * 8);
	c.src = (uint64_t *)nvshmem_malloc(bgw * 8);
	c.total = (uint64_t *)nvshmem_malloc((size_t)maxbg * 8);
	c.window = (uint64_t *)nvshmem_malloc((size_t)maxbg * 8);
	H.cycles = (long long *)calloc((size_t)n, 8);
	H.probe = (uint64_t *)calloc((size_t)n, 8);
	H.total = (uint64_t *)calloc((size_t)maxbg, 8);
	H.window = (uint64_t *)calloc((size_t)maxbg, 8);
	H.bg = (uint64_t *)calloc(bgw, 8);
	if (!c.probe || !c.flags || !c.bg || !c.src || !c.total || !c.window || !H.cycles ||
	    !H.probe || !H.total || !H.window || !H.bg)
		pe_die(P, "loaded", "out of memory (symmetric heap: NVSHMEM_SYMMETRIC_SIZE)");
	cuda_ok(P, cudaMalloc(&c.cycles, (size_t)n * 8), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&c.span, 16), "cudaMalloc");
	cuda_ok(P, cudaMalloc(&c.rc, sizeof(int) * (size_t)(1 + maxbg)), "cudaMalloc");
	p2p = nv_transport(P, c.probe);
	if (!p2p && (J->queues & GIC_LOADED_RESERVED))
		have_qp = nv_qp_create(P, 0, &qp, &d_qp, why, sizeof(why));
	for (int k = 0; k < J->nlevels; k++) {
		int level = J->levels[k];

		if (p2p) { /* no queues: one configuration, whatever --queue says */
			ld_config(P, c, &H, level, "p2p", (nvshmemx_qp_handle_t)NVSHMEMX_QP_DEFAULT,
				  2 * k);
			continue;
		}
		if (J->queues & GIC_LOADED_SHARED)
			ld_config(P, c, &H, level, "shared", (nvshmemx_qp_handle_t)NVSHMEMX_QP_DEFAULT,
				  2 * k);
		if (!(J->queues & GIC_LOADED_RESERVED))
			continue;
		if (have_qp)
			ld_config(P, c, &H, level, "reserved", qp, 2 * k + 1);
		else if (k == 0)
			nv_rowskip(P, 2 * k + 1, "nvshmem reserved", why);
	}
	pe_barrier(P, "barrier before freeing");
	cudaFree(d_qp);
	cudaFree(c.rc);
	cudaFree(c.span);
	cudaFree(c.cycles);
	nvshmem_free(c.window);
	nvshmem_free(c.total);
	nvshmem_free(c.src);
	nvshmem_free(c.bg);
	nvshmem_free(c.flags);
	nvshmem_free(c.probe);
	free(H.bg);
	free(H.window);
	free(H.total);
	free(H.probe);
	free(H.cycles);
}

/* ------------------------------------------------------------------ */
/* payload. */

/* Fills (check 0) or checks (check 1) slots of size bytes for that size's
 * pattern; 1 when every byte holds it. */
static int pl_pattern(const nv_pe *P, uint8_t *h, uint32_t size, int slots, int check,
		      const char *what)
{
	for (int k = 0; k < slots; k++)
		for (uint32_t j = 0; j < size; j++) {
			uint8_t want = pl_byte(size, (uint64_t)k, j), *b = &h[(size_t)k * size + j];

			if (!check) {
				*b = want;
			} else if (*b != want) {
				fprintf(stderr, "gic payload: NVSHMEM PE %d: %s size %u: slot %d byte "
					"%u holds 0x%02x, expected 0x%02x\n", P->pl.rank, what, size, k,
					j, *b, want);
				return 0;
			}
		}
	return 1;
}

/* PE 0: one goodput row. */
static void pl_emit(const nv_pe *P, int phase, const char *path, int threads, uint32_t size,
		    double gbps)
{
	gic_result r;
	char name[96];

	snprintf(name, sizeof(name), "%s size=%u", path, size);
	pe_res(P, &r, name, "goodput", "GB/s");
	gic_result_set_value(&r, gbps);
	gic_result_param(&r, "size=%u writes=%d outstanding=all threads=%d api=%s pes=2 "
			 "devices=%d,%d qps=%s nvshmem=%s%s", size, P->job->iters, threads,
			 threads > 1 ? "nvshmemx_putmem_nbi_block+nvshmem_quiet"
				     : "nvshmem_putmem_nbi+nvshmem_quiet",
			 P->devices[0], P->devices[1], P->qps, P->version, P->nic);
	snprintf(r.note, sizeof(r.note), "NVSHMEM %s%s; one quiet at the end; every byte "
		 "checked on PE 1", P->version,
		 strcmp(P->transport, "nvshmem-p2p") ? ""
			 : " over P2P: the calling thread(s) copy over NVLink");
	r.validated = gbps > 0;
	gic_pl_emit(&P->pl, phase, &r);
}

/* PE 0: the first size from which every larger one keeps 90% of the
 * reference (the --reference size, else the largest run). */
static void pl_first90(const nv_pe *P, int phase, const char *path, const double *good)
{
	const gic_nv_job *J = P->job;
	double ref = good[J->nsizes - 1];
	int from = J->nsizes;
	gic_result r;

	for (int i = 0; i < J->nsizes; i++)
		if (J->reference && J->sizes[i] == J->reference)
			ref = good[i];
	while (from > 0 && ref > 0 && good[from - 1] >= 0.9 * ref)
		from--;
	if (from == J->nsizes)
		return;
	pe_res(P, &r, path, "first size at 90% of own max", "B");
	gic_result_set_value(&r, J->sizes[from]);
	gic_result_param(&r, "reference_gbps=%.3f", ref);
	r.validated = 1;
	gic_pl_emit(&P->pl, phase, &r);
}

static void run_payload(nv_pe *P)
{
	const gic_nv_job *J = P->job;
	uint8_t *dst = (uint8_t *)nvshmem_malloc(GIC_NV_REGION);
	uint8_t *src = (uint8_t *)nvshmem_malloc(GIC_NV_REGION);
	uint8_t *h = (uint8_t *)malloc(GIC_NV_REGION);
	unsigned long long *d_span = NULL;
	static const char *const paths[] = { "nvshmem", "nvshmem-block" };

	if (!dst || !src || !h)
		pe_die(P, "payload", "out of memory (symmetric heap: NVSHMEM_SYMMETRIC_SIZE)");
	cuda_ok(P, cudaMalloc(&d_span, 16), "cudaMalloc");
	nv_transport(P, dst);
	for (int block = 0; block < 2; block++) {
		double good[GIC_NV_MAX_SIZES];
		int all_ok = 1, threads = block ? NV_PL_BLOCK : 1;

		for (int z = 0; z < J->nsizes; z++) {
			uint32_t size = J->sizes[z];
			int slots = (int)(GIC_NV_REGION / size) < J->iters ? (int)(GIC_NV_REGION / size)
									    : J->iters;
			int warm = J->iters < NV_PL_WARMUP ? J->iters : NV_PL_WARMUP;
			size_t bytes = (size_t)slots * size;
			unsigned long long sp[2] = { 0, 0 };

			if (P->pl.rank == 0) {
				pl_pattern(P, h, size, slots, 0, "fill");
				cuda_ok(P, cudaMemcpyAsync(src, h, bytes, cudaMemcpyHostToDevice,
							   P->stream), "pattern");
				pe_wait(P, "pattern");
			} else {
				cuda_ok(P, cudaMemsetAsync(dst, 0, bytes, P->stream), "clear");
			}
			pe_barrier(P, "barrier before a payload size");
			if (P->pl.rank == 0) {
				for (int timed = 0; timed < 2; timed++) {
					if (block)
						payload_kernel<1><<<1, NV_PL_BLOCK, 0, P->stream>>>(
							dst, src, size, timed ? J->iters : warm, slots,
							P->peer, d_span);
					else
						payload_kernel<0><<<1, 1, 0, P->stream>>>(
							dst, src, size, timed ? J->iters : warm, slots,
							P->peer, d_span);
					cuda_ok(P, cudaGetLastError(), "payload launch");
				}
				cuda_ok(P, cudaMemcpyAsync(sp, d_span, sizeof(sp), cudaMemcpyDeviceToHost,
							   P->stream), "span");
				pe_wait(P, paths[block]);
			}
			/* PE 0's quiet has returned: every put is complete. */
			pe_barrier(P, "barrier after a payload size");
			if (P->pl.rank == 1) {
				int ok;

				cuda_ok(P, cudaMemcpyAsync(h, dst, bytes, cudaMemcpyDeviceToHost,
							   P->stream), "read back");
				pe_wait(P, "read back");
				ok = pl_pattern(P, h, size, slots, 1, paths[block]);
				all_ok &= ok;
				gic_pl_verdict(&P->pl, block * GIC_NV_MAX_SIZES + z, ok);
				continue;
			}
			good[z] = sp[1] > sp[0] ? (double)J->iters * size / (double)(sp[1] - sp[0]) : 0;
			pl_emit(P, block * GIC_NV_MAX_SIZES + z, paths[block], threads, size, good[z]);
		}
		if (P->pl.rank == 1)
			gic_pl_verdict(&P->pl, NV_PL_FIRST90 + block, all_ok);
		else
			pl_first90(P, NV_PL_FIRST90 + block, paths[block], good);
	}
	pe_barrier(P, "barrier before freeing");
	cudaFree(d_span);
	free(h);
	nvshmem_free(src);
	nvshmem_free(dst);
}

/* ------------------------------------------------------------------ */
/* kernel (exp_kernel.h): the fma caller of `gic kernel` (kernel_caller.cuh,
 * the source of gic kernel's own rows), PE 0 running it with NVSHMEM's send
 * path between its halves. */

enum { NV_K_NONE = 0, NV_K_CODE = 1, NV_K_SEND = 2, NV_K_SENDWAIT = 3 };

/* The kernel's by-value argument (kc_caller's CFG). */
typedef struct nv_kcfg {
	float *data;        /* live values in and out */
	size_t stream_len;  /* 0: the fma caller reads no array */
	int iters;          /* work iterations per thread */
	int enable;         /* 0: the send path is never taken ("code") */
	int msgs, max_msgs; /* messages per block; slots per block */
	uint32_t size;      /* bytes per message */
	uint8_t *dst;       /* symmetric: block b's slot m at (b * max_msgs + m) * size */
	const uint8_t *src; /* symmetric: the same slot's payload (this PE's) */
	int peer;
} nv_kcfg;

/* What a variant puts between the halves: none nothing (no NVSHMEM code);
 * code, send and sendwait thread 0's nvshmem_putmem_nbi of each message
 * behind c.enable (false for code), sendwait then nvshmem_quiet; then the
 * block synchronizes. */
template <int VARIANT>
struct nv_kmid {
	static __device__ __forceinline__ void between(const nv_kcfg &c)
	{
		if (VARIANT != NV_K_NONE && c.enable) {
			if (threadIdx.x == 0) {
				for (int m = 0; m < c.msgs; m++) {
					size_t off = ((size_t)blockIdx.x * c.max_msgs + m) * c.size;

					nvshmem_putmem_nbi(c.dst + off, c.src + off, c.size, c.peer);
				}
				if (VARIANT == NV_K_SENDWAIT)
					nvshmem_quiet();
			}
			__syncthreads(); /* the block goes on once its sends are posted (or done) */
		}
	}
};

template <int VARIANT, int LIVE>
static __global__ void nv_enclosing_kernel(nv_kcfg c)
{
	kc_caller<K_FMA, LIVE, nv_kcfg, nv_kmid<VARIANT> >(c);
}

typedef void (*nv_kernel_fn)(nv_kcfg);

template <int VARIANT>
static nv_kernel_fn nv_kpick_live(int live)
{
#define NV_K_LIVE_CASE(n) \
	case n: return nv_enclosing_kernel<VARIANT, n>;
	switch (live) {
	GIC_KERNEL_LIVE_CASES(NV_K_LIVE_CASE)
#undef NV_K_LIVE_CASE
	default: return NULL;
	}
}

static nv_kernel_fn nv_kpick(int variant, int live)
{
	switch (variant) {
	case NV_K_NONE: return nv_kpick_live<NV_K_NONE>(live);
	case NV_K_CODE: return nv_kpick_live<NV_K_CODE>(live);
	case NV_K_SEND: return nv_kpick_live<NV_K_SEND>(live);
	default: return nv_kpick_live<NV_K_SENDWAIT>(live);
	}
}

/* The payload word j of the source region. */
static uint64_t nv_kword(size_t j)
{
	return pe_val(j, 6);
}

/* PE 1: 1 when block b's slot m holds its source's words for m < msgs
 * (and nothing landed anywhere else: every other word is 0). */
static int nv_kcheck(const nv_pe *P, const uint64_t *h, int msgs, const char *name)
{
	const gic_nv_job *J = P->job;
	size_t per_slot = J->k_size / 8, words = (size_t)J->k_blocks * P->k_max_msgs * per_slot;

	for (size_t j = 0; j < words; j++) {
		size_t m = j / per_slot % (size_t)P->k_max_msgs;
		uint64_t want = (int)m < msgs ? nv_kword(j) : 0;

		if (h[j] != want) {
			fprintf(stderr, "gic kernel: NVSHMEM PE 1: %s: block %zu message %zu: word "
				"0x%016llx, expected 0x%016llx\n", name,
				j / per_slot / (size_t)P->k_max_msgs, m, (unsigned long long)h[j],
				(unsigned long long)want);
			return 0;
		}
	}
	return 1;
}

/* PE 0: one result of a configuration. */
static void nv_kemit(const nv_pe *P, int phase, const char *name, const char *metric,
		     const char *unit, double value, const char *api, const char *note)
{
	const gic_nv_job *J = P->job;
	gic_result r;

	pe_res(P, &r, name, metric, unit);
	gic_result_set_value(&r, value);
	gic_result_param(&r, "blocks=%d threads=%d live=%d size=%u rounds=%d warmup=1 api=%s "
			 "inlining=%s pes=2 devices=%d,%d qps=%s nvshmem=%s%s", J->k_blocks,
			 J->k_threads, J->k_live, J->k_size, J->iters, api,
#ifdef NVSHMEM_ENABLE_ALL_DEVICE_INLINING
			 "on",
#else
			 "off",
#endif
			 P->devices[0], P->devices[1], P->qps, P->version, P->nic);
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.validated = 1;
	gic_pl_emit(&P->pl, phase, &r);
}

static void run_kernel(nv_pe *P)
{
	static const char *const vnames[] = { "none", "code", "send", "sendwait" };
	static const char *const apis[] = { "none", "nvshmem_putmem_nbi,never-taken",
					    "nvshmem_putmem_nbi", "nvshmem_putmem_nbi+nvshmem_quiet" };
	const gic_nv_job *J = P->job;
	size_t region, nfloats = (size_t)J->k_blocks * J->k_threads * J->k_live;
	double t_none = 0, t_send[GIC_NV_KERNEL_MSGS] = { 0 };
	int regs_none = 0, phase = 0;
	uint8_t *dst, *src;
	uint64_t *h;
	cudaEvent_t ev[2];
	nv_kcfg c;

	P->k_max_msgs = 1;
	for (int k = 0; k < J->k_nmsgs; k++)
		P->k_max_msgs = J->k_msgs[k] > P->k_max_msgs ? J->k_msgs[k] : P->k_max_msgs;
	region = (size_t)J->k_blocks * P->k_max_msgs * J->k_size;
	dst = (uint8_t *)nvshmem_malloc(region);
	src = (uint8_t *)nvshmem_malloc(region);
	h = (uint64_t *)malloc(region);
	if (!dst || !src || !h)
		pe_die(P, "kernel", "out of memory (symmetric heap: NVSHMEM_SYMMETRIC_SIZE)");
	memset(&c, 0, sizeof(c));
	cuda_ok(P, cudaMalloc(&c.data, nfloats * sizeof(float)), "cudaMalloc");
	cuda_ok(P, cudaMemsetAsync(c.data, 0, nfloats * sizeof(float), P->stream), "clear");
	cuda_ok(P, cudaEventCreate(&ev[0]), "cudaEventCreate");
	cuda_ok(P, cudaEventCreate(&ev[1]), "cudaEventCreate");
	nv_transport(P, dst);
	if (P->pl.rank == 0) {
		for (size_t j = 0; j < region / 8; j++)
			h[j] = nv_kword(j);
		cuda_ok(P, cudaMemcpyAsync(src, h, region, cudaMemcpyHostToDevice, P->stream),
			"pattern");
		pe_wait(P, "pattern");
	}
	c.iters = J->k_work;
	c.max_msgs = P->k_max_msgs;
	c.size = J->k_size;
	c.dst = dst;
	c.src = src;
	c.peer = P->peer;
	for (int v = NV_K_NONE; v <= NV_K_SENDWAIT; v++) {
		nv_kernel_fn fn = nv_kpick(v, J->k_live);
		int nm = v >= NV_K_SEND ? J->k_nmsgs : 1, per_sm = 0;
		cudaFuncAttributes attr;

		if (!(J->k_variants & (1u << v)))
			continue;
		cuda_ok(P, cudaFuncGetAttributes(&attr, (const void *)fn), "cudaFuncGetAttributes");
		cuda_ok(P, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)fn,
									 J->k_threads, 0),
			"cudaOccupancyMaxActiveBlocksPerMultiprocessor");
		if (v == NV_K_NONE)
			regs_none = attr.numRegs;
		for (int k = 0; k < nm; k++, phase++) {
			int msgs = v >= NV_K_SEND ? J->k_msgs[k] : 0;
			double t[GIC_NV_MAX_ROWS], ms;
			char name[96], note[160];

			snprintf(name, sizeof(name), "nvshmem fma %s msgs=%d size=%u", vnames[v], msgs,
				 J->k_size);
			if (P->pl.rank == 1)
				cuda_ok(P, cudaMemsetAsync(dst, 0, region, P->stream), "clear");
			pe_barrier(P, "barrier before a kernel configuration");
			c.enable = v >= NV_K_SEND;
			c.msgs = msgs;
			for (int r = -1; P->pl.rank == 0 && r < J->iters; r++) { /* -1: warm-up */
				float f = 0;

				cuda_ok(P, cudaEventRecord(ev[0], P->stream), "cudaEventRecord");
				fn<<<J->k_blocks, J->k_threads, 0, P->stream>>>(c);
				cuda_ok(P, cudaGetLastError(), "kernel launch");
				cuda_ok(P, cudaEventRecord(ev[1], P->stream), "cudaEventRecord");
				if (v >= NV_K_SEND) /* the puts left in flight: outside the timed span */
					nvshmemx_quiet_on_stream(P->stream);
				pe_wait(P, name);
				cuda_ok(P, cudaEventElapsedTime(&f, ev[0], ev[1]), "cudaEventElapsedTime");
				if (r >= 0)
					t[r] = f;
			}
			/* PE 0's puts are complete (quiet); the barrier orders the check
			 * after them. */
			pe_barrier(P, "barrier after a kernel configuration");
			if (P->pl.rank == 1) {
				cuda_ok(P, cudaMemcpyAsync(h, dst, region, cudaMemcpyDeviceToHost,
							   P->stream), "read back");
				pe_wait(P, "read back");
				gic_pl_verdict(&P->pl, phase, nv_kcheck(P, h, msgs, name));
				continue;
			}
			for (int i = 1; i < J->iters; i++) /* insertion sort for the median */
				for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
					double x = t[j];

					t[j] = t[j - 1];
					t[j - 1] = x;
				}
			ms = t[J->iters / 2];
			if (v == NV_K_NONE)
				snprintf(note, sizeof(note), "per thread (-rdc, device-linked with "
					 "NVSHMEM %s); no NVSHMEM code", P->version);
			else
				snprintf(note, sizeof(note), "per thread (-rdc, device-linked with "
					 "NVSHMEM %s); the same caller without it: %d", P->version,
					 regs_none);
			nv_kemit(P, phase, name, "registers", "regs", attr.numRegs, apis[v], note);
			nv_kemit(P, phase, name, "spill", "B", (double)attr.localSizeBytes, apis[v],
				 "local memory per thread");
			snprintf(note, sizeof(note), "resident blocks per SM at %d threads per block",
				 J->k_threads);
			nv_kemit(P, phase, name, "blocks/SM", "blocks", per_sm, apis[v], note);
			nv_kemit(P, phase, name, "time", "us", ms * 1e3, apis[v],
				 "kernel on PE 0 (CUDA events), median of rounds; the final quiet "
				 "outside");
			if (v == NV_K_NONE)
				t_none = ms;
			else if (t_none > 0)
				nv_kemit(P, phase, name, "loss", "%", 100.0 * (1.0 - t_none / ms), apis[v],
					 "useful throughput lost against nvshmem none");
			if (v == NV_K_SEND)
				t_send[k] = ms;
			if (v == NV_K_SENDWAIT && t_send[k] > 0)
				nv_kemit(P, phase, name, "waiting loss", "%",
					 100.0 * (1.0 - t_send[k] / ms), apis[v],
					 "against send with the same messages");
		}
	}
	pe_barrier(P, "barrier before freeing");
	cudaEventDestroy(ev[1]);
	cudaEventDestroy(ev[0]);
	cudaFree(c.data);
	free(h);
	nvshmem_free(src);
	nvshmem_free(dst);
}

/* ------------------------------------------------------------------ */

/* Reads the job (and, for rank > 0, the unique id) from the driver. */
static void read_input(nv_pe *P, int in_fd, gic_nv_job *job, nvshmemx_uniqueid_t *uid)
{
	gic_pl_read_job(&P->pl, in_fd, job, sizeof(*job));
	if (job->kind < GIC_NV_LAT || job->kind > GIC_NV_KERNEL)
		pe_die(P, "reading the job", "malformed");
	if (job->iters < 1 || job->warmup < 0 || job->nrows < 0 || job->nrows > GIC_NV_MAX_ROWS ||
	    job->limit_s < 1 || job->iters > GIC_NV_MAX_SAMPLES ||
	    job->warmup > GIC_NV_MAX_SAMPLES - job->iters ||
	    job->nlevels < 0 || job->nlevels > GIC_NV_MAX_LEVELS || job->pace_ns < 0 ||
	    job->pace_ns > 1000000000L || job->nsizes < 0 || job->nsizes > GIC_NV_MAX_SIZES ||
	    (job->kind == GIC_NV_LOADED && job->nlevels < 1) ||
	    (job->kind == GIC_NV_PAYLOAD && job->nsizes < 1))
		pe_die(P, "reading the job", "values out of range");
	if (job->kind == GIC_NV_KERNEL) {
		int maxm = 1;

		if (job->iters > GIC_NV_MAX_ROWS || !nv_kpick(NV_K_NONE, job->k_live) ||
		    job->k_blocks < 1 || job->k_blocks > 65536 || job->k_threads < 1 ||
		    job->k_threads > 1024 || job->k_work < 2 || job->k_nmsgs < 1 ||
		    job->k_nmsgs > GIC_NV_KERNEL_MSGS || (job->k_size != 8 && job->k_size != 7168))
			pe_die(P, "reading the job", "a kernel value is out of range");
		for (int k = 0; k < job->k_nmsgs; k++) {
			if (job->k_msgs[k] < 0 || job->k_msgs[k] > 1024)
				pe_die(P, "reading the job",
				       "a kernel message count is out of range");
			maxm = job->k_msgs[k] > maxm ? job->k_msgs[k] : maxm;
		}
		if ((double)job->k_blocks * maxm * job->k_size > GIC_NV_KERNEL_REGION)
			pe_die(P, "reading the job", "the kernel's messages exceed their region");
	}
	for (int k = 0; k < job->nlevels; k++)
		if (job->levels[k] < 0 || job->levels[k] > GIC_NV_MAX_BG)
			pe_die(P, "reading the job", "a background level is out of range");
	for (int z = 0; z < job->nsizes; z++)
		if (job->sizes[z] < 1 || job->sizes[z] > GIC_NV_REGION)
			pe_die(P, "reading the job", "a payload size is out of range");
	for (int r = 0; r < job->nrows; r++) {
		const gic_nv_rate_row *w = &job->rows[r];

		if (w->threads < 1 || w->ctas < 1 || w->threads % w->ctas ||
		    w->threads / w->ctas > 1024)
			pe_die(P, "reading the job", "a rate row's threads do not split into CTAs");
	}
	if (P->pl.rank > 0)
		gic_pl_read_uid(&P->pl, in_fd, uid, sizeof(*uid));
}

/* 1 when NVSHMEM_DISABLE_P2P asks NVSHMEM to reach every PE through its
 * remote transport (NVSHMEM reads it as a boolean). */
static int nv_p2p_disabled(void)
{
	const char *v = getenv("NVSHMEM_DISABLE_P2P");

	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
		     !strcasecmp(v, "y"));
}

int gic_nvshmem_pe(int rank, int nranks, int in_fd, int out_fd)
{
	nv_pe pe, *P = &pe;
	gic_nv_job job;
	nvshmemx_uniqueid_t uid = NVSHMEMX_UNIQUEID_INITIALIZER;
	nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
	int ngpu = 0, maj = 0, min = 0, patch = 0, one_gpu;

	memset(P, 0, sizeof(*P));
	gic_pl_pe_init(&P->pl, "NVSHMEM", "nvshmem", GIC_NV_MAGIC, rank, nranks, out_fd);
	P->job = &job;
	read_input(P, in_fd, &job, &uid);
	P->pl.sub = job.kind == GIC_NV_LAT ? "lat" : job.kind == GIC_NV_RATE ? "rate"
		    : job.kind == GIC_NV_LOADED ? "loaded" : job.kind == GIC_NV_PAYLOAD ? "payload"
		    : "kernel";
	gic_pl_pe_alarm(&P->pl, job.limit_s);
	ngpu = pe_gpu_count();
	/* One GPU: both PEs on it (NVSHMEM's "multiple PEs per GPU"), which
	 * only a NIC transport can connect (P2P between two processes of one
	 * GPU is not NVSHMEM's). */
	one_gpu = ngpu == 1 && nv_p2p_disabled();
	if (ngpu < nranks && !one_gpu) {
		int32_t found = ngpu;

		if (rank == 0)
			gic_pl_send(&P->pl, GIC_PL_REC_SKIP, 0, &found, sizeof(found));
		return 0;
	}
	P->devices[0] = 0;
	P->devices[1] = one_gpu ? 0 : 1;
	cuda_ok(P, cudaSetDevice(P->devices[rank]), "cudaSetDevice");
	if (rank == 0) {
		if (nvshmemx_get_uniqueid(&uid))
			pe_die(P, "nvshmemx_get_uniqueid", "failed");
		gic_pl_send(&P->pl, GIC_PL_REC_UID, 0, &uid, sizeof(uid));
	}
	if (nvshmemx_set_attr_uniqueid_args(rank, nranks, &uid, &attr))
		pe_die(P, "nvshmemx_set_attr_uniqueid_args", "failed");
	/* Exits the process (status 255) when NVSHMEM cannot start; its
	 * messages say why, the driver reports the status. */
	nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
	if (nvshmem_my_pe() != rank || nvshmem_n_pes() != nranks)
		pe_die(P, "nvshmemx_init_attr", "this PE's rank or the PE count differ from ours");
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
		nv_nic_label(P);
	}
	P->mhz = pe_sm_clock(P);
	if (job.kind == GIC_NV_LAT)
		run_lat(P);
	else if (job.kind == GIC_NV_RATE)
		run_rate(P);
	else if (job.kind == GIC_NV_LOADED)
		run_loaded(P);
	else if (job.kind == GIC_NV_PAYLOAD)
		run_payload(P);
	else
		run_kernel(P);
	cudaStreamDestroy(P->stream);
	nvshmem_finalize();
	for (int i = 0; i < P->nqp_arrays; i++)
		free(P->qp_arrays[i]); /* after finalize, as nvshmemx_qp_create asks */
	gic_pl_send(&P->pl, GIC_PL_REC_DONE, 0, NULL, 0);
	return 0;
}
