/*
 * mini-proxy worker: sweep the rings round-robin, chain up to B valid
 * descriptors into one post, keep up to K chains posted, reclaim
 * completions as CQEs arrive (each completes every chain up to the WQE it
 * names, oldest first): bump the completion counters, publish the rings'
 * progress. One thread per worker; everything here but the error record
 * and the ring control lines is the worker's own.
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
		req.desc.payload = gic_ld_relaxed_sys_u64(&slot->payload);
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

/* Whether the chain about to be posted is signaled: every S-th chain,
 * the one that fills the bound K (a full worker then waits for a CQE that
 * will come), and one that would leave more than half of the send queue
 * unsignaled (a worker waiting for room then has a CQE to wait for). */
static int chain_signaled(const proxy_worker *w, const proxy_chain *chain)
{
	const gic_proxy_attr *a = &w->proxy->attr;
	const gic_sq *sq = &w->data.sq;

	return w->unsignaled + 1 >= (uint32_t)a->signal_every ||
	       w->fly_cnt + 1 >= (uint32_t)a->inflight ||
	       sq->resv + (uint64_t)chain->len - sq->signaled > sq->bb_cnt / 2;
}

/* B WQEs announced by one doorbell; the last one signaled when
 * chain_signaled says so. The caller made room (one BB per request). */
static int post_chain(proxy_worker *w, proxy_chain *chain)
{
	gic_sq *sq = &w->data.sq;
	int sig = chain_signaled(w, chain);
	uint64_t deadline = worker_deadline(w);

	for (int i = 0; i < chain->len; i++) {
		int last = i + 1 == chain->len;
		uint64_t pos;
		int rc = gic_sq_reserve_excl(sq, 1, &pos, PROXY_ORDER, deadline);

		if (rc)
			return rc;
		chain->req[i].wqe_pos = pos;
		build_wqe(w, pos, &chain->req[i].desc, last && sig ? GIC_CTRL_CQ_UPDATE : 0);
		if (last && sig)
			gic_sq_note_signaled(sq, pos + 1, 0);
	}
	chain->end = sq->resv;
	w->unsignaled = sig ? 0 : w->unsignaled + 1;
	/* The doorbell record and doorbell are release stores: they order the
	 * WQE stores before the NIC can see them (gic_sq_ring). */
	gic_sq_publish_excl(sq, PROXY_ORDER);
	return 0;
}

/* A signaled NOP after an unsignaled tail (the worker found nothing more to
 * take), when the queue has room: its CQE retires the tail. */
static int post_nop(proxy_worker *w)
{
	gic_sq *sq = &w->data.sq;
	uint64_t pos;
	int rc;

	if (sq->ready <= sq->signaled || sq->resv + 1 > sq->retired + sq->bb_cnt)
		return 0;
	rc = gic_sq_reserve_excl(sq, 1, &pos, PROXY_ORDER, worker_deadline(w));
	if (rc)
		return rc;
	gic_wqe_nop(sq, pos, GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, PROXY_ORDER);
	w->unsignaled = 0;
	stat_add(&w->stats.nops, 1);
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
				     e->syndrome, e->vendor_syndrome, gic_nic_qp_error(w->counter.qp));
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
				  w->fetch_mr->lkey, last ? GIC_CTRL_CQ_UPDATE : 0);
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

/* Releases, counts and bumps the chain's first n requests: the slots and
 * the stats before the counters, so that whoever sees a counter sees the
 * slots free and the requests counted. */
static int complete_requests(proxy_worker *w, const proxy_chain *chain, int n)
{
	release_slots(w, chain, n);
	stat_add(&w->stats.requests, (uint64_t)n);
	return bump_counters(w, chain, n);
}

/* ------------------------------------------------------------------ */
/* Chains in flight. */

static proxy_chain *fly_at(proxy_worker *w, uint32_t k)
{
	return &w->fly[(w->fly_head + k) % (uint32_t)w->proxy->attr.inflight];
}

static int inflight_stuck(proxy_worker *w, int rc);

