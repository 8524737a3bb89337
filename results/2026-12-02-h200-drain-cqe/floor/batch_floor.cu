/* batch_floor.cu: the memory floor of one engine batch, without the engine.
 * One warp (alone on its SM) runs R batches of 32 "WQEs": each lane loads
 * its 64-byte BB (four 16-byte loads) from a ring another kernel wrote,
 * takes the destination from it (a dependent address, as the decode does),
 * stores 8 bytes there (rate's layout: lane l's stream 4 KiB from lane
 * l+1's), then __syncwarp and lane 0 writes one 8-byte "CQE" (after a
 * release fence at GPU scope when FENCE). Prints us per batch (p50 over 5
 * runs) for: no fence, fence; and with the next batch's BBs loaded before
 * this batch's stores (PRE). Scratch benchmark for the drain analysis;
 * not part of the build. nvcc -arch=sm_90 -O3 batch_floor.cu */
#include <cstdio>
#include <cstdint>
#include <algorithm>
#include <cuda_runtime.h>

enum { BATCHES = 500, LANES = 32, BB = 64, STREAM = 4096 };

__global__ void fill_ring(uint4 *ring, uint8_t *dst, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) { /* BB i: word 1 = low half of its destination */
		int lane = i % LANES, b = i / LANES;
		uint64_t d = (uint64_t)(dst + (size_t)lane * STREAM * 2 + (size_t)b * 8);

		ring[i * 4] = make_uint4(0x0a000000u, (uint32_t)d, (uint32_t)(d >> 32), 3);
		ring[i * 4 + 1] = make_uint4(1, 2, 3, 4);
		ring[i * 4 + 2] = make_uint4(5, 6, 7, 8);
		ring[i * 4 + 3] = make_uint4(9, 10, 11, (uint32_t)i);
	}
}

template <int FENCE, int PRE>
__global__ void batches(const uint4 *ring, uint64_t *cqe, long long *out)
{
	int lane = threadIdx.x;
	uint4 a[4], nx[4];
	long long t0;

	for (int k = 0; k < 4; k++)
		nx[k] = ring[lane * 4 + k];
	t0 = clock64();
	for (int b = 0; b < BATCHES; b++) {
		const uint4 *s = ring + ((size_t)b * LANES + lane) * 4;

		if (PRE) {
			for (int k = 0; k < 4; k++)
				a[k] = nx[k];
			if (b + 1 < BATCHES)
				for (int k = 0; k < 4; k++)
					nx[k] = s[LANES * 4 + k];
		} else {
			for (int k = 0; k < 4; k++)
				a[k] = s[k];
		}
		uint64_t *d = (uint64_t *)(((uint64_t)a[0].z << 32) | a[0].y);
		*d = (uint64_t)a[3].w ^ a[1].x ^ a[2].y;
		__syncwarp();
		if (lane == 0) {
			if (FENCE)
				asm volatile("fence.acq_rel.gpu;" ::: "memory");
			asm volatile("st.relaxed.gpu.u64 [%0], %1;" :: "l"(cqe + (b & 1023) * 8), "l"((uint64_t)b) : "memory");
		}
		__syncwarp();
	}
	if (lane == 0)
		*out = clock64() - t0;
}

template <int FENCE, int PRE>
static double run(const uint4 *ring, uint64_t *cqe, long long *d_out, double mhz)
{
	double v[5];

	for (int r = 0; r < 5; r++) {
		long long c;

		batches<FENCE, PRE><<<1, LANES>>>(ring, cqe, d_out);
		cudaMemcpy(&c, d_out, sizeof(c), cudaMemcpyDeviceToHost);
		v[r] = (double)c / mhz / BATCHES;
	}
	std::sort(v, v + 5);
	return v[2];
}

int main()
{
	int n = BATCHES * LANES + LANES, clk;
	uint4 *ring;
	uint8_t *dst;
	uint64_t *cqe;
	long long *d_out;

	cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
	cudaMalloc(&ring, (size_t)n * BB);
	cudaMalloc(&dst, (size_t)LANES * STREAM * 2 + BATCHES * 8);
	cudaMalloc(&cqe, 1024 * 64);
	cudaMalloc(&d_out, 8);
	fill_ring<<<(n + 255) / 256, 256>>>(ring, dst, n);
	if (cudaDeviceSynchronize() != cudaSuccess) {
		printf("CUDA error\n");
		return 1;
	}
	double mhz = clk / 1000.0; /* the attribute's clock; the run's may differ */
	printf("clock attribute %.0f MHz; us per batch of 32 (p50 of 5, %d batches)\n", mhz, BATCHES);
	printf("  loads, stores, CQE:                %.3f\n", run<0, 0>(ring, cqe, d_out, mhz));
	printf("  + release fence before the CQE:    %.3f\n", run<1, 0>(ring, cqe, d_out, mhz));
	printf("  next BBs early, no fence:          %.3f\n", run<0, 1>(ring, cqe, d_out, mhz));
	printf("  next BBs early, fence:             %.3f\n", run<1, 1>(ring, cqe, d_out, mhz));
	return 0;
}
