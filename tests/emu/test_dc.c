/*
 * Dynamically connected transport on the emulated device, as an rdma-core
 * program drives it: a DCT and a DCI made by mlx5dv_create_qp, an address
 * handle from ibv_create_ah, and
 *  - the qp-ex API (ibv_wr_* with mlx5dv_wr_set_dc_addr, in either order
 *    with the data call): RDMA write (pointer and inline), read, 8-byte
 *    fetch-add and compare-swap, and SEND into the DCT's SRQ, each payload
 *    checked, and a wrong DC key (IBV_WC_REM_ACCESS_ERR);
 *  - raw WQEs (mlx5dv_init_obj's rings, a compact address vector built by
 *    hand, the doorbell record and register) on a second DCI, its CQEs
 *    read from the CQ ring;
 *  - mlx5dv_qp_ex_from_ibv_qp_ex on an RC QP (wr_set_dc_addr fails the
 *    batch there).
 * Built against the installed rdma-core, run with LD_LIBRARY_PATH=<build>/emu.
 */
#include <endian.h>
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs_kit.h"

enum { BUF = 1 << 16 };
static const uint64_t KEY = 0x5623ceaf0badf00dull;

typedef struct fixture {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *dct, *dci;
	struct ibv_qp_ex *qpx;
	struct mlx5dv_qp_ex *mqp;
	struct ibv_ah *ah;
	struct ibv_mr *tmr, *imr;
	uint8_t *tbuf, *ibuf;    /* target (the DCT's PD), initiator */
	uint16_t lid;
} fixture;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* One completion of cq within 5 s; 0, or -1 on time-out. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	uint64_t until = now_ns() + 5000000000ull;

	while (now_ns() < until) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n == 1)
			return 0;
		if (n < 0)
			return -1;
	}
	return -1;
}

static struct ibv_qp *make_dct(fixture *f)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER, .send_cq = f->rcq, .recv_cq = f->rcq, .srq = f->srq,
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = f->pd,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};
	struct mlx5dv_qp_init_attr d = { .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC };
	const int rights = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = rights };
	struct ibv_qp *qp;

	d.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
	d.dc_init_attr.dct_access_key = KEY;
	qp = mlx5dv_create_qp(f->ctx, &a, &d);
	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS))
		return NULL;
	m = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
				  .min_rnr_timer = 1,
				  .ah_attr = { .dlid = f->lid, .port_num = 1 } };
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				      IBV_QP_MIN_RNR_TIMER))
		return NULL;
	return qp;
}

/* A DCI with the qp-ex API, walked to RTS as rdma-core's DC examples do. */
static struct ibv_qp *make_dci(fixture *f)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER, .send_cq = f->scq, .recv_cq = f->scq,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, .pd = f->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_SEND,
		.cap = { .max_send_wr = 64, .max_send_sge = 1, .max_inline_data = 64 },
	};
	struct mlx5dv_qp_init_attr d = { .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC };
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp;

	d.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
	qp = mlx5dv_create_qp(f->ctx, &a, &d);
	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT))
		return NULL;
	m = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096 };
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PATH_MTU))
		return NULL;
	m = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				  .rnr_retry = 7, .max_rd_atomic = 16 };
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return NULL;
	return qp;
}

static int fixture_open(fixture *f)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_port_attr pa;
	struct ibv_ah_attr ah = { .port_num = 1 };

	memset(f, 0, sizeof(*f));
	f->ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	if (list)
		ibv_free_device_list(list);
	if (!f->ctx || ibv_query_port(f->ctx, 1, &pa))
		return -1;
	f->lid = pa.lid;
	f->pd = ibv_alloc_pd(f->ctx);
	f->scq = f->pd ? ibv_create_cq(f->ctx, 63, NULL, NULL, 0) : NULL;
	f->rcq = f->scq ? ibv_create_cq(f->ctx, 63, NULL, NULL, 0) : NULL;
	f->srq = f->rcq ? ibv_create_srq(f->pd, &sa) : NULL;
	f->tbuf = calloc(1, BUF);
	f->ibuf = calloc(1, BUF);
	if (!f->srq || !f->tbuf || !f->ibuf)
		return -1;
	f->tmr = ibv_reg_mr(f->pd, f->tbuf, BUF,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC);
	f->imr = ibv_reg_mr(f->pd, f->ibuf, BUF, IBV_ACCESS_LOCAL_WRITE);
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
		union ibv_gid gid;

		ah.is_global = 1;
		if (ibv_query_gid(f->ctx, 1, 0, &gid))
			return -1;
		ah.grh.dgid = gid;
		ah.grh.hop_limit = 64;
	} else {
		ah.dlid = pa.lid;
	}
	f->ah = ibv_create_ah(f->pd, &ah);
	f->dct = f->tmr && f->imr && f->ah ? make_dct(f) : NULL;
	f->dci = f->dct ? make_dci(f) : NULL;
	f->qpx = f->dci ? ibv_qp_to_qp_ex(f->dci) : NULL;
	f->mqp = f->qpx ? mlx5dv_qp_ex_from_ibv_qp_ex(f->qpx) : NULL;
	return f->mqp ? 0 : -1;
}

