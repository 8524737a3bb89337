/*
 * The emulated libmlx5's DEVX layer (devx.c, devx_caps.c, devx_qp.c,
 * devx_make.c): internals shared by its files, the fuzzer
 * (tests/fuzz/fuzz_devx.c) and the object test (tests/emu/test_devx_objects.c).
 * Not a public header.
 *
 * Two layers answer a command, as on a real host:
 *  - the kernel's (mlx5_ib's devx path): which opcodes each entry point
 *    takes, the 16-byte minimum of both buffers, that a modify or query
 *    names the object it is called on, vhca_tunnel_id 0. A refusal there is
 *    an errno (EINVAL), and the output buffer is left as it was;
 *  - the firmware's: the command's own layout and fields. A refusal there
 *    zeroes the output buffer, writes status and syndrome into its header,
 *    and the entry point fails with EREMOTEIO (obj_create: NULL, errno
 *    EREMOTEIO), as mlx5_ib since Linux 5.19 and rdma-core do; rdma-core's
 *    mlx5_get_cmd_status_err() turns the status into EINVAL, EIO, ...
 * Syndromes are softnic's own (EMU_DEVX_SYND_*), one per check; a ConnectX
 * has its own, undocumented ones.
 */
#ifndef GIC_EMU_DEVX_H
#define GIC_EMU_DEVX_H

#include <infiniband/mlx5dv.h>
#include <stddef.h>
#include <stdint.h>

#include "gic/mlx5_prm.h"

#ifndef MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED
#define MLX5DV_UAR_ALLOC_TYPE_NC_DEDICATED (1U << 31) /* rdma-core >= 50 */
#endif

enum {
	EMU_DEVX_EQN = 6,          /* the completion EQ of vector 0 (mlx5dv_devx_query_eqn) */
	EMU_DEVX_UAR_PAGE = 4096,  /* one UAR page */
	EMU_DEVX_UAR_BF_OFFSET = 0x800, /* reg_addr within it, as on a ConnectX */
	EMU_DEVX_LOG_MAX_CQ_SZ = 16,    /* softnic's CQs: 2^16 CQEs (a CX-7: 2^22) */
	EMU_DEVX_LOG_MAX_SQ_BB = 14,    /* softnic's send rings: 2^14 BBs (a CX-7: 2^15) */
	EMU_DEVX_LOG_MAX_RQ = 15,       /* softnic's receive queues: 2^15 WQEs */
	EMU_DEVX_LOG_MAX_MSG = 31,      /* the port's max_msg_sz */
	EMU_DEVX_LOG_MAX_RA = 4,        /* 16 outstanding reads and atomics */
};

/* Syndromes: 0x5f0000nn, one per check (listed in docs/emu.md's DEVX section). */
enum emu_devx_synd {
	EMU_DEVX_SYND_BAD_OPCODE = 0x5f000001,   /* an opcode softnic does not model */
	EMU_DEVX_SYND_BAD_OP_MOD = 0x5f000002,
	EMU_DEVX_SYND_IN_LEN = 0x5f000003,       /* input shorter than the layout */
	EMU_DEVX_SYND_OUT_LEN = 0x5f000004,      /* output shorter than the layout */
	EMU_DEVX_SYND_CAP_TYPE = 0x5f000005,     /* a capability type softnic does not answer */
	EMU_DEVX_SYND_UMEM = 0x5f000006,         /* no such umem in this context */
	EMU_DEVX_SYND_UMEM_RANGE = 0x5f000007,   /* queue or doorbell past the umem's end */
	EMU_DEVX_SYND_ALIGN = 0x5f000008,        /* offset not aligned */
	EMU_DEVX_SYND_LOG_SIZE = 0x5f000009,     /* log queue size out of softnic's range */
	EMU_DEVX_SYND_UAR = 0x5f00000a,          /* no such UAR page in this context */
	EMU_DEVX_SYND_EQN = 0x5f00000b,          /* not the EQ query_eqn gives */
	EMU_DEVX_SYND_CQE_SIZE = 0x5f00000c,
	EMU_DEVX_SYND_FEATURE = 0x5f00000d,      /* a feature softnic does not model */
	EMU_DEVX_SYND_QP_TYPE = 0x5f00000e,
	EMU_DEVX_SYND_CQN = 0x5f00000f,          /* send CQ missing */
	EMU_DEVX_SYND_RQ = 0x5f000010,           /* receive queue type or size */
	EMU_DEVX_SYND_PD = 0x5f000011,
	EMU_DEVX_SYND_QP_STATE = 0x5f000012,     /* transition from the wrong state */
	EMU_DEVX_SYND_PORT = 0x5f000013,
	EMU_DEVX_SYND_MTU = 0x5f000014,
	EMU_DEVX_SYND_PATH = 0x5f000015,         /* address path: LID, GID index, GRH */
	EMU_DEVX_SYND_RA = 0x5f000016,           /* outstanding reads/atomics past the cap */
	EMU_DEVX_SYND_REMOTE_QPN = 0x5f000017,
	EMU_DEVX_SYND_BUSY = 0x5f000018,         /* destroy while in use */
	EMU_DEVX_SYND_NOT_BUILT = 0x5f000019,    /* the softnic object cannot be made yet */
	EMU_DEVX_SYND_ATOMIC_MODE = 0x5f00001a,
	EMU_DEVX_SYND_MSG_MAX = 0x5f00001b,
};

