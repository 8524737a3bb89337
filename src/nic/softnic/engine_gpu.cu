/*
 * softnic GPU engine: a kernel whose warps scan the QP table and run the
 * shared execution core (engine_core.h) on each QP with work. A QP table
 * slot belongs to one warp, which gives per-QP in-order execution without
 * locks. Within a QP, runs of RDMA writes of one size in basic blocks (the
 * first WQE's: one BB, or more for inline payloads past one BB) that check
 * out and whose destinations do not overlap execute one per lane (so no
 * order can show); everything else runs on lane 0 through the serial core.
 * Persistent by default (started at open, stopped at close); on demand for
 * tools that serialize kernels.
 *
 * Latency (docs/softnic.md, "The GPU engine's pipeline"): each dependent
 * global-memory access costs an L2 round trip, and every acquire (load,
 * CAS) also drops the SM's L1, so the next plain load of engine state is
 * one more trip. The scan therefore looks at up to 32 QPs per warp at
 * once (one per lane), keeps the QP and doorbell pointers of the warp's
 * first 32 slots in registers, and issues every load of a pass before it
 * uses any: an idle pass is one round trip, without a sleep. A warp keeps
 * the lock of the send CQ its batches write across passes until another
 * writer asks for it (cq_park): no atomic per batch while it is the CQ's
 * only writer. Tracing (softnic_gpu_attr.trace_wqes) stamps each step of
 * a WQE's life.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/softnic_gpu.h"
#include "softnic_internal.h"
#include "engine_core.h"
#include "green.h"

enum { STOP_DEADLINE_NS = 5000000000ull };

/* A bump allocator over one allocation made before the engine starts.
 * Frees are no-ops; everything goes back at close. */
typedef struct arena {
	uint8_t *base;
	size_t size, used;
	int host; /* 1: pinned mapped host memory, 0: managed */
} arena;

typedef struct gpu_engine {
	softnic_gpu_attr attr;
	cudaStream_t stream;
	cudaStream_t copy_stream; /* prefetches; never waits for the engine */
	softnic_stats *warp_stats; /* one per warp, device memory */
	int nwarps;
	int alive;
	char error[256];
	softnic_allocator queue_alloc;
	pthread_mutex_t lock; /* the arenas */
	arena state, queues;
	struct snx_gpu_jobs *jobs;    /* the large writes' shared copies (state arena) */
	softnic_gpu_trace_rec *trace; /* device memory, nwarps * trace_cap; NULL: off */
	uint32_t trace_cap;           /* records per warp */
	snx_green green;              /* attr.engine_sms > 0: the SM split (green.h);
				       * stream is then green.engine_stream */
} gpu_engine;

/* ------------------------------------------------------------------ */
/* The kernel. */

#define FULL_WARP 0xffffffffu

/* The engine's fixed settings, read once at the kernel's start (the host
 * sets them before the launch) and passed by value, so that they stay in
 * registers: no load of snx_shared after every acquire (which empties the
 * SM's L1), and tracing off costs one register test per step. */
typedef struct gpu_consts {
	uint32_t strict;
	uint32_t gpu_scope;
	uint32_t trace;     /* 1: the warp's gpu_trace records */
} gpu_consts;

/* Tracing: lane 0 of a warp stamps the steps of the pass under way into
 * pending slots (a clock read each, nothing else on the timed path) and
 * writes them out as records once the step's work is done
 * (trace_flush), so that the record stores and the loads they need (the
 * QP number) fall outside the spans measured. Every helper first tests
 * gpu_consts.trace (a register): off, the gpu_trace is never touched. */
typedef struct gpu_trace {
	softnic_gpu_trace_rec *rec; /* this warp's records; NULL: off */
	uint32_t cap, n;
	uint32_t warp, smid;
	uint32_t have;              /* bit s: step s pending */
	uint64_t ns[SOFTNIC_TRACE_STEPS], clk[SOFTNIC_TRACE_STEPS];
	uint16_t wqe[SOFTNIC_TRACE_STEPS];
	uint8_t cnt[SOFTNIC_TRACE_STEPS];
} gpu_trace;

static __device__ __forceinline__ uint32_t gpu_smid(void)
{
	uint32_t id;

	asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
	return id;
}

static __device__ __forceinline__ void trace_init(gpu_trace *t, softnic_gpu_trace_rec *all,
						  uint32_t cap, int warp)
{
	t->rec = all ? all + (size_t)warp * cap : NULL;
	t->cap = cap;
	t->n = 0;
	t->warp = (uint32_t)warp;
	t->smid = gpu_smid();
	t->have = 0;
}

/* The steps warp_batch() stamps before it may hand its WQEs back. */
#define TRACE_BATCH_STEPS ((1u << SOFTNIC_TRACE_WQE_READ) | (1u << SOFTNIC_TRACE_KEY_OK) | \
			   (1u << SOFTNIC_TRACE_CQ_CLAIMED))

/* Lane 0: step happened now, for the WQE at wqe (count WQEs). */
static __device__ __forceinline__ void trace_now(gpu_consts k, gpu_trace *t, int step,
						 uint64_t wqe, uint32_t count)
{
	if (!k.trace || t->n >= t->cap)
		return;
	t->ns[step] = gic_now_ns();
	t->clk[step] = (uint64_t)clock64();
	t->wqe[step] = (uint16_t)wqe;
	t->cnt[step] = (uint8_t)(count < 255 ? count : 255);
	t->have |= 1u << step;
}

/* trace_now() for the WQE the pass's doorbell sighting named. */
static __device__ __forceinline__ void trace_now_as(gpu_consts k, gpu_trace *t, int step,
						    uint32_t count)
{
	if (k.trace)
		trace_now(k, t, step, t->wqe[SOFTNIC_TRACE_DB_SEEN], count);
}

/* Drops the pending steps of mask (work handed elsewhere, or none). */
static __device__ __forceinline__ void trace_drop(gpu_consts k, gpu_trace *t, uint32_t mask)
{
	if (k.trace)
		t->have &= ~mask;
}

static __device__ __noinline__ void trace_write(gpu_trace *t, uint32_t qpn);

/* Lane 0: writes out what is pending for QP qpn (from the pass's view: a
 * load of the QP record here would be one more trip on the traced path). */
static __device__ __forceinline__ void trace_flush(gpu_consts k, gpu_trace *t, uint32_t qpn)
{
	if (k.trace && t->have)
		trace_write(t, qpn);
}

/* Lane 0: writes the pending steps of QP qpn as records, in step order. */
static __device__ __noinline__ void trace_write(gpu_trace *t, uint32_t qpn)
{
	for (int s = 1; s < SOFTNIC_TRACE_STEPS && t->have; s++) {
		softnic_gpu_trace_rec r;

		if (!(t->have >> s & 1))
			continue;
		t->have &= ~(1u << s);
		if (t->n >= t->cap)
			continue;
		r.ns = t->ns[s];
		r.clk = t->clk[s];
		r.qpn = qpn;
		r.wqe_index = t->wqe[s];
		r.step = (uint8_t)s;
		r.count = t->cnt[s];
		r.warp = t->warp;
		r.smid = t->smid;
		t->rec[t->n++] = r;
	}
}


/* A lane's WQE in a batch: an RDMA write decoded from its first BB. Every
 * field is read at a fixed place, so that the whole record stays in
 * registers (a local array indexed at run time, or a struct whose address
 * a called function takes, would go to local memory, where each access
 * after an acquire is one more L2 trip). */
typedef struct lane_write {
	uint64_t raddr, total_len;
	uint64_t addr0, addr1;  /* pointer segments (nsge of them) */
	uint32_t len0, len1, lkey0, lkey1;
	uint32_t rkey, nsge;
	uint32_t inl;           /* 1: an inline payload of total_len bytes */
	uint32_t signaled;
	uint32_t pw[7];         /* bytes 36..63 of the BB: a one-BB WQE's inline payload */
	uint8_t *src0, *src1, *dst; /* resolved; dst NULL when total_len is 0 */
} lane_write;

/* What a batch needs of its QP: fields that are fixed while the QP is in
 * the table (and the peer's pd, fixed for the peer's life), taken from
 * lane 0's view of the pass's start (snx_qp_view) and broadcast, so that
 * no lane loads the QP record after the doorbell record's acquire (which
 * empties the SM's L1: each such load would be one more L2 trip). */
typedef struct batch_qp {
	const uint8_t *sq;
	const snx_qp *peer;     /* valid: the caller saw the link connected */
	snx_shared *peer_sh;    /* the peer's MR table when another softnic's */
	const snx_peer_map *peer_map; /* the peer's regions when another process's */
	uint32_t peer_epoch;    /* ... and its table's MR epoch as of this pass */
	snx_cq *cq;             /* the send CQ (lane 0 uses it) */
	uint32_t bb_cnt, pd, qpn;
} batch_qp;

/* Lane 0's view as its own batch_qp (solo_write: no other lane takes part). */
static __device__ __forceinline__ batch_qp batch_qp_own(const snx_qp_view *v)
{
	batch_qp b;

	b.sq = v->sq_buf;
	b.peer = v->peer;
	b.peer_sh = v->peer_sh;
	b.peer_map = v->peer_map;
	b.peer_epoch = v->peer_epoch;
	b.cq = v->send_cq;
	b.bb_cnt = v->bb_cnt;
	b.pd = v->pd;
	b.qpn = v->qpn;
	return b;
}

/* Lane 0's view, as every lane's batch_qp (all lanes call). */
static __device__ __forceinline__ batch_qp batch_qp_of(const snx_qp_view *v)
{
	batch_qp b;

	b.sq = (const uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)v->sq_buf, 0);
	b.peer = (const snx_qp *)__shfl_sync(FULL_WARP, (unsigned long long)v->peer, 0);
	b.peer_sh = (snx_shared *)__shfl_sync(FULL_WARP, (unsigned long long)v->peer_sh, 0);
	b.peer_map = (const snx_peer_map *)__shfl_sync(FULL_WARP, (unsigned long long)v->peer_map, 0);
	b.peer_epoch = __shfl_sync(FULL_WARP, v->peer_epoch, 0);
	b.cq = v->send_cq;
	b.bb_cnt = __shfl_sync(FULL_WARP, v->bb_cnt, 0);
	b.pd = __shfl_sync(FULL_WARP, v->pd, 0);
	b.qpn = v->qpn;
	return b;
}

/* The BB at position pos of the send ring sq (bb_cnt BBs, 16-byte aligned)
 * as 16 words: four 16-byte loads, one round trip. */
static __device__ __forceinline__ void read_bb(const uint8_t *sq, uint32_t bb_cnt, uint64_t pos,
					       uint32_t b[16])
{
	const uint4 *s = (const uint4 *)(sq + (pos & (bb_cnt - 1)) * GIC_SEND_WQE_BB);

#pragma unroll
	for (int i = 0; i < 4; i++) {
		uint4 v = s[i];

		b[4 * i] = v.x;
		b[4 * i + 1] = v.y;
		b[4 * i + 2] = v.z;
		b[4 * i + 3] = v.w;
	}
}

/* Big-endian 64 bits from words hi, lo as loaded (snx_rd_be64). */
static __device__ __forceinline__ uint64_t be64_words(uint32_t hi, uint32_t lo)
{
	return ((uint64_t)gic_be32toh(hi) << 32) | gic_be32toh(lo);
}

/* The fields every decoded write fills from its first BB b: no segment
 * yet, the signaled bit, the remote address and key, and the BB's last
 * 28 bytes (an inline payload's first bytes). */
static __device__ __forceinline__ void lane_fill_common(const uint32_t b[16], lane_write *lw)
{
	lw->len0 = lw->len1 = lw->lkey0 = lw->lkey1 = 0;
	lw->addr0 = lw->addr1 = 0;
	lw->signaled = (b[2] >> 24) & GIC_CTRL_CQ_UPDATE; /* byte 11: fm_ce_se */
	lw->raddr = be64_words(b[4], b[5]);
	lw->rkey = gic_be32toh(b[6]);
#pragma unroll
	for (int k = 0; k < 7; k++)
		lw->pw[k] = b[9 + k];
}

/* lane_decode() of the common WQE, as one predicate and one branch: a
 * one-BB RDMA write (ds 3 or 4) whose one inline segment fills it, i.e.
 * 2 * GIC_SEG_SIZE + round16(4 + len) == ds * GIC_SEG_SIZE, at index pos
 * in strict mode. 1 for exactly the WQEs of that shape that lane_decode()
 * accepts, with *lw as it fills it; 0 for anything else (a failed strict
 * index included), which then goes to lane_decode(). */
static __device__ __forceinline__ int lane_decode_inline1(const uint32_t b[16], uint32_t nbb,
							  int strict, uint64_t pos, lane_write *lw)
{
	uint32_t w0 = gic_be32toh(b[0]), ds = gic_be32toh(b[1]) & 0xffu;
	uint32_t word = gic_be32toh(b[8]), ilen = word & ~GIC_INLINE_SEG;

	if (!((uint8_t)w0 == GIC_OPCODE_RDMA_WRITE && nbb == 1 && (ds - 3u) <= 1u &&
	      (word & GIC_INLINE_SEG) &&
	      (4u + ilen + (GIC_SEG_SIZE - 1)) / GIC_SEG_SIZE == ds - 2u &&
	      (!strict || (uint16_t)(w0 >> 8) == (uint16_t)pos)))
		return 0;
	lw->nsge = 0;
	lw->inl = 1;
	lw->total_len = ilen;
	lane_fill_common(b, lw);
	return 1;
}

/* Decodes the WQE whose first BB is b (words as loaded) into *lw: 1 when it
 * is an RDMA write of nbb BBs that snx_decode_wqe() accepts, with one
 * inline segment or (one BB) one or two pointer segments, and (strict
 * mode) index pos. Anything else gives 0: the serial core then runs it,
 * with every check and error of its own. */
