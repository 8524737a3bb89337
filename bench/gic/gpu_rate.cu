/*
 * bench/gic/gpu_rate.cu - `gic rate` on the GPU: message rate of GPU
 * threads posting to softnic (paper Table 5, Figure 3b).
 *
 * A row spreads `threads` threads over `sms` CTAs. Publication modes:
 *   own      thread t owns QP t (threads == qps), `batch` WQEs per doorbell;
 *   rr       thread t owns QPs [t k, t k + k), k = qps / threads, and posts
 *            round-robin: `batch` WQEs and a doorbell on one, then the next;
 *   lock     threads share QP (t % qps) under a ticket lock held for one
 *            WQE's doorbell, the WQE built before the turn
 *            (gic_sq_ticket_write_inline_u64);
 *   caslock  threads share QP (t % qps) under the compare-and-swap lock,
 *            held while the WQE is built and rung
 *            (gic_sq_locked_write_inline_u64);
 *   handoff  threads share QP (t % qps), per-thread slot hand-off;
 *   warp     warps share QP (warp % qps), 32 WQEs and one doorbell per warp;
 *   cta      as warp, the warps of CTA b on QP b % qps (one QP per CTA).
 * By default every ring holds all the writes of its threads, so posting
 * never waits for the engine. Two results per row: "message rate" is the
 * GPU side, first post to last doorbell; "message rate with drain" adds the
 * wait for the last CQE on softnic (engine-bound, not a NIC number). Rows
 * with log_bb (the -wrap rows) take 2^log_bb-BB rings and post 16 rings'
 * worth per thread, reclaiming from CQEs while posting, as the paper
 * measures: there "message rate" is to the last CQE and "message rate
 * posting only" the GPU side. Each
 * result summarizes RATE_ROUNDS rounds (p50 is their median), each round
 * with its own payload values, checked after the round. Inline payloads
 * are made in registers by the posting thread (one hash per message, one
 * XOR per word) and stored with gic_wqe_write_inline_regs (8 bytes:
 * gic_wqe_write_inline_u64), the size a template parameter (the paper's
 * mini-gda); staged rows (payload=inline-staged) copy them from a staging
 * buffer in GPU memory at each post (gic_wqe_write_inline, the payload-in-
 * memory case); pointer payloads are read by the engine from PE0's source
 * region.
 * Host-rung rows (rate_row.host_rung, t16-q16-s16-b16-hostdb): the threads
 * of rate_own wait for a start word the host writes, build as always, then
 * write the doorbell record and publish their position in a progress word
 * in mapped host memory (gic_hostdb_publish) instead of ringing; a pinned
 * host thread rings (bench/gic/hostdb.h). On softnic the fixture keeps
 * PE0's doorbell words in mapped host memory (gpu_env_cfg.host_doorbells),
 * which the GPU engine reads through the mapping at system scope; on mlx5
 * the ringer stores to each QP's UAR through the provider's host view
 * (gpu_env_host_doorbell), as a host thread rings a ConnectX. "message rate" is
 * then the host's: the start word to the last doorbell it rang
 * (CLOCK_MONOTONIC); "message rate with drain" the GPU's, to the last CQE.
 * Ordering: GPU-scope fence.
 */
#include "exp_lat.h" /* gic_lat_order_name */
#include "exp_rate.h"
#include "gpu_common.h"
#include "gpu_pair.h"
#include "hostdb.h"

#include <errno.h>
#include <unistd.h>

enum { RATE_ROUNDS = 5, RATE_LOG_BB = 14, RATE_REGION = 16 << 20, RATE_ENGINE_BLOCKS = 64,
       RATE_WRAPS = 16, RATE_RR_MAX_SMEM = 48 << 10, /* rr: a CTA's views in shared memory */
       RATE_RINGER_CPU = 2 /* host-rung rows: the ringer's core (not pinned on fewer) */ };

#define DL (gic_now_ns() + ENV_DEADLINE_NS)

/* Every kernel posts with order O, a template parameter that launch()
 * picks with gpu_env_post_order(). */

static __host__ __device__ uint64_t rate_val(uint64_t i, uint64_t tag)
{
	return (tag << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x7a7a7a7a00000005ull;
}

typedef struct span {
	unsigned long long t0, tp, t1; /* start, last doorbell, last completion (ns) */
	int rc;
	int pad;
} span;

typedef struct rate_cfg {
	int per;          /* messages per thread */
	int qps, batch;
	int qpt;          /* rr: QPs per thread */
	int cta;          /* warp mode: QP = CTA % qps (else warp % qps) */
	int pointer;
	int staged;       /* inline from the staging buffer, also at 8 bytes */
	uint32_t size, stride;
	uint64_t tag;     /* the round's payload tag */
	uint8_t *dst;
	uint32_t rkey;
	const uint8_t *src; /* pointer payloads (PE0), same layout as dst */
	uint32_t lkey;
	const uint8_t *stage; /* inline payloads (sizes other than 8), GPU memory */
	int host_rung;    /* 1: publish to progress[], never ring (hostdb.h) */
	uint64_t *progress; /* host-rung: a word per QP, GIC_HOSTDB_STRIDE apart (mapped) */
	const uint64_t *go; /* host-rung: the start word (mapped); wait for go_value */
	uint64_t go_value;
	int order;        /* host side: the order launch() picks (gpu_env_post_order) */
} rate_cfg;

/* Where message i of thread t lands (and, for pointer writes, comes from). */
static __device__ __forceinline__ uint64_t slot_off(const rate_cfg &c, int t, int i)
{
	return ((uint64_t)t * c.per + i) * c.stride;
}

/* Thread t owns QP t: batches of `batch` WQEs per doorbell; a batch is
 * signaled when it ends on a multiple of 16 messages or at the end. */
template <int O>
__global__ void rate_own(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq s;
	gic_cq cq;
	int rc = 0;

	gic_sq_local_begin(&s, &cq, &g[t]);
	if (c.host_rung) /* the host's ringer runs and its clock started */
		rc = gpu_wait_word(c.go, c.go_value);
	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i += c.batch) {
		int n = c.per - i < c.batch ? c.per - i : c.batch;

		for (int j = 0; j < n && !rc; j++) {
			uint64_t pos, raddr = (uint64_t)(c.dst + slot_off(c, t, i + j));
			int k = i + j + 1, sig = j + 1 == n && (k % 16 == 0 || k == c.per);
			uint32_t nbb = c.pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write(c.size));

			rc = gic_sq_reserve_excl(&s, nbb, &pos, O, DL);
			if (rc)
				break;
			if (c.pointer)
				gic_wqe_write(&s, pos, GIC_OPCODE_RDMA_WRITE, raddr, c.rkey,
					      (uint64_t)(c.src + slot_off(c, t, i + j)), c.lkey, c.size,
					      sig ? GIC_CTRL_CQ_UPDATE : 0, 0);
			else if (c.size == 8 && !c.staged)
				gic_wqe_write_inline_u64(&s, pos, raddr, c.rkey, rate_val(i + j, t + c.tag),
							 sig ? GIC_CTRL_CQ_UPDATE : 0);
			else
				gic_wqe_write_inline(&s, pos, raddr, c.rkey,
						     c.stage + slot_off(c, t, i + j), c.size,
						     sig ? GIC_CTRL_CQ_UPDATE : 0);
			if (sig)
				gic_sq_note_signaled(&s, pos + nbb, 0);
		}
		if (c.host_rung)
			gic_hostdb_publish(&s, &c.progress[(size_t)t * GIC_HOSTDB_STRIDE]);
		else
			gic_sq_publish_excl(&s, O);
	}
	out[t].tp = gic_now_ns();
	/* Host-rung: the last batch is signaled (k == c.per), so its CQE
	 * covers everything and nothing rings here (gic_sq_quiet could ring a
	 * NOP itself). */
	if (!rc)
		rc = c.host_rung ? gic_sq_wait_retired(&s, s.ready, 0, O, DL)
				 : gic_sq_quiet(&s, O, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
	gic_sq_local_end(&g[t], &s);
}

