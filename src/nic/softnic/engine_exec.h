/*
 * softnic execution core, part two (included by engine_core.h): running
 * the WQEs (writes, reads, sends into receive queues, atomics), receiver-
 * not-ready retries, doorbells with their watch, and the pass over a QP.
 */
#ifndef SOFTNIC_ENGINE_EXEC_H
#define SOFTNIC_ENGINE_EXEC_H

/* ------------------------------------------------------------------ */
/* Execution. */

/* The QP must be connected to a live peer. Returns 0 or a syndrome. */
SNX_HOT int snx_check_peer(const snx_pass *p, const snx_qp *qp, uint8_t *vs)
{
	if (p->link == SNX_QP_UNCONNECTED)
		return snx_fail(vs, SOFTNIC_VSYND_NOT_CONNECTED, GIC_SYND_LOCAL_QP_OP_ERR);
	if (p->link != SNX_QP_CONNECTED || !qp->peer)
		return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	return 0;
}

/* The peer's softnic MR table (another process's when qp->peer_sh says so;
 * PD ids are unique across such softnics, so a (key, pd) cache cannot mix
 * tables up). */
GIC_HD snx_shared *snx_peer_table(snx_pass *p, const snx_qp *qp)
{
	return qp->peer_sh ? qp->peer_sh : p->sh;
}

/* Resolves a remote range in the (live) peer's PD. Returns 0 or a
 * syndrome. */
SNX_HOT int snx_resolve_remote_in(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint64_t len,
				  uint32_t need, uint8_t **dst, uint8_t *vs, int check_rights)
{
	int r;

	if (check_rights && (need & ~p->peer_rights))
		return snx_fail(vs, SOFTNIC_VSYND_QP_RIGHTS, GIC_SYND_REMOTE_ACCESS_ERR);
	snx_peer_epoch_check(p, qp->peer_map, p->peer_epoch);
	r = snx_mr_resolve_in(snx_peer_table(p, qp), &p->remote, qp->peer->pd, w->rkey, w->raddr, len,
			      need, dst);
	if (!r && qp->peer_map) {
		r = snx_peer_translate(p, qp->peer_map, w->rkey, dst);
		if (r)
			return snx_fail(vs, (uint8_t)r, GIC_SYND_REMOTE_ACCESS_ERR);
	}

	if (!r && (p->remote.access & SNX_MR_DEVICE))
		p->dev |= SNX_DEV_REMOTE;
	/* No softnic key has bit 31 set (slots are below 2^12), but a full
	 * DC address vector's dqp_dct, where an RC WQE has its rkey, has. */
	if (r == SOFTNIC_VSYND_BAD_LKEY && (w->rkey & GIC_EXTENDED_UD_AV) && !w->av_bytes)
		return snx_fail(vs, SOFTNIC_VSYND_DC_NOT_DCI, GIC_SYND_LOCAL_QP_OP_ERR);
	if (r == SOFTNIC_VSYND_BAD_LKEY)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_RKEY, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r == SOFTNIC_VSYND_LOCAL_BOUNDS)
		return snx_fail(vs, SOFTNIC_VSYND_REMOTE_BOUNDS, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r)
		return snx_fail(vs, SOFTNIC_VSYND_REMOTE_ACCESS, GIC_SYND_REMOTE_ACCESS_ERR);
	return 0;
}

/* snx_resolve_remote_in() with the peer QP's rights checked. */
GIC_HD int snx_resolve_remote(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint64_t len,
			      uint32_t need, uint8_t **dst, uint8_t *vs)
{
	return snx_resolve_remote_in(p, qp, w, len, need, dst, vs, 1);
}

/* Resolves every pointer segment (local read or, with need, write). */
SNX_HOT int snx_resolve_local(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint32_t need,
			     uint8_t *src[SOFTNIC_MAX_SGE], uint8_t *vs)
{
	for (uint32_t i = 0; i < w->num_sge; i++) {
		int r = snx_mr_resolve(p, &p->local, qp->pd, w->sge[i].lkey, w->sge[i].addr,
				       w->sge[i].len, need, &src[i]);
		if (r)
			return snx_fail(vs, (uint8_t)r, GIC_SYND_LOCAL_PROT_ERR);
		if (p->local.access & SNX_MR_DEVICE)
			p->dev |= SNX_DEV_LOCAL;
	}
	return 0;
}

/* 1 for the opcodes whose arrival completes at the responder (the plain
 * RDMA write, the common case, is the first test). */
GIC_HD int snx_opcode_has_recv(uint8_t opcode)
{
	return opcode != GIC_OPCODE_RDMA_WRITE &&
	       (opcode == GIC_OPCODE_RDMA_WRITE_IMM || opcode == GIC_OPCODE_SEND ||
		opcode == GIC_OPCODE_SEND_IMM);
}

/* 1 for SEND and SEND_IMM (no remote address: a receive WQE says where). */
GIC_HD int snx_opcode_is_send(uint8_t opcode)
{
	return opcode == GIC_OPCODE_SEND || opcode == GIC_OPCODE_SEND_IMM;
}

/* Checks a write or send (peer, keys, and the peer QP's rights unless the
 * caller knows them granted) and resolves its addresses without moving
 * data. Returns 0 or a syndrome. */
SNX_HOT int snx_prepare_write_in(snx_pass *p, snx_qp *qp, const softnic_wqe *w,
				 uint8_t *src[SOFTNIC_MAX_SGE], uint8_t **dst, uint8_t *vs,
				 int check_rights)
{
	int r = snx_check_peer(p, qp, vs);

	*dst = NULL;
	p->dev = 0;
	if (!r)
		r = snx_resolve_local(p, qp, w, 0, src, vs);
	if (!r && w->total_len && !snx_opcode_is_send(w->opcode))
		r = snx_resolve_remote_in(p, qp, w, w->total_len, SOFTNIC_ACCESS_REMOTE_WRITE, dst, vs,
					  check_rights);
	return r;
}

SNX_HOT int snx_prepare_write(snx_pass *p, snx_qp *qp, const softnic_wqe *w,
			      uint8_t *src[SOFTNIC_MAX_SGE], uint8_t **dst, uint8_t *vs)
{
	return snx_prepare_write_in(p, qp, w, src, dst, vs, 1);
}

/* Moves a prepared write's data. */
SNX_HOT void snx_move_write(const softnic_wqe *w, uint8_t *const src[SOFTNIC_MAX_SGE], uint8_t *dst)
{
	if (w->inline_len)
		snx_copy(dst, w->inline_data, w->inline_len);
	for (uint32_t i = 0; i < w->num_sge; i++) {
		snx_copy(dst, src[i], w->sge[i].len);
		dst += w->sge[i].len;
	}
}

/* A message's responder completion needs a slot of the peer's receive CQ,
 * claimed before the WQE runs (p->recv_claimed says it was). Returns 1
 * when it has one (or the peer has no receive CQ: the message then
 * fails), 0 when that CQ is full, SNX_CQ_LOST when its lock is abandoned. */
