/*
 * bench/gic/gpu_payload.cu - `gic payload` on the GPU: pipelined goodput
 * against payload size (paper Figure 8).
 *
 * gda: one GPU thread owns a QP and posts -n pointer writes of each size
 * from PE0's source to PE1's region, keeping at most --window of them
 * outstanding (a CQE every window/4 writes retires them; at most one per
 * destination slot of the 64 MiB region). proxy: a mini-proxy of -T
 * workers, -R rings and -B per doorbell (default T1/R1/B16); producer CTA b
 * (one thread) enqueues writes i = b, b + R, ... as pointer requests into
 * ring b (the ring's slots bound what is outstanding) and waits for its
 * counter; the spans run from the first CTA's start to the last one's end. Goodput is bytes over the time from the first post to the last
 * completion (GB/s). Write i lands in slot i % slots of the region; every
 * slot is checked afterwards. The data moves through softnic's engine: these
 * are softnic numbers (memory copies by the engine), not a NIC's.
 */
#include "exp_payload.h"
#include "gpu_common.h"
#include "gpu_pair.h"
#include "../../tests/gpu/proxy_env.h"

#include <errno.h>

/* Bytes of each region: 64 MiB for one QP; 256 MiB for several, so that
 * 64 QPs still keep 4 writes of 1 MiB in flight each. */
enum { PAYLOAD_REGION = 64 << 20, PAYLOAD_REGION_QPS = 256 << 20 };

#define DL (gic_now_ns() + ENV_DEADLINE_NS)

static __host__ __device__ uint8_t pbyte(uint64_t i, uint64_t j)
{
	return (uint8_t)((i * 131u) ^ (j * 7u) ^ (j >> 8) ^ 0x5du);
}

typedef struct span2 {
	unsigned long long t0, t1;
	int rc;
	int pad;
} span2;

/* CTA b (one thread) posts on QP b: write i copies source slot
 * b * slots + i % slots to the same destination slot; out[b] its span. O:
 * gpu_env_post_order(). */
template <int O>
__global__ void payload_gda_kernel(gic_sq *gs, uint8_t *dst, uint32_t rkey, const uint8_t *src,
				   uint32_t lkey, uint32_t size, int n, int slots, int window,
				   span2 *outs)
{
	gic_sq *g = &gs[blockIdx.x];
	span2 *out = &outs[blockIdx.x];
	gic_sq s;
	gic_cq cq;
	int every = window / 4 > 0 ? window / 4 : 1, rc = 0;

	dst += (uint64_t)blockIdx.x * slots * size;
	src += (uint64_t)blockIdx.x * slots * size;
	gic_sq_local_begin(&s, &cq, g);
	out->t0 = gic_now_ns();
	for (int i = 0; i < n && !rc; i++) {
		uint64_t pos, off = (uint64_t)(i % slots) * size;
		int sig = (i + 1) % every == 0 || i + 1 == n;

		if (s.resv >= (uint64_t)window)
			rc = gic_sq_wait_retired(&s, s.resv + 1 - window, 0, O, DL);
		if (!rc)
			rc = gic_sq_reserve_excl(&s, 1, &pos, O, DL);
		if (rc)
			break;
		gic_wqe_write(&s, pos, GIC_OPCODE_RDMA_WRITE, (uint64_t)(dst + off), rkey,
			      (uint64_t)(src + off), lkey, size, sig ? GIC_CTRL_CQ_UPDATE : 0, 0);
		if (sig)
			gic_sq_note_signaled(&s, pos + 1, 0);
		gic_sq_publish_excl(&s, O);
	}
	if (!rc)
		rc = gic_sq_quiet(&s, O, DL);
	out->t1 = gic_now_ns();
	out->rc = rc;
	gic_sq_local_end(g, &s);
}

/* The same through mini-proxy: pointer requests, CTA b the producer of
 * ring b (writes b, b + R, ...), counted on counter b. */
