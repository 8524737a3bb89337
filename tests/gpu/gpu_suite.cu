/*
 * The GPU conformance suite: the foundation's scenarios driven by GPU
 * threads through gic/post.h, on softnic's CPU engine (queues in mapped host
 * memory) and on its GPU engine (queues in GPU memory). Each case validates
 * every payload on the host and prints one line; the last line is
 * "N passed, N failed". `gic-gpu-suite [both|cpu|gpu|twogpu] [case]` runs a
 * subset; twogpu puts PE1's memory on GPU 1 (GPU engine on GPU 0 writes it
 * through peer access).
 */
#include "gpu_env.h"

#define DL (gic_now_ns() + ENV_DEADLINE_NS)
#define SIG GIC_CTRL_CQ_UPDATE

/* What a kernel thread reports. */
typedef struct kres {
	int rc;
	int syndrome;
	int vendor;
	int extra;
} kres;

/* Payload of write i (8 bytes), never zero. */
static __host__ __device__ uint64_t val(uint64_t i, uint64_t tag)
{
	return (tag << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x5a5a5a5a00000001ull;
}

/* Byte j of the inline payload of length len. */
static __host__ __device__ uint8_t pbyte(uint32_t len, uint32_t j)
{
	return (uint8_t)((len * 131u + j * 7u) | 1u);
}

/* One exclusive post of an 8-byte inline write; signaled when sig. */
static __device__ int post8(gic_sq *sq, uint64_t raddr, uint32_t rkey, uint64_t v, int sig, int order)
{
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, 1, &pos, order, DL);

	if (rc)
		return rc;
	gic_wqe_write_inline(sq, pos, raddr, rkey, &v, 8, sig ? SIG : 0);
	if (sig)
		gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, order);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Kernels. Orders: RELEASE_SYS unless a case is about orders. */

#define ORD GIC_ORDER_RELEASE_SYS

__global__ void k_inline_sizes(gic_sq *g, uint8_t *dst, uint32_t rkey, kres *r)
{
	gic_sq s;
	gic_cq c;
	uint8_t buf[1024];

	gic_sq_local_begin(&s, &c, g);
	for (uint32_t len = 0; len <= s.max_inline && !r->rc; len++) {
		uint64_t pos;

		for (uint32_t j = 0; j < len; j++)
			buf[j] = pbyte(len, j);
		r->rc = gic_sq_reserve_excl(&s, gic_bb_for_ds(gic_ds_inline_write(len)), &pos, ORD, DL);
		if (r->rc)
			break;
		gic_wqe_write_inline(&s, pos, (uint64_t)(dst + len * 1024), rkey, buf, len, SIG);
		gic_sq_note_signaled(&s, s.resv, 0);
		gic_sq_publish_excl(&s, ORD);
		r->rc = gic_sq_quiet(&s, ORD, DL);
	}
	gic_sq_local_end(g, &s);
}

__global__ void k_pointer_sizes(gic_sq *g, uint8_t *dst, uint32_t rkey, uint8_t *src, uint32_t lkey,
				const uint32_t *sizes, int n, kres *r)
{
	gic_sq s;
	gic_cq c;
	uint64_t off = 0;

	gic_sq_local_begin(&s, &c, g);
	for (int i = 0; i < n && !r->rc; i++) {
		uint64_t pos;

		r->rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, DL);
		if (r->rc)
			break;
		gic_wqe_write(&s, pos, GIC_OPCODE_RDMA_WRITE, (uint64_t)(dst + off), rkey,
			      (uint64_t)(src + off), lkey, sizes[i], SIG, 0);
		gic_sq_note_signaled(&s, pos + 1, 0);
		gic_sq_publish_excl(&s, ORD);
		off += sizes[i];
	}
	if (!r->rc)
		r->rc = gic_sq_quiet(&s, ORD, DL);
	gic_sq_local_end(g, &s);
}

/* Batches of n = 1..256 writes, one doorbell each; slot k gets val(k). */
__global__ void k_batches(gic_sq *g, uint64_t *dst, uint32_t rkey, kres *r)
{
	gic_sq s;
	gic_cq c;
	uint64_t k = 0;

	gic_sq_local_begin(&s, &c, g);
	for (uint32_t n = 1; n <= 256 && !r->rc; n++) {
		for (uint32_t i = 0; i < n && !r->rc; i++, k++) {
			uint64_t pos, v = val(k, 1);

			r->rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, DL);
			if (!r->rc)
				gic_wqe_write_inline(&s, pos, (uint64_t)&dst[k], rkey, &v, 8,
						     i + 1 == n ? SIG : 0);
		}
		gic_sq_note_signaled(&s, s.resv, 0);
		gic_sq_publish_excl(&s, ORD);
		if (!r->rc)
			r->rc = gic_sq_quiet(&s, ORD, DL);
	}
	gic_sq_local_end(g, &s);
}

/* Mixed sizes on a small ring; slot (i % 4096) of 256 bytes gets write i. */
__global__ void k_wrap(gic_sq *g, uint8_t *dst, uint32_t rkey, int n, kres *r)
{
	gic_sq s;
	gic_cq c;
	uint8_t buf[200];

	gic_sq_local_begin(&s, &c, g);
	for (int i = 0; i < n && !r->rc; i++) {
		uint32_t len = 1 + (uint32_t)(val(i, 2) % 199);
		uint64_t pos;

		for (uint32_t j = 0; j < len; j++)
			buf[j] = pbyte(len + i, j);
		r->rc = gic_sq_reserve_excl(&s, gic_bb_for_ds(gic_ds_inline_write(len)), &pos, ORD, DL);
		if (r->rc)
			break;
		gic_wqe_write_inline(&s, pos, (uint64_t)(dst + (i % 4096) * 256), rkey, buf, len,
				     i % 4 == 3 ? SIG : 0);
		if (i % 4 == 3)
			gic_sq_note_signaled(&s, s.resv, 0);
		gic_sq_publish_excl(&s, ORD);
	}
	if (!r->rc)
		r->rc = gic_sq_quiet(&s, ORD, DL);
	r->extra = (int)(s.resv / s.bb_cnt);
	gic_sq_local_end(g, &s);
}

