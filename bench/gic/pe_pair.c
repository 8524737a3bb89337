/*
 * bench/gic/pe_pair.c - `--procs 2` of the host modes (pe_pair.h): the
 * driver's launch, the PE processes' main, the record swap through the
 * driver and the control-word signals between the PEs. The measurements
 * are the experiments' own (their run_pe, exp.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gic.h"
#include "pe_pair.h"

/* What the driver sends both PEs. */
typedef struct pair_job {
	uint32_t magic;          /* GIC_PAIR_MAGIC */
	int32_t limit_s;         /* each PE's own time limit */
	char sub[16];            /* the experiment */
	gic_opts o;              /* the driver's common options; pointers cleared */
	char nic[64];            /* --nic ("" none) */
	char transport[32];      /* the rows' transport (the driver's gic_transport) */
	uint32_t state_len;      /* bytes of state */
	_Alignas(16) uint8_t state[GIC_PAIR_STATE_MAX]; /* the experiment's parsed state */
} pair_job;

_Static_assert(sizeof(pair_job) <= GIC_PL_JOB_MAX, "a pair job fits pe_launch's job");

static const char *prov_name(int provider)
{
	return provider == GIC_PROV_MLX5 ? "mlx5" : "softnic";
}

/* Fills job from the driver's arguments; EINVAL after a message. */
static int fill_job(pair_job *job, const gic_opts *o, const char *sub, const void *state,
		    size_t state_len)
{
	if (o->nic && strlen(o->nic) >= sizeof(job->nic)) {
		fprintf(stderr, "gic %s: --nic %s: longer than %zu bytes\n", sub, o->nic,
			sizeof(job->nic) - 1);
		return EINVAL;
	}
	if (state_len > sizeof(job->state) || strlen(sub) >= sizeof(job->sub)) {
		fprintf(stderr, "gic %s: --procs: the experiment's state (%zu bytes) does not fit "
			"the job (%zu)\n", sub, state_len, sizeof(job->state));
		return EINVAL;
	}
	job->magic = GIC_PAIR_MAGIC;
	snprintf(job->sub, sizeof(job->sub), "%s", sub);
	job->o = *o;
	job->o.json = job->o.csv = job->o.nic = NULL;
	snprintf(job->nic, sizeof(job->nic), "%s", o->nic ? o->nic : "");
	snprintf(job->transport, sizeof(job->transport), "%s", gic_transport(o));
	job->state_len = (uint32_t)state_len;
	memcpy(job->state, state, state_len);
	return 0;
}

int gic_pair_run(const gic_opts *o, const char *sub, const void *state, size_t state_len,
		 int nphases, int max_results, gic_sink *sink)
{
	pair_job *job = calloc(1, sizeof(*job));
	gic_pl_spec s = {
		.sub = sub, .lib = prov_name(o->provider), .subcommand = GIC_PAIR_SUBCOMMAND,
		.magic = GIC_PAIR_MAGIC, .job_len = sizeof(*job), .npes = 2,
		.limit_env = GIC_PAIR_LIMIT_ENV, .max_results = max_results,
		.nphases = nphases, .skip_len = 1, .start_all = 1,
	};
	gic_pl_skip skip;
	int rc;

	if (!job)
		return ENOMEM;
	rc = fill_job(job, o, sub, state, state_len);
	if (!rc) {
		job->limit_s = s.limit_s = gic_pl_limit_s(s.limit_env, GIC_PAIR_LIMIT_DEFAULT_S);
		s.job = job;
		rc = gic_pl_run(&s, sink, &skip); /* no PE skips: skip stays unset */
	}
	free(job);
	return rc;
}

int gic_pair_check_any(const gic_opts *o, const void *state)
{
	(void)o;
	(void)state;
	return 0;
}

int gic_pair_list_ok(const int *v, int n, int max_n, int hi)
{
	int ok = n >= 1 && n <= max_n;

	for (int i = 0; i < n && ok; i++)
		ok = v[i] >= 1 && v[i] <= hi;
	return ok;
}

