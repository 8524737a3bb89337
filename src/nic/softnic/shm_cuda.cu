/*
 * The CUDA IPC part of softnic across processes (gic/softnic_shm.h, GPU
 * regions; shm_gpu.h): exports cudaMalloc allocations as CUDA IPC handles
 * and opens peers' handles. The CPU engine's copies and atomics on GPU
 * memory are the devmem part's (devmem_cuda.cu), which
 * softnic_shared_cuda_enable attaches first.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/softnic_devmem.h"
#include "gic/softnic_shm.h"
#include "softnic_internal.h"
#include "devmem.h"
#include "shm_gpu.h"
#include "ipc_cuda.h"

typedef struct ipc_part {
	int device;
	void *arena;          /* registered with CUDA (mapped) */
	pthread_mutex_t lock; /* one CUDA IPC call at a time */
} ipc_part;

static int part_open(void *ctx, const shm_gpu_buf *b, void **ptr, char *why, size_t len)
{
	ipc_part *c = (ipc_part *)ctx;
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = softnic_ipc_open(c->device, b, ptr, why, len);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void part_close(void *ctx, void *ptr)
{
	ipc_part *c = (ipc_part *)ctx;

	pthread_mutex_lock(&c->lock);
	cudaSetDevice(c->device);
	if (cudaIpcCloseMemHandle(ptr) != cudaSuccess)
		cudaGetLastError();
	pthread_mutex_unlock(&c->lock);
}

static void part_free(ipc_part *c)
{
	cudaSetDevice(c->device);
	if (c->arena)
		cudaHostUnregister(c->arena);
	cudaGetLastError();
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void part_release(void *ctx)
{
	part_free((ipc_part *)ctx);
}

static const shm_gpu_ops part_ops = { part_open, part_close, part_release };

/* Records and prints an enable/registration failure; returns rc. */
static int part_fail(softnic *nic, int rc, const char *what, cudaError_t e)
{
	softnic_set_error(nic, "%s%s%s", what, e != cudaSuccess ? ": " : "",
			  e != cudaSuccess ? cudaGetErrorString(e) : "");
	fprintf(stderr, "softnic (CUDA IPC): %s\n", softnic_last_error(nic));
	return rc;
}

/* Registers this PE's arena with CUDA, mapped at its host address (GPU
 * threads post into queues there). On the current device. */
static int part_setup(softnic *nic, ipc_part *c)
{
	void *dp = NULL;
	size_t bytes = 0;
	int v = 0;
	cudaError_t e;

	e = cudaDeviceGetAttribute(&v, cudaDevAttrCanUseHostPointerForRegisteredMem, c->device);
	if (e != cudaSuccess || !v)
		return part_fail(nic, ENOTSUP, "cuda_enable: this GPU cannot use registered host "
				 "memory at its host address (the arena's pointers would differ)", e);
	if (softnic_shm_arena(nic, &c->arena, &bytes))
		return part_fail(nic, EINVAL, "cuda_enable: not a shared softnic", cudaSuccess);
	e = cudaHostRegister(c->arena, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
	if (e != cudaSuccess) {
		c->arena = NULL;
		return part_fail(nic, EIO, "cuda_enable: cudaHostRegister of the arena", e);
	}
	e = cudaHostGetDevicePointer(&dp, c->arena, 0);
	if (e != cudaSuccess || dp != c->arena)
		return part_fail(nic, ENOTSUP, "cuda_enable: the GPU sees the arena at another "
				 "address", e);
	return 0;
}

extern "C" int softnic_shared_cuda_enable(softnic *nic, int device)
{
	ipc_part *c;
	int prev = 0, rc;

	if (!nic || !nic->shm)
		return EINVAL;
	if (softnic_shm_gpu_ctx(nic))
		return part_fail(nic, EINVAL, "cuda_enable: enabled already", cudaSuccess);
	/* The copies and atomics first (it checks the device). */
	rc = softnic_devmem_enabled(nic) ? 0 : softnic_cuda_devmem_enable(nic, device);
	if (rc)
		return rc;
	c = (ipc_part *)calloc(1, sizeof(*c));
	if (!c)
		return ENOMEM;
	c->device = device;
	pthread_mutex_init(&c->lock, NULL);
	cudaGetDevice(&prev);
	rc = cudaSetDevice(device) == cudaSuccess ? part_setup(nic, c) :
		part_fail(nic, EIO, "cuda_enable: cudaSetDevice", cudaGetLastError());
	if (!rc && softnic_shm_gpu_attach(nic, &part_ops, c))
		rc = part_fail(nic, EINVAL, "cuda_enable: enabled already", cudaSuccess);
	if (rc)
		part_free(c);
	cudaSetDevice(prev);
	return rc;
}

/* Fills b for the allocation holding [dptr, dptr + len). 0 or an errno. */
static int part_describe(softnic *nic, void *dptr, size_t len, shm_gpu_buf *b)
{
	char why[SOFTNIC_ERR_LEN - 16];
	int rc = softnic_ipc_describe(dptr, len, b, why, sizeof(why));

	if (rc)
		softnic_set_error(nic, "reg_gpu_mr: %s", why);
	return rc;
}

extern "C" softnic_mr *softnic_shared_reg_gpu_mr(softnic_pd *pd, void *dptr, size_t len,
						 int access)
{
	softnic *nic = pd ? pd->nic : NULL;
	shm_gpu_buf b;
	softnic_mr *mr;
	int rc;

	if (!nic || !dptr || !len || (access & ~0xf) || !softnic_shm_gpu_ctx(nic)) {
		if (nic)
			softnic_set_error(nic, "reg_gpu_mr: %s (addr %p, len %zu, access 0x%x)",
					  softnic_shm_gpu_ctx(nic) ? "bad argument" :
					  "softnic_shared_cuda_enable was not called", dptr, len,
					  access);
		errno = EINVAL;
		return NULL;
	}
	rc = part_describe(nic, dptr, len, &b);
	if (!rc) {
		rc = softnic_shm_gpu_export(nic, &b);
		if (rc)
			softnic_set_error(nic, "reg_gpu_mr: exporting the allocation at 0x%llx: %s",
					  (unsigned long long)b.base,
					  rc == ENOSPC ? "this PE exported 32 allocations already" :
					  strerror(rc));
	}
	if (rc) {
		errno = rc;
		return NULL;
	}
	/* No rights until the slot is marked GPU memory (shm_gpu.h). */
	mr = softnic_reg_mr(pd, dptr, len, 0);
	if (mr)
		softnic_mr_to_device(mr, access);
	return mr;
}
