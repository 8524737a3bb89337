/*
 * mlx5 provider internals: error text, the CUDA driver API loaded at run
 * time, host ranges mapped into the GPU.
 */
#ifndef GIC_MLX5_INTERNAL_H
#define GIC_MLX5_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

#include "gic/mlx5_provider.h"

/* Writes a message into err[len] (no-op when err is NULL). */
void gic_mlx5_say(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The parts of the CUDA driver API the provider uses (cuda.h values). */
typedef int gic_curesult;
typedef unsigned long long gic_cudeviceptr;

enum {
	GIC_CU_SUCCESS = 0,
	GIC_CU_ERROR_INVALID_VALUE = 1,
	GIC_CU_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	GIC_CU_ERROR_NOT_PERMITTED = 800,
	GIC_CU_ERROR_NOT_SUPPORTED = 801,
	GIC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
	GIC_CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
	GIC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
	GIC_CU_MEMORYTYPE_DEVICE = 2,
	GIC_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 124,
	GIC_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD = 1,
	GIC_CU_MEMHOSTREGISTER_PORTABLE = 1,
	GIC_CU_MEMHOSTREGISTER_DEVICEMAP = 2,
	GIC_CU_MEMHOSTREGISTER_IOMEMORY = 4,
};

typedef struct gic_cu {
	void *lib;
	gic_curesult (*Init)(unsigned flags);
	gic_curesult (*GetErrorString)(gic_curesult rc, const char **s);
	gic_curesult (*PointerGetAttribute)(void *data, int attr, gic_cudeviceptr p);
	gic_curesult (*DeviceGetAttribute)(int *v, int attr, int dev);
	gic_curesult (*MemGetHandleForAddressRange)(void *handle, gic_cudeviceptr p, size_t size,
						    int type, unsigned long long flags);
	gic_curesult (*MemHostRegister)(void *p, size_t size, unsigned flags);
	gic_curesult (*MemHostUnregister)(void *p);
	gic_curesult (*MemHostGetDevicePointer)(gic_cudeviceptr *d, void *p, unsigned flags);
	gic_curesult (*MemAlloc)(gic_cudeviceptr *d, size_t size);
	gic_curesult (*MemFree)(gic_cudeviceptr d);
	gic_curesult (*MemsetD8)(gic_cudeviceptr d, unsigned char v, size_t n);
} gic_cu;

/* The process's CUDA driver (loaded once), or NULL with the reason in
 * err. */
const gic_cu *gic_cu_get(char *err, size_t len);

/* "name (code)" of a CUDA result. */
const char *gic_cu_errstr(const gic_cu *cu, gic_curesult rc);

/* Maps [p, p + len) of host memory into the GPU (the enclosing pages;
 * flags GIC_CU_MEMHOSTREGISTER_*), remembered in m for unmapping at
 * close; *dev gets p's GPU address. 0, or an errno with m->base.err set
 * (EPERM for CUDA_ERROR_NOT_PERMITTED). */
int gic_mlx5_map_host(gic_mlx5 *m, void *p, size_t len, unsigned flags, uint64_t *dev);

/* Unmaps what gic_mlx5_map_host mapped and frees the GPU send rings. */
void gic_mlx5_unmap_all(gic_mlx5 *m);

/* Creates m->gpu_pd: a parent domain whose allocator puts send rings
 * (MLX5DV_RES_TYPE_QP) in GPU memory. */
int gic_mlx5_gpu_pd(gic_mlx5 *m);

enum { GIC_MLX5_MAX_SHADOWS = 4096 };

/* A QP made by libmlx5 (RC, or a DCI when dci is set), with its mlx5dv
 * description; NULL with errno and m->base.err. */
gic_mlx5_qp *gic_mlx5_qp_make(gic_mlx5 *m, gic_mlx5_cq *cq, int log_sq_bb, int queues, int dci);

#endif /* GIC_MLX5_INTERNAL_H */
