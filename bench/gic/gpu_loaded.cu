/*
 * bench/gic/gpu_loaded.cu - `gic loaded` on the GPU: the round trip of a
 * probe while background CTAs load both ends (paper Figure 6, Table 11).
 *
 * mini-gda path. PE0's probe thread (CTA 0) writes 8 bytes to PE1; PE1's
 * responder (CTA 1) answers with 8 bytes; the probe times the round trip.
 * --bg-ctas N background CTAs (one posting thread each; half on PE0 writing
 * to PE1, half on PE1 writing to PE0) stream 8-byte writes until the probe
 * is done, each pausing --pace ns between posts (0: unpaced).
 *   shared:   the probe and PE0's writers share QP 0, the responder and
 *             PE1's writers share PE1's QP 0 (per-thread hand-off);
 *   reserved: probe and responder own QP 0; each writer owns a QP of its
 *             own (QPs 1..).
 * Results: the probe's rtt, and the background's carried rate ("background
 * rate", M msg/s) as its own row. Payloads: every answer, and the last
 * write of every background slot, are checked.
 */
#include "exp_loaded.h"
#include "gpu_common.h"

#include <errno.h>

enum { BG_SLOTS = 2048, LOADED_MAX_BG = 254, LOADED_REGION = 4 << 20 };

#define DL (gic_now_ns() + ENV_DEADLINE_NS)
#define ORD GIC_ORDER_FENCE_GPU

static __host__ __device__ uint64_t lval(uint64_t i, uint64_t tag)
{
	return (tag << 44) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x4c4c4c4c00000009ull;
}

typedef struct loaded_cfg {
	int n;            /* probe samples */
	int shared;       /* 1: shared queues */
	int nbg;          /* background writers (even) */
	long pace_ns;
	uint8_t *dst;     /* PE1's region: probe at [0, n*8), writers after */
	uint32_t dst_rkey;
	uint8_t *back;    /* PE0's region: answers at [0, n*8), writers after */
	uint32_t back_rkey;
	uint32_t *stop;   /* set by the probe when done */
	unsigned long long *bg_count; /* messages per writer */
} loaded_cfg;

/* Where writer b's slot k lies (within its target region). */
static __host__ __device__ uint64_t bg_off(int n, int b, uint64_t k)
{
	return (uint64_t)n * 8 + ((uint64_t)b * BG_SLOTS + k) * 8;
}

/* An 8-byte write on a queue, exclusive or shared; signaled every 16
 * positions, and always when final (the thread's last write, whose
 * position *end then follows). */
static __device__ int post8(gic_sq *sq, int shared, uint64_t raddr, uint32_t rkey, uint64_t v,
			    int final, uint64_t *end)
{
	uint64_t pos;
	int rc, sig;

	if (shared) {
		rc = gic_sq_handoff_write_inline_u64(sq, raddr, rkey, v, final ? 1 : 16, ORD, DL, &pos);
		*end = pos + 1;
		return rc;
	}
	rc = gic_sq_reserve_excl(sq, 1, &pos, ORD, DL);
	if (rc)
		return rc;
	sig = final || (pos + 1) % 16 == 0;
	gic_wqe_write_inline_u64(sq, pos, raddr, rkey, v, sig ? GIC_CTRL_CQ_UPDATE : 0);
	if (sig)
		gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, ORD);
	*end = pos + 1;
	return 0;
}

/* Waits until the thread's final write (ending at end) has retired. */
static __device__ int drain(gic_sq *sq, int shared, uint64_t end)
{
	return gic_sq_wait_retired(sq, end, shared, ORD, DL);
}

