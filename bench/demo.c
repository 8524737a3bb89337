/*
 * gic-demo - the main job, end to end on softnic.
 *
 * Two PEs in one process (softnic_pair.h), each a protection domain with a
 * CQ and an RC QP, the QPs connected to each other. PE1 registers a
 * destination buffer (REMOTE_WRITE), PE0 a source buffer. Flags:
 * bench/gic/flags.h's table engine. A host thread, the submitter, owns
 * PE0's send queue and posts RDMA writes through gic/post.h (order
 * GIC_ORDER_RELEASE_SYS); softnic's CPU engine threads execute them.
 *
 *  (a) latency: one signaled write at a time; each sample is post plus
 *      completion, timed with gic_now_ns(). Every write carries a pattern
 *      derived from its iteration and lands in a slot chosen by iteration;
 *      the slot is checked byte by byte after the completion.
 *  (b) rate: iters writes, --batch WQEs per doorbell, the last of each
 *      batch signaled, several batches in flight (the ring holds at least
 *      four); then every destination slot is checked.
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

#include "flags.h"
#include "gic/softnic.h"
#include "pattern.h"
#include "softnic_pair.h"
#include "stats.h"

#define DEMO_ORDER GIC_ORDER_RELEASE_SYS
#define DEMO_DEADLINE_NS 5000000000ull      /* every wait gives up after 5 s */
#define DEMO_MAX_REGION ((size_t)64 << 20)  /* bytes of destination slots */
#define DEMO_MAX_INLINE (GIC_WQE_MAX_DS * GIC_SEG_SIZE - 2 * GIC_SEG_SIZE - 4)
#define DEMO_MAX_POINTER 65536u
#define DEMO_MIN_RING_BB 1024u

enum { PHASE_LATENCY = 1, PHASE_RATE = 2 };

typedef struct demo_opts {
	int engine_threads;
	uint64_t iters;
	uint64_t warmup;
	uint32_t size;       /* payload bytes */
	uint32_t batch;      /* WQEs per doorbell in the rate run */
	int pointer;         /* 0: inline payload, 1: payload read from the source MR */
	int strict;
	const char *json;    /* NULL: no JSON file */
	int help;            /* --help: print the flags, run nothing */
} demo_opts;

typedef struct demo {
	demo_opts o;
	softnic_pair *p;       /* PE0 -> PE1, one QP pair (softnic_pair.h) */
	uint8_t *src;          /* PE0's source slots (pointer mode): p->src */
	uint8_t *dst;          /* PE1's destination slots: p->dst */
	gic_sq *sq;            /* PE0's send queue (p->q[0].sq); the submitter owns it */
	size_t nslots;         /* slots of o.size bytes in src and dst */
	uint32_t wqe_bb;       /* basic blocks of one write WQE */
	int log_sq_bb;
	uint8_t *expect;       /* o.size bytes: the pattern being checked */
	uint8_t *scratch;      /* o.size bytes: inline payloads */
	gic_samples lat;       /* latency samples in microseconds */
	uint64_t rate_ns;      /* duration of the rate run */
	uint64_t checked;      /* payloads that passed their check */
	int failed;
} demo;

/* ------------------------------------------------------------------ */
/* Flags (bench/gic/flags.h). */

/* DEMO_MAX_INLINE as the text --help gives. */
#define DEMO_MAX_INLINE_TEXT "972"
_Static_assert(DEMO_MAX_INLINE == 972, "DEMO_MAX_INLINE_TEXT");

