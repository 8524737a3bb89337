/*
 * bench/gic/exp_proxy.c - `gic proxy` (exp_proxy.h): parsing and the host
 * mode.
 *
 * Host mode: host producer threads, one per ring, enqueue -n 8-byte inline
 * requests each into a mini-proxy of T workers, R rings and batch B
 * (on the --provider NIC); the rate is every request over the time until the
 * last completion counter reached its target. The latency is one request
 * at a time on ring 0: enqueue, then wait for its counter. Every request
 * writes its own value into slots cleared before (the rate's before each
 * configuration, the latency's in laps of PX_SLOTS); the destination is
 * checked afterwards (the rate: each slot's last value; the latency:
 * every request's).
 *
 * --procs 2 (pe_pair.h): the same bodies with PE1 a process of its own.
 * The mini-proxy (producers, rings, workers, counters) runs in PE 0's
 * process, its workers' QPs connected to QPs of PE 1's (hxp_open on
 * both), and PE 0 times; PE 1 clears its slots, lets PE 0 go
 * (gic_pair_begin), and once PE 0's counters say every request completed
 * (gic_pair_end) checks them and sends its verdict: a phase per rate row,
 * one per latency row (its laps each bracketed the same way).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_proxy.h"
#include "gic.h"
#include "host.h"
#include "pe_pair.h"

#define SUB "proxy"
enum { PX_SLOTS = 1024, PX_LAT_COUNTER = 40, PX_LAT_BASE = 32 * PX_SLOTS };

#define F(m) GIC_FLAG_FIELD(proxy_state, m)
#define LIST(m, hi_) GIC_FLAG_LIST, F(m), .count_off = offsetof(proxy_state, n##m), .lo = 1, \
	.hi = (hi_), .max = GIC_PROXY_EXP_MAX_LIST
static const gic_flag proxy_flags[] = {
	{ "-T", .value = "LIST", LIST(T, GIC_PROXY_MAX_WORKERS), .def = 1, .help = "workers" },
	{ "-R", .value = "LIST", LIST(R, GIC_PROXY_MAX_RINGS), .dflt = "32, host mode 4",
	  .help = "rings (>= workers)" },
	{ "-B", .value = "LIST", LIST(B, GIC_PROXY_MAX_BATCH), .dflt = "1,4,16",
	  .help = "descriptors per post" },
	{ "--protocol", .value = "P", GIC_FLAG_CHOICE, F(protocols),
	  GIC_FLAG_NAMES("baseline", "tuned", "both"), GIC_FLAG_VALUES(1, 2, 3), .dflt = "tuned" },
	{ "--counter", .value = "C", GIC_FLAG_CHOICE, F(counter_gpu), GIC_FLAG_NAMES("host", "gpu"),
	  .dflt = "host", .help = "completion counter bumped by the worker (host) or by a NIC "
	  "atomic into producer memory (gpu)", .param = "counter" },
	{ "--warm", .value = "MS", GIC_FLAG_INT, F(warm_ms), .lo = 0, .hi = 60000,
	  .help = "warm workers: spin each worker's core MS ms before measuring (the paper: "
	  "20000); metric ends in ' warm'", .param = "warm_ms" },
	{ "--idle", .value = "MS", GIC_FLAG_INT, F(idle_ms), .lo = 0, .hi = 120000,
	  .help = "cold workers: leave each worker's core idle MS ms before measuring (the paper: "
	  "45000); metric ends in ' cold'. Neither (default): the worker state is not set",
	  .param = "idle_ms" },
	{ "--inflight", .value = "K", GIC_FLAG_INT, F(inflight), .lo = 1,
	  .hi = GIC_PROXY_MAX_INFLIGHT, .def = GIC_PROXY_DEFAULT_INFLIGHT,
	  .help = "chains each worker keeps posted (1: post, then wait, as before this flag)",
	  .param = "inflight" },
	{ "--metric", .value = "M", GIC_FLAG_CHOICE, F(metrics),
	  GIC_FLAG_NAMES("rate", "lat", "both"), GIC_FLAG_VALUES(1, 2, 3), .dflt = "both" },
};
#undef LIST
#undef F
const gic_flag_table gic_proxy_flags = GIC_FLAG_TABLE(SUB, proxy_flags, 0);

static int proxy_finish(void *state, unsigned marks)
{
	proxy_state *st = state;

	(void)marks;
	if (st->warm_ms && st->idle_ms) {
		fprintf(stderr, "gic proxy: --warm and --idle: a worker is warm or cold, not both\n");
		return EINVAL;
	}
	if (!st->nB) {
		st->B[0] = 1, st->B[1] = 4, st->B[2] = 16;
		st->nB = 3;
	}
	if (!st->protocols)
		st->protocols = GIC_PROXY_EXP_TUNED;
	if (!st->metrics)
		st->metrics = GIC_PROXY_EXP_RATE | GIC_PROXY_EXP_LAT;
	return 0; /* nR 0: run() picks 32 (GPU) or 4 (host) */
}