static __device__ __forceinline__ int lane_decode(const uint32_t b[16], uint32_t nbb, int strict,
						  uint64_t pos, lane_write *lw)
{
	uint32_t w0 = gic_be32toh(b[0]), ds = gic_be32toh(b[1]) & 0xffu, end = ds * GIC_SEG_SIZE;
	uint32_t word = gic_be32toh(b[8]);
	lw->nsge = lw->inl = 0;
	lw->total_len = 0;
	lane_fill_common(b, lw);
	/* snx_decode_ctrl: ds in range (and, being nbb's, within the BBs). */
	if ((uint8_t)w0 != GIC_OPCODE_RDMA_WRITE || ds == 0 || ds > GIC_WQE_MAX_DS ||
	    gic_bb_for_ds(ds) != nbb || end < 2 * GIC_SEG_SIZE)
		return 0;
	if (strict && (uint16_t)(w0 >> 8) != (uint16_t)pos)
		return 0; /* SOFTNIC_VSYND_STRICT_WQE_INDEX, reported by the core */
	if (end == 2 * GIC_SEG_SIZE)
		return 1; /* no data segment: nothing to move */
	/* snx_decode_payload from byte 32: one inline segment that fills the
	 * WQE, or pointer segments (no inline one after them). */
	if (word & GIC_INLINE_SEG) {
		uint32_t len = word & ~GIC_INLINE_SEG;

		if (len > end - 2 * GIC_SEG_SIZE - 4 ||
		    2 * GIC_SEG_SIZE + ((4 + len + GIC_SEG_SIZE - 1) & ~(uint32_t)(GIC_SEG_SIZE - 1)) != end)
			return 0;
		lw->inl = 1;
		lw->total_len = len;
		return 1;
	}
	if (nbb != 1)
		return 0; /* three or more pointer segments: the serial core */
	lw->nsge = 1;
	lw->len0 = word ? word : 0x80000000u; /* a byte count of 0 means 2^31 (PRM) */
	lw->lkey0 = gic_be32toh(b[9]);
	lw->addr0 = be64_words(b[10], b[11]);
	if (end == GIC_SEND_WQE_BB) {
		word = gic_be32toh(b[12]);
		if (word & GIC_INLINE_SEG)
			return 0;
		lw->nsge = 2;
		lw->len1 = word ? word : 0x80000000u;
		lw->lkey1 = gic_be32toh(b[13]);
		lw->addr1 = be64_words(b[14], b[15]);
	}
	lw->total_len = (uint64_t)lw->len0 + lw->len1;
	return lw->total_len <= 0x80000000ull;
}

/* The remote end of a lane write: the key in the peer's MR table
 * (snx_peer_table(), from the view), then, for a peer of another process,
 * its address as mapped here. 1 when both pass. */
static __device__ __forceinline__ int lane_resolve_dst(snx_pass &p, const batch_qp &bq,
						       uint32_t peer_pd, lane_write *lw)
{
	snx_peer_epoch_check(&p, bq.peer_map, bq.peer_epoch);
	if (snx_mr_resolve_in(bq.peer_sh ? bq.peer_sh : p.sh, &p.remote, peer_pd, lw->rkey, lw->raddr,
			      lw->total_len, SOFTNIC_ACCESS_REMOTE_WRITE, &lw->dst))
		return 0;
	return !bq.peer_map || !snx_peer_translate(&p, bq.peer_map, lw->rkey, &lw->dst);
}

/* lane_resolve() of a write with no pointer segment (lane_decode_inline1):
 * the peer and the remote key only. */
static __device__ __forceinline__ int lane_resolve_remote(snx_pass &p, const batch_qp &bq,
							  uint32_t peer_pd, lane_write *lw)
{
	lw->src0 = lw->src1 = lw->dst = NULL;
	if (!bq.peer) /* snx_check_peer (the caller saw the link connected) */
		return 0;
	if (!lw->total_len)
		return 1;
	return lane_resolve_dst(p, bq, peer_pd, lw);
}

/* snx_prepare_write_in() of a decoded lane write (the peer QP's rights
 * known granted): the peer, the local keys, the remote key, through the
 * pass's MR caches. 1 when every check passes. */
static __device__ __forceinline__ int lane_resolve(snx_pass &p, const batch_qp &bq, uint32_t peer_pd,
						   lane_write *lw)
{
	lw->src0 = lw->src1 = lw->dst = NULL;
	if (!bq.peer) /* snx_check_peer (the caller saw the link connected) */
		return 0;
	if (lw->nsge >= 1 &&
	    snx_mr_resolve(&p, &p.local, bq.pd, lw->lkey0, lw->addr0, lw->len0, 0, &lw->src0))
		return 0;
	if (lw->nsge >= 2 &&
	    snx_mr_resolve(&p, &p.local, bq.pd, lw->lkey1, lw->addr1, lw->len1, 0, &lw->src1))
		return 0;
	if (!lw->total_len)
		return 1;
	return lane_resolve_dst(p, bq, peer_pd, lw);
}

/* Stores the len (<= 28) inline bytes of a one-BB WQE, held in pw, at d:
 * 8-byte units where d allows them, else 4-byte units, else bytes. Every
 * index is fixed after unrolling, so pw stays in registers. Each stage
 * returns when it stored everything: the common payload (8 bytes at an
 * aligned address) runs three predicated stores, not the 38 of all
 * stages (about 200 instructions on the claim-to-CQE path). */
static __device__ __forceinline__ void store_inline_bb(uint8_t *d, const uint32_t pw[7], uint32_t len)
{
	uint32_t done = 0;

	if (((uintptr_t)d & 7) == 0) {
#pragma unroll
		for (int k = 0; k < 3; k++)
			if (8 * k + 8 <= len)
				*(uint64_t *)(d + 8 * k) = ((uint64_t)pw[2 * k + 1] << 32) | pw[2 * k];
		done = len & ~7u;
		if (done == len)
			return;
	}
	if (((uintptr_t)d & 3) == 0) {
#pragma unroll
		for (int k = 0; k < 7; k++)
			if (4 * k >= done && 4 * k + 4 <= len)
				*(uint32_t *)(d + 4 * k) = pw[k];
		done = len & ~3u;
		if (done == len)
			return;
	}
#pragma unroll
	for (int i = 0; i < 28; i++)
		if (i >= (int)done && i < (int)len)
			d[i] = (uint8_t)(pw[i / 4] >> (8 * (i % 4)));
}

/* Moves one lane's write (snx_move_write): an inline payload from the
 * registers (one BB) or from the ring, where it may wrap; pointer
 * segments by snx_copy. */
static __device__ __forceinline__ void lane_move(const lane_write *lw, const uint8_t *sq,
						 uint32_t bb_cnt, uint64_t pos, uint32_t nbb)
{
	if (lw->inl && nbb == 1) {
		store_inline_bb(lw->dst, lw->pw, (uint32_t)lw->total_len);
	} else if (lw->inl) {
		uint64_t ring = (uint64_t)bb_cnt * GIC_SEND_WQE_BB;
		uint64_t at = (pos & (bb_cnt - 1)) * GIC_SEND_WQE_BB + 2 * GIC_SEG_SIZE + 4;
		uint64_t first = lw->total_len < ring - at ? lw->total_len : ring - at;

		snx_copy(lw->dst, sq + at, first);
		snx_copy(lw->dst + first, sq, lw->total_len - first);
	} else if (lw->nsge) {
		snx_copy(lw->dst, lw->src0, lw->len0);
		if (lw->nsge > 1)
			snx_copy(lw->dst + lw->len0, lw->src1, lw->len1);
	}
}

/* 1 when lane's [lo, hi) overlaps another active lane's (all lanes call).
 * The common case first: ranges that follow each other in lane order
 * (each ends at or before the next lane's start) are disjoint, which one
 * shuffle and one vote prove; anything else (an empty range, out of
 * order) takes the pairwise test, 32 rounds of shuffles (about 1.1 us on
 * the H200: the batch trace's largest step before this test). */
static __device__ __forceinline__ int lanes_overlap(uint64_t lo, uint64_t hi, int n, int lane)
{
	uint64_t next_lo = __shfl_down_sync(FULL_WARP, lo, 1);
	int clash = 0;

	if (n == 1)
		return 0; /* one lane: nothing to overlap (n is the warp's) */
	if (__all_sync(FULL_WARP, lane >= n - 1 || (lo < hi && hi <= next_lo)))
		return 0;
	for (int j = 0; j < n; j++) {
		uint64_t jl = __shfl_sync(FULL_WARP, lo, j), jh = __shfl_sync(FULL_WARP, hi, j);

		if (j != lane && lane < n && lo < jh && jl < hi)
			clash = 1;
	}
	return __any_sync(FULL_WARP, clash);
}

/* Per architecture, what fits SNX_GPU_MAXNREG without a spill (ptxas -v):
 * sm_90 takes 8 loads in flight per lane and the shared copies below;
 * sm_100 spills with either (124-168 bytes), so it keeps 4 and copies
 * alone (SNX_GPU_COPY_JOBS 0). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define SNX_GPU_COPY_DEPTH 4
#define SNX_GPU_COPY_JOBS 0
#else
#define SNX_GPU_COPY_DEPTH 8
#define SNX_GPU_COPY_JOBS 1
#endif

enum {
	WARP_COPY_MIN = 256, /* bytes from which a payload is moved by the whole warp */
	/* 16-byte loads in flight per lane in warp_copy()'s main loop: 8
	 * (4 KiB per warp and step; 4 before, 2 KiB, gave 9.7 GB/s at 1 MiB
	 * on the H200: a copy bound by the loads' latency). 12 and 16 spill
	 * under SNX_GPU_MAXNREG (ptxas -v: 4 and 112 bytes), 8 does not. */
	WARP_COPY_DEPTH = SNX_GPU_COPY_DEPTH,
	WARP_COPY_STEP = WARP_COPY_DEPTH * 512
};

/* A hint, no access: asks L2 to fetch [p, p + bytes) (16-byte aligned,
 * a multiple of 16) so that warp_copy()'s later loads of it hit L2
 * instead of HBM. cp.async.bulk.prefetch.L2 (sm_90 and later) takes the
 * whole range in one instruction and no register; elsewhere nothing. */
static __device__ __forceinline__ void prefetch_l2(const uint8_t *p, uint32_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes));
#else
	(void)p;
	(void)bytes;
#endif
}

enum { WARP_COPY_AHEAD = 4 }; /* steps warp_copy() prefetches ahead of its loads */

/* The whole warp copies len bytes: 16-byte units, WARP_COPY_DEPTH in
 * flight per lane (all loads of a step issued before any store), when
 * both ends are 16-byte aligned; bytes otherwise and for the tail. All
 * lanes call it with the same arguments. Plain loads (not ld.global.nc:
 * a source may change between WQEs while the kernel runs, and the
 * non-coherent path could serve stale lines). */
static __device__ __forceinline__ void warp_copy_n(uint8_t *d, const uint8_t *s, uint64_t len,
						   int lane, const int depth)
{
	uint64_t i = 0;
	const uint64_t step = (uint64_t)depth * 512;

	if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
		/* Lane 0 keeps L2 WARP_COPY_AHEAD steps ahead of the loads
		 * (the first steps' lines are asked for before the loop): the
		 * loads of a step then wait for L2, not for HBM. */
		uint64_t steps = len / step;

		if (steps > WARP_COPY_AHEAD + 1)
			steps = WARP_COPY_AHEAD + 1;
		if (lane == 0 && steps > 1) /* steps 1 .. steps - 1 */
			prefetch_l2(s + step, (uint32_t)((steps - 1) * step));
		for (; i + step <= len; i += step) {
			uint4 v[WARP_COPY_DEPTH];

			if (lane == 0 && i + (WARP_COPY_AHEAD + 1) * (uint64_t)step <= len)
				prefetch_l2(s + i + WARP_COPY_AHEAD * step, (uint32_t)step);

#pragma unroll
			for (int k = 0; k < depth; k++)
				v[k] = *(const uint4 *)(s + i + k * 512 + lane * 16);
#pragma unroll
			for (int k = 0; k < depth; k++)
				*(uint4 *)(d + i + k * 512 + lane * 16) = v[k];
		}
		for (; i + 512 <= len; i += 512)
			*(uint4 *)(d + i + lane * 16) = *(const uint4 *)(s + i + lane * 16);
	}
	for (uint64_t j = i + (uint64_t)lane; j < len; j += 32)
		d[j] = s[j];
}

static __device__ void warp_copy(uint8_t *d, const uint8_t *s, uint64_t len, int lane)
{
	warp_copy_n(d, s, len, lane, WARP_COPY_DEPTH);
}

/* ------------------------------------------------------------------ */
/* Large copies shared out to idle warps (issue 17's bandwidth axis).
 *
 * One warp moves about 4 KiB per load round trip (warp_copy), far below
 * what the GPU's memory moves. So when a batch's large pointer writes add
 * up to JOB_MIN bytes or more, the warp that owns the QP publishes them as
 * one job in its slot of a table in global memory (snx_gpu_jobs, one slot
 * per warp below JOB_SLOTS: a 32-bit pending word, one register in the
 * scan loop, where a 64-bit one made ptxas spill), cut into chunks of 32-256 KiB, and sets its
 * bit in `pending`. Any warp whose scan found nothing to do (any block)
 * sees the bit in the one load of `pending` its pass issues anyway (no
 * atomic while no bit is set), takes chunks with a CAS on the slot's
 * claim word and copies them; the owner takes chunks too, then waits, with
 * a deadline, until every helper's chunk is counted done before the batch
 * writes its CQEs. Data therefore lands before the CQE, as before; WQE
 * order is unchanged (the batch's destinations never overlap, and its
 * CQEs follow all of its data).
 *
 * Reuse. The claim word carries the job's sequence number beside its
 * chunk count and next chunk (JOB_NEXT_BITS each), so a helper that read
 * an older job's word fails its CAS; the owner publishes the next job only
 * after every chunk of the last one is done, so no helper holds a chunk
 * then. A job past its deadline (a helper that never finished: the batch
 * then fails with SOFTNIC_VSYND_COPY_TIMEOUT) leaves its slot dead for the
 * table's life, since a late helper may still write: that warp then copies
 * alone. */

enum {
	JOB_SLOTS = 32,             /* warps 0..31 share out chunks (a bit each in pending) */
	JOB_SEGS = 64,              /* a batch's pointer segments: 32 lanes, 2 each */
	JOB_MIN = 64 << 10,         /* a batch's large-copy bytes from which it is shared */
	JOB_SHIFT_MIN = 15,         /* chunks of 32 KiB .. */
	JOB_SHIFT_MAX = 18,         /* .. 256 KiB, about 32 per job */
	JOB_HELP_BYTES = 256 << 10, /* a helper's bytes per visit before it scans again */
	JOB_CAS_TRIES = 64,         /* a helper's failed claims per visit, at most */
	JOB_NEXT_BITS = 20,         /* claim word: next and nchunks fields */
	JOB_HELP_DEPTH = WARP_COPY_DEPTH /* a helper's warp_copy_n() depth */
};
#define JOB_DEADLINE_NS 1000000000ull /* an owner's wait for its helpers, at most */
#define JOB_FIELD ((1ull << JOB_NEXT_BITS) - 1)

