/*
 * bench/gic/exp_loaded.c - `gic loaded` (exp_loaded.h): parsing and the
 * host mode.
 *
 * Host mode: background host threads (at most HOST_MAX_BG, alternating
 * between PE0 and PE1) stream 8-byte writes into their own slots until
 * told to stop; meanwhile a probe thread on PE0 and a responder on PE1
 * ping-pong one word. gda path: the background shares each PE's QP 0 by
 * per-thread hand-off; the probe posts on QP 0 too (shared) or on QP 1
 * (reserved). proxy path: a mini-proxy per direction (-T/-R/-B, default
 * T1/R2/B16, baseline protocol, so that rings may have several producers);
 * the probe uses ring 0, a PE's j-th background thread ring j % R
 * (shared) or 1 + j % (R - 1) (reserved).
 * Results: the probe's round trip, and the background rate carried while
 * the probe ran. The probe's values and every background slot are checked.
 *
 * The driver runs each path asked for (gda, proxy: in this process, host
 * or GPU mode; nvshmem: GPU only, in PEs of their own, nvshmem_pe.h) at
 * each level of --bg-ctas.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_loaded.h"
#include "gic.h"
#include "host.h"
#include "nvshmem_pe.h"

#define SUB "loaded"
enum { HOST_MAX_BG = 2, BG_SLOTS = 64, BG_BASE = 4096, LD_SIGNAL = 16 };

static const char help[] =
	"  --bg-ctas L    background CTAs (GPU) or threads (host, at most 2): a level,\n"
	"                 or up to 8 comma-separated levels, each run in turn (0..1024;\n"
	"                 default 64; GPU at most 254)\n"
	"  --queue Q      shared | reserved | both: the probe shares the background's\n"
	"                 queue, or owns one (default both)\n"
	"  --pace NS      gap between a background writer's posts in ns (0: unpaced)\n"
	"  -T N, -R N, -B N\n"
	"                 --path proxy: workers (1..16), rings (2..32, >= T), batch (1..16)\n"
	"                 of each PE's mini-proxy; default T4/R32/B16 (GPU), T1/R2/B16\n"
	"                 (host). Shared and reserved both run the baseline protocol: the\n"
	"                 probe on ring 0, writers on rings 0..R-1 (shared) or 1..R-1\n"
	"  --inflight K   --path proxy: chains each worker keeps posted (1..32; default 8)\n"
	"  --path P       gda | proxy | nvshmem (repeatable; default gda).\n"
	"                 nvshmem: the NVSHMEM path between two GPUs (PE r on CUDA\n"
	"                 device r, one process each): nvshmem_p round trip while\n"
	"                 background CTAs stream nvshmem_putmem_nbi; GPU mode only;\n"
	"                 one GPU: both PEs on it with NVSHMEM_DISABLE_P2P=1 and a NIC\n"
	"                 transport, else says so, skips, exit status 0; a binary\n"
	"                 built without NVSHMEM: says so, exit status 2\n";

static const char *const path_names[] = { "gda", "proxy", "nvshmem" };

static int loaded_flag(loaded_state *st, int argc, char **argv, int *i)
{
	const char *arg = argv[*i], *val;
	long v;
	int idx;

	if (!gic_arg_is(arg, "--bg-ctas") && !gic_arg_is(arg, "--queue") &&
	    !gic_arg_is(arg, "--pace") && !gic_arg_is(arg, "--path") && !gic_arg_is(arg, "-T") &&
	    !gic_arg_is(arg, "-R") && !gic_arg_is(arg, "-B") && !gic_arg_is(arg, "--inflight"))
		return gic_arg_unknown(SUB, arg);
	if (!(val = gic_arg_value(SUB, argc, argv, i)))
		return EINVAL;
	/* -R from 2: the reserved probe owns ring 0, the writers need another. */
	if (gic_arg_is(arg, "-T") || gic_arg_is(arg, "-R") || gic_arg_is(arg, "-B"))
		return gic_arg_proxy_shape(SUB, arg, val, 2, &st->T, &st->R, &st->B);
	if (gic_arg_is(arg, "--inflight")) {
		if (gic_arg_int(SUB, "--inflight", val, 1, GIC_PROXY_MAX_INFLIGHT, &v))
			return EINVAL;
		return st->inflight = (int)v, 0;
	}
	if (gic_arg_is(arg, "--bg-ctas"))
		return gic_arg_int_list(SUB, "--bg-ctas", val, 0, 1024, st->levels,
					GIC_LOADED_MAX_LEVELS, &st->nlevels);
	if (gic_arg_is(arg, "--pace")) {
		if (gic_arg_int(SUB, "--pace", val, 0, 1000000000, &v))
			return EINVAL;
		return st->pace_ns = v, 0;
	}
	if (gic_arg_is(arg, "--queue")) {
		if (gic_arg_choice(SUB, "--queue", val,
				   (const char *const[]){ "shared", "reserved", "both" }, 3, &idx))
			return EINVAL;
		return st->queues = idx == 2 ? 3u : 1u << idx, 0;
	}
	if (!strcmp(val, "nvshmem") && !gic_nvshmem_built())
		return gic_nvshmem_not_built(SUB, "--path", val);
	return gic_arg_choice_bits(SUB, "--path", val, path_names, 3, 0, &st->paths);
}

