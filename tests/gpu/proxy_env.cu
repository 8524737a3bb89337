/* proxy_env: see proxy_env.h. */
#include "proxy_env.h"

#include <errno.h>
#include <unistd.h>

static void deferred_free(void *p, void *ctx)
{
	proxy_env *e = (proxy_env *)ctx;

	if (e->nlater < PROXY_ENV_DEFER)
		e->later[e->nlater++] = p;
	else
		fprintf(stderr, "proxy_env: deferred-free list full, leaking %p\n", p);
}

static void *env_mem(const proxy_env *e, size_t len)
{
	void *p = NULL;

	if (e->cfg.nic_kind == PROXY_NIC_GPU) {
		CUDA_OK(cudaMalloc(&p, len));
		CUDA_OK(cudaMemset(p, 0, len));
	} else { /* CPU engine, mlx5 */
		CUDA_OK(cudaHostAlloc(&p, len, cudaHostAllocMapped));
		memset(p, 0, len);
	}
	return p;
}

static void env_mem_free(const proxy_env *e, void *p)
{
	if (!p)
		return;
	if (e->cfg.nic_kind == PROXY_NIC_GPU)
		cudaFree(p);
	else
		cudaFreeHost(p);
}

static softnic *env_nic(const proxy_env *e)
{
	softnic_attr na = { 0 };

	if (e->cfg.nic_kind == PROXY_NIC_GPU) {
		softnic_gpu_attr ga = { 0 };

		ga.device = 0;
		ga.blocks = 4;
		ga.warps_per_block = 4;
		ga.queues_on_host = 1; /* the workers write WQEs as to a NIC */
		return softnic_open_gpu(&na, &ga);
	}
	na.engine_threads = e->cfg.workers < 4 ? e->cfg.workers : 4;
	na.pin_engines = 1; /* engines on cores 2..5, workers from core 8 */
	na.first_cpu = 2;
	return softnic_open(&na);
}

/* Proxy k's first worker core: from core 8 (engines on 2..5, the host
 * thread elsewhere), proxy 1's workers after proxy 0's; when that passes
 * the machine's last core, packed from core 6 (T = 8 with two proxies on
 * 16 cores); -1 (unpinned, said once) when even that does not fit. */
static int env_first_cpu(const proxy_env_cfg *c, int k)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int need = c->pes * c->workers, base = 8 + need <= ncpu ? 8 : 6;

	if (base + need > ncpu) {
		if (k == 0)
			fprintf(stderr, "proxy_env: %d workers do not fit cores 6..%ld: unpinned\n",
				need, ncpu - 1);
		return -1;
	}
	return base + k * c->workers;
}

/* Proxy k: PE k's producers, writing into PE 1-k's region. */
static gic_proxy *env_proxy(proxy_env *e, int k)
{
	const proxy_env_cfg *c = &e->cfg;
	gic_proxy_attr pa;
	gic_proxy *p;

	memset(&pa, 0, sizeof(pa));
	pa.local = e->pe[k];
	pa.target = e->pe[1 - k];
	pa.workers = c->workers;
	pa.rings = c->rings;
	pa.batch = c->batch;
	pa.protocol = c->protocol;
	pa.counter_kind = c->nic_kind == PROXY_NIC_GPU ? GIC_PROXY_COUNTER_GPU : GIC_PROXY_COUNTER_HOST;
	pa.log_ring_slots = c->log_ring_slots ? c->log_ring_slots : 10;
	pa.first_cpu = env_first_cpu(c, k);
	pa.timeout_ms = 2000;
	pa.warmup_ms = c->warmup_ms;
	pa.idle_ms = c->idle_ms;
	pa.inflight = c->inflight;
	pa.dst_addr = (uint64_t)(uintptr_t)e->region[1 - k];
	pa.dst_rkey = e->region_rkey[1 - k] ^ (k == 0 && c->bad_rkey ? 0x5a00 : 0);
	pa.src_addr = (uint64_t)(uintptr_t)e->src[k];
	pa.src_lkey = e->src_lkey[k];
	pa.counters = e->counters[k];
	pa.counter_cnt = PROXY_ENV_RINGS;
	pa.counter_rkey = e->counter_rkey[k];
	pa.ring_mem = &e->mapped;
	p = gic_proxy_create(&pa);
	if (!p || gic_proxy_start(p)) {
		fprintf(stderr, "proxy_env: proxy %d: %s; %s: %s\n", k,
			p ? gic_proxy_error(p) : gic_proxy_create_error(), e->pe[k]->ops->name,
			e->nic ? softnic_last_error(e->nic) : gic_nic_error(e->pe[k]));
		gic_proxy_destroy(p);
		return NULL;
	}
	return p;
}

