/*
 * gic/recv.h - posting receive WQEs into an mlx5 receive queue or SRQ,
 * from host C or device CUDA.
 *
 * A receive WQE is a list of data segments naming where a message lands
 * (an SRQ's WQE starts with a 16-byte next segment that links its free
 * list); a list shorter than the queue's max_sge ends with a segment whose
 * lkey is GIC_INVALID_LKEY. The doorbell record holds the count of WQEs
 * posted (16 bits, big-endian). As rdma-core's mlx5 provider: an RQ is
 * consumed in slot order; an SRQ along its links, from slot 0, and a
 * completed WQE (the CQE's wqe_counter names it) goes back to the tail of
 * the free list, one WQE always staying free as the list's end.
 *
 * One poster per queue (callers that share one serialize).
 */
#ifndef GIC_RECV_H
#define GIC_RECV_H

#include <errno.h>

#include "gic/mlx5_format.h"

typedef struct gic_rq {
	uint8_t *buf;      /* wqe_cnt WQEs of stride bytes */
	uint32_t *dbrec;   /* BE32(posted & 0xffff) */
	uint32_t wqe_cnt;  /* power of two */
	uint32_t stride;
	uint32_t max_sge;
	uint32_t is_srq;   /* 1: next segment first, linked free list */
	uint32_t posted;   /* WQEs posted */
	uint32_t done;     /* RQ: WQEs completed (gic_rq_completed) */
	uint32_t head;     /* SRQ: the free WQE the next post fills */
	uint32_t tail;     /* SRQ: the free list's last WQE */
} gic_rq;

typedef struct gic_sge {
	uint64_t addr;
	uint32_t lkey;
	uint32_t len;
} gic_sge;

/* Sets up a view of a fresh queue (nothing posted yet). */
GIC_HD void gic_rq_init(gic_rq *rq, void *buf, uint32_t *dbrec, uint32_t wqe_cnt, uint32_t stride,
			uint32_t max_sge, int is_srq)
{
	rq->buf = (uint8_t *)buf;
	rq->dbrec = dbrec;
	rq->wqe_cnt = wqe_cnt;
	rq->stride = stride;
	rq->max_sge = max_sge;
	rq->is_srq = (uint32_t)is_srq;
	rq->posted = rq->done = 0;
	rq->head = 0;
	rq->tail = wqe_cnt - 1;
}

/* The slot the next gic_rq_post fills (its CQE's wqe_counter names it on
 * an SRQ; on an RQ the counter is the post's count). */
GIC_HD uint32_t gic_rq_next_slot(const gic_rq *rq)
{
	return rq->is_srq ? rq->head : rq->posted & (rq->wqe_cnt - 1);
}

/* Posts one receive of n scatter entries (n <= max_sge) and publishes it
 * in the doorbell record. 0, EINVAL (too many entries), or ENOMEM (the
 * queue is full). */
GIC_HD int gic_rq_post(gic_rq *rq, const gic_sge *sge, uint32_t n)
{
	uint32_t idx, off = 0;
	uint8_t *wqe;

	if (n > rq->max_sge)
		return EINVAL;
	if (rq->is_srq ? rq->head == rq->tail : rq->posted - rq->done == rq->wqe_cnt)
		return ENOMEM;
	idx = gic_rq_next_slot(rq);
	wqe = rq->buf + (uint64_t)idx * rq->stride;
	if (rq->is_srq) {
		const gic_srq_next_seg *next = (const gic_srq_next_seg *)wqe;

		rq->head = gic_be16toh(next->next_wqe_index_be) & (rq->wqe_cnt - 1);
		off = GIC_SEG_SIZE;
	}
	for (uint32_t i = 0; i < n; i++) {
		gic_data_seg d = gic_make_data_seg(sge[i].len, sge[i].lkey, sge[i].addr);

		__builtin_memcpy(wqe + off + i * GIC_SEG_SIZE, &d, sizeof(d));
	}
	if (n < rq->max_sge) {
		gic_data_seg end = gic_make_data_seg(0, GIC_INVALID_LKEY, 0);

		__builtin_memcpy(wqe + off + n * GIC_SEG_SIZE, &end, sizeof(end));
	}
	rq->posted++;
	/* Publishes the WQE's segments before the count that announces it. */
	gic_st_release_sys_u32(rq->dbrec, gic_htobe32(rq->posted & 0xffffu));
	return 0;
}

/* A receive completed: on an RQ one slot frees; on an SRQ the WQE named by
 * the CQE's wqe_counter joins the free list's tail. */
GIC_HD void gic_rq_completed(gic_rq *rq, uint16_t wqe_counter)
{
	if (!rq->is_srq) {
		rq->done++;
		return;
	}
	gic_srq_next_seg *last = (gic_srq_next_seg *)(rq->buf + (uint64_t)rq->tail * rq->stride);
	uint32_t idx = wqe_counter & (rq->wqe_cnt - 1);

	last->next_wqe_index_be = gic_htobe16((uint16_t)idx);
	rq->tail = idx;
}

#endif /* GIC_RECV_H */
