/*
 * bench/gic/exp.h - the contract between the `gic` program's driver
 * (main, common flags, output) and its experiments (one file each).
 *
 * An experiment is a name, a one-line summary, the table of its own flags
 * (flags.h: parsing, --help, params), its state's size, a check of the
 * parsed state and a run function. The driver parses the common flags
 * (perftest style: -n iterations, -w warm-up, -b/-e/-f size sweep, -c CTAs,
 * -t threads, --json FILE, --csv FILE, --host, --quick, --engine cpu|gpu),
 * hands the remaining arguments to the experiment's parser, runs it, and
 * writes every result the experiment emitted: a table on stdout, and JSON
 * and CSV when asked. A result whose payload validation failed fails the
 * run (exit status 1).
 *
 * GPU parts of an experiment live in .cu files and are reached through
 * the gic_gpu_* functions below; a build without CUDA links stubs that
 * return ENOTSUP, and the driver then says the GPU mode is not built.
 *
 * Errors: 0 or a positive errno; messages go to stderr and name the flag,
 * the value and what was expected.
 */
#ifndef GIC_BENCH_EXP_H
#define GIC_BENCH_EXP_H

#include <stddef.h>
#include <stdint.h>

#include "stats.h"

#ifdef __cplusplus
extern "C" {
#endif

struct gic_pair; /* pe_pair.h */
struct gic_flag_table; /* flags.h */

/* Common options, after defaults and parsing. */
typedef struct gic_opts {
	int iters;          /* -n: measured samples (or messages per thread for rates) */
	int warmup;         /* -w: leading samples dropped from the summary */
	size_t size_begin;  /* -b: first payload size, bytes */
	size_t size_end;    /* -e: last payload size, bytes */
	double size_factor; /* -f: multiply the size by this each step (> 1) */
	int ctas;           /* -c: CTAs (blocks) of the GPU kernel */
	int threads;        /* -t: threads per CTA (GPU) or host threads (--host) */
	const char *json;   /* --json FILE: NULL when not asked */
	const char *csv;    /* --csv FILE */
	int host;           /* --host: host submitters and softnic's CPU engine; no GPU */
	int quick;          /* --quick: the short sizes CI runs */
	int gpu_engine;     /* --engine gpu (1) or cpu (0): which softnic engine */
	int device;         /* --device N: the CUDA device (GPU modes) */
	int provider;       /* --provider softnic|mlx5 (GIC_PROV_*): the NIC of the host
			     * modes, through gic/provider.h */
	const char *nic;    /* --nic NAME: the mlx5 provider's RDMA device (NULL: the first) */
	int procs;          /* --procs: 1 (both PEs in this process; 0 means 1 too) or 2
			     * (PE1 a process of its own: the host modes of the
			     * experiments with check_procs, mlx5; pe_pair.h) */
	int launch;         /* --launch fork|mpi (GIC_LAUNCH_*): how the two PEs of
			     * --procs 2 start (the driver's processes, or one MPI
			     * rank each: pe_pair.h) */
	int engine_sms;     /* --engine-sms N: 0 (softnic's GPU engine shares the SMs
			     * with the callers) or N > 0 (the engine on a green
			     * context of at least N SMs, every mini-gda fixture's
			     * kernels on the remaining SMs: softnic_gpu_attr.engine_sms) */
	int engine_batch;   /* --engine-batch N: 32 or 0 (one WQE per lane in a drained
			     * QP's batches), 64 or 96 (two or three:
			     * softnic_gpu_attr.batch_wqes) */
	unsigned given;     /* GIC_GIVEN_* bits: which flags the command line set (the
			     * others hold defaults an experiment may replace) */
} gic_opts;

/* gic_opts.provider. */
enum { GIC_PROV_SOFTNIC = 0, GIC_PROV_MLX5 = 1 };

/* gic_opts.launch. */
enum { GIC_LAUNCH_FORK = 0, GIC_LAUNCH_MPI = 1 };

/* Bits of gic_opts.given. */
enum {
	GIC_GIVEN_N = 1u << 0, GIC_GIVEN_W = 1u << 1, GIC_GIVEN_B = 1u << 2,
	GIC_GIVEN_E = 1u << 3, GIC_GIVEN_F = 1u << 4, GIC_GIVEN_C = 1u << 5,
	GIC_GIVEN_T = 1u << 6, GIC_GIVEN_ENGINE = 1u << 7,
};

/* Where the numbers come from; filled once per run by the driver. */
typedef struct gic_run_info {
	char gpu[96];       /* GPU name, or "none (host mode)" */
	double sm_mhz;      /* SM clock measured during the run (clock64 vs globaltimer); 0 host */
	char cpu[256];      /* gic_cpu_state_line() */
	char provider[16];  /* "softnic" or "mlx5": the provider of the host modes' NIC
			     * (the GPU modes' fixtures are softnic's) */
	char nic[160];      /* what that NIC is: gic_nic_describe() of a PE the driver
			     * opened before the run (mlx5 says when it is the emulated
			     * device); the GPU modes' softnic otherwise */
	char engine[16];    /* "cpu" or "gpu" */
	char peer[16];      /* where the host modes' PE1 runs: "in-process" (beside PE0) or
			     * "process" (--procs 2: a process of its own) */
	char launch[8];     /* --procs 2: how the PEs started, "fork" (the driver's
			     * processes) or "mpi" (one MPI rank each); "" otherwise */
	char commit[48];    /* git commit of the build, "-dirty" when modified */
	char date[32];      /* ISO 8601, UTC */
	/* Where softnic's engine ran against the callers' SMs (GIC_PLACE_*
	 * names; --engine-sms): the split as the driver makes it for
	 * engine_sms_asked (the fixtures' rows carry what each got, in their
	 * params). Counts are 0 where they do not apply. */
	char placement[16];  /* "shared", "green" or "off-gpu" */
	int engine_sms_asked, engine_sms, caller_sms, device_sms;
	int sm_min_partition, sm_alignment; /* the driver's split granularity (green) */
} gic_run_info;

/* gic_run_info.placement: softnic's GPU engine on the callers' SMs; on a
 * green context of its own, the callers on the rest; no GPU engine (host
 * mode, the CPU engine, the mlx5 provider's device). The engine on another
 * GPU needs two GPUs and is not built (GIC_PLACE_OTHER_GPU says so). */
#define GIC_PLACE_SHARED "shared"
#define GIC_PLACE_GREEN "green"
#define GIC_PLACE_OFF_GPU "off-gpu"
#define GIC_PLACE_OTHER_GPU "not built: the engine on another GPU needs two GPUs"

/* One row of output: a named measurement and its statistics. */
typedef struct gic_result {
	char experiment[16];  /* "lat", "rate", ... */
	char name[96];        /* the row, e.g. "mini-gda inline, gpu-scope fence" */
	char metric[32];      /* "issue", "put+completion", "rtt", "message rate", "goodput" */
	char unit[16];        /* "us", "M msg/s", "GB/s", ... */
	char params[256];     /* "threads=1 qps=1 batch=1 size=8 ..." (space-separated k=v) */
	char transport[32];   /* "softnic-cpu", "softnic-gpu", "nvshmem-p2p", ... */
	gic_summary s;        /* p50 p90 p99 min max mean stdev, count, trimmed */
	double paper;         /* the paper's H200 number for this row; NAN when none */
	char paper_ref[24];   /* "Table 4", "Figure 7", "" */
	int validated;        /* 1: every payload of the run checked out */
	char note[160];       /* what the reader must know (e.g. "softnic-bound") */
	int run;              /* 0: a single run; k >= 1: the k-th run of gic suite --repeat */
} gic_result;

/* Results of one run, in order. */
typedef struct gic_sink gic_sink;

/* Appends a copy of *r, with the paper's number filled in (when r->paper
 * is NAN and the paper has one for the row: gic_result_paper()); in host
 * mode without one (a host analogue is not the paper's row). ENOMEM. */
int gic_emit(gic_sink *sink, const gic_result *r);

/* Starts a result: clears *r, sets experiment, name, metric, unit, paper to
 * NAN and validated to 0. */
void gic_result_init(gic_result *r, const char *experiment, const char *name,
		     const char *metric, const char *unit);

/* Summarizes samples (dropping the warm-up) into r->s. */
int gic_result_set_samples(gic_result *r, const gic_samples *v, size_t warmup);

/* The same for the values v[0..n): gic_result_set_samples of a copy. */
int gic_result_set_values(gic_result *r, const double *v, size_t n, size_t warmup);

/* A single value (a rate measured once, or the median of rounds given as
 * samples): all statistics equal value, count 1. */
void gic_result_set_value(gic_result *r, double value);

/* Prints progress for long runs to stderr ("lat: 3/14 ..."); silent when
 * stderr is not a terminal unless GIC_PROGRESS=1. */
void gic_progress(const char *experiment, int done, int total, const char *what);

/* An experiment. Its state is one block of state_size bytes, zeroed, that
 * the arguments the driver did not take fill through the flags table
 * (gic_experiment_parse), then finish() completes; the driver frees it with
 * free() (no pointers inside to free). run() emits results; it returns 0,
 * or a positive errno after printing why it could not run (a failed
 * validation is not an error of run(): it is recorded in the results). */
typedef struct gic_experiment {
	const char *name;
	const char *summary;
	const struct gic_flag_table *flags; /* the experiment's own flags (flags.h) */
	size_t state_size;
	/* After the flags (marks: theirs, ORed): the defaults that depend on
	 * other flags, and the checks across flags; 0, or EINVAL after a
	 * message. NULL: nothing to do. */
	int (*finish)(void *state, unsigned marks);
	int (*run)(const gic_opts *o, void *state, const gic_run_info *info, gic_sink *sink);
	/* --procs 2 (--host, a provider that can): 0 when the experiment's
	 * flags allow it, else EINVAL after a message (exit status 2). NULL:
	 * the experiment runs its PEs in one process only, and the driver
	 * refuses --procs 2. */
	int (*check_procs)(const gic_opts *o, const void *state);
	/* --procs 2, in each PE's process (pe_pair.h): runs the experiment's
	 * host-mode rows as this PE of pair, from the driver's state
	 * (state_len bytes, a copy of what parse() made and run() handed to
	 * gic_pair_run); 0, or errno after a message (a malformed state:
	 * EPROTO). Set exactly when check_procs is. */
	int (*run_pe)(struct gic_pair *pair, const gic_opts *o, const void *state,
		      size_t state_len);
	/* 1: --procs 2 runs in GPU mode too, on the softnic provider (each PE
	 * a GPU-engine softnic, their QPs GPU peers: gic/softnic_gpu_peer.h);
	 * 0: --procs 2 needs --host. */
	int gpu_procs;
} gic_experiment;

/* ------------------------------------------------------------------ */
/* Helpers for experiments (host and GPU parts alike). */

/* Appends " key=value" text, printf-style, to r->params (the first item
 * without the leading space); truncates at the field's size. */
void gic_result_param(gic_result *r, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

/* Appends " key=value" to r->params for each space-separated key of keys,
 * the value of the flag of t whose param is key, from state (the table's
 * state struct), as gic_flags_format writes it; keys without such a flag
 * add nothing. */
void gic_result_flag_params(gic_result *r, const struct gic_flag_table *t, const void *state,
			    const char *keys);

/* Looks up (r->experiment, r->name, r->metric) among the paper's H200
 * (P-IB) numbers (bench/gic/paper.c) and sets r->paper and r->paper_ref.
 * Returns 1 when the row is there, 0 when not (paper stays as it was). */
int gic_result_paper(gic_result *r);

/* Sets what gic_transport() names for the mlx5 provider ("mlx5", or
 * "mlx5-emulated" on src/emu's device); the driver calls it once. */
void gic_set_mlx5_transport(const char *name);

/* "softnic-cpu" or "softnic-gpu": the transport of a NIC-dependent row
 * run with the engine o selects. */
const char *gic_transport(const gic_opts *o);

/* ------------------------------------------------------------------ */
/* GPU parts (bench/gic/gpu_*.cu). Each runs the GPU mode of one
 * experiment with the experiment's parsed state and emits its results.
 * ENOTSUP from the stubs of a build without CUDA; ENODEV when no GPU. */

int gic_gpu_available(char *name, size_t len, double *sm_mhz, int device);

/* 1 when this binary has the GPU modes (0: the stubs of a CPU-only build). */
int gic_gpu_built(void);

/* Fills info's placement fields for o (after gic_gpu_available): "shared"
 * with the device's SM count, or for o->engine_sms the split the driver
 * makes (softnic_gpu_sm_split); 0, or ENOTSUP/EINVAL/ENODEV after a
 * message (no green contexts, a count out of range). */
int gic_gpu_placement(const gic_opts *o, gic_run_info *info);

/* The SM clock measured now by a 20 ms kernel on device (clock64 against
 * globaltimer), waited for with a time limit; 0, ENOTSUP without CUDA, or
 * EIO/ETIMEDOUT after a message. Call it only when no kernel of this
 * process runs (a persistent engine would be waited for). */
int gic_gpu_sm_clock(int device, double *mhz);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_H */
