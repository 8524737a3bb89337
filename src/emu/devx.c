/*
 * The emulated libmlx5's DEVX entry points (devx.h says how a command is
 * answered): mlx5dv_devx_general_cmd, obj_create/modify/query/destroy,
 * umem_reg/_ex/dereg, alloc_uar/free_uar, query_eqn. Every context of the
 * emulation takes DEVX (as one opened with MLX5DV_CONTEXT_FLAGS_DEVX).
 * State is process-wide under one lock; each resource records its context,
 * and a lookup only finds those of the caller's context.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devx.h"
#include "host_probe.h"
#include "emu_private.h"

int emu_devx_quiet;

static struct {
	pthread_mutex_t lock;
	emu_devx_umem *umems;
	emu_devx_uar *uars;
	struct mlx5dv_devx_obj *objs;
	uint32_t next_umem_id, next_uar_page;
} devx = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, NULL, 1, 1 };

int emu_devx_refuse(emu_devx_fail *f, uint8_t status, uint32_t syndrome, const char *fmt, ...)
{
	va_list ap;

	f->status = status;
	f->syndrome = syndrome;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	return 1;
}

static int ours(struct ibv_context *ctx)
{
	return ctx && ctx->device && gic_emu_is_device(ctx->device);
}

static void *fail_null(int e)
{
	errno = e;
	return NULL;
}

/* A refusal of the kernel's layer: one stderr line, errno e. */
static int kernel_refuse(const char *fn, int e, const char *why, uint16_t opcode)
{
	if (!emu_devx_quiet)
		fprintf(stderr, "gic-emu: %s: opcode 0x%x %s (the mlx5_ib driver answers %s)\n", fn,
			opcode, why, e == EINVAL ? "EINVAL" : strerror(e));
	return e;
}

/* A firmware refusal: the output header, one stderr line, EREMOTEIO. */
static int firmware_refuse(uint16_t opcode, const emu_devx_fail *f, uint8_t *out, size_t outlen)
{
	const char *name = emu_devx_opcode_name(opcode);

	memset(out, 0, outlen);
	gic_prm_set(out, GIC_PRM_OUT_STATUS, f->status);
	gic_prm_set(out, GIC_PRM_OUT_SYNDROME, f->syndrome);
	if (!emu_devx_quiet) {
		if (name)
			fprintf(stderr, "gic-emu: DEVX %s: %s (status 0x%x, syndrome 0x%08x)\n", name,
				f->why, f->status, f->syndrome);
		else
			fprintf(stderr, "gic-emu: DEVX opcode 0x%x: %s (status 0x%x, syndrome 0x%08x)\n",
				opcode, f->why, f->status, f->syndrome);
	}
	return EREMOTEIO;
}

/* The kernel's buffer checks of every entry point: both at least a
 * command header, neither NULL. */
static int buffers_ok(const void *in, size_t inlen, const void *out, size_t outlen)
{
	return in && out && inlen >= GIC_PRM_HDR_IN_BYTES && outlen >= GIC_PRM_HDR_OUT_BYTES;
}

/* The firmware's length checks of a known opcode: 0, or 1 with f filled. */
static int lengths_ok(uint16_t opcode, size_t inlen, size_t outlen, emu_devx_fail *f)
{
	size_t need_in = emu_devx_min_inlen(opcode), need_out = emu_devx_min_outlen(opcode);

	if (inlen < need_in)
		return !emu_devx_refuse(f, GIC_PRM_STAT_BAD_INP_LEN, EMU_DEVX_SYND_IN_LEN,
				       "input of %zu bytes, the command takes %zu", inlen, need_in);
	if (outlen < need_out)
		return !emu_devx_refuse(f, GIC_PRM_STAT_BAD_OUTP_LEN, EMU_DEVX_SYND_OUT_LEN,
				       "output of %zu bytes, the command answers %zu", outlen,
				       need_out);
	return 1;
}

/* ------------------------------------------------------------------ */
/* Lookups (the caller holds devx.lock). */

emu_devx_umem *emu_devx_umem_find(struct ibv_context *ctx, uint32_t id)
{
	for (emu_devx_umem *u = devx.umems; u; u = u->next)
		if (u->ctx == ctx && u->pub.umem_id == id)
			return u;
	return NULL;
}

