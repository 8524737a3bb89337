/*
 * bench/gic/exp_suite.c - `gic suite` (exp_suite.h): every experiment at
 * the paper's settings (GPU) or quick settings (--host), one sink for all,
 * and the report: DIR/results.json, DIR/report.md, and PNG plots from
 * scripts/report-plots.py when python3 is found.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exp_suite.h"
#include "gic.h"

#define SUB "suite"

#ifndef GIC_SOURCE_DIR
#define GIC_SOURCE_DIR "."
#endif

#define F(m) GIC_FLAG_FIELD(suite_state, m)
static const gic_flag suite_flags[] = {
	{ "--out", .value = "DIR", GIC_FLAG_STRING, F(out), .dflt = "gic-report",
	  .help = "report directory (created): report.md, results.json and PNG plots" },
	{ "--only", .value = "LIST", GIC_FLAG_STRING, F(only), .dflt = "all",
	  .help = "comma-separated experiments to run" },
	{ "--no-plots", .kind = GIC_FLAG_BOOL, F(no_plots),
	  .help = "do not run scripts/report-plots.py" },
	{ "--repeat", .value = "N", GIC_FLAG_INT, F(repeat), .lo = 1, .hi = GIC_REPEAT_MAX,
	  .def = 1, .help = "run the whole suite N times, each as a new gic process (its own "
	  "softnic and CUDA context) into DIR/run-K; every row then reports the median of the N "
	  "runs' p50s and their spread (min and max of the per-run p50s), as the paper reports "
	  "p50 over three runs; results.json keeps every run's rows" },
};
#undef F
static const gic_flag_table suite_table = GIC_FLAG_TABLE(SUB, suite_flags, 0);

/* Arguments per experiment: host (quick) and GPU (the paper's settings);
 * NULL: not run in that mode. */
typedef struct suite_step {
	const gic_experiment *e;
	const char *host_args;
	const char *gpu_args;
} suite_step;

/* Each run of --repeat ends within this time or is ended (SIGTERM, then
 * SIGKILL). */
enum { SUITE_RUN_LIMIT_S = 3600 };

/* The NVSHMEM rows (issue 7) join the tables where the path is built; on
 * a machine with fewer than two GPUs they are skipped with a message. GPU
 * mode only (the host mode refuses them). loaded: beside the proxy path,
 * at the same single --bg-ctas level (so no row gains " bg=N"); payload
 * names the gda path too, its default without a --path. The mini-gda and
 * proxy rows keep their names. */
#ifdef GIC_NVSHMEM_PATH
#define NVSHMEM_LAT " --path nvshmem"
#define NVSHMEM_RATE " --row nvshmem"
#define NVSHMEM_LOADED " --path nvshmem"
#define NVSHMEM_PAYLOAD "--path gda --path nvshmem"
#else
#define NVSHMEM_LAT ""
#define NVSHMEM_RATE ""
#define NVSHMEM_LOADED ""
#define NVSHMEM_PAYLOAD ""
#endif
/* Likewise the NCCL GIN rows, where NCCL's headers were found; without
 * two GPUs, the library, or a GIN backend (no network) they are skipped
 * with a line saying why. */
#ifdef GIC_HAVE_NCCL
#define GIN_LAT " --path gin"
#define GIN_RATE " --row gin"
#else
#define GIN_LAT ""
#define GIN_RATE ""
#endif

