/*
 * The emulated device's RC QPs: creation with the capacities softnic can
 * give, the RESET -> INIT -> RTR -> RTS state machine (RTR connects to the
 * QP of the given number), ERR (everything outstanding
 * flushes), query and destroy. RTR reaches a QP of another process of
 * this host through softnic's wire (gic/softnic_wire.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "emu.h"
#include "gic/softnic_wire.h"

/* ------------------------------------------------------------------ */
/* The QP table: QP number -> emu_qp (the CQ poller finds a CQE's QP). */

static uint32_t slot_of(uint32_t qpn) { return (qpn * 2654435761u) % EMU_QP_TABLE; }

void emu_qp_table_add(emu_qp *q)
{
	for (uint32_t i = slot_of(q->qp.qp_num);; i = (i + 1) % EMU_QP_TABLE) {
		if (!emu.qps[i]) {
			__atomic_store_n(&emu.qps[i], q, __ATOMIC_RELEASE);
			return;
		}
	}
}

void emu_qp_table_del(emu_qp *q)
{
	for (uint32_t i = 0; i < EMU_QP_TABLE; i++)
		if (emu.qps[i] == q)
			__atomic_store_n(&emu.qps[i], NULL, __ATOMIC_RELEASE);
}

emu_qp *emu_qp_lookup(uint32_t qpn)
{
	for (uint32_t n = 0, i = slot_of(qpn); n < EMU_QP_TABLE; n++, i = (i + 1) % EMU_QP_TABLE) {
		emu_qp *q = __atomic_load_n(&emu.qps[i], __ATOMIC_ACQUIRE);

		if (q && q->qp.qp_num == qpn)
			return q;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Creation. */

/* BBs one WR of this QP may take: ctrl, raddr (or atomic's 2 segments),
 * then the larger of the SGEs and the inline payload. */
static uint32_t bb_per_wr(const struct ibv_qp_cap *cap)
{
	uint32_t data = cap->max_send_sge * 16u, in = 4u + cap->max_inline_data;

	if (in > data)
		data = in;
	if (data < 32)
		data = 32; /* an atomic's operands and result buffer */
	return (32u + data + 63u) / 64u;
}

static int check_caps(const struct ibv_qp_init_attr *a)
{
	const struct ibv_qp_cap *c = &a->cap;

	if (a->qp_type != IBV_QPT_RC) {
		emu_missing("ibv_create_qp", "only RC QPs are implemented");
		return EOPNOTSUPP;
	}
	if (!a->send_cq || !a->recv_cq || c->max_send_wr < 1 || c->max_send_wr > EMU_MAX_QP_WR ||
	    c->max_send_sge > EMU_MAX_SGE || c->max_recv_sge > EMU_MAX_SGE ||
	    c->max_inline_data > EMU_MAX_INLINE || c->max_recv_wr > (1u << 15) ||
	    (uint64_t)bb_per_wr(c) * c->max_send_wr > (1u << EMU_MAX_LOG_SQ_BB))
		return EINVAL;
	return 0;
}

static int qp_alloc_arrays(emu_qp *q)
{
	q->sq_wrid = calloc(q->sq.bb_cnt, sizeof(uint64_t));
	q->rq_wrid = q->rq.wqe_cnt ? calloc(q->rq.wqe_cnt, sizeof(uint64_t)) : NULL;
	return q->sq_wrid && (!q->rq.wqe_cnt || q->rq_wrid) ? 0 : ENOMEM;
}

/* Destroys the softnic QP, then gives its queue memory back (outside
 * emu.lock: the allocator's free may call verbs). The caller holds
 * emu.lock. */
static void qp_free_locked(emu_qp *q, emu_umem *um)
{
	if (q->s)
		softnic_qp_destroy(q->s);
	*um = q->umem;
	free(q->sq_wrid);
	free(q->rq_wrid);
	free(q);
}

static void qp_free(emu_qp *q)
{
	emu_umem um;

	pthread_mutex_lock(&emu.lock);
	qp_free_locked(q, &um);
	pthread_mutex_unlock(&emu.lock);
	emu_umem_put(&um);
}

/* The softnic attributes of a verbs QP. */
static void qp_attr_of(const struct ibv_qp_init_attr *a, softnic_qp_attr *sa)
{
	const struct ibv_qp_cap *c = &a->cap;

	memset(sa, 0, sizeof(*sa));
	sa->log_sq_bb = log2_ceil(bb_per_wr(c) * c->max_send_wr);
	if (sa->log_sq_bb < 2)
		sa->log_sq_bb = 2;
	sa->send_cq = ((emu_cq *)a->send_cq)->s;
	sa->recv_cq = ((emu_cq *)a->recv_cq)->s;
	sa->srq = a->srq ? ((emu_srq *)a->srq)->s : NULL;
	sa->log_rq_wqe = a->srq || !c->max_recv_wr ? 0 : log2_ceil(c->max_recv_wr);
	if (!a->srq && c->max_recv_wr && sa->log_rq_wqe < 1)
		sa->log_rq_wqe = 1;
	sa->rq_max_sge = c->max_recv_sge ? (int)c->max_recv_sge : 1;
	/* A ConnectX answers RNR; caller memory is initialised as softnic's. */
	sa->flags = SOFTNIC_QP_NO_IMPLICIT_RECV | SOFTNIC_MEM_INIT;
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* On a parent domain with allocators: the QP's buffer and doorbell record
 * in the allocator's memory, as rdma-core's mlx5 provider asks for them
 * (mlx5_calc_wq_size, mlx5_set_custom_qp_alignment): one buffer, the
 * receive ring first (at least one 64-byte BB), the send ring after it,
 * aligned to the larger of the strides and a 64th of the buffer's size
 * rounded to a power-of-two number of pages, its size a multiple of that
 * alignment; sa's memory fields point into it. 0 or an errno. */
static int qp_umem(emu_qp *q, struct ibv_pd *pd, softnic_qp_attr *sa)
{
	size_t rq = softnic_qp_rq_bytes(sa), sq = softnic_qp_sq_bytes(sa);
	size_t rq_part = rq && rq < 64 ? 64 : rq, bytes = rq_part + sq, page = 4096, align;
	size_t stride = rq ? rq >> sa->log_rq_wqe : 0, buf_page = page;
	int rc;

	while (buf_page < align_up(bytes, page))
		buf_page <<= 1;
	align = buf_page / 64 > 64 ? buf_page / 64 : 64;
	if (stride > align)
		align = stride;
	rc = emu_umem_get(&q->umem, pd, MLX5DV_RES_TYPE_QP, align_up(bytes, align), align, "QP");
	if (rc)
		return rc;
	if (q->umem.buf) {
		sa->rq_mem = (softnic_qmem){ rq ? q->umem.buf : NULL, rq };
		sa->sq_mem = (softnic_qmem){ (uint8_t *)q->umem.buf + rq_part, sq };
	}
	sa->dbrec_mem = (softnic_qmem){ q->umem.dbrec, 8 };
	return 0;
}

/* The softnic QP of sa and the views that post into it; the caller holds
 * emu.lock. */
static int qp_make(emu_qp *q, struct ibv_qp_init_attr *a, const softnic_qp_attr *sa,
		   struct ibv_pd *pd)
{
	softnic_qp_desc d;
	struct ibv_qp_cap *c = &a->cap;

	q->s = softnic_qp_create(((emu_pd *)pd)->s, sa);
	if (!q->s) {
		int e = errno ? errno : ENOMEM;

		if (q->umem.buf || q->umem.dbrec)
			fprintf(stderr, "gic-emu: ibv_create_qp: %s\n", softnic_last_error(emu.nic));
		return e;
	}
	softnic_qp_view(q->s, &q->sq, &q->sq_cq_view);
	softnic_qp_set_rights(q->s, 0); /* verbs: no remote right until INIT grants one */
	softnic_qp_desc_get(q->s, &d);
	if (d.rq.wqe_cnt)
		gic_rq_init(&q->rq, d.rq.buf, &d.dbrec[0], d.rq.wqe_cnt, d.rq.stride,
			    (uint32_t)sa->rq_max_sge, 0);
	/* What the QP got: at least what was asked (up to EMU_MAX_QP_WR). */
	c->max_send_wr = (1u << sa->log_sq_bb) / bb_per_wr(c);
	if (c->max_send_wr > EMU_MAX_QP_WR)
		c->max_send_wr = EMU_MAX_QP_WR;
	c->max_recv_wr = d.rq.wqe_cnt;
	c->max_recv_sge = a->srq ? 0 : (uint32_t)sa->rq_max_sge;
	q->cap = *c;
	q->max_inline = c->max_inline_data;
	q->max_send_sge = c->max_send_sge ? c->max_send_sge : 1;
	q->max_recv_sge = c->max_recv_sge;
	q->sq_sig_all = a->sq_sig_all;
	return qp_alloc_arrays(q);
}

/* Creates the QP; with send_ops (IBV_QP_EX_WITH_*), its ibv_wr_* too; dc
 * (SOFTNIC_QP_DCI or _DCT, with the DCT's key) makes it a DC QP. */
static struct ibv_qp *create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a, uint64_t send_ops,
				uint32_t dc, uint64_t dc_key)
{
	softnic_qp_attr sa;
	emu_qp *q;
	int rc;

	if (!pd || !a) {
		errno = EINVAL;
		return NULL;
	}
	rc = check_caps(a);
	q = rc ? NULL : calloc(1, sizeof(*q));
	if (!rc && !q)
		rc = ENOMEM;
	if (!rc) {
		qp_attr_of(a, &sa);
		sa.flags |= dc;
		sa.dc_key = dc_key;
		if (dc == SOFTNIC_QP_DCI) { /* a DCI never receives */
			sa.srq = NULL;
			sa.log_rq_wqe = 0;
		}
		q->dci = dc == SOFTNIC_QP_DCI;
		q->dct = dc == SOFTNIC_QP_DCT;
		q->dct_key = dc_key;
		rc = qp_umem(q, pd, &sa); /* outside emu.lock: the allocator may call verbs */
	}
	if (!rc) {
		pthread_mutex_lock(&emu.lock); /* softnic's creation is not thread-safe */
		rc = qp_make(q, a, &sa, pd);
		pthread_mutex_unlock(&emu.lock);
	}
	if (!rc && send_ops)
		rc = emu_qpex_setup(q, send_ops);
	if (rc) {
		if (q)
			qp_free(q);
		errno = rc;
		return NULL;
	}
	pthread_mutex_init(&q->sq_lock, NULL);
	pthread_mutex_init(&q->rq_lock, NULL);
	q->qp.context = pd->context;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.srq = a->srq;
	q->qp.qp_num = softnic_qp_num(q->s);
	q->qp.handle = q->qp.qp_num;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_type = dc ? IBV_QPT_DRIVER : IBV_QPT_RC;
	pthread_mutex_init(&q->qp.mutex, NULL);
	pthread_cond_init(&q->qp.cond, NULL);
	emu_pd_hold(pd); /* a parent domain stays while its QPs do */
	pthread_mutex_lock(&emu.lock);
	emu_qp_table_add(q);
	pthread_mutex_unlock(&emu.lock);
	return &q->qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a)
{
	return create_qp(pd, a, 0, 0, 0);
}

/* ibv_create_qp_ex, or with dc a DC QP of the same attributes. */
static struct ibv_qp *create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *x,
				   uint32_t dc, uint64_t dc_key)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	if (!ctx || !x || !(x->comp_mask & IBV_QP_INIT_ATTR_PD) || !x->pd) {
		errno = EINVAL;
		return NULL;
	}
	if (x->comp_mask & ~known) {
		emu_missing("ibv_create_qp_ex", "only the PD and send-ops attributes are implemented");
		errno = EOPNOTSUPP;
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_context = x->qp_context;
	a.send_cq = x->send_cq;
	a.recv_cq = x->recv_cq;
	a.srq = x->srq;
	a.cap = x->cap;
	a.qp_type = x->qp_type;
	a.sq_sig_all = x->sq_sig_all;
	/* Without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: the default set, as rdma-core. */
	qp = create_qp(x->pd, &a, x->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
					  ? x->send_ops_flags
					  : IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND,
		       dc, dc_key);
	if (qp)
		x->cap = a.cap;
	return qp;
}

struct ibv_qp *emu_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *x)
{
	return create_qp_ex(ctx, x, 0, 0);
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	emu_qp *q = (emu_qp *)qp;

