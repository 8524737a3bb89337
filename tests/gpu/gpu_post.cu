/*
 * gpu_post: one GPU thread posts 8-byte inline RDMA writes through
 * gic/post.h into softnic's CPU engine, for every ordering variant of the
 * paper's Table 4, and measures issue and put+completion time per write.
 *
 * Queues (send queue, doorbell record, doorbell word, CQ) live in pinned
 * host memory mapped into the GPU: the CPU engine must reach them. This is
 * the paper's "queues in host memory" placement, not its default (queues in
 * GPU memory with an MMIO doorbell), so issue times here include posted
 * PCIe stores. A floor kernel makes the same stores (48-byte WQE, doorbell
 * record, doorbell, same fences) with no queue logic, in the same run.
 *
 * Every write carries a distinct value to a distinct slot; all slots are
 * validated after each variant, and a mismatch fails the run (exit 1).
 * Prints "N passed, N failed" last.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "stats.h"
}
#include "gic/softnic.h"

#define CUDA_OK(call)                                                               \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorString(e_));                            \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

enum { ITERS = 2000, WARMUP = 200, DEADLINE_NS = 2000000000 };

static const char *const order_names[GIC_ORDER_COUNT] = {
	"none (unsafe)", "gpu-scope fence", "gpu-scope fence + fenced dbrec",
	"gpu-scope release store", "__threadfence()", "system-scope release store",
	"system-scope fence",
};

/* Per-write timings the kernel records (cycles and ns). */
typedef struct sample {
	long long issue_cycles;
	unsigned long long issue_ns, putc_ns;
	int rc;
} sample;

static __device__ __forceinline__ long long sm_cycles(void)
{
	return clock64();
}

/* One thread: reserve, build, ring (issue); then wait for the CQE. The
 * queue view is copied into locals so that its state lives in registers. */
#define POST_KERNEL(ORDER)                                                           \
	__global__ void post_kernel_##ORDER(gic_sq *g_sq, uint64_t *dst, uint32_t rkey, \
					    int n, sample *out)                     \
	{                                                                            \
		gic_sq lsq;                                                          \
		gic_cq lcq;                                                          \
		gic_sq *sq = &lsq;                                                   \
		gic_sq_local_begin(&lsq, &lcq, g_sq);                                \
		for (int i = 0; i < n; i++) {                                        \
			uint64_t v = 0x5eed000000000000ull + (uint64_t)i, pos;       \
			unsigned long long t0 = gic_now_ns();                        \
			long long c0 = sm_cycles();                                  \
			int rc = gic_sq_reserve_excl(sq, 1, &pos, ORDER,             \
						     t0 + DEADLINE_NS);              \
			if (!rc) {                                                   \
				gic_wqe_write_inline(sq, pos, (uint64_t)&dst[i], rkey, \
						     &v, 8, GIC_CTRL_CQ_UPDATE);     \
				gic_sq_note_signaled(sq, pos + 1, 0);                \
				gic_sq_publish_excl(sq, ORDER);                      \
			}                                                            \
			long long c1 = sm_cycles();                                  \
			unsigned long long t1 = gic_now_ns();                        \
			if (!rc)                                                     \
				rc = gic_sq_wait_retired(sq, sq->ready, 0, ORDER,     \
							 t1 + DEADLINE_NS);          \
			out[i].issue_cycles = c1 - c0;                               \
			out[i].issue_ns = t1 - t0;                                   \
			out[i].putc_ns = gic_now_ns() - t0;                          \
			out[i].rc = rc;                                              \
			if (rc)                                                      \
				break;                                               \
		}                                                                    \
		gic_sq_local_end(g_sq, &lsq);                                        \
	}

/* The same stores as one post, with no reservation, index or CQ logic:
 * the floor an issue time can approach. Writes into a scratch ring. */
#define FLOOR_KERNEL(ORDER)                                                          \
	__global__ void floor_kernel_##ORDER(gic_sq *scratch, int n, sample *out)     \
	{                                                                            \
		for (int i = 0; i < n; i++) {                                        \
			uint4 seg = make_uint4(i, 1, 2, 3);                          \
			uint8_t *w = scratch->wqes + (i & (scratch->bb_cnt - 1)) * 64; \
			long long c0 = sm_cycles();                                  \
			unsigned long long t0 = gic_now_ns();                        \
			gic_st_seg16(w, &seg);                                       \
			gic_st_seg16(w + 16, &seg);                                  \
			gic_st_seg16(w + 32, &seg);                                  \
			gic_sq_ring(scratch, (uint64_t)i + 1, ORDER);                \
			long long c1 = sm_cycles();                                  \
			out[i].issue_cycles = c1 - c0;                               \
			out[i].issue_ns = gic_now_ns() - t0;                         \
			out[i].putc_ns = 0;                                          \
			out[i].rc = 0;                                               \
		}                                                            \
	}

