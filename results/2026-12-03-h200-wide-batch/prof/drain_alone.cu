/*
 * Diagnostic (not for use): one QP's drain on softnic's persistent GPU
 * engine (GPU scope, as `gic rate` runs it; B one-warp blocks), the engine
 * alone: one GPU thread fills the 2^14-BB ring with N one-BB 8-byte
 * inline writes (every 32nd signaled) without ringing, then takes the
 * time, rings once, waits for the last CQE (gic_sq_quiet) and takes the
 * time again. With "conc", one warp posts as `gic rate --row t32-q1-warp`
 * does instead (gic_sq_warp_write_inline, 32 WQEs and one doorbell per
 * round, the last signaled, thread-major slots) while the engine drains,
 * timed from its first post to its last CQE (gic_sq_wait_retired). Checks
 * every payload; prints the engine's counters of each round. "conc-wide":
 * the same poster with the quiet that loads 8 CQE tails per trip
 * (gic_sq_quiet_wide).
 * usage: [DRAIN_BATCH=32|64] drain_alone ROUNDS [BLOCKS [conc|conc-wide]]
 * (DRAIN_BATCH: softnic_gpu_attr.batch_wqes, added in the sixteenth session)
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
	*sq = s;
}

__global__ void drain(gic_sq *sq, int *err, uint64_t *ns)
{
	gic_sq s = *sq;
	uint64_t t0 = gic_now_ns();
	int rc;

	gic_sq_publish_excl(&s, GIC_ORDER_FENCE_GPU);
	rc = gic_sq_quiet(&s, GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	*ns = gic_now_ns() - t0;
	if (rc)
		*err = 1000 + rc;
	*sq = s;
}

/* The rate row's poster: one warp, N / 32 rounds. */
__global__ void post_warp(gic_sq *sq, uint64_t *dst, uint32_t rkey, uint64_t tag, int *err,
			  uint64_t *ns, int wide)
{
	int t = threadIdx.x, per = N / 32, rc = 0;
	uint64_t t0 = gic_now_ns();
	gic_sq_warp w;

	gic_sq_warp_begin(&w, sq);
	for (int i = 0; i < per && !rc; i++) {
		uint64_t slot = (uint64_t)t * per + i, v = tag + slot;

		rc = gic_sq_warp_write_inline(&w, (uint64_t)(dst + slot), rkey, &v, 8, 1,
					      GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	}
	if (!rc && t == 0 && wide)
		rc = gic_sq_quiet_wide(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1,
				       GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	else if (!rc && t == 0)
		rc = gic_sq_wait_retired(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1,
					 GIC_ORDER_FENCE_GPU, gic_now_ns() + 2000000000ull);
	rc = __shfl_sync(0xffffffffu, rc, 0);
	if (t == 0) {
		*ns = gic_now_ns() - t0;
		if (rc)
			*err = 2000 + rc;
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 4, *err;
	int blocks = argc > 2 ? atoi(argv[2]) : 64;
	int conc = argc > 3 && !strncmp(argv[3], "conc", 4);
	int wide = argc > 3 && !strcmp(argv[3], "conc-wide");
	softnic_stats s0, s1;
	uint64_t *ns;
	softnic_attr na = { 0 };
	softnic_gpu_attr ga = { 0, blocks, 1, 0, 0, (size_t)256 << 20 };
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
	CK(cudaMallocManaged(&ns, sizeof(*ns)));
	*err = 0;
	ga.batch_wqes = getenv("DRAIN_BATCH") ? atoi(getenv("DRAIN_BATCH")) : 0; /* 32 or 64 */
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
		uint64_t tag = (uint64_t)(r + 1) << 32;
		int bad = 0;

		softnic_get_stats(nic, &s0);
		if (conc) {
			post_warp<<<1, 32, 0, st>>>(d_sq, dst, softnic_mr_rkey(mr), tag, err, ns, wide);
		} else {
			fill<<<1, 1, 0, st>>>(d_sq, dst, softnic_mr_rkey(mr), tag, err);
			CK(cudaStreamSynchronize(st));
			drain<<<1, 1, 0, st>>>(d_sq, err, ns);
		}
		CK(cudaStreamSynchronize(st));
		CK(cudaMemcpy(host, dst, N * 8, cudaMemcpyDeviceToHost));
		for (int i = 0; i < N; i++)
			bad += host[i] != tag + (uint64_t)i;
		softnic_get_stats(nic, &s1);
		printf("round %d: %s %.1f us (%.2f M msg/s), err %d, bad payloads %d; wqes %llu "
		       "cqes %llu cq_full_stalls %llu doorbell_watches %llu\n",
		       r, conc ? "first post to last CQE" : "ring to last CQE", *ns / 1e3,
		       N / (*ns / 1e3), *err, bad,
		       (unsigned long long)(s1.wqes_executed - s0.wqes_executed),
		       (unsigned long long)(s1.cqes_written - s0.cqes_written),
		       (unsigned long long)(s1.cq_full_stalls - s0.cq_full_stalls),
		       (unsigned long long)(s1.doorbell_watches - s0.doorbell_watches));
		if (*err || bad)
			return 1;
	}
	softnic_close(nic);
	return 0;
}
