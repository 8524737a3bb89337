/*
 * gic/post.h - building WQEs, ringing doorbells and polling CQEs, written
 * once for host threads and GPU threads.
 *
 * A submitter sees one send queue (gic_sq) and its completion queue (gic_cq)
 * as plain memory: a ring of 64-byte basic blocks, a doorbell record, a
 * doorbell word, a ring of CQE64s and a CQ consumer-index record. Any
 * provider (softnic, mlx5) fills these views; nothing here knows which.
 *
 * Positions (resv, ready, retired, signaled) are 64-bit counts of basic
 * blocks; the hardware sees their low 16 bits (WQE index, doorbell record).
 *
 * Ways to use a send queue:
 *  - exclusive: one thread owns the queue; it copies the view into locals
 *    (gic_sq_local_begin, so the state lives in registers), calls
 *    gic_sq_reserve_excl(), builds, and rings with gic_sq_publish_excl();
 *    several builds may share one doorbell (batching).
 *  - shared, per-thread hand-off: threads reserve with
 *    gic_sq_reserve_shared() (an atomic add), build in parallel and publish
 *    in reservation order with gic_sq_publish_inorder() (each thread rings
 *    for its own WQEs once its predecessor has published); on a GPU, lanes
 *    of one warp use gic_sq_handoff_write_inline_u64(), which cannot
 *    deadlock on a full ring (see there).
 *  - shared under one lock per WQE: gic_sq_post_lock(), the exclusive
 *    calls, gic_sq_post_unlock(); or gic_sq_locked_write_inline_u64(),
 *    which does all of it for one 8-byte write; or the ticket lock
 *    (gic_sq_ticket_write_inline_u64(), gic_sq_ticket_quiet()), whose
 *    tickets are the WQE positions (the hand-off layout), held for the
 *    doorbell of one WQE built before the turn.
 *  - warp-cooperative (device): gic_sq_warp_begin() once, then
 *    gic_sq_warp_write_inline(), one reservation and one doorbell per warp.
 * Completion: gic_sq_wait_retired() / gic_sq_quiet() for one queue
 * (gic_sq_quiet_wide() 8 CQEs per trip for a quiet behind many; on a GPU,
 * gic_sq_quiet_warp() a whole warp's, 32 per trip), gic_quiet_all() for
 * every configured queue (gic_quiet_all_poll() polls every queue's CQ;
 * gic_quiet_all_progress() walks them as NVSHMEM does).
 *
 * Errors: 0 on success or a positive errno. ETIMEDOUT when a deadline
 * passes; EIO when an error CQE was seen (gic_sq.err holds its details);
 * ENOBUFS when the ring is full and no signaled WQE is outstanding, so no
 * CQE could ever free it; EPROTO when a CQE names another QP.
 */
#ifndef GIC_POST_H
#define GIC_POST_H

#include "gic/mlx5_format.h"

/* How the WQE and doorbell-record stores are ordered before the doorbell
 * store (Table 4 of the paper). On the host every variant but NONE is a
 * release; the variants differ only on the GPU. */
enum gic_order {
	GIC_ORDER_NONE = 0,        /* plain stores: unsafe, the floor */
	GIC_ORDER_FENCE_GPU,       /* fence.acq_rel.gpu, then dbrec and db */
	GIC_ORDER_FENCE_GPU_DBR,   /* fence; dbrec; fence; db */
	GIC_ORDER_RELEASE_GPU,     /* st.release.gpu dbrec and db */
	GIC_ORDER_THREADFENCE,     /* __threadfence() before dbrec and db */
	GIC_ORDER_RELEASE_SYS,     /* st.release.sys dbrec and db */
	GIC_ORDER_FENCE_SYS,       /* fence.sc.sys before dbrec and db */
	GIC_ORDER_MMIO_SYS,        /* as FENCE_SYS, the db an MMIO store (st.mmio.relaxed.sys):
				    * a doorbell register mapped into the GPU (a ConnectX UAR) */
	GIC_ORDER_COUNT
};

/* 1 when order synchronizes at system scope (its CQE tails, consumer
 * record and quiet fences too: the orders from GIC_ORDER_RELEASE_SYS on),
 * 0 for the GPU-scope orders and NONE. */
GIC_HD int gic_order_is_sys(int order)
{
	return order >= GIC_ORDER_RELEASE_SYS;
}

/* What an error CQE said. */
typedef struct gic_cqe_info {
	uint8_t cqe_opcode;      /* GIC_CQE_* */
	uint8_t syndrome;        /* GIC_SYND_* for error CQEs, else 0 */
	uint8_t vendor_syndrome; /* provider-specific detail */
	uint8_t wqe_opcode;      /* send opcode of the completed WQE */
	uint16_t wqe_counter;    /* index of the completed WQE */
	uint32_t qpn;
	uint32_t byte_cnt;
	uint32_t imm;            /* big-endian, as the sender gave it */
} gic_cqe_info;

typedef struct gic_cq {
	gic_cqe64 *cqes;     /* ring of cqe_cnt CQEs */
	uint32_t *dbrec;     /* consumer-index record: BE32(ci & 0xffffff) */
	uint32_t cqe_cnt;    /* power of two */
	uint32_t cqn;
	uint32_t ci;         /* consumer index; owned by the poller */
} gic_cq;

typedef struct gic_sq {
	uint8_t *wqes;       /* ring of bb_cnt 64-byte basic blocks */
	uint32_t *dbrec;     /* doorbell record: BE32(producer & 0xffff) */
	uint64_t *db;        /* doorbell word: first 8 bytes of a ctrl segment */
	uint32_t bb_cnt;     /* power of two */
	uint32_t qpn;
	uint32_t max_inline; /* largest inline payload the QP accepts */
	gic_cq *cq;          /* this queue's send CQ (one QP per CQ) */
	uint64_t resv;       /* next BB to reserve */
	uint64_t ready;      /* BBs published by a doorbell */
	uint64_t retired;    /* BBs the NIC has completed (from CQEs) */
	uint64_t signaled;   /* end of the last signaled WQE reserved */
	uint32_t poll_lock;  /* shared queues: one poller at a time */
	uint32_t post_lock;  /* shared queues posting under one lock per WQE */
	uint32_t err;        /* sticky: 1 once an error CQE was seen */
	gic_cqe_info err_info; /* the first error CQE */
} gic_sq;

/* ------------------------------------------------------------------ */
/* Progress fields. An exclusive queue's owner is their only reader and
 * writer: plain accesses, so that a queue view copied into a local
 * (gic_sq_local_begin) lives in registers. A shared queue's threads
 * publish them to each other with release stores and acquire loads. */

GIC_HD uint64_t gic_state_ld64(const uint64_t *p, int shared)
{
	return shared ? gic_ld_acquire_gpu_u64(p) : *p;
}

GIC_HD void gic_state_st64(uint64_t *p, uint64_t v, int shared)
{
	if (shared)
		gic_st_release_gpu_u64(p, v);
	else
		*p = v;
}

GIC_HD uint32_t gic_state_ld32(const uint32_t *p, int shared)
{
	return shared ? gic_ld_acquire_gpu_u32(p) : *p;
}

GIC_HD void gic_state_st32(uint32_t *p, uint32_t v, int shared)
{
	if (shared)
		gic_st_release_gpu_u32(p, v);
	else
		*p = v;
}

/* Copies a queue view (and its CQ view) into caller-provided locals for
 * one exclusive owner; all posting then works on the locals. */
GIC_HD void gic_sq_local_begin(gic_sq *local, gic_cq *local_cq, const gic_sq *sq)
{
	*local = *sq;
	*local_cq = *sq->cq;
	local->cq = local_cq;
}

/* Writes the locals back into the views they came from. */
GIC_HD void gic_sq_local_end(gic_sq *sq, const gic_sq *local)
{
	gic_cq *cq = sq->cq;

	*cq = *local->cq;
	*sq = *local;
	sq->cq = cq;
}

/* Copies the fields of a queue view that never change after setup (ring,
 * doorbell record and doorbell addresses, sizes, QP number, CQ) into *c,
 * so a thread sharing the queue keeps them in registers instead of
 * reloading them after every acquire. Progress fields of *c are zero and
 * not to be used. */
GIC_HD void gic_sq_consts(gic_sq *c, const gic_sq *sq)
{
	__builtin_memset(c, 0, sizeof(*c));
	c->wqes = sq->wqes;
	c->dbrec = sq->dbrec;
	c->db = sq->db;
	c->bb_cnt = sq->bb_cnt;
	c->qpn = sq->qpn;
	c->max_inline = sq->max_inline;
	c->cq = sq->cq;
}

/* ------------------------------------------------------------------ */
/* Ring addressing. */

/* Segment i (16-byte unit) of the WQE starting at BB position pos; a WQE
 * that runs past the end of the ring continues at its start. */
GIC_HD void *gic_sq_seg(const gic_sq *sq, uint64_t pos, uint32_t i)
{
	uint64_t off = (pos << GIC_SEND_WQE_SHIFT) + (uint64_t)i * GIC_SEG_SIZE;
	return sq->wqes + (off & ((uint64_t)sq->bb_cnt * GIC_SEND_WQE_BB - 1));
}

/* The basic block at position pos. A WQE of one BB (at most 4 segments)
 * never wraps, so its segments are slot + 16 * i: one address computed
 * once, not one masked address per segment, as gic_sq_seg() needs for
 * WQEs that may run past the ring's end. */
GIC_HD uint8_t *gic_sq_slot(const gic_sq *sq, uint64_t pos)
{
	return sq->wqes + ((size_t)((uint32_t)pos & (sq->bb_cnt - 1)) << GIC_SEND_WQE_SHIFT);
}

/* Stores one 16-byte segment (device: one 16-byte store). */
GIC_HD void gic_st_seg16(void *dst, const void *src)
{
#if GIC_ON_DEVICE
	*(uint4 *)dst = *(const uint4 *)src;
#else
	__builtin_memcpy(dst, src, GIC_SEG_SIZE);
#endif
}

/* ------------------------------------------------------------------ */
/* WQE builders. Each writes one WQE at BB position pos (reserved by the
 * caller) and returns the number of BBs it occupies. fm_ce_se usually is
 * GIC_CTRL_CQ_UPDATE (signaled) or 0. */

/* Fills chunk words [from, 4) with the next payload bytes s[*done..len),
 * advancing *done; bytes past len are zero. A 4-byte aligned source is read
 * a word at a time (the header takes one word, so payload words stay
 * aligned with segment words), anything else a byte at a time. */
GIC_HD void gic_inline_fill(uint32_t chunk[4], uint32_t from, const uint8_t *s, uint32_t len,
			    uint32_t *done)
{
	int aligned = ((uintptr_t)s & 3) == 0;

	for (uint32_t w = from; w < 4; w++) {
		chunk[w] = 0;
		if (aligned && *done + 4 <= len) {
			__builtin_memcpy(&chunk[w], s + *done, 4);
			*done += 4;
			continue;
		}
		for (uint32_t b = 0; b < 4 && *done < len; b++, (*done)++)
			((uint8_t *)&chunk[w])[b] = s[*done];
	}
}

