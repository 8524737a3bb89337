/*
 * bench/gic/flags.c - the flag-table engine (flags.h): parsing, --help and
 * the values results record.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"

/* "WHO: FLAG: ", as a format and its arguments; who is "gic SUB", "gic"
 * for the common flags, or a program's name (who_of). */
#define PFX "%s: %s: "
#define PFX_ARGS(who, flag) (who), (flag)

enum { WHO_LEN = 64 };

/* What messages about t's flags start with: t->prog, else "gic SUB"
 * ("gic" for sub ""). */
static const char *who_of(const gic_flag_table *t, const char *sub, char *buf, size_t len)
{
	if (t && t->prog)
		return t->prog;
	snprintf(buf, len, "gic%s%s", *sub ? " " : "", sub);
	return buf;
}

/* The help that refusals point to: "WHO --help", or "--help" for a
 * program's table (its own --help). */
static const char *see_of(const gic_flag_table *t, const char *who, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s--help", t->prog ? "" : who, t->prog ? "" : " ");
	return buf;
}

enum { HELP_COL = 17, HELP_WIDTH = 80 };

int gic_flag_is(const char *arg, const char *flag)
{
	size_t n = strlen(flag);

	return !strncmp(arg, flag, n) && (arg[n] == '\0' || arg[n] == '=');
}

static int parse_int(const char *who, const gic_flag *f, const char *val, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (end == val || *end || errno || v < f->lo || v > f->hi) {
		fprintf(stderr, PFX "expected an integer in %ld..%ld, got '%s'\n",
			PFX_ARGS(who, f->name), f->lo, f->hi, val);
		return EINVAL;
	}
	*out = v;
	return 0;
}

static int parse_size(const char *who, const gic_flag *f, const char *val, long *out)
{
	size_t lo = (size_t)f->lo, hi = (size_t)f->hi;
	static const char suffix[] = "kKmMgG";
	char *end;
	unsigned long long v;
	const char *s;
	int shift = 0;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (end != val && *end && (s = strchr(suffix, *end)))
		shift = 10 * (int)(1 + (s - suffix) / 2), end++;
	if (val[0] == '-' || end == val || *end || errno || v > (hi >> shift) ||
	    (v << shift) < lo) {
		fprintf(stderr, PFX "expected a size in %zu..%zu bytes (K, M, G suffixes allowed), "
			"got '%s'\n", PFX_ARGS(who, f->name), lo, hi, val);
		return EINVAL;
	}
	*out = (long)(v << shift);
	return 0;
}

static int parse_double(const char *who, const gic_flag *f, const char *val, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (end == val || *end || errno || !(v > (double)f->lo) || v > (double)f->hi) {
		fprintf(stderr, PFX "expected a number > %ld and <= %ld, got '%s'\n",
			PFX_ARGS(who, f->name), f->lo, f->hi, val);
		return EINVAL;
	}
	*out = v;
	return 0;
}

/* Prints names as "a|b|c" (with_all: "|all" after), or as "a or b" (or_style:
 * "a, b or c"). */
static void print_names(const char *const *names, int n, int with_all, int or_style)
{
	for (int k = 0; k < n; k++)
		fprintf(stderr, "%s%s", !k ? "" : !or_style ? "|" : k + 1 < n ? ", " : " or ",
			names[k]);
	if (with_all)
		fputs("|all", stderr);
}

/* The index of val among names (or n for "all" when all != 0); -1 after the
 * message when none. */
static int choice_index(const char *who, const char *flag, const char *val,
			const char *const *names, int n, unsigned all, int or_style)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(val, names[k]))
			return k;
	if (all && !strcmp(val, "all"))
		return n;
	if (or_style)
		fprintf(stderr, PFX "expected ", PFX_ARGS(who, flag));
	else
		fprintf(stderr, PFX "expected one of ", PFX_ARGS(who, flag));
	print_names(names, n, all != 0, or_style);
	fprintf(stderr, ", got '%s'\n", val);
	return -1;
}

int gic_flag_choice(const char *sub, const char *flag, const char *val,
		    const char *const *names, int n, int *index)
{
	char buf[WHO_LEN];
	int k = choice_index(who_of(NULL, sub, buf, sizeof(buf)), flag, val, names, n, 0, 0);

	if (k < 0)
		return EINVAL;
	*index = k;
	return 0;
}

