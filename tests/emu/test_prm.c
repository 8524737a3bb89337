/*
 * include/gic/mlx5_prm.h: field offsets and the accessors.
 *  - byte positions of a handful of fields as the PRM's tables give them
 *    (byte offset within the command, bit within the byte);
 *  - every field of the header is well formed, lies inside its layout and
 *    overlaps no other field of the same layout;
 *  - the accessors agree with rdma-core's own DEVX accessors
 *    (_devx_set/_devx_get/_devx_get64 in the installed mlx5dv.h, written
 *    independently of ours), and round-trip without touching neighbours.
 */
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/mlx5_prm.h"
#include "verbs_kit.h" /* CHECK, counting checks and failures */

typedef struct { const char *name; gic_prm_fld f; uint32_t layout_bits; } named;
#define F(layout, name) { #name, name, (layout) * 8 }

/* Fields of the command layouts (bits relative to the command). */
static const named cmd_fields[] = {
	F(16, GIC_PRM_IN_OPCODE), F(16, GIC_PRM_IN_UID), F(16, GIC_PRM_IN_VHCA_TUNNEL_ID),
	F(16, GIC_PRM_IN_OP_MOD), F(16, GIC_PRM_IN_OBJ_NUM),
	F(272, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_OFFSET), F(272, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID),
	F(272, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_VALID),
};
static const named out_fields[] = { F(16, GIC_PRM_OUT_STATUS), F(16, GIC_PRM_OUT_SYNDROME),
				    F(16, GIC_PRM_OUT_OBJ_NUM) };
