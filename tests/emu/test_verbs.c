/*
 * An ordinary verbs program, built against the installed rdma-core headers
 * and libibverbs, run on the emulated device (LD_LIBRARY_PATH=<build>/emu,
 * set by ctest): two RC QPs of one process connected to each other through
 * the RESET -> INIT -> RTR -> RTS transitions, then RDMA write (pointer,
 * inline, with immediate), read, send and receive (with immediate, over
 * two scatter entries), compare-swap and fetch-add, a bad rkey with the
 * flush that follows, argument checks, and completion events (one taken,
 * one never taken, which ibv_destroy_cq does not wait for). Every payload is checked.
 * Prints "test_verbs: N checks, M failed"; exit status 1 on a failure.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "verbs_kit.h"

enum { REGION = 1 << 20 };
#define REMOTE_ALL (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

typedef struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
} side;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* One completion from cq within 5 s; 0 or -1. */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc)
{
	double t0 = now_s();

	while (now_s() - t0 < 5) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return 0;
	}
	return -1;
}

static int open_side(struct ibv_context *ctx, side *s)
{
	struct ibv_qp_init_attr qa;

	s->pd = ibv_alloc_pd(ctx);
	s->cq = s->pd ? ibv_create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	s->buf = calloc(1, REGION);
	s->mr = s->cq && s->buf ? ibv_reg_mr(s->pd, s->buf, REGION,
					     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						     IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC)
				    : NULL;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 128;
	qa.cap.max_recv_wr = 64;
	qa.cap.max_send_sge = 4;
	qa.cap.max_recv_sge = 2;
	qa.cap.max_inline_data = 64;
	s->qp = s->mr ? ibv_create_qp(s->pd, &qa) : NULL;
	return s->qp ? 0 : -1;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131u + seed * 7u) | 1u);
}

/* Posts one WR on a's QP and checks its completion. */
static void post_and_check(side *a, struct ibv_send_wr *wr, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	int rc = ibv_post_send(a->qp, wr, &bad);

	CHECK(rc == 0, "%s: post_send %d", what, rc);
	if (rc)
		return;
	CHECK(poll1(a->cq, &wc) == 0, "%s: no completion", what);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == op && wc.wr_id == wr->wr_id,
	      "%s: status %s, opcode %d, wr_id %llu", what, ibv_wc_status_str(wc.status), wc.opcode,
	      (unsigned long long)wc.wr_id);
}

static void rdma_cases(side *a, side *b)
{
	struct ibv_sge sge = { (uintptr_t)a->buf, 4096, a->mr->lkey };
	struct ibv_send_wr wr;
	uint64_t v;

	memset(&wr, 0, sizeof(wr));
	fill(a->buf, 4096, 1);
	wr.wr_id = 11;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
	wr.wr.rdma.rkey = b->mr->rkey;
	post_and_check(a, &wr, IBV_WC_RDMA_WRITE, "write");
	CHECK(memcmp(b->buf + 8192, a->buf, 4096) == 0, "write payload");
	/* Inline: the source may change right after the post. */
	fill(a->buf, 48, 2);
	memcpy(a->buf + 100, a->buf, 48);
	sge.length = 48;
	wr.wr_id = 12;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 20000;
	post_and_check(a, &wr, IBV_WC_RDMA_WRITE, "inline write");
	CHECK(memcmp(b->buf + 20000, a->buf + 100, 48) == 0, "inline payload");
	/* Read back what the write put there. */
	memset(a->buf + 40000, 0, 4096);
	sge.addr = (uintptr_t)a->buf + 40000;
	sge.length = 4096;
	wr.wr_id = 13;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
	post_and_check(a, &wr, IBV_WC_RDMA_READ, "read");
	CHECK(memcmp(a->buf + 40000, b->buf + 8192, 4096) == 0, "read payload");
	/* Atomics: compare-swap 0 -> 5, then fetch-add 3. */
	memset(b->buf + 64, 0, 8);
	sge.addr = (uintptr_t)a->buf + 50000;
	sge.length = 8;
	wr.wr_id = 14;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = (uintptr_t)b->buf + 64;
	wr.wr.atomic.rkey = b->mr->rkey;
	wr.wr.atomic.compare_add = 0;
	wr.wr.atomic.swap = 5;
	post_and_check(a, &wr, IBV_WC_COMP_SWAP, "compare-swap");
	wr.wr_id = 15;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 3;
	post_and_check(a, &wr, IBV_WC_FETCH_ADD, "fetch-add");
	memcpy(&v, a->buf + 50000, 8);
	CHECK(v == 5, "fetch-add fetched %llu, want 5", (unsigned long long)v);
	memcpy(&v, b->buf + 64, 8);
	CHECK(v == 8, "atomics left %llu, want 8", (unsigned long long)v);
}

