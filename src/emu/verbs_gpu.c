/*
 * The emulated device on softnic's GPU engine (GIC_EMU_ENGINE=gpu): the
 * engine is a persistent kernel on GPU GIC_EMU_GPU (default 0), the queues
 * (send and receive rings, doorbell records and registers, CQ rings) are
 * memory of that GPU (CUDA managed memory that prefers it, which the host
 * verbs code still reaches), and a region must be memory the GPU reaches
 * at its address: device or managed memory, or host memory registered with
 * CUDA (cudaHostRegister, cudaHostAlloc). Built only with CUDA; without
 * it, asking for the GPU engine fails with a message.
 *
 * What programs must do (gic/softnic_gpu.h): load their kernels before
 * the engine starts (CUDA_MODULE_LOADING=EAGER), and never wait for the
 * whole device (cudaDeviceSynchronize, cudaFree) while it runs.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "emu.h"

#if GIC_EMU_GPU
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>

#include "gic/softnic_devmem.h"
#include "gic/softnic_gpu.h"

softnic *emu_gpu_open(int device, int warps)
{
	softnic_attr a = { 0 };
	softnic_gpu_attr g = { 0 };
	softnic *nic;

	g.device = device;
	g.blocks = 1;
	g.warps_per_block = warps;
	g.host_submitters = 1; /* verbs calls post and poll from host threads */
	nic = softnic_open_gpu(&a, &g);
	if (!nic)
		fprintf(stderr, "gic-emu: GIC_EMU_ENGINE=gpu: softnic's GPU engine on CUDA device %d "
			"did not start (%s)\n", device, strerror(errno));
	return nic;
}

/* 1 when the GPU reaches p at its own address. */
static int gpu_reaches(const void *p)
{
	struct cudaPointerAttributes at;

	if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
		(void)cudaGetLastError(); /* clears the sticky-free error */
		return 0;
	}
	if (at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged)
		return 1;
	return at.type == cudaMemoryTypeHost && at.devicePointer == p;
}

int emu_gpu_reaches(const void *addr, size_t len)
{
	return gpu_reaches(addr) && gpu_reaches((const uint8_t *)addr + len - 1);
}

int emu_gpu_region_check(const void *addr, size_t len)
{
	if (emu_gpu_reaches(addr, len))
		return 0;
	fprintf(stderr, "gic-emu: ibv_reg_mr(%p, %zu): softnic's GPU engine cannot reach this "
		"memory at its address: use GPU or managed memory, or register host memory with "
		"cudaHostRegister first (GIC_EMU_ENGINE=gpu)\n", addr, len);
	return EFAULT;
}

/* The ordinal of the GPU whose device memory holds p, or -1. */
static int device_memory_of(const void *p)
{
	struct cudaPointerAttributes at;

	if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
		(void)cudaGetLastError();
		return -1;
	}
	return at.type == cudaMemoryTypeDevice ? at.device : -1;
}

int emu_gpu_devmem_prepare(const void *addr, size_t len)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int d = device_memory_of(addr), rc = 0;

	/* The start only: a DMA-BUF MR covers whole pages (NVSHMEM rounds its
	 * buffers' ranges up to them, past the allocation's end), and a copy
	 * that strays past GPU memory fails its WQE, it corrupts nothing. */
	(void)len;
	if (d < 0)
		return EFAULT;
	pthread_mutex_lock(&lock); /* one part, attached by the first such MR */
	if (!softnic_devmem_enabled(emu.nic)) {
		rc = softnic_cuda_devmem_enable(emu.nic, d);
		if (rc)
			fprintf(stderr, "gic-emu: ibv_reg_mr(%p, %zu): GPU memory of CUDA device %d, "
				"and softnic's CUDA part for it did not start: %s\n", addr, len, d,
				softnic_last_error(emu.nic));
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

#else /* built without CUDA */

softnic *emu_gpu_open(int device, int warps)
{
	(void)device;
	(void)warps;
	fprintf(stderr, "gic-emu: GIC_EMU_ENGINE=gpu: this build has no CUDA, so no GPU engine\n");
	errno = ENOTSUP;
	return NULL;
}

int emu_gpu_region_check(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
	return EOPNOTSUPP;
}

int emu_gpu_devmem_prepare(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
	return EFAULT;
}

int emu_gpu_reaches(const void *addr, size_t len)
{
	(void)addr;
	(void)len;
	return 0;
}
#endif
