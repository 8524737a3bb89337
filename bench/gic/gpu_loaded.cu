/*
 * bench/gic/gpu_loaded.cu - `gic loaded` on the GPU: the round trip of a
 * probe while background CTAs load both ends (paper Figure 6, Table 11).
 *
 * PE0's probe thread (CTA 0) writes 8 bytes to PE1; PE1's responder (CTA 1)
 * answers with 8 bytes; the probe times the round trip. --bg-ctas N
 * background CTAs (one posting thread each; half on PE0 writing to PE1,
 * half on PE1 writing to PE0) stream 8-byte writes until the probe is done,
 * each pausing --pace ns between posts (0: unpaced).
 * mini-gda (softnic, the engine of --engine):
 *   shared:   the probe and PE0's writers share QP 0, the responder and
 *             PE1's writers share PE1's QP 0 (per-thread hand-off);
 *   reserved: probe and responder own QP 0; each writer owns a QP.
 * mini-proxy (-T/-R/-B per PE, default T4/R32/B16, CPU workers with K
 * chains in flight, softnic CPU engine), the baseline protocol in both
 * (several producers per ring), workers, rings and batch held fixed:
 *   shared:   the probe enqueues into ring 0; a side's j-th writer into
 *             ring j % R, so ring 0 carries background too;
 *   reserved: the probe owns ring 0; a side's j-th writer uses ring
 *             1 + j % (R - 1).
 * (Before -T/-R/-B: shared put every writer on ring 0, reserved ran the
 * tuned protocol with at most 31 writers per side.)
 * Results: the probe's rtt ("loaded rtt") and the background's carried rate
 * over the probe's span ("background rate", M msg/s). Payloads: every
 * answer, and the last write of every background slot, are checked.
 * One call runs st->path at st->bg_ctas (exp_loaded.c loops over both).
 *
 * --procs 2 (gic_gpu_loaded_pe, mini-gda): the same kernel with each PE a
 * process of its own (gpu_pair.h), each launching the CTAs of its side
 * (PE 0 the probe and the even writers, PE 1 the responder and the odd
 * ones; the others return at once); PE 1's writers stop at the
 * responder's last answer. Each PE clears its region, then (a barrier)
 * runs; the PEs swap their writers' counts (a barrier: every write has
 * completed) and each checks its own region: PE 0's check in its rows,
 * PE 1's in its verdict.
 */
#include "exp_loaded.h"
#include "gpu_common.h"
#include "gpu_pair.h"
#include "../../tests/gpu/proxy_env.h"

#include <errno.h>

enum { BG_SLOTS = 2048, LOADED_MAX_BG = GIC_LOADED_GPU_MAX_BG, LOADED_REGION = 4 << 20 };

#define DL (gic_now_ns() + ENV_DEADLINE_NS)

static __host__ __device__ uint64_t lval(uint64_t i, uint64_t tag)
{
	return (tag << 44) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x4c4c4c4c00000009ull;
}

typedef struct loaded_cfg {
	int side;         /* -1: both PEs' CTAs; 0 or 1 (--procs 2): that PE's alone */
	int n;            /* probe samples */
	int shared;       /* 1: shared queues */
	int nbg;          /* background writers (even) */
	long pace_ns;
	uint8_t *dst;     /* PE1's region: probe at [0, n*8), writers after */
	uint32_t dst_rkey;
	uint8_t *back;    /* PE0's region: answers at [0, n*8), writers after */
	uint32_t back_rkey;
	uint32_t *stop;   /* set by the probe when done */
	unsigned long long *window;   /* the probe's first sample and its stop (ns) */
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
template <int O>
static __device__ int post8(gic_sq *sq, int shared, uint64_t raddr, uint32_t rkey, uint64_t v,
			    int final, uint64_t *end)
{
	uint64_t pos;
	int rc, sig;

	if (shared) {
		rc = gic_sq_handoff_write_inline_u64(sq, raddr, rkey, v, final ? 1 : 16, 1, O, DL,
						     &pos);
		*end = pos + 1;
		return rc;
	}
	rc = gic_sq_reserve_excl(sq, 1, &pos, O, DL);
	if (rc)
		return rc;
	sig = final || (pos + 1) % 16 == 0;
	gic_wqe_write_inline_u64(sq, pos, raddr, rkey, v, sig ? GIC_CTRL_CQ_UPDATE : 0);
	if (sig)
		gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, O);
	*end = pos + 1;
	return 0;
}