/* CTA 0: the probe; CTA 1: the responder; CTAs 2..: writers. */
__global__ void loaded_kernel(gic_sq *pe0, gic_sq *pe1, loaded_cfg c, long long *cycles, int *rc_out)
{
	int b = blockIdx.x;
	int rc = 0;

	if (b < 2) {
		gic_sq *sq = b ? &pe1[0] : &pe0[0];
		uint64_t end = 0;

		for (int i = 0; i < c.n && !rc; i++) {
			long long c0 = clock64();

			if (b == 1)
				rc = gpu_wait_word((const uint64_t *)(c.dst + 8 * i), lval(i, 1));
			if (!rc)
				rc = post8(sq, c.shared, (uint64_t)((b ? c.back : c.dst) + 8 * i),
					   b ? c.back_rkey : c.dst_rkey, b ? ~lval(i, 1) : lval(i, 1),
					   i + 1 == c.n, &end);
			if (!rc && b == 0)
				rc = gpu_wait_word((const uint64_t *)(c.back + 8 * i), ~lval(i, 1));
			if (b == 0)
				cycles[i] = clock64() - c0;
		}
		if (b == 0) /* the writers stop; the probe and responder drain */
			gic_st_release_gpu_u32(c.stop, 1);
		if (!rc)
			rc = drain(sq, c.shared, end);
	} else {
		int w = b - 2, to_pe1 = w % 2 == 0;
		gic_sq *sq = c.shared ? (to_pe1 ? &pe0[0] : &pe1[0])
				      : (to_pe1 ? &pe0[1 + w / 2] : &pe1[1 + w / 2]);
		uint8_t *base = to_pe1 ? c.dst : c.back;
		uint32_t rkey = to_pe1 ? c.dst_rkey : c.back_rkey;
		uint64_t i = 0, end = 0, deadline = gic_now_ns() + 60000000000ull;
		int final = 0;

		/* Writes until the probe is done, then one final (signaled) write. */
		while (!rc && !final) {
			final = gic_ld_acquire_gpu_u32(c.stop) || gic_now_ns() > deadline;
			rc = post8(sq, c.shared, (uint64_t)(base + bg_off(c.n, w, i % BG_SLOTS)), rkey,
				   lval(i, 100 + w), final, &end);
			i += !rc;
			if (c.pace_ns && !final)
				__nanosleep((unsigned)c.pace_ns);
		}
		if (!rc)
			rc = drain(sq, c.shared, end);
		c.bg_count[w] = i;
	}
	rc_out[b] = rc;
}

/* ------------------------------------------------------------------ */

/* Checks the answers and the last write of every writer slot. */
static int check(gpu_env *e, const loaded_cfg *c, const unsigned long long *count)
{
	size_t bytes = (size_t)bg_off(c->n, c->nbg, 0);
	uint64_t *d = (uint64_t *)malloc(bytes), *k = (uint64_t *)malloc(bytes);
	int ok = d && k && !gpu_env_read(e, d, e->dst, bytes) && !gpu_env_read(e, k, e->back, bytes);

	for (int i = 0; i < c->n && ok; i++)
		ok = d[i] == lval(i, 1) && k[i] == ~lval(i, 1);
	for (int w = 0; w < c->nbg && ok; w++) {
		const uint64_t *region = w % 2 == 0 ? d : k;

		for (uint64_t s = 0; s < BG_SLOTS && s < count[w] && ok; s++) {
			uint64_t last = s + (count[w] - 1 - s) / BG_SLOTS * BG_SLOTS;

			ok = region[bg_off(c->n, w, s) / 8] == lval(last, 100 + w);
		}
	}
	if (!ok)
		fprintf(stderr, "gic loaded: a payload is wrong\n");
	free(d);
	free(k);
	return ok;
}