/* The error CQE names a WQE of a chain in flight: that request failed;
 * the ones before it (earlier chains, and earlier requests of its chain)
 * completed. A NOP's or another WQE's error blames the oldest chain's first
 * request. */
static int inflight_failed(proxy_worker *w)
{
	const gic_cqe_info *e = &w->data.sq.err_info;
	proxy_chain *chain = NULL;
	uint32_t slots, k;
	gic_proxy_failure f;
	char what[256];
	int i = 0;

	for (k = 0; k < w->fly_cnt && !chain; k++) {
		proxy_chain *c = fly_at(w, k);

		for (i = 0; i < c->len; i++) {
			if ((uint16_t)c->req[i].wqe_pos == e->wqe_counter) {
				chain = c;
				break;
			}
		}
	}
	if (!chain && !w->fly_cnt)
		return inflight_stuck(w, EIO); /* a NOP's error, nothing in flight */
	if (!chain) {
		chain = fly_at(w, 0);
		i = 0;
		k = 1;
	}
	for (uint32_t j = 0; j + 1 < k; j++)
		complete_requests(w, fly_at(w, j), fly_at(w, j)->len);
	complete_requests(w, chain, i);
	slots = w->proxy->rings[chain->req[i].ring].slot_cnt;
	describe_request(what, sizeof(what), &chain->req[i], slots);
	f = failure_of(EIO, &chain->req[i], e->syndrome, e->vendor_syndrome);
	proxy_record_failure(w, &f,
			     "worker %d: request failed: %s: %s (syndrome 0x%02x, vendor syndrome"
			     " 0x%02x): %s", w->index, what, gic_syndrome_name(e->syndrome),
			     e->syndrome, e->vendor_syndrome, gic_nic_qp_error(w->data.qp));
	return EIO;
}

/* No completion (or a foreign CQE) within the limit: blames the oldest
 * chain in flight. */
static int inflight_stuck(proxy_worker *w, int rc)
{
	const proxy_chain *chain = fly_at(w, 0);
	uint32_t slots;
	gic_proxy_failure f;
	char what[256];

	if (!w->fly_cnt) { /* only a NOP outstanding */
		f = no_request(rc);
		proxy_record_failure(w, &f, "worker %d: data QP: %s", w->index,
				     rc == ETIMEDOUT ? "no completion within the timeout" :
				     strerror(rc));
		return rc;
	}
	slots = w->proxy->rings[chain->req[0].ring].slot_cnt;
	f = failure_of(rc, &chain->req[0], 0, 0);
	describe_request(what, sizeof(what), &chain->req[0], slots);
	proxy_record_failure(w, &f, "worker %d: chain of %d requests starting at %s (%u chains in "
			     "flight): %s", w->index, chain->len, what, w->fly_cnt,
			     rc == ETIMEDOUT ? "no completion within the timeout" : strerror(rc));
	return rc;
}

/* Polls the data CQ until it is empty and completes, oldest first, every
 * chain that ends at or before the retired position (one CQE may complete
 * several). Never waits. 0, or the recorded errno: EIO (error CQE), EPROTO
 * (a CQE of another QP), ETIMEDOUT (chains in flight and no completion for
 * timeout_ms). */
static int reap(proxy_worker *w)
{
	gic_sq *sq = &w->data.sq;
	int progress = 0;

	while (sq->retired < sq->ready) {
		int rc = gic_sq_poll_once(sq, PROXY_ORDER, 0), done = 0;

		if (rc == EIO)
			return inflight_failed(w);
		if (rc == EAGAIN)
			break;
		if (rc)
			return inflight_stuck(w, rc);
		while (w->fly_cnt && fly_at(w, 0)->end <= sq->retired) {
			proxy_chain *c = fly_at(w, 0);

			rc = complete_requests(w, c, c->len);
			w->fly_head = (w->fly_head + 1) % (uint32_t)w->proxy->attr.inflight;
			w->fly_cnt--;
			done++;
			if (rc)
				return rc;
		}
		if (done > 1)
			stat_add(&w->stats.multi_reclaims, 1);
		progress = 1;
	}
	if (progress || sq->retired >= sq->ready) {
		w->stall_since = 0;
		return 0;
	}
	/* No progress with WQEs posted: the limit runs from the first such
	 * poll (the clock is read only while nothing completes). */
	if (!w->stall_since)
		w->stall_since = gic_now_ns();
	else if (gic_now_ns() - w->stall_since > w->proxy->timeout_ns)
		return inflight_stuck(w, ETIMEDOUT);
	return 0;
}