/* One pointer segment of a job: chunks first .. first + ceil(len / chunk) - 1. */
typedef struct gpu_job_seg {
	uint8_t *dst;
	const uint8_t *src;
	uint64_t len;     /* 0: no segment */
	uint32_t first, pad;
} gpu_job_seg;

typedef struct gpu_job {
	/* seq << 2 * JOB_NEXT_BITS | nchunks << JOB_NEXT_BITS | next: the
	 * chunks of job seq handed out so far (next may pass nchunks). */
	uint64_t claim;
	uint32_t done;    /* chunks helpers finished, over the slot's life */
	uint32_t shift;   /* log2 of the chunk size of the job in claim */
	uint32_t dead;    /* 1: a job passed its deadline; never reused */
	uint8_t pad[108];
	gpu_job_seg seg[JOB_SEGS]; /* entry 2l, 2l + 1: the owner's lane l */
} gpu_job;

typedef struct snx_gpu_jobs {
	uint32_t pending;           /* bit w: slot w may have chunks to hand out */
	uint32_t pad0;
	uint8_t pad[120];
	gpu_job slot[JOB_SLOTS];
} snx_gpu_jobs;

/* What the owner keeps of its slot (shared memory, one per warp). */
typedef struct job_own {
	snx_gpu_jobs *jobs;
	gpu_job *job;     /* NULL: this warp shares out nothing (dead is then 1) */
	uint32_t bit;     /* its bit in pending: the warp's index */
	uint32_t seq;     /* the slot's last job */
	uint32_t done;    /* the slot's done once that job was complete */
	uint32_t dead;    /* the slot's dead */
} job_own;

/* A lane's two entries of a job (entry 2 * lane and 2 * lane + 1). */
typedef struct job_pair {
	uint8_t *d0, *d1;
	const uint8_t *s0, *s1;
	uint64_t l0, l1;
	uint32_t f0, f1;
} job_pair;

/* Sets (on) or clears the owner's bit in pending; nothing waits for it. */
static __device__ __forceinline__ void job_pending_set(snx_gpu_jobs *J, uint32_t bit, int on)
{
	if (on)
		gic_red_or_relaxed_gpu_u32(&J->pending, bit);
	else
		gic_red_and_relaxed_gpu_u32(&J->pending, ~bit);
}

/* Each warp's job_own (lane 0 writes it, every lane reads it): at file
 * scope, so that the batch finds its own (job_mine) without one more
 * parameter through the scan's inlined calls. */
static __shared__ job_own job_owns[32];

static __device__ __forceinline__ job_own *job_mine(void)
{
	return &job_owns[threadIdx.x >> 5];
}

/* Lane 0 at the kernel's start: its slot as the table holds it (an
 * on-demand run starts a new kernel over the same table). */
static __device__ __forceinline__ void job_own_init(job_own *jo, snx_gpu_jobs *J, int warp)
{
	gpu_job *j = J && warp < JOB_SLOTS ? &J->slot[warp] : NULL;

	jo->jobs = J;
	jo->job = j;
	jo->bit = (uint32_t)warp;
	jo->seq = j ? (uint32_t)(j->claim >> (2 * JOB_NEXT_BITS)) : 0;
	jo->done = j ? j->done : 0;
	jo->dead = j ? j->dead : 1;
}

/* Lane l's entries 2l and 2l + 1 of job j, as job_publish() wrote them. */
static __device__ __forceinline__ void job_pair_load(const gpu_job *j, int lane, job_pair *e)
{
	const gpu_job_seg *a = &j->seg[2 * lane], *b = a + 1;

	e->d0 = a->dst;
	e->s0 = a->src;
	e->l0 = a->len;
	e->f0 = a->first;
	e->d1 = b->dst;
	e->s1 = b->src;
	e->l1 = b->len;
	e->f1 = b->first;
}

/* Copies chunk k of job j (chunks of 1 << shift bytes), its entries read
 * from the slot (so that no entry stays in a register across the copy:
 * the owner's batch has none to spare): the entry holding k is the last
 * nonempty one whose first chunk is at or before k (firsts never
 * decrease). All lanes call, with the same k, below the job's chunk
 * count, after the job's entries are visible to them. */
static __device__ __forceinline__ void job_copy_chunk(const gpu_job *j, uint32_t k, uint32_t shift,
						      int lane, const int depth)
{
	job_pair e;
	unsigned b0, b1;
	int h0, h1, odd, at;
	uint8_t *d;
	const uint8_t *s;
	uint64_t len, off, n;
	uint32_t first;

	job_pair_load(j, lane, &e);
	b0 = __ballot_sync(FULL_WARP, e.l0 && e.f0 <= k);
	b1 = __ballot_sync(FULL_WARP, e.l1 && e.f1 <= k);
	h0 = b0 ? 31 - __clz((int)b0) : -1;
	h1 = b1 ? 31 - __clz((int)b1) : -1;
	odd = h1 >= h0; /* entry 2 * h1 + 1 follows entry 2 * h0 */
	at = odd ? h1 : h0;
	d = (uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)(odd ? e.d1 : e.d0), at);
	s = (const uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)(odd ? e.s1 : e.s0), at);
	len = __shfl_sync(FULL_WARP, odd ? e.l1 : e.l0, at);
	first = __shfl_sync(FULL_WARP, odd ? e.f1 : e.f0, at);
	off = (uint64_t)(k - first) << shift;
	n = len - off < (1ull << shift) ? len - off : 1ull << shift;
	warp_copy_n(d + off, s + off, n, lane, depth);
}

/* The sum over the warp of v (all lanes call). */
static __device__ __forceinline__ uint64_t warp_sum_u64(uint64_t v)
{
#pragma unroll
	for (int m = 16; m; m >>= 1)
		v += __shfl_xor_sync(FULL_WARP, v, m);
	return v;
}

/* Writes this lane's segments w (lengths 0: none) into the slot with
 * their first chunks (1 << shift bytes each, numbered over the warp in
 * lane order) and publishes the job: the claim word, then the pending
 * bit. Returns the job's chunk count. All lanes call. */
static __device__ __forceinline__ uint32_t job_publish(job_own *jo, const job_pair *w,
						       uint32_t shift, int lane)
{
	gpu_job *j = jo->job;
	uint64_t c0 = (w->l0 + (1ull << shift) - 1) >> shift;
	uint64_t c1 = (w->l1 + (1ull << shift) - 1) >> shift;
	uint32_t c = (uint32_t)(c0 + c1), incl = c, n, f0;

#pragma unroll
	for (int m = 1; m < 32; m <<= 1) { /* inclusive scan over the lanes */
		uint32_t v = __shfl_up_sync(FULL_WARP, incl, m);

		if (lane >= m)
			incl += v;
	}
	f0 = incl - c;
	n = __shfl_sync(FULL_WARP, incl, 31);
	j->seg[2 * lane] = (gpu_job_seg){ w->d0, w->s0, w->l0, f0, 0 };
	j->seg[2 * lane + 1] = (gpu_job_seg){ w->d1, w->s1, w->l1, f0 + (uint32_t)c0, 0 };
	/* Orders every lane's entry stores before lane 0's release below
	 * (and before every lane's reads of the entries, job_copy_chunk). */
	__syncwarp(FULL_WARP);
	if (lane == 0) {
		jo->seq = (jo->seq + 1) & 0xffffffu;
		j->shift = shift;
		/* Release: the entries and shift before the claim word that
		 * helpers' acquiring CAS reads (the PTX release pattern). */
		gic_fence_release_gpu();
		gic_st_relaxed_sys_u64(&j->claim,
				       (uint64_t)jo->seq << (2 * JOB_NEXT_BITS) |
					       (uint64_t)n << JOB_NEXT_BITS);
		job_pending_set(jo->jobs, 1u << jo->bit, 1);
	}
	return n;
}

/* Lane 0: waits until the helpers' chunks of the slot's job (helped of
 * them) are done, at most JOB_DEADLINE_NS. 1: done (every helper's data
 * is then ordered before this thread's later stores, the CQE's
 * included); 0: the deadline passed, and the slot is dead. */
static __device__ __forceinline__ int job_wait(job_own *jo, uint32_t helped)
{
	gpu_job *j = jo->job;
	uint32_t want = jo->done + helped;
	uint64_t deadline = 0;

	for (;;) {
		/* Acquire: synchronizes with each helper's release of its
		 * chunk (job_help), so its data precedes the batch's CQE. */
		uint32_t d = gic_ld_acquire_gpu_u32(&j->done);
		uint64_t now;

		if (d == want) {
			jo->done = want;
			return 1;
		}
		now = gic_now_ns();
		if (!deadline) {
			deadline = now + JOB_DEADLINE_NS;
		} else if (now > deadline) {
			jo->dead = 1;
			j->dead = 1; /* a later kernel over this table sees it too */
			return 0;
		}
	}
}

/* The owner's side of a batch's large copies (w: this lane's segments,
 * lengths 0 when it has none; total: their bytes over the warp, JOB_MIN or
 * more): publishes them as a job, copies chunks until none is left,
 * withdraws the pending bit, then waits for the helpers' chunks
 * (job_wait). 1 when every byte is written; 0 past the deadline. All
 * lanes call. (w by value: an address taken here would put the caller's
 * lane_write into local memory.) */
static __device__ __forceinline__ int job_run(job_own *jo, job_pair w, uint64_t total, int lane)
{
	gpu_job *j = jo->job;
	uint32_t shift = JOB_SHIFT_MIN, n, own = 0;
	int ok = 1;

	while (shift < JOB_SHIFT_MAX && (total >> shift) > 32)
		shift++;
	n = job_publish(jo, &w, shift, lane);
	for (;;) {
		unsigned long long old = 0;
		uint32_t k;

		/* The owner's claims need no CAS: it published the job, whose
		 * sequence cannot change under it (next may pass n once). */
		if (lane == 0)
			old = gic_atomic_add_relaxed_gpu_u64(&j->claim, 1);
		k = __shfl_sync(FULL_WARP, (uint32_t)(old & JOB_FIELD), 0);
		if (k >= n)
			break;
		job_copy_chunk(j, k, shift, lane, WARP_COPY_DEPTH);
		own++;
	}
	if (lane == 0) {
		job_pending_set(jo->jobs, 1u << jo->bit, 0); /* nothing left to hand out */
		ok = job_wait(jo, n - own);
	}
	return __shfl_sync(FULL_WARP, ok, 0);
}

/* Lane 0: claims the next chunk of job j into *k with an acquiring CAS
 * (gic_atomic_cas_acquire_gpu_u64) of the claim word it last read; 0 when the job has no
 * chunk left (or another job replaced it), or after JOB_CAS_TRIES lost
 * races. */
static __device__ __forceinline__ int job_claim(gpu_job *j, uint32_t *k)
{
	uint64_t c = gic_ld_relaxed_sys_u64(&j->claim);

	for (int t = 0; t < JOB_CAS_TRIES; t++) {
		uint64_t old;

		if ((c & JOB_FIELD) >= (c >> JOB_NEXT_BITS & JOB_FIELD))
			return 0;
		/* Acquire: a successful claim synchronizes with the owner's
		 * release of the job (job_publish), so the job's fields read
		 * after it are that job's; it also empties this SM's L1. */
		old = gic_atomic_cas_acquire_gpu_u64(&j->claim, c, c + 1);
		if (old == c) {
			*k = (uint32_t)(c & JOB_FIELD);
			return 1;
		}
		c = old;
	}
	return 0;
}

/* An idle warp's visit to the job table (pend: lane 0's load of pending,
 * nonzero): takes chunks of one slot's job (the first bit set at or after
 * the warp's own index, so that helpers spread over several owners) and
 * copies them until none is left or about JOB_HELP_BYTES are copied (then
 * the warp scans its own QPs again); each chunk's data is released before
 * it is counted done. Returns the chunks copied.
 * All lanes call. */
static __device__ __forceinline__ int job_help(snx_gpu_jobs *J, int warp, int lane)
{
	/* pending again: the scan kept only whether it was nonzero (a
	 * register held across the scan made ptxas spill). */
	uint32_t pend = __shfl_sync(FULL_WARP, lane ? 0 : gic_ld_relaxed_sys_u32(&J->pending), 0);
	unsigned r = (unsigned)warp & (JOB_SLOTS - 1);
	uint32_t rot = r ? (pend >> r) | (pend << (32 - r)) : pend;
	int slot = (__ffs((int)rot) - 1 + (int)r) & (JOB_SLOTS - 1);
	gpu_job *j = &J->slot[slot];
	uint64_t bytes = 0;
	int got = 0;

	if (!pend)
		return 0;

	while (bytes < JOB_HELP_BYTES) {
		uint32_t k = 0, shift;
		int ok = 0;

		if (lane == 0)
			ok = job_claim(j, &k);
		/* Orders the other lanes' reads of the job after lane 0's
		 * acquiring claim (the job's entries are that job's). */
		__syncwarp(FULL_WARP);
		if (!__shfl_sync(FULL_WARP, ok, 0))
			break;
		k = __shfl_sync(FULL_WARP, k, 0);
		shift = j->shift;
		job_copy_chunk(j, k, shift, lane, JOB_HELP_DEPTH);
		/* Orders every lane's chunk stores before lane 0's release. */
		__syncwarp(FULL_WARP);
		if (lane == 0) {
			/* Release at GPU scope: the chunk's data before its
			 * count, which the owner's acquire (job_wait, GPU scope:
			 * helper and owner are threads of one GPU) reads. The
			 * owner's CQE fence at the softnic's scope then orders
			 * them for any reader of the CQE (causality order is
			 * transitive), so a system-scope fence here would add
			 * only its cost. */
			gic_fence_release_gpu();
			gic_red_add_relaxed_gpu_u32(&j->done, 1);
		}
		bytes += 1ull << shift;
		got++;
	}
	return got;
}

/* Lane's big write (big) as job entries: dst and src0 for len0 bytes,
 * then, with a second segment, dst + len0 and src1 for len1. */
static __device__ __forceinline__ job_pair job_pair_of(const lane_write *lw, int big)
{
	job_pair w;

	w.d0 = big ? lw->dst : NULL;
	w.s0 = big ? lw->src0 : NULL;
	w.l0 = big ? lw->len0 : 0;
	w.d1 = big ? lw->dst + lw->len0 : NULL;
	w.s1 = big ? lw->src1 : NULL;
	w.l1 = big && lw->nsge > 1 ? lw->len1 : 0;
	w.f0 = w.f1 = 0;
	return w;
}