static void fixture_close(fixture *f)
{
	if (f->dci)
		ibv_destroy_qp(f->dci);
	if (f->dct)
		ibv_destroy_qp(f->dct);
	if (f->ah)
		ibv_destroy_ah(f->ah);
	if (f->tmr)
		ibv_dereg_mr(f->tmr);
	if (f->imr)
		ibv_dereg_mr(f->imr);
	if (f->srq)
		ibv_destroy_srq(f->srq);
	if (f->rcq)
		ibv_destroy_cq(f->rcq);
	if (f->scq)
		ibv_destroy_cq(f->scq);
	if (f->pd)
		ibv_dealloc_pd(f->pd);
	if (f->ctx)
		ibv_close_device(f->ctx);
	free(f->tbuf);
	free(f->ibuf);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

/* One signaled WR completes with status want (and wr_id). */
static int expect_wc(fixture *f, uint64_t wr_id, enum ibv_wc_status want, const char *what)
{
	struct ibv_wc wc;

	if (poll_one(f->scq, &wc)) {
		CHECK(0, "%s: no completion", what);
		return -1;
	}
	CHECK(wc.status == want && wc.wr_id == wr_id, "%s: status %d (%s) wr_id %llu, want %d",
	      what, wc.status, ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, want);
	return wc.status == want ? 0 : -1;
}

/* qp-ex: writes (address before and after the data, inline), payloads
 * checked. */
static void qpex_writes(fixture *f)
{
	uint32_t dctn = f->dct->qp_num, rkey = f->tmr->rkey, lkey = f->imr->lkey;
	uint64_t t = (uint64_t)(uintptr_t)f->tbuf, i = (uint64_t)(uintptr_t)f->ibuf;
	uint8_t small[40];

	fill(f->ibuf, 1024, 1);
	ibv_wr_start(f->qpx);
	f->qpx->wr_id = 1;
	f->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(f->qpx, rkey, t);
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, dctn, KEY);
	ibv_wr_set_sge(f->qpx, lkey, i, 1024);
	f->qpx->wr_id = 2;
	ibv_wr_rdma_write(f->qpx, rkey, t + 2048);
	ibv_wr_set_sge(f->qpx, lkey, i + 100, 300); /* data first, address second */
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, dctn, KEY);
	fill(small, sizeof small, 2);
	f->qpx->wr_id = 3;
	ibv_wr_rdma_write(f->qpx, rkey, t + 4096);
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, dctn, KEY);
	ibv_wr_set_inline_data(f->qpx, small, sizeof small);
	CHECK(ibv_wr_complete(f->qpx) == 0, "qp-ex batch of DC writes");
	for (uint64_t id = 1; id <= 3; id++)
		expect_wc(f, id, IBV_WC_SUCCESS, "DC write");
	CHECK(!memcmp(f->tbuf, f->ibuf, 1024), "DC write payload");
	CHECK(!memcmp(f->tbuf + 2048, f->ibuf + 100, 300), "DC write (data set first) payload");
	CHECK(!memcmp(f->tbuf + 4096, small, sizeof small), "DC inline write payload");
}