/* Waits until the thread's final write (ending at end) has retired. */
template <int O>
static __device__ int drain(gic_sq *sq, int shared, uint64_t end)
{
	return gic_sq_wait_retired(sq, end, shared, O, DL);
}

/* CTA 0: the probe; CTA 1: the responder; CTAs 2..: writers (even: PE0's,
 * odd: PE1's). O: gpu_env_post_order(). */
template <int O>
__global__ void loaded_kernel(gic_sq *pe0, gic_sq *pe1, loaded_cfg c, long long *cycles, int *rc_out)
{
	int b = blockIdx.x;
	int rc = 0;

	if (c.side >= 0 && (b < 2 ? b : (b - 2) % 2) != c.side) { /* the other process's CTA */
		rc_out[b] = 0;
		return;
	}
	if (b < 2) {
		gic_sq *sq = b ? &pe1[0] : &pe0[0];
		uint64_t end = 0;

		if (b == 0)
			c.window[0] = gic_now_ns();
		for (int i = 0; i < c.n && !rc; i++) {
			long long c0 = clock64();

			if (b == 1)
				rc = gpu_wait_word((const uint64_t *)(c.dst + 8 * i), lval(i, 1));
			if (!rc)
				rc = post8<O>(sq, c.shared, (uint64_t)((b ? c.back : c.dst) + 8 * i),
					   b ? c.back_rkey : c.dst_rkey, b ? ~lval(i, 1) : lval(i, 1),
					   i + 1 == c.n, &end);
			if (!rc && b == 0)
				rc = gpu_wait_word((const uint64_t *)(c.back + 8 * i), ~lval(i, 1));
			if (b == 0)
				cycles[i] = clock64() - c0;
		}
		if (b == 0)
			c.window[1] = gic_now_ns();
		if (b == 0 || c.side == 1) /* the writers stop (PE 1's at the last answer) */
			gic_st_release_gpu_u32(c.stop, 1);
		if (!rc) /* the probe and responder drain */
			rc = drain<O>(sq, c.shared, end);
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
			rc = post8<O>(sq, c.shared, (uint64_t)(base + bg_off(c.n, w, i % BG_SLOTS)), rkey,
				   lval(i, 100 + w), final, &end);
			i += !rc;
			if (c.pace_ns && !final)
				__nanosleep((unsigned)c.pace_ns);
		}
		if (!rc)
			rc = drain<O>(sq, c.shared, end);
		c.bg_count[w] = i;
	}
	rc_out[b] = rc;
}

/* ------------------------------------------------------------------ */
/* mini-proxy on the device. */

typedef struct proxy_loaded_cfg {
	int n, nbg, rings;     /* probe samples; writers; rings per side */
	int shared;
	long pace_ns;
	gic_proxy_ring *views[2]; /* proxy k's ring views (PE k's producers) */
	const uint8_t *region[2]; /* PE k's region (answers / requests land here) */
	uint32_t *stop;
	unsigned long long *window, *bg_count;
} proxy_loaded_cfg;

/* One request on ring r of side k (baseline protocol: rings have several
 * producers), counted on counter r. */
static __device__ int proxy_put(const proxy_loaded_cfg &c, int k, int ring, uint64_t off,
				uint64_t v)
{
	gic_proxy_desc d;
	int rc = gic_proxy_desc_inline(&d, off, v, 8, (uint32_t)ring);

	if (rc)
		return rc;
	return gic_proxy_enqueue_baseline(&c.views[k][ring], &d, DL, NULL);
}

/* The ring of a side's j-th writer. */
static __host__ __device__ int proxy_writer_ring(int shared, int rings, int j)
{
	return shared ? j % rings : 1 + j % (rings - 1);
}

/* CTA 0: the probe; CTA 1: the responder; CTAs 2..: writers (even: PE0's,
 * odd: PE1's; ring 0 when shared, 1 + index when reserved). */
