/*
 * gic-gpu-xproc: softnic's GPU engines of two processes on one GPU as RC
 * peers (gic/softnic_gpu_peer.h): the requester's engine moves data
 * straight into the responder process's GPU memory, mapped once through
 * CUDA IPC.
 *
 * The program forks into PE 0 (requester) and PE 1 (responder); each opens
 * a GPU-engine softnic (on device 0 unless --devices), and they swap peer records and QP
 * numbers over a socket pair. Both engines spin at once only under MPS
 * (without it the GPU time-slices the two processes).
 *
 * `gic-gpu-xproc --check`: every operation once, each result checked
 * (exit 1 on any mismatch): an 8-byte inline write, a 4 KiB pointer write,
 * a 4 KiB READ, two fetch-and-adds; then the errors, one QP each: a bad
 * rkey, a write past the region, a SEND (not served across processes), a
 * write to a region PE 1 deregistered, and a write after PE 1 exited
 * (--peer-exit abrupt, the default: with its engine running; closed: after
 * softnic_close). Under MPS an abrupt exit of a process whose kernel runs
 * leaves the other's context with an illegal-address error (MPS does not
 * contain a client that exits without synchronizing); see docs/softnic.md.
 *
 * `--engine B,W` (default 1,1): each process's engine, B blocks of W warps
 * (softnic_gpu_attr). Two engines spin on one GPU; two of 4 x 4 warps made
 * the put+completion row bimodal on the H200 (4.4-5.2 us p50), two of one
 * warp each 4.45-4.54 (results/2026-12-02-h200-xproc/t8).
 *
 * `--devices A,B` (default 0,0): PE 0's process on GPU A, PE 1's on GPU B (two
 * GPUs: the engine on A then writes B's memory through peer access, and no
 * MPS is needed; each process has a GPU of its own).
 *
 * `gic-gpu-xproc [-n N]`: gic lat's two rows between the processes, one GPU
 * thread posting, 8-byte inline writes: put+completion (post, doorbell,
 * CQE) and the round trip (PE 0 writes, PE 1's thread sees it and writes
 * back), p50/p99/max in microseconds; every payload checked. Timed with
 * %globaltimer (32 ns steps on the H200; gic lat times with clock64).
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gic/post.h"
#include "gic/softnic_gpu.h"
#include "gic/softnic_gpu_peer.h"
#include "stats.h"

#define CK(call)                                                                        \
	do {                                                                            \
		cudaError_t e_ = (call);                                                \
		if (e_ != cudaSuccess) {                                                \
			fprintf(stderr, "PE %d: %s:%d: %s: %s\n", pe, __FILE__, __LINE__, \
				#call, cudaGetErrorString(e_));                         \
			exit(1);                                                        \
		}                                                                       \
	} while (0)
#define DL (gic_now_ns() + 2000000000ull)

enum {
	NQ = 6,                     /* QP 0 the good operations, 1..5 one error each */
	REGION = 1 << 20,
	MAX_N = 20000,
	OFF_INL = 0, OFF_WRITE = 64 << 10, OFF_READ = 128 << 10, OFF_FA = 256 << 10,
	OFF_PING = 512 << 10, OFF_LAT = 768 << 10,
	CHUNK = 4096,
	ORDER = GIC_ORDER_FENCE_GPU, /* queues and engine on one GPU (gic lat's row) */
};
enum { OP_INLINE, OP_WRITE, OP_READ, OP_FA, OP_SEND };

static int pe;
static pid_t peer_pid;     /* PE 0: PE 1's process */
static int close_first; /* --peer-exit closed */
static int devices[2];  /* --devices A,B: PE 0's and PE 1's GPU */
static int engine[2] = { 1, 1 }; /* --engine B,W: each engine's blocks and warps per block */

/* What the PEs swap once their objects exist. */
typedef struct pe_info {
	softnic_gpu_peer_rec rec;
	uint32_t qpn[NQ];
	uint32_t rkey, rkey_gone;
	uint64_t addr, addr_gone;
} pe_info;

static __host__ __device__ uint64_t pval(uint64_t i)
{
	return (i * 0x9e3779b97f4a7c15ull) ^ 0x5a5a5a5a00000003ull;
}

/* ------------------------------------------------------------------ */
/* GPU side. */

/* Posts one signaled WQE and waits for its CQE; *rc the wait's result
 * (EIO: an error CQE, whose record lands in *info). */
