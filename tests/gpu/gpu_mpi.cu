/*
 * gic-gpu-mpi: softnic across processes with GPU regions (CUDA IPC), one PE
 * per process, `mpiexec -n N gic-gpu-mpi CASE`; PE r uses GPU r % (GPUs).
 *
 *   transfer   every PE's region (a slice per writer, an atomic counter)
 *              is cudaMalloc memory on its GPU, registered with
 *              softnic_shared_reg_gpu_mr; a kernel on each writer's GPU posts
 *              to its softnic's queues (in the arena, mapped into the GPU):
 *              inline writes, pointer writes from the writer's own GPU
 *              buffer, batches under one doorbell, then ATOMIC_FA whose
 *              fetched values land in the writer's GPU memory; then a bad
 *              rkey and a write past the region, which must fail with
 *              their error CQEs. Every PE checks every byte it received,
 *              the guard after its region, the counter and the fetched
 *              values; export errors (host, managed, pool memory) are
 *              checked too. Rank 0 prints "PASSED" only when every PE
 *              passed.
 *   peer_exit  PE 1 leaves without closing anything (_exit); PE 0 keeps
 *              writing into PE 1's GPU region (host-posted) and must get
 *              a PEER_GONE error CQE within a time limit, no hang, and
 *              its GPU must still work after. Open MPI's mpirun needs
 *              `--mca orte_allowed_exit_without_sync 1`, MPICH's
 *              `-disable-auto-cleanup`, or the job is torn down first.
 *
 * Set CUDA_MODULE_LOADING=EAGER. Every wait has a time limit; every
 * failure prints what and where.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gic/boot.h"
#include "gic/conn.h"
#include "gic/softnic_shm.h"
#include "../host/mpi_kit.h" /* FAIL, mk: shared with test_mpi */

#define SEC 1000000000ull
#define WAIT_NS (60 * SEC)
#define ORD GIC_ORDER_RELEASE_SYS

enum {
	MAXPE = 8,
	NQP = 3,                 /* per peer: data, bad rkey, bounds */
	SLICE = 256 * 1024,      /* bytes each PE writes into each other PE */
	NATOMIC = 64,
	BATCH = 16,              /* WQEs per doorbell */
	GUARD = 4096,
	ARENA = 32 << 20,
};

static int dev;

