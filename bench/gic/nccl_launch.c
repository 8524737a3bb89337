/*
 * bench/gic/nccl_launch.c - the driver side of the NCCL GIN path
 * (nccl_pe.h): starts the PEs as fresh processes of this program, relays
 * NCCL's unique id, collects PE 0's results and PE 1's verdicts within a
 * time limit, turns a PE's SKIP into one line, and reports a PE that fails
 * by its exit status, all through pe_launch.h (as the NVSHMEM path does);
 * what is NCCL's stays here. Compiled into every `gic`; without the NCCL
 * headers it only says so.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "exp_lat.h"
#include "exp_rate.h"
#include "gic.h"
#include "nccl_pe.h"
#include "pe_launch.h"

int gic_nccl_built(void)
{
#ifdef GIC_HAVE_NCCL
	return 1;
#else
	return 0;
#endif
}

int gic_nccl_not_built(const char *sub, const char *flag, const char *val)
{
	fprintf(stderr, "gic %s: %s %s: not built (NCCL's device API headers with GIN not "
		"found at configure time; scripts/install-deps.sh installs them, or give "
		"-DNCCL_HOME)\n", sub, flag, val);
	return EINVAL;
}

int gic_nccl_only(const gic_experiment *e, const void *state)
{
	if (e == &gic_exp_lat) {
		const lat_state *st = state;

		return (st->paths & GIC_LAT_GIN) && !(st->paths & ~(GIC_LAT_GIN | GIC_LAT_NVSHMEM)) &&
		       !st->sweep;
	}
	if (e == &gic_exp_rate) {
		const rate_state *st = state;
		int gin = 0, lib = 0;

		for (int i = 0; i < st->nrows; i++) {
			gin += st->rows[i].mode == GIC_RATE_GIN;
			lib += st->rows[i].mode == GIC_RATE_GIN || st->rows[i].mode == GIC_RATE_NVSHMEM;
		}
		return gin > 0 && lib == st->nrows;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The hidden subcommand and the driver (pe_launch.h runs the PEs). */

int gic_nccl_pe_main(int argc, char **argv)
{
	int v[4];

	if (gic_pl_pe_args(argc, argv, "the NCCL GIN path (started by gic lat/rate)", v))
		return 2;
#ifdef GIC_HAVE_NCCL
	signal(SIGPIPE, SIG_IGN);
	return gic_nccl_pe(v[0], v[1], v[2], v[3]);
#else
	fprintf(stderr, "gic %s: the NCCL GIN path is not built into this binary\n",
		GIC_NC_PE_SUBCOMMAND);
	return 2;
#endif
}

_Static_assert(sizeof(gic_nc_skip) <= GIC_PL_SKIP_MAX, "a SKIP's payload must fit pe_launch.h's");

/* The one line a skip prints. */
static void nc_say_skip(const char *sub, gic_nc_skip *s)
{
	s->why[sizeof(s->why) - 1] = '\0';
	if (s->kind == GIC_NC_SKIP_GPUS)
		fprintf(stderr, "gic %s: the NCCL GIN path needs %d GPUs (found %d): skipped\n",
			sub, GIC_NC_PES, s->found);
	else if (s->kind == GIC_NC_SKIP_LIB)
		fprintf(stderr, "gic %s: the NCCL GIN path: %s: skipped\n", sub, s->why);
	else
		fprintf(stderr, "gic %s: the NCCL GIN path: GIN has no backend here (%s): "
			"skipped\n", sub, s->why);
}

int gic_nccl_run(const char *sub, const gic_nc_job *in, gic_sink *sink)
{
	/* For the PEs, unless the user set them: bootstrap sockets on this
	 * host; no NVLink multicast (NVLS), which the path does not use and
	 * whose setup holds memory of shared GPUs. */
	static const char *const env[] = {
		"NCCL_SOCKET_IFNAME", "lo",
		"NCCL_NVLS_ENABLE", "0",
		NULL,
	};
	gic_nc_job job = *in;
	gic_pl_spec s = {
		.sub = sub, .lib = "NCCL", .subcommand = GIC_NC_PE_SUBCOMMAND,
		.magic = GIC_NC_MAGIC, .job = &job, .job_len = sizeof(job), .npes = GIC_NC_PES,
		.limit_env = "GIC_NCCL_LIMIT_S", .max_results = GIC_NC_MAX_RESULTS,
		.nphases = GIC_NC_MAX_RESULTS + GIC_NC_MAX_ROWS, .skip_len = sizeof(gic_nc_skip),
		.skip_grace_s = GIC_NC_SKIP_GRACE_S,
	};
	gic_pl_skip skip;
	gic_nc_skip why;
	int rc;

	if (!gic_nccl_built())
		return gic_nccl_not_built(sub, "--path", "gin"), ENOTSUP;
	if (job.nrows < 0 || job.nrows > GIC_NC_MAX_ROWS)
		return EINVAL;
	job.magic = GIC_NC_MAGIC;
	job.limit_s = s.limit_s = gic_pl_limit_s(s.limit_env, GIC_NC_LIMIT_S);
	gic_pl_env_defaults(env);
	rc = gic_pl_run(&s, sink, &skip);
	if (!rc && skip.skipped) {
		memcpy(&why, skip.data, sizeof(why));
		nc_say_skip(sub, &why);
	}
	return rc;
}
