/*
 * bench/gic/pe_bodies.cuh - what the library PEs (nvshmem_pe.cu,
 * nccl_pe.cu) measure, written once: the GPU bodies of lat's one-way loop
 * (issue, put+completion), the round trip's two sides and a rate thread,
 * and the host half of a rate row. Each PE defines its transport before
 * including this file, as static __device__ __forceinline__ calls, so a
 * body compiles to what the PE's own loop was (the same operations
 * between the same clock reads):
 *
 *   pe_tx                 the by-value state: dst and src, the slots'
 *                         bases as the put takes them (NVSHMEM: symmetric
 *                         addresses; GIN: window offsets)
 *   pe_tx_at(x, k)        x with dst and src k slots on
 *   pe_tx_put(x, mode, v) an 8-byte write of mode (the PE's numbering) to
 *                         x.dst: from x.src, or the value v itself
 *   pe_tx_complete(x, mode)   completes this thread's writes
 *   pe_tx_send(x, v)      round trip: this side's message (PE 0 a
 *                         request, PE 1 an answer) of value v
 *   pe_tx_wait(x, i, want, limit_ns)  round trip: waits for the peer's
 *                         message i (want: its value); 0 or ETIMEDOUT
 *   pe_tx_answer_rc(x, rc, v)     PE 0: a sample's rc from its wait's for
 *                         the answer to request v, after the clock
 *                         stopped (a wrong answer: EIO)
 *   pe_tx_rtt_end(x), pe_tx_rate_end(x)   after the last round trip, and
 *                         after a rate thread's span
 */
#ifndef GIC_BENCH_PE_BODIES_CUH
#define GIC_BENCH_PE_BODIES_CUH

#include "pe_gpu.cuh"

/* PE 0, one thread: sample i writes slot i % slots (value pe_val(slot,
 * tag)) with mode and completes it; issue: the write's cycles, total: the
 * write's and its completion's. */
static __device__ __forceinline__ void pe_oneway_body(const pe_tx &x, int mode, uint64_t tag,
						      int n, int slots, pe_sample *out)
{
	for (int i = 0; i < n; i++) {
		int s = i % slots;
		uint64_t v = pe_val((uint64_t)s, tag);
		pe_tx y = pe_tx_at(x, s);

		/* Inputs are made before the clock starts. */
		asm volatile("" : "+l"(v), "+l"(y.dst), "+l"(y.src));
		long long c0 = clock64();
		pe_tx_put(y, mode, v);
		long long c1 = clock64();
		pe_tx_complete(y, mode);
		long long c2 = clock64();

		out[i].issue = c1 - c0;
		out[i].total = c2 - c0;
		out[i].rc = 0;
	}
}

/* PE 0, one thread: request i (pe_val(i, 3)), then its answer (the
 * complement); the first failure ends the run. */
static __device__ __forceinline__ void pe_rtt_pe0_body(const pe_tx &x, int n, uint64_t limit_ns,
						       pe_sample *out)
{
	for (int i = 0; i < n; i++) {
		uint64_t v = pe_val((uint64_t)i, 3);

		asm volatile("" : "+l"(v));
		long long c0 = clock64();
		pe_tx_send(x, v);
		int rc = pe_tx_wait(x, i, ~v, limit_ns);

		out[i].total = clock64() - c0;
		out[i].issue = 0;
		out[i].rc = pe_tx_answer_rc(x, rc, v);
		if (rc)
			break;
	}
	pe_tx_rtt_end(x);
}

/* PE 1, one thread: answers each request with its complement; *rc_out is
 * 0 or the first wait's failure. */
static __device__ __forceinline__ void pe_rtt_pe1_body(const pe_tx &x, int n, uint64_t limit_ns,
						       int *rc_out)
{
	int rc = 0;

	for (int i = 0; i < n; i++) {
		uint64_t v = pe_val((uint64_t)i, 3);

		rc = pe_tx_wait(x, i, v, limit_ns);
		if (rc)
			break;
		pe_tx_send(x, ~v);
	}
	pe_tx_rtt_end(x);
	*rc_out = rc;
}

