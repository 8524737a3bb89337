/*
 * softnic execution: decode a WQE, check it against the memory regions,
 * move the data, write the CQE. Shared by every CPU engine thread and by
 * softnic_progress(); each QP is executed by one thread at a time.
 */
#include <stdio.h>
#include <string.h>

#include "softnic_internal.h"

/* ------------------------------------------------------------------ */
/* Decoding. */

static uint32_t rd_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return gic_be32toh(v);
}

static uint64_t rd_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return gic_be64toh(v);
}

static int fail(uint8_t *vs, uint8_t vsynd, int syndrome)
{
	*vs = vsynd;
	return syndrome;
}

/* Data segments from byte off to end: one inline segment, or up to
 * SOFTNIC_MAX_SGE pointer segments (not both). */
static int decode_payload(const uint8_t *b, uint32_t off, uint32_t end, softnic_wqe *w,
			  uint8_t *vs)
{
	while (off < end) {
		uint32_t word = rd_be32(b + off);

		if (word & GIC_INLINE_SEG) {
			uint32_t len = word & ~GIC_INLINE_SEG;

			if (w->inline_data || w->num_sge)
				return fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
			if (len > end - off - 4)
				return fail(vs, SOFTNIC_VSYND_INLINE_OVERRUN, GIC_SYND_LOCAL_LENGTH_ERR);
			w->inline_data = b + off + 4;
			w->inline_len = len;
			w->total_len += len;
			off += (4 + len + GIC_SEG_SIZE - 1) & ~(uint32_t)(GIC_SEG_SIZE - 1);
			continue;
		}
		if (w->inline_data || w->num_sge == SOFTNIC_MAX_SGE)
			return fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		/* A byte count of 0 means 2^31 (PRM). */
		w->sge[w->num_sge].len = word ? word : 0x80000000u;
		w->sge[w->num_sge].lkey = rd_be32(b + off + 4);
		w->sge[w->num_sge].addr = rd_be64(b + off + 8);
		w->total_len += w->sge[w->num_sge].len;
		w->num_sge++;
		off += GIC_SEG_SIZE;
	}
	if (w->total_len > 0x80000000ull)
		return fail(vs, SOFTNIC_VSYND_BAD_LENGTH, GIC_SYND_LOCAL_LENGTH_ERR);
	return 0;
}

int softnic_decode_wqe(const uint8_t *b, size_t avail, softnic_wqe *w, uint8_t *vs)
{
	uint32_t w0, w1;

	memset(w, 0, sizeof(*w));
	*vs = SOFTNIC_VSYND_NONE;
	if (avail < GIC_SEG_SIZE)
		return fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
	w0 = rd_be32(b);
	w1 = rd_be32(b + 4);
	w->opcode = (uint8_t)w0;
	w->wqe_index = (uint16_t)(w0 >> 8);
	w->qpn = w1 >> 8;
	w->ds = w1 & 0xff;
	w->fm_ce_se = b[11];
	memcpy(&w->imm, b + 12, 4);
	if (w->ds == 0 || w->ds > GIC_WQE_MAX_DS || (size_t)w->ds * GIC_SEG_SIZE > avail)
		return fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);

	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_RDMA_WRITE:
	case GIC_OPCODE_RDMA_WRITE_IMM:
		if (w->ds < 2)
			return fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		w->raddr = rd_be64(b + 16);
		w->rkey = rd_be32(b + 24);
		return decode_payload(b, 2 * GIC_SEG_SIZE, w->ds * GIC_SEG_SIZE, w, vs);
	case GIC_OPCODE_ATOMIC_FA:
		if (w->ds != 4 || (rd_be32(b + 48) & GIC_INLINE_SEG))
			return fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		w->raddr = rd_be64(b + 16);
		w->rkey = rd_be32(b + 24);
		w->atomic_add = rd_be64(b + 32);
		return decode_payload(b, 3 * GIC_SEG_SIZE, 4 * GIC_SEG_SIZE, w, vs);
	default:
		return fail(vs, SOFTNIC_VSYND_BAD_OPCODE, GIC_SYND_LOCAL_QP_OP_ERR);
	}
}

/* ------------------------------------------------------------------ */
/* Completion writing. */

static void cq_lock(softnic_cq *cq)
{
	while (__atomic_exchange_n(&cq->lock, 1, __ATOMIC_ACQUIRE))
		gic_cpu_relax();
}

static void cq_unlock(softnic_cq *cq)
{
	__atomic_store_n(&cq->lock, 0, __ATOMIC_RELEASE);
}

