/*
 * The mlx5 firmware command layouts the emulated libmlx5's DEVX layer
 * answers (src/emu/devx*.c), written from the published bit offsets of the
 * mlx5 programming reference (the same offsets the Linux kernel's and
 * rdma-core's mlx5_ifc.h carry). Only what the emulation reads or writes is
 * here.
 *
 * Scheme: a command buffer is big-endian 32-bit words; a field is its bit
 * offset from the start of its layout (bit 0 is the most significant bit
 * of the first byte) and its width in bits. Fields of 1..32 bits lie inside
 * one 32-bit word; 64-bit fields start on a word. A field of a context
 * nested in a command (the CQ context in CREATE_CQ, the QP context in the
 * QP commands, an address path in the QP context) is named relative to the
 * context, and gic_prm_at() moves it to the context's offset:
 *
 *     gic_prm_set(in, gic_prm_at(GIC_PRM_CREATE_CQ_IN_CQC, GIC_PRM_CQC_LOG_CQ_SIZE), 10);
 *
 * The accessors touch bytes only (no alignment needed, any host byte
 * order); gic_prm_get/_set on a field that would cross a word, or of width
 * 0 or over 32, read 0 and write nothing (tests/emu/test_prm.c checks that
 * every field below is well formed). Callers check buffer lengths: the
 * accessors read and write the field's whole 32-bit word (two for a 64-bit
 * field), which must lie inside the buffer.
 */
#ifndef GIC_MLX5_PRM_H
#define GIC_MLX5_PRM_H

#include <stdint.h>

/* A field: bit offset (big-endian bit numbering) and width in bits. */
typedef struct gic_prm_fld {
	uint32_t bit;
	uint32_t width;
} gic_prm_fld;

#define GIC_PRM_FLD(bit, width) ((gic_prm_fld){ (bit), (width) })

/* Field f of a context that starts at bit base of the enclosing layout. */
static inline gic_prm_fld gic_prm_at(gic_prm_fld base, gic_prm_fld f)
{
	return GIC_PRM_FLD(base.bit + f.bit, f.width);
}

/* 1 when f is readable with gic_prm_get/_set (1..32 bits in one word). */
static inline int gic_prm_fld_ok(gic_prm_fld f)
{
	return f.width >= 1 && f.width <= 32 && (f.bit % 32) + f.width <= 32;
}