/* Thread t owns QP t; write i of thread t goes to slot t * per + i. */
__global__ void k_own_qp(gic_sq *g, uint64_t *dst, uint32_t rkey, int per, kres *r)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq s;
	gic_cq c;

	gic_sq_local_begin(&s, &c, &g[t]);
	for (int i = 0; i < per && !r[t].rc; i++)
		r[t].rc = post8(&s, (uint64_t)&dst[(uint64_t)t * per + i], rkey, val(i, t),
				i % 16 == 15 || i + 1 == per, ORD);
	if (!r[t].rc)
		r[t].rc = gic_sq_quiet(&s, ORD, DL);
	gic_sq_local_end(&g[t], &s);
}

/* Threads share QP 0 with per-thread hand-off (reserve, build, publish in
 * reservation order); every 8th write of a thread is signaled and awaited. */
__global__ void k_shared_handoff(gic_sq *sq, uint64_t *dst, uint32_t rkey, int per, kres *r)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;

	for (int i = 0; i < per && !r[t].rc; i++) {
		uint64_t pos, v = val(i, t + 100);
		int sig = i % 8 == 7 || i + 1 == per;

		r[t].rc = gic_sq_reserve_shared(sq, 1, &pos, ORD, DL);
		if (r[t].rc)
			break;
		gic_wqe_write_inline(sq, pos, (uint64_t)&dst[(uint64_t)t * per + i], rkey, &v, 8,
				     sig ? SIG : 0);
		if (sig)
			gic_sq_note_signaled(sq, pos + 1, 1);
		r[t].rc = gic_sq_publish_inorder(sq, pos, 1, ORD, DL);
		if (!r[t].rc && sig)
			r[t].rc = gic_sq_wait_retired(sq, pos + 1, 1, ORD, DL);
	}
}

/* Threads share a small ring with the one-call hand-off, every WQE
 * signaled; each thread then waits until its last write has retired. */
__global__ void k_handoff_full_ring(gic_sq *sq, uint64_t *dst, uint32_t rkey, int per, kres *r)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t last = 0;

	for (int i = 0; i < per && !r[t].rc; i++)
		r[t].rc = gic_sq_handoff_write_inline_u64(sq, (uint64_t)&dst[(uint64_t)t * per + i],
							  rkey, val(i, t + 500), 1, 1, ORD, DL, &last);
	if (!r[t].rc)
		r[t].rc = gic_sq_wait_retired(sq, last + 1, 1, ORD, DL);
}

/* Threads share QP 0 under one lock per WQE: even writes through the
 * one-call form, odd ones through lock, the exclusive calls, unlock. */
__global__ void k_shared_locked(gic_sq *sq, uint64_t *dst, uint32_t rkey, int per, kres *r)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;

	for (int i = 0; i < per && !r[t].rc; i++) {
		if (i % 2 == 0) {
			r[t].rc = gic_sq_locked_write_inline_u64(sq, (uint64_t)&dst[(uint64_t)t * per + i],
								 rkey, val(i, t + 200), 8, ORD, DL);
			continue;
		}
		r[t].rc = gic_sq_post_lock(sq, DL);
		if (r[t].rc)
			break;
		r[t].rc = post8(sq, (uint64_t)&dst[(uint64_t)t * per + i], rkey, val(i, t + 200),
				i % 8 == 7, ORD);
		if (!r[t].rc && i % 32 == 31)
			r[t].rc = gic_sq_quiet(sq, ORD, DL);
		gic_sq_post_unlock(sq);
	}
	if (!r[t].rc && gic_sq_post_lock(sq, DL) == 0) {
		r[t].rc = gic_sq_quiet(sq, ORD, DL);
		gic_sq_post_unlock(sq);
	}
}

/* Warps share QP 0; each round a warp posts 32 writes with one doorbell. */
__global__ void k_warp_coop(gic_sq *sq, uint64_t *dst, uint32_t rkey, int rounds, kres *r)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int warp = t / 32, lane = t % 32;
	gic_sq_warp w;

	gic_sq_warp_begin(&w, sq);
	for (int i = 0; i < rounds && !r[t].rc; i++) {
		uint64_t v = val(i, t + 300);
		uint64_t slot = ((uint64_t)warp * rounds + i) * 32 + lane;
		int sig = i % 4 == 3 || i + 1 == rounds;

		r[t].rc = gic_sq_warp_write_inline(&w, (uint64_t)&dst[slot], rkey, &v, 8, sig, ORD, DL);
		if (!r[t].rc && sig && lane == 0)
			r[t].rc = gic_sq_wait_retired(sq, gic_ld_acquire_gpu_u64(&sq->ready), 1, ORD, DL);
		r[t].rc = __shfl_sync(0xffffffffu, r[t].rc, 0);
	}
}

/* Every ordering variant, one thread, 200 writes each, awaited one by one. */
#define ORDER_KERNEL(O)                                                                     \
	__global__ void k_order_##O(gic_sq *g, uint64_t *dst, uint32_t rkey, kres *r)       \
	{                                                                                   \
		gic_sq s;                                                                   \
		gic_cq c;                                                                   \
		gic_sq_local_begin(&s, &c, g);                                              \
		for (int i = 0; i < 200 && !r->rc; i++) {                                   \
			r->rc = post8(&s, (uint64_t)&dst[i], rkey, val(i, 400 + O), 1, O);  \
			if (!r->rc)                                                         \
				r->rc = gic_sq_wait_retired(&s, s.ready, 0, O, DL);         \
		}                                                                           \
		gic_sq_local_end(g, &s);                                                    \
	}
