/*
 * bench/gic/host.c - the host modes' fixture (host.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

uint64_t hx_deadline(void)
{
	return gic_now_ns() + HX_WAIT_NS;
}

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t hx_value(uint64_t s, uint64_t i)
{
	uint64_t v = mix64((s << 40) ^ i ^ 0x9e3779b97f4a7c15ull);

	return v ? v : 1;
}

void hx_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t off = 0; off < len; off += 8) {
		uint64_t w = hx_value(seed, off);

		memcpy(buf + off, &w, len - off < 8 ? len - off : 8);
	}
}

void hx_poison(uint8_t *dst, const uint8_t *pat, size_t len)
{
	for (size_t i = 0; i < len; i++)
		dst[i] = (uint8_t)~pat[i];
}

int hx_check(const char *who, const char *what, const uint8_t *got, const uint8_t *want,
	     size_t len)
{
	size_t i;

	if (!memcmp(got, want, len))
		return 1;
	for (i = 0; i + 1 < len && got[i] == want[i]; i++)
		;
	fprintf(stderr, "gic %s: validation failed: %s: byte %zu is 0x%02x, expected 0x%02x\n",
		who, what, i, got[i], want[i]);
	return 0;
}

int hx_wait_u64(const uint64_t *word, uint64_t want, uint64_t deadline)
{
	for (uint32_t spins = 1;; spins++) {
		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == want)
			return 0;
		if ((spins & 255) == 0) {
			if (gic_now_ns() > deadline)
				return ETIMEDOUT;
			sched_yield();
		}
		gic_cpu_relax();
	}
}

/* ------------------------------------------------------------------ */
/* Setup. */

static int pe_open(hx *h, int i)
{
	hx_pe *pe = &h->pe[i];

	pe->pd = softnic_pd_alloc(h->nic);
	if (!pe->pd)
		return errno;
	for (int q = 0; q < h->c.qps; q++) {
		softnic_qp_attr qa = { .log_sq_bb = h->c.log_sq_bb };

		pe->cq[q] = softnic_cq_create(h->nic, h->c.log_sq_bb);
		qa.send_cq = pe->cq[q];
		pe->qp[q] = pe->cq[q] ? softnic_qp_create(pe->pd, &qa) : NULL;
		if (!pe->qp[q])
			return errno;
	}
	pe->src = calloc(1, h->c.region);
	pe->dst = calloc(1, h->c.region);
	if (!pe->src || !pe->dst)
		return ENOMEM;
	pe->src_mr = softnic_reg_mr(pe->pd, pe->src, h->c.region, SOFTNIC_ACCESS_LOCAL_WRITE);
	pe->dst_mr = softnic_reg_mr(pe->pd, pe->dst, h->c.region,
				    SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!pe->src_mr || !pe->dst_mr)
		return errno;
	pe->dst_rkey = softnic_mr_rkey(pe->dst_mr);
	pe->src_lkey = softnic_mr_lkey(pe->src_mr);
	return 0;
}

static int connect_all(hx *h)
{
	for (int q = 0; q < h->c.qps; q++) {
		int rc = softnic_qp_connect(h->pe[0].qp[q], h->pe[1].qp[q]);

		for (int i = 0; !rc && i < 2; i++)
			rc = softnic_qp_view(h->pe[i].qp[q], &h->pe[i].sq[q], &h->pe[i].cqv[q]);
		if (rc)
			return rc;
	}
	return 0;
}

/* PE i's DCI and DCT (hx_cfg.dc); the AVs after both PEs have theirs. */
static int dc_open(hx *h, int i)
{
	hx_pe *pe = &h->pe[i];
	softnic_srq_attr sa = { .log_wqe_cnt = 1, .max_sge = 1 }; /* writes take no receive */
	softnic_qp_attr da = { .log_sq_bb = h->c.log_sq_bb, .flags = SOFTNIC_QP_DCI };
	softnic_qp_attr ta = { .log_sq_bb = 1, .flags = SOFTNIC_QP_DCT, .dc_key = HX_DC_KEY };

	pe->dci_cq = softnic_cq_create(h->nic, h->c.log_sq_bb);
	pe->dct_rcq = softnic_cq_create(h->nic, 1);
	pe->dct_srq = softnic_srq_create(pe->pd, &sa);
	if (!pe->dci_cq || !pe->dct_rcq || !pe->dct_srq)
		return errno ? errno : ENOMEM;
	da.send_cq = pe->dci_cq;
	ta.recv_cq = pe->dct_rcq;
	ta.srq = pe->dct_srq;
	pe->dci = softnic_qp_create(pe->pd, &da);
	pe->dct = pe->dci ? softnic_qp_create(pe->pd, &ta) : NULL;
	if (!pe->dct)
		return errno ? errno : ENOMEM;
	return softnic_qp_view(pe->dci, &pe->dci_sq, &pe->dci_cqv);
}

