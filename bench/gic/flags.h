/*
 * bench/gic/flags.h - flag tables: one array of descriptors per `gic`
 * subcommand (and one of the driver's common flags), and the engine that
 * parses argv against a table, prints its --help and formats the fields
 * that results record as "key=value" params.
 *
 * A descriptor names a flag (and an alias), its kind, the field of the
 * state it sets (offset and width, GIC_FLAG_FIELD), the range, the names
 * of an enumeration, the default and the help text. Flags whose meaning
 * no kind has (a list of rows, a list of names) keep a callback.
 *
 * Matching, as the hand-written parsers did: a flag is the argument itself
 * or "flag=value"; its value is the text after '=' for "--flag=value",
 * else the next argument. A table of common flags (the driver's) also
 * takes a short flag's value glued to it ("-n100"). Booleans match only
 * the argument itself.
 *
 * Errors: 0 or a positive errno. Every refusal prints one line to stderr,
 * "gic SUB: FLAG: expected ..., got 'VALUE'" ("gic: FLAG: ..." for the
 * common flags, "PROG: FLAG: ..." for a program's own table, such as
 * gic-demo's), and returns EINVAL; `gic` exits with status 2 for them.
 */
#ifndef GIC_BENCH_FLAGS_H
#define GIC_BENCH_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gic_flag_kind {
	GIC_FLAG_INT,    /* a decimal integer in lo..hi into an int, unsigned or long field */
	GIC_FLAG_SIZE,   /* bytes in lo..hi, K/M/G suffixes (powers of 1024), into a size_t */
	GIC_FLAG_DOUBLE, /* a number v with lo < v <= hi into a double */
	GIC_FLAG_BOOL,   /* no value: the int field becomes 1 */
	GIC_FLAG_CHOICE, /* one of names[0..n): the field gets values[k] (k without values) */
	GIC_FLAG_BITS,   /* one of names[0..n), repeatable: ORs 1u << k into an unsigned;
			  * "all" (when all != 0) ORs all */
	GIC_FLAG_LIST,   /* up to max comma-separated integers in lo..hi into an int array
			  * (count_off: its int count) */
	GIC_FLAG_STRING, /* the value (a pointer into argv) into a const char * field */
	GIC_FLAG_CUSTOM, /* fn parses the value */
	GIC_FLAG_NOTE,   /* --help only: what a common flag means to this subcommand
			  * (name is the text of the flag column) */
} gic_flag_kind;

typedef struct gic_flag gic_flag;

/* A flag's callback: the whole parse of a GIC_FLAG_CUSTOM flag, or a check
 * of val before the engine parses it (other kinds). state is the table's
 * state; 0, or EINVAL after a message naming sub, the flag and val. */
typedef int (*gic_flag_fn)(const char *sub, const gic_flag *f, const char *val, void *state);

struct gic_flag {
	const char *name;   /* "--window", "-T" */
	const char *alias;  /* another spelling ("-h"), or NULL */
	const char *value;  /* the value's form in --help ("N", "LIST"); NULL: none */
	gic_flag_kind kind;
	size_t off, width;  /* the field in the state: GIC_FLAG_FIELD(type, member) */
	size_t count_off;   /* LIST: offsetof the int count of entries */
	long lo, hi;        /* INT, SIZE, LIST: the range; DOUBLE: lo < v <= hi */
	long def;           /* INT, SIZE, DOUBLE, CHOICE: the value stored before parsing;
			     * LIST: when not 0, the one entry (--help says "default N"
			     * when not 0 and dflt is NULL) */
	int max;            /* LIST: most entries */
	const char *const *names; /* CHOICE, BITS: the names (GIC_FLAG_NAMES) */
	int n;
	unsigned all;       /* BITS: what "all" sets; 0: no "all" */
	const long *values; /* CHOICE: the value stored for names[k]; NULL: k */
	unsigned mark;      /* ORed into the parser's *marks when the flag is given */
	gic_flag_fn fn;     /* CUSTOM: the parser; other kinds: a check first (or NULL) */
	const char *dflt;   /* --help: the default, in words */
	const char *help;   /* --help: what the flag does; '\n' starts a new line */
	const char *param;  /* INT, SIZE, CHOICE: the field's key in result params
			     * (gic_flags_format) */
};

