/*
 * bench/gic/exp_conns.c - `gic conns` (exp_conns.h): parsing, the shared
 * result wording, and the host mode.
 *
 * Host mode: every object comes from the provider interface
 * (gic/provider.h): two PEs (softnic: PE1 shares PE0's softnic, CPU
 * engine; mlx5: the same device opened twice, loopback), C RC QP pairs
 * connected through their gic_conn records, host views (GIC_VIEW_HOST)
 * posted with gic/post.h by host threads: -t threads per direction (at
 * most CONNS_HOST_THREADS, and at most C). DC: each poster owns a DCI,
 * each connection is a DCT of the target PE, and each write reads its
 * payload from the sender's source region, its WQE carrying the DCT's
 * full address vector.
 * CONNS_HOST_ROUNDS rounds per configuration, every target slot checked
 * after each round.
 *
 * --procs 2 (pe_pair.h; RC): the same fixture and rounds with PE1 a
 * process of its own: each PE makes its C QPs on its NIC, the records
 * (with its target region's address and rkey) swapped through the
 * driver (pe_launch's GATHER, 64 a round), each connected to the peer's
 * QP c. A round: each PE clears the slots it receives, both ready (an
 * exchange through the driver), each runs the posters of the directions
 * it sends and drains them, the PEs swap the span of the role's
 * direction (both drained: every write landed), each checks every slot
 * it received, and the PEs swap their checks (a row's rounds stop at the
 * first bad one on both). PE 0 emits the rows (the rate from the
 * span of whichever PE posted the role's direction), PE 1 sends the
 * verdict of each configuration: a phase each. DC is refused: its DCTs
 * would be another process's, which the fixture does not reach (nor
 * does the emulated device model DC across processes).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_conns.h"
#include "gic.h"
#include "gic/provider.h"
#include "host.h"
#include "pe_pair.h"

#define SUB "conns"
#define WAIT_NS 5000000000ull /* every host wait gives up after 5 s */

enum {
	CONNS_HOST_THREADS = 8,  /* posters per direction */
	CONNS_HOST_ROUNDS = 3,
	CONNS_HOST_LOG_BB = 8,   /* 256-BB rings */
};

static const char *const role_names[] = { "send", "recv", "both" };
static const char *const role_labels[] = { "send-only", "receive-only", "simultaneous" };
static const char *const transport_names[] = { "rc", "dc" };

const char *gic_conns_role_name(int role)
{
	return role >= 0 && role < 3 ? role_names[role] : NULL;
}

const char *gic_conns_transport_name(int transport)
{
	return transport >= 0 && transport < 2 ? transport_names[transport] : NULL;
}

/* ------------------------------------------------------------------ */
/* Flags. */

#define F(m) GIC_FLAG_FIELD(conns_state, m)
static const gic_flag conns_flags[] = {
	{ "--conns", .value = "LIST", GIC_FLAG_LIST, F(conns), .count_off = offsetof(conns_state,
	  nconns), .lo = 1, .hi = CONNS_MAX_CONNS, .max = CONNS_MAX_LIST,
	  .dflt = "1,2,4,...,1024; --host 1,4,16,64; --host --quick 1,4,16",
	  .help = "active connections per configuration" },
	{ "--writes", .value = "LIST", GIC_FLAG_LIST, F(writes), .count_off = offsetof(conns_state,
	  nwrites), .lo = 1, .hi = CONNS_MAX_WRITES, .max = CONNS_MAX_LIST, .dflt = "1,4,16",
	  .help = "writes per connection visit" },
	{ "--role", .value = "R", GIC_FLAG_BITS, F(roles), .names = role_names, .n = 3, .all = 7u,
	  .dflt = "all", .help = "PE0 sends through C connections, receives through C, or both "
	  "at once" },
	{ "--transport", .value = "T", GIC_FLAG_BITS, F(transports), .names = transport_names,
	  .n = 2, .all = 3u, .dflt = "all", .help = "a QP per connection, or a DCI per poster and "
	  "a DCT per connection (--host; GPU mode: rc) (--provider mlx5: both PEs on one device, "
	  "in loopback)" },
	{ "-n N", .kind = GIC_FLAG_NOTE, .help = "writes per poster per round, rounded up to whole "
	  "passes over its connections (common flag)" },
	{ "-c N, -t N", .kind = GIC_FLAG_NOTE, .help = "GPU: posters = -c CTAs x -t threads "
	  "(default 64 x 1), at most C; --host: -t host threads per direction (1..8, default 1)" },
};
#undef F
static const gic_flag_table conns_table = GIC_FLAG_TABLE(SUB, conns_flags, 0);

