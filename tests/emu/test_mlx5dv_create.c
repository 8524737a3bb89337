/*
 * mlx5dv_create_cq, mlx5dv_create_qp, ibv_create_cq_ex and parent domains
 * on the emulated device: which attributes are honoured, which refused
 * (EINVAL as rdma-core's mlx5 rejects them, EOPNOTSUPP for what softnic
 * cannot do), traffic between two QPs made by mlx5dv_create_qp and polled
 * with the extended CQ interface, and parent domains with and without
 * allocators. Built against the installed rdma-core, run with
 * LD_LIBRARY_PATH=<build>/emu.
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs_kit.h"

enum { BUF = 1 << 16 };

/* ------------------------------------------------------------------ */
/* CQs. */

static struct ibv_cq_ex *dv_cq(struct ibv_context *ctx, uint32_t cqe, uint64_t mask, uint16_t size)
{
	struct ibv_cq_init_attr_ex a = { .cqe = cqe, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct mlx5dv_cq_init_attr d = { .comp_mask = mask, .cqe_size = size };

	errno = 0;
	return mlx5dv_create_cq(ctx, &a, &d);
}

/* NULL with errno e (and nothing leaked when it was made after all). */
static void check_refused(struct ibv_cq_ex *cq, int e, const char *what)
{
	int got = errno;

	CHECK(!cq && got == e, "%s: want NULL with errno %d, got %p errno %d", what, e, (void *)cq,
	      got);
	if (cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

static void cq_cases(struct ibv_context *ctx)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 15, .wc_flags = IBV_WC_STANDARD_FLAGS };
	struct mlx5dv_cq_init_attr d = { 0 };
	struct mlx5dv_cq dc;
	struct mlx5dv_obj o = { .cq = { .out = &dc } };
	struct ibv_cq_ex *cq;

	check_refused(mlx5dv_create_cq(NULL, &a, NULL), EINVAL, "NULL context");
	check_refused(mlx5dv_create_cq(ctx, NULL, NULL), EINVAL, "NULL attributes");
	check_refused(dv_cq(ctx, 0, 0, 0), EINVAL, "0 CQEs");
	check_refused(dv_cq(ctx, 1u << 20, 0, 0), EINVAL, "2^20 CQEs");
	check_refused(dv_cq(ctx, 15, 1u << 7, 0), EINVAL, "unknown mlx5dv comp_mask");
	check_refused(dv_cq(ctx, 15, MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 100), EINVAL, "100-byte CQEs");
	check_refused(dv_cq(ctx, 15, MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 128), EOPNOTSUPP,
		      "128-byte CQEs");
	check_refused(dv_cq(ctx, 15, MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE, 0), EOPNOTSUPP,
		      "compressed CQEs");
	d.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_FLAGS;
	d.flags = 1u << 5;
	errno = 0;
	check_refused(mlx5dv_create_cq(ctx, &a, &d), EINVAL, "unknown mlx5dv flag");
	a.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	errno = 0;
	check_refused(mlx5dv_create_cq(ctx, &a, NULL), EOPNOTSUPP, "completion time stamps");
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	a.comp_mask = 1u << 5;
	errno = 0;
	check_refused(mlx5dv_create_cq(ctx, &a, NULL), EINVAL, "unknown verbs comp_mask");

	/* 64-byte CQEs, asked for or by default: a power of two above cqe. */
	cq = dv_cq(ctx, 100, MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 64);
	CHECK(cq, "mlx5dv_create_cq(100 CQEs of 64 bytes): errno %d", errno);
	if (!cq)
		return;
	o.cq.in = ibv_cq_ex_to_cq(cq);
	CHECK(mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ) == 0 && dc.cqe_size == 64 && dc.cqe_cnt == 128 &&
		      ibv_cq_ex_to_cq(cq)->cqe == 127,
	      "init_obj: CQE size %u, %u CQEs, cqe %d", dc.cqe_size, dc.cqe_cnt,
	      ibv_cq_ex_to_cq(cq)->cqe);
	CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy");
	cq = mlx5dv_create_cq(ctx, &(struct ibv_cq_init_attr_ex){ .cqe = 1 }, NULL);
	CHECK(cq, "mlx5dv_create_cq without mlx5dv attributes: errno %d", errno);
	if (cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

/* ibv_create_cq_ex itself (the context op), and the extended poller on an
 * empty CQ. */
static void cq_ex_cases(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 31, .wc_flags = IBV_WC_STANDARD_FLAGS,
					 .comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
					 .flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN |
						  IBV_CREATE_CQ_ATTR_SINGLE_THREADED };
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &a);

