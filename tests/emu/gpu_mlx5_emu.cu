/*
 * gic-gpu-mlx5-emu: GPU threads post mini-gda WQEs into queues that the
 * project's mlx5 provider (gic/mlx5_provider.h, the code a ConnectX
 * cluster runs) created through rdma-core's API on the emulated device:
 * gic_mlx5_open, gic_mlx5_cq_create, gic_mlx5_rc_qp_create (queues in
 * host memory), gic_mlx5_rc_connect, gic_mlx5_reg_mr, and the device view
 * of gic_mlx5_qp_view, which maps the rings into the GPU and picks the
 * doorbell path: the UAR mapped into the GPU when CUDA takes it as I/O
 * memory, else the forwarder (a CPU thread copies a shadow doorbell word).
 * The line it prints names the path that ran and why. Every payload is
 * checked. Run with LD_LIBRARY_PATH=<build>/emu; with GIC_EMU_ENGINE=gpu
 * the device's queues and doorbell register are GPU (managed) memory on
 * softnic's GPU engine, which the provider's view takes as it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gic/mlx5_provider.h"
#include "gpu_emu_kit.cuh"

/* One sender QP (its CQ) and its receiver, connected in this process. */
static gic_mlx5_qp *make_pair(gic_mlx5 *m, gic_mlx5_qp **recv_qp)
{
	gic_mlx5_cq *scq = gic_mlx5_cq_create(m, 8), *rcq = gic_mlx5_cq_create(m, 4);
	gic_mlx5_qp *a = scq ? gic_mlx5_rc_qp_create(m, scq, 8, GIC_QUEUES_HOST) : NULL;
	gic_mlx5_qp *b = rcq ? gic_mlx5_rc_qp_create(m, rcq, 4, GIC_QUEUES_HOST) : NULL;
	gic_conn_info la, lb;

	if (!a || !b || gic_mlx5_qp_local(a, &la) || gic_mlx5_qp_local(b, &lb) ||
	    gic_mlx5_rc_connect(a, &la, &lb) || gic_mlx5_rc_connect(b, &lb, &la))
		return NULL;
	*recv_qp = b;
	return a;
}

static const char *db_mode_name(int mode)
{
	return mode == GIC_MLX5_DB_GPU ? "GPU-rung doorbell (the doorbell register mapped into, or "
					 "already reachable from, the GPU)"
	       : mode == GIC_MLX5_DB_FORWARD ? "forwarded doorbell (a CPU thread copies the "
					       "GPU's shadow word)"
					     : "unknown";
}

int main(void)
{
	char err[512] = "";
	gic_mlx5 *m;
	gic_mlx5_qp *qp[NQP], *rqp[NQP];
	gic_mlx5_mr *mr;
	gic_sq sq[NQP];
	gic_cq cq[NQP];
	uint64_t *dst, *d_dst;
	int bad;

	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	CUDA_OK(cudaFree(0)); /* a current context for the provider's CUDA calls */
	m = gic_mlx5_open(NULL, 1, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "gic-gpu-mlx5-emu: gic_mlx5_open: %s\n", err);
		return 1;
	}
	CUDA_OK(cudaHostAlloc((void **)&dst, NQP * PER * 8, cudaHostAllocMapped));
	memset(dst, 0, NQP * PER * 8);
	CUDA_OK(cudaHostGetDevicePointer((void **)&d_dst, dst, 0));
	mr = gic_mlx5_reg_mr(m, dst, NQP * PER * 8, GIC_ACCESS_LOCAL_WRITE | GIC_ACCESS_REMOTE_WRITE);
	for (int q = 0; q < NQP; q++) {
		qp[q] = mr ? make_pair(m, &rqp[q]) : NULL;
		if (!qp[q] || gic_mlx5_qp_view(qp[q], GIC_VIEW_DEVICE, &sq[q], &cq[q])) {
			fprintf(stderr, "gic-gpu-mlx5-emu: provider setup of QP %d failed: %s\n", q,
				m->base.err);
			return 1;
		}
	}
	bad = gpu_post_and_check("gic-gpu-mlx5-emu", sq, cq, dst, d_dst, mr->base.rkey);
	printf("gic-gpu-mlx5-emu: %d QPs x %d GPU-posted writes into mlx5-provider queues on the "
	       "emulated device (%s engine), %s%s%s: %s\n", NQP, PER,
	       getenv("GIC_EMU_ENGINE") && !strcmp(getenv("GIC_EMU_ENGINE"), "gpu") ? "GPU" : "CPU",
	       db_mode_name(m->db_mode),
	       m->db_reason[0] ? "; why: " : "", m->db_reason, bad ? "FAILED" : "PASSED");
	for (int q = 0; q < NQP; q++) {
		gic_mlx5_qp_destroy(qp[q]);
		gic_mlx5_qp_destroy(rqp[q]);
	}
	gic_mlx5_dereg_mr(mr);
	gic_mlx5_close(m);
	return bad ? 1 : 0;
}
