/*
 * Direct posting on the emulated device, as a GPU-initiated library does
 * it: QPs and CQs made with verbs, their queues taken with
 * mlx5dv_init_obj, WQEs built with rdma-core's own mlx5dv.h setters, the
 * doorbell record in dbrec[MLX5_SND_DBR], the doorbell in bf.reg (the last
 * WQE's first 8 bytes, as rdma-core rings; or a BlueFlame copy of the whole
 * WQE), and the CQ polled in its buffer by owner bit and opcode. Built
 * against the installed rdma-core, run with LD_LIBRARY_PATH=<build>/emu.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs_kit.h"

typedef struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	uint32_t ci;
} side;

static int open_side(struct ibv_context *ctx, side *s)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 64, .max_send_sge = 1 } };
	struct mlx5dv_obj o;

	s->pd = ibv_alloc_pd(ctx);
	s->cq = ibv_create_cq(ctx, 63, NULL, NULL, 0);
	s->buf = calloc(1, 1 << 16);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = s->mr ? ibv_create_qp(s->pd, &qa) : NULL;
	if (!s->qp)
		return -1;
	memset(&o, 0, sizeof(o));
	o.qp.in = s->qp;
	o.qp.out = &s->dq;
	o.cq.in = s->cq;
	o.cq.out = &s->dc;
	return mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ);
}

/* Builds a signaled RDMA write of len bytes at WQE index pi (one BB). */
static void *build_write(side *a, side *b, uint16_t pi, uint32_t off, uint32_t len)
{
	uint8_t *wqe = (uint8_t *)a->dq.sq.buf + (size_t)(pi & (a->dq.sq.wqe_cnt - 1)) * a->dq.sq.stride;
	struct mlx5_wqe_raddr_seg *r = (struct mlx5_wqe_raddr_seg *)(wqe + 16);

	mlx5dv_set_ctrl_seg((struct mlx5_wqe_ctrl_seg *)wqe, pi, MLX5_OPCODE_RDMA_WRITE, 0,
			    a->qp->qp_num, MLX5_WQE_CTRL_CQ_UPDATE, 3, 0, 0);
	r->raddr = htobe64((uintptr_t)b->buf + off);
	r->rkey = htobe32(b->mr->rkey);
	r->reserved = 0;
	mlx5dv_set_data_seg((struct mlx5_wqe_data_seg *)(wqe + 32), len, a->mr->lkey,
			    (uintptr_t)a->buf + off);
	return wqe;
}

/* Polls a's CQ buffer (owner bit, opcode) for the CQE of WQE pi, 5 s. */
static int poll_cqe(side *a, uint16_t pi)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct mlx5_cqe64 *c = (struct mlx5_cqe64 *)((uint8_t *)a->dc.buf +
			(size_t)(a->ci & (a->dc.cqe_cnt - 1)) * a->dc.cqe_size);
		/* The last 8 bytes (qpn, wqe_counter, signature, op_own) in one
		 * acquire load: the CQE's other bytes are read after it. */
		uint64_t tail = __atomic_load_n((uint64_t *)&c->sop_drop_qpn, __ATOMIC_ACQUIRE);
		struct mlx5_cqe64 cqe;
		uint8_t op;

		memcpy(&cqe.sop_drop_qpn, &tail, 8);
		op = mlx5dv_get_cqe_opcode(&cqe);
		if (op != MLX5_CQE_INVALID && mlx5dv_get_cqe_owner(&cqe) == !!(a->ci & a->dc.cqe_cnt)) {
			a->ci++;
			/* The consumer index, after the reads of the CQE. */
			__atomic_store_n(&a->dc.dbrec[0], htobe32(a->ci & 0xffffff), __ATOMIC_RELEASE);
			return op == MLX5_CQE_REQ && be16toh(cqe.wqe_counter) == pi ? 0 : -1;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			return -1;
	}
}

/* An address handle's mlx5 address vector, as mlx5dv_init_obj gives it,
 * field by field against rdma-core's struct mlx5_wqe_av; bad attributes. */
