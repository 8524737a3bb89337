/*
 * bench/gic/test_pe_launch.c - pe_launch.h without a GPU or a library: this
 * program is both the driver and, run again as `<prog> __test-pe ...`, the
 * fake PEs, which play one scenario each (the job says which): a clean run
 * with results, verdicts and a note; a skip; a skip with PEs left waiting
 * (the grace); a PE that dies; a PE's own time limit; a garbled pipe; a
 * second unique id; the driver's time limit. Each case checks the return
 * value, the results, the lines on stderr, and that no PE is left.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pe_launch.h"

#define SUBCOMMAND "__test-pe"
#define MAGIC 0x74657374u /* "test" */

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			failures++;                                            \
			fprintf(stdout, "%s:%d: CHECK(%s) failed: ", __FILE__, \
				__LINE__, #cond);                              \
			fprintf(stdout, __VA_ARGS__);                          \
			fputc('\n', stdout);                                   \
		}                                                              \
	} while (0)

enum {
	SC_OK = 1, SC_SKIP, SC_SKIP_GRACE, SC_DIES, SC_ALARM, SC_GARBLED, SC_UID_TWICE,
	SC_TIMEOUT,
	SC_GATHER,     /* start_all: two rounds of GATHER, each PE checks what came back */
	SC_GATHER_LEN, /* start_all: PE 1's GATHER of another length than PE 0's */
};

/* PE rank's GATHER payload of round k (8 bytes). */
static uint64_t gather_word(int rank, int k)
{
	return 0x6761746865720000ull + (uint64_t)rank * 16 + (uint64_t)k;
}

typedef struct test_job {
	uint32_t magic;
	int scenario;
	int limit_s;
} test_job;

static const uint8_t test_uid[16] = "0123456789abcde";

/* The results gic_emit() receives (gic_sink is opaque to pe_launch.c). */
struct gic_sink {
	gic_result v[8];
	int n;
};

