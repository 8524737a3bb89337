/*
 * bench/gic/exp_rate.c - `gic rate` (exp_rate.h): parsing, the Table 5
 * rows, and the host mode.
 *
 * Host mode: the row's threads are host threads (at most HOST_MAX_THREADS;
 * QPs scale down with them), thread t posting -n writes on QP t % qps:
 * own (exclusive queue, --batch WQEs per doorbell, the last signaled), lock
 * (one lock per WQE) or handoff (per-thread hand-off); warp runs as handoff
 * (warps are a GPU notion). The rate is every write over the time from the
 * start to the final quiet of every QP. Each thread writes its own slots;
 * after the run every slot must hold the last value written to it.
 *
 * --procs 2 (pe_pair.h): the same row bodies with PE1 a process of its
 * own: it clears its destination, PE 0 posts and times the row, then PE 1
 * checks every slot and sends the row's verdict (a phase per row).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_rate.h"
#include "gic.h"
#include "host.h"
#include "hostdb.h"
#include "nccl_pe.h"
#include "nvshmem_pe.h"
#include "pe_pair.h"

#define SUB "rate"
enum { HOST_MAX_THREADS = 8, RATE_SLOTS = 64, RATE_SIGNAL_EVERY = 16 };

static const char *const mode_names[] = { "own", "lock", "handoff", "warp", "nvshmem", "gin",
					  "cta", "rr", "caslock" };

static const rate_row table5[] = {
	{ "t1-q1-b1", 1, 1, 1, 1, GIC_RATE_OWN, 0, 8 },
	{ "t1-q1-b16", 1, 1, 1, 16, GIC_RATE_OWN, 0, 8 },
	{ "t32-q1-lock", 32, 1, 1, 1, GIC_RATE_LOCK, 0, 8 },
	{ "t256-q1-handoff", 256, 1, 1, 32, GIC_RATE_HANDOFF, 0, 8 },
	{ "t32-q1-warp", 32, 1, 1, 32, GIC_RATE_WARP, 0, 8 },
	{ "t256-q1-warp", 256, 1, 1, 32, GIC_RATE_WARP, 0, 8 },
	{ "t16-q16-s16-b1", 16, 16, 16, 1, GIC_RATE_OWN, 0, 8 },
	{ "t16-q16-s16-b16", 16, 16, 16, 16, GIC_RATE_OWN, 0, 8 },
	/* The same, its doorbells rung by one pinned host thread ("GPU
	 * submission is not needed for peak rate"). */
	{ "t16-q16-s16-b16-hostdb", 16, 16, 16, 16, GIC_RATE_OWN, 0, 8, 0, 0, 1 },
	{ "t32-q32-s1-b16", 32, 32, 1, 16, GIC_RATE_OWN, 0, 8 },
	{ "t64-q64-s1-b16", 64, 64, 1, 16, GIC_RATE_OWN, 0, 8 },
	{ "t64-q64-s64-b16", 64, 64, 64, 16, GIC_RATE_OWN, 0, 8 },
	/* Table 5's second row: one thread over 2-32 QPs, round-robin, one
	 * doorbell per QP per WQE. */
	{ "t1-q2-rr", 1, 2, 1, 1, GIC_RATE_RR, 0, 8 },
	{ "t1-q4-rr", 1, 4, 1, 1, GIC_RATE_RR, 0, 8 },
	{ "t1-q8-rr", 1, 8, 1, 1, GIC_RATE_RR, 0, 8 },
	{ "t1-q16-rr", 1, 16, 1, 1, GIC_RATE_RR, 0, 8 },
	{ "t1-q32-rr", 1, 32, 1, 1, GIC_RATE_RR, 0, 8 },
	/* One QP per CTA, warp-cooperative (Table 5's double dagger, Table 13's
	 * mini-gda 16 QPs, 4096 threads). */
	{ "t4096-q16-s16-cta", 4096, 16, 16, 32, GIC_RATE_CTA, 0, 8 },
	/* The same posters, one host thread forwarding every doorbell: the
	 * ringer's own ceiling at 16 active QPs (the paper: 257-258 M msg/s). */
	{ "t4096-q16-s16-cta-hostdb", 4096, 16, 16, 32, GIC_RATE_CTA, 0, 8, 0, 0, 1 },
	/* The previous lock row (compare-and-swap lock), beside the ticket lock. */
	{ "t32-q1-caslock", 32, 1, 1, 1, GIC_RATE_CASLOCK, 0, 8 },
	/* As the paper measures: 2^10-BB rings that wrap 16 times, completions
	 * reclaimed while posting, the final drain counted. */
	{ "t1-q1-b1-wrap", 1, 1, 1, 1, GIC_RATE_OWN, 0, 8, 0, 10 },
	{ "t1-q1-b16-wrap", 1, 1, 1, 16, GIC_RATE_OWN, 0, 8, 0, 10 },
	{ "t32-q1-lock-wrap", 32, 1, 1, 1, GIC_RATE_LOCK, 0, 8, 0, 10 },
	{ "t256-q1-handoff-wrap", 256, 1, 1, 32, GIC_RATE_HANDOFF, 0, 8, 0, 10 },
	{ "t32-q1-warp-wrap", 32, 1, 1, 32, GIC_RATE_WARP, 0, 8, 0, 10 },
	{ "t256-q1-warp-wrap", 256, 1, 1, 32, GIC_RATE_WARP, 0, 8, 0, 10 },
	{ "t16-q16-s16-b16-wrap", 16, 16, 16, 16, GIC_RATE_OWN, 0, 8, 0, 10 },
	{ "t64-q64-s64-b16-wrap", 64, 64, 64, 16, GIC_RATE_OWN, 0, 8, 0, 10 },
	{ "t1-q8-rr-wrap", 1, 8, 1, 1, GIC_RATE_RR, 0, 8, 0, 10 },
};