__global__ void proxy_loaded_kernel(proxy_loaded_cfg c, long long *cycles, int *rc_out)
{
	int b = blockIdx.x, rc = 0;
	int k = b < 2 ? b : (b - 2) % 2, w = b - 2;
	int ring = b < 2 ? 0 : proxy_writer_ring(c.shared, c.rings, w / 2);

	if (b < 2) {
		if (b == 0)
			c.window[0] = gic_now_ns();
		for (int i = 0; i < c.n && !rc; i++) {
			long long c0 = clock64();

			if (b == 1)
				rc = gpu_wait_word((const uint64_t *)(c.region[1] + 8 * i), lval(i, 1));
			if (!rc)
				rc = proxy_put(c, k, 0, 8 * (uint64_t)i, b ? ~lval(i, 1) : lval(i, 1));
			if (!rc && b == 0)
				rc = gpu_wait_word((const uint64_t *)(c.region[0] + 8 * i), ~lval(i, 1));
			if (b == 0)
				cycles[i] = clock64() - c0;
		}
		if (b == 0) {
			c.window[1] = gic_now_ns();
			gic_st_release_gpu_u32(c.stop, 1);
		}
	} else {
		uint64_t i = 0, deadline = gic_now_ns() + 60000000000ull;

		while (!rc && !gic_ld_acquire_gpu_u32(c.stop) && gic_now_ns() < deadline) {
			rc = proxy_put(c, k, ring, bg_off(c.n, w, i % BG_SLOTS), lval(i, 100 + w));
			i += !rc;
			if (c.pace_ns)
				__nanosleep((unsigned)c.pace_ns);
		}
		c.bg_count[w] = i;
	}
	rc_out[b] = rc;
}

/* ------------------------------------------------------------------ */
/* Host side. */

/* Device buffers of a run, allocated before any engine starts. */
typedef struct loaded_dev {
	long long *cycles;
	int *rc;
	uint32_t *stop;
	unsigned long long *window, *bg_count;
} loaded_dev;

static int dev_open(loaded_dev *d, int n)
{
	memset(d, 0, sizeof(*d));
	if (cudaMalloc(&d->cycles, 8 * (size_t)n) || cudaMalloc(&d->rc, sizeof(int) * (LOADED_MAX_BG + 2)) ||
	    cudaMalloc(&d->stop, 4) || cudaMalloc(&d->window, 16) ||
	    cudaMalloc(&d->bg_count, 8 * LOADED_MAX_BG) || cudaMemset(d->stop, 0, 4) ||
	    cudaMemset(d->bg_count, 0, 8 * LOADED_MAX_BG) || cudaMemset(d->window, 0, 16))
		return ENOMEM;
	return 0;
}

static void dev_close(loaded_dev *d)
{
	cudaFree(d->cycles);
	cudaFree(d->rc);
	cudaFree(d->stop);
	cudaFree(d->window);
	cudaFree(d->bg_count);
}

/* What a run brought back (host copies). */
typedef struct loaded_out {
	int n, nbg;
	long long cycles[4096];
	int rc[LOADED_MAX_BG + 2];
	unsigned long long window[2], count[LOADED_MAX_BG];
} loaded_out;

/* Checks PE pe's region x: the probes (PE 1's) or the answers (PE 0's),
 * and the last write of every slot of the writers that target it. */
static int check_region(const uint64_t *x, int pe, const loaded_out *r)
{
	for (int i = 0; i < r->n; i++)
		if (x[i] != (pe ? lval(i, 1) : ~lval(i, 1)))
			return 0;
	for (int w = pe ? 0 : 1; w < r->nbg; w += 2) {
		for (uint64_t s = 0; s < BG_SLOTS && s < r->count[w]; s++) {
			uint64_t last = s + (r->count[w] - 1 - s) / BG_SLOTS * BG_SLOTS;

			if (x[bg_off(r->n, w, s) / 8] != lval(last, 100 + w))
				return 0;
		}
	}
	return 1;
}

/* Every CTA's return code; 1 when all are 0. */
static int all_ok(const loaded_out *r)
{
	for (int b = 0; b < 2 + r->nbg; b++)
		if (r->rc[b]) {
			fprintf(stderr, "gic loaded: CTA %d: error %d\n", b, r->rc[b]);
			return 0;
		}
	return 1;
}

