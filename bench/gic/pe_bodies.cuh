/*
 * bench/gic/pe_bodies.cuh - the GPU bodies of the measurements both
 * library PE programs run, written once: the one-way lat loop (issue,
 * put+completion), the round trip's two sides, and a rate thread. The
 * NVSHMEM PEs (nvshmem_pe.cu) and the NCCL GIN PEs (nccl_pe.cu) each
 * define their transport before including this file (and what the host
 * halves below need, listed there):
 *
 *   pe_tx        the by-value state a body's calls take
 *   pe_tx_dst_t, pe_tx_src_t      a destination and a source slot as the
 *                put takes them (NVSHMEM: symmetric addresses; GIN: window
 *                offsets)
 *   pe_tx_dst(x, s), pe_tx_src(x, s)   slot s of the destination, source
 *   pe_tx_shift(x, k)             x with its slots starting k slots on
 *   pe_tx_put(x, mode, d, f, v)   issue an 8-byte write of mode (the PE's
 *                own numbering) to d: from f, or the value v itself
 *   pe_tx_complete(x, mode)       complete this thread's writes of mode
 *   pe_tx_wait_answer(x, i, v, limit_ns)   PE 0: wait for answer i to
 *                request v; 0 or ETIMEDOUT (timed)
 *   pe_tx_answer_rc(x, rc, v)     PE 0: the sample's rc from that wait's,
 *                after the clock stopped (a wrong answer: EIO)
 *   pe_tx_request(x, i, v)        PE 0: send request i (value v)
 *   pe_tx_wait_request(x, i, v, limit_ns)  PE 1: wait for request i;
 *                0 or ETIMEDOUT
 *   pe_tx_answer(x, i, v)         PE 1: send answer i (value v)
 *   pe_tx_rtt_end(x)              either side, after its last round trip
 *   pe_tx_rate_end(x)             a rate thread, after its span ended
 *
 * Every call is a static __device__ __forceinline__ function, so each
 * body compiles to what the PE's own loop was: the same operations
 * between the same clock reads.
 */
#ifndef GIC_BENCH_PE_BODIES_CUH
#define GIC_BENCH_PE_BODIES_CUH

#include "pe_gpu.cuh"

/* PE 0, one thread: sample i writes slot i % slots of the peer's dst (from
 * the same slot of src, or the value pe_val(slot, tag)) with mode, then
 * completes it; issue is the write's cycles, total the write and its
 * completion's. */
static __device__ __forceinline__ void pe_oneway_body(const pe_tx &x, int mode, uint64_t tag,
						      int n, int slots, pe_sample *out)
{
	for (int i = 0; i < n; i++) {
		int s = i % slots;
		uint64_t v = pe_val((uint64_t)s, tag);
		pe_tx_dst_t d = pe_tx_dst(x, s);
		pe_tx_src_t f = pe_tx_src(x, s);

		/* Inputs are made before the clock starts. */
		asm volatile("" : "+l"(v), "+l"(d), "+l"(f));
		long long c0 = clock64();
		pe_tx_put(x, mode, d, f, v);
		long long c1 = clock64();
		pe_tx_complete(x, mode);
		long long c2 = clock64();

		out[i].issue = c1 - c0;
		out[i].total = c2 - c0;
		out[i].rc = 0;
	}
}

/* PE 0, one thread: request i (pe_val(i, 3)), then its answer; a sample
 * per round trip, the first failure ends the run. */
static __device__ __forceinline__ void pe_rtt_pe0_body(const pe_tx &x, int n, uint64_t limit_ns,
						       pe_sample *out)
{
	for (int i = 0; i < n; i++) {
		uint64_t v = pe_val((uint64_t)i, 3);

		asm volatile("" : "+l"(v));
		long long c0 = clock64();
		pe_tx_request(x, i, v);
		int rc = pe_tx_wait_answer(x, i, v, limit_ns);

		out[i].total = clock64() - c0;
		out[i].issue = 0;
		out[i].rc = pe_tx_answer_rc(x, rc, v);
		if (rc)
			break;
	}
	pe_tx_rtt_end(x);
}

