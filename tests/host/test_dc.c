/*
 * softnic's dynamically connected transport and the DUMP opcode, driven by
 * host threads. The same file runs on the GPU engine as gic-gpu-dc
 * (tests/gpu/tk_gpu_engine.c swaps the engine). A DCI in one PD reaches a
 * DCT in another PD of the same softnic; its WQEs carry a compact (16-byte)
 * or full (48-byte) address vector after the control segment. Every
 * transfer's payload is checked, and the target region's guard zones must
 * stay untouched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gic/recv.h"
#include "testkit.h"

enum {
	REGION = 1 << 16,  /* target and initiator regions */
	RBUF = 1024,       /* bytes per receive buffer */
	NRBUF = 8,         /* receive buffers (an SRQ of 16 WQEs) */
	FULL = 48,         /* AV forms, in bytes */
	COMPACT = 16,
};

static const uint64_t DC_KEY = 0x0123456789abcdefull;
static const uint8_t SIG = GIC_CTRL_CQ_UPDATE;

typedef struct dc_cfg {
	int log_sq_bb;      /* DCI's ring (default 6) */
	int rnr_retry;      /* DCI's */
	int min_rnr_timer;  /* DCT's (default 1: 10 us) */
	int dst_access;     /* target region's rights (default all remote + local write) */
} dc_cfg;

typedef struct dc_fx {
	tk_pair shim;       /* only .nic: for tk_poll_cqe and tk_expect_cqe */
	softnic *nic;
	softnic_pd *pd_i, *pd_t;
	softnic_cq *scq, *rcq;
	softnic_srq *srq;
	softnic_qp *dci, *dct;
	gic_sq sq;
	gic_cq cqv, rcqv;
	gic_rq rq;
	uint8_t *tmem;      /* guard | target region | guard */
	uint8_t *dst;
	uint8_t *src;       /* initiator: sources, read landing, atomic results */
	uint8_t *rbuf;      /* the DCT's receive buffers */
	softnic_mr *dst_mr, *src_mr, *rbuf_mr;
	uint32_t dctn;
	dc_cfg cfg;
} dc_fx;

/* ------------------------------------------------------------------ */
/* Fixture. */

/* A fresh DCI with a send CQ of its own (an old one stays with the old
 * DCI's leftovers). 0 or an errno. */
static int dci_open(dc_fx *f)
{
	softnic_qp_attr a = { .log_sq_bb = f->cfg.log_sq_bb, .rnr_retry = f->cfg.rnr_retry,
			      .flags = SOFTNIC_QP_DCI };

	if (f->dci && softnic_qp_destroy(f->dci))
		return EBUSY;
	if (f->scq && softnic_cq_destroy(f->scq))
		return EBUSY;
	f->dci = NULL;
	f->scq = softnic_cq_create(f->nic, 8);
	a.send_cq = f->scq;
	f->dci = f->scq ? softnic_qp_create(f->pd_i, &a) : NULL;
	if (!f->dci)
		return errno ? errno : ENOMEM;
	return softnic_qp_view(f->dci, &f->sq, &f->cqv);
}

static int dct_open(dc_fx *f)
{
	softnic_srq_attr sa = { .log_wqe_cnt = 4, .max_sge = 1 };
	softnic_qp_attr a = { .log_sq_bb = 1, .recv_cq = f->rcq, .flags = SOFTNIC_QP_DCT,
			      .dc_key = DC_KEY, .min_rnr_timer = f->cfg.min_rnr_timer };
	softnic_srq_desc sd;

	f->srq = softnic_srq_create(f->pd_t, &sa);
	if (!f->srq || softnic_srq_desc_get(f->srq, &sd))
		return ENOMEM;
	gic_rq_init(&f->rq, sd.buf, sd.dbrec, sd.wqe_cnt, sd.stride, 1, 1);
	a.srq = f->srq;
	f->dct = softnic_qp_create(f->pd_t, &a);
	if (!f->dct)
		return errno;
	f->dctn = softnic_qp_num(f->dct);
	return 0;
}

static int regions_open(dc_fx *f)
{
	int access = f->cfg.dst_access ? f->cfg.dst_access
				       : SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_READ |
					 SOFTNIC_ACCESS_REMOTE_ATOMIC | SOFTNIC_ACCESS_LOCAL_WRITE;

	f->tmem = tk_mem_alloc(REGION + 2 * TK_GUARD);
	f->src = tk_mem_alloc(REGION);
	f->rbuf = tk_mem_alloc(NRBUF * RBUF);
	if (!f->tmem || !f->src || !f->rbuf)
		return ENOMEM;
	memset(f->tmem, 0xa5, REGION + 2 * TK_GUARD);
	memset(f->src, 0, REGION);
	memset(f->rbuf, 0, NRBUF * RBUF);
	f->dst = f->tmem + TK_GUARD;
	f->dst_mr = softnic_reg_mr(f->pd_t, f->dst, REGION, access);
	f->src_mr = softnic_reg_mr(f->pd_i, f->src, REGION, SOFTNIC_ACCESS_LOCAL_WRITE);
	f->rbuf_mr = softnic_reg_mr(f->pd_t, f->rbuf, NRBUF * RBUF, SOFTNIC_ACCESS_LOCAL_WRITE);
	return f->dst_mr && f->src_mr && f->rbuf_mr ? 0 : ENOMEM;
}

static void fx_close(dc_fx *f)
{
	if (!f)
		return;
	if (f->nic)
		softnic_close(f->nic); /* frees every object */
	tk_mem_free(f->tmem);
	tk_mem_free(f->src);
	tk_mem_free(f->rbuf);
	free(f);
}

/* One softnic with a DCI (PD i) and a DCT (PD t, an SRQ of 16 WQEs); NULL
 * with a message on failure. */
static dc_fx *fx_open(const dc_cfg *cfg)
{
	softnic_attr na = { .engine_threads = 1 };
	dc_fx *f = calloc(1, sizeof(*f));
	int rc = ENOMEM;

	if (!f)
		return NULL;
	f->cfg = cfg ? *cfg : (dc_cfg){ 0 };
	if (!f->cfg.log_sq_bb)
		f->cfg.log_sq_bb = 6;
	if (!f->cfg.min_rnr_timer)
		f->cfg.min_rnr_timer = 1;
	f->nic = tk_engine_used->open(&na);
	f->shim.nic = f->nic;
	if (f->nic) {
		f->pd_i = softnic_pd_alloc(f->nic);
		f->pd_t = softnic_pd_alloc(f->nic);
		f->rcq = softnic_cq_create(f->nic, 6);
		rc = f->pd_i && f->pd_t && f->rcq ? 0 : ENOMEM;
	}
	if (!rc)
		rc = softnic_cq_view(f->rcq, &f->rcqv);
	if (!rc)
		rc = regions_open(f);
	if (!rc)
		rc = dct_open(f);
	if (!rc)
		rc = dci_open(f);
	if (rc) {
		fprintf(stderr, "dc fixture: %s (%s)\n", strerror(rc),
			f->nic ? softnic_last_error(f->nic) : "open");
		fx_close(f);
		return NULL;
	}
	return f;
}