/* SEND_WITH_IMM into two receive scatter entries; WRITE_WITH_IMM consumes a
 * receive too. */
static void send_cases(side *a, side *b)
{
	struct ibv_sge rs[2] = { { (uintptr_t)b->buf + 100000, 100, b->mr->lkey },
				 { (uintptr_t)b->buf + 200000, 1000, b->mr->lkey } };
	struct ibv_recv_wr rwr = { .wr_id = 77, .sg_list = rs, .num_sge = 2 }, *rbad;
	struct ibv_sge sge = { (uintptr_t)a->buf + 300000, 700, a->mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	fill(a->buf + 300000, 700, 3);
	CHECK(ibv_post_recv(b->qp, &rwr, &rbad) == 0, "post_recv");
	rwr.wr_id = 78;
	CHECK(ibv_post_recv(b->qp, &rwr, &rbad) == 0, "post_recv 2");
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 21;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(0xabcd);
	wr.send_flags = IBV_SEND_SIGNALED;
	post_and_check(a, &wr, IBV_WC_SEND, "send");
	CHECK(poll1(b->cq, &wc) == 0, "no receive completion");
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && wc.wr_id == 77 &&
	      wc.byte_len == 700 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      be32toh(wc.imm_data) == 0xabcd && wc.qp_num == b->qp->qp_num &&
	      wc.src_qp == a->qp->qp_num,
	      "receive: status %s opcode %d wr_id %llu len %u imm 0x%x", ibv_wc_status_str(wc.status),
	      wc.opcode, (unsigned long long)wc.wr_id, wc.byte_len, be32toh(wc.imm_data));
	CHECK(memcmp(b->buf + 100000, a->buf + 300000, 100) == 0 &&
	      memcmp(b->buf + 200000, a->buf + 300100, 600) == 0, "send payload over two entries");
	wr.wr_id = 22;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 400000;
	wr.wr.rdma.rkey = b->mr->rkey;
	wr.imm_data = htobe32(7);
	post_and_check(a, &wr, IBV_WC_RDMA_WRITE, "write with immediate");
	CHECK(poll1(b->cq, &wc) == 0 && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.wr_id == 78 &&
	      be32toh(wc.imm_data) == 7 && wc.byte_len == 700, "write-imm receive");
	CHECK(memcmp(b->buf + 400000, a->buf + 300000, 700) == 0, "write-imm payload");
	(void)bad;
}

/* A bad rkey fails with REM_ACCESS_ERR; the next WR is flushed. */
static void error_cases(side *a, side *b)
{
	struct ibv_sge sge = { (uintptr_t)a->buf, 8, a->mr->lkey };
	struct ibv_send_wr wr[2], *bad;
	struct ibv_wc wc;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < 2; i++) {
		wr[i].wr_id = 31 + (uint64_t)i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)b->buf;
		wr[i].wr.rdma.rkey = b->mr->rkey ^ (i ? 0 : 0x5500);
	}
	wr[0].next = &wr[1];
	CHECK(ibv_post_send(a->qp, wr, &bad) == 0, "post two");
	CHECK(poll1(a->cq, &wc) == 0 && wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 31,
	      "bad rkey: %s wr_id %llu", ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	CHECK(poll1(a->cq, &wc) == 0 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 32,
	      "flush: %s", ibv_wc_status_str(wc.status));
}