/* RDMA write with the payload copied into the WQE; len <= sq->max_inline. */
GIC_HD uint32_t gic_wqe_write_inline(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
				     const void *src, uint32_t len, uint8_t fm_ce_se)
{
	uint32_t ds = gic_ds_inline_write(len);
	const uint8_t *s = (const uint8_t *)src;
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16, chunk[4] GIC_ALIGN16;
	uint32_t done = 0, seg = 2;

	gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_RDMA_WRITE, 0, sq->qpn, fm_ce_se,
			   (uint8_t)ds, 0);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(gic_sq_seg(sq, pos, 0), c);
	gic_st_seg16(gic_sq_seg(sq, pos, 1), r);
	/* The first chunk holds the 4-byte header and 12 payload bytes; later
	 * chunks hold 16 payload bytes each. Unused tail bytes are zero. */
	chunk[0] = gic_inline_hdr_be(len);
	gic_inline_fill(chunk, 1, s, len, &done);
	gic_st_seg16(gic_sq_seg(sq, pos, seg++), chunk);
	while (done < len) {
		gic_inline_fill(chunk, 0, s, len, &done);
		gic_st_seg16(gic_sq_seg(sq, pos, seg++), chunk);
	}
	return gic_bb_for_ds(ds);
}

/* An inline payload as the poster holds it: 16 payload bytes per chunk,
 * chunk k holding bytes [16k, 16k + 16) in memory order (w[0] is bytes
 * 0..3 as a little-endian word, what a 16-byte load of the payload gives).
 * On a GPU an array of these indexed only by constants lives in registers. */
typedef struct GIC_ALIGN16 gic_inl16 {
	uint32_t w[4];
} gic_inl16;

/* Full unrolling where the loop bounds are compile-time constants (device
 * code); host compilers get the plain loop. */
#if defined(__CUDA_ARCH__)
#define GIC_UNROLL _Pragma("unroll")
#else
#define GIC_UNROLL
#endif

/* Word q of a WQE's inline data (the 4-byte header, then the payload):
 * q = 0 is the header, q >= 1 payload word q - 1 of p; bytes past len are
 * zero. */
GIC_HD uint32_t gic_inline_word(const gic_inl16 *p, uint32_t len, uint32_t q)
{
	uint32_t b = 4 * (q - 1), v;

	if (q == 0)
		return gic_inline_hdr_be(len);
	if (b >= len)
		return 0;
	v = p[(q - 1) / 4].w[(q - 1) % 4];
	return len - b >= 4 ? v : v & ((1u << (8 * (len - b))) - 1);
}

/* RDMA write with an inline payload the caller already holds (the paper's
 * mini-gda: no load on the posting path): len payload bytes from p[0 ..
 * (len + 15) / 16), len <= sq->max_inline; bytes of the last chunk past
 * len are ignored. The same bytes as gic_wqe_write_inline() with the
 * payload in memory. Each 16-byte segment is one store of words already in
 * registers (the header shifts the payload by one word, which costs no
 * instruction: the words are only renamed); each basic block's address is
 * computed once, the WQE wrapping to the ring's start between two blocks
 * where it runs past the end. Call it with a compile-time len (a template
 * parameter): the loops unroll and p stays in registers; with a run-time
 * len p is indexed by variables and goes to local memory (correct, slow). */
GIC_HD uint32_t gic_wqe_write_inline_regs(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
					  const gic_inl16 *p, uint32_t len, uint8_t fm_ce_se)
{
	uint32_t ds = gic_ds_inline_write(len);
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16;
	uint8_t *bb = gic_sq_slot(sq, pos);

	gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_RDMA_WRITE, 0, sq->qpn, fm_ce_se,
			   (uint8_t)ds, 0);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(bb, c);
	gic_st_seg16(bb + GIC_SEG_SIZE, r);
	GIC_UNROLL
	for (uint32_t s = 2; s < ds; s++) {
		uint32_t seg[4] GIC_ALIGN16;

		if (s % GIC_SEGS_PER_BB == 0) /* the next BB: after the ring's last, its first */
			bb = gic_sq_slot(sq, pos + s / GIC_SEGS_PER_BB);
		GIC_UNROLL
		for (uint32_t j = 0; j < 4; j++)
			seg[j] = gic_inline_word(p, len, 4 * (s - 2) + j);
		gic_st_seg16(bb + GIC_SEG_SIZE * (s % GIC_SEGS_PER_BB), seg);
	}
	return gic_bb_for_ds(ds);
}

/* RDMA write of one 8-byte value carried inline (what NVSHMEM, GDAKI and
 * DeepEP inline): the same bytes as gic_wqe_write_inline(.., &value, 8, ..),
 * built in registers and stored as three 16-byte segments. */
GIC_HD uint32_t gic_wqe_write_inline_u64(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
					 uint64_t value, uint8_t fm_ce_se)
{
	uint8_t *slot = gic_sq_slot(sq, pos); /* one BB */
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16;
	uint32_t chunk[4] GIC_ALIGN16 = { gic_inline_hdr_be(8), (uint32_t)value,
					  (uint32_t)(value >> 32), 0 };

	gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_RDMA_WRITE, 0, sq->qpn, fm_ce_se, 3, 0);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(slot, c);
	gic_st_seg16(slot + 16, r);
	gic_st_seg16(slot + 32, chunk);
	return 1;
}

/* The DC forms of gic_wqe_write_inline_u64, for a DCI (softnic.h top
 * comment): the address vector follows the control segment, then the
 * remote address and the 8-byte inline payload. av is the target's AV,
 * constant per target: the caller fills it once (gic_set_av_compact or
 * gic_set_av_full) and passes a copy it holds (on a GPU a local, whose
 * words then stay in registers), so that building costs no more than the
 * RC builder: one 16-byte store per segment, nothing computed from av.
 *
 * Compact (16-byte AV, only av's first 16 bytes are read; its dqp_dct
 * must not carry GIC_EXTENDED_UD_AV): ctrl 16 + AV 16 + raddr 16 + inline
 * 16 = 64 bytes, ds 4, one BB. */
GIC_HD uint32_t gic_wqe_dc_write_inline_u64(gic_sq *sq, uint64_t pos, const gic_av_seg *av,
					    uint64_t raddr, uint32_t rkey, uint64_t value,
					    uint8_t fm_ce_se)
{
	uint8_t *slot = gic_sq_slot(sq, pos); /* one BB */
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16;
	uint32_t chunk[4] GIC_ALIGN16 = { gic_inline_hdr_be(8), (uint32_t)value,
					  (uint32_t)(value >> 32), 0 };

	gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_RDMA_WRITE, 0, sq->qpn, fm_ce_se,
			   1 + GIC_AV_COMPACT_DS + 2, 0);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(slot, c);
	gic_st_seg16(slot + 16, av);
	gic_st_seg16(slot + 32, r);
	gic_st_seg16(slot + 48, chunk);
	return 1;
}

/* Full (48-byte AV, dqp_dct with GIC_EXTENDED_UD_AV, as gic_set_av_full
 * sets it): ctrl 16 + AV 48 + raddr 16 + inline 16 = 96 bytes, ds 6, two
 * BBs (the second after the ring's last is its first). */
GIC_HD uint32_t gic_wqe_dc_write_inline_u64_full(gic_sq *sq, uint64_t pos, const gic_av_seg *av,
						 uint64_t raddr, uint32_t rkey, uint64_t value,
						 uint8_t fm_ce_se)
{
	uint8_t *bb0 = gic_sq_slot(sq, pos), *bb1 = gic_sq_slot(sq, pos + 1);
	const uint8_t *a = (const uint8_t *)av;
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16;
	uint32_t chunk[4] GIC_ALIGN16 = { gic_inline_hdr_be(8), (uint32_t)value,
					  (uint32_t)(value >> 32), 0 };

	gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_RDMA_WRITE, 0, sq->qpn, fm_ce_se,
			   1 + GIC_AV_FULL_DS + 2, 0);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(bb0, c);
	gic_st_seg16(bb0 + 16, a);
	gic_st_seg16(bb0 + 32, a + 16);
	gic_st_seg16(bb0 + 48, a + 32);
	gic_st_seg16(bb1, r);
	gic_st_seg16(bb1 + 16, chunk);
	return 2;
}

/* DC RDMA write from a DCI with the payload read by the NIC from (laddr,
 * lkey) and the full 48-byte AV (GIC_EXTENDED_UD_AV set):
 *   ctrl | av (48 bytes) | raddr | data    ds = 6, 2 BBs
 * at BB position pos (reserved by the caller); returns the BBs used. */
GIC_HD uint32_t gic_wqe_dc_write(gic_sq *sq, uint64_t pos, const gic_av_seg *av, uint64_t raddr,
				 uint32_t rkey, uint64_t laddr, uint32_t lkey, uint32_t len,
				 uint8_t fm_ce_se)
{
	gic_ctrl_seg c = gic_make_ctrl_seg((uint16_t)pos, GIC_OPCODE_RDMA_WRITE, 0, sq->qpn,
					   fm_ce_se, 6, 0);
	gic_raddr_seg r = gic_make_raddr_seg(raddr, rkey);
	gic_data_seg d = gic_make_data_seg(len, lkey, laddr);
	const uint8_t *a = (const uint8_t *)av;

	gic_st_seg16(gic_sq_seg(sq, pos, 0), &c);
	gic_st_seg16(gic_sq_seg(sq, pos, 1), a);
	gic_st_seg16(gic_sq_seg(sq, pos, 2), a + 16);
	gic_st_seg16(gic_sq_seg(sq, pos, 3), a + 32);
	gic_st_seg16(gic_sq_seg(sq, pos, 4), &r);
	gic_st_seg16(gic_sq_seg(sq, pos, 5), &d);
	return 2;
}

/* RDMA write (opcode GIC_OPCODE_RDMA_WRITE or _WRITE_IMM) with the payload
 * read by the NIC from registered memory (laddr, lkey). */
GIC_HD uint32_t gic_wqe_write(gic_sq *sq, uint64_t pos, uint8_t opcode, uint64_t raddr,
			      uint32_t rkey, uint64_t laddr, uint32_t lkey, uint32_t len,
			      uint8_t fm_ce_se, uint32_t imm_be)
{
	uint8_t *slot = gic_sq_slot(sq, pos); /* one BB */
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16;
	gic_data_seg d = gic_make_data_seg(len, lkey, laddr);

	gic_ctrl_seg_words(c, (uint16_t)pos, opcode, 0, sq->qpn, fm_ce_se, 3, imm_be);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(slot, c);
	gic_st_seg16(slot + 16, r);
	gic_st_seg16(slot + 32, &d);
	return 1;
}

/* An 8-byte atomic (opcode GIC_OPCODE_ATOMIC_FA or _CS) with its 16-byte
 * operand segment a; the old value lands at (laddr, lkey). */
