/*
 * libFuzzer target: the emulated libmlx5's DEVX layer (src/emu/devx*.c)
 * with arbitrary bytes as mlx5dv_devx_general_cmd, obj_create, obj_modify
 * and obj_query commands of arbitrary input and output lengths (each buffer
 * allocated at exactly its length, so a read or write past it is an ASan
 * report), and umem, UAR and EQ calls with any arguments. Some commands get
 * a known opcode and this context's umem ids, UAR page and EQ number
 * patched in so that the checks past the first ones are reached, and a
 * modify names its object, so the QP state machine runs. The object step
 * is the stand-in of tests/emu/devx_fake_make.c (CQs and QPs exist, with no
 * softnic object behind them). Everything must fail cleanly or succeed.
 */
#include <infiniband/mlx5dv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devx.h"
#include "fuzz_input.h"

enum { NOBJ = 8, NUMEM = 4, NUAR = 3, AREA = 1 << 20 };

static struct {
	struct ibv_context *ctx;
	uint8_t *area;
	struct mlx5dv_devx_obj *obj[NOBJ];
	struct mlx5dv_devx_umem *umem[NUMEM];
	struct mlx5dv_devx_uar *uar[NUAR];
} f;


static void setup(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);

	emu_devx_quiet = 1;
	f.ctx = l && l[0] ? ibv_open_device(l[0]) : NULL;
	ibv_free_device_list(l);
	f.area = aligned_alloc(4096, AREA);
	if (!f.ctx || !f.area)
		abort();
	memset(f.area, 0, AREA);
}

static const uint16_t known_ops[] = {
	GIC_PRM_OP_QUERY_HCA_CAP, GIC_PRM_OP_NOP, GIC_PRM_OP_CREATE_CQ, GIC_PRM_OP_CREATE_QP,
	GIC_PRM_OP_ALLOC_PD, GIC_PRM_OP_RST2INIT_QP, GIC_PRM_OP_INIT2INIT_QP, GIC_PRM_OP_INIT2RTR_QP,
	GIC_PRM_OP_RTR2RTS_QP, GIC_PRM_OP_RTS2RTS_QP, GIC_PRM_OP_SQERR2RTS_QP, GIC_PRM_OP_2ERR_QP,
	GIC_PRM_OP_2RST_QP, GIC_PRM_OP_QUERY_QP, GIC_PRM_OP_QUERY_CQ, GIC_PRM_OP_MODIFY_CQ,
	GIC_PRM_OP_CREATE_RMP, 0xb00,
};

/* Sets field fld of a len-byte buffer when its 32-bit word lies inside it
 * (the accessors read and write whole words). */
static void patch(uint8_t *b, size_t len, gic_prm_fld fld, uint32_t v)
{
	if ((fld.bit / 32 + 1) * 4 <= len)
		gic_prm_set(b, fld, v);
}

static uint32_t some_umem(in *s)
{
	struct mlx5dv_devx_umem *u = f.umem[take(s, 1) % NUMEM];

	return u ? u->umem_id : take(s, 1);
}

/* This context's numbers into the fields the CQ and QP checks look up. */
static void patch_ids(in *s, uint8_t *b, size_t len)
{
	struct mlx5dv_devx_uar *uar = f.uar[take(s, 1) % NUAR];
	uint32_t page = uar ? uar->page_id : 0;
	gic_prm_fld cq = GIC_PRM_CREATE_CQ_IN_CQC, qp = GIC_PRM_CREATE_QP_IN_QPC;

	if (len < GIC_PRM_HDR_IN_BYTES)
		return;
	if (gic_prm_get(b, GIC_PRM_IN_OPCODE) == GIC_PRM_OP_CREATE_CQ) {
		patch(b, len, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID, some_umem(s));
		patch(b, len, gic_prm_at(cq, GIC_PRM_CQC_DBR_UMEM_ID), some_umem(s));
		patch(b, len, gic_prm_at(cq, GIC_PRM_CQC_UAR_PAGE), page);
		patch(b, len, gic_prm_at(cq, GIC_PRM_CQC_C_EQN), EMU_DEVX_EQN);
	} else {
		patch(b, len, GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID, some_umem(s));
		patch(b, len, gic_prm_at(qp, GIC_PRM_QPC_DBR_UMEM_ID), some_umem(s));
		patch(b, len, gic_prm_at(qp, GIC_PRM_QPC_UAR_PAGE), page);
		patch(b, len, gic_prm_at(qp, GIC_PRM_QPC_ST), take(s, 1) & 1 ? GIC_PRM_QP_ST_RC : take(s, 1));
		patch(b, len, gic_prm_at(qp, GIC_PRM_QPC_PM_STATE), GIC_PRM_QP_PM_MIGRATED);
	}
}

