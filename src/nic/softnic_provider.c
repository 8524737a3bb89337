/*
 * The softnic provider: gic/provider.h over gic/softnic.h.
 *
 * Each gic_nic is one PE: a protection domain on a softnic that it opened
 * or shares with other PEs (attr.share). softnic connects two QPs of one
 * softnic in one call, so the PEs that share it keep a registry of their
 * QPs: the first side to connect links both, the second finds the link
 * made. softnic's object calls are not thread-safe, so every call that
 * creates, destroys or connects takes the shared lock.
 *
 * The host post path uses gic/post.h on the QP's host view (exclusive
 * owner), with the ring state advanced by gic_nic_poll() on its CQ.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/provider.h"
#include "gic/softnic.h"

typedef struct snp_qp snp_qp;

/* What PEs sharing one softnic share. */
typedef struct snp_host {
	softnic *nic;
	int owned;   /* 1: opened here and closed with the last PE (0: wrapped) */
	int engine_threads;
	pthread_mutex_t lock;
	int refs;
	snp_qp *qps; /* every PE's QPs, for connecting by number */
} snp_host;

typedef struct snp_nic {
	gic_nic base;
	snp_host *host;
	softnic_pd *pd;
	int pd_owned; /* 0: the caller's (gic_softnic_pe_wrap) */
	char desc[96];
} snp_nic;

typedef struct snp_mr {
	gic_nic_mr base;
	softnic_mr *mr;
} snp_mr;

typedef struct snp_cq {
	gic_nic_cq base;
	softnic_cq *cq;
	snp_qp *qp; /* the QP whose send CQ this is */
} snp_cq;

struct snp_qp {
	gic_nic_qp base;
	softnic_qp *qp;
	softnic_srq *srq; /* a DCT's (writes and atomics take no receive WQE) */
	snp_cq *cq;
	gic_sq sq;      /* host view: the host post path's producer state */
	gic_cq cqv;
	uint64_t *wr_id;/* per BB slot: wr_id of the signaled WQE starting there */
	uint32_t peer;  /* qpn connected to, 0 when none */
	int connected;
	snp_qp *next;
};