GIC_HD uint32_t gic_wqe_atomic8(gic_sq *sq, uint64_t pos, uint8_t opcode, uint64_t raddr,
				uint32_t rkey, const gic_atomic_seg *a, uint64_t laddr, uint32_t lkey,
				uint8_t fm_ce_se)
{
	uint8_t *slot = gic_sq_slot(sq, pos); /* one BB */
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16;
	gic_data_seg d = gic_make_data_seg(8, lkey, laddr);

	gic_ctrl_seg_words(c, (uint16_t)pos, opcode, 0, sq->qpn, fm_ce_se, 4, 0);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(slot, c);
	gic_st_seg16(slot + 16, r);
	gic_st_seg16(slot + 32, a);
	gic_st_seg16(slot + 48, &d);
	return 1;
}

/* 64-bit fetch-and-add at raddr; the old value lands at (laddr, lkey). */
GIC_HD uint32_t gic_wqe_atomic_fa(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
				  uint64_t add, uint64_t laddr, uint32_t lkey, uint8_t fm_ce_se)
{
	gic_atomic_seg a = gic_make_atomic_fa_seg(add);

	return gic_wqe_atomic8(sq, pos, GIC_OPCODE_ATOMIC_FA, raddr, rkey, &a, laddr, lkey, fm_ce_se);
}

/* RDMA read of len bytes at (raddr, rkey) into (laddr, lkey). */
GIC_HD uint32_t gic_wqe_read(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
			     uint64_t laddr, uint32_t lkey, uint32_t len, uint8_t fm_ce_se)
{
	return gic_wqe_write(sq, pos, GIC_OPCODE_RDMA_READ, raddr, rkey, laddr, lkey, len, fm_ce_se,
			     0);
}

/* 64-bit compare-and-swap at raddr (swap when the target equals compare);
 * the old value lands at (laddr, lkey). */
GIC_HD uint32_t gic_wqe_atomic_cs(gic_sq *sq, uint64_t pos, uint64_t raddr, uint32_t rkey,
				  uint64_t compare, uint64_t swap, uint64_t laddr, uint32_t lkey,
				  uint8_t fm_ce_se)
{
	gic_atomic_seg a = gic_make_atomic_cs_seg(compare, swap);

	return gic_wqe_atomic8(sq, pos, GIC_OPCODE_ATOMIC_CS, raddr, rkey, &a, laddr, lkey, fm_ce_se);
}

/* Operands of a masked atomic (host order; 4-byte ones in the low half).
 * Compare-swap: swap_add is the swap value, compare/compare_mask select
 * the bits that must match, swap_mask the bits that take swap. Fetch-add:
 * swap_add is the addend, compare the field boundary (0: one field). */
typedef struct gic_masked_args {
	uint64_t swap_add, compare, swap_mask, compare_mask;
} gic_masked_args;

/* Masked atomic (opcode GIC_OPCODE_ATOMIC_MASKED_CS or _FA) of size 4 or 8
 * at raddr; the old value lands at (laddr, lkey): host order for 8 bytes,
 * big-endian for 4 (as a ConnectX returns them). Returns the BBs used (2
 * for the 8-byte compare-swap). */
GIC_HD uint32_t gic_wqe_masked_atomic(gic_sq *sq, uint64_t pos, uint8_t opcode, uint32_t size,
				      uint64_t raddr, uint32_t rkey, const gic_masked_args *m,
				      uint64_t laddr, uint32_t lkey, uint8_t fm_ce_se)
{
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16, a[8] GIC_ALIGN16 = { 0 };
	uint32_t args = (size == 8 && opcode == GIC_OPCODE_ATOMIC_MASKED_CS) ? 2 : 1;
	gic_data_seg d = gic_make_data_seg(size, lkey, laddr);
	uint8_t opmod = (uint8_t)(GIC_OPMOD_EXT_ATOMIC | (size == 8 ? 1 : 0));

	if (size == 4) {
		a[0] = gic_htobe32((uint32_t)m->swap_add);
		a[1] = gic_htobe32((uint32_t)m->compare);
		a[2] = opcode == GIC_OPCODE_ATOMIC_MASKED_CS ? gic_htobe32((uint32_t)m->swap_mask) : 0;
		a[3] = opcode == GIC_OPCODE_ATOMIC_MASKED_CS ? gic_htobe32((uint32_t)m->compare_mask)
							      : 0;
	} else {
		uint64_t w[4] = { gic_htobe64(m->swap_add), gic_htobe64(m->compare),
				  gic_htobe64(m->swap_mask), gic_htobe64(m->compare_mask) };

		__builtin_memcpy(a, w, sizeof(w));
	}
	gic_ctrl_seg_words(c, (uint16_t)pos, opcode, opmod, sq->qpn, fm_ce_se,
			   (uint8_t)(3 + args), 0);
	gic_raddr_seg_words(r, raddr, rkey);
	gic_st_seg16(gic_sq_seg(sq, pos, 0), c);
	gic_st_seg16(gic_sq_seg(sq, pos, 1), r);
	gic_st_seg16(gic_sq_seg(sq, pos, 2), a);
	if (args == 2)
		gic_st_seg16(gic_sq_seg(sq, pos, 3), a + 4);
	gic_st_seg16(gic_sq_seg(sq, pos, 2 + args), &d);
	return gic_bb_for_ds(3 + args);
}

/* SEND or SEND_IMM of len bytes from (laddr, lkey): it lands in the
 * responder's next receive WQE. */
GIC_HD uint32_t gic_wqe_send(gic_sq *sq, uint64_t pos, uint8_t opcode, uint64_t laddr, uint32_t lkey,
			     uint32_t len, uint8_t fm_ce_se, uint32_t imm_be)
{
	uint8_t *slot = gic_sq_slot(sq, pos); /* one BB */
	uint32_t c[4] GIC_ALIGN16;
	gic_data_seg d = gic_make_data_seg(len, lkey, laddr);

	gic_ctrl_seg_words(c, (uint16_t)pos, opcode, 0, sq->qpn, fm_ce_se, 2, imm_be);
	gic_st_seg16(slot, c);
	gic_st_seg16(slot + 16, &d);
	return 1;
}

GIC_HD uint32_t gic_wqe_nop(gic_sq *sq, uint64_t pos, uint8_t fm_ce_se)
{
	uint8_t *slot = gic_sq_slot(sq, pos); /* one BB */
	uint32_t c[4] GIC_ALIGN16;

	gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_NOP, 0, sq->qpn, fm_ce_se, 1, 0);
	gic_st_seg16(slot, c);
	return 1;
}

/* ------------------------------------------------------------------ */
/* Doorbell. */

/* The doorbell value announcing producer position upto: the first 8 bytes
 * of a control segment carrying the new producer index and the QP number
 * (the form NVSHMEM and DOCA use). */
GIC_HD uint64_t gic_doorbell_value(uint32_t qpn, uint64_t upto)
{
	uint32_t w0 = gic_htobe32(((uint32_t)upto & 0xffffu) << 8);
	uint32_t w1 = gic_htobe32(qpn << 8);
	return (uint64_t)w0 | ((uint64_t)w1 << 32);
}

/* Announces every WQE below producer position upto: doorbell record, then
 * doorbell, ordered after the WQE stores as `order` says. */
GIC_HD void gic_sq_ring(gic_sq *sq, uint64_t upto, int order)
{
	uint32_t rec = gic_htobe32((uint32_t)upto & 0xffffu);
	uint64_t db = gic_doorbell_value(sq->qpn, upto);

	switch (order) {
	case GIC_ORDER_NONE:
		gic_st_relaxed_sys_u32(sq->dbrec, rec);
		gic_st_relaxed_sys_u64(sq->db, db);
		break;
	case GIC_ORDER_FENCE_GPU: /* orders WQE stores before dbrec and db */
		gic_fence_acq_rel_gpu();
		gic_st_relaxed_sys_u32(sq->dbrec, rec);
		gic_st_relaxed_sys_u64(sq->db, db);
		break;
	case GIC_ORDER_FENCE_GPU_DBR: /* WQE before dbrec; dbrec before db */
		gic_fence_acq_rel_gpu();
		gic_st_relaxed_sys_u32(sq->dbrec, rec);
		gic_fence_acq_rel_gpu();
		gic_st_relaxed_sys_u64(sq->db, db);
		break;
	case GIC_ORDER_RELEASE_GPU: /* each store releases what came before */
		gic_st_release_gpu_u32(sq->dbrec, rec);
		gic_st_release_gpu_u64(sq->db, db);
		break;
	case GIC_ORDER_THREADFENCE: /* WQE before dbrec; dbrec before db */
		gic_fence_sc_gpu();
		gic_st_relaxed_sys_u32(sq->dbrec, rec);
		gic_fence_sc_gpu();
		gic_st_relaxed_sys_u64(sq->db, db);
		break;
	case GIC_ORDER_RELEASE_SYS:
		gic_st_release_sys_u32(sq->dbrec, rec);
		gic_st_release_sys_u64(sq->db, db);
		break;
	case GIC_ORDER_MMIO_SYS: /* WQE before dbrec; dbrec before the register store */
		gic_fence_sc_sys();
		gic_st_relaxed_sys_u32(sq->dbrec, rec);
		gic_fence_sc_sys();
		gic_st_mmio_relaxed_sys_u64(sq->db, db);
		break;
	default: /* GIC_ORDER_FENCE_SYS: WQE before dbrec; dbrec before db */
		gic_fence_sc_sys();
		gic_st_relaxed_sys_u32(sq->dbrec, rec);
		gic_fence_sc_sys();
		gic_st_relaxed_sys_u64(sq->db, db);
		break;
	}
}

/* gic_sq_ring() for a thread that has just read a hand-off position with
 * a relaxed load: the orders whose sequence starts with a fence of at
 * least acq_rel strength already acquire what earlier threads released
 * (their WQEs, so the doorbell covers them); the others (release stores
 * only) get an acq_rel fence first. */
GIC_HD void gic_sq_ring_acquired(gic_sq *sq, uint64_t upto, int order)
{
	if (order != GIC_ORDER_FENCE_GPU && order != GIC_ORDER_FENCE_GPU_DBR &&
	    order != GIC_ORDER_THREADFENCE && order != GIC_ORDER_FENCE_SYS &&
	    order != GIC_ORDER_MMIO_SYS)
		gic_fence_acq_rel_gpu(); /* acquires the hand-off chain */
	gic_sq_ring(sq, upto, order);
}

/* ------------------------------------------------------------------ */
/* Completions. */

/* Loads the last 8 bytes of a CQE at the scope `order` implies, as the
 * paper's Table 4 polls "at the matching scope". A GPU-scope acquire is
 * formally enough only when the CQE writer runs on the same GPU (softnic's
 * GPU engine); for a NIC or the CPU engine it relies on the hardware. */