/* The probe's rtt row and the background's rate row, into sink (pair
 * NULL) or to the driver as PE 0 of pair (params + pair_params). */
static void emit_loaded(gic_sink *sink, gic_pair *pair, const gic_opts *o,
			const loaded_state *st, double sm_mhz, const char *path, int shared,
			const char *transport, const loaded_out *r, int ok, const char *note,
			const char *pair_params)
{
	static double v[4096];
	char name[96], params[256];
	double total = 0;
	gic_result res;

	snprintf(name, sizeof(name), "%s %s%s", path, shared ? "shared" : "reserved",
		 st->pace_ns ? " paced" : "");
	if (st->level_in_name)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), " bg=%d", st->bg_ctas);
	snprintf(params, sizeof(params), "bg_ctas=%d pace_ns=%ld queue=%s%s%s", r->nbg,
		 st->pace_ns, shared ? "shared" : "reserved", pair ? " " : "",
		 pair ? pair_params : "");
	for (int i = 0; i < r->n; i++)
		v[i] = (double)r->cycles[i] / sm_mhz;
	gic_result_init(&res, "loaded", name, "loaded rtt", "us");
	snprintf(res.params, sizeof(res.params), "%s", params);
	snprintf(res.note, sizeof(res.note), "%s", note);
	snprintf(res.transport, sizeof(res.transport), "%s", transport);
	res.validated = ok;
	gic_result_set_values(&res, v, (size_t)r->n, (size_t)o->warmup);
	gic_pair_put(pair, sink, &res);
	for (int w = 0; w < r->nbg; w++)
		total += (double)r->count[w];
	gic_result_init(&res, "loaded", name, "background rate", "M msg/s");
	snprintf(res.params, sizeof(res.params), "%s", params);
	snprintf(res.note, sizeof(res.note), "carried over the probe's span, both directions%s",
		 pair ? " (PE 1's writers: from their launch to the last answer)" : "");
	snprintf(res.transport, sizeof(res.transport), "%s", transport);
	/* Every writer's count over the probe's span (device clock): the
	 * writers start with the probe and stop at its signal. */
	gic_result_set_value(&res, r->window[1] > r->window[0]
					   ? total / (double)(r->window[1] - r->window[0]) * 1e3 : 0);
	res.validated = ok;
	gic_pair_put(pair, sink, &res);
}

/* Copies a finished run's device buffers into *r. */
static int fetch(const loaded_dev *d, loaded_out *r, int (*read)(void *, void *, const void *, size_t),
		 void *env)
{
	return read(env, r->cycles, d->cycles, 8 * (size_t)r->n) ||
	       read(env, r->rc, d->rc, sizeof(int) * (2 + (size_t)r->nbg)) ||
	       read(env, r->window, d->window, sizeof(r->window)) ||
	       read(env, r->count, d->bg_count, sizeof(r->count));
}

static int read_gpu_env(void *env, void *host, const void *from, size_t n)
{
	return gpu_env_read((gpu_env *)env, host, from, n);
}

static int read_proxy_env(void *env, void *host, const void *from, size_t n)
{
	return proxy_env_read((proxy_env *)env, host, from, n);
}

/* Reads the regions of PE 1 and PE 0 (each NULL: not in this process)
 * and checks them. */
static int check(loaded_out *r, const void *pe1, const void *pe0,
		 int (*read)(void *, void *, const void *, size_t), void *env)
{
	size_t bytes = (size_t)bg_off(r->n, r->nbg, 0);
	uint64_t *x = (uint64_t *)malloc(bytes);
	const void *region[2] = { pe0, pe1 };
	int ok = x != NULL;

	for (int pe = 1; pe >= 0 && ok; pe--)
		ok = !region[pe] || (!read(env, x, region[pe], bytes) && check_region(x, pe, r));
	if (!ok)
		fprintf(stderr, "gic loaded: a payload is wrong\n");
	free(x);
	return ok;
}

static loaded_out out; /* large: one run at a time */

/* A gda run's out (cleared) and kernel config c for side (loaded_cfg.side)
 * but its regions. */
