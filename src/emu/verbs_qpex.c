/*
 * The extended posting API (ibv_qp_ex's ibv_wr_* functions, perftest's
 * default): between wr_start and wr_complete each operation call opens a
 * WR, its data call (sge, sge list, inline) completes it into the send
 * queue at once, and wr_complete rings the doorbell once. On a DCI a WR
 * is written once both its data and its address (mlx5dv_wr_set_dc_addr,
 * in either order) are set. An error is kept and returned by wr_complete,
 * which then drops every WQE of the batch (nothing was announced). wr_start holds the QP's send lock until
 * wr_complete or wr_abort, as one thread uses a QP's batch.
 */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "emu.h"
#include "emu_private.h"

static emu_qp *qp_of(struct ibv_qp_ex *x) { return (emu_qp *)x; }

/* Writes the open WR into the queue (if any); the first error stays. */
static void flush(emu_qp *q)
{
	int rc;

	if (!q->wr_pending)
		return;
	q->wr_pending = 0;
	rc = emu_post_one(q, &q->wr);
	if (rc && !q->wr_err)
		q->wr_err = rc;
}

/* Opens a WR of opcode op with the QP's current wr_id and flags. */
static struct ibv_send_wr *open_wr(struct ibv_qp_ex *x, enum ibv_wr_opcode op)
{
	emu_qp *q = qp_of(x);

	flush(q);
	memset(&q->wr, 0, sizeof(q->wr));
	q->wr.wr_id = x->wr_id;
	q->wr.send_flags = x->wr_flags;
	q->wr.opcode = op;
	q->wr.sg_list = q->wr_sge;
	q->wr_pending = 1;
	q->wr_av_set = q->wr_data_set = 0;
	return &q->wr;
}

/* The open WR's data is set: written now, or on a DCI once its address
 * is set too. */
static void data_done(emu_qp *q)
{
	q->wr_data_set = 1;
	if (!q->dci || q->wr_av_set)
		flush(q);
}

/* Opens a WR of an RDMA opcode at (rkey, addr). */
static struct ibv_send_wr *open_rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey,
				     uint64_t addr)
{
	struct ibv_send_wr *w = open_wr(x, op);

	w->wr.rdma.rkey = rkey;
	w->wr.rdma.remote_addr = addr;
	return w;
}

/* Opens a WR of an atomic opcode at (rkey, addr) with its operands. */
static void open_atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
			uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *w = open_wr(x, op);

	w->wr.atomic.rkey = rkey;
	w->wr.atomic.remote_addr = addr;
	w->wr.atomic.compare_add = compare_add;
	w->wr.atomic.swap = swap;
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	open_rdma(x, IBV_WR_RDMA_WRITE, rkey, addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
	open_rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr)->imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	open_rdma(x, IBV_WR_RDMA_READ, rkey, addr);
}