__global__ void k_op(gic_sq *g, int op, uint64_t raddr, uint32_t rkey, uint64_t laddr,
		     uint32_t lkey, uint32_t len, uint64_t val, int *rc, gic_cqe_info *info)
{
	gic_sq s;
	gic_cq cq;
	uint64_t pos, deadline = DL;
	int r;

	gic_sq_local_begin(&s, &cq, g);
	r = gic_sq_reserve_excl(&s, 1, &pos, ORDER, deadline);
	if (!r) {
		if (op == OP_INLINE)
			gic_wqe_write_inline_u64(&s, pos, raddr, rkey, val, GIC_CTRL_CQ_UPDATE);
		else if (op == OP_WRITE)
			gic_wqe_write(&s, pos, GIC_OPCODE_RDMA_WRITE, raddr, rkey, laddr, lkey, len,
				      GIC_CTRL_CQ_UPDATE, 0);
		else if (op == OP_READ)
			gic_wqe_read(&s, pos, raddr, rkey, laddr, lkey, len, GIC_CTRL_CQ_UPDATE);
		else if (op == OP_FA)
			gic_wqe_atomic_fa(&s, pos, raddr, rkey, val, laddr, lkey, GIC_CTRL_CQ_UPDATE);
		else
			gic_wqe_send(&s, pos, GIC_OPCODE_SEND, laddr, lkey, len, GIC_CTRL_CQ_UPDATE, 0);
		gic_sq_note_signaled(&s, pos + 1, 0);
		gic_sq_publish_excl(&s, ORDER);
		r = gic_sq_wait_retired(&s, s.ready, 0, ORDER, deadline);
	}
	*rc = r;
	*info = s.err_info;
	gic_sq_local_end(g, &s);
}

/* put+completion: n signaled 8-byte inline writes one at a time, each
 * timed from before its reservation to its retirement (ns). */
__global__ void k_putc(gic_sq *g, uint64_t raddr, uint32_t rkey, int n, uint64_t *ns, int *rc)
{
	gic_sq s;
	gic_cq cq;
	int r = 0;

	gic_sq_local_begin(&s, &cq, g);
	for (int i = 0; i < n && !r; i++) {
		uint64_t pos, t0 = gic_now_ns(), deadline = t0 + 2000000000ull;

		r = gic_sq_reserve_excl(&s, 1, &pos, ORDER, deadline);
		if (!r) {
			gic_wqe_write_inline_u64(&s, pos, raddr + (uint64_t)(i % 1024) * 8, rkey, pval(i),
						 GIC_CTRL_CQ_UPDATE);
			gic_sq_note_signaled(&s, pos + 1, 0);
			gic_sq_publish_excl(&s, ORDER);
			r = gic_sq_wait_retired(&s, s.ready, 0, ORDER, deadline);
		}
		ns[i] = gic_now_ns() - t0;
	}
	*rc = r;
	gic_sq_local_end(g, &s);
}

/* The round trip. PE 0 (first) writes i into PE 1's word and waits for i
 * in its own; PE 1 waits, then writes back. Unsignaled writes but every
 * 64th (which the poster retires), as gic lat's rtt. */
__global__ void k_rtt(gic_sq *g, volatile uint64_t *mine, uint64_t raddr, uint32_t rkey, int n,
		      int first, uint64_t *ns, int *rc)
{
	gic_sq s;
	gic_cq cq;
	int r = 0;

	gic_sq_local_begin(&s, &cq, g);
	for (int i = 1; i <= n && !r; i++) {
		uint64_t t0 = gic_now_ns(), deadline = t0 + 2000000000ull, pos;

		if (!first)
			while (*mine < (uint64_t)i && !r)
				if (gic_now_ns() > deadline)
					r = ETIMEDOUT;
		if (!r)
			r = gic_sq_reserve_excl(&s, 1, &pos, ORDER, deadline);
		if (!r) {
			int sig = (i % 64) == 0;

			gic_wqe_write_inline_u64(&s, pos, raddr, rkey, (uint64_t)i,
						 sig ? GIC_CTRL_CQ_UPDATE : 0);
			if (sig)
				gic_sq_note_signaled(&s, pos + 1, 0);
			gic_sq_publish_excl(&s, ORDER);
			if (sig)
				r = gic_sq_wait_retired(&s, s.ready, 0, ORDER, deadline);
		}
		if (first)
			while (*mine < (uint64_t)i && !r)
				if (gic_now_ns() > deadline)
					r = ETIMEDOUT;
		if (first)
			ns[i - 1] = gic_now_ns() - t0;
	}
	*rc = r;
	gic_sq_local_end(g, &s);
}

