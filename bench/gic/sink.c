/*
 * bench/gic/sink.c - the result sink (exp.h) and its writers (gic.h):
 * a table on stdout, JSON and CSV files.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gic.h"

struct gic_sink {
	gic_result *v;
	size_t n, cap;
	int host;          /* host analogues: no paper numbers */
};

void gic_sink_set_host(gic_sink *sink, int host)
{
	sink->host = host;
}

gic_sink *gic_sink_new(void)
{
	gic_sink *s = calloc(1, sizeof(*s));

	if (!s)
		errno = ENOMEM;
	return s;
}

void gic_sink_free(gic_sink *sink)
{
	if (sink)
		free(sink->v);
	free(sink);
}

size_t gic_sink_count(const gic_sink *sink)
{
	return sink->n;
}

const gic_result *gic_sink_at(const gic_sink *sink, size_t i)
{
	return i < sink->n ? &sink->v[i] : NULL;
}

size_t gic_sink_failed(const gic_sink *sink)
{
	size_t bad = 0;

	for (size_t i = 0; i < sink->n; i++)
		bad += !sink->v[i].validated;
	return bad;
}

int gic_emit(gic_sink *sink, const gic_result *r)
{
	if (sink->n == sink->cap) {
		size_t cap = sink->cap ? 2 * sink->cap : 32;
		gic_result *v = realloc(sink->v, cap * sizeof(*v));

		if (!v)
			return ENOMEM;
		sink->v = v;
		sink->cap = cap;
	}
	sink->v[sink->n] = *r;
	/* Every row the paper measured on H200 carries its number; a host
	 * analogue is not that row and carries none. */
	if (sink->host) {
		sink->v[sink->n].paper = NAN;
		sink->v[sink->n].paper_ref[0] = '\0';
	} else if (isnan(r->paper)) {
		gic_result_paper(&sink->v[sink->n]);
	}
	sink->n++;
	return 0;
}

void gic_result_init(gic_result *r, const char *experiment, const char *name,
		     const char *metric, const char *unit)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->experiment, sizeof(r->experiment), "%s", experiment);
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->paper = NAN;
	r->validated = 0;
}

int gic_result_set_samples(gic_result *r, const gic_samples *v, size_t warmup)
{
	/* Keep at least one sample when the run was shorter than its warm-up. */
	if (warmup >= v->n && v->n)
		warmup = v->n - 1;
	return gic_summarize(v, warmup, &r->s);
}

void gic_result_set_value(gic_result *r, double value)
{
	r->s = (gic_summary){ .count = 1, .min = value, .max = value, .mean = value,
			      .p50 = value, .p90 = value, .p99 = value };
}

void gic_result_param(gic_result *r, const char *fmt, ...)
{
	size_t len = strlen(r->params);
	va_list ap;

	if (len + 2 >= sizeof(r->params))
		return;
	if (len)
		r->params[len++] = ' ';
	va_start(ap, fmt);
	vsnprintf(r->params + len, sizeof(r->params) - len, fmt, ap);
	va_end(ap);
}

const char *gic_transport(const gic_opts *o)
{
	return o->gpu_engine && !o->host ? "softnic-gpu" : "softnic-cpu";
}

void gic_progress(const char *experiment, int done, int total, const char *what)
{
	static int enabled = -1;

	if (enabled < 0) {
		const char *e = getenv("GIC_PROGRESS");

		enabled = e ? atoi(e) != 0 : isatty(2);
	}
	if (enabled)
		fprintf(stderr, "%s: %d/%d %s\n", experiment, done, total, what ? what : "");
}

/* ------------------------------------------------------------------ */
/* Writers. */

/* The paper ratio p50 / paper, or NAN. */
static double ratio_of(const gic_result *r)
{
	return isnan(r->paper) || r->paper == 0 ? NAN : r->s.p50 / r->paper;
}

/* Prints a number with 3 decimals, "-" for NAN, into buf. */
static const char *fmt_num(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f", v);
	return buf;
}

/* The index (1-based) of note among notes[0..*n), adding it when new
 * (up to max); 0 when there is no room. */
static int note_index(const char **notes, int *n, int max, const char *note)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(notes[i], note))
			return i + 1;
	if (*n >= max)
		return 0;
	notes[(*n)++] = note;
	return *n;
}

void gic_sink_print_table(const gic_sink *sink, FILE *f)
{
	const char *notes[64];
	int nnotes = 0;

	fprintf(f, "%-44s %-22s %10s %10s %10s %-9s %9s %7s %s\n", "name", "metric", "p50", "p99",
		"max", "unit", "paper", "ratio", "valid");
	for (size_t i = 0; i < sink->n; i++) {
		const gic_result *r = &sink->v[i];
		char a[32], b[32], c[32], d[32], e[32], mark[16] = "";
		int k = r->note[0] ? note_index(notes, &nnotes, 64, r->note) : 0;

		if (k)
			snprintf(mark, sizeof(mark), " [%d]", k);
		fprintf(f, "%-44s %-22s %10s %10s %10s %-9s %9s %7s %s%s\n", r->name, r->metric,
			fmt_num(a, sizeof(a), r->s.p50), fmt_num(b, sizeof(b), r->s.p99),
			fmt_num(c, sizeof(c), r->s.max), r->unit,
			fmt_num(d, sizeof(d), r->paper), fmt_num(e, sizeof(e), ratio_of(r)),
			r->validated ? "yes" : "NO", mark);
	}
	for (int i = 0; i < nnotes; i++)
		fprintf(f, "%s[%d] %s\n", i ? "" : "\n", i + 1, notes[i]);
}