GIC_HD uint64_t gic_cqe_load_tail(const gic_cqe64 *cqe, int order)
{
	const uint64_t *tail = (const uint64_t *)((const uint8_t *)cqe + GIC_CQE_TAIL_OFFSET);

	if (order == GIC_ORDER_NONE)
		return gic_ld_relaxed_sys_u64(tail);
	if (gic_order_is_sys(order))
		return gic_ld_acquire_sys_u64(tail);
	return gic_ld_acquire_gpu_u64(tail);
}

GIC_HD void gic_cqe_parse(const gic_cqe64 *cqe, uint64_t tail, gic_cqe_info *out)
{
	const gic_err_cqe *e = (const gic_err_cqe *)cqe;

	out->cqe_opcode = gic_cqe_tail_opcode(tail);
	out->wqe_counter = gic_cqe_tail_wqe_counter(tail);
	out->qpn = gic_cqe_tail_qpn(tail);
	out->wqe_opcode = gic_cqe_tail_wqe_opcode(tail);
	out->byte_cnt = gic_be32toh(cqe->byte_cnt_be);
	out->imm = cqe->imm_inval_pkey;
	if (out->cqe_opcode == GIC_CQE_REQ_ERR || out->cqe_opcode == GIC_CQE_RESP_ERR) {
		out->syndrome = e->syndrome;
		out->vendor_syndrome = e->vendor_err_synd;
	} else {
		out->syndrome = 0;
		out->vendor_syndrome = 0;
	}
}

/* Gives the CQ's slots before consumer index ci back to the NIC: the
 * consumer record, as a release after our reads of them, at the scope
 * `order` implies, as gic_cqe_load_tail() loads the tails: system scope for
 * the system-scope orders, GPU scope otherwise (DOCA GPUNetIO updates a
 * ConnectX's CQ record in GPU memory with st.release.gpu). */
GIC_HD void gic_cq_record_release(uint32_t *record, uint32_t ci, int order)
{
	if (gic_order_is_sys(order))
		gic_st_release_sys_u32(record, gic_htobe32(ci & 0xffffffu));
	else
		gic_st_release_gpu_u32(record, gic_htobe32(ci & 0xffffffu));
}

/* Consumes at most one CQE. Returns 0 with *out filled when one was
 * consumed, EAGAIN when the CQ holds none. The caller owns cq->ci. */
GIC_HD int gic_cq_poll_one(gic_cq *cq, gic_cqe_info *out, int order)
{
	gic_cqe64 *cqe = &cq->cqes[cq->ci & (cq->cqe_cnt - 1)];
	uint64_t tail = gic_cqe_load_tail(cqe, order);

	if (!gic_cqe_sw_owned(tail, cq->ci, cq->cqe_cnt))
		return EAGAIN;
	/* The acquire load of the tail orders the reads of the other fields. */
	gic_cqe_parse(cqe, tail, out);
	cq->ci++;
	gic_cq_record_release(cq->dbrec, cq->ci, order);
	return 0;
}

/* Send-queue position of the WQE whose CQE carries wqe_counter (16 bits),
 * the first such position at or after retired. */
GIC_HD uint64_t gic_sq_wqe_start(uint64_t retired, uint16_t wqe_counter)
{
	return retired + (uint16_t)(wqe_counter - (uint16_t)retired);
}

/* Send-queue position just past the WQE a CQE reports (its BB count is
 * read from the WQE's own ctrl segment, still intact in the ring). */
GIC_HD uint64_t gic_sq_retired_after(const gic_sq *sq, uint64_t retired, uint16_t wqe_counter)
{
	uint64_t start = gic_sq_wqe_start(retired, wqe_counter);
	const gic_ctrl_seg *c = (const gic_ctrl_seg *)gic_sq_seg(sq, start, 0);

	return start + gic_wqe_bb_count(c->qpn_ds_be);
}

/* Where the send queue retires to once the WQE whose CQE carries
 * wqe_counter is complete: gic_sq_retired_after(), but without its load of
 * the WQE's ctrl segment (a dependent trip after the CQE's acquire) when
 * an exclusive queue's WQE starts one BB before ready: ready is a WQE
 * boundary (the queue publishes whole WQEs), so that WQE is one BB long
 * and the queue retires to ready. A shared queue's ready would cost a
 * load of its own. */
GIC_HD uint64_t gic_sq_retired_end(const gic_sq *sq, uint16_t wqe_counter, int shared)
{
	if (!shared && gic_sq_wqe_start(sq->retired, wqe_counter) + 1 == sq->ready)
		return sq->ready;
	return gic_sq_retired_after(sq, sq->retired, wqe_counter);
}

/* gic_sq_cq_take_at() (below) of the CQE cqe at *ci whose tail word was
 * loaded already (with acquire semantics, or followed by an acquire fence). */
GIC_HD int gic_sq_cq_take_tail(gic_sq *sq, gic_cqe64 *cqe, uint64_t tail, uint32_t cqe_cnt,
			       uint32_t *ci, uint16_t *counter)
{
	int ours, bad;

	if (!gic_cqe_sw_owned(tail, *ci, cqe_cnt))
		return EAGAIN;
	ours = gic_cqe_tail_qpn(tail) == sq->qpn;
	bad = gic_cqe_tail_opcode(tail) == GIC_CQE_REQ_ERR;
	/* The tail's acquire orders these reads of the other fields; the
	 * first error CQE only. */
	if (ours && bad && !sq->err)
		gic_cqe_parse(cqe, tail, &sq->err_info);
	*ci += 1;
	if (!ours)
		return EPROTO;
	*counter = gic_cqe_tail_wqe_counter(tail);
	return bad ? EIO : 0;
}

/* Takes the CQE at consumer index *ci of sq's CQ (its ring cqes of cqe_cnt
 * entries) when the NIC has written it: moves *ci on and gives the WQE
 * counter it reports in *counter, but stores nothing (the caller stores
 * the index, and gic_sq_cq_finish the rest, once for a run of CQEs).
 * Returns 0 when a CQE was taken, EAGAIN when none was ready, EIO for an
 * error CQE (its record parsed into sq->err_info when it is the first),
 * EPROTO for a CQE of another QP (taken: it cannot be ours; no counter).
 * The caller owns the CQ (exclusive queue, or the poll lock of a shared
 * one).
 *
 * It sits inside every wait for room or completion, so it holds little:
 * everything a good CQE needs (opcode, QP number, WQE counter) is in the
 * tail word already loaded, and only an error CQE's record reads the rest
 * of the CQE, straight into sq->err_info (so that no parsed fields stay
 * live across the poll loops that inline it). */
GIC_HD int gic_sq_cq_take_at(gic_sq *sq, gic_cqe64 *cqes, uint32_t cqe_cnt, uint32_t *ci,
			     int order, uint16_t *counter)
{
	gic_cqe64 *cqe = &cqes[*ci & (cqe_cnt - 1)];

	return gic_sq_cq_take_tail(sq, cqe, gic_cqe_load_tail(cqe, order), cqe_cnt, ci, counter);
}

/* gic_sq_cq_take_at() at the CQ's own consumer index, which it moves on. */
GIC_HD int gic_sq_cq_take(gic_sq *sq, int order, uint16_t *counter)
{
	gic_cq *cq = sq->cq;
	uint32_t ci = cq->ci;
	int rc = gic_sq_cq_take_at(sq, cq->cqes, cq->cqe_cnt, &ci, order, counter);

	cq->ci = ci;
	return rc;
}

/* Ends a poll that took CQEs (rc: the last gic_sq_cq_take's code, 0 after
 * a clean run; counter: the last WQE counter of ours, when have_counter):
 * gives the slots back to the NIC (gic_cq_record_release at order's scope),
 * retires the send queue past that WQE, and for an error CQE makes
 * sq->err sticky, after retired and err_info (which a shared queue's
 * readers acquire through it). Returns rc. */
GIC_HD int gic_sq_cq_finish(gic_sq *sq, int rc, int have_counter, uint16_t counter, int shared,
			    int order)
{
	gic_cq_record_release(sq->cq->dbrec, sq->cq->ci, order);
	if (have_counter)
		gic_state_st64(&sq->retired, gic_sq_retired_end(sq, counter, shared), shared);
	if (rc == EIO)
		gic_state_st32(&sq->err, 1, shared);
	return rc;
}

/* Polls sq's CQ once and retires what a CQE reports. Returns 0 when a CQE
 * was consumed, EAGAIN when none was ready, EIO for an error CQE (recorded
 * in sq->err_info), EPROTO for a CQE of another QP. The caller owns the CQ
 * (exclusive queue, or the poll lock of a shared one). */
GIC_HD int gic_sq_poll_once(gic_sq *sq, int order, int shared)
{
	uint16_t counter = 0;
	int rc = gic_sq_cq_take(sq, order, &counter);

	if (rc == EAGAIN)
		return rc;
	return gic_sq_cq_finish(sq, rc, rc != EPROTO, counter, shared, order);
}

/* At most this many CQEs taken under one poll (one consumer-record store,
 * one retirement, one lock): a quiet behind many batches otherwise pays
 * about 2.7 us per CQE on the H200 (the lock, the consumer record's release, the
 * WQE's ctrl-segment load and a release of retired each time), more than
 * softnic's GPU engine takes per batch. */
#define GIC_POLL_RUN 16

/* Tails a held run loads side by side: one trip for up to this many
 * CQEs (gic_cqe_load_tails). */
#define GIC_POLL_WIDE 8

/* The tail words of the GIC_POLL_WIDE CQEs at consumer index ci and after
 * (ring cqes of cqe_cnt), as relaxed loads issued together, then one
 * acquire fence at the order's scope (none for GIC_ORDER_NONE): the fence
 * orders every later read (an error CQE's other fields) and write (the
 * ring's reuse) after all of them, as each tail's acquire load would, for
 * one trip instead of one per CQE. A tail whose CQE is not written yet is
 * simply not owned (gic_cqe_sw_owned); it is loaded again next time. */
/* The acquire fence after tails loaded relaxed, at the order's scope (none
 * for GIC_ORDER_NONE): it orders those loads before every later read and
 * write, as each tail's acquire load would. */
GIC_HD void gic_cqe_tails_acquire(int order)
{
	if (gic_order_is_sys(order))
		gic_fence_acquire_sys();
	else if (order != GIC_ORDER_NONE)
		gic_fence_acquire_gpu();
}

GIC_HD void gic_cqe_load_tails(const gic_cqe64 *cqes, uint32_t cqe_cnt, uint32_t ci, int order,
			       uint64_t tails[GIC_POLL_WIDE])
{
	GIC_UNROLL
	for (int k = 0; k < GIC_POLL_WIDE; k++)
		tails[k] = gic_ld_relaxed_sys_u64(
			(const uint64_t *)((const uint8_t *)&cqes[(ci + (uint32_t)k) & (cqe_cnt - 1)] +
					   GIC_CQE_TAIL_OFFSET));
	gic_cqe_tails_acquire(order);
}