static void ah_cases(struct ibv_pd *pd)
{
	struct ibv_ah_attr at;
	struct mlx5dv_ah dah = { 0 };
	struct mlx5dv_obj o;
	struct ibv_ah *ah;

	memset(&at, 0, sizeof(at));
	at.dlid = 0x1234;
	at.sl = 5;
	at.static_rate = 3;
	at.src_path_bits = 0x81;
	at.port_num = 1;
	at.is_global = 1;
	at.grh.flow_label = 0xabcde;
	at.grh.hop_limit = 64;
	at.grh.traffic_class = 0x2c;
	for (int i = 0; i < 16; i++)
		at.grh.dgid.raw[i] = (uint8_t)(0xf0 + i);
	ah = ibv_create_ah(pd, &at);
	CHECK(ah != NULL, "ibv_create_ah: %s", strerror(errno));
	memset(&o, 0, sizeof(o));
	o.ah.in = ah;
	o.ah.out = &dah;
	CHECK(ah && mlx5dv_init_obj(&o, MLX5DV_OBJ_AH) == 0 && dah.av, "mlx5dv_init_obj(AH)");
	if (dah.av) {
		const struct mlx5_wqe_av *av = dah.av;

		CHECK(be16toh(av->rlid) == 0x1234 && av->stat_rate_sl == (3 << 4 | 5) &&
		      av->fl_mlid == 0x01, "AV lid, rate, sl, path bits");
		CHECK(be32toh(av->grh_gid_fl) == (0xabcde | 1u << 30) && av->hop_limit == 64 &&
		      av->tclass == 0x2c && memcmp(av->rgid, at.grh.dgid.raw, 16) == 0 &&
		      (be32toh(av->dqp_dct) & MLX5_EXTENDED_UD_AV), "AV global route");
	}
	CHECK(!ah || ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
	at.port_num = 2;
	errno = 0;
	CHECK(!ibv_create_ah(pd, &at) && errno == EINVAL, "an AH on port 2");
	at.port_num = 1;
	at.grh.sgid_index = 9;
	errno = 0;
	CHECK(!ibv_create_ah(pd, &at) && errno == EINVAL, "an AH with GID index 9");
}

int main(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = l && l[0] ? ibv_open_device(l[0]) : NULL;
	struct mlx5dv_context dv = { 0 };
	side a, b;

	CHECK(l && l[0] && mlx5dv_is_supported(l[0]), "mlx5dv_is_supported");
	CHECK(ctx && mlx5dv_query_device(ctx, &dv) == 0 && (dv.flags & MLX5DV_CONTEXT_FLAGS_CQE_V1),
	      "mlx5dv_query_device");
	if (!ctx || open_side(ctx, &a) || open_side(ctx, &b) ||
	    kit_connect(a.qp, b.qp->qp_num, 1, IBV_ACCESS_REMOTE_WRITE) ||
	    kit_connect(b.qp, a.qp->qp_num, 1, IBV_ACCESS_REMOTE_WRITE)) {
		fprintf(stderr, "test_mlx5dv: setup: %s\n", strerror(errno));
		return 1;
	}
	CHECK(a.dq.sq.stride == 64 && a.dq.sq.wqe_cnt >= 64 && a.dq.bf.size >= 64 &&
	      a.dc.cqe_size == 64 && a.dc.cqe_cnt >= 64, "descriptors");
	a.ci = 0;
	for (uint16_t pi = 0; pi < 200; pi++) {
		uint32_t off = (pi % 100) * 256, len = 1 + pi % 200;
		void *wqe;

		for (uint32_t i = 0; i < len; i++)
			a.buf[off + i] = (uint8_t)(pi * 3 + i + 1);
		wqe = build_write(&a, &b, pi, off, len);
		/* Release stores: the WQE before the record, the record before
		 * the doorbell (rdma-core's barriers, in a form ThreadSanitizer
		 * sees too). */
		__atomic_store_n(&a.dq.dbrec[MLX5_SND_DBR], htobe32((uint32_t)(pi + 1) & 0xffff),
				 __ATOMIC_RELEASE);
		if (pi & 1) /* BlueFlame: the whole WQE, its first 8 bytes last */
			memcpy((uint8_t *)a.dq.bf.reg + 8, (uint8_t *)wqe + 8, 56);
		/* rdma-core's doorbell: the WQE's first 8 bytes */
		__atomic_store_n((uint64_t *)a.dq.bf.reg, *(uint64_t *)wqe, __ATOMIC_RELEASE);
		CHECK(poll_cqe(&a, pi) == 0, "CQE of WQE %u", pi);
		CHECK(memcmp(b.buf + off, a.buf + off, len) == 0, "payload of WQE %u", pi);
	}
	ah_cases(a.pd);
	for (side *x = &a; x; x = x == &a ? &b : NULL) {
		ibv_destroy_qp(x->qp);
		ibv_dereg_mr(x->mr);
		ibv_destroy_cq(x->cq);
		ibv_dealloc_pd(x->pd);
		free(x->buf);
	}
	ibv_close_device(ctx);
	ibv_free_device_list(l);
	printf("test_mlx5dv: %d checks, %d failed\n", checks, failed);
	return failed ? 1 : 0;
}