static int guards_intact(const dc_fx *f)
{
	for (size_t i = 0; i < TK_GUARD; i++)
		if (f->tmem[i] != 0xa5 || f->tmem[TK_GUARD + REGION + i] != 0xa5)
			return 0;
	return 1;
}

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

/* ------------------------------------------------------------------ */
/* WQEs built segment by segment. */

typedef struct wqe {
	uint8_t b[GIC_WQE_MAX_DS * GIC_SEG_SIZE] __attribute__((aligned(16)));
	uint32_t len;       /* bytes so far (a multiple of 16); ctrl first */
} wqe;

/* Appends n bytes, zero-padded to a whole segment. */
static void put(wqe *q, const void *p, uint32_t n)
{
	uint32_t padded = (n + GIC_SEG_SIZE - 1) & ~(uint32_t)(GIC_SEG_SIZE - 1);

	memset(q->b + q->len, 0, padded);
	memcpy(q->b + q->len, p, n);
	q->len += padded;
}

/* A WQE that starts with room for its control segment and, for av 16 or
 * 48, an address vector of that form naming dctn with key. */
static void begin(wqe *q, int av, uint32_t dctn, uint64_t key)
{
	static const uint8_t rmac[6] = { 2, 0, 0, 0, 0, 1 }, rgid[16] = { 0xfe, 0x80 };
	gic_av_seg a;

	memset(&a, 0, sizeof(a));
	q->len = GIC_SEG_SIZE;
	if (av == FULL)
		gic_set_av_full(&a, key, dctn, 0, 0, rmac, 0, 64, 0, rgid);
	else
		gic_set_av_compact(&a, key, dctn, 0, 0);
	if (av)
		put(q, &a, (uint32_t)av);
}

static void put_raddr(wqe *q, uint64_t raddr, uint32_t rkey)
{
	gic_raddr_seg r = gic_make_raddr_seg(raddr, rkey);

	put(q, &r, sizeof(r));
}

static void put_data(wqe *q, const void *addr, uint32_t lkey, uint32_t len)
{
	gic_data_seg d = gic_make_data_seg(len, lkey, addr_of(addr));

	put(q, &d, sizeof(d));
}

static void put_inline(wqe *q, const void *data, uint32_t len)
{
	uint8_t tmp[GIC_WQE_MAX_DS * GIC_SEG_SIZE];
	uint32_t hdr = gic_inline_hdr_be(len);

	memcpy(tmp, &hdr, 4);
	memcpy(tmp + 4, data, len);
	put(q, tmp, 4 + len);
}

/* Writes the control segment (ds: 0 for the WQE's own length), copies the
 * WQE into the ring at the next position (wrapping), rings. Returns the
 * position, or ~0 when the ring has no room within the deadline. */
static uint64_t post_ds(gic_sq *sq, wqe *q, uint8_t opcode, uint8_t opmod, uint8_t fm,
			uint32_t imm, uint32_t ds)
{
	uint32_t c[4] GIC_ALIGN16, nbb;
	uint64_t pos;

	if (!ds)
		ds = q->len / GIC_SEG_SIZE;
	nbb = gic_bb_for_ds(ds);
	if (gic_sq_reserve_excl(sq, nbb, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline()))
		return ~0ull;
	gic_ctrl_seg_words(c, (uint16_t)pos, opcode, opmod, sq->qpn, fm, (uint8_t)ds, imm);
	memcpy(q->b, c, sizeof(c));
	for (uint32_t i = 0; i < nbb * GIC_SEGS_PER_BB; i++)
		gic_st_seg16(gic_sq_seg(sq, pos, i), q->b + i * GIC_SEG_SIZE);
	if (fm & GIC_CTRL_CQ_UPDATE)
		gic_sq_note_signaled(sq, pos + nbb, 0);
	gic_sq_publish_excl(sq, GIC_ORDER_RELEASE_SYS);
	return pos;
}

static uint64_t post(gic_sq *sq, wqe *q, uint8_t opcode, uint8_t fm)
{
	return post_ds(sq, q, opcode, 0, fm, 0, 0);
}

/* Polls the DCI's next CQE and retires the ring up to the WQE it
 * reports (the view's own pollers are not used here). 0 or ETIMEDOUT. */
static int poll_dci(dc_fx *f, gic_cqe_info *c)
{
	int rc = tk_poll_cqe(&f->shim, &f->cqv, c);

	if (!rc)
		f->sq.retired = gic_sq_retired_after(&f->sq, f->sq.retired, c->wqe_counter);
	return rc;
}

/* The next CQE of the DCI's send CQ must be this one. */
static int expect_req(dc_fx *f, uint8_t opcode, uint8_t synd, uint8_t vs, const char *what)
{
	gic_cqe_info c;
	int rc = poll_dci(f, &c);

	CHECK(rc == 0, "%s: no CQE within the deadline", what);
	if (rc)
		return 1;
	CHECK(c.cqe_opcode == opcode && c.syndrome == synd && c.vendor_syndrome == vs,
	      "%s: CQE opcode %u syndrome 0x%x (%s) vendor 0x%x (%s), want %u, 0x%x, 0x%x", what,
	      c.cqe_opcode, c.syndrome, gic_syndrome_name(c.syndrome), c.vendor_syndrome,
	      softnic_vsynd_text(c.vendor_syndrome), opcode, synd, vs);
	CHECK(c.qpn == f->sq.qpn, "%s: CQE of QP 0x%x, want 0x%x", what, c.qpn, f->sq.qpn);
	return c.cqe_opcode != opcode || c.syndrome != synd || c.vendor_syndrome != vs;
}

/* Polls the DCI's next CQE; it must be a good one of wqe_opcode. */
static int expect_ok(dc_fx *f, uint8_t wqe_opcode, uint32_t byte_cnt, const char *what)
{
	gic_cqe_info c;
	int rc = poll_dci(f, &c);

	CHECK(rc == 0, "%s: no CQE (%s)", what, softnic_qp_error(f->dci));
	if (rc)
		return 1;
	CHECK(c.cqe_opcode == GIC_CQE_REQ, "%s: CQE opcode %u syndrome 0x%x vs 0x%x (%s)", what,
	      c.cqe_opcode, c.syndrome, c.vendor_syndrome, softnic_qp_error(f->dci));
	CHECK(c.wqe_opcode == wqe_opcode, "%s: CQE of opcode 0x%x, want 0x%x", what, c.wqe_opcode,
	      wqe_opcode);
	CHECK(c.byte_cnt == byte_cnt, "%s: byte count %u, want %u", what, c.byte_cnt, byte_cnt);
	CHECK(c.qpn == f->sq.qpn, "%s: CQE of QP 0x%x, want the DCI 0x%x", what, c.qpn, f->sq.qpn);
	return c.cqe_opcode != GIC_CQE_REQ;
}

/* Posts one receive buffer (index b) to the DCT's SRQ. */
static int post_recv(dc_fx *f, uint32_t b)
{
	gic_sge s = { addr_of(f->rbuf + (size_t)b * RBUF), softnic_mr_lkey(f->rbuf_mr), RBUF };

	return gic_rq_post(&f->rq, &s, 1);
}