/* gic_sq_poll_run_as()'s GIC_RUN_WIDE run: the CQ's index and ring, and
 * retired, in registers (only the CQ's owner, the caller, writes them);
 * the tails GIC_POLL_WIDE at a time (gic_cqe_load_tails), taken in order
 * up to the first one not written. Sets *n to the CQEs taken and *counter
 * to the last one's WQE counter; returns the last take's code. */
GIC_HD int gic_sq_poll_run_wide(gic_sq *sq, uint64_t target, int order, int *n,
				uint16_t *counter)
{
	gic_cq *cq = sq->cq;
	gic_cqe64 *cqes = cq->cqes;
	uint32_t cqe_cnt = cq->cqe_cnt, ci = cq->ci;
	uint64_t retired = sq->retired;
	int rc = 0, going = 1;

	while (going) {
		uint64_t tails[GIC_POLL_WIDE];

		gic_cqe_load_tails(cqes, cqe_cnt, ci, order, tails);
		GIC_UNROLL /* each tail stays in its register */
		for (int k = 0; k < GIC_POLL_WIDE && going; k++) {
			uint16_t next = 0;

			rc = gic_sq_cq_take_tail(sq, &cqes[ci & (cqe_cnt - 1)], tails[k], cqe_cnt, &ci,
						 &next);
			if (rc == EAGAIN || rc == EPROTO) {
				going = 0;
				break;
			}
			*counter = next;
			/* The WQE's start, from the counter alone (no load): once
			 * it reaches target - 1 the queue retires to target or beyond. */
			going = !rc && ++*n < GIC_POLL_RUN &&
				gic_sq_wqe_start(retired, next) + 1 < target;
		}
	}
	cq->ci = ci; /* also after a CQE of another QP alone (taken) */
	return rc;
}

/* How a run holds the CQ's state (gic_sq_poll_run_as's held, a constant
 * at every call). */
enum {
	GIC_RUN_RELOAD = 0, /* the CQ's index and ring and retired reloaded per CQE */
	GIC_RUN_HELD = 1,   /* ... held in registers: one trip per CQE */
	GIC_RUN_WIDE = 2    /* ... and GIC_POLL_WIDE tails per trip (gic_sq_poll_run_wide) */
};

/* Takes the CQEs that are ready, up to GIC_POLL_RUN, until one reports a
 * WQE at or past target - 1 (its completion retires the queue to target or
 * beyond), then finishes once (gic_sq_cq_finish). Returns 0 when at least
 * one CQE was consumed and the run ended cleanly, EAGAIN when none was
 * ready, EIO or EPROTO from the CQE that ended it. The caller owns the CQ.
 * held (GIC_RUN_*, a constant at every call):
 * - GIC_RUN_RELOAD: a CQE costs what gic_sq_poll_once costs, in the same
 *   order: the CQ's index, ring and retired reloaded after each tail's
 *   acquire, three trips, about 1 us per CQE on the H200, which bounds a
 *   drained queue's quiet behind a fast engine
 *   (results/2026-12-02-h200-drain-cycles/). Waits for room use it: the
 *   held values cost the posting kernels that inline those waits about 8
 *   registers (issue 16's dormant path) and 10% on t64-q64-s64-b16.
 * - GIC_RUN_HELD: those values loaded once for the run (only the CQ's
 *   owner, the caller, writes them), so a CQE costs one dependent trip,
 *   its tail's acquire. The quiet's default (gic_sq_wait_retired).
 * - GIC_RUN_WIDE: gic_sq_poll_run_wide(), GIC_POLL_WIDE tails per trip.
 *   Even one trip per CQE bounds `gic rate`'s one-QP drain near 17 M
 *   msg/s on the H200: the poster's quiet, started after its last post,
 *   finds some 400 CQEs waiting (results/2026-12-03-h200-wide-batch/);
 *   the wide run costs 8-16 more registers in the kernels that inline it
 *   (gic_sq_quiet_wide). */
GIC_HD int gic_sq_poll_run_as(gic_sq *sq, uint64_t target, int order, int shared, int held)
{
	gic_cq *cq = sq->cq;
	gic_cqe64 *cqes = held ? cq->cqes : NULL;
	uint32_t cqe_cnt = held ? cq->cqe_cnt : 0, ci = held ? cq->ci : 0;
	uint64_t retired = held ? sq->retired : 0;
	uint16_t counter = 0, next;
	int rc = 0, n = 0;

	if (held == GIC_RUN_WIDE) {
		rc = gic_sq_poll_run_wide(sq, target, order, &n, &counter);
	} else {
		while (n < GIC_POLL_RUN) {
			rc = held ? gic_sq_cq_take_at(sq, cqes, cqe_cnt, &ci, order, &next)
				  : gic_sq_cq_take(sq, order, &next);
			if (rc == EAGAIN || rc == EPROTO)
				break;
			counter = next;
			n++;
			/* The WQE's start, from the counter alone (no load): once it
			 * reaches target - 1 the queue retires to target or beyond. */
			if (rc || gic_sq_wqe_start(held ? retired : sq->retired, counter) + 1 >= target)
				break;
		}
		if (held)
			cq->ci = ci; /* also after a CQE of another QP alone (taken) */
	}
	if (n == 0 && rc == EAGAIN)
		return EAGAIN;
	return gic_sq_cq_finish(sq, rc == EAGAIN ? 0 : rc, n > 0, counter, shared, order);
}

/* gic_sq_poll_run_as() under sq's poll lock
 * when shared (EAGAIN when another thread holds it); held is a constant at
 * every call. */
GIC_HD int gic_sq_poll_run_locked_as(gic_sq *sq, uint64_t target, int order, int shared, int held)
{
	int rc;

	if (!shared)
		return gic_sq_poll_run_as(sq, target, order, 0, held);
	if (gic_atomic_cas_acquire_gpu_u32(&sq->poll_lock, 0, 1) != 0)
		return EAGAIN;
	rc = gic_sq_poll_run_as(sq, target, order, 1, held);
	/* Releases the CQ state (ci, retired) to the next lock holder. */
	gic_st_release_gpu_u32(&sq->poll_lock, 0);
	return rc;
}

/* gic_sq_poll_run_locked_as() with reloads. */
GIC_HD int gic_sq_poll_run_locked(gic_sq *sq, uint64_t target, int order, int shared)
{
	return gic_sq_poll_run_locked_as(sq, target, order, shared, GIC_RUN_RELOAD);
}

/* Polls sq's CQ once under its poll lock (threads sharing the queue):
 * gic_sq_poll_once's result, or EAGAIN when another thread holds the lock.
 * A run whose target 0 every CQE reaches takes exactly one CQE. */
GIC_HD int gic_sq_poll_locked(gic_sq *sq, int order)
{
	return gic_sq_poll_run_locked(sq, 0, order, 1);
}

/* Waits until retired >= target, taking CQEs in runs (held: GIC_RUN_*,
 * a constant at every call). shared selects the locked poll. */
GIC_HD int gic_sq_wait_retired_as(gic_sq *sq, uint64_t target, int shared, int order,
				  uint64_t deadline_ns, int held)
{
	for (;;) {
		int rc;

		if (gic_state_ld64(&sq->retired, shared) >= target)
			return 0;
		if (gic_state_ld32(&sq->err, shared))
			return EIO;
		rc = gic_sq_poll_run_locked_as(sq, target, order, shared, held);
		if (rc == EIO || rc == EPROTO)
			return rc;
		if (rc == EAGAIN) {
			if (gic_now_ns() > deadline_ns)
				return ETIMEDOUT;
			gic_cpu_relax();
		}
	}
}

/* The quiet's wait: gic_sq_wait_retired_as() with the held run. */
GIC_HD int gic_sq_wait_retired(gic_sq *sq, uint64_t target, int shared, int order,
			       uint64_t deadline_ns)
{
	return gic_sq_wait_retired_as(sq, target, shared, order, deadline_ns, GIC_RUN_HELD);
}

/* gic_sq_wait_retired() taking GIC_POLL_WIDE CQEs per trip (GIC_RUN_WIDE):
 * for a quiet behind many completions, in a kernel whose registers are
 * not the measurement. */
GIC_HD int gic_sq_quiet_wide(gic_sq *sq, uint64_t target, int shared, int order,
			     uint64_t deadline_ns)
{
	return gic_sq_wait_retired_as(sq, target, shared, order, deadline_ns, GIC_RUN_WIDE);
}

/* ------------------------------------------------------------------ */
/* Reservation and publication. */

/* Waits until [pos, pos + nbb) is free in the ring. ENOBUFS when the ring
 * is full and nothing signaled is outstanding. */
GIC_HD int gic_sq_wait_space(gic_sq *sq, uint64_t pos, uint32_t nbb, int shared, int order,
			     uint64_t deadline_ns)
{
	uint64_t need = pos + nbb - sq->bb_cnt;

	if (pos + nbb <= gic_state_ld64(&sq->retired, shared) + sq->bb_cnt)
		return 0;
	if (!shared && sq->signaled < need)
		return ENOBUFS;
	return gic_sq_wait_retired_as(sq, need, shared, order, deadline_ns, GIC_RUN_RELOAD);
}

/* Exclusive owner: reserves nbb BBs at *pos. */
GIC_HD int gic_sq_reserve_excl(gic_sq *sq, uint32_t nbb, uint64_t *pos, int order,
			       uint64_t deadline_ns)
{
	int rc = gic_sq_wait_space(sq, sq->resv, nbb, 0, order, deadline_ns);

	*pos = sq->resv;
	if (rc)
		return rc;
	sq->resv += nbb;
	return 0;
}

/* Exclusive owner, the wait of gic_sq_reserve_excl_lean(): the ring is
 * full below need (the first position that must have retired); polls the
 * CQ until it has, with a deadline timeout_ns from now. ENOBUFS when
 * nothing signaled covers need, EIO after an error CQE (sq->err_info has
 * it), EPROTO, ETIMEDOUT. */
GIC_HD int gic_sq_wait_room_excl(gic_sq *sq, uint64_t need, int order, uint64_t timeout_ns)
{
	if (sq->signaled < need)
		return ENOBUFS;
	return gic_sq_wait_retired_as(sq, need, 0, order, gic_now_ns() + timeout_ns,
				      GIC_RUN_RELOAD);
}

/* Exclusive owner: gic_sq_reserve_excl() for code that carries the send
 * path and mostly does not take it (a kernel with a dormant send, `gic
 * kernel`): the same reservation and results as gic_sq_reserve_excl(sq,
 * nbb, pos, order, now + timeout_ns), but the clock is read only when the
 * ring is full, so the fast path holds no deadline: the free space is one
 * 32-bit compare of the view's positions (resv - retired never exceeds
 * bb_cnt, so the low words decide it), and the wait for room (CQ poll,
 * error record, deadline) is gic_sq_wait_room_excl(). *pos gets the
 * position also on failure, as gic_sq_reserve_excl's. */