static const suite_step steps[] = {
	{ &gic_exp_lat, "--path all --order fence-gpu --order release-sys",
	  "--path all --order all --metric all" NVSHMEM_LAT GIN_LAT },
	/* Figure 3a: issue and put+completion per inline size (one kernel
	 * gives both). Figure 11: put+completion against payload size for
	 * Figure 8's paths, pointer writes (host --quick: 8 B .. 64 KiB by 8;
	 * GPU: 8 B .. 1 MiB by 2). */
	{ &gic_exp_lat, "--path gda-inline --order fence-gpu --metric issue --metric putc --sweep",
	  "--path gda-inline --order fence-gpu --metric issue --metric putc --sweep" },
	{ &gic_exp_lat, "--path gda-pointer --path proxy-baseline --path proxy-tuned --order "
	  "fence-gpu --metric issue --metric putc --sweep",
	  "--path gda-pointer --path proxy-baseline --path proxy-tuned --order fence-gpu "
	  "--metric issue --metric putc --sweep" },
	/* Completion scope (Figure 4, Table 7): put+completion against the QPs
	 * configured per peer, the used QP's CQ only against PE-wide quiets
	 * (every CQ polled; every QP's progress words as NVSHMEM 3.8 walks
	 * them), and the round trip as the flat control. Host: two counts. */
	{ &gic_exp_lat, "--path gda-inline --order fence-gpu --metric putc --qps 1,4 "
	  "--scope qp,all,all-progress",
	  "--path gda-inline --order fence-gpu --metric putc --metric rtt --qps 1,2,4,8,16 "
	  "--scope qp,all,all-progress" },
	/* The timer check (Appendix A): GPU mode only. On a shared host its
	 * validity is the machine's, not the code's (gic lat --host --metric
	 * timer-check runs it there). */
	{ &gic_exp_lat, NULL, "--path gda-inline --order fence-gpu --metric timer-check" },
	/* Host-rung doorbells (Sec. 4.3.1): the put+completion a host thread's
	 * ringing adds, against the poster ringing in the same fixture. Host:
	 * gic lat --host --path gda-hostdb runs it (ctest), a scheduler's
	 * number on a shared host. */
	{ &gic_exp_lat, NULL, "--path gda-hostdb --metric issue --metric putc" },
	{ &gic_exp_rate, "--row t1-q1-b1 --row t1-q1-b16 --row t32-q1-lock "
	  "--row t256-q1-handoff --row t16-q16-s16-b16 --row t16-q16-s16-b16-hostdb "
	  "--row t1-q4-rr --row t32-q1-lock-wrap",
	  "--row all" NVSHMEM_RATE GIN_RATE },
	{ &gic_exp_rate, "--row fig3b-inline-64 --row fig3b-inline-staged-64 --row fig3b-pointer-64",
	  "--row fig3b" },
	{ &gic_exp_proxy, "-T 1 -R 2 -B 1,16 --protocol both",
	  "-T 1,2,4 -R 8,32 -B 1,4,16 --protocol both" },
	{ &gic_exp_loaded, "--bg-ctas 2 --queue both", "--bg-ctas 64 --queue both" },
	{ &gic_exp_loaded, "--path proxy --bg-ctas 2 --queue both",
	  "--path proxy --bg-ctas 64 --queue both" NVSHMEM_LOADED },
	{ &gic_exp_payload, "", NVSHMEM_PAYLOAD },
	/* Figure 8's proxy: four workers (host: two), a producer per ring
	 * (the paper's producer CTAs fall from 16 to one with size; here 16
	 * at every size), B16. */
	{ &gic_exp_payload, "--path proxy -T 2 -R 4 -B 16", "--path proxy -T 4 -R 16 -B 16" },
	{ &gic_exp_kernel, "--msgs 0,16", "--msgs 0,1,4,16 --caller both" },
#ifdef GIC_NVSHMEM_PATH
	/* Table 14's NVSHMEM arm: the same fma caller, 16 messages per block. */
	{ &gic_exp_kernel, NULL, "--path nvshmem" },
#endif
	{ &gic_exp_conns, "--conns 1,4,16 --writes 1,16 --transport rc",
	  "--conns 1,2,4,8,16,32,64,128,256,512,1024 --writes 1,32,8192 --transport rc" },
};

enum { NSTEPS = sizeof(steps) / sizeof(steps[0]) };

static int suite_finish(void *state, unsigned marks)
{
	suite_state *st = state;

	(void)marks;
	if (!st->out)
		st->out = "gic-report";
	return 0;
}

/* 1 when name is in the comma-separated list (NULL: every name). */
static int selected(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return 1;
		p = c ? c + 1 : p + len;
	}
	return list == NULL;
}