static int loaded_parse(int argc, char **argv, void **state)
{
	loaded_state *st = calloc(1, sizeof(*st));

	if (!st)
		return ENOMEM;
	for (int i = 1; i < argc; i++) {
		if (loaded_flag(st, argc, argv, &i)) {
			free(st);
			return EINVAL;
		}
	}
	if (!st->nlevels)
		st->levels[st->nlevels++] = 64;
	st->bg_ctas = st->levels[0];
	st->level_in_name = st->nlevels > 1;
	if (!st->paths)
		st->paths = 1u << GIC_LOADED_GDA;
	if (!st->queues)
		st->queues = GIC_LOADED_SHARED | GIC_LOADED_RESERVED;
	if (!st->inflight)
		st->inflight = GIC_PROXY_DEFAULT_INFLIGHT;
	if (st->T && st->R && st->R < st->T) {
		fprintf(stderr, "gic loaded: -R %d below -T %d: every worker needs a ring\n", st->R,
			st->T);
		free(st);
		return EINVAL;
	}
	*state = st; /* T, R, B 0: run() picks the GPU's or the host's defaults */
	return 0;
}

/* ------------------------------------------------------------------ */
/* Host mode. */

typedef struct ld_host ld_host;

typedef struct ld_bg {
	pthread_t tid;
	ld_host *L;
	int k, pe;
	uint64_t sent;     /* writes posted (read after join, or relaxed) */
	int rc;
} ld_bg;

struct ld_host {
	const gic_opts *o;
	const loaded_state *st;
	hx *h;
	hxp px[2];
	int reserved;       /* the probe owns its queue */
	int stop;
	int nbg;
	ld_bg bg[HOST_MAX_BG];
	int probes;
	uint64_t probe_sent[2]; /* proxy path: probe requests per PE (counter 0) */
	uint64_t bg_base[2];    /* proxy path: background counter (1) at the start of a
				 * configuration: the counters run on across them */
	uint64_t flag[2];   /* flag[pe]: probe writes delivered to pe */
	int bad;            /* probe payloads that did not check out */
	int rc;             /* the responder's failure */
};

/* One 8-byte write from pe to the peer's dst + off on queue/ring `lane`
 * (0: the background's, 1: the probe's own). */
static int ld_post(ld_host *L, int pe, int lane, size_t off, uint64_t v, uint32_t counter)
{
	if (L->st->path == GIC_LOADED_PROXY)
		return hxp_put_u64(&L->px[pe], lane, off, v, counter, hx_deadline());
	return gic_sq_handoff_write_inline_u64(&L->h->pe[pe].sq[lane],
					       (uint64_t)(uintptr_t)(L->h->pe[1 - pe].dst + off),
					       L->h->pe[1 - pe].dst_rkey, v, LD_SIGNAL, 1,
					       GIC_ORDER_RELEASE_SYS, hx_deadline(), NULL);
}

