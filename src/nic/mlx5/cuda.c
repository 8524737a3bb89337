/*
 * mlx5 provider: the CUDA driver API, loaded with dlopen so that nothing
 * links against CUDA; host ranges mapped into the GPU (queues, UAR); the
 * parent domain that puts send rings in GPU memory.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_internal.h"

struct gic_mlx5_hostreg {
	void *base;
	size_t len;
	struct gic_mlx5_hostreg *next;
};

struct gic_mlx5_gpubuf {
	gic_cudeviceptr base;  /* what cuMemAlloc returned */
	void *aligned;         /* what libmlx5 got */
	struct gic_mlx5_gpubuf *next;
};

void gic_mlx5_say(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

#define SYM(field, name)                                                         \
	do {                                                                     \
		*(void **)&cu->field = dlsym(cu->lib, name);                    \
		if (!cu->field) {                                                \
			gic_mlx5_say(err, len, "no CUDA driver: %s lacks %s (driver " \
				     "older than CUDA 11.7?)", path, name);     \
			return ENOENT;                                           \
		}                                                                \
	} while (0)

/* Loads every symbol; cuMemGetHandleForAddressRange may be missing (old
 * driver: no DMA-BUF), the rest may not. */
static int cu_load(gic_cu *cu, const char *path, char *err, size_t len)
{
	gic_curesult rc;

	memset(cu, 0, sizeof(*cu));
	cu->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!cu->lib) {
		const char *why = dlerror();

		gic_mlx5_say(err, len, "no CUDA driver: dlopen(%s) failed: %s (is the NVIDIA "
				       "driver installed? GPU memory and GPU doorbells need it)",
			     path, why ? why : "unknown");
		return ENOENT;
	}
	SYM(Init, "cuInit");
	SYM(GetErrorString, "cuGetErrorString");
	SYM(PointerGetAttribute, "cuPointerGetAttribute");
	SYM(DeviceGetAttribute, "cuDeviceGetAttribute");
	SYM(MemHostRegister, "cuMemHostRegister_v2");
	SYM(MemHostUnregister, "cuMemHostUnregister");
	SYM(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
	SYM(MemAlloc, "cuMemAlloc_v2");
	SYM(MemFree, "cuMemFree_v2");
	SYM(MemsetD8, "cuMemsetD8_v2");
	*(void **)&cu->MemGetHandleForAddressRange = dlsym(cu->lib, "cuMemGetHandleForAddressRange");
	rc = cu->Init(0);
	if (rc != GIC_CU_SUCCESS) {
		gic_mlx5_say(err, len, "cuInit(0) failed: %s (no GPU visible, or driver and "
				       "kernel module versions differ)", gic_cu_errstr(cu, rc));
		return EIO;
	}
	return 0;
}

static gic_cu the_cu;
static int the_cu_rc;
static char the_cu_err[256];
static pthread_once_t the_cu_once = PTHREAD_ONCE_INIT;

static const char *default_path(void)
{
	const char *env = getenv("GIC_LIBCUDA");

	return env && *env ? env : "libcuda.so.1";
}

static void cu_once(void)
{
	the_cu_rc = cu_load(&the_cu, default_path(), the_cu_err, sizeof(the_cu_err));
}

const gic_cu *gic_cu_get(char *err, size_t len)
{
	pthread_once(&the_cu_once, cu_once);
	if (the_cu_rc) {
		gic_mlx5_say(err, len, "%s", the_cu_err);
		errno = the_cu_rc;
		return NULL;
	}
	return &the_cu;
}

const char *gic_cu_errstr(const gic_cu *cu, gic_curesult rc)
{
	static __thread char buf[160];
	const char *s = NULL;

	if (cu && cu->GetErrorString)
		cu->GetErrorString(rc, &s);
	snprintf(buf, sizeof(buf), "%s (CUresult %d)", s ? s : "unknown CUDA error", rc);
	return buf;
}

int gic_mlx5_cuda_probe(const char *libpath, char *err, size_t errlen)
{
	gic_cu cu;
	int rc;

	if (!libpath)
		return gic_cu_get(err, errlen) ? 0 : errno;
	rc = cu_load(&cu, libpath, err, errlen);
	if (cu.lib)
		dlclose(cu.lib);
	return rc;
}

/* ------------------------------------------------------------------ */

/* 1 when the GPU reaches p at its own address already: managed or device
 * memory (the queues of a NIC whose rings live there, as the emulated
 * device's on softnic's GPU engine); nothing to register then. */
static int gpu_reaches(const gic_cu *cu, const void *p)
{
	unsigned int managed = 0, type = 0;
	gic_cudeviceptr a = (gic_cudeviceptr)(uintptr_t)p;

	if (cu->PointerGetAttribute(&managed, GIC_CU_POINTER_ATTRIBUTE_IS_MANAGED, a) ==
		    GIC_CU_SUCCESS && managed)
		return 1;
	return cu->PointerGetAttribute(&type, GIC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) ==
		       GIC_CU_SUCCESS && type == GIC_CU_MEMORYTYPE_DEVICE;
}

int gic_mlx5_map_host(gic_mlx5 *m, void *p, size_t len, unsigned flags, uint64_t *dev)
{
	const gic_cu *cu = gic_cu_get(m->base.err, sizeof(m->base.err));
	uintptr_t page = 4096, base = (uintptr_t)p & ~(page - 1);
	size_t span = (((uintptr_t)p + len + page - 1) & ~(page - 1)) - base;
	struct gic_mlx5_hostreg *r;
	gic_cudeviceptr d = 0;
	gic_curesult rc;

	if (!cu)
		return ENOENT;
	if (gpu_reaches(cu, p)) {
		*dev = (uint64_t)(uintptr_t)p;
		return 0;
	}
	for (r = m->regs; r; r = r->next)
		if (base >= (uintptr_t)r->base && base + span <= (uintptr_t)r->base + r->len)
			break;
	if (!r) {
		rc = cu->MemHostRegister((void *)base, span, flags);
		if (rc != GIC_CU_SUCCESS && rc != GIC_CU_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
			int io = flags & GIC_CU_MEMHOSTREGISTER_IOMEMORY;

			gic_mlx5_say(m->base.err, sizeof(m->base.err),
				     "cuMemHostRegister(%p, %zu, %s) failed: %s%s", (void *)base, span,
				     io ? "IOMEMORY|DEVICEMAP" : "DEVICEMAP", gic_cu_errstr(cu, rc),
				     io ? " (peer mapping of the NIC's doorbell page not permitted: "
					  "load the NVIDIA driver with NVreg_RegistryDwords="
					  "\"PeerMappingOverride=1;\")"
					: " (host memory cannot be mapped into the GPU)");
			return rc == GIC_CU_ERROR_NOT_PERMITTED ? EPERM
			       : rc == GIC_CU_ERROR_NOT_SUPPORTED ? ENOTSUP : EIO;
		}
		if (rc == GIC_CU_SUCCESS) {
			r = calloc(1, sizeof(*r));
			if (!r) {
				cu->MemHostUnregister((void *)base);
				return ENOMEM;
			}
			r->base = (void *)base;
			r->len = span;
			r->next = m->regs;
			m->regs = r;
		}
	}
	rc = cu->MemHostGetDevicePointer(&d, p, 0);
	if (rc != GIC_CU_SUCCESS) {
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "cuMemHostGetDevicePointer(%p) failed: %s (no current CUDA context on "
			     "this thread?)", p, gic_cu_errstr(cu, rc));
		return EIO;
	}
	*dev = d;
	return 0;
}