static const named cap_gen[] = {
	F(4096, GIC_PRM_CAP_GEN_HCA_CAP_2), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_SRQ_SZ),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_QP_SZ), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_QP),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_SRQ), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_CQ_SZ),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_CQ), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_EQ_SZ),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_MKEY), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_EQ),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_MRW_SZ), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_RA_REQ_DC),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_RA_RES_DC), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_RA_REQ_QP),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_RA_RES_QP), F(4096, GIC_PRM_CAP_GEN_END_PAD),
	F(4096, GIC_PRM_CAP_GEN_RTS2RTS_QP_DSCP), F(4096, GIC_PRM_CAP_GEN_GID_TABLE_SIZE),
	F(4096, GIC_PRM_CAP_GEN_PKEY_TABLE_SIZE), F(4096, GIC_PRM_CAP_GEN_PORT_TYPE),
	F(4096, GIC_PRM_CAP_GEN_NUM_PORTS), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_MSG),
	F(4096, GIC_PRM_CAP_GEN_CQE_VERSION), F(4096, GIC_PRM_CAP_GEN_COMPACT_ADDRESS_VECTOR),
	F(4096, GIC_PRM_CAP_GEN_DCT), F(4096, GIC_PRM_CAP_GEN_ROCE), F(4096, GIC_PRM_CAP_GEN_ATOMIC),
	F(4096, GIC_PRM_CAP_GEN_CQ_OI), F(4096, GIC_PRM_CAP_GEN_CQ_RESIZE),
	F(4096, GIC_PRM_CAP_GEN_CQ_MODERATION), F(4096, GIC_PRM_CAP_GEN_XRC),
	F(4096, GIC_PRM_CAP_GEN_UD), F(4096, GIC_PRM_CAP_GEN_UC), F(4096, GIC_PRM_CAP_GEN_RC),
	F(4096, GIC_PRM_CAP_GEN_UAR_4K), F(4096, GIC_PRM_CAP_GEN_UMEM_UID_0),
	F(4096, GIC_PRM_CAP_GEN_LOG_PG_SZ), F(4096, GIC_PRM_CAP_GEN_BF),
	F(4096, GIC_PRM_CAP_GEN_LOG_BF_REG_SIZE), F(4096, GIC_PRM_CAP_GEN_MAX_WQE_SZ_SQ),
	F(4096, GIC_PRM_CAP_GEN_MAX_WQE_SZ_RQ), F(4096, GIC_PRM_CAP_GEN_MAX_WQE_SZ_SQ_DC),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_PD), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_XRCD),
	F(4096, GIC_PRM_CAP_GEN_LOG_UAR_PAGE_SZ), F(4096, GIC_PRM_CAP_GEN_NUM_OF_UARS_PER_PAGE),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_DCT_CONNECTIONS), F(4096, GIC_PRM_CAP_GEN_LOG_MAX_ATOMIC_SIZE_QP),
	F(4096, GIC_PRM_CAP_GEN_LOG_MAX_ATOMIC_SIZE_DC), F(4096, GIC_PRM_CAP_GEN_CQE_128_ALWAYS),
	F(4096, GIC_PRM_CAP_GEN_CQE_COMPRESSION),
};
static const named cap_atomic[] = {
	F(4096, GIC_PRM_CAP_ATOMIC_REQ_8B_ENDIANNESS_MODE),
	F(4096, GIC_PRM_CAP_ATOMIC_SUPPORTED_8B_ENDIANNESS_MODE_1),
	F(4096, GIC_PRM_CAP_ATOMIC_OPERATIONS), F(4096, GIC_PRM_CAP_ATOMIC_SIZE_QP),
	F(4096, GIC_PRM_CAP_ATOMIC_SIZE_DC),
};
static const named cqc[] = {
	F(64, GIC_PRM_CQC_STATUS), F(64, GIC_PRM_CQC_DBR_UMEM_VALID), F(64, GIC_PRM_CQC_CQE_SZ),
	F(64, GIC_PRM_CQC_CC), F(64, GIC_PRM_CQC_SCQE_BREAK_MODERATION_EN), F(64, GIC_PRM_CQC_OI),
	F(64, GIC_PRM_CQC_CQ_PERIOD_MODE), F(64, GIC_PRM_CQC_CQE_COMP_EN),
	F(64, GIC_PRM_CQC_MINI_CQE_RES_FORMAT), F(64, GIC_PRM_CQC_ST), F(64, GIC_PRM_CQC_DBR_UMEM_ID),
	F(64, GIC_PRM_CQC_PAGE_OFFSET), F(64, GIC_PRM_CQC_LOG_CQ_SIZE), F(64, GIC_PRM_CQC_UAR_PAGE),
	F(64, GIC_PRM_CQC_CQ_PERIOD), F(64, GIC_PRM_CQC_CQ_MAX_COUNT), F(64, GIC_PRM_CQC_C_EQN),
	F(64, GIC_PRM_CQC_LOG_PAGE_SIZE), F(64, GIC_PRM_CQC_DBR_ADDR),
};
static const named qpc[] = {
	F(232, GIC_PRM_QPC_STATE), F(232, GIC_PRM_QPC_ST), F(232, GIC_PRM_QPC_PM_STATE),
	F(232, GIC_PRM_QPC_END_PADDING_MODE), F(232, GIC_PRM_QPC_PD), F(232, GIC_PRM_QPC_MTU),
	F(232, GIC_PRM_QPC_LOG_MSG_MAX), F(232, GIC_PRM_QPC_LOG_RQ_SIZE),
	F(232, GIC_PRM_QPC_LOG_RQ_STRIDE), F(232, GIC_PRM_QPC_NO_SQ), F(232, GIC_PRM_QPC_LOG_SQ_SIZE),
	F(232, GIC_PRM_QPC_COUNTER_SET_ID), F(232, GIC_PRM_QPC_UAR_PAGE),
	F(232, GIC_PRM_QPC_USER_INDEX), F(232, GIC_PRM_QPC_LOG_PAGE_SIZE),
	F(232, GIC_PRM_QPC_REMOTE_QPN), F(232, GIC_PRM_QPC_PRIMARY_ADDRESS_PATH),
	F(232, GIC_PRM_QPC_LOG_ACK_REQ_FREQ), F(232, GIC_PRM_QPC_LOG_SRA_MAX),
	F(232, GIC_PRM_QPC_RETRY_COUNT), F(232, GIC_PRM_QPC_RNR_RETRY),
	F(232, GIC_PRM_QPC_NEXT_SEND_PSN), F(232, GIC_PRM_QPC_CQN_SND), F(232, GIC_PRM_QPC_LOG_RRA_MAX),
	F(232, GIC_PRM_QPC_ATOMIC_MODE), F(232, GIC_PRM_QPC_RRE), F(232, GIC_PRM_QPC_RWE),
	F(232, GIC_PRM_QPC_RAE), F(232, GIC_PRM_QPC_PAGE_OFFSET), F(232, GIC_PRM_QPC_CD_MASTER),
	F(232, GIC_PRM_QPC_MIN_RNR_NAK), F(232, GIC_PRM_QPC_NEXT_RCV_PSN), F(232, GIC_PRM_QPC_CQN_RCV),
	F(232, GIC_PRM_QPC_DBR_ADDR), F(232, GIC_PRM_QPC_RQ_TYPE), F(232, GIC_PRM_QPC_SRQN_RMPN_XRQN),
	F(232, GIC_PRM_QPC_CS_REQ), F(232, GIC_PRM_QPC_CS_RES), F(232, GIC_PRM_QPC_DC_ACCESS_KEY),
	F(232, GIC_PRM_QPC_DBR_UMEM_VALID), F(232, GIC_PRM_QPC_DBR_UMEM_ID),
};
static const named ads[] = {
	F(44, GIC_PRM_ADS_PKEY_INDEX), F(44, GIC_PRM_ADS_GRH), F(44, GIC_PRM_ADS_MLID),
	F(44, GIC_PRM_ADS_RLID), F(44, GIC_PRM_ADS_ACK_TIMEOUT), F(44, GIC_PRM_ADS_SRC_ADDR_INDEX),
	F(44, GIC_PRM_ADS_STAT_RATE), F(44, GIC_PRM_ADS_HOP_LIMIT), F(44, GIC_PRM_ADS_TCLASS),
	F(44, GIC_PRM_ADS_FLOW_LABEL), F(44, GIC_PRM_ADS_RGID_RIP), F(44, GIC_PRM_ADS_DSCP),
	F(44, GIC_PRM_ADS_UDP_SPORT), F(44, GIC_PRM_ADS_ETH_PRIO), F(44, GIC_PRM_ADS_SL),
	F(44, GIC_PRM_ADS_VHCA_PORT_NUM), F(44, GIC_PRM_ADS_RMAC_47_32), F(44, GIC_PRM_ADS_RMAC_31_0),
};

