/*
 * The emulated device's data path: ibv_post_send builds mlx5 WQEs in the
 * softnic QP's send queue and rings its doorbell once per call;
 * ibv_post_recv and ibv_post_srq_recv write receive WQEs; ibv_poll_cq
 * parses the CQEs softnic writes into ibv_wc, with the statuses rdma-core's
 * mlx5 provider maps the syndromes to.
 */
#include <endian.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "emu.h"

/* ------------------------------------------------------------------ */
/* Send. */

/* The mlx5 opcode of a verbs opcode, or -1 for one not implemented. */
static int mlx5_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return GIC_OPCODE_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM: return GIC_OPCODE_RDMA_WRITE_IMM;
	case IBV_WR_SEND: return GIC_OPCODE_SEND;
	case IBV_WR_SEND_WITH_IMM: return GIC_OPCODE_SEND_IMM;
	case IBV_WR_RDMA_READ: return GIC_OPCODE_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return GIC_OPCODE_ATOMIC_CS;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return GIC_OPCODE_ATOMIC_FA;
	default: return -1;
	}
}

/* A WQE being built: its 16-byte segments, at most 63. */
typedef struct wqe_buf {
	uint8_t seg[GIC_WQE_MAX_DS][GIC_SEG_SIZE];
	uint32_t ds;
} wqe_buf;

static void put_seg(wqe_buf *b, const void *s)
{
	memcpy(b->seg[b->ds++], s, GIC_SEG_SIZE);
}

/* The inline payload of wr's SGEs after the 4-byte header. EINVAL when it
 * exceeds the QP's inline size. */
static int put_inline(wqe_buf *b, const emu_qp *q, const struct ibv_send_wr *wr)
{
	uint8_t *p = b->seg[b->ds];
	uint32_t len = 0, hdr;

	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > q->max_inline || b->ds * GIC_SEG_SIZE + 4 + len > sizeof(b->seg))
		return EINVAL;
	memset(p, 0, (4 + len + 15) & ~15u);
	hdr = gic_inline_hdr_be(len);
	memcpy(p, &hdr, 4);
	len = 4;
	for (int i = 0; i < wr->num_sge; i++) {
		memcpy(p + len, (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
		len += wr->sg_list[i].length;
	}
	b->ds += (len + 15) / 16;
	return 0;
}

/* Everything after the ctrl segment: the remote address or atomic
 * segments, then the data (pointer segments or inline). */
static int build_body(wqe_buf *b, const emu_qp *q, const struct ibv_send_wr *wr, int op)
{
	if (op == GIC_OPCODE_ATOMIC_CS || op == GIC_OPCODE_ATOMIC_FA) {
		gic_raddr_seg r = gic_make_raddr_seg(wr->wr.atomic.remote_addr, wr->wr.atomic.rkey);
		gic_atomic_seg a = op == GIC_OPCODE_ATOMIC_CS
					   ? gic_make_atomic_cs_seg(wr->wr.atomic.compare_add,
								    wr->wr.atomic.swap)
					   : gic_make_atomic_fa_seg(wr->wr.atomic.compare_add);

		if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return EINVAL;
		put_seg(b, &r);
		put_seg(b, &a);
	} else if (op != GIC_OPCODE_SEND && op != GIC_OPCODE_SEND_IMM) {
		gic_raddr_seg r = gic_make_raddr_seg(wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);

		put_seg(b, &r);
	}
	if ((wr->send_flags & IBV_SEND_INLINE) && op != GIC_OPCODE_RDMA_READ &&
	    op != GIC_OPCODE_ATOMIC_CS && op != GIC_OPCODE_ATOMIC_FA)
		return put_inline(b, q, wr);
	for (int i = 0; i < wr->num_sge; i++) {
		gic_data_seg d;

		if (!wr->sg_list[i].length) /* skipped, as rdma-core does */
			continue;
		d = gic_make_data_seg(wr->sg_list[i].length, wr->sg_list[i].lkey,
				      wr->sg_list[i].addr);
		put_seg(b, &d);
	}
	return 0;
}

int emu_post_one(emu_qp *q, const struct ibv_send_wr *wr)
{
	gic_sq *sq = &q->sq;
	wqe_buf b;
	int op = mlx5_opcode(wr->opcode), rc;
	uint32_t c[4], nbb;
	uint8_t fm = (q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) ? GIC_CTRL_CQ_UPDATE : 0;
	uint64_t pos = sq->resv;

	if (op < 0 || wr->num_sge < 0 || (uint32_t)wr->num_sge > q->max_send_sge)
		return EINVAL;
	b.ds = 1;
	if (q->dci) {
		/* The address vector of mlx5dv_wr_set_dc_addr (verbs_qpex.c): a
		 * DCI's WR posted any other way has none. */
		uint32_t n = be32toh(q->wr_av.dqp_dct) & GIC_EXTENDED_UD_AV ? GIC_AV_FULL_DS
									   : GIC_AV_COMPACT_DS;

		if (wr != &q->wr || !q->wr_av_set)
			return EINVAL;
		memcpy(b.seg[1], &q->wr_av, n * GIC_SEG_SIZE);
		b.ds += n;
	}
	rc = build_body(&b, q, wr, op);
	if (rc)
		return rc;
	nbb = gic_bb_for_ds(b.ds);
	if (pos + nbb - __atomic_load_n(&sq->retired, __ATOMIC_ACQUIRE) > sq->bb_cnt)
		return ENOMEM;
	gic_ctrl_seg_words(c, (uint16_t)pos, (uint8_t)op, 0, sq->qpn, fm, (uint8_t)b.ds,
			   op == GIC_OPCODE_SEND_IMM || op == GIC_OPCODE_RDMA_WRITE_IMM ? wr->imm_data
										     : 0);
	memcpy(b.seg[0], c, GIC_SEG_SIZE);
	for (uint32_t i = 0; i < b.ds; i++)
		memcpy(gic_sq_seg(sq, pos, i), b.seg[i], GIC_SEG_SIZE);
	q->sq_wrid[pos & (sq->bb_cnt - 1)] = wr->wr_id;
	sq->resv = pos + nbb;
	return 0;
}

void emu_sq_ring(emu_qp *q)
{
	if (q->sq.resv == q->sq.ready)
		return;
	/* Record, then doorbell; the release orders the WQEs' stores. */
	gic_sq_ring(&q->sq, q->sq.resv, GIC_ORDER_RELEASE_SYS);
	q->sq.ready = q->sq.resv;
}

int emu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	emu_qp *q = (emu_qp *)qp;
	int rc = 0;

	if (!qp || !wr || !bad)
		return EINVAL;
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) {
		*bad = wr;
		return EINVAL;
	}
	pthread_mutex_lock(&q->sq_lock);
	for (; wr && !rc; wr = rc ? wr : wr->next) {
		rc = emu_post_one(q, wr);
		if (rc)
			*bad = wr;
	}
	emu_sq_ring(q);
	pthread_mutex_unlock(&q->sq_lock);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Receive. */

