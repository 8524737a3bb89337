/*
 * softnic where outside code relies on what a ConnectX does (issue 12):
 * RDMA READ, 8-byte compare-swap, 4- and 8-byte masked atomics, the
 * doorbell watch (a doorbell rung before its record), overrun-ignore and
 * collapsed CQs, the CQEs' initial owner bit against both kinds of poller,
 * and the plain queue descriptors (driven with rdma-core's own mlx5dv.h
 * setters where the header is there). Receive queues: test_recv.c.
 *
 * The same cases run on the CPU engine (ctest) and on the GPU engine
 * (gic-gpu-fidelity, built with TK_GPU_ENGINE). Every payload and every
 * fetched value is checked against a reference computed here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testkit.h"

#if defined(__has_include)
#if __has_include(<infiniband/mlx5dv.h>)
#include <infiniband/mlx5dv.h>
#define HAVE_MLX5DV 1
#endif
#endif

static const int ALL_REMOTE = SOFTNIC_ACCESS_REMOTE_WRITE | SOFTNIC_ACCESS_REMOTE_READ |
			      SOFTNIC_ACCESS_REMOTE_ATOMIC | SOFTNIC_ACCESS_LOCAL_WRITE;

static void expect_send_cqe(tk_pair *p, uint8_t cqe_opcode, uint8_t syndrome, uint8_t vs,
			    const char *what)
{
	tk_expect_cqe(p, &p->pe[0].cqv, cqe_opcode, syndrome, vs, p->pe[0].sq.qpn, what);
}

/* Reserves nbb BBs of PE0's queue; the caller builds its WQE there and
 * calls ring_one(). */
static uint64_t reserve(tk_pair *p, uint32_t nbb)
{
	uint64_t pos = 0;

	if (gic_sq_reserve_excl(&p->pe[0].sq, nbb, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline()))
		fprintf(stderr, "reserve: the queue stayed full\n");
	return pos;
}

/* Announces the signaled WQE at pos of nbb BBs (record, then doorbell). */
static void ring_one(tk_pair *p, uint64_t pos, uint32_t nbb)
{
	gic_sq_note_signaled(&p->pe[0].sq, pos + nbb, 0);
	gic_sq_publish_excl(&p->pe[0].sq, GIC_ORDER_RELEASE_SYS);
}

static uint64_t addr_of(const void *p) { return (uint64_t)(uintptr_t)p; }

/* ------------------------------------------------------------------ */
/* RDMA READ. */

CASE(rdma_read_sizes)
{
	static const uint32_t sizes[] = { 1, 3, 8, 15, 16, 63, 64, 255, 4096, 65537, 1 << 20 };
	tk_pair_cfg cfg = { .engine_threads = 1, .dst_access = ALL_REMOTE };
	tk_pair *p = tk_pair_open(&cfg);

	REQUIRE(p, "fixture");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t len = sizes[i];
		uint64_t soff = (p->region - len) / 3, pos;

		tk_fill(p->dst + soff, len, 40 + i);
		memset(p->src, 0x5a, p->region);
		pos = reserve(p, 1);
		gic_wqe_read(&p->pe[0].sq, pos, addr_of(p->dst + soff), softnic_mr_rkey(p->dst_mr),
			     addr_of(p->src), softnic_mr_lkey(p->src_mr), len, GIC_CTRL_CQ_UPDATE);
		ring_one(p, pos, 1);
		expect_send_cqe(p, GIC_CQE_REQ, 0, 0, "read");
		REQUIRE(memcmp(p->src, p->dst + soff, len) == 0, "read of %u bytes", len);
		CHECK(len == p->region || p->src[len] == 0x5a, "read of %u wrote past its buffer", len);
	}
	CHECK(tk_guards_intact(p), "guard zones");
	tk_pair_close(p);
}

/* One READ scattered into three local segments. */
CASE(rdma_read_sges)
{
	tk_pair_cfg cfg = { .engine_threads = 1, .dst_access = ALL_REMOTE };
	tk_pair *p = tk_pair_open(&cfg);
	static const uint32_t seg_len[3] = { 5, 4096, 333 };
	static const uint64_t seg_off[3] = { 0, 10000, 200000 };
	uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16, total = 5 + 4096 + 333, done = 0;
	uint64_t pos;

	REQUIRE(p, "fixture");
	tk_fill(p->dst + 777, total, 9);
	memset(p->src, 0, p->region);
	pos = reserve(p, 2);
	gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_RDMA_READ, 0, p->pe[0].sq.qpn,
			   GIC_CTRL_CQ_UPDATE, 5, 0);
	gic_raddr_seg_words(r, addr_of(p->dst + 777), softnic_mr_rkey(p->dst_mr));
	gic_st_seg16(gic_sq_seg(&p->pe[0].sq, pos, 0), c);
	gic_st_seg16(gic_sq_seg(&p->pe[0].sq, pos, 1), r);
	for (int i = 0; i < 3; i++) {
		gic_data_seg d = gic_make_data_seg(seg_len[i], softnic_mr_lkey(p->src_mr),
						   addr_of(p->src + seg_off[i]));

		gic_st_seg16(gic_sq_seg(&p->pe[0].sq, pos, 2 + (uint32_t)i), &d);
	}
	ring_one(p, pos, 2);
	expect_send_cqe(p, GIC_CQE_REQ, 0, 0, "read into 3 segments");
	for (int i = 0; i < 3; i++) {
		CHECK(memcmp(p->src + seg_off[i], p->dst + 777 + done, seg_len[i]) == 0,
		      "segment %d", i);
		done += seg_len[i];
	}
	tk_pair_close(p);
}

