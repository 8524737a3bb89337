/*
 * bench/gic/pe_pair.c - `--procs 2` of the host modes (pe_pair.h): the
 * driver's launch, the PE processes' main, the record swap through the
 * driver (or, --launch mpi, through MPI) and the control-word signals
 * between the PEs. The measurements are the experiments' own (their
 * run_pe, exp.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gic.h"
#include "pe_mpi.h"
#include "pe_pair.h"

/* A job's phases (a DONE frame of --launch mpi holds a verdict of each)
 * and rows at most. */
enum { PAIR_PHASES_MAX = GIC_PL_GATHER_MAX, PAIR_RESULTS_MAX = 1 << 16 };

/* pair_job.kind: a job to run, or (--launch mpi) the end of the run. */
enum { PAIR_JOB_RUN = 1, PAIR_JOB_END = 2 };

/* What the driver sends both PEs (--launch mpi: rank 0 sends rank 1). */
typedef struct pair_job {
	uint32_t magic;          /* GIC_PAIR_MAGIC */
	int32_t kind;            /* PAIR_JOB_* */
	int32_t limit_s;         /* each PE's own time limit */
	int32_t nphases;         /* RESULT and VERDICT phases: 0..nphases-1 */
	int32_t max_results;     /* the rows PE 0 may put */
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
	job->kind = PAIR_JOB_RUN;
	snprintf(job->sub, sizeof(job->sub), "%s", sub);
	job->o = *o;
	job->o.json = job->o.csv = job->o.nic = NULL;
	snprintf(job->nic, sizeof(job->nic), "%s", o->nic ? o->nic : "");
	snprintf(job->transport, sizeof(job->transport), "%s", gic_transport(o));
	job->state_len = (uint32_t)state_len;
	memcpy(job->state, state, state_len);
	return 0;
}