GIC_HD int snx_claim_recv(snx_pass *p, const snx_qp *qp)
{
	int got;

	if (p->link != SNX_QP_CONNECTED || !qp->peer || !qp->peer->recv_cq)
		return 1;
	got = snx_cq_claim(p->sh, qp->peer->recv_cq, 1);
	p->recv_claimed = got == 1;
	return got;
}

/* Writes a responder CQE for qp's message into the claimed slot of the
 * peer's receive CQ. */
GIC_HD void snx_complete_recv(snx_pass *p, snx_qp *qp, const softnic_wqe *w,
			      const snx_recv *r, int synd)
{
	snx_cqe_fields f;

	memset(&f, 0, sizeof(f));
	if (synd) {
		f.cqe_opcode = GIC_CQE_RESP_ERR;
		f.syndrome = (uint8_t)synd;
		p->st.error_cqes++;
	} else {
		f.cqe_opcode = w->opcode == GIC_OPCODE_SEND        ? GIC_CQE_RESP_SEND
			       : w->opcode == GIC_OPCODE_SEND_IMM ? GIC_CQE_RESP_SEND_IMM
								   : GIC_CQE_RESP_WR_IMM;
		f.imm = w->opcode == GIC_OPCODE_SEND ? 0 : w->imm;
	}
	f.vendor_syndrome = r ? r->vs : 0;
	f.qpn = qp->peer->qpn;
	f.byte_cnt = (uint32_t)w->total_len;
	f.wqe_counter = r ? r->index : 0;
	f.srqn = r ? r->srqn : 0;
	snx_cq_write(p->sh, qp->peer->recv_cq, &f, &p->st);
	p->recv_used = 1;
}

/* What a message needs from its responder's receive queue. Returns 0 with
 * *r filled (no scatter entry for softnic's implicit WRITE_IMM receive),
 * SNX_EXEC_RNR when nothing is posted, or a syndrome with *vs (the
 * responder then got an error CQE). */
enum { SNX_EXEC_RNR = -2 };

GIC_HD int snx_take_recv(snx_pass *p, snx_qp *qp, const softnic_wqe *w, snx_recv *r, uint8_t *vs)
{
	snx_qp *peer = qp->peer;
	int rc;

	/* A responder in error answers nothing: the requester's retries run
	 * out. (Checked for messages that complete at the responder only: an
	 * RDMA write, read or atomic into a QP in error still executes.) */
	if (gic_ld_acquire_sys_u32(&peer->in_error))
		return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	if (!peer->rq) {
		if (w->opcode == GIC_OPCODE_RDMA_WRITE_IMM && !(peer->flags & SOFTNIC_QP_NO_IMPLICIT_RECV)) {
			r->num_sge = 0;
			r->index = 0;
			r->srqn = 0;
			r->vs = 0;
			return 0;
		}
		return SNX_EXEC_RNR;
	}
	rc = snx_rq_take(p->sh, peer->rq, r);
	if (rc == SNX_RQ_EMPTY)
		return SNX_EXEC_RNR;
	if (rc) {
		r->vs = (uint8_t)rc;
		snx_complete_recv(p, qp, w, r, GIC_SYND_LOCAL_QP_OP_ERR);
		return snx_fail(vs, (uint8_t)rc, GIC_SYND_REMOTE_OP_ERR);
	}
	return 0;
}

/* Resolves a taken receive's scatter list in the responder's PD and MR
 * table and checks that the message fits. 0, or a syndrome with *vs after
 * the responder's error CQE. */
GIC_HD int snx_resolve_recv(snx_pass *p, snx_qp *qp, const softnic_wqe *w, snx_recv *r,
			    uint8_t *dst[SOFTNIC_MAX_SGE], uint8_t *vs)
{
	snx_mr_hit hit;
	uint64_t room = 0;

	memset(&hit, 0, sizeof(hit)); /* key 0: nothing cached */
	for (uint32_t i = 0; i < r->num_sge; i++) {
		int bad = snx_mr_resolve_in(snx_peer_table(p, qp), &hit, qp->peer->rq->pd,
					    r->sge[i].lkey, r->sge[i].addr, r->sge[i].len,
					    SOFTNIC_ACCESS_LOCAL_WRITE, &dst[i]);
		if (!bad && (hit.access & SNX_MR_DEVICE))
			bad = SOFTNIC_VSYND_DEVICE_OP;
		if (bad) {
			r->vs = SOFTNIC_VSYND_RECV_BAD_KEY;
			snx_complete_recv(p, qp, w, r, GIC_SYND_LOCAL_PROT_ERR);
			return snx_fail(vs, SOFTNIC_VSYND_RECV_BAD_KEY, GIC_SYND_REMOTE_OP_ERR);
		}
		room += r->sge[i].len;
	}
	if (snx_opcode_is_send(w->opcode) && w->total_len > room) {
		r->vs = SOFTNIC_VSYND_RECV_TOO_SMALL;
		snx_complete_recv(p, qp, w, r, GIC_SYND_LOCAL_LENGTH_ERR);
		return snx_fail(vs, SOFTNIC_VSYND_RECV_TOO_SMALL, GIC_SYND_REMOTE_INVAL_REQ_ERR);
	}
	return 0;
}

/* Copies a message (inline data or its resolved SGEs) into a receive's
 * scatter list, which snx_resolve_recv() showed is large enough. */
GIC_HD void snx_scatter(const softnic_wqe *w, uint8_t *const src[SOFTNIC_MAX_SGE],
			const snx_recv *r, uint8_t *const dst[SOFTNIC_MAX_SGE])
{
	uint32_t d = 0, doff = 0;
	uint32_t pieces = w->inline_len ? 1 : w->num_sge;

	for (uint32_t k = 0; k < pieces; k++) {
		const uint8_t *s = w->inline_len ? w->inline_data : src[k];
		uint64_t left = w->inline_len ? w->inline_len : w->sge[k].len;

		while (left) {
			uint64_t room = r->sge[d].len - doff;
			uint64_t n = left < room ? left : room;

			snx_copy(dst[d] + doff, s, n);
			s += n;
			left -= n;
			doff += (uint32_t)n;
			if (doff == r->sge[d].len) {
				d++;
				doff = 0;
			}
		}
	}
}

/* Moves a prepared write's data: by CUDA when an end is GPU memory of a
 * multi-process softnic (CPU engine), else by the engine. 0 or a syndrome. */
SNX_HOT int snx_write_data(snx_pass *p, snx_qp *qp, const softnic_wqe *w,
			   uint8_t *const src[SOFTNIC_MAX_SGE], uint8_t *dst, uint8_t *vs)
{
#if !GIC_ON_DEVICE
	if (p->dev)
		return softnic_dev_write(p->sh, qp, w, src, dst, p->dev, vs);
#else
	(void)p;
	(void)qp;
	(void)vs;
#endif
	snx_move_write(w, src, dst);
	return 0;
}

/* RDMA write. */
SNX_HOT int snx_exec_write(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *src[SOFTNIC_MAX_SGE];
	uint8_t *dst;
	int r = snx_prepare_write(p, qp, w, src, &dst, vs);

	return r ? r : snx_write_data(p, qp, w, src, dst, vs);
}

/* WRITE_IMM, SEND, SEND_IMM: messages that complete at the responder. A
 * receive is taken before any data moves, so a receiver-not-ready answer
 * leaves nothing done. */
