/*
 * Queues in caller memory (gic/softnic.h, "Queues in caller memory"), on
 * the CPU engine: QPs, CQs and an SRQ whose rings and doorbell records are
 * the test's memory carry writes and sends (every payload checked, the
 * rings wrapped several times); softnic initialises that memory only when
 * asked (SOFTNIC_MEM_INIT) and writes nothing into it at create otherwise;
 * bad sizes, alignments and flags are refused with EINVAL and a message
 * naming the buffer; softnic never frees caller memory (destroy and close
 * leave it, and its queue allocator is asked only for what the caller did
 * not give). Every caller buffer sits between guard bytes that are checked
 * after the traffic.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gic/recv.h"
#include "testkit.h"

enum {
	GUARD = 256,         /* guard bytes around every caller buffer */
	GUARD_BYTE = 0x3c,
	GARBAGE = 0xa5,      /* what caller memory holds before an INIT create */
	LOG_SQ = 6, LOG_CQ = 5, LOG_RQ = 4, LOG_SRQ = 4,
	MSG = 512,           /* largest message */
	ROUNDS = 200,        /* writes: about 3 send rings, 6 CQ rings */
};

/* One caller buffer with guards on both sides, from the test's heap. */
typedef struct cbuf {
	uint8_t *alloc;
	softnic_qmem m;
} cbuf;

static void cbuf_make(cbuf *b, size_t len, uint8_t fill)
{
	b->alloc = aligned_alloc(4096, (GUARD + len + GUARD + 4095) / 4096 * 4096);
	b->m.addr = b->alloc ? b->alloc + GUARD : NULL;
	b->m.len = len;
	if (!b->alloc)
		return;
	memset(b->alloc, GUARD_BYTE, GUARD);
	memset(b->m.addr, fill, len);
	memset(b->alloc + GUARD + len, GUARD_BYTE, GUARD);
}

/* 1 when both guards are intact. */
static int cbuf_guards_ok(const cbuf *b)
{
	for (size_t i = 0; i < GUARD; i++)
		if (b->alloc[i] != GUARD_BYTE || b->alloc[GUARD + b->m.len + i] != GUARD_BYTE)
			return 0;
	return 1;
}

static void cbuf_free(cbuf *b)
{
	free(b->alloc);
	b->alloc = NULL;
}

/* ------------------------------------------------------------------ */
/* The fixture: PE0's QP a (send only) connected to PE1's QP b (own RQ),
 * PE0's QP c connected to PE1's QP d (receives from the SRQ). Every ring
 * and record of a, b, d, the three CQs and the SRQ is caller memory. */

enum { B_SQ, B_RQ, B_DB, A_SQ, A_DB, C_SQ, D_SQ, D_DB, SCQ_R, SCQ_D, RCQ_R, RCQ_D, SRQ_R,
       SRQ_D, NBUF };

typedef struct fix {
	tk_pair p;            /* only nic is used (tk_poll_cqe, tk_wait_retired) */
	cbuf buf[NBUF];
	softnic_pd *pd[2];
	softnic_cq *scq, *rcq, *scq2; /* scq2 (c's): softnic's memory */
	softnic_srq *srq;
	softnic_qp *a, *b, *c, *d;
	gic_sq sqa, sqc;
	gic_cq cqa, cqc, rcqv;
	gic_rq rqb, srqv;
	uint8_t *src, *dst;
	softnic_mr *src_mr, *dst_mr;
	uint8_t *snap[NBUF];  /* devx_no_init: the caller memory before create */
} fix;

static void fix_bufs(fix *f, const softnic_qp_attr *qa, const softnic_qp_attr *qb,
		     const softnic_cq_attr *ca, const softnic_srq_attr *sa, uint8_t fill)
{
	const size_t len[NBUF] = {
		[B_SQ] = softnic_qp_sq_bytes(qb), [B_RQ] = softnic_qp_rq_bytes(qb),
		[B_DB] = SOFTNIC_DBREC_BYTES, [A_SQ] = softnic_qp_sq_bytes(qa),
		[A_DB] = SOFTNIC_DBREC_BYTES, [C_SQ] = softnic_qp_sq_bytes(qa),
		[D_SQ] = softnic_qp_sq_bytes(qa), [D_DB] = SOFTNIC_DBREC_BYTES,
		[SCQ_R] = softnic_cq_ring_bytes(ca), [SCQ_D] = SOFTNIC_DBREC_BYTES,
		[RCQ_R] = softnic_cq_ring_bytes(ca), [RCQ_D] = SOFTNIC_DBREC_BYTES,
		[SRQ_R] = softnic_srq_ring_bytes(sa), [SRQ_D] = SOFTNIC_DBREC_BYTES,
	};

	for (int i = 0; i < NBUF; i++)
		cbuf_make(&f->buf[i], len[i], fill);
}

