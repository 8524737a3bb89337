/*
 * mini-proxy host tests: host threads are the producers, softnic's CPU
 * engine is the NIC. Run `test_proxy NAME` for one case (ctest registers
 * each), or with no argument for all.
 *
 * Every request writes a distinct nonzero value (value_of(id)) to a
 * distinct 8-byte slot of the destination (slot id), so a payload check
 * sees any lost, duplicated, misplaced or overwritten request; the
 * destination has guard zones outside its registration that must stay
 * untouched.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gic/proxy.h"
#include "testkit.h"

enum {
	GUARD = 4096,
	DST_LEN = 1 << 20,           /* 131072 8-byte slots */
	DST_SLOTS = DST_LEN / 8,
	SRC_LEN = 1 << 16,
	MAX_COUNTERS = 64,
	MAX_PRODUCERS = 16,
};

static const uint64_t SEC = 1000000000ull;
static const uint64_t MS = 1000000ull;
static const uint64_t LONG_WAIT = 10 * 1000000000ull; /* for waits that must succeed */

static uint64_t value_of(uint64_t id)
{
	return (id + 1) * 0x9e3779b97f4a7c15ull; /* odd multiplier: distinct, nonzero */
}

static uint64_t after(uint64_t ns)
{
	return gic_now_ns() + ns;
}

/* ------------------------------------------------------------------ */
/* Fixture: a softnic, the producers' PD (source, counters) and the target
 * PD (destination), and a proxy between them. */

typedef struct fx_cfg {
	int workers, rings, batch, protocol, counter_kind, log_slots;
	int first_cpu;     /* default -1 (set by fx_default) */
	int warmup_ms;
	uint32_t counters; /* default MAX_COUNTERS */
	uint32_t counter_rkey_xor; /* nonzero: a wrong counter rkey */
	int no_start;
	int inflight, signal_every, log_sq_bb, idle_ms; /* 0: the proxy's defaults */
	int manual_engine; /* 1: no engine threads; the test calls softnic_progress() */
} fx_cfg;

typedef struct fx {
	softnic *nic;
	softnic_pd *local_pd, *target_pd;
	gic_nic *local, *target; /* provider PEs over the two PDs (the proxy's view) */
	uint8_t *dst_alloc, *dst, *src;
	uint64_t *counters;
	softnic_mr *dst_mr, *src_mr, *ctr_mr;
	gic_proxy *proxy;
	gic_proxy_ring views[GIC_PROXY_MAX_RINGS];
} fx;

static fx_cfg fx_default(int workers, int rings, int batch, int protocol)
{
	fx_cfg c = { .workers = workers, .rings = rings, .batch = batch, .protocol = protocol,
		     .log_slots = 4, .first_cpu = -1, .counters = MAX_COUNTERS };
	return c;
}

static int fx_regions(fx *f)
{
	f->dst_alloc = malloc(DST_LEN + 2 * GUARD);
	f->src = malloc(SRC_LEN);
	f->counters = aligned_alloc(64, MAX_COUNTERS * sizeof(uint64_t));
	if (!f->dst_alloc || !f->src || !f->counters)
		return 0;
	memset(f->dst_alloc, 0xa5, DST_LEN + 2 * GUARD);
	f->dst = f->dst_alloc + GUARD;
	memset(f->dst, 0, DST_LEN);
	for (uint32_t i = 0; i < SRC_LEN; i++)
		f->src[i] = (uint8_t)(i * 7 + 1);
	memset(f->counters, 0, MAX_COUNTERS * sizeof(uint64_t));
	f->dst_mr = softnic_reg_mr(f->target_pd, f->dst, DST_LEN, SOFTNIC_ACCESS_REMOTE_WRITE);
	f->src_mr = softnic_reg_mr(f->local_pd, f->src, SRC_LEN, SOFTNIC_ACCESS_LOCAL_WRITE);
	f->ctr_mr = softnic_reg_mr(f->local_pd, f->counters, MAX_COUNTERS * sizeof(uint64_t),
				   SOFTNIC_ACCESS_REMOTE_ATOMIC | SOFTNIC_ACCESS_LOCAL_WRITE);
	return f->dst_mr && f->src_mr && f->ctr_mr;
}

static gic_proxy_attr fx_attr(const fx *f, const fx_cfg *c)
{
	gic_proxy_attr a = {
		.local = f->local, .target = f->target,
		.workers = c->workers, .rings = c->rings, .batch = c->batch,
		.protocol = c->protocol, .counter_kind = c->counter_kind,
		.log_ring_slots = c->log_slots, .first_cpu = c->first_cpu,
		.warmup_ms = c->warmup_ms, .idle_ms = c->idle_ms, .inflight = c->inflight,
		.signal_every = c->signal_every, .log_sq_bb = c->log_sq_bb,
		.idle_sleep_ns = 1000, /* this machine's cores are shared (2 cores, CI) */
		.dst_addr = (uint64_t)(uintptr_t)f->dst, .dst_rkey = softnic_mr_rkey(f->dst_mr),
		.src_addr = (uint64_t)(uintptr_t)f->src, .src_lkey = softnic_mr_lkey(f->src_mr),
		.counters = f->counters, .counter_cnt = c->counters,
		.counter_rkey = softnic_mr_rkey(f->ctr_mr) ^ c->counter_rkey_xor,
	};
	return a;
}

static void fx_close(fx *f)
{
	gic_proxy_destroy(f->proxy);
	gic_nic_close(f->target);
	gic_nic_close(f->local);
	if (f->nic)
		softnic_close(f->nic); /* frees the PDs and MRs */
	free(f->dst_alloc);
	free(f->src);
	free(f->counters);
	free(f);
}

/* Builds the fixture and the proxy (started unless no_start); NULL on
 * failure, with a message. */
static fx *fx_open(const fx_cfg *c)
{
	softnic_attr na = { .engine_threads = c->manual_engine ? 0 : 1 };
	fx *f = calloc(1, sizeof(*f));
	gic_proxy_attr a;

	if (!f)
		return NULL;
	f->nic = softnic_open(&na);
	f->local_pd = f->nic ? softnic_pd_alloc(f->nic) : NULL;
	f->target_pd = f->nic ? softnic_pd_alloc(f->nic) : NULL;
	f->local = f->local_pd ? gic_softnic_pe_wrap(f->nic, f->local_pd, NULL) : NULL;
	f->target = f->local && f->target_pd ? gic_softnic_pe_wrap(f->nic, f->target_pd, f->local)
					     : NULL;
	if (!f->target || !fx_regions(f)) {
		fprintf(stderr, "fixture: %s\n", f->nic ? softnic_last_error(f->nic) : "no softnic");
		fx_close(f);
		return NULL;
	}
	a = fx_attr(f, c);
	f->proxy = gic_proxy_create(&a);
	for (int r = 0; f->proxy && r < c->rings; r++)
		gic_proxy_ring_view(f->proxy, r, &f->views[r]);
	if (!f->proxy || (!c->no_start && gic_proxy_start(f->proxy))) {
		fprintf(stderr, "fixture: proxy: %s / %s\n", strerror(errno),
			f->proxy ? gic_proxy_error(f->proxy) : "");
		fx_close(f);
		return NULL;
	}
	return f;
}

static int guards_intact(const fx *f)
{
	for (size_t i = 0; i < GUARD; i++) {
		if (f->dst_alloc[i] != 0xa5 || f->dst[DST_LEN + i] != 0xa5)
			return 0;
	}
	return 1;
}

static uint64_t dst_word(const fx *f, uint64_t slot)
{
	uint64_t v;

	memcpy(&v, f->dst + slot * 8, 8);
	return v;
}

/* Number of requests among ids first, first + stride, ... (n of them)
 * whose slot does not hold its value; prints the first. */
static uint64_t bad_payloads(const fx *f, uint64_t first, uint64_t stride, uint64_t n)
{
	uint64_t bad = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t id = first + i * stride, got = dst_word(f, id);

		if (got != value_of(id) && bad++ == 0)
			fprintf(stderr, "request %llu: slot holds 0x%llx, want 0x%llx\n",
				(unsigned long long)id, (unsigned long long)got,
				(unsigned long long)value_of(id));
	}
	return bad;
}

/* 1 when slots first .. first + n - 1 still hold zero (never written). */
static int untouched(const fx *f, uint64_t first, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		if (dst_word(f, first + i) != 0) {
			fprintf(stderr, "slot %llu written: 0x%llx\n", (unsigned long long)(first + i),
				(unsigned long long)dst_word(f, first + i));
			return 0;
		}
	}
	return 1;
}

/* Enqueues request id: an 8-byte inline write of value_of(id) to slot id. */
static int enqueue_id(gic_proxy_ring *ring, uint64_t id, uint32_t counter, uint64_t deadline,
		      uint64_t *pos)
{
	gic_proxy_desc d;
	int rc = gic_proxy_desc_inline(&d, id * 8, value_of(id), 8, counter);

	return rc ? rc : gic_proxy_enqueue(ring, &d, deadline, pos);
}