/* Figure 3b: inline against pointer payloads as the size grows, at the
 * paper's 16 QPs (16 threads, each owning one, on 16 CTAs), 16 WQEs per
 * doorbell; inline payloads in registers (the paper's mini-gda) and staged
 * in GPU memory (payload in memory). The fig3b-q1-* rows are the same on
 * one thread and one QP. Asked for by name, as fig3b (the 16-QP rows) or
 * as fig3b-q1 (the one-QP rows). */
static const rate_row fig3b_rows[] = {
	{ "fig3b-inline-8", 16, 16, 16, 16, GIC_RATE_OWN, 0, 8, 0 },
	{ "fig3b-inline-staged-8", 16, 16, 16, 16, GIC_RATE_OWN, 0, 8, 1 },
	{ "fig3b-pointer-8", 16, 16, 16, 16, GIC_RATE_OWN, 1, 8, 0 },
	{ "fig3b-inline-64", 16, 16, 16, 16, GIC_RATE_OWN, 0, 64, 0 },
	{ "fig3b-inline-staged-64", 16, 16, 16, 16, GIC_RATE_OWN, 0, 64, 1 },
	{ "fig3b-pointer-64", 16, 16, 16, 16, GIC_RATE_OWN, 1, 64, 0 },
	{ "fig3b-inline-256", 16, 16, 16, 16, GIC_RATE_OWN, 0, 256, 0 },
	{ "fig3b-inline-staged-256", 16, 16, 16, 16, GIC_RATE_OWN, 0, 256, 1 },
	{ "fig3b-pointer-256", 16, 16, 16, 16, GIC_RATE_OWN, 1, 256, 0 },
	{ "fig3b-q1-inline-8", 1, 1, 1, 16, GIC_RATE_OWN, 0, 8, 0 },
	{ "fig3b-q1-inline-staged-8", 1, 1, 1, 16, GIC_RATE_OWN, 0, 8, 1 },
	{ "fig3b-q1-pointer-8", 1, 1, 1, 16, GIC_RATE_OWN, 1, 8, 0 },
	{ "fig3b-q1-inline-64", 1, 1, 1, 16, GIC_RATE_OWN, 0, 64, 0 },
	{ "fig3b-q1-inline-staged-64", 1, 1, 1, 16, GIC_RATE_OWN, 0, 64, 1 },
	{ "fig3b-q1-pointer-64", 1, 1, 1, 16, GIC_RATE_OWN, 1, 64, 0 },
	{ "fig3b-q1-inline-256", 1, 1, 1, 16, GIC_RATE_OWN, 0, 256, 0 },
	{ "fig3b-q1-inline-staged-256", 1, 1, 1, 16, GIC_RATE_OWN, 0, 256, 1 },
	{ "fig3b-q1-pointer-256", 1, 1, 1, 16, GIC_RATE_OWN, 1, 256, 0 },
};

/* The NVSHMEM rows (exp_rate.h): asked for by name only. */
static const rate_row nvshmem_rows[] = {
	{ "nvshmem-t1", 1, 1, 1, 1, GIC_RATE_NVSHMEM, 0, 8 },
	{ "nvshmem-t32", 32, 1, 1, 1, GIC_RATE_NVSHMEM, 0, 8 },
	{ "nvshmem-t256", 256, 1, 1, 1, GIC_RATE_NVSHMEM, 0, 8 },
	{ "nvshmem-t4096-c16", 4096, 1, 16, 1, GIC_RATE_NVSHMEM, 0, 8 },
};

/* The NCCL GIN rows (exp_rate.h): asked for by name only. */
static const rate_row gin_rows[] = {
	{ "gin-t1", 1, 1, 1, 1, GIC_RATE_GIN, 0, 8 },
	{ "gin-t32", 32, 1, 1, 1, GIC_RATE_GIN, 0, 8 },
	{ "gin-t256", 256, 1, 1, 1, GIC_RATE_GIN, 0, 8 },
	{ "gin-t4096-c16", 4096, 1, 16, 1, GIC_RATE_GIN, 0, 8 },
};

const rate_row *gic_rate_rows(int *n)
{
	*n = (int)(sizeof(table5) / sizeof(table5[0]));
	return table5;
}

const char *gic_rate_mode_name(int mode)
{
	return mode >= 0 && mode < (int)(sizeof(mode_names) / sizeof(mode_names[0]))
		       ? mode_names[mode] : NULL;
}

const char *gic_rate_payload_name(const rate_row *r)
{
	return r->pointer ? "pointer" : r->staged ? "inline-staged" : "inline";
}

const char *gic_rate_doorbell_name(const rate_row *r)
{
	return r->host_rung ? "host-rung" : "poster";
}

/* ------------------------------------------------------------------ */
/* Flags. A row from flags keeps -1 for threads, sms and size until run()
 * takes them from -t, -c and -b. */

/* Appends row; EINVAL when full. */
static int add_row(rate_state *st, const rate_row *row)
{
	if (st->nrows >= GIC_RATE_MAX_ROWS) {
		fprintf(stderr, "gic rate: --row: at most %d rows\n", GIC_RATE_MAX_ROWS);
		return EINVAL;
	}
	st->rows[st->nrows++] = *row;
	return 0;
}

/* A library's rows: --row LIB (all of them) or one by name, LIB being
 * NVSHMEM's "nvshmem" or NCCL GIN's "gin". */
typedef struct lib_rows {
	const char *prefix;
	const rate_row *rows;
	int n;
	int (*built)(void);
	int (*not_built)(const char *sub, const char *flag, const char *val);
} lib_rows;

