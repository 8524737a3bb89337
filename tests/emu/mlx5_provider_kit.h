/*
 * Helpers of the tests that run the project's mlx5 provider on the
 * emulated device through gic/provider.h (test_mlx5_provider.c): a PE
 * (nic, CQ, QP, a registered 1 MiB region), connection through records in
 * the wire format, and posting that checks every completion: each
 * signaled request's completion arrives once, in order, successful and
 * for this QP. CHECK counts (verbs_kit.h).
 */
#ifndef GIC_MLX5_PROVIDER_KIT_H
#define GIC_MLX5_PROVIDER_KIT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gic/conn.h"
#include "gic/provider.h"
#include "verbs_kit.h"

enum {
	PK_REGION = 1 << 20,
	PK_EXPECT = 4096, /* signaled requests outstanding at most */
};
#define PK_WAIT_NS (10ull * 1000000000ull)

typedef struct pk_pe {
	gic_nic *nic;
	gic_nic_cq *cq;
	gic_nic_qp *qp;
	gic_nic_mr *mr;
	uint8_t *buf;
	gic_conn_info me;              /* this QP's record, with addr and rkey */
	uint64_t expect[PK_EXPECT];    /* wr_ids of signaled requests not yet completed */
	unsigned head, tail;
} pk_pe;

/* Opens a PE on the first mlx5 device with a 2^log_sq_bb-BB send ring and
 * a 64-CQE CQ; 0 or an errno (p->nic's error says why when it opened). */
static inline int pk_open(pk_pe *p, int log_sq_bb)
{
	gic_nic_attr a = { .device = NULL, .queues = GIC_QUEUES_HOST };
	char err[GIC_NIC_ERR_LEN] = "";
	gic_qp_attr qa = { .log_sq_bb = log_sq_bb };

	memset(p, 0, sizeof(*p));
	p->nic = gic_nic_open(&gic_provider_mlx5, &a, err, sizeof(err));
	if (!p->nic) {
		fprintf(stderr, "pk_open: %s\n", err);
		return errno ? errno : ENODEV;
	}
	p->buf = aligned_alloc(4096, PK_REGION);
	if (p->buf)
		memset(p->buf, 0, PK_REGION);
	p->mr = p->buf ? gic_nic_reg_mr(p->nic, p->buf, PK_REGION, GIC_ACCESS_ALL) : NULL;
	p->cq = p->mr ? gic_nic_cq_create(p->nic, 6) : NULL;
	qa.send_cq = p->cq;
	p->qp = p->cq ? gic_nic_qp_create(p->nic, &qa) : NULL;
	if (!p->qp || gic_nic_qp_local(p->qp, &p->me))
		return errno ? errno : EIO;
	p->me.addr = (uint64_t)(uintptr_t)p->buf;
	p->me.rkey = p->mr->rkey;
	return 0;
}