/* Polls completions until fewer than K chains are posted and the send
 * queue has room for `need` BBs, counting a stall when it had to wait.
 * 0 or the recorded errno. */
static int make_room(proxy_worker *w, uint32_t need)
{
	gic_sq *sq = &w->data.sq;
	uint32_t k = (uint32_t)w->proxy->attr.inflight, spins = 0;
	int bound = 0, full = 0;

	for (;;) {
		int rc;

		if (w->fly_cnt >= k) {
			if (!bound++)
				stat_add(&w->stats.bound_stalls, 1);
		} else if (sq->resv + need > sq->retired + sq->bb_cnt) {
			if (!full++)
				stat_add(&w->stats.sq_full_stalls, 1);
		} else {
			return 0;
		}
		rc = reap(w);
		if (rc)
			return rc;
		if (w->fly_cnt < k && sq->resv + need <= sq->retired + sq->bb_cnt)
			return 0;
		worker_spin(w, &spins);
	}
}

/* Posts the chain gathered in the slot after the newest one in flight and
 * adds it to the chains in flight. 0 or the recorded errno. */
static int launch(proxy_worker *w, proxy_chain *chain)
{
	int rc = post_chain(w, chain);

	if (rc) {
		/* make_room left room: only the deadline of a queue that a
		 * failed NIC stopped retiring gets here. */
		gic_proxy_failure f = failure_of(rc, &chain->req[0], 0, 0);

		proxy_record_failure(w, &f, "worker %d: could not post a chain: %s", w->index,
				     strerror(rc));
		return rc;
	}
	stat_add(&w->stats.chains, 1);
	stat_add(&w->stats.chain_len[chain->len], 1);
	w->fly_cnt++;
	if (w->fly_cnt > w->stats.inflight_max)
		__atomic_store_n(&w->stats.inflight_max, w->fly_cnt, __ATOMIC_RELAXED);
	return 0;
}

/* Completes every chain in flight (a signaled NOP first when the newest is
 * unsignaled). 0 or the recorded errno. */
static int drain_inflight(proxy_worker *w)
{
	uint32_t spins = 0;

	while (w->fly_cnt) {
		int rc = post_nop(w);

		if (!rc)
			rc = reap(w);
		if (rc)
			return rc;
		if (w->fly_cnt)
			worker_spin(w, &spins);
	}
	return 0;
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
	uint32_t idle = 0;

	/* A service loop, not a wait: it ends when stop is set (acquire: the
	 * flag only; stop publishes nothing else). Then the chains posted are
	 * completed (drain_inflight). */
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		proxy_chain *chain;

		if (poll_counter_cq(w) || reap(w))
			return;
		if (w->fly_cnt >= (uint32_t)p->attr.inflight && make_room(w, 1))
			return;
		chain = fly_at(w, w->fly_cnt);
		gather(w, chain);
		if (!chain->len && !chain->refused) {
			/* Nothing to take: an unsignaled tail gets its CQE. */
			if (post_nop(w))
				return;
			worker_spin(w, &idle);
			continue;
		}
		idle = 0;
		if (chain->len && (make_room(w, (uint32_t)chain->len) || launch(w, chain)))
			return;
		if (chain->refused) {
			/* The requests before it complete first. */
			if (!drain_inflight(w))
				refuse(w, chain);
			return;
		}
	}
	if (!w->failed)
		drain_inflight(w);
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
	proxy_sleep_ms(p->attr.idle_ms, &p->stop);
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
