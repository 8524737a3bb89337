/*
 * DEVX objects carrying traffic on the emulated device, as NVSHMEM's IBGDA
 * transport drives them in its CPU-assisted mode: a collapsed,
 * overrun-ignore CQ and an RC QP in host umems (the CQ pre-filled with
 * 0xff, which softnic must leave alone until it completes into it), made
 * with CREATE_CQ/CREATE_QP on a verbs PD, SRQ and receive CQ named by
 * number, walked to RTS and connected to a verbs QP of this process; WQEs
 * written straight into the umem ring and announced by the doorbell value
 * alone at the QP's own UAR page (NVSHMEM 3.8's proxy never writes the send
 * doorbell record). Checked: inline writes and a fetch-add land (every byte
 * read back), the collapsed CQE names the last signaled WQE; a DEVX DCI's
 * DC write (compact address vector) lands in a DCT made by
 * mlx5dv_create_qp, a wrong key fails, and an RC-format WQE on the DCI
 * (no address vector) fails with an error CQE.
 * Every wait has a 10 s limit. Run with LD_LIBRARY_PATH=<build>/emu.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gic/mlx5_prm.h"
#include "gic/post.h"
#include "verbs_kit.h"

#define CQC(f) gic_prm_at(GIC_PRM_CREATE_CQ_IN_CQC, f)
#define QPC(f) gic_prm_at(GIC_PRM_CREATE_QP_IN_QPC, f)
#define ADS(f) QPC(gic_prm_at(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH, f))

enum { LOG_CQ = 10, LOG_SQ = 6, WRITES = 40, CQ_BYTES = 64 << LOG_CQ, SQ_BYTES = 64 << LOG_SQ,
       MEM_BYTES = 2 * 65536 /* CQ ring | SQ ring | records (4 KiB), rounded up */ };

static struct ibv_context *ctx;
static uint8_t in[512], out[512];

static uint32_t status(void) { return gic_prm_get(out, GIC_PRM_OUT_STATUS); }

static void cmd(uint16_t op)
{
	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	gic_prm_set(in, GIC_PRM_IN_OPCODE, op);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* One DEVX queue set: CQ ring, CQ record, work queue, QP record, UAR. */
typedef struct dq {
	uint8_t *mem;          /* CQ ring | SQ ring | records */
	struct mlx5dv_devx_umem *umem;
	struct mlx5dv_devx_uar *uar;
	struct mlx5dv_devx_obj *cq, *qp;
	uint32_t cqn, qpn;
	gic_sq sq;
} dq;

static int make_umem(dq *q)
{
	q->mem = aligned_alloc(65536, MEM_BYTES); /* a multiple of the alignment (C11) */
	if (!q->mem)
		return 1;
	memset(q->mem, 0, MEM_BYTES);
	memset(q->mem, 0xff, CQ_BYTES); /* as NVSHMEM: every CQE reads as not done */
	q->umem = mlx5dv_devx_umem_reg(ctx, q->mem, MEM_BYTES, IBV_ACCESS_LOCAL_WRITE);
	q->uar = mlx5dv_devx_alloc_uar(ctx, 1u << 31); /* NC dedicated: a page per QP */
	return !q->umem || !q->uar;
}

static int make_cq(dq *q)
{
	cmd(GIC_PRM_OP_CREATE_CQ);
	gic_prm_set(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID, q->umem->umem_id);
	gic_prm_set(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_VALID, 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_DBR_UMEM_VALID), 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_CC), 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_OI), 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_DBR_UMEM_ID), q->umem->umem_id);
	gic_prm_set64(in, CQC(GIC_PRM_CQC_DBR_ADDR), CQ_BYTES + SQ_BYTES);
	gic_prm_set(in, CQC(GIC_PRM_CQC_LOG_CQ_SIZE), LOG_CQ);
	gic_prm_set(in, CQC(GIC_PRM_CQC_UAR_PAGE), q->uar->page_id);
	gic_prm_set(in, CQC(GIC_PRM_CQC_C_EQN), 6);
	gic_prm_set(in, CQC(GIC_PRM_CQC_LOG_PAGE_SIZE), 4);
	q->cq = mlx5dv_devx_obj_create(ctx, in, GIC_PRM_CREATE_CQ_IN_BYTES, out, 16);
	q->cqn = gic_prm_get(out, GIC_PRM_OUT_OBJ_NUM);
	return !q->cq;
}