const char *gic_proxy_exp_metric(const proxy_state *st, const char *metric)
{
	static __thread char buf[64];

	snprintf(buf, sizeof(buf), "%s%s", metric, st->warm_ms ? " warm" : st->idle_ms ? " cold" :
		 "");
	return buf;
}

/* ------------------------------------------------------------------ */
/* Host mode. */

typedef struct px_conf {
	int T, R, B, protocol;
} px_conf;

typedef struct px_host {
	const gic_opts *o;
	const proxy_state *st;
	gic_sink *sink;
	hx *h;
	hxp x;
	px_conf c;
	int go;
	gic_pair *pair;      /* --procs 2: this process's PE (NULL: both PEs here) */
} px_host;

typedef struct px_producer {
	pthread_t tid;
	px_host *P;
	int ring;
	int rc;
} px_producer;

static size_t px_slot(int ring, uint64_t i)
{
	return ((size_t)ring * PX_SLOTS + (size_t)(i % PX_SLOTS)) * 8;
}

static void *producer_main(void *arg)
{
	px_producer *pr = arg;
	px_host *P = pr->P;

	while (!__atomic_load_n(&P->go, __ATOMIC_ACQUIRE))
		gic_cpu_relax();
	for (int i = 0; i < P->o->iters && !pr->rc; i++)
		pr->rc = hxp_put_u64(&P->x, pr->ring, px_slot(pr->ring, (uint64_t)i),
				     hx_value((uint64_t)pr->ring + 1, (uint64_t)i),
				     (uint32_t)pr->ring, hx_deadline());
	if (!pr->rc)
		pr->rc = gic_proxy_wait_counter(&P->x.views[pr->ring], &P->x.counters[pr->ring],
						(uint64_t)P->o->iters, hx_deadline());
	return NULL;
}

/* 1 when every ring's slots hold the last value written to them. */
static int px_validate(px_host *P)
{
	int n = P->o->iters;

	for (int r = 0; r < P->c.R; r++) {
		for (int s = 0; s < PX_SLOTS && s < n; s++) {
			uint64_t last = (uint64_t)s + (uint64_t)((n - 1 - s) / PX_SLOTS) * PX_SLOTS;
			uint64_t v = hx_value((uint64_t)r + 1, last);

			if (!hx_check(SUB, "rate payload", P->h->pe[1].dst + px_slot(r, (uint64_t)s),
				      (const uint8_t *)&v, 8))
				return 0;
		}
	}
	return 1;
}

static void px_describe(px_host *P, gic_result *r, const char *note)
{
	gic_result_param(r, "T=%d R=%d B=%d protocol=%s", P->c.T, P->c.R, P->c.B,
			 P->c.protocol == GIC_PROXY_TUNED ? "tuned" : "baseline");
	gic_result_flag_params(r, &gic_proxy_flags, P->st, "counter warm_ms idle_ms inflight");
	if (P->pair)
		gic_result_param(r, "procs=2");
	snprintf(r->transport, sizeof(r->transport), "%s", gic_transport(P->o));
	snprintf(r->note, sizeof(r->note), "%s; %d chains in flight per worker", note,
		 P->st->inflight);
	gic_result_paper(r);
}