static size_t bg_off(int k, uint64_t i)
{
	return BG_BASE + ((size_t)k * BG_SLOTS + (size_t)(i % BG_SLOTS)) * 8;
}

static void pace(long ns)
{
	uint64_t until = gic_now_ns() + (uint64_t)ns;

	while (ns > 0 && gic_now_ns() < until)
		gic_cpu_relax();
}

/* The queue (gda) or ring (proxy) of background thread k. */
static int bg_lane(const ld_host *L, int k)
{
	int j = k / 2, R = L->st->R;

	if (L->st->path != GIC_LOADED_PROXY)
		return 0;
	return L->reserved ? 1 + j % (R - 1) : j % R;
}

static void *bg_main(void *arg)
{
	ld_bg *b = arg;
	ld_host *L = b->L;
	int lane = bg_lane(L, b->k);

	while (!__atomic_load_n(&L->stop, __ATOMIC_ACQUIRE) && !b->rc) {
		b->rc = ld_post(L, b->pe, lane, bg_off(b->k, b->sent),
				hx_value(200 + (uint64_t)b->k, b->sent), 1);
		if (!b->rc)
			__atomic_store_n(&b->sent, b->sent + 1, __ATOMIC_RELAXED);
		pace(L->st->pace_ns);
	}
	return NULL;
}

/* Posts probe value from pe on its lane and waits for its completion
 * (CQE or the proxy's counter 0). */
static int ld_probe_send(ld_host *L, int pe, uint64_t v)
{
	int lane = L->reserved, rc;

	if (L->st->path == GIC_LOADED_PROXY) {
		lane = 0; /* the probe's ring; the writers' rings make it shared or not */
		rc = hxp_put_u64(&L->px[pe], lane, 0, v, 0, hx_deadline());
		if (!rc)
			rc = gic_proxy_wait_counter(&L->px[pe].views[lane], &L->px[pe].counters[0],
						    ++L->probe_sent[pe], hx_deadline());
	} else {
		gic_sq *sq = &L->h->pe[pe].sq[lane];
		uint64_t pos = 0;

		rc = gic_sq_handoff_write_inline_u64(sq, (uint64_t)(uintptr_t)L->h->pe[1 - pe].dst,
						     L->h->pe[1 - pe].dst_rkey, v, 1, 1,
						     GIC_ORDER_RELEASE_SYS, hx_deadline(), &pos);
		if (!rc)
			rc = gic_sq_wait_retired(sq, pos + 1, 1, GIC_ORDER_RELEASE_SYS,
						 hx_deadline());
	}
	return rc;
}

/* Delivery i to the peer of pe: send, then raise the peer's flag. */
static int ld_deliver(ld_host *L, int pe, int i, uint64_t v)
{
	int rc = ld_probe_send(L, pe, v);

	if (!rc)
		__atomic_store_n(&L->flag[1 - pe], (uint64_t)i + 1, __ATOMIC_RELEASE);
	return rc;
}

/* Waits for delivery i to pe and checks its word (no thread reads memory
 * the engine is writing: the flag follows the sender's completion). */
static int ld_receive(ld_host *L, int pe, int i, uint64_t want)
{
	int rc = hx_wait_u64(&L->flag[pe], (uint64_t)i + 1, hx_deadline());

	if (!rc && !hx_check(SUB, "probe payload", L->h->pe[pe].dst, (const uint8_t *)&want, 8))
		__atomic_fetch_add(&L->bad, 1, __ATOMIC_RELAXED);
	return rc;
}

static void *responder_main(void *arg)
{
	ld_host *L = arg;

	for (int i = 0; i < L->probes && !L->rc; i++) {
		L->rc = ld_receive(L, 1, i, hx_value(1, (uint64_t)i));
		if (!L->rc)
			L->rc = ld_deliver(L, 1, i, hx_value(2, (uint64_t)i));
	}
	return NULL;
}