static int parse_list(const char *who, const gic_flag *f, const char *val, int *out, int *n)
{
	const char *p = val;

	*n = 0;
	for (;;) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || (*end && *end != ',') || errno || v < f->lo || v > f->hi ||
		    *n >= f->max) {
			fprintf(stderr, PFX "expected up to %d comma-separated integers in "
				"%ld..%ld, got '%s'\n", PFX_ARGS(who, f->name), f->max, f->lo,
				f->hi, val);
			return EINVAL;
		}
		out[(*n)++] = (int)v;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

/* The integer field of f in state: an int (or unsigned) or a long (or size_t). */
static long load(const void *state, const gic_flag *f)
{
	const char *p = (const char *)state + f->off;
	int i;
	long l;

	if (f->width == sizeof(int)) {
		memcpy(&i, p, sizeof(i));
		return i;
	}
	memcpy(&l, p, sizeof(l));
	return l;
}

static void store(void *state, const gic_flag *f, long v)
{
	char *p = (char *)state + f->off;
	int i = (int)v;

	if (f->width == sizeof(int))
		memcpy(p, &i, sizeof(i));
	else
		memcpy(p, &v, sizeof(v));
}

void gic_flags_defaults(const gic_flag_table *t, void *state)
{
	for (int k = 0; k < t->n; k++) {
		const gic_flag *f = &t->f[k];
		double d = (double)f->def;
		int one[2] = { (int)f->def, 1 }; /* a LIST's one entry, and its count */

		if (f->kind == GIC_FLAG_DOUBLE)
			memcpy((char *)state + f->off, &d, sizeof(d));
		else if (f->kind == GIC_FLAG_LIST && f->def) {
			memcpy((char *)state + f->off, &one[0], sizeof(int));
			memcpy((char *)state + f->count_off, &one[1], sizeof(int));
		} else if (f->kind == GIC_FLAG_INT || f->kind == GIC_FLAG_SIZE ||
			   f->kind == GIC_FLAG_CHOICE)
			store(state, f, f->def);
	}
}

/* Parses val as flag f of t into state; 0 or EINVAL after a message. */
static int apply(const gic_flag_table *t, const gic_flag *f, const char *val, void *state)
{
	char buf[WHO_LEN];
	const char *who = who_of(t, t->common ? "" : t->sub, buf, sizeof(buf));
	char *field = (char *)state + f->off;
	long v;
	double d;
	int k, rc;
	unsigned bits;

	if (f->fn && (rc = f->fn(t->sub, f, val, state)))
		return rc;
	switch (f->kind) {
	case GIC_FLAG_INT:
	case GIC_FLAG_SIZE:
		if ((rc = (f->kind == GIC_FLAG_INT ? parse_int : parse_size)(who, f, val, &v)))
			return rc;
		return store(state, f, v), 0;
	case GIC_FLAG_DOUBLE:
		if ((rc = parse_double(who, f, val, &d)))
			return rc;
		return memcpy(field, &d, sizeof(d)), 0;
	case GIC_FLAG_BOOL:
		return store(state, f, 1), 0;
	case GIC_FLAG_CHOICE:
	case GIC_FLAG_BITS:
		k = choice_index(who, f->name, val, f->names, f->n,
				 f->kind == GIC_FLAG_BITS ? f->all : 0, t->common || t->prog);
		if (k < 0)
			return EINVAL;
		if (f->kind == GIC_FLAG_CHOICE)
			return store(state, f, f->values ? f->values[k] : k), 0;
		memcpy(&bits, field, sizeof(bits));
		bits |= k == f->n ? f->all : 1u << k;
		return memcpy(field, &bits, sizeof(bits)), 0;
	case GIC_FLAG_LIST:
		return parse_list(who, f, val, (int *)(void *)field,
				  (int *)(void *)((char *)state + f->count_off));
	case GIC_FLAG_STRING:
		return memcpy(field, &val, sizeof(val)), 0;
	default: /* CUSTOM: fn did it */
		return 0;
	}
}

/* The flag of t that arg is, or NULL; *glued receives a common short flag's
 * glued value ("-n100": "100"), else NULL. */
