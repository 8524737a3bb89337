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
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/softnic_gpu.h"
#include "softnic_internal.h"
#include "engine_core.h"

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
	softnic_stats *warp_stats; /* one per warp, from the state arena */
	int nwarps;
	int alive;
	char error[256];
	softnic_allocator queue_alloc;
	pthread_mutex_t lock; /* the arenas */
	arena state, queues;
} gpu_engine;

/* ------------------------------------------------------------------ */
/* The kernel. */

#define FULL_WARP 0xffffffffu

/* Lane l (< n) checks the WQE of nbb BBs at pos, already copied into buf:
 * an RDMA write of nbb BBs that decodes and resolves. Fills *w, src, *dst
 * (an inline payload stays in buf). Returns 1 when it qualifies. */
static __device__ int lane_prepare(snx_pass *p, snx_qp *qp, uint64_t pos, uint32_t nbb,
				   softnic_wqe *w, uint8_t *src[SOFTNIC_MAX_SGE], uint8_t **dst,
				   uint8_t *buf)
{
	uint8_t vs;

	if (gic_wqe_bb_count(((const gic_ctrl_seg *)buf)->qpn_ds_be) != nbb)
		return 0;
	if (snx_decode_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, w, &vs) ||
	    w->opcode != GIC_OPCODE_RDMA_WRITE)
		return 0;
	if (p->sh->strict && w->wqe_index != (uint16_t)pos)
		return 0;
	/* warp_progress batches only QPs whose peer grants REMOTE_WRITE. */
	return snx_prepare_write_in(p, qp, w, src, dst, &vs, 0) == 0;
}

/* 1 when lane's [lo, hi) overlaps another active lane's (all lanes call). */
static __device__ int lanes_overlap(uint64_t lo, uint64_t hi, int n, int lane)
{
	int clash = 0;

	for (int j = 0; j < n; j++) {
		uint64_t jl = __shfl_sync(FULL_WARP, lo, j), jh = __shfl_sync(FULL_WARP, hi, j);

		if (j != lane && lane < n && lo < jh && jl < hi)
			clash = 1;
	}
	return __any_sync(FULL_WARP, clash);
}

enum { WARP_COPY_MIN = 256 }; /* bytes from which a payload is moved by the whole warp */

/* The whole warp copies len bytes: 16-byte units, four in flight per lane
 * (2 KiB per step), when both ends are 16-byte aligned; bytes otherwise
 * and for the tail. All lanes call it with the same arguments. */
static __device__ void warp_copy(uint8_t *d, const uint8_t *s, uint64_t len, int lane)
{
	uint64_t i = 0;

	if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
		for (; i + 2048 <= len; i += 2048) {
			uint4 v[4];

#pragma unroll
			for (int k = 0; k < 4; k++)
				v[k] = *(const uint4 *)(s + i + k * 512 + lane * 16);
#pragma unroll
			for (int k = 0; k < 4; k++)
				*(uint4 *)(d + i + k * 512 + lane * 16) = v[k];
		}
		for (; i + 512 <= len; i += 512)
			*(uint4 *)(d + i + lane * 16) = *(const uint4 *)(s + i + lane * 16);
	}
	for (uint64_t j = i + (uint64_t)lane; j < len; j += 32)
		d[j] = s[j];
}

/* Moves the batch's payloads: each lane its own small one; the large
 * pointer writes one after another, each by the whole warp. */
static __device__ void warp_move(const softnic_wqe *w, uint8_t *const src[SOFTNIC_MAX_SGE],
				 uint8_t *dst, int n, int lane)
{
	int big = lane < n && w->inline_len == 0 && w->total_len >= WARP_COPY_MIN;
	unsigned bigmask = __ballot_sync(FULL_WARP, big);

	if (lane < n && !big)
		snx_move_write(w, src, dst);
	while (bigmask) {
		int l = __ffs(bigmask) - 1;
		uint32_t nsge = __shfl_sync(FULL_WARP, w->num_sge, l);
		uint8_t *d = (uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)dst, l);

		bigmask &= bigmask - 1;
		for (uint32_t i = 0; i < nsge && i < SOFTNIC_MAX_SGE; i++) {
			const uint8_t *sp =
				(const uint8_t *)__shfl_sync(FULL_WARP, (unsigned long long)src[i], l);
			uint32_t len = __shfl_sync(FULL_WARP, w->sge[i].len, l);

			warp_copy(d, sp, len, lane);
			d += len;
		}
	}
}

/* Runs up to 32 WQEs of the left BBs at cons one per lane, when all are
 * RDMA writes of as many BBs as the first (nbb), each checks out, no two
 * destinations overlap (so order cannot show) and the send CQ has slots
 * for the signaled ones; WQE l starts at cons + l * nbb, which each lane
 * proves for the next by finding nbb in its own ctrl segment. Returns the
 * WQEs run, or 0 when lane 0 must take them one at a time instead. All
 * lanes call it. */
