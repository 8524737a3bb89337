/*
 * softnic execution core, written once for the CPU engine (host C) and the
 * GPU engine (CUDA): decode a WQE, check it against the memory regions,
 * move the data, write the CQE, record errors. It works on engine_state.h
 * structures only; each QP is executed by one engine thread at a time.
 */
#ifndef SOFTNIC_ENGINE_CORE_H
#define SOFTNIC_ENGINE_CORE_H

#include <stddef.h>
#include <string.h>
#if !defined(__CUDA_ARCH__)
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#endif

#include "engine_state.h"

/* The plain RDMA write is the path every rate runs: its functions stay
 * inlined into the pass loop (SNX_HOT); the rarer operations are called
 * (SNX_COLD), so that their code does not crowd it out. */
#if defined(__CUDACC__)
#define SNX_HOT GIC_HD
#define SNX_COLD static __host__ __device__ __noinline__
#else
#define SNX_HOT static inline __attribute__((always_inline))
#define SNX_COLD static __attribute__((noinline))
#endif

/* Rare work of a pass's start and end (a watched doorbell): called on the
 * host; inlined on the device, where handing the pass's address to a
 * called function would put the whole pass into local memory. */
#if defined(__CUDA_ARCH__)
#define SNX_PASS_COLD GIC_HD
#else
#define SNX_PASS_COLD SNX_COLD
#endif

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
 * softnic's submitters and consumers need (snx_shared.gpu_scope). The
 * _scope forms take the flag from a register (snx_pass.gpu_scope): after
 * an acquire, loading it from snx_shared would be one more memory trip. */
GIC_HD uint32_t snx_ld_acquire_u32_scope(uint32_t gpu_scope, const uint32_t *p)
{
	return gpu_scope ? gic_ld_acquire_gpu_u32(p) : gic_ld_acquire_sys_u32(p);
}

GIC_HD void snx_st_release_u64_scope(uint32_t gpu_scope, uint64_t *p, uint64_t v)
{
	if (gpu_scope)
		gic_st_release_gpu_u64(p, v);
	else
		gic_st_release_sys_u64(p, v);
}

GIC_HD uint64_t snx_ld_acquire_u64(const snx_shared *sh, const uint64_t *p)
{
	return sh->gpu_scope ? gic_ld_acquire_gpu_u64(p) : gic_ld_acquire_sys_u64(p);
}

GIC_HD uint32_t snx_ld_acquire_u32(const snx_shared *sh, const uint32_t *p)
{
	return snx_ld_acquire_u32_scope(sh->gpu_scope, p);
}

