/*
 * libFuzzer target: arbitrary bytes as a sequence of verbs calls on the
 * emulated device (src/emu): CQ and QP creation with any capacities, any
 * state transitions and attribute masks, post_send and post_recv with any
 * opcode, flags, scatter lists and keys, polls, queries, destruction; MRs
 * (plain and DMA-BUF, good and unreadable addresses), extended CQs and
 * parent domains with any attributes; QPs, CQs and SRQs on a parent domain
 * whose allocator hands aligned heap memory, answers
 * IBV_ALLOCATOR_USE_DEFAULT, fails, or hands memory softnic must refuse
 * (misaligned, unreadable), as the input says per object (after every
 * input each buffer it handed must be back). The
 * calls must fail cleanly or succeed, never crash or hang, and nothing may
 * be written outside the registered region: guard zones around it are
 * checked after every input. Scatter addresses always point into the
 * process's buffer (an application that passes wild pointers to inline
 * sends crashes on rdma-core too); keys and remote addresses are free.
 */
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fuzz_input.h"

enum { REGION = 1 << 16, GUARD = 4096, NQP = 4, NCQ = 3, NLIVE = 64 };

/* What the parent domain's allocator does next (set by the input). */
enum { A_MEMORY, A_DEFAULT, A_NULL, A_MISALIGNED, A_UNREADABLE, A_RINGS_ONLY, A_MODES };

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_pd *par;   /* a parent domain of pd with the allocator below */
	int amode;            /* A_* */
	struct { void *p, *base; } live[NLIVE]; /* handed and not yet given back */
	int nlive;
	struct ibv_cq *cq[NCQ];
	struct ibv_mr *mr;
	uint8_t *area; /* guard | region | guard */
	struct ibv_qp *qp[NQP];
} f;


static uint8_t *region(void) { return f.area + GUARD; }

/* A page nothing may read (regions and queue memory that must be refused). */
static uint8_t *unreadable(void)
{
	static uint8_t *none;

	if (!none) {
		none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (none == MAP_FAILED)
			abort();
	}
	return none;
}

static void *pd_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	uint8_t *base;

	(void)ctx;
	if (pd != f.par || !size || !align || (align & (align - 1)) || size > (64u << 20))
		abort(); /* the emulation asked for something rdma-core never would */
	if (f.amode == A_DEFAULT || (f.amode == A_RINGS_ONLY && type == MLX5DV_RES_TYPE_DBR))
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (f.amode == A_NULL || f.nlive == NLIVE)
		return NULL;
	if (f.amode == A_UNREADABLE)
		return unreadable(); /* refused, and given back through pd_free */
	base = aligned_alloc(align, (size + 8 + align - 1) / align * align);
	if (!base)
		return NULL;
	f.live[f.nlive].base = base;
	f.live[f.nlive].p = f.amode == A_MISALIGNED ? base + 8 : base;
	return f.live[f.nlive++].p;
}

static void pd_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	(void)ctx;
	(void)type;
	if (pd != f.par)
		abort();
	if (ptr == unreadable())
		return;
	for (int i = 0; i < f.nlive; i++)
		if (f.live[i].p == ptr) {
			free(f.live[i].base);
			f.live[i] = f.live[--f.nlive];
			return;
		}
	abort(); /* given back twice, or never handed */
}

static void setup(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);

	f.ctx = l && l[0] ? ibv_open_device(l[0]) : NULL;
	ibv_free_device_list(l);
	f.pd = f.ctx ? ibv_alloc_pd(f.ctx) : NULL;
	f.area = malloc(REGION + 2 * GUARD);
	if (!f.pd || !f.area)
		abort();
	memset(f.area, 0xa5, REGION + 2 * GUARD);
	for (int i = 0; i < NCQ; i++)
		f.cq[i] = ibv_create_cq(f.ctx, 64 << i, NULL, NULL, 0);
	f.mr = ibv_reg_mr(f.pd, region(), REGION, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!f.cq[0] || !f.cq[1] || !f.cq[2] || !f.mr)
		abort();
	{
		struct ibv_parent_domain_init_attr a = { .pd = f.pd, .alloc = pd_alloc,
			.free = pd_free, .comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS };

		f.par = ibv_alloc_parent_domain(f.ctx, &a);
		if (!f.par)
			abort();
	}
}

/* The PD of the next object: the plain one, or the parent domain with the
 * allocator doing what the input says. */
