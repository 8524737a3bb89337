/*
 * Queues in a parent domain's memory on the emulated device: the
 * allocator is asked for what rdma-core's mlx5 provider asks it for (a QP
 * buffer and a doorbell record per QP, a CQ buffer and record per CQ, an
 * SRQ buffer and record per SRQ, with their resource types), the queues
 * live there (mlx5dv_init_obj points into it), writes and sends into a
 * receive queue and an SRQ carry every payload intact, and destroy gives
 * every buffer back through free, once, with its type. Memory the
 * allocator hands that softnic cannot use (unreadable, read-only,
 * misaligned) fails the create with EFAULT or EINVAL and is given back.
 * Built against the installed rdma-core, run with LD_LIBRARY_PATH=<build>/emu.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "verbs_kit.h"

enum { MAXBUF = 64, BUF = 1 << 16, MSG = 700, WRITES = 300, DEADLINE_S = 10 };

/* What the allocator handed, and what came back. */
typedef struct handed {
	void *p;
	size_t size, align;
	uint64_t type;
	int freed;
	int foreign;     /* memory from mmap (refusal cases), not aligned_alloc */
} handed;

typedef struct alloc_log {
	struct ibv_pd *pd;   /* the parent domain the calls must name */
	handed h[MAXBUF];
	int n, bad_calls;
	int mode;            /* 0 memory, 1 default for DBRs, 2 PROT_NONE, 3 read-only, 4 misaligned */
} alloc_log;

static void *mapped(size_t size, int prot)
{
	void *p = mmap(NULL, size, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void *q_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	alloc_log *l = ctx;
	handed *h;
	uint8_t *p;

	l->bad_calls += pd != l->pd || !size || !align || (align & (align - 1)) || l->n == MAXBUF;
	if (l->n == MAXBUF)
		return NULL;
	if (l->mode == 1 && type == MLX5DV_RES_TYPE_DBR)
		return IBV_ALLOCATOR_USE_DEFAULT;
	h = &l->h[l->n++];
	*h = (handed){ .size = size, .align = align, .type = type };
	if (l->mode == 2 || l->mode == 3) {
		h->foreign = 1;
		h->p = mapped(size, l->mode == 2 ? PROT_NONE : PROT_READ);
		return h->p;
	}
	if (align < 64)
		align = 64;
	/* 64 bytes to spare: mode 4 hands p + 8. */
	p = aligned_alloc(align, (size + 64 + align - 1) / align * align);
	if (p) /* garbage (op_own 0x5a reads as a done CQE): softnic must initialise it */
		memset(p, 0x5a, size + 64);
	h->p = p && l->mode == 4 ? p + 8 : p;
	return h->p;
}

static void q_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	alloc_log *l = ctx;

	l->bad_calls += pd != l->pd;
	for (int i = 0; i < l->n; i++) {
		handed *h = &l->h[i];

		if (h->p != ptr || h->freed)
			continue;
		h->freed = 1;
		l->bad_calls += h->type != type;
		if (h->foreign)
			munmap(ptr, h->size);
		else
			free(l->mode == 4 ? (uint8_t *)ptr - 8 : ptr);
		return;
	}
	l->bad_calls++; /* freed twice, or never handed */
}

/* How many buffers of type were handed (and how many of them are back). */
static int count(const alloc_log *l, uint64_t type, int *back)
{
	int n = 0;

	*back = 0;
	for (int i = 0; i < l->n; i++)
		if (l->h[i].type == type) {
			n++;
			*back += l->h[i].freed;
		}
	return n;
}

/* 1 when [p, p + len) lies in a buffer the allocator handed of type. */
static int inside(const alloc_log *l, const void *p, size_t len, uint64_t type)
{
	for (int i = 0; i < l->n; i++) {
		const uint8_t *b = l->h[i].p;

		if (l->h[i].type == type && (const uint8_t *)p >= b &&
		    (const uint8_t *)p + len <= b + l->h[i].size)
			return 1;
	}
	return 0;
}

static struct ibv_pd *parent_of(struct ibv_context *ctx, struct ibv_pd *pd, alloc_log *l)
{
	struct ibv_parent_domain_init_attr a = {
		.pd = pd, .comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
				       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = q_alloc, .free = q_free, .pd_context = l,
	};

	l->pd = ibv_alloc_parent_domain(ctx, &a);
	return l->pd;
}

