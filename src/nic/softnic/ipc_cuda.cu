/*
 * CUDA IPC for softnic's cross-process parts (ipc_cuda.h).
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ipc_cuda.h"

/* cuMemGetAddressRange, looked up through the runtime (so nothing links
 * libcuda: gic starts on machines without a driver). */
typedef CUresult (*addr_range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr p);

static int addr_range(const void *p, CUdeviceptr *base, size_t *size)
{
	cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;

	if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
					     &q) != cudaSuccess || q != cudaDriverEntryPointSuccess ||
	    !fn) {
		cudaGetLastError();
		return -1;
	}
	return ((addr_range_fn)fn)(base, size, (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS ? 0 : -1;
}

static int ipc_why(cudaError_t e, const char *call, char *why, size_t wlen)
{
	snprintf(why, wlen, "%s: %s", call, cudaGetErrorString(e));
	cudaGetLastError(); /* not sticky: clear it for the next call */
	return e == cudaErrorNotSupported ? ENOTSUP : EIO;
}

extern "C" int softnic_ipc_describe(const void *dptr, size_t len, shm_gpu_buf *b, char *why,
				    size_t wlen)
{
	cudaPointerAttributes pa;
	cudaIpcMemHandle_t h;
	cudaDeviceProp prop;
	CUdeviceptr base = 0;
	size_t size = 0;
	cudaError_t e = cudaPointerGetAttributes(&pa, dptr);

	if (e != cudaSuccess || pa.type != cudaMemoryTypeDevice) {
		cudaGetLastError();
		snprintf(why, wlen, "%p is not device memory from cudaMalloc (%s)", dptr,
			 e != cudaSuccess ? cudaGetErrorString(e) :
			 pa.type == cudaMemoryTypeManaged ? "managed memory" : "host memory");
		return EINVAL;
	}
	if (addr_range(dptr, &base, &size) ||
	    (uintptr_t)dptr - base > size || len > size - ((uintptr_t)dptr - base)) {
		snprintf(why, wlen, "[%p, +%zu) is not inside one allocation", dptr, len);
		return EINVAL;
	}
	e = cudaIpcGetMemHandle(&h, (void *)(uintptr_t)base);
	if (e != cudaSuccess) {
		cudaGetLastError();
		snprintf(why, wlen, "cudaIpcGetMemHandle of the allocation at 0x%llx: %s (memory of "
			 "cudaMallocAsync pools, managed or cuMemCreate memory cannot be exported "
			 "this way)", (unsigned long long)base, cudaGetErrorString(e));
		return ENOTSUP;
	}
	e = cudaGetDeviceProperties(&prop, pa.device);
	if (e != cudaSuccess) {
		snprintf(why, wlen, "device %d: %s", pa.device, cudaGetErrorString(e));
		return EIO;
	}
	memset(b, 0, sizeof(*b));
	b->base = base;
	b->len = size;
	b->kind = SHM_GPU_KIND_CUDA_IPC;
	b->device = pa.device;
	memcpy(b->uuid, prop.uuid.bytes, 16);
	memcpy(b->handle, &h, sizeof(h));
	return 0;
}

extern "C" int softnic_ipc_device_of_uuid(const uint8_t uuid[16])
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess)
		return -1;
	for (int d = 0; d < n; d++) {
		cudaDeviceProp prop;

		if (cudaGetDeviceProperties(&prop, d) == cudaSuccess &&
		    !memcmp(prop.uuid.bytes, uuid, 16))
			return d;
	}
	return -1;
}

extern "C" int softnic_ipc_open(int device, const shm_gpu_buf *b, void **ptr, char *why,
				size_t wlen)
{
	cudaIpcMemHandle_t h;
	int d = softnic_ipc_device_of_uuid(b->uuid), can = 0;
	cudaError_t e;

	if (b->kind != SHM_GPU_KIND_CUDA_IPC) {
		snprintf(why, wlen, "not a CUDA IPC handle (kind 0x%x)", b->kind);
		return EINVAL;
	}
	if (d < 0) {
		snprintf(why, wlen, "its GPU (the owner's device %d) is not visible in this process "
			 "(CUDA_VISIBLE_DEVICES differs between the processes?)", b->device);
		return ENODEV;
	}
	if (d != device && (cudaDeviceCanAccessPeer(&can, device, d) != cudaSuccess || !can)) {
		snprintf(why, wlen, "GPU %d of this process has no peer access to GPU %d", device, d);
		return ENOTSUP;
	}
	memcpy(&h, b->handle, sizeof(h));
	e = cudaSetDevice(device);
	if (e == cudaSuccess)
		e = cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess);
	if (e != cudaSuccess)
		return ipc_why(e, "cudaIpcOpenMemHandle (the owner exited, or IPC is not supported "
			       "between these GPUs)", why, wlen);
	return 0;
}
