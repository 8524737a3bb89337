/*
 * shm_gpu.h - between shm.c (softnic across processes) and its CUDA part
 * (shm_cuda.cu, the gic_softnic_shm_cuda library): what a multi-process
 * softnic needs from CUDA to serve GPU regions, and how the CUDA part
 * publishes them. Not a public header; gic/softnic_shm.h has the contract.
 *
 * shm.c stays free of CUDA: it keeps the table of exported GPU buffers in
 * each PE's arena header (peers read it), the cache of buffers opened here,
 * and the address translation; the CUDA part does every CUDA call, and
 * its copies and atomics are devmem's (devmem.h).
 */
#ifndef SOFTNIC_SHM_GPU_H
#define SOFTNIC_SHM_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	SHM_GPU_KIND_CUDA_IPC = 0x43495043, /* "CPIC": a cudaIpcMemHandle_t of cudaMalloc memory */
	SHM_GPU_HANDLE_BYTES = 64,
};

/* One exported GPU allocation, in its owner's arena header. Written once
 * before the header's count publishes it; never changed after. */
typedef struct shm_gpu_buf {
	uint64_t base;      /* the allocation, in the owner's address space */
	uint64_t len;
	uint32_t kind;      /* SHM_GPU_KIND_* */
	int32_t device;     /* the owner's CUDA ordinal (for messages) */
	uint8_t uuid[16];   /* the owner's GPU */
	uint8_t handle[SHM_GPU_HANDLE_BYTES];
} shm_gpu_buf;

/* The CUDA IPC part's operations (the copies and atomics are the devmem
 * part's, devmem.h). Each returns 0 or an errno with a text in why. */
typedef struct shm_gpu_ops {
	/* Opens a peer's exported buffer here; *ptr: its base in this process. */
	int (*open)(void *ctx, const shm_gpu_buf *b, void **ptr, char *why, size_t len);
	void (*close)(void *ctx, void *ptr);
	/* Last, after the engines stopped and every open buffer was closed. */
	void (*release)(void *ctx);
} shm_gpu_ops;

/* This PE's arena: where and how long. EINVAL: not a shared softnic. */
int softnic_shm_arena(softnic *nic, void **arena, size_t *bytes);

/* Attaches the CUDA part to a shared softnic (once; ops->release runs at
 * close). EINVAL: not a shared softnic, or attached already. */
int softnic_shm_gpu_attach(softnic *nic, const shm_gpu_ops *ops, void *ctx);

/* The attached CUDA part's ctx, or NULL. */
void *softnic_shm_gpu_ctx(softnic *nic);

/* Publishes an exported allocation in this PE's arena header (an entry of
 * the same base is reused). EINVAL (nothing attached), ENOSPC (table
 * full), EEXIST (the base is exported with another length). */
int softnic_shm_gpu_export(softnic *nic, const shm_gpu_buf *b);

#ifdef __cplusplus
}
#endif

#endif /* SOFTNIC_SHM_GPU_H */