/* 1 when val names rows of lib (added, or -1 after a message: too many
 * rows, or the library path not built), 0 when not. */
static int add_lib_rows(rate_state *st, const lib_rows *lib, const char *val)
{
	int hit = 0;

	if (strncmp(val, lib->prefix, strlen(lib->prefix)))
		return 0;
	for (int i = 0; i < lib->n; i++) {
		if (strcmp(val, lib->prefix) && strcmp(val, lib->rows[i].name))
			continue;
		if (!lib->built())
			return lib->not_built(SUB, "--row", val), -1;
		if (add_row(st, &lib->rows[i]))
			return -1;
		hit = 1;
	}
	return hit;
}

/* --row fig3b or fig3b-*: 1 when val names Figure 3b rows (added, or -1
 * after a message), 0 when not. */
static int add_fig3b_rows(rate_state *st, const char *val)
{
	int n = (int)(sizeof(fig3b_rows) / sizeof(fig3b_rows[0])), hit = 0;

	for (int i = 0; i < n; i++) {
		int q1 = !strncmp(fig3b_rows[i].name, "fig3b-q1-", 9);

		if (strcmp(val, q1 ? "fig3b-q1" : "fig3b") && strcmp(val, fig3b_rows[i].name))
			continue;
		if (add_row(st, &fig3b_rows[i]))
			return -1;
		hit = 1;
	}
	return hit;
}

static int add_row_by_name(rate_state *st, const char *val)
{
	static const lib_rows nvshmem = { "nvshmem", nvshmem_rows,
					  (int)(sizeof(nvshmem_rows) / sizeof(nvshmem_rows[0])),
					  gic_nvshmem_built, gic_nvshmem_not_built };
	static const lib_rows gin = { "gin", gin_rows, (int)(sizeof(gin_rows) / sizeof(gin_rows[0])),
				      gic_nccl_built, gic_nccl_not_built };
	int n, nv = add_lib_rows(st, &nvshmem, val), gn = nv ? 0 : add_lib_rows(st, &gin, val);
	int fb = nv || gn ? 0 : add_fig3b_rows(st, val);
	const rate_row *rows = gic_rate_rows(&n);

	if (nv)
		return nv < 0 ? EINVAL : 0;
	if (gn)
		return gn < 0 ? EINVAL : 0;
	if (fb)
		return fb < 0 ? EINVAL : 0;

	for (int i = 0; i < n; i++) {
		if (strcmp(val, "all") && strcmp(val, rows[i].name))
			continue;
		if (st->nrows >= GIC_RATE_MAX_ROWS) {
			fprintf(stderr, "gic rate: --row: at most %d rows\n", GIC_RATE_MAX_ROWS);
			return EINVAL;
		}
		st->rows[st->nrows++] = rows[i];
		if (strcmp(val, "all"))
			return 0;
	}
	if (!strcmp(val, "all"))
		return 0;
	fprintf(stderr, "gic rate: --row: unknown row '%s' (see gic rate --help)\n", val);
	return EINVAL;
}

static int row_flag(const char *sub, const gic_flag *f, const char *val, void *state)
{
	(void)sub, (void)f;
	return add_row_by_name(state, val);
}

/* --payload's check, before the engine sets rows[0].pointer from the name:
 * rows[0].staged for inline-staged. */
static int staged_flag(const char *sub, const gic_flag *f, const char *val, void *state)
{
	(void)sub, (void)f;
	((rate_state *)state)->rows[0].staged = !strcmp(val, "inline-staged");
	return 0;
}

/* The mark of the row flags (--row excludes them). */
enum { RATE_BY_FLAGS = 1 };

