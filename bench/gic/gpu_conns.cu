/*
 * bench/gic/gpu_conns.cu - `gic conns` on the GPU (exp_conns.h): GPU
 * threads visit C active RC connections round-robin on softnic (paper
 * §4.3.3, Figure 10), as functional checks of the experiment: softnic
 * has no QP context cache, so the NIC-side cost the paper measures is not
 * modelled.
 *
 * Fixture: tests/gpu/gpu_env.h with C QP pairs. Direction 0 (PE0 sends)
 * posts on PE0's QPs into PE1's region `dst`; direction 1 (PE0 receives)
 * posts on PE1's QPs (d_peer_sq, 16-BB rings) into PE0's region `back`.
 * The grid is fixed: -c CTAs x -t threads per direction (default 64 x 1);
 * poster p (one thread) owns connections p, p + P, ... (P = min(C, grid))
 * and visits them in turn, W 8-byte inline writes per visit, each visit
 * with the queue view in registers (gic_sq_local_begin/end). Doorbell and
 * signal periods are those the 16-BB rings of PE1 allow, in both
 * directions alike, so that the roles compare. send launches direction 0,
 * recv direction 1, both launches the two in one grid.
 *
 * Each configuration runs CONNS_ROUNDS rounds (p50: their median); every
 * target slot is checked after each round. Ordering: GPU-scope fence.
 */
#include "exp_conns.h"
#include "gpu_common.h"

#include <errno.h>

enum {
	CONNS_ROUNDS = 5,
	CONNS_LOG_BB = 8,          /* PE0's rings */
	CONNS_PEER_RING = 16,      /* PE1's rings (gpu_env) */
	CONNS_REGION = 1 << 20,
	CONNS_ENGINE_BLOCKS = 64,
	CONNS_ENGINE_WARPS = 4,
	CONNS_DEFAULT_CTAS = 64,
};

#define DL (gic_now_ns() + ENV_DEADLINE_NS)

typedef struct cspan {
	unsigned long long t0, t1; /* first post, last completion (ns) */
	int rc;
	int active;
} cspan;

typedef struct conns_dirs {
	gic_sq *sq[2];       /* direction 0: PE0's QPs; 1: PE1's */
	uint64_t base[2];    /* target regions: PE1's dst, PE0's back */
	uint32_t rkey[2];
	int posters;         /* per direction */
	int ctas;            /* per direction */
	int dir_first;       /* first direction of the grid */
} conns_dirs;

/* Blocks [0, ctas) run direction dir_first, [ctas, 2 ctas) the other.
 * O: gpu_env_post_order(). */
template <int O>
__global__ void conns_kernel(conns_dirs d, conns_plan p, cspan *out)
{
	int dir = d.dir_first + (int)blockIdx.x / d.ctas;
	int poster = ((int)blockIdx.x % d.ctas) * (int)blockDim.x + (int)threadIdx.x;
	cspan *o = &out[dir * d.ctas * (int)blockDim.x + poster];
	gic_sq *sqs = d.sq[dir];
	int rc = 0;

	if (poster >= d.posters)
		return;
	o->t0 = gic_now_ns();
	for (int pass = 0; pass < p.passes && !rc; pass++) {
		for (int c = poster; c < p.conns && !rc; c += d.posters) {
			gic_sq s;
			gic_cq cq;

			gic_sq_local_begin(&s, &cq, &sqs[c]);
			rc = conns_visit_rc(&s, &p, d.base[dir], d.rkey[dir], (uint32_t)c,
					    (uint32_t)pass, pass + 1 == p.passes, O, DL);
			gic_sq_local_end(&sqs[c], &s);
		}
	}
	for (int c = poster; c < p.conns && !rc; c += d.posters) {
		gic_sq s;
		gic_cq cq;

		gic_sq_local_begin(&s, &cq, &sqs[c]);
		rc = gic_sq_quiet(&s, O, DL);
		gic_sq_local_end(&sqs[c], &s);
	}
	o->t1 = gic_now_ns();
	o->rc = rc;
	o->active = 1;
}