static void gda_begin(const gic_opts *o, const loaded_state *st, int side, int shared,
		      const loaded_dev *d, loaded_cfg *c)
{
	memset(&out, 0, sizeof(out));
	out.n = o->iters + o->warmup;
	out.nbg = st->bg_ctas & ~1;
	memset(c, 0, sizeof(*c));
	c->side = side;
	c->n = out.n;
	c->shared = shared;
	c->nbg = out.nbg;
	c->pace_ns = st->pace_ns;
	c->stop = d->stop;
	c->window = d->window;
	c->bg_count = d->bg_count;
}

static int run_gda(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		   gic_sink *sink, int shared, loaded_dev *d)
{
	gpu_env_cfg cfg = { o->gpu_engine, 1 + (st->bg_ctas & ~1) / 2, 12, LOADED_REGION, 0, 8, 4 };
	loaded_cfg c;
	gpu_env e;
	int ran, ok;

	gpu_env_cfg_nic(&cfg, o);
	gda_begin(o, st, -1, shared, d, &c);
	gpu_env_open(&e, &cfg);
	c.dst = e.dst;
	c.dst_rkey = e.dst_rkey;
	c.back = e.back;
	c.back_rkey = e.back_rkey;
	cudaMemsetAsync(d->stop, 0, 4, e.stream);
	(gpu_env_post_order(&e) == GIC_ORDER_FENCE_SYS ? loaded_kernel<GIC_ORDER_FENCE_SYS>
						       : loaded_kernel<GIC_ORDER_FENCE_GPU>)
		<<<2 + out.nbg, 1, 0, e.stream>>>(e.d_sq, e.d_peer_sq, c, d->cycles, d->rc);
	ran = !gpu_env_wait(&e, "gic loaded", 180);
	ok = ran && !fetch(d, &out, read_gpu_env, &e) && all_ok(&out) &&
	     check(&out, e.dst, e.back, read_gpu_env, &e);
	gpu_env_close(&e);
	emit_loaded(sink, NULL, o, st, info->sm_mhz, "gda", shared,
		    gpu_transport_name(o, o->gpu_engine), &out, ok,
		    "probe and background through softnic", NULL);
	return ran ? 0 : EIO; /* a failed check is in the rows' verdicts */
}

/* Waits until every ring's counter shows what was enqueued on it, so that
 * the regions are final before they are checked. */
static int drain_counters(proxy_env *e, const loaded_out *r, int shared, int rings)
{
	uint64_t want[2][PROXY_ENV_RINGS] = { { 0 } }, deadline = gic_now_ns() + 10000000000ull;

	for (int k = 0; k < 2; k++)
		want[k][0] = (uint64_t)r->n;
	for (int w = 0; w < r->nbg; w++)
		want[w % 2][proxy_writer_ring(shared, rings, w / 2)] += r->count[w];
	for (int k = 0; k < 2; k++)
		for (int ring = 0; ring < PROXY_ENV_RINGS; ring++)
			while (__atomic_load_n(&e->counters[k][ring], __ATOMIC_ACQUIRE) < want[k][ring]) {
				if (gic_now_ns() > deadline) {
					fprintf(stderr, "gic loaded: PE%d ring %d: %llu of %llu done\n", k,
						ring, (unsigned long long)e->counters[k][ring],
						(unsigned long long)want[k][ring]);
					return ETIMEDOUT;
				}
				gic_cpu_relax();
			}
	return 0;
}

