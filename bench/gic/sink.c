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
	int runs;          /* gic suite --repeat: runs recorded (0: one run) */
	char run_file[GIC_REPEAT_MAX][1024]; /* each run's results file */
	int run_status[GIC_REPEAT_MAX];      /* and its process's exit status */
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

int gic_result_set_values(gic_result *r, const double *v, size_t n, size_t warmup)
{
	gic_samples s;
	int rc;

	gic_samples_init(&s, n);
	for (size_t i = 0; i < n; i++)
		gic_samples_add(&s, v[i]);
	rc = gic_result_set_samples(r, &s, warmup);
	gic_samples_free(&s);
	return rc;
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

void gic_result_flag_params(gic_result *r, const gic_flag_table *t, const void *state,
			    const char *keys)
{
	for (const char *p = keys; *p; p += strspn(p, " ")) {
		size_t n = strcspn(p, " ");
		char key[32], val[96];

		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		p += n;
		if (!gic_flags_format(t, key, state, val, sizeof(val)))
			gic_result_param(r, "%s=%s", key, val);
	}
}

static char mlx5_transport[32] = "mlx5";

void gic_set_mlx5_transport(const char *name)
{
	snprintf(mlx5_transport, sizeof(mlx5_transport), "%s", name);
}

const char *gic_transport(const gic_opts *o)
{
	if (o->provider == GIC_PROV_MLX5)
		return mlx5_transport;
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
/* Processor state and repetitions. */

/* 1 when params has the parameter key (as "key=..." at a token start). */
static int has_param(const char *params, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = params; (p = strstr(p, key)); p += n)
		if ((p == params || p[-1] == ' ') && p[n] == '=')
			return 1;
	return 0;
}

void gic_sink_stamp_state(gic_sink *sink, size_t from, double sm_mhz)
{
	char cpu[96];

	gic_cpu_state_params(cpu, sizeof(cpu));
	for (size_t i = from; i < sink->n; i++) {
		gic_result *r = &sink->v[i];

		if (sm_mhz > 0 && !has_param(r->params, "sm_mhz"))
			gic_result_param(r, "sm_mhz=%.0f", sm_mhz);
		if (!has_param(r->params, "cpu0_mhz"))
			gic_result_param(r, "%s", cpu);
	}
}

int gic_sink_add_run(gic_sink *sink, const char *results_file, int exit_status)
{
	if (sink->runs >= GIC_REPEAT_MAX)
		return E2BIG;
	snprintf(sink->run_file[sink->runs], sizeof(sink->run_file[0]), "%s", results_file);
	sink->run_status[sink->runs++] = exit_status;
	return 0;
}

int gic_sink_runs(const gic_sink *sink)
{
	return sink->runs;
}

static int same_row(const gic_result *a, const gic_result *b)
{
	return !strcmp(a->experiment, b->experiment) && !strcmp(a->name, b->name) &&
	       !strcmp(a->metric, b->metric) && !strcmp(a->unit, b->unit);
}

/* Which occurrence (0, 1, ...) of its row v[i] is within its run. */
static int occurrence(const gic_sink *s, size_t i)
{
	int k = 0;

	for (size_t j = 0; j < i; j++)
		k += s->v[j].run == s->v[i].run && same_row(&s->v[j], &s->v[i]);
	return k;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n >= 1), sorting v. */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* params without the per-run state parameters, into out. */
static void strip_state(const char *params, char *out, size_t len)
{
	static const char *const keys[] = { "sm_mhz=", "cpu0_mhz=", "governor=" };
	char buf[256], *save = NULL;
	size_t used = 0;

	snprintf(buf, sizeof(buf), "%s", params);
	out[0] = '\0';
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		int drop = 0;

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			drop |= !strncmp(t, keys[k], strlen(keys[k]));
		if (!drop && used < len)
			used += (size_t)snprintf(out + used, len - used, "%s%s", used ? " " : "", t);
	}
}