GIC_HD int gic_sq_reserve_excl_lean(gic_sq *sq, uint32_t nbb, uint64_t *pos, int order,
				    uint64_t timeout_ns)
{
	uint64_t p = sq->resv;

	*pos = p;
	if ((uint32_t)p + nbb - (uint32_t)sq->retired > sq->bb_cnt) {
		int rc = gic_sq_wait_room_excl(sq, p + nbb - sq->bb_cnt, order, timeout_ns);

		if (rc)
			return rc;
	}
	sq->resv = p + nbb;
	return 0;
}

/* Shared queue: reserves nbb BBs at *pos with one atomic add, then waits
 * for them to be free. A thread that fails here has still consumed its
 * slots: the queue must be reset (it is unusable after ETIMEDOUT). */
GIC_HD int gic_sq_reserve_shared(gic_sq *sq, uint32_t nbb, uint64_t *pos, int order,
				 uint64_t deadline_ns)
{
	*pos = gic_atomic_add_relaxed_gpu_u64(&sq->resv, nbb);
	return gic_sq_wait_space(sq, *pos, nbb, 1, order, deadline_ns);
}

/* Records that the WQE ending at end is signaled, so a CQE will retire up
 * to it. Shared queues: an atomic max over concurrent writers. */
GIC_HD void gic_sq_note_signaled(gic_sq *sq, uint64_t end, int shared)
{
	if (!shared) {
		if (sq->signaled < end)
			sq->signaled = end;
		return;
	}
#if GIC_ON_DEVICE
	atomicMax((unsigned long long *)&sq->signaled, (unsigned long long)end);
#else
	uint64_t cur = __atomic_load_n(&sq->signaled, __ATOMIC_RELAXED);
	while (cur < end &&
	       !__atomic_compare_exchange_n(&sq->signaled, &cur, end, 1, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
#endif
}

/* Exclusive owner: rings for everything reserved so far. */
GIC_HD void gic_sq_publish_excl(gic_sq *sq, int order)
{
	gic_sq_ring(sq, sq->resv, order);
	sq->ready = sq->resv;
}

/* Shared queue: waits until every earlier reservation is published, then
 * rings for [pos, pos + nbb) and hands publication to the next thread. */
GIC_HD int gic_sq_publish_inorder(gic_sq *sq, uint64_t pos, uint32_t nbb, int order,
				  uint64_t deadline_ns)
{
	/* The publication sits inside the loop, in the branch of the thread
	 * whose turn it is: with the ring after the loop, the lanes of one warp
	 * that still wait would hold that thread at the loop's exit until the
	 * scheduler switched paths, and every hand-off would pay for it. */
	for (;;) {
		if (gic_ld_acquire_gpu_u64(&sq->ready) == pos) {
			gic_sq_ring(sq, pos + nbb, order);
			/* Hands the doorbell to the next thread after our
			 * doorbell store. */
			gic_st_release_gpu_u64(&sq->ready, pos + nbb);
			return 0;
		}
		if (gic_now_ns() > deadline_ns)
			return ETIMEDOUT;
		gic_cpu_relax();
	}
}

/* Exclusive owner: when the last published WQE was unsignaled, posts and
 * publishes a signaled NOP, so that a CQE covers everything published. 0,
 * or the reservation's error. */
GIC_HD int gic_sq_cover_unsignaled(gic_sq *sq, int order, uint64_t deadline_ns)
{
	uint64_t pos;
	int rc;

	if (sq->ready <= sq->signaled)
		return 0;
	rc = gic_sq_reserve_excl(sq, 1, &pos, order, deadline_ns);
	if (rc)
		return rc;
	gic_wqe_nop(sq, pos, GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, order);
	return 0;
}

/* Exclusive owner: waits until everything published has completed (a
 * signaled NOP first where the last WQE was unsignaled). */
GIC_HD int gic_sq_quiet(gic_sq *sq, int order, uint64_t deadline_ns)
{
	int rc = gic_sq_cover_unsignaled(sq, order, deadline_ns);

	return rc ? rc : gic_sq_wait_retired(sq, sq->ready, 0, order, deadline_ns);
}

/* Completion of every queue in sqs[0..n) (exclusive owner of each): the
 * PE-wide quiet whose cost grows with the number of queues, used or not. */
GIC_HD int gic_quiet_all(gic_sq *sqs, int n, int order, uint64_t deadline_ns)
{
	for (int i = 0; i < n; i++) {
		int rc = gic_sq_quiet(&sqs[i], order, deadline_ns);

		if (rc)
			return rc;
	}
	return 0;
}

/* PE-wide quiet that polls the CQ of every queue in sqs[0..n) (exclusive
 * owner of each), used or not: at least one poll each (the CQ view's
 * fields and one CQE tail load at the scope `order` implies), and more
 * until the queue has retired everything published on it (a signaled NOP
 * first when the last published WQE was unsignaled, as gic_sq_quiet). An
 * idle queue costs one CQ poll, not only a read of its progress words.
 * `gic lat --scope all` (Figure 4's all-QP row). */
GIC_HD int gic_quiet_all_poll(gic_sq *sqs, int n, int order, uint64_t deadline_ns)
{
	for (int i = 0; i < n; i++) {
		gic_sq *sq = &sqs[i];
		int rc = gic_sq_cover_unsignaled(sq, order, deadline_ns);

		if (rc)
			return rc;
		for (;;) {
			if (sq->err)
				return EIO;
			rc = gic_sq_poll_once(sq, order, 0);
			if (rc == EIO || rc == EPROTO)
				return rc;
			if (sq->retired >= sq->ready)
				break;
			if (rc == EAGAIN) {
				if (gic_now_ns() > deadline_ns)
					return ETIMEDOUT;
				gic_cpu_relax();
			}
		}
	}
	return 0;
}

/* PE-wide quiet walked as NVSHMEM 3.8's IBGDA quiet walks its QPs
 * (ibgda_quiet/ibgda_poll_cq in its ibgda_device.cuh: the ready head and
 * the CQ's consumer index read with relaxed loads that skip the L1, the CQ
 * polled only when the index is behind, a CTA-scope fence at the end of
 * each QP): for each queue of sqs[0..n) (exclusive owner of each), the
 * published and retired positions read with relaxed loads (device: strong
 * loads, served by L2, not L1), gic_sq_quiet only when retired < ready,
 * then the fence. The same test as gic_quiet_all's, at the cost of a
 * quiet that cannot keep the views in registers or L1: an idle queue costs
 * one L2 round trip and a fence. `gic lat --scope all-progress`. */
GIC_HD int gic_quiet_all_progress(gic_sq *sqs, int n, int order, uint64_t deadline_ns)
{
	for (int i = 0; i < n; i++) {
		gic_sq *sq = &sqs[i];
		uint64_t ready = gic_ld_relaxed_sys_u64(&sq->ready);
		int rc = 0;

		if (gic_ld_relaxed_sys_u64(&sq->retired) < ready)
			rc = gic_sq_quiet(sq, order, deadline_ns);
		/* Barrier: NVSHMEM's IBGDA_MFENCE (fence.acq_rel.cta) at the end
		 * of each QP's poll, ordering this queue's reads before the next
		 * queue's; a compiler barrier on the host (one thread). */
#if GIC_ON_DEVICE
		__threadfence_block();
#else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* A shared queue posted under one lock per WQE (the paper's slowest
 * sharing): between gic_sq_post_lock() and gic_sq_post_unlock() the
 * holder uses the exclusive calls (reserve_excl, build, publish_excl).
 * Waiters read the lock word before they try the compare-and-swap, so a
 * warp of waiters costs one load per spin instead of 32 serialized
 * atomics queued in front of the holder's release. */

/* Tries once: 1 with the lock taken, 0 when another thread holds it. */
GIC_HD int gic_sq_post_trylock(gic_sq *sq)
{
	if (gic_ld_relaxed_sys_u32(&sq->post_lock))
		return 0;
	return gic_atomic_cas_acquire_gpu_u32(&sq->post_lock, 0, 1) == 0;
}

GIC_HD int gic_sq_post_lock(gic_sq *sq, uint64_t deadline_ns)
{
	while (!gic_sq_post_trylock(sq)) {
		if (gic_now_ns() > deadline_ns)
			return ETIMEDOUT;
		gic_cpu_relax();
	}
	return 0;
}

/* Releases the queue state the holder changed (positions, WQEs, doorbell)
 * to the next holder. */
GIC_HD void gic_sq_post_unlock(gic_sq *sq)
{
	gic_st_release_gpu_u32(&sq->post_lock, 0);
}

/* One 8-byte inline write under the queue's lock: lock, reserve, build,
 * ring, unlock. The work happens in the branch that took the lock, for the
 * reason gic_sq_publish_inorder() gives. The WQE is signaled when its end
 * is a multiple of signal_every (a power of two), so that a CQE retires
 * the queue regularly. EIO after an error CQE, ETIMEDOUT at the deadline.
 *
 * The holder's path is what every other thread waits for, so it holds no
 * load it can do without: the queue's constant fields are read before the
 * lock is tried, and the two positions it needs (resv, retired: plain
 * fields, owned by the lock holder) are loaded together; only a ring
 * that looks full takes the exclusive calls' path. */
GIC_HD int gic_sq_locked_write_inline_u64(gic_sq *sq, uint64_t raddr, uint32_t rkey,
					  uint64_t value, uint32_t signal_every, int order,
					  uint64_t deadline_ns)
{
	gic_sq c;

	gic_sq_consts(&c, sq);
	for (;;) {
		if (gic_sq_post_trylock(sq)) {
			uint64_t pos = sq->resv, retired = sq->retired;
			int sig = ((pos + 1) & (signal_every - 1)) == 0, rc = 0;

			if (pos + 1 > retired + c.bb_cnt)
				rc = gic_sq_reserve_excl(sq, 1, &pos, order, deadline_ns);
			if (!rc) {
				gic_wqe_write_inline_u64(&c, pos, raddr, rkey, value,
							 sig ? GIC_CTRL_CQ_UPDATE : 0);
				gic_sq_ring(&c, pos + 1, order);
				/* Plain stores: the unlock publishes them. Positions
				 * only grow under the lock, so a signaled end is
				 * always the largest yet. */
				if (sig)
					sq->signaled = pos + 1;
				sq->resv = pos + 1;
				sq->ready = pos + 1;
			}
			gic_sq_post_unlock(sq);
			return rc;
		}
		if (gic_now_ns() > deadline_ns)
			return ETIMEDOUT;
		gic_cpu_relax();
	}
}

/* ------------------------------------------------------------------ */
/* A shared queue posted under a ticket lock, one lock hold per WQE (the
 * paper's "one doorbell lock per WQE"): each thread still reserves,
 * builds and rings its own WQE while it holds the lock, but the lock
 * carries the positions. The ticket is the WQE's position (one atomic add
 * on resv takes both, before the wait, so the holder loads no position),
 * and the lock is served in ticket order through ready: the holder is the
 * thread with ready == its ticket, and it releases by adding one to ready
 * after its doorbell. The chain from one holder to the next is then a load
 * that sees the add, the WQE and its fence, the doorbell and the fence
 * that orders it before the add (about three dependent steps; the
 * compare-and-swap lock above takes five to six: test, CAS, position
 * loads, fence, release).
 *
 * Layout: the fields of the hand-off mode (resv by atomic add, ready
 * advanced in reservation order), so a queue may mix ticket writers,
 * hand-off writers and gic_sq_ticket_quiet(), but not the compare-and-swap
 * lock or exclusive calls while any of them runs (gic_sq_quiet() is fine
 * once every writer has returned: `signaled` is kept, by an atomic max off
 * the chain). A holder that
 * fails (EIO, ETIMEDOUT) never releases: the queue is unusable, and every
 * later ticket ends with EIO (error CQE) or ETIMEDOUT. */

/* The holder's wait for room at pos (the ring looks full from *room_end,
 * a lower bound): polls the CQ under the shared poll lock. */
GIC_HD int gic_sq_ticket_room(gic_sq *sq, uint64_t pos, uint64_t *room_end, int order,
			      uint64_t deadline_ns)
{
	while (pos + 1 > *room_end) {
		int rc = gic_sq_poll_locked(sq, order);

		if (rc == EIO || rc == EPROTO)
			return rc;
		if (gic_ld_relaxed_sys_u32(&sq->err))
			return EIO;
		if (rc == EAGAIN && gic_now_ns() > deadline_ns)
			return ETIMEDOUT;
		*room_end = gic_ld_acquire_gpu_u64(&sq->retired) + sq->bb_cnt;
	}
	return 0;
}

/* Completion of a ticket-locked (or hand-off) queue from any thread that
 * shares it: takes a ticket, posts a signaled NOP under the lock, and waits
 * until it retires, so everything published before it has completed. */
GIC_HD int gic_sq_ticket_quiet(gic_sq *sq, int order, uint64_t deadline_ns)
{
	uint64_t pos = gic_atomic_add_relaxed_gpu_u64(&sq->resv, 1);
	uint64_t room_end = gic_ld_acquire_gpu_u64(&sq->retired) + sq->bb_cnt;
	gic_sq c;

	gic_sq_consts(&c, sq);
	for (;;) {
		if (gic_chain_ld_gpu_u64(&sq->ready) == pos) {
			int rc = gic_sq_ticket_room(sq, pos, &room_end, order, deadline_ns);

			if (rc)
				return rc;
			gic_wqe_nop(&c, pos, GIC_CTRL_CQ_UPDATE);
			gic_sq_note_signaled(sq, pos + 1, 1);
			gic_sq_ring_acquired(&c, pos + 1, order);
			/* Release: our doorbell stores before the hand-off add. */
			gic_fence_acq_rel_gpu();
			gic_chain_add_gpu_u64(&sq->ready, 1);
			return gic_sq_wait_retired_as(sq, pos + 1, 1, order, deadline_ns,
						      GIC_RUN_RELOAD);
		}
		if (gic_ld_relaxed_sys_u32(&sq->err))
			return EIO;
		if (gic_now_ns() > deadline_ns)
			return ETIMEDOUT;
		gic_cpu_relax();
	}
}

/* gic_sq_handoff_write_inline_u64() (below, the one to call; this is its
 * body): one 8-byte inline write on a queue shared by per-thread hand-off:
 * reserve (an atomic add), then one loop that builds the WQE once its slot
 * is free (polling the CQ meanwhile) and publishes it once every earlier
 * reservation is published. Everything the thread still owes happens
 * inside the loop: with the split calls (reserve_shared, build,
 * publish_inorder), GPU lanes of one warp can deadlock on a full ring, a
 * lane that found room waiting at the end of the space loop for lanes that
 * wait for its WQE. Signaled as gic_sq_locked_write_inline_u64() says
 * (signal_every 1: always, e.g. a thread's last write, whose retirement
 * gic_sq_wait_retired(sq, *pos_out + 1, ..) then awaits). The thread whose
 * WQE ends a multiple of ring_every (a power of two; 1: every WQE) rings
 * the doorbell for everything published before it; WQEs after the last
 * such multiple wait for a later one or for gic_sq_handoff_flush().
 * *pos_out (when not NULL) gets the position. EIO after an error CQE,
 * ETIMEDOUT at the deadline (the queue is then unusable: the reservation
 * is never published).
 *
 * Cost: the turn is a chain through every thread, so each thread fences
 * after its build (before its turn, all threads at once) and hands on with
 * an atomic add to ready (PTX observation order: the adds carry each
 * earlier fence to the ringer's acquire): a turn is one relaxed load that
 * sees the previous add, and only every ring_every-th thread fences on the
 * chain (two fences: acquire before its doorbell, release after). */
GIC_HD int gic_sq_handoff_write_turn(gic_sq *sq, uint64_t raddr, uint32_t rkey, uint64_t value,
				     uint32_t signal_every, uint32_t ring_every, int order,
				     uint64_t deadline_ns, uint64_t *pos_out)
{
	uint64_t pos = gic_atomic_add_relaxed_gpu_u64(&sq->resv, 1);
	uint64_t room_end = 0;
	int built = 0;
	gic_sq c;

	/* The wait for our turn is a chain through every earlier thread, so
	 * the turn's path loads nothing but the ready position: constants
	 * come into registers here, and the error flag is read before the
	 * acquire of ready so both loads are in flight at once. */
	gic_sq_consts(&c, sq);
	if (pos_out)
		*pos_out = pos;
	for (;;) {
		uint32_t err;

		if (!built) {
			if (pos + 1 > room_end) /* retired only grows: a lower bound */
				room_end = gic_ld_acquire_gpu_u64(&sq->retired) + c.bb_cnt;
			if (pos + 1 <= room_end) {
				int sig = ((pos + 1) & (signal_every - 1)) == 0;

				gic_wqe_write_inline_u64(&c, pos, raddr, rkey, value,
							 sig ? GIC_CTRL_CQ_UPDATE : 0);
				if (sig)
					gic_sq_note_signaled(sq, pos + 1, 1);
				/* Release half of the hand-off, paid here, off the
				 * chain (every thread at once): orders our WQE
				 * stores (and the signaled mark) before our add
				 * to ready below. */
				gic_fence_acq_rel_gpu();
				built = 1;
			}
		}
		err = gic_ld_relaxed_sys_u32(&sq->err);
		if (built && gic_chain_ld_gpu_u64(&sq->ready) == pos) {
			if (((pos + 1) & (ring_every - 1)) == 0) {
				/* Acquires every earlier thread's WQE through
				 * the chain of adds, then rings for them. */
				gic_sq_ring_acquired(&c, pos + 1, order);
				/* Orders our doorbell stores before the add, so
				 * that the next ringer's come after ours. */
				gic_fence_acq_rel_gpu();
			}
			/* Hands publication to the next thread: an atomic add
			 * (ready == pos, only the turn's owner moves it), so
			 * the chain carries every earlier release to the next
			 * ringer without a fence on the chain. */
			gic_chain_add_gpu_u64(&sq->ready, 1);
			return 0;
		}
		if (!built) {
			int rc = gic_sq_poll_locked(sq, order);

			if (rc == EIO || rc == EPROTO)
				return rc;
		}
		if (err)
			return EIO;
		if (gic_now_ns() > deadline_ns)
			return ETIMEDOUT;
		gic_cpu_relax();
	}
}

/* gic_sq_handoff_write_inline_u64() as its contract above says; on a GPU
 * the lanes of a warp that call it together also return together.
 *
 * Without that, the lane whose turn comes first goes on alone: its next
 * reservation is an atomic add of its own, so positions interleave across
 * warps and lanes, and nearly every turn of the chain waits for another
 * warp (or another divergent group of lanes) to be scheduled. With the
 * lanes together, a warp reserves consecutive positions and the chain runs
 * through its lanes (t256-q1-handoff on the H200: 0.84 against 2.70 M
 * msg/s; results/2026-12-01-h200-handoff-converge/). A lane reaches the
 * barrier only after it has handed its turn on, so no lane there waits for
 * one that waits for it. */
GIC_HD int gic_sq_handoff_write_inline_u64(gic_sq *sq, uint64_t raddr, uint32_t rkey,
					   uint64_t value, uint32_t signal_every,
					   uint32_t ring_every, int order, uint64_t deadline_ns,
					   uint64_t *pos_out)
{
#if GIC_ON_DEVICE
	unsigned lanes = __activemask(); /* the lanes that call together */
	int rc = gic_sq_handoff_write_turn(sq, raddr, rkey, value, signal_every, ring_every,
					   order, deadline_ns, pos_out);

	/* Reconverges the calling lanes (orders no memory access). */
	__syncwarp(lanes);
	return rc;
#else
	return gic_sq_handoff_write_turn(sq, raddr, rkey, value, signal_every, ring_every, order,
					 deadline_ns, pos_out);
#endif
}

/* One 8-byte inline write under the ticket lock: a doorbell lock per WQE
 * (the paper's Table 5, dagger row). The ticket is the WQE's position, so
 * the slot is the thread's from the start and it builds its WQE before its
 * turn; the lock, held from its turn to the add that hands it on, covers
 * the ordered doorbell sequence of that one WQE. That is the hand-off
 * ringing every WQE, and this calls it so. Signaled when its end is a
 * multiple of signal_every (a power of two). EIO after an error CQE,
 * ETIMEDOUT at the deadline. */
GIC_HD int gic_sq_ticket_write_inline_u64(gic_sq *sq, uint64_t raddr, uint32_t rkey,
					  uint64_t value, uint32_t signal_every, int order,
					  uint64_t deadline_ns)
{
	return gic_sq_handoff_write_inline_u64(sq, raddr, rkey, value, signal_every, 1, order,
					       deadline_ns, NULL);
}

/* Rings the doorbell for everything published by hand-off writers that
 * rang only every ring_every WQEs. Call it when no thread posts to the
 * queue any more (the doorbell must only move forward). */
GIC_HD void gic_sq_handoff_flush(gic_sq *sq, int order)
{
	gic_sq_ring(sq, gic_ld_acquire_gpu_u64(&sq->ready), order);
}

#if defined(__CUDACC__)
/* ------------------------------------------------------------------ */
/* Warp-cooperative posting (device only). A full warp posts 32 WQEs per
 * call: lane 0 reserves the warp's slots with one atomic add, every lane
 * builds its WQE, and lane 0 publishes the group with one doorbell after
 * the earlier reservations (shared queue).
 *
 * A warp keeps a gic_sq_warp in registers between calls: the queue's
 * constant fields (so that lanes do not reload them from global memory
 * after each acquire), a lower bound on the free space (the retired count
 * last acquired: it only grows, so the bound stays true and the space
 * check reads memory only when the bound says the ring may be full), and
 * the end of the warp's own last publication (when the atomic add returns
 * that position, no other thread reserved in between, so the queue's ready
 * position is ours already and the wait for our turn is skipped). */

typedef struct gic_sq_warp {
	gic_sq *sq;         /* the shared view */
	gic_sq consts;      /* copy of its constant fields (wqes, dbrec, db, bb_cnt, qpn) */
	uint64_t room_end;  /* lane 0: positions below this are free */
	uint64_t own_end;   /* lane 0: end of this warp's last publication */
} gic_sq_warp;

/* Starts a warp's posting on the shared queue sq. Every lane calls it. */
GIC_DEV void gic_sq_warp_begin(gic_sq_warp *w, gic_sq *sq)
{
	w->sq = sq;
	gic_sq_consts(&w->consts, sq);
	w->room_end = 0;        /* unknown: the first call acquires */
	w->own_end = ~0ull;     /* none */
}

/* Every lane posts one inline write of len bytes (the same len in every
 * lane) from src to raddr; the last lane's WQE is signaled when
 * signal_last is set. Every lane gets the same return code. */
GIC_DEV int gic_sq_warp_write_inline(gic_sq_warp *w, uint64_t raddr, uint32_t rkey,
				     const void *src, uint32_t len, int signal_last,
				     int order, uint64_t deadline_ns)
{
	const unsigned full = 0xffffffffu;
	uint32_t lane = threadIdx.x & 31;
	uint32_t nbb = gic_bb_for_ds(gic_ds_inline_write(len));
	uint64_t base = 0;
	int rc = 0;

	if (lane == 0) {
		base = gic_atomic_add_relaxed_gpu_u64(&w->sq->resv, 32 * nbb);
		if (base + 32 * nbb > w->room_end) {
			rc = gic_sq_wait_space(w->sq, base, 32 * nbb, 1, order, deadline_ns);
			w->room_end = gic_ld_acquire_gpu_u64(&w->sq->retired) + w->consts.bb_cnt;
		}
	}
	rc = __shfl_sync(full, rc, 0);
	base = __shfl_sync(full, base, 0);
	if (rc)
		return rc;
	gic_wqe_write_inline(&w->consts, base + lane * nbb, raddr, rkey, src, len,
			     (signal_last && lane == 31) ? GIC_CTRL_CQ_UPDATE : 0);
	if (signal_last && lane == 31)
		gic_sq_note_signaled(w->sq, base + 32 * nbb, 1);
	/* Orders every lane's WQE stores before lane 0's doorbell sequence. */
	__syncwarp(full);
	if (lane == 0) {
		if (base == w->own_end) {
			/* Our own publication ended here: ready == base. */
			gic_sq_ring(&w->consts, base + 32 * nbb, order);
			gic_st_release_gpu_u64(&w->sq->ready, base + 32 * nbb);
		} else {
			rc = gic_sq_publish_inorder(w->sq, base, 32 * nbb, order, deadline_ns);
		}
		w->own_end = base + 32 * nbb;
	}
	return __shfl_sync(full, rc, 0);
}

/* The lane's CQE of one trip of gic_sq_quiet_warp(): lane k loads the
 * tail of the CQE at consumer index ci + k (relaxed, all 32 side by side,
 * one trip), then an acquire fence at order's scope, as
 * gic_cqe_load_tails() does. Sets *good when the CQE is written, of QP
 * qpn and no error; *reach when it is good and its WQE starts at target - 1
 * or later (retired: the run's start, from which the 16-bit WQE counter
 * counts); *counter to its WQE counter. Returns 1 when the CQE is written. */
GIC_DEV int gic_sq_warp_tail(const gic_cqe64 *cqes, uint32_t cqe_cnt, uint32_t ci, uint32_t qpn,
			     uint64_t retired, uint64_t target, int order, int *good, int *reach,
			     uint16_t *counter)
{
	uint32_t my = ci + (threadIdx.x & 31);
	uint64_t tail = gic_ld_relaxed_sys_u64(
		(const uint64_t *)((const uint8_t *)&cqes[my & (cqe_cnt - 1)] + GIC_CQE_TAIL_OFFSET));
	int owned;

	gic_cqe_tails_acquire(order);
	owned = gic_cqe_sw_owned(tail, my, cqe_cnt);
	*counter = gic_cqe_tail_wqe_counter(tail);
	*good = owned && gic_cqe_tail_qpn(tail) == qpn && gic_cqe_tail_opcode(tail) != GIC_CQE_REQ_ERR;
	*reach = *good && gic_sq_wqe_start(retired, *counter) + 1 >= target;
	return owned;
}

/* The most CQEs a run of gic_sq_quiet_warp() takes before it gives the
 * slots back (one consumer-record release, one retirement, one lock hold):
 * this, or half the CQ when that is less. */
#define GIC_POLL_RUN_WARP 256

/* One run of gic_sq_quiet_warp(), lane 0 holding the CQ (its poll lock
 * when shared): takes the leading good CQEs from consumer index ci (the
 * CQ's, lane 0's) 32 per trip, until one reaches target, one is not
 * written, one needs the serial take (an error, another QP's) or the run
 * is full; then lane 0 gives the slots back and retires once
 * (gic_sq_cq_finish), and hands a CQE the warp could not take to the
 * serial run (gic_sq_poll_run_as), which records and reports it as
 * gic_sq_quiet_wide() would. Returns the serial run's code (0 without
 * one) in every lane; *took: the CQEs the warp took. */
GIC_DEV int gic_sq_warp_run(gic_sq *sq, uint32_t ci, uint64_t retired, uint64_t target,
			    int shared, int order, int *took)
{
	const unsigned full = 0xffffffffu;
	gic_cq *cq = sq->cq;
	uint32_t cqe_cnt = cq->cqe_cnt, cap = cqe_cnt / 2 < GIC_POLL_RUN_WARP ? cqe_cnt / 2
									    : GIC_POLL_RUN_WARP;
	uint16_t counter = 0;
	int n = 0, serial = 0, rc = 0;

	while ((uint32_t)n < cap) {
		int good, reach, run;
		uint16_t next;
		int owned = gic_sq_warp_tail(cq->cqes, cqe_cnt, ci, sq->qpn, retired, target, order,
					     &good, &reach, &next);
		unsigned good_mask = __ballot_sync(full, good), owned_mask = __ballot_sync(full, owned);
		unsigned reach_mask = __ballot_sync(full, reach);

		run = good_mask == full ? 32 : __ffs(~good_mask) - 1;
		reach_mask &= run == 32 ? full : (1u << run) - 1; /* in the leading run only */
		if (reach_mask)
			run = __ffs(reach_mask); /* up to and with the first that reaches target */
		if (run)
			counter = (uint16_t)__shfl_sync(full, next, run - 1);
		ci += (uint32_t)run;
		n += run;
		if (reach_mask || run < 32) {
			serial = !reach_mask && run < 32 && (owned_mask >> run & 1);
			break;
		}
	}
	/* Orders every lane's tail loads (each behind its acquire fence)
	 * before lane 0's release of the slots they read. */
	__syncwarp(full);
	if ((threadIdx.x & 31) == 0) {
		cq->ci = ci;
		if (n)
			gic_sq_cq_finish(sq, 0, 1, counter, shared, order);
		if (serial)
			rc = gic_sq_poll_run_as(sq, target, order, shared, GIC_RUN_HELD);
	}
	*took = n;
	return __shfl_sync(full, rc, 0);
}

/* gic_sq_quiet_wide() for a whole warp: every lane calls it with the same
 * arguments and gets the same result (0 once retired >= target; EIO, EPROTO
 * or ETIMEDOUT as gic_sq_wait_retired() returns them). Each trip loads 32
 * CQE tails side by side and takes the leading run of good ones in one
 * step (gic_sq_warp_run), so that a quiet behind hundreds of completions
 * (a drained queue's, after its last post) costs about one trip per 32
 * CQEs instead of one per 8, and one release per run of up to
 * GIC_POLL_RUN_WARP instead of 16. Lane 0 owns the CQ's state (under the
 * queue's poll lock when shared). A CQ of fewer than 64 entries takes lane
 * 0's gic_sq_quiet_wide(). */
GIC_DEV int gic_sq_quiet_warp(gic_sq *sq, uint64_t target, int shared, int order,
			      uint64_t deadline_ns)
{
	const unsigned full = 0xffffffffu;
	int lane = threadIdx.x & 31, rc = 0;

	if (sq->cq->cqe_cnt < 64) {
		if (lane == 0)
			rc = gic_sq_quiet_wide(sq, target, shared, order, deadline_ns);
		return __shfl_sync(full, rc, 0);
	}
	for (;;) {
		/* Lane 0: 1 retired, EIO an error already seen, EAGAIN another
		 * thread holds the poll lock, 0 the lock is ours (or needs none). */
		int state = 0, took = 0;
		uint32_t ci = 0;
		uint64_t retired = 0;

		if (lane == 0) {
			retired = gic_state_ld64(&sq->retired, shared);
			if (retired >= target)
				state = 1;
			else if (gic_state_ld32(&sq->err, shared))
				state = EIO;
			else if (shared && gic_atomic_cas_acquire_gpu_u32(&sq->poll_lock, 0, 1) != 0)
				state = EAGAIN;
			else
				ci = sq->cq->ci;
		}
		state = __shfl_sync(full, state, 0);
		if (state == 1)
			return 0;
		if (state == EIO)
			return EIO;
		if (state == 0) {
			rc = gic_sq_warp_run(sq, __shfl_sync(full, ci, 0),
					     __shfl_sync(full, retired, 0), target, shared, order, &took);
			/* Releases the CQ state (ci, retired) to the next lock holder. */
			if (lane == 0 && shared)
				gic_st_release_gpu_u32(&sq->poll_lock, 0);
			if (rc == EIO || rc == EPROTO)
				return rc;
			if (took)
				continue;
		}
		if (__shfl_sync(full, lane == 0 && gic_now_ns() > deadline_ns, 0))
			return ETIMEDOUT;
		gic_cpu_relax();
	}
}
#endif

/* Human-readable name of an mlx5 CQE syndrome. */
GIC_HD const char *gic_syndrome_name(uint8_t syndrome)
{
	switch (syndrome) {
	case GIC_SYND_LOCAL_LENGTH_ERR: return "local length error";
	case GIC_SYND_LOCAL_QP_OP_ERR: return "local QP operation error";
	case GIC_SYND_LOCAL_PROT_ERR: return "local protection error";
	case GIC_SYND_WR_FLUSH_ERR: return "work request flushed";
	case GIC_SYND_MW_BIND_ERR: return "memory window bind error";
	case GIC_SYND_BAD_RESP_ERR: return "bad response";
	case GIC_SYND_LOCAL_ACCESS_ERR: return "local access error";
	case GIC_SYND_REMOTE_INVAL_REQ_ERR: return "remote invalid request";
	case GIC_SYND_REMOTE_ACCESS_ERR: return "remote access error";
	case GIC_SYND_REMOTE_OP_ERR: return "remote operation error";
	case GIC_SYND_TRANSPORT_RETRY_EXC_ERR: return "transport retry counter exceeded";
	case GIC_SYND_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
	case GIC_SYND_REMOTE_ABORTED_ERR: return "remote aborted";
	default: return "unknown syndrome";
	}
}

#endif /* GIC_POST_H */