/* Free CQE slots as the consumer-index record reports them. */
static uint32_t cq_space(softnic_cq *cq)
{
	uint32_t ci = gic_be32toh(__atomic_load_n(cq->dbrec, __ATOMIC_ACQUIRE)) & 0xffffffu;
	uint32_t used = ((uint32_t)cq->pi - ci) & 0xffffffu;

	return used >= cq->cqe_cnt ? 0 : cq->cqe_cnt - used;
}

typedef struct cqe_fields {
	uint8_t cqe_opcode;
	uint8_t syndrome;
	uint8_t vendor_syndrome;
	uint8_t wqe_opcode;
	uint16_t wqe_counter;
	uint32_t qpn;
	uint32_t byte_cnt;
	uint32_t imm;
} cqe_fields;

/* Writes one CQE; the caller made sure a slot is free. Every data write
 * of this WQE and the earlier ones happened before the release store of
 * the CQE's tail, so a poller that sees the CQE sees the data. */
static void cq_write(softnic *nic, softnic_cq *cq, const cqe_fields *f)
{
	gic_cqe64 *cqe;
	uint8_t tail[8];
	uint32_t sop = gic_htobe32(((uint32_t)f->wqe_opcode << 24) | (f->qpn & 0xffffffu));
	uint16_t wc = gic_htobe16(f->wqe_counter);
	uint64_t tail_word;

	cq_lock(cq);
	cqe = &cq->cqes[cq->pi & (cq->cqe_cnt - 1)];
	memset(cqe, 0, GIC_CQE_TAIL_OFFSET);
	cqe->byte_cnt_be = gic_htobe32(f->byte_cnt);
	cqe->imm_inval_pkey = f->imm;
	if (f->cqe_opcode == GIC_CQE_REQ_ERR) {
		((gic_err_cqe *)cqe)->syndrome = f->syndrome;
		((gic_err_cqe *)cqe)->vendor_err_synd = f->vendor_syndrome;
	}
	memcpy(tail, &sop, 4);
	memcpy(tail + 4, &wc, 2);
	tail[6] = 0;
	tail[7] = gic_make_op_own(f->cqe_opcode, (uint32_t)cq->pi, cq->cqe_cnt);
	memcpy(&tail_word, tail, 8);
	__atomic_store_n((uint64_t *)((uint8_t *)cqe + GIC_CQE_TAIL_OFFSET), tail_word,
			 __ATOMIC_RELEASE);
	cq->pi++;
	cq_unlock(cq);
	stat_add(&nic->stats.cqes_written, 1);
}

/* ------------------------------------------------------------------ */
/* Errors. */

static const char *vsynd_text(uint8_t vs)
{
	switch (vs) {
	case SOFTNIC_VSYND_BAD_OPCODE: return "unknown opcode";
	case SOFTNIC_VSYND_BAD_DS: return "bad ds (segment count) for the opcode";
	case SOFTNIC_VSYND_INLINE_OVERRUN: return "inline length runs past the WQE";
	case SOFTNIC_VSYND_BAD_LKEY: return "lkey not registered in the QP's PD";
	case SOFTNIC_VSYND_LOCAL_BOUNDS: return "local buffer outside its region";
	case SOFTNIC_VSYND_LOCAL_ACCESS: return "local region lacks LOCAL_WRITE";
	case SOFTNIC_VSYND_BAD_RKEY: return "rkey not registered in the peer's PD";
	case SOFTNIC_VSYND_REMOTE_BOUNDS: return "remote range outside its region";
	case SOFTNIC_VSYND_REMOTE_ACCESS: return "remote region lacks the needed right";
	case SOFTNIC_VSYND_ATOMIC_ALIGN: return "atomic target not 8-byte aligned";
	case SOFTNIC_VSYND_BAD_LENGTH: return "message longer than 2 GiB";
	case SOFTNIC_VSYND_NOT_CONNECTED: return "QP not connected";
	case SOFTNIC_VSYND_PEER_GONE: return "peer QP vanished";
	case SOFTNIC_VSYND_NO_RECV_CQ: return "peer has no receive CQ for WRITE_IMM";
	case SOFTNIC_VSYND_WQE_PAST_DBREC: return "WQE extends past the doorbell record";
	case SOFTNIC_VSYND_BAD_DBREC: return "doorbell record moved back or past the ring";
	case SOFTNIC_VSYND_STRICT_DB_AHEAD: return "strict: doorbell ahead of the doorbell record";
	case SOFTNIC_VSYND_STRICT_DB_QPN: return "strict: doorbell names another QP";
	case SOFTNIC_VSYND_STRICT_WQE_INDEX: return "strict: ctrl WQE index does not match its slot";
	default: return "unknown check";
	}
}

