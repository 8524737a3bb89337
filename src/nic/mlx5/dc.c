/*
 * mlx5 provider: DC transport. A DCI sends to any DCT whose number and
 * key it puts in each WQE's address vector; a DCT receives from any DCI
 * that knows its key. No per-peer connection: the peer's connection
 * record carries its DCT number (qpn) and address (lid, gid).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_internal.h"

enum {
	DC_TIMEOUT = 14,
	DC_RETRY_CNT = 7,
	DC_RNR_RETRY = 7,
	DC_RD_ATOMIC = 16,
	DC_MIN_RNR_TIMER = 12,
	DC_ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		    IBV_ACCESS_REMOTE_ATOMIC,
};

int gic_dc_transition(int role, enum ibv_qp_state to, const gic_conn_info *local,
		      struct ibv_qp_attr *a, int *mask)
{
	if (!local || !a || !mask || (role != GIC_DC_DCI && role != GIC_DC_DCT))
		return EINVAL;
	memset(a, 0, sizeof(*a));
	*mask = 0;
	switch (to) {
	case IBV_QPS_INIT:
		a->qp_state = IBV_QPS_INIT;
		a->pkey_index = 0;
		a->port_num = local->port;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (role == GIC_DC_DCT) {
			a->qp_access_flags = DC_ACCESS;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		a->qp_state = IBV_QPS_RTR;
		a->path_mtu = (enum ibv_mtu)local->mtu;
		a->ah_attr.port_num = local->port;
		if (local->flags & GIC_CONN_GID_VALID) {
			a->ah_attr.is_global = 1;
			a->ah_attr.grh.hop_limit = 64;
		}
		*mask = IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_AV;
		if (role == GIC_DC_DCT) {
			a->min_rnr_timer = DC_MIN_RNR_TIMER;
			*mask |= IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		if (role == GIC_DC_DCT)
			return EINVAL; /* a DCT stays in RTR */
		a->qp_state = IBV_QPS_RTS;
		a->timeout = DC_TIMEOUT;
		a->retry_cnt = DC_RETRY_CNT;
		a->rnr_retry = DC_RNR_RETRY;
		a->sq_psn = 0;
		a->max_rd_atomic = DC_RD_ATOMIC;
		*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		return EINVAL;
	}
}

void gic_dc_av_from_ah(const void *ah_av, uint32_t dctn, uint64_t dc_key, gic_av_seg *out)
{
	memcpy(out, ah_av, sizeof(*out));
	out->dc_key_be = gic_htobe64(dc_key);
	/* The WQE carries all 48 bytes (gic_wqe_dc_write: ds 6), so the AV
	 * says it is the extended form even when the AH has no GRH (as
	 * rdma-core's mlx5 DC setter does): with the bit clear the device
	 * reads a 16-byte compact AV and takes the next 32 bytes for the
	 * raddr and data segments. */
	out->dqp_dct_be = gic_htobe32(GIC_EXTENDED_UD_AV | (dctn & 0xffffffu));
}

static int modify(gic_mlx5 *m, struct ibv_qp *qp, int role, enum ibv_qp_state to,
		  const gic_conn_info *local)
{
	struct ibv_qp_attr a;
	int mask, rc = gic_dc_transition(role, to, local, &a, &mask);

	if (rc)
		return rc;
	if (a.ah_attr.is_global)
		a.ah_attr.grh.sgid_index = (uint8_t)(m->gid_index > 0 ? m->gid_index : 0);
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "ibv_modify_qp(%s 0x%x -> %s): %s (%s)",
			     role == GIC_DC_DCT ? "DCT" : "DCI", qp->qp_num,
			     to == IBV_QPS_INIT ? "INIT" : to == IBV_QPS_RTR ? "RTR" : "RTS",
			     strerror(rc), "DC unsupported by the device or driver, or a bad port, "
					   "MTU or gid index");
	return rc;
}

gic_mlx5_dct *gic_mlx5_dct_create(gic_mlx5 *m, gic_mlx5_cq *cq, const gic_conn_info *local)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };
	struct ibv_qp_init_attr_ex a = { 0 };
	struct mlx5dv_qp_init_attr dva = { 0 };
	gic_mlx5_dct *d;
	int rc;

	if (!m || !m->ctx || !cq || !local) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->m = m;
	d->cq = cq;
	d->base = (gic_nic_qp){ .nic = &m->base, .type = GIC_QP_DCT };
	d->srq = ibv_create_srq(m->pd, &sa);
	if (!d->srq) {
		rc = errno ? errno : EIO;
		gic_mlx5_say(m->base.err, sizeof(m->base.err), "ibv_create_srq (for a DCT): %s",
			     strerror(rc));
		goto fail;
	}
	a.qp_type = IBV_QPT_DRIVER;
	a.send_cq = a.recv_cq = ibv_cq_ex_to_cq(cq->cq);
	a.srq = d->srq;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = m->pd;
	dva.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
	dva.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
	dva.dc_init_attr.dct_access_key = GIC_MLX5_DC_KEY;
	d->qp = mlx5dv_create_qp(m->ctx, &a, &dva);
	if (!d->qp) {
		rc = errno ? errno : EIO;
		gic_mlx5_say(m->base.err, sizeof(m->base.err), "mlx5dv_create_qp(%s, DCT): %s (%s)",
			     m->name, strerror(rc), "the device or driver has no DC support");
		goto fail;
	}
	d->dctn = d->base.qpn = d->qp->qp_num;
	if ((rc = modify(m, d->qp, GIC_DC_DCT, IBV_QPS_INIT, local)) ||
	    (rc = modify(m, d->qp, GIC_DC_DCT, IBV_QPS_RTR, local)))
		goto fail;
	return d;
