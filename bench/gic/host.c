/*
 * bench/gic/host.c - the host modes' fixture (host.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#ifdef GIC_HAVE_MLX5
#include "gic/mlx5_provider.h"
#endif

uint64_t hx_deadline(void)
{
	return gic_now_ns() + HX_WAIT_NS;
}

uint64_t hx_value(uint64_t s, uint64_t i)
{
	/* Every bit of the seed counts (a shift would drop its high bits, and
	 * with them, say, the order a one-way row's seed carries). */
	uint64_t v = gic_mix64(gic_mix64(s ^ 0x9e3779b97f4a7c15ull) ^ i);

	return v ? v : 1;
}

void hx_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	for (size_t off = 0; off < len; off += 8) {
		uint64_t w = hx_value(seed, off);

		memcpy(buf + off, &w, len - off < 8 ? len - off : 8);
	}
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

/* Waits (bounded) until *word equals value (equal 1) or differs from it
 * (equal 0); the value seen into *now. 0 or ETIMEDOUT. */
static int wait_word(const uint64_t *word, uint64_t value, int equal, uint64_t deadline,
		     uint64_t *now)
{
	for (uint32_t spins = 1;; spins++) {
		uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);

		if ((v == value) == equal) {
			*now = v;
			return 0;
		}
		if ((spins & 255) == 0) {
			if (gic_now_ns() > deadline)
				return ETIMEDOUT;
			sched_yield();
		}
		gic_cpu_relax();
	}
}

int hx_wait_u64(const uint64_t *word, uint64_t want, uint64_t deadline)
{
	uint64_t seen;

	return wait_word(word, want, 1, deadline, &seen);
}

int hx_wait_u64_change(const uint64_t *word, uint64_t old, uint64_t deadline, uint64_t *now)
{
	return wait_word(word, old, 0, deadline, now);
}

/* ------------------------------------------------------------------ */
/* Providers. */

static const char *const prov_names[] = { "softnic", "mlx5" };

gic_nic *hx_nic_open(const char *who, int which, const char *name, gic_nic *share,
		     int engine_threads)
{
	gic_nic_attr a = { .device = name, .queues = GIC_QUEUES_HOST,
			   .engine_threads = engine_threads, .share = share };
	const gic_provider *p = &gic_provider_softnic;
	char err[GIC_NIC_ERR_LEN] = "";
	gic_nic *n;

	if (which == GIC_PROV_MLX5) {
#ifdef GIC_HAVE_MLX5
		p = &gic_provider_mlx5;
		a.share = NULL; /* every mlx5 PE is a context of its own */
#else
		fprintf(stderr, "gic %s: --provider mlx5: this gic was built without the mlx5 "
			"provider (rdma-core's libibverbs, libmlx5 and infiniband/mlx5dv.h were "
			"not found at build time)\n", who);
		errno = ENOTSUP;
		return NULL;
#endif
	}
	errno = 0;
	n = gic_nic_open(p, &a, err, sizeof(err));
	if (!n) {
		int rc = errno ? errno : ENODEV;

		fprintf(stderr, "gic %s: %s provider: %s\n", who, prov_names[which],
			err[0] ? err : strerror(rc));
		errno = rc;
	}
	return n;
}

