/* testkit: see testkit.h. */
#include "testkit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tk_failures;

int tk_run_cases(const char *prog, const tk_case *cases, size_t n, int argc, char **argv)
{
	int ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < n; i++) {
		int before = __atomic_load_n(&tk_failures, __ATOMIC_RELAXED);
		uint64_t t0 = gic_now_ns();

		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		cases[i].fn();
		ran++;
		printf("%-32s %s (%.1f ms)\n", cases[i].name,
		       __atomic_load_n(&tk_failures, __ATOMIC_RELAXED) == before ? "ok" : "FAILED",
		       (gic_now_ns() - t0) / 1e6);
	}
	if (!ran) {
		fprintf(stderr, "%s: no case named '%s'\n", prog, argc > 1 ? argv[1] : "");
		return 2;
	}
	return tk_failures ? 1 : 0;
}

uint64_t tk_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

void tk_fill(uint8_t *buf, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(tk_rand(&s) | 1);
}

uint64_t tk_deadline(void)
{
	return gic_now_ns() + TK_DEADLINE_NS;
}

static softnic *cpu_open(const softnic_attr *attr) { return softnic_open(attr); }
static void *host_alloc(size_t len) { return malloc(len); }

static const tk_engine cpu_engine = { "cpu", cpu_open, host_alloc, free };
const tk_engine *tk_engine_used = &cpu_engine;

void *tk_mem_alloc(size_t len) { return tk_engine_used->alloc(len); }

void tk_mem_free(void *p)
{
	if (p)
		tk_engine_used->free(p);
}

/* PE index which (0 sends, 1 receives) of the pair. */
static int pe_open(tk_pair *p, int which, const tk_pair_cfg *cfg)
{
	tk_pe *pe = &p->pe[which];
	softnic_qp_attr qa = { 0 };
	softnic_cq_attr ca = { .log_cqe_cnt = cfg->log_cqe_cnt };

	pe->pd = softnic_pd_alloc(p->nic);
	if (which == 0)
		ca.mode = cfg->cq_mode;
	pe->cq = pe->pd ? softnic_cq_create_ex(p->nic, &ca) : NULL;
	pe->rcq = pe->cq && !cfg->no_recv_cq ? softnic_cq_create(p->nic, cfg->log_cqe_cnt) : NULL;
	if (!pe->cq || (!cfg->no_recv_cq && !pe->rcq))
		return errno;
	qa.log_sq_bb = cfg->log_sq_bb;
	qa.send_cq = pe->cq;
	qa.recv_cq = pe->rcq;
	qa.flags = cfg->qp_flags;
	qa.rnr_retry = cfg->rnr_retry;
	if (which == 1) {
		qa.log_rq_wqe = cfg->log_rq_wqe;
		qa.rq_max_sge = cfg->rq_max_sge;
		qa.min_rnr_timer = cfg->min_rnr_timer;
		if (cfg->make_srq) {
			p->srq = cfg->make_srq(pe->pd);
			if (!p->srq)
				return errno;
			qa.srq = p->srq;
		}
	}
	pe->qp = softnic_qp_create(pe->pd, &qa);
	if (!pe->qp)
		return errno;
	softnic_qp_view(pe->qp, &pe->sq, &pe->cqv);
	if (pe->rcq)
		softnic_cq_view(pe->rcq, &pe->rcqv);
	return 0;
}

static int regions_open(tk_pair *p, const tk_pair_cfg *cfg)
{
	p->region = cfg->region;
	p->dst_alloc = tk_mem_alloc(p->region + 2 * TK_GUARD);
	p->src = tk_mem_alloc(p->region);
	if (!p->dst_alloc || !p->src)
		return ENOMEM;
	memset(p->dst_alloc, 0xa5, p->region + 2 * TK_GUARD);
	memset(p->src, 0, p->region);
	p->dst = p->dst_alloc + TK_GUARD;
	p->dst_mr = softnic_reg_mr(p->pe[1].pd, p->dst, p->region, cfg->dst_access);
	p->src_mr = softnic_reg_mr(p->pe[0].pd, p->src, p->region, SOFTNIC_ACCESS_LOCAL_WRITE);
	return p->dst_mr && p->src_mr ? 0 : errno;
}

tk_pair *tk_pair_open(const tk_pair_cfg *in)
{
	tk_pair_cfg cfg = *in;
	softnic_attr na = { .engine_threads = in->engine_threads, .strict = in->strict,
			    .doorbell_watch_ns = in->doorbell_watch_ns };
	tk_pair *p = calloc(1, sizeof(*p));
	int rc = ENOMEM;

	if (!cfg.log_sq_bb)
		cfg.log_sq_bb = 10;
	if (!cfg.log_cqe_cnt)
		cfg.log_cqe_cnt = 10;
	if (!cfg.region)
		cfg.region = 1 << 20;
	if (!cfg.dst_access)
		cfg.dst_access = SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_ATOMIC |
				 SOFTNIC_ACCESS_LOCAL_WRITE;
	if (p)
		p->nic = tk_engine_used->open(&na);
	if (p && p->nic)
		rc = pe_open(p, 0, &cfg);
	if (!rc)
		rc = pe_open(p, 1, &cfg);
	if (!rc)
		rc = softnic_qp_connect(p->pe[0].qp, p->pe[1].qp);
	if (!rc)
		rc = regions_open(p, &cfg);
	if (rc) {
		fprintf(stderr, "tk_pair_open: %s (%s)\n", strerror(rc),
			p && p->nic ? softnic_last_error(p->nic) : "no softnic");
		tk_pair_close(p);
		return NULL;
	}
	return p;
}

