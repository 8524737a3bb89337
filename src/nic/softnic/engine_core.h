/*
 * softnic execution core, written once for the CPU engine (host C) and the
 * GPU engine (CUDA): decode a WQE, check it against the memory regions,
 * move the data, write the CQE, record errors. It works on engine_state.h
 * structures only; each QP is executed by one engine thread at a time.
 */
#ifndef SOFTNIC_ENGINE_CORE_H
#define SOFTNIC_ENGINE_CORE_H

#include <string.h>

#include "engine_state.h"

/* ------------------------------------------------------------------ */
/* Small helpers. */

GIC_HD uint32_t snx_rd_be32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return gic_be32toh(v);
}

GIC_HD uint64_t snx_rd_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return gic_be64toh(v);
}

GIC_HD int snx_fail(uint8_t *vs, uint8_t vsynd, int syndrome)
{
	*vs = vsynd;
	return syndrome;
}

GIC_HD void snx_stat_add(uint64_t *counter, uint64_t v)
{
	gic_atomic_add_relaxed_u64(counter, v);
}

/* Copies len bytes; 16 bytes at a time where both ends allow it. */
GIC_HD void snx_copy(uint8_t *dst, const uint8_t *src, uint64_t len)
{
#if GIC_ON_DEVICE
	uint64_t i = 0;

	if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0)
		for (; i + 16 <= len; i += 16)
			*(uint4 *)(dst + i) = *(const uint4 *)(src + i);
	for (; i < len; i++)
		dst[i] = src[i];
#else
	memcpy(dst, src, len);
#endif
}

/* ------------------------------------------------------------------ */
/* Decoding. */

/* Data segments from byte off to end: one inline segment, or up to
 * SOFTNIC_MAX_SGE pointer segments (not both). */
GIC_HD int snx_decode_payload(const uint8_t *b, uint32_t off, uint32_t end, softnic_wqe *w,
			      uint8_t *vs)
{
	while (off < end) {
		uint32_t word = snx_rd_be32(b + off);

		if (word & GIC_INLINE_SEG) {
			uint32_t len = word & ~GIC_INLINE_SEG;

			if (w->inline_data || w->num_sge)
				return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
			if (len > end - off - 4)
				return snx_fail(vs, SOFTNIC_VSYND_INLINE_OVERRUN,
						GIC_SYND_LOCAL_LENGTH_ERR);
			w->inline_data = b + off + 4;
			w->inline_len = len;
			w->total_len += len;
			off += (4 + len + GIC_SEG_SIZE - 1) & ~(uint32_t)(GIC_SEG_SIZE - 1);
			continue;
		}
		if (w->inline_data || w->num_sge == SOFTNIC_MAX_SGE)
			return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		/* A byte count of 0 means 2^31 (PRM). */
		w->sge[w->num_sge].len = word ? word : 0x80000000u;
		w->sge[w->num_sge].lkey = snx_rd_be32(b + off + 4);
		w->sge[w->num_sge].addr = snx_rd_be64(b + off + 8);
		w->total_len += w->sge[w->num_sge].len;
		w->num_sge++;
		off += GIC_SEG_SIZE;
	}
	if (w->total_len > 0x80000000ull)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_LENGTH, GIC_SYND_LOCAL_LENGTH_ERR);
	return 0;
}

