/*
 * The CUDA part of GPU memory behind the CPU engine (gic/softnic_devmem.h,
 * devmem.h): the engine's copies to and from GPU memory and its atomics on
 * GPU memory, on a non-blocking stream of the part's own, each waited for
 * with a time limit. Runtime API only, so that a library with CUDA's
 * static runtime inside (the emulated libibverbs) still loads where there
 * is no GPU driver.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/softnic_devmem.h"
#include "softnic_internal.h"
#include "engine_core.h"
#include "devmem.h"

#define PART_WAIT_NS 10000000000ull /* one copy or atomic: 10 s */

typedef struct cuda_part {
	int device;
	cudaStream_t stream;     /* non-blocking: never waits for others' kernels */
	unsigned long long *old; /* pinned: the atomic kernel's fetched value and status */
	pthread_mutex_t lock;    /* stream and old: one engine thread at a time */
} cuda_part;

/* One atomic as the engine runs it (snx_atomic_run), at system scope: the
 * region's owner may watch the target from its GPU or from the host.
 * out[0]: the old value; out[1]: 0 or a vendor syndrome. */
static __global__ void part_atomic_kernel(devmem_atomic a, void *t, unsigned long long *out)
{
	softnic_wqe w;
	uint64_t old = 0;

	w.opcode = a.opcode;
	w.atomic_size = a.size;
	w.atomic_add = a.add;
	w.atomic_cmp = a.cmp;
	w.atomic_swap_mask = a.swap_mask;
	w.atomic_cmp_mask = a.cmp_mask;
	out[1] = (unsigned long long)snx_atomic_run(&w, t, &old);
	out[0] = old;
}

static int cuda_why(cudaError_t e, const char *call, char *why, size_t len)
{
	snprintf(why, len, "%s: %s", call, cudaGetErrorString(e));
	return e == cudaErrorNotSupported ? ENOTSUP : EIO;
}

/* Waits for the part's stream, at most PART_WAIT_NS. */
static int part_wait(cuda_part *c, char *why, size_t len)
{
	uint64_t deadline = gic_now_ns() + PART_WAIT_NS;
	cudaError_t e;

	while ((e = cudaStreamQuery(c->stream)) == cudaErrorNotReady) {
		if (gic_now_ns() > deadline) {
			snprintf(why, len, "CUDA work on GPU %d did not finish within %llu s",
				 c->device, (unsigned long long)(PART_WAIT_NS / 1000000000ull));
			return ETIMEDOUT;
		}
		sched_yield();
	}
	return e == cudaSuccess ? 0 : cuda_why(e, "cudaStreamQuery", why, len);
}

static int part_move(void *ctx, const devmem_seg *seg, int n, char *why, size_t len)
{
	cuda_part *c = (cuda_part *)ctx;
	cudaError_t e;
	int rc;

	pthread_mutex_lock(&c->lock);
	e = cudaSetDevice(c->device); /* engine threads start on device 0 */
	for (int i = 0; i < n && e == cudaSuccess; i++)
		e = cudaMemcpyAsync(seg[i].dst, seg[i].src, seg[i].len, cudaMemcpyDefault,
				    c->stream);
	rc = e == cudaSuccess ? part_wait(c, why, len) : cuda_why(e, "cudaMemcpyAsync", why, len);
	if (e != cudaSuccess)
		cudaGetLastError(); /* not sticky: clear it for the next call */
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int part_atomic(void *ctx, const devmem_atomic *a, void *t, uint64_t *old, char *why,
		       size_t len)
{
	cuda_part *c = (cuda_part *)ctx;
	cudaError_t e;
	int rc;

	pthread_mutex_lock(&c->lock);
	e = cudaSetDevice(c->device);
	if (e == cudaSuccess) {
		part_atomic_kernel<<<1, 1, 0, c->stream>>>(*a, t, c->old);
		e = cudaGetLastError();
	}
	rc = e == cudaSuccess ? part_wait(c, why, len) : cuda_why(e, "atomic kernel launch", why, len);
	/* The kernel's writes are complete: its stream is done. */
	if (!rc && c->old[1]) {
		snprintf(why, len, "%s", softnic_vsynd_text((uint8_t)c->old[1]));
		rc = EBUSY;
	}
	if (!rc)
		*old = c->old[0];
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void part_free(cuda_part *c)
{
	cudaSetDevice(c->device);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	if (c->old)
		cudaFreeHost(c->old);
	cudaGetLastError();
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void part_release(void *ctx)
{
	part_free((cuda_part *)ctx);
}

static const devmem_ops part_ops = { part_move, part_atomic, part_release };

/* Records and prints an enable failure; returns rc. */
static int part_fail(softnic *nic, int rc, const char *what, cudaError_t e)
{
	softnic_set_error(nic, "cuda_devmem_enable: %s%s%s", what, e != cudaSuccess ? ": " : "",
			  e != cudaSuccess ? cudaGetErrorString(e) : "");
	fprintf(stderr, "softnic (GPU memory): %s\n", softnic_last_error(nic));
	cudaGetLastError();
	return rc;
}

/* The part's stream, pinned words and kernel, on the current device. */
static int part_setup(softnic *nic, cuda_part *c)
{
	cudaFuncAttributes fa;
	cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);

	if (e == cudaSuccess)
		e = cudaHostAlloc((void **)&c->old, 2 * sizeof(*c->old),
				  cudaHostAllocPortable | cudaHostAllocMapped);
	/* Loaded now: a lazy load while a kernel of the program spins waiting
	 * for this engine could never happen. */
	if (e == cudaSuccess)
		e = cudaFuncGetAttributes(&fa, part_atomic_kernel);
	return e == cudaSuccess ? 0 : part_fail(nic, EIO, "stream, pinned words or kernel", e);
}

extern "C" int softnic_cuda_devmem_enable(softnic *nic, int device)
{
	cuda_part *c;
	int n = 0, prev = 0, rc;

	if (!nic)
		return EINVAL;
	if (softnic_devmem_enabled(nic))
		return part_fail(nic, EINVAL, "enabled already", cudaSuccess);
	if (cudaGetDeviceCount(&n) != cudaSuccess || device < 0 || device >= n) {
		softnic_set_error(nic, "cuda_devmem_enable: device %d, and this process sees %d GPUs",
				  device, n);
		fprintf(stderr, "softnic (GPU memory): %s\n", softnic_last_error(nic));
		cudaGetLastError();
		return EINVAL;
	}
	c = (cuda_part *)calloc(1, sizeof(*c));
	if (!c)
		return ENOMEM;
	c->device = device;
	pthread_mutex_init(&c->lock, NULL);
	cudaGetDevice(&prev);
	rc = cudaSetDevice(device) == cudaSuccess ? part_setup(nic, c) :
		part_fail(nic, EIO, "cudaSetDevice", cudaGetLastError());
	if (!rc && softnic_devmem_attach(nic, &part_ops, c))
		rc = part_fail(nic, EINVAL, "a GPU-engine softnic, or enabled already", cudaSuccess);
	if (rc)
		part_free(c);
	cudaSetDevice(prev);
	return rc;
}
