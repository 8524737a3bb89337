/*
 * bench/gic/exp_suite.h - `gic suite`: every experiment at the paper's
 * settings (GPU) or at quick settings (--host), all results in one run
 * (one JSON with --json), and a report: DIR/report.md (run info, one
 * Markdown table per experiment, each H200 row beside the paper's number,
 * every NIC-dependent row labelled with its softnic transport) plus PNG
 * plots from scripts/report-plots.py when python3 is found.
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
} suite_state;

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_EXP_SUITE_H */
