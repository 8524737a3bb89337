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
 *
 * --procs 2 (pe_pair.h; the gda and proxy paths, a pair of PE processes
 * for each): the same bodies with PE1 a process of its own, a phase per
 * configuration: each PE clears what it receives (gic_pair_sync: both
 * ready), runs its writers (thread k on PE k % 2), PE 0 probes and PE 1
 * answers, each drains its queues (the proxy path: its own mini-proxy's
 * counters; each PE's proxy runs in its process, its workers' QPs
 * connected to QPs of the peer's, hxp_open), the PEs swap their writers'
 * counts (gic_pair_exchange) and each checks every slot and probe value
 * it received: PE 0's checks in its rows, PE 1's in its verdict. In GPU
 * mode (gpu_loaded.cu, gic_gpu_loaded_pe; softnic's GPU peers) the gda
 * path's kernel with each PE's CTAs in its own process, the same way.
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
#include "pe_pair.h"

#define SUB "loaded"
enum { HOST_MAX_BG = 2, BG_SLOTS = 64, BG_BASE = 4096, LD_SIGNAL = 16 };

#define F(m) GIC_FLAG_FIELD(loaded_state, m)
static const gic_flag loaded_flags[] = {
	{ "--bg-ctas", .value = "L", GIC_FLAG_LIST, F(levels), .count_off = offsetof(loaded_state,
	  nlevels), .lo = 0, .hi = 1024, .max = GIC_LOADED_MAX_LEVELS, .def = 64,
	  .help = "background CTAs (GPU, at most 254) or threads (host, at most 2): a level, or "
	  "levels each run in turn" },
	{ "--queue", .value = "Q", GIC_FLAG_CHOICE, F(queues),
	  GIC_FLAG_NAMES("shared", "reserved", "both"), GIC_FLAG_VALUES(1, 2, 3), .dflt = "both",
	  .help = "the probe shares the background's queue, or owns one" },
	{ "--pace", .value = "NS", GIC_FLAG_INT, F(pace_ns), .lo = 0, .hi = 1000000000,
	  .help = "gap between a background writer's posts in ns (0: unpaced)" },
	/* -R from 2: the reserved probe owns ring 0, the writers need another. */
	{ "-T", .value = "N", GIC_FLAG_INT, F(T), .lo = 1, .hi = GIC_PROXY_MAX_WORKERS,
	  .param = "T", .help = "--path proxy: workers of each PE's mini-proxy; default T4/R32/B16 "
	  "(GPU), T1/R2/B16 (host)" },
	{ "-R", .value = "N", GIC_FLAG_INT, F(R), .lo = 2, .hi = GIC_PROXY_MAX_RINGS, .param = "R",
	  .help = "--path proxy: rings (>= T). Shared and reserved both run the baseline protocol: "
	  "the probe on ring 0, writers on rings 0..R-1 (shared) or 1..R-1" },
	{ "-B", .value = "N", GIC_FLAG_INT, F(B), .lo = 1, .hi = GIC_PROXY_MAX_BATCH, .param = "B",
	  .help = "--path proxy: batch" },
	{ "--inflight", .value = "K", GIC_FLAG_INT, F(inflight), .lo = 1,
	  .hi = GIC_PROXY_MAX_INFLIGHT, .def = GIC_PROXY_DEFAULT_INFLIGHT, .param = "inflight",
	  .help = "--path proxy: chains each worker keeps posted" },
	{ "--path", .value = "P", GIC_FLAG_BITS, F(paths),
	  GIC_FLAG_NAMES("gda", "proxy", "nvshmem"), .fn = gic_flag_lib_path, .dflt = "gda",
	  .help = "\nnvshmem: the NVSHMEM path between two GPUs (PE r on CUDA device r, one "
	  "process each): nvshmem_p round trip while background CTAs stream nvshmem_putmem_nbi; "
	  "GPU mode only; " GIC_NVSHMEM_HELP_SKIPS },
};
#undef F
static const gic_flag_table loaded_table = GIC_FLAG_TABLE(SUB, loaded_flags, 0);

static int loaded_finish(void *state, unsigned marks)
{
	loaded_state *st = state;

	(void)marks;
	st->bg_ctas = st->levels[0];
	st->level_in_name = st->nlevels > 1;
	if (!st->paths)
		st->paths = 1u << GIC_LOADED_GDA;
	if (!st->queues)
		st->queues = GIC_LOADED_SHARED | GIC_LOADED_RESERVED;
	if (st->T && st->R && st->R < st->T) {
		fprintf(stderr, "gic loaded: -R %d below -T %d: every worker needs a ring\n", st->R,
			st->T);
		return EINVAL;
	}
	return 0; /* T, R, B 0: run() picks the GPU's or the host's defaults */
}

/* ------------------------------------------------------------------ */
/* Host mode. */

typedef struct ld_host ld_host;

typedef struct ld_bg {
	pthread_t tid;
	ld_host *L;
	int k, pe;
	int running;       /* started in this process (--procs 2: the writers of its PE) */
	uint64_t sent;     /* writes posted (read after join, or relaxed); a writer of
			    * the peer's process: its count, after the exchange */
	int rc;
} ld_bg;

struct ld_host {
	const gic_opts *o;
	const loaded_state *st;
	gic_pair *pair;     /* --procs 2: this process's PE (NULL: both PEs here) */
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
	uint64_t flag[2];   /* one process: flag[pe]: probe writes delivered to pe */
	uint64_t seen[2];   /* --procs 2: the probe word pe saw last */
	int bad;            /* probe payloads that did not check out */
	int rc;             /* the responder's failure */
};

/* --procs 2: what a PE counted in a configuration, for the other. */
typedef struct ld_tally {
	uint64_t sent[HOST_MAX_BG]; /* its background writers' writes (others 0) */
	uint64_t window;            /* of those, the writes posted while it probed or answered */
} ld_tally;

/* 1 when PE pe is this process's (both, with both PEs here). */
static int ld_local(const ld_host *L, int pe)
{
	return !L->h->pe[pe].remote;
}

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

/* Delivery i to the peer of pe: send, then raise the peer's flag (one
 * process; --procs 2 the peer sees the word itself). */
static int ld_deliver(ld_host *L, int pe, int i, uint64_t v)
{
	int rc = ld_probe_send(L, pe, v);

	if (!rc)
		__atomic_store_n(&L->flag[1 - pe], (uint64_t)i + 1, __ATOMIC_RELEASE);
	return rc;
}

/* Waits for delivery i to pe and checks its word. One process: no thread
 * reads memory the engine is writing (the flag follows the sender's
 * completion); --procs 2: the sender is another process, the word itself
 * changes (every probe value differs from the one before). */
static int ld_receive(ld_host *L, int pe, int i, uint64_t want)
{
	const uint64_t *word = (const uint64_t *)L->h->pe[pe].dst;
	uint64_t got = 0;
	int rc = L->pair ? hx_wait_u64_change(word, L->seen[pe], hx_deadline(), &got)
			 : hx_wait_u64(&L->flag[pe], (uint64_t)i + 1, hx_deadline());

	if (rc)
		return rc;
	if (!L->pair)
		memcpy(&got, word, 8);
	L->seen[pe] = got;
	if (!hx_check(SUB, "probe payload", (const uint8_t *)&got, (const uint8_t *)&want, 8))
		__atomic_fetch_add(&L->bad, 1, __ATOMIC_RELAXED);
	return 0;
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

/* The probe's round trips; samples in us. The responder is a thread of
 * PE 1 here, or (--procs 2) PE 1's process, which runs it alone. */
static int ld_probe(ld_host *L, gic_samples *s)
{
	pthread_t t;
	int rc = 0;

	if (!gic_pair_posts(L->pair))
		responder_main(L);
	else if (!L->pair && (rc = pthread_create(&t, NULL, responder_main, L)))
		return rc;
	for (int i = 0; i < L->probes && !rc && gic_pair_posts(L->pair); i++) {
		uint64_t t0 = gic_now_ns();

		rc = ld_deliver(L, 0, i, hx_value(1, (uint64_t)i));
		if (!rc)
			rc = ld_receive(L, 0, i, hx_value(2, (uint64_t)i));
		if (!rc)
			gic_samples_add(s, (double)(gic_now_ns() - t0) / 1e3);
	}
	if (!L->pair)
		pthread_join(t, NULL);
	if (rc || L->rc)
		fprintf(stderr, "gic loaded: probe failed: %s\n", strerror(rc ? rc : L->rc));
	return rc ? rc : L->rc;
}

/* Checks every background slot of this process's destinations: each
 * holds the last value its writer put there. 1 when all do. */
static int ld_validate(ld_host *L)
{
	for (int k = 0; k < L->nbg; k++) {
		ld_bg *b = &L->bg[k];

		if (!ld_local(L, 1 - b->pe))
			continue;
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

/* Drains this process's queues (gda) or waits for the background's
 * counters (proxy): every write counted has landed. */
static int ld_drain(ld_host *L)
{
	int rc = 0;

	if (L->st->path == GIC_LOADED_PROXY) {
		uint64_t want[2] = { L->bg_base[0], L->bg_base[1] };

		int pe = 0;

		for (int k = 0; k < L->nbg; k++)
			want[L->bg[k].pe] += L->bg[k].sent;
		for (; pe < 2 && !rc; pe++)
			if (ld_local(L, pe)) /* the peer process's proxy is its own to wait for */
				rc = gic_proxy_wait_counter(&L->px[pe].views[0],
							    &L->px[pe].counters[1], want[pe],
							    hx_deadline());
		return rc ? hxp_fail(&L->px[pe - 1], SUB, "background drain", rc) : 0;
	}
	for (int pe = 0; pe < 2 && !rc; pe++)
		for (int q = 0; q < 2 && !rc && ld_local(L, pe); q++)
			if ((rc = gic_sq_quiet(&L->h->pe[pe].sq[q], GIC_ORDER_RELEASE_SYS,
					       hx_deadline())))
				hx_fail(L->h, pe, q, "loaded drain", rc);
	return rc;
}

/* --procs 2, after the drain: this PE's counts to the peer and the
 * peer's here (its writers' counts, for ld_validate; its window's writes
 * added to *window). Nothing with both PEs here. */
static int ld_swap_tally(ld_host *L, uint64_t *window)
{
	ld_tally mine = { .window = *window }, theirs = { 0 };
	int rc;

	if (!L->pair)
		return 0;
	for (int k = 0; k < L->nbg; k++)
		mine.sent[k] = L->bg[k].running ? L->bg[k].sent : 0;
	rc = gic_pair_exchange(L->pair, &mine, &theirs, sizeof(mine));
	for (int k = 0; k < L->nbg && !rc; k++)
		if (!L->bg[k].running)
			L->bg[k].sent = theirs.sent[k];
	*window += theirs.window;
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
		if (L->st->path == GIC_LOADED_PROXY) {
			gic_result_flag_params(&r[i], &loaded_table, L->st, "T R B inflight");
			gic_result_param(&r[i], "protocol=baseline");
		}
		if (L->pair)
			gic_result_param(&r[i], "procs=2");
		snprintf(r[i].transport, sizeof(r[i].transport), "%s", gic_transport(L->o));
		snprintf(r[i].note, sizeof(r[i].note), "host analogue: %d background host "
			 "thread%s (asked %d CTAs)%s", L->nbg, L->nbg == 1 ? "" : "s",
			 L->st->bg_ctas, L->st->path == GIC_LOADED_PROXY ? "; proxy: baseline "
			 "protocol on both queues, writers spread over the rings" : "");
		r[i].validated = valid;
		gic_result_paper(&r[i]);
		if (gic_pair_put(L->pair, sink, &r[i]))
			return ENOMEM;
	}
	return 0;
}

/* A configuration's start on this process's PEs: the probe words and the
 * background slots they receive cleared (every value written is nonzero:
 * a write that never lands cannot pass), the counts reset. */
static void ld_prepare(ld_host *L)
{
	L->stop = L->rc = L->bad = 0;
	for (int pe = 0; pe < 2; pe++) {
		L->flag[pe] = L->seen[pe] = 0;
		if (ld_local(L, pe)) {
			memset(L->h->pe[pe].dst, 0, 8);
			memset(L->h->pe[pe].dst + BG_BASE, 0, (size_t)HOST_MAX_BG * BG_SLOTS * 8);
		}
		if (L->st->path == GIC_LOADED_PROXY && ld_local(L, pe))
			L->bg_base[pe] = __atomic_load_n(&L->px[pe].counters[1], __ATOMIC_ACQUIRE);
	}
	for (int k = 0; k < L->nbg; k++)
		L->bg[k] = (ld_bg){ .L = L, .k = k, .pe = k % 2 };
}

/* Starts the background writers of this process's PEs (thread k on PE
 * k % 2); EAGAIN when one could not start (those started run). */
static int ld_bg_start(ld_host *L)
{
	for (int k = 0; k < L->nbg; k++) {
		if (!ld_local(L, L->bg[k].pe))
			continue;
		if (pthread_create(&L->bg[k].tid, NULL, bg_main, &L->bg[k]))
			return EAGAIN;
		L->bg[k].running = 1;
	}
	return 0;
}

/* Writes posted so far by this process's writers. */
static uint64_t ld_bg_sent(ld_host *L)
{
	uint64_t n = 0;

	for (int k = 0; k < L->nbg; k++)
		if (L->bg[k].running)
			n += __atomic_load_n(&L->bg[k].sent, __ATOMIC_RELAXED);
	return n;
}

/* Stops and joins this process's writers; the first one's failure. */
static int ld_bg_stop(ld_host *L)
{
	int rc = 0;

	__atomic_store_n(&L->stop, 1, __ATOMIC_RELEASE);
	for (int k = 0; k < L->nbg; k++) {
		if (!L->bg[k].running)
			continue;
		pthread_join(L->bg[k].tid, NULL);
		if (!rc && L->bg[k].rc)
			rc = L->bg[k].rc;
	}
	return rc;
}

/* One configuration (a phase of --procs 2): both PEs prepared (a sync),
 * the background started, the probe (PE 1: the responder), stop, drain,
 * the counts swapped, every received value checked. The background rate
 * is every writer's writes while the probe ran: --procs 2 PE 1's count
 * from its responder's span, which lies within PE 0's probe span but for
 * a signal's and a half round trip's time at its ends. */
static int ld_config(ld_host *L, gic_sink *sink)
{
	gic_samples s = { 0 };
	uint64_t t0, ns, sent0, window;
	int rc, brc, valid;

	ld_prepare(L);
	rc = gic_pair_sync(L->pair, L->h);
	if (!rc)
		rc = ld_bg_start(L);
	sent0 = ld_bg_sent(L);
	t0 = gic_now_ns();
	if (!rc)
		rc = ld_probe(L, &s);
	ns = gic_now_ns() - t0;
	window = ld_bg_sent(L) - sent0;
	brc = ld_bg_stop(L);
	rc = rc ? rc : brc;
	if (!rc)
		rc = ld_drain(L);
	if (!rc)
		rc = ld_swap_tally(L, &window);
	valid = !rc && !L->bad && ld_validate(L);
	if (!rc && gic_pair_posts(L->pair))
		rc = ld_emit(L, sink, &s, (double)window * 1e3 / (double)ns, valid);
	if (!rc)
		gic_pair_phase_done(L->pair, valid);
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

/* One run (st->path at st->bg_ctas): in this process (pair NULL), or as
 * this PE of a pair. */
static int ld_host_run(const gic_opts *o, const loaded_state *st, gic_pair *pair,
		       gic_sink *sink)
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
	L->pair = pair;
	L->nbg = st->bg_ctas < HOST_MAX_BG ? st->bg_ctas : HOST_MAX_BG;
	L->probes = o->iters + o->warmup;
	if (!(o->given & GIC_GIVEN_N) && o->quick)
		L->probes = 60;
	rc = gic_pair_open(pair, &L->h, &c);
	if (!rc && st->path == GIC_LOADED_PROXY)
		rc = ld_open_proxies(L);
	for (int q = 0; q < 2 && !rc; q++) {
		if (!(st->queues & (1u << q)))
			continue;
		L->reserved = q;
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

/* The run of path p at level k of st: *one, with the host's or the
 * GPU's proxy shape where st leaves it open. */
static void ld_one(const gic_opts *o, const loaded_state *st, int p, int k, loaded_state *one)
{
	*one = *st;
	one->path = p;
	one->bg_ctas = st->levels[k];
	one->T = st->T ? st->T : o->host ? 1 : 4;
	one->R = st->R ? st->R : o->host ? 2 : 32;
	one->B = st->B ? st->B : 16;
}

/* Path p at every level: host mode in this process (pair NULL) or as
 * this PE of a pair (which stops at the first failure: the peer is then
 * out of step), or the GPU mode. The first error; what ran is kept. */
static int ld_levels(const gic_opts *o, const loaded_state *st, int p, gic_pair *pair,
		     const gic_run_info *info, gic_sink *sink)
{
	int rc = 0;

	for (int k = 0; k < st->nlevels && !(pair && rc); k++) {
		loaded_state one;
		int prc;

		ld_one(o, st, p, k, &one);
		prc = o->host ? ld_host_run(o, &one, pair, sink)
			: pair	  ? gic_gpu_loaded_pe(pair, o, &one)
				  : gic_gpu_loaded(o, &one, info, sink);
		rc = rc ? rc : prc;
	}
	return rc;
}

/* Phases of --procs 2: a configuration each (every level, both queues),
 * two rows each. */
enum { LD_PAIR_PHASES = GIC_LOADED_MAX_LEVELS * 2 };

_Static_assert(sizeof(loaded_state) <= GIC_PAIR_STATE_MAX, "loaded's state fits a pair job");

/* 1 when a pair job's state is one loaded_run made: one path, gda or
 * proxy (its shape filled in by ld_one). */
static int ld_pair_state_ok(const loaded_state *st)
{
	int ok = (st->path == GIC_LOADED_GDA || (st->path == GIC_LOADED_PROXY &&
		  st->T >= 1 && st->T <= GIC_PROXY_MAX_WORKERS && st->R >= 2 && st->R >= st->T &&
		  st->R <= GIC_PROXY_MAX_RINGS && st->B >= 1 && st->B <= GIC_PROXY_MAX_BATCH &&
		  st->inflight >= 1 && st->inflight <= GIC_PROXY_MAX_INFLIGHT)) &&
		 st->paths == 1u << st->path && st->nlevels >= 1 &&
		 st->nlevels <= GIC_LOADED_MAX_LEVELS && st->queues >= 1 && st->queues <= 3 &&
		 st->pace_ns >= 0 && st->pace_ns <= 1000000000;

	for (int k = 0; k < st->nlevels && ok; k++)
		ok = st->levels[k] >= 0 && st->levels[k] <= 1024;
	return ok;
}

/* run_pe (exp.h): one path (the job's) at every level as this PE of
 * pair (host or GPU mode). */
static int loaded_run_pe(gic_pair *pair, const gic_opts *o, const void *state,
			 size_t state_len)
{
	const loaded_state *st = state;

	if (state_len != sizeof(*st) || !ld_pair_state_ok(st)) {
		fprintf(stderr, "gic loaded: PE%d: a malformed job\n", gic_pair_rank(pair));
		return EPROTO;
	}
	return ld_levels(o, st, st->path, pair, NULL, NULL);
}

/* The GPU mode's gda and proxy paths: every level's background CTAs and
 * the samples within the kernel's buffers. 0, or EINVAL after a message. */
static int ld_gpu_limits(const gic_opts *o, const loaded_state *st)
{
	if (o->host || !(st->paths & 3u))
		return 0;
	if (o->iters + o->warmup > GIC_LOADED_GPU_MAX_SAMPLES) {
		fprintf(stderr, "gic loaded: -n plus -w: at most %d samples on the GPU\n",
			GIC_LOADED_GPU_MAX_SAMPLES);
		return EINVAL;
	}
	for (int k = 0; k < st->nlevels; k++) {
		if (st->levels[k] > GIC_LOADED_GPU_MAX_BG) {
			fprintf(stderr, "gic loaded: --bg-ctas %d: at most %d background CTAs on "
				"the GPU\n", st->levels[k], GIC_LOADED_GPU_MAX_BG);
			return EINVAL;
		}
	}
	return 0;
}

/* --procs 2: host mode, every path (nvshmem is refused with --host); GPU
 * mode (softnic's GPU peers), the gda path alone within the GPU's limits. */
static int loaded_check_procs(const gic_opts *o, const void *state)
{
	const loaded_state *st = state;

	if (!o->host && st->paths != 1u << GIC_LOADED_GDA) {
		fprintf(stderr, "gic loaded: --procs %d in GPU mode runs --path gda alone\n",
			o->procs);
		return EINVAL;
	}
	return ld_gpu_limits(o, st);
}

/* --procs 2: each path asked for (gda, then proxy, as the one-process
 * mode) in a pair of PE processes of its own, at every level; the first
 * error. */
static int loaded_pair(const gic_opts *o, const loaded_state *st, gic_sink *sink)
{
	int rc = 0;

	for (int p = GIC_LOADED_GDA; p <= GIC_LOADED_PROXY && !rc; p++) {
		loaded_state one;

		ld_one(o, st, p, 0, &one); /* the path and its shape; the levels stay st's */
		one.paths = 1u << p;
		if (st->paths & (1u << p))
			rc = gic_pair_run(o, SUB, &one, sizeof(one), LD_PAIR_PHASES,
					  2 * LD_PAIR_PHASES, sink);
	}
	return rc;
}

/* Every path asked for at every level: gda and proxy in this process (host
 * or GPU mode), or (--procs 2) gda in a pair of PE processes; then
 * nvshmem in PEs of its own. What ran is kept when a later part fails;
 * the first error is returned. */
static int loaded_run(const gic_opts *o, void *state, const gic_run_info *info, gic_sink *sink)
{
	const loaded_state *st = state;
	int rc = 0;

	if (o->host && (st->paths & (1u << GIC_LOADED_NVSHMEM))) {
		fprintf(stderr, "gic loaded: --path nvshmem runs on GPUs (not with --host)\n");
		return EINVAL;
	}
	if (ld_gpu_limits(o, st))
		return EINVAL;
	if (st->paths & (1u << GIC_LOADED_PROXY)) {
		loaded_state one;

		ld_one(o, st, GIC_LOADED_PROXY, 0, &one);
		if (one.R < one.T) {
			fprintf(stderr, "gic loaded: R%d below T%d: every worker needs a ring\n",
				one.R, one.T);
			return EINVAL;
		}
	}
	if (o->procs > 1)
		return loaded_pair(o, st, sink);
	for (int p = GIC_LOADED_GDA; p <= GIC_LOADED_PROXY; p++) {
		if (st->paths & (1u << p)) {
			int prc = ld_levels(o, st, p, NULL, info, sink);

			rc = rc ? rc : prc;
		}
	}
	if (st->paths & (1u << GIC_LOADED_NVSHMEM)) {
		int nrc = loaded_nvshmem(o, st, sink);

		rc = rc ? rc : nrc;
	}
	return rc;
}

const gic_experiment gic_exp_loaded = {
	.name = "loaded",
	.summary = "probe round trip under background load, shared vs reserved queue (Figure 6, "
		   "Table 11)",
	.flags = &loaded_table,
	.state_size = sizeof(loaded_state),
	.finish = loaded_finish,
	.run = loaded_run,
	.check_procs = loaded_check_procs,
	.run_pe = loaded_run_pe,
	.gpu_procs = 1,
};