#define QPC(fl) gic_prm_at(GIC_PRM_CREATE_QP_IN_QPC, fl)
#define CQC(fl) gic_prm_at(GIC_PRM_CREATE_CQ_IN_CQC, fl)
#define ADS(fl) QPC(gic_prm_at(GIC_PRM_QPC_PRIMARY_ADDRESS_PATH, fl))

/* A well-formed command (272 bytes) the way NVSHMEM builds it: CREATE_CQ,
 * CREATE_QP, RST2INIT, INIT2RTR, RTR2RTS; then a few fields changed. */
static void from_template(in *s, uint8_t *b)
{
	static const uint16_t t[] = { GIC_PRM_OP_CREATE_CQ, GIC_PRM_OP_CREATE_QP,
		GIC_PRM_OP_RST2INIT_QP, GIC_PRM_OP_INIT2RTR_QP, GIC_PRM_OP_RTR2RTS_QP };
	uint16_t op = t[take(s, 1) % 5];

	memset(b, 0, 272);
	gic_prm_set(b, GIC_PRM_IN_OPCODE, op);
	gic_prm_set(b, CQC(GIC_PRM_CQC_LOG_CQ_SIZE), 4);  /* for CREATE_CQ */
	gic_prm_set(b, QPC(GIC_PRM_QPC_LOG_SQ_SIZE), 4);   /* for CREATE_QP */
	gic_prm_set(b, QPC(GIC_PRM_QPC_RQ_TYPE), GIC_PRM_RQ_SRQ);
	gic_prm_set(b, QPC(GIC_PRM_QPC_CQN_SND), 0x100);
	gic_prm_set64(b, QPC(GIC_PRM_QPC_DBR_ADDR), 64);
	if (op == GIC_PRM_OP_RST2INIT_QP)
		gic_prm_set(b, ADS(GIC_PRM_ADS_VHCA_PORT_NUM), 1);
	if (op == GIC_PRM_OP_INIT2RTR_QP) {
		memset(b + 16, 0, 256);
		gic_prm_set(b, QPC(GIC_PRM_QPC_MTU), 5);
		gic_prm_set(b, QPC(GIC_PRM_QPC_REMOTE_QPN), 0x42);
		gic_prm_set(b, ADS(GIC_PRM_ADS_RLID), 1);
	}
	for (uint32_t n = take(s, 1) % 4; n; n--) {
		uint32_t bit = take(s, 2) % (272 * 8), width = 1 + take(s, 1) % (32 - bit % 32);

		gic_prm_set(b, GIC_PRM_FLD(bit, width), take(s, 4));
	}
}

/* A command of arbitrary length and bytes, maybe with a known opcode and
 * this context's numbers, or from a template. *inlen, *outlen: its lengths. */
static uint8_t *command(in *s, size_t *inlen, size_t *outlen)
{
	uint8_t *b;
	uint32_t mode = take(s, 1);

	*inlen = mode & 8 ? 272 : take(s, 2) % 600;
	*outlen = mode & 8 ? 272 : take(s, 2) % 4200;
	b = malloc(*inlen ? *inlen : 1);
	if (!b)
		abort();
	if (mode & 8)
		from_template(s, b);
	else
		for (size_t i = 0; i < *inlen; i++)
			b[i] = (uint8_t)take(s, 1);
	if (mode & 8)
		mode &= ~1u;
	if (mode & 1)
		patch(b, *inlen, GIC_PRM_IN_OPCODE, known_ops[take(s, 1) % (sizeof(known_ops) / 2)]);
	if (mode & 2)
		patch(b, *inlen, GIC_PRM_IN_VHCA_TUNNEL_ID, 0);
	if (mode & 4)
		patch_ids(s, b, *inlen);
	return b;
}

