/*
 * The DEVX layer's objects past creation, with the stand-in object step
 * (devx_fake_make.c): a CQ and an RC QP on umems; umem_dereg and CQ
 * destruction refused (EBUSY) while used; the QP state machine
 * RST -> INIT -> RTR -> RTS with each command's checks and the wrong-state
 * refusal; QUERY_QP reporting what was set; 2ERR, 2RST; the kernel's
 * object checks (a command naming another QP). Linked to the DEVX sources
 * and the emulated libibverbs.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devx.h"
#include "verbs_kit.h" /* CHECK, counting checks and failures */

#define CQC(f) gic_prm_at(GIC_PRM_CREATE_CQ_IN_CQC, f)
#define QPC(f) gic_prm_at(GIC_PRM_CREATE_QP_IN_QPC, f)
#define ADS(f) QPC(gic_prm_at(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH, f))

static struct ibv_context *ctx;
static uint8_t in[512], out[512];
static struct mlx5dv_devx_umem *wq, *dbr;
static struct mlx5dv_devx_uar *uar;

static uint32_t status(void) { return gic_prm_get(out, GIC_PRM_OUT_STATUS); }

static void cmd(uint16_t op)
{
	memset(in, 0, sizeof(in));
	memset(out, 0xab, sizeof(out));
	gic_prm_set(in, GIC_PRM_IN_OPCODE, op);
}

static struct mlx5dv_devx_obj *make_cq(void)
{
	cmd(GIC_PRM_OP_CREATE_CQ);
	gic_prm_set(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID, wq->umem_id);
	gic_prm_set(in, CQC(GIC_PRM_CQC_DBR_UMEM_ID), dbr->umem_id);
	gic_prm_set(in, CQC(GIC_PRM_CQC_LOG_CQ_SIZE), 4);
	gic_prm_set(in, CQC(GIC_PRM_CQC_UAR_PAGE), uar->page_id);
	gic_prm_set(in, CQC(GIC_PRM_CQC_C_EQN), EMU_DEVX_EQN);
	return mlx5dv_devx_obj_create(ctx, in, GIC_PRM_CREATE_CQ_IN_BYTES, out, 16);
}

static struct mlx5dv_devx_obj *make_qp(uint32_t cqn)
{
	cmd(GIC_PRM_OP_CREATE_QP);
	gic_prm_set(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID, wq->umem_id);
	gic_prm_set64(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_OFFSET, 4096);
	gic_prm_set(in, QPC(GIC_PRM_QPC_ST), GIC_PRM_QP_ST_RC);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PM_STATE), GIC_PRM_QP_PM_MIGRATED);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PD), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_UAR_PAGE), uar->page_id);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RQ_TYPE), GIC_PRM_RQ_REGULAR);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_RQ_SIZE), 3);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_RQ_STRIDE), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_CQN_SND), cqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_CQN_RCV), cqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_SQ_SIZE), 6);
	gic_prm_set64(in, QPC(GIC_PRM_QPC_DBR_ADDR), 64);
	gic_prm_set(in, QPC(GIC_PRM_QPC_DBR_UMEM_ID), dbr->umem_id);
	return mlx5dv_devx_obj_create(ctx, in, GIC_PRM_CREATE_QP_IN_BYTES, out, 16);
}

static int modify(struct mlx5dv_devx_obj *qp, uint16_t op, uint32_t qpn, size_t inlen)
{
	gic_prm_set(in, GIC_PRM_IN_OPCODE, op);
	gic_prm_set(in, GIC_PRM_MODIFY_QP_IN_QPN, qpn);
	memset(out, 0xab, sizeof(out));
	return mlx5dv_devx_obj_modify(qp, in, inlen, out, 16);
}

static void rst2init(void)
{
	memset(in, 0, sizeof(in));
	gic_prm_set(in, QPC(GIC_PRM_QPC_RWE), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RRE), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RAE), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_ATOMIC_MODE), GIC_PRM_ATOMIC_MODE_UP_TO_64BIT);
	gic_prm_set(in, ADS(GIC_PRM_ADS_VHCA_PORT_NUM), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PM_STATE), GIC_PRM_QP_PM_MIGRATED);
}

