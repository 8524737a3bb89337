/*
 * gic-emu-devmem: GPU memory in MRs of the emulated device on softnic's
 * CPU engine (gic/softnic_devmem.h), as NVSHMEM's IBRC transport uses it:
 * two processes (forked before either touches CUDA) on one GPU, each with
 * a GPU buffer registered as verbs MRs, and an RC QP pair between them
 * through softnic's wire. Plain verbs, run under build/gic-emu.
 *
 * Checked, every byte through cudaMemcpy to the host:
 *   - RDMA writes of 1 B to 1 MiB from GPU memory into the peer's GPU
 *     memory, read back with RDMA READ into GPU memory, compared;
 *   - an inline write (host data) into GPU memory;
 *   - 8-byte fetch-adds and a compare-swap on a counter in the peer's GPU
 *     memory, old values landing in GPU memory; the final value checked
 *     by the owner;
 *   - the same writes between two QPs of one process (NVSHMEM's own PE);
 *   - both allocations NVSHMEM makes: cudaMalloc (ibv_reg_mr) and a VMM
 *     mapping (cuMemCreate/cuMemMap) registered through ibv_reg_dmabuf_mr
 *     with the fd of cuMemGetHandleForAddressRange and the page-aligned
 *     base as iova.
 * Every wait has a 10 s limit.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "verbs_kit.h"

enum {
	DM_BYTES = 4 << 20, /* dst at 0, src at 1 MiB, read-back at 2 MiB, counter at 3 MiB */
	DM_SRC = 1 << 20,
	DM_BACK = 2 << 20,
	DM_COUNTER = 3 << 20,
	DM_RESULT = DM_COUNTER + 64,
	DM_ADDS = 16,
};

static const size_t dm_sizes[] = { 1, 100, 4096, 65537, 1 << 20 };

typedef struct dm_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2]; /* [1]: the loopback partner of [0] in one process */
	struct ibv_mr *mr;
	uint8_t *gpu;         /* DM_BYTES of GPU memory */
	CUmemGenericAllocationHandle vmm;
	int use_vmm, fd;
} dm_side;

typedef struct dm_info {
	uint32_t qpn, rkey;
	uint16_t lid;
	uint64_t addr;
} dm_info;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void xfer(int fd, void *p, size_t n, int out)
{
	uint8_t *b = (uint8_t *)p;

	while (n) {
		ssize_t r = out ? write(fd, b, n) : read(fd, b, n);

		if (r <= 0) {
			fprintf(stderr, "gic-emu-devmem: socket %s failed (peer gone?)\n",
				out ? "write" : "read");
			exit(2);
		}
		b += r;
		n -= (size_t)r;
	}
}

/* DM_BYTES of VMM memory (as NVSHMEM's heap), mapped read-write here. */
static int vmm_alloc(dm_side *s)
{
	CUmemAllocationProp p;
	CUmemAccessDesc a;
	CUdeviceptr va = 0;
	size_t gran = 0;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = 0;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	p.allocFlags.gpuDirectRDMACapable = 1;
	if (cuMemGetAllocationGranularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ||
	    DM_BYTES % gran || cuMemCreate(&s->vmm, DM_BYTES, &p, 0) ||
	    cuMemAddressReserve(&va, DM_BYTES, gran, 0, 0) || cuMemMap(va, DM_BYTES, 0, s->vmm, 0))
		return 1;
	a.location = p.location;
	a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if (cuMemSetAccess(va, DM_BYTES, &a, 1))
		return 1;
	s->gpu = (uint8_t *)(uintptr_t)va;
	return 0;
}

/* The buffer's MR: ibv_reg_mr for cudaMalloc memory; for VMM memory a
 * DMA-BUF MR of the base's page range, as NVSHMEM registers its heap. */
static struct ibv_mr *register_gpu(dm_side *s)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int fd = -1;
	struct ibv_mr *mr;

	if (!s->use_vmm)
		return ibv_reg_mr(s->pd, s->gpu, DM_BYTES, access);
	if (cuMemGetHandleForAddressRange(&fd, (CUdeviceptr)(uintptr_t)s->gpu, DM_BYTES,
					  CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0)) {
		fprintf(stderr, "gic-emu-devmem: cuMemGetHandleForAddressRange failed\n");
		return NULL;
	}
	mr = ibv_reg_dmabuf_mr(s->pd, 0, DM_BYTES, (uint64_t)(uintptr_t)s->gpu, fd, access);
	close(fd);
	return mr;
}