SNX_COLD int snx_exec_message(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *src[SOFTNIC_MAX_SGE], *rdst[SOFTNIC_MAX_SGE];
	uint8_t *dst;
	snx_recv rv;
	int send = snx_opcode_is_send(w->opcode);
	int r = snx_prepare_write(p, qp, w, src, &dst, vs);

	if (!r && qp->peer_map) /* its receive queue and CQ are another process's */
		r = snx_fail(vs, SOFTNIC_VSYND_PEER_RECV, GIC_SYND_REMOTE_OP_ERR);
	if (!r && !qp->peer->recv_cq)
		r = snx_fail(vs, SOFTNIC_VSYND_NO_RECV_CQ, GIC_SYND_RNR_RETRY_EXC_ERR);
	if (!r)
		r = snx_take_recv(p, qp, w, &rv, vs);
	if (!r)
		r = snx_resolve_recv(p, qp, w, &rv, rdst, vs);
	if (!r && send && p->dev) {
		snx_complete_recv(p, qp, w, &rv, GIC_SYND_LOCAL_PROT_ERR);
		r = snx_fail(vs, SOFTNIC_VSYND_DEVICE_OP, GIC_SYND_REMOTE_OP_ERR);
	}
	if (!r && send)
		snx_scatter(w, src, &rv, rdst);
	else if (!r)
		r = snx_write_data(p, qp, w, src, dst, vs);
	if (r)
		return r;
	/* Into the slot snx_claim_recv() claimed; the receiver learns of the
	 * message only after its data. */
	snx_complete_recv(p, qp, w, &rv, 0);
	return 0;
}

/* RDMA read: the peer's range lands in the local scatter list. */
SNX_COLD int snx_exec_read(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *dst[SOFTNIC_MAX_SGE];
	uint8_t *src = NULL;
	int r = snx_check_peer(p, qp, vs);

	p->dev = 0;
	if (!r)
		r = snx_resolve_local(p, qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, dst, vs);
	if (!r && w->total_len)
		r = snx_resolve_remote(p, qp, w, w->total_len, SOFTNIC_ACCESS_REMOTE_READ, &src, vs);
	if (r)
		return r;
#if !GIC_ON_DEVICE
	if (p->dev)
		return softnic_dev_read(p->sh, qp, w, dst, src, p->dev, vs);
#endif
	for (uint32_t i = 0; i < w->num_sge; i++) {
		snx_copy(dst[i], src, w->sge[i].len);
		src += w->sge[i].len;
	}
	return 0;
}

/* Adds b to a field by field: field_boundary marks each field's top bit,
 * and no carry leaves its field (boundary 0: one plain add). */
GIC_HD uint64_t snx_field_add(uint64_t a, uint64_t b, uint64_t boundary)
{
	uint64_t s = (a & ~boundary) + (b & ~boundary);

	return (s & ~boundary) | ((a ^ b ^ s) & boundary);
}

/* The value an atomic leaves in a target that held old (old itself when
 * a compare fails). */
GIC_HD uint64_t snx_atomic_apply(const softnic_wqe *w, uint64_t old)
{
	switch (w->opcode) {
	case GIC_OPCODE_ATOMIC_FA:
		return old + w->atomic_add;
	case GIC_OPCODE_ATOMIC_CS:
		return old == w->atomic_cmp ? w->atomic_add : old;
	case GIC_OPCODE_ATOMIC_MASKED_CS:
		if ((old ^ w->atomic_cmp) & w->atomic_cmp_mask)
			return old;
		return (old & ~w->atomic_swap_mask) | (w->atomic_add & w->atomic_swap_mask);
	default: /* GIC_OPCODE_ATOMIC_MASKED_FA */
		return snx_field_add(old, w->atomic_add, w->atomic_cmp);
	}
}

enum { SNX_ATOMIC_TRIES = 1 << 20 }; /* CAS attempts before a masked atomic gives up */

/* Compare-and-swap of a 4- or 8-byte target; returns the value seen. */
GIC_HD uint64_t snx_cas_sized(void *t, uint32_t size, uint64_t expect, uint64_t desired)
{
	if (size == 8)
		return gic_atomic_cas_sc_sys_u64((uint64_t *)t, expect, desired);
	return gic_atomic_cas_sc_sys_u32((uint32_t *)t, (uint32_t)expect, (uint32_t)desired);
}

/* Runs an atomic on its target t; *old gets the value it held. 0, or
 * SOFTNIC_VSYND_ATOMIC_CONTENDED. Fetch-add and compare-swap of 8 bytes
 * are one device atomic each; masked ones a compare-swap loop. */
GIC_HD int snx_atomic_run(const softnic_wqe *w, void *t, uint64_t *old)
{
	uint32_t size = w->atomic_size;
	uint64_t mask = size == 8 ? ~0ull : 0xffffffffull, cur;

	if (w->opcode == GIC_OPCODE_ATOMIC_FA) {
		*old = gic_atomic_add_sc_sys_u64((uint64_t *)t, w->atomic_add);
		return 0;
	}
	if (w->opcode == GIC_OPCODE_ATOMIC_CS) {
		*old = gic_atomic_cas_sc_sys_u64((uint64_t *)t, w->atomic_cmp, w->atomic_add);
		return 0;
	}
	cur = snx_cas_sized(t, size, 0, 0); /* an atomic read */
	for (uint32_t i = 0; i < SNX_ATOMIC_TRIES; i++) {
		uint64_t want = snx_atomic_apply(w, cur) & mask, seen;

		if (want == cur)
			break; /* a failed compare, or no change: nothing to write */
		seen = snx_cas_sized(t, size, cur, want);
		if (seen == cur)
			break;
		cur = seen;
		if (i + 1 == SNX_ATOMIC_TRIES)
			return SOFTNIC_VSYND_ATOMIC_CONTENDED;
	}
	*old = cur;
	return 0;
}

/* Lands an atomic's old value at out as a ConnectX returns it: host order
 * for 8 bytes, big-endian for 4. */
GIC_HD void snx_atomic_result(uint64_t old, uint32_t size, uint8_t *out)
{
	uint32_t be = gic_htobe32((uint32_t)old);

	memcpy(out, size == 8 ? (const void *)&old : (const void *)&be, size);
}

/* Every atomic. The target is read and written in host byte order; the
 * old value lands in host order for 8 bytes and big-endian for 4, as a
 * ConnectX returns them (NVSHMEM byte-swaps 4-byte results). */
SNX_COLD int snx_exec_atomic(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *res[SOFTNIC_MAX_SGE];
	uint8_t *dst = NULL;
	uint32_t size = w->atomic_size;
	int r = snx_check_peer(p, qp, vs);

	p->dev = 0;
	if (!r && (w->num_sge != 1 || w->sge[0].len != size))
		r = snx_fail(vs, SOFTNIC_VSYND_BAD_LENGTH, GIC_SYND_LOCAL_LENGTH_ERR);
	if (!r)
		r = snx_resolve_local(p, qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, res, vs);
	if (!r && (w->raddr & (size - 1)))
		r = snx_fail(vs, SOFTNIC_VSYND_ATOMIC_ALIGN, GIC_SYND_REMOTE_INVAL_REQ_ERR);
	if (!r)
		r = snx_resolve_remote(p, qp, w, size, SOFTNIC_ACCESS_REMOTE_ATOMIC, &dst, vs);
	if (r)
		return r;
#if !GIC_ON_DEVICE
	if (p->dev)
		return softnic_dev_atomic(p->sh, qp, w, dst, res[0], p->dev, vs);
#endif
	{
		uint64_t old = 0;

		r = snx_atomic_run(w, dst, &old);
		if (r)
			return snx_fail(vs, (uint8_t)r, GIC_SYND_REMOTE_OP_ERR);
		snx_atomic_result(old, size, res[0]);
	}
	return 0;
}