#define O(member) GIC_FLAG_FIELD(demo_opts, member)
static const gic_flag demo_flags[] = {
	{ "--engine-threads", .value = "N", .kind = GIC_FLAG_INT, O(engine_threads), .lo = 1,
	  .hi = 64, .def = 1, .help = "softnic CPU engine threads" },
	{ "--iters", .value = "N", .kind = GIC_FLAG_INT, O(iters), .lo = 1, .hi = 100000000,
	  .def = 100000, .help = "measured writes per run" },
	{ "--warmup", .value = "N", .kind = GIC_FLAG_INT, O(warmup), .lo = 0, .hi = 10000000,
	  .def = 1000, .help = "latency writes left out of the statistics" },
	{ "--size", .value = "B", .kind = GIC_FLAG_INT, O(size), .lo = 1, .hi = DEMO_MAX_POINTER,
	  .def = 8, .help = "payload bytes (inline up to " DEMO_MAX_INLINE_TEXT ")" },
	{ "--batch", .value = "N", .kind = GIC_FLAG_INT, O(batch), .lo = 1, .hi = 256, .def = 1,
	  .help = "WQEs per doorbell in the rate run" },
	{ "--mode", .value = "M", .kind = GIC_FLAG_CHOICE, O(pointer),
	  GIC_FLAG_NAMES("inline", "pointer"), .dflt = "inline",
	  .help = "the payload inline in the WQE, or read from the source MR" },
	{ "--strict", .kind = GIC_FLAG_BOOL, O(strict),
	  .help = "softnic strict mode (protocol mistakes become errors)" },
	{ "--json", .value = "FILE", .kind = GIC_FLAG_STRING, O(json),
	  .help = "also write the results as JSON to FILE" },
	{ "--help", "-h", .kind = GIC_FLAG_BOOL, O(help), .help = "this text" },
};
#undef O
static const gic_flag_table demo_table = GIC_FLAG_PROG_TABLE("gic-demo", demo_flags);

static void usage(FILE *f)
{
	fprintf(f, "usage: gic-demo [flags]\n");
	gic_flags_help(&demo_table, f);
}

