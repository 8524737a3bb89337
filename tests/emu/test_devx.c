/*
 * DEVX on the emulated device, through the emulated libmlx5 (linked
 * against the system's libmlx5, run with LD_LIBRARY_PATH=<build>/emu):
 * QUERY_HCA_CAP as NVSHMEM reads it, the kernel's and the firmware's
 * refusals (errno, status, syndrome, the output left alone or written),
 * umems, UARs, the EQ number, ALLOC_PD, and the CREATE_CQ/CREATE_QP checks;
 * a well-formed CREATE_CQ, RC CREATE_QP and DCI CREATE_QP make objects
 * (their traffic: test_devx_traffic.c).
 */
#include <errno.h>
#include <infiniband/mlx5dv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gic/mlx5_prm.h"
#include "verbs_kit.h" /* CHECK, counting checks and failures */


enum { SYND_BASE = 0x5f000000 };
static struct ibv_context *ctx;
static uint8_t in[512], out[8192];

static uint32_t status(void) { return gic_prm_get(out, GIC_PRM_OUT_STATUS); }
static uint32_t syndrome(void) { return gic_prm_get(out, GIC_PRM_OUT_SYNDROME); }

static void cmd(uint16_t op, uint16_t op_mod)
{
	memset(in, 0, sizeof(in));
	memset(out, 0xab, sizeof(out));
	gic_prm_set(in, GIC_PRM_IN_OPCODE, op);
	gic_prm_set(in, GIC_PRM_IN_OP_MOD, op_mod);
}

static int hca_cap(uint32_t type, int cur)
{
	cmd(GIC_PRM_OP_QUERY_HCA_CAP, (uint16_t)(type << 1 | (cur ? 1 : 0)));
	return mlx5dv_devx_general_cmd(ctx, in, GIC_PRM_QUERY_HCA_CAP_IN_BYTES, out,
				       GIC_PRM_QUERY_HCA_CAP_OUT_BYTES);
}

static uint32_t cap(gic_prm_fld f)
{
	return gic_prm_get(out, gic_prm_at(GIC_PRM_HCA_CAP_OUT_CAPABILITY, f));
}