#define STAMP(ORDER) POST_KERNEL(ORDER) FLOOR_KERNEL(ORDER)
STAMP(0) STAMP(1) STAMP(2) STAMP(3) STAMP(4) STAMP(5) STAMP(6)

typedef void (*post_fn)(gic_sq *, uint64_t *, uint32_t, int, sample *);
typedef void (*floor_fn)(gic_sq *, int, sample *);
static const post_fn post_kernels[GIC_ORDER_COUNT] = {
	post_kernel_0, post_kernel_1, post_kernel_2, post_kernel_3,
	post_kernel_4, post_kernel_5, post_kernel_6,
};
static const floor_fn floor_kernels[GIC_ORDER_COUNT] = {
	floor_kernel_0, floor_kernel_1, floor_kernel_2, floor_kernel_3,
	floor_kernel_4, floor_kernel_5, floor_kernel_6,
};

/* SM clock in MHz measured by a kernel: clock64 against globaltimer. */
__global__ void sm_clock_kernel(double *mhz)
{
	unsigned long long t0 = gic_now_ns();
	long long c0 = clock64();

	while (gic_now_ns() - t0 < 20000000ull)
		;
	*mhz = (double)(clock64() - c0) / (double)(gic_now_ns() - t0) * 1e3;
}

/* softnic allocator: pinned host memory, mapped into the GPU (UVA). */
static void *mapped_alloc(size_t size, size_t align, void *ctx)
{
	void *p = NULL;

	(void)align; /* cudaHostAlloc returns page-aligned memory */
	(void)ctx;
	if (cudaHostAlloc(&p, size, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess)
		return NULL;
	memset(p, 0, size);
	return p;
}

static void mapped_free(void *p, void *ctx)
{
	(void)ctx;
	cudaFreeHost(p);
}

typedef struct run_env {
	softnic *nic;
	softnic_qp *qp[2];
	gic_sq *d_sq;         /* device copy of PE0's queue view */
	gic_cq *d_cq;
	gic_sq *d_scratch;    /* floor kernel's queue: its own mapped memory, */
	void *scratch_mem;    /* which no engine watches */
	uint64_t *dst;        /* PE1's registered region, mapped host memory */
	softnic_mr *dst_mr;
	sample *d_samples, *h_samples;
} run_env;

/* Copies a fresh view of PE0's queue to the device. */
static void upload_view(run_env *e)
{
	gic_sq sq;
	gic_cq cq;

	softnic_qp_view(e->qp[0], &sq, &cq);
	sq.cq = e->d_cq;
	CUDA_OK(cudaMemcpy(e->d_cq, &cq, sizeof(cq), cudaMemcpyHostToDevice));
	CUDA_OK(cudaMemcpy(e->d_sq, &sq, sizeof(sq), cudaMemcpyHostToDevice));
	/* Same shape and placement, separate memory. */
	sq.cq = NULL;
	sq.wqes = (uint8_t *)e->scratch_mem;
	sq.dbrec = (uint32_t *)((uint8_t *)e->scratch_mem + sq.bb_cnt * GIC_SEND_WQE_BB);
	sq.db = (uint64_t *)((uint8_t *)e->scratch_mem + sq.bb_cnt * GIC_SEND_WQE_BB + 64);
	CUDA_OK(cudaMemcpy(e->d_scratch, &sq, sizeof(sq), cudaMemcpyHostToDevice));
}

static int env_open(run_env *e, const softnic_allocator *alloc)
{
	softnic_attr na = { .engine_threads = 1, .strict = 1, .queue_mem = alloc };
	softnic_pd *pd[2];

	memset(e, 0, sizeof(*e));
	e->nic = softnic_open(&na);
	if (!e->nic)
		return 1;
	for (int i = 0; i < 2; i++) {
		softnic_qp_attr qa = { .log_sq_bb = 10, .send_cq = softnic_cq_create(e->nic, 10) };

		pd[i] = softnic_pd_alloc(e->nic);
		e->qp[i] = softnic_qp_create(pd[i], &qa);
		if (!e->qp[i])
			return 1;
	}
	CUDA_OK(cudaHostAlloc((void **)&e->dst, ITERS * 8, cudaHostAllocMapped));
	e->dst_mr = softnic_reg_mr(pd[1], e->dst, ITERS * 8, SOFTNIC_ACCESS_REMOTE_WRITE);
	CUDA_OK(cudaMalloc(&e->d_sq, sizeof(gic_sq)));
	CUDA_OK(cudaMalloc(&e->d_cq, sizeof(gic_cq)));
	CUDA_OK(cudaMalloc(&e->d_scratch, sizeof(gic_sq)));
	e->scratch_mem = mapped_alloc((1u << 10) * GIC_SEND_WQE_BB + 128, 4096, NULL);
	CUDA_OK(cudaMalloc(&e->d_samples, ITERS * sizeof(sample)));
	e->h_samples = (sample *)malloc(ITERS * sizeof(sample));
	return !e->dst_mr || softnic_qp_connect(e->qp[0], e->qp[1]);
}

/* Checks that slot i holds write i's value; prints the first mismatch. */
static int validate(const run_env *e, const char *what)
{
	for (int i = 0; i < ITERS; i++) {
		uint64_t want = 0x5eed000000000000ull + (uint64_t)i;

		if (e->dst[i] != want) {
			fprintf(stderr, "%s: slot %d holds 0x%llx, want 0x%llx\n", what, i,
				(unsigned long long)e->dst[i], (unsigned long long)want);
			return 0;
		}
	}
	return 1;
}

static void summarize(const sample *s, int field, double scale, gic_summary *out)
{
	gic_samples v;

	gic_samples_init(&v, ITERS);
	for (int i = 0; i < ITERS; i++) {
		double x = field == 0 ? (double)s[i].issue_cycles
			 : field == 1 ? (double)s[i].issue_ns : (double)s[i].putc_ns;
		gic_samples_add(&v, x * scale);
	}
	gic_summarize(&v, WARMUP, out);
	gic_samples_free(&v);
}

/* Runs one ordering variant; returns 1 when it passed. */
static int run_order(run_env *e, int order, double mhz, FILE *log)
{
	gic_summary issue, putc, floor_issue;
	double us_per_cycle = 1.0 / mhz;
	int ok = 1;

	memset(e->dst, 0, ITERS * 8);
	upload_view(e);
	post_kernels[order]<<<1, 1>>>(e->d_sq, e->dst, softnic_mr_rkey(e->dst_mr), ITERS,
				      e->d_samples);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(e->h_samples, e->d_samples, ITERS * sizeof(sample),
			   cudaMemcpyDeviceToHost));
	for (int i = 0; i < ITERS && ok; i++) {
		if (e->h_samples[i].rc) {
			fprintf(stderr, "%s: write %d failed: rc %d (%s)\n", order_names[order], i,
				e->h_samples[i].rc, softnic_qp_error(e->qp[0]));
			ok = 0;
		}
	}
	ok = ok && validate(e, order_names[order]);
	summarize(e->h_samples, 0, us_per_cycle, &issue);
	summarize(e->h_samples, 2, 1e-3, &putc);
	floor_kernels[order]<<<1, 1>>>(e->d_scratch, ITERS, e->d_samples);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(e->h_samples, e->d_samples, ITERS * sizeof(sample),
			   cudaMemcpyDeviceToHost));
	summarize(e->h_samples, 0, us_per_cycle, &floor_issue);
	printf("%-32s issue p50 %7.3f p99 %7.3f max %8.3f | floor p50 %7.3f | ratio %5.2f | "
	       "put+c p50 %7.3f p99 %7.3f us | %s\n",
	       order_names[order], issue.p50, issue.p99, issue.max, floor_issue.p50,
	       issue.p50 / floor_issue.p50, putc.p50, putc.p99, ok ? "valid" : "INVALID");
	if (log) {
		gic_summary_print(log, "issue", &issue, "us");
		gic_summary_print(log, "floor", &floor_issue, "us");
		gic_summary_print(log, "put+completion", &putc, "us");
	}
	return ok;
}