/* Fills what the command line left out. */
static void defaults(const gic_opts *o, conns_state *st)
{
	if (!st->nconns) {
		int n = o->host ? (o->quick ? 16 : 64) : CONNS_MAX_CONNS;

		for (int c = 1; c <= n; c *= o->host ? 4 : 2)
			st->conns[st->nconns++] = c;
	}
	if (!st->nwrites) {
		st->writes[0] = 1, st->writes[1] = 4, st->writes[2] = 16;
		st->nwrites = 3;
	}
	if (!st->roles)
		st->roles = 7u;
	if (!st->transports)
		st->transports = 3u;
}

/* ------------------------------------------------------------------ */
/* Results. */

int gic_conns_emit(gic_sink *sink, int role, int transport, const conns_plan *p, int posters,
		   const double *rates, int rounds, int validated, const char *transport_name,
		   const char *extra_note)
{
	gic_samples s;
	gic_result r;
	int rc = 0;

	for (int m = 0; m < 2 && !rc; m++) {
		gic_result_init(&r, SUB, "", m ? "per-connection rate" : "message rate",
				m ? "K msg/s" : "M msg/s");
		snprintf(r.name, sizeof(r.name), "%s %s, %d conns, %d writes/visit",
			 role_labels[role], transport_names[transport], p->conns, p->writes);
		gic_result_param(&r, "role=%s transport=%s conns=%d writes_per_visit=%d "
				 "posters=%d passes=%d writes_per_conn=%d doorbell_every=%d "
				 "signal_every=%d rounds=%d size=8", role_names[role],
				 transport_names[transport], p->conns, p->writes, posters, p->passes,
				 p->passes * p->writes, p->db_every, p->sig_every, rounds);
		snprintf(r.transport, sizeof(r.transport), "%s", transport_name);
		if (!strncmp(transport_name, "softnic", 7))
			snprintf(r.note, sizeof(r.note), "%s%s%s", CONNS_SOFTNIC_NOTE,
				 extra_note && *extra_note ? "; " : "", extra_note ? extra_note : "");
		else
			snprintf(r.note, sizeof(r.note), "%s", extra_note ? extra_note : "");
		r.validated = validated;
		if ((rc = gic_samples_init(&s, (size_t)rounds)))
			break;
		for (int i = 0; i < rounds; i++)
			gic_samples_add(&s, m ? rates[i] * 1e3 / p->conns : rates[i]);
		gic_result_set_samples(&r, &s, 0);
		gic_samples_free(&s);
		gic_result_paper(&r);
		rc = gic_emit(sink, &r);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Host mode: the fixture. */

typedef struct cx_pe {
	gic_nic *nic;
	uint64_t *dst, *src;      /* target slots (peers write), DC payload source */
	gic_nic_mr *dst_mr, *src_mr;
	gic_nic_cq **cq;          /* RC: one per connection; DC: one per poster (its DCI) */
	gic_nic_qp **qp;
	gic_sq *sq;               /* views: RC per connection, DC per poster (its DCI) */
	gic_cq *cqv;
	gic_nic_cq **dct_cq;      /* DC: one DCT per connection (targets of the peer) */
	gic_nic_qp **dct;
	gic_av_seg *av;           /* av[c]: reaches the peer's DCT c (full form) */
	uint32_t dst_rkey;        /* of dst: the registration's, or the peer process's record */
	int remote;               /* --procs 2: the peer process's PE (only dst, dst_rkey) */
} cx_pe;

struct cx;

typedef struct cx_thread {
	pthread_t tid;
	struct cx *x;
	int dir, poster, rc;
	uint64_t t0, t1;
} cx_thread;

typedef struct cx {
	const gic_opts *o;
	const conns_state *st;
	int transport, conns, posters;
	size_t region;
	cx_pe pe[2];
	conns_plan plan;
	int go;
	cx_thread th[2 * CONNS_HOST_THREADS];
	gic_pair *pair;           /* --procs 2: this process's PE (NULL: both PEs here) */
} cx;

static uint64_t deadline(void)
{
	return gic_now_ns() + WAIT_NS;
}

static int say_nic(const cx *x, int pe, const char *what)
{
	int rc = errno ? errno : EIO;

	fprintf(stderr, "gic conns: %s (PE%d): %s: %s\n", what, pe, strerror(rc),
		gic_nic_error(x->pe[pe].nic));
	return rc;
}

static void *zalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);

	if (p)
		memset(p, 0, n);
	return p;
}