/* ------------------------------------------------------------------ */
/* The objects: a -> b (b receives into its own RQ), c -> d (d receives
 * from the SRQ), every queue on the parent domain. */

typedef struct world {
	struct ibv_context *ctx;
	struct ibv_pd *pd, *par;
	struct ibv_cq *scq, *rcq;
	struct ibv_srq *srq;
	struct ibv_qp *a, *b, *c, *d;
	struct ibv_mr *mr;
	uint8_t *src, *dst;      /* one registered region: src, then dst */
} world;

static struct ibv_cq *parent_cq(world *w, int cqe)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = (uint32_t)cqe, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
					  .parent_domain = w->par };
	struct ibv_cq_ex *x = ibv_create_cq_ex(w->ctx, &ca);

	return x ? ibv_cq_ex_to_cq(x) : NULL;
}

static struct ibv_qp *make_qp(world *w, struct ibv_srq *srq, uint32_t recvs)
{
	struct ibv_qp_init_attr a = {
		.send_cq = w->scq, .recv_cq = w->rcq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = recvs, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
	};

	return ibv_create_qp(w->par, &a);
}

static int world_open(world *w, alloc_log *l)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 31, .max_sge = 1 } };
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	memset(w, 0, sizeof(*w));
	w->ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	ibv_free_device_list(list);
	w->pd = w->ctx ? ibv_alloc_pd(w->ctx) : NULL;
	if (!w->pd || !parent_of(w->ctx, w->pd, l))
		return ENODEV;
	w->par = l->pd;
	w->scq = parent_cq(w, 63);
	w->rcq = parent_cq(w, 63);
	w->srq = ibv_create_srq(w->par, &sa);
	if (!w->scq || !w->rcq || !w->srq)
		return errno ? errno : ENOMEM;
	w->a = make_qp(w, NULL, 0);
	w->b = make_qp(w, NULL, 16);
	w->c = make_qp(w, NULL, 0);
	w->d = make_qp(w, w->srq, 0);
	w->src = calloc(2, BUF); /* src, then dst: one region */
	w->dst = w->src ? w->src + BUF : NULL;
	w->mr = w->src ? ibv_reg_mr(w->pd, w->src, 2 * BUF, access) : NULL;
	if (!w->a || !w->b || !w->c || !w->d || !w->mr)
		return errno ? errno : ENOMEM;
	if (kit_connect(w->a, w->b->qp_num, 1, access) || kit_connect(w->b, w->a->qp_num, 1, access) ||
	    kit_connect(w->c, w->d->qp_num, 1, access) || kit_connect(w->d, w->c->qp_num, 1, access))
		return ENOTCONN;
	return 0;
}

/* Destroys everything; each call must succeed. */
static void world_close(world *w)
{
	struct ibv_qp *qps[4] = { w->a, w->b, w->c, w->d };

	for (int i = 0; i < 4; i++)
		if (qps[i])
			CHECK(ibv_destroy_qp(qps[i]) == 0, "destroy QP %d", i);
	if (w->srq)
		CHECK(ibv_destroy_srq(w->srq) == 0, "destroy SRQ");
	if (w->scq)
		CHECK(ibv_destroy_cq(w->scq) == 0, "destroy send CQ");
	if (w->rcq)
		CHECK(ibv_destroy_cq(w->rcq) == 0, "destroy receive CQ");
	if (w->mr)
		CHECK(ibv_dereg_mr(w->mr) == 0, "dereg");
	if (w->par)
		CHECK(ibv_dealloc_pd(w->par) == 0, "dealloc the parent domain");
	if (w->pd)
		CHECK(ibv_dealloc_pd(w->pd) == 0, "dealloc the PD");
	if (w->ctx)
		ibv_close_device(w->ctx);
	free(w->src);
}

/* One completion of cq within DEADLINE_S; 0 or ETIMEDOUT. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	time_t end = time(NULL) + DEADLINE_S;
	int n;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0)
		if (time(NULL) > end)
			return ETIMEDOUT;
	return n == 1 ? 0 : EIO;
}

/* ------------------------------------------------------------------ */
/* Traffic. */

/* The queues are in the allocator's memory (the records too, unless the
 * allocator left them to the default: mode 1). */