static void test_caps(void)
{
	struct ibv_device_attr d;

	for (int cur = 0; cur < 2; cur++) {
		CHECK(hca_cap(GIC_PRM_CAP_GENERAL, cur) == 0 && status() == 0, "general caps");
		CHECK(cap(GIC_PRM_CAP_GEN_CQE_VERSION) == 1, "cqe_version %u", cap(GIC_PRM_CAP_GEN_CQE_VERSION));
		CHECK(cap(GIC_PRM_CAP_GEN_PORT_TYPE) == GIC_PRM_PORT_TYPE_IB, "port type IB");
		CHECK(cap(GIC_PRM_CAP_GEN_RC) == 1 && cap(GIC_PRM_CAP_GEN_ATOMIC) == 1, "rc, atomic");
		CHECK(cap(GIC_PRM_CAP_GEN_DCT) == 1 && cap(GIC_PRM_CAP_GEN_COMPACT_ADDRESS_VECTOR) == 1,
		      "DC and the compact AV (softnic executes DC WQEs of both AV forms)");
		CHECK(cap(GIC_PRM_CAP_GEN_LOG_MAX_DCT_CONNECTIONS) == 0,
		      "no DC connection limit: softnic keeps no DC connections");
		CHECK(cap(GIC_PRM_CAP_GEN_LOG_BF_REG_SIZE) == 8, "one 256-byte BlueFlame register");
		CHECK(cap(GIC_PRM_CAP_GEN_LOG_MAX_CQ_SZ) == 16 && cap(GIC_PRM_CAP_GEN_LOG_MAX_QP_SZ) == 14,
		      "CQ and SQ sizes: softnic's");
		CHECK(cap(GIC_PRM_CAP_GEN_CQ_OI) == 1 && cap(GIC_PRM_CAP_GEN_NUM_PORTS) == 1, "oi, ports");
		CHECK(ibv_query_device(ctx, &d) == 0 &&
		      (1 << cap(GIC_PRM_CAP_GEN_LOG_MAX_QP)) <= d.max_qp &&
		      (2 << cap(GIC_PRM_CAP_GEN_LOG_MAX_QP)) > d.max_qp, "log_max_qp %u vs max_qp %d",
		      cap(GIC_PRM_CAP_GEN_LOG_MAX_QP), d.max_qp);
		CHECK(hca_cap(GIC_PRM_CAP_ATOMIC, cur) == 0 && status() == 0, "atomic caps");
		CHECK(cap(GIC_PRM_CAP_ATOMIC_OPERATIONS) == 0xf, "CAS, FA, masked CAS, masked FA");
		CHECK(cap(GIC_PRM_CAP_ATOMIC_SIZE_QP) == (GIC_PRM_ATOMIC_SIZE_4B | GIC_PRM_ATOMIC_SIZE_8B),
		      "4- and 8-byte atomics on QPs");
		CHECK(cap(GIC_PRM_CAP_ATOMIC_SIZE_DC) ==
		      (GIC_PRM_ATOMIC_SIZE_4B | GIC_PRM_ATOMIC_SIZE_8B),
		      "4- and 8-byte atomics on DCIs");
		CHECK(cap(GIC_PRM_CAP_ATOMIC_SUPPORTED_8B_ENDIANNESS_MODE_1) == 1 &&
		      cap(GIC_PRM_CAP_ATOMIC_REQ_8B_ENDIANNESS_MODE) == 1, "host-endian 8-byte atomics");
	}
	CHECK(hca_cap(GIC_PRM_CAP_ROCE, 1) == EREMOTEIO && status() == GIC_PRM_STAT_BAD_PARAM &&
	      syndrome() > SYND_BASE, "RoCE caps refused: status 0x%x syndrome 0x%x", status(), syndrome());
	CHECK(out[100] == 0, "a refusal zeroes the output");
	CHECK(hca_cap(0x7f, 1) == EREMOTEIO && status() == GIC_PRM_STAT_BAD_PARAM, "bad cap type");
}

static void test_general_errors(void)
{
	cmd(GIC_PRM_OP_QUERY_HCA_CAP, 1);
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 8, out, 4112) == EINVAL && out[0] == 0xab,
	      "input under a header: EINVAL, output untouched");
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 16, out, 8) == EINVAL, "output under a header");
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 16, out, 100) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_OUTP_LEN && syndrome(), "short output: BAD_OUTP_LEN");
	CHECK(mlx5dv_devx_general_cmd(ctx, NULL, 16, out, 16) == EINVAL, "NULL input");
	CHECK(mlx5dv_devx_general_cmd(NULL, in, 16, out, 16) == EINVAL, "NULL context");
	cmd(0xb42, 0);
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 16, out, 16) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_OP && syndrome() > SYND_BASE, "unknown general opcode: BAD_OP");
	cmd(0x7777, 0);
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 16, out, 16) == EINVAL && out[0] == 0xab,
	      "an opcode the kernel does not pass: EINVAL");
	cmd(GIC_PRM_OP_CREATE_CQ, 0);
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 272, out, 16) == EINVAL, "CREATE_CQ is not general");
	cmd(GIC_PRM_OP_NOP, 0);
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 16, out, 16) == 0 && status() == 0, "NOP");
	cmd(GIC_PRM_OP_NOP, 3);
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 16, out, 16) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_PARAM, "NOP with op_mod");
	cmd(GIC_PRM_OP_QUERY_ISSI, 0);
	CHECK(mlx5dv_devx_general_cmd(ctx, in, 16, out, 16) == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_OP, "QUERY_ISSI not modelled");
}

static struct mlx5dv_devx_umem *umem_a, *umem_small, *umem_dbr;
static struct mlx5dv_devx_uar *uar;
static void *buf_a, *buf_small, *buf_dbr;

