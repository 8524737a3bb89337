/*
 * bench/gic/gpu_pair.cu - `--procs 2` in GPU mode: one PE's softnic, QPs
 * and region, connected to the other PE's through softnic's GPU peers
 * (gpu_pair.h).
 */
#include "gpu_pair.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gic/softnic_gpu.h"

static int pair_fail(const gpu_pair_pe *P, const char *what, int rc)
{
	fprintf(stderr, "gic %s: PE%d: %s: %s (%s)\n", P->who, P->rank, what, strerror(rc ? rc : EIO),
		P->nic ? softnic_last_error(P->nic) : "no softnic");
	return rc ? rc : EIO;
}

/* The CUDA allocations, then the softnic (its engine starts) and its GPU
 * peer record. */
static int pair_open_nic(gpu_pair_pe *P, const gpu_pair_cfg *c)
{
	softnic_attr attr;
	softnic_gpu_attr gattr;
	int rc;

	if (cudaSetDevice(c->device) != cudaSuccess ||
	    cudaMalloc((void **)&P->region, c->region) != cudaSuccess ||
	    cudaMalloc((void **)&P->d_sq, sizeof(gic_sq) * (size_t)c->nqps) != cudaSuccess ||
	    cudaMalloc((void **)&P->d_cq, sizeof(gic_cq) * (size_t)c->nqps) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&P->stream, cudaStreamNonBlocking) != cudaSuccess) {
		fprintf(stderr, "gic %s: PE%d: CUDA: %s\n", P->who, P->rank,
			cudaGetErrorString(cudaGetLastError()));
		return ENOMEM;
	}
	if (cudaDeviceGetAttribute(&P->mps, cudaDevAttrMpsEnabled, c->device) != cudaSuccess)
		P->mps = 0;
	memset(&attr, 0, sizeof(attr));
	memset(&gattr, 0, sizeof(gattr));
	gattr.device = c->device;
	gattr.blocks = c->engine_blocks;
	gattr.warps_per_block = c->engine_warps;
	P->nic = softnic_open_gpu(&attr, &gattr);
	if (!P->nic)
		return pair_fail(P, "softnic_open_gpu", errno);
	if ((rc = softnic_gpu_peer_enable(P->nic, &P->mine.rec)))
		return pair_fail(P, "softnic_gpu_peer_enable", rc);
	return 0;
}

/* The PD, the region's MR, the QPs and their device views; mine filled. */
static int pair_open_qps(gpu_pair_pe *P, const gpu_pair_cfg *c)
{
	P->pd = softnic_pd_alloc(P->nic);
	P->mr = P->pd ? softnic_reg_mr(P->pd, P->region, c->region,
				       SOFTNIC_ACCESS_LOCAL_WRITE | SOFTNIC_ACCESS_REMOTE_WRITE) : NULL;
	if (!P->mr)
		return pair_fail(P, "the PD or the region's MR", errno);
	for (int q = 0; q < c->nqps; q++) {
		softnic_qp_attr qa;
		gic_sq sq;
		gic_cq cq;

		memset(&qa, 0, sizeof(qa));
		qa.log_sq_bb = c->log_sq_bb;
		qa.send_cq = P->cq[q] = softnic_cq_create(P->nic, c->log_sq_bb < 12 ? c->log_sq_bb : 12);
		P->qp[q] = qa.send_cq ? softnic_qp_create(P->pd, &qa) : NULL;
		if (!P->qp[q])
			return pair_fail(P, "a CQ or QP", errno);
		softnic_qp_view(P->qp[q], &sq, &cq);
		sq.cq = P->d_cq + q; /* the device copy of the CQ view */
		if (cudaMemcpy(P->d_sq + q, &sq, sizeof(sq), cudaMemcpyHostToDevice) != cudaSuccess ||
		    cudaMemcpy(P->d_cq + q, &cq, sizeof(cq), cudaMemcpyHostToDevice) != cudaSuccess)
			return pair_fail(P, "the views", EIO);
		P->mine.qpn[q] = softnic_qp_num(P->qp[q]);
	}
	P->mine.nqps = (uint32_t)c->nqps;
	P->mine.rkey = softnic_mr_rkey(P->mr);
	P->mine.region = (uint64_t)(uintptr_t)P->region;
	return 0;
}

static void pair_init(gpu_pair_pe *P, gic_pair *pair, const char *who, int nqps)
{
	memset(P, 0, sizeof(*P));
	P->who = who;
	P->rank = gic_pair_rank(pair);
	P->nqps = nqps;
	P->peer = -1;
}

