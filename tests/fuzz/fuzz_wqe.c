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
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "gic/softnic.h"

enum { PAGE = 4096, LOG_SQ_BB = 5 };

typedef struct fixture {
	softnic *nic;
	softnic_pd *pd[2];
	softnic_cq *cq[2], *rcq;
	softnic_qp *qp[2];
	gic_sq sq;
	gic_cq cqv, rcqv;
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
	if (!softnic_reg_mr(fx.pd[1], dst(), PAGE, SOFTNIC_ACCESS_REMOTE_WRITE |
			    SOFTNIC_ACCESS_REMOTE_ATOMIC) ||
	    !softnic_reg_mr(fx.pd[0], src(), PAGE, 0) ||
	    !softnic_reg_mr(fx.pd[0], res(), PAGE, SOFTNIC_ACCESS_LOCAL_WRITE))
		abort();
	make_qps();
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
	softnic_wqe w;
	uint8_t vs;

	if (!fx.nic)
		setup();
	if (size < 9)
		return 0;
	/* The decoder on its own, on the raw bytes. */
	if (size - 9 >= GIC_SEG_SIZE)
		softnic_decode_wqe(data + 9, (size - 9) & ~(size_t)(GIC_SEG_SIZE - 1), &w, &vs);

	base = fx.sq.resv;
	bytes = (uint32_t)(size - 9) < ring ? (uint32_t)(size - 9) : ring;
	for (uint32_t i = 0; i < bytes; i++)
		fx.sq.wqes[((base << GIC_SEND_WQE_SHIFT) + i) & (ring - 1)] = data[9 + i];
	memcpy(&db, data + 1, 8);
	fx.sq.resv = base + (data[0] & 0x3f);
	__atomic_store_n(fx.sq.dbrec, gic_htobe32((uint32_t)fx.sq.resv & 0xffff), __ATOMIC_RELEASE);
	__atomic_store_n(fx.sq.db, (data[0] & 0x40) ? db : gic_doorbell_value(fx.sq.qpn, fx.sq.resv),
			 __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++) {
		softnic_progress(fx.nic);
		drain(&fx.cqv);
		drain(&fx.rcqv);
	}
	check_guards();
	if (softnic_qp_in_error(fx.qp[0]) || (data[0] & 0x80)) {
		/* Start over with fresh QPs (and their fresh queues). */
		softnic_qp_destroy(fx.qp[0]);
		softnic_qp_destroy(fx.qp[1]);
		make_qps();
	}
	return 0;
}
