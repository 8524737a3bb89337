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

static const char common_help[] =
	"common flags:\n"
	"  -n N           measured samples (messages per thread for rates); default 1000,\n"
	"                 200 with --quick (1..100000000)\n"
	"  -w N           leading samples dropped as warm-up; default 100, 20 with --quick\n"
	"  -b SIZE        first payload size in bytes (K/M/G suffixes); default 8\n"
	"  -e SIZE        last payload size; default: the experiment's\n"
	"  -f FACTOR      size step factor (> 1, <= 1024); default 2\n"
	"  -c N           CTAs of the GPU kernel (1..65536); default: the experiment's\n"
	"  -t N           threads per CTA (GPU) or host threads (--host) (1..1024)\n"
	"  --host         host submitters (no GPU needed)\n"
	"  --provider P   the NIC: softnic (default) | mlx5 (rdma-core: a ConnectX, or the\n"
	"                 emulated device under gic-emu; GPU modes: queues in host memory,\n"
	"                 host-rung rows ring the UAR from the host; all but proxy\n"
	"                 --counter gpu)\n"
	"  --nic NAME     mlx5: the RDMA device (default: the first)\n"
	"  --procs N      processes of the PEs: 1 (default: both PEs in this one) | 2\n"
	"                 (PE1, the target, a process of its own that checks every\n"
	"                 payload it received; the host modes of lat (its mini-gda\n"
	"                 rows), rate, proxy, loaded, payload, kernel and conns (its rc\n"
	"                 rows); --provider mlx5 only)\n"
	"  --quick        short settings (what CI runs)\n"
	"  --engine E     softnic engine: cpu | gpu (GPU mode only); default gpu\n"
	"  --engine-sms N where softnic's GPU engine runs: 0 (default) on the SMs the\n"
	"                 callers use; N > 0 on SMs of its own, a CUDA green context of\n"
	"                 at least N SMs (the driver rounds up: 8 on sm_90), the mini-gda\n"
	"                 fixtures' kernels (the callers, and gic kernel's baseline) on\n"
	"                 the remaining SMs; the JSON run record and the kernel and lat\n"
	"                 rows give the counts got (0..1024; GPU engine only; needs a\n"
	"                 driver with green contexts, CUDA 12.5+). The engine on another\n"
	"                 GPU needs two GPUs and is not built\n"
	"  --device N     CUDA device (0..63); default 0\n"
	"  --json FILE    write the run info and every result as one JSON object\n"
	"  --csv FILE     write the results as CSV (header + one line per result)\n"
	"  --help, -h     this text\n";

static void usage(FILE *f)
{
	int n;
	const gic_experiment *const *e = gic_experiments(&n);

	fprintf(f, "usage: gic <subcommand> [flags]\n\nsubcommands:\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "  %-9s %s\n", e[i]->name, e[i]->summary);
	fprintf(f, "\n%s\n'gic <subcommand> --help' lists the subcommand's own flags.\n",
		common_help);
}

static void usage_sub(const gic_experiment *e, FILE *f)
{
	fprintf(f, "usage: gic %s [flags]\n%s\n\n%s flags:\n%s\n%s", e->name, e->summary, e->name,
		e->help, common_help);
}

/* ------------------------------------------------------------------ */
/* Common flags. */

typedef struct cli {
	gic_opts o;
	int help;
	int argc;     /* the experiment's arguments: argv[0] is the subcommand */
	char **argv;
} cli;

static int bad(const char *flag, const char *val, const char *expected)
{
	fprintf(stderr, "gic: %s: expected %s, got '%s'\n", flag, expected, val);
	return EINVAL;
}

static int parse_long(const char *flag, const char *val, long lo, long hi, long *out)
{
	char *end;
	long v;
	char want[64];

	errno = 0;
	v = strtol(val, &end, 10);
	snprintf(want, sizeof(want), "an integer in %ld..%ld", lo, hi);
	if (end == val || *end || errno || v < lo || v > hi)
		return bad(flag, val, want);
	*out = v;
	return 0;
}

static int parse_double(const char *flag, const char *val, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val, &end);
	if (end == val || *end || errno || !(v > lo) || v > hi)
		return bad(flag, val, "a number > 1 and <= 1024");
	*out = v;
	return 0;
}

