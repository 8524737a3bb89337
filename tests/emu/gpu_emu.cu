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
 *
 * With GIC_EMU_ENGINE=gpu the emulation runs softnic's GPU engine: the
 * queues are then GPU (managed) memory that the kernel uses as they are,
 * the payload lands in GPU memory, and a host-posted verbs write
 * (ibv_post_send, ibv_poll_cq) from mapped host memory into GPU memory is
 * checked too. Prints "gic-gpu-emu: ... PASSED" or what failed.
 */
#include <cuda_runtime.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/post.h"
#include "gpu_emu_kit.cuh"
#include "verbs_kit.h"

/* The device address of [p, p + len): p itself for memory the GPU
 * reaches already (the GPU engine's managed queues), else after
 * registering the range with CUDA (the CPU engine's host queues). */
static void *map(void *p, size_t len)
{
	struct cudaPointerAttributes at;
	void *d = NULL;

	if (cudaPointerGetAttributes(&at, p) == cudaSuccess &&
	    (at.type == cudaMemoryTypeManaged || at.type == cudaMemoryTypeDevice))
		return p;
	(void)cudaGetLastError();
	CUDA_OK(cudaHostRegister(p, len, cudaHostRegisterMapped | cudaHostRegisterPortable));
	CUDA_OK(cudaHostGetDevicePointer(&d, p, 0));
	return d;
}

/* QP q of the sender and its receiver, and the GPU's view of q's queues. */
static int make_pair(struct ibv_context *ctx, struct ibv_pd *pd[2], gic_sq *sq, gic_cq *cq,
		     struct ibv_qp **out_qp, struct ibv_cq **out_cq)
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
	*out_qp = a;
	*out_cq = scq;
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

/* A verbs write posted by the host (ibv_post_send, ibv_poll_cq) on QP qp
 * of pd[0] from mapped host memory into a region of pd[1]: GPU memory on
 * the GPU engine, mapped host memory on the CPU engine (which cannot reach
 * GPU memory). The bytes are read back and compared. Returns failures. */
static int host_write_check(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_pd *pd[2], int gpu)
{
	enum { LEN = 65536 };
	uint8_t *src, *dst, *back = (uint8_t *)malloc(LEN);
	struct ibv_mr *ms, *md;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *badwr;
	struct ibv_wc wc;
	uint64_t end = gic_now_ns() + 10000000000ull;
	int n = 0;

	CUDA_OK(cudaHostAlloc((void **)&src, LEN, cudaHostAllocMapped));
	if (gpu)
		CUDA_OK(cudaMalloc((void **)&dst, LEN));
	else
		CUDA_OK(cudaHostAlloc((void **)&dst, LEN, cudaHostAllocMapped));
	for (int i = 0; i < LEN; i++)
		src[i] = (uint8_t)(i * 7 + 3);
	ms = ibv_reg_mr(pd[0], src, LEN, IBV_ACCESS_LOCAL_WRITE);
	md = ibv_reg_mr(pd[1], dst, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!ms || !md || !back) {
		fprintf(stderr, "gic-gpu-emu: host write: ibv_reg_mr failed\n");
		return 1;
	}
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)src;
	sge.length = LEN;
	sge.lkey = ms->lkey;
	wr.wr_id = 7;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)dst;
	wr.wr.rdma.rkey = md->rkey;
	if (ibv_post_send(qp, &wr, &badwr)) {
		fprintf(stderr, "gic-gpu-emu: host write: ibv_post_send failed\n");
		return 1;
	}
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && gic_now_ns() < end)
		;
	if (n != 1 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "gic-gpu-emu: host write: %s\n",
			n == 1 ? ibv_wc_status_str(wc.status) : "no completion within 10 s");
		return 1;
	}
	CUDA_OK(cudaMemcpy(back, dst, LEN, cudaMemcpyDefault));
	if (memcmp(back, src, LEN)) {
		fprintf(stderr, "gic-gpu-emu: host write: the %s bytes differ\n", gpu ? "GPU" : "host");
		return 1;
	}
	return 0; /* freed at exit: no cudaFree while a GPU engine runs */
}

int main(void)
{
	struct ibv_device **l;
	struct ibv_context *ctx;
	struct ibv_pd *pd[2];
	struct ibv_qp *qps[NQP + 1];
	struct ibv_cq *cqs[NQP + 1];
	gic_sq sq[NQP + 1];
	gic_cq cq[NQP + 1];
	uint64_t *dst, *d_dst;
	struct ibv_mr *mr;
	const char *engine = getenv("GIC_EMU_ENGINE");
	int gpu = engine && !strcmp(engine, "gpu"), bad;

	/* This program's CUDA module loads before a GPU engine starts (the
	 * device's first open): a kernel loaded lazily while the persistent
	 * engine spins would never load. */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	CUDA_OK(cudaFree(0));
	CUDA_OK(cudaHostAlloc((void **)&dst, NQP * PER * 8, cudaHostAllocMapped));
	memset(dst, 0, NQP * PER * 8);
	CUDA_OK(cudaHostGetDevicePointer((void **)&d_dst, dst, 0));
	l = ibv_get_device_list(NULL);
	ctx = l && l[0] ? ibv_open_device(l[0]) : NULL;
	if (!ctx || !mlx5dv_is_supported(l[0])) {
		fprintf(stderr, "gic-gpu-emu: no emulated device (LD_LIBRARY_PATH=<build>/emu?)\n");
		return 1;
	}
	pd[0] = ibv_alloc_pd(ctx);
	pd[1] = ibv_alloc_pd(ctx);
	mr = ibv_reg_mr(pd[1], dst, NQP * PER * 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	for (int q = 0; q <= NQP; q++)
		if (!mr || make_pair(ctx, pd, &sq[q], &cq[q], &qps[q], &cqs[q])) {
			fprintf(stderr, "gic-gpu-emu: verbs setup of QP %d failed\n", q);
			return 1;
		}
	bad = host_write_check(qps[NQP], cqs[NQP], pd, gpu); /* its own QP */
	bad += gpu_post_and_check("gic-gpu-emu", sq, cq, dst, d_dst, mr->rkey);
	printf("gic-gpu-emu: %s engine, queues in %s memory: a host-posted verbs write into %s "
	       "memory and %d QPs x %d GPU-posted writes with GPU-rung doorbells: %s\n",
	       gpu ? "GPU" : "CPU", gpu ? "GPU (managed)" : "host", gpu ? "GPU" : "host", NQP, PER,
	       bad ? "FAILED" : "PASSED");
	fflush(stdout);
	/* The last close stops the engine (a GPU engine's kernel first), then
	 * frees what the device still holds. */
	if (ibv_close_device(ctx)) {
		fprintf(stderr, "gic-gpu-emu: ibv_close_device failed\n");
		bad++;
	}
	return bad ? 1 : 0;
}