int gic_sink_aggregates(const gic_sink *s, gic_aggregate **out, size_t *n)
{
	int *occ = s->n ? calloc(s->n, sizeof(int)) : NULL;
	char *done = s->n ? calloc(s->n, 1) : NULL;
	gic_aggregate *a = s->n ? calloc(s->n, sizeof(*a)) : NULL;
	size_t m = 0;

	*out = NULL;
	*n = 0;
	if (s->n && (!occ || !done || !a)) {
		free(occ), free(done), free(a);
		return ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++)
		occ[i] = occurrence(s, i);
	for (size_t i = 0; i < s->n; i++) {
		gic_aggregate *g = &a[m];
		double p99[GIC_REPEAT_MAX], p50[GIC_REPEAT_MAX];

		if (done[i])
			continue;
		g->r = &s->v[i];
		g->validated = 1;
		for (size_t j = i; j < s->n; j++) {
			const gic_result *r = &s->v[j];

			if (done[j] || occ[j] != occ[i] || !same_row(r, g->r) ||
			    g->runs >= GIC_REPEAT_MAX)
				continue;
			done[j] = 1;
			g->run_of[g->runs] = r->run;
			g->p50_runs[g->runs] = p50[g->runs] = r->s.p50;
			p99[g->runs++] = r->s.p99;
			g->validated &= r->validated != 0;
		}
		g->validated &= g->runs == (s->runs ? s->runs : 1);
		g->p50_min = g->p50_max = g->p50_runs[0];
		for (int k = 1; k < g->runs; k++) {
			g->p50_min = g->p50_runs[k] < g->p50_min ? g->p50_runs[k] : g->p50_min;
			g->p50_max = g->p50_runs[k] > g->p50_max ? g->p50_runs[k] : g->p50_max;
		}
		g->p50 = median(p50, g->runs);
		g->p99 = median(p99, g->runs);
		strip_state(g->r->params, g->params, sizeof(g->params));
		m++;
	}
	free(occ);
	free(done);
	if (!m) {
		free(a);
		a = NULL;
	}
	*out = a;
	*n = m;
	return 0;
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

/* The table of a repetition: one line per aggregate row. */
static void print_aggregate_table(const gic_sink *sink, FILE *f)
{
	gic_aggregate *a;
	size_t n;

	if (gic_sink_aggregates(sink, &a, &n)) {
		fprintf(stderr, "gic: out of memory for the aggregate table\n");
		return;
	}
	fprintf(f, "%d runs: p50 is the median of the runs' p50s; min and max are their "
		"spread\n", sink->runs);
	fprintf(f, "%-44s %-22s %10s %10s %10s %-9s %9s %7s %4s %s\n", "name", "metric", "p50",
		"min p50", "max p50", "unit", "paper", "ratio", "runs", "valid");
	for (size_t i = 0; i < n; i++) {
		const gic_result *r = a[i].r;
		char b[5][32];

		fprintf(f, "%-44s %-22s %10s %10s %10s %-9s %9s %7s %4d %s\n", r->name, r->metric,
			fmt_num(b[0], 32, a[i].p50), fmt_num(b[1], 32, a[i].p50_min),
			fmt_num(b[2], 32, a[i].p50_max), r->unit, fmt_num(b[3], 32, r->paper),
			fmt_num(b[4], 32, isnan(r->paper) || r->paper == 0 ? NAN
									  : a[i].p50 / r->paper),
			a[i].runs, a[i].validated ? "yes" : "NO");
	}
	free(a);
}

void gic_sink_print_table(const gic_sink *sink, FILE *f)
{
	const char *notes[64];
	int nnotes = 0;

	if (sink->runs) {
		print_aggregate_table(sink, f);
		return;
	}

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

/* Writes "key": number (null when not finite), then sep. */
static void json_num(FILE *f, const char *key, double v, const char *sep)
{
	if (isfinite(v))
		fprintf(f, "\"%s\": %.17g%s", key, v, sep);
	else
		fprintf(f, "\"%s\": null%s", key, sep);
}

/* Writes "key": "v" (a JSON string), then sep. */
static void json_str(FILE *f, const char *key, const char *v, const char *sep)
{
	fprintf(f, "\"%s\": ", key);
	gic_json_string(f, v);
	fputs(sep, f);
}

static void json_run_info(FILE *f, const gic_run_info *info)
{
	fputs("{", f);
	json_str(f, "gpu", info->gpu, ", ");
	json_num(f, "sm_mhz", info->sm_mhz, ", ");
	json_str(f, "cpu", info->cpu, ", ");
	json_str(f, "provider", info->provider, ", ");
	json_str(f, "nic", info->nic, ", ");
	json_str(f, "engine", info->engine, ", ");
	if (info->peer[0])
		json_str(f, "peer", info->peer, ", ");
	if (info->launch[0])
		json_str(f, "launch", info->launch, ", ");
	json_str(f, "commit", info->commit, ", ");
	json_str(f, "date", info->date, ", \"placement\": {");
	json_str(f, "kind", info->placement[0] ? info->placement : GIC_PLACE_OFF_GPU, "");
	fprintf(f, ", \"engine_sms_asked\": %d, \"engine_sms\": %d, \"caller_sms\": %d, "
		"\"device_sms\": %d, \"sm_min_partition\": %d, \"sm_alignment\": %d, ",
		info->engine_sms_asked, info->engine_sms, info->caller_sms, info->device_sms,
		info->sm_min_partition, info->sm_alignment);
	json_str(f, "other_gpu", GIC_PLACE_OTHER_GPU, "}}");
}

/* Opens a row's object: "{" and r's names, params (as given) and
 * transport, through the line break before the numbers. */
static void json_row_head(FILE *f, const gic_result *r, const char *params)
{
	fputs("{", f);
	json_str(f, "experiment", r->experiment, ", ");
	json_str(f, "name", r->name, ", ");
	json_str(f, "metric", r->metric, ", ");
	json_str(f, "unit", r->unit, ", ");
	json_str(f, "params", params, ", ");
	json_str(f, "transport", r->transport, ",\n    ");
}

static void json_result(FILE *f, const gic_result *r)
{
	const gic_summary *s = &r->s;

	json_row_head(f, r, r->params);
	json_num(f, "p50", s->p50, ", ");
	json_num(f, "p90", s->p90, ", ");
	json_num(f, "p99", s->p99, ", ");
	json_num(f, "min", s->min, ", ");
	json_num(f, "max", s->max, ", ");
	json_num(f, "mean", s->mean, ", ");
	json_num(f, "stdev", s->stdev, ", ");
	fprintf(f, "\"count\": %zu, \"trimmed\": %zu,\n    ", s->count, s->trimmed);
	json_num(f, "paper", r->paper, ", ");
	json_num(f, "ratio", ratio_of(r), ", ");
	json_str(f, "paper_ref", r->paper_ref, ", ");
	fprintf(f, "\"validated\": %s, ", r->validated ? "true" : "false");
	json_str(f, "note", r->note, "");
	if (r->run)
		fprintf(f, ", \"run\": %d", r->run);
	fputs("}", f);
}

/* "repeat" and "aggregate" of a repetition (after "results"). */
static int json_repeat(const gic_sink *sink, FILE *f)
{
	gic_aggregate *a;
	size_t n;

	if (gic_sink_aggregates(sink, &a, &n))
		return ENOMEM;
	fprintf(f, ",\n \"repeat\": {\"runs\": %d, \"files\": [", sink->runs);
	for (int k = 0; k < sink->runs; k++) {
		fputs(k ? ", " : "", f);
		gic_json_string(f, sink->run_file[k]);
	}
	fputs("], \"exit_status\": [", f);
	for (int k = 0; k < sink->runs; k++)
		fprintf(f, "%s%d", k ? ", " : "", sink->run_status[k]);
	fputs("],\n  \"statistic\": \"aggregate p50: the median of the runs' p50s (the mean of "
	      "the middle two for an even count); p50_min, p50_max: their spread; p99: the "
	      "median of the runs' p99s\"},\n \"aggregate\": [", f);
	for (size_t i = 0; i < n; i++) {
		const gic_result *r = a[i].r;

		fputs(i ? ",\n   " : "\n   ", f);
		json_row_head(f, r, a[i].params);
		fprintf(f, "\"runs\": %d, ", a[i].runs);
		json_num(f, "p50", a[i].p50, ", ");
		json_num(f, "p50_min", a[i].p50_min, ", ");
		json_num(f, "p50_max", a[i].p50_max, ", ");
		json_num(f, "p99", a[i].p99, ", \"p50_runs\": [");
		for (int k = 0; k < a[i].runs; k++)
			fprintf(f, "%s%.17g", k ? ", " : "", a[i].p50_runs[k]);
		fputs("], \"run_of\": [", f);
		for (int k = 0; k < a[i].runs; k++)
			fprintf(f, "%s%d", k ? ", " : "", a[i].run_of[k]);
		fputs("],\n    ", f);
		json_num(f, "paper", r->paper, ", ");
		json_num(f, "ratio", isnan(r->paper) || r->paper == 0 ? NAN : a[i].p50 / r->paper,
			 ", ");
		json_str(f, "paper_ref", r->paper_ref, ", ");
		fprintf(f, "\"validated\": %s, ", a[i].validated ? "true" : "false");
		json_str(f, "note", r->note, "}");
	}
	fputs("\n ]", f);
	free(a);
	return 0;
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
	fputs("\n ]", f);
	if (sink->runs && json_repeat(sink, f))
		return ENOMEM;
	fputs("}\n", f);
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
	      "count,trimmed,paper,paper_ref,validated,note,gpu,sm_mhz,engine,commit,run\n", f);
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
		csv_str(f, info->commit), fprintf(f, ",%d\n", r->run);
	}
	fflush(f);
	return ferror(f) ? EIO : 0;
}