/* PE 0, a thread of a rate row: n writes of mode to its own PE_RATE_SLOTS
 * slots, then their completion; span: the first start and the last
 * completion of every thread (globaltimer). */
static __device__ __forceinline__ void pe_rate_body(const pe_tx &x, int mode, int n,
						    unsigned long long *span)
{
	pe_tx y = pe_tx_at(x, ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * PE_RATE_SLOTS);

	__syncthreads(); /* every thread of the CTA starts the clock together */
	unsigned long long t0 = pe_now_ns();
	for (int i = 0; i < n; i++)
		pe_tx_put(pe_tx_at(y, i & (PE_RATE_SLOTS - 1)), mode, 0);
	pe_tx_complete(y, mode);
	unsigned long long t1 = pe_now_ns();

	atomicMin(&span[0], t0);
	atomicMax(&span[1], t1);
	pe_tx_rate_end(y);
}

/* ------------------------------------------------------------------ */
/* Host halves. The PE defines before including this file:
 *
 *   pe_self       its state: pl (gic_pl_pe), stream, job (->limit_s,
 *                 ->iters: a rate row's messages per thread), transport
 *   pe_rate_bufs  a rate job's regions
 *   PE_RATE_CHECK_IN_ROUND        1: PE 1 checks before a rate round's
 *                 closing barrier (it waits for the sender's signals
 *                 itself); 0: after it
 *
 * and, anywhere in the file, the calls declared here. Every call ends
 * the process through gic_pl_die on an error. */

/* Both PEs, on the stream, waited for with the job's time limit. */
static void pe_barrier(const pe_self *P, const char *what);
/* rate, PE 1: clears the destination before a round. */
static void pe_rate_clear(const pe_self *P, const pe_rate_bufs *B);
/* rate, PE 0: launches a round's kernel (ctas x per_cta threads). */
static void pe_rate_launch(const pe_self *P, const pe_rate_bufs *B, int ctas, int per_cta,
			   unsigned long long *d_span);
/* rate, PE 1: 1 when every slot of a round of threads over ctas holds its
 * word (the first wrong one printed). */
static int pe_rate_check(const pe_self *P, const pe_rate_bufs *B, int threads, int ctas,
			 const char *name);

/* Prints why and ends the process (gic_pl_die). */
static __attribute__((noreturn)) void pe_die(const pe_self *P, const char *what, const char *why)
{
	gic_pl_die(&P->pl, what, why);
}

/* Ends the process (what, CUDA's reason) unless e is cudaSuccess. */
static void cuda_ok(const pe_self *P, cudaError_t e, const char *what)
{
	if (e != cudaSuccess)
		pe_die(P, what, cudaGetErrorString(e));
}

/* Waits for the PE's stream within the job's time limit; ends the process
 * when it does not finish in time or finishes with an error. */
static void pe_wait(const pe_self *P, const char *what)
{
	uint64_t deadline = gic_pl_now_ms() + (uint64_t)P->job->limit_s * 1000;
	cudaError_t e;

	while ((e = cudaStreamQuery(P->stream)) == cudaErrorNotReady) {
		if (gic_pl_now_ms() > deadline)
			pe_die(P, what, "the GPU did not finish within the time limit");
		usleep(20);
	}
	cuda_ok(P, e, what);
}

/* The SM clock (MHz) measured now on the stream by pe_clock_kernel; ends
 * the process when it is not measurable. */
static double pe_sm_clock(const pe_self *P)
{
	double *d, mhz = 0;

	cuda_ok(P, cudaMalloc(&d, sizeof(double)), "cudaMalloc");
	pe_clock_kernel<<<1, 1, 0, P->stream>>>(d);
	cuda_ok(P, cudaMemcpyAsync(&mhz, d, sizeof(double), cudaMemcpyDeviceToHost, P->stream),
		"SM clock");
	pe_wait(P, "SM clock");
	cudaFree(d);
	if (!(mhz > 0))
		pe_die(P, "SM clock", "not measurable");
	return mhz;
}

/* The fields every result of this PE shares. */
static void pe_res(const pe_self *P, gic_result *r, const char *name, const char *metric,
		   const char *unit)
{
	gic_result_init(r, P->pl.sub, name, metric, unit);
	snprintf(r->transport, sizeof(r->transport), "%s", P->transport);
}