static int make_qp(dq *q, uint32_t st, uint32_t pdn, uint32_t srqn, uint32_t rcqn)
{
	cmd(GIC_PRM_OP_CREATE_QP);
	gic_prm_set(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID, q->umem->umem_id);
	gic_prm_set64(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_OFFSET, CQ_BYTES);
	gic_prm_set(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_VALID, 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_ST), st);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PM_STATE), GIC_PRM_QP_PM_MIGRATED);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PD), pdn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_UAR_PAGE), q->uar->page_id);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RQ_TYPE), GIC_PRM_RQ_SRQ);
	gic_prm_set(in, QPC(GIC_PRM_QPC_SRQN_RMPN_XRQN), srqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_CQN_SND), q->cqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_CQN_RCV), rcqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_SQ_SIZE), LOG_SQ);
	gic_prm_set(in, QPC(GIC_PRM_QPC_DBR_UMEM_VALID), 1);
	gic_prm_set64(in, QPC(GIC_PRM_QPC_DBR_ADDR), CQ_BYTES + SQ_BYTES + 64);
	gic_prm_set(in, QPC(GIC_PRM_QPC_DBR_UMEM_ID), q->umem->umem_id);
	q->qp = mlx5dv_devx_obj_create(ctx, in, GIC_PRM_CREATE_QP_IN_BYTES, out, 16);
	q->qpn = gic_prm_get(out, GIC_PRM_OUT_OBJ_NUM);
	if (!q->qp)
		return 1;
	memset(&q->sq, 0, sizeof(q->sq));
	q->sq.wqes = q->mem + CQ_BYTES;
	q->sq.dbrec = (uint32_t *)(void *)(q->mem + CQ_BYTES + SQ_BYTES + 64) + 1;
	q->sq.db = (uint64_t *)q->uar->reg_addr;
	q->sq.bb_cnt = 1u << LOG_SQ;
	q->sq.qpn = q->qpn;
	return 0;
}

/* One state command on q's QP; the caller filled the QP context. */
static int modify(dq *q, uint16_t op)
{
	gic_prm_set(in, GIC_PRM_IN_OPCODE, op);
	gic_prm_set(in, GIC_PRM_MODIFY_QP_IN_QPN, q->qpn);
	return mlx5dv_devx_obj_modify(q->qp, in, GIC_PRM_CREATE_QP_IN_BYTES, out, 16);
}

/* RST -> INIT -> RTR (toward remote, 0 for a DCI) -> RTS. */
static int to_rts(dq *q, uint32_t remote, uint16_t lid)
{
	memset(in, 0, sizeof(in));
	gic_prm_set(in, QPC(GIC_PRM_QPC_RWE), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RRE), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RAE), 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_ATOMIC_MODE), GIC_PRM_ATOMIC_MODE_UP_TO_64BIT);
	gic_prm_set(in, ADS(GIC_PRM_ADS_VHCA_PORT_NUM), 1);
	if (modify(q, GIC_PRM_OP_RST2INIT_QP))
		return 1;
	memset(in, 0, sizeof(in));
	gic_prm_set(in, QPC(GIC_PRM_QPC_MTU), 5);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_MSG_MAX), 30);
	gic_prm_set(in, QPC(GIC_PRM_QPC_REMOTE_QPN), remote);
	gic_prm_set(in, QPC(GIC_PRM_QPC_MIN_RNR_NAK), 12);
	gic_prm_set(in, ADS(GIC_PRM_ADS_RLID), lid);
	if (modify(q, GIC_PRM_OP_INIT2RTR_QP))
		return 2;
	memset(in, 0, sizeof(in));
	gic_prm_set(in, QPC(GIC_PRM_QPC_RETRY_COUNT), 7);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RNR_RETRY), 7);
	return modify(q, GIC_PRM_OP_RTR2RTS_QP) ? 3 : 0;
}