#define CUDA_CHECK(call)                                                          \
	do {                                                                      \
		cudaError_t e_ = (call);                                          \
		if (e_ != cudaSuccess) {                                          \
			FAIL("%s: %s", #call, cudaGetErrorString(e_));            \
			return EIO;                                               \
		}                                                                 \
	} while (0)

/* What a kernel reports (mapped host memory). */
typedef struct kres {
	int rc;
	int syndrome;
	int vendor;
	int done;
} kres;

typedef struct pe {
	gic_boot *b;
	softnic *nic;
	softnic_pd *pd;
	softnic_cq *cq[MAXPE][NQP];
	softnic_qp *qp[MAXPE][NQP];
	gic_sq sq[MAXPE][NQP];      /* host views (peer_exit posts from the host) */
	gic_cq cqv[MAXPE][NQP];
	gic_sq *d_sq;               /* device copies: [p * NQP + k] */
	gic_cq *d_cq;
	uint8_t *region;            /* GPU: npe slices, the counter, GUARD bytes */
	size_t region_len;          /* registered: slices and counter */
	uint8_t *src;               /* GPU: the patterns, npe slices */
	uint64_t *fetched;          /* GPU: ATOMIC_FA results, NATOMIC per peer */
	softnic_mr *mr, *src_mr, *fetch_mr;
	kres *res;                  /* mapped host memory */
	cudaStream_t stream;        /* non-blocking */
	gic_conn_info theirs[MAXPE][NQP];
} pe;

static const char *cqe_text(uint8_t synd, uint8_t vs) { return mk_cqe_text(synd, vs); }

/* Waits for the PE's stream, at most seconds. */
static int stream_wait(pe *s, const char *what, double seconds)
{
	uint64_t deadline = gic_now_ns() + (uint64_t)(seconds * 1e9);
	cudaError_t e;

	while ((e = cudaStreamQuery(s->stream)) == cudaErrorNotReady) {
		if (gic_now_ns() > deadline) {
			FAIL("%s: the GPU did not finish within %.0f s", what, seconds);
			return ETIMEDOUT;
		}
		usleep(100);
	}
	if (e != cudaSuccess) {
		FAIL("%s: %s", what, cudaGetErrorString(e));
		return EIO;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Kernels: one thread owns each queue it posts to. */

/* Writes slice bytes of src into raddr (mixed sizes, inline and pointer,
 * one doorbell per BATCH WQEs), then natomic ATOMIC_FA of add to counter
 * with the fetched values into fetched[]. */
__global__ void k_put(gic_sq *g, uint64_t raddr, uint32_t rkey, const uint8_t *src, uint32_t lkey,
		      uint32_t slice, uint64_t counter, uint64_t add, uint64_t *fetched,
		      uint32_t flkey, int natomic, kres *r)
{
	const uint32_t lens[] = { 1, 8, 13, 64, 100, 511, 700, 4096, 3, 65536, 12, 9000, 48 };
	const uint32_t nlens = sizeof(lens) / sizeof(lens[0]);
	uint32_t off = 0, n = 0, inb = 0;
	gic_sq s;
	gic_cq c;
	uint64_t pos;
	int rc = 0;

	gic_sq_local_begin(&s, &c, g);
	while (off < slice && !rc) {
		uint32_t len = lens[n % nlens] < slice - off ? lens[n % nlens] : slice - off;
		int inl = len <= s.max_inline && n % 3 != 2;
		uint32_t nbb = inl ? gic_bb_for_ds(gic_ds_inline_write(len)) : 1;
		int sig = off + len == slice || ++inb == BATCH;

		rc = gic_sq_reserve_excl(&s, nbb, &pos, ORD, gic_now_ns() + WAIT_NS);
		if (rc)
			break;
		if (inl)
			gic_wqe_write_inline(&s, pos, raddr + off, rkey, src + off, len,
					     sig ? GIC_CTRL_CQ_UPDATE : 0);
		else
			gic_wqe_write(&s, pos, GIC_OPCODE_RDMA_WRITE, raddr + off, rkey,
				      (uint64_t)(uintptr_t)(src + off), lkey, len,
				      sig ? GIC_CTRL_CQ_UPDATE : 0, 0);
		if (sig) {
			gic_sq_note_signaled(&s, pos + nbb, 0);
			gic_sq_publish_excl(&s, ORD);
			inb = 0;
		}
		off += len;
		n++;
	}
	for (int k = 0; k < natomic && !rc; k++) {
		int sig = k % 8 == 7 || k + 1 == natomic;

		rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, gic_now_ns() + WAIT_NS);
		if (rc)
			break;
		gic_wqe_atomic_fa(&s, pos, counter, rkey, add, (uint64_t)(uintptr_t)&fetched[k], flkey,
				  sig ? GIC_CTRL_CQ_UPDATE : 0);
		if (sig) {
			gic_sq_note_signaled(&s, pos + 1, 0);
			gic_sq_publish_excl(&s, ORD);
		}
	}
	if (!rc)
		rc = gic_sq_quiet(&s, ORD, gic_now_ns() + WAIT_NS);
	r->rc = rc;
	r->syndrome = s.err_info.syndrome;
	r->vendor = s.err_info.vendor_syndrome;
	r->done = 1;
	gic_sq_local_end(g, &s);
}

/* One inline write of len bytes that must fail; reports what it got. */
__global__ void k_bad(gic_sq *g, uint64_t raddr, uint32_t rkey, uint32_t len, kres *r)
{
	uint8_t data[16];
	gic_sq s;
	gic_cq c;
	uint64_t pos;
	int rc;

	for (int i = 0; i < 16; i++)
		data[i] = 0x5a;
	gic_sq_local_begin(&s, &c, g);
	rc = gic_sq_reserve_excl(&s, 1, &pos, ORD, gic_now_ns() + WAIT_NS);
	if (!rc) {
		gic_wqe_write_inline(&s, pos, raddr, rkey, data, len, GIC_CTRL_CQ_UPDATE);
		gic_sq_note_signaled(&s, pos + 1, 0);
		gic_sq_publish_excl(&s, ORD);
		rc = gic_sq_wait_retired(&s, pos + 1, 0, ORD, gic_now_ns() + WAIT_NS);
	}
	r->rc = rc;
	r->syndrome = s.err_info.syndrome;
	r->vendor = s.err_info.vendor_syndrome;
	r->done = 1;
	gic_sq_local_end(g, &s);
}

/* ------------------------------------------------------------------ */
/* Setup. */

/* Export errors: memory that cannot be a GPU region says so. */
static void check_export_errors(pe *s)
{
	void *managed = NULL, *pooled = NULL;
	uint8_t host[64];

	errno = 0;
	if (softnic_shared_reg_gpu_mr(s->pd, host, sizeof(host), 0) || errno != EINVAL)
		FAIL("reg_gpu_mr of host memory did not fail with EINVAL (%s)", strerror(errno));
	if (cudaMallocManaged(&managed, 4096) == cudaSuccess) {
		errno = 0;
		if (softnic_shared_reg_gpu_mr(s->pd, managed, 4096, 0) || errno != EINVAL)
			FAIL("reg_gpu_mr of managed memory did not fail with EINVAL (%s)",
			     strerror(errno));
		cudaFree(managed);
	}
	if (cudaMallocAsync(&pooled, 4096, s->stream) == cudaSuccess &&
	    cudaStreamSynchronize(s->stream) == cudaSuccess) {
		/* ENOTSUP from cudaIpcGetMemHandle; EINVAL if the driver will
		 * not even describe the pool's range. */
		errno = 0;
		if (softnic_shared_reg_gpu_mr(s->pd, pooled, 4096, 0) ||
		    (errno != ENOTSUP && errno != EINVAL))
			FAIL("reg_gpu_mr of cudaMallocAsync memory did not fail with ENOTSUP (%s)",
			     strerror(errno));
		else if (mk.me == 0)
			fprintf(stderr, "gic-gpu-mpi PE 0: pool memory refused (%s): %s\n",
				strerror(errno), softnic_last_error(s->nic));
		cudaFreeAsync(pooled, s->stream);
		cudaStreamSynchronize(s->stream);
	}
	cudaGetLastError();
	errno = 0;
	if (softnic_shared_reg_gpu_mr(s->pd, s->region, (size_t)64 << 20, 0) || errno != EINVAL)
		FAIL("reg_gpu_mr past the allocation did not fail with EINVAL (%s)",
		     strerror(errno));
}

static int setup_memory(pe *s)
{
	uint8_t *pat = (uint8_t *)malloc((size_t)mk.npe * SLICE);

	if (!pat) {
		FAIL("no memory");
		return ENOMEM;
	}
	for (int p = 0; p < mk.npe; p++)
		mk_pattern(pat + (size_t)p * SLICE, SLICE, mk.me, p);
	s->region_len = mk_counter_off() + 64;
	CUDA_CHECK(cudaMalloc(&s->region, s->region_len + GUARD));
	CUDA_CHECK(cudaMemset(s->region, 0, s->region_len));
	CUDA_CHECK(cudaMemset(s->region + s->region_len, 0xa5, GUARD));
	CUDA_CHECK(cudaMalloc(&s->src, (size_t)mk.npe * SLICE));
	CUDA_CHECK(cudaMemcpy(s->src, pat, (size_t)mk.npe * SLICE, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMalloc(&s->fetched, (size_t)mk.npe * NATOMIC * 8));
	CUDA_CHECK(cudaMemset(s->fetched, 0xff, (size_t)mk.npe * NATOMIC * 8));
	CUDA_CHECK(cudaHostAlloc(&s->res, sizeof(kres) * MAXPE * NQP, cudaHostAllocMapped));
	CUDA_CHECK(cudaMalloc(&s->d_sq, sizeof(gic_sq) * MAXPE * NQP));
	CUDA_CHECK(cudaMalloc(&s->d_cq, sizeof(gic_cq) * MAXPE * NQP));
	free(pat);
	s->mr = softnic_shared_reg_gpu_mr(s->pd, s->region, s->region_len,
					  SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_ATOMIC |
					  SOFTNIC_ACCESS_LOCAL_WRITE);
	s->src_mr = softnic_shared_reg_gpu_mr(s->pd, s->src, (size_t)mk.npe * SLICE, 0);
	s->fetch_mr = softnic_shared_reg_gpu_mr(s->pd, s->fetched, (size_t)mk.npe * NATOMIC * 8,
						SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!s->mr || !s->src_mr || !s->fetch_mr) {
		FAIL("reg_gpu_mr: %s", softnic_last_error(s->nic));
		return ENOMEM;
	}
	check_export_errors(s);
	return 0;
}

/* QPs for every peer, their device views, and connection records. */
static int setup_qps(pe *s, uint8_t (*mine)[NQP][GIC_CONN_WIRE_BYTES])
{
	for (int p = 0; p < mk.npe; p++) {
		for (int k = 0; k < NQP && p != mk.me; k++) {
			gic_sq dsq;

			if (mk_qp_open(s->nic, s->pd, p, k, 0, &s->cq[p][k], &s->qp[p][k], &s->sq[p][k],
				       &s->cqv[p][k]))
				return ENOMEM;
			dsq = s->sq[p][k];
			dsq.cq = &s->d_cq[p * NQP + k]; /* the device copy of the CQ view */
			CUDA_CHECK(cudaMemcpy(&s->d_sq[p * NQP + k], &dsq, sizeof(dsq),
					      cudaMemcpyHostToDevice));
			CUDA_CHECK(cudaMemcpy(&s->d_cq[p * NQP + k], &s->cqv[p][k], sizeof(gic_cq),
					      cudaMemcpyHostToDevice));
			mk_conn_record(s->qp[p][k], (uint64_t)(uintptr_t)s->region,
				       softnic_mr_rkey(s->mr), mine[p][k]);
		}
	}
	return 0;
}

static int setup(pe *s, int *argc, char ***argv)
{
	uint8_t (*mine)[NQP][GIC_CONN_WIRE_BYTES];
	cudaDeviceProp prop;
	int ndev = 0, rc;

	s->b = mk_boot(argc, argv, MAXPE, &rc);
	if (!s->b)
		return rc;
	CUDA_CHECK(cudaGetDeviceCount(&ndev));
	dev = mk.me % ndev;
	CUDA_CHECK(cudaSetDevice(dev));
	CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
	fprintf(stderr, "gic-gpu-mpi PE %d of %d: GPU %d of %d (%s, PCI %02x:%02x)\n", mk.me, mk.npe, dev,
		ndev, prop.name, prop.pciBusID, prop.pciDeviceID);
	CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
	s->nic = mk_open(s->b, ARENA);
	if (!s->nic)
		return errno;
	rc = softnic_shared_cuda_enable(s->nic, dev);
	if (rc) {
		FAIL("softnic_shared_cuda_enable: %s", softnic_last_error(s->nic));
		return rc;
	}
	s->pd = softnic_pd_alloc(s->nic);
	if (!s->pd || (rc = setup_memory(s)))
		return s->pd ? rc : ENOMEM;
	mine = (uint8_t (*)[NQP][GIC_CONN_WIRE_BYTES])calloc((size_t)mk.npe * NQP, GIC_CONN_WIRE_BYTES);
	rc = mine ? setup_qps(s, mine) : ENOMEM;
	if (!rc)
		rc = mk_connect(s->b, s->nic, NQP, mine, &s->qp[0][0], &s->theirs[0][0]);
	free(mine);
	return rc;
}

static void teardown(pe *s)
{
	softnic_close(s->nic); /* frees QPs, CQs, MRs, PDs, the arena; closes IPC handles */
	/* Peers may still hold our buffers open until they close too. */
	if (gic_boot_barrier(s->b, WAIT_NS))
		FAIL("barrier after closing: %s", gic_boot_last_error(s->b));
	cudaFree(s->region);
	cudaFree(s->src);
	cudaFree(s->fetched);
	cudaFree(s->d_sq);
	cudaFree(s->d_cq);
	cudaFreeHost(s->res);
	cudaStreamDestroy(s->stream);
	gic_boot_free(s->b);
}

/* ------------------------------------------------------------------ */
/* transfer */

/* A kernel on this GPU writes this PE's slice of PE p's region, then the
 * atomics. */
static void put_to(void *ctx, int p)
{
	pe *s = (pe *)ctx;
	const gic_conn_info *t = &s->theirs[p][0];
	kres *r = &s->res[p * NQP];
	uint64_t t0 = gic_now_ns();

	memset(r, 0, sizeof(*r));
	k_put<<<1, 1, 0, s->stream>>>(&s->d_sq[p * NQP], t->addr + (uint64_t)mk.me * SLICE, t->rkey,
				      s->src + (size_t)p * SLICE, softnic_mr_lkey(s->src_mr), SLICE,
				      t->addr + mk_counter_off(), (uint64_t)mk.me + 1,
				      s->fetched + (size_t)p * NATOMIC, softnic_mr_lkey(s->fetch_mr),
				      NATOMIC, r);
	if (stream_wait(s, "the writing kernel", 120))
		return;
	if (r->rc)
		FAIL("kernel writing to PE %d: %s (%s; %s)", p, strerror(r->rc),
		     r->rc == EIO ? cqe_text((uint8_t)r->syndrome, (uint8_t)r->vendor) : "",
		     softnic_qp_error(s->qp[p][0]));
	else
		fprintf(stderr, "gic-gpu-mpi PE %d: GPU %d wrote %d bytes and %d ATOMIC_FA into PE "
			"%d's GPU memory in %.1f ms\n", mk.me, dev, SLICE, NATOMIC, p,
			(gic_now_ns() - t0) / 1e6);
}

/* A kernel posts one bad write on QP k to PE p; it must fail with synd/vs. */
static void bad_write(void *ctx, int p, int k, uint64_t raddr, uint32_t rkey, uint32_t len,
		      uint8_t synd, uint8_t vs, const char *what)
{
	pe *s = (pe *)ctx;
	kres *r = &s->res[p * NQP + k];

	memset(r, 0, sizeof(*r));
	k_bad<<<1, 1, 0, s->stream>>>(&s->d_sq[p * NQP + k], raddr, rkey, len, r);
	if (stream_wait(s, what, 120))
		return;
	mk_check_bad(r->rc, (uint8_t)r->syndrome, (uint8_t)r->vendor, s->qp[p][k], p, synd, vs, what);
}

/* Checks what the other PEs wrote into this PE's GPU region. */
static void check_received(void *ctx)
{
	pe *s = (pe *)ctx;
	size_t n = s->region_len + GUARD;
	uint8_t *got = (uint8_t *)malloc(n);

	if (!got || cudaMemcpy(got, s->region, n, cudaMemcpyDeviceToHost) != cudaSuccess)
		FAIL("reading the region back");
	else
		mk_check_received(got, s->region_len);
	free(got);
}

/* The old values this PE's ATOMIC_FAs fetched into its GPU memory. */
static void check_fetched(void *ctx, int p)
{
	pe *s = (pe *)ctx;
	uint64_t f[NATOMIC];

	if (cudaMemcpy(f, s->fetched + (size_t)p * NATOMIC, sizeof(f), cudaMemcpyDeviceToHost) !=
	    cudaSuccess)
		FAIL("reading the fetched values back");
	else
		mk_check_fetched(f, p);
}

static int case_transfer(pe *s)
{
	static const mk_transfer_ops ops = { put_to, check_fetched, bad_write, NULL, 0,
					     check_received, ", GPU regions on both sides" };

	return mk_transfer(s->b, &ops, s, &s->theirs[0][0], NQP, s->region_len);
}

/* ------------------------------------------------------------------ */
/* peer_exit */

/* The host posts one 8-byte write of v into PE 1's region at off on QP
 * (1, 0) and waits for it: 0, or the poller's error (EIO: an error CQE). */
static int host_write8(pe *s, uint64_t off, uint64_t v)
{
	return mk_write_wait(&s->sq[1][0], s->theirs[1][0].addr + off, s->theirs[1][0].rkey, &v, 8,
			     gic_now_ns() + WAIT_NS);
}

static int case_peer_exit(pe *s)
{
	gic_sq *sq = &s->sq[1][0];
	uint64_t t0, writes = 0;
	const char *why = "";
	int rc = 0;

	signal(SIGUSR1, SIG_IGN); /* hydra's notice of a failed process */
	/* PE 1's buffer is open here before PE 1 leaves. */
	if (mk.me == 0 && (rc = host_write8(s, 0, 1)))
		FAIL("peer_exit: the first write into PE 1's GPU memory: %s", strerror(rc));
	rc = gic_boot_barrier(s->b, WAIT_NS);
	if (rc) {
		FAIL("peer_exit: barrier before PE 1 leaves: %s", gic_boot_last_error(s->b));
		return 1;
	}
	if (mk.me == 1) {
		fprintf(stderr, "gic-gpu-mpi peer_exit: PE 1 exits now, closing nothing\n");
		_exit(0);
	}
	if (mk.me != 0)
		return 0; /* PEs 2.. only watch */
	t0 = gic_now_ns();
	/* Writes into PE 1's GPU memory until one fails: the exit must turn
	 * into an error CQE, not a hang. */
	while (!(rc = host_write8(s, 8 * (writes % 64), writes + 2))) {
		writes++;
		if (gic_now_ns() - t0 > 20 * SEC) {
			rc = ETIMEDOUT;
			break;
		}
	}
	softnic_shared_peer_gone(s->nic, 1, &why);
	if (mk_check_peer_gone(rc, sq, "peer_exit", writes, t0))
		fprintf(stderr, "gic-gpu-mpi peer_exit: PE 0: PE 1 gone (%s) after %llu writes "
			"into its GPU memory, %.1f ms: %s\n", why, (unsigned long long)writes,
			(gic_now_ns() - t0) / 1e6, softnic_qp_error(s->qp[1][0]));
	/* This PE's GPU still works (no sticky error from the vanished
	 * peer's memory). */
	if (cudaMemsetAsync(s->region, 0, 64, s->stream) != cudaSuccess ||
	    stream_wait(s, "a memset after the peer left", 10))
		FAIL("peer_exit: this PE's GPU failed after the peer left: %s",
		     cudaGetErrorString(cudaGetLastError()));
	printf("gic-gpu-mpi peer_exit: %s\n", mk.failures ? "FAILED" : "PASSED");
	return mk.failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const cases[] = { "transfer", "peer_exit", NULL };
	const char *name = argc > 1 ? argv[1] : "";
	pe s;
	int rc;

	mk_init("gic-gpu-mpi", WAIT_NS, SLICE, NATOMIC, GUARD, 7);
	if (!mk_known_case(name, argv[0], cases))
		return 2;
	memset(&s, 0, sizeof(s));
	rc = setup(&s, &argc, &argv);
	if (!rc && !strcmp(name, "transfer"))
		rc = case_transfer(&s);
	else if (!rc)
		rc = case_peer_exit(&s);
	if (rc && mk.me <= 0)
		printf("gic-gpu-mpi %s: FAILED\n", name);
	if (!strcmp(name, "peer_exit")) {
		/* PE 1 is gone: no collective can complete; close alone and
		 * leave without MPI_Finalize. */
		if (s.nic)
			softnic_close(s.nic);
		fflush(stdout);
		_exit(rc ? 1 : 0);
	}
	if (s.nic)
		teardown(&s);
	else if (s.b)
		gic_boot_free(s.b);
	return rc ? 1 : 0;
}