/* Runs one step: splits its argument string, parses and runs. */
static int run_step(const suite_step *s, const gic_opts *o, const gic_run_info *info,
		    gic_sink *sink)
{
	char buf[512], *argv[32], *save = NULL;
	int argc = 0, rc;
	void *state = NULL;
	size_t from = gic_sink_count(sink);

	snprintf(buf, sizeof(buf), "%s", o->host ? s->host_args : s->gpu_args);
	argv[argc++] = (char *)s->e->name;
	for (char *t = strtok_r(buf, " ", &save); t && argc < 31; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	rc = gic_experiment_parse(s->e, argc, argv, &state);
	if (!rc) {
		rc = s->e->run(o, state, info, sink);
		free(state);
	}
	/* Every row carries the processor state measured after its step. */
	gic_stamp_state(o, info, sink, from);
	if (rc == ENOTSUP && o->provider == GIC_PROV_MLX5) {
		fprintf(stderr, "gic suite: %s: a part that runs on softnic only was left out "
			"(said above)\n", s->e->name);
		return 0;
	}
	if (rc)
		fprintf(stderr, "gic suite: %s failed: %s\n", s->e->name, strerror(rc));
	return rc;
}

/* ------------------------------------------------------------------ */
/* The report. */

/* 1 when the row's number depends on the NIC (softnic here). */
static int nic_dependent(const gic_result *r)
{
	static const char *const gpu_side[] = { "issue", "registers", "spill", "blocks/SM" };

	for (size_t i = 0; i < sizeof(gpu_side) / sizeof(gpu_side[0]); i++)
		if (!strcmp(r->metric, gpu_side[i]))
			return 0;
	return 1;
}

static void md_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, " %.3f |", v);
	else
		fputs(" - |", f);
}

static void report_table(FILE *f, const gic_sink *sink, const char *exp, int host)
{
	int rows = 0;

	for (size_t i = 0; i < gic_sink_count(sink); i++) {
		const gic_result *r = gic_sink_at(sink, i);

		if (strcmp(r->experiment, exp))
			continue;
		double ratio = isnan(r->paper) || r->paper == 0 ? NAN : r->s.p50 / r->paper;

		if (!rows++)
			fprintf(f, "\n## %s\n\n| row | metric | p50 | p99 | unit | paper (H200) | "
				"ratio | transport | valid | why, when off by more than 15%% |\n"
				"|---|---|---|---|---|---|---|---|---|---|\n", exp);
		fprintf(f, "| %s | %s |", r->name, r->metric);
		md_num(f, r->s.p50);
		md_num(f, r->s.p99);
		fprintf(f, " %s |", r->unit);
		md_num(f, r->paper);
		md_num(f, ratio);
		fprintf(f, " %s | %s | %s |\n",
			nic_dependent(r) ? r->transport : host ? "host-side" : "gpu-side",
			r->validated ? "yes" : "**NO**",
			isfinite(ratio) && fabs(ratio - 1) > 0.15 ? r->note : "");
	}
}

/* The table of a repetition: one row per aggregate. */
static void report_table_repeat(FILE *f, const gic_aggregate *a, size_t n, const char *exp,
				int host)
{
	int rows = 0;

	for (size_t i = 0; i < n; i++) {
		const gic_result *r = a[i].r;
		double ratio = isnan(r->paper) || r->paper == 0 ? NAN : a[i].p50 / r->paper;

		if (strcmp(r->experiment, exp))
			continue;
		if (!rows++)
			fprintf(f, "\n## %s\n\n| row | metric | p50 (median of runs) | min p50 | "
				"max p50 | p99 (median) | unit | paper (H200) | ratio | runs | "
				"transport | valid | why, when off by more than 15%% |\n"
				"|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", exp);
		fprintf(f, "| %s | %s |", r->name, r->metric);
		md_num(f, a[i].p50);
		md_num(f, a[i].p50_min);
		md_num(f, a[i].p50_max);
		md_num(f, a[i].p99);
		fprintf(f, " %s |", r->unit);
		md_num(f, r->paper);
		md_num(f, ratio);
		fprintf(f, " %d | %s | %s | %s |\n", a[i].runs,
			nic_dependent(r) ? r->transport : host ? "host-side" : "gpu-side",
			a[i].validated ? "yes" : "**NO**",
			isfinite(ratio) && fabs(ratio - 1) > 0.15 ? r->note : "");
	}
}