__global__ void payload_proxy_kernel(gic_proxy_ring *g, const uint64_t *counters, uint32_t size,
				     int n, int slots, span2 *out)
{
	int b = blockIdx.x, rings = gridDim.x, mine = 0, rc = 0;
	gic_proxy_ring r = g[b];
	uint64_t deadline = gic_now_ns() + 60000000000ull;

	out[b].t0 = gic_now_ns();
	for (int i = b; i < n && !rc; i += rings, mine++) {
		gic_proxy_desc d;
		uint64_t off = (uint64_t)(i % slots) * size;

		rc = gic_proxy_desc_pointer(&d, off, off, size, (uint32_t)b);
		if (!rc)
			rc = gic_proxy_enqueue_tuned(&r, &d, deadline, NULL);
	}
	if (!rc)
		rc = gic_proxy_wait_counter(&r, &counters[b], (uint64_t)mine, deadline);
	out[b].t1 = gic_now_ns();
	out[b].rc = rc;
	g[b] = r;
}

/* ------------------------------------------------------------------ */

/* Host patterns: fills (check 0) or verifies (check 1) n_slots slots of
 * size bytes; the slot k was last written by write i = the largest i < n
 * with i % slots == k, and every write copies the source slot, so the
 * destination must equal the source pattern. */
static int pattern(uint8_t *h, uint32_t size, int slots, int check)
{
	for (int k = 0; k < slots; k++)
		for (uint32_t j = 0; j < size; j++) {
			uint8_t want = pbyte((uint64_t)k, j);
			uint8_t *p = &h[(size_t)k * size + j];

			if (!check)
				*p = want;
			else if (*p != want) {
				fprintf(stderr, "gic payload: size %u slot %d byte %u wrong\n", size, k, j);
				return 0;
			}
		}
	return 1;
}

static int gda_slots(const payload_state *st, const gic_opts *o, size_t region, uint32_t size);

/* One size's row, into sink (pair NULL) or to the driver as PE 0 of pair
 * (--procs 2 in GPU mode; mps: whether MPS shared the device). */
static void emit_goodput(gic_sink *sink, gic_pair *pair, int mps, const gic_opts *o,
			 const char *path, uint32_t size, const payload_state *st,
			 const double *gbps, int n, int valid)
{
	gic_result r;
	char name[96];

	int per = (int)(PAYLOAD_REGION / size);

	if (st->path == GIC_PAYLOAD_GDA) /* the gda path's destination slots per QP */
		per = gda_slots(st, o, st->qps > 1 ? PAYLOAD_REGION_QPS : PAYLOAD_REGION, size);
	if (st->path == GIC_PAYLOAD_GDA && st->qps > 1)
		snprintf(name, sizeof(name), "%s qps=%d size=%u", path, st->qps, size);
	else
		snprintf(name, sizeof(name), "%s size=%u", path, size);
	gic_result_init(&r, "payload", name, "goodput", "GB/s");
	snprintf(r.params, sizeof(r.params), "size=%u writes=%d window=%d path=%s", size, o->iters,
		 st->window < per ? st->window : per, path);
	gic_result_flag_params(&r, &gic_payload_flags, st,
			       st->path == GIC_PAYLOAD_GDA ? "qps reps" : "T R B");
	if (st->path == GIC_PAYLOAD_GDA)
		gic_result_param(&r, "engine=%dx%d", st->engine_blocks ? st->engine_blocks : 4,
				 st->engine_warps ? st->engine_warps : 4);
	if (st->path == GIC_PAYLOAD_PROXY)
		gic_result_param(&r, "protocol=tuned");
	if (pair)
		gic_result_param(&r, "procs=2 mps=%d", mps);
	snprintf(r.note, sizeof(r.note), "bytes copied by softnic's engine: not a NIC number%s",
		 pair ? "; into another process's GPU memory (GPU peers)" : "");
	gpu_result_transport(&r, o, st->path == GIC_PAYLOAD_PROXY ? 0 : o->gpu_engine);
	r.validated = valid;
	gic_result_set_values(&r, gbps, (size_t)n, 0);
	gic_pair_put(pair, sink, &r);
}