/* Moves the QP to error and records what failed, once. */
static void qp_set_error(softnic_qp *qp, uint16_t wqe_index, uint8_t opcode, int syndrome,
			 uint8_t vs, const char *detail)
{
	if (qp->in_error)
		return;
	snprintf(qp->error, sizeof(qp->error), "qp 0x%x wqe %u (opcode 0x%02x): %s [%s]%s%s",
		 qp->qpn, wqe_index, opcode, vsynd_text(vs), gic_syndrome_name((uint8_t)syndrome),
		 detail ? ": " : "", detail ? detail : "");
	__atomic_store_n(&qp->in_error, 1, __ATOMIC_RELEASE);
	softnic_set_error(qp->nic, "%s", qp->error);
	if (vs >= SOFTNIC_VSYND_STRICT_DB_AHEAD)
		stat_add(&qp->nic->stats.strict_violations, 1);
}

static void complete_error(softnic_qp *qp, uint16_t wqe_index, uint8_t opcode, int syndrome,
			   uint8_t vs)
{
	cqe_fields f = {
		.cqe_opcode = GIC_CQE_REQ_ERR, .syndrome = (uint8_t)syndrome,
		.vendor_syndrome = vs, .wqe_opcode = opcode, .wqe_counter = wqe_index,
		.qpn = qp->qpn,
	};

	cq_write(qp->nic, qp->send_cq, &f);
	stat_add(&qp->nic->stats.error_cqes, 1);
}

/* ------------------------------------------------------------------ */
/* Execution. */

/* The QP must be connected to a live peer. Returns 0 or a syndrome. */
static int check_peer(const softnic_qp *qp, uint8_t *vs)
{
	if (!qp->connected)
		return fail(vs, SOFTNIC_VSYND_NOT_CONNECTED, GIC_SYND_LOCAL_QP_OP_ERR);
	if (!qp->peer || qp->peer_gone)
		return fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	return 0;
}

/* Resolves a remote range in the (live) peer's PD. Returns 0 or a syndrome. */
static int resolve_remote(softnic_qp *qp, const softnic_wqe *w, uint64_t len, uint32_t need,
			  uint8_t **dst, uint8_t *vs)
{
	int r = softnic_mr_resolve(qp->nic, qp->peer->pd, w->rkey, w->raddr, len, need, dst);

	if (r == SOFTNIC_VSYND_BAD_LKEY)
		return fail(vs, SOFTNIC_VSYND_BAD_RKEY, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r == SOFTNIC_VSYND_LOCAL_BOUNDS)
		return fail(vs, SOFTNIC_VSYND_REMOTE_BOUNDS, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r)
		return fail(vs, SOFTNIC_VSYND_REMOTE_ACCESS, GIC_SYND_REMOTE_ACCESS_ERR);
	return 0;
}

/* Resolves every pointer segment (local read or, with need, write). */
static int resolve_local(softnic_qp *qp, const softnic_wqe *w, uint32_t need,
			 uint8_t *src[SOFTNIC_MAX_SGE], uint8_t *vs)
{
	for (uint32_t i = 0; i < w->num_sge; i++) {
		int r = softnic_mr_resolve(qp->nic, qp->pd, w->sge[i].lkey, w->sge[i].addr,
					   w->sge[i].len, need, &src[i]);
		if (r)
			return fail(vs, (uint8_t)r, GIC_SYND_LOCAL_PROT_ERR);
	}
	return 0;
}

static int exec_write(softnic_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *src[SOFTNIC_MAX_SGE];
	uint8_t *dst = NULL;
	int r = check_peer(qp, vs);

	if (!r && w->opcode == GIC_OPCODE_RDMA_WRITE_IMM && !qp->peer->recv_cq)
		r = fail(vs, SOFTNIC_VSYND_NO_RECV_CQ, GIC_SYND_RNR_RETRY_EXC_ERR);
	if (!r)
		r = resolve_local(qp, w, 0, src, vs);
	if (!r && w->total_len) /* a zero-length write needs no rkey */
		r = resolve_remote(qp, w, w->total_len, SOFTNIC_ACCESS_REMOTE_WRITE, &dst, vs);
	if (r)
		return r;
	if (w->inline_len)
		memcpy(dst, w->inline_data, w->inline_len);
	for (uint32_t i = 0; i < w->num_sge; i++) {
		memcpy(dst, src[i], w->sge[i].len);
		dst += w->sge[i].len;
	}
	if (w->opcode == GIC_OPCODE_RDMA_WRITE_IMM) {
		cqe_fields f = {
			.cqe_opcode = GIC_CQE_RESP_WR_IMM, .qpn = qp->peer->qpn,
			.byte_cnt = (uint32_t)w->total_len, .imm = w->imm,
		};

		/* step() saw a free slot; the receiver learns of the write
		 * only after its data. */
		cq_write(qp->nic, qp->peer->recv_cq, &f);
	}
	return 0;
}