/* The row flags set rows[0], the row run without --row. */
#define F(m) GIC_FLAG_FIELD(rate_state, rows[0].m)
static const gic_flag rate_flags[] = {
	{ "--row", .value = "NAME", GIC_FLAG_CUSTOM, .fn = row_flag,
	  .help = "a Table 5 row, repeatable, or all: t1-q1-b1, t1-q1-b16, t32-q1-lock, "
	  "t256-q1-handoff, t32-q1-warp, t256-q1-warp, t16-q16-s16-b1, t16-q16-s16-b16, "
	  "t32-q32-s1-b16, t64-q64-s1-b16, t64-q64-s64-b16, t16-q16-s16-b16-hostdb "
	  "(t16-q16-s16-b16 with host-rung doorbells: see --doorbell), t1-qN-rr (N = 2, 4, 8, 16, "
	  "32: one thread round-robin over N QPs), t4096-q16-s16-cta (one QP per CTA, "
	  "warp-cooperative), t4096-q16-s16-cta-hostdb (the same, one host thread forwarding "
	  "every doorbell: the ringer's ceiling; GPU only, the host runs it poster-rung), "
	  "t32-q1-caslock (the lock row under a compare-and-swap lock; t32-q1-lock uses a ticket "
	  "lock), and NAME-wrap for t1-q1-b1, t1-q1-b16, t32-q1-lock, t256-q1-handoff, "
	  "t32-q1-warp, t256-q1-warp, t16-q16-s16-b16, t64-q64-s64-b16, t1-q8-rr: 2^10-BB rings "
	  "wrapping 16 times, completions reclaimed while posting, \"message rate\" to the last "
	  "CQE (the paper's method) and \"message rate posting only\"\n"
	  "or Figure 3b's (not in all; 16 threads each on its own QP, 16 CTAs, 16 per doorbell): "
	  "fig3b-inline-S, fig3b-inline-staged-S, fig3b-pointer-S for S = 8, 64, 256, or fig3b "
	  "for these nine; fig3b-q1-* (or fig3b-q1): the same on one thread and one QP\n"
	  "or the NVSHMEM path (never in all; two GPUs, GPU mode only): nvshmem-t1, nvshmem-t32, "
	  "nvshmem-t256, nvshmem-t4096-c16 (4096 threads over 16 CTAs), or nvshmem for these "
	  "four; each thread -n nvshmem_putmem_nbi of 8 B, then nvshmem_quiet; "
	  GIC_NVSHMEM_HELP_SKIPS "\n"
	  "or the NCCL GIN path (never in all; two GPUs, GPU mode only): gin-t1, gin-t32, "
	  "gin-t256, gin-t4096-c16, or gin for these four; each thread -n ncclGin puts of 8 B, "
	  "then flush (CTA b on GIN context b). No NCCL library of the built version or no GIN "
	  "backend (no network): says why, skips, exit status 0; a binary built without NCCL's "
	  "headers: says so, exit status 2\n"
	  "Without --row, one row from the flags below" },
	{ "-t N", .kind = GIC_FLAG_NOTE,
	  .help = "posting threads in all (common flag; default 1)" },
	{ "-c N", .kind = GIC_FLAG_NOTE,
	  .help = "SMs (CTAs) the threads are spread over (common flag; default 1)" },
	{ "--qps", .value = "N", GIC_FLAG_INT, F(qps), .lo = 1, .hi = 1024, .def = 1,
	  .mark = RATE_BY_FLAGS, .help = "QPs; thread i posts on QP i % qps" },
	{ "--batch", .value = "N", GIC_FLAG_INT, F(batch), .lo = 1, .hi = 256, .def = 1,
	  .mark = RATE_BY_FLAGS, .help = "WQEs per doorbell" },
	{ "--mode", .value = "M", GIC_FLAG_CHOICE, F(mode),
	  GIC_FLAG_NAMES("own", "lock", "handoff", "warp", "cta", "rr", "caslock"),
	  GIC_FLAG_VALUES(GIC_RATE_OWN, GIC_RATE_LOCK, GIC_RATE_HANDOFF, GIC_RATE_WARP,
			  GIC_RATE_CTA, GIC_RATE_RR, GIC_RATE_CASLOCK),
	  .mark = RATE_BY_FLAGS, .dflt = "own",
	  .help = "own gives every thread its own QP: threads == qps on the GPU, <= on the host; "
	  "rr: qps a multiple of threads; lock is a ticket lock, caslock a compare-and-swap lock" },
	{ "--payload", .value = "P", GIC_FLAG_CHOICE, F(pointer),
	  GIC_FLAG_NAMES("inline", "pointer", "inline-staged"), GIC_FLAG_VALUES(0, 1, 0),
	  .fn = staged_flag, .mark = RATE_BY_FLAGS,
	  .dflt = "inline", .help = "GPU: inline holds the payload in registers, built for 8, 12, "
	  "16, 32, 48, 64, 128, 256, 512 B; inline-staged loads it from GPU memory" },
	{ "--doorbell", .value = "D", GIC_FLAG_CHOICE, F(host_rung),
	  GIC_FLAG_NAMES("poster", "host"), .mark = RATE_BY_FLAGS, .dflt = "poster",
	  .help = "host: modes own, warp, cta, at most 64 QPs: mode own's posters write WQEs and "
	  "the doorbell record and publish their position in a host-visible word per QP; warp "
	  "and cta store their doorbells to such a word (GPU only); one pinned host thread rings "
	  "each QP's doorbell, within a time limit; params doorbell=host-rung" },
	{ "-b SIZE", .kind = GIC_FLAG_NOTE, .help = "payload bytes (common flag; default 8)" },
};
#undef F
static const gic_flag_table rate_table = GIC_FLAG_TABLE(SUB, rate_flags, 0);

static int rate_finish(void *state, unsigned by_flags)
{
	rate_state *st = state;

	if (by_flags && st->nrows) {
		fprintf(stderr, "gic rate: --row and the row flags (--qps, --batch, --mode, "
			"--payload, --doorbell) exclude each other\n");
		return EINVAL;
	}
	if (!st->nrows) { /* the row from flags */
		snprintf(st->rows[0].name, sizeof(st->rows[0].name), "custom");
		st->rows[0].threads = st->rows[0].sms = -1;
		st->nrows = 1;
	}
	return 0;
}

/* Fills a custom row's -1 fields from the common flags; EINVAL when the
 * row cannot run. */