	CHECK(cq, "ibv_create_cq_ex(overrun ignore, single threaded): errno %d", errno);
	if (cq) {
		pa.comp_mask = 1;
		CHECK(ibv_start_poll(cq, &pa) == EINVAL, "start_poll with a comp_mask");
		pa.comp_mask = 0;
		CHECK(ibv_start_poll(cq, &pa) == ENOENT, "start_poll on an empty CQ");
		CHECK(ibv_start_poll(cq, &pa) == ENOENT, "again (no end_poll after ENOENT)");
		CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0, "destroy");
	}
	a.flags = 1u << 7;
	errno = 0;
	check_refused(ibv_create_cq_ex(ctx, &a), EINVAL, "unknown creation flag");
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	a.parent_domain = pd;
	errno = 0;
	check_refused(ibv_create_cq_ex(ctx, &a), EINVAL, "a PD that is not a parent domain");
	a.comp_mask = 0;
	a.comp_vector = 5;
	errno = 0;
	check_refused(ibv_create_cq_ex(ctx, &a), EINVAL, "comp_vector beyond num_comp_vectors");
}

/* ------------------------------------------------------------------ */
/* QPs. */

static struct ibv_qp *dv_qp(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq,
			    enum ibv_qp_type type, struct mlx5dv_qp_init_attr *d)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = type, .send_cq = cq, .recv_cq = cq, .pd = pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.cap = { .max_send_wr = 64, .max_recv_wr = 0, .max_send_sge = 1,
			 .max_inline_data = 64 },
	};

	errno = 0;
	return mlx5dv_create_qp(ctx, &a, d);
}

static void check_qp_refused(struct ibv_qp *qp, int e, const char *what)
{
	int got = errno;

	CHECK(!qp && got == e, "%s: want NULL with errno %d, got %p errno %d", what, e, (void *)qp,
	      got);
	if (qp)
		ibv_destroy_qp(qp);
}

/* A DCT as NVSHMEM's IBGDA makes one: SRQ receives, INIT (mask 0x39)
 * and RTR (mask 0x8181) without a peer. */
static void dct_case(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_DRIVER, .send_cq = cq, .recv_cq = cq, .srq = srq,
		.comp_mask = IBV_QP_INIT_ATTR_PD, .pd = pd,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct mlx5dv_qp_init_attr d = { .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC };
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = 0xe };
	struct ibv_qp *dct;
	struct ibv_port_attr pa;

	d.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
	d.dc_init_attr.dct_access_key = 0x5623CEAF;
	dct = srq ? mlx5dv_create_qp(ctx, &a, &d) : NULL;
	CHECK(dct && dct->qp_num && dct->qp_type == IBV_QPT_DRIVER, "a DCT on an SRQ (errno %d)",
	      errno);
	if (dct) {
		CHECK(!ibv_modify_qp(dct, &m, 0x39), "DCT to INIT (mask 0x39)");
		ibv_query_port(ctx, 1, &pa);
		m = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
					  .min_rnr_timer = 12, .ah_attr = { .dlid = pa.lid,
					  .port_num = 1 } };
		CHECK(!ibv_modify_qp(dct, &m, 0x8181), "DCT to RTR without a peer (mask 0x8181)");
		m.qp_state = IBV_QPS_RTS;
		CHECK(ibv_modify_qp(dct, &m, IBV_QP_STATE) == EINVAL, "a DCT has no RTS");
		CHECK(!ibv_destroy_qp(dct), "DCT destroyed");
	}
	if (srq)
		ibv_destroy_srq(srq);
}