static void test_umem(void)
{
	struct mlx5dv_devx_umem_in ui = { 0 };
	void *none = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	buf_a = aligned_alloc(4096, 1 << 20);
	buf_small = aligned_alloc(4096, 4096);
	buf_dbr = aligned_alloc(4096, 4096);
	umem_a = mlx5dv_devx_umem_reg(ctx, buf_a, 1 << 20, IBV_ACCESS_LOCAL_WRITE);
	umem_small = mlx5dv_devx_umem_reg(ctx, buf_small, 4096, 0);
	ui.addr = buf_dbr;
	ui.size = 4096;
	ui.access = IBV_ACCESS_LOCAL_WRITE;
	ui.pgsz_bitmap = 4096;
	umem_dbr = mlx5dv_devx_umem_reg_ex(ctx, &ui);
	CHECK(umem_a && umem_small && umem_dbr && umem_a->umem_id && umem_a->umem_id != umem_small->umem_id,
	      "umems registered (errno %d)", errno);
	errno = 0;
	CHECK(!mlx5dv_devx_umem_reg(ctx, NULL, 4096, 0) && errno == EINVAL, "NULL address");
	CHECK(!mlx5dv_devx_umem_reg(ctx, buf_a, 0, 0) && errno == EINVAL, "size 0");
	CHECK(!mlx5dv_devx_umem_reg(ctx, buf_a, 4096, IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL,
	      "remote write without local write");
	CHECK(!mlx5dv_devx_umem_reg(ctx, none, 8192, 0) && errno == EFAULT, "unmapped memory: EFAULT");
	ui.pgsz_bitmap = 0x800;
	CHECK(!mlx5dv_devx_umem_reg_ex(ctx, &ui) && errno == EINVAL, "no page size of 4 KiB or more");
	ui.comp_mask = MLX5DV_UMEM_MASK_DMABUF;
	ui.dmabuf_fd = -1;
	CHECK(!mlx5dv_devx_umem_reg_ex(ctx, &ui) && errno == EBADF, "dma-buf fd -1: EBADF");
	ui.dmabuf_fd = 0;
	ui.addr = NULL;
	CHECK(!mlx5dv_devx_umem_reg_ex(ctx, &ui) && errno == EPROTONOSUPPORT,
	      "dma-buf umem: EPROTONOSUPPORT (the caller falls back)");
	ui.comp_mask = 2;
	CHECK(!mlx5dv_devx_umem_reg_ex(ctx, &ui) && errno == EOPNOTSUPP, "unknown comp_mask");
	CHECK(!mlx5dv_devx_umem_reg_ex(ctx, NULL) && errno == EINVAL, "NULL umem_in");
	{
		struct mlx5dv_devx_umem *t = mlx5dv_devx_umem_reg(ctx, buf_small, 4096, 0);

		CHECK(t && mlx5dv_devx_umem_dereg(t) == 0, "dereg");
	}
	CHECK(mlx5dv_devx_umem_dereg(NULL) == EINVAL, "dereg NULL");
	munmap(none, 8192);
}

static void test_uar_eqn(void)
{
	struct mlx5dv_devx_uar *nc1, *nc2, *ded;
	uint32_t eqn = 0;

	uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_BF);
	CHECK(uar && uar->page_id && (uint8_t *)uar->reg_addr == (uint8_t *)uar->base_addr + 0x800,
	      "BF UAR: register at 0x800 of its page");
	if (uar)
		*(volatile uint64_t *)uar->reg_addr = 1; /* host memory: writable */
	nc1 = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	nc2 = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	CHECK(nc1 && nc1 == nc2 && nc1 != uar, "NC UAR: one per context");
	mlx5dv_devx_free_uar(nc1); /* the shared one stays */
	CHECK(mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC) == nc1, "NC UAR kept by free");
	ded = mlx5dv_devx_alloc_uar(ctx, 1u << 31);
	CHECK(ded && ded != nc1 && ded->page_id != uar->page_id, "NC dedicated UAR");
	mlx5dv_devx_free_uar(ded);
	mlx5dv_devx_free_uar(NULL);
	errno = 0;
	CHECK(!mlx5dv_devx_alloc_uar(ctx, 4) && errno == EOPNOTSUPP, "unknown UAR flag");
	CHECK(mlx5dv_devx_query_eqn(ctx, 0, &eqn) == 0 && eqn == 6, "EQN of vector 0: %u", eqn);
	CHECK(mlx5dv_devx_query_eqn(ctx, 1, &eqn) == EINVAL, "vector 1 of 1");
	CHECK(mlx5dv_devx_query_eqn(ctx, 0, NULL) == EFAULT, "NULL eqn");
}

