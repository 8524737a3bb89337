/*
 * bench-cpu-engine - how fast softnic's CPU engine executes mlx5 WQEs.
 *
 *  (a) engine execution rate: for E engine threads, E sender QPs (one per
 *      engine thread, each connected to its own PE1 QP). Each ring is
 *      pre-filled with one ring's worth of 8-byte inline RDMA writes (one
 *      BB each; the last of every 256 signaled), then every doorbell is
 *      rung and the time runs from the first doorbell to the last CQE. The
 *      submitter is out of the picture: this is the engine's own rate.
 *  (b) pipelined rate: one engine thread and a host submitter thread that
 *      posts batches of 64 (last signaled) while the engine runs.
 *  (c) latency: the same submitter posts one signaled 8-byte inline write
 *      at a time and waits for its CQE (post + completion).
 *
 * The fixture is softnic_pair.h's (one QP pair per sender), the flags a
 * bench/gic/flags.h table.
 *
 * Every write stores a distinct 8-byte value to a distinct 8-byte slot;
 * every slot is checked after every round. Each result is the median of
 * --rounds rounds (after one untimed warm-up round).
 *
 * Exit status: 0 when every check passed, 1 on a failed check, a timeout or
 * a setup error, 2 for bad flags.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flags.h"
#include "gic/softnic.h"
#include "pattern.h"
#include "softnic_pair.h"
#include "stats.h"

#define BENCH_ORDER GIC_ORDER_RELEASE_SYS
#define BENCH_DEADLINE_NS 5000000000ull /* every wait gives up after 5 s */

enum {
	SIGNAL_EVERY = 256, /* phase (a): the last WQE of every 256 is signaled */
	PIPE_BATCH = 64,    /* phase (b): WQEs per doorbell */
	PIPE_LOG_RING = 12, /* phase (b, c): 4096-BB ring */
	LOG_CQ = 8,         /* >= signaled WQEs a ring can hold in (a) and (b) */
	MAX_ENGINES = 64,
};

enum { PHASE_ENGINE = 1, PHASE_PIPE = 2, PHASE_LATENCY = 3 };

typedef struct bench_opts {
	int quick;
	int max_engines;      /* sweep 1..max_engines */
	int rounds;
	const char *json;
	int help;             /* --help: print the flags, run nothing */
	/* Derived from quick. */
	int log_ring;         /* phase (a) ring: WQEs per QP per round */
	uint64_t pipe_writes; /* phase (b) writes per round */
	uint64_t lat_samples; /* phase (c) */
	uint64_t lat_warmup;
} bench_opts;

/* A softnic with E engine threads and n senders (QP pairs, softnic_pair.h);
 * PE1 registers one region of n * slots_per_sender 8-byte slots, sender
 * i's from slot i * slots_per_sender. */
typedef struct fixture {
	softnic_pair *p;
	int n;
	size_t slots_per_sender;
} fixture;

/* Sender idx's destination slots. */
static uint64_t *slots_of(const fixture *f, int idx)
{
	return (uint64_t *)(void *)f->p->dst + (size_t)idx * f->slots_per_sender;
}

/* What the phases measured. */
typedef struct engine_result {
	int engines;
	double median, min, max; /* M msg/s, all engine threads together */
} engine_result;

typedef struct results {
	engine_result eng[MAX_ENGINES];
	int neng;
	double pipe_median, pipe_min, pipe_max; /* M msg/s */
	gic_summary lat;                        /* microseconds */
	uint64_t checked;                       /* payloads that passed */
} results;

/* ------------------------------------------------------------------ */
/* Flags (bench/gic/flags.h). */

#define O(member) GIC_FLAG_FIELD(bench_opts, member)
static const gic_flag bench_flags[] = {
	{ "--quick", .kind = GIC_FLAG_BOOL, O(quick),
	  .help = "small counts (about a second; for ctest)" },
	{ "--engines", .value = "N", .kind = GIC_FLAG_INT, O(max_engines), .lo = 1,
	  .hi = MAX_ENGINES, .dflt = "online CPUs - 1, at least 1",
	  .help = "sweep engine threads 1..N in phase (a)" },
	{ "--rounds", .value = "N", .kind = GIC_FLAG_INT, O(rounds), .lo = 1, .hi = 1000,
	  .dflt = "5, 3 with --quick", .help = "timed rounds per measurement, median reported" },
	{ "--json", .value = "FILE", .kind = GIC_FLAG_STRING, O(json),
	  .help = "also write the results as JSON to FILE" },
	{ "--help", "-h", .kind = GIC_FLAG_BOOL, O(help), .help = "this text" },
};
#undef O
static const gic_flag_table bench_table = GIC_FLAG_PROG_TABLE("bench-cpu-engine", bench_flags);