/* DUMP: the NIC reads the buffers the data segments name (lkey, PD and
 * bounds checked as for a send's gather list) and sends nothing; what it
 * read goes nowhere, so softnic checks and does not copy. */
SNX_COLD int snx_exec_dump(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *src[SOFTNIC_MAX_SGE];

	return snx_resolve_local(p, qp, w, 0, src, vs);
}

/* Copies the WQE at BB position pos (it may wrap) into buf. */
GIC_HD void snx_copy_wqe(const snx_qp *qp, uint64_t pos, uint32_t nbb, uint8_t *buf)
{
	for (uint32_t i = 0; i < nbb; i++)
		snx_copy(buf + i * GIC_SEND_WQE_BB,
			 qp->sq_buf + ((pos + i) & (qp->bb_cnt - 1)) * GIC_SEND_WQE_BB,
			 GIC_SEND_WQE_BB);
}

/* Executes one decoded WQE; returns 0, a syndrome (with *vs) or
 * SNX_EXEC_RNR. */
SNX_HOT int snx_execute(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint16_t slot_index,
		       uint8_t *vs)
{
	if (p->sh->strict && w->wqe_index != slot_index)
		return snx_fail(vs, SOFTNIC_VSYND_STRICT_WQE_INDEX, GIC_SYND_LOCAL_QP_OP_ERR);
	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_RDMA_READ:
		return snx_exec_read(p, qp, w, vs);
	case GIC_OPCODE_ATOMIC_FA:
	case GIC_OPCODE_ATOMIC_CS:
	case GIC_OPCODE_ATOMIC_MASKED_FA:
	case GIC_OPCODE_ATOMIC_MASKED_CS:
		return snx_exec_atomic(p, qp, w, vs);
	case GIC_OPCODE_RDMA_WRITE:
		return snx_exec_write(p, qp, w, vs);
	case GIC_OPCODE_DUMP:
		return snx_exec_dump(p, qp, w, vs);
	default: /* WRITE_IMM, SEND, SEND_IMM (the decoder let nothing else by) */
		return snx_exec_message(p, qp, w, vs);
	}
}

/* The outcome of running the WQE at qp->cons: done (or a syndrome), or it
 * must wait: a CQ is full (STALL), or its receiver-not-ready timer runs
 * (WAIT). Nothing was done in either case. */
enum { SNX_RUN_OK = 0, SNX_RUN_STALL = -1, SNX_RUN_WAIT = -3 };

/* The responder had no receive for the WQE at cons: retry it after the
 * responder's RNR timer, rnr_retry times (7: forever), then fail. */
SNX_COLD int snx_rnr(snx_pass *p, snx_qp *qp, uint8_t *vs)
{
	p->st.rnr_naks++;
	if (qp->rnr_retry != 7 && qp->rnr_tries >= qp->rnr_retry) {
		qp->rnr_tries = 0;
		return snx_fail(vs, SOFTNIC_VSYND_RNR, GIC_SYND_RNR_RETRY_EXC_ERR);
	}
	qp->rnr_tries++;
	qp->rnr_next_ns = gic_now_ns() + qp->peer->rnr_timer_ns;
	return SNX_RUN_WAIT;
}

/* A message that completes at the responder: waits out its receiver-
 * not-ready timer, claims the responder's receive-CQ slot, executes, and
 * gives the slot back when no responder CQE was written. */
SNX_COLD int snx_run_message(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	int got, synd;

	if (qp->rnr_tries && gic_now_ns() < qp->rnr_next_ns)
		return SNX_RUN_WAIT;
	p->recv_claimed = p->recv_used = 0;
	got = snx_claim_recv(p, qp);
	if (!got)
		return SNX_RUN_STALL;
	if (got == SNX_CQ_LOST) /* the peer died inside its CQ's lock */
		return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	synd = snx_execute(p, qp, w, (uint16_t)qp->cons, vs);
	if (p->recv_claimed && !p->recv_used)
		snx_cq_unclaim(qp->peer->recv_cq); /* no responder CQE was written */
	if (synd == SNX_EXEC_RNR)
		synd = snx_rnr(p, qp, vs);
	else if (!synd)
		qp->rnr_tries = 0;
	return synd;
}

/* ------------------------------------------------------------------ */
/* DC: a DCI's WQE names its DCT in its address vector. */

/* The QP of sh numbered num, or NULL. A DCI keeps its last answer while
 * the QP table's generation stays the same: a QP that goes bumps it (a
 * CPU engine's destroy then waits for every pass before freeing it; a GPU
 * engine's QP state lives until close). */
GIC_HD snx_qp *snx_dc_lookup(snx_shared *sh, snx_qp *dci, uint32_t num)
{
	uint32_t gen = gic_ld_acquire_sys_u32(&sh->table_gen), n;
	snx_qp *found = NULL;

	if (dci->dc_cache && dci->dc_cache_gen == gen && dci->dc_cache_num == num)
		return dci->dc_cache;
	n = gic_ld_acquire_sys_u32(&sh->nqp_slots);
	for (uint32_t i = 0; i < n && i < SNX_MAX_QP && !found; i++) {
		snx_qp *q = (snx_qp *)(uintptr_t)gic_ld_acquire_sys_u64((const uint64_t *)&sh->qps[i]);

		if (q && q->qpn == num)
			found = q;
	}
	dci->dc_cache = found;
	dci->dc_cache_num = num;
	dci->dc_cache_gen = gen;
	return found;
}

/* Makes the DCT a DCI's WQE names its responder for that WQE: checks
 * that it exists, is a DCT and takes the AV's key, then points qp->peer at
 * it and sets the pass's link and rights as a connected QP's. Returns 0
 * or a syndrome (a wrong key: REMOTE_ACCESS_ERR; no DCT there: a
 * ConnectX's requester would retry until TRANSPORT_RETRY_EXC_ERR). */
