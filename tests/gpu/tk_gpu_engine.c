/*
 * The GPU engine for the host case programs (testkit.h, tk_engine): the
 * same cases that CI runs on the CPU engine run on softnic's GPU engine,
 * with host threads posting into queues in mapped pinned host memory and
 * regions in pinned host memory the engine reaches. A case that drives
 * softnic_progress() itself (engine_threads 0) gets the on-demand engine;
 * any other the persistent kernel.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/softnic_gpu.h"
#include "testkit.h"

static softnic *gpu_open(const softnic_attr *attr)
{
	softnic_attr a = *attr;
	softnic_gpu_attr g;
	softnic *nic;

	memset(&g, 0, sizeof(g));
	g.device = 0;
	g.blocks = 2;
	g.warps_per_block = 2;
	g.queues_on_host = 1;
	g.on_demand = attr->engine_threads == 0;
	g.arena_bytes = (size_t)64 << 20;
	a.engine_threads = 0;
	nic = softnic_open_gpu(&a, &g);
	if (!nic)
		fprintf(stderr, "tk_gpu_engine: softnic_open_gpu failed\n");
	return nic;
}

static void *pinned_alloc(size_t len)
{
	void *p = NULL;

	if (cudaHostAlloc(&p, len, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
		return NULL;
	return p;
}

static void pinned_free(void *p)
{
	cudaFreeHost(p);
}

static const tk_engine gpu_engine = { "gpu", gpu_open, pinned_alloc, pinned_free };

void tk_engine_setup(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		fprintf(stderr, "tk_gpu_engine: no CUDA device\n");
		exit(1);
	}
	tk_engine_used = &gpu_engine;
	fprintf(stderr, "engine: softnic GPU engine on device 0 (host submitters, queues in pinned "
		"host memory)\n");
}