/* Destination slots per QP at size (each QP its own range of the region). */
static int gda_slots(const payload_state *st, const gic_opts *o, size_t region, uint32_t size)
{
	size_t per = region / (size_t)st->qps / size;

	return (int)(per < (size_t)o->iters ? per : (size_t)o->iters);
}

/* One run of one size through mini-gda on st->qps QPs (a poster CTA
 * each); returns the goodput (GB/s: every QP's bytes over the first post
 * to the last completion) or 0; *valid: every destination slot checked
 * after the run. */
/* A run's preparation: the source's pattern (src) and the destination
 * cleared (dst), all slots of size bytes; 1 when both went well. */
static int gda_prepare(gpu_env *e, uint32_t size, int all, uint8_t *h, int src, int dst)
{
	pattern(h, size, all, 0);
	if (src && gpu_env_write(e, e->src, h, (size_t)all * size))
		return 0;
	memset(h, 0, (size_t)all * size);
	return !dst || !gpu_env_write(e, e->dst, h, (size_t)all * size);
}

/* After a run: every destination slot holds its source slot's pattern. */
static int gda_check(gpu_env *e, uint32_t size, int all, uint8_t *h)
{
	return !gpu_env_read(e, h, e->dst, (size_t)all * size) && pattern(h, size, all, 1);
}

/* The prepared run: the posters, then the goodput (GB/s) or 0. */
static double gda_time(gpu_env *e, const gic_opts *o, const payload_state *st, uint32_t size,
		       int slots, span2 *d)
{
	unsigned long long t0 = ~0ull, t1 = 0;
	span2 sp[64];

	/* Writes in flight never share a destination slot: softnic runs a
	 * batch whose destinations overlap one WQE at a time, in order. */
	(gpu_env_post_order(e) == GIC_ORDER_FENCE_SYS ? payload_gda_kernel<GIC_ORDER_FENCE_SYS>
						       : payload_gda_kernel<GIC_ORDER_FENCE_GPU>)
		<<<st->qps, 1, 0, e->stream>>>(e->d_sq, e->dst, e->dst_rkey, e->src, e->src_lkey,
					       size, o->iters, slots,
					       st->window < slots ? st->window : slots, d);
	if (gpu_env_wait(e, "gic payload", 120) ||
	    gpu_env_read(e, sp, d, sizeof(span2) * (size_t)st->qps))
		return 0;
	for (int q = 0; q < st->qps; q++) {
		if (sp[q].rc) {
			fprintf(stderr, "gic payload: size %u QP %d: error %d (%s)\n", size, q,
				sp[q].rc, gpu_env_qp_error(e, q));
			return 0;
		}
		t0 = sp[q].t0 < t0 ? sp[q].t0 : t0;
		t1 = sp[q].t1 > t1 ? sp[q].t1 : t1;
	}
	return (double)o->iters * st->qps * size / (double)(t1 - t0);
}

static double gda_size(gpu_env *e, const gic_opts *o, const payload_state *st, uint32_t size,
		       size_t region, uint8_t *h, span2 *d, int *valid)
{
	int slots = gda_slots(st, o, region, size), all = slots * st->qps;
	double g;

	*valid = 0;
	if (slots < 1 || !gda_prepare(e, size, all, h, 1, 1))
		return 0;
	g = gda_time(e, o, st, size, slots, d);
	*valid = g > 0 && gda_check(e, size, all, h);
	return g;
}

