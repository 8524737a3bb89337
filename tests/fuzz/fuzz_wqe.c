/*
 * libFuzzer target: arbitrary bytes as WQEs, doorbell record and doorbell.
 *
 * Each input is one doorbell's worth of work: byte 0 picks the doorbell
 * record (how many BBs it covers, possibly more than were written), bytes
 * 1-8 are the doorbell value, the rest are copied into the send queue at the
 * engine's position (wrapping). The engine runs synchronously. After every
 * input the guard pages around each registered region must be intact and
 * the read-only source unchanged: softnic may fail a WQE but never write
 * outside a region that allows it. Regions sit at fixed addresses so that
 * the fuzzer can learn them.
 *
 * An input of odd length goes to a DCI instead, whose WQEs carry a DC
 * address vector; a DCT (PD 1, an SRQ with receives posted, key 0) is its
 * target. The first WQE's DCT number counts from the DCT's, so that the
 * fuzzer reaches it with zero bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gic/recv.h"
#include "gic/softnic.h"

enum { PAGE = 4096, LOG_SQ_BB = 5 };

typedef struct fixture {
	softnic *nic;
	softnic_pd *pd[2];
	softnic_cq *cq[2], *rcq, *dcq;
	softnic_qp *qp[2], *dci, *dct;
	softnic_srq *srq;
	softnic_mr *dst_mr;
	gic_rq rq;
	gic_sq sq, dsq;
	gic_cq cqv, rcqv, dcqv;
	uint8_t *area;     /* guard | dst | guard | src | guard | res | guard */
} fixture;

static fixture fx;

static uint8_t *dst(void) { return fx.area + PAGE; }
static uint8_t *src(void) { return fx.area + 3 * PAGE; }
static uint8_t *res(void) { return fx.area + 5 * PAGE; }

static void make_qps(void)
{
	softnic_qp_attr a = { .log_sq_bb = LOG_SQ_BB, .send_cq = fx.cq[0] };

	fx.qp[0] = softnic_qp_create(fx.pd[0], &a);
	a.send_cq = fx.cq[1];
	a.recv_cq = fx.rcq;
	fx.qp[1] = softnic_qp_create(fx.pd[1], &a);
	if (!fx.qp[0] || !fx.qp[1] || softnic_qp_connect(fx.qp[0], fx.qp[1]))
		abort();
	softnic_qp_view(fx.qp[0], &fx.sq, &fx.cqv);
}

static void make_dci(void)
{
	softnic_qp_attr a = { .log_sq_bb = LOG_SQ_BB, .send_cq = fx.dcq, .flags = SOFTNIC_QP_DCI };

	uint32_t ci = fx.dcqv.ci; /* the send CQ outlives its DCIs */

	fx.dci = softnic_qp_create(fx.pd[0], &a);
	if (!fx.dci)
		abort();
	softnic_qp_view(fx.dci, &fx.dsq, &fx.dcqv);
	fx.dcqv.ci = ci;
}

/* The DCT, made once (its number stays), with receives into dst posted
 * whenever its SRQ runs low. */
static void make_dct(void)
{
	softnic_srq_attr sa = { .log_wqe_cnt = 3, .max_sge = 1 };
	softnic_qp_attr a = { .log_sq_bb = 1, .recv_cq = fx.rcq, .flags = SOFTNIC_QP_DCT };
	softnic_srq_desc sd;

	fx.srq = softnic_srq_create(fx.pd[1], &sa);
	if (!fx.srq || softnic_srq_desc_get(fx.srq, &sd))
		abort();
	gic_rq_init(&fx.rq, sd.buf, sd.dbrec, sd.wqe_cnt, sd.stride, 1, 1);
	a.srq = fx.srq;
	a.rnr_retry = 0;
	fx.dct = softnic_qp_create(fx.pd[1], &a);
	if (!fx.dct)
		abort();
}

static void refill_srq(void)
{
	gic_sge s = { (uint64_t)(uintptr_t)dst(), softnic_mr_lkey(fx.dst_mr), PAGE };

	/* Receives taken never come back (no completion is matched): a
	 * fresh SRQ view when the old one is spent. */
	if (fx.rq.head == fx.rq.tail) {
		softnic_qp_destroy(fx.dct);
		softnic_srq_destroy(fx.srq);
		make_dct();
	}
	while (gic_rq_post(&fx.rq, &s, 1) == 0)
		;
}

