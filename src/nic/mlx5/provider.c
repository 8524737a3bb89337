/*
 * The mlx5 provider table (gic/provider.h): the objects of
 * gic/mlx5_provider.h begin with the provider headers, so each entry is
 * the mlx5 call on the same pointer.
 */
#include <errno.h>
#include <string.h>

#include "mlx5_internal.h"

static gic_nic *p_open(const gic_nic_attr *attr, char *err, size_t errlen)
{
	gic_nic_attr none = { 0 };
	gic_mlx5 *m;

	if (!attr)
		attr = &none;
	if (attr->device || !attr->gpu_pci)
		m = gic_mlx5_open(attr->device, attr->port, err, errlen);
	else
		m = gic_mlx5_open_near(attr->gpu_pci, attr->port, err, errlen);
	if (!m)
		return NULL;
	m->queues = attr->queues;
	return &m->base;
}

static void p_close(gic_nic *n)
{
	gic_mlx5_close((gic_mlx5 *)n);
}

static gic_nic_mr *p_reg_mr(gic_nic *n, void *addr, size_t len, int access)
{
	gic_mlx5_mr *r = gic_mlx5_reg_mr((gic_mlx5 *)n, addr, len, access);

	return r ? &r->base : NULL;
}

static int p_dereg_mr(gic_nic_mr *r)
{
	return gic_mlx5_dereg_mr((gic_mlx5_mr *)r);
}

static gic_nic_cq *p_cq_create(gic_nic *n, int log_cqe_cnt)
{
	gic_mlx5_cq *c = gic_mlx5_cq_create((gic_mlx5 *)n, log_cqe_cnt);

	return c ? &c->base : NULL;
}

static int p_cq_destroy(gic_nic_cq *c)
{
	return gic_mlx5_cq_destroy((gic_mlx5_cq *)c);
}

static gic_nic_qp *p_qp_create(gic_nic *n, const gic_qp_attr *attr)
{
	gic_mlx5 *m = (gic_mlx5 *)n;
	gic_mlx5_cq *cq;
	int log_bb;

	if (!attr || !attr->send_cq || attr->send_cq->nic != n || attr->type < GIC_QP_RC ||
	    attr->type > GIC_QP_DCT) {
		gic_mlx5_say(n->err, sizeof(n->err), "qp_create: a send CQ of this nic and a type "
			     "GIC_QP_* are required");
		errno = EINVAL;
		return NULL;
	}
	cq = (gic_mlx5_cq *)attr->send_cq;
	log_bb = attr->log_sq_bb ? attr->log_sq_bb : 10;
	if (attr->type == GIC_QP_DCT) {
		gic_conn_info local;
		gic_mlx5_dct *d;

		gic_mlx5_port_local(m, &local);
		d = gic_mlx5_dct_create(m, cq, &local);
		return d ? &d->base : NULL;
	} else {
		gic_mlx5_qp *q = attr->type == GIC_QP_DCI
					 ? gic_mlx5_dci_create(m, cq, log_bb, m->queues)
					 : gic_mlx5_rc_qp_create(m, cq, log_bb, m->queues);

		return q ? &q->base : NULL;
	}
}

static int p_qp_destroy(gic_nic_qp *q)
{
	if (q->type == GIC_QP_DCT)
		return gic_mlx5_dct_destroy((gic_mlx5_dct *)q);
	return gic_mlx5_qp_destroy((gic_mlx5_qp *)q);
}

static int p_qp_local(gic_nic_qp *q, gic_conn_info *out)
{
	if (q->type == GIC_QP_DCT) {
		if (!out)
			return EINVAL;
		gic_mlx5_port_local((gic_mlx5 *)q->nic, out);
		out->qpn = q->qpn;
		return 0;
	}
	return gic_mlx5_qp_local((gic_mlx5_qp *)q, out);
}

/* EINVAL after a message when q is not an RC QP (what needs a connection
 * or the host post path). */
static int rc_only(gic_nic_qp *q, const char *call)
{
	if (q->type == GIC_QP_RC)
		return 0;
	gic_mlx5_say(q->nic->err, sizeof(q->nic->err), "%s: QP 0x%x is a %s, not an RC QP", call,
		     q->qpn, q->type == GIC_QP_DCI ? "DCI" : "DCT");
	return EINVAL;
}

static int p_qp_connect(gic_nic_qp *q, const gic_conn_info *local, const gic_conn_info *remote)
{
	int rc = rc_only(q, "qp_connect");

	return rc ? rc : gic_mlx5_rc_connect((gic_mlx5_qp *)q, local, remote);
}

static int p_qp_view(gic_nic_qp *q, int where, gic_sq *sq, gic_cq *cq)
{
	if (q->type == GIC_QP_DCT) {
		gic_mlx5_say(q->nic->err, sizeof(q->nic->err), "qp_view: DCT 0x%x has no send queue",
			     q->qpn);
		return EINVAL;
	}
	return gic_mlx5_qp_view((gic_mlx5_qp *)q, where, sq, cq);
}

static int p_post(gic_nic_qp *q, const gic_wr *wr, int n)
{
	int rc = rc_only(q, "post");

	return rc ? rc : gic_mlx5_post((gic_mlx5_qp *)q, wr, n);
}

static int p_poll(gic_nic_cq *c, gic_wc *wc, int max, int *got)
{
	return gic_mlx5_poll((gic_mlx5_cq *)c, wc, max, got);
}

static int p_dc_av(gic_nic *n, const gic_conn_info *remote, int full, gic_av_seg *out)
{
	return full ? gic_mlx5_dc_av((gic_mlx5 *)n, remote, out)
		    : gic_mlx5_dc_av_compact((gic_mlx5 *)n, remote, out);
}

static const char *p_qp_error(gic_nic_qp *q)
{
	(void)q; /* the device keeps no account beyond the CQE's syndrome */
	return "";
}

static const char *p_describe(gic_nic *n)
{
	return ((gic_mlx5 *)n)->desc;
}

const gic_provider gic_provider_mlx5 = {
	.name = "mlx5",
	.open = p_open,
	.close = p_close,
	.reg_mr = p_reg_mr,
	.dereg_mr = p_dereg_mr,
	.cq_create = p_cq_create,
	.cq_destroy = p_cq_destroy,
	.qp_create = p_qp_create,
	.qp_destroy = p_qp_destroy,
	.qp_local = p_qp_local,
	.qp_connect = p_qp_connect,
	.qp_view = p_qp_view,
	.post = p_post,
	.poll = p_poll,
	.dc_av = p_dc_av,
	.qp_error = p_qp_error,
	.describe = p_describe,
};
