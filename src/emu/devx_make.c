/*
 * The softnic objects behind DEVX CREATE_CQ and CREATE_QP (devx.h's
 * contract), made by the emulated libibverbs (emu_private.h,
 * verbs_devx.c) on the request's umems: a CQ whose CQEs stay as the caller
 * wrote them until softnic completes into them (NVSHMEM fills its CQ with
 * 0xff and reads only the CQE's counter), an RC QP rung at its UAR page's
 * register with the producer index its doorbell carries (a ConnectX acts
 * on the doorbell write), and a DCI: a softnic DCI (never connected; each
 * WQE's address vector names its DCT, docs/softnic.md "DC").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "devx.h"
#include "emu_private.h"
#include "gic/softnic.h"

int emu_devx_make_cq(struct ibv_context *ctx, const emu_devx_cq_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f)
{
	gic_emu_devx_cq_spec s = {
		.ring = req->buf->addr + req->buf_offset,
		.dbrec = (uint32_t *)(void *)(req->dbr->addr + req->dbr_offset),
		.log_size = req->log_cq_size,
		.collapsed = req->collapsed,
		.overrun_ignore = req->overrun_ignore,
	};
	char why[160] = "";

	if (gic_emu_devx_cq_create(ctx, &s, num, impl, why, sizeof(why)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_RES_STATE, EMU_DEVX_SYND_NOT_BUILT,
				       "softnic's CQ: %s", why);
	return 0;
}

/* One of the request's CQs: a DEVX CQ of this context, or the verbs CQ the
 * number names (*n). */
static void *req_cq(struct mlx5dv_devx_obj *cq, uint32_t number, uint32_t *n)
{
	*n = number;
	return cq ? cq->impl : NULL;
}

int emu_devx_make_qp(struct ibv_context *ctx, const emu_devx_qp_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f)
{
	uint8_t *uar = emu_devx_uar_page(ctx, req->uar_page);
	gic_emu_devx_qp_spec s = {
		.pdn = req->pd,
		.log_sq_bb = req->no_sq ? 1 : req->log_sq_size,
		.sq = req->wq ? req->wq->addr + req->sq_offset : NULL,
		.use_srq = req->rq_type == GIC_PRM_RQ_SRQ,
		.srqn = req->srqn,
		.dbrec = (uint32_t *)(void *)(req->dbr->addr + req->dbr_offset),
		.db = uar ? (uint64_t *)(void *)(uar + EMU_DEVX_UAR_BF_OFFSET) : NULL,
		.dci = req->dci,
	};
	char why[160] = "";

	if (req->no_sq)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_FEATURE,
				       "a QP without a send queue: softnic's QPs have one");
	if (!uar)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_UAR,
				       "uar_page %u is no UAR of this context", req->uar_page);
	s.send_cq = req_cq(req->send_cq, req->cqn_snd, &s.send_cqn);
	s.recv_cq = req_cq(req->recv_cq, req->cqn_rcv, &s.recv_cqn);
	if (req->rq_type == GIC_PRM_RQ_REGULAR && !req->dci) {
		s.log_rq = req->log_rq_size;
		s.log_rq_stride = req->log_rq_stride;
		s.rq = req->wq->addr + req->wq_offset;
	}
	if (gic_emu_devx_qp_create(ctx, &s, num, impl, why, sizeof(why)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_NOT_BUILT,
				       "softnic's QP: %s", why);
	return 0;
}

int emu_devx_modify_qp(void *impl, const emu_devx_qp_mod *mod, emu_devx_fail *f)
{
	gic_emu_devx_qp_change c = { .min_rnr_timer = -1, .rnr_retry = -1 };
	char why[160] = "";

	switch (mod->opcode) {
	case GIC_PRM_OP_RST2INIT_QP:
	case GIC_PRM_OP_INIT2INIT_QP:
		c.set_rights = 1;
		c.rights = (mod->rwe ? SOFTNIC_ACCESS_REMOTE_WRITE : 0) |
			   (mod->rre ? SOFTNIC_ACCESS_REMOTE_READ : 0) |
			   (mod->rae ? SOFTNIC_ACCESS_REMOTE_ATOMIC : 0);
		break;
	case GIC_PRM_OP_INIT2RTR_QP:
		c.connect = mod->remote_qpn != 0; /* 0: a DCI (checked by the parser) */
		c.remote_qpn = mod->remote_qpn;
		c.min_rnr_timer = (int)(mod->min_rnr_nak & 31);
		break;
	case GIC_PRM_OP_RTR2RTS_QP:
	case GIC_PRM_OP_RTS2RTS_QP:
		c.rnr_retry = (int)(mod->rnr_retry & 7);
		break;
	case GIC_PRM_OP_2ERR_QP:
		c.to_error = 1;
		break;
	case GIC_PRM_OP_2RST_QP:
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_QP_STATE, EMU_DEVX_SYND_QP_STATE,
				       "2RST: softnic cannot reset a QP (destroy and create it)");
	default: /* SQERR2RTS */
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_QP_STATE, EMU_DEVX_SYND_QP_STATE,
				       "SQERR2RTS: softnic's QPs have no SQ-error state");
	}
	if (gic_emu_devx_qp_modify(impl, &c, why, sizeof(why)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_REMOTE_QPN, "%s", why);
	return 0;
}

int emu_devx_unmake_cq(void *impl)
{
	return gic_emu_devx_cq_destroy(impl);
}

int emu_devx_unmake_qp(void *impl)
{
	return gic_emu_devx_qp_destroy(impl);
}
