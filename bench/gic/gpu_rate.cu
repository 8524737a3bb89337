/*
 * bench/gic/gpu_rate.cu - `gic rate` on the GPU: message rate of GPU
 * threads posting to softnic (paper Table 5, Figure 3b).
 *
 * A row spreads `threads` threads over `sms` CTAs. Publication modes:
 *   own      thread t owns QP t (threads == qps), `batch` WQEs per doorbell;
 *   lock     threads share QP (t % qps) under one lock per WQE;
 *   handoff  threads share QP (t % qps), per-thread slot hand-off;
 *   warp     warps share QP (warp % qps), 32 WQEs and one doorbell per warp.
 * Every ring holds all the writes of its threads, so posting never waits for
 * the engine. Two results per row: "message rate" is the GPU side, first post
 * to last doorbell (the paper's number); "message rate with drain" adds the
 * wait for the last CQE on softnic (engine-bound, not a NIC number). Each
 * result summarizes RATE_ROUNDS rounds (p50 is their median), each round
 * with its own payload values, checked after the round. Inline payloads
 * other than 8 bytes are copied from a staging buffer in GPU memory;
 * pointer payloads are read by the engine from PE0's source region.
 * Ordering: GPU-scope fence.
 */
#include "exp_rate.h"
#include "gpu_common.h"

#include <errno.h>

enum { RATE_ROUNDS = 5, RATE_LOG_BB = 14, RATE_REGION = 16 << 20, RATE_ENGINE_BLOCKS = 64 };

#define DL (gic_now_ns() + ENV_DEADLINE_NS)
#define ORD GIC_ORDER_FENCE_GPU

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
	int pointer;
	uint32_t size, stride;
	uint64_t tag;     /* the round's payload tag */
	uint8_t *dst;
	uint32_t rkey;
	const uint8_t *src; /* pointer payloads (PE0), same layout as dst */
	uint32_t lkey;
	const uint8_t *stage; /* inline payloads (sizes other than 8), GPU memory */
} rate_cfg;

/* Where message i of thread t lands (and, for pointer writes, comes from). */
static __device__ __forceinline__ uint64_t slot_off(const rate_cfg &c, int t, int i)
{
	return ((uint64_t)t * c.per + i) * c.stride;
}

/* Thread t owns QP t: batches of `batch` WQEs per doorbell; a batch is
 * signaled when it ends on a multiple of 16 messages or at the end. */
__global__ void rate_own(gic_sq *g, rate_cfg c, span *out)
{
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
			uint32_t nbb = c.pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write(c.size));

			rc = gic_sq_reserve_excl(&s, nbb, &pos, ORD, DL);
			if (rc)
				break;
			if (c.pointer)
				gic_wqe_write(&s, pos, GIC_OPCODE_RDMA_WRITE, raddr, c.rkey,
					      (uint64_t)(c.src + slot_off(c, t, i + j)), c.lkey, c.size,
					      sig ? GIC_CTRL_CQ_UPDATE : 0, 0);
			else if (c.size == 8)
				gic_wqe_write_inline_u64(&s, pos, raddr, c.rkey, rate_val(i + j, t + c.tag),
							 sig ? GIC_CTRL_CQ_UPDATE : 0);
			else
				gic_wqe_write_inline(&s, pos, raddr, c.rkey,
						     c.stage + slot_off(c, t, i + j), c.size,
						     sig ? GIC_CTRL_CQ_UPDATE : 0);
			if (sig)
				gic_sq_note_signaled(&s, pos + nbb, 0);
		}
		gic_sq_publish_excl(&s, ORD);
	}
	out[t].tp = gic_now_ns();
	if (!rc)
		rc = gic_sq_quiet(&s, ORD, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
	gic_sq_local_end(&g[t], &s);
}

/* Threads share QP t % qps, one lock per WQE. */
__global__ void rate_lock(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq *sq = &g[t % c.qps];
	int rc = 0;

	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i++)
		rc = gic_sq_locked_write_inline_u64(sq, (uint64_t)(c.dst + slot_off(c, t, i)), c.rkey,
						    rate_val(i, t + c.tag), 16, ORD, DL);
	out[t].tp = gic_now_ns();
	if (!rc && !(rc = gic_sq_post_lock(sq, DL))) {
		rc = gic_sq_quiet(sq, ORD, DL);
		gic_sq_post_unlock(sq);
	}
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* Threads share QP t % qps, slots handed off in reservation order. */
__global__ void rate_handoff(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq *sq = &g[t % c.qps];
	int rc = 0;

	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i++)
		rc = gic_sq_handoff_write_inline_u64(sq, (uint64_t)(c.dst + slot_off(c, t, i)), c.rkey,
						     rate_val(i, t + c.tag), 16, ORD, DL, NULL);
	out[t].tp = gic_now_ns();
	/* Every reservation of the row ends on a multiple of 16: signaled. */
	if (!rc)
		rc = gic_sq_wait_retired(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1, ORD, DL);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
}

