/*
 * bench/gic/exp_payload.c - `gic payload` (exp_payload.h): parsing and the
 * host mode.
 *
 * Host mode: for each size, -n pointer writes from PE0's source slots to
 * PE1's destination slots with at most --window outstanding (gda: one QP,
 * a signaled WQE every window/4 and a wait for the write `window` back;
 * proxy: a tuned mini-proxy of -T workers, -R rings and -B per doorbell,
 * default T1/R1/B16; write i on ring i % R, each ring at most window / R
 * behind its counter). Goodput
 * = bytes / time. Every destination slot is checked against its source
 * after the size's run.
 *
 * The driver runs each path asked for: gda and proxy in this process (host
 * or GPU mode), nvshmem (GPU only) in PEs of their own (nvshmem_pe.h) over
 * the same sizes as the GPU mode.
 *
 * --procs 2 (pe_pair.h; the gda and proxy paths, a pair of PE processes
 * each): the same bodies with PE1 a process of its own: for each size it
 * poisons its destination, PE 0 posts and times the size, then PE 1
 * checks every slot and sends the size's verdict (a phase per size, and
 * one for the first-size row: the AND). The proxy path's mini-proxy runs
 * in PE 0's process, its workers' QPs connected to QPs of PE 1's
 * (hxp_open on both); PE 0 signals the size's end once every counter
 * covers its writes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_payload.h"
#include "gic.h"
#include "host.h"
#include "nvshmem_pe.h"
#include "pe_pair.h"

#define SUB "payload"
#define REGION ((size_t)4 << 20)

#define F(m) GIC_FLAG_FIELD(payload_state, m)
static const gic_flag payload_flags[] = {
	{ "-b/-e/-f", .kind = GIC_FLAG_NOTE,
	  .help = "sizes (common flags; default 8..1M by 2, host --quick 8..16K by 4)" },
	{ "--path", .value = "P", GIC_FLAG_BITS, F(paths),
	  GIC_FLAG_NAMES("gda", "proxy", "nvshmem"), .fn = gic_flag_lib_path, .dflt = "gda",
	  .help = "\nnvshmem: the NVSHMEM path between two GPUs (PE r on CUDA device r, one "
	  "process each): nvshmem_putmem_nbi from one thread and nvshmemx_putmem_nbi_block from "
	  "one CTA, one quiet at the end; GPU mode only; " GIC_NVSHMEM_HELP_SKIPS },
	{ "--window", .value = "N", GIC_FLAG_INT, F(window), .lo = 1, .hi = 4096, .def = 64,
	  .help = "outstanding writes (not nvshmem)" },
	{ "--reference", .value = "S", GIC_FLAG_SIZE, F(reference), .lo = 1, .hi = 1l << 30,
	  .dflt = "the largest", .help = "the size whose goodput is the reference" },
	{ "-T", .value = "N", GIC_FLAG_INT, F(T), .lo = 1, .hi = GIC_PROXY_MAX_WORKERS,
	  .dflt = "1", .help = "--path proxy: CPU workers", .param = "T" },
	{ "-R", .value = "N", GIC_FLAG_INT, F(R), .lo = 1, .hi = GIC_PROXY_MAX_RINGS, .dflt = "1",
	  .help = "--path proxy: rings, a producer each, at least -T (GPU: a producer CTA each, "
	  "write i from ring i % R)", .param = "R" },
	{ "-B", .value = "N", GIC_FLAG_INT, F(B), .lo = 1, .hi = GIC_PROXY_MAX_BATCH, .dflt = "16",
	  .help = "--path proxy: requests per doorbell", .param = "B" },
	{ "--qps", .value = "N", GIC_FLAG_INT, F(qps), .lo = 1, .hi = 64, .dflt = "1",
	  .help = "GPU gda path: N QPs, a poster CTA each", .param = "qps" },
	{ "--reps", .value = "N", GIC_FLAG_INT, F(reps), .lo = 1, .hi = 100, .dflt = "1",
	  .help = "GPU gda path: runs per size, the row's samples", .param = "reps" },
	{ "--engine-blocks", .value = "N", GIC_FLAG_INT, F(engine_blocks), .lo = 1, .hi = 132,
	  .dflt = "4", .help = "GPU gda path on softnic's GPU engine: its blocks" },
	{ "--engine-warps", .value = "N", GIC_FLAG_INT, F(engine_warps), .lo = 1, .hi = 9,
	  .dflt = "4", .help = "GPU gda path on softnic's GPU engine: warps per block" },
};
#undef F
const gic_flag_table gic_payload_flags = GIC_FLAG_TABLE(SUB, payload_flags, 0);

static int payload_finish(void *state, unsigned marks)
{
	payload_state *st = state;

	(void)marks;
	if (!st->paths)
		st->paths = 1u << GIC_PAYLOAD_GDA;
	if ((st->T || st->R || st->B) && !(st->paths & (1u << GIC_PAYLOAD_PROXY))) {
		fprintf(stderr, "gic payload: -T, -R and -B shape the proxy path: add --path proxy\n");
		return EINVAL;
	}
	if ((st->qps || st->reps || st->engine_blocks || st->engine_warps) &&
	    !(st->paths & (1u << GIC_PAYLOAD_GDA))) {
		fprintf(stderr, "gic payload: --qps, --reps and --engine-* shape the gda path\n");
		return EINVAL;
	}
	st->qps = st->qps ? st->qps : 1;
	st->reps = st->reps ? st->reps : 1;
	st->T = st->T ? st->T : 1;
	st->R = st->R ? st->R : 1;
	st->B = st->B ? st->B : 16;
	if (st->R < st->T) {
		fprintf(stderr, "gic payload: -R %d below -T %d: every worker needs a ring\n", st->R,
			st->T);
		return EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Host mode. */