static int env_regions(proxy_env *e)
{
	const int atomic = SOFTNIC_ACCESS_REMOTE_ATOMIC | SOFTNIC_ACCESS_LOCAL_WRITE;

	for (int k = 0; k < 2; k++) {
		e->pd[k] = softnic_pd_alloc(e->nic);
		if (!e->pd[k])
			return 1;
		e->region_mr[k] = softnic_reg_mr(e->pd[k], e->region[k], e->cfg.region_len,
						 SOFTNIC_ACCESS_REMOTE_WRITE);
		e->src_mr[k] = softnic_reg_mr(e->pd[k], e->src[k], e->cfg.region_len,
					      SOFTNIC_ACCESS_LOCAL_WRITE);
		e->counter_mr[k] = softnic_reg_mr(e->pd[k], e->counters[k], PROXY_ENV_RINGS * 8, atomic);
		if (!e->region_mr[k] || !e->src_mr[k] || !e->counter_mr[k])
			return 1;
		e->region_rkey[k] = softnic_mr_rkey(e->region_mr[k]);
		e->src_lkey[k] = softnic_mr_lkey(e->src_mr[k]);
		e->counter_rkey[k] = softnic_mr_rkey(e->counter_mr[k]);
	}
	return 0;
}

/* PROXY_NIC_MLX5: the two PEs and their regions through the provider; 0,
 * or 1 with a message. */
static int env_mlx5(proxy_env *e)
{
#ifdef GIC_HAVE_MLX5
	static const int access[3] = { GIC_ACCESS_REMOTE_WRITE | GIC_ACCESS_LOCAL_WRITE,
				       GIC_ACCESS_LOCAL_WRITE,
				       GIC_ACCESS_REMOTE_ATOMIC | GIC_ACCESS_LOCAL_WRITE };
	gic_nic_attr a;
	char err[GIC_NIC_ERR_LEN] = "";

	memset(&a, 0, sizeof(a));
	a.device = e->cfg.nic;
	a.queues = GIC_QUEUES_HOST;
	for (int k = 0; k < 2; k++) {
		void *addr[3] = { e->region[k], e->src[k], e->counters[k] };
		size_t len[3] = { e->cfg.region_len, e->cfg.region_len, PROXY_ENV_RINGS * 8 };

		errno = 0;
		if (!(e->pe[k] = gic_nic_open(&gic_provider_mlx5, &a, err, sizeof(err)))) {
			fprintf(stderr, "proxy_env: mlx5 provider: %s\n", err[0] ? err : strerror(errno));
			return 1;
		}
		for (int r = 0; r < 3; r++)
			if (!(e->p_mr[k][r] = gic_nic_reg_mr(e->pe[k], addr[r], len[r], access[r]))) {
				fprintf(stderr, "proxy_env: mlx5 provider: register: %s\n",
					gic_nic_error(e->pe[k]));
				return 1;
			}
		e->region_rkey[k] = e->p_mr[k][0]->rkey;
		e->src_lkey[k] = e->p_mr[k][1]->lkey;
		e->counter_rkey[k] = e->p_mr[k][2]->rkey;
	}
	return 0;
#else
	(void)e;
	fprintf(stderr, "proxy_env: PROXY_NIC_MLX5: this program was built without the mlx5 "
		"provider\n");
	return 1;
#endif
}

/* Creates and starts the proxies, then uploads their ring views. */
static int env_proxies(proxy_env *e, gic_proxy_ring *views)
{
	const proxy_env_cfg *cfg = &e->cfg;

	for (int k = 0; k < cfg->pes; k++) {
		e->proxy[k] = env_proxy(e, k);
		if (!e->proxy[k])
			return 1;
		for (int r = 0; r < cfg->rings; r++)
			gic_proxy_ring_view(e->proxy[k], r, &views[r]);
		if (proxy_env_write(e, e->d_views[k], views, sizeof(gic_proxy_ring) * cfg->rings))
			return 1;
	}
	return 0;
}

