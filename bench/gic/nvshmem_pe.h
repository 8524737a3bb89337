/*
 * bench/gic/nvshmem_pe.h - the NVSHMEM path of `gic lat`, `gic rate`,
 * `gic loaded`, `gic payload` (issue 7) and `gic kernel` (issue 16): NVSHMEM's public device API
 * between two GPUs, measured the way the mini-gda rows are and emitted
 * into the same results.
 *
 * NVSHMEM PEs are processes, one GPU each, started and watched through
 * pe_launch.h (its protocol, time limits and failure reports): the hidden
 * subcommand is
 *     gic __nvshmem-pe <rank> <nranks> <in_fd> <out_fd>
 * PE r selects CUDA device r. PE 0 makes NVSHMEM's unique id, the driver
 * relays it to the other PEs, and each PE joins with
 * nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID). PE 0 measures; PE 1
 * answers round trips and checks every payload that lands in its memory
 * (loaded: PE 0 also checks what PE 1's background writers put into it).
 *
 * What the NVSHMEM path puts in pe_launch.h's records:
 *   job      gic_nv_job (magic GIC_NV_MAGIC)
 *   SKIP     int32: the GPUs found, fewer than nranks (nothing ran)
 *   UID      nvshmemx_uniqueid_t
 *   NOTE     "<row>: skipped: <why>": one row could not run on this
 *            transport (PE 0)
 *
 * Per-QP completion (the lat row "nvshmem qp-quiet", DeepEP's pattern: put
 * on one QP, then complete only that (peer, QP)): NVSHMEM 3.5+ exposes
 * nvshmemx_qp_create() (host, collective) and, on the device,
 * nvshmemx_qp_<type>_put_nbi(..., qp) and nvshmemx_qp_quiet(pe, qps, n).
 * The QPs are a NIC transport's (IBGDA with RC QPs; also IBRC, IBDEVX,
 * GPUNetIO); between PEs that reach each other over P2P, nvshmemx_qp_create
 * hands back NVSHMEMX_QP_DEFAULT and nvshmemx_qp_quiet is a system fence,
 * so there is no per-QP completion to measure. The driver leaves the row
 * out, saying why, when the PEs' environment names no NIC transport
 * (gic_nv_qp_quiet_unavailable()); the PE leaves it out, saying why, when
 * the pair runs over P2P anyway or the transport creates no QP.
 *
 * Time limits: the PEs' limit is GIC_NV_LIMIT_S seconds (env
 * GIC_NVSHMEM_LIMIT_S overrides; pe_launch.h says how it is kept), and
 * every GPU-side wait polls with a limit.
 *
 * Environment the driver sets for the PEs unless already set:
 *   NVSHMEM_REMOTE_TRANSPORT=none          both PEs are on this host
 *   NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo   the unique-id bootstrap's socket
 *   NVSHMEM_DISABLE_NCCL=1                 no collectives but barriers here
 * Set them (e.g. NVSHMEM_REMOTE_TRANSPORT=ibrc, NVSHMEM_IB_ENABLE_IBGDA=1,
 * NVSHMEM_DISABLE_P2P=1) to run the same rows over a NIC; the transport
 * is read back (nvshmem_ptr) and reported either way.
 */
#ifndef GIC_BENCH_NVSHMEM_PE_H
#define GIC_BENCH_NVSHMEM_PE_H

#include <stdint.h>

#include "exp.h"
#include "pe_launch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GIC_NV_PE_SUBCOMMAND "__nvshmem-pe"
/* The program the PEs run: built beside gic, linked with NVSHMEM. */
#define GIC_NV_PE_PROGRAM "gic-nvshmem-pe"
#define GIC_NV_MAGIC 0x6e767368u /* "nvsh" */

enum {
	GIC_NV_PES = 2,          /* PEs the driver starts */
	GIC_NV_LIMIT_S = 300,    /* default time limit of a whole NVSHMEM run */
	GIC_NV_MAX_ROWS = 16,    /* rate rows per job */
	GIC_NV_MAX_RESULTS = 160,/* results per job */
	GIC_NV_MAX_SAMPLES = 1 << 20,
	GIC_NV_MAX_LEVELS = 8,   /* loaded: background levels per job */
	GIC_NV_MAX_BG = 254,     /* loaded: background writers (both PEs together) */
	GIC_NV_MAX_SIZES = 64,   /* payload: sizes per job */
	GIC_NV_REGION = 64 << 20,/* payload: destination region (bytes) */
};

enum { GIC_NV_LAT = 1, GIC_NV_RATE = 2, GIC_NV_LOADED = 3, GIC_NV_PAYLOAD = 4,
       GIC_NV_KERNEL = 5 };

/* kernel: the configurations of one job (none, code, then send and
 * sendwait per message count), each with its own phase; its region of
 * messages (blocks x messages x size) at most this many bytes. */
enum { GIC_NV_KERNEL_MSGS = 8, GIC_NV_KERNEL_REGION = 256 << 20 };