typedef struct pl_host {
	const gic_opts *o;
	const payload_state *st;
	hx *h;
	hxp x;
	size_t b, e;
	double f;
	uint64_t done[GIC_PROXY_MAX_RINGS]; /* proxy: writes ring r completed in earlier sizes */
	gic_pair *pair;      /* --procs 2: this process's PE (NULL: both PEs here) */
} pl_host;

/* Phases of --procs 2: a size each (pl_sizes takes at most 64), and the
 * first-size row. */
enum { PL_MAX_SIZES = 64, PL_PAIR_PHASES = PL_MAX_SIZES + 1 };

/* The next size of the sweep after sz. */
static size_t next_size(const pl_host *P, size_t sz)
{
	size_t n = (size_t)((double)sz * P->f);

	return n > sz ? n : sz + 1;
}

/* The source slots get a pattern per (size, slot): PE 0's source (--procs
 * 2 PE 1: its own, the copy it checks against); PE 1's destination slots
 * its complement. */
static size_t pl_prepare(pl_host *P, size_t size)
{
	uint8_t *pat = P->h->pe[gic_pair_rank(P->pair)].src;
	size_t slots = REGION / size;

	if (slots > (size_t)P->o->iters)
		slots = (size_t)P->o->iters;
	for (size_t s = 0; s < slots; s++) {
		hx_fill(pat + s * size, size, (size << 20) ^ s);
		if (gic_pair_checks(P->pair))
			gic_poison(P->h->pe[1].dst + s * size, pat + s * size, size);
	}
	return slots;
}

static int pl_gda(pl_host *P, size_t size, size_t slots)
{
	gic_sq *sq = &P->h->pe[0].sq[0];
	int w = P->st->window, sig = w / 4 ? w / 4 : 1, rc = 0;

	for (int i = 0; i < P->o->iters && !rc; i++) {
		size_t off = (size_t)i % slots * size;
		int last = i + 1 == P->o->iters;

		if (i >= w)
			rc = gic_sq_wait_retired(sq, sq->resv + 1 - (uint64_t)w, 0,
						 GIC_ORDER_RELEASE_SYS, hx_deadline());
		if (!rc)
			rc = hx_write(P->h, 0, 0, off, NULL, off, size, 1, (i + 1) % sig == 0 || last,
				      1, GIC_ORDER_RELEASE_SYS, hx_deadline(), NULL);
	}
	if (!rc)
		rc = gic_sq_quiet(sq, GIC_ORDER_RELEASE_SYS, hx_deadline());
	return rc ? hx_fail(P->h, 0, 0, "payload", rc) : 0;
}

/* Write i on ring r = i % R, counted on counter r; a ring's k-th write
 * waits until its counter covers its write k - window / R. */