/* Warps share QP warp % qps; each round a warp posts 32 WQEs with one
 * doorbell, the last one signaled. */
__global__ void rate_warp(gic_sq *g, rate_cfg c, span *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq *sq = &g[(t / 32) % c.qps];
	gic_sq_warp w;
	int rc = 0;

	gic_sq_warp_begin(&w, sq);
	out[t].t0 = gic_now_ns();
	for (int i = 0; i < c.per && !rc; i++) {
		uint64_t v = rate_val(i, t + c.tag);

		rc = gic_sq_warp_write_inline(&w, (uint64_t)(c.dst + slot_off(c, t, i)), c.rkey, &v, 8,
					      1, ORD, DL);
	}
	out[t].tp = gic_now_ns();
	if (!rc && (t & 31) == 0)
		rc = gic_sq_wait_retired(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1, ORD, DL);
	rc = __shfl_sync(0xffffffffu, rc, 0);
	out[t].t1 = gic_now_ns();
	out[t].rc = rc;
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
	else if (r->mode == GIC_RATE_WARP && (r->threads / r->sms) % 32)
		why = "mode warp needs whole warps per CTA";
	else if (r->mode != GIC_RATE_OWN && (r->pointer || r->size != 8))
		why = "lock, handoff and warp post 8-byte inline writes";
	else if (r->qps > ENV_MAX_QPS)
		why = "too many QPs for the fixture";
	else if (!r->pointer && r->size > 512)
		why = "inline payloads up to 512 bytes here";
	if (!why)
		return 0;
	fprintf(stderr, "gic rate: row %s: %s\n", r->name, why);
	return EINVAL;
}

/* Messages per thread: -n, capped so that each QP's ring holds all the
 * writes of its threads and the region holds every payload. */
static int per_thread(const gic_opts *o, const rate_row *r, uint32_t stride)
{
	uint32_t nbb = r->pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write((uint32_t)r->size));
	long ring = (1L << RATE_LOG_BB) * r->qps / r->threads / nbb - 1;
	long region = RATE_REGION / 2 / ((long)r->threads * stride);
	long per = o->iters;

	per = per < ring ? per : ring;
	per = per < region ? per : region;
	if (r->mode == GIC_RATE_HANDOFF || r->mode == GIC_RATE_LOCK)
		per -= per % 16; /* every QP's reservations end signaled */
	return (int)per;
}

static void launch(gpu_env *e, const rate_row *r, const rate_cfg *c, span *d)
{
	int tpb = r->threads / r->sms;

	switch (r->mode) {
	case GIC_RATE_OWN:
		rate_own<<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	case GIC_RATE_LOCK:
		rate_lock<<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	case GIC_RATE_HANDOFF:
		rate_handoff<<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	default:
		rate_warp<<<r->sms, tpb, 0, e->stream>>>(e->d_sq, *c, d);
		break;
	}
}

/* The payload byte j of message i of thread t in round tag (sizes != 8). */
static uint8_t rate_byte(uint64_t t, uint64_t i, uint32_t j, uint64_t tag)
{
	return (uint8_t)(rate_val(i, t + tag) >> (8 * (j & 7))) ^ (uint8_t)(j * 13u);
}

/* Writes the round's source payloads (pointer or sized inline) and clears
 * the destination; checks it afterwards. */
static int payloads(gpu_env *e, const rate_row *r, const rate_cfg *c, int check)
{
	size_t bytes = (size_t)r->threads * c->per * c->stride;
	uint8_t *h = (uint8_t *)malloc(bytes);
	int ok = h != NULL;

	if (ok && check)
		ok = !gpu_env_read(e, h, e->dst, bytes);
	for (int t = 0; t < r->threads && ok; t++)
		for (int i = 0; i < c->per && ok; i++) {
			uint8_t *p = h + ((size_t)t * c->per + i) * c->stride;

			for (uint32_t j = 0; j < c->size && ok; j++) {
				uint8_t want = c->size == 8 && !c->pointer
						       ? (uint8_t)(rate_val(i, t + c->tag) >> (8 * j))
						       : rate_byte(t, i, j, c->tag);

				if (!check)
					p[j] = want;
				else if (p[j] != want) {
					fprintf(stderr, "gic rate: %s: thread %d message %d byte %u wrong\n",
						r->name, t, i, j);
					ok = 0;
				}
			}
		}
	if (ok && !check) {
		ok = !gpu_env_write(e, e->src, h, bytes) &&
		     !gpu_env_write(e, (void *)c->stage, h, bytes);
		memset(h, 0, bytes);
		ok = ok && !gpu_env_write(e, e->dst, h, bytes);
	}
	free(h);
	return ok;
}