static int side_open(dm_side *s)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qa;

	if (!l || !l[0] || !(s->ctx = ibv_open_device(l[0])))
		return 1;
	ibv_free_device_list(l);
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	if (!s->pd || !s->cq)
		return 1;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 64;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = 128;
	for (int i = 0; i < 2; i++)
		if (!(s->qp[i] = ibv_create_qp(s->pd, &qa)))
			return 1;
	if (cudaSetDevice(0) || cuInit(0))
		return 1;
	if (s->use_vmm ? vmm_alloc(s) : cudaMalloc((void **)&s->gpu, DM_BYTES) != cudaSuccess)
		return 1;
	if (cudaMemset(s->gpu, 0, DM_BYTES) != cudaSuccess || cudaDeviceSynchronize())
		return 1;
	s->mr = register_gpu(s);
	return !s->mr;
}

static dm_info side_info(const dm_side *s, int qp)
{
	struct ibv_port_attr pa;
	dm_info i;

	memset(&pa, 0, sizeof(pa));
	ibv_query_port(s->ctx, 1, &pa);
	i.qpn = s->qp[qp]->qp_num;
	i.rkey = s->mr->rkey;
	i.lid = pa.lid;
	i.addr = (uint64_t)(uintptr_t)s->gpu;
	return i;
}

/* Posts one signaled WR and waits for its completion. 0 or a message. */
static const char *post_wait(dm_side *s, int qp, struct ibv_send_wr *wr)
{
	static char why[128];
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	double end = now_s() + 10;
	int n;

	wr->send_flags |= IBV_SEND_SIGNALED;
	if (ibv_post_send(s->qp[qp], wr, &bad))
		return "ibv_post_send failed";
	while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0)
		if (now_s() > end)
			return "no completion within 10 s";
	if (n < 0)
		return "ibv_poll_cq failed";
	if (wc.status != IBV_WC_SUCCESS) {
		snprintf(why, sizeof(why), "completion status %s", ibv_wc_status_str(wc.status));
		return why;
	}
	return NULL;
}

/* One RDMA op of len bytes between local GPU offset loff and remote raddr. */
static const char *rdma(dm_side *s, int qp, enum ibv_wr_opcode op, size_t loff, uint64_t raddr,
			uint32_t rkey, size_t len)
{
	struct ibv_sge g = { (uint64_t)(uintptr_t)(s->gpu + loff), (uint32_t)len, s->mr->lkey };
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return post_wait(s, qp, &wr);
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 151u + seed * 13u + (i >> 9));
}

/* Writes each size from GPU memory to the peer's GPU memory, reads it back
 * into GPU memory, compares on the host. */
static void writes_and_reads(dm_side *s, int qp, const dm_info *peer, const char *who)
{
	uint8_t *want = (uint8_t *)malloc(DM_SRC), *got = (uint8_t *)malloc(DM_SRC);

	for (size_t k = 0; k < sizeof(dm_sizes) / sizeof(dm_sizes[0]) && want && got; k++) {
		size_t len = dm_sizes[k];
		const char *e;

		pattern(want, len, (unsigned)k + 7u * (unsigned)qp);
		cudaMemcpy(s->gpu + DM_SRC, want, len, cudaMemcpyHostToDevice);
		cudaMemset(s->gpu + DM_BACK, 0xee, len);
		cudaDeviceSynchronize();
		e = rdma(s, qp, IBV_WR_RDMA_WRITE, DM_SRC, peer->addr, peer->rkey, len);
		CHECK(!e, "%s: a %zu-byte write from GPU memory: %s", who, len, e);
		e = e ? e : rdma(s, qp, IBV_WR_RDMA_READ, DM_BACK, peer->addr, peer->rkey, len);
		CHECK(!e, "%s: a %zu-byte read into GPU memory: %s", who, len, e);
		cudaMemcpy(got, s->gpu + DM_BACK, len, cudaMemcpyDeviceToHost);
		CHECK(!e && !memcmp(want, got, len), "%s: %zu bytes written then read back differ",
		      who, len);
	}
	free(want);
	free(got);
}

/* An inline write, DM_ADDS fetch-adds and a compare-swap on the peer's
 * counter; the old values land in GPU memory. */
