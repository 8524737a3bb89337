/*
 * mini-proxy worker: sweep the rings round-robin, chain up to B valid
 * descriptors into one post, wait for its CQE, bump the completion
 * counters, publish the rings' progress. One thread per worker; everything
 * here but the error record and the ring control lines is the worker's own.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proxy_internal.h"

static uint64_t worker_deadline(const proxy_worker *w)
{
	return gic_now_ns() + w->proxy->timeout_ns;
}

/* One step of a worker's poll loop (idle, or waiting for a CQE): a pause,
 * and every 64th step a yield (attr.idle_sleep_ns 0: a core of its own,
 * where the yield returns at once) or a sleep of idle_sleep_ns (cores
 * shared with other busy threads, as in CI, where yields do not hand the
 * core over reliably). */
static void worker_spin(const proxy_worker *w, uint32_t *spins)
{
	long sleep_ns = w->proxy->attr.idle_sleep_ns;

	if ((++*spins & 63u) != 0) {
		gic_cpu_relax();
	} else if (sleep_ns) {
		struct timespec ts = { 0, sleep_ns };

		nanosleep(&ts, NULL);
	} else {
		sched_yield();
	}
}

/* ------------------------------------------------------------------ */
/* Describing a request in error texts. */

static void describe_request(char *buf, size_t len, const proxy_request *r, uint32_t slot_cnt)
{
	uint64_t h = r->desc.header;

	if (gic_proxy_desc_op(h) == GIC_PROXY_OP_INLINE)
		snprintf(buf, len,
			 "ring %d position %" PRIu64 " (slot %" PRIu64 "): inline write of %u bytes"
			 " (value 0x%" PRIx64 ") to dst_offset 0x%x, counter %u",
			 r->ring, r->position, r->position & (slot_cnt - 1),
			 gic_proxy_desc_length(h), r->desc.payload, gic_proxy_desc_dst_offset(h),
			 gic_proxy_desc_counter(h));
	else
		snprintf(buf, len,
			 "ring %d position %" PRIu64 " (slot %" PRIu64 "): pointer write of %u bytes"
			 " from src_offset 0x%" PRIx64 " to dst_offset 0x%x, counter %u",
			 r->ring, r->position, r->position & (slot_cnt - 1),
			 gic_proxy_desc_length(h), r->desc.payload, gic_proxy_desc_dst_offset(h),
			 gic_proxy_desc_counter(h));
}

/* A failure that involves no request. */
static gic_proxy_failure no_request(int err)
{
	gic_proxy_failure f = { .err = err, .ring = -1 };
	return f;
}

static gic_proxy_failure failure_of(int err, const proxy_request *r, uint8_t synd, uint8_t vs)
{
	gic_proxy_failure f = { .err = err, .ring = r->ring, .position = r->position,
				.desc = r->desc, .syndrome = synd, .vendor_syndrome = vs };
	return f;
}

/* ------------------------------------------------------------------ */
/* Taking descriptors. */

/* Why the worker cannot serve a descriptor, or NULL. Bounds of the
 * destination and source are the NIC's to check (an error CQE). */
static const char *refusal(const gic_proxy *p, uint64_t header)
{
	if (gic_proxy_desc_counter(header) >= p->attr.counter_cnt)
		return "counter index beyond the proxy's counters";
	if (gic_proxy_desc_op(header) == GIC_PROXY_OP_INLINE &&
	    gic_proxy_desc_length(header) > GIC_PROXY_DESC_MAX_INLINE)
		return "inline length above 8 bytes";
	return NULL;
}

/* Appends ring ri's valid descriptors to the chain, in ring order, until
 * the chain holds B or a refused descriptor stops it. */
static void take_from_ring(proxy_worker *w, int ri, proxy_chain *chain)
{
	gic_proxy *p = w->proxy;
	proxy_ring *r = &p->rings[ri];

	while (chain->len < p->attr.batch) {
		uint64_t pos = r->taken;
		gic_proxy_desc *slot = &r->slots[pos & (r->slot_cnt - 1)];
		/* Acquire: orders our read of the payload after the producer's
		 * store of it, which its release of the header published (from
		 * a GPU: the one 16-byte store carried both). */
		uint64_t header = gic_ld_acquire_sys_u64(&slot->header);
		proxy_request req = { .ring = ri, .position = pos };

		if (gic_proxy_desc_phase(header) != gic_proxy_phase(pos, r->log_slot_cnt))
			return;
		req.desc.header = header;
		req.desc.payload = gic_ld_relaxed_u64(&slot->payload);
		chain->why = refusal(p, header);
		if (chain->why) {
			chain->refused = 1;
			chain->bad = req;
			return;
		}
		chain->req[chain->len++] = req;
		r->taken = pos + 1;
	}
}

