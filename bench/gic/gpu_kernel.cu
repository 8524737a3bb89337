/*
 * bench/gic/gpu_kernel.cu - `gic kernel` on the GPU: what mini-gda's send
 * path costs the kernel that encloses it (paper §4.3.2, Figure 9, Table 14).
 *
 * The enclosing kernel (its body in kernel_caller.cuh, shared with the
 * NVSHMEM path): -c blocks of -t threads (paper: 528 x 256), each
 * thread holding --live N values in registers across the whole kernel.
 *   fma     every iteration applies an FMA to each value (compute-bound);
 *   stream  every iteration adds one value per slot read from a large array
 *           (memory-bound).
 * Halfway through, variants differ:
 *   none      nothing;
 *   code      the send path is compiled in behind a flag that is false at
 *             run time (what a dormant call costs in registers);
 *   send      thread 0 of each block posts --msgs writes of --size bytes on
 *             the block's own QP (8 B inline, larger from a registered
 *             source), then the block synchronizes;
 *   sendwait  the same, and thread 0 waits for their completion first.
 * The live count and the variant are template parameters, as they would be
 * compile-time facts of a real kernel. Results per configuration:
 * registers per thread, spill (local memory, bytes per thread), resident
 * blocks per SM, kernel time (median of rounds), useful-throughput loss
 * against "none" (1 - t_none / t), and for sendwait the waiting loss against
 * send with the same messages. Every message's payload is checked.
 *
 * --procs 2 (gic_gpu_kernel_pe): the same kernels, timing and checks with
 * the messages' target, PE 1, a process of its own (gpu_pair.h): PE 0's
 * blocks post on their QPs from its region (the source) into PE 1's
 * through PE 0's GPU engine (as many warps as in one process) and
 * softnic's GPU peers; PE 1 (a one-warp engine, idle) walks the same
 * configurations: it clears its region before each, takes PE 0's outcome
 * of the rounds (gpu_pair_from0) and checks every message, a phase each.
 */
#include "exp_kernel.h"
#include "gpu_common.h"
#include "gpu_pair.h"
#include "kernel_caller.cuh"

#include <errno.h>

/* Blocks: one QP each, so at most the fixture's ENV_MAX_QPS (2048: the
 * paper's 8 blocks/SM on 132 SMs is -c 1056); a pair's GPU_PAIR_MAX_QPS. */
static_assert((int)GIC_KERNEL_GPU_MAX_BLOCKS == (int)ENV_MAX_QPS, "one limit");
static_assert((int)GIC_KERNEL_GPU_PAIR_MAX_BLOCKS == (int)GPU_PAIR_MAX_QPS, "one limit");
enum { K_ROUNDS = 5, K_PROBE_ITERS = 4096, K_QUICK_ITERS = 256, K_MAX_ITERS = 1 << 24 };
enum { V_NONE = 0, V_CODE = 1, V_SEND = 2, V_SENDWAIT = 3 };

#define DL (gic_now_ns() + ENV_DEADLINE_NS)

/* The fence that orders a block's WQE stores before its doorbell, by who
 * reads the queue (a compile-time fact of the kernel, so that it costs no
 * register): softnic's GPU engine on this GPU needs GPU scope; softnic's
 * CPU engine and an mlx5 device (the queues in host memory, a NIC across
 * PCIe) need system scope. */
#define K_ORDER(SYS) ((SYS) ? GIC_ORDER_FENCE_SYS : GIC_ORDER_FENCE_GPU)

static __host__ __device__ uint64_t kval(uint64_t b, uint64_t m)
{
	return (b << 32) ^ (m * 0x9e3779b97f4a7c15ull) ^ 0x4b4b000000000001ull;
}

typedef struct kcfg {
	int iters;          /* work iterations per thread */
	int enable;         /* 0: the send path is never taken ("code") */
	int msgs, max_msgs; /* messages per block; slots per block */
	uint32_t size;      /* bytes per message */
	gic_sq *qps;        /* block b owns qps[b] */
	uint8_t *dst;
	uint32_t rkey;
	const uint8_t *src;
	uint32_t lkey;
	float *data;        /* live values in and out; the stream's array */
	size_t stream_len;  /* floats in the stream array */
	int *rc;            /* per block */
} kcfg;