static void px_name(const px_host *P, char *name, size_t len)
{
	snprintf(name, len, "%s T%d/R%d/B%d", P->c.protocol == GIC_PROXY_TUNED ? "tuned" :
		 "baseline", P->c.T, P->c.R, P->c.B);
}

/* The rate's producers, started and joined; *ns the time from the start
 * until every ring's counter reached its target. */
static int px_rate_post(px_host *P, uint64_t *ns)
{
	px_producer pr[GIC_PROXY_MAX_RINGS];
	int rc = 0, started = 0;
	uint64_t t0;

	P->go = 0;
	for (int i = 0; i < P->c.R; i++) {
		pr[i] = (px_producer){ .P = P, .ring = i };
		if (pthread_create(&pr[i].tid, NULL, producer_main, &pr[i]))
			break;
		started++;
	}
	t0 = gic_now_ns();
	__atomic_store_n(&P->go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < started; i++) {
		pthread_join(pr[i].tid, NULL);
		if (!rc && pr[i].rc)
			rc = hxp_fail(&P->x, SUB, "rate producer", pr[i].rc);
	}
	*ns = gic_now_ns() - t0;
	if (started < P->c.R)
		rc = rc ? rc : EAGAIN;
	return rc;
}

/* One rate row (a phase): the checker clears the rings' slots (every
 * value is nonzero), the poster posts and times, the checker checks. */
static int px_rate(px_host *P)
{
	uint64_t ns = 1;
	int rc, valid = 1;
	gic_result r;
	char name[96];

	if (gic_pair_checks(P->pair))
		memset(P->h->pe[1].dst, 0, (size_t)P->c.R * PX_SLOTS * 8);
	rc = gic_pair_begin(P->pair, P->h);
	if (!rc && gic_pair_posts(P->pair))
		rc = px_rate_post(P, &ns);
	if (!rc)
		rc = gic_pair_end(P->pair, P->h);
	if (!rc && gic_pair_checks(P->pair))
		valid = px_validate(P);
	if (!rc && gic_pair_posts(P->pair)) {
		px_name(P, name, sizeof(name));
		gic_result_init(&r, SUB, name, gic_proxy_exp_metric(P->st, "message rate"),
				"M msg/s");
		gic_result_set_value(&r, (double)P->c.R * P->o->iters * 1e3 / (double)ns);
		r.validated = valid;
		px_describe(P, &r, "host analogue: one host producer thread per ring");
		rc = gic_pair_put(P->pair, P->sink, &r);
	}
	if (!rc)
		gic_pair_phase_done(P->pair, valid);
	return rc;
}

/* The latency's slot of request i. */
static size_t px_lat_off(int i)
{
	return (size_t)PX_LAT_BASE * 8 + (size_t)(i % PX_SLOTS) * 8;
}

/* The start of a latency lap (PX_SLOTS requests): the checker clears the
 * slots (every value is nonzero: a request that never lands cannot pass),
 * then PE 1 lets PE 0 go. */
static int px_lap_begin(px_host *P)
{
	if (gic_pair_checks(P->pair))
		memset(P->h->pe[1].dst + px_lat_off(0), 0, (size_t)PX_SLOTS * 8);
	return gic_pair_begin(P->pair, P->h);
}

/* 1 when request i's slot holds its value; else 0 after a message. */
static int px_lat_ok(px_host *P, int i)
{
	uint64_t v = hx_value(99, (uint64_t)i);

	return hx_check(SUB, "latency payload", P->h->pe[1].dst + px_lat_off(i),
			(const uint8_t *)&v, 8);
}

