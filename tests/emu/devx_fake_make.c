/*
 * A stand-in for src/emu/devx_make.c in the DEVX object test and the DEVX
 * fuzzer: it builds no softnic object, and hands out numbers, so that the
 * DEVX layer's own bookkeeping past creation (umems and CQs in use, the QP
 * state machine, QUERY_QP, destruction) can be tested before softnic takes
 * queues in caller memory. Never linked into the emulated libmlx5.
 */
#include "devx.h"

static uint32_t next_num = 0x100;

int emu_devx_make_cq(struct ibv_context *ctx, const emu_devx_cq_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f)
{
	(void)ctx;
	(void)req;
	(void)f;
	*num = next_num++;
	*impl = NULL;
	return 0;
}

int emu_devx_make_qp(struct ibv_context *ctx, const emu_devx_qp_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f)
{
	(void)ctx;
	(void)req;
	(void)f;
	*num = next_num++;
	*impl = NULL;
	return 0;
}

int emu_devx_modify_qp(void *impl, const emu_devx_qp_mod *mod, emu_devx_fail *f)
{
	(void)impl;
	(void)mod;
	(void)f;
	return 0;
}

int emu_devx_unmake_cq(void *impl)
{
	(void)impl;
	return 0;
}

int emu_devx_unmake_qp(void *impl)
{
	(void)impl;
	return 0;
}