/* Thread 0 of the block: the block's messages, then (sendwait) their
 * completion. What the enclosing kernel pays for this code sitting in it
 * (the "code" rows) is the registers of its peak, so the path is written
 * to hold little: the reservation is the lean one (gic_sq_reserve_excl_lean:
 * no clock read until the ring is full; the wait for room, its deadline
 * and the error record are the same as gic_sq_reserve_excl's), and the
 * message's offset is 32-bit (blocks x messages x size is at most 256 MiB,
 * gic_gpu_kernel() checks it) instead of a 64-bit product held across the
 * loop. */
template <int SYS>
static __device__ __forceinline__ int block_send(const kcfg &c, int wait)
{
	gic_sq *sq = &c.qps[blockIdx.x];
	int rc = 0;

	for (int m = 0; m < c.msgs && !rc; m++) {
		uint32_t off = (blockIdx.x * (uint32_t)c.max_msgs + m) * c.size;
		uint8_t sig = m + 1 == c.msgs ? GIC_CTRL_CQ_UPDATE : 0;
		uint64_t pos;

		rc = gic_sq_reserve_excl_lean(sq, 1, &pos, K_ORDER(SYS), ENV_DEADLINE_NS);
		if (rc)
			break;
		if (c.size == 8)
			gic_wqe_write_inline_u64(sq, pos, (uint64_t)(c.dst + off), c.rkey,
						 kval(blockIdx.x, m), sig);
		else
			gic_wqe_write(sq, pos, GIC_OPCODE_RDMA_WRITE, (uint64_t)(c.dst + off), c.rkey,
				      (uint64_t)(c.src + off), c.lkey, c.size, sig, 0);
		if (sig)
			gic_sq_note_signaled(sq, pos + 1, 0);
		gic_sq_publish_excl(sq, K_ORDER(SYS));
	}
	if (!rc && wait)
		rc = gic_sq_quiet(sq, K_ORDER(SYS), DL);
	return rc;
}

/* What a variant puts between the caller's two halves (kernel_caller.cuh):
 * none nothing; code the send behind c.enable, false at run time; send and
 * sendwait the send taken. */
template <int VARIANT, int SYS>
struct gda_mid {
	static __device__ __forceinline__ void between(const kcfg &c)
	{
		if (VARIANT != V_NONE && c.enable) {
			if (threadIdx.x == 0)
				c.rc[blockIdx.x] = block_send<SYS>(c, VARIANT == V_SENDWAIT);
			__syncthreads(); /* the block goes on once its sends are posted (or done) */
		}
	}
};

/* The same two halves of work in every variant (kernel_caller.cuh, also the
 * NVSHMEM path's caller); the variants differ only in what sits between
 * them. */
template <int CALLER, int VARIANT, int LIVE, int SYS>
__global__ void enclosing_kernel(kcfg c)
{
	kc_caller<CALLER, LIVE, kcfg, gda_mid<VARIANT, SYS> >(c);
}

/* Completes every block's QP between rounds (send leaves writes in flight). */
__global__ void drain_kernel(gic_sq *qps, int *rc, int order)
{
	int r = gic_sq_quiet(&qps[blockIdx.x], order, DL);

	if (r)
		rc[blockIdx.x] = r;
}

typedef void (*enclosing_fn)(kcfg);

template <int CALLER, int VARIANT, int SYS>
static enclosing_fn pick_live(int live)
{
#define K_LIVE_CASE(n) \
	case n: return enclosing_kernel<CALLER, VARIANT, n, SYS>;
	switch (live) {
	GIC_KERNEL_LIVE_CASES(K_LIVE_CASE)
#undef K_LIVE_CASE
	default: return NULL;
	}
}

template <int CALLER, int SYS>
static enclosing_fn pick_variant(int variant, int live)
{
	switch (variant) {
	case V_NONE: return pick_live<CALLER, V_NONE, 0>(live); /* no send code: one scope */
	case V_CODE: return pick_live<CALLER, V_CODE, SYS>(live);
	case V_SEND: return pick_live<CALLER, V_SEND, SYS>(live);
	default: return pick_live<CALLER, V_SENDWAIT, SYS>(live);
	}
}

