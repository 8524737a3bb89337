/*
 * bench/gic/main.c - the `gic` program: one main, one subcommand per
 * experiment (exp.h). Parses the common flags, hands the rest to the
 * experiment, fills the run info, runs, and writes the results: a table
 * on stdout, --json FILE, --csv FILE.
 *
 * Exit status: 0; 1 when a result failed its payload validation or the
 * experiment could not run; 2 for bad flags.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gic.h"
#include "host.h"
#include "gic_commit.h" /* GIC_GIT_COMMIT, written at every build (commit.cmake) */
#include "pe_mpi.h"
#include "pe_pair.h"
#include "nccl_pe.h"
#include "nvshmem_pe.h"

static const gic_experiment *const experiments[] = {
	&gic_exp_lat, &gic_exp_rate, &gic_exp_proxy, &gic_exp_loaded,
	&gic_exp_payload, &gic_exp_kernel, &gic_exp_conns, &gic_exp_suite,
};

const gic_experiment *const *gic_experiments(int *n)
{
	*n = (int)(sizeof(experiments) / sizeof(experiments[0]));
	return experiments;
}

static int prog_argc;
static char **prog_argv;

void gic_set_argv(int argc, char **argv)
{
	prog_argc = argc;
	prog_argv = argv;
}

char **gic_argv(int *argc)
{
	*argc = prog_argc;
	return prog_argv;
}

void gic_stamp_state(const gic_opts *o, const gic_run_info *info, gic_sink *sink, size_t from)
{
	double mhz = 0;

	if (from >= gic_sink_count(sink) || gic_sink_runs(sink)) /* a repetition's rows carry
								   * their runs' state */
		return;
	/* No GPU in this process (host mode, or a library path alone): the
	 * rows say the CPU's state only (library PEs write their own clock). */
	if (!o->host && info->sm_mhz > 0 && gic_gpu_sm_clock(o->device, &mhz))
		fprintf(stderr, "gic: the SM clock could not be measured after these rows; they "
			"carry none\n");
	gic_sink_stamp_state(sink, from, mhz);
}

const gic_experiment *gic_experiment_find(const char *name)
{
	for (size_t i = 0; i < sizeof(experiments) / sizeof(experiments[0]); i++)
		if (!strcmp(experiments[i]->name, name))
			return experiments[i];
	return NULL;
}