static void inline_and_atomics(dm_side *s, const dm_info *peer)
{
	struct ibv_sge g = { (uint64_t)(uintptr_t)(s->gpu + DM_RESULT), 8, s->mr->lkey };
	char text[] = "inline into GPU memory";
	struct ibv_sge tg = { (uint64_t)(uintptr_t)text, sizeof(text), 0 };
	struct ibv_send_wr wr;
	uint64_t old = 0;
	const char *e;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &tg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_INLINE;
	wr.wr.rdma.remote_addr = peer->addr + DM_COUNTER + 128;
	wr.wr.rdma.rkey = peer->rkey;
	e = post_wait(s, 0, &wr);
	CHECK(!e, "an inline write into GPU memory: %s", e);
	for (int k = 0; k < DM_ADDS; k++) {
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &g;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = peer->addr + DM_COUNTER;
		wr.wr.atomic.rkey = peer->rkey;
		wr.wr.atomic.compare_add = 3;
		e = post_wait(s, 0, &wr);
		cudaMemcpy(&old, s->gpu + DM_RESULT, 8, cudaMemcpyDeviceToHost);
		CHECK(!e && old == 3ull * (uint64_t)k, "fetch-add %d on GPU memory: %s, old %llu", k,
		      e ? e : "done", (unsigned long long)old);
	}
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = peer->addr + DM_COUNTER;
	wr.wr.atomic.rkey = peer->rkey;
	wr.wr.atomic.compare_add = 3 * DM_ADDS;
	wr.wr.atomic.swap = 0xfeedULL;
	e = post_wait(s, 0, &wr);
	cudaMemcpy(&old, s->gpu + DM_RESULT, 8, cudaMemcpyDeviceToHost);
	CHECK(!e && old == 3ull * DM_ADDS, "compare-swap on GPU memory: %s, old %llu",
	      e ? e : "done", (unsigned long long)old);
}

/* The peer's view of what the requester did to its memory. */
static void owner_checks(dm_side *s)
{
	uint8_t want[1 << 12], got[1 << 12];
	uint64_t counter = 0;
	char text[64];

	/* The last write of the cross-process round: its first 4 KiB. */
	pattern(want, sizeof(want), (unsigned)(sizeof(dm_sizes) / sizeof(dm_sizes[0]) - 1));
	cudaMemcpy(got, s->gpu, sizeof(got), cudaMemcpyDeviceToHost);
	CHECK(!memcmp(want, got, sizeof(got)), "owner: its GPU memory does not hold the last write");
	cudaMemcpy(&counter, s->gpu + DM_COUNTER, 8, cudaMemcpyDeviceToHost);
	CHECK(counter == 0xfeedULL, "owner: counter %llu, wanted 0xfeed after the atomics",
	      (unsigned long long)counter);
	cudaMemcpy(text, s->gpu + DM_COUNTER + 128, 23, cudaMemcpyDeviceToHost);
	CHECK(!memcmp(text, "inline into GPU memory", 23), "owner: the inline write is missing");
}

static int run_side(int fd, int requester, int use_vmm)
{
	dm_side s;
	dm_info me, peer, self;
	uint8_t done = 0;

	memset(&s, 0, sizeof(s));
	s.use_vmm = use_vmm;
	if (side_open(&s)) {
		fprintf(stderr, "gic-emu-devmem: %s: setup failed (%s)\n",
			requester ? "requester" : "owner", strerror(errno));
		return 2;
	}
	me = side_info(&s, 0);
	self = side_info(&s, 1);
	xfer(fd, &me, sizeof(me), 1);
	xfer(fd, &peer, sizeof(peer), 0);
	CHECK(!kit_connect(s.qp[0], peer.qpn, peer.lid, 0xf), "connect to the peer process");
	CHECK(!kit_connect(s.qp[1], self.qpn, self.lid, 0xf), "connect QP 1 to itself");
	xfer(fd, &done, 1, 1); /* connected */
	xfer(fd, &done, 1, 0);
	if (requester) {
		writes_and_reads(&s, 0, &peer, "across processes");
		inline_and_atomics(&s, &peer);
		xfer(fd, &done, 1, 1);
		xfer(fd, &done, 1, 0); /* the owner checked */
		/* Now into its own memory, through the QP connected to itself. */
		writes_and_reads(&s, 1, &self, "loopback QP");
	} else {
		xfer(fd, &done, 1, 0);
		owner_checks(&s);
		xfer(fd, &done, 1, 1);
	}
	printf("gic-emu-devmem: %s (%s): %u checks, %u failed\n",
	       requester ? "requester" : "owner", use_vmm ? "VMM + DMA-BUF MR" : "cudaMalloc",
	       (unsigned)checks, (unsigned)failed);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	int vmm = argc > 1 && !strcmp(argv[1], "vmm"), sv[2], st = 0, rc;
	pid_t pid;

	if (argc > 1 && !vmm && strcmp(argv[1], "malloc")) {
		fprintf(stderr, "usage: gic-emu-devmem [malloc|vmm]\n");
		return 2;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	pid = fork(); /* before either process touches CUDA */
	if (pid < 0)
		return 2;
	if (pid == 0) {
		close(sv[0]);
		_exit(run_side(sv[1], 0, vmm));
	}
	close(sv[1]);
	rc = run_side(sv[0], 1, vmm);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		rc = 1;
	printf("gic-emu-devmem: %s\n", rc ? "FAILED" : "passed");
	return rc;
}