static void test_pd(void)
{
	struct mlx5dv_devx_obj *pd;

	cmd(GIC_PRM_OP_ALLOC_PD, 0);
	pd = mlx5dv_devx_obj_create(ctx, in, 16, out, 16);
	CHECK(pd && status() == 0, "ALLOC_PD (errno %d)", errno);
	if (!pd)
		return;
	cmd(GIC_PRM_OP_RST2INIT_QP, 0);
	CHECK(mlx5dv_devx_obj_modify(pd, in, 272, out, 16) == EINVAL, "a QP command on a PD");
	cmd(GIC_PRM_OP_QUERY_QP, 0);
	CHECK(mlx5dv_devx_obj_query(pd, in, 16, out, 272) == EINVAL, "QUERY_QP on a PD");
	CHECK(mlx5dv_devx_obj_destroy(pd) == 0, "DEALLOC_PD");
	CHECK(mlx5dv_devx_obj_destroy(NULL) == EINVAL && mlx5dv_devx_obj_modify(NULL, in, 16, out, 16) ==
	      EINVAL && mlx5dv_devx_obj_query(NULL, in, 16, out, 16) == EINVAL, "NULL objects");
}

#define CQC(f) gic_prm_at(GIC_PRM_CREATE_CQ_IN_CQC, f)
#define QPC(f) gic_prm_at(GIC_PRM_CREATE_QP_IN_QPC, f)

/* A CREATE_CQ as NVSHMEM builds it: collapsed, overrun-ignore, 64-byte CQEs. */
static void cq_cmd(uint32_t log_size)
{
	cmd(GIC_PRM_OP_CREATE_CQ, 0);
	gic_prm_set(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID, umem_a->umem_id);
	gic_prm_set(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_VALID, 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_DBR_UMEM_VALID), 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_CC), 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_OI), 1);
	gic_prm_set(in, CQC(GIC_PRM_CQC_DBR_UMEM_ID), umem_dbr->umem_id);
	gic_prm_set(in, CQC(GIC_PRM_CQC_LOG_CQ_SIZE), log_size);
	gic_prm_set(in, CQC(GIC_PRM_CQC_UAR_PAGE), uar->page_id);
	gic_prm_set(in, CQC(GIC_PRM_CQC_C_EQN), 6);
	gic_prm_set(in, CQC(GIC_PRM_CQC_LOG_PAGE_SIZE), 4);
}

static int create_fails(uint32_t want_status, uint32_t want_synd, const char *what)
{
	struct mlx5dv_devx_obj *o = mlx5dv_devx_obj_create(ctx, in, 272, out, 16);
	int ok = !o && errno == EREMOTEIO && status() == want_status && syndrome() == want_synd;

	CHECK(ok, "%s: errno %d status 0x%x syndrome 0x%x (want 0x%x 0x%x)", what, errno, status(),
	      syndrome(), want_status, want_synd);
	if (o)
		mlx5dv_devx_obj_destroy(o);
	return ok;
}

/* The command in in makes an object (destroyed again). */
static void create_ok(const char *what)
{
	struct mlx5dv_devx_obj *o = mlx5dv_devx_obj_create(ctx, in, 272, out, 16);

	CHECK(o && status() == 0, "%s: errno %d status 0x%x syndrome 0x%x", what, o ? 0 : errno,
	      status(), syndrome());
	if (o)
		CHECK(mlx5dv_devx_obj_destroy(o) == 0, "%s: destroy", what);
}