void *emu_devx_uar_page(struct ibv_context *ctx, uint32_t page_id)
{
	for (emu_devx_uar *u = devx.uars; u; u = u->next)
		if (u->ctx == ctx && u->pub.page_id == page_id)
			return u->page;
	return NULL;
}

int emu_devx_uar_known(struct ibv_context *ctx, uint32_t page_id)
{
	return emu_devx_uar_page(ctx, page_id) != NULL;
}

struct mlx5dv_devx_obj *emu_devx_obj_find(struct ibv_context *ctx, uint16_t type, uint32_t num)
{
	for (struct mlx5dv_devx_obj *o = devx.objs; o; o = o->next)
		if (o->ctx == ctx && o->type == type && o->num == num)
			return o;
	return NULL;
}

static int obj_listed(const struct mlx5dv_devx_obj *obj)
{
	for (struct mlx5dv_devx_obj *o = devx.objs; o; o = o->next)
		if (o == obj)
			return 1;
	return 0;
}

static void obj_unlist(struct mlx5dv_devx_obj *obj)
{
	for (struct mlx5dv_devx_obj **p = &devx.objs; *p; p = &(*p)->next)
		if (*p == obj) {
			*p = obj->next;
			return;
		}
}

/* ------------------------------------------------------------------ */
/* General commands. */

/* The opcodes mlx5_ib passes to the firmware as general commands. */
static int kernel_general(uint16_t op)
{
	static const uint16_t list[] = {
		GIC_PRM_OP_QUERY_HCA_CAP, GIC_PRM_OP_QUERY_HCA_VPORT_CONTEXT, 0x752 /* ESW vport */,
		GIC_PRM_OP_QUERY_VPORT_STATE, GIC_PRM_OP_QUERY_ADAPTER, GIC_PRM_OP_QUERY_ISSI,
		GIC_PRM_OP_QUERY_NIC_VPORT_CONTEXT, GIC_PRM_OP_QUERY_ROCE_ADDRESS,
		0x76f /* VNIC env */, 0x770 /* vport counter */, 0x80a /* dropped packet log */,
		GIC_PRM_OP_NOP, 0x822, 0x824, 0x826 /* congestion */, 0x842 /* LAG */,
		0x740 /* ESW functions */,
	};

	if (op >= GIC_PRM_OP_GENERAL_START && op < GIC_PRM_OP_GENERAL_END)
		return 1;
	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
		if (list[i] == op)
			return 1;
	return 0;
}

static int general_firmware(struct ibv_context *ctx, uint16_t op, const uint8_t *in, size_t inlen,
			    uint8_t *out, size_t outlen, emu_devx_fail *f)
{
	if (op == GIC_PRM_OP_QUERY_HCA_CAP)
		return emu_devx_query_hca_cap(ctx, in, inlen, out, outlen, f);
	if (op == GIC_PRM_OP_NOP)
		return gic_prm_get(in, GIC_PRM_IN_OP_MOD) ?
			emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_BAD_OP_MOD,
					"op_mod %u (NOP takes 0)", gic_prm_get(in, GIC_PRM_IN_OP_MOD)) : 0;
	return emu_devx_refuse(f, GIC_PRM_STAT_BAD_OP, EMU_DEVX_SYND_BAD_OPCODE,
			       "softnic does not model this command");
}