int proxy_env_open(proxy_env *e, const proxy_env_cfg *cfg)
{
	gic_proxy_ring views[PROXY_ENV_RINGS];

	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	e->mapped.alloc = gpu_mapped_alloc;
	e->mapped.free = deferred_free;
	e->mapped.ctx = e;
	/* Every CUDA allocation before the engine starts (docs/DESIGN.md §4.5). */
	for (int k = 0; k < 2; k++) {
		e->region[k] = (uint64_t *)env_mem(e, cfg->region_len);
		e->src[k] = (uint64_t *)env_mem(e, cfg->region_len);
		e->counters[k] = (uint64_t *)env_mem(e, PROXY_ENV_RINGS * 8);
		CUDA_OK(cudaMalloc(&e->d_views[k], sizeof(views)));
	}
	CUDA_OK(cudaHostAlloc((void **)&e->scratch, 256 * sizeof(gic_proxy_desc), cudaHostAllocMapped));
	CUDA_OK(cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking));
	if (cfg->nic_kind == PROXY_NIC_MLX5) {
		CUDA_OK(cudaFree(0)); /* a current context for the provider's CUDA calls */
		if (env_mlx5(e))
			return 1;
		return env_proxies(e, views);
	}
	e->nic = env_nic(e);
	if (!e->nic) {
		fprintf(stderr, "proxy_env: softnic: %s\n", strerror(errno));
		return 1;
	}
	if (env_regions(e)) {
		fprintf(stderr, "proxy_env: regions: %s\n", softnic_last_error(e->nic));
		return 1;
	}
	e->pe[0] = gic_softnic_pe_wrap(e->nic, e->pd[0], NULL);
	e->pe[1] = e->pe[0] ? gic_softnic_pe_wrap(e->nic, e->pd[1], e->pe[0]) : NULL;
	if (!e->pe[1]) {
		fprintf(stderr, "proxy_env: provider PEs: %s\n", strerror(errno));
		return 1;
	}
	return env_proxies(e, views);
}

void proxy_env_close(proxy_env *e)
{
	for (int k = 0; k < 2; k++)
		gic_proxy_destroy(e->proxy[k]);
	for (int k = 1; k >= 0; k--) {
		for (int r = 0; r < 3; r++)
			gic_nic_dereg_mr(e->p_mr[k][r]);
		gic_nic_close(e->pe[k]);
	}
	if (e->nic)
		softnic_close(e->nic); /* stops the engine: frees may wait for the device now */
	for (int i = 0; i < e->nlater; i++)
		gpu_mapped_free(e->later[i], NULL);
	for (int k = 0; k < 2; k++) {
		env_mem_free(e, e->region[k]);
		env_mem_free(e, e->src[k]);
		env_mem_free(e, e->counters[k]);
		cudaFree(e->d_views[k]);
	}
	cudaFreeHost(e->scratch);
	if (e->stream)
		cudaStreamDestroy(e->stream);
	memset(e, 0, sizeof(*e));
}

int proxy_env_wait(proxy_env *e, const char *what, double seconds)
{
	int rc = gpu_stream_wait(e->stream, what, seconds);

	if (rc == ETIMEDOUT)
		fprintf(stderr, "%s: the proxies say: %s | %s\n", what,
			e->proxy[0] ? gic_proxy_error(e->proxy[0]) : "",
			e->proxy[1] ? gic_proxy_error(e->proxy[1]) : "");
	return rc != 0;
}

static int env_copy(proxy_env *e, void *to, const void *from, size_t n)
{
	cudaError_t rc = cudaMemcpyAsync(to, from, n, cudaMemcpyDefault, e->stream);

	if (rc == cudaSuccess)
		rc = cudaStreamSynchronize(e->stream);
	if (rc != cudaSuccess)
		fprintf(stderr, "proxy_env: copy of %zu bytes: %s\n", n, cudaGetErrorString(rc));
	return rc != cudaSuccess;
}

int proxy_env_read(proxy_env *e, void *host, const void *from, size_t n)
{
	return env_copy(e, host, from, n);
}

int proxy_env_write(proxy_env *e, void *to, const void *host, size_t n)
{
	return env_copy(e, to, host, n);
}