static int cmp_bit(const void *a, const void *b)
{
	const named *x = a, *y = b;

	return x->f.bit < y->f.bit ? -1 : x->f.bit > y->f.bit;
}

/* Well formed, inside the layout, no overlap (checked after sorting). */
static void check_layout(const char *layout, const named *src, size_t n)
{
	named *v = malloc(n * sizeof(*v));

	memcpy(v, src, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_bit);
	for (size_t i = 0; i < n; i++) {
		int wide = v[i].f.width > 32;

		CHECK(wide ? v[i].f.bit % 32 == 0 && v[i].f.width % 32 == 0 : gic_prm_fld_ok(v[i].f),
		      "%s %s (bit 0x%x, width %u) crosses a word", layout, v[i].name, v[i].f.bit,
		      v[i].f.width);
		CHECK(v[i].f.bit + v[i].f.width <= v[i].layout_bits, "%s %s ends past the layout",
		      layout, v[i].name);
		if (i + 1 < n)
			CHECK(v[i].f.bit + v[i].f.width <= v[i + 1].f.bit, "%s %s overlaps %s", layout,
			      v[i].name, v[i + 1].name);
	}
	free(v);
}

/* Byte b, bits from the most significant: (field.bit) == 8 * b + msb. */
#define AT_BYTE(f, byte, msb, w) CHECK((f).bit == 8u * (byte) + (msb) && (f).width == (w), \
				       #f " is not at byte 0x%x bit %d width %d", byte, msb, w)