/* --procs 2, PE 1: the other side of px_lat's laps; every request's slot
 * checked after its lap (*valid 0 when one did not check out). */
static int px_lat_check(px_host *P, int total, int *valid)
{
	int rc = 0;

	for (int first = 0; first < total && !rc; first += PX_SLOTS) {
		rc = px_lap_begin(P);
		if (!rc)
			rc = gic_pair_end(P->pair, P->h);
		for (int i = first; i < total && i < first + PX_SLOTS && !rc; i++)
			*valid &= px_lat_ok(P, i);
	}
	return rc;
}

/* One latency row (a phase): one request at a time, in laps (--procs 2:
 * PE 1 checks each lap). */
static int px_lat(px_host *P)
{
	gic_samples s = { 0 };
	int valid = 1, rc = 0, total = P->o->iters + P->o->warmup;
	gic_result r;
	char name[96];

	if (!gic_pair_posts(P->pair)) {
		rc = px_lat_check(P, total, &valid);
		if (!rc)
			gic_pair_phase_done(P->pair, valid);
		return rc;
	}
	for (int i = 0; i < total && !rc; i++) {
		uint64_t v = hx_value(99, (uint64_t)i), t0;

		if (i % PX_SLOTS == 0 && (rc = px_lap_begin(P)))
			return rc;
		t0 = gic_now_ns();
		rc = hxp_put_u64(&P->x, 0, px_lat_off(i), v, PX_LAT_COUNTER, hx_deadline());
		if (!rc)
			rc = gic_proxy_wait_counter(&P->x.views[0], &P->x.counters[PX_LAT_COUNTER],
						    (uint64_t)i + 1, hx_deadline());
		if (rc)
			return hxp_fail(&P->x, SUB, "put+completion", rc);
		gic_samples_add(&s, (double)(gic_now_ns() - t0) / 1e3);
		if (!P->pair) /* the peer process checks its own */
			valid &= px_lat_ok(P, i);
		if ((i % PX_SLOTS == PX_SLOTS - 1 || i + 1 == total) &&
		    (rc = gic_pair_end(P->pair, P->h)))
			return rc;
	}
	px_name(P, name, sizeof(name));
	gic_result_init(&r, SUB, name, gic_proxy_exp_metric(P->st, "put+completion"), "us");
	gic_result_set_samples(&r, &s, (size_t)P->o->warmup);
	r.validated = valid;
	px_describe(P, &r, "host analogue: host producer, ring 0, one request at a time");
	gic_samples_free(&s);
	rc = gic_pair_put(P->pair, P->sink, &r);
	if (!rc)
		gic_pair_phase_done(P->pair, valid);
	return rc;
}

static int px_config(px_host *P)
{
	hxp_cfg c = { .from = 0, .workers = P->c.T, .rings = P->c.R, .batch = P->c.B,
		      .protocol = P->c.protocol, .counter_gpu = P->st->counter_gpu,
		      .warm_ms = P->st->warm_ms, .idle_ms = P->st->idle_ms,
		      .inflight = P->st->inflight, .log_slots = 8 };
	int rc = hxp_open(&P->x, P->h, &c);

	if (!rc && (P->st->metrics & GIC_PROXY_EXP_RATE))
		rc = px_rate(P);
	if (!rc && (P->st->metrics & GIC_PROXY_EXP_LAT))
		rc = px_lat(P);
	hxp_close(&P->x);
	return rc;
}

/* Every configuration: in this process (pair NULL), or as this PE of a
 * pair. */