static void test_create_cq(void)
{
	cq_cmd(6);
	create_ok("a valid CQ");
	cq_cmd(6);
	gic_prm_set(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID, 9999);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x06, "bad umem id");
	cq_cmd(7);
	gic_prm_set(in, GIC_PRM_CREATE_CQ_IN_CQ_UMEM_ID, umem_small->umem_id);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x07, "128 CQEs in a 4 KiB umem");
	cq_cmd(17);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x09, "log_cq_size 17");
	cq_cmd(6);
	gic_prm_set(in, CQC(GIC_PRM_CQC_CQE_SZ), 1);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x0d, "128-byte CQEs");
	cq_cmd(6);
	gic_prm_set(in, CQC(GIC_PRM_CQC_UAR_PAGE), 12345);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x0a, "unknown UAR page");
	cq_cmd(6);
	gic_prm_set(in, CQC(GIC_PRM_CQC_C_EQN), 3);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x0b, "unknown EQ");
	cq_cmd(6);
	gic_prm_set64(in, CQC(GIC_PRM_CQC_DBR_ADDR), 4092);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x08, "doorbell record not 8-aligned");
	cq_cmd(6);
	gic_prm_set(in, GIC_PRM_IN_OP_MOD, 1);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x02, "op_mod 1");
	cq_cmd(6);
	CHECK(!mlx5dv_devx_obj_create(ctx, in, 100, out, 16) && errno == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_INP_LEN, "short CREATE_CQ: BAD_INP_LEN");
	CHECK(!mlx5dv_devx_obj_create(ctx, in, 272, out, 8) && errno == EINVAL, "output under a header");
	cmd(GIC_PRM_OP_QUERY_HCA_CAP, 1);
	CHECK(!mlx5dv_devx_obj_create(ctx, in, 16, out, 4112) && errno == EINVAL,
	      "QUERY_HCA_CAP is not a creation");
	cmd(GIC_PRM_OP_CREATE_RMP, 0);
	CHECK(!mlx5dv_devx_obj_create(ctx, in, 16, out, 16) && errno == EREMOTEIO &&
	      status() == GIC_PRM_STAT_BAD_OP, "CREATE_RMP not modelled");
}

/* The verbs objects a QP names by number, as NVSHMEM's: PD, SRQ, CQ. */
static struct ibv_pd *vpd;
static struct ibv_cq *vcq;
static struct ibv_srq *vsrq;
static uint32_t vpdn, vcqn, vsrqn;

static void verbs_objects(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct mlx5dv_pd dpd;
	struct mlx5dv_cq dcq;
	struct mlx5dv_srq dsrq = { .comp_mask = MLX5DV_SRQ_MASK_SRQN };
	struct mlx5dv_obj o;

	vpd = ibv_alloc_pd(ctx);
	vcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	vsrq = vpd ? ibv_create_srq(vpd, &sa) : NULL;
	memset(&o, 0, sizeof(o));
	o.pd.in = vpd;
	o.pd.out = &dpd;
	o.cq.in = vcq;
	o.cq.out = &dcq;
	o.srq.in = vsrq;
	o.srq.out = &dsrq;
	CHECK(vsrq && vcq && !mlx5dv_init_obj(&o, MLX5DV_OBJ_PD | MLX5DV_OBJ_CQ | MLX5DV_OBJ_SRQ),
	      "verbs PD, CQ and SRQ with their numbers");
	vpdn = dpd.pdn;
	vcqn = dcq.cqn;
	vsrqn = dsrq.srqn;
}

