/*
 * gic/softnic_devmem.h - regions in GPU memory behind softnic's CPU engine.
 *
 * The CPU engine cannot load or store GPU memory. With a CUDA part
 * attached (softnic_cuda_devmem_enable, in the gic_softnic_devmem_cuda
 * library or the emulated libibverbs of CUDA builds), a region registered
 * with softnic_reg_device_mr is served through CUDA instead: RDMA writes
 * (with or without immediate) and reads move their bytes with CUDA copies
 * on a stream of the part's own, and every atomic runs as a one-thread GPU
 * kernel with system-scope atomics. SEND data and receive buffers in GPU
 * memory are not served (SOFTNIC_VSYND_DEVICE_OP). This works in one process and across processes
 * through softnic's wire (gic/softnic_wire.h), where each process moves
 * its own GPU memory to and from the wire's host rings.
 *
 * This is a functional path, not a fast one: every WQE that touches GPU
 * memory waits for its copy or kernel (tens of microseconds each). The GPU
 * engine (gic/softnic_gpu.h) reaches GPU memory directly and never needs
 * this. A multi-process softnic (gic/softnic_shm.h) has its own GPU regions
 * (softnic_shared_reg_gpu_mr), which use the same CUDA part.
 */
#ifndef GIC_SOFTNIC_DEVMEM_H
#define GIC_SOFTNIC_DEVMEM_H

#include <stddef.h>

#include "gic/softnic.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Attaches the CUDA part for GPU `device` to a CPU-engine softnic (once;
 * it lives until softnic_close). Loads its kernel now, so that no lazy
 * load can wait behind a persistent kernel later. 0; EINVAL (a GPU-engine
 * softnic, attached already, or no such device); EIO (a CUDA call failed,
 * said in softnic_last_error). Only in builds with CUDA. */
int softnic_cuda_devmem_enable(softnic *nic, int device);

/* 1 when a CUDA part is attached to nic. */
int softnic_devmem_enabled(const softnic *nic);

/* Registers [addr, addr + len) of GPU memory (any allocation the attached
 * part's CUDA can copy from and to at that address: cudaMalloc, cuMemMap,
 * the GPU's side of a VMM mapping) as an MR whose WQEs the CPU engine
 * serves through CUDA. access as softnic_reg_mr. NULL with errno EINVAL
 * (no CUDA part attached, a multi-process softnic, a bad argument: said in
 * softnic_last_error) or ENOSPC (MR table full). softnic does not check
 * that the memory is GPU memory: that is the caller's knowledge. */
softnic_mr *softnic_reg_device_mr(softnic_pd *pd, void *addr, size_t len, int access);

#ifdef __cplusplus
}
#endif

#endif /* GIC_SOFTNIC_DEVMEM_H */