int mlx5dv_devx_general_cmd(struct ibv_context *ctx, const void *in, size_t inlen, void *out,
			    size_t outlen)
{
	emu_devx_fail f;
	uint16_t op;
	int rc = 0;

	if (!ours(ctx))
		return ctx ? EOPNOTSUPP : EINVAL;
	if (!buffers_ok(in, inlen, out, outlen))
		return EINVAL;
	op = (uint16_t)gic_prm_get(in, GIC_PRM_IN_OPCODE);
	if (!kernel_general(op))
		return kernel_refuse("mlx5dv_devx_general_cmd", EINVAL, "is not a general command",
				     op);
	pthread_mutex_lock(&devx.lock);
	if (!lengths_ok(op, inlen, outlen, &f) ||
	    (memset(out, 0, outlen), general_firmware(ctx, op, in, inlen, out, outlen, &f)))
		rc = firmware_refuse(op, &f, out, outlen);
	pthread_mutex_unlock(&devx.lock);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Object creation. */

/* The opcodes mlx5_ib takes as object creation. */
static int kernel_create(uint16_t op)
{
	static const uint16_t list[] = {
		GIC_PRM_OP_CREATE_GENERAL_OBJECT, 0x200 /* MKEY */, GIC_PRM_OP_CREATE_CQ,
		GIC_PRM_OP_ALLOC_PD, 0x816 /* transport domain */, GIC_PRM_OP_CREATE_RMP,
		0x904 /* SQ */, 0x908 /* RQ */, 0x916 /* RQT */, 0x900 /* TIR */, 0x912 /* TIS */,
		0x771 /* Q counter */, 0x930, 0x933 /* flow table, group */, 0x939 /* counter */,
		0x93d, 0x940 /* reformat, modify header */, 0x782 /* scheduling element */,
		0x827 /* VXLAN port */, 0x829 /* L2 entry */, GIC_PRM_OP_CREATE_QP,
		GIC_PRM_OP_CREATE_SRQ, 0x705 /* XRC SRQ */, GIC_PRM_OP_CREATE_DCT, 0x717 /* XRQ */,
		0x806 /* attach to MCG */, 0x80e /* XRCD */, 0x936 /* flow entry */, 0x600 /* PSV */,
	};

	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
		if (list[i] == op)
			return 1;
	return 0;
}

static struct mlx5dv_devx_obj *obj_new(struct ibv_context *ctx, uint16_t type)
{
	struct mlx5dv_devx_obj *o = calloc(1, sizeof(*o));

	if (o) {
		o->ctx = ctx;
		o->type = type;
	}
	return o;
}

/* Lists o and holds its umems: a (none for a QP without send or receive
 * ring) and b. */
static void obj_hold(struct mlx5dv_devx_obj *o, emu_devx_umem *a, emu_devx_umem *b)
{
	o->umem[0] = a;
	o->umem[1] = b;
	if (a)
		a->users++;
	if (b)
		b->users++;
	o->next = devx.objs;
	devx.objs = o;
}

static int create_cq(struct ibv_context *ctx, const uint8_t *in, size_t inlen, uint8_t *out,
		     struct mlx5dv_devx_obj *o, emu_devx_fail *f)
{
	emu_devx_cq_req req;

	if (emu_devx_cq_parse(ctx, in, inlen, &req, f) ||
	    emu_devx_make_cq(ctx, &req, &o->num, &o->impl, f))
		return 1;
	obj_hold(o, req.buf, req.dbr);
	gic_prm_set(out, GIC_PRM_OUT_OBJ_NUM, o->num);
	return 0;
}

static int create_qp(struct ibv_context *ctx, const uint8_t *in, size_t inlen, uint8_t *out,
		     struct mlx5dv_devx_obj *o, emu_devx_fail *f)
{
	emu_devx_qp_req req;

	if (emu_devx_qp_parse(ctx, in, inlen, &req, f) ||
	    emu_devx_make_qp(ctx, &req, &o->num, &o->impl, f))
		return 1;
	obj_hold(o, req.wq, req.dbr);
	o->cq[0] = req.send_cq;
	o->cq[1] = req.recv_cq;
	for (int i = 0; i < 2; i++)
		if (o->cq[i])
			o->cq[i]->users++;
	o->state = GIC_PRM_QPS_RST;
	memcpy(o->qpc, in + GIC_PRM_CREATE_QP_IN_QPC.bit / 8, GIC_PRM_QPC_BYTES);
	gic_prm_set(o->qpc, GIC_PRM_QPC_STATE, GIC_PRM_QPS_RST);
	gic_prm_set(out, GIC_PRM_OUT_OBJ_NUM, o->num);
	return 0;
}

static int alloc_pd(struct ibv_context *ctx, const uint8_t *in, uint8_t *out,
		    struct mlx5dv_devx_obj *o, emu_devx_fail *f)
{
	struct ibv_pd *pd;

	if (gic_prm_get(in, GIC_PRM_IN_OP_MOD))
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_PARAM, EMU_DEVX_SYND_BAD_OP_MOD,
				       "op_mod %u (ALLOC_PD takes 0)", gic_prm_get(in, GIC_PRM_IN_OP_MOD));
	pd = ibv_alloc_pd(ctx);
	if (!pd || gic_emu_pdn(pd, &o->num)) {
		if (pd)
			ibv_dealloc_pd(pd);
		return emu_devx_refuse(f, GIC_PRM_STAT_LIM, EMU_DEVX_SYND_PD,
				       "softnic has no protection domain left");
	}
	o->impl = pd;
	o->next = devx.objs;
	devx.objs = o;
	gic_prm_set(out, GIC_PRM_ALLOC_PD_OUT_PD, o->num);
	return 0;
}