/* Moves the batch's payloads: each lane its own small one; the large
 * pointer writes shared out as one job when they add up to JOB_MIN bytes
 * and the warp has a live slot (job_run), else one after another, each
 * by the whole warp. 1 when every byte is written; 0 when a shared copy
 * passed its deadline (job_wait). All lanes call. */
static __device__ __forceinline__ int warp_move(job_own *jo, const lane_write *lw, const uint8_t *sq,
						uint32_t bb_cnt, uint64_t cons, uint32_t nbb,
						int n, int lane)
{
	int big = lane < n && !lw->inl && lw->total_len >= WARP_COPY_MIN;
	unsigned bigmask = __ballot_sync(FULL_WARP, big);

	if (lane < n && !big)
		lane_move(lw, sq, bb_cnt, cons + (uint64_t)lane * nbb, nbb);
	if (SNX_GPU_COPY_JOBS && bigmask && !jo->dead) {
		uint64_t total = warp_sum_u64(big ? lw->total_len : 0);

		if (total >= JOB_MIN)
			return job_run(jo, job_pair_of(lw, big), total, lane);
	}
	while (bigmask) {
		int l = __ffs(bigmask) - 1;
		uint32_t nsge = __shfl_sync(FULL_WARP, lw->nsge, l);
		uint32_t len0 = __shfl_sync(FULL_WARP, lw->len0, l);
		uint32_t len1 = __shfl_sync(FULL_WARP, lw->len1, l);
		uint8_t *d = (uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)lw->dst, l);
		const uint8_t *s0 =
			(const uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)lw->src0, l);
		const uint8_t *s1 =
			(const uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)lw->src1, l);

		bigmask &= bigmask - 1;
		warp_copy(d, s0, len0, lane);
		if (nsge > 1)
			warp_copy(d + len0, s1, len1, lane);
	}
	return 1;
}

/* ------------------------------------------------------------------ */
/* The send CQ a warp keeps locked across passes ("parked").
 *
 * Most CQs have one writer: the one QP that completes there, served by one
 * warp. Taking and letting go of the lock for each batch cost that warp the
 * lock's CAS and then the loads of the counters under it (the CAS's acquire
 * empties L1): three dependent trips, about 1 us. Instead lane 0 keeps the
 * lock of the send CQ its last batch wrote, with that CQ's counters and
 * ring fields in shared memory (cq_park, one per warp); the next batch on
 * that CQ claims its slots and writes its CQEs from them: no atomic, no
 * load of the CQ record.
 *
 * Exclusivity is the lock's own: its word stays 1 from the CAS until
 * park_release()'s release store, and every writer of a CQ's counters and
 * slots (snx_cq_claim, snx_cq_write, snx_cq_unclaim, a batch) holds the
 * lock; the host writes none of them after the CQ's creation. So while the
 * CQ is parked its state is the copy in shared memory, and the record's
 * pi, claimed and ci_seen are stale: park_release() writes them back
 * before the release.
 *
 * Letting go. Any other writer that fails to take the lock (a QP on the
 * CQ served by another warp, including one created meanwhile; a peer's
 * WRITE_IMM or receive completion; the serial core; another process's
 * engine) stores snx_cq.want after each attempt (snx_lock_want). Lane 0
 * loads want beside its scan's loads (no trip of its own) and lets go at
 * the scan that sees it: a waiter waits for the rest of the holder's pass
 * and one scan. A batch that found want set when it took the lock lets go
 * at once. The warp also lets go before anything that may wait for a lock
 * (the serial core, the pass end's orphan report and receive flush, a
 * batch on another CQ), at every table change, and when the kernel ends.
 * So a warp waiting for a lock holds none parked, and a parked holder is
 * never waiting for one: no cycle of waits can form, and every wait ends
 * within about one pass of the holder (or at the lock's time limit).
 */
typedef struct cq_park {
	snx_cq *cq;        /* NULL: none parked */
	gic_cqe64 *cqes;
	uint64_t pi, claimed, ci_seen;
	uint32_t cqe_cnt, mode;
} cq_park;

/* The slots a batch claimed: where its CQEs go. */
typedef struct cq_slots {
	gic_cqe64 *cqes;
	uint64_t pi;
	uint32_t cqe_cnt, mode;
	uint32_t want;     /* snx_cq.want was set when the lock was taken */
} cq_slots;

/* Lane 0: lets the parked CQ go (if any): its counters back into the
 * record, want cleared, then the lock's release. */
static __device__ __forceinline__ void park_release(cq_park *pk)
{
	snx_cq *cq = pk->cq;

	if (!cq)
		return;
	pk->cq = NULL;
	cq->pi = pk->pi;
	cq->claimed = pk->claimed;
	cq->ci_seen = pk->ci_seen;
	gic_st_relaxed_sys_u32(&cq->want, 0); /* a waiter that still waits sets it again */
	/* st.release.gpu: orders the counters, want and every CQE this warp
	 * wrote under the lock (the tails included) before the lock's 0. */
	snx_cq_unlock(cq);
}

/* Lane 0 at the scan's start: snx_cq.want of the parked CQ (0: none), a
 * load issued beside the scan's, used after them. */
static __device__ __forceinline__ uint32_t park_want(const cq_park *pk)
{
	snx_cq *cq = pk->cq;

	return cq ? gic_ld_relaxed_sys_u32(&cq->want) : 0;
}

/* Lane 0: takes cq's lock for a batch, unless this warp has it parked:
 * lets another parked CQ go first, then the CAS, then the counters, ring
 * fields and want, loaded beside each other (one trip). 0: the lock is
 * abandoned (nothing held; the serial core reports it). */
static __device__ __forceinline__ int park_take(cq_park *pk, snx_cq *cq, uint32_t *want)
{
	gic_cqe64 *cqes;
	uint64_t pi, claimed, ci_seen;
	uint32_t cqe_cnt, mode;

	*want = 0;
	if (pk->cq == cq)
		return 1;
	park_release(pk);
	if (!snx_cq_lock(cq))
		return 0;
	cqes = cq->cqes;
	pi = cq->pi;
	claimed = cq->claimed;
	ci_seen = cq->ci_seen;
	cqe_cnt = cq->cqe_cnt;
	mode = cq->mode;
	*want = gic_ld_relaxed_sys_u32(&cq->want);
	pk->cq = cq;
	pk->cqes = cqes;
	pk->pi = pi;
	pk->claimed = claimed;
	pk->ci_seen = ci_seen;
	pk->cqe_cnt = cqe_cnt;
	pk->mode = mode;
	return 1;
}

/* Lane 0: claims n CQE slots of cq (snx_cq_claim_locked on the parked
 * copy) into *s; the CQ stays parked. 0 when the CQ lacks them or its
 * lock is abandoned: nothing is then held, and the serial core runs the
 * WQEs (and stalls, or reports the lost CQ, as it does). */
static __device__ __forceinline__ int park_claim(snx_pass &p, cq_park *pk, snx_cq *cq, uint32_t n,
						 cq_slots *s)
{
	if (!park_take(pk, cq, &s->want))
		return 0;
	if (!(pk->mode & SNX_CQ_OI) && pk->claimed + n - pk->ci_seen > pk->cqe_cnt) {
		uint32_t ci = gic_be32toh(snx_ld_acquire_u32_scope(p.gpu_scope, cq->dbrec)) & 0xffffffu;

		pk->ci_seen += (ci - (uint32_t)pk->ci_seen) & 0xffffffu;
		if (pk->claimed + n - pk->ci_seen > pk->cqe_cnt) {
			park_release(pk);
			return 0;
		}
	}
	pk->claimed += n;
	s->cqes = pk->cqes;
	s->pi = pk->pi;
	s->cqe_cnt = pk->cqe_cnt;
	s->mode = pk->mode;
	return 1;
}

/* Lane 0: one CQE's tail, after a fence at the softnic's scope: the
 * fence orders every data write of the batch and the CQE's body before
 * the tail (the PTX model's release pattern: a release fence followed by
 * a strong write). Nothing after the tail relies on an acquire here: the
 * next pass's reads are ordered by its scan's doorbell acquire, and the
 * parked CQ's release (park_release) is an st.release of its own. */
static __device__ __forceinline__ void cqe_tail_fenced(uint32_t gpu_scope, uint64_t *at, uint64_t tail)
{
	if (gpu_scope)
		gic_fence_release_gpu(); /* orders the batch's writes (data, CQE body) before the tail */
	else
		gic_fence_acq_rel_sys(); /* the same, for host consumers */
	gic_st_relaxed_sys_u64(at, tail);
}

/* Lane 0: the successful CQE of the RDMA write at index counter (len
 * bytes) of QP qpn into slot pi of the claimed slots s, its tail after
 * the fence that orders the write's data and the CQE's body before it. */
static __device__ __forceinline__ void cqe_write_ok(gpu_consts kc, const cq_slots *s, uint64_t pi,
						    uint32_t qpn, uint16_t counter, uint32_t len)
{
	snx_cqe_fields f;
	uint64_t tail, *at;

	memset(&f, 0, sizeof(f));
	f.cqe_opcode = GIC_CQE_REQ;
	f.wqe_opcode = GIC_OPCODE_RDMA_WRITE;
	f.wqe_counter = counter;
	f.qpn = qpn;
	f.byte_cnt = len;
	at = snx_cqe_fill_slot(s->cqes, s->cqe_cnt, s->mode, pi, &f, &tail);
	cqe_tail_fenced(kc.gpu_scope, at, tail);
}

/* Lane 0: the batch's CQEs (sigmask: the signaled lanes), into the slots
 * park_claim() gave; the CQ stays parked unless a writer was waiting when
 * the batch took its lock. */
static __device__ __forceinline__ void batch_cqes(snx_pass &p, gpu_consts kc, gpu_trace *tr,
						  cq_park *pk, const cq_slots *s, uint32_t qpn,
						  const lane_write *lw, unsigned sigmask,
						  uint64_t cons, uint32_t nbb, int lane)
{
	uint64_t pi = s->pi;

	/* Only the signaled lanes (sigmask is the warp's, so every lane runs
	 * the same rounds of the shuffle): a round per lane cost about 1.1 us
	 * per batch of 32 on the H200. */
	for (unsigned m = sigmask; m; m &= m - 1) {
		int l = __ffs(m) - 1;
		uint32_t len = __shfl_sync(FULL_WARP, (uint32_t)lw->total_len, l);

		if (lane)
			continue;
		cqe_write_ok(kc, s, pi++, qpn, (uint16_t)(cons + (uint64_t)l * nbb), len);
		if (l == __ffs(sigmask) - 1) /* the batch's first CQE */
			trace_now(kc, tr, SOFTNIC_TRACE_CQE_WRITTEN, cons + (uint64_t)l * nbb, 1);
	}
	if (lane == 0 && sigmask) {
		pk->pi = pi; /* snx_cq_write_locked's count, in the parked copy */
		p.st.cqes_written += __popc(sigmask);
		if (s->want)
			park_release(pk);
	}
}

/* Lane 0: a batch whose shared copy passed its deadline (warp_move 0).
 * Gives back the CQE slots it claimed (the CQ stays parked) and fails the
 * QP at the batch's first WQE as a doorbell error does (snx_doorbell_error):
 * the serial core, which runs next, completes that WQE with
 * SOFTNIC_VSYND_COPY_TIMEOUT and flushes the later ones. Their data may be
 * written in part, as a failed or flushed WQE's may be on a NIC. */
static __device__ __forceinline__ void batch_fail_copy(snx_pass &p, cq_park *pk, snx_qp *qp,
						       uint64_t cons, unsigned sigmask)
{
	if (sigmask)
		pk->claimed -= (uint32_t)__popc(sigmask); /* snx_cq_unclaim, on the parked copy */
	if (!qp->in_error) {
		qp->pending_synd = GIC_SYND_LOCAL_QP_OP_ERR;
		qp->pending_vs = SOFTNIC_VSYND_COPY_TIMEOUT;
	}
	snx_qp_set_error(qp, (uint16_t)cons, GIC_OPCODE_RDMA_WRITE, GIC_SYND_LOCAL_QP_OP_ERR,
			 SOFTNIC_VSYND_COPY_TIMEOUT, &p.st);
}

/* lane_resolve_remote() of a wide batch's later WQE whose key is the one
 * the lane's first WQE resolved (wide_batch checks that): the pass's
 * caches hold that key's region and, for a peer of another process, its
 * translation (the epoch cannot have moved within the batch), so only the
 * bounds and access checks remain, as snx_mr_resolve_in() makes them on a
 * hit. 1 when they pass, with lw->dst set. */
static __device__ __forceinline__ int lane_resolve_cached(const snx_pass &p, const batch_qp &bq,
							  lane_write *lw)
{
	const snx_mr_hit *c = &p.remote;
	uint64_t a = lw->raddr, len = lw->total_len;

	lw->dst = NULL;
	if (a < c->base || len > c->len || a - c->base > c->len - len ||
	    !(c->access & SOFTNIC_ACCESS_REMOTE_WRITE))
		return 0;
	lw->dst = (uint8_t *)(uintptr_t)a + (bq.peer_map ? p.xdelta : 0);
	return 1;
}

/* The widest batch (wide_batch: WQEs per lane) each architecture's engine
 * kernel takes, the kernel's template argument clamped to it: on sm_90 two
 * per lane spill 80 bytes at 224 registers (ptxas -v), in the scan's state
 * around a pass, not in the batch; three spill 656-948 there, in the
 * decode, so their kernel takes 255 registers (SNX_GPU_MAXNREG: 40 bytes of
 * spill, with two per lane for a pass's last 64-95 WQEs); on sm_100 two
 * spill 456, so it keeps one. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define SNX_GPU_BATCH_WIDE_MAX 1
#else
#define SNX_GPU_BATCH_WIDE_MAX 3
#endif
/* WQEs per lane a kernel instantiated with W runs: W, clamped as above. */
#define SNX_GPU_WIDE(W) ((W) < SNX_GPU_BATCH_WIDE_MAX ? (W) : SNX_GPU_BATCH_WIDE_MAX)
enum {
	/* The inline payloads a wide batch takes: up to 12 bytes (ds 3), so
	 * that three words of each are live from the decode to the stores
	 * (seven spill the scan's state on sm_90); larger ones take the
	 * 32-WQE batch. */
	WIDE_MAX_INLINE = 12
};

/* 1 when lane's [lo, hi) overlaps none of the ranges [olo, ohi) of
 * another set (one per lane, non-empty, disjoint and in lane order): a
 * binary search for the last of them that starts at or before lo (six
 * shuffles), then that one's end and the next one's start. All lanes call. */