static int resolve_row(const gic_opts *o, rate_row *r)
{
	if (r->threads < 0)
		r->threads = o->threads * (o->given & GIC_GIVEN_C ? o->ctas : 1);
	if (r->sms < 0)
		r->sms = o->ctas;
	if (!r->size)
		r->size = o->size_begin;
	if (r->mode == GIC_RATE_RR && r->qps % r->threads) {
		fprintf(stderr, "gic rate: --mode rr: --qps %d must be a multiple of the %d "
			"threads\n", r->qps, r->threads);
		return EINVAL;
	}
	if (r->mode == GIC_RATE_OWN && r->threads > r->qps) {
		fprintf(stderr, "gic rate: --mode own: %d threads need at least as many QPs "
			"(--qps %d); use lock, handoff or warp to share\n", r->threads, r->qps);
		return EINVAL;
	}
	if (r->mode != GIC_RATE_OWN && r->size != 8 && r->threads > 1) {
		fprintf(stderr, "gic rate: --mode %s posts 8-byte inline writes; got -b %zu\n",
			mode_names[r->mode], r->size);
		return EINVAL;
	}
	if (r->host_rung && ((r->mode != GIC_RATE_OWN && r->mode != GIC_RATE_WARP &&
			      r->mode != GIC_RATE_CTA) || r->qps > GIC_HOSTDB_MAX_QPS)) {
		fprintf(stderr, "gic rate: --doorbell host: modes own, warp or cta and at most %d "
			"QPs (got --mode %s, --qps %d)\n", GIC_HOSTDB_MAX_QPS, mode_names[r->mode],
			r->qps);
		return EINVAL;
	}
	if (!r->pointer && r->size > 512) {
		fprintf(stderr, "gic rate: -b %zu: inline payloads go up to 512 bytes; use "
			"--payload pointer\n", r->size);
		return EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Host mode. */

typedef struct rate_thread {
	pthread_t tid;
	struct rate_host *R;
	int t, q;
	int rc;
} rate_thread;

typedef struct rate_host {
	const gic_opts *o;
	rate_row row;        /* as run: threads and qps capped */
	int order;
	hx *h;
	int go;              /* start flag */
	rate_thread th[HOST_MAX_THREADS];
	uint64_t *progress;  /* host-rung rows: a progress word per QP (hostdb.h) */
	gic_hostdb ringer;
	gic_pair *pair;      /* --procs 2: this process's PE (NULL: both PEs here) */
} rate_host;

static size_t slot_off(const rate_host *R, int t, uint64_t i)
{
	return ((size_t)t * RATE_SLOTS + (size_t)(i % RATE_SLOTS)) * R->row.size;
}

/* Thread t's exclusive queue: batches of --batch, the last signaled. */
static int post_own(rate_host *R, rate_thread *T)
{
	int n = R->o->iters, b = R->row.batch, rc = 0;
	gic_sq *sq = &R->h->pe[0].sq[T->q];

	for (int i = 0; i < n && !rc; i++) {
		uint64_t v = hx_value((uint64_t)T->t + 1, (uint64_t)i);
		uint8_t data[512];
		int last = (i + 1) % b == 0 || i + 1 == n;

		if (!R->row.pointer)
			hx_fill(data, R->row.size, v);
		rc = hx_write(R->h, 0, T->q, slot_off(R, T->t, (uint64_t)i), data,
			      slot_off(R, T->t, (uint64_t)i), R->row.size, R->row.pointer, last,
			      last && !R->row.host_rung, R->order, hx_deadline(), NULL);
		if (!rc && last && R->row.host_rung)
			gic_hostdb_publish(sq, &R->progress[(size_t)T->q * GIC_HOSTDB_STRIDE]);
	}
	if (rc)
		return rc;
	/* Host-rung: the last WQE is signaled, so its CQE retires everything
	 * (gic_sq_quiet could post and ring a NOP itself). */
	return R->row.host_rung ? gic_sq_wait_retired(sq, sq->ready, 0, R->order, hx_deadline())
				: gic_sq_quiet(sq, R->order, hx_deadline());
}

/* Thread t's qps / threads exclusive queues, round-robin: --batch WQEs on
 * one, its doorbell, then the next; every queue quiet at the end. */
static int post_rr(rate_host *R, rate_thread *T)
{
	int n = R->o->iters, b = R->row.batch, k = R->row.qps / R->row.threads, rc = 0;

	for (int i = 0; i < n && !rc; i++) {
		int q = T->t * k + (i / b) % k;
		uint64_t v = hx_value((uint64_t)T->t + 1, (uint64_t)i);
		uint8_t data[512];
		int last = (i + 1) % b == 0 || i + 1 == n;

		if (!R->row.pointer)
			hx_fill(data, R->row.size, v);
		rc = hx_write(R->h, 0, q, slot_off(R, T->t, (uint64_t)i), data,
			      slot_off(R, T->t, (uint64_t)i), R->row.size, R->row.pointer, last,
			      last, R->order, hx_deadline(), NULL);
	}
	for (int j = 0; j < k && !rc; j++)
		rc = gic_sq_quiet(&R->h->pe[0].sq[T->t * k + j], R->order, hx_deadline());
	return rc;
}

/* Shared queue, 8-byte writes: one lock per WQE (ticket lock, or the
 * compare-and-swap lock), or per-thread hand-off. */
static int post_shared(rate_host *R, rate_thread *T)
{
	gic_sq *sq = &R->h->pe[0].sq[T->q];
	uint32_t rkey = R->h->pe[1].dst_rkey;
	int rc = 0;

	for (int i = 0; i < R->o->iters && !rc; i++) {
		uint64_t v = hx_value((uint64_t)T->t + 1, (uint64_t)i);
		uint64_t raddr = (uint64_t)(uintptr_t)(R->h->pe[1].dst +
						       slot_off(R, T->t, (uint64_t)i));

		if (R->row.mode == GIC_RATE_LOCK)
			rc = gic_sq_ticket_write_inline_u64(sq, raddr, rkey, v, RATE_SIGNAL_EVERY,
							    R->order, hx_deadline());
		else if (R->row.mode == GIC_RATE_CASLOCK)
			rc = gic_sq_locked_write_inline_u64(sq, raddr, rkey, v, RATE_SIGNAL_EVERY,
							    R->order, hx_deadline());
		else
			rc = gic_sq_handoff_write_inline_u64(sq, raddr, rkey, v,
							     RATE_SIGNAL_EVERY, 1, R->order,
							     hx_deadline(), NULL);
	}
	return rc;
}

static void *rate_thread_main(void *arg)
{
	rate_thread *T = arg;
	rate_host *R = T->R;

	while (!__atomic_load_n(&R->go, __ATOMIC_ACQUIRE))
		gic_cpu_relax();
	T->rc = R->row.mode == GIC_RATE_OWN ? post_own(R, T)
		: R->row.mode == GIC_RATE_RR ? post_rr(R, T) : post_shared(R, T);
	if (T->rc)
		hx_fail(R->h, 0, T->q, "rate post", T->rc);
	return NULL;
}

/* The sources' pattern: PE 0's source (--procs 2 PE 1: its own, the copy
 * it checks pointer payloads against). Destinations (PE 1's) cleared. */
static void rate_prepare(rate_host *R)
{
	uint8_t *pat = R->h->pe[gic_pair_rank(R->pair)].src;

	for (int t = 0; t < R->row.threads; t++) {
		for (uint64_t s = 0; s < RATE_SLOTS; s++) {
			hx_fill(pat + slot_off(R, t, s), R->row.size, hx_value((uint64_t)t + 100, s));
			if (gic_pair_checks(R->pair))
				memset(R->h->pe[1].dst + slot_off(R, t, s), 0, R->row.size);
		}
	}
}

/* 1 when every slot holds the last write to it. */
static int rate_validate(rate_host *R)
{
	uint8_t want[512];
	int n = R->o->iters;

	for (int t = 0; t < R->row.threads; t++) {
		for (int s = 0; s < RATE_SLOTS && s < n; s++) {
			uint64_t last = (uint64_t)s + (uint64_t)((n - 1 - s) / RATE_SLOTS) * RATE_SLOTS;
			uint64_t v = hx_value((uint64_t)t + 1, last);
			size_t off = slot_off(R, t, (uint64_t)s);
			const uint8_t *exp = want;

			if (R->row.pointer) /* rate_prepare's pattern */
				exp = R->h->pe[gic_pair_rank(R->pair)].src + off;
			else if (R->row.mode == GIC_RATE_OWN || R->row.mode == GIC_RATE_RR)
				hx_fill(want, R->row.size, v);
			else
				memcpy(want, &v, 8);
			if (!hx_check(SUB, "final slot", R->h->pe[1].dst + off, exp, R->row.size))
				return 0;
		}
	}
	return 1;
}

/* Host-rung rows: starts the ringer over every QP, each rung up to what
 * its thread posts (own: thread t on QP t). */
static int start_ringer(rate_host *R)
{
	uint64_t target[GIC_HOSTDB_MAX_QPS] = { 0 };
	uint32_t nbb = R->row.pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write((uint32_t)R->row.size));
	int rc = gic_hostdb_init(&R->ringer, R->h->pe[0].sq, R->row.qps, R->progress, -1, 1);

	for (int t = 0; t < R->row.threads; t++)
		target[t % R->row.qps] += (uint64_t)R->o->iters * nbb;
	if (!rc)
		rc = gic_hostdb_start(&R->ringer, target, HX_WAIT_NS);
	if (rc)
		fprintf(stderr, "gic rate: host doorbell ringer: %s\n", strerror(rc));
	return rc;
}

/* Runs the threads; *ns receives the time to the last quiet. */
static int rate_threads(rate_host *R, uint64_t *ns)
{
	int rc = 0, started = 0;
	uint64_t t0;

	if (R->row.host_rung && (rc = start_ringer(R)))
		return rc;
	for (int t = 0; t < R->row.threads; t++) {
		R->th[t] = (rate_thread){ .R = R, .t = t, .q = t % R->row.qps };
		if (pthread_create(&R->th[t].tid, NULL, rate_thread_main, &R->th[t])) {
			rc = EAGAIN;
			break;
		}
		started++;
	}
	t0 = gic_now_ns();
	__atomic_store_n(&R->go, 1, __ATOMIC_RELEASE);
	for (int t = 0; t < started; t++) {
		pthread_join(R->th[t].tid, NULL);
		if (!rc)
			rc = R->th[t].rc;
	}
	if (R->row.host_rung) {
		int jrc;

		if (rc) /* a poster failed: its QP never reaches its target */
			gic_hostdb_stop(&R->ringer);
		jrc = gic_hostdb_join(&R->ringer, SUB);
		rc = rc ? rc : jrc;
	}
	for (int q = 0; q < R->row.qps && !rc && R->row.mode != GIC_RATE_OWN &&
			R->row.mode != GIC_RATE_RR; q++)
		if ((rc = R->row.mode == GIC_RATE_LOCK
				  ? gic_sq_ticket_quiet(&R->h->pe[0].sq[q], R->order, hx_deadline())
				  : gic_sq_quiet(&R->h->pe[0].sq[q], R->order, hx_deadline())))
			hx_fail(R->h, 0, q, "rate quiet", rc);
	*ns = gic_now_ns() - t0;
	return rc;
}

/* The row as the host runs it; *note says what changed. */
static rate_row host_row(const rate_row *in, char *note, size_t len)
{
	rate_row r = *in;
	size_t k = (size_t)snprintf(note, len, "host analogue: host threads");

	if (r.threads > HOST_MAX_THREADS) {
		int q = r.qps * HOST_MAX_THREADS / r.threads;

		r.qps = q < 1 ? 1 : q;
		r.threads = HOST_MAX_THREADS;
		k += (size_t)snprintf(note + k, len - k, "; threads capped at %d (qps %d)",
				      r.threads, r.qps);
	}
	if (r.mode == GIC_RATE_WARP || r.mode == GIC_RATE_CTA) {
		k += (size_t)snprintf(note + k, len - k, "; %s runs as handoff on the host%s",
				      mode_names[r.mode], r.host_rung ? ", its posters ringing" : "");
		r.mode = GIC_RATE_HANDOFF;
		r.host_rung = 0; /* host-rung runs on the host in mode own only */
	}
	if (r.log_bb)
		k += (size_t)snprintf(note + k, len - k, "; -wrap rows: the host's rings always "
				      "wrap (2^10 BB and more)");
	if (r.host_rung)
		k += (size_t)snprintf(note + k, len - k, "; doorbells rung by one more host "
				      "thread (host-rung)");
	if (r.mode != GIC_RATE_OWN && r.mode != GIC_RATE_RR && r.batch > 1)
		snprintf(note + k, len - k, "; shared modes ring per WQE");
	return r;
}

/* log2 of a ring that holds two batches of the row's WQEs (at least 2^10). */
static int ring_log(const rate_row *r)
{
	uint32_t nbb = r->pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write((uint32_t)r->size));
	uint64_t need = 2ull * (uint64_t)r->batch * nbb;
	int lg = 10;

	while ((1ull << lg) < need && lg < 14)
		lg++;
	return lg;
}