/* Fills o from the command line; 0, or EINVAL after a message. */
static int parse_opts(demo_opts *o, int argc, char **argv)
{
	*o = (demo_opts){ 0 };
	if (gic_flags_parse(&demo_table, argc, argv, o, NULL))
		return EINVAL;
	if (!o->help && !o->pointer && o->size > DEMO_MAX_INLINE) {
		fprintf(stderr, "gic-demo: --size: %u bytes do not fit inline (at most %d; "
			"use --mode pointer)\n", o->size, DEMO_MAX_INLINE);
		return EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Payload patterns. */

/* The payload of write `iter` of `phase`: distinct for every (phase, iter)
 * (its first 8 bytes are a bijection of them): splitmix64's stream from
 * the state (phase << 56) ^ iter. */
static void pattern_fill(uint8_t *buf, uint32_t len, int phase, uint64_t iter)
{
	uint64_t state = ((uint64_t)phase << 56) ^ iter;

	for (uint32_t off = 0; off < len; off += 8) {
		uint64_t w = gic_mix64(state += 0x9e3779b97f4a7c15ull);

		memcpy(buf + off, &w, len - off < 8 ? len - off : 8);
	}
}

/* Compares destination slot `slot` with d->expect; 0, or 1 after a message
 * naming the phase, write, slot and first differing byte. */
static int check_slot(demo *d, const char *phase, uint64_t iter, size_t slot)
{
	const uint8_t *got = d->dst + slot * d->o.size;
	uint32_t i;

	if (!memcmp(got, d->expect, d->o.size)) {
		d->checked++;
		return 0;
	}
	for (i = 0; i + 1 < d->o.size && got[i] == d->expect[i]; i++)
		;
	fprintf(stderr, "gic-demo: %s: validation failed for write %" PRIu64 ": destination slot "
		"%zu (offset %zu), byte %u is 0x%02x, expected 0x%02x\n", phase, iter, slot,
		slot * d->o.size + i, i, got[i], d->expect[i]);
	return 1;
}

/* ------------------------------------------------------------------ */
/* Setup and teardown. */

static uint32_t next_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Ring and slot geometry: the ring holds >= 4 batches; with more writes
 * than slots, slots >= ring BBs, so a source slot is reused only after the
 * WQE that read it has retired (its reservation waits for that). */
static void plan_geometry(demo *d)
{
	uint32_t bb;
	size_t cap;

	d->wqe_bb = d->o.pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write(d->o.size));
	bb = next_pow2(4 * d->o.batch * d->wqe_bb);
	if (bb < DEMO_MIN_RING_BB)
		bb = DEMO_MIN_RING_BB;
	d->log_sq_bb = __builtin_ctz(bb);
	cap = DEMO_MAX_REGION / d->o.size;
	if (cap < bb)
		cap = bb;
	d->nslots = d->o.warmup + d->o.iters < cap ? d->o.warmup + d->o.iters : cap;
}

/* Opens the softnic, both PEs, their regions and the connected QP pair;
 * 0 or errno (message printed). */
static int demo_open(demo *d)
{
	size_t bytes;
	sp_cfg c = { .who = "gic-demo", .engine_threads = d->o.engine_threads,
		     .strict = d->o.strict, .qps = 1 };

	plan_geometry(d);
	bytes = d->nslots * d->o.size;
	c.log_sq_bb = c.log_cq = d->log_sq_bb;
	c.dst_bytes = c.src_bytes = bytes;
	d->expect = calloc(1, d->o.size);
	d->scratch = calloc(1, d->o.size);
	if (!d->expect || !d->scratch) {
		fprintf(stderr, "gic-demo: out of memory for %u-byte patterns\n", d->o.size);
		return ENOMEM;
	}
	if (!(d->p = sp_open(&c)))
		return errno;
	d->src = d->p->src;
	d->dst = d->p->dst;
	d->sq = &d->p->q[0].sq;
	return 0;
}

/* Frees what demo_open() created. */
static void demo_close(demo *d)
{
	sp_close(d->p);
	free(d->expect);
	free(d->scratch);
	gic_samples_free(&d->lat);
}

/* ------------------------------------------------------------------ */
/* Posting. */

/* Says why a wait or a reservation failed, with softnic's own account. */
static void report_failure(demo *d, const char *phase, uint64_t iter, int rc)
{
	char what[96];

	snprintf(what, sizeof(what), "%s: write %" PRIu64, phase, iter);
	sp_fail(d->p, 0, what, rc);
}

/* Builds the write of `payload` to destination slot `slot` at BB position
 * pos; fm_ce_se GIC_CTRL_CQ_UPDATE makes it signaled. In pointer mode the
 * payload must be the slot's source bytes. */
static void build_write(demo *d, uint64_t pos, size_t slot, const uint8_t *payload,
			uint8_t fm_ce_se)
{
	uint64_t raddr = (uint64_t)(uintptr_t)(d->dst + slot * d->o.size);
	uint32_t rkey = d->p->dst_rkey;

	if (d->o.pointer)
		gic_wqe_write(d->sq, pos, GIC_OPCODE_RDMA_WRITE, raddr, rkey,
			      (uint64_t)(uintptr_t)payload, d->p->src_lkey, d->o.size,
			      fm_ce_se, 0);
	else
		gic_wqe_write_inline(d->sq, pos, raddr, rkey, payload, d->o.size, fm_ce_se);
	if (fm_ce_se & GIC_CTRL_CQ_UPDATE)
		gic_sq_note_signaled(d->sq, pos + d->wqe_bb, 0);
}

/* The buffer the write to `slot` takes its payload from: the source slot in
 * pointer mode, the scratch buffer inline. */
static uint8_t *payload_of(demo *d, size_t slot)
{
	return d->o.pointer ? d->src + slot * d->o.size : d->scratch;
}

/* Posts one signaled write and waits for its completion; returns 0 or the
 * errno of the failed step, with the elapsed nanoseconds in *ns. */
static int write_and_wait(demo *d, size_t slot, const uint8_t *payload, uint64_t *ns)
{
	uint64_t t0 = gic_now_ns(), deadline = t0 + DEMO_DEADLINE_NS, pos;
	int rc = gic_sq_reserve_excl(d->sq, d->wqe_bb, &pos, DEMO_ORDER, deadline);

	if (rc)
		return rc;
	build_write(d, pos, slot, payload, GIC_CTRL_CQ_UPDATE);
	gic_sq_publish_excl(d->sq, DEMO_ORDER);
	rc = gic_sq_wait_retired(d->sq, pos + d->wqe_bb, 0, DEMO_ORDER, deadline);
	*ns = gic_now_ns() - t0;
	return rc;
}

/* (a) latency: warmup + iters writes, one at a time, each checked. */
static int run_latency(demo *d)
{
	uint64_t total = d->o.warmup + d->o.iters;

	for (uint64_t i = 0; i < total; i++) {
		size_t slot = (size_t)(i % d->nslots);
		uint8_t *payload = payload_of(d, slot);
		uint64_t ns = 0;
		int rc;

		pattern_fill(d->expect, d->o.size, PHASE_LATENCY, i);
		memcpy(payload, d->expect, d->o.size);
		gic_poison(d->dst + slot * d->o.size, d->expect, d->o.size);
		rc = write_and_wait(d, slot, payload, &ns);
		if (rc) {
			report_failure(d, "latency", i, rc);
			return rc;
		}
		if (check_slot(d, "latency", i, slot))
			return EIO;
		if (gic_samples_add(&d->lat, (double)ns / 1000.0))
			return ENOMEM;
	}
	return 0;
}

/* The last write of the rate run that lands in slot s (s < iters). */
static uint64_t last_write_of_slot(const demo *d, size_t s)
{
	return s + (d->o.iters - 1 - s) / d->nslots * d->nslots;
}

/* Posts writes [first, first + n) of the rate run with one doorbell; the
 * last is signaled. Each reservation waits for ring space. */
static int post_batch(demo *d, uint64_t first, uint32_t n)
{
	uint64_t deadline = gic_now_ns() + DEMO_DEADLINE_NS;

	for (uint32_t j = 0; j < n; j++) {
		uint64_t pos, iter = first + j;
		size_t slot = (size_t)(iter % d->nslots);
		uint8_t *payload;
		int rc = gic_sq_reserve_excl(d->sq, d->wqe_bb, &pos, DEMO_ORDER, deadline);

		if (rc) {
			report_failure(d, "rate", iter, rc);
			return rc;
		}
		/* The slot's previous write retired before this reservation. */
		payload = payload_of(d, slot);
		pattern_fill(payload, d->o.size, PHASE_RATE, iter);
		build_write(d, pos, slot, payload, j + 1 == n ? GIC_CTRL_CQ_UPDATE : 0);
	}
	gic_sq_publish_excl(d->sq, DEMO_ORDER);
	return 0;
}

/* (b) rate: iters writes in batches, then every written slot is checked. */
static int run_rate(demo *d)
{
	size_t used = d->o.iters < d->nslots ? (size_t)d->o.iters : d->nslots;
	uint64_t t0;
	int rc = 0;

	for (size_t s = 0; s < used; s++) {
		pattern_fill(d->expect, d->o.size, PHASE_RATE, last_write_of_slot(d, s));
		gic_poison(d->dst + s * d->o.size, d->expect, d->o.size);
	}
	t0 = gic_now_ns();
	for (uint64_t i = 0; i < d->o.iters && !rc; i += d->o.batch) {
		uint64_t left = d->o.iters - i;

		rc = post_batch(d, i, left < d->o.batch ? (uint32_t)left : d->o.batch);
	}
	if (!rc && (rc = gic_sq_quiet(d->sq, DEMO_ORDER, gic_now_ns() + DEMO_DEADLINE_NS)))
		report_failure(d, "rate (final wait)", d->o.iters - 1, rc);
	d->rate_ns = gic_now_ns() - t0;
	for (size_t s = 0; s < used && !rc; s++) {
		uint64_t iter = last_write_of_slot(d, s);

		pattern_fill(d->expect, d->o.size, PHASE_RATE, iter);
		if (check_slot(d, "rate", iter, s))
			rc = EIO;
	}
	return rc;
}

/* The submitter thread: PE0's only poster. */
static void *submitter_main(void *arg)
{
	demo *d = arg;

	if (run_latency(d) || run_rate(d))
		d->failed = 1;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Reporting. */

static void print_header(const demo *d)
{
	char cpu[512];

	printf("gic-demo: softnic CPU engine, %d engine thread%s, strict %s; PE0 QP 0x%x -> "
	       "PE1 QP 0x%x (RC)\n", d->o.engine_threads, d->o.engine_threads == 1 ? "" : "s",
	       d->o.strict ? "on" : "off", softnic_qp_num(d->p->q[0].qp),
	       softnic_qp_num(d->p->q[0].peer));
	printf("  RDMA write %u B %s, order RELEASE_SYS, ring %u BB, %zu slots, iters %" PRIu64
	       ", warmup %" PRIu64 ", batch %u\n", d->o.size, d->o.pointer ? "pointer" : "inline",
	       1u << d->log_sq_bb, d->nslots, d->o.iters, d->o.warmup, d->o.batch);
	gic_cpu_state_line(cpu, sizeof(cpu));
	printf("%s\n", cpu);
	fflush(stdout);
}

static double rate_mmsg(const demo *d)
{
	return d->rate_ns ? (double)d->o.iters * 1e3 / (double)d->rate_ns : 0.0;
}

static void print_results(const demo *d, const gic_summary *lat)
{
	softnic_stats st;

	gic_summary_print(stdout, "latency", lat, "us");
	printf("rate: %" PRIu64 " writes of %u B in %.3f ms = %.3f M msg/s (%.1f MB/s), batch %u\n",
	       d->o.iters, d->o.size, (double)d->rate_ns / 1e6, rate_mmsg(d),
	       rate_mmsg(d) * d->o.size, d->o.batch);
	softnic_get_stats(d->p->nic, &st);
	printf("softnic: %" PRIu64 " WQEs executed, %" PRIu64 " CQEs, %" PRIu64 " error CQEs, %"
	       PRIu64 " CQ-full stalls\n", st.wqes_executed, st.cqes_written, st.error_cqes,
	       st.cq_full_stalls);
	printf("validation: %s (%" PRIu64 " payloads checked)\n", d->failed ? "FAILED" : "passed",
	       d->checked);
}

/* Writes the configuration and results to f (opened by main); 0 or EIO. */
static int write_json(const demo *d, const gic_summary *lat, FILE *f)
{
	char cpu[512];

	gic_cpu_state_line(cpu, sizeof(cpu));
	fprintf(f, "{\"program\": \"gic-demo\", \"config\": {\"engine_threads\": %d, \"strict\": %d, "
		"\"mode\": \"%s\", \"size\": %u, \"batch\": %u, \"iters\": %" PRIu64 ", \"warmup\": %"
		PRIu64 ", \"order\": \"RELEASE_SYS\", \"ring_bb\": %u, \"slots\": %zu},\n \"cpu\": ",
		d->o.engine_threads, d->o.strict, d->o.pointer ? "pointer" : "inline", d->o.size,
		d->o.batch, d->o.iters, d->o.warmup, 1u << d->log_sq_bb, d->nslots);
	gic_json_string(f, cpu);
	fputs(",\n \"latency\": ", f);
	gic_summary_write_json(f, "latency", lat, "us");
	fprintf(f, ",\n \"rate\": {\"writes\": %" PRIu64 ", \"seconds\": %.6f, \"mmsg_per_s\": %.3f},"
		"\n \"checked\": %" PRIu64 ", \"validation\": \"%s\"}\n", d->o.iters,
		(double)d->rate_ns / 1e9, rate_mmsg(d), d->checked, d->failed ? "failed" : "passed");
	fflush(f);
	return ferror(f) ? EIO : 0;
}

/* Runs the submitter thread to the end and reports (JSON too when json
 * is not NULL); 0 when every check passed and the report was written. */
static int run(demo *d, FILE *json)
{
	pthread_t t;
	gic_summary lat;
	int rc = pthread_create(&t, NULL, submitter_main, d);

	if (rc) {
		fprintf(stderr, "gic-demo: pthread_create: %s\n", strerror(rc));
		return 1;
	}
	pthread_join(t, NULL);
	if (d->failed) {
		printf("validation: FAILED\n");
		return 1;
	}
	gic_summarize(&d->lat, d->o.warmup, &lat);
	print_results(d, &lat);
	if (json && (rc = write_json(d, &lat, json))) {
		fprintf(stderr, "gic-demo: --json %s: %s\n", d->o.json, strerror(rc));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	demo d = { 0 };
	FILE *json = NULL;
	int rc = parse_opts(&d.o, argc, argv);

	if (rc)
		return 2;
	if (d.o.help) {
		usage(stdout);
		return 0;
	}
	if (d.o.json && !(json = fopen(d.o.json, "w"))) {
		fprintf(stderr, "gic-demo: --json: cannot write '%s': %s\n", d.o.json,
			strerror(errno));
		return 2;
	}
	if (gic_samples_init(&d.lat, d.o.warmup + d.o.iters)) {
		fprintf(stderr, "gic-demo: out of memory for %" PRIu64 " samples\n",
			d.o.warmup + d.o.iters);
		rc = 1;
	} else if (demo_open(&d)) {
		rc = 1;
	} else {
		print_header(&d);
		rc = run(&d, json);
	}
	demo_close(&d);
	if (json && fclose(json) && !rc) {
		fprintf(stderr, "gic-demo: --json %s: %s\n", d.o.json, strerror(errno));
		rc = 1;
	}
	return rc;
}
