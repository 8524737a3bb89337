/*
 * QUERY_HCA_CAP on the emulated device: the general and atomic capability
 * pages as a ConnectX-7 answers them, with softnic's limits where they are
 * smaller and 0 for what softnic does not do (docs/emu.md's DEVX section
 * has the table). The limits follow the device and port attributes the
 * emulated libibverbs reports (ibv_query_device, ibv_query_port), so the
 * two views agree.
 */
#include <infiniband/verbs.h>
#include <string.h>

#include "devx.h"

/* floor(log2(n)) for n >= 1; 0 for 0. */
static uint32_t log2_floor(uint64_t n)
{
	uint32_t l = 0;

	while (n >>= 1)
		l++;
	return l;
}

static void set_cap(uint8_t *cap, gic_prm_fld f, uint32_t v)
{
	gic_prm_set(cap, f, v);
}

/* Sizes and counts: from the verbs attributes (softnic's limits). */
static void general_limits(uint8_t *cap, const struct ibv_device_attr *d)
{
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_QP, log2_floor((uint64_t)d->max_qp));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_QP_SZ, EMU_DEVX_LOG_MAX_SQ_BB); /* in BBs */
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_SRQ, log2_floor((uint64_t)d->max_srq));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_SRQ_SZ, log2_floor((uint64_t)d->max_srq_wr + 1));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_CQ, log2_floor((uint64_t)d->max_cq));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_CQ_SZ, log2_floor((uint64_t)d->max_cqe + 1));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_MKEY, log2_floor((uint64_t)d->max_mr));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_MRW_SZ, log2_floor(d->max_mr_size));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_PD, log2_floor((uint64_t)d->max_pd));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_RA_REQ_QP, log2_floor((uint64_t)d->max_qp_init_rd_atom));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_RA_RES_QP, log2_floor((uint64_t)d->max_qp_rd_atom));
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_MSG, EMU_DEVX_LOG_MAX_MSG);
	set_cap(cap, GIC_PRM_CAP_GEN_MAX_WQE_SZ_SQ, 1024);  /* 16 BBs, the largest WQE */
	set_cap(cap, GIC_PRM_CAP_GEN_MAX_WQE_SZ_RQ, 16 * 16); /* 16 data segments */
	set_cap(cap, GIC_PRM_CAP_GEN_NUM_PORTS, d->phys_port_cnt);
	/* Encoded tables: 0 is the smallest (8 GIDs, 128 P_Keys); the ports
	 * have fewer (ibv_query_port: 1 or 2 GIDs, 1 P_Key). */
	set_cap(cap, GIC_PRM_CAP_GEN_GID_TABLE_SIZE, 0);
	set_cap(cap, GIC_PRM_CAP_GEN_PKEY_TABLE_SIZE, 0);
}

/* What softnic does: RC with atomics, CQE version 1, overrun-ignore CQs,
 * 64-byte CQEs, one 256-byte BlueFlame register per 4 KiB UAR page. No DC
 * (it executes no DC WQE), so no compact address vector either, no UD, UC
 * or XRC, no CQE compression or moderation. */
static void general_features(uint8_t *cap, int ethernet)
{
	set_cap(cap, GIC_PRM_CAP_GEN_PORT_TYPE, ethernet ? GIC_PRM_PORT_TYPE_ETH : GIC_PRM_PORT_TYPE_IB);
	set_cap(cap, GIC_PRM_CAP_GEN_ROCE, ethernet);
	set_cap(cap, GIC_PRM_CAP_GEN_RC, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_ATOMIC, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_CQE_VERSION, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_CQ_OI, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_BF, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_BF_REG_SIZE, 8); /* 256 bytes: one register, not two halves */
	set_cap(cap, GIC_PRM_CAP_GEN_UAR_4K, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_UAR_PAGE_SZ, 0); /* 4 KiB pages */
	set_cap(cap, GIC_PRM_CAP_GEN_NUM_OF_UARS_PER_PAGE, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_PG_SZ, GIC_PRM_ADAPTER_PAGE_SHIFT);
	set_cap(cap, GIC_PRM_CAP_GEN_LOG_MAX_ATOMIC_SIZE_QP, 3); /* 8 bytes */
	/* DC (docs/softnic.md "DC"): DCIs execute, DCTs (mlx5dv_create_qp)
	 * respond; both AV forms are decoded. */
	set_cap(cap, GIC_PRM_CAP_GEN_DCT, 1);
	set_cap(cap, GIC_PRM_CAP_GEN_COMPACT_ADDRESS_VECTOR, 1);
	/* Left 0: ud, uc, xrc, cq_resize, cq_moderation, cqe_compression,
	 * cqe_128_always, end_pad, hca_cap_2, the DC connection limits (softnic
	 * keeps no DC connections: log_max_dct_connections), the EQ limits (no
	 * EQ command). */
}

