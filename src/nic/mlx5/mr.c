/*
 * mlx5 provider: memory registration. Host memory: ibv_reg_mr. GPU
 * memory: DMA-BUF first (the upstream path: kernel >= 5.12, an NVIDIA
 * driver that exports DMA-BUFs, rdma-core >= 34), then ibv_reg_mr, which
 * pins GPU pages only through the nvidia-peermem module. Which path was
 * taken, and why DMA-BUF was not, stays in the MR.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlx5_internal.h"

enum { PAGE = 4096 };

int gic_mlx5_reg_with(const gic_mlx5_reg_ops *ops, void *addr, size_t len, int access,
		      gic_mlx5_mr *out, char *err, size_t errlen)
{
	char why_gpu[256] = "", why_dmabuf[256] = "";
	uint64_t off = 0;
	int gpu, fd = -1, rc;
	struct ibv_mr *mr;

	if (!ops || !addr || !len || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->dmabuf_fd = -1;
	gpu = ops->is_gpu(ops->ctx, addr, why_gpu, sizeof(why_gpu));
	if (gpu <= 0) {
		mr = ops->reg_mr(ops->ctx, addr, len, access);
		if (!mr) {
			rc = errno ? errno : EIO;
			gic_mlx5_say(err, errlen, "ibv_reg_mr(%p, %zu) of host memory: %s (%s)%s%s",
				     addr, len, strerror(rc),
				     rc == ENOMEM ? "locked-memory limit: ulimit -l" :
				     rc == EFAULT ? "not mapped memory, or GPU memory seen as host" :
				     "bad access flags or no such memory",
				     why_gpu[0] ? "; " : "", why_gpu);
			return rc;
		}
		out->mr = mr;
		out->path = GIC_MLX5_REG_HOST;
		return 0;
	}
	rc = ops->dmabuf_fd(ops->ctx, addr, len, &fd, &off, why_dmabuf, sizeof(why_dmabuf));
	if (!rc) {
		mr = ops->reg_dmabuf(ops->ctx, off, len, (uint64_t)(uintptr_t)addr, fd, access);
		if (mr) {
			out->mr = mr;
			out->path = GIC_MLX5_REG_DMABUF;
			out->dmabuf_fd = fd;
			return 0;
		}
		rc = errno ? errno : EIO;
		gic_mlx5_say(why_dmabuf, sizeof(why_dmabuf), "ibv_reg_dmabuf_mr: %s (%s)",
			     strerror(rc),
			     rc == EOPNOTSUPP || rc == ENOSYS || rc == EPROTONOSUPPORT
				     ? "DMA-BUF unsupported by the kernel (< 5.12) or the RDMA driver"
				     : "the NIC cannot map this DMA-BUF");
		ops->close_fd(ops->ctx, fd);
	}
	mr = ops->reg_mr(ops->ctx, addr, len, access);
	if (!mr) {
		rc = errno ? errno : EIO;
		gic_mlx5_say(err, errlen, "GPU memory %p (%zu bytes) cannot be registered: DMA-BUF "
					  "failed (%s); ibv_reg_mr then failed: %s (%s)",
			     addr, len, why_dmabuf, strerror(rc),
			     rc == EFAULT || rc == EINVAL
				     ? "peer memory not available: load nvidia-peermem"
				     : "see dmesg");
		return rc;
	}
	out->mr = mr;
	out->path = GIC_MLX5_REG_PEERMEM;
	snprintf(out->fallback_reason, sizeof(out->fallback_reason), "%s", why_dmabuf);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The real calls. */

static int real_is_gpu(void *ctx, const void *addr, char *why, size_t len)
{
	const gic_cu *cu = gic_cu_get(why, len);
	unsigned type = 0;

	(void)ctx;
	if (!cu)
		return 0; /* no CUDA driver: host memory as far as we can tell */
	if (cu->PointerGetAttribute(&type, GIC_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				    (gic_cudeviceptr)(uintptr_t)addr) != GIC_CU_SUCCESS)
		return 0; /* not known to CUDA: host memory */
	return type == GIC_CU_MEMORYTYPE_DEVICE;
}

