/*
 * The CQ and QP commands of the emulated DEVX layer: CREATE_CQ and
 * CREATE_QP parsed and checked into emu_devx_cq_req / emu_devx_qp_req (every
 * field NVSHMEM's IBGDA and DOCA GPUNetIO set), the QP state commands into
 * emu_devx_qp_mod with the state machine, and the QUERY_QP image. Also the
 * opcode table (names, minimum lengths). The checks are the firmware's: a
 * refusal is a status, a syndrome and a reason (devx.h). The caller holds
 * the DEVX lock and has checked the lengths against the opcode's layout.
 */
#include <infiniband/verbs.h>
#include <string.h>

#include "devx.h"

#define CQC(f) gic_prm_at(GIC_PRM_CREATE_CQ_IN_CQC, f)
#define QPC(f) gic_prm_at(GIC_PRM_CREATE_QP_IN_QPC, f) /* the modify commands' too */
#define ADS(f) QPC(gic_prm_at(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH, f))

static const struct devx_op {
	uint16_t op;
	const char *name;
	uint16_t in, out;
} ops[] = {
	{ GIC_PRM_OP_QUERY_HCA_CAP, "QUERY_HCA_CAP", GIC_PRM_QUERY_HCA_CAP_IN_BYTES,
	  GIC_PRM_QUERY_HCA_CAP_OUT_BYTES },
	{ GIC_PRM_OP_QUERY_ADAPTER, "QUERY_ADAPTER", 16, 16 },
	{ GIC_PRM_OP_QUERY_ISSI, "QUERY_ISSI", 16, 16 },
	{ GIC_PRM_OP_NOP, "NOP", GIC_PRM_NOP_IN_BYTES, GIC_PRM_NOP_OUT_BYTES },
	{ GIC_PRM_OP_CREATE_CQ, "CREATE_CQ", GIC_PRM_CREATE_CQ_IN_BYTES, GIC_PRM_CREATE_CQ_OUT_BYTES },
	{ GIC_PRM_OP_DESTROY_CQ, "DESTROY_CQ", GIC_PRM_DESTROY_CQ_IN_BYTES,
	  GIC_PRM_DESTROY_CQ_OUT_BYTES },
	{ GIC_PRM_OP_QUERY_CQ, "QUERY_CQ", 16, 16 },
	{ GIC_PRM_OP_MODIFY_CQ, "MODIFY_CQ", 16, 16 },
	{ GIC_PRM_OP_CREATE_QP, "CREATE_QP", GIC_PRM_CREATE_QP_IN_BYTES, GIC_PRM_CREATE_QP_OUT_BYTES },
	{ GIC_PRM_OP_DESTROY_QP, "DESTROY_QP", GIC_PRM_DESTROY_QP_IN_BYTES,
	  GIC_PRM_DESTROY_QP_OUT_BYTES },
	{ GIC_PRM_OP_RST2INIT_QP, "RST2INIT_QP", GIC_PRM_MODIFY_QP_IN_BYTES, GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_INIT2INIT_QP, "INIT2INIT_QP", GIC_PRM_MODIFY_QP_IN_BYTES,
	  GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_INIT2RTR_QP, "INIT2RTR_QP", GIC_PRM_MODIFY_QP_IN_BYTES, GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_RTR2RTS_QP, "RTR2RTS_QP", GIC_PRM_MODIFY_QP_IN_BYTES, GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_RTS2RTS_QP, "RTS2RTS_QP", GIC_PRM_MODIFY_QP_IN_BYTES, GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_SQERR2RTS_QP, "SQERR2RTS_QP", GIC_PRM_MODIFY_QP_IN_BYTES,
	  GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_2ERR_QP, "2ERR_QP", GIC_PRM_QP_2ERR_IN_BYTES, GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_2RST_QP, "2RST_QP", GIC_PRM_QP_2ERR_IN_BYTES, GIC_PRM_MODIFY_QP_OUT_BYTES },
	{ GIC_PRM_OP_QUERY_QP, "QUERY_QP", GIC_PRM_QUERY_QP_IN_BYTES, GIC_PRM_QUERY_QP_OUT_BYTES },
	{ GIC_PRM_OP_CREATE_SRQ, "CREATE_SRQ", 16, 16 },
	{ GIC_PRM_OP_CREATE_DCT, "CREATE_DCT", 16, 16 },
	{ GIC_PRM_OP_CREATE_RMP, "CREATE_RMP", 16, 16 },
	{ GIC_PRM_OP_QUERY_ROCE_ADDRESS, "QUERY_ROCE_ADDRESS", 16, 16 },
	{ GIC_PRM_OP_QUERY_VPORT_STATE, "QUERY_VPORT_STATE", 16, 16 },
	{ GIC_PRM_OP_QUERY_NIC_VPORT_CONTEXT, "QUERY_NIC_VPORT_CONTEXT", 16, 16 },
	{ GIC_PRM_OP_QUERY_HCA_VPORT_CONTEXT, "QUERY_HCA_VPORT_CONTEXT", 16, 16 },
	{ GIC_PRM_OP_ALLOC_PD, "ALLOC_PD", GIC_PRM_ALLOC_PD_IN_BYTES, GIC_PRM_ALLOC_PD_OUT_BYTES },
	{ GIC_PRM_OP_DEALLOC_PD, "DEALLOC_PD", 16, 16 },
	{ GIC_PRM_OP_CREATE_GENERAL_OBJECT, "CREATE_GENERAL_OBJECT", 16, 16 },
};