ORDER_KERNEL(0) ORDER_KERNEL(1) ORDER_KERNEL(2) ORDER_KERNEL(3) ORDER_KERNEL(4)
ORDER_KERNEL(5) ORDER_KERNEL(6) ORDER_KERNEL(7)
typedef void (*order_kernel)(gic_sq *, uint64_t *, uint32_t, kres *);
static const order_kernel order_kernels[GIC_ORDER_COUNT] = {
	k_order_0, k_order_1, k_order_2, k_order_3, k_order_4, k_order_5, k_order_6, k_order_7,
};

/* Thread t fetch-adds 1 to one counter through its own QP, per times. */
__global__ void k_atomic(gic_sq *g, uint64_t *counter, uint32_t rkey, uint64_t *res,
			 uint32_t lkey, int per, kres *r)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	gic_sq s;
	gic_cq c;

	gic_sq_local_begin(&s, &c, &g[t]);
	for (int i = 0; i < per && !r[t].rc; i++) {
		uint64_t pos;

		r[t].rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, DL);
		if (r[t].rc)
			break;
		gic_wqe_atomic_fa(&s, pos, (uint64_t)counter, rkey, 1,
				  (uint64_t)&res[(uint64_t)t * per + i], lkey, SIG);
		gic_sq_note_signaled(&s, pos + 1, 0);
		gic_sq_publish_excl(&s, ORD);
	}
	if (!r[t].rc)
		r[t].rc = gic_sq_quiet(&s, ORD, DL);
	gic_sq_local_end(&g[t], &s);
}

/* A write with a bad rkey: the GPU poller must get EIO and the syndrome,
 * then a flush error for the next write; no hang. */
__global__ void k_error(gic_sq *g, uint64_t *dst, uint32_t rkey, kres *r)
{
	gic_sq s;
	gic_cq c;

	gic_sq_local_begin(&s, &c, g);
	r->rc = post8(&s, (uint64_t)dst, rkey ^ 0x4400, 1, 1, ORD);
	if (!r->rc)
		r->rc = gic_sq_wait_retired(&s, s.ready, 0, ORD, DL);
	r->syndrome = s.err_info.syndrome;
	r->vendor = s.err_info.vendor_syndrome;
	/* The next write is flushed; its wait still ends (EIO, sticky). */
	r->extra = post8(&s, (uint64_t)dst, rkey, 2, 1, ORD);
	if (!r->extra)
		r->extra = gic_sq_wait_retired(&s, s.ready, 0, ORD, DL);
	gic_sq_local_end(g, &s);
}

/* The quiet behind many completions (the conformance case quiet_many_cqes
 * on a GPU): lane 0 posts QUIET_N signaled writes, the bad-th (if any)
 * with a bad rkey, and lets the engine run them all; then lane 0 alone
 * quiets (how 0: gic_sq_quiet_wide) or the whole warp (gic_sq_quiet_warp;
 * how 2: as a shared queue's, under its poll lock).
 * r->rc: the quiet's code; extra: WQEs retired; syndrome and vendor: the
 * error CQE's syndrome and WQE (from the first post), else -1. */
enum { QUIET_N = 300 };
__global__ void k_quiet_many(gic_sq *g, uint64_t *dst, uint32_t rkey, int bad, int how, kres *r)
{
	int lane = threadIdx.x, rc = 0;
	uint64_t first = g->resv;

	for (int i = 0; lane == 0 && i < QUIET_N && !rc; i++)
		rc = post8(g, (uint64_t)&dst[i], rkey ^ (i == bad ? 0x4400 : 0), val(i, 700), 1, ORD);
	if (lane == 0) /* every WQE executed (ends by itself; the CPU engine needs the longest) */
		for (uint64_t until = gic_now_ns() + 20000000ull; gic_now_ns() < until;)
			;
	rc = __shfl_sync(0xffffffffu, rc, 0);
	if (!rc && how)
		rc = gic_sq_quiet_warp(g, __shfl_sync(0xffffffffu, g->ready, 0), how == 2, ORD, DL);
	else if (!rc && lane == 0)
		rc = gic_sq_quiet_wide(g, g->ready, 0, ORD, DL);
	if (lane == 0) {
		r->rc = rc;
		r->extra = (int)(g->retired - first);
		r->syndrome = g->err ? g->err_info.syndrome : -1;
		r->vendor = g->err ? (uint16_t)(g->err_info.wqe_counter - (uint16_t)first) : -1;
	}
}

/* One write on each of n QPs, then the PE-wide quiet over all of them. */
__global__ void k_quiet_all(gic_sq *g, int n, uint64_t *dst, uint32_t rkey, kres *r)
{
	for (int q = 0; q < n && !r->rc; q++)
		r->rc = post8(&g[q], (uint64_t)&dst[q], rkey, val(q, 500), 0, ORD);
	if (!r->rc)
		r->rc = gic_quiet_all(g, n, ORD, DL);
}

/* Thread 0 posts WRITE_IMMs; thread 32 (another warp) polls the receive
 * CQ, checks imm and length, and then the data the CQE implies. */