static const gic_flag *match(const gic_flag_table *t, const char *arg, const char **glued)
{
	*glued = NULL;
	for (int k = 0; k < t->n; k++) {
		const gic_flag *f = &t->f[k];
		int is;

		if (f->kind == GIC_FLAG_NOTE)
			continue;
		if (f->kind == GIC_FLAG_BOOL)
			is = !strcmp(arg, f->name) || (f->alias && !strcmp(arg, f->alias));
		else
			is = gic_flag_is(arg, f->name) || (f->alias && gic_flag_is(arg, f->alias));
		if (t->common && f->kind != GIC_FLAG_BOOL && f->name[1] != '-' &&
		    !strncmp(arg, f->name, 2) && arg[2]) {
			*glued = arg + 2;
			return f;
		}
		if (is)
			return f;
	}
	return NULL;
}

/* The value of the flag at argv[*i]: after '=' of "--flag=v", else the next
 * argument (advancing *i); NULL after a message when there is none. */
static const char *flag_value(const char *who, const char *see, int argc, char **argv, int *i)
{
	const char *eq = strchr(argv[*i], '=');

	if (eq && argv[*i][0] == '-' && argv[*i][1] == '-')
		return eq + 1;
	if (*i + 1 >= argc) {
		fprintf(stderr, "%s: %s needs a value (see %s)\n", who, argv[*i], see);
		return NULL;
	}
	return argv[++*i];
}

int gic_flags_take(const gic_flag_table *t, const char *sub, int argc, char **argv, int *i,
		   void *state, unsigned *marks)
{
	const char *val;
	const gic_flag *f = match(t, argv[*i], &val);
	char buf[WHO_LEN], see[WHO_LEN + 8];
	const char *who = who_of(t, sub, buf, sizeof(buf));

	if (!f)
		return 0;
	if (f->kind != GIC_FLAG_BOOL && !val &&
	    !(val = flag_value(who, see_of(t, who, see, sizeof(see)), argc, argv, i)))
		return -1;
	if (apply(t, f, val, state))
		return -1;
	if (marks)
		*marks |= f->mark;
	return 1;
}