/* Writes "key": number (null when not finite). */
static void json_num(FILE *f, const char *key, double v)
{
	if (isfinite(v))
		fprintf(f, "\"%s\": %.17g", key, v);
	else
		fprintf(f, "\"%s\": null", key);
}

static void json_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, "\"%s\": ", key);
	gic_json_string(f, v);
}

static void json_run_info(FILE *f, const gic_run_info *info)
{
	fputs("{", f);
	json_str(f, "gpu", info->gpu);
	fputs(", ", f);
	json_num(f, "sm_mhz", info->sm_mhz);
	fputs(", ", f);
	json_str(f, "cpu", info->cpu);
	fputs(", ", f);
	json_str(f, "provider", info->provider);
	fputs(", ", f);
	json_str(f, "engine", info->engine);
	fputs(", ", f);
	json_str(f, "commit", info->commit);
	fputs(", ", f);
	json_str(f, "date", info->date);
	fputs("}", f);
}

static void json_result(FILE *f, const gic_result *r)
{
	const gic_summary *s = &r->s;

	fputs("{", f);
	json_str(f, "experiment", r->experiment), fputs(", ", f);
	json_str(f, "name", r->name), fputs(", ", f);
	json_str(f, "metric", r->metric), fputs(", ", f);
	json_str(f, "unit", r->unit), fputs(", ", f);
	json_str(f, "params", r->params), fputs(", ", f);
	json_str(f, "transport", r->transport), fputs(",\n    ", f);
	json_num(f, "p50", s->p50), fputs(", ", f);
	json_num(f, "p90", s->p90), fputs(", ", f);
	json_num(f, "p99", s->p99), fputs(", ", f);
	json_num(f, "min", s->min), fputs(", ", f);
	json_num(f, "max", s->max), fputs(", ", f);
	json_num(f, "mean", s->mean), fputs(", ", f);
	json_num(f, "stdev", s->stdev), fputs(", ", f);
	fprintf(f, "\"count\": %zu, \"trimmed\": %zu,\n    ", s->count, s->trimmed);
	json_num(f, "paper", r->paper), fputs(", ", f);
	json_num(f, "ratio", ratio_of(r)), fputs(", ", f);
	json_str(f, "paper_ref", r->paper_ref), fputs(", ", f);
	fprintf(f, "\"validated\": %s, ", r->validated ? "true" : "false");
	json_str(f, "note", r->note);
	fputs("}", f);
}

int gic_sink_write_json(const gic_sink *sink, const gic_run_info *info, FILE *f)
{
	fputs("{\"run\": ", f);
	json_run_info(f, info);
	fputs(",\n \"results\": [", f);
	for (size_t i = 0; i < sink->n; i++) {
		fputs(i ? ",\n   " : "\n   ", f);
		json_result(f, &sink->v[i]);
	}
	fputs("\n ]}\n", f);
	fflush(f);
	return ferror(f) ? EIO : 0;
}

/* Writes s as a CSV field (quoted, quotes doubled). */
static void csv_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

int gic_sink_write_csv(const gic_sink *sink, const gic_run_info *info, FILE *f)
{
	fputs("experiment,name,metric,unit,params,transport,p50,p90,p99,min,max,mean,stdev,"
	      "count,trimmed,paper,paper_ref,validated,note,gpu,sm_mhz,engine,commit\n", f);
	for (size_t i = 0; i < sink->n; i++) {
		const gic_result *r = &sink->v[i];
		const gic_summary *s = &r->s;
		const char *text[] = { r->experiment, r->name, r->metric, r->unit, r->params,
				       r->transport };

		for (size_t k = 0; k < sizeof(text) / sizeof(text[0]); k++)
			csv_str(f, text[k]), fputc(',', f);
		fprintf(f, "%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%zu,%zu,", s->p50, s->p90,
			s->p99, s->min, s->max, s->mean, s->stdev, s->count, s->trimmed);
		if (!isnan(r->paper))
			fprintf(f, "%.17g", r->paper);
		fputc(',', f);
		csv_str(f, r->paper_ref), fprintf(f, ",%d,", r->validated);
		csv_str(f, r->note), fputc(',', f);
		csv_str(f, info->gpu), fprintf(f, ",%.1f,", info->sm_mhz);
		csv_str(f, info->engine), fputc(',', f);
		csv_str(f, info->commit), fputc('\n', f);
	}
	fflush(f);
	return ferror(f) ? EIO : 0;
}

int gic_sink_write_file(const gic_sink *sink, const gic_run_info *info, const char *path,
			const char *flag,
			int (*writer)(const gic_sink *, const gic_run_info *, FILE *))
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f) {
		rc = errno;
		fprintf(stderr, "gic: %s: cannot write '%s': %s\n", flag, path, strerror(rc));
		return rc;
	}
	rc = writer(sink, info, f);
	if (fclose(f) && !rc)
		rc = errno ? errno : EIO;
	if (rc)
		fprintf(stderr, "gic: %s: writing '%s' failed: %s\n", flag, path, strerror(rc));
	return rc;
}