/* ------------------------------------------------------------------ */
/* Host side. */

typedef struct gconns {
	const gic_opts *o;
	gpu_env e;
	conns_dirs d;
	int tpb;
	cspan *d_span, *h_span;
	uint64_t *h_buf;     /* C * slots words */
	size_t nspan;
} gconns;

static conns_plan gpu_plan(const gconns *g, int conns, int writes)
{
	conns_plan p;
	int owned = (conns + g->d.posters - 1) / g->d.posters;
	long per_pass = (long)owned * writes;

	memset(&p, 0, sizeof(p));
	p.conns = conns;
	p.writes = writes;
	p.slots = writes < CONNS_MAX_SLOTS ? writes : CONNS_MAX_SLOTS;
	p.passes = (int)((g->o->iters + per_pass - 1) / per_pass);
	p.db_every = writes < CONNS_PEER_RING / 2 ? writes : CONNS_PEER_RING / 2;
	p.sig_every = CONNS_PEER_RING / 4;
	return p;
}

/* Zeroes direction dir's target slots (before a round). */
static int clear_target(gconns *g, const conns_plan *p, int dir)
{
	size_t n = (size_t)p->conns * p->slots * 8;

	memset(g->h_buf, 0, n);
	return gpu_env_write(&g->e, (void *)(uintptr_t)g->d.base[dir], g->h_buf, n);
}

/* 1 when every slot of direction dir holds its last write. */
static int check_target(gconns *g, const conns_plan *p, int dir)
{
	size_t n = (size_t)p->conns * p->slots * 8;

	return !gpu_env_read(&g->e, g->h_buf, (const void *)(uintptr_t)g->d.base[dir], n) &&
	       conns_check(p, g->h_buf, 0, dir);
}

/* One round of role: *rate (M msg/s) and *valid; 0, or an errno after a
 * message. */
static int gpu_round(gconns *g, int role, const conns_plan *p, double *rate, int *valid)
{
	int first = role == CONNS_RECV ? 1 : 0, ndirs = role == CONNS_BOTH ? 2 : 1;
	int rate_dir = role == CONNS_RECV ? 1 : 0;
	unsigned long long t0 = ~0ull, t1 = 0;

	for (int k = 0; k < ndirs; k++)
		if (clear_target(g, p, first + k))
			return EIO;
	memset(g->h_span, 0, sizeof(cspan) * g->nspan);
	if (gpu_env_write(&g->e, g->d_span, g->h_span, sizeof(cspan) * g->nspan))
		return EIO;
	g->d.dir_first = first;
	if (gpu_env_post_order(&g->e) == GIC_ORDER_FENCE_SYS)
		conns_kernel<GIC_ORDER_FENCE_SYS><<<g->d.ctas * ndirs, g->tpb, 0, g->e.stream>>>(
			g->d, *p, g->d_span);
	else
		conns_kernel<GIC_ORDER_FENCE_GPU><<<g->d.ctas * ndirs, g->tpb, 0, g->e.stream>>>(
			g->d, *p, g->d_span);
	if (cudaGetLastError() != cudaSuccess || gpu_env_wait(&g->e, "gic conns", 120) ||
	    gpu_env_read(&g->e, g->h_span, g->d_span, sizeof(cspan) * g->nspan))
		return EIO;
	for (size_t i = 0; i < g->nspan; i++) {
		const cspan *s = &g->h_span[i];
		int dir = (int)(i / (g->nspan / 2));

		if (!s->active)
			continue;
		if (s->rc) {
			fprintf(stderr, "gic conns: direction %d poster %zu: %s (%s)\n", dir,
				i % (g->nspan / 2), s->rc == ETIMEDOUT ?
				"no progress within the time limit" : strerror(s->rc),
				gpu_env_qp_error(&g->e, 0));
			return s->rc;
		}
		if (dir == rate_dir) {
			t0 = s->t0 < t0 ? s->t0 : t0;
			t1 = s->t1 > t1 ? s->t1 : t1;
		}
	}
	*rate = (double)p->conns * p->passes * p->writes * 1e3 / (double)(t1 - t0);
	*valid = 1;
	for (int k = 0; k < ndirs; k++)
		*valid &= check_target(g, p, first + k);
	return 0;
}