/* One round: returns 1 and the two rates (M msg/s), or 0 on failure. */
static int run_round(gpu_env *e, const rate_row *r, rate_cfg *c, span *d, span *h, double *post,
		     double *drain)
{
	unsigned long long t0 = ~0ull, t1 = 0, tp = 0;

	if (!payloads(e, r, c, 0))
		return 0;
	launch(e, r, c, d);
	if (cudaGetLastError() != cudaSuccess || gpu_env_wait(e, r->name, 120) ||
	    gpu_env_read(e, h, d, sizeof(span) * r->threads))
		return 0;
	for (int t = 0; t < r->threads; t++) {
		if (h[t].rc) {
			fprintf(stderr, "gic rate: %s: thread %d: error %d (%s)\n", r->name, t, h[t].rc,
				softnic_qp_error(e->qp[t % r->qps]));
			return 0;
		}
		t0 = h[t].t0 < t0 ? h[t].t0 : t0;
		tp = h[t].tp > tp ? h[t].tp : tp;
		t1 = h[t].t1 > t1 ? h[t].t1 : t1;
	}
	*post = (double)c->per * r->threads / (double)(tp - t0) * 1e3;
	*drain = (double)c->per * r->threads / (double)(t1 - t0) * 1e3;
	return payloads(e, r, c, 1);
}

static void emit_rate(gic_sink *sink, const gic_opts *o, const rate_row *r, const rate_cfg *c,
		      const char *metric, const double *v, int n, int valid, const char *note)
{
	gic_result res;

	gic_result_init(&res, "rate", r->name, metric, "M msg/s");
	snprintf(res.params, sizeof(res.params),
		 "threads=%d qps=%d sms=%d batch=%d mode=%s payload=%s size=%zu per_thread=%d "
		 "rounds=%d order=fence-gpu", r->threads, r->qps, r->sms, r->batch,
		 gic_rate_mode_name(r->mode), r->pointer ? "pointer" : "inline", r->size, c->per,
		 RATE_ROUNDS);
	snprintf(res.note, sizeof(res.note), "%s", note);
	gpu_result_transport(&res, o->gpu_engine);
	res.validated = valid;
	gpu_samples_emit(sink, &res, v, n, 0);
}

static int run_row(const gic_opts *o, const rate_row *r, gic_sink *sink)
{
	gpu_env_cfg cfg = { o->gpu_engine, r->qps, RATE_LOG_BB, RATE_REGION, 0,
			    RATE_ENGINE_BLOCKS, 1 };
	double post[RATE_ROUNDS], drain[RATE_ROUNDS];
	span *d, *h = (span *)calloc(r->threads, sizeof(span));
	rate_cfg c;
	gpu_env e;
	int ok = 1, n = 0;

	uint8_t *stage = NULL;

	/* Every CUDA allocation before the engine starts (DESIGN.md). */
	if (!h || cudaMalloc(&d, sizeof(span) * r->threads) != cudaSuccess ||
	    cudaMalloc(&stage, RATE_REGION / 2) != cudaSuccess) {
		free(h);
		return ENOMEM;
	}
	memset(&c, 0, sizeof(c));
	c.qps = r->qps;
	c.batch = r->batch;
	c.pointer = r->pointer;
	c.size = (uint32_t)r->size;
	c.stride = (c.size + 7) & ~7u;
	c.per = per_thread(o, r, c.stride);
	gpu_env_open(&e, &cfg);
	c.dst = e.dst;
	c.rkey = softnic_mr_rkey(e.dst_mr);
	c.src = e.src;
	c.lkey = softnic_mr_lkey(e.src_mr);
	c.stage = stage;
	for (int k = 0; k < RATE_ROUNDS && ok && c.per > 0; k++, n++) {
		c.tag = 4096u * (k + 1);
		ok = run_round(&e, r, &c, d, h, &post[k], &drain[k]);
	}
	gpu_env_close(&e);
	cudaFree(d);
	cudaFree(stage);
	free(h);
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
	emit_rate(sink, o, r, &c, "message rate", post, n, ok,
		  "GPU side: first post to last doorbell");
	emit_rate(sink, o, r, &c, "message rate with drain", drain, n, ok,
		  "until the last CQE: bound by softnic's engine, not a NIC number");
	return 0;
}

int gic_gpu_rate(const gic_opts *o, const rate_state *st, const gic_run_info *info,
		 gic_sink *sink)
{
	int failed = 0;

	(void)info;
	for (int i = 0; i < st->nrows; i++)
		if (check_row(&st->rows[i]))
			return EINVAL;
	for (int i = 0; i < st->nrows; i++) {
		gic_progress("rate", i, st->nrows, st->rows[i].name);
		failed += run_row(o, &st->rows[i], sink) != 0;
	}
	return failed ? EIO : 0;
}