static int write_report(const suite_state *st, const gic_opts *o, const gic_run_info *info,
			const gic_sink *sink)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/report.md", st->out);
	if (!(f = fopen(path, "w"))) {
		fprintf(stderr, "gic suite: --out: cannot write '%s': %s\n", path, strerror(errno));
		return errno;
	}
	fprintf(f, "# gic suite report\n\n- date: %s\n- commit: %s\n- GPU: %s (SM clock %.0f "
		"MHz)\n- %s\n- provider: %s\n- NIC: %s\n- mode: %s\n\nEvery row the paper "
		"measured on H200 (platform P-IB) stands beside the paper's number. Rows whose "
		"number depends on the NIC are labelled with their transport (softnic-cpu / "
		"softnic-gpu, mlx5-emulated: softnic numbers, not ConnectX ones; mlx5: the "
		"device named above).%s\n", info->date,
		info->commit, info->gpu, info->sm_mhz, info->cpu, info->provider, info->nic,
		o->host ? "host (host submitters through the provider's host views; --quick "
			  "settings)" : "GPU (the paper's settings)",
		o->host ? " In host mode every row is a host analogue of the paper's "
			  "experiment and carries no paper number." : "");
	if (gic_sink_runs(sink)) {
		gic_aggregate *a;
		size_t n;
		int rc = gic_sink_aggregates(sink, &a, &n);

		if (rc) {
			fclose(f);
			return rc;
		}
		fprintf(f, "\n%d independent process runs (`--repeat %d`): every row gives the "
			"median of the runs' p50s, their spread (min, max) and the median of their "
			"p99s; each run's own report and results are in %s/run-K/.\n",
			gic_sink_runs(sink), gic_sink_runs(sink), st->out);
		for (int i = 0; i < NSTEPS; i++)
			if (i == 0 || steps[i].e != steps[i - 1].e)
				report_table_repeat(f, a, n, steps[i].e->name, o->host);
		free(a);
	} else {
		for (int i = 0; i < NSTEPS; i++)
			if (i == 0 || steps[i].e != steps[i - 1].e) /* one table per experiment */
				report_table(f, sink, steps[i].e->name, o->host);
	}
	if (fclose(f))
		return errno ? errno : EIO;
	return 0;
}

/* Runs the plot script when python3 is there; says so when not. */
static void run_plots(const suite_state *st)
{
	char cmd[2048], path[1024];
	FILE *f;
	int rc;

	if (st->no_plots)
		return;
	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		fprintf(stderr, "gic suite: python3 not found: no plots\n");
		snprintf(path, sizeof(path), "%s/report.md", st->out);
		if ((f = fopen(path, "a"))) {
			fputs("\n(no plots: python3 was not found)\n", f);
			fclose(f);
		}
		return;
	}
	snprintf(cmd, sizeof(cmd), "python3 '%s/scripts/report-plots.py' '%s/results.json' '%s'",
		 GIC_SOURCE_DIR, st->out, st->out);
	rc = system(cmd);
	if (rc)
		fprintf(stderr, "gic suite: report-plots.py failed (status %d)\n", rc);
}

/* ------------------------------------------------------------------ */
/* --repeat: the suite run again by new processes of this program. */

/* 1 for the arguments the parent replaces in its runs (flag and value). */
static int parent_only(const char *arg, int *takes_value)
{
	static const char *const with_value[] = { "--repeat", "--out", "--json", "--csv" };

	*takes_value = 0;
	if (!strcmp(arg, "--no-plots"))
		return 1;
	for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
		if (gic_flag_is(arg, with_value[k])) {
			*takes_value = !strchr(arg, '=');
			return 1;
		}
	return 0;
}

/* Waits for pid within SUITE_RUN_LIMIT_S; its exit status (128 + signal
 * when killed), or -1 when waitpid failed. */
static int wait_run(pid_t pid, int k)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	time_t end = time(NULL) + SUITE_RUN_LIMIT_S;
	int status, killed = 0;

	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			fprintf(stderr, "gic suite: run %d: waitpid: %s\n", k, strerror(errno));
			return -1;
		}
		if (time(NULL) > end + 10 * killed) {
			if (killed > 1)
				return -1;
			fprintf(stderr, "gic suite: run %d did not finish within %d s: %s\n", k,
				SUITE_RUN_LIMIT_S, killed ? "SIGKILL" : "SIGTERM");
			kill(pid, killed++ ? SIGKILL : SIGTERM);
		}
		nanosleep(&nap, NULL);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Starts run k: this program's own command line without the flags the
 * parent owns, writing into dir (stdout into dir/table.txt). */