static int post_recv_list(gic_rq *rq, uint64_t *wrid, uint32_t max_sge, pthread_mutex_t *lock,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	int rc = 0;

	pthread_mutex_lock(lock);
	for (; wr && !rc; wr = rc ? wr : wr->next) {
		gic_sge sge[EMU_MAX_SGE];
		uint32_t n = 0, slot;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			rc = EINVAL;
			break;
		}
		for (int i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length) /* skipped, as rdma-core does */
				continue;
			sge[n].addr = wr->sg_list[i].addr;
			sge[n].lkey = wr->sg_list[i].lkey;
			sge[n].len = wr->sg_list[i].length;
			n++;
		}
		slot = gic_rq_next_slot(rq);
		rc = gic_rq_post(rq, sge, n);
		if (!rc)
			wrid[slot] = wr->wr_id;
	}
	if (rc)
		*bad = wr;
	pthread_mutex_unlock(lock);
	return rc;
}

int emu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	emu_qp *q = (emu_qp *)qp;

	if (!qp || !wr || !bad)
		return EINVAL;
	if (qp->srq || !q->rq.wqe_cnt || qp->state == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	return post_recv_list(&q->rq, q->rq_wrid, q->max_recv_sge, &q->rq_lock, wr, bad);
}

int emu_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	emu_srq *s = (emu_srq *)srq;

	if (!srq || !wr || !bad)
		return EINVAL;
	return post_recv_list(&s->view, s->wrid, s->max_sge, &s->lock, wr, bad);
}

/* ------------------------------------------------------------------ */
/* Completions. */

/* As rdma-core's mlx5 provider maps CQE syndromes. */
static enum ibv_wc_status wc_status(uint8_t syndrome)
{
	switch (syndrome) {
	case GIC_SYND_LOCAL_LENGTH_ERR: return IBV_WC_LOC_LEN_ERR;
	case GIC_SYND_LOCAL_QP_OP_ERR: return IBV_WC_LOC_QP_OP_ERR;
	case GIC_SYND_LOCAL_PROT_ERR: return IBV_WC_LOC_PROT_ERR;
	case GIC_SYND_WR_FLUSH_ERR: return IBV_WC_WR_FLUSH_ERR;
	case GIC_SYND_MW_BIND_ERR: return IBV_WC_MW_BIND_ERR;
	case GIC_SYND_BAD_RESP_ERR: return IBV_WC_BAD_RESP_ERR;
	case GIC_SYND_LOCAL_ACCESS_ERR: return IBV_WC_LOC_ACCESS_ERR;
	case GIC_SYND_REMOTE_INVAL_REQ_ERR: return IBV_WC_REM_INV_REQ_ERR;
	case GIC_SYND_REMOTE_ACCESS_ERR: return IBV_WC_REM_ACCESS_ERR;
	case GIC_SYND_REMOTE_OP_ERR: return IBV_WC_REM_OP_ERR;
	case GIC_SYND_TRANSPORT_RETRY_EXC_ERR: return IBV_WC_RETRY_EXC_ERR;
	case GIC_SYND_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case GIC_SYND_REMOTE_ABORTED_ERR: return IBV_WC_REM_ABORT_ERR;
	default: return IBV_WC_GENERAL_ERR;
	}
}