/* ------------------------------------------------------------------ */
/* Writes, reads, atomics, sends. */

/* A DC RDMA write (inline or from the initiator region) of len bytes to
 * dst + off, signaled, through an AV of form av; its payload checked. */
static void write_one(dc_fx *f, int av, int inl, uint64_t off, uint32_t len, uint64_t seed)
{
	uint8_t want[1024];
	wqe q;

	tk_fill(want, len, seed);
	memcpy(f->src + off, want, len);
	begin(&q, av, f->dctn, DC_KEY);
	put_raddr(&q, addr_of(f->dst + off), softnic_mr_rkey(f->dst_mr));
	if (inl)
		put_inline(&q, want, len);
	else
		put_data(&q, f->src + off, softnic_mr_lkey(f->src_mr), len);
	REQUIRE(post(&f->sq, &q, GIC_OPCODE_RDMA_WRITE, SIG) != ~0ull, "post write %u", len);
	if (expect_ok(f, GIC_OPCODE_RDMA_WRITE, len, "DC write"))
		return;
	CHECK(memcmp(f->dst + off, want, len) == 0, "DC write (AV %d, %s, %u bytes) payload", av,
	      inl ? "inline" : "pointer", len);
}

static void writes_of_form(int av)
{
	static const uint32_t lens[] = { 1, 8, 12, 13, 44, 45, 100, 200, 700 };
	dc_fx *f = fx_open(NULL);

	REQUIRE(f, "fixture");
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		uint32_t max_inline = GIC_WQE_MAX_DS * GIC_SEG_SIZE - 32 - (uint32_t)av - 4;

		if (lens[i] <= max_inline)
			write_one(f, av, 1, i * 2048, lens[i], 10 + i);
		write_one(f, av, 0, i * 2048 + 1024, lens[i], 100 + i);
	}
	CHECK(!softnic_qp_in_error(f->dci), "DCI in error: %s", softnic_qp_error(f->dci));
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

CASE(dc_write_compact) { writes_of_form(COMPACT); }
CASE(dc_write_full) { writes_of_form(FULL); }

/* WRITE_IMM into a DCT consumes an SRQ receive: the DCT's CQ reports it
 * with the immediate, the DCT's number and the SRQ's. */
