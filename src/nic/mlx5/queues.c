/*
 * mlx5 provider: CQs and QPs made by libmlx5, their gic/post.h views, RC
 * connection, and the host post path (ibv_post_send chains).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_internal.h"

static int is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

gic_mlx5_cq *gic_mlx5_cq_create(gic_mlx5 *m, int log_cqe_cnt)
{
	struct ibv_cq_init_attr_ex a = { 0 };
	struct mlx5dv_cq_init_attr dva = { 0 };
	struct mlx5dv_obj obj = { 0 };
	gic_mlx5_cq *c;
	int rc;

	if (!m || !m->ctx || log_cqe_cnt < 1 || log_cqe_cnt > 22) {
		if (m)
			gic_mlx5_say(m->base.err, sizeof(m->base.err),
				     "cq_create: 2^%d CQEs (1..22)", log_cqe_cnt);
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	a.cqe = (1u << log_cqe_cnt) - 1; /* libmlx5 rounds cqe + 1 up to a power of two */
	dva.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
	dva.cqe_size = 64;
	c->cq = mlx5dv_create_cq(m->ctx, &a, &dva);
	if (!c->cq) {
		rc = errno ? errno : EIO;
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "mlx5dv_create_cq(%s, %u CQEs of 64 bytes): %s (%s)", m->name,
			     a.cqe + 1, strerror(rc),
			     rc == ENOMEM ? "locked-memory limit (ulimit -l) or CQ too large"
					  : "CQ size beyond the device's limit");
		free(c);
		errno = rc;
		return NULL;
	}
	obj.cq.in = ibv_cq_ex_to_cq(c->cq);
	obj.cq.out = &c->dv;
	rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ);
	if (rc || c->dv.cqe_size != 64 || !is_pow2(c->dv.cqe_cnt)) {
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "mlx5dv_init_obj(CQ): %s, CQE size %u, %u CQEs (need 64-byte CQEs, "
			     "a power of two)", strerror(rc), c->dv.cqe_size, c->dv.cqe_cnt);
		ibv_destroy_cq(ibv_cq_ex_to_cq(c->cq));
		free(c);
		errno = rc ? rc : ENOTSUP;
		return NULL;
	}
	c->m = m;
	c->base = (gic_nic_cq){ .nic = &m->base, .cqe_cnt = c->dv.cqe_cnt };
	return c;
}

int gic_mlx5_cq_destroy(gic_mlx5_cq *c)
{
	int rc;

	if (!c)
		return 0;
	rc = ibv_destroy_cq(ibv_cq_ex_to_cq(c->cq));
	if (rc) {
		gic_mlx5_say(c->m->base.err, sizeof(c->m->base.err),
			     "ibv_destroy_cq: %s (a QP still uses it?)", strerror(rc));
		return rc;
	}
	free(c);
	return 0;
}

/* Says why mlx5dv_create_qp failed, with the likely cause. */
static void say_create_failed(gic_mlx5 *m, int dci, uint32_t wrs, int queues, int rc)
{
	gic_mlx5_say(m->base.err, sizeof(m->base.err),
		     "mlx5dv_create_qp(%s, %s, %u WRs, send ring in %s memory): %s (%s)", m->name,
		     dci ? "DCI" : "RC", wrs, queues == GIC_QUEUES_GPU ? "GPU" : "host",
		     strerror(rc),
		     queues == GIC_QUEUES_GPU && (rc == EFAULT || rc == EINVAL)
			     ? "the kernel could not pin the GPU ring: nvidia-peermem not loaded "
			       "(GIC_QUEUES_HOST works without it)"
		     : queues == GIC_QUEUES_GPU && rc == EOPNOTSUPP
			     ? "the device cannot place a send ring in caller memory (an emulated "
			       "device: softnic keeps queues in its own memory)"
		     : rc == ENOMEM ? "locked-memory limit (ulimit -l) or queue too large"
		     : dci && rc == EOPNOTSUPP ? "the device or driver has no DC support"
					       : "sizes beyond the device's limits");
}

/* After creation: the queues' description and the host post path's
 * completion ring. 0 or an errno (said in m's error). */