static int exec_atomic_fa(softnic_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *res[SOFTNIC_MAX_SGE];
	uint8_t *dst = NULL;
	uint64_t old;
	int r;

	r = check_peer(qp, vs);
	if (!r && w->sge[0].len != 8)
		r = fail(vs, SOFTNIC_VSYND_BAD_LENGTH, GIC_SYND_LOCAL_LENGTH_ERR);
	if (!r)
		r = resolve_local(qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, res, vs);
	if (!r && (w->raddr & 7))
		r = fail(vs, SOFTNIC_VSYND_ATOMIC_ALIGN, GIC_SYND_REMOTE_INVAL_REQ_ERR);
	if (!r)
		r = resolve_remote(qp, w, 8, SOFTNIC_ACCESS_REMOTE_ATOMIC, &dst, vs);
	if (r)
		return r;
	old = __atomic_fetch_add((uint64_t *)(void *)dst, w->atomic_add, __ATOMIC_SEQ_CST);
	memcpy(res[0], &old, 8);
	return 0;
}

/* Copies the WQE at BB position pos (it may wrap) into buf. */
static void copy_wqe(const softnic_qp *qp, uint64_t pos, uint32_t nbb, uint8_t *buf)
{
	for (uint32_t i = 0; i < nbb; i++)
		memcpy(buf + i * GIC_SEND_WQE_BB,
		       qp->sq_buf + ((pos + i) & (qp->bb_cnt - 1)) * GIC_SEND_WQE_BB,
		       GIC_SEND_WQE_BB);
}

/* Executes one decoded WQE; returns 0 or a syndrome (with *vs). */
static int execute(softnic_qp *qp, const softnic_wqe *w, uint16_t slot_index, uint8_t *vs)
{
	if (qp->nic->attr.strict && w->wqe_index != slot_index)
		return fail(vs, SOFTNIC_VSYND_STRICT_WQE_INDEX, GIC_SYND_LOCAL_QP_OP_ERR);
	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_ATOMIC_FA:
		return exec_atomic_fa(qp, w, vs);
	default:
		return exec_write(qp, w, vs);
	}
}

/* 1 when executing w would need a receive-CQ slot that is not free. */
static int recv_cq_full(const softnic_qp *qp, const softnic_wqe *w)
{
	return w->opcode == GIC_OPCODE_RDMA_WRITE_IMM && qp->connected && qp->peer &&
	       qp->peer->recv_cq && !cq_space(qp->peer->recv_cq);
}

/* Decodes and executes the WQE of nbb BBs at qp->cons into *w. Returns 0,
 * a syndrome (with *vs), or -1 when the QP must wait for CQ space. */
static int run_wqe(softnic_qp *qp, uint32_t nbb, softnic_wqe *w, uint8_t *vs)
{
	uint8_t buf[GIC_WQE_MAX_BB * GIC_SEND_WQE_BB];
	int synd;

	copy_wqe(qp, qp->cons, nbb, buf);
	synd = softnic_decode_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, w, vs);
	if (qp->in_error && qp->pending_synd) {
		/* The first WQE after a doorbell error carries that error. */
		synd = fail(vs, qp->pending_vs, qp->pending_synd);
		qp->pending_synd = 0;
	} else if (qp->in_error) {
		synd = fail(vs, SOFTNIC_VSYND_NONE, GIC_SYND_WR_FLUSH_ERR);
	} else if (!synd) {
		if (recv_cq_full(qp, w))
			return -1;
		synd = execute(qp, w, (uint16_t)qp->cons, vs);
	}
	return synd;
}

/* Runs the WQE at qp->cons. Returns 1 when it was consumed, 0 when the QP
 * must wait (a CQ is full). */