static void check_placement(world *w, const alloc_log *l)
{
	struct mlx5dv_qp dq;
	struct mlx5dv_cq dc;
	struct mlx5dv_srq ds;
	struct mlx5dv_obj o = { .qp = { .in = w->b, .out = &dq }, .cq = { .in = w->rcq, .out = &dc },
				.srq = { .in = w->srq, .out = &ds } };
	int rec = l->mode != 1;

	CHECK(mlx5dv_init_obj(&o, MLX5DV_OBJ_QP | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ) == 0, "init_obj");
	CHECK(inside(l, dq.rq.buf, (size_t)dq.rq.wqe_cnt * dq.rq.stride, MLX5DV_RES_TYPE_QP) &&
	      inside(l, dq.sq.buf, (size_t)dq.sq.wqe_cnt * dq.sq.stride, MLX5DV_RES_TYPE_QP) &&
	      (uint8_t *)dq.sq.buf >= (uint8_t *)dq.rq.buf + 64,
	      "QP rings %p (RQ) and %p (SQ): not in a QP buffer, RQ first", dq.rq.buf, dq.sq.buf);
	CHECK(inside(l, dq.dbrec, 8, MLX5DV_RES_TYPE_DBR) == rec, "QP record %p", (void *)dq.dbrec);
	CHECK(inside(l, dc.buf, (size_t)dc.cqe_cnt * dc.cqe_size, MLX5DV_RES_TYPE_CQ) &&
	      inside(l, dc.dbrec, 8, MLX5DV_RES_TYPE_DBR) == rec, "CQ ring %p, record %p", dc.buf,
	      (void *)dc.dbrec);
	CHECK(inside(l, ds.buf, (size_t)ds.stride * 32, MLX5DV_RES_TYPE_SRQ) &&
	      inside(l, ds.dbrec, 4, MLX5DV_RES_TYPE_DBR) == rec, "SRQ ring %p, record %p", ds.buf,
	      (void *)ds.dbrec);
}

/* WRITES signaled writes a -> b of 1..MSG bytes (the send ring and the
 * CQ wrap several times), each payload checked. */
static void writes(world *w)
{
	for (int i = 0; i < WRITES; i++) {
		uint32_t len = 1 + (uint32_t)(i * 131) % MSG, off = (uint32_t)(i % 32) * 1024;
		struct ibv_sge sge = { (uintptr_t)(w->src + off), len, w->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;
		struct ibv_wc wc;

		for (uint32_t k = 0; k < len; k++)
			w->src[off + k] = (uint8_t)(i * 7 + k + 1);
		wr.wr.rdma.remote_addr = (uintptr_t)(w->dst + off);
		wr.wr.rdma.rkey = w->mr->rkey;
		if (ibv_post_send(w->a, &wr, &bad) || poll_one(w->scq, &wc)) {
			CHECK(0, "write %d: not posted or not completed", i);
			return;
		}
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i, "write %d: status %s",
		      i, ibv_wc_status_str(wc.status));
		CHECK(memcmp(w->dst + off, w->src + off, len) == 0, "write %d: %u bytes differ", i,
		      len);
	}
}

/* 40 sends from qp into rq's queue (b's RQ when srq is NULL, else the
 * SRQ), each into a receive posted first: payload, length, QP checked. */