__global__ void k_write_imm(gic_sq *g, gic_cq *rcq, uint8_t *dst, uint32_t rkey, uint8_t *src,
			    uint32_t lkey, int n, kres *r)
{
	if (threadIdx.x == 0) {
		gic_sq s;
		gic_cq c;

		gic_sq_local_begin(&s, &c, g);
		for (int i = 0; i < n && !r[0].rc; i++) {
			uint64_t pos;

			r[0].rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, DL);
			if (r[0].rc)
				break;
			gic_wqe_write(&s, pos, GIC_OPCODE_RDMA_WRITE_IMM, (uint64_t)(dst + i * 64),
				      rkey, (uint64_t)(src + i * 64), lkey, 64, SIG,
				      gic_htobe32(0x1000u + i));
			gic_sq_note_signaled(&s, pos + 1, 0);
			gic_sq_publish_excl(&s, ORD);
			r[0].rc = gic_sq_quiet(&s, ORD, DL);
		}
		gic_sq_local_end(g, &s);
	} else if (threadIdx.x == 32) {
		for (int i = 0; i < n && !r[1].rc; i++) {
			gic_cqe_info info;
			uint64_t deadline = DL;

			while ((r[1].rc = gic_cq_poll_one(rcq, &info, ORD)) == EAGAIN &&
			       gic_now_ns() < deadline)
				;
			if (r[1].rc)
				break;
			if (info.cqe_opcode != GIC_CQE_RESP_WR_IMM || info.byte_cnt != 64 ||
			    gic_be32toh(info.imm) != 0x1000u + i)
				r[1].rc = EPROTO;
			/* Volatile loads: no stale cache line can stand in. */
			for (int j = 0; j < 64 && !r[1].rc; j++)
				if (((volatile uint8_t *)dst)[i * 64 + j] != src[i * 64 + j])
					r[1].rc = EBADMSG; /* CQE seen before its data */
		}
	}
}

/* DOCA GPUNetIO's order, from a GPU thread: doorbell (producer index),
 * doorbell record, the same doorbell again; every eighth post waits 20 us
 * between the first two stores so the engine surely looks in between. The
 * CQ is polled as DOCA polls on sm_90: by the owner bit alone. */
__global__ void k_doca_order(gic_sq *g, uint64_t *dst, uint32_t rkey, int n, kres *r)
{
	gic_sq s;
	gic_cq c;

	gic_sq_local_begin(&s, &c, g);
	for (int i = 0; i < n && !r->rc; i++) {
		uint64_t pos = s.resv++, db, tail = 0;
		uint64_t v = val(i, 700);
		const uint64_t *t = (const uint64_t *)((const uint8_t *)&c.cqes[c.ci & (c.cqe_cnt - 1)] +
						       GIC_CQE_TAIL_OFFSET);
		uint64_t deadline = DL;

		gic_wqe_write_inline(&s, pos, (uint64_t)&dst[i], rkey, &v, 8, SIG);
		db = gic_doorbell_value(s.qpn, pos + 1);
		/* The release orders the WQE's stores before the early doorbell. */
		gic_st_release_sys_u64(s.db, db);
		if (i % 8 == 0)
			__nanosleep(20000);
		gic_st_release_sys_u32(s.dbrec, gic_htobe32((uint32_t)(pos + 1) & 0xffffu));
		gic_st_release_sys_u64(s.db, db);
		/* Owner bit only: a fresh entry (0xf1) must not pass for done. */
		while (gic_cqe_tail_owner(tail = gic_ld_acquire_sys_u64(t)) !=
		       ((c.ci & c.cqe_cnt) ? 1u : 0u)) {
			if (gic_now_ns() > deadline) {
				r->rc = ETIMEDOUT;
				break;
			}
		}
		if (!r->rc && (gic_cqe_tail_opcode(tail) != GIC_CQE_REQ ||
			       gic_cqe_tail_wqe_counter(tail) != (uint16_t)pos))
			r->rc = EPROTO;
		c.ci++;
		gic_st_release_sys_u32(c.dbrec, gic_htobe32(c.ci & 0xffffffu));
		s.ready = s.retired = s.signaled = pos + 1;
	}
	gic_sq_local_end(g, &s);
}

/* A GPU thread's reads and atomics (NVSHMEM's and DeepEP's kinds): 4-byte
 * masked fetch-adds of 1, 8-byte compare-swap increments, then an RDMA
 * READ of both words back into res; each fetched value is checked. */
__global__ void k_read_atomics(gic_sq *g, uint8_t *dst, uint32_t rkey, uint8_t *res, uint32_t lkey,
			       int n, kres *r)
{
	gic_sq s;
	gic_cq c;
	gic_masked_args add1 = { 1, 0, 0, 0 };

	gic_sq_local_begin(&s, &c, g);
	for (int i = 0; i < n && !r->rc; i++) {
		uint64_t pos;
		uint32_t nbb;
		int kind = i & 1;

		r->rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, DL);
		if (r->rc)
			break;
		if (kind == 0)
			nbb = gic_wqe_masked_atomic(&s, pos, GIC_OPCODE_ATOMIC_MASKED_FA, 4,
						    (uint64_t)(dst + 8), rkey, &add1,
						    (uint64_t)res, lkey, SIG);
		else
			nbb = gic_wqe_atomic_cs(&s, pos, (uint64_t)dst, rkey, (uint64_t)(i / 2),
						(uint64_t)(i / 2 + 1), (uint64_t)(res + 8), lkey, SIG);
		gic_sq_note_signaled(&s, pos + nbb, 0);
		gic_sq_publish_excl(&s, ORD);
		r->rc = gic_sq_quiet(&s, ORD, DL);
		if (r->rc)
			break;
		/* 4-byte results come back big-endian, 8-byte in host order. */
		if (kind == 0 && gic_be32toh(*(volatile uint32_t *)res) != (uint32_t)(i / 2))
			r->rc = EBADMSG;
		if (kind == 1 && *(volatile uint64_t *)(res + 8) != (uint64_t)(i / 2))
			r->rc = EBADMSG;
	}
	if (!r->rc) {
		uint64_t pos;

		r->rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, DL);
		if (!r->rc) {
			gic_wqe_read(&s, pos, (uint64_t)dst, rkey, (uint64_t)(res + 16), lkey, 16, SIG);
			gic_sq_note_signaled(&s, pos + 1, 0);
			gic_sq_publish_excl(&s, ORD);
			r->rc = gic_sq_quiet(&s, ORD, DL);
		}
		if (!r->rc && (((volatile uint64_t *)res)[2] != (uint64_t)(n / 2) ||
			       ((volatile uint32_t *)res)[6] != (uint32_t)((n + 1) / 2)))
			r->rc = EBADMSG;
	}
	gic_sq_local_end(g, &s);
}