/* Makes the CQs and the SRQ in caller memory. 0 or an errno. */
static int fix_cqs(fix *f, softnic_cq_attr ca, softnic_srq_attr sa)
{
	ca.ring_mem = f->buf[SCQ_R].m;
	ca.dbrec_mem = f->buf[SCQ_D].m;
	f->scq = softnic_cq_create_ex(f->p.nic, &ca);
	ca.ring_mem = f->buf[RCQ_R].m;
	ca.dbrec_mem = f->buf[RCQ_D].m;
	f->rcq = softnic_cq_create_ex(f->p.nic, &ca);
	sa.ring_mem = f->buf[SRQ_R].m;
	sa.dbrec_mem = f->buf[SRQ_D].m;
	f->srq = softnic_srq_create(f->pd[1], &sa);
	f->scq2 = softnic_cq_create(f->p.nic, LOG_CQ);
	return f->scq && f->rcq && f->srq && f->scq2 ? 0 : errno;
}

/* Makes the four QPs (a, b, d in caller memory; c in softnic's) and
 * connects them. 0 or an errno. */
static int fix_qps(fix *f, softnic_qp_attr qa, softnic_qp_attr qb)
{
	softnic_qp_attr qc = qa, qd = qa;

	qa.send_cq = qb.send_cq = f->scq;
	qc.send_cq = qd.send_cq = f->scq2;
	qb.recv_cq = qd.recv_cq = f->rcq;
	qd.srq = f->srq;
	qa.sq_mem = f->buf[A_SQ].m;
	qa.dbrec_mem = f->buf[A_DB].m;
	qb.sq_mem = f->buf[B_SQ].m;
	qb.rq_mem = f->buf[B_RQ].m;
	qb.dbrec_mem = f->buf[B_DB].m;
	qd.sq_mem = f->buf[D_SQ].m;
	qd.dbrec_mem = f->buf[D_DB].m;
	f->a = softnic_qp_create(f->pd[0], &qa);
	f->b = softnic_qp_create(f->pd[1], &qb);
	f->c = softnic_qp_create(f->pd[0], &qc);
	f->d = softnic_qp_create(f->pd[1], &qd);
	if (!f->a || !f->b || !f->c || !f->d)
		return errno;
	if (softnic_qp_connect(f->a, f->b) || softnic_qp_connect(f->c, f->d))
		return ENOTCONN;
	return 0;
}

/* Regions and views. 0 or an errno. */
static int fix_views(fix *f)
{
	const int rights = SOFTNIC_ACCESS_LOCAL_WRITE | SOFTNIC_ACCESS_REMOTE_WRITE;
	softnic_qp_desc d;
	softnic_srq_desc sd;

	f->src = calloc(1, 1 << 16);
	f->dst = calloc(1, 1 << 16);
	if (!f->src || !f->dst)
		return ENOMEM;
	f->src_mr = softnic_reg_mr(f->pd[0], f->src, 1 << 16, SOFTNIC_ACCESS_LOCAL_WRITE);
	f->dst_mr = softnic_reg_mr(f->pd[1], f->dst, 1 << 16, rights);
	if (!f->src_mr || !f->dst_mr)
		return ENOMEM;
	softnic_qp_view(f->a, &f->sqa, &f->cqa);
	softnic_qp_view(f->c, &f->sqc, &f->cqc);
	softnic_cq_view(f->rcq, &f->rcqv);
	softnic_qp_desc_get(f->b, &d);
	gic_rq_init(&f->rqb, d.rq.buf, &d.dbrec[0], d.rq.wqe_cnt, d.rq.stride, 1, 0);
	softnic_srq_desc_get(f->srq, &sd);
	gic_rq_init(&f->srqv, sd.buf, sd.dbrec, sd.wqe_cnt, sd.stride, 1, 1);
	return 0;
}

/* The fixture with caller memory filled with fill and created with flags
 * (SOFTNIC_MEM_INIT or 0); prepare (may be NULL) runs between filling the
 * memory and creating the objects. NULL with a CHECK on failure. */
