/*
 * What the emulated libibverbs exports to the emulated libmlx5 (node
 * GIC_EMU_PRIVATE_1): the softnic queues behind verbs handles. Each returns
 * 0, or EINVAL for a handle that is not one of the emulation's.
 */
#ifndef GIC_EMU_PRIVATE_H
#define GIC_EMU_PRIVATE_H

#include <infiniband/verbs.h>

#include "gic/softnic.h"

int gic_emu_qp_desc(struct ibv_qp *qp, softnic_qp_desc *out);
int gic_emu_cq_desc(struct ibv_cq *cq, softnic_cq_desc *out);
/* head and tail: the SRQ's free list as the emulated post_srq_recv keeps it. */
int gic_emu_srq_desc(struct ibv_srq *srq, softnic_srq_desc *out, uint32_t *head, uint32_t *tail);
int gic_emu_pdn(struct ibv_pd *pd, uint32_t *pdn);
/* 1 when dev is an emulated device. */
int gic_emu_is_device(struct ibv_device *dev);

/* An extended CQ (ibv_create_cq_ex's checks and semantics), for
 * mlx5dv_create_cq once it has checked its own attributes; NULL with
 * errno (EINVAL for a context that is not one of the emulation's). */
struct ibv_cq_ex *gic_emu_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);

/* The mlx5 address vector of an address handle (mlx5dv_init_obj's AH). */
struct mlx5_wqe_av;
int gic_emu_ah_av(struct ibv_ah *ah, struct mlx5_wqe_av **av);

/* ---- The softnic objects behind DEVX CREATE_CQ and CREATE_QP (the
 * emulated libmlx5's devx_make.c; verbs_devx.c). Their queues lie in the
 * caller's umems: softnic writes nothing there at create (the hardware
 * does not either), and frees none of it. Each returns 0, or an errno with
 * the reason in why. */

/* A CQ of 2^log_size 64-byte CQEs at ring, its consumer-index record at
 * dbrec; collapsed: every CQE at entry 0; overrun_ignore: never stalls. */
typedef struct gic_emu_devx_cq_spec {
	void *ring;
	uint32_t *dbrec;
	uint32_t log_size;
	int collapsed, overrun_ignore;
} gic_emu_devx_cq_spec;
int gic_emu_devx_cq_create(struct ibv_context *ctx, const gic_emu_devx_cq_spec *spec,
			   uint32_t *cqn, void **handle, char *why, size_t len);
int gic_emu_devx_cq_destroy(void *handle); /* EBUSY while a QP uses it */

/* An RC QP: its send ring of 2^log_sq_bb BBs at sq, a receive ring of its
 * own (2^log_rq WQEs of 16 << log_rq_stride bytes at rq) or the SRQ
 * numbered srqn, the doorbell record pair at dbrec ([0] receive, [1]
 * send), and the UAR register it is rung at (db: other QPs of the UAR
 * page ring it too). CQs: DEVX ones by handle, or verbs ones by number
 * (handle NULL). */
typedef struct gic_emu_devx_qp_spec {
	uint32_t pdn;
	void *send_cq, *recv_cq;
	uint32_t send_cqn, recv_cqn;
	uint32_t log_sq_bb;
	void *sq;
	uint32_t log_rq, log_rq_stride;
	void *rq;
	int use_srq;
	uint32_t srqn;
	uint32_t *dbrec;
	uint64_t *db;
	int dci;        /* a DC initiator: executes DC WQEs; its receive side is ignored */
} gic_emu_devx_qp_spec;
int gic_emu_devx_qp_create(struct ibv_context *ctx, const gic_emu_devx_qp_spec *spec,
			   uint32_t *qpn, void **handle, char *why, size_t len);

/* A state command's effect on the QP (what the firmware checked). */
typedef struct gic_emu_devx_qp_change {
	int set_rights, rights;       /* RST2INIT: SOFTNIC_ACCESS_REMOTE_* */
	int connect;                  /* INIT2RTR: to the QP numbered remote_qpn */
	uint32_t remote_qpn;
	int min_rnr_timer, rnr_retry; /* -1: unchanged */
	int to_error;                 /* 2ERR */
} gic_emu_devx_qp_change;
int gic_emu_devx_qp_modify(void *handle, const gic_emu_devx_qp_change *c, char *why, size_t len);
int gic_emu_devx_qp_destroy(void *handle);

/* A DC target for mlx5dv_create_qp (MLX5DV_DCTYPE_DCT): a softnic DCT
 * numbered as any QP, its receives from attr->srq, taking access_key,
 * modified to INIT and RTR without a peer. NULL with errno. */
struct ibv_qp *gic_emu_create_dct(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr,
				  uint64_t access_key);

/* A DC initiator for mlx5dv_create_qp (MLX5DV_DCTYPE_DCI): a softnic DCI
 * with the qp-ex posting API (its WRs take mlx5dv_wr_set_dc_addr), no
 * receive side, modified to INIT, RTR and RTS without a peer. NULL with
 * errno. */
struct ibv_qp *gic_emu_create_dci(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);

/* mlx5dv_qp_ex_from_ibv_qp_ex: the mlx5dv_qp_ex of an emulated QP with the
 * qp-ex API (its wr_set_dc_addr acts on DCIs), or NULL. */
struct mlx5dv_qp_ex;
struct mlx5dv_qp_ex *gic_emu_dv_qp_ex(struct ibv_qp_ex *qpx);

#endif /* GIC_EMU_PRIVATE_H */
