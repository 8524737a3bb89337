/*
 * bench/gic/gpu_stubs.c - the GPU entries of a build without them: each
 * returns ENOTSUP. CMake defines GIC_HAVE_GPU_<NAME> for every
 * bench/gic/gpu_<name>.cu it compiles (and GIC_HAVE_GPU_COMMON for
 * gpu_common.cu, which provides gic_gpu_available), so a real entry
 * replaces its stub one file at a time.
 */
#include <errno.h>

#include "exp_conns.h"
#include "exp_kernel.h"
#include "exp_lat.h"
#include "exp_loaded.h"
#include "exp_payload.h"
#include "exp_proxy.h"
#include "exp_rate.h"

#ifndef GIC_HAVE_GPU_COMMON
int gic_gpu_available(char *name, size_t len, double *sm_mhz, int device)
{
	(void)device;
	if (name && len)
		name[0] = '\0';
	if (sm_mhz)
		*sm_mhz = 0;
	return ENOTSUP;
}

int gic_gpu_sm_clock(int device, double *mhz)
{
	(void)device;
	*mhz = 0;
	return ENOTSUP;
}

int gic_gpu_built(void)
{
	return 0;
}

int gic_gpu_placement(const gic_opts *o, gic_run_info *info)
{
	(void)o, (void)info;
	return ENOTSUP;
}
#endif

#ifndef GIC_HAVE_GPU_LAT
int gic_gpu_lat(const gic_opts *o, const lat_state *st, const gic_run_info *info,
		gic_sink *sink)
{
	(void)o, (void)st, (void)info, (void)sink;
	return ENOTSUP;
}
#endif

#ifndef GIC_HAVE_GPU_RATE
int gic_gpu_rate(const gic_opts *o, const rate_state *st, const gic_run_info *info,
		 gic_sink *sink)
{
	(void)o, (void)st, (void)info, (void)sink;
	return ENOTSUP;
}
#endif

#ifndef GIC_HAVE_GPU_PROXY
int gic_gpu_proxy(const gic_opts *o, const proxy_state *st, const gic_run_info *info,
		  gic_sink *sink)
{
	(void)o, (void)st, (void)info, (void)sink;
	return ENOTSUP;
}
#endif

#ifndef GIC_HAVE_GPU_LOADED
int gic_gpu_loaded(const gic_opts *o, const loaded_state *st, const gic_run_info *info,
		   gic_sink *sink)
{
	(void)o, (void)st, (void)info, (void)sink;
	return ENOTSUP;
}
#endif

#ifndef GIC_HAVE_GPU_PAYLOAD
int gic_gpu_payload(const gic_opts *o, const payload_state *st, const gic_run_info *info,
		    gic_sink *sink)
{
	(void)o, (void)st, (void)info, (void)sink;
	return ENOTSUP;
}
#endif

#ifndef GIC_HAVE_GPU_KERNEL
int gic_gpu_kernel(const gic_opts *o, const kernel_state *st, const gic_run_info *info,
		   gic_sink *sink)
{
	(void)o, (void)st, (void)info, (void)sink;
	return ENOTSUP;
}
#endif

#ifndef GIC_HAVE_GPU_CONNS
int gic_gpu_conns(const gic_opts *o, const conns_state *st, const gic_run_info *info,
		  gic_sink *sink)
{
	(void)o, (void)st, (void)info, (void)sink;
	return ENOTSUP;
}
#endif