/* Announces everything reserved by the doorbell value alone. */
static void ring_db_only(dq *q)
{
	/* Releases the WQE stores to the engine's acquire of the doorbell. */
	__atomic_store_n(q->sq.db, gic_doorbell_value(q->qpn, q->sq.resv), __ATOMIC_RELEASE);
}

/* Waits until the collapsed CQE names WQE index want; its opcode nibble. */
static int wait_cqe(dq *q, uint16_t want, uint8_t *opcode)
{
	double end = now_s() + 10;

	for (;;) {
		/* CQE bytes 56..63 in one acquire load (the engine's release of
		 * the CQE orders the data before it): byte k is bits 8(k-56). */
		uint64_t tail = __atomic_load_n((uint64_t *)(void *)(q->mem + 56), __ATOMIC_ACQUIRE);
		uint8_t op_own = (uint8_t)(tail >> 56);
		uint16_t counter = (uint16_t)(((tail >> 32) & 0xff) << 8 | ((tail >> 40) & 0xff));

		if (op_own != 0xff && counter == want) {
			*opcode = (uint8_t)(op_own >> 4);
			return 0;
		}
		if (now_s() > end)
			return ETIMEDOUT;
	}
}

/* Inline writes and a fetch-add from the DEVX QP into dst (verbs MR). */
static void traffic(dq *q, uint64_t *dst, struct ibv_mr *mr)
{
	uint8_t op = 0xff;
	uint64_t last = 0;

	for (int k = 0; k < WRITES; k++) {
		last = q->sq.resv;
		q->sq.resv += gic_wqe_write_inline_u64(&q->sq, q->sq.resv,
						       (uint64_t)(uintptr_t)&dst[k], mr->rkey,
						       0xd0d0000000000000ull | (uint64_t)k,
						       k == WRITES - 1 ? GIC_CTRL_CQ_UPDATE : 0);
		if (k % 8 == 7)
			ring_db_only(q);
	}
	ring_db_only(q);
	CHECK(!wait_cqe(q, (uint16_t)last, &op) && op == GIC_CQE_REQ,
	      "the collapsed CQE of write %d (opcode 0x%x)", WRITES - 1, op);
	for (int k = 0; k < WRITES; k++)
		CHECK(dst[k] == (0xd0d0000000000000ull | (uint64_t)k), "write %d did not land", k);
	CHECK(__atomic_load_n(q->sq.dbrec, __ATOMIC_RELAXED) == 0,
	      "softnic wrote the send doorbell record");
	last = q->sq.resv;
	q->sq.resv += gic_wqe_atomic_fa(&q->sq, q->sq.resv, (uint64_t)(uintptr_t)&dst[WRITES],
					mr->rkey, 5, (uint64_t)(uintptr_t)&dst[WRITES + 1], mr->lkey,
					GIC_CTRL_CQ_UPDATE);
	ring_db_only(q);
	CHECK(!wait_cqe(q, (uint16_t)last, &op) && op == GIC_CQE_REQ, "the fetch-add's CQE");
	CHECK(dst[WRITES] == 105 && dst[WRITES + 1] == 100, "fetch-add: target %llu, fetched %llu",
	      (unsigned long long)dst[WRITES], (unsigned long long)dst[WRITES + 1]);
}

static void release(dq *q)
{
	if (q->qp)
		CHECK(mlx5dv_devx_obj_destroy(q->qp) == 0, "destroying QP 0x%x", q->qpn);
	if (q->cq)
		CHECK(mlx5dv_devx_obj_destroy(q->cq) == 0, "destroying CQ 0x%x", q->cqn);
	if (q->umem)
		CHECK(mlx5dv_devx_umem_dereg(q->umem) == 0, "umem dereg");
	if (q->uar)
		mlx5dv_devx_free_uar(q->uar);
	free(q->mem);
}