static int create_firmware(struct ibv_context *ctx, uint16_t op, const uint8_t *in, size_t inlen,
			   uint8_t *out, struct mlx5dv_devx_obj *o, emu_devx_fail *f)
{
	switch (op) {
	case GIC_PRM_OP_CREATE_CQ:
		return create_cq(ctx, in, inlen, out, o, f);
	case GIC_PRM_OP_CREATE_QP:
		return create_qp(ctx, in, inlen, out, o, f);
	case GIC_PRM_OP_ALLOC_PD:
		return alloc_pd(ctx, in, out, o, f);
	default:
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_OP, EMU_DEVX_SYND_BAD_OPCODE,
				       "softnic does not model this object");
	}
}

struct mlx5dv_devx_obj *mlx5dv_devx_obj_create(struct ibv_context *ctx, const void *in,
					       size_t inlen, void *out, size_t outlen)
{
	struct mlx5dv_devx_obj *o;
	emu_devx_fail f;
	uint16_t op;
	int rc = 0;

	if (!ours(ctx))
		return fail_null(ctx ? EOPNOTSUPP : EINVAL);
	if (!buffers_ok(in, inlen, out, outlen) || gic_prm_get(in, GIC_PRM_IN_VHCA_TUNNEL_ID))
		return fail_null(EINVAL);
	op = (uint16_t)gic_prm_get(in, GIC_PRM_IN_OPCODE);
	if (!kernel_create(op))
		return fail_null(kernel_refuse("mlx5dv_devx_obj_create", EINVAL,
					       "does not create an object", op));
	o = obj_new(ctx, op);
	if (!o)
		return fail_null(ENOMEM);
	pthread_mutex_lock(&devx.lock);
	if (!lengths_ok(op, inlen, outlen, &f) ||
	    (memset(out, 0, outlen), create_firmware(ctx, op, in, inlen, out, o, &f)))
		rc = firmware_refuse(op, &f, out, outlen);
	pthread_mutex_unlock(&devx.lock);
	if (rc) {
		free(o);
		return fail_null(rc);
	}
	return o;
}

/* ------------------------------------------------------------------ */
/* Modify and query. */

static int qp_command(uint16_t op)
{
	return op == GIC_PRM_OP_RST2INIT_QP || op == GIC_PRM_OP_INIT2INIT_QP ||
	       op == GIC_PRM_OP_INIT2RTR_QP || op == GIC_PRM_OP_RTR2RTS_QP ||
	       op == GIC_PRM_OP_RTS2RTS_QP || op == GIC_PRM_OP_SQERR2RTS_QP ||
	       op == GIC_PRM_OP_2ERR_QP || op == GIC_PRM_OP_2RST_QP || op == GIC_PRM_OP_QUERY_QP;
}

/* mlx5_ib's check that a modify or query names obj: the command's object
 * number and kind must be obj's (QP commands on a QP, CQ ones on a CQ). */
static int names_obj(const struct mlx5dv_devx_obj *obj, uint16_t op, const uint8_t *in)
{
	uint32_t num = gic_prm_get(in, GIC_PRM_IN_OBJ_NUM);

	if (qp_command(op))
		return obj->type == GIC_PRM_OP_CREATE_QP && obj->num == num;
	if (op == GIC_PRM_OP_QUERY_CQ || op == GIC_PRM_OP_MODIFY_CQ)
		return obj->type == GIC_PRM_OP_CREATE_CQ && obj->num == num;
	return 0;
}