/* See softnic_decode_wqe() in gic/softnic.h. */
GIC_HD int snx_decode_wqe(const uint8_t *b, size_t avail, softnic_wqe *w, uint8_t *vs)
{
	uint32_t w0, w1;

	memset(w, 0, sizeof(*w));
	*vs = SOFTNIC_VSYND_NONE;
	if (avail < GIC_SEG_SIZE)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
	w0 = snx_rd_be32(b);
	w1 = snx_rd_be32(b + 4);
	w->opcode = (uint8_t)w0;
	w->wqe_index = (uint16_t)(w0 >> 8);
	w->qpn = w1 >> 8;
	w->ds = w1 & 0xff;
	w->fm_ce_se = b[11];
	memcpy(&w->imm, b + 12, 4);
	if (w->ds == 0 || w->ds > GIC_WQE_MAX_DS || (size_t)w->ds * GIC_SEG_SIZE > avail)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);

	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_RDMA_WRITE:
	case GIC_OPCODE_RDMA_WRITE_IMM:
		if (w->ds < 2)
			return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		w->raddr = snx_rd_be64(b + 16);
		w->rkey = snx_rd_be32(b + 24);
		return snx_decode_payload(b, 2 * GIC_SEG_SIZE, w->ds * GIC_SEG_SIZE, w, vs);
	case GIC_OPCODE_ATOMIC_FA:
		if (w->ds != 4 || (snx_rd_be32(b + 48) & GIC_INLINE_SEG))
			return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		w->raddr = snx_rd_be64(b + 16);
		w->rkey = snx_rd_be32(b + 24);
		w->atomic_add = snx_rd_be64(b + 32);
		return snx_decode_payload(b, 3 * GIC_SEG_SIZE, 4 * GIC_SEG_SIZE, w, vs);
	default:
		return snx_fail(vs, SOFTNIC_VSYND_BAD_OPCODE, GIC_SYND_LOCAL_QP_OP_ERR);
	}
}

/* ------------------------------------------------------------------ */
/* Memory regions. */

/* Resolves key in protection domain pd for [addr, addr + len) with the
 * access bits need. Returns 0 and the pointer, or SOFTNIC_VSYND_BAD_LKEY,
 * _LOCAL_BOUNDS or _LOCAL_ACCESS (the caller maps them for remote keys). */