/* sys: the queues' reader is outside the GPU (K_ORDER). */
static enclosing_fn pick(int caller, int variant, int live, int sys)
{
	if (caller == K_FMA)
		return sys ? pick_variant<K_FMA, 1>(variant, live) : pick_variant<K_FMA, 0>(variant, live);
	return sys ? pick_variant<K_STREAM, 1>(variant, live) : pick_variant<K_STREAM, 0>(variant, live);
}

/* ------------------------------------------------------------------ */
/* Host side. */

static const char *const caller_names[] = { "fma", "stream" };
static const char *const variant_names[] = { "none", "code", "send", "sendwait" };

typedef struct krun {
	const gic_opts *o;
	const kernel_state *st;
	gic_sink *sink;
	gic_pair *pair;      /* --procs 2: this process's PE (NULL: both PEs here) */
	int mps;             /* --procs 2: the device's contexts are shared through MPS */
	gpu_env e;           /* --procs 2: gpu_pair_env's */
	int blocks, threads, max_msgs;
	float *data;
	size_t stream_len;
	int *d_rc;
	int sys;             /* 1: the queues' reader is outside the GPU (K_ORDER) */
	uint8_t *h;          /* host copy of the destination */
	int iters;           /* the current caller's work iterations (size_work) */
	double work_us;      /* the time they were sized to (0: fixed) */
} krun;

/* The source byte at offset j of the messages' span. */
static uint8_t kbyte(size_t j)
{
	return (uint8_t)(j * 7 + (j >> 11));
}

/* Fills the source and the return codes (where this process posts) and
 * clears the destination (where it receives) for the run's messages. */
static int prepare(krun *K, uint32_t size)
{
	size_t bytes = (size_t)K->blocks * K->max_msgs * size;

	if (gic_pair_posts(K->pair)) {
		for (size_t j = 0; j < bytes; j++)
			K->h[j] = kbyte(j);
		if (gpu_env_write(&K->e, K->e.src, K->h, bytes) ||
		    cudaMemsetAsync(K->d_rc, 0, sizeof(int) * K->blocks, K->e.stream) != cudaSuccess)
			return EIO;
	}
	if (gic_pair_checks(K->pair)) {
		memset(K->h, 0, bytes);
		if (gpu_env_write(&K->e, K->e.dst, K->h, bytes))
			return EIO;
	}
	return gpu_env_wait(&K->e, "gic kernel prepare", 10);
}

/* Checks every block's return code (where this process posts) and
 * messages (where it receives). */
static int check(krun *K, int msgs, uint32_t size)
{
	size_t bytes = (size_t)K->blocks * K->max_msgs * size;
	int rc[ENV_MAX_QPS];

	if (gic_pair_posts(K->pair)) {
		if (gpu_env_read(&K->e, rc, K->d_rc, sizeof(int) * K->blocks))
			return 0;
		for (int b = 0; b < K->blocks; b++)
			if (rc[b]) {
				fprintf(stderr, "gic kernel: block %d: error %d (%s)\n", b, rc[b],
					gpu_env_qp_error(&K->e, b));
				return 0;
			}
	}
	if (!gic_pair_checks(K->pair))
		return 1;
	if (gpu_env_read(&K->e, K->h, K->e.dst, bytes))
		return 0;
	for (int b = 0; b < K->blocks; b++) {
		for (int m = 0; m < msgs; m++) {
			size_t off = ((size_t)b * K->max_msgs + m) * size;
			int ok = 1;

			if (size == 8) {
				uint64_t got;

				memcpy(&got, K->h + off, 8);
				ok = got == kval(b, m);
			} else {
				for (uint32_t j = 0; j < size && ok; j++)
					ok = K->h[off + j] == kbyte(off + j);
			}
			if (!ok) {
				fprintf(stderr, "gic kernel: block %d message %d wrong\n", b, m);
				return 0;
			}
		}
	}
	return 1;
}