static int gpu_config(gconns *g, gic_sink *sink, int role, int conns, int writes)
{
	conns_plan p = gpu_plan(g, conns, writes);
	double rates[CONNS_ROUNDS];
	int valid = 1, rc = 0, k;

	for (k = 0; k < CONNS_ROUNDS && !rc && valid; k++) {
		p.tag = (uint64_t)(k + 1);
		rc = gpu_round(g, role, &p, &rates[k], &valid);
	}
	if (rc)
		return rc;
	return gic_conns_emit(sink, role, CONNS_RC, &p, g->d.posters, rates,
			      valid ? k : (k > 1 ? k - 1 : 1), valid,
			      g->o->gpu_engine ? "softnic-gpu" : "softnic-cpu",
			      "GPU threads, one per poster");
}

/* Every configuration with C connections, on one fixture. */
static int gpu_conns_c(const gic_opts *o, const conns_state *st, int conns, gic_sink *sink)
{
	gpu_env_cfg cfg;
	gconns *g = (gconns *)calloc(1, sizeof(*g));
	int rc = 0, ctas = o->given & GIC_GIVEN_C ? o->ctas : CONNS_DEFAULT_CTAS;

	if (!g)
		return ENOMEM;
	g->o = o;
	g->tpb = o->threads;
	g->d.ctas = ctas;
	g->d.posters = ctas * o->threads < conns ? ctas * o->threads : conns;
	g->nspan = 2 * (size_t)ctas * (size_t)o->threads;
	g->h_span = (cspan *)calloc(g->nspan, sizeof(cspan));
	g->h_buf = (uint64_t *)calloc((size_t)conns * CONNS_MAX_SLOTS, 8);
	/* Every CUDA allocation before the engine starts (docs/DESIGN.md §4.5). */
	if (!g->h_span || !g->h_buf ||
	    cudaMalloc(&g->d_span, sizeof(cspan) * g->nspan) != cudaSuccess) {
		free(g->h_span);
		free(g->h_buf);
		free(g);
		return ENOMEM;
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.gpu_engine = o->gpu_engine;
	cfg.nqps = conns;
	cfg.log_sq_bb = CONNS_LOG_BB;
	cfg.region = CONNS_REGION;
	cfg.engine_blocks = CONNS_ENGINE_BLOCKS;
	cfg.engine_warps = CONNS_ENGINE_WARPS;
	gpu_env_cfg_nic(&cfg, o);
	gpu_env_open(&g->e, &cfg);
	g->d.sq[0] = g->e.d_sq;
	g->d.sq[1] = g->e.d_peer_sq;
	g->d.base[0] = (uint64_t)(uintptr_t)g->e.dst;
	g->d.rkey[0] = g->e.dst_rkey;
	g->d.base[1] = (uint64_t)(uintptr_t)g->e.back;
	g->d.rkey[1] = g->e.back_rkey;
	for (int r = 0; r < 3 && !rc; r++)
		for (int w = 0; w < st->nwrites && !rc && (st->roles >> r & 1); w++)
			rc = gpu_config(g, sink, r, conns, st->writes[w]);
	gpu_env_close(&g->e);
	cudaFree(g->d_span);
	free(g->h_span);
	free(g->h_buf);
	free(g);
	return rc;
}

int gic_gpu_conns(const gic_opts *o, const conns_state *st, const gic_run_info *info,
		  gic_sink *sink)
{
	int rc = 0;

	(void)info;
	if (st->nconns && o->threads > 1024) {
		fprintf(stderr, "gic conns: -t %d: at most 1024 threads per CTA\n", o->threads);
		return EINVAL;
	}
	for (int i = 0; i < st->nconns && !rc; i++) {
		char what[32];

		snprintf(what, sizeof(what), "%d conns", st->conns[i]);
		gic_progress("conns", i + 1, st->nconns, what);
		rc = gpu_conns_c(o, st, st->conns[i], sink);
	}
	return rc;
}