static int pe_open(cx *x, int i)
{
	cx_pe *pe = &x->pe[i];

	pe->nic = hx_nic_open(SUB, x->o->provider, x->o->nic, i ? x->pe[0].nic : NULL, 1);
	if (!pe->nic)
		return errno;
	pe->dst = zalloc(x->region);
	pe->src = zalloc(x->region);
	pe->cq = calloc((size_t)x->conns, sizeof(*pe->cq));
	pe->qp = calloc((size_t)x->conns, sizeof(*pe->qp));
	pe->sq = calloc((size_t)x->conns, sizeof(*pe->sq));
	pe->cqv = calloc((size_t)x->conns, sizeof(*pe->cqv));
	pe->dct_cq = calloc((size_t)x->conns, sizeof(*pe->dct_cq));
	pe->dct = calloc((size_t)x->conns, sizeof(*pe->dct));
	pe->av = calloc((size_t)x->conns, sizeof(*pe->av));
	if (!pe->dst || !pe->src || !pe->cq || !pe->qp || !pe->sq || !pe->cqv || !pe->dct_cq ||
	    !pe->dct || !pe->av)
		return ENOMEM;
	pe->dst_mr = gic_nic_reg_mr(pe->nic, pe->dst, x->region,
				    GIC_ACCESS_REMOTE_WRITE | GIC_ACCESS_LOCAL_WRITE);
	pe->src_mr = pe->dst_mr ? gic_nic_reg_mr(pe->nic, pe->src, x->region,
						  GIC_ACCESS_LOCAL_WRITE) : NULL;
	if (!pe->src_mr)
		return say_nic(x, i, "register memory");
	pe->dst_rkey = pe->dst_mr->rkey;
	return 0;
}

/* A CQ of 2^log_bb CQEs and a QP of type on it (its send CQ, a DCT's
 * receive CQ); 0 or the errno after say_nic's message. */
static int qp_make(cx *x, int i, int type, int log_bb, gic_nic_cq **cq, gic_nic_qp **qp)
{
	static const char *const what[] = { "create an RC QP", "create a DCI", "create a DCT" };
	gic_qp_attr qa = { .log_sq_bb = log_bb, .type = type };

	errno = 0;
	*cq = gic_nic_cq_create(x->pe[i].nic, log_bb);
	qa.send_cq = *cq;
	*qp = *cq ? gic_nic_qp_create(x->pe[i].nic, &qa) : NULL;
	return *qp ? 0 : say_nic(x, i, what[type]);
}

/* --procs 2: this PE's QP records (with its target region) for the
 * peer's through the driver; QP c connected to the peer's QP c and
 * viewed, the peer's region noted. */
static int rc_connect_proc(cx *x)
{
	int me = gic_pair_rank(x->pair), rc = 0;
	cx_pe *pe = &x->pe[me];
	gic_conn_info *rec = calloc(2 * (size_t)x->conns, sizeof(*rec)), *remote;

	if (!rec)
		return ENOMEM;
	remote = rec + x->conns;
	for (int c = 0; c < x->conns && !rc; c++) {
		rc = gic_nic_qp_local(pe->qp[c], &rec[c]);
		rec[c].addr = (uint64_t)(uintptr_t)pe->dst;
		rec[c].rkey = pe->dst_rkey;
	}
	if (!rc)
		rc = gic_pair_swap_records(x->pair, rec, remote, x->conns);
	for (int c = 0; c < x->conns && !rc; c++) {
		rc = gic_nic_qp_connect(pe->qp[c], &rec[c], &remote[c]);
		if (!rc)
			rc = gic_nic_qp_view(pe->qp[c], GIC_VIEW_HOST, &pe->sq[c], &pe->cqv[c]);
	}
	x->pe[1 - me].dst = (uint64_t *)(uintptr_t)remote[0].addr;
	x->pe[1 - me].dst_rkey = remote[0].rkey;
	free(rec);
	if (rc) {
		errno = rc;
		return say_nic(x, me, "connect an RC QP to the peer process");
	}
	return 0;
}

