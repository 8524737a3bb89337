/*
 * bench/gic/test_flags.c - the flag-table engine (flags.h) on a table of
 * every kind: values parsed and stored in fields of each width (K/M/G
 * sizes, doubles, choices with and without values, repeatable bits with
 * "all", lists, strings, booleans, a callback), defaults, marks, the
 * refusals and their messages, the common table's glued values and
 * "A or B" choices, --help from the table, and the params it formats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flags.h"

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			failures++;                                            \
			printf("%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, \
			       #cond);                                         \
			printf(__VA_ARGS__);                                   \
			putchar('\n');                                         \
		}                                                              \
	} while (0)

typedef struct tstate {
	int n;
	long pace;
	size_t size;
	double factor;
	int quick;
	int mode;
	unsigned callers, paths;
	int nlist, list[4];
	const char *out;
	int custom;
} tstate;

static int custom_flag(const char *sub, const gic_flag *f, const char *val, void *state)
{
	if (strcmp(val, "yes")) {
		fprintf(stderr, "gic %s: %s: expected yes, got '%s'\n", sub, f->name, val);
		return EINVAL;
	}
	((tstate *)state)->custom = 1;
	return 0;
}

/* A check before the engine's parse: refuses "gin". */
static int no_gin(const char *sub, const gic_flag *f, const char *val, void *state)
{
	(void)state;
	if (strcmp(val, "gin"))
		return 0;
	fprintf(stderr, "gic %s: %s gin: not built\n", sub, f->name);
	return EINVAL;
}

#define F(m) GIC_FLAG_FIELD(tstate, m)
static const gic_flag tflags[] = {
	{ "--n", .value = "N", GIC_FLAG_INT, F(n), .lo = 1, .hi = 10, .def = 3, .mark = 1,
	  .help = "an int", .param = "n" },
	{ "--pace", .value = "NS", GIC_FLAG_INT, F(pace), .lo = 0, .hi = 5000000000l,
	  .mark = 2, .param = "pace_ns" },
	{ "--size", .value = "SIZE", GIC_FLAG_SIZE, F(size), .lo = 1, .hi = 1l << 30, .def = 8,
	  .param = "size" },
	{ "--factor", .value = "F", GIC_FLAG_DOUBLE, F(factor), .lo = 1, .hi = 1024, .def = 2 },
	{ "--quick", "-q", .kind = GIC_FLAG_BOOL, F(quick), .help = "short" },
	{ "--mode", .value = "M", GIC_FLAG_CHOICE, F(mode), GIC_FLAG_NAMES("own", "lock", "rr"),
	  GIC_FLAG_VALUES(0, 7, 9), .def = 7, .param = "mode" },
	{ "--caller", .value = "C", GIC_FLAG_CHOICE, F(callers), GIC_FLAG_NAMES("fma", "both"),
	  .param = "caller" },
	{ "--path", .value = "P", GIC_FLAG_BITS, F(paths), GIC_FLAG_NAMES("gda", "proxy", "gin"),
	  .all = 3, .fn = no_gin, .dflt = "gda", .help = "first line\nsecond line" },
	{ "--list", .value = "LIST", GIC_FLAG_LIST, F(list), .count_off = offsetof(tstate, nlist),
	  .lo = 0, .hi = 9, .max = 4, .def = 6 },
	{ "--out", .value = "DIR", GIC_FLAG_STRING, F(out), .dflt = "here" },
	{ "--custom", .value = "X", GIC_FLAG_CUSTOM, .fn = custom_flag },
	{ "-x N", .kind = GIC_FLAG_NOTE, .help = "a common flag" },
};
#undef F
static const gic_flag_table table = GIC_FLAG_TABLE("t", tflags, 0);
static const gic_flag_table common = GIC_FLAG_TABLE("", tflags, 1);
static const gic_flag_table prog = GIC_FLAG_PROG_TABLE("gic-t", tflags);

/* Parses the words of line as argv[1..] (argv[0] "t") into a zeroed *st,
 * stderr's text into err; gic_flags_parse's result. */
static int parse(const gic_flag_table *t, const char *line, tstate *st, unsigned *marks,
		 char *err, size_t len)
{
	static char buf[512];
	char *argv[32] = { "t" }, *save = NULL;
	int argc = 1, saved, rc;
	FILE *tmp = tmpfile();
	size_t got;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *w = strtok_r(buf, " ", &save); w && argc < 32; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	memset(st, 0, sizeof(*st));
	*marks = 0;
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	rc = gic_flags_parse(t, argc, argv, st, marks);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	got = fread(err, 1, len - 1, tmp);
	err[got] = '\0';
	fclose(tmp);
	return rc;
}

