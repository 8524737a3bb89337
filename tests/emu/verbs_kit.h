/*
 * Helpers shared by the programs that run on the emulated device
 * (tests/emu): a CHECK that counts, and the RESET -> INIT -> RTR -> RTS
 * walk of an RC QP. Plain verbs, nothing of the project's.
 */
#ifndef GIC_VERBS_KIT_H
#define GIC_VERBS_KIT_H

#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

static int checks __attribute__((unused)), failed __attribute__((unused));

#define CHECK(c, ...)                                                     \
	do {                                                              \
		checks++;                                                 \
		if (!(c)) {                                               \
			failed++;                                         \
			fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);   \
			fprintf(stderr, __VA_ARGS__);                     \
			fputc('\n', stderr);                              \
		}                                                         \
	} while (0)

/* Moves qp through INIT (with the remote rights access), RTR toward the QP
 * numbered dest behind LID dlid on port 1, and RTS. 0 or an errno. */
static inline int kit_connect(struct ibv_qp *qp, uint32_t dest, uint16_t dlid, int access)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.dlid = dlid;
	a.ah_attr.port_num = 1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

#endif /* GIC_VERBS_KIT_H */