/* ------------------------------------------------------------------ */
/* Reading the CSV back (gic suite --repeat). */

enum { CSV_MAX_FIELDS = 32, CSV_FIELD = 1024 };

/* Reads one record into fields (each truncated to CSV_FIELD - 1); the
 * field count, 0 at the end of the file, or -1 for a malformed record. */
static int csv_record(FILE *f, char fields[][CSV_FIELD])
{
	int n = 0, c = fgetc(f);
	size_t len = 0;

	if (c == EOF)
		return 0;
	for (;;) {
		int quoted = c == '"';

		if (n >= CSV_MAX_FIELDS)
			return -1;
		len = 0;
		if (quoted)
			c = fgetc(f);
		for (;; c = fgetc(f)) {
			if (c == EOF && quoted)
				return -1;
			if (quoted && c == '"') {
				c = fgetc(f);
				if (c != '"')
					break; /* the closing quote */
			} else if (!quoted && (c == ',' || c == '\n' || c == EOF)) {
				break;
			}
			if (len + 1 < CSV_FIELD)
				fields[n][len++] = (char)c;
		}
		fields[n++][len] = '\0';
		if (c == ',') {
			c = fgetc(f);
			continue;
		}
		return c == '\n' || c == EOF ? n : -1;
	}
}

static int csv_col(char header[][CSV_FIELD], int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(header[i], name))
			return i;
	return -1;
}