static fix *fix_open(uint8_t fill, uint32_t flags, void (*prepare)(fix *f))
{
	softnic_attr na = { .engine_threads = 1 };
	softnic_qp_attr qa = { .log_sq_bb = LOG_SQ, .rnr_retry = 7, .flags = flags };
	softnic_qp_attr qb = qa;
	softnic_cq_attr ca = { .log_cqe_cnt = LOG_CQ, .flags = flags };
	softnic_srq_attr sa = { .log_wqe_cnt = LOG_SRQ, .max_sge = 1, .flags = flags };
	fix *f = calloc(1, sizeof(*f));
	int rc = ENOMEM;

	qb.log_rq_wqe = LOG_RQ;
	qb.rq_max_sge = 1;
	if (f) {
		f->p.nic = softnic_open(&na);
		fix_bufs(f, &qa, &qb, &ca, &sa, fill);
	}
	if (f && f->p.nic) {
		if (prepare)
			prepare(f);
		f->pd[0] = softnic_pd_alloc(f->p.nic);
		f->pd[1] = softnic_pd_alloc(f->p.nic);
		rc = fix_cqs(f, ca, sa);
		if (!rc)
			rc = fix_qps(f, qa, qb);
		if (!rc)
			rc = fix_views(f);
	}
	CHECK(rc == 0, "fixture: %s (%s)", strerror(rc), f && f->p.nic ?
	      softnic_last_error(f->p.nic) : "no softnic");
	return f;
}

/* Closes the softnic (which must leave caller memory alone), then checks
 * the guards and frees the caller memory itself. */
static void fix_close(fix *f)
{
	if (!f)
		return;
	softnic_close(f->p.nic);
	for (int i = 0; i < NBUF; i++) {
		if (f->buf[i].alloc)
			CHECK(cbuf_guards_ok(&f->buf[i]), "guards of caller buffer %d", i);
		cbuf_free(&f->buf[i]);
	}
	free(f->src);
	free(f->dst);
	free(f);
}

/* ------------------------------------------------------------------ */
/* Traffic. */

/* ROUNDS signaled writes of 1..MSG bytes a -> b, each checked. */
static void writes(fix *f)
{
	uint64_t seed = 0x1234;

	for (int i = 0; i < ROUNDS; i++) {
		uint32_t len = 1 + (uint32_t)(tk_rand(&seed) % MSG), off = (uint32_t)(i % 64) * MSG;
		uint64_t pos;

		tk_fill(f->src + off, len, (uint64_t)i + 1);
		REQUIRE(gic_sq_reserve_excl(&f->sqa, 1, &pos, GIC_ORDER_RELEASE_SYS,
					    tk_deadline()) == 0, "reserve write %d", i);
		gic_wqe_write(&f->sqa, pos, GIC_OPCODE_RDMA_WRITE,
			      (uint64_t)(uintptr_t)(f->dst + off), softnic_mr_rkey(f->dst_mr),
			      (uint64_t)(uintptr_t)(f->src + off), softnic_mr_lkey(f->src_mr), len,
			      GIC_CTRL_CQ_UPDATE, 0);
		gic_sq_note_signaled(&f->sqa, pos + 1, 0);
		gic_sq_publish_excl(&f->sqa, GIC_ORDER_RELEASE_SYS);
		REQUIRE(tk_wait_retired(&f->p, &f->sqa, pos + 1) == 0, "write %d (%u bytes): %s", i,
			len, softnic_qp_error(f->a));
		CHECK(memcmp(f->dst + off, f->src + off, len) == 0, "write %d: %u bytes differ", i, len);
	}
}

/* One signaled SEND of len bytes from src + soff on sq; 0 once retired. */
static int send_one(fix *f, gic_sq *sq, uint32_t soff, uint32_t len)
{
	uint64_t pos;
	int rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline());

	if (rc)
		return rc;
	gic_wqe_send(sq, pos, GIC_OPCODE_SEND, (uint64_t)(uintptr_t)(f->src + soff),
		     softnic_mr_lkey(f->src_mr), len, GIC_CTRL_CQ_UPDATE, 0);
	gic_sq_note_signaled(sq, pos + 1, 0);
	gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
	return tk_wait_retired(&f->p, sq, pos + 1);
}

/* 3 queues' worth of sends on sq into rq (b's RQ or the SRQ), each into a
 * receive of MSG bytes: payload, byte count and receiving QP checked. */