static __device__ __forceinline__ int clear_of_set(uint64_t lo, uint64_t hi, uint64_t olo,
						   uint64_t ohi)
{
	int i = -1;
	uint64_t before_hi, after_lo;

#pragma unroll
	for (int step = 32; step; step >>= 1) {
		int c = i + step;
		uint64_t v = __shfl_sync(FULL_WARP, olo, c & 31);

		if (c <= 31 && v <= lo)
			i = c;
	}
	before_hi = __shfl_sync(FULL_WARP, ohi, i & 31);
	after_lo = __shfl_sync(FULL_WARP, olo, (i + 1) & 31);
	return (i < 0 || before_hi <= lo) && (i >= 31 || hi <= after_lo);
}

/* 1 on every lane when the ranges [lo[j], hi[j]) of a wide batch's WQEs
 * (WQE 32 * j + lane at lane's j) are pairwise disjoint, proven for the
 * common layouts: each set non-empty and in lane order (each range ends at
 * or before the next lane's start: one shuffle and a vote, as in
 * lanes_overlap()), and each later set clear of every earlier one
 * (clear_of_set: one message slot per thread and round puts the rounds'
 * sets side by side, not after each other). 0 otherwise: the 32-WQE batch
 * then decides, with its pairwise test. All lanes call. */
template <int W>
static __device__ __forceinline__ int wide_disjoint(const uint64_t lo[W], const uint64_t hi[W],
						    int lane)
{
	int ok = 1;

#pragma unroll
	for (int j = 0; j < W; j++) {
		uint64_t next = __shfl_down_sync(FULL_WARP, lo[j], 1);

		ok &= lo[j] < hi[j] && (lane == 31 || hi[j] <= next);
	}
	if (!__all_sync(FULL_WARP, ok))
		return 0;
#pragma unroll
	for (int j = 1; j < W; j++)
#pragma unroll
		for (int i = 0; i < j; i++)
			ok &= clear_of_set(lo[j], hi[j], lo[i], hi[i]);
	return __all_sync(FULL_WARP, ok);
}

/* The common case of a drained QP as one batch of 32 * W WQEs (the
 * kernel's template argument; softnic_gpu_attr.batch_wqes), W per lane
 * (WQE cons + 32 * j + lane is lane's j): one-BB
 * inline RDMA writes (lane_decode_inline1) whose destinations follow each
 * other, under one CQ claim and one proof of disjointness, their chains
 * independent (the compiler may interleave them: ncu counts 27% fewer
 * instructions per WQE on the H200, 17% fewer cycles), so that the
 * batch's fixed cost is shared by twice the WQEs or more. b holds each lane's BB at
 * cons + lane (set 0); the caller checked left >= 32 * W, one BB per
 * WQE, the peer's right to be written and a 16-byte aligned ring. Returns
 * 32 * W, having loaded the next batch's BBs into b as warp_batch()
 * does, or 0 with no effect (a WQE of another shape, a key that fails,
 * ranges out of order, no CQ slots): warp_batch() then takes the first 32
 * as always. All lanes call. */
template <int W>
static __device__ __forceinline__ int wide_batch(snx_pass &p, gpu_consts kc, gpu_trace *tr,
						 cq_park *pk, snx_qp *qp, const batch_qp &bq,
						 uint32_t peer_pd, uint32_t b[16], uint64_t cons,
						 uint64_t left, int lane)
{
	uint32_t more[W > 1 ? W - 1 : 1][16];
	lane_write lw[W];
	uint64_t lo[W], hi[W];
	unsigned sig[W];
	uint32_t nsig = 0, got = 1;
	int ok = 1;
	cq_slots slots = { NULL, 0, 0, 0, 0 };

#pragma unroll
	for (int j = 1; j < W; j++)
		read_bb(bq.sq, bq.bb_cnt, cons + 32 * j + lane, more[j - 1]);
#pragma unroll
	for (int j = 0; j < W; j++) {
		uint64_t pos = cons + 32 * j + lane;

		if (!lane_decode_inline1(j ? more[j - 1] : b, 1, kc.strict, pos, &lw[j]) ||
		    lw[j].total_len > WIDE_MAX_INLINE)
			ok = 0;
		else if (j == 0)
			ok &= lane_resolve_remote(p, bq, peer_pd, &lw[0]);
		else /* the first WQE's key: its caches hit */
			ok &= lw[j].rkey == lw[0].rkey && lane_resolve_cached(p, bq, &lw[j]);
		lo[j] = (uint64_t)lw[j].dst;
		hi[j] = lo[j] + lw[j].total_len;
	}
	if (!__all_sync(FULL_WARP, ok) || !wide_disjoint<W>(lo, hi, lane))
		return 0;
#pragma unroll
	for (int j = 0; j < W; j++) {
		sig[j] = __ballot_sync(FULL_WARP, lw[j].signaled);
		nsig += __popc(sig[j]);
	}
	if (lane == 0 && nsig)
		got = park_claim(p, pk, bq.cq, nsig, &slots);
	if (!__shfl_sync(FULL_WARP, got, 0))
		return 0;
	if (lane == 0) {
		trace_now(kc, tr, SOFTNIC_TRACE_KEY_OK, cons, 32 * W);
		trace_now(kc, tr, SOFTNIC_TRACE_CQ_CLAIMED, cons, 32 * W);
	}
#pragma unroll
	for (int j = 0; j < W; j++) {
		/* At most WIDE_MAX_INLINE bytes: the words after them are not kept. */
		const uint32_t pw[7] = { lw[j].pw[0], lw[j].pw[1], lw[j].pw[2], 0, 0, 0, 0 };

		store_inline_bb(lw[j].dst, pw, (uint32_t)lw[j].total_len);
	}
	/* Orders every lane's data writes before lane 0's CQE releases. */
	__syncwarp(FULL_WARP);
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_DATA_MOVED, cons, 32 * W);
	/* The next batch's BBs, as warp_batch() loads them (b is dead). */
	if ((uint64_t)lane < left - 32 * W)
		read_bb(bq.sq, bq.bb_cnt, cons + 32 * W + lane, b);
	{
		uint32_t want = slots.want;

		slots.want = 0; /* the parked CQ goes after the last set's CQEs */
#pragma unroll
		for (int j = 0; j < W; j++) {
			batch_cqes(p, kc, tr, pk, &slots, bq.qpn, &lw[j], sig[j], cons + 32 * j, 1,
				   lane);
			slots.pi += __popc(sig[j]);
		}
		if (lane == 0 && nsig && want)
			park_release(pk);
	}
	if (lane == 0) {
		qp->cons = cons + 32 * W;
		p.st.wqes_executed += 32 * W;
	}
	return 32 * W;
}

/* Runs up to 32 WQEs of the left BBs at cons one per lane, when all are
 * RDMA writes of as many BBs as the first (nbb) that lane_decode() takes,
 * each checks out, no two destinations overlap (so order cannot show) and
 * the send CQ has slots for the signaled ones; WQE l starts at
 * cons + l * nbb, which each lane proves for the next by finding nbb in
 * its own ctrl segment. Returns the WQEs run, or 0 when lane 0 must take
 * them one at a time instead. All lanes call it. Each lane's WQE, decoded
 * and resolved, stays in registers. rights, peer_pd: lane 0's loads of the
 * peer's rights and pd (snx_pass_peer_load), which go out before the BB
 * loads and are first used after them (one trip for both). use_pre: what
 * b holds at cons already (PRE_*). When the batch runs and BBs are left
 * below the pass's target, it loads the next batch's first BBs into b (one
 * per lane, as for 1-BB WQEs) before its CQE's fence: a batch that ran
 * (returned n) with *bbs < left leaves b PRE_ALL for the next call. The
 * fence waits for those loads too (a fence waits for every outstanding
 * load: ncu on the H200), so their trip is not hidden behind it; the next
 * batch no longer waits for its BBs, and no QP record re-read follows the
 * batch. */
enum {
	PRE_NONE = 0,  /* b holds nothing: every lane loads its BB */
	PRE_LANE0 = 1, /* lane 0's BB at cons (prefetch_bb, at the pass's start) */
	PRE_ALL = 2    /* every lane's BB at cons + lane (the previous batch's) */
};
template <int WIDE>
static __device__ __forceinline__ int warp_batch(snx_pass &p, gpu_consts kc, gpu_trace *tr,
						 cq_park *pk, snx_qp *qp, const batch_qp &bq,
						 uint32_t rights, uint32_t peer_pd, uint32_t b[16],
						 int use_pre,
						 uint64_t cons, uint64_t left, int lane, uint32_t *bbs)
{
	const uint8_t *sq = bq.sq;
	uint32_t bb_cnt = bq.bb_cnt;
	snx_cq *cq = bq.cq;
	uint32_t nbb;
	lane_write lw;
	int ok = 1, got = 1, n = left < 32 ? (int)left : 32;
	uint64_t lo = 0, hi = 0;
	unsigned sigmask;
	cq_slots slots = { NULL, 0, 0, 0, 0 };

	if ((uintptr_t)sq & 15)
		return 0; /* a caller ring the 16-byte loads cannot read */
	/* One BB per lane first (the common case costs one round trip); the
	 * first WQE's ctrl segment says how many BBs the batch's WQEs take. */
	if (lane < n && !(use_pre == PRE_ALL || (lane == 0 && use_pre == PRE_LANE0)))
		read_bb(sq, bb_cnt, cons + lane, b);
	nbb = __shfl_sync(FULL_WARP, lane ? 1 : gic_wqe_bb_count(b[1]), 0);
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_WQE_READ, cons, (uint32_t)n); /* nbb needed the WQE */
	if (nbb > 1) { /* multi-BB WQEs (inline payloads): each lane's own first BB */
		/* 32-bit division (left clamped: at most 32 WQEs are taken). */
		uint32_t fit = (uint32_t)(left < 1024 ? left : 1024) / nbb;

		n = fit < 32 ? (int)fit : 32;
		if (n == 0)
			return 0;
		if (lane < n)
			read_bb(sq, bb_cnt, cons + (uint64_t)lane * nbb, b);
	}
	/* The peer's rights, loaded beside the BBs: the batch only runs
	 * writes the peer QP grants (else the serial core reports them). */
	rights = __shfl_sync(FULL_WARP, rights, 0);
	peer_pd = __shfl_sync(FULL_WARP, peer_pd, 0);
	if (!(rights & SOFTNIC_ACCESS_REMOTE_WRITE))
		ok = 0;
	/* WIDE > 1 (a constant): the wide batch first, where it applies. */
	if (WIDE > 1 && ok && nbb == 1 && left >= 32 * WIDE &&
	    wide_batch<WIDE>(p, kc, tr, pk, qp, bq, peer_pd, b, cons, left, lane)) {
		*bbs = 32 * WIDE;
		return 32 * WIDE;
	}
	/* The three-per-lane kernel: 64-95 WQEs left (a pass's end behind a
	 * poster) take two per lane rather than two batches of 32. */
	if (WIDE > 2 && ok && nbb == 1 && left >= 64 &&
	    wide_batch<2>(p, kc, tr, pk, qp, bq, peer_pd, b, cons, left, lane)) {
		*bbs = 64;
		return 64;
	}
	if (lane < n && ok) {
		uint64_t pos = cons + (uint64_t)lane * nbb;

		/* The common 1-BB inline write first, then any other shape. */
		if (lane_decode_inline1(b, nbb, kc.strict, pos, &lw))
			ok = lane_resolve_remote(p, bq, peer_pd, &lw);
		else
			ok = lane_decode(b, nbb, kc.strict, pos, &lw) &&
			     lane_resolve(p, bq, peer_pd, &lw);
		lo = (uint64_t)lw.dst;
		hi = ok && lw.dst ? lo + lw.total_len : lo;
	}
	if (!__all_sync(FULL_WARP, ok) || lanes_overlap(lo, hi, n, lane)) {
		if (lane == 0)
			trace_drop(kc, tr, TRACE_BATCH_STEPS); /* the serial core takes them */
		return 0;
	}
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_KEY_OK, cons, (uint32_t)n);
	sigmask = __ballot_sync(FULL_WARP, lane < n && lw.signaled);
	/* With signaled WQEs, lane 0 holds the CQ lock from the claim to the
	 * last CQE, and keeps it parked after them (park_claim: no atomic
	 * while the CQ stays parked). */
	if (lane == 0 && sigmask)
		got = park_claim(p, pk, cq, (uint32_t)__popc(sigmask), &slots);
	if (!__shfl_sync(FULL_WARP, got, 0)) {
		if (lane == 0)
			trace_drop(kc, tr, TRACE_BATCH_STEPS);
		return 0;
	}
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_CQ_CLAIMED, cons, (uint32_t)n);
	if (!warp_move(job_mine(), &lw, sq, bb_cnt, cons, nbb, n, lane)) {
		if (lane == 0) {
			batch_fail_copy(p, pk, qp, cons, sigmask);
			trace_drop(kc, tr, TRACE_BATCH_STEPS);
		}
		return 0; /* the serial core reports the error at cons */
	}
	/* Orders every lane's data writes before lane 0's CQE releases. */
	__syncwarp(FULL_WARP);
	if (lane == 0)
		trace_now(kc, tr, SOFTNIC_TRACE_DATA_MOVED, cons, (uint32_t)n);
	{
		/* The next batch's BBs: below the pass's target, which the
		 * doorbell record's acquire ordered before this pass's reads;
		 * b is dead here (decoded into lw). A next batch of multi-BB
		 * WQEs loads its own again. */
		uint64_t rest = left - (uint64_t)n * nbb;

		if ((uint64_t)lane < rest)
			read_bb(sq, bb_cnt, cons + (uint64_t)n * nbb + lane, b);
	}
	batch_cqes(p, kc, tr, pk, &slots, bq.qpn, &lw, sigmask, cons, nbb, lane);
	if (lane == 0) {
		qp->cons = cons + (uint64_t)n * nbb;
		p.st.wqes_executed += n;
	}
	*bbs = (uint32_t)n * nbb;
	return n;
}

/* Lane 0 alone: warp_batch() of a pass that found exactly one WQE, the
 * common one-BB inline RDMA write (lane_decode_inline1), whose BB the
 * pass's start prefetched (pre). The same checks, stamps and results as a
 * batch of one, without the warp-wide broadcasts, votes and barriers that
 * a batch of 32 needs (about 20 of them, in one dependent chain on the
 * one-at-a-time latency path). Returns 1 when it executed the WQE; 0 when
 * it did nothing and holds nothing new (the warp then runs the same WQE
 * through warp_batch(), which makes the same checks and hands anything
 * else to the serial core). The caller saw the QP healthy and connected. */