static int px_host_run(const gic_opts *o, const proxy_state *st, gic_pair *pair,
		       gic_sink *sink)
{
	px_host P = { .o = o, .st = st, .sink = sink, .pair = pair };
	hx_cfg hc = { .who = SUB, .provider = o->provider, .nic = o->nic,
		      .engine_threads = 1, .qps = 1, .log_sq_bb = 6,
		      .region = (size_t)(PX_LAT_BASE + PX_SLOTS) * 8 };
	int rc = gic_pair_open(pair, &P.h, &hc), done = 0, total = st->nT * st->nR * st->nB * 2;

	for (int p = 0; p < 2 && !rc; p++) {
		if (!(st->protocols & (1u << p)))
			continue;
		for (int a = 0; a < st->nT && !rc; a++)
			for (int b = 0; b < st->nR && !rc; b++)
				for (int k = 0; k < st->nB && !rc; k++) {
					P.c = (px_conf){ st->T[a], st->R[b], st->B[k], p };
					gic_progress(SUB, ++done, total, "configuration");
					if (P.c.R >= P.c.T)
						rc = px_config(&P);
				}
	}
	hx_close(P.h);
	return rc;
}

_Static_assert(sizeof(proxy_state) <= GIC_PAIR_STATE_MAX, "proxy's state fits a pair job");

/* The phases (rows) of --procs 2: one per metric of each configuration
 * run (R >= T), per protocol. */
static int px_phases(const proxy_state *st)
{
	int n = 0, metrics = !!(st->metrics & GIC_PROXY_EXP_RATE) +
			     !!(st->metrics & GIC_PROXY_EXP_LAT);

	for (int a = 0; a < st->nT; a++)
		for (int b = 0; b < st->nR; b++)
			n += st->R[b] >= st->T[a] ? st->nB : 0;
	return n * metrics * (!!(st->protocols & 1u) + !!(st->protocols & 2u));
}

/* 1 when -T, -R or -B's n values are in 1..hi. */
static int px_list_ok(const int *v, int n, int hi)
{
	return gic_pair_list_ok(v, n, GIC_PROXY_EXP_MAX_LIST, hi);
}

/* run_pe (exp.h): every configuration as this PE of pair. */
static int proxy_run_pe(gic_pair *pair, const gic_opts *o, const void *state, size_t state_len)
{
	const proxy_state *st = state;

	if (state_len != sizeof(*st) || !px_list_ok(st->T, st->nT, GIC_PROXY_MAX_WORKERS) ||
	    !px_list_ok(st->R, st->nR, GIC_PROXY_MAX_RINGS) ||
	    !px_list_ok(st->B, st->nB, GIC_PROXY_MAX_BATCH) || st->protocols < 1 ||
	    st->protocols > 3 || st->metrics < 1 || st->metrics > 3 || st->counter_gpu < 0 ||
	    st->counter_gpu > 1 || st->warm_ms < 0 || st->warm_ms > 60000 || st->idle_ms < 0 ||
	    st->idle_ms > 120000 || st->inflight < 1 || st->inflight > GIC_PROXY_MAX_INFLIGHT) {
		fprintf(stderr, "gic proxy: PE%d: a malformed job\n", gic_pair_rank(pair));
		return EPROTO;
	}
	return px_host_run(o, st, pair, NULL);
}

static int proxy_run(const gic_opts *o, void *state, const gic_run_info *info, gic_sink *sink)
{
	proxy_state *st = state;
	int n;

	if (!st->nR)
		st->R[st->nR++] = o->host ? 4 : 32;
	if (!o->host)
		return gic_gpu_proxy(o, st, info, sink);
	if (o->procs > 1) {
		n = px_phases(st);
		return n ? gic_pair_run(o, SUB, st, sizeof(*st), n, n, sink) : 0;
	}
	return px_host_run(o, st, NULL, sink);
}

const gic_experiment gic_exp_proxy = {
	.name = "proxy",
	.summary = "mini-proxy message rate and latency against workers, rings, batch (Figure 7, "
		   "Tables 9, 10)",
	.flags = &gic_proxy_flags,
	.state_size = sizeof(proxy_state),
	.finish = proxy_finish,
	.run = proxy_run,
	/* every configuration (--counter gpu too: its atomics loop back on PE
	 * 0's NIC, in PE 0's process) */
	.check_procs = gic_pair_check_any,
	.run_pe = proxy_run_pe,
};