int gic_experiment_parse(const gic_experiment *e, int argc, char **argv, void **state)
{
	unsigned marks = 0;
	void *st = calloc(1, e->state_size);

	if (!st)
		return ENOMEM;
	if (gic_flags_parse(e->flags, argc, argv, st, &marks) ||
	    (e->finish && e->finish(st, marks))) {
		free(st);
		return EINVAL;
	}
	*state = st;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Common flags. */

typedef struct cli {
	gic_opts o;
	int help;
	int argc;     /* the experiment's arguments: argv[0] is the subcommand */
	char **argv;
} cli;

#define O(m) GIC_FLAG_FIELD(cli, o.m)
static const gic_flag common_flags[] = {
	{ "-n", .value = "N", GIC_FLAG_INT, O(iters), .lo = 1, .hi = 100000000, .mark = GIC_GIVEN_N,
	  .dflt = "1000, 200 with --quick",
	  .help = "measured samples (messages per thread for rates)" },
	{ "-w", .value = "N", GIC_FLAG_INT, O(warmup), .lo = 0, .hi = 10000000, .mark = GIC_GIVEN_W,
	  .dflt = "100, 20 with --quick", .help = "leading samples dropped as warm-up" },
	{ "-b", .value = "SIZE", GIC_FLAG_SIZE, O(size_begin), .lo = 1, .hi = 1l << 30, .def = 8,
	  .mark = GIC_GIVEN_B, .help = "first payload size" },
	{ "-e", .value = "SIZE", GIC_FLAG_SIZE, O(size_end), .lo = 1, .hi = 1l << 30, .def = 8,
	  .mark = GIC_GIVEN_E, .dflt = "per experiment", .help = "last payload size" },
	{ "-f", .value = "FACTOR", GIC_FLAG_DOUBLE, O(size_factor), .lo = 1, .hi = 1024, .def = 2,
	  .mark = GIC_GIVEN_F, .help = "size step factor" },
	{ "-c", .value = "N", GIC_FLAG_INT, O(ctas), .lo = 1, .hi = 65536, .def = 1,
	  .mark = GIC_GIVEN_C, .dflt = "per experiment", .help = "CTAs of the GPU kernel" },
	{ "-t", .value = "N", GIC_FLAG_INT, O(threads), .lo = 1, .hi = 1024, .def = 1,
	  .mark = GIC_GIVEN_T, .dflt = "per experiment",
	  .help = "threads per CTA (GPU) or host threads (--host)" },
	{ "--host", .kind = GIC_FLAG_BOOL, O(host), .help = "host submitters (no GPU needed)" },
	{ "--provider", .value = "P", GIC_FLAG_CHOICE, O(provider),
	  GIC_FLAG_NAMES("softnic", "mlx5"), .dflt = "softnic",
	  .help = "the NIC; mlx5: rdma-core, a ConnectX or the emulated device under gic-emu (GPU "
	  "modes: queues in host memory, host-rung rows ring the UAR from the host; all but proxy "
	  "--counter gpu)" },
	{ "--nic", .value = "NAME", GIC_FLAG_STRING, O(nic), .dflt = "the first device",
	  .help = "mlx5: the RDMA device" },
	{ "--procs", .value = "N", GIC_FLAG_INT, O(procs), .lo = 1, .hi = 2, .def = 1,
	  .dflt = "1, both PEs in this one", .help = "processes of the PEs; 2: PE1, the target, a "
	  "process of its own that checks every payload it received (the host modes of lat (its "
	  "mini-gda and proxy rows), rate, proxy, loaded, payload, kernel and conns (its rc rows); "
	  "--provider mlx5 only; and on softnic's GPU peers, one GPU, the GPU modes of lat "
	  "(gda-inline), rate (8-byte inline rows), payload, kernel and loaded (gda paths))" },
	{ "--launch", .value = "L", GIC_FLAG_CHOICE, O(launch), GIC_FLAG_NAMES("fork", "mpi"),
	  .dflt = "fork", .help = "how --procs 2 starts its PEs: fork, two processes of this one; "
	  "mpi, the two ranks of the MPI job this gic runs in (mpirun -np 2 [-H a,b] gic ... "
	  "--host --procs 2 --launch mpi: rank N is PE N, rank 0 prints the rows; host modes only)" },
	{ "--quick", .kind = GIC_FLAG_BOOL, O(quick), .help = "short settings (what CI runs)" },
	{ "--engine", .value = "E", GIC_FLAG_CHOICE, O(gpu_engine), GIC_FLAG_NAMES("cpu", "gpu"),
	  .mark = GIC_GIVEN_ENGINE, .dflt = "gpu", .help = "softnic engine (GPU mode only)" },
	{ "--engine-sms", .value = "N", GIC_FLAG_INT, O(engine_sms), .lo = 0, .hi = 1024,
	  .dflt = "0", .help = "where softnic's GPU engine runs: 0 on the SMs the callers use; "
	  "N > 0 on SMs of its own, a CUDA green context of at least N SMs (the driver rounds up: "
	  "8 on sm_90), the mini-gda fixtures' kernels (the callers, and gic kernel's baseline) "
	  "on the remaining SMs; the JSON run record and the kernel and lat rows give the counts "
	  "got (GPU engine only; needs a driver with green contexts, CUDA 12.5+). The engine on "
	  "another GPU needs two GPUs and is not built" },
	{ "--engine-batch", .value = "N", GIC_FLAG_INT, O(engine_batch), .lo = 32, .hi = 96,
	  .dflt = "32", .help = "WQEs per batch of softnic's GPU engine on a drained QP: 32, one "
	  "per lane, 64, two per lane, or 96, three (one-BB inline writes of up to 12 bytes): a "
	  "drained QP runs faster, a single message slower (docs/softnic.md, \"The wide "
	  "batch\", has the H200's numbers); sm_100 runs 32 in every case. The GPU-mode rows "
	  "say what ran (engine_batch=) (GPU engine only)" },
	{ "--device", .value = "N", GIC_FLAG_INT, O(device), .lo = 0, .hi = 63, .dflt = "0",
	  .help = "CUDA device" },
	{ "--json", .value = "FILE", GIC_FLAG_STRING, O(json),
	  .help = "write the run info and every result as one JSON object" },
	{ "--csv", .value = "FILE", GIC_FLAG_STRING, O(csv),
	  .help = "write the results as CSV (header + one line per result)" },
	{ "--help", "-h", .kind = GIC_FLAG_BOOL, GIC_FLAG_FIELD(cli, help), .help = "this text" },
};
#undef O
static const gic_flag_table common = GIC_FLAG_TABLE("", common_flags, 1);

static void usage(FILE *f)
{
	int n;
	const gic_experiment *const *e = gic_experiments(&n);

	fprintf(f, "usage: gic <subcommand> [flags]\n\nsubcommands:\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "  %-9s %s\n", e[i]->name, e[i]->summary);
	fprintf(f, "\ncommon flags:\n");
	gic_flags_help(&common, f);
	fprintf(f, "\n'gic <subcommand> --help' lists the subcommand's own flags.\n");
}

static void usage_sub(const gic_experiment *e, FILE *f)
{
	fprintf(f, "usage: gic %s [flags]\n%s\n\n%s flags:\n", e->name, e->summary, e->name);
	gic_flags_help(e->flags, f);
	fprintf(f, "\ncommon flags:\n");
	gic_flags_help(&common, f);
}

/* --launch against --procs, --host and the build; 0, or EINVAL after a
 * message. Also refuses --procs 2 without --launch mpi under an MPI
 * launcher of several ranks (each rank would start a pair of its own). */
static int finish_launch(const gic_opts *o)
{
	char env[64];

	if (o->launch != GIC_LAUNCH_MPI) {
		if (o->procs > 1 && gic_mpi_launched(env, sizeof(env))) {
			fprintf(stderr, "gic: --procs 2 under an MPI launcher (%s): each rank would "
				"start both PEs of its own; add --launch mpi (one PE a rank)\n", env);
			return EINVAL;
		}
		return 0;
	}
	if (!gic_mpi_built()) {
		fprintf(stderr, "gic: --launch mpi: this gic was built without MPI (CMake found "
			"none; scripts/install-deps.sh installs mpich)\n");
		return EINVAL;
	}
	if (o->procs != 2 || !o->host) {
		fprintf(stderr, "gic: --launch mpi runs the two PEs of the host modes' --procs 2 "
			"as two MPI ranks: add %s\n", o->procs != 2 ? "--procs 2" : "--host");
		return EINVAL;
	}
	return 0;
}

/* Why o leaves no softnic GPU engine for a flag that shapes one (--host,
 * --provider mlx5, --engine cpu, and with cuda set a gic built without
 * CUDA, in that order), or NULL when it has one. */
static const char *not_gpu_engine(const gic_opts *o, int cuda)
{
	if (o->host)
		return "--host (the host mode has no GPU engine)";
	if (o->provider == GIC_PROV_MLX5)
		return "--provider mlx5 (the device's own engine serves the queues)";
	if (cuda && !gic_gpu_built())
		return "a gic built without CUDA";
	if ((o->given & GIC_GIVEN_ENGINE) && !o->gpu_engine)
		return "--engine cpu";
	return NULL;
}

/* Applies the defaults that depend on other flags and checks ranges. */
static int finish_opts(gic_opts *o)
{
	const char *why;

	if (!(o->given & GIC_GIVEN_N))
		o->iters = o->quick ? 200 : 1000;
	if (!(o->given & GIC_GIVEN_W))
		o->warmup = o->quick ? 20 : 100;
	if (!(o->given & GIC_GIVEN_E))
		o->size_end = o->size_begin;
	if (o->size_end < o->size_begin) {
		fprintf(stderr, "gic: -e: the last size (%zu) is below the first (-b %zu)\n",
			o->size_end, o->size_begin);
		return EINVAL;
	}
	if (o->host && o->gpu_engine) {
		fprintf(stderr, "gic: --engine gpu: the host mode runs the CPU engine only\n");
		return EINVAL;
	}
	if (o->provider == GIC_PROV_MLX5 && (o->given & GIC_GIVEN_ENGINE)) {
		fprintf(stderr, "gic: --engine: with --provider mlx5 the device's own engine serves "
			"the queues (the emulated device's: GIC_EMU_ENGINE)\n");
		return EINVAL;
	}
	if (o->engine_sms && (why = not_gpu_engine(o, 0))) {
		fprintf(stderr, "gic: --engine-sms %d places softnic's GPU engine: not with %s\n",
			o->engine_sms, why);
		return EINVAL;
	}
	if (o->engine_batch && o->engine_batch % 32) { /* 0: not given; 32, 64, 96 */
		fprintf(stderr, "gic: --engine-batch %d: 32, 64 or 96 WQEs per batch\n",
			o->engine_batch);
		return EINVAL;
	}
	if (o->engine_batch > 32 && (why = not_gpu_engine(o, 1))) {
		fprintf(stderr, "gic: --engine-batch %d shapes softnic's GPU engine: not with %s\n",
			o->engine_batch, why);
		return EINVAL;
	}
	if (o->engine_sms && !gic_gpu_built()) {
		fprintf(stderr, "gic: --engine-sms %d: this gic was built without CUDA (GIC_CUDA=OFF "
			"or no nvcc): it has no GPU engine to place\n", o->engine_sms);
		return EINVAL;
	}
	if (o->nic && o->provider != GIC_PROV_MLX5) {
		fprintf(stderr, "gic: --nic %s names an RDMA device: it goes with --provider mlx5\n",
			o->nic);
		return EINVAL;
	}
	if (finish_launch(o))
		return EINVAL;
	/* GPU modes default to the paper's placement: queues in GPU memory,
	 * served by softnic's GPU engine. */
	if (!o->host && !(o->given & GIC_GIVEN_ENGINE) && o->provider == GIC_PROV_SOFTNIC)
		o->gpu_engine = 1;
	return 0;
}

/* Splits argv[2..] into common flags (into c->o) and the experiment's
 * arguments (c->argv, with the subcommand as argv[0]). */
static int parse_cli(cli *c, int argc, char **argv)
{
	gic_flags_defaults(&common, c);
	c->argv = calloc((size_t)argc, sizeof(char *));
	if (!c->argv)
		return ENOMEM;
	c->argv[c->argc++] = argv[1];
	for (int i = 2; i < argc; i++) {
		int took = gic_flags_take(&common, argv[1], argc, argv, &i, c, &c->o.given);

		if (took < 0)
			return EINVAL;
		if (!took)
			c->argv[c->argc++] = argv[i];
	}
	return c->help ? 0 : finish_opts(&c->o);
}

/* ------------------------------------------------------------------ */
/* Run info. */

/* gpu_optional: the run needs no GPU in this process (the NVSHMEM or NCCL
 * GIN path alone: their PEs find theirs); a missing one is then not an
 * error. */
static int fill_info(const gic_opts *o, gic_run_info *info, int gpu_optional)
{
	time_t now = time(NULL);
	struct tm tm;
	int rc;

	memset(info, 0, sizeof(*info));
	snprintf(info->provider, sizeof(info->provider), "%s",
		 o->provider == GIC_PROV_MLX5 ? "mlx5" : "softnic");
	snprintf(info->engine, sizeof(info->engine), "%s", o->gpu_engine ? "gpu" : "cpu");
	snprintf(info->peer, sizeof(info->peer), "%s", o->procs > 1 ? "process" : "in-process");
	if (o->procs > 1)
		snprintf(info->launch, sizeof(info->launch), "%s",
			 o->launch == GIC_LAUNCH_MPI ? "mpi" : "fork");
	snprintf(info->commit, sizeof(info->commit), "%s", GIC_GIT_COMMIT);
	snprintf(info->placement, sizeof(info->placement), "%s",
		 o->host || !o->gpu_engine || o->provider == GIC_PROV_MLX5 ? GIC_PLACE_OFF_GPU
									     : GIC_PLACE_SHARED);
	info->engine_sms_asked = o->engine_sms;
	gmtime_r(&now, &tm);
	strftime(info->date, sizeof(info->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gic_cpu_state_line(info->cpu, sizeof(info->cpu));
	if (o->host) {
		snprintf(info->gpu, sizeof(info->gpu), "none (host mode)");
		return hx_nic_describe(o, info->nic, sizeof(info->nic));
	}
	if (o->provider == GIC_PROV_MLX5 && (rc = hx_nic_describe(o, info->nic, sizeof(info->nic))))
		return rc;
	if (o->provider == GIC_PROV_SOFTNIC)
		snprintf(info->nic, sizeof(info->nic), "softnic (%s engine)", info->engine);
	rc = gic_gpu_available(info->gpu, sizeof(info->gpu), &info->sm_mhz, o->device);
	if (rc && gpu_optional) {
		snprintf(info->gpu, sizeof(info->gpu), "none in the driver process");
		info->sm_mhz = 0;
		return 0;
	}
	if (rc == ENOTSUP)
		fprintf(stderr, "gic: the GPU mode is not built into this binary (no CUDA); "
			"run with --host\n");
	else if (rc)
		fprintf(stderr, "gic: no usable GPU (device %d): %s; run with --host\n",
			o->device, strerror(rc));
	return rc ? rc : gic_gpu_placement(o, info);
}

/* ------------------------------------------------------------------ */

/* Writes the outputs; returns the exit status. */
static int report(const gic_opts *o, const gic_run_info *info, gic_sink *sink)
{
	size_t failed = gic_sink_failed(sink);
	int status = 0;

	printf("gic: %s | %s | nic %s | engine %s | commit %s | %s\n", info->gpu, info->cpu,
	       info->nic, info->engine, info->commit, info->date);
	gic_sink_print_table(sink, stdout);
	fflush(stdout);
	if (o->json && gic_sink_write_file(sink, info, o->json, "--json", gic_sink_write_json))
		status = 1;
	if (o->csv && gic_sink_write_file(sink, info, o->csv, "--csv", gic_sink_write_csv))
		status = 1;
	if (failed) {
		fprintf(stderr, "gic: %zu of %zu results FAILED payload validation\n", failed,
			gic_sink_count(sink));
		status = 1;
	}
	return status;
}

/* The experiments that run --procs 2 ("lat, rate, proxy, loaded, payload,
 * kernel and conns": those with check_procs and run_pe), into buf. */
static void procs_experiments(char *buf, size_t len)
{
	const gic_experiment *const *all, *can[16];
	int n, k = 0;
	size_t at = 0;

	all = gic_experiments(&n);
	for (int i = 0; i < n && k < 16; i++)
		if (all[i]->check_procs && all[i]->run_pe)
			can[k++] = all[i];
	buf[0] = '\0';
	for (int i = 0; i < k && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i == 0 ? "" :
				       i + 1 == k ? " and " : ", ", can[i]->name);
}

/* --procs 2 with experiment e and its state: 0, or EINVAL after a message
 * (an experiment that runs its PEs in one process only; one whose own
 * check refuses; the softnic provider, whose PEs share one softnic in one
 * process). */
static int check_procs(const gic_experiment *e, const gic_opts *o, const void *state)
{
	if (o->procs <= 1)
		return 0;
	if (!e->check_procs || !e->run_pe) {
		char which[96];

		procs_experiments(which, sizeof(which));
		fprintf(stderr, "gic %s: --procs %d: %s runs both PEs in one process (only the host "
			"modes of %s run their peer as a process)\n", e->name, o->procs, e->name,
			which);
		return EINVAL;
	}
	if (!o->host && e->gpu_procs && o->provider == GIC_PROV_SOFTNIC) {
		/* GPU mode: softnic's GPU peers, a GPU engine on every SM in each PE */
		if (!o->gpu_engine || o->engine_sms || o->engine_batch > 32) {
			fprintf(stderr, "gic %s: --procs %d in GPU mode runs each PE's softnic on "
				"a GPU engine sharing the GPU's SMs, 32 WQEs per batch (not %s)\n",
				e->name, o->procs,
				o->engine_sms ? "--engine-sms"
				: o->engine_batch > 32 ? "--engine-batch" : "--engine cpu");
			return EINVAL;
		}
		return e->check_procs(o, state);
	}
	if (!o->host) {
		fprintf(stderr, "gic %s: --procs %d runs the host mode's PEs as processes: add "
			"--host\n", e->name, o->procs);
		return EINVAL;
	}
	if (o->provider == GIC_PROV_SOFTNIC) {
		fprintf(stderr, "gic %s: --procs %d: the softnic provider cannot put the PEs in "
			"two processes (a softnic PE shares the softnic of a PE of its own process "
			"only); use --provider mlx5 (a ConnectX, or the emulated device under "
			"gic-emu)\n", e->name, o->procs);
		return EINVAL;
	}
	return e->check_procs(o, state);
}

/* Parses the experiment's flags, runs it and reports; the exit status. */
static int run_experiment(const gic_experiment *e, cli *c)
{
	gic_run_info info;
	gic_sink *sink = NULL;
	void *state = NULL;
	int rc, status;

	if (gic_experiment_parse(e, c->argc, c->argv, &state))
		return 2;
	if (check_procs(e, &c->o, state)) {
		free(state);
		return 2;
	}
	if (fill_info(&c->o, &info, gic_nvshmem_only(e, state) || gic_nccl_only(e, state))) {
		free(state);
		return 1;
	}
	sink = gic_sink_new();
	if (sink)
		gic_sink_set_host(sink, c->o.host);
	rc = sink ? e->run(&c->o, state, &info, sink) : ENOMEM;
	if (sink) /* the rows the experiment has not stamped (the suite stamps per step) */
		gic_stamp_state(&c->o, &info, sink, 0);
	/* What ran is reported even when a part could not run. */
	status = sink && gic_sink_count(sink) ? report(&c->o, &info, sink) : 0;
	if (rc) {
		fprintf(stderr, "gic %s: could not run (all of it): %s\n", e->name, strerror(rc));
		status = 1;
	}
	gic_sink_free(sink);
	free(state);
	return status;
}

/* --launch mpi: this rank's part of the run (rank 0 the driver and PE 0,
 * rank 1 PE 1: pe_pair.h); the exit status. */
static int run_mpi(const gic_experiment *e, cli *c)
{
	int rank, status, rc = gic_pair_mpi_start(e->name, &rank);

	if (rc)
		return rc == EINVAL ? 2 : 1;
	if (rank == 1)
		return gic_pair_mpi_serve();
	status = run_experiment(e, c);
	gic_pair_mpi_stop();
	return status;
}

int main(int argc, char **argv)
{
	const gic_experiment *e;
	cli c = { 0 };
	int status;

	gic_set_argv(argc, argv);
	/* Hidden: a PE of the NVSHMEM path, started by the driver (nvshmem_pe.h). */
	if (argc >= 2 && !strcmp(argv[1], GIC_NV_PE_SUBCOMMAND))
		return gic_nvshmem_pe_main(argc, argv);
	/* Hidden: a PE of --procs 2 (pe_pair.h). */
	if (argc >= 2 && !strcmp(argv[1], GIC_PAIR_SUBCOMMAND))
		return gic_pair_main(argc, argv);
	/* Hidden: a PE of the NCCL GIN path (nccl_pe.h). */
	if (argc >= 2 && !strcmp(argv[1], GIC_NC_PE_SUBCOMMAND))
		return gic_nccl_pe_main(argc, argv);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	e = gic_experiment_find(argv[1]);
	if (!e) {
		fprintf(stderr, "gic: unknown subcommand '%s' (see gic --help)\n", argv[1]);
		return 2;
	}
	if (parse_cli(&c, argc, argv)) {
		free(c.argv);
		return 2;
	}
	if (c.help) {
		usage_sub(e, stdout);
		free(c.argv);
		return 0;
	}
	status = c.o.launch == GIC_LAUNCH_MPI ? run_mpi(e, &c) : run_experiment(e, &c);
	free(c.argv);
	return status;
}
