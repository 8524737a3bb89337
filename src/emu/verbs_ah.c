/*
 * Address handles: ibv_create_ah builds the mlx5 address vector (struct
 * mlx5_wqe_av of rdma-core's mlx5dv.h) as a ConnectX's driver does, and
 * mlx5dv_init_obj hands it out (gic_emu_ah_av), which is what a library
 * that builds DC or UD WQEs itself copies into them. softnic executes no
 * DC or UD WQE yet, so an AH is only its bytes here.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "emu.h"
#include "emu_private.h"

typedef struct emu_ah {
	struct ibv_ah ah;        /* first: the handle */
	struct mlx5_wqe_av av;
} emu_ah;

enum { EMU_AV_GRH = 1u << 30 }; /* grh_gid_fl: a global route header follows */

/* The destination MAC a RoCE GID of EUI-64 form names (bytes 8..15, the
 * universal/local bit flipped back, the ff:fe in the middle dropped). */
static void rmac_of_gid(const uint8_t gid[16], uint8_t mac[6])
{
	mac[0] = gid[8] ^ 2;
	mac[1] = gid[9];
	mac[2] = gid[10];
	mac[3] = gid[13];
	mac[4] = gid[14];
	mac[5] = gid[15];
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	int roce = emu.link_layer != IBV_LINK_LAYER_INFINIBAND;
	emu_ah *a;

	/* GID table: one entry on InfiniBand, two on RoCE (v1, v2). */
	if (!pd || !attr || attr->port_num != 1 || attr->sl > 15 ||
	    (roce && !attr->is_global) || (attr->is_global && attr->grh.sgid_index >= (roce ? 2 : 1))) {
		errno = EINVAL; /* RoCE needs a GRH (it routes by GID) */
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->av.stat_rate_sl = (uint8_t)((attr->static_rate << 4) | (attr->sl & 0xf));
	a->av.fl_mlid = attr->src_path_bits & 0x7f;
	a->av.rlid = htobe16(attr->dlid);
	if (attr->is_global) {
		a->av.dqp_dct = htobe32(MLX5_EXTENDED_UD_AV);
		a->av.grh_gid_fl = htobe32(attr->grh.flow_label | EMU_AV_GRH |
					   ((uint32_t)attr->grh.sgid_index << 20));
		a->av.hop_limit = attr->grh.hop_limit;
		a->av.tclass = attr->grh.traffic_class;
		memcpy(a->av.rgid, attr->grh.dgid.raw, 16);
		if (roce)
			rmac_of_gid(attr->grh.dgid.raw, a->av.rmac);
	}
	a->ah.context = pd->context;
	a->ah.pd = pd;
	a->ah.handle = 0;
	return &a->ah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (!ah)
		return EINVAL;
	free(ah);
	return 0;
}

int gic_emu_ah_av(struct ibv_ah *ah, struct mlx5_wqe_av **av)
{
	if (!ah || !av || !gic_emu_is_device(ah->context->device))
		return EINVAL;
	*av = &((emu_ah *)ah)->av;
	return 0;
}