static __device__ __forceinline__ int solo_write(snx_pass &p, gpu_consts kc, gpu_trace *tr,
						 cq_park *pk, snx_qp *qp, const snx_qp_view *v,
						 const uint32_t b[16])
{
	uint64_t cons = v->cons;
	batch_qp bq;
	lane_write lw;
	cq_slots slots = { NULL, 0, 0, 0, 0 };

	if (!(p.peer_rights & SOFTNIC_ACCESS_REMOTE_WRITE) ||
	    !lane_decode_inline1(b, 1, kc.strict, cons, &lw))
		return 0;
	trace_now(kc, tr, SOFTNIC_TRACE_WQE_READ, cons, 1);
	bq = batch_qp_own(v);
	if (!lane_resolve_remote(p, bq, v->peer_pd, &lw)) {
		trace_drop(kc, tr, TRACE_BATCH_STEPS);
		return 0;
	}
	trace_now(kc, tr, SOFTNIC_TRACE_KEY_OK, cons, 1);
	if (lw.signaled && !park_claim(p, pk, bq.cq, 1, &slots)) {
		trace_drop(kc, tr, TRACE_BATCH_STEPS);
		return 0;
	}
	trace_now(kc, tr, SOFTNIC_TRACE_CQ_CLAIMED, cons, 1);
	if (lw.total_len)
		store_inline_bb(lw.dst, lw.pw, (uint32_t)lw.total_len);
	trace_now(kc, tr, SOFTNIC_TRACE_DATA_MOVED, cons, 1);
	if (lw.signaled) {
		cqe_write_ok(kc, &slots, slots.pi, bq.qpn, (uint16_t)cons, (uint32_t)lw.total_len);
		trace_now(kc, tr, SOFTNIC_TRACE_CQE_WRITTEN, cons, 1);
		pk->pi = slots.pi + 1; /* snx_cq_write_locked's count, in the parked copy */
		p.st.cqes_written += 1;
		if (slots.want)
			park_release(pk);
	}
	qp->cons = cons + 1;
	p.st.wqes_executed += 1;
	return 1;
}

/* The serial core's step on a copy of the pass. The core hands the pass's
 * address to functions it calls (the rare operations), which would put
 * the pass into local memory for the kernel's life; the copy is there
 * only while a WQE goes through the core, and the warp's own pass stays
 * in registers. */
static __device__ __noinline__ int serial_step_in(snx_pass *p, snx_qp *qp)
{
	return snx_step(p, qp);
}

/* Lets the parked CQ go first: the core takes CQ locks (this one's too),
 * and a warp that may wait for a lock keeps none parked. */
static __device__ __forceinline__ int serial_step(snx_pass &p, cq_park *pk, snx_qp *qp)
{
	snx_pass copy = p;
	int k;

	park_release(pk);
	k = serial_step_in(&copy, qp);

	p = copy;
	return k;
}

/* Lane 0: the send ring's BB at the view's cons as four 16-byte loads
 * into pre (read_bb), issued right after the doorbell record's acquire
 * (snx_pass_begin_load), which orders them after it, as it orders the
 * batch's own reads of that BB: they are in flight while the record is
 * checked and the view broadcast, and warp_batch() takes them for lane
 * 0's first WQE instead of loading it again. Only when the early record
 * is exactly one BB past cons (so the batch, if any, is one 1-BB WQE and
 * no other lane reads a BB: such a read into the same registers would
 * first wait for these loads), for a QP that is no DCT and a 16-byte
 * aligned ring. The record's checks (snx_take_record) come later and
 * decide what runs; a BB they do not cover is unused. Returns 1 when pre
 * holds the BB. */
static __device__ __forceinline__ int prefetch_bb(const snx_qp_view *v, const uint32_t *rec,
						  uint32_t pre[16])
{
	uint32_t ahead = (gic_be32toh(v->rec_raw) - (uint32_t)v->cons) & 0xffffu;
	/* One branch on both the view and rec (not a branch on rec first):
	 * the test waits for the view's loads on every path, so that no
	 * later use of the view, after the paths join, waits for their
	 * scoreboard, which the BB loads then share. */
	int go = (ahead == 1) & !(v->flags & SOFTNIC_QP_DCT) & !((uintptr_t)v->sq_buf & 15) &
		 (rec != NULL) & v->rec_early;

	if (!go)
		return 0;
	read_bb(v->sq_buf, v->bb_cnt, v->cons, pre);
	return 1;
}

/* Lane 0: the pass's start (snx_pass_begin_in, with the QP's doorbell
 * record rec from the scan's registers: the record's acquire goes out with
 * the view's loads, and the first BB's loads right after it, prefetch_bb:
 * *pre_ok); own_db: this thread read the doorbell word db with acquire
 * semantics in this pass's scan, else it reads it again (before the
 * record, in program order). The peer's rights and pd are left to the
 * caller (snx_pass_peer_load). */
static __device__ __forceinline__ int warp_begin(snx_pass &p, gpu_consts kc, snx_qp *qp,
						 const uint32_t *rec, int own_db, uint64_t db,
						 snx_qp_view *v, uint32_t pre[16], int *pre_ok)
{
	uint32_t epoch;

	if (!own_db) {
		const uint64_t *dbp = qp->db;

		db = kc.gpu_scope ? gic_ld_acquire_gpu_u64(dbp) : gic_ld_acquire_sys_u64(dbp);
	}
	epoch = snx_pass_begin_load(&p, qp, v, rec);
	*pre_ok = prefetch_bb(v, rec, pre);
	return snx_pass_begin_rest(&p, qp, db, v, epoch, 0); /* the caller loads the peer's fields */
}

/* Lane 0: the pass's end. snx_pass_end() but for what the view proves
 * idle: with no serial step in the pass (fresh: the view is still the
 * QP's) and the view's pending_synd and in_error clear, the orphan report
 * and the receive flush have nothing to do, so their loads, which would
 * delay the next scan by a trip, are left out. An in_error the host sets
 * during the pass shows in the next scan (lane_scan reads it), whose pass
 * flushes. Only the counters are added (reductions: nothing waits for them). */
static __device__ __forceinline__ void warp_end(snx_pass &p, cq_park *pk, snx_qp *qp,
					       softnic_stats *st, const snx_qp_view *v, int fresh)
{
	if (fresh && !v->pending_synd && !v->in_error) {
		snx_stats_flush(&p.st, st);
	} else {
		park_release(pk); /* the orphan report and the flush take CQ locks */
		snx_pass_end(&p, qp, st);
	}
}

enum {
	PASS_EXTEND_MIN = 64,  /* WQEs a pass ran before it reads the record again */
	PASS_EXTEND_MAX = 4096 /* WQEs after which it ends at what it found */
};

/* Lane 0, when a pass's batches have run every WQE its record read showed
 * (cons: the QP's position and target now) and done, the WQEs the pass
 * ran, is at least PASS_EXTEND_MIN (a drain: a latency pass ends at once)
 * and below PASS_EXTEND_MAX (the warp's other QPs get their turn): reads
 * the doorbell record rec again, with acquire (it orders the WQE reads
 * after it, as at the pass's start), and when it moved, moves qp->target
 * to it and returns the BBs it added, so that the pass runs on without
 * the scan, the view and the first BB's trip a new pass costs (a poster
 * close ahead of the engine rings every 32 WQEs). As a pass that takes
 * the record at its start (snx_take_record), WQEs published through the
 * record run whether or not their doorbell was seen yet. skip (a watched
 * QP, one whose doorbell carries its index, or one without a record) or
 * a record that moved back or past the ring (snx_record_ahead) returns 0:
 * the next pass takes it with its checks. */
static __device__ __forceinline__ uint32_t pass_extend(uint32_t gpu_scope, snx_qp *qp,
						       const uint32_t *rec, uint64_t cons,
						       uint32_t bb_cnt, int done, int skip)
{
	uint16_t ahead;

	if (done < PASS_EXTEND_MIN || done >= PASS_EXTEND_MAX || skip)
		return 0;
	if (snx_record_ahead(gic_be32toh(snx_ld_acquire_u32_scope(gpu_scope, rec)) & 0xffffu, cons,
			     cons, bb_cnt, &ahead) || !ahead)
		return 0;
	qp->target = cons + ahead;
	return ahead;
}

/* The steps of a pass that lane 0 started (warp_begin) and did not finish
 * alone (solo_write), with the whole warp: batches run one WQE per lane
 * (warp_batch: WQEs of one size, one BB or more); anything else runs on
 * lane 0 through the serial core, which keeps every semantic of the CPU
 * engine. Lane 0's pass holds the state; the other lanes' passes only
 * cache MRs. The first step and the end of a run of batches go on from
 * lane 0's view v of the pass's start (its cons, target and health), and
 * a run of batches goes on from the positions they took, with no load of
 * the QP record; after a serial step the record is read again (*fresh
 * cleared). pre: what pre_bb holds at cons (PRE_*). Returns the WQEs
 * executed. All lanes call. */
template <int WIDE>
static __device__ __forceinline__ int warp_steps(snx_pass &p, gpu_consts kc, gpu_trace *tr,
						 cq_park *pk, snx_qp *qp, const uint32_t *rec,
						 const snx_qp_view &v, uint32_t pre_bb[16], int pre,
						 int lane, int *fresh)
{
	int done = 0;
	/* The other lanes follow lane 0's view of the epoch and the link. */
	uint32_t epoch = __shfl_sync(FULL_WARP, p.mr_epoch, 0);
	batch_qp bq;
	uint64_t cons, left;
	int healthy;

	if (lane && epoch != p.mr_epoch) {
		p.mr_epoch = epoch;
		p.remote.key = 0;
		p.local.key = 0;
	}
	p.link = __shfl_sync(FULL_WARP, p.link, 0);
	bq = batch_qp_of(&v); /* the peer's rights and pd: lane 0's, in warp_batch */
	cons = __shfl_sync(FULL_WARP, v.cons, 0);
	left = __shfl_sync(FULL_WARP, v.target - v.cons, 0);
	healthy = __shfl_sync(FULL_WARP, !v.in_error && !v.pending_synd, 0);
	while (left) {
		int k = 0;
		uint32_t bbs = 0;

		if (healthy && p.link == SNX_QP_CONNECTED)
			k = warp_batch<WIDE>(p, kc, tr, pk, qp, bq, p.peer_rights, v.peer_pd,
				       pre_bb, pre, cons, left, lane, &bbs);
		pre = k && bbs < left ? PRE_ALL : PRE_NONE; /* what warp_batch left in pre_bb */
		if (!k) {
			k = __shfl_sync(FULL_WARP, lane ? 0 : serial_step(p, pk, qp), 0);
			*fresh = 0;
			if (lane == 0 && k)
				trace_now(kc, tr, SOFTNIC_TRACE_SERIAL, cons, 1);
		}
		if (!k)
			break; /* a CQ is full: come back on a later scan */
		done += k;
		if (*fresh && bbs == left) {
			/* The batch took every WQE the pass found: the pass ends,
			 * or in the wide kernels (WIDE is a constant: the default
			 * kernel keeps its code and its latency), after a drain,
			 * reads the record again (pass_extend). */
			uint32_t more;

			if (WIDE == 1)
				break;
			more = lane ? 0 : pass_extend(p.gpu_scope, qp, rec, cons + bbs, bq.bb_cnt, done,
						      v.watching || !rec ||
							      (v.flags & SOFTNIC_QP_DB_INDEX));
			more = __shfl_sync(FULL_WARP, more, 0);
			if (!more)
				break;
			if (lane == 0)
				trace_flush(kc, tr, bq.qpn);
			cons += bbs;
			left = more;
			pre = PRE_NONE; /* no batch loaded these BBs */
			continue;
		}
		/* Another step follows, whose stamps would overwrite these: out
		 * with them now (else after the pass's end, off its span). */
		if (lane == 0)
			trace_flush(kc, tr, bq.qpn);
		if (pre == PRE_ALL) {
			/* A batch ran (it set no error: one that fails returns
			 * 0) and left WQEs: the record needs no load. An
			 * in_error the host sets meanwhile shows at the next
			 * scan, as for the pass's first step. */
			cons += bbs;
			left -= bbs;
			continue;
		}
		/* The record, as the serial core or the batch left it (in_error
		 * may also have come from the host). */
		cons = __shfl_sync(FULL_WARP, lane ? 0 : qp->cons, 0);
		left = __shfl_sync(FULL_WARP, lane ? 0 : qp->target - qp->cons, 0);
		healthy = __shfl_sync(FULL_WARP, lane ? 0 : !qp->in_error && !qp->pending_synd, 0);
	}
	return done;
}

/* Executes what the QP's doorbell announced. Lane 0 starts the pass
 * (warp_begin); a pass that found one prefetched WQE that lane 0 can run
 * alone (solo_write: the one-at-a-time latency path) ends there, any other
 * runs with the whole warp (warp_steps). own_db: lane 0 itself read the
 * doorbell word db with acquire semantics in this pass's scan (else it
 * reads it again). Returns the WQEs executed. All lanes call. */
template <int WIDE>
static __device__ __forceinline__ int warp_progress(snx_pass &p, gpu_consts kc, gpu_trace *tr,
						    cq_park *pk, snx_qp *qp, const uint32_t *rec,
						    softnic_stats *st, int lane, int own_db, uint64_t db)
{
	int active = 0, done = 0, fresh = 1, pre = PRE_NONE;
	uint32_t pre_bb[16];
	snx_qp_view v;

	memset(&v, 0, sizeof(v));
	if (lane == 0) {
		active = warp_begin(p, kc, qp, rec, own_db, db, &v, pre_bb, &pre);
		if (active) {
			trace_now_as(kc, tr, SOFTNIC_TRACE_RECORD, 1);
			/* Issued here, used after the batch's BB loads (or
			 * by solo_write, which waits for them first). */
			snx_pass_peer_load(&p, &v);
			if (pre == PRE_LANE0 && v.target - v.cons == 1 && !v.in_error &&
			    !v.pending_synd && p.link == SNX_QP_CONNECTED &&
			    solo_write(p, kc, tr, pk, qp, &v, pre_bb))
				active = 2;
		} else {
			trace_drop(kc, tr, ~0u);
		}
	}
	active = __shfl_sync(FULL_WARP, active, 0);
	if (!active)
		return 0;
	if (active == 1)
		done = warp_steps<WIDE>(p, kc, tr, pk, qp, rec, v, pre_bb, pre, lane, &fresh);
	else
		done = 1; /* lane 0 executed the pass's one WQE */
	if (lane == 0) {
		warp_end(p, pk, qp, st, &v, fresh);
		trace_now_as(kc, tr, SOFTNIC_TRACE_PASS_END, (uint32_t)done);
		trace_flush(kc, tr, v.qpn);
	}
	return done;
}