/* ------------------------------------------------------------------ */
/* Producer threads. */

typedef struct producer {
	pthread_t thread;
	gic_proxy_ring *ring;  /* shared by several producers in baseline runs */
	uint64_t first_id, stride, count;
	uint32_t counter;
	uint64_t timeout_ns;   /* per enqueue */
	int rc;                /* first failure */
	uint64_t done;         /* enqueued (atomic) */
} producer;

static void *producer_main(void *arg)
{
	producer *pr = arg;

	for (uint64_t i = 0; i < pr->count; i++) {
		pr->rc = enqueue_id(pr->ring, pr->first_id + i * pr->stride, pr->counter,
				    after(pr->timeout_ns), NULL);
		if (pr->rc)
			break;
		/* Relaxed: the main thread watches the count while we run. */
		__atomic_store_n(&pr->done, i + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static int start_producers(producer *prs, int n)
{
	for (int i = 0; i < n; i++) {
		if (!prs[i].timeout_ns)
			prs[i].timeout_ns = LONG_WAIT;
		if (pthread_create(&prs[i].thread, NULL, producer_main, &prs[i]))
			return 0;
	}
	return 1;
}

static void join_producers(producer *prs, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(prs[i].thread, NULL);
}

/* Waits until counter c reaches want; 0, EIO or ETIMEDOUT. */
static int wait_counter(fx *f, int ring, uint32_t c, uint64_t want, uint64_t timeout_ns)
{
	return gic_proxy_wait_counter(ring >= 0 ? &f->views[ring] : NULL, &f->counters[c], want,
				      after(timeout_ns));
}

static uint64_t counter_value(const fx *f, uint32_t c)
{
	return __atomic_load_n(&f->counters[c], __ATOMIC_ACQUIRE);
}

static uint64_t ring_consumed(const fx *f, int r)
{
	return __atomic_load_n(&f->views[r].ctl->consumed, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------ */
/* The descriptor. */

CASE(desc_layout)
{
	gic_proxy_desc d;
	uint8_t bytes[16];
	uint64_t h;

	REQUIRE(gic_proxy_desc_inline(&d, 0x12345678, 0x1122334455667788ull, 8, 0xab) == 0, "inline");
	h = d.header;
	CHECK(gic_proxy_desc_dst_offset(h) == 0x12345678, "dst_offset 0x%x", gic_proxy_desc_dst_offset(h));
	CHECK(gic_proxy_desc_length(h) == 8, "length %u", gic_proxy_desc_length(h));
	CHECK(gic_proxy_desc_counter(h) == 0xab, "counter %u", gic_proxy_desc_counter(h));
	CHECK(gic_proxy_desc_op(h) == GIC_PROXY_OP_INLINE, "op");
	CHECK(gic_proxy_desc_phase(h) == 0, "builders leave the phase to the enqueue");
	CHECK(d.payload == 0x1122334455667788ull, "payload");
	/* Bytes as a 16-byte store writes them: header first, little-endian. */
	memcpy(bytes, &d, 16);
	CHECK(bytes[0] == 0x78 && bytes[3] == 0x12, "dst_offset in bytes 0..3");
	CHECK(bytes[8] == 0x88 && bytes[15] == 0x11, "payload in bytes 8..15");
	h = gic_proxy_header_with_phase(h, 1);
	CHECK(gic_proxy_desc_phase(h) == 1 && bytes[7] == (uint8_t)(0xab >> 2) &&
	      (h >> 56) == (0x80u | (0xabu >> 2)), "phase is bit 63, counter bits 54..61");
	CHECK(gic_proxy_desc_dst_offset(h) == 0x12345678 && gic_proxy_desc_counter(h) == 0xab,
	      "the phase leaves the other fields alone");

	REQUIRE(gic_proxy_desc_pointer(&d, 0xffffffffull, 0xdeadbeefcafeull,
				       GIC_PROXY_DESC_MAX_LENGTH, 255) == 0, "pointer at the limits");
	h = d.header;
	CHECK(gic_proxy_desc_op(h) == GIC_PROXY_OP_POINTER && gic_proxy_desc_counter(h) == 255 &&
	      gic_proxy_desc_length(h) == GIC_PROXY_DESC_MAX_LENGTH &&
	      gic_proxy_desc_dst_offset(h) == 0xffffffffu && d.payload == 0xdeadbeefcafeull,
	      "pointer fields at their limits");
	CHECK(gic_proxy_desc_inline(&d, 1ull << 32, 0, 8, 0) == EINVAL, "dst_offset too large");
	CHECK(gic_proxy_desc_inline(&d, 0, 0, 9, 0) == EINVAL, "inline of 9 bytes");
	CHECK(gic_proxy_desc_inline(&d, 0, 0, 8, 256) == EINVAL, "counter 256");
	CHECK(gic_proxy_desc_pointer(&d, 0, 0, GIC_PROXY_DESC_MAX_LENGTH + 1, 0) == EINVAL,
	      "pointer length too large");

	/* Pass 0 writes phase 1 (zeroed memory is invalid), then alternates. */
	CHECK(gic_proxy_phase(0, 3) == 1 && gic_proxy_phase(7, 3) == 1, "pass 0");
	CHECK(gic_proxy_phase(8, 3) == 0 && gic_proxy_phase(15, 3) == 0, "pass 1");
	CHECK(gic_proxy_phase(16, 3) == 1 && gic_proxy_phase((1ull << 40) + 8, 3) == 0, "pass 2, far");
}

/* ------------------------------------------------------------------ */
/* The API's contract. */

static int create_fails_einval(fx *f, const fx_cfg *c, const char *what)
{
	gic_proxy_attr a = fx_attr(f, c);
	gic_proxy *p;

	errno = 0;
	p = gic_proxy_create(&a);
	if (p) {
		gic_proxy_destroy(p);
		fprintf(stderr, "%s: created\n", what);
		return 0;
	}
	if (errno != EINVAL)
		fprintf(stderr, "%s: errno %d\n", what, errno);
	return errno == EINVAL;
}

CASE(attr_checks)
{
	fx_cfg c = fx_default(1, 1, 1, GIC_PROXY_TUNED);
	gic_proxy_attr a;
	fx *f;

	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
#define BAD(field, v)                                                          \
	do {                                                                   \
		fx_cfg b = c;                                                  \
		b.field = v;                                                   \
		CHECK(create_fails_einval(f, &b, #field " = " #v), #field " = " #v); \
	} while (0)
	BAD(workers, 0);
	BAD(workers, 17);
	BAD(rings, 0);
	BAD(rings, 33);
	BAD(batch, 0);
	BAD(batch, 17);
	BAD(protocol, 2);
	BAD(counter_kind, 2);
	BAD(log_slots, 17);
	BAD(first_cpu, -2);
	BAD(warmup_ms, -1);
	BAD(counters, 0);
	BAD(counters, 257);
	BAD(inflight, -1);
	BAD(inflight, 33);
	BAD(signal_every, -1);
	BAD(signal_every, 9); /* above the default K = 8 */
	BAD(log_sq_bb, -1);
	BAD(log_sq_bb, 15);
	BAD(idle_ms, -1);
	BAD(idle_ms, 600001);
#undef BAD
	c.batch = 16;
	c.log_sq_bb = 3;
	CHECK(create_fails_einval(f, &c, "send queue smaller than a chain"), "log_sq_bb 3, B 16");
	c.log_sq_bb = 4;
	c.inflight = 2;
	c.signal_every = 2;
	{
		gic_proxy_attr ok = fx_attr(f, &c);
		gic_proxy *p = gic_proxy_create(&ok);

		CHECK(p, "K 2, S 2, log_sq_bb 4, B 16: %s", p ? "" : strerror(errno));
		gic_proxy_destroy(p);
	}
	c.batch = 1;
	c.log_sq_bb = 0;
	c.inflight = c.signal_every = 0;
	c.workers = 4;
	c.rings = 3;
	CHECK(create_fails_einval(f, &c, "fewer rings than workers"), "rings < workers");
	c.workers = c.rings = 1;
	a = fx_attr(f, &c);
	a.target = NULL;
	errno = 0;
	CHECK(!gic_proxy_create(&a) && errno == EINVAL, "no target PE");
	errno = 0;
	CHECK(!gic_proxy_create(NULL) && errno == EINVAL, "NULL attr");
	fx_close(f);
}

CASE(lifecycle)
{
	fx_cfg c = fx_default(1, 1, 1, GIC_PROXY_TUNED);
	gic_proxy_failure fl;
	gic_proxy_ring view;
	gic_proxy_stats st;
	fx *f;

	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	CHECK(gic_proxy_ring_view(f->proxy, -1, &view) == EINVAL, "ring -1");
	CHECK(gic_proxy_ring_view(f->proxy, 1, &view) == EINVAL, "ring R");
	CHECK(gic_proxy_get_stats(f->proxy, 1, &st) == EINVAL, "stats of worker T");
	CHECK(gic_proxy_worker_cpu(f->proxy, 0) == -1, "no core before start");
	CHECK(strcmp(gic_proxy_error(f->proxy), "") == 0, "no error yet");
	CHECK(gic_proxy_error_info(f->proxy, &fl) == ENOENT, "no error info yet");
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop before start");
	CHECK(gic_proxy_start(f->proxy) == 0, "start: %s", gic_proxy_error(f->proxy));
	CHECK(gic_proxy_start(f->proxy) == EALREADY, "start twice");
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop");
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop twice");
	CHECK(gic_proxy_start(f->proxy) == EALREADY, "start after stop");
	gic_proxy_destroy(NULL);
	fx_close(f);
}

/* ------------------------------------------------------------------ */
/* A target of another process (attr.target_remote): the workers' QPs are
 * made on the local PE only and connected through records to QPs that
 * "the target's process" made (here the target PE, through the provider
 * interface only, as a second process would). */

CASE(target_remote)
{
	fx_cfg c = fx_default(2, 2, 4, GIC_PROXY_TUNED);
	gic_nic_cq *cq[2] = { 0 };
	gic_nic_qp *qp[2] = { 0 };
	gic_conn_info mine, theirs;
	gic_proxy_attr a;
	gic_proxy *p;
	fx *f;

	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	CHECK(gic_proxy_qp_local(f->proxy, 0, &mine) == EINVAL, "records of a target here");
	a = fx_attr(f, &c);
	a.target_remote = 1;
	errno = 0;
	CHECK(!gic_proxy_create(&a) && errno == EINVAL, "target_remote with a target");
	a.target = NULL;
	p = gic_proxy_create(&a);
	REQUIRE(p, "create: %s", gic_proxy_create_error());
	for (int r = 0; r < c.rings; r++)
		gic_proxy_ring_view(p, r, &f->views[r]);
	CHECK(gic_proxy_start(p) == ENOTCONN, "start before the workers' QPs are connected");
	CHECK(gic_proxy_qp_local(p, 2, &mine) == EINVAL, "worker T");
	for (int w = 0; w < 2; w++) {
		gic_qp_attr qa = { .log_sq_bb = 6, .type = GIC_QP_RC };

		cq[w] = gic_nic_cq_create(f->target, 6);
		qa.send_cq = cq[w];
		qp[w] = cq[w] ? gic_nic_qp_create(f->target, &qa) : NULL;
		REQUIRE(qp[w], "the target's QP %d", w);
		CHECK(gic_proxy_qp_local(p, w, &mine) == 0, "worker %d's record", w);
		CHECK(gic_nic_qp_local(qp[w], &theirs) == 0, "the target's record %d", w);
		CHECK(gic_nic_qp_connect(qp[w], &theirs, &mine) == 0, "the target's end %d", w);
		CHECK(gic_proxy_qp_connect(p, w, &theirs) == 0, "worker %d: %s", w,
		      gic_proxy_error(p));
	}
	CHECK(gic_proxy_qp_connect(p, 0, &theirs) == EALREADY, "connect twice");
	CHECK(gic_proxy_start(p) == 0, "start: %s", gic_proxy_error(p));
	for (uint64_t id = 0; id < 64; id++)
		CHECK(enqueue_id(&f->views[id % 2], id, (uint32_t)(id % 2), after(LONG_WAIT), NULL) ==
		      0, "request %llu", (unsigned long long)id);
	for (uint32_t r = 0; r < 2; r++)
		CHECK(wait_counter(f, (int)r, r, 32, LONG_WAIT) == 0, "ring %u: %s", r,
		      gic_proxy_error(p));
	CHECK(bad_payloads(f, 0, 1, 64) == 0, "payloads");
	CHECK(untouched(f, 64, 64), "nothing past the last request");
	CHECK(guards_intact(f), "guard zones");
	gic_proxy_destroy(p);
	for (int w = 0; w < 2; w++) {
		gic_nic_qp_destroy(qp[w]);
		gic_nic_cq_destroy(cq[w]);
	}
	fx_close(f);
}

/* ------------------------------------------------------------------ */
/* Wraparound: tiny rings, thousands of passes. */

static void run_wrap(int protocol, int producers, uint64_t per_producer)
{
	fx_cfg c = fx_default(1, 1, 4, protocol);
	producer prs[MAX_PRODUCERS] = { 0 };
	uint64_t total = per_producer * (uint64_t)producers, passes;
	fx *f;

	c.log_slots = 2; /* 4 slots */
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	for (int i = 0; i < producers; i++) {
		prs[i].ring = &f->views[0];
		prs[i].first_id = (uint64_t)i;
		prs[i].stride = (uint64_t)producers;
		prs[i].count = per_producer;
		prs[i].counter = 0;
	}
	REQUIRE(start_producers(prs, producers), "producer threads");
	join_producers(prs, producers);
	for (int i = 0; i < producers; i++)
		CHECK(prs[i].rc == 0 && prs[i].done == per_producer,
		      "producer %d: rc %d after %llu: %s", i, prs[i].rc,
		      (unsigned long long)prs[i].done, gic_proxy_error(f->proxy));
	CHECK(wait_counter(f, 0, 0, total, LONG_WAIT) == 0, "counter %llu of %llu: %s",
	      (unsigned long long)counter_value(f, 0), (unsigned long long)total,
	      gic_proxy_error(f->proxy));
	CHECK(counter_value(f, 0) == total, "counter %llu, want exactly %llu",
	      (unsigned long long)counter_value(f, 0), (unsigned long long)total);
	CHECK(bad_payloads(f, 0, 1, total) == 0, "payloads");
	CHECK(untouched(f, total, 64), "nothing past the last request");
	passes = ring_consumed(f, 0) / f->views[0].slot_cnt;
	CHECK(passes >= total / 4, "only %llu passes over the ring", (unsigned long long)passes);
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

CASE(wrap_baseline)
{
	run_wrap(GIC_PROXY_BASELINE, 3, 6000); /* three producers share the ring */
}

CASE(wrap_tuned)
{
	run_wrap(GIC_PROXY_TUNED, 1, 16000);
}

/* ------------------------------------------------------------------ */
/* A full ring: back-pressure, never overwrite. */

static void snapshot_slots(const gic_proxy_ring *ring, gic_proxy_desc *out)
{
	for (uint32_t i = 0; i < ring->slot_cnt; i++) {
		out[i].header = __atomic_load_n(&ring->slots[i].header, __ATOMIC_ACQUIRE);
		out[i].payload = __atomic_load_n(&ring->slots[i].payload, __ATOMIC_RELAXED);
	}
}

static int slots_unchanged(const gic_proxy_ring *ring, const gic_proxy_desc *before)
{
	gic_proxy_desc now[256];

	snapshot_slots(ring, now);
	return memcmp(now, before, ring->slot_cnt * sizeof(gic_proxy_desc)) == 0;
}

/* Fills the 8 free slots of a ring with ids first..first+7. */
static int fill_ring(gic_proxy_ring *ring, uint64_t first)
{
	for (uint64_t i = 0; i < 8; i++) {
		if (enqueue_id(ring, first + i, 0, after(LONG_WAIT), NULL))
			return 0;
	}
	return 1;
}

/* One more enqueue into a full ring must time out, overwriting nothing. */
static void expect_full(gic_proxy_ring *ring, uint64_t id)
{
	gic_proxy_desc before[256];
	uint64_t t0 = gic_now_ns(), head = ring->head, waited;
	int rc;

	snapshot_slots(ring, before);
	rc = enqueue_id(ring, id, 0, after(100 * MS), NULL);
	waited = gic_now_ns() - t0;
	CHECK(rc == ETIMEDOUT, "enqueue into a full ring: rc %d", rc);
	CHECK(waited >= 100 * MS && waited < 100 * MS + 5 * SEC, "waited %llu ms",
	      (unsigned long long)(waited / MS));
	CHECK(slots_unchanged(ring, before), "a full ring was overwritten");
	/* tuned: a failed enqueue leaves the ring as it was; baseline: its
	 * reservation is spent (a hole, documented). */
	CHECK(ring->head == head + (ring->protocol == GIC_PROXY_BASELINE),
	      "head %llu after a failed enqueue at %llu", (unsigned long long)ring->head,
	      (unsigned long long)head);
}

static void run_full_ring(int protocol)
{
	fx_cfg c = fx_default(1, 1, 4, protocol);
	gic_proxy_desc before[256];
	producer pr = { 0 };
	gic_proxy_ring *ring;
	uint64_t reads0;
	fx *f;

	c.log_slots = 3; /* 8 slots */
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	ring = &f->views[0];
	REQUIRE(fill_ring(ring, 0), "the first 8 enqueues fit");
	if (protocol == GIC_PROXY_TUNED)
		CHECK(ring->progress_reads == 0, "tuned read the progress %llu times with room left",
		      (unsigned long long)ring->progress_reads);
	snapshot_slots(ring, before);

	/* A producer blocks on the full ring until the worker runs. */
	pr.ring = ring;
	pr.first_id = 8;
	pr.stride = 1;
	pr.count = 8;
	REQUIRE(start_producers(&pr, 1), "producer thread");
	usleep(30000);
	CHECK(__atomic_load_n(&pr.done, __ATOMIC_RELAXED) == 0, "enqueued into a full ring");
	CHECK(slots_unchanged(ring, before), "a full ring was overwritten");
	CHECK(gic_proxy_start(f->proxy) == 0, "start");
	join_producers(&pr, 1);
	CHECK(pr.rc == 0 && pr.done == 8, "blocked producer: rc %d, %llu done", pr.rc,
	      (unsigned long long)pr.done);
	CHECK(wait_counter(f, 0, 0, 16, LONG_WAIT) == 0, "counter %llu: %s",
	      (unsigned long long)counter_value(f, 0), gic_proxy_error(f->proxy));
	CHECK(bad_payloads(f, 0, 1, 16) == 0, "payloads");

	/* With the workers stopped, the ring fills and then times out. */
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop");
	reads0 = ring->progress_reads;
	CHECK(fill_ring(ring, 16), "8 enqueues fit after the worker freed the ring");
	if (protocol == GIC_PROXY_TUNED)
		CHECK(ring->progress_reads - reads0 <= 1, "tuned read the progress %llu times for "
		      "8 enqueues", (unsigned long long)(ring->progress_reads - reads0));
	expect_full(ring, 24);
	CHECK(wait_counter(f, 0, 0, 17, 50 * MS) == ETIMEDOUT, "counter wait on stopped workers");
	CHECK(counter_value(f, 0) == 16 && untouched(f, 16, 9), "stopped workers wrote");
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

CASE(full_ring_baseline)
{
	run_full_ring(GIC_PROXY_BASELINE);
}

CASE(full_ring_tuned)
{
	run_full_ring(GIC_PROXY_TUNED);
}

/* ------------------------------------------------------------------ */
/* Several rings and workers. */

enum { RING_IDS = DST_SLOTS / 8 }; /* ids of ring r (of up to 8): r * RING_IDS .. */

/* Producers for every ring (one per ring, or `per_ring` sharing it in
 * baseline runs), n requests per producer, counter r for ring r. */
static int stream_rings(fx *f, int rings, int per_ring, uint64_t n, producer *prs)
{
	int np = 0;

	for (int r = 0; r < rings; r++) {
		for (int k = 0; k < per_ring; k++, np++) {
			memset(&prs[np], 0, sizeof(prs[np]));
			prs[np].ring = &f->views[r];
			prs[np].first_id = (uint64_t)r * RING_IDS + (uint64_t)k;
			prs[np].stride = (uint64_t)per_ring;
			prs[np].count = n;
			prs[np].counter = (uint32_t)r;
		}
	}
	if (!start_producers(prs, np))
		return -1;
	join_producers(prs, np);
	return np;
}

/* Every ring's counter, payloads and progress, and each worker's share. */
static void check_rings(fx *f, const fx_cfg *c, uint64_t per_ring_total)
{
	gic_proxy_stats st;

	for (int r = 0; r < c->rings; r++) {
		REQUIRE(wait_counter(f, r, (uint32_t)r, per_ring_total, LONG_WAIT) == 0,
		      "T%d R%d ring %d: counter %llu of %llu: %s", c->workers, c->rings, r,
		      (unsigned long long)counter_value(f, (uint32_t)r),
		      (unsigned long long)per_ring_total, gic_proxy_error(f->proxy));
		CHECK(bad_payloads(f, (uint64_t)r * RING_IDS, 1, per_ring_total) == 0,
		      "T%d R%d ring %d payloads", c->workers, c->rings, r);
	}
	for (int w = 0; w < c->workers; w++) {
		uint64_t want = 0;

		for (int r = w; r < c->rings; r += c->workers)
			want += per_ring_total;
		REQUIRE(gic_proxy_get_stats(f->proxy, w, &st) == 0, "stats");
		CHECK(st.requests == want, "T%d R%d worker %d served %llu, want %llu (ring r is "
		      "worker r %% T's)", c->workers, c->rings, w, (unsigned long long)st.requests,
		      (unsigned long long)want);
	}
	CHECK(guards_intact(f), "guard zones");
}

static void run_rings_workers(int protocol)
{
	static const int shapes[][2] = { { 1, 1 }, { 1, 8 }, { 2, 2 }, { 2, 5 }, { 3, 7 },
					 { 4, 4 }, { 4, 8 } };
	producer prs[MAX_PRODUCERS];

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		fx_cfg c = fx_default(shapes[i][0], shapes[i][1], 4, protocol);
		int per_ring = protocol == GIC_PROXY_BASELINE && c.rings <= 2 ? 2 : 1;
		uint64_t n = 400 / (uint64_t)per_ring;
		fx *f = fx_open(&c);
		int np;

		REQUIRE(f, "fixture T%d R%d", c.workers, c.rings);
		np = stream_rings(f, c.rings, per_ring, n, prs);
		CHECK(np > 0, "producer threads");
		for (int k = 0; k < np; k++)
			CHECK(prs[k].rc == 0, "T%d R%d producer %d: rc %d: %s", c.workers, c.rings, k,
			      prs[k].rc, gic_proxy_error(f->proxy));
		check_rings(f, &c, n * (uint64_t)per_ring);
		fx_close(f);
	}
}

CASE(rings_workers_baseline)
{
	run_rings_workers(GIC_PROXY_BASELINE);
}

CASE(rings_workers_tuned)
{
	run_rings_workers(GIC_PROXY_TUNED);
}

/* ------------------------------------------------------------------ */
/* Chaining: B descriptors per post. */

/* The engine adds a pass's counts to the NIC's stats after that pass's
 * CQEs are written, so a test that has seen its completions can still read
 * stats a pass behind. Reads them into *s1 until they are at least
 * want_wqes executed WQEs and want_cqes CQEs past *s0, or LONG_WAIT has
 * passed; the caller then checks them exactly. */
static void stats_settled(fx *f, const softnic_stats *s0, uint64_t want_wqes,
			  uint64_t want_cqes, softnic_stats *s1)
{
	uint64_t deadline = after(LONG_WAIT);

	for (;;) {
		softnic_get_stats(f->nic, s1);
		if (s1->wqes_executed - s0->wqes_executed >= want_wqes &&
		    s1->cqes_written - s0->cqes_written >= want_cqes)
			return;
		if (gic_now_ns() > deadline)
			return;
		sched_yield();
	}
}

/* 64 requests queued before the worker starts, 8 in each of 8 rings: a
 * sweep chains across rings, so every chain is exactly B long (B = 16
 * takes two rings), one doorbell and one CQE each. */
static void run_chain_prefilled(int batch)
{
	fx_cfg c = fx_default(1, 8, batch, GIC_PROXY_TUNED);
	softnic_stats s0, s1;
	gic_proxy_stats st;
	fx *f;

	c.log_slots = 3;
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	for (uint64_t i = 0; i < 64; i++)
		REQUIRE(enqueue_id(&f->views[i / 8], i, (uint32_t)(i / 8), after(SEC), NULL) == 0,
			"prefill %llu", (unsigned long long)i);
	softnic_get_stats(f->nic, &s0);
	REQUIRE(gic_proxy_start(f->proxy) == 0, "start");
	for (int r = 0; r < 8; r++)
		REQUIRE(wait_counter(f, r, (uint32_t)r, 8, LONG_WAIT) == 0,
			"B=%d: counter %d: %llu: %s", batch, r,
			(unsigned long long)counter_value(f, (uint32_t)r), gic_proxy_error(f->proxy));
	CHECK(bad_payloads(f, 0, 1, 64) == 0, "B=%d payloads", batch);
	gic_proxy_stop(f->proxy);
	stats_settled(f, &s0, 64, (uint64_t)(64 / batch), &s1);
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(st.requests == 64 && st.chains == (uint64_t)(64 / batch), "B=%d: %llu requests in "
	      "%llu chains", batch, (unsigned long long)st.requests, (unsigned long long)st.chains);
	for (int len = 1; len <= GIC_PROXY_MAX_BATCH; len++)
		CHECK(st.chain_len[len] == (len == batch ? (uint64_t)(64 / batch) : 0),
		      "B=%d: %llu chains of %d", batch, (unsigned long long)st.chain_len[len], len);
	CHECK(s1.wqes_executed - s0.wqes_executed == 64, "B=%d: NIC executed %llu WQEs", batch,
	      (unsigned long long)(s1.wqes_executed - s0.wqes_executed));
	CHECK(s1.cqes_written - s0.cqes_written == (uint64_t)(64 / batch),
	      "B=%d: %llu CQEs: one per chain", batch,
	      (unsigned long long)(s1.cqes_written - s0.cqes_written));
	fx_close(f);
}

/* Streaming producers: no chain longer than B, every request in one. */
static void run_chain_streaming(int batch)
{
	fx_cfg c = fx_default(1, 4, batch, GIC_PROXY_TUNED);
	producer prs[MAX_PRODUCERS];
	gic_proxy_stats st;
	uint64_t in_chains = 0;
	fx *f;

	c.log_slots = 5;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	REQUIRE(stream_rings(f, c.rings, 1, 500, prs) == c.rings, "producers");
	check_rings(f, &c, 500);
	gic_proxy_stop(f->proxy);
	gic_proxy_get_stats(f->proxy, -1, &st);
	for (int len = 0; len <= GIC_PROXY_MAX_BATCH; len++) {
		CHECK(len <= batch || st.chain_len[len] == 0, "B=%d: %llu chains of %d", batch,
		      (unsigned long long)st.chain_len[len], len);
		in_chains += st.chain_len[len] * (uint64_t)len;
	}
	CHECK(st.chain_len[0] == 0, "empty chains posted");
	CHECK(in_chains == 2000 && st.requests == 2000, "B=%d: %llu requests in chains, %llu "
	      "completed", batch, (unsigned long long)in_chains, (unsigned long long)st.requests);
	fx_close(f);
}

CASE(chain_b1)
{
	run_chain_prefilled(1);
	run_chain_streaming(1);
}

CASE(chain_b4)
{
	run_chain_prefilled(4);
	run_chain_streaming(4);
}

CASE(chain_b16)
{
	run_chain_prefilled(16);
	run_chain_streaming(16);
}

/* ------------------------------------------------------------------ */
/* Chains in flight (attr.inflight K, signal_every S). The manual-engine
 * cases drive the NIC with softnic_progress(), so the worker's state at a
 * stall is fixed: K chains posted, or a send queue with no room. */

/* Fills rings 0..rings-1 with n requests each (ids r * RING_IDS + i,
 * counter r). */
static int prefill(fx *f, int rings, uint64_t n)
{
	for (int r = 0; r < rings; r++)
		for (uint64_t i = 0; i < n; i++)
			if (enqueue_id(&f->views[r], (uint64_t)r * RING_IDS + i, (uint32_t)r,
				       after(SEC), NULL))
				return 0;
	return 1;
}

/* Waits until the worker has posted want chains (stats), at most 10 s. */
static int wait_chains(fx *f, uint64_t want)
{
	uint64_t deadline = after(LONG_WAIT);
	gic_proxy_stats st;

	for (;;) {
		gic_proxy_get_stats(f->proxy, -1, &st);
		if (st.chains >= want)
			return 1;
		if (gic_now_ns() > deadline)
			return 0;
		sched_yield();
	}
}

/* Runs the NIC by hand until every ring 0..rings-1's counter reaches n,
 * waiting in reverse ring order (not the order the chains complete);
 * 0 or ETIMEDOUT. */
static int drive_until(fx *f, int rings, uint64_t n)
{
	uint64_t deadline = after(LONG_WAIT);

	for (int r = rings - 1; r >= 0; r--) {
		while (__atomic_load_n(&f->counters[r], __ATOMIC_ACQUIRE) < n) {
			if (gic_now_ns() > deadline)
				return ETIMEDOUT;
			if (!softnic_progress(f->nic))
				sched_yield();
		}
	}
	return 0;
}

/* Checks the counters, every payload and the requests of rings 0..rings-1. */
static void check_exact(fx *f, int rings, uint64_t n, const char *what)
{
	gic_proxy_stats st;
	uint64_t in_chains = 0;

	for (int r = 0; r < rings; r++) {
		CHECK(counter_value(f, (uint32_t)r) == n, "%s: ring %d counter %llu, want %llu", what,
		      r, (unsigned long long)counter_value(f, (uint32_t)r), (unsigned long long)n);
		CHECK(bad_payloads(f, (uint64_t)r * RING_IDS, 1, n) == 0, "%s: ring %d payloads", what,
		      r);
		CHECK(ring_consumed(f, r) == n, "%s: ring %d consumed %llu", what, r,
		      (unsigned long long)ring_consumed(f, r));
	}
	gic_proxy_get_stats(f->proxy, -1, &st);
	for (int len = 0; len <= GIC_PROXY_MAX_BATCH; len++)
		in_chains += st.chain_len[len] * (uint64_t)len;
	CHECK(st.requests == (uint64_t)rings * n && in_chains == st.requests,
	      "%s: %llu requests completed, %llu in chains, want %llu", what,
	      (unsigned long long)st.requests, (unsigned long long)in_chains,
	      (unsigned long long)rings * n);
	CHECK(guards_intact(f), "%s: guard zones", what);
}

/* K = 3: the worker posts three chains and stalls (the rings stay full:
 * another enqueue times out); the NIC runs; everything completes. */
CASE(inflight_bound_stall)
{
	fx_cfg c = fx_default(1, 4, 4, GIC_PROXY_TUNED);
	gic_proxy_stats st;
	fx *f;

	c.manual_engine = 1;
	c.inflight = 3;
	c.log_slots = 4;
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	REQUIRE(prefill(f, 4, 16), "prefill");
	REQUIRE(gic_proxy_start(f->proxy) == 0, "start");
	REQUIRE(wait_chains(f, 3), "three chains posted");
	usleep(50000); /* the worker is at its bound: no fourth chain */
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(st.chains == 3 && st.requests == 0 && st.inflight_max == 3 && st.bound_stalls == 1,
	      "at the bound: %llu chains, %llu requests, %llu in flight, %llu stalls",
	      (unsigned long long)st.chains, (unsigned long long)st.requests,
	      (unsigned long long)st.inflight_max, (unsigned long long)st.bound_stalls);
	CHECK(counter_value(f, 0) == 0 && ring_consumed(f, 0) == 0, "nothing completed yet");
	CHECK(enqueue_id(&f->views[1], 999, 1, after(20 * MS), NULL) == ETIMEDOUT,
	      "ring 1 full while its requests are in flight");
	REQUIRE(drive_until(f, 4, 16) == 0, "resume: %s", gic_proxy_error(f->proxy));
	check_exact(f, 4, 16, "K=3");
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(st.chains == 16 && st.inflight_max == 3 && st.bound_stalls >= 1,
	      "%llu chains, %llu in flight at most", (unsigned long long)st.chains,
	      (unsigned long long)st.inflight_max);
	/* The freed slots take new requests, which complete too. */
	for (uint64_t i = 16; i < 24; i++)
		REQUIRE(enqueue_id(&f->views[0], i, 0, after(SEC), NULL) == 0, "enqueue %llu",
			(unsigned long long)i);
	REQUIRE(drive_until(f, 1, 24) == 0, "second round: %s", gic_proxy_error(f->proxy));
	CHECK(bad_payloads(f, 0, 1, 24) == 0, "second round payloads");
	gic_proxy_stop(f->proxy);
	fx_close(f);
}

/* A send queue of 16 BBs and B = 16: one chain fills it, the next waits
 * for room (K = 4 is not the limit), then resumes. */
CASE(inflight_sq_full)
{
	fx_cfg c = fx_default(1, 4, 16, GIC_PROXY_TUNED);
	gic_proxy_stats st;
	fx *f;

	c.manual_engine = 1;
	c.inflight = 4;
	c.log_sq_bb = 4;
	c.log_slots = 4;
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	REQUIRE(prefill(f, 4, 16), "prefill");
	REQUIRE(gic_proxy_start(f->proxy) == 0, "start");
	REQUIRE(wait_chains(f, 1), "first chain posted");
	usleep(50000);
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(st.chains == 1 && st.sq_full_stalls == 1 && st.bound_stalls == 0,
	      "queue full: %llu chains, %llu full stalls, %llu bound stalls",
	      (unsigned long long)st.chains, (unsigned long long)st.sq_full_stalls,
	      (unsigned long long)st.bound_stalls);
	REQUIRE(drive_until(f, 4, 16) == 0, "resume: %s", gic_proxy_error(f->proxy));
	check_exact(f, 4, 16, "full queue");
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(st.chains == 4 && st.chain_len[16] == 4 && st.sq_full_stalls >= 1,
	      "%llu chains, %llu full stalls", (unsigned long long)st.chains,
	      (unsigned long long)st.sq_full_stalls);
	gic_proxy_stop(f->proxy);
	fx_close(f);
}

/* S = 4: three unsignaled chains before each signaled one, so one CQE
 * completes four chains. The NIC writes one CQE per signaled chain, and
 * every request is counted once. */
CASE(inflight_one_cqe_many_chains)
{
	fx_cfg c = fx_default(1, 8, 4, GIC_PROXY_TUNED);
	softnic_stats s0, s1;
	gic_proxy_stats st;
	fx *f;

	c.manual_engine = 1;
	c.inflight = 8;
	c.signal_every = 4;
	c.log_slots = 3;
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	REQUIRE(prefill(f, 8, 8), "prefill");
	softnic_get_stats(f->nic, &s0);
	REQUIRE(gic_proxy_start(f->proxy) == 0, "start");
	REQUIRE(wait_chains(f, 8), "eight chains posted");
	REQUIRE(drive_until(f, 8, 8) == 0, "drive: %s", gic_proxy_error(f->proxy));
	check_exact(f, 8, 8, "S=4");
	gic_proxy_stop(f->proxy);
	softnic_get_stats(f->nic, &s1);
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(st.chains == 16 && st.inflight_max == 8, "%llu chains, %llu in flight at most",
	      (unsigned long long)st.chains, (unsigned long long)st.inflight_max);
	CHECK(st.multi_reclaims == 4 && st.nops == 0, "%llu CQEs completed several chains, %llu "
	      "NOPs", (unsigned long long)st.multi_reclaims, (unsigned long long)st.nops);
	CHECK(s1.cqes_written - s0.cqes_written == 4 && s1.wqes_executed - s0.wqes_executed == 64,
	      "NIC: %llu CQEs, %llu WQEs", (unsigned long long)(s1.cqes_written - s0.cqes_written),
	      (unsigned long long)(s1.wqes_executed - s0.wqes_executed));
	fx_close(f);
}

/* S = 4 with one request at a time: every chain is unsignaled when the
 * rings run dry, so the worker closes it with a signaled NOP. */
CASE(inflight_idle_nop)
{
	fx_cfg c = fx_default(1, 1, 4, GIC_PROXY_TUNED);
	gic_proxy_stats st;
	fx *f;

	c.signal_every = 4;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	for (uint64_t i = 0; i < 20; i++) {
		REQUIRE(enqueue_id(&f->views[0], i, 0, after(SEC), NULL) == 0, "enqueue %llu",
			(unsigned long long)i);
		REQUIRE(wait_counter(f, 0, 0, i + 1, LONG_WAIT) == 0, "request %llu: %s",
			(unsigned long long)i, gic_proxy_error(f->proxy));
	}
	check_exact(f, 1, 20, "one at a time");
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(st.nops >= 1, "%llu NOPs", (unsigned long long)st.nops);
	fx_close(f);
}

/* Streaming producers, several workers, K and S varied: counters,
 * payloads and each worker's share exact. */
CASE(inflight_streaming)
{
	static const int shapes[][5] = { /* T, R, B, K, S */
		{ 1, 4, 1, 8, 1 }, { 1, 6, 4, 5, 2 }, { 2, 6, 4, 32, 3 }, { 3, 7, 16, 2, 1 },
		{ 2, 2, 1, 1, 1 } };
	producer prs[MAX_PRODUCERS];

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		fx_cfg c = fx_default(shapes[i][0], shapes[i][1], shapes[i][2], GIC_PROXY_TUNED);
		gic_proxy_stats st;
		fx *f;

		c.inflight = shapes[i][3];
		c.signal_every = shapes[i][4];
		c.log_slots = 5;
		f = fx_open(&c);
		REQUIRE(f, "fixture T%d R%d B%d K%d S%d", c.workers, c.rings, c.batch, c.inflight,
			c.signal_every);
		REQUIRE(stream_rings(f, c.rings, 1, 300, prs) == c.rings, "producers");
		for (int k = 0; k < c.rings; k++)
			CHECK(prs[k].rc == 0, "producer %d: %s", k, gic_proxy_error(f->proxy));
		check_rings(f, &c, 300);
		gic_proxy_stop(f->proxy);
		check_exact(f, c.rings, 300, "streaming");
		gic_proxy_get_stats(f->proxy, -1, &st);
		CHECK(st.inflight_max <= (uint64_t)c.inflight, "K%d: %llu in flight", c.inflight,
		      (unsigned long long)st.inflight_max);
		fx_close(f);
	}
}

/* ------------------------------------------------------------------ */
/* Counter kinds and payload kinds. */

/* GPU-resident counters: every bump is an ATOMIC_FA through the NIC, so
 * the NIC executes one WQE per request plus one per counter update. */
static void run_counter_gpu(int protocol)
{
	fx_cfg c = fx_default(2, 4, 8, protocol);
	producer prs[MAX_PRODUCERS];
	softnic_stats s0, s1;
	gic_proxy_stats st;
	fx *f;

	c.counter_kind = GIC_PROXY_COUNTER_GPU;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	softnic_get_stats(f->nic, &s0);
	REQUIRE(stream_rings(f, c.rings, 1, 600, prs) == c.rings, "producers");
	for (int k = 0; k < c.rings; k++)
		CHECK(prs[k].rc == 0, "producer %d: rc %d: %s", k, prs[k].rc,
		      gic_proxy_error(f->proxy));
	check_rings(f, &c, 600);
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop: %s", gic_proxy_error(f->proxy));
	gic_proxy_get_stats(f->proxy, -1, &st);
	stats_settled(f, &s0, st.requests + st.counter_updates, 0, &s1);
	CHECK(st.counter_updates >= st.chains && st.counter_updates <= st.requests,
	      "%llu counter updates for %llu chains", (unsigned long long)st.counter_updates,
	      (unsigned long long)st.chains);
	CHECK(s1.wqes_executed - s0.wqes_executed == st.requests + st.counter_updates,
	      "NIC executed %llu WQEs for %llu requests and %llu counter updates",
	      (unsigned long long)(s1.wqes_executed - s0.wqes_executed),
	      (unsigned long long)st.requests, (unsigned long long)st.counter_updates);
	CHECK(strcmp(gic_proxy_error(f->proxy), "") == 0, "error: %s", gic_proxy_error(f->proxy));
	fx_close(f);
}

CASE(counter_gpu_baseline)
{
	run_counter_gpu(GIC_PROXY_BASELINE);
}

CASE(counter_gpu_tuned)
{
	run_counter_gpu(GIC_PROXY_TUNED);
}

/* Host-resident counters: the worker's own adds, no extra NIC work. */
CASE(counter_host)
{
	fx_cfg c = fx_default(1, 2, 4, GIC_PROXY_TUNED);
	producer prs[MAX_PRODUCERS];
	softnic_stats s0, s1;
	gic_proxy_stats st;
	fx *f = fx_open(&c);

	REQUIRE(f, "fixture");
	softnic_get_stats(f->nic, &s0);
	REQUIRE(stream_rings(f, c.rings, 1, 500, prs) == c.rings, "producers");
	check_rings(f, &c, 500);
	gic_proxy_stop(f->proxy);
	stats_settled(f, &s0, 1000, 0, &s1);
	gic_proxy_get_stats(f->proxy, -1, &st);
	CHECK(s1.wqes_executed - s0.wqes_executed == 1000, "NIC executed %llu WQEs for 1000 "
	      "requests", (unsigned long long)(s1.wqes_executed - s0.wqes_executed));
	CHECK(st.counter_updates >= st.chains, "%llu counter updates for %llu chains",
	      (unsigned long long)st.counter_updates, (unsigned long long)st.chains);
	fx_close(f);
}

/* Pointer and inline requests of many sizes, both counter kinds. */
static void run_payload_sizes(int counter_kind)
{
	static const uint8_t zero[8];
	fx_cfg c = fx_default(1, 1, 16, GIC_PROXY_TUNED);
	uint64_t off = 0, n = 0;
	fx *f;

	c.counter_kind = counter_kind;
	c.log_slots = 5;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	for (uint32_t len = 0; len <= 2100; len += len < 64 ? 1 : 97, n++) {
		gic_proxy_desc d;
		uint64_t src_off = (len * 13) % (SRC_LEN - 4096);
		int rc = len % 3 == 0 && len <= 8 ?
			gic_proxy_desc_inline(&d, off, value_of(len), len, 0) :
			gic_proxy_desc_pointer(&d, off, src_off, len, 0);

		REQUIRE(rc == 0, "descriptor of %u bytes", len);
		REQUIRE(gic_proxy_enqueue(&f->views[0], &d, after(LONG_WAIT), NULL) == 0,
			"enqueue %u: %s", len, gic_proxy_error(f->proxy));
		off += len + 8;
	}
	REQUIRE(wait_counter(f, 0, 0, n, LONG_WAIT) == 0, "counter %llu of %llu: %s",
		(unsigned long long)counter_value(f, 0), (unsigned long long)n,
		gic_proxy_error(f->proxy));
	off = 0;
	for (uint32_t len = 0; len <= 2100; len += len < 64 ? 1 : 97) {
		uint64_t v = value_of(len);
		const uint8_t *want = len % 3 == 0 && len <= 8 ? (const uint8_t *)&v :
				      f->src + (len * 13) % (SRC_LEN - 4096);

		CHECK(memcmp(f->dst + off, want, len) == 0, "payload of %u bytes", len);
		CHECK(memcmp(f->dst + off + len, zero, 8) == 0, "the gap after %u bytes was written",
		      len);
		off += len + 8;
	}
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

CASE(payload_sizes)
{
	run_payload_sizes(GIC_PROXY_COUNTER_HOST);
	run_payload_sizes(GIC_PROXY_COUNTER_GPU);
}

/* ------------------------------------------------------------------ */
/* Errors: the worker reports which request failed, and stops. */

static int has_text(const char *text, const char *part)
{
	if (strstr(text, part))
		return 1;
	fprintf(stderr, "error text '%s' lacks '%s'\n", text, part);
	return 0;
}

/* Waits for a failed worker's counter: EIO, well before the deadline. */
static void expect_wait_fails(fx *f, int ring, uint32_t counter, uint64_t want)
{
	uint64_t t0 = gic_now_ns();
	int rc = wait_counter(f, ring, counter, want, 10 * SEC);

	CHECK(rc == EIO, "counter wait on a failed worker: rc %d, counter %llu", rc,
	      (unsigned long long)counter_value(f, counter));
	CHECK(gic_now_ns() - t0 < 5 * SEC, "the failure took %llu ms to show",
	      (unsigned long long)((gic_now_ns() - t0) / MS));
}

/* Enqueues into a failed worker's ring until it is full: EIO, not a hang. */
static void expect_enqueue_fails(fx *f, int ring, uint64_t first_id)
{
	int rc = 0, n = 0;

	for (; n < 64 && !rc; n++)
		rc = enqueue_id(&f->views[ring], first_id + (uint64_t)n, 0, after(10 * SEC), NULL);
	CHECK(rc == EIO, "enqueue into a failed worker's full ring: rc %d after %d", rc, n);
}

/* Ring 0 (worker 0): requests 0..4, then one 4 bytes before the end of
 * the destination (8 bytes: past it), then 6..8. Ring 1 (worker 1): 12
 * good ones. Returns the bad descriptor. */
static gic_proxy_desc queue_remote_bounds(fx *f)
{
	gic_proxy_desc bad;
	int ok = gic_proxy_desc_inline(&bad, DST_LEN - 4, value_of(5), 8, 0) == 0;

	for (uint64_t id = 0; ok && id < 9; id++) {
		if (id == 5)
			ok = gic_proxy_enqueue(&f->views[0], &bad, after(SEC), NULL) == 0;
		else
			ok = enqueue_id(&f->views[0], id, 0, after(SEC), NULL) == 0;
	}
	for (uint64_t i = 0; ok && i < 12; i++)
		ok = enqueue_id(&f->views[1], RING_IDS + i, 1, after(SEC), NULL) == 0;
	CHECK(ok, "queueing the requests");
	return bad;
}

/* The failure record names request 5 of ring 0 and its syndrome. */
static void check_remote_bounds_record(fx *f, const gic_proxy_desc *bad)
{
	const char *text = gic_proxy_error(f->proxy);
	gic_proxy_failure fl;

	REQUIRE(gic_proxy_error_info(f->proxy, &fl) == 0, "no error recorded");
	CHECK(fl.err == EIO && fl.worker == 0 && fl.ring == 0 && fl.position == 5,
	      "failure: err %d worker %d ring %d position %llu", fl.err, fl.worker, fl.ring,
	      (unsigned long long)fl.position);
	CHECK(fl.desc.payload == value_of(5) &&
	      fl.desc.header == gic_proxy_header_with_phase(bad->header, 1), "failed descriptor");
	CHECK(fl.syndrome == GIC_SYND_REMOTE_ACCESS_ERR &&
	      fl.vendor_syndrome == SOFTNIC_VSYND_REMOTE_BOUNDS, "syndrome 0x%x/0x%x", fl.syndrome,
	      fl.vendor_syndrome);
	CHECK(has_text(text, "worker 0") && has_text(text, "ring 0 position 5") &&
	      has_text(text, "dst_offset 0xffffc") && has_text(text, "remote access error") &&
	      has_text(text, "syndrome 0x13"), "error text");
}

CASE(error_remote_bounds)
{
	fx_cfg c = fx_default(2, 2, 4, GIC_PROXY_TUNED);
	gic_proxy_desc bad;
	fx *f;

	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	bad = queue_remote_bounds(f);
	REQUIRE(gic_proxy_start(f->proxy) == 0, "start");
	expect_wait_fails(f, 0, 0, 9);
	CHECK(counter_value(f, 0) == 5 && ring_consumed(f, 0) == 5, "counted %llu, released "
	      "%llu: the 5 before the failure", (unsigned long long)counter_value(f, 0),
	      (unsigned long long)ring_consumed(f, 0));
	CHECK(bad_payloads(f, 0, 1, 5) == 0 && untouched(f, 6, 3), "written: the first 5 only");
	CHECK(dst_word(f, DST_SLOTS - 1) == 0 && guards_intact(f), "the bad write left a trace");
	check_remote_bounds_record(f, &bad);
	expect_enqueue_fails(f, 0, 100);

	/* Worker 1 goes on. */
	CHECK(wait_counter(f, 1, 1, 12, LONG_WAIT) == 0, "worker 1 stopped too");
	for (uint64_t i = 12; i < 40; i++)
		CHECK(enqueue_id(&f->views[1], RING_IDS + i, 1, after(LONG_WAIT), NULL) == 0,
		      "ring 1");
	CHECK(wait_counter(f, 1, 1, 40, LONG_WAIT) == 0, "worker 1 stopped too");
	CHECK(bad_payloads(f, RING_IDS, 1, 40) == 0, "ring 1 payloads");
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop after a worker failure");
	fx_close(f);
}

CASE(error_bad_source)
{
	fx_cfg c = fx_default(1, 1, 4, GIC_PROXY_BASELINE);
	gic_proxy_failure fl;
	gic_proxy_desc d;
	fx *f = fx_open(&c);

	REQUIRE(f, "fixture");
	REQUIRE(enqueue_id(&f->views[0], 0, 0, after(SEC), NULL) == 0, "good");
	REQUIRE(gic_proxy_desc_pointer(&d, 8, SRC_LEN - 8, 16, 0) == 0, "desc");
	REQUIRE(gic_proxy_enqueue(&f->views[0], &d, after(SEC), NULL) == 0, "bad");
	expect_wait_fails(f, 0, 0, 2);
	REQUIRE(gic_proxy_error_info(f->proxy, &fl) == 0, "no error recorded");
	CHECK(fl.ring == 0 && fl.position == 1 && fl.syndrome == GIC_SYND_LOCAL_PROT_ERR &&
	      fl.vendor_syndrome == SOFTNIC_VSYND_LOCAL_BOUNDS, "position %llu syndrome 0x%x/0x%x",
	      (unsigned long long)fl.position, fl.syndrome, fl.vendor_syndrome);
	CHECK(has_text(gic_proxy_error(f->proxy), "pointer write of 16 bytes") &&
	      has_text(gic_proxy_error(f->proxy), "local protection error"), "error text");
	CHECK(counter_value(f, 0) == 1 && bad_payloads(f, 0, 1, 1) == 0 && untouched(f, 1, 2),
	      "the good request alone");
	fx_close(f);
}

CASE(error_refused)
{
	fx_cfg c = fx_default(1, 1, 8, GIC_PROXY_TUNED);
	gic_proxy_failure fl;
	fx *f;

	c.counters = 8;
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	for (uint64_t id = 0; id < 6; id++) /* request 3 names counter 9 of 8 */
		REQUIRE(enqueue_id(&f->views[0], id, id == 3 ? 9 : 0, after(SEC), NULL) == 0, "enq");
	REQUIRE(gic_proxy_start(f->proxy) == 0, "start");
	expect_wait_fails(f, 0, 0, 5);
	REQUIRE(gic_proxy_error_info(f->proxy, &fl) == 0, "no error recorded");
	CHECK(fl.err == EINVAL && fl.ring == 0 && fl.position == 3 && fl.syndrome == 0,
	      "err %d position %llu", fl.err, (unsigned long long)fl.position);
	CHECK(has_text(gic_proxy_error(f->proxy), "refused") &&
	      has_text(gic_proxy_error(f->proxy), "counter 9") &&
	      has_text(gic_proxy_error(f->proxy), "counter index"), "error text");
	CHECK(counter_value(f, 0) == 3 && bad_payloads(f, 0, 1, 3) == 0 && untouched(f, 3, 3),
	      "the 3 before the refused one, nothing after");
	fx_close(f);
}

CASE(error_counter_qp)
{
	fx_cfg c = fx_default(1, 1, 4, GIC_PROXY_TUNED);
	gic_proxy_failure fl;
	fx *f;

	c.counter_kind = GIC_PROXY_COUNTER_GPU;
	c.counter_rkey_xor = 0x5a5a00; /* a key nobody registered */
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	REQUIRE(enqueue_id(&f->views[0], 0, 0, after(SEC), NULL) == 0, "enqueue");
	expect_wait_fails(f, 0, 0, 1);
	REQUIRE(gic_proxy_error_info(f->proxy, &fl) == 0, "no error recorded");
	CHECK(fl.ring == -1 && fl.syndrome == GIC_SYND_REMOTE_ACCESS_ERR &&
	      fl.vendor_syndrome == SOFTNIC_VSYND_BAD_RKEY, "ring %d syndrome 0x%x/0x%x", fl.ring,
	      fl.syndrome, fl.vendor_syndrome);
	CHECK(has_text(gic_proxy_error(f->proxy), "counter update failed"), "error text");
	CHECK(bad_payloads(f, 0, 1, 1) == 0 && counter_value(f, 0) == 0,
	      "the write landed, the count did not");
	fx_close(f);
}

/* ------------------------------------------------------------------ */
/* Shutdown with requests in flight. */

static void run_shutdown(int counter_kind)
{
	fx_cfg c = fx_default(2, 4, 8, GIC_PROXY_TUNED);
	producer prs[MAX_PRODUCERS];
	uint64_t t0, sum = 0;
	int blocked = 0;
	fx *f;

	c.counter_kind = counter_kind;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	for (int r = 0; r < c.rings; r++)
		prs[r] = (producer){ .ring = &f->views[r], .first_id = (uint64_t)r * RING_IDS,
				     .stride = 1, .count = RING_IDS, .counter = (uint32_t)r,
				     .timeout_ns = 300 * MS };
	REQUIRE(start_producers(prs, c.rings), "producers");
	for (t0 = gic_now_ns(); sum < 200 && gic_now_ns() - t0 < LONG_WAIT;) {
		sum = 0;
		for (int r = 0; r < c.rings; r++)
			sum += counter_value(f, (uint32_t)r);
		sched_yield();
	}
	t0 = gic_now_ns();
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop: %s", gic_proxy_error(f->proxy));
	CHECK(gic_now_ns() - t0 < 5 * SEC, "stop took %llu ms",
	      (unsigned long long)((gic_now_ns() - t0) / MS));
	join_producers(prs, c.rings);
	for (int r = 0; r < c.rings; r++) {
		uint64_t consumed = ring_consumed(f, r), first = (uint64_t)r * RING_IDS;

		blocked += prs[r].rc == ETIMEDOUT;
		CHECK(prs[r].rc == 0 || prs[r].rc == ETIMEDOUT, "producer %d: rc %d", r, prs[r].rc);
		CHECK(counter_value(f, (uint32_t)r) == consumed, "ring %d: counted %llu, completed "
		      "%llu", r, (unsigned long long)counter_value(f, (uint32_t)r),
		      (unsigned long long)consumed);
		CHECK(consumed <= prs[r].done && prs[r].done - consumed <= f->views[r].slot_cnt,
		      "ring %d: %llu enqueued, %llu completed", r, (unsigned long long)prs[r].done,
		      (unsigned long long)consumed);
		CHECK(bad_payloads(f, first, 1, consumed) == 0, "ring %d: completed payloads", r);
		CHECK(untouched(f, first + consumed, prs[r].done - consumed),
		      "ring %d: requests left in the ring were written", r);
		CHECK(wait_counter(f, r, (uint32_t)r, consumed + 1, 50 * MS) == ETIMEDOUT,
		      "ring %d: counter wait after stop", r);
	}
	CHECK(blocked > 0, "no producer was left blocked: nothing was in flight at stop");
	CHECK(strcmp(gic_proxy_error(f->proxy), "") == 0, "error: %s", gic_proxy_error(f->proxy));
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

CASE(shutdown_host_counters)
{
	run_shutdown(GIC_PROXY_COUNTER_HOST);
}

CASE(shutdown_gpu_counters)
{
	run_shutdown(GIC_PROXY_COUNTER_GPU);
}

/* ------------------------------------------------------------------ */
/* Operating state: pinning, warm-up, core clock. */

static void check_mhz_report(fx *f, int w)
{
	char path[96], text[32];
	int cpu = gic_proxy_worker_cpu(f->proxy, w);
	long mhz = gic_proxy_worker_mhz(f->proxy, w);

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", cpu);
	gic_proxy_worker_mhz_text(f->proxy, w, text, sizeof(text));
	if (access(path, R_OK) == 0)
		CHECK(mhz > 0 && strstr(text, " MHz"), "worker %d on cpu %d: %ld MHz, '%s'", w, cpu,
		      mhz, text);
	else
		CHECK(mhz == -1 && strcmp(text, "unknown") == 0, "worker %d on cpu %d (no cpufreq): "
		      "%ld, '%s'", w, cpu, mhz, text);
	printf("worker %d on cpu %d: %s\n", w, cpu, text);
}

CASE(pinning_warmup_freq)
{
	fx_cfg c = fx_default(1, 1, 4, GIC_PROXY_TUNED);
	gic_proxy_failure fl;
	uint64_t t0;
	fx *f;

	c.first_cpu = 0;
	c.warmup_ms = 100;
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	t0 = gic_now_ns();
	REQUIRE(gic_proxy_start(f->proxy) == 0, "start: %s", gic_proxy_error(f->proxy));
	CHECK(gic_now_ns() - t0 >= 100 * MS, "start returned after %llu ms of a 100 ms warm-up",
	      (unsigned long long)((gic_now_ns() - t0) / MS));
	CHECK(gic_proxy_worker_cpu(f->proxy, 0) == 0, "worker on cpu %d, pinned to 0",
	      gic_proxy_worker_cpu(f->proxy, 0));
	check_mhz_report(f, 0);
	for (uint64_t id = 0; id < 100; id++)
		REQUIRE(enqueue_id(&f->views[0], id, 0, after(LONG_WAIT), NULL) == 0, "enqueue");
	CHECK(wait_counter(f, 0, 0, 100, LONG_WAIT) == 0 && bad_payloads(f, 0, 1, 100) == 0,
	      "a pinned worker serves: %s", gic_proxy_error(f->proxy));
	fx_close(f);

	c = fx_default(2, 2, 4, GIC_PROXY_TUNED); /* unpinned */
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	for (int w = 0; w < 2; w++) {
		CHECK(gic_proxy_worker_cpu(f->proxy, w) >= 0, "worker %d: no core", w);
		check_mhz_report(f, w);
	}
	fx_close(f);

	c.first_cpu = CPU_SETSIZE - 1; /* no such core */
	c.no_start = 1;
	f = fx_open(&c);
	REQUIRE(f, "fixture");
	CHECK(gic_proxy_start(f->proxy) == EINVAL, "start with workers on a missing core");
	CHECK(has_text(gic_proxy_error(f->proxy), "could not pin"), "error text");
	CHECK(gic_proxy_error_info(f->proxy, &fl) == 0 && fl.ring == -1, "error info");
	CHECK(gic_proxy_stop(f->proxy) == 0, "stop after a failed start");
	fx_close(f);
}

/* ------------------------------------------------------------------ */

static const tk_case cases[] = {
	TK_ENTRY(desc_layout), TK_ENTRY(attr_checks), TK_ENTRY(lifecycle),
	TK_ENTRY(target_remote), TK_ENTRY(wrap_baseline), TK_ENTRY(wrap_tuned), TK_ENTRY(full_ring_baseline),
	TK_ENTRY(full_ring_tuned), TK_ENTRY(rings_workers_baseline),
	TK_ENTRY(rings_workers_tuned), TK_ENTRY(chain_b1), TK_ENTRY(chain_b4),
	TK_ENTRY(chain_b16), TK_ENTRY(inflight_bound_stall), TK_ENTRY(inflight_sq_full),
	TK_ENTRY(inflight_one_cqe_many_chains), TK_ENTRY(inflight_idle_nop),
	TK_ENTRY(inflight_streaming), TK_ENTRY(counter_gpu_baseline), TK_ENTRY(counter_gpu_tuned),
	TK_ENTRY(counter_host), TK_ENTRY(payload_sizes), TK_ENTRY(error_remote_bounds),
	TK_ENTRY(error_bad_source), TK_ENTRY(error_refused), TK_ENTRY(error_counter_qp),
	TK_ENTRY(shutdown_host_counters), TK_ENTRY(shutdown_gpu_counters),
	TK_ENTRY(pinning_warmup_freq),
};

int main(int argc, char **argv)
{
	return tk_run_cases("test_proxy", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
