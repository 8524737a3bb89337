/*
 * bench/stats.h - latency samples and their summary, plus a description of
 * the CPU the numbers were taken on.
 *
 * Samples are doubles in any unit (the benchmarks use microseconds). A
 * summary optionally drops the first K samples (warm-up) and reports how
 * many it dropped.
 *
 * Percentiles: for n sorted samples x[0] <= ... <= x[n-1] and a fraction
 * p in [0, 1], the p-quantile is the linear interpolation between order
 * statistics at rank h = (n - 1) * p:
 *     q(p) = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])
 * (Hyndman-Fan type 7, the default of R and NumPy). q(0) is the minimum,
 * q(1) the maximum; with one sample every quantile is that sample.
 *
 * Standard deviation is the sample one (divides by n - 1); 0 for n = 1.
 *
 * Errors: 0 or a positive errno.
 */
#ifndef GIC_BENCH_STATS_H
#define GIC_BENCH_STATS_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A growable array of samples. Zero-initialised it is a valid empty set. */
typedef struct gic_samples {
	double *v;
	size_t n;
	size_t cap;
} gic_samples;

/* What gic_summarize() computed. */
typedef struct gic_summary {
	size_t count;   /* samples summarized (after trimming) */
	size_t trimmed; /* leading warm-up samples left out */
	double min, max, mean, stdev;
	double p50, p90, p99;
} gic_summary;

/* Empties s and reserves room for `reserve` samples (0: none yet).
 * ENOMEM when the reservation fails (s is then a valid empty set). */
int gic_samples_init(gic_samples *s, size_t reserve);

/* Frees the storage of s and leaves it empty. */
void gic_samples_free(gic_samples *s);

/* Forgets every sample, keeping the storage. */
void gic_samples_clear(gic_samples *s);

/* Appends x, growing the array as needed. ENOMEM when it cannot grow. */
int gic_samples_add(gic_samples *s, double x);

/* The p-quantile (p in [0, 1], clamped) of n sorted values, by the linear
 * interpolation defined above; 0 when n is 0. */
double gic_quantile_sorted(const double *sorted, size_t n, double p);

/* Summarizes s without its first trim_first samples (s is not changed).
 * out->trimmed says how many were left out (at most s->n). EINVAL for NULL
 * arguments, ENODATA when no sample remains (out then holds zeros and the
 * trimmed count), ENOMEM when the sort buffer cannot be allocated. */
int gic_summarize(const gic_samples *s, size_t trim_first, gic_summary *out);

/* Prints one line to f:
 *   name: n=... p50=... p90=... p99=... min=... max=... mean=... stdev=... unit
 * with 3 decimals, plus "(trimmed K)" when warm-up samples were left out. */
void gic_summary_print(FILE *f, const char *name, const gic_summary *sm, const char *unit);

/* Writes the same as one JSON object (no trailing newline):
 *   {"name": ..., "unit": ..., "n": ..., "trimmed": ..., "p50": ..., ...}
 * Returns 0, EINVAL for NULL arguments, or EIO when the write failed. */
int gic_summary_write_json(FILE *f, const char *name, const gic_summary *sm, const char *unit);

/* Writes s as a JSON string literal (quoted, escaped) to f. */
void gic_json_string(FILE *f, const char *s);

/* Current frequency of CPU `cpu` in MHz, from
 * /sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq; 0 when the file
 * is absent or unreadable. */
double gic_cpu_mhz_now(int cpu);

/* Describes the CPU in one line (no newline): model name from
 * /proc/cpuinfo, the number of online CPUs, the cpufreq governor where
 * exposed, and cpu0's current MHz or "unknown". The text is truncated to
 * fit len and always terminated. EINVAL when buf is NULL or len is 0. */
int gic_cpu_state_line(char *buf, size_t len);
/* The same state as result parameters, measured now: "cpu0_mhz=N
 * governor=G" (cpu0_mhz=unknown, governor=not-exposed when the kernel does
 * not say); 0 or EINVAL. */
int gic_cpu_state_params(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_STATS_H */