/* A CREATE_QP as NVSHMEM builds an RC QP: SRQ receives, 64 BBs. */
static void qp_cmd(uint32_t st, uint32_t log_sq)
{
	cmd(GIC_PRM_OP_CREATE_QP, 0);
	gic_prm_set(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID, umem_a->umem_id);
	gic_prm_set(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_VALID, 1);
	gic_prm_set(in, QPC(GIC_PRM_QPC_ST), st);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PM_STATE), GIC_PRM_QP_PM_MIGRATED);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PD), vpdn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_UAR_PAGE), uar->page_id);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RQ_TYPE), GIC_PRM_RQ_SRQ);
	gic_prm_set(in, QPC(GIC_PRM_QPC_SRQN_RMPN_XRQN), vsrqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_CQN_SND), vcqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_CQN_RCV), vcqn);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_SQ_SIZE), log_sq);
	gic_prm_set(in, QPC(GIC_PRM_QPC_DBR_UMEM_VALID), 1);
	gic_prm_set64(in, QPC(GIC_PRM_QPC_DBR_ADDR), 64);
	gic_prm_set(in, QPC(GIC_PRM_QPC_DBR_UMEM_ID), umem_dbr->umem_id);
	gic_prm_set(in, QPC(GIC_PRM_QPC_USER_INDEX), 3);
}

static void test_create_qp(void)
{
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	create_ok("a valid RC QP (verbs PD, SRQ and CQ by number)");
	qp_cmd(GIC_PRM_QP_ST_DCI, 6);
	create_ok("a DCI");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PD), vpdn + 1000);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x19, "no such PD");
	qp_cmd(GIC_PRM_QP_ST_UD, 6);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x0e, "UD");
	qp_cmd(GIC_PRM_QP_ST_RC, 15);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x09, "log_sq_size 15");
	qp_cmd(GIC_PRM_QP_ST_RC, 7);
	gic_prm_set(in, GIC_PRM_CREATE_QP_IN_WQ_UMEM_ID, umem_small->umem_id);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x07, "128 BBs in a 4 KiB umem");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, QPC(GIC_PRM_QPC_DBR_UMEM_ID), 4242);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x06, "bad doorbell umem");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set64(in, QPC(GIC_PRM_QPC_DBR_ADDR), 66);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x08, "doorbell record not 8-aligned");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RQ_TYPE), 2);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x10, "rq_type 2");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, QPC(GIC_PRM_QPC_RQ_TYPE), GIC_PRM_RQ_REGULAR);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_RQ_SIZE), 15);
	gic_prm_set(in, QPC(GIC_PRM_QPC_LOG_RQ_STRIDE), 4);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x07, "an 8 MiB RQ in a 1 MiB umem");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, QPC(GIC_PRM_QPC_CS_RES), 1);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x0d, "scatter to CQE");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, QPC(GIC_PRM_QPC_PM_STATE), 0);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x0d, "pm_state not MIGRATED");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, QPC(GIC_PRM_QPC_UAR_PAGE), 0);
	create_fails(GIC_PRM_STAT_BAD_PARAM, SYND_BASE | 0x0a, "UAR page 0");
	qp_cmd(GIC_PRM_QP_ST_RC, 6);
	gic_prm_set(in, GIC_PRM_IN_VHCA_TUNNEL_ID, 1);
	CHECK(!mlx5dv_devx_obj_create(ctx, in, 272, out, 16) && errno == EINVAL, "vhca_tunnel_id");
}

int main(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);

	if (!list || n < 1 || !(ctx = ibv_open_device(list[0]))) {
		printf("test_devx: no emulated device (run with LD_LIBRARY_PATH=<build>/emu)\n");
		return 1;
	}
	test_caps();
	test_general_errors();
	test_umem();
	test_uar_eqn();
	test_pd();
	verbs_objects();
	if (umem_a && umem_small && umem_dbr && uar && vsrq) {
		test_create_cq();
		test_create_qp();
	}
	CHECK(mlx5dv_devx_umem_dereg(umem_a) == 0 && mlx5dv_devx_umem_dereg(umem_small) == 0 &&
	      mlx5dv_devx_umem_dereg(umem_dbr) == 0, "dereg after the refused objects");
	mlx5dv_devx_free_uar(uar);
	if (vsrq)
		ibv_destroy_srq(vsrq);
	if (vcq)
		ibv_destroy_cq(vcq);
	if (vpd)
		ibv_dealloc_pd(vpd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	free(buf_a);
	free(buf_small);
	free(buf_dbr);
	printf("test_devx: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
