/*
 * bench/softnic_pair.c - the example programs' fixture (softnic_pair.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "softnic_pair.h"

/* Prints a setup failure with softnic's account; NULL after closing p,
 * errno rc. */
static softnic_pair *setup_failed(softnic_pair *p, const char *what, int rc)
{
	rc = rc ? rc : ENOMEM;
	fprintf(stderr, "%s: setup: %s: %s (%s)\n", p->c.who, what, strerror(rc),
		p->nic ? softnic_last_error(p->nic) : "no softnic");
	sp_close(p);
	errno = rc;
	return NULL;
}

/* The CQs, then every PE0 QP, then every PE1 QP, then the connections. */
static const char *qps_open(softnic_pair *p)
{
	int n = p->c.qps;

	for (int i = 0; i < n; i++) {
		p->q[i].cq = softnic_cq_create(p->nic, p->c.log_cq);
		p->q[i].peer_cq = softnic_cq_create(p->nic, SP_PEER_LOG);
		if (!p->q[i].cq || !p->q[i].peer_cq)
			return "cq_create";
	}
	for (int i = 0; i < 2 * n; i++) {
		sp_qp *q = &p->q[i % n];
		softnic_qp_attr qa = { .log_sq_bb = i < n ? p->c.log_sq_bb : SP_PEER_LOG,
				       .send_cq = i < n ? q->cq : q->peer_cq };
		softnic_qp *qp = softnic_qp_create(p->pd[i < n ? 0 : 1], &qa);

		if (!qp)
			return "qp_create";
		*(i < n ? &q->qp : &q->peer) = qp;
	}
	for (int i = 0; i < n; i++) {
		int rc = softnic_qp_connect(p->q[i].qp, p->q[i].peer);

		if (!rc)
			rc = softnic_qp_view(p->q[i].qp, &p->q[i].sq, &p->q[i].cqv);
		if (rc) {
			errno = rc;
			return "qp_connect";
		}
	}
	return NULL;
}

/* The regions and their registrations; NULL, or what failed. */
static const char *regions_open(softnic_pair *p)
{
	p->dst = calloc(1, p->c.dst_bytes);
	p->src = p->c.src_bytes ? calloc(1, p->c.src_bytes) : NULL;
	if (!p->dst || (p->c.src_bytes && !p->src)) {
		errno = ENOMEM;
		return "region allocation";
	}
	p->dst_mr = softnic_reg_mr(p->pd[1], p->dst, p->c.dst_bytes, SOFTNIC_ACCESS_REMOTE_WRITE);
	if (p->src)
		p->src_mr = softnic_reg_mr(p->pd[0], p->src, p->c.src_bytes,
					   SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!p->dst_mr || (p->src && !p->src_mr))
		return "reg_mr";
	p->dst_rkey = softnic_mr_rkey(p->dst_mr);
	p->src_lkey = p->src_mr ? softnic_mr_lkey(p->src_mr) : 0;
	return NULL;
}

softnic_pair *sp_open(const sp_cfg *c)
{
	softnic_attr na = { .engine_threads = c->engine_threads, .strict = c->strict };
	softnic_pair *p = calloc(1, sizeof(*p));
	const char *failed;

	if (!p) {
		fprintf(stderr, "%s: setup: out of memory\n", c->who);
		errno = ENOMEM;
		return NULL;
	}
	p->c = *c;
	errno = 0;
	if (!(p->nic = softnic_open(&na)))
		return setup_failed(p, "softnic_open", errno);
	p->pd[0] = softnic_pd_alloc(p->nic);
	p->pd[1] = softnic_pd_alloc(p->nic);
	p->q = calloc((size_t)c->qps, sizeof(*p->q));
	if (!p->pd[0] || !p->pd[1] || !p->q)
		return setup_failed(p, "allocation", errno);
	if ((failed = regions_open(p)) || (failed = qps_open(p)))
		return setup_failed(p, failed, errno);
	return p;
}

void sp_close(softnic_pair *p)
{
	if (!p)
		return;
	for (int i = 0; p->q && i < p->c.qps; i++) {
		if (p->q[i].qp)
			softnic_qp_destroy(p->q[i].qp);
		if (p->q[i].peer)
			softnic_qp_destroy(p->q[i].peer);
	}
	for (int i = 0; p->q && i < p->c.qps; i++) {
		if (p->q[i].cq)
			softnic_cq_destroy(p->q[i].cq);
		if (p->q[i].peer_cq)
			softnic_cq_destroy(p->q[i].peer_cq);
	}
	if (p->src_mr)
		softnic_dereg_mr(p->src_mr);
	if (p->dst_mr)
		softnic_dereg_mr(p->dst_mr);
	for (int i = 0; i < 2; i++)
		if (p->pd[i])
			softnic_pd_free(p->pd[i]);
	softnic_close(p->nic);
	free(p->q);
	free(p->src);
	free(p->dst);
	free(p);
}

int sp_fail(const softnic_pair *p, int q, const char *what, int rc)
{
	const gic_sq *sq = &p->q[q].sq;
	const char *qp_err = softnic_qp_error(p->q[q].qp);

	fprintf(stderr, "%s: %s: %s\n", p->c.who, what,
		rc == ETIMEDOUT ? "no completion within 5 s" :
		rc == EIO ? "completed with an error" : strerror(rc));
	if (rc == EIO)
		fprintf(stderr, "  error CQE: %s (syndrome 0x%02x, vendor syndrome 0x%02x, wqe %u)\n",
			gic_syndrome_name(sq->err_info.syndrome), sq->err_info.syndrome,
			sq->err_info.vendor_syndrome, sq->err_info.wqe_counter);
	fprintf(stderr, "  qp error: %s\n  softnic: %s\n", qp_err[0] ? qp_err : "(none)",
		softnic_last_error(p->nic));
	return rc;
}