/* One sweep over the worker's rings, starting one ring later each time. */
static void gather(proxy_worker *w, proxy_chain *chain)
{
	chain->len = 0;
	chain->refused = 0;
	for (int k = 0; k < w->nrings && chain->len < w->proxy->attr.batch && !chain->refused; k++)
		take_from_ring(w, w->rings[(w->next_ring + k) % w->nrings], chain);
	w->next_ring = (w->next_ring + 1) % w->nrings;
}

/* ------------------------------------------------------------------ */
/* Posting a chain. */

/* Builds the request's WQE (one BB: an inline write of at most 8 bytes
 * or a pointer write). A zero-length pointer request becomes an empty
 * inline write: mlx5 reads a data segment's byte count of 0 as 2 GiB. */
static void build_wqe(proxy_worker *w, uint64_t pos, const gic_proxy_desc *d, uint8_t fm_ce_se)
{
	const gic_proxy_attr *a = &w->proxy->attr;
	uint64_t raddr = a->dst_addr + gic_proxy_desc_dst_offset(d->header);
	uint32_t len = gic_proxy_desc_length(d->header);

	if (gic_proxy_desc_op(d->header) == GIC_PROXY_OP_INLINE || len == 0)
		gic_wqe_write_inline(&w->data.sq, pos, raddr, a->dst_rkey, &d->payload, len,
				     fm_ce_se);
	else
		gic_wqe_write(&w->data.sq, pos, GIC_OPCODE_RDMA_WRITE, raddr, a->dst_rkey,
			      a->src_addr + d->payload, a->src_lkey, len, fm_ce_se, 0);
}

