/*
 * tests/gpu/compile_check.cu - keeps the device side of the headers from
 * rotting.
 *
 * gic/post.h (with gic/mlx5_format.h and gic/port.h) is written once for host
 * C and CUDA device code, but the host tests only ever compile its host
 * branches. This translation unit instantiates every device path: one kernel
 * per WQE builder, per reservation/publication/completion call, and one
 * gic_sq_ring / gic_cq_poll_one kernel per gic_order value with the order a
 * compile-time constant, so each ordering's PTX (fences, release stores,
 * acquire loads) is emitted on its own. Including gic/softnic.h proves that
 * header is C++-clean.
 *
 * CI compiles it with nvcc for sm_90; it is never linked or run. The kernels
 * only need to be well-formed, not useful.
 */
#include "gic/post.h"
#include "gic/softnic.h"

static_assert(sizeof(softnic_wqe) > 0, "softnic.h parses as C++");

/* ------------------------------------------------------------------ */
/* WQE builders. */

__global__ void k_wqe_write_inline(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
				   const uint8_t *src, uint32_t len, uint32_t *nbb)
{
	nbb[threadIdx.x] = gic_wqe_write_inline(sq, pos + threadIdx.x, raddr, rkey, src, len,
						GIC_CTRL_CQ_UPDATE);
}

__global__ void k_wqe_write(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
			    uint64_t laddr, uint32_t lkey, uint32_t len, uint32_t imm_be,
			    uint32_t *nbb)
{
	nbb[threadIdx.x] = gic_wqe_write(sq, pos + threadIdx.x, GIC_OPCODE_RDMA_WRITE_IMM, raddr,
					 rkey, laddr, lkey, len, GIC_CTRL_CQ_UPDATE, imm_be);
}

__global__ void k_wqe_atomic_fa(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
				uint64_t add, uint64_t laddr, uint32_t lkey, uint32_t *nbb)
{
	nbb[threadIdx.x] = gic_wqe_atomic_fa(sq, pos + threadIdx.x, raddr, rkey, add, laddr, lkey,
					     GIC_CTRL_CQ_UPDATE);
}

__global__ void k_wqe_nop(gic_sq *sq, uint64_t pos, uint32_t *nbb)
{
	nbb[threadIdx.x] = gic_wqe_nop(sq, pos + threadIdx.x, 0);
}

/* ------------------------------------------------------------------ */
/* Reservation, publication, completion (order given at run time). */

__global__ void k_sq_reserve_excl(gic_sq *sq, uint32_t nbb, int order, uint64_t deadline_ns,
				  uint64_t *pos, int *rc)
{
	*rc = gic_sq_reserve_excl(sq, nbb, pos, order, deadline_ns);
}

__global__ void k_sq_reserve_shared(gic_sq *sq, uint32_t nbb, int order, uint64_t deadline_ns,
				    uint64_t *pos, int *rc)
{
	rc[threadIdx.x] = gic_sq_reserve_shared(sq, nbb, &pos[threadIdx.x], order, deadline_ns);
}

__global__ void k_sq_publish_excl(gic_sq *sq, int order)
{
	gic_sq_publish_excl(sq, order);
}

__global__ void k_sq_publish_inorder(gic_sq *sq, const uint64_t *pos, uint32_t nbb, int order,
				     uint64_t deadline_ns, int *rc)
{
	rc[threadIdx.x] = gic_sq_publish_inorder(sq, pos[threadIdx.x], nbb, order, deadline_ns);
}

__global__ void k_sq_note_signaled(gic_sq *sq, const uint64_t *end)
{
	gic_sq_note_signaled(sq, end[threadIdx.x], 1);
	gic_sq_note_signaled(sq, end[threadIdx.x], 0);
}

__global__ void k_sq_quiet(gic_sq *sq, int order, uint64_t deadline_ns, int *rc)
{
	*rc = gic_sq_quiet(sq, order, deadline_ns);
}

__global__ void k_sq_wait_retired(gic_sq *sq, uint64_t target, int shared, int order,
				  uint64_t deadline_ns, int *rc)
{
	rc[threadIdx.x] = gic_sq_wait_retired(sq, target, shared, order, deadline_ns);
}

__global__ void k_cq_poll_one(gic_cq *cq, int order, gic_cqe_info *out, const char **synd,
			      int *rc)
{
	*rc = gic_cq_poll_one(cq, out, order);
	*synd = gic_syndrome_name(out->syndrome);
}

/* ------------------------------------------------------------------ */
/* One kernel per ordering, the order a compile-time constant. */

#define GIC_ORDER_KERNELS(order)                                                      \
	__global__ void k_sq_ring_##order(gic_sq *sq, uint64_t upto)                  \
	{                                                                             \
		gic_sq_ring(sq, upto, order);                                         \
	}                                                                             \
	__global__ void k_cq_poll_one_##order(gic_cq *cq, gic_cqe_info *out, int *rc) \
	{                                                                             \
		*rc = gic_cq_poll_one(cq, out, order);                                \
	}

GIC_ORDER_KERNELS(GIC_ORDER_NONE)
GIC_ORDER_KERNELS(GIC_ORDER_FENCE_GPU)
GIC_ORDER_KERNELS(GIC_ORDER_FENCE_GPU_DBR)
GIC_ORDER_KERNELS(GIC_ORDER_RELEASE_GPU)
GIC_ORDER_KERNELS(GIC_ORDER_THREADFENCE)
GIC_ORDER_KERNELS(GIC_ORDER_RELEASE_SYS)
GIC_ORDER_KERNELS(GIC_ORDER_FENCE_SYS)
GIC_ORDER_KERNELS(GIC_ORDER_MMIO_SYS)

/* A new enum gic_order value needs its line above. */
static_assert(GIC_ORDER_COUNT == 8, "stamp GIC_ORDER_KERNELS for every enum gic_order value");

/* mini-proxy's device producers (tuned and baseline enqueue, counter wait). */
#include "gic/proxy.h"

__global__ void k_proxy_tuned(gic_proxy_ring *r, uint64_t *out, uint64_t dl)
{
	gic_proxy_desc d;
	uint64_t pos = 0;
	int rc = gic_proxy_desc_inline(&d, threadIdx.x * 8, 42, 8, 0);

	if (!rc)
		rc = gic_proxy_enqueue_tuned(r, &d, dl, &pos);
	out[0] = rc;
	out[1] = pos;
}

__global__ void k_proxy_baseline(gic_proxy_ring *r, uint64_t *out, uint64_t dl)
{
	gic_proxy_desc d;
	int rc = gic_proxy_desc_pointer(&d, threadIdx.x * 8, 0, 64, 1);

	if (!rc)
		rc = gic_proxy_enqueue(r, &d, dl, NULL);
	out[threadIdx.x] = rc;
}

__global__ void k_proxy_wait(gic_proxy_ring *r, const uint64_t *c, uint64_t *out)
{
	out[0] = gic_proxy_wait_counter(r, c, 10, gic_now_ns() + 1000);
}
