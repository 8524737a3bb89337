/*
 * bench/gic/lat_procs.c - `gic lat --host --procs 2` (lat_procs.h): the
 * driver's launch, the PE processes' main, the record swap through the
 * driver and the control-word signals between the PEs. The rows
 * themselves are exp_lat.c's (gic_lat_pe_rows).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gic.h"
#include "lat_procs.h"

/* The rows' phases: per --qps count, 2 paths x 8 orders x (3 scopes of
 * issue + put+completion, 1 round trip); two rows per phase at most. */
enum {
	LAT_PE_PHASES = GIC_LAT_MAX_QPS_LIST * 2 * GIC_LAT_ORDERS * (GIC_LAT_SCOPES + 1),
	LAT_PE_RESULTS = 2 * LAT_PE_PHASES,
};

static const char *prov_name(int provider)
{
	return provider == GIC_PROV_MLX5 ? "mlx5" : "softnic";
}

int gic_lat_procs_run(const gic_opts *o, const lat_state *st, gic_sink *sink)
{
	lat_pe_job job = { .magic = GIC_LAT_PE_MAGIC, .iters = o->iters, .warmup = o->warmup,
			   .quick = o->quick, .provider = o->provider, .st = *st };
	gic_pl_spec s = {
		.sub = "lat", .lib = prov_name(o->provider), .subcommand = GIC_LAT_PE_SUBCOMMAND,
		.magic = GIC_LAT_PE_MAGIC, .job = &job, .job_len = sizeof(job), .npes = 2,
		.limit_env = "GIC_LAT_PROCS_LIMIT_S", .max_results = LAT_PE_RESULTS,
		.nphases = LAT_PE_PHASES, .skip_len = 1, .start_all = 1,
	};
	gic_pl_skip skip;

	if (o->nic && strlen(o->nic) >= sizeof(job.nic)) {
		fprintf(stderr, "gic lat: --nic %s: longer than %zu bytes\n", o->nic,
			sizeof(job.nic) - 1);
		return EINVAL;
	}
	snprintf(job.nic, sizeof(job.nic), "%s", o->nic ? o->nic : "");
	snprintf(job.transport, sizeof(job.transport), "%s", gic_transport(o));
	job.limit_s = s.limit_s = gic_pl_limit_s(s.limit_env, GIC_LAT_PROCS_LIMIT_DEFAULT_S);
	return gic_pl_run(&s, sink, &skip); /* no PE skips: skip stays unset */
}

int lat_pe_swap(void *arg, const uint8_t *mine, uint8_t *theirs, size_t len)
{
	lat_pe *pe = arg;
	uint8_t all[2 * GIC_PL_GATHER_MAX];

	if (len < 1 || len > GIC_PL_GATHER_MAX)
		return EINVAL;
	gic_pl_allgather(&pe->pl, pe->in_fd, mine, (uint32_t)len, all, GIC_PL_INPUT_MS);
	memcpy(theirs, all + (size_t)(1 - pe->pl.rank) * len, len);
	return 0;
}

int lat_pe_signal(lat_pe *pe, hx *h)
{
	int me = pe->pl.rank, order = GIC_ORDER_RELEASE_SYS;
	uint64_t count = ++pe->signals_sent, end;
	int rc = hx_write(h, me, 0, pe->ctrl_off, &count, 0, 8, 0, 1, 1, order, hx_deadline(),
			  &end);

	if (!rc)
		rc = gic_sq_wait_retired(&h->pe[me].sq[0], end, 0, order, hx_deadline());
	return rc ? hx_fail(h, me, 0, "lat --procs: signalling the peer", rc) : 0;
}

int lat_pe_await(lat_pe *pe, hx *h)
{
	const uint64_t *word = (const uint64_t *)(h->pe[pe->pl.rank].dst + pe->ctrl_off);
	uint64_t want = ++pe->signals_seen;
	uint64_t deadline = gic_now_ns() + LAT_PE_WAIT_NS;
	int rc = 0;

	/* Counts only grow, so a later one also means this one came. Never
	 * inside a timed span: it sleeps, leaving the CPU to the peer and the
	 * engines (a host of few CPUs). */
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < want && !rc) {
		struct timespec nap = { 0, 20000 };

		rc = gic_now_ns() > deadline ? ETIMEDOUT : 0;
		nanosleep(&nap, NULL);
	}
	if (rc)
		fprintf(stderr, "gic lat: PE%d: the peer's signal %llu did not come within %llu s "
			"(the control word holds %llu)\n", pe->pl.rank, (unsigned long long)want,
			LAT_PE_WAIT_NS / 1000000000ull,
			(unsigned long long)__atomic_load_n(word, __ATOMIC_ACQUIRE));
	return rc;
}

/* The job's checks beyond the magic (gic_pl_read_job): die when wrong. */
static void check_job(const lat_pe *pe, lat_pe_job *job)
{
	const lat_state *st = &job->st;

	job->nic[sizeof(job->nic) - 1] = job->transport[sizeof(job->transport) - 1] = '\0';
	if (job->limit_s < 1 || job->iters < 1 || job->warmup < 0 || st->nqps < 1 ||
	    st->nqps > GIC_LAT_MAX_QPS_LIST || (st->paths & ~(unsigned)(GIC_LAT_GDA_INLINE |
								       GIC_LAT_GDA_POINTER)) ||
	    job->provider != GIC_PROV_MLX5)
		gic_pl_die(&pe->pl, "reading the job", "malformed");
	for (int k = 0; k < st->nqps; k++)
		if (st->qps[k] < 1 || st->qps[k] > HX_MAX_QPS)
			gic_pl_die(&pe->pl, "reading the job", "malformed");
}

int gic_lat_pe_main(int argc, char **argv)
{
	lat_pe pe = { .in_fd = -1 };
	lat_pe_job job;
	gic_opts o;
	int v[4], rc;

	if (gic_pl_pe_args(argc, argv, "gic lat --procs 2", v))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	gic_pl_pe_init(&pe.pl, "mlx5", "lat", GIC_LAT_PE_MAGIC, v[0], v[1], v[3]);
	pe.in_fd = v[2];
	if (pe.pl.npes != 2)
		gic_pl_die(&pe.pl, "arguments", "gic lat --procs runs two PEs");
	gic_pl_read_job(&pe.pl, pe.in_fd, &job, sizeof(job));
	check_job(&pe, &job);
	gic_pl_pe_alarm(&pe.pl, job.limit_s);
	o = (gic_opts){ .iters = job.iters, .warmup = job.warmup, .quick = job.quick, .host = 1,
			.provider = job.provider, .nic = job.nic[0] ? job.nic : NULL, .procs = 2,
			.size_begin = 8, .size_end = 8, .size_factor = 2, .ctas = 1, .threads = 1 };
	if (job.provider == GIC_PROV_MLX5)
		gic_set_mlx5_transport(job.transport);
	rc = gic_lat_pe_rows(&pe, &o, &job.st);
	if (rc)
		gic_pl_die(&pe.pl, "running the rows", strerror(rc));
	gic_pl_send(&pe.pl, GIC_PL_REC_DONE, 0, NULL, 0);
	return 0;
}