SNX_COLD int snx_dc_attach(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	snx_qp *dct = snx_dc_lookup(p->sh, qp, w->dct_num);

	if (!dct)
		return snx_fail(vs, SOFTNIC_VSYND_DC_NO_DCT, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	if (!(dct->flags & SOFTNIC_QP_DCT))
		return snx_fail(vs, SOFTNIC_VSYND_DC_NOT_DCT, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	if (dct->dc_key != w->dc_key)
		return snx_fail(vs, SOFTNIC_VSYND_DC_BAD_KEY, GIC_SYND_REMOTE_ACCESS_ERR);
	qp->peer = dct;
	qp->peer_sh = NULL;
	p->link = SNX_QP_CONNECTED;
	p->peer_rights = gic_ld_relaxed_sys_u32(&dct->rights);
	return 0;
}

/* A WQE of a QP whose responder is set (an RC QP's peer, a DCI's DCT). */
SNX_HOT int snx_run_connected(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	if (snx_opcode_has_recv(w->opcode))
		return snx_run_message(p, qp, w, vs);
	return snx_execute(p, qp, w, (uint16_t)qp->cons, vs);
}

/* A DCI's WQE: against the DCT it names, then the pass is the DCI's
 * again (unconnected; the GPU engine's lanes agree on that). DUMP is
 * local, and a NOP carries no AV: they name no DCT. */
SNX_COLD int snx_run_dc(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint32_t link = p->link, rights = p->peer_rights;
	int r;

	if (!w->av_bytes || w->opcode == GIC_OPCODE_DUMP)
		return snx_execute(p, qp, w, (uint16_t)qp->cons, vs);
	r = snx_dc_attach(p, qp, w, vs);
	if (!r)
		r = snx_run_connected(p, qp, w, vs);
	p->link = link;
	p->peer_rights = rights;
	return r;
}

/* Claims the send-CQ slot (signaled WQEs, once), then executes. Returns as
 * snx_run_wqe(). */
SNX_HOT int snx_claim_and_execute(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs,
				 int *claimed)
{
	if ((w->fm_ce_se & GIC_CTRL_CQ_UPDATE) && !*claimed) {
		int got = snx_cq_claim(p->sh, qp->send_cq, 1);

		if (!got)
			return SNX_RUN_STALL;
		/* Its send CQ is broken: another process died inside its
		 * lock. The QP fails (no CQE can say so). */
		if (got == SNX_CQ_LOST)
			return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
		*claimed = 1;
	}
	if (qp->flags & SOFTNIC_QP_DCI)
		return snx_run_dc(p, qp, w, vs);
	return snx_run_connected(p, qp, w, vs);
}

/* Decodes and runs the WQE of nbb BBs at qp->cons into *w, with a send-CQ
 * slot claimed when *claimed says so. Returns SNX_RUN_OK, a syndrome (with
 * *vs), SNX_RUN_STALL or SNX_RUN_WAIT (nothing was done). */
SNX_HOT int snx_run_wqe(snx_pass *p, snx_qp *qp, uint32_t nbb, softnic_wqe *w, uint8_t *vs,
		       int *claimed)
{
	uint8_t buf[GIC_WQE_MAX_BB * GIC_SEND_WQE_BB];
	int synd;

	snx_copy_wqe(qp, qp->cons, nbb, buf);
	if (qp->flags & SOFTNIC_QP_DCI)
		synd = snx_decode_dci_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, w, vs);
	else
		synd = snx_decode_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, w, vs);
	if (qp->in_error && qp->pending_synd) {
		/* The first WQE after a doorbell error carries that error
		 * (snx_step clears it once its CQE is written). */
		synd = snx_fail(vs, qp->pending_vs, qp->pending_synd);
	} else if (qp->in_error) {
		synd = snx_fail(vs, SOFTNIC_VSYND_NONE, GIC_SYND_WR_FLUSH_ERR);
	} else if (!synd) {
		synd = snx_claim_and_execute(p, qp, w, vs, claimed);
	}
	return synd;
}

/* Completes the WQE at qp->cons as run_wqe's outcome says: an error CQE
 * (which needs a slot: 0 when none is free), or a CQE when signaled. */
SNX_HOT int snx_complete(snx_pass *p, snx_qp *qp, const softnic_wqe *w, int synd, uint8_t vs,
			int claimed)
{
	uint16_t slot_index = (uint16_t)qp->cons;

	if (synd) {
		/* SNX_CQ_LOST: the error is recorded; its CQE is lost. */
		if (!claimed && snx_cq_claim(p->sh, qp->send_cq, 1) == 0)
			return 0;
		if (synd != GIC_SYND_WR_FLUSH_ERR && !qp->in_error && w->av_bytes) {
			qp->err.av_bytes = w->av_bytes; /* published by snx_qp_set_error */
			qp->err.dct_num = w->dct_num;
		}
		if (synd != GIC_SYND_WR_FLUSH_ERR)
			snx_qp_set_error(qp, slot_index, w->opcode, synd, vs, &p->st);
		snx_complete_error(p->sh, qp, slot_index, w->opcode, synd, vs, &p->st);
	} else if (w->fm_ce_se & GIC_CTRL_CQ_UPDATE) {
		snx_cqe_fields f;

		memset(&f, 0, sizeof(f));
		f.cqe_opcode = GIC_CQE_REQ;
		f.wqe_opcode = w->opcode;
		f.wqe_counter = slot_index;
		f.qpn = qp->qpn;
		f.byte_cnt = (uint32_t)w->total_len; /* an atomic's: its operand size */
		snx_cq_write(p->sh, qp->send_cq, &f, &p->st);
	} else if (claimed) {
		snx_cq_unclaim(qp->send_cq);
	}
	return 1;
}

/* Runs the WQE at qp->cons. Returns 1 when it was consumed, 0 when the QP
 * must wait (a CQ is full, or a receiver-not-ready timer runs). */
SNX_HOT int snx_step(snx_pass *p, snx_qp *qp)
{
	const gic_ctrl_seg *c = (const gic_ctrl_seg *)(qp->sq_buf +
		(qp->cons & (qp->bb_cnt - 1)) * GIC_SEND_WQE_BB);
	uint32_t nbb = gic_wqe_bb_count(c->qpn_ds_be);
	softnic_wqe w;
	uint8_t vs = 0;
	int synd, claimed = 0;

	if (qp->cons + nbb > qp->target) {
		/* The doorbell record covers only part of this WQE. */
		nbb = (uint32_t)(qp->target - qp->cons);
		memset(&w, 0, sizeof(w));
		w.opcode = (uint8_t)gic_be32toh(c->opmod_idx_opcode_be);
		synd = snx_fail(&vs, SOFTNIC_VSYND_WQE_PAST_DBREC, GIC_SYND_LOCAL_QP_OP_ERR);
	} else {
		synd = snx_run_wqe(p, qp, nbb, &w, &vs, &claimed);
	}
	if (synd == SNX_RUN_STALL || synd == SNX_RUN_WAIT ||
	    !snx_complete(p, qp, &w, synd, vs, claimed)) {
		if ((synd == SNX_RUN_STALL || synd == SNX_RUN_WAIT) && claimed)
			snx_cq_unclaim(qp->send_cq);
		if (synd != SNX_RUN_WAIT)
			p->st.cq_full_stalls++;
		return 0;
	}
	if (qp->pending_synd && synd == qp->pending_synd && vs == qp->pending_vs)
		qp->pending_synd = 0;
	qp->cons += nbb;
	p->st.wqes_executed++;
	return 1;
}

/* ------------------------------------------------------------------ */
/* Doorbells. Every doorbell write is an event: the engine reads the
 * doorbell record when the doorbell word changes, and while the doorbell
 * names a position the record does not cover yet it keeps re-reading the
 * record on every pass (the watch), until it does or the watch time
 * passes. So a submitter that rings before it writes the record (DOCA
 * GPUNetIO rings early, then writes the record, then rings the same value
 * again, which is no change of the word) still has its WQEs executed. */