/* One row's measurement on R->h: sources and destinations prepared, the
 * posting threads timed (*ns), then every slot checked (*valid; 1 where
 * this process checks nothing: PE 0 of a pair). */
static int rate_measure(rate_host *R, uint64_t *ns, int *valid)
{
	int rc;

	rate_prepare(R);
	rc = gic_pair_begin(R->pair, R->h);
	if (!rc && gic_pair_posts(R->pair))
		rc = rate_threads(R, ns);
	if (!rc)
		rc = gic_pair_end(R->pair, R->h);
	*valid = !rc && gic_pair_checks(R->pair) ? rate_validate(R) : 1;
	return rc;
}

/* Puts the result of row (as run: R->row) measured in ns. */
static int rate_put(rate_host *R, const rate_row *row, const char *note, uint64_t ns, int valid,
		    gic_sink *sink)
{
	const gic_opts *o = R->o;
	gic_result r;

	gic_result_init(&r, SUB, row->name, "message rate", "M msg/s");
	gic_result_set_value(&r, (double)R->row.threads * o->iters * 1e3 / (double)ns);
	gic_result_param(&r, "threads=%d qps=%d sms=%d batch=%d mode=%s payload=%s "
			 "size=%zu msgs_per_thread=%d doorbell=%s", R->row.threads,
			 R->row.qps, row->sms, R->row.batch, mode_names[R->row.mode],
			 gic_rate_payload_name(&R->row), R->row.size, o->iters,
			 gic_rate_doorbell_name(&R->row));
	if (R->pair)
		gic_result_param(&r, "procs=2");
	snprintf(r.transport, sizeof(r.transport), "%s", gic_transport(o));
	snprintf(r.note, sizeof(r.note), "%s", note);
	r.validated = valid;
	gic_result_paper(&r);
	return gic_pair_put(R->pair, sink, &r);
}

