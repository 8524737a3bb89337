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

static int me = -1, npe, dev;
static int failures;

#define FAIL(...)                                                                  \
	do {                                                                       \
		failures++;                                                        \
		fprintf(stderr, "gic-gpu-mpi PE %d: %s:%d: ", me, __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__);                                      \
		fputc('\n', stderr);                                               \
	} while (0)

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

static size_t counter_off(void) { return (size_t)npe * SLICE; }

/* The bytes PE src writes into PE dst: never zero. */
static void pattern(uint8_t *buf, size_t len, int src, int dst)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(src * 131 + dst + 7);

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)(x | 1);
	}
}

static const char *cqe_text(uint8_t synd, uint8_t vs)
{
	static char buf[160];

	snprintf(buf, sizeof(buf), "syndrome 0x%02x (%s), vendor syndrome 0x%02x (%s)", synd,
		 gic_syndrome_name(synd), vs, softnic_vsynd_text(vs));
	return buf;
}

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
		else if (me == 0)
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
	uint8_t *pat = (uint8_t *)malloc((size_t)npe * SLICE);

	if (!pat) {
		FAIL("no memory");
		return ENOMEM;
	}
	for (int p = 0; p < npe; p++)
		pattern(pat + (size_t)p * SLICE, SLICE, me, p);
	s->region_len = counter_off() + 64;
	CUDA_CHECK(cudaMalloc(&s->region, s->region_len + GUARD));
	CUDA_CHECK(cudaMemset(s->region, 0, s->region_len));
	CUDA_CHECK(cudaMemset(s->region + s->region_len, 0xa5, GUARD));
	CUDA_CHECK(cudaMalloc(&s->src, (size_t)npe * SLICE));
	CUDA_CHECK(cudaMemcpy(s->src, pat, (size_t)npe * SLICE, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMalloc(&s->fetched, (size_t)npe * NATOMIC * 8));
	CUDA_CHECK(cudaMemset(s->fetched, 0xff, (size_t)npe * NATOMIC * 8));
	CUDA_CHECK(cudaHostAlloc(&s->res, sizeof(kres) * MAXPE * NQP, cudaHostAllocMapped));
	CUDA_CHECK(cudaMalloc(&s->d_sq, sizeof(gic_sq) * MAXPE * NQP));
	CUDA_CHECK(cudaMalloc(&s->d_cq, sizeof(gic_cq) * MAXPE * NQP));
	free(pat);
	s->mr = softnic_shared_reg_gpu_mr(s->pd, s->region, s->region_len,
					  SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_ATOMIC |
					  SOFTNIC_ACCESS_LOCAL_WRITE);
	s->src_mr = softnic_shared_reg_gpu_mr(s->pd, s->src, (size_t)npe * SLICE, 0);
	s->fetch_mr = softnic_shared_reg_gpu_mr(s->pd, s->fetched, (size_t)npe * NATOMIC * 8,
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
	for (int p = 0; p < npe; p++) {
		for (int k = 0; k < NQP && p != me; k++) {
			softnic_qp_attr qa = { 10, NULL, NULL };
			gic_conn_info c;
			gic_sq dsq;

			memset(&c, 0, sizeof(c));
			c.port = 1;
			c.mtu = 5;
			s->cq[p][k] = softnic_cq_create(s->nic, 10);
			qa.send_cq = s->cq[p][k];
			s->qp[p][k] = s->cq[p][k] ? softnic_qp_create(s->pd, &qa) : NULL;
			if (!s->qp[p][k]) {
				FAIL("QP %d for PE %d: %s", k, p, softnic_last_error(s->nic));
				return ENOMEM;
			}
			softnic_qp_view(s->qp[p][k], &s->sq[p][k], &s->cqv[p][k]);
			dsq = s->sq[p][k];
			dsq.cq = &s->d_cq[p * NQP + k]; /* the device copy of the CQ view */
			CUDA_CHECK(cudaMemcpy(&s->d_sq[p * NQP + k], &dsq, sizeof(dsq),
					      cudaMemcpyHostToDevice));
			CUDA_CHECK(cudaMemcpy(&s->d_cq[p * NQP + k], &s->cqv[p][k], sizeof(gic_cq),
					      cudaMemcpyHostToDevice));
			c.qpn = softnic_qp_num(s->qp[p][k]);
			c.addr = (uint64_t)(uintptr_t)s->region;
			c.rkey = softnic_mr_rkey(s->mr);
			gic_conn_pack(&c, mine[p][k], GIC_CONN_WIRE_BYTES);
		}
	}
	return 0;
}

static int connect_all(pe *s, const uint8_t *all)
{
	int rc = 0;

	for (int p = 0; p < npe && !rc; p++) {
		for (int k = 0; k < NQP && p != me && !rc; k++) {
			const char *why = NULL;
			/* PE p's records are packed npe x NQP as well. */
			const uint8_t *rec = all + ((size_t)p * npe * NQP + (size_t)me * NQP + k) *
						   GIC_CONN_WIRE_BYTES;

			rc = gic_conn_unpack(rec, GIC_CONN_WIRE_BYTES, &s->theirs[p][k], &why);
			if (rc) {
				FAIL("record %d of PE %d: %s", k, p, why ? why : strerror(rc));
				break;
			}
			rc = softnic_qp_connect_remote(s->qp[p][k], p, s->theirs[p][k].qpn);
			if (rc)
				FAIL("connect to PE %d QP 0x%x: %s", p, s->theirs[p][k].qpn,
				     softnic_last_error(s->nic));
		}
	}
	return rc;
}

static int setup(pe *s, int *argc, char ***argv)
{
	softnic_attr na;
	uint8_t (*mine)[NQP][GIC_CONN_WIRE_BYTES];
	uint8_t *all;
	cudaDeviceProp prop;
	int ndev = 0, rc;

	memset(&na, 0, sizeof(na));
	na.engine_threads = 1;
	s->b = gic_boot_mpi(argc, argv);
	if (!s->b) {
		FAIL("gic_boot_mpi: %s", strerror(errno));
		return errno;
	}
	me = gic_boot_rank(s->b);
	npe = gic_boot_size(s->b);
	if (npe < 2 || npe > MAXPE) {
		FAIL("needs 2..%d processes (mpiexec -n N), got %d", MAXPE, npe);
		return EINVAL;
	}
	CUDA_CHECK(cudaGetDeviceCount(&ndev));
	dev = me % ndev;
	CUDA_CHECK(cudaSetDevice(dev));
	CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
	fprintf(stderr, "gic-gpu-mpi PE %d of %d: GPU %d of %d (%s, PCI %02x:%02x)\n", me, npe, dev,
		ndev, prop.name, prop.pciBusID, prop.pciDeviceID);
	CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
	s->nic = softnic_open_shared(&na, s->b, ARENA, WAIT_NS);
	if (!s->nic) {
		FAIL("softnic_open_shared: %s", strerror(errno));
		return errno;
	}
	rc = softnic_shared_cuda_enable(s->nic, dev);
	if (rc) {
		FAIL("softnic_shared_cuda_enable: %s", softnic_last_error(s->nic));
		return rc;
	}
	s->pd = softnic_pd_alloc(s->nic);
	if (!s->pd || (rc = setup_memory(s)))
		return s->pd ? rc : ENOMEM;
	mine = (uint8_t (*)[NQP][GIC_CONN_WIRE_BYTES])calloc((size_t)npe * NQP, GIC_CONN_WIRE_BYTES);
	all = (uint8_t *)calloc((size_t)npe * npe * NQP, GIC_CONN_WIRE_BYTES);
	rc = mine && all ? setup_qps(s, mine) : ENOMEM;
	if (!rc) {
		rc = gic_boot_allgather(s->b, mine, (size_t)npe * NQP * GIC_CONN_WIRE_BYTES, all,
					WAIT_NS);
		if (rc)
			FAIL("allgather of connection records: %s", gic_boot_last_error(s->b));
	}
	if (!rc)
		rc = connect_all(s, all);
	free(mine);
	free(all);
	/* Every half is connected before anyone writes. */
	if (!rc && (rc = gic_boot_barrier(s->b, WAIT_NS)))
		FAIL("barrier after connecting: %s", gic_boot_last_error(s->b));
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
static void put_to(pe *s, int p)
{
	const gic_conn_info *t = &s->theirs[p][0];
	kres *r = &s->res[p * NQP];
	uint64_t t0 = gic_now_ns();

	memset(r, 0, sizeof(*r));
	k_put<<<1, 1, 0, s->stream>>>(&s->d_sq[p * NQP], t->addr + (uint64_t)me * SLICE, t->rkey,
				      s->src + (size_t)p * SLICE, softnic_mr_lkey(s->src_mr), SLICE,
				      t->addr + counter_off(), (uint64_t)me + 1,
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
			"%d's GPU memory in %.1f ms\n", me, dev, SLICE, NATOMIC, p,
			(gic_now_ns() - t0) / 1e6);
}

/* A kernel posts one bad write on QP k to PE p; it must fail with synd/vs. */
static void bad_write(pe *s, int p, int k, uint64_t raddr, uint32_t rkey, uint32_t len,
		      uint8_t synd, uint8_t vs, const char *what)
{
	kres *r = &s->res[p * NQP + k];

	memset(r, 0, sizeof(*r));
	k_bad<<<1, 1, 0, s->stream>>>(&s->d_sq[p * NQP + k], raddr, rkey, len, r);
	if (stream_wait(s, what, 120))
		return;
	if (r->rc != EIO)
		FAIL("%s to PE %d: expected an error CQE, got %s", what, p,
		     r->rc ? strerror(r->rc) : "success");
	else if (r->syndrome != synd || r->vendor != vs)
		FAIL("%s to PE %d: expected syndrome 0x%02x / vendor 0x%02x, got %s", what, p, synd,
		     vs, cqe_text((uint8_t)r->syndrome, (uint8_t)r->vendor));
	else if (!softnic_qp_in_error(s->qp[p][k]))
		FAIL("%s to PE %d: the QP is not in the error state", what, p);
}

/* Checks what the other PEs wrote into this PE's GPU region. */
static void check_received(pe *s)
{
	size_t n = s->region_len + GUARD;
	uint8_t *got = (uint8_t *)malloc(n), *want = (uint8_t *)malloc(SLICE);
	uint64_t counter, expect = 0;

	if (!got || !want || cudaMemcpy(got, s->region, n, cudaMemcpyDeviceToHost) != cudaSuccess) {
		FAIL("reading the region back");
		free(got);
		free(want);
		return;
	}
	for (int src = 0; src < npe; src++) {
		const uint8_t *g = got + (size_t)src * SLICE;

		if (src == me) {
			memset(want, 0, SLICE);
		} else {
			pattern(want, SLICE, src, me);
			expect += (uint64_t)NATOMIC * (uint64_t)(src + 1);
		}
		if (memcmp(g, want, SLICE)) {
			size_t i = 0, bad = 0;

			while (g[i] == want[i])
				i++;
			for (size_t j = i; j < SLICE; j++)
				bad += g[j] != want[j];
			FAIL("slice from PE %d: %zu of %d bytes wrong, first at %zu (0x%02x, "
			     "expected 0x%02x)", src, bad, SLICE, i, g[i], want[i]);
		}
	}
	memcpy(&counter, got + counter_off(), 8);
	if (counter != expect)
		FAIL("atomic counter %llu, expected %llu", (unsigned long long)counter,
		     (unsigned long long)expect);
	for (size_t i = 0; i < GUARD; i++) {
		if (got[s->region_len + i] != 0xa5) {
			FAIL("guard byte %zu after the region was written", i);
			break;
		}
	}
	free(got);
	free(want);
}

/* The old values this PE's ATOMIC_FAs fetched into its GPU memory. */
static void check_fetched(pe *s, int p)
{
	uint64_t f[NATOMIC], step = (uint64_t)me + 1;

	if (cudaMemcpy(f, s->fetched + (size_t)p * NATOMIC, sizeof(f), cudaMemcpyDeviceToHost) !=
	    cudaSuccess) {
		FAIL("reading the fetched values back");
		return;
	}
	for (int k = 0; k < NATOMIC; k++) {
		/* With two PEs this PE is the only adder: exactly k * step. */
		int bad = npe == 2 ? f[k] != (uint64_t)k * step : (k && f[k] < f[k - 1] + step);

		if (bad) {
			FAIL("ATOMIC_FA %d to PE %d fetched %llu (previous %llu, step %llu)", k, p,
			     (unsigned long long)f[k], (unsigned long long)(k ? f[k - 1] : 0),
			     (unsigned long long)step);
			return;
		}
	}
}

static int case_transfer(pe *s)
{
	int32_t mine, *all;
	int rc, passed = 1;

	for (int p = 0; p < npe; p++)
		if (p != me)
			put_to(s, p);
	for (int p = 0; p < npe; p++) {
		const gic_conn_info *t = &s->theirs[p][0];

		if (p == me)
			continue;
		check_fetched(s, p);
		bad_write(s, p, 1, t->addr, t->rkey ^ 0xff, 8, GIC_SYND_REMOTE_ACCESS_ERR,
			  SOFTNIC_VSYND_BAD_RKEY, "write with a bad rkey");
		bad_write(s, p, 2, t->addr + s->region_len - 8, t->rkey, 16,
			  GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_REMOTE_BOUNDS,
			  "write past the region");
	}
	/* Everyone's writes are complete before anyone checks. */
	rc = gic_boot_barrier(s->b, WAIT_NS);
	if (rc)
		FAIL("barrier before checking: %s", gic_boot_last_error(s->b));
	else
		check_received(s);
	mine = failures;
	all = (int32_t *)calloc((size_t)npe, sizeof(*all));
	rc = all ? gic_boot_allgather(s->b, &mine, sizeof(mine), all, WAIT_NS) : ENOMEM;
	if (rc)
		FAIL("allgather of outcomes: %s", gic_boot_last_error(s->b));
	for (int p = 0; p < npe && !rc; p++)
		passed &= all[p] == 0;
	if (me == 0)
		printf("gic-gpu-mpi transfer: %s on %d PEs (%d bytes, %d ATOMIC_FA and 2 error "
		       "checks per pair, GPU regions on both sides)\n",
		       !rc && passed ? "PASSED" : "FAILED", npe, SLICE, NATOMIC);
	free(all);
	return !rc && passed ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* peer_exit */

/* The host posts one 8-byte write of v into PE 1's region at off on QP
 * (1, 0) and waits for it: 0, or the poller's error (EIO: an error CQE). */
static int host_write8(pe *s, uint64_t off, uint64_t v)
{
	gic_sq *sq = &s->sq[1][0];
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, 1, &pos, ORD, gic_now_ns() + WAIT_NS);

	if (rc)
		return rc;
	gic_wqe_write_inline(sq, pos, s->theirs[1][0].addr + off, s->theirs[1][0].rkey, &v, 8,
			     GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, ORD);
	return gic_sq_wait_retired(sq, pos + 1, 0, ORD, gic_now_ns() + WAIT_NS);
}

static int case_peer_exit(pe *s)
{
	gic_sq *sq = &s->sq[1][0];
	uint64_t t0, writes = 0;
	const char *why = "";
	int rc = 0;

	signal(SIGUSR1, SIG_IGN); /* hydra's notice of a failed process */
	/* PE 1's buffer is open here before PE 1 leaves. */
	if (me == 0 && (rc = host_write8(s, 0, 1)))
		FAIL("peer_exit: the first write into PE 1's GPU memory: %s", strerror(rc));
	rc = gic_boot_barrier(s->b, WAIT_NS);
	if (rc) {
		FAIL("peer_exit: barrier before PE 1 leaves: %s", gic_boot_last_error(s->b));
		return 1;
	}
	if (me == 1) {
		fprintf(stderr, "gic-gpu-mpi peer_exit: PE 1 exits now, closing nothing\n");
		_exit(0);
	}
	if (me != 0)
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
	if (rc != EIO)
		FAIL("peer_exit: after %llu writes in %.1f ms: %s instead of an error CQE",
		     (unsigned long long)writes, (gic_now_ns() - t0) / 1e6, strerror(rc));
	else if (sq->err_info.vendor_syndrome != SOFTNIC_VSYND_PEER_GONE ||
		 sq->err_info.syndrome != GIC_SYND_TRANSPORT_RETRY_EXC_ERR)
		FAIL("peer_exit: expected PEER_GONE / TRANSPORT_RETRY_EXC_ERR, got %s",
		     cqe_text(sq->err_info.syndrome, sq->err_info.vendor_syndrome));
	else
		fprintf(stderr, "gic-gpu-mpi peer_exit: PE 0: PE 1 gone (%s) after %llu writes "
			"into its GPU memory, %.1f ms: %s\n", why, (unsigned long long)writes,
			(gic_now_ns() - t0) / 1e6, softnic_qp_error(s->qp[1][0]));
	/* This PE's GPU still works (no sticky error from the vanished
	 * peer's memory). */
	if (cudaMemsetAsync(s->region, 0, 64, s->stream) != cudaSuccess ||
	    stream_wait(s, "a memset after the peer left", 10))
		FAIL("peer_exit: this PE's GPU failed after the peer left: %s",
		     cudaGetErrorString(cudaGetLastError()));
	printf("gic-gpu-mpi peer_exit: %s\n", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "";
	pe s;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&s, 0, sizeof(s));
	if (strcmp(name, "transfer") && strcmp(name, "peer_exit")) {
		fprintf(stderr, "usage: mpiexec -n N %s transfer|peer_exit\n", argv[0]);
		return 2;
	}
	rc = setup(&s, &argc, &argv);
	if (!rc && !strcmp(name, "transfer"))
		rc = case_transfer(&s);
	else if (!rc)
		rc = case_peer_exit(&s);
	if (rc && me <= 0)
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
