/*
 * The emulated device's verbs objects: protection domains, memory regions,
 * CQs, SRQs and RC QPs with their state machine, each a softnic object.
 * Arguments are checked as rdma-core documents (EINVAL, or NULL with errno
 * set); nothing here crashes on bad input that a pointer check can see.
 */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

static void *fail_null(int e)
{
	errno = e;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* PDs and MRs. */

static softnic_pd *pd_s(struct ibv_pd *pd) { return ((emu_pd *)pd)->s; }

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	emu_pd *p;

	if (!ctx)
		return fail_null(EINVAL);
	p = calloc(1, sizeof(*p));
	if (!p)
		return fail_null(ENOMEM);
	p->s = softnic_pd_alloc(emu.nic);
	if (!p->s) {
		free(p);
		return fail_null(ENOMEM);
	}
	p->pd.context = ctx;
	p->pd.handle = softnic_pd_num(p->s); /* the PD number (mlx5dv's pdn) */
	return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int rc;

	if (!pd)
		return EINVAL;
	rc = softnic_pd_free(pd_s(pd));
	if (!rc)
		free(pd);
	return rc;
}

typedef struct emu_mr {
	struct ibv_mr mr; /* first */
	softnic_mr *s;
} emu_mr;

/* IBV_ACCESS_* bits softnic checks, and those it accepts and ignores. */
#define EMU_ACCESS_CHECKED (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define EMU_ACCESS_IGNORED (IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_OPTIONAL_RANGE | \
			    IBV_ACCESS_MW_BIND) /* no memory window can exist */

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				unsigned int access)
{
	emu_mr *m;

	if (!pd || !addr || !len || (access & ~(EMU_ACCESS_CHECKED | EMU_ACCESS_IGNORED)))
		return fail_null(EINVAL);
	/* Remote write and atomic rights need local write (as the verbs spec). */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return fail_null(EINVAL);
	if (iova != (uint64_t)(uintptr_t)addr) {
		emu_missing("ibv_reg_mr_iova2", "an iova other than the address (softnic keys "
			    "resolve addresses)");
		return fail_null(EOPNOTSUPP);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return fail_null(ENOMEM);
	m->s = softnic_reg_mr(pd_s(pd), addr, len, (int)(access & EMU_ACCESS_CHECKED));
	if (!m->s) {
		int e = errno;

		free(m);
		return fail_null(e ? e : EINVAL);
	}
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	m->mr.lkey = softnic_mr_lkey(m->s);
	m->mr.rkey = softnic_mr_rkey(m->s);
	m->mr.handle = m->mr.lkey;
	return &m->mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, (uint64_t)(uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
			       int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, iova, (unsigned int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	int rc;

	if (!mr)
		return EINVAL;
	rc = softnic_dereg_mr(((emu_mr *)mr)->s);
	if (!rc)
		free(mr);
	return rc;
}

/* ------------------------------------------------------------------ */
/* CQs and completion channels. */

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	emu_cq *c;
	int log;

	if (!ctx || cqe < 1 || cqe > (1 << 16) - 1 || comp_vector < 0 ||
	    comp_vector >= ctx->num_comp_vectors)
		return fail_null(EINVAL);
	log = log2_ceil((uint32_t)cqe + 1);
	c = calloc(1, sizeof(*c));
	if (!c)
		return fail_null(ENOMEM);
	c->s = softnic_cq_create(emu.nic, log < 1 ? 1 : log);
	if (!c->s) {
		free(c);
		return fail_null(ENOMEM);
	}
	softnic_cq_view(c->s, &c->view);
	pthread_mutex_init(&c->lock, NULL);
	c->cq.context = ctx;
	c->cq.cq_context = cq_context;
	c->cq.cqe = (int)c->view.cqe_cnt - 1;
	pthread_mutex_init(&c->cq.mutex, NULL);
	pthread_cond_init(&c->cq.cond, NULL);
	if (channel) {
		int rc = emu_events_add(c);

		if (rc) {
			softnic_cq_destroy(c->s);
			free(c);
			return fail_null(rc);
		}
		c->cq.channel = channel;
		__atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
	}
	return &c->cq;
}

/* Waits (10 s at most) until every event raised on cq was acknowledged,
 * as ibv_destroy_cq must; EBUSY when the application never acknowledges. */
static int wait_acks(emu_cq *c)
{
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&c->cq.mutex);
	while (c->cq.comp_events_completed != c->events_raised && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&c->cq.cond, &c->cq.mutex, &until);
	pthread_mutex_unlock(&c->cq.mutex);
	if (rc == ETIMEDOUT) {
		fprintf(stderr, "gic-emu: ibv_destroy_cq: %u completion events never acknowledged "
			"(ibv_ack_cq_events)\n", c->events_raised - c->cq.comp_events_completed);
		return EBUSY;
	}
	return 0;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	emu_cq *c = (emu_cq *)cq;
	int rc;

	if (!cq)
		return EINVAL;
	if (cq->channel) {
		emu_events_remove(c); /* no event is raised from here on */
		rc = wait_acks(c);
		if (rc)
			return rc;
	}
	rc = softnic_cq_destroy(c->s);
	if (rc)
		return rc;
	if (cq->channel)
		__atomic_fetch_sub(&cq->channel->refcnt, 1, __ATOMIC_RELAXED);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* SRQs. */

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	emu_srq *q;
	softnic_srq_desc d;
	softnic_srq_attr sa;

	if (!pd || !attr || attr->attr.max_wr < 1 || attr->attr.max_wr > (1u << 15) - 1 ||
	    attr->attr.max_sge > EMU_MAX_SGE)
		return fail_null(EINVAL);
	q = calloc(1, sizeof(*q));
	if (!q)
		return fail_null(ENOMEM);
	/* One WQE always stays free as the list's end: max_wr + 1 slots. */
	sa.log_wqe_cnt = log2_ceil(attr->attr.max_wr + 1);
	sa.max_sge = attr->attr.max_sge ? (int)attr->attr.max_sge : 1;
	q->s = softnic_srq_create(pd_s(pd), &sa);
	if (q->s)
		softnic_srq_desc_get(q->s, &d);
	q->wrid = q->s ? calloc(d.wqe_cnt, sizeof(uint64_t)) : NULL;
	if (!q->wrid) {
		if (q->s)
			softnic_srq_destroy(q->s);
		free(q);
		return fail_null(ENOMEM);
	}
	gic_rq_init(&q->view, d.buf, d.dbrec, d.wqe_cnt, d.stride, (uint32_t)sa.max_sge, 1);
	q->max_sge = (uint32_t)sa.max_sge;
	pthread_mutex_init(&q->lock, NULL);
	attr->attr.max_wr = d.wqe_cnt - 1;
	attr->attr.max_sge = q->max_sge;
	q->srq.context = pd->context;
	q->srq.srq_context = attr->srq_context;
	q->srq.pd = pd;
	q->srq.handle = d.srqn;
	pthread_mutex_init(&q->srq.mutex, NULL);
	pthread_cond_init(&q->srq.cond, NULL);
	return &q->srq;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	emu_srq *q = (emu_srq *)srq;
	int rc;

	if (!srq)
		return EINVAL;
	rc = softnic_srq_destroy(q->s);
	if (rc)
		return rc;
	free(q->wrid);
	free(q);
	return 0;
}

int emu_get_srq_num(struct ibv_srq *srq, uint32_t *num)
{
	if (!srq || !num)
		return EINVAL;
	*num = softnic_srq_num(((emu_srq *)srq)->s);
	return 0;
}