CASE(dc_write_imm)
{
	dc_fx *f = fx_open(NULL);
	gic_cqe_info c;
	uint8_t want[64];
	wqe q;

	REQUIRE(f, "fixture");
	REQUIRE(post_recv(f, 0) == 0, "receive");
	tk_fill(want, sizeof want, 5);
	begin(&q, FULL, f->dctn, DC_KEY);
	put_raddr(&q, addr_of(f->dst + 64), softnic_mr_rkey(f->dst_mr));
	put_inline(&q, want, sizeof want);
	REQUIRE(post_ds(&f->sq, &q, GIC_OPCODE_RDMA_WRITE_IMM, 0, SIG, gic_htobe32(0xfeed), 0) !=
		~0ull, "post");
	expect_ok(f, GIC_OPCODE_RDMA_WRITE_IMM, sizeof want, "write_imm");
	CHECK(memcmp(f->dst + 64, want, sizeof want) == 0, "write_imm payload");
	REQUIRE(tk_poll_cqe(&f->shim, &f->rcqv, &c) == 0, "DCT's receive CQE");
	CHECK(c.cqe_opcode == GIC_CQE_RESP_WR_IMM, "receive CQE opcode %u", c.cqe_opcode);
	CHECK(c.imm == gic_htobe32(0xfeed), "immediate 0x%x", gic_be32toh(c.imm));
	CHECK(c.qpn == f->dctn, "receive CQE of QP 0x%x, want the DCT 0x%x", c.qpn, f->dctn);
	CHECK(c.byte_cnt == sizeof want, "receive byte count %u", c.byte_cnt);
	CHECK((gic_be32toh(f->rcqv.cqes[0].srqn_uidx_be) & 0xffffff) == softnic_srq_num(f->srq),
	      "receive CQE's srqn");
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

CASE(dc_read)
{
	dc_fx *f = fx_open(NULL);
	wqe q;

	REQUIRE(f, "fixture");
	for (int av = COMPACT; av <= FULL; av += FULL - COMPACT) {
		for (uint32_t len = 1; len <= 4096; len = len * 3 + 1) {
			uint64_t off = len * 5 % 8192;

			tk_fill(f->dst + off, len, len + (uint32_t)av);
			memset(f->src + off, 0, len);
			begin(&q, av, f->dctn, DC_KEY);
			put_raddr(&q, addr_of(f->dst + off), softnic_mr_rkey(f->dst_mr));
			put_data(&q, f->src + off, softnic_mr_lkey(f->src_mr), len);
			REQUIRE(post(&f->sq, &q, GIC_OPCODE_RDMA_READ, SIG) != ~0ull, "post");
			if (expect_ok(f, GIC_OPCODE_RDMA_READ, len, "DC read"))
				break;
			REQUIRE(memcmp(f->src + off, f->dst + off, len) == 0,
				"DC read (AV %d) of %u bytes", av, len);
		}
	}
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

/* One DC atomic: operands in a (16 or 32 bytes), old value to src + 512. */
static void atomic_one(dc_fx *f, int av, uint8_t opcode, uint8_t opmod, const void *a,
		       uint32_t alen, uint32_t size, uint64_t target_off)
{
	wqe q;

	begin(&q, av, f->dctn, DC_KEY);
	put_raddr(&q, addr_of(f->dst + target_off), softnic_mr_rkey(f->dst_mr));
	put(&q, a, alen);
	put_data(&q, f->src + 512, softnic_mr_lkey(f->src_mr), size);
	REQUIRE(post_ds(&f->sq, &q, opcode, opmod, SIG, 0, 0) != ~0ull, "post atomic");
	expect_ok(f, opcode, size, "DC atomic");
}

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* 8-byte fetch-add and compare-swap (a hit and a miss) at dst + 0. */
static void atomics_plain(dc_fx *f, int av)
{
	gic_atomic_seg fa = gic_make_atomic_fa_seg(5), cs = gic_make_atomic_cs_seg(105, 7);
	gic_atomic_seg miss = gic_make_atomic_cs_seg(1, 9);
	uint64_t t = 100;

	memcpy(f->dst, &t, 8);
	atomic_one(f, av, GIC_OPCODE_ATOMIC_FA, 0, &fa, 16, 8, 0);
	CHECK(ld64(f->dst) == 105 && ld64(f->src + 512) == 100, "FA: target %llu old %llu",
	      (unsigned long long)ld64(f->dst), (unsigned long long)ld64(f->src + 512));
	atomic_one(f, av, GIC_OPCODE_ATOMIC_CS, 0, &cs, 16, 8, 0);
	CHECK(ld64(f->dst) == 7 && ld64(f->src + 512) == 105, "CS: target %llu old %llu",
	      (unsigned long long)ld64(f->dst), (unsigned long long)ld64(f->src + 512));
	atomic_one(f, av, GIC_OPCODE_ATOMIC_CS, 0, &miss, 16, 8, 0);
	CHECK(ld64(f->dst) == 7, "CS with a failing compare changed the target to %llu",
	      (unsigned long long)ld64(f->dst));
}

/* Masked fetch-add and compare-swap of 4 bytes (dst + 64) and 8 (dst +
 * 128); a 4-byte old value lands big-endian. */
static void atomics_masked(dc_fx *f, int av)
{
	const uint8_t m4 = GIC_OPMOD_EXT_ATOMIC | 0, m8 = GIC_OPMOD_EXT_ATOMIC | 1;
	gic_masked_atomic32_seg fa32 = { gic_htobe32(0x00010001u), gic_htobe32(0x80008000u), 0, 0 };
	gic_masked_atomic32_seg cs32 = { gic_htobe32(0xabcd0000u), gic_htobe32(0x12340000u),
					 gic_htobe32(0xffff0000u), gic_htobe32(0xffff0000u) };
	gic_masked_atomic64_seg fa64 = { gic_htobe64(1), 0, 0, 0 };
	gic_masked_atomic64_seg cs64 = { gic_htobe64(0x1111), gic_htobe64(0x00ff),
					 gic_htobe64(0xffff), gic_htobe64(0x00ff) };
	uint32_t t32 = 0x7fff0001u; /* fields of 16 bits: no carry across them */
	uint64_t t64 = 41;

	memcpy(f->dst + 64, &t32, 4);
	atomic_one(f, av, GIC_OPCODE_ATOMIC_MASKED_FA, m4, &fa32, 16, 4, 64);
	CHECK(ld32(f->dst + 64) == 0x80000002u && gic_be32toh(ld32(f->src + 512)) == 0x7fff0001u,
	      "masked FA 4: target 0x%x old 0x%x", ld32(f->dst + 64),
	      gic_be32toh(ld32(f->src + 512)));
	t32 = 0x12345678u;
	memcpy(f->dst + 64, &t32, 4);
	atomic_one(f, av, GIC_OPCODE_ATOMIC_MASKED_CS, m4, &cs32, 16, 4, 64);
	CHECK(ld32(f->dst + 64) == 0xabcd5678u, "masked CS 4: target 0x%x", ld32(f->dst + 64));
	memcpy(f->dst + 128, &t64, 8);
	atomic_one(f, av, GIC_OPCODE_ATOMIC_MASKED_FA, m8, &fa64, 16, 8, 128);
	CHECK(ld64(f->dst + 128) == 42, "masked FA 8: target %llu",
	      (unsigned long long)ld64(f->dst + 128));
	t64 = 0x22ff;
	memcpy(f->dst + 128, &t64, 8);
	atomic_one(f, av, GIC_OPCODE_ATOMIC_MASKED_CS, m8, &cs64, 32, 8, 128);
	CHECK(ld64(f->dst + 128) == 0x1111 && ld64(f->src + 512) == 0x22ff,
	      "masked CS 8: target 0x%llx old 0x%llx", (unsigned long long)ld64(f->dst + 128),
	      (unsigned long long)ld64(f->src + 512));
}

CASE(dc_atomics)
{
	dc_fx *f = fx_open(NULL);

	REQUIRE(f, "fixture");
	for (int av = COMPACT; av <= FULL; av += FULL - COMPACT) {
		atomics_plain(f, av);
		atomics_masked(f, av);
	}
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

/* SEND and SEND_IMM (inline and pointer) into the DCT's SRQ. */
CASE(dc_send_srq)
{
	dc_fx *f = fx_open(NULL);
	uint8_t want[RBUF];

	REQUIRE(f, "fixture");
	for (uint32_t m = 0; m < 24; m++) {
		uint32_t b = m % NRBUF, len = m % 3 == 0 ? 1 + m * 37 % 800 : 1 + m * 131 % RBUF;
		int inl = m % 3 == 0, imm = m & 1;
		uint8_t op = imm ? GIC_OPCODE_SEND_IMM : GIC_OPCODE_SEND;
		gic_cqe_info c;
		wqe q;

		REQUIRE(post_recv(f, b) == 0, "receive %u", m);
		tk_fill(want, len, 77 + m);
		memcpy(f->src, want, len);
		begin(&q, m % 2 ? FULL : COMPACT, f->dctn, DC_KEY);
		if (inl)
			put_inline(&q, want, len);
		else
			put_data(&q, f->src, softnic_mr_lkey(f->src_mr), len);
		REQUIRE(post_ds(&f->sq, &q, op, 0, SIG, imm ? gic_htobe32(m) : 0, 0) != ~0ull,
			"post send %u", m);
		if (expect_ok(f, op, len, "DC send"))
			break;
		REQUIRE(tk_poll_cqe(&f->shim, &f->rcqv, &c) == 0, "receive CQE %u", m);
		CHECK(c.cqe_opcode == (imm ? GIC_CQE_RESP_SEND_IMM : GIC_CQE_RESP_SEND) &&
		      c.byte_cnt == len && c.qpn == f->dctn && (!imm || c.imm == gic_htobe32(m)),
		      "send %u: receive CQE opcode %u, %u bytes, QP 0x%x", m, c.cqe_opcode,
		      c.byte_cnt, c.qpn);
		CHECK(memcmp(f->rbuf + (size_t)b * RBUF, want, len) == 0,
		      "send %u payload (%u bytes)", m, len);
		gic_rq_completed(&f->rq, c.wqe_counter);
	}
	fx_close(f);
}

/* Full AV plus inline data: WQEs of 2 to 4 BBs on a 16-BB ring, so that
 * they straddle its end again and again; each payload checked. */
CASE(dc_span_wrap)
{
	dc_cfg cfg = { .log_sq_bb = 4 };
	dc_fx *f = fx_open(&cfg);
	uint64_t seed = 3, wraps = 0;

	REQUIRE(f, "fixture");
	for (uint32_t i = 0; i < 600; i++) {
		uint32_t len = 1 + (uint32_t)(tk_rand(&seed) % 180);
		uint64_t pos_before = f->sq.resv;
		uint32_t nbb = gic_bb_for_ds((16 + FULL + 16 + 4 + len + 15) / 16);

		if ((pos_before & 15) + nbb > 16)
			wraps++;
		write_one(f, i % 5 ? FULL : COMPACT, 1, (i % 50) * 256, len, 1000 + i);
		if (tk_failures)
			break;
	}
	CHECK(wraps > 50, "only %llu WQEs straddled the ring's end", (unsigned long long)wraps);
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

/* ------------------------------------------------------------------ */
/* Errors. */

/* Posts a signaled 8-byte inline DC write to dst with the given AV. */
static void post_write8(dc_fx *f, int av, uint32_t dctn, uint64_t key, uint64_t v)
{
	wqe q;

	begin(&q, av, dctn, key);
	put_raddr(&q, addr_of(f->dst), softnic_mr_rkey(f->dst_mr));
	put_inline(&q, &v, 8);
	REQUIRE(post(&f->sq, &q, GIC_OPCODE_RDMA_WRITE, SIG) != ~0ull, "post");
}

/* After an error the DCI is in error, its text names the check, the DCT
 * and the AV, the next WQE flushes, and the target is untouched. */
static void expect_dci_failed(dc_fx *f, const char *text, const char *what)
{
	uint64_t zero = 0;

	CHECK(softnic_qp_in_error(f->dci), "%s: DCI not in error", what);
	CHECK(strstr(softnic_qp_error(f->dci), text) != NULL, "%s: error '%s' lacks '%s'", what,
	      softnic_qp_error(f->dci), text);
	CHECK(memcmp(f->dst, &zero, 8) == 0, "%s: the target changed", what);
	post_write8(f, COMPACT, f->dctn, DC_KEY, 1);
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_WR_FLUSH_ERR, 0, "flush after the error");
	CHECK(memcmp(f->dst, &zero, 8) == 0, "%s: a flushed WQE wrote", what);
}

CASE(dc_wrong_key)
{
	dc_fx *f = fx_open(NULL);
	char text[64];

	REQUIRE(f, "fixture");
	memset(f->dst, 0, 8);
	for (int av = COMPACT; av <= FULL; av += FULL - COMPACT) {
		REQUIRE(dci_open(f) == 0, "DCI");
		post_write8(f, av, f->dctn, DC_KEY ^ 1, 42);
		expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_DC_BAD_KEY,
			   "wrong DC key");
		snprintf(text, sizeof text, "names DCT 0x%x", f->dctn);
		expect_dci_failed(f, text, "wrong key");
		CHECK(strstr(softnic_qp_error(f->dci), av == FULL ? "full" : "compact") != NULL,
		      "error '%s' names the AV form", softnic_qp_error(f->dci));
	}
	fx_close(f);
}

CASE(dc_unknown_dct)
{
	dc_fx *f = fx_open(NULL);
	uint32_t rc_qpn;

	REQUIRE(f, "fixture");
	memset(f->dst, 0, 8);
	post_write8(f, FULL, 0xfffff0, DC_KEY, 42);
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_TRANSPORT_RETRY_EXC_ERR, SOFTNIC_VSYND_DC_NO_DCT,
		   "no such DCT");
	expect_dci_failed(f, "names DCT 0xfffff0", "unknown DCT");
	/* A QP that exists but is no DCT (the DCI itself). */
	REQUIRE(dci_open(f) == 0, "DCI");
	rc_qpn = f->sq.qpn;
	post_write8(f, COMPACT, rc_qpn, DC_KEY, 42);
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_TRANSPORT_RETRY_EXC_ERR, SOFTNIC_VSYND_DC_NOT_DCT,
		   "a QP that is no DCT");
	expect_dci_failed(f, "no DCT", "not a DCT");
	/* A DCT that went: its number names nothing. */
	REQUIRE(dci_open(f) == 0, "DCI");
	post_write8(f, COMPACT, f->dctn, DC_KEY, 7);
	expect_ok(f, GIC_OPCODE_RDMA_WRITE, 8, "write before the DCT goes");
	memset(f->dst, 0, 8);
	REQUIRE(softnic_qp_destroy(f->dct) == 0, "destroy the DCT");
	f->dct = NULL;
	post_write8(f, COMPACT, f->dctn, DC_KEY, 42);
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_TRANSPORT_RETRY_EXC_ERR, SOFTNIC_VSYND_DC_NO_DCT,
		   "a destroyed DCT");
	expect_dci_failed(f, "names DCT", "destroyed DCT");
	fx_close(f);
}