/* Memory the CPU engine could not touch is refused at registration
 * (EFAULT), not at the first WQE; a DMA-BUF region of host memory (a
 * memfd mapped here, its address as the iova) takes an RDMA write. */
static void region_cases(side *a, side *b)
{
	void *none = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fd = memfd_create("gic-emu-dmabuf", 0);
	uint8_t *buf = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_sge sge = { (uintptr_t)a->buf, 4096, a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 61, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };

	errno = 0;
	CHECK(none != MAP_FAILED && !ibv_reg_mr(b->pd, none, 8192, IBV_ACCESS_LOCAL_WRITE) &&
	      errno == EFAULT, "an MR over PROT_NONE pages: errno %d, want EFAULT", errno);
	errno = 0;
	CHECK(!ibv_reg_dmabuf_mr(b->pd, 0, 4096, 0x1000, -1, IBV_ACCESS_LOCAL_WRITE) &&
	      errno == EINVAL, "a DMA-BUF MR with fd -1");
	if (fd >= 0 && !ftruncate(fd, 4096))
		buf = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (buf && buf != MAP_FAILED)
		mr = ibv_reg_dmabuf_mr(b->pd, 0, 4096, (uintptr_t)buf, fd,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr != NULL, "a DMA-BUF MR of host memory: %s", strerror(errno));
	if (mr) {
		fill(a->buf, 4096, 61);
		wr.wr.rdma.remote_addr = (uintptr_t)buf;
		wr.wr.rdma.rkey = mr->rkey;
		post_and_check(a, &wr, IBV_WC_RDMA_WRITE, "write into a DMA-BUF MR");
		CHECK(memcmp(buf, a->buf, 4096) == 0, "DMA-BUF MR payload");
		ibv_dereg_mr(mr);
	}
	if (buf && buf != MAP_FAILED)
		munmap(buf, 4096);
	if (fd >= 0)
		close(fd);
	if (none != MAP_FAILED)
		munmap(none, 8192);
}

static void argument_cases(struct ibv_context *ctx, side *a)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr attr;
	char buf[64];

	errno = 0;
	CHECK(!ibv_reg_mr(a->pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL,
	      "remote write without local write");
	CHECK(!ibv_create_cq(ctx, 0, NULL, NULL, 0) && errno == EINVAL, "CQ of 0 entries");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = a->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 1 << 20;
	CHECK(!ibv_create_qp(a->pd, &qa) && errno == EINVAL, "a send queue too deep");
	qa.cap.max_send_wr = 4;
	qa.qp_type = IBV_QPT_UD;
	CHECK(!ibv_create_qp(a->pd, &qa) && errno == EOPNOTSUPP, "UD (not implemented)");
	qa.qp_type = IBV_QPT_RC;
	{
		struct ibv_qp *fresh = ibv_create_qp(a->pd, &qa);
		struct ibv_send_wr wr, *bad;

		CHECK(fresh != NULL, "fresh QP");
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RTS;
		CHECK(fresh && ibv_modify_qp(fresh, &attr, IBV_QP_STATE) == EINVAL,
		      "RESET to RTS in one step");
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_RDMA_WRITE;
		CHECK(fresh && ibv_post_send(fresh, &wr, &bad) == EINVAL && bad == &wr,
		      "post on a QP in RESET");
		if (fresh)
			ibv_destroy_qp(fresh);
	}
	CHECK(ibv_dealloc_pd(a->pd) != 0, "PD in use");
}

/* One signaled write on a fresh QP pair whose requester completes on cq;
 * the pair is destroyed after its completion. 0 or -1. */