static int real_dmabuf_fd(void *ctx, const void *addr, size_t len, int *fd, uint64_t *off,
			  char *why, size_t whylen)
{
	const gic_cu *cu = gic_cu_get(why, whylen);
	uintptr_t base = (uintptr_t)addr & ~(uintptr_t)(PAGE - 1);
	size_t span = (((uintptr_t)addr + len + PAGE - 1) & ~(uintptr_t)(PAGE - 1)) - base;
	int ordinal = 0, ok = 0, h = -1;
	gic_curesult rc;

	(void)ctx;
	if (!cu)
		return ENOENT;
	if (!cu->MemGetHandleForAddressRange) {
		gic_mlx5_say(why, whylen, "the CUDA driver has no cuMemGetHandleForAddressRange "
					  "(older than CUDA 11.7): DMA-BUF unsupported");
		return ENOTSUP;
	}
	cu->PointerGetAttribute(&ordinal, GIC_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				(gic_cudeviceptr)(uintptr_t)addr);
	if (cu->DeviceGetAttribute(&ok, GIC_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, ordinal) !=
		    GIC_CU_SUCCESS || !ok) {
		gic_mlx5_say(why, whylen, "GPU %d does not export DMA-BUFs "
					  "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: needs the open "
					  "NVIDIA kernel modules and Linux >= 5.12)", ordinal);
		return ENOTSUP;
	}
	rc = cu->MemGetHandleForAddressRange(&h, (gic_cudeviceptr)base, span,
					     GIC_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	if (rc != GIC_CU_SUCCESS) {
		gic_mlx5_say(why, whylen, "cuMemGetHandleForAddressRange(DMA_BUF_FD): %s",
			     gic_cu_errstr(cu, rc));
		return ENOTSUP;
	}
	*fd = h;
	*off = (uintptr_t)addr - base;
	return 0;
}

static struct ibv_mr *real_reg_dmabuf(void *ctx, uint64_t off, size_t len, uint64_t iova, int fd,
				      int access)
{
	return ibv_reg_dmabuf_mr(((gic_mlx5 *)ctx)->pd, off, len, iova, fd, access);
}

static struct ibv_mr *real_reg_mr(void *ctx, void *addr, size_t len, int access)
{
	return ibv_reg_mr(((gic_mlx5 *)ctx)->pd, addr, len, access);
}

static void real_close(void *ctx, int fd)
{
	(void)ctx;
	close(fd);
}

gic_mlx5_mr *gic_mlx5_reg_mr(gic_mlx5 *m, void *addr, size_t len, int access)
{
	gic_mlx5_reg_ops ops = { real_is_gpu, real_dmabuf_fd, real_reg_dmabuf, real_reg_mr,
				 real_close, m };
	gic_mlx5_mr *r;
	int rc;

	if (!m || !m->pd) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	rc = gic_mlx5_reg_with(&ops, addr, len, access, r, m->base.err, sizeof(m->base.err));
	if (rc) {
		free(r);
		errno = rc;
		return NULL;
	}
	r->base = (gic_nic_mr){ .nic = &m->base, .addr = addr, .len = len, .lkey = r->mr->lkey,
				.rkey = r->mr->rkey };
	return r;
}

int gic_mlx5_dereg_mr(gic_mlx5_mr *r)
{
	int rc;

	if (!r)
		return 0;
	rc = ibv_dereg_mr(r->mr);
	if (rc) {
		gic_mlx5_say(r->base.nic ? r->base.nic->err : NULL, GIC_NIC_ERR_LEN,
			     "ibv_dereg_mr: %s (memory windows or QPs still use it?)", strerror(rc));
		return rc;
	}
	if (r->dmabuf_fd >= 0)
		close(r->dmabuf_fd);
	free(r);
	return 0;
}
