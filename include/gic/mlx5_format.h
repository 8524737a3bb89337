/*
 * gic/mlx5_format.h - the mlx5 send-queue and completion-queue format.
 *
 * One header for host C and device CUDA. Every structure here has the byte
 * layout of its rdma-core counterpart in <infiniband/mlx5dv.h> (our format
 * authority; tests/host/test_format.c compares sizes, offsets and the bytes
 * written by rdma-core's own inline setters). Fields that the hardware reads
 * big-endian carry the suffix _be and hold big-endian values.
 *
 * A send WQE is a run of 16-byte segments packed into 64-byte basic blocks
 * (BBs); the control segment's ds field counts the segments. An RDMA write:
 *   ctrl | raddr | data (pointer payload)          ds = 3, 1 BB
 *   ctrl | raddr | inline hdr + payload             ds = 2 + ceil((4+len)/16)
 * RDMA READ (data: where the bytes land), SEND (payload as a write's):
 *   ctrl | raddr | data...                          ds = 2 + SGEs
 *   ctrl | data... / inline hdr + payload           SEND: no raddr
 * ATOMIC_FA, ATOMIC_CS (8 bytes, operands swap/add then compare):
 *   ctrl | raddr | atomic | data (fetched value)    ds = 4, 1 BB
 * Masked atomics (opmod GIC_OPMOD_EXT_ATOMIC | log2(size) - 2; 4 or 8
 * bytes): the atomic segment grows to 16 or 32 bytes (see the layouts
 * below); ds = 4, or 5 for the 8-byte masked compare-swap.
 * A receive WQE is a list of data segments (a 16-byte next segment first
 * on an SRQ); a segment with lkey GIC_INVALID_LKEY ends a short list.
 * DC transport inserts the address-vector segment right after ctrl.
 */
#ifndef GIC_MLX5_FORMAT_H
#define GIC_MLX5_FORMAT_H

#include "gic/port.h"

#if defined(__cplusplus)
#define GIC_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define GIC_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* ------------------------------------------------------------------ */
/* Constants (values as in mlx5dv.h). */

enum {
	GIC_SEND_WQE_BB = 64,
	GIC_SEND_WQE_SHIFT = 6,
	GIC_SEG_SIZE = 16,
	GIC_SEGS_PER_BB = GIC_SEND_WQE_BB / GIC_SEG_SIZE,
	GIC_WQE_MAX_DS = 63,   /* ds is a 6-bit field */
	GIC_WQE_MAX_BB = (GIC_WQE_MAX_DS + GIC_SEGS_PER_BB - 1) / GIC_SEGS_PER_BB,
	GIC_CQE_SIZE = 64,
};

/* Send opcodes (ctrl segment, low byte of opmod_idx_opcode). */
enum gic_opcode {
	GIC_OPCODE_NOP = 0x00,
	GIC_OPCODE_RDMA_WRITE = 0x08,
	GIC_OPCODE_RDMA_WRITE_IMM = 0x09,
	GIC_OPCODE_SEND = 0x0a,
	GIC_OPCODE_SEND_IMM = 0x0b,
	GIC_OPCODE_RDMA_READ = 0x10,
	GIC_OPCODE_ATOMIC_CS = 0x11,
	GIC_OPCODE_ATOMIC_FA = 0x12,
	GIC_OPCODE_ATOMIC_MASKED_CS = 0x14,
	GIC_OPCODE_ATOMIC_MASKED_FA = 0x15,
	/* The NIC reads the local buffer the data segment names and sends
	 * nothing. rdma-core 44's mlx5dv.h does not define it; the value is
	 * the Linux kernel's MLX5_OPCODE_DUMP (include/linux/mlx5/qp.h). */
	GIC_OPCODE_DUMP = 0x23,
};

/* The ctrl segment's opmod byte of a masked atomic: this flag with the
 * operand size as log2(bytes) - 2 (0: 4 bytes, 1: 8 bytes). */
enum {
	GIC_OPMOD_EXT_ATOMIC = 0x08,
	GIC_OPMOD_EXT_ATOMIC_SIZE_MASK = 0x07,
};

/* An lkey no region has: ends a receive WQE's scatter list early. */
#define GIC_INVALID_LKEY 0x100u

/* fm_ce_se byte of the control segment. */
enum {
	GIC_CTRL_SOLICITED = 1 << 1,
	GIC_CTRL_CQ_UPDATE = 2 << 2,  /* "signaled": write a CQE */
	GIC_CTRL_FENCE = 4 << 5,
	GIC_CTRL_INITIATOR_SMALL_FENCE = 1 << 5,
};