GIC_HD int snx_mr_resolve(snx_shared *sh, uint32_t pd, uint32_t key, uint64_t addr,
			  uint64_t len, uint32_t need, uint8_t **ptr)
{
	uint32_t s = key >> 8;
	snx_mr *m;
	uint64_t base, size;
	uint32_t access, owner;

	if (s == 0 || s >= SNX_MAX_MR)
		return SOFTNIC_VSYND_BAD_LKEY;
	m = &sh->mrs[s];
	if (gic_ld_acquire_sys_u32(&m->key) != key)
		return SOFTNIC_VSYND_BAD_LKEY;
	base = gic_ld_relaxed_u64(&m->addr);
	size = gic_ld_relaxed_u64(&m->len);
	access = gic_ld_relaxed_u32(&m->access);
	owner = gic_ld_relaxed_u32(&m->pd);
	/* Orders the field loads above before the key re-check below. */
	gic_fence_acquire_sys();
	if (gic_ld_relaxed_u32(&m->key) != key || owner != pd)
		return SOFTNIC_VSYND_BAD_LKEY;
	if (addr < base || len > size || addr - base > size - len)
		return SOFTNIC_VSYND_LOCAL_BOUNDS;
	if ((access & need) != need)
		return SOFTNIC_VSYND_LOCAL_ACCESS;
	*ptr = (uint8_t *)(uintptr_t)addr;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Completions. */

GIC_HD void snx_cq_lock(snx_cq *cq)
{
	while (gic_atomic_exch_acquire_u32(&cq->lock, 1))
		gic_cpu_relax();
}

GIC_HD void snx_cq_unlock(snx_cq *cq)
{
	gic_st_release_sys_u32(&cq->lock, 0);
}

/* Free CQE slots as the consumer-index record reports them. */
GIC_HD uint32_t snx_cq_space(snx_cq *cq)
{
	uint32_t ci = gic_be32toh(gic_ld_acquire_sys_u32(cq->dbrec)) & 0xffffffu;
	uint32_t used = ((uint32_t)gic_ld_relaxed_u64(&cq->pi) - ci) & 0xffffffu;

	return used >= cq->cqe_cnt ? 0 : cq->cqe_cnt - used;
}

typedef struct snx_cqe_fields {
	uint8_t cqe_opcode;
	uint8_t syndrome;
	uint8_t vendor_syndrome;
	uint8_t wqe_opcode;
	uint16_t wqe_counter;
	uint32_t qpn;
	uint32_t byte_cnt;
	uint32_t imm;
} snx_cqe_fields;

/* Writes one CQE; the caller made sure a slot is free. Every data write of
 * this WQE and the earlier ones happened before the system-scope release
 * store of the CQE's tail, so a poller that sees the CQE sees the data. */
GIC_HD void snx_cq_write(snx_cq *cq, const snx_cqe_fields *f, softnic_stats *st)
{
	gic_cqe64 *cqe;
	uint32_t sop = gic_htobe32(((uint32_t)f->wqe_opcode << 24) | (f->qpn & 0xffffffu));
	uint64_t pi, tail;

	snx_cq_lock(cq);
	pi = cq->pi;
	cqe = &cq->cqes[pi & (cq->cqe_cnt - 1)];
	memset(cqe, 0, GIC_CQE_TAIL_OFFSET);
	cqe->byte_cnt_be = gic_htobe32(f->byte_cnt);
	cqe->imm_inval_pkey = f->imm;
	if (f->cqe_opcode == GIC_CQE_REQ_ERR) {
		((gic_err_cqe *)cqe)->syndrome = f->syndrome;
		((gic_err_cqe *)cqe)->vendor_err_synd = f->vendor_syndrome;
	}
	/* Tail bytes 56..63: sop_drop_qpn, wqe_counter, signature, op_own. */
	tail = (uint64_t)sop | ((uint64_t)gic_htobe16(f->wqe_counter) << 32) |
	       ((uint64_t)gic_make_op_own(f->cqe_opcode, (uint32_t)pi, cq->cqe_cnt) << 56);
	gic_st_release_sys_u64((uint64_t *)((uint8_t *)cqe + GIC_CQE_TAIL_OFFSET), tail);
	gic_st_relaxed_u64(&cq->pi, pi + 1);
	snx_cq_unlock(cq);
	snx_stat_add(&st->cqes_written, 1);
}

/* ------------------------------------------------------------------ */
/* Errors: recorded here, formatted by the host (softnic_qp_error). */

GIC_HD void snx_qp_set_error(snx_qp *qp, uint16_t wqe_index, uint8_t opcode, int syndrome,
			     uint8_t vs, softnic_stats *st)
{
	if (qp->in_error)
		return;
	qp->err.syndrome = (uint8_t)syndrome;
	qp->err.vendor_syndrome = vs;
	qp->err.opcode = opcode;
	qp->err.wqe_index = wqe_index;
	/* Publishes err (complete) to softnic_qp_error() readers. */
	gic_st_release_sys_u32(&qp->in_error, 1);
	if (vs >= SOFTNIC_VSYND_STRICT_DB_AHEAD)
		snx_stat_add(&st->strict_violations, 1);
}

GIC_HD void snx_complete_error(snx_qp *qp, uint16_t wqe_index, uint8_t opcode, int syndrome,
			       uint8_t vs, softnic_stats *st)
{
	snx_cqe_fields f;

	memset(&f, 0, sizeof(f));
	f.cqe_opcode = GIC_CQE_REQ_ERR;
	f.syndrome = (uint8_t)syndrome;
	f.vendor_syndrome = vs;
	f.wqe_opcode = opcode;
	f.wqe_counter = wqe_index;
	f.qpn = qp->qpn;
	snx_cq_write(qp->send_cq, &f, st);
	snx_stat_add(&st->error_cqes, 1);
}

/* ------------------------------------------------------------------ */
/* Execution. */

/* The QP must be connected to a live peer. Returns 0 or a syndrome. */
GIC_HD int snx_check_peer(const snx_qp *qp, uint8_t *vs)
{
	uint32_t link = gic_ld_acquire_sys_u32(&qp->link);

	if (link == SNX_QP_UNCONNECTED)
		return snx_fail(vs, SOFTNIC_VSYND_NOT_CONNECTED, GIC_SYND_LOCAL_QP_OP_ERR);
	if (link != SNX_QP_CONNECTED || !qp->peer)
		return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	return 0;
}

/* Resolves a remote range in the (live) peer's PD. Returns 0 or a syndrome. */
GIC_HD int snx_resolve_remote(snx_shared *sh, snx_qp *qp, const softnic_wqe *w, uint64_t len,
			      uint32_t need, uint8_t **dst, uint8_t *vs)
{
	int r = snx_mr_resolve(sh, qp->peer->pd, w->rkey, w->raddr, len, need, dst);

	if (r == SOFTNIC_VSYND_BAD_LKEY)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_RKEY, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r == SOFTNIC_VSYND_LOCAL_BOUNDS)
		return snx_fail(vs, SOFTNIC_VSYND_REMOTE_BOUNDS, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r)
		return snx_fail(vs, SOFTNIC_VSYND_REMOTE_ACCESS, GIC_SYND_REMOTE_ACCESS_ERR);
	return 0;
}