/* The field member of struct type T: offset and width. */
#define GIC_FLAG_FIELD(T, member) .off = offsetof(T, member), .width = sizeof(((T *)0)->member)
/* CHOICE and BITS names, and CHOICE values, as literals. */
#define GIC_FLAG_NAMES(...)                                               \
	.names = (const char *const[]){ __VA_ARGS__ },                    \
	.n = (int)(sizeof((const char *const[]){ __VA_ARGS__ }) / sizeof(const char *))
#define GIC_FLAG_VALUES(...) .values = (const long[]){ __VA_ARGS__ }

/* A subcommand's flags. */
typedef struct gic_flag_table {
	const char *sub;   /* the subcommand ("lat"); "" for the driver's common flags */
	const gic_flag *f; /* n descriptors, in --help order */
	int n;
	int common;        /* 1: the driver's conventions: messages "gic: FLAG: ...", a
			    * CHOICE expects "A or B", short flags take glued values */
	const char *prog;  /* a program of its own ("gic-demo"): messages start with it
			    * instead of "gic SUB", a CHOICE expects "A or B", and
			    * refusals say "(see --help)"; NULL for gic's tables */
} gic_flag_table;

#define GIC_FLAG_TABLE(sub_, arr, common_)                                          \
	{ .sub = (sub_), .f = (arr), .n = (int)(sizeof(arr) / sizeof((arr)[0])), \
	  .common = (common_) }
/* The table of a program of its own (prog_, e.g. "gic-demo"), not of gic. */
#define GIC_FLAG_PROG_TABLE(prog_, arr)                                            \
	{ .sub = (prog_), .f = (arr), .n = (int)(sizeof(arr) / sizeof((arr)[0])), \
	  .prog = (prog_) }

/* 1 when arg is flag, alone or as "flag=value". */
int gic_flag_is(const char *arg, const char *flag);

/* Stores every INT, SIZE, DOUBLE and CHOICE flag's def into state, and a
 * LIST's def (when not 0) as its one entry. */
void gic_flags_defaults(const gic_flag_table *t, void *state);

/* Takes the flag at argv[*i] (and its value, advancing *i) into state;
 * sub names the subcommand in "needs a value" messages (t->prog, when set,
 * names the program instead). Returns 1 when it
 * was a flag of t, 0 when not (nothing printed), -1 after a message (a
 * missing or bad value). marks (may be NULL) gets the flag's mark ORed in. */
int gic_flags_take(const gic_flag_table *t, const char *sub, int argc, char **argv, int *i,
		   void *state, unsigned *marks);

/* A subcommand's (or a program's) whole parse: gic_flags_defaults, then
 * every argument of argv[1..argc) through gic_flags_take; an argument that
 * is no flag of t is refused ("gic SUB: unknown flag 'ARG' (see gic SUB
 * --help)", "PROG: ... (see --help)" for a program's table). 0 or
 * EINVAL after a message. */
int gic_flags_parse(const gic_flag_table *t, int argc, char **argv, void *state,
		    unsigned *marks);

/* For callbacks: val must be one of names[0..n); *index receives its
 * index. 0, or EINVAL after the message for sub and flag. */
int gic_flag_choice(const char *sub, const char *flag, const char *val,
		    const char *const *names, int n, int *index);

/* Prints t's flags as --help lists them: the flag and its value form,
 * then its range or names, its default, and its help, wrapped to 80
 * columns. */
void gic_flags_help(const gic_flag_table *t, FILE *f);

/* Writes the field of the flag of t whose param is key, from state, as
 * result params write it: an INT or SIZE in decimal, a CHOICE by its name.
 * (param is for those kinds only.) 0, or EINVAL when no flag has that key
 * (or a CHOICE's field holds none of its values). */
int gic_flags_format(const gic_flag_table *t, const char *key, const void *state, char *buf,
		     size_t len);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BENCH_FLAGS_H */