static void do_cmd(in *s, int kind)
{
	size_t inlen, outlen;
	uint8_t *b = command(s, &inlen, &outlen);
	uint8_t *out = malloc(outlen ? outlen : 1);
	int slot = (int)(take(s, 1) % NOBJ);
	struct mlx5dv_devx_obj *o = f.obj[slot];

	if (!out)
		abort();
	if (kind == 0) {
		mlx5dv_devx_general_cmd(f.ctx, b, inlen, out, outlen);
	} else if (kind == 1) {
		o = mlx5dv_devx_obj_create(f.ctx, b, inlen, out, outlen);
		if (o && f.obj[slot])
			mlx5dv_devx_obj_destroy(o); /* keep the slots bounded */
		else if (o)
			f.obj[slot] = o;
	} else if (o) {
		if (take(s, 1) & 1)
			patch(b, inlen, GIC_PRM_IN_OBJ_NUM, o->num); /* name the object */
		if (kind == 2)
			mlx5dv_devx_obj_modify(o, b, inlen, out, outlen);
		else
			mlx5dv_devx_obj_query(o, b, inlen, out, outlen);
	}
	free(b);
	free(out);
}

static void do_umem(in *s)
{
	int slot = (int)(take(s, 1) % NUMEM);
	struct mlx5dv_devx_umem_in ui = { 0 };
	uint32_t off = take(s, 3) % AREA;

	if (f.umem[slot]) {
		if (!mlx5dv_devx_umem_dereg(f.umem[slot]))
			f.umem[slot] = NULL;
		return;
	}
	ui.addr = take(s, 1) == 0 ? NULL : f.area + off;
	ui.size = take(s, 3) % (AREA - off + 1);
	ui.access = take(s, 1) & 0x3f;
	ui.pgsz_bitmap = take(s, 1) & 1 ? ~0xfffull : (uint64_t)take(s, 4) << 8;
	ui.comp_mask = take(s, 1) % 4 == 0 ? take(s, 1) & 3 : 0;
	ui.dmabuf_fd = (int)take(s, 1) - 1;
	f.umem[slot] = take(s, 1) & 1 ? mlx5dv_devx_umem_reg_ex(f.ctx, &ui)
				      : mlx5dv_devx_umem_reg(f.ctx, ui.addr, ui.size, ui.access);
}

static void do_uar(in *s)
{
	int slot = (int)(take(s, 1) % NUAR);
	static const uint32_t flags[] = { 0, 1, 1u << 31, 2, 0xffffffffu };
	uint32_t eqn;

	if (f.uar[slot]) {
		mlx5dv_devx_free_uar(f.uar[slot]);
		f.uar[slot] = NULL;
		return;
	}
	f.uar[slot] = mlx5dv_devx_alloc_uar(f.ctx, flags[take(s, 1) % 5]);
	mlx5dv_devx_query_eqn(f.ctx, take(s, 1) % 3, take(s, 1) & 1 ? &eqn : NULL);
}

/* Every input starts from nothing: QPs before the CQs they hold. */
static void teardown(void)
{
	for (int pass = 0; pass < 3; pass++)
		for (int i = 0; i < NOBJ; i++)
			if (f.obj[i] && !mlx5dv_devx_obj_destroy(f.obj[i]))
				f.obj[i] = NULL;
	for (int i = 0; i < NOBJ; i++)
		if (f.obj[i])
			abort(); /* an object that cannot be destroyed */
	for (int i = 0; i < NUMEM; i++)
		if (f.umem[i] && mlx5dv_devx_umem_dereg(f.umem[i]))
			abort(); /* in use with no object left */
	memset(f.umem, 0, sizeof(f.umem));
	for (int i = 0; i < NUAR; i++)
		mlx5dv_devx_free_uar(f.uar[i]);
	memset(f.uar, 0, sizeof(f.uar));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	in s = { data, size };

	if (!f.ctx)
		setup();
	while (s.n) {
		switch (take(&s, 1) % 8) {
		case 0: do_cmd(&s, 0); break;
		case 1: case 2: do_cmd(&s, 1); break;
		case 3: case 4: do_cmd(&s, 2); break;
		case 5: do_cmd(&s, 3); break;
		case 6: do_umem(&s); break;
		default: do_uar(&s); break;
		}
	}
	teardown();
	return 0;
}