static int qp_describe(gic_mlx5 *m, gic_mlx5_qp *q, uint32_t max_send_wr)
{
	struct mlx5dv_obj obj = { 0 };
	int rc;

	obj.qp.in = q->qp;
	obj.qp.out = &q->dv;
	rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP);
	if (rc) {
		gic_mlx5_say(m->base.err, sizeof(m->base.err), "mlx5dv_init_obj(QP 0x%x): %s",
			     q->qp->qp_num, strerror(rc));
		return rc;
	}
	q->max_send_wr = max_send_wr ? max_send_wr : 1;
	q->sig_end = calloc(q->max_send_wr, sizeof(*q->sig_end));
	return q->sig_end ? 0 : ENOMEM;
}

gic_mlx5_qp *gic_mlx5_qp_make(gic_mlx5 *m, gic_mlx5_cq *cq, int log_sq_bb, int queues, int dci)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	struct mlx5dv_qp_init_attr dva = { 0 };
	gic_mlx5_qp *q;
	int rc;

	if (!m || !m->ctx || !cq || log_sq_bb < 1 || log_sq_bb > 15 ||
	    (queues != GIC_QUEUES_HOST && queues != GIC_QUEUES_GPU)) {
		if (m)
			gic_mlx5_say(m->base.err, sizeof(m->base.err),
				     "qp_create: needs a CQ, 2^1..2^15 BBs and GIC_QUEUES_HOST "
				     "or GIC_QUEUES_GPU");
		errno = EINVAL;
		return NULL;
	}
	if (queues == GIC_QUEUES_GPU && (rc = gic_mlx5_gpu_pd(m))) {
		errno = rc;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	a.qp_type = dci ? IBV_QPT_DRIVER : IBV_QPT_RC;
	a.send_cq = a.recv_cq = ibv_cq_ex_to_cq(cq->cq);
	/* Two BBs per request (an inline write of up to 64 bytes). */
	a.cap.max_send_wr = (1u << log_sq_bb) / 2 ? (1u << log_sq_bb) / 2 : 1;
	a.cap.max_send_sge = 1;
	a.cap.max_inline_data = 64;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = queues == GIC_QUEUES_GPU ? m->gpu_pd : m->pd;
	if (dci) {
		dva.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
		dva.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
	}
	errno = 0;
	q->qp = mlx5dv_create_qp(m->ctx, &a, &dva);
	if (!q->qp) {
		rc = errno ? errno : EIO;
		say_create_failed(m, dci, a.cap.max_send_wr, queues, rc);
		free(q);
		errno = rc;
		return NULL;
	}
	rc = qp_describe(m, q, a.cap.max_send_wr);
	if (rc) {
		ibv_destroy_qp(q->qp);
		free(q->sig_end);
		free(q);
		errno = rc;
		return NULL;
	}
	q->m = m;
	q->cq = cq;
	if (!cq->qp)
		cq->qp = q;
	q->queues = queues;
	q->is_dci = dci;
	q->psn = (q->qp->qp_num * 0x9e3779b1u) & 0xffffffu;
	q->base = (gic_nic_qp){ .nic = &m->base, .qpn = q->qp->qp_num,
				.max_inline = a.cap.max_inline_data,
				.type = dci ? GIC_QP_DCI : GIC_QP_RC };
	return q;
}

gic_mlx5_qp *gic_mlx5_rc_qp_create(gic_mlx5 *m, gic_mlx5_cq *cq, int log_sq_bb, int queues)
{
	return gic_mlx5_qp_make(m, cq, log_sq_bb, queues, 0);
}

int gic_mlx5_qp_destroy(gic_mlx5_qp *q)
{
	int rc;

	if (!q)
		return 0;
	rc = ibv_destroy_qp(q->qp);
	if (rc) {
		gic_mlx5_say(q->m->base.err, sizeof(q->m->base.err), "ibv_destroy_qp(0x%x): %s",
			     q->base.qpn, strerror(rc));
		return rc;
	}
	/* A forwarded shadow word stays in m->shadows until the nic closes. */
	if (q->cq->qp == q)
		q->cq->qp = NULL;
	free(q->sig_end);
	free(q);
	return 0;
}