/* Inline segment: byte_count carries this flag. */
#define GIC_INLINE_SEG 0x80000000u
/* DC address vector: dqp_dct carries this flag for the 48-byte form. */
#define GIC_EXTENDED_UD_AV 0x80000000u

/* CQE opcodes (high nibble of op_own). */
enum gic_cqe_opcode {
	GIC_CQE_REQ = 0,
	GIC_CQE_RESP_WR_IMM = 1,
	GIC_CQE_RESP_SEND = 2,
	GIC_CQE_RESP_SEND_IMM = 3,
	GIC_CQE_REQ_ERR = 13,
	GIC_CQE_RESP_ERR = 14,
	GIC_CQE_INVALID = 15,
};
#define GIC_CQE_OWNER_MASK 1u

/* Error CQE syndromes. */
enum gic_syndrome {
	GIC_SYND_LOCAL_LENGTH_ERR = 0x01,
	GIC_SYND_LOCAL_QP_OP_ERR = 0x02,
	GIC_SYND_LOCAL_PROT_ERR = 0x04,
	GIC_SYND_WR_FLUSH_ERR = 0x05,
	GIC_SYND_MW_BIND_ERR = 0x06,
	GIC_SYND_BAD_RESP_ERR = 0x10,
	GIC_SYND_LOCAL_ACCESS_ERR = 0x11,
	GIC_SYND_REMOTE_INVAL_REQ_ERR = 0x12,
	GIC_SYND_REMOTE_ACCESS_ERR = 0x13,
	GIC_SYND_REMOTE_OP_ERR = 0x14,
	GIC_SYND_TRANSPORT_RETRY_EXC_ERR = 0x15,
	GIC_SYND_RNR_RETRY_EXC_ERR = 0x16,
	GIC_SYND_REMOTE_ABORTED_ERR = 0x22,
};

/* ------------------------------------------------------------------ */
/* Segments. */

#define GIC_ALIGN16 __attribute__((aligned(16)))

/* struct mlx5_wqe_ctrl_seg */
typedef struct GIC_ALIGN16 gic_ctrl_seg {
	uint32_t opmod_idx_opcode_be; /* opmod<<24 | wqe index<<8 | opcode */
	uint32_t qpn_ds_be;           /* qpn<<8 | ds */
	uint8_t signature;
	uint8_t stream_id_be[2];      /* dci_stream_channel_id */
	uint8_t fm_ce_se;
	uint32_t imm;                 /* stored as given (already big-endian) */
} gic_ctrl_seg;

/* struct mlx5_wqe_raddr_seg */
typedef struct GIC_ALIGN16 gic_raddr_seg {
	uint64_t raddr_be;
	uint32_t rkey_be;
	uint32_t reserved;
} gic_raddr_seg;

/* struct mlx5_wqe_data_seg */
typedef struct GIC_ALIGN16 gic_data_seg {
	uint32_t byte_count_be;
	uint32_t lkey_be;
	uint64_t addr_be;
} gic_data_seg;

/* struct mlx5_wqe_inl_data_seg: 4-byte header, payload follows. */
typedef struct gic_inline_hdr {
	uint32_t byte_count_be; /* len | GIC_INLINE_SEG */
} gic_inline_hdr;

/* struct mlx5_wqe_atomic_seg. Operands are big-endian on the wire; softnic
 * keeps the target word and the fetched value in host byte order. */
typedef struct GIC_ALIGN16 gic_atomic_seg {
	uint64_t swap_add_be;
	uint64_t compare_be;
} gic_atomic_seg;

/* Masked atomic operands, 4 bytes (16-byte segment). Compare-swap: the
 * target's bits under compare_mask must equal compare's; then the bits
 * under swap_mask take swap's. Fetch-add: field_boundary marks the top bit
 * of each field; a carry never leaves its field. */
typedef struct GIC_ALIGN16 gic_masked_atomic32_seg {
	uint32_t swap_add_be;      /* swap (CS) or add (FA) */
	uint32_t compare_be;       /* compare (CS) or field boundary (FA) */
	uint32_t swap_mask_be;     /* CS only */
	uint32_t compare_mask_be;  /* CS only */
} gic_masked_atomic32_seg;