static void check_known_positions(void)
{
	/* Command headers: opcode bytes 0-1, op_mod bytes 6-7; status byte 0,
	 * syndrome bytes 4-7; object numbers in the low 3 bytes of dword 2. */
	AT_BYTE(GIC_PRM_IN_OPCODE, 0, 0, 16);
	AT_BYTE(GIC_PRM_IN_OP_MOD, 6, 0, 16);
	AT_BYTE(GIC_PRM_OUT_STATUS, 0, 0, 8);
	AT_BYTE(GIC_PRM_OUT_SYNDROME, 4, 0, 32);
	AT_BYTE(GIC_PRM_IN_OBJ_NUM, 9, 0, 24);
	/* QUERY_HCA_CAP: the capability page follows the 16-byte header. */
	AT_BYTE(GIC_PRM_HCA_CAP_OUT_CAPABILITY, 0x10, 0, 32768);
	CHECK(GIC_PRM_QUERY_HCA_CAP_OUT_BYTES == 16 + GIC_PRM_HCA_CAP_BYTES, "HCA cap output size");
	/* CREATE_CQ: context at 0x10 (64 bytes), umem offset at 0x50, id at 0x58. */
	AT_BYTE(GIC_PRM_CREATE_CQ_IN_CQC, 0x10, 0, 512);
	AT_BYTE(GIC_PRM_CREATE_CQ_IN_CQ_UMEM_OFFSET, 0x50, 0, 64);
	AT_BYTE(GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID, 0x58, 0, 32);
	AT_BYTE(GIC_PRM_CQC_LOG_CQ_SIZE, 0x0c, 3, 5);
	AT_BYTE(GIC_PRM_CQC_C_EQN, 0x17, 0, 8);
	AT_BYTE(GIC_PRM_CQC_DBR_ADDR, 0x38, 0, 64);
	/* CREATE_QP: opt_param_mask at 0x10, context at 0x18 (232 bytes),
	 * then wq_umem_offset at 0x100 and wq_umem_id at 0x108. */
	AT_BYTE(GIC_PRM_CREATE_QP_IN_OPT_PARAM_MASK, 0x10, 0, 32);
	AT_BYTE(GIC_PRM_CREATE_QP_IN_QPC, 0x18, 0, 8 * GIC_PRM_QPC_BYTES);
	CHECK(GIC_PRM_CREATE_QP_IN_WQ_UMEM_OFFSET.bit == GIC_PRM_CREATE_QP_IN_QPC.bit +
	      8 * GIC_PRM_QPC_BYTES, "wq_umem_offset right after the QP context");
	AT_BYTE(GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID, 0x108, 0, 32);
	/* The QP context: state the top nibble, pd bytes 5-7, the primary
	 * path at 0x18 (44 bytes), its rgid at 0x10 of the path. */
	AT_BYTE(GIC_PRM_QPC_STATE, 0, 0, 4);
	AT_BYTE(GIC_PRM_QPC_PD, 5, 0, 24);
	AT_BYTE(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH, 0x18, 0, 352);
	AT_BYTE(GIC_PRM_ADS_RGID_RIP, 0x10, 0, 128);
	AT_BYTE(GIC_PRM_QPC_DBR_ADDR, 0xa0, 0, 64);
	/* General caps: cqe_version the low nibble of dword 0xf; atomic caps:
	 * atomic_operations bytes 0x12-0x13. */
	AT_BYTE(GIC_PRM_CAP_GEN_CQE_VERSION, 0x3f, 4, 4);
	AT_BYTE(GIC_PRM_CAP_ATOMIC_OPERATIONS, 0x12, 0, 16);
	AT_BYTE(GIC_PRM_CAP_ATOMIC_SIZE_QP, 0x16, 0, 16);
}

/* Ours against rdma-core's accessors, both ways, and a round trip that
 * leaves every other bit alone. */
