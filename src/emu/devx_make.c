/*
 * The softnic objects behind DEVX CREATE_CQ and CREATE_QP (devx.h's
 * contract). NOT DONE: softnic allocates every ring itself, and a DEVX queue
 * lies in caller memory (the umems the request names). These fail with
 * BAD_RES_STATE until softnic takes caller-provided rings and doorbell
 * records (softnic_cq_attr / softnic_qp_attr), which is being added; then
 * each becomes: resolve the request's numbers (pd, verbs CQs and SRQs),
 * create the softnic object on req's memory, return its number.
 */
#include <stdio.h>

#include "devx.h"

int emu_devx_make_cq(struct ibv_context *ctx, const emu_devx_cq_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f)
{
	(void)ctx;
	(void)req;
	(void)num;
	(void)impl;
	return emu_devx_refuse(f, GIC_PRM_STAT_BAD_RES_STATE, EMU_DEVX_SYND_NOT_BUILT,
			       "softnic cannot place a CQ in caller memory yet");
}

int emu_devx_make_qp(struct ibv_context *ctx, const emu_devx_qp_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f)
{
	(void)ctx;
	(void)req;
	(void)num;
	(void)impl;
	return emu_devx_refuse(f, GIC_PRM_STAT_BAD_RES_STATE, EMU_DEVX_SYND_NOT_BUILT,
			       "softnic cannot place a QP in caller memory yet");
}

int emu_devx_modify_qp(void *impl, const emu_devx_qp_mod *mod, emu_devx_fail *f)
{
	(void)impl;
	(void)mod;
	return emu_devx_refuse(f, GIC_PRM_STAT_BAD_RES_STATE, EMU_DEVX_SYND_NOT_BUILT,
			       "no softnic QP behind this object");
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
