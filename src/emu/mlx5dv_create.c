/*
 * The emulated libmlx5's object constructors: mlx5dv_create_cq and
 * mlx5dv_create_qp. Each checks its mlx5dv attributes as rdma-core's mlx5
 * provider does (EINVAL for what it would reject), refuses what softnic
 * cannot honour with EOPNOTSUPP and one stderr line naming the attribute,
 * and makes the object through the emulated libibverbs (extended CQ,
 * ibv_create_qp_ex), so that the objects are the verbs ones:
 * mlx5dv_init_obj, ibv_post_send and ibv_poll_cq work on them as on any.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu_private.h"

static void *refuse(const char *fn, const char *what)
{
	fprintf(stderr, "gic-emu: %s: refused (EOPNOTSUPP), softnic cannot honour %s\n", fn,
		what);
	errno = EOPNOTSUPP;
	return NULL;
}

static void *fail_null(int e)
{
	errno = e;
	return NULL;
}

/* The CQE size a CQ asks for: the attribute, else MLX5_CQE_SIZE (as
 * libmlx5), else 64. */
static int cqe_size_of(const struct mlx5dv_cq_init_attr *a)
{
	const char *env = getenv("MLX5_CQE_SIZE");

	if (a && (a->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE))
		return a->cqe_size;
	return env && *env ? atoi(env) : 64;
}

struct ibv_cq_ex *mlx5dv_create_cq(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *cq_attr,
				   struct mlx5dv_cq_init_attr *a)
{
	const uint64_t known = MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE |
			       MLX5DV_CQ_INIT_ATTR_MASK_FLAGS | MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
	int size = cqe_size_of(a);

	if (!ctx || !cq_attr || (a && (a->comp_mask & ~known)))
		return fail_null(EINVAL);
	if (!gic_emu_is_device(ctx->device))
		return fail_null(EOPNOTSUPP);
	if (size != 64 && size != 128)
		return fail_null(EINVAL);
	if (a && (a->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & ~(uint32_t)MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD))
		return fail_null(EINVAL);
	if (a && (a->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE))
		return refuse("mlx5dv_create_cq", "compressed CQEs "
			      "(MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE): it writes one "
			      "64-byte CQE per completion");
	if (size == 128)
		return refuse("mlx5dv_create_cq", "128-byte CQEs (cqe_size 128 or "
			      "MLX5_CQE_SIZE=128): it writes 64-byte CQEs");
	if (a && (a->comp_mask & MLX5DV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD))
		return refuse("mlx5dv_create_cq", "CQE padding (MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD, "
			      "128-byte CQEs only)");
	return gic_emu_create_cq_ex(ctx, cq_attr);
}

/* EINVAL when rdma-core's mlx5 would reject the attributes outright
 * (unknown bits, DC on a QP type other than IBV_QPT_DRIVER, a driver QP
 * without DC, contradictory scatter flags); 0 otherwise. */
static int qp_attr_valid(const struct ibv_qp_init_attr_ex *qa, const struct mlx5dv_qp_init_attr *a)
{
	const uint64_t known = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS |
			       MLX5DV_QP_INIT_ATTR_MASK_DC | MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS |
			       MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS;
	const uint32_t flags = MLX5DV_QP_CREATE_TUNNEL_OFFLOADS |
			       MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC |
			       MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC |
			       MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
			       MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE |
			       MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE |
			       MLX5DV_QP_CREATE_SIG_PIPELINING;
	const uint32_t both = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
			      MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;
	int dc = a && (a->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC);

	if (!a)
		return qa->qp_type == IBV_QPT_DRIVER ? EINVAL : 0;
	if (a->comp_mask & ~known)
		return EINVAL;
	if (dc != (qa->qp_type == IBV_QPT_DRIVER))
		return EINVAL;
	if (a->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS &&
	    ((a->create_flags & ~flags) || (a->create_flags & both) == both))
		return EINVAL;
	return 0;
}

/* The name of the first attribute softnic cannot honour, or NULL. The
 * scatter-to-CQE flags are honoured: softnic never scatters into a CQE,
 * which is what DISABLE asks and what ALLOW permits. */
static const char *qp_attr_unsupported(const struct mlx5dv_qp_init_attr *a)
{
	static const struct { uint32_t flag; const char *name; } flags[] = {
		{ MLX5DV_QP_CREATE_TUNNEL_OFFLOADS, "MLX5DV_QP_CREATE_TUNNEL_OFFLOADS" },
		{ MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC,
		  "MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_UC" },
		{ MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC,
		  "MLX5DV_QP_CREATE_TIR_ALLOW_SELF_LOOPBACK_MC" },
		{ MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE,
		  "MLX5DV_QP_CREATE_PACKET_BASED_CREDIT_MODE" },
		{ MLX5DV_QP_CREATE_SIG_PIPELINING, "MLX5DV_QP_CREATE_SIG_PIPELINING" },
	};

	if (!a)
		return NULL;
	if ((a->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC) &&
	    a->dc_init_attr.dc_type != MLX5DV_DCTYPE_DCT &&
	    a->dc_init_attr.dc_type != MLX5DV_DCTYPE_DCI)
		return "a DC type other than DCT and DCI";
	if (a->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS)
		return "DCI streams (MLX5DV_QP_INIT_ATTR_MASK_DCI_STREAMS)";
	if ((a->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS) && a->send_ops_flags)
		return "mlx5dv send operations (MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS: "
		       "MLX5DV_QP_EX_WITH_*)";
	if (!(a->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS))
		return NULL;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if (a->create_flags & flags[i].flag)
			return flags[i].name;
	return NULL;
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *qp_attr,
				struct mlx5dv_qp_init_attr *a)
{
	const char *no;
	int rc;

	if (!ctx || !qp_attr)
		return fail_null(EINVAL);
	if (!gic_emu_is_device(ctx->device))
		return fail_null(EOPNOTSUPP);
	rc = qp_attr_valid(qp_attr, a);
	if (rc)
		return fail_null(rc);
	no = qp_attr_unsupported(a);
	if (no)
		return refuse("mlx5dv_create_qp", no);
	if (a && (a->comp_mask & MLX5DV_QP_INIT_ATTR_MASK_DC))
		return a->dc_init_attr.dc_type == MLX5DV_DCTYPE_DCT
			       ? gic_emu_create_dct(ctx, qp_attr, a->dc_init_attr.dct_access_key)
			       : gic_emu_create_dci(ctx, qp_attr);
	/* The emulated libibverbs' ibv_create_qp_ex checks the rest. */
	return ibv_create_qp_ex(ctx, qp_attr);
}