void tk_pair_close(tk_pair *p)
{
	if (!p)
		return;
	softnic_close(p->nic); /* stops the engines, frees every object */
	tk_mem_free(p->dst_alloc);
	tk_mem_free(p->src);
	free(p);
}

int tk_guards_intact(const tk_pair *p)
{
	for (size_t i = 0; i < TK_GUARD; i++) {
		if (p->dst_alloc[i] != 0xa5 || p->dst[p->region + i] != 0xa5)
			return 0;
	}
	return 1;
}

int tk_poll_cqe(tk_pair *p, gic_cq *cq, gic_cqe_info *out)
{
	uint64_t deadline = tk_deadline();

	while (gic_cq_poll_one(cq, out, GIC_ORDER_RELEASE_SYS) == EAGAIN) {
		if (gic_now_ns() > deadline)
			return ETIMEDOUT;
		if (!p->nic || softnic_progress(p->nic) == 0)
			gic_cpu_relax();
	}
	return 0;
}

int tk_expect_cqe(tk_pair *p, gic_cq *cq, uint8_t cqe_opcode, uint8_t syndrome, uint8_t vs,
		  uint32_t qpn, const char *what)
{
	int before = __atomic_load_n(&tk_failures, __ATOMIC_RELAXED);
	gic_cqe_info c;
	int rc = tk_poll_cqe(p, cq, &c);

	CHECK(rc == 0, "%s: no CQE within the deadline", what);
	if (rc)
		return 1;
	CHECK(c.cqe_opcode == cqe_opcode, "%s: CQE opcode %u, want %u (syndrome 0x%x: %s)", what,
	      c.cqe_opcode, cqe_opcode, c.syndrome, gic_syndrome_name(c.syndrome));
	CHECK(c.syndrome == syndrome, "%s: syndrome 0x%x (%s), want 0x%x (%s)", what, c.syndrome,
	      gic_syndrome_name(c.syndrome), syndrome, gic_syndrome_name(syndrome));
	CHECK(c.vendor_syndrome == vs, "%s: vendor syndrome 0x%x (%s), want 0x%x", what,
	      c.vendor_syndrome, softnic_vsynd_text(c.vendor_syndrome), vs);
	CHECK(c.qpn == qpn, "%s: CQE for QP 0x%x, want 0x%x", what, c.qpn, qpn);
	return __atomic_load_n(&tk_failures, __ATOMIC_RELAXED) != before;
}

int tk_wait_retired(tk_pair *p, gic_sq *sq, uint64_t target)
{
	uint64_t deadline = tk_deadline();

	for (;;) {
		int rc = gic_sq_wait_retired(sq, target, 0, GIC_ORDER_RELEASE_SYS,
					     gic_now_ns() + 1000000);
		if (rc != ETIMEDOUT || gic_now_ns() > deadline)
			return rc;
		softnic_progress(p->nic);
	}
}

int tk_post_inline(tk_pair *p, uint64_t off, const void *data, uint32_t len, int signaled)
{
	gic_sq *sq = &p->pe[0].sq;
	uint32_t nbb = gic_bb_for_ds(gic_ds_inline_write(len));
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, nbb, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline());

	if (rc)
		return rc;
	gic_wqe_write_inline(sq, pos, (uint64_t)(uintptr_t)(p->dst + off),
			     softnic_mr_rkey(p->dst_mr), data, len,
			     signaled ? GIC_CTRL_CQ_UPDATE : 0);
	if (signaled)
		gic_sq_note_signaled(sq, pos + nbb, 0);
	gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
	return 0;
}

int tk_post_pointer(tk_pair *p, uint64_t soff, uint64_t doff, uint32_t len, int signaled)
{
	gic_sq *sq = &p->pe[0].sq;
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline());

	if (rc)
		return rc;
	gic_wqe_write(sq, pos, GIC_OPCODE_RDMA_WRITE, (uint64_t)(uintptr_t)(p->dst + doff),
		      softnic_mr_rkey(p->dst_mr), (uint64_t)(uintptr_t)(p->src + soff),
		      softnic_mr_lkey(p->src_mr), len, signaled ? GIC_CTRL_CQ_UPDATE : 0, 0);
	if (signaled)
		gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
	return 0;
}