static void sends(fix *f, gic_sq *sq, gic_rq *rq, softnic_qp *to, const char *what)
{
	uint32_t n = 3 * rq->wqe_cnt;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = 1 + (i * 37) % MSG, soff = 0x8000 + (i % 8) * MSG;
		uint32_t doff = 0x8000 + (gic_rq_next_slot(rq) % 16) * MSG;
		gic_sge sge = { (uint64_t)(uintptr_t)(f->dst + doff), softnic_mr_lkey(f->dst_mr), MSG };
		gic_cqe_info c;

		tk_fill(f->src + soff, len, 0x100u + i);
		memset(f->dst + doff, 0, MSG);
		REQUIRE(gic_rq_post(rq, &sge, 1) == 0, "%s: receive %u", what, i);
		REQUIRE(send_one(f, sq, soff, len) == 0, "%s: send %u: %s", what, i,
			softnic_qp_error(to));
		REQUIRE(tk_poll_cqe(&f->p, &f->rcqv, &c) == 0, "%s: receive CQE %u", what, i);
		CHECK(c.cqe_opcode == GIC_CQE_RESP_SEND && c.byte_cnt == len &&
		      c.qpn == softnic_qp_num(to), "%s: receive CQE %u: opcode %u, %u bytes, QP "
		      "0x%x", what, i, c.cqe_opcode, c.byte_cnt, c.qpn);
		CHECK(memcmp(f->dst + doff, f->src + soff, len) == 0, "%s: message %u differs",
		      what, i);
		gic_rq_completed(rq, c.wqe_counter);
	}
}

/* The descriptors name the caller's memory. */
static void check_descs(fix *f)
{
	softnic_qp_desc d;
	softnic_cq_desc cd;
	softnic_srq_desc sd;

	softnic_qp_desc_get(f->b, &d);
	CHECK(d.sq.buf == f->buf[B_SQ].m.addr && d.rq.buf == f->buf[B_RQ].m.addr &&
	      (void *)d.dbrec == f->buf[B_DB].m.addr, "b's descriptor: sq %p rq %p dbrec %p",
	      d.sq.buf, d.rq.buf, (void *)d.dbrec);
	CHECK(d.bf.reg && (d.bf.reg < (void *)f->buf[B_SQ].alloc ||
			   d.bf.reg >= (void *)(f->buf[B_SQ].alloc + 2 * GUARD + f->buf[B_SQ].m.len)),
	      "the doorbell register stays softnic's");
	softnic_cq_desc_get(f->scq, &cd);
	CHECK(cd.buf == f->buf[SCQ_R].m.addr && (void *)cd.dbrec == f->buf[SCQ_D].m.addr,
	      "send CQ's descriptor");
	softnic_srq_desc_get(f->srq, &sd);
	CHECK(sd.buf == f->buf[SRQ_R].m.addr && (void *)sd.dbrec == f->buf[SRQ_D].m.addr &&
	      sd.wqe_cnt == 1u << LOG_SRQ, "SRQ's descriptor");
}

static void traffic(fix *f)
{
	check_descs(f);
	writes(f);
	sends(f, &f->sqa, &f->rqb, f->b, "a -> b's RQ");
	sends(f, &f->sqc, &f->srqv, f->d, "c -> the SRQ");
	CHECK(!softnic_qp_in_error(f->a) && !softnic_qp_in_error(f->b) &&
	      !softnic_qp_in_error(f->d), "QPs in error: '%s' '%s' '%s'", softnic_qp_error(f->a),
	      softnic_qp_error(f->b), softnic_qp_error(f->d));
}

/* Garbage in the caller memory, SOFTNIC_MEM_INIT: softnic makes it a
 * fresh queue's (zeroed records, 0xf1 CQEs, linked SRQ). */
CASE(init_traffic)
{
	fix *f = fix_open(GARBAGE, SOFTNIC_MEM_INIT, NULL);

	if (f && f->d) {
		const gic_cqe64 *cqe = f->buf[RCQ_R].m.addr;
		const uint32_t *db = f->buf[B_DB].m.addr;

		CHECK(cqe[3].op_own == 0xf1 && db[0] == 0 && db[1] == 0 &&
		      ((const uint8_t *)f->buf[A_SQ].m.addr)[100] == 0,
		      "initialised: op_own 0x%02x, record %08x %08x", cqe[3].op_own, db[0], db[1]);
		traffic(f);
	}
	fix_close(f);
}

/* DEVX style: the caller lays its memory out as hardware expects it
 * (records zeroed, CQEs rdma-core's 0xf0 invalid, the SRQ linked) with a
 * pattern elsewhere, and keeps a copy to compare after create. */
static void prepare_devx(fix *f)
{
	const int dbs[] = { B_DB, A_DB, D_DB, SCQ_D, RCQ_D, SRQ_D };
	const int cqs[] = { SCQ_R, RCQ_R };
	uint32_t stride = (uint32_t)(f->buf[SRQ_R].m.len >> LOG_SRQ);

	for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++)
		memset(f->buf[dbs[i]].m.addr, 0, SOFTNIC_DBREC_BYTES);
	for (size_t i = 0; i < 2; i++)
		for (uint32_t e = 0; e < 1u << LOG_CQ; e++)
			((gic_cqe64 *)f->buf[cqs[i]].m.addr)[e].op_own = 0xf0;
	for (uint32_t w = 0; w < 1u << LOG_SRQ; w++) {
		gic_srq_next_seg *n = (gic_srq_next_seg *)((uint8_t *)f->buf[SRQ_R].m.addr +
							   (size_t)w * stride);

		n->next_wqe_index_be = gic_htobe16((uint16_t)((w + 1) & ((1u << LOG_SRQ) - 1)));
	}
	for (int i = 0; i < NBUF; i++) {
		f->snap[i] = malloc(f->buf[i].m.len);
		if (f->snap[i])
			memcpy(f->snap[i], f->buf[i].m.addr, f->buf[i].m.len);
	}
}