/* ------------------------------------------------------------------ */
/* Host side. */

static int failures;

#define EXPECT(cond, ...)                                                           \
	do {                                                                        \
		if (!(cond)) {                                                      \
			failures++;                                                 \
			fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);           \
			fprintf(stderr, __VA_ARGS__);                               \
			fputc('\n', stderr);                                        \
		}                                                                   \
	} while (0)

typedef struct suite_ctx {
	gpu_env *e;
	kres *d_res;   /* device result slots */
	kres h_res[1024];
	int nres;
} suite_ctx;

/* Waits for the case's kernel and copies back its n result slots. */
static int finish(suite_ctx *x, const char *name, int n)
{
	int rc;

	CUDA_OK(cudaGetLastError());
	rc = gpu_env_wait(x->e, name, 60);
	if (rc)
		return rc;
	CUDA_OK(cudaMemcpyAsync(x->h_res, x->d_res, sizeof(kres) * n, cudaMemcpyDeviceToHost,
				x->e->stream));
	rc = gpu_env_wait(x->e, name, 10);
	for (int i = 0; i < n && !rc; i++) {
		EXPECT(x->h_res[i].rc == 0, "%s: thread %d: rc %d (%s)", name, i, x->h_res[i].rc,
		       softnic_qp_error(x->e->qp[0]));
	}
	return rc;
}

static void clear_results(suite_ctx *x, int n)
{
	CUDA_OK(cudaMemsetAsync(x->d_res, 0, sizeof(kres) * n, x->e->stream));
}

/* Reads n 8-byte slots of dst and compares with want(k). */
static void check_slots(suite_ctx *x, const char *name, uint64_t n,
			uint64_t (*want)(uint64_t k, void *arg), void *arg)
{
	uint64_t *h = (uint64_t *)malloc(n * 8);

	if (gpu_env_read(x->e, h, x->e->dst, n * 8) == 0) {
		for (uint64_t k = 0; k < n; k++) {
			uint64_t w = want(k, arg);

			if (h[k] != w) {
				EXPECT(0, "%s: slot %llu holds 0x%llx, want 0x%llx", name,
				       (unsigned long long)k, (unsigned long long)h[k],
				       (unsigned long long)w);
				break;
			}
		}
	} else {
		EXPECT(0, "%s: read back failed", name);
	}
	free(h);
}

static void case_inline_sizes(suite_ctx *x)
{
	gpu_env *e = x->e;
	uint8_t *h = (uint8_t *)malloc(1024 * 1024);

	clear_results(x, 1);
	k_inline_sizes<<<1, 1, 0, e->stream>>>(e->d_sq, e->dst, softnic_mr_rkey(e->dst_mr), x->d_res);
	if (finish(x, "inline_sizes", 1) == 0 && gpu_env_read(e, h, e->dst, 1024 * 1024) == 0) {
		for (uint32_t len = 1; len <= 972; len++) {
			int bad = h[len * 1024 + len] != 0; /* nothing past the payload */

			for (uint32_t j = 0; j < len; j++)
				bad |= h[len * 1024 + j] != pbyte(len, j);
			EXPECT(!bad, "inline_sizes: payload of %u bytes", len);
			if (bad)
				break;
		}
	}
	free(h);
}

static void case_pointer_sizes(suite_ctx *x)
{
	static const uint32_t sizes[] = { 1, 3, 8, 63, 64, 65, 4095, 4096, 65537, 1 << 20 };
	const int n = sizeof(sizes) / sizeof(sizes[0]);
	gpu_env *e = x->e;
	size_t total = 0;
	uint32_t *d_sizes;
	uint8_t *pat, *back;

	for (int i = 0; i < n; i++)
		total += sizes[i];
	pat = (uint8_t *)malloc(total);
	back = (uint8_t *)malloc(total);
	for (size_t i = 0; i < total; i++)
		pat[i] = (uint8_t)(i * 2654435761u >> 13) | 1;
	gpu_env_write(e, e->src, pat, total);
	CUDA_OK(cudaMalloc(&d_sizes, sizeof(sizes)));
	CUDA_OK(cudaMemcpy(d_sizes, sizes, sizeof(sizes), cudaMemcpyHostToDevice));
	clear_results(x, 1);
	k_pointer_sizes<<<1, 1, 0, e->stream>>>(e->d_sq, e->dst, softnic_mr_rkey(e->dst_mr), e->src,
						softnic_mr_lkey(e->src_mr), d_sizes, n, x->d_res);
	if (finish(x, "pointer_sizes", 1) == 0 && gpu_env_read(e, back, e->dst, total) == 0)
		EXPECT(memcmp(back, pat, total) == 0, "pointer_sizes: payloads differ");
	free(pat);
	free(back);
}

static uint64_t want_batches(uint64_t k, void *arg)
{
	(void)arg;
	return val(k, 1);
}

static void case_batches(suite_ctx *x)
{
	gpu_env *e = x->e;

	clear_results(x, 1);
	k_batches<<<1, 1, 0, e->stream>>>(e->d_sq, (uint64_t *)e->dst, softnic_mr_rkey(e->dst_mr),
					  x->d_res);
	if (finish(x, "batches", 1) == 0)
		check_slots(x, "batches", 256 * 257 / 2, want_batches, NULL);
}

