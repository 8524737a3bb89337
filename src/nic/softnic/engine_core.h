/*
 * softnic execution core, written once for the CPU engine (host C) and the
 * GPU engine (CUDA): decode a WQE, check it against the memory regions,
 * move the data, write the CQE, record errors. It works on engine_state.h
 * structures only; each QP is executed by one engine thread at a time.
 */
#ifndef SOFTNIC_ENGINE_CORE_H
#define SOFTNIC_ENGINE_CORE_H

#include <string.h>
#if !defined(__CUDA_ARCH__)
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#endif

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


/* Copies len bytes in the widest units both ends' alignment allows. */
GIC_HD void snx_copy(uint8_t *dst, const uint8_t *src, uint64_t len)
{
#if GIC_ON_DEVICE
	uintptr_t align = (uintptr_t)dst | (uintptr_t)src;
	uint64_t i = 0;

	if ((align & 15) == 0)
		for (; i + 16 <= len; i += 16)
			*(uint4 *)(dst + i) = *(const uint4 *)(src + i);
	if ((align & 7) == 0)
		for (; i + 8 <= len; i += 8)
			*(uint64_t *)(dst + i) = *(const uint64_t *)(src + i);
	if ((align & 3) == 0)
		for (; i + 4 <= len; i += 4)
			*(uint32_t *)(dst + i) = *(const uint32_t *)(src + i);
	for (; i < len; i++)
		dst[i] = src[i];
#else
	memcpy(dst, src, len);
#endif
}

/* Acquire loads and release stores on queue memory, at the scope the
 * softnic's submitters and consumers need (snx_shared.gpu_scope). */
GIC_HD uint64_t snx_ld_acquire_u64(const snx_shared *sh, const uint64_t *p)
{
	return sh->gpu_scope ? gic_ld_acquire_gpu_u64(p) : gic_ld_acquire_sys_u64(p);
}

GIC_HD uint32_t snx_ld_acquire_u32(const snx_shared *sh, const uint32_t *p)
{
	return sh->gpu_scope ? gic_ld_acquire_gpu_u32(p) : gic_ld_acquire_sys_u32(p);
}