static void usage(FILE *f)
{
	fprintf(f, "usage: bench-cpu-engine [flags]\n");
	gic_flags_help(&bench_table, f);
}

/* Sets the counts that --quick selects, and the defaults left at 0. */
static void derive_counts(bench_opts *o)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);

	if (!o->max_engines)
		o->max_engines = online > 2 ? (int)(online - 1 < MAX_ENGINES ? online - 1
								   : MAX_ENGINES) : 1;
	if (!o->rounds)
		o->rounds = o->quick ? 3 : 5;
	o->log_ring = o->quick ? 12 : 14;
	o->pipe_writes = o->quick ? 1u << 15 : 1u << 20;
	o->lat_samples = o->quick ? 2000 : 20000;
	o->lat_warmup = o->quick ? 200 : 1000;
}

/* Fills o from the command line; 0, or EINVAL after a message. */
static int parse_opts(bench_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	if (gic_flags_parse(&bench_table, argc, argv, o, NULL))
		return EINVAL;
	derive_counts(o);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Payloads: write k of sender i in round r of a phase stores
 * slot_value(phase, r, i, k) to slot k of sender i. gic_mix64 is a
 * bijection of its input, so every (phase, round, sender, k) stores a
 * distinct value. */

static uint64_t slot_value(int phase, uint32_t round, int sender_idx, uint64_t k)
{
	uint64_t z = ((uint64_t)phase << 60) ^ ((uint64_t)round << 44) ^
		     ((uint64_t)sender_idx << 32) ^ k;

	return gic_mix64(z + 0x9e3779b97f4a7c15ull);
}

/* Stores the complement of every expected value, so a lost write fails. */
static void poison_slots(uint64_t *slots, uint64_t n, int phase, uint32_t round, int idx)
{
	for (uint64_t k = 0; k < n; k++)
		slots[k] = ~slot_value(phase, round, idx, k);
}

/* Checks slots [0, n) of sender idx; 0, or EIO after a message. */
static int check_slots(fixture *f, int idx, uint64_t n, int phase, uint32_t round,
		       uint64_t *checked)
{
	const uint64_t *slots = slots_of(f, idx);

	for (uint64_t k = 0; k < n; k++) {
		uint64_t want = slot_value(phase, round, idx, k);

		if (slots[k] != want) {
			fprintf(stderr, "bench-cpu-engine: phase %c round %u: sender %d slot %" PRIu64
				" holds 0x%016" PRIx64 ", expected 0x%016" PRIx64 "\n",
				'a' + phase - 1, round, idx, k, slots[k], want);
			return EIO;
		}
	}
	*checked += n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Fixture. */

/* Says why a wait failed, with softnic's own account; returns rc. */
static int wait_failed(const fixture *f, int idx, const char *what, int rc)
{
	return sp_fail(f->p, idx, what, rc);
}

/* Opens a softnic with `engines` engine threads and n senders whose rings
 * hold 2^log_ring BBs, each with slots_per_sender destination slots. */
static int fixture_open(fixture *f, int engines, int n, int log_ring, size_t slots_per_sender)
{
	sp_cfg c = { .who = "bench-cpu-engine", .engine_threads = engines, .qps = n,
		     .log_sq_bb = log_ring, .log_cq = LOG_CQ,
		     .dst_bytes = (size_t)n * slots_per_sender * sizeof(uint64_t) };

	*f = (fixture){ .n = n, .slots_per_sender = slots_per_sender };
	f->p = sp_open(&c);
	return f->p ? 0 : errno;
}

/* Frees what fixture_open() created. */
static void fixture_close(fixture *f)
{
	sp_close(f->p);
	f->p = NULL;
}

/* ------------------------------------------------------------------ */
/* Posting. */

/* Sender idx's send queue. */
static gic_sq *sq_of(fixture *f, int idx)
{
	return &f->p->q[idx].sq;
}

/* Reserves one BB of sender idx and builds the 8-byte inline write of v to
 * its slot k. */
static int post_value(fixture *f, int idx, uint64_t k, uint64_t v, uint8_t fm_ce_se,
		      uint64_t deadline)
{
	gic_sq *sq = sq_of(f, idx);
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, 1, &pos, BENCH_ORDER, deadline);

	if (rc)
		return rc;
	gic_wqe_write_inline(sq, pos, (uint64_t)(uintptr_t)&slots_of(f, idx)[k], f->p->dst_rkey,
			     &v, sizeof(v), fm_ce_se);
	if (fm_ce_se & GIC_CTRL_CQ_UPDATE)
		gic_sq_note_signaled(sq, pos + 1, 0);
	return 0;
}

/* Waits until everything sender idx published has retired. */
static int wait_all(fixture *f, int idx, const char *what, uint64_t deadline)
{
	gic_sq *sq = sq_of(f, idx);
	int rc = gic_sq_wait_retired(sq, sq->ready, 0, BENCH_ORDER, deadline);

	return rc ? wait_failed(f, idx, what, rc) : 0;
}

/* ------------------------------------------------------------------ */
/* (a) Engine execution rate. */

/* Fills sender idx's whole ring with writes of round r, not yet rung. */
static int prefill(fixture *f, int idx, uint32_t round)
{
	uint64_t n = f->slots_per_sender, deadline = gic_now_ns() + BENCH_DEADLINE_NS;

	for (uint64_t k = 0; k < n; k++) {
		int last = k % SIGNAL_EVERY == SIGNAL_EVERY - 1 || k + 1 == n;
		int rc = post_value(f, idx, k, slot_value(PHASE_ENGINE, round, idx, k),
				    last ? GIC_CTRL_CQ_UPDATE : 0, deadline);

		if (rc)
			return wait_failed(f, idx, "phase a: prefill", rc);
	}
	return 0;
}

/* One round: pre-fill every ring, ring every doorbell, wait for the last
 * CQE of each; *ns is doorbell to last CQE. Then every slot is checked. */
static int engine_round(fixture *f, uint32_t round, uint64_t *ns, uint64_t *checked)
{
	uint64_t n = f->slots_per_sender, t0, deadline;
	int rc = 0;

	for (int i = 0; i < f->n && !rc; i++) {
		poison_slots(slots_of(f, i), n, PHASE_ENGINE, round, i);
		rc = prefill(f, i, round);
	}
	t0 = gic_now_ns();
	deadline = t0 + BENCH_DEADLINE_NS;
	for (int i = 0; i < f->n && !rc; i++)
		gic_sq_publish_excl(sq_of(f, i), BENCH_ORDER);
	for (int i = 0; i < f->n && !rc; i++)
		rc = wait_all(f, i, "phase a: waiting for the last CQE", deadline);
	*ns = gic_now_ns() - t0;
	for (int i = 0; i < f->n && !rc; i++)
		rc = check_slots(f, i, n, PHASE_ENGINE, round, checked);
	return rc;
}

/* Phase (a) with `engines` engine threads: one untimed round, then
 * o->rounds timed ones; the median and extremes go to *out. */
static int engine_rate(const bench_opts *o, int engines, engine_result *out, uint64_t *checked)
{
	fixture f;
	gic_samples rates = { 0 };
	gic_summary sm;
	int rc = fixture_open(&f, engines, engines, o->log_ring, (size_t)1 << o->log_ring);

	for (uint32_t r = 0; !rc && r <= (uint32_t)o->rounds; r++) {
		uint64_t ns = 0;

		rc = engine_round(&f, r, &ns, checked);
		if (!rc)
			rc = gic_samples_add(&rates, (double)engines * f.slots_per_sender * 1e3 /
							     (double)(ns ? ns : 1));
	}
	if (!rc)
		rc = gic_summarize(&rates, 1, &sm);
	if (!rc)
		*out = (engine_result){ .engines = engines, .median = sm.p50, .min = sm.min,
					.max = sm.max };
	gic_samples_free(&rates);
	fixture_close(&f);
	return rc;
}

/* ------------------------------------------------------------------ */
/* (b) Pipelined rate and (c) latency, from a host submitter thread. */

typedef struct submitter_job {
	const bench_opts *o;
	fixture *f;
	gic_samples rates;   /* M msg/s per round, the first untimed */
	gic_samples lat;     /* microseconds per write */
	uint64_t checked;
	int rc;
} submitter_job;

/* Posts writes [first, first + n) of a round with one doorbell; the last
 * is signaled. Reservations wait for ring space as CQEs retire WQEs. */
static int post_batch(fixture *f, uint32_t round, uint64_t first, uint32_t n)
{
	uint64_t deadline = gic_now_ns() + BENCH_DEADLINE_NS;

	for (uint32_t j = 0; j < n; j++) {
		uint64_t k = first + j;
		int rc = post_value(f, 0, k, slot_value(PHASE_PIPE, round, 0, k),
				    j + 1 == n ? GIC_CTRL_CQ_UPDATE : 0, deadline);

		if (rc)
			return wait_failed(f, 0, "phase b: reserving ring space", rc);
	}
	gic_sq_publish_excl(sq_of(f, 0), BENCH_ORDER);
	return 0;
}

/* One pipelined round of o->pipe_writes writes; *ns from the first post
 * to the last CQE. Then every slot is checked. */
static int pipe_round(submitter_job *job, uint32_t round, uint64_t *ns)
{
	fixture *f = job->f;
	uint64_t n = job->o->pipe_writes, t0;
	int rc = 0;

	poison_slots(slots_of(f, 0), n, PHASE_PIPE, round, 0);
	t0 = gic_now_ns();
	for (uint64_t k = 0; k < n && !rc; k += PIPE_BATCH)
		rc = post_batch(f, round, k, n - k < PIPE_BATCH ? (uint32_t)(n - k) : PIPE_BATCH);
	if (!rc && (rc = gic_sq_quiet(sq_of(f, 0), BENCH_ORDER, gic_now_ns() + BENCH_DEADLINE_NS)))
		wait_failed(f, 0, "phase b: final wait", rc);
	*ns = gic_now_ns() - t0;
	return rc ? rc : check_slots(f, 0, n, PHASE_PIPE, round, &job->checked);
}

/* Phase (c): warm-up plus samples writes, one at a time, each signaled;
 * every slot is checked at the end. */
static int latency_run(submitter_job *job)
{
	fixture *f = job->f;
	gic_sq *sq = sq_of(f, 0);
	uint64_t n = job->o->lat_warmup + job->o->lat_samples;
	int rc = 0;

	poison_slots(slots_of(f, 0), n, PHASE_LATENCY, 0, 0);
	for (uint64_t k = 0; k < n && !rc; k++) {
		uint64_t t0 = gic_now_ns(), deadline = t0 + BENCH_DEADLINE_NS;

		rc = post_value(f, 0, k, slot_value(PHASE_LATENCY, 0, 0, k), GIC_CTRL_CQ_UPDATE,
				deadline);
		if (!rc) {
			gic_sq_publish_excl(sq, BENCH_ORDER);
			rc = gic_sq_wait_retired(sq, sq->ready, 0, BENCH_ORDER, deadline);
		}
		if (rc)
			return wait_failed(f, 0, "phase c: waiting for the CQE", rc);
		rc = gic_samples_add(&job->lat, (double)(gic_now_ns() - t0) / 1e3);
	}
	return rc ? rc : check_slots(f, 0, n, PHASE_LATENCY, 0, &job->checked);
}

static void *submitter_main(void *arg)
{
	submitter_job *job = arg;
	int rc = 0;

	for (uint32_t r = 0; !rc && r <= (uint32_t)job->o->rounds; r++) {
		uint64_t ns = 1;

		rc = pipe_round(job, r, &ns);
		if (!rc)
			rc = gic_samples_add(&job->rates, (double)job->o->pipe_writes * 1e3 /
								  (double)(ns ? ns : 1));
	}
	job->rc = rc ? rc : latency_run(job);
	return NULL;
}

/* Phases (b) and (c): one engine thread, one sender, a submitter thread. */
static int submitter_phases(const bench_opts *o, results *res)
{
	uint64_t lat_n = o->lat_warmup + o->lat_samples;
	size_t slots = (size_t)(o->pipe_writes > lat_n ? o->pipe_writes : lat_n);
	submitter_job job = { .o = o };
	fixture f;
	gic_summary sm;
	pthread_t t;
	int rc = fixture_open(&f, 1, 1, PIPE_LOG_RING, slots);

	job.f = &f;
	if (!rc && (rc = pthread_create(&t, NULL, submitter_main, &job)))
		fprintf(stderr, "bench-cpu-engine: pthread_create: %s\n", strerror(rc));
	if (!rc) {
		pthread_join(t, NULL);
		rc = job.rc;
	}
	if (!rc && !(rc = gic_summarize(&job.rates, 1, &sm))) {
		res->pipe_median = sm.p50;
		res->pipe_min = sm.min;
		res->pipe_max = sm.max;
		rc = gic_summarize(&job.lat, o->lat_warmup, &res->lat);
	}
	res->checked += job.checked;
	gic_samples_free(&job.rates);
	gic_samples_free(&job.lat);
	fixture_close(&f);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Reporting. */

static void print_engine_table(const bench_opts *o, const results *res)
{
	printf("(a) engine execution rate: %u pre-filled 8-byte inline writes per QP, one QP per "
	       "engine thread,\n    last of every %d signaled; doorbell to last CQE, median of %d "
	       "rounds\n", 1u << o->log_ring, SIGNAL_EVERY, o->rounds);
	printf("    %14s  %14s  %18s  %20s\n", "engine threads", "total M msg/s",
	       "per thread M msg/s", "total min..max");
	for (int i = 0; i < res->neng; i++) {
		const engine_result *e = &res->eng[i];
		char range[48];

		snprintf(range, sizeof(range), "%.3f..%.3f", e->min, e->max);
		printf("    %14d  %14.3f  %18.3f  %20s\n", e->engines, e->median,
		       e->median / e->engines, range);
	}
}

static void print_results(const bench_opts *o, const results *res)
{
	print_engine_table(o, res);
	printf("(b) pipelined: 1 engine thread, 1 submitter thread, batches of %d: %.3f M msg/s "
	       "(median of %d rounds of %" PRIu64 " writes; min %.3f, max %.3f)\n", PIPE_BATCH,
	       res->pipe_median, o->rounds, o->pipe_writes, res->pipe_min, res->pipe_max);
	printf("(c) latency, post + CQE of one signaled 8-byte inline write: p50=%.3f p99=%.3f "
	       "max=%.3f us (%zu samples after %zu warm-up)\n", res->lat.p50, res->lat.p99,
	       res->lat.max, res->lat.count, res->lat.trimmed);
	printf("validation: passed (%" PRIu64 " payloads checked)\n", res->checked);
}

/* Writes the results as one JSON object to f; 0 or EIO. */
static int write_json(FILE *f, const bench_opts *o, const results *res, const char *cpu)
{
	fputs("{\"program\": \"bench-cpu-engine\", \"cpu\": ", f);
	gic_json_string(f, cpu);
	fprintf(f, ", \"quick\": %d, \"rounds\": %d, \"order\": \"RELEASE_SYS\",\n \"engine_rate\": [",
		o->quick, o->rounds);
	for (int i = 0; i < res->neng; i++) {
		const engine_result *e = &res->eng[i];

		fprintf(f, "%s\n  {\"engine_threads\": %d, \"wqes_per_qp\": %u, \"signal_every\": %d, "
			"\"mmsg_per_s\": %.3f, \"per_thread_mmsg_per_s\": %.3f, \"min\": %.3f, "
			"\"max\": %.3f}", i ? "," : "", e->engines, 1u << o->log_ring, SIGNAL_EVERY,
			e->median, e->median / e->engines, e->min, e->max);
	}
	fprintf(f, "],\n \"pipelined\": {\"engine_threads\": 1, \"batch\": %d, \"writes\": %" PRIu64
		", \"mmsg_per_s\": %.3f, \"min\": %.3f, \"max\": %.3f},\n \"latency\": ", PIPE_BATCH,
		o->pipe_writes, res->pipe_median, res->pipe_min, res->pipe_max);
	gic_summary_write_json(f, "post+completion 8-byte inline", &res->lat, "us");
	fprintf(f, ",\n \"checked\": %" PRIu64 ", \"validation\": \"passed\"}\n", res->checked);
	fflush(f);
	return ferror(f) ? EIO : 0;
}

/* Runs the three phases; 0 when every round ran and every check passed. */
static int run_all(const bench_opts *o, results *res)
{
	for (int e = 1; e <= o->max_engines; e++) {
		int rc = engine_rate(o, e, &res->eng[res->neng], &res->checked);

		if (rc)
			return rc;
		res->neng++;
	}
	return submitter_phases(o, res);
}

int main(int argc, char **argv)
{
	bench_opts o;
	results res = { 0 };
	char cpu[512];
	FILE *json = NULL;
	int rc = parse_opts(&o, argc, argv);

	if (rc)
		return 2;
	if (o.help) {
		usage(stdout);
		return 0;
	}
	if (o.json && !(json = fopen(o.json, "w"))) {
		fprintf(stderr, "bench-cpu-engine: --json: cannot write '%s': %s\n", o.json,
			strerror(errno));
		return 2;
	}
	gic_cpu_state_line(cpu, sizeof(cpu));
	printf("bench-cpu-engine: softnic CPU engine, RDMA write, order RELEASE_SYS%s\n%s\n",
	       o.quick ? " (quick)" : "", cpu);
	fflush(stdout);
	rc = run_all(&o, &res);
	if (rc) {
		printf("validation: FAILED\n");
	} else {
		print_results(&o, &res);
		if (json && write_json(json, &o, &res, cpu)) {
			fprintf(stderr, "bench-cpu-engine: --json %s: write failed\n", o.json);
			rc = EIO;
		}
	}
	if (json && fclose(json) && !rc) {
		fprintf(stderr, "bench-cpu-engine: --json %s: %s\n", o.json, strerror(errno));
		rc = EIO;
	}
	return rc ? 1 : 0;
}