/* Runs one configuration K_ROUNDS times with `iters` work iterations; *ms
 * gets the median time. --procs 2: PE 0 runs the rounds between two
 * barriers (PE 1's region cleared; PE 0's rounds over, its writes
 * completed, and their outcome handed over), PE 1 then checks (*ms 0). */
static int run_config(krun *K, enclosing_fn fn, int variant, int msgs, int iters, double *ms)
{
	double t[K_ROUNDS] = { 0 };
	kcfg c;
	int ok;

	memset(&c, 0, sizeof(c));
	c.iters = iters;
	c.enable = variant >= V_SEND;
	c.msgs = msgs;
	c.max_msgs = K->max_msgs;
	c.size = (uint32_t)K->st->size;
	c.qps = K->e.d_sq;
	c.dst = K->e.dst;
	c.rkey = K->e.dst_rkey;
	c.src = K->e.src;
	c.lkey = K->e.src_lkey;
	c.data = K->data;
	c.stream_len = K->stream_len;
	c.rc = K->d_rc;
	ok = !prepare(K, c.size);
	gpu_pair_sync(K->pair);
	for (int r = 0; r < K_ROUNDS && ok && gic_pair_posts(K->pair); r++) {
		uint64_t t0 = gic_now_ns();

		fn<<<K->blocks, K->threads, 0, K->e.stream>>>(c);
		ok = cudaGetLastError() == cudaSuccess && !gpu_env_wait(&K->e, "gic kernel", 120);
		t[r] = (double)(gic_now_ns() - t0) / 1e6;
		if (ok && variant >= V_SEND) { /* outside the timed span */
			drain_kernel<<<K->blocks, 1, 0, K->e.stream>>>(K->e.d_sq, K->d_rc,
								      K_ORDER(K->sys));
			ok = !gpu_env_wait(&K->e, "gic kernel drain", 60);
		}
	}
	for (int i = 1; i < K_ROUNDS; i++) /* insertion sort for the median */
		for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
			double x = t[j];

			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	*ms = t[K_ROUNDS / 2];
	ok = gpu_pair_from0(K->pair, ok) && ok;
	return ok && (variant < V_SEND || check(K, msgs, c.size));
}

static void emit(krun *K, const char *name, const char *metric, const char *unit, double value,
		 int valid, const char *note)
{
	gic_result r;

	gic_result_init(&r, "kernel", name, metric, unit);
	snprintf(r.params, sizeof(r.params), "blocks=%d threads=%d live=%d size=%zu rounds=%d "
		 "order=%s iters=%d work_us=%.0f", K->blocks, K->threads, K->st->live, K->st->size,
		 K_ROUNDS, K->sys ? "fence-sys" : "fence-gpu", K->iters, K->work_us);
	snprintf(r.note, sizeof(r.note), "%s", note);
	if (K->pair) {
		gic_result_param(&r, "procs=2 mps=%d", K->mps);
		snprintf(r.note + strlen(r.note), sizeof(r.note) - strlen(r.note), "; into another "
			 "process's GPU memory (GPU peers), %s", K->mps ? "MPS" : "no MPS: kernels "
			 "time-slice");
	}
	gpu_result_transport(&r, K->o, K->o->gpu_engine);
	gpu_result_placement(&r, &K->e); /* --engine-sms: the split every variant ran on */
	gic_result_set_value(&r, value);
	r.validated = valid;
	gic_pair_put(K->pair, K->sink, &r); /* --procs 2: PE 1's are dropped */
}

/* The paper's kernel times without communication code (Figure 9): the
 * compute caller 2.1 ms, the streaming caller 2.6 ms. */
static const double paper_work_us[2] = { 2100.0, 2600.0 };

/* Sets K->iters and K->work_us for a caller: a fixed count (--quick, or
 * --work-us 0), or the count that makes "none" take the target time (the
 * paper's, or --work-us): one probe of K_PROBE_ITERS iterations, scaled,
 * since the work is linear in them. 0, or EIO when the probe failed. */
