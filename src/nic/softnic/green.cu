/*
 * softnic GPU engine's SM placement: green contexts (green.h).
 *
 * The driver's green-context calls are looked up at run time through the
 * runtime (cudaGetDriverEntryPointByVersion at CUDA 12.5, where
 * cuGreenCtxStreamCreate appeared), so nothing here links libcuda and a
 * driver without them fails only the split, with a message. cuda.h is
 * included for its types only.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "green.h"
#include "gic/port.h" /* gic_now_ns, gic_cpu_relax */

enum { GREEN_API_VERSION = 12050, PROBE_WORDS = 32, PROBE_DEADLINE_NS = 5000000000ull };

typedef CUresult (*fn_device_get)(CUdevice *, int);
typedef CUresult (*fn_dev_resource)(CUdevice, CUdevResource *, CUdevResourceType);
typedef CUresult (*fn_split)(CUdevResource *, unsigned *, const CUdevResource *, CUdevResource *,
			     unsigned, unsigned);
typedef CUresult (*fn_desc)(CUdevResourceDesc *, CUdevResource *, unsigned);
typedef CUresult (*fn_gctx_create)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned);
typedef CUresult (*fn_gctx_destroy)(CUgreenCtx);
typedef CUresult (*fn_gctx_resource)(CUgreenCtx, CUdevResource *, CUdevResourceType);
typedef CUresult (*fn_gctx_stream)(CUstream *, CUgreenCtx, unsigned, int);
typedef CUresult (*fn_stream_destroy)(CUstream);
typedef CUresult (*fn_error_string)(CUresult, const char **);

typedef struct green_api {
	fn_device_get device_get;
	fn_dev_resource dev_resource;
	fn_split split;
	fn_desc desc;
	fn_gctx_create gctx_create;
	fn_gctx_destroy gctx_destroy;
	fn_gctx_resource gctx_resource;
	fn_gctx_stream gctx_stream;
	fn_stream_destroy stream_destroy;
	fn_error_string error_string;
} green_api;

#define GREEN_FAIL(n, ...)                                                          \
	do {                                                                        \
		fprintf(stderr, "softnic GPU engine: engine_sms %d: ", (n));        \
		fprintf(stderr, __VA_ARGS__);                                       \
		fputc('\n', stderr);                                                \
	} while (0)

/* One driver entry point; 0 or ENOTSUP after a message naming it. */
static int lookup(const char *sym, void **fn, int n)
{
	cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	cudaError_t e = cudaGetDriverEntryPointByVersion(sym, fn, GREEN_API_VERSION,
							 cudaEnableDefault, &q);

	if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
		GREEN_FAIL(n, "CUDA green contexts are not available: the driver has no %s "
			   "(%s); the engine cannot get SMs of its own (run without engine_sms "
			   "to share the device's SMs)", sym,
			   e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found");
		cudaGetLastError();
		return ENOTSUP;
	}
	return 0;
}

/* The driver's green-context calls (looked up on every use: cheap, and
 * no state shared between softnics). */
static int api_get(green_api *a, int n)
{
	int drv = 0;

	memset(a, 0, sizeof(*a));
	if (cudaDriverGetVersion(&drv) != cudaSuccess || drv < GREEN_API_VERSION) {
		GREEN_FAIL(n, "CUDA green contexts are not available: the driver supports CUDA "
			   "%d.%d, green contexts with their streams need 12.5 or later (run "
			   "without engine_sms to share the device's SMs)", drv / 1000,
			   drv % 1000 / 10);
		return ENOTSUP;
	}
	if (lookup("cuDeviceGet", (void **)&a->device_get, n) ||
	    lookup("cuDeviceGetDevResource", (void **)&a->dev_resource, n) ||
	    lookup("cuDevSmResourceSplitByCount", (void **)&a->split, n) ||
	    lookup("cuDevResourceGenerateDesc", (void **)&a->desc, n) ||
	    lookup("cuGreenCtxCreate", (void **)&a->gctx_create, n) ||
	    lookup("cuGreenCtxDestroy", (void **)&a->gctx_destroy, n) ||
	    lookup("cuGreenCtxGetDevResource", (void **)&a->gctx_resource, n) ||
	    lookup("cuGreenCtxStreamCreate", (void **)&a->gctx_stream, n) ||
	    lookup("cuStreamDestroy", (void **)&a->stream_destroy, n) ||
	    lookup("cuGetErrorString", (void **)&a->error_string, n))
		return ENOTSUP;
	return 0;
}

static const char *cu_text(const green_api *a, CUresult r)
{
	const char *s = NULL;

	if (!a->error_string || a->error_string(r, &s) != CUDA_SUCCESS || !s)
		return "unknown driver error";
	return s;
}