static int rc_open(cx *x)
{
	for (int i = 0; i < 2; i++) {
		for (int c = 0; c < x->conns && !x->pe[i].remote; c++) {
			int rc = qp_make(x, i, GIC_QP_RC, CONNS_HOST_LOG_BB, &x->pe[i].cq[c],
					 &x->pe[i].qp[c]);

			if (rc)
				return rc;
		}
	}
	if (x->pair)
		return rc_connect_proc(x);
	for (int c = 0; c < x->conns; c++) {
		gic_conn_info l[2];
		int rc = 0;

		for (int i = 0; i < 2 && !rc; i++)
			rc = gic_nic_qp_local(x->pe[i].qp[c], &l[i]);
		for (int i = 0; i < 2 && !rc; i++)
			rc = gic_nic_qp_connect(x->pe[i].qp[c], &l[i], &l[1 - i]);
		for (int i = 0; i < 2 && !rc; i++)
			rc = gic_nic_qp_view(x->pe[i].qp[c], GIC_VIEW_HOST, &x->pe[i].sq[c],
					     &x->pe[i].cqv[c]);
		if (rc) {
			errno = rc;
			return say_nic(x, 0, "connect an RC QP pair");
		}
	}
	return 0;
}

/* DC: a DCI per poster (its views in sq/cqv[poster]), a DCT per
 * connection, and each PE's address vectors of the peer's DCTs. */
static int dc_open(cx *x)
{
	for (int i = 0; i < 2; i++) {
		cx_pe *pe = &x->pe[i];
		int rc = 0;

		for (int p = 0; p < x->posters && !rc; p++)
			rc = qp_make(x, i, GIC_QP_DCI, CONNS_HOST_LOG_BB, &pe->cq[p], &pe->qp[p]);
		for (int c = 0; c < x->conns && !rc; c++)
			rc = qp_make(x, i, GIC_QP_DCT, 1, &pe->dct_cq[c], &pe->dct[c]);
		for (int p = 0; p < x->posters && !rc; p++)
			if ((errno = gic_nic_qp_view(pe->qp[p], GIC_VIEW_HOST, &pe->sq[p], &pe->cqv[p])))
				rc = say_nic(x, i, "view a DCI");
		if (rc)
			return rc;
	}
	for (int i = 0; i < 2; i++) {
		for (int c = 0; c < x->conns; c++) {
			gic_conn_info r;

			errno = gic_nic_qp_local(x->pe[1 - i].dct[c], &r);
			if (!errno)
				errno = gic_nic_dc_av(x->pe[i].nic, &r, 1, &x->pe[i].av[c]);
			if (errno)
				return say_nic(x, i, "address vector of a DCT");
		}
	}
	return 0;
}

static void cx_close(cx *x)
{
	if (!x)
		return;
	for (int i = 1; i >= 0; i--) {
		cx_pe *pe = &x->pe[i];

		if (pe->remote) /* the peer process's: nothing of it here */
			continue;
		for (int c = 0; pe->qp && c < x->conns; c++)
			gic_nic_qp_destroy(pe->qp[c]);
		for (int c = 0; pe->dct && c < x->conns; c++)
			gic_nic_qp_destroy(pe->dct[c]);
		for (int c = 0; pe->cq && c < x->conns; c++)
			gic_nic_cq_destroy(pe->cq[c]);
		for (int c = 0; pe->dct_cq && c < x->conns; c++)
			gic_nic_cq_destroy(pe->dct_cq[c]);
		gic_nic_dereg_mr(pe->dst_mr);
		gic_nic_dereg_mr(pe->src_mr);
		gic_nic_close(pe->nic);
		free(pe->dst);
		free(pe->src);
		free(pe->cq);
		free(pe->qp);
		free(pe->sq);
		free(pe->cqv);
		free(pe->dct_cq);
		free(pe->dct);
		free(pe->av);
	}
	free(x);
}

/* The fixture of C connections on transport: both PEs here (pair NULL),
 * or this PE of a pair (RC only), the peer's PE remote. */