int gic_mlx5_qp_local(gic_mlx5_qp *q, gic_conn_info *out)
{
	if (!q || !out)
		return EINVAL;
	gic_mlx5_port_local(q->m, out);
	out->qpn = q->base.qpn;
	out->psn = q->psn;
	return 0;
}

void gic_mlx5_port_local(gic_mlx5 *m, gic_conn_info *out)
{
	memset(out, 0, sizeof(*out));
	out->lid = m->port_attr.lid;
	out->port = m->port;
	out->mtu = (uint8_t)m->port_attr.active_mtu;
	if (out->mtu < 1 || out->mtu > 5)
		out->mtu = 3;
	if (m->gid_index >= 0) {
		memcpy(out->gid, m->gid, 16);
		out->flags |= GIC_CONN_GID_VALID;
	}
}

static const char *state_name(enum ibv_qp_state s)
{
	return s == IBV_QPS_INIT ? "INIT" : s == IBV_QPS_RTR ? "RTR" : "RTS";
}

int gic_mlx5_rc_connect(gic_mlx5_qp *q, const gic_conn_info *local, const gic_conn_info *remote)
{
	static const enum ibv_qp_state steps[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };

	if (!q || !local || !remote || q->is_dci)
		return EINVAL;
	for (int i = 0; i < 3; i++) {
		struct ibv_qp_attr attr;
		int mask = 0, rc = gic_rc_transition(steps[i], local, remote, &attr, &mask);

		if (rc)
			return rc;
		if (attr.ah_attr.is_global)
			attr.ah_attr.grh.sgid_index = (uint8_t)(q->m->gid_index > 0 ? q->m->gid_index : 0);
		rc = ibv_modify_qp(q->qp, &attr, mask);
		if (rc) {
			gic_mlx5_say(q->m->base.err, sizeof(q->m->base.err),
				     "ibv_modify_qp(QP 0x%x -> %s, peer QP 0x%x lid 0x%x): %s (%s)",
				     q->base.qpn, state_name(steps[i]), remote->qpn, remote->lid,
				     strerror(rc),
				     steps[i] == IBV_QPS_RTR
					     ? "peer record wrong (QP number, LID, gid, MTU), or "
					       "RoCE without a valid gid index (GIC_MLX5_GID_INDEX)"
					     : "QP not in the previous state, or an attribute "
					       "beyond the device's limits");
			return rc;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Views. */

int gic_mlx5_views_from_dv(const struct mlx5dv_qp *dq, const struct mlx5dv_cq *dc, uint32_t qpn,
			   uint32_t max_inline, gic_sq *sq, gic_cq *cq)
{
	if (!dq || !dc || !sq || !cq)
		return EINVAL;
	if (!dq->sq.buf || dq->sq.stride != GIC_SEND_WQE_BB || !is_pow2(dq->sq.wqe_cnt) ||
	    !dq->dbrec || !dq->bf.reg)
		return EINVAL;
	if (!dc->buf || !dc->dbrec || dc->cqe_size != GIC_CQE_SIZE || !is_pow2(dc->cqe_cnt))
		return EINVAL;
	memset(sq, 0, sizeof(*sq));
	memset(cq, 0, sizeof(*cq));
	cq->cqes = (gic_cqe64 *)dc->buf;
	cq->dbrec = (uint32_t *)dc->dbrec; /* consumer-index record, MLX5_CQ_SET_CI */
	cq->cqe_cnt = dc->cqe_cnt;
	cq->cqn = dc->cqn;
	sq->wqes = (uint8_t *)dq->sq.buf;
	sq->dbrec = (uint32_t *)&dq->dbrec[MLX5_SND_DBR];
	sq->db = (uint64_t *)dq->bf.reg;
	sq->bb_cnt = dq->sq.wqe_cnt;
	sq->qpn = qpn;
	sq->max_inline = max_inline;
	sq->cq = cq;
	return 0;
}

static int map(gic_mlx5 *m, void *p, size_t len, void **dev)
{
	uint64_t d = 0;
	int rc = gic_mlx5_map_host(m, p, len,
				   GIC_CU_MEMHOSTREGISTER_DEVICEMAP | GIC_CU_MEMHOSTREGISTER_PORTABLE,
				   &d);

	*dev = (void *)(uintptr_t)d;
	return rc;
}

/* The doorbell a device view stores to: the UAR mapped into the GPU, or
 * a shadow word the forwarder rings for. */
static int device_doorbell(gic_mlx5_qp *q, uint64_t **db)
{
	gic_mlx5 *m = q->m;
	uint64_t d = 0;
	int rc;

	if (m->db_mode != GIC_MLX5_DB_FORWARD) {
		rc = gic_mlx5_map_host(m, q->dv.bf.reg, 8,
				       GIC_CU_MEMHOSTREGISTER_IOMEMORY |
					       GIC_CU_MEMHOSTREGISTER_DEVICEMAP |
					       GIC_CU_MEMHOSTREGISTER_PORTABLE,
				       &d);
		if (!rc) {
			m->db_mode = GIC_MLX5_DB_GPU;
			*db = (uint64_t *)(uintptr_t)d;
			return 0;
		}
		if (rc == ENOENT)
			return rc; /* no CUDA driver: no device view at all */
		snprintf(m->db_reason, sizeof(m->db_reason), "%.255s", m->base.err);
		m->db_mode = GIC_MLX5_DB_FORWARD;
	}
	if (!m->shadows) {
		if (posix_memalign((void **)&m->shadows, 4096, GIC_MLX5_MAX_SHADOWS * 64))
			return ENOMEM;
		memset(m->shadows, 0, GIC_MLX5_MAX_SHADOWS * 64);
	}
	if (!q->shadow_db) {
		if (m->nshadows >= GIC_MLX5_MAX_SHADOWS) {
			gic_mlx5_say(m->base.err, sizeof(m->base.err),
				     "doorbell forwarder: %d doorbells at most",
				     GIC_MLX5_MAX_SHADOWS);
			return ENOSPC;
		}
		/* Slots are not reused: the forwarder may still read one. */
		q->shadow_db = m->shadows + (size_t)m->nshadows++ * 8;
	}
	rc = map(m, q->shadow_db, 64, (void **)db);
	if (rc)
		return rc;
	if (!m->fwd && !(m->fwd = gic_dbfwd_start(GIC_MLX5_MAX_SHADOWS, -1))) {
		rc = errno;
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "doorbell forwarder thread: %s", strerror(rc));
		return rc;
	}
	rc = gic_dbfwd_add(m->fwd, q->shadow_db, q->dv.bf.reg);
	if (rc)
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "doorbell forwarder: %s", strerror(rc));
	return rc;
}

int gic_mlx5_qp_view(gic_mlx5_qp *q, int where, gic_sq *sq, gic_cq *cq)
{
	gic_mlx5 *m;
	void *p;
	int rc;

	if (!q || !sq || !cq)
		return EINVAL;
	m = q->m;
	rc = gic_mlx5_views_from_dv(&q->dv, &q->cq->dv, q->base.qpn, q->base.max_inline, sq, cq);
	if (rc) {
		gic_mlx5_say(m->base.err, sizeof(m->base.err),
			     "QP 0x%x: libmlx5's queues are not in the shape post.h needs "
			     "(stride %u, %u BBs, CQE size %u)", q->base.qpn, q->dv.sq.stride,
			     q->dv.sq.wqe_cnt, q->cq->dv.cqe_size);
		return rc;
	}
	if (where == GIC_VIEW_HOST) {
		if (q->queues == GIC_QUEUES_GPU) {
			gic_mlx5_say(m->base.err, sizeof(m->base.err),
				     "QP 0x%x: its send ring is in GPU memory: no host view",
				     q->base.qpn);
			return EINVAL;
		}
		return 0;
	}
	if (where != GIC_VIEW_DEVICE)
		return EINVAL;
	if (q->queues == GIC_QUEUES_HOST && (rc = map(m, sq->wqes, (size_t)sq->bb_cnt * 64, &p)))
		return rc;
	if (q->queues == GIC_QUEUES_HOST)
		sq->wqes = p;
	if ((rc = map(m, sq->dbrec, 4, &p)))
		return rc;
	sq->dbrec = p;
	if ((rc = map(m, cq->cqes, (size_t)cq->cqe_cnt * 64, &p)))
		return rc;
	cq->cqes = p;
	if ((rc = map(m, cq->dbrec, 4, &p)))
		return rc;
	cq->dbrec = p;
	return device_doorbell(q, &sq->db);
}

/* ------------------------------------------------------------------ */
/* Host post path. */

int gic_mlx5_build_chain(const gic_wr *wr, int n, uint32_t max_inline, struct ibv_send_wr *out,
			 struct ibv_sge *sge)
{
	if (!wr || !out || !sge || n < 1 || n > GIC_POST_MAX_CHAIN)
		return EINVAL;
	for (int i = 0; i < n; i++) {
		const gic_wr *w = &wr[i];
		struct ibv_send_wr *o = &out[i];

		memset(o, 0, sizeof(*o));
		if (w->op > GIC_WR_ATOMIC_FA)
			return EINVAL;
		if (w->inline_data && (w->op != GIC_WR_WRITE || w->len > max_inline))
			return EINVAL;
		sge[i].addr = w->laddr;
		sge[i].length = w->op == GIC_WR_ATOMIC_FA ? 8 : w->len;
		sge[i].lkey = w->lkey;
		o->wr_id = w->wr_id;
		o->sg_list = &sge[i];
		o->num_sge = 1;
		o->send_flags = (w->signaled ? IBV_SEND_SIGNALED : 0) |
				(w->inline_data ? IBV_SEND_INLINE : 0);
		if (w->op == GIC_WR_ATOMIC_FA) {
			o->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			o->wr.atomic.remote_addr = w->raddr;
			o->wr.atomic.rkey = w->rkey;
			o->wr.atomic.compare_add = w->add;
		} else {
			o->opcode = w->op == GIC_WR_WRITE_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM
							      : IBV_WR_RDMA_WRITE;
			o->imm_data = w->imm_be;
			o->wr.rdma.remote_addr = w->raddr;
			o->wr.rdma.rkey = w->rkey;
		}
		o->next = i + 1 < n ? &out[i + 1] : NULL;
	}
	return 0;
}

/* Records wr[0..n) as posted: where each signaled one ends. */
static void chain_posted(gic_mlx5_qp *q, const gic_wr *wr, int n)
{
	for (int i = 0; i < n; i++)
		if (wr[i].signaled)
			q->sig_end[q->sig_tail++ % q->max_send_wr] = q->posted + (uint64_t)i + 1;
	q->posted += (uint64_t)n;
}

/* One completion of q's send CQ: every request up to the oldest signaled
 * one outstanding is done (completions come in posting order). */
static void retire_one(gic_mlx5_qp *q)
{
	if (q->sig_head != q->sig_tail)
		q->done = q->sig_end[q->sig_head++ % q->max_send_wr];
}

int gic_mlx5_post(gic_mlx5_qp *q, const gic_wr *wr, int n)
{
	struct ibv_send_wr wrs[GIC_POST_MAX_CHAIN], *bad = NULL;
	struct ibv_sge sge[GIC_POST_MAX_CHAIN];
	int rc;

	if (!q)
		return EINVAL;
	if (q->queues == GIC_QUEUES_GPU || q->is_dci) {
		gic_mlx5_say(q->m->base.err, sizeof(q->m->base.err),
			     "post: QP 0x%x is posted from its views (%s), not ibv_post_send",
			     q->base.qpn, q->is_dci ? "a DCI" : "send ring in GPU memory");
		return EINVAL;
	}
	rc = gic_mlx5_build_chain(wr, n, q->base.max_inline, wrs, sge);
	if (rc) {
		gic_mlx5_say(q->m->base.err, sizeof(q->m->base.err),
			     "post: %d work requests: bad count (1..%d), opcode or inline length "
			     "(max %u)", n, GIC_POST_MAX_CHAIN, q->base.max_inline);
		return rc;
	}
	if (q->posted - q->done + (uint64_t)n > q->max_send_wr) {
		gic_mlx5_say(q->m->base.err, sizeof(q->m->base.err),
			     "post: send queue full (%llu of %u requests not known complete, %d "
			     "more): poll the CQ, then post again", (unsigned long long)(q->posted -
			     q->done), q->max_send_wr, n);
		return ENOBUFS;
	}
	rc = ibv_post_send(q->qp, wrs, &bad);
	/* The requests before a failed one were posted (rdma-core's rule). */
	chain_posted(q, wr, rc ? (bad ? (int)(bad - wrs) : 0) : n);
	if (rc) {
		gic_mlx5_say(q->m->base.err, sizeof(q->m->base.err),
			     "ibv_post_send(QP 0x%x, %d WRs, failed at %d): %s (%s)", q->base.qpn, n,
			     bad ? (int)(bad - wrs) : -1, strerror(rc),
			     rc == ENOMEM ? "send queue full: poll the CQ, then post again"
					  : "QP not in RTS, or a bad request");
		return rc == ENOMEM ? ENOBUFS : rc;
	}
	return 0;
}

uint8_t gic_mlx5_wc_syndrome(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return 0;
	case IBV_WC_LOC_LEN_ERR: return GIC_SYND_LOCAL_LENGTH_ERR;
	case IBV_WC_LOC_QP_OP_ERR: return GIC_SYND_LOCAL_QP_OP_ERR;
	case IBV_WC_LOC_PROT_ERR: return GIC_SYND_LOCAL_PROT_ERR;
	case IBV_WC_WR_FLUSH_ERR: return GIC_SYND_WR_FLUSH_ERR;
	case IBV_WC_MW_BIND_ERR: return GIC_SYND_MW_BIND_ERR;
	case IBV_WC_BAD_RESP_ERR: return GIC_SYND_BAD_RESP_ERR;
	case IBV_WC_LOC_ACCESS_ERR: return GIC_SYND_LOCAL_ACCESS_ERR;
	case IBV_WC_REM_INV_REQ_ERR: return GIC_SYND_REMOTE_INVAL_REQ_ERR;
	case IBV_WC_REM_ACCESS_ERR: return GIC_SYND_REMOTE_ACCESS_ERR;
	case IBV_WC_REM_OP_ERR: return GIC_SYND_REMOTE_OP_ERR;
	case IBV_WC_RETRY_EXC_ERR: return GIC_SYND_TRANSPORT_RETRY_EXC_ERR;
	case IBV_WC_RNR_RETRY_EXC_ERR: return GIC_SYND_RNR_RETRY_EXC_ERR;
	case IBV_WC_REM_ABORT_ERR: return GIC_SYND_REMOTE_ABORTED_ERR;
	default: return 0xff;
	}
}