enum { DCT_KEY = 0x0dc0ffee };

/* A DCT on srq, as NVSHMEM's IBGDA makes one (INIT, RTR without a peer),
 * granting every remote right; NULL on failure. */
static struct ibv_qp *make_dct(struct ibv_context *c, struct ibv_pd *pd, struct ibv_cq *cq,
			       struct ibv_srq *srq, uint16_t lid)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER, .send_cq = cq, .recv_cq = cq, .srq = srq,
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};
	struct mlx5dv_qp_init_attr d = { .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC };
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = 0xe };
	struct ibv_qp *qp;

	d.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
	d.dc_init_attr.dct_access_key = DCT_KEY;
	qp = mlx5dv_create_qp(c, &a, &d);
	if (qp && ibv_modify_qp(qp, &m, 0x39) == 0) {
		m = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
					  .min_rnr_timer = 12,
					  .ah_attr = { .dlid = lid, .port_num = 1 } };
		if (ibv_modify_qp(qp, &m, 0x8181) == 0)
			return qp;
	}
	if (qp)
		ibv_destroy_qp(qp);
	return NULL;
}

/* A signaled 8-byte inline DC write of v to dst at WQE index idx of the
 * DCI: ctrl | compact address vector | raddr | inline (ds 4, one BB). */