typedef struct gic_nv_rate_row {
	char name[32];   /* result name, e.g. "nvshmem t256" */
	int threads;     /* in all */
	int ctas;        /* the threads are spread over this many CTAs */
} gic_nv_rate_row;

/* What the PEs run. */
typedef struct gic_nv_job {
	uint32_t magic;  /* GIC_NV_MAGIC */
	int kind;        /* GIC_NV_LAT, _RATE, _LOADED, _PAYLOAD or _KERNEL */
	int iters;       /* -n: samples (lat, loaded probes), messages per thread
			  * (rate) or writes per size (payload); kernel: rounds */
	int warmup;      /* -w: leading samples dropped (lat, loaded) */
	unsigned metrics;/* lat: GIC_LAT_ISSUE | GIC_LAT_PUTC | GIC_LAT_RTT */
	int limit_s;     /* the PE's own time limit (alarm) */
	int nrows;       /* rate */
	gic_nv_rate_row rows[GIC_NV_MAX_ROWS];
	int qp_quiet;    /* lat: run the "nvshmem qp-quiet" row (set by
			  * gic_nvshmem_run() from metrics and the environment) */
	/* loaded: each level of background writers (0..GIC_NV_MAX_BG), the
	 * probe's queue (GIC_LOADED_SHARED | GIC_LOADED_RESERVED bits), the gap
	 * between a writer's posts, and whether names carry " bg=N". */
	int nlevels;
	int levels[GIC_NV_MAX_LEVELS];
	unsigned queues;
	long pace_ns;
	int level_in_name;
	/* payload: the sizes (1..GIC_NV_REGION bytes), and the size whose goodput
	 * is the 90% reference (0: the largest). */
	int nsizes;
	uint32_t sizes[GIC_NV_MAX_SIZES];
	uint64_t reference;
	/* kernel (exp_kernel.h; iters: the timed rounds of each configuration,
	 * after one untimed): the fma caller's live values (4, 8, 16, 32, 64,
	 * 160 or 224), its launch (blocks x threads) and work iterations, the
	 * variants (GIC_KERNEL_* bits), the messages per block of send and
	 * sendwait (0..1024 each), and bytes per message (8 or 7168). */
	int k_live, k_blocks, k_threads, k_work;
	unsigned k_variants;
	int k_nmsgs;
	int k_msgs[GIC_NV_KERNEL_MSGS];
	uint32_t k_size;
} gic_nv_job;

/* ------------------------------------------------------------------ */
/* Driver side (nvshmem_launch.c; always compiled). */

/* 1 when this binary holds the NVSHMEM path (CMake found NVSHMEM). */
int gic_nvshmem_built(void);

/* What the --help of each NVSHMEM path says of a run without two GPUs,
 * and of a binary without the path. */
#define GIC_NVSHMEM_HELP_SKIPS                                                          \
	"one GPU: both PEs on it with NVSHMEM_DISABLE_P2P=1 and a NIC transport, else says " \
	"so, skips, exit status 0; a binary built without NVSHMEM: says so, exit status 2"

/* Prints "gic <sub>: <flag> <val>: not built (...)" and returns EINVAL;
 * for parsers that meet the NVSHMEM path in a binary without it. */
int gic_nvshmem_not_built(const char *sub, const char *flag, const char *val);

/* 1 when experiment e, with its parsed state, runs nothing but the NVSHMEM
 * path: the driver then does not need a GPU of its own (the PEs count
 * theirs and skip when there are too few). */
int gic_nvshmem_only(const gic_experiment *e, const void *state);

/* Why the PEs' environment (after the driver's defaults) cannot give the
 * per-QP completion row a NIC transport with QPs of its own, as one line
 * without a trailing newline; NULL when it may (the PE then reads the
 * transport back and decides). */
const char *gic_nv_qp_quiet_unavailable(void);

/* Starts the PEs, runs job, waits for them and emits PE 0's results into
 * sink. A lat job with issue or put+completion also gets the "nvshmem
 * qp-quiet" row, or the line "gic lat: nvshmem qp-quiet: skipped: <why>"
 * on stderr when gic_nv_qp_quiet_unavailable() says why. Fewer than
 * GIC_NV_PES GPUs: prints "gic <sub>: the NVSHMEM path needs 2 GPUs
 * (found N): skipped" and returns 0 with no result. Errors:
 * ENOTSUP (not built), ETIMEDOUT (the time limit; the PEs are killed), EIO
 * (a PE failed: its exit status is printed), or another errno. */
int gic_nvshmem_run(const char *sub, const gic_nv_job *job, gic_sink *sink);

/* main() of the hidden subcommand: argv = gic __nvshmem-pe <rank> <nranks>
 * <in_fd> <out_fd>. Returns the process exit status. */
int gic_nvshmem_pe_main(int argc, char **argv);

/* ------------------------------------------------------------------ */
/* PE side (nvshmem_pe.cu; built only with NVSHMEM). Joins the NVSHMEM
 * job, runs it, finalizes; returns the exit status (0 also after SKIP). */
int gic_nvshmem_pe(int rank, int nranks, int in_fd, int out_fd);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_NVSHMEM_PE_H */