static int pl_proxy(pl_host *P, size_t size, size_t slots)
{
	uint64_t *done = P->done;
	int R = P->st->R, per_ring = P->st->window / R > 0 ? P->st->window / R : 1, rc = 0;

	for (int i = 0; i < P->o->iters && !rc; i++) {
		size_t off = (size_t)i % slots * size;
		int r = i % R, k = i / R;
		gic_proxy_desc d;

		if (k >= per_ring)
			rc = gic_proxy_wait_counter(&P->x.views[r], &P->x.counters[r],
						    done[r] + (uint64_t)(k + 1 - per_ring),
						    hx_deadline());
		if (!rc)
			rc = gic_proxy_desc_pointer(&d, off, off, (uint32_t)size, (uint32_t)r);
		if (!rc)
			rc = gic_proxy_enqueue(&P->x.views[r], &d, hx_deadline(), NULL);
	}
	for (int r = 0; r < R && !rc; r++) {
		done[r] += (uint64_t)(P->o->iters / R + (r < P->o->iters % R));
		rc = gic_proxy_wait_counter(&P->x.views[r], &P->x.counters[r], done[r],
					    hx_deadline());
	}
	return rc ? hxp_fail(&P->x, SUB, "payload", rc) : 0;
}

static int pl_validate(pl_host *P, size_t size, size_t slots)
{
	const uint8_t *pat = P->h->pe[gic_pair_rank(P->pair)].src; /* pl_prepare's */

	for (size_t s = 0; s < slots; s++)
		if (!hx_check(SUB, "destination slot", P->h->pe[1].dst + s * size, pat + s * size,
			      size))
			return 0;
	return 1;
}

/* One size's measurement: the writes timed (*ns), then every slot checked
 * (*valid; 1 where this process checks nothing: PE 0 of a pair). */
static int pl_measure(pl_host *P, size_t size, size_t slots, uint64_t *ns, int *valid)
{
	int rc = gic_pair_begin(P->pair, P->h);
	uint64_t t0 = gic_now_ns();

	if (!rc && gic_pair_posts(P->pair)) {
		rc = P->st->path ? pl_proxy(P, size, slots) : pl_gda(P, size, slots);
		*ns = gic_now_ns() - t0;
	}
	if (!rc)
		rc = gic_pair_end(P->pair, P->h);
	*valid = !rc && gic_pair_checks(P->pair) ? pl_validate(P, size, slots) : 1;
	return rc;
}

static void pl_describe(pl_host *P, gic_result *r, size_t size)
{
	gic_result_param(r, "path=%s window=%d size=%zu writes=%d",
			 P->st->path ? "proxy" : "gda", P->st->window, size, P->o->iters);
	if (P->st->path == GIC_PAYLOAD_PROXY) {
		gic_result_flag_params(r, &gic_payload_flags, P->st, "T R B");
		gic_result_param(r, "protocol=tuned");
	}
	if (P->pair)
		gic_result_param(r, "procs=2");
	snprintf(r->transport, sizeof(r->transport), "%s", gic_transport(P->o));
	snprintf(r->note, sizeof(r->note), "host analogue: %s moves the data",
		 P->o->provider == GIC_PROV_MLX5 ? "the mlx5 device" : "softnic's CPU engine");
	gic_result_paper(r);
}

/* Puts the goodput row of size sz (g GB/s). */
static int pl_put_size(pl_host *P, gic_sink *sink, size_t sz, double g, int valid)
{
	gic_result r;
	char name[96];

	snprintf(name, sizeof(name), "%s size=%zu", P->st->path ? "proxy" : "gda", sz);
	gic_result_init(&r, SUB, name, "goodput", "GB/s");
	gic_result_set_value(&r, g);
	r.validated = valid;
	pl_describe(P, &r, sz);
	return gic_pair_put(P->pair, sink, &r);
}

/* Runs the sizes, a phase each; goodputs in *g (GB/s; PE 1 of a pair: 0),
 * *valid the AND of the checks. */
static int pl_sizes(pl_host *P, gic_sink *sink, double *g, size_t *sizes, int *n, int *valid)
{
	int rc = 0;

	*n = 0;
	for (size_t sz = P->b; sz <= P->e && !rc && *n < PL_MAX_SIZES; sz = next_size(P, sz)) {
		size_t slots = pl_prepare(P, sz);
		uint64_t ns = 0;
		int ok = 0;

		gic_progress(SUB, (int)*n + 1, 0, "size");
		rc = pl_measure(P, sz, slots, &ns, &ok);
		if (rc)
			break;
		g[*n] = ns ? (double)sz * P->o->iters / (double)ns : 0;
		sizes[*n] = sz;
		*valid &= ok;
		if (gic_pair_posts(P->pair))
			rc = pl_put_size(P, sink, sz, g[*n], ok);
		if (!rc)
			gic_pair_phase_done(P->pair, ok);
		(*n)++;
	}
	return rc;
}