/* Writes pe_val(i, tag) into the n device words at dev (waited for). */
static void pe_fill(const pe_self *P, void *dev, size_t n, uint64_t tag)
{
	uint64_t *pat = (uint64_t *)malloc(n * 8);

	if (!pat)
		pe_die(P, "pattern", "out of memory");
	for (size_t i = 0; i < n; i++)
		pat[i] = pe_val(i, tag);
	cuda_ok(P, cudaMemcpyAsync(dev, pat, n * 8, cudaMemcpyHostToDevice, P->stream), "pattern");
	pe_wait(P, "pattern");
	free(pat);
}

/* Reads the n device words at dev back (waited for); 1 when word i holds
 * want(i, arg) for every i, else 0 after printing the first wrong word as
 * "gic SUB: LIB PE R: WHAT: word ..." (pl.lib). */
static int pe_check(const pe_self *P, const void *dev, size_t n,
		    uint64_t (*want)(size_t i, const void *arg), const void *arg, const char *what)
{
	uint64_t *h = (uint64_t *)malloc(n * sizeof(uint64_t));
	int ok = 1;

	if (!h)
		pe_die(P, what, "out of memory");
	cuda_ok(P, cudaMemcpyAsync(h, dev, n * sizeof(uint64_t), cudaMemcpyDeviceToHost,
				   P->stream), what);
	pe_wait(P, what);
	for (size_t i = 0; i < n && ok; i++) {
		if (h[i] != want(i, arg)) {
			fprintf(stderr, "gic %s: %s PE %d: %s: word %zu holds 0x%016llx, "
				"expected 0x%016llx\n", P->pl.sub, P->pl.lib, P->pl.rank, what, i,
				(unsigned long long)h[i], (unsigned long long)want(i, arg));
			ok = 0;
		}
	}
	free(h);
	return ok;
}

/* One rate row (threads over ctas CTAs, name): a warm-up round, then
 * PE_ROUNDS timed ones, PE 1 checking every slot of each. PE 1: sends its
 * verdict for phase and returns 0. PE 0: *res is the row's result with
 * its rates (M msg/s, first start to last completion of a round) and
 * validated; returns 1, the caller adds params and note and emits it. */
static int pe_rate_row(const pe_self *P, const pe_rate_bufs *B, int phase, const char *name,
		       int threads, int ctas, unsigned long long *d_span, gic_result *res)
{
	double rates[PE_ROUNDS];
	int ok = 1;

	for (int round = -1; round < PE_ROUNDS; round++) { /* -1: warm-up */
		unsigned long long span[2] = { ~0ull, 0 };

		if (P->pl.rank == 1)
			pe_rate_clear(P, B);
		else
			cuda_ok(P, cudaMemcpyAsync(d_span, span, sizeof(span),
						   cudaMemcpyHostToDevice, P->stream), "span");
		pe_barrier(P, "barrier before a rate round");
		if (P->pl.rank == 0) {
			pe_rate_launch(P, B, ctas, threads / ctas, d_span);
			cuda_ok(P, cudaGetLastError(), "rate launch");
			cuda_ok(P, cudaMemcpyAsync(span, d_span, sizeof(span),
						   cudaMemcpyDeviceToHost, P->stream), "span");
			pe_wait(P, name);
			if (round >= 0)
				rates[round] = (double)threads * P->job->iters * 1e3 /
					       (double)(span[1] - span[0]);
		} else if (PE_RATE_CHECK_IN_ROUND) {
			ok &= pe_rate_check(P, B, threads, ctas, name);
		}
		pe_barrier(P, "barrier after a rate round");
		if (P->pl.rank == 1 && !PE_RATE_CHECK_IN_ROUND)
			ok &= pe_rate_check(P, B, threads, ctas, name);
	}
	if (P->pl.rank == 1) {
		gic_pl_verdict(&P->pl, phase, ok);
		return 0;
	}
	pe_res(P, res, name, "message rate", "M msg/s");
	gic_result_set_values(res, rates, PE_ROUNDS, 0);
	res->validated = 1;
	return 1;
}

#endif /* GIC_BENCH_PE_BODIES_CUH */