void gic_mlx5_unmap_all(gic_mlx5 *m)
{
	const gic_cu *cu = (m->regs || m->gpubufs) ? gic_cu_get(NULL, 0) : NULL;

	while (m->regs) {
		struct gic_mlx5_hostreg *r = m->regs;

		m->regs = r->next;
		if (cu)
			cu->MemHostUnregister(r->base);
		free(r);
	}
	while (m->gpubufs) {
		struct gic_mlx5_gpubuf *b = m->gpubufs;

		m->gpubufs = b->next;
		if (cu)
			cu->MemFree(b->base);
		free(b);
	}
}

/* ------------------------------------------------------------------ */
/* Send rings in GPU memory: libmlx5 asks its parent domain's allocator
 * for each buffer by resource type; only the QP ring goes to the GPU. */

static void *gpu_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	gic_mlx5 *m = ctx;
	const gic_cu *cu;
	struct gic_mlx5_gpubuf *b;
	gic_cudeviceptr d = 0;

	(void)pd;
	if (type != MLX5DV_RES_TYPE_QP)
		return IBV_ALLOCATOR_USE_DEFAULT; /* CQ rings, doorbell records: host */
	cu = gic_cu_get(m->base.err, sizeof(m->base.err));
	if (!cu)
		return NULL;
	if (align < 4096)
		align = 4096;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	if (cu->MemAlloc(&d, size + align) != GIC_CU_SUCCESS) {
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "cuMemAlloc(%zu) for a send ring failed (GPU memory full, or no "
			     "current CUDA context on this thread)", size + align);
		free(b);
		return NULL;
	}
	b->base = d;
	b->aligned = (void *)(uintptr_t)((d + align - 1) & ~(gic_cudeviceptr)(align - 1));
	cu->MemsetD8((gic_cudeviceptr)(uintptr_t)b->aligned, 0, size);
	b->next = m->gpubufs;
	m->gpubufs = b;
	return b->aligned;
}

static void gpu_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	gic_mlx5 *m = ctx;
	const gic_cu *cu = gic_cu_get(NULL, 0);

	(void)pd;
	(void)type;
	for (struct gic_mlx5_gpubuf **pp = &m->gpubufs; *pp; pp = &(*pp)->next) {
		struct gic_mlx5_gpubuf *b = *pp;

		if (b->aligned == ptr) {
			*pp = b->next;
			if (cu)
				cu->MemFree(b->base);
			free(b);
			return;
		}
	}
}

int gic_mlx5_gpu_pd(gic_mlx5 *m)
{
	struct ibv_parent_domain_init_attr a = {
		.pd = m->pd,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS,
		.alloc = gpu_alloc,
		.free = gpu_free,
		.pd_context = m,
	};
	int rc;

	if (m->gpu_pd)
		return 0;
	if (!gic_cu_get(m->base.err, sizeof(m->base.err)))
		return ENOENT;
	m->gpu_pd = ibv_alloc_parent_domain(m->ctx, &a);
	if (!m->gpu_pd) {
		rc = errno ? errno : EOPNOTSUPP;
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "ibv_alloc_parent_domain(%s, custom allocators): %s (rdma-core too "
			     "old for parent-domain allocators? use GIC_QUEUES_HOST)",
			     m->name, strerror(rc));
		return rc;
	}
	return 0;
}