static struct ibv_pd *some_pd(in *s)
{
	uint32_t k = take(s, 1);

	if (k < 128)
		return f.pd;
	f.amode = (int)(k % A_MODES);
	return f.par;
}

static uint32_t key(in *s)
{
	uint32_t k = take(s, 1);

	return k < 200 ? f.mr->lkey : take(s, 4);
}

static void do_create(in *s)
{
	int slot = take(s, 1) % NQP;
	struct ibv_qp_init_attr a;

	if (f.qp[slot])
		return;
	memset(&a, 0, sizeof(a));
	a.send_cq = f.cq[take(s, 1) % NCQ];
	a.recv_cq = f.cq[take(s, 1) % NCQ];
	a.qp_type = take(s, 1) < 240 ? IBV_QPT_RC : (enum ibv_qp_type)take(s, 1);
	a.cap.max_send_wr = take(s, 2);
	a.cap.max_recv_wr = take(s, 2);
	a.cap.max_send_sge = take(s, 1) % 20;
	a.cap.max_recv_sge = take(s, 1) % 20;
	a.cap.max_inline_data = take(s, 2) % 1100;
	a.sq_sig_all = take(s, 1) & 1;
	f.qp[slot] = ibv_create_qp(some_pd(s), &a);
}

static void do_modify(in *s)
{
	struct ibv_qp *qp = f.qp[take(s, 1) % NQP];
	struct ibv_qp *peer = f.qp[take(s, 1) % NQP];
	struct ibv_qp_attr a;
	int mask = (int)take(s, 4);

	if (!qp)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = (enum ibv_qp_state)(take(s, 1) % 8);
	a.cur_qp_state = (enum ibv_qp_state)(take(s, 1) % 8);
	a.port_num = (uint8_t)take(s, 1) % 3;
	a.dest_qp_num = peer && take(s, 1) < 200 ? peer->qp_num : take(s, 4);
	a.min_rnr_timer = (uint8_t)take(s, 1) % 40;
	a.rnr_retry = (uint8_t)take(s, 1) % 9;
	a.ah_attr.dlid = (uint16_t)take(s, 2);
	ibv_modify_qp(qp, &a, mask);
}

/* A scatter list inside the region. */
static int sges(in *s, struct ibv_sge *sg, int max)
{
	int n = (int)(take(s, 1) % (max + 3));

	for (int i = 0; i < n && i < max; i++) {
		uint32_t off = take(s, 2) % REGION, len = take(s, 2);

		if (len > REGION - off)
			len = REGION - off;
		sg[i].addr = (uintptr_t)(region() + off);
		sg[i].length = len;
		sg[i].lkey = key(s);
	}
	return n;
}

static void do_send(in *s)
{
	struct ibv_qp *qp = f.qp[take(s, 1) % NQP];
	struct ibv_sge sg[20];
	struct ibv_send_wr wr, *bad;

	if (!qp)
		return;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = take(s, 2);
	wr.opcode = (enum ibv_wr_opcode)(take(s, 1) % 14);
	wr.send_flags = take(s, 1);
	wr.num_sge = sges(s, sg, 20);
	wr.sg_list = sg;
	wr.imm_data = take(s, 4);
	wr.wr.rdma.remote_addr = (uintptr_t)region() + take(s, 2) - 4096 * (take(s, 1) & 1);
	wr.wr.rdma.rkey = key(s);
	if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = (uintptr_t)region() + take(s, 2);
		wr.wr.atomic.rkey = key(s);
		wr.wr.atomic.compare_add = take(s, 4);
		wr.wr.atomic.swap = take(s, 4);
	}
	ibv_post_send(qp, &wr, &bad);
}

static void do_recv(in *s)
{
	struct ibv_qp *qp = f.qp[take(s, 1) % NQP];
	struct ibv_sge sg[20];
	struct ibv_recv_wr wr = { 0 }, *bad;

	if (!qp)
		return;
	wr.wr_id = take(s, 2);
	wr.num_sge = sges(s, sg, 20);
	wr.sg_list = sg;
	ibv_post_recv(qp, &wr, &bad);
}

/* An address for a region: inside the area (any length up to the end of
 * its trailing guard: past the allocation, the kernel's copy that probes
 * the range would read what ASan forbids), NULL, or a page that cannot be
 * read. */