/* The record value that covers doorbell (w0, w1): a doorbell carrying a
 * producer index (ds 0: NVSHMEM, DOCA, gic_doorbell_value) is covered at
 * that index; a WQE's own ctrl segment (ds > 0: rdma-core's doorbell, a
 * BlueFlame copy) once the record is past that WQE's start. */
GIC_HD uint16_t snx_db_need(uint32_t w0, uint32_t w1)
{
	return (uint16_t)(((w0 >> 8) & 0xffffu) + ((w1 & 0xffu) ? 1u : 0u));
}

/* What a pass's start reads of the QP (snx_pass_begin_view), loaded
 * together after the doorbell's acquire: independent loads, issued before
 * any is used (one round trip on the GPU engine, where every later load of
 * the record would be one more after the doorbell record's acquire, which
 * empties the SM's L1). The progress fields are the engine's own (only the
 * QP's engine thread writes them), the others fixed while the QP is in the
 * table, but link and in_error, which the host may move: they are read
 * here once per pass. The pass's start keeps the view up to date with what
 * it writes, so that its caller can go on from it. */
typedef struct snx_qp_view {
	uint64_t last_db, cons, target;
	uint32_t *dbrec;
	uint8_t *sq_buf;
	snx_qp *peer;
	snx_shared *peer_sh;
	const snx_peer_map *peer_map;
	snx_cq *send_cq;
	uint32_t flags, qpn, bb_cnt, pd;
	uint32_t link, in_error;
	uint32_t peer_pd;      /* the peer's pd (valid when link says connected) */
	uint32_t peer_epoch;   /* another process's peer: its table's MR epoch */
	uint32_t rec_raw;      /* the doorbell record as loaded early (rec_early) */
	uint32_t flag_word;    /* the QP's pending_synd .. pad bytes as one load
				* (SNX_QP_FLAG_WORD); pending_synd and watching
				* are taken from it by snx_view_flags() */
	uint16_t watch_need;
	uint8_t pending_synd, watching;
	uint8_t rec_early;     /* rec_raw holds the record, read with acquire
				* beside the view's loads (snx_pass_begin_in) */
} snx_qp_view;

/* The aligned 32-bit word of snx_qp that holds pending_synd, pending_vs,
 * watching and a pad byte: the view loads it as one word, so that the GPU
 * engine can pass it through an empty asm (snx_view_after_issue) and
 * take the bytes from it only after the doorbell record's load has gone
 * out. Byte offsets within it come from offsetof, so no byte order is
 * assumed. */
#define SNX_QP_FLAG_WORD offsetof(snx_qp, pending_synd)
GIC_STATIC_ASSERT(SNX_QP_FLAG_WORD % 4 == 0, "pending_synd starts an aligned word");
GIC_STATIC_ASSERT(offsetof(snx_qp, watching) - SNX_QP_FLAG_WORD < 4,
		  "watching shares pending_synd's word");

/* pending_synd and watching from the view's flag_word. */
GIC_HD void snx_view_flags(snx_qp_view *v)
{
	uint8_t b[4];

	memcpy(b, &v->flag_word, sizeof(b));
	v->pending_synd = b[0];
	v->watching = b[offsetof(snx_qp, watching) - SNX_QP_FLAG_WORD];
}

/* Loads the view of qp (see snx_qp_view); the caller read the doorbell
 * with acquire semantics before, so link and in_error are as of then.
 * pending_synd and watching are set by snx_view_flags() after it. */
GIC_HD void snx_qp_view_load(snx_qp *qp, snx_qp_view *v)
{
	v->last_db = qp->last_db;
	v->cons = qp->cons;
	v->target = qp->target;
	memcpy(&v->flag_word, __builtin_assume_aligned((const char *)qp + SNX_QP_FLAG_WORD, 4),
	       sizeof(v->flag_word));
	v->watch_need = qp->watch_need;
	v->dbrec = qp->dbrec;
	v->sq_buf = qp->sq_buf;
	v->peer = qp->peer;
	v->peer_sh = qp->peer_sh;
	v->peer_map = qp->peer_map;
	v->peer_epoch = 0; /* loaded with the peer's rights when peer_map is set */
	v->send_cq = qp->send_cq;
	v->flags = qp->flags;
	v->qpn = qp->qpn;
	v->bb_cnt = qp->bb_cnt;
	v->pd = qp->pd;
	v->in_error = gic_ld_relaxed_sys_u32(&qp->in_error);
	v->link = gic_ld_relaxed_sys_u32(&qp->link);
}

/* The BBs a doorbell record value rec (16 bits, host order) puts past a
 * QP's target, with cons its position and bb_cnt its ring: *ahead.
 * Returns 0, or SOFTNIC_VSYND_BAD_DBREC for a record that moved back or
 * past the ring. */
GIC_HD uint8_t snx_record_ahead(uint32_t rec, uint64_t target, uint64_t cons, uint32_t bb_cnt,
				uint16_t *ahead)
{
	*ahead = (uint16_t)(rec - (uint16_t)target);
	return target + *ahead - cons > bb_cnt ? SOFTNIC_VSYND_BAD_DBREC : 0;
}

/* Reads the doorbell record into *rec and moves the target to it. Returns
 * 0, or SOFTNIC_VSYND_BAD_DBREC (target unmoved) for a record that moved
 * back or past the ring. The record's acquire orders this pass's WQE
 * reads after it; target, cons and bb_cnt come from the view (the
 * engine's own fields), not from the record again. */
GIC_HD uint8_t snx_take_record(snx_pass *p, snx_qp *qp, snx_qp_view *v, uint32_t *rec)
{
	uint16_t ahead;
	uint32_t raw = v->rec_early ? v->rec_raw : snx_ld_acquire_u32_scope(p->gpu_scope, v->dbrec);

	v->rec_early = 0; /* used once: a later read in the pass loads again */
	*rec = gic_be32toh(raw) & 0xffffu;
	if (snx_record_ahead(*rec, v->target, v->cons, v->bb_cnt, &ahead))
		return SOFTNIC_VSYND_BAD_DBREC;
	v->target += ahead;
	qp->target = v->target;
	return 0;
}

/* A doorbell protocol error moves the QP to error; the first WQE it
 * announced (or, with none, a CQE of its own) completes with it. */
GIC_HD void snx_doorbell_error(snx_pass *p, snx_qp *qp, snx_qp_view *v, uint8_t vs,
			       uint16_t db_index, uint32_t rec)
{
	if (!qp->in_error) {
		qp->pending_synd = GIC_SYND_LOCAL_QP_OP_ERR;
		qp->pending_vs = vs;
		qp->err.has_doorbell = 1;
		qp->err.db_index = db_index;
		qp->err.dbrec = rec;
		qp->err.executed = (uint32_t)(v->cons & 0xffff);
		v->pending_synd = GIC_SYND_LOCAL_QP_OP_ERR;
	}
	snx_qp_set_error(qp, (uint16_t)v->cons, 0, GIC_SYND_LOCAL_QP_OP_ERR, vs, &p->st);
	v->in_error = 1;
}