static __device__ int warp_batch(snx_pass *p, snx_qp *qp, uint64_t cons, uint64_t left, int lane)
{
	uint8_t buf[GIC_WQE_MAX_BB * GIC_SEND_WQE_BB];
	uint8_t *src[SOFTNIC_MAX_SGE], *dst = NULL;
	softnic_wqe w;
	int ok = 1, sig = 0, got = 1, n = left < 32 ? (int)left : 32;
	uint64_t lo = 0, hi = 0;
	uint32_t nbb;
	unsigned sigmask;

	/* One BB per lane first (the common case costs one round trip); the
	 * first WQE's ctrl segment says how many BBs the batch's WQEs take. */
	if (lane < n)
		snx_copy_wqe(qp, cons + lane, 1, buf);
	nbb = __shfl_sync(FULL_WARP,
			  lane ? 1 : gic_wqe_bb_count(((const gic_ctrl_seg *)buf)->qpn_ds_be), 0);
	if (nbb > 1) { /* multi-BB WQEs (inline payloads): copy each lane's whole WQE */
		uint64_t fit = left / nbb;

		n = fit < 32 ? (int)fit : 32;
		if (n == 0)
			return 0;
		if (lane < n)
			snx_copy_wqe(qp, cons + (uint64_t)lane * nbb, nbb, buf);
	}
	if (lane < n) {
		ok = lane_prepare(p, qp, cons + (uint64_t)lane * nbb, nbb, &w, src, &dst, buf);
		sig = ok && (w.fm_ce_se & GIC_CTRL_CQ_UPDATE);
		lo = (uint64_t)dst;
		hi = ok && dst ? lo + w.total_len : lo;
	}
	if (!__all_sync(FULL_WARP, ok) || lanes_overlap(lo, hi, n, lane))
		return 0;
	sigmask = __ballot_sync(FULL_WARP, sig);
	/* With signaled WQEs, lane 0 holds the CQ lock from the claim to the
	 * last CQE: one lock round trip per batch. */
	if (lane == 0 && sigmask) {
		snx_cq_lock(qp->send_cq);
		got = snx_cq_claim_locked(p->sh, qp->send_cq, __popc(sigmask));
		if (!got)
			snx_cq_unlock(qp->send_cq);
	}
	if (!__shfl_sync(FULL_WARP, got, 0))
		return 0;
	warp_move(&w, src, dst, n, lane);
	/* Orders every lane's data writes before lane 0's CQE releases. */
	__syncwarp(FULL_WARP);
	for (int l = 0; l < n; l++) {
		uint32_t len = __shfl_sync(FULL_WARP, (uint32_t)w.total_len, l);
		snx_cqe_fields f;

		if (lane || !(sigmask >> l & 1))
			continue;
		memset(&f, 0, sizeof(f));
		f.cqe_opcode = GIC_CQE_REQ;
		f.wqe_opcode = GIC_OPCODE_RDMA_WRITE;
		f.wqe_counter = (uint16_t)(cons + (uint64_t)l * nbb);
		f.qpn = qp->qpn;
		f.byte_cnt = len;
		snx_cq_write_locked(p->sh, qp->send_cq, &f, &p->st);
	}
	if (lane == 0 && sigmask)
		snx_cq_unlock(qp->send_cq);
	if (lane == 0) {
		qp->cons = cons + (uint64_t)n * nbb;
		p->st.wqes_executed += n;
	}
	return n;
}

/* Executes what the QP's doorbell announced with the whole warp: batches
 * run one WQE per lane (warp_batch: WQEs of one size, one BB or more);
 * anything else runs on lane 0 through the serial core, which keeps every
 * semantic of the CPU engine. Lane 0's pass holds the state; the other
 * lanes' passes only cache MRs. */
static __device__ int warp_progress(snx_pass &p, snx_qp *qp, softnic_stats *st, int lane)
{
	int active = 0, done = 0;
	uint32_t epoch;

	if (lane == 0)
		active = snx_pass_begin(&p, qp);
	if (!__shfl_sync(FULL_WARP, active, 0))
		return 0;
	/* The other lanes follow lane 0's view of the epoch and the link. */
	epoch = __shfl_sync(FULL_WARP, p.mr_epoch, 0);
	if (lane && epoch != p.mr_epoch) {
		p.mr_epoch = epoch;
		p.remote.key = 0;
		p.local.key = 0;
	}
	p.link = __shfl_sync(FULL_WARP, p.link, 0);
	p.peer_rights = __shfl_sync(FULL_WARP, p.peer_rights, 0);
	for (;;) {
		uint64_t cons = __shfl_sync(FULL_WARP, lane ? 0 : qp->cons, 0);
		uint64_t left = __shfl_sync(FULL_WARP, lane ? 0 : qp->target - qp->cons, 0);
		int healthy = __shfl_sync(FULL_WARP, lane ? 0 : !qp->in_error && !qp->pending_synd, 0);
		int k = 0;

		if (!left)
			break;
		if (healthy && p.link == SNX_QP_CONNECTED &&
		    (p.peer_rights & SOFTNIC_ACCESS_REMOTE_WRITE))
			k = warp_batch(&p, qp, cons, left, lane);
		if (!k)
			k = __shfl_sync(FULL_WARP, lane ? 0 : snx_step(&p, qp), 0);
		if (!k)
			break; /* a CQ is full: come back on a later scan */
		done += k;
	}
	if (lane == 0)
		snx_pass_end(&p, qp, st);
	return done;
}

