/*
 * mlx5 provider: the RC QP state machine as ibv_modify_qp() attributes.
 * Pure functions of the two connection records, so they are tested on
 * machines without a device.
 */
#include <errno.h>
#include <string.h>

#include "gic/mlx5_provider.h"

enum {
	RC_ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		    IBV_ACCESS_REMOTE_ATOMIC,
	RC_RD_ATOMIC = 16,   /* outstanding reads/atomics, both directions */
	RC_MIN_RNR_TIMER = 12,
	RC_TIMEOUT = 14,     /* 4.096 us * 2^14 = 67 ms per retry */
	RC_RETRY_CNT = 7,
	RC_RNR_RETRY = 7,    /* 7: retry forever on RNR */
};

static void to_init(const gic_conn_info *local, struct ibv_qp_attr *a, int *mask)
{
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = 0;
	a->port_num = local->port;
	a->qp_access_flags = RC_ACCESS;
	*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

/* Ready to receive: where the peer is (address vector), its QP number and
 * first PSN, and the path MTU both ends support. */
static void to_rtr(const gic_conn_info *local, const gic_conn_info *remote,
		   struct ibv_qp_attr *a, int *mask)
{
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = (enum ibv_mtu)(local->mtu < remote->mtu ? local->mtu : remote->mtu);
	a->dest_qp_num = remote->qpn;
	a->rq_psn = remote->psn;
	a->max_dest_rd_atomic = RC_RD_ATOMIC;
	a->min_rnr_timer = RC_MIN_RNR_TIMER;
	a->ah_attr.dlid = remote->lid;
	a->ah_attr.port_num = local->port;
	if (remote->flags & GIC_CONN_GID_VALID) {
		a->ah_attr.is_global = 1;
		memcpy(a->ah_attr.grh.dgid.raw, remote->gid, 16);
		a->ah_attr.grh.hop_limit = 64; /* routed RoCE v2 needs more than 1 */
	}
	*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

/* Ready to send: our first PSN and the retry policy. */
static void to_rts(const gic_conn_info *local, struct ibv_qp_attr *a, int *mask)
{
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = local->psn;
	a->timeout = RC_TIMEOUT;
	a->retry_cnt = RC_RETRY_CNT;
	a->rnr_retry = RC_RNR_RETRY;
	a->max_rd_atomic = RC_RD_ATOMIC;
	*mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
}

int gic_rc_transition(enum ibv_qp_state to, const gic_conn_info *local,
		      const gic_conn_info *remote, struct ibv_qp_attr *attr, int *mask)
{
	if (!local || !remote || !attr || !mask)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	switch (to) {
	case IBV_QPS_INIT:
		to_init(local, attr, mask);
		return 0;
	case IBV_QPS_RTR:
		to_rtr(local, remote, attr, mask);
		return 0;
	case IBV_QPS_RTS:
		to_rts(local, attr, mask);
		return 0;
	default:
		*mask = 0;
		return EINVAL;
	}
}