static void qp_cases(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct mlx5dv_qp_init_attr d = { 0 };
	struct ibv_qp *qp;

	errno = 0;
	check_qp_refused(mlx5dv_create_qp(NULL, NULL, NULL), EINVAL, "NULL arguments");
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_DRIVER, NULL), EINVAL, "driver QP without DC");
	d.comp_mask = MLX5DV_QP_INIT_ATTR_MASK_DC;
	d.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCI;
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_RC, &d), EINVAL, "DC on an RC QP");
	qp = dv_qp(ctx, pd, cq, IBV_QPT_DRIVER, &d);
	CHECK(qp && qp->qp_type == IBV_QPT_DRIVER && qp->qp_num, "a DCI (errno %d)", errno);
	if (qp)
		ibv_destroy_qp(qp);
	d.dc_init_attr.dc_type = 7;
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_DRIVER, &d), EOPNOTSUPP, "an unknown DC type");
	d.dc_init_attr.dc_type = MLX5DV_DCTYPE_DCT;
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_DRIVER, &d), EINVAL, "a DCT without an SRQ");
	dct_case(ctx, pd, cq);
	d = (struct mlx5dv_qp_init_attr){ .comp_mask = 1u << 9 };
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_RC, &d), EINVAL, "unknown comp_mask");
	d = (struct mlx5dv_qp_init_attr){ .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS,
					  .create_flags = 1u << 12 };
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_RC, &d), EINVAL, "unknown create flag");
	d.create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE |
			 MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_RC, &d), EINVAL, "disable and allow scatter");
	d.create_flags = MLX5DV_QP_CREATE_TUNNEL_OFFLOADS;
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_RC, &d), EOPNOTSUPP, "tunnel offloads");
	d.create_flags = MLX5DV_QP_CREATE_SIG_PIPELINING;
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_RC, &d), EOPNOTSUPP, "signature pipelining");
	d = (struct mlx5dv_qp_init_attr){ .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
					  .send_ops_flags = MLX5DV_QP_EX_WITH_MR_LIST };
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_RC, &d), EOPNOTSUPP, "mlx5dv send ops");
	check_qp_refused(dv_qp(ctx, pd, cq, IBV_QPT_UD, NULL), EOPNOTSUPP, "a UD QP");

	/* Honoured: no scatter to CQE (softnic never does), an empty send-ops set. */
	d = (struct mlx5dv_qp_init_attr){ .comp_mask = MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS |
						       MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS,
					  .create_flags = MLX5DV_QP_CREATE_DISABLE_SCATTER_TO_CQE };
	qp = dv_qp(ctx, pd, cq, IBV_QPT_RC, &d);
	CHECK(qp && qp->qp_type == IBV_QPT_RC && qp->state == IBV_QPS_RESET,
	      "RC QP without scatter to CQE: errno %d", errno);
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0, "destroy");
	d.create_flags = MLX5DV_QP_CREATE_ALLOW_SCATTER_TO_CQE;
	qp = dv_qp(ctx, pd, cq, IBV_QPT_RC, &d);
	CHECK(qp, "RC QP allowing scatter to CQE: errno %d", errno);
	if (qp)
		ibv_destroy_qp(qp);
}

/* ------------------------------------------------------------------ */
/* Traffic: QPs by mlx5dv_create_qp, completions by the extended poller. */

typedef struct side {
	struct ibv_cq_ex *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
} side;

static int open_side(struct ibv_context *ctx, struct ibv_pd *pd, side *s)
{
	s->cq = dv_cq(ctx, 63, MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE, 64);
	s->buf = calloc(1, BUF);
	if (!s->cq || !s->buf)
		return -1;
	s->mr = ibv_reg_mr(pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ);
	s->qp = s->mr ? dv_qp(ctx, pd, ibv_cq_ex_to_cq(s->cq), IBV_QPT_RC, NULL) : NULL;
	return s->qp ? 0 : -1;
}