/* qp->watching: not at all, on every pass (for db_watch_ns from the
 * doorbell), or, after that time in lenient mode, once per
 * SNX_WATCH_SLOW_NS for as long as the doorbell stays uncovered (the
 * doorbell a submitter rings again after writing the record may carry the
 * same value, which is no change of the word to see). */
enum { SNX_WATCH_OFF = 0, SNX_WATCH_FAST = 1, SNX_WATCH_SLOW = 2 };
#define SNX_WATCH_SLOW_NS 1000000ull

/* Sets the watch state (the QP's and the view's). */
GIC_HD void snx_watch_set(snx_qp *qp, snx_qp_view *v, uint8_t state)
{
	qp->watching = state;
	v->watching = state;
}

/* Starts, keeps or ends the watch for a doorbell that needs record value
 * need. Stores only what changes: the common doorbell is covered, with no
 * watch before it. */
GIC_HD void snx_watch_update(snx_pass *p, snx_qp *qp, snx_qp_view *v, uint16_t need)
{
	uint16_t gap = (uint16_t)(need - (uint16_t)v->target);

	if (!gap || gap > v->bb_cnt) { /* covered (or behind: an old doorbell) */
		if (v->watching != SNX_WATCH_OFF)
			snx_watch_set(qp, v, SNX_WATCH_OFF);
		return;
	}
	if (v->watching == SNX_WATCH_OFF || need != v->watch_need) {
		snx_watch_set(qp, v, SNX_WATCH_FAST);
		qp->watch_deadline = gic_now_ns() + p->sh->db_watch_ns;
		p->st.doorbell_watches++;
	}
	qp->watch_need = need;
	v->watch_need = need;
}

/* SOFTNIC_QP_DB_INDEX: a producer-index doorbell of this QP moves
 * qp->target to its index by itself (a ConnectX's doorbell write). */
GIC_HD void snx_take_db_index(snx_pass *p, snx_qp *qp, snx_qp_view *v, uint32_t w0, uint32_t w1)
{
	uint16_t need = snx_db_need(w0, w1), ahead = (uint16_t)(need - (uint16_t)v->target);

	if (v->target + ahead - v->cons > v->bb_cnt) {
		snx_doorbell_error(p, qp, v, SOFTNIC_VSYND_BAD_DBREC, need, need);
		return;
	}
	v->target += ahead;
	qp->target = v->target;
	if (v->watching != SNX_WATCH_OFF)
		snx_watch_set(qp, v, SNX_WATCH_OFF);
}

/* A changed doorbell word: checks it and moves the target. */
GIC_HD void snx_take_doorbell(snx_pass *p, snx_qp *qp, snx_qp_view *v, uint64_t db)
{
	uint32_t w0 = gic_be32toh((uint32_t)db), w1 = gic_be32toh((uint32_t)(db >> 32)), rec;
	int foreign = (w1 >> 8) != v->qpn;
	uint8_t vs;

	if ((v->flags & SOFTNIC_QP_DB_INDEX) && !foreign && !(w1 & 0xffu)) {
		snx_take_db_index(p, qp, v, w0, w1);
		return;
	}
	vs = snx_take_record(p, qp, v, &rec);

	if (!vs && foreign && (v->flags & SOFTNIC_QP_SHARED_DB))
		return; /* another QP's doorbell on a shared register: the record is ours */
	if (!vs && p->sh->strict && foreign)
		vs = SOFTNIC_VSYND_STRICT_DB_QPN;
	if (vs) {
		snx_watch_set(qp, v, SNX_WATCH_OFF);
		snx_doorbell_error(p, qp, v, vs, (uint16_t)(w0 >> 8), rec);
		return;
	}
	snx_watch_update(p, qp, v, snx_db_need(w0, w1));
}

/* A pass over a watched QP whose doorbell word did not change: re-reads
 * the record. When the watch time has passed, strict mode reports the
 * doorbell the record never covered; lenient mode watches on, slowly. */
SNX_PASS_COLD void snx_watch_poll(snx_pass *p, snx_qp *qp, snx_qp_view *v)
{
	uint32_t rec;
	uint8_t vs;
	uint64_t now;

	if (v->watching == SNX_WATCH_SLOW && gic_now_ns() < qp->watch_deadline)
		return;
	vs = snx_take_record(p, qp, v, &rec);
	if (vs) {
		snx_watch_set(qp, v, SNX_WATCH_OFF);
		snx_doorbell_error(p, qp, v, vs, v->watch_need, rec);
		return;
	}
	snx_watch_update(p, qp, v, v->watch_need);
	now = v->watching ? gic_now_ns() : 0;
	if (!v->watching || now <= qp->watch_deadline)
		return;
	if (p->sh->strict && v->watching == SNX_WATCH_FAST) {
		snx_watch_set(qp, v, SNX_WATCH_OFF);
		snx_doorbell_error(p, qp, v, SOFTNIC_VSYND_STRICT_DB_AHEAD, v->watch_need, rec);
		return;
	}
	snx_watch_set(qp, v, SNX_WATCH_SLOW);
	qp->watch_deadline = now + SNX_WATCH_SLOW_NS;
}

/* A doorbell error with no WQE to carry it gets a CQE of its own, once a
 * slot is free. */
GIC_HD void snx_report_orphan_error(snx_pass *p, snx_qp *qp)
{
	if (!qp->pending_synd || qp->cons < qp->target ||
	    (qp->pending_vs != SOFTNIC_VSYND_BAD_DBREC &&
	     qp->pending_vs != SOFTNIC_VSYND_STRICT_DB_AHEAD))
		return;
	if (snx_cq_claim(p->sh, qp->send_cq, 1) != 0) { /* SNX_CQ_LOST: the CQE is lost */
		snx_complete_error(p->sh, qp, (uint16_t)qp->cons, 0, qp->pending_synd, qp->pending_vs,
				   &p->st);
		qp->pending_synd = 0;
	}
}

/* ------------------------------------------------------------------ */
/* Passes. */

/* The GPU engine: the view's fields that the pass's idle test reads
 * (flag_word: pending_synd and watching, split after this), passed through an empty asm after the record's acquire load (ordered
 * after it, as both are volatile), so that the compiler computes nothing
 * from them, and so waits for none of their loads, before that load has
 * gone out. No instruction; the host engine needs nothing. */
GIC_HD void snx_view_after_issue(snx_qp_view *v)
{
#ifdef __CUDA_ARCH__
	asm volatile("" : "+l"(v->last_db), "+l"(v->cons), "+l"(v->target), "+r"(v->in_error),
		     "+r"(v->flags), "+r"(v->flag_word));
#else
	(void)v;
#endif
}

/* The first part of snx_pass_begin_in(): the view, the MR epoch and,
 * with dbrec, the doorbell record's acquire load, all issued before any
 * of them is used (one round trip on the GPU engine). Returns the epoch.
 * The GPU engine issues its first WQE read between this and
 * snx_pass_begin_rest(), right after the record's acquire. */
