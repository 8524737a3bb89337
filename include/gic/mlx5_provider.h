/*
 * gic/mlx5_provider.h - the mlx5 provider's first layer: opening a
 * ConnectX device through rdma-core, and the RC QP state machine.
 *
 * STATUS: compiled and unit-tested on machines without an RDMA device (the
 * error paths and the state machine, which is pure); it has never run on
 * ConnectX hardware in this project. Queue creation in GPU memory, UAR
 * mapping and DC follow (issue 6).
 *
 * Errors: constructors return NULL and set errno, and write what failed,
 * with the call, the errno and the likely cause, into err (when not NULL).
 */
#ifndef GIC_MLX5_PROVIDER_H
#define GIC_MLX5_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "gic/conn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gic_mlx5 {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_port_attr port_attr;
	uint8_t port;
	char name[64];
} gic_mlx5;

/* Opens the RDMA device called name (NULL: the first one), checks that it
 * is an mlx5 device whose port is active, and allocates a protection
 * domain. NULL with errno: ENODEV (no RDMA device or RDMA subsystem, or no
 * device of that name),
 * ENOTSUP (not an mlx5 device), ENETDOWN (port not active), or the errno
 * of the failed verbs call. */
gic_mlx5 *gic_mlx5_open(const char *name, uint8_t port, char *err, size_t errlen);

void gic_mlx5_close(gic_mlx5 *m);

/* RC QP transitions: fills attr and *mask for the move of a QP to state
 * to (IBV_QPS_INIT, IBV_QPS_RTR or IBV_QPS_RTS), from the local and
 * remote connection records, as ibv_modify_qp() takes them. Pure: no
 * device needed. EINVAL for another state or NULL arguments. */
int gic_rc_transition(enum ibv_qp_state to, const gic_conn_info *local,
		      const gic_conn_info *remote, struct ibv_qp_attr *attr, int *mask);

#ifdef __cplusplus
}
#endif

#endif /* GIC_MLX5_PROVIDER_H */
