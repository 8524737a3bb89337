/*
 * The emulated libmlx5: what a program needs to post to the emulated
 * device directly (mlx5dv_init_obj: queue buffers, doorbell record,
 * doorbell register, CQE size; mlx5dv_is_supported; mlx5dv_query_device).
 * Everything else of mlx5dv is a stub that says so (abi/libmlx5.abi).
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <string.h>

#include "emu_private.h"

bool mlx5dv_is_supported(struct ibv_device *device)
{
	return device && gic_emu_is_device(device);
}

int mlx5dv_query_device(struct ibv_context *ctx, struct mlx5dv_context *out)
{
	if (!ctx || !out || !gic_emu_is_device(ctx->device))
		return EINVAL;
	out->version = 1;
	/* CQE version 1 (NVSHMEM requires it); no optional capability. DC
	 * has no flag here (DEVX's HCA caps report dct); its optional
	 * fields, the DC ODP caps and DCI streams, are not modelled. */
	out->flags = MLX5DV_CONTEXT_FLAGS_CQE_V1;
	out->comp_mask = 0; /* none of the requested optional fields is filled */
	return 0;
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp)
{
	return qp && gic_emu_is_device(qp->qp_base.context->device) ? gic_emu_dv_qp_ex(qp) : NULL;
}

static int init_qp(struct ibv_qp *qp, struct mlx5dv_qp *out)
{
	softnic_qp_desc d;
	int rc = gic_emu_qp_desc(qp, &d);

	if (rc)
		return rc;
	out->dbrec = (__be32 *)d.dbrec;
	out->sq.buf = d.sq.buf;
	out->sq.wqe_cnt = d.sq.wqe_cnt;
	out->sq.stride = d.sq.stride;
	out->rq.buf = d.rq.buf;
	out->rq.wqe_cnt = d.rq.wqe_cnt;
	out->rq.stride = d.rq.stride;
	out->bf.reg = d.bf.reg;
	out->bf.size = d.bf.size;
	out->comp_mask = 0; /* no UAR mmap offset, raw-QP handles or TIR address */
	return 0;
}

static int init_cq(struct ibv_cq *cq, struct mlx5dv_cq *out)
{
	softnic_cq_desc d;
	int rc = gic_emu_cq_desc(cq, &d);

	if (rc)
		return rc;
	out->buf = d.buf;
	out->dbrec = (__be32 *)d.dbrec;
	out->cqe_cnt = d.cqe_cnt;
	out->cqe_size = d.cqe_size;
	out->cq_uar = NULL; /* nothing arms a CQ through a doorbell here */
	out->cqn = d.cqn;
	out->comp_mask = 0;
	return 0;
}

static int init_srq(struct ibv_srq *srq, struct mlx5dv_srq *out)
{
	softnic_srq_desc d;
	uint32_t head, tail;
	int rc = gic_emu_srq_desc(srq, &d, &head, &tail);

	if (rc)
		return rc;
	out->buf = d.buf;
	out->dbrec = (__be32 *)d.dbrec;
	out->stride = d.stride;
	out->head = head;
	out->tail = tail;
	if (out->comp_mask & MLX5DV_SRQ_MASK_SRQN)
		out->srqn = d.srqn;
	out->comp_mask &= MLX5DV_SRQ_MASK_SRQN;
	return 0;
}

int mlx5dv_init_obj(struct mlx5dv_obj *obj, uint64_t type)
{
	int rc = 0;

	if (!obj || (type & ~(uint64_t)(MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ | MLX5DV_OBJ_PD |
					MLX5DV_OBJ_AH)))
		return EINVAL; /* RWQ and DM objects cannot exist here */
	if (type & MLX5DV_OBJ_QP)
		rc = init_qp(obj->qp.in, obj->qp.out);
	if (!rc && (type & MLX5DV_OBJ_CQ))
		rc = init_cq(obj->cq.in, obj->cq.out);
	if (!rc && (type & MLX5DV_OBJ_SRQ))
		rc = init_srq(obj->srq.in, obj->srq.out);
	if (!rc && (type & MLX5DV_OBJ_PD)) {
		rc = gic_emu_pdn(obj->pd.in, &obj->pd.out->pdn);
		obj->pd.out->comp_mask = 0;
	}
	if (!rc && (type & MLX5DV_OBJ_AH)) {
		rc = gic_emu_ah_av(obj->ah.in, &obj->ah.out->av);
		obj->ah.out->comp_mask = 0;
	}
	return rc;
}