static void case_wrap(suite_ctx *x)
{
	const int n = 20000;
	gpu_env *e = x->e;
	uint8_t *h = (uint8_t *)malloc(4096 * 256);

	clear_results(x, 1);
	/* QP 1 of this env has the small ring. */
	k_wrap<<<1, 1, 0, e->stream>>>(e->d_sq + 1, e->dst, softnic_mr_rkey(e->dst_mr), n, x->d_res);
	if (finish(x, "wrap", 1) == 0 && gpu_env_read(e, h, e->dst, 4096 * 256) == 0) {
		EXPECT(x->h_res[0].extra > 1000, "wrap: only %d passes", x->h_res[0].extra);
		for (int i = n - 4096; i < n; i++) {
			uint32_t len = 1 + (uint32_t)(val(i, 2) % 199);
			int bad = 0;

			for (uint32_t j = 0; j < len; j++)
				bad |= h[(i % 4096) * 256 + j] != pbyte(len + i, j);
			EXPECT(!bad, "wrap: write %d (%u bytes)", i, len);
			if (bad)
				break;
		}
	}
	free(h);
}

typedef struct per_arg {
	int per;
	uint64_t tag0;
} per_arg;

static uint64_t want_per_thread(uint64_t k, void *arg)
{
	per_arg *a = (per_arg *)arg;

	return val(k % a->per, k / a->per + a->tag0);
}

static void case_own_qp(suite_ctx *x)
{
	const int threads = 64, per = 2000;
	gpu_env *e = x->e;
	per_arg a = { per, 0 };

	clear_results(x, threads);
	k_own_qp<<<2, 32, 0, e->stream>>>(e->d_sq, (uint64_t *)e->dst, softnic_mr_rkey(e->dst_mr),
					  per, x->d_res);
	if (finish(x, "own_qp", threads) == 0)
		check_slots(x, "own_qp", (uint64_t)threads * per, want_per_thread, &a);
}

static void case_shared_handoff(suite_ctx *x)
{
	const int threads = 64, per = 200;
	gpu_env *e = x->e;
	per_arg a = { per, 100 }, b = { per, 500 };

	clear_results(x, threads);
	k_shared_handoff<<<2, 32, 0, e->stream>>>(e->d_sq, (uint64_t *)e->dst,
						  softnic_mr_rkey(e->dst_mr), per, x->d_res);
	if (finish(x, "shared_handoff", threads) != 0)
		return;
	check_slots(x, "shared_handoff", (uint64_t)threads * per, want_per_thread, &a);
	/* The one-call form on QP 1's 16-BB ring: 64 lanes contend for 16
	 * slots, so most reservations wait for the ring to drain. */
	clear_results(x, threads);
	k_handoff_full_ring<<<2, 32, 0, e->stream>>>(e->d_sq + 1, (uint64_t *)e->dst,
						     softnic_mr_rkey(e->dst_mr), per, x->d_res);
	if (finish(x, "shared_handoff_full_ring", threads) == 0)
		check_slots(x, "shared_handoff_full_ring", (uint64_t)threads * per, want_per_thread,
			    &b);
}

static void case_shared_locked(suite_ctx *x)
{
	const int threads = 32, per = 200;
	gpu_env *e = x->e;
	per_arg a = { per, 200 };

	clear_results(x, threads);
	k_shared_locked<<<1, threads, 0, e->stream>>>(e->d_sq, (uint64_t *)e->dst,
						       softnic_mr_rkey(e->dst_mr), per, x->d_res);
	if (finish(x, "shared_locked", threads) == 0)
		check_slots(x, "shared_locked", (uint64_t)threads * per, want_per_thread, &a);
}

typedef struct warp_arg {
	int rounds;
} warp_arg;

static uint64_t want_warp(uint64_t slot, void *arg)
{
	int rounds = ((warp_arg *)arg)->rounds;
	uint64_t lane = slot % 32, i = slot / 32 % rounds, warp = slot / 32 / rounds;

	return val(i, warp * 32 + lane + 300);
}

static void case_warp_coop(suite_ctx *x)
{
	const int warps = 4, rounds = 100;
	gpu_env *e = x->e;
	warp_arg a = { rounds };

	clear_results(x, warps * 32);
	k_warp_coop<<<1, warps * 32, 0, e->stream>>>(e->d_sq, (uint64_t *)e->dst,
						     softnic_mr_rkey(e->dst_mr), rounds, x->d_res);
	if (finish(x, "warp_coop", warps * 32) == 0)
		check_slots(x, "warp_coop", (uint64_t)warps * rounds * 32, want_warp, &a);
}

static uint64_t want_order(uint64_t k, void *arg)
{
	return val(k, 400 + *(int *)arg);
}