/* Lane 0 reads the QP table: relaxed loads, with an acquire fence each
 * time the host's table generation moved (the host publishes a QP's
 * fields, then its slot, then the generation). */
static __device__ uint32_t table_scan_begin(snx_shared *sh, uint32_t *gen_seen, int lane)
{
	uint32_t n = 0;

	if (lane == 0) {
		uint32_t gen = gic_ld_relaxed_u32(&sh->table_gen);

		if (gen != *gen_seen) {
			gic_fence_acquire_sys(); /* orders the reads below after gen */
			*gen_seen = gen;
		}
		n = gic_ld_relaxed_u32(&sh->nqp_slots);
	}
	return __shfl_sync(FULL_WARP, n, 0);
}

/* idle_exit > 0: the warp leaves after that many consecutive passes with
 * no work (on-demand mode); 0: it runs until stop. */
__global__ void snx_gpu_engine_kernel(snx_shared *sh, softnic_stats *warp_stats, int nwarps,
				      int idle_exit)
{
	int idle = 0;
	int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
	int lane = threadIdx.x & 31;
	softnic_stats *st = &warp_stats[warp];
	uint32_t gen_seen = ~0u;
	snx_pass p; /* kept for the kernel's life: its MR caches persist */

	snx_pass_init(&p, sh);
	/* A service loop, not a wait: it ends when softnic_close() sets stop. */
	while (!__shfl_sync(FULL_WARP, lane ? 0 : gic_ld_relaxed_u32(&sh->stop), 0)) {
		uint32_t n = table_scan_begin(sh, &gen_seen, lane);
		int done = 0;

		for (uint32_t i = (uint32_t)warp; i < n; i += (uint32_t)nwarps) {
			uint64_t q = __shfl_sync(FULL_WARP,
						 lane ? 0 : gic_ld_relaxed_u64((uint64_t *)&sh->qps[i]), 0);

			if (q)
				done += warp_progress(p, (snx_qp *)q, st, lane);
		}
		idle = done ? 0 : idle + 1;
		if (idle_exit && idle >= idle_exit)
			break;
		if (!done)
			__nanosleep(64);
	}
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

	(void)nic;
	for (int w = 0; w < g->nwarps; w++)
		softnic_stats_add(sum, &g->warp_stats[w]);
}

/* After softnic_close() released every object: return the arenas. */
static void engine_release(void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	arena_close(&g->state);
	arena_close(&g->queues);
	if (g->stream)
		cudaStreamDestroy(g->stream);
	if (g->copy_stream)
		cudaStreamDestroy(g->copy_stream);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

/* ------------------------------------------------------------------ */
/* Opening. */

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
	    cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&g->copy_stream, cudaStreamNonBlocking) != cudaSuccess)
		return ENODEV;
	size_t bytes = g->attr.arena_bytes ? g->attr.arena_bytes : (size_t)256 << 20;

	g->nwarps = g->attr.blocks * g->attr.warps_per_block;
	if (arena_open(&g->state, bytes, 0, g->attr.device, g->copy_stream) ||
	    arena_open(&g->queues, bytes, g->attr.queues_on_host, g->attr.device, g->copy_stream))
		return ENOMEM;
	g->warp_stats = (softnic_stats *)arena_alloc(g, &g->state,
						     sizeof(softnic_stats) * g->nwarps, 64);
	return g->warp_stats ? 0 : ENOMEM;
}

static int engine_launch(softnic *nic, gpu_engine *g, int idle_exit)
{
	cudaFuncAttributes fa;
	cudaError_t e = cudaFuncGetAttributes(&fa, snx_gpu_engine_kernel); /* load it now */

	if (e == cudaSuccess) {
		snx_gpu_engine_kernel<<<g->attr.blocks, 32 * g->attr.warps_per_block, 0, g->stream>>>(
			nic->shared, g->warp_stats, g->nwarps, idle_exit);
		e = cudaGetLastError();
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
	    gattr->warps_per_block > 32 || a.engine_threads) {
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

const char *softnic_gpu_engine_error(const softnic *nic)
{
	gpu_engine *g = (gpu_engine *)nic->backend.ctx;

	return g ? g->error : "not a GPU-engine softnic";
}
