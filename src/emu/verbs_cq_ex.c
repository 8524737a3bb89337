/*
 * The extended CQ polling interface (ibv_cq_ex: start_poll, next_poll,
 * end_poll and the read_* functions) of the emulated device, on top of
 * the ordinary poller (emu_poll_cq): each step takes one completion into
 * the CQ's current one, which the read_* functions report.
 *
 * Between a start_poll that found a completion and its end_poll the CQ's
 * ex_lock is held, as rdma-core's mlx5 holds the CQ lock there: extended
 * pollers of one CQ exclude each other (ibv_poll_cq from another thread
 * still interleaves per completion, as it takes only the poller's lock).
 */
#include <errno.h>

#include "emu.h"

static emu_cq_ext *ext_of(struct ibv_cq_ex *cq)
{
	return (emu_cq_ext *)cq; /* the handle is the first field */
}

/* Takes the next completion into x->cur and the handle's status and
 * wr_id; ENOENT when there is none. */
static int take_one(emu_cq_ext *x)
{
	int got = emu_poll_cq(&x->c.cq, 1, &x->cur);

	if (got <= 0)
		return got < 0 ? -got : ENOENT;
	x->c.cqx.status = x->cur.status;
	x->c.cqx.wr_id = x->cur.wr_id;
	return 0;
}

static int start_poll(struct ibv_cq_ex *cq, struct ibv_poll_cq_attr *attr)
{
	emu_cq_ext *x = ext_of(cq);
	int rc;

	if (!attr || attr->comp_mask)
		return EINVAL;
	pthread_mutex_lock(&x->ex_lock);
	rc = take_one(x);
	if (rc) /* no end_poll follows a start_poll that found nothing */
		pthread_mutex_unlock(&x->ex_lock);
	return rc;
}

static int next_poll(struct ibv_cq_ex *cq)
{
	return take_one(ext_of(cq));
}

static void end_poll(struct ibv_cq_ex *cq)
{
	pthread_mutex_unlock(&ext_of(cq)->ex_lock);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.opcode; }
static uint32_t read_vendor_err(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.vendor_err; }
static uint32_t read_byte_len(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.byte_len; }
static __be32 read_imm_data(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.imm_data; }
static uint32_t read_qp_num(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.qp_num; }
static uint32_t read_src_qp(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.src_qp; }
static unsigned int read_wc_flags(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.wc_flags; }
static uint32_t read_slid(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.slid; }
static uint8_t read_sl(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.sl; }
static uint8_t read_dlid_path_bits(struct ibv_cq_ex *cq) { return ext_of(cq)->cur.dlid_path_bits; }

void emu_cq_ex_setup(emu_cq_ext *x)
{
	struct ibv_cq_ex *c = &x->c.cqx;

	c->comp_mask = 0;
	c->start_poll = start_poll;
	c->next_poll = next_poll;
	c->end_poll = end_poll;
	c->read_opcode = read_opcode;
	c->read_vendor_err = read_vendor_err;
	c->read_byte_len = read_byte_len;
	c->read_imm_data = read_imm_data;
	c->read_qp_num = read_qp_num;
	c->read_src_qp = read_src_qp;
	c->read_wc_flags = read_wc_flags;
	c->read_slid = read_slid;
	c->read_sl = read_sl;
	c->read_dlid_path_bits = read_dlid_path_bits;
	/* Time stamps, CVLAN, flow tag and tag matching are refused at
	 * creation (cq_ex_check): their readers stay NULL, as rdma-core
	 * leaves those of fields not requested. */
}
