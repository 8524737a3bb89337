/*
 * tests/host/test_format.c - the mlx5 format layer against rdma-core.
 *
 * rdma-core's <infiniband/mlx5dv.h> is the format authority. This program
 * proves, byte for byte, that gic/mlx5_format.h and the WQE builders of
 * gic/post.h agree with it: struct sizes and field offsets, constants, the
 * bytes written by rdma-core's own inline setters (for many pseudo-random
 * inputs from a fixed-seed xorshift), CQE parsing, and whole WQEs in a small
 * send-queue ring, including one that wraps around its end.
 *
 * Exit status 0 when every check passed; each failure is printed with
 * file:line and the expected and actual values.
 */
#define _DEFAULT_SOURCE /* htobe*, clock_gettime under -std=c11 */

#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/mlx5dv.h>

#include "gic/mlx5_format.h"
#include "gic/post.h"

enum { ITERS = 20000 };

/* ------------------------------------------------------------------ */
/* Checks. Each returns 1 when it passed. */

static unsigned n_checks, n_failed;

static void dump(const char *label, const void *p, size_t n)
{
	const uint8_t *b = (const uint8_t *)p;

	fprintf(stderr, "  %-8s", label);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%s%02x", (i && i % 16 == 0) ? "\n           " : " ", b[i]);
	fputc('\n', stderr);
}

static int check_bytes(const char *file, int line, const char *what, const void *exp,
		       const void *act, size_t n)
{
	n_checks++;
	if (memcmp(exp, act, n) == 0)
		return 1;
	n_failed++;
	fprintf(stderr, "%s:%d: FAIL %s (%zu bytes)\n", file, line, what, n);
	dump("expected", exp, n);
	dump("actual", act, n);
	return 0;
}

static int check_u64(const char *file, int line, const char *what, uint64_t exp, uint64_t act)
{
	n_checks++;
	if (exp == act)
		return 1;
	n_failed++;
	fprintf(stderr, "%s:%d: FAIL %s\n", file, line, what);
	fprintf(stderr, "  expected 0x%llx\n  actual   0x%llx\n", (unsigned long long)exp,
		(unsigned long long)act);
	return 0;
}