static void init2rtr(uint32_t remote)
{
	memset(in, 0, sizeof(in));
	gic_prm_set(in, QPC(GIC_PRM_QPC_MTU), 5);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_MSG_MAX), 30);
	gic_prm_set(in, QPC(GIC_PRM_QPC_REMOTE_QPN), remote);
	gic_prm_set(in, QPC(GIC_PRM_QPC_MIN_RNR_NAK), 12);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_RRA_MAX), 4);
	gic_prm_set(in, ADS(GIC_PRM_ADS_RLID), 1);
	gic_prm_set(in, ADS(GIC_PRM_ADS_SL), 0);
}

static void rtr2rts(void)
{
	memset(in, 0, sizeof(in));
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_SRA_MAX), 4);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RETRY_COUNT), 7);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RNR_RETRY), 7);
	gic_prm_set(in, ADS(GIC_PRM_ADS_ACK_TIMEOUT), 20);
}

static uint32_t query_qp(struct mlx5dv_devx_obj *qp, uint32_t qpn, gic_prm_fld f)
{
	cmd(GIC_PRM_OP_QUERY_QP);
	gic_prm_set(in, GIC_PRM_IN_OBJ_NUM, qpn);
	if (mlx5dv_devx_obj_query(qp, in, 16, out, GIC_PRM_QUERY_QP_OUT_BYTES))
		return ~0u;
	return gic_prm_get(out, gic_prm_at(GIC_PRM_QUERY_QP_OUT_QPC, f));
}