/* Masked atomic operands, 8 bytes: fetch-add uses the first 16 bytes
 * (add, field boundary); compare-swap all 32. */
typedef struct GIC_ALIGN16 gic_masked_atomic64_seg {
	uint64_t swap_add_be;      /* swap (CS) or add (FA) */
	uint64_t compare_be;       /* compare (CS) or field boundary (FA) */
	uint64_t swap_mask_be;     /* CS only */
	uint64_t compare_mask_be;  /* CS only */
} gic_masked_atomic64_seg;

/* struct mlx5_wqe_srq_next_seg: the first 16 bytes of an SRQ receive WQE;
 * next_wqe_index links the SRQ's free list. */
typedef struct GIC_ALIGN16 gic_srq_next_seg {
	uint8_t rsvd0[2];
	uint16_t next_wqe_index_be;
	uint8_t signature;
	uint8_t rsvd1[11];
} gic_srq_next_seg;

/* struct mlx5_wqe_av: the DC address vector. The compact form is its first
 * 16 bytes (dc_key, dqp_dct without GIC_EXTENDED_UD_AV, sl, mlid, rlid). */
typedef struct GIC_ALIGN16 gic_av_seg {
	uint64_t dc_key_be;
	uint32_t dqp_dct_be;
	uint8_t stat_rate_sl;
	uint8_t fl_mlid;
	uint16_t rlid_be;
	uint8_t reserved0[4];
	uint8_t rmac[6];
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t grh_gid_fl_be;
	uint8_t rgid[16];
} gic_av_seg;

/* struct mlx5_cqe64 (fields a send/write-imm completion uses). */
typedef struct GIC_ALIGN16 gic_cqe64 {
	uint8_t rsvd0[32];
	uint32_t srqn_uidx_be;
	uint32_t imm_inval_pkey;      /* immediate, as the sender gave it */
	uint8_t app;
	uint8_t app_op;
	uint16_t app_info_be;
	uint32_t byte_cnt_be;
	uint64_t timestamp_be;
	uint32_t sop_drop_qpn_be;     /* requester: wqe opcode<<24 | qpn */
	uint16_t wqe_counter_be;
	uint8_t signature;
	uint8_t op_own;               /* opcode<<4 | ... | owner */
} gic_cqe64;

/* struct mlx5_err_cqe: the same 64 bytes read as an error completion. */
typedef struct GIC_ALIGN16 gic_err_cqe {
	uint8_t rsvd0[32];
	uint32_t srqn;
	uint8_t rsvd1[18];
	uint8_t vendor_err_synd;
	uint8_t syndrome;
	uint32_t s_wqe_opcode_qpn_be;
	uint16_t wqe_counter_be;
	uint8_t signature;
	uint8_t op_own;
} gic_err_cqe;

GIC_STATIC_ASSERT(sizeof(gic_ctrl_seg) == 16, "ctrl segment is 16 bytes");
GIC_STATIC_ASSERT(sizeof(gic_raddr_seg) == 16, "raddr segment is 16 bytes");
GIC_STATIC_ASSERT(sizeof(gic_data_seg) == 16, "data segment is 16 bytes");
GIC_STATIC_ASSERT(sizeof(gic_atomic_seg) == 16, "atomic segment is 16 bytes");
GIC_STATIC_ASSERT(sizeof(gic_masked_atomic32_seg) == 16, "4-byte masked atomic is 16 bytes");
GIC_STATIC_ASSERT(sizeof(gic_masked_atomic64_seg) == 32, "8-byte masked atomic is 32 bytes");
GIC_STATIC_ASSERT(sizeof(gic_srq_next_seg) == 16, "SRQ next segment is 16 bytes");
GIC_STATIC_ASSERT(sizeof(gic_av_seg) == 48, "address vector is 48 bytes");
GIC_STATIC_ASSERT(sizeof(gic_cqe64) == 64, "CQE is 64 bytes");
GIC_STATIC_ASSERT(sizeof(gic_err_cqe) == 64, "error CQE is 64 bytes");
GIC_STATIC_ASSERT(offsetof(gic_cqe64, op_own) == 63, "op_own is the last byte");
GIC_STATIC_ASSERT(offsetof(gic_err_cqe, syndrome) == 55, "syndrome offset");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the segment word builders assume a little-endian host and GPU"
#endif

/* The last 8 bytes of a CQE (sop_drop_qpn, wqe_counter, signature, op_own):
 * the engine publishes them with one release store, pollers read them with
 * one acquire load. */