/* line parses, nothing printed. */
static void ok(const char *line, tstate *st, unsigned *marks)
{
	char err[512];
	int rc = parse(&table, line, st, marks, err, sizeof(err));

	CHECK(rc == 0 && !err[0], "'%s': rc %d, stderr '%s'", line, rc, err);
}

/* line is refused (EINVAL) with exactly the message want (and a newline). */
static void refused(const gic_flag_table *t, const char *line, const char *want)
{
	char err[512];
	tstate st;
	unsigned marks;
	int rc = parse(t, line, &st, &marks, err, sizeof(err));
	size_t n = strlen(err);

	if (n && err[n - 1] == '\n')
		err[n - 1] = '\0';
	CHECK(rc == EINVAL && !strcmp(err, want), "'%s': rc %d, stderr '%s', want '%s'", line, rc,
	      err, want);
}

static void check_values(void)
{
	tstate st;
	unsigned m;

	ok("", &st, &m);
	CHECK(st.n == 3 && st.size == 8 && st.factor == 2 && st.mode == 7 && st.nlist == 1 &&
	      st.list[0] == 6 && m == 0, "defaults: n %d size %zu factor %g mode %d list %d:%d "
	      "marks %u", st.n, st.size, st.factor, st.mode, st.nlist, st.list[0], m);
	ok("--n 10 --pace=4000000000 --size 4K --factor 1.5 -q", &st, &m);
	CHECK(st.n == 10 && st.pace == 4000000000l && st.size == 4096 && st.factor == 1.5 &&
	      st.quick == 1 && m == 3, "values: n %d pace %ld size %zu factor %g quick %d marks %u",
	      st.n, st.pace, st.size, st.factor, st.quick, m);
	ok("--size 2m", &st, &m);
	CHECK(st.size == (size_t)2 << 20, "2m: %zu", st.size);
	ok("--size 1G --factor 1024", &st, &m);
	CHECK(st.size == (size_t)1 << 30 && st.factor == 1024, "1G: %zu, %g", st.size, st.factor);
	ok("--mode rr --caller both", &st, &m);
	CHECK(st.mode == 9 && st.callers == 1, "mode %d callers %u", st.mode, st.callers);
	ok("--path proxy --path=gda", &st, &m);
	CHECK(st.paths == 3, "paths %u", st.paths);
	ok("--path all", &st, &m);
	CHECK(st.paths == 3, "all: paths %u", st.paths);
	ok("--list 0,9,4 --list 5", &st, &m);
	CHECK(st.nlist == 1 && st.list[0] == 5, "list: %d entries, [0] %d", st.nlist, st.list[0]);
	ok("--list 0,9,4,1", &st, &m);
	CHECK(st.nlist == 4 && st.list[1] == 9 && st.list[3] == 1, "list: %d", st.nlist);
	ok("--out dir --custom=yes", &st, &m);
	CHECK(st.out && !strcmp(st.out, "dir") && st.custom == 1, "out %s custom %d",
	      st.out ? st.out : "(null)", st.custom);
}

static void check_refusals(void)
{
	refused(&table, "--n 0", "gic t: --n: expected an integer in 1..10, got '0'");
	refused(&table, "--n 11", "gic t: --n: expected an integer in 1..10, got '11'");
	refused(&table, "--n 3x", "gic t: --n: expected an integer in 1..10, got '3x'");
	refused(&table, "--n", "gic t: --n needs a value (see gic t --help)");
	refused(&table, "--size 2G", "gic t: --size: expected a size in 1..1073741824 bytes "
		"(K, M, G suffixes allowed), got '2G'");
	refused(&table, "--size -1", "gic t: --size: expected a size in 1..1073741824 bytes "
		"(K, M, G suffixes allowed), got '-1'");
	refused(&table, "--size 4T", "gic t: --size: expected a size in 1..1073741824 bytes "
		"(K, M, G suffixes allowed), got '4T'");
	refused(&table, "--factor 1", "gic t: --factor: expected a number > 1 and <= 1024, "
		"got '1'");
	refused(&table, "--mode x", "gic t: --mode: expected one of own|lock|rr, got 'x'");
	refused(&table, "--path x", "gic t: --path: expected one of gda|proxy|gin|all, got 'x'");
	refused(&table, "--path gin", "gic t: --path gin: not built");
	refused(&table, "--list 1,10", "gic t: --list: expected up to 4 comma-separated integers "
		"in 0..9, got '1,10'");
	refused(&table, "--list 1,2,3,4,5", "gic t: --list: expected up to 4 comma-separated "
		"integers in 0..9, got '1,2,3,4,5'");
	refused(&table, "--custom no", "gic t: --custom: expected yes, got 'no'");
	refused(&table, "--quick=1", "gic t: unknown flag '--quick=1' (see gic t --help)");
	refused(&table, "-x 1", "gic t: unknown flag '-x' (see gic t --help)");
	refused(&table, "--nn 1", "gic t: unknown flag '--nn' (see gic t --help)");
	/* The driver's conventions. */
	refused(&common, "--n 0", "gic: --n: expected an integer in 1..10, got '0'");
	refused(&common, "--caller x", "gic: --caller: expected fma or both, got 'x'");
	refused(&common, "--mode x", "gic: --mode: expected own, lock or rr, got 'x'");
	/* A program's own table (gic-demo's): its name instead of "gic SUB". */
	refused(&prog, "--n 0", "gic-t: --n: expected an integer in 1..10, got '0'");
	refused(&prog, "--mode x", "gic-t: --mode: expected own, lock or rr, got 'x'");
	refused(&prog, "--n", "gic-t: --n needs a value (see --help)");
	refused(&prog, "--nope", "gic-t: unknown flag '--nope' (see --help)");
}