fail:
	gic_mlx5_dct_destroy(d);
	errno = rc;
	return NULL;
}

int gic_mlx5_dct_destroy(gic_mlx5_dct *d)
{
	int rc = 0;

	if (!d)
		return 0;
	if (d->qp && (rc = ibv_destroy_qp(d->qp)))
		return rc;
	if (d->srq && (rc = ibv_destroy_srq(d->srq)))
		return rc;
	free(d);
	return 0;
}

/* A DCI on cq moved to RTS with local's port, MTU and gid flag. */
static gic_mlx5_qp *dci_make(gic_mlx5 *m, gic_mlx5_cq *cq, int log_sq_bb, int queues,
			     const gic_conn_info *local)
{
	gic_mlx5_qp *q = gic_mlx5_qp_make(m, cq, log_sq_bb, queues, 1);
	int rc;

	if (!q)
		return NULL;
	if ((rc = modify(m, q->qp, GIC_DC_DCI, IBV_QPS_INIT, local)) ||
	    (rc = modify(m, q->qp, GIC_DC_DCI, IBV_QPS_RTR, local)) ||
	    (rc = modify(m, q->qp, GIC_DC_DCI, IBV_QPS_RTS, local))) {
		gic_mlx5_qp_destroy(q);
		errno = rc;
		return NULL;
	}
	return q;
}

gic_mlx5_qp *gic_mlx5_dci_create(gic_mlx5 *m, gic_mlx5_cq *cq, int log_sq_bb, int queues)
{
	gic_conn_info local;

	if (!m || !cq) {
		errno = EINVAL;
		return NULL;
	}
	gic_mlx5_port_local(m, &local);
	return dci_make(m, cq, log_sq_bb, queues, &local);
}

gic_mlx5_dci_pool *gic_mlx5_dci_pool_create(gic_mlx5 *m, int n, int log_sq_bb, int log_cqe_cnt,
					    int queues, const gic_conn_info *local)
{
	gic_mlx5_dci_pool *p;
	int rc = 0;

	if (!m || !local || n < 1 || n > 1024) {
		if (m)
			gic_mlx5_say(m->base.err, sizeof(m->base.err),
				     "dci_pool_create: %d DCIs (1..1024)", n);
		errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->dci = calloc((size_t)n, sizeof(*p->dci))) ||
	    !(p->cq = calloc((size_t)n, sizeof(*p->cq)))) {
		gic_mlx5_dci_pool_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	p->m = m;
	p->n = n;
	for (int i = 0; i < n && !rc; i++) {
		p->cq[i] = gic_mlx5_cq_create(m, log_cqe_cnt);
		p->dci[i] = p->cq[i] ? dci_make(m, p->cq[i], log_sq_bb, queues, local) : NULL;
		if (!p->dci[i])
			rc = errno;
	}
	if (rc) {
		gic_mlx5_dci_pool_destroy(p);
		errno = rc;
		return NULL;
	}
	return p;
}

void gic_mlx5_dci_pool_destroy(gic_mlx5_dci_pool *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		if (p->dci)
			gic_mlx5_qp_destroy(p->dci[i]);
		if (p->cq)
			gic_mlx5_cq_destroy(p->cq[i]);
	}
	free(p->dci);
	free(p->cq);
	free(p);
}

int gic_mlx5_dc_av(gic_mlx5 *m, const gic_conn_info *remote, gic_av_seg *out)
{
	struct ibv_ah_attr aa = { 0 };
	struct mlx5dv_ah dah = { 0 };
	struct mlx5dv_obj obj = { 0 };
	struct ibv_ah *ah;
	int rc;

	if (!m || !m->pd || !remote || !out)
		return EINVAL;
	aa.dlid = remote->lid;
	aa.port_num = m->port;
	if (remote->flags & GIC_CONN_GID_VALID) {
		aa.is_global = 1;
		memcpy(aa.grh.dgid.raw, remote->gid, 16);
		aa.grh.sgid_index = (uint8_t)(m->gid_index > 0 ? m->gid_index : 0);
		aa.grh.hop_limit = 64;
	}
	ah = ibv_create_ah(m->pd, &aa);
	if (!ah) {
		rc = errno ? errno : EIO;
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "ibv_create_ah(lid 0x%x%s): %s (unreachable peer, or RoCE without "
			     "a gid)", remote->lid, aa.is_global ? ", global" : "", strerror(rc));
		return rc;
	}
	obj.ah.in = ah;
	obj.ah.out = &dah;
	rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_AH);
	if (!rc)
		gic_dc_av_from_ah(dah.av, remote->qpn, GIC_MLX5_DC_KEY, out);
	else
		gic_mlx5_say(m->base.err, sizeof(m->base.err), "mlx5dv_init_obj(AH): %s",
			     strerror(rc));
	ibv_destroy_ah(ah);
	return rc;
}

int gic_mlx5_dc_av_compact(gic_mlx5 *m, const gic_conn_info *remote, gic_av_seg *out)
{
	int rc;

	if (!m || !remote || !out)
		return EINVAL;
	if ((remote->flags & GIC_CONN_GID_VALID) || m->gid_index >= 0) {
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "dc_av: %s routes with a GRH (RoCE or a global route), which only "
			     "the 48-byte address vector carries: use the full form", m->name);
		return ENOTSUP;
	}
	rc = gic_mlx5_dc_av(m, remote, out);
	if (rc)
		return rc;
	/* The first 16 bytes (key, DCT number, SL, LID) are the compact AV:
	 * with the extended bit clear the device reads no more of it. */
	out->dqp_dct_be = gic_htobe32(remote->qpn & 0xffffffu);
	memset((uint8_t *)out + 16, 0, sizeof(*out) - 16);
	return 0;
}
