/*
 * ipc_cuda.h - CUDA IPC for softnic's cross-process parts: the shared-memory
 * softnic's GPU regions (shm_cuda.cu) and GPU engines of two processes
 * (gpu_peer.cu). Not a public header.
 *
 * Each function returns 0 or an errno and, on failure, writes what failed
 * into why (len bytes).
 */
#ifndef SOFTNIC_IPC_CUDA_H
#define SOFTNIC_IPC_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "shm_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills *b for the cudaMalloc allocation holding [dptr, dptr + len): its
 * base and length in this process, its GPU and an IPC handle of it.
 * EINVAL (not device memory, or not inside one allocation), ENOTSUP (the
 * allocation cannot be exported: pools, managed, cuMemCreate), EIO. */
int softnic_ipc_describe(const void *dptr, size_t len, shm_gpu_buf *b, char *why, size_t wlen);

/* The CUDA ordinal of the GPU with uuid in this process, or -1. */
int softnic_ipc_device_of_uuid(const uint8_t uuid[16]);

/* Opens b (another process's export) on this process's device, which must
 * be b's GPU or have peer access to it; *ptr: b's base here. ENODEV (its
 * GPU is not visible here), ENOTSUP (no peer access, or IPC unsupported),
 * EIO (the owner exited, or the handle is bad). Thread-safe as CUDA is;
 * it sets the calling thread's current device to device. */
int softnic_ipc_open(int device, const shm_gpu_buf *b, void **ptr, char *why, size_t wlen);

#ifdef __cplusplus
}
#endif

#endif /* SOFTNIC_IPC_CUDA_H */