/* A ds that leaves no room for the AV its dqp_dct announces. */
CASE(dc_malformed_av)
{
	dc_fx *f = fx_open(NULL);
	uint64_t v = 9;
	wqe q;

	REQUIRE(f, "fixture");
	memset(f->dst, 0, 8);
	for (int av = COMPACT; av <= FULL; av += FULL - COMPACT) {
		REQUIRE(dci_open(f) == 0, "DCI");
		begin(&q, av, f->dctn, DC_KEY);
		put_raddr(&q, addr_of(f->dst), softnic_mr_rkey(f->dst_mr));
		put_inline(&q, &v, 8);
		/* ctrl only (1), or ctrl + 1 segment of a full AV (2). */
		REQUIRE(post_ds(&f->sq, &q, GIC_OPCODE_RDMA_WRITE, 0, SIG, 0, av == FULL ? 2 : 1) !=
			~0ull, "post");
		expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_QP_OP_ERR, SOFTNIC_VSYND_DC_BAD_AV,
			   "ds too small for the AV");
		expect_dci_failed(f, "no room for its address vector", "malformed AV");
	}
	fx_close(f);
}

/* mini-gda's DC fast-path builders (gic_wqe_dc_write_inline_u64, compact
 * AV, one BB; _full, two BBs): 8-byte inline writes alternating the two
 * forms, so that the full one also wraps at the ring's end (a 64-BB ring,
 * 100 writes), each landing at the DCT's region with a good CQE. An AV of
 * the other form fails: a full AV in the compact builder's 4 segments
 * leaves no room for the rest (LOCAL_QP_OP_ERR); a compact AV in the full
 * builder makes the engine read the AV's
 * unused bytes as the remote address (rkey 0), an error CQE; nothing
 * lands either time. */