/* Message i of thread t's payload of LEN bytes, made in registers: the
 * bytes rate_byte() gives (host side), word q = one half of the message's
 * hash XOR a constant. */
template <int LEN>
static __device__ __forceinline__ void rate_payload_regs(gic_inl16 *p, uint64_t i, uint64_t tag)
{
	uint64_t h = rate_val(i, tag);

#pragma unroll
	for (uint32_t q = 0; q < (LEN + 15) / 16 * 4; q++) {
		uint32_t k = 0;

#pragma unroll
		for (uint32_t b = 0; b < 4; b++) /* the constant byte pattern */
			k |= (uint32_t)(uint8_t)((4 * q + b) * 13u) << (8 * b);
		p[q / 4].w[q % 4] = (uint32_t)(h >> (32 * (q & 1))) ^ k;
	}
}

/* rate_own with inline payloads of LEN bytes (not 8) held in registers. */
template <int LEN, int O>
__global__ void rate_own_regs(gic_sq *g, rate_cfg c, span *out)
{
	enum { NBB = (2 + (4 + LEN + 15) / 16 + 3) / 4 }; /* gic_bb_for_ds(gic_ds_inline_write) */
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq s;
	gic_cq cq;
	int rc = 0;

	gic_sq_local_begin(&s, &cq, &g[t]);
	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i += c.batch) {
		int n = c.per - i < c.batch ? c.per - i : c.batch;

		for (int j = 0; j < n && !rc; j++) {
			uint64_t pos, raddr = (uint64_t)(c.dst + slot_off(c, t, i + j));
			int k = i + j + 1, sig = j + 1 == n && (k % 16 == 0 || k == c.per);
			gic_inl16 p[(LEN + 15) / 16];

			rc = gic_sq_reserve_excl(&s, NBB, &pos, O, DL);
			if (rc)
				break;
			rate_payload_regs<LEN>(p, (uint64_t)(i + j), (uint64_t)t + c.tag);
			gic_wqe_write_inline_regs(&s, pos, raddr, c.rkey, p, LEN,
						  sig ? GIC_CTRL_CQ_UPDATE : 0);
			if (sig)
				gic_sq_note_signaled(&s, pos + NBB, 0);
		}
		gic_sq_publish_excl(&s, O);
	}
	out[t].tp = gic_now_ns();
	if (!rc)
		rc = gic_sq_quiet(&s, O, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
	gic_sq_local_end(&g[t], &s);
}

/* The register-payload sizes built (sizes other than 8: 8 is
 * gic_wqe_write_inline_u64 in rate_own). */
typedef void (*rate_kernel_fn)(gic_sq *, rate_cfg, span *);
static const uint32_t regs_sizes[] = { 12, 16, 32, 48, 64, 128, 256, 512 };
#define REGS_KERNELS(O) { rate_own_regs<12, O>, rate_own_regs<16, O>, rate_own_regs<32, O>, \
	rate_own_regs<48, O>, rate_own_regs<64, O>, rate_own_regs<128, O>, rate_own_regs<256, O>, \
	rate_own_regs<512, O> }
static const rate_kernel_fn regs_kernels[2][8] = { REGS_KERNELS(GIC_ORDER_FENCE_GPU),
						  REGS_KERNELS(GIC_ORDER_FENCE_SYS) };

/* The register-payload kernel of size for order O (fence-gpu or
 * fence-sys), or NULL when that size is not built. */
static rate_kernel_fn regs_kernel(size_t size, int order)
{
	for (size_t i = 0; i < sizeof(regs_sizes) / sizeof(regs_sizes[0]); i++)
		if (regs_sizes[i] == size)
			return regs_kernels[order == GIC_ORDER_FENCE_SYS][i];
	return NULL;
}

/* 1 when the row posts inline payloads from registers of a size other
 * than 8 (rate_own_regs). */
static int row_regs(const rate_row *r)
{
	return r->mode == GIC_RATE_OWN && !r->pointer && !r->staged && r->size != 8;
}

/* Thread t owns QPs [t qpt, t qpt + qpt) and posts round-robin over them:
 * `batch` WQEs on one QP, its doorbell, then the next QP. Only this thread
 * touches the views, so it works on copies in the CTA's shared memory
 * (rr_smem_bytes; a thread cannot hold 32 in registers, and the global
 * views would be reloaded from L2 at every message) and writes them back
 * before the quiet. Not local memory: 32 views are more stack than the
 * default, and the resize a launch then needs waits for every kernel,
 * softnic's persistent engine included, so the launch never returns. A QP's batch is
 * signaled when it ends 16 or more BBs past that QP's last signaled WQE,
 * or at the thread's end. */