static void setup(void)
{
	softnic_attr na = { .engine_threads = 0, .strict = 1 };

	/* A fixed address in the application range of ASan's x86-64 layout;
	 * anywhere else if that is taken. */
	fx.area = mmap((void *)0x600000000000ull, 7 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (fx.area == MAP_FAILED)
		fx.area = mmap(NULL, 7 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fx.area == MAP_FAILED)
		abort();
	memset(fx.area, 0x5a, 7 * PAGE);
	fx.nic = softnic_open(&na);
	fx.pd[0] = softnic_pd_alloc(fx.nic);
	fx.pd[1] = softnic_pd_alloc(fx.nic);
	for (int i = 0; i < 2; i++)
		fx.cq[i] = softnic_cq_create(fx.nic, 6);
	fx.rcq = softnic_cq_create(fx.nic, 6);
	softnic_cq_view(fx.rcq, &fx.rcqv);
	fx.dcq = softnic_cq_create(fx.nic, 6);
	fx.dst_mr = softnic_reg_mr(fx.pd[1], dst(), PAGE, SOFTNIC_ACCESS_REMOTE_WRITE |
				   SOFTNIC_ACCESS_REMOTE_ATOMIC | SOFTNIC_ACCESS_LOCAL_WRITE);
	if (!fx.dst_mr ||
	    !softnic_reg_mr(fx.pd[0], src(), PAGE, 0) ||
	    !softnic_reg_mr(fx.pd[0], res(), PAGE, SOFTNIC_ACCESS_LOCAL_WRITE))
		abort();
	make_qps();
	make_dct();
	make_dci();
}

static void check_guards(void)
{
	static const int guard_pages[] = { 0, 2, 4, 6 };

	for (int g = 0; g < 4; g++)
		for (int i = 0; i < PAGE; i++)
			if (fx.area[guard_pages[g] * PAGE + i] != 0x5a)
				abort(); /* a write outside every region */
	for (int i = 0; i < PAGE; i++)
		if (src()[i] != 0x5a)
			abort(); /* the read-only source changed */
}

static void drain(gic_cq *cq)
{
	gic_cqe_info c;

	while (gic_cq_poll_one(cq, &c, GIC_ORDER_RELEASE_SYS) == 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t db, base;
	uint32_t bytes, ring = (1u << LOG_SQ_BB) * GIC_SEND_WQE_BB;
	int dc = size & 1;
	gic_sq *sq = dc ? &fx.dsq : &fx.sq;
	softnic_wqe w;
	uint8_t vs;

	if (!fx.nic)
		setup();
	if (size < 9)
		return 0;
	/* The decoders on their own, on the raw bytes. */
	if (size - 9 >= GIC_SEG_SIZE) {
		softnic_decode_wqe(data + 9, (size - 9) & ~(size_t)(GIC_SEG_SIZE - 1), &w, &vs);
		softnic_decode_dci_wqe(data + 9, (size - 9) & ~(size_t)(GIC_SEG_SIZE - 1), &w, &vs);
	}
	if (dc)
		refill_srq();

	base = sq->resv;
	bytes = (uint32_t)(size - 9) < ring ? (uint32_t)(size - 9) : ring;
	for (uint32_t i = 0; i < bytes; i++)
		sq->wqes[((base << GIC_SEND_WQE_SHIFT) + i) & (ring - 1)] = data[9 + i];
	if (dc && bytes >= 2 * GIC_SEG_SIZE) {
		/* dqp_dct of the first WQE's AV: a number relative to the DCT's. */
		uint8_t *p = sq->wqes + (((base << GIC_SEND_WQE_SHIFT) + 24) & (ring - 1));
		uint32_t v;

		memcpy(&v, p, 4);
		v = gic_be32toh(v);
		v = (v & 0xff000000u) | ((v + softnic_qp_num(fx.dct)) & 0xffffffu);
		v = gic_htobe32(v);
		memcpy(p, &v, 4);
	}
	memcpy(&db, data + 1, 8);
	sq->resv = base + (data[0] & 0x3f);
	__atomic_store_n(sq->dbrec, gic_htobe32((uint32_t)sq->resv & 0xffff), __ATOMIC_RELEASE);
	__atomic_store_n(sq->db, (data[0] & 0x40) ? db : gic_doorbell_value(sq->qpn, sq->resv),
			 __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++) {
		softnic_progress(fx.nic);
		drain(&fx.cqv);
		drain(&fx.rcqv);
		drain(&fx.dcqv);
	}
	check_guards();
	if (dc) {
		if (softnic_qp_in_error(fx.dci) || (data[0] & 0x80)) {
			softnic_qp_destroy(fx.dci);
			make_dci();
		}
		return 0;
	}
	if (softnic_qp_in_error(fx.qp[0]) || (data[0] & 0x80)) {
		/* Start over with fresh QPs (and their fresh queues). */
		softnic_qp_destroy(fx.qp[0]);
		softnic_qp_destroy(fx.qp[1]);
		make_qps();
	}
	return 0;
}