/* An hx_swap_fn: arg is the gic_pair; the records go through the driver. */
static int pair_swap_ms(gic_pair *pair, const void *mine, void *theirs, size_t len, int limit_ms)
{
	uint8_t all[2 * GIC_PL_GATHER_MAX];

	if (len < 1 || len > GIC_PL_GATHER_MAX)
		return EINVAL;
	gic_pl_allgather(&pair->pl, pair->in_fd, mine, (uint32_t)len, all, limit_ms);
	memcpy(theirs, all + (size_t)(1 - pair->pl.rank) * len, len);
	return 0;
}

static int pair_swap(void *arg, const uint8_t *mine, uint8_t *theirs, size_t len)
{
	return pair_swap_ms(arg, mine, theirs, len, GIC_PL_INPUT_MS);
}

int gic_pair_rank(const gic_pair *pair)
{
	return pair ? pair->pl.rank : 0;
}

int gic_pair_posts(const gic_pair *pair)
{
	return !pair || pair->pl.rank == 0;
}

int gic_pair_checks(const gic_pair *pair)
{
	return !pair || pair->pl.rank == 1;
}

int gic_pair_open(gic_pair *pair, hx **h, const hx_cfg *c)
{
	hx_cfg pc = *c;

	if (!pair)
		return hx_open(h, c);
	pair->ctrl_off = (c->region + 63) & ~(size_t)63;
	pc.region = pair->ctrl_off + 64; /* the control word, after the slots */
	return hx_open_proc(h, &pc, pair->pl.rank, pair_swap, pair);
}

/* Raises the peer's control word to the next count (an 8-byte inline
 * write on QP 0 of h, waited for); 0 or errno after a message. The word
 * of a fresh fixture is 0, and counts only grow. */
static int pair_signal(gic_pair *pair, hx *h)
{
	int me = pair->pl.rank, order = GIC_ORDER_RELEASE_SYS;
	uint64_t count = ++pair->signals_sent, end;
	int rc = hx_write(h, me, 0, pair->ctrl_off, &count, 0, 8, 0, 1, 1, order, hx_deadline(),
			  &end);

	if (!rc)
		rc = gic_sq_wait_retired(&h->pe[me].sq[0], end, 0, order, hx_deadline());
	return rc ? hx_fail(h, me, 0, "--procs 2: signalling the peer", rc) : 0;
}

/* Waits up to wait_ns until this PE's control word reaches the peer's
 * next count; 0 or ETIMEDOUT after a message. */
static int pair_await(gic_pair *pair, hx *h, uint64_t wait_ns)
{
	const uint64_t *word = (const uint64_t *)(h->pe[pair->pl.rank].dst + pair->ctrl_off);
	uint64_t want = ++pair->signals_seen;
	uint64_t deadline = gic_now_ns() + wait_ns;
	int rc = 0;

	/* A later count also means this one came. Never inside a timed span:
	 * it sleeps, leaving the CPU to the peer and the engines (a host of
	 * few CPUs). */
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < want && !rc) {
		struct timespec nap = { 0, 20000 };

		rc = gic_now_ns() > deadline ? ETIMEDOUT : 0;
		nanosleep(&nap, NULL);
	}
	if (rc)
		fprintf(stderr, "gic %s: PE%d: the peer's signal %llu did not come within %llu s "
			"(the control word holds %llu)\n", pair->pl.sub, pair->pl.rank,
			(unsigned long long)want, (unsigned long long)(wait_ns / 1000000000ull),
			(unsigned long long)__atomic_load_n(word, __ATOMIC_ACQUIRE));
	return rc;
}

int gic_pair_begin(gic_pair *pair, hx *h)
{
	if (!pair)
		return 0;
	return pair->pl.rank ? pair_signal(pair, h) : pair_await(pair, h, GIC_PAIR_WAIT_NS);
}

int gic_pair_end(gic_pair *pair, hx *h)
{
	if (!pair)
		return 0;
	return pair->pl.rank ? pair_await(pair, h, (uint64_t)pair->limit_s * 1000000000ull)
			     : pair_signal(pair, h);
}