/* A firmware refusal: status, syndrome, and the reason for the stderr line. */
typedef struct emu_devx_fail {
	uint8_t status;
	uint32_t syndrome;
	char why[200];
} emu_devx_fail;

/* Fills f; returns 1 (so a check can `return emu_devx_refuse(...)`). */
int emu_devx_refuse(emu_devx_fail *f, uint8_t status, uint32_t syndrome, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* 1: firmware refusals print nothing (the fuzzer sets it). */
extern int emu_devx_quiet;

/* A registered umem (struct mlx5dv_devx_umem is its first member). */
typedef struct emu_devx_umem {
	struct mlx5dv_devx_umem pub;
	struct ibv_context *ctx;
	uint8_t *addr;
	size_t size;
	uint32_t access;
	int users;                  /* objects whose queues or doorbells lie in it */
	struct emu_devx_umem *next;
} emu_devx_umem;

/* A UAR page (host memory: a ConnectX's is MMIO). */
typedef struct emu_devx_uar {
	struct mlx5dv_devx_uar pub;
	struct ibv_context *ctx;
	void *page;
	int singleton;              /* the context's shared NC UAR: free_uar leaves it */
	struct emu_devx_uar *next;
} emu_devx_uar;

/* The page of this context's UAR numbered page_id, or NULL. */
void *emu_devx_uar_page(struct ibv_context *ctx, uint32_t page_id);

/* A validated CREATE_CQ. */
typedef struct emu_devx_cq_req {
	uint32_t log_cq_size;       /* 2^n CQEs of 64 bytes */
	int collapsed, overrun_ignore; /* cqc.cc, cqc.oi */
	uint32_t uar_page, c_eqn, log_page_size;
	emu_devx_umem *buf;         /* the ring: buf->addr + buf_offset, 64 << log_cq_size bytes */
	uint64_t buf_offset;
	emu_devx_umem *dbr;         /* the doorbell record (8 bytes) at dbr->addr + dbr_offset */
	uint64_t dbr_offset;
} emu_devx_cq_req;

struct mlx5dv_devx_obj;

/* A validated CREATE_QP (RC). */
typedef struct emu_devx_qp_req {
	uint32_t pd;                /* qpc.pd: the make function resolves it */
	uint32_t uar_page, user_index;
	uint32_t cqn_snd, cqn_rcv;
	struct mlx5dv_devx_obj *send_cq, *recv_cq; /* DEVX CQs of this context, or NULL
						     * when the number is not one (a verbs CQ
						     * of mlx5dv_init_obj: the make function
						     * resolves it) */
	int no_sq;
	int dci;                    /* a DCI (softnic executes its DC WQEs) */
	uint32_t log_sq_size;       /* 2^n BBs of 64 bytes */
	uint32_t rq_type;           /* GIC_PRM_RQ_REGULAR, _SRQ or _NONE */
	uint32_t srqn;              /* rq_type SRQ */
	uint32_t log_rq_size, log_rq_stride; /* regular RQ: 2^n WQEs of 16 << stride bytes */
	emu_devx_umem *wq;          /* RQ at wq->addr + wq_offset, the SQ right after it */
	uint64_t wq_offset, sq_offset; /* sq_offset: from the start of the umem */
	emu_devx_umem *dbr;         /* dbrec[0] receive, dbrec[1] send, at dbr_offset */
	uint64_t dbr_offset;
} emu_devx_qp_req;

/* A validated QP state command: what it sets (the rest of the QP context
 * is ignored by the firmware for that transition). */
typedef struct emu_devx_qp_mod {
	uint16_t opcode;            /* GIC_PRM_OP_RST2INIT_QP ... 2RST */
	uint32_t opt_param_mask;
	uint32_t from, to;          /* GIC_PRM_QPS_* */
	/* RST2INIT / INIT2INIT */
	int rre, rwe, rae;
	uint32_t atomic_mode, port, pkey_index;
	/* INIT2RTR */
	uint32_t mtu, log_msg_max, remote_qpn, min_rnr_nak, log_rra_max, next_rcv_psn;
	uint32_t rlid, sl, grh, hop_limit, src_addr_index, tclass, flow_label, udp_sport, dscp;
	uint8_t rgid[16], rmac[6];
	/* RTR2RTS / RTS2RTS */
	uint32_t log_sra_max, next_send_psn, retry_count, rnr_retry, ack_timeout, log_ack_req_freq;
} emu_devx_qp_mod;

/* A DEVX object. */
struct mlx5dv_devx_obj {
	struct ibv_context *ctx;
	uint16_t type;              /* the creating opcode: CREATE_CQ, CREATE_QP, ALLOC_PD */
	uint32_t num;               /* cqn, qpn, pd */
	void *impl;                 /* what the make function built (ALLOC_PD: the ibv_pd) */
	emu_devx_umem *umem[2];     /* held: queue, doorbell record */
	struct mlx5dv_devx_obj *cq[2]; /* QP: its DEVX send and receive CQs (held) */
	int users;                  /* CQ: QPs on it */
	uint32_t state;             /* QP: GIC_PRM_QPS_* */
	uint8_t qpc[GIC_PRM_QPC_BYTES]; /* QP: its context as QUERY_QP answers it */
	struct mlx5dv_devx_obj *next;
};

/* ---- the softnic objects behind CREATE_CQ / CREATE_QP (devx_make.c). ----
 * Each returns 0 with *num (cqn, qpn) and *impl set, or 1 with f filled
 * (status, syndrome, reason). Called with the DEVX lock held, after every
 * check of devx_qp.c passed: the umems exist and are large enough, sizes are
 * in softnic's range. */
int emu_devx_make_cq(struct ibv_context *ctx, const emu_devx_cq_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f);
int emu_devx_make_qp(struct ibv_context *ctx, const emu_devx_qp_req *req, uint32_t *num,
		     void **impl, emu_devx_fail *f);
/* Applies a validated state change to impl; 0, or 1 with f filled. */
int emu_devx_modify_qp(void *impl, const emu_devx_qp_mod *mod, emu_devx_fail *f);
/* Destroys what make built; 0, or an errno (EBUSY) with it left alive. */
int emu_devx_unmake_cq(void *impl);
int emu_devx_unmake_qp(void *impl);

/* ---- devx.c: resources, under the DEVX lock. ---- */
emu_devx_umem *emu_devx_umem_find(struct ibv_context *ctx, uint32_t id);
int emu_devx_uar_known(struct ibv_context *ctx, uint32_t page_id);
/* The DEVX object of ctx created by opcode type with number num, or NULL. */
struct mlx5dv_devx_obj *emu_devx_obj_find(struct ibv_context *ctx, uint16_t type, uint32_t num);

/* ---- devx_caps.c: the general commands. ----
 * Each answers cmd (the kernel's checks passed) into out (zeroed, outlen
 * bytes): 0, or 1 with f filled. */
int emu_devx_query_hca_cap(struct ibv_context *ctx, const uint8_t *in, size_t inlen, uint8_t *out,
			   size_t outlen, emu_devx_fail *f);

/* ---- devx_qp.c: CQ and QP commands. ---- */
int emu_devx_cq_parse(struct ibv_context *ctx, const uint8_t *in, size_t inlen,
		      emu_devx_cq_req *req, emu_devx_fail *f);
int emu_devx_qp_parse(struct ibv_context *ctx, const uint8_t *in, size_t inlen,
		      emu_devx_qp_req *req, emu_devx_fail *f);
/* A state command on QP obj (its current state obj->state): 0 with mod
 * filled, or 1 with f filled. */
int emu_devx_qp_mod_parse(const struct mlx5dv_devx_obj *obj, const uint8_t *in, size_t inlen,
			  emu_devx_qp_mod *mod, emu_devx_fail *f);
/* Records mod's fields and new state in obj's QUERY_QP image. */
void emu_devx_qp_mod_apply(struct mlx5dv_devx_obj *obj, const uint8_t *in, const emu_devx_qp_mod *mod);
/* The opcode's minimum input and output lengths (a command header for an
 * opcode not in the table). */
size_t emu_devx_min_inlen(uint16_t opcode);
size_t emu_devx_min_outlen(uint16_t opcode);
/* The command's name ("CREATE_CQ"), or NULL. */
const char *emu_devx_opcode_name(uint16_t opcode);

#endif /* GIC_EMU_DEVX_H */