/* Without SOFTNIC_MEM_INIT softnic writes none of the caller memory at
 * create, and the queues the caller laid out work. */
CASE(devx_no_init)
{
	fix *f = fix_open(0x5a, 0, prepare_devx);

	for (int i = 0; f && f->d && i < NBUF; i++)
		CHECK(f->snap[i] && memcmp(f->snap[i], f->buf[i].m.addr, f->buf[i].m.len) == 0,
		      "caller buffer %d changed at create", i);
	if (f && f->d)
		traffic(f);
	for (int i = 0; f && i < NBUF; i++)
		free(f->snap[i]);
	fix_close(f);
}

/* ------------------------------------------------------------------ */
/* Refusals. */

/* Expects create to have failed with EINVAL and a last error naming
 * want; what names the case. */
static void expect_refused(softnic *nic, const void *obj, int err, const char *want,
			   const char *what)
{
	CHECK(!obj && err == EINVAL, "%s: created %p, errno %d", what, obj, err);
	CHECK(strstr(softnic_last_error(nic), want) != NULL, "%s: last error '%s' lacks '%s'",
	      what, softnic_last_error(nic), want);
}

static void bad_cq_cases(softnic *nic, uint8_t *mem)
{
	softnic_cq_attr ca = { .log_cqe_cnt = 4 };
	softnic_cq *cq;

	CHECK(softnic_cq_ring_bytes(&ca) == 16 * 64, "CQ ring bytes %zu",
	      softnic_cq_ring_bytes(&ca));
	ca.ring_mem = (softnic_qmem){ mem, 16 * 64 - 1 };
	errno = 0;
	cq = softnic_cq_create_ex(nic, &ca);
	expect_refused(nic, cq, errno, "CQE ring", "CQ ring one byte short");
	ca.ring_mem = (softnic_qmem){ mem + 32, 16 * 64 };
	errno = 0;
	cq = softnic_cq_create_ex(nic, &ca);
	expect_refused(nic, cq, errno, "not aligned", "CQ ring at 32 bytes");
	ca.ring_mem = (softnic_qmem){ 0 };
	ca.dbrec_mem = (softnic_qmem){ mem + 4, 8 };
	errno = 0;
	cq = softnic_cq_create_ex(nic, &ca);
	expect_refused(nic, cq, errno, "doorbell record", "CQ record at 4 bytes");
	ca.dbrec_mem = (softnic_qmem){ mem, 4 };
	errno = 0;
	cq = softnic_cq_create_ex(nic, &ca);
	expect_refused(nic, cq, errno, "needs 8", "CQ record of 4 bytes");
	ca.dbrec_mem = (softnic_qmem){ 0 };
	ca.flags = 2;
	errno = 0;
	cq = softnic_cq_create_ex(nic, &ca);
	expect_refused(nic, cq, errno, "flags", "CQ with unknown flags");
}

static void bad_srq_cases(softnic *nic, softnic_pd *pd, uint8_t *mem)
{
	softnic_srq_attr sa = { .log_wqe_cnt = 3, .max_sge = 3 };
	softnic_srq *srq;

	/* next segment + 3 data segments = 64 bytes a WQE. */
	CHECK(softnic_srq_ring_bytes(&sa) == 8 * 64, "SRQ ring bytes %zu",
	      softnic_srq_ring_bytes(&sa));
	sa.ring_mem = (softnic_qmem){ mem, 8 * 64 - 16 };
	errno = 0;
	srq = softnic_srq_create(pd, &sa);
	expect_refused(nic, srq, errno, "SRQ ring", "SRQ ring short");
	sa.ring_mem = (softnic_qmem){ mem + 16, 8 * 64 };
	errno = 0;
	srq = softnic_srq_create(pd, &sa);
	expect_refused(nic, srq, errno, "not aligned", "SRQ ring at 16 bytes");
	sa.ring_mem = (softnic_qmem){ 0 };
	sa.dbrec_mem = (softnic_qmem){ mem + 2, 8 };
	errno = 0;
	srq = softnic_srq_create(pd, &sa);
	expect_refused(nic, srq, errno, "doorbell record", "SRQ record at 2 bytes");
}