/* PE 1, one thread: waits for each request and answers it with its
 * complement; *rc_out is 0 or the first wait's failure. */
static __device__ __forceinline__ void pe_rtt_pe1_body(const pe_tx &x, int n, uint64_t limit_ns,
						       int *rc_out)
{
	int rc = 0;

	for (int i = 0; i < n; i++) {
		uint64_t v = pe_val((uint64_t)i, 3);

		rc = pe_tx_wait_request(x, i, v, limit_ns);
		if (rc)
			break;
		pe_tx_answer(x, i, ~v);
	}
	pe_tx_rtt_end(x);
	*rc_out = rc;
}

/* PE 0, a thread of a rate row: n writes of mode to its own PE_RATE_SLOTS
 * slots, then their completion; span[0] the first start, span[1] the last
 * completion of every thread (globaltimer). */
static __device__ __forceinline__ void pe_rate_body(const pe_tx &x, int mode, int n,
						    unsigned long long *span)
{
	size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	pe_tx y = pe_tx_shift(x, t * PE_RATE_SLOTS); /* the thread's own slots */

	__syncthreads(); /* every thread of the CTA starts the clock together */
	unsigned long long t0 = pe_now_ns();
	for (int i = 0; i < n; i++) {
		int k = i & (PE_RATE_SLOTS - 1);

		pe_tx_put(y, mode, pe_tx_dst(y, k), pe_tx_src(y, k), 0);
	}
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
 *   pe_barrier(P, what)           both PEs, on the stream, waited for
 *   pe_rate_bufs  a rate job's regions, and for them
 *   pe_rate_clear(P, B)           PE 1: clears the destination before a round
 *   pe_rate_launch(P, B, ctas, per_cta, d_span)  PE 0: launches a round
 *   pe_rate_check(P, B, threads, ctas, name)     PE 1: 1 when every slot of
 *                 a round holds its word (the first wrong one printed)
 *   PE_RATE_CHECK_IN_ROUND        1: PE 1 checks before the round's closing
 *                 barrier (it waits for the sender's signals itself); 0: after
 *
 * Every call ends the process through gic_pl_die on an error. */

/* Prints why and ends the process (gic_pl_die). */
static __attribute__((noreturn)) void pe_die(const pe_self *P, const char *what, const char *why)
{
	gic_pl_die(&P->pl, what, why);
}

static void cuda_ok(const pe_self *P, cudaError_t e, const char *what)
{
	pe_cuda_ok(&P->pl, e, what);
}

/* Waits for the PE's stream within the job's time limit. */
static void pe_wait(const pe_self *P, const char *what)
{
	pe_sync(&P->pl, P->stream, P->job->limit_s, what);
}

/* The fields every result of this PE shares. */
static void pe_res(const pe_self *P, gic_result *r, const char *name, const char *metric,
		   const char *unit)
{
	pe_result(&P->pl, r, name, metric, unit, P->transport);
}

/* Fills the n device words at dev with pe_val(i, tag). */
static void pe_fill_dev(const pe_self *P, void *dev, size_t n, uint64_t tag)
{
	pe_fill(&P->pl, P->stream, P->job->limit_s, dev, n, tag);
}

/* Reads the n device words at dev back; 1 when word i holds want(i, arg)
 * for every i (the first wrong word is printed). */
static int pe_check_dev(const pe_self *P, const void *dev, size_t n,
			uint64_t (*want)(size_t i, const void *arg), const void *arg,
			const char *what)
{
	return pe_check(&P->pl, P->stream, P->job->limit_s, dev, n, want, arg, what);
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
				rates[round] = pe_rate_mps(threads, P->job->iters, span);
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
