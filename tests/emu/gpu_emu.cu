/*
 * gic-gpu-emu: GPU threads post mini-gda WQEs (include/gic/post.h) into
 * the queues of an RC QP that verbs created on the emulated rdma-core
 * device, as a GPU-initiated library does on a ConnectX: the QP and CQ
 * come from ibv_create_qp/ibv_create_cq, their queues from
 * mlx5dv_init_obj; the send queue, doorbell record, doorbell register
 * (bf.reg) and CQ are registered with CUDA (cudaHostRegisterMapped: they
 * are ordinary pages, so no I/O-memory flag is needed or used), and GPU
 * threads build the WQEs, write the record, ring bf.reg themselves (the
 * GPU-rung doorbell path) and poll the CQ. softnic's CPU engine executes.
 * Every payload is checked. Run with LD_LIBRARY_PATH=<build>/emu.
 * Prints "gic-gpu-emu: PASSED" or what failed.
 */
#include <cuda_runtime.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/post.h"
#include "gpu_emu_kit.cuh"
#include "verbs_kit.h"

/* Registers [p, p + len) with CUDA (whole pages) and returns its device
 * address. */
static void *map(void *p, size_t len)
{
	void *d = NULL;

	CUDA_OK(cudaHostRegister(p, len, cudaHostRegisterMapped | cudaHostRegisterPortable));
	CUDA_OK(cudaHostGetDevicePointer(&d, p, 0));
	return d;
}

/* QP q of the sender and its receiver, and the GPU's view of q's queues. */
static int make_pair(struct ibv_context *ctx, struct ibv_pd *pd[2], gic_sq *sq, gic_cq *cq)
{
	struct ibv_cq *scq = ibv_create_cq(ctx, 255, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 15, NULL, NULL, 0);
	struct ibv_qp_init_attr qa;
	struct ibv_qp *a, *b;
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	struct mlx5dv_obj o;

	if (!scq || !rcq)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = scq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 256;
	qa.cap.max_send_sge = 1;
	qa.cap.max_inline_data = 16;
	a = ibv_create_qp(pd[0], &qa);
	qa.send_cq = qa.recv_cq = rcq;
	b = ibv_create_qp(pd[1], &qa);
	if (!a || !b || kit_connect(a, b->qp_num, 1, IBV_ACCESS_REMOTE_WRITE) ||
	    kit_connect(b, a->qp_num, 1, IBV_ACCESS_REMOTE_WRITE))
		return -1;
	memset(&o, 0, sizeof(o));
	o.qp.in = a;
	o.qp.out = &dq;
	o.cq.in = scq;
	o.cq.out = &dc;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ))
		return -1;
	memset(sq, 0, sizeof(*sq));
	memset(cq, 0, sizeof(*cq));
	sq->wqes = (uint8_t *)map(dq.sq.buf, (size_t)dq.sq.wqe_cnt * dq.sq.stride);
	/* The record page holds both words: dbrec[1] is the send counter. */
	sq->dbrec = (uint32_t *)map(dq.dbrec, 64) + 1;
	sq->db = (uint64_t *)map(dq.bf.reg, dq.bf.size);
	sq->bb_cnt = dq.sq.wqe_cnt;
	sq->qpn = a->qp_num;
	sq->max_inline = 16;
	cq->cqes = (gic_cqe64 *)map(dc.buf, (size_t)dc.cqe_cnt * dc.cqe_size);
	cq->dbrec = (uint32_t *)map(dc.dbrec, 64);
	cq->cqe_cnt = dc.cqe_cnt;
	cq->cqn = dc.cqn;
	return 0;
}

int main(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = l && l[0] ? ibv_open_device(l[0]) : NULL;
	struct ibv_pd *pd[2];
	gic_sq sq[NQP];
	gic_cq cq[NQP];
	uint64_t *dst, *d_dst;
	struct ibv_mr *mr;
	int bad;

	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	if (!ctx || !mlx5dv_is_supported(l[0])) {
		fprintf(stderr, "gic-gpu-emu: no emulated device (LD_LIBRARY_PATH=<build>/emu?)\n");
		return 1;
	}
	pd[0] = ibv_alloc_pd(ctx);
	pd[1] = ibv_alloc_pd(ctx);
	CUDA_OK(cudaHostAlloc((void **)&dst, NQP * PER * 8, cudaHostAllocMapped));
	memset(dst, 0, NQP * PER * 8);
	CUDA_OK(cudaHostGetDevicePointer((void **)&d_dst, dst, 0));
	mr = ibv_reg_mr(pd[1], dst, NQP * PER * 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (int q = 0; q < NQP; q++)
		if (!mr || make_pair(ctx, pd, &sq[q], &cq[q])) {
			fprintf(stderr, "gic-gpu-emu: verbs setup of QP %d failed\n", q);
			return 1;
		}
	bad = gpu_post_and_check("gic-gpu-emu", sq, cq, dst, d_dst, mr->rkey);
	printf("gic-gpu-emu: %d QPs x %d GPU-posted writes, GPU-rung doorbells on the emulated "
	       "device: %s\n", NQP, PER, bad ? "FAILED" : "PASSED");
	return bad ? 1 : 0;
}
