/*
 * What the emulated-device GPU tests share (gic-gpu-emu, gic-gpu-mlx5-emu):
 * the CUDA check, the payload pattern, and the kernel in which thread q
 * posts PER GPU-built inline writes on QP q, rings its doorbell and waits
 * for its completions, and the host side that launches it and checks.
 */
#ifndef GIC_GPU_EMU_KIT_CUH
#define GIC_GPU_EMU_KIT_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "gic/post.h"

#define DL (gic_now_ns() + 10000000000ull)
#define CUDA_OK(x)                                                                   \
	do {                                                                         \
		cudaError_t e_ = (x);                                                \
		if (e_ != cudaSuccess) {                                             \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,   \
				cudaGetErrorString(e_));                             \
			exit(1);                                                     \
		}                                                                    \
	} while (0)

enum { NQP = 4, PER = 2000 };

static __host__ __device__ uint64_t val(uint64_t i, uint64_t q)
{
	return (q << 48) ^ (i * 0x9e3779b97f4a7c15ull) ^ 1;
}

/* Thread q posts PER 8-byte inline writes on QP q, every 16th signaled,
 * then waits for all of them. rc[q]: 0 or an errno. */
__global__ void k_post(gic_sq *g, uint64_t *dst, uint32_t rkey, int *rc)
{
	int q = threadIdx.x;
	gic_sq s;
	gic_cq c;

	gic_sq_local_begin(&s, &c, &g[q]);
	for (int i = 0; i < PER && !rc[q]; i++) {
		uint64_t pos;
		int sig = i % 16 == 15 || i + 1 == PER;

		rc[q] = gic_sq_reserve_excl(&s, 1, &pos, GIC_ORDER_RELEASE_SYS, DL);
		if (rc[q])
			break;
		gic_wqe_write_inline_u64(&s, pos, (uint64_t)&dst[(uint64_t)q * PER + i], rkey,
					 val(i, q), sig ? GIC_CTRL_CQ_UPDATE : 0);
		if (sig)
			gic_sq_note_signaled(&s, pos + 1, 0);
		gic_sq_publish_excl(&s, GIC_ORDER_RELEASE_SYS);
	}
	if (!rc[q])
		rc[q] = gic_sq_quiet(&s, GIC_ORDER_RELEASE_SYS, DL);
	gic_sq_local_end(&g[q], &s);
}

/* Copies the NQP queue views to the GPU, runs k_post on them into dst
 * (d_dst: its GPU address, rkey its key), and checks every payload.
 * Returns the failures, each said on stderr after prog. */
static int gpu_post_and_check(const char *prog, gic_sq sq[NQP], const gic_cq cq[NQP], uint64_t *dst,
			      uint64_t *d_dst, uint32_t rkey)
{
	gic_sq *d_sq;
	gic_cq *d_cq;
	int *d_rc, rc[NQP], bad = 0;
	uint64_t end = gic_now_ns() + 60000000000ull;
	cudaStream_t st;

	CUDA_OK(cudaMalloc(&d_sq, NQP * sizeof(gic_sq)));
	CUDA_OK(cudaMalloc(&d_cq, NQP * sizeof(gic_cq)));
	CUDA_OK(cudaMemcpy(d_cq, cq, NQP * sizeof(gic_cq), cudaMemcpyHostToDevice));
	for (int q = 0; q < NQP; q++)
		sq[q].cq = d_cq + q;
	CUDA_OK(cudaMemcpy(d_sq, sq, NQP * sizeof(gic_sq), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMalloc(&d_rc, sizeof(rc)));
	CUDA_OK(cudaMemset(d_rc, 0, sizeof(rc)));
	/* A stream of its own, waited on with a limit: a persistent GPU engine
	 * never ends, so nothing may wait for the whole device. */
	CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	k_post<<<1, NQP, 0, st>>>(d_sq, d_dst, rkey, d_rc);
	CUDA_OK(cudaGetLastError());
	while (cudaStreamQuery(st) == cudaErrorNotReady) {
		if (gic_now_ns() > end) {
			fprintf(stderr, "%s: the posting kernel did not end within 60 s\n", prog);
			return NQP;
		}
	}
	CUDA_OK(cudaStreamSynchronize(st));
	CUDA_OK(cudaMemcpy(rc, d_rc, sizeof(rc), cudaMemcpyDeviceToHost));
	for (int q = 0; q < NQP; q++) {
		if (rc[q]) {
			fprintf(stderr, "%s: QP %d: rc %d\n", prog, q, rc[q]);
			bad++;
		}
		for (int i = 0; i < PER && !rc[q]; i++)
			if (dst[(size_t)q * PER + i] != val(i, q)) {
				fprintf(stderr, "%s: QP %d write %d: 0x%llx\n", prog, q, i,
					(unsigned long long)dst[(size_t)q * PER + i]);
				bad++;
				break;
			}
	}
	return bad; /* the buffers go at exit: no cudaFree while a GPU engine runs */
}

#endif /* GIC_GPU_EMU_KIT_CUH */