static int modify_firmware(struct mlx5dv_devx_obj *obj, uint16_t op, const uint8_t *in,
			   size_t inlen, emu_devx_fail *f)
{
	emu_devx_qp_mod mod;

	if (op == GIC_PRM_OP_MODIFY_CQ)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_OP, EMU_DEVX_SYND_BAD_OPCODE,
				       "softnic does not model CQ moderation or resizing");
	if (emu_devx_qp_mod_parse(obj, in, inlen, &mod, f) || emu_devx_modify_qp(obj->impl, &mod, f))
		return 1;
	emu_devx_qp_mod_apply(obj, in, &mod);
	return 0;
}

/* The checks both modify and query make before the firmware: 0 or an errno. */
static int obj_call_ok(const char *fn, struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
		       void *out, size_t outlen, int modify)
{
	uint16_t op;

	if (!buffers_ok(in, inlen, out, outlen) || gic_prm_get(in, GIC_PRM_IN_VHCA_TUNNEL_ID))
		return EINVAL;
	op = (uint16_t)gic_prm_get(in, GIC_PRM_IN_OPCODE);
	if (modify ? !(qp_command(op) && op != GIC_PRM_OP_QUERY_QP) && op != GIC_PRM_OP_MODIFY_CQ
		   : op != GIC_PRM_OP_QUERY_QP && op != GIC_PRM_OP_QUERY_CQ)
		return kernel_refuse(fn, EINVAL, modify ? "is not a modify command softnic's kernel "
					      "layer knows" : "is not a query command softnic's "
					      "kernel layer knows", op);
	if (!names_obj(obj, op, in))
		return kernel_refuse(fn, EINVAL, "names another object than the one it is called on",
				     op);
	return 0;
}

/* QUERY_QP answers the QP's context image; QUERY_CQ is not modelled. */
static int query_firmware(const struct mlx5dv_devx_obj *obj, uint16_t op, uint8_t *out,
			  emu_devx_fail *f)
{
	if (op == GIC_PRM_OP_QUERY_CQ)
		return emu_devx_refuse(f, GIC_PRM_STAT_BAD_OP, EMU_DEVX_SYND_BAD_OPCODE,
				       "softnic does not model this command");
	memcpy(out + GIC_PRM_QUERY_QP_OUT_QPC.bit / 8, obj->qpc, GIC_PRM_QPC_BYTES);
	return 0;
}

/* The body of mlx5dv_devx_obj_modify (modify 1) and _query (0): the
 * object and the command checked, then the command answered as firmware
 * would, under the DEVX lock. */
static int obj_command(const char *fn, struct mlx5dv_devx_obj *obj, const void *in, size_t inlen,
		       void *out, size_t outlen, int modify)
{
	emu_devx_fail f;
	uint16_t op;
	int rc;

	pthread_mutex_lock(&devx.lock);
	rc = !obj || !obj_listed(obj) ? EINVAL : obj_call_ok(fn, obj, in, inlen, out, outlen, modify);
	if (!rc) {
		op = (uint16_t)gic_prm_get(in, GIC_PRM_IN_OPCODE);
		if (!lengths_ok(op, inlen, outlen, &f) ||
		    (memset(out, 0, outlen), modify ? modify_firmware(obj, op, in, inlen, &f)
						    : query_firmware(obj, op, out, &f)))
			rc = firmware_refuse(op, &f, out, outlen);
	}
	pthread_mutex_unlock(&devx.lock);
	return rc;
}

int mlx5dv_devx_obj_modify(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
			   size_t outlen)
{
	return obj_command("mlx5dv_devx_obj_modify", obj, in, inlen, out, outlen, 1);
}

int mlx5dv_devx_obj_query(struct mlx5dv_devx_obj *obj, const void *in, size_t inlen, void *out,
			  size_t outlen)
{
	return obj_command("mlx5dv_devx_obj_query", obj, in, inlen, out, outlen, 0);
}

/* ------------------------------------------------------------------ */
/* Destruction. */