static enum ibv_wc_opcode wc_send_opcode(uint8_t wqe_opcode)
{
	switch (wqe_opcode) {
	case GIC_OPCODE_RDMA_WRITE:
	case GIC_OPCODE_RDMA_WRITE_IMM: return IBV_WC_RDMA_WRITE;
	case GIC_OPCODE_RDMA_READ: return IBV_WC_RDMA_READ;
	case GIC_OPCODE_ATOMIC_CS: return IBV_WC_COMP_SWAP;
	case GIC_OPCODE_ATOMIC_FA: return IBV_WC_FETCH_ADD;
	case GIC_OPCODE_ATOMIC_MASKED_CS: return IBV_WC_COMP_SWAP; /* mlx5dv masked: as rdma-core */
	case GIC_OPCODE_ATOMIC_MASKED_FA: return IBV_WC_FETCH_ADD;
	default: return IBV_WC_SEND;
	}
}

/* A requester CQE: the WQE's wr_id; everything up to it retires. */
static void wc_requester(emu_qp *q, const gic_cqe_info *c, struct ibv_wc *wc)
{
	uint64_t retired = __atomic_load_n(&q->sq.retired, __ATOMIC_RELAXED);

	wc->wr_id = q->sq_wrid[gic_sq_wqe_start(retired, c->wqe_counter) & (q->sq.bb_cnt - 1)];
	wc->opcode = wc_send_opcode(c->wqe_opcode);
	wc->byte_len = c->byte_cnt;
	/* Releases the retired slots to the poster. */
	__atomic_store_n(&q->sq.retired, gic_sq_retired_after(&q->sq, retired, c->wqe_counter),
			 __ATOMIC_RELEASE);
}

/* A responder CQE: the receive WQE's wr_id (its RQ slot, or the SRQ WQE
 * the counter names, which goes back to the SRQ's free list). */
static void wc_responder(emu_qp *q, const gic_cqe_info *c, struct ibv_wc *wc)
{
	if (q->qp.srq) {
		emu_srq *s = (emu_srq *)q->qp.srq;

		pthread_mutex_lock(&s->lock);
		wc->wr_id = s->wrid[c->wqe_counter & (s->view.wqe_cnt - 1)];
		gic_rq_completed(&s->view, c->wqe_counter);
		pthread_mutex_unlock(&s->lock);
	} else if (q->rq.wqe_cnt) {
		pthread_mutex_lock(&q->rq_lock);
		wc->wr_id = q->rq_wrid[c->wqe_counter & (q->rq.wqe_cnt - 1)];
		gic_rq_completed(&q->rq, c->wqe_counter);
		pthread_mutex_unlock(&q->rq_lock);
	}
	wc->opcode = c->cqe_opcode == GIC_CQE_RESP_WR_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	wc->byte_len = c->byte_cnt;
	if (c->cqe_opcode == GIC_CQE_RESP_WR_IMM || c->cqe_opcode == GIC_CQE_RESP_SEND_IMM) {
		wc->wc_flags |= IBV_WC_WITH_IMM;
		wc->imm_data = c->imm;
	}
	wc->src_qp = q->dest_qpn; /* RC: the one peer */
	wc->slid = q->dest_lid;
}

static void to_wc(const gic_cqe_info *c, struct ibv_wc *wc)
{
	emu_qp *q = emu_qp_lookup(c->qpn);
	int resp = c->cqe_opcode == GIC_CQE_RESP_WR_IMM || c->cqe_opcode == GIC_CQE_RESP_SEND ||
		   c->cqe_opcode == GIC_CQE_RESP_SEND_IMM || c->cqe_opcode == GIC_CQE_RESP_ERR;

	memset(wc, 0, sizeof(*wc));
	wc->qp_num = c->qpn;
	wc->status = c->cqe_opcode == GIC_CQE_REQ_ERR || c->cqe_opcode == GIC_CQE_RESP_ERR
			     ? wc_status(c->syndrome)
			     : IBV_WC_SUCCESS;
	wc->vendor_err = c->vendor_syndrome;
	if (!q)
		return; /* its QP was destroyed meanwhile */
	if (resp)
		wc_responder(q, c, wc);
	else
		wc_requester(q, c, wc);
}

int emu_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	emu_cq *c = (emu_cq *)cq;
	int got = 0;

	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	while (got < n) {
		gic_cqe_info info;

		if (gic_cq_poll_one(&c->view, &info, GIC_ORDER_RELEASE_SYS))
			break;
		to_wc(&info, &wc[got++]);
	}
	c->empty_polls = got ? 0 : c->empty_polls + 1;
	pthread_mutex_unlock(&c->lock);
	if (!got && emu.poll_yield && c->empty_polls % (uint32_t)emu.poll_yield == 0)
		sched_yield();
	return got;
}