static void check_accessors(const named *v, size_t n, uint32_t base)
{
	static uint8_t a[8192], b[8192];

	for (size_t i = 0; i < n; i++) {
		gic_prm_fld f = GIC_PRM_FLD(base + v[i].f.bit, v[i].f.width);
		uint32_t val = (uint32_t)rand() * 2654435761u;

		if (f.width > 32) {
			if (f.width != 64)
				continue;
			uint64_t x = (uint64_t)val << 32 | (uint32_t)rand();

			memset(a, 0x5a, sizeof(a));
			gic_prm_set64(a, f, x);
			CHECK(_devx_get64(a, f.bit) == x && gic_prm_get64(a, f) == x, "%s 64-bit",
			      v[i].name);
			continue;
		}
		memset(a, 0xa5, sizeof(a));
		memcpy(b, a, sizeof(b));
		uint32_t old = gic_prm_get(a, f);

		gic_prm_set(a, f, val);
		_devx_set(b, val, f.bit, f.width);
		CHECK(!memcmp(a, b, sizeof(a)), "%s: gic_prm_set differs from rdma-core's _devx_set",
		      v[i].name);
		CHECK(gic_prm_get(a, f) == (val & gic_prm_mask(f.width)) &&
		      gic_prm_get(a, f) == _devx_get(a, f.bit, f.width), "%s: get after set",
		      v[i].name);
		gic_prm_set(a, f, old);
		memset(b, 0xa5, sizeof(b));
		CHECK(!memcmp(a, b, sizeof(a)), "%s: setting back restored other bits", v[i].name);
	}
}

static void check_malformed(void)
{
	uint8_t buf[16];

	memset(buf, 0x33, sizeof(buf));
	gic_prm_set(buf, GIC_PRM_FLD(28, 8), 0xff); /* crosses a word: ignored */
	gic_prm_set(buf, GIC_PRM_FLD(0, 0), 1);
	gic_prm_set64(buf, GIC_PRM_FLD(16, 64), 1);
	CHECK(buf[3] == 0x33 && buf[4] == 0x33 && buf[0] == 0x33 && buf[2] == 0x33,
	      "malformed fields write nothing");
	CHECK(gic_prm_get(buf, GIC_PRM_FLD(28, 8)) == 0 && gic_prm_get(buf, GIC_PRM_FLD(0, 33)) == 0,
	      "malformed fields read 0");
	CHECK(gic_prm_get(buf, GIC_PRM_FLD(0, 32)) == 0x33333333u, "a whole word");
}

int main(void)
{
	const gic_prm_fld cq = GIC_PRM_CREATE_CQ_IN_CQC, qp = GIC_PRM_CREATE_QP_IN_QPC;
	const gic_prm_fld path = gic_prm_at(qp, GIC_PRM_QPC_PRIMARY_ADDRESS_PATH);

	srand(1);
	check_known_positions();
	check_layout("command", cmd_fields, sizeof(cmd_fields) / sizeof(cmd_fields[0]));
	check_layout("output", out_fields, sizeof(out_fields) / sizeof(out_fields[0]));
	check_layout("general caps", cap_gen, sizeof(cap_gen) / sizeof(cap_gen[0]));
	check_layout("atomic caps", cap_atomic, sizeof(cap_atomic) / sizeof(cap_atomic[0]));
	check_layout("cqc", cqc, sizeof(cqc) / sizeof(cqc[0]));
	check_layout("qpc", qpc, sizeof(qpc) / sizeof(qpc[0]));
	check_layout("ads", ads, sizeof(ads) / sizeof(ads[0]));
	check_accessors(cap_gen, sizeof(cap_gen) / sizeof(cap_gen[0]), 0x80);
	check_accessors(cap_atomic, sizeof(cap_atomic) / sizeof(cap_atomic[0]), 0x80);
	check_accessors(cqc, sizeof(cqc) / sizeof(cqc[0]), cq.bit);
	check_accessors(qpc, sizeof(qpc) / sizeof(qpc[0]), qp.bit);
	check_accessors(ads, sizeof(ads) / sizeof(ads[0]), path.bit);
	check_malformed();
	printf("test_prm: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