static const struct devx_op *op_of(uint16_t op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i].op == op)
			return &ops[i];
	return NULL;
}

const char *emu_devx_opcode_name(uint16_t opcode)
{
	const struct devx_op *o = op_of(opcode);

	return o ? o->name : NULL;
}

size_t emu_devx_min_inlen(uint16_t opcode)
{
	const struct devx_op *o = op_of(opcode);

	return o ? o->in : GIC_PRM_HDR_IN_BYTES;
}

size_t emu_devx_min_outlen(uint16_t opcode)
{
	const struct devx_op *o = op_of(opcode);

	return o ? o->out : GIC_PRM_HDR_OUT_BYTES;
}

static int bad_param(emu_devx_fail *f, uint32_t synd, const char *why, uint32_t v)
{
	return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, synd, why, v);
}

/* len bytes at offset off of umem id, off a multiple of align: 0 with *u
 * set, or 1 with f filled. */
static int umem_range(struct ibv_context *ctx, uint32_t id, uint64_t off, uint64_t len,
		      uint64_t align, const char *what, emu_devx_umem **u, emu_devx_fail *f)
{
	*u = emu_devx_umem_find(ctx, id);
	if (!*u)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_UMEM,
				       "%s: umem %u is not registered in this context", what, id);
	if (off % align)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_ALIGN,
				       "%s: offset %llu in umem %u is not a multiple of %llu", what,
				       (unsigned long long)off, id, (unsigned long long)align);
	if (off > (*u)->size || len > (*u)->size - off)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_UMEM_RANGE,
				       "%s: %llu bytes at offset %llu do not fit umem %u of %zu bytes",
				       what, (unsigned long long)len, (unsigned long long)off, id,
				       (*u)->size);
	return 0;
}

/* ------------------------------------------------------------------ */
/* CREATE_CQ. */

