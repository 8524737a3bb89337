/*
 * Diagnostic (not for use): one QP's drain on softnic's GPU engine in
 * on-demand mode, so that a profiler that serializes kernels (ncu) sees the
 * engine kernel alone. A GPU thread fills the ring with N one-BB 8-byte
 * inline writes (every 32nd signaled, as `gic rate --row t32-q1-warp`)
 * and rings once; softnic_progress() then runs the engine kernel until
 * the QP is idle. Times each round, checks every CQE and every payload.
 * usage: drain_prof ROUNDS
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/post.h"
#include "gic/softnic_gpu.h"

#define CK(call)                                                                     \
	do {                                                                         \
		cudaError_t e_ = (call);                                             \
		if (e_ != cudaSuccess) {                                             \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,            \
				cudaGetErrorString(e_));                             \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

enum { LOG_BB = 14, N = 16352, SIG = 32 };

__global__ void fill(gic_sq *sq, uint64_t *dst, uint32_t rkey, uint64_t tag, int *err)
{
	gic_sq s = *sq;

	for (int i = 0; i < N; i++) {
		uint64_t pos;

		if (gic_sq_reserve_excl(&s, 1, &pos, GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull)) {
			*err = 1;
			return;
		}
		gic_wqe_write_inline_u64(&s, pos, (uint64_t)(dst + i), rkey, tag + i,
					 i % SIG == SIG - 1 ? GIC_CTRL_CQ_UPDATE : 0);
		if (i % SIG == SIG - 1)
			gic_sq_note_signaled(&s, pos + 1, 0);
	}
	gic_sq_publish_excl(&s, GIC_ORDER_FENCE_GPU);
	*sq = s;
}

__global__ void drain(gic_sq *sq, int *err)
{
	gic_sq s = *sq;

	int rc = gic_sq_quiet(&s, GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);

	if (rc)
		*err = 1000 + rc;
	*sq = s;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 4, *err;
	softnic_attr na = { 0 };
	softnic_gpu_attr ga = { 0, 1, 1, 0, 1, (size_t)256 << 20 };
	softnic *nic;
	softnic_pd *pd[2];
	softnic_qp *qp[2];
	softnic_mr *mr;
	uint64_t *dst, *host = (uint64_t *)malloc(N * 8);
	gic_sq sqv, *d_sq;
	gic_cq cqv, *d_cq;
	cudaStream_t st;

	CK(cudaMalloc(&dst, N * 8));
	CK(cudaMallocManaged(&err, sizeof(int)));
	*err = 0;
	nic = softnic_open_gpu(&na, &ga);
	if (!nic)
		return 1;
	pd[0] = softnic_pd_alloc(nic);
	pd[1] = softnic_pd_alloc(nic);
	{
		softnic_qp_attr a = { LOG_BB, softnic_cq_create(nic, 12), NULL };
		softnic_qp_attr b = { 6, softnic_cq_create(nic, 6), softnic_cq_create(nic, 6) };

		qp[0] = softnic_qp_create(pd[0], &a);
		qp[1] = softnic_qp_create(pd[1], &b);
	}
	mr = softnic_reg_mr(pd[1], dst, N * 8, SOFTNIC_ACCESS_REMOTE_WRITE);
	if (!qp[0] || !qp[1] || !mr || softnic_qp_connect(qp[0], qp[1])) {
		fprintf(stderr, "setup: %s\n", softnic_last_error(nic));
		return 1;
	}
	softnic_qp_view(qp[0], &sqv, &cqv);
	CK(cudaMalloc(&d_sq, sizeof(*d_sq)));
	CK(cudaMalloc(&d_cq, sizeof(*d_cq)));
	CK(cudaMemcpy(d_cq, &cqv, sizeof(cqv), cudaMemcpyHostToDevice));
	sqv.cq = d_cq; /* the device copy of the CQ view */
	CK(cudaMemcpy(d_sq, &sqv, sizeof(sqv), cudaMemcpyHostToDevice));
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	for (int r = 0; r < rounds; r++) {
		uint64_t tag = (uint64_t)(r + 1) << 32, t0, t1;
		int bad = 0;

		fill<<<1, 1, 0, st>>>(d_sq, dst, softnic_mr_rkey(mr), tag, err);
		CK(cudaStreamSynchronize(st));
		t0 = gic_now_ns();
		softnic_progress(nic);
		t1 = gic_now_ns();
		drain<<<1, 1, 0, st>>>(d_sq, err);
		CK(cudaStreamSynchronize(st));
		CK(cudaMemcpy(host, dst, N * 8, cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++)
			bad += host[i] != tag + (uint64_t)i;
		printf("round %d: engine %.1f us (%.2f M msg/s incl. launch), err %d, bad payloads %d\n",
		       r, (t1 - t0) / 1e3, N / ((t1 - t0) / 1e3), *err, bad);
		if (*err || bad)
			return 1;
	}
	softnic_close(nic);
	return 0;
}