static int step(softnic_qp *qp)
{
	const gic_ctrl_seg *c = (const gic_ctrl_seg *)(qp->sq_buf +
		(qp->cons & (qp->bb_cnt - 1)) * GIC_SEND_WQE_BB);
	uint32_t nbb = gic_wqe_bb_count(c->qpn_ds_be);
	uint16_t slot_index = (uint16_t)qp->cons;
	softnic_wqe w;
	uint8_t vs = 0;
	int synd;

	if (!cq_space(qp->send_cq)) {
		stat_add(&qp->nic->stats.cq_full_stalls, 1);
		return 0;
	}
	if (qp->cons + nbb > qp->target) {
		/* The doorbell record covers only part of this WQE. */
		nbb = (uint32_t)(qp->target - qp->cons);
		memset(&w, 0, sizeof(w));
		w.opcode = (uint8_t)gic_be32toh(c->opmod_idx_opcode_be);
		synd = fail(&vs, SOFTNIC_VSYND_WQE_PAST_DBREC, GIC_SYND_LOCAL_QP_OP_ERR);
	} else {
		synd = run_wqe(qp, nbb, &w, &vs);
		if (synd < 0) {
			stat_add(&qp->nic->stats.cq_full_stalls, 1);
			return 0;
		}
	}
	if (synd) {
		if (synd != GIC_SYND_WR_FLUSH_ERR)
			qp_set_error(qp, slot_index, w.opcode, synd, vs, NULL);
		complete_error(qp, slot_index, w.opcode, synd, vs);
	} else if (w.fm_ce_se & GIC_CTRL_CQ_UPDATE) {
		cqe_fields f = {
			.cqe_opcode = GIC_CQE_REQ, .wqe_opcode = w.opcode,
			.wqe_counter = slot_index, .qpn = qp->qpn,
			.byte_cnt = (uint32_t)w.total_len,
		};
		cq_write(qp->nic, qp->send_cq, &f);
	}
	qp->cons += nbb;
	stat_add(&qp->nic->stats.wqes_executed, 1);
	return 1;
}

/* Checks a new doorbell against the doorbell record and moves qp->target.
 * A protocol mistake moves the QP to error; the first WQE it announced
 * then completes with that error. */
static void take_doorbell(softnic_qp *qp, uint64_t db)
{
	uint32_t rec = gic_be32toh(__atomic_load_n(qp->dbrec, __ATOMIC_ACQUIRE)) & 0xffffu;
	uint32_t w0 = gic_be32toh((uint32_t)db), w1 = gic_be32toh((uint32_t)(db >> 32));
	uint16_t ahead = (uint16_t)(rec - (uint16_t)qp->target);
	uint16_t db_ahead = (uint16_t)(((w0 >> 8) & 0xffffu) - (uint16_t)qp->target);
	uint8_t vs = 0;
	char detail[96];

	if (qp->target + ahead - qp->cons > qp->bb_cnt)
		vs = SOFTNIC_VSYND_BAD_DBREC;
	else if (qp->nic->attr.strict && (w1 >> 8) != qp->qpn)
		vs = SOFTNIC_VSYND_STRICT_DB_QPN;
	else if (qp->nic->attr.strict && db_ahead > ahead && db_ahead <= qp->bb_cnt)
		vs = SOFTNIC_VSYND_STRICT_DB_AHEAD;
	if (!vs) {
		qp->target += ahead;
		return;
	}
	snprintf(detail, sizeof(detail), "doorbell index %u, doorbell record %u, executed %u",
		 (w0 >> 8) & 0xffffu, rec, (unsigned)(qp->cons & 0xffff));
	if (!qp->in_error) {
		qp->pending_synd = GIC_SYND_LOCAL_QP_OP_ERR;
		qp->pending_vs = vs;
	}
	qp_set_error(qp, (uint16_t)qp->cons, 0, GIC_SYND_LOCAL_QP_OP_ERR, vs, detail);
	if (vs != SOFTNIC_VSYND_BAD_DBREC) {
		qp->target += ahead;
	} else if (qp->pending_synd && cq_space(qp->send_cq)) {
		/* The record is unusable, so no WQE can carry the error:
		 * report it in a CQE of its own. */
		complete_error(qp, (uint16_t)qp->cons, 0, GIC_SYND_LOCAL_QP_OP_ERR, vs);
		qp->pending_synd = 0;
	}
}

int softnic_qp_progress(softnic_qp *qp)
{
	uint64_t db = __atomic_load_n(qp->db, __ATOMIC_ACQUIRE);
	int done = 0;

	if (db != qp->last_db) {
		qp->last_db = db;
		take_doorbell(qp, db);
	}
	while (qp->cons < qp->target && step(qp))
		done++;
	return done;
}