/* Resolves every pointer segment (local read or, with need, write). */
GIC_HD int snx_resolve_local(snx_shared *sh, snx_qp *qp, const softnic_wqe *w, uint32_t need,
			     uint8_t *src[SOFTNIC_MAX_SGE], uint8_t *vs)
{
	for (uint32_t i = 0; i < w->num_sge; i++) {
		int r = snx_mr_resolve(sh, qp->pd, w->sge[i].lkey, w->sge[i].addr, w->sge[i].len,
				       need, &src[i]);
		if (r)
			return snx_fail(vs, (uint8_t)r, GIC_SYND_LOCAL_PROT_ERR);
	}
	return 0;
}

GIC_HD int snx_exec_write(snx_shared *sh, snx_qp *qp, const softnic_wqe *w, uint8_t *vs,
			  softnic_stats *st)
{
	uint8_t *src[SOFTNIC_MAX_SGE];
	uint8_t *dst = NULL;
	int r = snx_check_peer(qp, vs);

	if (!r && w->opcode == GIC_OPCODE_RDMA_WRITE_IMM && !qp->peer->recv_cq)
		r = snx_fail(vs, SOFTNIC_VSYND_NO_RECV_CQ, GIC_SYND_RNR_RETRY_EXC_ERR);
	if (!r)
		r = snx_resolve_local(sh, qp, w, 0, src, vs);
	if (!r && w->total_len) /* a zero-length write needs no rkey */
		r = snx_resolve_remote(sh, qp, w, w->total_len, SOFTNIC_ACCESS_REMOTE_WRITE, &dst, vs);
	if (r)
		return r;
	if (w->inline_len)
		snx_copy(dst, w->inline_data, w->inline_len);
	for (uint32_t i = 0; i < w->num_sge; i++) {
		snx_copy(dst, src[i], w->sge[i].len);
		dst += w->sge[i].len;
	}
	if (w->opcode == GIC_OPCODE_RDMA_WRITE_IMM) {
		snx_cqe_fields f;

		memset(&f, 0, sizeof(f));
		f.cqe_opcode = GIC_CQE_RESP_WR_IMM;
		f.qpn = qp->peer->qpn;
		f.byte_cnt = (uint32_t)w->total_len;
		f.imm = w->imm;
		/* snx_step() saw a free slot; the receiver learns of the write
		 * only after its data. */
		snx_cq_write(qp->peer->recv_cq, &f, st);
	}
	return 0;
}

GIC_HD int snx_exec_atomic_fa(snx_shared *sh, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *res[SOFTNIC_MAX_SGE];
	uint8_t *dst = NULL;
	uint64_t old;
	int r = snx_check_peer(qp, vs);

	if (!r && w->sge[0].len != 8)
		r = snx_fail(vs, SOFTNIC_VSYND_BAD_LENGTH, GIC_SYND_LOCAL_LENGTH_ERR);
	if (!r)
		r = snx_resolve_local(sh, qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, res, vs);
	if (!r && (w->raddr & 7))
		r = snx_fail(vs, SOFTNIC_VSYND_ATOMIC_ALIGN, GIC_SYND_REMOTE_INVAL_REQ_ERR);
	if (!r)
		r = snx_resolve_remote(sh, qp, w, 8, SOFTNIC_ACCESS_REMOTE_ATOMIC, &dst, vs);
	if (r)
		return r;
	old = gic_atomic_add_sc_sys_u64((uint64_t *)(void *)dst, w->atomic_add);
	memcpy(res[0], &old, 8);
	return 0;
}