static void say(gic_nic *nic, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(gic_nic *nic, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(nic->err, sizeof(nic->err), fmt, ap);
	va_end(ap);
}

static snp_nic *nic_of(gic_nic *n)
{
	return (snp_nic *)n;
}

static gic_nic *snp_open(const gic_nic_attr *attr, char *err, size_t errlen);
static void snp_close(gic_nic *n);

static snp_host *host_new(const gic_nic_attr *attr, char *err, size_t errlen)
{
	softnic_attr sa = { .engine_threads = 1 };
	snp_host *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (attr) {
		sa.engine_threads = attr->engine_threads > 0 ? attr->engine_threads : 1;
		sa.strict = attr->strict;
	}
	h->nic = softnic_open(&sa);
	if (!h->nic) {
		int rc = errno;

		if (err && errlen)
			snprintf(err, errlen, "softnic_open: %s", strerror(rc));
		free(h);
		errno = rc;
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->refs = 1;
	h->owned = 1;
	h->engine_threads = sa.engine_threads;
	return h;
}

static void host_put(snp_host *h)
{
	int last;

	pthread_mutex_lock(&h->lock);
	last = --h->refs == 0;
	pthread_mutex_unlock(&h->lock);
	if (!last)
		return;
	if (h->owned)
		softnic_close(h->nic);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static gic_nic *snp_open(const gic_nic_attr *attr, char *err, size_t errlen)
{
	snp_nic *n = calloc(1, sizeof(*n));
	snp_host *h;
	int rc;

	if (!n) {
		errno = ENOMEM;
		return NULL;
	}
	n->base.ops = &gic_provider_softnic;
	if (attr && attr->share) {
		if (attr->share->ops != &gic_provider_softnic) {
			if (err && errlen)
				snprintf(err, errlen, "softnic open: attr.share is a %s nic, "
					 "not a softnic one", attr->share->ops->name);
			free(n);
			errno = EINVAL;
			return NULL;
		}
		h = nic_of(attr->share)->host;
		pthread_mutex_lock(&h->lock);
		h->refs++;
		pthread_mutex_unlock(&h->lock);
	} else {
		h = host_new(attr, err, errlen);
		if (!h) {
			rc = errno;
			free(n);
			errno = rc;
			return NULL;
		}
	}
	n->host = h;
	n->pd_owned = 1;
	pthread_mutex_lock(&h->lock);
	n->pd = softnic_pd_alloc(h->nic);
	rc = n->pd ? 0 : errno;
	if (rc && err && errlen)
		snprintf(err, errlen, "softnic_pd_alloc: %s (%s)", strerror(rc),
			 softnic_last_error(h->nic));
	pthread_mutex_unlock(&h->lock);
	if (rc) {
		host_put(h);
		free(n);
		errno = rc;
		return NULL;
	}
	return &n->base;
}

static void snp_close(gic_nic *g)
{
	snp_nic *n = nic_of(g);

	if (!n)
		return;
	pthread_mutex_lock(&n->host->lock);
	if (n->pd && n->pd_owned && softnic_pd_free(n->pd))
		say(g, "softnic_pd_free: objects of this PE are still allocated");
	pthread_mutex_unlock(&n->host->lock);
	host_put(n->host);
	free(n);
}

static gic_nic_mr *snp_reg_mr(gic_nic *g, void *addr, size_t len, int access)
{
	snp_nic *n = nic_of(g);
	snp_mr *m = calloc(1, sizeof(*m));
	int rc;

	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&n->host->lock);
	m->mr = softnic_reg_mr(n->pd, addr, len, access);
	rc = m->mr ? 0 : errno;
	if (rc)
		say(g, "softnic_reg_mr(%p, %zu): %s (%s)", addr, len, strerror(rc),
		    softnic_last_error(n->host->nic));
	pthread_mutex_unlock(&n->host->lock);
	if (rc) {
		free(m);
		errno = rc;
		return NULL;
	}
	m->base = (gic_nic_mr){ .nic = g, .addr = addr, .len = len,
				.lkey = softnic_mr_lkey(m->mr), .rkey = softnic_mr_rkey(m->mr) };
	return &m->base;
}

static int snp_dereg_mr(gic_nic_mr *gm)
{
	snp_mr *m = (snp_mr *)gm;
	snp_nic *n = nic_of(gm->nic);
	int rc;

	pthread_mutex_lock(&n->host->lock);
	rc = softnic_dereg_mr(m->mr);
	pthread_mutex_unlock(&n->host->lock);
	if (rc) {
		say(gm->nic, "softnic_dereg_mr: %s", strerror(rc));
		return rc;
	}
	free(m);
	return 0;
}

static gic_nic_cq *snp_cq_create(gic_nic *g, int log_cqe_cnt)
{
	snp_nic *n = nic_of(g);
	snp_cq *c = calloc(1, sizeof(*c));
	int rc;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&n->host->lock);
	c->cq = softnic_cq_create(n->host->nic, log_cqe_cnt);
	rc = c->cq ? 0 : errno;
	if (rc)
		say(g, "softnic_cq_create(2^%d CQEs): %s (%s)", log_cqe_cnt, strerror(rc),
		    softnic_last_error(n->host->nic));
	pthread_mutex_unlock(&n->host->lock);
	if (rc) {
		free(c);
		errno = rc;
		return NULL;
	}
	c->base = (gic_nic_cq){ .nic = g, .cqe_cnt = 1u << log_cqe_cnt };
	return &c->base;
}

static int snp_cq_destroy(gic_nic_cq *gc)
{
	snp_cq *c = (snp_cq *)gc;
	snp_nic *n = nic_of(gc->nic);
	int rc;

	if (c->qp) {
		say(gc->nic, "cq_destroy: QP 0x%x still uses this CQ", c->qp->base.qpn);
		return EBUSY;
	}
	pthread_mutex_lock(&n->host->lock);
	rc = softnic_cq_destroy(c->cq);
	pthread_mutex_unlock(&n->host->lock);
	if (rc) {
		say(gc->nic, "softnic_cq_destroy: %s", strerror(rc));
		return rc;
	}
	free(c);
	return 0;
}

/* Unlinks q from the PEs' registry (lock held). */
static void registry_drop(snp_host *h, snp_qp *q)
{
	for (snp_qp **pp = &h->qps; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			return;
		}
}

/* softnic's QP of attr's type on n (lock held): 0 or errno after say(). A
 * DCT gets an SRQ of its own (writes and atomics take no receive WQE). */
static int make_qp(snp_nic *n, snp_qp *q, const gic_qp_attr *attr)
{
	softnic_srq_attr sa = { .log_wqe_cnt = 1, .max_sge = 1 };
	softnic_qp_attr qa = { .log_sq_bb = attr->log_sq_bb ? attr->log_sq_bb : 10 };
	static const char *const kind[] = { "RC QP", "DCI", "DCT" };
	int rc = 0;

	if (attr->type == GIC_QP_DCT) {
		q->srq = softnic_srq_create(n->pd, &sa);
		if (!q->srq) {
			rc = errno;
			say(&n->base, "softnic_srq_create (for a DCT): %s (%s)", strerror(rc),
			    softnic_last_error(n->host->nic));
			return rc;
		}
		qa = (softnic_qp_attr){ .log_sq_bb = 1, .flags = SOFTNIC_QP_DCT, .dc_key = GIC_DC_KEY,
					.recv_cq = q->cq->cq, .srq = q->srq };
	} else {
		qa.send_cq = q->cq->cq;
		qa.flags = attr->type == GIC_QP_DCI ? SOFTNIC_QP_DCI : 0;
	}
	q->qp = softnic_qp_create(n->pd, &qa);
	if (!q->qp) {
		rc = errno;
		say(&n->base, "softnic_qp_create(%s, 2^%d BBs): %s (%s)", kind[attr->type],
		    qa.log_sq_bb, strerror(rc), softnic_last_error(n->host->nic));
		if (q->srq)
			softnic_srq_destroy(q->srq);
		q->srq = NULL;
		return rc;
	}
	if (attr->type != GIC_QP_DCT)
		softnic_qp_view(q->qp, &q->sq, &q->cqv);
	q->next = n->host->qps;
	n->host->qps = q;
	return 0;
}

static gic_nic_qp *snp_qp_create(gic_nic *g, const gic_qp_attr *attr)
{
	snp_nic *n = nic_of(g);
	snp_qp *q;
	int rc = 0;

	if (!attr || !attr->send_cq || attr->send_cq->nic->ops != &gic_provider_softnic ||
	    attr->type < GIC_QP_RC || attr->type > GIC_QP_DCT) {
		say(g, "qp_create: attr with a softnic send CQ and a type GIC_QP_* is required");
		errno = EINVAL;
		return NULL;
	}
	if (((snp_cq *)attr->send_cq)->qp) {
		say(g, "qp_create: the send CQ already serves QP 0x%x (one QP per CQ)",
		    ((snp_cq *)attr->send_cq)->qp->base.qpn);
		errno = EBUSY;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	q->cq = (snp_cq *)attr->send_cq;
	pthread_mutex_lock(&n->host->lock);
	rc = make_qp(n, q, attr);
	pthread_mutex_unlock(&n->host->lock);
	if (!rc && attr->type != GIC_QP_DCT) {
		q->wr_id = calloc(q->sq.bb_cnt, sizeof(*q->wr_id));
		rc = q->wr_id ? 0 : ENOMEM;
	}
	if (rc) {
		if (q->qp) {
			pthread_mutex_lock(&n->host->lock);
			registry_drop(n->host, q);
			softnic_qp_destroy(q->qp);
			pthread_mutex_unlock(&n->host->lock);
		}
		free(q);
		errno = rc;
		return NULL;
	}
	q->cq->qp = q;
	q->base = (gic_nic_qp){ .nic = g, .qpn = softnic_qp_num(q->qp),
				.max_inline = q->sq.max_inline, .type = attr->type };
	return &q->base;
}

static int snp_qp_destroy(gic_nic_qp *gq)
{
	snp_qp *q = (snp_qp *)gq;
	snp_nic *n = nic_of(gq->nic);
	int rc;

	pthread_mutex_lock(&n->host->lock);
	rc = softnic_qp_destroy(q->qp);
	if (!rc && q->srq)
		rc = softnic_srq_destroy(q->srq);
	if (!rc) {
		registry_drop(n->host, q);
		/* A peer connected to this QP no longer has it. */
		for (snp_qp *o = n->host->qps; o; o = o->next)
			if (o->connected && o->peer == q->base.qpn)
				o->peer = 0;
	}
	pthread_mutex_unlock(&n->host->lock);
	if (rc) {
		say(gq->nic, "softnic_qp_destroy: %s", strerror(rc));
		return rc;
	}
	q->cq->qp = NULL;
	free(q->wr_id);
	free(q);
	return 0;
}

static int snp_qp_local(gic_nic_qp *gq, gic_conn_info *out)
{
	if (!out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->qpn = gq->qpn;
	out->psn = 0;
	out->port = 1;
	out->mtu = 5;
	return 0;
}

static int snp_qp_connect(gic_nic_qp *gq, const gic_conn_info *local, const gic_conn_info *remote)
{
	snp_qp *q = (snp_qp *)gq, *peer = NULL;
	snp_nic *n = nic_of(gq->nic);
	int rc = 0;

	(void)local;
	if (!remote)
		return EINVAL;
	if (gq->type != GIC_QP_RC) {
		say(gq->nic, "qp_connect: QP 0x%x is a %s: DC needs no connection (address "
			     "vectors: gic_nic_dc_av)", gq->qpn, gq->type == GIC_QP_DCI ? "DCI" : "DCT");
		return EINVAL;
	}
	pthread_mutex_lock(&n->host->lock);
	for (snp_qp *o = n->host->qps; o; o = o->next)
		if (o->base.qpn == remote->qpn)
			peer = o;
	if (!peer) {
		rc = ENOENT;
		say(gq->nic, "qp_connect: no QP 0x%x on this softnic (the peer PE must share "
			     "it: gic_nic_attr.share)", remote->qpn);
	} else if (q->connected || peer->connected) {
		/* The peer's call linked both already: that is success. */
		if (!(q->connected && q->peer == peer->base.qpn && peer->peer == q->base.qpn)) {
			rc = EISCONN;
			say(gq->nic, "qp_connect: QP 0x%x or 0x%x is connected elsewhere",
			    q->base.qpn, peer->base.qpn);
		}
	} else {
		rc = softnic_qp_connect(q->qp, peer->qp);
		if (rc) {
			say(gq->nic, "softnic_qp_connect(0x%x, 0x%x): %s (%s)", q->base.qpn,
			    peer->base.qpn, strerror(rc), softnic_last_error(n->host->nic));
		} else {
			q->connected = peer->connected = 1;
			q->peer = peer->base.qpn;
			peer->peer = q->base.qpn;
		}
	}
	pthread_mutex_unlock(&n->host->lock);
	return rc;
}

static int snp_qp_view(gic_nic_qp *gq, int where, gic_sq *sq, gic_cq *cq)
{
	snp_qp *q = (snp_qp *)gq;

	/* softnic's queues live where its allocator put them; the one view
	 * serves host and device submitters alike. */
	(void)where;
	if (!sq || !cq)
		return EINVAL;
	if (gq->type == GIC_QP_DCT) {
		say(gq->nic, "qp_view: QP 0x%x is a DCT: it has no send queue", gq->qpn);
		return EINVAL;
	}
	return softnic_qp_view(q->qp, sq, cq);
}

/* BBs one work request occupies. */
static uint32_t wr_bbs(const gic_wr *w)
{
	if (w->op == GIC_WR_WRITE && w->inline_data)
		return gic_bb_for_ds(gic_ds_inline_write(w->len));
	return 1;
}

static int wr_check(const snp_qp *q, const gic_wr *w)
{
	if (w->op > GIC_WR_ATOMIC_FA)
		return EINVAL;
	if (w->inline_data && (w->op != GIC_WR_WRITE || w->len > q->sq.max_inline))
		return EINVAL;
	return 0;
}

static int snp_post(gic_nic_qp *gq, const gic_wr *wr, int n)
{
	snp_qp *q = (snp_qp *)gq;
	gic_sq *sq = &q->sq;
	uint64_t need = 0;

	if (!wr || n < 1 || n > GIC_POST_MAX_CHAIN) {
		say(gq->nic, "post: %d work requests (1..%d)", n, GIC_POST_MAX_CHAIN);
		return EINVAL;
	}
	if (gq->type != GIC_QP_RC) {
		say(gq->nic, "post: QP 0x%x is not an RC QP (the host post path is RC's; DCIs "
			     "post through their views)", gq->qpn);
		return EINVAL;
	}
	for (int i = 0; i < n; i++) {
		if (wr_check(q, &wr[i])) {
			say(gq->nic, "post: work request %d: bad opcode %u or inline length %u "
				     "(max %u)", i, wr[i].op, wr[i].len, sq->max_inline);
			return EINVAL;
		}
		need += wr_bbs(&wr[i]);
	}
	if (sq->resv + need > sq->retired + sq->bb_cnt) {
		say(gq->nic, "post: send queue full (%llu of %u BBs outstanding): poll the CQ",
		    (unsigned long long)(sq->resv - sq->retired), sq->bb_cnt);
		return ENOBUFS;
	}
	for (int i = 0; i < n; i++) {
		const gic_wr *w = &wr[i];
		uint64_t pos = sq->resv;
		uint8_t ce = w->signaled ? GIC_CTRL_CQ_UPDATE : 0;
		uint32_t nbb;

		if (w->op == GIC_WR_ATOMIC_FA)
			nbb = gic_wqe_atomic_fa(sq, pos, w->raddr, w->rkey, w->add, w->laddr, w->lkey,
						ce);
		else if (w->inline_data)
			nbb = gic_wqe_write_inline(sq, pos, w->raddr, w->rkey,
						   (const void *)(uintptr_t)w->laddr, w->len, ce);
		else
			nbb = gic_wqe_write(sq, pos,
					    w->op == GIC_WR_WRITE_IMM ? GIC_OPCODE_RDMA_WRITE_IMM
								      : GIC_OPCODE_RDMA_WRITE,
					    w->raddr, w->rkey, w->laddr, w->lkey, w->len, ce,
					    w->imm_be);
		sq->resv += nbb;
		if (w->signaled) {
			q->wr_id[pos & (sq->bb_cnt - 1)] = w->wr_id;
			gic_sq_note_signaled(sq, sq->resv, 0);
		}
	}
	gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
	return 0;
}

static int snp_poll(gic_nic_cq *gc, gic_wc *wc, int max, int *got_out)
{
	snp_cq *c = (snp_cq *)gc;
	snp_qp *q = c->qp;
	int got = 0;

	if (!got_out)
		return EINVAL;
	*got_out = 0;
	if (!wc || max < 0)
		return EINVAL;
	if (!q)
		return 0;
	if (q->base.type == GIC_QP_DCT) {
		say(gc->nic, "poll: the CQ of DCT 0x%x (the host path takes send completions)",
		    q->base.qpn);
		return EINVAL;
	}
	while (got < max) {
		gic_cqe_info info;
		uint64_t start;
		int rc = gic_cq_poll_one(q->sq.cq, &info, GIC_ORDER_RELEASE_SYS);

		if (rc == EAGAIN)
			break;
		if (info.qpn != q->sq.qpn) {
			say(gc->nic, "poll: CQE for QP 0x%x on the CQ of QP 0x%x", info.qpn,
			    q->sq.qpn);
			*got_out = got;
			return EPROTO;
		}
		start = q->sq.retired + (uint16_t)(info.wqe_counter - (uint16_t)q->sq.retired);
		q->sq.retired = gic_sq_retired_after(&q->sq, q->sq.retired, info.wqe_counter);
		wc[got].wr_id = q->wr_id[start & (q->sq.bb_cnt - 1)];
		wc[got].qpn = info.qpn;
		wc[got].byte_len = info.byte_cnt;
		wc[got].status = info.cqe_opcode == GIC_CQE_REQ_ERR ? info.syndrome : 0;
		wc[got].vendor_syndrome = info.vendor_syndrome;
		if (wc[got].status && !q->sq.err) {
			q->sq.err = 1;
			q->sq.err_info = info;
			say(gc->nic, "QP 0x%x: %s (%s)", info.qpn, gic_syndrome_name(info.syndrome),
			    softnic_vsynd_text(info.vendor_syndrome));
		}
		got++;
	}
	*got_out = got;
	return 0;
}

static int snp_dc_av(gic_nic *g, const gic_conn_info *remote, int full, gic_av_seg *out)
{
	static const uint8_t zero[16];

	if (!remote || !out) {
		say(g, "dc_av: NULL record or output");
		return EINVAL;
	}
	/* One softnic: a DCT is reached by its number alone (no route). */
	memset(out, 0, sizeof(*out));
	if (full)
		gic_set_av_full(out, GIC_DC_KEY, remote->qpn, 0, 0, zero, 0, 64, 0, zero);
	else
		gic_set_av_compact(out, GIC_DC_KEY, remote->qpn, 0, 0);
	return 0;
}

static const char *snp_qp_error(gic_nic_qp *gq)
{
	return softnic_qp_error(((snp_qp *)gq)->qp);
}

static const char *snp_describe(gic_nic *g)
{
	snp_nic *n = nic_of(g);

	if (n->desc[0])
		return n->desc;
	if (n->host->owned)
		snprintf(n->desc, sizeof(n->desc), "softnic (CPU engine, %d %s)",
			 n->host->engine_threads, n->host->engine_threads == 1 ? "thread" : "threads");
	else
		snprintf(n->desc, sizeof(n->desc), "softnic (made by the caller)");
	return n->desc;
}

gic_nic *gic_softnic_pe_wrap(softnic *s, softnic_pd *pd, gic_nic *share)
{
	snp_nic *n;
	snp_host *h;

	if (!s || !pd || (share && (share->ops != &gic_provider_softnic ||
				    nic_of(share)->host->nic != s))) {
		errno = EINVAL;
		return NULL;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		errno = ENOMEM;
		return NULL;
	}
	if (share) {
		h = nic_of(share)->host;
		pthread_mutex_lock(&h->lock);
		h->refs++;
		pthread_mutex_unlock(&h->lock);
	} else if (!(h = calloc(1, sizeof(*h)))) {
		free(n);
		errno = ENOMEM;
		return NULL;
	} else {
		h->nic = s;
		h->refs = 1;
		pthread_mutex_init(&h->lock, NULL);
	}
	n->base.ops = &gic_provider_softnic;
	n->host = h;
	n->pd = pd;
	return &n->base;
}

const gic_provider gic_provider_softnic = {
	.name = "softnic",
	.open = snp_open,
	.close = snp_close,
	.reg_mr = snp_reg_mr,
	.dereg_mr = snp_dereg_mr,
	.cq_create = snp_cq_create,
	.cq_destroy = snp_cq_destroy,
	.qp_create = snp_qp_create,
	.qp_destroy = snp_qp_destroy,
	.qp_local = snp_qp_local,
	.qp_connect = snp_qp_connect,
	.qp_view = snp_qp_view,
	.post = snp_post,
	.poll = snp_poll,
	.dc_av = snp_dc_av,
	.qp_error = snp_qp_error,
	.describe = snp_describe,
};
