/*
 * bench/gic/args.c - flag-parsing helpers for the experiments (gic.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic.h"
#include "gic/proxy.h"

int gic_arg_is(const char *arg, const char *flag)
{
	size_t n = strlen(flag);

	return !strncmp(arg, flag, n) && (arg[n] == '\0' || arg[n] == '=');
}

const char *gic_arg_value(const char *sub, int argc, char **argv, int *i)
{
	const char *eq = strchr(argv[*i], '=');

	if (eq && argv[*i][0] == '-' && argv[*i][1] == '-')
		return eq + 1;
	if (*i + 1 >= argc) {
		fprintf(stderr, "gic %s: %s needs a value (see gic %s --help)\n", sub, argv[*i],
			sub);
		return NULL;
	}
	return argv[++*i];
}

int gic_arg_int(const char *sub, const char *flag, const char *val, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (end == val || *end || errno || v < lo || v > hi) {
		fprintf(stderr, "gic %s: %s: expected an integer in %ld..%ld, got '%s'\n", sub, flag,
			lo, hi, val);
		return EINVAL;
	}
	*out = v;
	return 0;
}

int gic_arg_size(const char *sub, const char *flag, const char *val, size_t lo, size_t hi,
		 size_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (end != val && (*end == 'K' || *end == 'k'))
		shift = 10, end++;
	else if (end != val && (*end == 'M' || *end == 'm'))
		shift = 20, end++;
	else if (end != val && (*end == 'G' || *end == 'g'))
		shift = 30, end++;
	if (val[0] == '-' || end == val || *end || errno || v > (hi >> shift) ||
	    (v << shift) < lo) {
		fprintf(stderr, "gic%s%s: %s: expected a size in %zu..%zu bytes (K, M, G "
			"suffixes allowed), got '%s'\n", *sub ? " " : "", sub, flag, lo, hi, val);
		return EINVAL;
	}
	*out = (size_t)(v << shift);
	return 0;
}

/* Prints "a|b|c[|all]". */
static void print_names(const char *const *names, int n, int with_all)
{
	for (int k = 0; k < n; k++)
		fprintf(stderr, "%s%s", k ? "|" : "", names[k]);
	if (with_all)
		fputs("|all", stderr);
}

int gic_arg_choice(const char *sub, const char *flag, const char *val,
		   const char *const *names, int n, int *index)
{
	for (int k = 0; k < n; k++) {
		if (!strcmp(val, names[k])) {
			*index = k;
			return 0;
		}
	}
	fprintf(stderr, "gic %s: %s: expected one of ", sub, flag);
	print_names(names, n, 0);
	fprintf(stderr, ", got '%s'\n", val);
	return EINVAL;
}

int gic_arg_choice_bits(const char *sub, const char *flag, const char *val,
			const char *const *names, int n, unsigned all_bits, unsigned *bits)
{
	int k;

	if (all_bits && !strcmp(val, "all")) {
		*bits = all_bits;
		return 0;
	}
	for (k = 0; k < n; k++) {
		if (!strcmp(val, names[k])) {
			*bits |= 1u << k;
			return 0;
		}
	}
	fprintf(stderr, "gic %s: %s: expected one of ", sub, flag);
	print_names(names, n, all_bits != 0);
	fprintf(stderr, ", got '%s'\n", val);
	return EINVAL;
}

int gic_arg_int_list(const char *sub, const char *flag, const char *val, long lo, long hi,
		     int *out, int max, int *n)
{
	const char *p = val;

	*n = 0;
	for (;;) {
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || (*end && *end != ',') || errno || v < lo || v > hi || *n >= max) {
			fprintf(stderr, "gic %s: %s: expected up to %d comma-separated integers in "
				"%ld..%ld, got '%s'\n", sub, flag, max, lo, hi, val);
			return EINVAL;
		}
		out[(*n)++] = (int)v;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

int gic_arg_unknown(const char *sub, const char *arg)
{
	fprintf(stderr, "gic %s: unknown flag '%s' (see gic %s --help)\n", sub, arg, sub);
	return EINVAL;
}

int gic_arg_proxy_shape(const char *sub, const char *flag, const char *val, int min_rings,
			int *T, int *R, int *B)
{
	int t = gic_arg_is(flag, "-T"), r = gic_arg_is(flag, "-R");
	long hi = t ? GIC_PROXY_MAX_WORKERS : r ? GIC_PROXY_MAX_RINGS : GIC_PROXY_MAX_BATCH, v;

	if (gic_arg_int(sub, t ? "-T" : r ? "-R" : "-B", val, r ? min_rings : 1, hi, &v))
		return EINVAL;
	*(t ? T : r ? R : B) = (int)v;
	return 0;
}