static int run_proxy(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		     gic_sink *sink, int shared, loaded_dev *d)
{
	int nbg = st->bg_ctas & ~1, n = o->iters + o->warmup;
	proxy_env_cfg cfg = { PROXY_NIC_CPU, 2, st->T, st->R, st->B, GIC_PROXY_BASELINE, 10,
			      (size_t)bg_off(n, nbg, 0), 0, 0, st->inflight, 0 };
	char note[160];
	proxy_loaded_cfg c;
	proxy_env e;
	int ran, ok;

	gpu_proxy_env_nic(&cfg, o);
	memset(&out, 0, sizeof(out));
	out.n = n;
	out.nbg = nbg;
	if (proxy_env_open(&e, &cfg)) {
		proxy_env_close(&e);
		return EIO;
	}
	memset(&c, 0, sizeof(c));
	c.n = n;
	c.nbg = nbg;
	c.rings = st->R;
	c.shared = shared;
	c.pace_ns = st->pace_ns;
	for (int k = 0; k < 2; k++) {
		c.views[k] = e.d_views[k];
		c.region[k] = (const uint8_t *)e.region[k];
	}
	c.stop = d->stop;
	c.window = d->window;
	c.bg_count = d->bg_count;
	cudaMemsetAsync(d->stop, 0, 4, e.stream);
	cudaMemsetAsync(d->bg_count, 0, 8 * LOADED_MAX_BG, e.stream);
	proxy_loaded_kernel<<<2 + nbg, 1, 0, e.stream>>>(c, d->cycles, d->rc);
	ran = !proxy_env_wait(&e, "gic loaded proxy", 180);
	ok = ran && !fetch(d, &out, read_proxy_env, &e) && all_ok(&out) &&
	     !drain_counters(&e, &out, shared, st->R) &&
	     check(&out, e.region[1], e.region[0], read_proxy_env, &e);
	proxy_env_close(&e);
	snprintf(note, sizeof(note), "T%d/R%d/B%d K%d, baseline protocol (both queues; reserved ran "
		 "tuned before): probe ring 0, writers rings %s", st->T, st->R, st->B, st->inflight,
		 shared ? "0..R-1" : "1..R-1");
	emit_loaded(sink, NULL, o, st, info->sm_mhz, "proxy", shared, gpu_transport_name(o, 0),
		    &out, ok, note, NULL);
	return ran ? 0 : EIO;
}

int gic_gpu_loaded(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		   gic_sink *sink)
{
	int n = o->iters + o->warmup, failed = 0;
	loaded_dev d;

	if (st->bg_ctas > LOADED_MAX_BG || n > 4096 ||
	    (size_t)bg_off(n, st->bg_ctas, 0) > LOADED_REGION) {
		fprintf(stderr, "gic loaded: at most %d background CTAs and 4096 samples on the GPU\n",
			LOADED_MAX_BG);
		return EINVAL;
	}
	if (info->sm_mhz <= 0)
		return ENODEV;
	/* Every CUDA allocation before the engine starts (docs/DESIGN.md §4.5). */
	if (dev_open(&d, n)) {
		dev_close(&d);
		return ENOMEM;
	}
	for (int shared = 1; shared >= 0; shared--) {
		if (!(st->queues & (shared ? GIC_LOADED_SHARED : GIC_LOADED_RESERVED)))
			continue;
		failed += (st->path == GIC_LOADED_PROXY ? run_proxy(o, st, info, sink, shared, &d)
							: run_gda(o, st, info, sink, shared, &d)) != 0;
	}
	dev_close(&d);
	return failed ? EIO : 0;
}

/* ------------------------------------------------------------------ */
/* --procs 2 in GPU mode (gic_gpu_loaded_pe): mini-gda, each PE's CTAs in
 * its process (see the top), PE 1's region the probes' and even writers'
 * destination, PE 0's the answers' and odd writers'. Each PE's engine
 * has half the one-process engine's warps (4 x 4 blocks x warps; the
 * same engine warps on the GPU). */

enum { LOADED_PAIR_ENGINE_BLOCKS = 4, LOADED_PAIR_ENGINE_WARPS = 4 };

/* One queue's run as this PE of pair: its phase. 0, or an errno when the
 * pair could not open (the peer is then out of step). */