/* The median of v[0..n) (n <= 100; v unchanged). */
static double median_of(const double *v, int n)
{
	double t[100];

	memcpy(t, v, sizeof(double) * (size_t)n);
	for (int i = 1; i < n; i++) /* insertion sort: n is small */
		for (int j = i; j > 0 && t[j - 1] > t[j]; j--) {
			double x = t[j];

			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* st->reps runs of one size (gda_size); the goodputs in g, *valid the
 * AND of every run's check. Returns the runs done. */
static int gda_reps(gpu_env *e, const gic_opts *o, const payload_state *st, uint32_t size,
		    size_t region, uint8_t *h, span2 *d, double *g, int *valid)
{
	int n = 0, ok = 1;

	for (int r = 0; r < st->reps; r++) {
		int v = 0;

		g[n++] = gda_size(e, o, st, size, region, h, d, &v);
		ok &= v;
		if (!v)
			break;
	}
	*valid = ok;
	return n;
}

/* One size through mini-proxy on a fresh fixture. */
static double proxy_size(const gic_opts *o, const payload_state *st, uint32_t size, uint8_t *h,
			 span2 *d, int *valid)
{
	int slots = (int)(PAYLOAD_REGION / size) < o->iters ? (int)(PAYLOAD_REGION / size) : o->iters;
	proxy_env_cfg cfg = { PROXY_NIC_CPU, 1, st->T, st->R, st->B, GIC_PROXY_TUNED, 8,
			      PAYLOAD_REGION, 0, 0 };
	double gbps = 0;
	span2 sp[GIC_PROXY_MAX_RINGS];
	proxy_env e;

	gpu_proxy_env_nic(&cfg, o);
	if (proxy_env_open(&e, &cfg)) {
		proxy_env_close(&e);
		return 0;
	}
	pattern(h, size, slots, 0);
	if (!proxy_env_write(&e, e.src[0], h, (size_t)slots * size)) {
		unsigned long long t0 = ~0ull, t1 = 0;
		int rc = 0;

		payload_proxy_kernel<<<st->R, 1, 0, e.stream>>>(e.d_views[0], e.counters[0], size,
								 o->iters, slots, d);
		if (proxy_env_wait(&e, "gic payload proxy", 120) ||
		    proxy_env_read(&e, sp, d, sizeof(span2) * st->R))
			rc = EIO;
		for (int b = 0; b < st->R && !rc; b++) {
			rc = sp[b].rc;
			t0 = sp[b].t0 < t0 ? sp[b].t0 : t0;
			t1 = sp[b].t1 > t1 ? sp[b].t1 : t1;
		}
		if (!rc) {
			gbps = (double)o->iters * size / (double)(t1 - t0);
			*valid = !proxy_env_read(&e, h, e.region[1], (size_t)slots * size) &&
				 pattern(h, size, slots, 1);
		} else {
			fprintf(stderr, "gic payload: proxy size %u failed (%s)\n", size,
				gic_proxy_error(e.proxy[0]));
		}
	}
	proxy_env_close(&e);
	return gbps;
}

/* The sizes to run: -b/-e/-f when given, else 8 B .. 1 MiB by 2 (Figure
 * 8); sizes out of range are said and left out. The count (<= 64). */
static int payload_sizes(const gic_opts *o, const payload_state *st, uint32_t sizes[64])
{
	double first = o->given & GIC_GIVEN_B ? (double)o->size_begin : 8;
	double last = o->given & GIC_GIVEN_E ? (double)o->size_end : (double)(1 << 20);
	double factor = o->given & GIC_GIVEN_F ? o->size_factor : 2;
	int n = 0;

	for (double sz = first; sz <= last && n < 64; sz *= factor) {
		uint32_t size = (uint32_t)sz;

		if (size < 1 || size > PAYLOAD_REGION ||
		    (st->path == GIC_PAYLOAD_PROXY && size > GIC_PROXY_DESC_MAX_LENGTH)) {
			fprintf(stderr, "gic payload: size %u skipped (1..%d bytes; a proxy request "
				"carries at most %u)\n", size, PAYLOAD_REGION,
				(unsigned)GIC_PROXY_DESC_MAX_LENGTH);
			continue;
		}
		sizes[n++] = size;
	}
	return n;
}

/* The smallest size from which every larger one keeps 90% of the
 * reference ref (one dip above it moves the point up), into sink or to
 * the driver (pair); nothing when no size reaches it. */
static void emit_first90(gic_sink *sink, gic_pair *pair, const gic_opts *o,
			 const payload_state *st, const char *path, const uint32_t *sizes,
			 const double *good, int nsz, double ref, int valid)
{
	int from = nsz;
	gic_result r;
	char name[64];

	while (from > 0 && ref > 0 && good[from - 1] >= 0.9 * ref)
		from--;
	if (from >= nsz)
		return;
	if (st->path == GIC_PAYLOAD_GDA && st->qps > 1)
		snprintf(name, sizeof(name), "%s qps=%d", path, st->qps);
	else
		snprintf(name, sizeof(name), "%s", path);
	gic_result_init(&r, "payload", name, "first size at 90% of own max", "B");
	snprintf(r.params, sizeof(r.params), "reference_gbps=%.6f", ref);
	if (pair)
		gic_result_param(&r, "procs=2");
	gpu_result_transport(&r, o, st->path == GIC_PAYLOAD_PROXY ? 0 : o->gpu_engine);
	gic_result_set_value(&r, sizes[from]);
	r.validated = valid;
	gic_pair_put(pair, sink, &r);
}

static size_t payload_region(const payload_state *st)
{
	return st->path == GIC_PAYLOAD_GDA && st->qps > 1 ? PAYLOAD_REGION_QPS : PAYLOAD_REGION;
}

int gic_gpu_payload(const gic_opts *o, const payload_state *st, const gic_run_info *info,
		    gic_sink *sink)
{
	size_t region = payload_region(st);
	gpu_env_cfg cfg = { o->gpu_engine, st->path == GIC_PAYLOAD_GDA ? st->qps : 1, 12, region, 0,
			    st->engine_blocks ? st->engine_blocks : 4,
			    st->engine_warps ? st->engine_warps : 4 };
	const char *path = st->path == GIC_PAYLOAD_PROXY ? "proxy" : "gda";
	uint8_t *h = (uint8_t *)malloc(region);
	double ref = 0, good[64];
	uint32_t sizes[64];
	int nsz = payload_sizes(o, st, sizes), failed = 0;
	span2 *d;
	gpu_env e;

	(void)info;
	gpu_env_cfg_nic(&cfg, o);
	if (!h || cudaMalloc(&d, sizeof(span2) * 64) != cudaSuccess) {
		free(h);
		return ENOMEM;
	}
	if (st->path == GIC_PAYLOAD_GDA)
		gpu_env_open(&e, &cfg);
	for (int k = 0; k < nsz; k++) {
		uint32_t size = sizes[k];
		int valid = 0, runs = 1;
		double gs[100];

		gic_progress("payload", k, 0, path);
		if (st->path == GIC_PAYLOAD_GDA) {
			runs = gda_reps(&e, o, st, size, region, h, d, gs, &valid);
			good[k] = median_of(gs, runs); /* the size's value for the 90% point */
		} else {
			gs[0] = good[k] = proxy_size(o, st, size, h, d, &valid);
		}
		emit_goodput(sink, NULL, 0, o, path, size, st, gs, runs, valid);
		failed += !valid;
		if (st->reference ? size == st->reference : 1)
			ref = good[k]; /* the largest size run, unless --reference names one */
	}
	if (st->path == GIC_PAYLOAD_GDA)
		gpu_env_close(&e);
	cudaFree(d);
	free(h);
	emit_first90(sink, NULL, o, st, path, sizes, good, nsz, ref, !failed);
	return 0; /* a failed check is in the rows' verdicts */
}

/* ------------------------------------------------------------------ */
/* --procs 2 in GPU mode (gic_gpu_payload_pe): the gda path with PE 1 a
 * process of its own (gpu_pair.h). PE 0's posters copy from its region
 * (the source) into PE 1's, through PE 0's GPU engine (as many warps as
 * in one process) and softnic's GPU peers; PE 1 (a one-warp engine, idle)
 * clears its region before each run and checks every slot after it, for
 * its verdict of the size. The kernel and the timing are gda_time's. */

/* One size: st->reps runs (each bracketed by two barriers: PE 1's region
 * cleared; PE 0's posters done); the goodputs in g (PE 0), *valid the
 * AND of this PE's checks. The runs done (PE 0; PE 1: st->reps). */
static int pair_size(gic_pair *pair, gpu_env *e, const gic_opts *o, const payload_state *st,
		     uint32_t size, uint8_t *h, span2 *d, double *g, int *valid)
{
	int rank = gic_pair_rank(pair), slots = gda_slots(st, o, payload_region(st), size);
	int all = slots * st->qps, n = 0, ok = slots >= 1;

	for (int k = 0; k < st->reps; k++) { /* every run on both PEs: the barriers pair up */
		int got = ok && gda_prepare(e, size, all, h, rank == 0, rank == 1);

		gpu_pair_sync(pair);
		if (rank == 0 && got)
			got = (g[n++] = gda_time(e, o, st, size, slots, d)) > 0;
		gpu_pair_sync(pair);
		if (rank == 1 && got)
			got = gda_check(e, size, all, h);
		ok = ok && got;
	}
	*valid = ok;
	return rank == 0 ? n : st->reps;
}

static int payload_pe_run(gic_pair *pair, const gic_opts *o, const payload_state *st,
			  gpu_pair_pe *P, gpu_env *e, uint8_t *h, span2 *d)
{
	uint32_t sizes[64];
	double good[64], gs[100], ref = 0;
	int nsz = payload_sizes(o, st, sizes), failed = 0, rank = gic_pair_rank(pair);

	for (int k = 0; k < nsz; k++) {
		int valid = 0, runs = pair_size(pair, e, o, st, sizes[k], h, d, gs, &valid);

		good[k] = rank == 0 && runs ? median_of(gs, runs) : 0;
		if (rank == 0 && runs)
			emit_goodput(NULL, pair, P->mps, o, "gda", sizes[k], st, gs, runs, valid);
		gic_pair_phase_done(pair, valid);
		failed += !valid;
		if (st->reference ? sizes[k] == st->reference : 1)
			ref = good[k];
	}
	if (rank == 0)
		emit_first90(NULL, pair, o, st, "gda", sizes, good, nsz, ref, !failed);
	gic_pair_phase_done(pair, !failed);
	return 0; /* a failed check is in the rows' verdicts */
}

int gic_gpu_payload_pe(gic_pair *pair, const gic_opts *o, const payload_state *st)
{
	int rank = gic_pair_rank(pair), rc;
	size_t region = payload_region(st);
	gpu_pair_cfg pc = { o->device, st->qps, 12, region,
			    rank ? 1 : st->engine_blocks ? st->engine_blocks : 4,
			    rank ? 1 : st->engine_warps ? st->engine_warps : 4 };
	uint8_t *h = (uint8_t *)malloc(region);
	gpu_env *e = (gpu_env *)calloc(1, sizeof(gpu_env));
	span2 *d = NULL;
	gpu_pair_pe P;
	char gpu[128];
	double mhz = 0;

	if (st->path != GIC_PAYLOAD_GDA || st->qps > GPU_PAIR_MAX_QPS) {
		fprintf(stderr, "gic payload: PE%d: a malformed job\n", rank);
		free(h);
		free(e);
		return EPROTO;
	}
	if (gic_gpu_available(gpu, sizeof(gpu), &mhz, o->device)) {
		fprintf(stderr, "gic payload: PE%d: no GPU %d\n", rank, o->device);
		free(h);
		free(e);
		return ENODEV; /* this PE ends; the driver stops the other */
	}
	/* Every CUDA allocation before the engine starts (docs/DESIGN.md §4.5). */
	if (!h || !e || cudaMalloc(&d, sizeof(span2) * 64) != cudaSuccess) {
		fprintf(stderr, "gic payload: PE%d: out of memory\n", rank);
		rc = gpu_pair_open_failed(&P, pair, "payload", ENOMEM);
	} else {
		rc = gpu_pair_open(&P, pair, "payload", &pc);
	}
	if (!rc) {
		gpu_pair_env(&P, e); /* PE 0's region is the source; PE 1's the destination */
		if (rank == 0 && !P.mps)
			gpu_pair_warn_mps("payload");
		rc = payload_pe_run(pair, o, st, &P, e, h, d);
	}
	gpu_pair_finish(&P, pair);
	cudaFree(d);
	free(e);
	free(h);
	return rc;
}