static int cx_open(cx **out, const gic_opts *o, const conns_state *st, int transport, int conns,
		   gic_pair *pair)
{
	cx *x = calloc(1, sizeof(*x));
	int rc = 0;

	*out = NULL;
	if (!x)
		return ENOMEM;
	if (pair && transport != CONNS_RC) {
		free(x);
		return EINVAL; /* conns_run_pe refused it */
	}
	x->pair = pair;
	if (pair)
		x->pe[1 - gic_pair_rank(pair)].remote = 1;
	x->o = o;
	x->st = st;
	x->transport = transport;
	x->conns = conns;
	x->posters = o->threads < conns ? o->threads : conns;
	if (x->posters > CONNS_HOST_THREADS)
		x->posters = CONNS_HOST_THREADS;
	x->region = (size_t)conns * CONNS_MAX_SLOTS * 8;
	for (int i = 0; i < 2 && !rc; i++)
		rc = x->pe[i].remote ? 0 : pe_open(x, i);
	if (!rc)
		rc = transport == CONNS_RC ? rc_open(x) : dc_open(x);
	if (rc) {
		cx_close(x);
		return rc;
	}
	*out = x;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Host mode: a round. */

/* One visit on a DC connection: W writes of 8 bytes from the sender's
 * source slots to the DCT's target slots, each WQE carrying its AV. */
static int visit_dc(gic_sq *sq, const conns_plan *p, const gic_av_seg *av, uint64_t base,
		    uint32_t rkey, uint64_t src, uint32_t lkey, uint32_t conn, int last, int order)
{
	for (int j = 0; j < p->writes; j++) {
		uint64_t pos, off = conns_slot_off(p, conn, (uint32_t)j % (uint32_t)p->slots);
		int rc = gic_sq_reserve_excl(sq, 2, &pos, order, deadline());
		int sig = conns_signal(p, pos, 2) || (last && j + 1 == p->writes);

		if (rc)
			return rc;
		gic_wqe_dc_write(sq, pos, av, base + off, rkey, src + off, lkey, 8,
				 sig ? GIC_CTRL_CQ_UPDATE : 0);
		if (sig)
			gic_sq_note_signaled(sq, pos + 2, 0);
		if ((j + 1) % p->db_every == 0 || j + 1 == p->writes)
			gic_sq_publish_excl(sq, order);
	}
	return 0;
}

static int poster(cx *x, cx_thread *T)
{
	cx_pe *me = &x->pe[T->dir], *peer = &x->pe[1 - T->dir];
	uint64_t base = (uint64_t)(uintptr_t)peer->dst;
	uint32_t rkey = peer->dst_rkey;
	const conns_plan *p = &x->plan;
	const int order = GIC_ORDER_RELEASE_SYS;
	int rc = 0;

	for (int pass = 0; pass < p->passes && !rc; pass++) {
		for (int c = T->poster; c < x->conns && !rc; c += x->posters) {
			if (x->transport == CONNS_RC)
				rc = conns_visit_rc(&me->sq[c], p, base, rkey, (uint32_t)c,
						    (uint32_t)pass, pass + 1 == p->passes, order,
						    deadline());
			else
				rc = visit_dc(&me->sq[T->poster], p, &me->av[c], base, rkey,
					      (uint64_t)(uintptr_t)me->src, me->src_mr->lkey,
					      (uint32_t)c, pass + 1 == p->passes, order);
		}
	}
	if (x->transport == CONNS_DC)
		return rc ? rc : gic_sq_quiet(&me->sq[T->poster], order, deadline());
	for (int c = T->poster; c < x->conns && !rc; c += x->posters)
		rc = gic_sq_quiet(&me->sq[c], order, deadline());
	return rc;
}

static void *poster_main(void *arg)
{
	cx_thread *T = arg;
	cx *x = T->x;

	for (uint32_t spins = 1; !__atomic_load_n(&x->go, __ATOMIC_ACQUIRE); spins++)
		if ((spins & 1023) == 0)
			sched_yield();
	T->t0 = gic_now_ns();
	T->rc = poster(x, T);
	T->t1 = gic_now_ns();
	return NULL;
}

/* Clears the target slots of direction d and fills the sender's DC
 * source slots with the round's pattern (--procs 2: what of it is this
 * process's). */
static void prepare(cx *x, int d)
{
	cx_pe *me = &x->pe[d];

	if (!x->pe[1 - d].remote)
		memset(x->pe[1 - d].dst, 0, x->region);
	for (int c = 0; c < x->conns && !me->remote; c++)
		for (int s = 0; s < x->plan.slots; s++)
			me->src[c * x->plan.slots + s] =
				conns_value(x->plan.tag, (uint32_t)c, 0, (uint32_t)s);
}

int conns_check(const conns_plan *p, const uint64_t *got, int dc, int dir)
{
	for (int c = 0; c < p->conns; c++) {
		for (int s = 0; s < p->slots; s++) {
			uint64_t want = dc ? conns_value(p->tag, (uint32_t)c, 0, (uint32_t)s) :
				conns_value(p->tag, (uint32_t)c, (uint32_t)(p->passes - 1),
					    conns_last_j(p, (uint32_t)s));
			uint64_t v = __atomic_load_n(&got[c * p->slots + s], __ATOMIC_ACQUIRE);

			if (v != want) {
				fprintf(stderr, "gic conns: validation failed: PE%d -> PE%d, "
					"connection %d slot %d holds 0x%016llx, expected 0x%016llx\n",
					dir, 1 - dir, c, s, (unsigned long long)v,
					(unsigned long long)want);
				return 0;
			}
		}
	}
	return 1;
}

/* --procs 2: what a PE hands the other once its posters are done. */
typedef struct cx_span {
	uint64_t t0, t1; /* its posters' span in the role's direction (t1 0: it posts none) */
	int64_t tag;     /* the round's tag (both PEs' must agree) */
} cx_span;

/* --procs 2, once this PE's posters have drained (every write it posted
 * has landed): the role's span from the PE that posted it. After it,
 * each PE's received slots are final. Nothing with both PEs here. */
static int cx_swap_span(cx *x, uint64_t *t0, uint64_t *t1)
{
	cx_span mine = { .t0 = *t0, .t1 = *t1, .tag = (int64_t)x->plan.tag }, theirs = { 0 };
	int rc;

	if (!x->pair)
		return 0;
	rc = gic_pair_exchange(x->pair, &mine, &theirs, sizeof(mine));
	if (!rc && theirs.tag != mine.tag) {
		fprintf(stderr, "gic conns: PE%d: the peer ran round %lld, this PE %lld\n",
			gic_pair_rank(x->pair), (long long)theirs.tag, (long long)mine.tag);
		rc = EPROTO;
	}
	if (!rc && !*t1) {
		*t0 = theirs.t0;
		*t1 = theirs.t1;
	}
	return rc;
}

/* --procs 2, after this PE's checks: *valid the AND of both PEs'. */
static int cx_swap_valid(cx *x, int *valid)
{
	int32_t mine = *valid, theirs = 0;
	int rc;

	if (!x->pair)
		return 0;
	rc = gic_pair_exchange(x->pair, &mine, &theirs, sizeof(mine));
	*valid = *valid && theirs;
	return rc;
}

/* Starts the posters of the directions dirs[0..nd) that this process
 * sends, waiting for go; *n receives how many. 0 or EAGAIN. */
static int start_posters(cx *x, const int *dirs, int nd, int *n)
{
	*n = 0;
	x->go = 0;
	for (int k = 0; k < nd; k++) {
		for (int p = 0; p < x->posters && !x->pe[dirs[k]].remote; p++) {
			cx_thread *T = &x->th[*n];

			*T = (cx_thread){ .x = x, .dir = dirs[k], .poster = p };
			if (pthread_create(&T->tid, NULL, poster_main, T))
				return EAGAIN;
			(*n)++;
		}
	}
	return 0;
}

/* Joins posters th[0..n); the first failure (said), and the span of the
 * role's direction among them in *t0, *t1 (t1 0: none of them). */
static int join_posters(cx *x, int role, int n, uint64_t *t0, uint64_t *t1)
{
	int rc = 0;

	*t0 = ~0ull;
	*t1 = 0;
	for (int i = 0; i < n; i++) {
		cx_thread *T = &x->th[i];
		cx_pe *me = &x->pe[T->dir];

		pthread_join(T->tid, NULL);
		if (T->rc && !rc) {
			gic_sq *sq = &me->sq[T->poster];

			for (int c = T->poster; x->transport == CONNS_RC && c < x->conns;
			     c += x->posters)
				if (me->sq[c].err) {
					sq = &me->sq[c];
					break;
				}
			rc = T->rc;
			fprintf(stderr, "gic conns: PE%d poster %d: %s%s%s\n", T->dir, T->poster,
				rc == ETIMEDOUT ? "no progress within the time limit" : strerror(rc),
				sq->err ? "; error CQE: " : "",
				sq->err ? gic_syndrome_name(sq->err_info.syndrome) : "");
		}
		/* The rate of the role's direction: PE0's sends, or its receives. */
		if (T->dir == (role == CONNS_RECV)) {
			*t0 = T->t0 < *t0 ? T->t0 : *t0;
			*t1 = T->t1 > *t1 ? T->t1 : *t1;
		}
	}
	return rc;
}

/* Runs one round of role; *rate receives the role's rate (M msg/s).
 * Returns 0 (valid is 0 when a payload was wrong) or an errno. --procs
 * 2: this process's part (its directions' posters, the slots it
 * receives), both PEs ready before the posters start (an exchange), the
 * span swapped once both drained, then the checks. */
static int round_run(cx *x, int role, double *rate, int *valid)
{
	int dirs[2], nd = 0, n = 0, rc = 0, jrc, ready = (int)x->plan.tag, peer_ready;
	uint64_t t0, t1;

	if (role != CONNS_RECV)
		dirs[nd++] = 0;
	if (role != CONNS_SEND)
		dirs[nd++] = 1;
	for (int k = 0; k < nd; k++)
		prepare(x, dirs[k]);
	if (x->pair)
		rc = gic_pair_exchange(x->pair, &ready, &peer_ready, sizeof(ready));
	if (!rc)
		rc = start_posters(x, dirs, nd, &n);
	__atomic_store_n(&x->go, 1, __ATOMIC_RELEASE);
	jrc = join_posters(x, role, n, &t0, &t1);
	if (rc || jrc || (rc = cx_swap_span(x, &t0, &t1)))
		return rc ? rc : jrc;
	*valid = 1;
	for (int k = 0; k < nd; k++)
		if (!x->pe[1 - dirs[k]].remote)
			*valid &= conns_check(&x->plan, x->pe[1 - dirs[k]].dst,
					      x->transport == CONNS_DC, dirs[k]);
	if ((rc = cx_swap_valid(x, valid)))
		return rc;
	*rate = (double)x->conns * x->plan.passes * x->plan.writes * 1e3 / (double)(t1 - t0);
	return 0;
}

/* The plan of (C, W) for the host fixture. */
static conns_plan host_plan(const gic_opts *o, const cx *x, int writes)
{
	conns_plan p = { .conns = x->conns, .writes = writes };
	int nbb = x->transport == CONNS_DC ? 2 : 1, ring = 1 << CONNS_HOST_LOG_BB;
	int owned = (x->conns + x->posters - 1) / x->posters;
	long per_pass = (long)owned * writes;

	p.slots = writes < CONNS_MAX_SLOTS ? writes : CONNS_MAX_SLOTS;
	p.passes = (int)((o->iters + per_pass - 1) / per_pass);
	p.db_every = writes < ring / (2 * nbb) ? writes : ring / (2 * nbb);
	p.sig_every = ring / 4;
	return p;
}

/* --procs 2, PE 0: the rows gic_conns_emit made in rows, each with
 * procs=2, handed to the driver as the configuration's phase. */
static int put_pair_rows(cx *x, gic_sink *rows)
{
	int rc = 0;

	for (size_t i = 0; i < gic_sink_count(rows) && !rc; i++) {
		gic_result r = *gic_sink_at(rows, i);

		gic_result_param(&r, "procs=2");
		rc = gic_pair_put(x->pair, NULL, &r);
	}
	return rc;
}

/* One configuration (--procs 2: a phase): its rounds, then its rows. */
static int host_config(cx *x, int role, int writes, gic_sink *sink)
{
	double rates[CONNS_HOST_ROUNDS];
	const char *tr = gic_transport(x->o);
	char note[96];
	int valid = 1, rc = 0, k;
	gic_sink *rows = sink;

	x->plan = host_plan(x->o, x, writes);
	for (k = 0; k < CONNS_HOST_ROUNDS && !rc && valid; k++) {
		x->plan.tag = (uint64_t)(k + 1);
		rc = round_run(x, role, &rates[k], &valid);
	}
	if (rc)
		return rc;
	snprintf(note, sizeof(note), "%s", x->pair ? "--procs 2: PE1 a process of its own on the "
		 "same NIC (loopback); host threads post" : x->o->provider == GIC_PROV_MLX5 ?
		 "mlx5 loopback: both PEs on one NIC; host threads post" : "host threads");
	if (x->pair && gic_pair_posts(x->pair) && !(rows = gic_sink_new()))
		return ENOMEM;
	if (gic_pair_posts(x->pair))
		rc = gic_conns_emit(rows, role, x->transport, &x->plan, x->posters, rates,
				    valid ? k : (k > 1 ? k - 1 : 1), valid, tr, note);
	if (rows != sink) {
		rc = rc ? rc : put_pair_rows(x, rows);
		gic_sink_free(rows);
	}
	if (!rc)
		gic_pair_phase_done(x->pair, valid);
	return rc;
}

/* Every configuration: in this process (pair NULL), or as this PE of a
 * pair. */
static int host_run(const gic_opts *o, const conns_state *st, gic_pair *pair, gic_sink *sink)
{
	int total = 0, done = 0, rc = 0;

	for (int t = 0; t < 2; t++)
		total += (st->transports >> t & 1) * st->nconns;
	for (int t = 0; t < 2 && !rc; t++) {
		if (!(st->transports >> t & 1))
			continue;
		for (int i = 0; i < st->nconns && !rc; i++) {
			char what[48];
			cx *x;

			snprintf(what, sizeof(what), "%s, %d conns", transport_names[t], st->conns[i]);
			gic_progress(SUB, ++done, total, what);
			if ((rc = cx_open(&x, o, st, t, st->conns[i], pair)))
				break;
			for (int r = 0; r < 3 && !rc; r++)
				for (int w = 0; w < st->nwrites && !rc && (st->roles >> r & 1); w++)
					rc = host_config(x, r, st->writes[w], sink);
			cx_close(x);
		}
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* --procs 2. */

_Static_assert(sizeof(conns_state) <= GIC_PAIR_STATE_MAX, "conns' state fits a pair job");

/* Configurations (phases) of st's RC rows. */
static int conns_phases(const conns_state *st)
{
	return st->nconns * st->nwrites * (int)__builtin_popcount(st->roles & 7u);
}

/* run_pe (exp.h): every RC configuration as this PE of pair. */
static int conns_run_pe(gic_pair *pair, const gic_opts *o, const void *state, size_t state_len)
{
	const conns_state *st = state;

	if (state_len != sizeof(*st) ||
	    !gic_pair_list_ok(st->conns, st->nconns, CONNS_MAX_LIST, CONNS_MAX_CONNS) ||
	    !gic_pair_list_ok(st->writes, st->nwrites, CONNS_MAX_LIST, CONNS_MAX_WRITES) ||
	    st->roles < 1 ||
	    st->roles > 7u || st->transports != 1u << CONNS_RC || o->threads < 1 ||
	    o->threads > CONNS_HOST_THREADS) {
		fprintf(stderr, "gic conns: PE%d: a malformed job\n", gic_pair_rank(pair));
		return EPROTO;
	}
	return host_run(o, st, pair, NULL);
}

/* --procs 2 (after main's checks: --host, a provider other than softnic):
 * RC only. */
static int conns_check_procs(const gic_opts *o, const void *state)
{
	const conns_state *st = state;

	if (st->transports == 1u << CONNS_DC) {
		fprintf(stderr, "gic conns: --procs %d runs --transport rc: a DC row's DCTs would be "
			"the peer process's, and this fixture makes its DCIs' address vectors from "
			"DCTs in its own process (the emulated device has no DC across processes "
			"either)\n", o->procs);
		return EINVAL;
	}
	return 0;
}

/* --procs 2 (st's defaults filled in): the RC rows in a pair of PE
 * processes; the DC rows skipped, said. */
static int conns_pair(const gic_opts *o, conns_state *st, gic_sink *sink)
{
	if (st->transports & (1u << CONNS_DC))
		fprintf(stderr, "gic conns: --procs %d: DC rows skipped (--procs 2 runs RC)\n",
			o->procs);
	st->transports = 1u << CONNS_RC;
	return gic_pair_run(o, SUB, st, sizeof(*st), conns_phases(st), 2 * conns_phases(st),
			    sink);
}

static int conns_run(const gic_opts *o, void *state, const gic_run_info *info, gic_sink *sink)
{
	conns_state *st = state;

	defaults(o, st);
	if (!o->host && (st->transports & 2u)) {
		fprintf(stderr, "gic conns: --transport dc: the GPU mode runs RC only (DC runs "
			"with --host, on either provider); DC rows %s\n",
			st->transports == 2u ? "cannot run" : "skipped");
		if (st->transports == 2u)
			return ENOTSUP;
		st->transports = 1u;
	}
	if (o->host && o->threads > CONNS_HOST_THREADS) {
		fprintf(stderr, "gic conns: -t %d: at most %d host threads per direction\n",
			o->threads, CONNS_HOST_THREADS);
		return EINVAL;
	}
	if (!o->host)
		return gic_gpu_conns(o, st, info, sink);
	if (o->procs > 1)
		return conns_pair(o, st, sink);
	return host_run(o, st, NULL, sink);
}

const gic_experiment gic_exp_conns = {
	.name = "conns",
	.summary = "message rate against active connections: send/recv/both, writes per "
		   "visit, RC vs DC (§4.3.3, Figure 10)",
	.flags = &conns_table,
	.state_size = sizeof(conns_state),
	.run = conns_run,
	.check_procs = conns_check_procs,
	.run_pe = conns_run_pe,
};