static void close_side(side *s)
{
	if (s->qp)
		CHECK(ibv_destroy_qp(s->qp) == 0, "destroy QP");
	if (s->mr)
		CHECK(ibv_dereg_mr(s->mr) == 0, "dereg");
	if (s->cq)
		CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(s->cq)) == 0, "destroy CQ");
	free(s->buf);
}

/* Waits (5 s) for the next completion through start_poll/next_poll;
 * *started says whether a poll batch is open. 0 or ENOENT. */
static int next_completion(struct ibv_cq_ex *cq, int *started)
{
	struct ibv_poll_cq_attr pa = { 0 };
	time_t until = time(NULL) + 5;
	int rc;

	do {
		rc = *started ? ibv_next_poll(cq) : ibv_start_poll(cq, &pa);
		if (!rc)
			*started = 1;
	} while (rc == ENOENT && time(NULL) < until);
	return rc;
}

static void traffic_cases(side *a, side *b)
{
	static const uint32_t len[] = { 1, 64, 1000, 4096, 30000 };
	enum { N = sizeof(len) / sizeof(len[0]) };
	struct ibv_send_wr wr[N], *bad = NULL;
	struct ibv_sge sge[N];
	uint32_t off = 0;
	int started = 0;

	for (int i = 0; i < N; i++) {
		for (uint32_t k = 0; k < len[i]; k++)
			a->buf[off + k] = (uint8_t)(i * 37 + k * 11 + 1);
		sge[i] = (struct ibv_sge){ (uintptr_t)a->buf + off, len[i], a->mr->lkey };
		wr[i] = (struct ibv_send_wr){ .wr_id = 0x100 + i, .sg_list = &sge[i], .num_sge = 1,
					      .opcode = IBV_WR_RDMA_WRITE,
					      .send_flags = IBV_SEND_SIGNALED,
					      .next = i + 1 < N ? &wr[i + 1] : NULL };
		wr[i].wr.rdma.remote_addr = (uintptr_t)b->buf + off;
		wr[i].wr.rdma.rkey = b->mr->rkey;
		off += len[i];
	}
	CHECK(ibv_post_send(a->qp, wr, &bad) == 0, "post %d writes", N);
	for (int i = 0; i < N; i++) {
		int rc = next_completion(a->cq, &started);

		CHECK(rc == 0, "completion %d: %d", i, rc);
		if (rc)
			break;
		CHECK(a->cq->status == IBV_WC_SUCCESS && a->cq->wr_id == 0x100u + i &&
			      ibv_wc_read_opcode(a->cq) == IBV_WC_RDMA_WRITE &&
			      ibv_wc_read_qp_num(a->cq) == a->qp->qp_num,
	      "completion %d: status %d wr_id 0x%llx opcode %d qp 0x%x", i, a->cq->status,
		      (unsigned long long)a->cq->wr_id, ibv_wc_read_opcode(a->cq),
		      ibv_wc_read_qp_num(a->cq));
	}
	if (started)
		ibv_end_poll(a->cq);
	CHECK(memcmp(a->buf, b->buf, off) == 0, "the %u bytes written differ", off);
}

/* ------------------------------------------------------------------ */
/* Parent domains. */

typedef struct alloc_log {
	int mode;        /* 0: IBV_ALLOCATOR_USE_DEFAULT, 1: memory, 2: NULL */
	int allocs, frees, qp_bufs, dbrs, cq_bufs, bad_args;
	struct ibv_pd *expect_pd;
} alloc_log;

static void *log_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	alloc_log *l = ctx;

	l->allocs++;
	l->qp_bufs += type == MLX5DV_RES_TYPE_QP;
	l->dbrs += type == MLX5DV_RES_TYPE_DBR;
	l->cq_bufs += type == MLX5DV_RES_TYPE_CQ;
	l->bad_args += pd != l->expect_pd || !size || !align || (align & (align - 1));
	if (l->mode == 0)
		return IBV_ALLOCATOR_USE_DEFAULT;
	return l->mode == 1 ? aligned_alloc(align, (size + align - 1) / align * align) : NULL;
}

