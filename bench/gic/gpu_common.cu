/*
 * bench/gic/gpu_common.cu - what every GPU mode of `gic` shares: finding
 * the GPU and measuring its SM clock (gic_gpu_available), and the helpers
 * of gpu_common.h.
 */
#include "gpu_common.h"

#include <errno.h>

int gic_gpu_available(char *name, size_t len, double *sm_mhz, int device)
{
	cudaDeviceProp prop;
	int n = 0;

	/* DESIGN.md: under lazy loading a kernel launched while a persistent
	 * engine spins can never load; every GPU mode runs one, so EAGER
	 * overrides what the environment says. */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		cudaGetLastError();
		return ENODEV;
	}
	if (device < 0 || device >= n)
		return ENODEV;
	if (cudaSetDevice(device) != cudaSuccess || cudaSetDeviceFlags(cudaDeviceMapHost) != cudaSuccess ||
	    cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
		cudaGetLastError();
		return ENODEV;
	}
	snprintf(name, len, "%s", prop.name);
	*sm_mhz = gpu_sm_clock_mhz(0);
	return 0;
}

void gpu_samples_emit(gic_sink *sink, gic_result *r, const double *v, int n, int warmup)
{
	gic_samples s;

	gic_samples_init(&s, (size_t)n);
	for (int i = 0; i < n; i++)
		gic_samples_add(&s, v[i]);
	gic_result_set_samples(r, &s, (size_t)warmup);
	gic_samples_free(&s);
	gic_emit(sink, r);
}

void gpu_result_transport(gic_result *r, int gpu_engine)
{
	snprintf(r->transport, sizeof(r->transport), "%s", gpu_engine ? "softnic-gpu" : "softnic-cpu");
}