int gic_emit(gic_sink *sink, const gic_result *r)
{
	if (sink->n >= 8)
		return ENOMEM;
	sink->v[sink->n++] = *r;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The fake PEs. */

static void pe_result(const gic_pl_pe *pe, int phase, const char *name)
{
	gic_result r;

	memset(&r, 0, sizeof(r));
	snprintf(r.experiment, sizeof(r.experiment), "test");
	snprintf(r.name, sizeof(r.name), "%s", name);
	snprintf(r.metric, sizeof(r.metric), "issue");
	r.validated = 1;
	gic_pl_emit(pe, phase, &r);
}

static int fake_pe(int argc, char **argv)
{
	gic_pl_pe pe;
	test_job job;
	uint8_t uid[sizeof(test_uid)];
	int v[4];

	if (gic_pl_pe_args(argc, argv, "the pe_launch test", v))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	gic_pl_pe_init(&pe, "TEST", "test", MAGIC, v[0], v[1], v[3]);
	gic_pl_read_job(&pe, v[2], &job, sizeof(job));
	if (job.scenario == SC_GATHER || job.scenario == SC_GATHER_LEN) {
		gic_pl_pe_alarm(&pe, job.limit_s);
		for (int k = 0; k < 2; k++) {
			uint64_t mine[2] = { gather_word(pe.rank, k), 0 }, all[4] = { 0 };
			uint32_t len = job.scenario == SC_GATHER_LEN && pe.rank == 1 ? 16 : 8;

			gic_pl_allgather(&pe, v[2], mine, len, all, 5000);
			if (all[0] != gather_word(0, k) || all[1] != gather_word(1, k))
				gic_pl_die(&pe, "checking the gathered records", "not what was sent");
		}
		if (pe.rank == 0)
			pe_result(&pe, 0, "row a");
		else
			gic_pl_verdict(&pe, 0, 1);
		gic_pl_send(&pe, GIC_PL_REC_DONE, 0, NULL, 0);
		return 0;
	}
	if (pe.rank > 0) {
		gic_pl_read_uid(&pe, v[2], uid, sizeof(uid));
		if (memcmp(uid, test_uid, sizeof(uid)))
			gic_pl_die(&pe, "reading the unique id", "not the one PE 0 sent");
	}
	/* Every pause() below ends by the driver's SIGKILL or by this limit;
	 * the driver's own limit is tested with one that outlasts it. */
	gic_pl_pe_alarm(&pe, job.scenario == SC_TIMEOUT ? 60 : job.limit_s);
	if (job.scenario == SC_ALARM || job.scenario == SC_TIMEOUT)
		pause();
	if (job.scenario == SC_SKIP) {
		int32_t why = 7;

		gic_pl_send(&pe, GIC_PL_REC_SKIP, 0, &why, sizeof(why));
		return 0;
	}
	if (job.scenario == SC_GARBLED) {
		uint32_t junk[4] = { 1, 2, 3, 4 };

		if (write(pe.out_fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
			return 3;
		pause();
	}
	if (pe.rank == 0) {
		static const char note[] = "row d: skipped: a reason";

		gic_pl_send(&pe, GIC_PL_REC_UID, 0, test_uid, sizeof(test_uid));
		if (job.scenario == SC_UID_TWICE) {
			gic_pl_send(&pe, GIC_PL_REC_UID, 0, test_uid, sizeof(test_uid));
			pause();
		}
		if (job.scenario == SC_DIES || job.scenario == SC_SKIP_GRACE)
			pause(); /* waits for PE 1, as a library would */
		pe_result(&pe, 0, "row a");
		pe_result(&pe, 1, "row b");
		pe_result(&pe, 2, "row c");
		gic_pl_send(&pe, GIC_PL_REC_NOTE, 0, note, (uint32_t)strlen(note) + 1);
	} else {
		if (job.scenario == SC_DIES)
			return 3;
		if (job.scenario == SC_SKIP_GRACE) {
			int32_t why = 9;

			gic_pl_send(&pe, GIC_PL_REC_SKIP, 0, &why, sizeof(why));
			return 0;
		}
		gic_pl_verdict(&pe, 0, 1);
		gic_pl_verdict(&pe, 1, 0);
	}
	gic_pl_send(&pe, GIC_PL_REC_DONE, 0, NULL, 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The driver's cases. */

static char errbuf[8192];
static FILE *err_tmp;
static int err_saved = -1;

/* Sends stderr (ours and the PEs') to a file until capture_end(), which
 * leaves what was written in errbuf. */
static void capture_begin(void)
{
	err_tmp = tmpfile();
	err_saved = dup(2);
	if (!err_tmp || err_saved < 0) {
		fprintf(stdout, "test_pe_launch: cannot capture stderr\n");
		exit(1);
	}
	fflush(stderr);
	dup2(fileno(err_tmp), 2);
}

static void capture_end(void)
{
	size_t n;

	fflush(stderr);
	dup2(err_saved, 2);
	close(err_saved);
	rewind(err_tmp);
	n = fread(errbuf, 1, sizeof(errbuf) - 1, err_tmp);
	errbuf[n] = '\0';
	fclose(err_tmp);
}

/* How a scenario must end: gic_pl_run()'s value, the skip (and its
 * payload), the results, the time it took, and lines stderr must hold. */
typedef struct expect {
	const char *name;
	int sc, grace_s, limit_s;
	int rc, skipped;
	int32_t why;
	int nres;
	uint64_t min_ms, max_ms;
	const char *lines[3];
} expect;

static const expect expects[] = {
	{ "ok", SC_OK, 0, 30, 0, 0, 0, 3, 0, 8000,
	  { "gic test: row d: skipped: a reason\n",
	    "gic test: row b issue: PE 1 found a wrong payload\n",
	    "gic test: row c issue: PE 1 sent no verdict\n" } },
	{ "skip", SC_SKIP, 0, 30, 0, 1, 7, 0, 0, 8000, { NULL } },
	{ "skip_grace", SC_SKIP_GRACE, 1, 30, 0, 1, 9, 0, 900, 8000,
	  { "gic test: TEST PE 0 was stopped by the driver (SIGKILL) after another PE "
	    "skipped the run\n" } },
	{ "dies", SC_DIES, 0, 30, EIO, 0, 0, 0, 0, 8000,
	  { "gic test: TEST PE 1 exited with status 3 before it finished (its messages, if "
	    "any, are above)\n",
	    "gic test: TEST PE 0 was stopped by the driver (SIGKILL)\n" } },
	{ "alarm", SC_ALARM, 0, 1, EIO, 0, 0, 0, 900, 8000,
	  { "gic test: TEST PE 0: time limit (1 s) reached\n",
	    "gic test: TEST PE 0 exited with status 124 before it finished" } },
	{ "garbled", SC_GARBLED, 0, 30, EPROTO, 0, 0, 0, 0, 8000,
	  { "gic test: TEST PE 0: garbled output pipe\n",
	    "gic test: TEST PE 0 was stopped by the driver (SIGKILL)\n" } },
	{ "uid_twice", SC_UID_TWICE, 0, 30, EPROTO, 0, 0, 0, 0, 8000,
	  { "gic test: TEST PE 0 sent a malformed record (type 2, 16 bytes)\n" } },
	{ "gather", SC_GATHER, 0, 30, 0, 0, 0, 1, 0, 8000, { NULL } },
	{ "gather_len", SC_GATHER_LEN, 0, 30, EPROTO, 0, 0, 0, 0, 8000,
	  { " sent a malformed record (type 7, " } }, /* whichever PE's came second */
	{ "timeout", SC_TIMEOUT, 0, 1, ETIMEDOUT, 0, 0, 0, 10900, 20000,
	  { "gic test: the TEST PEs did not finish within 11 s (TEST_LIMIT_S): stopping them\n",
	    "gic test: TEST PE 0 was stopped by the driver (SIGKILL)\n" } },
};

/* Runs scenario x->sc, stderr captured, and checks how it ended. */
static void run_expect(const expect *x)
{
	test_job job = { MAGIC, x->sc, x->limit_s };
	gic_pl_spec s = {
		.sub = "test", .lib = "TEST", .subcommand = SUBCOMMAND, .magic = MAGIC,
		.job = &job, .job_len = sizeof(job), .npes = 2, .limit_s = x->limit_s,
		.limit_env = "TEST_LIMIT_S", .max_results = 4, .nphases = 4,
		.skip_len = sizeof(int32_t), .skip_grace_s = x->grace_s,
		.start_all = x->sc == SC_GATHER || x->sc == SC_GATHER_LEN,
	};
	gic_sink sink;
	gic_pl_skip skip;
	int32_t why = 0;
	uint64_t t0 = gic_pl_now_ms(), ms;
	int rc;

	memset(&sink, 0, sizeof(sink));
	capture_begin();
	rc = gic_pl_run(&s, &sink, &skip);
	ms = gic_pl_now_ms() - t0;
	capture_end();
	memcpy(&why, skip.data, sizeof(why));
	CHECK(rc == x->rc, "%s: rc %d, want %d; stderr:\n%s", x->name, rc, x->rc, errbuf);
	CHECK(skip.skipped == x->skipped && (!x->skipped || why == x->why),
	      "%s: skipped %d why %d", x->name, skip.skipped, why);
	CHECK(sink.n == x->nres, "%s: %d results, want %d", x->name, sink.n, x->nres);
	CHECK(ms >= x->min_ms && ms < x->max_ms, "%s: took %llu ms", x->name,
	      (unsigned long long)ms);
	for (int i = 0; i < 3 && x->lines[i]; i++)
		CHECK(strstr(errbuf, x->lines[i]), "%s: no line '%s' in:\n%s", x->name,
		      x->lines[i], errbuf);
	if (x->sc == SC_OK && sink.n == 3) {
		CHECK(sink.v[0].validated == 1, "ok: a good verdict not applied");
		CHECK(sink.v[1].validated == 0, "ok: a bad verdict not applied");
		CHECK(sink.v[2].validated == 0, "ok: a missing verdict not applied");
		CHECK(!strstr(errbuf, " PE 0 ") && !strstr(errbuf, " PE 1 exited"),
		      "ok: a PE reported:\n%s", errbuf);
	}
	if (x->sc == SC_SKIP)
		CHECK(errbuf[0] == '\0', "skip: stderr:\n%s", errbuf);
	if (x->sc == SC_GATHER && sink.n == 1)
		CHECK(sink.v[0].validated == 1 && errbuf[0] == '\0',
		      "gather: verdict %d; stderr:\n%s", sink.v[0].validated, errbuf);
	/* Every PE was reaped: no child is left. */
	CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD, "%s: a child is left", x->name);
}

static void case_bad_spec(void)
{
	test_job job = { MAGIC, SC_OK, 1 };
	gic_pl_spec s = {
		.sub = "test", .lib = "TEST", .subcommand = SUBCOMMAND, .magic = MAGIC,
		.job = &job, .job_len = sizeof(job), .npes = GIC_PL_MAX_PES + 1, .limit_s = 1,
		.limit_env = "TEST_LIMIT_S", .max_results = 1, .nphases = 1, .skip_len = 4,
	};
	gic_sink sink;
	gic_pl_skip skip;

	CHECK(gic_pl_run(&s, &sink, &skip) == EINVAL, "npes over the maximum");
	s.npes = 2;
	s.skip_len = GIC_PL_SKIP_MAX + 1;
	CHECK(gic_pl_run(&s, &sink, &skip) == EINVAL, "skip_len over the maximum");
}

static void case_args(void)
{
	char *few[] = { "gic", SUBCOMMAND, "0", "2", NULL };
	char *bad[] = { "gic", SUBCOMMAND, "0", "2", "x", "1", NULL };
	char *big[] = { "gic", SUBCOMMAND, "0", "2", "0", "4097", NULL };
	char *rank[] = { "gic", SUBCOMMAND, "2", "2", "0", "1", NULL };
	char *good[] = { "gic", SUBCOMMAND, "1", "2", "5", "6", NULL };
	int v[4] = { -1, -1, -1, -1 };

	capture_begin();
	CHECK(gic_pl_pe_args(4, few, "the test", v) == EINVAL, "too few arguments");
	CHECK(gic_pl_pe_args(6, bad, "the test", v) == EINVAL, "not an integer");
	CHECK(gic_pl_pe_args(6, big, "the test", v) == EINVAL, "over 4096");
	CHECK(gic_pl_pe_args(6, rank, "the test", v) == EINVAL, "rank out of range");
	capture_end();
	CHECK(!strcmp(errbuf, "gic __test-pe: internal subcommand of the test; expected <rank> "
		      "<nranks> <in_fd> <out_fd>\n"
		      "gic __test-pe: expected an integer in 0..4096, got 'x'\n"
		      "gic __test-pe: expected an integer in 0..4096, got '4097'\n"
		      "gic __test-pe: rank 2 out of 2 PEs\n"), "messages:\n%s", errbuf);
	CHECK(gic_pl_pe_args(6, good, "the test", v) == 0 && v[0] == 1 && v[1] == 2 && v[2] == 5 &&
	      v[3] == 6, "good arguments: %d %d %d %d", v[0], v[1], v[2], v[3]);
	CHECK(gic_pl_limit_s("TEST_PL_UNSET_VARIABLE", 42) == 42, "limit default");
	setenv("TEST_PL_LIMIT", "7", 1);
	CHECK(gic_pl_limit_s("TEST_PL_LIMIT", 42) == 7, "limit from the environment");
	setenv("TEST_PL_LIMIT", "0", 1);
	CHECK(gic_pl_limit_s("TEST_PL_LIMIT", 42) == 42, "limit 0 refused");
}

int main(int argc, char **argv)
{
	int before;

	if (argc > 1 && !strcmp(argv[1], SUBCOMMAND))
		return fake_pe(argc, argv);
	before = failures;
	case_args();
	case_bad_spec();
	printf("%-12s %s\n", "args", failures == before ? "ok" : "FAILED");
	for (size_t i = 0; i < sizeof(expects) / sizeof(expects[0]); i++) {
		if (argc > 1 && strcmp(argv[1], expects[i].name))
			continue;
		before = failures;
		run_expect(&expects[i]);
		printf("%-12s %s\n", expects[i].name, failures == before ? "ok" : "FAILED");
	}
	return failures ? 1 : 0;
}