/* qp-ex: a read, a fetch-add and a compare-swap in one batch. */
static void qpex_read_atomics(fixture *f)
{
	uint32_t dctn = f->dct->qp_num, rkey = f->tmr->rkey, lkey = f->imr->lkey;
	uint64_t t = (uint64_t)(uintptr_t)f->tbuf, i = (uint64_t)(uintptr_t)f->ibuf, v;

	fill(f->tbuf + 6144, 256, 3);
	v = 40;
	memcpy(f->tbuf + 7168, &v, 8);
	ibv_wr_start(f->qpx);
	f->qpx->wr_id = 4;
	ibv_wr_rdma_read(f->qpx, rkey, t + 6144);
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, dctn, KEY);
	ibv_wr_set_sge(f->qpx, lkey, i + 8192, 256);
	f->qpx->wr_id = 5;
	ibv_wr_atomic_fetch_add(f->qpx, rkey, t + 7168, 2);
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, dctn, KEY);
	ibv_wr_set_sge(f->qpx, lkey, i + 9000 - 9000 % 8, 8);
	f->qpx->wr_id = 6;
	ibv_wr_atomic_cmp_swp(f->qpx, rkey, t + 7168, 42, 99);
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, dctn, KEY);
	ibv_wr_set_sge(f->qpx, lkey, i + 9016, 8);
	CHECK(ibv_wr_complete(f->qpx) == 0, "qp-ex batch of a read and atomics");
	for (uint64_t id = 4; id <= 6; id++)
		expect_wc(f, id, IBV_WC_SUCCESS, "DC read / atomic");
	CHECK(!memcmp(f->ibuf + 8192, f->tbuf + 6144, 256), "DC read payload");
	memcpy(&v, f->tbuf + 7168, 8);
	CHECK(v == 99, "fetch-add then compare-swap: target %llu, want 99", (unsigned long long)v);
	memcpy(&v, f->ibuf + 9000 - 9000 % 8, 8);
	CHECK(v == 40, "fetch-add's old value %llu, want 40", (unsigned long long)v);
	memcpy(&v, f->ibuf + 9016, 8);
	CHECK(v == 42, "compare-swap's old value %llu, want 42", (unsigned long long)v);
}

/* qp-ex: a SEND into the DCT's SRQ; the DCT's receive completion. */
static void qpex_send(fixture *f)
{
	uint32_t dctn = f->dct->qp_num, lkey = f->imr->lkey;
	uint64_t i = (uint64_t)(uintptr_t)f->ibuf;
	struct ibv_sge rs = { (uintptr_t)(f->tbuf + 8192), 512, f->tmr->lkey };
	struct ibv_recv_wr rw = { .wr_id = 77, .sg_list = &rs, .num_sge = 1 }, *bad;
	struct ibv_wc wc;

	CHECK(ibv_post_srq_recv(f->srq, &rw, &bad) == 0, "receive on the DCT's SRQ");
	ibv_wr_start(f->qpx);
	f->qpx->wr_id = 7;
	ibv_wr_send(f->qpx);
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, dctn, KEY);
	ibv_wr_set_sge(f->qpx, lkey, i + 512, 200);
	CHECK(ibv_wr_complete(f->qpx) == 0, "qp-ex DC send");
	expect_wc(f, 7, IBV_WC_SUCCESS, "DC send");
	CHECK(poll_one(f->rcq, &wc) == 0 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 77 &&
	      wc.opcode == IBV_WC_RECV && wc.byte_len == 200 && wc.qp_num == dctn,
	      "the DCT's receive completion (status %d, wr_id %llu, %u bytes, QP 0x%x)", wc.status,
	      (unsigned long long)wc.wr_id, wc.byte_len, wc.qp_num);
	CHECK(!memcmp(f->tbuf + 8192, f->ibuf + 512, 200), "DC send payload");
}

/* A wrong key: remote access error; the DCI goes to error. */
static void qpex_wrong_key(fixture *f)
{
	static const uint8_t before[16];

	memset(f->tbuf + 12288, 0, 16);
	ibv_wr_start(f->qpx);
	f->qpx->wr_id = 8;
	f->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(f->qpx, f->tmr->rkey, (uintptr_t)(f->tbuf + 12288));
	mlx5dv_wr_set_dc_addr(f->mqp, f->ah, f->dct->qp_num, KEY + 1);
	ibv_wr_set_sge(f->qpx, f->imr->lkey, (uintptr_t)f->ibuf, 16);
	CHECK(ibv_wr_complete(f->qpx) == 0, "qp-ex write with a wrong key");
	expect_wc(f, 8, IBV_WC_REM_ACCESS_ERR, "wrong DC key");
	CHECK(!memcmp(f->tbuf + 12288, before, 16), "a write with a wrong key landed");
}

/* Raw WQEs on a DCI of its own: ctrl | compact AV | raddr | inline, the
 * doorbell record and the register, the CQE read from the ring. */
