/*
 * softnic GPU engine: a persistent kernel whose warps scan the QP table and
 * run the shared execution core (engine_core.h) on each QP with work. Lane 0
 * of each warp executes; a QP table slot belongs to one warp, which gives
 * per-QP in-order execution without locks.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/softnic_gpu.h"
#include "softnic_internal.h"
#include "engine_core.h"

enum { STOP_DEADLINE_NS = 5000000000ull, MAX_DEFERRED = 1 << 16 };

/* Memory freed while the engine runs is released at close. */
typedef struct deferred {
	void *p;
	int host; /* 1: cudaFreeHost, 0: cudaFree */
} deferred;

typedef struct gpu_engine {
	softnic_gpu_attr attr;
	cudaStream_t stream;
	softnic_stats *warp_stats; /* one per warp, managed memory */
	int nwarps;
	int alive;
	char error[256];
	softnic_allocator queue_alloc;
	pthread_mutex_t lock; /* deferred list */
	deferred *deferred;
	int ndeferred;
} gpu_engine;

/* ------------------------------------------------------------------ */
/* The kernel. */

__global__ void snx_gpu_engine_kernel(snx_shared *sh, softnic_stats *warp_stats, int nwarps)
{
	int warp = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
	softnic_stats *st = &warp_stats[warp];

	if ((threadIdx.x & 31) != 0)
		return;
	/* A service loop, not a wait: it ends when softnic_close() sets stop. */
	while (!gic_ld_acquire_sys_u32(&sh->stop)) {
		uint32_t n = gic_ld_acquire_sys_u32(&sh->nqp_slots);
		int done = 0;

		for (uint32_t i = (uint32_t)warp; i < n; i += (uint32_t)nwarps) {
			/* Acquire pairs with the host's release of the slot. */
			snx_qp *qp = (snx_qp *)gic_ld_acquire_sys_u64((uint64_t *)&sh->qps[i]);

			if (qp)
				done += snx_qp_progress(sh, qp, st);
		}
		if (!done)
			__nanosleep(64);
	}
}

/* ------------------------------------------------------------------ */
/* Memory. */

static void defer_free(gpu_engine *g, void *p, int host)
{
	pthread_mutex_lock(&g->lock);
	if (g->ndeferred < MAX_DEFERRED) {
		g->deferred[g->ndeferred].p = p;
		g->deferred[g->ndeferred].host = host;
		g->ndeferred++;
	}
	pthread_mutex_unlock(&g->lock);
}

static void *managed_alloc(size_t size, int device, int prefer_gpu)
{
	void *p = NULL;

	if (cudaMallocManaged(&p, size, cudaMemAttachGlobal) != cudaSuccess)
		return NULL;
	memset(p, 0, size);
	if (prefer_gpu) {
		cudaMemLocation loc = { cudaMemLocationTypeDevice, device };

		cudaMemAdvise(p, size, cudaMemAdviseSetPreferredLocation, loc);
	}
	return p;
}

static void *state_alloc(size_t size, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	return managed_alloc(size, g->attr.device, 1);
}

static void state_free(void *p, void *ctx)
{
	defer_free((gpu_engine *)ctx, p, 0);
}

static void *queue_alloc(size_t size, size_t align, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;
	void *p = NULL;

	(void)align; /* both allocators return page-aligned memory */
	if (!g->attr.queues_on_host)
		return managed_alloc(size, g->attr.device, 1);
	if (cudaHostAlloc(&p, size, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
		return NULL;
	memset(p, 0, size);
	return p;
}

static void queue_free(void *p, void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	defer_free(g, p, g->attr.queues_on_host);
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
	for (int w = 0; w < g->nwarps; w++) {
		const softnic_stats *st = &g->warp_stats[w];

		sum->wqes_executed += __atomic_load_n(&st->wqes_executed, __ATOMIC_RELAXED);
		sum->cqes_written += __atomic_load_n(&st->cqes_written, __ATOMIC_RELAXED);
		sum->error_cqes += __atomic_load_n(&st->error_cqes, __ATOMIC_RELAXED);
		sum->strict_violations += __atomic_load_n(&st->strict_violations, __ATOMIC_RELAXED);
		sum->cq_full_stalls += __atomic_load_n(&st->cq_full_stalls, __ATOMIC_RELAXED);
	}
}

/* After softnic_close() freed everything: release the deferred memory. */
static void engine_release(void *ctx)
{
	gpu_engine *g = (gpu_engine *)ctx;

	for (int i = 0; i < g->ndeferred; i++) {
		if (g->deferred[i].host)
			cudaFreeHost(g->deferred[i].p);
		else
			cudaFree(g->deferred[i].p);
	}
	cudaFree(g->warp_stats);
	cudaStreamDestroy(g->stream);
	pthread_mutex_destroy(&g->lock);
	free(g->deferred);
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
	    cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess)
		return ENODEV;
	g->nwarps = g->attr.blocks * g->attr.warps_per_block;
	g->warp_stats = (softnic_stats *)managed_alloc(sizeof(softnic_stats) * g->nwarps,
						       g->attr.device, 1);
	g->deferred = (deferred *)calloc(MAX_DEFERRED, sizeof(deferred));
	return g->warp_stats && g->deferred ? 0 : ENOMEM;
}

static int engine_launch(softnic *nic, gpu_engine *g)
{
	cudaFuncAttributes fa;
	cudaError_t e = cudaFuncGetAttributes(&fa, snx_gpu_engine_kernel); /* load it now */

	if (e == cudaSuccess) {
		snx_gpu_engine_kernel<<<g->attr.blocks, 32 * g->attr.warps_per_block, 0, g->stream>>>(
			nic->shared, g->warp_stats, g->nwarps);
		e = cudaGetLastError();
	}
	if (e != cudaSuccess) {
		fprintf(stderr, "softnic GPU engine: launch: %s\n", cudaGetErrorString(e));
		return EIO;
	}
	g->alive = 1;
	return 0;
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
	g->queue_alloc.ctx = g;
	if (!a.queue_mem)
		a.queue_mem = &g->queue_alloc;
	be.state_alloc = state_alloc;
	be.state_free = state_free;
	be.stop = engine_stop;
	be.add_stats = engine_add_stats;
	be.release = engine_release;
	be.ctx = g;
	nic = softnic_open_backend(&a, &be);
	if (!nic) {
		rc = errno;
		engine_release(g);
		errno = rc;
		return NULL;
	}
	rc = engine_launch(nic, g);
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
