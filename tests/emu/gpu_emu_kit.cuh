/*
 * What the emulated-device GPU tests share (gic-gpu-emu, gic-gpu-mlx5-emu):
 * the CUDA check, the payload pattern, and the kernel in which thread q
 * posts PER GPU-built inline writes on QP q, rings its doorbell and waits
 * for its completions.
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

#endif /* GIC_GPU_EMU_KIT_CUH */