/* The probe's round trips; samples in us. */
static int ld_probe(ld_host *L, gic_samples *s)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, responder_main, L);

	if (rc)
		return rc;
	for (int i = 0; i < L->probes && !rc; i++) {
		uint64_t t0 = gic_now_ns();

		rc = ld_deliver(L, 0, i, hx_value(1, (uint64_t)i));
		if (!rc)
			rc = ld_receive(L, 0, i, hx_value(2, (uint64_t)i));
		if (!rc)
			gic_samples_add(s, (double)(gic_now_ns() - t0) / 1e3);
	}
	pthread_join(t, NULL);
	if (rc || L->rc)
		fprintf(stderr, "gic loaded: probe failed: %s\n", strerror(rc ? rc : L->rc));
	return rc ? rc : L->rc;
}

/* Drains every queue (gda) or waits for the background's counters
 * (proxy); then checks every background slot. 1 when all hold their last
 * value. */
static int ld_drain_validate(ld_host *L, int *rc)
{
	for (int k = 0; k < L->nbg && !*rc; k++) {
		ld_bg *b = &L->bg[k];

		for (uint64_t s = 0; s < BG_SLOTS && s < b->sent; s++) {
			uint64_t last = s + (b->sent - 1 - s) / BG_SLOTS * BG_SLOTS;
			uint64_t v = hx_value(200 + (uint64_t)k, last);

			if (!hx_check(SUB, "background slot", L->h->pe[1 - b->pe].dst + bg_off(k, s),
				      (const uint8_t *)&v, 8))
				return 0;
		}
	}
	return 1;
}

static int ld_drain(ld_host *L)
{
	int rc = 0;

	if (L->st->path == GIC_LOADED_PROXY) {
		uint64_t want[2] = { L->bg_base[0], L->bg_base[1] };

		for (int k = 0; k < L->nbg; k++)
			want[L->bg[k].pe] += L->bg[k].sent;
		for (int pe = 0; pe < 2 && !rc; pe++)
			rc = gic_proxy_wait_counter(&L->px[pe].views[0], &L->px[pe].counters[1],
						    want[pe], hx_deadline());
		return rc ? hxp_fail(&L->px[0], SUB, "background drain", rc) : 0;
	}
	for (int pe = 0; pe < 2 && !rc; pe++)
		for (int q = 0; q < 2 && !rc; q++)
			if ((rc = gic_sq_quiet(&L->h->pe[pe].sq[q], GIC_ORDER_RELEASE_SYS,
					       hx_deadline())))
				hx_fail(L->h, pe, q, "loaded drain", rc);
	return rc;
}

static int ld_emit(ld_host *L, gic_sink *sink, const gic_samples *s, double bg_rate, int valid)
{
	gic_result r[2];
	char name[96];

	snprintf(name, sizeof(name), "%s %s%s", L->st->path ? "proxy" : "gda",
		 L->reserved ? "reserved" : "shared", L->st->pace_ns ? " paced" : "");
	if (L->st->level_in_name)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), " bg=%d",
			 L->st->bg_ctas);
	gic_result_init(&r[0], SUB, name, "loaded rtt", "us");
	gic_result_set_samples(&r[0], s, (size_t)(L->o->warmup < L->probes / 2 ?
						   L->o->warmup : 0));
	gic_result_init(&r[1], SUB, name, "background rate", "M msg/s");
	gic_result_set_value(&r[1], bg_rate);
	for (int i = 0; i < 2; i++) {
		gic_result_param(&r[i], "bg=%d pace_ns=%ld queue=%s path=%s probes=%d", L->nbg,
				 L->st->pace_ns, L->reserved ? "reserved" : "shared",
				 L->st->path ? "proxy" : "gda", L->probes);
		if (L->st->path == GIC_LOADED_PROXY)
			gic_result_param(&r[i], "T=%d R=%d B=%d inflight=%d protocol=baseline",
					 L->st->T, L->st->R, L->st->B, L->st->inflight);
		snprintf(r[i].transport, sizeof(r[i].transport), "%s", gic_transport(L->o));
		snprintf(r[i].note, sizeof(r[i].note), "host analogue: %d background host "
			 "thread%s (asked %d CTAs)%s", L->nbg, L->nbg == 1 ? "" : "s",
			 L->st->bg_ctas, L->st->path == GIC_LOADED_PROXY ? "; proxy: baseline "
			 "protocol on both queues, writers spread over the rings" : "");
		r[i].validated = valid;
		gic_result_paper(&r[i]);
		if (gic_emit(sink, &r[i]))
			return ENOMEM;
	}
	return 0;
}