#define GIC_CQE_TAIL_OFFSET 56

/* ------------------------------------------------------------------ */
/* Builders. Each returns the segment by value so the caller can store it
 * with one wide store; the bytes equal rdma-core's setters'. */

/* As mlx5dv_set_ctrl_seg(seg, pi, opcode, opmod, qpn, fm_ce_se, ds, 0, imm). */
/* The words of a control segment in memory order, as one 16-byte store
 * writes them (bytes 8..11, signature, stream id and fm_ce_se, form one
 * little-endian word). Builders store these words directly, so that no
 * byte-wide field is assembled in registers on the posting path. */
GIC_HD void gic_ctrl_seg_words(uint32_t w[4], uint16_t wqe_index, uint8_t opcode, uint8_t opmod,
			       uint32_t qpn, uint8_t fm_ce_se, uint8_t ds, uint32_t imm)
{
	w[0] = gic_htobe32(((uint32_t)opmod << 24) | ((uint32_t)wqe_index << 8) | opcode);
	w[1] = gic_htobe32((qpn << 8) | ds);
	w[2] = (uint32_t)fm_ce_se << 24;
	w[3] = imm;
}

GIC_HD gic_ctrl_seg gic_make_ctrl_seg(uint16_t wqe_index, uint8_t opcode, uint8_t opmod,
				      uint32_t qpn, uint8_t fm_ce_se, uint8_t ds, uint32_t imm)
{
	gic_ctrl_seg c;
	uint32_t w[4];

	gic_ctrl_seg_words(w, wqe_index, opcode, opmod, qpn, fm_ce_se, ds, imm);
	__builtin_memcpy(&c, w, sizeof(c));
	return c;
}

/* The words of a remote-address segment in memory order. */
GIC_HD void gic_raddr_seg_words(uint32_t w[4], uint64_t raddr, uint32_t rkey)
{
	w[0] = gic_htobe32((uint32_t)(raddr >> 32));
	w[1] = gic_htobe32((uint32_t)raddr);
	w[2] = gic_htobe32(rkey);
	w[3] = 0;
}

GIC_HD gic_raddr_seg gic_make_raddr_seg(uint64_t raddr, uint32_t rkey)
{
	gic_raddr_seg r;
	uint32_t w[4];

	gic_raddr_seg_words(w, raddr, rkey);
	__builtin_memcpy(&r, w, sizeof(r));
	return r;
}

/* As mlx5dv_set_data_seg(seg, length, lkey, addr). */
GIC_HD gic_data_seg gic_make_data_seg(uint32_t length, uint32_t lkey, uint64_t addr)
{
	gic_data_seg d;
	d.byte_count_be = gic_htobe32(length);
	d.lkey_be = gic_htobe32(lkey);
	d.addr_be = gic_htobe64(addr);
	return d;
}

GIC_HD gic_atomic_seg gic_make_atomic_fa_seg(uint64_t add)
{
	gic_atomic_seg a;
	a.swap_add_be = gic_htobe64(add);
	a.compare_be = 0;
	return a;
}

/* 8-byte compare-and-swap: swap goes in the first word, compare in the
 * second (as rdma-core's mlx5 provider sets them). */
GIC_HD gic_atomic_seg gic_make_atomic_cs_seg(uint64_t compare, uint64_t swap)
{
	gic_atomic_seg a;
	a.swap_add_be = gic_htobe64(swap);
	a.compare_be = gic_htobe64(compare);
	return a;
}

GIC_HD uint32_t gic_inline_hdr_be(uint32_t len)
{
	return gic_htobe32(len | GIC_INLINE_SEG);
}

/* Compact (16-byte) DC address vector, as the first 16 bytes written by
 * mlx5dv_set_dgram_seg(seg, dc_key, dct, 0, sl, 0, rlid, ...). */
GIC_HD void gic_set_av_compact(gic_av_seg *av, uint64_t dc_key, uint32_t dctn,
			       uint8_t stat_rate_sl, uint16_t rlid)
{
	av->dc_key_be = gic_htobe64(dc_key);
	av->dqp_dct_be = gic_htobe32(dctn & 0xffffffu);
	av->stat_rate_sl = stat_rate_sl;
	av->fl_mlid = 0;
	av->rlid_be = gic_htobe16(rlid);
}