static int one_completion(side *a, side *b, struct ibv_cq *cq, uint16_t lid)
{
	struct ibv_qp_init_attr qa;
	struct ibv_qp *q1, *q2;
	struct ibv_sge sge = { (uintptr_t)a->buf, 64, a->mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct pollfd pf = { cq->channel->fd, POLLIN, 0 };
	int rc;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	q1 = ibv_create_qp(a->pd, &qa);
	qa.send_cq = qa.recv_cq = b->cq;
	q2 = ibv_create_qp(b->pd, &qa);
	rc = q1 && q2 && !kit_connect(q1, q2->qp_num, lid, REMOTE_ALL) &&
		     !kit_connect(q2, q1->qp_num, lid, REMOTE_ALL) ? 0 : -1;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr.wr.rdma.rkey = b->mr->rkey;
	if (!rc)
		rc = ibv_post_send(q1, &wr, &bad) || poll(&pf, 1, 5000) != 1 ? -1 : 0;
	if (q1)
		ibv_destroy_qp(q1);
	if (q2)
		ibv_destroy_qp(q2);
	return rc;
}

/* Completion events: one taken and acknowledged; then one raised but never
 * taken, which ibv_destroy_cq must not wait for (rdma-core drops it). */
static void event_cases(struct ibv_context *ctx, side *a, side *b, uint16_t lid)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ch ? ibv_create_cq(ctx, 16, (void *)0x5eed, ch, 0) : NULL, *got = NULL;
	struct ibv_wc wc;
	void *cq_ctx = NULL;
	double t0;

	CHECK(cq != NULL, "CQ with a channel: %s", strerror(errno));
	if (!cq)
		return;
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "arm");
	CHECK(one_completion(a, b, cq, lid) == 0, "no event for a completion");
	CHECK(ibv_get_cq_event(ch, &got, &cq_ctx) == 0 && got == cq && cq_ctx == (void *)0x5eed,
	      "ibv_get_cq_event");
	ibv_ack_cq_events(cq, 1);
	CHECK(ibv_poll_cq(cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS, "the event's CQE");
	CHECK(ibv_req_notify_cq(cq, 0) == 0, "arm again");
	CHECK(one_completion(a, b, cq, lid) == 0, "no second event");
	t0 = now_s();
	CHECK(ibv_destroy_cq(cq) == 0 && now_s() - t0 < 1,
	      "ibv_destroy_cq with an event never taken: %.1f s", now_s() - t0);
	CHECK(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");
}

int main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	side a, b;
	int n = 0;

	list = ibv_get_device_list(&n);
	CHECK(list && n >= 1, "no device");
	if (!list || n < 1)
		return 1;
	CHECK(!strncmp(ibv_get_device_name(list[0]), "mlx5_", 5), "name %s",
	      ibv_get_device_name(list[0]));
	ctx = ibv_open_device(list[0]);
	CHECK(ctx != NULL, "open");
	if (!ctx)
		return 1;
	CHECK(ibv_query_device(ctx, &da) == 0 && da.vendor_part_id == 4129 &&
	      da.atomic_cap == IBV_ATOMIC_HCA, "device attributes");
	CHECK(ibv_query_port(ctx, 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE && pa.lid == 1,
	      "port attributes");
	if (open_side(ctx, &a) || open_side(ctx, &b)) {
		fprintf(stderr, "test_verbs: objects: %s\n", strerror(errno));
		return 1;
	}
	CHECK(kit_connect(a.qp, b.qp->qp_num, pa.lid, REMOTE_ALL) == 0, "connect a");
	CHECK(kit_connect(b.qp, a.qp->qp_num, pa.lid, REMOTE_ALL) == 0, "connect b");
	rdma_cases(&a, &b);
	send_cases(&a, &b);
	region_cases(&a, &b);
	argument_cases(ctx, &a);
	error_cases(&a, &b);
	event_cases(ctx, &a, &b, pa.lid);
	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	ibv_dereg_mr(a.mr);
	ibv_dereg_mr(b.mr);
	ibv_destroy_cq(a.cq);
	ibv_destroy_cq(b.cq);
	CHECK(ibv_dealloc_pd(a.pd) == 0 && ibv_dealloc_pd(b.pd) == 0, "dealloc");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(a.buf);
	free(b.buf);
	printf("test_verbs: %d checks, %d failed\n", checks, failed);
	return failed ? 1 : 0;
}
