/*
 * bench/gic/test_paper.c - gic_result_paper() attaches the paper's number
 * by experiment, name, metric and, where the paper's row is one
 * transport's, the row's transport: NVSHMEM's put over IBGDA and over IBRC
 * get different Table 3 numbers, and over P2P none.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exp.h"

static int failures;

/* The paper number gic_result_paper gives a row (NAN: none). */
static double paper_of(const char *exp, const char *name, const char *metric,
		       const char *transport)
{
	gic_result r;

	memset(&r, 0, sizeof(r));
	snprintf(r.experiment, sizeof(r.experiment), "%s", exp);
	snprintf(r.name, sizeof(r.name), "%s", name);
	snprintf(r.metric, sizeof(r.metric), "%s", metric);
	snprintf(r.transport, sizeof(r.transport), "%s", transport);
	r.paper = NAN;
	if (!gic_result_paper(&r))
		return NAN;
	return r.paper;
}

static void expect(const char *what, double got, double want)
{
	int ok = isnan(want) ? isnan(got) : got == want;

	if (!ok) {
		failures++;
		printf("FAIL %s: paper %g, want %g\n", what, got, want);
	}
}

int main(void)
{
	expect("gda issue", paper_of("lat", "gda-inline fence-gpu", "issue", "softnic-gpu"), 0.70);
	expect("ibgda issue", paper_of("lat", "nvshmem put", "issue", "nvshmem-ibgda"), 5.31);
	expect("ibgda putc", paper_of("lat", "nvshmem put", "put+completion", "nvshmem-ibgda"),
	       11.1);
	expect("ibrc issue", paper_of("lat", "nvshmem put", "issue", "nvshmem-ibrc"), 0.99);
	expect("ibrc rtt", paper_of("lat", "nvshmem p", "rtt", "nvshmem-ibrc"), 11.07);
	expect("p2p issue (no P-IB row)", paper_of("lat", "nvshmem put", "issue", "nvshmem-p2p"),
	       NAN);
	expect("unknown row", paper_of("lat", "no such row", "issue", "softnic-gpu"), NAN);
	expect("nvshmem dormant registers",
	       paper_of("kernel", "nvshmem fma code msgs=0 size=8", "registers", "nvshmem-ibrc"), 44);
	expect("mini-gda dormant registers",
	       paper_of("kernel", "fma code msgs=0 size=8", "registers", "softnic-gpu"), 32);
	if (!failures)
		printf("test_paper: all rows as expected\n");
	return failures != 0;
}