/* The device's SMs split into a group of at least n and the rest. */
static int split(const green_api *a, int device, int n, CUdevice *dev, CUdevResource *grp,
		 CUdevResource *rest, softnic_gpu_placement *p)
{
	CUdevResource all;
	unsigned groups = 1;
	CUresult r;

	memset(p, 0, sizeof(*p));
	p->engine_sms_asked = n;
	if ((r = a->device_get(dev, device)) != CUDA_SUCCESS) {
		GREEN_FAIL(n, "no CUDA device %d: %s", device, cu_text(a, r));
		return ENODEV;
	}
	memset(&all, 0, sizeof(all));
	if ((r = a->dev_resource(*dev, &all, CU_DEV_RESOURCE_TYPE_SM)) != CUDA_SUCCESS) {
		GREEN_FAIL(n, "device %d's SM resource: %s", device, cu_text(a, r));
		return ENOTSUP;
	}
	p->device_sms = (int)all.sm.smCount;
	p->min_partition = (int)all.sm.minSmPartitionSize;
	p->alignment = (int)all.sm.smCoscheduledAlignment;
	if (n < 1 || n >= p->device_sms) {
		GREEN_FAIL(n, "expected 1..%d (device %d has %d SMs, and the callers need some)",
			   p->device_sms - 1, device, p->device_sms);
		return EINVAL;
	}
	memset(grp, 0, sizeof(*grp));
	memset(rest, 0, sizeof(*rest));
	r = a->split(grp, &groups, &all, rest, 0, (unsigned)n);
	if (r != CUDA_SUCCESS || groups != 1) {
		GREEN_FAIL(n, "the driver cannot split device %d's %d SMs into a group of at least "
			   "%d (groups of %d SMs at least, aligned to %d): %s", device,
			   p->device_sms, n, p->min_partition, p->alignment,
			   r != CUDA_SUCCESS ? cu_text(a, r) : "no group made");
		return EINVAL;
	}
	p->engine_sms = (int)grp->sm.smCount;
	p->caller_sms = (int)rest->sm.smCount;
	if (p->caller_sms < 1) {
		GREEN_FAIL(n, "the engine's group takes all %d SMs of device %d (rounded up to %d): "
			   "none left for the callers", p->device_sms, device, p->engine_sms);
		return EINVAL;
	}
	return 0;
}

int snx_green_split(int device, int engine_sms, softnic_gpu_placement *p)
{
	green_api a;
	CUdevice dev;
	CUdevResource grp, rest;
	int rc;

	memset(p, 0, sizeof(*p));
	p->engine_sms_asked = engine_sms;
	if ((rc = api_get(&a, engine_sms)))
		return rc;
	return split(&a, device, engine_sms, &dev, &grp, &rest, p);
}

int softnic_gpu_sm_split(int device, int engine_sms, softnic_gpu_placement *p)
{
	return snx_green_split(device, engine_sms, p);
}