static void bad_qp_cases(softnic *nic, softnic_pd *pd, softnic_cq *cq, uint8_t *mem)
{
	softnic_qp_attr qa = { .log_sq_bb = 5, .send_cq = cq, .recv_cq = cq };
	softnic_qp *qp;

	CHECK(softnic_qp_sq_bytes(&qa) == 32 * 64 && softnic_qp_rq_bytes(&qa) == 0,
	      "QP bytes %zu %zu", softnic_qp_sq_bytes(&qa), softnic_qp_rq_bytes(&qa));
	qa.sq_mem = (softnic_qmem){ mem, 32 * 64 - 64 };
	errno = 0;
	qp = softnic_qp_create(pd, &qa);
	expect_refused(nic, qp, errno, "send ring", "send ring one BB short");
	qa.sq_mem = (softnic_qmem){ mem + 8, 32 * 64 };
	errno = 0;
	qp = softnic_qp_create(pd, &qa);
	expect_refused(nic, qp, errno, "not aligned", "send ring at 8 bytes");
	qa.sq_mem = (softnic_qmem){ 0 };
	qa.rq_mem = (softnic_qmem){ mem, 4096 };
	errno = 0;
	qp = softnic_qp_create(pd, &qa);
	expect_refused(nic, qp, errno, "no receive queue", "receive ring without an RQ");
	qa.log_rq_wqe = 3;
	qa.rq_max_sge = 3; /* stride 64 */
	CHECK(softnic_qp_rq_bytes(&qa) == 8 * 64, "RQ bytes %zu", softnic_qp_rq_bytes(&qa));
	qa.rq_mem = (softnic_qmem){ mem, 8 * 64 - 1 };
	errno = 0;
	qp = softnic_qp_create(pd, &qa);
	expect_refused(nic, qp, errno, "receive ring", "receive ring short");
	qa.rq_mem = (softnic_qmem){ 0 };
	qa.dbrec_mem = (softnic_qmem){ mem + 12, 8 };
	errno = 0;
	qp = softnic_qp_create(pd, &qa);
	expect_refused(nic, qp, errno, "doorbell record", "QP record at 12 bytes");
	qa.dbrec_mem = (softnic_qmem){ (void *)(uintptr_t)(UINTPTR_MAX & ~(uintptr_t)7), 16 };
	errno = 0;
	qp = softnic_qp_create(pd, &qa);
	expect_refused(nic, qp, errno, "wrap", "QP record that wraps the address space");
	qa.dbrec_mem = (softnic_qmem){ 0 };
	qa.flags = 1u << 20;
	errno = 0;
	qp = softnic_qp_create(pd, &qa);
	expect_refused(nic, qp, errno, "flags", "QP with unknown flags");
}

/* Each refusal leaves the caller memory as it was. */
CASE(bad_memory)
{
	softnic_attr na = { .engine_threads = 0 };
	softnic *nic = softnic_open(&na);
	softnic_pd *pd = nic ? softnic_pd_alloc(nic) : NULL;
	softnic_cq *cq = nic ? softnic_cq_create(nic, 4) : NULL;
	cbuf b;

	REQUIRE(pd && cq, "softnic: %s", strerror(errno));
	cbuf_make(&b, 8192, 0x77);
	REQUIRE(b.alloc, "memory");
	bad_cq_cases(nic, b.m.addr);
	bad_srq_cases(nic, pd, b.m.addr);
	bad_qp_cases(nic, pd, cq, b.m.addr);
	for (size_t i = 0; i < b.m.len; i++)
		if (((uint8_t *)b.m.addr)[i] != 0x77) {
			CHECK(0, "a refused create wrote caller byte %zu", i);
			break;
		}
	CHECK(cbuf_guards_ok(&b), "guards");
	softnic_close(nic);
	cbuf_free(&b);
}

/* ------------------------------------------------------------------ */
/* Ownership. */

typedef struct counting {
	int allocs, frees;
} counting;

static void *count_alloc(size_t size, size_t align, void *ctx)
{
	void *p = NULL;

	((counting *)ctx)->allocs++;
	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size))
		return NULL;
	memset(p, 0, size);
	return p;
}

static void count_free(void *p, void *ctx)
{
	((counting *)ctx)->frees++;
	free(p);
}

/* softnic asks its allocator only for what the caller did not give (the
 * doorbell register, and a CQ's record here), frees only that, and leaves
 * caller memory (with the CQEs it wrote) in place at destroy and close. */