static uint8_t *some_addr(in *s, size_t *len)
{
	uint32_t k = take(s, 1);

	*len = take(s, 3);
	if (k < 200) {
		uint32_t off = take(s, 2) % REGION;

		*len %= (size_t)(REGION + GUARD - off) + 1;
		return region() + off;
	}
	return k < 230 ? NULL : unreadable();
}

/* Object calls with any attributes, each object destroyed again at once:
 * MRs (plain and DMA-BUF), extended CQs, SRQs, parent domains. */
static void do_objects(in *s)
{
	size_t len;
	uint8_t *addr = some_addr(s, &len);
	int access = (int)take(s, 2);
	struct ibv_mr *mr;

	switch (take(s, 1) % 5) {
	case 0:
		mr = ibv_reg_mr(f.pd, addr, len, access);
		break;
	case 1:
		mr = ibv_reg_dmabuf_mr(f.pd, take(s, 2), len, (uint64_t)(uintptr_t)addr,
				       (int)(take(s, 1) % 8) - 1, access);
		break;
	case 2: {
		struct ibv_cq_init_attr_ex a = { 0 };
		struct ibv_cq_ex *cq;

		a.cqe = take(s, 3);
		a.wc_flags = take(s, 4) | (uint64_t)take(s, 1) << 32;
		a.comp_mask = take(s, 1);
		a.flags = take(s, 1);
		if (take(s, 1) & 1) { /* often a CQ rdma-core would make on a parent domain */
			a.parent_domain = some_pd(s);
			a.comp_mask = take(s, 1) & 1 ? IBV_CQ_INIT_ATTR_MASK_PD : a.comp_mask;
			a.wc_flags &= IBV_WC_STANDARD_FLAGS;
		}
		cq = ibv_create_cq_ex(f.ctx, &a);
		if (cq)
			ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
		return;
	}
	case 3: {
		struct ibv_srq_init_attr a = { 0 };
		struct ibv_srq *srq;

		a.attr.max_wr = take(s, 2);
		a.attr.max_sge = take(s, 1) % 20;
		srq = ibv_create_srq(some_pd(s), &a);
		if (srq && ibv_destroy_srq(srq))
			abort();
		return;
	}
	default: {
		struct ibv_parent_domain_init_attr a = { 0 };
		struct ibv_pd *pd;

		a.pd = take(s, 1) < 240 ? f.pd : NULL;
		a.comp_mask = take(s, 1);
		pd = ibv_alloc_parent_domain(f.ctx, &a);
		if (pd)
			ibv_dealloc_pd(pd);
		return;
	}
	}
	if (mr)
		ibv_dereg_mr(mr);
}

static void drain(void)
{
	struct ibv_wc wc[16];

	for (int i = 0; i < NCQ; i++)
		while (ibv_poll_cq(f.cq[i], 16, wc) > 0)
			;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	in s = { data, size };
	struct ibv_wc wc[8];
	struct ibv_port_attr pa;

	if (!f.ctx)
		setup();
	while (s.n) {
		switch (take(&s, 1) % 9) {
		case 0: do_create(&s); break;
		case 1: do_modify(&s); break;
		case 2: do_send(&s); break;
		case 3: do_recv(&s); break;
		case 4: ibv_poll_cq(f.cq[take(&s, 1) % NCQ], (int)(take(&s, 1) % 9), wc); break;
		case 5: ibv_query_port(f.ctx, (uint8_t)take(&s, 1), &pa); break;
		case 6: {
			int slot = (int)(take(&s, 1) % NQP);

			if (f.qp[slot] && !ibv_destroy_qp(f.qp[slot]))
				f.qp[slot] = NULL;
			break;
		}
		case 7: do_objects(&s); break;
		default: ibv_req_notify_cq(f.cq[take(&s, 1) % NCQ], 0); break;
		}
	}
	/* Every input starts from the same objects: its QPs go, its CQEs too. */
	for (int i = 0; i < NQP; i++)
		if (f.qp[i] && !ibv_destroy_qp(f.qp[i]))
			f.qp[i] = NULL;
	drain();
	if (f.nlive)
		abort(); /* queue memory the parent domain's allocator handed was kept */
	for (size_t i = 0; i < GUARD; i++)
		if (f.area[i] != 0xa5 || f.area[GUARD + REGION + i] != 0xa5)
			abort(); /* something wrote outside the registered region */
	return 0;
}