static int cq_features(const uint8_t *in, emu_devx_fail *f)
{
	uint32_t cqe_sz = gic_prm_get(in, CQC(GIC_PRM_CQC_CQE_SZ));

	if (cqe_sz == GIC_PRM_CQE_SZ_128)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_FEATURE,
				       "128-byte CQEs: softnic writes 64-byte CQEs");
	if (cqe_sz != GIC_PRM_CQE_SZ_64)
		return bad_param(f, EMU_DEVX_SYND_CQE_SIZE, "cqe_sz %u is not a CQE size", cqe_sz);
	if (gic_prm_get(in, CQC(GIC_PRM_CQC_CQE_COMP_EN)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_FEATURE,
				       "CQE compression: softnic writes every CQE whole");
	if (gic_prm_get(in, CQC(GIC_PRM_CQC_CQ_PERIOD)) || gic_prm_get(in, CQC(GIC_PRM_CQC_CQ_MAX_COUNT)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_FEATURE,
				       "CQ moderation (cq_period, cq_max_count): not modelled");
	if (gic_prm_get(in, CQC(GIC_PRM_CQC_ST)))
		return bad_param(f, EMU_DEVX_SYND_FEATURE, "CQ state %u at creation (arming is "
				 "not modelled; create with 0)", gic_prm_get(in, CQC(GIC_PRM_CQC_ST)));
	return 0;
}

int emu_devx_cq_parse(struct ibv_context *ctx, const uint8_t *in, size_t inlen,
		      emu_devx_cq_req *req, emu_devx_fail *f)
{
	uint32_t op_mod = gic_prm_get(in, GIC_PRM_IN_OP_MOD);

	(void)inlen;
	memset(req, 0, sizeof(*req));
	if (op_mod)
		return bad_param(f, EMU_DEVX_SYND_BAD_OP_MOD, "op_mod %u (CREATE_CQ takes 0)", op_mod);
	if (cq_features(in, f))
		return 1;
	req->log_cq_size = gic_prm_get(in, CQC(GIC_PRM_CQC_LOG_CQ_SIZE));
	req->collapsed = (int)gic_prm_get(in, CQC(GIC_PRM_CQC_CC));
	req->overrun_ignore = (int)gic_prm_get(in, CQC(GIC_PRM_CQC_OI));
	req->uar_page = gic_prm_get(in, CQC(GIC_PRM_CQC_UAR_PAGE));
	req->c_eqn = gic_prm_get(in, CQC(GIC_PRM_CQC_C_EQN));
	req->log_page_size = gic_prm_get(in, CQC(GIC_PRM_CQC_LOG_PAGE_SIZE));
	if (req->log_cq_size > EMU_DEVX_LOG_MAX_CQ_SZ || (!req->log_cq_size && !req->collapsed))
		return bad_param(f, EMU_DEVX_SYND_LOG_SIZE, "log_cq_size %u: softnic's CQs hold 2^1 "
				 "to 2^16 CQEs (2^0 only collapsed, cc 1)", req->log_cq_size);
	if (!emu_devx_uar_known(ctx, req->uar_page))
		return bad_param(f, EMU_DEVX_SYND_UAR, "uar_page %u is not a UAR of this context",
				 req->uar_page);
	if (req->c_eqn != EMU_DEVX_EQN)
		return bad_param(f, EMU_DEVX_SYND_EQN, "c_eqn %u is not an EQ of this device "
				 "(mlx5dv_devx_query_eqn gives 6)", req->c_eqn);
	if (gic_prm_get(in, CQC(GIC_PRM_CQC_PAGE_OFFSET)))
		return bad_param(f, EMU_DEVX_SYND_ALIGN, "page_offset %u with a umem (takes 0)",
				 gic_prm_get(in, CQC(GIC_PRM_CQC_PAGE_OFFSET)));
	req->buf_offset = gic_prm_get64(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_OFFSET);
	req->dbr_offset = gic_prm_get64(in, CQC(GIC_PRM_CQC_DBR_ADDR));
	return umem_range(ctx, gic_prm_get(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID), req->buf_offset,
			  64ull << req->log_cq_size, 64, "CQ buffer", &req->buf, f) ||
	       umem_range(ctx, gic_prm_get(in, CQC(GIC_PRM_CQC_DBR_UMEM_ID)), req->dbr_offset, 8, 8,
			  "CQ doorbell record", &req->dbr, f);
}

/* ------------------------------------------------------------------ */
/* CREATE_QP. */

static int qp_features(const uint8_t *in, emu_devx_fail *f)
{
	uint32_t st = gic_prm_get(in, QPC(GIC_PRM_QPC_ST)), pm = gic_prm_get(in, QPC(GIC_PRM_QPC_PM_STATE));

	/* DCIs: NVSHMEM's IBGDA makes them; softnic executes their DC WQEs. */
	if (st != GIC_PRM_QP_ST_RC && st != GIC_PRM_QP_ST_DCI)
		return bad_param(f, EMU_DEVX_SYND_QP_TYPE, "service type 0x%x: softnic makes RC "
				 "QPs and DCIs", st);
	if (pm != GIC_PRM_QP_PM_MIGRATED)
		return bad_param(f, EMU_DEVX_SYND_FEATURE, "pm_state %u: softnic has no alternate "
				 "path (takes MIGRATED, 3)", pm);
	if (gic_prm_get(in, QPC(GIC_PRM_QPC_CD_MASTER)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_FEATURE,
				       "cross-channel QPs (cd_master): not modelled");
	if (gic_prm_get(in, QPC(GIC_PRM_QPC_CS_REQ)) || gic_prm_get(in, QPC(GIC_PRM_QPC_CS_RES)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_FEATURE,
				       "scatter to CQE (cs_req, cs_res): softnic never scatters "
				       "into a CQE");
	if (gic_prm_get(in, QPC(GIC_PRM_QPC_END_PADDING_MODE)))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_FEATURE,
				       "end padding: softnic does not pad receives");
	if (gic_prm_get(in, QPC(GIC_PRM_QPC_PAGE_OFFSET)))
		return bad_param(f, EMU_DEVX_SYND_ALIGN, "page_offset %u with a umem (takes 0)",
				 gic_prm_get(in, QPC(GIC_PRM_QPC_PAGE_OFFSET)));
	return 0;
}

/* The receive side: rq_type and its sizes. */
static int qp_recv(const uint8_t *in, emu_devx_qp_req *req, emu_devx_fail *f)
{
	req->rq_type = gic_prm_get(in, QPC(GIC_PRM_QPC_RQ_TYPE));
	req->srqn = gic_prm_get(in, QPC(GIC_PRM_QPC_SRQN_RMPN_XRQN));
	req->log_rq_size = gic_prm_get(in, QPC(GIC_PRM_QPC_LOG_RQ_SIZE));
	req->log_rq_stride = gic_prm_get(in, QPC(GIC_PRM_QPC_LOG_RQ_STRIDE));
	if (req->rq_type != GIC_PRM_RQ_REGULAR && req->rq_type != GIC_PRM_RQ_SRQ &&
	    req->rq_type != GIC_PRM_RQ_NONE)
		return bad_param(f, EMU_DEVX_SYND_RQ, "rq_type %u: softnic takes a regular RQ (0), "
				 "an SRQ (1) or none (3)", req->rq_type);
	if (req->rq_type != GIC_PRM_RQ_REGULAR) {
		if (req->log_rq_size)
			return bad_param(f, EMU_DEVX_SYND_RQ, "log_rq_size %u on a QP without a "
					 "receive queue of its own", req->log_rq_size);
		return 0;
	}
	if (!req->log_rq_size || req->log_rq_size > EMU_DEVX_LOG_MAX_RQ)
		return bad_param(f, EMU_DEVX_SYND_LOG_SIZE, "log_rq_size %u: softnic's receive "
				 "queues hold 2^1 to 2^15 WQEs", req->log_rq_size);
	if (req->log_rq_stride > 4)
		return bad_param(f, EMU_DEVX_SYND_RQ, "log_rq_stride %u: a receive WQE holds at "
				 "most 16 data segments (256 bytes, stride 4)", req->log_rq_stride);
	return 0;
}

/* pd, UAR, CQs; the numbers softnic cannot check itself are left to the
 * make function (verbs CQs and SRQs, PDs). */
static int qp_refs(struct ibv_context *ctx, const uint8_t *in, emu_devx_qp_req *req,
		   emu_devx_fail *f)
{
	req->pd = gic_prm_get(in, QPC(GIC_PRM_QPC_PD));
	req->uar_page = gic_prm_get(in, QPC(GIC_PRM_QPC_UAR_PAGE));
	req->user_index = gic_prm_get(in, QPC(GIC_PRM_QPC_USER_INDEX));
	req->cqn_snd = gic_prm_get(in, QPC(GIC_PRM_QPC_CQN_SND));
	req->cqn_rcv = gic_prm_get(in, QPC(GIC_PRM_QPC_CQN_RCV));
	req->no_sq = (int)gic_prm_get(in, QPC(GIC_PRM_QPC_NO_SQ));
	if (!emu_devx_uar_known(ctx, req->uar_page))
		return bad_param(f, EMU_DEVX_SYND_UAR, "uar_page %u is not a UAR of this context",
				 req->uar_page);
	req->send_cq = emu_devx_obj_find(ctx, GIC_PRM_OP_CREATE_CQ, req->cqn_snd);
	req->recv_cq = emu_devx_obj_find(ctx, GIC_PRM_OP_CREATE_CQ, req->cqn_rcv);
	return 0;
}

/* The send queue's size and the buffers in their umems. */
static int qp_queues(struct ibv_context *ctx, const uint8_t *in, emu_devx_qp_req *req,
		     emu_devx_fail *f)
{
	uint64_t rq_bytes = 0, sq_bytes = 0;

	req->log_sq_size = gic_prm_get(in, QPC(GIC_PRM_QPC_LOG_SQ_SIZE));
	if (!req->no_sq && (!req->log_sq_size || req->log_sq_size > EMU_DEVX_LOG_MAX_SQ_BB))
		return bad_param(f, EMU_DEVX_SYND_LOG_SIZE, "log_sq_size %u: softnic's send rings "
				 "hold 2^1 to 2^14 BBs", req->log_sq_size);
	if (req->rq_type == GIC_PRM_RQ_REGULAR)
		rq_bytes = (16ull << req->log_rq_stride) << req->log_rq_size;
	if (!req->no_sq)
		sq_bytes = 64ull << req->log_sq_size;
	req->wq_offset = gic_prm_get64(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_OFFSET);
	req->sq_offset = req->wq_offset + rq_bytes;
	req->dbr_offset = gic_prm_get64(in, QPC(GIC_PRM_QPC_DBR_ADDR));
	if ((rq_bytes || sq_bytes) &&
	    umem_range(ctx, gic_prm_get(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID), req->wq_offset,
		       rq_bytes + sq_bytes, 64, "work queue buffer", &req->wq, f))
		return 1;
	return umem_range(ctx, gic_prm_get(in, QPC(GIC_PRM_QPC_DBR_UMEM_ID)), req->dbr_offset, 8, 8,
			  "QP doorbell record", &req->dbr, f);
}

int emu_devx_qp_parse(struct ibv_context *ctx, const uint8_t *in, size_t inlen,
		      emu_devx_qp_req *req, emu_devx_fail *f)
{
	uint32_t op_mod = gic_prm_get(in, GIC_PRM_IN_OP_MOD);

	(void)inlen;
	memset(req, 0, sizeof(*req));
	if (op_mod)
		return bad_param(f, EMU_DEVX_SYND_BAD_OP_MOD, "op_mod %u (CREATE_QP takes 0)", op_mod);
	req->dci = gic_prm_get(in, QPC(GIC_PRM_QPC_ST)) == GIC_PRM_QP_ST_DCI;
	return qp_features(in, f) || qp_recv(in, req, f) || qp_refs(ctx, in, req, f) ||
	       qp_queues(ctx, in, req, f);
}

/* ------------------------------------------------------------------ */
/* The QP state commands. */

static const char *state_name(uint32_t s)
{
	static const char *names[] = { "RST", "INIT", "RTR", "RTS", "SQER", "SQD", "ERR" };

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

/* The transition of op: from (or ~0: any state) and to. */
static void transition(uint16_t op, uint32_t *from, uint32_t *to)
{
	switch (op) {
	case GIC_PRM_OP_RST2INIT_QP: *from = GIC_PRM_QPS_RST; *to = GIC_PRM_QPS_INIT; break;
	case GIC_PRM_OP_INIT2INIT_QP: *from = GIC_PRM_QPS_INIT; *to = GIC_PRM_QPS_INIT; break;
	case GIC_PRM_OP_INIT2RTR_QP: *from = GIC_PRM_QPS_INIT; *to = GIC_PRM_QPS_RTR; break;
	case GIC_PRM_OP_RTR2RTS_QP: *from = GIC_PRM_QPS_RTR; *to = GIC_PRM_QPS_RTS; break;
	case GIC_PRM_OP_RTS2RTS_QP: *from = GIC_PRM_QPS_RTS; *to = GIC_PRM_QPS_RTS; break;
	case GIC_PRM_OP_SQERR2RTS_QP: *from = GIC_PRM_QPS_SQER; *to = GIC_PRM_QPS_RTS; break;
	case GIC_PRM_OP_2ERR_QP: *from = ~0u; *to = GIC_PRM_QPS_ERR; break;
	default: *from = ~0u; *to = GIC_PRM_QPS_RST; break; /* 2RST */
	}
}

static int mod_init(const uint8_t *in, emu_devx_qp_mod *m, emu_devx_fail *f)
{
	m->rre = (int)gic_prm_get(in, QPC(GIC_PRM_QPC_RRE));
	m->rwe = (int)gic_prm_get(in, QPC(GIC_PRM_QPC_RWE));
	m->rae = (int)gic_prm_get(in, QPC(GIC_PRM_QPC_RAE));
	m->atomic_mode = gic_prm_get(in, QPC(GIC_PRM_QPC_ATOMIC_MODE));
	m->port = gic_prm_get(in, ADS(GIC_PRM_ADS_VHCA_PORT_NUM));
	m->pkey_index = gic_prm_get(in, ADS(GIC_PRM_ADS_PKEY_INDEX));
	if (m->atomic_mode > GIC_PRM_ATOMIC_MODE_UP_TO_64BIT)
		return bad_param(f, EMU_DEVX_SYND_ATOMIC_MODE, "atomic_mode %u asks for atomics "
				 "wider than 8 bytes", m->atomic_mode);
	if (m->port != 1)
		return bad_param(f, EMU_DEVX_SYND_PORT, "vhca_port_num %u: the device has port 1",
				 m->port);
	if (m->pkey_index)
		return bad_param(f, EMU_DEVX_SYND_PATH, "pkey_index %u: the port has one P_Key",
				 m->pkey_index);
	if (gic_prm_get(in, QPC(GIC_PRM_QPC_COUNTER_SET_ID)))
		return bad_param(f, EMU_DEVX_SYND_FEATURE, "counter_set_id %u: softnic has no "
				 "counter sets", gic_prm_get(in, QPC(GIC_PRM_QPC_COUNTER_SET_ID)));
	return 0;
}

static void mod_path(const uint8_t *in, emu_devx_qp_mod *m)
{
	uint32_t mac_hi = gic_prm_get(in, ADS(GIC_PRM_ADS_RMAC_47_32));
	uint32_t mac_lo = gic_prm_get(in, ADS(GIC_PRM_ADS_RMAC_31_0));
	gic_prm_fld gid = ADS(GIC_PRM_ADS_RGID_RIP);

	m->grh = gic_prm_get(in, ADS(GIC_PRM_ADS_GRH));
	m->rlid = gic_prm_get(in, ADS(GIC_PRM_ADS_RLID));
	m->sl = gic_prm_get(in, ADS(GIC_PRM_ADS_SL));
	m->hop_limit = gic_prm_get(in, ADS(GIC_PRM_ADS_HOP_LIMIT));
	m->src_addr_index = gic_prm_get(in, ADS(GIC_PRM_ADS_SRC_ADDR_INDEX));
	m->tclass = gic_prm_get(in, ADS(GIC_PRM_ADS_TCLASS));
	m->flow_label = gic_prm_get(in, ADS(GIC_PRM_ADS_FLOW_LABEL));
	m->udp_sport = gic_prm_get(in, ADS(GIC_PRM_ADS_UDP_SPORT));
	m->dscp = gic_prm_get(in, ADS(GIC_PRM_ADS_DSCP));
	memcpy(m->rgid, in + gid.bit / 8, 16);
	for (int i = 0; i < 2; i++)
		m->rmac[i] = (uint8_t)(mac_hi >> (8 * (1 - i)));
	for (int i = 0; i < 4; i++)
		m->rmac[2 + i] = (uint8_t)(mac_lo >> (8 * (3 - i)));
}

/* The address path against the port: InfiniBand needs a LID (or a GRH),
 * RoCE a GID index of the port and a destination GID. */
static int path_ok(struct ibv_context *ctx, const emu_devx_qp_mod *m, emu_devx_fail *f)
{
	static const uint8_t zero[16];
	struct ibv_port_attr p;

	if (ibv_query_port(ctx, 1, &p))
		return emu_devx_refuse(f, GIC_PRM_STAT_INT_ERR, EMU_DEVX_SYND_PORT,
				       "the port could not be queried");
	if (p.link_layer != IBV_LINK_LAYER_ETHERNET) {
		if (!m->grh && !m->rlid)
			return bad_param(f, EMU_DEVX_SYND_PATH, "rlid %u without a GRH on an "
					 "InfiniBand port", m->rlid);
		if (!m->grh)
			return 0;
	}
	if (m->src_addr_index >= (uint32_t)p.gid_tbl_len)
		return bad_param(f, EMU_DEVX_SYND_PATH, "src_addr_index %u: the port has fewer "
				 "GIDs", m->src_addr_index);
	if (!memcmp(m->rgid, zero, 16))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_PATH,
				       "rgid_rip is zero: a GRH needs the destination GID");
	return 0;
}

static int mod_rtr(struct ibv_context *ctx, const uint8_t *in, int dci, emu_devx_qp_mod *m,
		   emu_devx_fail *f)
{
	m->mtu = gic_prm_get(in, QPC(GIC_PRM_QPC_MTU));
	m->log_msg_max = gic_prm_get(in, QPC(GIC_PRM_QPC_LOG_MSG_MAX));
	m->remote_qpn = gic_prm_get(in, QPC(GIC_PRM_QPC_REMOTE_QPN));
	m->min_rnr_nak = gic_prm_get(in, QPC(GIC_PRM_QPC_MIN_RNR_NAK));
	m->log_rra_max = gic_prm_get(in, QPC(GIC_PRM_QPC_LOG_RRA_MAX));
	m->next_rcv_psn = gic_prm_get(in, QPC(GIC_PRM_QPC_NEXT_RCV_PSN));
	mod_path(in, m);
	if (m->mtu < 1 || m->mtu > 5)
		return bad_param(f, EMU_DEVX_SYND_MTU, "mtu %u: 1 (256) to 5 (4096, the port's)",
				 m->mtu);
	if (m->log_msg_max > EMU_DEVX_LOG_MAX_MSG)
		return bad_param(f, EMU_DEVX_SYND_MSG_MAX, "log_msg_max %u: at most 31",
				 m->log_msg_max);
	if (dci) {
		m->remote_qpn = 0; /* a DCI has no peer: each WQE names its target */
		return 0;
	}
	if (!m->remote_qpn)
		return bad_param(f, EMU_DEVX_SYND_REMOTE_QPN, "remote_qpn %u: an RC QP needs its "
				 "peer", m->remote_qpn);
	if (m->log_rra_max > EMU_DEVX_LOG_MAX_RA)
		return bad_param(f, EMU_DEVX_SYND_RA, "log_rra_max %u: at most 4 (16 reads and "
				 "atomics)", m->log_rra_max);
	return path_ok(ctx, m, f);
}

static int mod_rts(const uint8_t *in, emu_devx_qp_mod *m, emu_devx_fail *f)
{
	m->log_sra_max = gic_prm_get(in, QPC(GIC_PRM_QPC_LOG_SRA_MAX));
	m->next_send_psn = gic_prm_get(in, QPC(GIC_PRM_QPC_NEXT_SEND_PSN));
	m->retry_count = gic_prm_get(in, QPC(GIC_PRM_QPC_RETRY_COUNT));
	m->rnr_retry = gic_prm_get(in, QPC(GIC_PRM_QPC_RNR_RETRY));
	m->ack_timeout = gic_prm_get(in, ADS(GIC_PRM_ADS_ACK_TIMEOUT));
	m->log_ack_req_freq = gic_prm_get(in, QPC(GIC_PRM_QPC_LOG_ACK_REQ_FREQ));
	if (m->log_sra_max > EMU_DEVX_LOG_MAX_RA)
		return bad_param(f, EMU_DEVX_SYND_RA, "log_sra_max %u: at most 4 (16 reads and "
				 "atomics)", m->log_sra_max);
	return 0;
}

int emu_devx_qp_mod_parse(const struct mlx5dv_devx_obj *obj, const uint8_t *in, size_t inlen,
			  emu_devx_qp_mod *mod, emu_devx_fail *f)
{
	uint16_t op = (uint16_t)gic_prm_get(in, GIC_PRM_IN_OPCODE);
	uint32_t op_mod = gic_prm_get(in, GIC_PRM_IN_OP_MOD);

	(void)inlen;
	memset(mod, 0, sizeof(*mod));
	mod->opcode = op;
	transition(op, &mod->from, &mod->to);
	if (op_mod)
		return bad_param(f, EMU_DEVX_SYND_BAD_OP_MOD, "op_mod %u (takes 0)", op_mod);
	if (mod->from != ~0u && obj->state != mod->from)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_QP_STATE, EMU_DEVX_SYND_QP_STATE,
				       "QP 0x%x is in %s; the command takes it from %s", obj->num,
				       state_name(obj->state), state_name(mod->from));
	if (op == GIC_PRM_OP_2ERR_QP || op == GIC_PRM_OP_2RST_QP || op == GIC_PRM_OP_SQERR2RTS_QP)
		return 0;
	mod->opt_param_mask = gic_prm_get(in, GIC_PRM_MODIFY_QP_IN_OPT_PARAM_MASK);
	if (op == GIC_PRM_OP_RST2INIT_QP || op == GIC_PRM_OP_INIT2INIT_QP)
		return mod_init(in, mod, f);
	if (op == GIC_PRM_OP_INIT2RTR_QP)
		return mod_rtr(obj->ctx, in, gic_prm_get(obj->qpc, GIC_PRM_QPC_ST) == GIC_PRM_QP_ST_DCI,
			       mod, f);
	return mod_rts(in, mod, f);
}

/* The QP context fields each command sets (QUERY_QP answers them). */
static void copy_fields(uint8_t *qpc, const uint8_t *in, const gic_prm_fld *fl, size_t n)
{
	for (size_t i = 0; i < n; i++)
		gic_prm_set(qpc, fl[i], gic_prm_get(in, QPC(fl[i])));
}

#define P(f) gic_prm_at(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH, f)
void emu_devx_qp_mod_apply(struct mlx5dv_devx_obj *obj, const uint8_t *in, const emu_devx_qp_mod *mod)
{
	const gic_prm_fld init[] = { GIC_PRM_QPC_RRE, GIC_PRM_QPC_RWE, GIC_PRM_QPC_RAE,
		GIC_PRM_QPC_ATOMIC_MODE, P(GIC_PRM_ADS_PKEY_INDEX), P(GIC_PRM_ADS_VHCA_PORT_NUM),
		GIC_PRM_FLD(GIC_PRM_QPC_DC_ACCESS_KEY.bit, 32),
		GIC_PRM_FLD(GIC_PRM_QPC_DC_ACCESS_KEY.bit + 32, 32) };
	const gic_prm_fld rtr[] = { GIC_PRM_QPC_MTU, GIC_PRM_QPC_LOG_MSG_MAX, GIC_PRM_QPC_REMOTE_QPN,
		GIC_PRM_QPC_MIN_RNR_NAK, GIC_PRM_QPC_LOG_RRA_MAX, GIC_PRM_QPC_NEXT_RCV_PSN,
		P(GIC_PRM_ADS_GRH), P(GIC_PRM_ADS_RLID), P(GIC_PRM_ADS_SL), P(GIC_PRM_ADS_HOP_LIMIT),
		P(GIC_PRM_ADS_SRC_ADDR_INDEX), P(GIC_PRM_ADS_TCLASS), P(GIC_PRM_ADS_FLOW_LABEL),
		P(GIC_PRM_ADS_UDP_SPORT), P(GIC_PRM_ADS_DSCP), P(GIC_PRM_ADS_ETH_PRIO),
		P(GIC_PRM_ADS_RMAC_47_32), P(GIC_PRM_ADS_RMAC_31_0),
		GIC_PRM_FLD(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH.bit + GIC_PRM_ADS_RGID_RIP.bit, 32),
		GIC_PRM_FLD(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH.bit + GIC_PRM_ADS_RGID_RIP.bit + 32, 32),
		GIC_PRM_FLD(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH.bit + GIC_PRM_ADS_RGID_RIP.bit + 64, 32),
		GIC_PRM_FLD(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH.bit + GIC_PRM_ADS_RGID_RIP.bit + 96, 32) };
	const gic_prm_fld rts[] = { GIC_PRM_QPC_LOG_SRA_MAX, GIC_PRM_QPC_NEXT_SEND_PSN,
		GIC_PRM_QPC_RETRY_COUNT, GIC_PRM_QPC_RNR_RETRY, GIC_PRM_QPC_LOG_ACK_REQ_FREQ,
		P(GIC_PRM_ADS_ACK_TIMEOUT) };

	if (mod->opcode == GIC_PRM_OP_RST2INIT_QP || mod->opcode == GIC_PRM_OP_INIT2INIT_QP)
		copy_fields(obj->qpc, in, init, sizeof(init) / sizeof(init[0]));
	else if (mod->opcode == GIC_PRM_OP_INIT2RTR_QP)
		copy_fields(obj->qpc, in, rtr, sizeof(rtr) / sizeof(rtr[0]));
	else if (mod->opcode == GIC_PRM_OP_RTR2RTS_QP || mod->opcode == GIC_PRM_OP_RTS2RTS_QP)
		copy_fields(obj->qpc, in, rts, sizeof(rts) / sizeof(rts[0]));
	obj->state = mod->to;
	gic_prm_set(obj->qpc, GIC_PRM_QPC_STATE, mod->to);
}
#undef P