int gic_mlx5_poll(gic_mlx5_cq *c, gic_wc *wc, int max, int *got_out)
{
	struct ibv_wc w[16];
	int got = 0;

	if (!got_out)
		return EINVAL;
	*got_out = 0;
	if (!c || !wc || max < 0)
		return EINVAL;
	while (got < max) {
		int want = max - got < 16 ? max - got : 16;
		int k = ibv_poll_cq(ibv_cq_ex_to_cq(c->cq), want, w);

		if (k < 0) {
			gic_mlx5_say(c->m->base.err, sizeof(c->m->base.err),
				     "ibv_poll_cq: %d (CQ overrun?)", k);
			*got_out = got;
			return EIO;
		}
		for (int i = 0; i < k; i++, got++) {
			if (c->qp && w[i].qp_num == c->qp->base.qpn)
				retire_one(c->qp);
			wc[got] = (gic_wc){ .wr_id = w[i].wr_id, .qpn = w[i].qp_num,
					    .byte_len = w[i].byte_len,
					    .status = gic_mlx5_wc_syndrome(w[i].status),
					    .vendor_syndrome = (uint8_t)w[i].vendor_err };
			if (w[i].status != IBV_WC_SUCCESS)
				gic_mlx5_say(c->m->base.err, sizeof(c->m->base.err),
					     "QP 0x%x: %s (vendor syndrome 0x%x)", w[i].qp_num,
					     ibv_wc_status_str(w[i].status), w[i].vendor_err);
		}
		if (k < want)
			break;
	}
	*got_out = got;
	return 0;
}
