/*
 * bench/gic/nvshmem_launch.c - the driver side of the NVSHMEM path
 * (nvshmem_pe.h): starts the PEs as fresh processes of this program,
 * relays NVSHMEM's unique id, collects PE 0's results and PE 1's verdicts
 * within a time limit, and reports a PE that fails by its exit status,
 * all through pe_launch.h; what is NVSHMEM's stays here. Compiled into
 * every `gic`; without NVSHMEM it only says so. The PEs are the program
 * gic-nvshmem-pe (this file with GIC_HAVE_NVSHMEM, linked with NVSHMEM),
 * so that gic itself loads on a machine without NVSHMEM or with another
 * version of it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "exp_kernel.h"
#include "exp_lat.h"
#include "exp_loaded.h"
#include "exp_payload.h"
#include "exp_rate.h"
#include "gic.h"
#include "nccl_pe.h"
#include "nvshmem_pe.h"
#include "pe_launch.h"

int gic_nvshmem_built(void)
{
#if defined(GIC_HAVE_NVSHMEM) || defined(GIC_NVSHMEM_PATH)
	return 1; /* the PEs: gic-nvshmem-pe, beside this program */
#else
	return 0;
#endif
}

int gic_nvshmem_not_built(const char *sub, const char *flag, const char *val)
{
	fprintf(stderr, "gic %s: %s %s: not built (NVSHMEM not found at configure time; "
		"scripts/install-deps.sh installs it)\n", sub, flag, val);
	return EINVAL;
}

int gic_flag_lib_path(const char *sub, const gic_flag *f, const char *val, void *state)
{
	int named = 0;

	(void)state;
	for (int k = 0; k < f->n; k++)
		named |= !strcmp(val, f->names[k]);
	if (named && !strcmp(val, "nvshmem") && !gic_nvshmem_built())
		return gic_nvshmem_not_built(sub, f->name, val);
	if (named && !strcmp(val, "gin") && !gic_nccl_built())
		return gic_nccl_not_built(sub, f->name, val);
	return 0;
}

int gic_nvshmem_only(const gic_experiment *e, const void *state)
{
	if (e == &gic_exp_lat) {
		const lat_state *st = state;

		return st->paths == GIC_LAT_NVSHMEM && !st->sweep;
	}
	if (e == &gic_exp_rate) {
		const rate_state *st = state;
		int n = 0;

		for (int i = 0; i < st->nrows; i++)
			n += st->rows[i].mode == GIC_RATE_NVSHMEM;
		return st->nrows > 0 && n == st->nrows;
	}
	if (e == &gic_exp_loaded)
		return ((const loaded_state *)state)->paths == 1u << GIC_LOADED_NVSHMEM;
	if (e == &gic_exp_payload)
		return ((const payload_state *)state)->paths == 1u << GIC_PAYLOAD_NVSHMEM;
	if (e == &gic_exp_kernel)
		return ((const kernel_state *)state)->paths == 1u << GIC_KERNEL_NVSHMEM;
	return 0;
}

const char *gic_nv_qp_quiet_unavailable(void)
{
	static char why[GIC_PL_NOTE_MAX];
	const char *remote = getenv("NVSHMEM_REMOTE_TRANSPORT");
	const char *ibgda = getenv("NVSHMEM_IB_ENABLE_IBGDA");
	static const char *const no_qps[] = { "none", "ucx", "libfabric" };

	if (ibgda && (!strcmp(ibgda, "1") || !strcasecmp(ibgda, "true")))
		return NULL; /* IBGDA makes RC QPs of its own, whatever the remote transport */
	if (!remote || !*remote)
		remote = "ibrc"; /* NVSHMEM's own default when nobody sets it */
	for (size_t i = 0; i < sizeof(no_qps) / sizeof(no_qps[0]); i++) {
		if (strcasecmp(remote, no_qps[i]))
			continue;
		snprintf(why, sizeof(why), "per-QP completion (nvshmemx_qp_quiet) needs a NIC "
			 "transport with QPs of its own (IBGDA; IBRC, IBDEVX, GPUNetIO); "
			 "NVSHMEM_REMOTE_TRANSPORT=%s %s", remote,
			 i ? "creates none" : "runs this pair over P2P only");
		return why;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The hidden subcommand and the driver (pe_launch.h runs the PEs). */

int gic_nvshmem_pe_main(int argc, char **argv)
{
	int v[4];

	if (gic_pl_pe_args(argc, argv, "the NVSHMEM path (started by gic lat/rate/loaded/payload/kernel)",
			   v))
		return 2;
#ifdef GIC_HAVE_NVSHMEM
	signal(SIGPIPE, SIG_IGN);
	return gic_nvshmem_pe(v[0], v[1], v[2], v[3]);
#else
	fprintf(stderr, "gic %s: the NVSHMEM path is not built into this binary\n",
		GIC_NV_PE_SUBCOMMAND);
	return 2;
#endif
}

int gic_nvshmem_run(const char *sub, const gic_nv_job *in, gic_sink *sink)
{
	/* For the PEs, unless the user set them: both PEs are on this host,
	 * bootstrap over loopback, no collectives but barriers. */
	static const char *const env[] = {
		"NVSHMEM_REMOTE_TRANSPORT", "none",
		"NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", "lo",
		"NVSHMEM_DISABLE_NCCL", "1",
		NULL,
	};
	gic_nv_job job = *in;
	gic_pl_spec s = {
		.sub = sub, .lib = "NVSHMEM", .subcommand = GIC_NV_PE_SUBCOMMAND,
		.program = GIC_NV_PE_PROGRAM,
		.magic = GIC_NV_MAGIC, .job = &job, .job_len = sizeof(job), .npes = GIC_NV_PES,
		.limit_env = "GIC_NVSHMEM_LIMIT_S", .max_results = GIC_NV_MAX_RESULTS,
		.nphases = GIC_NV_MAX_RESULTS + GIC_NV_MAX_ROWS, .skip_len = sizeof(int32_t),
	};
	gic_pl_skip skip;
	int32_t found;
	int rc;

	if (!gic_nvshmem_built())
		return gic_nvshmem_not_built(sub, "--path", "nvshmem"), ENOTSUP;
	job.magic = GIC_NV_MAGIC;
	job.limit_s = s.limit_s = gic_pl_limit_s(s.limit_env, GIC_NV_LIMIT_S);
	gic_pl_env_defaults(env);
	/* The per-QP completion row: said and left out here when no NIC
	 * transport is configured (no GPU needed to know); else the PE reads
	 * the transport back and decides. */
	job.qp_quiet = 0;
	if (job.kind == GIC_NV_LAT && (job.metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC))) {
		const char *why = gic_nv_qp_quiet_unavailable();

		if (why)
			fprintf(stderr, "gic %s: nvshmem qp-quiet: skipped: %s\n", sub, why);
		job.qp_quiet = !why;
	}
	rc = gic_pl_run(&s, sink, &skip);
	if (!rc && skip.skipped) {
		memcpy(&found, skip.data, sizeof(found));
		fprintf(stderr, "gic %s: the NVSHMEM path needs %d GPUs (found %d), or one GPU with "
			"NVSHMEM_DISABLE_P2P=1 and a NIC transport: skipped\n", sub, GIC_NV_PES, found);
	}
	return rc;
}