CASE(ownership)
{
	counting n = { 0 };
	softnic_allocator al = { count_alloc, count_free, NULL, &n };
	softnic_attr na = { .engine_threads = 0, .queue_mem = &al };
	softnic *nic = softnic_open(&na);
	softnic_pd *pd = nic ? softnic_pd_alloc(nic) : NULL;
	softnic_cq_attr ca = { .log_cqe_cnt = 3, .flags = SOFTNIC_MEM_INIT };
	softnic_qp_attr qa = { .log_sq_bb = 3, .flags = SOFTNIC_MEM_INIT };
	softnic_cq *cq;
	softnic_qp *qp[2];
	cbuf ring, sq[2], db[2];

	REQUIRE(pd, "softnic");
	cbuf_make(&ring, softnic_cq_ring_bytes(&ca), GARBAGE);
	ca.ring_mem = ring.m; /* the record is softnic's */
	cq = softnic_cq_create_ex(nic, &ca);
	REQUIRE(cq && n.allocs == 1, "CQ: %s, %d allocations", softnic_last_error(nic), n.allocs);
	qa.send_cq = cq;
	for (int i = 0; i < 2; i++) {
		cbuf_make(&sq[i], softnic_qp_sq_bytes(&qa), GARBAGE);
		cbuf_make(&db[i], SOFTNIC_DBREC_BYTES, GARBAGE);
		qa.sq_mem = sq[i].m;
		qa.dbrec_mem = db[i].m;
		qp[i] = softnic_qp_create(pd, &qa);
		REQUIRE(qp[i], "QP %d: %s", i, softnic_last_error(nic));
	}
	CHECK(n.allocs == 3, "allocations %d: want the CQ record and two doorbell registers",
	      n.allocs);
	CHECK(softnic_qp_destroy(qp[0]) == 0 && n.frees == 1, "destroy: %d frees", n.frees);
	memset(sq[0].m.addr, 1, sq[0].m.len); /* still the caller's to use */
	CHECK(((uint8_t *)ring.m.addr)[63] == 0xf1, "CQE ring left as softnic initialised it");
	softnic_close(nic); /* qp[1] and cq still alive: close frees only its own */
	CHECK(n.frees == 3, "close: %d frees, want 3", n.frees);
	CHECK(((uint8_t *)ring.m.addr)[63] == 0xf1 && ((uint32_t *)db[1].m.addr)[1] == 0,
	      "caller memory intact after close");
	for (int i = 0; i < 2; i++) {
		CHECK(cbuf_guards_ok(&sq[i]) && cbuf_guards_ok(&db[i]), "guards %d", i);
		cbuf_free(&sq[i]);
		cbuf_free(&db[i]);
	}
	CHECK(cbuf_guards_ok(&ring), "ring guards");
	cbuf_free(&ring);
}

/* Polls one CQE of cq within the deadline (the engine runs on its own). */
static int poll_cqe(gic_cq *cq, gic_cqe_info *out)
{
	uint64_t end = tk_deadline();

	while (gic_cq_poll_one(cq, out, GIC_ORDER_RELEASE_SYS))
		if (gic_now_ns() > end)
			return ETIMEDOUT;
	return 0;
}

/* A QP with the doorbell register reg (and flags) connected to a second
 * QP, its CQ and views. 0, or 1 (the reason in the last error). */
static int shared_pair(softnic *nic, softnic_pd *pd, uint64_t *reg, uint32_t flags,
		       softnic_cq **cq, softnic_qp **a, softnic_qp **b, gic_sq *sq, gic_cq *cv)
{
	softnic_qp_attr qa = { .log_sq_bb = 8, .flags = flags };
	softnic_qp_attr qb = { .log_sq_bb = 2 };

	*cq = softnic_cq_create(nic, 8);
	qa.send_cq = qb.send_cq = *cq;
	qa.db_mem = (softnic_qmem){ reg, 64 };
	*a = *cq ? softnic_qp_create(pd, &qa) : NULL;
	*b = *cq ? softnic_qp_create(pd, &qb) : NULL;
	if (!*a || !*b || softnic_qp_connect(*a, *b) || softnic_qp_view(*a, sq, cv))
		return 1;
	CHECK(sq->db == reg, "the QP rings the caller's register");
	return 0;
}

/* Two QPs ringing one doorbell register in caller memory (a UAR page's,
 * as DEVX QPs share it), in strict mode: with SOFTNIC_QP_SHARED_DB every
 * write of both completes and lands, a doorbell naming the other QP being
 * only a reason to read the record; a third QP on the same register
 * without the flag takes the next foreign doorbell as the protocol error
 * strict mode reports (on its next WQE). */
