/*
 * bench/gic/exp_lat.c - `gic lat` (exp_lat.h): parsing, and the host mode.
 *
 * Host mode: PE0 and PE1 on the --provider NIC (host.h: softnic's CPU
 * engine, or mlx5), a fixture of their own per --qps count. A host
 * thread posts one write at a time on QP 0: issue is the posting call
 * (reserve, build, ring), put+completion adds the wait for its CQE
 * (--scope qp) or a PE-wide quiet over every configured QP (--scope all:
 * each QP's CQ polled; all-progress: each QP's progress words, as
 * NVSHMEM's quiet walks them). The round trip runs a responder thread on
 * PE1 that answers each write with one of its own. Proxy paths go through a
 * mini-proxy (T1/R1/B1) per direction with host producers. Every payload
 * is checked after its completion (or, for round trips, is the value the
 * other side waits for).
 *
 * --procs 2 (pe_pair.h): the same mini-gda and proxy bodies with each PE
 * in a process of its own; lat_run.pair says which one this process is,
 * PE 0 posting and timing, PE 1 answering and checking. A one-way
 * measurement runs in laps of at most the region's slots: PE 1 poisons the
 * lap's slots and lets PE 0 go (gic_pair_begin), PE 0 posts the lap and
 * signals its end (gic_pair_end), PE 1 checks every slot; a round trip
 * starts with PE 1's signal, each side then waiting for its word to
 * change. A proxy runs in its producers' process (PE 0's for the one-way
 * rows and the request, PE 1's for the answer), its workers' QPs
 * connected to QPs of the other's (hxp_open on both).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_lat.h"
#include "gic.h"
#include "host.h"
#include "hostdb.h"
#include "pe_pair.h"
#include "nccl_pe.h"
#include "nvshmem_pe.h"

#define SUB "lat"
enum { LAT_SLOTS = 256, LAT_MAX_INLINE = 512 };
enum { LAT_PROXY_SEED = GIC_LAT_ORDERS }; /* the proxy rows' payload seeds: no order's */

static const char *const path_names[] = { "gda-inline", "gda-pointer", "proxy-baseline",
					  "proxy-tuned", "nvshmem", "gin", "gda-hostdb",
					  "gda-dc", "gda-dc-full" };
enum { LAT_PATHS = sizeof(path_names) / sizeof(path_names[0]) };
static const char *const order_names[] = { "none", "fence-gpu", "fence-gpu-dbr", "release-gpu",
					   "threadfence", "release-sys", "fence-sys", "mmio-sys" };
_Static_assert(sizeof(order_names) / sizeof(order_names[0]) == GIC_LAT_ORDERS &&
		       GIC_LAT_ORDERS == GIC_ORDER_COUNT,
	       "a name for every enum gic_order value");
static const char *const scope_names[] = { "qp", "all", "all-progress" };
static const char *const metric_names[] = { "issue", "putc", "rtt", "timer-check" };
static const char *const metric_labels[] = { "issue", "put+completion", "rtt", "timer-check" };
enum { LAT_METRICS = sizeof(metric_names) / sizeof(metric_names[0]) };

const char *gic_lat_path_name(unsigned path_bit)
{
	for (int i = 0; i < LAT_PATHS; i++)
		if (path_bit == 1u << i)
			return path_names[i];
	return NULL;
}

const char *gic_lat_order_name(int order)
{
	return order >= 0 && order < GIC_LAT_ORDERS ? order_names[order] : NULL;
}

const char *gic_lat_scope_name(int s)
{
	return s >= 0 && s < GIC_LAT_SCOPES ? scope_names[s] : NULL;
}

int gic_lat_scope_named(const lat_state *st)
{
	return st->nqps > 1 || st->qps[0] != 1 || st->scopes != 1u << GIC_LAT_SCOPE_QP;
}