static void dc_write(dq *q, uint64_t idx, uint32_t dctn, uint64_t key, uint64_t *dst,
		     uint32_t rkey, uint64_t v)
{
	uint32_t c[4], r[4], d[4];
	gic_av_seg av;

	memset(&av, 0, sizeof(av));
	gic_set_av_compact(&av, key, dctn, 0, 0);
	gic_ctrl_seg_words(c, (uint16_t)idx, GIC_OPCODE_RDMA_WRITE, 0, q->qpn, GIC_CTRL_CQ_UPDATE,
			   4, 0);
	gic_raddr_seg_words(r, (uint64_t)(uintptr_t)dst, rkey);
	memset(d, 0, sizeof(d));
	d[0] = gic_inline_hdr_be(8);
	memcpy(&d[1], &v, 8);
	memcpy(gic_sq_seg(&q->sq, idx, 0), c, 16);
	memcpy(gic_sq_seg(&q->sq, idx, 1), &av, 16);
	memcpy(gic_sq_seg(&q->sq, idx, 2), r, 16);
	memcpy(gic_sq_seg(&q->sq, idx, 3), d, 16);
	q->sq.resv = idx + 1;
}

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .cap = { 16, 1, 1, 1, 0 } };
	struct mlx5dv_pd dpd;
	struct mlx5dv_cq dcq;
	struct mlx5dv_srq dsrq = { .comp_mask = MLX5DV_SRQ_MASK_SRQN };
	struct mlx5dv_obj o;
	struct ibv_port_attr pa;
	struct ibv_pd *pd;
	struct ibv_cq *vcq;
	struct ibv_srq *srq;
	struct ibv_qp *vqp, *dct;
	struct ibv_mr *mr;
	uint64_t *dst = aligned_alloc(4096, 4096);
	dq rc = { 0 }, dci = { 0 };
	uint8_t op = 0;

	if (!list || !list[0] || !(ctx = ibv_open_device(list[0])) || !dst) {
		printf("test_devx_traffic: no emulated device (LD_LIBRARY_PATH=<build>/emu)\n");
		return 1;
	}
	memset(dst, 0, 4096);
	dst[WRITES] = 100;
	ibv_query_port(ctx, 1, &pa);
	pd = ibv_alloc_pd(ctx);
	vcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	srq = pd ? ibv_create_srq(pd, &sa) : NULL;
	qa.send_cq = qa.recv_cq = vcq;
	vqp = pd && vcq ? ibv_create_qp(pd, &qa) : NULL;
	mr = pd ? ibv_reg_mr(pd, dst, 4096, 0xf) : NULL;
	memset(&o, 0, sizeof(o));
	o.pd.in = pd;
	o.pd.out = &dpd;
	o.cq.in = vcq;
	o.cq.out = &dcq;
	o.srq.in = srq;
	o.srq.out = &dsrq;
	if (!vqp || !mr || !srq || mlx5dv_init_obj(&o, MLX5DV_OBJ_PD | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ)) {
		printf("test_devx_traffic: verbs objects failed\n");
		return 1;
	}
	CHECK(!make_umem(&rc) && !make_cq(&rc) && !make_qp(&rc, GIC_PRM_QP_ST_RC, dpd.pdn, dsrq.srqn,
							  dcq.cqn),
	      "DEVX CQ and RC QP (status 0x%x)", status());
	if (rc.qp) {
		int s = to_rts(&rc, vqp->qp_num, pa.lid);

		CHECK(!s, "DEVX QP to RTS: step %d (status 0x%x)", s, status());
		CHECK(!kit_connect(vqp, rc.qpn, pa.lid, 0xf), "the verbs QP to the DEVX QP");
		if (!s)
			traffic(&rc, dst, mr);
		CHECK(__atomic_load_n(&rc.mem[63], __ATOMIC_ACQUIRE) != 0xff &&
		      __atomic_load_n(&rc.mem[64 + 63], __ATOMIC_ACQUIRE) == 0xff,
		      "collapsed: CQE 0 written, CQE 1 left as the caller filled it");
	}
	CHECK(!make_umem(&dci) && !make_cq(&dci) && !make_qp(&dci, GIC_PRM_QP_ST_DCI, dpd.pdn,
							    dsrq.srqn, dcq.cqn),
	      "DEVX DCI (status 0x%x)", status());
	dct = make_dct(ctx, pd, vcq, srq, pa.lid);
	CHECK(dct != NULL, "a DCT by mlx5dv_create_qp (errno %d)", errno);
	if (dci.qp && dct) {
		CHECK(!to_rts(&dci, 0, 0), "DCI to RTS without a peer (status 0x%x)", status());
		dst[0] = 9;
		dst[1] = 0;
		dst[2] = 7;
		dc_write(&dci, 0, dct->qp_num, DCT_KEY, &dst[1], mr->rkey, 0x5eed);
		ring_db_only(&dci);
		CHECK(!wait_cqe(&dci, 0, &op) && op == GIC_CQE_REQ, "a DC write: CQE opcode 0x%x", op);
		CHECK(dst[1] == 0x5eed, "the DC write landed: 0x%llx", (unsigned long long)dst[1]);
		dc_write(&dci, 1, dct->qp_num, DCT_KEY + 1, &dst[2], mr->rkey, 0xbad);
		ring_db_only(&dci);
		CHECK(!wait_cqe(&dci, 1, &op) && op == GIC_CQE_REQ_ERR,
		      "a DC write with a wrong key: an error CQE (opcode 0x%x)", op);
		CHECK(dst[2] == 7, "the wrong-key write did not land");
		dci.sq.resv += gic_wqe_write_inline_u64(&dci.sq, dci.sq.resv, (uint64_t)(uintptr_t)dst,
							mr->rkey, 1, GIC_CTRL_CQ_UPDATE);
		ring_db_only(&dci);
		CHECK(!wait_cqe(&dci, 2, &op) && op == GIC_CQE_REQ_ERR,
		      "an RC WQE on a DCI: an error CQE (opcode 0x%x)", op);
		CHECK(dst[0] == 9, "the RC WQE on the DCI did not land");
	}
	if (dct)
		ibv_destroy_qp(dct);
	release(&rc);
	release(&dci);
	ibv_destroy_qp(vqp);
	ibv_dereg_mr(mr);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(vcq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(dst);
	printf("test_devx_traffic: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