	if (!qp)
		return EINVAL;
	/* softnic's object calls are not thread-safe on one softnic; verbs
	 * are: two threads destroying the two QPs of a pair would otherwise
	 * race on their peer pointers. */
	struct ibv_pd *pd = qp->pd;
	emu_umem um;

	pthread_mutex_lock(&emu.lock);
	emu_qp_table_del(q);
	qp_free_locked(q, &um);
	pthread_mutex_unlock(&emu.lock);
	emu_umem_put(&um); /* the parent domain is still held */
	emu_pd_release(pd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* State machine. */

/* 1 when dlid (IB) or the GID (RoCE) of ah names a port of this host's
 * emulated devices (every process on the host sees the same ones). */
static int dest_is_local(const struct ibv_ah_attr *ah)
{
	if (ah->is_global || emu.link_layer != IBV_LINK_LAYER_INFINIBAND)
		return 1; /* a GID: every GID the emulated devices have is this host's */
	for (int i = 0; i < emu.ndev; i++)
		if (ah->dlid == emu.devs[i].lid)
			return 1;
	return 0;
}

int emu_connect_softnic(softnic_qp *s, uint32_t qpn, uint32_t dest)
{
	emu_qp *r = emu_qp_lookup(dest); /* r's QP == s: loopback, a QP connected to itself */
	softnic_qp *local = r ? r->s : emu_devx_qp_lookup(dest);
	int rc = local ? softnic_qp_connect(s, local) : softnic_qp_connect_wire(s, dest);

	if (rc && rc != EISCONN)
		fprintf(stderr, "gic-emu: connecting QP 0x%x to QP 0x%x: %s\n", qpn, dest,
			softnic_last_error(emu.nic));
	/* In this process, the other side's RTR finds the pair connected. */
	return rc == EISCONN && local ? 0 : rc;
}

/* RTR: the remote QP becomes the peer: a QP of this process directly, a
 * QP of another process on this host through softnic's wire. */
static int qp_connect(emu_qp *q, const struct ibv_qp_attr *a)
{
	int rc;

	if (!dest_is_local(&a->ah_attr)) {
		fprintf(stderr, "gic-emu: ibv_modify_qp(QP 0x%x to RTR): LID 0x%x is no port of "
			"this host's emulated devices (one host only)\n", q->qp.qp_num,
			a->ah_attr.dlid);
		return EINVAL;
	}
	pthread_mutex_lock(&emu.lock);
	rc = emu_connect_softnic(q->s, q->qp.qp_num, a->dest_qp_num);
	pthread_mutex_unlock(&emu.lock);
	q->dest_qpn = a->dest_qp_num;
	q->dest_lid = a->ah_attr.dlid;
	return rc;
}

/* The attributes each transition needs, as the IB spec's table. */
static int transition_ok(enum ibv_qp_state from, enum ibv_qp_state to, int mask)
{
	if (to == IBV_QPS_RESET || to == IBV_QPS_ERR)
		return 1;
	if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
		return (mask & (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) ==
		       (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (from == IBV_QPS_INIT && to == IBV_QPS_INIT)
		return 1;
	if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
		int need = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;

		return (mask & need) == need;
	}
	if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
		int need = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			   IBV_QP_MAX_QP_RD_ATOMIC;

		return (mask & need) == need;
	}
	return from == IBV_QPS_RTS && to == IBV_QPS_RTS;
}

/* A DCI's transitions (the kernel's mlx5 table for DCIs): INIT with the
 * port and P_Key; RTR with the MTU (no peer); RTS as an RC QP's. */
static int dci_transition_ok(enum ibv_qp_state from, enum ibv_qp_state to, int mask)
{
	if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
		return (mask & (IBV_QP_PKEY_INDEX | IBV_QP_PORT)) == (IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
		return (mask & IBV_QP_PATH_MTU) == IBV_QP_PATH_MTU;
	return transition_ok(from, to, mask);
}

/* A DCT's transitions (mlx5 provider): INIT with the port, P_Key and
 * rights; RTR with the address vector, MTU and RNR timer, no peer; no RTS. */
static int dct_transition_ok(enum ibv_qp_state from, enum ibv_qp_state to, int mask)
{
	const int rtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_MIN_RNR_TIMER;

	if (to == IBV_QPS_ERR || (from == IBV_QPS_RESET && to == IBV_QPS_INIT))
		return transition_ok(from, to, mask);
	return from == IBV_QPS_INIT && to == IBV_QPS_RTR && (mask & rtr) == rtr;
}

struct ibv_qp *gic_emu_create_dct(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
				  uint64_t access_key)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	if (!ctx || !attr || !attr->srq) {
		errno = EINVAL; /* a DCT takes its receives from an SRQ */
		return NULL;
	}
	a = *attr;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_send_wr = a.cap.max_send_wr ? a.cap.max_send_wr : 1;
	qp = create_qp_ex(ctx, &a, SOFTNIC_QP_DCT, access_key);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

struct ibv_qp *gic_emu_create_dci(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	if (!ctx || !attr || attr->srq) {
		errno = EINVAL; /* a DCI never receives */
		return NULL;
	}
	a = *attr;
	a.qp_type = IBV_QPT_RC;
	a.cap.max_recv_wr = 0;
	a.cap.max_recv_sge = 0;
	qp = create_qp_ex(ctx, &a, SOFTNIC_QP_DCI, 0);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	emu_qp *q = (emu_qp *)qp;
	enum ibv_qp_state to;
	int rc = 0;

	if (!qp || !a)
		return EINVAL;
	to = mask & IBV_QP_STATE ? a->qp_state : qp->state;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != qp->state)
		return EINVAL;
	if (q->dct ? !dct_transition_ok(qp->state, to, mask)
		   : q->dci ? !dci_transition_ok(qp->state, to, mask)
			    : !transition_ok(qp->state, to, mask))
		return EINVAL;
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if (to == IBV_QPS_RTR && qp->state == IBV_QPS_INIT && !q->dct && !q->dci) /* DC: no peer */
		rc = qp_connect(q, a);
	if (!rc && (mask & IBV_QP_ACCESS_FLAGS))
		rc = softnic_qp_set_rights(q->s, (int)(a->qp_access_flags &
							(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
							 IBV_ACCESS_REMOTE_ATOMIC)));
	if (!rc && (mask & (IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER)))
		rc = softnic_qp_set_rnr(q->s, mask & IBV_QP_RNR_RETRY ? a->rnr_retry : -1,
					mask & IBV_QP_MIN_RNR_TIMER ? a->min_rnr_timer : -1);
	if (!rc && to == IBV_QPS_ERR)
		rc = softnic_qp_to_error(q->s);
	if (!rc && to == IBV_QPS_RESET && qp->state != IBV_QPS_RESET) {
		emu_missing("ibv_modify_qp", "a QP back to RESET is not implemented (destroy it)");
		rc = EOPNOTSUPP;
	}
	if (!rc && (mask & IBV_QP_STATE))
		qp->state = to;
	return rc;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init)
{
	emu_qp *q = (emu_qp *)qp;

	(void)mask;
	if (!qp || !a || !init)
		return EINVAL;
	memset(a, 0, sizeof(*a));
	memset(init, 0, sizeof(*init));
	a->qp_state = softnic_qp_in_error(q->s) ? IBV_QPS_ERR : qp->state;
	a->cur_qp_state = a->qp_state;
	a->path_mtu = IBV_MTU_4096;
	a->port_num = 1;
	a->cap = q->cap;
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	init->cap = a->cap;
	init->qp_type = IBV_QPT_RC;
	init->sq_sig_all = q->sq_sig_all;
	return 0;
}