GIC_HD void snx_st_release_u64(const snx_shared *sh, uint64_t *p, uint64_t v)
{
	if (sh->gpu_scope)
		gic_st_release_gpu_u64(p, v);
	else
		gic_st_release_sys_u64(p, v);
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

	/* Every field but the segment list (filled up to num_sge): clearing
	 * 300 bytes a WQE would cost the CPU engine a fifth of its rate. */
	w->opcode = w->fm_ce_se = 0;
	w->wqe_index = 0;
	w->qpn = w->ds = w->imm = w->rkey = w->inline_len = w->num_sge = 0;
	w->raddr = w->atomic_add = w->total_len = 0;
	w->inline_data = NULL;
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
/* Regions in GPU memory of a multi-process softnic (gic/softnic_shm.h,
 * softnic_shared_reg_gpu_mr). The CPU engine cannot touch them, so their
 * MR slots carry SNX_MR_DEVICE in the access word and the CPU engine moves
 * their data through shm.c, which copies with CUDA (into a peer process's
 * memory opened through CUDA IPC). The GPU engine never sees the flag. */
#define SNX_MR_DEVICE 0x80000000u
enum { SNX_DEV_REMOTE = 1, SNX_DEV_LOCAL = 2 }; /* snx_pass.dev: which ends are GPU memory */

#if !GIC_ON_DEVICE
#ifdef __cplusplus
extern "C" {
#endif
/* shm.c. A resolved write (as snx_move_write takes it) or ATOMIC_FA whose
 * ends dev (SNX_DEV_*) says are GPU memory; sh is the engine's softnic.
 * Return 0 or a syndrome, with *vs. */
int softnic_shm_dev_write(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
			  uint8_t *const src[SOFTNIC_MAX_SGE], uint8_t *dst, uint32_t dev,
			  uint8_t *vs);
int softnic_shm_dev_fetch_add(const snx_shared *sh, const snx_qp *qp, uint8_t *dst,
			      uint64_t add, uint8_t *res, uint32_t dev, uint8_t *vs);
#ifdef __cplusplus
}
#endif
#endif

/* ------------------------------------------------------------------ */
/* One pass over a QP: what the engine reads once and counts locally. */

/* A resolved memory region, cached for the rest of the pass. */
typedef struct snx_mr_hit {
	uint32_t key;   /* 0: empty */
	uint32_t pd;
	uint32_t access;
	uint64_t base, len;
} snx_mr_hit;

typedef struct snx_pass {
	snx_shared *sh;
	softnic_stats st;       /* this pass's counts, added to the engine's at its end */
	uint32_t link;          /* the QP's link state, read once per pass */
	/* MR caches: they outlive a pass when the engine keeps its snx_pass,
	 * and are dropped whenever a deregistration bumped the epoch. */
	uint32_t mr_epoch;
	snx_mr_hit remote, local;
	uint32_t dev;           /* SNX_DEV_* of the WQE being resolved */
} snx_pass;

/* Prepares a pass record that an engine thread keeps for its lifetime. */
GIC_HD void snx_pass_init(snx_pass *p, snx_shared *sh)
{
	memset(p, 0, sizeof(*p));
	p->sh = sh;
	p->mr_epoch = ~0u;
}

/* ------------------------------------------------------------------ */
/* Memory regions. */

/* Looks key up in the MR table (a seqlock-style read; see snx_mr). Returns
 * 0 with *hit filled, or SOFTNIC_VSYND_BAD_LKEY. */
GIC_HD int snx_mr_lookup(snx_shared *sh, uint32_t pd, uint32_t key, snx_mr_hit *hit)
{
	uint32_t s = key >> 8;
	snx_mr *m;

	if (s == 0 || s >= SNX_MAX_MR)
		return SOFTNIC_VSYND_BAD_LKEY;
	m = &sh->mrs[s];
	if (gic_ld_acquire_sys_u32(&m->key) != key)
		return SOFTNIC_VSYND_BAD_LKEY;
	hit->base = gic_ld_relaxed_u64(&m->addr);
	hit->len = gic_ld_relaxed_u64(&m->len);
	hit->access = gic_ld_relaxed_u32(&m->access);
	hit->pd = gic_ld_relaxed_u32(&m->pd);
	/* Orders the field loads above before the key re-check below. */
	gic_fence_acquire_sys();
	if (gic_ld_relaxed_u32(&m->key) != key || hit->pd != pd)
		return SOFTNIC_VSYND_BAD_LKEY;
	hit->key = key;
	return 0;
}

/* Resolves key in protection domain pd of MR table `table` (a softnic's
 * snx_shared) for [addr, addr + len) with the access bits need, through a
 * one-entry cache of the pass. Returns 0 and
 * the pointer, or SOFTNIC_VSYND_BAD_LKEY, _LOCAL_BOUNDS or _LOCAL_ACCESS
 * (the caller maps them for remote keys). A key deregistered before the
 * doorbell that announced a WQE fails; one deregistered during a pass may
 * still serve it, as an mkey a NIC has cached serves the WQEs in flight. */
GIC_HD int snx_mr_resolve_in(snx_shared *table, snx_mr_hit *cache, uint32_t pd, uint32_t key,
			     uint64_t addr, uint64_t len, uint32_t need, uint8_t **ptr)
{
	if (cache->key != key || cache->pd != pd) {
		int r = snx_mr_lookup(table, pd, key, cache);

		if (r) {
			cache->key = 0;
			return r;
		}
	}
	if (addr < cache->base || len > cache->len || addr - cache->base > cache->len - len)
		return SOFTNIC_VSYND_LOCAL_BOUNDS;
	if ((cache->access & need) != need)
		return SOFTNIC_VSYND_LOCAL_ACCESS;
	*ptr = (uint8_t *)(uintptr_t)addr;
	return 0;
}

/* snx_mr_resolve_in() on this softnic's MR table. */
GIC_HD int snx_mr_resolve(snx_pass *p, snx_mr_hit *cache, uint32_t pd, uint32_t key,
			  uint64_t addr, uint64_t len, uint32_t need, uint8_t **ptr)
{
	return snx_mr_resolve_in(p->sh, cache, pd, key, addr, len, need, ptr);
}

/* ------------------------------------------------------------------ */
/* Completions. A CQE slot is claimed before the WQE that needs it runs,
 * so that a full CQ stalls the QP without undoing anything and several
 * writers (QPs sharing a CQ, a peer's WRITE_IMM) never overfill it. */

/* The lock word: 0 free; on the device 1 (held by a warp of the GPU
 * engine); on the host the holder's process id, since with a
 * multi-process softnic the holder may be another process (a peer's
 * engine writing a WRITE_IMM's receive completion), and that process may
 * be killed inside the lock. SNX_CQ_ABANDONED: a holder never let go. */
#define SNX_CQ_ABANDONED 0xffffffffu
#define SNX_CQ_DEAD_CHECK_NS 100000000ull   /* holder's pid checked after 100 ms */
#define SNX_CQ_LOCK_NS 10000000000ull       /* held 10 s by a live holder: give up */

/* Engine threads of one engine kind take this lock: GPU scope suffices on
 * the device (all writers are the engine's warps, which cannot vanish: the
 * lock is always taken there, 1). On the host: 1 with the lock held; 0
 * when the CQ's lock is abandoned: its holder process is gone (checked
 * after SNX_CQ_DEAD_CHECK_NS) or it held it SNX_CQ_LOCK_NS. The CQ is then
 * marked abandoned and every later lock fails at once (the CQ is broken:
 * its holder may have left it half-written). */
GIC_HD int snx_cq_lock(snx_cq *cq)
{
#if GIC_ON_DEVICE
	while (gic_atomic_cas_acquire_u32(&cq->lock, 0, 1) != 0)
		gic_cpu_relax();
	return 1;
#else
	uint32_t me = (uint32_t)getpid();
	uint64_t t0 = 0;

	for (uint32_t spins = 1;; spins++) {
		uint32_t v = gic_atomic_cas_acquire_u32(&cq->lock, 0, me);
		uint64_t now;

		if (v == 0)
			return 1;
		if (v == SNX_CQ_ABANDONED)
			return 0;
		if (spins % 1024) {
			gic_cpu_relax();
			continue;
		}
		now = gic_now_ns();
		if (!t0)
			t0 = now;
		if ((now - t0 > SNX_CQ_DEAD_CHECK_NS && v != me && v != 1 && kill((pid_t)v, 0) &&
		     errno == ESRCH) || now - t0 > SNX_CQ_LOCK_NS) {
			/* Only if v still holds it: a slow holder that let go
			 * in the meantime leaves the CQ usable. */
			gic_atomic_cas_acquire_u32(&cq->lock, v, SNX_CQ_ABANDONED);
			return 0;
		}
		sched_yield();
	}
#endif
}

GIC_HD void snx_cq_unlock(snx_cq *cq)
{
	gic_st_release_gpu_u32(&cq->lock, 0);
}

/* Claims n CQE slots with the CQ's lock held; 0 when the CQ lacks them
 * (the consumer-index record is re-read only then). */
GIC_HD int snx_cq_claim_locked(const snx_shared *sh, snx_cq *cq, uint32_t n)
{
	if (cq->claimed + n - cq->ci_seen > cq->cqe_cnt) {
		uint32_t ci = gic_be32toh(snx_ld_acquire_u32(sh, cq->dbrec)) & 0xffffffu;

		cq->ci_seen += (ci - (uint32_t)cq->ci_seen) & 0xffffffu;
	}
	if (cq->claimed + n - cq->ci_seen > cq->cqe_cnt)
		return 0;
	cq->claimed += n;
	return 1;
}

/* 1 when n slots were claimed, 0 when the CQ lacks them, SNX_CQ_LOST
 * when its lock is abandoned (snx_cq_lock): nothing can complete there. */
enum { SNX_CQ_LOST = -1 };

GIC_HD int snx_cq_claim(const snx_shared *sh, snx_cq *cq, uint32_t n)
{
	int ok;

	if (!snx_cq_lock(cq))
		return SNX_CQ_LOST;
	ok = snx_cq_claim_locked(sh, cq, n);
	snx_cq_unlock(cq);
	return ok;
}

/* Gives back a claimed slot that no CQE will use. */
GIC_HD void snx_cq_unclaim(snx_cq *cq)
{
	if (!snx_cq_lock(cq))
		return;
	cq->claimed--;
	snx_cq_unlock(cq);
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

/* Fills the first 56 bytes of a CQE (device: four wide stores). */
GIC_HD void snx_cqe_fill_body(gic_cqe64 *cqe, const snx_cqe_fields *f)
{
	int err = f->cqe_opcode == GIC_CQE_REQ_ERR;
	uint64_t w48 = err ? ((uint64_t)f->vendor_syndrome << 48) | ((uint64_t)f->syndrome << 56) : 0;
#if GIC_ON_DEVICE
	uint4 zero = make_uint4(0, 0, 0, 0);

	((uint4 *)cqe)[0] = zero;
	((uint4 *)cqe)[1] = zero;
	((uint4 *)cqe)[2] = make_uint4(0, f->imm, 0, gic_htobe32(f->byte_cnt));
	*(uint64_t *)((uint8_t *)cqe + 48) = w48;
#else
	memset(cqe, 0, 48);
	cqe->imm_inval_pkey = f->imm;
	cqe->byte_cnt_be = gic_htobe32(f->byte_cnt);
	memcpy((uint8_t *)cqe + 48, &w48, 8); /* err: vendor syndrome, syndrome */
#endif
}

/* Writes one CQE into a claimed slot, with the CQ's lock held. Every data
 * write of this WQE and the earlier ones happened before the release store
 * of the CQE's tail, so a poller that sees the CQE sees the data. */
GIC_HD void snx_cq_write_locked(const snx_shared *sh, snx_cq *cq, const snx_cqe_fields *f,
				softnic_stats *st)
{
	uint32_t sop = gic_htobe32(((uint32_t)f->wqe_opcode << 24) | (f->qpn & 0xffffffu));
	uint64_t pi = cq->pi++, tail;
	gic_cqe64 *cqe = &cq->cqes[pi & (cq->cqe_cnt - 1)];

	snx_cqe_fill_body(cqe, f);
	/* Tail bytes 56..63: sop_drop_qpn, wqe_counter, signature, op_own. */
	tail = (uint64_t)sop | ((uint64_t)gic_htobe16(f->wqe_counter) << 32) |
	       ((uint64_t)gic_make_op_own(f->cqe_opcode, (uint32_t)pi, cq->cqe_cnt) << 56);
	snx_st_release_u64(sh, (uint64_t *)((uint8_t *)cqe + GIC_CQE_TAIL_OFFSET), tail);
	st->cqes_written++;
}

/* The CQE is lost when the CQ's lock is abandoned (snx_cq_lock). */
GIC_HD void snx_cq_write(const snx_shared *sh, snx_cq *cq, const snx_cqe_fields *f,
			 softnic_stats *st)
{
	if (!snx_cq_lock(cq))
		return;
	snx_cq_write_locked(sh, cq, f, st);
	snx_cq_unlock(cq);
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
		st->strict_violations++;
}

/* Writes an error CQE into a claimed slot of the QP's send CQ. */
GIC_HD void snx_complete_error(const snx_shared *sh, snx_qp *qp, uint16_t wqe_index,
			       uint8_t opcode, int syndrome, uint8_t vs, softnic_stats *st)
{
	snx_cqe_fields f;

	memset(&f, 0, sizeof(f));
	f.cqe_opcode = GIC_CQE_REQ_ERR;
	f.syndrome = (uint8_t)syndrome;
	f.vendor_syndrome = vs;
	f.wqe_opcode = opcode;
	f.wqe_counter = wqe_index;
	f.qpn = qp->qpn;
	snx_cq_write(sh, qp->send_cq, &f, st);
	st->error_cqes++;
}

/* ------------------------------------------------------------------ */
/* Execution. */

/* The QP must be connected to a live peer. Returns 0 or a syndrome. */
GIC_HD int snx_check_peer(const snx_pass *p, const snx_qp *qp, uint8_t *vs)
{
	if (p->link == SNX_QP_UNCONNECTED)
		return snx_fail(vs, SOFTNIC_VSYND_NOT_CONNECTED, GIC_SYND_LOCAL_QP_OP_ERR);
	if (p->link != SNX_QP_CONNECTED || !qp->peer)
		return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	return 0;
}

/* Resolves a remote range in the (live) peer's PD, in the peer's softnic's
 * MR table (another process's, when qp->peer_sh says so; PD ids are unique
 * across such softnics, so the (key, pd) cache cannot mix tables up).
 * Returns 0 or a syndrome. */
GIC_HD int snx_resolve_remote(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint64_t len,
			      uint32_t need, uint8_t **dst, uint8_t *vs)
{
	snx_shared *table = qp->peer_sh ? qp->peer_sh : p->sh;
	int r = snx_mr_resolve_in(table, &p->remote, qp->peer->pd, w->rkey, w->raddr, len, need,
				  dst);

	if (!r && (p->remote.access & SNX_MR_DEVICE))
		p->dev |= SNX_DEV_REMOTE;
	if (r == SOFTNIC_VSYND_BAD_LKEY)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_RKEY, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r == SOFTNIC_VSYND_LOCAL_BOUNDS)
		return snx_fail(vs, SOFTNIC_VSYND_REMOTE_BOUNDS, GIC_SYND_REMOTE_ACCESS_ERR);
	if (r)
		return snx_fail(vs, SOFTNIC_VSYND_REMOTE_ACCESS, GIC_SYND_REMOTE_ACCESS_ERR);
	return 0;
}

/* Resolves every pointer segment (local read or, with need, write). */
GIC_HD int snx_resolve_local(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint32_t need,
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

/* Checks a write (peer, receiver, keys) and resolves its addresses without
 * moving data. Returns 0 or a syndrome. */
GIC_HD int snx_prepare_write(snx_pass *p, snx_qp *qp, const softnic_wqe *w,
			     uint8_t *src[SOFTNIC_MAX_SGE], uint8_t **dst, uint8_t *vs)
{
	int r = snx_check_peer(p, qp, vs);

	*dst = NULL;
	p->dev = 0;
	if (!r && w->opcode == GIC_OPCODE_RDMA_WRITE_IMM && !qp->peer->recv_cq)
		r = snx_fail(vs, SOFTNIC_VSYND_NO_RECV_CQ, GIC_SYND_RNR_RETRY_EXC_ERR);
	if (!r)
		r = snx_resolve_local(p, qp, w, 0, src, vs);
	if (!r && w->total_len) /* a zero-length write needs no rkey */
		r = snx_resolve_remote(p, qp, w, w->total_len, SOFTNIC_ACCESS_REMOTE_WRITE, dst, vs);
	return r;
}

/* Moves a prepared write's data. */
GIC_HD void snx_move_write(const softnic_wqe *w, uint8_t *const src[SOFTNIC_MAX_SGE], uint8_t *dst)
{
	if (w->inline_len)
		snx_copy(dst, w->inline_data, w->inline_len);
	for (uint32_t i = 0; i < w->num_sge; i++) {
		snx_copy(dst, src[i], w->sge[i].len);
		dst += w->sge[i].len;
	}
}

/* A WRITE_IMM's receive completion needs a slot of the peer's receive
 * CQ, claimed before the write runs. Returns 1 when it has one (or needs
 * none), 0 when that CQ is full, SNX_CQ_LOST when its lock is abandoned. */
GIC_HD int snx_claim_recv(const snx_pass *p, const snx_qp *qp, const softnic_wqe *w)
{
	if (w->opcode != GIC_OPCODE_RDMA_WRITE_IMM || p->link != SNX_QP_CONNECTED || !qp->peer ||
	    !qp->peer->recv_cq)
		return 1;
	return snx_cq_claim(p->sh, qp->peer->recv_cq, 1);
}

GIC_HD int snx_exec_write(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *src[SOFTNIC_MAX_SGE];
	uint8_t *dst;
	int r = snx_prepare_write(p, qp, w, src, &dst, vs);

	if (r)
		return r;
#if !GIC_ON_DEVICE
	if (p->dev) {
		r = softnic_shm_dev_write(p->sh, qp, w, src, dst, p->dev, vs);
		if (r)
			return r;
	} else
#endif
		snx_move_write(w, src, dst);
	if (w->opcode == GIC_OPCODE_RDMA_WRITE_IMM) {
		snx_cqe_fields f;

		memset(&f, 0, sizeof(f));
		f.cqe_opcode = GIC_CQE_RESP_WR_IMM;
		f.qpn = qp->peer->qpn;
		f.byte_cnt = (uint32_t)w->total_len;
		f.imm = w->imm;
		/* Into the slot snx_claim_recv() claimed; the receiver learns
		 * of the write only after its data. */
		snx_cq_write(p->sh, qp->peer->recv_cq, &f, &p->st);
	}
	return 0;
}

GIC_HD int snx_exec_atomic_fa(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint8_t *vs)
{
	uint8_t *res[SOFTNIC_MAX_SGE];
	uint8_t *dst = NULL;
	uint64_t old;
	int r = snx_check_peer(p, qp, vs);

	p->dev = 0;
	if (!r && w->sge[0].len != 8)
		r = snx_fail(vs, SOFTNIC_VSYND_BAD_LENGTH, GIC_SYND_LOCAL_LENGTH_ERR);
	if (!r)
		r = snx_resolve_local(p, qp, w, SOFTNIC_ACCESS_LOCAL_WRITE, res, vs);
	if (!r && (w->raddr & 7))
		r = snx_fail(vs, SOFTNIC_VSYND_ATOMIC_ALIGN, GIC_SYND_REMOTE_INVAL_REQ_ERR);
	if (!r)
		r = snx_resolve_remote(p, qp, w, 8, SOFTNIC_ACCESS_REMOTE_ATOMIC, &dst, vs);
	if (r)
		return r;
#if !GIC_ON_DEVICE
	if (p->dev)
		return softnic_shm_dev_fetch_add(p->sh, qp, dst, w->atomic_add, res[0], p->dev, vs);
#endif
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
GIC_HD int snx_execute(snx_pass *p, snx_qp *qp, const softnic_wqe *w, uint16_t slot_index,
		       uint8_t *vs)
{
	if (p->sh->strict && w->wqe_index != slot_index)
		return snx_fail(vs, SOFTNIC_VSYND_STRICT_WQE_INDEX, GIC_SYND_LOCAL_QP_OP_ERR);
	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_ATOMIC_FA:
		return snx_exec_atomic_fa(p, qp, w, vs);
	default:
		return snx_exec_write(p, qp, w, vs);
	}
}

/* The outcome of running the WQE at qp->cons. */
enum { SNX_RUN_OK = 0, SNX_RUN_STALL = -1 };

/* Decodes and runs the WQE of nbb BBs at qp->cons into *w, with a send-CQ
 * slot claimed when *claimed says so. Returns SNX_RUN_OK, a syndrome (with
 * *vs), or SNX_RUN_STALL when a CQ is full (nothing was done). */
GIC_HD int snx_run_wqe(snx_pass *p, snx_qp *qp, uint32_t nbb, softnic_wqe *w, uint8_t *vs,
		       int *claimed)
{
	uint8_t buf[GIC_WQE_MAX_BB * GIC_SEND_WQE_BB];
	int synd, got;

	snx_copy_wqe(qp, qp->cons, nbb, buf);
	synd = snx_decode_wqe(buf, (size_t)nbb * GIC_SEND_WQE_BB, w, vs);
	if (qp->in_error && qp->pending_synd) {
		/* The first WQE after a doorbell error carries that error
		 * (snx_step clears it once its CQE is written). */
		synd = snx_fail(vs, qp->pending_vs, qp->pending_synd);
	} else if (qp->in_error) {
		synd = snx_fail(vs, SOFTNIC_VSYND_NONE, GIC_SYND_WR_FLUSH_ERR);
	} else if (!synd) {
		if ((w->fm_ce_se & GIC_CTRL_CQ_UPDATE) && !*claimed) {
			got = snx_cq_claim(p->sh, qp->send_cq, 1);
			if (!got)
				return SNX_RUN_STALL;
			/* Its send CQ is broken: another process died inside
			 * its lock. The QP fails (no CQE can say so). */
			if (got == SNX_CQ_LOST)
				return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE,
						GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
			*claimed = 1;
		}
		got = snx_claim_recv(p, qp, w);
		if (!got)
			return SNX_RUN_STALL;
		if (got == SNX_CQ_LOST) /* the peer died inside its CQ's lock */
			return snx_fail(vs, SOFTNIC_VSYND_PEER_GONE, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
		synd = snx_execute(p, qp, w, (uint16_t)qp->cons, vs);
		if (synd && w->opcode == GIC_OPCODE_RDMA_WRITE_IMM && p->link == SNX_QP_CONNECTED &&
		    qp->peer && qp->peer->recv_cq)
			snx_cq_unclaim(qp->peer->recv_cq); /* the write never ran */
	}
	return synd;
}

/* Completes the WQE at qp->cons as run_wqe's outcome says: an error CQE
 * (which needs a slot: 0 when none is free), or a CQE when signaled. */
GIC_HD int snx_complete(snx_pass *p, snx_qp *qp, const softnic_wqe *w, int synd, uint8_t vs,
			int claimed)
{
	uint16_t slot_index = (uint16_t)qp->cons;

	if (synd) {
		/* SNX_CQ_LOST: the error is recorded; its CQE is lost. */
		if (!claimed && snx_cq_claim(p->sh, qp->send_cq, 1) == 0)
			return 0;
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
		f.byte_cnt = (uint32_t)w->total_len;
		snx_cq_write(p->sh, qp->send_cq, &f, &p->st);
	} else if (claimed) {
		snx_cq_unclaim(qp->send_cq);
	}
	return 1;
}

/* Runs the WQE at qp->cons. Returns 1 when it was consumed, 0 when the QP
 * must wait (a CQ is full). */
GIC_HD int snx_step(snx_pass *p, snx_qp *qp)
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
	if (synd == SNX_RUN_STALL || !snx_complete(p, qp, &w, synd, vs, claimed)) {
		if (synd == SNX_RUN_STALL && claimed)
			snx_cq_unclaim(qp->send_cq);
		p->st.cq_full_stalls++;
		return 0;
	}
	if (qp->pending_synd && synd == qp->pending_synd && vs == qp->pending_vs)
		qp->pending_synd = 0;
	qp->cons += nbb;
	p->st.wqes_executed++;
	return 1;
}

/* Checks a new doorbell against the doorbell record and moves qp->target.
 * A protocol mistake moves the QP to error; the first WQE it announced
 * then completes with that error. */
GIC_HD void snx_take_doorbell(snx_pass *p, snx_qp *qp, uint64_t db)
{
	uint32_t rec = gic_be32toh(snx_ld_acquire_u32(p->sh, qp->dbrec)) & 0xffffu;
	uint32_t w0 = gic_be32toh((uint32_t)db), w1 = gic_be32toh((uint32_t)(db >> 32));
	uint16_t ahead = (uint16_t)(rec - (uint16_t)qp->target);
	uint16_t db_ahead = (uint16_t)(((w0 >> 8) & 0xffffu) - (uint16_t)qp->target);
	uint8_t vs = 0;

	if (qp->target + ahead - qp->cons > qp->bb_cnt)
		vs = SOFTNIC_VSYND_BAD_DBREC;
	else if (p->sh->strict && (w1 >> 8) != qp->qpn)
		vs = SOFTNIC_VSYND_STRICT_DB_QPN;
	else if (p->sh->strict && db_ahead > ahead && db_ahead <= qp->bb_cnt)
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
	snx_qp_set_error(qp, (uint16_t)qp->cons, 0, GIC_SYND_LOCAL_QP_OP_ERR, vs, &p->st);
	if (vs != SOFTNIC_VSYND_BAD_DBREC)
		qp->target += ahead;
}

/* An error a bad doorbell record left with no WQE to carry it gets a CQE
 * of its own, once a slot is free. */
GIC_HD void snx_report_orphan_error(snx_pass *p, snx_qp *qp)
{
	if (!qp->pending_synd || qp->cons < qp->target || qp->pending_vs != SOFTNIC_VSYND_BAD_DBREC)
		return;
	if (snx_cq_claim(p->sh, qp->send_cq, 1) != 0) { /* SNX_CQ_LOST: the CQE is lost */
		snx_complete_error(p->sh, qp, (uint16_t)qp->cons, 0, qp->pending_synd, qp->pending_vs,
				   &p->st);
		qp->pending_synd = 0;
	}
}

GIC_HD void snx_stats_flush(const softnic_stats *local, softnic_stats *st)
{
	if (local->wqes_executed)
		gic_atomic_add_relaxed_u64(&st->wqes_executed, local->wqes_executed);
	if (local->cqes_written)
		gic_atomic_add_relaxed_u64(&st->cqes_written, local->cqes_written);
	if (local->error_cqes)
		gic_atomic_add_relaxed_u64(&st->error_cqes, local->error_cqes);
	if (local->strict_violations)
		gic_atomic_add_relaxed_u64(&st->strict_violations, local->strict_violations);
	if (local->cq_full_stalls)
		gic_atomic_add_relaxed_u64(&st->cq_full_stalls, local->cq_full_stalls);
}

/* Starts a pass over qp with a pass record from snx_pass_init(): reads the
 * doorbell, then the MR epoch and the link state. Returns 0 when there is
 * nothing to do. */
GIC_HD int snx_pass_begin(snx_pass *p, snx_qp *qp)
{
	snx_shared *sh = p->sh;
	uint64_t db = snx_ld_acquire_u64(sh, qp->db);
	uint32_t epoch;

	if (db == qp->last_db && qp->cons == qp->target && !qp->pending_synd)
		return 0;
	memset(&p->st, 0, sizeof(p->st));
	/* After the doorbell's acquire: a deregistration that happened before
	 * the doorbell shows here. */
	epoch = gic_ld_relaxed_u32(&sh->mr_epoch);
	if (epoch != p->mr_epoch) {
		gic_fence_acquire_sys(); /* orders the table reads after the epoch */
		p->mr_epoch = epoch;
		p->remote.key = 0;
		p->local.key = 0;
	}
	p->link = gic_ld_relaxed_u32(&qp->link);
	if (db != qp->last_db) {
		qp->last_db = db;
		snx_take_doorbell(p, qp, db);
	}
	return 1;
}

/* Ends a pass: reports an orphaned doorbell error, adds the counts. */
GIC_HD void snx_pass_end(snx_pass *p, snx_qp *qp, softnic_stats *st)
{
	snx_report_orphan_error(p, qp);
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

#endif /* SOFTNIC_ENGINE_CORE_H */