CASE(shared_doorbell)
{
	enum { N = 64 };
	softnic_attr na = { .engine_threads = 1, .strict = 1 };
	softnic *nic = softnic_open(&na);
	softnic_pd *pd = nic ? softnic_pd_alloc(nic) : NULL;
	softnic_cq *cq[3];
	softnic_qp *a[3], *b[3];
	gic_sq sq[3];
	gic_cq cv[3];
	uint64_t *reg = aligned_alloc(64, 64), *dst = aligned_alloc(64, 3 * N * 8);
	softnic_mr *mr;
	gic_cqe_info info = { 0 };

	REQUIRE(pd && reg && dst, "setup");
	memset(reg, 0, 64);
	memset(dst, 0, 3 * N * 8);
	mr = softnic_reg_mr(pd, dst, 3 * N * 8, SOFTNIC_ACCESS_LOCAL_WRITE |
						 SOFTNIC_ACCESS_REMOTE_WRITE);
	for (int i = 0; i < 2; i++)
		REQUIRE(!shared_pair(nic, pd, reg, SOFTNIC_QP_SHARED_DB, &cq[i], &a[i], &b[i], &sq[i],
				     &cv[i]), "QP pair %d: %s", i, softnic_last_error(nic));
	/* Alternating doorbells of QPs 0 and 1 on the one register. */
	for (int k = 0; k < N; k++)
		for (int i = 0; i < 2; i++) {
			uint64_t pos = sq[i].resv++;

			gic_wqe_write_inline_u64(&sq[i], pos, (uint64_t)(uintptr_t)&dst[i * N + k],
						 softnic_mr_rkey(mr), 1000u * (uint64_t)i + (uint64_t)k,
						 GIC_CTRL_CQ_UPDATE);
			gic_sq_ring(&sq[i], sq[i].resv, GIC_ORDER_RELEASE_SYS);
		}
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < N; k++) {
			int rc = poll_cqe(&cv[i], &info);

			CHECK(!rc && !info.syndrome, "QP %d write %d: %s, syndrome 0x%x (vendor %s)", i,
			      k, rc ? "no CQE" : "a CQE", rc ? 0 : info.syndrome,
			      rc ? "-" : softnic_vsynd_text(info.vendor_syndrome));
			if (rc)
				break;
		}
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < N; k++)
			CHECK(dst[i * N + k] == 1000u * (uint64_t)i + (uint64_t)k,
			      "QP %d write %d did not land", i, k);
	/* QP 2 shares the register without saying so: QP 0's next doorbell
	 * is a foreign one for it, a protocol error. */
	REQUIRE(!shared_pair(nic, pd, reg, 0, &cq[2], &a[2], &b[2], &sq[2], &cv[2]), "QP pair 2");
	gic_wqe_nop(&sq[0], sq[0].resv++, GIC_CTRL_CQ_UPDATE);
	gic_sq_ring(&sq[0], sq[0].resv, GIC_ORDER_RELEASE_SYS);
	CHECK(!poll_cqe(&cv[0], &info) && !info.syndrome, "QP 0's NOP on the shared register");
	/* QP 2's engine pass has to see QP 0's doorbell before QP 2 rings its
	 * own over it: the error moves QP 2 to the error state. */
	for (uint64_t end = tk_deadline(); !softnic_qp_in_error(a[2]) && gic_now_ns() < end;)
		;
	CHECK(softnic_qp_in_error(a[2]), "QP 2 in error after the foreign doorbell");
	/* Its next WQE carries the error (as every doorbell error). */
	gic_wqe_nop(&sq[2], sq[2].resv++, GIC_CTRL_CQ_UPDATE);
	gic_sq_ring(&sq[2], sq[2].resv, GIC_ORDER_RELEASE_SYS);
	memset(&info, 0, sizeof(info));
	CHECK(!poll_cqe(&cv[2], &info) && info.vendor_syndrome == SOFTNIC_VSYND_STRICT_DB_QPN,
	      "QP 2 without SOFTNIC_QP_SHARED_DB: the foreign doorbell's error, got vendor "
	      "syndrome 0x%x", info.vendor_syndrome);
	softnic_close(nic);
	CHECK(reg[1] == 0 && reg[7] == 0, "softnic wrote into the caller's register");
	free(reg);
	free(dst);
}

int main(int argc, char **argv)
{
	static const tk_case cases[] = {
		TK_ENTRY(init_traffic),
		TK_ENTRY(devx_no_init),
		TK_ENTRY(bad_memory),
		TK_ENTRY(ownership),
		TK_ENTRY(shared_doorbell),
	};

	return tk_run_cases("test_caller_queues", cases, sizeof(cases) / sizeof(cases[0]), argc,
			    argv);
}