/* Reads that must fail: no REMOTE_READ right, an inline segment, a local
 * buffer without LOCAL_WRITE. Each fails with its syndrome, and no byte
 * moves. */
CASE(rdma_read_errors)
{
	for (int k = 0; k < 3; k++) {
		tk_pair_cfg cfg = { .engine_threads = 1, .dst_access = k == 0 ? SOFTNIC_ACCESS_REMOTE_WRITE
									     : ALL_REMOTE };
		tk_pair *p = tk_pair_open(&cfg);
		softnic_mr *ro = NULL;
		uint64_t pos;

		REQUIRE(p, "fixture");
		memset(p->src, 0x11, 64);
		pos = reserve(p, 1);
		if (k == 1) { /* READ whose data segment is inline: malformed */
			uint32_t c[4] GIC_ALIGN16, r[4] GIC_ALIGN16, in[4] GIC_ALIGN16 = { 0 };

			gic_ctrl_seg_words(c, (uint16_t)pos, GIC_OPCODE_RDMA_READ, 0,
					   p->pe[0].sq.qpn, GIC_CTRL_CQ_UPDATE, 3, 0);
			gic_raddr_seg_words(r, addr_of(p->dst), softnic_mr_rkey(p->dst_mr));
			in[0] = gic_inline_hdr_be(8);
			gic_st_seg16(gic_sq_seg(&p->pe[0].sq, pos, 0), c);
			gic_st_seg16(gic_sq_seg(&p->pe[0].sq, pos, 1), r);
			gic_st_seg16(gic_sq_seg(&p->pe[0].sq, pos, 2), in);
		} else {
			uint32_t lkey = softnic_mr_lkey(p->src_mr);

			if (k == 2) {
				ro = softnic_reg_mr(p->pe[0].pd, p->src, 4096, 0);
				REQUIRE(ro, "read-only MR");
				lkey = softnic_mr_lkey(ro);
			}
			gic_wqe_read(&p->pe[0].sq, pos, addr_of(p->dst), softnic_mr_rkey(p->dst_mr),
				     addr_of(p->src), lkey, 64, GIC_CTRL_CQ_UPDATE);
		}
		ring_one(p, pos, 1);
		if (k == 0)
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR,
					SOFTNIC_VSYND_REMOTE_ACCESS, "no REMOTE_READ");
		else if (k == 1)
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_QP_OP_ERR,
					SOFTNIC_VSYND_INLINE_READ, "inline READ");
		else
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_PROT_ERR,
					SOFTNIC_VSYND_LOCAL_ACCESS, "no LOCAL_WRITE");
		CHECK(p->src[0] == 0x11 && p->src[63] == 0x11, "case %d: a failed read wrote", k);
		tk_pair_close(p);
	}
}

/* ------------------------------------------------------------------ */
/* Atomics. The reference model: compute here what the target must hold
 * and what must come back, independently of the engine's code. */

typedef struct amo {
	uint8_t opcode;
	uint32_t size;
	gic_masked_args m;
} amo;

/* Field-by-field add: boundary bit i set means bit i is the top of a
 * field (a bit loop, unlike the engine's word arithmetic). */
static uint64_t ref_field_add(uint64_t a, uint64_t b, uint64_t boundary, uint32_t bits)
{
	uint64_t out = 0, carry = 0;

	for (uint32_t i = 0; i < bits; i++) {
		uint64_t s = ((a >> i) & 1) + ((b >> i) & 1) + carry;

		out |= (s & 1) << i;
		carry = (boundary >> i) & 1 ? 0 : s >> 1;
	}
	return out;
}

static uint64_t ref_apply(const amo *a, uint64_t old)
{
	uint64_t mask = a->size == 4 ? 0xffffffffull : ~0ull, v;

	switch (a->opcode) {
	case GIC_OPCODE_ATOMIC_FA:
		v = old + a->m.swap_add;
		break;
	case GIC_OPCODE_ATOMIC_CS:
		v = old == a->m.compare ? a->m.swap_add : old;
		break;
	case GIC_OPCODE_ATOMIC_MASKED_CS:
		v = old;
		if (((old ^ a->m.compare) & a->m.compare_mask & mask) == 0)
			v = (old & ~a->m.swap_mask) | (a->m.swap_add & a->m.swap_mask);
		break;
	default:
		v = ref_field_add(old, a->m.swap_add, a->m.compare, a->size * 8);
		break;
	}
	return v & mask;
}

/* Posts atomic a on target word t of PE1 (result to PE0's src + 64). */
static void post_amo(tk_pair *p, const amo *a, uint8_t *t)
{
	gic_sq *sq = &p->pe[0].sq;
	uint32_t nbb = a->size == 8 && a->opcode == GIC_OPCODE_ATOMIC_MASKED_CS ? 2 : 1;
	uint64_t pos = reserve(p, nbb);
	uint32_t rkey = softnic_mr_rkey(p->dst_mr), lkey = softnic_mr_lkey(p->src_mr);
	uint64_t res = addr_of(p->src + 64);

	if (a->opcode == GIC_OPCODE_ATOMIC_FA)
		gic_wqe_atomic_fa(sq, pos, addr_of(t), rkey, a->m.swap_add, res, lkey, GIC_CTRL_CQ_UPDATE);
	else if (a->opcode == GIC_OPCODE_ATOMIC_CS)
		gic_wqe_atomic_cs(sq, pos, addr_of(t), rkey, a->m.compare, a->m.swap_add, res, lkey,
				  GIC_CTRL_CQ_UPDATE);
	else
		gic_wqe_masked_atomic(sq, pos, a->opcode, a->size, addr_of(t), rkey, &a->m, res, lkey,
				      GIC_CTRL_CQ_UPDATE);
	ring_one(p, pos, nbb);
}

