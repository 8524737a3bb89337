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

/* The stub of gic_gpu_<name>, taking <name>_state: ENOTSUP. */
#define GIC_GPU_STUB(name)                                                                  \
	int gic_gpu_##name(const gic_opts *o, const name##_state *st,                       \
			   const gic_run_info *info, gic_sink *sink)                        \
	{                                                                                   \
		(void)o, (void)st, (void)info, (void)sink;                                  \
		return ENOTSUP;                                                             \
	}

#ifndef GIC_HAVE_GPU_LAT
GIC_GPU_STUB(lat)

int gic_gpu_lat_pe(struct gic_pair *pair, const gic_opts *o, const lat_state *st)
{
	(void)pair, (void)o, (void)st;
	return ENOTSUP;
}
#endif
#ifndef GIC_HAVE_GPU_RATE
GIC_GPU_STUB(rate)

int gic_gpu_rate_pe(struct gic_pair *pair, const gic_opts *o, const rate_row *r)
{
	(void)pair, (void)o, (void)r;
	return ENOTSUP;
}
#endif
#ifndef GIC_HAVE_GPU_PROXY
GIC_GPU_STUB(proxy)
#endif
#ifndef GIC_HAVE_GPU_LOADED
GIC_GPU_STUB(loaded)

int gic_gpu_loaded_pe(struct gic_pair *pair, const gic_opts *o, const loaded_state *st)
{
	(void)pair, (void)o, (void)st;
	return ENOTSUP;
}
#endif
#ifndef GIC_HAVE_GPU_PAYLOAD
GIC_GPU_STUB(payload)

int gic_gpu_payload_pe(struct gic_pair *pair, const gic_opts *o, const payload_state *st)
{
	(void)pair, (void)o, (void)st;
	return ENOTSUP;
}
#endif
#ifndef GIC_HAVE_GPU_KERNEL
GIC_GPU_STUB(kernel)

int gic_gpu_kernel_pe(struct gic_pair *pair, const gic_opts *o, const kernel_state *st)
{
	(void)pair, (void)o, (void)st;
	return ENOTSUP;
}
#endif
#ifndef GIC_HAVE_GPU_CONNS
GIC_GPU_STUB(conns)
#endif
