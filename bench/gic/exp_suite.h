/*
 * bench/gic/exp_suite.h - `gic suite`: every experiment at the paper's
 * settings (GPU) or at quick settings (--host), all results in one run
 * (one JSON with --json), and a report: DIR/report.md (run info, one
 * Markdown table per experiment, each H200 row beside the paper's number,
 * every NIC-dependent row labelled with its softnic transport) plus PNG
 * plots from scripts/report-plots.py when python3 is found.
 *
 * --repeat N (N > 1) runs the whole suite N times, each as a process of
 * its own (gic re-run with the same flags: a new softnic and CUDA
 * context each time) into DIR/run-K/, and reports per row the median of
 * the runs' p50s with their spread (gic_aggregate); DIR/results.json then
 * holds every run's rows (tagged "run") and the aggregate rows.
 *
 * The suite has no GPU entry of its own: it runs each experiment's run()
 * with the paper's settings, and those reach their gic_gpu_* entries.
 */
#ifndef GIC_BENCH_EXP_SUITE_H
#define GIC_BENCH_EXP_SUITE_H

#include "exp.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct suite_state {
	const char *out;  /* --out DIR: report directory, default "gic-report" */
	int no_plots;     /* --no-plots: skip scripts/report-plots.py */
	const char *only; /* --only LIST: comma-separated experiments; NULL: all */
	int repeat;       /* --repeat N: independent process runs (1..GIC_REPEAT_MAX; 1: this
			   * process runs the suite itself) */
} suite_state;

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_SUITE_H */