GIC_HD uint32_t snx_pass_begin_load(snx_pass *p, snx_qp *qp, snx_qp_view *v,
				    const uint32_t *dbrec)
{
	uint32_t epoch;

	/* After the doorbell's acquire: a deregistration that happened
	 * before the doorbell shows here, as do the link and in_error. */
	snx_qp_view_load(qp, v);
	epoch = gic_ld_relaxed_sys_u32(&p->sh->mr_epoch);
	v->rec_early = 0;
	if (dbrec) {
		/* Orders this pass's WQE reads after the record (and so after
		 * the submitter's WQE writes that its release published);
		 * issued before any of the view's loads is used. */
		v->rec_raw = snx_ld_acquire_u32_scope(p->gpu_scope, dbrec);
		v->rec_early = 1;
		snx_view_after_issue(v);
	} else {
		v->rec_raw = 0; /* never read without rec_early (a compiler cannot tell) */
	}
	snx_view_flags(v); /* after the asm: its byte extracts wait for the view */
	return epoch;
}

/* The rest of snx_pass_begin_in(), after snx_pass_begin_load() returned
 * the MR epoch: the idle test, then the doorbell or the watch. peer_here:
 * the peer's rights and pd are loaded here (else the caller loads them,
 * snx_pass_peer_load; the GPU engine, which passes a constant 0, so that
 * no load of them is compiled into its pass start). */
GIC_HD int snx_pass_begin_rest(snx_pass *p, snx_qp *qp, uint64_t db, snx_qp_view *v,
			       uint32_t epoch, int peer_here)
{
	snx_shared *sh = p->sh;
	uint32_t rights = 0, peer_pd = 0;

	if (db == v->last_db && v->cons == v->target && !v->pending_synd && !v->watching &&
	    !(v->in_error && snx_rq_flush_due(sh, qp)))
		return 0;
	if (v->flags & SOFTNIC_QP_DCT) {
		qp->last_db = db; /* a DCT executes no WQE: its doorbell is ignored */
		return 0;
	}
	memset(&p->st, 0, sizeof(p->st));
	if (epoch != p->mr_epoch) {
		gic_fence_acquire_sys(); /* orders the table reads after the epoch */
		p->mr_epoch = epoch;
		p->remote.key = 0;
		p->local.key = 0;
	}
	p->link = v->link;
	/* The peer's rights as of this pass (a change shows at the next one,
	 * as a NIC's cached QP context); the peer pointer is valid while the
	 * link says connected (a CPU engine holds its lock, a GPU engine's
	 * state lives until close). Loaded before the doorbell record's
	 * acquire (issued in program order before it), so that the loads
	 * overlap; pd is fixed for the peer's life. */
	if (peer_here && v->link == SNX_QP_CONNECTED && v->peer) {
		rights = gic_ld_relaxed_sys_u32(&v->peer->rights);
		peer_pd = v->peer->pd;
		if (v->peer_map)
			v->peer_epoch = gic_ld_relaxed_sys_u32(&v->peer_sh->mr_epoch);
	}
	if (db != v->last_db) {
		qp->last_db = db;
		v->last_db = db;
		snx_take_doorbell(p, qp, v, db);
	} else if (v->watching) {
		snx_watch_poll(p, qp, v);
	}
	p->peer_rights = rights;
	p->peer_epoch = v->peer_epoch;
	v->peer_pd = peer_pd;
	return 1;
}

/* Starts a pass over qp with a pass record from snx_pass_init(), given
 * the doorbell word db that the calling thread read with acquire semantics
 * (snx_ld_acquire_u64): loads the view *v (the QP's fields), the MR epoch,
 * then the peer's rights and pd beside the doorbell record's acquire load.
 * Returns 0 when there is nothing to do; else *v is the QP as the pass
 * found it and left it. Two memory round trips on the GPU engine: the
 * view with the epoch, then the record with the peer's fields.
 *
 * dbrec (the GPU engine): the QP's doorbell record, which the caller keeps
 * beside its doorbell pointer (qp->dbrec is fixed for the QP's life).
 * The record's acquire load is then issued with the view's loads (one
 * trip for both), and the peer's rights and pd are left to the caller
 * (snx_pass_peer_load), which issues them with its WQE reads. The record
 * read early is as new as the later one would be: both come after the
 * doorbell's acquire, and it is used only where the record is taken. */
GIC_HD int snx_pass_begin_in(snx_pass *p, snx_qp *qp, uint64_t db, snx_qp_view *v,
			     const uint32_t *dbrec)
{
	uint32_t epoch = snx_pass_begin_load(p, qp, v, dbrec);

	return snx_pass_begin_rest(p, qp, db, v, epoch, !dbrec);
}

/* The peer's rights and pd for a pass that snx_pass_begin_in() started
 * with a dbrec (as that function loads them otherwise; a change of the
 * rights shows at the next pass). */
GIC_HD void snx_pass_peer_load(snx_pass *p, snx_qp_view *v)
{
	uint32_t rights = 0, peer_pd = 0;

	if (p->link == SNX_QP_CONNECTED && v->peer) {
		rights = gic_ld_relaxed_sys_u32(&v->peer->rights);
		peer_pd = v->peer->pd;
		if (v->peer_map)
			v->peer_epoch = gic_ld_relaxed_sys_u32(&v->peer_sh->mr_epoch);
	}
	p->peer_rights = rights;
	p->peer_epoch = v->peer_epoch;
	v->peer_pd = peer_pd;
}

/* snx_pass_begin_in() with the record read where it is taken. */
GIC_HD int snx_pass_begin_view(snx_pass *p, snx_qp *qp, uint64_t db, snx_qp_view *v)
{
	return snx_pass_begin_in(p, qp, db, v, NULL);
}

/* snx_pass_begin_view() for a caller that needs no view. */
GIC_HD int snx_pass_begin_db(snx_pass *p, snx_qp *qp, uint64_t db)
{
	snx_qp_view v;

	return snx_pass_begin_view(p, qp, db, &v);
}

/* snx_pass_begin_db() reading the doorbell itself. */
GIC_HD int snx_pass_begin(snx_pass *p, snx_qp *qp)
{
	return snx_pass_begin_db(p, qp, snx_ld_acquire_u64(p->sh, qp->db));
}

/* Ends a pass: reports an orphaned doorbell error, flushes the receives
 * of a QP in error, adds the counts. */
GIC_HD void snx_pass_end(snx_pass *p, snx_qp *qp, softnic_stats *st)
{
	snx_report_orphan_error(p, qp);
	if (qp->in_error) /* only a QP in error flushes (snx_rq_flush_due) */
		snx_rq_flush(p->sh, qp, st);
	snx_stats_flush(&p->st, st);
}

/* Executes what the QP's doorbell announced; returns WQEs executed. The
 * engine's counters st are updated once, at the end. */
GIC_HD int snx_qp_progress(snx_shared *sh, snx_qp *qp, softnic_stats *st)
{
	snx_pass p;
	int done = 0;

	snx_pass_init(&p, sh);
	if (!snx_pass_begin(&p, qp))
		return 0;
	while (qp->cons < qp->target && snx_step(&p, qp))
		done++;
	snx_pass_end(&p, qp, st);
	return done;
}

#endif /* SOFTNIC_ENGINE_EXEC_H */
