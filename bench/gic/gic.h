/*
 * bench/gic/gic.h - the `gic` program's internals shared by the driver and
 * the host parts of the experiments: the experiment registry, the result
 * sink's readers and writers, and the library-path check of the flag
 * tables (flags.h). (The contract with
 * the GPU parts is exp.h and exp_<name>.h.)
 *
 * Errors: 0 or a positive errno.
 */
#ifndef GIC_BENCH_GIC_H
#define GIC_BENCH_GIC_H

#include <stdio.h>

#include "exp.h"
#include "flags.h"

/* The experiments, in the order `gic --help` and the suite list them. */
extern const gic_experiment gic_exp_lat, gic_exp_rate, gic_exp_proxy, gic_exp_loaded,
	gic_exp_payload, gic_exp_kernel, gic_exp_conns, gic_exp_suite;

/* Every experiment (suite last); *n receives the count. */
const gic_experiment *const *gic_experiments(int *n);

/* The experiment named name, or NULL. */
const gic_experiment *gic_experiment_find(const char *name);

/* Parses argv[1..argc) (argv[0]: the subcommand) into a new state of e:
 * zeroed, filled by e's flags (gic_flags_parse), then e->finish(). 0 and
 * *state, one malloc'd block the caller frees with free(); ENOMEM; or
 * EINVAL after a message. */
int gic_experiment_parse(const gic_experiment *e, int argc, char **argv, void **state);

/* ------------------------------------------------------------------ */
/* Sink (sink.c). */

/* A new empty sink; NULL with errno ENOMEM. */
gic_sink *gic_sink_new(void);
/* host 1: the results are host analogues, which carry no paper number
 * (gic_emit() clears it). */
void gic_sink_set_host(gic_sink *sink, int host);
void gic_sink_free(gic_sink *sink);
size_t gic_sink_count(const gic_sink *sink);
/* Result i (< count), or NULL. */
const gic_result *gic_sink_at(const gic_sink *sink, size_t i);
/* Results whose validated is 0. */
size_t gic_sink_failed(const gic_sink *sink);

/* The readable table: name, metric, p50, p99, max, unit, paper, ratio,
 * validated; then the notes, numbered. */
void gic_sink_print_table(const gic_sink *sink, FILE *f);
/* One JSON object: {"run": {...}, "results": [...]}; 0 or EIO. */
int gic_sink_write_json(const gic_sink *sink, const gic_run_info *info, FILE *f);
/* A header line and one line per result; 0 or EIO. */
int gic_sink_write_csv(const gic_sink *sink, const gic_run_info *info, FILE *f);
/* Appends the rows of a CSV file written by gic_sink_write_csv (another
 * gic process's --csv), each tagged run (1..GIC_REPEAT_MAX); 0, or EIO /
 * errno after a message naming path and line. */
int gic_sink_read_csv(gic_sink *sink, const char *path, int run);

/* Repetitions (gic suite --repeat). */
enum { GIC_REPEAT_MAX = 10 };
/* Records run number runs+1 of a repetition: its results file and the
 * exit status of its process; 0 or E2BIG past GIC_REPEAT_MAX. A sink with
 * runs reports aggregate rows (below) in its table and JSON. */
int gic_sink_add_run(gic_sink *sink, const char *results_file, int exit_status);
/* Runs recorded (0: a single run, no aggregate). */
int gic_sink_runs(const gic_sink *sink);

/* One row across the runs of a repetition: the rows of every run with the
 * same experiment, name, metric and unit (the k-th such row of a run, when
 * a run has several). */
typedef struct gic_aggregate {
	const gic_result *r;      /* the row of the first run that has it */
	int runs;                 /* runs that have the row */
	int run_of[GIC_REPEAT_MAX];
	double p50_runs[GIC_REPEAT_MAX]; /* each of those runs' p50, in run order */
	double p50;               /* median of p50_runs (mean of the middle two when even) */
	double p50_min, p50_max;  /* the spread of p50_runs */
	double p99;               /* median of the runs' p99 */
	int validated;            /* every run's row validated, and every run has it */
	char params[256];         /* r->params without the per-run state (sm_mhz, cpu0_mhz,
				   * governor) */
} gic_aggregate;
/* The aggregate rows, in first-appearance order; *out is malloc'd (the
 * caller frees it; NULL when *n is 0). 0 or ENOMEM. */
int gic_sink_aggregates(const gic_sink *sink, gic_aggregate **out, size_t *n);

/* Writes the processor state measured now into the parameters of the
 * rows from..count that do not carry it yet: " sm_mhz=N" when sm_mhz > 0
 * (GPU modes: the SM clock measured after those rows' configuration ran),
 * and the CPU's " cpu0_mhz=N governor=G" (gic_cpu_state_params). */
void gic_sink_stamp_state(gic_sink *sink, size_t from, double sm_mhz);

/* Writes to path with one of the writers above; 0, or errno after a
 * message naming flag and path. */
int gic_sink_write_file(const gic_sink *sink, const gic_run_info *info, const char *path,
			const char *flag,
			int (*writer)(const gic_sink *, const gic_run_info *, FILE *));

/* The program's own command line (main sets it), for re-running itself:
 * argv[0..argc). */
void gic_set_argv(int argc, char **argv);
char **gic_argv(int *argc);

/* Stamps the rows from..count with the processor state measured now
 * (gic_sink_stamp_state): the SM clock where this process has a GPU (run
 * info's sm_mhz > 0, not --host), and the CPU's state. Call it when no
 * kernel of this process runs, after the rows' configuration ran. */
void gic_stamp_state(const gic_opts *o, const gic_run_info *info, gic_sink *sink,
		     size_t from);

/* ------------------------------------------------------------------ */
/* Flag checks for the experiments' tables (flags.h; nvshmem_launch.c). */

/* A check (gic_flag_fn) for a --path flag whose names include library
 * paths: val "nvshmem" or "gin", when among f's names and that path is not
 * built, is refused with gic_nvshmem_not_built's or gic_nccl_not_built's
 * message (EINVAL); anything else passes (0). */
int gic_flag_lib_path(const char *sub, const gic_flag *f, const char *val, void *state);

#endif /* GIC_BENCH_GIC_H */
