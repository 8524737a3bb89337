/*
 * The softnic objects behind DEVX CREATE_CQ and CREATE_QP (emu_private.h's
 * contract; the emulated libmlx5's devx_make.c calls these): CQs and RC QPs
 * whose queues lie in the caller's umems, rung at a UAR page's register
 * that several QPs share, connected at INIT2RTR like verbs QPs (one of this
 * process directly, another process's through softnic's wire).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "emu.h"
#include "emu_private.h"

enum { DEVX_QPS = 1024 }; /* DEVX QPs of this process */

typedef struct devx_qp {
	softnic_qp *s;
	uint32_t qpn;
} devx_qp;

/* Under emu.lock. */
static devx_qp *devx_qps[DEVX_QPS];

static int say(char *why, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int say(char *why, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return rc;
}

softnic_qp *emu_devx_qp_lookup(uint32_t qpn)
{
	for (int i = 0; i < DEVX_QPS; i++)
		if (devx_qps[i] && devx_qps[i]->qpn == qpn)
			return devx_qps[i]->s;
	return NULL;
}

static int ours(struct ibv_context *ctx)
{
	return ctx && gic_emu_is_device(ctx->device) && emu.nic;
}

int gic_emu_devx_cq_create(struct ibv_context *ctx, const gic_emu_devx_cq_spec *spec,
			   uint32_t *cqn, void **handle, char *why, size_t len)
{
	softnic_cq_attr a = { 0 };
	softnic_cq_desc d;
	softnic_cq *cq;

	if (!ours(ctx) || !spec || !cqn || !handle)
		return say(why, len, EINVAL, "not a context of the emulated device");
	a.log_cqe_cnt = (int)spec->log_size;
	a.mode = (spec->collapsed ? SOFTNIC_CQ_COLLAPSED : 0) |
		 (spec->overrun_ignore ? SOFTNIC_CQ_OVERRUN_IGNORE : 0);
	a.ring_mem = (softnic_qmem){ spec->ring, (size_t)64 << spec->log_size };
	a.dbrec_mem = (softnic_qmem){ spec->dbrec, SOFTNIC_DBREC_BYTES };
	cq = softnic_cq_create_ex(emu.nic, &a); /* no SOFTNIC_MEM_INIT: the caller's CQEs */
	if (!cq)
		return say(why, len, errno ? errno : EINVAL, "%s", softnic_last_error(emu.nic));
	softnic_cq_desc_get(cq, &d);
	*cqn = d.cqn;
	*handle = cq;
	return 0;
}

int gic_emu_devx_cq_destroy(void *handle)
{
	return handle ? softnic_cq_destroy(handle) : EINVAL;
}

/* The spec's CQ: a DEVX one by handle, else the verbs CQ numbered n. */
static softnic_cq *spec_cq(void *handle, uint32_t n)
{
	return handle ? handle : softnic_cq_find(emu.nic, n);
}

/* The softnic attributes of spec; 0 or EINVAL with the reason. */
static int qp_attr_of(const gic_emu_devx_qp_spec *spec, softnic_qp_attr *a, char *why,
		      size_t len)
{
	memset(a, 0, sizeof(*a));
	a->log_sq_bb = (int)spec->log_sq_bb;
	a->send_cq = spec_cq(spec->send_cq, spec->send_cqn);
	a->recv_cq = spec_cq(spec->recv_cq, spec->recv_cqn);
	if (!a->send_cq)
		return say(why, len, EINVAL, "no CQ numbered 0x%x for sends", spec->send_cqn);
	if (spec->use_srq) {
		a->srq = softnic_srq_find(emu.nic, spec->srqn);
		if (!a->srq)
			return say(why, len, EINVAL, "no SRQ numbered 0x%x", spec->srqn);
	} else if (spec->log_rq) {
		if (spec->log_rq_stride > 4)
			return say(why, len, EINVAL, "receive WQEs of %u bytes: softnic's hold at most "
				   "16 data segments (256 bytes)", 16u << spec->log_rq_stride);
		a->log_rq_wqe = (int)spec->log_rq;
		a->rq_max_sge = 1 << spec->log_rq_stride;
		a->rq_mem = (softnic_qmem){ spec->rq, softnic_qp_rq_bytes(a) };
	}
	if ((spec->use_srq || spec->log_rq) && !a->recv_cq)
		return say(why, len, EINVAL, "no CQ numbered 0x%x for receives", spec->recv_cqn);
	if (spec->dci) {
		/* A DCI never receives (a ConnectX ignores its RQ fields). */
		a->srq = NULL;
		a->log_rq_wqe = 0;
		a->rq_mem = (softnic_qmem){ NULL, 0 };
	}
	a->rnr_retry = 7;
	/* As a ConnectX: RNR without a receive, the doorbell's index counts,
	 * and a UAR page's register may serve several QPs. */
	a->flags = SOFTNIC_QP_NO_IMPLICIT_RECV | SOFTNIC_QP_SHARED_DB | SOFTNIC_QP_DB_INDEX |
		   (spec->dci ? SOFTNIC_QP_DCI : 0);
	a->sq_mem = (softnic_qmem){ spec->sq, softnic_qp_sq_bytes(a) };
	/* The record pair: [0] receive, [1] send. */
	a->dbrec_mem = (softnic_qmem){ spec->dbrec, SOFTNIC_DBREC_BYTES };
	a->db_mem = (softnic_qmem){ spec->db, 8 };
	return 0;
}

int gic_emu_devx_qp_create(struct ibv_context *ctx, const gic_emu_devx_qp_spec *spec,
			   uint32_t *qpn, void **handle, char *why, size_t len)
{
	softnic_qp_attr a;
	softnic_pd *pd;
	devx_qp *q;
	int rc, slot = -1;

	if (!ours(ctx) || !spec || !qpn || !handle)
		return say(why, len, EINVAL, "not a context of the emulated device");
	pd = softnic_pd_find(emu.nic, spec->pdn);
	if (!pd)
		return say(why, len, EINVAL, "no PD numbered 0x%x", spec->pdn);
	rc = qp_attr_of(spec, &a, why, len);
	if (rc)
		return rc;
	q = calloc(1, sizeof(*q));
	if (!q)
		return say(why, len, ENOMEM, "no memory");
	pthread_mutex_lock(&emu.lock);
	for (int i = 0; i < DEVX_QPS && slot < 0; i++)
		if (!devx_qps[i])
			slot = i;
	q->s = slot < 0 ? NULL : softnic_qp_create(pd, &a);
	if (q->s) {
		q->qpn = softnic_qp_num(q->s);
		devx_qps[slot] = q;
	}
	pthread_mutex_unlock(&emu.lock);
	if (!q->s) {
		rc = slot < 0 ? say(why, len, ENOSPC, "%d DEVX QPs exist already", DEVX_QPS)
			      : say(why, len, errno ? errno : EINVAL, "%s",
				    softnic_last_error(emu.nic));
		free(q);
		return rc;
	}
	*qpn = q->qpn;
	*handle = q;
	return 0;
}

int gic_emu_devx_qp_modify(void *handle, const gic_emu_devx_qp_change *c, char *why, size_t len)
{
	devx_qp *q = handle;
	int rc = 0;

	if (!q || !c)
		return say(why, len, EINVAL, "no QP");
	if (c->set_rights)
		rc = softnic_qp_set_rights(q->s, c->rights);
	if (!rc && (c->min_rnr_timer >= 0 || c->rnr_retry >= 0))
		rc = softnic_qp_set_rnr(q->s, c->rnr_retry, c->min_rnr_timer);
	if (!rc && c->connect) {
		pthread_mutex_lock(&emu.lock);
		rc = emu_connect_softnic(q->s, q->qpn, c->remote_qpn);
		pthread_mutex_unlock(&emu.lock);
	}
	if (!rc && c->to_error)
		rc = softnic_qp_to_error(q->s);
	return rc ? say(why, len, rc, "QP 0x%x: %s", q->qpn, softnic_last_error(emu.nic)) : 0;
}

int gic_emu_devx_qp_destroy(void *handle)
{
	devx_qp *q = handle;
	int rc;

	if (!q)
		return EINVAL;
	pthread_mutex_lock(&emu.lock); /* as verbs QPs: creation and destruction serialized */
	for (int i = 0; i < DEVX_QPS; i++)
		if (devx_qps[i] == q)
			devx_qps[i] = NULL;
	rc = softnic_qp_destroy(q->s);
	pthread_mutex_unlock(&emu.lock);
	free(q);
	return rc;
}