int gic_pair_sync(gic_pair *pair, hx *h)
{
	int rc;

	if (!pair)
		return 0;
	rc = gic_pair_begin(pair, h);
	if (!rc)
		rc = pair->pl.rank ? pair_await(pair, h, GIC_PAIR_WAIT_NS) : pair_signal(pair, h);
	return rc;
}

int gic_pair_exchange(gic_pair *pair, const void *mine, void *theirs, size_t len)
{
	return pair ? pair_swap(pair, mine, theirs, len) : 0;
}

int gic_pair_exchange_late(gic_pair *pair, const void *mine, void *theirs, size_t len)
{
	return pair ? pair_swap_ms(pair, mine, theirs, len, pair->limit_s * 1000) : 0;
}

_Static_assert(HX_SWAP_CHUNK * GIC_CONN_WIRE_BYTES <= GIC_PL_GATHER_MAX,
	       "a chunk of records fits a GATHER");

int gic_pair_swap_records(gic_pair *pair, const gic_conn_info *local, gic_conn_info *remote,
			  int n)
{
	return hx_swap_records(pair_swap, pair, pair->pl.sub, pair->pl.rank, local, remote, n);
}

int gic_pair_put(gic_pair *pair, gic_sink *sink, const gic_result *r)
{
	if (!pair)
		return gic_emit(sink, r);
	if (pair->pl.rank == 0)
		gic_pl_emit(&pair->pl, pair->phase, r);
	return 0;
}

void gic_pair_phase_done(gic_pair *pair, int valid)
{
	if (!pair)
		return;
	if (pair->pl.rank == 1)
		gic_pl_verdict(&pair->pl, pair->phase, valid);
	pair->phase++;
}

/* The job's checks beyond the magic (gic_pl_read_job); the experiment to
 * run, or death ("reading the job"). The experiment checks its state. */
static const gic_experiment *check_job(const gic_pair *pair, pair_job *job)
{
	const gic_experiment *e;
	int gpu = !job->o.host; /* GPU mode: softnic's GPU peers (gic_experiment.gpu_procs) */

	job->sub[sizeof(job->sub) - 1] = job->nic[sizeof(job->nic) - 1] = '\0';
	job->transport[sizeof(job->transport) - 1] = '\0';
	if (job->limit_s < 1 || job->o.iters < 1 || job->o.warmup < 0 ||
	    job->o.provider != (gpu ? GIC_PROV_SOFTNIC : GIC_PROV_MLX5) ||
	    job->state_len > sizeof(job->state))
		gic_pl_die(&pair->pl, "reading the job", "malformed");
	e = gic_experiment_find(job->sub);
	if (!e || !e->run_pe || (gpu && !e->gpu_procs))
		gic_pl_die(&pair->pl, "reading the job", "no experiment of that name runs as a pair");
	return e;
}

int gic_pair_main(int argc, char **argv)
{
	static pair_job job; /* one per process; too big for a small stack */
	gic_pair pair = { .in_fd = -1 };
	const gic_experiment *e;
	gic_opts o;
	int v[4], rc;

	if (gic_pl_pe_args(argc, argv, "gic --procs 2", v))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	gic_pl_pe_init(&pair.pl, "pair", "--procs", GIC_PAIR_MAGIC, v[0], v[1], v[3]);
	pair.in_fd = v[2];
	if (pair.pl.npes != 2)
		gic_pl_die(&pair.pl, "arguments", "--procs 2 runs two PEs");
	gic_pl_read_job(&pair.pl, pair.in_fd, &job, sizeof(job));
	e = check_job(&pair, &job);
	pair.pl.lib = prov_name(job.o.provider); /* the driver's name for this PE */
	pair.pl.sub = job.sub;
	pair.limit_s = job.limit_s;
	gic_pl_pe_alarm(&pair.pl, job.limit_s);
	o = job.o;
	o.nic = job.nic[0] ? job.nic : NULL;
	o.procs = 2;
	gic_set_mlx5_transport(job.transport);
	rc = e->run_pe(&pair, &o, job.state, job.state_len);
	if (rc)
		gic_pl_die(&pair.pl, "running the rows", strerror(rc));
	gic_pl_send(&pair.pl, GIC_PL_REC_DONE, 0, NULL, 0);
	return 0;
}