/* The common table: "-q" glued is no value flag; a value flag's glued
 * value is taken. */
static void check_glued(void)
{
	static const gic_flag g[] = {
		{ "-n", .value = "N", GIC_FLAG_INT, GIC_FLAG_FIELD(tstate, n), .lo = 1, .hi = 100 },
	};
	static const gic_flag_table gt = GIC_FLAG_TABLE("", g, 1), gs = GIC_FLAG_TABLE("s", g, 0);
	char *argv[] = { "s", "-n42", "-n", "7" };
	tstate st = { 0 };
	int i = 1;

	CHECK(gic_flags_take(&gt, "s", 4, argv, &i, &st, NULL) == 1 && st.n == 42 && i == 1,
	      "glued: n %d i %d", st.n, i);
	i = 2;
	CHECK(gic_flags_take(&gt, "s", 4, argv, &i, &st, NULL) == 1 && st.n == 7 && i == 3,
	      "next: n %d i %d", st.n, i);
	i = 1;
	CHECK(gic_flags_take(&gs, "s", 4, argv, &i, &st, NULL) == 0, "a subcommand's -n42");
}

/* --help: every flag, its value form, range, names and default; no line
 * past 80 columns. */
static void check_help(void)
{
	static const char *const want[] = {
		"  --n N          1..10 (default 3): an int\n",
		"  --size SIZE    1..1G bytes, K/M/G suffixes (default 8)\n",
		"  --factor F     > 1, <= 1024 (default 2)\n",
		"  --quick, -q    short\n",
		"  --mode M       own | lock | rr\n",
		("  --path P       gda | proxy | gin | all (repeatable; default gda): first line\n"
		 "                 second line\n"),
		"  --list LIST    up to 4 of 0..9, comma-separated (default 6)\n",
		"  --out DIR      (default here)\n",
		"  --custom X\n",
		"  -x N           a common flag\n",
	};
	char *text = NULL;
	size_t len = 0, col = 0;
	FILE *f = open_memstream(&text, &len);

	gic_flags_help(&table, f);
	fclose(f);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		CHECK(strstr(text, want[k]), "help lacks '%s':\n%s", want[k], text);
	for (const char *p = text; *p; p++, col++) {
		CHECK(col < 80 || *p == '\n', "help: a line past 80 columns:\n%s", text);
		if (*p == '\n')
			col = (size_t)-1;
	}
	free(text);
}

static void check_format(void)
{
	tstate st = { .n = 4, .pace = 100, .size = 4096, .mode = 9, .callers = 1 };
	static const char *const want[][2] = { { "n", "4" }, { "pace_ns", "100" },
					       { "size", "4096" }, { "mode", "rr" },
					       { "caller", "both" } };
	char buf[64];

	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		int rc = gic_flags_format(&table, want[k][0], &st, buf, sizeof(buf));

		CHECK(rc == 0 && !strcmp(buf, want[k][1]), "param %s: rc %d '%s', want '%s'",
		      want[k][0], rc, rc ? "" : buf, want[k][1]);
	}
	CHECK(gic_flags_format(&table, "nope", &st, buf, sizeof(buf)) == EINVAL, "no param nope");
	st.mode = 5;
	CHECK(gic_flags_format(&table, "mode", &st, buf, sizeof(buf)) == EINVAL, "mode 5: no name");
}

int main(void)
{
	check_values();
	check_refusals();
	check_glued();
	check_help();
	check_format();
	if (!failures)
		printf("test_flags: every kind parsed, refused, printed and formatted\n");
	return failures != 0;
}