int main(int argc, char **argv)
{
	softnic_allocator alloc = { mapped_alloc, mapped_free, NULL };
	cudaDeviceProp prop;
	char cpu[256];
	double *d_mhz, mhz;
	int passed = 0, failed = 0;
	FILE *log = argc > 1 ? fopen(argv[1], "w") : NULL;

	CUDA_OK(cudaSetDeviceFlags(cudaDeviceMapHost));
	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	CUDA_OK(cudaMalloc(&d_mhz, sizeof(double)));
	sm_clock_kernel<<<1, 1>>>(d_mhz);
	CUDA_OK(cudaMemcpy(&mhz, d_mhz, sizeof(double), cudaMemcpyDeviceToHost));
	gic_cpu_state_line(cpu, sizeof(cpu));
	printf("gpu_post: %s, SM clock %.0f MHz (clock64 vs globaltimer), CPU: %s\n", prop.name,
	       mhz, cpu);
	printf("queues in mapped host memory, softnic CPU engine (1 thread), one GPU thread, "
	       "8-byte inline writes, %d samples after %d warm-up\n", ITERS - WARMUP, WARMUP);
	for (int order = 0; order < GIC_ORDER_COUNT; order++) {
		run_env e;

		if (env_open(&e, &alloc)) {
			fprintf(stderr, "setup: %s\n", e.nic ? softnic_last_error(e.nic) : "softnic_open");
			return 1;
		}
		if (run_order(&e, order, mhz, log))
			passed++;
		else
			failed++;
		softnic_close(e.nic);
		cudaFreeHost(e.dst);
		cudaFree(e.d_sq);
		cudaFree(e.d_cq);
		cudaFree(e.d_scratch);
		cudaFreeHost(e.scratch_mem);
		cudaFree(e.d_samples);
		free(e.h_samples);
	}
	if (log)
		fclose(log);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
