/*
 * bench/gic/nccl_pe.h - the NCCL GIN path of `gic lat` and `gic rate`
 * (issue 7): NCCL's device API (ncclGin: put, putValue, signal, flush)
 * between two GPUs, measured the way the mini-gda rows are and emitted
 * into the same results.
 *
 * Build: only when CMake finds NCCL's device API headers with GIN
 * (nccl_device.h, nccl_device/gin.h; the pip wheel nvidia-nccl-cu13, pinned
 * by scripts/install-deps.sh, or -DNCCL_HOME). The device side of the API
 * is header-only (static inline functions over GDAKI and Proxy backends),
 * so nothing of NCCL is linked: the PE opens libnccl.so.2 at run time
 * (dlopen: LD_LIBRARY_PATH, or GIC_NCCL_LIBRARY=FILE) and takes the host calls
 * it needs with dlsym. The library must be the minor version the headers
 * are (the device structures are shared with it); another version, or no
 * library, skips the path with a line that says why.
 *
 * Processes, as for NVSHMEM, started and watched through pe_launch.h (its
 * protocol, time limits and failure reports): the driver runs no NCCL
 * code; the hidden subcommand is
 *     gic __nccl-pe <rank> <nranks> <in_fd> <out_fd>
 * PE r selects CUDA device r. PE 0 makes NCCL's unique id (ncclGetUniqueId),
 * the driver relays it to the other PEs, and each joins with
 * ncclCommInitRank. Every PE then allocates one buffer (ncclMemAlloc),
 * registers it as a symmetric window (ncclCommWindowRegister) and creates
 * a device communicator with GIN (ncclDevCommCreate, ginForceEnable, 4
 * signals). When that fails (no network: GIN has no backend) every PE says
 * so in a SKIP record naming NCCL's reason, and the run is skipped. The
 * backend NCCL chose (GDAKI or Proxy; NCCL_GIN_TYPE=3 or 2 forces one) and
 * its context count are read back from the device communicator and
 * reported. PE 0 measures; PE 1 answers round trips and checks every
 * payload that lands in its window.
 *
 * What the GIN path puts in pe_launch.h's records:
 *   job      gic_nc_job (magic GIC_NC_MAGIC)
 *   SKIP     gic_nc_skip: why the path cannot run here (nothing ran)
 *   UID      ncclUniqueId
 *
 * Time limits: the PEs' limit is GIC_NC_LIMIT_S seconds (env
 * GIC_NCCL_LIMIT_S overrides; pe_launch.h says how it is kept); after a
 * SKIP the other PEs get GIC_NC_SKIP_GRACE_S to leave. Each PE's alarm()
 * covers NCCL's own waits (flush included), which have none, and every
 * GPU-side wait of ours polls with a limit.
 *
 * Environment the driver sets for the PEs unless already set:
 *   NCCL_SOCKET_IFNAME=lo   bootstrap sockets: both PEs are on this host
 *   NCCL_NVLS_ENABLE=0      no NVLink multicast (the path uses none)
 * Set NCCL_SOCKET_IFNAME, NCCL_IB_HCA, NCCL_GIN_TYPE (2 Proxy, 3 GDAKI),
 * NCCL_GIN_NCONTEXTS etc. as for any NCCL program.
 */
#ifndef GIC_BENCH_NCCL_PE_H
#define GIC_BENCH_NCCL_PE_H

#include <stddef.h>
#include <stdint.h>

#include "exp.h"
#include "pe_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GIC_NC_PE_SUBCOMMAND "__nccl-pe"
#define GIC_NC_MAGIC 0x6e63636cu /* "nccl" */

enum {
	GIC_NC_PES = 2,            /* PEs the driver starts */
	GIC_NC_LIMIT_S = 300,      /* default time limit of a whole GIN run */
	GIC_NC_SKIP_GRACE_S = 10,  /* the other PEs' time to leave after a SKIP */
	GIC_NC_MAX_ROWS = 16,      /* rate rows per job */
	GIC_NC_MAX_RESULTS = 32,   /* results per job */
	GIC_NC_MAX_SAMPLES = 1 << 20,
};

enum { GIC_NC_LAT = 1, GIC_NC_RATE = 2 };

/* Why a SKIP (gic_nc_skip.kind). */
enum {
	GIC_NC_SKIP_GPUS = 1, /* fewer GPUs than PEs (found) */
	GIC_NC_SKIP_LIB = 2,  /* libnccl.so.2 missing or of another version (why) */
	GIC_NC_SKIP_GIN = 3,  /* NCCL has no GIN backend here (why: NCCL's reason) */
};

typedef struct gic_nc_skip {
	int32_t kind;    /* GIC_NC_SKIP_* */
	int32_t found;   /* GPUS: the GPUs the PE found */
	char why[384];   /* LIB, GIN: the reason, NUL-terminated */
} gic_nc_skip;

typedef struct gic_nc_rate_row {
	char name[32];   /* result name, e.g. "gin t256" */
	int threads;     /* in all */
	int ctas;        /* the threads are spread over this many CTAs */
} gic_nc_rate_row;

/* What the PEs run. */
typedef struct gic_nc_job {
	uint32_t magic;  /* GIC_NC_MAGIC */
	int kind;        /* GIC_NC_LAT or GIC_NC_RATE */
	int iters;       /* -n: samples (lat) or messages per thread (rate) */
	int warmup;      /* -w: leading samples dropped (lat) */
	unsigned metrics;/* lat: GIC_LAT_ISSUE | GIC_LAT_PUTC | GIC_LAT_RTT */
	int limit_s;     /* the PE's own time limit (alarm) */
	int nrows;       /* rate */
	gic_nc_rate_row rows[GIC_NC_MAX_ROWS];
} gic_nc_job;

/* ------------------------------------------------------------------ */
/* Driver side (nccl_launch.c; always compiled). */

/* 1 when this binary holds the NCCL GIN path (CMake found the headers). */
int gic_nccl_built(void);

/* Prints "gic <sub>: <flag> <val>: not built (...)" and returns EINVAL;
 * for parsers that meet the GIN path in a binary without it. */
int gic_nccl_not_built(const char *sub, const char *flag, const char *val);

/* 1 when experiment e, with its parsed state, runs library paths only
 * (GIN, and NVSHMEM if asked) and at least one GIN row: the driver then
 * needs no GPU of its own (the PEs count theirs and skip). */
int gic_nccl_only(const gic_experiment *e, const void *state);

/* Starts the PEs, runs job, waits for them and emits PE 0's results into
 * sink. A skip (fewer than GIC_NC_PES GPUs, no usable libnccl.so.2, or no
 * GIN backend) prints one line "gic <sub>: the NCCL GIN path ...: skipped"
 * with the reason and returns 0 with no result. Errors: ENOTSUP (not
 * built), ETIMEDOUT (the time limit; the PEs are killed), EIO (a PE
 * failed: its exit status is printed), or another errno. */
int gic_nccl_run(const char *sub, const gic_nc_job *job, gic_sink *sink);

/* main() of the hidden subcommand: argv = gic __nccl-pe <rank> <nranks>
 * <in_fd> <out_fd>. Returns the process exit status. */
int gic_nccl_pe_main(int argc, char **argv);

/* ------------------------------------------------------------------ */
/* PE side (nccl_pe.cu; built only with the NCCL headers). Joins the NCCL
 * job, runs it, leaves; returns the exit status (0 also after SKIP). */
int gic_nccl_pe(int rank, int nranks, int in_fd, int out_fd);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_NCCL_PE_H */