/* One configuration: start the background, probe, stop, drain, check. */
static int ld_config(ld_host *L, gic_sink *sink)
{
	gic_samples s = { 0 };
	uint64_t t0, ns, sent0 = 0, sent1 = 0;
	int rc = 0, started = 0, valid;

	L->stop = 0;
	L->rc = 0;
	L->bad = 0;
	L->flag[0] = L->flag[1] = 0;
	if (L->st->path == GIC_LOADED_PROXY)
		for (int pe = 0; pe < 2; pe++)
			L->bg_base[pe] = __atomic_load_n(&L->px[pe].counters[1], __ATOMIC_ACQUIRE);
	for (int k = 0; k < L->nbg; k++) {
		L->bg[k] = (ld_bg){ .L = L, .k = k, .pe = k % 2 };
		if (pthread_create(&L->bg[k].tid, NULL, bg_main, &L->bg[k]))
			break;
		started++;
	}
	for (int k = 0; k < started; k++)
		sent0 += __atomic_load_n(&L->bg[k].sent, __ATOMIC_RELAXED);
	t0 = gic_now_ns();
	rc = started < L->nbg ? EAGAIN : ld_probe(L, &s);
	ns = gic_now_ns() - t0;
	for (int k = 0; k < started; k++)
		sent1 += __atomic_load_n(&L->bg[k].sent, __ATOMIC_RELAXED);
	__atomic_store_n(&L->stop, 1, __ATOMIC_RELEASE);
	for (int k = 0; k < started; k++) {
		pthread_join(L->bg[k].tid, NULL);
		if (!rc && L->bg[k].rc)
			rc = L->bg[k].rc;
	}
	if (!rc)
		rc = ld_drain(L);
	valid = !rc && !L->bad && ld_drain_validate(L, &rc);
	if (!rc)
		rc = ld_emit(L, sink, &s, (double)(sent1 - sent0) * 1e3 / (double)ns, valid);
	gic_samples_free(&s);
	return rc;
}

static int ld_open_proxies(ld_host *L)
{
	int rc = 0;

	for (int pe = 0; pe < 2 && !rc; pe++)
		rc = hxp_open(&L->px[pe], L->h, &(hxp_cfg){ .from = pe, .workers = L->st->T,
							    .rings = L->st->R, .batch = L->st->B,
							    .inflight = L->st->inflight,
							    .protocol = GIC_PROXY_BASELINE });
	return rc;
}

static int ld_host_run(const gic_opts *o, const loaded_state *st, gic_sink *sink)
{
	ld_host *L = calloc(1, sizeof(*L));
	hx_cfg c = { .who = SUB, .provider = o->provider, .nic = o->nic,
		     .engine_threads = 1, .qps = 2, .log_sq_bb = 8,
		     .region = BG_BASE + (size_t)HOST_MAX_BG * BG_SLOTS * 8 };
	int rc;

	if (!L)
		return ENOMEM;
	L->o = o;
	L->st = st;
	L->nbg = st->bg_ctas < HOST_MAX_BG ? st->bg_ctas : HOST_MAX_BG;
	L->probes = o->iters + o->warmup;
	if (!(o->given & GIC_GIVEN_N) && o->quick)
		L->probes = 60;
	rc = hx_open(&L->h, &c);
	if (!rc && st->path == GIC_LOADED_PROXY)
		rc = ld_open_proxies(L);
	for (int q = 0; q < 2 && !rc; q++) {
		if (!(st->queues & (1u << q)))
			continue;
		L->reserved = q;
		memset(L->h->pe[0].dst, 0, 8);
		memset(L->h->pe[1].dst, 0, 8);
		gic_progress(SUB, q + 1, 2, q ? "reserved queue" : "shared queue");
		rc = ld_config(L, sink);
	}
	hxp_close(&L->px[1]);
	hxp_close(&L->px[0]);
	hx_close(L->h);
	free(L);
	return rc;
}

