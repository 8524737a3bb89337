/*
 * The benchmark statistics (bench/stats.h): quantiles by linear
 * interpolation between order statistics (NumPy's default), trimming,
 * mean and sample standard deviation, error returns, JSON output. Every
 * expected value below was worked out by hand from the definition.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "testkit.h"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * (1.0 + fabs(b));
}

CASE(quantiles_by_definition)
{
	const double v[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

	/* rank h = (n - 1) p: p50 -> 4.5 -> 5.5; p90 -> 8.1 -> 9.1; p99 -> 8.91 -> 9.91 */
	CHECK(near(gic_quantile_sorted(v, 10, 0.5), 5.5), "p50");
	CHECK(near(gic_quantile_sorted(v, 10, 0.9), 9.1), "p90");
	CHECK(near(gic_quantile_sorted(v, 10, 0.99), 9.91), "p99");
	CHECK(near(gic_quantile_sorted(v, 10, 0.0), 1) && near(gic_quantile_sorted(v, 10, 1.0), 10),
	      "ends");
	CHECK(near(gic_quantile_sorted(v, 10, -3), 1) && near(gic_quantile_sorted(v, 10, 7), 10),
	      "p clamped to [0, 1]");
	CHECK(near(gic_quantile_sorted(v, 1, 0.37), 1), "one sample");
	CHECK(gic_quantile_sorted(v, 0, 0.5) == 0, "no sample");
}

CASE(summary_trims_and_sorts)
{
	gic_samples s = { 0 };
	gic_summary sm;
	/* Two warm-up outliers, then 8 samples given out of order. */
	const double in[] = { 1000, 2000, 8, 1, 7, 2, 6, 3, 5, 4 };

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
		REQUIRE(gic_samples_add(&s, in[i]) == 0, "add");
	REQUIRE(gic_summarize(&s, 2, &sm) == 0, "summarize");
	CHECK(sm.count == 8 && sm.trimmed == 2, "count %zu trimmed %zu", sm.count, sm.trimmed);
	CHECK(near(sm.min, 1) && near(sm.max, 8), "min %g max %g", sm.min, sm.max);
	CHECK(near(sm.mean, 4.5), "mean %g", sm.mean);
	/* sum of squared deviations from 4.5 over 1..8 = 42; / 7 = 6 */
	CHECK(near(sm.stdev, sqrt(6.0)), "stdev %g", sm.stdev);
	CHECK(near(sm.p50, 4.5) && near(sm.p90, 7.3) && near(sm.p99, 7.93), "p50 %g p90 %g p99 %g",
	      sm.p50, sm.p90, sm.p99);
	CHECK(s.n == 10 && s.v[0] == 1000, "the samples themselves are left alone");
	CHECK(gic_summarize(&s, 10, &sm) == ENODATA && sm.trimmed == 10, "all trimmed");
	CHECK(gic_summarize(NULL, 0, &sm) == EINVAL, "NULL samples");
	gic_samples_free(&s);
	CHECK(s.n == 0 && s.v == NULL, "freed");
}

CASE(json_line)
{
	gic_samples s = { 0 };
	gic_summary sm;
	char buf[512] = { 0 };
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	REQUIRE(f, "fmemopen");
	for (int i = 1; i <= 4; i++)
		gic_samples_add(&s, i);
	REQUIRE(gic_summarize(&s, 0, &sm) == 0, "summarize");
	CHECK(gic_summary_write_json(f, "lat\"x", &sm, "us") == 0, "write");
	fclose(f);
	CHECK(strstr(buf, "\"name\": \"lat\\\"x\"") != NULL, "escaped name in %s", buf);
	CHECK(strstr(buf, "\"p50\": 2.5") != NULL, "p50 in %s", buf);
	CHECK(gic_summary_write_json(NULL, "x", &sm, "us") == EINVAL, "NULL file");
	gic_samples_free(&s);
}

static const tk_case cases[] = {
	TK_ENTRY(quantiles_by_definition), TK_ENTRY(summary_trims_and_sorts), TK_ENTRY(json_line),
};

int main(int argc, char **argv)
{
	return tk_run_cases("test_stats", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