/* One row on a fixture of its own: in this process (pair NULL), or as
 * this PE of a pair (a phase). */
static int rate_host_row(const gic_opts *o, const rate_row *row, gic_pair *pair,
			 gic_sink *sink)
{
	rate_host *R = calloc(1, sizeof(*R));
	char note[160];
	uint64_t ns = 0;
	hx_cfg c = { .who = SUB, .provider = o->provider, .nic = o->nic,
		     .engine_threads = 1, .log_sq_bb = 10 };
	int rc, valid = 0;

	if (!R)
		return ENOMEM;
	R->o = o;
	R->pair = pair;
	R->row = host_row(row, note, sizeof(note));
	R->order = GIC_ORDER_RELEASE_SYS;
	c.qps = R->row.qps;
	c.log_sq_bb = ring_log(&R->row);
	c.region = (size_t)HOST_MAX_THREADS * RATE_SLOTS * R->row.size;
	rc = gic_pair_open(pair, &R->h, &c);
	if (!rc && R->row.host_rung && gic_pair_posts(pair) &&
	    !(R->progress = calloc((size_t)R->row.qps * GIC_HOSTDB_STRIDE, sizeof(uint64_t))))
		rc = ENOMEM;
	if (!rc)
		rc = rate_measure(R, &ns, &valid);
	if (!rc && gic_pair_posts(pair))
		rc = rate_put(R, row, note, ns, valid, sink);
	if (!rc)
		gic_pair_phase_done(pair, valid);
	hx_close(R->h);
	free(R->progress);
	free(R);
	return rc;
}

_Static_assert(sizeof(rate_state) <= GIC_PAIR_STATE_MAX, "rate's state fits a pair job");

/* 1 when row is one rate_run hands its PEs (a resolved host row). */
static int rate_pair_row_ok(const rate_row *r)
{
	return r->threads >= 1 && r->threads <= 65536 && r->qps >= 1 && r->qps <= 1024 &&
	       r->batch >= 1 && r->batch <= 256 && r->size >= 1 &&
	       (r->pointer || r->size <= 512) && r->size <= ((size_t)1 << 30) &&
	       r->mode >= GIC_RATE_OWN && r->mode <= GIC_RATE_CASLOCK &&
	       r->mode != GIC_RATE_NVSHMEM && r->mode != GIC_RATE_GIN;
}

/* run_pe (exp.h): every row as this PE of pair, a phase each. */
static int rate_run_pe(gic_pair *pair, const gic_opts *o, const void *state, size_t state_len)
{
	const rate_state *st = state;
	int rc = state_len == sizeof(*st) && st->nrows >= 1 && st->nrows <= GIC_RATE_MAX_ROWS
		 ? 0 : EPROTO;

	for (int i = 0; i < st->nrows && !rc; i++)
		rc = rate_pair_row_ok(&st->rows[i]) ? 0 : EPROTO;
	if (rc)
		fprintf(stderr, "gic rate: PE%d: a malformed job\n", gic_pair_rank(pair));
	for (int i = 0; i < st->nrows && !rc; i++)
		rc = o->host ? rate_host_row(o, &st->rows[i], pair, NULL)
			     : gic_gpu_rate_pe(pair, o, &st->rows[i]);
	return rc;
}