/* The NVSHMEM path: one job for every level (nvshmem_pe.h). */
static int loaded_nvshmem(const gic_opts *o, const loaded_state *st, gic_sink *sink)
{
	gic_nv_job job = { .kind = GIC_NV_LOADED, .iters = o->iters, .warmup = o->warmup,
			   .nlevels = st->nlevels, .queues = st->queues, .pace_ns = st->pace_ns,
			   .level_in_name = st->level_in_name };

	for (int k = 0; k < st->nlevels; k++) {
		if (st->levels[k] > GIC_NV_MAX_BG) {
			fprintf(stderr, "gic loaded: --path nvshmem: --bg-ctas %d: at most %d "
				"background CTAs\n", st->levels[k], GIC_NV_MAX_BG);
			return EINVAL;
		}
		job.levels[k] = st->levels[k];
	}
	if (o->iters + o->warmup > GIC_NV_MAX_SAMPLES) {
		fprintf(stderr, "gic loaded: --path nvshmem: -n plus -w must be at most %d\n",
			GIC_NV_MAX_SAMPLES);
		return EINVAL;
	}
	return gic_nvshmem_run(SUB, &job, sink);
}

/* Every path asked for at every level: gda and proxy in this process (host
 * or GPU mode), then nvshmem in PEs of its own. What ran is kept when a
 * later part fails; the first error is returned. */
static int loaded_run(const gic_opts *o, void *state, const gic_run_info *info, gic_sink *sink)
{
	const loaded_state *st = state;
	int rc = 0;

	if (o->host && (st->paths & (1u << GIC_LOADED_NVSHMEM))) {
		fprintf(stderr, "gic loaded: --path nvshmem runs on GPUs (not with --host)\n");
		return EINVAL;
	}
	for (int k = 0; !o->host && k < st->nlevels; k++) {
		if ((st->paths & 3u) && st->levels[k] > GIC_LOADED_GPU_MAX_BG) {
			fprintf(stderr, "gic loaded: --bg-ctas %d: at most %d background CTAs on "
				"the GPU\n", st->levels[k], GIC_LOADED_GPU_MAX_BG);
			return EINVAL;
		}
	}
	for (int p = GIC_LOADED_GDA; p <= GIC_LOADED_PROXY; p++) {
		for (int k = 0; k < st->nlevels && (st->paths & (1u << p)); k++) {
			loaded_state one = *st;
			int prc;

			one.path = p;
			one.bg_ctas = st->levels[k];
			one.T = st->T ? st->T : o->host ? 1 : 4;
			one.R = st->R ? st->R : o->host ? 2 : 32;
			one.B = st->B ? st->B : 16;
			if (p == GIC_LOADED_PROXY && one.R < one.T) {
				fprintf(stderr, "gic loaded: R%d below T%d: every worker needs a ring\n",
					one.R, one.T);
				return EINVAL;
			}
			prc = o->host ? ld_host_run(o, &one, sink) : gic_gpu_loaded(o, &one, info, sink);
			rc = rc ? rc : prc;
		}
	}
	if (st->paths & (1u << GIC_LOADED_NVSHMEM)) {
		int nrc = loaded_nvshmem(o, st, sink);

		rc = rc ? rc : nrc;
	}
	return rc;
}

static void loaded_free(void *state)
{
	free(state);
}

const gic_experiment gic_exp_loaded = {
	.name = "loaded",
	.summary = "probe round trip under background load, shared vs reserved queue (Figure 6, "
		   "Table 11)",
	.help = help,
	.parse = loaded_parse,
	.run = loaded_run,
	.free_state = loaded_free,
};