static int destroy_locked(struct mlx5dv_devx_obj *obj)
{
	int rc = 0;

	if (obj->type == GIC_PRM_OP_CREATE_CQ) {
		if (obj->users)
			return EBUSY; /* a QP uses it (the firmware: RES_BUSY) */
		rc = emu_devx_unmake_cq(obj->impl);
	} else if (obj->type == GIC_PRM_OP_CREATE_QP) {
		rc = emu_devx_unmake_qp(obj->impl);
	} else if (obj->type == GIC_PRM_OP_ALLOC_PD) {
		rc = ibv_dealloc_pd(obj->impl);
	}
	if (rc)
		return rc;
	for (int i = 0; i < 2; i++) {
		if (obj->umem[i])
			obj->umem[i]->users--;
		if (obj->cq[i])
			obj->cq[i]->users--;
	}
	obj_unlist(obj);
	free(obj);
	return 0;
}

int mlx5dv_devx_obj_destroy(struct mlx5dv_devx_obj *obj)
{
	int rc;

	pthread_mutex_lock(&devx.lock);
	rc = obj && obj_listed(obj) ? destroy_locked(obj) : EINVAL;
	pthread_mutex_unlock(&devx.lock);
	return rc;
}

/* ------------------------------------------------------------------ */
/* umems. */

#define EMU_UMEM_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | \
			 IBV_ACCESS_RELAXED_ORDERING)

/* 1 when the first and last bytes of the range are host memory this
 * process can read (the kernel's copy into a pipe fails otherwise).
 * HOOK (GPU memory umems): NVSHMEM and DOCA register GPU memory here; with
 * softnic's GPU engine behind the queues that memory is what the engine
 * reads. Until the make functions place queues in caller memory, only host
 * memory is taken. */
static int umem_memory_ok(const void *addr, size_t len)
{
	return emu_host_readable(addr, len);
}

/* The address path of umem_reg and umem_reg_ex: 0 or an errno. */
static int umem_args_ok(void *addr, size_t size, uint32_t access, uint64_t pgsz_bitmap)
{
	if (!addr || !size || (uintptr_t)addr + size < (uintptr_t)addr)
		return EINVAL;
	if ((access & ~(uint32_t)EMU_UMEM_ACCESS) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE)))
		return EINVAL;
	if (!(pgsz_bitmap & ~(uint64_t)(EMU_DEVX_UAR_PAGE - 1)))
		return EINVAL; /* no page size of 4 KiB or more to map it with */
	if (!umem_memory_ok(addr, size)) {
		if (!emu_devx_quiet)
			fprintf(stderr, "gic-emu: mlx5dv_devx_umem_reg(%p, %zu): not host memory this "
			"process can read (GPU-memory umems are not taken yet)\n", addr, size);
		return EFAULT;
	}
	return 0;
}

static struct mlx5dv_devx_umem *umem_add(struct ibv_context *ctx, void *addr, size_t size,
					 uint32_t access)
{
	emu_devx_umem *u = calloc(1, sizeof(*u));

	if (!u)
		return fail_null(ENOMEM);
	u->ctx = ctx;
	u->addr = addr;
	u->size = size;
	u->access = access;
	pthread_mutex_lock(&devx.lock);
	u->pub.umem_id = devx.next_umem_id++;
	u->next = devx.umems;
	devx.umems = u;
	pthread_mutex_unlock(&devx.lock);
	return &u->pub;
}

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg(struct ibv_context *ctx, void *addr, size_t size,
					      uint32_t access)
{
	int rc;

	if (!ours(ctx))
		return fail_null(ctx ? EOPNOTSUPP : EINVAL);
	rc = umem_args_ok(addr, size, access, ~(uint64_t)(EMU_DEVX_UAR_PAGE - 1));
	return rc ? fail_null(rc) : umem_add(ctx, addr, size, access);
}

struct mlx5dv_devx_umem *mlx5dv_devx_umem_reg_ex(struct ibv_context *ctx,
						 struct mlx5dv_devx_umem_in *in)
{
	int rc;