static void wr_send(struct ibv_qp_ex *x)
{
	open_wr(x, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	open_wr(x, IBV_WR_SEND_WITH_IMM)->imm_data = imm;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t compare,
			      uint64_t swap)
{
	open_atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t add)
{
	open_atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

/* 1 when a WR is open and n data pieces fit it; otherwise the WR is
 * dropped and the batch's error is EINVAL. */
static int data_ok(emu_qp *q, size_t n)
{
	if (!q->wr_pending)
		return 0;
	if (n <= EMU_MAX_SGE)
		return 1;
	q->wr_pending = 0;
	if (!q->wr_err)
		q->wr_err = EINVAL;
	return 0;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t len)
{
	emu_qp *q = qp_of(x);

	if (!q->wr_pending)
		return;
	q->wr_sge[0] = (struct ibv_sge){ addr, len, lkey };
	q->wr.num_sge = 1;
	data_done(q);
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *list)
{
	emu_qp *q = qp_of(x);

	if (!data_ok(q, n))
		return;
	memcpy(q->wr_sge, list, n * sizeof(*list));
	q->wr.num_sge = (int)n;
	data_done(q);
}

/* Inline data is copied into the WQE now: the caller may reuse its
 * buffers as soon as the call returns. */
static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *b)
{
	emu_qp *q = qp_of(x);

	if (!data_ok(q, n))
		return;
	for (size_t i = 0; i < n; i++)
		q->wr_sge[i] = (struct ibv_sge){ (uintptr_t)b[i].addr, (uint32_t)b[i].length, 0 };
	q->wr.num_sge = (int)n;
	q->wr.send_flags |= IBV_SEND_INLINE;
	data_done(q);
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t len)
{
	struct ibv_data_buf b = { addr, len };

	wr_set_inline_data_list(x, 1, &b);
}

static void wr_start(struct ibv_qp_ex *x)
{
	emu_qp *q = qp_of(x);

	pthread_mutex_lock(&q->sq_lock);
	q->wr_pending = 0;
	q->wr_err = 0;
	q->wr_start_resv = q->sq.resv;
}

static int wr_complete(struct ibv_qp_ex *x)
{
	emu_qp *q = qp_of(x);
	int rc;

	flush(q);
	rc = q->wr_err;
	if (!rc && x->qp_base.state != IBV_QPS_RTS && x->qp_base.state != IBV_QPS_ERR)
		rc = EINVAL;
	if (rc)
		q->sq.resv = q->wr_start_resv; /* the batch's WQEs were never announced */
	else
		emu_sq_ring(q);
	pthread_mutex_unlock(&q->sq_lock);
	return rc;
}

static void wr_abort(struct ibv_qp_ex *x)
{
	emu_qp *q = qp_of(x);

	q->wr_pending = 0;
	q->sq.resv = q->wr_start_resv;
	pthread_mutex_unlock(&q->sq_lock);
}

static emu_qp *qp_of_dv(struct mlx5dv_qp_ex *mx)
{
	return (emu_qp *)(void *)((uint8_t *)mx - offsetof(emu_qp, dvx));
}

/* mlx5dv_wr_set_dc_addr: the open WR goes to DCT dctn with key, by the
 * AH's address vector, as rdma-core's mlx5 builds it: the AH's 48 bytes
 * with the DCT's number and MLX5_EXTENDED_UD_AV in dqp_dct (the full
 * form) and the key. On a QP that is no DCI, or with an AH that is not
 * the emulated device's, the WR is dropped and the batch fails (EINVAL). */
static void wr_set_dc_addr(struct mlx5dv_qp_ex *mx, struct ibv_ah *ah, uint32_t dctn, uint64_t key)
{
	emu_qp *q = qp_of_dv(mx);
	struct mlx5_wqe_av *av;

	if (!q->wr_pending)
		return;
	if (!q->dci || gic_emu_ah_av(ah, &av)) {
		q->wr_pending = 0;
		if (!q->wr_err)
			q->wr_err = EINVAL;
		return;
	}
	memcpy(&q->wr_av, av, sizeof(q->wr_av));
	q->wr_av.dqp_dct = htobe32(be32toh(av->dqp_dct) | (dctn & 0xffffffu) | MLX5_EXTENDED_UD_AV);
	q->wr_av.key.dc_key = htobe64(key);
	q->wr_av_set = 1;
	if (q->wr_data_set)
		flush(q);
}

int emu_qpex_setup(emu_qp *q, uint64_t ops)
{
	const uint64_t have = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			      IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
			      IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct ibv_qp_ex *x = &q->qpx;

	if (ops & ~have)
		return EOPNOTSUPP;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	q->dvx.wr_set_dc_addr = wr_set_dc_addr;
	return 0;
}

struct mlx5dv_qp_ex *gic_emu_dv_qp_ex(struct ibv_qp_ex *x)
{
	emu_qp *q = (emu_qp *)x;

	return x && q->qpx.wr_start ? &q->dvx : NULL;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	emu_qp *q = (emu_qp *)qp;

	return qp && q->qpx.wr_start ? &q->qpx : NULL;
}