static int pair_run_mpi(pair_job *job, gic_sink *sink);

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
	if (!rc && (nphases < 1 || nphases > PAIR_PHASES_MAX || max_results < 0 ||
		    max_results > PAIR_RESULTS_MAX)) {
		fprintf(stderr, "gic %s: --procs 2: %d phases and %d rows: a job has 1..%d "
			"phases and at most %d rows\n", sub, nphases, max_results, PAIR_PHASES_MAX,
			PAIR_RESULTS_MAX);
		rc = EINVAL;
	}
	if (!rc) {
		job->limit_s = s.limit_s = gic_pl_limit_s(s.limit_env, GIC_PAIR_LIMIT_DEFAULT_S);
		job->nphases = nphases;
		job->max_results = max_results;
		s.job = job;
		if (o->launch == GIC_LAUNCH_MPI)
			rc = pair_run_mpi(job, sink);
		else
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

static void mpi_swap(gic_pair *pair, const void *mine, void *theirs, size_t len, int limit_ms);

/* An hx_swap_fn: arg is the gic_pair; the records go through the driver
 * (--launch mpi: through MPI). */
static int pair_swap_ms(gic_pair *pair, const void *mine, void *theirs, size_t len, int limit_ms)
{
	uint8_t all[2 * GIC_PL_GATHER_MAX];

	if (len < 1 || len > GIC_PL_GATHER_MAX)
		return EINVAL;
	if (pair->boot) {
		mpi_swap(pair, mine, theirs, len, limit_ms);
		return 0;
	}
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

/* --launch mpi, PE 0: keeps row r of the phase being run for the end of
 * the job. 0, or EPROTO (more rows than the job allows, or a phase out
 * of range: said). */
static int mpi_keep(gic_pair *pair, const gic_result *r)
{
	if (pair->nres >= pair->max_results || pair->phase >= pair->nphases) {
		fprintf(stderr, "gic %s: PE 0 (MPI rank 0): row %s %s of phase %d is beyond the "
			"job's %d rows and %d phases\n", pair->pl.sub, r->name, r->metric,
			pair->phase, pair->max_results, pair->nphases);
		return EPROTO;
	}
	pair->res[pair->nres] = *r;
	pair->res_phase[pair->nres++] = pair->phase;
	return 0;
}

int gic_pair_put(gic_pair *pair, gic_sink *sink, const gic_result *r)
{
	if (!pair)
		return gic_emit(sink, r);
	if (pair->pl.rank == 0 && pair->boot)
		return mpi_keep(pair, r);
	if (pair->pl.rank == 0)
		gic_pl_emit(&pair->pl, pair->phase, r);
	return 0;
}

void gic_pair_phase_done(gic_pair *pair, int valid)
{
	if (!pair)
		return;
	if (pair->pl.rank == 1 && pair->boot && pair->phase < pair->nphases)
		pair->verdict[pair->phase] = valid == 1;
	else if (pair->pl.rank == 1 && !pair->boot)
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
	    job->nphases < 1 || job->nphases > PAIR_PHASES_MAX || job->max_results < 0 ||
	    job->max_results > PAIR_RESULTS_MAX ||
	    job->o.provider != (gpu ? GIC_PROV_SOFTNIC : GIC_PROV_MLX5) ||
	    job->state_len > sizeof(job->state))
		gic_pl_die(&pair->pl, "reading the job", "malformed");
	e = gic_experiment_find(job->sub);
	if (!e || !e->run_pe || (gpu && !e->gpu_procs))
		gic_pl_die(&pair->pl, "reading the job", "no experiment of that name runs as a pair");
	return e;
}

/* Takes job (read, its magic checked) as this PE's: checks it (death
 * when malformed), names the PE as the driver does, sets the limit and
 * *o (the job's options, as this PE runs them); the experiment to run. */
static const gic_experiment *take_job(gic_pair *pair, pair_job *job, gic_opts *o)
{
	const gic_experiment *e = check_job(pair, job);

	pair->pl.lib = prov_name(job->o.provider); /* the driver's name for this PE */
	pair->pl.sub = job->sub;
	pair->limit_s = job->limit_s;
	*o = job->o;
	o->nic = job->nic[0] ? job->nic : NULL;
	o->procs = 2;
	gic_set_mlx5_transport(job->transport);
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
	if (job.kind != PAIR_JOB_RUN)
		gic_pl_die(&pair.pl, "reading the job", "malformed");
	e = take_job(&pair, &job, &o);
	gic_pl_pe_alarm(&pair.pl, job.limit_s);
	rc = e->run_pe(&pair, &o, job.state, job.state_len);
	if (rc)
		gic_pl_die(&pair.pl, "running the rows", strerror(rc));
	gic_pl_send(&pair.pl, GIC_PL_REC_DONE, 0, NULL, 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* --launch mpi: the records through MPI. */

/* What the PEs swap through MPI while a job runs, one each way a round:
 * every frame of a run has this size, so a PE a step ahead or behind is
 * told by the type, not by a length MPI would refuse. */
typedef struct pair_frame {
	uint32_t magic;                  /* GIC_PAIR_MAGIC */
	uint32_t type;                   /* GIC_PL_REC_GATHER, or GIC_PL_REC_DONE: the job's end */
	int32_t status;                  /* DONE: 0, or the errno its run_pe ended with */
	uint32_t len;                    /* bytes of data */
	uint8_t data[GIC_PL_GATHER_MAX]; /* GATHER: the records; DONE from PE 1: its verdicts */
} pair_frame;

/* The run's MPI handle (gic_pair_mpi_start), for every job of the run. */
static struct {
	gic_boot *boot;
	const char *sub; /* the experiment, for messages outside a job */
	int broken;      /* a wait failed: MPI may still hold a collective in flight */
} mpi;

/* Swaps len bytes with the peer rank through the handle within limit_ms
 * (both ranks give the same len): this rank's mine, the peer's into
 * theirs. 0, or errno after "gic <sub>: PE <peer> (MPI rank <peer>) did
 * not answer within N s (<what>): <the handle's reason>". */
static int mpi_swap_bytes(const char *sub, const void *mine, void *theirs, size_t len,
			  int limit_ms, const char *what)
{
	int me = gic_boot_rank(mpi.boot), peer = 1 - me;
	uint8_t *all = malloc(2 * len);
	int rc = all ? gic_boot_allgather(mpi.boot, mine, len, all,
					  (uint64_t)limit_ms * 1000000ull) : ENOMEM;

	if (rc) {
		mpi.broken |= rc != ENOMEM;
		if (rc == ETIMEDOUT)
			fprintf(stderr, "gic %s: PE %d (MPI rank %d) did not answer within %d s (%s): "
				"%s\n", sub, peer, peer, limit_ms / 1000, what,
				gic_boot_last_error(mpi.boot));
		else
			fprintf(stderr, "gic %s: PE %d (MPI rank %d) could not be reached (%s): %s\n",
				sub, peer, peer, what,
				rc == ENOMEM ? strerror(rc) : gic_boot_last_error(mpi.boot));
	} else {
		memcpy(theirs, all + (size_t)peer * len, len);
	}
	free(all);
	return rc;
}

/* One frame each way (mpi_swap_bytes); 0, or errno after a message
 * (EPROTO: the peer's is not a frame of this run). */
static int mpi_frames(gic_pair *pair, const pair_frame *mine, pair_frame *theirs, int limit_ms,
		      const char *what)
{
	int peer = 1 - pair->pl.rank;
	int rc = mpi_swap_bytes(pair->pl.sub, mine, theirs, sizeof(*mine), limit_ms, what);

	if (!rc && (theirs->magic != GIC_PAIR_MAGIC || theirs->len > sizeof(theirs->data))) {
		fprintf(stderr, "gic %s: PE %d (MPI rank %d) sent a malformed frame (%s)\n",
			pair->pl.sub, peer, peer, what);
		rc = EPROTO;
	}
	return rc;
}

/* The GATHER of gic_pair_exchange and the record swaps through MPI: dies
 * (gic_pl_die, as the fork launch's PEs do) when the peer does not
 * answer, or answers with the end of its job. */
static void mpi_swap(gic_pair *pair, const void *mine, void *theirs, size_t len, int limit_ms)
{
	pair_frame me = { GIC_PAIR_MAGIC, GIC_PL_REC_GATHER, 0, (uint32_t)len, { 0 } }, peer;
	int rc, other = 1 - pair->pl.rank;

	memcpy(me.data, mine, len);
	rc = mpi_frames(pair, &me, &peer, limit_ms, "exchanging records");
	if (!rc && (peer.type != GIC_PL_REC_GATHER || peer.len != len)) {
		fprintf(stderr, "gic %s: PE %d (MPI rank %d) %s while PE %d was exchanging %zu "
			"bytes of records\n", pair->pl.sub, other, other, peer.type ==
			GIC_PL_REC_DONE ? "ended its job" : "sent a frame of another length",
			pair->pl.rank, len);
		if (peer.type == GIC_PL_REC_DONE && peer.status)
			fprintf(stderr, "gic %s: PE %d (MPI rank %d) failed: %s\n", pair->pl.sub,
				other, other, strerror(peer.status));
		rc = EPROTO;
	}
	if (rc)
		gic_pl_die(&pair->pl, "exchanging records", strerror(rc));
	memcpy(theirs, peer.data, len);
}

/* The end of a job, both ranks: one DONE frame each way, this PE's status
 * rc (PE 1's with its verdicts), waiting up to the PE's own limit
 * (GIC_PAIR_MPI_END_MS after rc, a failure). 0 with the peer's DONE in
 * *peer, or errno after a message. */
static int mpi_job_end(gic_pair *pair, int rc, pair_frame *peer)
{
	pair_frame me = { GIC_PAIR_MAGIC, GIC_PL_REC_DONE, rc, 0, { 0 } };
	int other = 1 - pair->pl.rank, erc;

	if (pair->pl.rank == 1) {
		me.len = (uint32_t)pair->nphases;
		for (int i = 0; i < pair->nphases; i++)
			me.data[i] = (uint8_t)(pair->verdict[i] + 1); /* 0 none, 1 bad, 2 good */
	}
	erc = mpi_frames(pair, &me, peer, rc ? GIC_PAIR_MPI_END_MS : pair->limit_s * 1000,
			 rc ? "the end of a job this PE failed" : "the end of the job");
	if (!erc && peer->type != GIC_PL_REC_DONE) {
		fprintf(stderr, "gic %s: PE %d (MPI rank %d) was still exchanging records when PE "
			"%d ended its job\n", pair->pl.sub, other, other, pair->pl.rank);
		erc = EPROTO;
	}
	if (!erc && peer->status)
		fprintf(stderr, "gic %s: PE %d (MPI rank %d) failed: running the rows: %s (its "
			"messages, if any, are above)\n", pair->pl.sub, other, other,
			strerror(peer->status));
	return erc;
}

/* This rank's PE of the job; the arrays of what it keeps. 0 or ENOMEM. */
static int mpi_pair_init(gic_pair *pair, const pair_job *job)
{
	int rank = gic_boot_rank(mpi.boot);

	memset(pair, 0, sizeof(*pair));
	gic_pl_pe_init(&pair->pl, prov_name(job->o.provider), job->sub, GIC_PAIR_MAGIC, rank, 2,
		       -1);
	pair->in_fd = -1;
	pair->boot = mpi.boot;
	pair->nphases = job->nphases;
	pair->max_results = job->max_results;
	pair->res = calloc((size_t)job->max_results + 1, sizeof(*pair->res));
	pair->res_phase = calloc((size_t)job->max_results + 1, sizeof(*pair->res_phase));
	pair->verdict = malloc((size_t)job->nphases * sizeof(*pair->verdict) + 1);
	if (!pair->res || !pair->res_phase || !pair->verdict)
		return ENOMEM;
	for (int i = 0; i < job->nphases; i++)
		pair->verdict[i] = -1;
	return 0;
}

static void mpi_pair_free(gic_pair *pair)
{
	free(pair->res);
	free(pair->res_phase);
	free(pair->verdict);
}

/* Runs this rank's PE of job (checked) under the PE's own alarm (rank 0:
 * plus GIC_PL_SLACK_S, the driver's slack) and ends the job with the peer
 * (mpi_job_end). 0 when both PEs finished (*peer: PE 1's DONE), EIO when
 * one failed, or the errno of the end's exchange; each said. */
static int mpi_run_job(gic_pair *pair, pair_job *job, pair_frame *peer)
{
	const gic_experiment *e;
	gic_opts o;
	int rc, erc;

	e = take_job(pair, job, &o);
	gic_pl_pe_alarm(&pair->pl, job->limit_s + (pair->pl.rank ? 0 : GIC_PL_SLACK_S));
	rc = e->run_pe(pair, &o, job->state, job->state_len);
	if (rc)
		fprintf(stderr, "gic %s: PE %d (MPI rank %d): running the rows: %s\n", job->sub,
			pair->pl.rank, pair->pl.rank, strerror(rc));
	erc = mpi_job_end(pair, rc, peer);
	alarm(0);
	if (erc)
		return erc;
	return rc || peer->status ? EIO : 0;
}

/* Rank 0's emission of the job's rows: each validated only with PE 1's
 * verdict of its phase (peer: its DONE), with launch=mpi in its params. */
static int mpi_emit(gic_pair *pair, const pair_frame *peer, gic_sink *sink)
{
	for (int i = 0; i < pair->nphases; i++)
		pair->verdict[i] = i < (int)peer->len ? (int)peer->data[i] - 1 : -1;
	for (int i = 0; i < pair->nres; i++)
		gic_result_param(&pair->res[i], "launch=mpi");
	return gic_pl_emit_checked(pair->pl.sub, pair->res, pair->res_phase, pair->nres,
				   pair->verdict, sink);
}

/* gic_pair_run's --launch mpi (rank 0): sends rank 1 the job, runs PE 0,
 * emits the rows. 0, or errno after a message. */
static int pair_run_mpi(pair_job *job, gic_sink *sink)
{
	pair_job *none = calloc(1, sizeof(*none)); /* rank 1 sends nothing */
	pair_frame peer;
	gic_pair pair;
	int rc;

	if (!none)
		return ENOMEM;
	if (!mpi.boot || gic_boot_rank(mpi.boot) != 0) {
		fprintf(stderr, "gic %s: --launch mpi: no MPI job of two ranks, this one rank 0 "
			"(gic_pair_mpi_start)\n", job->sub);
		free(none);
		return EINVAL;
	}
	rc = mpi_swap_bytes(job->sub, job, none, sizeof(*job), GIC_PL_INPUT_MS, "taking the job");
	free(none);
	if (!rc)
		rc = mpi_pair_init(&pair, job);
	if (!rc)
		rc = mpi_run_job(&pair, job, &peer);
	if (!rc)
		rc = mpi_emit(&pair, &peer, sink);
	mpi_pair_free(&pair);
	return rc;
}

int gic_pair_mpi_start(const char *sub, int *rank)
{
	int rc = gic_mpi_open(sub, &mpi.boot), size;

	if (rc)
		return rc;
	*rank = gic_boot_rank(mpi.boot);
	size = gic_boot_size(mpi.boot);
	if (size != 2) {
		if (*rank == 0)
			fprintf(stderr, "gic %s: --launch mpi: the MPI job has %d rank%s; --procs 2 "
				"runs one PE on each of two (mpirun -np 2 ...)\n", sub, size,
				size == 1 ? " (was gic started by an MPI launcher?)" : "s");
		gic_boot_free(mpi.boot);
		mpi.boot = NULL;
		return EINVAL;
	}
	mpi.sub = sub;
	/* hydra (MPICH's mpiexec -disable-auto-cleanup) tells the ranks left
	 * of a failed one with SIGUSR1, whose default ends the process before
	 * it could say anything: this rank's own limits find the failure. */
	signal(SIGUSR1, SIG_IGN);
	return 0;
}

/* Rank 1: runs one job (kind RUN, magic checked). 0 when both PEs
 * finished it, EIO when one failed (said; the run goes on), or another
 * errno when the ranks lost each other (said; the run is over). */
static int mpi_serve_job(pair_job *job)
{
	pair_frame peer;
	gic_pair pair;
	int rc = mpi_pair_init(&pair, job);

	if (rc)
		gic_pl_die(&pair.pl, "taking the job", strerror(rc));
	rc = mpi_run_job(&pair, job, &peer);
	mpi_pair_free(&pair);
	return rc;
}

int gic_pair_mpi_serve(void)
{
	static pair_job job, none; /* too big for a small stack */
	int limit_s = gic_pl_limit_s(GIC_PAIR_LIMIT_ENV, GIC_PAIR_LIMIT_DEFAULT_S);
	int failed = 0, rc = 0;

	fflush(stdout);
	if (dup2(2, 1) < 0) /* rank 0's stdout carries the table */
		fprintf(stderr, "gic %s: PE 1 (MPI rank 1): stdout to stderr: %s\n", mpi.sub,
			strerror(errno));
	signal(SIGPIPE, SIG_IGN);
	while (!rc) {
		/* Rank 0 sends a job when it has one: between jobs it may run rows
		 * of its own, so the wait is the PEs' whole limit. */
		rc = mpi_swap_bytes(mpi.sub, &none, &job, sizeof(job), limit_s * 1000,
				    "waiting for a job");
		if (!rc && (job.magic != GIC_PAIR_MAGIC ||
			    (job.kind != PAIR_JOB_RUN && job.kind != PAIR_JOB_END))) {
			fprintf(stderr, "gic %s: PE 1 (MPI rank 1): a malformed job from rank 0\n",
				mpi.sub);
			rc = EPROTO;
		}
		if (!rc && job.kind == PAIR_JOB_END)
			break;
		if (!rc)
			rc = mpi_serve_job(&job);
		failed |= rc != 0;
		rc = rc == EIO ? 0 : rc; /* a failed job: the next may run */
	}
	gic_boot_free(mpi.boot);
	mpi.boot = NULL;
	return failed;
}

void gic_pair_mpi_stop(void)
{
	pair_job *end = calloc(1, sizeof(*end)), *none = calloc(1, sizeof(*end));

	if (mpi.boot && !mpi.broken && end && none) {
		end->magic = GIC_PAIR_MAGIC;
		end->kind = PAIR_JOB_END;
		mpi_swap_bytes(mpi.sub, end, none, sizeof(*end), GIC_PL_INPUT_MS,
			       "the end of the run");
	}
	free(end);
	free(none);
	gic_boot_free(mpi.boot);
	mpi.boot = NULL;
}