/* Frees what pk_open made (any part of it). */
static inline void pk_close(pk_pe *p)
{
	if (p->qp)
		CHECK(gic_nic_qp_destroy(p->qp) == 0, "qp destroy: %s", gic_nic_error(p->nic));
	if (p->cq)
		CHECK(gic_nic_cq_destroy(p->cq) == 0, "cq destroy: %s", gic_nic_error(p->nic));
	if (p->mr)
		CHECK(gic_nic_dereg_mr(p->mr) == 0, "dereg: %s", gic_nic_error(p->nic));
	gic_nic_close(p->nic);
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

/* A record through the wire format, as a bootstrap carries it. */
static inline int pk_wire(const gic_conn_info *in, gic_conn_info *out)
{
	uint8_t w[GIC_CONN_WIRE_BYTES];

	if (gic_conn_pack(in, w, sizeof(w)))
		return EINVAL;
	return gic_conn_unpack(w, sizeof(w), out, NULL) ? EPROTO : 0;
}

/* Two PEs of this process, connected; *ra, *rb: a's and b's records as the
 * other side received them. 0 or an errno. */
static inline int pk_pair(pk_pe *a, pk_pe *b, gic_conn_info *ra, gic_conn_info *rb, int log_sq_bb)
{
	int rc = pk_open(a, log_sq_bb);

	memset(b, 0, sizeof(*b));
	if (!rc)
		rc = pk_open(b, log_sq_bb);
	if (!rc)
		rc = pk_wire(&a->me, ra) ? EPROTO : pk_wire(&b->me, rb);
	if (!rc)
		rc = gic_nic_qp_connect(a->qp, &a->me, rb);
	if (!rc)
		rc = gic_nic_qp_connect(b->qp, &b->me, ra);
	return rc;
}

/* Polls once (up to 16) and checks each completion against the next
 * expected wr_id. 0, or the poll's errno. */
static inline int pk_poll_some(pk_pe *p)
{
	gic_wc wc[16];
	int got = 0, rc = gic_nic_poll(p->cq, wc, 16, &got);

	for (int i = 0; i < got; i++) {
		int expected = p->head != p->tail;
		uint64_t want = expected ? p->expect[p->head % PK_EXPECT] : 0;

		CHECK(expected && wc[i].wr_id == want && wc[i].status == 0 &&
			      wc[i].qpn == p->qp->qpn,
		      "completion wr_id 0x%llx (want 0x%llx%s) status 0x%x vendor 0x%x qpn 0x%x "
		      "(QP 0x%x)", (unsigned long long)wc[i].wr_id, (unsigned long long)want,
		      expected ? "" : ": none expected", wc[i].status, wc[i].vendor_syndrome,
		      wc[i].qpn, p->qp->qpn);
		if (expected)
			p->head++;
	}
	if (rc)
		CHECK(0, "poll: %d %s", rc, gic_nic_error(p->nic));
	return rc;
}

/* Posts w[0..n) and records its signaled wr_ids; on ENOBUFS polls and
 * posts again (counted in *refused when not NULL). 0 or an errno. */
static inline int pk_post_retry(pk_pe *p, const gic_wr *w, int n, int *refused)
{
	uint64_t until = gic_now_ns() + PK_WAIT_NS;
	int rc;

	while ((rc = gic_nic_post(p->qp, w, n)) == ENOBUFS && gic_now_ns() < until) {
		if (refused)
			(*refused)++;
		if (pk_poll_some(p))
			return EIO;
	}
	for (int i = 0; !rc && i < n; i++)
		if (w[i].signaled)
			p->expect[p->tail++ % PK_EXPECT] = w[i].wr_id;
	return rc;
}

/* Waits until every signaled request completed; 0 or ETIMEDOUT/EIO. */
static inline int pk_drain(pk_pe *p)
{
	uint64_t until = gic_now_ns() + PK_WAIT_NS;

	while (p->head != p->tail) {
		if (pk_poll_some(p))
			return EIO;
		if (gic_now_ns() > until) {
			CHECK(0, "%u completions missing after 10 s", p->tail - p->head);
			return ETIMEDOUT;
		}
	}
	return 0;
}

/* Posts and waits for the chain's completions. */
static inline int pk_post_wait(pk_pe *p, const gic_wr *w, int n)
{
	int rc = pk_post_retry(p, w, n, NULL);

	return rc ? rc : pk_drain(p);
}

/* Posts, overwrites every source with byte at once (inline payloads were
 * copied at post time), then waits for the completions. */
static inline int pk_post_then(pk_pe *p, const gic_wr *w, int n, uint8_t byte)
{
	int rc = pk_post_retry(p, w, n, NULL);

	for (int i = 0; !rc && i < n; i++)
		memset((void *)(uintptr_t)w[i].laddr, byte, w[i].len);
	return rc ? rc : pk_drain(p);
}

/* Takes n completions whatever they are (10 s at most) into wc. */
static inline int pk_poll_n(pk_pe *p, gic_wc *wc, int n, int *got)
{
	uint64_t until = gic_now_ns() + PK_WAIT_NS;

	*got = 0;
	while (*got < n && gic_now_ns() < until) {
		int k = 0, rc = gic_nic_poll(p->cq, wc + *got, n - *got, &k);

		if (rc)
			return rc;
		*got += k;
	}
	return *got == n ? 0 : ETIMEDOUT;
}

/* Payload patterns and comparisons. */
static inline void pk_fill(uint8_t *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1664525u + 1013904223u;
		p[i] = (uint8_t)(x >> 24);
	}
}

static inline int pk_same(const uint8_t *a, const uint8_t *b, size_t n)
{
	return memcmp(a, b, n) == 0;
}

static inline int pk_all(const uint8_t *p, uint8_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

#endif /* GIC_MLX5_PROVIDER_KIT_H */