/* Copies the WQE at BB position pos (it may wrap) into buf. */
GIC_HD void snx_copy_wqe(const snx_qp *qp, uint64_t pos, uint32_t nbb, uint8_t *buf)
{
	for (uint32_t i = 0; i < nbb; i++)
		snx_copy(buf + i * GIC_SEND_WQE_BB,
			 qp->sq_buf + ((pos + i) & (qp->bb_cnt - 1)) * GIC_SEND_WQE_BB,
			 GIC_SEND_WQE_BB);
}

/* Executes one decoded WQE; returns 0 or a syndrome (with *vs). */
GIC_HD int snx_execute(snx_shared *sh, snx_qp *qp, const softnic_wqe *w, uint16_t slot_index,
		       uint8_t *vs, softnic_stats *st)
{
	if (sh->strict && w->wqe_index != slot_index)
		return snx_fail(vs, SOFTNIC_VSYND_STRICT_WQE_INDEX, GIC_SYND_LOCAL_QP_OP_ERR);
	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_ATOMIC_FA:
		return snx_exec_atomic_fa(sh, qp, w, vs);
	default:
		return snx_exec_write(sh, qp, w, vs, st);
	}
}

/* 1 when executing w would need a receive-CQ slot that is not free. */
GIC_HD int snx_recv_cq_full(const snx_qp *qp, const softnic_wqe *w)
{
	return w->opcode == GIC_OPCODE_RDMA_WRITE_IMM &&
	       gic_ld_acquire_sys_u32(&qp->link) == SNX_QP_CONNECTED && qp->peer &&
	       qp->peer->recv_cq && !snx_cq_space(qp->peer->recv_cq);
}

/* Decodes and executes the WQE of nbb BBs at qp->cons into *w. Returns 0,
 * a syndrome (with *vs), or -1 when the QP must wait for CQ space. */
GIC_HD int snx_run_wqe(snx_shared *sh, snx_qp *qp, uint32_t nbb, softnic_wqe *w, uint8_t *vs,
		       softnic_stats *st)
{
	uint8_t buf[GIC_WQE_MAX_BB * GIC_SEND_WQE_BB];
	int synd;

	snx_copy_wqe(qp, qp->cons, nbb, buf);
	synd = snx_decode_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, w, vs);
	if (qp->in_error && qp->pending_synd) {
		/* The first WQE after a doorbell error carries that error. */
		synd = snx_fail(vs, qp->pending_vs, qp->pending_synd);
		qp->pending_synd = 0;
	} else if (qp->in_error) {
		synd = snx_fail(vs, SOFTNIC_VSYND_NONE, GIC_SYND_WR_FLUSH_ERR);
	} else if (!synd) {
		if (snx_recv_cq_full(qp, w))
			return -1;
		synd = snx_execute(sh, qp, w, (uint16_t)qp->cons, vs, st);
	}
	return synd;
}

/* Runs the WQE at qp->cons. Returns 1 when it was consumed, 0 when the QP
 * must wait (a CQ is full). */