const char *gic_lat_metric_name(unsigned metric_bit)
{
	for (int i = 0; i < LAT_METRICS; i++)
		if (metric_bit == 1u << i)
			return metric_labels[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Flags. */

/* --scope: comma-separated names, each adding its bit. */
static int scope_flag(const char *sub, const gic_flag *f, const char *val, void *state)
{
	lat_state *st = state;
	int idx;

	for (const char *p = val;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char name[32];

		snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : 0), p);
		if (gic_flag_choice(sub, f->name, name, scope_names, GIC_LAT_SCOPES, &idx))
			return EINVAL;
		st->scopes |= 1u << idx;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

#define F(m) GIC_FLAG_FIELD(lat_state, m)
static const gic_flag lat_flags[] = {
	{ "--path", .value = "P", GIC_FLAG_BITS, F(paths), .names = path_names, .n = LAT_PATHS,
	  .all = GIC_LAT_PATH_ALL, .fn = gic_flag_lib_path, .dflt = "all",
	  .help = "all: the first four; not the library paths, gda-hostdb or the DC paths; adds to "
	  "the paths given before it.\n"
	  "gda-hostdb: gda-inline's 8-byte write with its doorbell rung by a pinned host thread "
	  "that watches a progress word the poster publishes (issue, put+completion; QP 0 of the "
	  "first --qps count, scope qp, not with --sweep); beside it 'gda-hostdb control', the "
	  "poster ringing in the same fixture\n"
	  "gda-dc, gda-dc-full: gda-inline's 8-byte inline write on the DC transport, a DCI of "
	  "PE0 to a DCT of PE1, the address vector compact (16 B, one BB) or full (48 B, two BBs); "
	  "issue, put+completion, rtt (answered DCI to DCT the same way); in the fixture of the "
	  "run's RC rows (give --path gda-inline beside it for the difference per operation), "
	  "first --qps count, scope qp, not with --sweep\n"
	  "nvshmem: the NVSHMEM path, put/p/quiet/round trip between two GPUs (PE r on CUDA "
	  "device r, one process each); GPU mode only; with issue or putc also the row 'nvshmem "
	  "qp-quiet': a put on a QP of its own completed per QP (nvshmemx_qp_*, DeepEP's way), "
	  "only over a NIC transport that creates QPs (e.g. NVSHMEM_REMOTE_TRANSPORT=ibrc, "
	  "NVSHMEM_IB_ENABLE_IBGDA=1); else skipped with a line saying why (always over "
	  "P2P/NVLink); " GIC_NVSHMEM_HELP_SKIPS "\n"
	  "gin: the NCCL GIN path (not in all), ncclGin put/putValue + flush and a "
	  "putValue/signal round trip between two GPUs (one process each; libnccl.so.2 opened at "
	  "run time); GPU mode only; fewer than 2 GPUs, no NCCL library of the built version, or "
	  "no GIN backend (no network): says why, skips, exit status 0; a binary built without "
	  "NCCL's headers: says so, exit status 2" },
	{ "--order", .value = "O", GIC_FLAG_BITS, F(orders), .names = order_names,
	  .n = GIC_LAT_ORDERS, .all = (1u << GIC_LAT_ORDERS) - 1, .dflt = "fence-gpu",
	  .help = "ordering of the mini-gda post; none is the 'unordered' row; mmio-sys: fence-sys "
	  "with the doorbell an MMIO store, as a ConnectX UAR mapped into the GPU wants" },
	{ "--metric", .value = "M", GIC_FLAG_BITS, F(metrics), .names = metric_names,
	  .n = LAT_METRICS, .all = GIC_LAT_METRIC_ALL, .dflt = "all",
	  .help = "all leaves timer-check out. timer-check: round trips on gda-inline where the "
	  "responder delays every other answer by D (spinning on its clock: the host's, or the "
	  "GPU's globaltimer); row 'timer-check gda-inline <order>' = rtt p50 delayed - rtt p50 "
	  "plain, beside D and the ratio; valid when within 10% of D + 2 us" },
	{ "--timer-delay", .value = "US", GIC_FLAG_INT, F(timer_delay_us), .lo = 1, .hi = 10000,
	  .def = GIC_LAT_TIMER_DEFAULT_US, .help = "D of the timer check in microseconds",
	  .param = "delay_us" },
	{ "--qps", .value = "LIST", GIC_FLAG_LIST, F(qps), .count_off = offsetof(lat_state, nqps),
	  .lo = 1, .hi = HX_MAX_QPS, .max = GIC_LAT_MAX_QPS_LIST, .def = 1,
	  .help = "QPs configured per PE: one run per count, QP 0 used (Figure 4: 1,2,4,8,16)" },
	{ "--scope", .value = "LIST", GIC_FLAG_CUSTOM, .fn = scope_flag,
	  .help = "put+completion's completion, comma-separated (default qp):\n"
	  "qp: the used QP's CQ only (DeepEP's port); all: a PE-wide quiet polling every "
	  "configured QP's CQ (a CQE read each, used or not) until it retired what was posted on "
	  "it; all-progress: a PE-wide quiet reading every QP's published and retired positions "
	  "(L1 skipped, a CTA fence per QP), its CQ polled only with work outstanding: NVSHMEM "
	  "3.8's IBGDA quiet. With more than one count or scope (or any but 1 and qp) rows are "
	  "named '<path> <order> qps=N scope=S' (rtt: a control, '<path> <order> qps=N'); gda "
	  "paths only. Figure 4 / Table 7: --path gda-inline --metric putc --metric rtt --qps "
	  "1,2,4,8,16 --scope qp,all,all-progress" },
	{ "--sweep", .kind = GIC_FLAG_BOOL, F(sweep),
	  .help = "payload size sweep over -b..-e by -f, only those rows, for each path selected "
	  "(without --path: gda-inline; not the library paths or gda-hostdb). gda-inline: inline "
	  "sizes (Figure 3a; default 8..512, host --quick 8..64; up to 512, GPU 900); on the GPU "
	  "per size a row with the payload in registers, built for 8 12 16 32 48 64 128 256 512, "
	  "and a gda-inline-staged row loading it from GPU memory. gda-pointer, proxy-baseline, "
	  "proxy-tuned: pointer writes (Figure 11; default 8..1M by 2, --quick 8..64K by 8; up to "
	  "2M), rows '<path> [<order>] size=N', issue and put+completion, every destination "
	  "checked after its completion" },
};
#undef F
static const gic_flag_table lat_table = GIC_FLAG_TABLE(SUB, lat_flags, 0);

static int lat_finish(void *state, unsigned marks)
{
	lat_state *st = state;

	(void)marks;
	if (!st->paths) /* --sweep alone: Figure 3a's inline sweep */
		st->paths = st->sweep ? GIC_LAT_GDA_INLINE : GIC_LAT_PATH_ALL;
	if (st->sweep && (st->paths & (GIC_LAT_NVSHMEM | GIC_LAT_GIN | GIC_LAT_GDA_HOSTDB |
				       GIC_LAT_GDA_DC_ANY))) {
		fprintf(stderr, "gic lat: --sweep runs the gda-inline, gda-pointer and proxy paths; "
			"not with --path %s\n",
			st->paths & GIC_LAT_NVSHMEM ? "nvshmem"
			: st->paths & GIC_LAT_GIN ? "gin"
			: st->paths & GIC_LAT_GDA_HOSTDB ? "gda-hostdb"
			: st->paths & GIC_LAT_GDA_DC ? "gda-dc" : "gda-dc-full");
		return EINVAL;
	}
	if (!st->orders)
		st->orders = 1u << GIC_ORDER_FENCE_GPU;
	if (!st->scopes)
		st->scopes = 1u << GIC_LAT_SCOPE_QP;
	if (st->sweep && (st->nqps > 1 || (st->scopes & (st->scopes - 1)))) {
		fprintf(stderr, "gic lat: --sweep runs one --qps count and one --scope\n");
		return EINVAL;
	}
	if (!st->metrics)
		st->metrics = GIC_LAT_METRIC_ALL;
	if ((st->metrics & GIC_LAT_TIMER) && (st->sweep || !(st->paths & GIC_LAT_GDA_INLINE))) {
		fprintf(stderr, "gic lat: --metric timer-check runs on the gda-inline path, not "
			"with --sweep%s\n", st->sweep ? "" : " (add --path gda-inline)");
		return EINVAL;
	}
	return 0;
}

int gic_lat_sweep_sizes(const gic_opts *o, int family, size_t inline_max, size_t *sizes,
			int *n)
{
	int ptr = family == GIC_LAT_SWEEP_POINTER;
	size_t b = o->given & GIC_GIVEN_B ? o->size_begin : 8;
	size_t e = o->given & GIC_GIVEN_E ? o->size_end
		   : ptr ? (o->quick ? (size_t)64 << 10 : (size_t)1 << 20)
			 : (o->host && o->quick ? 64 : 512);
	double f = o->given & GIC_GIVEN_F ? o->size_factor : ptr && o->quick ? 8 : 2;
	size_t max = ptr ? GIC_LAT_SWEEP_MAX_POINTER : inline_max;

	*n = 0;
	if (e > max) {
		fprintf(stderr, "gic lat: --sweep: -e %zu: %s sizes go up to %zu bytes%s\n", e,
			ptr ? "gda-pointer's and the proxy paths'" : "gda-inline's inline", max,
			ptr ? "" : " (larger ones: --path gda-pointer or a proxy path)");
		return EINVAL;
	}
	if (b > e) {
		fprintf(stderr, "gic lat: --sweep: -b %zu is above the last %s size %zu (give -e)\n",
			b, ptr ? "pointer" : "inline", e);
		return EINVAL;
	}
	for (size_t sz = b; sz <= e; sz = (size_t)((double)sz * f) > sz ? (size_t)((double)sz * f)
									 : sz + 1) {
		if (*n == GIC_LAT_SWEEP_MAX_SIZES) {
			fprintf(stderr, "gic lat: --sweep: -b %zu -e %zu -f %g: more than %d sizes\n",
				b, e, f, GIC_LAT_SWEEP_MAX_SIZES);
			return EINVAL;
		}
		sizes[(*n)++] = sz;
	}
	return 0;
}

int gic_lat_timer_order(const lat_state *st)
{
	if (st->orders & (1u << GIC_ORDER_FENCE_GPU))
		return GIC_ORDER_FENCE_GPU;
	for (int o = 0; o < GIC_LAT_ORDERS; o++)
		if (st->orders & (1u << o))
			return o;
	return GIC_ORDER_FENCE_GPU;
}

int gic_lat_timer_emit(gic_sink *sink, const lat_state *st, int order, const gic_samples *plain,
		       const gic_samples *delayed, int payload_ok, const char *transport,
		       const char *params)
{
	double d = st->timer_delay_us, tol = GIC_LAT_TIMER_TOL_FRAC * d + GIC_LAT_TIMER_TOL_US;
	gic_summary sp, sd;
	gic_result r;
	char name[96];
	int rc;

	if ((rc = gic_summarize(plain, 0, &sp)) || (rc = gic_summarize(delayed, 0, &sd)))
		return rc;
	snprintf(name, sizeof(name), "timer-check gda-inline %s", order_names[order]);
	gic_result_init(&r, SUB, name, "timer-check", "us");
	gic_result_set_value(&r, sd.p50 - sp.p50);
	snprintf(r.params, sizeof(r.params), "%s", params);
	gic_result_flag_params(&r, &lat_table, st, "delay_us");
	gic_result_param(&r, "rtt_plain_p50=%.3f rtt_delayed_p50=%.3f ratio=%.4f tolerance_us=%.1f "
			 "samples=%zu+%zu", sp.p50, sd.p50, (sd.p50 - sp.p50) / d, tol, sp.count,
			 sd.count);
	snprintf(r.transport, sizeof(r.transport), "%s", transport);
	r.validated = payload_ok && fabs(sd.p50 - sp.p50 - d) <= tol;
	snprintf(r.note, sizeof(r.note), "timer check: rtt p50 with a %d us responder delay minus "
		 "without (alternate samples); valid within 10%% of D + 2 us = %.1f us",
		 st->timer_delay_us, tol);
	if (!r.validated)
		fprintf(stderr, "gic lat: timer check %s: the round trip grew by %.3f us for a "
			"delay of %d us (tolerance %.1f us)%s\n", name, sd.p50 - sp.p50,
			st->timer_delay_us, tol, payload_ok ? "" : "; a payload did not check out");
	return gic_emit(sink, &r);
}

/* ------------------------------------------------------------------ */
/* Host mode: shared pieces. */

typedef struct lat_run {
	const gic_opts *o;
	const lat_state *st;
	gic_sink *sink;
	hx *h;
	int total;           /* warm-up + measured */
	int first;           /* 1 for the first --qps count (proxy rows, timer, sweep) */
	int nq;              /* QPs configured in h (this run's --qps count) */
	int scope;           /* GIC_LAT_SCOPE_* of the put+completion being measured;
			      * -1 for rows that complete nothing (rtt, proxies) */
	int dc;              /* the mini-gda rows being run: -1 RC (QP 0), 0 DC with the
			      * compact AV, 1 DC with the full AV (the DCIs) */
	size_t region;       /* bytes of each PE's source and destination */
	char row_params[96]; /* --sweep: more params of the rows being run ("" none) */
	gic_pair *pair;      /* --procs 2: this process's PE (NULL: both PEs here) */
} lat_run;

/* 1 when this process is PE 1 of --procs 2: it answers and checks, and
 * emits no rows. */
static int lat_answerer(const lat_run *L)
{
	return !gic_pair_posts(L->pair);
}

/* Destination (and source) bytes per slot of a size-byte write, and the
 * slots the region holds (at most LAT_SLOTS; sample i uses slot i %
 * slots). Sizes up to LAT_MAX_INLINE keep the 8-byte rows' layout. */
static size_t lat_stride(size_t size)
{
	size_t s = (size + 63) & ~(size_t)63;

	return s > LAT_MAX_INLINE ? s : LAT_MAX_INLINE;
}

static size_t lat_slots(const lat_run *L, size_t size)
{
	size_t n = L->region / lat_stride(size);

	return n > LAT_SLOTS ? LAT_SLOTS : n;
}

/* Emits samples s as result (name, metric). */
static int lat_emit(lat_run *L, const char *name, const char *metric, const gic_samples *s,
		    size_t size, int validated, const char *note)
{
	gic_result r;

	if (lat_answerer(L)) /* PE 1 of --procs 2: its verdicts only */
		return 0;
	gic_result_init(&r, SUB, name, metric, "us");
	gic_result_set_samples(&r, s, (size_t)L->o->warmup);
	gic_result_param(&r, "size=%zu", size);
	if (L->dc >= 0)
		gic_result_param(&r, "dci=1");
	else
		gic_result_param(&r, "qps=%d", L->nq);
	gic_result_param(&r, "scope=%s", L->scope < 0 ? "none" : scope_names[L->scope]);
	gic_result_param(&r, "mode=host");
	if (L->pair)
		gic_result_param(&r, "procs=2");
	if (L->row_params[0])
		gic_result_param(&r, "%s", L->row_params);
	snprintf(r.transport, sizeof(r.transport), "%s", gic_transport(L->o));
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.validated = validated;
	gic_result_paper(&r);
	return gic_pair_put(L->pair, L->sink, &r);
}

/* lat_emit for the gda-hostdb rows: params also say the order and the
 * doorbell mode. */
static int lat_emit_doorbell(lat_run *L, const char *name, const char *metric,
			     const gic_samples *s, int validated, const char *note, int host_rung)
{
	gic_result r;

	gic_result_init(&r, SUB, name, metric, "us");
	gic_result_set_samples(&r, s, (size_t)L->o->warmup);
	gic_result_param(&r, "size=8 qps=%d scope=qp order=release-sys doorbell=%s mode=host",
			 L->nq, host_rung ? "host-rung" : "poster");
	snprintf(r.transport, sizeof(r.transport), "%s", gic_transport(L->o));
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.validated = validated;
	gic_result_paper(&r);
	return gic_emit(L->sink, &r);
}

#if defined(__SANITIZE_THREAD__)
#define LAT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LAT_TSAN 1
#endif
#endif

/* The order the host posts with: itself, except in a ThreadSanitizer
 * build, which does not model fences: there the fence variants post with
 * the release stores they are equivalent to on the host. */
static int host_order(int order)
{
#ifdef LAT_TSAN
	if (order == GIC_ORDER_FENCE_SYS || order == GIC_ORDER_MMIO_SYS)
		return GIC_ORDER_RELEASE_SYS;
	if (order == GIC_ORDER_FENCE_GPU || order == GIC_ORDER_FENCE_GPU_DBR ||
	    order == GIC_ORDER_THREADFENCE)
		return GIC_ORDER_RELEASE_GPU;
#endif
	return order;
}

static const char host_order_note[] =
	"host analogue; on the host every order but none is a release (orders differ on the GPU)";
static const char host_dc_note[] =
	"host analogue; DC: PE0's DCI to PE1's DCT, the AV precomputed (the NIC looks the DCT "
	"up; softnic makes no DC connection handshake); a release as gda-inline's";

/* Waits for the completion of the write ending at end on PE0 QP 0; with
 * scope all or all-progress then quiets every other configured QP (QP 0
 * first, as the GPU mode's walk). */
static int lat_complete(lat_run *L, uint64_t end, int order)
{
	gic_sq *sq = L->h->pe[0].sq;
	int rc = gic_sq_wait_retired(L->dc >= 0 ? &L->h->pe[0].dci_sq : &sq[0], end, 0, order,
				     hx_deadline());

	if (!rc && L->scope == GIC_LAT_SCOPE_ALL)
		rc = gic_quiet_all_poll(sq + 1, L->nq - 1, order, hx_deadline());
	if (!rc && L->scope == GIC_LAT_SCOPE_PROGRESS)
		rc = gic_quiet_all_progress(sq + 1, L->nq - 1, order, hx_deadline());
	return rc;
}

/* The payload of one-way write i posted with order: its pattern's seed. */
static uint64_t oneway_seed(int order, int i)
{
	return ((uint64_t)order << 32) ^ (uint64_t)i;
}

/* One issue + put+completion loop: samples in us. mini-gda (px NULL) or
 * through the proxy px (an 8-byte inline write, or with pointer one of
 * size bytes from PE0's source slot; its counter 1 for the completion).
 * --procs 2 (PE 0): in laps of the region's slots, each started by PE 1
 * (its slots poisoned) and ended by a signal to it (it checks them). */
static int oneway(lat_run *L, hxp *px, int pointer, int order, size_t size, gic_samples *iss,
		  gic_samples *putc, int *valid)
{
	hx_pe *p0 = &L->h->pe[0], *p1 = &L->h->pe[1];
	size_t slots = lat_slots(L, size);

	for (int i = 0; i < L->total; i++) {
		size_t slot = (size_t)i % slots * lat_stride(size);
		const uint8_t *want = p0->src + slot; /* the engine only reads it */
		uint64_t t0, t1, end;
		int rc = 0, lap_end = (size_t)i % slots == slots - 1 || i == L->total - 1;
		gic_proxy_desc d = { 0 };
		uint64_t v = 0;

		if ((size_t)i % slots == 0 && (rc = gic_pair_begin(L->pair, L->h)))
			return rc;
		hx_fill(p0->src + slot, size, oneway_seed(order, i));
		if (!L->pair) /* the peer process poisons its own */
			gic_poison(p1->dst + slot, want, size);
		if (L->dc >= 0 || (px && !pointer)) /* 8 bytes, by value */
			memcpy(&v, want, 8);
		if (px && pointer)
			rc = gic_proxy_desc_pointer(&d, slot, slot, (uint32_t)size, 1);
		t0 = gic_now_ns();
		if (px && !rc)
			rc = pointer ? gic_proxy_enqueue(&px->views[0], &d, hx_deadline(), NULL)
				     : hxp_put_u64(px, 0, slot, v, 1, hx_deadline());
		else if (!px)
			rc = L->dc >= 0 ? hx_write_dc(L->h, 0, slot, v, L->dc, 1, 1, order,
						      hx_deadline(), &end)
					: hx_write(L->h, 0, 0, slot, want, slot, size, pointer, 1, 1,
						   order, hx_deadline(), &end);
		t1 = gic_now_ns();
		if (!rc)
			rc = px ? gic_proxy_wait_counter(&px->views[0], &px->counters[1],
							 (uint64_t)i + 1, hx_deadline())
				: lat_complete(L, end, order);
		if (rc)
			return px ? hxp_fail(px, SUB, "put+completion", rc)
				  : hx_fail(L->h, 0, L->dc >= 0 ? HX_DCI : 0, "lat post+wait", rc);
		gic_samples_add(putc, (double)(gic_now_ns() - t0) / 1e3);
		gic_samples_add(iss, (double)(t1 - t0) / 1e3);
		if (lap_end && (rc = gic_pair_end(L->pair, L->h)))
			return rc;
		if (!L->pair && !hx_check(SUB, "put+completion payload", p1->dst + slot, want, size))
			*valid = 0;
	}
	return 0;
}

/* --procs 2, PE 1: the other side of oneway. For each lap: poisons the
 * lap's slots (the complement of what PE 0 will write), lets PE 0 go,
 * waits for the lap's end and checks every slot; *valid 0 when one did
 * not check out. */
static int oneway_check(lat_run *L, int order, size_t size, int *valid)
{
	uint8_t *dst = L->h->pe[1].dst, want[LAT_MAX_INLINE];
	size_t slots = lat_slots(L, size), stride = lat_stride(size);
	int rc = size <= sizeof(want) ? 0 : EINVAL;

	for (int first = 0; first < L->total && !rc; first += (int)slots) {
		int end = first + (int)slots < L->total ? first + (int)slots : L->total;

		for (int i = first; i < end; i++) {
			hx_fill(want, size, oneway_seed(order, i));
			gic_poison(dst + (size_t)(i - first) * stride, want, size);
		}
		rc = gic_pair_begin(L->pair, L->h);
		if (!rc)
			rc = gic_pair_end(L->pair, L->h);
		for (int i = first; i < end && !rc; i++) {
			hx_fill(want, size, oneway_seed(order, i));
			if (!hx_check(SUB, "put+completion payload (PE1)",
				      dst + (size_t)(i - first) * stride, want, size))
				*valid = 0;
		}
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Round trips: PE0 sends value(1, i) into PE1's word 0; the responder
 * answers value(2, i) into PE0's word 0. send() posts one 8-byte write and
 * waits for its completion (CQE or proxy counter); the sender then raises
 * the receiver's flag (release), and the receiver, having seen it
 * (acquire), checks the word. So no thread reads memory while the engine
 * writes it; a round trip is two (put+completion, notify) legs. */

typedef struct rtt_side {
	lat_run *L;
	int (*send)(struct rtt_side *s, int pe, uint64_t value);
	int order, pointer;
	hxp *px[2];          /* proxy paths: the proxy of each PE */
	uint64_t sent[2];    /* proxy paths: requests per PE (counter targets) */
	uint64_t flag[2];    /* flag[pe]: writes delivered to pe so far */
	uint64_t seen[2];    /* --procs 2: the value last seen in pe's word */
	int rc;              /* the responder's failure */
	int bad;             /* payloads that did not check out */
	uint64_t delay_ns;   /* timer check: the responder holds every odd answer this long */
	gic_samples *delayed; /* timer check: the odd samples after the warm-up (the even
			       * ones go to run_rtt's out) */
} rtt_side;

static int gda_send(rtt_side *s, int pe, uint64_t value)
{
	hx *h = s->L->h;
	uint64_t end;
	int rc;

	int dc = s->L->dc;

	memcpy(h->pe[pe].src, &value, 8);
	if (dc >= 0) /* the PE's DCI to the peer's DCT, the same AV form both ways */
		rc = hx_write_dc(h, pe, 0, value, dc, 1, 1, s->order, hx_deadline(), &end);
	else
		rc = hx_write(h, pe, 0, 0, &value, 0, 8, s->pointer, 1, 1, s->order, hx_deadline(),
			      &end);
	if (!rc)
		rc = gic_sq_wait_retired(dc >= 0 ? &h->pe[pe].dci_sq : &h->pe[pe].sq[0], end, 0,
					 s->order, hx_deadline());
	return rc ? hx_fail(h, pe, dc >= 0 ? HX_DCI : 0, "lat rtt", rc) : 0;
}

static int proxy_send(rtt_side *s, int pe, uint64_t value)
{
	int rc = hxp_put_u64(s->px[pe], 0, 0, value, 0, hx_deadline());

	if (!rc)
		rc = gic_proxy_wait_counter(&s->px[pe]->views[0], &s->px[pe]->counters[0],
					    ++s->sent[pe], hx_deadline());
	return rc ? hxp_fail(s->px[pe], SUB, "rtt", rc) : 0;
}

/* Waits for delivery i to pe, then checks pe's word holds want. --procs
 * 2: the sender is another process; waits for the word itself to change
 * (every value differs from the one before). */
static int rtt_receive(rtt_side *s, int pe, int i, uint64_t want)
{
	int rc;

	if (s->L->pair) {
		uint64_t got;

		rc = hx_wait_u64_change((const uint64_t *)s->L->h->pe[pe].dst, s->seen[pe],
					hx_deadline(), &got);
		s->seen[pe] = got;
		if (!rc && !hx_check(SUB, "round-trip payload", (const uint8_t *)&got,
				     (const uint8_t *)&want, 8))
			s->bad++;
		return rc;
	}
	rc = hx_wait_u64(&s->flag[pe], (uint64_t)i + 1, hx_deadline());

	if (!rc && !hx_check(SUB, "round-trip payload", s->L->h->pe[pe].dst,
			     (const uint8_t *)&want, 8))
		__atomic_fetch_add(&s->bad, 1, __ATOMIC_RELAXED);
	return rc;
}

/* Sends value to the peer of pe as delivery i and raises its flag. */
static int rtt_deliver(rtt_side *s, int pe, int i, uint64_t value)
{
	int rc = s->send(s, pe, value);

	if (!rc)
		__atomic_store_n(&s->flag[1 - pe], (uint64_t)i + 1, __ATOMIC_RELEASE);
	return rc;
}

static void *responder_main(void *arg)
{
	rtt_side *s = arg;

	for (int i = 0; i < s->L->total && !s->rc; i++) {
		s->rc = rtt_receive(s, 1, i, hx_value(1, (uint64_t)i));
		if (!s->rc && s->delay_ns && (i & 1)) { /* the timer check's delay: it ends itself */
			uint64_t t0 = gic_now_ns();

			while (gic_now_ns() - t0 < s->delay_ns)
				gic_cpu_relax();
		}
		if (!s->rc)
			s->rc = rtt_deliver(s, 1, i, hx_value(2, (uint64_t)i));
	}
	if (s->rc)
		fprintf(stderr, "gic lat: rtt responder failed: %s\n", strerror(s->rc));
	return NULL;
}

/* The start of a round-trip measurement: the words it uses cleared (nothing
 * writes them now); --procs 2: each PE clears its own, then PE 1, ready,
 * signals and PE 0 waits. */
static int rtt_begin(rtt_side *s)
{
	int me = gic_pair_rank(s->L->pair);

	memset(s->L->h->pe[me].dst, 0, 8);
	if (!s->L->pair)
		memset(s->L->h->pe[1].dst, 0, 8);
	s->seen[me] = 0;
	return gic_pair_begin(s->L->pair, s->L->h);
}

/* Runs the round trips; samples in us; 0 or errno. The responder is a
 * thread of PE 1 here, or (--procs 2) PE 1's process, which runs it alone. */
static int run_rtt(rtt_side *s, gic_samples *out)
{
	pthread_t t;
	int rc = rtt_begin(s);

	if (!rc && !s->L->pair)
		rc = pthread_create(&t, NULL, responder_main, s);

	if (rc)
		return rc;
	if (lat_answerer(s->L)) {
		responder_main(s);
		return s->rc;
	}
	for (int i = 0; i < s->L->total && !rc; i++) {
		uint64_t t0 = gic_now_ns();
		double us;

		rc = rtt_deliver(s, 0, i, hx_value(1, (uint64_t)i));
		if (!rc)
			rc = rtt_receive(s, 0, i, hx_value(2, (uint64_t)i));
		us = (double)(gic_now_ns() - t0) / 1e3;
		if (rc)
			fprintf(stderr, "gic lat: round trip %d: %s\n", i, strerror(rc));
		else if (!s->delayed)
			gic_samples_add(out, us);
		else if (i >= s->L->o->warmup) /* the timer check: odd samples were delayed */
			gic_samples_add(i & 1 ? s->delayed : out, us);
	}
	if (s->L->pair) /* the responder is PE 1's process */
		return rc;
	if (rc) /* lets the responder give up at once */
		__atomic_store_n(&s->flag[1], UINT64_MAX, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	return rc ? rc : s->rc;
}

/* ------------------------------------------------------------------ */
/* Host mode: the paths. */

/* One mini-gda configuration: issue and put+completion once per selected
 * scope, then the round trip (it completes nothing: one row per count). */
static int run_gda(lat_run *L, int pointer, int order, size_t size, const char *name)
{
	gic_samples rtt = { 0 };
	int rc = 0, named = !L->st->sweep && L->dc < 0 && gic_lat_scope_named(L->st);
	/* The DC rows: one DCI, its own CQ (scope qp). */
	unsigned scopes = L->dc >= 0 ? 1u << GIC_LAT_SCOPE_QP : L->st->scopes;
	const char *note = order == GIC_ORDER_NONE ? "host analogue; order none: plain stores, "
						     "unsafe (a race with the engine)"
			   : L->dc >= 0 ? host_dc_note : host_order_note;
	char rname[128];

	order = host_order(order);

	for (int sc = 0; sc < GIC_LAT_SCOPES && !rc; sc++) {
		gic_samples iss = { 0 }, putc = { 0 };
		int valid = 1;

		if (!(scopes & (1u << sc)) ||
		    !(L->st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
			continue;
		L->scope = sc;
		if (named)
			snprintf(rname, sizeof(rname), "%s qps=%d scope=%s", name, L->nq,
				 scope_names[sc]);
		else
			snprintf(rname, sizeof(rname), "%s", name);
		rc = lat_answerer(L) ? oneway_check(L, order, size, &valid)
				     : oneway(L, NULL, pointer, order, size, &iss, &putc, &valid);
		if (!rc && (L->st->metrics & GIC_LAT_ISSUE))
			rc = lat_emit(L, rname, "issue", &iss, size, valid, note);
		if (!rc && (L->st->metrics & GIC_LAT_PUTC))
			rc = lat_emit(L, rname, "put+completion", &putc, size, valid, note);
		if (!rc)
			gic_pair_phase_done(L->pair, valid);
		gic_samples_free(&iss);
		gic_samples_free(&putc);
	}
	L->scope = -1;
	if (!rc && (L->st->metrics & GIC_LAT_RTT) && size == 8 && !(L->st->sweep && pointer)) {
		rtt_side s = { .L = L, .send = gda_send, .order = order, .pointer = pointer };

		if (named)
			snprintf(rname, sizeof(rname), "%s qps=%d", name, L->nq);
		else
			snprintf(rname, sizeof(rname), "%s", name);
		if (L->dc >= 0) /* the answer's way, in the rtt row's params */
			snprintf(L->row_params, sizeof(L->row_params), "transport=dc av=%s answer=dc",
				 L->dc ? "full" : "compact");
		rc = run_rtt(&s, &rtt);
		if (!rc)
			rc = lat_emit(L, rname, "rtt", &rtt, size, !s.bad, note);
		if (!rc)
			gic_pair_phase_done(L->pair, !s.bad);
	}
	gic_samples_free(&rtt);
	return rc;
}

/* The DC rows (first --qps count): gda-dc (compact AV) and gda-dc-full,
 * each order selected, 8 bytes inline, through PE0's DCI. */
static int run_dc(lat_run *L)
{
	int rc = 0;

	for (int full = 0; full <= 1 && !rc; full++) {
		unsigned bit = full ? GIC_LAT_GDA_DC_FULL : GIC_LAT_GDA_DC;

		if (!(L->st->paths & bit))
			continue;
		for (int ord = 0; ord < GIC_LAT_ORDERS && !rc; ord++) {
			char name[96];

			if (!(L->st->orders & (1u << ord)))
				continue;
			snprintf(name, sizeof(name), "%s %s", gic_lat_path_name(bit), order_names[ord]);
			snprintf(L->row_params, sizeof(L->row_params), "transport=dc av=%s",
				 full ? "full" : "compact");
			gic_progress(SUB, ord + 1, GIC_LAT_ORDERS, name);
			L->dc = full;
			rc = run_gda(L, 0, ord, 8, name);
			L->dc = -1;
		}
	}
	L->row_params[0] = '\0';
	return rc;
}

/* The timer check (exp_lat.h) on gda-inline. */
static int run_timer(lat_run *L)
{
	int order = gic_lat_timer_order(L->st);
	gic_samples plain = { 0 }, delayed = { 0 };
	rtt_side s = { .L = L, .send = gda_send, .order = host_order(order), .pointer = 0,
		       .delay_ns = (uint64_t)L->st->timer_delay_us * 1000, .delayed = &delayed };
	char params[64];
	int rc;

	snprintf(params, sizeof(params), "size=8 qps=%d mode=host", L->nq);

	rc = run_rtt(&s, &plain);
	if (!rc && (!plain.n || !delayed.n)) {
		fprintf(stderr, "gic lat: timer check: -n %d leaves no samples of each kind\n",
			L->o->iters);
		rc = EINVAL;
	}
	if (!rc)
		rc = gic_lat_timer_emit(L->sink, L->st, order, &plain, &delayed, !s.bad,
					gic_transport(L->o), params);
	gic_samples_free(&plain);
	gic_samples_free(&delayed);
	return rc;
}

/* One proxy path: the 8-byte rows (size 0: issue, put+completion, rtt
 * with a proxy per direction) or a --sweep size's pointer rows. */
static int run_proxy_path(lat_run *L, int protocol, const char *name, size_t size)
{
	hxp px[2];
	gic_samples iss = { 0 }, putc = { 0 }, rtt = { 0 };
	const char *note = size ? "host analogue: host producer, CPU worker (T1/R1/B1); pointer "
				  "write, each destination checked after its completion"
				: "host analogue: host producers, CPU workers";
	int valid = 1, rc;

	memset(px, 0, sizeof(px));
	rc = hxp_open(&px[0], L->h, &(hxp_cfg){ .from = 0, .workers = 1, .rings = 1,
						.batch = 1, .protocol = protocol });
	if (!rc && !size)
		rc = hxp_open(&px[1], L->h, &(hxp_cfg){ .from = 1, .workers = 1, .rings = 1,
							.batch = 1, .protocol = protocol });
	if (!rc && (L->st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC))) {
		rc = lat_answerer(L) ? oneway_check(L, LAT_PROXY_SEED, size ? size : 8, &valid)
				     : oneway(L, &px[0], size > 0, LAT_PROXY_SEED, size ? size : 8,
					      &iss, &putc, &valid);
		if (!rc && (L->st->metrics & GIC_LAT_ISSUE))
			rc = lat_emit(L, name, "issue", &iss, size ? size : 8, valid, note);
		if (!rc && (L->st->metrics & GIC_LAT_PUTC))
			rc = lat_emit(L, name, "put+completion", &putc, size ? size : 8, valid, note);
		if (!rc)
			gic_pair_phase_done(L->pair, valid);
	}
	if (!rc && !size && (L->st->metrics & GIC_LAT_RTT)) {
		rtt_side s = { .L = L, .send = proxy_send, .px = { &px[0], &px[1] } };

		rc = run_rtt(&s, &rtt);
		if (!rc)
			rc = lat_emit(L, name, "rtt", &rtt, 8, !s.bad, note);
		if (!rc)
			gic_pair_phase_done(L->pair, !s.bad);
	}
	hxp_close(&px[1]);
	hxp_close(&px[0]);
	gic_samples_free(&iss);
	gic_samples_free(&putc);
	gic_samples_free(&rtt);
	return rc;
}

/* The size sweep of each path selected: gda-inline's inline sizes and
 * gda-pointer's (each order selected), the proxy paths' pointer writes.
 * Every family's sizes are checked before anything runs. */
static int run_sweep(lat_run *L)
{
	size_t sizes[2][GIC_LAT_SWEEP_MAX_SIZES];
	int n[2] = { 0, 0 }, rc = 0;

	for (int fam = 0; fam < 2 && !rc; fam++)
		if (L->st->paths & (fam ? GIC_LAT_GDA_POINTER | GIC_LAT_PROXY_BASELINE |
					      GIC_LAT_PROXY_TUNED : GIC_LAT_GDA_INLINE))
			rc = gic_lat_sweep_sizes(L->o, fam, LAT_MAX_INLINE, sizes[fam], &n[fam]);
	for (int p = 0; p < 4 && !rc; p++) {
		int fam = p > 0;

		if (!(L->st->paths & (1u << p)))
			continue;
		for (int k = 0; k < n[fam] && !rc; k++) {
			size_t sz = sizes[fam][k];
			char name[96];

			if (fam)
				snprintf(L->row_params, sizeof(L->row_params), "payload=pointer "
					 "slots=%zu check=each%s", lat_slots(L, sz),
					 p >= 2 ? " T=1 R=1 B=1" : "");
			else
				snprintf(L->row_params, sizeof(L->row_params), "payload=inline");

			if (p >= 2) {
				snprintf(name, sizeof(name), "%s size=%zu", path_names[p], sz);
				gic_progress(SUB, k + 1, n[fam], name);
				rc = run_proxy_path(L, p == 2 ? GIC_PROXY_BASELINE : GIC_PROXY_TUNED,
						    name, sz);
				continue;
			}
			for (int ord = 0; ord < GIC_LAT_ORDERS && !rc; ord++) {
				if (!(L->st->orders & (1u << ord)))
					continue;
				snprintf(name, sizeof(name), "%s %s size=%zu", path_names[p],
					 order_names[ord], sz);
				gic_progress(SUB, k + 1, n[fam], name);
				rc = run_gda(L, p == 1, ord, sz, name);
			}
		}
	}
	L->row_params[0] = '\0';
	return rc;
}

/* gda-hostdb: the 8-byte inline write of QP 0 rung by a ringer thread
 * (hostdb.h): the poster writes the WQE and the record and publishes its
 * position; put+completion waits for the CQE as gda-inline does. First
 * the control, the poster ringing in the same fixture (doorbell=poster);
 * the row's note gives the difference of the p50s. */
static int run_hostdb(lat_run *L)
{
	hx_pe *p0 = &L->h->pe[0], *p1 = &L->h->pe[1];
	uint64_t *progress = calloc(GIC_HOSTDB_STRIDE, sizeof(uint64_t));
	double p50[2] = { 0, 0 };
	int rc = progress ? 0 : ENOMEM, order = host_order(GIC_ORDER_RELEASE_SYS);
	gic_hostdb ringer;

	L->scope = GIC_LAT_SCOPE_QP;
	for (int host_rung = 0; host_rung <= 1 && !rc; host_rung++) {
		gic_samples iss = { 0 }, putc = { 0 };
		gic_summary sm;
		char note[160]; /* gic_result.note */
		int valid = 1, started = 0;

		if (host_rung) {
			uint64_t target = p0->sq[0].resv + (uint64_t)L->total; /* a BB each */

			/* The poster-rung control left the word behind the ring:
			 * catch it up (one owner here, no ringer yet). */
			gic_st_release_sys_u64(progress, p0->sq[0].resv);
			rc = gic_hostdb_init(&ringer, p0->sq, 1, progress, -1, 1);
			if (!rc && !(rc = gic_hostdb_start(&ringer, &target, HX_WAIT_NS)))
				started = 1;
		}
		for (int i = 0; i < L->total && !rc; i++) {
			size_t slot = (size_t)(i % LAT_SLOTS) * LAT_MAX_INLINE;
			uint64_t v = hx_value(3 + (uint64_t)host_rung, (uint64_t)i), t0, t1, end;

			gic_poison(p1->dst + slot, (const uint8_t *)&v, 8);
			t0 = gic_now_ns();
			rc = hx_write(L->h, 0, 0, slot, &v, slot, 8, 0, 1, !host_rung, order,
				      hx_deadline(), &end);
			if (!rc && host_rung)
				gic_hostdb_publish(&p0->sq[0], progress);
			t1 = gic_now_ns();
			if (!rc)
				rc = gic_sq_wait_retired(&p0->sq[0], end, 0, order, hx_deadline());
			if (rc) {
				hx_fail(L->h, 0, 0, host_rung ? "gda-hostdb post+wait"
							      : "gda-hostdb control post+wait", rc);
				break;
			}
			gic_samples_add(&putc, (double)(gic_now_ns() - t0) / 1e3);
			gic_samples_add(&iss, (double)(t1 - t0) / 1e3);
			if (!hx_check(SUB, "gda-hostdb payload", p1->dst + slot, (const uint8_t *)&v, 8))
				valid = 0;
		}
		if (started) {
			int jrc;

			if (rc)
				gic_hostdb_stop(&ringer);
			jrc = gic_hostdb_join(&ringer, SUB);
			rc = rc ? rc : jrc;
		}
		if (!rc && !gic_summarize(&putc, (size_t)L->o->warmup, &sm))
			p50[host_rung] = sm.p50;
		if (host_rung)
			snprintf(note, sizeof(note), "host analogue; host-rung: put+completion p50 "
				 "%+.3f us against the poster ringing here (paper: 2.6-5.8 us more)",
				 p50[1] - p50[0]);
		else
			snprintf(note, sizeof(note), "host analogue; control: the poster rings");
		for (int m = 0; m < 2 && !rc; m++) {
			const char *metric = m ? "put+completion" : "issue";

			if (!(L->st->metrics & (m ? GIC_LAT_PUTC : GIC_LAT_ISSUE)))
				continue;
			rc = lat_emit_doorbell(L, host_rung ? "gda-hostdb" : "gda-hostdb control",
					       metric, m ? &putc : &iss, valid, note, host_rung);
		}
		gic_samples_free(&iss);
		gic_samples_free(&putc);
	}
	L->scope = -1;
	free(progress);
	return rc;
}

/* The rows of one --qps count; the proxy paths, the timer check and the
 * sweep with the first count only. */
static int run_host(lat_run *L)
{
	int rc = 0;

	L->scope = -1;
	if (L->st->sweep)
		return run_sweep(L);
	for (int p = 0; p < 2 && !rc; p++) {
		if (!(L->st->paths & (1u << p)))
			continue;
		for (int ord = 0; ord < GIC_LAT_ORDERS && !rc; ord++) {
			char name[96];

			if (!(L->st->orders & (1u << ord)))
				continue;
			snprintf(name, sizeof(name), "%s %s", path_names[p], order_names[ord]);
			gic_progress(SUB, ord + 1, GIC_LAT_ORDERS, name);
			rc = run_gda(L, p == 1, ord, 8, name);
		}
	}
	if (!rc && L->first && (L->st->paths & GIC_LAT_GDA_DC_ANY) &&
	    (L->st->metrics & GIC_LAT_METRIC_ALL))
		rc = run_dc(L);
	for (int p = 2; p < 4 && !rc && L->first && (L->st->metrics & GIC_LAT_METRIC_ALL); p++)
		if (L->st->paths & (1u << p))
			rc = run_proxy_path(L, p == 2 ? GIC_PROXY_BASELINE : GIC_PROXY_TUNED,
					    path_names[p], 0);
	if (!rc && L->first && (L->st->paths & GIC_LAT_GDA_HOSTDB) &&
	    (L->st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
		rc = run_hostdb(L);
	if (!rc && L->first && (L->st->metrics & GIC_LAT_TIMER))
		rc = run_timer(L);
	return rc;
}

/* The GPU mode: the mini-gda and proxy paths in this process, then the
 * NVSHMEM path in processes of its own (nvshmem_pe.h). */
static int lat_gpu(const gic_opts *o, const lat_state *st, const gic_run_info *info,
		   gic_sink *sink)
{
	gic_nv_job job = { .kind = GIC_NV_LAT, .iters = o->iters, .warmup = o->warmup,
			   .metrics = st->metrics };
	int rc = 0, nrc;

	if ((st->paths & (GIC_LAT_PATH_ALL | GIC_LAT_GDA_HOSTDB | GIC_LAT_GDA_DC_ANY)) || st->sweep)
		rc = gic_gpu_lat(o, st, info, sink);
	if (!(st->paths & GIC_LAT_NVSHMEM))
		return rc;
	if (o->iters + o->warmup > GIC_NV_MAX_SAMPLES) {
		fprintf(stderr, "gic lat: --path nvshmem: -n plus -w must be at most %d\n",
			GIC_NV_MAX_SAMPLES);
		return rc ? rc : EINVAL;
	}
	nrc = gic_nvshmem_run(SUB, &job, sink);
	return rc ? rc : nrc;
}

/* The NCCL GIN path, in processes of its own (nccl_pe.h). */
static int lat_gin(const gic_opts *o, const lat_state *st, gic_sink *sink)
{
	gic_nc_job job = { .kind = GIC_NC_LAT, .iters = o->iters, .warmup = o->warmup,
			   .metrics = st->metrics };

	if (o->iters + o->warmup > GIC_NC_MAX_SAMPLES) {
		fprintf(stderr, "gic lat: --path gin: -n plus -w must be at most %d\n",
			GIC_NC_MAX_SAMPLES);
		return EINVAL;
	}
	return gic_nccl_run(SUB, &job, sink);
}

/* The host mode's fixture for o and st (qps and dc set per count). */
static hx_cfg lat_fixture(const gic_opts *o, const lat_state *st)
{
	hx_cfg c = { .who = SUB, .provider = o->provider, .nic = o->nic,
		     .engine_threads = 1, .log_sq_bb = 8,
		     .region = (size_t)LAT_SLOTS * LAT_MAX_INLINE };

	/* A pointer sweep's slots: two of the largest size at least. */
	if (st->sweep && (st->paths & (GIC_LAT_GDA_POINTER | GIC_LAT_PROXY_BASELINE |
				       GIC_LAT_PROXY_TUNED)))
		c.region = GIC_LAT_SWEEP_REGION;
	return c;
}

/* The rows' phases of --procs 2: per --qps count, 2 paths x 8 orders x (3
 * scopes of issue + put+completion, 1 round trip), and the 2 proxy paths'
 * (issue + put+completion, round trip); two rows per phase at most. */
enum {
	LAT_PAIR_PHASES = GIC_LAT_MAX_QPS_LIST * 2 * GIC_LAT_ORDERS * (GIC_LAT_SCOPES + 1) + 2 * 2,
	LAT_PAIR_RESULTS = 2 * LAT_PAIR_PHASES,
};

_Static_assert(sizeof(lat_state) <= GIC_PAIR_STATE_MAX, "lat's state fits a pair job");

/* 1 when st is what lat_run_fn hands its PEs (the mini-gda and proxy
 * paths). */
static int lat_pair_state_ok(const lat_state *st)
{
	if (st->nqps < 1 || st->nqps > GIC_LAT_MAX_QPS_LIST || st->sweep ||
	    (st->paths & ~(unsigned)GIC_LAT_PATH_ALL) || (st->metrics & GIC_LAT_TIMER))
		return 0;
	for (int k = 0; k < st->nqps; k++)
		if (st->qps[k] < 1 || st->qps[k] > HX_MAX_QPS)
			return 0;
	return 1;
}

/* run_pe (exp.h): the mini-gda and proxy rows as this PE of pair, a
 * fixture per --qps count. */
static int lat_run_pe(gic_pair *pair, const gic_opts *o, const void *state, size_t state_len)
{
	const lat_state *st = state;
	lat_run L = { .o = o, .st = st, .total = o->iters + o->warmup, .dc = -1, .pair = pair };
	hx_cfg c;
	int rc = 0;

	if (state_len != sizeof(*st) || !lat_pair_state_ok(st)) {
		fprintf(stderr, "gic lat: PE%d: a malformed job\n", gic_pair_rank(pair));
		return EPROTO;
	}
	if (!o->host) /* GPU mode: the PEs' GPU engines as peers */
		return gic_gpu_lat_pe(pair, o, st);
	c = lat_fixture(o, st);
	L.region = c.region;
	for (int k = 0; k < st->nqps && !rc; k++) {
		L.first = k == 0;
		L.nq = c.qps = st->qps[k];
		L.h = NULL;
		rc = gic_pair_open(pair, &L.h, &c);
		if (!rc)
			rc = run_host(&L);
		hx_close(L.h);
	}
	return rc;
}

int gic_lat_gpu_samples_ok(int n)
{
	if (n >= 1 && n <= GIC_LAT_GPU_MAX_SAMPLES)
		return 1;
	fprintf(stderr, "gic lat: -n plus -w must be 1..%d on the GPU\n", GIC_LAT_GPU_MAX_SAMPLES);
	return 0;
}

/* --procs 2 (after main's checks: --host and a provider other than
 * softnic, or the GPU mode on softnic's GPU peers): the mini-gda and proxy
 * paths (GPU mode: gda-inline, one QP, fence-gpu, at most the GPU mode's
 * samples; the default paths (all) run gda-inline, said), without --sweep
 * and the timer check. */
static int lat_check_procs(const gic_opts *o, const void *state)
{
	const lat_state *st = state;
	unsigned ok = o->host ? GIC_LAT_PATH_ALL : GIC_LAT_GDA_INLINE | GIC_LAT_GDA_POINTER;

	if (!o->host && (st->orders != (1u << GIC_ORDER_FENCE_GPU) || st->nqps != 1 ||
			 st->qps[0] != 1)) {
		fprintf(stderr, "gic lat: --procs %d in GPU mode runs one QP at --order fence-gpu\n",
			o->procs);
		return EINVAL;
	}
	if (!o->host && !gic_lat_gpu_samples_ok(o->iters + o->warmup))
		return EINVAL; /* before the PEs start, not in each of them */
	if (st->sweep || (st->metrics & GIC_LAT_TIMER)) {
		fprintf(stderr, "gic lat: --procs %d runs the mini-gda and proxy rows of issue, "
			"put+completion and rtt; not %s\n", o->procs,
			st->sweep ? "--sweep" : "--metric timer-check");
		return EINVAL;
	}
	if (st->paths != GIC_LAT_PATH_ALL && (st->paths & ~ok)) {
		fprintf(stderr, "gic lat: --procs %d runs the paths %s only\n", o->procs,
			o->host ? "gda-inline, gda-pointer, proxy-baseline and proxy-tuned"
				: "gda-inline and gda-pointer");
		return EINVAL;
	}
	return 0;
}

static int lat_run_fn(const gic_opts *o, void *state, const gic_run_info *info, gic_sink *sink)
{
	const lat_state *st = state;
	lat_run L = { .o = o, .st = st, .sink = sink, .total = o->iters + o->warmup, .dc = -1 };
	hx_cfg c = lat_fixture(o, st);
	int rc = 0;

	L.region = c.region;
	if (o->procs > 1) {
		lat_state ps = *st;

		unsigned run = o->host ? GIC_LAT_PATH_ALL : GIC_LAT_GDA_INLINE;

		if (st->paths & ~run) /* GPU mode (check_procs refused the others) */
			fprintf(stderr, "gic lat: --procs %d: the path gda-inline (the others run "
				"with one process)\n", o->procs);
		ps.paths &= run;
		return gic_pair_run(o, SUB, &ps, sizeof(ps), LAT_PAIR_PHASES, LAT_PAIR_RESULTS,
				    sink);
	}

	if (!o->host) {
		/* The GIN path runs after the others, whatever they did. */
		int grc = st->paths & ~GIC_LAT_GIN ? lat_gpu(o, st, info, sink) : 0;
		int nrc = st->paths & GIC_LAT_GIN ? lat_gin(o, st, sink) : 0;

		return grc ? grc : nrc;
	}
	if (st->paths & (GIC_LAT_NVSHMEM | GIC_LAT_GIN)) {
		fprintf(stderr, "gic lat: --path %s runs on GPUs (not with --host)\n",
			st->paths & GIC_LAT_NVSHMEM ? "nvshmem" : "gin");
		return EINVAL;
	}
	/* A fixture of its own per count: the engine sees only the QPs
	 * configured. */
	for (int k = 0; k < st->nqps && !rc; k++) {
		L.first = k == 0;
		L.nq = c.qps = st->qps[k];
		c.dc = L.first && (st->paths & GIC_LAT_GDA_DC_ANY); /* the DC rows: first count */
		L.h = NULL;
		rc = hx_open(&L.h, &c);
		if (!rc)
			rc = run_host(&L);
		hx_close(L.h);
	}
	return rc;
}

const gic_experiment gic_exp_lat = {
	.name = "lat",
	.summary = "latency of one operation: issue, put+completion, round trip (Tables 3, 4; "
		   "Figures 3a, 4)",
	.flags = &lat_table,
	.state_size = sizeof(lat_state),
	.finish = lat_finish,
	.run = lat_run_fn,
	.check_procs = lat_check_procs,
	.run_pe = lat_run_pe,
	.gpu_procs = 1,
};