CASE(dc_inline_u64_builders)
{
	static const uint8_t zero[16];
	dc_fx *f = fx_open(NULL);
	uint32_t rkey;
	gic_av_seg av[2];
	gic_cqe_info c;
	uint64_t pos;

	REQUIRE(f, "fixture");
	rkey = softnic_mr_rkey(f->dst_mr);
	memset(av, 0, sizeof(av));
	gic_set_av_compact(&av[0], DC_KEY, f->dctn, 0, 0);
	gic_set_av_full(&av[1], DC_KEY, f->dctn, 0, 0, zero, 0, 64, 0, zero);
	for (int i = 0; i < 100; i++) {
		int full = i & 1;
		uint64_t v = 0x0123456789abcdefull ^ ((uint64_t)i << 40), off = (uint64_t)i * 8;
		uint32_t nbb = full ? 2 : 1;

		memset(f->dst + off, 0, 8);
		REQUIRE(gic_sq_reserve_excl(&f->sq, nbb, &pos, GIC_ORDER_RELEASE_SYS,
					    tk_deadline()) == 0, "reserve");
		CHECK((full ? gic_wqe_dc_write_inline_u64_full
			    : gic_wqe_dc_write_inline_u64)(&f->sq, pos, &av[full], addr_of(f->dst + off),
							   rkey, v, SIG) == nbb, "BBs of form %d", full);
		gic_sq_note_signaled(&f->sq, pos + nbb, 0);
		gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
		if (expect_ok(f, GIC_OPCODE_RDMA_WRITE, 8, full ? "full-AV builder" : "compact builder"))
			break;
		CHECK(memcmp(f->dst + off, &v, 8) == 0, "write %d (AV %s, position %llu) payload", i,
		      full ? "full" : "compact", (unsigned long long)pos);
	}
	CHECK(!softnic_qp_in_error(f->dci), "DCI in error: %s", softnic_qp_error(f->dci));

	/* The wrong form in each builder. */
	for (int full = 0; full <= 1; full++) {
		uint64_t v = 77, got = 0;

		REQUIRE(dci_open(f) == 0, "DCI");
		memset(f->dst + 1024, 0, 8);
		REQUIRE(gic_sq_reserve_excl(&f->sq, full ? 2 : 1, &pos, GIC_ORDER_RELEASE_SYS,
					    tk_deadline()) == 0, "reserve");
		if (full)
			gic_wqe_dc_write_inline_u64_full(&f->sq, pos, &av[0], addr_of(f->dst + 1024),
							 rkey, v, SIG);
		else
			gic_wqe_dc_write_inline_u64(&f->sq, pos, &av[1], addr_of(f->dst + 1024), rkey, v,
						    SIG);
		gic_sq_note_signaled(&f->sq, pos + (full ? 2 : 1), 0);
		gic_sq_publish_excl(&f->sq, GIC_ORDER_RELEASE_SYS);
		REQUIRE(poll_dci(f, &c) == 0, "a CQE for the wrong AV form");
		CHECK(c.cqe_opcode == GIC_CQE_REQ_ERR, "a %s AV in the %s builder completed with "
		      "opcode %u, want an error", full ? "compact" : "full", full ? "full" : "compact",
		      c.cqe_opcode);
		/* No room for the remote address after a full AV in 4 segments. */
		CHECK(full || c.syndrome == GIC_SYND_LOCAL_QP_OP_ERR, "a full AV in the compact "
		      "builder: syndrome 0x%x (%s)", c.syndrome, gic_syndrome_name(c.syndrome));
		memcpy(&got, f->dst + 1024, 8);
		CHECK(got == 0, "the wrong AV form (%s builder) wrote 0x%llx",
		      full ? "full" : "compact", (unsigned long long)got);
	}
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

/* The DCT's rights and its region's: what they do not grant fails with
 * REMOTE_ACCESS_ERR, and nothing moves. */
CASE(dc_rights)
{
	dc_cfg cfg = { .dst_access = SOFTNIC_ACCESS_REMOTE_WRITE };
	dc_fx *f = fx_open(&cfg);
	wqe q;

	REQUIRE(f, "fixture");
	memset(f->dst, 0, 8);
	REQUIRE(softnic_qp_set_rights(f->dct, SOFTNIC_ACCESS_REMOTE_READ) == 0, "DCT rights");
	post_write8(f, FULL, f->dctn, DC_KEY, 42);
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_QP_RIGHTS,
		   "write into a DCT that grants only reads");
	expect_dci_failed(f, "grants no such right", "DCT rights");
	/* The DCT grants reads; the region does not. */
	REQUIRE(dci_open(f) == 0, "DCI");
	memset(f->src, 0x11, 64);
	begin(&q, COMPACT, f->dctn, DC_KEY);
	put_raddr(&q, addr_of(f->dst), softnic_mr_rkey(f->dst_mr));
	put_data(&q, f->src, softnic_mr_lkey(f->src_mr), 64);
	REQUIRE(post(&f->sq, &q, GIC_OPCODE_RDMA_READ, SIG) != ~0ull, "post read");
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_REMOTE_ACCESS,
		   "read of a region without REMOTE_READ");
	CHECK(f->src[0] == 0x11 && f->src[63] == 0x11, "a denied read landed");
	/* A key of the initiator's PD is no key of the DCT's. */
	REQUIRE(dci_open(f) == 0, "DCI");
	REQUIRE(softnic_qp_set_rights(f->dct, SOFTNIC_ACCESS_REMOTE_WRITE) == 0, "DCT rights");
	begin(&q, COMPACT, f->dctn, DC_KEY);
	put_raddr(&q, addr_of(f->src), softnic_mr_rkey(f->src_mr));
	put_inline(&q, "xxxxxxxx", 8);
	REQUIRE(post(&f->sq, &q, GIC_OPCODE_RDMA_WRITE, SIG) != ~0ull, "post");
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR, SOFTNIC_VSYND_BAD_RKEY,
		   "rkey of the DCI's own PD");
	CHECK(f->src[0] == 0x11, "a write with a foreign rkey landed");
	fx_close(f);
}

/* A SEND with the SRQ empty: receiver-not-ready retries (the DCT's timer,
 * the DCI's count), then RNR_RETRY_EXC_ERR; with retries left, a receive
 * posted meanwhile takes it. */
CASE(dc_rnr)
{
	dc_cfg cfg = { .rnr_retry = 2, .min_rnr_timer = 14 /* 1.28 ms */ };
	dc_fx *f = fx_open(&cfg);
	softnic_stats st0, st1;
	gic_cqe_info c;
	wqe q;

	REQUIRE(f, "fixture");
	softnic_get_stats(f->nic, &st0);
	begin(&q, COMPACT, f->dctn, DC_KEY);
	put_inline(&q, "hello", 5);
	REQUIRE(post(&f->sq, &q, GIC_OPCODE_SEND, SIG) != ~0ull, "post");
	expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_RNR_RETRY_EXC_ERR, SOFTNIC_VSYND_RNR, "RNR");
	softnic_get_stats(f->nic, &st1);
	CHECK(st1.rnr_naks - st0.rnr_naks == 3, "%llu RNR answers, want 3 (1 + 2 retries)",
	      (unsigned long long)(st1.rnr_naks - st0.rnr_naks));
	CHECK(gic_cq_poll_one(&f->rcqv, &c, GIC_ORDER_RELEASE_SYS) == EAGAIN,
	      "a receive CQE for a message never taken");

	f->cfg.rnr_retry = 7; /* forever */
	REQUIRE(dci_open(f) == 0, "DCI");
	begin(&q, FULL, f->dctn, DC_KEY);
	put_inline(&q, "world", 5);
	REQUIRE(post(&f->sq, &q, GIC_OPCODE_SEND, SIG) != ~0ull, "post");
	{
		uint64_t until = gic_now_ns() + 20000000; /* 20 ms: some 15 RNR rounds */

		while (gic_now_ns() < until)
			gic_cpu_relax();
	}
	CHECK(gic_cq_poll_one(&f->cqv, &c, GIC_ORDER_RELEASE_SYS) == EAGAIN,
	      "the send completed with no receive posted");
	REQUIRE(post_recv(f, 3) == 0, "receive");
	expect_ok(f, GIC_OPCODE_SEND, 5, "send once a receive is there");
	REQUIRE(tk_poll_cqe(&f->shim, &f->rcqv, &c) == 0, "receive CQE");
	CHECK(c.cqe_opcode == GIC_CQE_RESP_SEND && c.byte_cnt == 5, "receive CQE %u, %u bytes",
	      c.cqe_opcode, c.byte_cnt);
	CHECK(memcmp(f->rbuf + 3 * RBUF, "world", 5) == 0, "the send's payload");
	fx_close(f);
}

/* A full AV on an RC QP (where the rkey goes, dqp_dct has bit 31 set,
 * which no softnic key has): a clear error, not a bad-rkey one. */