/* Applies the value flag `flag`; 0 or EINVAL. */
static int apply_value(gic_opts *o, const char *flag, const char *val)
{
	long v = 0;
	int rc = 0;

	if (!strcmp(flag, "-n") && !(rc = parse_long(flag, val, 1, 100000000, &v)))
		o->iters = (int)v, o->given |= GIC_GIVEN_N;
	else if (!strcmp(flag, "-w") && !(rc = parse_long(flag, val, 0, 10000000, &v)))
		o->warmup = (int)v, o->given |= GIC_GIVEN_W;
	else if (!strcmp(flag, "-b") &&
		 !(rc = gic_arg_size("", "-b", val, 1, (size_t)1 << 30, &o->size_begin)))
		o->given |= GIC_GIVEN_B;
	else if (!strcmp(flag, "-e") &&
		 !(rc = gic_arg_size("", "-e", val, 1, (size_t)1 << 30, &o->size_end)))
		o->given |= GIC_GIVEN_E;
	else if (!strcmp(flag, "-f") && !(rc = parse_double(flag, val, 1, 1024, &o->size_factor)))
		o->given |= GIC_GIVEN_F;
	else if (!strcmp(flag, "-c") && !(rc = parse_long(flag, val, 1, 65536, &v)))
		o->ctas = (int)v, o->given |= GIC_GIVEN_C;
	else if (!strcmp(flag, "-t") && !(rc = parse_long(flag, val, 1, 1024, &v)))
		o->threads = (int)v, o->given |= GIC_GIVEN_T;
	else if (!strcmp(flag, "--device") && !(rc = parse_long(flag, val, 0, 63, &v)))
		o->device = (int)v;
	else if (!strcmp(flag, "--json"))
		o->json = val;
	else if (!strcmp(flag, "--nic"))
		o->nic = val;
	else if (!strcmp(flag, "--procs") && !(rc = parse_long(flag, val, 1, 2, &v)))
		o->procs = (int)v;
	else if (!strcmp(flag, "--engine-sms") && !(rc = parse_long(flag, val, 0, 1024, &v)))
		o->engine_sms = (int)v;
	else if (!strcmp(flag, "--provider")) {
		if (strcmp(val, "softnic") && strcmp(val, "mlx5"))
			return bad(flag, val, "softnic or mlx5");
		o->provider = !strcmp(val, "mlx5") ? GIC_PROV_MLX5 : GIC_PROV_SOFTNIC;
	}
	else if (!strcmp(flag, "--csv"))
		o->csv = val;
	else if (!strcmp(flag, "--engine")) {
		if (strcmp(val, "cpu") && strcmp(val, "gpu"))
			return bad(flag, val, "cpu or gpu");
		o->gpu_engine = !strcmp(val, "gpu");
		o->given |= GIC_GIVEN_ENGINE;
	}
	return rc;
}

/* 1 when arg is a common flag taking a value; *flag receives its name. */
static int value_flag(const char *arg, char *flag, size_t len)
{
	static const char *const names[] = { "-n", "-w", "-b", "-e", "-f", "-c", "-t",
					     "--device", "--json", "--csv", "--engine", "--provider",
					     "--nic", "--procs", "--engine-sms", NULL };

	for (int i = 0; names[i]; i++) {
		if (gic_arg_is(arg, names[i]) ||
		    (names[i][1] != '-' && !strncmp(arg, names[i], 2) && arg[2])) {
			snprintf(flag, len, "%s", names[i]);
			return 1;
		}
	}
	return 0;
}

/* Takes the common flag at argv[*i] (and its value); 1 when it was one, 0
 * when not (the experiment gets it), or -1 after a message. */
static int take_common(cli *c, int argc, char **argv, int *i)
{
	const char *arg = argv[*i], *val;
	char flag[16];

	if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
		return c->help = 1;
	if (!strcmp(arg, "--host"))
		return c->o.host = 1;
	if (!strcmp(arg, "--quick"))
		return c->o.quick = 1;
	if (!value_flag(arg, flag, sizeof(flag)))
		return 0;
	if (arg[1] != '-' && arg[2]) /* "-n100" */
		val = arg + 2;
	else if (!(val = gic_arg_value(c->argv[0], argc, argv, i)))
		return -1;
	return apply_value(&c->o, flag, val) ? -1 : 1;
}

/* Applies the defaults that depend on other flags and checks ranges. */
static int finish_opts(gic_opts *o)
{
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
	if (o->engine_sms && (o->host || o->provider == GIC_PROV_MLX5 ||
			      ((o->given & GIC_GIVEN_ENGINE) && !o->gpu_engine))) {
		fprintf(stderr, "gic: --engine-sms %d places softnic's GPU engine: not with %s\n",
			o->engine_sms, o->host ? "--host (the host mode has no GPU engine)"
				       : o->provider == GIC_PROV_MLX5
					       ? "--provider mlx5 (the device's own engine serves "
						 "the queues)"
					       : "--engine cpu");
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
	c->o = (gic_opts){ .size_begin = 8, .size_end = 8, .size_factor = 2, .ctas = 1,
			   .threads = 1, .procs = 1 };
	c->argv = calloc((size_t)argc, sizeof(char *));
	if (!c->argv)
		return ENOMEM;
	c->argv[c->argc++] = argv[1];
	for (int i = 2; i < argc; i++) {
		int took = take_common(c, argc, argv, &i);

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

	if (e->parse(c->argc, c->argv, &state))
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
	status = run_experiment(e, &c);
	free(c.argv);
	return status;
}