int gic_rate_gpu_pair_ok(const rate_row *r)
{
	const char *why = r->mode == GIC_RATE_NVSHMEM || r->mode == GIC_RATE_GIN ? "a library row"
			  : r->host_rung ? "a host-rung row" : r->pointer ? "a pointer row"
			  : r->staged || r->size != 8 ? "a payload other than 8 bytes in registers"
			  : r->qps > GIC_RATE_GPU_PAIR_MAX_QPS ? "more QPs than it connects" : NULL;

	if (why)
		fprintf(stderr, "gic rate: --procs 2 in GPU mode runs the mini-gda rows of 8-byte "
			"inline writes on at most %d QPs; --row %s is %s\n",
			GIC_RATE_GPU_PAIR_MAX_QPS, r->name, why);
	return !why;
}

/* --procs 2 (after main's checks: --host and a provider other than
 * softnic, or the GPU mode on softnic's GPU peers): every host row runs as
 * a pair (the GPU-only rows are refused by rate_run, as with one process);
 * in GPU mode, the rows gic_rate_gpu_pair_ok() takes. */
static int rate_check_procs(const gic_opts *o, const void *state)
{
	const rate_state *st = state;

	for (int i = 0; i < st->nrows && !o->host; i++) {
		rate_row r = st->rows[i];

		if (resolve_row(o, &r) || !gic_rate_gpu_pair_ok(&r))
			return EINVAL;
	}
	return 0;
}

/* The GPU mode: the mini-gda rows in this process, then the NVSHMEM rows
 * and the NCCL GIN rows in processes of their own (nvshmem_pe.h,
 * nccl_pe.h). */
static int rate_gpu(const gic_opts *o, const rate_state *st, const gic_run_info *info,
		    gic_sink *sink)
{
	rate_state *gda = calloc(1, sizeof(*gda));
	gic_nv_job job = { .kind = GIC_NV_RATE, .iters = o->iters };
	gic_nc_job gin = { .kind = GIC_NC_RATE, .iters = o->iters };
	int rc = 0, nrc = 0, grc = 0;

	if (!gda)
		return ENOMEM;
	for (int i = 0; i < st->nrows; i++) {
		const rate_row *r = &st->rows[i];

		if (r->mode == GIC_RATE_GIN) {
			gic_nc_rate_row *g;

			if (gin.nrows == GIC_NC_MAX_ROWS) {
				fprintf(stderr, "gic rate: at most %d gin rows\n", GIC_NC_MAX_ROWS);
				free(gda);
				return EINVAL;
			}
			g = &gin.rows[gin.nrows++];
			/* "gin-t256" -> result name "gin t256" */
			snprintf(g->name, sizeof(g->name), "gin %s", r->name + 4);
			g->threads = r->threads;
			g->ctas = r->sms;
			continue;
		}
		if (r->mode != GIC_RATE_NVSHMEM) {
			gda->rows[gda->nrows++] = *r;
			continue;
		}
		if (job.nrows == GIC_NV_MAX_ROWS) {
			fprintf(stderr, "gic rate: at most %d nvshmem rows\n", GIC_NV_MAX_ROWS);
			free(gda);
			return EINVAL;
		}
		gic_nv_rate_row *j = &job.rows[job.nrows++];

		/* "nvshmem-t256" -> result name "nvshmem t256" */
		snprintf(j->name, sizeof(j->name), "nvshmem %s", r->name + 8);
		j->threads = r->threads;
		j->ctas = r->sms;
	}
	if (gda->nrows)
		rc = gic_gpu_rate(o, gda, info, sink);
	free(gda);
	if (job.nrows)
		nrc = gic_nvshmem_run(SUB, &job, sink);
	if (gin.nrows)
		grc = gic_nccl_run(SUB, &gin, sink);
	return rc ? rc : nrc ? nrc : grc;
}

static int rate_run(const gic_opts *o, void *state, const gic_run_info *info, gic_sink *sink)
{
	rate_state *st = state;
	int rc = 0;

	for (int i = 0; i < st->nrows && !rc; i++)
		rc = resolve_row(o, &st->rows[i]);
	if (rc)
		return rc;
	if (!o->host && o->procs > 1) /* softnic's GPU peers: a phase per row, two rates each */
		return gic_pair_run(o, SUB, st, sizeof(*st), st->nrows, 2 * st->nrows, sink);
	if (!o->host)
		return rate_gpu(o, st, info, sink);
	for (int i = 0; i < st->nrows; i++) {
		if (st->rows[i].mode == GIC_RATE_NVSHMEM || st->rows[i].mode == GIC_RATE_GIN) {
			fprintf(stderr, "gic rate: --row %s runs on GPUs (not with --host)\n",
				st->rows[i].name);
			return EINVAL;
		}
	}
	if (o->procs > 1) /* a phase per row, one row each */
		return gic_pair_run(o, SUB, st, sizeof(*st), st->nrows, st->nrows, sink);
	for (int i = 0; i < st->nrows && !rc; i++) {
		gic_progress(SUB, i + 1, st->nrows, st->rows[i].name);
		rc = rate_host_row(o, &st->rows[i], NULL, sink);
	}
	return rc;
}

const gic_experiment gic_exp_rate = {
	.name = "rate",
	.summary = "message rate against threads, QPs, SMs, batch, publication mode (Table 5, "
		   "Figure 3b)",
	.flags = &rate_table,
	.state_size = sizeof(rate_state),
	.finish = rate_finish,
	.run = rate_run,
	.check_procs = rate_check_procs,
	.run_pe = rate_run_pe,
	.gpu_procs = 1,
};
