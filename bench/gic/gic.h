/*
 * bench/gic/gic.h - the `gic` program's internals shared by the driver and
 * the host parts of the experiments: the experiment registry, the result
 * sink's readers and writers, and flag-parsing helpers. (The contract with
 * the GPU parts is exp.h and exp_<name>.h.)
 *
 * Errors: 0 or a positive errno; parsing helpers print what was wrong,
 * naming the subcommand, the flag, the value and what was expected.
 */
#ifndef GIC_BENCH_GIC_H
#define GIC_BENCH_GIC_H

#include <stdio.h>

#include "exp.h"

/* The experiments, in the order `gic --help` and the suite list them. */
extern const gic_experiment gic_exp_lat, gic_exp_rate, gic_exp_proxy, gic_exp_loaded,
	gic_exp_payload, gic_exp_kernel, gic_exp_conns, gic_exp_suite;

/* Every experiment (suite last); *n receives the count. */
const gic_experiment *const *gic_experiments(int *n);

/* The experiment named name, or NULL. */
const gic_experiment *gic_experiment_find(const char *name);

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
/* Flag parsing (args.c), for the experiments' parse(). Each returns 0, or
 * EINVAL after printing "gic <sub>: <flag>: expected ..., got '<val>'". */

/* Iterates argv[1..argc): *i is the index of the current flag; returns the
 * flag's value (from "--flag=v" or the next argument, advancing *i), or
 * NULL after a message when it is missing. */
const char *gic_arg_value(const char *sub, int argc, char **argv, int *i);
/* 1 when argv[*i] is flag (alone or as "flag=value"). */
int gic_arg_is(const char *arg, const char *flag);

int gic_arg_int(const char *sub, const char *flag, const char *val, long lo, long hi, long *out);
int gic_arg_size(const char *sub, const char *flag, const char *val, size_t lo, size_t hi,
		 size_t *out); /* accepts K/M/G suffixes (powers of 1024) */
/* val must be one of names[0..n) (or "all" when all_bits != 0, giving
 * all_bits); ORs 1u << index into *bits (or all_bits). */
int gic_arg_choice_bits(const char *sub, const char *flag, const char *val,
			const char *const *names, int n, unsigned all_bits, unsigned *bits);
/* val must be one of names[0..n); *index receives its index. */
int gic_arg_choice(const char *sub, const char *flag, const char *val,
		   const char *const *names, int n, int *index);
/* Comma-separated integers in [lo, hi], at most max of them. */
int gic_arg_int_list(const char *sub, const char *flag, const char *val, long lo, long hi,
		     int *out, int max, int *n);
/* The message for an argument nobody took: "gic <sub>: unknown flag ...". */
int gic_arg_unknown(const char *sub, const char *arg);
/* A mini-proxy shape flag: flag is "-T" (workers, 1..GIC_PROXY_MAX_WORKERS),
 * "-R" (rings, min_rings..GIC_PROXY_MAX_RINGS; min_rings 1, or 2 where a
 * probe owns ring 0) or "-B" (batch, 1..GIC_PROXY_MAX_BATCH); stores val in
 * *T, *R or *B. 0, or EINVAL after gic_arg_int's message. */
int gic_arg_proxy_shape(const char *sub, const char *flag, const char *val, int min_rings,
			int *T, int *R, int *B);

#endif /* GIC_BENCH_GIC_H */