static void case_orders(suite_ctx *x)
{
	gpu_env *e = x->e;

	for (int o = 0; o < GIC_ORDER_COUNT; o++) {
		char name[32];
		int before = failures;

		snprintf(name, sizeof(name), "order %d", o);
		clear_results(x, 1);
		/* A QP of its own for each variant (QPs 2..8). */
		order_kernels[o]<<<1, 1, 0, e->stream>>>(e->d_sq + 2 + o, (uint64_t *)e->dst,
							 softnic_mr_rkey(e->dst_mr), x->d_res);
		if (finish(x, name, 1) == 0)
			check_slots(x, name, 200, want_order, &o);
		if (o == GIC_ORDER_NONE && failures != before) {
			/* Unordered stores are allowed to reach the engine out of
			 * order: that is what "unsafe" means. Report, don't fail. */
			printf("     note: order 0 (none, unsafe): the engine saw the doorbell before "
			       "the WQE (above); expected of an unordered post\n");
			failures = before;
		}
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t p = *(const uint64_t *)a, q = *(const uint64_t *)b;

	return p < q ? -1 : p > q;
}

static void case_atomic(suite_ctx *x)
{
	const int threads = 16, per = 300, n = threads * per;
	gpu_env *e = x->e;
	uint64_t zero = 0, counter = 0;
	uint64_t *res = (uint64_t *)malloc(n * 8);

	gpu_env_write(e, e->dst, &zero, 8);
	clear_results(x, threads);
	/* QPs 35-50: a QP of the orders case may be in error (order 0 is
	 * allowed to let the engine see its doorbell before its WQE). */
	k_atomic<<<1, threads, 0, e->stream>>>(e->d_sq + 35, (uint64_t *)e->dst,
					       softnic_mr_rkey(e->dst_mr),
					       (uint64_t *)e->res, softnic_mr_lkey(e->res_mr), per,
					       x->d_res);
	if (finish(x, "atomic", threads) == 0 && gpu_env_read(e, &counter, e->dst, 8) == 0 &&
	    gpu_env_read(e, res, e->res, n * 8) == 0) {
		EXPECT(counter == (uint64_t)n, "atomic: counter %llu, want %d",
		       (unsigned long long)counter, n);
		qsort(res, n, 8, cmp_u64);
		for (int k = 0; k < n; k++) {
			EXPECT(res[k] == (uint64_t)k, "atomic: fetched values not a permutation at %d", k);
			if (res[k] != (uint64_t)k)
				break;
		}
	}
	free(res);
}

static void case_error(suite_ctx *x)
{
	gpu_env *e = x->e;
	uint64_t first = 1;

	clear_results(x, 1);
	/* QP 9: it ends in the error state. */
	k_error<<<1, 1, 0, e->stream>>>(e->d_sq + 9, (uint64_t *)e->dst, softnic_mr_rkey(e->dst_mr),
					x->d_res);
	CUDA_OK(cudaGetLastError());
	if (gpu_env_wait(e, "error", 60)) {
		EXPECT(0, "error: the GPU poller hung");
		return;
	}
	CUDA_OK(cudaMemcpy(x->h_res, x->d_res, sizeof(kres), cudaMemcpyDeviceToHost));
	EXPECT(x->h_res[0].rc == EIO, "error: wait returned %d, want EIO", x->h_res[0].rc);
	EXPECT(x->h_res[0].syndrome == GIC_SYND_REMOTE_ACCESS_ERR &&
	       x->h_res[0].vendor == SOFTNIC_VSYND_BAD_RKEY, "error: syndrome 0x%x vendor 0x%x",
	       x->h_res[0].syndrome, x->h_res[0].vendor);
	EXPECT(x->h_res[0].extra == EIO, "error: the write after the error returned %d",
	       x->h_res[0].extra);
	EXPECT(softnic_qp_in_error(e->qp[9]) && strstr(softnic_qp_error(e->qp[9]), "rkey"),
	       "error: QP text '%s'", softnic_qp_error(e->qp[9]));
	gpu_env_read(e, &first, e->dst, 8);
	EXPECT(first == 0, "error: a failed or flushed write landed (0x%llx)",
	       (unsigned long long)first);
}

static uint64_t want_quiet_all(uint64_t k, void *arg)
{
	(void)arg;
	return val(k, 500);
}

static void case_quiet_all(suite_ctx *x)
{
	gpu_env *e = x->e;
	const int n = 16;

	clear_results(x, 1);
	/* QPs 10..25 */
	k_quiet_all<<<1, 1, 0, e->stream>>>(e->d_sq + 10, n, (uint64_t *)e->dst,
					    softnic_mr_rkey(e->dst_mr), x->d_res);
	if (finish(x, "quiet_all", 1) == 0)
		check_slots(x, "quiet_all", n, want_quiet_all, NULL);
}

/* k_quiet_many on QPs 29-34: the lane-0 quiet and the warp's (exclusive
 * and shared), clean and with a bad rkey at WQE 200; all must retire the
 * same WQEs, report the same error CQE and leave the same payloads (each
 * in its own 4 KiB). */
static void case_quiet_warp(suite_ctx *x)
{
	static const char *const hows[] = { "lane 0", "warp", "warp, shared" };
	gpu_env *e = x->e;

	for (int k = 0; k < 6; k++) {
		int how = k % 3, bad = k / 3 ? 200 : -1, good = bad < 0 ? QUIET_N : bad;
		uint64_t *h = (uint64_t *)malloc(QUIET_N * 8), *dst = (uint64_t *)e->dst + 512 * k;
		char name[40];

		snprintf(name, sizeof(name), "quiet_warp %s%s", hows[how],
			 bad < 0 ? "" : ", bad WQE 200");
		clear_results(x, 1);
		k_quiet_many<<<1, 32, 0, e->stream>>>(e->d_sq + 29 + k, dst, softnic_mr_rkey(e->dst_mr),
						      bad, how, x->d_res);
		CUDA_OK(cudaGetLastError());
		if (gpu_env_wait(e, name, 60)) {
			EXPECT(0, "%s: the kernel hung", name);
			free(h);
			return;
		}
		CUDA_OK(cudaMemcpy(x->h_res, x->d_res, sizeof(kres), cudaMemcpyDeviceToHost));
		EXPECT(x->h_res[0].rc == (bad < 0 ? 0 : EIO), "%s: rc %d", name, x->h_res[0].rc);
		EXPECT(x->h_res[0].extra == (bad < 0 ? QUIET_N : bad + 1), "%s: retired %d", name,
		       x->h_res[0].extra);
		EXPECT(bad < 0 ? x->h_res[0].syndrome == -1
			       : x->h_res[0].syndrome == GIC_SYND_REMOTE_ACCESS_ERR &&
					 x->h_res[0].vendor == bad,
		       "%s: error CQE syndrome %d at WQE %d", name, x->h_res[0].syndrome,
		       x->h_res[0].vendor);
		if (h && gpu_env_read(e, h, dst, QUIET_N * 8) == 0)
			for (int i = 0; i < good; i++)
				if (h[i] != val(i, 700)) {
					EXPECT(0, "%s: slot %d holds 0x%llx", name, i,
					       (unsigned long long)h[i]);
					break;
				}
		free(h);
	}
}

static void case_write_imm(suite_ctx *x)
{
	const int n = 200;
	gpu_env *e = x->e;
	uint8_t *pat = (uint8_t *)malloc(n * 64);

	for (int i = 0; i < n * 64; i++)
		pat[i] = (uint8_t)(i * 7 + 3);
	gpu_env_write(e, e->src, pat, n * 64);
	clear_results(x, 2);
	k_write_imm<<<1, 64, 0, e->stream>>>(e->d_sq + 26, e->d_rcq, e->dst, softnic_mr_rkey(e->dst_mr),
					     e->src, softnic_mr_lkey(e->src_mr), n, x->d_res);
	finish(x, "write_imm", 2);
	free(pat);
}

static uint64_t want_doca(uint64_t k, void *arg)
{
	(void)arg;
	return val(k, 700);
}

static void case_doca_order(suite_ctx *x)
{
	const int n = 400;
	gpu_env *e = x->e;

	clear_results(x, 1);
	/* QP 27 */
	k_doca_order<<<1, 1, 0, e->stream>>>(e->d_sq + 27, (uint64_t *)e->dst,
					     softnic_mr_rkey(e->dst_mr), n, x->d_res);
	if (finish(x, "doca_order", 1) == 0)
		check_slots(x, "doca_order", n, want_doca, NULL);
}

static void case_read_atomics(suite_ctx *x)
{
	gpu_env *e = x->e;

	clear_results(x, 1);
	/* QP 28 */
	k_read_atomics<<<1, 1, 0, e->stream>>>(e->d_sq + 28, e->dst, softnic_mr_rkey(e->dst_mr),
					       e->res, softnic_mr_lkey(e->res_mr), 300, x->d_res);
	finish(x, "read_atomics", 1);
}

/* Zeroes the destination region between cases. */
static void reset_dst(gpu_env *e)
{
	CUDA_OK(cudaMemsetAsync(e->dst, 0, e->cfg.region, e->stream));
	gpu_env_wait(e, "reset", 10);
}

typedef struct suite_case {
	const char *name;
	void (*fn)(suite_ctx *);
} suite_case;

static const suite_case cases[] = {
	{ "inline_sizes", case_inline_sizes }, { "pointer_sizes", case_pointer_sizes },
	{ "batches", case_batches }, { "wraparound", case_wrap }, { "own_qp", case_own_qp },
	{ "shared_handoff", case_shared_handoff }, { "shared_locked", case_shared_locked },
	{ "warp_coop", case_warp_coop }, { "orders", case_orders }, { "atomic", case_atomic },
	{ "error_cqe", case_error }, { "quiet_all", case_quiet_all }, { "write_imm", case_write_imm },
	{ "doca_order", case_doca_order }, { "read_atomics", case_read_atomics },
	{ "quiet_warp", case_quiet_warp },
};

/* Runs the cases on one engine; returns how many failed. With peer_gpu,
 * PE1's region is on GPU 1. */
static int run_engine(int gpu_engine, int peer_gpu, const char *only, int *passed)
{
	gpu_env_cfg cfg = { gpu_engine, 64, 10, 4 << 20, 1, 4, 4, 1, 0, peer_gpu };
	gpu_env e;
	suite_ctx x;
	int failed = 0;

	gpu_env_open(&e, &cfg);
	memset(&x, 0, sizeof(x));
	x.e = &e;
	CUDA_OK(cudaMalloc(&x.d_res, sizeof(kres) * 1024));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = failures;
		uint64_t t0 = gic_now_ns();

		if (only && strcmp(only, cases[i].name))
			continue;
		reset_dst(&e);
		cases[i].fn(&x);
		printf("%-4s %-16s %-4s %8.1f ms\n", peer_gpu ? "gpu2" : gpu_engine ? "gpu" : "cpu",
		       cases[i].name,
		       failures == before ? "ok" : "FAIL", (gic_now_ns() - t0) / 1e6);
		fflush(stdout);
		if (failures == before)
			(*passed)++;
		else
			failed++;
	}
	if (gpu_engine && !softnic_gpu_engine_alive(e.nic)) {
		fprintf(stderr, "GPU engine died: %s\n", softnic_gpu_engine_error(e.nic));
		failed++;
	}
	gpu_env_close(&e);
	cudaFree(x.d_res);
	return failed;
}

int main(int argc, char **argv)
{
	const char *engine = argc > 1 ? argv[1] : "both";
	const char *only = argc > 2 ? argv[2] : NULL;
	int passed = 0, failed = 0;
	cudaDeviceProp prop;

	/* docs/DESIGN.md §4.5: every kernel must be loaded before the engine spins. */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	CUDA_OK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	printf("gic-gpu-suite on %s, SM clock %.0f MHz\n", prop.name, gpu_sm_clock_mhz(0));
	if (!strcmp(engine, "cpu") || !strcmp(engine, "both"))
		failed += run_engine(0, 0, only, &passed);
	if (!strcmp(engine, "gpu") || !strcmp(engine, "both"))
		failed += run_engine(1, 0, only, &passed);
	if (!strcmp(engine, "twogpu")) /* PE1's memory on GPU 1 */
		failed += run_engine(1, 1, only, &passed);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