static pid_t start_run(const char *exe, const char *dir, const char *csv, int k)
{
	char table[1100];
	int argc, fd, n = 0;
	char **argv = gic_argv(&argc), **cargv = calloc((size_t)argc + 8, sizeof(char *));
	pid_t pid;

	if (!cargv)
		return -1;
	cargv[n++] = (char *)exe;
	for (int i = 1; i < argc; i++) {
		int takes_value;

		if (i >= 2 && parent_only(argv[i], &takes_value)) {
			i += takes_value;
			continue;
		}
		cargv[n++] = argv[i];
	}
	cargv[n++] = "--out", cargv[n++] = (char *)dir, cargv[n++] = "--no-plots";
	cargv[n++] = "--csv", cargv[n++] = (char *)csv;
	cargv[n] = NULL;
	snprintf(table, sizeof(table), "%s/table.txt", dir);
	if ((fd = open(table, O_WRONLY | O_CREAT | O_TRUNC, 0666)) < 0) {
		fprintf(stderr, "gic suite: run %d: cannot write '%s': %s\n", k, table,
			strerror(errno));
		free(cargv);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(fd, 1);
		close(fd);
		execv(exe, cargv);
		fprintf(stderr, "gic suite: run %d: cannot start '%s': %s\n", k, exe,
			strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "gic suite: run %d: fork: %s\n", k, strerror(errno));
	close(fd);
	free(cargv);
	return pid;
}

static int run_repeat(const suite_state *st, gic_sink *sink)
{
	char exe[1024];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int rc = 0;

	if (len <= 0) {
		fprintf(stderr, "gic suite: --repeat: cannot find this program (/proc/self/exe): "
			"%s\n", strerror(errno));
		return errno ? errno : ENOENT;
	}
	exe[len] = '\0';
	for (int k = 1; k <= st->repeat; k++) {
		char dir[1024], csv[1100], json[1100];
		time_t t0 = time(NULL);
		pid_t pid;
		int status = -1, rrc;

		snprintf(dir, sizeof(dir), "%s/run-%d", st->out, k);
		snprintf(csv, sizeof(csv), "%s/results.csv", dir);
		snprintf(json, sizeof(json), "%s/results.json", dir);
		if (mkdir(dir, 0777) && errno != EEXIST) {
			fprintf(stderr, "gic suite: cannot create '%s': %s\n", dir, strerror(errno));
			return errno;
		}
		unlink(csv); /* a file of an earlier run is not this run's */
		fprintf(stderr, "gic suite: run %d/%d (a new process) into %s\n", k, st->repeat,
			dir);
		pid = start_run(exe, dir, csv, k);
		if (pid > 0)
			status = wait_run(pid, k);
		fprintf(stderr, "gic suite: run %d/%d: exit status %d after %ld s\n", k,
			st->repeat, status, (long)(time(NULL) - t0));
		rrc = gic_sink_read_csv(sink, csv, k);
		gic_sink_add_run(sink, json, status);
		if (status != 0 || rrc) {
			fprintf(stderr, "gic suite: run %d/%d %s\n", k, st->repeat,
				rrc ? "left no results" : "failed (its rows are kept)");
			rc = rc ? rc : EIO;
		}
	}
	return rc;
}

static int suite_run(const gic_opts *o, void *state, const gic_run_info *info,
		     gic_sink *sink)
{
	const suite_state *st = state;
	int rc = 0;

	if (mkdir(st->out, 0777) && errno != EEXIST) {
		fprintf(stderr, "gic suite: --out: cannot create '%s': %s\n", st->out,
			strerror(errno));
		return errno;
	}
	/* A step that cannot run is reported and the suite goes on; the run
	 * then fails (after the report is written). */
	if (st->repeat > 1)
		rc = run_repeat(st, sink);
	for (int i = 0; i < NSTEPS && st->repeat == 1; i++) {
		int step_rc;

		if (!selected(st->only, steps[i].e->name) ||
		    !(o->host ? steps[i].host_args : steps[i].gpu_args))
			continue;
		fprintf(stderr, "gic suite: %d/%d %s\n", i + 1, NSTEPS, steps[i].e->name);
		step_rc = run_step(&steps[i], o, info, sink);
		rc = rc ? rc : step_rc;
	}
	{
		char path[1024];
		int wrc;

		snprintf(path, sizeof(path), "%s/results.json", st->out);
		wrc = gic_sink_write_file(sink, info, path, "--out", gic_sink_write_json);
		if (!wrc)
			wrc = write_report(st, o, info, sink);
		if (!wrc) {
			run_plots(st);
			fprintf(stderr, "gic suite: report in %s/report.md\n", st->out);
		}
		rc = rc ? rc : wrc;
	}
	return rc;
}

const gic_experiment gic_exp_suite = {
	.name = "suite",
	.summary = "every experiment at the paper's settings (or --host --quick) and a report",
	.flags = &suite_table,
	.state_size = sizeof(suite_state),
	.finish = suite_finish,
	.run = suite_run,
};