static int run_mode(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		    gic_sink *sink, int shared)
{
	int nbg = st->bg_ctas & ~1, n = o->iters + o->warmup, ok;
	gpu_env_cfg cfg = { o->gpu_engine, 1 + nbg / 2, 12, LOADED_REGION, 0, 8, 4 };
	unsigned long long count[LOADED_MAX_BG] = { 0 }, t0, t1;
	long long *d_cycles, *h = (long long *)calloc(n, sizeof(long long));
	double *v = (double *)calloc(n, sizeof(double)), total = 0;
	int *d_rc, rc[LOADED_MAX_BG + 2];
	loaded_cfg c;
	gpu_env e;
	gic_result r;

	if (!h || !v || cudaMalloc(&d_cycles, 8 * n) || cudaMalloc(&d_rc, sizeof(rc)) ||
	    cudaMalloc(&c.stop, 4) || cudaMalloc(&c.bg_count, sizeof(count)) ||
	    cudaMemset(c.stop, 0, 4)) {
		free(h);
		free(v);
		return ENOMEM;
	}
	gpu_env_open(&e, &cfg);
	c.n = n;
	c.shared = shared;
	c.nbg = nbg;
	c.pace_ns = st->pace_ns;
	c.dst = e.dst;
	c.dst_rkey = softnic_mr_rkey(e.dst_mr);
	c.back = e.back;
	c.back_rkey = softnic_mr_rkey(e.back_mr);
	t0 = gic_now_ns();
	loaded_kernel<<<2 + nbg, 1, 0, e.stream>>>(e.d_sq, e.d_peer_sq, c, d_cycles, d_rc);
	ok = !gpu_env_wait(&e, "gic loaded", 180);
	t1 = gic_now_ns();
	ok = ok && !gpu_env_read(&e, h, d_cycles, 8 * n) &&
	     !gpu_env_read(&e, rc, d_rc, sizeof(int) * (2 + nbg)) &&
	     !gpu_env_read(&e, count, c.bg_count, sizeof(count));
	for (int b = 0; b < 2 + nbg && ok; b++)
		if (rc[b]) {
			fprintf(stderr, "gic loaded: CTA %d: error %d\n", b, rc[b]);
			ok = 0;
		}
	ok = ok && check(&e, &c, count);
	gpu_env_close(&e);
	for (int i = 0; i < n; i++)
		v[i] = (double)h[i] / info->sm_mhz;
	for (int w = 0; w < nbg; w++)
		total += (double)count[w];
	gic_result_init(&r, "loaded", shared ? "gda shared queue" : "gda reserved queue", "rtt", "us");
	snprintf(r.params, sizeof(r.params), "bg_ctas=%d pace_ns=%ld queue=%s", nbg, st->pace_ns,
		 shared ? "shared" : "reserved");
	snprintf(r.note, sizeof(r.note), "probe and background through softnic");
	gpu_result_transport(&r, o->gpu_engine);
	r.validated = ok;
	gpu_samples_emit(sink, &r, v, n, o->warmup);
	gic_result_init(&r, "loaded", shared ? "gda shared queue" : "gda reserved queue",
			"background rate", "M msg/s");
	snprintf(r.params, sizeof(r.params), "bg_ctas=%d pace_ns=%ld queue=%s", nbg, st->pace_ns,
		 shared ? "shared" : "reserved");
	snprintf(r.note, sizeof(r.note), "carried while the probe ran (both directions)");
	gpu_result_transport(&r, o->gpu_engine);
	gic_result_set_value(&r, total / (double)(t1 - t0) * 1e3);
	r.validated = ok;
	gic_emit(sink, &r);
	cudaFree(d_cycles);
	cudaFree(d_rc);
	cudaFree(c.stop);
	cudaFree(c.bg_count);
	free(h);
	free(v);
	return ok ? 0 : EIO;
}

int gic_gpu_loaded(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		   gic_sink *sink)
{
	int failed = 0;

	if (st->path != GIC_LOADED_GDA) {
		fprintf(stderr, "gic loaded: --path proxy is not measured on the GPU yet\n");
		return ENOTSUP;
	}
	if (st->bg_ctas > LOADED_MAX_BG || o->iters + o->warmup > 4096 ||
	    (size_t)bg_off(o->iters + o->warmup, st->bg_ctas, 0) > LOADED_REGION) {
		fprintf(stderr, "gic loaded: at most %d background CTAs and 4096 samples on the GPU\n",
			LOADED_MAX_BG);
		return EINVAL;
	}
	if (st->queues & GIC_LOADED_SHARED)
		failed += run_mode(o, st, info, sink, 1) != 0;
	if (st->queues & GIC_LOADED_RESERVED)
		failed += run_mode(o, st, info, sink, 0) != 0;
	return failed ? EIO : 0;
}