/* B WQEs, the last signaled, announced by one doorbell. */
static int post_chain(proxy_worker *w, proxy_chain *chain)
{
	gic_sq *sq = &w->data.sq;
	uint64_t deadline = worker_deadline(w);

	for (int i = 0; i < chain->len; i++) {
		int last = i + 1 == chain->len;
		uint64_t pos;
		int rc = gic_sq_reserve_excl(sq, 1, &pos, PROXY_ORDER, deadline);

		if (rc)
			return rc;
		chain->req[i].wqe_pos = pos;
		build_wqe(w, pos, &chain->req[i].desc, last ? GIC_CTRL_CQ_UPDATE : 0);
		if (last)
			gic_sq_note_signaled(sq, pos + 1, 0);
	}
	/* The doorbell record and doorbell are release stores: they order the
	 * WQE stores before the NIC can see them (gic_sq_ring). */
	gic_sq_publish_excl(sq, PROXY_ORDER);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Completion counters. */

/* Records a failure of the counter QP (the text of its error CQE). */
static int counter_qp_failed(proxy_worker *w, int rc)
{
	gic_cqe_info *e = &w->counter.sq.err_info;
	gic_proxy_failure f = no_request(rc);

	f.syndrome = rc == EIO ? e->syndrome : 0;
	f.vendor_syndrome = rc == EIO ? e->vendor_syndrome : 0;
	if (rc == EIO)
		proxy_record_failure(w, &f,
				     "worker %d: counter update failed: %s (syndrome 0x%02x, vendor"
				     " syndrome 0x%02x): %s", w->index, gic_syndrome_name(e->syndrome),
				     e->syndrome, e->vendor_syndrome, softnic_qp_error(w->counter.qp));
	else
		proxy_record_failure(w, &f, "worker %d: counter QP: %s", w->index, strerror(rc));
	return rc;
}

/* COUNTER_GPU: one ATOMIC_FA per counter through the loopback QP, the last
 * signaled, one doorbell. The CQEs are reaped as the worker goes
 * (poll_counter_cq) or when the queue needs room. */
static int post_counter_adds(proxy_worker *w, const uint32_t *idx, const uint64_t *add, int n)
{
	const gic_proxy_attr *a = &w->proxy->attr;
	gic_sq *sq = &w->counter.sq;
	uint64_t deadline = worker_deadline(w);

	for (int j = 0; j < n; j++) {
		int last = j + 1 == n;
		uint64_t pos;
		int rc = gic_sq_reserve_excl(sq, 1, &pos, PROXY_ORDER, deadline);

		if (rc)
			return counter_qp_failed(w, rc);
		gic_wqe_atomic_fa(sq, pos, (uint64_t)(uintptr_t)&a->counters[idx[j]], a->counter_rkey,
				  add[j], (uint64_t)(uintptr_t)w->fetch_buf,
				  softnic_mr_lkey(w->fetch_mr), last ? GIC_CTRL_CQ_UPDATE : 0);
		if (last)
			gic_sq_note_signaled(sq, pos + 1, 0);
	}
	gic_sq_publish_excl(sq, PROXY_ORDER);
	return 0;
}

/* Adds, per counter, the number of the chain's first n requests naming it. */
static int bump_counters(proxy_worker *w, const proxy_chain *chain, int n)
{
	const gic_proxy_attr *a = &w->proxy->attr;
	uint32_t idx[GIC_PROXY_MAX_BATCH];
	uint64_t add[GIC_PROXY_MAX_BATCH];
	int m = 0;

	for (int i = 0; i < n; i++) {
		uint32_t c = gic_proxy_desc_counter(chain->req[i].desc.header);
		int j = 0;

		while (j < m && idx[j] != c)
			j++;
		if (j == m) {
			idx[m] = c;
			add[m++] = 0;
		}
		add[j]++;
	}
	stat_add(&w->stats.counter_updates, (uint64_t)m);
	if (a->counter_kind == GIC_PROXY_COUNTER_GPU)
		return m ? post_counter_adds(w, idx, add, m) : 0;
	/* Release: orders the CQE we acquired, hence the NIC's writes of the
	 * data, before the count the producer acquires. */
	for (int j = 0; j < m; j++)
		__atomic_fetch_add(&a->counters[idx[j]], add[j], __ATOMIC_RELEASE);
	return 0;
}

/* Publishes the progress of every ring among the chain's first n
 * requests (a ring's requests are contiguous in the chain, in order). */
static void release_slots(proxy_worker *w, const proxy_chain *chain, int n)
{
	for (int i = 0; i < n; i++) {
		const proxy_request *r = &chain->req[i];

		if (i + 1 < n && chain->req[i + 1].ring == r->ring)
			continue;
		/* Release: orders our reads of the slots before the producers'
		 * reuse of them, which they acquire. */
		gic_st_release_sys_u64(&w->proxy->rings[r->ring].ctl->consumed, r->position + 1);
	}
}

/* Counts, bumps and releases the chain's first n requests. */
static int complete_requests(proxy_worker *w, const proxy_chain *chain, int n)
{
	int rc = bump_counters(w, chain, n);

	release_slots(w, chain, n);
	stat_add(&w->stats.requests, (uint64_t)n);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Running a chain. */

/* The error CQE names a WQE of the chain: that request failed; the ones
 * before it completed. */
static int chain_failed(proxy_worker *w, const proxy_chain *chain)
{
	const gic_cqe_info *e = &w->data.sq.err_info;
	uint32_t slots;
	gic_proxy_failure f;
	char what[256];
	int i = 0;

	while (i < chain->len && (uint16_t)chain->req[i].wqe_pos != e->wqe_counter)
		i++;
	if (i == chain->len) /* not ours: blame the first request */
		i = 0;
	complete_requests(w, chain, i);
	slots = w->proxy->rings[chain->req[i].ring].slot_cnt;
	describe_request(what, sizeof(what), &chain->req[i], slots);
	f = failure_of(EIO, &chain->req[i], e->syndrome, e->vendor_syndrome);
	proxy_record_failure(w, &f,
			     "worker %d: request failed: %s: %s (syndrome 0x%02x, vendor syndrome"
			     " 0x%02x): %s", w->index, what, gic_syndrome_name(e->syndrome),
			     e->syndrome, e->vendor_syndrome, softnic_qp_error(w->data.qp));
	return EIO;
}

/* No CQE (or a foreign one) within the deadline. */
static int chain_stuck(proxy_worker *w, const proxy_chain *chain, int rc)
{
	uint32_t slots = w->proxy->rings[chain->req[0].ring].slot_cnt;
	gic_proxy_failure f = failure_of(rc, &chain->req[0], 0, 0);
	char what[256];

	describe_request(what, sizeof(what), &chain->req[0], slots);
	proxy_record_failure(w, &f, "worker %d: chain of %d requests starting at %s: %s",
			     w->index, chain->len, what,
			     rc == ETIMEDOUT ? "no completion within the timeout" : strerror(rc));
	return rc;
}

/* Polls the data QP's CQ until everything posted has retired: 0, EIO
 * (error CQE), EPROTO or ETIMEDOUT. As gic_sq_wait_retired, with the
 * worker's spin policy (worker_spin). */
static int wait_chain_cqe(proxy_worker *w)
{
	gic_sq *sq = &w->data.sq;
	uint64_t deadline = worker_deadline(w);
	uint32_t spins = 0;

	while (sq->retired < sq->ready) {
		int rc = gic_sq_poll_once(sq, PROXY_ORDER, 0);

		if (rc != EAGAIN && rc)
			return rc;
		if (rc == EAGAIN) {
			if (gic_now_ns() > deadline)
				return ETIMEDOUT;
			worker_spin(w, &spins);
		}
	}
	return 0;
}

/* Posts the chain, waits for its CQE, completes it. 0 or an errno (the
 * failure is recorded). */
static int run_chain(proxy_worker *w, proxy_chain *chain)
{
	int rc = post_chain(w, chain);

	stat_add(&w->stats.chains, 1);
	stat_add(&w->stats.chain_len[chain->len], 1);
	if (!rc)
		rc = wait_chain_cqe(w);
	if (rc == EIO)
		return chain_failed(w, chain);
	if (rc)
		return chain_stuck(w, chain, rc);
	return complete_requests(w, chain, chain->len);
}

/* Records a descriptor the worker will not serve. */
static int refuse(proxy_worker *w, const proxy_chain *chain)
{
	uint32_t slots = w->proxy->rings[chain->bad.ring].slot_cnt;
	gic_proxy_failure f = failure_of(EINVAL, &chain->bad, 0, 0);
	char what[256];

	describe_request(what, sizeof(what), &chain->bad, slots);
	proxy_record_failure(w, &f, "worker %d: request refused: %s: %s", w->index, what,
			     chain->why);
	return EINVAL;
}

/* ------------------------------------------------------------------ */
/* The loop. */

/* Reaps one counter-QP CQE if any is due; 0 or the recorded errno. */
static int poll_counter_cq(proxy_worker *w)
{
	gic_sq *sq = &w->counter.sq;
	int rc;

	if (w->proxy->attr.counter_kind != GIC_PROXY_COUNTER_GPU || sq->retired >= sq->ready)
		return 0;
	rc = gic_sq_poll_once(sq, PROXY_ORDER, 0);
	return rc == EAGAIN || rc == 0 ? 0 : counter_qp_failed(w, rc);
}

/* Waits for the counter updates still in flight when the worker stops. */
static void drain_counter_qp(proxy_worker *w)
{
	gic_sq *sq = &w->counter.sq;
	int rc;

	if (w->proxy->attr.counter_kind != GIC_PROXY_COUNTER_GPU || w->failed)
		return;
	rc = gic_sq_quiet(sq, PROXY_ORDER, worker_deadline(w));
	if (rc)
		counter_qp_failed(w, rc);
}

static void worker_loop(proxy_worker *w)
{
	gic_proxy *p = w->proxy;
	proxy_chain chain;
	uint32_t idle = 0;

	/* A service loop, not a wait: it ends when stop is set (acquire: the
	 * flag only; stop publishes nothing else). */
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		if (poll_counter_cq(w))
			return;
		gather(w, &chain);
		if (!chain.len && !chain.refused) {
			worker_spin(w, &idle);
			continue;
		}
		idle = 0;
		if (chain.len && run_chain(w, &chain))
			return;
		if (chain.refused) {
			refuse(w, &chain);
			return;
		}
	}
}

/* Pins (when asked), warms up, reports ready, runs. */
void *proxy_worker_main(void *arg)
{
	proxy_worker *w = arg;
	gic_proxy *p = w->proxy;
	int cpu = p->attr.first_cpu < 0 ? -1 : p->attr.first_cpu + w->index;

	if (cpu >= 0) {
		int rc = proxy_pin_self(cpu);

		if (rc) {
			gic_proxy_failure f = no_request(rc);

			proxy_record_failure(w, &f, "worker %d: could not pin to CPU %d: %s",
					     w->index, cpu, strerror(rc));
			/* Release: the error record before start() reads it. */
			__atomic_store_n(&p->start_err, EINVAL, __ATOMIC_RELEASE);
			return NULL;
		}
	}
	proxy_spin_ms(p->attr.warmup_ms, &p->stop);
	/* Relaxed: a number; the release of `ready` orders it before start()
	 * returns. */
	__atomic_store_n(&w->cpu, cpu >= 0 ? cpu : proxy_current_cpu(), __ATOMIC_RELAXED);
	/* Release: our cpu before start() returns to the caller. */
	__atomic_fetch_add(&p->ready, 1, __ATOMIC_RELEASE);
	worker_loop(w);
	drain_counter_qp(w);
	return NULL;
}