int gic_sink_read_csv(gic_sink *sink, const char *path, int run)
{
	static const char *const cols[] = { "experiment", "name", "metric", "unit", "params",
					    "transport", "p50", "p90", "p99", "min", "max", "mean",
					    "stdev", "count", "trimmed", "paper", "paper_ref",
					    "validated", "note" };
	enum { NC = sizeof(cols) / sizeof(cols[0]) };
	char (*hdr)[CSV_FIELD] = malloc(2 * CSV_MAX_FIELDS * CSV_FIELD), (*fld)[CSV_FIELD];
	int at[NC], nh, nf = 1, line = 1, rc = 0;
	FILE *f = fopen(path, "r");

	if (!hdr || !f) {
		rc = hdr ? errno : ENOMEM;
		fprintf(stderr, "gic: cannot read the results of run %d, '%s': %s\n", run, path,
			strerror(rc));
		free(hdr);
		if (f)
			fclose(f);
		return rc;
	}
	fld = hdr + CSV_MAX_FIELDS;
	nh = csv_record(f, hdr);
	for (int k = 0; k < NC && nh > 0; k++)
		if ((at[k] = csv_col(hdr, nh, cols[k])) < 0)
			nh = -1;
	if (nh <= 0) {
		fprintf(stderr, "gic: '%s': not a gic CSV (header)\n", path);
		rc = EIO;
	}
	while (!rc && (nf = csv_record(f, fld)) != 0) {
		gic_result r;
		double *num[] = { &r.s.p50, &r.s.p90, &r.s.p99, &r.s.min, &r.s.max, &r.s.mean,
				  &r.s.stdev };

		line++;
		if (nf < 0)
			break;
		if (nf != nh) {
			fprintf(stderr, "gic: '%s' line %d: %d fields, the header has %d\n", path,
				line, nf, nh);
			rc = EIO;
			break;
		}
		gic_result_init(&r, fld[at[0]], fld[at[1]], fld[at[2]], fld[at[3]]);
		snprintf(r.params, sizeof(r.params), "%s", fld[at[4]]);
		snprintf(r.transport, sizeof(r.transport), "%s", fld[at[5]]);
		for (int k = 0; k < 7; k++)
			*num[k] = strtod(fld[at[6 + k]], NULL);
		r.s.count = (size_t)strtoull(fld[at[13]], NULL, 10);
		r.s.trimmed = (size_t)strtoull(fld[at[14]], NULL, 10);
		r.paper = fld[at[15]][0] ? strtod(fld[at[15]], NULL) : NAN;
		snprintf(r.paper_ref, sizeof(r.paper_ref), "%s", fld[at[16]]);
		r.validated = atoi(fld[at[17]]) != 0;
		snprintf(r.note, sizeof(r.note), "%s", fld[at[18]]);
		r.run = run;
		if ((rc = gic_emit(sink, &r)))
			fprintf(stderr, "gic: '%s': out of memory\n", path);
	}
	if (!rc && nf < 0) {
		fprintf(stderr, "gic: '%s' line %d: malformed record\n", path, line);
		rc = EIO;
	}
	fclose(f);
	free(hdr);
	return rc;
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