static void log_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	alloc_log *l = ctx;

	(void)type;
	l->frees++;
	l->bad_args += pd != l->expect_pd;
	free(ptr);
}

static struct ibv_pd *parent(struct ibv_context *ctx, struct ibv_pd *pd, alloc_log *l)
{
	struct ibv_parent_domain_init_attr a = { .pd = pd };

	if (l) {
		a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			      IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
		a.alloc = log_alloc;
		a.free = log_free;
		a.pd_context = l;
	}
	errno = 0;
	return ibv_alloc_parent_domain(ctx, &a);
}

static void parent_argument_cases(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_parent_domain_init_attr a = { .pd = NULL };
	struct ibv_pd *p;

	errno = 0;
	CHECK(!ibv_alloc_parent_domain(ctx, &a) && errno == EINVAL, "no PD: errno %d", errno);
	a = (struct ibv_parent_domain_init_attr){ .pd = pd, .comp_mask = 1u << 6 };
	errno = 0;
	CHECK(!ibv_alloc_parent_domain(ctx, &a) && errno == EINVAL, "unknown mask: errno %d", errno);
	a = (struct ibv_parent_domain_init_attr){ .pd = pd,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS, .free = log_free };
	errno = 0;
	CHECK(!ibv_alloc_parent_domain(ctx, &a) && errno == EINVAL, "no alloc: errno %d", errno);
	a = (struct ibv_parent_domain_init_attr){ .pd = pd, .td = (struct ibv_td *)&a };
	errno = 0;
	CHECK(!ibv_alloc_parent_domain(ctx, &a) && errno == EINVAL, "a foreign td: errno %d", errno);
	p = parent(ctx, pd, NULL);
	CHECK(p && p->context == ctx && p->handle == pd->handle, "parent domain: errno %d", errno);
	if (!p)
		return;
	CHECK(!parent(ctx, p, NULL) && errno == EINVAL, "a parent domain of a parent domain");
	CHECK(ibv_dealloc_pd(pd) == EBUSY, "its PD freed while the parent domain exists");
	CHECK(ibv_dealloc_pd(p) == 0, "dealloc the parent domain");
}

/* Without allocators: a PD for every object (MR, CQ, QP), held by them. */
static void parent_plain_cases(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_pd *p = parent(ctx, pd, NULL);
	struct ibv_cq_init_attr_ex ca = { .cqe = 7, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };
	struct mlx5dv_pd dp;
	struct mlx5dv_obj o = { .pd = { .out = &dp } };
	struct ibv_cq_ex *pcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	static uint8_t region[4096];

	CHECK(p, "parent domain: errno %d", errno);
	if (!p)
		return;
	o.pd.in = p;
	CHECK(mlx5dv_init_obj(&o, MLX5DV_OBJ_PD) == 0 && dp.pdn == pd->handle, "pdn");
	mr = ibv_reg_mr(p, region, sizeof(region), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr && mr->pd == p, "MR on the parent domain: errno %d", errno);
	qp = dv_qp(ctx, p, cq, IBV_QPT_RC, NULL);
	CHECK(qp && qp->pd == p, "QP on the parent domain: errno %d", errno);
	ca.parent_domain = p;
	pcq = ibv_create_cq_ex(ctx, &ca);
	CHECK(pcq, "CQ on the parent domain: errno %d", errno);
	CHECK(ibv_dealloc_pd(p) == EBUSY, "parent domain freed under its QP and CQ");
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0, "destroy QP");
	CHECK(ibv_dealloc_pd(p) == (pcq ? EBUSY : 0), "parent domain freed under its CQ");
	if (pcq)
		CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(pcq)) == 0, "destroy CQ");
	if (mr)
		CHECK(ibv_dereg_mr(mr) == 0, "dereg");
	CHECK(!pcq || ibv_dealloc_pd(p) == 0, "dealloc the parent domain");
}