/* A lane's look at one QP in the scan: 1 when it may have work (the
 * doorbell word changed, WQEs or a doorbell error are pending, the
 * doorbell is watched, or the QP is in error, whose receives may need a
 * flush), with *db the doorbell word and *cons the QP's position. The
 * QP's progress fields are plain loads issued before the doorbell's
 * acquire load, so that all of them take one round trip together; they
 * are hints that snx_pass_begin_db() reads again after the acquire. Lane
 * 0 of this warp writes them (the same SM: its L1 is never stale for
 * them); in_error may come from the host, and shows at the next pass
 * (every pass's acquire invalidates the SM's L1). */
static __device__ __forceinline__ int lane_scan(gpu_consts kc, const snx_qp *qp,
						const uint64_t *dbp, uint64_t *db, uint64_t *cons)
{
	uint64_t last, target;
	uint32_t in_error;
	uint8_t pending, watching;

	*db = 0;
	*cons = 0;
	if (!qp)
		return 0;
	last = qp->last_db;
	*cons = qp->cons;
	target = qp->target;
	in_error = qp->in_error;
	pending = qp->pending_synd;
	watching = qp->watching;
	/* The doorbell, at the scope of the softnic's submitters: its acquire
	 * orders this pass's reads of the record and the WQEs after it. */
	*db = kc.gpu_scope ? gic_ld_acquire_gpu_u64(dbp) : gic_ld_acquire_sys_u64(dbp);
	return *db != last || *cons != target || pending || watching || in_error;
}

/* Runs warp_progress() on every QP of the scan whose lane found it busy
 * (qp, db, cons: each lane's own); returns the WQEs executed. Lane 0 took
 * its own doorbell read with acquire, so its QP's pass starts from it. */
template <int WIDE>
static __device__ __forceinline__ int scan_run(snx_pass &p, gpu_consts kc, gpu_trace *tr,
					       cq_park *pk, softnic_stats *st, int lane, int busy,
					       snx_qp *qp, const uint32_t *rec, uint64_t db,
					       uint64_t cons)
{
	unsigned todo = __ballot_sync(FULL_WARP, busy);
	int done = 0;

	while (todo) {
		int l = __ffs(todo) - 1;
		snx_qp *q = (snx_qp *)__shfl_sync(FULL_WARP, (unsigned long long)qp, l);
		const uint32_t *r =
			(const uint32_t *)__shfl_sync(FULL_WARP, (unsigned long long)rec, l);
		uint64_t d = __shfl_sync(FULL_WARP, db, l);
		uint64_t c = __shfl_sync(FULL_WARP, cons, l);

		todo &= todo - 1;
		if (lane == 0)
			trace_now(kc, tr, SOFTNIC_TRACE_DB_SEEN, c, 1); /* the ballot needed the loads */
		done += warp_progress<WIDE>(p, kc, tr, pk, q, r, st, lane, l == 0, d);
	}
	return done;
}

/* __maxnreg__ needs CUDA 12.4 or later; older toolkits compile without it.
 * W: the kernel's WQEs per lane (its template argument), as the
 * architecture clamps it. */
#if defined(__CUDACC_VER_MAJOR__) && \
	(__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define SNX_GPU_MAXNREG(W) __maxnreg__(SNX_GPU_WIDE(W) >= 3 ? 255 : 224)
#else
#define SNX_GPU_MAXNREG(W)
#endif

/* idle_exit > 0: the warp leaves after that many consecutive passes with
 * no work (on-demand mode); 0: it runs until stop. Warp w serves QP table
 * slots w, w + W, w + 2W, ... (W warps); lane l of the warp looks at
 * slot w + l * W of each group of 32 such slots. The first group's QP and
 * doorbell pointers stay in registers, re-read only when the host's table
 * generation moves; later groups (more than 32 W QPs) are read from the
 * table on every pass.
 *
 * SNX_GPU_MAXNREG: ptxas keeps the kernel at 224 registers or fewer, so
 * that a block (64 Ki registers) holds 9 warps (the count moved by a few
 * registers from one small change to the next); the three-per-lane kernel
 * at 255, 8 warps a block (engine_launch refuses more).
 *
 * WIDE: WQEs per lane in a drained QP's batches (wide_batch), clamped to
 * SNX_GPU_BATCH_WIDE_MAX; 1 is the engine without the wide batch, a kernel
 * of its own, so that its registers (and the latency they set) are those
 * of an engine that never had one (engine_kernel picks). */
template <int WIDE>
__global__ void SNX_GPU_MAXNREG(WIDE) snx_gpu_engine_kernel(snx_shared *sh, softnic_stats *warp_stats, int nwarps,
				      int idle_exit, softnic_gpu_trace_rec *trace,
				      uint32_t trace_cap, snx_gpu_jobs *jobs)
{
	enum { WE = SNX_GPU_WIDE(WIDE) };
	int idle = 0;
	int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
	int lane = threadIdx.x & 31;
	uint32_t step = 32u * (uint32_t)nwarps; /* slots between a lane's groups */
	softnic_stats *st = &warp_stats[warp];
	uint32_t gen_seen = ~0u, n = 0;
	snx_qp *mine = NULL;              /* this lane's slot of the first group */
	const uint64_t *mine_db = NULL;   /* its doorbell word */
	const uint32_t *mine_rec = NULL;  /* its doorbell record (fixed for the QP's life) */
	gpu_consts kc;
	/* The trace's pending stamps, one set per warp (lane 0's): in shared
	 * memory, since trace_write() takes their address and a local array
	 * would put them in local memory. */
	__shared__ gpu_trace traces[32];
	gpu_trace *tr = &traces[threadIdx.x >> 5];
	/* The send CQ lane 0 keeps locked across passes (cq_park): in shared
	 * memory, which no acquire empties, and out of the registers. */
	__shared__ cq_park parks[32];
	cq_park *pk = &parks[threadIdx.x >> 5];
	snx_pass p; /* kept for the kernel's life: its MR caches persist */

	kc.strict = sh->strict;
	kc.gpu_scope = sh->gpu_scope;
	kc.trace = trace != NULL;
	snx_pass_init(&p, sh);
	if (lane == 0) { /* only lane 0 stamps and takes CQ locks */
		trace_init(tr, trace, trace_cap, warp);
		pk->cq = NULL;
		job_own_init(job_mine(), jobs, warp);
	}
	/* Orders lane 0's job_own before the other lanes' reads of it. */
	__syncwarp(FULL_WARP);
	/* A service loop, not a wait: it ends when softnic_close() sets stop. */
	for (;;) {
		/* Every lane loads stop and the table generation (one
		 * transaction each per warp) before its scan loads, and uses
		 * them after: the three overlap. Lane 0's values decide. */
		uint32_t stop = gic_ld_relaxed_sys_u32(&sh->stop);
		uint32_t gen = gic_ld_relaxed_sys_u32(&sh->table_gen);
		uint32_t want = lane == 0 ? park_want(pk) : 0; /* a writer waits for the parked CQ */
		/* Chunks of large writes to help with (job_help): one load per
		 * pass, issued here and used after the scan, no atomic. */
		uint32_t pend = lane == 0 ? gic_ld_relaxed_sys_u32(&jobs->pending) : 0;
		int help;
		uint64_t db, cons;
		int busy = lane_scan(kc, mine, mine_db, &db, &cons), done = 0;

		if (__shfl_sync(FULL_WARP, stop, 0))
			break;
		gen = __shfl_sync(FULL_WARP, gen, 0);
		help = __shfl_sync(FULL_WARP, pend, 0) != 0;
		if (lane == 0 && (want || gen != gen_seen))
			park_release(pk);
		if (gen != gen_seen) {
			uint32_t slot = (uint32_t)warp + (uint32_t)lane * (uint32_t)nwarps;

			/* Orders the table reads below after gen (the host
			 * publishes a QP's fields, then its slot, then gen);
			 * every lane read gen, so every lane's fence acquires. */
			gic_fence_acquire_sys();
			gen_seen = gen;
			n = gic_ld_relaxed_sys_u32(&sh->nqp_slots);
			mine = slot < n ? (snx_qp *)gic_ld_relaxed_sys_u64((uint64_t *)&sh->qps[slot]) : NULL;
			mine_db = mine ? mine->db : NULL;
			mine_rec = mine ? mine->dbrec : NULL;
			continue; /* scan the new table (busy came from the old one) */
		}
		done = scan_run<WE>(p, kc, tr, pk, st, lane, busy, mine, mine_rec, db, cons);
		for (uint32_t base = (uint32_t)warp + step; base < n; base += step) {
			uint32_t slot = base + (uint32_t)lane * (uint32_t)nwarps;
			snx_qp *q = slot < n ? (snx_qp *)gic_ld_relaxed_sys_u64((uint64_t *)&sh->qps[slot])
					     : NULL;
			const uint32_t *r = q ? q->dbrec : NULL; /* beside q->db: one trip */

			busy = lane_scan(kc, q, q ? q->db : NULL, &db, &cons);
			done += scan_run<WE>(p, kc, tr, pk, st, lane, busy, q, r, db, cons);
		}
		/* A warp that found nothing to do helps with a large write. */
		if (SNX_GPU_COPY_JOBS && !done && help)
			done = job_help(jobs, warp, lane);
		idle = done ? 0 : idle + 1;
		if (idle_exit && idle >= idle_exit)
			break;
		/* A warp with QPs spins without sleeping: its pass is one round
		 * trip, and a sleep would add its length to the time a doorbell
		 * waits to be seen. A warp with none only watches stop and the
		 * table, gently. */
		if (!done && !__any_sync(FULL_WARP, mine != NULL) && n <= (uint32_t)warp + step)
			__nanosleep(256);
	}
	if (lane == 0)
		park_release(pk); /* stop, or the on-demand run's end */
}

/* ------------------------------------------------------------------ */
/* Memory. */

static int arena_open(arena *a, size_t size, int host, int device, cudaStream_t stream)
{
	void *p = NULL;
	cudaError_t e;

	a->size = size;
	a->host = host;
	if (host) {
		e = cudaHostAlloc(&p, size, cudaHostAllocMapped | cudaHostAllocPortable);
		if (e == cudaSuccess)
			memset(p, 0, size);
	} else {
		cudaMemLocation loc = { cudaMemLocationTypeDevice, device };

		e = cudaMallocManaged(&p, size, cudaMemAttachGlobal);
		if (e == cudaSuccess)
			e = cudaMemAdvise(p, size, cudaMemAdviseSetPreferredLocation, loc);
		if (e == cudaSuccess)
			e = cudaMemsetAsync(p, 0, size, stream);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(stream);
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "softnic GPU engine: arena of %zu bytes: %s\n", size,
			cudaGetErrorString(e));
		return ENOMEM;
	}
	a->base = (uint8_t *)p;
	return 0;
}

static void arena_close(arena *a)
{
	if (a->base && a->host)
		cudaFreeHost(a->base);
	else if (a->base)
		cudaFree(a->base);
	a->base = NULL;
}

/* Zeroed memory from the arena (never handed out before). */
static void *arena_alloc(gpu_engine *g, arena *a, size_t size, size_t align)
{
	void *p = NULL;

	if (align < 64)
		align = 64;
	if (size >= 4096 && align < 4096)
		align = 4096;
	pthread_mutex_lock(&g->lock);
	size_t at = (a->used + align - 1) & ~(align - 1);

	if (at + size <= a->size) {
		p = a->base + at;
		a->used = at + size;
	} else {
		fprintf(stderr, "softnic GPU engine: arena full (%zu bytes): raise "
			"softnic_gpu_attr.arena_bytes\n", a->size);
	}
	pthread_mutex_unlock(&g->lock);
	return p;
}

static void *state_alloc(size_t size, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	return arena_alloc(g, &g->state, size, 64);
}

static void state_free(void *p, void *ctx)
{
	(void)p; /* returned with the arena at close */
	(void)ctx;
}

static void *queue_alloc(size_t size, size_t align, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	return arena_alloc(g, &g->queues, size, align);
}

/* Moves initialised managed queue memory to the GPU, so that the first
 * post does not pay page faults. */
static void queue_prepared(void *p, size_t size, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;
	cudaMemLocation loc = { cudaMemLocationTypeDevice, g->attr.device };

	if (g->queues.host)
		return;
	if (cudaMemPrefetchAsync(p, size, loc, 0, g->copy_stream) == cudaSuccess)
		cudaStreamSynchronize(g->copy_stream);
}

static void queue_free(void *p, void *ctx)
{
	(void)p; /* returned with the arena at close */
	(void)ctx;
}

/* ------------------------------------------------------------------ */
/* Backend hooks. */

static void record_cuda_error(gpu_engine *g, const char *what, cudaError_t e)
{
	snprintf(g->error, sizeof(g->error), "GPU engine: %s: %s", what, cudaGetErrorString(e));
	g->alive = 0;
}

/* Sets stop and waits (with a time limit) for the kernel to leave. */
static void engine_stop(softnic *nic, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;
	uint64_t deadline = gic_now_ns() + STOP_DEADLINE_NS;
	cudaError_t e;

	if (!g->alive)
		return;
	__atomic_store_n(&nic->shared->stop, 1, __ATOMIC_RELEASE);
	while ((e = cudaStreamQuery(g->stream)) == cudaErrorNotReady) {
		if (gic_now_ns() > deadline) {
			fprintf(stderr, "softnic GPU engine: did not stop within 5 s\n");
			record_cuda_error(g, "stop", e);
			return;
		}
		gic_cpu_relax();
	}
	if (e != cudaSuccess)
		record_cuda_error(g, "engine kernel", e);
	g->alive = 0;
}

static void engine_add_stats(const softnic *nic, softnic_stats *sum, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	softnic_stats *copy = (softnic_stats *)malloc(sizeof(*copy) * (size_t)g->nwarps);
	cudaError_t e;

	(void)nic;
	if (!copy)
		return; /* nothing added: the counters read as they were */
	/* Device memory, copied on copy_stream (which never waits for the
	 * engine kernel): a host read of managed memory would move its page to
	 * the host, and the engine's next access would stall on the fault
	 * (30-90 us on the H200, results/2026-12-04-h200-ringpace/). */
	e = cudaMemcpyAsync(copy, g->warp_stats, sizeof(*copy) * (size_t)g->nwarps,
			    cudaMemcpyDeviceToHost, g->copy_stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->copy_stream);
	if (e != cudaSuccess) {
		if (!g->error[0]) /* keep the first cause */
			record_cuda_error(g, "reading the engine's counters", e);
	} else {
		for (int w = 0; w < g->nwarps; w++)
			softnic_stats_add(sum, &copy[w]);
	}
	free(copy);
}