CASE(dc_wqe_on_rc)
{
	tk_pair_cfg cfg = { .engine_threads = 1 };
	tk_pair *p = tk_pair_open(&cfg);
	uint64_t v = 5, zero = 0;
	wqe q;

	REQUIRE(p, "fixture");
	memset(p->dst, 0, 8);
	begin(&q, FULL, softnic_qp_num(p->pe[1].qp), 0);
	put_raddr(&q, addr_of(p->dst), softnic_mr_rkey(p->dst_mr));
	put_inline(&q, &v, 8);
	REQUIRE(post(&p->pe[0].sq, &q, GIC_OPCODE_RDMA_WRITE, SIG) != ~0ull, "post");
	tk_expect_cqe(p, &p->pe[0].cqv, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_QP_OP_ERR,
		      SOFTNIC_VSYND_DC_NOT_DCI, p->pe[0].sq.qpn, "DC WQE on an RC QP");
	CHECK(strstr(softnic_qp_error(p->pe[0].qp), "no DCI") != NULL, "error '%s'",
	      softnic_qp_error(p->pe[0].qp));
	CHECK(memcmp(p->dst, &zero, 8) == 0, "the target changed");
	CHECK(tk_guards_intact(p), "guard zones");
	tk_pair_close(p);
}

/* An RC WQE (no AV) on a DCI: its remote-address segment reads as a
 * compact AV whose DCT number is the rkey, which names no DCT. */
CASE(rc_wqe_on_dci)
{
	dc_fx *f = fx_open(NULL);
	gic_cqe_info c;
	uint64_t v = 5, zero = 0;
	wqe q;

	REQUIRE(f, "fixture");
	memset(f->dst, 0, 8);
	begin(&q, 0, 0, 0);
	put_raddr(&q, addr_of(f->dst), softnic_mr_rkey(f->dst_mr));
	put_inline(&q, &v, 8);
	REQUIRE(post(&f->sq, &q, GIC_OPCODE_RDMA_WRITE, SIG) != ~0ull, "post");
	REQUIRE(poll_dci(f, &c) == 0, "CQE");
	CHECK(c.cqe_opcode == GIC_CQE_REQ_ERR && c.syndrome == GIC_SYND_TRANSPORT_RETRY_EXC_ERR &&
	      (c.vendor_syndrome == SOFTNIC_VSYND_DC_NO_DCT ||
	       c.vendor_syndrome == SOFTNIC_VSYND_DC_NOT_DCT),
	      "RC WQE on a DCI: CQE %u syndrome 0x%x vendor 0x%x", c.cqe_opcode, c.syndrome,
	      c.vendor_syndrome);
	CHECK(softnic_qp_in_error(f->dci), "DCI not in error");
	CHECK(memcmp(f->dst, &zero, 8) == 0, "the target changed");
	fx_close(f);
}

/* ------------------------------------------------------------------ */
/* DUMP, on an RC QP and on a DCI. */

static void dump_wqe(wqe *q, int av, uint32_t dctn, const void *addr, uint32_t lkey,
		     uint32_t len)
{
	begin(q, av, dctn, DC_KEY);
	put_data(q, addr, lkey, len);
}

CASE(dump_rc)
{
	tk_pair_cfg cfg = { .engine_threads = 1 };
	tk_pair *p = tk_pair_open(&cfg);
	gic_sq *sq;
	uint8_t before[256];
	wqe q;

	REQUIRE(p, "fixture");
	sq = &p->pe[0].sq;
	tk_fill(p->src, 256, 9);
	memcpy(before, p->src, 256);
	dump_wqe(&q, 0, 0, p->src, softnic_mr_lkey(p->src_mr), 256);
	REQUIRE(post(sq, &q, GIC_OPCODE_DUMP, SIG) != ~0ull, "post");
	{
		gic_cqe_info c;

		REQUIRE(tk_poll_cqe(p, &p->pe[0].cqv, &c) == 0, "CQE");
		CHECK(c.cqe_opcode == GIC_CQE_REQ && c.wqe_opcode == GIC_OPCODE_DUMP &&
		      c.byte_cnt == 256, "DUMP CQE %u opcode 0x%x, %u bytes", c.cqe_opcode,
		      c.wqe_opcode, c.byte_cnt);
	}
	CHECK(memcmp(p->src, before, 256) == 0, "DUMP changed its buffer");
	/* Unsignaled: no CQE of its own; a later signaled write retires it. */
	dump_wqe(&q, 0, 0, p->src, softnic_mr_lkey(p->src_mr), 64);
	REQUIRE(post(sq, &q, GIC_OPCODE_DUMP, 0) != ~0ull, "post");
	REQUIRE(tk_post_inline(p, 0, "abcdefgh", 8, 1) == 0, "post write");
	tk_expect_cqe(p, &p->pe[0].cqv, GIC_CQE_REQ, 0, 0, sq->qpn,
		      "write after an unsignaled DUMP");
	CHECK(memcmp(p->dst, "abcdefgh", 8) == 0, "write after the DUMP");
	/* A bad lkey: a local protection error, and the QP goes to error. */
	dump_wqe(&q, 0, 0, p->src, softnic_mr_lkey(p->src_mr) ^ 0x100, 64);
	REQUIRE(post(sq, &q, GIC_OPCODE_DUMP, SIG) != ~0ull, "post");
	tk_expect_cqe(p, &p->pe[0].cqv, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_PROT_ERR,
		      SOFTNIC_VSYND_BAD_LKEY, sq->qpn, "DUMP with a bad lkey");
	CHECK(softnic_qp_in_error(p->pe[0].qp), "QP not in error after a bad DUMP");
	CHECK(tk_guards_intact(p), "guard zones");
	tk_pair_close(p);
}

CASE(dump_dci)
{
	dc_fx *f = fx_open(NULL);
	wqe q;

	REQUIRE(f, "fixture");
	for (int av = COMPACT; av <= FULL; av += FULL - COMPACT) {
		REQUIRE(dci_open(f) == 0, "DCI");
		/* Its AV names no DCT that exists: DUMP is local, never sent. */
		dump_wqe(&q, av, 0xfffff0, f->src, softnic_mr_lkey(f->src_mr), 128);
		REQUIRE(post(&f->sq, &q, GIC_OPCODE_DUMP, SIG) != ~0ull, "post");
		expect_ok(f, GIC_OPCODE_DUMP, 128, "DUMP on a DCI");
		/* Past its region. */
		dump_wqe(&q, av, f->dctn, f->src + REGION - 8, softnic_mr_lkey(f->src_mr), 64);
		REQUIRE(post(&f->sq, &q, GIC_OPCODE_DUMP, SIG) != ~0ull, "post");
		expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_PROT_ERR, SOFTNIC_VSYND_LOCAL_BOUNDS,
			   "DUMP past its region");
		/* A key of the DCT's PD is no key of the DCI's. */
		REQUIRE(dci_open(f) == 0, "DCI");
		dump_wqe(&q, av, f->dctn, f->dst, softnic_mr_lkey(f->dst_mr), 64);
		REQUIRE(post(&f->sq, &q, GIC_OPCODE_DUMP, SIG) != ~0ull, "post");
		expect_req(f, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_PROT_ERR, SOFTNIC_VSYND_BAD_LKEY,
			   "DUMP with another PD's lkey");
	}
	CHECK(guards_intact(f), "guard zones");
	fx_close(f);
}