/* ------------------------------------------------------------------ */
/* Host side. */

/* The socket to the other PE: whole messages, 30 s each at most. */
static void sock_io(int fd, void *buf, size_t n, int out)
{
	size_t done = 0;

	while (done < n) {
		struct pollfd p = { fd, (short)(out ? POLLOUT : POLLIN), 0 };
		ssize_t r;

		if (poll(&p, 1, 30000) != 1) {
			fprintf(stderr, "PE %d: the other PE did not answer within 30 s\n", pe);
			exit(1);
		}
		r = out ? write(fd, (char *)buf + done, n - done) : read(fd, (char *)buf + done, n - done);
		if (r <= 0) {
			fprintf(stderr, "PE %d: the other PE is gone (socket %s)\n", pe,
				r ? strerror(errno) : "closed");
			exit(1);
		}
		done += (size_t)r;
	}
}

/* Reaps PE 1's process, waiting at most 30 s (then it is killed, said).
 * 0 when it exited by itself. */
static int reap_peer(pid_t pid)
{
	uint64_t end = gic_now_ns() + 30000000000ull;

	while (waitpid(pid, NULL, WNOHANG) == 0) {
		if (gic_now_ns() > end) {
			fprintf(stderr, "PE 0: PE 1 (pid %d) did not exit within 30 s: killed\n",
				(int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return ETIMEDOUT;
		}
		usleep(1000);
	}
	return 0;
}

static void sync_peer(int fd)
{
	char c = 's';

	sock_io(fd, &c, 1, 1);
	sock_io(fd, &c, 1, 0);
}

typedef struct pe_state {
	softnic *nic;
	softnic_pd *pd;
	softnic_cq *cq[NQ];
	softnic_qp *qp[NQ];
	softnic_mr *mr, *mr_gone, *mr_late;
	uint8_t *region, *region_gone, *region_late;
	gic_sq *d_sq;       /* device copies of the QPs' views */
	gic_cq *d_cq;
	int *d_rc;
	gic_cqe_info *d_info;
	uint64_t *d_ns;
} pe_state;

static void die_nic(const pe_state *s, const char *what, int rc)
{
	fprintf(stderr, "PE %d: %s: %s (%s)\n", pe, what, strerror(rc), softnic_last_error(s->nic));
	exit(1);
}

/* Every kernel loaded before the engine starts (the lazy-loading trap). */
static void load_kernels(void)
{
	cudaFuncAttributes a;

	CK(cudaFuncGetAttributes(&a, k_op));
	CK(cudaFuncGetAttributes(&a, k_putc));
	CK(cudaFuncGetAttributes(&a, k_rtt));
}

static void pe_open(pe_state *s, pe_info *mine)
{
	softnic_attr attr;
	softnic_gpu_attr gattr;
	gic_sq sq[NQ];
	gic_cq cq[NQ];
	int rc;

	CK(cudaSetDevice(devices[pe]));
	load_kernels();
	CK(cudaMalloc((void **)&s->region, REGION));
	CK(cudaMalloc((void **)&s->region_gone, CHUNK));
	CK(cudaMalloc((void **)&s->region_late, CHUNK)); /* registered after the connect */
	CK(cudaMemset(s->region, 0, REGION));
	CK(cudaMalloc((void **)&s->d_sq, sizeof(gic_sq) * NQ));
	CK(cudaMalloc((void **)&s->d_cq, sizeof(gic_cq) * NQ));
	CK(cudaMalloc((void **)&s->d_rc, sizeof(int)));
	CK(cudaMalloc((void **)&s->d_info, sizeof(gic_cqe_info)));
	CK(cudaMalloc((void **)&s->d_ns, sizeof(uint64_t) * MAX_N));
	CK(cudaDeviceSynchronize());
	memset(&attr, 0, sizeof(attr));
	memset(&gattr, 0, sizeof(gattr));
	gattr.device = devices[pe];
	gattr.blocks = engine[0];
	gattr.warps_per_block = engine[1];
	s->nic = softnic_open_gpu(&attr, &gattr);
	if (!s->nic) {
		fprintf(stderr, "PE %d: softnic_open_gpu: %s\n", pe, strerror(errno));
		exit(1);
	}
	if ((rc = softnic_gpu_peer_enable(s->nic, &mine->rec)))
		die_nic(s, "softnic_gpu_peer_enable", rc);
	s->pd = softnic_pd_alloc(s->nic);
	s->mr = softnic_reg_mr(s->pd, s->region, REGION, SOFTNIC_ACCESS_LOCAL_WRITE |
			       SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_READ |
			       SOFTNIC_ACCESS_REMOTE_ATOMIC);
	s->mr_gone = softnic_reg_mr(s->pd, s->region_gone, CHUNK, SOFTNIC_ACCESS_REMOTE_WRITE);
	if (!s->pd || !s->mr || !s->mr_gone)
		die_nic(s, "PD or MR", errno);
	for (int i = 0; i < NQ; i++) {
		softnic_qp_attr qa;

		memset(&qa, 0, sizeof(qa));
		s->cq[i] = softnic_cq_create(s->nic, 8);
		qa.send_cq = s->cq[i];
		qa.log_sq_bb = 8;
		s->qp[i] = s->cq[i] ? softnic_qp_create(s->pd, &qa) : NULL;
		if (!s->qp[i])
			die_nic(s, "CQ or QP", errno);
		mine->qpn[i] = softnic_qp_num(s->qp[i]);
		softnic_qp_view(s->qp[i], &sq[i], &cq[i]);
		sq[i].cq = &s->d_cq[i]; /* the device copy of the CQ view */
	}
	CK(cudaMemcpy(s->d_sq, sq, sizeof(sq), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(s->d_cq, cq, sizeof(cq), cudaMemcpyHostToDevice));
	mine->rkey = softnic_mr_rkey(s->mr);
	mine->addr = (uint64_t)(uintptr_t)s->region;
	mine->rkey_gone = softnic_mr_rkey(s->mr_gone);
	mine->addr_gone = (uint64_t)(uintptr_t)s->region_gone;
}

/* Both PEs: swap, add the peer, connect every QP. */
static void pe_connect(pe_state *s, int fd, const pe_info *mine, pe_info *theirs)
{
	int peer = -1, rc;

	sock_io(fd, (void *)mine, sizeof(*mine), 1);
	sock_io(fd, theirs, sizeof(*theirs), 0);
	if ((rc = softnic_gpu_peer_add(s->nic, &theirs->rec, &peer)))
		die_nic(s, "softnic_gpu_peer_add", rc);
	for (int i = 0; i < NQ; i++)
		if ((rc = softnic_gpu_peer_connect(s->qp[i], peer, theirs->qpn[i])))
			die_nic(s, "softnic_gpu_peer_connect", rc);
}

/* Runs k_op on QP q; returns its rc with *info. Waits with a time limit. */
static int run_op(pe_state *s, cudaStream_t st, int q, int op, uint64_t raddr, uint32_t rkey,
		  uint64_t loff, uint32_t len, uint64_t val, gic_cqe_info *info)
{
	int rc = -1;
	uint64_t end = gic_now_ns() + 10000000000ull;

	k_op<<<1, 1, 0, st>>>(s->d_sq + q, op, raddr, rkey, (uint64_t)(uintptr_t)(s->region + loff),
			      softnic_mr_lkey(s->mr), len, val, s->d_rc, s->d_info);
	while (cudaStreamQuery(st) == cudaErrorNotReady)
		if (gic_now_ns() > end) {
			fprintf(stderr, "PE %d: an operation kernel did not end within 10 s\n", pe);
			exit(1);
		}
	CK(cudaMemcpyAsync(&rc, s->d_rc, sizeof(rc), cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(info, s->d_info, sizeof(*info), cudaMemcpyDeviceToHost, st));
	CK(cudaStreamSynchronize(st));
	return rc;
}

static int expect_error(pe_state *s, cudaStream_t st, int q, int op, uint64_t raddr, uint32_t rkey,
			uint8_t synd, uint8_t vs, const char *what)
{
	gic_cqe_info info;
	int rc = run_op(s, st, q, op, raddr, rkey, OFF_WRITE, 8, 1, &info);
	int ok = rc == EIO && info.syndrome == synd && info.vendor_syndrome == vs;

	printf("  %-34s %s (rc %d, syndrome 0x%02x/0x%02x, wanted 0x%02x/0x%02x: %s)\n", what,
	       ok ? "ok" : "FAILED", rc, info.syndrome, info.vendor_syndrome, synd, vs,
	       softnic_vsynd_text(info.vendor_syndrome));
	return ok;
}

/* PE 0's checks; PE 1 answers at each sync point. */
static int check_pe0(pe_state *s, int fd, const pe_info *t, cudaStream_t st)
{
	uint8_t buf[CHUNK], want[CHUNK];
	gic_cqe_info info;
	uint64_t got, late[2];
	int ok = 1, rc;

	for (int i = 0; i < CHUNK; i++)
		buf[i] = (uint8_t)pval(i);
	CK(cudaMemcpy(s->region + OFF_WRITE, buf, CHUNK, cudaMemcpyHostToDevice));
	rc = run_op(s, st, 0, OP_INLINE, t->addr + OFF_INL, t->rkey, 0, 8, pval(7), &info);
	printf("  %-34s %s\n", "8-byte inline write", rc ? "FAILED" : "done");
	ok &= !rc;
	rc = run_op(s, st, 0, OP_WRITE, t->addr + OFF_WRITE, t->rkey, OFF_WRITE, CHUNK, 0, &info);
	printf("  %-34s %s\n", "4 KiB pointer write", rc ? "FAILED" : "done");
	ok &= !rc;
	rc = run_op(s, st, 0, OP_READ, t->addr + OFF_READ, t->rkey, OFF_READ, CHUNK, 0, &info);
	CK(cudaMemcpy(buf, s->region + OFF_READ, CHUNK, cudaMemcpyDeviceToHost));
	for (int i = 0; i < CHUNK; i++)
		want[i] = (uint8_t)(pval(i) >> 8);
	printf("  %-34s %s\n", "4 KiB READ, data checked", rc || memcmp(buf, want, CHUNK) ? "FAILED" :
	       "ok");
	ok &= !rc && !memcmp(buf, want, CHUNK);
	for (int k = 0; k < 2; k++) {
		rc = run_op(s, st, 0, OP_FA, t->addr + OFF_FA, t->rkey, OFF_FA, 8, 5, &info);
		CK(cudaMemcpy(&got, s->region + OFF_FA, 8, cudaMemcpyDeviceToHost));
		printf("  %-34s %s (old value %llu, wanted %d)\n", "fetch-and-add 5",
		       !rc && got == 1000u + 5u * k ? "ok" : "FAILED", (unsigned long long)got,
		       1000 + 5 * k);
		ok &= !rc && got == 1000u + 5u * k;
	}
	/* A region PE 1 registers after the connect: mapped here by the sync. */
	sock_io(fd, late, sizeof(late), 0);
	rc = softnic_gpu_peer_sync(s->nic);
	if (!rc)
		rc = run_op(s, st, 0, OP_INLINE, late[1], (uint32_t)late[0], 0, 8, pval(11), &info);
	printf("  %-34s %s\n", "write to a region registered later", rc ? "FAILED" : "done");
	ok &= !rc;
	ok &= expect_error(s, st, 1, OP_INLINE, t->addr, t->rkey + 1, GIC_SYND_REMOTE_ACCESS_ERR,
			   SOFTNIC_VSYND_BAD_RKEY, "bad rkey");
	ok &= expect_error(s, st, 2, OP_INLINE, t->addr + REGION - 4, t->rkey,
			   GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_REMOTE_BOUNDS, "write past the region");
	ok &= expect_error(s, st, 3, OP_SEND, 0, 0, GIC_SYND_REMOTE_OP_ERR, SOFTNIC_VSYND_PEER_RECV,
			   "SEND across processes");
	rc = run_op(s, st, 4, OP_INLINE, t->addr_gone, t->rkey_gone, 0, 8, 1, &info);
	printf("  %-34s %s\n", "write to a region, then", rc ? "FAILED" : "done");
	ok &= !rc;
	sync_peer(fd); /* PE 1 deregisters region_gone between these two */
	sync_peer(fd);
	ok &= expect_error(s, st, 4, OP_INLINE, t->addr_gone, t->rkey_gone,
			   GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_BAD_RKEY,
			   "... again once deregistered");
	sync_peer(fd); /* PE 1 checks its memory, then exits */
	sock_io(fd, &rc, sizeof(rc), 0);
	printf("  %-34s %s\n", "PE 1's memory (three writes, FA)", rc ? "ok" : "FAILED");
	ok &= rc;
	ok &= !reap_peer(peer_pid);
	usleep(100000); /* the peer thread's tick: 2 ms */
	ok &= expect_error(s, st, 5, OP_INLINE, t->addr, t->rkey, GIC_SYND_TRANSPORT_RETRY_EXC_ERR,
			   SOFTNIC_VSYND_PEER_GONE, close_first ? "write after PE 1 closed and exited" :
			   "write after PE 1 exited");
	return ok;
}

static void check_pe1(pe_state *s, int fd)
{
	uint8_t buf[CHUNK], want[CHUNK];
	uint64_t v = 1000, inl = 0, fa = 0, lv = 0, late[2];
	int ok;

	for (int i = 0; i < CHUNK; i++)
		buf[i] = (uint8_t)(pval(i) >> 8);
	CK(cudaMemcpy(s->region + OFF_READ, buf, CHUNK, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(s->region + OFF_FA, &v, 8, cudaMemcpyHostToDevice));
	sync_peer(fd); /* ready */
	s->mr_late = softnic_reg_mr(s->pd, s->region_late, CHUNK, SOFTNIC_ACCESS_REMOTE_WRITE);
	if (!s->mr_late)
		die_nic(s, "reg_mr (late)", errno);
	late[0] = softnic_mr_rkey(s->mr_late);
	late[1] = (uint64_t)(uintptr_t)s->region_late;
	sock_io(fd, late, sizeof(late), 1);
	sync_peer(fd);
	softnic_dereg_mr(s->mr_gone);
	sync_peer(fd);
	sync_peer(fd); /* PE 0's operations are done */
	CK(cudaMemcpy(&inl, s->region + OFF_INL, 8, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&fa, s->region + OFF_FA, 8, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&lv, s->region_late, 8, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(buf, s->region + OFF_WRITE, CHUNK, cudaMemcpyDeviceToHost));
	for (int i = 0; i < CHUNK; i++)
		want[i] = (uint8_t)pval(i);
	ok = inl == pval(7) && fa == 1010 && lv == pval(11) && !memcmp(buf, want, CHUNK);
	if (!ok)
		fprintf(stderr, "PE 1: inline 0x%llx (wanted 0x%llx), FA %llu (1010), late 0x%llx "
			"(0x%llx), write %s\n", (unsigned long long)inl, (unsigned long long)pval(7),
			(unsigned long long)fa, (unsigned long long)lv, (unsigned long long)pval(11),
			memcmp(buf, want, CHUNK) ? "differs" : "ok");
	sock_io(fd, &ok, sizeof(ok), 1);
	if (close_first)
		softnic_close(s->nic); /* the engine stops, the peer sees the close */
	_exit(0); /* else while the engine runs: the peer must find it gone */
}

/* Waits for a kernel with a time limit; its rc. */
static int wait_kernel(cudaStream_t st, const pe_state *s, uint64_t limit_ns)
{
	uint64_t end = gic_now_ns() + limit_ns;
	int rc = -1;

	while (cudaStreamQuery(st) == cudaErrorNotReady)
		if (gic_now_ns() > end) {
			fprintf(stderr, "PE %d: a latency kernel did not end in time\n", pe);
			exit(1);
		}
	CK(cudaMemcpy(&rc, s->d_rc, sizeof(rc), cudaMemcpyDeviceToHost));
	return rc;
}

static void print_row(const char *name, const uint64_t *ns, int n)
{
	gic_samples us;
	gic_summary sm;

	gic_samples_init(&us, (size_t)n);
	for (int i = 0; i < n; i++)
		gic_samples_add(&us, (double)ns[i] / 1e3);
	if (!gic_summarize(&us, 0, &sm))
		printf("%-28s n %zu p50 %.3f p99 %.3f max %.3f us\n", name, sm.count, sm.p50, sm.p99,
		       sm.max);
	gic_samples_free(&us);
}

/* gic lat's two rows between the processes. */
static int lat(pe_state *s, int fd, const pe_info *t, cudaStream_t st, int n)
{
	uint64_t *ns = (uint64_t *)malloc(sizeof(uint64_t) * (size_t)n), got[1024];
	int rc, bad = 0;

	sync_peer(fd);
	if (pe == 0) {
		k_putc<<<1, 1, 0, st>>>(s->d_sq, t->addr + OFF_LAT, t->rkey, n, s->d_ns, s->d_rc);
		rc = wait_kernel(st, s, 60000000000ull);
		CK(cudaMemcpy(ns, s->d_ns, sizeof(uint64_t) * (size_t)n, cudaMemcpyDeviceToHost));
		if (rc) {
			fprintf(stderr, "PE 0: put+completion failed: %d\n", rc);
			return 1;
		}
		print_row("put+completion (8 B inline)", ns, n);
	}
	sync_peer(fd);
	if (pe == 1) { /* the last 1024 writes' values */
		CK(cudaMemcpy(got, s->region + OFF_LAT, sizeof(got), cudaMemcpyDeviceToHost));
		for (int i = n > 1024 ? n - 1024 : 0; i < n; i++)
			bad += got[i % 1024] != pval(i);
		sock_io(fd, &bad, sizeof(bad), 1);
	} else {
		sock_io(fd, &bad, sizeof(bad), 0);
		printf("payloads checked by PE 1: %s\n", bad ? "FAILED" : "ok");
	}
	sync_peer(fd);
	k_rtt<<<1, 1, 0, st>>>(s->d_sq, (volatile uint64_t *)(s->region + OFF_PING),
			       t->addr + OFF_PING, t->rkey, n, pe == 0, s->d_ns, s->d_rc);
	rc = wait_kernel(st, s, 60000000000ull);
	if (pe == 0) {
		CK(cudaMemcpy(ns, s->d_ns, sizeof(uint64_t) * (size_t)n, cudaMemcpyDeviceToHost));
		if (!rc)
			print_row("round trip (8 B inline)", ns, n);
	}
	if (rc)
		fprintf(stderr, "PE %d: round trip failed: %d\n", pe, rc);
	free(ns);
	sync_peer(fd);
	return rc || bad;
}

int main(int argc, char **argv)
{
	int check = 0, n = 2000, sv[2], ok = 1;
	pe_state s;
	pe_info mine, theirs;
	cudaStream_t st;
	pid_t child;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--check"))
			check = 1;
		else if (!strcmp(argv[i], "--devices") && i + 1 < argc &&
			 sscanf(argv[i + 1], "%d,%d", &devices[0], &devices[1]) == 2 &&
			 devices[0] >= 0 && devices[1] >= 0)
			i++;
		else if (!strcmp(argv[i], "--engine") && i + 1 < argc &&
			 sscanf(argv[i + 1], "%d,%d", &engine[0], &engine[1]) == 2 &&
			 engine[0] >= 1 && engine[1] >= 1 && engine[1] <= 32)
			i++;
		else if (!strcmp(argv[i], "--peer-exit") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "abrupt") || !strcmp(argv[i + 1], "closed")))
			close_first = !strcmp(argv[++i], "closed");
		else if (!strcmp(argv[i], "-n") && i + 1 < argc && atoi(argv[i + 1]) > 0 &&
			 atoi(argv[i + 1]) <= MAX_N)
			n = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: gic-gpu-xproc [--check [--peer-exit abrupt|closed]] "
				"[-n 1..%d] [--devices A,B] [--engine BLOCKS,WARPS]\n", MAX_N);
			return 2;
		}
	}
	setenv("CUDA_MODULE_LOADING", "EAGER", 1);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	child = fork(); /* before any CUDA call */
	if (child < 0) {
		perror("fork");
		return 1;
	}
	pe = child == 0;
	peer_pid = child;
	close(sv[pe ? 0 : 1]);
	memset(&s, 0, sizeof(s));
	memset(&mine, 0, sizeof(mine));
	pe_open(&s, &mine);
	pe_connect(&s, sv[pe], &mine, &theirs);
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	if (check) {
		if (pe == 1)
			check_pe1(&s, sv[1]); /* exits */
		printf("gic-gpu-xproc --check (two processes, GPU engines on devices %d and %d):\n",
		       devices[0], devices[1]);
		sync_peer(sv[0]);
		ok = check_pe0(&s, sv[0], &theirs, st);
		printf("%s\n", ok ? "all checks passed" : "CHECKS FAILED");
	} else {
		ok = !lat(&s, sv[pe], &theirs, st, n);
	}
	softnic_close(s.nic);
	if (pe == 0 && !check && reap_peer(child))
		ok = 0;
	return ok ? 0 : 1;
}