static int size_work(krun *K, int caller)
{
	double target = K->st->work_us == GIC_KERNEL_WORK_PAPER ? paper_work_us[caller]
								 : (double)K->st->work_us;
	double ms = 0, n;

	K->work_us = 0;
	K->iters = K->o->quick ? K_QUICK_ITERS : K_PROBE_ITERS;
	if (K->o->quick || target <= 0)
		return 0;
	/* --procs 2: PE 0 probes (PE 1 takes its outcome; it never runs the work). */
	if (gpu_pair_from0(K->pair, !run_config(K, pick(caller, V_NONE, K->st->live, K->sys),
						V_NONE, 0, K_PROBE_ITERS, &ms) || ms <= 0)) {
		fprintf(stderr, "gic kernel: %s: the probe that sizes the work failed\n",
			caller_names[caller]);
		return EIO;
	}
	if (!gic_pair_posts(K->pair))
		ms = 1;
	n = (double)K_PROBE_ITERS * target / (ms * 1e3);
	n = n < 2 ? 2 : n > (double)K_MAX_ITERS ? (double)K_MAX_ITERS : n;
	K->iters = 2 * (int)(n / 2 + 0.5); /* two halves of work */
	K->work_us = target;
	return 0;
}

/* Every variant and message count of one caller (--procs 2: a phase
 * each, PE 1's verdict its check). */
static void run_caller(krun *K, int caller)
{
	double t_none = 0, t_send[GIC_KERNEL_MAX_MSGS] = { 0 };
	int regs_none = 0;
	char regs_note[160] = "per thread (sm_90, -O3)";

	if (size_work(K, caller)) { /* a failed row says so */
		char name[96];

		snprintf(name, sizeof(name), "%s none msgs=0 size=%zu", caller_names[caller],
			 K->st->size);
		emit(K, name, "time", "us", 0, 0, "the probe that sizes the work failed");
		gic_pair_phase_done(K->pair, 0);
		return;
	}
	for (int v = V_NONE; v <= V_SENDWAIT; v++) {
		enclosing_fn fn = pick(caller, v, K->st->live, K->sys);
		int nm = v >= V_SEND ? K->st->nmsgs : 1;
		cudaFuncAttributes attr;
		int per_sm = 0;

		if (!(K->st->variants & (1u << v)) && v != V_NONE)
			continue;
		cudaFuncGetAttributes(&attr, (const void *)fn);
		cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (const void *)fn, K->threads, 0);
		for (int k = 0; k < nm; k++) {
			int msgs = v >= V_SEND ? K->st->msgs[k] : 0;
			char name[96];
			double ms = 0;
			int ok = run_config(K, fn, v, msgs, K->iters, &ms);

			snprintf(name, sizeof(name), "%s %s msgs=%d size=%zu", caller_names[caller],
				 variant_names[v], msgs, K->st->size);
			if (v == V_NONE)
				regs_none = attr.numRegs;
			else
				snprintf(regs_note, sizeof(regs_note), "per thread (sm_90, -O3); the "
					 "same caller without the send path: %d (this run)", regs_none);
			emit(K, name, "registers", "regs", attr.numRegs, ok, regs_note);
			emit(K, name, "spill", "B", (double)attr.localSizeBytes, ok,
			     "local memory per thread");
			emit(K, name, "blocks/SM", "blocks", per_sm, ok, "resident blocks per SM");
			emit(K, name, "time", "us", ms * 1e3, ok, "kernel, median of rounds");
			if (v == V_NONE)
				t_none = ms;
			else if (t_none > 0)
				emit(K, name, "loss", "%", 100.0 * (1.0 - t_none / ms), ok,
				     "useful throughput lost against none");
			if (v == V_SEND)
				t_send[k] = ms;
			if (v == V_SENDWAIT && t_send[k] > 0)
				emit(K, name, "waiting loss", "%", 100.0 * (1.0 - t_send[k] / ms), ok,
				     "against send with the same messages");
			gic_pair_phase_done(K->pair, ok);
		}
	}
}

/* K's launch (gic_kernel_gpu_shape with max_blocks) and its buffers,
 * allocated before any engine starts (docs/DESIGN.md §4.5): the host copy
 * of the region; where this process posts, the stream caller's array and
 * the blocks' return codes. 0, EINVAL (said) or ENOMEM; k_free after. */