GIC_HD void snx_st_release_u64(const snx_shared *sh, uint64_t *p, uint64_t v)
{
	snx_st_release_u64_scope(sh->gpu_scope, p, v);
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

/* The operands of an atomic (w->ds checked against avail), its remote
 * address segment at byte 16 + o (o: a DCI's address vector, else 0):
 * 8-byte fetch-add and compare-swap take a 16-byte atomic segment; masked
 * ones name their size in opmod and take 16 bytes (4-byte operands, or the
 * 8-byte fetch-add) or 32 (the 8-byte compare-swap). One pointer data
 * segment of the operand's size follows: where the old value lands. */
GIC_HD int snx_decode_atomic(const uint8_t *b, uint32_t o, softnic_wqe *w, uint8_t *vs)
{
	int masked = w->opcode == GIC_OPCODE_ATOMIC_MASKED_FA ||
		     w->opcode == GIC_OPCODE_ATOMIC_MASKED_CS;
	uint32_t args = GIC_SEG_SIZE, at = 2 * GIC_SEG_SIZE + o;

	w->atomic_size = 8;
	w->atomic_swap_mask = w->atomic_cmp_mask = 0;
	if (masked) {
		uint32_t log = w->opmod & GIC_OPMOD_EXT_ATOMIC_SIZE_MASK;

		if (!(w->opmod & GIC_OPMOD_EXT_ATOMIC) || log > 1)
			return snx_fail(vs, SOFTNIC_VSYND_BAD_ATOMIC_SIZE, GIC_SYND_LOCAL_QP_OP_ERR);
		w->atomic_size = (uint8_t)(4u << log);
		if (w->atomic_size == 8 && w->opcode == GIC_OPCODE_ATOMIC_MASKED_CS)
			args = 2 * GIC_SEG_SIZE;
	}
	if (w->ds * GIC_SEG_SIZE != at + args + GIC_SEG_SIZE ||
	    (snx_rd_be32(b + at + args) & GIC_INLINE_SEG))
		return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
	w->raddr = snx_rd_be64(b + 16 + o);
	w->rkey = snx_rd_be32(b + 24 + o);
	if (w->atomic_size == 4) {
		w->atomic_add = snx_rd_be32(b + at);
		w->atomic_cmp = snx_rd_be32(b + at + 4);
		w->atomic_swap_mask = snx_rd_be32(b + at + 8);
		w->atomic_cmp_mask = snx_rd_be32(b + at + 12);
	} else {
		w->atomic_add = snx_rd_be64(b + at);
		w->atomic_cmp = snx_rd_be64(b + at + 8);
		if (args > GIC_SEG_SIZE) {
			w->atomic_swap_mask = snx_rd_be64(b + at + 16);
			w->atomic_cmp_mask = snx_rd_be64(b + at + 24);
		}
	}
	return snx_decode_payload(b, at + args, w->ds * GIC_SEG_SIZE, w, vs);
}

/* The control segment: fills the ctrl fields of w and checks ds against
 * avail. Returns 0 or a syndrome. */
GIC_HD int snx_decode_ctrl(const uint8_t *b, size_t avail, softnic_wqe *w, uint8_t *vs)
{
	uint32_t w0, w1;

	/* Every field but the segment list (filled up to num_sge): clearing
	 * 300 bytes a WQE would cost the CPU engine a fifth of its rate. */
	w->opcode = w->fm_ce_se = 0;
	w->wqe_index = 0;
	w->qpn = w->ds = w->imm = w->rkey = w->inline_len = w->num_sge = 0;
	w->raddr = w->atomic_add = w->total_len = 0;
	w->atomic_size = 0; /* the other atomic operands: set for atomics only */
	w->av_bytes = 0;    /* the DC fields: set when it is not 0 */
	w->inline_data = NULL;
	*vs = SOFTNIC_VSYND_NONE;
	if (avail < GIC_SEG_SIZE)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
	w0 = snx_rd_be32(b);
	w1 = snx_rd_be32(b + 4);
	w->opcode = (uint8_t)w0;
	w->opmod = (uint8_t)(w0 >> 24);
	w->wqe_index = (uint16_t)(w0 >> 8);
	w->qpn = w1 >> 8;
	w->ds = w1 & 0xff;
	w->fm_ce_se = b[11];
	memcpy(&w->imm, b + 12, 4);
	if (w->ds == 0 || w->ds > GIC_WQE_MAX_DS || (size_t)w->ds * GIC_SEG_SIZE > avail)
		return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
	return 0;
}

/* The segments after the control segment and o bytes of address vector
 * (a DCI's; 0 otherwise), by opcode. Returns 0 or a syndrome. */
GIC_HD int snx_decode_body(const uint8_t *b, uint32_t o, softnic_wqe *w, uint8_t *vs)
{
	uint32_t end = w->ds * GIC_SEG_SIZE;

	switch (w->opcode) {
	case GIC_OPCODE_NOP:
		return 0;
	case GIC_OPCODE_SEND:
	case GIC_OPCODE_SEND_IMM:
		return snx_decode_payload(b, GIC_SEG_SIZE + o, end, w, vs);
	case GIC_OPCODE_DUMP: {
		/* Pointer segments only: the buffer the NIC is to read. */
		int r = snx_decode_payload(b, GIC_SEG_SIZE + o, end, w, vs);

		if (!r && (w->inline_data || !w->num_sge))
			return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		return r;
	}
	case GIC_OPCODE_RDMA_WRITE:
	case GIC_OPCODE_RDMA_WRITE_IMM:
	case GIC_OPCODE_RDMA_READ: {
		int r;

		if (end < 2 * GIC_SEG_SIZE + o)
			return snx_fail(vs, SOFTNIC_VSYND_BAD_DS, GIC_SYND_LOCAL_QP_OP_ERR);
		w->raddr = snx_rd_be64(b + 16 + o);
		w->rkey = snx_rd_be32(b + 24 + o);
		r = snx_decode_payload(b, 2 * GIC_SEG_SIZE + o, end, w, vs);
		if (!r && w->opcode == GIC_OPCODE_RDMA_READ && w->inline_data)
			return snx_fail(vs, SOFTNIC_VSYND_INLINE_READ, GIC_SYND_LOCAL_QP_OP_ERR);
		return r;
	}
	case GIC_OPCODE_ATOMIC_FA:
	case GIC_OPCODE_ATOMIC_CS:
	case GIC_OPCODE_ATOMIC_MASKED_FA:
	case GIC_OPCODE_ATOMIC_MASKED_CS:
		return snx_decode_atomic(b, o, w, vs);
	default:
		return snx_fail(vs, SOFTNIC_VSYND_BAD_OPCODE, GIC_SYND_LOCAL_QP_OP_ERR);
	}
}

/* 1 when a WQE that failed to decode for an RC QP looks like a DCI's: a
 * remote opcode with room for a full address vector, whose dqp_dct word,
 * where an RC WQE has its rkey, carries GIC_EXTENDED_UD_AV (no softnic key
 * has bit 31 set). */
GIC_HD int snx_wqe_looks_dc(const uint8_t *b, const softnic_wqe *w)
{
	int remote = w->opcode == GIC_OPCODE_RDMA_WRITE || w->opcode == GIC_OPCODE_RDMA_WRITE_IMM ||
		     w->opcode == GIC_OPCODE_RDMA_READ || w->opcode == GIC_OPCODE_ATOMIC_CS ||
		     w->opcode == GIC_OPCODE_ATOMIC_FA || w->opcode == GIC_OPCODE_ATOMIC_MASKED_CS ||
		     w->opcode == GIC_OPCODE_ATOMIC_MASKED_FA;

	return remote && w->ds >= 1 + GIC_AV_FULL_DS + 1 &&
	       (snx_rd_be32(b + GIC_SEG_SIZE + 8) & GIC_EXTENDED_UD_AV);
}

/* See softnic_decode_wqe() in gic/softnic.h. */
GIC_HD int snx_decode_wqe(const uint8_t *b, size_t avail, softnic_wqe *w, uint8_t *vs)
{
	int r = snx_decode_ctrl(b, avail, w, vs);

	if (!r)
		r = snx_decode_body(b, 0, w, vs);
	if (r && w->ds && (size_t)w->ds * GIC_SEG_SIZE <= avail && snx_wqe_looks_dc(b, w))
		r = snx_fail(vs, SOFTNIC_VSYND_DC_NOT_DCI, GIC_SYND_LOCAL_QP_OP_ERR);
	return r;
}

/* See softnic_decode_dci_wqe() in gic/softnic.h. The AV's form is read
 * from dqp_dct (GIC_EXTENDED_UD_AV: 48 bytes, else 16) whenever its bytes
 * are there, so that an error can name the DCT and the form. */
GIC_HD int snx_decode_dci_wqe(const uint8_t *b, size_t avail, softnic_wqe *w, uint8_t *vs)
{
	int r = snx_decode_ctrl(b, avail, w, vs);
	uint32_t dqp;

	if (r || w->opcode == GIC_OPCODE_NOP)
		return r;
	if (avail < 2 * GIC_SEG_SIZE)
		return snx_fail(vs, SOFTNIC_VSYND_DC_BAD_AV, GIC_SYND_LOCAL_QP_OP_ERR);
	dqp = snx_rd_be32(b + GIC_SEG_SIZE + 8);
	w->av_bytes = (dqp & GIC_EXTENDED_UD_AV) ? GIC_AV_FULL_DS * GIC_SEG_SIZE
						 : GIC_AV_COMPACT_DS * GIC_SEG_SIZE;
	w->dct_num = dqp & 0xffffffu;
	w->dc_key = snx_rd_be64(b + GIC_SEG_SIZE);
	if (w->ds * GIC_SEG_SIZE < (uint32_t)GIC_SEG_SIZE + w->av_bytes)
		return snx_fail(vs, SOFTNIC_VSYND_DC_BAD_AV, GIC_SYND_LOCAL_QP_OP_ERR);
	return snx_decode_body(b, w->av_bytes, w, vs);
}

/* ------------------------------------------------------------------ */
/* Regions in GPU memory behind the CPU engine (gic/softnic_devmem.h, and
 * a multi-process softnic's softnic_shared_reg_gpu_mr). The CPU engine
 * cannot touch them, so their MR slots carry SNX_MR_DEVICE in the access
 * word and the CPU engine moves their data through devmem.c, which copies
 * with CUDA (into a peer process's memory opened through CUDA IPC, for a
 * multi-process softnic). The GPU engine never sees the flag. */
#define SNX_MR_DEVICE 0x80000000u
enum { SNX_DEV_REMOTE = 1, SNX_DEV_LOCAL = 2 }; /* snx_pass.dev: which ends are GPU memory */

#if !GIC_ON_DEVICE
#ifdef __cplusplus
extern "C" {
#endif
/* devmem.c. A resolved write (as snx_move_write takes it), read (from the
 * peer's src into the local dst[]) or atomic (on dst, its old value into
 * res) whose ends dev (SNX_DEV_*) says are GPU memory; sh is the engine's
 * softnic. Return 0 or a syndrome, with *vs. */
int softnic_dev_write(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
		      uint8_t *const src[SOFTNIC_MAX_SGE], uint8_t *dst, uint32_t dev, uint8_t *vs);
int softnic_dev_read(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
		     uint8_t *const dst[SOFTNIC_MAX_SGE], uint8_t *src, uint32_t dev, uint8_t *vs);
int softnic_dev_atomic(const snx_shared *sh, const snx_qp *qp, const softnic_wqe *w,
		       uint8_t *dst, uint8_t *res, uint32_t dev, uint8_t *vs);
/* shm.c: the peer's GPU address dst (len bytes) of a multi-process
 * softnic's QP, translated into a buffer opened in this process; *out =
 * dst when qp's peer is in this process. 0 or a syndrome. */
int softnic_shm_dev_translate(const snx_shared *sh, const snx_qp *qp, uint8_t *dst, uint64_t len,
			      uint8_t **out, uint8_t *vs);
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
	uint32_t peer_rights;   /* the rights the peer QP grants, read once per pass */
	/* MR caches: they outlive a pass when the engine keeps its snx_pass,
	 * and are dropped whenever a deregistration bumped the epoch. */
	uint32_t mr_epoch;
	snx_mr_hit remote, local;
	uint32_t dev;           /* SNX_DEV_* of the WQE being resolved */
	uint32_t gpu_scope;     /* snx_shared.gpu_scope, fixed before any engine runs */
	/* The WQE being run claimed a slot of its responder's receive CQ, and
	 * wrote a CQE there (else the slot goes back). */
	uint8_t recv_claimed, recv_used;
	/* A peer of another process (qp->peer_map): its table's MR epoch as
	 * this pass read it, and the translation of the last remote key
	 * resolved there (valid while xmap, xkey and xepoch still match). */
	uint32_t peer_epoch;
	uint32_t xkey, xepoch;
	int64_t xdelta;
	const snx_peer_map *xmap;
} snx_pass;

/* Prepares a pass record that an engine thread keeps for its lifetime. */
GIC_HD void snx_pass_init(snx_pass *p, snx_shared *sh)
{
	memset(p, 0, sizeof(*p));
	p->sh = sh;
	p->mr_epoch = ~0u;
	p->gpu_scope = sh->gpu_scope;
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
	hit->base = gic_ld_relaxed_sys_u64(&m->addr);
	hit->len = gic_ld_relaxed_sys_u64(&m->len);
	hit->access = gic_ld_relaxed_sys_u32(&m->access);
	hit->pd = gic_ld_relaxed_sys_u32(&m->pd);
	/* Orders the field loads above before the key re-check below. */
	gic_fence_acquire_sys();
	if (gic_ld_relaxed_sys_u32(&m->key) != key || hit->pd != pd)
		return SOFTNIC_VSYND_BAD_LKEY;
	hit->key = key;
	return 0;
}

/* Resolves key in protection domain pd of MR table `table` (a softnic's
 * snx_shared) for [addr, addr + len) with the access bits need, through a
 * one-entry cache of the pass (key 0, which no MR has, always looks up:
 * an emptied entry has key 0 and keeps its last region). Returns 0 and
 * the pointer, or SOFTNIC_VSYND_BAD_LKEY, _LOCAL_BOUNDS or _LOCAL_ACCESS
 * (the caller maps them for remote keys). A key deregistered before the
 * doorbell that announced a WQE fails; one deregistered during a pass may
 * still serve it, as an mkey a NIC has cached serves the WQEs in flight. */
GIC_HD int snx_mr_resolve_in(snx_shared *table, snx_mr_hit *cache, uint32_t pd, uint32_t key,
			     uint64_t addr, uint64_t len, uint32_t need, uint8_t **ptr)
{
	if (!key || cache->key != key || cache->pd != pd) {
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

/* Before a remote key is resolved in another process's table (map set):
 * when that table's MR epoch moved since the pass's caches were filled
 * (the owner deregistered something), they are dropped, as a NIC's MR
 * cache is on a deregistration. epoch is the table's, as of this pass. */
GIC_HD void snx_peer_epoch_check(snx_pass *p, const snx_peer_map *map, uint32_t epoch)
{
	if (map && epoch != p->xepoch) {
		gic_fence_acquire_sys(); /* orders the table's reads after the epoch */
		p->xepoch = epoch;
		p->xkey = 0;
		p->remote.key = 0;
	}
}

/* A remote address *ptr that key resolved in another process's MR table
 * (a QP's peer_map says so), moved to where this process maps the owner's
 * allocation; the translation is cached in the pass. 0, or
 * SOFTNIC_VSYND_PEER_UNMAPPED (registered after this process last mapped
 * the owner's regions). */
GIC_HD int snx_peer_translate(snx_pass *p, const snx_peer_map *map, uint32_t key, uint8_t **ptr)
{
	if (p->xkey != key || p->xmap != map) {
		const snx_peer_map *m = &map[(key >> 8) & (SNX_MAX_MR - 1)];

		if (gic_ld_acquire_sys_u32(&m->key) != key)
			return SOFTNIC_VSYND_PEER_UNMAPPED;
		p->xdelta = (int64_t)gic_ld_relaxed_sys_u64((const uint64_t *)&m->delta);
		p->xkey = key;
		p->xmap = map;
	}
	*ptr += p->xdelta;
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

/* The lock of a CQ or a receive queue (snx_rq.lock). want: the CQ's
 * snx_cq.want, stored after every failed attempt, which makes a GPU
 * engine warp that keeps the lock across passes (engine_gpu.cu, "parked")
 * let it go at its next scan; NULL for a receive queue's lock, which
 * nobody keeps. Engine threads of one engine kind take this lock: GPU
 * scope suffices on the device (all writers are the engine's warps, which
 * cannot vanish: the lock value there is 1). On the host the value is the
 * holder's process id. 1 with the lock held; 0 when the lock is
 * abandoned: (host) its holder process is gone (checked after
 * SNX_CQ_DEAD_CHECK_NS), or (both) it was held SNX_CQ_LOCK_NS. The lock is
 * then marked abandoned and every later lock fails at once (the CQ is
 * broken: its holder may have left it half-written). */
GIC_HD int snx_lock_want(uint32_t *lock, uint32_t *want)
{
#if GIC_ON_DEVICE
	uint32_t me = 1;
#else
	uint32_t me = (uint32_t)getpid();
#endif
	uint64_t t0 = 0;

	for (uint32_t spins = 1;; spins++) {
		uint32_t v = gic_atomic_cas_acquire_gpu_u32(lock, 0, me);
		uint64_t now;
		int gone = 0;

		if (v == 0)
			return 1;
		if (v == SNX_CQ_ABANDONED)
			return 0;
		/* A hint (no order needed: the lock decides), stored only when
		 * not yet set, so that spinners keep the line shared. */
		if (want && !gic_ld_relaxed_sys_u32(want))
			gic_st_relaxed_sys_u32(want, 1);
		if (spins % 1024) {
			gic_cpu_relax();
			continue;
		}
		now = gic_now_ns();
		if (!t0)
			t0 = now;
#if !GIC_ON_DEVICE
		gone = now - t0 > SNX_CQ_DEAD_CHECK_NS && v != me && v != 1 && kill((pid_t)v, 0) &&
		       errno == ESRCH;
#endif
		if (gone || now - t0 > SNX_CQ_LOCK_NS) {
			/* Only if v still holds it: a slow holder that let go
			 * in the meantime leaves the CQ usable. */
			gic_atomic_cas_acquire_gpu_u32(lock, v, SNX_CQ_ABANDONED);
			return 0;
		}
#if !GIC_ON_DEVICE
		sched_yield();
#endif
	}
}

GIC_HD int snx_lock(uint32_t *lock)
{
	return snx_lock_want(lock, NULL);
}

GIC_HD void snx_unlock(uint32_t *lock)
{
	gic_st_release_gpu_u32(lock, 0);
}

GIC_HD int snx_cq_lock(snx_cq *cq) { return snx_lock_want(&cq->lock, &cq->want); }
GIC_HD void snx_cq_unlock(snx_cq *cq) { snx_unlock(&cq->lock); }

/* Claims n CQE slots with the CQ's lock held; 0 when the CQ lacks them
 * (the consumer-index record is re-read only then). An overrun-ignore CQ
 * always has them: its consumer index is never read. */
GIC_HD int snx_cq_claim_locked(const snx_shared *sh, snx_cq *cq, uint32_t n)
{
	if (cq->mode & SNX_CQ_OI) {
		cq->claimed += n;
		return 1;
	}
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
	uint32_t srqn;     /* responder CQEs of an SRQ receive: its number */
} snx_cqe_fields;

/* Fills the first 56 bytes of a CQE (device: four wide stores). */
GIC_HD void snx_cqe_fill_body(gic_cqe64 *cqe, const snx_cqe_fields *f)
{
	int err = f->cqe_opcode == GIC_CQE_REQ_ERR || f->cqe_opcode == GIC_CQE_RESP_ERR;
	uint64_t w48 = err ? ((uint64_t)f->vendor_syndrome << 48) | ((uint64_t)f->syndrome << 56) : 0;
#if GIC_ON_DEVICE
	uint4 zero = make_uint4(0, 0, 0, 0);

	((uint4 *)cqe)[0] = zero;
	((uint4 *)cqe)[1] = zero;
	((uint4 *)cqe)[2] = make_uint4(gic_htobe32(f->srqn), f->imm, 0, gic_htobe32(f->byte_cnt));
	*(uint64_t *)((uint8_t *)cqe + 48) = w48;
#else
	memset(cqe, 0, 48);
	cqe->srqn_uidx_be = gic_htobe32(f->srqn);
	cqe->imm_inval_pkey = f->imm;
	cqe->byte_cnt_be = gic_htobe32(f->byte_cnt);
	memcpy((uint8_t *)cqe + 48, &w48, 8); /* err: vendor syndrome, syndrome */
#endif
}

/* Writes one CQE into a claimed slot, with the CQ's lock held. Every data
 * write of this WQE and the earlier ones happened before the release store
 * of the CQE's tail, so a poller that sees the CQE sees the data. */
/* Writes CQE number pi of a CQ whose ring, size and mode the caller read
 * under its lock (snx_cq_write_locked; the GPU engine's batch, which
 * reads them with its claim): no load of the CQ record. The caller moves
 * cq->pi. The tail's release (at gpu_scope) orders every data write of
 * this WQE and the earlier ones before it. snx_cqe_fill_slot: the body,
 * and the tail's value and place, for a caller that stores the tail its
 * own way. */
GIC_HD uint64_t *snx_cqe_fill_slot(gic_cqe64 *cqes, uint32_t cqe_cnt, uint32_t mode, uint64_t pi,
				    const snx_cqe_fields *f, uint64_t *tail)
{
	uint32_t sop = gic_htobe32(((uint32_t)f->wqe_opcode << 24) | (f->qpn & 0xffffffu));
	gic_cqe64 *cqe = &cqes[(mode & SNX_CQ_CC) ? 0 : pi & (cqe_cnt - 1)];

	snx_cqe_fill_body(cqe, f);
	/* Tail bytes 56..63: sop_drop_qpn, wqe_counter, signature, op_own. */
	*tail = (uint64_t)sop | ((uint64_t)gic_htobe16(f->wqe_counter) << 32) |
		((uint64_t)gic_make_op_own(f->cqe_opcode, (uint32_t)pi, cqe_cnt) << 56);
	return (uint64_t *)((uint8_t *)cqe + GIC_CQE_TAIL_OFFSET);
}

GIC_HD void snx_cqe_write_slot(uint32_t gpu_scope, gic_cqe64 *cqes, uint32_t cqe_cnt,
			       uint32_t mode, uint64_t pi, const snx_cqe_fields *f)
{
	uint64_t tail, *at = snx_cqe_fill_slot(cqes, cqe_cnt, mode, pi, f, &tail);

	snx_st_release_u64_scope(gpu_scope, at, tail);
}

GIC_HD void snx_cq_write_locked(const snx_shared *sh, snx_cq *cq, const snx_cqe_fields *f,
				softnic_stats *st)
{
	uint64_t pi = cq->pi++;

	snx_cqe_write_slot(sh->gpu_scope, cq->cqes, cq->cqe_cnt, cq->mode, pi, f);
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

/* Adds v to an engine counter. On the device a reduction (red): the
 * thread never waits for it, where an atom's result, even unused, holds
 * a scoreboard that the warp's next pass waits on (one atomic round trip
 * before its next doorbell check). On the host a relaxed fetch-add. */
GIC_HD void snx_counter_add(uint64_t *p, uint64_t v)
{
#if GIC_ON_DEVICE
	asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

/* Adds a pass's counts to an engine's counters. */
GIC_HD void snx_stats_flush(const softnic_stats *local, softnic_stats *st)
{
	if (local->wqes_executed)
		snx_counter_add(&st->wqes_executed, local->wqes_executed);
	if (local->cqes_written)
		snx_counter_add(&st->cqes_written, local->cqes_written);
	if (local->error_cqes)
		snx_counter_add(&st->error_cqes, local->error_cqes);
	if (local->strict_violations)
		snx_counter_add(&st->strict_violations, local->strict_violations);
	if (local->cq_full_stalls)
		snx_counter_add(&st->cq_full_stalls, local->cq_full_stalls);
	if (local->rnr_naks)
		snx_counter_add(&st->rnr_naks, local->rnr_naks);
	if (local->doorbell_watches)
		snx_counter_add(&st->doorbell_watches, local->doorbell_watches);
}

/* ------------------------------------------------------------------ */
/* Receive queues. */

/* A receive WQE taken from a responder's queue. */
typedef struct snx_recv {
	uint16_t index;    /* the responder CQE's wqe_counter */
	uint8_t vs;        /* vendor syndrome of a responder error */
	uint8_t pad;
	uint32_t srqn;
	uint32_t num_sge;
	struct { uint64_t addr; uint32_t lkey; uint32_t len; } sge[SOFTNIC_MAX_SGE];
} snx_recv;

enum { SNX_RQ_EMPTY = -1 };

/* Posted receive WQEs not yet consumed (read without the lock: a hint). */
GIC_HD uint32_t snx_rq_posted(const snx_shared *sh, snx_rq *rq)
{
	uint32_t rec = gic_be32toh(snx_ld_acquire_u32(sh, rq->dbrec)) & 0xffffu;

	return (uint16_t)(rec - (uint16_t)gic_ld_relaxed_sys_u64(&rq->cons));
}

/* Reads the scatter list of the WQE at byte offset off of slot idx. */
GIC_HD void snx_rq_read_wqe(const snx_rq *rq, uint32_t idx, uint32_t off, snx_recv *out)
{
	const uint8_t *wqe = rq->buf + (size_t)idx * rq->stride;

	out->num_sge = 0;
	for (uint32_t i = 0; i < rq->max_sge && i < SOFTNIC_MAX_SGE; i++) {
		const uint8_t *seg = wqe + off + i * GIC_SEG_SIZE;
		uint32_t len = snx_rd_be32(seg), lkey = snx_rd_be32(seg + 4);

		if (lkey == GIC_INVALID_LKEY)
			break;
		out->sge[out->num_sge].len = len ? len : 0x80000000u; /* 0 means 2^31 */
		out->sge[out->num_sge].lkey = lkey;
		out->sge[out->num_sge].addr = snx_rd_be64(seg + 8);
		out->num_sge++;
	}
}

/* Takes the next posted receive WQE of rq (in posting order: a QP's RQ
 * by slot, an SRQ along its next segments). Returns 0 with *out filled,
 * SNX_RQ_EMPTY, or the SOFTNIC_VSYND_* of a broken queue. */
GIC_HD int snx_rq_take(const snx_shared *sh, snx_rq *rq, snx_recv *out)
{
	uint32_t avail, idx;
	int r = 0;

	if (!snx_lock(&rq->lock))
		return SOFTNIC_VSYND_PEER_GONE; /* its holder process died */
	avail = snx_rq_posted(sh, rq);
	if (avail == 0) {
		r = SNX_RQ_EMPTY;
	} else if (avail > rq->wqe_cnt) {
		r = SOFTNIC_VSYND_BAD_RQ_DBREC;
	} else if (rq->srqn) {
		const gic_srq_next_seg *next = (const gic_srq_next_seg *)(rq->buf +
			(size_t)rq->head * rq->stride);

		idx = rq->head;
		snx_rq_read_wqe(rq, idx, GIC_SEG_SIZE, out);
		rq->head = gic_be16toh(next->next_wqe_index_be) & (rq->wqe_cnt - 1);
		out->index = (uint16_t)idx;
	} else {
		idx = (uint32_t)rq->cons & (rq->wqe_cnt - 1);
		snx_rq_read_wqe(rq, idx, 0, out);
		out->index = (uint16_t)rq->cons;
	}
	if (!r) {
		out->srqn = rq->srqn;
		out->vs = 0;
		gic_st_relaxed_sys_u64(&rq->cons, rq->cons + 1);
	}
	snx_unlock(&rq->lock);
	return r;
}

/* 1 when qp is in error with receives posted to its own RQ: they flush. */
GIC_HD int snx_rq_flush_due(const snx_shared *sh, snx_qp *qp)
{
	return qp->in_error && qp->rq && !qp->rq->srqn && qp->recv_cq &&
	       snx_rq_posted(sh, qp->rq) != 0;
}

/* Completes every receive posted to a QP in error with a flush error on
 * its receive CQ, as long as that CQ has room; adds what it wrote to the
 * engine's counters st. Called (it is rare, and its receive record would
 * take room in the caller's frame), with counts of its own, so that no
 * pass's address leaves the caller. */
SNX_COLD void snx_rq_flush(const snx_shared *sh, snx_qp *qp, softnic_stats *engine_st)
{
	softnic_stats local, *st = &local;
	snx_recv r;
	snx_cqe_fields f;

	memset(&local, 0, sizeof(local));
	while (snx_rq_flush_due(sh, qp) && snx_cq_claim(sh, qp->recv_cq, 1) == 1) {
		if (snx_rq_take(sh, qp->rq, &r)) {
			snx_cq_unclaim(qp->recv_cq);
			return;
		}
		memset(&f, 0, sizeof(f));
		f.cqe_opcode = GIC_CQE_RESP_ERR;
		f.syndrome = GIC_SYND_WR_FLUSH_ERR;
		f.wqe_counter = r.index;
		f.qpn = qp->qpn;
		snx_cq_write(sh, qp->recv_cq, &f, st);
		st->error_cqes++;
	}
	snx_stats_flush(&local, engine_st);
}

#include "engine_exec.h"

#endif /* SOFTNIC_ENGINE_CORE_H */