static int answer_general(struct ibv_context *ctx, uint8_t *cap, emu_devx_fail *f)
{
	struct ibv_device_attr d;
	struct ibv_port_attr p;

	if (ibv_query_device(ctx, &d) || ibv_query_port(ctx, 1, &p))
		return emu_devx_refuse(f, GIC_PRM_STAT_INT_ERR, EMU_DEVX_SYND_PORT,
				       "the device or its port could not be queried");
	general_limits(cap, &d);
	general_features(cap, p.link_layer == IBV_LINK_LAYER_ETHERNET);
	return 0;
}

/* softnic's atomics: compare-swap, fetch-add and their masked forms, 4 and
 * 8 bytes, on RC QPs; 8-byte operands in host byte order (the mode the
 * Linux driver selects when the device supports it), on DCIs too. */
static void answer_atomic(uint8_t *cap)
{
	set_cap(cap, GIC_PRM_CAP_ATOMIC_OPERATIONS, GIC_PRM_ATOMIC_OP_CAS | GIC_PRM_ATOMIC_OP_FA |
		GIC_PRM_ATOMIC_OP_MASKED_CAS | GIC_PRM_ATOMIC_OP_MASKED_FA);
	set_cap(cap, GIC_PRM_CAP_ATOMIC_SIZE_QP, GIC_PRM_ATOMIC_SIZE_4B | GIC_PRM_ATOMIC_SIZE_8B);
	set_cap(cap, GIC_PRM_CAP_ATOMIC_SIZE_DC, GIC_PRM_ATOMIC_SIZE_4B | GIC_PRM_ATOMIC_SIZE_8B);
	set_cap(cap, GIC_PRM_CAP_ATOMIC_SUPPORTED_8B_ENDIANNESS_MODE_1, 1);
	set_cap(cap, GIC_PRM_CAP_ATOMIC_REQ_8B_ENDIANNESS_MODE, 1);
}

static const char *cap_name(uint32_t type)
{
	switch (type) {
	case GIC_PRM_CAP_ETHERNET_OFFLOADS: return "Ethernet offloads";
	case GIC_PRM_CAP_ODP: return "on-demand paging";
	case GIC_PRM_CAP_ROCE: return "RoCE";
	case GIC_PRM_CAP_GENERAL_2: return "general device 2";
	default: return "unknown";
	}
}

int emu_devx_query_hca_cap(struct ibv_context *ctx, const uint8_t *in, size_t inlen, uint8_t *out,
			   size_t outlen, emu_devx_fail *f)
{
	uint32_t op_mod = gic_prm_get(in, GIC_PRM_IN_OP_MOD), type = op_mod >> 1;
	uint8_t *cap = out + GIC_PRM_HCA_CAP_OUT_CAPABILITY.bit / 8;

	(void)inlen;
	(void)outlen; /* the caller checked both against the layout */
	if (gic_prm_get(in, GIC_PRM_QUERY_HCA_CAP_IN_OTHER_FUNCTION))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_BAD_OP_MOD,
				       "other_function: softnic has one function");
	if (type == GIC_PRM_CAP_GENERAL)
		return answer_general(ctx, cap, f);
	if (type == GIC_PRM_CAP_ATOMIC) {
		answer_atomic(cap);
		return 0;
	}
	return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_CAP_TYPE,
			       "capability type 0x%x (%s, op_mod 0x%x) is not answered: softnic "
			       "answers the general (0) and atomic (3) types", type, cap_name(type),
			       op_mod);
}