static inline uint32_t gic_prm_word(const void *buf, uint32_t word)
{
	const uint8_t *p = (const uint8_t *)buf + 4 * (size_t)word;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void gic_prm_put_word(void *buf, uint32_t word, uint32_t v)
{
	uint8_t *p = (uint8_t *)buf + 4 * (size_t)word;

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t gic_prm_mask(uint32_t width)
{
	return width >= 32 ? 0xffffffffu : (1u << width) - 1;
}

/* The value of field f in buf (0 for a malformed field). */
static inline uint32_t gic_prm_get(const void *buf, gic_prm_fld f)
{
	uint32_t shift;

	if (!gic_prm_fld_ok(f))
		return 0;
	shift = 32 - f.width - f.bit % 32;
	return (gic_prm_word(buf, f.bit / 32) >> shift) & gic_prm_mask(f.width);
}

/* Stores the low f.width bits of v into field f; other bits untouched. */
static inline void gic_prm_set(void *buf, gic_prm_fld f, uint32_t v)
{
	uint32_t shift, mask, w;

	if (!gic_prm_fld_ok(f))
		return;
	shift = 32 - f.width - f.bit % 32;
	mask = gic_prm_mask(f.width) << shift;
	w = gic_prm_word(buf, f.bit / 32);
	gic_prm_put_word(buf, f.bit / 32, (w & ~mask) | ((v << shift) & mask));
}

/* A 64-bit field (f.width 64, f.bit on a word); 0 / nothing otherwise. */
static inline uint64_t gic_prm_get64(const void *buf, gic_prm_fld f)
{
	if (f.width != 64 || f.bit % 32)
		return 0;
	return (uint64_t)gic_prm_word(buf, f.bit / 32) << 32 | gic_prm_word(buf, f.bit / 32 + 1);
}

static inline void gic_prm_set64(void *buf, gic_prm_fld f, uint64_t v)
{
	if (f.width != 64 || f.bit % 32)
		return;
	gic_prm_put_word(buf, f.bit / 32, (uint32_t)(v >> 32));
	gic_prm_put_word(buf, f.bit / 32 + 1, (uint32_t)v);
}

/* ------------------------------------------------------------------ */
/* Opcodes and statuses. */

enum gic_prm_opcode {
	GIC_PRM_OP_QUERY_HCA_CAP = 0x100,
	GIC_PRM_OP_QUERY_ADAPTER = 0x101,
	GIC_PRM_OP_QUERY_ISSI = 0x10a,
	GIC_PRM_OP_CREATE_CQ = 0x400,
	GIC_PRM_OP_DESTROY_CQ = 0x401,
	GIC_PRM_OP_QUERY_CQ = 0x402,
	GIC_PRM_OP_MODIFY_CQ = 0x403,
	GIC_PRM_OP_CREATE_QP = 0x500,
	GIC_PRM_OP_DESTROY_QP = 0x501,
	GIC_PRM_OP_RST2INIT_QP = 0x502,
	GIC_PRM_OP_INIT2RTR_QP = 0x503,
	GIC_PRM_OP_RTR2RTS_QP = 0x504,
	GIC_PRM_OP_RTS2RTS_QP = 0x505,
	GIC_PRM_OP_SQERR2RTS_QP = 0x506,
	GIC_PRM_OP_2ERR_QP = 0x507,
	GIC_PRM_OP_2RST_QP = 0x50a,
	GIC_PRM_OP_QUERY_QP = 0x50b,
	GIC_PRM_OP_INIT2INIT_QP = 0x50e,
	GIC_PRM_OP_CREATE_SRQ = 0x700,
	GIC_PRM_OP_CREATE_DCT = 0x710,
	GIC_PRM_OP_QUERY_VPORT_STATE = 0x750,
	GIC_PRM_OP_QUERY_NIC_VPORT_CONTEXT = 0x754,
	GIC_PRM_OP_QUERY_ROCE_ADDRESS = 0x760,
	GIC_PRM_OP_QUERY_HCA_VPORT_CONTEXT = 0x762,
	GIC_PRM_OP_ALLOC_PD = 0x800,
	GIC_PRM_OP_DEALLOC_PD = 0x801,
	GIC_PRM_OP_NOP = 0x80d,
	GIC_PRM_OP_CREATE_RMP = 0x90c,
	GIC_PRM_OP_CREATE_GENERAL_OBJECT = 0xa00,
	/* Opcodes the kernel passes as general commands without a list. */
	GIC_PRM_OP_GENERAL_START = 0xb00,
	GIC_PRM_OP_GENERAL_END = 0xd00,
};

/* The command status byte of every output header. */
enum gic_prm_status {
	GIC_PRM_STAT_OK = 0x0,
	GIC_PRM_STAT_INT_ERR = 0x1,
	GIC_PRM_STAT_BAD_OP = 0x2,
	GIC_PRM_STAT_BAD_PARAM = 0x3,
	GIC_PRM_STAT_BAD_SYS_STATE = 0x4,
	GIC_PRM_STAT_BAD_RES = 0x5,
	GIC_PRM_STAT_RES_BUSY = 0x6,
	GIC_PRM_STAT_LIM = 0x8,
	GIC_PRM_STAT_BAD_RES_STATE = 0x9,
	GIC_PRM_STAT_IX = 0xa,
	GIC_PRM_STAT_NO_RES = 0xf,
	GIC_PRM_STAT_BAD_QP_STATE = 0x10,
	GIC_PRM_STAT_BAD_PKT = 0x30,
	GIC_PRM_STAT_BAD_SIZE_OUTS_CQES = 0x40,
	GIC_PRM_STAT_BAD_INP_LEN = 0x50,
	GIC_PRM_STAT_BAD_OUTP_LEN = 0x51,
};

/* ------------------------------------------------------------------ */
/* Every command: the input header (16 bytes) and output header (16). */

enum { GIC_PRM_HDR_IN_BYTES = 16, GIC_PRM_HDR_OUT_BYTES = 16 };
#define GIC_PRM_IN_OPCODE GIC_PRM_FLD(0x00, 16)
#define GIC_PRM_IN_UID GIC_PRM_FLD(0x10, 16)
#define GIC_PRM_IN_VHCA_TUNNEL_ID GIC_PRM_FLD(0x20, 16)
#define GIC_PRM_IN_OP_MOD GIC_PRM_FLD(0x30, 16)
#define GIC_PRM_OUT_STATUS GIC_PRM_FLD(0x00, 8)
#define GIC_PRM_OUT_SYNDROME GIC_PRM_FLD(0x20, 32)
/* The object number most commands carry in word 2 (qpn, cqn, pd). */
#define GIC_PRM_IN_OBJ_NUM GIC_PRM_FLD(0x48, 24)
#define GIC_PRM_OUT_OBJ_NUM GIC_PRM_FLD(0x48, 24)

/* ------------------------------------------------------------------ */
/* QUERY_HCA_CAP: op_mod = cap_type << 1 | current (1) or maximum (0). */

enum { GIC_PRM_QUERY_HCA_CAP_IN_BYTES = 16, GIC_PRM_QUERY_HCA_CAP_OUT_BYTES = 4112,
       GIC_PRM_HCA_CAP_BYTES = 4096 };
enum gic_prm_cap_type {
	GIC_PRM_CAP_GENERAL = 0x0,
	GIC_PRM_CAP_ETHERNET_OFFLOADS = 0x1,
	GIC_PRM_CAP_ODP = 0x2,
	GIC_PRM_CAP_ATOMIC = 0x3,
	GIC_PRM_CAP_ROCE = 0x4,
	GIC_PRM_CAP_GENERAL_2 = 0x10,
};
#define GIC_PRM_QUERY_HCA_CAP_IN_OTHER_FUNCTION GIC_PRM_FLD(0x40, 1)
#define GIC_PRM_HCA_CAP_OUT_CAPABILITY GIC_PRM_FLD(0x80, 32768)

/* General device capabilities (cmd_hca_cap), relative to the capability. */
#define GIC_PRM_CAP_GEN_HCA_CAP_2 GIC_PRM_FLD(0x020, 1)
#define GIC_PRM_CAP_GEN_LOG_MAX_SRQ_SZ GIC_PRM_FLD(0x080, 8)
#define GIC_PRM_CAP_GEN_LOG_MAX_QP_SZ GIC_PRM_FLD(0x088, 8)
#define GIC_PRM_CAP_GEN_LOG_MAX_QP GIC_PRM_FLD(0x09b, 5)
#define GIC_PRM_CAP_GEN_LOG_MAX_SRQ GIC_PRM_FLD(0x0ab, 5)
#define GIC_PRM_CAP_GEN_LOG_MAX_CQ_SZ GIC_PRM_FLD(0x0c8, 8)
#define GIC_PRM_CAP_GEN_LOG_MAX_CQ GIC_PRM_FLD(0x0db, 5)
#define GIC_PRM_CAP_GEN_LOG_MAX_EQ_SZ GIC_PRM_FLD(0x0e0, 8)
#define GIC_PRM_CAP_GEN_LOG_MAX_MKEY GIC_PRM_FLD(0x0ea, 6)
#define GIC_PRM_CAP_GEN_LOG_MAX_EQ GIC_PRM_FLD(0x0fc, 4)
#define GIC_PRM_CAP_GEN_LOG_MAX_MRW_SZ GIC_PRM_FLD(0x109, 7)
#define GIC_PRM_CAP_GEN_LOG_MAX_RA_REQ_DC GIC_PRM_FLD(0x12a, 6)
#define GIC_PRM_CAP_GEN_LOG_MAX_RA_RES_DC GIC_PRM_FLD(0x13a, 6)
#define GIC_PRM_CAP_GEN_LOG_MAX_RA_REQ_QP GIC_PRM_FLD(0x14a, 6)
#define GIC_PRM_CAP_GEN_LOG_MAX_RA_RES_QP GIC_PRM_FLD(0x15a, 6)
#define GIC_PRM_CAP_GEN_END_PAD GIC_PRM_FLD(0x160, 1)
#define GIC_PRM_CAP_GEN_RTS2RTS_QP_DSCP GIC_PRM_FLD(0x16a, 1)
#define GIC_PRM_CAP_GEN_GID_TABLE_SIZE GIC_PRM_FLD(0x170, 16)
#define GIC_PRM_CAP_GEN_PKEY_TABLE_SIZE GIC_PRM_FLD(0x190, 16)
#define GIC_PRM_CAP_GEN_PORT_TYPE GIC_PRM_FLD(0x1b6, 2)
#define GIC_PRM_CAP_GEN_NUM_PORTS GIC_PRM_FLD(0x1b8, 8)
#define GIC_PRM_CAP_GEN_LOG_MAX_MSG GIC_PRM_FLD(0x1c3, 5)
#define GIC_PRM_CAP_GEN_CQE_VERSION GIC_PRM_FLD(0x1fc, 4)
#define GIC_PRM_CAP_GEN_COMPACT_ADDRESS_VECTOR GIC_PRM_FLD(0x200, 1)
#define GIC_PRM_CAP_GEN_DCT GIC_PRM_FLD(0x21a, 1)
#define GIC_PRM_CAP_GEN_ROCE GIC_PRM_FLD(0x21d, 1)
#define GIC_PRM_CAP_GEN_ATOMIC GIC_PRM_FLD(0x21e, 1)
#define GIC_PRM_CAP_GEN_CQ_OI GIC_PRM_FLD(0x220, 1)
#define GIC_PRM_CAP_GEN_CQ_RESIZE GIC_PRM_FLD(0x221, 1)
#define GIC_PRM_CAP_GEN_CQ_MODERATION GIC_PRM_FLD(0x222, 1)
#define GIC_PRM_CAP_GEN_XRC GIC_PRM_FLD(0x23c, 1)
#define GIC_PRM_CAP_GEN_UD GIC_PRM_FLD(0x23d, 1)
#define GIC_PRM_CAP_GEN_UC GIC_PRM_FLD(0x23e, 1)
#define GIC_PRM_CAP_GEN_RC GIC_PRM_FLD(0x23f, 1)
#define GIC_PRM_CAP_GEN_UAR_4K GIC_PRM_FLD(0x240, 1)
#define GIC_PRM_CAP_GEN_UMEM_UID_0 GIC_PRM_FLD(0x252, 1)
#define GIC_PRM_CAP_GEN_LOG_PG_SZ GIC_PRM_FLD(0x258, 8)
#define GIC_PRM_CAP_GEN_BF GIC_PRM_FLD(0x260, 1)
#define GIC_PRM_CAP_GEN_LOG_BF_REG_SIZE GIC_PRM_FLD(0x26b, 5)
#define GIC_PRM_CAP_GEN_MAX_WQE_SZ_SQ GIC_PRM_FLD(0x290, 16)
#define GIC_PRM_CAP_GEN_MAX_WQE_SZ_RQ GIC_PRM_FLD(0x2b0, 16)
#define GIC_PRM_CAP_GEN_MAX_WQE_SZ_SQ_DC GIC_PRM_FLD(0x2d0, 16)
#define GIC_PRM_CAP_GEN_LOG_MAX_PD GIC_PRM_FLD(0x32b, 5)
#define GIC_PRM_CAP_GEN_LOG_MAX_XRCD GIC_PRM_FLD(0x33b, 5)
#define GIC_PRM_CAP_GEN_LOG_UAR_PAGE_SZ GIC_PRM_FLD(0x490, 16)
#define GIC_PRM_CAP_GEN_NUM_OF_UARS_PER_PAGE GIC_PRM_FLD(0x520, 32)
#define GIC_PRM_CAP_GEN_LOG_MAX_DCT_CONNECTIONS GIC_PRM_FLD(0x57b, 5)
#define GIC_PRM_CAP_GEN_LOG_MAX_ATOMIC_SIZE_QP GIC_PRM_FLD(0x580, 8)
#define GIC_PRM_CAP_GEN_LOG_MAX_ATOMIC_SIZE_DC GIC_PRM_FLD(0x598, 8)
#define GIC_PRM_CAP_GEN_CQE_128_ALWAYS GIC_PRM_FLD(0x5bd, 1)
#define GIC_PRM_CAP_GEN_CQE_COMPRESSION GIC_PRM_FLD(0x5bf, 1)

enum { GIC_PRM_PORT_TYPE_IB = 0, GIC_PRM_PORT_TYPE_ETH = 1 };

/* Atomic capabilities (atomic_caps), relative to the capability. */
#define GIC_PRM_CAP_ATOMIC_REQ_8B_ENDIANNESS_MODE GIC_PRM_FLD(0x40, 2)
#define GIC_PRM_CAP_ATOMIC_SUPPORTED_8B_ENDIANNESS_MODE_1 GIC_PRM_FLD(0x46, 1)
#define GIC_PRM_CAP_ATOMIC_OPERATIONS GIC_PRM_FLD(0x90, 16)
#define GIC_PRM_CAP_ATOMIC_SIZE_QP GIC_PRM_FLD(0xb0, 16)
#define GIC_PRM_CAP_ATOMIC_SIZE_DC GIC_PRM_FLD(0xd0, 16)

enum gic_prm_atomic_ops {       /* atomic_operations bits */
	GIC_PRM_ATOMIC_OP_CAS = 0x1,
	GIC_PRM_ATOMIC_OP_FA = 0x2,
	GIC_PRM_ATOMIC_OP_MASKED_CAS = 0x4,
	GIC_PRM_ATOMIC_OP_MASKED_FA = 0x8,
};
enum gic_prm_atomic_sizes {     /* atomic_size_qp/_dc: bit n = 2^n bytes */
	GIC_PRM_ATOMIC_SIZE_4B = 0x4,
	GIC_PRM_ATOMIC_SIZE_8B = 0x8,
};

/* ------------------------------------------------------------------ */
/* CREATE_CQ (272 bytes in, 16 out) and the CQ context (64 bytes). */

enum { GIC_PRM_CREATE_CQ_IN_BYTES = 272, GIC_PRM_CREATE_CQ_OUT_BYTES = 16, GIC_PRM_CQC_BYTES = 64,
       GIC_PRM_DESTROY_CQ_IN_BYTES = 16, GIC_PRM_DESTROY_CQ_OUT_BYTES = 16 };
#define GIC_PRM_CREATE_CQ_IN_CQC GIC_PRM_FLD(0x080, 512)
#define GIC_PRM_CREATE_CQ_IN_CQ_UMEM_OFFSET GIC_PRM_FLD(0x280, 64)
#define GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID GIC_PRM_FLD(0x2c0, 32)
#define GIC_PRM_CREATE_CQ_IN_CQ_UMEM_VALID GIC_PRM_FLD(0x2e0, 1)

#define GIC_PRM_CQC_STATUS GIC_PRM_FLD(0x000, 4)
#define GIC_PRM_CQC_DBR_UMEM_VALID GIC_PRM_FLD(0x006, 1)
#define GIC_PRM_CQC_CQE_SZ GIC_PRM_FLD(0x008, 3)
#define GIC_PRM_CQC_CC GIC_PRM_FLD(0x00b, 1)
#define GIC_PRM_CQC_SCQE_BREAK_MODERATION_EN GIC_PRM_FLD(0x00d, 1)
#define GIC_PRM_CQC_OI GIC_PRM_FLD(0x00e, 1)
#define GIC_PRM_CQC_CQ_PERIOD_MODE GIC_PRM_FLD(0x00f, 2)
#define GIC_PRM_CQC_CQE_COMP_EN GIC_PRM_FLD(0x011, 1)
#define GIC_PRM_CQC_MINI_CQE_RES_FORMAT GIC_PRM_FLD(0x012, 2)
#define GIC_PRM_CQC_ST GIC_PRM_FLD(0x014, 4)
#define GIC_PRM_CQC_DBR_UMEM_ID GIC_PRM_FLD(0x020, 32)
#define GIC_PRM_CQC_PAGE_OFFSET GIC_PRM_FLD(0x054, 6)
#define GIC_PRM_CQC_LOG_CQ_SIZE GIC_PRM_FLD(0x063, 5)
#define GIC_PRM_CQC_UAR_PAGE GIC_PRM_FLD(0x068, 24)
#define GIC_PRM_CQC_CQ_PERIOD GIC_PRM_FLD(0x084, 12)
#define GIC_PRM_CQC_CQ_MAX_COUNT GIC_PRM_FLD(0x090, 16)
#define GIC_PRM_CQC_C_EQN GIC_PRM_FLD(0x0b8, 8)
#define GIC_PRM_CQC_LOG_PAGE_SIZE GIC_PRM_FLD(0x0c3, 5)
#define GIC_PRM_CQC_DBR_ADDR GIC_PRM_FLD(0x1c0, 64)

enum { GIC_PRM_CQE_SZ_64 = 0, GIC_PRM_CQE_SZ_128 = 1 };
/* log_page_size counts from the adapter's 4 KiB page. */
enum { GIC_PRM_ADAPTER_PAGE_SHIFT = 12 };

/* ------------------------------------------------------------------ */
/* CREATE_QP, the QP state commands, QUERY_QP, DESTROY_QP; the QP context
 * (232 bytes) and its address path (44 bytes). */

enum { GIC_PRM_CREATE_QP_IN_BYTES = 272, GIC_PRM_CREATE_QP_OUT_BYTES = 16,
       GIC_PRM_MODIFY_QP_IN_BYTES = 272,  /* RST2INIT .. RTS2RTS: header, mask, qpc */
       GIC_PRM_MODIFY_QP_OUT_BYTES = 16,
       GIC_PRM_QP_2ERR_IN_BYTES = 16,     /* 2ERR and 2RST: header and qpn */
       GIC_PRM_QUERY_QP_IN_BYTES = 16, GIC_PRM_QUERY_QP_OUT_BYTES = 272,
       GIC_PRM_DESTROY_QP_IN_BYTES = 16, GIC_PRM_DESTROY_QP_OUT_BYTES = 16,
       GIC_PRM_QPC_BYTES = 232 };
#define GIC_PRM_CREATE_QP_IN_OPT_PARAM_MASK GIC_PRM_FLD(0x080, 32)
#define GIC_PRM_CREATE_QP_IN_QPC GIC_PRM_FLD(0x0c0, 1856)
#define GIC_PRM_CREATE_QP_IN_WQ_UMEM_OFFSET GIC_PRM_FLD(0x800, 64)
#define GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID GIC_PRM_FLD(0x840, 32)
#define GIC_PRM_CREATE_QP_IN_WQ_UMEM_VALID GIC_PRM_FLD(0x860, 1)
/* The modify commands (RST2INIT, INIT2INIT, INIT2RTR, RTR2RTS, RTS2RTS)
 * and QUERY_QP's output put the mask and the context at the same place. */
#define GIC_PRM_MODIFY_QP_IN_QPN GIC_PRM_FLD(0x048, 24)
#define GIC_PRM_MODIFY_QP_IN_OPT_PARAM_MASK GIC_PRM_FLD(0x080, 32)
#define GIC_PRM_MODIFY_QP_IN_QPC GIC_PRM_FLD(0x0c0, 1856)
#define GIC_PRM_QUERY_QP_OUT_OPT_PARAM_MASK GIC_PRM_FLD(0x080, 32)
#define GIC_PRM_QUERY_QP_OUT_QPC GIC_PRM_FLD(0x0c0, 1856)

#define GIC_PRM_QPC_STATE GIC_PRM_FLD(0x000, 4)
#define GIC_PRM_QPC_ST GIC_PRM_FLD(0x008, 8)
#define GIC_PRM_QPC_PM_STATE GIC_PRM_FLD(0x013, 2)
#define GIC_PRM_QPC_END_PADDING_MODE GIC_PRM_FLD(0x01c, 2)
#define GIC_PRM_QPC_PD GIC_PRM_FLD(0x028, 24)
#define GIC_PRM_QPC_MTU GIC_PRM_FLD(0x040, 3)
#define GIC_PRM_QPC_LOG_MSG_MAX GIC_PRM_FLD(0x043, 5)
#define GIC_PRM_QPC_LOG_RQ_SIZE GIC_PRM_FLD(0x049, 4)
#define GIC_PRM_QPC_LOG_RQ_STRIDE GIC_PRM_FLD(0x04d, 3)
#define GIC_PRM_QPC_NO_SQ GIC_PRM_FLD(0x050, 1)
#define GIC_PRM_QPC_LOG_SQ_SIZE GIC_PRM_FLD(0x051, 4)
#define GIC_PRM_QPC_COUNTER_SET_ID GIC_PRM_FLD(0x060, 8)
#define GIC_PRM_QPC_UAR_PAGE GIC_PRM_FLD(0x068, 24)
#define GIC_PRM_QPC_USER_INDEX GIC_PRM_FLD(0x088, 24)
#define GIC_PRM_QPC_LOG_PAGE_SIZE GIC_PRM_FLD(0x0a3, 5)
#define GIC_PRM_QPC_REMOTE_QPN GIC_PRM_FLD(0x0a8, 24)
#define GIC_PRM_QPC_PRIMARY_ADDRESS_PATH GIC_PRM_FLD(0x0c0, 352)
#define GIC_PRM_QPC_LOG_ACK_REQ_FREQ GIC_PRM_FLD(0x380, 4)
#define GIC_PRM_QPC_LOG_SRA_MAX GIC_PRM_FLD(0x388, 3)
#define GIC_PRM_QPC_RETRY_COUNT GIC_PRM_FLD(0x38d, 3)
#define GIC_PRM_QPC_RNR_RETRY GIC_PRM_FLD(0x390, 3)
#define GIC_PRM_QPC_NEXT_SEND_PSN GIC_PRM_FLD(0x3c8, 24)
#define GIC_PRM_QPC_CQN_SND GIC_PRM_FLD(0x3e8, 24)
#define GIC_PRM_QPC_LOG_RRA_MAX GIC_PRM_FLD(0x488, 3)
#define GIC_PRM_QPC_ATOMIC_MODE GIC_PRM_FLD(0x48c, 4)
#define GIC_PRM_QPC_RRE GIC_PRM_FLD(0x490, 1)
#define GIC_PRM_QPC_RWE GIC_PRM_FLD(0x491, 1)
#define GIC_PRM_QPC_RAE GIC_PRM_FLD(0x492, 1)
#define GIC_PRM_QPC_PAGE_OFFSET GIC_PRM_FLD(0x494, 6)
#define GIC_PRM_QPC_CD_MASTER GIC_PRM_FLD(0x49f, 1)
#define GIC_PRM_QPC_MIN_RNR_NAK GIC_PRM_FLD(0x4a3, 5)
#define GIC_PRM_QPC_NEXT_RCV_PSN GIC_PRM_FLD(0x4a8, 24)
#define GIC_PRM_QPC_CQN_RCV GIC_PRM_FLD(0x4e8, 24)
#define GIC_PRM_QPC_DBR_ADDR GIC_PRM_FLD(0x500, 64)
#define GIC_PRM_QPC_RQ_TYPE GIC_PRM_FLD(0x565, 3)
#define GIC_PRM_QPC_SRQN_RMPN_XRQN GIC_PRM_FLD(0x568, 24)
#define GIC_PRM_QPC_CS_REQ GIC_PRM_FLD(0x630, 8)
#define GIC_PRM_QPC_CS_RES GIC_PRM_FLD(0x638, 8)
#define GIC_PRM_QPC_DC_ACCESS_KEY GIC_PRM_FLD(0x640, 64)
#define GIC_PRM_QPC_DBR_UMEM_VALID GIC_PRM_FLD(0x683, 1)
#define GIC_PRM_QPC_DBR_UMEM_ID GIC_PRM_FLD(0x720, 32)

/* The address path (ads), relative to its start in the QP context. */
#define GIC_PRM_ADS_PKEY_INDEX GIC_PRM_FLD(0x010, 16)
#define GIC_PRM_ADS_GRH GIC_PRM_FLD(0x028, 1)
#define GIC_PRM_ADS_MLID GIC_PRM_FLD(0x029, 7)
#define GIC_PRM_ADS_RLID GIC_PRM_FLD(0x030, 16)
#define GIC_PRM_ADS_ACK_TIMEOUT GIC_PRM_FLD(0x040, 5)
#define GIC_PRM_ADS_SRC_ADDR_INDEX GIC_PRM_FLD(0x048, 8)
#define GIC_PRM_ADS_STAT_RATE GIC_PRM_FLD(0x054, 4)
#define GIC_PRM_ADS_HOP_LIMIT GIC_PRM_FLD(0x058, 8)
#define GIC_PRM_ADS_TCLASS GIC_PRM_FLD(0x064, 8)
#define GIC_PRM_ADS_FLOW_LABEL GIC_PRM_FLD(0x06c, 20)
#define GIC_PRM_ADS_RGID_RIP GIC_PRM_FLD(0x080, 128) /* 16 bytes, byte 16 of ads */
#define GIC_PRM_ADS_DSCP GIC_PRM_FLD(0x10a, 6)
#define GIC_PRM_ADS_UDP_SPORT GIC_PRM_FLD(0x110, 16)
#define GIC_PRM_ADS_ETH_PRIO GIC_PRM_FLD(0x121, 3)
#define GIC_PRM_ADS_SL GIC_PRM_FLD(0x124, 4)
#define GIC_PRM_ADS_VHCA_PORT_NUM GIC_PRM_FLD(0x128, 8)
#define GIC_PRM_ADS_RMAC_47_32 GIC_PRM_FLD(0x130, 16)
#define GIC_PRM_ADS_RMAC_31_0 GIC_PRM_FLD(0x140, 32)

enum gic_prm_qp_state {         /* qpc.state */
	GIC_PRM_QPS_RST = 0x0,
	GIC_PRM_QPS_INIT = 0x1,
	GIC_PRM_QPS_RTR = 0x2,
	GIC_PRM_QPS_RTS = 0x3,
	GIC_PRM_QPS_SQER = 0x4,
	GIC_PRM_QPS_SQD = 0x5,
	GIC_PRM_QPS_ERR = 0x6,
};
enum gic_prm_qp_st {            /* qpc.st (service type) */
	GIC_PRM_QP_ST_RC = 0x0,
	GIC_PRM_QP_ST_UC = 0x1,
	GIC_PRM_QP_ST_UD = 0x2,
	GIC_PRM_QP_ST_XRC = 0x3,
	GIC_PRM_QP_ST_DCI = 0x5,
	GIC_PRM_QP_ST_QP0 = 0x7,
	GIC_PRM_QP_ST_QP1 = 0x8,
	GIC_PRM_QP_ST_RAW_DATAGRAM = 0x9,
	GIC_PRM_QP_ST_REG_UMR = 0xc,
};
enum { GIC_PRM_QP_PM_MIGRATED = 0x3 };
enum gic_prm_rq_type {          /* qpc.rq_type */
	GIC_PRM_RQ_REGULAR = 0x0,
	GIC_PRM_RQ_SRQ = 0x1,
	GIC_PRM_RQ_NONE = 0x3,
};
/* qpc.atomic_mode: 3 is what NVSHMEM and DOCA set for 8-byte atomics
 * ("up to 64 bits"); larger values ask for wider (extended) atomics. */
enum { GIC_PRM_ATOMIC_MODE_UP_TO_64BIT = 0x3 };

/* ------------------------------------------------------------------ */
/* ALLOC_PD / DEALLOC_PD (16 bytes each way), NOP (16). */

enum { GIC_PRM_ALLOC_PD_IN_BYTES = 16, GIC_PRM_ALLOC_PD_OUT_BYTES = 16, GIC_PRM_NOP_IN_BYTES = 16,
       GIC_PRM_NOP_OUT_BYTES = 16 };
#define GIC_PRM_ALLOC_PD_OUT_PD GIC_PRM_FLD(0x048, 24)

#endif /* GIC_MLX5_PRM_H */