/* Full (48-byte) DC address vector, as mlx5dv_set_dgram_seg(seg, dc_key,
 * dct, 1, sl, 0, rlid, rmac, tclass, hop_limit, grh_gid_fl, rgid):
 * GIC_EXTENDED_UD_AV in dqp_dct says the GRH part follows. */
GIC_HD void gic_set_av_full(gic_av_seg *av, uint64_t dc_key, uint32_t dctn, uint8_t stat_rate_sl,
			    uint16_t rlid, const uint8_t rmac[6], uint8_t tclass, uint8_t hop_limit,
			    uint32_t grh_gid_fl, const uint8_t rgid[16])
{
	gic_set_av_compact(av, dc_key, dctn, stat_rate_sl, rlid);
	av->dqp_dct_be = gic_htobe32(GIC_EXTENDED_UD_AV | (dctn & 0xffffffu));
	__builtin_memcpy(av->rmac, rmac, 6);
	av->tclass = tclass;
	av->hop_limit = hop_limit;
	av->grh_gid_fl_be = gic_htobe32(grh_gid_fl);
	__builtin_memcpy(av->rgid, rgid, 16);
}

/* Segments (16 bytes each) a DC address vector of either form occupies
 * after the control segment: 1 compact, 3 full. */
enum { GIC_AV_COMPACT_DS = 1, GIC_AV_FULL_DS = 3 };

/* Segments (16-byte units) an inline write of len bytes occupies in total. */
GIC_HD uint32_t gic_ds_inline_write(uint32_t len)
{
	return 2 + (4 + len + GIC_SEG_SIZE - 1) / GIC_SEG_SIZE;
}

/* Basic blocks a WQE of ds segments occupies. */
GIC_HD uint32_t gic_bb_for_ds(uint32_t ds)
{
	return (ds + GIC_SEGS_PER_BB - 1) / GIC_SEGS_PER_BB;
}

/* Basic blocks the WQE whose ctrl segment carries qpn_ds occupies. A ds of
 * 0 or above GIC_WQE_MAX_DS is malformed; such a WQE counts as one BB so
 * that the NIC and the submitter still agree on where the next one starts. */
GIC_HD uint32_t gic_wqe_bb_count(uint32_t qpn_ds_be)
{
	uint32_t ds = gic_be32toh(qpn_ds_be) & 0xffu;

	return (ds == 0 || ds > GIC_WQE_MAX_DS) ? 1 : gic_bb_for_ds(ds);
}

/* ------------------------------------------------------------------ */
/* CQE parsing. tail is the CQE's last 8 bytes as loaded from memory. */

GIC_HD uint8_t gic_cqe_tail_op_own(uint64_t tail) { return (uint8_t)(tail >> 56); }
GIC_HD uint8_t gic_cqe_tail_opcode(uint64_t tail) { return gic_cqe_tail_op_own(tail) >> 4; }
GIC_HD uint8_t gic_cqe_tail_owner(uint64_t tail) { return gic_cqe_tail_op_own(tail) & GIC_CQE_OWNER_MASK; }
GIC_HD uint16_t gic_cqe_tail_wqe_counter(uint64_t tail)
{
	return gic_be16toh((uint16_t)(tail >> 32));
}
GIC_HD uint32_t gic_cqe_tail_qpn(uint64_t tail)
{
	return gic_be32toh((uint32_t)tail) & 0xffffffu;
}
/* Requester CQEs: the send opcode of the completed WQE. */
GIC_HD uint8_t gic_cqe_tail_wqe_opcode(uint64_t tail)
{
	return (uint8_t)(gic_be32toh((uint32_t)tail) >> 24);
}

/* Software owns the CQE at consumer index ci (ring of cqe_cnt entries, a
 * power of two) when its opcode is valid and its owner bit equals the pass
 * parity of ci. */
GIC_HD int gic_cqe_sw_owned(uint64_t tail, uint32_t ci, uint32_t cqe_cnt)
{
	return gic_cqe_tail_opcode(tail) != GIC_CQE_INVALID &&
	       gic_cqe_tail_owner(tail) == ((ci & cqe_cnt) ? 1u : 0u);
}

/* The value the hardware writes in op_own for a CQE at producer index pi. */
GIC_HD uint8_t gic_make_op_own(uint8_t cqe_opcode, uint32_t pi, uint32_t cqe_cnt)
{
	return (uint8_t)((cqe_opcode << 4) | ((pi & cqe_cnt) ? 1u : 0u));
}

#endif /* GIC_MLX5_FORMAT_H */