int gic_flags_parse(const gic_flag_table *t, int argc, char **argv, void *state,
		    unsigned *marks)
{
	gic_flags_defaults(t, state);
	for (int i = 1; i < argc; i++) {
		int took = gic_flags_take(t, t->sub, argc, argv, &i, state, marks);

		if (took < 0)
			return EINVAL;
		if (!took) {
			char buf[WHO_LEN], see[WHO_LEN + 8];
			const char *who = who_of(t, t->sub, buf, sizeof(buf));

			fprintf(stderr, "%s: unknown flag '%s' (see %s)\n", who, argv[i],
				see_of(t, who, see, sizeof(see)));
			return EINVAL;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* --help. */

/* v in bytes, shortest with a K, M or G suffix. */
static void size_text(long v, char *buf, size_t len)
{
	static const char sfx[] = "GMK";
	int shift = 30;

	for (int s = 0; s < 3; s++, shift -= 10) {
		if (v && !(v & ((1l << shift) - 1))) {
			snprintf(buf, len, "%ld%c", v >> shift, sfx[s]);
			return;
		}
	}
	snprintf(buf, len, "%ld", v);
}

/* Appends names as "a | b | c" to buf (at *at). */
static void names_text(const gic_flag *f, char *buf, size_t len, size_t *at)
{
	for (int k = 0; k < f->n && *at < len; k++)
		*at += (size_t)snprintf(buf + *at, len - *at, "%s%s", k ? " | " : "", f->names[k]);
	if (f->all && *at < len)
		*at += (size_t)snprintf(buf + *at, len - *at, " | all");
}

/* What --help says of f beside its help text: range, its range or names
 * ("" when neither), and paren, "(repeatable; default D)" or a part of it
 * ("" when neither applies). */
static void range_text(const gic_flag *f, char *range, char *paren, size_t len)
{
	char lo[24], hi[24], def[24];
	size_t at = 0;
	const char *dflt = f->dflt;

	range[0] = paren[0] = '\0';
	size_text(f->lo, lo, sizeof(lo));
	size_text(f->hi, hi, sizeof(hi));
	if (!dflt && f->def && (f->kind == GIC_FLAG_INT || f->kind == GIC_FLAG_DOUBLE ||
				f->kind == GIC_FLAG_SIZE || f->kind == GIC_FLAG_LIST)) {
		if (f->kind == GIC_FLAG_SIZE)
			size_text(f->def, def, sizeof(def));
		else
			snprintf(def, sizeof(def), "%ld", f->def);
		dflt = def;
	}
	if (f->kind == GIC_FLAG_INT)
		snprintf(range, len, "%ld..%ld", f->lo, f->hi);
	else if (f->kind == GIC_FLAG_SIZE)
		snprintf(range, len, "%s..%s bytes, K/M/G suffixes", lo, hi);
	else if (f->kind == GIC_FLAG_DOUBLE)
		snprintf(range, len, "> %ld, <= %ld", f->lo, f->hi);
	else if (f->kind == GIC_FLAG_LIST)
		snprintf(range, len, "up to %d of %ld..%ld, comma-separated", f->max, f->lo, f->hi);
	else if (f->kind == GIC_FLAG_CHOICE || f->kind == GIC_FLAG_BITS)
		names_text(f, range, len, &at);
	if (f->kind == GIC_FLAG_BITS || dflt)
		snprintf(paren, len, "(%s%s%s%s)", f->kind == GIC_FLAG_BITS ? "repeatable" : "",
			 f->kind == GIC_FLAG_BITS && dflt ? "; " : "", dflt ? "default " : "",
			 dflt ? dflt : "");
}

/* Prints text from column HELP_COL (the cursor there), wrapped at
 * HELP_WIDTH, each further line indented to HELP_COL; '\n' breaks a line. */
static void wrap(const char *text, FILE *out)
{
	int col = HELP_COL; /* HELP_COL: at a line's start, no space before the word */

	for (const char *p = text; *p;) {
		int w = (int)strcspn(p, " \n");

		if (*p == '\n' || (w && col > HELP_COL && col + 1 + w > HELP_WIDTH)) {
			fprintf(out, "\n%*s", HELP_COL, "");
			col = HELP_COL;
		}
		if (!w) { /* a space or a '\n' */
			p++;
			continue;
		}
		fprintf(out, "%s%.*s", col > HELP_COL ? " " : "", w, p);
		col += w + (col > HELP_COL);
		p += w;
	}
	fputc('\n', out);
}

void gic_flags_help(const gic_flag_table *t, FILE *out)
{
	for (int k = 0; k < t->n; k++) {
		const gic_flag *f = &t->f[k];
		const char *help = f->help ? f->help : "";
		char head[64], range[512], paren[512], text[4096];
		int col = snprintf(head, sizeof(head), "  %s%s%s%s%s", f->name,
				   f->alias ? ", " : "", f->alias ? f->alias : "",
				   f->value ? " " : "", f->value ? f->value : "");

		range_text(f, range, paren, sizeof(paren));
		if (range[0]) /* "1..64 (default 1): help" */
			snprintf(text, sizeof(text), "%s%s%s%s%s", range, *paren ? " " : "", paren,
				 *help ? ": " : "", help);
		else /* "help (default D)" */
			snprintf(text, sizeof(text), "%s%s%s", help, *help && *paren ? " " : "",
				 paren);
		if (!text[0])
			fprintf(out, "%s\n", head);
		else if (col >= HELP_COL)
			fprintf(out, "%s\n%*s", head, HELP_COL, "");
		else
			fprintf(out, "%-*s", HELP_COL, head);
		if (text[0])
			wrap(text, out);
	}
}

/* ------------------------------------------------------------------ */
/* Params. */

int gic_flags_format(const gic_flag_table *t, const char *key, const void *state, char *buf,
		     size_t len)
{
	for (int k = 0; k < t->n; k++) {
		const gic_flag *f = &t->f[k];
		long v;

		if (!f->param || strcmp(f->param, key))
			continue;
		v = load(state, f);
		for (int j = 0; f->kind == GIC_FLAG_CHOICE && j < f->n; j++) {
			if ((f->values ? f->values[j] : j) == v) {
				snprintf(buf, len, "%s", f->names[j]);
				return 0;
			}
		}
		if (f->kind == GIC_FLAG_CHOICE)
			return EINVAL;
		snprintf(buf, len, "%ld", v);
		return 0;
	}
	return EINVAL;
}