/* The shared memory rate_rr takes per CTA of tpb threads with qpt QPs each. */
static size_t rr_smem_bytes(int tpb, int qpt)
{
	return (size_t)tpb * qpt * (sizeof(gic_sq) + sizeof(gic_cq));
}

template <int O>
__global__ void rate_rr(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq *mine = &g[t * c.qpt];
	extern __shared__ uint64_t rr_smem[]; /* rr_smem_bytes: views, then CQ views */
	gic_sq *view = (gic_sq *)rr_smem + (size_t)threadIdx.x * c.qpt;
	gic_cq *cq = (gic_cq *)((gic_sq *)rr_smem + (size_t)blockDim.x * c.qpt) +
		     (size_t)threadIdx.x * c.qpt;
	int rc = 0, q = 0;

	for (int k = 0; k < c.qpt; k++)
		gic_sq_local_begin(&view[k], &cq[k], &mine[k]);
	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i += c.batch) {
		int n = c.per - i < c.batch ? c.per - i : c.batch;
		gic_sq *s = &view[q];

		for (int j = 0; j < n && !rc; j++) {
			uint64_t pos, raddr = (uint64_t)(c.dst + slot_off(c, t, i + j));
			int sig;

			rc = gic_sq_reserve_excl(s, 1, &pos, O, DL);
			if (rc)
				break;
			sig = j + 1 == n && (pos + 1 >= s->signaled + 16 || i + j + 1 == c.per);
			gic_wqe_write_inline_u64(s, pos, raddr, c.rkey, rate_val(i + j, t + c.tag),
						 sig ? GIC_CTRL_CQ_UPDATE : 0);
			if (sig)
				gic_sq_note_signaled(s, pos + 1, 0);
		}
		gic_sq_publish_excl(s, O);
		q = q + 1 == c.qpt ? 0 : q + 1;
	}
	out[t].tp = gic_now_ns();
	for (int k = 0; k < c.qpt; k++)
		gic_sq_local_end(&mine[k], &view[k]);
	if (!rc)
		rc = gic_quiet_all(mine, c.qpt, O, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* Threads share QP t % qps under a lock, one hold per WQE: the ticket
 * lock (TICKET: each thread reserves (its ticket), builds its WQE, and
 * rings for it while it holds the lock) or the compare-and-swap lock (the
 * lock row before the ticket lock). */
template <int O, int TICKET>
__global__ void rate_locked(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq *sq = &g[t % c.qps];
	int rc = 0;

	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i++)
		rc = (TICKET ? gic_sq_ticket_write_inline_u64 : gic_sq_locked_write_inline_u64)(
			sq, (uint64_t)(c.dst + slot_off(c, t, i)), c.rkey, rate_val(i, t + c.tag), 16,
			O, DL);
	out[t].tp = gic_now_ns();
	if (TICKET) {
		/* Every QP's tickets end on a multiple of 16: the last one signaled. */
		if (!rc)
			rc = gic_sq_quiet_wide(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1, O, DL);
	} else if (!rc && !(rc = gic_sq_post_lock(sq, DL))) {
		rc = gic_sq_quiet(sq, O, DL);
		gic_sq_post_unlock(sq);
	}
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* Threads share QP t % qps, slots handed off in reservation order; the
 * thread whose WQE ends a batch rings for it. */
template <int O>
__global__ void rate_handoff(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq *sq = &g[t % c.qps];
	int rc = 0;

	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i++)
		rc = gic_sq_handoff_write_inline_u64(sq, (uint64_t)(c.dst + slot_off(c, t, i)), c.rkey,
						     rate_val(i, t + c.tag), 16, c.batch, O, DL,
						     NULL);
	out[t].tp = gic_now_ns();
	/* Every QP's reservations end on a multiple of 16 and of the batch:
	 * signaled and rung. */
	if (!rc)
		rc = gic_sq_quiet_wide(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1, O, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* Warps share QP warp % qps (cta: CTA % qps); each round a warp posts 32
 * WQEs with one doorbell, the last one signaled. ORDER: O, or for
 * host-rung rows GIC_ORDER_RELEASE_SYS (their doorbell store goes to the
 * ringer's word in host memory, which a host thread reads: system scope). */
template <int ORDER>
__global__ void rate_warp(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq *sq = &g[(c.cta ? (int)blockIdx.x : t / 32) % c.qps];
	gic_sq_warp w;
	int rc = 0;

	gic_sq_warp_begin(&w, sq);
	if (c.host_rung) /* the host's ringer runs and its clock started */
		rc = gpu_wait_word(c.go, c.go_value);
	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i++) {
		uint64_t v = rate_val(i, t + c.tag);

		rc = gic_sq_warp_write_inline(&w, (uint64_t)(c.dst + slot_off(c, t, i)), c.rkey, &v, 8,
					      1, ORDER, DL);
	}
	out[t].tp = gic_now_ns();
	/* The whole warp quiets (rc is the same in every lane): 32 CQE tails
	 * per trip, up to everything published when lane 0 looks. */
	if (!rc) {
		uint64_t upto = (t & 31) ? 0 : gic_ld_acquire_gpu_u64(&sq->ready);

		rc = gic_sq_quiet_warp(sq, __shfl_sync(0xffffffffu, upto, 0), 1, ORDER, DL);
	}
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* One thread: n dependent GPU-scope compare-and-swaps on a word of GPU
 * memory (what a lock or a hand-off costs per step); cycles in *out. */
__global__ void cas_chain_kernel(uint32_t *word, int n, long long *out)
{
	uint32_t v = 0;
	long long c0 = clock64();

	for (int i = 0; i < n; i++)
		v = gic_atomic_cas_acquire_gpu_u32(word, v, v + 1) + 1;
	*out = clock64() - c0;
	word[1] = v; /* keeps the chain */
}

/* ------------------------------------------------------------------ */
/* Host side. */

/* Checks the row's configuration against what the GPU mode supports; a
 * message and EINVAL otherwise. */
static int check_row(const rate_row *r)
{
	const char *why = NULL;

	if (r->threads % r->sms)
		why = "threads must be a multiple of the CTAs (-c)";
	else if (r->threads / r->sms > 1024)
		why = "at most 1024 threads per CTA";
	else if (r->mode == GIC_RATE_OWN && r->threads != r->qps)
		why = "mode own gives every thread its own QP: threads must equal --qps";
	else if (r->mode == GIC_RATE_RR && r->qps % r->threads)
		why = "mode rr gives every thread qps / threads QPs: --qps a multiple of threads";
	else if (r->mode == GIC_RATE_RR &&
		 rr_smem_bytes(r->threads / r->sms, r->qps / r->threads) > RATE_RR_MAX_SMEM)
		why = "mode rr on the GPU: a CTA's threads keep their QPs' views in 48 KiB of "
		      "shared memory: fewer threads per CTA or fewer QPs per thread";
	else if ((r->mode == GIC_RATE_WARP || r->mode == GIC_RATE_CTA) && (r->threads / r->sms) % 32)
		why = "modes warp and cta need whole warps per CTA";
	else if (r->log_bb && (r->log_bb < 6 || r->log_bb > RATE_LOG_BB))
		why = "ring size out of range";
	else if (r->mode != GIC_RATE_OWN && (r->pointer || r->staged || r->size != 8))
		why = "rr, lock, caslock, handoff, warp and cta post 8-byte inline writes from "
		      "registers";
	else if (r->mode == GIC_RATE_HANDOFF && (r->batch & (r->batch - 1)))
		why = "handoff rings every --batch WQEs: a power of two";
	else if (r->qps > ENV_MAX_QPS)
		why = "too many QPs for the fixture";
	else if (!r->pointer && r->size > 512)
		why = "inline payloads up to 512 bytes here";
	else if (r->host_rung && ((r->mode != GIC_RATE_OWN && r->mode != GIC_RATE_WARP &&
				   r->mode != GIC_RATE_CTA) ||
				  row_regs(r) || r->qps > GIC_HOSTDB_MAX_QPS))
		why = "host-rung doorbells: modes own (8-byte inline, inline-staged or pointer "
		      "payloads), warp and cta, at most 64 QPs";
	else if (row_regs(r) && !regs_kernel(r->size, GIC_ORDER_FENCE_GPU))
		why = "inline payloads in registers are built for 8, 12, 16, 32, 48, 64, 128, 256 "
		      "and 512 bytes (--payload inline-staged takes any size)";
	if (!why)
		return 0;
	fprintf(stderr, "gic rate: row %s: %s\n", r->name, why);
	return EINVAL;
}

/* Messages per thread: as many as each QP's ring holds for its threads
 * (and the region for their payloads), or -n when given and smaller. With
 * fewer messages the start of the threads weighs on the rate (-n 1000 gave
 * 0.5-0.6x of these rates for the many-QP rows). */
static int per_thread(const gic_opts *o, const rate_row *r, uint32_t stride)
{
	uint32_t nbb = r->pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write((uint32_t)r->size));
	long ring = (1L << (r->log_bb ? r->log_bb : RATE_LOG_BB)) * r->qps / r->threads / nbb -
		    (r->log_bb ? 0 : 1);
	long region = RATE_REGION / 2 / ((long)r->threads * stride);
	long per;

	if (r->log_bb) /* the ring wraps: 16 rings' worth */
		ring *= RATE_WRAPS;
	per = o->given & GIC_GIVEN_N ? o->iters : ring;
	per = per < ring ? per : ring;
	per = per < region ? per : region;
	if (r->mode == GIC_RATE_RR)
		per -= per % r->qps; /* every QP gets as many */
	if (r->mode == GIC_RATE_HANDOFF || r->mode == GIC_RATE_LOCK ||
	    r->mode == GIC_RATE_CASLOCK) {
		long unit = r->batch > 16 ? r->batch : 16;

		per -= per % unit; /* every QP's reservations end signaled (and rung) */
	}
	return (int)per;
}

template <int O>
static void launch_order(gpu_env *e, const rate_row *r, const rate_cfg *c, span *d)
{
	int tpb = r->threads / r->sms;

	switch (r->mode) {
	case GIC_RATE_OWN:
		if (row_regs(r))
			regs_kernel(r->size, O)<<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		else
			rate_own<O><<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	case GIC_RATE_RR:
		rate_rr<O><<<r->sms, tpb, rr_smem_bytes(tpb, c->qpt), e->stream>>>(e->d_sq, *c, d);
		break;
	case GIC_RATE_LOCK:
		rate_locked<O, 1><<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	case GIC_RATE_CASLOCK:
		rate_locked<O, 0><<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	case GIC_RATE_HANDOFF:
		rate_handoff<O><<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	default:
		if (r->host_rung)
			rate_warp<GIC_ORDER_RELEASE_SYS><<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		else
			rate_warp<O><<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	}
}

/* Launches the row's kernel with the order gpu_env_post_order() picks. */
static void launch(gpu_env *e, const rate_row *r, const rate_cfg *c, span *d)
{
	if (c->order == GIC_ORDER_FENCE_SYS)
		launch_order<GIC_ORDER_FENCE_SYS>(e, r, c, d);
	else
		launch_order<GIC_ORDER_FENCE_GPU>(e, r, c, d);
}

/* The payload byte j of message i of thread t in round tag (sizes != 8). */
static uint8_t rate_byte(uint64_t t, uint64_t i, uint32_t j, uint64_t tag)
{
	return (uint8_t)(rate_val(i, t + tag) >> (8 * (j & 7))) ^ (uint8_t)(j * 13u);
}

/* The payload byte j of message i of thread t in round c->tag. */
static uint8_t rate_want(const rate_cfg *c, int t, int i, uint32_t j)
{
	return c->size == 8 && !c->pointer ? (uint8_t)(rate_val(i, t + c->tag) >> (8 * j))
					   : rate_byte(t, i, j, c->tag);
}

/* Checks the destination h of a round: 1 when every message holds its
 * payload; else reports the first few wrong messages (thread, message,
 * the first 8 bytes got and wanted) and how many were wrong. */
static int payloads_check(const rate_row *r, const rate_cfg *c, const uint8_t *h)
{
	enum { SHOWN = 4 };
	long wrong = 0;

	for (int t = 0; t < r->threads; t++)
		for (int i = 0; i < c->per; i++) {
			const uint8_t *p = h + ((size_t)t * c->per + i) * c->stride;
			uint64_t got = 0, want = 0;
			uint32_t j = 0;

			while (j < c->size && p[j] == rate_want(c, t, i, j))
				j++;
			if (j == c->size)
				continue;
			for (uint32_t k = 0; k < 8 && k < c->size; k++) {
				got |= (uint64_t)p[k] << (8 * k);
				want |= (uint64_t)rate_want(c, t, i, k) << (8 * k);
			}
			if (wrong++ < SHOWN)
				fprintf(stderr, "gic rate: %s: thread %d message %d byte %u wrong: "
					"first 8 bytes 0x%016llx, want 0x%016llx\n", r->name, t, i, j,
					(unsigned long long)got, (unsigned long long)want);
		}
	if (wrong)
		fprintf(stderr, "gic rate: %s: %ld of %ld messages wrong\n", r->name, wrong,
			(long)r->threads * c->per);
	return !wrong;
}

/* Writes the round's source payloads (pointer or sized inline) and clears
 * the destination (check 0); checks it afterwards (check 1). */
static int payloads(gpu_env *e, const rate_row *r, const rate_cfg *c, int check)
{
	size_t bytes = (size_t)r->threads * c->per * c->stride;
	uint8_t *h = (uint8_t *)malloc(bytes);
	int ok = h != NULL;

	if (!h)
		fprintf(stderr, "gic rate: %s: no memory for the round's payloads (%zu bytes)\n",
			r->name, bytes);
	if (ok && check) {
		ok = !gpu_env_read(e, h, e->dst, bytes) && payloads_check(r, c, h);
		if (!ok) {
			/* Late or lost: the same check 200 ms on tells a write that
			 * landed after its completion from one that never did. */
			usleep(200000);
			if (!gpu_env_read(e, h, e->dst, bytes))
				fprintf(stderr, "gic rate: %s: 200 ms later the destination %s\n",
					r->name, payloads_check(r, c, h) ? "is right (late writes)"
									 : "is still wrong");
		}
		free(h);
		return ok;
	}
	for (int t = 0; t < r->threads && ok; t++)
		for (int i = 0; i < c->per; i++)
			for (uint32_t j = 0; j < c->size; j++)
				h[((size_t)t * c->per + i) * c->stride + j] = rate_want(c, t, i, j);
	if (ok) {
		ok = !gpu_env_write(e, e->src, h, bytes) &&
		     !gpu_env_write(e, (void *)c->stage, h, bytes);
		memset(h, 0, bytes);
		ok = ok && !gpu_env_write(e, e->dst, h, bytes);
	}
	free(h);
	return ok;
}

/* Host-rung rows: starts the ringer for one round (QP t rung up to
 * where thread t's writes end) and, once it runs, the kernel; *t_go
 * receives the host time of the start word. 0 or an errno. */
static int start_host_rung(gpu_env *e, const rate_row *r, rate_cfg *c, span *d,
			   gic_hostdb *ringer, uint64_t *t_go)
{
	uint64_t target[GIC_HOSTDB_MAX_QPS];
	uint32_t nbb = c->pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write(c->size));
	int rc;

	for (int q = 0; q < r->qps; q++)
		target[q] = ringer->rung[q] + (q < r->threads ? (uint64_t)c->per * nbb : 0);
	if ((rc = gic_hostdb_start(ringer, target, 60ull * 1000000000ull))) {
		fprintf(stderr, "gic rate: %s: the host doorbell thread did not start\n", r->name);
		return rc;
	}
	launch(e, r, c, d);
	*t_go = gic_now_ns();
	/* Releases nothing the kernel reads but the word itself (the ringer
	 * runs already); the kernel's threads start their clocks on it. */
	gic_st_release_sys_u64((uint64_t *)c->go, c->go_value);
	return 0;
}

/* The launched round's end: waits for the kernel (and stops the ringer of
 * a host-rung row, started at t_go), reads the threads' spans into h and
 * gives the two rates (M msg/s). 1, or 0 on failure (a message said why). */
static int round_rates(gpu_env *e, const rate_row *r, const rate_cfg *c, span *d, span *h,
		       double *post, double *drain, gic_hostdb *ringer, uint64_t t_go)
{
	unsigned long long t0 = ~0ull, t1 = 0, tp = 0;
	cudaError_t launched = cudaGetLastError();
	int wrc = launched != cudaSuccess || gpu_env_wait(e, r->name, 120);

	if (launched != cudaSuccess)
		fprintf(stderr, "gic rate: %s: the round's kernel did not start: %s\n", r->name,
			cudaGetErrorString(launched));

	if (ringer) {
		/* The kernel has ended (or failed): nothing more will be
		 * published. A ringer that reached its targets ended in the pass
		 * that rang the last doorbell, before any CQE the kernel waited
		 * for; otherwise it ends now (ECANCELED, the poster's error below). */
		gic_hostdb_stop(ringer);
		gic_hostdb_join(ringer, "rate");
	}
	if (wrc || gpu_env_read(e, h, d, sizeof(span) * r->threads))
		return 0;
	for (int t = 0; t < r->threads; t++) {
		if (h[t].rc) {
			fprintf(stderr, "gic rate: %s: thread %d: error %d (%s)\n", r->name, t, h[t].rc,
				gpu_env_qp_error(e, r->mode == GIC_RATE_RR ? t * c->qpt
									   : t % r->qps));
			return 0;
		}
		t0 = h[t].t0 < t0 ? h[t].t0 : t0;
		tp = h[t].tp > tp ? h[t].tp : tp;
		t1 = h[t].t1 > t1 ? h[t].t1 : t1;
	}
	if (ringer && ringer->rc)
		return 0;
	/* Host-rung: "posting" ends with the host's last doorbell (its clock). */
	*post = (double)c->per * r->threads /
		(double)(ringer ? ringer->t_last_ns - t_go : tp - t0) * 1e3;
	*drain = (double)c->per * r->threads / (double)(t1 - t0) * 1e3;
	return 1;
}

/* One round: returns 1 and the two rates (M msg/s), or 0 on failure.
 * ringer: the host doorbell thread of a host-rung row, else NULL. */
static int run_round(gpu_env *e, const rate_row *r, rate_cfg *c, span *d, span *h, double *post,
		     double *drain, gic_hostdb *ringer)
{
	uint64_t t_go = 0;

	if (!payloads(e, r, c, 0))
		return 0;
	if (ringer) {
		if (start_host_rung(e, r, c, d, ringer, &t_go))
			return 0;
	} else {
		launch(e, r, c, d);
	}
	return round_rates(e, r, c, d, h, post, drain, ringer, t_go) && payloads(e, r, c, 1);
}

/* One dependent L2 atomic round trip on this GPU, ns (0 when it failed):
 * the unit of the lock and hand-off rows, measured in the same run. */
static double cas_round_trip_ns(double sm_mhz)
{
	enum { CHAIN = 4096 };
	uint32_t *word;
	long long *d, cycles = 0;

	if (cudaMalloc(&word, 8) != cudaSuccess)
		return 0;
	if (cudaMalloc(&d, sizeof(cycles)) == cudaSuccess) {
		cudaMemset(word, 0, 8);
		cas_chain_kernel<<<1, 1>>>(word, CHAIN, d);
		if (cudaMemcpy(&cycles, d, sizeof(cycles), cudaMemcpyDeviceToHost) != cudaSuccess)
			cycles = 0;
		cudaFree(d);
	}
	cudaFree(word);
	return sm_mhz > 0 ? (double)cycles / CHAIN / sm_mhz * 1e3 : 0;
}

/* One row's result but its values: name, params, note, transport, validity. */
static void rate_result(gic_result *res, const gic_opts *o, const rate_row *r, const rate_cfg *c,
			const char *metric, int valid, const char *note)
{
	gic_result_init(res, "rate", r->name, metric, "M msg/s");
	snprintf(res->params, sizeof(res->params),
		 "threads=%d qps=%d sms=%d batch=%d mode=%s payload=%s size=%zu per_thread=%d "
		 "rounds=%d order=%s ring_bb=%d doorbell=%s", r->threads, r->qps, r->sms,
		 /* the WQEs per doorbell that ran: locks ring every WQE, warps every 32 */
		 r->mode == GIC_RATE_LOCK || r->mode == GIC_RATE_CASLOCK ? 1
		 : r->mode == GIC_RATE_WARP || r->mode == GIC_RATE_CTA ? 32 : r->batch,
		 gic_rate_mode_name(r->mode), gic_rate_payload_name(r), r->size, c->per,
		 RATE_ROUNDS, gic_lat_order_name(r->host_rung ? GIC_ORDER_RELEASE_SYS : c->order),
		 1 << (r->log_bb ? r->log_bb : RATE_LOG_BB), gic_rate_doorbell_name(r));
	snprintf(res->note, sizeof(res->note), "%s", note);
	gpu_result_transport(res, o, o->gpu_engine);
	res->validated = valid;
}

/* A one-process row, with the engine's shape (gpu_result_placement). */
static void emit_rate(gic_sink *sink, const gic_opts *o, const rate_row *r, const rate_cfg *c,
		      const gpu_env *e, const char *metric, const double *v, int n, int valid,
		      const char *note)
{
	gic_result res;

	rate_result(&res, o, r, c, metric, valid, note);
	gpu_result_placement(&res, e);
	gpu_samples_emit(sink, &res, v, n, 0);
}

/* The median of v[0..n) (0 when n is 0); v is not changed. */
static double median(const double *v, int n)
{
	double t[RATE_ROUNDS];

	if (n < 1 || n > RATE_ROUNDS)
		return 0;
	memcpy(t, v, sizeof(double) * n);
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
			double x = t[j];

			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The two rows' notes: each cites the other rate of the same rounds; the
 * shared-queue rows also cite the atomic round trip measured in this run. */
static void note_rates(const rate_row *r, const double *post, const double *drain, int n,
		       double cas_ns, char notes[2][512])
{
	double p = median(post, n), d = median(drain, n);
	const char *src = r->pointer ? ""
			  : r->staged ? "; inline payload loaded from GPU memory at each post"
				      : "; inline payload made in registers by the poster";
	char unit[160] = "";

	if (r->mode == GIC_RATE_LOCK || r->mode == GIC_RATE_HANDOFF || r->mode == GIC_RATE_CASLOCK)
		snprintf(unit, sizeof(unit), "; one dependent L2 atomic round trip here: %.0f ns; "
			 "a WQE's chain: %s", cas_ns,
			 r->mode == GIC_RATE_LOCK ? "turn load, doorbell's fences, add (ticket lock)"
			 : r->mode == GIC_RATE_CASLOCK ? "test, CAS, loads, fence, release"
						       : "turn load (hand-off by atomic add)");
	if (r->log_bb) {
		snprintf(notes[0], 512, "to the last CQE, rings of %d BB wrapping, reclaimed while "
			 "posting (the paper's method; softnic-bound; posting only: %.2f)%s%s",
			 1 << r->log_bb, p, unit, src);
		snprintf(notes[1], 512, "GPU side, first post to last doorbell, reclamation waits "
			 "included (to the last CQE: %.2f)%s", d, src);
		return;
	}
	if (r->host_rung) {
		snprintf(notes[0], 512, "host-rung (ringer on CPU %d): host clock, start word to "
			 "its last doorbell (with drain: %.2f); doorbells in mapped host memory, "
			 "softnic at system scope", RATE_RINGER_CPU, d);
		snprintf(notes[1], 512, "host-rung: until the last CQE, softnic-bound, GPU clock "
			 "(host side alone: %.2f)", p);
		return;
	}
	snprintf(notes[0], 512, "GPU side, first post to last doorbell (with drain on softnic: "
		 "%.2f)%s%s", d, unit, src);
	snprintf(notes[1], 512, "until the last CQE, softnic-bound (GPU side alone: %.2f)%s", p,
		 src);
}

/* Host-rung rows: prepares the ringer for the row's QPs. It rings each QP
 * at the address a host thread can store to (gpu_env_host_doorbell: on
 * mlx5 the provider's host view of the UAR, not the device view's word).
 * Mode own publishes positions (gic_hostdb_publish); the shared modes ring
 * through gic_sq_ring as always, so their views' doorbell pointers are
 * moved to the ringer's words (on: 1), which it forwards, and moved back
 * to dev_db (saved at on: 1) before the fixture closes (on: 0). 1 on
 * success. */
static int redirect_doorbells(gpu_env *e, const rate_row *r, gic_hostdb *ringer, uint64_t *words,
			      uint64_t **dev_db, int on)
{
	gic_sq views[GIC_HOSTDB_MAX_QPS], rung[GIC_HOSTDB_MAX_QPS];
	int cpu = RATE_RINGER_CPU < sysconf(_SC_NPROCESSORS_ONLN) ? RATE_RINGER_CPU : -1;
	int fwd = r->mode != GIC_RATE_OWN;

	if (cudaMemcpy(views, e->d_sq, sizeof(gic_sq) * r->qps, cudaMemcpyDeviceToHost) !=
	    cudaSuccess)
		return 0;
	if (on) {
		for (int q = 0; q < r->qps; q++) {
			rung[q] = views[q];
			dev_db[q] = views[q].db;
			if (!(rung[q].db = gpu_env_host_doorbell(e, q)))
				return 0;
		}
		if (fwd ? gic_hostdb_init_forward(ringer, rung, r->qps, words, cpu, 0)
			: gic_hostdb_init(ringer, rung, r->qps, words, cpu, 0))
			return 0;
	}
	if (!fwd)
		return 1;
	/* Mapped pinned memory: its host pointer is its device pointer (UVA). */
	for (int q = 0; q < r->qps; q++)
		views[q].db = on ? &words[(size_t)q * GIC_HOSTDB_STRIDE] : dev_db[q];
	return cudaMemcpy(e->d_sq, views, sizeof(gic_sq) * r->qps, cudaMemcpyHostToDevice) ==
	       cudaSuccess;
}

/* The row's shape in *c (the fixture's addresses and keys left to the caller). */
static void rate_cfg_init(rate_cfg *c, const gic_opts *o, const rate_row *r)
{
	memset(c, 0, sizeof(*c));
	c->qps = r->qps;
	c->batch = r->batch;
	c->qpt = r->mode == GIC_RATE_RR ? r->qps / r->threads : 1;
	c->cta = r->mode == GIC_RATE_CTA;
	c->pointer = r->pointer;
	c->staged = r->staged;
	c->size = (uint32_t)r->size;
	c->stride = (c->size + 7) & ~7u;
	c->per = per_thread(o, r, c->stride);
}

static int run_row(const gic_opts *o, const rate_row *r, double cas_ns, gic_sink *sink)
{
	gpu_env_cfg cfg = { o->gpu_engine, r->qps, r->log_bb ? r->log_bb : RATE_LOG_BB,
			    RATE_REGION, 0, RATE_ENGINE_BLOCKS, 1 };
	double post[RATE_ROUNDS], drain[RATE_ROUNDS];
	span *d, *h = (span *)calloc(r->threads, sizeof(span));
	rate_cfg c;
	gpu_env e;
	char notes[2][512];
	int ok = 1, n = 0;
	gic_hostdb *ringer = NULL;
	uint64_t *words = NULL; /* host-rung: the progress words, then the start word */

	uint8_t *stage = NULL;

	uint64_t *dev_db[GIC_HOSTDB_MAX_QPS]; /* host-rung shared modes: the views' own */

	gpu_env_cfg_nic(&cfg, o);
	cfg.host_doorbells = r->host_rung;
	/* Every CUDA allocation before the engine starts (docs/DESIGN.md §4.5). */
	if (!h || cudaMalloc(&d, sizeof(span) * r->threads) != cudaSuccess ||
	    cudaMalloc(&stage, RATE_REGION / 2) != cudaSuccess ||
	    (r->host_rung &&
	     (!(ringer = (gic_hostdb *)calloc(1, sizeof(*ringer))) ||
	      !(words = (uint64_t *)gpu_mapped_alloc((size_t)(r->qps + 1) * GIC_HOSTDB_STRIDE * 8,
						     64, NULL))))) {
		free(h);
		free(ringer);
		return ENOMEM;
	}
	rate_cfg_init(&c, o, r);
	gpu_env_open(&e, &cfg);
	c.order = gpu_env_post_order(&e);
	c.dst = e.dst;
	c.rkey = e.dst_rkey;
	c.src = e.src;
	c.lkey = e.src_lkey;
	c.stage = stage;
	if (r->host_rung && !redirect_doorbells(&e, r, ringer, words, dev_db, 1))
		ok = 0;
	if (r->host_rung) {
		c.host_rung = 1;
		c.progress = words;
		c.go = words + (size_t)r->qps * GIC_HOSTDB_STRIDE;
	}
	for (int k = 0; k < RATE_ROUNDS && ok && c.per > 0; k++, n++) {
		c.tag = 4096u * (k + 1);
		c.go_value = (uint64_t)k + 1;
		ok = run_round(&e, r, &c, d, h, &post[k], &drain[k], ringer);
	}
	if (r->host_rung && r->mode != GIC_RATE_OWN &&
	    !redirect_doorbells(&e, r, ringer, words, dev_db, 0))
		ok = 0;
	gpu_env_close(&e);
	cudaFree(d);
	cudaFree(stage);
	free(h);
	if (words)
		gpu_mapped_free(words, NULL);
	free(ringer);
	if (c.per <= 0) {
		fprintf(stderr, "gic rate: %s: no room for a message per thread\n", r->name);
		return EINVAL;
	}
	if (!ok) /* the failed round's rates are not kept */
		n--;
	if (n < 1) {
		post[0] = drain[0] = 0;
		n = 1;
	}
	note_rates(r, post, drain, n, cas_ns, notes);
	if (r->log_bb) { /* the paper's method first */
		emit_rate(sink, o, r, &c, &e, "message rate", drain, n, ok, notes[0]);
		emit_rate(sink, o, r, &c, &e, "message rate posting only", post, n, ok, notes[1]);
	} else {
		emit_rate(sink, o, r, &c, &e, "message rate", post, n, ok, notes[0]);
		emit_rate(sink, o, r, &c, &e, "message rate with drain", drain, n, ok, notes[1]);
	}
	return 0;
}

int gic_gpu_rate(const gic_opts *o, const rate_state *st, const gic_run_info *info,
		 gic_sink *sink)
{
	int failed = 0;
	double cas_ns;

	for (int i = 0; i < st->nrows; i++)
		if (check_row(&st->rows[i]))
			return EINVAL;
	cas_ns = cas_round_trip_ns(info->sm_mhz);
	for (int i = 0; i < st->nrows; i++) {
		gic_progress("rate", i, st->nrows, st->rows[i].name);
		failed += run_row(o, &st->rows[i], cas_ns, sink) != 0;
	}
	return failed ? EIO : 0;
}

/* ------------------------------------------------------------------ */
/* --procs 2 in GPU mode (gic_gpu_rate_pe): PE 0 posts the row from its own
 * GPU-engine softnic (RATE_ENGINE_BLOCKS one-warp blocks, as in one
 * process) into PE 1's region through softnic's GPU peers (gpu_pair.h);
 * PE 1 (a one-warp engine, idle) clears its region before each round and
 * checks every payload after it. The kernels and each round's accounting
 * are the one-process mode's (launch, round_rates, payloads). */

static_assert((int)GIC_RATE_GPU_PAIR_MAX_QPS <= (int)GPU_PAIR_MAX_QPS, "the pair connects them");

/* PE 0's rows of the rounds that ran (n of them). */
static void pair_rows(gic_pair *pair, const gic_opts *o, const rate_row *r, const rate_cfg *c,
		      const double *post, const double *drain, int n, int valid, double cas_ns,
		      int mps)
{
	char notes[2][512];
	const char *metric[2] = { "message rate", "message rate with drain" };
	const double *v[2] = { post, drain };

	if (r->log_bb) { /* the paper's method first, as in one process */
		metric[0] = "message rate";
		metric[1] = "message rate posting only";
		v[0] = drain;
		v[1] = post;
	}
	note_rates(r, post, drain, n, cas_ns, notes);
	for (int k = 0; k < 2; k++) {
		gic_result res;

		rate_result(&res, o, r, c, metric[k], valid, notes[k]);
		gic_result_param(&res, "procs=2 engine=%dx1 mps=%d", RATE_ENGINE_BLOCKS, mps);
		gic_result_set_values(&res, v[k], (size_t)n, 0);
		gic_pair_put(pair, NULL, &res);
	}
}

/* PE 1: clears its region (check 0) or checks it (1); 1 when it went well. */
static int pair_region(gpu_pair_pe *P, gpu_env *e, const rate_row *r, const rate_cfg *c, int check)
{
	size_t bytes = (size_t)r->threads * c->per * c->stride;

	if (check)
		return payloads(e, r, c, 1);
	return cudaMemsetAsync(P->region, 0, bytes, P->stream) == cudaSuccess &&
	       !gpu_pair_wait(P, "clearing the region", 10);
}

static int rate_pe_row(gic_pair *pair, const gic_opts *o, const rate_row *r, double cas_ns)
{
	int rank = gic_pair_rank(pair), ok, n = 0, rc;
	gpu_pair_cfg pc = { o->device, r->qps, r->log_bb ? r->log_bb : RATE_LOG_BB, RATE_REGION,
			    rank ? 1 : RATE_ENGINE_BLOCKS, 1 };
	double post[RATE_ROUNDS], drain[RATE_ROUNDS];
	span *d = NULL, *h = (span *)calloc(r->threads, sizeof(span));
	gpu_env *e = (gpu_env *)calloc(1, sizeof(gpu_env));
	gpu_pair_pe P;
	rate_cfg c;

	/* Every CUDA allocation before the engine starts (docs/DESIGN.md §4.5). */
	ok = h && e && cudaMalloc(&d, sizeof(span) * r->threads) == cudaSuccess;
	if (ok) {
		rc = gpu_pair_open(&P, pair, "rate", &pc);
	} else {
		fprintf(stderr, "gic rate: PE%d: out of memory\n", rank);
		rc = gpu_pair_open_failed(&P, pair, "rate", ENOMEM);
	}
	rate_cfg_init(&c, o, r);
	if (!rc) {
		gpu_pair_env(&P, e);
		c.order = GIC_ORDER_FENCE_GPU; /* gpu_env_post_order() of a GPU engine */
		c.dst = (uint8_t *)(uintptr_t)P.theirs.region; /* PE 1's, in PE 1's process */
		c.rkey = P.theirs.rkey;
		if (rank == 0 && !P.mps)
			gpu_pair_warn_mps("rate");
	}
	/* Every round on both PEs, whatever one of them saw: the barriers pair up. */
	for (int k = 0; k < RATE_ROUNDS && !rc && c.per > 0; k++) {
		int got = 1;

		c.tag = 4096u * (k + 1);
		if (rank == 1)
			got = pair_region(&P, e, r, &c, 0);
		gpu_pair_sync(pair); /* PE 1's region cleared */
		if (rank == 0) {
			launch(e, r, &c, d);
			got = round_rates(e, r, &c, d, h, &post[n], &drain[n], NULL, 0);
			n += got;
		}
		gpu_pair_sync(pair); /* PE 0 saw its last CQEs: every write has landed */
		if (rank == 1)
			got = got && pair_region(&P, e, r, &c, 1);
		ok = ok && got;
	}
	if (!rc && rank == 0 && n > 0)
		pair_rows(pair, o, r, &c, post, drain, n, ok, cas_ns, P.mps);
	if (!rc)
		gic_pair_phase_done(pair, ok);
	gpu_pair_finish(&P, pair);
	cudaFree(d);
	free(e);
	free(h);
	return rc;
}

int gic_gpu_rate_pe(gic_pair *pair, const gic_opts *o, const rate_row *r)
{
	char gpu[128];
	double mhz = 0;

	if (!gic_rate_gpu_pair_ok(r))
		return EPROTO;
	if (gic_gpu_available(gpu, sizeof(gpu), &mhz, o->device) || mhz <= 0) {
		fprintf(stderr, "gic rate: PE%d: no GPU %d\n", gic_pair_rank(pair), o->device);
		return ENODEV;
	}
	return rate_pe_row(pair, o, r, gic_pair_rank(pair) == 0 ? cas_round_trip_ns(mhz) : 0);
}
