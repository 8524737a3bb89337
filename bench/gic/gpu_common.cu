/*
 * bench/gic/gpu_common.cu - what every GPU mode of `gic` shares: finding
 * the GPU and measuring its SM clock (gic_gpu_available), and the helpers
 * of gpu_common.h.
 */
#include "gpu_common.h"

#include <errno.h>
#include <unistd.h>

int gic_gpu_available(char *name, size_t len, double *sm_mhz, int device)
{
	cudaDeviceProp prop;
	int n = 0;

	/* docs/DESIGN.md §4.5: under lazy loading a kernel launched while a persistent
	 * engine spins can never load; every GPU mode runs one, so EAGER
	 * overrides what the environment says. */
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		cudaGetLastError();
		return ENODEV;
	}
	if (device < 0 || device >= n)
		return ENODEV;
	if (cudaSetDevice(device) != cudaSuccess || cudaSetDeviceFlags(cudaDeviceMapHost) != cudaSuccess ||
	    cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
		cudaGetLastError();
		return ENODEV;
	}
	snprintf(name, len, "%s", prop.name);
	*sm_mhz = gpu_sm_clock_mhz(0);
	return 0;
}

/* As gpu_env.cu's clock kernel: 20 ms of clock64 against globaltimer. */
static __global__ void gic_sm_clock_kernel(double *mhz)
{
	unsigned long long t0 = gic_now_ns();
	long long c0 = clock64();

	while (gic_now_ns() - t0 < 20000000ull)
		;
	*mhz = (double)(clock64() - c0) / (double)(gic_now_ns() - t0) * 1e3;
}

int gic_gpu_sm_clock(int device, double *mhz)
{
	static double *d, *h; /* allocated once, kept to the end of the process; h is
			       * pinned, so that the copy does not wait unbounded */
	cudaStream_t s;
	cudaError_t e = cudaSetDevice(device);
	int rc;

	*mhz = 0;
	if (e == cudaSuccess && !d)
		e = cudaMalloc(&d, sizeof(double));
	if (e == cudaSuccess && !h)
		e = cudaMallocHost(&h, sizeof(double));
	if (e != cudaSuccess) {
		fprintf(stderr, "gic: SM clock: %s\n", cudaGetErrorString(e));
		cudaGetLastError();
		return EIO;
	}
	if ((e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) != cudaSuccess) {
		fprintf(stderr, "gic: SM clock: %s\n", cudaGetErrorString(e));
		return EIO;
	}
	gic_sm_clock_kernel<<<1, 1, 0, s>>>(d);
	e = cudaMemcpyAsync(h, d, sizeof(double), cudaMemcpyDeviceToHost, s);
	if (e == cudaSuccess && (rc = gpu_stream_wait(s, "gic: SM clock (a 20 ms kernel)", 2.0))) {
		if (rc == EIO)
			cudaGetLastError(); /* said; not left for the next CUDA call */
		return rc; /* the stream is left as it is */
	}
	cudaStreamDestroy(s);
	if (e != cudaSuccess) {
		fprintf(stderr, "gic: SM clock: %s\n", cudaGetErrorString(e));
		cudaGetLastError();
		return EIO;
	}
	*mhz = *h;
	return 0;
}

void gpu_samples_emit(gic_sink *sink, gic_result *r, const double *v, int n, int warmup)
{
	gic_result_set_values(r, v, (size_t)n, (size_t)warmup);
	gic_emit(sink, r);
}

const char *gpu_transport_name(const gic_opts *o, int gpu_engine)
{
	return o->provider == GIC_PROV_MLX5 ? gic_transport(o)
	       : gpu_engine		    ? "softnic-gpu"
					    : "softnic-cpu";
}

void gpu_result_transport(gic_result *r, const gic_opts *o, int gpu_engine)
{
	snprintf(r->transport, sizeof(r->transport), "%s", gpu_transport_name(o, gpu_engine));
}

void gpu_env_cfg_nic(gpu_env_cfg *c, const gic_opts *o)
{
	c->provider = o->provider == GIC_PROV_MLX5 ? ENV_PROVIDER_MLX5 : ENV_PROVIDER_SOFTNIC;
	c->nic = o->nic;
	c->engine_sms = c->gpu_engine ? o->engine_sms : 0;
	c->engine_batch = c->gpu_engine && o->engine_batch > 32 ? o->engine_batch : 0;
}

void gpu_result_placement(gic_result *r, const gpu_env *e)
{
	const softnic_gpu_placement *p = &e->placement;

	if (e->cfg.gpu_engine && e->cfg.engine_batch)
		gic_result_param(r, "engine_batch=%d", e->batch_wqes);
	if (!e->cfg.gpu_engine || !p->engine_sms)
		return;
	gic_result_param(r, "placement=green engine_sms=%d caller_sms=%d engine_sms_seen=%d "
			 "caller_sms_seen=%d", p->engine_sms, p->caller_sms, p->engine_seen,
			 p->caller_seen);
}

int gic_gpu_built(void)
{
	return 1;
}

int gic_gpu_placement(const gic_opts *o, gic_run_info *info)
{
	softnic_gpu_placement p;
	int rc;

	info->engine_sms_asked = o->engine_sms;
	if (o->host || !o->gpu_engine || o->provider == GIC_PROV_MLX5) {
		snprintf(info->placement, sizeof(info->placement), "%s", GIC_PLACE_OFF_GPU);
		return 0;
	}
	if (!o->engine_sms) {
		snprintf(info->placement, sizeof(info->placement), "%s", GIC_PLACE_SHARED);
		cudaDeviceGetAttribute(&info->device_sms, cudaDevAttrMultiProcessorCount, o->device);
		return 0;
	}
	if ((rc = softnic_gpu_sm_split(o->device, o->engine_sms, &p))) {
		fprintf(stderr, "gic: --engine-sms %d: cannot place softnic's GPU engine (above)\n",
			o->engine_sms);
		return rc;
	}
	snprintf(info->placement, sizeof(info->placement), "%s", GIC_PLACE_GREEN);
	info->engine_sms = p.engine_sms;
	info->caller_sms = p.caller_sms;
	info->device_sms = p.device_sms;
	info->sm_min_partition = p.min_partition;
	info->sm_alignment = p.alignment;
	return 0;
}

void gpu_proxy_env_nic(proxy_env_cfg *c, const gic_opts *o)
{
	if (o->provider == GIC_PROV_MLX5)
		c->nic_kind = PROXY_NIC_MLX5;
	c->nic = o->nic;
}

int gpu_softnic_only(const gic_opts *o, const char *sub, const char *what)
{
	if (o->provider != GIC_PROV_MLX5)
		return 0;
	fprintf(stderr, "gic %s: %s runs on softnic only (its fixture is softnic's); "
		"skipped with --provider mlx5\n", sub, what);
	return ENOTSUP;
}
