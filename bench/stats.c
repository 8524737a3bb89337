/* bench/stats.c - see stats.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Samples. */

int gic_samples_init(gic_samples *s, size_t reserve)
{
	if (!s)
		return EINVAL;
	memset(s, 0, sizeof(*s));
	if (!reserve)
		return 0;
	if (reserve > SIZE_MAX / sizeof(double))
		return ENOMEM;
	s->v = malloc(reserve * sizeof(double));
	if (!s->v)
		return ENOMEM;
	s->cap = reserve;
	return 0;
}

void gic_samples_free(gic_samples *s)
{
	if (!s)
		return;
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void gic_samples_clear(gic_samples *s)
{
	if (s)
		s->n = 0;
}

int gic_samples_add(gic_samples *s, double x)
{
	if (!s)
		return EINVAL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		double *v;

		if (cap < s->cap || cap > SIZE_MAX / sizeof(double))
			return ENOMEM;
		v = realloc(s->v, cap * sizeof(double));
		if (!v)
			return ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Summary. */

double gic_quantile_sorted(const double *sorted, size_t n, double p)
{
	double h, lo;
	size_t i;

	if (!sorted || n == 0)
		return 0.0;
	if (!(p > 0.0)) /* also catches NaN */
		return sorted[0];
	if (p >= 1.0)
		return sorted[n - 1];
	h = (double)(n - 1) * p;
	lo = floor(h);
	i = (size_t)lo;
	if (i + 1 >= n)
		return sorted[n - 1];
	return sorted[i] + (h - lo) * (sorted[i + 1] - sorted[i]);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Mean and sample standard deviation of v[0, n), n >= 1 (two passes). */
static void mean_stdev(const double *v, size_t n, double *mean, double *stdev)
{
	double sum = 0.0, sq = 0.0;

	for (size_t i = 0; i < n; i++)
		sum += v[i];
	*mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += (v[i] - *mean) * (v[i] - *mean);
	*stdev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
}

int gic_summarize(const gic_samples *s, size_t trim_first, gic_summary *out)
{
	double *sorted;
	size_t n;

	if (!s || !out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->trimmed = trim_first < s->n ? trim_first : s->n;
	n = s->n - out->trimmed;
	if (n == 0)
		return ENODATA;
	sorted = malloc(n * sizeof(double));
	if (!sorted)
		return ENOMEM;
	memcpy(sorted, s->v + out->trimmed, n * sizeof(double));
	qsort(sorted, n, sizeof(double), cmp_double);
	out->count = n;
	out->min = sorted[0];
	out->max = sorted[n - 1];
	mean_stdev(sorted, n, &out->mean, &out->stdev);
	out->p50 = gic_quantile_sorted(sorted, n, 0.50);
	out->p90 = gic_quantile_sorted(sorted, n, 0.90);
	out->p99 = gic_quantile_sorted(sorted, n, 0.99);
	free(sorted);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Output. */

void gic_summary_print(FILE *f, const char *name, const gic_summary *sm, const char *unit)
{
	if (!f || !sm)
		return;
	fprintf(f, "%s: n=%zu p50=%.3f p90=%.3f p99=%.3f min=%.3f max=%.3f mean=%.3f "
		   "stdev=%.3f %s",
		name ? name : "samples", sm->count, sm->p50, sm->p90, sm->p99, sm->min, sm->max,
		sm->mean, sm->stdev, unit ? unit : "");
	if (sm->trimmed)
		fprintf(f, " (trimmed %zu)", sm->trimmed);
	fputc('\n', f);
}

void gic_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A finite double as JSON (JSON has no NaN or infinity: those are null). */
static void json_number(FILE *f, const char *key, double v)
{
	if (isfinite(v))
		fprintf(f, ", \"%s\": %.3f", key, v);
	else
		fprintf(f, ", \"%s\": null", key);
}

int gic_summary_write_json(FILE *f, const char *name, const gic_summary *sm, const char *unit)
{
	if (!f || !sm)
		return EINVAL;
	fputs("{\"name\": ", f);
	gic_json_string(f, name ? name : "samples");
	fputs(", \"unit\": ", f);
	gic_json_string(f, unit ? unit : "");
	fprintf(f, ", \"n\": %zu, \"trimmed\": %zu", sm->count, sm->trimmed);
	json_number(f, "p50", sm->p50);
	json_number(f, "p90", sm->p90);
	json_number(f, "p99", sm->p99);
	json_number(f, "min", sm->min);
	json_number(f, "max", sm->max);
	json_number(f, "mean", sm->mean);
	json_number(f, "stdev", sm->stdev);
	fputc('}', f);
	return ferror(f) ? EIO : 0;
}

/* ------------------------------------------------------------------ */
/* CPU description. */

/* Reads the first line of path into buf without its newline; 0 or errno. */
static int read_first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int rc = 0;

	if (!f)
		return errno ? errno : ENOENT;
	if (!fgets(buf, (int)len, f))
		rc = EIO;
	else
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	return rc;
}

double gic_cpu_mhz_now(int cpu)
{
	char path[96], line[64];
	char *end;
	double khz;

	if (cpu < 0)
		return 0.0;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq",
		 cpu);
	if (read_first_line(path, line, sizeof(line)))
		return 0.0;
	khz = strtod(line, &end);
	if (end == line || !(khz > 0.0))
		return 0.0;
	return khz / 1000.0;
}

/* The value of the first "key<spaces>: value" line of /proc/cpuinfo whose
 * key is one of keys[]; 0, or ENOENT when none is present. */
static int cpuinfo_value(const char *const keys[], char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int rc = ENOENT;

	if (!f)
		return ENOENT;
	while (rc && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		size_t klen;

		if (!colon)
			continue;
		klen = strcspn(line, "\t:");
		for (int k = 0; keys[k] && rc; k++) {
			if (strlen(keys[k]) != klen || strncmp(line, keys[k], klen))
				continue;
			colon += strspn(colon + 1, " \t") + 1;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(buf, len, "%s", colon);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

int gic_cpu_state_params(char *buf, size_t len)
{
	char gov[64] = "";
	double cur = gic_cpu_mhz_now(0);

	if (!buf || !len)
		return EINVAL;
	read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof(gov));
	for (char *p = gov; *p; p++) /* one token */
		if (*p == ' ' || *p == '\t')
			*p = '-';
	if (cur > 0.0)
		snprintf(buf, len, "cpu0_mhz=%.0f governor=%s", cur, gov[0] ? gov : "not-exposed");
	else
		snprintf(buf, len, "cpu0_mhz=unknown governor=%s", gov[0] ? gov : "not-exposed");
	return 0;
}

int gic_cpu_state_line(char *buf, size_t len)
{
	static const char *const model_keys[] = { "model name", "Model", "cpu model",
						   "Processor", NULL };
	char model[256] = "unknown model", gov[64] = "", mhz[32] = "unknown";
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	double cur = gic_cpu_mhz_now(0);

	if (!buf || !len)
		return EINVAL;
	cpuinfo_value(model_keys, model, sizeof(model));
	read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof(gov));
	if (cur > 0.0)
		snprintf(mhz, sizeof(mhz), "%.0f MHz", cur);
	snprintf(buf, len, "cpu: %s, %ld online CPUs, governor %s, cpu0 %s", model, online,
		 gov[0] ? gov : "not exposed", mhz);
	return 0;
}