static void test_state_machine(struct mlx5dv_devx_obj *qp, uint32_t qpn)
{
	CHECK(query_qp(qp, qpn, GIC_PRM_QPC_STATE) == GIC_PRM_QPS_RST, "created in RST");
	CHECK(query_qp(qp, qpn, GIC_PRM_QPC_LOG_SQ_SIZE) == 6, "QUERY_QP: log_sq_size");
	rtr2rts();
	CHECK(modify(qp, GIC_PRM_OP_RTR2RTS_QP, qpn, 272) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_QP_STATE, "RTR2RTS from RST: BAD_QP_STATE");
	rst2init();
	CHECK(modify(qp, GIC_PRM_OP_RST2INIT_QP, qpn + 1, 272) == EINVAL, "another QP's number");
	CHECK(modify(qp, GIC_PRM_OP_RST2INIT_QP, qpn, 100) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_INP_LEN, "short RST2INIT");
	gic_prm_set(in, ADS(GIC_PRM_ADS_VHCA_PORT_NUM), 2);
	CHECK(modify(qp, GIC_PRM_OP_RST2INIT_QP, qpn, 272) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_PARAM, "port 2");
	rst2init();
	gic_prm_set(in, QPC(GIC_PRM_QPC_ATOMIC_MODE), 4);
	CHECK(modify(qp, GIC_PRM_OP_RST2INIT_QP, qpn, 272) == EREMOTEIO, "atomic mode 4");
	rst2init();
	CHECK(modify(qp, GIC_PRM_OP_RST2INIT_QP, qpn, 272) == 0 && status() == 0, "RST2INIT");
	CHECK(query_qp(qp, qpn, GIC_PRM_QPC_STATE) == GIC_PRM_QPS_INIT &&
	      query_qp(qp, qpn, GIC_PRM_QPC_RAE) == 1, "INIT, rae");
	init2rtr(0);
	CHECK(modify(qp, GIC_PRM_OP_INIT2RTR_QP, qpn, 272) == EREMOTEIO, "remote_qpn 0");
	init2rtr(0x42);
	gic_prm_set(in, QPC(GIC_PRM_QPC_MTU), 6);
	CHECK(modify(qp, GIC_PRM_OP_INIT2RTR_QP, qpn, 272) == EREMOTEIO, "mtu 6");
	init2rtr(0x42);
	gic_prm_set(in, ADS(GIC_PRM_ADS_RLID), 0);
	CHECK(modify(qp, GIC_PRM_OP_INIT2RTR_QP, qpn, 272) == EREMOTEIO, "rlid 0 on InfiniBand");
	init2rtr(0x42);
	CHECK(modify(qp, GIC_PRM_OP_INIT2RTR_QP, qpn, 272) == 0, "INIT2RTR");
	CHECK(query_qp(qp, qpn, GIC_PRM_QPC_REMOTE_QPN) == 0x42 &&
	      query_qp(qp, qpn, GIC_PRM_QPC_MTU) == 5, "QUERY_QP: remote_qpn, mtu");
	rtr2rts();
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_SRA_MAX), 5);
	CHECK(modify(qp, GIC_PRM_OP_RTR2RTS_QP, qpn, 272) == EREMOTEIO, "log_sra_max 5");
	rtr2rts();
	CHECK(modify(qp, GIC_PRM_OP_RTR2RTS_QP, qpn, 272) == 0, "RTR2RTS");
	CHECK(query_qp(qp, qpn, GIC_PRM_QPC_STATE) == GIC_PRM_QPS_RTS &&
	      query_qp(qp, qpn, GIC_PRM_QPC_RETRY_COUNT) == 7, "RTS, retry_count");
	memset(in, 0, sizeof(in));
	CHECK(modify(qp, GIC_PRM_OP_2ERR_QP, qpn, 16) == 0 &&
	      query_qp(qp, qpn, GIC_PRM_QPC_STATE) == GIC_PRM_QPS_ERR, "2ERR");
	memset(in, 0, sizeof(in));
	CHECK(modify(qp, GIC_PRM_OP_2RST_QP, qpn, 16) == 0 &&
	      query_qp(qp, qpn, GIC_PRM_QPC_STATE) == GIC_PRM_QPS_RST, "2RST");
	cmd(GIC_PRM_OP_QUERY_QP);
	gic_prm_set(in, GIC_PRM_IN_OBJ_NUM, qpn);
	CHECK(mlx5dv_devx_obj_query(qp, in, 16, out, 100) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_OUTP_LEN, "short QUERY_QP output");
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct mlx5dv_devx_obj *cq, *qp;
	void *wq_buf = aligned_alloc(4096, 65536), *dbr_buf = aligned_alloc(4096, 4096);
	uint32_t cqn, qpn;

	emu_devx_quiet = 0;
	if (!list || !list[0] || !(ctx = ibv_open_device(list[0]))) {
		printf("test_devx_objects: no emulated device\n");
		return 1;
	}
	wq = mlx5dv_devx_umem_reg(ctx, wq_buf, 65536, IBV_ACCESS_LOCAL_WRITE);
	dbr = mlx5dv_devx_umem_reg(ctx, dbr_buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	uar = mlx5dv_devx_alloc_uar(ctx, 0);
	CHECK(wq && dbr && uar, "umems and UAR");
	if (!wq || !dbr || !uar)
		return 1;
	cq = make_cq();
	cqn = gic_prm_get(out, GIC_PRM_OUT_OBJ_NUM);
	CHECK(cq && status() == 0 && cqn, "CQ made (errno %d)", errno);
	qp = cq ? make_qp(cqn) : NULL;
	qpn = gic_prm_get(out, GIC_PRM_OUT_OBJ_NUM);
	CHECK(qp && status() == 0 && qpn, "QP made (errno %d, status 0x%x)", errno, status());
	if (qp) {
		CHECK(mlx5dv_devx_umem_dereg(wq) == EBUSY, "umem in use: EBUSY");
		CHECK(mlx5dv_devx_obj_destroy(cq) == EBUSY, "CQ in use by the QP: EBUSY");
		test_state_machine(qp, qpn);
		CHECK(mlx5dv_devx_obj_destroy(qp) == 0, "destroy QP");
	}
	CHECK(mlx5dv_devx_obj_destroy(cq) == 0, "destroy CQ");
	CHECK(mlx5dv_devx_umem_dereg(wq) == 0 && mlx5dv_devx_umem_dereg(dbr) == 0, "dereg after");
	mlx5dv_devx_free_uar(uar);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(wq_buf);
	free(dbr_buf);
	printf("test_devx_objects: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
