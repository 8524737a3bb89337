/* gpu_env: see gpu_env.h. */
#include "gpu_env.h"

void *gpu_mapped_alloc(size_t size, size_t align, void *ctx)
{
	void *p = NULL;

	(void)align; /* cudaHostAlloc returns page-aligned memory */
	(void)ctx;
	if (cudaHostAlloc(&p, size, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
		return NULL;
	memset(p, 0, size);
	return p;
}

void gpu_mapped_free(void *p, void *ctx)
{
	(void)ctx;
	cudaFreeHost(p);
}

static void fail(gpu_env *e, const char *what)
{
	fprintf(stderr, "gpu_env: %s: %s\n", what, e->nic ? softnic_last_error(e->nic) : "");
	exit(1);
}

/* PE1 on GPU 1: its region lives there and GPU 0 (submitters, engine)
 * reaches it through peer access, as a NIC reaches a peer's memory. */
static uint8_t *peer_region_alloc(size_t n)
{
	void *p = NULL;
	int count = 0, can = 0;

	CUDA_OK(cudaGetDeviceCount(&count));
	if (count < 2 || cudaDeviceCanAccessPeer(&can, 0, 1) != cudaSuccess || !can) {
		fprintf(stderr, "gpu_env: peer_gpu needs two GPUs with peer access\n");
		exit(1);
	}
	CUDA_OK(cudaSetDevice(1));
	CUDA_OK(cudaMalloc(&p, n));
	CUDA_OK(cudaMemset(p, 0, n));
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaSetDevice(0));
	if (cudaDeviceEnablePeerAccess(1, 0) == cudaErrorPeerAccessAlreadyEnabled)
		cudaGetLastError(); /* enabled by an earlier env: fine */
	return (uint8_t *)p;
}

static uint8_t *region_alloc(gpu_env *e, size_t n)
{
	void *p = NULL;

	if (e->cfg.gpu_engine)
		CUDA_OK(cudaMalloc(&p, n));
	else
		CUDA_OK(cudaHostAlloc(&p, n, cudaHostAllocMapped));
	CUDA_OK(cudaMemsetAsync(p, 0, n, e->stream));
	CUDA_OK(cudaStreamSynchronize(e->stream));
	return (uint8_t *)p;
}

/* QP q's doorbell word in host_db (cfg.host_doorbells): a 64-byte line
 * each, so that the ringer's stores do not share one; NULL without it. */
static uint64_t *host_db_line(const gpu_env *e, int q)
{
	return e->host_db ? e->host_db + (size_t)q * 8 : NULL;
}

static void open_nic(gpu_env *e)
{
	softnic_attr na = { 0 };

	na.strict = e->cfg.strict;
	if (e->cfg.gpu_engine) {
		softnic_gpu_attr ga = { 0, e->cfg.engine_blocks ? e->cfg.engine_blocks : 4,
					e->cfg.engine_warps ? e->cfg.engine_warps : 4, 0, 0,
					e->cfg.arena_bytes, e->cfg.host_doorbells };

		ga.engine_sms = e->cfg.engine_sms;
		ga.batch_wqes = e->cfg.engine_batch;
		e->nic = softnic_open_gpu(&na, &ga);
		if (e->nic) {
			cudaStream_t callers = (cudaStream_t)softnic_gpu_caller_stream(e->nic);

			softnic_gpu_placement_get(e->nic, &e->placement);
			e->batch_wqes = softnic_gpu_batch_wqes(e->nic);
			if (callers)
				e->stream = callers;
		}
	} else {
		e->host_alloc.alloc = gpu_mapped_alloc;
		e->host_alloc.free = gpu_mapped_free;
		na.engine_threads = 1;
		na.queue_mem = &e->host_alloc;
		e->nic = softnic_open(&na);
	}
	if (!e->nic)
		fail(e, "softnic_open");
}

/* Creates and connects the QP pairs and uploads their views. PE0's QPs
 * are created first, so they fill the first slots of the engine's QP
 * table (a GPU engine's warp w serves slots w, w + W, ...). */
static void open_qps(gpu_env *e)
{
	static gic_sq sq[ENV_MAX_QPS], psq[ENV_MAX_QPS];
	static gic_cq cq[ENV_MAX_QPS], pcq[ENV_MAX_QPS];
	gic_cq rcq;
	int n = e->cfg.nqps;

	e->rcq = softnic_cq_create(e->nic, 12);
	for (int i = 0; i < n; i++) {
		int log_bb = e->cfg.small_ring_qp1 && i == 1 ? 4 : e->cfg.log_sq_bb;
		/* A CQE slot for every BB, up to 4096 (plenty when WQEs are
		 * signaled every 16 at most). */
		softnic_qp_attr qa = { log_bb, softnic_cq_create(e->nic, log_bb < 12 ? log_bb : 12),
				       NULL };

		if (e->host_db) { /* a line each: the ringer's stores do not share one */
			qa.db_mem.addr = host_db_line(e, i);
			qa.db_mem.len = 64;
		}
		e->qp[i] = softnic_qp_create(e->pd[0], &qa);
		if (!e->qp[i])
			fail(e, "qp");
	}
	for (int i = 0; i < n; i++) {
		softnic_qp_attr qa = { 4, softnic_cq_create(e->nic, 4), e->rcq };

		e->peer[i] = softnic_qp_create(e->pd[1], &qa);
		if (!e->peer[i] || softnic_qp_connect(e->qp[i], e->peer[i]))
			fail(e, "peer qp");
		softnic_qp_view(e->qp[i], &sq[i], &cq[i]);
		sq[i].cq = &e->d_cq[i]; /* the device copy of the CQ view */
		softnic_qp_view(e->peer[i], &psq[i], &pcq[i]);
		psq[i].cq = &e->d_peer_cq[i];
	}
	softnic_cq_view(e->rcq, &rcq);
	CUDA_OK(cudaMemcpy(e->d_sq, sq, sizeof(gic_sq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_cq, cq, sizeof(gic_cq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_peer_sq, psq, sizeof(gic_sq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_peer_cq, pcq, sizeof(gic_cq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_rcq, &rcq, sizeof(gic_cq), cudaMemcpyHostToDevice));
}

/* cfg.dc: a DCI and a DCT per PE, after every RC QP; the DCIs' views
 * uploaded. */
static void open_dc(gpu_env *e)
{
	static const uint8_t zero[16] = { 0 };
	gic_sq sq[2];
	gic_cq cq[2];

	e->dc_rcq = softnic_cq_create(e->nic, 4);
	for (int pe = 0; pe < 2; pe++) {
		softnic_srq_attr sa = { 1, 1 }; /* log_wqe_cnt, max_sge: writes take no receive */
		softnic_qp_attr da, ta;

		memset(&da, 0, sizeof(da));
		memset(&ta, 0, sizeof(ta));
		da.log_sq_bb = e->cfg.log_sq_bb;
		da.send_cq = softnic_cq_create(e->nic, e->cfg.log_sq_bb < 12 ? e->cfg.log_sq_bb : 12);
		da.flags = SOFTNIC_QP_DCI;
		e->dct_srq[pe] = softnic_srq_create(e->pd[pe], &sa);
		ta.log_sq_bb = 1;
		ta.recv_cq = e->dc_rcq;
		ta.srq = e->dct_srq[pe];
		ta.flags = SOFTNIC_QP_DCT;
		ta.dc_key = ENV_DC_KEY;
		if (!e->dc_rcq || !da.send_cq || !e->dct_srq[pe])
			fail(e, "dc queues");
		e->dci[pe] = softnic_qp_create(e->pd[pe], &da);
		e->dct[pe] = softnic_qp_create(e->pd[pe], &ta);
		if (!e->dci[pe] || !e->dct[pe])
			fail(e, "dc qp");
		e->dctn[pe] = softnic_qp_num(e->dct[pe]);
		gic_set_av_compact(&e->dc_av[pe][0], ENV_DC_KEY, e->dctn[pe], 0, 0);
		gic_set_av_full(&e->dc_av[pe][1], ENV_DC_KEY, e->dctn[pe], 0, 0, zero, 0, 64, 0, zero);
		softnic_qp_view(e->dci[pe], &sq[pe], &cq[pe]);
		sq[pe].cq = &e->d_dci_cq[pe]; /* the device copy of the CQ view */
	}
	CUDA_OK(cudaMemcpy(e->d_dci_sq, sq, sizeof(sq), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_dci_cq, cq, sizeof(cq), cudaMemcpyHostToDevice));
}

/* ------------------------------------------------------------------ */
/* The mlx5 provider (cfg.provider ENV_PROVIDER_MLX5). */

#ifdef GIC_HAVE_MLX5
static void pfail(gpu_env *e, int pe, const char *what)
{
	fprintf(stderr, "gpu_env: mlx5 provider: %s: %s (PE%d: %s)\n", what, strerror(errno), pe,
		e->pe_nic[pe] ? gic_nic_error(e->pe_nic[pe]) : "not open");
	exit(1);
}

/* A CQ of 2^log_cqe CQEs on PE pe and an RC QP of 2^log_bb BBs on it. */
static void p_qp_make(gpu_env *e, int pe, int log_bb, int log_cqe, gic_nic_cq **cq,
		      gic_nic_qp **qp)
{
	gic_qp_attr qa = { NULL, log_bb, GIC_QP_RC };

	errno = 0;
	*cq = gic_nic_cq_create(e->pe_nic[pe], log_cqe);
	qa.send_cq = *cq;
	*qp = *cq ? gic_nic_qp_create(e->pe_nic[pe], &qa) : NULL;
	if (!*qp)
		pfail(e, pe, "create a QP");
}

/* Connects PE0's QP i to PE1's and makes both device views. */
static void p_connect(gpu_env *e, int i, gic_sq *sq, gic_cq *cq, gic_sq *psq, gic_cq *pcq)
{
	gic_conn_info a, b;

	if ((errno = gic_nic_qp_local(e->p_qp[i], &a)) ||
	    (errno = gic_nic_qp_local(e->p_peer[i], &b)) ||
	    (errno = gic_nic_qp_connect(e->p_qp[i], &a, &b)) ||
	    (errno = gic_nic_qp_connect(e->p_peer[i], &b, &a)))
		pfail(e, 0, "connect a QP pair");
	if ((errno = gic_nic_qp_view(e->p_qp[i], GIC_VIEW_DEVICE, sq, cq)))
		pfail(e, 0, "device view of a QP");
	if ((errno = gic_nic_qp_view(e->p_peer[i], GIC_VIEW_DEVICE, psq, pcq)))
		pfail(e, 1, "device view of a peer QP");
}

#endif

static void open_mlx5(gpu_env *e)
{
#ifdef GIC_HAVE_MLX5
	static gic_sq sq[ENV_MAX_QPS], psq[ENV_MAX_QPS];
	static gic_cq cq[ENV_MAX_QPS], pcq[ENV_MAX_QPS];
	gic_nic_attr a;
	char err[GIC_NIC_ERR_LEN] = "";
	uint8_t *region[4] = { e->dst, e->src, e->res, e->back };
	static const int access[4] = { GIC_ACCESS_REMOTE_WRITE | GIC_ACCESS_REMOTE_ATOMIC |
					       GIC_ACCESS_REMOTE_READ | GIC_ACCESS_LOCAL_WRITE,
				       GIC_ACCESS_LOCAL_WRITE, GIC_ACCESS_LOCAL_WRITE,
				       GIC_ACCESS_REMOTE_WRITE | GIC_ACCESS_LOCAL_WRITE };
	int n = e->cfg.nqps, pe_of[4] = { 1, 0, 0, 0 };
	gic_cq empty;

	memset(&a, 0, sizeof(a));
	a.device = e->cfg.nic;
	a.queues = GIC_QUEUES_HOST;
	CUDA_OK(cudaFree(0)); /* a current context for the provider's CUDA mappings */
	for (int pe = 0; pe < 2; pe++) {
		errno = 0;
		e->pe_nic[pe] = gic_nic_open(&gic_provider_mlx5, &a, err, sizeof(err));
		if (!e->pe_nic[pe]) {
			fprintf(stderr, "gpu_env: mlx5 provider: %s\n", err[0] ? err : strerror(errno));
			exit(1);
		}
	}
	snprintf(e->nic_desc, sizeof(e->nic_desc), "%s", gic_nic_describe(e->pe_nic[0]));
	for (int r = 0; r < 4; r++)
		if (!(e->p_mr[r] = gic_nic_reg_mr(e->pe_nic[pe_of[r]], region[r], e->cfg.region,
						   access[r])))
			pfail(e, pe_of[r], "register a region");
	e->dst_rkey = e->p_mr[0]->rkey;
	e->src_lkey = e->p_mr[1]->lkey;
	e->res_lkey = e->p_mr[2]->lkey;
	e->back_rkey = e->p_mr[3]->rkey;
	for (int i = 0; i < n; i++) {
		int log_bb = e->cfg.small_ring_qp1 && i == 1 ? 4 : e->cfg.log_sq_bb;

		p_qp_make(e, 0, log_bb, log_bb < 12 ? log_bb : 12, &e->p_cq[i], &e->p_qp[i]);
	}
	for (int i = 0; i < n; i++) {
		p_qp_make(e, 1, 4, 4, &e->p_peer_cq[i], &e->p_peer[i]);
		p_connect(e, i, &sq[i], &cq[i], &psq[i], &pcq[i]);
		sq[i].cq = &e->d_cq[i]; /* the device copies of the CQ views */
		psq[i].cq = &e->d_peer_cq[i];
	}
	memset(&empty, 0, sizeof(empty));
	CUDA_OK(cudaMemcpy(e->d_sq, sq, sizeof(gic_sq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_cq, cq, sizeof(gic_cq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_peer_sq, psq, sizeof(gic_sq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_peer_cq, pcq, sizeof(gic_cq) * n, cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_rcq, &empty, sizeof(gic_cq), cudaMemcpyHostToDevice));
#else
	(void)e;
	fprintf(stderr, "gpu_env: --provider mlx5: this program was built without the mlx5 "
		"provider (rdma-core's libibverbs, libmlx5 and infiniband/mlx5dv.h were not found "
		"at build time)\n");
	exit(1);
#endif
}

/* cfg.dc on mlx5: a DCI and a DCT per PE through the provider, the DCIs'
 * device views, and the AVs each DCI uses for the other PE's DCT. */
static void open_mlx5_dc(gpu_env *e)
{
#ifdef GIC_HAVE_MLX5
	int log_bb = e->cfg.log_sq_bb;
	gic_sq sq[2];
	gic_cq cq[2];

	for (int pe = 0; pe < 2; pe++) {
		gic_qp_attr da = { NULL, log_bb, GIC_QP_DCI }, ta = { NULL, 1, GIC_QP_DCT };

		errno = 0;
		e->p_dc_cq[pe][0] = gic_nic_cq_create(e->pe_nic[pe], log_bb < 12 ? log_bb : 12);
		e->p_dc_cq[pe][1] = gic_nic_cq_create(e->pe_nic[pe], 4);
		da.send_cq = e->p_dc_cq[pe][0];
		ta.send_cq = e->p_dc_cq[pe][1];
		e->p_dci[pe] = da.send_cq ? gic_nic_qp_create(e->pe_nic[pe], &da) : NULL;
		e->p_dct[pe] = ta.send_cq ? gic_nic_qp_create(e->pe_nic[pe], &ta) : NULL;
		if (!e->p_dci[pe] || !e->p_dct[pe])
			pfail(e, pe, "create a DCI or DCT");
		if ((errno = gic_nic_qp_view(e->p_dci[pe], GIC_VIEW_DEVICE, &sq[pe], &cq[pe])))
			pfail(e, pe, "device view of a DCI");
		sq[pe].cq = &e->d_dci_cq[pe];
		e->dctn[pe] = e->p_dct[pe]->qpn;
	}
	for (int t = 0; t < 2; t++) {
		gic_conn_info rec;

		if ((errno = gic_nic_qp_local(e->p_dct[t], &rec)))
			pfail(e, t, "the DCT's record");
		for (int full = 0; full < 2; full++)
			e->dc_av_rc[t][full] = gic_nic_dc_av(e->pe_nic[1 - t], &rec, full,
							     &e->dc_av[t][full]);
		if (e->dc_av_rc[t][1]) {
			errno = e->dc_av_rc[t][1];
			pfail(e, 1 - t, "the full address vector of a DCT");
		}
	}
	CUDA_OK(cudaMemcpy(e->d_dci_sq, sq, sizeof(sq), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_dci_cq, cq, sizeof(cq), cudaMemcpyHostToDevice));
#else
	(void)e;
#endif
}

static void close_mlx5(gpu_env *e)
{
	for (int pe = 0; pe < 2; pe++) {
		gic_nic_qp_destroy(e->p_dci[pe]);
		gic_nic_qp_destroy(e->p_dct[pe]);
		gic_nic_cq_destroy(e->p_dc_cq[pe][0]);
		gic_nic_cq_destroy(e->p_dc_cq[pe][1]);
	}
	for (int i = 0; i < e->cfg.nqps; i++) {
		gic_nic_qp_destroy(e->p_qp[i]);
		gic_nic_qp_destroy(e->p_peer[i]);
		gic_nic_cq_destroy(e->p_cq[i]);
		gic_nic_cq_destroy(e->p_peer_cq[i]);
	}
	for (int r = 0; r < 4; r++)
		gic_nic_dereg_mr(e->p_mr[r]);
	gic_nic_close(e->pe_nic[1]);
	gic_nic_close(e->pe_nic[0]);
}

const char *gpu_env_qp_error(const gpu_env *e, int qp)
{
	static __thread char text[GIC_NIC_ERR_LEN + 96];

	gic_nic_qp *q;

	if (e->cfg.provider != ENV_PROVIDER_MLX5)
		return softnic_qp_error(qp == ENV_QP_DCI0 ? e->dci[0] : e->qp[qp]);
	q = qp == ENV_QP_DCI0 ? e->p_dci[0] : e->p_qp[qp];
	if (gic_nic_qp_error(q)[0])
		return gic_nic_qp_error(q);
	snprintf(text, sizeof(text), "the mlx5 device keeps no account beyond the CQE's syndrome; "
		 "the provider's latest message: %.400s", gic_nic_error(e->pe_nic[0]));
	return text;
}

uint64_t *gpu_env_host_doorbell(const gpu_env *e, int q)
{
	gic_sq sq;
	gic_cq cq;

	if (q < 0 || q >= e->cfg.nqps)
		return NULL;
	if (e->cfg.provider != ENV_PROVIDER_MLX5)
		return host_db_line(e, q);
	if (gic_nic_qp_view(e->p_qp[q], GIC_VIEW_HOST, &sq, &cq)) {
		fprintf(stderr, "gpu_env: QP %d: no host view of its doorbell: %s\n", q,
			gic_nic_error(e->pe_nic[0]));
		return NULL;
	}
	return sq.db;
}

/* ------------------------------------------------------------------ */

void gpu_env_open(gpu_env *e, const gpu_env_cfg *cfg)
{
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	if (cfg->nqps < 1 || cfg->nqps > ENV_MAX_QPS)
		fail(e, "nqps");
	if ((cfg->engine_sms || cfg->engine_batch) &&
	    (!cfg->gpu_engine || cfg->provider == ENV_PROVIDER_MLX5)) {
		fprintf(stderr, "gpu_env: engine_sms %d, engine_batch %d shape softnic's GPU engine: "
			"not with %s\n", cfg->engine_sms, cfg->engine_batch,
			cfg->gpu_engine ? "the mlx5 provider" : "the CPU engine");
		exit(1);
	}
	if (cfg->provider == ENV_PROVIDER_MLX5 && (cfg->gpu_engine || cfg->strict || cfg->peer_gpu)) {
		fprintf(stderr, "gpu_env: mlx5 provider: softnic's options (its GPU engine, strict "
			"mode, a peer GPU) do not apply; the device's own engine serves the "
			"queues\n");
		exit(1);
	}
	CUDA_OK(cudaStreamCreateWithFlags(&e->own_stream, cudaStreamNonBlocking));
	e->stream = e->own_stream;
	CUDA_OK(cudaMalloc(&e->d_sq, sizeof(gic_sq) * cfg->nqps));
	CUDA_OK(cudaMalloc(&e->d_cq, sizeof(gic_cq) * cfg->nqps));
	CUDA_OK(cudaMalloc(&e->d_rcq, sizeof(gic_cq)));
	CUDA_OK(cudaMalloc(&e->d_peer_sq, sizeof(gic_sq) * cfg->nqps));
	CUDA_OK(cudaMalloc(&e->d_peer_cq, sizeof(gic_cq) * cfg->nqps));
	if (cfg->dc) {
		CUDA_OK(cudaMalloc(&e->d_dci_sq, sizeof(gic_sq) * 2));
		CUDA_OK(cudaMalloc(&e->d_dci_cq, sizeof(gic_cq) * 2));
	}
	e->dst = cfg->peer_gpu ? peer_region_alloc(cfg->region) : region_alloc(e, cfg->region);
	e->src = region_alloc(e, cfg->region);
	e->res = region_alloc(e, cfg->region);
	e->back = region_alloc(e, cfg->region);
	if (cfg->host_doorbells && cfg->provider != ENV_PROVIDER_MLX5 &&
	    !(e->host_db = (uint64_t *)gpu_mapped_alloc((size_t)cfg->nqps * 64, 64, NULL)))
		fail(e, "host doorbells");
	if (cfg->provider == ENV_PROVIDER_MLX5) {
		open_mlx5(e);
		if (cfg->dc)
			open_mlx5_dc(e);
		return;
	}
	open_nic(e);
	snprintf(e->nic_desc, sizeof(e->nic_desc), "softnic (%s engine)",
		 cfg->gpu_engine ? "GPU" : "CPU");
	e->pd[0] = softnic_pd_alloc(e->nic);
	e->pd[1] = softnic_pd_alloc(e->nic);
	e->dst_mr = softnic_reg_mr(e->pd[1], e->dst, cfg->region,
				   SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_ATOMIC |
					   SOFTNIC_ACCESS_REMOTE_READ);
	e->src_mr = softnic_reg_mr(e->pd[0], e->src, cfg->region, 0);
	e->res_mr = softnic_reg_mr(e->pd[0], e->res, cfg->region, SOFTNIC_ACCESS_LOCAL_WRITE);
	e->back_mr = softnic_reg_mr(e->pd[0], e->back, cfg->region, SOFTNIC_ACCESS_REMOTE_WRITE);
	if (!e->dst_mr || !e->src_mr || !e->res_mr || !e->back_mr)
		fail(e, "reg_mr");
	e->dst_rkey = softnic_mr_rkey(e->dst_mr);
	e->src_lkey = softnic_mr_lkey(e->src_mr);
	e->res_lkey = softnic_mr_lkey(e->res_mr);
	e->back_rkey = softnic_mr_rkey(e->back_mr);
	open_qps(e);
	if (cfg->dc)
		open_dc(e);
}

void gpu_env_close(gpu_env *e)
{
	if (e->stream != e->own_stream) { /* the callers' stream goes with the softnic */
		gpu_env_wait(e, "gpu_env close", 10);
		e->stream = e->own_stream;
	}
	if (e->cfg.provider == ENV_PROVIDER_MLX5)
		close_mlx5(e);
	else
		softnic_close(e->nic);
	cudaStreamSynchronize(e->stream);
	if (e->cfg.gpu_engine) {
		cudaFree(e->dst);
		cudaFree(e->src);
		cudaFree(e->res);
		cudaFree(e->back);
	} else {
		cudaFreeHost(e->dst);
		cudaFreeHost(e->src);
		cudaFreeHost(e->res);
		cudaFreeHost(e->back);
	}
	if (e->host_db)
		gpu_mapped_free(e->host_db, NULL);
	cudaFree(e->d_sq);
	cudaFree(e->d_cq);
	cudaFree(e->d_peer_sq);
	cudaFree(e->d_peer_cq);
	cudaFree(e->d_rcq);
	cudaFree(e->d_dci_sq); /* NULL without cfg.dc */
	cudaFree(e->d_dci_cq);
	cudaStreamDestroy(e->stream);
}

int gpu_stream_wait(cudaStream_t s, const char *what, double seconds)
{
	uint64_t deadline = gic_now_ns() + (uint64_t)(seconds * 1e9);
	cudaError_t rc;

	while ((rc = cudaStreamQuery(s)) == cudaErrorNotReady) {
		if (gic_now_ns() > deadline) {
			fprintf(stderr, "%s: GPU work did not finish within %.0f s\n", what, seconds);
			return ETIMEDOUT;
		}
		gic_cpu_relax();
	}
	if (rc != cudaSuccess) {
		fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(rc));
		return EIO;
	}
	return 0;
}

int gpu_env_wait(gpu_env *e, const char *what, double seconds)
{
	return gpu_stream_wait(e->stream, what, seconds);
}

/* Copies go on the env's own stream (the primary context, current to this
 * thread): a driver copy on a green context's stream is checked against
 * the current context. With the callers' stream in use, its work is
 * waited for first, so that the copy still follows it. */
static int env_copy(gpu_env *e, void *to, const void *from, size_t n, const char *what)
{
	int rc = e->stream != e->own_stream ? gpu_stream_wait(e->stream, what, 10) : 0;

	if (rc)
		return rc;
	CUDA_OK(cudaMemcpyAsync(to, from, n, cudaMemcpyDefault, e->own_stream));
	return gpu_stream_wait(e->own_stream, what, 10);
}

int gpu_env_read(gpu_env *e, void *host, const void *region, size_t n)
{
	return env_copy(e, host, region, n, "read back");
}

int gpu_env_write(gpu_env *e, void *region, const void *host, size_t n)
{
	return env_copy(e, region, host, n, "write");
}

static __global__ void sm_clock_kernel(double *mhz)
{
	unsigned long long t0 = gic_now_ns();
	long long c0 = clock64();

	while (gic_now_ns() - t0 < 20000000ull)
		;
	*mhz = (double)(clock64() - c0) / (double)(gic_now_ns() - t0) * 1e3;
}

double gpu_sm_clock_mhz(cudaStream_t stream)
{
	double *d, mhz = 0;

	CUDA_OK(cudaMalloc(&d, sizeof(double)));
	sm_clock_kernel<<<1, 1, 0, stream>>>(d);
	CUDA_OK(cudaMemcpyAsync(&mhz, d, sizeof(double), cudaMemcpyDeviceToHost, stream));
	CUDA_OK(cudaStreamSynchronize(stream));
	cudaFree(d);
	return mhz;
}