/* The first size reaching 90% of the reference's goodput. */
static int pl_first90(pl_host *P, gic_sink *sink, const double *g, const size_t *sizes, int n,
		      int valid)
{
	double ref = g[n - 1];
	size_t first = sizes[n - 1];
	gic_result r;

	for (int i = 0; i < n; i++)
		if (sizes[i] == P->st->reference)
			ref = g[i];
	for (int i = n - 1; i >= 0 && g[i] >= 0.9 * ref; i--)
		first = sizes[i];
	gic_result_init(&r, SUB, P->st->path ? "proxy" : "gda", "first size at 90% of own max",
			"B");
	gic_result_set_value(&r, (double)first);
	r.validated = valid;
	pl_describe(P, &r, first);
	snprintf(r.note, sizeof(r.note), "host analogue; reference %.3f GB/s at %zu B", ref,
		 P->st->reference ? P->st->reference : sizes[n - 1]);
	return gic_pair_put(P->pair, sink, &r);
}

static int pl_host_run(pl_host *P, gic_sink *sink)
{
	hx_cfg c = { .who = SUB, .provider = P->o->provider, .nic = P->o->nic,
		     .engine_threads = 1, .qps = 1, .log_sq_bb = 13,
		     .region = REGION };
	double g[PL_MAX_SIZES];
	size_t sizes[PL_MAX_SIZES];
	int n = 0, valid = 1, rc = gic_pair_open(P->pair, &P->h, &c);

	if (!rc && P->st->path == GIC_PAYLOAD_PROXY)
		rc = hxp_open(&P->x, P->h, &(hxp_cfg){ .from = 0, .workers = P->st->T,
						       .rings = P->st->R, .batch = P->st->B,
						       .protocol = GIC_PROXY_TUNED,
						       .log_slots = 12 });
	if (!rc)
		rc = pl_sizes(P, sink, g, sizes, &n, &valid);
	if (!rc && n && gic_pair_posts(P->pair))
		rc = pl_first90(P, sink, g, sizes, n, valid);
	if (!rc && n)
		gic_pair_phase_done(P->pair, valid);
	hxp_close(&P->x);
	hx_close(P->h);
	return rc;
}

/* The host mode's sizes from o into P (b, e, f); EINVAL after a message. */
static int pl_host_sizes(pl_host *P, const gic_opts *o)
{
	if (P->st->qps > 1 || P->st->reps > 1 || P->st->engine_blocks || P->st->engine_warps) {
		fprintf(stderr, "gic payload: --qps, --reps and --engine-* are GPU-mode flags\n");
		return EINVAL;
	}
	P->b = o->given & GIC_GIVEN_B ? o->size_begin : 8;
	P->e = o->given & GIC_GIVEN_E ? o->size_end : (o->quick ? 16384 : (size_t)1 << 20);
	P->f = o->given & GIC_GIVEN_F ? o->size_factor : (o->quick ? 4 : 2);
	if (P->e > REGION || P->e > GIC_PROXY_DESC_MAX_LENGTH) {
		fprintf(stderr, "gic payload: -e %zu: the host mode goes up to %zu bytes\n", P->e,
			REGION < GIC_PROXY_DESC_MAX_LENGTH ? REGION :
			(size_t)GIC_PROXY_DESC_MAX_LENGTH);
		return EINVAL;
	}
	return 0;
}

/* Host mode of one path (st->path): in this process (pair NULL), or as
 * this PE of a pair. */
static int payload_host(const gic_opts *o, const payload_state *st, gic_pair *pair,
			gic_sink *sink)
{
	pl_host P = { .o = o, .st = st, .pair = pair };

	return pl_host_sizes(&P, o) ? EINVAL : pl_host_run(&P, sink);
}

_Static_assert(sizeof(payload_state) <= GIC_PAIR_STATE_MAX, "payload's state fits a pair job");

/* run_pe (exp.h): one path's sizes (gda or proxy) as this PE of pair. */
static int payload_run_pe(gic_pair *pair, const gic_opts *o, const void *state,
			  size_t state_len)
{
	const payload_state *st = state;

	if (state_len != sizeof(*st) || st->path < GIC_PAYLOAD_GDA ||
	    st->path > GIC_PAYLOAD_PROXY || st->window < 1 || st->window > 4096 || st->T < 1 ||
	    st->T > GIC_PROXY_MAX_WORKERS || st->R < st->T || st->R > GIC_PROXY_MAX_RINGS ||
	    st->B < 1 || st->B > GIC_PROXY_MAX_BATCH) {
		fprintf(stderr, "gic payload: PE%d: a malformed job\n", gic_pair_rank(pair));
		return EPROTO;
	}
	return o->host ? payload_host(o, st, pair, NULL) : gic_gpu_payload_pe(pair, o, st);
}