static int run_gda_pe(gic_pair *pair, const gic_opts *o, const loaded_state *st, double sm_mhz,
		      int shared, loaded_dev *d, gpu_env *e)
{
	int rank = gic_pair_rank(pair), ok, ran, rc;
	/* PE 1's rings of 16 BBs, as the one-process fixture's PE 1 (gpu_env's
	 * peer QPs), PE 0's of 2^12. */
	gpu_pair_cfg pc = { o->device, 1 + (st->bg_ctas & ~1) / 2, rank ? 4 : 12, LOADED_REGION,
			    LOADED_PAIR_ENGINE_BLOCKS, LOADED_PAIR_ENGINE_WARPS };
	unsigned long long theirs[LOADED_MAX_BG] = { 0 };
	char params[96];
	loaded_cfg c;
	gpu_pair_pe P;

	gda_begin(o, st, rank, shared, d, &c);
	rc = gpu_pair_open(&P, pair, "loaded", &pc);
	if (rc) {
		gpu_pair_finish(&P, pair);
		return rc;
	}
	gpu_pair_env(&P, e);
	if (rank == 0 && !P.mps)
		gpu_pair_warn_mps("loaded");
	gpu_pair_region(&P, 1, &c.dst, &c.dst_rkey);
	gpu_pair_region(&P, 0, &c.back, &c.back_rkey);
	ok = cudaMemsetAsync(P.region, 0, (size_t)bg_off(out.n, out.nbg, 0), P.stream) ==
		     cudaSuccess &&
	     cudaMemsetAsync(d->stop, 0, 4, P.stream) == cudaSuccess &&
	     cudaMemsetAsync(d->bg_count, 0, 8 * LOADED_MAX_BG, P.stream) == cudaSuccess &&
	     !gpu_pair_wait(&P, "clearing the region", 10);
	gpu_pair_sync(pair); /* both regions cleared */
	if (ok)
		loaded_kernel<GIC_ORDER_FENCE_GPU><<<2 + out.nbg, 1, 0, P.stream>>>(
			rank ? NULL : P.d_sq, rank ? P.d_sq : NULL, c, d->cycles, d->rc);
	ran = ok && cudaGetLastError() == cudaSuccess && !gpu_pair_wait(&P, "the kernel", 180);
	ok = ran && !fetch(d, &out, read_gpu_env, e) && all_ok(&out);
	/* A barrier too: both PEs' writes have completed. */
	gic_pair_exchange_late(pair, out.count, theirs, sizeof(out.count));
	for (int w = 1 - rank; w < out.nbg; w += 2) /* the other PE's writers */
		out.count[w] = theirs[w];
	ok = ok && check(&out, rank ? P.region : NULL, rank ? NULL : P.region, read_gpu_env, e);
	snprintf(params, sizeof(params), "procs=2 engine=%dx%d mps=%d", LOADED_PAIR_ENGINE_BLOCKS,
		 LOADED_PAIR_ENGINE_WARPS, P.mps);
	if (rank == 0)
		emit_loaded(NULL, pair, o, st, sm_mhz, "gda", shared, "softnic-gpu", &out, ok,
			    P.mps ? "probe and background through softnic; PE 1 another process "
				    "(GPU peers), MPS"
				  : "probe and background through softnic; PE 1 another process "
				    "(GPU peers), no MPS: kernels time-slice", params);
	gic_pair_phase_done(pair, ok);
	gpu_pair_finish(&P, pair);
	return 0; /* a failed check is in the rows' verdicts */
}

int gic_gpu_loaded_pe(gic_pair *pair, const gic_opts *o, const loaded_state *st)
{
	int n = o->iters + o->warmup, rank = gic_pair_rank(pair), rc = 0;
	gpu_env *e = (gpu_env *)calloc(1, sizeof(gpu_env));
	char gpu[128];
	double mhz = 0;
	loaded_dev d;

	if (st->path != GIC_LOADED_GDA || st->bg_ctas < 0 || st->bg_ctas > LOADED_MAX_BG ||
	    n < 1 || n > GIC_LOADED_GPU_MAX_SAMPLES || !e) {
		fprintf(stderr, "gic loaded: PE%d: a malformed job\n", rank);
		free(e);
		return EPROTO;
	}
	if (gic_gpu_available(gpu, sizeof(gpu), &mhz, o->device) || mhz <= 0) {
		fprintf(stderr, "gic loaded: PE%d: no GPU %d\n", rank, o->device);
		free(e);
		return ENODEV; /* this PE ends; the driver stops the other */
	}
	/* Every CUDA allocation before an engine starts (docs/DESIGN.md §4.5). */
	if (dev_open(&d, n)) {
		fprintf(stderr, "gic loaded: PE%d: out of GPU memory\n", rank);
		rc = ENOMEM; /* this PE ends; the driver stops the other */
	}
	for (int shared = 1; shared >= 0 && !rc; shared--)
		if (st->queues & (shared ? GIC_LOADED_SHARED : GIC_LOADED_RESERVED))
			rc = run_gda_pe(pair, o, st, mhz, shared, &d, e);
	dev_close(&d);
	free(e);
	return rc;
}