/* ------------------------------------------------------------------ */
/* The decoder and the API. */

CASE(dc_decode)
{
	wqe q;
	softnic_wqe w;
	uint8_t vs;
	uint32_t c[4];
	uint64_t v = 1;

	for (int av = COMPACT; av <= FULL; av += FULL - COMPACT) {
		begin(&q, av, 0xabcdef, DC_KEY);
		put_raddr(&q, 0x1000, 0x4242);
		put_inline(&q, &v, 8);
		gic_ctrl_seg_words(c, 0, GIC_OPCODE_RDMA_WRITE, 0, 0x77, 0, (uint8_t)(q.len / 16),
				   0);
		memcpy(q.b, c, 16);
		CHECK(softnic_decode_dci_wqe(q.b, q.len, &w, &vs) == 0, "decode AV %d: vs 0x%x", av,
		      vs);
		CHECK(w.av_bytes == av && w.dct_num == 0xabcdef && w.dc_key == DC_KEY &&
		      w.raddr == 0x1000 && w.rkey == 0x4242 && w.inline_len == 8,
		      "AV %d: av %u dct 0x%x raddr 0x%llx rkey 0x%x inline %u", av, w.av_bytes,
		      w.dct_num, (unsigned long long)w.raddr, w.rkey, w.inline_len);
		/* The RC decoder: a full AV is recognised (bit 31 where the rkey
		 * goes); a compact one reads as a remote address segment, and
		 * this WQE's raddr segment then as a pointer before the inline
		 * segment, which is malformed. */
		{
			int r = softnic_decode_wqe(q.b, q.len, &w, &vs);

			CHECK(r == GIC_SYND_LOCAL_QP_OP_ERR && w.av_bytes == 0 &&
			      vs == (av == FULL ? SOFTNIC_VSYND_DC_NOT_DCI : SOFTNIC_VSYND_BAD_DS),
			      "RC decoder on a DC WQE (AV %d): 0x%x vs 0x%x", av, r, vs);
		}
		gic_ctrl_seg_words(c, 0, GIC_OPCODE_RDMA_WRITE, 0, 0x77, 0, av == FULL ? 3 : 1, 0);
		memcpy(q.b, c, 16);
		CHECK(softnic_decode_dci_wqe(q.b, q.len, &w, &vs) == GIC_SYND_LOCAL_QP_OP_ERR &&
		      vs == SOFTNIC_VSYND_DC_BAD_AV, "AV %d in too few segments: vs 0x%x", av, vs);
	}
	/* A NOP on a DCI carries no AV. */
	gic_ctrl_seg_words(c, 0, GIC_OPCODE_NOP, 0, 0x77, 0, 1, 0);
	CHECK(softnic_decode_dci_wqe((const uint8_t *)c, 16, &w, &vs) == 0 && w.av_bytes == 0,
	      "NOP on a DCI");
	/* DUMP takes pointer segments only. */
	begin(&q, 0, 0, 0);
	put_inline(&q, &v, 8);
	gic_ctrl_seg_words(c, 0, GIC_OPCODE_DUMP, 0, 0x77, 0, 2, 0);
	memcpy(q.b, c, 16);
	CHECK(softnic_decode_wqe(q.b, q.len, &w, &vs) == GIC_SYND_LOCAL_QP_OP_ERR &&
	      vs == SOFTNIC_VSYND_BAD_DS, "inline DUMP: vs 0x%x", vs);
}

CASE(dc_api)
{
	dc_fx *f = fx_open(NULL);
	softnic_qp_attr a;
	gic_sq sq;
	gic_cq cq;

	REQUIRE(f, "fixture");
	memset(&a, 0, sizeof(a));
	a.log_sq_bb = 2;
	a.send_cq = f->scq;
	a.flags = SOFTNIC_QP_DCI;
	a.srq = f->srq;
	a.recv_cq = f->rcq;
	CHECK(!softnic_qp_create(f->pd_i, &a) && errno == EINVAL, "a DCI with an SRQ");
	CHECK(strstr(softnic_last_error(f->nic), "DCI") != NULL, "'%s'",
	      softnic_last_error(f->nic));
	a.srq = NULL;
	a.flags = SOFTNIC_QP_DCT;
	CHECK(!softnic_qp_create(f->pd_t, &a) && errno == EINVAL, "a DCT without an SRQ");
	a.flags = SOFTNIC_QP_DCT | SOFTNIC_QP_DCI;
	a.srq = f->srq;
	CHECK(!softnic_qp_create(f->pd_t, &a) && errno == EINVAL, "a DCI and DCT at once");
	a.flags = 0;
	a.srq = NULL;
	a.dc_key = 1;
	CHECK(!softnic_qp_create(f->pd_t, &a) && errno == EINVAL, "an RC QP with a DC key");
	CHECK(softnic_qp_connect(f->dci, f->dct) == EINVAL, "connecting a DCI to a DCT");
	CHECK(softnic_qp_view(f->dct, &sq, &cq) == EINVAL, "a view of a DCT without a send CQ");
	CHECK(softnic_srq_destroy(f->srq) == EBUSY, "destroying the DCT's SRQ");
	CHECK(softnic_cq_destroy(f->rcq) == EBUSY, "destroying the DCT's CQ");
	CHECK(softnic_qp_find(f->nic, f->dctn) == f->dct, "softnic_qp_find of the DCT");
	/* A doorbell on the DCT is ignored, and nothing breaks. */
	{
		softnic_qp_desc d;

		REQUIRE(softnic_qp_desc_get(f->dct, &d) == 0, "DCT descriptor");
		/* Release: the engine thread acquires the register (a plain
		 * store here raced with it under ThreadSanitizer). */
		gic_st_release_sys_u64((uint64_t *)d.bf.reg, gic_doorbell_value(f->dctn, 1));
		softnic_progress(f->nic);
		CHECK(!softnic_qp_in_error(f->dct), "the DCT went to error");
	}
	fx_close(f);
}

/* ------------------------------------------------------------------ */

static const tk_case cases[] = {
	TK_ENTRY(dc_write_compact), TK_ENTRY(dc_write_full), TK_ENTRY(dc_write_imm),
	TK_ENTRY(dc_read), TK_ENTRY(dc_atomics), TK_ENTRY(dc_send_srq), TK_ENTRY(dc_span_wrap),
	TK_ENTRY(dc_wrong_key), TK_ENTRY(dc_unknown_dct), TK_ENTRY(dc_malformed_av),
	TK_ENTRY(dc_rights), TK_ENTRY(dc_rnr), TK_ENTRY(dc_wqe_on_rc), TK_ENTRY(rc_wqe_on_dci),
	TK_ENTRY(dump_rc), TK_ENTRY(dump_dci), TK_ENTRY(dc_decode), TK_ENTRY(dc_api),
	TK_ENTRY(dc_inline_u64_builders),
};

int main(int argc, char **argv)
{
#ifdef TK_GPU_ENGINE
	tk_engine_setup();
#endif
	return tk_run_cases("test_dc", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