/* Runs a on a target holding old and checks target, fetched value (host
 * order for 8 bytes, big-endian for 4) and CQE. */
static void check_amo(tk_pair *p, const amo *a, uint64_t old, const char *what)
{
	uint8_t *t = p->dst + 4096 + 8 * (a->size == 4); /* 4-byte targets off 8-byte alignment */
	uint64_t want = ref_apply(a, old), got = 0, fetched = 0;

	memcpy(t, &old, a->size);
	memset(p->src + 64, 0xcc, 16);
	post_amo(p, a, t);
	expect_send_cqe(p, GIC_CQE_REQ, 0, 0, what);
	memcpy(&got, t, a->size);
	memcpy(&fetched, p->src + 64, a->size);
	if (a->size == 4)
		fetched = gic_be32toh((uint32_t)fetched);
	CHECK(got == want, "%s: target 0x%llx, want 0x%llx", what, (unsigned long long)got,
	      (unsigned long long)want);
	CHECK(fetched == old, "%s: fetched 0x%llx, want the old 0x%llx", what,
	      (unsigned long long)fetched, (unsigned long long)old);
	CHECK(p->src[64 + a->size] == 0xcc, "%s: result wrote past its %u bytes", what, a->size);
}

CASE(compare_swap)
{
	tk_pair_cfg cfg = { .engine_threads = 1 };
	tk_pair *p = tk_pair_open(&cfg);
	amo a = { GIC_OPCODE_ATOMIC_CS, 8, { 0 } };

	REQUIRE(p, "fixture");
	/* A counter advanced only by compare-swaps, then a failing one. */
	for (uint64_t i = 0; i < 200; i++) {
		a.m.compare = i * 0x100000001ull;
		a.m.swap_add = (i + 1) * 0x100000001ull;
		check_amo(p, &a, i * 0x100000001ull, "CS hit");
	}
	a.m.compare = 5;
	a.m.swap_add = 6;
	check_amo(p, &a, 7, "CS miss");
	tk_pair_close(p);
}

/* Masked compare-swap and fetch-add of both sizes, on fixed corner cases
 * and on random operands against the bit-loop reference. */
CASE(masked_atomics)
{
	tk_pair_cfg cfg = { .engine_threads = 1 };
	tk_pair *p = tk_pair_open(&cfg);
	uint64_t seed = 3;
	static const amo fixed[] = {
		{ GIC_OPCODE_ATOMIC_MASKED_FA, 8, { 0x0001000100010001ull, 0x8000800080008000ull, 0, 0 } },
		{ GIC_OPCODE_ATOMIC_MASKED_FA, 4, { 0x00010001u, 0x80008000u, 0, 0 } },
		{ GIC_OPCODE_ATOMIC_MASKED_FA, 4, { 1, 0, 0, 0 } },              /* plain 32-bit add */
		{ GIC_OPCODE_ATOMIC_MASKED_FA, 4, { 0xffffffffu, 0xffffffffu, 0, 0 } }, /* xor */
		{ GIC_OPCODE_ATOMIC_MASKED_CS, 4, { 0xabcd, 0xffffffffu, 0xffffffffu, 0xffffffffu } },
		{ GIC_OPCODE_ATOMIC_MASKED_CS, 4, { 0, 0, 0x0000ff00u, 0 } },    /* AND ~0xff00 */
		{ GIC_OPCODE_ATOMIC_MASKED_CS, 8, { ~0ull, 0, 0xf0f0ull, 0 } },  /* OR 0xf0f0 */
		{ GIC_OPCODE_ATOMIC_MASKED_CS, 8, { 42, 7, ~0ull, ~0ull } },     /* full CAS */
	};

	REQUIRE(p, "fixture");
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		check_amo(p, &fixed[i], 0xffff0000ffff0001ull & (fixed[i].size == 4 ? 0xffffffffu : ~0ull),
			  "fixed");
		check_amo(p, &fixed[i], 7, "fixed, old 7");
	}
	for (int i = 0; i < 400; i++) {
		amo a = { i & 1 ? GIC_OPCODE_ATOMIC_MASKED_CS : GIC_OPCODE_ATOMIC_MASKED_FA,
			  i & 2 ? 8u : 4u, { 0 } };
		uint64_t mask = a.size == 4 ? 0xffffffffull : ~0ull, old = tk_rand(&seed) & mask;

		a.m.swap_add = tk_rand(&seed) & mask;
		a.m.compare = tk_rand(&seed) & mask;
		a.m.swap_mask = tk_rand(&seed) & mask;
		a.m.compare_mask = i % 3 ? tk_rand(&seed) & tk_rand(&seed) & mask : 0;
		if (i % 5 == 0) /* a compare that matches under its mask */
			a.m.compare = old;
		check_amo(p, &a, old, "random");
	}
	tk_pair_close(p);
}

/* Atomics that must fail: a masked size other than 4 or 8, a 4-byte target
 * off its alignment, a result buffer of the wrong size. */