/* --procs 2: the host mode's gda and proxy paths (nvshmem is refused with
 * --host); in GPU mode (softnic's GPU peers) the gda path alone. */
static int payload_check_procs(const gic_opts *o, const void *state)
{
	const payload_state *st = state;

	if (o->host)
		return 0;
	if (st->paths != 1u << GIC_PAYLOAD_GDA) { /* --qps is 1..64 already, within the pair's */
		fprintf(stderr, "gic payload: --procs 2 in GPU mode runs --path gda alone\n");
		return EINVAL;
	}
	return 0;
}

/* --procs 2: each path asked for (gda, then proxy, as the one-process
 * mode) in a pair of PE processes of its own; the first error. */
static int payload_pair(const gic_opts *o, const payload_state *st, gic_sink *sink)
{
	pl_host P = { .o = o, .st = st };
	int rc = 0;

	if (o->host && pl_host_sizes(&P, o)) /* said here, before the PEs start */
		return EINVAL;
	for (int p = GIC_PAYLOAD_GDA; p <= GIC_PAYLOAD_PROXY && !rc; p++) {
		payload_state one = *st;

		one.path = p;
		if (st->paths & (1u << p))
			rc = gic_pair_run(o, SUB, &one, sizeof(one), PL_PAIR_PHASES, PL_PAIR_PHASES,
					  sink);
	}
	return rc;
}

/* The NVSHMEM path: the GPU mode's sizes (-b/-e/-f, else 8 B .. 1 MiB by
 * 2), one job (nvshmem_pe.h). */
static int payload_nvshmem(const gic_opts *o, const payload_state *st, gic_sink *sink)
{
	gic_nv_job job = { .kind = GIC_NV_PAYLOAD, .iters = o->iters,
			   .reference = st->reference };
	double first = o->given & GIC_GIVEN_B ? (double)o->size_begin : 8;
	double last = o->given & GIC_GIVEN_E ? (double)o->size_end : (double)(1 << 20);
	double factor = o->given & GIC_GIVEN_F ? o->size_factor : 2;

	if (last > GIC_NV_REGION) {
		fprintf(stderr, "gic payload: --path nvshmem: -e %.0f: sizes go up to %d bytes\n",
			last, GIC_NV_REGION);
		return EINVAL;
	}
	for (double sz = first; sz <= last && job.nsizes < GIC_NV_MAX_SIZES; sz *= factor)
		if ((uint32_t)sz >= 1)
			job.sizes[job.nsizes++] = (uint32_t)sz;
	if (!job.nsizes) {
		fprintf(stderr, "gic payload: --path nvshmem: no size in -b..-e\n");
		return EINVAL;
	}
	return gic_nvshmem_run(SUB, &job, sink);
}

/* Every path asked for: gda and proxy in this process, then nvshmem in PEs
 * of its own. What ran is kept when a later part fails; the first error
 * is returned. */
static int payload_run(const gic_opts *o, void *state, const gic_run_info *info,
		       gic_sink *sink)
{
	const payload_state *st = state;
	int rc = 0;

	if (o->host && (st->paths & (1u << GIC_PAYLOAD_NVSHMEM))) {
		fprintf(stderr, "gic payload: --path nvshmem runs on GPUs (not with --host)\n");
		return EINVAL;
	}
	if (o->procs > 1)
		return payload_pair(o, st, sink);
	for (int p = GIC_PAYLOAD_GDA; p <= GIC_PAYLOAD_PROXY; p++) {
		payload_state one = *st;
		int prc;

		if (!(st->paths & (1u << p)))
			continue;
		one.path = p;
		prc = o->host ? payload_host(o, &one, NULL, sink)
			      : gic_gpu_payload(o, &one, info, sink);
		rc = rc ? rc : prc;
	}
	if (st->paths & (1u << GIC_PAYLOAD_NVSHMEM)) {
		int nrc = payload_nvshmem(o, st, sink);

		rc = rc ? rc : nrc;
	}
	return rc;
}

const gic_experiment gic_exp_payload = {
	.name = "payload",
	.summary = "pipelined goodput against payload size; first size at 90% (Figure 8)",
	.flags = &gic_payload_flags,
	.state_size = sizeof(payload_state),
	.finish = payload_finish,
	.run = payload_run,
	.check_procs = payload_check_procs,
	.run_pe = payload_run_pe,
	.gpu_procs = 1,
};