static void dc_avs(hx *h)
{
	static const uint8_t zero[16];

	for (int i = 0; i < 2; i++) {
		uint32_t dctn = softnic_qp_num(h->pe[1 - i].dct);

		memset(h->pe[i].peer_av, 0, sizeof(h->pe[i].peer_av));
		gic_set_av_compact(&h->pe[i].peer_av[0], HX_DC_KEY, dctn, 0, 0);
		gic_set_av_full(&h->pe[i].peer_av[1], HX_DC_KEY, dctn, 0, 0, zero, 0, 64, 0, zero);
	}
}

int hx_open(hx **out, const hx_cfg *c)
{
	softnic_attr na = { .engine_threads = c->engine_threads };
	hx *h = calloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	if (!h)
		return ENOMEM;
	h->c = *c;
	h->nic = softnic_open(&na);
	if (!h->nic) {
		rc = errno;
		fprintf(stderr, "gic %s: softnic_open: %s\n", c->who, strerror(rc));
		free(h);
		return rc;
	}
	rc = pe_open(h, 0);
	if (!rc)
		rc = pe_open(h, 1);
	if (!rc)
		rc = connect_all(h);
	for (int i = 0; i < 2 && !rc && c->dc; i++)
		rc = dc_open(h, i);
	if (!rc && c->dc)
		dc_avs(h);
	if (rc) {
		fprintf(stderr, "gic %s: softnic setup: %s (%s)\n", c->who, strerror(rc),
			softnic_last_error(h->nic));
		hx_close(h);
		return rc;
	}
	*out = h;
	return 0;
}

void hx_close(hx *h)
{
	if (!h)
		return;
	softnic_close(h->nic); /* frees the objects still allocated */
	for (int i = 0; i < 2; i++) {
		free(h->pe[i].src);
		free(h->pe[i].dst);
	}
	free(h);
}

/* ------------------------------------------------------------------ */
/* Posting. */

/* After a WQE of nbb BBs at pos: its signaled mark, the doorbell when
 * ring, and its end in *end (when end). 0. */
static int post_done(gic_sq *sq, uint64_t pos, uint32_t nbb, int signaled, int ring, int order,
		     uint64_t *end)
{
	if (signaled)
		gic_sq_note_signaled(sq, pos + nbb, 0);
	if (ring)
		gic_sq_publish_excl(sq, order);
	if (end)
		*end = pos + nbb;
	return 0;
}

int hx_write(hx *h, int pe, int q, size_t dst_off, const void *data, size_t src_off,
	     size_t len, int pointer, int signaled, int ring, int order, uint64_t deadline,
	     uint64_t *end)
{
	gic_sq *sq = &h->pe[pe].sq[q];
	const hx_pe *peer = &h->pe[1 - pe];
	uint64_t raddr = (uint64_t)(uintptr_t)(peer->dst + dst_off), pos;
	uint8_t ce = signaled ? GIC_CTRL_CQ_UPDATE : 0;
	uint32_t nbb = pointer ? 1 : gic_bb_for_ds(gic_ds_inline_write((uint32_t)len));
	int rc = gic_sq_reserve_excl(sq, nbb, &pos, order, deadline);

	if (rc)
		return rc;
	if (pointer)
		gic_wqe_write(sq, pos, GIC_OPCODE_RDMA_WRITE, raddr, peer->dst_rkey,
			      (uint64_t)(uintptr_t)(h->pe[pe].src + src_off), h->pe[pe].src_lkey,
			      (uint32_t)len, ce, 0);
	else
		gic_wqe_write_inline(sq, pos, raddr, peer->dst_rkey, data, (uint32_t)len, ce);
	return post_done(sq, pos, nbb, signaled, ring, order, end);
}

int hx_write_dc(hx *h, int pe, size_t dst_off, uint64_t value, int full, int signaled,
		int ring, int order, uint64_t deadline, uint64_t *end)
{
	hx_pe *p = &h->pe[pe];
	gic_sq *sq = &p->dci_sq;
	uint64_t raddr = (uint64_t)(uintptr_t)(h->pe[1 - pe].dst + dst_off), pos;
	uint8_t ce = signaled ? GIC_CTRL_CQ_UPDATE : 0;
	uint32_t nbb = full ? 2 : 1;
	int rc = gic_sq_reserve_excl(sq, nbb, &pos, order, deadline);

	if (rc)
		return rc;
	if (full)
		gic_wqe_dc_write_inline_u64_full(sq, pos, &p->peer_av[1], raddr,
						 h->pe[1 - pe].dst_rkey, value, ce);
	else
		gic_wqe_dc_write_inline_u64(sq, pos, &p->peer_av[0], raddr, h->pe[1 - pe].dst_rkey,
					    value, ce);
	return post_done(sq, pos, nbb, signaled, ring, order, end);
}