/* After softnic_close() released every object: return the arenas. */
static void engine_release(void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	arena_close(&g->state);
	arena_close(&g->queues);
	if (g->trace)
		cudaFree(g->trace);
	if (g->warp_stats)
		cudaFree(g->warp_stats);
	if (g->stream && !g->green.on)
		cudaStreamDestroy(g->stream);
	snx_green_close(&g->green); /* its streams, then its contexts */
	if (g->copy_stream)
		cudaStreamDestroy(g->copy_stream);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* ------------------------------------------------------------------ */
/* Opening. */

/* The trace buffer (device memory, zeroed: step 0 marks an empty
 * record), when softnic_gpu_attr.trace_wqes or GIC_SOFTNIC_GPU_TRACE asks
 * for one; allocated before the engine starts, as every engine memory.
 * Records per warp: every step of trace_wqes WQE executions. */
static int trace_prepare(gpu_engine *g)
{
	const char *env = getenv("GIC_SOFTNIC_GPU_TRACE");
	long wqes = g->attr.trace_wqes;
	size_t bytes;

	if (wqes <= 0 && env)
		wqes = strtol(env, NULL, 10);
	if (wqes <= 0)
		return 0;
	if (wqes > 1 << 20)
		wqes = 1 << 20;
	g->trace_cap = (uint32_t)wqes * SOFTNIC_TRACE_STEPS;
	bytes = sizeof(softnic_gpu_trace_rec) * g->trace_cap * (size_t)g->nwarps;
	if (cudaMalloc((void **)&g->trace, bytes) != cudaSuccess ||
	    cudaMemsetAsync(g->trace, 0, bytes, g->copy_stream) != cudaSuccess ||
	    cudaStreamSynchronize(g->copy_stream) != cudaSuccess) {
		fprintf(stderr, "softnic GPU engine: trace buffer of %zu bytes failed\n", bytes);
		return ENOMEM;
	}
	return 0;
}

typedef void (*engine_kernel_fn)(snx_shared *, softnic_stats *, int, int, softnic_gpu_trace_rec *,
				 uint32_t, snx_gpu_jobs *);

/* The engine kernel g runs: two or three WQEs per lane in a drained QP's
 * batches for attr.batch_wqes 64 or 96 (the kernel clamps it where its
 * architecture keeps fewer: softnic_gpu_batch_wqes), else the engine
 * without the wide batch. */
static engine_kernel_fn engine_kernel(const gpu_engine *g)
{
	if (g->attr.batch_wqes == 96)
		return snx_gpu_engine_kernel<3>;
	return g->attr.batch_wqes == 64 ? snx_gpu_engine_kernel<2> : snx_gpu_engine_kernel<1>;
}

/* engine_sms: every engine block must be resident on the engine's SMs at
 * once (a persistent block left waiting would never serve its QPs), and
 * the SM probe (green.h) runs on both green streams, in state-arena
 * memory (allocated in the primary context, zeroed), before the engine
 * starts. 0, EINVAL or EIO after a message. */
static int green_prepare(gpu_engine *g)
{
	int per_sm = 0, threads = 32 * g->attr.warps_per_block;
	unsigned *bitmap = (unsigned *)arena_alloc(g, &g->state, 2 * 32 * sizeof(unsigned), 64);
	cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
		&per_sm, engine_kernel(g), threads, 0);

	if (e != cudaSuccess) {
		fprintf(stderr, "softnic GPU engine: engine_sms %d: occupancy of the engine kernel: "
			"%s\n", g->attr.engine_sms, cudaGetErrorString(e));
		return EIO;
	}
	if ((long)per_sm * g->green.pl.engine_sms < g->attr.blocks) {
		fprintf(stderr, "softnic GPU engine: engine_sms %d: %d blocks of %d warps do not "
			"all fit on the engine's %d SMs (%d such blocks per SM): ask for more SMs "
			"or fewer blocks\n", g->attr.engine_sms, g->attr.blocks,
			g->attr.warps_per_block, g->green.pl.engine_sms, per_sm);
		return EINVAL;
	}
	return bitmap ? snx_green_probe(&g->green, bitmap) : ENOMEM;
}

/* Checks the device and prepares g; 0 or an errno (message on stderr). */
static int engine_prepare(gpu_engine *g)
{
	int count = 0, managed = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || g->attr.device >= count) {
		fprintf(stderr, "softnic GPU engine: no CUDA device %d\n", g->attr.device);
		return ENODEV;
	}
	cudaDeviceGetAttribute(&managed, cudaDevAttrConcurrentManagedAccess, g->attr.device);
	if (!managed) {
		fprintf(stderr, "softnic GPU engine: device %d lacks concurrent managed access\n",
			g->attr.device);
		return ENOTSUP;
	}
	if (cudaSetDevice(g->attr.device) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&g->copy_stream, cudaStreamNonBlocking) != cudaSuccess)
		return ENODEV;
	/* SMs of its own: both green contexts and their streams before the
	 * engine starts (and before any of its memory is touched there). */
	if (g->attr.engine_sms > 0) {
		int rc = snx_green_open(&g->green, g->attr.device, g->attr.engine_sms);

		if (rc)
			return rc;
		g->stream = g->green.engine_stream;
	} else if (cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess) {
		return ENODEV;
	}
	size_t bytes = g->attr.arena_bytes ? g->attr.arena_bytes : (size_t)256 << 20;

	g->nwarps = g->attr.blocks * g->attr.warps_per_block;
	if (arena_open(&g->state, bytes, 0, g->attr.device, g->copy_stream) ||
	    arena_open(&g->queues, bytes, g->attr.queues_on_host, g->attr.device, g->copy_stream))
		return ENOMEM;
	/* The counters the host reads while the engine runs: device memory
	 * (engine_add_stats), not the managed state arena. */
	if (cudaMalloc((void **)&g->warp_stats, sizeof(softnic_stats) * g->nwarps) != cudaSuccess ||
	    cudaMemsetAsync(g->warp_stats, 0, sizeof(softnic_stats) * g->nwarps, g->copy_stream) !=
		    cudaSuccess ||
	    cudaStreamSynchronize(g->copy_stream) != cudaSuccess)
		return ENOMEM;
	g->jobs = (snx_gpu_jobs *)arena_alloc(g, &g->state, sizeof(snx_gpu_jobs), 128);
	if (!g->warp_stats || !g->jobs)
		return ENOMEM;
	if (g->green.on) {
		int rc = green_prepare(g);

		if (rc)
			return rc;
	}
	return trace_prepare(g);
}

static int engine_launch(softnic *nic, gpu_engine *g, int idle_exit)
{
	cudaFuncAttributes fa;
	engine_kernel_fn kernel = engine_kernel(g);
	cudaError_t e = cudaFuncGetAttributes(&fa, kernel); /* load it now */

	/* The kernel's registers bound the warps a block can have. */
	if (e == cudaSuccess && 32 * g->attr.warps_per_block > fa.maxThreadsPerBlock) {
		fprintf(stderr, "softnic GPU engine: %d warps per block asked, the engine kernel "
			"(%d registers) allows %d\n", g->attr.warps_per_block, fa.numRegs,
			fa.maxThreadsPerBlock / 32);
		return EIO; /* as the launch itself would fail */
	}
	if (e == cudaSuccess) {
		/* The kernel's parameters, in order (engine_kernel_fn). */
		void *args[] = { &nic->shared, &g->warp_stats, &g->nwarps, &idle_exit,
				 &g->trace,    &g->trace_cap,  &g->jobs };

		e = cudaLaunchKernel((const void *)kernel, dim3((unsigned)g->attr.blocks),
				     dim3(32u * (unsigned)g->attr.warps_per_block), args, 0, g->stream);
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "softnic GPU engine: launch: %s\n", cudaGetErrorString(e));
		return EIO;
	}
	g->alive = 1;
	return 0;
}

/* On-demand mode: one engine run until idle, waited for with a limit.
 * Returns the WQEs it executed. */
static int engine_progress(softnic *nic, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;
	softnic_stats before = { 0 }, after = { 0 };
	uint64_t deadline = gic_now_ns() + STOP_DEADLINE_NS;
	cudaError_t e;

	engine_add_stats(nic, &before, g);
	if (engine_launch(nic, g, 2))
		return 0;
	while ((e = cudaStreamQuery(g->stream)) == cudaErrorNotReady) {
		if (gic_now_ns() > deadline) {
			record_cuda_error(g, "on-demand run did not end within 5 s", e);
			return 0;
		}
		gic_cpu_relax();
	}
	g->alive = 0;
	if (e != cudaSuccess) {
		record_cuda_error(g, "engine kernel", e);
		return 0;
	}
	engine_add_stats(nic, &after, g);
	return (int)(after.wqes_executed - before.wqes_executed);
}

softnic *softnic_open_gpu(const softnic_attr *attr, const softnic_gpu_attr *gattr)
{
	softnic_attr a = attr ? *attr : softnic_attr{};
	gpu_engine *g;
	softnic_backend be;
	softnic *nic;
	int rc;

	if (!gattr || gattr->blocks < 1 || gattr->warps_per_block < 1 ||
	    gattr->warps_per_block > 32 || a.engine_threads || gattr->engine_sms < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (gattr->batch_wqes && gattr->batch_wqes != 32 && gattr->batch_wqes != 64 &&
	    gattr->batch_wqes != 96) {
		fprintf(stderr, "softnic GPU engine: batch_wqes %d: 32 (0), 64 or 96 WQEs per batch\n",
			gattr->batch_wqes);
		errno = EINVAL;
		return NULL;
	}
	g = (gpu_engine *)calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->attr = *gattr;
	pthread_mutex_init(&g->lock, NULL);
	rc = engine_prepare(g);
	if (rc) {
		engine_release(g);
		errno = rc;
		return NULL;
	}
	g->queue_alloc.alloc = queue_alloc;
	g->queue_alloc.free = queue_free;
	g->queue_alloc.prepared = queue_prepared;
	g->queue_alloc.ctx = g;
	if (!a.queue_mem)
		a.queue_mem = &g->queue_alloc;
	be.state_alloc = state_alloc;
	be.state_free = state_free;
	be.stop = engine_stop;
	be.add_stats = engine_add_stats;
	be.release = engine_release;
	be.progress = gattr->on_demand ? engine_progress : NULL;
	be.ctx = g;
	nic = softnic_open_backend(&a, &be);
	if (!nic) {
		rc = errno;
		engine_release(g);
		errno = rc;
		return NULL;
	}
	/* GPU-resident queues: submitters and CQ consumers are this GPU's
	 * threads, so the engine synchronizes with them at GPU scope (unless
	 * host threads post too). */
	nic->shared->gpu_scope = !gattr->queues_on_host && !gattr->on_demand &&
				 !gattr->host_submitters;
	rc = gattr->on_demand ? 0 : engine_launch(nic, g, 0);
	if (rc) {
		softnic_close(nic);
		errno = rc;
		return NULL;
	}
	return nic;
}

int softnic_gpu_engine_alive(const softnic *nic)
{
	gpu_engine *g = (gpu_engine *)nic->backend.ctx;
	cudaError_t e;

	if (!g || !g->alive)
		return 0;
	e = cudaStreamQuery(g->stream);
	if (e != cudaErrorNotReady) {
		record_cuda_error(g, "engine kernel ended", e);
		return 0;
	}
	return 1;
}

struct CUstream_st *softnic_gpu_caller_stream(const softnic *nic)
{
	gpu_engine *g = nic && nic->backend.release == engine_release
				? (gpu_engine *)nic->backend.ctx : NULL;

	return g && g->green.on ? g->green.caller_stream : NULL;
}

int softnic_gpu_engine_device(const softnic *nic)
{
	gpu_engine *g = nic && nic->backend.release == engine_release
				? (gpu_engine *)nic->backend.ctx : NULL;

	return g ? g->attr.device : -1;
}

int softnic_gpu_batch_wqes(const softnic *nic)
{
	gpu_engine *g = nic && nic->backend.release == engine_release
				? (gpu_engine *)nic->backend.ctx : NULL;
	int major = 0;

	if (!g)
		return 0;
	if (g->attr.batch_wqes != 64 && g->attr.batch_wqes != 96)
		return 32;
	/* The kernel's clamp (SNX_GPU_BATCH_WIDE_MAX): one per lane from sm_100 on. */
	cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, g->attr.device);
	return major >= 10 ? 32 : g->attr.batch_wqes;
}

int softnic_gpu_placement_get(const softnic *nic, softnic_gpu_placement *p)
{
	gpu_engine *g = nic && nic->backend.release == engine_release
				? (gpu_engine *)nic->backend.ctx : NULL;

	memset(p, 0, sizeof(*p));
	if (!g)
		return EINVAL;
	if (g->green.on) {
		*p = g->green.pl;
		return 0;
	}
	cudaDeviceGetAttribute(&p->device_sms, cudaDevAttrMultiProcessorCount, g->attr.device);
	return 0;
}

const char *softnic_gpu_engine_error(const softnic *nic)
{
	gpu_engine *g = (gpu_engine *)nic->backend.ctx;

	return g ? g->error : "not a GPU-engine softnic";
}

int softnic_gpu_trace_read(const softnic *nic, softnic_gpu_trace_rec *out, size_t max, size_t *n)
{
	gpu_engine *g = nic ? (gpu_engine *)nic->backend.ctx : NULL;
	size_t total, got = 0;
	softnic_gpu_trace_rec *all;
	cudaError_t e;

	*n = 0;
	if (!g || !g->trace)
		return ENOTSUP;
	total = (size_t)g->trace_cap * (size_t)g->nwarps;
	all = (softnic_gpu_trace_rec *)malloc(sizeof(*all) * total);
	if (!all)
		return ENOMEM;
	/* copy_stream never waits for the engine kernel. */
	e = cudaMemcpyAsync(all, g->trace, sizeof(*all) * total, cudaMemcpyDeviceToHost,
			    g->copy_stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(g->copy_stream);
	if (e != cudaSuccess) {
		free(all);
		return EIO;
	}
	for (size_t i = 0; i < total && got < max; i++)
		if (all[i].step)
			out[got++] = all[i];
	free(all);
	*n = got;
	return 0;
}