	if (!ours(ctx))
		return fail_null(ctx ? EOPNOTSUPP : EINVAL);
	if (!in)
		return fail_null(EINVAL);
	if (in->comp_mask & ~(uint64_t)MLX5DV_UMEM_MASK_DMABUF)
		return fail_null(EOPNOTSUPP); /* rdma-core's own check */
	if (in->comp_mask & MLX5DV_UMEM_MASK_DMABUF) {
		if (in->dmabuf_fd == -1)
			return fail_null(EBADF); /* rdma-core's own check */
		/* A kernel without dma-buf umems refuses the unknown attribute. */
		if (!emu_devx_quiet)
			fprintf(stderr, "gic-emu: mlx5dv_devx_umem_reg_ex: dma-buf umems are not "
				"supported (EPROTONOSUPPORT, as a kernel without them); register "
				"the address instead\n");
		return fail_null(EPROTONOSUPPORT);
	}
	rc = umem_args_ok(in->addr, in->size, in->access, in->pgsz_bitmap);
	return rc ? fail_null(rc) : umem_add(ctx, in->addr, in->size, in->access);
}

int mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
	int rc = EINVAL;

	pthread_mutex_lock(&devx.lock);
	for (emu_devx_umem **p = &devx.umems; *p; p = &(*p)->next) {
		emu_devx_umem *u = *p;

		if (&u->pub != umem)
			continue;
		rc = u->users ? EBUSY : 0; /* an object's queue or doorbell lies in it */
		if (!rc) {
			*p = u->next;
			free(u);
		}
		break;
	}
	pthread_mutex_unlock(&devx.lock);
	return rc;
}

/* ------------------------------------------------------------------ */
/* UARs and EQs. */

static emu_devx_uar *uar_new(struct ibv_context *ctx, int singleton)
{
	emu_devx_uar *u = calloc(1, sizeof(*u));

	if (!u || posix_memalign(&u->page, EMU_DEVX_UAR_PAGE, EMU_DEVX_UAR_PAGE)) {
		free(u);
		return fail_null(ENOMEM);
	}
	memset(u->page, 0, EMU_DEVX_UAR_PAGE);
	u->ctx = ctx;
	u->singleton = singleton;
	u->pub.page_id = devx.next_uar_page++;
	u->pub.base_addr = u->page;
	u->pub.reg_addr = (uint8_t *)u->page + EMU_DEVX_UAR_BF_OFFSET;
	u->pub.mmap_off = (off_t)u->pub.page_id * EMU_DEVX_UAR_PAGE; /* no file maps it */
	u->pub.comp_mask = 0;
	u->next = devx.uars;
	devx.uars = u;
	return u;
}

struct mlx5dv_devx_uar *mlx5dv_devx_alloc_uar(struct ibv_context *ctx, uint32_t flags)
{
	emu_devx_uar *u = NULL;

	if (!ours(ctx))
		return fail_null(ctx ? EOPNOTSUPP : EINVAL);
	if (flags & ~(uint32_t)(MLX5DV_UAR_ALLOC_TYPE_NC | MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED))
		return fail_null(EOPNOTSUPP);
	pthread_mutex_lock(&devx.lock);
	if (flags & MLX5DV_UAR_ALLOC_TYPE_NC) /* rdma-core: one shared NC UAR per context */
		for (u = devx.uars; u && !(u->ctx == ctx && u->singleton); u = u->next)
			;
	if (!u)
		u = uar_new(ctx, (flags & MLX5DV_UAR_ALLOC_TYPE_NC) != 0);
	pthread_mutex_unlock(&devx.lock);
	return u ? &u->pub : NULL;
}

void mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *uar)
{
	pthread_mutex_lock(&devx.lock);
	for (emu_devx_uar **p = &devx.uars; uar && *p; p = &(*p)->next) {
		emu_devx_uar *u = *p;

		if (&u->pub != uar)
			continue;
		if (!u->singleton) { /* rdma-core leaves the shared one to the context */
			*p = u->next;
			free(u->page);
			free(u);
		}
		break;
	}
	pthread_mutex_unlock(&devx.lock);
}

int mlx5dv_devx_query_eqn(struct ibv_context *ctx, uint32_t vector, uint32_t *eqn)
{
	if (!ours(ctx))
		return ctx ? EOPNOTSUPP : EINVAL;
	if (!eqn)
		return EFAULT;
	if (vector >= (uint32_t)ctx->num_comp_vectors)
		return EINVAL;
	*eqn = EMU_DEVX_EQN + vector;
	return 0;
}
