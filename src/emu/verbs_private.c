/* The emulated libibverbs' private node for the emulated libmlx5
 * (emu_private.h). */
#include <errno.h>

#include "emu.h"
#include "emu_private.h"

int gic_emu_is_device(struct ibv_device *dev)
{
	emu_init_devices();
	for (int i = 0; i < emu.ndev; i++)
		if (dev == &emu.devs[i].dev)
			return 1;
	return 0;
}

/* The handle's context is one of ours (every object records its context). */
static int ours(struct ibv_context *ctx)
{
	return ctx && gic_emu_is_device(ctx->device);
}

int gic_emu_qp_desc(struct ibv_qp *qp, softnic_qp_desc *out)
{
	if (!qp || !out || !ours(qp->context))
		return EINVAL;
	return softnic_qp_desc_get(((emu_qp *)qp)->s, out);
}

int gic_emu_cq_desc(struct ibv_cq *cq, softnic_cq_desc *out)
{
	if (!cq || !out || !ours(cq->context))
		return EINVAL;
	return softnic_cq_desc_get(((emu_cq *)cq)->s, out);
}

int gic_emu_srq_desc(struct ibv_srq *srq, softnic_srq_desc *out, uint32_t *head, uint32_t *tail)
{
	emu_srq *s = (emu_srq *)srq;

	if (!srq || !out || !head || !tail || !ours(srq->context))
		return EINVAL;
	*head = s->view.head;
	*tail = s->view.tail;
	return softnic_srq_desc_get(s->s, out);
}

int gic_emu_pdn(struct ibv_pd *pd, uint32_t *pdn)
{
	if (!pd || !pdn || !ours(pd->context))
		return EINVAL;
	*pdn = pd->handle;
	return 0;
}