CASE(atomic_errors)
{
	for (int k = 0; k < 3; k++) {
		tk_pair_cfg cfg = { .engine_threads = 1 };
		tk_pair *p = tk_pair_open(&cfg);
		gic_masked_args m = { 1, 0, 0, 0 };
		uint64_t pos;

		REQUIRE(p, "fixture");
		memset(p->dst + 4096, 0, 16);
		pos = reserve(p, 1);
		gic_wqe_masked_atomic(&p->pe[0].sq, pos, GIC_OPCODE_ATOMIC_MASKED_FA, 4,
				      addr_of(p->dst + 4096 + (k == 1 ? 2 : 0)),
				      softnic_mr_rkey(p->dst_mr), &m, addr_of(p->src),
				      softnic_mr_lkey(p->src_mr), GIC_CTRL_CQ_UPDATE);
		if (k == 0) { /* opmod naming 16-byte operands */
			gic_ctrl_seg *c = gic_sq_seg(&p->pe[0].sq, pos, 0);

			c->opmod_idx_opcode_be = gic_htobe32((uint32_t)(GIC_OPMOD_EXT_ATOMIC | 2) << 24 |
							     (uint32_t)(pos & 0xffff) << 8 |
							     GIC_OPCODE_ATOMIC_MASKED_FA);
		} else if (k == 2) { /* an 8-byte result buffer for a 4-byte atomic */
			gic_data_seg d = gic_make_data_seg(8, softnic_mr_lkey(p->src_mr), addr_of(p->src));

			gic_st_seg16(gic_sq_seg(&p->pe[0].sq, pos, 3), &d);
		}
		ring_one(p, pos, 1);
		if (k == 0)
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_QP_OP_ERR,
					SOFTNIC_VSYND_BAD_ATOMIC_SIZE, "16-byte masked atomic");
		else if (k == 1)
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_INVAL_REQ_ERR,
					SOFTNIC_VSYND_ATOMIC_ALIGN, "misaligned 4-byte atomic");
		else
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_LENGTH_ERR,
					SOFTNIC_VSYND_BAD_LENGTH, "result buffer size");
		CHECK(p->dst[4096] == 0 && p->dst[4098] == 0, "case %d: a failed atomic wrote", k);
		tk_pair_close(p);
	}
}

/* Threads on two QPs of one softnic hammer one 4-byte counter with masked
 * fetch-adds and one 8-byte word with compare-swap increments: nothing is
 * lost (the engine's compare-swap loop is atomic against the other QP's). */
typedef struct amo_thread {
	tk_pair *p;
	gic_sq *sq;
	uint32_t lkey;
	uint8_t *res;
	int failures;
} amo_thread;

static void *amo_worker(void *arg)
{
	amo_thread *t = arg;
	gic_masked_args add1 = { 1, 0, 0, 0 };
	uint32_t rkey = softnic_mr_rkey(t->p->dst_mr);

	for (int i = 0; i < 500; i++) {
		uint64_t pos;

		if (gic_sq_reserve_excl(t->sq, 1, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline())) {
			t->failures++;
			return NULL;
		}
		gic_wqe_masked_atomic(t->sq, pos, GIC_OPCODE_ATOMIC_MASKED_FA, 4,
				      addr_of(t->p->dst + 8192), rkey, &add1, addr_of(t->res),
				      t->lkey, i % 16 == 15 ? GIC_CTRL_CQ_UPDATE : 0);
		if (i % 16 == 15)
			gic_sq_note_signaled(t->sq, pos + 1, 0);
		gic_sq_publish_excl(t->sq, GIC_ORDER_RELEASE_SYS);
	}
	if (gic_sq_quiet(t->sq, GIC_ORDER_RELEASE_SYS, tk_deadline()))
		t->failures++;
	return NULL;
}

