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

#endif /* GIC_EMU_PRIVATE_H */