static int k_open(krun *K, const gic_opts *o, const kernel_state *st, gic_sink *sink,
		  gic_pair *pair, int max_blocks, size_t *region)
{
	kernel_gpu_shape s;

	memset(K, 0, sizeof(*K));
	K->o = o;
	K->st = st;
	K->sink = sink;
	K->pair = pair;
	if (gic_kernel_gpu_shape(o, st, max_blocks, &s))
		return EINVAL;
	K->blocks = s.blocks;
	K->threads = s.threads;
	K->max_msgs = s.max_msgs;
	*region = s.region;
	K->stream_len = (size_t)64 << 20; /* 256 MiB of floats: past the L2 */
	K->h = (uint8_t *)malloc(s.region);
	if (!K->h)
		return ENOMEM;
	if (gic_pair_posts(pair) &&
	    (cudaMalloc(&K->data, K->stream_len * sizeof(float)) != cudaSuccess ||
	     cudaMemset(K->data, 0, K->stream_len * sizeof(float)) != cudaSuccess ||
	     cudaMalloc(&K->d_rc, sizeof(int) * ENV_MAX_QPS) != cudaSuccess))
		return ENOMEM;
	return 0;
}

static void k_free(krun *K)
{
	cudaFree(K->data);
	cudaFree(K->d_rc);
	free(K->h);
}

/* Every caller asked for, on K->e. */
static void k_callers(krun *K)
{
	K->sys = gpu_env_post_order(&K->e) == GIC_ORDER_FENCE_SYS;
	for (int caller = K_FMA; caller <= K_STREAM; caller++)
		if (K->st->callers & (1u << caller))
			run_caller(K, caller);
}

int gic_gpu_kernel(const gic_opts *o, const kernel_state *st, const gic_run_info *info,
		   gic_sink *sink)
{
	krun K;
	size_t region = 0;
	int rc = k_open(&K, o, st, sink, NULL, GIC_KERNEL_GPU_MAX_BLOCKS, &region);

	(void)info;
	if (!rc) {
		gpu_env_cfg cfg = { o->gpu_engine, K.blocks, 6, region, 0, 4, 4 };

		gpu_env_cfg_nic(&cfg, o);
		gpu_env_open(&K.e, &cfg);
		k_callers(&K);
		gpu_env_close(&K.e);
	}
	k_free(&K);
	return rc; /* a failed check is in the rows' verdicts */
}

int gic_gpu_kernel_pe(gic_pair *pair, const gic_opts *o, const kernel_state *st)
{
	int rank = gic_pair_rank(pair), rc;
	size_t region = 0;
	char gpu[128];
	double mhz = 0;
	gpu_pair_pe P;
	krun *K = (krun *)calloc(1, sizeof(krun)); /* its gpu_env is large */

	if (!K)
		return ENOMEM;
	if (gic_gpu_available(gpu, sizeof(gpu), &mhz, o->device)) {
		fprintf(stderr, "gic kernel: PE%d: no GPU %d\n", rank, o->device);
		free(K);
		return ENODEV; /* this PE ends; the driver stops the other */
	}
	rc = k_open(K, o, st, NULL, pair, GIC_KERNEL_GPU_PAIR_MAX_BLOCKS, &region);
	if (rc) {
		fprintf(stderr, "gic kernel: PE%d: %s\n", rank, strerror(rc));
		rc = gpu_pair_open_failed(&P, pair, "kernel", rc);
	} else {
		gpu_pair_cfg pc = { o->device, K->blocks, 6, region, rank ? 1 : 4, rank ? 1 : 4 };

		rc = gpu_pair_open(&P, pair, "kernel", &pc);
	}
	if (!rc) {
		gpu_pair_env(&P, &K->e); /* PE 0's region is the source; PE 1's the destination */
		K->mps = P.mps;
		if (rank == 0 && !P.mps)
			gpu_pair_warn_mps("kernel");
		k_callers(K);
	}
	gpu_pair_finish(&P, pair);
	k_free(K);
	free(K);
	return rc; /* a failed check is in the rows' verdicts */
}