int gpu_pair_open_failed(gpu_pair_pe *P, gic_pair *pair, const char *who, int rc)
{
	pair_init(P, pair, who, 0);
	/* The empty record (0 QPs) that the other PE's open refuses. */
	gic_pair_exchange(pair, &P->mine, &P->theirs, sizeof(P->mine));
	return rc ? rc : EIO;
}

int gpu_pair_open(gpu_pair_pe *P, gic_pair *pair, const char *who, const gpu_pair_cfg *c)
{
	int rc = 0;

	pair_init(P, pair, who, c->nqps);
	if (c->nqps < 1 || c->nqps > GPU_PAIR_MAX_QPS || !c->region)
		rc = pair_fail(P, "the shape", EINVAL);
	if (!rc)
		rc = pair_open_nic(P, c);
	if (!rc)
		rc = pair_open_qps(P, c);
	/* Both PEs swap even after a failure (the other's wait must end); a
	 * failed PE's record is zero, which the other's peer_add refuses. */
	gic_pair_exchange(pair, &P->mine, &P->theirs, sizeof(P->mine));
	if (!rc && P->theirs.nqps != (uint32_t)c->nqps)
		rc = pair_fail(P, "the other PE's QPs", EPROTO);
	if (!rc && (rc = softnic_gpu_peer_add(P->nic, &P->theirs.rec, &P->peer)))
		pair_fail(P, "softnic_gpu_peer_add", rc);
	for (int q = 0; q < c->nqps && !rc; q++)
		if ((rc = softnic_gpu_peer_connect(P->qp[q], P->peer, P->theirs.qpn[q])))
			pair_fail(P, "softnic_gpu_peer_connect", rc);
	return rc;
}

void gpu_pair_close(gpu_pair_pe *P)
{
	softnic_close(P->nic); /* the engine stops first: the frees below are safe */
	P->nic = NULL;
	if (P->stream)
		cudaStreamDestroy(P->stream);
	cudaFree(P->d_cq);
	cudaFree(P->d_sq);
	cudaFree(P->region);
	P->stream = NULL;
	P->d_cq = NULL;
	P->d_sq = NULL;
	P->region = NULL;
}

void gpu_pair_finish(gpu_pair_pe *P, gic_pair *pair)
{
	gpu_pair_sync(pair);
	gpu_pair_close(P);
}

int gpu_pair_wait(const gpu_pair_pe *P, const char *what, double seconds)
{
	char who[96];

	snprintf(who, sizeof(who), "gic %s: PE%d: %s", P->who, P->rank, what);
	return gpu_stream_wait(P->stream, who, seconds);
}

void gpu_pair_warn_mps(const char *who)
{
	fprintf(stderr, "gic %s: --procs 2 in GPU mode without MPS: the two processes' kernels "
		"time-slice the GPU, so the rows measure the scheduler (start "
		"nvidia-cuda-mps-control -d first)\n", who);
}

int gpu_pair_from0(gic_pair *pair, int v)
{
	int theirs = v;

	gic_pair_exchange_late(pair, &v, &theirs, sizeof(v)); /* the other's run may be long */
	return gic_pair_rank(pair) == 0 ? v : theirs;
}

void gpu_pair_sync(gic_pair *pair)
{
	(void)gpu_pair_from0(pair, 1);
}

void gpu_pair_region(const gpu_pair_pe *P, int pe, uint8_t **region, uint32_t *key)
{
	*region = pe == P->rank ? P->region : (uint8_t *)(uintptr_t)P->theirs.region;
	*key = pe == P->rank ? P->mine.rkey : P->theirs.rkey;
}

void gpu_pair_env(const gpu_pair_pe *P, gpu_env *e)
{
	memset(e, 0, sizeof(*e));
	e->cfg.gpu_engine = 1;
	e->cfg.nqps = P->nqps;
	e->cfg.provider = ENV_PROVIDER_SOFTNIC;
	e->nic = P->nic;
	for (int q = 0; q < P->nqps; q++)
		e->qp[q] = P->qp[q];
	gpu_pair_region(P, 1, &e->dst, &e->dst_rkey);
	if (P->rank == 1)
		e->dst_mr = P->mr;
	if (P->rank == 0) { /* its region the source; PE 1's the destination */
		e->src = P->region;
		e->src_mr = P->mr;
		e->src_lkey = softnic_mr_lkey(P->mr);
	}
	e->d_sq = P->d_sq;
	e->d_cq = P->d_cq;
	e->stream = e->own_stream = P->stream; /* env_copy then waits on it alone */
}