static void sends(world *w, struct ibv_qp *qp, struct ibv_qp *to, struct ibv_srq *srq)
{
	for (int i = 0; i < 40; i++) {
		uint32_t len = 1 + (uint32_t)(i * 53) % MSG, soff = 0x8000 + (uint32_t)(i % 4) * 1024;
		uint32_t doff = 0xc000 + (uint32_t)(i % 4) * 1024;
		struct ibv_sge ssge = { (uintptr_t)(w->src + soff), len, w->mr->lkey };
		struct ibv_sge rsge = { (uintptr_t)(w->dst + doff), 1024, w->mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 0x1000u + (uint64_t)i, .sg_list = &rsge, .num_sge = 1 };
		struct ibv_send_wr swr = { .wr_id = (uint64_t)i, .sg_list = &ssge, .num_sge = 1,
					   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_recv_wr *rbad;
		struct ibv_send_wr *sbad;
		struct ibv_wc wc, rwc;

		for (uint32_t k = 0; k < len; k++)
			w->src[soff + k] = (uint8_t)(i * 11 + k + 3);
		memset(w->dst + doff, 0, 1024);
		if ((srq ? ibv_post_srq_recv(srq, &rwr, &rbad) : ibv_post_recv(to, &rwr, &rbad)) ||
		    ibv_post_send(qp, &swr, &sbad) || poll_one(w->scq, &wc) || poll_one(w->rcq, &rwc)) {
			CHECK(0, "send %d to QP 0x%x: not posted or not completed", i, to->qp_num);
			return;
		}
		CHECK(wc.status == IBV_WC_SUCCESS && rwc.status == IBV_WC_SUCCESS &&
		      rwc.opcode == IBV_WC_RECV && rwc.byte_len == len && rwc.qp_num == to->qp_num &&
		      rwc.wr_id == 0x1000u + (uint64_t)i,
		      "send %d: status %s/%s, %u bytes, QP 0x%x", i, ibv_wc_status_str(wc.status),
		      ibv_wc_status_str(rwc.status), rwc.byte_len, rwc.qp_num);
		CHECK(memcmp(w->dst + doff, w->src + soff, len) == 0, "send %d: payload differs", i);
	}
}

/* Every queue in the allocator's memory; traffic; everything given back. */
static void traffic_case(int mode)
{
	alloc_log l = { .mode = mode };
	world w;
	int rc = world_open(&w, &l), back, n;

	CHECK(rc == 0, "mode %d: objects: %s", mode, strerror(rc));
	if (!rc) {
		check_placement(&w, &l);
		writes(&w);
		sends(&w, w.a, w.b, NULL);
		sends(&w, w.c, w.d, w.srq);
	}
	CHECK(count(&l, MLX5DV_RES_TYPE_QP, &back) == 4 && back == 0, "mode %d: QP buffers", mode);
	CHECK(count(&l, MLX5DV_RES_TYPE_CQ, &back) == 2 && back == 0, "mode %d: CQ buffers", mode);
	CHECK(count(&l, MLX5DV_RES_TYPE_SRQ, &back) == 1 && back == 0, "mode %d: SRQ buffers", mode);
	n = count(&l, MLX5DV_RES_TYPE_DBR, &back);
	CHECK(n == (mode == 1 ? 0 : 7) && back == 0, "mode %d: %d doorbell records", mode, n);
	world_close(&w);
	for (int i = 0; i < l.n; i++)
		CHECK(l.h[i].freed, "mode %d: buffer %d (type 0x%llx, %zu bytes) never given back",
		      mode, i, (unsigned long long)l.h[i].type, l.h[i].size);
	CHECK(!l.bad_calls, "mode %d: %d allocator calls with wrong arguments", mode, l.bad_calls);
}

/* Memory softnic cannot use: refused with errno e, and given back. */
static void refused_case(int mode, int e, const char *what)
{
	alloc_log l = { .mode = mode };
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 15, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 7, .max_sge = 1 } };
	struct ibv_cq_init_attr_ex ca = { .cqe = 7, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_cq_ex *pcq;

	ibv_free_device_list(list);
	if (!cq || !parent_of(ctx, pd, &l)) {
		CHECK(0, "%s: no device", what);
		return;
	}
	errno = 0;
	qp = ibv_create_qp(l.pd, &qa);
	CHECK(!qp && errno == e, "%s: QP %p, errno %d (want %d)", what, (void *)qp, errno, e);
	errno = 0;
	srq = ibv_create_srq(l.pd, &sa);
	CHECK(!srq && errno == e, "%s: SRQ %p, errno %d", what, (void *)srq, errno);
	ca.parent_domain = l.pd;
	errno = 0;
	pcq = ibv_create_cq_ex(ctx, &ca);
	CHECK(!pcq && errno == e, "%s: CQ %p, errno %d", what, (void *)pcq, errno);
	CHECK(l.n == 3, "%s: %d buffers asked for (the ring of each; no record after)", what, l.n);
	for (int i = 0; i < l.n; i++)
		CHECK(l.h[i].freed, "%s: refused buffer %d not given back", what, i);
	CHECK(!l.bad_calls, "%s: %d bad allocator calls", what, l.bad_calls);
	CHECK(ibv_dealloc_pd(l.pd) == 0, "%s: dealloc the parent domain (nothing holds it)", what);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
}

int main(void)
{
	traffic_case(0);
	traffic_case(1); /* rings in the allocator's memory, records softnic's */
	refused_case(2, EFAULT, "PROT_NONE memory");
	refused_case(3, EFAULT, "read-only memory");
	refused_case(4, EINVAL, "memory 8 bytes off the alignment");
	printf("test_parent_queues: %d checks, %d failed\n", checks, failed);
	return failed ? 1 : 0;
}