static void raw_wqes(fixture *f)
{
	struct ibv_qp *dci = make_dci(f);
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	struct mlx5dv_obj o = { .qp = { .in = dci, .out = &dq },
				.cq = { .in = f->scq, .out = &dc } };
	struct mlx5_wqe_ctrl_seg *c;
	struct mlx5_wqe_datagram_seg *av;
	struct mlx5_wqe_raddr_seg *r;
	struct mlx5_wqe_inl_data_seg *inl;
	struct ibv_wc wc;
	uint64_t v = 0x1122334455667788ull, until;
	struct mlx5_cqe64 *cqe = NULL;

	CHECK(dci != NULL, "second DCI (errno %d)", errno);
	if (!dci)
		return;
	while (ibv_poll_cq(f->scq, 1, &wc) == 1) /* the other DCI's leftovers */
		;
	CHECK(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ) == 0, "mlx5dv_init_obj");
	memset(f->tbuf + 16384, 0, 8);
	c = dq.sq.buf;
	memset(c, 0, 64);
	av = (void *)(c + 1);
	r = (void *)((uint8_t *)av + 16);
	inl = (void *)(r + 1);
	mlx5dv_set_ctrl_seg(c, 0, MLX5_OPCODE_RDMA_WRITE, 0, dci->qp_num, MLX5_WQE_CTRL_CQ_UPDATE,
			    4, 0, 0);
	av->av.key.dc_key = htobe64(KEY);
	av->av.dqp_dct = htobe32(f->dct->qp_num); /* compact: no MLX5_EXTENDED_UD_AV */
	r->raddr = htobe64((uintptr_t)(f->tbuf + 16384));
	r->rkey = htobe32(f->tmr->rkey);
	inl->byte_count = htobe32(8 | MLX5_INLINE_SEG);
	memcpy(inl + 1, &v, 8);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	dq.dbrec[MLX5_SND_DBR] = htobe32(1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	{
		uint64_t db;

		/* The register's first 8 bytes, one atomic store: the engine
		 * thread acquires it (a memcpy raced with that under TSan). */
		memcpy(&db, c, 8);
		__atomic_store_n((uint64_t *)dq.bf.reg, db, __ATOMIC_RELEASE);
	}
	until = now_ns() + 5000000000ull;
	/* The CQ's consumer index is the emulated poller's; it is empty now. */
	while (now_ns() < until && !cqe) {
		for (uint32_t k = 0; k < dc.cqe_cnt; k++) {
			struct mlx5_cqe64 *e = (void *)((uint8_t *)dc.buf + k * dc.cqe_size);
			/* The CQE's last 8 bytes (sop_drop_qpn ... op_own) in one
			 * acquire load: the engine thread releases them after the
			 * rest of the CQE. */
			uint64_t tail = __atomic_load_n((uint64_t *)&e->sop_drop_qpn, __ATOMIC_ACQUIRE);
			uint8_t op = ((const uint8_t *)&tail)[7] >> 4;
			uint32_t qpn;

			memcpy(&qpn, &tail, 4);
			qpn = be32toh(qpn) & 0xffffff;

			if (op != MLX5_CQE_INVALID && qpn == dci->qp_num)
				cqe = e;
		}
	}
	CHECK(cqe && (cqe->op_own >> 4) == MLX5_CQE_REQ, "raw DC write's CQE (opcode %d)",
	      cqe ? cqe->op_own >> 4 : -1);
	memcpy(&v, f->tbuf + 16384, 8);
	CHECK(v == 0x1122334455667788ull, "raw DC write payload 0x%llx", (unsigned long long)v);
	ibv_destroy_qp(dci);
}

/* wr_set_dc_addr on an RC QP's qp-ex: the batch fails. */
static void rc_refuses_dc_addr(fixture *f)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_RC, .send_cq = f->scq, .recv_cq = f->scq, .pd = f->pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp_ex(f->ctx, &a);
	struct ibv_qp_ex *x = qp ? ibv_qp_to_qp_ex(qp) : NULL;
	struct mlx5dv_qp_ex *m = x ? mlx5dv_qp_ex_from_ibv_qp_ex(x) : NULL;

	CHECK(m != NULL, "mlx5dv_qp_ex of an RC QP");
	if (m && !kit_connect(qp, qp->qp_num, f->lid, IBV_ACCESS_REMOTE_WRITE)) {
		ibv_wr_start(x);
		ibv_wr_rdma_write(x, f->tmr->rkey, (uintptr_t)f->tbuf);
		mlx5dv_wr_set_dc_addr(m, f->ah, f->dct->qp_num, KEY);
		ibv_wr_set_sge(x, f->imr->lkey, (uintptr_t)f->ibuf, 8);
		CHECK(ibv_wr_complete(x) == EINVAL, "a DC address on an RC QP");
	}
	if (qp)
		ibv_destroy_qp(qp);
}

int main(void)
{
	fixture f;

	if (fixture_open(&f)) {
		fprintf(stderr, "test_dc: fixture (errno %d)\n", errno);
		fixture_close(&f);
		return 1;
	}
	qpex_writes(&f);
	qpex_read_atomics(&f);
	qpex_send(&f);
	qpex_wrong_key(&f);
	rc_refuses_dc_addr(&f);
	raw_wqes(&f); /* last: its CQE stays in the send CQ, unpolled by verbs */
	fixture_close(&f);
	printf("test_dc: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