CASE(atomics_two_qps)
{
	tk_pair_cfg cfg = { .engine_threads = 2 };
	tk_pair *p = tk_pair_open(&cfg);
	softnic_qp_attr qa = { .log_sq_bb = 8 };
	softnic_qp *extra[2] = { NULL, NULL };
	gic_sq sq2;
	gic_cq cq2;
	amo_thread t[2];
	pthread_t th[2];
	uint32_t counter;

	REQUIRE(p, "fixture");
	/* A second connection from PE0's domain into PE1's, on another
	 * engine thread. */
	qa.send_cq = softnic_cq_create(p->nic, 8);
	extra[0] = softnic_qp_create(p->pe[0].pd, &qa);
	qa.send_cq = softnic_cq_create(p->nic, 8);
	extra[1] = softnic_qp_create(p->pe[1].pd, &qa);
	REQUIRE(extra[0] && extra[1] && softnic_qp_connect(extra[0], extra[1]) == 0, "second QP");
	softnic_qp_view(extra[0], &sq2, &cq2);
	memset(p->dst + 8192, 0, 4);
	for (int i = 0; i < 2; i++) {
		t[i] = (amo_thread){ p, i ? &sq2 : &p->pe[0].sq, softnic_mr_lkey(p->src_mr),
				     p->src + 64 * (i + 1), 0 };
		REQUIRE(pthread_create(&th[i], NULL, amo_worker, &t[i]) == 0, "thread");
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	memcpy(&counter, p->dst + 8192, 4);
	CHECK(t[0].failures == 0 && t[1].failures == 0, "workers failed (%s / %s)",
	      softnic_qp_error(p->pe[0].qp), softnic_qp_error(extra[0]));
	CHECK(counter == 1000, "counter %u after 1000 masked fetch-adds from two QPs", counter);
	tk_pair_close(p);
}

/* ------------------------------------------------------------------ */
/* Doorbells. */

/* Builds an 8-byte write of v to dst slot `slot` at the next position
 * (not announced); returns its position. */
static uint64_t build_write(tk_pair *p, uint64_t v, uint32_t slot)
{
	gic_sq *sq = &p->pe[0].sq;
	uint64_t pos = sq->resv++;

	gic_wqe_write_inline(sq, pos, addr_of(p->dst + 8 * slot), softnic_mr_rkey(p->dst_mr), &v, 8,
			     GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(sq, pos + 1, 0);
	sq->ready = sq->resv;
	return pos;
}

/* The doorbell value for the WQE at pos: DOCA's (the producer index after
 * it, ds 0) or rdma-core's (the WQE's own first 8 bytes, ds > 0). */
static uint64_t db_value(tk_pair *p, uint64_t pos, int ctrl_form)
{
	uint64_t v;

	if (!ctrl_form)
		return gic_doorbell_value(p->pe[0].sq.qpn, pos + 1);
	memcpy(&v, gic_sq_seg(&p->pe[0].sq, pos, 0), 8);
	return v;
}

static void set_record(tk_pair *p, uint64_t upto)
{
	gic_st_release_sys_u32(p->pe[0].sq.dbrec, gic_htobe32((uint32_t)upto & 0xffffu));
}

static void set_doorbell(tk_pair *p, uint64_t v)
{
	gic_st_release_sys_u64(p->pe[0].sq.db, v);
}

/* Doorbell, then record (after the engine has looked), then the same
 * doorbell again: strict mode, both doorbell forms; every WQE completes
 * without error, as on hardware. */
CASE(doorbell_before_record)
{
	for (int form = 0; form < 2; form++) {
		tk_pair_cfg cfg = { .engine_threads = 0, .strict = 1 };
		tk_pair *p = tk_pair_open(&cfg);
		softnic_stats st;

		REQUIRE(p, "fixture");
		for (uint32_t i = 0; i < 20; i++) {
			uint64_t pos = build_write(p, 1000 + i, i), db = db_value(p, pos, form);
			uint64_t got;

			set_doorbell(p, db);
			softnic_progress(p->nic); /* sees the doorbell, not the record */
			softnic_progress(p->nic);
			set_record(p, pos + 1);
			set_doorbell(p, db); /* the same value: no change of the word */
			expect_send_cqe(p, GIC_CQE_REQ, 0, 0, "early doorbell");
			memcpy(&got, p->dst + 8 * i, 8);
			CHECK(got == 1000 + i, "form %d write %u: 0x%llx", form, i, (unsigned long long)got);
		}
		softnic_get_stats(p->nic, &st);
		CHECK(st.doorbell_watches == 20 && st.strict_violations == 0 && st.error_cqes == 0,
		      "form %d: watches %llu, violations %llu, errors %llu", form,
		      (unsigned long long)st.doorbell_watches, (unsigned long long)st.strict_violations,
		      (unsigned long long)st.error_cqes);
		tk_pair_close(p);
	}
}

/* The same order against a running engine, 20000 times with no delay and
 * 200 times with a gap between the first doorbell and the record: none is
 * stranded (before the watch, a few of 20000 were). */
CASE(doorbell_before_record_racing)
{
	tk_pair_cfg cfg = { .engine_threads = 1, .strict = 1, .log_sq_bb = 6 };
	tk_pair *p = tk_pair_open(&cfg);
	gic_sq *sq;

	REQUIRE(p, "fixture");
	sq = &p->pe[0].sq;
	for (uint32_t i = 0; i < 20200; i++) {
		uint64_t pos, db;
		int rc = gic_sq_reserve_excl(sq, 1, &pos, GIC_ORDER_RELEASE_SYS, tk_deadline());
		uint64_t v = 7 * (uint64_t)i + 1;

		REQUIRE(rc == 0, "post %u: %s", i, softnic_qp_error(p->pe[0].qp));
		gic_wqe_write_inline(sq, pos, addr_of(p->dst + 8 * (i % 4096)),
				     softnic_mr_rkey(p->dst_mr), &v, 8, i % 32 == 31 ? GIC_CTRL_CQ_UPDATE : 0);
		if (i % 32 == 31)
			gic_sq_note_signaled(sq, pos + 1, 0);
		sq->ready = pos + 1;
		db = gic_doorbell_value(sq->qpn, pos + 1);
		set_doorbell(p, db);
		if (i >= 20000) /* a deliberate gap: the engine surely looks in it */
			for (uint64_t t0 = gic_now_ns(); gic_now_ns() - t0 < 200000;)
				gic_cpu_relax();
		set_record(p, pos + 1);
		set_doorbell(p, db);
	}
	REQUIRE(gic_sq_quiet(sq, GIC_ORDER_RELEASE_SYS, tk_deadline()) == 0, "quiet: %s",
		softnic_qp_error(p->pe[0].qp));
	for (uint32_t i = 20200 - 4096; i < 20200; i++) {
		uint64_t got;

		memcpy(&got, p->dst + 8 * (i % 4096), 8);
		REQUIRE(got == 7 * (uint64_t)i + 1, "write %u: 0x%llx", i, (unsigned long long)got);
	}
	tk_pair_close(p);
}

/* A doorbell the record never covers: after the watch, strict mode reports
 * it with a CQE of its own; lenient mode runs nothing (nothing was
 * announced) and keeps watching slowly, so that the record written 30 ms
 * later with the same doorbell value again still runs the WQE. */
CASE(doorbell_watch_expires)
{
	for (int strict = 0; strict < 2; strict++) {
		tk_pair_cfg cfg = { .engine_threads = 1, .strict = strict,
				    .doorbell_watch_ns = 5000000 };
		tk_pair *p = tk_pair_open(&cfg);
		softnic_stats st;
		uint64_t pos, t0, got;

		REQUIRE(p, "fixture");
		pos = build_write(p, 55, 0);
		t0 = gic_now_ns();
		set_doorbell(p, db_value(p, pos, 0));
		if (strict) {
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_LOCAL_QP_OP_ERR,
					SOFTNIC_VSYND_STRICT_DB_AHEAD, "uncovered doorbell");
			CHECK(gic_now_ns() - t0 >= 5000000, "reported before the watch ended");
			CHECK(strstr(softnic_qp_error(p->pe[0].qp), "doorbell index 1") != NULL,
			      "error text '%s'", softnic_qp_error(p->pe[0].qp));
		} else {
			while (gic_now_ns() - t0 < 30000000)
				gic_cpu_relax();
			softnic_get_stats(p->nic, &st);
			CHECK(st.wqes_executed == 0 && st.error_cqes == 0, "lenient: ran or failed");
			gic_sq_ring(&p->pe[0].sq, pos + 1, GIC_ORDER_RELEASE_SYS);
			expect_send_cqe(p, GIC_CQE_REQ, 0, 0, "record after the watch time");
			memcpy(&got, p->dst, 8);
			CHECK(got == 55, "payload 0x%llx", (unsigned long long)got);
		}
		tk_pair_close(p);
	}
}

/* ------------------------------------------------------------------ */
/* CQ modes and the initial owner bit. */

/* An overrun-ignore CQ of 4 entries whose consumer index never moves:
 * every one of 64 signaled WQEs completes (a plain CQ would stall at 4),
 * each CQE lands at pi % 4 with the owner bit of its pass. */
CASE(cq_overrun_ignore)
{
	tk_pair_cfg cfg = { .engine_threads = 1, .log_cqe_cnt = 2,
			    .cq_mode = SOFTNIC_CQ_OVERRUN_IGNORE };
	tk_pair *p = tk_pair_open(&cfg);
	softnic_stats st;
	gic_cq *cq;

	REQUIRE(p, "fixture");
	cq = &p->pe[0].cqv;
	for (uint32_t i = 0; i < 64; i++) {
		uint64_t v = 500 + i;

		REQUIRE(tk_post_inline(p, 8 * i, &v, 8, 1) == 0, "post %u", i);
		/* Wait for this CQE by its slot's wqe_counter and owner bit, as
		 * DOCA polls; the consumer index is never written. */
		for (uint64_t dl = tk_deadline();;) {
			uint64_t tail = gic_ld_acquire_sys_u64(
				(const uint64_t *)((const uint8_t *)&cq->cqes[i & 3] + GIC_CQE_TAIL_OFFSET));

			if (gic_cqe_tail_wqe_counter(tail) == i && gic_cqe_tail_opcode(tail) == GIC_CQE_REQ &&
			    gic_cqe_tail_owner(tail) == ((i >> 2) & 1))
				break;
			REQUIRE(gic_now_ns() < dl, "CQE %u never came", i);
			gic_cpu_relax();
		}
		p->pe[0].sq.retired = i + 1; /* what the CQE retired */
	}
	softnic_get_stats(p->nic, &st);
	CHECK(st.cqes_written == 64 && st.cq_full_stalls == 0, "%llu CQEs, %llu stalls",
	      (unsigned long long)st.cqes_written, (unsigned long long)st.cq_full_stalls);
	CHECK(gic_be32toh(*cq->dbrec) == 0, "consumer index moved");
	tk_pair_close(p);
}

/* A collapsed CQ (one entry, overrun ignore): every CQE goes to entry 0;
 * the poller follows its wqe_counter, as NVSHMEM's does. */
CASE(cq_collapsed)
{
	tk_pair_cfg cfg = { .engine_threads = 1 };
	tk_pair *p = tk_pair_open(&cfg);
	softnic_cq_attr ca = { 0, SOFTNIC_CQ_COLLAPSED | SOFTNIC_CQ_OVERRUN_IGNORE };
	softnic_qp_attr qa = { .log_sq_bb = 6 };
	softnic_cq_desc cd;
	softnic_qp *a, *b;
	gic_sq sq;
	gic_cq cqv;

	REQUIRE(p, "fixture");
	qa.send_cq = softnic_cq_create_ex(p->nic, &ca);
	REQUIRE(qa.send_cq && softnic_cq_desc_get(qa.send_cq, &cd) == 0, "collapsed CQ");
	CHECK(cd.cqe_cnt == 1 && cd.mode == ca.mode, "desc: %u entries, mode %u", cd.cqe_cnt, cd.mode);
	a = softnic_qp_create(p->pe[0].pd, &qa);
	qa.send_cq = softnic_cq_create(p->nic, 4);
	b = softnic_qp_create(p->pe[1].pd, &qa);
	REQUIRE(a && b && softnic_qp_connect(a, b) == 0, "QPs");
	softnic_qp_view(a, &sq, &cqv);
	for (uint32_t i = 0; i < 300; i++) {
		uint64_t pos = i, v = 9000 + i, got;
		const uint64_t *tail = (const uint64_t *)((const uint8_t *)cd.buf + GIC_CQE_TAIL_OFFSET);

		gic_wqe_write_inline(&sq, pos, addr_of(p->dst + 8 * (i % 64)), softnic_mr_rkey(p->dst_mr),
				     &v, 8, GIC_CTRL_CQ_UPDATE);
		gic_sq_ring(&sq, pos + 1, GIC_ORDER_RELEASE_SYS);
		for (uint64_t dl = tk_deadline();
		     gic_cqe_tail_wqe_counter(gic_ld_acquire_sys_u64(tail)) != (uint16_t)i ||
		     gic_cqe_tail_opcode(gic_ld_acquire_sys_u64(tail)) != GIC_CQE_REQ;) {
			REQUIRE(gic_now_ns() < dl, "CQE %u never came to entry 0", i);
			gic_cpu_relax();
		}
		memcpy(&got, p->dst + 8 * (i % 64), 8);
		REQUIRE(got == v, "write %u", i);
	}
	tk_pair_close(p);
}

/* A fresh CQ reads as empty to rdma-core's poller (opcode and owner) and
 * to an owner-only one (DOCA's on sm_90); after one CQE both find it at
 * entry 0 and nothing at entry 1. */
CASE(cq_initial_owner)
{
	tk_pair_cfg cfg = { .engine_threads = 1 };
	tk_pair *p = tk_pair_open(&cfg);
	gic_cq *cq;
	uint64_t v = 1;

	REQUIRE(p, "fixture");
	cq = &p->pe[0].cqv;
	for (uint32_t i = 0; i < cq->cqe_cnt; i++) {
		uint8_t op_own = cq->cqes[i].op_own;

		REQUIRE(op_own == 0xf1, "entry %u starts 0x%02x", i, op_own);
		CHECK(!gic_cqe_sw_owned((uint64_t)op_own << 56, i, cq->cqe_cnt), "rdma-core poller");
		CHECK((op_own & 1) != ((i & cq->cqe_cnt) ? 1 : 0), "owner-only poller sees entry %u", i);
	}
	REQUIRE(tk_post_inline(p, 0, &v, 8, 1) == 0, "post");
	expect_send_cqe(p, GIC_CQE_REQ, 0, 0, "first CQE");
	CHECK((cq->cqes[0].op_own & 1) == 0 && (cq->cqes[1].op_own & 1) == 1,
	      "owner bits after one CQE: 0x%02x 0x%02x", cq->cqes[0].op_own, cq->cqes[1].op_own);
	tk_pair_close(p);
}

/* ------------------------------------------------------------------ */
/* Descriptors. */

/* The descriptors agree with the views and with mlx5's conventions; a WQE
 * built through them with rdma-core's own setters (where mlx5dv.h is
 * here), recorded in dbrec[MLX5_SND_DBR] and BlueFlame-copied whole into
 * bf.reg, runs. */
CASE(queue_descriptors)
{
	tk_pair_cfg cfg = { .engine_threads = 1, .strict = 1, .log_rq_wqe = 4, .rq_max_sge = 3 };
	tk_pair *p = tk_pair_open(&cfg);
	softnic_qp_desc qd, rd;
	softnic_cq_desc cd;
	uint64_t v = 0x1122334455667788ull, got = 0;
	uint8_t wqe[4 * 64] GIC_ALIGN16;
	uint32_t pos;

	REQUIRE(p, "fixture");
	REQUIRE(softnic_qp_desc_get(p->pe[0].qp, &qd) == 0 && softnic_qp_desc_get(p->pe[1].qp, &rd) == 0 &&
		softnic_cq_desc_get(p->pe[0].cq, &cd) == 0, "descriptors");
	CHECK(qd.dbrec + 1 == p->pe[0].sq.dbrec, "send counter is dbrec[1]");
	CHECK(qd.sq.buf == p->pe[0].sq.wqes && qd.sq.wqe_cnt == p->pe[0].sq.bb_cnt &&
	      qd.sq.stride == 64, "send queue");
	CHECK((void *)qd.bf.reg == (void *)p->pe[0].sq.db && qd.bf.size == SOFTNIC_BF_SIZE, "bf");
	CHECK(qd.rq.wqe_cnt == 0 && rd.rq.wqe_cnt == 16 && rd.rq.stride == 64 && rd.rq.buf, "rq");
	CHECK(cd.buf == (void *)p->pe[0].cqv.cqes && cd.dbrec == p->pe[0].cqv.dbrec &&
	      cd.cqe_size == 64 && cd.cqe_cnt == p->pe[0].cqv.cqe_cnt, "cq");
	CHECK(qd.qpn == p->pe[0].sq.qpn, "qpn");
	/* A 4-BB inline write (200 bytes), copied into bf.reg in full. */
	memset(wqe, 0, sizeof(wqe));
	pos = 0;
	{
		gic_sq tmp = p->pe[0].sq;
		uint8_t data[200];

		tk_fill(data, sizeof(data), 77);
		memcpy(&data[0], &v, 8);
		tmp.wqes = wqe;
		tmp.bb_cnt = 4;
		gic_wqe_write_inline(&tmp, pos, addr_of(p->dst), softnic_mr_rkey(p->dst_mr), data,
				     sizeof(data), GIC_CTRL_CQ_UPDATE);
#if HAVE_MLX5DV
		/* rdma-core's setter must agree with ours byte for byte. */
		struct mlx5_wqe_ctrl_seg theirs;

		memset(&theirs, 0, sizeof(theirs)); /* the setter leaves the stream id alone */
		mlx5dv_set_ctrl_seg(&theirs, (uint16_t)pos, MLX5_OPCODE_RDMA_WRITE, 0, qd.qpn,
				    MLX5_WQE_CTRL_CQ_UPDATE, (uint8_t)gic_ds_inline_write(sizeof(data)),
				    0, 0);
		CHECK(memcmp(&theirs, wqe, 16) == 0, "ctrl segment differs from mlx5dv_set_ctrl_seg's");
#endif
		memcpy(qd.sq.buf, wqe, sizeof(wqe));
		gic_st_release_sys_u32(&qd.dbrec[1], gic_htobe32(4)); /* MLX5_SND_DBR */
		/* BlueFlame: the whole WQE, in 8-byte stores as a CPU copies it to
		 * a UAR (the engine reads the first word atomically). */
		for (uint32_t i = 0; i < qd.bf.size / 8; i++) {
			uint64_t word;

			memcpy(&word, wqe + 8 * i, 8);
			__atomic_store_n((uint64_t *)qd.bf.reg + i, word, __ATOMIC_RELEASE);
		}
		p->pe[0].sq.resv = p->pe[0].sq.ready = 4;
		gic_sq_note_signaled(&p->pe[0].sq, 4, 0);
	}
	expect_send_cqe(p, GIC_CQE_REQ, 0, 0, "BlueFlame-rung WQE");
	memcpy(&got, p->dst, 8);
	CHECK(got == v, "payload 0x%llx", (unsigned long long)got);
	CHECK(softnic_qp_desc_get(NULL, &qd) == EINVAL && softnic_cq_desc_get(p->pe[0].cq, NULL) ==
	      EINVAL, "NULL arguments");
	tk_pair_close(p);
}

/* The responder QP's rights (verbs' qp_access_flags) gate each kind of
 * request on top of the region's: with only REMOTE_WRITE granted, a write
 * lands, a read and an atomic fail with REMOTE_ACCESS_ERR and move no
 * byte. */
CASE(qp_rights)
{
	for (int k = 0; k < 3; k++) {
		tk_pair_cfg cfg = { .engine_threads = 1, .dst_access = ALL_REMOTE };
		tk_pair *p = tk_pair_open(&cfg);
		uint64_t v = 0x77, pos, got = 0;

		REQUIRE(p, "fixture");
		REQUIRE(softnic_qp_set_rights(p->pe[1].qp, SOFTNIC_ACCESS_REMOTE_WRITE) == 0, "rights");
		CHECK(softnic_qp_set_rights(p->pe[1].qp, SOFTNIC_ACCESS_LOCAL_WRITE) == EINVAL,
		      "a local right is no QP right");
		memset(p->dst, 0, 16);
		memset(p->src, 0x33, 16);
		pos = reserve(p, 1);
		if (k == 0)
			gic_wqe_write_inline(&p->pe[0].sq, pos, addr_of(p->dst), softnic_mr_rkey(p->dst_mr),
					     &v, 8, GIC_CTRL_CQ_UPDATE);
		else if (k == 1)
			gic_wqe_read(&p->pe[0].sq, pos, addr_of(p->dst), softnic_mr_rkey(p->dst_mr),
				     addr_of(p->src), softnic_mr_lkey(p->src_mr), 8, GIC_CTRL_CQ_UPDATE);
		else
			gic_wqe_atomic_fa(&p->pe[0].sq, pos, addr_of(p->dst), softnic_mr_rkey(p->dst_mr), 5,
					  addr_of(p->src), softnic_mr_lkey(p->src_mr), GIC_CTRL_CQ_UPDATE);
		ring_one(p, pos, 1);
		if (k == 0) {
			expect_send_cqe(p, GIC_CQE_REQ, 0, 0, "write with the right");
			memcpy(&got, p->dst, 8);
			CHECK(got == 0x77, "write payload 0x%llx", (unsigned long long)got);
		} else {
			expect_send_cqe(p, GIC_CQE_REQ_ERR, GIC_SYND_REMOTE_ACCESS_ERR,
					SOFTNIC_VSYND_QP_RIGHTS, k == 1 ? "read, no right" : "atomic, no right");
			memcpy(&got, p->dst, 8);
			CHECK(got == 0 && p->src[0] == 0x33, "case %d moved bytes", k);
		}
		tk_pair_close(p);
	}
}

CASE(cq_api_errors)
{
	softnic *nic = tk_engine_used->open(&(softnic_attr){ .engine_threads = 1 });
	softnic_cq_attr bad_mode = { 4, 0x100 }, zero = { 0, 0 }, cc0 = { 0, SOFTNIC_CQ_COLLAPSED };
	softnic_cq *cq;

	REQUIRE(nic, "open");
	errno = 0;
	CHECK(!softnic_cq_create_ex(nic, &bad_mode) && errno == EINVAL, "unknown mode bit");
	CHECK(strstr(softnic_last_error(nic), "cq_create") != NULL, "text '%s'", softnic_last_error(nic));
	CHECK(!softnic_cq_create_ex(nic, &zero) && errno == EINVAL, "one entry without collapse");
	CHECK(!softnic_cq_create_ex(nic, NULL) && errno == EINVAL, "NULL attr");
	cq = softnic_cq_create_ex(nic, &cc0);
	CHECK(cq != NULL, "collapsed one-entry CQ");
	softnic_close(nic);
}

/* ------------------------------------------------------------------ */

static const tk_case cases[] = {
	TK_ENTRY(rdma_read_sizes),   TK_ENTRY(rdma_read_sges),
	TK_ENTRY(rdma_read_errors),  TK_ENTRY(compare_swap),
	TK_ENTRY(masked_atomics),    TK_ENTRY(atomic_errors),
	TK_ENTRY(atomics_two_qps),   TK_ENTRY(doorbell_before_record),
	TK_ENTRY(doorbell_before_record_racing), TK_ENTRY(doorbell_watch_expires),
	TK_ENTRY(cq_overrun_ignore), TK_ENTRY(cq_collapsed),
	TK_ENTRY(cq_initial_owner),  TK_ENTRY(queue_descriptors),
	TK_ENTRY(qp_rights),         TK_ENTRY(cq_api_errors),
};

int main(int argc, char **argv)
{
#ifdef TK_GPU_ENGINE
	tk_engine_setup();
#endif
	return tk_run_cases(argv[0], cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