int hx_fail(hx *h, int pe, int q, const char *what, int rc)
{
	softnic_qp *qp = q == HX_DCI ? h->pe[pe].dci : h->pe[pe].qp[q];
	const gic_sq *sq = q == HX_DCI ? &h->pe[pe].dci_sq : &h->pe[pe].sq[q];
	const char *qe = softnic_qp_error(qp);

	if (q == HX_DCI)
		fprintf(stderr, "gic %s: %s (PE%d DCI): ", h->c.who, what, pe);
	else
		fprintf(stderr, "gic %s: %s (PE%d QP %d): ", h->c.who, what, pe, q);
	fprintf(stderr, "%s%s%s\n", rc == ETIMEDOUT ? "no progress within the time limit"
						    : strerror(rc), qe[0] ? "; qp error: " : "", qe);
	if (rc == EIO)
		fprintf(stderr, "  error CQE: %s\n", gic_syndrome_name(sq->err_info.syndrome));
	return rc;
}

/* ------------------------------------------------------------------ */
/* mini-proxy. */

int hxp_open(hxp *x, hx *h, const hxp_cfg *c)
{
	hx_pe *src = &h->pe[c->from], *dst = &h->pe[1 - c->from];
	gic_proxy_attr a = {
		.nic = h->nic, .local_pd = src->pd, .target_pd = dst->pd,
		.workers = c->workers, .rings = c->rings, .batch = c->batch,
		.protocol = c->protocol,
		.counter_kind = c->counter_gpu ? GIC_PROXY_COUNTER_GPU : GIC_PROXY_COUNTER_HOST,
		.log_ring_slots = c->log_slots, .first_cpu = -1, .warmup_ms = c->warm_ms,
		.idle_ms = c->idle_ms, .inflight = c->inflight,
		.idle_sleep_ns = 1000, /* shared cores (CI): sleep after empty polls */
		.dst_addr = (uint64_t)(uintptr_t)dst->dst, .dst_rkey = dst->dst_rkey,
		.src_addr = (uint64_t)(uintptr_t)src->src, .src_lkey = src->src_lkey,
		.counter_cnt = 64,
	};
	int rc;

	memset(x, 0, sizeof(*x));
	x->rings = c->rings;
	x->counters = aligned_alloc(64, 64 * sizeof(uint64_t));
	if (!x->counters)
		return ENOMEM;
	memset(x->counters, 0, 64 * sizeof(uint64_t));
	x->ctr_mr = softnic_reg_mr(src->pd, x->counters, 64 * sizeof(uint64_t),
				   SOFTNIC_ACCESS_REMOTE_ATOMIC | SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!x->ctr_mr)
		return errno;
	a.counters = x->counters;
	a.counter_rkey = softnic_mr_rkey(x->ctr_mr);
	x->p = gic_proxy_create(&a);
	if (!x->p) {
		rc = errno;
		fprintf(stderr, "gic %s: proxy: %s (%s)\n", h->c.who, strerror(rc),
			softnic_last_error(h->nic));
		return rc;
	}
	for (int r = 0; r < c->rings; r++)
		gic_proxy_ring_view(x->p, r, &x->views[r]);
	rc = gic_proxy_start(x->p);
	if (rc)
		fprintf(stderr, "gic %s: proxy start: %s (%s)\n", h->c.who, strerror(rc),
			gic_proxy_error(x->p));
	return rc;
}

void hxp_close(hxp *x)
{
	gic_proxy_destroy(x->p);
	if (x->ctr_mr)
		softnic_dereg_mr(x->ctr_mr);
	free(x->counters);
	memset(x, 0, sizeof(*x));
}

int hxp_put_u64(hxp *x, int r, size_t dst_off, uint64_t value, uint32_t c, uint64_t deadline)
{
	gic_proxy_desc d;
	int rc = gic_proxy_desc_inline(&d, dst_off, value, 8, c);

	return rc ? rc : gic_proxy_enqueue(&x->views[r], &d, deadline, NULL);
}

int hxp_fail(hxp *x, const char *who, const char *what, int rc)
{
	fprintf(stderr, "gic %s: %s: %s; proxy: %s\n", who, what,
		rc == ETIMEDOUT ? "no progress within the time limit" : strerror(rc),
		x->p ? gic_proxy_error(x->p) : "");
	return rc;
}