#define CHECK_EQ_BYTES(exp, act, n) check_bytes(__FILE__, __LINE__, #act, (exp), (act), (n))
#define CHECK_EQ(exp, act) \
	check_u64(__FILE__, __LINE__, #act " == " #exp, (uint64_t)(exp), (uint64_t)(act))
#define CHECK(cond) check_u64(__FILE__, __LINE__, #cond, 1, (cond) ? 1 : 0)

/* Offset and size of field gf of our type gt equal those of mf of mt. */
#define CHECK_FIELD(gt, gf, mt, mf)                                               \
	do {                                                                      \
		CHECK_EQ(offsetof(mt, mf), offsetof(gt, gf));                     \
		CHECK_EQ(sizeof(((mt *)0)->mf), sizeof(((gt *)0)->gf));           \
	} while (0)

/* ------------------------------------------------------------------ */
/* Pseudo-random inputs. */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void fill(void *p, size_t n)
{
	uint8_t *b = (uint8_t *)p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

/* One time in three an edge value, otherwise random bits under mask. */
static uint64_t pick(const uint64_t *edges, size_t n, uint64_t mask)
{
	uint64_t r = rnd();

	if (r % 3 == 0)
		return edges[(r >> 8) % n];
	return rnd() & mask;
}

#define PICK(mask, ...) \
	pick((const uint64_t[]){__VA_ARGS__}, sizeof((const uint64_t[]){__VA_ARGS__}) / 8, (mask))

/* ------------------------------------------------------------------ */
/* Layout: sizes and offsets. */

static void test_layout_wqe(void)
{
	CHECK_EQ(sizeof(struct mlx5_wqe_ctrl_seg), sizeof(gic_ctrl_seg));
	CHECK_FIELD(gic_ctrl_seg, opmod_idx_opcode_be, struct mlx5_wqe_ctrl_seg, opmod_idx_opcode);
	CHECK_FIELD(gic_ctrl_seg, qpn_ds_be, struct mlx5_wqe_ctrl_seg, qpn_ds);
	CHECK_FIELD(gic_ctrl_seg, signature, struct mlx5_wqe_ctrl_seg, signature);
	CHECK_FIELD(gic_ctrl_seg, stream_id_be, struct mlx5_wqe_ctrl_seg, dci_stream_channel_id);
	CHECK_FIELD(gic_ctrl_seg, fm_ce_se, struct mlx5_wqe_ctrl_seg, fm_ce_se);
	CHECK_FIELD(gic_ctrl_seg, imm, struct mlx5_wqe_ctrl_seg, imm);
	CHECK_EQ(8, offsetof(gic_ctrl_seg, signature));
	CHECK_EQ(9, offsetof(gic_ctrl_seg, stream_id_be));
	CHECK_EQ(11, offsetof(gic_ctrl_seg, fm_ce_se));
	CHECK_EQ(12, offsetof(gic_ctrl_seg, imm));

	CHECK_EQ(sizeof(struct mlx5_wqe_raddr_seg), sizeof(gic_raddr_seg));
	CHECK_FIELD(gic_raddr_seg, raddr_be, struct mlx5_wqe_raddr_seg, raddr);
	CHECK_FIELD(gic_raddr_seg, rkey_be, struct mlx5_wqe_raddr_seg, rkey);
	CHECK_FIELD(gic_raddr_seg, reserved, struct mlx5_wqe_raddr_seg, reserved);

	CHECK_EQ(sizeof(struct mlx5_wqe_data_seg), sizeof(gic_data_seg));
	CHECK_FIELD(gic_data_seg, byte_count_be, struct mlx5_wqe_data_seg, byte_count);
	CHECK_FIELD(gic_data_seg, lkey_be, struct mlx5_wqe_data_seg, lkey);
	CHECK_FIELD(gic_data_seg, addr_be, struct mlx5_wqe_data_seg, addr);

	CHECK_EQ(sizeof(struct mlx5_wqe_atomic_seg), sizeof(gic_atomic_seg));
	CHECK_FIELD(gic_atomic_seg, swap_add_be, struct mlx5_wqe_atomic_seg, swap_add);
	CHECK_FIELD(gic_atomic_seg, compare_be, struct mlx5_wqe_atomic_seg, compare);

	CHECK_EQ(sizeof(struct mlx5_wqe_inl_data_seg), sizeof(gic_inline_hdr));
	CHECK_FIELD(gic_inline_hdr, byte_count_be, struct mlx5_wqe_inl_data_seg, byte_count);
}

static void test_layout_av(void)
{
	CHECK_EQ(sizeof(struct mlx5_wqe_av), sizeof(gic_av_seg));
	CHECK_EQ(sizeof(struct mlx5_wqe_datagram_seg), sizeof(gic_av_seg));
	CHECK_FIELD(gic_av_seg, dc_key_be, struct mlx5_wqe_av, key.dc_key);
	CHECK_FIELD(gic_av_seg, dqp_dct_be, struct mlx5_wqe_av, dqp_dct);
	CHECK_FIELD(gic_av_seg, stat_rate_sl, struct mlx5_wqe_av, stat_rate_sl);
	CHECK_FIELD(gic_av_seg, fl_mlid, struct mlx5_wqe_av, fl_mlid);
	CHECK_FIELD(gic_av_seg, rlid_be, struct mlx5_wqe_av, rlid);
	CHECK_FIELD(gic_av_seg, reserved0, struct mlx5_wqe_av, reserved0);
	CHECK_FIELD(gic_av_seg, rmac, struct mlx5_wqe_av, rmac);
	CHECK_FIELD(gic_av_seg, tclass, struct mlx5_wqe_av, tclass);
	CHECK_FIELD(gic_av_seg, hop_limit, struct mlx5_wqe_av, hop_limit);
	CHECK_FIELD(gic_av_seg, grh_gid_fl_be, struct mlx5_wqe_av, grh_gid_fl);
	CHECK_FIELD(gic_av_seg, rgid, struct mlx5_wqe_av, rgid);
}

static void test_layout_cqe(void)
{
	CHECK_EQ(sizeof(struct mlx5_cqe64), sizeof(gic_cqe64));
	CHECK_FIELD(gic_cqe64, srqn_uidx_be, struct mlx5_cqe64, srqn_uidx);
	CHECK_FIELD(gic_cqe64, imm_inval_pkey, struct mlx5_cqe64, imm_inval_pkey);
	CHECK_FIELD(gic_cqe64, app, struct mlx5_cqe64, app);
	CHECK_FIELD(gic_cqe64, app_op, struct mlx5_cqe64, app_op);
	CHECK_FIELD(gic_cqe64, app_info_be, struct mlx5_cqe64, app_info);
	CHECK_FIELD(gic_cqe64, byte_cnt_be, struct mlx5_cqe64, byte_cnt);
	CHECK_FIELD(gic_cqe64, timestamp_be, struct mlx5_cqe64, timestamp);
	CHECK_FIELD(gic_cqe64, sop_drop_qpn_be, struct mlx5_cqe64, sop_drop_qpn);
	CHECK_FIELD(gic_cqe64, wqe_counter_be, struct mlx5_cqe64, wqe_counter);
	CHECK_FIELD(gic_cqe64, signature, struct mlx5_cqe64, signature);
	CHECK_FIELD(gic_cqe64, op_own, struct mlx5_cqe64, op_own);

	CHECK_EQ(sizeof(struct mlx5_err_cqe), sizeof(gic_err_cqe));
	CHECK_FIELD(gic_err_cqe, rsvd0, struct mlx5_err_cqe, rsvd0);
	CHECK_FIELD(gic_err_cqe, srqn, struct mlx5_err_cqe, srqn);
	CHECK_FIELD(gic_err_cqe, rsvd1, struct mlx5_err_cqe, rsvd1);
	CHECK_FIELD(gic_err_cqe, vendor_err_synd, struct mlx5_err_cqe, vendor_err_synd);
	CHECK_FIELD(gic_err_cqe, syndrome, struct mlx5_err_cqe, syndrome);
	CHECK_FIELD(gic_err_cqe, s_wqe_opcode_qpn_be, struct mlx5_err_cqe, s_wqe_opcode_qpn);
	CHECK_FIELD(gic_err_cqe, wqe_counter_be, struct mlx5_err_cqe, wqe_counter);
	CHECK_FIELD(gic_err_cqe, signature, struct mlx5_err_cqe, signature);
	CHECK_FIELD(gic_err_cqe, op_own, struct mlx5_err_cqe, op_own);

	/* The tail the engine publishes with one 8-byte store. */
	CHECK_EQ(offsetof(struct mlx5_cqe64, sop_drop_qpn), GIC_CQE_TAIL_OFFSET);
	CHECK_EQ(sizeof(struct mlx5_cqe64) - 8, GIC_CQE_TAIL_OFFSET);
	CHECK_EQ(sizeof(struct mlx5_cqe64), GIC_CQE_SIZE);
}

/* ------------------------------------------------------------------ */
/* Constants. */

static void test_constants_wqe(void)
{
	CHECK_EQ(MLX5_OPCODE_NOP, GIC_OPCODE_NOP);
	CHECK_EQ(MLX5_OPCODE_RDMA_WRITE, GIC_OPCODE_RDMA_WRITE);
	CHECK_EQ(MLX5_OPCODE_RDMA_WRITE_IMM, GIC_OPCODE_RDMA_WRITE_IMM);
	CHECK_EQ(MLX5_OPCODE_ATOMIC_FA, GIC_OPCODE_ATOMIC_FA);
	CHECK_EQ(MLX5_WQE_CTRL_SOLICITED, GIC_CTRL_SOLICITED);
	CHECK_EQ(MLX5_WQE_CTRL_CQ_UPDATE, GIC_CTRL_CQ_UPDATE);
	CHECK_EQ(MLX5_WQE_CTRL_FENCE, GIC_CTRL_FENCE);
	CHECK_EQ(MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE, GIC_CTRL_INITIATOR_SMALL_FENCE);
	CHECK_EQ((uint32_t)MLX5_INLINE_SEG, GIC_INLINE_SEG);
	CHECK_EQ((uint32_t)MLX5_EXTENDED_UD_AV, GIC_EXTENDED_UD_AV);
	/* DUMP: rdma-core 44's mlx5dv.h lacks it; checked where a header has it. */
#ifdef MLX5_OPCODE_DUMP
	CHECK_EQ(MLX5_OPCODE_DUMP, GIC_OPCODE_DUMP);
#endif
	CHECK_EQ(0x23, GIC_OPCODE_DUMP);
	/* A DC WQE's ds counts its AV: 3 segments full, 1 compact (the part
	 * of mlx5_wqe_av before reserved0, which the compact form stops at). */
	CHECK_EQ(sizeof(struct mlx5_wqe_av) / sizeof(struct mlx5_wqe_data_seg), GIC_AV_FULL_DS);
	CHECK_EQ(offsetof(struct mlx5_wqe_av, reserved0) / sizeof(struct mlx5_wqe_data_seg),
		 GIC_AV_COMPACT_DS);
	CHECK_EQ(MLX5_SEND_WQE_BB, GIC_SEND_WQE_BB);
	CHECK_EQ(MLX5_SEND_WQE_SHIFT, GIC_SEND_WQE_SHIFT);
	CHECK_EQ(1u << MLX5_SEND_WQE_SHIFT, GIC_SEND_WQE_BB);
	CHECK_EQ(sizeof(struct mlx5_wqe_data_seg), GIC_SEG_SIZE);
	CHECK_EQ(MLX5_SEND_WQE_BB / sizeof(struct mlx5_wqe_data_seg), GIC_SEGS_PER_BB);
	CHECK_EQ(63, GIC_WQE_MAX_DS); /* qpn_ds holds ds in its low 6 bits */
	CHECK_EQ(16, GIC_WQE_MAX_BB);
}

static void test_constants_cqe(void)
{
	CHECK_EQ(MLX5_CQE_REQ, GIC_CQE_REQ);
	CHECK_EQ(MLX5_CQE_RESP_WR_IMM, GIC_CQE_RESP_WR_IMM);
	CHECK_EQ(MLX5_CQE_REQ_ERR, GIC_CQE_REQ_ERR);
	CHECK_EQ(MLX5_CQE_RESP_ERR, GIC_CQE_RESP_ERR);
	CHECK_EQ(MLX5_CQE_INVALID, GIC_CQE_INVALID);
	CHECK_EQ(MLX5_CQE_OWNER_MASK, GIC_CQE_OWNER_MASK);
	CHECK_EQ(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR, GIC_SYND_LOCAL_LENGTH_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, GIC_SYND_LOCAL_QP_OP_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, GIC_SYND_LOCAL_PROT_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_WR_FLUSH_ERR, GIC_SYND_WR_FLUSH_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_MW_BIND_ERR, GIC_SYND_MW_BIND_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_BAD_RESP_ERR, GIC_SYND_BAD_RESP_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR, GIC_SYND_LOCAL_ACCESS_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR, GIC_SYND_REMOTE_INVAL_REQ_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, GIC_SYND_REMOTE_ACCESS_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_REMOTE_OP_ERR, GIC_SYND_REMOTE_OP_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR, GIC_SYND_TRANSPORT_RETRY_EXC_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR, GIC_SYND_RNR_RETRY_EXC_ERR);
	CHECK_EQ(MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR, GIC_SYND_REMOTE_ABORTED_ERR);
}

/* ------------------------------------------------------------------ */
/* Byte order. */

static int bswap_one(void)
{
	uint64_t v = PICK(~0ull, 0, ~0ull, 0x0102030405060708ull, 0x80, 0x8000000000000000ull);
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	return CHECK_EQ(htobe16(v16), gic_bswap16(v16)) &
	       CHECK_EQ(htobe32(v32), gic_bswap32(v32)) &
	       CHECK_EQ(htobe64(v), gic_bswap64(v)) &
	       CHECK_EQ(htobe16(v16), gic_htobe16(v16)) &
	       CHECK_EQ(htobe32(v32), gic_htobe32(v32)) &
	       CHECK_EQ(htobe64(v), gic_htobe64(v)) &
	       CHECK_EQ(be16toh(v16), gic_be16toh(v16)) &
	       CHECK_EQ(be32toh(v32), gic_be32toh(v32)) &
	       CHECK_EQ(be64toh(v), gic_be64toh(v));
}

/* ------------------------------------------------------------------ */
/* Segment builders against rdma-core's setters. */

static int ctrl_one(unsigned i)
{
	uint16_t idx = (uint16_t)PICK(0xffff, 0, 1, 0xff, 0x100, 0x8000, 0xfffe, 0xffff);
	uint8_t op = (uint8_t)PICK(0xff, GIC_OPCODE_NOP, GIC_OPCODE_RDMA_WRITE,
				   GIC_OPCODE_RDMA_WRITE_IMM, GIC_OPCODE_ATOMIC_FA, 0xff);
	uint8_t opmod = (uint8_t)PICK(0xff, 0, 1, 0x80, 0xff);
	uint32_t qpn = (uint32_t)PICK(0xffffff, 0, 1, 0x123, 0x800000, 0xffffff, 0xffffffff);
	uint8_t fm = (uint8_t)PICK(0xff, 0, GIC_CTRL_CQ_UPDATE, GIC_CTRL_SOLICITED,
				   GIC_CTRL_FENCE, GIC_CTRL_INITIATOR_SMALL_FENCE,
				   GIC_CTRL_CQ_UPDATE | GIC_CTRL_SOLICITED | GIC_CTRL_FENCE, 0xff);
	uint8_t ds = (uint8_t)(i & 63);
	uint32_t imm = (uint32_t)PICK(0xffffffff, 0, 0xffffffff, 0x12345678);
	struct mlx5_wqe_ctrl_seg theirs;
	uint8_t ours[16];
	gic_ctrl_seg c;

	fill(ours, sizeof ours);
	memset(&theirs, 0, sizeof theirs);
	mlx5dv_set_ctrl_seg(&theirs, idx, op, opmod, qpn, fm, ds, 0, imm);
	c = gic_make_ctrl_seg(idx, op, opmod, qpn, fm, ds, imm);
	memcpy(ours, &c, sizeof c);
	if (CHECK_EQ_BYTES(&theirs, ours, 16))
		return 1;
	fprintf(stderr, "  idx 0x%x op 0x%x opmod 0x%x qpn 0x%x fm 0x%x ds %u imm 0x%x\n",
		idx, op, opmod, qpn, fm, ds, imm);
	return 0;
}

static int data_one(void)
{
	uint32_t len = (uint32_t)PICK(0xffffffff, 0, 1, 8, 0x80000000, 0xffffffff);
	uint32_t lkey = (uint32_t)PICK(0xffffffff, 0, 0x100, 0xffffffff);
	uint64_t addr = PICK(~0ull, 0, 1, 0x00007fffdeadbeefull, ~0ull);
	struct mlx5_wqe_data_seg theirs;
	gic_data_seg d;
	uint8_t ours[16];

	fill(ours, sizeof ours);
	memcpy(&theirs, ours, sizeof theirs);
	mlx5dv_set_data_seg(&theirs, len, lkey, (uintptr_t)addr);
	d = gic_make_data_seg(len, lkey, addr);
	memcpy(ours, &d, sizeof d);
	return CHECK_EQ_BYTES(&theirs, ours, 16);
}

static int raddr_atomic_one(void)
{
	uint64_t raddr = PICK(~0ull, 0, ~0ull, 0x0000100000000008ull);
	uint32_t rkey = (uint32_t)PICK(0xffffffff, 0, 0xffffffff, 0x00abcd01);
	uint64_t add = PICK(~0ull, 0, 1, ~0ull, 0x8000000000000000ull);
	struct mlx5_wqe_raddr_seg r;
	struct mlx5_wqe_atomic_seg a;
	gic_raddr_seg gr = gic_make_raddr_seg(raddr, rkey);
	gic_atomic_seg ga = gic_make_atomic_fa_seg(add);
	uint32_t hdr = gic_inline_hdr_be(rkey & 0x3ff);

	fill(&r, sizeof r);
	fill(&a, sizeof a);
	r.raddr = htobe64(raddr);
	r.rkey = htobe32(rkey);
	r.reserved = 0;
	a.swap_add = htobe64(add);
	a.compare = 0;
	return CHECK_EQ_BYTES(&r, &gr, 16) & CHECK_EQ_BYTES(&a, &ga, 16) &
	       CHECK_EQ(htobe32((rkey & 0x3ff) | MLX5_INLINE_SEG), hdr);
}

static int av_one(void)
{
	uint64_t key = PICK(~0ull, 0, ~0ull, 0x0123456789abcdefull);
	uint32_t dct = (uint32_t)PICK(0xffffff, 0, 1, 0xffffff);
	uint8_t sl = (uint8_t)PICK(0xff, 0, 0x0f, 0xff);
	uint16_t rlid = (uint16_t)PICK(0xffff, 0, 0xffff);
	uint8_t tclass = (uint8_t)rnd(), hop = (uint8_t)rnd();
	uint32_t grh = (uint32_t)rnd();
	uint8_t rmac[6], rgid[16], before[48], ours[48];
	struct mlx5_wqe_datagram_seg theirs;
	gic_av_seg av;

	fill(rmac, sizeof rmac);
	fill(rgid, sizeof rgid);
	fill(before, sizeof before);
	memcpy(&theirs, before, sizeof theirs);
	memcpy(&av, before, sizeof av);
	mlx5dv_set_dgram_seg(&theirs, key, dct, 0, sl, 0, rlid, rmac, tclass, hop, grh, rgid);
	gic_set_av_compact(&av, key, dct, sl, rlid);
	memcpy(ours, &av, sizeof ours);
	/* The compact form: the first 16 bytes, and nothing past them. */
	return CHECK_EQ_BYTES(&theirs, ours, 16) & CHECK_EQ_BYTES(before + 16, ours + 16, 32);
}

/* gic_set_av_full writes what mlx5dv_set_dgram_seg(..., ext 1, ...) does,
 * every one of the 48 bytes but reserved0, which neither touches. */
static int av_full_one(void)
{
	uint64_t key = PICK(~0ull, 0, ~0ull, 0x0123456789abcdefull);
	uint32_t dct = (uint32_t)PICK(0xffffff, 0, 1, 0xffffff);
	uint8_t sl = (uint8_t)rnd(), tclass = (uint8_t)rnd(), hop = (uint8_t)rnd();
	uint16_t rlid = (uint16_t)rnd();
	uint32_t grh = (uint32_t)rnd();
	uint8_t rmac[6], rgid[16], before[48];
	struct mlx5_wqe_datagram_seg theirs;
	gic_av_seg av;

	fill(rmac, sizeof rmac);
	fill(rgid, sizeof rgid);
	fill(before, sizeof before);
	memcpy(&theirs, before, sizeof theirs);
	memcpy(&av, before, sizeof av);
	mlx5dv_set_dgram_seg(&theirs, key, dct, 1, sl, 0, rlid, rmac, tclass, hop, grh, rgid);
	gic_set_av_full(&av, key, dct, sl, rlid, rmac, tclass, hop, grh, rgid);
	return CHECK_EQ_BYTES(&theirs, &av, 48) &
	       CHECK_EQ(gic_htobe32(GIC_EXTENDED_UD_AV | dct), av.dqp_dct_be);
}

/* gic_doorbell_value(qpn, upto) is the first 8 bytes of a ctrl segment. */
static int doorbell_one(void)
{
	uint32_t qpn = (uint32_t)PICK(0xffffff, 0, 1, 0x123, 0xffffff);
	uint64_t upto = PICK(~0ull, 0, 0xffff, 0x10000, 0x1fffe, ~0ull);
	struct mlx5_wqe_ctrl_seg c;
	uint64_t db = gic_doorbell_value(qpn, upto);

	memset(&c, 0, sizeof c);
	mlx5dv_set_ctrl_seg(&c, (uint16_t)(upto & 0xffff), 0, 0, qpn, 0, 0, 0, 0);
	return CHECK_EQ_BYTES(&c, &db, 8);
}

static void test_random(void)
{
	unsigned i;

	for (i = 0; i < ITERS; i++) {
		/* One statement each: the draws from rnd() stay in a fixed order. */
		int ok = bswap_one();

		ok &= ctrl_one(i);
		ok &= data_one();
		ok &= raddr_atomic_one();
		ok &= av_one();
		ok &= av_full_one();
		ok &= doorbell_one();
		if (!ok) {
			fprintf(stderr, "  (random iteration %u; stopping this loop)\n", i);
			return;
		}
	}
}

/* ------------------------------------------------------------------ */
/* CQE parsing. */

typedef union {
	struct mlx5_cqe64 c;
	struct mlx5_err_cqe e;
	gic_cqe64 g;
	uint8_t b[64];
} cqe_buf;

static uint64_t load_tail(const cqe_buf *u)
{
	uint64_t tail;

	memcpy(&tail, u->b + GIC_CQE_TAIL_OFFSET, sizeof tail);
	return tail;
}

static int cqe_tail_checks(cqe_buf *u, uint8_t op, uint8_t owner, uint16_t wc, uint32_t qpn,
			   uint8_t wop)
{
	uint64_t tail = load_tail(u);

	return CHECK_EQ(op, gic_cqe_tail_opcode(tail)) &
	       CHECK_EQ(owner, gic_cqe_tail_owner(tail)) &
	       CHECK_EQ(mlx5dv_get_cqe_opcode(&u->c), gic_cqe_tail_opcode(tail)) &
	       CHECK_EQ(mlx5dv_get_cqe_owner(&u->c), gic_cqe_tail_owner(tail)) &
	       CHECK_EQ(u->c.op_own, gic_cqe_tail_op_own(tail)) &
	       CHECK_EQ(wc, gic_cqe_tail_wqe_counter(tail)) &
	       CHECK_EQ(qpn, gic_cqe_tail_qpn(tail)) &
	       CHECK_EQ(wop, gic_cqe_tail_wqe_opcode(tail));
}

static int cqe_one(void)
{
	uint8_t op = (uint8_t)PICK(0xf, GIC_CQE_REQ, GIC_CQE_RESP_WR_IMM, GIC_CQE_REQ_ERR,
				   GIC_CQE_RESP_ERR, GIC_CQE_INVALID);
	uint8_t owner = rnd() & 1, mid = (uint8_t)(rnd() & 0xe); /* se, format bits */
	uint16_t wc = (uint16_t)PICK(0xffff, 0, 0xffff, 0x8000);
	uint32_t qpn = (uint32_t)PICK(0xffffff, 0, 1, 0xffffff);
	uint8_t wop = (uint8_t)PICK(0xff, GIC_OPCODE_NOP, GIC_OPCODE_RDMA_WRITE, 0xff);
	uint32_t bc = (uint32_t)rnd(), imm = (uint32_t)rnd();
	uint8_t synd = (uint8_t)rnd(), vsynd = (uint8_t)rnd();
	int is_err = op == GIC_CQE_REQ_ERR || op == GIC_CQE_RESP_ERR;
	gic_cqe_info info;
	cqe_buf u;

	fill(&u, sizeof u);
	u.c.byte_cnt = htobe32(bc);
	u.c.imm_inval_pkey = imm;
	u.c.wqe_counter = htobe16(wc);
	u.c.sop_drop_qpn = htobe32((uint32_t)wop << 24 | qpn);
	u.c.op_own = (uint8_t)(op << 4 | mid | owner);
	if (is_err) {
		u.e.syndrome = synd;
		u.e.vendor_err_synd = vsynd;
	}
	gic_cqe_parse(&u.g, load_tail(&u), &info);
	return cqe_tail_checks(&u, op, owner, wc, qpn, wop) & CHECK_EQ(op, info.cqe_opcode) &
	       CHECK_EQ(wc, info.wqe_counter) & CHECK_EQ(qpn, info.qpn) &
	       CHECK_EQ(wop, info.wqe_opcode) & CHECK_EQ(bc, info.byte_cnt) &
	       CHECK_EQ(imm, info.imm) & CHECK_EQ(is_err ? synd : 0, info.syndrome) &
	       CHECK_EQ(is_err ? vsynd : 0, info.vendor_syndrome);
}

static void test_cqe_random(void)
{
	for (unsigned i = 0; i < ITERS; i++) {
		if (!cqe_one()) {
			fprintf(stderr, "  (CQE iteration %u; stopping this loop)\n", i);
			return;
		}
	}
}

/* Tail of a CQE with only op_own set, as a poller loads it. */
static uint64_t tail_of(uint8_t op_own)
{
	cqe_buf u;

	memset(&u, 0, sizeof u);
	u.c.op_own = op_own;
	return load_tail(&u);
}

/* Owner protocol on a CQ of 64 entries: software owns slot ci when the
 * opcode is valid and the owner bit equals the pass number's parity. */
static void test_cqe_ownership(void)
{
	static const struct { uint8_t op_own; uint32_t ci; int owned; } t[] = {
		{ 0x00, 0, 1 },  { 0x01, 0, 0 },  { 0x00, 63, 1 }, { 0x01, 63, 0 },
		{ 0x01, 64, 1 }, { 0x00, 64, 0 }, { 0x01, 127, 1 }, { 0x00, 127, 0 },
		{ 0x00, 128, 1 }, { 0xd1, 65, 1 }, { 0xd0, 65, 0 }, { 0x1e, 5, 1 },
		{ 0xf0, 0, 0 },  { 0xf1, 64, 0 }, { 0xf0, 128, 0 }, { 0xf1, 0xffffffc0u, 0 },
		{ 0x01, 0xffffffc0u, 1 }, { 0x00, 0xffffffffu, 0 },
	};

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (!CHECK_EQ(t[i].owned, gic_cqe_sw_owned(tail_of(t[i].op_own), t[i].ci, 64)))
			fprintf(stderr, "  op_own 0x%02x ci %u\n", t[i].op_own, t[i].ci);
}

/* gic_make_op_own(op, pi, 64): the opcode, and the owner bit that makes the
 * CQE software-owned at ci == pi and not one pass earlier or later. */
static void test_make_op_own(void)
{
	for (uint32_t pi = 0; pi < 512; pi += 7) {
		for (uint8_t op = 0; op < 16; op++) {
			uint8_t oo = gic_make_op_own(op, pi, 64);
			uint64_t tail = tail_of(oo);

			CHECK_EQ((uint32_t)op << 4 | ((pi / 64) % 2), oo);
			CHECK_EQ(op != GIC_CQE_INVALID, gic_cqe_sw_owned(tail, pi, 64));
			CHECK_EQ(0, gic_cqe_sw_owned(tail, pi + 64, 64));
		}
	}
}

/* ------------------------------------------------------------------ */
/* Segment counts. */

static void test_counts(void)
{
	static const uint32_t qpns[] = { 0, 0x123, 0xffffff };

	for (uint32_t len = 0; len <= 1000; len++)
		CHECK_EQ(2 + (4 + len) / 16 + ((4 + len) % 16 != 0), gic_ds_inline_write(len));
	for (uint32_t ds = 0; ds < 256; ds++) {
		uint32_t nbb = ds / 4 + (ds % 4 != 0);

		CHECK_EQ(nbb, gic_bb_for_ds(ds));
		for (size_t q = 0; q < 3; q++)
			CHECK_EQ((ds == 0 || ds > 63) ? 1 : nbb,
				 gic_wqe_bb_count(htobe32(qpns[q] << 8 | ds)));
	}
}

/* ------------------------------------------------------------------ */
/* Whole WQEs in a 4-BB ring, against rdma-core's setters. */

enum { RING_BB = 4, FILL = 0xa5, QPN = 0x123 };

static uint8_t ring[RING_BB * 64] __attribute__((aligned(64)));

static gic_sq ring_sq(void)
{
	gic_sq sq;

	memset(&sq, 0, sizeof sq);
	memset(ring, FILL, sizeof ring);
	sq.wqes = ring;
	sq.bb_cnt = RING_BB;
	sq.qpn = QPN;
	sq.max_inline = 128;
	return sq;
}

static void put_ctrl(uint8_t *dst, uint16_t pi, uint8_t op, uint8_t fm, uint8_t ds, uint32_t imm)
{
	struct mlx5_wqe_ctrl_seg c;

	memset(&c, 0, sizeof c);
	mlx5dv_set_ctrl_seg(&c, pi, op, 0, QPN, fm, ds, 0, imm);
	memcpy(dst, &c, sizeof c);
}

static void put_raddr(uint8_t *dst, uint64_t raddr, uint32_t rkey)
{
	struct mlx5_wqe_raddr_seg r;

	r.raddr = htobe64(raddr);
	r.rkey = htobe32(rkey);
	r.reserved = 0;
	memcpy(dst, &r, sizeof r);
}

static void put_data(uint8_t *dst, uint32_t len, uint32_t lkey, uint64_t addr)
{
	struct mlx5_wqe_data_seg d;

	mlx5dv_set_data_seg(&d, len, lkey, (uintptr_t)addr);
	memcpy(dst, &d, sizeof d);
}

/* Inline header, payload, zero padding to the next 16-byte boundary. */
static void put_inline(uint8_t *dst, const void *src, uint32_t len)
{
	struct mlx5_wqe_inl_data_seg h;
	size_t total = (sizeof h + len + 15) / 16 * 16;

	h.byte_count = htobe32(len | MLX5_INLINE_SEG);
	memset(dst, 0, total);
	memcpy(dst, &h, sizeof h);
	memcpy(dst + sizeof h, src, len);
}

static const uint8_t *bb(unsigned i)
{
	return ring + (i % RING_BB) * 64;
}

/* Every BB but those in [first, first + n) (mod the ring) is untouched. */
static void check_untouched(unsigned first, unsigned n)
{
	uint8_t blank[64];

	memset(blank, FILL, sizeof blank);
	for (unsigned i = n; i < RING_BB; i++)
		if (!CHECK_EQ_BYTES(blank, bb(first + i), 64))
			fprintf(stderr, "  BB %u was written\n", (first + i) % RING_BB);
}

static void test_wqe_inline_small(uint64_t pos, uint16_t idx)
{
	gic_sq sq = ring_sq();
	uint8_t exp[64], payload[8];
	uint64_t raddr = rnd();
	uint32_t rkey = (uint32_t)rnd();

	fill(payload, sizeof payload);
	memset(exp, FILL, sizeof exp);
	put_ctrl(exp, idx, MLX5_OPCODE_RDMA_WRITE, MLX5_WQE_CTRL_CQ_UPDATE, 3, 0);
	put_raddr(exp + 16, raddr, rkey);
	put_inline(exp + 32, payload, sizeof payload);
	CHECK_EQ(1, gic_wqe_write_inline(&sq, pos, raddr, rkey, payload, sizeof payload,
					 GIC_CTRL_CQ_UPDATE));
	CHECK_EQ_BYTES(exp, bb(3), 64);
	check_untouched(3, 1);
}

/* 100 inline bytes at BB 3: ds 9, three BBs: 3, then 0 and 1 after the wrap. */
static void test_wqe_inline_wrap(void)
{
	gic_sq sq = ring_sq();
	uint8_t exp[3 * 64], payload[100];
	uint64_t raddr = rnd();
	uint32_t rkey = (uint32_t)rnd();

	fill(payload, sizeof payload);
	memset(exp, FILL, sizeof exp);
	put_ctrl(exp, 3, MLX5_OPCODE_RDMA_WRITE, 0, 9, 0);
	put_raddr(exp + 16, raddr, rkey);
	put_inline(exp + 32, payload, sizeof payload);
	CHECK_EQ(3, gic_wqe_write_inline(&sq, 3, raddr, rkey, payload, sizeof payload, 0));
	CHECK_EQ_BYTES(exp, bb(3), 64);
	CHECK_EQ_BYTES(exp + 64, bb(0), 64);
	CHECK_EQ_BYTES(exp + 128, bb(1), 64);
	check_untouched(3, 3);
}

/* The register-payload inline builder, every length that fits the ring (0
 * to 220 bytes: up to four BBs) at every start slot (so every way of
 * wrapping) and at positions past 2^32: the bytes of rdma-core's ctrl and
 * raddr setters and mlx5_wqe_inl_data_seg with the payload, zero padding,
 * the bytes of the memory builder, BB count, no other BB touched; chunk
 * bytes past len (filled with garbage here) are ignored. */
static void test_wqe_inline_regs(void)
{
	static const uint64_t base[] = { 0, (1ull << 32), (1ull << 40) + 0xfff0 };

	for (uint32_t len = 0; len <= 220; len++) {
		for (unsigned b = 0; b < sizeof base / sizeof base[0]; b++) {
			for (unsigned first = 0; first < RING_BB; first++) {
				gic_sq sq = ring_sq();
				uint64_t pos = base[b] + first, raddr = rnd();
				uint32_t rkey = (uint32_t)rnd(), ds = 2 + (4 + len + 15) / 16;
				uint32_t nbb = (ds + 3) / 4;
				uint8_t exp[RING_BB * 64], mem[RING_BB * 64], payload[224];
				gic_inl16 p[14];
				uint8_t fm = len & 1 ? GIC_CTRL_CQ_UPDATE : 0;

				fill(p, sizeof p); /* garbage past len */
				memcpy(payload, p, len);
				memset(exp, FILL, sizeof exp);
				put_ctrl(exp, (uint16_t)pos, MLX5_OPCODE_RDMA_WRITE, fm, (uint8_t)ds, 0);
				put_raddr(exp + 16, raddr, rkey);
				put_inline(exp + 32, payload, len);
				CHECK_EQ(nbb, gic_wqe_write_inline_regs(&sq, pos, raddr, rkey, p, len,
									 fm));
				for (unsigned i = 0; i < nbb; i++)
					if (!CHECK_EQ_BYTES(exp + 64 * i, bb(first + i), 64))
						fprintf(stderr, "  len %u slot %u BB %u\n", len, first, i);
				check_untouched(first, nbb);
				memcpy(mem, ring, sizeof mem);
				sq = ring_sq();
				CHECK_EQ(nbb, gic_wqe_write_inline(&sq, pos, raddr, rkey, payload, len, fm));
				CHECK_EQ_BYTES(mem, ring, sizeof mem);
			}
		}
	}
}

static void test_wqe_write(void)
{
	gic_sq sq = ring_sq();
	uint8_t exp[64];
	uint64_t raddr = rnd(), laddr = rnd();
	uint32_t rkey = (uint32_t)rnd(), lkey = (uint32_t)rnd(), len = (uint32_t)rnd();
	uint32_t imm = (uint32_t)rnd();
	uint8_t fm = GIC_CTRL_CQ_UPDATE | GIC_CTRL_SOLICITED;

	memset(exp, FILL, sizeof exp);
	put_ctrl(exp, 1, MLX5_OPCODE_RDMA_WRITE_IMM, fm, 3, imm);
	put_raddr(exp + 16, raddr, rkey);
	put_data(exp + 32, len, lkey, laddr);
	CHECK_EQ(1, gic_wqe_write(&sq, 1, GIC_OPCODE_RDMA_WRITE_IMM, raddr, rkey, laddr, lkey,
				  len, fm, imm));
	CHECK_EQ_BYTES(exp, bb(1), 64);
	check_untouched(1, 1);
}

static void test_wqe_atomic_fa(void)
{
	gic_sq sq = ring_sq();
	uint8_t exp[64];
	uint64_t raddr = rnd() & ~7ull, laddr = rnd() & ~7ull, add = rnd();
	uint32_t rkey = (uint32_t)rnd(), lkey = (uint32_t)rnd();
	struct mlx5_wqe_atomic_seg a;

	a.swap_add = htobe64(add);
	a.compare = 0;
	put_ctrl(exp, 2, MLX5_OPCODE_ATOMIC_FA, MLX5_WQE_CTRL_CQ_UPDATE, 4, 0);
	put_raddr(exp + 16, raddr, rkey);
	memcpy(exp + 32, &a, sizeof a);
	put_data(exp + 48, 8, lkey, laddr);
	CHECK_EQ(1, gic_wqe_atomic_fa(&sq, 2, raddr, rkey, add, laddr, lkey, GIC_CTRL_CQ_UPDATE));
	CHECK_EQ_BYTES(exp, bb(2), 64);
	check_untouched(2, 1);
}

static void test_wqe_nop(void)
{
	gic_sq sq = ring_sq();
	uint8_t exp[64];

	memset(exp, FILL, sizeof exp);
	put_ctrl(exp, 0xfffc, MLX5_OPCODE_NOP, MLX5_WQE_CTRL_CQ_UPDATE, 1, 0);
	/* Position 0xfffc: slot 0 of the ring, WQE index 0xfffc. */
	CHECK_EQ(1, gic_wqe_nop(&sq, 0xfffc, GIC_CTRL_CQ_UPDATE));
	CHECK_EQ_BYTES(exp, bb(0), 64);
	check_untouched(0, 1);
}

/* One-BB builders address their BB once (gic_sq_slot): at the ring's last
 * slot and at positions past 2^32 each lands in slot pos % RING_BB, with
 * the WQE index of pos, and touches no other BB; the 8-byte inline builder
 * writes the bytes of the general inline builder. */
static void test_one_bb_slots(void)
{
	static const uint64_t pos[] = { RING_BB - 1, (1ull << 32) + RING_BB - 1, (1ull << 40) + 6 };

	for (unsigned i = 0; i < sizeof pos / sizeof pos[0]; i++) {
		gic_sq sq = ring_sq();
		unsigned slot = (unsigned)(pos[i] % RING_BB);
		uint64_t raddr = rnd(), laddr = rnd(), value = rnd();
		uint32_t rkey = (uint32_t)rnd(), lkey = (uint32_t)rnd();
		uint8_t exp[64];

		CHECK_EQ(1, gic_wqe_write_inline(&sq, pos[i], raddr, rkey, &value, 8, 0));
		memcpy(exp, bb(slot), 64);
		sq = ring_sq();
		CHECK_EQ(1, gic_wqe_write_inline_u64(&sq, pos[i], raddr, rkey, value, 0));
		CHECK_EQ_BYTES(exp, bb(slot), 64);
		check_untouched(slot, 1);

		sq = ring_sq();
		memset(exp, FILL, sizeof exp);
		put_ctrl(exp, (uint16_t)pos[i], MLX5_OPCODE_RDMA_WRITE, 0, 3, 0);
		put_raddr(exp + 16, raddr, rkey);
		put_data(exp + 32, 64, lkey, laddr);
		CHECK_EQ(1, gic_wqe_write(&sq, pos[i], GIC_OPCODE_RDMA_WRITE, raddr, rkey, laddr,
					  lkey, 64, 0, 0));
		CHECK_EQ_BYTES(exp, bb(slot), 64);
		check_untouched(slot, 1);
	}
}

/* The DC 8-byte inline writes against rdma-core's setters: ctrl
 * (mlx5dv_set_ctrl_seg, ds 4 or 6), the AV (mlx5dv_set_dgram_seg: the
 * compact form is its first 16 bytes, written with the extended bit clear;
 * the full form all 48 with it set), the remote address, the inline
 * header and value. Our WQE is built from our own AV setters and the
 * builders; the compact one at every slot and past 2^32 (one BB, no other
 * touched), the full one at every slot, so from the ring's last slot it
 * wraps (two BBs, the second's last 32 bytes and every other BB
 * untouched). */
static void test_wqe_dc_inline(void)
{
	static const uint64_t base[] = { 0, (1ull << 32), (1ull << 40) + 0xfff0 };

	for (unsigned b = 0; b < sizeof base / sizeof base[0]; b++) {
		for (unsigned first = 0; first < RING_BB; first++) {
			uint64_t pos = base[b] + first, raddr = rnd(), value = rnd();
			uint64_t key = rnd();
			uint32_t rkey = (uint32_t)rnd(), dct = (uint32_t)rnd() & 0xffffff;
			uint8_t sl = (uint8_t)rnd() & 0x0f, tclass = (uint8_t)rnd();
			uint8_t hop = (uint8_t)rnd(), fm = first & 1 ? GIC_CTRL_CQ_UPDATE : 0;
			uint16_t rlid = (uint16_t)rnd();
			uint32_t grh = (uint32_t)rnd();
			uint8_t rmac[6], rgid[16], exp[128], blank[32];
			struct mlx5_wqe_datagram_seg theirs;
			gic_av_seg av;
			gic_sq sq;

			fill(rmac, sizeof rmac);
			fill(rgid, sizeof rgid);
			memset(blank, FILL, sizeof blank);

			/* Compact: 64 bytes, one BB. */
			memset(&theirs, 0, sizeof theirs);
			mlx5dv_set_dgram_seg(&theirs, key, dct, 0, sl, 0, rlid, rmac, tclass, hop, grh,
					     rgid);
			memset(exp, FILL, sizeof exp);
			put_ctrl(exp, (uint16_t)pos, MLX5_OPCODE_RDMA_WRITE, fm, 4, 0);
			memcpy(exp + 16, &theirs, 16);
			put_raddr(exp + 32, raddr, rkey);
			put_inline(exp + 48, &value, 8);
			memset(&av, 0x5a, sizeof av); /* bytes past the compact 16: not read */
			gic_set_av_compact(&av, key, dct, sl, rlid);
			sq = ring_sq();
			CHECK_EQ(1, gic_wqe_dc_write_inline_u64(&sq, pos, &av, raddr, rkey, value, fm));
			if (!CHECK_EQ_BYTES(exp, bb(first), 64))
				fprintf(stderr, "  dc compact: slot %u pos %llx\n", first,
					(unsigned long long)pos);
			CHECK_EQ(0, be32toh(((const struct mlx5_wqe_av *)(bb(first) + 16))->dqp_dct) &
					    MLX5_EXTENDED_UD_AV);
			check_untouched(first, 1);

			/* Full: 96 bytes, two BBs. */
			memset(&theirs, 0, sizeof theirs);
			mlx5dv_set_dgram_seg(&theirs, key, dct, 1, sl, 0, rlid, rmac, tclass, hop, grh,
					     rgid);
			memset(exp, FILL, sizeof exp);
			put_ctrl(exp, (uint16_t)pos, MLX5_OPCODE_RDMA_WRITE, fm, 6, 0);
			memcpy(exp + 16, &theirs, 48);
			put_raddr(exp + 64, raddr, rkey);
			put_inline(exp + 80, &value, 8);
			memset(&av, 0, sizeof av); /* reserved0: neither setter writes it */
			gic_set_av_full(&av, key, dct, sl, rlid, rmac, tclass, hop, grh, rgid);
			sq = ring_sq();
			CHECK_EQ(2, gic_wqe_dc_write_inline_u64_full(&sq, pos, &av, raddr, rkey, value,
								     fm));
			if (!CHECK_EQ_BYTES(exp, bb(first), 64) ||
			    !CHECK_EQ_BYTES(exp + 64, bb(first + 1), 32))
				fprintf(stderr, "  dc full: slot %u pos %llx\n", first,
					(unsigned long long)pos);
			CHECK_EQ(MLX5_EXTENDED_UD_AV,
				 be32toh(((const struct mlx5_wqe_av *)(bb(first) + 16))->dqp_dct) &
					 MLX5_EXTENDED_UD_AV);
			CHECK_EQ_BYTES(blank, bb(first + 1) + 32, 32);
			check_untouched(first, 2);
			CHECK_EQ(GIC_AV_FULL_DS, GIC_AV_COMPACT_DS + 2);
		}
	}
}

/* ------------------------------------------------------------------ */

/* gic_sq_retired_end() retires exactly as gic_sq_retired_after() does,
 * whatever the WQE sizes, positions (past 2^40 too) and published end;
 * an exclusive queue's WQE one BB before ready is retired without its
 * ctrl segment being read (a ds corrupted afterwards does not change the
 * result), a shared queue's from the segment. And the CQ's consumer
 * record is BE32 of the index's low 24 bits at every order. */
static void test_retired_end(void)
{
	static const uint64_t base[] = { 0, (1ull << 40) + 0xfffe };
	uint8_t payload[60];
	uint32_t record = 0;

	fill(payload, sizeof payload);
	for (unsigned b = 0; b < sizeof base / sizeof base[0]; b++) {
		gic_sq sq = ring_sq();
		uint64_t p0 = base[b];

		/* WQEs at p0 (one BB), p0 + 1 (two BBs), p0 + 3 (one BB). */
		CHECK_EQ(1, gic_wqe_write_inline(&sq, p0, 1, 2, payload, 8, 0));
		CHECK_EQ(2, gic_wqe_write_inline(&sq, p0 + 1, 1, 2, payload, sizeof payload, 0));
		CHECK_EQ(1, gic_wqe_write_inline(&sq, p0 + 3, 1, 2, payload, 8, 0));
		sq.retired = p0;
		for (unsigned ready = 1; ready <= 4; ready++) {
			static const uint64_t starts[] = { 0, 1, 3 };

			if (ready == 2)
				continue; /* inside the two-BB WQE: never published */
			sq.ready = p0 + ready;
			for (unsigned k = 0; k < 3 && starts[k] < ready; k++) {
				uint16_t counter = (uint16_t)(p0 + starts[k]);
				uint64_t want = gic_sq_retired_after(&sq, sq.retired, counter);

				CHECK_EQ(want, gic_sq_retired_end(&sq, counter, 0));
				CHECK_EQ(want, gic_sq_retired_end(&sq, counter, 1));
			}
		}
		/* The last WQE's ds now claims three BBs: only the shared queue
		 * reads it. */
		sq.ready = p0 + 4;
		((gic_ctrl_seg *)gic_sq_seg(&sq, p0 + 3, 0))->qpn_ds_be = gic_htobe32(QPN << 8 | 9);
		CHECK_EQ(p0 + 4, gic_sq_retired_end(&sq, (uint16_t)(p0 + 3), 0));
		CHECK_EQ(p0 + 6, gic_sq_retired_end(&sq, (uint16_t)(p0 + 3), 1));
	}
	for (int order = 0; order < GIC_ORDER_COUNT; order++) {
		gic_cq_record_release(&record, 0x1234567u + (uint32_t)order, order);
		CHECK_EQ(gic_htobe32(0x234567u + (uint32_t)order), record);
	}
}

int main(void)
{
	test_layout_wqe();
	test_layout_av();
	test_layout_cqe();
	test_constants_wqe();
	test_constants_cqe();
	test_random();
	test_cqe_random();
	test_cqe_ownership();
	test_make_op_own();
	test_counts();
	test_wqe_inline_small(3, 3);
	/* A position past 2^32: slot 3 of the ring, WQE index 7. */
	test_wqe_inline_small((1ull << 32) + 7, 7);
	test_wqe_inline_wrap();
	test_wqe_inline_regs();
	test_wqe_write();
	test_wqe_atomic_fa();
	test_wqe_nop();
	test_one_bb_slots();
	test_wqe_dc_inline();
	test_retired_end();
	if (n_failed) {
		fprintf(stderr, "format: %u of %u checks failed\n", n_failed, n_checks);
		return 1;
	}
	printf("format: %u checks passed\n", n_checks);
	return 0;
}