/* With allocators: consulted for the QP buffer and doorbell record (and a
 * CQ's buffer and record); softnic keeps its own memory when told to use
 * the default, puts the queues in memory it is handed (given back at
 * destroy; traffic there: test_parent_queues.c). */
static void parent_allocator_cases(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	alloc_log l = { .mode = 0 };
	struct ibv_pd *p = parent(ctx, pd, &l);
	struct ibv_cq_init_attr_ex ca = { .cqe = 7, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };
	struct ibv_cq_ex *pcq;
	struct ibv_qp *qp;

	CHECK(p, "parent domain with allocators: errno %d", errno);
	if (!p)
		return;
	l.expect_pd = p;
	qp = dv_qp(ctx, p, cq, IBV_QPT_RC, NULL);
	CHECK(qp && l.qp_bufs == 1 && l.dbrs == 1 && !l.bad_args,
	      "QP with default placement: errno %d, %d QP buffers, %d records", errno, l.qp_bufs,
	      l.dbrs);
	if (qp)
		ibv_destroy_qp(qp);
	ca.parent_domain = p;
	pcq = ibv_create_cq_ex(ctx, &ca);
	CHECK(pcq && l.cq_bufs == 1, "CQ with default placement: errno %d", errno);
	if (pcq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(pcq));
	l.mode = 1;
	qp = dv_qp(ctx, p, cq, IBV_QPT_RC, NULL);
	CHECK(qp && l.qp_bufs == 2 && l.dbrs == 3 && l.frees == 0 && !l.bad_args,
	      "QP buffer in caller memory: errno %d, %d QP buffers, %d records, %d frees", errno,
	      l.qp_bufs, l.dbrs, l.frees);
	if (qp)
		CHECK(ibv_destroy_qp(qp) == 0 && l.frees == 2, "destroy gives 2 buffers back: %d",
		      l.frees);
	errno = 0;
	pcq = ibv_create_cq_ex(ctx, &ca);
	CHECK(pcq && l.cq_bufs == 2, "CQ buffer in caller memory: errno %d", errno);
	if (pcq)
		CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(pcq)) == 0 && l.frees == 4,
		      "destroy gives the CQ's 2 buffers back: %d", l.frees);
	l.mode = 2;
	qp = dv_qp(ctx, p, cq, IBV_QPT_RC, NULL);
	CHECK(!qp && errno == ENOMEM, "allocator out of memory: errno %d", errno);
	CHECK(ibv_dealloc_pd(p) == 0, "dealloc (no object left)");
}

/* ------------------------------------------------------------------ */

int main(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = ctx ? ibv_create_cq(ctx, 63, NULL, NULL, 0) : NULL;
	side a = { 0 }, b = { 0 };

	if (!pd || !cq) {
		fprintf(stderr, "test_mlx5dv_create: no emulated device (LD_LIBRARY_PATH=<build>/emu?)\n");
		return 1;
	}
	cq_cases(ctx);
	cq_ex_cases(ctx, pd);
	qp_cases(ctx, pd, cq);
	if (open_side(ctx, pd, &a) || open_side(ctx, pd, &b) ||
	    kit_connect(a.qp, b.qp->qp_num, 1, IBV_ACCESS_REMOTE_WRITE) ||
	    kit_connect(b.qp, a.qp->qp_num, 1, IBV_ACCESS_REMOTE_WRITE)) {
		CHECK(0, "two connected QPs from mlx5dv_create_qp: errno %d", errno);
	} else {
		traffic_cases(&a, &b);
	}
	close_side(&a);
	close_side(&b);
	parent_argument_cases(ctx, pd);
	parent_plain_cases(ctx, pd, cq);
	parent_allocator_cases(ctx, pd, cq);
	CHECK(ibv_destroy_cq(cq) == 0, "destroy CQ");
	CHECK(ibv_dealloc_pd(pd) == 0, "dealloc PD");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("test_mlx5dv_create: %d checks, %d failed\n", checks, failed);
	return failed ? 1 : 0;
}