GIC_HD int snx_step(snx_shared *sh, snx_qp *qp, softnic_stats *st)
{
	const gic_ctrl_seg *c = (const gic_ctrl_seg *)(qp->sq_buf +
		(qp->cons & (qp->bb_cnt - 1)) * GIC_SEND_WQE_BB);
	uint32_t nbb = gic_wqe_bb_count(c->qpn_ds_be);
	uint16_t slot_index = (uint16_t)qp->cons;
	softnic_wqe w;
	uint8_t vs = 0;
	int synd;

	if (!snx_cq_space(qp->send_cq)) {
		snx_stat_add(&st->cq_full_stalls, 1);
		return 0;
	}
	if (qp->cons + nbb > qp->target) {
		/* The doorbell record covers only part of this WQE. */
		nbb = (uint32_t)(qp->target - qp->cons);
		memset(&w, 0, sizeof(w));
		w.opcode = (uint8_t)gic_be32toh(c->opmod_idx_opcode_be);
		synd = snx_fail(&vs, SOFTNIC_VSYND_WQE_PAST_DBREC, GIC_SYND_LOCAL_QP_OP_ERR);
	} else {
		synd = snx_run_wqe(sh, qp, nbb, &w, &vs, st);
		if (synd < 0) {
			snx_stat_add(&st->cq_full_stalls, 1);
			return 0;
		}
	}
	if (synd) {
		if (synd != GIC_SYND_WR_FLUSH_ERR)
			snx_qp_set_error(qp, slot_index, w.opcode, synd, vs, st);
		snx_complete_error(qp, slot_index, w.opcode, synd, vs, st);
	} else if (w.fm_ce_se & GIC_CTRL_CQ_UPDATE) {
		snx_cqe_fields f;

		memset(&f, 0, sizeof(f));
		f.cqe_opcode = GIC_CQE_REQ;
		f.wqe_opcode = w.opcode;
		f.wqe_counter = slot_index;
		f.qpn = qp->qpn;
		f.byte_cnt = (uint32_t)w.total_len;
		snx_cq_write(qp->send_cq, &f, st);
	}
	qp->cons += nbb;
	snx_stat_add(&st->wqes_executed, 1);
	return 1;
}

/* Checks a new doorbell against the doorbell record and moves qp->target.
 * A protocol mistake moves the QP to error; the first WQE it announced
 * then completes with that error. */
GIC_HD void snx_take_doorbell(snx_shared *sh, snx_qp *qp, uint64_t db, softnic_stats *st)
{
	uint32_t rec = gic_be32toh(gic_ld_acquire_sys_u32(qp->dbrec)) & 0xffffu;
	uint32_t w0 = gic_be32toh((uint32_t)db), w1 = gic_be32toh((uint32_t)(db >> 32));
	uint16_t ahead = (uint16_t)(rec - (uint16_t)qp->target);
	uint16_t db_ahead = (uint16_t)(((w0 >> 8) & 0xffffu) - (uint16_t)qp->target);
	uint8_t vs = 0;

	if (qp->target + ahead - qp->cons > qp->bb_cnt)
		vs = SOFTNIC_VSYND_BAD_DBREC;
	else if (sh->strict && (w1 >> 8) != qp->qpn)
		vs = SOFTNIC_VSYND_STRICT_DB_QPN;
	else if (sh->strict && db_ahead > ahead && db_ahead <= qp->bb_cnt)
		vs = SOFTNIC_VSYND_STRICT_DB_AHEAD;
	if (!vs) {
		qp->target += ahead;
		return;
	}
	if (!qp->in_error) {
		qp->pending_synd = GIC_SYND_LOCAL_QP_OP_ERR;
		qp->pending_vs = vs;
		qp->err.has_doorbell = 1;
		qp->err.db_index = (uint16_t)(w0 >> 8);
		qp->err.dbrec = rec;
		qp->err.executed = (uint32_t)(qp->cons & 0xffff);
	}
	snx_qp_set_error(qp, (uint16_t)qp->cons, 0, GIC_SYND_LOCAL_QP_OP_ERR, vs, st);
	if (vs != SOFTNIC_VSYND_BAD_DBREC) {
		qp->target += ahead;
	} else if (qp->pending_synd && snx_cq_space(qp->send_cq)) {
		/* The record is unusable, so no WQE can carry the error:
		 * report it in a CQE of its own. */
		snx_complete_error(qp, (uint16_t)qp->cons, 0, GIC_SYND_LOCAL_QP_OP_ERR, vs, st);
		qp->pending_synd = 0;
	}
}

/* Executes what the QP's doorbell announced; returns WQEs executed. */
GIC_HD int snx_qp_progress(snx_shared *sh, snx_qp *qp, softnic_stats *st)
{
	uint64_t db = gic_ld_acquire_sys_u64(qp->db);
	int done = 0;

	if (db != qp->last_db) {
		qp->last_db = db;
		snx_take_doorbell(sh, qp, db, st);
	}
	while (qp->cons < qp->target && snx_step(sh, qp, st))
		done++;
	return done;
}

#endif /* SOFTNIC_ENGINE_CORE_H */