int hx_nic_describe(const gic_opts *o, char *out, size_t len)
{
	gic_nic *n = hx_nic_open("run", o->provider, o->nic, NULL, 1);

	if (!n)
		return errno;
	snprintf(out, len, "%s", gic_nic_describe(n));
#ifdef GIC_HAVE_MLX5
	if (o->provider == GIC_PROV_MLX5)
		gic_set_mlx5_transport(((gic_mlx5 *)n)->emulated ? "mlx5-emulated" : "mlx5");
#endif
	gic_nic_close(n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Setup. */

/* A CQ and a QP of type on pe's NIC (2^log_bb BBs, as many CQEs). */
static int qp_make(hx_pe *pe, int type, int log_bb, gic_nic_cq **cq, gic_nic_qp **qp)
{
	gic_qp_attr qa = { .log_sq_bb = log_bb, .type = type };

	*cq = gic_nic_cq_create(pe->nic, log_bb);
	qa.send_cq = *cq;
	*qp = *cq ? gic_nic_qp_create(pe->nic, &qa) : NULL;
	return *qp ? 0 : errno ? errno : ENOMEM;
}

static int pe_open(hx *h, int i)
{
	hx_pe *pe = &h->pe[i];
	int rc = 0;

	pe->nic = hx_nic_open(h->c.who, h->c.provider, h->c.nic, i ? h->pe[0].nic : NULL,
			      h->c.engine_threads);
	if (!pe->nic)
		return errno;
	for (int q = 0; q < h->c.qps && !rc; q++)
		rc = qp_make(pe, GIC_QP_RC, h->c.log_sq_bb, &pe->cq[q], &pe->qp[q]);
	if (rc)
		return rc;
	pe->src = calloc(1, h->c.region);
	pe->dst = calloc(1, h->c.region);
	if (!pe->src || !pe->dst)
		return ENOMEM;
	pe->src_mr = gic_nic_reg_mr(pe->nic, pe->src, h->c.region, GIC_ACCESS_LOCAL_WRITE);
	pe->dst_mr = gic_nic_reg_mr(pe->nic, pe->dst, h->c.region,
				    GIC_ACCESS_REMOTE_WRITE | GIC_ACCESS_LOCAL_WRITE);
	if (!pe->src_mr || !pe->dst_mr)
		return errno ? errno : ENOMEM;
	pe->dst_rkey = pe->dst_mr->rkey;
	pe->src_lkey = pe->src_mr->lkey;
	return 0;
}

/* QP q of both PEs: records exchanged, each side connected, host views. */
static int connect_all(hx *h)
{
	for (int q = 0; q < h->c.qps; q++) {
		gic_conn_info rec[2];
		int rc = gic_nic_qp_local(h->pe[0].qp[q], &rec[0]);

		if (!rc)
			rc = gic_nic_qp_local(h->pe[1].qp[q], &rec[1]);
		for (int i = 0; !rc && i < 2; i++)
			rc = gic_nic_qp_connect(h->pe[i].qp[q], &rec[i], &rec[1 - i]);
		for (int i = 0; !rc && i < 2; i++)
			rc = gic_nic_qp_view(h->pe[i].qp[q], GIC_VIEW_HOST, &h->pe[i].sq[q],
					     &h->pe[i].cqv[q]);
		if (rc)
			return rc;
	}
	return 0;
}

/* PE i's DCI and DCT (hx_cfg.dc); the AVs after both PEs have theirs. */
static int dc_open(hx *h, int i)
{
	hx_pe *pe = &h->pe[i];
	int rc = qp_make(pe, GIC_QP_DCI, h->c.log_sq_bb, &pe->dci_cq, &pe->dci);

	if (!rc)
		rc = qp_make(pe, GIC_QP_DCT, 1, &pe->dct_cq, &pe->dct);
	return rc ? rc : gic_nic_qp_view(pe->dci, GIC_VIEW_HOST, &pe->dci_sq, &pe->dci_cqv);
}

/* Each PE's address vectors of the peer's DCT: the full form must be
 * made; the compact one may be refused (its rows then fail with why). */
static int dc_avs(hx *h)
{
	for (int i = 0; i < 2; i++) {
		hx_pe *pe = &h->pe[i];
		gic_conn_info dct;
		int rc = gic_nic_qp_local(h->pe[1 - i].dct, &dct);

		for (int full = 1; !rc && full >= 0; full--)
			pe->peer_av_rc[full] = gic_nic_dc_av(pe->nic, &dct, full, &pe->peer_av[full]);
		if (rc || pe->peer_av_rc[1])
			return rc ? rc : pe->peer_av_rc[1];
	}
	return 0;
}

int hx_open(hx **out, const hx_cfg *c)
{
	hx *h = calloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	if (!h)
		return ENOMEM;
	h->c = *c;
	rc = pe_open(h, 0);
	if (!rc)
		rc = pe_open(h, 1);
	if (!rc)
		rc = connect_all(h);
	for (int i = 0; i < 2 && !rc && c->dc; i++)
		rc = dc_open(h, i);
	if (!rc && c->dc)
		rc = dc_avs(h);
	if (rc) {
		if (h->pe[0].nic)
			fprintf(stderr, "gic %s: %s setup: %s (PE0: %s; PE1: %s)\n", c->who,
				prov_names[c->provider], strerror(rc), gic_nic_error(h->pe[0].nic),
				h->pe[1].nic ? gic_nic_error(h->pe[1].nic) : "not open");
		hx_close(h);
		return rc;
	}
	*out = h;
	return 0;
}

int hx_swap_records(hx_swap_fn swap, void *arg, const char *who, int rank,
		    const gic_conn_info *local, gic_conn_info *remote, int n)
{
	enum { CHUNK_BYTES = HX_SWAP_CHUNK * GIC_CONN_WIRE_BYTES };
	uint8_t mine[CHUNK_BYTES], theirs[CHUNK_BYTES];
	int rc = n >= 1 && swap ? 0 : EINVAL;

	for (int first = 0; first < n && !rc; first += HX_SWAP_CHUNK) {
		int k = n - first < HX_SWAP_CHUNK ? n - first : HX_SWAP_CHUNK;

		for (int q = 0; q < k && !rc; q++)
			rc = gic_conn_pack(&local[first + q], mine + (size_t)q * GIC_CONN_WIRE_BYTES,
					   GIC_CONN_WIRE_BYTES);
		if (!rc && (rc = swap(arg, mine, theirs, (size_t)k * GIC_CONN_WIRE_BYTES)))
			return rc;
		for (int q = 0; q < k && !rc; q++) {
			const char *why = NULL;

			rc = gic_conn_unpack(theirs + (size_t)q * GIC_CONN_WIRE_BYTES,
					     GIC_CONN_WIRE_BYTES, &remote[first + q], &why);
			if (rc)
				fprintf(stderr, "gic %s: PE%d: the peer's record %d: %s\n", who,
					rank, first + q, why ? why : strerror(rc));
		}
	}
	return rc;
}

/* This PE's records (QP i's, with the destination's addr and rkey) for the
 * peer's through h->swap; each QP connected to the peer's QP i and
 * viewed, and the peer's destination noted (QP 0's record names it). */
static int proc_connect(hx *h, int rank)
{
	hx_pe *me = &h->pe[rank], *peer = &h->pe[1 - rank];
	gic_conn_info local[HX_MAX_QPS], remote[HX_MAX_QPS];
	int rc = 0;

	for (int q = 0; q < h->c.qps && !rc; q++) {
		rc = gic_nic_qp_local(me->qp[q], &local[q]);
		local[q].addr = (uint64_t)(uintptr_t)me->dst;
		local[q].rkey = me->dst_rkey;
	}
	if (!rc)
		rc = hx_swap_records(h->swap, h->swap_arg, h->c.who, rank, local, remote, h->c.qps);
	if (!rc) {
		peer->dst = (uint8_t *)(uintptr_t)remote[0].addr;
		peer->dst_rkey = remote[0].rkey;
	}
	for (int q = 0; q < h->c.qps && !rc; q++) {
		rc = gic_nic_qp_connect(me->qp[q], &local[q], &remote[q]);
		if (!rc)
			rc = gic_nic_qp_view(me->qp[q], GIC_VIEW_HOST, &me->sq[q], &me->cqv[q]);
	}
	return rc;
}

int hx_open_proc(hx **out, const hx_cfg *c, int rank, hx_swap_fn swap, void *arg)
{
	hx *h = calloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	if (!h)
		return ENOMEM;
	if (c->dc || rank < 0 || rank > 1) {
		free(h);
		return EINVAL;
	}
	h->c = *c;
	h->pe[1 - rank].remote = 1;
	h->swap = swap;
	h->swap_arg = arg;
	rc = pe_open(h, rank);
	if (!rc)
		rc = proc_connect(h, rank);
	if (rc) {
		fprintf(stderr, "gic %s: %s setup of PE%d: %s%s%s\n", c->who, prov_names[c->provider],
			rank, strerror(rc), h->pe[rank].nic ? "; " : "",
			h->pe[rank].nic ? gic_nic_error(h->pe[rank].nic) : "");
		hx_close(h);
		return rc;
	}
	*out = h;
	return 0;
}

/* Frees PE pe's objects, QPs before their CQs, then its NIC. */
static void pe_close(hx_pe *pe, int qps)
{
	gic_nic_qp_destroy(pe->dci);
	gic_nic_qp_destroy(pe->dct);
	gic_nic_cq_destroy(pe->dci_cq);
	gic_nic_cq_destroy(pe->dct_cq);
	for (int q = 0; q < qps; q++) {
		gic_nic_qp_destroy(pe->qp[q]);
		gic_nic_cq_destroy(pe->cq[q]);
	}
	gic_nic_dereg_mr(pe->src_mr);
	gic_nic_dereg_mr(pe->dst_mr);
	free(pe->src);
	free(pe->dst);
}

void hx_close(hx *h)
{
	if (!h)
		return;
	for (int i = 0; i < 2; i++)
		if (!h->pe[i].remote) /* the peer process's: nothing of it here */
			pe_close(&h->pe[i], h->c.qps);
	/* PE1 first: a softnic PE1 shares PE0's softnic. */
	gic_nic_close(h->pe[1].nic);
	gic_nic_close(h->pe[0].nic);
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
	int rc = p->peer_av_rc[full] ? p->peer_av_rc[full]
				     : gic_sq_reserve_excl(sq, nbb, &pos, order, deadline);

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
	gic_nic_qp *qp = q == HX_DCI ? h->pe[pe].dci : h->pe[pe].qp[q];
	const gic_sq *sq = q == HX_DCI ? &h->pe[pe].dci_sq : &h->pe[pe].sq[q];
	const char *qe = gic_nic_qp_error(qp);

	if (q == HX_DCI)
		fprintf(stderr, "gic %s: %s (PE%d DCI): ", h->c.who, what, pe);
	else
		fprintf(stderr, "gic %s: %s (PE%d QP %d): ", h->c.who, what, pe, q);
	fprintf(stderr, "%s%s%s\n", rc == ETIMEDOUT ? "no progress within the time limit"
						    : strerror(rc), qe[0] ? "; qp error: " : "", qe);
	if (rc == EIO)
		fprintf(stderr, "  error CQE: %s\n", gic_syndrome_name(sq->err_info.syndrome));
	if (gic_nic_error(h->pe[pe].nic)[0])
		fprintf(stderr, "  %s provider: %s\n", prov_names[h->c.provider],
			gic_nic_error(h->pe[pe].nic));
	return rc;
}

/* ------------------------------------------------------------------ */
/* mini-proxy. */

/* The target's process of a pair: a QP (and its CQ) per worker of the
 * producers' proxy, its record swapped for the worker's and connected. */
static int hxp_open_target(hxp *x, hx *h, const hxp_cfg *c)
{
	int me = 1 - c->from, rc = 0;
	gic_conn_info local[GIC_PROXY_MAX_WORKERS], remote[GIC_PROXY_MAX_WORKERS];
	gic_qp_attr qa = { .log_sq_bb = 6, .type = GIC_QP_RC };

	for (int w = 0; w < c->workers && !rc; w++) {
		x->peer_cq[w] = gic_nic_cq_create(h->pe[me].nic, 6);
		qa.send_cq = x->peer_cq[w];
		x->peer_qp[w] = qa.send_cq ? gic_nic_qp_create(h->pe[me].nic, &qa) : NULL;
		x->npeers = w + 1;
		rc = x->peer_qp[w] ? gic_nic_qp_local(x->peer_qp[w], &local[w])
				   : errno ? errno : ENOMEM;
	}
	if (!rc)
		rc = hx_swap_records(h->swap, h->swap_arg, h->c.who, me, local, remote, c->workers);
	for (int w = 0; w < c->workers && !rc; w++)
		rc = gic_nic_qp_connect(x->peer_qp[w], &local[w], &remote[w]);
	if (rc)
		fprintf(stderr, "gic %s: PE%d: the mini-proxy's QPs at its target: %s (%s)\n",
			h->c.who, me, strerror(rc), gic_nic_error(h->pe[me].nic));
	return rc;
}

/* The producers' process of a pair: each worker's QP record swapped for
 * the one the target's process made, and connected. */
static int hxp_join(hxp *x, hx *h, const hxp_cfg *c)
{
	gic_conn_info local[GIC_PROXY_MAX_WORKERS], remote[GIC_PROXY_MAX_WORKERS];
	int rc = 0;

	for (int w = 0; w < c->workers && !rc; w++)
		rc = gic_proxy_qp_local(x->p, w, &local[w]);
	if (!rc)
		rc = hx_swap_records(h->swap, h->swap_arg, h->c.who, c->from, local, remote,
				     c->workers);
	for (int w = 0; w < c->workers && !rc; w++)
		rc = gic_proxy_qp_connect(x->p, w, &remote[w]);
	if (rc)
		fprintf(stderr, "gic %s: proxy connect: %s (%s)\n", h->c.who, strerror(rc),
			gic_proxy_error(x->p));
	return rc;
}

int hxp_open(hxp *x, hx *h, const hxp_cfg *c)
{
	hx_pe *src = &h->pe[c->from], *dst = &h->pe[1 - c->from];
	gic_proxy_attr a = {
		.local = src->nic, .target = dst->nic, .target_remote = dst->remote,
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
	if (src->remote)
		return hxp_open_target(x, h, c);
	x->counters = aligned_alloc(64, 64 * sizeof(uint64_t));
	if (!x->counters)
		return ENOMEM;
	memset(x->counters, 0, 64 * sizeof(uint64_t));
	x->ctr_mr = gic_nic_reg_mr(src->nic, x->counters, 64 * sizeof(uint64_t),
				   GIC_ACCESS_REMOTE_ATOMIC | GIC_ACCESS_LOCAL_WRITE);
	if (!x->ctr_mr) {
		rc = errno ? errno : ENOMEM;
		fprintf(stderr, "gic %s: proxy counters: %s (%s)\n", h->c.who, strerror(rc),
			gic_nic_error(src->nic));
		return rc;
	}
	a.counters = x->counters;
	a.counter_rkey = x->ctr_mr->rkey;
	x->p = gic_proxy_create(&a);
	if (!x->p) {
		rc = errno;
		fprintf(stderr, "gic %s: proxy: %s (%s)\n", h->c.who, strerror(rc),
			gic_proxy_create_error());
		return rc;
	}
	for (int r = 0; r < c->rings; r++)
		gic_proxy_ring_view(x->p, r, &x->views[r]);
	if (dst->remote && (rc = hxp_join(x, h, c)))
		return rc;
	rc = gic_proxy_start(x->p);
	if (rc)
		fprintf(stderr, "gic %s: proxy start: %s (%s)\n", h->c.who, strerror(rc),
			gic_proxy_error(x->p));
	return rc;
}

void hxp_close(hxp *x)
{
	gic_proxy_destroy(x->p);
	gic_nic_dereg_mr(x->ctr_mr);
	free(x->counters);
	for (int w = 0; w < x->npeers; w++) { /* QPs before their CQs */
		gic_nic_qp_destroy(x->peer_qp[w]);
		gic_nic_cq_destroy(x->peer_cq[w]);
	}
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