/* A green context over res and a non-blocking stream in it. */
static int make_ctx(const green_api *a, CUdevice dev, CUdevResource *res, int n, const char *who,
		    CUgreenCtx *ctx, CUstream *stream, int *sms)
{
	CUdevResourceDesc desc;
	CUdevResource got;
	CUresult r;

	if ((r = a->desc(&desc, res, 1)) != CUDA_SUCCESS ||
	    (r = a->gctx_create(ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS) {
		GREEN_FAIL(n, "the %s green context: %s", who, cu_text(a, r));
		*ctx = NULL;
		return ENOTSUP;
	}
	memset(&got, 0, sizeof(got));
	if ((r = a->gctx_resource(*ctx, &got, CU_DEV_RESOURCE_TYPE_SM)) != CUDA_SUCCESS ||
	    (r = a->gctx_stream(stream, *ctx, CU_STREAM_NON_BLOCKING, 0)) != CUDA_SUCCESS) {
		GREEN_FAIL(n, "the %s green context's SMs or stream: %s", who, cu_text(a, r));
		*stream = NULL;
		return EIO;
	}
	*sms = (int)got.sm.smCount;
	return 0;
}

int snx_green_open(snx_green *gr, int device, int engine_sms)
{
	green_api a;
	CUdevice dev;
	CUdevResource grp, rest;
	CUgreenCtx ectx = NULL, cctx = NULL;
	CUstream es = NULL, cs = NULL;
	int rc;

	memset(gr, 0, sizeof(*gr));
	if ((rc = api_get(&a, engine_sms)) ||
	    (rc = split(&a, device, engine_sms, &dev, &grp, &rest, &gr->pl)))
		return rc;
	rc = make_ctx(&a, dev, &grp, engine_sms, "engine's", &ectx, &es, &gr->pl.engine_sms);
	if (!rc)
		rc = make_ctx(&a, dev, &rest, engine_sms, "callers'", &cctx, &cs,
			      &gr->pl.caller_sms);
	gr->engine_ctx = ectx;
	gr->caller_ctx = cctx;
	gr->engine_stream = (cudaStream_t)es;
	gr->caller_stream = (cudaStream_t)cs;
	gr->on = 1;
	if (rc) {
		snx_green_close(gr);
		return rc;
	}
	return 0;
}

void snx_green_close(snx_green *gr)
{
	green_api a;

	if (!gr->on)
		return;
	gr->on = 0;
	if (api_get(&a, gr->pl.engine_sms_asked))
		return; /* it worked at open */
	if (gr->engine_stream)
		a.stream_destroy((CUstream)gr->engine_stream);
	if (gr->caller_stream)
		a.stream_destroy((CUstream)gr->caller_stream);
	if (gr->engine_ctx)
		a.gctx_destroy((CUgreenCtx)gr->engine_ctx);
	if (gr->caller_ctx)
		a.gctx_destroy((CUgreenCtx)gr->caller_ctx);
	gr->engine_stream = gr->caller_stream = NULL;
	gr->engine_ctx = gr->caller_ctx = NULL;
}

/* ------------------------------------------------------------------ */
/* The probe. */

static __device__ __forceinline__ uint64_t probe_now(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Each block marks its SM, then holds it for spin_ns (bounded), so that
 * the blocks of one launch spread over every SM the stream may use. */
__global__ void snx_green_probe_kernel(unsigned *bits, uint64_t spin_ns)
{
	unsigned smid;
	uint64_t t0 = probe_now();

	asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
	if (threadIdx.x == 0)
		atomicOr(&bits[(smid >> 5) % PROBE_WORDS], 1u << (smid & 31));
	while (probe_now() - t0 < spin_ns)
		;
}

static int probe_wait(cudaStream_t s, const char *who, int n)
{
	uint64_t deadline = gic_now_ns() + PROBE_DEADLINE_NS;
	cudaError_t e;

	while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) {
		if (gic_now_ns() > deadline) {
			GREEN_FAIL(n, "the SM probe on the %s stream did not end within 5 s", who);
			return EIO;
		}
		gic_cpu_relax();
	}
	if (e != cudaSuccess) {
		GREEN_FAIL(n, "the SM probe on the %s stream (memory of the primary context, "
			   "used from a green context): %s", who, cudaGetErrorString(e));
		return EIO;
	}
	return 0;
}

static int popcount_words(const unsigned *w)
{
	int c = 0;

	for (int i = 0; i < PROBE_WORDS; i++)
		c += __builtin_popcount(w[i]);
	return c;
}

int snx_green_probe(snx_green *gr, unsigned *bitmap)
{
	int n = gr->pl.engine_sms_asked, blocks = 4 * gr->pl.device_sms, rc;
	unsigned *eb = bitmap, *cb = bitmap + PROBE_WORDS;
	cudaError_t e;

	snx_green_probe_kernel<<<blocks, 128, 0, gr->engine_stream>>>(eb, 20000);
	if ((e = cudaGetLastError()) == cudaSuccess)
		snx_green_probe_kernel<<<blocks, 128, 0, gr->caller_stream>>>(cb, 20000);
	if (e != cudaSuccess || (e = cudaGetLastError()) != cudaSuccess) {
		GREEN_FAIL(n, "the SM probe's launch in a green context: %s", cudaGetErrorString(e));
		return EIO;
	}
	if ((rc = probe_wait(gr->engine_stream, "engine's", n)) ||
	    (rc = probe_wait(gr->caller_stream, "callers'", n)))
		return rc;
	gr->pl.engine_seen = popcount_words(eb);
	gr->pl.caller_seen = popcount_words(cb);
	{
		unsigned both[PROBE_WORDS];

		for (int i = 0; i < PROBE_WORDS; i++)
			both[i] = eb[i] & cb[i];
		gr->pl.overlap_seen = popcount_words(both);
	}
	if (gr->pl.overlap_seen || gr->pl.engine_seen > gr->pl.engine_sms ||
	    gr->pl.caller_seen > gr->pl.caller_sms)
		fprintf(stderr, "softnic GPU engine: engine_sms %d: the SM probe saw %d SMs on the "
			"engine's stream (%d given), %d on the callers' (%d given), %d on both: "
			"the split does not hold here (MPS, or a module with dynamic "
			"parallelism?)\n", n, gr->pl.engine_seen, gr->pl.engine_sms,
			gr->pl.caller_seen, gr->pl.caller_sms, gr->pl.overlap_seen);
	return 0;
}
